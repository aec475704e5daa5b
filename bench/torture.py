#!/usr/bin/env python3
"""The torture test: overlapping faults under load, then a strict verification.

Run through scripts/torture.sh, which builds everything. For each rebalance protocol this script
starts its own broker (tests/broker/broker.sh, so it can stop and resume it), creates fresh topics,
starts three TortureApp instances with the agent (2 stream threads each), feeds paced input with
the Rust load tool while a seeded fault schedule runs, then stops the input, lets every instance
catch up, stops them gracefully and checks the output with `streamshard-load verify`:

- every input record in the output, per-key order (at-least-once: a duplicate only as a replay),
  and under exactly-once no duplicate and counts and totals exact (at-least-once: at least exact);
- the probe of every instance: zero keys seen on two threads at once;
- no instance ever in ERROR, no stream thread replaced, every graceful stop done in time;
- at least one task revoked and handed back to the same instance (or moved between the two
  threads of one instance), as seen in the instances' own task lists (read every 100 ms); each
  task has a standby replica, which the assignors prefer when a task's owner leaves, so a task
  taken by the joining instance goes back where it was when that instance leaves;
- standby tasks assigned at all (the setting reached the group);
- exactly-once: no hanging transaction once the group caught up (Kafka's `find-hanging`).

The faults, which overlap (each runs in its own thread; one at a time per instance):
kill -9 and restart after a random delay; a rolling restart (graceful stop/start of each instance
in turn); an extra instance joining and leaving; a stream thread removed and added back (its
tasks are revoked and reassigned within the group, often to the same instance); the broker
stopped and resumed on its data after longer than the apps' request timeout (under exactly-once
the apps pause for a second before the stop; see fault_broker); a burst of unpaced input that
fills every task up to its in-flight cap.

It writes <report-dir>/torture-<guarantee>.json, .md and .png (RSS and heap after GC over time,
faults marked). Exit 0 only if every check passed.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOAD = os.environ.get("STREAMSHARD_LOAD", os.path.join(ROOT, "target", "release", "streamshard-load"))
VERSION = "0.1.0-SNAPSHOT"
BROKER_SH = os.path.join(ROOT, "tests", "broker", "broker.sh")
PARTITIONS = 8
KEYS = 10000
DIST = "zipfhot:1.1:0.05"  # Zipf(1.1) over the keys plus key k0 with 5% of all records
WORKERS = 32
INFLIGHT_CAP = 200  # streamshard.max.inflight.per.task: small, so the burst reaches it on every task
# --long-calls: 100-500 ms calls (model or API calls), so records are in flight at every commit
# and every fault; uniform keys (a 5% hot key with 300 ms calls would fall behind for good), and
# as many workers and slots as that needs.
LONG_CALLS = {"call_ms": "100-500", "dist": "uniform", "workers": 1024, "inflight_cap": 2000}


def call_ms(args):
    return LONG_CALLS["call_ms"] if args.long_calls else "1-5"


def dist(args):
    return LONG_CALLS["dist"] if args.long_calls else DIST


def workers(args):
    return LONG_CALLS["workers"] if args.long_calls else WORKERS


def inflight_cap(args):
    return LONG_CALLS["inflight_cap"] if args.long_calls else INFLIGHT_CAP
REQUEST_TIMEOUT_MS = 10000  # the apps' request.timeout.ms; the broker outage lasts longer
T0 = time.time()
LIVE = set()  # every Instance started, so none outlives the harness


def log(msg):
    print(f"[torture {time.strftime('%H:%M:%S')} +{time.time() - T0:6.1f}s] {msg}", flush=True)


class Run:
    """Settings and shared state of one protocol's run."""

    def __init__(self, args, protocol, workdir):
        self.args = args
        self.protocol = protocol
        self.guarantee = args.guarantee
        self.workdir = workdir
        self.brokers = f"127.0.0.1:{args.broker_port}"
        self.prefix = f"torture-{args.guarantee}-{protocol}-{int(time.time())}"
        self.rng = random.Random(f"{args.seed}-{protocol}")  # its own fault plan per protocol
        self.instances = {}
        self.faults = []
        self.skipped = []
        self.failures = []
        self.samples = []
        self.lock = threading.Lock()
        self.broker_lock = threading.Lock()
        self.burst_requests = []
        self.stop = threading.Event()

    def fail(self, what):
        with self.lock:
            self.failures.append(what)
        log("FAILURE: " + what)


def load(run, *args, check=True, timeout=None):
    cmd = [LOAD, str(args[0]), "--brokers", run.brokers] + [str(a) for a in args[1:]]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    summary = json.loads(lines[-1]) if lines else {}
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    return summary, p.returncode


def broker(run, command):
    env = dict(os.environ, BROKER_PORT=str(run.args.broker_port))
    p = subprocess.run(["bash", BROKER_SH, command], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"broker.sh {command} failed: {p.stderr.strip()[-1500:]}")
    return (p.stdout + p.stderr).strip().splitlines()[-1:]


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return None


