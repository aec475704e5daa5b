package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.StreamShard;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.junit.jupiter.api.Test;

/**
 * The agent on a real broker with real Kafka Streams (this JVM runs with
 * {@code -javaagent:streamshard.jar}): an unchanged app runs its tasks per-key parallel, keeps
 * per-key order, never runs a key on two threads, and produces exactly the stock results.
 */
class ParallelIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");

    static long workerThreads() throws Exception {
        if ("virtual".equals(System.getProperty("streamshard.worker.threads"))) {
            return virtualWorkerThreads();
        }
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("streamshard-worker-") && t.isAlive())
                .count();
    }

    /**
     * Virtual threads are not in {@link Thread#getAllStackTraces()}; the JDK's thread dump (Java
     * 21+, every virtual thread while {@code jdk.trackAllThreads} is on, its default) has them.
     */
    private static long virtualWorkerThreads() throws Exception {
        Class<?> bean = Class.forName("com.sun.management.HotSpotDiagnosticMXBean");
        @SuppressWarnings({"unchecked", "rawtypes"})
        Object diagnostic = ManagementFactory.getPlatformMXBean((Class) bean);
        Class<?> format = Class.forName("com.sun.management.HotSpotDiagnosticMXBean$ThreadDumpFormat");
        @SuppressWarnings({"unchecked", "rawtypes"})
        Object json = Enum.valueOf((Class) format, "JSON");
        Path dump = Files.createTempDirectory("threads").resolve("dump.json");
        bean.getMethod("dumpThreads", String.class, format).invoke(diagnostic, dump.toString(), json);
        String text = Files.readString(dump);
        Files.delete(dump);
        Files.delete(dump.getParent());
        return Pattern.compile("\"name\": *\"streamshard-worker-")
                .matcher(text)
                .results()
                .count();
    }

    @Test
    void enrichmentAppRunsParallelWithExactCountsTotalsAndOrder() throws Exception {
        enrichment(false);
    }

    @Test
    void underExactlyOnceTheSameExactResults() throws Exception {
        enrichment(true);
    }

    private void enrichment(boolean eos) throws Exception {
        String suffix = Inputs.suffix(eos ? "enricheos" : "enrich");
        EnrichmentApp.prepare(BOOTSTRAP, suffix, 4, 10_000);
        OrderProducer.Expected expected =
                OrderProducer.produce(BOOTSTRAP, EnrichmentApp.INPUT + suffix, 3_000, 10_000, 1.1, 7);
        Properties p = EnrichmentApp.config(BOOTSTRAP, "it" + suffix);
        p.put("streamshard.workers", "32");
        p.put("state.dir", Files.createTempDirectory("streamshard-it").toString());
        if (eos) {
            p.put("processing.guarantee", "exactly_once_v2");
        }
        try (KafkaStreams streams = new KafkaStreams(EnrichmentApp.topology(2, suffix), p)) {
            AtomicReference<Throwable> error = new AtomicReference<>();
            streams.setUncaughtExceptionHandler(e -> {
                error.set(e);
                return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
            });
            streams.start();
            Demo.waitForCommitted(
                    BOOTSTRAP,
                    "it" + suffix,
                    EnrichmentApp.INPUT + suffix,
                    3_000,
                    Duration.ofMinutes(3),
                    () -> assertThat(error.get()).isNull());
            assertThat(StreamShard.active(streams)).isTrue();
            // The slow call, the stream-table join and both aggregations: every node parallel.
            assertThat(StreamShard.explain(streams))
                    .hasSize(4)
                    .allSatisfy((task, decision) ->
                            assertThat(decision).as("task %s", task).isEqualTo("parallel"));
            assertThat(StreamShard.explainNodes(streams).get("0_0"))
                    .anySatisfy((node, d) -> assertThat(node).startsWith("KSTREAM-LEFTJOIN-"));
            assertThat(workerThreads()).isEqualTo(32);
        }
        // KafkaStreams.close() stopped the worker pool.
        assertThat(workerThreads()).isZero();
        assertThat(Demo.verify(BOOTSTRAP, suffix, expected)).isEmpty();
    }

    /**
     * An instrumented processor (opted in by name) records how many records run at once and
     * whether a key is ever on two threads; values carry per-key sequence numbers.
     */
    @Test
    void recordsOfDifferentKeysOverlapButNeverOfTheSameKey() throws Exception {
        String suffix = Inputs.suffix("probe");
        String input = "probe-in" + suffix;
        String output = "probe-out" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 4, List.of(input, output));
        OrderProducer.Expected expected = OrderProducer.produce(BOOTSTRAP, input, 2_000, 500, 0.6, 3);
        Probe probe = new Probe();
        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .process(probe.supplier(input, r -> Probe.sleep(3), r -> "all"), Named.as("probe"))
                .to(output, Produced.with(Serdes.String(), Serdes.String()));
        Properties p = EnrichmentApp.config(BOOTSTRAP, "it" + suffix);
        p.put("streamshard.workers", "16");
        p.put("streamshard.parallel.processors", "probe");
        p.put("state.dir", Files.createTempDirectory("streamshard-it").toString());
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            streams.start();
            Demo.waitForCommitted(BOOTSTRAP, "it" + suffix, input, 2_000, Duration.ofMinutes(3), () -> {});
            assertThat(StreamShard.explain(streams))
                    .allSatisfy((task, decision) -> assertThat(decision).isEqualTo("parallel"));
        }
        assertThat(probe.violation.get()).isNull();
        assertThat(probe.processed.get()).isEqualTo(2_000);
        assertThat(probe.maxRunning.get())
                .as("records running at once with 16 workers")
                .isGreaterThanOrEqualTo(8);
        long outputRecords =
                Demo.readAll(BOOTSTRAP, output, new StringDeserializer()).size();
        assertThat(outputRecords)
                .isEqualTo(expected.counts().values().stream()
                        .mapToLong(Long::longValue)
                        .sum());
    }

    @Test
    void windowedAppStaysSerialWithItsReasonAndCountsEverything() throws Exception {
        String suffix = Inputs.suffix("window");
        OrderProducer.createTopics(BOOTSTRAP, 4, List.of(EnrichmentApp.INPUT + suffix));
        OrderProducer.Expected expected =
                OrderProducer.produce(BOOTSTRAP, EnrichmentApp.INPUT + suffix, 500, 50, 1.1, 11);
        StreamsBuilder b = new StreamsBuilder();
        String output = WindowedCountApp.OUTPUT + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 4, List.of(output));
        b.stream(EnrichmentApp.INPUT + suffix, Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofHours(1)))
                .count()
                .toStream((w, c) -> w.key())
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        Properties p = EnrichmentApp.config(BOOTSTRAP, "it" + suffix);
        p.put("default.key.serde", Serdes.String().getClass().getName());
        p.put("default.value.serde", Serdes.String().getClass().getName());
        p.put("state.dir", Files.createTempDirectory("streamshard-it").toString());
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            streams.start();
            Demo.waitForCommitted(
                    BOOTSTRAP, "it" + suffix, EnrichmentApp.INPUT + suffix, 500, Duration.ofMinutes(2), () -> {});
            assertThat(StreamShard.explain(streams))
                    .hasSize(4)
                    .allSatisfy((task, decision) ->
                            assertThat(decision).startsWith("serial: ").contains("window"));
        }
        // All records fall into one hour window here (produced within seconds): final count per key.
        Map<String, Long> counts = new HashMap<>();
        for (var r : Demo.readAll(BOOTSTRAP, output, new LongDeserializer())) {
            counts.merge(r.key(), r.value(), Math::max);
        }
        assertThat(counts.values().stream().mapToLong(Long::longValue).sum())
                .isGreaterThanOrEqualTo(expected.counts().values().stream()
                        .mapToLong(Long::longValue)
                        .sum());
    }
}
