package org.apache.kafka.streams.processor.internals;

import io.streamshard.classify.Classification;
import io.streamshard.config.StreamShardConfig;
import io.streamshard.metrics.StreamShardMetrics;
import io.streamshard.runtime.InlinePolicy;
import io.streamshard.runtime.RetryPolicy;
import io.streamshard.runtime.RoomWait;
import io.streamshard.runtime.SerialRegion;
import io.streamshard.runtime.ShardExecutor;
import io.streamshard.runtime.ShardTaskFailedException;
import io.streamshard.scheduler.RecordTotals;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.Sensor;

/**
 * One StreamTask that runs through streamshard: the record path. Everything here runs on the
 * task's StreamThread unless a comment says otherwise.
 *
 * <p>Each record of the task is a {@link Ticket}. In {@link Mode#WORKERS} the ticket goes to the
 * shard scheduler and a worker runs the task's parallel nodes for it, at most one record per key
 * at a time. If the task has a serial region, every forward from a parallel node into a
 * serial-region node is parked on the ticket instead of run, and tickets are linked in the order
 * the StreamThread dequeued them; whichever worker finishes the head of that list runs the parked
 * forwards of every finished ticket from the head on, one ticket at a time, with the ticket's
 * record context and stream time in its frame (the serial runner, below). The runner is held by
 * at most one thread, so the serial region sees exactly the sequence stock would show it.
 *
 * <p>A ticket's serial part runs inside some worker's record (never after it), so when the
 * scheduler reports every record of the task finished, the serial region is empty too: a drain
 * of the scheduler is a drain of both regions.
 */
public final class ShardedTask implements StreamShardMetrics.TaskView {
    final StreamShardInstances.Instance instance;
    final StreamTask task;
    final InternalProcessorContext<?, ?> context;
    /** The serial-region nodes by identity; null if the task has none. Read by workers. */
    private final Set<ProcessorNode<?, ?, ?, ?>> serialNodes;
    /** Partition → its number in the scheduler registration; concurrent: the status thread reads it. */
    private final Map<TopicPartition, Integer> partitions = new ConcurrentHashMap<>();
    /**
     * Whether the StreamThread may have written the task's cached key-value stores since its last
     * hand-off: set by every drain and every record run inline, cleared when the next record goes
     * to a worker, which flushes those caches first (StreamShardStores). Between the set and that
     * hand-off no record of the task is on a worker. StreamThread only.
     */
    private boolean threadMayHaveCached = true;
    /** Workers or inline, decided once per record (cheap records: StreamShardConfig.INLINE_BELOW_US). */
    private final InlinePolicy inline;

    private final int maxBacklog;
    /** Which failures of a record's parallel part are retried on its key's lane; null: none. */
    final RetryPolicy retry;
    /** The ordered hand-back into the serial region; null if the task has none. */
    final SerialRegion serialRegion;

    private ShardExecutor.ShardTask shard;

    /** Drain statistics: written by the StreamThread only, read by metrics readers. */
    private volatile long drains;

    private volatile long drainNanosTotal;
    private volatile long drainNanosMax;

    @Override
    public int subtopology() {
        return task.id().subtopology();
    }

    @Override
    public int partition() {
        return task.id().partition();
    }

    /** The partition's number in the scheduler registration, or null before its first record. */
    Integer partitionIndex(TopicPartition tp) {
        return partitions.get(tp);
    }

    /**
     * The partition's number, assigned at its first record. Only the StreamThread assigns, so a
     * plain get-then-put is enough: no capturing lambda, no compute lock on the record path.
     */
    private int partitionNumber(TopicPartition tp) {
        Integer n = partitions.get(tp);
        if (n == null) {
            n = partitions.size();
            partitions.put(tp, n);
        }
        return n;
    }

    /** parallel, split (a parallel part and an ordered serial region) or inline (on the StreamThread). */
    public String mode() {
        return inline() ? "inline" : hasSerialRegion() ? "split" : "parallel";
    }

    @Override
    public boolean inline() {
        return inline.inline();
    }

    @Override
    public boolean hasSerialRegion() {
        return serialRegion != null;
    }

    @Override
    public long serialBacklog() {
        return serialRegion == null ? 0 : serialRegion.backlog();
    }

    @Override
    public long drains() {
        return drains;
    }

    @Override
    public long drainNanosTotal() {
        return drainNanosTotal;
    }

    @Override
    public long drainNanosMax() {
        return drainNanosMax;
    }

    /** The task's own process-latency sensor (DEBUG), recorded for the records streamshard runs. */
    private final Sensor processLatency;

