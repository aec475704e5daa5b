package org.apache.kafka.streams.processor.internals;

import io.streamshard.agent.AgentState;
import io.streamshard.config.StreamShardConfig;
import io.streamshard.runtime.ShardExecutor;
import io.streamshard.runtime.ShardTaskFailedException;
import java.lang.reflect.Field;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.internals.WrappedStateStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the agent's advice calls: one {@link Instance} per {@code KafkaStreams} (its worker pool),
 * one {@link TaskState} per {@code StreamTask} (its classification and scheduler task). Runs on
 * StreamThreads except where a method says otherwise.
 */
public final class StreamShardRuntime {
    private static final Logger LOG = LoggerFactory.getLogger("io.streamshard");

    private StreamShardRuntime() {}

    /** Per KafkaStreams instance, keyed by its metrics object (which every StreamTask holds too). */
    public static final class Instance {
        final KafkaStreams streams;
        final StreamShardConfig config;
        final ShardExecutor executor;
        final Map<String, String> decisions = new ConcurrentHashMap<>();

        Instance(KafkaStreams streams, StreamShardConfig config, ShardExecutor executor) {
            this.streams = streams;
            this.config = config;
            this.executor = executor;
        }
    }

    /** Per StreamTask. */
    static final class TaskState {
        final Instance instance;
        final StreamTask task;
        final Map<TopicPartition, Integer> partitions = new ConcurrentHashMap<>();
        volatile String serialReason;
        ShardExecutor.ShardTask shard;
        /** Records run on the StreamThread (cheap records: see StreamShardConfig.INLINE_BELOW_US). */
        boolean inline;
        /** Moving average of the per-record run time, ns (-1: none yet); updated racily by workers. */
        volatile long avgNanos = -1;
        /** Records timed since the last switch. */
        volatile int timed;

        TaskState(Instance instance, StreamTask task, String serialReason) {
            this.instance = instance;
            this.task = task;
            this.serialReason = serialReason;
        }

        void timed(long nanos) {
            long a = avgNanos;
            avgNanos = a < 0 ? nanos : a + ((nanos - a) >> 4);
            timed++;
        }

        ShardExecutor.ShardTask shard() {
            if (shard == null) {
                shard = instance.executor.register(task.id().subtopology(), task.id().partition(),
                        instance.config.unorderedNullKeys());
            }
            return shard;
        }
    }

    private static final Map<Object, Instance> INSTANCES = new ConcurrentHashMap<>();
    private static final Map<KafkaStreams, Instance> BY_STREAMS = new ConcurrentHashMap<>();
    private static final Map<StreamTask, TaskState> TASKS = new ConcurrentHashMap<>();

    // ---------------------------------------------------------------- instance lifecycle

    /** KafkaStreams constructor exit. */
    public static void instanceCreated(KafkaStreams streams, StreamsConfig config, Object metrics, String clientId) {
        StreamShardConfig cfg = StreamShardConfig.from(config.originals());
        if (!cfg.enabled()) {
            LOG.info("streamshard: disabled by {}=false; {} runs stock", StreamShardConfig.ENABLED, clientId);
            return;
        }
        if (AgentState.failure() != null) {
            LOG.error("streamshard: instrumentation failed ({}); {} runs stock", AgentState.failure(), clientId);
            return;
        }
        String why = instanceSerialReason(config);
        if (why != null) {
            LOG.warn("streamshard: {}; {} runs stock (serial)", why, clientId);
            return;
        }
        ShardExecutor executor = ShardExecutor.create(cfg, "streamshard");
        Instance instance = new Instance(streams, cfg, executor);
        INSTANCES.put(metrics, instance);
        BY_STREAMS.put(streams, instance);
        LOG.info("streamshard: {} workers for {}", cfg.workers(), clientId);
    }

    private static String instanceSerialReason(StreamsConfig config) {
        Object threads = config.originals().get("__processing.threads.enabled__");
        if (threads != null && Boolean.parseBoolean(threads.toString())) {
            return "Kafka Streams processing threads (__processing.threads.enabled__) are on";
        }
        return null;
    }

