package org.apache.kafka.streams.processor.internals;

import io.streamshard.classify.Classification;
import io.streamshard.config.StreamShardConfig;
import io.streamshard.runtime.InlinePolicy;
import io.streamshard.runtime.RoomWait;
import io.streamshard.runtime.SerialRegion;
import io.streamshard.runtime.ShardExecutor;
import io.streamshard.runtime.ShardTaskFailedException;
import io.streamshard.scheduler.RecordTotals;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.errors.StreamsException;
import org.apache.kafka.streams.processor.api.Record;

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
public final class ShardedTask implements io.streamshard.metrics.StreamShardMetrics.TaskView {
    final StreamShardInstances.Instance instance;
    final StreamTask task;
    private final InternalProcessorContext<?, ?> context;
    /** The serial-region nodes by identity; null if the task has none. Read by workers. */
    private final Set<ProcessorNode<?, ?, ?, ?>> serialNodes;
    /** Partition → its number in the scheduler registration; concurrent: the status thread reads it. */
    private final Map<TopicPartition, Integer> partitions = new java.util.concurrent.ConcurrentHashMap<>();
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
    /** The ordered hand-back into the serial region; null if the task has none. */
    private final SerialRegion serialRegion;
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

    @Override
    public String mode() {
        return inline.inline() ? "inline" : serialRegion != null ? "split" : "parallel";
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
    private final org.apache.kafka.common.metrics.Sensor processLatency;

    ShardedTask(StreamShardInstances.Instance instance, StreamTask task, Classification classification,
            org.apache.kafka.common.metrics.Sensor processLatency) {
        this.instance = instance;
        this.processLatency = processLatency;
        this.task = task;
        this.context = task.processorContext;
        this.inline = new InlinePolicy(instance.config.inlineBelowNanos());
        this.maxBacklog = instance.config.maxInflightPerTask();
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

    private ShardExecutor.ShardTask shard() {
        if (shard == null) {
            shard = instance.executor.register(task.id().subtopology(), task.id().partition(),
                    instance.config.unorderedNullKeys());
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
                rethrowFailure(handedOffBefore);
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
            throw asThrownByProcess(e);
        }
    }

    /**
     * What the StreamThread throws for {@code e} from StreamTask.process: a worker's failure as the
     * worker gave it, a StreamsException or a client TimeoutException as it is, anything else
     * wrapped in a StreamsException (see {@link #submit}).
     */
    private RuntimeException asThrownByProcess(RuntimeException e) {
        if (e instanceof ShardTaskFailedException) {
            // A worker failed: its own exception, as the drain does.
            Throwable f = shard == null ? null : shard.failure();
            if (f instanceof StreamsException) {
                return (StreamsException) f;
            }
            return new StreamsException(e.getMessage(), f != null ? f : e, task.id());
        }
        if (e instanceof StreamsException || e instanceof org.apache.kafka.common.errors.TimeoutException) {
            return e;
        }
        return new StreamsException("streamshard: task " + task.id() + ": " + e.getMessage(), e, task.id());
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
        inline.timed(System.nanoTime() - inlineStarted);
        RecordTotals.ranInline();
    }

    private void handOver(StampedRecord record, AbstractPartitionGroup.RecordInfo info, long wallClockTime) {
        ShardExecutor.ShardTask shard = shard();
        @SuppressWarnings("unchecked")
        SourceNode<Object, Object> source = (SourceNode<Object, Object>) info.node();
        ProcessorRecordContext recordContext = StreamShardCompat.COMPAT.context(record);
        // As stock's doProcess: the source node's end-to-end latency, at dequeue, on the StreamThread.
        task.maybeRecordE2ELatency(record.timestamp, wallClockTime, source.name());
        Ticket t = new Ticket(this, source, record.key(), record.value(), recordContext, wallClockTime,
                task.streamTime());
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
                StreamShardInstances.LOG.info("streamshard: task {} runs its records on the StreamThread: {} µs each, "
                        + "below {}", task.id(), average / 1000.0, StreamShardConfig.INLINE_BELOW_US);
                break;
            case TO_WORKERS:
                double share = inline.lastCpuShare();
                StreamShardInstances.LOG.info("streamshard: task {} hands its records to the workers: {} µs each{}",
                        task.id(), inline.lastBlockNanos() / 1000.0, share < 0 ? ""
                                : String.format(" (on the CPU %.0f%% of the time)", 100 * share));
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
                rethrowFailure(failed);
            } catch (org.apache.kafka.common.errors.TimeoutException e) {
                // What stock's process makes of a timeout (a send that timed out, say), which it
                // catches only around the record, not around this call: under exactly-once the
                // task is corrupted (closed dirty and read again from its committed offsets).
                if (instance.eos) {
                    throw new org.apache.kafka.streams.errors.TaskCorruptedException(Set.of(task.id()));
                }
                throw e;
            } catch (RuntimeException e) {
                throw asThrownByProcess(e);
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
            rethrowFailure(shard);
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
            throw new IllegalStateException("streamshard: task " + task.id() + " drained with "
                    + serialRegion.backlog() + " records still before its serial region");
        }
    }

    /** The task leaves the scheduler: drain (clean), or drop queued records and wait for running ones. */
    void close(boolean clean) {
        if (shard != null) {
            closeShard(!clean || shard.failure() != null);
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

    /** {@code FailedProcessingException.failedProcessorNodeName()} (Kafka Streams 4.0+), or null. */
    static String failedNode(RuntimeException e) {
        try {
            return (String) e.getClass().getMethod("failedProcessorNodeName").invoke(e);
        } catch (ReflectiveOperationException | RuntimeException | LinkageError x) {
            return null;
        }
    }

    /** Rethrows a worker's failure unchanged where possible, so the stock error path runs. */
    private static void rethrowFailure(ShardExecutor.ShardTask shard) {
        Throwable f = shard.failure();
        if (f instanceof RuntimeException) {
            throw (RuntimeException) f;
        }
        if (f instanceof Error) {
            throw (Error) f;
        }
        if (f != null) {
            throw new ShardTaskFailedException(shard.id(), f);
        }
    }

    // ---------------------------------------------------------------- one record

    /** A forward into the serial region, captured on a worker. */
    private static final class Parked {
        final ProcessorNode<Object, Object, ?, ?> child;
        final Record<Object, Object> record;
        final ProcessorRecordContext recordContext;
        final long systemTimeMs;

        Parked(ProcessorNode<Object, Object, ?, ?> child, Record<Object, Object> record,
                ProcessorRecordContext recordContext, long systemTimeMs) {
            this.child = child;
            this.record = record;
            this.recordContext = recordContext;
            this.systemTimeMs = systemTimeMs;
        }
    }

    /**
     * One record of the task, from dequeue to the end of its serial part. Built on the
     * StreamThread; its parallel part runs on one worker (or the StreamThread, inline); its
     * serial part on the runner.
     */
    public static final class Ticket extends SerialRegion.Entry implements Runnable {
        private final ShardedTask owner;
        private final SourceNode<Object, Object> source;
        private final Object key;
        private final Object value;
        private final ProcessorRecordContext recordContext;
        private final long wallClockTime;
        /** The task's stream time when the StreamThread dequeued the record. */
        final long streamTime;
        /** Written by the worker running the parallel part, read by the runner after it finished. */
        private ArrayList<Parked> parked;
        /** The parallel part's run time, ns, until the serial part adds its own (SPLIT tasks). */
        private long parallelNanos;
        /** Whether the serial part owes the process-latency sensor this record's whole time. */
        private boolean latencyPending;
        /** The last forward's headers as the parallel node gave them, and the copy parked for them. */
        private Headers lastHeaders;
        private Headers lastCopy;
        private ProcessorRecordContext lastContext;
        private ProcessorRecordContext lastCaptured;

        Ticket(ShardedTask owner, SourceNode<Object, Object> source, Object key, Object value,
                ProcessorRecordContext recordContext, long wallClockTime, long streamTime) {
            this.owner = owner;
            this.source = source;
            this.key = key;
            this.value = value;
            this.recordContext = recordContext;
            this.wallClockTime = wallClockTime;
            this.streamTime = streamTime;
        }

        ShardedTask owner() {
            return owner;
        }

        /** On a worker: the parallel part, then this ticket's turn at the serial runner. */
        @Override
        public void run() {
            RecordTotals.ranOnWorker();
            runParallelPart();
            if (owner.serialRegion != null) {
                owner.serialRegion.finished(this);
            }
        }

        private void runParallelPart() {
            boolean measured = owner.measureLatency();
            boolean inlineTiming = owner.inline.timing();
            boolean timing = inlineTiming || measured;
            long started = timing ? System.nanoTime() : 0;
            StreamShardFrames.push(new StreamShardFrames.Frame(owner.context, recordContext, source, wallClockTime,
                    streamTime, this));
            try {
                source.process(new Record<>(key, value, recordContext.timestamp(), recordContext.headers()));
            } catch (RuntimeException e) {
                throw asStock(e);
            } finally {
                StreamShardFrames.pop();
                if (timing) {
                    long took = System.nanoTime() - started;
                    if (owner.serialRegion != null) {
                        parallelNanos = took; // the whole record is timed once its serial part ran
                        latencyPending = measured;
                    } else {
                        if (inlineTiming) {
                            owner.inline.timed(took);
                        }
                        if (measured) {
                            owner.processLatency.record(took);
                        }
                    }
                }
            }
        }

        /**
         * A worker's forward into a serial-region node: kept for the runner. The headers are
         * copied, because the record goes on through the parallel nodes, which may change them
         * before the serial node (in stock, earlier) sees them.
         */
        @SuppressWarnings("unchecked")
        void park(ProcessorNode<?, ?, ?, ?> child, Record<?, ?> record, StreamShardFrames.Frame frame) {
            // One forward to several serial children shares one copy, as stock's children share
            // one Headers object: what the first child does to it the next one sees.
            ProcessorRecordContext rc = frame.recordContext;
            Headers headers;
            ProcessorRecordContext captured;
            if (record.headers() == lastHeaders && rc == lastContext) {
                headers = lastCopy;
                captured = lastCaptured;
            } else {
                headers = new RecordHeaders(record.headers().toArray());
                captured = rc == null ? null : StreamShardCompat.COMPAT.withHeaders(rc, headers);
                lastHeaders = record.headers();
                lastCopy = headers;
                lastContext = rc;
                lastCaptured = captured;
            }
            if (parked == null) {
                parked = new ArrayList<>(2);
            }
            parked.add(new Parked((ProcessorNode<Object, Object, ?, ?>) child,
                    ((Record<Object, Object>) record).withHeaders(headers), captured, frame.systemTimeMs));
        }

        /** On the runner: what stock's forwardInternal would have done for each parked forward. */
        @Override
        protected void runSerialPart() {
            ArrayList<Parked> p = parked;
            parked = null;
            lastHeaders = null;
            lastCopy = null;
            lastContext = null;
            lastCaptured = null;
            boolean measured = latencyPending;
            latencyPending = false;
            if (p == null) {
                if (owner.inline.timing()) {
                    owner.inline.timed(parallelNanos);
                }
                if (measured) {
                    owner.processLatency.record(parallelNanos);
                }
                return;
            }
            RecordTotals.ranSerialPart();
            long started = owner.inline.timing() || measured ? System.nanoTime() : 0;
            try {
                replay(p);
            } finally {
                if (started != 0) {
                    long whole = parallelNanos + System.nanoTime() - started;
                    if (owner.inline.timing()) {
                        owner.inline.timed(whole);
                    }
                    if (measured) {
                        owner.processLatency.record(whole);
                    }
                }
            }
        }

        /**
         * What stock's {@code StreamTask.process} turns a processing failure into, built here, where
         * the failed record is known: stock formats its message from the task's current record and
         * its context's current node, which on the StreamThread are another record (or none) and
         * null by the time a worker's failure is rethrown there (a NullPointerException that hid the
         * cause). Stock names the node a {@code FailedProcessingException} carries (4.0+), else the
         * context's current node, which its forwards have restored to the source by then.
         */
        private RuntimeException asStock(RuntimeException e) {
            if (e instanceof org.apache.kafka.streams.errors.internals.FailedProcessingException) {
                String message = e.getMessage();
                if (message == null) {
                    String node = failedNode(e);
                    message = stockMessage(node != null ? node : source.name());
                }
                return new StreamsException(message, e.getCause());
            }
            if (e instanceof StreamsException || e instanceof org.apache.kafka.common.errors.TimeoutException) {
                return e; // stock rethrows these as they are
            }
            return new StreamsException(stockMessage(source.name()), e);
        }

        private String stockMessage(String node) {
            return String.format("Exception caught in process. taskId=%s, processor=%s, topic=%s, partition=%d, "
                    + "offset=%d", owner.task.id(), node, recordContext.topic(), recordContext.partition(),
                    recordContext.offset());
        }

        private void replay(ArrayList<Parked> p) {
            for (Parked f : p) {
                StreamShardFrames.push(new StreamShardFrames.Frame(owner.context, f.recordContext, f.child,
                        f.systemTimeMs, streamTime, null));
                try {
                    f.child.process(f.record);
                    if (f.child.isTerminalNode()) {
                        owner.task.maybeRecordE2ELatency(f.record.timestamp(), f.systemTimeMs, f.child.name());
                    }
                } catch (RuntimeException e) {
                    throw asStock(e);
                } finally {
                    StreamShardFrames.pop();
                }
            }
        }
    }
}
