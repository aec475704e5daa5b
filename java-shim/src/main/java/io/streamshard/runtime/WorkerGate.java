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

    /** Before a record runs: returns its start, ns. */
    long begin() {
        running.incrementAndGet();
        return System.nanoTime();
    }

    /** After it ran ({@code failed}: it threw, or asked for a retry). */
    void end(long start, boolean failed) {
        long took = System.nanoTime() - start;
        limit.sample(took, failed, running.getAndDecrement());
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
