package io.streamshard.runtime;

/**
 * A task's drains (commits, suspends, punctuations, closes, switches to inline: every wait for its
 * handed-out records): how many and how long. Written by the task's StreamThread only, read by
 * the metrics and the status listener on their own threads.
 */
public final class DrainStats {
    private volatile long count;
    private volatile long nanosTotal;
    private volatile long nanosMax;

    /** One drain that took {@code nanos} (ended or thrown). StreamThread only. */
    public void add(long nanos) {
        count++;
        nanosTotal += nanos;
        if (nanos > nanosMax) {
            nanosMax = nanos;
        }
    }

    public long count() {
        return count;
    }

    public long nanosTotal() {
        return nanosTotal;
    }

    public long nanosMax() {
        return nanosMax;
    }
}
