package org.apache.kafka.streams.processor.internals;

/**
 * Per-thread processor-context state. A task's {@code ProcessorContextImpl} is one object shared
 * by all its processors, stores and sinks; its {@code recordContext}, {@code currentNode} and
 * cached system time say which record is being processed, and {@code currentStreamTimeMs()} what
 * the task's stream time is. A thread running a record of the task for streamshard (a worker, the
 * serial runner, the StreamThread inline) pushes a frame for that context: the agent rewrites
 * every read and write of those fields (and the time accessors) to go through here, so that
 * thread sees its own record while the StreamThread keeps using the real fields.
 */
public final class StreamShardFrames {
    private StreamShardFrames() {}

    /** One thread's view of one context. */
    public static final class Frame {
        final Object context;
        ProcessorRecordContext recordContext;
        ProcessorNode<?, ?, ?, ?> currentNode;
        long systemTimeMs;
        /** The task's stream time when the StreamThread dequeued the record. */
        final long streamTimeMs;
        /** Where forwards into the serial region are parked; null: run every forward directly. */
        final ShardedTask.Ticket parkOn;

        Frame(Object context, ProcessorRecordContext recordContext, ProcessorNode<?, ?, ?, ?> node, long systemTimeMs,
                long streamTimeMs, ShardedTask.Ticket parkOn) {
            this.context = context;
            this.recordContext = recordContext;
            this.currentNode = node;
            this.systemTimeMs = systemTimeMs;
            this.streamTimeMs = streamTimeMs;
            this.parkOn = parkOn;
        }
    }

    private static final ThreadLocal<Frame> CURRENT = new ThreadLocal<>();

    static void push(Frame f) {
        CURRENT.set(f);
    }

    static void pop() {
        // set(null), not remove(): removing would make the next push allocate a map entry.
        CURRENT.set(null);
    }

    /** The calling thread's frame, whichever context it is for, or null. */
    static Frame current() {
        return CURRENT.get();
    }

    /** The calling thread's frame for {@code context}, or null (StreamThread, other contexts). */
    public static Frame of(Object context) {
        Frame f = CURRENT.get();
        return f != null && f.context == context ? f : null;
    }

    /**
     * ProcessorContextImpl.forwardInternal entry: true if this forward goes into the serial region
     * from a worker, in which case it was parked for the serial runner and must not run here.
     */
    public static boolean park(Object context, ProcessorNode<?, ?, ?, ?> child,
            org.apache.kafka.streams.processor.api.Record<?, ?> record) {
        Frame f = of(context);
        if (f == null || f.parkOn == null || !f.parkOn.owner().serial(child)) {
            return false;
        }
        f.parkOn.park(child, record, f);
        return true;
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
