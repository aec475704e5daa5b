package org.apache.kafka.streams.processor.internals;

import io.streamshard.runtime.CommitOrder;
import io.streamshard.runtime.RecordTrace;
import io.streamshard.runtime.RetryPolicy;
import io.streamshard.runtime.SerialRegion;
import io.streamshard.runtime.ShardExecutor;
import io.streamshard.scheduler.RecordTotals;
import java.util.ArrayList;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.errors.StreamsException;
import org.apache.kafka.streams.processor.api.Record;

/**
 * One record of a {@link ShardedTask}, from dequeue to the end of its serial part. Built on the
 * StreamThread; its parallel part runs on one worker; if the task has a serial region, the
 * forwards its parallel nodes make into that region are parked here ({@link #park}) and replayed
 * by the serial runner in dequeue order ({@link #runSerialPart}), with the record context and
 * system time each forward had.
 */
final class Ticket extends SerialRegion.Entry implements ShardExecutor.Retriable, StreamShardFrames.Parking {
    private final ShardedTask owner;
    private final SourceNode<Object, Object> source;
    private final Object key;
    private final Object value;
    private final ProcessorRecordContext recordContext;
    private final long wallClockTime;
    /** The task's stream time when the StreamThread dequeued the record. */
    final long streamTime;
    /** The tracing agent's state of the record (the instance's trace); null: none. */
    final Object traced;
    /** Written by the worker running the parallel part, read by the runner after it finished. */
    private ArrayList<Parked> parked;
    /** The parallel part's run time, ns, until the serial part adds its own (tasks with a serial region). */
    private long parallelNanos;
    /** Whether the serial part owes the process-latency sensor this record's whole time. */
    private boolean latencyPending;
    /** The last forward's headers as the parallel node gave them, and the copy parked for them. */
    private Headers lastHeaders;

    private Headers lastCopy;
    private ProcessorRecordContext lastContext;
    private ProcessorRecordContext lastCaptured;
    /** Attempts of the parallel part made so far (only counted with a retry policy). */
    private int attempts;
    /** The record's headers at its dequeue, for a retry to start from (only with a retry policy). */
    private Header[] headersAtDequeue;
    /** The wait the last attempt asked for before the next, ns; -1: none (it ended). */
    private long retryDelayNanos = -1;
    /** The record's place in its task's commit order; null if every commit of the task drains. */
    CommitOrder.Entry<HeldSend> entry;

    /** A forward into the serial region, captured on a worker. */
    private static final class Parked {
        final ProcessorNode<Object, Object, ?, ?> child;
        final Record<Object, Object> record;
        final ProcessorRecordContext recordContext;
        final long systemTimeMs;

        Parked(
                ProcessorNode<Object, Object, ?, ?> child,
                Record<Object, Object> record,
                ProcessorRecordContext recordContext,
                long systemTimeMs) {
            this.child = child;
            this.record = record;
            this.recordContext = recordContext;
            this.systemTimeMs = systemTimeMs;
        }
    }

    Ticket(
            ShardedTask owner,
            SourceNode<Object, Object> source,
            Object key,
            Object value,
            ProcessorRecordContext recordContext,
            long wallClockTime,
            long streamTime,
            Object traced) {
        this.owner = owner;
        this.source = source;
        this.key = key;
        this.value = value;
        this.recordContext = recordContext;
        this.wallClockTime = wallClockTime;
        this.streamTime = streamTime;
        this.traced = traced;
    }

    /** The ticket of a record the StreamThread hands to the workers, with what its trace carries. */
    static Ticket of(ShardedTask owner, SourceNode<Object, Object> source, StampedRecord record, long wallClockTime) {
        return new Ticket(
                owner,
                source,
                record.key(),
                record.value(),
                StreamShardCompat.COMPAT.context(record),
                wallClockTime,
                owner.task.streamTime(),
                owner.instance.trace == null ? null : owner.instance.trace.handOff());
    }

    /** Dropped unrun by a dirty close (processed again after the restart): its span ends saying so. */
    @Override
    public void dropped() {
        if (traced != null) {
            owner.instance.trace.end(
                    traced,
                    new StreamsException("streamshard: dropped unprocessed by a dirty close of task " + owner.task.id()
                            + "; processed again after its restart"));
        }
    }

    /** On the StreamThread: the record could not be handed over ({@code e}); its span ends with that. */
    void notHandedOver(RuntimeException e) {
        if (traced != null) {
            owner.instance.trace.end(traced, e);
        }
    }

    /**
     * On a worker: the parallel part, then this ticket's turn at the serial runner; or, if the
     * parallel part failed in a way to retry, neither (see {@link #retryDelayNanos()}).
     */
    @Override
    public void run() {
        if (attempts == 0) {
            RecordTotals.ranOnWorker();
        }
        boolean done = traced == null ? runParallelPart() : runParallelPartTraced();
        if (done && owner.serialRegion != null) {
            owner.serialRegion.finished(this); // the entry finishes once its serial part ran
        } else if (done && entry != null) {
            entry.finish();
        }
    }

