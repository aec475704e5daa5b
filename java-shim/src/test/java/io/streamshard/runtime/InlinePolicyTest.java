package io.streamshard.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.runtime.InlinePolicy.Switch;
import org.junit.jupiter.api.Test;

/** The per-task mode switch between workers and the StreamThread. */
class InlinePolicyTest {
    /** Readings the test sets; -1: not known. */
    static final class Signals implements CpuSignals {
        long wait = -1;
        long cpu = -1;
        long now;
        boolean spare = true;

        @Override
        public long runQueueWait() {
            return wait;
        }

        @Override
        public long threadCpu() {
            return cpu;
        }

        @Override
        public long nanoTime() {
            return now;
        }

        @Override
        public boolean spareCore() {
            return spare;
        }
    }

    private static void time(InlinePolicy p, int records, long nanos) {
        for (int i = 0; i < records; i++) {
            p.timed(nanos);
        }
    }

    private static InlinePolicy policy() {
        return new InlinePolicy(10_000, new Signals());
    }

    /** A policy whose task went to the workers (it starts inline): two slow records. */
    private static InlinePolicy onWorkers(InlinePolicy p) {
        assertThat(p.inline()).isTrue();
        assertThat(p.next()).isEqualTo(Switch.STAY);
        time(p, 2, 5_000_000);
        assertThat(p.next()).isEqualTo(Switch.TO_WORKERS);
        return p;
    }

    /**
     * Tasks of one sub-topology share whether they were last seen slow: once one goes to the
     * workers, an inline sibling follows at its next record and a new one starts there, without
     * two slow records of its own on the StreamThread; once one comes back inline (cheap records),
     * new siblings start inline again.
     */
    @Test
    void siblingsFollowTheLastSwitchOfTheirSubTopology() {
        InlinePolicy.Siblings shared = new InlinePolicy.Siblings();
        InlinePolicy first = new InlinePolicy(10_000, shared, new Signals());
        InlinePolicy second = new InlinePolicy(10_000, shared, new Signals());
        assertThat(second.next()).isEqualTo(Switch.STAY);
        time(second, 1, 5_000_000);
        assertThat(second.next()).as("one slow record of its own").isEqualTo(Switch.STAY);
        onWorkers(first);
        assertThat(second.next()).as("follows its sibling").isEqualTo(Switch.TO_WORKERS);
        assertThat(second.inline()).isFalse();
        assertThat(second.whyWorkers()).isEqualTo("as the other tasks of its sub-topology");
        assertThat(first.whyWorkers()).endsWith("µs each");
        InlinePolicy later = new InlinePolicy(10_000, shared, new Signals());
        assertThat(later.next())
                .as("a task created later starts on the workers")
                .isEqualTo(Switch.TO_WORKERS);
        time(first, InlinePolicy.SAMPLES, 2_000);
        assertThat(first.next()).isEqualTo(Switch.TO_INLINE);
        InlinePolicy afterCheap = new InlinePolicy(10_000, shared, new Signals());
        assertThat(afterCheap.next()).as("after a sibling came back inline").isEqualTo(Switch.STAY);
        assertThat(afterCheap.inline()).isTrue();
        assertThat(second.inline())
                .as("a sibling on the workers decides for itself")
                .isFalse();
    }

    @Test
    void cheapRecordsGoInlineOnlyAfterEnoughSamples() {
        InlinePolicy p = onWorkers(policy());
        time(p, InlinePolicy.SAMPLES - 1, 2_000);
        assertThat(p.next()).isEqualTo(Switch.STAY);
        assertThat(p.inline()).isFalse();
        time(p, 1, 2_000);
        assertThat(p.next()).isEqualTo(Switch.TO_INLINE);
        assertThat(p.inline()).isTrue();
        assertThat(p.next()).isEqualTo(Switch.STAY);
    }

    @Test
    void cheapRecordsAmongSlowOnesKeepATaskOnTheWorkers() {
        // A table bootstrapping beside a slow stream: a 200 ms record in every 200, cheap ones
        // otherwise. The moving average is low most of the time, but each slow record inline
        // would stop the StreamThread for 200 ms.
        InlinePolicy p = onWorkers(policy());
        for (int i = 0; i < 40 * InlinePolicy.SAMPLES; i++) {
            p.timed(i % 200 == 0 ? 200_000_000 : 1_000);
            assertThat(p.next()).as("record %d", i).isEqualTo(Switch.STAY);
        }
        // Once the slow records stop, one of them left among the last SAMPLES is a stall, not a
        // slow stream: the task goes inline.
        time(p, InlinePolicy.SLOW_WINDOW / 2, 1_000);
        p.timed(200_000_000);
        time(p, InlinePolicy.SLOW_WINDOW / 2, 1_000);
        assertThat(p.next()).isEqualTo(Switch.TO_INLINE);
    }

