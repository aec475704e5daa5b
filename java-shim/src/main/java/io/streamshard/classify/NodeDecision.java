package io.streamshard.classify;

/** Where one node runs and why. */
public record NodeDecision(Region region, String reason) {
    public enum Region {
        /** On workers, records of different keys at once, one per key at a time. */
        PARALLEL,
        /** In the task's serial region: one record at a time, in the order the StreamThread dequeued them. */
        SERIAL
    }

    public boolean parallel() {
        return region == Region.PARALLEL;
    }

    /** {@code parallel} or {@code serial region: <reason>}. */
    @Override
    public String toString() {
        return parallel() ? "parallel" : "serial region: " + reason;
    }
}
