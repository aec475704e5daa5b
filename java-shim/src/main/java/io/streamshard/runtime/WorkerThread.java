package io.streamshard.runtime;

/**
 * A streamshard worker. It carries the processor-context frame of the record it runs in a plain
 * field ({@code StreamShardFrames}), read on every access the processors make to their context:
 * cheaper than a {@code ThreadLocal} lookup, and only this thread writes or reads it.
 */
public final class WorkerThread extends Thread {
    /** The frame of the record this worker runs (a {@code StreamShardFrames.Frame}), or null. */
    public Object frame;

    public WorkerThread(Runnable body, String name) {
        super(body, name);
    }
}
