package io.streamshard.runtime;

/**
 * When a task runs its records on its StreamThread instead of handing them to workers: while
 * they take less than {@code below} ns each (a moving average), the hand-off costs more than it
 * gives. Going inline needs a drain first (records on workers must finish), so it waits for
 * {@link #SAMPLES} timed records. Going back needs no wait; it is decided over blocks of
 * {@link #BLOCK} inline records, without the block's slowest one: one stall (a GC pause, a
 * transaction begun, a cold code path) must not send a cheap task to the workers, which would cost
 * a hand-off per record and, {@link #SAMPLES} records later, a drain to come back. The block ends
 * early once its time without the slowest record is more than a full block at twice the mark
 * would take, so records that became slow go back after two of them, not after a block. The
 * StreamThread calls {@link #next}; any thread calls {@link #timed}.
 */
public final class InlinePolicy {
    /** Records timed before a task may go inline. */
    public static final int SAMPLES = 256;
    /** Inline records per decision to go back to the workers. */
    public static final int BLOCK = 64;

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
    /** The StreamThread's run-queue wait when the block began, ns (-1: not known). */
    private long blockWaitStart = -1;
    private final java.util.function.LongSupplier runQueueWait;

    /** @param belowNanos the mark; 0 or less: never inline */
    public InlinePolicy(long belowNanos) {
        this(belowNanos, RunQueueWait::current);
    }

    /**
     * @param runQueueWait the calling thread's total time waiting for a CPU, ns, or -1 if unknown:
     *     a block's records ran on the StreamThread, and time it spent runnable but not running
     *     (two cores shared with the JIT, the producer, the broker) is not the records' own
     */
    InlinePolicy(long belowNanos, java.util.function.LongSupplier runQueueWait) {
        this.below = belowNanos;
        this.runQueueWait = runQueueWait;
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
        blockWaitStart = runQueueWait.getAsLong();
    }

    /** The block's time without its slowest record and without the thread's run-queue wait. */
    private long blockTime() {
        long t = blockSum - blockMax;
        long now = blockWaitStart < 0 ? -1 : runQueueWait.getAsLong();
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
        if (inline) {
            blockSum += nanos;
            blockMax = Math.max(blockMax, nanos);
            blockCount++;
        }
    }

    /** Decides the mode for the next record; the caller acts on a switch (drain first for {@code TO_INLINE}). */
    public Switch next() {
        if (below <= 0) {
            return Switch.STAY;
        }
        long avg = avgNanos;
        if (inline) {
            long bound = 2 * below * BLOCK;
            // Cheap test first; the run-queue wait is read only at a block's end or near the bound.
            boolean over = blockSum - blockMax > bound && blockTime() > bound;
            if (blockCount >= BLOCK || over) {
                long time = blockTime();
                lastBlockNanos = blockCount > 1 ? time / (blockCount - 1) : 0;
                newBlock();
                if (over || lastBlockNanos > 2 * below) {
                    inline = false;
                    timed = 0;
                    return Switch.TO_WORKERS;
                }
            }
        } else if (timed >= SAMPLES && avg >= 0 && avg < below) {
            inline = true;
            timed = 0;
            newBlock();
            return Switch.TO_INLINE;
        }
        return Switch.STAY;
    }
}
