package io.streamshard.runtime;

import java.util.concurrent.atomic.AtomicInteger;

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
        int missed = 1;
        while (true) {
            Entry h = head;
            Entry n;
            while ((n = h.next) != null && n.done) {
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
        Entry start = new Start();
        tail = start;
        head = start;
        retired = appended;
        wip.set(0);
    }
}
