package io.streamshard.bench;

import io.streamshard.examples.Work;
import java.io.BufferedReader;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The torture test's app (scripts/torture.sh, bench/torture.py): an ordinary Kafka Streams app run
 * with the agent, three or four of it in one group while faults hit them. Its topology is an
 * enrichment with state:
 *
 * <pre>
 * input ─ mapValues(1–5 ms call, probed) ─ leftJoin(KTable table) ─┬─ to(output)
 *                                                                   ├─ groupByKey().count() ─ to(counts)
 *                                                                   └─ groupByKey().aggregate(Σ seq+1) ─ to(totals)
 * </pre>
 *
 * Values are the load tool's {@code seq,produced_us,pad}; the join appends {@code ,<tier>}, so the
 * output still verifies by (key, seq). The totals are the sum of {@code seq + 1} per key, which the
 * load tool checks exactly under exactly-once.
 *
 * <p>A probe around the slow call and inside the aggregator records a key entered on one thread
 * while another thread still holds it: in this JVM, that is the "key on two threads at once"
 * violation, counted and reported (the run fails on any).
 *
 * <p>Every second it appends one JSON line to its stats file: state, whether it was ever in ERROR,
 * stream threads alive, replaced threads and their exceptions, probe violations, records through
 * the probe, active tasks, heap used after the last GC, and the longest drain seen. On standard
 * input it takes {@code remove-thread} and {@code add-thread} (a thread leaving and joining:
 * its tasks are revoked, handed to the other thread of this instance or to another instance, and
 * later handed back). SIGTERM closes it gracefully.
 *
 * <p>Each task has one standby replica (under the streams protocol a group setting, which it sets
 * through the admin client before it starts): a task that leaves an instance for another one
 * (join-leave, a kill) keeps a standby where it was, and the assignor hands it back there when its
 * new owner leaves, so every run exercises standbys turning active and tasks coming back to an
 * instance that ran them before. Every 100 ms it also reads its active tasks per thread and counts
 * the tasks that left this process and came back, and those that moved between its threads.
 *
 * <pre>
 * TortureApp &lt;bootstrap&gt; &lt;application-id&gt; &lt;topic prefix&gt; &lt;alos|eos&gt; &lt;classic|streams&gt;
 *            &lt;state dir&gt; &lt;stats file&gt; [key=value streams or streamshard settings...]
 * </pre>
 */
public final class TortureApp {
    private TortureApp() {}

    /** Keys held by a thread now, and the violations seen. */
    static final class TwoThreadProbe {
        final Map<String, Thread> holders = new ConcurrentHashMap<>();
        final AtomicLong violations = new AtomicLong();
        final AtomicLong entered = new AtomicLong();
        final List<String> examples = new ArrayList<>();

        void enter(String where, String key) {
            entered.incrementAndGet();
            Thread me = Thread.currentThread();
            Thread other = holders.putIfAbsent(where + "|" + key, me);
            if (other != null && other != me) {
                violations.incrementAndGet();
                synchronized (examples) {
                    if (examples.size() < 5) {
                        examples.add(where + ": key " + key + " on " + me.getName() + " while " + other.getName()
                                + " holds it");
                    }
                }
            }
        }

        void exit(String where, String key) {
            holders.remove(where + "|" + key, Thread.currentThread());
        }
    }

    static long seq(String value) {
        int comma = value.indexOf(',');
        return Long.parseLong(comma < 0 ? value : value.substring(0, comma));
    }

    /** The call's range, ms ({@code -Dtorture.call.ms=LO-HI}; default 1-5). */
    private static final long[] CALL_MS = callRange(System.getProperty("torture.call.ms", "1-5"));

    private static long[] callRange(String lohi) {
        String[] p = lohi.split("-");
        return new long[] {Long.parseLong(p[0].trim()), Long.parseLong(p[1].trim())};
    }

    /** The slow call: LO to HI ms, fixed per (key, seq), so every engine and every replay sleeps the same. */
    static long callMicros(String key, long seq) {
        long h = (key.hashCode() * 0x9E3779B97F4A7C15L) ^ (seq * 0xC2B2AE3D27D4EB4FL);
        h ^= h >>> 29;
        return CALL_MS[0] * 1_000 + Math.floorMod(h, (CALL_MS[1] - CALL_MS[0]) * 1_000 + 1);
    }

