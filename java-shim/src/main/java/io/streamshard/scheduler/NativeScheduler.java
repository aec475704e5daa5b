package io.streamshard.scheduler;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The native shard scheduler: per-key FIFO, at most one record per key in flight, offset
 * tracking, drain and close, caps. Records stay in the caller's slot table; only numbers cross
 * into native code. See {@code docs/scheduler.md}.
 *
 * <p>Thread safety: every method may be called from any thread. {@link #close()} shuts the
 * scheduler down (blocked pollers return {@link #POLL_SHUTDOWN}), waits until no call is inside
 * native code, and frees it; a call after that throws {@link SchedulerException} instead of
 * touching freed memory.
 */
public final class NativeScheduler implements AutoCloseable {
    /** {@link #submit} accepted the record and there is room for another. */
    public static final int SUBMIT_AVAILABLE = 0;
    /** {@link #submit} accepted the record; the task is now at its cap. */
    public static final int SUBMIT_TASK_FULL = 1;
    /** {@link #submit} accepted the record; the global cap is now reached. */
    public static final int SUBMIT_GLOBAL_FULL = 2;
    /** {@link #submit} refused the record: the task is at its cap. Nothing changed. */
    public static final int SUBMIT_REFUSED_TASK_CAP = -1;
    /** {@link #submit} refused the record: the global cap is reached. Nothing changed. */
    public static final int SUBMIT_REFUSED_GLOBAL_CAP = -2;
    /** {@link #completeAndPoll} answer after {@link #shutdown()}. */
    public static final int POLL_SHUTDOWN = -1;
    /** {@link #completeOneAndPoll} answer when no record became runnable within the timeout. */
    public static final int POLL_NONE = -2;
    /**
     * With external waits, {@link #submit}'s accepted codes carry from this bit up the wake-ups
     * the call owes idle workers ({@link #capacity}, {@link #owedWakes}).
     */
    public static final int SUBMIT_WAKES_SHIFT = 4;
    /** {@link #pollOrIdle}: idle, and no record is in backoff ({@link #dueInNanos}). */
    public static final long IDLE_NOTHING_DUE = Long.MAX_VALUE - 2;
    /** "No offset" in {@link PartitionProgress}. */
    public static final long NO_OFFSET = Long.MIN_VALUE;

    private static final int CLOSED = Integer.MIN_VALUE;

    private final long handle;
    /** Calls inside native code; {@link #CLOSED} is added once the scheduler closes. */
    private final AtomicInteger users = new AtomicInteger();

    private NativeScheduler(long handle) {
        this.handle = handle;
    }

    /**
     * Creates a scheduler.
     *
     * @param maxInflight global cap on unfinished records; slots are {@code 0..maxInflight-1}
     * @param maxInflightPerTask default cap per task
     * @param maxTasks how many tasks may be registered at once
     * @param maxPartitionsPerTask partition numbers a task may use are {@code 0..max-1}
     * @param timingSampleShift time one record in {@code 2^shift} (0 = every record)
     * @throws IllegalArgumentException naming the invalid argument
     */
    public static NativeScheduler create(
            int maxInflight, int maxInflightPerTask, int maxTasks, int maxPartitionsPerTask, int timingSampleShift) {
        return create(maxInflight, maxInflightPerTask, maxTasks, maxPartitionsPerTask, timingSampleShift, false);
    }

    /**
     * {@link #create(int, int, int, int, int)}; with {@code externalWaits} the workers wait for
     * work outside native code ({@link #pollOrIdle}, for virtual threads, which would pin their
     * carrier while blocked in it), and the calls that make work ready answer how many idle
     * workers their caller must wake ({@link #owedWakes}, {@link #fail}, {@link #retry}).
     */
    public static NativeScheduler create(
            int maxInflight,
            int maxInflightPerTask,
            int maxTasks,
            int maxPartitionsPerTask,
            int timingSampleShift,
            boolean externalWaits) {
        NativeLibrary.load();
        long h = create0(
                maxInflight, maxInflightPerTask, maxTasks, maxPartitionsPerTask, timingSampleShift, externalWaits);
        return new NativeScheduler(h);
    }

    private long enter() {
        if (users.incrementAndGet() < 0) {
            users.decrementAndGet();
            throw new SchedulerException("the scheduler is closed");
        }
        return handle;
    }

    private void exit() {
        users.decrementAndGet();
    }

    /** Registers a task; {@code maxInflight <= 0} takes the scheduler's default cap. */
    public long registerTask(int subtopology, int partition, boolean unorderedNullKeys, int maxInflight) {
        long h = enter();
        try {
            return registerTask(h, subtopology, partition, unorderedNullKeys, maxInflight);
        } finally {
            exit();
        }
    }

    /** Forgets a closed task that has nothing queued or running. */
    public void removeTask(long task) {
        long h = enter();
        try {
            removeTask(h, task);
        } finally {
            exit();
        }
    }

    /**
     * Queues a record. Returns one of the {@code SUBMIT_*} codes; refusals for a cap are codes,
     * other refusals (closed or failed task, slot in use, offset not increasing) exceptions. With
     * external waits an accepted code also carries the idle workers to wake ({@link #capacity},
     * {@link #owedWakes}).
     */
    public int submit(long task, int partition, long offset, boolean hasKey, long keyHash, int slot) {
        long h = enter();
        try {
            return submit(h, task, partition, offset, hasKey, keyHash, slot);
        } finally {
            exit();
        }
    }

    /** The {@code SUBMIT_*} code of an accepted {@link #submit}'s answer. */
    public static int capacity(int submitted) {
        return submitted & ((1 << SUBMIT_WAKES_SHIFT) - 1);
    }

    /** How many idle workers an accepted {@link #submit}'s caller must wake (external waits). */
    public static int owedWakes(int submitted) {
        return submitted >>> SUBMIT_WAKES_SHIFT;
    }

    /** Whether the task can take another record now (both caps). */
    public boolean hasCapacity(long task) {
        long h = enter();
        try {
            return hasCapacity(h, task);
        } finally {
            exit();
        }
    }

    /**
     * Waits up to {@code timeoutNanos} until one of {@code tasks[0..count)} has room for a run of
     * records (a quarter of its cap), has failed, or is closed or gone. Returns false on timeout,
     * true otherwise (also after {@link #shutdown()}).
     */
    public boolean waitForRoom(long[] tasks, int count, long timeoutNanos) {
        long h = enter();
        try {
            return waitForRoom(h, tasks, count, timeoutNanos);
        } finally {
            exit();
        }
    }

    /**
     * A worker's call, one record each way, without arrays: completes
     * {@code done} (none if negative), then waits up to {@code timeoutNanos} for one runnable
     * record. Returns its slot, {@link #POLL_NONE} or {@link #POLL_SHUTDOWN}.
     */
    public int completeOneAndPoll(int done, long timeoutNanos) {
        long h = enterPoll();
        if (h == 0) {
            return POLL_SHUTDOWN;
        }
        try {
            return completeOneAndPoll(h, done, timeoutNanos);
        } finally {
            exit();
        }
    }

    /**
     * The worker's call with external waits: completes {@code done} (none if negative) and takes
     * one runnable record without waiting. {@code wasIdle}: this worker's previous answer was
     * idle. The answer: {@link #POLL_SHUTDOWN}; a slot ({@link #polledSlot}) with the idle
     * workers to wake ({@link #polledWakes}); or idle ({@link #isIdle}), the worker counted as
     * idle until its next call, to park until woken or {@link #dueInNanos}.
     */
    public long pollOrIdle(int done, boolean wasIdle) {
        long h = enterPoll();
        if (h == 0) {
            return POLL_SHUTDOWN;
        }
        try {
            return pollOrIdle(h, done, wasIdle);
        } finally {
            exit();
        }
    }

    /** Whether a {@link #pollOrIdle} answer is idle. */
    public static boolean isIdle(long polled) {
        return polled <= POLL_NONE;
    }

    /** The slot of a {@link #pollOrIdle} answer that took one. */
    public static int polledSlot(long polled) {
        return (int) polled;
    }

    /** The idle workers to wake of a {@link #pollOrIdle} answer that took a slot. */
    public static int polledWakes(long polled) {
        return (int) (polled >>> 32);
    }

    /**
     * Of an idle {@link #pollOrIdle} answer: nanoseconds until the earliest record in backoff is
     * due, or {@link #IDLE_NOTHING_DUE}.
     */
    public static long dueInNanos(long polled) {
        return POLL_NONE - polled;
    }

    /** {@link #enter} for a poll: 0 once the scheduler is closed, which a poll answers with {@link #POLL_SHUTDOWN}. */
    private long enterPoll() {
        try {
            return enter();
        } catch (SchedulerException closed) {
            return 0;
        }
    }

    /**
     * Marks a running record failed: the task fails and dispatches nothing more. What the record
     * threw stays in the JVM (the task's {@code ShardExecutor.FailureSink}); the scheduler keeps where.
     * Returns how many idle workers to wake (external waits; otherwise 0).
     */
    public int fail(int slot) {
        long h = enter();
        try {
            return fail(h, slot);
        } finally {
            exit();
        }
    }

    /**
     * Sends a running record back to wait {@code delayNanos} (0: ready at once) before it runs
     * again: its worker is free now, its key's later records keep waiting behind it, and its
     * offset holds the partition's watermark. A drain waits for it; a dropping close drops it.
     * Returns how many idle workers to wake (external waits; otherwise 0).
     */
    public int retry(int slot, long delayNanos) {
        if (delayNanos < 0) {
            throw new IllegalArgumentException("delayNanos must not be negative, got " + delayNanos);
        }
        long h = enter();
        try {
            return retry(h, slot, delayNanos);
        } finally {
            exit();
        }
    }

    /**
     * Waits until the tasks have nothing queued or running.
     *
     * @throws DrainTimeoutException saying how many records remain and where
     * @throws TaskFailedException if one of the tasks failed (once none of its records runs)
     */
    public void drain(long[] tasks, long timeoutMillis) {
        long h = enter();
        try {
            drain(h, tasks, timeoutMillis);
        } finally {
            exit();
        }
    }

    /**
     * Closes a task: it accepts nothing more. With {@link CloseMode#DROP_QUEUED} its queued
     * records are discarded and their slots written to {@code dropped} (followed by -1 if there is
     * room; written even when the wait then fails), then running records are waited for; with
     * {@link CloseMode#DRAIN} every record is. Returns how many were dropped.
     */
    public int closeTask(long task, CloseMode mode, long timeoutMillis, int[] dropped) {
        long h = enter();
        try {
            return close(h, task, mode.code, timeoutMillis, dropped);
        } finally {
            exit();
        }
    }

    /** Where the task first failed (partition, offset, slot), as text, or null. */
    public String failure(long task) {
        long h = enter();
        try {
            return failure(h, task);
        } finally {
            exit();
        }
    }

    /**
     * Marks a running record finished without polling (a worker giving its place up
     * under {@code workers=auto}); the next record of its key becomes runnable. Returns how many
     * idle workers to wake (external waits; otherwise 0).
     */
    public int complete(int slot) {
        long h = enter();
        try {
            return complete(h, slot);
        } finally {
            exit();
        }
    }

    // ---------------------------------------------------------------- for tests only
    // The product calls none of these three (native/jni/src/for_tests.rs on the native side):
    // the batch form of the worker's call and two views of the counters.

    /**
     * Completes {@code done[0..doneCount)}, then waits up to {@code timeoutNanos} for runnable
     * records and writes up to {@code out.length} slots into {@code out}. Returns how many, or
     * {@link #POLL_SHUTDOWN}.
     */
    public int completeAndPoll(int[] done, int doneCount, int[] out, long timeoutNanos) {
        long h = enterPoll();
        if (h == 0) {
            return POLL_SHUTDOWN;
        }
        try {
            return completeAndPoll(h, done, doneCount, out, timeoutNanos);
        } finally {
            exit();
        }
    }

    /** One partition's counters and offsets (see {@link PartitionProgress}). */
    public PartitionProgress partitionProgress(long task, int partition) {
        long[] v = new long[8];
        long h = enter();
        try {
            partitionProgress(h, task, partition, v);
        } finally {
            exit();
        }
        return PartitionProgress.of(v);
    }

    /** The scheduler's totals (see {@link Totals}). */
    public Totals totals() {
        long[] v = new long[6];
        long h = enter();
        try {
            totals(h, v);
        } finally {
            exit();
        }
        return Totals.of(v);
    }

    // ---------------------------------------------------------------- for tests only, end

    /** A copy of every counter, without the scheduler's lock (for metrics: a cold path). */
    public SchedulerMetrics metrics() {
        long h = enter();
        try {
            int rows = 16;
            while (true) {
                long[] v = new long[SchedulerMetrics.HEAD + rows * SchedulerMetrics.ROW];
                int tasks = metrics0(h, v);
                if (tasks <= rows) {
                    return new SchedulerMetrics(v, tasks);
                }
                rows = tasks + 16; // more tasks than rows: once more, with room for them
            }
        } finally {
            exit();
        }
    }

    /** Wakes every blocked poll, drain and close; nothing more is accepted. Idempotent. */
    public void shutdown() {
        long h = enter();
        try {
            shutdown(h);
        } finally {
            exit();
        }
    }

    /**
     * Starts the read-only status listener on {@code address} (host:port) and returns the address
     * it listens on. Started once; a second call returns the first listener's address.
     *
     * @throws SchedulerException with the reason if the address is refused (not loopback without
     *     {@code allowRemote}) or cannot be bound
     */
    public String statusStart(String address, boolean allowRemote) {
        long h = enter();
        try {
            NativeLog.install();
            return statusStart0(h, address, allowRemote);
        } finally {
            exit();
        }
    }

    /** Replaces the status listener's view of the instance (JSON); nothing if it is off. */
    public void statusPush(String json) {
        long h = enter();
        try {
            statusPush0(h, json);
        } finally {
            exit();
        }
    }

    /** Stops the status listener if it is on. */
    public void statusStop() {
        long h = enter();
        try {
            statusStop0(h);
        } finally {
            exit();
        }
    }

    /** Shuts down, waits until no call is inside native code, and frees the scheduler. */
    @Override
    public void close() {
        int before;
        do {
            before = users.get();
            if (before < 0) {
                return; // already closed
            }
        } while (!users.compareAndSet(before, before + CLOSED));
        shutdown(handle);
        while (users.get() != CLOSED) {
            LockSupport.parkNanos(100_000);
        }
        destroy(handle);
    }

    private static native long create0(
            int maxInflight,
            int maxInflightPerTask,
            int maxTasks,
            int maxPartitionsPerTask,
            int timingSampleShift,
            boolean externalWaits);

    private static native void destroy(long h);

    private static native void shutdown(long h);

    private static native long registerTask(
            long h, int subtopology, int partition, boolean unorderedNullKeys, int maxInflight);

    private static native void removeTask(long h, long task);

    private static native int submit(
            long h, long task, int partition, long offset, boolean hasKey, long keyHash, int slot);

    private static native boolean hasCapacity(long h, long task);

    private static native boolean waitForRoom(long h, long[] tasks, int count, long timeoutNanos);

    private static native int completeAndPoll(long h, int[] done, int doneCount, int[] out, long timeoutNanos);

    private static native int completeOneAndPoll(long h, int done, long timeoutNanos);

    private static native int complete(long h, int slot);

    private static native long pollOrIdle(long h, int done, boolean wasIdle);

    private static native int fail(long h, int slot);

    private static native int retry(long h, int slot, long delayNanos);

    private static native void drain(long h, long[] tasks, long timeoutMillis);

    private static native int close(long h, long task, int mode, long timeoutMillis, int[] dropped);

    private static native void partitionProgress(long h, long task, int partition, long[] out);

    private static native String failure(long h, long task);

    private static native void totals(long h, long[] out);

    private static native int metrics0(long h, long[] out);

    private static native String statusStart0(long h, String address, boolean allowRemote);

    private static native void statusPush0(long h, String json);

    private static native void statusStop0(long h);

    /**
     * The calling thread's total time runnable but waiting for a CPU, in ns (Linux's
     * {@code /proc/thread-self/schedstat}, read with one {@code pread} on a descriptor the native
     * library keeps per thread); -1 where that is not available. Needs the native library loaded.
     */
    public static long runQueueWaitNanos() {
        return runQueueWait0();
    }

    private static native long runQueueWait0();
}
