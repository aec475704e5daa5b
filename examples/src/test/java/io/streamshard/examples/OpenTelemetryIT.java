package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import java.io.File;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * streamshard beside OpenTelemetry's Java agent (the published one, {@code otel.agent.jar}): the
 * same application ({@link TraceApp}: an HTTP call in mapValues, a sink, a processor streamshard
 * does not know and a sink after it in the serial region) on the same input, whose records carry
 * W3C {@code traceparent} headers, run stock with the agent and with streamshard (every record
 * handed to the workers) in both agent orders, under exactly-once with the agent from
 * {@code JAVA_TOOL_OPTIONS}. Spans are exported as OTLP JSON to each JVM's output.
 *
 * <p>Each run must have stock's trace shape: one {@code process} span per input record, in the
 * record's trace, its parent the span in the record's header; the HTTP call and both sends its
 * children; each output record's {@code traceparent} that of its send span. And the same spans
 * per trace as the stock run. Under streamshard the HTTP calls must have run on its workers (the
 * span's thread), and strict context checking must report no scope left open or closed on another
 * thread.
 */
class OpenTelemetryIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int RECORDS = 200;
    private static final int KEYS = 20;
    private static final String SUFFIX = Inputs.suffix("otel");
    private static final String INPUT = "otel-in" + SUFFIX;

    private static HttpServer server;
    private static ExecutorService serverThreads;
    private static String url;
    /** Input record number → {trace id, parent span id} of its traceparent header. */
    private static final Map<String, String[]> PARENTS = new HashMap<>();

    private static Run stock;

    @BeforeAll
    static void serviceAndInput() throws Exception {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        serverThreads = Executors.newFixedThreadPool(32);
        server.setExecutor(serverThreads);
        server.createContext("/", ex -> {
            try {
                Thread.sleep(5); // the slow service
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            byte[] body = ("answer-" + ex.getRequestURI().getQuery()).getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(200, body.length);
            ex.getResponseBody().write(body);
            ex.close();
        });
        server.start();
        url = "http://127.0.0.1:" + server.getAddress().getPort() + "/call";

        OrderProducer.createTopics(BOOTSTRAP, 4, List.of(INPUT));
        Random random = new Random(35);
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        // As OrderProducer: one request in flight keeps the send order without idempotence. With
        // idempotence, a NOT_LEADER_OR_FOLLOWER on the new topic once left the producer retrying
        // OUT_OF_ORDER_SEQUENCE_NUMBER for good, and flush() never returned (a CI run hung).
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < RECORDS; i++) {
                String traceId = String.format("%016x%016x", random.nextLong(), random.nextLong());
                String spanId = String.format("%016x", random.nextLong());
                PARENTS.put(Integer.toString(i), new String[] {traceId, spanId});
                ProducerRecord<String, String> r = new ProducerRecord<>(INPUT, "k" + (i % KEYS), Integer.toString(i));
                r.headers()
                        .add("traceparent", ("00-" + traceId + "-" + spanId + "-01").getBytes(StandardCharsets.UTF_8));
                producer.send(r);
            }
            producer.flush();
        }
    }

    @AfterAll
    static void stopService() {
        if (server != null) {
            server.stop(0);
            serverThreads.shutdownNow();
        }
    }

    @Test
    void openTelemetryFirstRunsParallelWithStocksTraces() throws Exception {
        Run r = run("otel-first", List.of(otel(), streamshard()), Map.of(), "at_least_once");
        assertStockShape(r, true);
        assertSameSpansAsStock(r);
    }

    @Test
    void streamshardFirstRunsParallelWithStocksTraces() throws Exception {
        Run r = run("shard-first", List.of(streamshard(), otel()), Map.of(), "at_least_once");
        assertStockShape(r, true);
        assertSameSpansAsStock(r);
    }

    @Test
    void exactlyOnceWithTheAgentFromJavaToolOptionsHasStocksTraces() throws Exception {
        Run r = run("eos", List.of(streamshard()), Map.of("JAVA_TOOL_OPTIONS", otel()), "exactly_once_v2");
        assertStockShape(r, true);
        assertSameSpansAsStock(r);
    }

    /**
     * OpenTelemetry attached while the application runs: it retransforms StreamTask and the other
     * classes streamshard instrumented at load. Both agents' changes must stay: records after the
     * attach still run on the workers, and get process spans.
     */
    @Test
    void anAgentAttachedLaterRetransformsAndBothAgentsChangesStay() throws Exception {
        Run r = run(
                "late",
                // Few records of a task in flight: while the agent is attached (records held in
                // mapValues), the StreamThread cannot dequeue the rest before its hooks are in.
                List.of(
                        streamshard(),
                        "-Dstreamshard.max.inflight.per.task=2",
                        "-Djdk.attach.allowAttachSelf=true",
                        "-Dtrace.app.attach=" + System.getProperty("otel.agent.jar")),
                Map.of(),
                "at_least_once");
        String why = r.label + ": output's end:\n" + r.tail();
        assertThat(r.output)
                .as(why)
                .anyMatch(l -> l.startsWith("trace app: attached"))
                .noneMatch(l -> l.contains("instrumenting") && l.contains("failed"));
        List<Spans.Span> process = r.spans.stream()
                .filter(s -> s.kind == 5 && s.name.equals(INPUT + " process"))
                .collect(Collectors.toList());
        List<Spans.Span> calls = r.spans.stream().filter(s -> s.kind == 3).collect(Collectors.toList());
        assertThat(process).as("process spans after the attach; %s", why).isNotEmpty();
        assertThat(calls).as("calls traced after the attach; %s", why).isNotEmpty();
        assertThat(calls)
                .as("every call after the attach ran on a worker")
                .allMatch(c -> c.attributes.getOrDefault("thread.name", "").contains("-worker-"));
        for (List<ConsumerRecord<String, String>> out : List.of(r.outA, r.outB)) {
            assertThat(out).as("%s: output records", r.label).hasSize(RECORDS);
        }
    }

    @Test
    void aFailedRecordsProcessSpanEndsWithItsExceptionAsInStock() throws Exception {
        String poison = "150";
        String trace = PARENTS.get(poison)[0];
        for (Run r : List.of(
                run("stock-fail", List.of(otel()), Map.of(), "at_least_once", poison),
                run("shard-fail", List.of(otel(), streamshard()), Map.of(), "at_least_once", poison))) {
            List<Spans.Span> mine = r.spans.stream()
                    .filter(s -> s.traceId.equals(trace) && s.name.equals(INPUT + " process"))
                    .collect(Collectors.toList());
            assertThat(mine)
                    .as("%s: the poison record's process spans; output's end:\n%s", r.label, r.tail())
                    .hasSize(1);
            assertThat(mine.get(0).status)
                    .as("%s: its status (2: error)", r.label)
                    .isEqualTo(2);
            assertThat(mine.get(0).events).as("%s: its events", r.label).contains("exception");
            assertThat(mine.get(0).exceptionMessage)
                    .as("%s: the exception recorded", r.label)
                    .contains("poison record " + poison);
        }
    }

    /** The stock run (OpenTelemetry alone), once; itself checked against the expected shape. */
    private static synchronized Run stock() throws Exception {
        if (stock == null) {
            stock = run("stock", List.of(otel()), Map.of(), "at_least_once");
            assertStockShape(stock, false);
        }
        return stock;
    }

    private static String otel() {
        return "-javaagent:" + System.getProperty("otel.agent.jar");
    }

    private static String streamshard() {
        return "-javaagent:" + System.getProperty("streamshard.agent.jar") + "=inline.below.us=0";
    }

    /** One run of the application: its output lines, its spans, its two output topics' records. */
    static final class Run {
        final String label;
        final List<String> output;
        final List<Spans.Span> spans;
        final List<ConsumerRecord<String, String>> outA;
        final List<ConsumerRecord<String, String>> outB;

        Run(
                String label,
                List<String> output,
                List<ConsumerRecord<String, String>> outA,
                List<ConsumerRecord<String, String>> outB) {
            this.label = label;
            this.output = output;
            this.spans = Spans.in(output);
            this.outA = outA;
            this.outB = outB;
        }

        String tail() {
            return String.join("\n", output.subList(Math.max(0, output.size() - 60), output.size()));
        }
    }

    private static Run run(String label, List<String> agents, Map<String, String> env, String guarantee)
            throws Exception {
        return run(label, agents, env, guarantee, null);
    }

    private static Run run(String label, List<String> agents, Map<String, String> env, String guarantee, String poison)
            throws Exception {
        String outA = "otel-a-" + label + SUFFIX;
        String outB = "otel-b-" + label + SUFFIX;
        OrderProducer.createTopics(BOOTSTRAP, 4, List.of(outA, outB));
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(agents);
        cmd.addAll(List.of(
                "-Dotel.traces.exporter=logging-otlp",
                "-Dotel.metrics.exporter=none",
                "-Dotel.logs.exporter=none",
                "-Dotel.bsp.schedule.delay=100",
                "-Dotel.service.name=trace-app",
                // Strict context checking: the agent's copy reads its own (relocated) property name.
                "-Dio.opentelemetry.javaagent.shaded.io.opentelemetry.context.enableStrictContext=true",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-Dorg.slf4j.simpleLogger.log.io.streamshard=info",
                "-cp",
                classPath(),
                TraceApp.class.getName(),
                BOOTSTRAP,
                "otel-app-" + label + SUFFIX,
                INPUT,
                outA,
                outB,
                url,
                Integer.toString(RECORDS),
                guarantee));
        if (poison != null) {
            cmd.add(poison);
        }
        Path log = Path.of("target", "otel", label + ".log");
        Files.createDirectories(log.getParent());
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().putAll(env);
        Process p = pb.start();
        boolean exited = p.waitFor(240, TimeUnit.SECONDS);
        if (!exited) {
            p.destroyForcibly();
        }
        List<String> output = Files.readAllLines(log, StandardCharsets.UTF_8);
        Run r = poison == null
                ? new Run(label, output, consume(outA), consume(outB))
                : new Run(label, output, List.of(), List.of());
        assertThat(exited)
                .as("%s: the application did not finish in 240 s; its output's end:\n%s", label, r.tail())
                .isTrue();
        assertThat(p.exitValue())
                .as("%s exit; output's end:\n%s", label, r.tail())
                .isEqualTo(poison == null ? 0 : 3);
        return r;
    }

    private static String classPath() throws Exception {
        String own = Path.of(TraceApp.class
                        .getProtectionDomain()
                        .getCodeSource()
                        .getLocation()
                        .toURI())
                .toString();
        String deps = Files.readString(Path.of("target", "classpath.txt")).trim();
        return own + File.pathSeparator + deps;
    }

    private static List<ConsumerRecord<String, String>> consume(String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "otel-check-" + topic);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        try (KafkaConsumer<String, String> c =
                new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (out.size() < RECORDS && System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(out::add);
            }
        }
        return out;
    }

    /**
     * Stock's shape: per input record one process span in its trace, parent the header's span;
     * the HTTP call and the two sends its children, and nothing else; each output's traceparent
     * its send span. With {@code parallel}: the calls ran on streamshard's workers.
     */
    private static void assertStockShape(Run r, boolean parallel) {
        String why = r.label + ": " + r.spans.size() + " spans; output's end:\n" + r.tail();
        assertThat(r.output)
                .as(why)
                .noneMatch(l -> l.contains("Scope garbage collected before being closed"))
                .noneMatch(l -> l.contains("opened scope, but closed it"))
                .noneMatch(l -> l.contains("Context in storage not the expected context"))
                .noneMatch(l -> l.contains("carrying OpenTelemetry's context failed"))
                .noneMatch(l -> l.contains("instrumenting") && l.contains("failed"));
        if (parallel) {
            assertThat(r.output)
                    .as(why)
                    .anyMatch(l -> l.contains("OpenTelemetry's Java agent is attached: each record"));
        }
        Map<String, Spans.Span> byId = new HashMap<>();
        Map<String, List<Spans.Span>> children = new HashMap<>();
        for (Spans.Span s : r.spans) {
            byId.put(s.spanId, s);
            children.computeIfAbsent(s.parentSpanId, k -> new ArrayList<>()).add(s);
        }
        List<Spans.Span> process = r.spans.stream()
                .filter(s -> s.kind == 5 && s.name.equals(INPUT + " process"))
                .collect(Collectors.toList());
        assertThat(process).as(why).hasSize(RECORDS);
        Map<String, Spans.Span> processOfTrace = new HashMap<>();
        for (Map.Entry<String, String[]> e : PARENTS.entrySet()) {
            String traceId = e.getValue()[0];
            List<Spans.Span> mine =
                    process.stream().filter(s -> s.traceId.equals(traceId)).collect(Collectors.toList());
            assertThat(mine)
                    .as("record %s's process spans; %s", e.getKey(), why)
                    .hasSize(1);
            Spans.Span ps = mine.get(0);
            assertThat(ps.parentSpanId)
                    .as("record %s's process span's parent", e.getKey())
                    .isEqualTo(e.getValue()[1]);
            assertThat(ps.status)
                    .as("record %s's process span's status", e.getKey())
                    .isNotEqualTo(2);
            processOfTrace.put(traceId, ps);
            List<Spans.Span> kids = children.getOrDefault(ps.spanId, List.of());
            assertThat(kids.stream().map(k -> k.name + "/" + k.kind).sorted())
                    .as("record %s's process span's children; %s", e.getKey(), why)
                    .containsExactly(
                            "GET/3",
                            "otel-a-" + r.label + SUFFIX + " publish/4",
                            "otel-b-" + r.label + SUFFIX + " publish/4");
            Spans.Span get = kids.stream().filter(k -> k.kind == 3).findFirst().orElseThrow();
            // The span lasts as long as the record's work: the call (synchronous) ends inside it.
            // (A send span ends when the broker acknowledges, which may be later, as in stock.)
            assertThat(ps.end)
                    .as("record %s's process span ends after its call", e.getKey())
                    .isGreaterThanOrEqualTo(get.end);
            String thread = get.attributes.getOrDefault("thread.name", "");
            if (parallel) {
                assertThat(thread)
                        .as("record %s's call ran on a worker", e.getKey())
                        .contains("-worker-");
            } else {
                assertThat(thread)
                        .as("record %s's call ran on the StreamThread", e.getKey())
                        .contains("StreamThread");
            }
        }
        for (List<ConsumerRecord<String, String>> out : List.of(r.outA, r.outB)) {
            assertThat(out).as("%s: output records", r.label).hasSize(RECORDS);
            for (ConsumerRecord<String, String> o : out) {
                String n = o.value().substring(o.value().indexOf("v=") + 2);
                String[] parent = PARENTS.get(n);
                assertThat(parent).as("output %s", o.value()).isNotNull();
                Header h = o.headers().lastHeader("traceparent");
                assertThat(h).as("output %s's traceparent", o.value()).isNotNull();
                String[] tp = new String(h.value(), StandardCharsets.UTF_8).split("-");
                assertThat(tp[1]).as("output %s's trace", o.value()).isEqualTo(parent[0]);
                Spans.Span send = byId.get(tp[2]);
                assertThat(send)
                        .as("output %s's traceparent names an exported span", o.value())
                        .isNotNull();
                assertThat(send.kind).isEqualTo(4);
                assertThat(send.name).isEqualTo(o.topic() + " publish");
                assertThat(send.parentSpanId).isEqualTo(processOfTrace.get(parent[0]).spanId);
            }
        }
    }

    /** Per trace, the same spans (name, kind, parent's name) as the stock run, output topics aside. */
    private void assertSameSpansAsStock(Run r) throws Exception {
        Run s = stock();
        assertThat(shapes(r)).isEqualTo(shapes(s));
    }

    private static Map<String, List<String>> shapes(Run r) {
        Map<String, Spans.Span> byId = new HashMap<>();
        r.spans.forEach(s -> byId.put(s.spanId, s));
        Map<String, List<String>> out = new TreeMap<>();
        for (Spans.Span s : r.spans) {
            Spans.Span parent = byId.get(s.parentSpanId);
            String line = name(s, r) + "/" + s.kind + " <- " + (parent == null ? "(remote)" : name(parent, r));
            out.computeIfAbsent(s.traceId, k -> new ArrayList<>()).add(line);
        }
        out.values().forEach(l -> l.sort(null));
        return out;
    }

    private static String name(Spans.Span s, Run r) {
        return s.name.replace("-" + r.label + SUFFIX, "");
    }
}
