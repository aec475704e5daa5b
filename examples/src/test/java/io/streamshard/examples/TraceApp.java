package io.streamshard.examples;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;

/**
 * A plain Streams application whose slow step is an HTTP call (java.net.http) in mapValues, for
 * the tracing tests: each record's value goes to {@code OUT_A} as the service answered, and
 * through a processor of its own (unknown to streamshard: a serial region) to {@code OUT_B}. Runs
 * until it has processed {@code N} records, closes, and waits a moment for a tracing agent to
 * export its last spans.
 *
 * <p>Arguments: BOOTSTRAP APPLICATION_ID IN OUT_A OUT_B URL N GUARANTEE [POISON]: with POISON,
 * the record of that value fails in mapValues, the application stops on the failure (exit 3), and
 * N is not waited for. With {@code -Dtrace.app.attach=JAR}, that agent is attached to this JVM
 * (the Attach API) once half the records are processed, as a platform that adds an agent at run
 * time does: it retransforms the Kafka Streams classes streamshard already instrumented.
 */
public final class TraceApp {
    private TraceApp() {}

    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    static CountDownLatch processed;
    /** While an agent is being attached: records wait in mapValues, so the rest run after it. */
    static volatile boolean hold;

    public static void main(String[] a) throws Exception {
        String url = a[5];
        String poison = a.length > 8 ? a[8] : null;
        processed = new CountDownLatch(Integer.parseInt(a[6]));
        CountDownLatch failed = new CountDownLatch(1);
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> answered = b.stream(a[2], Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(v -> {
                    while (hold) {
                        sleep(5);
                    }
                    if (v.equals(poison)) {
                        throw new IllegalStateException("poison record " + v);
                    }
                    return call(url + "?v=" + v);
                });
        answered.to(a[3], Produced.with(Serdes.String(), Serdes.String()));
        answered.process(Tagged::new).to(a[4], Produced.with(Serdes.String(), Serdes.String()));
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, a[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, a[1]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, a[7]);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        p.put(
                StreamsConfig.STATE_DIR_CONFIG,
                Files.createTempDirectory("trace-app").toString());
        p.put("consumer.auto.offset.reset", "earliest");
        p.put("streamshard.workers", "16");
        KafkaStreams streams = new KafkaStreams(b.build(), p);
        streams.setUncaughtExceptionHandler(e -> {
            failed.countDown();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        String attach = System.getProperty("trace.app.attach");
        if (attach != null) {
            while (processed.getCount() > Integer.parseInt(a[6]) / 2) {
                Thread.sleep(10);
            }
            hold = true;
            com.sun.tools.attach.VirtualMachine vm = com.sun.tools.attach.VirtualMachine.attach(
                    Long.toString(ProcessHandle.current().pid()));
            try {
                vm.loadAgent(attach);
            } finally {
                vm.detach();
                hold = false;
            }
            System.out.println("trace app: attached " + attach + " with " + processed.getCount() + " to go");
        }
        boolean ended = poison == null ? processed.await(120, TimeUnit.SECONDS) : failed.await(120, TimeUnit.SECONDS);
        streams.close(Duration.ofSeconds(60));
        System.out.println("trace app: "
                + (poison != null
                        ? (ended ? "stopped by the poison record" : "no failure")
                        : ended ? "all processed" : processed.getCount() + " not processed"));
        Thread.sleep(1500); // the tracing agent's batch exporter: its last batch
        System.exit(!ended ? 1 : poison != null ? 3 : 0);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static String call(String url) {
        try {
            HttpResponse<String> r = HTTP.send(
                    HttpRequest.newBuilder(URI.create(url)).GET().build(), HttpResponse.BodyHandlers.ofString());
            return r.body();
        } catch (Exception e) {
            throw new IllegalStateException("the call to " + url + " failed", e);
        }
    }

    /** Forwards every record as it is, after counting it: a processor streamshard does not know. */
    static final class Tagged implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(Record<String, String> r) {
            context.forward(r);
            processed.countDown();
        }
    }
}
