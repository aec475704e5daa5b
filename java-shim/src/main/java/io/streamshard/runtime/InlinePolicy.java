package io.streamshard.runtime;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;

/**
 * When a task runs its records on its StreamThread instead of handing them to workers: while
 * they take less than {@code below} ns each (a moving average), the hand-off costs more than it
 * gives. A task starts inline (nothing of it is on a worker yet, so no drain is needed) and goes
 * to the workers once its records are slow. Going back inline needs a drain first (records on
 * workers must finish), so it waits for {@link #SAMPLES} timed records. Going to the workers needs
 * no wait; it is decided over blocks of {@link #BLOCK} inline records, without the block's slowest
 * one: one stall (a GC pause, a transaction begun, a cold code path) must not send a cheap task to
 * the workers, which would cost a hand-off per record and, {@link #SAMPLES} records later, a drain
 * to come back. The block ends early once its time without the slowest record is more than a full
 * block at twice the mark would take, so records that became slow go back after two of them, not
 * after a block.
 *
 * <p>Going inline also needs the last {@link #SLOW_WINDOW} records to hold at most one that took
 * longer than {@link #SLOW_NANOS} (or 1,000 times the mark): a task whose records mix cheap ones and
 * slow ones (a table bootstrapping beside a stream whose records make a slow call) must stay on
 * the workers, since each slow record run inline stops its StreamThread, every task of it, for the
 * record's whole time; a low average alone sent such tasks inline and back again at every run of
 * cheap records (each time a drain and two slow records on the StreamThread).
 *
 * <p>A slow block whose StreamThread was on the CPU nearly all the time (its records compute,
 * they do not wait) goes to the workers only if the machine has a spare core to run them on:
 * with every core busy (the JIT compiling a young JVM's code, which makes cheap records slow for
 * seconds) a hand-off buys no parallelism and costs CPU. The StreamThread calls {@link #next};
 * any thread calls {@link #timed}.
 */
public final class InlinePolicy {
    /** Records timed before a task may go inline. */
    public static final int SAMPLES = 256;
    /** Inline records per decision to go back to the workers. */
    public static final int BLOCK = 64;
    /** A record this slow (or 1,000 times the mark, if more) counts against going inline. */
    static final long SLOW_NANOS = 10_000_000;
    /** Records among which a second slow one keeps a task on the workers. */
    static final int SLOW_WINDOW = 4 * SAMPLES;
    /** A block computed if its StreamThread was on the CPU at least this share of the time it could have been. */
    static final double COMPUTING = 0.6;
    /** How long a task ready to go inline takes no record while its backlog falls to {@link #BLOCK}. */
    static final long WAIT_MAX_NANOS = 500_000_000L;

    /** What the caller must do for this record. */
    public enum Switch {
        /** Keep the current mode. */
        STAY,
        /** Drain the task, then run records inline. */
        TO_INLINE,
        /** Hand records to workers again. */
        TO_WORKERS
    }

    private final long below;
    private boolean inline;
    /** Whether the current block's start was read on the StreamThread (the first {@link #next} reads it). */
    private boolean blockOpen;
    /** Moving average of the run time, ns (-1: none yet); written racily by the threads that run records. */
    private volatile long avgNanos = -1;
    /** Records timed since the last switch. */
    private volatile int timed;
    /** The current block of inline records (StreamThread only: inline, nothing runs elsewhere). */
    private long blockSum;

    private long blockMax;
    private int blockCount;
    /** The last block's mean without its slowest record, ns (-1: none yet). */
    private long lastBlockNanos = -1;
    /** The StreamThread's run-queue wait and CPU time when the block began, ns (-1: not known), and the clock. */
    private long blockWaitStart = -1;

    private long blockCpuStart = -1;
    private long blockWallStart;
    private double lastCpuShare = -1;
    private final CpuSignals signals;

