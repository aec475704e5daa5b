package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Settings streamshard has not verified leave the instance stock, with one WARN naming the reason:
 * 3.x's exactly_once (per-task producers) and 4.4's transactional state stores (KIP-892). Each runs
 * only on the versions that have the setting (on others Kafka Streams rejects or ignores it).
 * No broker needed.
 */
class StockSettingsIT {

    private static String create(String... settings) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-javaagent:" + System.getProperty("streamshard.agent.jar"),
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-Dorg.slf4j.simpleLogger.log.io.streamshard=info",
                "-cp",
                System.getProperty("java.class.path"),
                CreateOnlyMain.class.getName()));
        cmd.addAll(List.of(settings));
        return AgentStartIT.run(cmd);
    }

    @Test
    void eosAlphaOf3xRunsStock() throws Exception {
        Assumptions.assumeTrue(StreamsProtocol.version().startsWith("3."), "exactly_once exists in 3.x only");
        String out = create("processing.guarantee=exactly_once");
        assertThat(out)
                .contains("streamshard active: false")
                .contains("processing.guarantee=exactly_once (the deprecated per-task producers of 3.x)")
                .contains("runs stock");
        assertThat(create("processing.guarantee=exactly_once_v2")).contains("streamshard active: true");
    }

    @Test
    void transactionalStateStoresOf44RunStock() throws Exception {
        Assumptions.assumeTrue(StreamsProtocol.version().compareTo("4.4") >= 0, "KIP-892 stores exist from 4.4");
        String out = create("enable.transactional.statestores=true");
        assertThat(out)
                .contains("streamshard active: false")
                .contains("enable.transactional.statestores=true (KIP-892 transaction buffers)")
                .contains("runs stock");
        assertThat(create("enable.transactional.statestores=false")).contains("streamshard active: true");
    }
}
