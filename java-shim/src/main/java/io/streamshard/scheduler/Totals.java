package io.streamshard.scheduler;

/** Totals over all tasks of a scheduler since it was created. */
public record Totals(long submitted, long finished, long failures, long dropped, long queued, long running) {

    static Totals of(long[] v) {
        return new Totals(v[0], v[1], v[2], v[3], v[4], v[5]);
    }
}
