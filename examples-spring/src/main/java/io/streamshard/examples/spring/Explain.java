package io.streamshard.examples.spring;

import io.streamshard.StreamShard;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.streams.KafkaStreams;

/**
 * The only use of streamshard's API, in a class of its own: {@code io.streamshard.StreamShard}
 * comes from the agent, defined in the class loader of Kafka Streams (Spring Boot's), so it is used
 * only once Kafka Streams runs.
 */
final class Explain {
    private Explain() {}

    static Map<String, String> tasks(KafkaStreams streams) {
        try {
            return new TreeMap<>(StreamShard.explain(streams));
        } catch (LinkageError e) {
            return Map.of("streamshard", "not present (" + e + ")");
        }
    }
}