    /**
     * What the tasks of one sub-topology in one instance (siblings: the same processors on other
     * partitions) share. {@link #onWorkers}: whether they were last seen slow, the last of them to
     * switch went to the workers. A task starts inline; while its siblings are on the workers it
     * follows them at its next record, so a sub-topology with slow records pays the inline start
     * (two slow records on the StreamThread) once, not once per task, and a task created later (a
     * rebalance, a restart after a failure) starts on the workers. And the slow records of all of
     * them (see {@link #SLOW_NANOS}): a task whose own records so far were cheap (a table
     * bootstrapping) does not go inline while its siblings' records show the sub-topology's are
     * slow too.
     */
    public static final class Siblings {
        final AtomicBoolean onWorkers = new AtomicBoolean();
        /** Records timed, and its value at the last two slow ones (racy counts: a heuristic). */
        private volatile long timed;

        private volatile long slowLast = Long.MIN_VALUE / 2;
        private volatile long slowBefore = Long.MIN_VALUE / 2;

        void timed(boolean slow) {
            long n = ++timed;
            if (slow) {
                slowBefore = slowLast;
                slowLast = n;
            }
        }

        /** Whether two of the last {@link #SLOW_WINDOW} records timed were slow. */
        boolean slowOfLate() {
            return timed - slowBefore <= SLOW_WINDOW;
        }
    }

    private final Siblings siblings;
    /** Whether the last switch to the workers followed the siblings (for the log). */
    private boolean followedSiblings;
    /** When the task, ready to go inline, began to wait for its backlog (see {@link #waitingForBacklog}); -1: it does not. */
    private long waitingSince = -1;

    /** @param belowNanos the mark; 0 or less: never inline */
    public InlinePolicy(long belowNanos) {
        this(belowNanos, new Siblings(), CpuSignals.SYSTEM);
    }

    /** @param siblings shared by the tasks of one sub-topology of one instance */
    public InlinePolicy(long belowNanos, Siblings siblings) {
        this(belowNanos, siblings, CpuSignals.SYSTEM);
    }

    InlinePolicy(long belowNanos, CpuSignals signals) {
        this(belowNanos, new Siblings(), signals);
    }

    /**
     * @param signals the calling thread's run-queue wait (a block's records ran on the StreamThread,
     *     and time it spent runnable but not running, with two cores shared with the JIT, the
     *     producer and the broker, is not the records' own), its CPU time, and the machine's spare
     *     cores
     */
    InlinePolicy(long belowNanos, Siblings siblings, CpuSignals signals) {
        this.below = belowNanos;
        this.signals = signals;
        this.siblings = siblings;
        this.inline = belowNanos > 0;
    }

    /** Whether run times are wanted at all. */
    public boolean timing() {
        return below > 0;
    }

    public boolean inline() {
        return inline;
    }

    public long averageNanos() {
        return avgNanos;
    }

    /**
     * After the drain that {@link Switch#TO_INLINE} asks for: forgets what the records that were
     * still on the workers then timed (they ran contended, handed off), so the first block holds
     * only inline records.
     */
    public void drained() {
        newBlock();
    }

    private void newBlock() {
        blockSum = 0;
        blockMax = 0;
        blockCount = 0;
        blockWaitStart = signals.runQueueWait();
        blockCpuStart = signals.threadCpu();
        blockWallStart = signals.nanoTime();
        blockOpen = true;
    }

    /**
     * The share of the block's wall time, less its run-queue wait, that the StreamThread spent on
     * the CPU; -1 where its CPU time is not known.
     */
    private double cpuShare() {
        long cpu = blockCpuStart < 0 ? -1 : signals.threadCpu();
        if (cpu < blockCpuStart) {
            return -1;
        }
        long busy = signals.nanoTime() - blockWallStart;
        long wait = blockWaitStart < 0 ? -1 : signals.runQueueWait();
        if (wait >= blockWaitStart && blockWaitStart >= 0) {
            busy -= wait - blockWaitStart;
        }
        return busy <= 0 ? -1 : (double) (cpu - blockCpuStart) / busy;
    }

    /** The CPU share of the last slow block (see {@link #cpuShare}), -1 if none or not known. */
    public double lastCpuShare() {
        return lastCpuShare;
    }

    /** The block's time without its slowest record and without the thread's run-queue wait. */
    private long blockTime() {
        long t = blockSum - blockMax;
        long now = blockWaitStart < 0 ? -1 : signals.runQueueWait();
        if (now >= blockWaitStart && blockWaitStart >= 0) {
            t -= now - blockWaitStart;
        }
        return Math.max(0, t);
    }

