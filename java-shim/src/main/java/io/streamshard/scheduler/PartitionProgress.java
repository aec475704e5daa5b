package io.streamshard.scheduler;

/**
 * Counts and commit watermark of one partition of one task. Offsets are
 * {@link NativeScheduler#NO_OFFSET} when there is none.
 *
 * @param lowestUnfinished offset of the first submitted record not yet completed successfully
 * @param committable the offset a consumer may commit: {@code lowestUnfinished}, or one past the
 *     last submitted offset when everything submitted has finished
 */
public record PartitionProgress(
        long submitted,
        long queued,
        long running,
        long finished,
        long failed,
        long lowestUnfinished,
        long lastSubmitted,
        long committable) {

    static PartitionProgress of(long[] v) {
        return new PartitionProgress(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
    }
}
