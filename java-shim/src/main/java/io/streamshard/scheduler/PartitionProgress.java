package io.streamshard.scheduler;

import java.util.Objects;

/**
 * Counts and commit watermark of one partition of one task. Offsets are
 * {@link NativeScheduler#NO_OFFSET} when there is none.
 *
 * @param lowestUnfinished offset of the first submitted record not yet completed successfully
 * @param committable the offset a consumer may commit: {@code lowestUnfinished}, or one past the
 *     last submitted offset when everything submitted has finished
 */
public final class PartitionProgress {
    private final long submitted;
    private final long queued;
    private final long running;
    private final long finished;
    private final long failed;
    private final long lowestUnfinished;
    private final long lastSubmitted;
    private final long committable;

    public PartitionProgress(
            long submitted,
            long queued,
            long running,
            long finished,
            long failed,
            long lowestUnfinished,
            long lastSubmitted,
            long committable) {
        this.submitted = submitted;
        this.queued = queued;
        this.running = running;
        this.finished = finished;
        this.failed = failed;
        this.lowestUnfinished = lowestUnfinished;
        this.lastSubmitted = lastSubmitted;
        this.committable = committable;
    }

    public long submitted() {
        return submitted;
    }

    public long queued() {
        return queued;
    }

    public long running() {
        return running;
    }

    public long finished() {
        return finished;
    }

    public long failed() {
        return failed;
    }

    public long lowestUnfinished() {
        return lowestUnfinished;
    }

    public long lastSubmitted() {
        return lastSubmitted;
    }

    public long committable() {
        return committable;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof PartitionProgress)) {
            return false;
        }
        PartitionProgress other = (PartitionProgress) o;
        return Objects.equals(submitted, other.submitted)
                && Objects.equals(queued, other.queued)
                && Objects.equals(running, other.running)
                && Objects.equals(finished, other.finished)
                && Objects.equals(failed, other.failed)
                && Objects.equals(lowestUnfinished, other.lowestUnfinished)
                && Objects.equals(lastSubmitted, other.lastSubmitted)
                && Objects.equals(committable, other.committable);
    }

    @Override
    public int hashCode() {
        return Objects.hash(submitted, queued, running, finished, failed, lowestUnfinished, lastSubmitted, committable);
    }

    @Override
    public String toString() {
        return "PartitionProgress[submitted=" + submitted + ", queued=" + queued + ", running=" + running
                + ", finished=" + finished + ", failed=" + failed + ", lowestUnfinished=" + lowestUnfinished
                + ", lastSubmitted=" + lastSubmitted + ", committable=" + committable + "]";
    }

    static PartitionProgress of(long[] v) {
        return new PartitionProgress(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
    }
}
