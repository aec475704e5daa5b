package org.apache.kafka.streams.processor.internals;

import io.streamshard.scheduler.CloseMode;
import net.bytebuddy.asm.Advice;
import org.apache.kafka.common.utils.Time;

/**
 * The agent's advice for StreamTask's barriers: a suspend, the punctuations and the closes, where
 * its handed-out records must have finished (or, closing dirty, be dropped). One class per advised
 * method, named after it (or after what it does where several methods share it); the rows that
 * place them are in {@code io.streamshard.agent.StreamTaskHooks}.
 */
public final class StreamTaskBarrierAdvice {
    private StreamTaskBarrierAdvice() {}

    /** StreamTask.suspend entry. */
    public static final class Suspend {
        @Advice.OnMethodEnter
        static void enter(@Advice.This StreamTask task) {
            StreamShardInstances.drain(task);
        }
    }

    /**
     * StreamTask.maybePunctuateSystemTime, replaced for streamshard's tasks: wall-clock punctuators
     * run on a drained task. The body reads the clock itself, so a check made here with another
     * reading could say "not due" a millisecond before the body punctuates; the replacement reads
     * it once, drains if due, and punctuates with that same time, as the body would.
     */
    public static final class MaybePunctuateSystemTime {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Boolean enter(
                @Advice.This StreamTask task,
                @Advice.FieldValue("time") Object time,
                @Advice.FieldValue("systemTimePunctuationQueue") PunctuationQueue queue) {
            return StreamShardInstances.punctuateSystemTime(task, (Time) time, queue);
        }

        @Advice.OnMethodExit
        static void exit(
                @Advice.Enter Boolean punctuated,
                @Advice.Return(readOnly = false) boolean result,
                @Advice.FieldValue(value = "commitNeeded", readOnly = false) boolean commitNeeded) {
            if (punctuated != null) {
                result = punctuated;
                if (punctuated) {
                    commitNeeded = true;
                }
            }
        }
    }

    /**
     * StreamTask.maybePunctuateStreamTime entry: stream-time punctuators run on a drained task
     * (both regions empty), so they see the state stock would show at that stream time.
     */
    public static final class MaybePunctuateStreamTime {
        @Advice.OnMethodEnter
        static void enter(@Advice.This StreamTask task) {
            if (task.canPunctuateStreamTime()) {
                StreamShardInstances.drain(task);
            }
        }
    }

    /** StreamTask.closeClean / prepareRecycle entry. */
    public static final class CloseClean {
        @Advice.OnMethodEnter
        static void enter(@Advice.This StreamTask task) {
            StreamShardInstances.taskClosing(task, CloseMode.DRAIN);
        }
    }

    /** StreamTask.closeDirty entry. */
    public static final class CloseDirty {
        @Advice.OnMethodEnter
        static void enter(@Advice.This StreamTask task) {
            StreamShardInstances.taskClosing(task, CloseMode.DROP_QUEUED);
        }
    }
}
