package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.junit.jupiter.api.Test;

/**
 * streamshard's own metrics, in the instance's Kafka Streams registry and on JMX: an app with a
 * parallel sub-topology and a split one (a window in its serial region), run over a known input;
 * the task metrics name each task's mode and count exactly the records sent, the instance
 * metrics the hand-offs, and wait and run times are there.
 */
class StreamShardMetricsIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int RECORDS = 1_000;

    /**
     * Two sub-topologies over {@code a} and {@code w}, each with a 1 ms step: one all parallel
     * (copy to {@code outA}), one split (a windowed count in its serial region, into {@code outW}).
     */
    static void parallelAndSplit(StreamsBuilder b, String a, String w, String outA, String outW) {
        b.stream(a, Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(v -> {
                    Probe.sleep(1);
                    return v;
                })
                .to(outA, Produced.with(Serdes.String(), Serdes.String()));
        b.stream(w, Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(v -> {
                    Probe.sleep(1);
                    return v;
                })
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofSeconds(10)))
                .count()
                .toStream((k, v) -> k.key())
                .to(outW, Produced.with(Serdes.String(), Serdes.Long()));
    }

    @Test
    void taskAndInstanceMetricsCountTheRecordsAndShowOnJmx() throws Exception {
        String suffix = Inputs.suffix("ssmetrics");
        String a = "ssm-a" + suffix;
        String w = "ssm-w" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 2, List.of(a, w, "ssm-a-out" + suffix, "ssm-w-out" + suffix));
        Inputs.produce(BOOTSTRAP, RECORDS, i -> new ProducerRecord<>(a, "k" + (i % 50), Integer.toString(i)));
        Inputs.produce(BOOTSTRAP, RECORDS, i -> new ProducerRecord<>(w, "k" + (i % 50), Integer.toString(i)));
        StreamsBuilder b = new StreamsBuilder();
        parallelAndSplit(b, a, w, "ssm-a-out" + suffix, "ssm-w-out" + suffix);
        String appId = "it" + suffix;
        Properties p = EnrichmentApp.config(BOOTSTRAP, appId);
        p.put("streamshard.workers", "8");
        p.put("streamshard.inline.below.us", "0");
        p.put("state.dir", Files.createTempDirectory("streamshard-ssmetrics").toString());
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            streams.start();
            Demo.waitForCommitted(BOOTSTRAP, appId, a, RECORDS, Duration.ofMinutes(2), () -> {});
            Demo.waitForCommitted(BOOTSTRAP, appId, w, RECORDS, Duration.ofMinutes(2), () -> {});

            Map<String, Map<String, Object>> tasks = new HashMap<>();
            Map<String, Object> instance = new HashMap<>();
            for (Map.Entry<MetricName, ? extends Metric> e : streams.metrics().entrySet()) {
                MetricName m = e.getKey();
                if (m.group().equals("streamshard-task-metrics")) {
                    assertThat(m.tags()).containsKeys("thread-id", "task-id");
                    tasks.computeIfAbsent(m.tags().get("task-id"), k -> new HashMap<>())
                            .put(m.name(), e.getValue().metricValue());
                } else if (m.group().equals("streamshard-metrics")) {
                    assertThat(m.tags()).containsKey("client-id");
                    instance.put(m.name(), e.getValue().metricValue());
                }
            }
            assertThat(tasks.keySet()).containsExactlyInAnyOrder("0_0", "0_1", "1_0", "1_1");
            double completed0 = 0;
            double completed1 = 0;
            for (Map.Entry<String, Map<String, Object>> t : tasks.entrySet()) {
                Map<String, Object> m = t.getValue();
                assertThat(m)
                        .containsKeys(
                                "inline",
                                "serial-region",
                                "queued",
                                "in-flight",
                                "handoffs-total",
                                "completed-total",
                                "completed-rate",
                                "failed-total",
                                "retries-total",
                                "in-backoff",
                                "active-keys",
                                "deepest-key-queue",
                                "serial-backlog",
                                "commit-backlog",
                                "held-bytes",
                                "drain-total",
                                "drain-time-avg-ns",
                                "drain-time-max-ns",
                                "wait-time-avg-ns",
                                "wait-time-max-ns",
                                "run-time-avg-ns",
                                "run-time-max-ns");
                // Each task's own sampled run time: the 1 ms slow step (every 8th record is timed).
                assertThat((Double) m.get("run-time-avg-ns"))
                        .as("run time of %s", t.getKey())
                        .isGreaterThan(500_000);
                assertThat((Double) m.get("run-time-max-ns")).isGreaterThanOrEqualTo((Double) m.get("run-time-avg-ns"));
                assertThat((Double) m.get("wait-time-max-ns")).isGreaterThanOrEqualTo(0);
                // Sub-topology 0 is parallel, 1 has a serial region; the slow step keeps both on the workers.
                assertThat((Double) m.get("serial-region"))
                        .as(t.getKey())
                        .isEqualTo(t.getKey().startsWith("0_") ? 0.0 : 1.0);
                assertThat((Double) m.get("inline")).as(t.getKey()).isZero();
                // Every metric of a task is a number (JMX exporters and the client telemetry drop strings).
                assertThat(m.values()).as(t.getKey()).allMatch(v -> v instanceof Number);
                assertThat((Double) m.get("failed-total")).isZero();
                assertThat((Double) m.get("in-flight"))
                        .as("nothing runs once all is committed")
                        .isZero();
                assertThat((Double) m.get("commit-backlog"))
                        .as("records no commit covers, once all is committed: %s", t.getKey())
                        .isZero();
                assertThat((Double) m.get("held-bytes")).as(t.getKey()).isZero();
                assertThat((Double) m.get("deepest-key-queue")).isGreaterThanOrEqualTo(1);
                if (t.getKey().startsWith("0_")) {
                    completed0 += (Double) m.get("completed-total");
                } else {
                    completed1 += (Double) m.get("completed-total");
                }
            }
            assertThat(completed0).as("records the parallel tasks finished").isEqualTo(RECORDS);
            assertThat(completed1).as("records the split tasks finished").isEqualTo(RECORDS);
            assertThat((Double) instance.get("workers")).isEqualTo(8.0);
            assertThat((Double) instance.get("handoffs-total")).isEqualTo(2.0 * RECORDS);
            assertThat((Double) instance.get("completed-total")).isEqualTo(2.0 * RECORDS);
            assertThat((Double) instance.get("run-time-avg-ns"))
                    .as("sampled run time")
                    .isGreaterThan(500_000);
            assertThat((Double) instance.get("run-time-max-ns")).isGreaterThan(500_000);
            assertThat((Double) instance.get("wait-time-avg-ns")).isGreaterThanOrEqualTo(0);

            // The same on JMX, where Kafka Streams' own reporter puts its registry.
            MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
            Set<ObjectName> names =
                    jmx.queryNames(new ObjectName("kafka.streams:type=streamshard-task-metrics,*"), null);
            assertThat(names).hasSize(4);
            ObjectName one = names.stream()
                    .filter(n -> "0_0".equals(n.getKeyProperty("task-id")))
                    .findFirst()
                    .orElseThrow();
            assertThat(jmx.getAttribute(one, "serial-region")).isEqualTo(0.0);
            assertThat((Double) jmx.getAttribute(one, "completed-total")).isPositive();
            Set<ObjectName> inst = jmx.queryNames(new ObjectName("kafka.streams:type=streamshard-metrics,*"), null);
            assertThat(inst).hasSize(1);
            assertThat((Double) jmx.getAttribute(inst.iterator().next(), "handoffs-total"))
                    .isEqualTo(2.0 * RECORDS);
        }
        // Closed: the instance's metrics are gone with it.
        assertThat(ManagementFactory.getPlatformMBeanServer()
                        .queryNames(new ObjectName("kafka.streams:type=streamshard-task-metrics,*"), null))
                .isEmpty();
    }
}
