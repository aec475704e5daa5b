package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.streamshard.StreamShard;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.LogAndContinueExceptionHandler;
import org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.ContextualProcessor;
import org.apache.kafka.streams.processor.api.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Kafka Streams' dead-letter queue (KIP-1034, 4.2+: {@code errors.dead.letter.queue.topic.name}
 * with the built-in handlers) under streamshard, compared record by record with stock on the same
 * input: every DLQ record's key and value (the source bytes), timestamp and headers (the record's
 * own and the six {@code __streams.errors.*} ones; of the stack trace, its first line, because the
 * frames below the processor are streamshard's worker instead of the StreamThread), and the
 * {@code dropped-records} metric. Where the record fails: {@code worker} (a parallel
 * {@code mapValues}), {@code serial} (a Processor API processor in the task's serial region, below
 * a parallel {@code mapValues}), {@code deserialization} (the value serde, on the StreamThread).
 * At-least-once and exactly-once (read committed).
 */
class DeadLetterQueueIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int RECORDS = 600;

    /** Values are numbers; every 50th record is poison: "bad-i" fails processing, or does not deserialize. */
    private static String valueOf(int i) {
        return i % 50 == 7 ? "bad-" + i : Integer.toString(i);
    }

    private static boolean supported() {
        return StreamsConfig.configDef().names().contains("errors.dead.letter.queue.topic.name");
    }

    private static String check(String v) {
        if (v.startsWith("bad-")) {
            throw new IllegalArgumentException("poison " + v);
        }
        return v;
    }

    private static KafkaStreams app(
            String where, String in, String out, String dlq, String appId, boolean shard, String guarantee)
            throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        if (where.equals("deserialization")) {
            Deserializer<String> numbers = (topic, data) -> {
                String v = new String(data, StandardCharsets.UTF_8);
                if (v.startsWith("bad-")) {
                    throw new SerializationException("not a number: " + v);
                }
                return v;
            };
            b.stream(in, Consumed.with(Serdes.String(), Serdes.serdeFrom(new StringSerializer(), numbers)))
                    .mapValues(v -> v)
                    .to(out, Produced.with(Serdes.String(), Serdes.String()));
        } else {
            var s = b.stream(in, Consumed.with(Serdes.String(), Serdes.String()));
            var checked = where.equals("worker")
                    ? s.mapValues(DeadLetterQueueIT::check)
                    : s.mapValues(v -> v)
                            .process(
                                    () -> new ContextualProcessor<String, String, String, String>() {
                                        @Override
                                        public void process(Record<String, String> r) {
                                            context().forward(r.withValue(check(r.value())));
                                        }
                                    },
                                    Named.as("serial-check"));
            checked.to(out, Produced.with(Serdes.String(), Serdes.String()));
        }
        Properties p = EnrichmentApp.config(BOOTSTRAP, appId);
        p.put("state.dir", Files.createTempDirectory("streamshard-it").toString());
        p.put("processing.guarantee", guarantee);
        p.put("errors.dead.letter.queue.topic.name", dlq);
        p.put("processing.exception.handler", LogAndContinueProcessingExceptionHandler.class.getName());
        p.put("default.deserialization.exception.handler", LogAndContinueExceptionHandler.class.getName());
        p.put("streamshard.enabled", Boolean.toString(shard));
        p.put("streamshard.inline.below.us", "0");
        return new KafkaStreams(b.build(), p);
    }

    /** A DLQ record as compared: everything but the stack trace below its first line. */
    private static String describe(ConsumerRecord<String, byte[]> r) {
        StringBuilder b = new StringBuilder()
                .append("key=")
                .append(r.key())
                .append(" value=")
                .append(r.value() == null ? null : new String(r.value(), StandardCharsets.UTF_8))
                .append(" ts=")
                .append(r.timestamp());
        for (Header h : r.headers()) {
            String v = h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8);
            if (h.key().equals("__streams.errors.stacktrace") && v != null) {
                v = v.lines().findFirst().orElse("");
            }
            b.append(' ').append(h.key()).append('=').append(v);
        }
        return b.toString();
    }

    @ParameterizedTest(name = "{0}, {1}")
    @CsvSource({
        "worker,at_least_once",
        "worker,exactly_once_v2",
        "serial,at_least_once",
        "serial,exactly_once_v2",
        "deserialization,at_least_once",
        "deserialization,exactly_once_v2"
    })
    void deadLetterRecordsAreStocks(String where, String guarantee) throws Exception {
        assumeTrue(supported(), "the dead-letter queue is Kafka Streams 4.2+");
        String suffix = Inputs.suffix("dlq-" + where);
        String in = "dlq-in" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 2, List.of(in));
        // Values as strings, with one header, so the DLQ's copy of the record's headers is compared too.
        // Timestamps of the last hour: records older than the broker's retention (7 days) are deleted
        // under the application's feet, at the broker's next retention check.
        long base = Feeds.base();
        Inputs.produce(BOOTSTRAP, RECORDS, i -> {
            ProducerRecord<String, String> r =
                    new ProducerRecord<>(in, null, base + i, "k" + (i % 30), valueOf(i), new RecordHeaders());
            r.headers().add("origin", ("producer-" + i).getBytes(StandardCharsets.UTF_8));
            return r;
        });
        Map<String, List<String>> dlqs = new HashMap<>();
        Map<String, Double> dropped = new HashMap<>();
        for (String run : List.of("stock", "streamshard")) {
            String out = "dlq-out" + suffix + "-" + run;
            String dlq = "dlq-dlq" + suffix + "-" + run;
            String appId = "dlq" + suffix + "-" + run;
            OrderProducer.createTopics(BOOTSTRAP, 2, List.of(out, dlq));
            try (KafkaStreams streams = app(where, in, out, dlq, appId, run.equals("streamshard"), guarantee)) {
                streams.start();
                try {
                    Demo.waitForCommitted(
                            BOOTSTRAP,
                            appId,
                            in,
                            RECORDS,
                            Duration.ofMinutes(2),
                            () -> assertThat(streams.state()).isNotEqualTo(KafkaStreams.State.ERROR));
                } catch (IllegalStateException timeout) {
                    System.out.println(Inputs.threadDump(appId));
                    System.out.println(Inputs.stallReport(streams));
                    throw new AssertionError(
                            run + " (" + streams.state() + "): " + timeout.getMessage() + "; tasks: "
                                    + StreamShard.explain(streams) + " (threads above)",
                            timeout);
                }
                dropped.put(run, Inputs.metricSum(streams, "stream-task-metrics", "dropped-records-total"));
                if (run.equals("streamshard") && !where.equals("deserialization")) {
                    assertThat(StreamShard.explain(streams))
                            .allSatisfy((task, d) -> assertThat(d).startsWith("parallel"));
                }
            }
            List<String> records = new ArrayList<>();
            for (ConsumerRecord<String, byte[]> r : Demo.readAll(BOOTSTRAP, dlq, new ByteArrayDeserializer())) {
                records.add(describe(r));
            }
            records.sort(null);
            dlqs.put(run, records);
        }
        assertThat(dlqs.get("stock")).as("stock's dead letters").hasSize(RECORDS / 50);
        assertThat(dlqs.get("stock").get(0))
                .contains("__streams.errors.topic=" + in)
                .contains("origin=producer-");
        assertThat(dlqs.get("streamshard")).isEqualTo(dlqs.get("stock"));
        assertThat(dropped.get("streamshard")).isEqualTo(dropped.get("stock"));
    }

    /**
     * A send refused by the producer on a worker (a 16 KB output over a 12 KB
     * {@code max.request.size}): the default production exception handler writes a dead letter
     * and fails the thread, as in stock. (Its key and value are null in stock too: the sink
     * serialized the record before the producer refused it, which frees the source bytes of the
     * record context.) At-least-once (under
     * exactly-once the dead letter is aborted with the failed transaction, in both).
     */
    @Test
    void aRefusedSendOnAWorkerGoesToTheDeadLetterQueueAsInStock() throws Exception {
        assumeTrue(supported(), "the dead-letter queue is Kafka Streams 4.2+");
        String suffix = Inputs.suffix("dlq-send");
        String in = "dlq-in" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 1, List.of(in));
        Inputs.produce(BOOTSTRAP, 300, i -> new ProducerRecord<>(in, 0, "k" + (i % 20), i == 120 ? "big" : "v" + i));
        Map<String, List<String>> dlqs = new HashMap<>();
        for (String run : List.of("stock", "streamshard")) {
            String out = "dlq-out" + suffix + "-" + run;
            String dlq = "dlq-dlq" + suffix + "-" + run;
            OrderProducer.createTopics(BOOTSTRAP, 1, List.of(out, dlq));
            StreamsBuilder b = new StreamsBuilder();
            b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                    .mapValues(v -> v.equals("big") ? "x".repeat(16 * 1024) : v)
                    .to(out, Produced.with(Serdes.String(), Serdes.String()));
            Properties p = EnrichmentApp.config(BOOTSTRAP, "dlq" + suffix + "-" + run);
            p.put("state.dir", Files.createTempDirectory("streamshard-it").toString());
            // Room for a dead letter (its stack-trace header is a few KB), not for the 16 KB output.
            p.put(StreamsConfig.producerPrefix("max.request.size"), 12 * 1024);
            p.put("errors.dead.letter.queue.topic.name", dlq);
            p.put("streamshard.enabled", Boolean.toString(run.equals("streamshard")));
            p.put("streamshard.inline.below.us", "0");
            Throwable root;
            try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
                root = Inputs.runUntilError(streams, Duration.ofMinutes(2), () -> {});
            }
            assertThat(Inputs.causedBy(root, c -> c instanceof RecordTooLargeException))
                    .as("%s: the refused send in %s", run, root)
                    .isTrue();
            List<String> records = new ArrayList<>();
            for (ConsumerRecord<String, byte[]> r : Demo.readAll(BOOTSTRAP, dlq, new ByteArrayDeserializer())) {
                records.add(describe(r));
            }
            dlqs.put(run, records);
        }
        // The production handler's dead letter: the same.
        String refused = "__streams.errors.exception=" + RecordTooLargeException.class.getName();
        Map<String, List<String>> production = new HashMap<>();
        dlqs.forEach((run, records) -> production.put(
                run, records.stream().filter(r -> r.contains(refused)).toList()));
        assertThat(production.get("stock"))
                .as("stock's dead letter from the send")
                .hasSize(1);
        assertThat(production.get("stock").get(0)).contains("__streams.errors.offset=120");
        assertThat(production.get("streamshard")).isEqualTo(production.get("stock"));
        // Then every record that meets the pending send error fails its sink with a
        // StreamsException, which the processing handler dead-letters: in stock the one record
        // after it; under streamshard each record of another key on the workers at that moment.
        Map<String, List<String>> after = new HashMap<>();
        dlqs.forEach((run, records) -> after.put(
                run, records.stream().filter(r -> !r.contains(refused)).toList()));
        assertThat(after.get("stock")).hasSize(1);
        assertThat(after.get("streamshard"))
                .isNotEmpty()
                .allSatisfy(r -> assertThat(r)
                        .contains("__streams.errors.exception=org.apache.kafka.streams.errors.StreamsException")
                        .contains("Error encountered sending record to topic dlq-out"));
    }
}