    /** KafkaStreams.setState entry: the final states stop the instance's workers (once). */
    public static void instanceStopping(KafkaStreams streams, KafkaStreams.State state) {
        if (state != KafkaStreams.State.NOT_RUNNING && state != KafkaStreams.State.ERROR) {
            return;
        }
        Instance instance = BY_STREAMS.remove(streams);
        if (instance == null) {
            return;
        }
        INSTANCES.values().remove(instance);
        TASKS.values().removeIf(t -> t.instance == instance);
        instance.executor.close();
        LOG.info("streamshard: workers stopped");
    }

    /** Classification per task id of an instance: "parallel" or "serial: reason". */
    public static Map<String, String> explain(KafkaStreams streams) {
        Instance instance = BY_STREAMS.get(streams);
        return instance == null ? Map.of() : new LinkedHashMap<>(instance.decisions);
    }

    /** Whether streamshard runs this instance (agent installed, enabled, supported settings). */
    public static boolean active(KafkaStreams streams) {
        return BY_STREAMS.containsKey(streams);
    }

    /** InternalTopologyBuilder.rewriteTopology exit: no caching layer on the parallel path. */
    public static void disableCaching(StreamsConfig config, Map<String, StoreFactory> factories) {
        StreamShardConfig cfg = StreamShardConfig.from(config.originals());
        if (!cfg.enabled() || instanceSerialReason(config) != null) {
            return;
        }
        factories.replaceAll((name, f) -> f.withCachingDisabled());
    }

    private static final Map<Object, java.util.concurrent.locks.ReentrantLock> BEGIN_LOCKS =
            java.util.Collections.synchronizedMap(new java.util.WeakHashMap<>());

    /** Takes (and returns, locked) the lock that serializes beginning a transaction on a producer. */
    public static java.util.concurrent.locks.ReentrantLock lockBegin(Object producer) {
        java.util.concurrent.locks.ReentrantLock lock =
                BEGIN_LOCKS.computeIfAbsent(producer, k -> new java.util.concurrent.locks.ReentrantLock());
        lock.lock();
        return lock;
    }

    // ---------------------------------------------------------------- task lifecycle

    /** StreamTask constructor exit: classify the task and remember the decision. */
    public static void taskCreated(StreamTask task, Object metrics) {
        Instance instance = INSTANCES.get(metrics);
        if (instance == null || AgentState.failure() != null) {
            return;
        }
        String reason = classify(task, instance.config.parallelProcessors());
        TaskState state = new TaskState(instance, task, reason);
        TASKS.put(task, state);
        String id = task.id().toString();
        instance.decisions.put(id, reason == null ? "parallel" : "serial: " + reason);
        if (reason == null) {
            LOG.info("streamshard: task {} runs parallel", id);
        } else {
            LOG.info("streamshard: task {} stays serial: {}", id, reason);
        }
    }

    private static final Set<String> SAFE_DSL = Set.of(
            "KStreamFilter", "KStreamMapValues", "KStreamMap", "KStreamFlatMap", "KStreamFlatMapValues",
            "KStreamPeek", "ForeachProcessor", "KStreamPrint", "KStreamBranch", "PassThrough",
            "KStreamAggregate", "KStreamReduce", "KTableSource", "KTableFilter", "KTableMapValues");

    /** Null if the task is parallel-safe, else why not. */
    static String classify(StreamTask task, List<String> optedIn) {
        // Stores first: their reason is the clearer one (a windowed aggregate's store says why).
        for (StateStore store : task.topology.stateStores()) {
            String why = storeSerialReason(store);
            if (why != null) {
                return why;
            }
        }
        for (ProcessorNode<?, ?, ?, ?> node : task.topology.processors()) {
            if (node instanceof SourceNode || node instanceof SinkNode) {
                continue;
            }
            Object processor = processorOf(node);
            if (processor == null) {
                return "node " + node.name() + " has no processor to inspect";
            }
            Class<?> c = processor.getClass();
            String outer = c.getName();
            int dollar = outer.indexOf('$');
            if (dollar > 0) {
                outer = outer.substring(0, dollar);
            }
            boolean dsl = outer.startsWith("org.apache.kafka.streams.kstream.internals.")
                    && SAFE_DSL.contains(outer.substring(outer.lastIndexOf('.') + 1));
            if (!dsl && !optedIn.contains(node.name())) {
                return "processor " + node.name() + " (" + c.getName() + ") is not known to be parallel-safe"
                        + (outer.startsWith("org.apache.kafka.") ? ""
                                : "; list it in " + StreamShardConfig.PARALLEL_PROCESSORS
                                        + " if it is thread-safe and writes state only under the record's key");
            }
        }
        return null;
    }

