package org.apache.kafka.streams.processor.internals;

import io.streamshard.runtime.CommitOrder;
import io.streamshard.runtime.RecordTrace;
import io.streamshard.runtime.RetryPolicy;
import io.streamshard.runtime.WorkerThread;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.streams.processor.api.Record;

/**
 * Per-thread processor-context state. A task's {@code ProcessorContextImpl} is one object shared
 * by all its processors, stores and sinks; its {@code recordContext}, {@code currentNode} and
 * cached system time say which record is being processed, and {@code currentStreamTimeMs()} what
 * the task's stream time is. A thread running a record of the task for streamshard (a worker, the
 * serial runner) pushes a frame for that context: the agent rewrites every read and write of
 * those fields (and the time accessors) to go through here, so that thread sees its own record
 * while the StreamThread keeps using the real fields (also for the records it runs inline, with
 * stock's own {@code doProcess}).
 */
public final class StreamShardFrames {
    private StreamShardFrames() {}

    /** Where a frame's forwards into the serial region go: the record's {@link Ticket}. */
    interface Parking {
        /** Whether a forward into {@code child} is parked for the serial runner instead of run. */
        boolean parks(ProcessorNode<?, ?, ?, ?> child);

        /** Keeps the forward of {@code record} into {@code child}, made with {@code frame}. */
        void park(ProcessorNode<?, ?, ?, ?> child, Record<?, ?> record, Frame frame);
    }

    /** One thread's view of one context. */
    public static final class Frame {
        final Object context;
        ProcessorRecordContext recordContext;
        ProcessorNode<?, ?, ?, ?> currentNode;
        long systemTimeMs;
        /** The task's stream time when the StreamThread dequeued the record. */
        final long streamTimeMs;
        /** Where forwards into the serial region are parked; null: run every forward directly. */
        final Parking parkOn;
        /** The retry rule while the record may be retried; null: it never is (no retry, a serial part). */
        RetryPolicy retry;
        /** Which attempt of the record this is, 1 for the first. */
        int attempt;
        /**
         * Whether the record has had an effect a retry would repeat: a state-store write, a
         * forward to a sink, or a forward parked for the serial region.
         */
        boolean effect;
        /** The wait before the next attempt that a retried failure asked for, ns; -1: none. */
        long retryDelayNanos = -1;
        /**
         * Where the record's sends are held until its offset is committed (exactly-once, {@code
         * streamshard.commit.wait=none}); null: sends go to the producer at once.
         */
        CommitOrder.Entry<HeldSend> hold;
        /**
         * The tracing agent's state of the record (its trace), for the held sends: made later on the
         * StreamThread, inside the record's context, as stock makes them inside its process span;
         * null: no agent.
         */
        RecordTrace trace;

        Object traced;

        Frame(
                Object context,
                ProcessorRecordContext recordContext,
                ProcessorNode<?, ?, ?, ?> node,
                long systemTimeMs,
                long streamTimeMs,
                Parking parkOn) {
            this.context = context;
            this.recordContext = recordContext;
            this.currentNode = node;
            this.systemTimeMs = systemTimeMs;
            this.streamTimeMs = streamTimeMs;
            this.parkOn = parkOn;
        }
    }

    /**
     * Frames of threads other than the workers (which keep theirs in a field of their thread):
     * a StreamThread or any other thread that runs a serial part. Every read of a context's
     * fields asks for the calling thread's frame, most of them on StreamThreads that have none,
     * so {@link #OTHERS} counts the frames pushed there and not yet popped, and no thread looks
     * in the ThreadLocal while it is zero (a thread always sees its own push).
     */
    private static final ThreadLocal<Frame> OTHER_THREADS = new ThreadLocal<>();

    private static final AtomicInteger OTHERS = new AtomicInteger();

    /**
     * Frames of virtual threads (virtual workers, {@code streamshard.worker.threads=virtual}),
     * which cannot carry a field of their own: a virtual thread's thread-local lives with it,
     * whichever carrier it runs on.
     */
    private static final ThreadLocal<Frame> VIRTUAL_THREADS = new ThreadLocal<>();

    /** {@code java.lang.VirtualThread}, or null before Java 21. */
    private static final Class<?> VIRTUAL = virtualThreadClass();

    private static Class<?> virtualThreadClass() {
        try {
            return Class.forName("java.lang.VirtualThread", false, null);
        } catch (ClassNotFoundException | LinkageError e) {
            return null;
        }
    }

    static void push(Frame f) {
        Thread t = Thread.currentThread();
        if (t instanceof WorkerThread) {
            ((WorkerThread) t).frame = f;
        } else if (t.getClass() == VIRTUAL) {
            VIRTUAL_THREADS.set(f);
        } else {
            OTHERS.incrementAndGet();
            OTHER_THREADS.set(f);
        }
    }

    static void pop() {
        Thread t = Thread.currentThread();
        if (t instanceof WorkerThread) {
            ((WorkerThread) t).frame = null;
        } else if (t.getClass() == VIRTUAL) {
            VIRTUAL_THREADS.set(null);
        } else {
            // set(null), not remove(): removing would make the next push allocate a map entry.
            OTHER_THREADS.set(null);
            OTHERS.decrementAndGet();
        }
    }

    /** The calling thread's frame, whichever context it is for, or null. */
    static Frame current() {
        Thread t = Thread.currentThread();
        if (t instanceof WorkerThread) {
            return (Frame) ((WorkerThread) t).frame;
        }
        if (t.getClass() == VIRTUAL) {
            return VIRTUAL_THREADS.get();
        }
        return OTHERS.get() == 0 ? null : OTHER_THREADS.get();
    }

    /** The calling thread's frame for {@code context}, or null (StreamThread, other contexts). */
    public static Frame of(Object context) {
        Frame f = current();
        return f != null && f.context == context ? f : null;
    }

    /**
     * ProcessorContextImpl.forwardInternal entry: true if this forward goes into the serial region
     * from a worker, in which case it was parked for the serial runner and must not run here.
     */
    public static boolean park(Object context, ProcessorNode<?, ?, ?, ?> child, Record<?, ?> record) {
        Frame f = of(context);
        if (f == null) {
            return false;
        }
        if (f.parkOn == null || !f.parkOn.parks(child)) {
            if (child instanceof SinkNode) {
                f.effect = true; // a send to a topic
            }
            return false;
        }
        f.effect = true;
        f.parkOn.park(child, record, f);
        return true;
    }

    /** A state-store write by a processor (the store's read-write decorator): an effect of the calling thread's record. */
    public static void wrote() {
        Frame f = current();
        if (f != null) {
            f.effect = true;
        }
    }

    public static ProcessorRecordContext readRecordContext(AbstractProcessorContext<?, ?> ctx) {
        Frame f = of(ctx);
        return f != null ? f.recordContext : ctx.recordContext;
    }

    public static void writeRecordContext(AbstractProcessorContext<?, ?> ctx, ProcessorRecordContext value) {
        Frame f = of(ctx);
        if (f != null) {
            f.recordContext = value;
        } else {
            ctx.recordContext = value;
        }
    }

    public static ProcessorNode<?, ?, ?, ?> readCurrentNode(AbstractProcessorContext<?, ?> ctx) {
        Frame f = of(ctx);
        return f != null ? f.currentNode : ctx.currentNode;
    }

    public static void writeCurrentNode(AbstractProcessorContext<?, ?> ctx, ProcessorNode<?, ?, ?, ?> value) {
        Frame f = of(ctx);
        if (f != null) {
            f.currentNode = value;
        } else {
            ctx.currentNode = value;
        }
    }
}
