package io.streamshard.agent;

import static io.streamshard.agent.StreamShardAgent.P;

import java.util.List;

/**
 * Where the agent hooks into RecordDeserializer: one row per advised method (exact parameters, the
 * fields the advice reads, the versions it applies to); the advice classes, named after the
 * methods, are {@code org.apache.kafka.streams.processor.internals.RecordDeserializerAdvice}.
 * Before Kafka Streams 4.1 only, where a StampedRecord has no raw bytes: the deserializer's
 * result carries them.
 */
final class RecordDeserializerHooks {
    private RecordDeserializerHooks() {}

    static final String TYPE = P + "RecordDeserializer";
    private static final String ADVICE = P + "RecordDeserializerAdvice$";

    static final List<Hook> HOOKS = List.of(new Hook(
                    TYPE,
                    "deserialize",
                    List.of(
                            "org.apache.kafka.streams.processor.api.ProcessorContext",
                            "org.apache.kafka.clients.consumer.ConsumerRecord"),
                    ADVICE + "Deserialize",
                    List.of())
            .onlyIf(P + "StampedRecord", "rawKey", List.of(), false));
}
