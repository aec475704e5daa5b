package io.streamshard.bench;

import io.streamshard.examples.Work;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.TimeWindows;

/**
 * The benchmark's Kafka Streams app, run unchanged stock and with {@code -javaagent:streamshard.jar}
 * (see bench/run.py). Three shapes, all with the simulated piece of work first:
 * <ul>
 *   <li>{@code copy}: each input value to the output topic after the work; optionally a
 *       {@code groupByKey().count()} per key into the counts topic;
 *   <li>{@code join}: the enrichment app — after the work, {@code leftJoin} a {@code KTable} read from
 *       {@code <input>-table} (value {@code tier}) and append {@code ,<tier>} (or {@code ,none}) to the
 *       value, then to the output and {@code groupByKey().count()} into the counts topic;
 *   <li>{@code window}: after the work, to the output, and a windowed count per key (one window of
 *       1,000 days, so the final count per key is the key's number of records) into the counts topic:
 *       the windowed count is the task's serial region;
 *   <li>{@code wordcount}: {@code flatMapValues} (one "word" per record, its key, so every count can be
 *       checked), to the output, and {@code groupBy} the word (a repartition topic) then {@code count}
 *       into the counts topic;
 *   <li>{@code fk}: change-data-capture style — the input is a table of orders (its key the order);
 *       the work runs in a materialized {@code mapValues} on that table, then a foreign-key
 *       {@code leftJoin} with {@code <input>-table} (the foreign key {@code k<n>}, from the row's
 *       value, so a row's updates move between foreign keys) appends {@code ,<product>} (or
 *       {@code ,none}), to the output, and a {@code groupBy} the product then {@code count} into the
 *       counts topic (not checked: its keys are products);
 *   <li>{@code flaky}, {@code flaky-loop}: {@code copy}, where the work is a call to a flaky service
 *       that fails its first call for one record in ten: {@code flaky} lets the failure out (for
 *       {@code streamshard.retry.*}), {@code flaky-loop} retries in the lambda, sleeping 100 ms
 *       between calls.
 * </ul>
 *
 * <pre>
 * BenchApp &lt;bootstrap&gt; &lt;application-id&gt; &lt;input&gt; &lt;output&gt; &lt;counts topic or -&gt;
 *          &lt;work&gt; &lt;alos|eos&gt; &lt;stream threads&gt; &lt;streamshard workers&gt; [copy|join|window|wordcount|fk|flaky|flaky-loop]
 * </pre>
 *
 * The system property {@code bench.commit.interval.ms} overrides {@code commit.interval.ms}. Runs
 * until killed.
 */
public final class BenchApp {
    private BenchApp() {}

    /** The flaky service's first failures, by record value (each fails once). */
    private static final Set<String> FAILED_ONCE = ConcurrentHashMap.newKeySet();

    /** What a retry loop in the lambda waits between calls ({@code flaky-loop}), ms. */
    static final long LOOP_BACKOFF_MS = 100;

    /**
     * The flaky service: the call ({@code work}), then for one record in ten (decided by its value,
     * so every run fails the same records) a failure the first time it is called for that record.
     */
    static void callFlaky(Work work, String v) {
        work.run();
        if (Math.floorMod(v.hashCode(), 10) == 0 && FAILED_ONCE.add(v)) {
            throw new IllegalStateException("503 Service Unavailable (first call for this record)");
        }
    }

    /** The foreign keys of the {@code fk} shape: {@code k0 … k<FK_KEYS - 1>}. */
    static final int FK_KEYS = 1000;

