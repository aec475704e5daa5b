package io.streamshard.metrics;

import io.streamshard.runtime.AdaptiveLimit;
import io.streamshard.runtime.DrainStats;
import io.streamshard.runtime.ShardExecutor;
import io.streamshard.scheduler.SchedulerMetrics;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;
import java.util.function.ToLongFunction;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.Metrics;
import org.slf4j.LoggerFactory;

/**
 * streamshard's metrics in the instance's own Kafka Streams registry, so {@code
 * KafkaStreams.metrics()}, JMX ({@code kafka.streams:type=streamshard-metrics,client-id=…} and
 * {@code type=streamshard-task-metrics,thread-id=…,task-id=…}) and anything reading that registry
 * see them. Every value is read when asked, from one lock-free copy of the scheduler's counters
 * taken at most every {@link #REFRESH_NANOS}: nothing is added to the record path.
 */
public final class StreamShardMetrics {
    public static final String GROUP = "streamshard-metrics";
    public static final String TASK_GROUP = "streamshard-task-metrics";
    static final long REFRESH_NANOS = 100_000_000L;

    /** What a task offers to its metrics (implemented by the task's runtime). */
    public interface TaskView {
        int subtopology();

        int partition();

        /** Whether the task's records run on the StreamThread now (too cheap to hand off). */
        boolean inline();

        /** Whether the task has an ordered serial region after its parallel part. */
        boolean hasSerialRegion();

        long serialBacklog();

        /** Records handed off whose offsets no commit covers yet; 0 where every commit drains. */
        long commitBacklog();

        /** Exactly-once: bytes (keys and values) of sends held for the transaction that commits their records. */
        long heldBytes();

        DrainStats drains();
    }

    private final Metrics registry;
    private final ShardExecutor executor;
    private final Map<String, String> clientTags;
    private final List<MetricName> instanceMetrics = new ArrayList<>();
    private final Map<TaskView, List<MetricName>> taskMetrics = new LinkedHashMap<>();
    private SchedulerMetrics snapshot;
    private long snapshotAt;
    /** For the rates: a snapshot at least RATE_WINDOW_NANOS old, and the newest one that may replace it. */
    private SchedulerMetrics rateBase;

    private long rateBaseAt;
    private SchedulerMetrics rateNext;
    private long rateNextAt;
    private boolean refused;
    static final long RATE_WINDOW_NANOS = 1_000_000_000L;

    public StreamShardMetrics(Metrics registry, String clientId, ShardExecutor executor, int workers) {
        this.registry = registry;
        this.executor = executor;
        this.clientTags = Map.of("client-id", clientId);
        instance(
                "workers",
                "Worker threads of this instance (with streamshard.workers=auto, its maximum).",
                s -> workers);
        AdaptiveLimit limit = executor.adaptiveLimit();
        if (limit != null) {
            instance(
                    "workers-limit",
                    "streamshard.workers=auto: the records that may run at once now.",
                    s -> limit.limit());
            instance(
                    "workers-limit-changes-total",
                    "streamshard.workers=auto: changes of the limit (the last one and why: status service, log).",
                    s -> limit.changes());
            instance(
                    "workers-limit-run-time-ns",
                    "streamshard.workers=auto: the mean run time of the last window of records judged, ns.",
                    s -> limit.lastRttNanos());
            instance(
                    "workers-limit-base-run-time-ns",
                    "streamshard.workers=auto: the unloaded run time the limit is judged against, ns.",
                    s -> limit.baseNanos());
        }
        instance("in-flight", "Records running on a worker now, all tasks.", s -> s.totals.running());
        instance(
                "queued",
                "Records handed to the scheduler and waiting (behind their key, or for a worker).",
                s -> s.totals.queued());
        instance(
                "slots-in-use",
                "Slots taken by unfinished records, of streamshard.max.inflight.",
                s -> s.totals.queued() + s.totals.running());
        instance(
                "handoffs-total",
                "Records handed to the workers since the instance started.",
                s -> s.totals.submitted());
        instance("completed-total", "Records the workers finished.", s -> s.totals.finished());
        instance(
                "handoffs-rate",
                "Records handed to the workers per second, over the last 1 to 2 s of readings.",
                s -> rate(x -> x.totals.submitted()));
        instance(
                "completed-rate",
                "Records the workers finished per second, over the last 1 to 2 s of readings.",
                s -> rate(x -> x.totals.finished()));
        instance("failed-total", "Records that failed on a worker.", s -> s.totals.failures());
        instance(
                "wait-time-avg-ns",
                "Mean time from hand-off to a worker taking the record, sampled, ns.",
                s -> s.wait.meanNanos());
        instance(
                "wait-time-max-ns",
                "Longest sampled time from hand-off to a worker taking the record, ns.",
                s -> s.wait.maxNanos);
        instance(
                "run-time-avg-ns",
                "Mean time a worker runs a record's processor chain, sampled, ns.",
                s -> s.run.meanNanos());
        instance("run-time-max-ns", "Longest sampled time a worker ran a record, ns.", s -> s.run.maxNanos);
    }

