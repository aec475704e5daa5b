package io.streamshard.platform;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The emulated-platform smoke program, run here on the build's own platform so it cannot rot. */
class PlatformSmokeTest {
    @Test
    void runsOnThisPlatform() throws Exception {
        assertThat(PlatformSmoke.run(false))
                .startsWith("streamshard platform smoke: ok on ")
                .contains("committable " + PlatformSmoke.RECORDS);
    }
}
