package io.streamshard.runtime;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * The ordered hand-back of one task: entries are appended in the order the StreamThread dequeued
 * their records, finish their parallel part on any thread in any order, and have their serial
 * part run strictly in append order, one at a time, by whichever thread finished the entry at the
 * head (or found the runner busy: then the holder goes round once more).
 *
 * <p>Threads: {@link #append} from one thread (the task's StreamThread); {@link #finished} from
 * any. The runner is taken by moving {@code wip} from 0; a serial part that throws leaves it
 * taken, so nothing after a failed entry ever runs (the task has failed).
 *
 * <p>Invariant that makes a drain of the scheduler a drain of this region too: an entry's
 * {@link #finished} returns only after the serial part of every finished entry from the head on has
 * run, or after another thread that holds the runner has been told (wip) to look again; that
 * thread is itself inside a {@link #finished} call.
 *
 * <p>A commit that covers only the records whose serial part ran ({@code streamshard.commit.wait=none})
 * {@link #pause}s the region: the StreamThread waits until no serial part runs, and until it
 * {@link #resume}s, the thread holding the runner waits before its next serial part, inside its
 * own record (so a drain of the scheduler still finds the region empty, and no serial part ever
 * runs on the StreamThread). Parallel parts go on meanwhile. The serial region's nodes, stores and
 * processor metadata are then as the records in the region's order left them, for the commit's
 * flush and offsets, with no other thread inside them.
 */
public final class SerialRegion {
    /** One record's place in the order. */
    public abstract static class Entry {
        volatile Entry next;
        volatile boolean done;

        /** The record's serial part; runs on the runner, never on two threads at once. */
        protected abstract void runSerialPart();
    }

    private static final class Start extends Entry {
        @Override
        protected void runSerialPart() {}
    }

    // `tail` and `appended` belong to the appending thread; `head` and `retired` to the runner.
    private Entry tail;
    private volatile Entry head;
    private long appended;
    private volatile long retired;
    private final AtomicInteger wip = new AtomicInteger();

    // The pause: `paused` is written under `lock`; `runnerWaits` by the runner, under it.
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition resumed = lock.newCondition();
    private volatile boolean paused;
    private volatile boolean runnerWaits;

    public SerialRegion() {
        reset();
    }

    /** Appends the next entry in dequeue order (before its parallel part may start). */
    public void append(Entry e) {
        tail.next = e;
        tail = e;
        appended++;
    }

    /**
     * Marks {@code e}'s parallel part finished and runs every serial part that is now due, unless
     * another thread holds the runner. Rethrows what a serial part throws.
     */
    public void finished(Entry e) {
        e.done = true;
        if (wip.getAndIncrement() != 0) {
            return;
        }
        if (!WorkerGate.timing) {
            runDue();
            return;
        }
        long began = System.nanoTime();
        try {
            runDue();
        } finally {
            WorkerGate.outside(System.nanoTime() - began);
        }
    }

    /** The runner (wip taken): runs every serial part due, until no thread asked it to look again. */
    private void runDue() {
        int missed = 1;
        while (true) {
            Entry h = head;
            Entry n;
            while ((n = h.next) != null && n.done) {
                if (paused) {
                    awaitResume();
                }
                n.runSerialPart();
                h = n;
                head = n;
                retired++;
            }
            missed = wip.addAndGet(-missed);
            if (missed == 0) {
                return;
            }
        }
    }

    /** The runner, before a serial part, while the region is paused: waits for the resume. */
    private void awaitResume() {
        lock.lock();
        try {
            runnerWaits = true;
            while (paused) {
                resumed.awaitUninterruptibly();
            }
        } finally {
            runnerWaits = false;
            lock.unlock();
        }
    }

    /**
     * Stops the region between two serial parts (the appending thread, for a commit): returns true
     * once no serial part runs and none will start before {@link #resume}; false, resumed, if one
     * still runs after {@code timeoutNanos} or {@code failed} says the task failed (a serial part
     * that threw holds the runner for good). A paused region must be resumed before anything waits
     * for the task's records: the runner waits inside one of them.
     */
    public boolean pause(long timeoutNanos, BooleanSupplier failed) {
        lock.lock();
        try {
            paused = true;
        } finally {
            lock.unlock();
        }
        // Paused is written before wip is read, and a runner reads paused after taking wip: if wip
        // is 0 here, the next runner sees paused before its first serial part.
        long deadline = System.nanoTime() + timeoutNanos;
        for (int spins = 0; wip.get() != 0 && !runnerWaits; spins++) {
            if (failed.getAsBoolean() || System.nanoTime() - deadline > 0) {
                resume();
                return false;
            }
            if (spins < 100) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(50));
            }
        }
        return true;
    }

    /** Lets the runner go on (no-op if not paused). */
    public void resume() {
        if (!paused) {
            return;
        }
        lock.lock();
        try {
            paused = false;
            resumed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Whether the region is paused (tests, assertions). */
    public boolean paused() {
        return paused;
    }

    /** Entries appended whose serial part has not run yet (read by the appending thread). */
    public long backlog() {
        return appended - retired;
    }

    /** Whether every appended entry's serial part has run (appending thread, after a drain). */
    public boolean empty() {
        return head == tail;
    }

    /**
     * Forgets every entry (after their records were dropped: a dirty close). Only when no thread
     * is inside {@link #finished}.
     */
    public void reset() {
        resume();
        Entry start = new Start();
        tail = start;
        head = start;
        retired = appended;
        wip.set(0);
    }
}