    /** The mean of the last decided block without its slowest record, ns, or -1. */
    public long lastBlockNanos() {
        return lastBlockNanos;
    }

    /** One record's run time. */
    public void timed(long nanos) {
        long a = avgNanos;
        avgNanos = a < 0 ? nanos : a + ((nanos - a) >> 4);
        timed++;
        siblings.timed(nanos > Math.max(SLOW_NANOS, 1_000 * below));
        if (inline) {
            blockSum += nanos;
            blockMax = Math.max(blockMax, nanos);
            blockCount++;
        }
    }

    /** Decides the mode for the next record; the caller acts on a switch (drain first for {@code TO_INLINE}). */
    public Switch next() {
        return next(NONE_HANDED_OFF);
    }

    private static final LongSupplier NONE_HANDED_OFF = () -> 0;

    /**
     * As {@link #next()}, for a task with {@code handedOff} records on the workers (not finished, or
     * not yet retired; asked only when the task would otherwise go inline): it goes inline only once
     * they are at most {@link #BLOCK}, because going
     * inline drains them first, and a backlog that large means the records were not cheap after all
     * (a drain of thousands of queued records behind slow ones stops the StreamThread for seconds).
     */
    public Switch next(LongSupplier handedOff) {
        if (below <= 0) {
            return Switch.STAY;
        }
        long avg = avgNanos;
        if (inline && siblings.onWorkers.get()) {
            followedSiblings = true;
            return toWorkers();
        }
        if (inline) {
            if (!blockOpen) {
                newBlock();
                return Switch.STAY;
            }
            long bound = 2 * below * BLOCK;
            // Cheap test first; the run-queue wait is read only at a block's end or near the bound.
            boolean over = blockSum - blockMax > bound && blockTime() > bound;
            if (blockCount >= BLOCK || over) {
                long time = blockTime();
                lastBlockNanos = blockCount > 1 ? time / (blockCount - 1) : 0;
                boolean slow = over || lastBlockNanos > 2 * below;
                lastCpuShare = slow ? cpuShare() : -1;
                boolean stay = slow && lastCpuShare >= COMPUTING && !signals.spareCore();
                newBlock();
                if (slow && !stay) {
                    followedSiblings = false;
                    siblings.onWorkers.set(true);
                    return toWorkers();
                }
            }
        } else if (timed >= SAMPLES && avg >= 0 && avg < below && !siblings.slowOfLate()) {
            if (handedOff.getAsLong() > BLOCK) {
                if (waitingSince < 0) {
                    waitingSince = signals.nanoTime();
                }
                return Switch.STAY;
            }
            waitingSince = -1;
            inline = true;
            timed = 0;
            siblings.onWorkers.set(false);
            newBlock();
            return Switch.TO_INLINE;
        }
        return Switch.STAY;
    }

    /**
     * Whether the task, ready to go inline but with more than {@link #BLOCK} records handed off,
     * should take no record now: while it takes none the workers work its backlog down, and its
     * StreamThread serves its other tasks instead of draining this one (a task fed faster than its
     * workers run even cheap records keeps its backlog at its cap, and would never go inline). The
     * wait ends when {@link #next} finds the backlog down, or gives up (the task takes records on the
     * workers again, and {@link #SAMPLES} more before it tries again) after {@link #WAIT_MAX_NANOS},
     * or once records no longer look cheap. StreamThread only.
     */
    public boolean waitingForBacklog() {
        if (waitingSince < 0) {
            return false;
        }
        if (avgNanos >= below || siblings.slowOfLate() || signals.nanoTime() - waitingSince > WAIT_MAX_NANOS) {
            waitingSince = -1;
            timed = 0;
            return false;
        }
        return true;
    }

    /** Why the last {@link Switch#TO_WORKERS} was made, for the log. */
    public String whyWorkers() {
        if (followedSiblings) {
            return "as the other tasks of its sub-topology";
        }
        return String.format("%s µs each", lastBlockNanos / 1000.0)
                + (lastCpuShare < 0 ? "" : String.format(" (on the CPU %.0f%% of the time)", 100 * lastCpuShare));
    }

    private Switch toWorkers() {
        inline = false;
        blockOpen = false;
        timed = 0;
        return Switch.TO_WORKERS;
    }
}