    /**
     * The parallel part inside the record's trace context; the record's span ends here unless
     * its serial part is still to run (or the part is to run again).
     */
    private boolean runParallelPartTraced() {
        RecordTrace trace = owner.instance.trace;
        Object scope = trace.enter(traced);
        boolean done;
        try {
            done = runParallelPart();
        } catch (RuntimeException e) {
            trace.exit(scope);
            trace.end(traced, e);
            throw e;
        }
        trace.exit(scope);
        if (done && owner.serialRegion == null) {
            trace.end(traced, null);
        }
        return done;
    }

    @Override
    public long retryDelayNanos() {
        long d = retryDelayNanos;
        retryDelayNanos = -1;
        return d;
    }

    /** Runs the parallel part; false if it is to run again after a backoff. */
    private boolean runParallelPart() {
        boolean measured = owner.times.measureLatency();
        long started = measured || owner.times.timing() ? System.nanoTime() : 0;
        RetryPolicy retry = owner.retry;
        ProcessorRecordContext rc = recordContext;
        if (retry != null) {
            // Each attempt starts from the headers the record had at its dequeue, whatever the
            // failed one did to them.
            if (attempts == 0) {
                headersAtDequeue = rc.headers().toArray();
            } else {
                rc = StreamShardCompat.COMPAT.withHeaders(recordContext, new RecordHeaders(headersAtDequeue));
            }
            attempts++;
        }
        StreamShardFrames.Frame frame =
                new StreamShardFrames.Frame(owner.context, rc, source, wallClockTime, streamTime, this);
        frame.retry = retry;
        frame.attempt = attempts;
        holdSendsOn(frame);
        StreamShardFrames.push(frame);
        boolean again = false;
        try {
            source.process(new Record<>(key, value, rc.timestamp(), rc.headers()));
        } catch (StreamShardRetry.RetryLater r) {
            again = true;
            retryDelayNanos = frame.retryDelayNanos;
        } catch (RuntimeException e) {
            throw owner.failure.asStock(e, source.name(), rc);
        } finally {
            StreamShardFrames.pop();
            if (started != 0 && !again) { // a record's latency is that of its last attempt
                long took = System.nanoTime() - started;
                if (owner.serialRegion != null) {
                    parallelNanos = took; // the whole record is timed once its serial part ran
                    latencyPending = measured;
                } else {
                    owner.times.timed(took, measured);
                }
            }
        }
        return !again;
    }

    /** Exactly-once: the frame's sends are held on the record's entry, with its trace. */
    private void holdSendsOn(StreamShardFrames.Frame frame) {
        if (owner.holdSends) {
            frame.hold = entry;
            frame.trace = owner.instance.trace;
            frame.traced = traced;
        }
    }

    @Override
    public boolean parks(ProcessorNode<?, ?, ?, ?> child) {
        return owner.serial(child);
    }

    /**
     * A worker's forward into a serial-region node: kept for the runner. The headers are
     * copied, because the record goes on through the parallel nodes, which may change them
     * before the serial node (in stock, earlier) sees them.
     */
    @Override
    @SuppressWarnings("unchecked")
    public void park(ProcessorNode<?, ?, ?, ?> child, Record<?, ?> record, StreamShardFrames.Frame frame) {
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
        parked.add(new Parked(
                (ProcessorNode<Object, Object, ?, ?>) child,
                ((Record<Object, Object>) record).withHeaders(headers),
                captured,
                frame.systemTimeMs));
    }

    /** On the runner: what stock's forwardInternal would have done for each parked forward. */
    @Override
    protected void runSerialPart() {
        if (traced == null) {
            runSerialPartUntraced();
        } else {
            runSerialPartTraced();
        }
        if (entry != null) {
            entry.finish(); // a commit may cover the record now (a serial part that threw never does)
        }
    }

    private void runSerialPartTraced() {
        RecordTrace trace = owner.instance.trace;
        Object scope = trace.enter(traced);
        try {
            runSerialPartUntraced();
        } catch (RuntimeException e) {
            trace.exit(scope);
            trace.end(traced, e);
            throw e;
        }
        trace.exit(scope);
        trace.end(traced, null);
    }

    private void runSerialPartUntraced() {
        ArrayList<Parked> p = parked;
        parked = null;
        lastHeaders = null;
        lastCopy = null;
        lastContext = null;
        lastCaptured = null;
        boolean measured = latencyPending;
        latencyPending = false;
        if (p == null) {
            owner.times.timed(parallelNanos, measured);
            return;
        }
        RecordTotals.ranSerialPart();
        long started = owner.times.timing() || measured ? System.nanoTime() : 0;
        try {
            replay(p);
        } finally {
            if (started != 0) {
                owner.times.timed(parallelNanos + System.nanoTime() - started, measured);
            }
        }
    }

    private void replay(ArrayList<Parked> p) {
        for (Parked f : p) {
            StreamShardFrames.Frame frame = new StreamShardFrames.Frame(
                    owner.context, f.recordContext, f.child, f.systemTimeMs, streamTime, null);
            // Exactly-once: the serial part's sends are the record's too, held until it retires.
            holdSendsOn(frame);
            StreamShardFrames.push(frame);
            try {
                f.child.process(f.record);
                if (f.child.isTerminalNode()) {
                    owner.task.maybeRecordE2ELatency(f.record.timestamp(), f.systemTimeMs, f.child.name());
                }
            } catch (RuntimeException e) {
                throw owner.failure.asStock(e, source.name(), recordContext);
            } finally {
                StreamShardFrames.pop();
            }
        }
    }
}
