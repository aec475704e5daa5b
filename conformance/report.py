#!/usr/bin/env python3
"""Joins a conformance run's rows (stock and streamshard) into one row per test and a summary.

Inputs are the files RecordCountsListener writes (class, test, result, on workers, serial, inline,
reason), one per mode; a test run again after a failure (surefire's rerun) has several rows, the
last one its result, and any earlier failure makes it "flaky". The stock rows come from this run
(--stock) or from the recorded baseline; exclusions from excluded.tsv (class, test or *, reason).

  report.py OUT_DIR [--baseline FILE] [--excluded FILE] [--classes-run FILE]
writes OUT_DIR/results.tsv and OUT_DIR/summary.md; exits 1 if a test that passes stock (or has no
stock result: a test or class failure the recorded stock run never saw) fails with streamshard and
is not excluded ("ours").
"""
import argparse
import collections
import fnmatch
import os
import re
import sys


# An object's identity hash in a parameterized test's display name (Topology@62c5bbdc) differs
# from run to run; without it the names of two runs match.
IDENTITY = re.compile(r"@[0-9a-f]{5,8}\b")
# A parameterized test's invocation number ("verifyStore[21] [21] cache=true, ...") depends on the
# order of its parameter sets, which some tests shuffle at random (IQv2StoreIntegrationTest): the
# parameters name the test, "verifyStore[cache=true, ...]".
INVOCATION = re.compile(r"^([^\[]+)\[(\d+)\] \[\2\] (.+)$")


def read_rows(path):
    """{(class, test): [result, workers, serial, inline, reason, all results]} in file order."""
    out = collections.OrderedDict()
    if not path or not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 6:
                continue
            parts += [""] * (7 - len(parts))
            cls, test, result, workers, serial, inline, reason = parts[:7]
            test = INVOCATION.sub(r"\1[\3]", IDENTITY.sub("@", test))
            prev = out.get((cls, test))
            history = (prev["history"] if prev else []) + [result]
            counts = [workers, serial, inline]
            if prev and prev["counts"][0] not in ("-", ""):
                counts = [str(int(a) + int(b)) if a.isdigit() and b.isdigit() else a
                          for a, b in zip(prev["counts"], counts)]
            out[(cls, test)] = {"result": result, "counts": counts, "reason": reason, "history": history}
    return out


def outcome(row):
    if row is None:
        return "no result"
    h = row["history"]
    if row["result"] == "SUCCESSFUL":
        return "flaky" if any(r != "SUCCESSFUL" for r in h) else "passed"
    if row["result"] == "SKIPPED":
        return "skipped"
    return "failed"


def read_excluded(path):
    out = {}
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip() or line.startswith("#"):
                    continue
                cls, test, reason = (line.rstrip("\n").split("\t") + ["", ""])[:3]
                out[(cls, test)] = reason
    return out


def excluded_reason(excluded, cls, test):
    """The reason `test` of `cls` is excluded, or None. The test column names a test (with its
    parameters), a method (every parameter set), `*` (the whole class), or a pattern with `*`
    matched against the test's full name (some parameter sets of a method)."""
    method = test.split("[")[0]
    for key in ((cls, test), (cls, method), (cls, "*")):
        if key in excluded:
            return excluded[key]
    for (c, pattern), reason in excluded.items():
        if c == cls and "*" in pattern and pattern != "*" and fnmatch.fnmatchcase(test, pattern):
            return reason
    return None


