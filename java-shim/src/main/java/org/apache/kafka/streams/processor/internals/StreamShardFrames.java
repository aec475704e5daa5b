package org.apache.kafka.streams.processor.internals;

/**
 * Per-thread processor-context state. A task's {@code ProcessorContextImpl} is one object shared
 * by all its processors, stores and sinks; its {@code recordContext}, {@code currentNode} and
 * cached system time say which record is being processed. A worker running a record of the task
 * pushes a frame for that context: the agent rewrites every read and write of those fields (and
 * the system-time accessors) to go through here, so on the worker they see the worker's own
 * record while the StreamThread keeps using the real fields.
 */
public final class StreamShardFrames {
    private StreamShardFrames() {}

    /** One worker's view of one context. */
    public static final class Frame {
        final Object context;
        ProcessorRecordContext recordContext;
        ProcessorNode<?, ?, ?, ?> currentNode;
        long systemTimeMs;

        Frame(Object context, ProcessorRecordContext recordContext, ProcessorNode<?, ?, ?, ?> node, long systemTimeMs) {
            this.context = context;
            this.recordContext = recordContext;
            this.currentNode = node;
            this.systemTimeMs = systemTimeMs;
        }
    }

    private static final ThreadLocal<Frame> CURRENT = new ThreadLocal<>();

    static void push(Frame f) {
        CURRENT.set(f);
    }

    static void pop() {
        CURRENT.remove();
    }

    /** The calling thread's frame for {@code context}, or null (StreamThread, other contexts). */
    public static Frame of(Object context) {
        Frame f = CURRENT.get();
        return f != null && f.context == context ? f : null;
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
