package org.apache.kafka.streams.processor.internals;

import io.streamshard.agent.AgentState;
import io.streamshard.classify.Classification;
import io.streamshard.config.StreamShardConfig;
import io.streamshard.metrics.StreamShardMetrics;
import io.streamshard.runtime.InlinePolicy;
import io.streamshard.runtime.RecordTrace;
import io.streamshard.runtime.ShardExecutor;
import io.streamshard.runtime.WorkerThreads;
import io.streamshard.scheduler.CloseMode;
import io.streamshard.scheduler.NativeLibraryException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.internals.StreamsConfigUtils;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.TaskId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The registry: one {@link Instance} per {@code KafkaStreams} (its settings and worker pool), one
 * {@link ShardedTask} per {@code StreamTask} that runs through streamshard. Instance and task
 * lifecycle run here, on cold paths; the record path is in {@link ShardedTask}.
 */
public final class StreamShardInstances {
    static final Logger LOG = LoggerFactory.getLogger("io.streamshard");

    private StreamShardInstances() {}

    /** Per KafkaStreams instance, keyed by its metrics object (which every StreamTask holds too). */
    static final class Instance {
        final KafkaStreams streams;
        final StreamShardConfig config;
        final ShardExecutor executor;
        /** {@code default.key.serde}'s class name, or null. */
        final String defaultKeySerde;
        /** Per task id, in creation order. */
        final Map<String, Classification> decisions = Collections.synchronizedMap(new LinkedHashMap<>());
        /** Sub-topologies whose classification was logged at INFO already. */
        final Set<Integer> logged = ConcurrentHashMap.newKeySet();
        /** Per sub-topology, what its tasks' inline policies share. */
        private final Map<Integer, InlinePolicy.Siblings> siblings = new ConcurrentHashMap<>();

        /** What the tasks of {@code task}'s sub-topology share for the inline decision. */
        InlinePolicy.Siblings siblings(TaskId task) {
            return siblings.computeIfAbsent(task.subtopology(), s -> new InlinePolicy.Siblings());
        }

        /** streamshard's metrics in the instance's registry. */
        final StreamShardMetrics metrics;
        /** Whether the instance runs exactly-once (what stock's StreamTask.process asks of a timeout). */
        final boolean eos;
        /** The tracing agent's context of each record, across the hand-off; null: no agent. */
        final RecordTrace trace = RecordTrace.of(StreamTask.class.getClassLoader());
        /** Per sub-topology, its graph for the status listener (only while one is on). */
        final Map<Integer, String> graphs = Collections.synchronizedMap(new TreeMap<>());
        /** The status listener's feed, or null when it is off. */
        volatile StreamShardStatus status;

        Instance(
                KafkaStreams streams,
                StreamShardConfig config,
                ShardExecutor executor,
                String defaultKeySerde,
                StreamShardMetrics metrics,
                boolean eos) {
            this.eos = eos;
            this.streams = streams;
            this.config = config;
            this.executor = executor;
            this.defaultKeySerde = defaultKeySerde;
            this.metrics = metrics;
        }
    }

    /**
     * What the agent knows of the JVM's instances and tasks, in one object: the registry's only
     * static is this reference (the advice, inlined into Kafka's classes, reaches it from there).
     */
    static final class Registry {
        /** Per KafkaStreams instance, keyed by its metrics object (which every StreamTask holds too). */
        final Map<Object, Instance> byMetrics = new ConcurrentHashMap<>();

        final Map<KafkaStreams, Instance> byStreams = new ConcurrentHashMap<>();
        /** The tasks streamshard runs. */
        final Map<StreamTask, ShardedTask> tasks = new ConcurrentHashMap<>();
        /** Tasks closed dirty, until Kafka Streams revives them in place (or drops them): weakly held. */
        final Map<StreamTask, ShardedTask> dormant = Collections.synchronizedMap(new WeakHashMap<>());
        /** Per producer, the lock that serializes beginning a transaction; weakly held. */
        final Map<Object, ReentrantLock> beginLocks = Collections.synchronizedMap(new WeakHashMap<>());
        /** Per StreamThread: how deep it is in a dirty close of tasks (before Kafka Streams 4.1). */
        final ThreadLocal<int[]> dirty = ThreadLocal.withInitial(() -> new int[1]);
        /** Per StreamThread: whether it is in a regular commit (TaskExecutor's), not a revocation's or a close's. */
        final ThreadLocal<boolean[]> regularCommit = ThreadLocal.withInitial(() -> new boolean[1]);
    }

    static final Registry REGISTRY = new Registry();

    /** TaskManager's dirty-close methods, entry and exit (before 4.1, where prepareCommit has no flag). */
    public static void dirtyClose(boolean entering) {
        REGISTRY.dirty.get()[0] += entering ? 1 : -1;
    }

