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

    static final int ROW = 20;

    public final Totals totals;
    /** Sampled times from hand-off to dispatch, and from dispatch to completion, all tasks. */
    public final Times wait;

    public final Times run;
    private final Map<Long, Task> tasks;

    /** Count, sum and largest of sampled durations, ns. */
    public static final class Times {
        public final long count;
        public final long sumNanos;
        public final long maxNanos;

        Times(long[] v, int at) {
            count = v[at];
            sumNanos = v[at + 1];
            maxNanos = v[at + 2];
        }

        /** NaN before any sample. */
        public double meanNanos() {
            return count == 0 ? Double.NaN : (double) sumNanos / count;
        }
    }

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
        /** Records sent back to wait for a retry, and those waiting for it now (one a key). */
        public final long retries;

        public final long backoff;
        /** Sampled times of this task's records: hand-off to dispatch, and dispatch to completion. */
        public final Times wait;

        public final Times run;

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
            wait = new Times(v, at + 12);
            run = new Times(v, at + 15);
            retries = v[at + 18];
            backoff = v[at + 19];
        }
    }

    SchedulerMetrics(long[] v, int written) {
        totals = Totals.of(v);
        wait = new Times(v, 6);
        run = new Times(v, 9);
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

    private static long key(int subtopology, int partition) {
        return (long) subtopology << 32 | (partition & 0xffffffffL);
    }
}
