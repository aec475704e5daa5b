package org.apache.kafka.streams.processor.internals;

import net.bytebuddy.asm.Advice;
import org.apache.kafka.streams.processor.api.Record;

/**
 * The agent's advice for ProcessorContextImpl and AbstractProcessorContext. One class per
 * advised method, named after it (or after what it does where several methods share it); each is inlined into its method and only hands
 * off to streamshard's helpers. The rows that place them (method, parameters, fields read,
 * versions) are in {@code io.streamshard.agent.ProcessorContextHooks}.
 */
public final class ProcessorContextAdvice {
    private ProcessorContextAdvice() {}

    /**
     * ProcessorContextImpl.forwardInternal (private) entry: a worker's forward into a
     * serial-region node is parked for the serial runner and the body is skipped.
     */
    public static final class ForwardInternal {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(
                @Advice.This Object context,
                @Advice.Argument(0) ProcessorNode<?, ?, ?, ?> child,
                @Advice.Argument(1) Record<?, ?> record) {
            return StreamShardFrames.park(context, child, record);
        }
    }

    /** ProcessorContextImpl.currentStreamTimeMs: the stream time at the record's dequeue, in a frame. */
    public static final class CurrentStreamTimeMs {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static StreamShardFrames.Frame enter(@Advice.This Object context) {
            return StreamShardFrames.of(context);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter StreamShardFrames.Frame frame, @Advice.Return(readOnly = false) long timeMs) {
            if (frame != null) {
                timeMs = frame.streamTimeMs;
            }
        }
    }

    /** AbstractProcessorContext.setSystemTimeMs: per-thread on workers. */
    public static final class SetSystemTimeMs {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.This Object context, @Advice.Argument(0) long timeMs) {
            StreamShardFrames.Frame f = StreamShardFrames.of(context);
            if (f == null) {
                return false;
            }
            f.systemTimeMs = timeMs;
            return true;
        }
    }

    /** AbstractProcessorContext.currentSystemTimeMs: per-thread on workers. */
    public static final class CurrentSystemTimeMs {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static StreamShardFrames.Frame enter(@Advice.This Object context) {
            return StreamShardFrames.of(context);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter StreamShardFrames.Frame frame, @Advice.Return(readOnly = false) long timeMs) {
            if (frame != null) {
                timeMs = frame.systemTimeMs;
            }
        }
    }
}
