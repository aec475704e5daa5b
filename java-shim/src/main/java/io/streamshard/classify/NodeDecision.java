package io.streamshard.classify;

import java.util.Objects;

/** Where one node runs and why. */
public final class NodeDecision {
    private final Region region;
    private final String reason;

    public NodeDecision(Region region, String reason) {
        this.region = region;
        this.reason = reason;
    }

    public Region region() {
        return region;
    }

    public String reason() {
        return reason;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof NodeDecision)) {
            return false;
        }
        NodeDecision other = (NodeDecision) o;
        return Objects.equals(region, other.region) && Objects.equals(reason, other.reason);
    }

    @Override
    public int hashCode() {
        return Objects.hash(region, reason);
    }

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
