package org.apache.kafka.streams.processor.internals;

import io.streamshard.classify.Classification;
import io.streamshard.config.StreamShardConfig;
import io.streamshard.metrics.StreamShardMetrics;
import io.streamshard.runtime.CommitOrder;
import io.streamshard.runtime.DrainStats;
import io.streamshard.runtime.InlinePolicy;
import io.streamshard.runtime.PartitionNumbers;
import io.streamshard.runtime.RetryPolicy;
import io.streamshard.runtime.RoomWait;
import io.streamshard.runtime.SerialRegion;
import io.streamshard.runtime.ShardExecutor;
import io.streamshard.scheduler.CloseMode;
import io.streamshard.scheduler.DrainTimeoutException;
import io.streamshard.scheduler.RecordTotals;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
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
 *
 * <p>Commits. A regular commit waits for no record ({@code streamshard.commit.wait=none}): it
 * covers the task's {@link CommitOrder}'s retired prefix (the records dequeued before the first
 * one not finished, a record of a task with a serial region once its serial part ran), and under
 * exactly-once the sends of records beyond it are held on them and made when they retire. A task
 * with a serial region pauses it for the commit (the parallel parts go on). Every other commit
 * (revocation, close) and every punctuation drains.
 */
public final class ShardedTask implements StreamShardMetrics.TaskView {
    final StreamShardInstances.Instance instance;
    final StreamTask task;
    final InternalProcessorContext<?, ?> context;
    /** The serial-region nodes by identity; null if the task has none. Read by workers. */
    private final Set<ProcessorNode<?, ?, ?, ?>> serialNodes;
    /** Partition → its number in the scheduler registration. */
    final PartitionNumbers<TopicPartition> partitions = new PartitionNumbers<>();
    /**
     * Whether the StreamThread may have written the task's cached key-value stores since its last hand-off: set by
     * every drain and record run inline, cleared when the next record goes to a worker, which flushes those caches
     * first (StreamShardStores). Between the set and that hand-off no record of the task is on a worker.
     */
    private boolean threadMayHaveCached = true;
    /** Workers or inline, decided once per record (cheap records: StreamShardConfig.INLINE_BELOW_US). */
    private final InlinePolicy inline;
    /** Where every record's run time goes. */
    final RecordTimes times;

    private final int maxBacklog;
    /** Which failures of a record's parallel part are retried on its key's lane; null: none. */
    final RetryPolicy retry;
    /** The ordered hand-back into the serial region; null if the task has none. */
    final SerialRegion serialRegion;
    /** The task's scheduler registration, made at its first handed-off record; null before, and after a close. */
    private ShardExecutor.ShardTask shard;
    /** The first failure of the registration's records on a worker, and its forms for the StreamThread. */
    final TaskFailure failure;

    private final DrainStats drains = new DrainStats();
    /** The handed-off records in dequeue order, for commits that wait for none; null: every commit drains. */
    final CommitOrder<HeldSend> order;
    /** streamshard.commit.held.max.bytes, read once: processable() checks it before every record. */
    private final long heldMaxBytes;
    /** Whether records hold their sends until they retire (exactly-once with {@link #order}). */
    final boolean holdSends;
    /**
     * By partition number: each partition's time as {@link #processable} read it, just before the
     * dequeue it allowed, so the time before the partition's next record; {@link
     * CommitOrder#UNKNOWN} until read.
     */
    private long[] partitionTimes = new long[0];
    /** The task's input partitions the numbers in {@link #inputNumbers} were taken for. */
    private Set<TopicPartition> inputsSeen;

    private TopicPartition[] inputs = new TopicPartition[0];
    private int[] inputNumbers = new int[0];
    /** Whether the running prepareCommit covers the retired prefix only (the committable offsets follow it). */
    private boolean committingPrefix;

    @Override
    public int subtopology() {
        return task.id().subtopology();
    }