    public static Topology topology(String prefix, TwoThreadProbe probe) {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> in = b.stream(prefix + "-input", Consumed.with(Serdes.String(), Serdes.String()));
        KTable<String, String> table = b.table(prefix + "-table", Consumed.with(Serdes.String(), Serdes.String()));
        KStream<String, String> called = in.mapValues((k, v) -> {
            probe.enter("call", k);
            try {
                new Work(Work.Kind.SLEEP, callMicros(k, seq(v))).run();
            } finally {
                probe.exit("call", k);
            }
            return v;
        });
        KStream<String, String> joined =
                called.leftJoin(table, (v, t) -> v + "," + (t == null ? "none" : "t" + (seq(t) % 4)));
        joined.to(prefix + "-output", Produced.with(Serdes.String(), Serdes.String()));
        joined.groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.as("torture-counts"))
                .toStream()
                .mapValues(c -> Long.toString(c))
                .to(prefix + "-counts", Produced.with(Serdes.String(), Serdes.String()));
        joined.groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .aggregate(
                        () -> 0L,
                        (k, v, total) -> {
                            probe.enter("aggregate", k);
                            try {
                                return total + seq(v) + 1;
                            } finally {
                                probe.exit("aggregate", k);
                            }
                        },
                        Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("torture-totals")
                                .withKeySerde(Serdes.String())
                                .withValueSerde(Serdes.Long()))
                .toStream()
                .mapValues(t -> Long.toString(t))
                .to(prefix + "-totals", Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 7) {
            System.err.println("usage: TortureApp <bootstrap> <application-id> <topic prefix> <alos|eos>"
                    + " <classic|streams> <state dir> <stats file> [key=value...]");
            System.exit(2);
        }
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(
                StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
                args[3].equals("eos") ? StreamsConfig.EXACTLY_ONCE_V2 : StreamsConfig.AT_LEAST_ONCE);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
        p.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, 1); // the classic protocol's; see standbys()
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
        p.put("auto.offset.reset", "earliest");
        if (args[4].equals("streams")) {
            p.put("group.protocol", "streams"); // the session timeout is the broker's (tests/broker)
        } else {
            // A killed member leaves the group in seconds, not the default 45 s.
            p.put(StreamsConfig.mainConsumerPrefix("session.timeout.ms"), 6000);
            p.put(StreamsConfig.mainConsumerPrefix("heartbeat.interval.ms"), 1500);
        }
        for (int i = 7; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            p.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        if (args[4].equals("streams")) {
            standbys(args[0], args[1]);
        }
        TwoThreadProbe probe = new TwoThreadProbe();
        KafkaStreams streams = new KafkaStreams(topology(args[2], probe), p);
        AtomicReference<KafkaStreams.State> everError = new AtomicReference<>();
        List<String> uncaught = new ArrayList<>();
        AtomicLong replaced = new AtomicLong();
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.ERROR) {
                everError.set(now);
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            // What a production app does: log it and let Kafka Streams start a new thread.
            replaced.incrementAndGet();
            synchronized (uncaught) {
                if (uncaught.size() < 10) {
                    uncaught.add(describe(e));
                }
            }
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        Stats stats = new Stats(args[6], streams, probe, everError, uncaught, replaced);
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            stats.closeOk = streams.close(Duration.ofSeconds(60)) ? "true" : "false";
                            stats.write(); // the last line: inside the hook, before the JVM halts
                            closed.countDown();
                        },
                        "torture-shutdown"));
        streams.start();
        Thread statsThread = new Thread(stats::loop, "torture-stats");
        statsThread.setDaemon(true);
        statsThread.start();
        Thread control = new Thread(() -> control(streams, stats), "torture-control");
        control.setDaemon(true);
        control.start();
        closed.await();
    }

    /**
     * Under the streams protocol the broker assigns standbys from the group's own setting
     * ({@code streams.num.standby.replicas}), not from the client's: set it to one for this group.
     */
    private static void standbys(String bootstrap, String group) throws Exception {
        // By name: the examples also compile against Kafka 3.9's clients, which have no GROUP type
        // (and no streams protocol, so this never runs there).
        ConfigResource.Type groupType = ConfigResource.Type.valueOf("GROUP");
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.incrementalAlterConfigs(Map.of(
                            new ConfigResource(groupType, group),
                            List.of(new AlterConfigOp(
                                    new ConfigEntry("streams.num.standby.replicas", "1"), AlterConfigOp.OpType.SET))))
                    .all()
                    .get(60, TimeUnit.SECONDS);
        }
    }

    /** Commands on standard input; each result is counted in the stats (a failed one too). */
    private static void control(KafkaStreams streams, Stats stats) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String line; (line = in.readLine()) != null; ) {
                try {
                    switch (line.trim()) {
                        case "remove-thread" -> {
                            var removed = streams.removeStreamThread(Duration.ofSeconds(60));
                            System.err.println("torture: removed " + removed);
                            (removed.isPresent() ? stats.removed : stats.controlFailed).incrementAndGet();
                        }
                        case "add-thread" -> {
                            var added = streams.addStreamThread();
                            System.err.println("torture: added " + added);
                            (added.isPresent() ? stats.added : stats.controlFailed).incrementAndGet();
                        }
                        default -> System.err.println("torture: unknown command " + line);
                    }
                } catch (RuntimeException e) {
                    stats.controlFailed.incrementAndGet();
                    System.err.println("torture: " + line + " failed: " + e);
                }
            }
        } catch (IOException e) {
            System.err.println("torture: control input ended: " + e);
        }
    }

    static String describe(Throwable e) {
        StringBuilder s = new StringBuilder(e.toString());
        for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            s.append(" <- ").append(c);
        }
        return s.toString();
    }

    /** The stats file: one JSON object a line. */
    private static final class Stats {
        private final String path;
        private final KafkaStreams streams;
        private final TwoThreadProbe probe;
        private final AtomicReference<KafkaStreams.State> everError;
        private final List<String> uncaught;
        private final AtomicLong replaced;
        private final long started = System.currentTimeMillis();
        private double drainMaxNs;
        final AtomicLong removed = new AtomicLong();
        final AtomicLong added = new AtomicLong();
        final AtomicLong controlFailed = new AtomicLong();
        /** "true" or "false" once close() returned (in the shutdown hook), else null. */
        volatile String closeOk;

        private double maxTaskSlots;
        /** The most slots each task held at a reading (queued + running). */
        private final Map<String, Double> slotsByTask = new TreeMap<>();
        /** Active tasks at the last reading, those gone since, and the thread each ran on last. */
        private Set<String> activeBefore = new TreeSet<>();

        private final Set<String> gone = new TreeSet<>();
        private final Map<String, String> lastThread = new HashMap<>();
        private long tasksReturned;
        private long tasksMoved;
        private int standbysMax;
        private final List<String> returnExamples = new ArrayList<>();

        Stats(
                String path,
                KafkaStreams streams,
                TwoThreadProbe probe,
                AtomicReference<KafkaStreams.State> everError,
                List<String> uncaught,
                AtomicLong replaced) {
            this.path = path;
            this.streams = streams;
            this.probe = probe;
            this.everError = everError;
            this.uncaught = uncaught;
            this.replaced = replaced;
        }

        void loop() {
            for (int i = 1; ; i++) {
                try {
                    Thread.sleep(100);
                    sample();
                    if (i % 10 == 0) {
                        write();
                    }
                } catch (InterruptedException e) {
                    return;
                } catch (RuntimeException e) {
                    System.err.println("torture: stats failed: " + e);
                }
            }
        }

        /** Reads the task metrics: the longest drain, and the most slots each task holds (every 100 ms). */
        synchronized void sample() {
            Map<String, Double> slots = new HashMap<>();
            for (Map.Entry<MetricName, ? extends Metric> m : streams.metrics().entrySet()) {
                MetricName n = m.getKey();
                if (!n.group().equals("streamshard-task-metrics")
                        || !(m.getValue().metricValue() instanceof Double d)
                        || d.isNaN()) {
                    continue;
                }
                switch (n.name()) {
                    case "drain-time-max-ns" -> drainMaxNs = Math.max(drainMaxNs, d);
                    case "queued", "in-flight" -> slots.merge(n.tags().get("task-id"), d, Double::sum);
                    default -> {}
                }
            }
            for (Map.Entry<String, Double> taken : slots.entrySet()) {
                maxTaskSlots = Math.max(maxTaskSlots, taken.getValue());
                slotsByTask.merge(taken.getKey(), taken.getValue(), Math::max);
            }
            trackTasks();
        }

        /**
         * Counts the tasks that left this process and came back (a revoke, or a loss, then an
         * assignment to it again), and those that went from one of its threads to another.
         */
        private void trackTasks() {
            Set<String> active = new TreeSet<>();
            int standbys = 0;
            try {
                for (ThreadMetadata t : streams.metadataForLocalThreads()) {
                    String thread = t.threadName().replaceAll(".*-StreamThread-", "StreamThread-");
                    standbys += t.standbyTasks().size();
                    for (TaskMetadata task : t.activeTasks()) {
                        String id = task.taskId().toString();
                        active.add(id);
                        String before = lastThread.put(id, thread);
                        // A move only while the task stayed in this process; a return is counted below.
                        if (activeBefore.contains(id) && before != null && !before.equals(thread)) {
                            tasksMoved++;
                            example("task " + id + " moved from " + before + " to " + thread);
                        }
                    }
                }
            } catch (RuntimeException e) {
                return; // not running: no reading
            }
            standbysMax = Math.max(standbysMax, standbys);
            for (String id : active) {
                if (gone.remove(id)) {
                    tasksReturned++;
                    example("task " + id + " revoked and handed back");
                }
            }
            for (String id : activeBefore) {
                if (!active.contains(id)) {
                    gone.add(id);
                }
            }
            activeBefore = active;
        }

        private void example(String what) {
            if (returnExamples.size() < 5) {
                returnExamples.add((System.currentTimeMillis() - started) / 1000 + " s: " + what);
            }
        }

        synchronized void write() {
            TreeSet<String> tasks = new TreeSet<>();
            TreeSet<String> threadTasks = new TreeSet<>();
            int threads = 0;
            try {
                for (ThreadMetadata t : streams.metadataForLocalThreads()) {
                    threads++;
                    String thread = t.threadName().replaceAll(".*-StreamThread-", "StreamThread-");
                    for (TaskMetadata task : t.activeTasks()) {
                        tasks.add(task.taskId().toString());
                        threadTasks.add(thread + ":" + task.taskId());
                    }
                }
            } catch (RuntimeException e) {
                // Not running (closing, or not started): no threads, no tasks.
            }
            sample();
            long heapUsed = 0;
            Set<String> heapPools = new HashSet<>();
            for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
                if (pool.getType() == MemoryType.HEAP) {
                    heapPools.add(pool.getName());
                    heapUsed += pool.getUsage().getUsed();
                }
            }
            // The heap after the latest collection, young or old (a pool's own collection usage is
            // updated only by collections of that pool: G1's old generation rarely).
            long heapAfterGc = 0;
            long latest = -1;
            for (java.lang.management.GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
                if (gc instanceof com.sun.management.GarbageCollectorMXBean sun
                        && sun.getLastGcInfo() != null
                        && sun.getLastGcInfo().getEndTime() > latest) {
                    latest = sun.getLastGcInfo().getEndTime();
                    heapAfterGc = 0;
                    for (Map.Entry<String, MemoryUsage> pool :
                            sun.getLastGcInfo().getMemoryUsageAfterGc().entrySet()) {
                        if (heapPools.contains(pool.getKey())) {
                            heapAfterGc += pool.getValue().getUsed();
                        }
                    }
                }
            }
            List<String> errors;
            synchronized (uncaught) {
                errors = new ArrayList<>(uncaught);
            }
            List<String> examples;
            synchronized (probe.examples) {
                examples = new ArrayList<>(probe.examples);
            }
            String line = String.format(
                    Locale.ROOT,
                    "{\"t_ms\":%d,\"uptime_ms\":%d,\"state\":\"%s\",\"ever_error\":%b,"
                            + "\"threads\":%d,\"replaced\":%d,\"uncaught\":%s,\"probe_entered\":%d,\"probe_violations\":%d,"
                            + "\"probe_examples\":%s,\"tasks\":%s,\"thread_tasks\":%s,\"heap_after_gc\":%d,\"heap_used\":%d,"
                            + "\"drain_max_ns\":%.0f,\"max_task_inflight\":%.0f,\"task_slots_max\":{%s},"
                            + "\"threads_removed\":%d,\"threads_added\":%d,\"control_failed\":%d,\"close_ok\":%s,"
                            + "\"tasks_returned\":%d,\"tasks_moved\":%d,\"return_examples\":%s,\"standbys_max\":%d}",
                    System.currentTimeMillis(),
                    System.currentTimeMillis() - started,
                    streams.state(),
                    everError.get() != null,
                    threads,
                    replaced.get(),
                    strings(errors),
                    probe.entered.get(),
                    probe.violations.get(),
                    strings(examples),
                    strings(new ArrayList<>(tasks)),
                    strings(new ArrayList<>(threadTasks)),
                    heapAfterGc,
                    heapUsed,
                    drainMaxNs,
                    maxTaskSlots,
                    slotsJson(),
                    removed.get(),
                    added.get(),
                    controlFailed.get(),
                    closeOk == null ? "null" : closeOk,
                    tasksReturned,
                    tasksMoved,
                    strings(returnExamples),
                    standbysMax);
            try (PrintWriter w = new PrintWriter(new FileWriter(path, StandardCharsets.UTF_8, true))) {
                w.println(line);
            } catch (IOException e) {
                System.err.println("torture: cannot write " + path + ": " + e);
            }
        }

        private String slotsJson() {
            StringBuilder s = new StringBuilder();
            for (Map.Entry<String, Double> e : slotsByTask.entrySet()) {
                s.append(s.length() == 0 ? "" : ",")
                        .append('"')
                        .append(e.getKey())
                        .append("\":")
                        .append(e.getValue().longValue());
            }
            return s.toString();
        }

        private static String strings(List<String> items) {
            StringBuilder s = new StringBuilder("[");
            for (String item : items) {
                if (s.length() > 1) {
                    s.append(',');
                }
                s.append('"');
                for (char c : item.toCharArray()) {
                    switch (c) {
                        case '"' -> s.append("\\\"");
                        case '\\' -> s.append("\\\\");
                        default -> s.append(c < 0x20 ? ' ' : c);
                    }
                }
                s.append('"');
            }
            return s.append(']').toString();
        }
    }
}