    public static Topology topology(String shape, String input, String output, String counts, Work work) {
        StreamsBuilder b = new StreamsBuilder();
        if (shape.equals("fk")) {
            foreignKeyJoin(b, input, output, counts, work);
            return b.build();
        }
        KStream<String, String> in = b.stream(input, Consumed.with(Serdes.String(), Serdes.String()));
        KStream<String, String> worked = in.mapValues(v -> {
            switch (shape) {
                case "flaky" -> callFlaky(work, v); // streamshard.retry.* retries it
                case "flaky-loop" -> {
                    // What users write without retries: a loop in the lambda, sleeping between calls.
                    while (true) {
                        try {
                            callFlaky(work, v);
                            break;
                        } catch (IllegalStateException e) {
                            Work.parse("sleep:" + LOOP_BACKOFF_MS * 1000).run();
                        }
                    }
                }
                default -> work.run();
            }
            return v;
        });
        switch (shape) {
            case "copy", "flaky", "flaky-loop" -> {
                worked.to(output, Produced.with(Serdes.String(), Serdes.String()));
                if (counts != null) {
                    countInto(in, counts);
                }
            }
            case "join" -> {
                KTable<String, String> table =
                        b.table(input + "-table", Consumed.with(Serdes.String(), Serdes.String()));
                KStream<String, String> joined =
                        worked.leftJoin(table, (v, tier) -> v + "," + (tier == null ? "none" : tier));
                joined.to(output, Produced.with(Serdes.String(), Serdes.String()));
                countInto(joined, counts);
            }
            case "window" -> {
                worked.to(output, Produced.with(Serdes.String(), Serdes.String()));
                worked.groupByKey()
                        .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofDays(1000)))
                        .count()
                        .toStream((w, c) -> w.key())
                        .mapValues(c -> Long.toString(c))
                        .to(counts, Produced.with(Serdes.String(), Serdes.String()));
            }
            case "wordcount" -> {
                // Word-count style: split (each record is one word, its key, so that every count is
                // checkable against the input), regroup by the word (a repartition topic), count.
                KStream<String, String> words = worked.flatMapValues(v -> List.of(v));
                words.to(output, Produced.with(Serdes.String(), Serdes.String()));
                // Named, so the harness can wait on <application-id>-words-repartition too.
                words.groupBy((k, v) -> k, Grouped.with("words", Serdes.String(), Serdes.String()))
                        .count()
                        .toStream()
                        .mapValues(c -> Long.toString(c))
                        .to(counts, Produced.with(Serdes.String(), Serdes.String()));
            }
            default ->
                throw new IllegalArgumentException(
                        "unknown shape " + shape + " (copy, join, window, wordcount, fk, flaky, flaky-loop)");
        }
        return b.build();
    }

    private static void foreignKeyJoin(StreamsBuilder b, String input, String output, String counts, Work work) {
        KTable<String, String> products = b.table(input + "-table", Consumed.with(Serdes.String(), Serdes.String()));
        KTable<String, String> joined = b.table(input, Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(
                        v -> {
                            work.run();
                            return v;
                        },
                        Materialized.with(Serdes.String(), Serdes.String()))
                .leftJoin(
                        products,
                        v -> "k" + Math.floorMod(v.hashCode(), FK_KEYS),
                        (v, product) -> v + "," + (product == null ? "none" : product),
                        // Named, so the harness can wait on its internal topics too.
                        TableJoined.as("fk"),
                        Materialized.with(Serdes.String(), Serdes.String()));
        joined.toStream().to(output, Produced.with(Serdes.String(), Serdes.String()));
        if (counts != null) {
            joined.groupBy(
                            (k, v) -> KeyValue.pair(v.substring(v.lastIndexOf(',') + 1), v),
                            Grouped.with(Serdes.String(), Serdes.String()))
                    .count()
                    .toStream()
                    .mapValues(c -> Long.toString(c))
                    .to(counts, Produced.with(Serdes.String(), Serdes.String()));
        }
    }

    private static void countInto(KStream<String, String> stream, String counts) {
        stream.groupByKey()
                .count()
                .toStream()
                .mapValues(c -> Long.toString(c))
                .to(counts, Produced.with(Serdes.String(), Serdes.String()));
    }

    /**
     * Every half second with {@code -Dbench.thread.cpu}: the pieces of work done so far, and the CPU
     * seconds and bytes allocated of the StreamThreads and of streamshard's workers, one line for bench/run.py, which
     * takes the steady part of the run (Linux keeps 15 characters of a thread's name, so /proc
     * cannot tell these threads apart).
     */
    /** The app, for {@link #limit} (set once it is built). */
    static volatile KafkaStreams app;

    /** {@code " limit=N"}: with streamshard.workers=auto, its limit now; else empty. */
    static String limit() {
        KafkaStreams s = app;
        if (s == null) {
            return "";
        }
        for (var e : s.metrics().entrySet()) {
            if (e.getKey().name().equals("workers-limit") && e.getKey().group().equals("streamshard-metrics")) {
                Object v = e.getValue().metricValue();
                return v instanceof Number ? " limit=" + ((Number) v).intValue() : "";
            }
        }
        return "";
    }

    /**
     * {@code BENCH_TRACE=1} in the environment: the line every 100 ms instead of 500, with the
     * process's CPU and GC time and the instance's hand-offs, queued and running records; and the
     * StreamThreads' stacks once whenever no record was handed off for 0.3 s while some had been
     * (what found the first commit draining a new application's backlog).
     */
    static final boolean TRACE = System.getenv("BENCH_TRACE") != null;

    private static double lastHandoffs = -1;
    private static int stalled;

    static String trace() {
        StringBuilder b = new StringBuilder();
        long cpu = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
        long gc = 0;
        for (var g : ManagementFactory.getGarbageCollectorMXBeans()) {
            gc += g.getCollectionTime();
        }
        b.append(String.format(" t=%d cpu=%.2f gcMs=%d", System.currentTimeMillis(), cpu / 1e9, gc));
        double handoffs = 0;
        KafkaStreams s = app;
        if (s != null) {
            for (var e : s.metrics().entrySet()) {
                String n = e.getKey().name();
                if (e.getKey().group().equals("streamshard-metrics")
                        && (n.equals("handoffs-total") || n.equals("in-flight") || n.equals("queued"))) {
                    b.append(' ').append(n).append('=').append(e.getValue().metricValue());
                    if (n.equals("handoffs-total")) {
                        handoffs = ((Number) e.getValue().metricValue()).doubleValue();
                    }
                }
            }
        }
        stalled = handoffs > 0 && handoffs == lastHandoffs ? stalled + 1 : 0;
        lastHandoffs = handoffs;
        if (stalled == 3) {
            for (java.lang.management.ThreadInfo i :
                    ManagementFactory.getThreadMXBean().dumpAllThreads(false, false)) {
                if (i.getThreadName().matches(".*-StreamThread-\\d+")) {
                    b.append("\nno hand-off for 0.3 s: ")
                            .append(i.getThreadName())
                            .append(' ')
                            .append(i.getThreadState());
                    for (StackTraceElement e : i.getStackTrace()) {
                        b.append("\n    at ").append(e);
                    }
                }
            }
        }
        return b.toString();
    }

    static void printThreadCpu() {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        Thread t = new Thread(
                () -> {
                    // The threads by role, found again every 10 s (they start with the app): with
                    // thousands of workers, a stack trace of every thread twice a second (what
                    // Thread.getAllStackTraces takes) cost the app a tenth of its CPU and a
                    // safepoint each time. Virtual workers are not platform threads: not counted.
                    long[][] roles = null;
                    long found = 0;
                    while (true) {
                        if (roles == null || System.nanoTime() - found > 10_000_000_000L) {
                            roles = threadIdsByRole(mx);
                            found = System.nanoTime();
                        }
                        long records = Work.DONE.sum();
                        long[] stream = sums(mx, roles[0]);
                        long[] workers = sums(mx, roles[1]);
                        System.out.printf(
                                "bench thread cpu: records=%d stream=%.4f workers=%.4f streamBytes=%d workersBytes=%d%s%s%n",
                                records,
                                stream[0] / 1e9,
                                workers[0] / 1e9,
                                stream[1],
                                workers[1],
                                limit(),
                                TRACE ? trace() : "");
                        try {
                            Thread.sleep(TRACE ? 100 : 500);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                },
                "bench-thread-cpu");
        t.setDaemon(true);
        t.start();
    }

    /** The ids of the StreamThreads and of the workers, by name, without their stacks. */
    private static long[][] threadIdsByRole(com.sun.management.ThreadMXBean mx) {
        java.util.List<Long> stream = new java.util.ArrayList<>();
        java.util.List<Long> workers = new java.util.ArrayList<>();
        for (java.lang.management.ThreadInfo info : mx.getThreadInfo(mx.getAllThreadIds(), 0)) {
            if (info == null) {
                continue;
            }
            String name = info.getThreadName();
            if (name.contains("-StreamThread-")) {
                stream.add(info.getThreadId());
            } else if (name.contains("-worker-")) {
                workers.add(info.getThreadId());
            }
        }
        return new long[][] {
            stream.stream().mapToLong(Long::longValue).toArray(),
            workers.stream().mapToLong(Long::longValue).toArray()
        };
    }

    /** CPU ns and allocated bytes summed over the threads (ended ones count 0). */
    private static long[] sums(com.sun.management.ThreadMXBean mx, long[] ids) {
        long[] out = new long[2];
        if (ids.length == 0) {
            return out;
        }
        for (long v : mx.getThreadCpuTime(ids)) {
            out[0] += Math.max(0, v);
        }
        for (long v : mx.getThreadAllocatedBytes(ids)) {
            out[1] += Math.max(0, v);
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 9 && args.length != 10) {
            System.err.println("usage: BenchApp <bootstrap> <application-id> <input> <output> <counts|-> <work>"
                    + " <alos|eos> <stream-threads> <streamshard-workers> [copy|join|window]");
            System.exit(2);
        }
        Work work = Work.parse(args[5]);
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(
                StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
                args[6].equals("eos") ? StreamsConfig.EXACTLY_ONCE_V2 : StreamsConfig.AT_LEAST_ONCE);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(args[7]));
        p.put("auto.offset.reset", "earliest");
        String commitMs = System.getProperty("bench.commit.interval.ms", "");
        if (!commitMs.isEmpty()) {
            // Otherwise Kafka Streams' default: 30 s under at-least-once, 100 ms under exactly-once.
            p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Integer.parseInt(commitMs));
        }
        p.put(StreamsConfig.STATE_DIR_CONFIG, System.getProperty("java.io.tmpdir") + "/streamshard-bench-" + args[1]);
        // Read only by the agent; stock Kafka Streams ignores unknown keys.
        p.put("streamshard.workers", args[8]);
        String status = System.getProperty("bench.status.listener", "");
        if (!status.isEmpty()) {
            p.put("streamshard.status.listener", status);
        }
        // Any other setting for an experiment: -Dbench.set.<key>=<value> (Streams or streamshard keys).
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith("bench.set.")) {
                p.put(name.substring("bench.set.".length()), System.getProperty(name));
            }
        }
        String counts = args[4].equals("-") ? null : args[4];
        String shape = args.length > 9 ? args[9] : "copy";
        KafkaStreams streams = new KafkaStreams(topology(shape, args[2], args[3], counts, work), p);
        app = streams;
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            done.countDown();
        }));
        streams.start();
        if (System.getProperty("bench.thread.cpu") != null) {
            printThreadCpu();
        }
        done.await();
    }
}
