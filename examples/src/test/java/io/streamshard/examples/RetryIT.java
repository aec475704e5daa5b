package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.StreamShard;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.ContextualProcessor;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code streamshard.retry.*} on a real broker: a record whose parallel part throws before any
 * effect runs again on its key's lane after a backoff, without holding a worker; a failure after an
 * effect, or after the last attempt, reaches Kafka Streams' processing exception handler exactly as
 * in stock. The "service" is a map of calls per record value that fails a record's first calls as
 * the record says (so every run fails the same records).
 */
class RetryIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");

    /** Calls per record value so far, over every app of a test. */
    private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();

    /** The service: throws on the first {@code fails} calls for {@code v}, then answers {@code v}. */
    private String call(String v, int fails) {
        int n = calls.computeIfAbsent(v, k -> new AtomicInteger()).incrementAndGet();
        if (n <= fails) {
            throw new IllegalStateException("503 for " + v + " (call " + n + ")");
        }
        return v;
    }

    private int callsOf(String v) {
        AtomicInteger n = calls.get(v);
        return n == null ? 0 : n.get();
    }

    /** Values "key,seq": every tenth record of a key fails its first {@code fails} calls. */
    private static int failsOf(String v, int fails) {
        return Integer.parseInt(v.substring(v.indexOf(',') + 1)) % 10 == 0 ? fails : 0;
    }

    private static String[] topics(String name, int partitions) throws Exception {
        String suffix = Inputs.suffix(name);
        String[] t = {"retry-in" + suffix, "retry-out" + suffix, "retry" + suffix};
        OrderProducer.createTopics(BOOTSTRAP, partitions, List.of(t[0], t[1]));
        return t;
    }

    /** {@code records} values "k<i % keys>,<seq>", sequence numbers 1, 2, ... per key. */
    private static void produceKeyed(String topic, int records, int keys) throws Exception {
        int[] seq = new int[keys];
        Inputs.produce(BOOTSTRAP, records, i -> {
            String k = "k" + (i % keys);
            return new ProducerRecord<>(topic, k, k + "," + ++seq[i % keys]);
        });
    }

    private static Properties config(String appId, Map<String, String> extra) throws Exception {
        Properties p = EnrichmentApp.config(BOOTSTRAP, appId);
        p.put("state.dir", Files.createTempDirectory("streamshard-it").toString());
        p.put("streamshard.retry.max.attempts", "3");
        p.put("streamshard.retry.backoff.ms", "20");
        p.put("streamshard.retry.backoff.max.ms", "100");
        p.putAll(extra);
        return p;
    }

    private static KafkaStreams app(String[] t, Consumer<KStream<String, String>> body, Map<String, String> extra)
            throws Exception {
        return app(t, t[2], body, extra);
    }

    private static KafkaStreams app(
            String[] t, String appId, Consumer<KStream<String, String>> body, Map<String, String> extra)
            throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        body.accept(b.stream(t[0], Consumed.with(Serdes.String(), Serdes.String())));
        return new KafkaStreams(b.build(), config(appId, extra));
    }

    private static void runUntilCommitted(KafkaStreams streams, String[] t, String appId, long records)
            throws Exception {
        streams.start();
        Demo.waitForCommitted(
                BOOTSTRAP,
                appId,
                t[0],
                records,
                Duration.ofMinutes(2),
                () -> assertThat(streams.state()).isNotIn(KafkaStreams.State.ERROR, KafkaStreams.State.PENDING_ERROR));
    }

    private static List<String> output(String topic) throws Exception {
        return Demo.readAll(BOOTSTRAP, topic, new StringDeserializer()).stream()
                .map(ConsumerRecord::value)
                .collect(Collectors.toList());
    }

    /**
     * Every tenth record fails its first two calls; with three attempts each recovers. The default
     * handler (log and fail) would stop the app at any failure that reached it. Every record is in
     * the output once, in its key's order, at-least-once and exactly-once.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"at_least_once", "exactly_once_v2"})
    void transientFailuresRecoverInKeyOrderOnceEach(String guarantee) throws Exception {
        final int records = 3_000;
        final int keys = 60;
        String[] t = topics("transient", 4);
        produceKeyed(t[0], records, keys);
        double retries;
        try (KafkaStreams streams = app(
                t,
                s -> s.mapValues(v -> call(v, failsOf(v, 2))).to(t[1], Produced.with(Serdes.String(), Serdes.String())),
                Map.of("processing.guarantee", guarantee))) {
            runUntilCommitted(streams, t, t[2], records);
            retries = Inputs.metricSum(streams, "streamshard-task-metrics", "retries-total");
            assertThat(StreamShard.explain(streams))
                    .allSatisfy((task, d) -> assertThat(d).isEqualTo("parallel"));
        }
        Map<String, List<Integer>> perKey = new HashMap<>();
        for (String v : output(t[1])) {
            perKey.computeIfAbsent(v.substring(0, v.indexOf(',')), k -> new ArrayList<>())
                    .add(Integer.parseInt(v.substring(v.indexOf(',') + 1)));
        }
        assertThat(perKey).hasSize(keys);
        perKey.forEach((k, seqs) -> {
            List<Integer> expected = new ArrayList<>();
            for (int i = 1; i <= records / keys; i++) {
                expected.add(i);
            }
            assertThat(seqs).as("key %s: each record once, in order", k).isEqualTo(expected);
        });
        int failing = records / 10;
        assertThat(retries).as("two retries of each failing record").isEqualTo(2.0 * failing);
        assertThat(callsOf("k0,10")).isEqualTo(3);
        assertThat(callsOf("k0,11")).isEqualTo(1);
    }

    /**
     * One partition, one worker. The first record of key "slow" fails twice with 0.8-1 s waits;
     * 200 records of other keys behind it all run during those waits on the one worker (a retry
     * loop in the lambda would hold it), and the key's own second record waits behind the first.
     */
    @Test
    void aKeyInBackoffHoldsNeitherTheWorkerNorOtherKeys() throws Exception {
        String[] t = topics("lane", 1);
        Inputs.produce(BOOTSTRAP, 202, i -> {
            if (i < 2) {
                return new ProducerRecord<>(t[0], "slow", "slow," + (i + 1));
            }
            return new ProducerRecord<>(t[0], "o" + (i % 10), "o" + (i % 10) + "," + i);
        });
        try (KafkaStreams streams = app(
                t,
                s -> s.mapValues(v -> call(v, v.equals("slow,1") ? 2 : 0))
                        .to(t[1], Produced.with(Serdes.String(), Serdes.String())),
                Map.of(
                        "streamshard.workers", "1",
                        "streamshard.retry.backoff.ms", "1000",
                        "streamshard.retry.backoff.max.ms", "1000"))) {
            runUntilCommitted(streams, t, t[2], 202);
        }
        List<String> out = output(t[1]);
        assertThat(out).hasSize(202);
        assertThat(out.subList(200, 202))
                .as("the slow key's records last, in order: the other keys went on meanwhile")
                .containsExactly("slow,1", "slow,2");
        assertThat(callsOf("slow,1")).isEqualTo(3);
    }

    /**
     * A failure after the record's first effect is not retried: the handler (log and continue)
     * drops the record as in stock, and output and changelog equal stock's record for record.
     * {@code sink}: a parallel Processor API node forwards "before" to the sink, then calls the
     * service, then forwards "after". {@code store}: the record is written to a table (no cache:
     * one changelog record per write), then the table's mapValues calls the service. A retry of
     * either would repeat the effect: a second "before", a second changelog record.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"sink", "store"})
    void aFailureAfterAnEffectReachesTheHandlerAsInStock(String effect) throws Exception {
        final int records = 400;
        String[] t = topics("effect-" + effect, 2);
        produceKeyed(t[0], records, 20);
        Map<String, String> extra = Map.of(
                "processing.exception.handler",
                LogAndContinueProcessingExceptionHandler.class.getName(),
                "streamshard.parallel.processors",
                "two-step");
        Map<String, List<String>> runs = new HashMap<>();
        Map<String, Double> dropped = new HashMap<>();
        double retried = -1;
        for (String run : List.of("stock", "streamshard")) {
            calls.clear();
            String appId = t[2] + "-" + run;
            Map<String, String> settings = new HashMap<>(extra);
            settings.put("streamshard.enabled", Boolean.toString(run.equals("streamshard")));
            String out = t[1] + "-" + run;
            OrderProducer.createTopics(BOOTSTRAP, 2, List.of(out));
            String[] tt = {t[0], out, appId};
            Consumer<KStream<String, String>> routed = afterAnEffect(effect, out);
            try (KafkaStreams streams = app(tt, appId, routed, settings)) {
                runUntilCommitted(streams, tt, appId, records);
                dropped.put(run, Inputs.metricSum(streams, "stream-task-metrics", "dropped-records-total"));
                if (run.equals("streamshard")) {
                    retried = Inputs.metricSum(streams, "streamshard-task-metrics", "retries-total");
                    assertThat(StreamShard.explain(streams))
                            .allSatisfy((task, d) -> assertThat(d).isEqualTo("parallel"));
                }
            }
            List<String> o = new ArrayList<>(output(out));
            if (effect.equals("store")) {
                o.addAll(output(appId + "-tbl-changelog").stream()
                        .map(v -> "changelog:" + v)
                        .collect(Collectors.toList()));
            }
            o.sort(null);
            runs.put(run, o);
        }
        assertThat(dropped.get("stock")).as("stock dropped the failing records").isEqualTo(records / 10.0);
        assertThat(runs.get("streamshard")).as("output and changelog, sorted").isEqualTo(runs.get("stock"));
        assertThat(dropped.get("streamshard")).isEqualTo(dropped.get("stock"));
        assertThat(retried).as("nothing retried").isZero();
    }

    /** The topologies of {@link #aFailureAfterAnEffectReachesTheHandlerAsInStock}, writing to {@code out}. */
    private Consumer<KStream<String, String>> afterAnEffect(String effect, String out) {
        if (effect.equals("sink")) {
            return s -> s.process(
                            () -> new ContextualProcessor<String, String, String, String>() {
                                @Override
                                public void process(Record<String, String> r) {
                                    context().forward(r.withValue("before:" + r.value()));
                                    call(r.value(), failsOf(r.value(), 1));
                                    context().forward(r.withValue("after:" + r.value()));
                                }
                            },
                            Named.as("two-step"))
                    .to(out, Produced.with(Serdes.String(), Serdes.String()));
        }
        return s -> s.toTable(Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("tbl")
                        .withKeySerde(Serdes.String())
                        .withValueSerde(Serdes.String())
                        .withCachingDisabled())
                .mapValues(v -> call(v, failsOf(v, 1)))
                .toStream()
                .to(out, Produced.with(Serdes.String(), Serdes.String()));
    }

    /**
     * A record that fails every attempt reaches the handler after the last one, once: dropped by
     * log-and-continue, counted once in dropped-records, as stock counts it; its key's next
     * record runs after it.
     */
    @Test
    void theLastAttemptsFailureReachesTheHandlerOnce() throws Exception {
        String[] t = topics("exhausted", 1);
        Inputs.produce(BOOTSTRAP, 50, i -> new ProducerRecord<>(t[0], "k" + (i % 5), i == 7 ? "never" : "v" + i));
        try (KafkaStreams streams = app(
                t,
                s -> s.mapValues(v -> call(v, v.equals("never") ? Integer.MAX_VALUE : 0))
                        .to(t[1], Produced.with(Serdes.String(), Serdes.String())),
                Map.of(
                        "processing.exception.handler",
                        LogAndContinueProcessingExceptionHandler.class.getName(),
                        "streamshard.retry.max.attempts",
                        "4"))) {
            runUntilCommitted(streams, t, t[2], 50);
            assertThat(Inputs.metricSum(streams, "stream-task-metrics", "dropped-records-total"))
                    .isEqualTo(1.0);
            assertThat(Inputs.metricSum(streams, "streamshard-task-metrics", "retries-total"))
                    .isEqualTo(3.0);
        }
        assertThat(callsOf("never")).isEqualTo(4);
        List<String> out = output(t[1]);
        assertThat(out).hasSize(49).doesNotContain("never");
        assertThat(out.indexOf("v12"))
                .as("key k2's next record after the dropped one")
                .isGreaterThanOrEqualTo(0);
    }

    /**
     * Commits (every 100 ms) and a clean close wait for a record in backoff: no offset past it is
     * committed while it waits, and closing the app while it waits finishes it first.
     */
    @Test
    void commitsAndCloseWaitForARecordInBackoff() throws Exception {
        String[] t = topics("drain", 1);
        Inputs.produce(BOOTSTRAP, 1, i -> new ProducerRecord<>(t[0], "slow", "slow"));
        Inputs.produce(BOOTSTRAP, 50, i -> new ProducerRecord<>(t[0], "k" + (i % 5), "v" + i));
        Map<String, String> settings = Map.of(
                "commit.interval.ms", "100",
                "streamshard.retry.backoff.ms", "1500",
                "streamshard.retry.backoff.max.ms", "1500");
        try (KafkaStreams streams = app(
                        t,
                        s -> s.mapValues(v -> call(v, v.startsWith("slow") ? 2 : 0))
                                .to(t[1], Produced.with(Serdes.String(), Serdes.String())),
                        settings);
                Admin admin = Admin.create(Map.of("bootstrap.servers", BOOTSTRAP))) {
            streams.start();
            long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
            while (true) {
                assertThat(System.nanoTime()).as("the slow record's third call").isLessThan(deadline);
                OffsetAndMetadata c = admin.listConsumerGroupOffsets(t[2])
                        .partitionsToOffsetAndMetadata()
                        .get()
                        .get(new TopicPartition(t[0], 0));
                // Read after the offsets: a commit past the slow record came after its last call
                // began. (Read before them, the third call and a commit could both fall in the
                // time the offsets took to read.)
                int calls = callsOf("slow");
                if (c != null && c.offset() > 0) {
                    assertThat(calls)
                            .as("nothing committed past the record in backoff (offset %d committed)", c.offset())
                            .isGreaterThanOrEqualTo(3);
                }
                if (calls >= 3) {
                    break;
                }
                Thread.sleep(50);
            }
            Demo.waitForCommitted(BOOTSTRAP, t[2], t[0], 51, Duration.ofMinutes(1), () -> {});

            // A second slow record, and the app closed while it waits for its retry.
            Inputs.produce(BOOTSTRAP, 1, i -> new ProducerRecord<>(t[0], "slow", "slow-2"));
            while (callsOf("slow-2") < 1) {
                assertThat(System.nanoTime())
                        .as("the second slow record's first call")
                        .isLessThan(deadline);
                Thread.sleep(10);
            }
            assertThat(streams.close(Duration.ofSeconds(30))).isTrue();
        }
        assertThat(callsOf("slow-2")).as("close waited for its retries").isEqualTo(3);
        List<String> out = output(t[1]);
        assertThat(out).hasSize(52).contains("slow", "slow-2");
        assertThat(out.get(out.size() - 1)).isEqualTo("slow-2");
    }

    /**
     * A rebalance while a record waits for its retry (two waits of 2.4-3 s): a second instance joins, the first one's
     * revoked tasks drain first (the waiting record finishes there, after its three calls) and
     * commit; every record is in the output, and the slow one once.
     */
    @Test
    void aRebalanceWaitsForARecordInBackoff() throws Exception {
        String[] t = topics("rebalance", 4);
        Inputs.produce(BOOTSTRAP, 1, i -> new ProducerRecord<>(t[0], "slow", "slow"));
        produceKeyed(t[0], 400, 40);
        Consumer<KStream<String, String>> body = s -> s.mapValues(v -> call(v, v.equals("slow") ? 2 : 0))
                .to(t[1], Produced.with(Serdes.String(), Serdes.String()));
        Map<String, String> settings = Map.of(
                "streamshard.retry.backoff.ms", "3000",
                "streamshard.retry.backoff.max.ms", "3000",
                "streamshard.workers", "4");
        try (KafkaStreams first = app(t, body, settings)) {
            first.start();
            long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
            while (callsOf("slow") < 1) {
                assertThat(System.nanoTime()).as("the slow record's first call").isLessThan(deadline);
                Thread.sleep(10);
            }
            try (KafkaStreams second = app(t, body, settings)) {
                second.start();
                Demo.waitForCommitted(
                        BOOTSTRAP,
                        t[2],
                        t[0],
                        401,
                        Duration.ofMinutes(2),
                        () -> assertThat(List.of(first.state(), second.state()))
                                .doesNotContain(KafkaStreams.State.ERROR));
            }
        }
        assertThat(callsOf("slow")).as("ran to its end where it started").isEqualTo(3);
        List<String> out = output(t[1]);
        assertThat(out).contains("slow").hasSizeGreaterThanOrEqualTo(401);
        assertThat(out.stream().filter(v -> v.equals("slow")).count()).isEqualTo(1);
        assertThat(new HashSet<>(out)).as("every input record").hasSize(401);
    }

    /**
     * A task with a serial region: a parallel mapValues whose call fails every tenth record twice,
     * then a Processor API processor (serial region) that notes the offsets it sees. The serial
     * region still sees each partition's records in dequeue (offset) order, each once: a record
     * waiting for its retry holds the records behind it there.
     */
    @Test
    void theSerialRegionStillSeesDequeueOrder() throws Exception {
        final int records = 1_000;
        String[] t = topics("serial", 2);
        produceKeyed(t[0], records, 40);
        Map<Integer, List<Long>> seen = new ConcurrentHashMap<>();
        try (KafkaStreams streams = app(
                t,
                s -> s.mapValues(v -> call(v, failsOf(v, 2)))
                        .process(
                                () -> new ContextualProcessor<String, String, String, String>() {
                                    @Override
                                    public void process(Record<String, String> r) {
                                        var rc = context().recordMetadata().orElseThrow();
                                        seen.computeIfAbsent(rc.partition(), k -> new ArrayList<>())
                                                .add(rc.offset());
                                        context().forward(r);
                                    }
                                },
                                Named.as("serial-note"))
                        .to(t[1], Produced.with(Serdes.String(), Serdes.String())),
                Map.of())) {
            runUntilCommitted(streams, t, t[2], records);
            assertThat(StreamShard.explain(streams))
                    .allSatisfy((task, d) -> assertThat(d).isEqualTo("parallel, serial region: serial-note"));
        }
        int total = 0;
        for (List<Long> offsets : seen.values()) {
            List<Long> sorted = new ArrayList<>(offsets);
            sorted.sort(null);
            assertThat(offsets).as("dequeue order, each once").isEqualTo(sorted).doesNotHaveDuplicates();
            total += offsets.size();
        }
        assertThat(total).isEqualTo(records);
        assertThat(output(t[1])).hasSize(records);
    }
}
