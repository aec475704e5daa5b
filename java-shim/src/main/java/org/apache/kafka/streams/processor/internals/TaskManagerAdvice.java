package org.apache.kafka.streams.processor.internals;

import net.bytebuddy.asm.Advice;

/**
 * The agent's advice for TaskManager. One class per advised method, named after it (or after
 * what it does where several methods share it); each is inlined into its method and only hands
 * off to streamshard's helpers. The rows that place them (method, parameters, fields read,
 * versions) are in {@code io.streamshard.agent.TaskManagerHooks}.
 */
public final class TaskManagerAdvice {
    private TaskManagerAdvice() {}

    /**
     * TaskManager's methods that close tasks dirty, before Kafka Streams 4.1: while one runs on a
     * StreamThread, its prepareCommit() calls are part of the dirty close.
     */
    public static final class ClosingDirty {
        @Advice.OnMethodEnter
        static void enter() {
            StreamShardInstances.dirtyClose(true);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit() {
            StreamShardInstances.dirtyClose(false);
        }
    }
}
