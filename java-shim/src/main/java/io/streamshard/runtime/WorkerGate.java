package io.streamshard.runtime;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * {@code streamshard.workers=auto}: at most {@link AdaptiveLimit#limit} workers take records at
 * once. A worker {@link #enter}s before its first poll and holds its place while it polls and
 * runs; when the limit has come down below the workers holding a place, as many as are over it
 * {@link #leaveIfOver} after their record and wait in {@link #enter} again. The records on the
 * workers are so at most the limit, within one record's time of a decrease (a worker idle in its
 * poll when the limit fell may take one more record first). Only places count: which worker holds
 * one does not matter. The lock is held for waits and limit changes only, not per record.
 */
final class WorkerGate {
    private final AdaptiveLimit limit;
    private final AtomicInteger active = new AtomicInteger();
    private final AtomicInteger running = new AtomicInteger();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition room = lock.newCondition();
    private volatile boolean closed;
    private volatile int allowed;

    WorkerGate(AdaptiveLimit limit) {
        timing = true;
        this.limit = limit;
        this.allowed = limit.limit();
    }

    AdaptiveLimit limit() {
        return limit;
    }

    /** Workers holding a place now. */
    int active() {
        return active.get();
    }

    /** Records running now. */
    int running() {
        return running.get();
    }

    /** Waits for a place; false once the gate is closed (the worker ends). */
    boolean enter() {
        lock.lock();
        try {
            while (true) {
                if (closed) {
                    return false;
                }
                int a = active.get();
                if (a < allowed && active.compareAndSet(a, a + 1)) {
                    return true;
                }
                if (a >= allowed) {
                    room.awaitUninterruptibly();
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** Gives the place up if more workers hold one than the limit allows; true if it did. */
    boolean leaveIfOver() {
        while (true) {
            int a = active.get();
            if (a <= allowed) {
                return false;
            }
            if (active.compareAndSet(a, a - 1)) {
                return true;
            }
        }
    }

    /** Sets the places allowed (the limit's new value); wakes waiting workers if it grew. */
    void allow(int n) {
        lock.lock();
        try {
            boolean grew = n > allowed;
            allowed = n;
            if (grew) {
                room.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Before a record runs: returns its start on {@link #clock}. */
    long begin() {
        running.incrementAndGet();
        return clock();
    }

    /** After it ran ({@code failed}: it threw, or asked for a retry). */
    void end(long start, boolean failed) {
        long took = clock() - start;
        limit.sample(took, failed, running.getAndDecrement());
    }

    /**
     * Whether any gate exists: only then do serial regions time what they run for {@link
     * #outside} (the cost of two clock readings a record).
     */
    static volatile boolean timing;

    /** Per thread: time spent in a task's serial region, ns, since the thread began. */
    private static final ThreadLocal<long[]> OUTSIDE = ThreadLocal.withInitial(() -> new long[1]);

    /**
     * Time the calling worker spent outside the slow step, in a task's serial region: running the
     * serial parts due (its record's and the records' before it that it found finished), or
     * waiting there for a commit's pause to end. It is the task's ordered local work, not the
     * downstream's: counted in a record's run time, a commit's pause would read as a queue at the
     * service, and a runner's turn at the region as latency of its own call.
     */
    static void outside(long nanos) {
        OUTSIDE.get()[0] += nanos;
    }

    /** The calling thread's clock for run times: wall time less its time in serial regions. */
    static long clock() {
        return System.nanoTime() - OUTSIDE.get()[0];
    }

    /** Ends every wait in {@link #enter}, now and later. */
    void close() {
        lock.lock();
        try {
            closed = true;
            room.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** How often the limit's thread looks whether a window is due. */
    static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
}
