package io.streamshard.scheduler;

import java.util.Objects;

/** Totals over all tasks of a scheduler since it was created. */
public final class Totals {
    private final long submitted;
    private final long finished;
    private final long failures;
    private final long dropped;
    private final long queued;
    private final long running;

    public Totals(long submitted, long finished, long failures, long dropped, long queued, long running) {
        this.submitted = submitted;
        this.finished = finished;
        this.failures = failures;
        this.dropped = dropped;
        this.queued = queued;
        this.running = running;
    }

    public long submitted() {
        return submitted;
    }

    public long finished() {
        return finished;
    }

    public long failures() {
        return failures;
    }

    public long dropped() {
        return dropped;
    }

    public long queued() {
        return queued;
    }

    public long running() {
        return running;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof Totals)) {
            return false;
        }
        Totals other = (Totals) o;
        return Objects.equals(submitted, other.submitted)
                && Objects.equals(finished, other.finished)
                && Objects.equals(failures, other.failures)
                && Objects.equals(dropped, other.dropped)
                && Objects.equals(queued, other.queued)
                && Objects.equals(running, other.running);
    }

    @Override
    public int hashCode() {
        return Objects.hash(submitted, finished, failures, dropped, queued, running);
    }

    @Override
    public String toString() {
        return "Totals[submitted=" + submitted + ", finished=" + finished + ", failures=" + failures + ", dropped="
                + dropped + ", queued=" + queued + ", running=" + running + "]";
    }

    static Totals of(long[] v) {
        return new Totals(v[0], v[1], v[2], v[3], v[4], v[5]);
    }
}
