#!/usr/bin/env python3
"""Summarises a JFR recording's CPU samples: where each thread group spends its samples, the
hottest methods (self time), and the share of samples under chosen frames (inclusive time).

    BENCH_JAVA_OPTS="-XX:StartFlightRecording=filename=/tmp/app.jfr,settings=profile" \\
        bash scripts/bench.sh --only noop
    python3 bench/jfr_summary.py /tmp/app.jfr
"""

import collections
import json
import re
import subprocess
import sys

INCLUSIVE = [
    "io.streamshard.scheduler.NativeScheduler.",
    "io.streamshard.runtime.ShardExecutor.workLoop",
    "org.apache.kafka.streams.processor.internals.StreamShardRuntime.submit",
    "org.apache.kafka.clients.producer.KafkaProducer.send",
    "org.apache.kafka.streams.processor.internals.SourceNode.process",
    "org.apache.kafka.clients.consumer.internals.ClassicKafkaConsumer.poll",
    "org.apache.kafka.streams.processor.internals.StreamThread.runOnceWithoutProcessingThreads",
]


def group(thread):
    name = re.sub(r"-\d+$", "-N", thread or "?")
    if "StreamThread" in name:
        return "StreamThread"
    if "worker" in name:
        return "streamshard workers"
    if "producer-network-thread" in name:
        return "producer I/O thread"
    if "pc-" in name:
        return "parallel consumer: " + name
    return name


def main(path):
    out = subprocess.run(["jfr", "print", "--json", "--events", "jdk.ExecutionSample", path],
                         capture_output=True, text=True, check=True).stdout
    events = json.loads(out)["recording"]["events"]
    by_group = collections.Counter()
    top = collections.Counter()
    inclusive = collections.Counter()
    for e in events:
        v = e["values"]
        by_group[group((v.get("sampledThread") or {}).get("javaName"))] += 1
        frames = [f"{f['method']['type']['name']}.{f['method']['name']}" for f in
                  (v.get("stackTrace") or {}).get("frames", [])]
        if frames:
            top[frames[0]] += 1
        for prefix in INCLUSIVE:
            if any(f.startswith(prefix) for f in frames):
                inclusive[prefix] += 1
    n = len(events) or 1
    print(f"{len(events)} CPU samples")
    print("\nby thread:")
    for k, c in by_group.most_common():
        print(f"  {100 * c / n:5.1f}%  {k}")
    print("\nhottest methods (self):")
    for k, c in top.most_common(20):
        print(f"  {100 * c / n:5.1f}%  {k}")
    print("\nunder these frames (inclusive):")
    for k in INCLUSIVE:
        print(f"  {100 * inclusive[k] / n:5.1f}%  {k}")


if __name__ == "__main__":
    main(sys.argv[1])
