package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.StreamShard;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.Test;

/**
 * Kafka Streams' own task process-latency and source-node end-to-end-latency sensors are recorded
 * for the records streamshard runs on its workers, on the same scale as stock records them: the same
 * app runs stock and with streamshard on the same input, and both report the slow step's time.
 */
class StockMetricsIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int RECORDS = 400;
    private static final long SLOW_MS = 3;

    @Test
    void processAndEndToEndLatencyAreRecordedForWorkerRunRecords() throws Exception {
        String suffix = Inputs.suffix("metrics");
        String in = "metrics-in" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 2, List.of(in, "metrics-out" + suffix));
        Inputs.produce(BOOTSTRAP, RECORDS, i -> new ProducerRecord<>(in, "k" + (i % 50), Integer.toString(i)));
        Map<String, Double> stock = run(in, suffix, "stock", false);
        Map<String, Double> shard = run(in, suffix, "ss", true);
        System.out.printf("metrics: stock %s%nmetrics: streamshard %s%n", stock, shard);
        assertThat(stock).containsKey("process-latency-avg");
        assertThat(shard)
                .as("streamshard's task and source-node latency metrics (NaN ones left out)")
                .containsKeys(
                        "process-latency-avg",
                        "process-latency-max",
                        "record-e2e-latency-avg",
                        "record-e2e-latency-max");
        double stockProcess = stock.get("process-latency-avg");
        double shardProcess = shard.get("process-latency-avg");
        assertThat(stockProcess).as("stock process-latency-avg").isGreaterThan(0);
        // The slow step dominates both: the same quantity on the same scale.
        assertThat(shardProcess)
                .as("streamshard process-latency-avg vs stock %s", stockProcess)
                .isBetween(stockProcess * 0.5, stockProcess * 3);
        assertThat(shard.get("process-latency-max")).isGreaterThan(0);
        assertThat(shard.get("record-e2e-latency-avg"))
                .as("source node e2e latency")
                .isGreaterThan(0);
        assertThat(shard.get("record-e2e-latency-max")).isGreaterThanOrEqualTo(shard.get("record-e2e-latency-avg"));
    }

    /** Runs the app over the whole input; the metrics averaged over its tasks (and source nodes). */
    private static Map<String, Double> run(String in, String suffix, String name, boolean streamshard)
            throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(v -> {
                    Probe.sleep(SLOW_MS);
                    return v;
                })
                .to("metrics-out" + suffix, Produced.with(Serdes.String(), Serdes.String()));
        String appId = "it" + suffix + "-" + name;
        Properties p = EnrichmentApp.config(BOOTSTRAP, appId);
        p.put("metrics.recording.level", "DEBUG");
        p.put("streamshard.enabled", Boolean.toString(streamshard));
        p.put("streamshard.workers", "16");
        p.put("streamshard.inline.below.us", "0");
        p.put("state.dir", Files.createTempDirectory("streamshard-metrics").toString());
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            streams.start();
            Demo.waitForCommitted(BOOTSTRAP, appId, in, RECORDS, Duration.ofMinutes(2), () -> {});
            if (streamshard) {
                assertThat(StreamShard.explain(streams))
                        .allSatisfy((t, d) -> assertThat(d).isEqualTo("parallel"));
            }
            Map<String, Double> out = new TreeMap<>();
            Map<String, Integer> n = new TreeMap<>();
            for (Map.Entry<MetricName, ? extends Metric> e : streams.metrics().entrySet()) {
                MetricName m = e.getKey();
                boolean task =
                        m.group().equals("stream-task-metrics") && m.name().startsWith("process-latency-");
                boolean e2e = m.group().equals("stream-processor-node-metrics")
                        && m.name().startsWith("record-e2e-latency-")
                        && m.tags().getOrDefault("processor-node-id", "").startsWith("KSTREAM-SOURCE");
                Object v = e.getValue().metricValue();
                if ((task || e2e) && v instanceof Double && !((Double) v).isNaN()) {
                    out.merge(m.name(), (Double) v, Double::sum);
                    n.merge(m.name(), 1, Integer::sum);
                }
            }
            out.replaceAll((k, v) -> v / n.get(k));
            return out;
        }
    }
}
