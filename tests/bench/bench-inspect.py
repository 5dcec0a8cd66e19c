#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Inspect benchmark (issue 16): `extbody inspect --mbox` over generated mboxes of
500 and 4000 messages (gen-corpus.py --seed 1 --ext-fraction 0.1), measured in
the same run against the cheapest tool that reads the same bytes:

  - wall time of `extbody inspect --mbox FILE > OUT` (default jobs, and -j 1
    when inspect has that option), median of 5 runs;
  - the baseline: `grep -ci external-body FILE > OUT`, median of 5 runs (both
    write into a file, not /dev/null, since GNU grep stops reading at the first
    match when its output is /dev/null);
  - peak memory (maximum resident set size, from wait4's rusage) of each, at
    500 and at 4000 messages.

Fetching stays off (an empty configuration: fetch = off), so nothing is
fetched and no name is looked up: the corpus's http URLs are never contacted.
inspect reports what rewrite would do; the time is the scan, the parse and the
decision for every reference.

    python3 tests/bench/bench-inspect.py [--build build] [--work DIR] [--runs 5]

Not a test: nothing asserts a speed. The page cache is warmed before timing.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
COUNTS = (500, 4000)


def gen(work, count):
    out = os.path.join(work, "box-%d.mbox" % count)
    if not os.path.exists(out):
        subprocess.run([sys.executable, os.path.join(HERE, "gen-corpus.py"), "--seed", "1", "--count",
                        str(count), "--ext-fraction", "0.1", "--format", "mbox", "--out", out,
                        "--base-url", "http://127.0.0.1:9/", "--force", "-q"], check=True)
    return out


def run(argv, out_path):
    """Run @argv with standard output into @out_path: (seconds, peak RSS KiB, exit status)."""
    with open(out_path, "wb") as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        dt = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return dt, ru.ru_maxrss, p.returncode


def measure(argv, out_path, runs, ok=(0,)):
    times, rss = [], []
    for _ in range(runs):
        dt, kib, code = run(argv, out_path)
        if code not in ok:
            sys.exit("%s exited %d" % (" ".join(argv), code))
        times.append(dt)
        rss.append(kib)
    return statistics.median(times), max(rss)


def has_jobs_option(extbody):
    h = subprocess.run([extbody, "inspect", "--help"], capture_output=True, text=True).stdout
    return bool(re.search(r"(^|\s)(-j|--jobs)\b", h, re.M))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--work", default="/tmp/extbody-bench-inspect")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    extbody = os.path.join(os.path.abspath(a.build), "src", "extbody")
    if not os.access(extbody, os.X_OK):
        sys.exit("no %s: build first (sh tests/quickstart.sh demo)" % extbody)
    os.makedirs(a.work, exist_ok=True)
    conf = os.path.join(a.work, "empty.conf")
    open(conf, "w").close()
    out = os.path.join(a.work, "out")
    jobs = has_jobs_option(extbody)
    variants = [("default", [])] + ([("-j 1", ["-j", "1"])] if jobs else [])

    rows = []
    for count in COUNTS:
        box = gen(a.work, count)
        size = os.path.getsize(box) / 1e6
        subprocess.run(["cat", box], stdout=subprocess.DEVNULL, check=True)   # warm the page cache
        # grep exits 1 when it finds nothing; the corpus always has references
        t_grep, rss_grep = measure(["grep", "-ci", "external-body", box], out, a.runs)
        hits = open(out).read().strip()
        res = {}
        for name, extra in variants:
            t, rss = measure([extbody, "inspect", "-c", conf] + extra + ["--mbox", box], out, a.runs)
            lines = sum(1 for _ in open(out, "rb"))
            res[name] = (t, rss, lines)
        rows.append((count, size, hits, t_grep, rss_grep, res))

    print("extbody inspect --mbox against grep -ci external-body (median of %d, output into a file;"
          " fetch off)" % a.runs)
    print("inspect -j: %s" % ("yes" if jobs else "no such option in this build: default jobs only"))
    print()
    hdr = "%-9s %7s %7s | %9s %8s | %-8s %9s %7s %8s %9s %7s %6s" % (
        "messages", "MB", "grep:n", "grep s", "grep RSS", "extbody", "s", "x grep", "MB/s",
        "RSS", "x grep", "lines")
    print(hdr)
    print("-" * len(hdr))
    for count, size, hits, t_grep, rss_grep, res in rows:
        for i, (name, _) in enumerate(variants):
            t, rss, lines = res[name]
            lead = ("%-9d %7.1f %7s | %9.4f %6.1fMB |" % (count, size, hits, t_grep, rss_grep / 1024) if i == 0
                    else "%-9s %7s %7s | %9s %8s |" % ("", "", "", "", ""))
            print("%s %-8s %9.4f %7.1f %8.1f %7.1fMB %7.1f %6d" % (
                lead, name, t, t / t_grep, size / t, rss / 1024, rss / rss_grep, lines))
    print()
    if len(rows) == 2:
        (c0, s0, _, tg0, _, r0), (c1, s1, _, tg1, _, r1) = rows
        for name, _ in variants:
            print("%s: %d -> %d messages (x%.1f bytes): time x%.2f (grep x%.2f), peak RSS x%.2f" % (
                name, c0, c1, s1 / s0, r1[name][0] / r0[name][0], tg1 / tg0, r1[name][1] / r0[name][1]))


if __name__ == "__main__":
    main()
