#!/usr/bin/env python3
"""The side-by-side benchmark: stock Kafka Streams vs streamshard vs Parallel Consumer.

Run through scripts/bench.sh, which builds everything and starts the local broker. For each
scenario and engine this script creates fresh topics, produces the same input (same seed, so the
same keys, sequence numbers and payloads), starts the app in its own JVM, waits until its group has
consumed the input, produces a paced tail for the latency measurement, stops the app, and checks the
output with `streamshard-load verify`. It writes results.json, results.md and results.png.
"""

import argparse
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOAD = os.environ.get("STREAMSHARD_LOAD", os.path.join(ROOT, "target", "release", "streamshard-load"))
VERSION = "0.1.0-SNAPSHOT"
# STREAMSHARD_AGENT: another agent jar (an A/B run of two builds on one broker).
AGENT = os.environ.get("STREAMSHARD_AGENT") or os.path.join(ROOT, "java-shim", "target", f"streamshard-agent-{VERSION}.jar")
CLK_TCK = os.sysconf("SC_CLK_TCK")
# OpenTelemetry's Java agent for the "+otel" engines (not bundled; Maven Central's, fetched by
# scripts/bench.sh): spans created and propagated, nothing exported.
OTEL_AGENT = os.environ.get("OTEL_AGENT") or os.path.expanduser(
    "~/.m2/repository/io/opentelemetry/javaagent/opentelemetry-javaagent/2.21.0/opentelemetry-javaagent-2.21.0.jar")
OTEL_OPTS = ["-Dotel.traces.exporter=none", "-Dotel.metrics.exporter=none", "-Dotel.logs.exporter=none"]
# Virtual-thread workers need Java 21+: the JDK the streamshard-virtual engine runs on.
VIRTUAL_JAVA = os.environ.get("BENCH_VIRTUAL_JAVA", "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java")
# Platform threads: streamshard refuses more workers (streamshard.workers), and Parallel
# Consumer's pool is platform threads too; the sweep runs both up to here.
MAX_PLATFORM_WORKERS = 4096
# The latency × concurrency sweep (issue 36): call latencies (µs) and worker counts.
SLOW_LATENCIES_US = [5_000, 50_000, 200_000, 500_000]
SLOW_WORKERS = [64, 1024, 4096, 10000]
# The slow service of http:<µs> work (bench/apps SlowService, its own JVM, no agent).
SERVICE_PORT = int(os.environ.get("BENCH_SERVICE_PORT", "18089"))
# The service with a capacity of the workers=auto scenario (examples' CapacityService, its own JVM).
CAPACITY_PORT = int(os.environ.get("BENCH_CAPACITY_PORT", "18090"))
CAPACITY_WORKERS = [16, 32, 50, 64, 128, 1024]


@dataclass
class Scenario:
    name: str
    title: str
    work: str
    partitions: int
    keys: int
    dist: str
    workers: int
    records: int
    engines: list
    guarantee: str = "alos"
    counts: bool = False
    payload: int = 100
    note: str = ""
    commit_ms: int = 0  # 0: Kafka Streams' default (30 s at-least-once, 100 ms exactly-once)
    shape: str = "copy"  # BenchApp's topology: copy, join (stream-table join + count), window (windowed count), fk
    stock_records: int = 0  # stock's input, if smaller (it runs at ~1 / latency; the rate is a steady-state rate)
    sweep: list = field(default_factory=list)
    # > 0: each run's input is what its ideal line would finish in this many seconds (stock: one
    # record per stream thread, the others min(workers, keys) / latency), at least 400 (stock 40),
    # at most `records`.
    seconds: float = 0
    # > 0: the http: calls go to a service that works on this many at once and queues the rest.
    capacity: int = 0


