package io.streamshard.agent;

import static io.streamshard.agent.StreamShardAgent.P;

import java.util.List;

/**
 * Where the agent hooks into KafkaStreams: one row per advised method (exact parameters, the
 * fields the advice reads, the versions it applies to); the advice classes, named after the
 * methods, are {@code org.apache.kafka.streams.processor.internals.KafkaStreamsAdvice}.
 */
final class KafkaStreamsHooks {
    private KafkaStreamsHooks() {}

    static final String TYPE = "org.apache.kafka.streams.KafkaStreams";
    private static final String ADVICE = P + "KafkaStreamsAdvice$";

    static final List<Hook> HOOKS = List.of(
            new Hook(
                    TYPE,
                    Hook.CONSTRUCTOR,
                    List.of(
                            P + "TopologyMetadata",
                            "org.apache.kafka.streams.StreamsConfig",
                            "org.apache.kafka.streams.KafkaClientSupplier",
                            "org.apache.kafka.common.utils.Time"),
                    ADVICE + "Constructor",
                    List.of("applicationConfigs", "streamsMetrics", "clientId", "metrics")),
            new Hook(TYPE, "setState", List.of(TYPE + "$State"), ADVICE + "SetState", List.of()));
}
