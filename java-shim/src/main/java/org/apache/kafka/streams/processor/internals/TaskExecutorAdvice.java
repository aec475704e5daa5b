package org.apache.kafka.streams.processor.internals;

import net.bytebuddy.asm.Advice;

/**
 * The agent's advice for TaskExecutor. One class per advised method, named after it (or after
 * what it does); each is inlined into its method and only hands off to streamshard's helpers. The
 * rows that place them (method, parameters, fields read, versions) are in {@code
 * io.streamshard.agent.TaskExecutorHooks}.
 */
public final class TaskExecutorAdvice {
    private TaskExecutorAdvice() {}

    /**
     * TaskExecutor.commitTasksAndMaybeUpdateCommittableOffsets: the regular commit (prepareCommit,
     * the offsets or the transaction, postCommit of each task that needs one). While it runs on a
     * StreamThread, a task's commit may cover its finished prefix only ({@link ShardedTask}).
     */
    public static final class RegularCommit {
        @Advice.OnMethodEnter
        static void enter() {
            StreamShardInstances.regularCommit(true);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit() {
            StreamShardInstances.regularCommit(false);
        }
    }
}
