package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.StreamShard;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.ContextualProcessor;
import org.apache.kafka.streams.processor.api.Record;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A record that throws in a parallel task goes through the app's processing-exception handler as
 * it would in stock, wherever it ran: on a worker ({@code workers}); being cheap, on the
 * StreamThread through streamshard's path ({@code inline}: {@code streamshard.inline.below.us} set
 * so high that every task moves to its StreamThread after its first 256 records; otherwise 0,
 * always workers); or in the task's serial region ({@code serial}: the throwing node is an unknown
 * Processor API processor below the parallel {@code mapValues}, run by whichever worker holds the
 * serial runner).
 */
class ErrorsIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int RECORDS = 4_000;

    private final AtomicReference<String> poisonThread = new AtomicReference<>();

    /** Topics with all records but the poison one. */
    private static String[] topics(String name) throws Exception {
        String suffix = Inputs.suffix(name);
        String in = "errors-in" + suffix;
        String out = "errors-out" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 4, List.of(in, out));
        Inputs.produce(BOOTSTRAP, RECORDS - 1, i -> new ProducerRecord<>(in, "k" + (i % 100), Integer.toString(i)));
        return new String[] {in, out, "it" + suffix};
    }

    /**
     * Once the app has committed every other record (so each task has run hundreds, enough to move
     * to its StreamThread when {@code inline}), the poison record.
     */
    private static void poisonLast(String[] t) throws Exception {
        Demo.waitForCommitted(BOOTSTRAP, t[2], t[0], RECORDS - 1, Duration.ofMinutes(2), () -> {});
        Inputs.produce(BOOTSTRAP, 1, i -> new ProducerRecord<>(t[0], "k99", "poison"));
    }

    /** Throws on the poison record, else forwards the value doubled. */
    private String check(String v) {
        if (v.equals("poison")) {
            poisonThread.set(Thread.currentThread().getName());
            throw new IllegalArgumentException("poison record");
        }
        return Integer.toString(Integer.parseInt(v) * 2);
    }

    private KafkaStreams app(String[] t, boolean continueOnError, String where) throws Exception {
        return app(t, continueOnError, where, true);
    }

    private KafkaStreams app(String[] t, boolean continueOnError, String where, boolean streamshard) throws Exception {
        return app(t, continueOnError, where, streamshard, Map.of());
    }

    private KafkaStreams app(
            String[] t, boolean continueOnError, String where, boolean streamshard, Map<String, String> extra)
            throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        var in = b.stream(t[0], Consumed.with(Serdes.String(), Serdes.String()));
        var checked = !where.equals("serial")
                ? in.mapValues(this::check)
                : in.mapValues(v -> v)
                        .process(
                                () -> new ContextualProcessor<String, String, String, String>() {
                                    @Override
                                    public void process(Record<String, String> r) {
                                        context().forward(r.withValue(check(r.value())));
                                    }
                                },
                                Named.as("serial-check"));
        checked.to(t[1], Produced.with(Serdes.String(), Serdes.String()));
        Properties p = EnrichmentApp.config(BOOTSTRAP, t[2]);
        p.put("state.dir", Files.createTempDirectory("streamshard-it").toString());
        p.put("streamshard.inline.below.us", where.equals("inline") ? "1000000" : "0");
        p.put("streamshard.enabled", Boolean.toString(streamshard));
        if (continueOnError) {
            p.put("processing.exception.handler", LogAndContinueProcessingExceptionHandler.class.getName());
        }
        p.putAll(extra);
        return new KafkaStreams(b.build(), p);
    }

    private void assertRanWhereExpected(String where) {
        assertThat(poisonThread.get())
                .as("thread that ran the poison record")
                .contains(where.equals("inline") ? "-StreamThread-" : "streamshard-worker-");
    }

    private static String expectedExplain(String where) {
        return where.equals("serial") ? "parallel, serial region: serial-check" : "parallel";
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"workers", "inline", "serial"})
    void logAndContinueSkipsThePoisonRecordAndGoesOn(String where) throws Exception {
        String[] t = topics("continue");
        try (KafkaStreams streams = app(t, true, where)) {
            streams.start();
            poisonLast(t);
            Demo.waitForCommitted(
                    BOOTSTRAP,
                    t[2],
                    t[0],
                    RECORDS,
                    Duration.ofMinutes(2),
                    () -> assertThat(streams.state()).isNotEqualTo(KafkaStreams.State.ERROR));
            assertThat(StreamShard.explain(streams))
                    .allSatisfy((task, d) -> assertThat(d).isEqualTo(expectedExplain(where)));
        }
        assertRanWhereExpected(where);
        assertThat(Demo.readAll(BOOTSTRAP, t[1], new StringDeserializer())).hasSize(RECORDS - 1);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"workers", "inline", "serial"})
    void logAndFailFailsTheStreamThreadAsStockDoes(String where) throws Exception {
        String[] t = topics("fail");
        Throwable root;
        try (KafkaStreams streams = app(t, false, where)) {
            root = Inputs.runUntilError(streams, Duration.ofMinutes(2), () -> poisonLast(t), () -> {});
        }
        assertRanWhereExpected(where);
        boolean found = Inputs.causedBy(
                root, c -> c instanceof IllegalArgumentException && "poison record".equals(c.getMessage()));
        assertThat(found)
                .as("the poison record's exception is in the cause chain of %s", root)
                .isTrue();

        // Stock on the same input fails the same way: the same processing error, naming the same
        // task, processor, partition and offset (a worker's failure used to reach the stock error
        // path with no current node: a NullPointerException on 3.9, another record's offset on 4.x).
        Throwable stockRoot;
        try (KafkaStreams stock = app(new String[] {t[0], t[1], t[2] + "-stock"}, false, where, false)) {
            stockRoot = Inputs.runUntilError(stock, Duration.ofMinutes(2), () -> {}, () -> {});
        }
        String expected = processError(stockRoot);
        assertThat(expected).as("stock's processing error in %s", stockRoot).isNotNull();
        assertThat(processError(root)).as("the processing error in %s", root).isEqualTo(expected);
        assertThat(Inputs.causedBy(root, c -> c instanceof NullPointerException))
                .as("%s", root)
                .isFalse();
    }

    /**
     * A record that fails on a worker while its task gets no further input fails the StreamThread
     * at once, as stock fails it while processing that record: not at the task's next record
     * (none comes), nor at its next commit (five minutes away here) or close. Found by Kafka's own
     * EmitOnChangeIntegrationTest (scripts/conformance.sh): the failure reached the StreamThread
     * only at close, so its REPLACE_THREAD recovery never came. The poison record's key has one
     * more record queued behind it, which never runs.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"workers", "serial"})
    void aFailureOnATaskWithNoFurtherInputFailsTheStreamThreadAtOnce(String where) throws Exception {
        String suffix = Inputs.suffix("idle");
        String[] t = {"errors-idle-in" + suffix, "errors-idle-out" + suffix, "it" + suffix};
        OrderProducer.createTopics(BOOTSTRAP, 1, List.of(t[0], t[1]));
        Throwable root;
        try (KafkaStreams streams = app(t, false, where, true, Map.of("commit.interval.ms", "300000"))) {
            // Thirty seconds: stock fails within one poll of the record; the commit is 300 s away.
            root = Inputs.runUntilError(
                    streams,
                    Duration.ofSeconds(30),
                    () -> Inputs.produce(BOOTSTRAP, 2, i -> new ProducerRecord<>(t[0], "k1", i == 0 ? "poison" : "1")),
                    () -> {});
        }
        assertRanWhereExpected(where);
        assertThat(Inputs.causedBy(
                        root, c -> c instanceof IllegalArgumentException && "poison record".equals(c.getMessage())))
                .as("the poison record's exception is in the cause chain of %s", root)
                .isTrue();
        assertThat(processError(root)).as("%s", root).startsWith("Exception caught in process. taskId=0_0, ");
        assertThat(Demo.readAll(BOOTSTRAP, t[1], new StringDeserializer()))
                .as("the record behind it never ran")
                .isEmpty();
    }

    /** The message of stock's processing-error exception in {@code root}'s cause chain, or null. */
    private static String processError(Throwable root) {
        for (Throwable c = root; c != null; c = c.getCause()) {
            if (c.getMessage() != null && c.getMessage().startsWith("Exception caught in process.")) {
                return c.getMessage();
            }
        }
        return null;
    }
}