class Instance:
    """One TortureApp JVM slot (A, B, C, or the extra D), restarted under the same name and state."""

    def __init__(self, run, name):
        self.run = run
        self.name = name
        self.busy = threading.Lock()  # one fault at a time on this instance
        self.io = threading.RLock()  # guards proc, generation and the stats reading
        self.expected_exit = False  # set before the harness kills or stops it
        self.death_reported = False
        self.graceful = []  # generations the harness stopped gracefully
        self.proc = None
        self.generation = 0
        self.stats_lines = []  # every stats line of every generation: (generation, dict)
        self.read_pos = 0
        self.state_dir = os.path.join(run.workdir, name, "state")
        os.makedirs(self.state_dir, exist_ok=True)

    def stats_path(self, generation=None):
        return os.path.join(self.run.workdir, self.name, f"stats-{generation or self.generation}.jsonl")

    def start(self):
        with self.io:
            self._start()

    def _start(self):
        LIVE.add(self)
        self.generation += 1
        self.read_pos = 0
        a = self.run.args
        java = [a.virtual_workers, "--enable-native-access=ALL-UNNAMED"] if a.virtual_workers else ["java"]
        cmd = [*java, "-Xmx384m", f"-Dtorture.call.ms={call_ms(a)}", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
               "-Dorg.slf4j.simpleLogger.log.io.streamshard=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
               *([] if a.stock else ["-javaagent:" + a.agent]), "-cp", a.classpath,
               "io.streamshard.bench.TortureApp",
               self.run.brokers, self.run.prefix, self.run.prefix, self.run.guarantee, self.run.protocol,
               self.state_dir, self.stats_path(),
               f"streamshard.workers={workers(a)}", f"streamshard.max.inflight.per.task={inflight_cap(a)}",
               f"request.timeout.ms={REQUEST_TIMEOUT_MS}"]
        if self.run.guarantee == "alos":
            cmd.append("commit.interval.ms=2000")
        if a.virtual_workers:
            cmd.append("streamshard.worker.threads=virtual")
        logf = open(os.path.join(self.run.workdir, self.name, f"app-{self.generation}.log"), "w")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=logf, stderr=subprocess.STDOUT,
                                     start_new_session=True, text=True)
        self.expected_exit = False
        self.death_reported = False
        logf.close()
        log(f"{self.name}: started (generation {self.generation}, pid {self.proc.pid})")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def poll_stats(self):
        """Reads the new lines of the current generation's stats file; returns the last one."""
        with self.io:
            return self._poll_stats()

    def _poll_stats(self):
        path = self.stats_path()
        try:
            with open(path) as f:
                f.seek(self.read_pos)
                chunk = f.read()
        except FileNotFoundError:
            return self.last()
        complete = chunk[:chunk.rfind("\n") + 1]
        self.read_pos += len(complete.encode())
        for line in complete.splitlines():
            try:
                self.stats_lines.append((self.generation, json.loads(line)))
            except ValueError:
                pass
        return self.last()

    def last(self):
        for gen, s in reversed(self.stats_lines):
            if gen == self.generation:
                return s
        return None

    def wait_running(self, timeout=180):
        deadline = time.time() + timeout
        while time.time() < deadline:
            s = self.poll_stats()
            if not self.alive():
                self.run.fail(f"{self.name} exited (code {self.proc.returncode}) before reaching RUNNING")
                return False
            if s and s["state"] == "RUNNING" and s["threads"] > 0:
                return True
            time.sleep(0.5)
        self.run.fail(f"{self.name} not RUNNING within {timeout} s")
        return False

    def kill9(self):
        self.expected_exit = True
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        log(f"{self.name}: kill -9")

    def stop_graceful(self, timeout=120):
        if not self.alive():
            return
        t = time.time()
        self.expected_exit = True
        self.graceful.append(self.generation)
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.run.fail(f"{self.name}: graceful stop took over {timeout} s (killed)")
            self.kill9()
            return
        self.poll_stats()
        log(f"{self.name}: stopped gracefully in {time.time() - t:.1f} s")

    def command(self, line):
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (OSError, ValueError, AttributeError):
            pass


# ---------------------------------------------------------------------------------------------
# Input
# ---------------------------------------------------------------------------------------------

class Producer(threading.Thread):
    """Paced input in one-second chunks through one --state file (so per-key sequence numbers go on
    across chunks); a burst requested by a fault is the next chunk, unpaced."""

    def __init__(self, run, seconds):
        super().__init__(daemon=True)
        self.r = run
        self.seconds = seconds
        self.produced = 0
        self.errors = []

    def run(self):
        r = self.r
        state = os.path.join(r.workdir, "input-state.json")
        chunk = 0
        end = time.time() + self.seconds
        try:
            self.chunks(r, state, chunk, end)
        except Exception as e:  # the input stopping early would shrink the test: a failure
            r.fail(f"the input producer raised {e!r}")

    def chunks(self, r, state, chunk, end):
        while time.time() < end:
            chunk += 1
            with r.lock:
                burst = r.burst_requests.pop(0) if r.burst_requests else 0
            n, rate = (burst, 0) if burst else (r.args.rate, r.args.rate)
            try:
                summary, code = load(r, "produce", "--topic", r.prefix + "-input", "--records", n, "--keys", KEYS,
                                     "--dist", dist(r.args), "--payload", 100, "--rate", rate, "--seed", r.args.seed + chunk,
                                     "--state", state, check=False, timeout=600)
            except subprocess.TimeoutExpired:
                self.errors.append(f"chunk {chunk} timed out")
                continue
            if code == 0:
                self.produced += summary["records"]
            else:
                # A failed chunk may have written part of its records: verify reads the input topic
                # itself, so nothing is lost to the check, and the state file skips the failed
                # chunk's sequence numbers (never reused). Reported, and a failed check.
                self.errors.append(f"chunk {chunk}: {summary.get('error', code)}")
                log(f"producer chunk {chunk} failed: {summary.get('error', code)}")


class TableUpdater(threading.Thread):
    """A slow stream of table updates while the input runs: the join reads a changing table."""

    def __init__(self, run, seconds):
        super().__init__(daemon=True)
        self.r = run
        self.seconds = seconds

    def run(self):
        r = self.r
        load(r, "produce", "--topic", r.prefix + "-table", "--records", self.seconds * 5, "--keys", KEYS,
             "--dist", "uniform", "--payload", 20, "--rate", 5, "--seed", 7,
             "--state", os.path.join(r.workdir, "table-state.json"), check=False, timeout=self.seconds + 600)