def verdict(stock, shard, why_excluded):
    if why_excluded is not None:
        return "excluded"
    if stock in ("failed", "flaky") and shard != "passed":
        return "fails stock"
    if shard == "passed":
        return "passed"
    if shard == "skipped" and stock == "skipped":
        return "skipped"
    if shard == "flaky":
        return "flaky"
    return "ours"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--baseline")
    ap.add_argument("--excluded")
    ap.add_argument("--title", default="")
    ap.add_argument("--failed", metavar="CLASS",
                    help="print the methods of CLASS that are 'ours' now, joined by '+', and write nothing")
    a = ap.parse_args()
    stock_path = os.path.join(a.out, "stock.tsv")
    stock = read_rows(stock_path if os.path.exists(stock_path) else a.baseline)
    shard = read_rows(os.path.join(a.out, "streamshard.tsv"))
    excluded = read_excluded(a.excluded)
    run_classes = {c for c, _ in shard}
    keys = list(shard) + [k for k in stock if k[0] in run_classes and k not in shard]
    rows = []
    for cls, test in keys:
        s, g = stock.get((cls, test)), shard.get((cls, test))
        so, go = outcome(s), outcome(g)
        why = excluded_reason(excluded, cls, test)
        v = verdict(so, go, why)
        counts = g["counts"] if g else ["-", "-", "-"]
        note = why if why is not None else (g["reason"] if g and v in ("ours", "flaky") else "")
        rows.append([cls, test, so, go, v] + counts + [note])
    if a.failed:
        methods = []
        for r in rows:
            m = r[1].split("[")[0]
            if r[0] == a.failed and r[4] == "ours" and m != "(class)" and m not in methods:
                methods.append(m)
        print("+".join(methods))
        return 0
    with open(os.path.join(a.out, "results.tsv"), "w", encoding="utf-8") as f:
        f.write("class\ttest\tstock\tstreamshard\tverdict\ton_workers\tserial_region\tinline\tnote\n")
        for r in rows:
            f.write("\t".join(r) + "\n")

    per_class = collections.OrderedDict()
    for r in rows:
        c = per_class.setdefault(r[0], collections.Counter())
        c[r[4]] += 1
        c["tests"] += 1
        for i, k in ((5, "workers"), (6, "serial"), (7, "inline")):
            if r[i].isdigit():
                c[k] += int(r[i])
        if r[5].isdigit() and int(r[5]) > 0:
            c["on_workers_tests"] += 1
    times = collections.defaultdict(dict)
    times_path = os.path.join(a.out, "times.tsv")
    if os.path.exists(times_path):
        with open(times_path, encoding="utf-8") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 3 and parts[2].isdigit():
                    times[parts[0]][parts[1]] = int(parts[2])
    total = collections.Counter()
    for c in per_class.values():
        total.update(c)
    verdicts = ["passed", "ours", "flaky", "excluded", "fails stock", "skipped"]
    with open(os.path.join(a.out, "summary.md"), "w", encoding="utf-8") as f:
        if a.title:
            f.write(a.title + "\n\n")
        f.write("%d classes, %d tests: " % (len(per_class), total["tests"])
                + ", ".join("%s %d" % (v, total[v]) for v in verdicts) + "; "
                + "%d tests ran records on the workers (%d records on workers, %d serial parts, %d inline)\n\n"
                % (total["on_workers_tests"], total["workers"], total["serial"], total["inline"]))
        f.write("| class | tests | " + " | ".join(verdicts) + " | tests with records on workers "
                "| records on workers | serial parts | inline | seconds stock / streamshard |\n")
        f.write("|---|" + "---:|" * (len(verdicts) + 6) + "\n")
        for cls, c in sorted(per_class.items()):
            t = times.get(cls, {})
            f.write("| %s | %d | " % (cls, c["tests"]) + " | ".join(str(c[v]) for v in verdicts)
                    + " | %d | %d | %d | %d | %s / %s |\n" % (c["on_workers_tests"], c["workers"], c["serial"],
                                                         c["inline"], t.get("stock", "-"), t.get("streamshard", "-")))
        bad = [r for r in rows if r[4] in ("ours", "flaky")]
        if bad:
            f.write("\nPassed stock, not with streamshard:\n\n")
            for r in bad:
                f.write("- %s %s: %s (%s)\n" % (r[4], r[0], r[1], r[8][:300]))
    print(open(os.path.join(a.out, "summary.md"), encoding="utf-8").read().split("\n\n")[0 if not a.title else 1])
    return 1 if any(r[4] == "ours" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
