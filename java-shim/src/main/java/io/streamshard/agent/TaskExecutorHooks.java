package io.streamshard.agent;

import static io.streamshard.agent.StreamShardAgent.P;

import java.util.List;

/**
 * Where the agent hooks into TaskExecutor: one row per advised method (exact parameters, the
 * fields the advice reads, the versions it applies to); the advice classes are {@code
 * org.apache.kafka.streams.processor.internals.TaskExecutorAdvice}. The regular commit is told
 * from a revocation's or a close's by this caller of StreamTask.prepareCommit (3.9–4.4).
 */
final class TaskExecutorHooks {
    private TaskExecutorHooks() {}

    static final String TYPE = P + "TaskExecutor";
    private static final String ADVICE = P + "TaskExecutorAdvice$";

    static final List<Hook> HOOKS = List.of(new Hook(
            TYPE,
            "commitTasksAndMaybeUpdateCommittableOffsets",
            List.of("java.util.Collection", "java.util.Map"),
            ADVICE + "RegularCommit",
            List.of()));
}