def scenarios(quick):
    """The scenario table; --quick shrinks the inputs and the engine lists so it runs in < 3 min."""
    n = (lambda full, small: small) if quick else (lambda full, small: full)
    io_engines = ["stock", "streamshard", "pc"] if quick else ["stock", "stock-4t", "streamshard", "pc"]
    return [
        Scenario("io", "I/O-bound: 5 ms call, 4 partitions, Zipf(1.1) over 10,000 keys, 64 workers",
                 "sleep:5000", 4, 10000, "zipf:1.1", 64, n(6000, 400), io_engines),
        Scenario("io-commit-1s", "I/O-bound with commit.interval.ms = 1 s: a drain before every commit", "sleep:5000",
                 4, 10000, "zipf:1.1", 64, n(6000, 400), [] if quick else ["stock", "streamshard"], commit_ms=1000,
                 note="Kafka Streams' at-least-once default is 30 s; streamshard drains the task before each commit."),
        Scenario("io-stateful", "I/O-bound + groupByKey().count()", "sleep:5000", 4, 10000, "zipf:1.1", 64,
                 n(6000, 400), ["stock", "streamshard"] if quick else ["stock", "streamshard", "pc"], counts=True,
                 note="Parallel Consumer keeps no state: its run does the I/O part only."),
        Scenario("join", "Enrichment: 5 ms call → leftJoin a KTable → count, 4 partitions, 10,000 uniform keys, "
                 "64 workers", "sleep:5000", 4, 10000, "uniform", 64, n(80000, 400),
                 ["stock", "streamshard"] if quick else ["stock", "streamshard", "streamshard-virtual"], shape="join", stock_records=n(4000, 400), note="Stock runs 4,000 of the records (at ~200 records/s). The join and the count run on the parallel path. Parallel Consumer has no "
                 "tables: not run."),
        # Change-data-capture style (issue 25): a table of orders, the call on the table, a
        # foreign-key join (rows move between foreign keys), a count per product.
        Scenario("fk", "CDC-style: a table of orders, 5 ms call (materialized mapValues) → foreign-key leftJoin "
                 "products → groupBy product → count, 4 partitions, 10,000 uniform keys, 64 workers", "sleep:5000",
                 4, 10000, "uniform", 64, n(40000, 400), ["stock", "streamshard"], shape="fk",
                 stock_records=n(2000, 200),
                 note="Stock runs 2,000 of the records. No record cache (both engines), so every update is "
                 "forwarded when it is processed. The output is the join's table: an update whose row changed "
                 "again before its response came back is superseded (dropped by the join as stale, as in "
                 "stock); each key's last update must come out, in order. Parallel Consumer has no tables: "
                 "not run."),
        Scenario("window", "Slow step then a windowed count: 5 ms call → to(output) and windowedBy().count(), "
                 "4 partitions, 10,000 uniform keys, 64 workers", "sleep:5000", 4, 10000, "uniform", 64,
                 n(80000, 400), ["stock", "streamshard"], shape="window", stock_records=n(4000, 400),
                 note="Stock runs 4,000 of the records. The windowed count is the task's serial region (in dequeue order, one record at a time); "
                 "Parallel Consumer has no windows: not run."),
        Scenario("cpu", "CPU-bound: ~200 µs CPU per record, 1 partition, 10,000 uniform keys, 2 workers",
                 "cpu:200", 1, 10000, "uniform", 2, n(100000, 1000),
                 ["streamshard"] if quick else ["stock", "streamshard", "pc"]),
        Scenario("noop", "no-op: value copied, 4 partitions, 10,000 uniform keys, 8 workers", "none", 4, 10000,
                 "uniform", 8, n(1000000, 5000), ["stock", "streamshard"] if quick else ["stock", "streamshard", "pc"]),
        Scenario("hot", "hot key: 50% of records on one key, 5 ms call, 4 partitions, 64 workers", "sleep:5000", 4,
                 10000, "hot:0.5", 64, n(4000, 200), ["streamshard"] if quick else ["stock", "streamshard", "pc"]),
        Scenario("io-eos", "I/O-bound, exactly-once v2", "sleep:5000", 4, 10000, "zipf:1.1", 64, n(6000, 400),
                 ["streamshard", "pc"] if quick else ["stock", "streamshard", "pc"], guarantee="eos"),
        # Uniform keys: per-key order is no limit, so the ideal line min(workers, keys) / latency is
        # reachable; these measure what each record's hand-off costs (issue 12).
        Scenario("uniform-5ms-64", "Uniform keys: 5 ms call, 4 partitions, 10,000 uniform keys, 64 workers",
                 "sleep:5000", 4, 10000, "uniform", 64, n(40000, 400), [] if quick else ["stock", "streamshard", "pc"],
                 stock_records=4000, note="Stock runs 4,000 of the records."),
        Scenario("uniform-5ms-256", "Uniform keys: 5 ms call, 256 workers", "sleep:5000", 4, 10000, "uniform", 256,
                 n(80000, 400), [] if quick else ["streamshard", "pc"]),
        Scenario("uniform-1ms-64", "Uniform keys: 1 ms call, 64 workers", "sleep:1000", 4, 10000, "uniform", 64,
                 n(100000, 400), [] if quick else ["streamshard", "pc"]),
        Scenario("uniform-5ms-64-count", "Uniform keys: 5 ms call + groupByKey().count(), 64 workers", "sleep:5000",
                 4, 10000, "uniform", 64, n(40000, 400), [] if quick else ["streamshard"], counts=True),
        # Cheap records with a repartition and a count: what the hand-off costs where there is
        # nothing to parallelise (records stay on the StreamThread below streamshard.inline.below.us).
        Scenario("wordcount", "Word-count style, cheap records: flatMapValues → groupBy (repartition) → count, "
                 "4 partitions, 10,000 uniform keys", "none", 4, 10000, "uniform", 8, n(200000, 2000),
                 [] if quick else ["stock", "streamshard"], shape="wordcount",
                 note="Each record is one word (its key), so every count is checked against the input."),
        Scenario("wordcount-eos", "Word-count style, exactly-once v2", "none", 4, 10000, "uniform", 8,
                 n(200000, 2000), [] if quick else ["stock", "streamshard"], shape="wordcount", guarantee="eos"),
        # A flaky service: the 5 ms call fails its first attempt for 10% of the records (issue 24).
        # stock and streamshard retry in the lambda (sleeping 100 ms between calls), streamshard-retry
        # has a plain lambda and streamshard.retry.* (3 attempts, 100 ms backoff).
        Scenario("flaky", "Flaky service: 5 ms call failing its first attempt for 10% of the records, "
                 "4 partitions, 10,000 uniform keys, 64 workers", "sleep:5000", 4, 10000, "uniform", 64,
                 n(40000, 400), ["stock", "streamshard", "streamshard-retry"], shape="flaky-loop",
                 stock_records=n(2000, 200),
                 note="Stock runs 2,000 of the records. The retry in the lambda sleeps 100 ms; "
                 "streamshard-retry waits 80-100 ms on the key's lane without holding a worker."),
        # Beside OpenTelemetry's Java agent (issue 35): a real HTTP call, so the agent has a client
        # span to make per record as well as the process and send spans.
        Scenario("otel", "Beside OpenTelemetry's Java agent: an HTTP call (java.net.http) answered after 5 ms, "
                 "4 partitions, 10,000 uniform keys, 64 workers", "http:5000", 4, 10000, "uniform", 64,
                 n(20000, 400), [] if quick else ["stock", "stock+otel", "streamshard", "streamshard+otel",
                                                  "streamshard+otel-last"],
                 stock_records=n(2000, 200),
                 note="Stock runs 2,000 of the records. +otel: OpenTelemetry's Java agent 2.21.0 first on the "
                 "command line (as a platform adds it), +otel-last: after streamshard's; spans created and "
                 "propagated, exporter off."),
        Scenario("sweep", "I/O-bound, workers 1 → 256", "sleep:5000", 4, 10000, "zipf:1.1", 0, n(4000, 300),
                 ["streamshard", "pc"], sweep=[4] if quick else [1, 4, 16, 64, 256]),
        # Commits that wait for no record (issue 37): the enrichment app with a 200 ms call, commits
        # on Kafka Streams' exactly-once default (100 ms) and at-least-once every second; the
        # streamshard-drain engine is the old commit, which waits for every handed-out record.
        Scenario("eos-200ms", "Exactly-once with a slow call: 200 ms call → leftJoin a KTable → count, exactly-once "
                 "v2 (commits every 100 ms), 4 partitions, 10,000 uniform keys, 4,096 workers", "sleep:200000", 4,
                 10000, "uniform", 4096, n(200000, 400),
                 [] if quick else ["streamshard", "streamshard-drain", "streamshard-virtual"], guarantee="eos",
                 shape="join",
                 note="streamshard-drain: streamshard.commit.wait=all, every commit waits for every record handed "
                 "to the workers (the behaviour before 2026-12-07). streamshard-virtual: virtual-thread workers."),
        Scenario("alos-1s-200ms", "At-least-once, commits every second, with a slow call: 200 ms call → leftJoin a "
                 "KTable → count, 4 partitions, 10,000 uniform keys, 4,096 workers", "sleep:200000", 4, 10000,
                 "uniform", 4096, n(200000, 400),
                 [] if quick else ["streamshard", "streamshard-drain", "streamshard-virtual"], shape="join",
                 commit_ms=1000, note="As eos-200ms, at-least-once with commit.interval.ms = 1 s."),
        Scenario("alos-1s-200ms-1k", "The same scaled to a quarter: 200 ms call → leftJoin a KTable → count, "
                 "at-least-once, 1 s commits, 4 partitions, 2,500 uniform keys, 1,024 workers", "sleep:200000", 4,
                 2500, "uniform", 1024, n(50000, 400), [] if quick else ["streamshard-virtual"], shape="join",
                 commit_ms=1000, note="alos-1s-200ms at a quarter of its workers, keys and records: the same "
                 "ideal run time (about 10 s) and per-key chains (20 records of 200 ms), a quarter of the CPU."),
        # The same with a serial region (issue 37): the windowed count runs in dequeue order after
        # the slow step; its commits paused that region and waited for no record since 2026-12-07.
        Scenario("eos-window-200ms", "Exactly-once with a slow call and a window: 200 ms call → to(output) and "
                 "windowedBy().count() (the task's serial region), exactly-once v2 (commits every 100 ms), "
                 "4 partitions, 10,000 uniform keys, 4,096 workers", "sleep:200000", 4, 10000, "uniform", 4096,
                 n(200000, 400), [] if quick else ["streamshard-virtual", "streamshard-virtual-drain"],
                 guarantee="eos", shape="window",
                 note="Virtual-thread workers. streamshard-virtual-drain: streamshard.commit.wait=all, every "
                 "commit waits for every record handed to the workers (a task with a serial region did so at "
                 "every commit before 2026-12-07)."),
        # workers=auto (issue 38): a service that works on 50 calls at once, 20 ms each, and queues
        # the rest (2,500 calls/s at most); fixed worker counts swept, then auto.
        Scenario("capacity", "A downstream with a capacity: an HTTP call to a service that works on 50 calls at "
                 "once for 20 ms each and queues the rest (2,500 calls/s at most), 4 partitions, 10,000 uniform "
                 "keys", "http:20000", 4, 10000, "uniform", 0, n(60000, 2000),
                 [] if quick else ["streamshard", "streamshard-auto"], sweep=CAPACITY_WORKERS, capacity=50,
                 note="streamshard-auto: streamshard.workers=auto (workers.max 4,096). The service's queue wait is "
                 "what every caller of it waits before its call is worked on."),
    ] + [
        # Slow calls (issue 36): latency × concurrency, each run against its ideal line. 1,000,000
        # uniform keys, so that per-key order is no bound at 10,000 in flight and the input's last
        # records are not long chains of one key (each link a whole call).
        Scenario(f"slow-{lat // 1000}ms", f"Slow calls: {lat // 1000} ms, 4 partitions, 1,000,000 uniform keys",
                 f"sleep:{lat}", 4, 1000000, "uniform", 0, n(200000, 2000),
                 [] if quick else ["stock", "streamshard", "streamshard-virtual", "pc"],
                 sweep=SLOW_WORKERS, seconds=10,
                 note="Each run's input is what its ideal line would finish in 10 s (200,000 at most); stock runs "
                 "once per latency. Platform threads (streamshard, Parallel Consumer) up to 4,096; "
                 "streamshard-virtual: streamshard.worker.threads=virtual on JDK 25.")
        for lat in SLOW_LATENCIES_US
    ]


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def load(*args, check=True):
    """Runs the load tool; returns its JSON summary (its last stdout line)."""
    cmd = [LOAD, str(args[0]), "--brokers", BROKERS] + [str(a) for a in args[1:]]
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    summary = json.loads(lines[-1]) if lines else {}
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    return summary, p.returncode


