package io.streamshard.examples;

import io.streamshard.StreamShard;
import io.streamshard.examples.CoverageCatalog.Case;
import io.streamshard.examples.CoverageCatalog.Names;
import java.util.Properties;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;

/**
 * One case of {@link CoverageCatalog} as a standalone app, for tests that run it in a child JVM
 * (with the agent) and kill it:
 * {@code CatalogApp <bootstrap> <application-id> <topic-suffix> <output-suffix> <case-id>}.
 * {@code -Dstreamshard.it.eos=true} runs exactly-once v2, {@code -Dstreamshard.it.state.dir} sets
 * the state directory, {@code -Dmatrix.slow.ms} the slow step. Prints its explain once running.
 */
public final class CatalogApp {
    private CatalogApp() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String appId = args[1];
        Case c = CoverageCatalog.byId(args[4]);
        Names names = new Names(args[2], args[3], new MatrixRun.Violations());
        Properties p = MatrixRun.config(bootstrap, appId, true);
        p.put("streamshard.workers", System.getProperty("streamshard.it.workers", "16"));
        p.put("streamshard.max.inflight.per.task", System.getProperty("streamshard.it.max.inflight.per.task", "1000"));
        String stateDir = System.getProperty("streamshard.it.state.dir");
        if (stateDir != null) {
            p.put("state.dir", stateDir);
        }
        // A killed instance's session must expire quickly for the restarted one to get its tasks.
        p.put("main.consumer.session.timeout.ms", "6000");
        p.put("main.consumer.heartbeat.interval.ms", "1000");
        if (Boolean.getBoolean("streamshard.it.eos")) {
            p.put("processing.guarantee", "exactly_once_v2");
        }
        if (!c.parallelProcessors().isEmpty()) {
            p.put("streamshard.parallel.processors", c.parallelProcessors());
        }
        KafkaStreams streams = new KafkaStreams(c.topology().apply(names), p);
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("CatalogApp: StreamThread failed: " + e);
            e.printStackTrace(System.out);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING) {
                System.out.println("CatalogApp: running; active " + StreamShard.active(streams) + ", explain "
                        + StreamShard.explain(streams));
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(streams::close));
        streams.start();
        Thread.currentThread().join();
    }
}