    @Test
    void aTaskWhoseSiblingsRunSlowRecordsDoesNotGoInlineOnCheapOnesOfItsOwn() {
        InlinePolicy.Siblings shared = new InlinePolicy.Siblings();
        InlinePolicy slowOne = new InlinePolicy(10_000, shared, new Signals());
        InlinePolicy cheapOne = new InlinePolicy(10_000, shared, new Signals());
        onWorkers(slowOne);
        assertThat(cheapOne.next()).isEqualTo(Switch.TO_WORKERS);
        time(slowOne, 2, 200_000_000);
        time(cheapOne, InlinePolicy.SAMPLES, 1_000);
        assertThat(cheapOne.next()).as("a sibling's records are slow").isEqualTo(Switch.STAY);
        time(slowOne, InlinePolicy.SLOW_WINDOW, 1_000);
        assertThat(cheapOne.next()).isEqualTo(Switch.TO_INLINE);
    }

    @Test
    void aTaskWithABacklogOnTheWorkersWaitsForItBeforeGoingInline() {
        InlinePolicy p = onWorkers(policy());
        assertThat(p.waitingForBacklog()).isFalse();
        time(p, InlinePolicy.SAMPLES, 2_000);
        assertThat(p.next(() -> InlinePolicy.BLOCK + 1))
                .as("no drain of a large backlog")
                .isEqualTo(Switch.STAY);
        assertThat(p.waitingForBacklog())
                .as("the task takes no record meanwhile")
                .isTrue();
        assertThat(p.next(() -> InlinePolicy.BLOCK)).isEqualTo(Switch.TO_INLINE);
        assertThat(p.waitingForBacklog()).isFalse();
    }

    /**
     * A task waiting for its backlog gives up after {@link InlinePolicy#WAIT_MAX_NANOS}, or at once
     * when its records stop looking cheap, and then needs {@link InlinePolicy#SAMPLES} records
     * before it waits again: a backlog that does not go down was not cheap.
     */
    @Test
    void aTaskGivesUpWaitingForABacklogThatStays() {
        Signals s = new Signals();
        InlinePolicy p = onWorkers(new InlinePolicy(10_000, s));
        time(p, InlinePolicy.SAMPLES, 2_000);
        assertThat(p.next(() -> 1_000)).isEqualTo(Switch.STAY);
        s.now += InlinePolicy.WAIT_MAX_NANOS;
        assertThat(p.waitingForBacklog()).isTrue();
        s.now += 1;
        assertThat(p.waitingForBacklog()).isFalse();
        assertThat(p.next(() -> 0)).as("samples again first").isEqualTo(Switch.STAY);
        time(p, InlinePolicy.SAMPLES, 2_000);
        assertThat(p.next(() -> 1_000)).isEqualTo(Switch.STAY);
        assertThat(p.waitingForBacklog()).isTrue();
        time(p, 64, 1_000_000);
        assertThat(p.waitingForBacklog()).as("the records ended slow").isFalse();
        assertThat(p.next(() -> 0)).isEqualTo(Switch.STAY);
    }

    @Test
    void oneStallDoesNotSendAnInlineTaskBack() {
        InlinePolicy p = onWorkers(policy());
        time(p, InlinePolicy.SAMPLES, 2_000);
        assertThat(p.next()).isEqualTo(Switch.TO_INLINE);
        for (int block = 0; block < 4; block++) {
            // One 50 ms stall per block, cheap records otherwise: it stays inline.
            time(p, 1, 50_000_000);
            for (int i = 1; i < InlinePolicy.BLOCK; i++) {
                p.timed(2_000);
                assertThat(p.next()).isEqualTo(Switch.STAY);
            }
            assertThat(p.lastBlockNanos()).isEqualTo(2_000);
        }
        assertThat(p.inline()).isTrue();
    }