def classpath(module):
    """The class path of one of the bench/ Maven modules (apps, pc): its jar and its dependencies."""
    with open(os.path.join(ROOT, "bench", module, "target", "classpath.txt")) as f:
        deps = f.read().strip()
    jar = os.path.join(ROOT, "bench", module, "target", f"streamshard-bench-{module}-{VERSION}.jar")
    return jar + ":" + deps


def commit_ms(s, quick):
    """The Kafka Streams apps' commit interval: the scenario's, else 1 s in quick mode (so the
    harness does not wait 30 s for commits), else Kafka Streams' default."""
    if s.commit_ms:
        return s.commit_ms
    if s.guarantee == "eos":
        return 100
    return 1000 if quick else 30000


def command(engine, s, workers, run, topics, quick, status_port=None):
    java = ["java", "-Xmx1g", "-XX:+UseParallelGC", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-Dorg.slf4j.simpleLogger.log.io.streamshard=info"] + os.environ.get("BENCH_JAVA_OPTS", "").split()
    inp, out, counts = topics
    if engine == "pc":
        return java + ["-cp", classpath("pc"), "io.streamshard.bench.PcApp", BROKERS, run, inp, out, s.work,
                       s.guarantee, str(workers)]
    if engine.startswith("streamshard-virtual"):
        java[0] = VIRTUAL_JAVA
        java += ["--enable-native-access=ALL-UNNAMED", "-Dbench.set.streamshard.worker.threads=virtual"]
    agent = ["-javaagent:" + AGENT] if engine.startswith("streamshard") else []
    if engine.endswith("+otel"):
        agent = ["-javaagent:" + OTEL_AGENT] + agent + OTEL_OPTS
    elif engine.endswith("+otel-last"):
        agent = agent + ["-javaagent:" + OTEL_AGENT] + OTEL_OPTS
    if s.work.startswith("http:"):
        java.append(f"-Dbench.service.url=http://127.0.0.1:{CAPACITY_PORT if s.capacity else SERVICE_PORT}/")
    java.append("-Dbench.thread.cpu=true")
    if status_port:
        java.append(f"-Dbench.status.listener=127.0.0.1:{status_port}")
    threads = s.partitions if engine == "stock-4t" else 1
    if s.commit_ms or quick:
        java.append(f"-Dbench.commit.interval.ms={commit_ms(s, quick)}")
    shape = s.shape
    if shape == "fk":
        java.append("-Dbench.set.statestore.cache.max.bytes=0")
    if engine.endswith("-drain"):
        java.append("-Dbench.set.streamshard.commit.wait=all")
    if engine == "streamshard-retry":
        # The plain lambda; the agent retries (the loop's 100 ms as its backoff, at most 3 attempts).
        shape = shape.replace("-loop", "")
        java += ["-Dbench.set.streamshard.retry.max.attempts=3", "-Dbench.set.streamshard.retry.backoff.ms=100",
                 "-Dbench.set.streamshard.retry.backoff.max.ms=100"]
    return java + agent + ["-cp", classpath("apps"), "io.streamshard.bench.BenchApp", BROKERS, run, inp, out,
                           counts or "-", s.work, s.guarantee, str(threads), str(workers), shape]


class Sampler(threading.Thread):
    """Samples the app's CPU time (utime + stime) and peak RSS (VmHWM) from /proc."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.cpu_s = 0.0
        self.peak_rss_kb = 0
        self.stopped = threading.Event()

    def sample(self):
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            self.cpu_s = (int(fields[11]) + int(fields[12])) / CLK_TCK
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        self.peak_rss_kb = max(self.peak_rss_kb, int(line.split()[1]))
        except (FileNotFoundError, ProcessLookupError, IndexError):
            pass

    def run(self):
        while not self.stopped.wait(0.2):
            self.sample()

    def thread_cpu_s(self, prefix):
        """CPU seconds of the app's threads whose name starts with prefix (Linux keeps 15 characters)."""
        total = 0
        for tid in os.listdir(f"/proc/{self.pid}/task"):
            try:
                with open(f"/proc/{self.pid}/task/{tid}/comm") as f:
                    if not f.read().strip().startswith(prefix[:15]):
                        continue
                with open(f"/proc/{self.pid}/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
            except (FileNotFoundError, ProcessLookupError, IndexError):
                pass
        return total / CLK_TCK


class StatusWatcher(threading.Thread):
    """What a status page open on the app costs it: GET /api/status every second, as the page does."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.url = f"http://127.0.0.1:{port}/api/status"
        self.polls = 0
        self.errors = 0
        self.stopped = threading.Event()

    def run(self):
        import urllib.request
        while not self.stopped.wait(1.0):
            try:
                with urllib.request.urlopen(self.url, timeout=5) as r:
                    json.loads(r.read())
                self.polls += 1
            except (OSError, ValueError):
                self.errors += 1  # not listening yet (JVM starting), or stopping


def free_port():
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_internal(s, run, timeout, engine, logf):
    """After the input: the internal topics the output still depends on, in the order records flow."""
    topics = {"wordcount": ["words-repartition"],
              "fk": ["fk-subscription-registration-topic", "fk-subscription-response-topic"]}.get(s.shape, [])
    for t in topics:
        _, rc = load("wait", "--group", run, "--topic", f"{run}-{t}", "--timeout-s", timeout, check=False)
        if rc != 0:
            raise RuntimeError(f"{engine} did not consume {run}-{t}; see {logf.name}")


def latency_s(s):
    return int(s.work.split(":")[1]) / 1e6


def ideal_rate(s, engine, workers):
    """The ideal line of one run: records at once over the call's latency (stock: one record per
    stream thread; one thread, or one per partition for stock-4t)."""
    if engine.startswith("stock"):
        return (s.partitions if engine == "stock-4t" else 1) / latency_s(s)
    return min(workers, s.keys) / latency_s(s)


def sweep_points(s, engine):
    """The worker counts a sweep runs an engine at: stock once (it has no workers), platform
    threads up to what streamshard and Parallel Consumer take; auto once."""
    if engine == "streamshard-auto":
        return ["auto"]
    if not s.seconds:
        return s.sweep or [s.workers]
    if engine.startswith("stock"):
        return s.sweep[:1]
    if engine.startswith("streamshard-virtual"):
        return s.sweep
    return [w for w in s.sweep if w <= MAX_PLATFORM_WORKERS]


def run_one(s, engine, workers, out_dir, quick):
    records = s.stock_records if engine.startswith("stock") and s.stock_records else s.records
    if s.seconds:
        floor = 40 if engine.startswith("stock") else 400
        records = int(min(s.records, max(floor, ideal_rate(s, engine, workers) * s.seconds)))
    run = f"bench-{s.name}-{engine.replace('+', '-')}-w{workers}-{int(time.time() * 1000) % 10**9}"
    inp, out = run + "-in", run + "-out"
    counts = run + "-counts" if (s.counts or s.shape not in ("copy", "flaky-loop")) and engine != "pc" else None
    load("create", "--topic", inp, "--partitions", s.partitions)
    if s.shape in ("join", "fk"):
        # The table: one record for about two thirds of its keys (uniform draws), before the input.
        # fk: the products, k0 … k999 (BenchApp.FK_KEYS).
        table_keys = 1000 if s.shape == "fk" else s.keys
        load("create", "--topic", inp + "-table", "--partitions", s.partitions)
        load("produce", "--topic", inp + "-table", "--records", table_keys, "--keys", table_keys, "--dist",
             "uniform", "--payload", 20, "--seed", 7)
    load("create", "--topic", out, "--partitions", s.partitions, "--config", "message.timestamp.type=LogAppendTime")
    if counts:
        load("create", "--topic", counts, "--partitions", s.partitions)
    state = os.path.join(out_dir, "logs", run + ".state.json")
    load("produce", "--topic", inp, "--records", records, "--keys", s.keys, "--dist", s.dist, "--payload",
         s.payload, "--seed", 42, "--state", state)

    if s.capacity:
        service_get("reset")
    logf = open(os.path.join(out_dir, "logs", run + ".log"), "w")
    started = time.time()
    status_port = free_port() if engine == "streamshard+status" else None
    app = subprocess.Popen(command(engine, s, workers, run, (inp, out, counts), quick, status_port), stdout=logf,
                           stderr=subprocess.STDOUT, start_new_session=True)
    sampler = Sampler(app.pid)
    sampler.start()
    watcher = StatusWatcher(status_port) if status_port else None
    if watcher:
        watcher.start()
    result = {"scenario": s.name, "engine": engine, "workers": workers, "records": records,
              "partitions": s.partitions, "guarantee": s.guarantee}
    try:
        # Generous: stock at 5 ms per record with one thread needs records * 5 ms.
        timeout = 120 + records * 0.012 + commit_ms(s, quick) / 1000
        if s.seconds:
            timeout = 180 + 10 * records / ideal_rate(s, engine, workers)
        _, rc = load("wait", "--group", run, "--topic", inp, "--timeout-s", int(timeout), check=False)
        if rc != 0 or app.poll() is not None:
            raise RuntimeError(f"{engine} did not consume {inp} (wait rc={rc}, app rc={app.poll()}); see {logf.name}")
        wait_internal(s, run, int(timeout), engine, logf)
        backlog_s = time.time() - started
        result["backlog_s"] = round(backlog_s, 1)
        if s.capacity:
            stats = service_get("stats")
            result.update(service_wait_p50_ms=stats["wait_p50_ms"], service_wait_p99_ms=stats["wait_p99_ms"])
        # A paced tail at half the rate the app reached (startup included, so below capacity) for
        # the end-to-end latency: the backlog's records only measure queueing.
        rate = max(10, int(0.5 * records / backlog_s))
        tail = max(20, int(rate * (1 if quick else 4)))
        tail_from_us = int(time.time() * 1e6)
        load("produce", "--topic", inp, "--records", tail, "--keys", s.keys, "--dist", s.dist, "--payload",
             s.payload, "--seed", 43, "--state", state, "--rate", rate)
        _, rc = load("wait", "--group", run, "--topic", inp, "--timeout-s", 120, check=False)
        if rc != 0:
            raise RuntimeError(f"{engine} did not consume the tail of {inp}; see {logf.name}")
        wait_internal(s, run, 120, engine, logf)
        sampler.sample()
        if watcher:
            # The listener's runtime thread and the Java thread that feeds it: what the status costs.
            result.update(status_cpu_s=round(sampler.thread_cpu_s("streamshard-status"), 2))
        result.update(cpu_s=round(sampler.cpu_s, 2), peak_rss_mb=round(sampler.peak_rss_kb / 1024, 1),
                      wall_s=round(time.time() - started, 1), tail_records=tail, tail_rate=rate,
                      tail_from_us=tail_from_us)
    finally:
        sampler.stopped.set()
        if watcher:
            watcher.stopped.set()
            result.update(status_polls=watcher.polls)
        os.killpg(app.pid, signal.SIGTERM)
        try:
            app.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(app.pid, signal.SIGKILL)
            app.wait()
        logf.close()
    result.update(threads_cpu_per_record(logf.name, records))
    limits = limit_series(logf.name)
    if limits:
        result["limit_series"] = limits
    args = ["verify", "--input", inp, "--output", out, "--latency-after-us", tail_from_us]
    if s.shape == "fk":
        args += ["--table"]  # its counts are per product: not checkable against the input's keys
    elif counts:
        args += ["--counts", counts]
    summary, _ = load(*args, check=False)
    result["verify"] = summary
    result["rate_rps"] = summary.get("rate_rps")
    lat = summary.get("latency_ms") or {}
    result["p50_ms"], result["p99_ms"] = lat.get("p50"), lat.get("p99")
    log(f"{s.name:12} {engine:12} w={workers:<4} rate={result['rate_rps']} rec/s p50={result['p50_ms']} ms "
        f"p99={result['p99_ms']} ms cpu={result['cpu_s']} s rss={result['peak_rss_mb']} MB "
        + (f"status cpu={result.get('status_cpu_s')} s polls={result.get('status_polls')} " if watcher else "") +
        f"verify={'ok' if summary.get('ok') else 'FAILED ' + json.dumps(summary)}")
    return result


def service_get(path):
    """GET /<path> of the capacity service: its JSON answer."""
    with urllib.request.urlopen(f"http://127.0.0.1:{CAPACITY_PORT}/{path}", timeout=10) as r:
        return json.loads(r.read().decode())


def limit_series(log_path):
    """streamshard.workers=auto: [records done, limit] every half second from BenchApp's lines (empty
    without)."""
    series = []
    with open(log_path) as f:
        for line in f:
            if line.startswith("bench thread cpu:") and " limit=" in line:
                p = dict(kv.split("=") for kv in line.split(":", 1)[1].split())
                series.append([int(p["records"]), int(p["limit"])])
    return series


def threads_cpu_per_record(log_path, records):
    """The StreamThreads' and the workers' CPU per record over the steady part of the backlog (from 20%
    to 90% of its records: start-up, JIT warm-up and the end left out), from BenchApp's half-second
    lines; empty if it printed none (Parallel Consumer) or the run was too short for two."""
    samples = []
    with open(log_path) as f:
        for line in f:
            if line.startswith("bench thread cpu:"):
                p = dict(kv.split("=") for kv in line.split(":", 1)[1].split())
                samples.append((int(p["records"]), float(p["stream"]), float(p["workers"]),
                                int(p.get("streamBytes", 0)), int(p.get("workersBytes", 0))))
    lo = next((x for x in samples if x[0] >= 0.2 * records), None)
    hi = next((x for x in reversed(samples) if x[0] <= 0.9 * records), None)
    if not lo or not hi or hi[0] - lo[0] < 0.3 * records:
        return {}
    n = hi[0] - lo[0]
    return {"stream_thread_us_per_rec": round((hi[1] - lo[1]) * 1e6 / n, 1),
            "workers_us_per_rec": round((hi[2] - lo[2]) * 1e6 / n, 1),
            "stream_thread_bytes_per_rec": round((hi[3] - lo[3]) / n),
            "workers_bytes_per_rec": round((hi[4] - lo[4]) / n)}


def fmt(x, digits=0):
    if x is None:
        return "—"
    return f"{x:,.{digits}f}"


def per_key_bound(results, s):
    """The per-key ordering bound for a sleep scenario: records / (hottest key's records * latency)."""
    if not s.work.startswith("sleep:"):
        return None
    hot = [r["verify"].get("max_key_records") for r in results if r["scenario"] == s.name and r.get("verify")]
    hot = [h for h in hot if h]
    if not hot:
        return None
    latency_s = int(s.work.split(":")[1]) / 1e6
    records = max((r.get("verify") or {}).get("input", 0) for r in results if r["scenario"] == s.name)
    return records / (max(hot) * latency_s)


def threads_cpu(r):
    st, w = r.get("stream_thread_us_per_rec"), r.get("workers_us_per_rec")
    return "" if st is None else f"{st:.1f}, {w:.1f}"


def threads_bytes(r):
    st, w = r.get("stream_thread_bytes_per_rec"), r.get("workers_bytes_per_rec")
    return "" if st is None else f"{st:,}, {w:,}"


def markdown(results, scns, quick, elapsed):
    lines = [f"<!-- written by bench/run.py{' --quick' if quick else ''}; do not edit -->", "",
             "| scenario | engine | workers | records/s | vs stock | vs Parallel Consumer | middle-80% records/s | "
             "p50 ms | p99 ms | CPU s | CPU µs / record: StreamThreads, workers | bytes allocated / record: StreamThreads, workers | "
             "peak RSS MB | verify |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for s in scns:
        rows = [r for r in results if r["scenario"] == s.name]
        stock = next((r.get("rate_rps") for r in rows if r["engine"] == "stock"), None)
        for r in rows:
            pc = next((x.get("rate_rps") for x in rows if x["engine"] == "pc" and x["workers"] == r["workers"]), None)
            rate = r.get("rate_rps")
            vs_stock = f"{rate / stock:.2f}×" if rate and stock and r["engine"] != "stock" else ""
            vs_pc = f"{rate / pc:.2f}×" if rate and pc and r["engine"] != "pc" else ""
            v = r.get("verify") or {}
            ok = "ok" if v.get("ok") else ("FAILED: " + r.get("error", json.dumps(v))[:120])
            lines.append(f"| {s.name} | {r['engine']} | {r['workers']} | {fmt(rate)} | {vs_stock} | {vs_pc} | "
                         f"{fmt(v.get('rate_mid80_rps'))} | {fmt(r.get('p50_ms'))} | {fmt(r.get('p99_ms'))} | {fmt(r.get('cpu_s'), 1)} | "
                         f"{threads_cpu(r)} | {threads_bytes(r)} | {fmt(r.get('peak_rss_mb'))} | {ok} |")
    lines += slow_table(results, scns)
    lines += capacity_table(results, scns)
    lines += ["", "Scenarios:", ""]
    for s in scns:
        bound = per_key_bound(results, s)
        extra = f" Per-key ordering bound on this input: {bound:,.0f} records/s." if bound else ""
        if s.work.startswith(("sleep:", "http:")) and s.workers:
            ideal = min(s.workers, s.keys) / (int(s.work.split(":")[1]) / 1e6)
            extra += f" Ideal min(workers, keys) / latency: {ideal:,.0f} records/s."
        lines.append(f"- `{s.name}`: {s.title}; {s.records:,} records, {s.payload}-byte values, "
                     f"{'exactly-once v2' if s.guarantee == 'eos' else 'at-least-once'}, commit.interval.ms "
                     f"{commit_ms(s, quick):,}.{extra} {s.note}".rstrip())
    lines += ["", f"Total benchmark time: {elapsed:.0f} s."]
    return "\n".join(lines) + "\n"


SLOW_ENGINES = ["stock", "streamshard", "streamshard-virtual", "pc"]


def settled_limit(r):
    """auto: the median limit while the backlog's middle (20% to 90% of its records) ran."""
    v = sorted(lim for done, lim in r.get("limit_series", []) if 0.2 * r["records"] <= done <= 0.9 * r["records"])
    return v[len(v) // 2] if v else None


def capacity_table(results, scns):
    """workers=auto against fixed counts on the service with a capacity."""
    lines = []
    for s in [s for s in scns if s.capacity and any(r["scenario"] == s.name for r in results)]:
        rows = [r for r in results if r["scenario"] == s.name]
        best = max((r.get("rate_rps") or 0 for r in rows if r["engine"] == "streamshard"), default=0)
        unloaded = int(s.work.split(":")[1]) / 1000
        lines += ["", f"A downstream with a capacity ({s.capacity} calls at once, {unloaded:g} ms each, the rest "
                  f"queued): records/s, against the best fixed count, and the service's queue wait", "",
                  "| workers | records/s | of the best fixed | service queue wait p50 / p99 ms | limit settled at |",
                  "|---|---:|---:|---:|---:|"]
        for r in rows:
            rate = r.get("rate_rps")
            lines.append(f"| {r['workers']} | {fmt(rate)} | {rate / best:.2f} | " if rate and best else
                         f"| {r['workers']} | {fmt(rate)} | | ")
            lines[-1] += (f"{fmt(r.get('service_wait_p50_ms'))} / {fmt(r.get('service_wait_p99_ms'))} | "
                          f"{fmt(settled_limit(r))} |")
    return lines


def capacity_chart(results, scns, path):
    """workers=auto: its limit over the run, against the service's capacity."""
    runs = [(s, r) for s in scns if s.capacity for r in results
            if r["scenario"] == s.name and r.get("limit_series")]
    if not runs:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for s, r in runs:
        v = [lim for _, lim in r["limit_series"]]
        ax.plot([i * 0.5 for i in range(len(v))], v, label=f"{s.name}: workers=auto limit")
        ax.axhline(s.capacity, color="#888888", linestyle="--", label=f"the service's capacity ({s.capacity})")
    ax.set_xlabel("seconds since the app started")
    ax.set_ylabel("records running at once (limit)")
    ax.set_ylim(bottom=0)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def slow_table(results, scns):
    """The latency × concurrency sweep: each run's records/s and its fraction of its ideal line."""
    slow = [s for s in scns if s.seconds and any(r["scenario"] == s.name for r in results)]
    if not slow:
        return []
    lines = ["", "Slow calls, latency × workers: records/s (fraction of the ideal line min(workers, keys) / "
             "latency; stock, one stream thread: 1 / latency)", "",
             "| call | workers | ideal | " + " | ".join(SLOW_ENGINES) + " |",
             "|---|---:|---:|" + "---:|" * len(SLOW_ENGINES)]
    for s in slow:
        for w in s.sweep:
            cells = []
            for e in SLOW_ENGINES:
                r = next((r for r in results if r["scenario"] == s.name and r["engine"] == e
                          and r["workers"] == (s.sweep[0] if e == "stock" else w)), None)
                if not r or (e == "stock" and w != s.sweep[0]):
                    cells.append("")
                elif not r.get("rate_rps"):
                    cells.append("failed")
                else:
                    cells.append(f"{r['rate_rps']:,.0f} ({r['rate_rps'] / ideal_rate(s, e, r['workers']):.2f})")
            lines.append(f"| {latency_s(s) * 1000:g} ms | {w:,} | {ideal_rate(s, 'streamshard', w):,.0f} | "
                         + " | ".join(cells) + " |")
    return lines


def slow_chart(results, scns, path):
    """One panel per call latency: records/s against workers for each engine, with the ideal line."""
    slow = [s for s in scns if s.seconds and any(r["scenario"] == s.name for r in results)]
    if not slow:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"stock": "#888888", "streamshard": "#1f77b4", "streamshard-virtual": "#9467bd", "pc": "#ff7f0e"}
    fig, axes = plt.subplots(1, len(slow), figsize=(4.2 * len(slow), 4.2), squeeze=False)
    for ax, s in zip(axes[0], slow):
        ax.plot(s.sweep, [ideal_rate(s, "streamshard", w) for w in s.sweep], "--", color="#2ca02c",
                label="ideal min(workers, keys) / latency")
        for e in SLOW_ENGINES:
            pts = sorted((r["workers"], r["rate_rps"]) for r in results
                         if r["scenario"] == s.name and r["engine"] == e and r.get("rate_rps"))
            if e == "stock" and pts:
                ax.axhline(pts[0][1], linestyle=":", color=colors[e], label="stock")
            elif pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color=colors[e], label=e)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("workers")
        ax.set_title(f"{latency_s(s) * 1000:g} ms call")
    axes[0][0].set_ylabel("records/s")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def chart(results, scns, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(14, 5.5))
    main = [s for s in scns if not s.sweep]
    engines = ["stock", "stock-4t", "streamshard", "streamshard-retry", "pc"]
    colors = {"stock": "#888888", "stock-4t": "#bbbbbb", "streamshard": "#1f77b4", "streamshard-retry": "#2ca02c",
              "pc": "#ff7f0e"}
    width = 0.2
    for i, e in enumerate(engines):
        xs, ys = [], []
        for j, s in enumerate(main):
            r = next((r for r in results if r["scenario"] == s.name and r["engine"] == e), None)
            if r and r.get("rate_rps"):
                xs.append(j + (i - 1.5) * width)
                ys.append(r["rate_rps"])
        if xs:
            ax1.bar(xs, ys, width, label=e, color=colors[e])
    ax1.set_xticks(range(len(main)))
    ax1.set_xticklabels([s.name for s in main])
    ax1.set_yscale("log")
    ax1.set_ylabel("records/s (steady state, log scale)")
    ax1.set_title("Throughput by scenario")
    ax1.legend()

    sweep = next((s for s in scns if s.name == "sweep"), None)
    if sweep:
        for e in ["streamshard", "pc"]:
            pts = sorted((r["workers"], r["rate_rps"]) for r in results
                         if r["scenario"] == sweep.name and r["engine"] == e and r.get("rate_rps"))
            if pts:
                ax2.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=e, color=colors[e])
        latency_s = int(sweep.work.split(":")[1]) / 1e6
        ws = sweep.sweep
        ax2.plot(ws, [min(w, sweep.keys) / latency_s for w in ws], "--", color="#2ca02c",
                 label="ideal min(workers, keys) / latency")
        bound = per_key_bound(results, sweep)
        if bound:
            ax2.axhline(bound, linestyle=":", color="#d62728", label="per-key ordering bound")
        ax2.set_xscale("log", base=2)
        ax2.set_yscale("log")
        ax2.set_xlabel("workers")
        ax2.set_ylabel("records/s")
        ax2.set_title(sweep.title)
        ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def write_reports(results, scns, quick, elapsed, out):
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(markdown(results, scns, quick, elapsed))
    chart(results, scns, os.path.join(out, "results.png"))
    slow_chart(results, scns, os.path.join(out, "results-slow.png"))
    capacity_chart(results, scns, os.path.join(out, "results-capacity.png"))