    private void instance(String name, String description, ToDoubleFunction<SchedulerMetrics> value) {
        MetricName n = registry.metricName(name, GROUP, description, clientTags);
        put(n, (Gauge<Double>) (config, now) -> value.applyAsDouble(snapshot()));
        instanceMetrics.add(n);
    }

    /** Registers a task's metrics (on its StreamThread, when the task is created or revived). */
    public synchronized void addTask(TaskView t, String threadId, String taskId) {
        removeTask(t);
        Map<String, String> tags = new LinkedHashMap<>();
        tags.put("thread-id", threadId);
        tags.put("task-id", taskId);
        List<MetricName> names = new ArrayList<>();
        Function<SchedulerMetrics, SchedulerMetrics.Task> own = s -> s.task(t.subtopology(), t.partition());
        // Numbers only, as Kafka's own metrics but the thread state: JMX exporters and the
        // client telemetry (KIP-714) pass numeric metrics and drop strings. The mode as a word
        // (parallel, split, inline) is in the status service and explain().
        names.add(add(
                "inline",
                "1 while the task's records run on the StreamThread (too cheap to hand off), 0 while "
                        + "they go to the workers.",
                tags,
                (Gauge<Double>) (c, now) -> t.inline() ? 1.0 : 0.0));
        names.add(add(
                "serial-region",
                "1 if the task has an ordered serial region (windows, suppress, joins, unknown "
                        + "processors) after its parallel part, else 0.",
                tags,
                (Gauge<Double>) (c, now) -> t.hasSerialRegion() ? 1.0 : 0.0));
        names.add(task("queued", "The task's records waiting in the scheduler.", tags, own, x -> x.queued));
        names.add(task("in-flight", "The task's records running on a worker now.", tags, own, x -> x.running));
        names.add(task(
                "handoffs-total",
                "The task's records handed to the workers (since its scheduler " + "registration).",
                tags,
                own,
                x -> x.submitted));
        names.add(task("completed-total", "The task's records the workers finished.", tags, own, x -> x.finished));
        names.add(add(
                "completed-rate",
                "The task's records the workers finished per second, over the last 1 to 2 s " + "of readings.",
                tags,
                (Gauge<Double>) (c, now) -> rate(x -> {
                    SchedulerMetrics.Task m = x.task(t.subtopology(), t.partition());
                    return m == null ? 0 : m.finished;
                })));
        names.add(task("failed-total", "The task's records that failed on a worker.", tags, own, x -> x.failures));
        names.add(task(
                "retries-total",
                "The task's records sent back to wait for a retry (streamshard.retry.*).",
                tags,
                own,
                x -> x.retries));
        names.add(task(
                "in-backoff",
                "The task's records waiting for their retry now (one a key: its later records wait behind it).",
                tags,
                own,
                x -> x.backoff));
        names.add(task("active-keys", "Keys with unfinished records now.", tags, own, x -> x.activeKeys));
        names.add(task(
                "deepest-key-queue",
                "The most unfinished records one key has had at once.",
                tags,
                own,
                x -> x.maxKeyDepth));
        names.add(task(
                "wait-time-avg-ns",
                "Mean time from hand-off to a worker taking one of the task's records "
                        + "(waiting behind its key or for a worker), sampled, ns.",
                tags,
                own,
                x -> x.wait.meanNanos()));
        names.add(task(
                "wait-time-max-ns",
                "Longest sampled wait of the task's records, ns.",
                tags,
                own,
                x -> x.wait.maxNanos));
        names.add(task(
                "run-time-avg-ns",
                "Mean time a worker runs one of the task's records, sampled, ns.",
                tags,
                own,
                x -> x.run.meanNanos()));
        names.add(task(
                "run-time-max-ns", "Longest sampled run of the task's records, ns.", tags, own, x -> x.run.maxNanos));
        names.add(add(
                "serial-backlog", "Records dequeued whose serial-region part has not run yet.", tags, (Gauge<Double>)
                        (c, now) -> (double) t.serialBacklog()));
        names.add(add(
                "commit-backlog",
                "Records handed off whose offsets no commit covers yet: those running or queued, "
                        + "and the finished ones dequeued after the first of them.",
                tags,
                (Gauge<Double>) (c, now) -> (double) t.commitBacklog()));
        names.add(add(
                "held-bytes",
                "Exactly-once: bytes of output, repartition and changelog records held until "
                        + "the transaction that commits their records' offsets.",
                tags,
                (Gauge<Double>) (c, now) -> (double) t.heldBytes()));
        names.add(add(
                "drain-total",
                "Drains (commit, suspend, punctuation, close, switch to inline) that "
                        + "waited for the task's records.",
                tags,
                (Gauge<Double>) (c, now) -> (double) t.drains().count()));
        names.add(add("drain-time-avg-ns", "Mean time a drain waited, ns.", tags, (Gauge<Double>) (c, now) -> {
            long n = t.drains().count();
            return n == 0 ? Double.NaN : (double) t.drains().nanosTotal() / n;
        }));
        names.add(add("drain-time-max-ns", "Longest time a drain waited, ns.", tags, (Gauge<Double>)
                (c, now) -> (double) t.drains().nanosMax()));
        taskMetrics.put(t, names);
    }

