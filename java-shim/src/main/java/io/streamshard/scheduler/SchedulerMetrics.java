package io.streamshard.scheduler;

import java.util.Collections;
import java.util.HashMap;
import java.util.Map;

/**
 * A copy of the scheduler's counters, read without its lock: totals, the sampled wait (submit to
 * dispatch) and run (dispatch to complete) times, and per live task its counters. The values are
 * each exact but may be a few records apart from one another.
 */
public final class SchedulerMetrics {
    /** Longs before the task rows, and per row (the layout of {@code metrics0}). */
    static final int HEAD = 13;
    static final int ROW = 18;

    public final Totals totals;
    public final long waitCount;
    public final long waitSumNanos;
    public final long waitMaxNanos;
    public final long runCount;
    public final long runSumNanos;
    public final long runMaxNanos;
    private final Map<Long, Task> tasks;

    /** One task's counters. */
    public static final class Task {
        public final int subtopology;
        public final int partition;
        public final boolean closed;
        public final boolean failed;
        public final long queued;
        public final long running;
        public final long submitted;
        public final long finished;
        public final long failures;
        public final long dropped;
        public final long activeKeys;
        public final long maxKeyDepth;
        /** Sampled times of this task's records: submit to dispatch, and dispatch to complete, ns. */
        public final long waitCount;
        public final long waitSumNanos;
        public final long waitMaxNanos;
        public final long runCount;
        public final long runSumNanos;
        public final long runMaxNanos;

        Task(long[] v, int at) {
            subtopology = (int) v[at];
            partition = (int) v[at + 1];
            closed = v[at + 2] != 0;
            failed = v[at + 3] != 0;
            queued = v[at + 4];
            running = v[at + 5];
            submitted = v[at + 6];
            finished = v[at + 7];
            failures = v[at + 8];
            dropped = v[at + 9];
            activeKeys = v[at + 10];
            maxKeyDepth = v[at + 11];
            waitCount = v[at + 12];
            waitSumNanos = v[at + 13];
            waitMaxNanos = v[at + 14];
            runCount = v[at + 15];
            runSumNanos = v[at + 16];
            runMaxNanos = v[at + 17];
        }

        public double waitMeanNanos() {
            return waitCount == 0 ? Double.NaN : (double) waitSumNanos / waitCount;
        }

        public double runMeanNanos() {
            return runCount == 0 ? Double.NaN : (double) runSumNanos / runCount;
        }
    }

    SchedulerMetrics(long[] v, int written) {
        totals = Totals.of(v);
        waitCount = v[6];
        waitSumNanos = v[7];
        waitMaxNanos = v[8];
        runCount = v[9];
        runSumNanos = v[10];
        runMaxNanos = v[11];
        Map<Long, Task> m = new HashMap<>();
        for (int i = 0; i < written; i++) {
            Task t = new Task(v, HEAD + i * ROW);
            if (!t.closed) {
                m.put(key(t.subtopology, t.partition), t);
            }
        }
        tasks = Collections.unmodifiableMap(m);
    }

    /** No tasks, nothing counted (before the first copy, or once the scheduler is closed). */
    public static SchedulerMetrics empty() {
        return new SchedulerMetrics(new long[HEAD], 0);
    }

    /** The live (not closed) task, or null. */
    public Task task(int subtopology, int partition) {
        return tasks.get(key(subtopology, partition));
    }

    public int taskCount() {
        return tasks.size();
    }

    /** Mean sampled wait, ns; NaN before any sample. */
    public double waitMeanNanos() {
        return waitCount == 0 ? Double.NaN : (double) waitSumNanos / waitCount;
    }

    /** Mean sampled run time, ns; NaN before any sample. */
    public double runMeanNanos() {
        return runCount == 0 ? Double.NaN : (double) runSumNanos / runCount;
    }

    private static long key(int subtopology, int partition) {
        return (long) subtopology << 32 | (partition & 0xffffffffL);
    }
}
