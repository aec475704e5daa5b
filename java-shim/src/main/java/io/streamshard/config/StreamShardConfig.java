package io.streamshard.config;

import io.streamshard.agent.AgentState;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Range;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigDef.ValidString;
import org.apache.kafka.common.config.ConfigException;

/**
 * streamshard's settings, read from the same {@code Properties} as the Kafka Streams
 * application ({@code streamshard.*} keys; Kafka Streams ignores them). Invalid values raise a
 * {@link ConfigException} that names the key.
 */
public final class StreamShardConfig extends AbstractConfig {
    public static final String PREFIX = "streamshard.";

    public static final String ENABLED = "streamshard.enabled";
    public static final String WORKERS = "streamshard.workers";
    public static final String WORKER_THREADS = "streamshard.worker.threads";
    public static final String WORKERS_MAX = "streamshard.workers.max";
    public static final String WORKERS_MIN = "streamshard.workers.min";
    /** The value of {@link #WORKERS} that sizes the workers to the downstream. */
    public static final String AUTO = "auto";
    /** The most platform worker threads; virtual ones are bounded by the slot table only. */
    public static final int MAX_PLATFORM_WORKERS = 4096;

    public static final String MAX_INFLIGHT_PER_TASK = "streamshard.max.inflight.per.task";
    public static final String MAX_INFLIGHT = "streamshard.max.inflight";
    public static final String DRAIN_TIMEOUT_MS = "streamshard.drain.timeout.ms";
    public static final String COMMIT_WAIT = "streamshard.commit.wait";
    public static final String COMMIT_HELD_MAX_BYTES = "streamshard.commit.held.max.bytes";
    public static final String NULL_KEY_ORDERING = "streamshard.null.key.ordering";
    public static final String PARALLEL_PROCESSORS = "streamshard.parallel.processors";
    public static final String SERIAL_PROCESSORS = "streamshard.serial.processors";
    public static final String INLINE_BELOW_US = "streamshard.inline.below.us";
    public static final String CACHING = "streamshard.caching";
    public static final String STATUS_LISTENER = "streamshard.status.listener";
    public static final String STATUS_ALLOW_REMOTE = "streamshard.status.allow.remote";
    public static final String RETRY_MAX_ATTEMPTS = "streamshard.retry.max.attempts";
    public static final String RETRY_BACKOFF_MS = "streamshard.retry.backoff.ms";
    public static final String RETRY_BACKOFF_MAX_MS = "streamshard.retry.backoff.max.ms";
    public static final String RETRY_EXCEPTIONS = "streamshard.retry.exceptions";

    /** Kafka Streams' own key whose value the drain timeout must stay under. */
    static final String MAX_POLL_INTERVAL_MS = "max.poll.interval.ms";

    static final int DEFAULT_MAX_POLL_INTERVAL_MS = 300_000;

