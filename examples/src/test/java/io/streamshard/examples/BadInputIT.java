package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.StreamShard;
import io.streamshard.scheduler.DrainTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.LogAndContinueExceptionHandler;
import org.apache.kafka.streams.errors.LogAndFailExceptionHandler;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Bad input, one case a test, each on a parallel task on the real broker: what the user sees is
 * asserted, and where the app fails, that no offset past the bad record is committed.
 * <ul>
 *   <li>a record whose value fails deserialization, with both of Kafka Streams' handlers;
 *   <li>a processor that blocks forever on a worker: the drain times out with an error that names
 *       the task, its stuck records and keys, the StreamThread fails through the uncaught-exception
 *       handler as any stock failure does, and closing the app does not hang;
 *   <li>processor code that leaves its worker interrupted (the usual {@code catch
 *       (InterruptedException e) { Thread.currentThread().interrupt(); }}), and workers interrupted
 *       from outside: no later record sees an interrupt that was not its own;
 *   <li>an {@code Error} ({@code OutOfMemoryError}) thrown by a processor: it reaches the
 *       uncaught-exception handler, stock and with the agent alike;
 *   <li>{@code streamshard.*} settings at their limits: one worker, one record in flight.
 * </ul>
 */
class BadInputIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int RECORDS = 400;
    private static final int POISON = 150;

    /** Values are decimal numbers; anything else is a {@code SerializationException}, as a real serde throws. */
    private static final Serde<Long> NUMBERS = Serdes.serdeFrom(Serdes.Long().serializer(), new Deserializer<Long>() {
        @Override
        public Long deserialize(String topic, byte[] data) {
            String s = new String(data, StandardCharsets.UTF_8);
            try {
                return Long.parseLong(s);
            } catch (NumberFormatException e) {
                throw new SerializationException("not a number: " + s);
            }
        }
    });

    private static Properties config(String appId) throws Exception {
        Properties p = EnrichmentApp.config(BOOTSTRAP, appId);
        p.put("state.dir", Files.createTempDirectory("streamshard-bad").toString());
        p.put("streamshard.workers", "8");
        p.put("streamshard.inline.below.us", "0"); // every record on a worker
        return p;
    }

    private static long committed(String group, String topic) throws Exception {
        Properties ap = new Properties();
        ap.put("bootstrap.servers", BOOTSTRAP);
        try (Admin admin = Admin.create(ap)) {
            Map<TopicPartition, OffsetAndMetadata> c = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata()
                    .get();
            OffsetAndMetadata o = c.get(new TopicPartition(topic, 0));
            return o == null ? 0 : o.offset();
        }
    }

    private static void assertParallel(KafkaStreams streams) {
        if (streams.state() == KafkaStreams.State.RUNNING) {
            assertThat(StreamShard.explain(streams))
                    .allSatisfy((task, d) -> assertThat(d).isEqualTo("parallel"));
        }
    }

    /** Input on one partition: values 0..RECORDS-1 over 20 keys, the one at {@link #POISON} replaced by {@code poison}. */
    private static void input(String topic, String poison) throws Exception {
        OrderProducer.createTopics(BOOTSTRAP, 1, List.of(topic));
        Inputs.produce(
                BOOTSTRAP,
                RECORDS,
                i -> new ProducerRecord<>(
                        topic, 0, "k" + (i % 20), i == POISON && poison != null ? poison : Integer.toString(i)));
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aValueThatFailsDeserialization(boolean logAndContinue) throws Exception {
        String suffix = Inputs.suffix(logAndContinue ? "deser-continue" : "deser-fail");
        String in = "bad-in" + suffix;
        String out = "bad-out" + suffix;
        input(in, "not-a-number");
        OrderProducer.createTopics(BOOTSTRAP, 1, List.of(out));
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), NUMBERS))
                .mapValues(v -> {
                    Probe.sleep(1);
                    return Long.toString(v * 2);
                })
                .to(out, Produced.with(Serdes.String(), Serdes.String()));
        String appId = "bad" + suffix;
        Properties p = config(appId);
        p.put(
                StreamsConfig.DEFAULT_DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG,
                logAndContinue ? LogAndContinueExceptionHandler.class : LogAndFailExceptionHandler.class);
        if (logAndContinue) {
            try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
                streams.start();
                Demo.waitForCommitted(
                        BOOTSTRAP, appId, in, RECORDS, Duration.ofMinutes(2), () -> assertParallel(streams));
                assertThat(streams.state()).isEqualTo(KafkaStreams.State.RUNNING);
                double skipped = streams.metrics().entrySet().stream()
                        .filter(m -> m.getKey().name().equals("dropped-records-total"))
                        .mapToDouble(m -> ((Number) m.getValue().metricValue()).doubleValue())
                        .sum();
                assertThat(skipped).as("dropped-records-total").isEqualTo(1.0);
            }
            List<ConsumerRecord<String, String>> got = Demo.readAll(BOOTSTRAP, out, new StringDeserializer());
            assertThat(got)
                    .as("every record but the poison one, doubled")
                    .hasSize(RECORDS - 1)
                    .noneMatch(r -> r.value().equals(Integer.toString(2 * POISON)));
            return;
        }
        Throwable root;
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            root = Inputs.runUntilError(streams, Duration.ofMinutes(2), () -> assertParallel(streams));
        }
        assertThat(Inputs.causedBy(
                        root,
                        c -> c instanceof SerializationException
                                && "not a number: not-a-number".equals(c.getMessage())))
                .as("the deserializer's exception is in the cause chain of %s", root)
                .isTrue();
        assertThat(committed(appId, in))
                .as("committed offset (the poison record is offset %d)", POISON)
                .isLessThanOrEqualTo(POISON);
        // Everything before the poison record ran and was output; nothing after it.
        List<ConsumerRecord<String, String>> got = Demo.readAll(BOOTSTRAP, out, new StringDeserializer());
        assertThat(got.stream().map(r -> Long.parseLong(r.value()) / 2)).allMatch(v -> v < POISON);
    }

    @Test
    void aProcessorBlockedForeverTimesOutTheDrainAndFailsCleanly() throws Exception {
        String suffix = Inputs.suffix("stuck");
        String in = "bad-in" + suffix;
        input(in, "stuck");
        CountDownLatch never = new CountDownLatch(1);
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(v -> {
                    if (v.equals("stuck")) {
                        try {
                            never.await(); // a remote call without a timeout that never answers
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                    return v;
                })
                .to("bad-out" + suffix, Produced.with(Serdes.String(), Serdes.String()));
        OrderProducer.createTopics(BOOTSTRAP, 1, List.of("bad-out" + suffix));
        String appId = "bad" + suffix;
        Properties p = config(appId);
        p.put("streamshard.drain.timeout.ms", "3000");
        Throwable root;
        long closeMs;
        try {
            KafkaStreams streams = new KafkaStreams(b.build(), p);
            root = Inputs.runUntilError(streams, Duration.ofMinutes(2), () -> assertParallel(streams));
            long t = System.nanoTime();
            streams.close(Duration.ofSeconds(60));
            closeMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t);
        } finally {
            never.countDown();
        }
        DrainTimeoutException timeout = null;
        for (Throwable c = root; c != null; c = c.getCause()) {
            if (c instanceof DrainTimeoutException d) {
                timeout = d;
            }
        }
        assertThat(timeout)
                .as("a DrainTimeoutException in the cause chain of %s", root)
                .isNotNull();
        // The stuck record runs, the records of its key wait behind it (20 keys round-robin).
        assertThat(timeout.getMessage())
                .contains("drain timed out after")
                .contains("task 0_0:")
                .contains("1 running")
                .contains("on 1 key")
                .contains("partition 0 from offset " + POISON);
        assertThat(closeMs).as("close() after the failure, ms").isLessThan(45_000);
        assertThat(committed(appId, in))
                .as("committed offset (the stuck record is offset %d)", POISON)
                .isLessThanOrEqualTo(POISON);
    }

    /**
     * The same in a serial region (an unknown processor after the slow step): a commit first
     * pauses the region, which cannot pause while the stuck serial part runs, then drains. The two
     * share one drain timeout: the StreamThread fails within it (plus a commit interval), not after
     * twice it (the pause's wait, then a whole drain timeout more), which could pass {@code
     * max.poll.interval.ms} where the drain timeout alone would not.
     */
    @Test
    void aSerialPartBlockedForeverFailsWithinOneDrainTimeout() throws Exception {
        String suffix = Inputs.suffix("stuck-serial");
        String in = "bad-in" + suffix;
        String out = "bad-out" + suffix;
        input(in, "stuck");
        CountDownLatch never = new CountDownLatch(1);
        AtomicLong stuckAt = new AtomicLong();
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(v -> v)
                .process(() -> new Processor<String, String, String, String>() {
                    private ProcessorContext<String, String> context;

                    @Override
                    public void init(ProcessorContext<String, String> context) {
                        this.context = context;
                    }

                    @Override
                    public void process(Record<String, String> r) {
                        if (r.value().equals("stuck")) {
                            stuckAt.set(System.nanoTime());
                            try {
                                never.await();
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        }
                        context.forward(r);
                    }
                })
                .to(out, Produced.with(Serdes.String(), Serdes.String()));
        OrderProducer.createTopics(BOOTSTRAP, 1, List.of(out));
        String appId = "bad" + suffix;
        Properties p = config(appId);
        long drainTimeoutMs = 3000;
        p.put("streamshard.drain.timeout.ms", Long.toString(drainTimeoutMs));
        AtomicReference<Throwable> uncaught = new AtomicReference<>();
        AtomicLong failedAt = new AtomicLong();
        KafkaStreams streams = new KafkaStreams(b.build(), p);
        try {
            streams.setUncaughtExceptionHandler(e -> {
                failedAt.compareAndSet(0, System.nanoTime());
                uncaught.compareAndSet(null, e);
                return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
            });
            streams.start();
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
            while (uncaught.get() == null && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
        } finally {
            never.countDown(); // the call answers at last: the close need not wait for it
            streams.close(Duration.ofSeconds(60));
        }
        Throwable root = uncaught.get();
        assertThat(root).as("the StreamThread's exception").isNotNull();
        assertThat(stuckAt.get()).as("the stuck serial part ran").isNotZero();
        long failedAfterMs = TimeUnit.NANOSECONDS.toMillis(failedAt.get() - stuckAt.get());
        // One drain timeout and at most one commit interval (200 ms) before the first commit that
        // pauses; the pause's wait followed by a whole drain took two drain timeouts.
        assertThat(failedAfterMs)
                .as("ms from the stuck serial part's start to the StreamThread's failure")
                .isBetween(drainTimeoutMs, drainTimeoutMs * 5 / 3);
        assertThat(Inputs.causedBy(
                        root,
                        c -> c instanceof DrainTimeoutException
                                && c.getMessage().contains("for its serial region to pause")))
                .as("a DrainTimeoutException naming the pause in the cause chain of %s", root)
                .isTrue();
        assertThat(committed(appId, in))
                .as("committed offset (the stuck record is offset %d)", POISON)
                .isLessThanOrEqualTo(POISON);
    }

    /**
     * A record that leaves its worker interrupted fails its own later blocking calls (as on a stock
     * StreamThread), so here it is filtered out before the sink; the records after it on that worker
     * must start uninterrupted. Idle workers are interrupted too, before any input arrives.
     */
    @Test
    void anInterruptNeverLeaksIntoAnotherRecord() throws Exception {
        String suffix = Inputs.suffix("interrupt");
        String in = "bad-in" + suffix;
        String out = "bad-out" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 1, List.of(in, out));
        AtomicInteger interruptedAtStart = new AtomicInteger();
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(v -> {
                    if (Thread.currentThread().isInterrupted()) {
                        interruptedAtStart.incrementAndGet();
                    }
                    try {
                        Thread.sleep(2); // throws at once if this thread is interrupted
                    } catch (InterruptedException e) {
                        throw new IllegalStateException("record " + v + " was interrupted", e);
                    }
                    if (Integer.parseInt(v) % 7 == 0) {
                        // The textbook handling of an interrupt this record caught: restore the flag.
                        Thread.currentThread().interrupt();
                    }
                    return v;
                })
                .filter((k, v) -> Integer.parseInt(v) % 7 != 0)
                .to(out, Produced.with(Serdes.String(), Serdes.String()));
        String appId = "bad" + suffix;
        Properties p = config(appId);
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            streams.start();
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
            while (streams.state() != KafkaStreams.State.RUNNING && System.nanoTime() < deadline) {
                Probe.sleep(50);
            }
            List<Thread> workers = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.getName().startsWith("streamshard-worker-"))
                    .toList();
            assertThat(workers).as("the instance's workers").hasSize(8);
            workers.forEach(Thread::interrupt); // idle, waiting for records
            Inputs.produce(BOOTSTRAP, RECORDS, i -> new ProducerRecord<>(in, 0, "k" + (i % 20), Integer.toString(i)));
            Demo.waitForCommitted(BOOTSTRAP, appId, in, RECORDS, Duration.ofMinutes(2), () -> {
                assertParallel(streams);
                assertThat(streams.state()).isNotEqualTo(KafkaStreams.State.ERROR);
            });
            assertThat(streams.state()).isEqualTo(KafkaStreams.State.RUNNING);
        }
        assertThat(interruptedAtStart.get())
                .as("records that started interrupted")
                .isZero();
        assertThat(Demo.readAll(BOOTSTRAP, out, new StringDeserializer())).hasSize((int)
                IntStream.range(0, RECORDS).filter(i -> i % 7 != 0).count());
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void anErrorThrownByAProcessorReachesTheHandler(boolean streamshard) throws Exception {
        String suffix = Inputs.suffix(streamshard ? "error-shard" : "error-stock");
        String in = "bad-in" + suffix;
        input(in, "oom");
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(v -> {
                    Probe.sleep(1);
                    if (v.equals("oom")) {
                        throw new OutOfMemoryError("simulated: processor ran out of memory");
                    }
                    return v;
                })
                .to("bad-out" + suffix, Produced.with(Serdes.String(), Serdes.String()));
        OrderProducer.createTopics(BOOTSTRAP, 1, List.of("bad-out" + suffix));
        String appId = "bad" + suffix;
        Properties p = config(appId);
        p.put("streamshard.enabled", Boolean.toString(streamshard));
        Throwable root;
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            root = Inputs.runUntilError(streams, Duration.ofMinutes(2), () -> {
                if (streamshard) {
                    assertParallel(streams);
                }
            });
        }
        assertThat(Inputs.causedBy(
                        root,
                        c -> c instanceof OutOfMemoryError && c.getMessage().startsWith("simulated")))
                .as("the Error in the cause chain of %s", root)
                .isTrue();
        assertThat(committed(appId, in))
                .as("committed offset (the failing record is offset %d)", POISON)
                .isLessThanOrEqualTo(POISON);
    }

    /** One worker, one record in flight per task and in all: the smallest settings still run everything, in order. */
    @Test
    void settingsAtTheirLowerLimitsStillRunEverythingInOrder() throws Exception {
        String suffix = Inputs.suffix("limits");
        String in = "bad-in" + suffix;
        String out = "bad-out" + suffix;
        input(in, null);
        OrderProducer.createTopics(BOOTSTRAP, 1, List.of(out));
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(v -> {
                    Probe.sleep(1);
                    return v;
                })
                .to(out, Produced.with(Serdes.String(), Serdes.String()));
        String appId = "bad" + suffix;
        Properties p = config(appId);
        p.put("streamshard.workers", "1");
        p.put("streamshard.max.inflight.per.task", "1");
        p.put("streamshard.max.inflight", "1");
        p.put("streamshard.drain.timeout.ms", "1000");
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            streams.start();
            Demo.waitForCommitted(BOOTSTRAP, appId, in, RECORDS, Duration.ofMinutes(2), () -> assertParallel(streams));
            assertThat(streams.state()).isEqualTo(KafkaStreams.State.RUNNING);
        }
        List<ConsumerRecord<String, String>> got = Demo.readAll(BOOTSTRAP, out, new StringDeserializer());
        assertThat(got.stream().map(r -> Integer.parseInt(r.value())).toList())
                .as("one partition, one record at a time: the input order")
                .isEqualTo(IntStream.range(0, RECORDS).boxed().toList());
    }
}
