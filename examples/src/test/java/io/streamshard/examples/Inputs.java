package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntFunction;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;

/** Test support: unique topic names, input written one record at a time, failing apps. */
final class Inputs {
    private Inputs() {}

    static String suffix(String name) {
        return "-" + name + "-" + Long.toString(System.nanoTime(), 36);
    }

    /**
     * A cheap phase A ({@code cheap} records), a slow phase B ({@code slow}) and a cheap phase C
     * again, round-robin over keys {@code k0..k<keys-1>}; values {@code seq,phase} with per-key
     * sequence numbers 1, 2, 3... (the tests' processors make B slow).
     */
    static void producePhases(String bootstrap, String topic, int cheap, int slow, int keys) throws Exception {
        Map<Integer, Integer> seqs = new HashMap<>();
        produce(
                bootstrap,
                2 * cheap + slow,
                i -> new ProducerRecord<>(
                        topic,
                        "k" + (i % keys),
                        seqs.merge(i % keys, 1, Integer::sum) + ","
                                + (i < cheap ? "A" : i < cheap + slow ? "B" : "C")));
    }

    static void produce(String bootstrap, int records, IntFunction<ProducerRecord<String, String>> record)
            throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        // One request in flight and no retries reordering it: the topic gets the send order, and
        // nothing waits for each record's acknowledgement.
        p.put("max.in.flight.requests.per.connection", 1);
        p.put("enable.idempotence", false);
        p.put("linger.ms", 5);
        AtomicReference<Exception> failed = new AtomicReference<>();
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < records; i++) {
                producer.send(record.apply(i), (md, e) -> {
                    if (e != null) {
                        failed.compareAndSet(null, e);
                    }
                });
            }
            producer.flush();
        }
        if (failed.get() != null) {
            throw failed.get();
        }
    }

    /**
     * Starts {@code streams} with an uncaught-exception handler that shuts the client down, waits
     * (running {@code check} every 50 ms) until it is in ERROR and returns the StreamThread's
     * exception.
     */
    static Throwable runUntilError(KafkaStreams streams, Duration timeout, Runnable check) throws Exception {
        return runUntilError(streams, timeout, () -> {}, check);
    }

    /** A step that may throw. */
    interface Step {
        void run() throws Exception;
    }

    /** As above, running {@code afterStart} once the app is started. */
    static Throwable runUntilError(KafkaStreams streams, Duration timeout, Step afterStart, Runnable check)
            throws Exception {
        AtomicReference<Throwable> uncaught = new AtomicReference<>();
        streams.setUncaughtExceptionHandler(e -> {
            uncaught.compareAndSet(null, e);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        afterStart.run();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (streams.state() != KafkaStreams.State.ERROR && System.nanoTime() < deadline) {
            check.run();
            Thread.sleep(50);
        }
        assertThat(streams.state()).isEqualTo(KafkaStreams.State.ERROR);
        assertThat(uncaught.get()).as("the StreamThread's exception").isNotNull();
        return uncaught.get();
    }

    /** The stacks of this JVM's threads named {@code *name*} and of streamshard's workers: what a stuck app was doing. */
    static String threadDump(String name) {
        StringBuilder b = new StringBuilder("threads named *" + name + "* and streamshard-worker-*:\n");
        Thread.getAllStackTraces().forEach((t, stack) -> {
            if (t.getName().contains(name) || t.getName().startsWith("streamshard-worker-")) {
                b.append('"')
                        .append(t.getName())
                        .append("\" ")
                        .append(t.getState())
                        .append('\n');
                for (StackTraceElement e : stack) {
                    b.append("    at ").append(e).append('\n');
                }
            }
        });
        return b.toString();
    }

    /**
     * What a stalled application shows of itself: its threads' active tasks and the counters that
     * tell a consumer that fetched nothing from a thread that polled records it never processed
     * (totals and gauges other than zero or NaN, of the stream, consumer and streamshard metric groups).
     */
    static String stallReport(KafkaStreams streams) {
        StringBuilder b = new StringBuilder("local threads:\n");
        streams.metadataForLocalThreads()
                .forEach(t -> b.append("  ")
                        .append(t.threadName())
                        .append(' ')
                        .append(t.threadState())
                        .append(" active ")
                        .append(t.activeTasks())
                        .append('\n'));
        Set<String> groups = Set.of(
                "stream-thread-metrics",
                "stream-task-metrics",
                "consumer-fetch-manager-metrics",
                "consumer-coordinator-metrics",
                "streamshard-task-metrics",
                "streamshard-metrics");
        TreeMap<String, Object> shown = new TreeMap<>();
        streams.metrics().forEach((name, m) -> {
            Object v = m.metricValue();
            // Zero, or NaN (a gauge or average with nothing recorded yet): says nothing.
            double d = v instanceof Number ? ((Number) v).doubleValue() : 1;
            boolean empty = d == 0 || Double.isNaN(d);
            if (groups.contains(name.group())
                    && !empty
                    && !name.name().contains("rate")
                    && !name.name().contains("latency")) {
                shown.put(name.group() + " " + name.name() + " " + name.tags(), v);
            }
        });
        shown.forEach(
                (k, v) -> b.append("metric ").append(k).append(" = ").append(v).append('\n'));
        return b.toString();
    }

    /** Whether {@code root} or one of its causes matches. */
    static boolean causedBy(Throwable root, Predicate<Throwable> match) {
        for (Throwable c = root; c != null; c = c.getCause()) {
            if (match.test(c)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Reads {@code topic} read-committed and checks it holds {@code records} records, each key's
     * values {@code 0, 1, 2, ...} in order, none twice and nothing more (a duplicate arrives within
     * the time the last records took).
     */
    static void assertInOrderOnce(String bootstrap, String topic, int records, String suffix) {
        Map<String, Integer> next = new HashMap<>();
        List<String> problems = new ArrayList<>();
        int read = 0;
        Properties cp = new Properties();
        cp.put("bootstrap.servers", bootstrap);
        cp.put("group.id", "check-" + topic + suffix);
        cp.put("auto.offset.reset", "earliest");
        cp.put("isolation.level", "read_committed");
        try (KafkaConsumer<String, String> c =
                new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (read < records && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    read++;
                    int want = next.getOrDefault(r.key(), 0);
                    int got = Integer.parseInt(r.value());
                    if (got != want && problems.size() < 10) {
                        problems.add(r.key() + ": " + got + " where " + want + " was next");
                    }
                    next.put(r.key(), got + 1);
                }
            }
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofSeconds(2))) {
                read++;
                problems.add("extra " + r.key() + "=" + r.value());
            }
        }
        assertThat(problems).as("%s out of order, duplicated or extra", topic).isEmpty();
        assertThat(read).as("%s records", topic).isEqualTo(records);
    }

    /** The sum over {@code streams}' metrics of that group and name (one per task, say); NaN values count 0. */
    static double metricSum(KafkaStreams streams, String group, String name) {
        double sum = 0;
        for (Map.Entry<MetricName, ? extends Metric> e : streams.metrics().entrySet()) {
            if (e.getKey().group().equals(group) && e.getKey().name().equals(name)) {
                Object v = e.getValue().metricValue();
                if (v instanceof Number && !Double.isNaN(((Number) v).doubleValue())) {
                    sum += ((Number) v).doubleValue();
                }
            }
        }
        return sum;
    }
}
