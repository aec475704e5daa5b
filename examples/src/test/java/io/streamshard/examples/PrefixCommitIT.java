package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.internals.TopicPartitionMetadata;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.Test;

/**
 * Commits that do not wait for the slowest record ({@code streamshard.commit.wait=none}, the
 * default): a few records take 1.5 s among 3 ms ones, commits come every 100 ms. While the app
 * runs, a watcher reads the committed offsets every 20 ms and checks that each covers only
 * records whose processing had finished (no commit past unfinished work), that each carries the
 * partition time stock's commit of the same offset would (the largest timestamp before it: a
 * restart from there sees stock's stream time), and that one partition's commits went on while
 * the other partition's slow record ran (a commit that drains the StreamThread's tasks would stall
 * them all), from the app's first record on. Afterwards the output, read committed, holds
 * every input record once, in per-key order, and so does the changelog of the store the slow step
 * writes each record's sequence to (no cache: every write is a changelog record). With a serial
 * region (the split cases), a store the region writes watches its own flush ({@link FlushWatch}):
 * no write may land while a commit flushes it (the region pauses for the commit; at-least-once
 * flushes it at every commit's checkpoint).
 */
class PrefixCommitIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int RECORDS = 3_000;
    private static final int KEYS = 300;
    private static final String STORE = "seen";
    private static final String SERIAL_STORE = "serial-seen";
    private static final String SERIAL_WATCH = "serial-watched";
    /** Now, not long ago: the test broker deletes input older than its retention. */
    private static final long BASE_TIME = System.currentTimeMillis();

    @Test
    void exactlyOnceCommitsGoOnPastASlowRecordAndNeverCoverUnfinishedWork() throws Exception {
        run(true);
    }

    @Test
    void atLeastOnceCommitsGoOnPastASlowRecordAndNeverCoverUnfinishedWork() throws Exception {
        run(false);
    }

    /**
     * The same with a serial region below the slow step (an unknown processor, 1 ms a record, that
     * writes each record to a store of its own): a record is finished once the serial region ran
     * it, so the watcher's "finished" is taken there, and the serial region falls behind the
     * parallel one (a commit that covered records whose serial part had not run fails).
     */
    @Test
    void exactlyOnceCommitsOfATaskWithASerialRegionGoOnPastASlowRecord() throws Exception {
        run(true, true);
    }

    @Test
    void atLeastOnceCommitsOfATaskWithASerialRegionGoOnPastASlowRecord() throws Exception {
        run(false, true);
    }

    /** Record {@code i}'s timestamp: rising, with every seventh a little late (stock's partition time is the largest). */
    private static long timestamp(int i) {
        return BASE_TIME + 10L * i - (i % 7 == 3 ? 55 : 0);
    }

    /**
     * The partition time stock commits with offset {@code offset} of {@code partition}: the
     * largest timestamp of the records before it (record {@code i} is at offset {@code i / 2} of
     * partition {@code i % 2}), -1 (none yet) before the first.
     */
    private static long partitionTimeBefore(int partition, long offset) {
        long max = -1;
        for (long o = 0; o < offset; o++) {
            max = Math.max(max, timestamp((int) (2 * o + partition)));
        }
        return max;
    }

    private void run(boolean eos) throws Exception {
        run(eos, false);
    }

    private void run(boolean eos, boolean split) throws Exception {
        String suffix = Inputs.suffix((eos ? "pfxeos" : "pfx") + (split ? "s" : ""));
        String input = "pfx-in" + suffix;
        String output = "pfx-out" + suffix;
        String app = "it" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 2, List.of(input, output));
        // Value: the record's sequence within its key, so the output's per-key order is checkable.
        // Written while the app runs, over about 1.5 s, both partitions alike: partition 1 has
        // records to finish and commit while partition 0's slow ones run, whichever task the
        // StreamThread happens to serve first.
        int[] seq = new int[KEYS];
        AtomicReference<Exception> produceFailed = new AtomicReference<>();
        Thread producer = new Thread(() -> {
            try {
                Inputs.produce(BOOTSTRAP, RECORDS, i -> {
                    if (i % 10 == 9) {
                        Probe.sleep(5);
                    }
                    int k = i % KEYS;
                    return new ProducerRecord<>(input, i % 2, timestamp(i), "k" + k, Integer.toString(seq[k]++));
                });
            } catch (Exception e) {
                produceFailed.set(e);
            }
        });

        Map<Integer, Set<Long>> finished = new ConcurrentHashMap<>();
        AtomicInteger slowRunning = new AtomicInteger();
        AtomicLong slowStarts = new AtomicLong();
        // Counts the spells during which some slow record runs (0 → 1 running).
        AtomicLong slowSpells = new AtomicLong();
        StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(
                Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(STORE), Serdes.String(), Serdes.String())
                        .withCachingDisabled());
        AtomicLong serialOnWorkers = new AtomicLong();
        FlushWatch.Seen serialWatch = new FlushWatch.Seen();
        KStream<String, String> slow = b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .process(
                        () -> new Processor<String, String, String, String>() {
                            private ProcessorContext<String, String> context;
                            private KeyValueStore<String, String> seen;

                            @Override
                            public void init(ProcessorContext<String, String> context) {
                                this.context = context;
                                this.seen = context.getStateStore(STORE);
                            }

                            @Override
                            public void process(Record<String, String> record) {
                                int partition = context.recordMetadata().get().partition();
                                long offset = context.recordMetadata().get().offset();
                                // The first record of partition 0 among them: it runs from the app's start.
                                if (partition == 0 && offset % 500 == 0) {
                                    slowStarts.incrementAndGet();
                                    if (slowRunning.getAndIncrement() == 0) {
                                        slowSpells.incrementAndGet();
                                    }
                                    Probe.sleep(1_500);
                                    slowRunning.decrementAndGet();
                                } else {
                                    Probe.sleep(3);
                                }
                                seen.put(record.key(), record.value());
                                context.forward(record);
                                if (!split) {
                                    finished.computeIfAbsent(partition, p -> new ConcurrentSkipListSet<>())
                                            .add(offset);
                                }
                            }
                        },
                        Named.as("slow-step"),
                        STORE);
        if (split) {
            b.addStateStore(Stores.keyValueStoreBuilder(
                            Stores.persistentKeyValueStore(SERIAL_STORE), Serdes.String(), Serdes.String())
                    .withCachingDisabled());
            // Written by the serial region too: its flushes (an at-least-once commit's checkpoint
            // flushes every store; exactly-once, only a close) must see no write.
            b.addStateStore(Stores.keyValueStoreBuilder(
                            FlushWatch.supplier(SERIAL_WATCH, serialWatch), Serdes.String(), Serdes.String())
                    .withCachingDisabled());
            slow = slow.process(
                    () -> new Processor<String, String, String, String>() {
                        private ProcessorContext<String, String> context;
                        private KeyValueStore<String, String> store;
                        private KeyValueStore<String, String> watched;

                        @Override
                        public void init(ProcessorContext<String, String> context) {
                            this.context = context;
                            this.store = context.getStateStore(SERIAL_STORE);
                            this.watched = context.getStateStore(SERIAL_WATCH);
                        }

                        @Override
                        public void process(Record<String, String> record) {
                            if (!Thread.currentThread().getName().contains("-StreamThread-")) {
                                serialOnWorkers.incrementAndGet();
                            }
                            Probe.sleep(1);
                            store.put(record.key(), record.value());
                            watched.put(record.key(), record.value());
                            context.forward(record);
                            finished.computeIfAbsent(
                                            context.recordMetadata().get().partition(),
                                            p -> new ConcurrentSkipListSet<>())
                                    .add(context.recordMetadata().get().offset());
                        }
                    },
                    Named.as("serial-step"),
                    SERIAL_STORE,
                    SERIAL_WATCH);
        }
        slow.to(output, Produced.with(Serdes.String(), Serdes.String()));
        Properties p = EnrichmentApp.config(BOOTSTRAP, app);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        if (eos) {
            p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        }
        p.put("streamshard.workers", "32");
        p.put("streamshard.parallel.processors", "slow-step");
        // From the first record on the workers (a task starts inline otherwise, and its first
        // record, a slow one, would stop the StreamThread as stock's would).
        p.put("streamshard.inline.below.us", "0");
        p.put("state.dir", Files.createTempDirectory("streamshard-it").toString());

        AtomicReference<String> pastUnfinished = new AtomicReference<>();
        AtomicReference<String> wrongTime = new AtomicReference<>();
        // Per spell of slow records: partition 1's committed offsets seen while they ran.
        Map<Long, long[]> whileSlow = new ConcurrentHashMap<>();
        AtomicBoolean watching = new AtomicBoolean(true);
        Properties ap = new Properties();
        ap.put("bootstrap.servers", BOOTSTRAP);
        try (Admin admin = Admin.create(ap);
                KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            Thread watcher = new Thread(() -> {
                while (watching.get()) {
                    try {
                        boolean slowBefore = slowRunning.get() > 0;
                        long spell = slowSpells.get();
                        Map<TopicPartition, OffsetAndMetadata> c = admin.listConsumerGroupOffsets(app)
                                .partitionsToOffsetAndMetadata()
                                .get();
                        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : c.entrySet()) {
                            if (e.getValue() == null || !e.getKey().topic().equals(input)) {
                                continue;
                            }
                            long time = TopicPartitionMetadata.decode(
                                            e.getValue().metadata())
                                    .partitionTime();
                            long stock = partitionTimeBefore(
                                    e.getKey().partition(), e.getValue().offset());
                            if (time != stock) {
                                wrongTime.compareAndSet(
                                        null,
                                        e.getKey() + " committed at "
                                                + e.getValue().offset() + " with partition time " + time + ", stock's "
                                                + stock);
                            }
                            // Read after the offsets: anything finished by the commit is in it.
                            Set<Long> done = finished.getOrDefault(e.getKey().partition(), Set.of());
                            for (long o = 0; o < e.getValue().offset(); o++) {
                                if (!done.contains(o)) {
                                    pastUnfinished.compareAndSet(
                                            null,
                                            e.getKey() + " committed at "
                                                    + e.getValue().offset() + " before " + o + " finished");
                                    break;
                                }
                            }
                        }
                        OffsetAndMetadata p1 = c.get(new TopicPartition(input, 1));
                        if (slowBefore && slowRunning.get() > 0 && slowSpells.get() == spell && p1 != null) {
                            long off = p1.offset();
                            whileSlow.merge(spell, new long[] {off, off}, (a, x) ->
                                    new long[] {Math.min(a[0], x[0]), Math.max(a[1], x[1])});
                        }
                        Thread.sleep(20);
                    } catch (InterruptedException e) {
                        return;
                    } catch (Exception e) {
                        pastUnfinished.compareAndSet(null, "watcher failed: " + e);
                    }
                }
            });
            streams.start();
            watcher.start();
            producer.start();
            try {
                Demo.waitForCommitted(BOOTSTRAP, app, input, RECORDS, Duration.ofMinutes(2), () -> {
                    assertThat(produceFailed.get()).isNull();
                });
            } finally {
                watching.set(false);
                watcher.join();
                producer.join();
            }
        }
        assertThat(pastUnfinished.get()).as("a commit covered unfinished work").isNull();
        assertThat(wrongTime.get()).as("a commit's partition time").isNull();
        assertThat(slowStarts.get()).as("slow records").isEqualTo(3);
        // The first, from the app's first record: its first commit did not wait for it either (it
        // once drained there, because the partition time before a first record was not read).
        assertThat(whileSlow)
                .as(
                        "partition 1 committed while partition 0's first record, a slow one, ran (%s)",
                        whileSlow.entrySet().stream()
                                .map(e -> e.getKey() + ": " + e.getValue()[0] + ".." + e.getValue()[1])
                                .toList())
                .containsKey(1L);
        assertThat(whileSlow.values())
                .as(
                        "partition 1's committed offset moved on while partition 0's slow records ran "
                                + "(its committed offsets in each spell of them: %s)",
                        whileSlow.values().stream().map(a -> a[0] + ".." + a[1]).toList())
                .anySatisfy(a -> assertThat(a[1]).isGreaterThan(a[0]));

        // The output and the store's changelog, read committed: every record once, each key's
        // records in order.
        Inputs.assertInOrderOnce(BOOTSTRAP, output, RECORDS, suffix);
        Inputs.assertInOrderOnce(BOOTSTRAP, app + "-" + STORE + "-changelog", RECORDS, suffix);
        if (split) {
            // The unknown processor ran as the serial region, on the workers (not inline).
            assertThat(serialOnWorkers.get()).as("serial parts run on workers").isGreaterThan(RECORDS / 2);
            Inputs.assertInOrderOnce(BOOTSTRAP, app + "-" + SERIAL_STORE + "-changelog", RECORDS, suffix);
            // No write landed in a flush of the region's store (each takes a few ms, while the
            // region writes about every millisecond): the region was paused for it.
            assertThat(serialWatch.violation.get())
                    .as("a serial part wrote during a commit's flush")
                    .isNull();
            assertThat(serialWatch.writes.get())
                    .as("writes to the watched store")
                    .isEqualTo(RECORDS);
            if (!eos) {
                assertThat(serialWatch.flushes.get())
                        .as("commits that flushed it (their checkpoints)")
                        .isGreaterThan(10);
            }
        }
    }
}
