package io.streamshard.runtime;

import io.streamshard.scheduler.NativeLibrary;
import io.streamshard.scheduler.NativeScheduler;

/**
 * The calling thread's total time runnable but waiting for a CPU, from Linux's
 * {@code /proc/thread-self/schedstat} (its second number, ns), read by the native library (one
 * {@code pread} on a descriptor kept per thread; opening and reading the file from Java cost
 * ~70 µs a time). Read once per block of inline records, never per record. -1 where the file is
 * missing or unreadable (not Linux, or a kernel without schedstats); the inline policy then uses
 * plain run times.
 */
final class RunQueueWait {
    private static volatile boolean unavailable;

    private RunQueueWait() {}

    static long current() {
        if (unavailable) {
            return -1;
        }
        try {
            NativeLibrary.load();
            long ns = NativeScheduler.runQueueWaitNanos();
            if (ns < 0) {
                unavailable = true;
            }
            return ns;
        } catch (RuntimeException | LinkageError e) {
            unavailable = true;
            return -1;
        }
    }
}
