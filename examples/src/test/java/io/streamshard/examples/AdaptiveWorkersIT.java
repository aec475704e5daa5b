package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.function.IntPredicate;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.Test;

/**
 * {@code streamshard.workers=auto} against a downstream with a capacity ({@link CapacityService}:
 * an HTTP service on loopback serving N calls at once at a fixed latency, queueing or rejecting
 * the rest): the limit settles near N without building the service a queue, follows a capacity
 * that halves mid-run, holds near N when the service answers 429 past it, does not grow for a hot
 * key, and settles near the cores for work that computes. In every run each record reaches the
 * output once, in per-key order (exactly-once in the run whose capacity halves).
 */
class AdaptiveWorkersIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int CAPACITY = 40;
    private static final long LATENCY_MS = 50;
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /** What a run saw: the limit every 100 ms, and when the first and the given samples were taken. */
    private static final class Run {
        final List<Integer> limits = Collections.synchronizedList(new ArrayList<>());
        /** Index of the first sample taken after the service's capacity changed (-1: never). */
        volatile int changedAt = -1;

        List<Integer> from(int index) {
            synchronized (limits) {
                return new ArrayList<>(limits.subList(Math.min(index, limits.size()), limits.size()));
            }
        }
    }

    /** The service's answer; a 429 throws, so the record's attempt fails and is retried on its key's lane. */
    private static String call(String url) {
        try {
            HttpResponse<String> r = HTTP.send(
                    HttpRequest.newBuilder(URI.create(url))
                            .timeout(Duration.ofSeconds(30))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                throw new IllegalStateException("the service answered " + r.statusCode());
            }
            return r.body();
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * Runs an app whose one parallel step calls the service (or computes, without a service)
     * over {@code records} records of {@code keys} keys, until all are committed; {@code
     * midway} runs once when {@code changeAfter} calls were served.
     */
    private Run run(
            String name,
            CapacityService service,
            int records,
            int keys,
            boolean eos,
            long changeAfter,
            Runnable midway,
            long computeMillis)
            throws Exception {
        String suffix = Inputs.suffix(name);
        String input = "auto-in" + suffix;
        String output = "auto-out" + suffix;
        String app = "it" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 4, List.of(input, output));
        int[] seq = new int[keys];
        Inputs.produce(BOOTSTRAP, records, i -> {
            int k = i % keys;
            return new ProducerRecord<>(input, "k" + k, Integer.toString(seq[k]++));
        });
        String url = service == null ? null : service.url();
        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(
                        v -> {
                            if (url != null) {
                                call(url);
                            } else {
                                long until = System.nanoTime() + computeMillis * 1_000_000;
                                long x = 0;
                                while (System.nanoTime() < until) {
                                    x += Long.numberOfTrailingZeros(x + 1);
                                }
                                if (x == 42) {
                                    return v + " ";
                                }
                            }
                            return v;
                        },
                        Named.as("call"))
                .to(output, Produced.with(Serdes.String(), Serdes.String()));
        Properties p = EnrichmentApp.config(BOOTSTRAP, app);
        p.put("state.dir", Files.createTempDirectory("streamshard-it").toString());
        p.put("streamshard.workers", "auto");
        p.put("streamshard.workers.max", "512");
        p.put("streamshard.retry.max.attempts", "1000");
        p.put("streamshard.retry.backoff.ms", "5");
        p.put("streamshard.retry.backoff.max.ms", "50");
        if (eos) {
            p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        }
        Run run = new Run();
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            Thread sampler = new Thread(() -> {
                boolean changed = false;
                while (!Thread.currentThread().isInterrupted()) {
                    double limit = Inputs.metricSum(streams, "streamshard-metrics", "workers-limit");
                    if (limit > 0) {
                        run.limits.add((int) limit);
                    }
                    if (!changed && midway != null && service.served() >= changeAfter) {
                        changed = true;
                        midway.run();
                        run.changedAt = run.limits.size();
                    }
                    try {
                        Thread.sleep(100);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            streams.start();
            sampler.start();
            try {
                Demo.waitForCommitted(BOOTSTRAP, app, input, records, Duration.ofMinutes(3), () -> {});
            } finally {
                sampler.interrupt();
                sampler.join();
            }
        }
        System.out.printf(
                "AdaptiveWorkersIT %s: limits every 100 ms %s, changed at %d%n", name, run.limits, run.changedAt);
        Inputs.assertInOrderOnce(BOOTSTRAP, output, records, suffix);
        return run;
    }

    private static int median(List<Integer> v) {
        List<Integer> s = new ArrayList<>(v);
        Collections.sort(s);
        return s.get(s.size() / 2);
    }

    /** The samples after the first {@code skip} (the limit's start), as many as match. */
    private static long count(List<Integer> v, IntPredicate p) {
        return v.stream().filter(p::test).count();
    }

    @Test
    void settlesNearWhatTheServiceServesWithoutQueueingIt() throws Exception {
        try (CapacityService service = new CapacityService(CAPACITY, LATENCY_MS * 1000, false)) {
            // Once settled: after 3,000 calls (about 4 s; the start doubles from the cores each
            // tenth of a second and may overshoot the knee for a window or two before it).
            Run r = run("settle", service, 12_000, 2_000, false, 3_000, service::resetWaits, 0);
            List<Integer> settled = r.from(r.changedAt);
            assertThat(settled).as("the limit every 100 ms once settled").hasSizeGreaterThan(20);
            assertThat(median(settled)).as("limits %s", settled).isBetween(34, 46);
            // Above it only to find the knee; below it only in the probes of the unloaded time.
            assertThat(count(settled, x -> x > 46)).as("limits %s", settled).isLessThanOrEqualTo(settled.size() / 10);
            // The service's p99 latency within 1.5 times its unloaded one: the queue 99% of calls
            // found at most half its capacity (half a call's time of wait). Counted in calls, not
            // ms: the service shares this JVM with the app, whose GC pauses would stretch a wait.
            assertThat(service.depthQuantile(0.99))
                    .as("the queue the service's calls found, p99 (%s)", service)
                    .isLessThanOrEqualTo(CAPACITY / 2);
        }
    }

    @Test
    void followsACapacityThatHalvesMidRunExactlyOnce() throws Exception {
        try (CapacityService service = new CapacityService(CAPACITY, LATENCY_MS * 1000, false)) {
            Run r = run("halves", service, 12_000, 2_000, true, 4_000, () -> service.capacity(CAPACITY / 2), 0);
            assertThat(r.changedAt).isPositive();
            List<Integer> before = r.limits.subList(Math.max(0, r.changedAt - 10), r.changedAt);
            assertThat(median(before))
                    .as("limits %s (the whole run: %s)", before, r.limits)
                    .isBetween(34, 46);
            // Within 3 s of the change (30 samples) and from then on: near the new capacity.
            List<Integer> after = r.from(r.changedAt + 30);
            assertThat(after).hasSizeGreaterThan(10);
            assertThat(median(after))
                    .as("limits %s then %s (the whole run: %s)", r.from(r.changedAt), after, r.limits)
                    .isBetween(17, 23);
        }
    }

    @Test
    void holdsNearTheCapacityOfAServiceThatRejectsPastIt() throws Exception {
        try (CapacityService service = new CapacityService(CAPACITY, LATENCY_MS * 1000, true)) {
            Run r = run("rejects", service, 12_000, 2_000, false, 1_500, () -> {}, 0);
            List<Integer> settled = r.from(r.changedAt);
            assertThat(median(settled)).as("limits %s (%s)", settled, service).isBetween(34, 46);
            assertThat(service.rejected()).as("rejected calls, retried").isPositive();
        }
    }

    @Test
    void aHotKeyDoesNotRaiseIt() throws Exception {
        try (CapacityService service = new CapacityService(CAPACITY, LATENCY_MS * 1000, false)) {
            Run r = run("hotkey", service, 100, 1, false, 0, null, 0);
            // It starts at 1 and may double once (one record ran all the time: the limit was used).
            assertThat(r.limits)
                    .as("one key: one record at a time")
                    .allSatisfy(x -> assertThat(x).isLessThanOrEqualTo(2));
        }
    }

    @Test
    void settlesNearTheCoresForWorkThatComputes() throws Exception {
        Run r = run("cpu", null, 3_000, 1_000, false, 0, null, 2);
        int cores = Runtime.getRuntime().availableProcessors();
        List<Integer> settled = r.from(10);
        assertThat(settled).isNotEmpty();
        assertThat(median(settled)).as("limits %s on %d cores", r.limits, cores).isLessThanOrEqualTo(4 * cores);
    }
}
