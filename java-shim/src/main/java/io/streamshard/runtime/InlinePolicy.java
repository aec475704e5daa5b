package io.streamshard.runtime;

/**
 * When a task runs its records on its StreamThread instead of handing them to workers: while
 * they take less than {@code below} ns each (a moving average), the hand-off costs more than it
 * gives. Going inline needs a drain first (records on workers must finish), so it waits for
 * {@link #SAMPLES} timed records; going back needs no wait and happens at the first average above
 * twice the mark (one slow record lifts it there). The StreamThread calls {@link #next}; any
 * thread calls {@link #timed}.
 */
public final class InlinePolicy {
    /** Records timed before a task may go inline. */
    public static final int SAMPLES = 256;

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

    /** @param belowNanos the mark; 0 or less: never inline */
    public InlinePolicy(long belowNanos) {
        this.below = belowNanos;
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

    /** One record's run time. */
    public void timed(long nanos) {
        long a = avgNanos;
        avgNanos = a < 0 ? nanos : a + ((nanos - a) >> 4);
        timed++;
    }

    /** Decides the mode for the next record; the caller acts on a switch (drain first for {@code TO_INLINE}). */
    public Switch next() {
        if (below <= 0) {
            return Switch.STAY;
        }
        long avg = avgNanos;
        if (inline) {
            if (avg > 2 * below) {
                inline = false;
                timed = 0;
                return Switch.TO_WORKERS;
            }
        } else if (timed >= SAMPLES && avg >= 0 && avg < below) {
            inline = true;
            timed = 0;
            return Switch.TO_INLINE;
        }
        return Switch.STAY;
    }
}