    private MetricName add(String name, String description, Map<String, String> tags, Gauge<?> gauge) {
        MetricName n = registry.metricName(name, TASK_GROUP, description, tags);
        put(n, gauge);
        return n;
    }

    /**
     * Adds a metric; one of the same name left by an earlier task object is replaced. Metrics never
     * fail the application: a registry that refuses one is logged once and left without it.
     */
    private void put(MetricName n, Gauge<?> gauge) {
        try {
            if (registry.metric(n) != null) {
                registry.removeMetric(n);
            }
            registry.addMetric(n, gauge);
        } catch (RuntimeException e) {
            if (!refused) {
                refused = true;
                LoggerFactory.getLogger("io.streamshard")
                        .warn(
                                "streamshard: the metrics registry refused {} ({}); streamshard runs on without it",
                                n,
                                e.toString());
            }
        }
    }

    private MetricName task(
            String name,
            String description,
            Map<String, String> tags,
            Function<SchedulerMetrics, SchedulerMetrics.Task> own,
            ToDoubleFunction<SchedulerMetrics.Task> value) {
        return add(name, description, tags, (Gauge<Double>) (c, now) -> {
            SchedulerMetrics.Task x = own.apply(snapshot());
            return x == null ? 0.0 : value.applyAsDouble(x);
        });
    }

    /** Removes a task's metrics (when it closes). */
    public synchronized void removeTask(TaskView t) {
        List<MetricName> names = taskMetrics.remove(t);
        if (names != null) {
            names.forEach(this::drop);
        }
    }

    /** Removes every metric of the instance (when it stops). */
    public synchronized void close() {
        new ArrayList<>(taskMetrics.keySet()).forEach(this::removeTask);
        instanceMetrics.forEach(this::drop);
        instanceMetrics.clear();
    }

    private void drop(MetricName n) {
        try {
            registry.removeMetric(n);
        } catch (RuntimeException e) {
            // a registry already closed with its instance: nothing left to remove
        }
    }

    private synchronized SchedulerMetrics snapshot() {
        long now = System.nanoTime();
        if (snapshot == null || now - snapshotAt > REFRESH_NANOS) {
            try {
                snapshot = executor.scheduler().metrics();
            } catch (RuntimeException e) {
                // The scheduler is closed (the instance stopped): nothing runs any more.
                snapshot = SchedulerMetrics.empty();
            }
            snapshotAt = now;
            if (rateBase == null) {
                rateBase = snapshot;
                rateBaseAt = now;
            } else if (rateNext == null || now - rateNextAt >= RATE_WINDOW_NANOS) {
                // The base moves up once a newer reading is a full window old, so a rate always
                // spans 1 to 2 windows of readings (more if nobody read for longer).
                if (rateNext != null) {
                    rateBase = rateNext;
                    rateBaseAt = rateNextAt;
                }
                rateNext = snapshot;
                rateNextAt = now;
            }
        }
        return snapshot;
    }

    /** Per second between the rate base and the newest snapshot; 0 until a window has passed. */
    private synchronized double rate(ToLongFunction<SchedulerMetrics> counter) {
        SchedulerMetrics cur = snapshot();
        double seconds = (snapshotAt - rateBaseAt) / 1e9;
        if (rateBase == null || seconds < RATE_WINDOW_NANOS / 2e9) {
            return 0.0;
        }
        return Math.max(0, counter.applyAsLong(cur) - counter.applyAsLong(rateBase)) / seconds;
    }
}
