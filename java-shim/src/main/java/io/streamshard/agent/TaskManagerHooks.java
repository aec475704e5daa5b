package io.streamshard.agent;

import static io.streamshard.agent.StreamShardAgent.P;

import java.util.List;

/**
 * Where the agent hooks into TaskManager: one row per advised method (exact parameters, the
 * fields the advice reads, the versions it applies to); the advice classes, named after the
 * methods, are {@code org.apache.kafka.streams.processor.internals.TaskManagerAdvice}.
 * Before Kafka Streams 4.1 only: there, a dirty close's {@code StreamTask.prepareCommit()} is told
 * from a commit's by these callers.
 */
final class TaskManagerHooks {
    private TaskManagerHooks() {}

    static final String TYPE = P + "TaskManager";
    private static final String ADVICE = P + "TaskManagerAdvice$";

    static final List<Hook> HOOKS = List.of(
            new Hook(TYPE, "closeTaskDirty", List.of(P + "Task", "boolean"), ADVICE + "ClosingDirty", List.of())
                    .onlyIf(StreamTaskHooks.TYPE, "prepareCommit", StreamTaskHooks.PREPARE_COMMIT_41, false),
            new Hook(
                            TYPE,
                            "closeDirtyAndRevive",
                            List.of("java.util.Collection", "boolean"),
                            ADVICE + "ClosingDirty",
                            List.of())
                    .onlyIf(StreamTaskHooks.TYPE, "prepareCommit", StreamTaskHooks.PREPARE_COMMIT_41, false));
}
