package io.streamshard.agent;

import static io.streamshard.agent.StreamShardAgent.P;

import java.util.List;

/**
 * Where the agent hooks into StreamThread: one row per advised method (exact parameters, the
 * fields the advice reads, the versions it applies to); the advice classes, named after the
 * methods, are {@code org.apache.kafka.streams.processor.internals.StreamThreadAdvice}.
 */
final class StreamThreadHooks {
    private StreamThreadHooks() {}

    static final String TYPE = P + "StreamThread";
    private static final String ADVICE = P + "StreamThreadAdvice$";

    static final List<Hook> HOOKS =
            List.of(new Hook(TYPE, "pollRequests", List.of("java.time.Duration"), ADVICE + "PollRequests", List.of()));
}
