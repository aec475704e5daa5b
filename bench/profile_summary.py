#!/usr/bin/env python3
"""Summarises an async-profiler CPU profile in collapsed-stack form: CPU by thread role, and the
CPU under chosen frames (inclusive), as shares of all samples and per record.

    # async-profiler from Maven Central (tools.profiler:async-profiler), unpacked to $AP:
    BENCH_JAVA_OPTS="-agentpath:$AP/linux-x64/libasyncProfiler.so=start,event=cpu,interval=1ms,file=/tmp/app.collapsed,collapsed"
    python3 bench/profile_summary.py /tmp/app.collapsed [records]
"""

import collections
import sys

ROLES = [  # first match wins, on any frame of the stack
    ("streamshard workers", "io/streamshard/runtime/ShardExecutor.workLoop"),
    ("producer I/O thread", "org/apache/kafka/clients/producer/internals/Sender.run"),
    ("StreamThread", "org/apache/kafka/streams/processor/internals/StreamThread.run"),
    ("JIT compiler", "CompileBroker::"),
    ("GC", "GCTaskThread"),
    ("GC", "WorkerThread::run"),
]

SCHED = "io/streamshard/scheduler/NativeScheduler."
FRAMES = [  # (label, frame, only in stacks that also hold this frame)
    ("scheduler JNI calls (NativeScheduler.*)", SCHED),
    ("  of which in the kernel (futex waits and wake-ups, context switches)", "_[k]", SCHED),
    ("  of which the scheduler's own code (streamshard_core::scheduler)", "streamshard_core::scheduler", SCHED),
    ("  of which attaching to the JVM (jni AttachGuard)", "AttachGuard", SCHED),
    ("  of which taking the scheduler's lock (Scheduler::lock, spins included)", "Scheduler::lock", SCHED),
    ("  of which an idle worker's spin for work (Scheduler::spin_for_work)", "spin_for_work", SCHED),
    ("ShardedTask.submit (StreamThread hand-off)", "processor/internals/ShardedTask.submit"),
    ("processor chain (SourceNode.process)", "org/apache/kafka/streams/processor/internals/SourceNode.process"),
    ("KafkaProducer.send", "org/apache/kafka/clients/producer/KafkaProducer.send"),
    ("metrics (Sensor.record)", "org/apache/kafka/common/metrics/Sensor.record"),
    ("contended monitors (ObjectMonitor::enter)", "ObjectMonitor::enter"),
    ("consumer poll", "KafkaConsumer.poll"),
    ("StreamTask.process", "org/apache/kafka/streams/processor/internals/StreamTask.process"),
    ("the simulated work (Work.run)", "io/streamshard/examples/Work.run"),
]


def main(path, records=None):
    roles = collections.Counter()
    frames = collections.Counter()
    under = collections.defaultdict(collections.Counter)
    total = 0
    handoff = 0  # workers outside the processor chain, and the StreamThread's submit outside it
    chain = "org/apache/kafka/streams/processor/internals/SourceNode.process"
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip().rpartition(" ")
            n = int(n)
            total += n
            role = next((r for r, p in ROLES if p in stack), "other")
            roles[role] += n
            if chain not in stack and (role == "streamshard workers" or (
                    role == "StreamThread" and "processor/internals/ShardedTask.submit" in stack)):
                handoff += n
            for label, p, *within in FRAMES:
                if p in stack and all(w in stack for w in within):
                    frames[label] += n
                    under[label][role] += n
    per = f", µs CPU per record over {records:,} records" if records else ""
    print(f"{total} samples of 1 ms CPU{per}")
    fmt = (lambda c: f"{100 * c / total:5.1f}%" + (f"  {1000 * c / records:6.2f} µs" if records else ""))
    print("\nby thread role:")
    for k, c in roles.most_common():
        print(f"  {fmt(c)}  {k}")
    print("\nunder these frames (inclusive; by role):")
    for label, *_ in FRAMES:
        c = frames[label]
        by = ", ".join(f"{r} {100 * x / total:.1f}%" for r, x in under[label].most_common(3))
        print(f"  {fmt(c)}  {label}" + (f"  [{by}]" if c else ""))
    work = "the simulated work (Work.run)"
    print("\nthe processor chain without the simulated work:")
    print(f"  {fmt(frames['processor chain (SourceNode.process)'] - frames[work])}")
    print("\nthe hand-off (workers outside the processor chain, and ShardedTask.submit outside it):")
    print(f"  {fmt(handoff)}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else None)