    ShardedTask(
            StreamShardInstances.Instance instance,
            StreamTask task,
            Classification classification,
            Sensor processLatency) {
        this.instance = instance;
        this.processLatency = processLatency;
        this.task = task;
        this.context = task.processorContext;
        this.inline = new InlinePolicy(instance.config.inlineBelowNanos());
        this.maxBacklog = instance.config.maxInflightPerTask();
        this.retry = RetryPolicy.of(instance.config);
        if (classification.mode() == Classification.Mode.SPLIT) {
            Set<String> names = classification.serialNodes();
            Set<ProcessorNode<?, ?, ?, ?>> nodes = Collections.newSetFromMap(new IdentityHashMap<>());
            for (ProcessorNode<?, ?, ?, ?> n : task.topology.processors()) {
                if (names.contains(n.name())) {
                    nodes.add(n);
                }
            }
            serialNodes = nodes;
            serialRegion = new SerialRegion();
        } else {
            serialNodes = null;
            serialRegion = null;
        }
    }

    /**
     * Whether the task's process-latency sensor records now (its level, DEBUG, is enabled), as
     * stock's {@code maybeMeasureLatency} asks: the time of the whole processor chain for one record,
     * in nanoseconds, whichever thread runs it.
     */
    boolean measureLatency() {
        return processLatency != null && processLatency.shouldRecord() && processLatency.hasMetrics();
    }

    /** Whether the inline policy wants records' run times (besides {@link #measureLatency}). */
    boolean timing() {
        return inline.timing();
    }

    /**
     * The one sink of a record's run time, ns, whichever thread ran it (the StreamThread inline, a
     * worker, the serial runner for the whole record): the inline policy, and the task's
     * process-latency sensor if the record was {@code measured}.
     */
    void timed(long nanos, boolean measured) {
        if (inline.timing()) {
            inline.timed(nanos);
        }
        if (measured) {
            processLatency.record(nanos);
        }
    }

    private ShardExecutor.ShardTask shard() {
        if (shard == null) {
            shard = instance.executor.register(
                    task.id().subtopology(), task.id().partition(), instance.config.unorderedNullKeys());
        }
        return shard;
    }

    // ---------------------------------------------------------------- the record path

    /**
     * StreamTask.doProcess entry: {@link HandedOff} if the record went to the workers (the stock
     * body is then skipped), this task if the stock body runs it inline (timed by
     * {@link #ranInline}). Throws only {@code StreamsException}s (a worker's own, or streamshard's wrapped): for any
     * other RuntimeException StreamTask.process asks the context for its current node, which the
     * skipped body never set. A client {@code TimeoutException} (a sink's send blocked, a record
     * run inline) goes through as it is: stock retries the record under at-least-once and marks
     * the task corrupted under exactly-once, and neither asks for the current node.
     */
    public Object submit(StampedRecord record, AbstractPartitionGroup.RecordInfo info, long wallClockTime) {
        try {
            ShardExecutor.ShardTask handedOffBefore = shard;
            if (handedOffBefore != null && handedOffBefore.failure() != null) {
                // Rethrown only once none of the task's records runs: the stock failure path (under
                // exactly-once, handleCorruption commits the thread's other tasks) must not race
                // with this task's workers still sending.
                drain();
                TaskFailures.rethrow(handedOffBefore);
            }
            if (runInline()) {
                // Nothing of the task is on a worker: stock's own body runs the record, on the
                // context's own fields, and this task times it (ranInline).
                threadMayHaveCached = true;
                inlineStarted = System.nanoTime();
                return this;
            }
            handOver(record, info, wallClockTime);
            return HandedOff.INSTANCE;
        } catch (RuntimeException e) {
            throw TaskFailures.asThrownByProcess(e, shard, task.id());
        }
    }

    /** What {@link #submit} returns for a record handed to the workers: StreamTask.doProcess skips its body. */
    public static final class HandedOff {
        static final HandedOff INSTANCE = new HandedOff();

        private HandedOff() {}
    }

    /** When the record the stock body runs inline began, ns. */
    private long inlineStarted;

    /** StreamTask.doProcess exit for a record run inline (thrown or not): its time for the inline policy. */
    public void ranInline() {
        timed(System.nanoTime() - inlineStarted, false); // the stock body records the sensor itself
        RecordTotals.ranInline();
    }

    private void handOver(StampedRecord record, AbstractPartitionGroup.RecordInfo info, long wallClockTime) {
        ShardExecutor.ShardTask shard = shard();
        @SuppressWarnings("unchecked")
        SourceNode<Object, Object> source = (SourceNode<Object, Object>) info.node();
        ProcessorRecordContext recordContext = StreamShardCompat.COMPAT.context(record);
        // As stock's doProcess: the source node's end-to-end latency, at dequeue, on the StreamThread.
        task.maybeRecordE2ELatency(record.timestamp, wallClockTime, source.name());
        Ticket t =
                new Ticket(this, source, record.key(), record.value(), recordContext, wallClockTime, task.streamTime());
        if (threadMayHaveCached) {
            // Nothing of the task is on a worker (see the flag): what its StreamThread left dirty
            // in the caches is forwarded now, before a worker could write those keys through.
            task.stateMgr.flushCache();
            threadMayHaveCached = false;
        }
        if (serialRegion != null) {
            serialRegion.append(t);
        }
        int partition = partitionNumber(info.partition());
        long deadline = 0;
        byte[] rawKey = StreamShardCompat.COMPAT.rawKey(record);
        while (!shard.submit(partition, record.offset(), rawKey, t)) {
            // Only when another StreamThread took the last global slots (isProcessable checked).
            if (deadline == 0) {
                deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(instance.config.drainTimeoutMs());
            } else if (System.nanoTime() > deadline) {
                throw new IllegalStateException("streamshard: no capacity for task " + task.id() + " within "
                        + StreamShardConfig.DRAIN_TIMEOUT_MS);
            }
            Thread.onSpinWait();
        }
    }

