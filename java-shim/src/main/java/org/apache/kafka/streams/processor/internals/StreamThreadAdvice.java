package org.apache.kafka.streams.processor.internals;

import io.streamshard.runtime.RoomWait;
import java.time.Duration;
import net.bytebuddy.asm.Advice;

/**
 * The agent's advice for StreamThread. One class per advised method, named after it (or after
 * what it does where several methods share it); each is inlined into its method and only hands
 * off to streamshard's helpers. The rows that place them (method, parameters, fields read,
 * versions) are in {@code io.streamshard.agent.StreamThreadHooks}.
 */
public final class StreamThreadAdvice {
    private StreamThreadAdvice() {}

    /**
     * StreamThread.pollRequests entry: if a task was at its cap, wait for room in the scheduler
     * instead of in the consumer (see {@link io.streamshard.runtime.RoomWait}).
     */
    public static final class PollRequests {
        @Advice.OnMethodEnter
        static void enter(@Advice.Argument(value = 0, readOnly = false) Duration pollTime) {
            pollTime = RoomWait.beforePoll(pollTime);
        }
    }
}
