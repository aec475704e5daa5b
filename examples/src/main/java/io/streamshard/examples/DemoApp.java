package io.streamshard.examples;

import java.util.Properties;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;

/**
 * The enrichment app with topic names suffixed per run (so stock and streamshard runs do not
 * share topics), as the demo starts it in a child JVM:
 * {@code DemoApp <bootstrap> <application-id> <topic-suffix> <call-ms> <workers>}.
 */
public final class DemoApp {
    private DemoApp() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String appId = args[1];
        String suffix = args[2];
        long callMs = Long.parseLong(args[3]);
        int workers = Integer.parseInt(args[4]);
        Properties p = EnrichmentApp.config(bootstrap, appId);
        p.put("streamshard.workers", Integer.toString(workers));
        if (Boolean.getBoolean("streamshard.demo.default.commit")) {
            p.remove(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG); // Kafka Streams' 30 s
        }
        String status = System.getProperty("streamshard.demo.status");
        if (status != null) {
            p.put("streamshard.status.listener", status);
        }
        // The crash test restarts a killed instance: a short session lets the group move on quickly.
        // (Under the streams rebalance protocol, KIP-1071, the broker sets the session instead.)
        String stateDir = System.getProperty("streamshard.it.state.dir");
        boolean streamsProtocol = "streams".equals(System.getProperty("streamshard.it.group.protocol"));
        if (streamsProtocol) {
            p.put("group.protocol", "streams");
        }
        if (stateDir != null) {
            p.put("state.dir", stateDir);
            if (!streamsProtocol) {
                p.put("main.consumer.session.timeout.ms", "6000");
                p.put("main.consumer.heartbeat.interval.ms", "1000");
            }
        }
        if (Boolean.getBoolean("streamshard.it.eos")) {
            p.put("processing.guarantee", "exactly_once_v2");
        }
        KafkaStreams streams = new KafkaStreams(EnrichmentApp.topology(callMs, suffix), p);
        Runtime.getRuntime().addShutdownHook(new Thread(streams::close));
        streams.start();
        Thread.currentThread().join();
    }
}
