package io.streamshard.scheduler;

/**
 * How a task leaves the scheduler: one constant per variant of the native core's {@code
 * CloseMode}, passed down to it by {@link #code} (native/jni/src/lib.rs, {@code close}).
 */
public enum CloseMode {
    /** Every submitted record runs to its end first (a clean close, a recycle). */
    DRAIN(0),
    /** Queued records are dropped and their slots returned; running ones are waited for (a dirty close, a failed task). */
    DROP_QUEUED(1);

    /** The number the native side knows this mode by. */
    final int code;

    CloseMode(int code) {
        this.code = code;
    }
}