    @Override
    public int partition() {
        return task.id().partition();
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
    public long commitBacklog() {
        return order == null ? 0 : order.backlog();
    }

    @Override
    public long heldBytes() {
        return order == null ? 0 : order.heldBytes();
    }

    @Override
    public DrainStats drains() {
        return drains;
    }

    ShardedTask(
            StreamShardInstances.Instance instance,
            StreamTask task,
            Classification classification,
            Sensor processLatency) {
        this.instance = instance;
        this.task = task;
        this.context = task.processorContext;
        this.inline = new InlinePolicy(instance.config.inlineBelowNanos(), instance.siblings(task.id()));
        this.times = new RecordTimes(inline, processLatency);
        this.maxBacklog = instance.config.maxInflightPerTask();
        this.retry = RetryPolicy.of(instance.config);
        this.failure = new TaskFailure(task.id(), instance.eos);
        if (classification.mode() == Classification.Mode.SPLIT) {
            serialNodes = TopologyInspector.nodesNamed(task.topology, classification.serialNodes());
            serialRegion = new SerialRegion();
        } else {
            serialNodes = null;
            serialRegion = null;
        }
        // With a serial region, a record finishes when its serial part ran, and a commit pauses the
        // region (beforeCommit): its nodes' state and processor metadata (emit-final windows), which
        // a commit takes as of now, are then those of the records it covers.
        this.order = !instance.config.commitWaitsForAll() ? new CommitOrder<>(HeldSend::send) : null;
        this.holdSends = order != null && instance.eos;
        this.heldMaxBytes = instance.config.commitHeldMaxBytes();
    }

    private ShardExecutor.ShardTask shard() {
        if (shard == null) {
            shard = instance.executor.register(
                    task.id().subtopology(), task.id().partition(), instance.config.unorderedNullKeys(), failure);
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
            throwIfFailed();
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
            throw failure.atProcess(e);
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
        times.timed(System.nanoTime() - inlineStarted, false); // the stock body records the sensor itself
        RecordTotals.ranInline();
    }

    private void handOver(StampedRecord record, AbstractPartitionGroup.RecordInfo info, long wallClockTime) {
        ShardExecutor.ShardTask shard = shard();
        @SuppressWarnings("unchecked")
        SourceNode<Object, Object> source = (SourceNode<Object, Object>) info.node();
        // As stock's doProcess: the source node's end-to-end latency, at dequeue, on the StreamThread.
        task.maybeRecordE2ELatency(record.timestamp, wallClockTime, source.name());
        Ticket t = Ticket.of(this, source, record, wallClockTime);
        if (threadMayHaveCached) {
            // Nothing of the task is on a worker (see the flag): what its StreamThread left dirty
            // in the caches is forwarded now, before a worker could write those keys through.
            task.stateMgr.flushCache();
            threadMayHaveCached = false;
        }
        if (serialRegion != null) {
            serialRegion.append(t);
        }
        int partition = partitions.numberOf(info.partition());
        if (order != null) {
            t.entry = order.append(partition, record.offset(), partitionTimeBefore(partition));
        }
        long deadline = 0;
        byte[] rawKey = StreamShardCompat.COMPAT.rawKey(record);
        try {
            while (!shard.submit(partition, record.offset(), rawKey, t)) {
                // A record failed since isProcessable, or another StreamThread took the last global
                // slots (isProcessable checked the caps).
                throwIfFailed();
                if (deadline == 0) {
                    deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(instance.config.drainTimeoutMs());
                } else if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("streamshard: no capacity for task " + task.id() + " within "
                            + StreamShardConfig.DRAIN_TIMEOUT_MS);
                }
                Thread.onSpinWait();
            }
        } catch (RuntimeException e) {
            t.notHandedOver(e);
            throw e;
        }
    }

    /**
     * The task's handed-off records not finished, for the inline policy (asked only when it would go
     * inline): those not retired once the finished prefix retired, or those before the serial
     * region. A retire here makes held sends (exactly-once) on the StreamThread inside doProcess,
     * where stock makes its own sends.
     */
    private final LongSupplier handedOff = this::handedOffNow;

    private long handedOffNow() {
        if (order != null) {
            order.retire();
            return order.backlog();
        }
        return serialRegion != null ? serialRegion.backlog() : 0;
    }

    /** The partition's time before the record being handed off; grows the table for a new partition. */
    private long partitionTimeBefore(int partition) {
        if (partition >= partitionTimes.length) {
            int was = partitionTimes.length;
            partitionTimes = Arrays.copyOf(partitionTimes, Math.max(partition + 1, 2 * was));
            Arrays.fill(partitionTimes, was, partitionTimes.length, CommitOrder.UNKNOWN);
        }
        return partitionTimes[partition];
    }

    /**
     * Whether this record runs on the StreamThread. Going there first drains the task (both
     * regions), so records of one key never overlap and the serial region stays in order; going
     * back needs no wait, because a record run inline has finished when doProcess returns.
     */
    private boolean runInline() {
        switch (inline.next(handedOff)) {
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
                StreamShardInstances.LOG.info(
                        "streamshard: task {} hands its records to the workers: {}", task.id(), inline.whyWorkers());
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
    public boolean processable(boolean stock, AbstractPartitionGroup group) {
        resumeSerialRegion();
        if (stock && order != null) {
            readPartitionTimes(group);
        }
        if (shard == null) {
            return stock;
        }
        try {
            throwIfFailed();
        } catch (RuntimeException e) {
            throw failure.atIsProcessable(e);
        }
        if (!stock) {
            return false;
        }
        if (order != null) {
            // Stock said processable: no transaction commit is pending, so held sends may go now.
            order.retire();
            if (order.backlog() >= maxUnretired() || order.heldBytes() >= heldMaxBytes) {
                return false;
            }
        }
        if (inline.waitingForBacklog() && handedOffNow() > InlinePolicy.BLOCK) {
            // Ready to go inline: no record until the workers have worked the backlog down, so the
            // drain then is short. Not a cap: the StreamThread's poll may block for its poll time.
            return false;
        }
        if (shard.hasCapacity() && (serialRegion == null || serialRegion.backlog() < maxBacklog)) {
            return true;
        }
        RoomWait.atCap(shard);
        return false;
    }

    /**
     * Reads every input partition's time before StreamTask.process dequeues its next record: a
     * commit of the retired prefix commits a record's offset with the time its partition had just
     * before it, as stock's commit after the record before it would (a restart from that offset
     * then sees the stream time stock's would). Read for every record, inline ones too, so the
     * first record handed off after a start, after inline records or after a close has its time
     * as well (docs/design.md, "Commits"). A few map lookups for each record on the StreamThread.
     */
    private void readPartitionTimes(AbstractPartitionGroup group) {
        Set<TopicPartition> now = task.inputPartitions();
        if (now != inputsSeen) {
            inputsSeen = now;
            inputs = now.toArray(new TopicPartition[0]);
            inputNumbers = new int[inputs.length];
            for (int i = 0; i < inputs.length; i++) {
                inputNumbers[i] = partitions.numberOf(inputs[i]);
                partitionTimeBefore(inputNumbers[i]); // grows the table
            }
        }
        for (int i = 0; i < inputs.length; i++) {
            long time;
            try {
                time = group.partitionTimestamp(inputs[i]);
            } catch (IllegalStateException notInTheGroup) {
                time = CommitOrder.UNKNOWN; // never seen: a commit then drains (partitionTimesKnown)
            }
            partitionTimes[inputNumbers[i]] = time;
        }
    }

    /** Whether a forward from a worker into {@code child} must be parked for the serial region. Any thread. */
    boolean serial(ProcessorNode<?, ?, ?, ?> child) {
        return serialNodes != null && serialNodes.contains(child);
    }

    /**
     * Throws the failure of a record of the task's, if one failed, once none of its records runs:
     * the stock failure path (under exactly-once, handleCorruption commits the thread's other
     * tasks) must not race with this task's workers still sending.
     */
    private void throwIfFailed() {
        if (shard != null && failure.failed()) {
            drain(); // ends in the failure (the scheduler dispatches nothing more of a failed task)
        }
    }

    /**
     * StreamTask.prepareCommit entry: every handed-out record finishes before offsets are taken; a
     * dirty one (Kafka Streams' {@code clean == false}) drops the queued records instead.
     */
    public void beforeCommit(boolean clean) {
        long since = System.nanoTime();
        committingPrefix = false;
        resumeSerialRegion();
        if (shard == null) {
            return;
        }
        if (!clean) {
            closeShard(CloseMode.DROP_QUEUED);
        } else if (order != null
                && StreamShardInstances.inRegularCommit()
                && !failure.failed()
                && order.partitionTimesKnown()
                && pauseSerialRegion()) {
            // Retired after the pause: with a serial region, what retires is exactly what the
            // region has run, and nothing more runs there until the commit has its offsets.
            order.retire();
            if (order.headHeldNanos(System.nanoTime())
                    > TimeUnit.MILLISECONDS.toNanos(instance.config.drainTimeoutMs())) {
                // One record has held every commit for a whole drain timeout: this commit waits
                // for it, and a call that never answers fails the StreamThread as a draining
                // commit would have (DrainTimeoutException), rather than holding the task forever.
                drainRest(since);
            } else {
                committingPrefix = order.backlog() > 0;
            }
            if (!committingPrefix) {
                resumeSerialRegion(); // nothing of the task runs
            }
        } else {
            drainRest(since);
        }
    }

    /**
     * A drain within what is left of the drain timeout since {@code since} (a pause for the same
     * commit may have waited for part of it): the StreamThread waits at most one drain timeout per
     * commit step, as {@code streamshard.drain.timeout.ms}'s check against {@code
     * max.poll.interval.ms} assumes. 1 ms at least: a drain with nothing to wait for succeeds. Its
     * timeout names both waits.
     */
    private void drainRest(long since) {
        long timeoutMs = instance.config.drainTimeoutMs();
        long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - since);
        if (waitedMs == 0) {
            drain(timeoutMs);
            return;
        }
        try {
            drain(Math.max(1, timeoutMs - waitedMs));
        } catch (DrainTimeoutException e) {
            throw new DrainTimeoutException("streamshard: a commit of task " + task.id() + " waited " + waitedMs
                    + " ms for its serial region to pause, then drained for the rest of "
                    + StreamShardConfig.DRAIN_TIMEOUT_MS + " (" + timeoutMs + " ms): " + e.getMessage());
        }
    }

    /**
     * Before a commit of the retired prefix: stops the serial region between two serial parts
     * (its runner waits inside its own record; parallel parts go on) for this task's own part of
     * the commit: its flush and its offsets with their processor metadata ({@link #committable});
     * under at-least-once once more for its checkpoint ({@link #beforePostCommit}). False if a
     * serial part did not end within the drain timeout or the task failed: the commit then drains.
     * True at once for a task without a serial region.
     */
    private boolean pauseSerialRegion() {
        return serialRegion == null
                || serialRegion.pause(TimeUnit.MILLISECONDS.toNanos(instance.config.drainTimeoutMs()), failure::failed);
    }

    /**
     * Lets the serial region go on after a commit's offsets were taken. Also called first by every
     * path that may wait for the task's records (a paused runner waits inside one), so that a commit
     * that threw after the pause cannot leave it paused.
     */
    private void resumeSerialRegion() {
        if (serialRegion != null) {
            serialRegion.resume();
        }
    }

    /**
     * StreamTask.committableOffsetsAndMetadata exit: in a commit of the retired prefix, each
     * partition with a record not retired commits that record's offset, with the partition time
     * stock had just before it; the others commit what stock decided.
     */
    public Map<TopicPartition, OffsetAndMetadata> committable(Map<TopicPartition, OffsetAndMetadata> stock) {
        // Stock's offsets carry the processor metadata as of now: the serial region's, paused until
        // here, the end of prepareCommit (it never holds a worker across the other tasks' commits).
        resumeSerialRegion();
        if (!committingPrefix || stock == null || stock.isEmpty()) {
            return stock;
        }
        Map<TopicPartition, OffsetAndMetadata> m = new HashMap<>(stock);
        for (TopicPartition tp : stock.keySet()) {
            Integer p = partitions.get(tp);
            CommitOrder.Entry<HeldSend> first = p == null ? null : order.firstUnretired(p);
            if (first != null) {
                // Stock's metadata with the partition time moved back (its processor metadata as it is).
                ProcessorMetadata processor =
                        TopicPartitionMetadata.decode(stock.get(tp).metadata()).processorMetadata();
                String metadata = new TopicPartitionMetadata(first.partitionTimeBefore(), processor).encode();
                m.put(tp, new OffsetAndMetadata(first.offset(), Optional.empty(), metadata));
            }
        }
        return m;
    }

    /**
     * StreamTask.postCommit entry: at-least-once writes the checkpoint there, which walks a
     * segmented store's segments (windows, stream-stream joins) that a serial part's put may close;
     * the serial region pauses for it, until {@link #commitNeededAfter}. Exactly-once writes no
     * checkpoint in a regular commit. If the region cannot pause (a serial part runs for a whole
     * drain timeout), the task drains; a failed task's region runs nothing any more.
     */
    public void beforePostCommit() {
        long since = System.nanoTime();
        if (committingPrefix && serialRegion != null && !instance.eos && !pauseSerialRegion() && !failure.failed()) {
            drainRest(since);
        }
    }

    /** StreamTask.postCommit exit: whether the task still needs a commit (records the last one did not cover). */
    public boolean commitNeededAfter(boolean stock) {
        resumeSerialRegion();
        boolean more = committingPrefix && StreamShardInstances.inRegularCommit() && order.backlog() > 0;
        committingPrefix = false;
        return stock || more;
    }

    /** Most records handed off and not retired: beyond it the task takes no new record. */
    private int maxUnretired() {
        return 4 * maxBacklog;
    }

    /** Waits for every handed-out record, both regions; rethrows a worker's failure. */
    public void drain() {
        drain(instance.config.drainTimeoutMs());
    }

    /** {@link #drain()}, waiting at most {@code timeoutMs}. */
    private void drain(long timeoutMs) {
        // Every drain is a barrier after which the StreamThread may run the task's code itself
        // (a punctuator, a commit's flush, inline records).
        threadMayHaveCached = true;
        resumeSerialRegion();
        if (shard == null) {
            return;
        }
        long started = System.nanoTime();
        boolean drained;
        try {
            drained = shard.drain(timeoutMs);
        } finally {
            drains.add(System.nanoTime() - started);
        }
        if (!drained || failure.failed()) {
            failure.rethrow();
        }
        if (serialRegion != null && !serialRegion.empty()) {
            throw new IllegalStateException("streamshard: task " + task.id() + " drained with " + serialRegion.backlog()
                    + " records still before its serial region");
        }
        if (order != null) {
            order.retire();
            if (order.backlog() > 0) {
                throw new IllegalStateException(
                        "streamshard: task " + task.id() + " drained with " + order.backlog() + " records not retired");
            }
        }
    }

    /**
     * The task leaves the scheduler: StreamTask.closeClean and prepareRecycle {@link
     * CloseMode#DRAIN}, closeDirty {@link CloseMode#DROP_QUEUED}. A failed task's queued records
     * never run, so it drops them whatever the mode.
     */
    void close(CloseMode mode) {
        if (shard != null) {
            closeShard(failure.failed() ? CloseMode.DROP_QUEUED : mode);
        }
    }

    private void closeShard(CloseMode mode) {
        resumeSerialRegion();
        // Forgotten only once closed: if the close times out (Kafka Streams may swallow that and
        // go on), the next suspend or close still finds the task and waits for its workers again.
        shard.close(mode);
        shard = null;
        failure.clear(); // none of the registration's records runs any more
        if (order != null) {
            // A clean close drained and committed first; whatever is left (a dirty close's records)
            // runs again from the committed offsets, and its held sends are never made.
            order.clear();
            Arrays.fill(partitionTimes, CommitOrder.UNKNOWN);
        }
        if (serialRegion != null) {
            // Whatever was dropped never reaches the serial region; start it afresh.
            serialRegion.reset();
        }
    }
}