class Sampler(threading.Thread):
    """RSS (from /proc) and heap after GC (from the stats files) of every live instance, every 2 s."""

    def __init__(self, run):
        super().__init__(daemon=True)
        self.r = run

    def run(self):
        r = self.r
        while not r.stop.wait(2.0):
            now = time.time() - T0
            for inst in list(r.instances.values()):
                with inst.io:
                    if inst.proc is None:
                        continue
                    if not inst.alive():
                        if not inst.expected_exit and not inst.death_reported:
                            inst.death_reported = True
                            r.fail(f"{inst.name}#{inst.generation} died on its own "
                                   f"(exit code {inst.proc.returncode})")
                        continue
                s = inst.poll_stats()
                kb = rss_kb(inst.proc.pid)
                if kb is None:
                    continue
                with r.lock:
                    r.samples.append({"t": round(now, 1), "instance": inst.name, "rss_mb": round(kb / 1024, 1),
                                      "heap_after_gc_mb": round(s["heap_after_gc"] / 2**20, 1) if s else None})


# ---------------------------------------------------------------------------------------------
# Faults
# ---------------------------------------------------------------------------------------------

def record(run, kind, target, started, **details):
    entry = {"fault": kind, "target": target, "at_s": round(started - T0, 1),
             "took_s": round(time.time() - started, 1)}
    entry.update(details)
    with run.lock:
        run.faults.append(entry)
    log(f"fault done: {entry}")


def skipped(run, kind, why):
    """A fault that could not start (its target is in another fault): logged, not counted."""
    with run.lock:
        run.skipped.append({"fault": kind, "at_s": round(time.time() - T0, 1), "why": why})
    log(f"fault skipped: {kind} ({why})")


def free_instance(run, names, rng):
    """A random instance of names not in another fault now (its lock taken), or None."""
    names = list(names)
    rng.shuffle(names)
    for n in names:
        inst = run.instances.get(n)
        if inst is not None and inst.alive() and inst.busy.acquire(blocking=False):
            return inst
    return None


def fault_kill9(run, rng):
    inst = free_instance(run, "ABC", rng)
    if inst is None:
        return skipped(run, "kill-9", "every instance busy")
    try:
        t = time.time()
        inst.kill9()
        delay = rng.uniform(2, 12)
        time.sleep(delay)
        inst.start()
        inst.wait_running()
        record(run, "kill-9", inst.name, t, down_s=round(delay, 1))
    finally:
        inst.busy.release()


def fault_rolling(run, rng):
    t = time.time()
    done = []
    for name in "ABC":
        inst = run.instances[name]
        if not inst.busy.acquire(timeout=120):
            skipped(run, "rolling-restart", f"{name} busy for 120 s")
            continue
        try:
            inst.stop_graceful()
            inst.start()
            inst.wait_running()
            done.append(name)
        finally:
            inst.busy.release()
    record(run, "rolling-restart", ",".join(done), t)


def fault_join_leave(run, rng):
    inst = run.instances.get("D")
    if inst is None:
        inst = run.instances["D"] = Instance(run, "D")
    if not inst.busy.acquire(blocking=False):
        return skipped(run, "join-leave", "the extra instance is still in")
    try:
        t = time.time()
        inst.start()
        inst.wait_running()
        stay = rng.uniform(15, 30)
        time.sleep(stay)
        how = rng.choice(["graceful", "kill-9"])
        if how == "graceful":
            inst.stop_graceful()
        else:
            inst.kill9()
        record(run, "join-leave", "D", t, stayed_s=round(stay, 1), left=how)
    finally:
        inst.busy.release()


def fault_thread_churn(run, rng):
    # Never during a broker outage: Kafka Streams' removeStreamThread needs the broker (it would
    # time out, stock as well), and the churn is meant to reassign tasks, which needs one too.
    if not run.broker_lock.acquire(timeout=90):
        return skipped(run, "thread-churn", "the broker was down for 90 s")
    inst = free_instance(run, "ABC", rng)
    if inst is None:
        run.broker_lock.release()
        return skipped(run, "thread-churn", "every instance busy")
    try:
        t = time.time()
        before = (inst.poll_stats() or {}).get("threads_removed", 0)
        inst.command("remove-thread")
        deadline = time.time() + 70
        while time.time() < deadline and (inst.poll_stats() or {}).get("threads_removed", 0) == before:
            time.sleep(0.5)
        removed = (inst.poll_stats() or {}).get("threads_removed", 0) > before
        gap = rng.uniform(8, 15)
        time.sleep(gap)
        inst.command("add-thread")
        record(run, "thread-churn", inst.name, t, gap_s=round(gap, 1), removed=removed)
    finally:
        inst.busy.release()
        run.broker_lock.release()


QUIESCE_S = 1.0  # an EndTxn sent before the pause, and its markers, take milliseconds


