package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class WorkTest {
    @Test
    void parsesTheThreeKinds() {
        assertThat(Work.parse("none")).isEqualTo(new Work(Work.Kind.NONE, 0));
        assertThat(Work.parse("sleep:5000")).isEqualTo(new Work(Work.Kind.SLEEP, 5000));
        assertThat(Work.parse("cpu:200us")).isEqualTo(new Work(Work.Kind.CPU, 200));
    }

    @Test
    void refusesAnythingElse() {
        for (String bad : new String[] {"", "sleep", "spin:5", "sleep:-1", "cpu:x"}) {
            assertThatThrownBy(() -> Work.parse(bad)).as(bad).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void sleepAndCpuLastAtLeastTheirDuration() {
        for (String spec : new String[] {"sleep:3000", "cpu:3000"}) {
            long t = System.nanoTime();
            Work.parse(spec).run();
            assertThat(System.nanoTime() - t).as(spec).isGreaterThanOrEqualTo(3_000_000L);
        }
    }
}