    /** Whether this thread is closing tasks dirty, so a prepareCommit() now is no commit. */
    public static boolean closingDirty() {
        return REGISTRY.dirty.get()[0] > 0;
    }

    /** TaskExecutor.commitTasksAndMaybeUpdateCommittableOffsets, entry and exit: a regular commit. */
    public static void regularCommit(boolean entering) {
        REGISTRY.regularCommit.get()[0] = entering;
    }

    /**
     * Whether this thread's prepareCommit and postCommit calls now are those of a regular commit
     * (every commit.interval.ms, a requested commit, or the other tasks' commit in a corruption),
     * which may cover a task's finished prefix only: revocations and closes call them on their
     * own, and a task suspended or closed after its commit must have no record left.
     */
    static boolean inRegularCommit() {
        return REGISTRY.regularCommit.get()[0];
    }

    /** The task's streamshard state, or null if it runs stock. */
    public static ShardedTask task(StreamTask task) {
        return REGISTRY.tasks.get(task);
    }

    /** Drains the task (both regions) if streamshard runs it: suspend, punctuation. */
    public static void drain(StreamTask task) {
        ShardedTask s = REGISTRY.tasks.get(task);
        if (s != null) {
            s.drain();
        }
    }

    /**
     * StreamTask.maybePunctuateSystemTime for streamshard's tasks (null: not one, run the stock
     * body): one clock reading decides, drains and punctuates.
     */
    public static Boolean punctuateSystemTime(StreamTask task, Time time, PunctuationQueue queue) {
        ShardedTask s = REGISTRY.tasks.get(task);
        if (s == null) {
            return null;
        }
        long now = time.milliseconds();
        if (queue.canPunctuate(now)) {
            s.drain();
        }
        return queue.maybePunctuate(now, PunctuationType.WALL_CLOCK_TIME, task);
    }

    // ---------------------------------------------------------------- instances

    /** KafkaStreams constructor exit. */
    public static void instanceCreated(
            KafkaStreams streams, StreamsConfig config, Object metrics, String clientId, Metrics registry) {
        StreamShardConfig cfg = StreamShardConfig.from(config.originals());
        if (!cfg.enabled()) {
            LOG.info("streamshard: disabled by {}=false; {} runs stock", StreamShardConfig.ENABLED, clientId);
            return;
        }
        if (AgentState.failure() != null) {
            LOG.error("streamshard: instrumentation failed ({}); {} runs stock", AgentState.failure(), clientId);
            return;
        }
        String why = instanceStockReason(config.originals());
        if (why != null) {
            LOG.warn("streamshard: {}; {} runs stock (serial)", why, clientId);
            return;
        }
        ShardExecutor executor;
        try {
            executor = ShardExecutor.create(cfg, "streamshard");
        } catch (NativeLibraryException e) {
            // The jar has this platform's library but it does not load here (a C library too old,
            // a noexec temporary directory): this instance runs stock, as if disabled.
            LOG.error("{}; {} runs stock (serial)", e.getMessage(), clientId);
            return;
        }
        Object keySerde = config.originals().get(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG);
        String defaultKeySerde = keySerde instanceof Class<?>
                ? ((Class<?>) keySerde).getName()
                : keySerde == null ? null : keySerde.toString().trim();
        Instance instance = new Instance(
                streams,
                cfg,
                executor,
                defaultKeySerde,
                new StreamShardMetrics(registry, clientId, executor, cfg.workers()),
                StreamsConfigUtils.eosEnabled(config));
        REGISTRY.byMetrics.put(metrics, instance);
        REGISTRY.byStreams.put(streams, instance);
        if (cfg.virtualWorkers() && !WorkerThreads.virtualAvailable()) {
            LOG.warn(
                    "streamshard: {}=virtual needs Java 21 or later (this JVM: {}); the workers of {} are platform threads",
                    StreamShardConfig.WORKER_THREADS,
                    System.getProperty("java.specification.version"),
                    clientId);
        }
        if (WorkerThreads.of(cfg) == WorkerThreads.PLATFORM
                && !cfg.workersAuto()
                && cfg.workers() >= 1024
                && WorkerThreads.virtualAvailable()) {
            LOG.info(
                    "streamshard: {} platform workers; with this many, virtual ones ({}=virtual) need a fraction "
                            + "of the CPU and memory (docs/benchmarks.md, \"Slow calls\")",
                    cfg.workers(),
                    StreamShardConfig.WORKER_THREADS);
        }
        LOG.info(
                "streamshard: {}{} {} workers for {}",
                cfg.workersAuto() ? StreamShardConfig.WORKERS + "=" + StreamShardConfig.AUTO + ", up to " : "",
                cfg.workers(),
                WorkerThreads.of(cfg).name().toLowerCase(Locale.ROOT),
                clientId);
        instance.status = StreamShardStatus.start(
                instance, clientId, String.valueOf(config.originals().get(StreamsConfig.APPLICATION_ID_CONFIG)));
    }

