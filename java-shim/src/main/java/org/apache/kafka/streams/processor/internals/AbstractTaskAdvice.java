package org.apache.kafka.streams.processor.internals;

import net.bytebuddy.asm.Advice;

/**
 * The agent's advice for AbstractTask (StreamTask's superclass); the row that places it is in
 * {@code io.streamshard.agent.AbstractTaskHooks}.
 */
public final class AbstractTaskAdvice {
    private AbstractTaskAdvice() {}

    /** AbstractTask.revive exit: the same task object, closed dirty, is brought back. */
    public static final class Revive {
        @Advice.OnMethodExit
        static void exit(@Advice.This Object task) {
            StreamShardInstances.taskRevived(task);
        }
    }
}
