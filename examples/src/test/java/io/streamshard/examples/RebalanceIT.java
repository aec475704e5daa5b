package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.time.Duration;
import java.util.Properties;
import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.api.Test;

/**
 * A second instance joins mid-stream and leaves again: tasks move between instances twice, each
 * move draining the revoked tasks first. No input record is lost, and per customer the output
 * never skips a sequence number (at-least-once may replay, never lose).
 */
class RebalanceIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int RECORDS = 6_000;

    private static KafkaStreams instance(String appId, String suffix, String protocol) throws Exception {
        Properties p = EnrichmentApp.config(BOOTSTRAP, appId);
        p.put("streamshard.workers", "8");
        p.put("state.dir", Files.createTempDirectory("streamshard-rebalance").toString());
        if (protocol.equals("streams")) {
            p.put("group.protocol", "streams"); // the broker sets the session (tests/broker)
        } else {
            p.put("main.consumer.session.timeout.ms", "6000");
            p.put("main.consumer.heartbeat.interval.ms", "1000");
        }
        return new KafkaStreams(EnrichmentApp.topology(4, suffix), p);
    }

    @Test
    void secondInstanceJoinsAndLeavesWithoutLossOrSkips() throws Exception {
        joinAndLeave("classic");
    }

    /** The same under the streams rebalance protocol (KIP-1071, Kafka Streams 4.2 and later). */
    @Test
    void streamsProtocolSecondInstanceJoinsAndLeavesWithoutLossOrSkips() throws Exception {
        StreamsProtocol.assumeSupported();
        joinAndLeave("streams");
    }

    private void joinAndLeave(String protocol) throws Exception {
        String suffix = Inputs.suffix("rebalance" + protocol.charAt(0));
        String appId = "it" + suffix;
        String input = EnrichmentApp.INPUT + suffix;
        EnrichmentApp.prepare(BOOTSTRAP, suffix, 4, 10_000);
        OrderProducer.Expected expected = OrderProducer.produce(BOOTSTRAP, input, RECORDS, 3_000, 0.8, 21);
        try (KafkaStreams a = instance(appId, suffix, protocol)) {
            a.start();
            Demo.waitForCommitted(BOOTSTRAP, appId, input, RECORDS / 6, Duration.ofMinutes(2), () -> {});
            try (KafkaStreams b = instance(appId, suffix, protocol)) {
                b.start();
                long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
                while (b.metadataForLocalThreads().stream()
                        .allMatch(t -> t.activeTasks().isEmpty())) {
                    assertThat(System.nanoTime())
                            .as("the second instance got tasks")
                            .isLessThan(deadline);
                    Thread.sleep(100);
                }
                Demo.waitForCommitted(BOOTSTRAP, appId, input, RECORDS / 2, Duration.ofMinutes(2), () -> {});
            }
            Demo.waitForCommitted(BOOTSTRAP, appId, input, RECORDS, Duration.ofMinutes(3), () -> {});
        }
        AtLeastOnceCheck check = AtLeastOnceCheck.of(BOOTSTRAP, EnrichmentApp.ENRICHED + suffix, expected);
        assertThat(check.missing()).as("input records missing from the output").isEmpty();
        assertThat(check.skips()).as("per-customer sequence skipped forward").isEmpty();
    }
}
