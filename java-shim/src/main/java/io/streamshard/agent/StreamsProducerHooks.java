package io.streamshard.agent;

import static io.streamshard.agent.StreamShardAgent.P;

import java.util.List;

/**
 * Where the agent hooks into StreamsProducer: one row per advised method (exact parameters, the
 * fields the advice reads, the versions it applies to); the advice classes, named after the
 * methods, are {@code org.apache.kafka.streams.processor.internals.StreamsProducerAdvice}.
 */
final class StreamsProducerHooks {
    private StreamsProducerHooks() {}

    static final String TYPE = P + "StreamsProducer";
    private static final String ADVICE = P + "StreamsProducerAdvice$";

    static final List<Hook> HOOKS = List.of(
            new Hook(
                    TYPE,
                    "maybeBeginTransaction",
                    List.of(),
                    ADVICE + "MaybeBeginTransaction",
                    List.of("transactionInFlight")),
            new Hook(
                    TYPE,
                    "send",
                    List.of(
                            "org.apache.kafka.clients.producer.ProducerRecord",
                            "org.apache.kafka.clients.producer.Callback"),
                    ADVICE + "Send",
                    List.of()));
}
