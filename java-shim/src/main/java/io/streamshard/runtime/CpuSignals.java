package io.streamshard.runtime;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * What the inline policy reads once per block of inline records to tell a record that computes
 * from one that waits, and whether handing computing records to the workers would find a core to
 * run them on. Every reading is -1 (or "yes, a spare core") where the JVM cannot give it, which
 * is the policy's behaviour without these signals.
 */
interface CpuSignals {
    /** The calling thread's total time runnable but waiting for a CPU, ns, or -1. */
    long runQueueWait();

    /** The calling thread's CPU time, ns, or -1. */
    long threadCpu();

    long nanoTime();

    /**
     * Whether the machine (or the container's CPU quota) had at least a quarter of a core idle
     * over the last 200–400 ms. False until such a reading exists (the first call starts one);
     * true where the JVM cannot tell.
     */
    boolean spareCore();

    /** The JVM's readings. */
    CpuSignals SYSTEM = new CpuSignals() {
        @Override
        public long runQueueWait() {
            return RunQueueWait.current();
        }

        @Override
        public long threadCpu() {
            return SystemLoad.threadCpu();
        }

        @Override
        public long nanoTime() {
            return System.nanoTime();
        }

        @Override
        public boolean spareCore() {
            return SystemLoad.spareCore();
        }
    };

    /** The JVM's management beans, loaded on first use (a task whose records never computed for long never needs them). */
    final class SystemLoad {
        private static final long PERIOD_NS = 200_000_000L;
        private static final ThreadMXBean THREADS = threads();
        private static final java.lang.management.OperatingSystemMXBean OS = os();
        private static final int CORES = Runtime.getRuntime().availableProcessors();
        /** When the last reading was taken, ns; 0: none. */
        private static long readAt;

        private static boolean spare;

        private SystemLoad() {}

        private static ThreadMXBean threads() {
            try {
                ThreadMXBean t = ManagementFactory.getThreadMXBean();
                return t.isCurrentThreadCpuTimeSupported() && t.isThreadCpuTimeEnabled() ? t : null;
            } catch (RuntimeException | LinkageError e) {
                return null;
            }
        }

        private static java.lang.management.OperatingSystemMXBean os() {
            try {
                java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
                if (os instanceof com.sun.management.OperatingSystemMXBean) {
                    return os;
                }
            } catch (RuntimeException | LinkageError e) {
                // No reading: every computing block may go to the workers, as without this check.
            }
            return null;
        }

        static long threadCpu() {
            try {
                return THREADS == null ? -1 : THREADS.getCurrentThreadCpuTime();
            } catch (RuntimeException e) {
                return -1;
            }
        }

        @SuppressWarnings("deprecation") // getCpuLoad() is Java 14+; the agent serves Java 11
        static synchronized boolean spareCore() {
            if (OS == null) {
                return true;
            }
            long now = System.nanoTime();
            long since = now - readAt;
            if (readAt != 0 && since < PERIOD_NS) {
                return spare;
            }
            // A reading covers the time since the one before: too long ago (or none), it only
            // starts the next period.
            double load = ((com.sun.management.OperatingSystemMXBean) OS).getSystemCpuLoad();
            boolean fresh = readAt != 0 && since <= 2 * PERIOD_NS;
            readAt = now;
            spare = fresh && (load < 0 || load <= 1.0 - 0.25 / CORES);
            return spare;
        }
    }
}
