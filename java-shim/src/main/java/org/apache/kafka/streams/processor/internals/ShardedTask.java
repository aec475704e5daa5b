package org.apache.kafka.streams.processor.internals;

import io.streamshard.classify.Classification;
import io.streamshard.config.StreamShardConfig;
import io.streamshard.runtime.ShardExecutor;
import io.streamshard.runtime.ShardTaskFailedException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
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
public final class ShardedTask {
    /** How the task runs its next record; decided once per record, on the StreamThread. */
    enum Mode {
        /** Records go to the shard scheduler's workers. */
        WORKERS,
        /** Records run on the StreamThread, whole (cheap records: StreamShardConfig.INLINE_BELOW_US). */
        INLINE
    }

    /** Records timed before a task may switch between workers and its StreamThread. */
    static final int INLINE_SAMPLES = 256;

    final StreamShardInstances.Instance instance;
    final StreamTask task;
    final Classification classification;
    private final InternalProcessorContext<?, ?> context;
    /** The serial-region nodes by identity; null if the task has none. Read by workers. */
    private final Set<ProcessorNode<?, ?, ?, ?>> serialNodes;
    private final Map<TopicPartition, Integer> partitions = new HashMap<>();
    private final long inlineBelowNanos;
    private final int maxBacklog;
    private ShardExecutor.ShardTask shard;
    private Mode mode = Mode.WORKERS;

    /** Moving average of the per-record run time, ns (-1: none yet); updated racily by workers. */
    private volatile long avgNanos = -1;
    /** Records timed since the last switch. */
    private volatile int timed;

    // The serial region. `tail` and `appended` belong to the StreamThread; `head` and `retired`
    // to whichever thread holds the runner (`wip` > 0 taken from 0).
    private Ticket tail = new Ticket(this, null, null, null, null, 0, 0);
    private volatile Ticket head = tail;
    private long appended;
    private volatile long retired;
    private final AtomicInteger wip = new AtomicInteger();