    private static String storeSerialReason(StateStore store) {
        StateStore layer = store;
        while (true) {
            if (layer instanceof WindowStore || layer instanceof SessionStore) {
                return "store " + store.name() + " is a window or session store";
            }
            if (layer instanceof VersionedKeyValueStore) {
                return "store " + store.name() + " is a versioned store";
            }
            if (layer.getClass().getSimpleName().startsWith("Caching")) {
                return "store " + store.name() + " has a caching layer";
            }
            if (layer instanceof WrappedStateStore<?, ?, ?> w) {
                layer = w.wrapped();
            } else {
                return null;
            }
        }
    }

    private static Object processorOf(ProcessorNode<?, ?, ?, ?> node) {
        for (String name : new String[] {"processor", "fixedKeyProcessor"}) {
            try {
                Field f = ProcessorNode.class.getDeclaredField(name);
                f.setAccessible(true);
                Object p = f.get(node);
                if (p != null) {
                    return p;
                }
            } catch (ReflectiveOperationException | RuntimeException e) {
                return null;
            }
        }
        return null;
    }

    /** StreamTask.schedule (private 5-argument form) entry. */
    public static void scheduled(StreamTask task, PunctuationType type) {
        TaskState s = TASKS.get(task);
        if (s != null && type == PunctuationType.STREAM_TIME && s.serialReason == null) {
            ProcessorNode<?, ?, ?, ?> node = task.processorContext.currentNode();
            s.serialReason = "node " + (node == null ? "?" : node.name()) + " schedules a stream-time punctuator";
            s.instance.decisions.put(task.id().toString(), "serial: " + s.serialReason);
            LOG.info("streamshard: task {} stays serial: {}", task.id(), s.serialReason);
        }
    }

    // ---------------------------------------------------------------- the record path

    /**
     * StreamTask.doProcess entry. Returns true if the record was handed to the workers (the stock
     * body is then skipped), false to process it inline (serial task).
     */
    public static boolean submit(StreamTask task, StampedRecord record, AbstractPartitionGroup.RecordInfo info,
            long wallClockTime) {
        TaskState s = TASKS.get(task);
        if (s == null) {
            return false;
        }
        if (s.serialReason != null) {
            if (s.shard != null) {
                // Turned serial after records were handed out: let them finish first.
                drainQuietly(s);
            }
            return false;
        }
        ShardExecutor.ShardTask shard = s.shard();
        rethrowFailure(shard);
        InternalProcessorContext<?, ?> context = task.processorContext;
        SourceNode<Object, Object> source = (SourceNode<Object, Object>) info.node();
        ProcessorRecordContext recordContext = new ProcessorRecordContext(record.timestamp, record.offset(),
                record.partition(), record.topic(), record.headers(), record.rawKey(), record.rawValue());
        Object key = record.key();
        Object value = record.value();
        boolean timing = s.instance.config.inlineBelowNanos() > 0;
        Runnable work = () -> {
            long started = timing ? System.nanoTime() : 0;
            StreamShardFrames.push(new StreamShardFrames.Frame(context, recordContext, source, wallClockTime));
            try {
                source.process(new Record<>(key, value, recordContext.timestamp(), recordContext.headers()));
            } finally {
                StreamShardFrames.pop();
                if (timing) {
                    s.timed(System.nanoTime() - started);
                }
            }
        };
        if (runInline(s)) {
            work.run();
            return true;
        }
        int partition = s.partitions.computeIfAbsent(info.partition(), k -> s.partitions.size());
        long deadline = 0;
        while (!shard.submit(partition, record.offset(), record.rawKey(), work)) {
            // Only when another StreamThread took the last global slots (isProcessable checked).
            if (deadline == 0) {
                deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(s.instance.config.drainTimeoutMs());
            } else if (System.nanoTime() > deadline) {
                throw new IllegalStateException("streamshard: no capacity for task " + task.id() + " within "
                        + StreamShardConfig.DRAIN_TIMEOUT_MS);
            }
            Thread.onSpinWait();
        }
        return true;
    }

