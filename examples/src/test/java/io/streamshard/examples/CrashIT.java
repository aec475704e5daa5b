package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * The app (with the agent) in a child JVM is killed hard while many records are in flight, then
 * restarted: at-least-once means no input record is missing from the output. A commit past
 * unfinished work would lose the records that were running at the kill.
 */
class CrashIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int RECORDS = 4_000;

    private static Process start(
            String appId, String suffix, File stateDir, File log, boolean eos, String protocol, List<String> jvm)
            throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-javaagent:" + System.getProperty("streamshard.agent.jar"));
        cmd.addAll(jvm);
        cmd.add("-Dstreamshard.it.eos=" + eos);
        cmd.add("-Dstreamshard.it.group.protocol=" + protocol);
        cmd.add("-Dstreamshard.it.state.dir=" + stateDir);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(DemoApp.class.getName());
        // Slow enough (5 ms, 8 workers: well over a second of work) that the kill lands mid-stream.
        cmd.addAll(List.of(BOOTSTRAP, appId, suffix, "5", "8"));
        return new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log))
                .start();
    }

    private static long committed(Admin admin, String group, String topic) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> c = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata()
                .get();
        return c.entrySet().stream()
                .filter(e -> e.getKey().topic().equals(topic) && e.getValue() != null)
                .mapToLong(e -> e.getValue().offset())
                .sum();
    }

    @Test
    void killedMidStreamAndRestartedLosesNothing() throws Exception {
        crashAndRestart(false, "classic");
    }

    /** Exactly-once: nothing missing and nothing twice in the committed output. */
    @Test
    void underExactlyOnceKilledAndRestartedLosesAndDuplicatesNothing() throws Exception {
        crashAndRestart(true, "classic");
    }

    /** The same under the streams rebalance protocol (KIP-1071, Kafka Streams 4.2 and later). */
    @Test
    void streamsProtocolKilledAndRestartedLosesNothing() throws Exception {
        StreamsProtocol.assumeSupported();
        crashAndRestart(false, "streams");
    }

    @Test
    void streamsProtocolUnderExactlyOnceKilledAndRestartedLosesAndDuplicatesNothing() throws Exception {
        StreamsProtocol.assumeSupported();
        crashAndRestart(true, "streams");
    }

    /**
     * Exactly-once with retries: one record in five fails its first call and waits 0.2-0.25 s on
     * its key's lane, so the kill lands with records in backoff; the restarted run's service
     * fails them once more. Nothing is missing or twice, counts and totals exact.
     */
    @Test
    void killedWhileRecordsWaitForARetryLosesAndDuplicatesNothing() throws Exception {
        crashAndRestart(
                true,
                "classic",
                List.of(
                        "-Dstreamshard.it.flaky.one.in=5",
                        "-Dstreamshard.retry.max.attempts=3",
                        "-Dstreamshard.retry.backoff.ms=250"));
    }

    /**
     * Exactly-once, commits waiting for no record: one record in 40 takes a second, so at every
     * commit and at the kill some records are running while later ones have finished and hold
     * their sends (a kill between a commit and the release of held sends). Nothing may be lost or
     * duplicated, and counts and totals stay exact.
     */
    @Test
    void underExactlyOnceKilledWhileSlowRecordsHoldTheCommitLosesAndDuplicatesNothing() throws Exception {
        crashAndRestart(true, "classic", List.of("-Dstreamshard.it.slow.one.in=40", "-Dstreamshard.it.slow.ms=1000"));
    }

    private void crashAndRestart(boolean eos, String protocol) throws Exception {
        crashAndRestart(eos, protocol, List.of());
    }

    private void crashAndRestart(boolean eos, String protocol, List<String> jvm) throws Exception {
        String suffix = Inputs.suffix((eos ? "crasheos" : "crash") + protocol.charAt(0) + (jvm.isEmpty() ? "" : "r"));
        String appId = "it" + suffix;
        String input = EnrichmentApp.INPUT + suffix;
        EnrichmentApp.prepare(BOOTSTRAP, suffix, 4, 10_000);
        OrderProducer.Expected expected = OrderProducer.produce(BOOTSTRAP, input, RECORDS, 2_000, 0.8, 13);
        File state = Files.createTempDirectory("streamshard-crash").toFile();
        File log = Files.createTempFile("streamshard-crash", ".log").toFile();

        Process first = start(appId, suffix, state, log, eos, protocol, jvm);
        long atKill;
        Properties props = new Properties();
        props.put("bootstrap.servers", BOOTSTRAP);
        // One admin client, polled often: the kill must land while the first run is mid-stream.
        // A first run that fails the test is killed too: a live child would load the next tests.
        try (Admin admin = Admin.create(props);
                Children.Killer killer = new Children.Killer(first)) {
            long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
            while (committed(admin, appId, input) < RECORDS / 5) {
                assertThat(first.isAlive()).as("first run alive; log %s", log).isTrue();
                assertThat(System.nanoTime())
                        .as("first run made progress; log %s", log)
                        .isLessThan(deadline);
                Thread.sleep(10);
            }
            first.destroyForcibly().waitFor();
            atKill = committed(admin, appId, input);
        }
        assertThat(atKill).as("killed mid-stream").isLessThan(RECORDS);

        Process second = start(appId, suffix, state, log, eos, protocol, jvm);
        try {
            Demo.waitForCommitted(
                    BOOTSTRAP,
                    appId,
                    input,
                    RECORDS,
                    Duration.ofMinutes(3),
                    () -> assertThat(second.isAlive())
                            .as("second run alive; log %s", log)
                            .isTrue());
        } finally {
            second.destroy();
            second.waitFor();
        }
        Children.assertWorkerKind(log);

        // Every (customer, seq) of the input is in the output; per customer the output goes up by
        // one, or starts again lower (a replay after the crash), never skips.
        AtLeastOnceCheck check = AtLeastOnceCheck.of(BOOTSTRAP, EnrichmentApp.ENRICHED + suffix, expected);
        assertThat(check.missing()).as("input records missing from the output").isEmpty();
        assertThat(check.skips()).as("per-customer sequence skipped forward").isEmpty();
        if (eos) {
            assertThat(check.duplicates())
                    .as("records twice in the committed output")
                    .isEmpty();
            assertThat(Demo.verify(BOOTSTRAP, suffix, expected)).isEmpty();
        }
    }
}