    ShardedTask(StreamShardInstances.Instance instance, StreamTask task, Classification classification) {
        this.instance = instance;
        this.task = task;
        this.classification = classification;
        this.context = task.processorContext;
        this.inlineBelowNanos = instance.config.inlineBelowNanos();
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
        } else {
            serialNodes = null;
        }
    }

    private ShardExecutor.ShardTask shard() {
        if (shard == null) {
            shard = instance.executor.register(task.id().subtopology(), task.id().partition(),
                    instance.config.unorderedNullKeys());
        }
        return shard;
    }

    // ---------------------------------------------------------------- the record path

    /** StreamTask.doProcess entry: true if the record was taken (the stock body is then skipped). */
    public boolean submit(StampedRecord record, AbstractPartitionGroup.RecordInfo info, long wallClockTime) {
        ShardExecutor.ShardTask shard = shard();
        rethrowFailure(shard);
        @SuppressWarnings("unchecked")
        SourceNode<Object, Object> source = (SourceNode<Object, Object>) info.node();
        ProcessorRecordContext recordContext = new ProcessorRecordContext(record.timestamp, record.offset(),
                record.partition(), record.topic(), record.headers(), record.rawKey(), record.rawValue());
        Ticket t = new Ticket(this, source, record.key(), record.value(), recordContext, wallClockTime,
                task.streamTime());
        if (nextMode() == Mode.INLINE) {
            t.runWhole();
            return true;
        }
        if (serialNodes != null) {
            tail.next = t;
            tail = t;
            appended++;
        }
        int partition = partitions.computeIfAbsent(info.partition(), k -> partitions.size());
        long deadline = 0;
        while (!shard.submit(partition, record.offset(), record.rawKey(), t)) {
            // Only when another StreamThread took the last global slots (isProcessable checked).
            if (deadline == 0) {
                deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(instance.config.drainTimeoutMs());
            } else if (System.nanoTime() > deadline) {
                throw new IllegalStateException("streamshard: no capacity for task " + task.id() + " within "
                        + StreamShardConfig.DRAIN_TIMEOUT_MS);
            }
            Thread.onSpinWait();
        }
        return true;
    }

    /**
     * The mode for this record. While the task's records take less than
     * {@code streamshard.inline.below.us} each, the hand-off to a worker costs more than it gives.
     * Switching to the StreamThread first drains the task (both regions), so records of one key
     * never overlap and the serial region stays in order; switching back needs no wait.
     */
    private Mode nextMode() {
        if (inlineBelowNanos <= 0) {
            return mode;
        }
        long avg = avgNanos;
        if (mode == Mode.INLINE) {
            // Back at once: a slow record run inline holds up the StreamThread, and this switch
            // needs no wait. (One slow record lifts the moving average above the mark.)
            if (avg > 2 * inlineBelowNanos) {
                mode = Mode.WORKERS;
                timed = 0;
                StreamShardInstances.LOG.info("streamshard: task {} hands its records to the workers again: {} µs "
                        + "each", task.id(), avg / 1000.0);
            }
        } else if (timed >= INLINE_SAMPLES && avg < inlineBelowNanos) {
            drain();
            mode = Mode.INLINE;
            timed = 0;
            StreamShardInstances.LOG.info("streamshard: task {} runs its records on the StreamThread: {} µs each, "
                    + "below {}", task.id(), avg / 1000.0, StreamShardConfig.INLINE_BELOW_US);
        }
        return mode;
    }

    private void timed(long nanos) {
        long a = avgNanos;
        avgNanos = a < 0 ? nanos : a + ((nanos - a) >> 4);
        timed++;
    }

    /** StreamTask.isProcessable exit: a task at its cap (scheduler or serial backlog) is not processable. */
    public boolean processable() {
        if (shard == null) {
            return true;
        }
        // A failed task stays processable so that the next record rethrows its failure.
        if (shard.failure() != null) {
            return true;
        }
        return shard.hasCapacity() && (serialNodes == null || appended - retired < maxBacklog);
    }

    /** Whether a forward from a worker into {@code child} must be parked for the serial region. Any thread. */
    boolean serial(ProcessorNode<?, ?, ?, ?> child) {
        return serialNodes != null && serialNodes.contains(child);
    }

    // ---------------------------------------------------------------- the serial runner (any thread)

    /**
     * Called by a worker after it finished a ticket's parallel part: runs the serial parts of
     * every finished ticket from the head on, unless another thread holds the runner, which then
     * sees this call (wip) and goes round once more. A failure in the serial region leaves wip
     * taken, so the serial region stops there (the task has failed; nothing after it runs).
     */
    private void advanceSerial() {
        if (wip.getAndIncrement() != 0) {
            return;
        }
        int missed = 1;
        while (true) {
            Ticket h = head;
            Ticket n;
            while ((n = h.next) != null && n.done) {
                n.runSerialPart();
                h = n;
                head = n;
                retired++;
            }
            missed = wip.addAndGet(-missed);
            if (missed == 0) {
                return;
            }
        }
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
        if (shard == null) {
            return;
        }
        try {
            shard.drain();
        } catch (ShardTaskFailedException e) {
            rethrowFailure(shard);
            throw e;
        }
        if (serialNodes != null && head != tail) {
            throw new IllegalStateException("streamshard: task " + task.id() + " drained with "
                    + (appended - retired) + " records still before its serial region");
        }
    }

    /** The task leaves the scheduler: drain (clean), or drop queued records and wait for running ones. */
    void close(boolean clean) {
        if (shard != null) {
            closeShard(!clean || shard.failure() != null);
        }
    }

    private void closeShard(boolean dropQueued) {
        ShardExecutor.ShardTask s = shard;
        shard = null;
        s.close(dropQueued);
        // Whatever was dropped never reaches the serial region; start it afresh.
        Ticket fresh = new Ticket(this, null, null, null, null, 0, 0);
        tail = fresh;
        head = fresh;
        retired = appended;
        wip.set(0);
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

    // ---------------------------------------------------------------- one record

    /** A forward into the serial region, captured on a worker. */
    private record Parked(ProcessorNode<Object, Object, ?, ?> child, Record<Object, Object> record,
            ProcessorRecordContext recordContext, long systemTimeMs) {}

    /**
     * One record of the task, from dequeue to the end of its serial part. Built on the
     * StreamThread; its parallel part runs on one worker (or the StreamThread, inline); its
     * serial part on the runner.
     */
    public static final class Ticket implements Runnable {
        private final ShardedTask owner;
        private final SourceNode<Object, Object> source;
        private final Object key;
        private final Object value;
        private final ProcessorRecordContext recordContext;
        private final long wallClockTime;
        /** The task's stream time when the StreamThread dequeued the record. */
        final long streamTime;
        /** Next ticket in dequeue order (serial region only). */
        volatile Ticket next;
        /** The parallel part finished; {@link #parked} is complete. */
        volatile boolean done;
        /** Written by the worker running the parallel part, read by the runner after {@link #done}. */
        private ArrayList<Parked> parked;

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
            runParallelPart(this);
            if (owner.serialNodes != null) {
                done = true;
                owner.advanceSerial();
            }
        }

        /** On the StreamThread (inline mode): every node, serial ones directly, as stock would. */
        void runWhole() {
            runParallelPart(null);
        }

        private void runParallelPart(Ticket parkOn) {
            boolean timing = owner.inlineBelowNanos > 0;
            long started = timing ? System.nanoTime() : 0;
            StreamShardFrames.push(new StreamShardFrames.Frame(owner.context, recordContext, source, wallClockTime,
                    streamTime, parkOn));
            try {
                source.process(new Record<>(key, value, recordContext.timestamp(), recordContext.headers()));
            } finally {
                StreamShardFrames.pop();
                if (timing) {
                    owner.timed(System.nanoTime() - started);
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
            Headers headers = new RecordHeaders(record.headers().toArray());
            ProcessorRecordContext rc = frame.recordContext;
            ProcessorRecordContext captured = rc == null ? null : new ProcessorRecordContext(rc.timestamp(),
                    rc.offset(), rc.partition(), rc.topic(), headers, rc.sourceRawKey(), rc.sourceRawValue());
            if (parked == null) {
                parked = new ArrayList<>(2);
            }
            parked.add(new Parked((ProcessorNode<Object, Object, ?, ?>) child,
                    ((Record<Object, Object>) record).withHeaders(headers), captured, frame.systemTimeMs));
        }

        /** On the runner: what stock's forwardInternal would have done for each parked forward. */
        void runSerialPart() {
            ArrayList<Parked> p = parked;
            parked = null;
            if (p == null) {
                return;
            }
            for (Parked f : p) {
                StreamShardFrames.push(new StreamShardFrames.Frame(owner.context, f.recordContext(), f.child(),
                        f.systemTimeMs(), streamTime, null));
                try {
                    f.child().process(f.record());
                    if (f.child().isTerminalNode()) {
                        owner.task.maybeRecordE2ELatency(f.record().timestamp(), f.systemTimeMs(), f.child().name());
                    }
                } finally {
                    StreamShardFrames.pop();
                }
            }
        }
    }
}
