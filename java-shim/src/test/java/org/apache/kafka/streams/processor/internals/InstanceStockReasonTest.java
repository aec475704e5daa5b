package org.apache.kafka.streams.processor.internals;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** Settings under which an instance stays stock, with the reason its one log line gives. */
class InstanceStockReasonTest {

    @Test
    void verifiedSettingsRunWithStreamshard() {
        assertThat(StreamShardInstances.instanceStockReason(Map.of())).isNull();
        assertThat(StreamShardInstances.instanceStockReason(Map.of("processing.guarantee", "exactly_once_v2")))
                .isNull();
        assertThat(StreamShardInstances.instanceStockReason(Map.of("enable.transactional.statestores", "false")))
                .isNull();
    }

    @Test
    void eosAlphaOf3xStaysStock() {
        assertThat(StreamShardInstances.instanceStockReason(Map.of("processing.guarantee", "exactly_once")))
                .contains("processing.guarantee=exactly_once")
                .contains("exactly_once_v2");
    }

    @Test
    void transactionalStateStoresOf44StayStock() {
        assertThat(StreamShardInstances.instanceStockReason(Map.of("enable.transactional.statestores", true)))
                .contains("enable.transactional.statestores=true");
        assertThat(StreamShardInstances.instanceStockReason(Map.of("enable.transactional.statestores", " TRUE ")))
                .contains("KIP-892");
    }

    @Test
    void processingThreadsStayStock() {
        assertThat(StreamShardInstances.instanceStockReason(Map.of("__processing.threads.enabled__", "true")))
                .contains("processing threads");
    }
}
