package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.StreamShard;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.Test;

/**
 * Cheap records run on the StreamThread, slow ones on the workers, and a task switches both ways
 * without breaking per-key order or exclusivity: the input has a cheap phase, a slow phase (1 ms
 * per record) and a cheap phase again.
 */
class InlineIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int CHEAP = 3_000;
    private static final int SLOW = 1_500;
    private static final int TOTAL = 2 * CHEAP + SLOW;
    private static final int KEYS = 50;

    @Test
    void cheapRecordsRunOnTheStreamThreadSlowOnesOnWorkersAndOrderHolds() throws Exception {
        String suffix = Inputs.suffix("inline");
        String input = "inline-in" + suffix;
        String output = "inline-out" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 2, List.of(input, output));
        Inputs.producePhases(BOOTSTRAP, input, CHEAP, SLOW, KEYS);

        Probe probe = new Probe();
        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .process(
                        probe.supplier(
                                input,
                                r -> {
                                    if (r.value().endsWith(",B")) {
                                        Probe.sleep(1);
                                    }
                                },
                                r -> r.value().substring(r.value().indexOf(',') + 1)),
                        Named.as("probe"))
                .to(output, Produced.with(Serdes.String(), Serdes.String()));
        Properties p = EnrichmentApp.config(BOOTSTRAP, "it" + suffix);
        p.put("streamshard.workers", "16");
        p.put("streamshard.parallel.processors", "probe");
        // Well above a cheap record even before the JIT compiled it (and on a loaded machine),
        // well below a slow one (1 ms).
        p.put("streamshard.inline.below.us", "100");
        p.put("state.dir", Files.createTempDirectory("streamshard-it").toString());
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            streams.start();
            Demo.waitForCommitted(BOOTSTRAP, "it" + suffix, input, TOTAL, Duration.ofMinutes(3), () -> {});
            assertThat(StreamShard.explain(streams))
                    .hasSize(2)
                    .allSatisfy((task, d) -> assertThat(d).isEqualTo("parallel"));
        }
        assertThat(probe.violation.get()).isNull();
        assertThat(probe.processed.get()).isEqualTo(TOTAL);
        assertThat(Demo.readAll(BOOTSTRAP, output, new StringDeserializer())).hasSize(TOTAL);
        assertThat(probe.ranOn).as("records per phase and thread").satisfies(m -> {
            // Every task starts on its StreamThread, goes to the workers after its first slow
            // records, and back to the StreamThread (a drain first) once 256 records were cheap.
            // Phase A may visit the workers too, if the JIT made its first records slow while a
            // core was spare.
            assertThat(probe.ran("A:StreamThread")).isPositive();
            assertThat(probe.ran("B:worker")).isPositive();
            assertThat(probe.ran("C:StreamThread")).isPositive();
            assertThat(probe.ran("A:other") + probe.ran("B:other") + probe.ran("C:other"))
                    .isZero();
        });
    }
}
