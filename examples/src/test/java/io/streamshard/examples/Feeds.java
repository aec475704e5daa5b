package io.streamshard.examples;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntFunction;
import java.util.function.IntToLongFunction;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;

/**
 * Deterministic input topics for tests that compare a stock run with a streamshard run: keys
 * Zipf-distributed (or fixed by a function), values {@code "<seq>,<n>"} with per-key sequence
 * numbers from 1 and {@code n} a seeded number in [0, 1000), and explicit timestamps
 * {@code base + start + i * step - jitter(i)}. One producer with one request in flight, so
 * offsets per partition follow the send order.
 *
 * <p>A feed with {@code flush} ends with one record per partition (key {@link #flushKey}) far
 * past the rest, so that every window, session, join window and suppression closes and a
 * stream-time punctuator fires after everything else ran.
 */
final class Feeds {
    private Feeds() {}

    /** Timestamp offset of the flush records from the base (30 min: far past any window here). */
    static final long FLUSH_AT = 30 * 60 * 1000L;

    /** One input topic's content. {@code name} gets the case's suffix appended. */
    record Feed(
            String name,
            int records,
            int keys,
            double skew,
            long start,
            long step,
            IntToLongFunction jitter,
            boolean flush,
            IntFunction<String> fixedKey,
            long seed) {

        static Feed of(String name, int records, int keys) {
            return new Feed(name, records, keys, 0.8, 0, 10, i -> 0, false, null, name.hashCode());
        }

        /** Timestamps {@code base + start + i * step}: keep {@code start} odd for a second topic, steps even. */
        Feed timestamps(long start, long step) {
            return new Feed(name, records, keys, skew, start, step, jitter, flush, fixedKey, seed);
        }

        /** Some records older than their neighbours (late, or within grace). */
        Feed jitter(IntToLongFunction jitter) {
            return new Feed(name, records, keys, skew, start, step, jitter, flush, fixedKey, seed);
        }

        Feed flushed() {
            return new Feed(name, records, keys, skew, start, step, jitter, true, fixedKey, seed);
        }

        /** Keys chosen by index instead of Zipf (e.g. a small dimension table). */
        Feed keys(IntFunction<String> fixedKey) {
            return new Feed(name, records, keys, skew, start, step, jitter, flush, fixedKey, seed);
        }

        Feed skew(double s) {
            return new Feed(name, records, keys, s, start, step, jitter, flush, fixedKey, seed);
        }
    }

    /** Base timestamp of a run: an hour ago (whole seconds), so even the flush records are in the past. */
    static long base() {
        return (System.currentTimeMillis() - 3_600_000L) / 1000 * 1000;
    }

    /** The partition the default partitioner puts a String key in. */
    static int partitionOf(String key, int partitions) {
        return Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % partitions;
    }

    /** A key that lands in {@code partition}, for the flush records. */
    static String flushKey(int partition, int partitions) {
        for (int j = 0; ; j++) {
            String key = "zz-flush-" + partition + "-" + j;
            if (partitionOf(key, partitions) == partition) {
                return key;
            }
        }
    }

    /** Produces {@code feed} into {@code topic}; returns the number of records written. */
    static int produce(String bootstrap, String topic, Feed feed, long base, int partitions) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        // As OrderProducer: one request in flight keeps the send order without idempotence.
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
        Zipf zipf = new Zipf(Math.max(1, feed.keys()), feed.skew(), feed.seed());
        Random numbers = new Random(feed.seed() + 1);
        Map<String, Long> seqs = new HashMap<>();
        AtomicReference<Exception> failed = new AtomicReference<>();
        int written = 0;
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < feed.records(); i++) {
                String key = feed.fixedKey() != null ? feed.fixedKey().apply(i) : "k-" + zipf.next();
                long seq = seqs.merge(key, 1L, Long::sum);
                long ts = base + feed.start() + i * feed.step() - feed.jitter().applyAsLong(i);
                producer.send(
                        new ProducerRecord<>(topic, null, ts, key, seq + "," + numbers.nextInt(1000)), (md, e) -> {
                            if (e != null) {
                                failed.compareAndSet(null, e);
                            }
                        });
                written++;
            }
            if (feed.flush()) {
                for (int part = 0; part < partitions; part++) {
                    producer.send(
                            new ProducerRecord<>(
                                    topic, part, base + FLUSH_AT + part, flushKey(part, partitions), "1,0"),
                            (md, e) -> {
                                if (e != null) {
                                    failed.compareAndSet(null, e);
                                }
                            });
                    written++;
                }
            }
            producer.flush();
        }
        if (failed.get() != null) {
            throw new IllegalStateException("producing " + topic + " failed", failed.get());
        }
        return written;
    }

    /** Produces every feed in order (topic = feed name + suffix). */
    static void produceAll(String bootstrap, List<Feed> feeds, String suffix, long base, int partitions)
            throws Exception {
        for (Feed f : feeds) {
            produce(bootstrap, f.name() + suffix, f, base, partitions);
        }
    }

    /** {@code n} of a value {@code "<seq>,<n>,..."}. */
    static int n(String value) {
        return Integer.parseInt(value.split(",")[1].split("\\|")[0]);
    }

    /** {@code seq} of a value {@code "<seq>,..."}. */
    static long seq(String value) {
        return Long.parseLong(value.split(",")[0]);
    }
}