def signal_app(inst, sig):
    try:
        os.killpg(inst.proc.pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def quiesce_apps(run):
    """SIGSTOP every running app JVM, then wait for the commits already sent to complete."""
    paused = [inst for inst in list(LIVE) if inst.alive() and signal_app(inst, signal.SIGSTOP)]
    time.sleep(QUIESCE_S)
    return paused


def fault_broker(run, rng):
    if not run.broker_lock.acquire(timeout=90):
        return skipped(run, "broker-restart", "the broker was down or in a thread churn for 90 s")
    try:
        t = time.time()
        # A graceful stop of the only broker leaves its partitions leaderless for ~0.3 s while the
        # transaction coordinator still runs, and the coordinator skips the markers of a partition
        # with no leader as if its topic were deleted: a commit that lands then leaves a hanging
        # transaction (Kafka's, with or without the agent; tests/broker/README.md). Under
        # exactly-once every app JVM is therefore paused (SIGSTOP) for a moment before the stop, so
        # commits in flight finish and no new one arrives in that window; they carry on (SIGCONT)
        # as soon as the broker is down, and meet the outage as before.
        paused = quiesce_apps(run) if run.guarantee == "eos" else []
        try:
            broker(run, "stop")
        finally:
            for inst in paused:
                signal_app(inst, signal.SIGCONT)
        down = rng.uniform(REQUEST_TIMEOUT_MS / 1000 + 5, REQUEST_TIMEOUT_MS / 1000 + run.args.broker_down_max)
        log(f"broker stopped{f' ({len(paused)} app JVMs paused for it)' if paused else ''}; resuming in {down:.1f} s")
        time.sleep(down)
        broker(run, "resume")
        record(run, "broker-restart", "broker", t, down_s=round(down, 1), apps_paused=len(paused))
    finally:
        run.broker_lock.release()


def fault_burst(run, rng):
    n = run.args.burst
    with run.lock:
        run.burst_requests.append(n)
    record(run, "burst", "input", time.time(), records=n)


FAULTS = {"kill-9": fault_kill9, "rolling-restart": fault_rolling, "join-leave": fault_join_leave,
          "thread-churn": fault_thread_churn, "broker-restart": fault_broker, "burst": fault_burst}


def schedule(run, seconds):
    """Fault start times over [15 s, seconds - 25 s]: every kind once in a shuffled order, then
    random kinds, at random gaps around the mean; each fault runs in its own thread, so they overlap."""
    rng = run.rng
    kinds = list(run.args.faults)
    plan = []
    t = 15.0
    # Every kind must fit once: a short run spaces its faults closer.
    gap = min(run.args.fault_gap, (seconds - 40) / len(kinds))
    first = kinds[:]
    rng.shuffle(first)
    while t < seconds - 25:
        kind = first.pop(0) if first else rng.choice(kinds)
        plan.append((round(t, 1), kind))
        t += rng.uniform(0.5, 1.0) * gap if first else rng.uniform(0.5, 1.5) * run.args.fault_gap
    return plan


def run_faults(run, plan, start):
    threads = []
    for at, kind in plan:
        delay = start + at - time.time()
        if delay > 0 and run.stop.wait(delay):
            break
        log(f"fault start: {kind}")
        th = threading.Thread(target=safe, args=(run, kind, random.Random(run.rng.random())), daemon=True)
        th.start()
        threads.append(th)
    for th in threads:
        th.join(timeout=1200)
        if th.is_alive():
            run.fail("a fault still running 20 min after the input ended")


def safe(run, kind, rng):
    try:
        FAULTS[kind](run, rng)
    except Exception as e:  # a harness error is a failed run, not a silent pass
        run.fail(f"fault {kind} raised {e!r}")


# ---------------------------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------------------------

def disk_stats(inst):
    """Every stats line of every process of the instance, read again from disk: (lines, bad), a
    line that does not parse counting as bad unless it is the last of a process killed mid-write."""
    lines, bad = [], 0
    for gen in range(1, inst.generation + 1):
        try:
            with open(inst.stats_path(gen)) as f:
                raw = f.read().splitlines()
        except FileNotFoundError:
            continue
        for n, text in enumerate(raw):
            try:
                lines.append((gen, json.loads(text)))
            except ValueError:
                if n != len(raw) - 1 or gen in inst.graceful:
                    bad += 1
    return lines, bad


def task_returns(inst, stats_lines):
    """Per process (generation), from its own counters (it reads its task lists every 100 ms):
    tasks that left the process and came back to it later (returns), and tasks that moved from one
    of its stream threads to the other (moves). Both are a revoke and a reassignment to the same
    instance. Also the most standby tasks the process held at once."""
    returns, moves, examples, standbys = 0, 0, [], 0
    last = {}
    for gen, s in stats_lines:
        last[gen] = s
    for gen, s in sorted(last.items()):
        returns += s.get("tasks_returned", 0)
        moves += s.get("tasks_moved", 0)
        standbys = max(standbys, s.get("standbys_max", 0))
        examples += [f"{inst.name}#{gen} at {e}" for e in s.get("return_examples", [])]
    return returns, moves, examples, standbys


def tasks_came_back(run):
    """Whether any instance has counted a task handed back to it or moved between its threads."""
    for inst in run.instances.values():
        returns, moves, _, _ = task_returns(inst, disk_stats(inst)[0])
        if returns + moves:
            return True
    return False


def wait_for_return(run, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline and not tasks_came_back(run):
        time.sleep(1)


def hand_back_on_purpose(run):
    """D joins, stays until it runs tasks (at most 60 s), and leaves gracefully."""
    inst = run.instances.get("D")
    if inst is None:
        inst = run.instances["D"] = Instance(run, "D")
    inst.start()
    inst.wait_running()
    deadline = time.time() + 60
    while time.time() < deadline and not (inst.poll_stats() or {}).get("tasks"):
        time.sleep(1)
    time.sleep(5)  # its first commit, and the standbys of what it took settle where those tasks ran
    inst.stop_graceful()


def analyse(run, verify, producer, hanging):
    result = {"protocol": run.protocol, "topics": run.prefix, "verify": verify, "faults": run.faults,
              "hanging_transactions": hanging,
              "skipped_faults": run.skipped,
              "producer_errors": producer.errors, "records_produced": producer.produced}
    probe_violations, probe_examples, uncaught, replaced, ever_error = 0, [], [], 0, []
    drain_max_ns, returns, moves, return_examples, max_inflight, standbys = 0.0, 0, 0, [], 0, 0
    processes = 0
    task_slots = {}  # task -> the most slots it held at any reading, on any instance
    bad_lines, unclosed, removed, control_failed = 0, [], 0, 0
    for inst in run.instances.values():
        stats_lines, bad = disk_stats(inst)
        bad_lines += bad
        r, m, ex, sb = task_returns(inst, stats_lines)
        standbys = max(standbys, sb)
        returns += r
        moves += m
        return_examples += ex
        last_by_gen = {}
        for gen, s in stats_lines:
            last_by_gen[gen] = s
            max_inflight = max(max_inflight, s.get("max_task_inflight", 0))
            for task, n in s.get("task_slots_max", {}).items():
                task_slots[task] = max(task_slots.get(task, 0), n)
        processes += len(last_by_gen)
        for gen, s in last_by_gen.items():
            probe_violations += s["probe_violations"]
            probe_examples += s["probe_examples"]
            replaced += s["replaced"]
            uncaught += [f"{inst.name}#{gen}: {u}" for u in s["uncaught"]]
            if s["ever_error"]:
                ever_error.append(f"{inst.name}#{gen}")
            removed += s.get("threads_removed", 0)
            control_failed += s.get("control_failed", 0)
            if gen in inst.graceful and s.get("close_ok") is not True:
                unclosed.append(f"{inst.name}#{gen}: close_ok={s.get('close_ok')}")
            drain_max_ns = max(drain_max_ns, s["drain_max_ns"])
    result.update({"processes": processes, "probe_violations": probe_violations, "probe_examples": probe_examples[:5],
                   "threads_replaced": replaced, "uncaught": uncaught[:10], "instances_in_error": ever_error,
                   "max_drain_ms": round(drain_max_ns / 1e6, 1), "tasks_handed_back": returns,
                   "tasks_moved_between_threads": moves, "most_standby_tasks_on_one_instance": standbys,
                   "handed_back_examples": return_examples[:5], "max_task_slots_seen": max_inflight,
                   "tasks_at_cap": sorted(t for t, n in task_slots.items() if n >= inflight_cap(run.args)),
                   "task_slots_max": dict(sorted(task_slots.items()))})
    done = {f["fault"] for f in run.faults}
    result.update({"unparseable_stats_lines": bad_lines, "graceful_closes_not_ok": unclosed,
                   "threads_removed": removed, "control_commands_failed": control_failed,
                   "fault_kinds_missing": sorted(set(run.args.faults) - done)})
    checks = {
        "input flowed: every produced record in the input topic": 0 < producer.produced <= verify.get("input", 0)
        and not producer.errors,
        "every fault kind injected": set(run.args.faults) <= done,
        "every thread churn removed a thread": all(f.get("removed") for f in run.faults
                                                   if f["fault"] == "thread-churn"),
        "every graceful close completed (close() returned true)": not unclosed,
        "stats readable": bad_lines == 0,
        "output verified (nothing missing, order, counts and totals)": verify.get("ok") is True,
        "no key on two threads at once": probe_violations == 0,
        "no instance in ERROR": not ever_error,
        "no stream thread died": replaced == 0,
        "a task revoked and handed back to the same instance": returns + moves > 0,
        "standby tasks assigned (one replica a task)": standbys > 0,
        "harness: no failure": not run.failures,
    }
    if run.guarantee == "eos":
        checks["exactly-once: no duplicate"] = verify.get("duplicates", 1) == 0
        checks["exactly-once: no hanging transaction (find-hanging)"] = not hanging
    result["checks"] = checks
    result["harness_failures"] = run.failures
    result["ok"] = all(checks.values())
    return result


# ---------------------------------------------------------------------------------------------
# One protocol
# ---------------------------------------------------------------------------------------------

def one_protocol(args, protocol, seconds):
    workdir = os.path.join(args.workdir, protocol)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    run = Run(args, protocol, workdir)
    log(f"=== {args.guarantee}, group.protocol={protocol}: {seconds} s of input at {args.rate}/s, topics {run.prefix}")
    for t in ["input", "table", "output", "counts", "totals"]:
        cfg = ["--config", "cleanup.policy=compact"] if t in ("table",) else []
        load(run, "create", "--topic", f"{run.prefix}-{t}", "--partitions", PARTITIONS, *cfg)
    load(run, "produce", "--topic", run.prefix + "-table", "--records", KEYS, "--keys", KEYS, "--dist", "uniform",
         "--payload", 20, "--seed", 3, "--state", os.path.join(workdir, "table-state.json"))
    for name in "ABC":
        run.instances[name] = Instance(run, name)
        run.instances[name].start()
    for name in "ABC":
        run.instances[name].wait_running()
    sampler = Sampler(run)
    sampler.start()
    producer = Producer(run, seconds)
    table = TableUpdater(run, seconds)
    start = time.time()
    producer.start()
    table.start()
    plan = schedule(run, seconds)
    log(f"fault plan: {plan}")
    faults = threading.Thread(target=run_faults, args=(run, plan, start), daemon=True)
    faults.start()
    producer.join()
    log(f"input done: {producer.produced} records")
    faults.join()
    table.join(timeout=60)
    # Catch up: every instance of A, B, C up, the group's committed offsets at the input's end.
    if broker_down(run):
        broker(run, "resume")
    for name in "ABC":
        inst = run.instances[name]
        if not inst.alive():
            run.fail(f"{name} was not running at the end of the faults")
            inst.start()
        inst.wait_running()
    t = time.time()
    waited, code = load(run, "wait", "--group", run.prefix, "--topic", run.prefix + "-input", "--timeout-s",
                        args.catch_up_s, check=False)
    if code != 0:
        run.fail(f"the group did not catch up within {args.catch_up_s} s: {waited}")
    log(f"caught up in {time.time() - t:.1f} s")
    hanging = hanging_transactions(run) if args.guarantee == "eos" else []
    if hanging:
        log(f"hanging transactions (topic partition producer epoch coordinator-epoch start-offset): {hanging}")
    # A task the joining instance took goes back where it ran once D's leaving is processed (after a
    # kill -9: the session timeout, then a rebalance), which may be after the catch-up. Whether a
    # plan hands a task back at all depends on its faults (D may leave during a broker outage
    # before it got a task; the instances it took them from may be killed since): if none came back
    # to an instance yet, wait 15 s for the last rebalance, then make the case on purpose, as the
    # join-leave fault does: D joins, takes tasks (their standbys stay where they ran) and leaves
    # gracefully, and the assignor gives those tasks back to their standbys. The check stays strict.
    if not tasks_came_back(run):
        log("no task handed back yet: waiting up to 15 s for the last rebalance")
        wait_for_return(run, 15)
    for attempt in range(1, 4):  # where a task goes back depends on where its standby is: try thrice
        if tasks_came_back(run):
            break
        log(f"still none: D joins and leaves once more (attempt {attempt} of 3)")
        hand_back_on_purpose(run)
        wait_for_return(run, 30)
    for inst in run.instances.values():
        inst.stop_graceful()
    run.stop.set()
    verify_args = ["verify", "--input", run.prefix + "-input", "--output", run.prefix + "-output",
                   "--counts", run.prefix + "-counts", "--totals", run.prefix + "-totals"]
    lost = lost_output_sends(run)
    if args.guarantee == "alos":
        verify_args += ["--allow-duplicates", "--min-counts"]
        if lost:
            # A producer batch of the output topic expired: Kafka Streams replays the task from its
            # last commit, so a record of the lost batch comes after a later record of its key
            # that a later batch got through. The verifier excuses exactly that pattern (the later
            # record must be output again after it), nothing else.
            log(f"the apps logged {len(lost)} lost output sends (expired producer batches); first: {lost[0]}")
            verify_args += ["--lost-sends"]
    verify, code = load(run, *verify_args, check=False)
    log(f"verify: {json.dumps(verify)}")
    result = analyse(run, verify, producer, hanging)
    result["lost_output_sends"] = len(lost)
    result["broker_skipped_markers"] = skipped_markers(run)  # a diagnosis, not a check
    if result["broker_skipped_markers"]:
        log(f"the broker's transaction coordinator skipped markers for leaderless partitions "
            f"{result['broker_skipped_markers']} times (a hanging transaction is possible)")
    if not result["ok"]:
        diagnose(run, result)
    result["catch_up_s"] = round(time.time() - t, 1)
    result["samples"] = run.samples
    result["input_seconds"] = seconds
    result["plan"] = plan
    return result


def lost_output_sends(run):
    """The output-topic send errors the applications logged (Kafka Streams' RecordCollectorImpl:
    "Error encountered sending record to topic <output> for task ..."), one line each."""
    marker = f"Error encountered sending record to topic {run.prefix}-output "
    found = []
    for name in sorted(run.instances):
        folder = os.path.join(run.workdir, name)
        for f in sorted(os.listdir(folder)):
            if not f.startswith("app-"):
                continue
            with open(os.path.join(folder, f), errors="replace") as lines:
                found += [f"{name}/{f}: {ln.strip()[:300]}" for ln in lines if marker in ln]
    return found


def diagnose(run, result):
    """A failed run, in CI's output: what each instance threw and the first errors of every log,
    since CI keeps nothing but what the harness prints."""
    for line in result["uncaught"]:
        log(f"uncaught: {line}")
    for f in result["harness_failures"]:
        log(f"harness failure: {f}")
    for h in result["hanging_transactions"]:
        log(f"hanging transaction: {h}")
    logs = [os.path.join(run.workdir, name, f) for name in sorted(run.instances)
            for f in sorted(os.listdir(os.path.join(run.workdir, name))) if f.startswith("app-")]
    logs.append(broker_log(run))
    for path in logs:
        try:
            with open(path, errors="replace") as f:
                lines = f.read().splitlines()
        except OSError as e:
            log(f"{path}: {e}")
            continue
        # Each ERROR with the two lines after it (the exception of a multi-line message).
        errors = [" | ".join(x.strip() for x in lines[i:i + 3])[:700] for i, ln in enumerate(lines)
                  if " ERROR " in ln or "Exception in thread" in ln]
        if errors:
            log(f"{path}: {len(errors)} ERROR lines; the first and last:")
            for ln in errors[:6] + (["..."] + errors[-4:] if len(errors) > 10 else errors[6:]):
                print("    " + ln, flush=True)


def broker_log(run):
    broker_dir = os.environ.get("BROKER_DIR", f"/tmp/streamshard-broker-{run.args.broker_port}")
    return os.path.join(broker_dir, "logs", "server.log")


def skipped_markers(run):
    """How often the transaction coordinator dropped markers for partitions with no leader (the
    cause of Kafka's hanging transactions on this one-broker cluster; see fault_broker)."""
    try:
        with open(broker_log(run), errors="replace") as f:
            return sum("likely deleted already" in ln for ln in f)
    except OSError:
        return None


def hanging_transactions(run):
    """Kafka's own check (kafka-transactions.sh find-hanging): transactions open on a partition for
    over a minute that their coordinator does not know as ongoing there. Such a transaction stops
    every read_committed consumer of the partition, so a task on it never catches up."""
    env = dict(os.environ, BROKER_PORT=str(run.args.broker_port))
    p = subprocess.run(["bash", BROKER_SH, "tool", "org.apache.kafka.tools.TransactionsCommand",
                        "--bootstrap-server", f"127.0.0.1:{run.args.broker_port}", "find-hanging",
                        "--broker-id", "1", "--max-transaction-timeout", "1"],
                       env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        run.fail(f"find-hanging failed: {p.stderr.strip()[-500:]}")
        return []
    rows = [ln.split("\t") for ln in p.stdout.splitlines()[1:] if ln.strip()]
    return [" ".join(x.strip() for x in r[:6]) for r in rows]  # topic partition pid epoch coord start


def broker_down(run):
    env = dict(os.environ, BROKER_PORT=str(run.args.broker_port))
    return subprocess.run(["bash", BROKER_SH, "status"], env=env, capture_output=True).returncode != 0


def streams_protocol_supported(classpath):
    for entry in classpath.split(":"):
        base = os.path.basename(entry)
        if base.startswith("kafka-streams-") and base.endswith(".jar") and base[14:15].isdigit():
            major, minor = (int(x) for x in base[14:-4].split(".")[:2])
            return (major, minor) >= (4, 2), base[14:-4]
    return False, "unknown"


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------

def write_report(args, results, versions):
    os.makedirs(args.report_dir, exist_ok=True)
    kind = "-stock" if args.stock else "-virtual" if args.virtual_workers else ""
    kind += "-long-calls" if args.long_calls else ""  # its own report, not the short calls' one
    base = os.path.join(args.report_dir, f"torture-{args.guarantee}{kind}")
    summary = {"guarantee": args.guarantee, "engine": "stock" if args.stock else "streamshard",
               "worker_threads": "virtual" if args.virtual_workers else "platform", "minutes": args.minutes, "seed": args.seed, "rate": args.rate,
               "burst": args.burst, "kafka_streams": versions, "partitions": PARTITIONS, "keys": KEYS, "dist": dist(args),
               "workers": workers(args), "inflight_cap": inflight_cap(args), "call_ms": call_ms(args), "instances": 3, "stream_threads": 2,
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "ok": all(r["ok"] for r in results),
               "runs": results}
    with open(base + ".json", "w") as f:
        json.dump(summary, f, indent=1)
    chart = chart_png(base + ".png", results)
    lines = [f"# Torture run{' (stock Kafka Streams, no agent)' if args.stock else ''}: "
             f"{'exactly-once v2' if args.guarantee == 'eos' else 'at-least-once'}, "
             f"{args.minutes} min — {'PASSED' if summary['ok'] else 'FAILED'}", "",
             f"{summary['date']}, Kafka Streams {versions}, seed {args.seed}. Three instances × 2 stream threads × "
             f"{workers(args)} {'virtual ' if args.virtual_workers else ''}workers, {PARTITIONS} partitions, keys {dist(args)} over {KEYS:,}, a {call_ms(args).replace('-', '–')} ms call → leftJoin a "
             f"KTable → count + aggregate; input {args.rate}/s paced, bursts of {args.burst:,}; in-flight cap "
             f"{inflight_cap(args)} per task. Reproduce: `bash scripts/torture.sh --minutes {args.minutes} --guarantee "
             f"{args.guarantee} --seed {args.seed}{' --long-calls' if args.long_calls else ''}`.", ""]
    for r in results:
        v = r["verify"]
        faults = {}
        for f in r["faults"]:
            faults[f["fault"]] = faults.get(f["fault"], 0) + 1
        lines += [f"## group.protocol={r['protocol']}: {'passed' if r['ok'] else 'FAILED'}", "",
                  "| | |", "|---|---|",
                  f"| input records | {v.get('input', '?'):,} over {r['input_seconds']} s |" if isinstance(v.get('input'), int) else f"| input records | {v.get('input')} |",
                  f"| output records | {v.get('output')} |",
                  f"| missing | {v.get('missing')} |",
                  f"| duplicates | {v.get('duplicates')} |",
                  f"| order violations | {v.get('order_violations')} |",
                  f"| late records replayed after a lost output send | {v.get('late_replayed')} "
                  f"({r.get('lost_output_sends', 0)} lost sends logged) |",
                  f"| unexpected | {v.get('unexpected')} |",
                  f"| count mismatches / total mismatches{' (at least the input: replays count again)' if args.guarantee == 'alos' else ''} | "
                  f"{v.get('count_mismatches')} / {v.get('total_mismatches')} |",
                  f"| keys on two threads at once | {r['probe_violations']} |",
                  f"| instances in ERROR / threads replaced | {len(r['instances_in_error'])} / {r['threads_replaced']} |",
                  f"| tasks revoked and handed back to the same instance / moved between its threads | "
                  f"{r['tasks_handed_back']} / {r['tasks_moved_between_threads']} |",
                  f"| most standby tasks on one instance | {r['most_standby_tasks_on_one_instance']} |",
                  f"| JVM processes run | {r['processes']} |",
                  f"| longest drain | {r['max_drain_ms']} ms |",
                  f"| most slots one task held (cap {inflight_cap(args)}); tasks that reached the cap | "
                  f"{r['max_task_slots_seen']}; {len(r['tasks_at_cap'])} of {PARTITIONS} |",
                  f"| catch-up after input stopped | {r['catch_up_s']} s |",
                  f"| faults | {', '.join(f'{k} ×{n}' for k, n in sorted(faults.items()))} |", ""]
        lines += ["| check | |", "|---|---|"] + [f"| {k} | {'yes' if ok else '**NO**'} |"
                                                for k, ok in r["checks"].items()] + [""]
        details = (r["harness_failures"] + r["uncaught"] + v.get("examples", []) + r["probe_examples"]
                   + [f"input: {e}" for e in r["producer_errors"]] + r["graceful_closes_not_ok"]
                   + [f"skipped: {f['fault']} at {f['at_s']} s ({f['why']})" for f in r["skipped_faults"]])
        if r["control_commands_failed"]:
            details.append(f"{r['control_commands_failed']} thread remove/add commands failed (Kafka Streams "
                           "timed out; see the app logs)")
        if details:
            lines += ["Details:", ""] + [f"- {x}" for x in details] + [""]
        lines += ["<details><summary>fault log</summary>", "", "| at (s) | fault | target | took (s) | details |",
                  "|---:|---|---|---:|---|"]
        for f in r["faults"]:
            extra = ", ".join(f"{k}={val}" for k, val in f.items() if k not in ("fault", "target", "at_s", "took_s"))
            lines.append(f"| {f['at_s']} | {f['fault']} | {f['target']} | {f['took_s']} | {extra} |")
        lines += ["", "</details>", ""]
        rss = [s["rss_mb"] for s in r["samples"]]
        heap = [s["heap_after_gc_mb"] for s in r["samples"] if s["heap_after_gc_mb"] is not None]
        if rss:
            lines += [f"RSS per instance: max {max(rss):.0f} MB; heap after GC: max {max(heap or [0]):.0f} MB.", ""]
    if chart:
        lines += [f"![RSS and heap after GC over time]({os.path.basename(chart)})", ""]
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines))
    log(f"report: {base}.md / .json" + (f" / {os.path.basename(chart)}" if chart else ""))
    return summary


def chart_png(path, results):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(len(results), 1, figsize=(9, 3.2 * len(results)), squeeze=False)
    for ax, r in zip(axes[:, 0], results):
        for name in sorted({s["instance"] for s in r["samples"]}):
            pts = [s for s in r["samples"] if s["instance"] == name]
            ax.plot([s["t"] for s in pts], [s["rss_mb"] for s in pts], ".", ms=2, label=f"{name} RSS")
            ax.plot([s["t"] for s in pts], [s["heap_after_gc_mb"] or 0 for s in pts], "x", ms=2,
                    label=f"{name} heap after GC")
        for f in r["faults"]:
            ax.axvline(f["at_s"], color="grey", lw=0.5, alpha=0.5)
        ax.set_title(f"group.protocol={r['protocol']}: memory per instance (faults as grey lines)", fontsize=9)
        ax.set_xlabel("s since the harness started")
        ax.set_ylabel("MB")
        ax.legend(fontsize=6, ncol=4)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=20.0, help="input time per guarantee, split between protocols")
    ap.add_argument("--guarantee", choices=["alos", "eos"], default="alos")
    ap.add_argument("--protocol", choices=["classic", "streams", "both"], default="both")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--rate", type=int, default=300, help="paced input records/s")
    ap.add_argument("--burst", type=int, default=12000, help="records of one unpaced burst")
    ap.add_argument("--fault-gap", type=float, default=25.0, help="mean seconds between fault starts")
    ap.add_argument("--faults", default=",".join(FAULTS), help="comma-separated fault kinds")
    ap.add_argument("--broker-down-max", type=float, default=25.0,
                    help="a broker outage lasts request.timeout.ms + 5 s up to request.timeout.ms + this")
    ap.add_argument("--catch-up-s", type=int, default=600)
    ap.add_argument("--broker-port", type=int, default=19292)
    ap.add_argument("--stock", action="store_true",
                    help="run the app without the agent: the same faults on stock Kafka Streams, to tell its "
                         "behavior from streamshard's (the checks are the same; no task is parallel)")
    ap.add_argument("--long-calls", action="store_true",
                    help="100-500 ms calls, uniform keys, 1,024 workers (records in flight at every commit and fault)")
    ap.add_argument("--virtual-workers", metavar="JAVA",
                    help="run the apps on this java (21 or later) with streamshard.worker.threads=virtual")
    ap.add_argument("--agent", required=True)
    ap.add_argument("--classpath", required=True)
    ap.add_argument("--workdir", default="/tmp/streamshard-torture")
    ap.add_argument("--report-dir", default=os.path.join(ROOT, "target", "torture"))
    args = ap.parse_args()
    args.faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    unknown = [f for f in args.faults if f not in FAULTS]
    if unknown:
        ap.error(f"unknown faults {unknown}; known: {', '.join(FAULTS)}")
    supported, version = streams_protocol_supported(args.classpath)
    protocols = ["classic", "streams"] if args.protocol == "both" else [args.protocol]
    if "streams" in protocols and not supported:
        log(f"Kafka Streams {version} has no group.protocol=streams: classic only")
        protocols = ["classic"]
    seconds = int(args.minutes * 60 / len(protocols))
    results = []
    env = dict(os.environ, BROKER_PORT=str(args.broker_port))
    # Stopped (SIGTERM, SIGINT) or failed: no JVM and no broker outlives the harness.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    for protocol in protocols:
        subprocess.run(["bash", BROKER_SH, "start"], env=env, check=True)
        try:
            results.append(one_protocol(args, protocol, seconds))
        finally:
            for inst in LIVE:
                if inst.alive():
                    os.killpg(inst.proc.pid, signal.SIGKILL)
            subprocess.run(["bash", BROKER_SH, "stop"], env=env)
    summary = write_report(args, results, version)
    print(json.dumps({k: summary[k] for k in ("guarantee", "minutes", "ok")}
                     | {"runs": [{k: r[k] for k in ("protocol", "ok", "checks")} for r in results]}))
    sys.exit(0 if summary["ok"] else 1)


if __name__ == "__main__":
    main()