    @Test
    void recordsStillOnTheWorkersAtTheSwitchDoNotCount() {
        InlinePolicy p = onWorkers(policy());
        time(p, InlinePolicy.SAMPLES, 2_000);
        assertThat(p.next()).isEqualTo(Switch.TO_INLINE);
        // The drain: records handed off before the switch end now, slow (they ran contended).
        time(p, 8, 3_000_000);
        p.drained();
        time(p, 1, 2_000);
        assertThat(p.next()).isEqualTo(Switch.STAY);
        assertThat(p.inline()).isTrue();
    }

    @Test
    void slowRecordsSendAnInlineTaskBackAfterTwo() {
        InlinePolicy p = onWorkers(policy());
        time(p, InlinePolicy.SAMPLES, 2_000);
        assertThat(p.next()).isEqualTo(Switch.TO_INLINE);
        time(p, 10, 2_000);
        assertThat(p.next()).isEqualTo(Switch.STAY);
        time(p, 1, 5_000_000);
        assertThat(p.next()).isEqualTo(Switch.STAY);
        time(p, 1, 5_000_000);
        assertThat(p.next()).isEqualTo(Switch.TO_WORKERS);
        assertThat(p.inline()).isFalse();
        // Cheap again: a full set of samples before going inline again (that switch drains).
        time(p, InlinePolicy.SAMPLES - 1, 1_000);
        assertThat(p.next()).isEqualTo(Switch.STAY);
    }

    @Test
    void aTenthOfRecordsSlowSendsAnInlineTaskBack() {
        // A cache in front of a 5 ms call that misses one time in ten: on average far above the mark.
        InlinePolicy p = onWorkers(policy());
        time(p, InlinePolicy.SAMPLES, 2_000);
        assertThat(p.next()).isEqualTo(Switch.TO_INLINE);
        Switch last = Switch.STAY;
        for (int i = 0; i < InlinePolicy.BLOCK && last == Switch.STAY; i++) {
            p.timed(i % 10 == 9 ? 5_000_000 : 1_000);
            last = p.next();
        }
        assertThat(last).isEqualTo(Switch.TO_WORKERS);
    }

    @Test
    void aSlowerBlockOnAverageSendsAnInlineTaskBack() {
        InlinePolicy p = onWorkers(policy());
        time(p, InlinePolicy.SAMPLES, 2_000);
        assertThat(p.next()).isEqualTo(Switch.TO_INLINE);
        // 25 µs each: over twice the mark; decided within one block (early, once the block's time
        // is past a whole block at twice the mark), not at the first record.
        Switch last = Switch.STAY;
        int n = 0;
        while (last == Switch.STAY && n < 2 * InlinePolicy.BLOCK) {
            p.timed(25_000);
            n++;
            last = p.next();
        }
        assertThat(last).isEqualTo(Switch.TO_WORKERS);
        assertThat(n).isBetween(InlinePolicy.BLOCK / 2, InlinePolicy.BLOCK);
    }

    @Test
    void recordsBetweenTheMarksStayWhereTheyAre() {
        InlinePolicy p = onWorkers(policy());
        time(p, InlinePolicy.SAMPLES * 4, 15_000);
        assertThat(p.next()).isEqualTo(Switch.STAY);
        assertThat(p.inline()).isFalse();
    }

    @Test
    void timeWaitingForACpuIsNotTheRecords() {
        // The StreamThread was runnable but not running for most of the block (a busy machine):
        // its records are cheap all the same.
        Signals s = new Signals();
        s.wait = 0;
        InlinePolicy p = onWorkers(new InlinePolicy(10_000, s));
        time(p, InlinePolicy.SAMPLES, 2_000);
        assertThat(p.next()).isEqualTo(Switch.TO_INLINE);
        for (int i = 0; i < InlinePolicy.BLOCK; i++) {
            p.timed(40_000); // 2 µs of its own, 38 µs waiting for a CPU
            s.wait += 38_000;
            assertThat(p.next()).isEqualTo(Switch.STAY);
        }
        assertThat(p.lastBlockNanos()).isBetween(1_000L, 3_000L);
        // Without the wait the same block goes back to the workers.
        InlinePolicy q = onWorkers(policy());
        time(q, InlinePolicy.SAMPLES, 2_000);
        assertThat(q.next()).isEqualTo(Switch.TO_INLINE);
        Switch last = Switch.STAY;
        for (int i = 0; i < InlinePolicy.BLOCK && last == Switch.STAY; i++) {
            q.timed(40_000);
            last = q.next();
        }
        assertThat(last).isEqualTo(Switch.TO_WORKERS);
    }

