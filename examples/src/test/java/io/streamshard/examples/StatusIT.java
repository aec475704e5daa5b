package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.streamshard.StreamShard;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.Record;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;

/**
 * The status listener on a running app with a parallel sub-topology (0), a split one (1: a window
 * in its serial region) and a stock one (2: an unknown processor right below the source), two
 * partitions each. The JSON endpoint, the gRPC service (through the streamshard-status client) and
 * the page in headless Chromium report all six tasks with the right modes and regions, counts that
 * match the records sent, and committed offsets that advance from one batch to the next.
 */
class StatusIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int BATCH = 400;
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void theJsonEndpointTheGrpcClientAndThePageReportEveryTask() throws Exception {
        String suffix = Inputs.suffix("status");
        String a = "sst-a" + suffix;
        String w = "sst-w" + suffix;
        String s = "sst-s" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 2, List.of(a, w, s, "sst-a-out" + suffix, "sst-w-out" + suffix));
        StreamsBuilder b = new StreamsBuilder();
        StreamShardMetricsIT.parallelAndSplit(b, a, w, "sst-a-out" + suffix, "sst-w-out" + suffix);
        b.stream(s, Consumed.with(Serdes.String(), Serdes.String()))
                .process(() -> new Processor<String, String, Void, Void>() {
                    @Override
                    public void process(Record<String, String> r) {
                        // an unknown processor: the whole task runs stock
                    }
                });
        String appId = "it" + suffix;
        Properties p = EnrichmentApp.config(BOOTSTRAP, appId);
        p.put("streamshard.workers", "8");
        p.put("streamshard.inline.below.us", "0");
        p.put("streamshard.status.listener", "127.0.0.1:0");
        p.put("num.stream.threads", "2");
        p.put("state.dir", Files.createTempDirectory("streamshard-status").toString());
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            String addr = StreamShard.statusAddress(streams);
            assertThat(addr)
                    .as("the listener's address")
                    .startsWith("127.0.0.1:")
                    .doesNotEndWith(":0");
            List<String> states = Collections.synchronizedList(new ArrayList<>());
            long t0 = System.nanoTime();
            streams.setStateListener((now, before) ->
                    states.add(String.format("+%d ms %s->%s", (System.nanoTime() - t0) / 1_000_000, before, now)));
            streams.start();
            // A task reports a committed offset only once it commits on this instance (as in Kafka
            // Streams' TaskMetadata). Records handled before a follow-up rebalance moved their task
            // (CI once saw one 3 ms after RUNNING) are committed by the thread that gave it up, and
            // the new owner shows none until it has records of its own: produce once it settled.
            awaitSettled(states);

            produce(a, w, s, 0);
            waitCommitted(appId, List.of(a, w, s), BATCH);
            JsonNode first = awaitCommittedInStatus(addr, BATCH, states);
            produce(a, w, s, BATCH);
            waitCommitted(appId, List.of(a, w, s), 2 * BATCH);
            JsonNode second = awaitCommittedInStatus(addr, 2 * BATCH, states);

            // Committed offsets advance between the batches, per partition.
            assertThat(committedSum(first, a)).isEqualTo(BATCH);
            assertThat(committedSum(second, a)).isEqualTo(2 * BATCH);
            assertThat(committedSum(second, s))
                    .as("a stock task's committed offsets too")
                    .isEqualTo(2 * BATCH);
            checkSnapshot(second, appId, a, w, s);
            checkRefusals(addr, states);

            // The gRPC service, through the command-line client: the same tasks and modes.
            JsonNode grpc = JSON.readTree(cli(addr, "--json"));
            assertThat(modes(grpc)).isEqualTo(modes(second));
            assertThat(grpc.at("/instance/client_id").asText())
                    .isEqualTo(second.at("/instance/client_id").asText());
            assertThat(committedSum(grpc, a)).isEqualTo(2 * BATCH);
            String table = cli(addr);
            assertThat(table)
                    .contains(
                            "TASK",
                            "0_0",
                            "1_1",
                            "2_0",
                            "split",
                            "parallel",
                            "stock",
                            "sub-topology 1:",
                            "serial region");
            List<String> watched = watch(addr, 2);
            assertThat(watched)
                    .hasSize(2)
                    .allSatisfy(l ->
                            assertThat(JSON.readTree(l).at("/tasks").size()).isEqualTo(6));

            // The page, rendered by a real browser against the running app.
            Thread feed = new Thread(() -> {
                for (int round = 2; round < 12 && !Thread.currentThread().isInterrupted(); round++) {
                    produce(a, w, s, round * BATCH);
                }
            });
            feed.start();
            try {
                checkPage(addr);
            } finally {
                feed.interrupt();
                feed.join();
            }
            checkRates(streams, a);
            System.out.println("StatusIT state changes: " + states);
        }
    }

    @Test
    void aBusyPortIsOneWarningAndAnOpenAddressNeedsConsent() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("sst-unused", Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(v -> v)
                .to("sst-unused-out");
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Properties p = EnrichmentApp.config(BOOTSTRAP, "it" + Inputs.suffix("status-busy"));
            p.put("streamshard.status.listener", "127.0.0.1:" + taken.getLocalPort());
            p.put(
                    "state.dir",
                    Files.createTempDirectory("streamshard-status-busy").toString());
            try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
                assertThat(StreamShard.active(streams))
                        .as("the app runs with streamshard all the same")
                        .isTrue();
                assertThat(StreamShard.statusAddress(streams)).isNull();
            }
        }
        Properties open = EnrichmentApp.config(BOOTSTRAP, "it" + Inputs.suffix("status-open"));
        open.put("streamshard.status.listener", "0.0.0.0:0");
        Assertions.assertThatThrownBy(() -> new KafkaStreams(b.build(), open).close())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.status.listener")
                .hasMessageContaining("streamshard.status.allow.remote");
    }

    /** A running app's listener survives requests it does not serve, and stays read-only. */
    static void checkRefusals(String addr, List<String> states) throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        for (String method : List.of("POST", "PUT", "DELETE")) {
            HttpResponse<String> r = http.send(
                    HttpRequest.newBuilder(URI.create("http://" + addr + "/api/status"))
                            .method(method, HttpRequest.BodyPublishers.ofString("{}"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(method).isEqualTo(405);
        }
        assertThat(http.send(
                                HttpRequest.newBuilder(URI.create("http://" + addr + "/config"))
                                        .build(),
                                HttpResponse.BodyHandlers.ofString())
                        .statusCode())
                .isEqualTo(404);
        String[] hp = addr.split(":");
        try (Socket raw = new Socket(hp[0], Integer.parseInt(hp[1]))) {
            raw.getOutputStream().write(new byte[] {(byte) 0xff, 0, 1, 2, '\r', '\n', '\r', '\n'});
            raw.getOutputStream().flush();
            raw.setSoTimeout(5000);
            try {
                raw.getInputStream().read(); // a 400 or a closed connection, never a hang
            } catch (SocketTimeoutException e) {
                throw new AssertionError("the listener hung on a malformed request", e);
            }
        }
        // Still serving, and the app still runs (a rebalance may be under way: it must end).
        awaitRunning(addr, states);
    }

    /** Once the app has been RUNNING for 2 s with no state change (60 s at most). */
    private static void awaitSettled(List<String> states) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        int seen = -1;
        long since = System.nanoTime();
        while (System.nanoTime() < deadline) {
            int now = states.size();
            if (now != seen) {
                seen = now;
                since = System.nanoTime();
            } else if (now > 0
                    && states.get(now - 1).endsWith("->RUNNING")
                    && System.nanoTime() - since >= TimeUnit.SECONDS.toNanos(2)) {
                return;
            }
            Thread.sleep(50);
        }
        throw new AssertionError("the app never stayed RUNNING for 2 s; state changes: " + states);
    }

    /**
     * The status once it shows the app RUNNING. A rebalance may start after the commits (CI once saw
     * the app REBALANCING with every offset committed), and the status shows it truthfully; it must
     * end within 60 s. A failure names every state change the app went through.
     */
    private static void awaitRunning(String addr, List<String> states) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        JsonNode last;
        do {
            last = status(addr);
            if (last.at("/instance/state").asText().equals("RUNNING")) {
                return;
            }
            Thread.sleep(100);
        } while (System.nanoTime() < deadline);
        throw new AssertionError("the status never showed RUNNING; last: "
                + last.at("/instance/state").asText() + "; state changes: " + states);
    }

    /** While records flow (fed here, 200 at a time), the rate gauges in the Kafka Streams registry read above zero. */
    private static void checkRates(KafkaStreams streams, String topic) throws Exception {
        double best = 0;
        double bestTask = 0;
        for (int i = 0; i < 20 && (best == 0 || bestTask == 0); i++) {
            int from = 100_000 + i * 200;
            Inputs.produce(
                    BOOTSTRAP, 200, n -> new ProducerRecord<>(topic, "k" + (n % 40), Integer.toString(from + n)));
            Thread.sleep(300);
            for (Map.Entry<MetricName, ? extends Metric> e : streams.metrics().entrySet()) {
                MetricName m = e.getKey();
                if (m.group().equals("streamshard-metrics") && m.name().equals("handoffs-rate")) {
                    best = Math.max(best, (Double) e.getValue().metricValue());
                } else if (m.group().equals("streamshard-task-metrics")
                        && m.name().equals("completed-rate")) {
                    bestTask = Math.max(bestTask, (Double) e.getValue().metricValue());
                }
            }
        }
        assertThat(best).as("handoffs-rate while records flow").isPositive();
        assertThat(bestTask).as("a task's completed-rate while records flow").isPositive();
    }

    private static void produce(String a, String w, String s, int from) {
        try {
            for (String t : List.of(a, w, s)) {
                Inputs.produce(
                        BOOTSTRAP,
                        BATCH,
                        i -> new ProducerRecord<>(t, "k" + ((from + i) % 40), Integer.toString(from + i)));
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static void waitCommitted(String appId, List<String> topics, long records) throws Exception {
        for (String t : topics) {
            Demo.waitForCommitted(BOOTSTRAP, appId, t, records, Duration.ofMinutes(2), () -> {});
        }
    }

    static JsonNode status(String addr) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create("http://" + addr + "/api/status"))
                                .timeout(Duration.ofSeconds(10))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("content-type").orElse("")).startsWith("application/json");
        return JSON.readTree(r.body());
    }

    /**
     * The status once every partition of every input shows its committed offset (pushed every
     * 250 ms) and the app is RUNNING, not in a rebalance.
     */
    private static JsonNode awaitCommittedInStatus(String addr, long perTopic, List<String> states) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        Map<String, Long> sums = new HashMap<>();
        String state = "";
        List<String> seen = new ArrayList<>();
        while (System.nanoTime() < deadline) {
            JsonNode last = status(addr);
            state = last.at("/instance/state").asText();
            boolean all = last.at("/tasks").size() == 6 && state.equals("RUNNING");
            sums = new HashMap<>();
            seen = new ArrayList<>();
            for (JsonNode t : last.at("/tasks")) {
                for (JsonNode part : t.at("/partitions")) {
                    sums.merge(part.at("/topic").asText(), part.at("/committed").asLong(0), Long::sum);
                    seen.add(t.at("/id").asText() + "@" + t.at("/thread").asText() + ":" + part.at("/committed"));
                }
            }
            if (all && sums.size() == 3 && sums.values().stream().allMatch(v -> v == perTopic)) {
                return last;
            }
            Thread.sleep(100);
        }
        throw new AssertionError("the status never showed " + perTopic + " committed per topic while RUNNING; last "
                + "seen: " + sums + " in state " + state + ", per task " + seen + "; state changes: " + states);
    }

    private static long committedSum(JsonNode snap, String topic) {
        long sum = 0;
        for (JsonNode t : snap.at("/tasks")) {
            for (JsonNode part : t.at("/partitions")) {
                if (part.at("/topic").asText().equals(topic)) {
                    sum += part.at("/committed").asLong();
                }
            }
        }
        return sum;
    }

    private static Map<String, String> modes(JsonNode snap) {
        Map<String, String> out = new HashMap<>();
        snap.at("/tasks")
                .forEach(t -> out.put(t.at("/id").asText(), t.at("/mode").asText()));
        return out;
    }

    private static void checkSnapshot(JsonNode snap, String appId, String a, String w, String s) {
        assertThat(snap.at("/instance/application_id").asText()).isEqualTo(appId);
        assertThat(snap.at("/instance/state").asText()).isEqualTo("RUNNING");
        assertThat(snap.at("/instance/workers").asInt()).isEqualTo(8);
        assertThat(snap.at("/instance/kafka_streams_version").asText()).isNotBlank();
        List<String> keys = new ArrayList<>();
        snap.at("/instance/config").fieldNames().forEachRemaining(keys::add);
        assertThat(keys)
                .as("only streamshard.* settings are shown")
                .isNotEmpty()
                .allSatisfy(k -> assertThat(k).startsWith("streamshard."))
                .contains("streamshard.workers", "streamshard.status.listener");
        assertThat(snap.at("/instance/config_source/streamshard.workers").asText())
                .as("where the setting came from")
                .isEqualTo("application");
        assertThat(snap.toString())
                .as("no other setting leaks")
                .doesNotContain(BOOTSTRAP)
                .doesNotContain("state.dir");
        assertThat(snap.at("/threads").size()).isEqualTo(2);

        assertThat(modes(snap))
                .isEqualTo(Map.of(
                        "0_0",
                        "parallel",
                        "0_1",
                        "parallel",
                        "1_0",
                        "split",
                        "1_1",
                        "split",
                        "2_0",
                        "stock",
                        "2_1",
                        "stock"));
        Map<Integer, Map<String, String>> regions = new HashMap<>();
        for (JsonNode st : snap.at("/subtopologies")) {
            Map<String, String> r = new HashMap<>();
            st.at("/nodes")
                    .forEach(n -> r.put(n.at("/name").asText(), n.at("/region").asText()));
            regions.put(st.at("/id").asInt(), r);
        }
        assertThat(regions.get(0).values()).containsOnly("parallel");
        assertThat(regions.get(1).values()).contains("parallel", "serial");
        assertThat(regions.get(1).entrySet())
                .filteredOn(e -> e.getValue().equals("serial"))
                .anySatisfy(e -> assertThat(e.getKey()).contains("AGGREGATE"));
        assertThat(regions.get(2).values()).containsOnly("stock");
        for (JsonNode st : snap.at("/subtopologies")) {
            for (JsonNode n : st.at("/nodes")) {
                if (!n.at("/region").asText().equals("parallel")) {
                    assertThat(n.at("/reason").asText())
                            .as("why %s is not parallel", n.at("/name"))
                            .isNotBlank();
                }
            }
        }

        long done0 = 0;
        long done1 = 0;
        for (JsonNode t : snap.at("/tasks")) {
            String id = t.at("/id").asText();
            if (id.startsWith("2_")) {
                assertThat(t.get("metrics").isNull())
                        .as("a stock task has no scheduler metrics")
                        .isTrue();
                continue;
            }
            JsonNode m = t.at("/metrics");
            assertThat(m.at("/failed_total").asLong()).isZero();
            assertThat(m.at("/in_flight").asLong()).isZero();
            // Reported for every task; no commit drains any more, a serial region's neither (a
            // rebalance's suspend still may: PrefixCommitIT checks what commits wait for).
            assertThat(m.at("/drain_total").isNumber())
                    .as("drain_total of %s", id)
                    .isTrue();
            assertThat(m.at("/commit_backlog").asLong())
                    .as("records no commit covers, once all is committed: %s", id)
                    .isZero();
            assertThat(m.at("/run_time_avg_ns").asDouble()).as("the 1 ms step").isGreaterThan(500_000);
            if (id.startsWith("0_")) {
                done0 += m.at("/completed_total").asLong();
            } else {
                done1 += m.at("/completed_total").asLong();
            }
            for (JsonNode part : t.at("/partitions")) {
                long committed = part.at("/committed").asLong();
                assertThat(part.at("/submitted").asLong())
                        .isEqualTo(part.at("/finished").asLong())
                        .isEqualTo(committed);
                assertThat(part.get("lowest_unfinished").isNull())
                        .as("nothing unfinished")
                        .isTrue();
                assertThat(part.at("/last_submitted").asLong()).isEqualTo(committed - 1);
                assertThat(part.at("/index").isMissingNode())
                        .as("the index stays inside")
                        .isTrue();
            }
        }
        assertThat(done0).as("records the parallel tasks finished").isEqualTo(2 * BATCH);
        assertThat(done1).as("records the split tasks finished").isEqualTo(2 * BATCH);
        assertThat(snap.at("/metrics/handoffs_total").asLong()).isEqualTo(4 * BATCH);
        assertThat(snap.at("/metrics/completed_total").asLong()).isEqualTo(4 * BATCH);
        assertThat(snap.at("/metrics/workers").asInt()).isEqualTo(8);
    }

    private static String cli(String addr, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(System.getProperty("streamshard.status.cli"), addr));
        cmd.addAll(List.of(args));
        Process proc = new ProcessBuilder(cmd).redirectErrorStream(false).start();
        String out = new String(proc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String err = new String(proc.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(proc.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(proc.exitValue()).as("streamshard-status %s: %s", cmd, err).isZero();
        return out;
    }

    /** {@code n} snapshots from {@code --watch 0.2 --json} (WatchStatus), one JSON per line. */
    private static List<String> watch(String addr, int n) throws Exception {
        Process proc = new ProcessBuilder(
                        System.getProperty("streamshard.status.cli"), addr, "--watch", "0.2", "--json")
                .start();
        List<String> lines = new ArrayList<>();
        try (BufferedReader r =
                new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8))) {
            for (String l; lines.size() < n && (l = r.readLine()) != null; ) {
                lines.add(l);
            }
        } finally {
            proc.destroy();
            proc.waitFor(10, TimeUnit.SECONDS);
        }
        return lines;
    }

    static final String CHROMIUM = System.getProperty("streamshard.it.chromium", "/usr/bin/chromium");

    static List<String> chromium(Path profile, String... args) {
        List<String> cmd = new ArrayList<>(List.of(
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--user-data-dir=" + profile,
                "--window-size=1400,1000",
                "--virtual-time-budget=4000"));
        cmd.addAll(List.of(args));
        return cmd;
    }

    private static String run(List<String> cmd) throws Exception {
        Process proc = new ProcessBuilder(cmd)
                .redirectError(ProcessBuilder.Redirect.DISCARD)
                .start();
        String out = new String(proc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(proc.waitFor(60, TimeUnit.SECONDS)).as("chromium finished").isTrue();
        return out;
    }

    /** Loads the page in headless Chromium: the DOM names every task, region and partition; a screenshot is kept. */
    private static void checkPage(String addr) throws Exception {
        assertThat(Path.of(CHROMIUM))
                .as("Chromium (Debian package chromium; .ci/run installs it)")
                .exists();
        String url = "http://" + addr + "/";
        String dom = run(chromium(Files.createTempDirectory("chromium"), "--dump-dom", url));
        assertThat(dom).contains("<title>streamshard");
        for (String task : List.of("0_0", "0_1", "1_0", "1_1", "2_0", "2_1")) {
            assertThat(dom).contains("data-task=\"" + task + "\"");
        }
        assertThat(dom)
                .contains(
                        "data-region=\"parallel\"",
                        "data-region=\"serial\"",
                        "data-region=\"stock\"",
                        "data-mode=\"split\"",
                        "data-mode=\"stock\"",
                        "data-partition=\"");
        assertThat(dom).containsPattern("data-node=\"KSTREAM-AGGREGATE-\\d+\"[^>]*data-region=\"serial\"");
        assertThat(dom).contains("id=\"taken-at\"");
        assertThat(dom).containsPattern("<pre[^>]*id=\"errors\"[^>]*>\\s*</pre>");
        Path shot = Path.of(System.getProperty("streamshard.it.screenshot", "target/status-page.png"));
        Files.createDirectories(shot.getParent());
        Files.deleteIfExists(shot);
        run(chromium(Files.createTempDirectory("chromium"), "--screenshot=" + shot.toAbsolutePath(), url));
        assertThat(shot).exists();
        assertThat(Files.size(shot)).as("a real picture").isGreaterThan(20_000);
    }
}