    /** The tasks streamshard runs for {@code instance}. */
    static List<ShardedTask> tasksOf(Instance instance) {
        List<ShardedTask> out = new ArrayList<>();
        for (ShardedTask t : REGISTRY.tasks.values()) {
            if (t.instance == instance) {
                out.add(t);
            }
        }
        return out;
    }

    /** host:port of the instance's status listener, or null when it has none. */
    public static String statusAddress(KafkaStreams streams) {
        Instance instance = REGISTRY.byStreams.get(streams);
        StreamShardStatus s = instance == null ? null : instance.status;
        return s == null ? null : s.address();
    }

    /** Why an instance with these settings runs stock, or null. */
    static String instanceStockReason(Map<String, Object> o) {
        if (on(o.get("__processing.threads.enabled__"))) {
            return "Kafka Streams processing threads (__processing.threads.enabled__) are on";
        }
        Object guarantee = o.get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG);
        if (guarantee != null && "exactly_once".equals(guarantee.toString().trim())) {
            // Kafka Streams 3.x only: one producer per task; streamshard is verified with exactly_once_v2.
            return "processing.guarantee=exactly_once (the deprecated per-task producers of 3.x) is not verified "
                    + "with streamshard; exactly_once_v2 is";
        }
        if (on(o.get(TRANSACTIONAL_STATE_STORES))) {
            // 4.4: every store buffers its writes per store, and the thread that opened a store reads its
            // buffer without the lock other threads take.
            return TRANSACTIONAL_STATE_STORES + "=true (KIP-892 transaction buffers) is not verified with streamshard";
        }
        return null;
    }

    /** Kafka Streams 4.4's KIP-892 switch (by name: the constant does not exist before 4.4). */
    static final String TRANSACTIONAL_STATE_STORES = "enable.transactional.statestores";

    private static boolean on(Object v) {
        return v != null && Boolean.parseBoolean(v.toString().trim());
    }

    /** KafkaStreams.setState entry: the final states stop the instance's workers (once). */
    public static void instanceStopping(KafkaStreams streams, KafkaStreams.State state) {
        if (state != KafkaStreams.State.NOT_RUNNING && state != KafkaStreams.State.ERROR) {
            return;
        }
        Instance instance = REGISTRY.byStreams.remove(streams);
        if (instance == null) {
            return;
        }
        REGISTRY.byMetrics.values().remove(instance);
        REGISTRY.tasks.values().removeIf(t -> t.instance == instance);
        instance.metrics.close();
        if (instance.status != null) {
            instance.status.stop();
        }
        instance.executor.close();
        LOG.info("streamshard: workers stopped");
    }

    /** Per task id: {@code parallel}, {@code parallel, serial region: A, B} or {@code serial: why}. */
    public static Map<String, String> explain(KafkaStreams streams) {
        Map<String, String> out = new LinkedHashMap<>();
        Instance instance = REGISTRY.byStreams.get(streams);
        if (instance != null) {
            synchronized (instance.decisions) {
                instance.decisions.forEach((task, c) -> out.put(task, c.summary()));
            }
        }
        return out;
    }

    /** Per given streamshard.* key: its value and where it came from; empty if streamshard does not run it. */
    public static Map<String, String> settings(KafkaStreams streams) {
        Map<String, String> out = new LinkedHashMap<>();
        Instance instance = REGISTRY.byStreams.get(streams);
        if (instance != null) {
            SortedMap<String, String> shown = instance.config.shown();
            instance.config.sources().forEach((k, source) -> out.put(k, shown.get(k) + " (" + source + ")"));
        }
        return out;
    }

    /** Per task id, per node: {@code parallel} or {@code serial region: why}. */
    public static Map<String, Map<String, String>> explainNodes(KafkaStreams streams) {
        Map<String, Map<String, String>> out = new LinkedHashMap<>();
        Instance instance = REGISTRY.byStreams.get(streams);
        if (instance != null) {
            synchronized (instance.decisions) {
                instance.decisions.forEach((task, c) -> {
                    Map<String, String> nodes = new LinkedHashMap<>();
                    c.nodes().forEach((n, d) -> nodes.put(n, d.toString()));
                    out.put(task, nodes);
                });
            }
        }
        return out;
    }

    /** Whether streamshard runs this instance (agent installed, enabled, supported settings). */
    public static boolean active(KafkaStreams streams) {
        return REGISTRY.byStreams.containsKey(streams);
    }

    /**
     * InternalTopologyBuilder.rewriteTopology exit: window and session stores lose their caching
     * layer (their nodes run in the serial region, and the layer's evictions would forward other
     * keys' records there); key-value stores keep it unless {@code streamshard.caching=disable}
     * ({@link StreamShardStores#writeThrough}).
     */
    public static void disableCaching(
            InternalTopologyBuilder builder, StreamsConfig config, Map<String, StoreFactory> factories) {
        StreamShardConfig cfg = StreamShardConfig.from(config.originals());
        if (!cfg.enabled() || instanceStockReason(config.originals()) != null || builder.topologyName() != null) {
            return; // a named topology's tasks run stock (NAMED_TOPOLOGY), with stock's caching
        }
        boolean keep = cfg.keepCaching();
        factories.replaceAll((name, f) -> keep && !f.isWindowStore() ? f : f.withCachingDisabled());
    }

    /** Takes (and returns, locked) the lock that serializes beginning a transaction on a producer. */
    public static ReentrantLock lockBegin(Object producer) {
        ReentrantLock lock = REGISTRY.beginLocks.computeIfAbsent(producer, k -> new ReentrantLock());
        lock.lock();
        return lock;
    }

    // ---------------------------------------------------------------- tasks

    /**
     * The decision for a task of a named topology (Kafka Streams' internal, experimental
     * NamedTopology API, {@code KafkaStreamsNamedTopologyWrapper}): the scheduler, the metrics and
     * the status listener tell an instance's tasks apart by sub-topology and partition, which two
     * named topologies share, so such tasks run stock. Found by Kafka's PauseResumeIntegrationTest.
     */
    static final Classification NAMED_TOPOLOGY = new Classification(
            Map.of(),
            List.of(),
            Classification.Mode.STOCK,
            "a task of a named topology (Kafka Streams' internal NamedTopology API) runs stock");

    /** StreamTask constructor exit: classify the task's nodes and remember the decision. */
    public static void taskCreated(StreamTask task, Object metrics, Sensor processLatency) {
        Instance instance = REGISTRY.byMetrics.get(metrics);
        if (instance == null || AgentState.failure() != null) {
            return;
        }
        boolean named = task.id().topologyName() != null;
        Classification c = named
                ? NAMED_TOPOLOGY
                : TopologyInspector.classify(
                        task.topology,
                        instance.config.parallelProcessors(),
                        instance.config.serialProcessors(),
                        instance.defaultKeySerde);
        String id = task.id().toString();
        instance.decisions.put(id, c);
        if (instance.status != null && !named) {
            instance.graphs.putIfAbsent(
                    task.id().subtopology(),
                    TopologyInspector.graphJson(task.id().subtopology(), task.topology, c));
        }
        if (instance.logged.add(task.id().subtopology())) {
            LOG.info(
                    "streamshard: task {} (and the other tasks of sub-topology {}): {}; {}",
                    id,
                    task.id().subtopology(),
                    c.summary(),
                    String.join("; ", c.lines()));
        } else {
            LOG.debug("streamshard: task {}: {}", id, c.summary());
        }
        if (c.mode() != Classification.Mode.STOCK) {
            ShardedTask s = new ShardedTask(instance, task, c, processLatency);
            REGISTRY.tasks.put(task, s);
            instance.metrics.addTask(s, Thread.currentThread().getName(), id);
        }
    }

    /**
     * StreamTask.closeClean / prepareRecycle ({@link CloseMode#DRAIN}) or closeDirty ({@link
     * CloseMode#DROP_QUEUED}) entry: the task leaves the scheduler.
     */
    public static void taskClosing(StreamTask task, CloseMode mode) {
        ShardedTask s = REGISTRY.tasks.remove(task);
        if (s != null) {
            s.instance.metrics.removeTask(s);
            s.close(mode);
            if (mode == CloseMode.DROP_QUEUED) {
                // Kafka Streams may revive this very object (task corruption): it then runs parallel
                // again, from a fresh scheduler registration. Weakly held, so a task dropped for good
                // is not kept.
                REGISTRY.dormant.put(task, s);
            }
        }
    }

    /** AbstractTask.revive exit: a task closed dirty is back (CREATED); it runs with streamshard again. */
    public static void taskRevived(Object task) {
        if (!(task instanceof StreamTask)) {
            return; // a standby task
        }
        ShardedTask s = REGISTRY.dormant.remove(task);
        if (s != null && REGISTRY.byStreams.containsValue(s.instance) && AgentState.failure() == null) {
            REGISTRY.tasks.put((StreamTask) task, s);
            s.instance.metrics.addTask(
                    s, Thread.currentThread().getName(), s.task.id().toString());
            LOG.info("streamshard: task {} revived after a dirty close; it runs with streamshard again", s.task.id());
        }
    }
}