    @Test
    void aTaskStartsInlineAndCheapRecordsNeverLeave() {
        InlinePolicy p = policy();
        assertThat(p.inline()).isTrue();
        for (int i = 0; i < InlinePolicy.SAMPLES * 4; i++) {
            assertThat(p.next()).isEqualTo(Switch.STAY);
            p.timed(3_000);
        }
        assertThat(p.inline()).isTrue();
        assertThat(p.lastBlockNanos()).isEqualTo(3_000);
    }

    /** Runs one inline record after another until the policy switches or {@code max} ran. */
    private static Switch runInline(InlinePolicy p, Signals s, int max, long nanos, boolean computing) {
        for (int i = 0; i < max; i++) {
            Switch sw = p.next();
            if (sw != Switch.STAY) {
                return sw;
            }
            s.now += nanos;
            if (computing) {
                s.cpu += nanos;
            }
            p.timed(nanos);
        }
        return Switch.STAY;
    }

    /** Readings from a thread whose CPU time is known, on a machine with no spare core. */
    private static Signals busyMachine() {
        Signals s = new Signals();
        s.cpu = 0;
        s.wait = 0;
        s.spare = false;
        return s;
    }

    @Test
    void computingRecordsStayInlineWhileNoCoreIsSpare() {
        // A young JVM: the JIT keeps every core busy and a cheap record computes for 40 µs.
        Signals s = busyMachine();
        InlinePolicy p = new InlinePolicy(10_000, s);
        assertThat(runInline(p, s, 10 * InlinePolicy.BLOCK, 40_000, true)).isEqualTo(Switch.STAY);
        assertThat(p.inline()).isTrue();
        assertThat(p.lastCpuShare())
                .as("a slow block was decided, and it computed")
                .isGreaterThanOrEqualTo(0.99);
        // A core comes free: computing records that slow are worth a hand-off now.
        s.spare = true;
        assertThat(runInline(p, s, InlinePolicy.BLOCK, 40_000, true)).isEqualTo(Switch.TO_WORKERS);
        assertThat(p.inline()).isFalse();
    }

    @Test
    void waitingRecordsGoToTheWorkersEvenWithNoCoreSpare() {
        // 40 µs each, but the thread is off the CPU for them (a remote call): the workers overlap the waits.
        Signals s = busyMachine();
        InlinePolicy p = new InlinePolicy(10_000, s);
        assertThat(runInline(p, s, InlinePolicy.BLOCK, 40_000, false)).isEqualTo(Switch.TO_WORKERS);
        assertThat(p.lastCpuShare()).isZero();
    }

    @Test
    void withoutTheThreadsCpuTimeSlowRecordsGoToTheWorkers() {
        Signals s = new Signals();
        s.spare = false;
        InlinePolicy p = new InlinePolicy(10_000, s);
        assertThat(runInline(p, s, InlinePolicy.BLOCK, 40_000, true)).isEqualTo(Switch.TO_WORKERS);
    }

    @Test
    void theJvmGivesTheThreadsCpuTime() {
        long a = CpuSignals.SYSTEM.threadCpu();
        assertThat(a).isPositive();
        long x = 0;
        for (int i = 0; i < 5_000_000; i++) {
            x += Long.hashCode(x * 31 + i);
        }
        assertThat(CpuSignals.SYSTEM.threadCpu()).as("after computing " + x).isGreaterThan(a);
        // The first reading of the machine's load only starts a period.
        assertThat(CpuSignals.SYSTEM.spareCore()).isFalse();
    }

    @Test
    void theRunQueueWaitIsReadOnLinux() {
        long a = RunQueueWait.current();
        assertThat(a).isGreaterThanOrEqualTo(0); // CI and this project run on Linux
        assertThat(RunQueueWait.current()).isGreaterThanOrEqualTo(a);
    }

    @Test
    void zeroMeansAlwaysWorkers() {
        InlinePolicy p = new InlinePolicy(0, new Signals());
        assertThat(p.timing()).isFalse();
        time(p, InlinePolicy.SAMPLES * 2, 1);
        assertThat(p.next()).isEqualTo(Switch.STAY);
        assertThat(p.inline()).isFalse();
    }
}