    public static final ConfigDef DEF = new ConfigDef()
            .define(
                    ENABLED,
                    Type.BOOLEAN,
                    true,
                    Importance.HIGH,
                    "Run parallel-safe tasks through the shard scheduler. false leaves the whole "
                            + "application stock (serial).")
            .define(
                    WORKERS,
                    Type.STRING,
                    "64",
                    new WorkersValidator(),
                    Importance.HIGH,
                    "Worker threads per KafkaStreams instance, shared by all its parallel tasks: "
                            + "how many records run at once. Records of one key never run on two workers "
                            + "at once. At most " + MAX_PLATFORM_WORKERS + " platform threads; with "
                            + WORKER_THREADS + "=virtual (Java 21+) up to " + MAX_INFLIGHT + ". " + AUTO
                            + ": as many as the slow step's downstream serves without a queue, between "
                            + WORKERS_MIN + " and " + WORKERS_MAX + ", found and followed while the app "
                            + "runs (the limit grows while run times stay at their unloaded level and "
                            + "comes down when they rise or attempts fail).")
            .define(
                    WORKERS_MAX,
                    Type.INT,
                    MAX_PLATFORM_WORKERS,
                    Range.between(1, 1 << 20),
                    Importance.MEDIUM,
                    "With " + WORKERS + "=" + AUTO + ": the most records that run at once. Platform "
                            + "threads are started as the limit first reaches them; at most "
                            + MAX_PLATFORM_WORKERS + " of them.")
            .define(
                    WORKERS_MIN,
                    Type.INT,
                    1,
                    Range.between(1, 1 << 20),
                    Importance.LOW,
                    "With " + WORKERS + "=" + AUTO + ": the fewest records that may run at once, "
                            + "however slow or failing the downstream is.")
            .define(
                    WORKER_THREADS,
                    Type.STRING,
                    "platform",
                    ValidString.in("platform", "virtual"),
                    Importance.MEDIUM,
                    "platform: the workers are platform threads. virtual: virtual threads (Java 21 "
                            + "and later; on an older JVM platform threads, with one line saying so), "
                            + "for thousands of slow calls in flight: a worker waiting on a call holds "
                            + "no OS thread.")
            .define(
                    MAX_INFLIGHT_PER_TASK,
                    Type.INT,
                    null,
                    positiveUpTo(1 << 20),
                    Importance.MEDIUM,
                    "Cap on records of one task handed to the scheduler and not yet finished. A "
                            + "task at its cap is not processable, so the StreamThread serves other tasks. "
                            + "Default: 1000, or twice " + WORKERS + " when that is more (so one task can keep "
                            + "every worker busy while records wait behind their keys), at most "
                            + MAX_INFLIGHT + ".")
            .define(
                    MAX_INFLIGHT,
                    Type.INT,
                    null,
                    positiveUpTo(1 << 20),
                    Importance.MEDIUM,
                    "Cap on unfinished records over all tasks of the instance; also the size of "
                            + "the slot table, allocated at start: about 100 bytes a slot, 100 MB at the "
                            + "maximum. Default: 10000, or four times " + WORKERS + " when that is more.")
            .define(
                    DRAIN_TIMEOUT_MS,
                    Type.LONG,
                    60_000L,
                    Range.between(1, Long.MAX_VALUE),
                    Importance.MEDIUM,
                    "How long a commit, punctuation, revocation or close waits for a task's "
                            + "unfinished records. Must be below max.poll.interval.ms. A drain that "
                            + "times out fails the StreamThread; it never commits past unfinished work. "
                            + "With streamshard.commit.wait=none, once one record has held a task's "
                            + "commits back this long, the next commit waits for it like a drain (a call "
                            + "that never answers fails the StreamThread rather than holding the task).")
            .define(
                    COMMIT_WAIT,
                    Type.STRING,
                    "none",
                    ValidString.in("none", "all"),
                    Importance.MEDIUM,
                    "What a task's regular commit (every commit.interval.ms) waits for. none: it "
                            + "waits for no record; it covers the task's records in the order they were "
                            + "dequeued up to the first one not finished (per partition that record's "
                            + "offset, and the partition time stock had just before it), and a later "
                            + "commit covers the rest; a record of a task with a serial region (windows, "
                            + "suppress, stream-stream joins) is finished once that region ran it. Under "
                            + "exactly-once the output, repartition and changelog records of a record "
                            + "beyond that point are held and sent, in dequeue order, into the "
                            + "transaction that commits its offset. all: every commit waits until each "
                            + "record handed to the workers has finished. Revocations, closes and "
                            + "punctuations always wait.")
            .define(
                    COMMIT_HELD_MAX_BYTES,
                    Type.LONG,
                    64L << 20,
                    Range.between(1, Long.MAX_VALUE),
                    Importance.LOW,
                    "Under exactly-once with " + COMMIT_WAIT + "=none: the most bytes (keys and "
                            + "values) of records one task may hold for a later transaction; at the bound "
                            + "the task takes no new record until its oldest running record finishes.")
            .define(
                    NULL_KEY_ORDERING,
                    Type.STRING,
                    "serial",
                    ValidString.in("serial", "unordered"),
                    Importance.LOW,
                    "serial: records with a null key run one at a time, in order, per task. "
                            + "unordered: they run in any order, any number at once.")
            .define(
                    PARALLEL_PROCESSORS,
                    Type.LIST,
                    List.of(),
                    Importance.MEDIUM,
                    "Processor API processors the user declares thread-safe and writing state only "
                            + "under the record's key, by node name (e.g. KSTREAM-PROCESSVALUES-0000000003 "
                            + "or a Named name) or by processor class name (e.g. com.example.Enricher). "
                            + "Any other PAPI processor, and everything below it, runs in the task's "
                            + "ordered serial region.")
            .define(
                    SERIAL_PROCESSORS,
                    Type.LIST,
                    List.of(),
                    Importance.MEDIUM,
                    "Nodes that must run in the task's ordered serial region even though "
                            + "streamshard would run them parallel (a DSL lambda that keeps state across "
                            + "records, say), by node name or processor class name; everything below "
                            + "them is serial too. Wins over " + "streamshard.parallel.processors.")
            .define(
                    INLINE_BELOW_US,
                    Type.INT,
                    10,
                    Range.between(0, 1_000_000),
                    Importance.LOW,
                    "A parallel task whose records take less than this many microseconds each "
                            + "(a moving average) runs them on its StreamThread instead, one at a "
                            + "time, because handing a record to a worker costs a few microseconds "
                            + "of CPU; it goes back to the workers when a block of 64 of them takes "
                            + "more than twice this each (without the slowest record and time spent "
                            + "waiting for a CPU). The switch to the StreamThread waits for the task's "
                            + "records on workers first. 0: always hand records to the workers.")
            .define(
                    CACHING,
                    Type.STRING,
                    "keep",
                    ValidString.in("keep", "disable"),
                    Importance.LOW,
                    "keep: key-value stores keep the caching layer the application asked for (the "
                            + "default in Kafka Streams): a task running on its StreamThread caches as stock "
                            + "does, and a record on a worker writes its key through to the store and "
                            + "forwards the update at once, as an uncached store would. disable: no "
                            + "key-value store gets a caching layer (every update is forwarded, no store "
                            + "lock is taken on the workers). Window and session stores never cache "
                            + "under streamshard.")
            .define(
                    STATUS_LISTENER,
                    Type.STRING,
                    "",
                    Importance.LOW,
                    "host:port of the instance's read-only status listener: gRPC "
                            + "streamshard.v1.Status, GET /api/status (JSON) and GET / (a live page), all "
                            + "on this one port. Empty: off. A loopback address (127.0.0.1, ::1, "
                            + "localhost) unless " + "streamshard.status.allow.remote=true; port 0 picks a "
                            + "free one (logged, and given by StreamShard.statusAddress).")
            .define(
                    STATUS_ALLOW_REMOTE,
                    Type.BOOLEAN,
                    false,
                    Importance.LOW,
                    "Let streamshard.status.listener bind to an address other hosts can reach. The "
                            + "listener has no authentication: it shows topology, task ids, offsets and "
                            + "streamshard.* settings (never any other setting).")
            .define(
                    RETRY_MAX_ATTEMPTS,
                    Type.INT,
                    1,
                    Range.between(1, 1_000),
                    Importance.MEDIUM,
                    "Attempts a record's parallel part gets on the workers when it throws before it "
                            + "has had any effect (no state-store write, no forward to a sink or into the "
                            + "serial region). Between attempts the record waits on its key's lane: its "
                            + "key's later records wait behind it, the worker and every other key go on. "
                            + "After the last attempt, or a failure after an effect, Kafka Streams' "
                            + "processing exception handler decides as in stock. 1: no retry. Above 1, "
                            + "every record of a parallel task goes to the workers (" + "streamshard.inline.below.us "
                            + "is not used), so that every one can be retried.")
            .define(
                    RETRY_BACKOFF_MS,
                    Type.LONG,
                    100L,
                    Range.between(0, 3_600_000),
                    Importance.LOW,
                    "Wait before a record's second attempt; it doubles for each later attempt, up to "
                            + "streamshard.retry.backoff.max.ms, and each wait is shortened by a random "
                            + "0-20% so that records that failed together do not retry together.")
            .define(
                    RETRY_BACKOFF_MAX_MS,
                    Type.LONG,
                    10_000L,
                    Range.between(0, 3_600_000),
                    Importance.LOW,
                    "Longest wait between two attempts of a record. The waits of all attempts "
                            + "together must stay below streamshard.drain.timeout.ms, because a drain (a "
                            + "close, revocation or punctuation; every commit with streamshard.commit.wait="
                            + "all) waits for records that wait for a retry.")
            .define(
                    RETRY_EXCEPTIONS,
                    Type.LIST,
                    List.of(),
                    Importance.LOW,
                    "Exception classes (fully qualified names; a class matches its subclasses and an "
                            + "interface its implementations) that are retried. Empty: any exception but "
                            + "Kafka Streams' own (StreamsException and its subclasses) and "
                            + "ClassCastException (a wrong Serde, which stock reports without the "
                            + "handler).");