    /**
     * Whether this record of a parallel task runs on the StreamThread: while the task's records
     * take less than {@code streamshard.inline.below.us} each, the hand-off to a worker costs more
     * than it gives. Switching to the StreamThread first waits for the task's records on workers,
     * so records of one key never overlap and stay in order; switching back needs no wait.
     */
    private static boolean runInline(TaskState s) {
        long below = s.instance.config.inlineBelowNanos();
        if (below <= 0 || s.timed < INLINE_SAMPLES) {
            return s.inline;
        }
        long avg = s.avgNanos;
        if (!s.inline && avg < below) {
            drain(s);
            s.inline = true;
            s.timed = 0;
            LOG.info("streamshard: task {} runs its records on the StreamThread: {} µs each, below {}",
                    s.task.id(), avg / 1000.0, StreamShardConfig.INLINE_BELOW_US);
        } else if (s.inline && avg > 2 * below) {
            s.inline = false;
            s.timed = 0;
            LOG.info("streamshard: task {} hands its records to the workers again: {} µs each",
                    s.task.id(), avg / 1000.0);
        }
        return s.inline;
    }

    /** Records timed before a task may switch between workers and its StreamThread. */
    static final int INLINE_SAMPLES = 256;

    /** StreamTask.isProcessable exit: a task at its cap is not processable. */
    public static boolean processable(StreamTask task, boolean stock) {
        if (!stock) {
            return false;
        }
        TaskState s = TASKS.get(task);
        if (s == null || s.serialReason != null || s.shard == null) {
            return true;
        }
        // A failed task stays processable so that the next record rethrows its failure.
        return s.shard.failure() != null || s.shard.hasCapacity();
    }

    /** StreamTask.prepareCommit entry: every handed-out record finishes before offsets are taken. */
    public static void beforeCommit(StreamTask task, boolean clean) {
        TaskState s = TASKS.get(task);
        if (s == null || s.shard == null) {
            return;
        }
        if (clean) {
            drain(s);
        } else {
            dropQueued(s);
        }
    }

    /** StreamTask.suspend / maybePunctuateSystemTime entry. */
    public static void quiesce(StreamTask task) {
        TaskState s = TASKS.get(task);
        if (s != null && s.shard != null) {
            drain(s);
        }
    }

    /** StreamTask.closeClean / closeDirty / prepareRecycle entry: the task leaves the scheduler. */
    public static void closing(StreamTask task, boolean clean) {
        TaskState s = TASKS.remove(task);
        if (s == null || s.shard == null) {
            return;
        }
        ShardExecutor.ShardTask shard = s.shard;
        s.shard = null;
        shard.close(!clean || shard.failure() != null);
    }

    private static void drain(TaskState s) {
        try {
            s.shard.drain();
        } catch (ShardTaskFailedException e) {
            rethrowFailure(s.shard);
            throw e;
        }
    }

    private static void drainQuietly(TaskState s) {
        ShardExecutor.ShardTask shard = s.shard;
        s.shard = null;
        shard.close(false);
    }

    private static void dropQueued(TaskState s) {
        ShardExecutor.ShardTask shard = s.shard;
        s.shard = null;
        shard.close(true);
    }

    /** Rethrows a worker's failure unchanged where possible, so the stock error path runs. */
    private static void rethrowFailure(ShardExecutor.ShardTask shard) {
        Throwable f = shard.failure();
        if (f instanceof RuntimeException r) {
            throw r;
        }
        if (f instanceof Error e) {
            throw e;
        }
        if (f != null) {
            throw new ShardTaskFailedException(shard.id(), f);
        }
    }
}