    /**
     * Whether this record runs on the StreamThread. Going there first drains the task (both
     * regions), so records of one key never overlap and the serial region stays in order; going
     * back needs no wait, because a record run inline has finished when doProcess returns.
     */
    private boolean runInline() {
        switch (inline.next()) {
            case TO_INLINE:
                // The average that decided: the drain's records update it too.
                long average = inline.averageNanos();
                drain();
                inline.drained();
                StreamShardInstances.LOG.info(
                        "streamshard: task {} runs its records on the StreamThread: {} µs each, " + "below {}",
                        task.id(),
                        average / 1000.0,
                        StreamShardConfig.INLINE_BELOW_US);
                break;
            case TO_WORKERS:
                double share = inline.lastCpuShare();
                StreamShardInstances.LOG.info(
                        "streamshard: task {} hands its records to the workers: {} µs each{}",
                        task.id(),
                        inline.lastBlockNanos() / 1000.0,
                        share < 0 ? "" : String.format(" (on the CPU %.0f%% of the time)", 100 * share));
                break;
            default:
                break;
        }
        return inline.inline();
    }

    /**
     * StreamTask.isProcessable exit, given what stock decided: a task at its cap (scheduler or
     * serial backlog) is not processable. A task a worker failed throws that failure here, from
     * StreamTask.process, once none of its records runs: stock would have thrown it from the same
     * call while processing the record, and a task that receives no further record would otherwise
     * keep it until its next commit or close (up to commit.interval.ms later).
     */
    public boolean processable(boolean stock) {
        if (shard == null) {
            return stock;
        }
        ShardExecutor.ShardTask failed = shard;
        if (failed.failure() != null) {
            try {
                drain();
                TaskFailures.rethrow(failed);
            } catch (RuntimeException e) {
                throw TaskFailures.asThrownByIsProcessable(e, shard, task.id(), instance.eos);
            }
        }
        if (!stock) {
            return false;
        }
        if (shard.hasCapacity() && (serialRegion == null || serialRegion.backlog() < maxBacklog)) {
            return true;
        }
        RoomWait.atCap(shard);
        return false;
    }

    /** Whether a forward from a worker into {@code child} must be parked for the serial region. Any thread. */
    boolean serial(ProcessorNode<?, ?, ?, ?> child) {
        return serialNodes != null && serialNodes.contains(child);
    }

    // ---------------------------------------------------------------- barriers

    /** StreamTask.prepareCommit entry: every handed-out record finishes before offsets are taken. */
    public void beforeCommit(boolean clean) {
        if (shard == null) {
            return;
        }
        if (clean) {
            drain();
        } else {
            closeShard(true);
        }
    }

    /** Waits for every handed-out record, both regions; rethrows a worker's failure. */
    public void drain() {
        // Every drain is a barrier after which the StreamThread may run the task's code itself
        // (a punctuator, a commit's flush, inline records).
        threadMayHaveCached = true;
        if (shard == null) {
            return;
        }
        long started = System.nanoTime();
        try {
            shard.drain();
        } catch (ShardTaskFailedException e) {
            TaskFailures.rethrow(shard);
            throw e;
        } finally {
            long took = System.nanoTime() - started;
            drains++;
            drainNanosTotal += took;
            if (took > drainNanosMax) {
                drainNanosMax = took;
            }
        }
        if (serialRegion != null && !serialRegion.empty()) {
            throw new IllegalStateException("streamshard: task " + task.id() + " drained with " + serialRegion.backlog()
                    + " records still before its serial region");
        }
    }

    /** How a task leaves the scheduler (StreamTask.closeClean / prepareRecycle, or closeDirty). */
    enum CloseMode {
        /** Every handed-out record runs to its end first (a failed task: as DIRTY). */
        CLEAN,
        /** Queued records are dropped; running ones are waited for. */
        DIRTY
    }

    /** The task leaves the scheduler. */
    void close(CloseMode mode) {
        if (shard != null) {
            closeShard(mode == CloseMode.DIRTY || shard.failure() != null);
        }
    }

    private void closeShard(boolean dropQueued) {
        // Forgotten only once closed: if the close times out (Kafka Streams may swallow that and
        // go on), the next suspend or close still finds the task and waits for its workers again.
        shard.close(dropQueued);
        shard = null;
        if (serialRegion != null) {
            // Whatever was dropped never reaches the serial region; start it afresh.
            serialRegion.reset();
        }
    }
}
