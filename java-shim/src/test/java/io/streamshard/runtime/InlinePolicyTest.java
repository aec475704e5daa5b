package io.streamshard.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.runtime.InlinePolicy.Switch;
import org.junit.jupiter.api.Test;

/** The per-task mode switch between workers and the StreamThread. */
class InlinePolicyTest {
    private static void time(InlinePolicy p, int records, long nanos) {
        for (int i = 0; i < records; i++) {
            p.timed(nanos);
        }
    }

    @Test
    void cheapRecordsGoInlineOnlyAfterEnoughSamples() {
        InlinePolicy p = new InlinePolicy(10_000);
        time(p, InlinePolicy.SAMPLES - 1, 2_000);
        assertThat(p.next()).isEqualTo(Switch.STAY);
        assertThat(p.inline()).isFalse();
        time(p, 1, 2_000);
        assertThat(p.next()).isEqualTo(Switch.TO_INLINE);
        assertThat(p.inline()).isTrue();
        assertThat(p.next()).isEqualTo(Switch.STAY);
    }

    @Test
    void oneSlowRecordSendsAnInlineTaskBackAtOnce() {
        InlinePolicy p = new InlinePolicy(10_000);
        time(p, InlinePolicy.SAMPLES, 2_000);
        assertThat(p.next()).isEqualTo(Switch.TO_INLINE);
        time(p, 1, 5_000_000);
        assertThat(p.next()).isEqualTo(Switch.TO_WORKERS);
        assertThat(p.inline()).isFalse();
        // Cheap again: a full set of samples before going inline again (that switch drains).
        time(p, InlinePolicy.SAMPLES - 1, 1_000);
        assertThat(p.next()).isEqualTo(Switch.STAY);
    }

    @Test
    void recordsBetweenTheMarksStayWhereTheyAre() {
        InlinePolicy p = new InlinePolicy(10_000);
        time(p, InlinePolicy.SAMPLES * 4, 15_000);
        assertThat(p.next()).isEqualTo(Switch.STAY);
        assertThat(p.inline()).isFalse();
    }

    @Test
    void zeroMeansAlwaysWorkers() {
        InlinePolicy p = new InlinePolicy(0);
        assertThat(p.timing()).isFalse();
        time(p, InlinePolicy.SAMPLES * 2, 1);
        assertThat(p.next()).isEqualTo(Switch.STAY);
        assertThat(p.inline()).isFalse();
    }
}
