package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.StreamShard;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.internals.namedtopology.KafkaStreamsNamedTopologyWrapper;
import org.apache.kafka.streams.processor.internals.namedtopology.NamedTopologyBuilder;
import org.junit.jupiter.api.Test;

/**
 * Two named topologies in one instance (Kafka Streams' internal NamedTopology API, which Kafka's
 * own PauseResumeIntegrationTest and NamedTopologyIntegrationTest use) have tasks with the same
 * sub-topology and partition ({@code topology-a__0_0}, {@code topology-b__0_0}). streamshard used
 * to register both with the scheduler as 0_0, and the second failed its StreamThread ("task 0_0 is
 * already registered"); such tasks now run stock, and say why.
 */
class NamedTopologyIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int RECORDS = 200;

    @Test
    void twoNamedTopologiesWithTheSameShapeRunSideBySide() throws Exception {
        String suffix = Inputs.suffix("named");
        List<String> topics =
                List.of("named-a-in" + suffix, "named-a-out" + suffix, "named-b-in" + suffix, "named-b-out" + suffix);
        OrderProducer.createTopics(BOOTSTRAP, 1, topics);
        for (int t = 0; t < 4; t += 2) {
            String in = topics.get(t);
            Inputs.produce(BOOTSTRAP, RECORDS, i -> new ProducerRecord<>(in, "k" + (i % 10), Integer.toString(i)));
        }
        Properties p = EnrichmentApp.config(BOOTSTRAP, "it" + suffix);
        p.put("state.dir", Files.createTempDirectory("streamshard-it").toString());
        p.put("streamshard.inline.below.us", "0");
        try (KafkaStreamsNamedTopologyWrapper streams = new KafkaStreamsNamedTopologyWrapper(p)) {
            NamedTopologyBuilder a = streams.newNamedTopologyBuilder("topology-a");
            NamedTopologyBuilder b = streams.newNamedTopologyBuilder("topology-b");
            for (Object[] nb : new Object[][] {{a, 0}, {b, 2}}) {
                NamedTopologyBuilder builder = (NamedTopologyBuilder) nb[0];
                int t = (Integer) nb[1];
                builder.stream(topics.get(t), Consumed.with(Serdes.String(), Serdes.String()))
                        .mapValues(v -> "seen " + v)
                        .to(topics.get(t + 1), Produced.with(Serdes.String(), Serdes.String()));
            }
            streams.start(List.of(a.build(), b.build()));
            for (int t = 0; t < 4; t += 2) {
                Demo.waitForCommitted(
                        BOOTSTRAP,
                        "it" + suffix,
                        topics.get(t),
                        RECORDS,
                        Duration.ofMinutes(1),
                        () -> assertThat(streams.state()).isNotEqualTo(KafkaStreams.State.ERROR));
            }
            assertThat(StreamShard.explain(streams))
                    .containsOnlyKeys("topology-a__0_0", "topology-b__0_0")
                    .allSatisfy((task, d) -> assertThat(d).startsWith("serial: a task of a named topology"));
        }
        for (int t = 1; t < 4; t += 2) {
            List<ConsumerRecord<String, String>> out = Demo.readAll(BOOTSTRAP, topics.get(t), new StringDeserializer());
            assertThat(out).hasSize(RECORDS);
            for (int i = 0; i < RECORDS; i++) {
                assertThat(out.get(i).value()).isEqualTo("seen " + i);
            }
        }
    }
}