def main():
    global BROKERS
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small inputs, fewer engines: under 3 minutes")
    ap.add_argument("--only", help="comma-separated scenario names")
    ap.add_argument("--out", help="where results go (default docs/benchmarks, or target/bench-quick with --quick)")
    ap.add_argument("--engines", help="comma-separated engines to run (default: each scenario's list); "
                    "streamshard+status runs streamshard with its status listener on and polled every second")
    ap.add_argument("--workers", help="comma-separated worker counts: only these points of a sweep")
    ap.add_argument("--merge", action="store_true",
                    help="keep the other runs in --out/results.json and replace only the ones run now")
    ap.add_argument("--report-only", action="store_true",
                    help="only rewrite results.md and results.png from the results.json in --out")
    ap.add_argument("--brokers", default=os.environ.get("STREAMSHARD_BOOTSTRAP", "127.0.0.1:9092"))
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply every input by this (longer runs for steady-state CPU per record)")
    a = ap.parse_args()
    BROKERS = a.brokers
    if a.out is None:
        a.out = os.path.join(ROOT, "target", "bench-quick") if a.quick else os.path.join(ROOT, "docs", "benchmarks")
    scns = [s for s in scenarios(a.quick) if s.engines]
    if a.scale != 1.0:
        scns = [dataclasses.replace(s, records=int(s.records * a.scale),
                                    stock_records=int(s.stock_records * a.scale)) for s in scns]
    if a.only:
        wanted = a.only.split(",")
        unknown = set(wanted) - {s.name for s in scns}
        if unknown:
            sys.exit(f"unknown scenario(s): {', '.join(sorted(unknown))}")
        scns = [s for s in scns if s.name in wanted]
    if a.report_only:
        with open(os.path.join(a.out, "results.json")) as f:
            saved = json.load(f)
        ran = {r["scenario"] for r in saved["results"]}
        scns = [s for s in scns if s.name in ran]
        write_reports(saved["results"], scns, a.quick, saved["elapsed_s"], a.out)
        return
    os.makedirs(os.path.join(a.out, "logs"), exist_ok=True)
    began = time.time()
    results = []
    service = None
    capacity = None
    cap = next((s for s in scns if s.capacity and s.engines), None)
    if cap:
        capacity = subprocess.Popen(["java", "-Xmx512m", "-cp", classpath("apps"), "io.streamshard.examples.CapacityService",
                                     str(CAPACITY_PORT), str(cap.capacity), cap.work.split(":")[1]],
                                    stdout=subprocess.DEVNULL, start_new_session=True)
        time.sleep(2)
    if any(s.work.startswith("http:") and not s.capacity for s in scns):
        service = subprocess.Popen(["java", "-Xmx512m", "-cp", classpath("apps"), "io.streamshard.bench.SlowService",
                                    str(SERVICE_PORT)], stdout=subprocess.DEVNULL, start_new_session=True)
        time.sleep(2)
    for s in scns:
        # streamshard+status: streamshard with the status listener on and a watcher polling it every second.
        extra = ["streamshard+status"] if a.engines and "streamshard+status" in a.engines.split(",") \
            and "streamshard" in s.engines else []
        for engine in [e for e in s.engines if not a.engines or e in a.engines.split(",")] + extra:
            for workers in sweep_points(s, engine):
                # Stock has no workers: its one run of a sweep stays.
                if a.workers and str(workers) not in a.workers.split(",") and not engine.startswith("stock"):
                    continue
                try:
                    results.append(run_one(s, engine, workers, a.out, a.quick))
                except Exception as e:  # one failed run is reported, the others still run
                    log(f"{s.name} {engine} w={workers} FAILED: {e}")
                    results.append({"scenario": s.name, "engine": engine, "workers": workers,
                                    "records": s.records, "error": str(e)})
    for p in (service, capacity):
        if p:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait()
    elapsed = time.time() - began
    saved_path = os.path.join(a.out, "results.json")
    if a.merge and not os.path.exists(saved_path):
        log(f"--merge: no {saved_path} yet; writing this run's results alone")
    if a.merge and os.path.exists(saved_path):
        with open(saved_path) as f:
            saved = json.load(f)
        now = {(r["scenario"], r["engine"], r["workers"]) for r in results}
        kept = [r for r in saved["results"] if (r["scenario"], r["engine"], r["workers"]) not in now]
        order = {s.name: i for i, s in enumerate(scenarios(a.quick))}
        engines = ["stock", "stock-4t", "stock+otel", "streamshard", "streamshard-drain", "streamshard-virtual",
                   "streamshard-virtual-drain", "streamshard-retry",
                   "streamshard+status",
                   "streamshard+otel", "streamshard+otel-last", "pc"]
        results = sorted(kept + results, key=lambda r: (order.get(r["scenario"], 99), engines.index(r["engine"]),
                                                        r["workers"]))
        ran = {r["scenario"] for r in results}
        scns = [s for s in scenarios(a.quick) if s.name in ran]
        elapsed += saved["elapsed_s"]
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"quick": a.quick, "elapsed_s": round(elapsed), "results": results}, f, indent=1)
    write_reports(results, scns, a.quick, elapsed, a.out)
    log(f"done in {elapsed:.0f} s: {a.out}/results.md, results.json, results.png")
    failed = [r for r in results if not (r.get("verify") or {}).get("ok")]
    if failed:
        for r in failed:
            log(f"FAILED: {r['scenario']} {r['engine']} w={r['workers']}: {r.get('error') or r.get('verify')}")
        sys.exit(1)


if __name__ == "__main__":
    main()