    /** {@code Range.between(1, max)} for a setting whose default (null) is derived from others. */
    /** {@link #WORKERS}: {@link #AUTO}, or a whole number from 1 to 2^20. */
    private static final class WorkersValidator implements ConfigDef.Validator {
        @Override
        public void ensureValid(String name, Object value) {
            String v = value == null ? "" : value.toString().trim();
            if (v.equalsIgnoreCase(AUTO)) {
                return;
            }
            try {
                int n = Integer.parseInt(v);
                if (n >= 1 && n <= 1 << 20) {
                    return;
                }
            } catch (NumberFormatException e) {
                // below
            }
            throw new ConfigException(name, value, "must be " + AUTO + " or a whole number from 1 to " + (1 << 20));
        }

        @Override
        public String toString() {
            return AUTO + ", or [1,...," + (1 << 20) + "]";
        }
    }

    private static ConfigDef.Validator positiveUpTo(int max) {
        Range range = Range.between(1, max);
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (value != null) {
                    range.ensureValid(name, value);
                }
            }

            @Override
            public String toString() {
                return range.toString();
            }
        };
    }

    /** Where a setting's value came from, highest precedence first. */
    public enum Source {
        /** The application's own {@code Properties} (the StreamsConfig). */
        APPLICATION("application"),
        /** A JVM system property, {@code -Dstreamshard.workers=16}. */
        SYSTEM_PROPERTY("system property"),
        /** The agent's argument, {@code -javaagent:streamshard.jar=workers=16}. */
        AGENT_ARGUMENT("agent argument");

        private final String shown;

        Source(String shown) {
            this.shown = shown;
        }

        @Override
        public String toString() {
            return shown;
        }
    }

    // Read on every record: parsed once here, not looked up in the config map each time.
    private final long drainTimeoutMs;
    private final long inlineBelowNanos;

    private final int retryMaxAttempts;
    /** Every streamshard.* key given, by where its value came from; unmodifiable. */
    private final SortedMap<String, Source> sources;

    private StreamShardConfig(Map<?, ?> props, SortedMap<String, Source> sources) {
        super(DEF, props, false);
        this.sources = Collections.unmodifiableSortedMap(sources);
        drainTimeoutMs = getLong(DRAIN_TIMEOUT_MS);
        retryMaxAttempts = getInt(RETRY_MAX_ATTEMPTS);
        // Retried records must all be on the workers: an inline record's failure reaches the
        // handler on the StreamThread, which has no lane to wait on.
        inlineBelowNanos = retryMaxAttempts > 1 ? 0 : getInt(INLINE_BELOW_US) * 1_000L;
    }

    /**
     * Reads and checks the settings: the application's {@code streamshard.*} keys, and for a key
     * it does not set, a system property of that name, else the agent's argument.
     */
    public static StreamShardConfig from(Map<?, ?> props) {
        return from(props, System.getProperties(), AgentState.agentArguments());
    }

    /** {@link #from(Map)} with the system properties and agent argument given (tests). */
    static StreamShardConfig from(Map<?, ?> props, Map<?, ?> systemProperties, String agentArguments) {
        Map<Object, Object> merged = new HashMap<>(props);
        Object w = merged.get(WORKERS);
        if (w instanceof Number) {
            // A number given as one (props.put(key, 64)): the setting's type is a string for "auto".
            merged.put(WORKERS, w.toString());
        }
        SortedMap<String, Source> sources = new TreeMap<>();
        props.keySet().forEach(k -> {
            if (k instanceof String && ((String) k).startsWith(PREFIX)) {
                sources.put((String) k, Source.APPLICATION);
            }
        });
        // Values from outside are checked even where the application overrides them: an
        // operator's typo in JAVA_TOOL_OPTIONS must not wait for the one app that lacks the key.
        for (String key : DEF.names()) {
            Object v = systemProperties.get(key);
            if (v != null && merged.putIfAbsent(key, checked(key, v, Source.SYSTEM_PROPERTY)) == null) {
                sources.put(key, Source.SYSTEM_PROPERTY);
            }
        }
        parseAgentArguments(agentArguments).forEach((key, v) -> {
            if (merged.putIfAbsent(key, checked(key, v, Source.AGENT_ARGUMENT)) == null) {
                sources.put(key, Source.AGENT_ARGUMENT);
            }
        });
        StreamShardConfig c = new StreamShardConfig(merged, sources);
        int workers = c.workers();
        if (workers > MAX_PLATFORM_WORKERS
                && !(c.virtualWorkers() && Runtime.version().feature() >= 21)) {
            throw new ConfigException(
                    c.workersAuto() ? WORKERS_MAX : WORKERS,
                    workers,
                    "at most " + MAX_PLATFORM_WORKERS + " platform threads; for more, set " + WORKER_THREADS
                            + "=virtual (Java 21 or later"
                            + (c.virtualWorkers()
                                    ? "; this JVM is " + Runtime.version().feature()
                                    : "") + ")");
        }
        if (c.workersAuto() && c.getInt(WORKERS_MIN) > c.getInt(WORKERS_MAX)) {
            throw new ConfigException(
                    WORKERS_MIN,
                    c.getInt(WORKERS_MIN),
                    "must not exceed " + WORKERS_MAX + " (" + c.getInt(WORKERS_MAX) + ")");
        }
        int perTask = c.maxInflightPerTask();
        int total = c.maxInflight();
        if (perTask > total) {
            throw new ConfigException(
                    MAX_INFLIGHT_PER_TASK, perTask, "must not exceed " + MAX_INFLIGHT + " (" + total + ")");
        }
        long drain = c.getLong(DRAIN_TIMEOUT_MS);
        long maxPoll = maxPollInterval(props);
        if (drain >= maxPoll) {
            throw new ConfigException(
                    DRAIN_TIMEOUT_MS,
                    drain,
                    "must be below " + MAX_POLL_INTERVAL_MS + " (" + maxPoll + ") so that a stuck "
                            + "drain fails the StreamThread before the group evicts it");
        }
        c.statusListener(); // checks it
        c.checkRetry(drain);
        return c;
    }

    public static StreamShardConfig from(Properties props) {
        return from((Map<?, ?>) props);
    }

    /**
     * The agent's argument as settings: {@code key=value} pairs separated by commas, each key
     * with or without the {@code streamshard.} prefix; a piece without {@code =} continues the
     * previous value, so that a list keeps its commas ({@code parallel.processors=A,B,workers=4}).
     *
     * @throws ConfigException naming the key for an unknown key, or the argument if it does not
     *     start with key=value
     */
    static Map<String, String> parseAgentArguments(String args) {
        Map<String, String> out = new LinkedHashMap<>();
        if (args == null || args.trim().isEmpty()) {
            return out;
        }
        String last = null;
        for (String piece : args.split(",", -1)) {
            if (piece.trim().isEmpty()) {
                continue; // a stray comma
            }
            int eq = piece.indexOf('=');
            if (eq < 0) {
                if (last == null) {
                    throw new ConfigException(
                            "streamshard agent argument",
                            args,
                            "must be key=value pairs separated by commas, e.g. inline.below.us=0,workers=16");
                }
                out.put(last, out.get(last) + "," + piece.trim());
                continue;
            }
            String key = piece.substring(0, eq).trim();
            if (!key.startsWith(PREFIX)) {
                key = PREFIX + key;
            }
            if (!DEF.names().contains(key)) {
                throw new ConfigException(
                        key,
                        piece.substring(eq + 1).trim(),
                        "unknown streamshard setting, from " + "the agent argument; known: "
                                + String.join(", ", new TreeSet<>(DEF.names())));
            }
            out.put(key, piece.substring(eq + 1).trim());
            last = key;
        }
        return out;
    }

    /** {@code value} if it is valid for {@code key}; else a ConfigException naming the key and where it came from. */
    private static Object checked(String key, Object value, Source source) {
        try {
            DEF.parse(Map.of(key, value));
        } catch (ConfigException e) {
            throw new ConfigException(e.getMessage() + " (from the " + source + ")");
        }
        return value;
    }

    private static long maxPollInterval(Map<?, ?> props) {
        Object v = props.get(MAX_POLL_INTERVAL_MS);
        if (v == null) {
            v = props.get("main.consumer." + MAX_POLL_INTERVAL_MS);
        }
        if (v == null) {
            return DEFAULT_MAX_POLL_INTERVAL_MS;
        }
        try {
            return Long.parseLong(v.toString().trim());
        } catch (NumberFormatException e) {
            return DEFAULT_MAX_POLL_INTERVAL_MS; // Kafka's own validation reports it
        }
    }

    private void checkRetry(long drainMs) {
        long base = getLong(RETRY_BACKOFF_MS);
        long max = getLong(RETRY_BACKOFF_MAX_MS);
        if (max < base) {
            throw new ConfigException(
                    RETRY_BACKOFF_MAX_MS, max, "must not be below " + RETRY_BACKOFF_MS + " (" + base + ")");
        }
        for (String name : getList(RETRY_EXCEPTIONS)) {
            if (!name.matches("[\\p{javaJavaIdentifierStart}][\\p{javaJavaIdentifierPart}.$]*")) {
                throw new ConfigException(RETRY_EXCEPTIONS, name, "must be fully qualified class names");
            }
        }
        long worst = worstCaseRetryMs(retryMaxAttempts, base, max);
        if (worst >= drainMs) {
            throw new ConfigException(
                    RETRY_MAX_ATTEMPTS,
                    retryMaxAttempts,
                    "with " + RETRY_BACKOFF_MS + "=" + base + " and " + RETRY_BACKOFF_MAX_MS + "=" + max
                            + " a record may wait " + worst + " ms for its retries, which must be below "
                            + DRAIN_TIMEOUT_MS + " (" + drainMs + "): a commit waits for records that "
                            + "wait for a retry");
        }
    }

    /** The longest a record can wait between its attempts, all together, ms. */
    public static long worstCaseRetryMs(int attempts, long backoffMs, long backoffMaxMs) {
        long sum = 0;
        long wait = backoffMs;
        for (int i = 1; i < attempts; i++) {
            sum += Math.min(wait, backoffMaxMs);
            wait = Math.min(wait * 2, backoffMaxMs);
        }
        return sum;
    }

    public int retryMaxAttempts() {
        return retryMaxAttempts;
    }

    public long retryBackoffMs() {
        return getLong(RETRY_BACKOFF_MS);
    }

    public long retryBackoffMaxMs() {
        return getLong(RETRY_BACKOFF_MAX_MS);
    }

    public List<String> retryExceptions() {
        return getList(RETRY_EXCEPTIONS);
    }

    public boolean enabled() {
        return getBoolean(ENABLED);
    }

    /**
     * The workers of the instance: {@link #WORKERS}, or with {@link #AUTO} the most it may grow to
     * ({@link #WORKERS_MAX}).
     */
    public int workers() {
        return workersAuto()
                ? getInt(WORKERS_MAX)
                : Integer.parseInt(getString(WORKERS).trim());
    }

    /** Whether {@link #WORKERS} is {@link #AUTO}. */
    public boolean workersAuto() {
        return getString(WORKERS).trim().equalsIgnoreCase(AUTO);
    }

    /** With {@link #AUTO}: the floor of the limit. */
    public int workersMin() {
        return getInt(WORKERS_MIN);
    }

    /** Whether {@link #WORKER_THREADS} asks for virtual threads. */
    public boolean virtualWorkers() {
        return getString(WORKER_THREADS).toLowerCase(Locale.ROOT).equals("virtual");
    }

    public int maxInflightPerTask() {
        Integer v = getInt(MAX_INFLIGHT_PER_TASK);
        return v != null ? v : (int) Math.min(maxInflight(), Math.max(1_000, 2L * workers()));
    }

    public int maxInflight() {
        Integer v = getInt(MAX_INFLIGHT);
        return v != null ? v : (int) Math.min(1 << 20, Math.max(10_000, 4L * workers()));
    }

    public long drainTimeoutMs() {
        return drainTimeoutMs;
    }

    public boolean unorderedNullKeys() {
        return getString(NULL_KEY_ORDERING).toLowerCase(Locale.ROOT).equals("unordered");
    }

    public List<String> parallelProcessors() {
        return getList(PARALLEL_PROCESSORS);
    }

    public List<String> serialProcessors() {
        return getList(SERIAL_PROCESSORS);
    }

    /** Whether every commit waits for every handed-out record ({@link #COMMIT_WAIT} {@code all}). */
    public boolean commitWaitsForAll() {
        return getString(COMMIT_WAIT).toLowerCase(Locale.ROOT).equals("all");
    }

    public long commitHeldMaxBytes() {
        return getLong(COMMIT_HELD_MAX_BYTES);
    }

    /** Whether key-value stores keep their caching layer ({@link #CACHING} {@code keep}). */
    public boolean keepCaching() {
        return getString(CACHING).toLowerCase(Locale.ROOT).equals("keep");
    }

    /** {@link #INLINE_BELOW_US} in nanoseconds; 0 if records always go to the workers. */
    public long inlineBelowNanos() {
        return inlineBelowNanos;
    }

    /**
     * {@link #STATUS_LISTENER} as {host, port}, or null when off.
     *
     * @throws ConfigException naming the key if it is not host:port, or not loopback without
     *     {@link #STATUS_ALLOW_REMOTE}
     */
    public String[] statusListener() {
        String v = getString(STATUS_LISTENER).trim();
        if (v.isEmpty()) {
            return null;
        }
        int colon = v.lastIndexOf(':');
        String host = colon > 0 ? v.substring(0, colon) : "";
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port;
        try {
            port = colon > 0 ? Integer.parseInt(v.substring(colon + 1)) : -1;
        } catch (NumberFormatException e) {
            port = -1;
        }
        if (host.isEmpty() || port < 0 || port > 65_535) {
            throw new ConfigException(
                    STATUS_LISTENER, v, "must be host:port, e.g. 127.0.0.1:7071 (port 0: any free port)");
        }
        if (!getBoolean(STATUS_ALLOW_REMOTE)) {
            InetAddress[] addrs;
            try {
                addrs = InetAddress.getAllByName(host);
            } catch (UnknownHostException e) {
                throw new ConfigException(STATUS_LISTENER, v, "unknown host " + host);
            }
            for (InetAddress a : addrs) {
                if (!a.isLoopbackAddress()) {
                    throw new ConfigException(
                            STATUS_LISTENER,
                            v,
                            host + " (" + a.getHostAddress()
                                    + ") is not a loopback address; the status listener has no authentication, so it binds "
                                    + "only to loopback unless " + STATUS_ALLOW_REMOTE + "=true");
                }
            }
        }
        return new String[] {host, Integer.toString(port)};
    }

    public boolean statusAllowRemote() {
        return getBoolean(STATUS_ALLOW_REMOTE);
    }

    /**
     * The given {@code streamshard.*} settings, from the application or from outside it, as
     * strings (what the status listener shows).
     */
    public SortedMap<String, String> shown() {
        SortedMap<String, String> out = new TreeMap<>();
        originalsWithPrefix(PREFIX, false).forEach((k, v) -> out.put(k, String.valueOf(v)));
        return out;
    }

    /** Every given {@code streamshard.*} key and where its value came from; keys left out have their default. */
    public SortedMap<String, Source> sources() {
        return sources;
    }

    /** The settings as a Markdown table, for the README. */
    public static String toMarkdown() {
        StringBuilder b =
                new StringBuilder("| key | type | default | valid values | meaning |\n|---|---|---|---|---|\n");
        for (ConfigDef.ConfigKey k : DEF.configKeys().values()) {
            Object dflt = k.defaultValue instanceof List<?> && ((List<?>) k.defaultValue).isEmpty()
                    ? "(empty)"
                    : k.name.equals(MAX_INFLIGHT_PER_TASK)
                            ? "min(max(1000, 2 × workers), max.inflight)"
                            : k.name.equals(MAX_INFLIGHT) ? "max(10000, 4 × workers)" : k.defaultValue;
            b.append("| `")
                    .append(k.name)
                    .append("` | ")
                    .append(k.type.toString().toLowerCase(Locale.ROOT))
                    .append(" | `")
                    .append(dflt)
                    .append("` | ")
                    .append(k.validator == null ? "" : k.validator.toString())
                    .append(" | ")
                    .append(k.documentation)
                    .append(" |\n");
        }
        return b.toString();
    }
}
