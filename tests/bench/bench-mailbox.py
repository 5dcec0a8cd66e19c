#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Mailbox benchmark (issue 29): one run prints the issue's table, every row a
ratio of two figures measured in this run on this machine:

  measure                                                        goal
  rewrite --mbox of 2000 messages, fetching off,                 at least 2.5x faster
    against GMime's mbox round trip
  the same against cp + sync of the mbox                         at most 1.5x the time
  inspect --mbox against grep -ci external-body, 4000 messages   at most 1.5x the time,
    (without load, and with --load N processes spinning)           loaded or not
  rewrite --mbox of the same 2000 messages, fetching on,         at least 1.5x faster
    against GMime's mbox round trip

The mailboxes: gen-corpus.py --seed 1 --ext-fraction 0.1 (2000 messages, and
4000 for inspect), whose http references name 127.0.0.1 and, for about half
of them (--alt-host), localhost, on the port of a `python3 -m http.server`
started here on 127.0.0.1 over the corpus's --serve-dir. Fetching on is
`--fetch --allow-network 127.0.0.1/32 -o allow_domains=127.0.0.1,localhost -o
max_requests_per_host=100000`: names are looked up (localhost), and nothing
leaves the machine (the corpus's other hosts are refused before any lookup).
Fetching off is an empty configuration with -o fetch=off.

What is timed, each a process from its start to its exit (median of --runs):

  - extbody rewrite --mbox COPY (default jobs): COPY is a fresh copy of the
    mbox, made, flushed to disk (fsync) and read once (page cache) before the
    clock starts; only the extbody process is timed. It writes the new mbox
    beside COPY, fsyncs it and renames it over COPY.
  - GMime's round trip: build/tests/bench-rewrite --mbox IN OUT (parse every
    message of IN with GMime, write it with its From_ line to OUT, fsync);
    OUT is removed before the clock starts.
  - cp + sync: `cp IN OUT` then `sync OUT` (coreutils: an fsync of OUT alone,
    not of the whole system), both processes inside the clock; OUT removed
    before it.
  - grep -ci external-body MBOX > FILE and extbody inspect --mbox MBOX > FILE
    (into a file: GNU grep stops at its first match when writing to
    /dev/null).

The load: uptime at the start and at the end; --load N (default: the number
of CPUs; 0: no loaded rows) starts N processes that spin on the CPU for the
loaded inspect and grep figures, measured after the unloaded ones, and stops
them. --details adds the older figures: cat of the mbox, GMime's round trip
in process, -j 1 against -j 2, peak memory at 500 and 4000 messages.

    python3 tests/bench/bench-mailbox.py [--build build] [--work DIR] [--runs 5] [--load N] [--details]

Not a test: nothing asserts a speed; each row says whether it meets its goal.
"""
import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time

from benchlib import free_port

HERE = os.path.dirname(os.path.abspath(__file__))


def gen(work, count, port, fmt="mbox", name=None, serve=False):
    """The corpus of @count messages; with @serve, the files its http URLs
    name too, in work/serve (a corpus generated with --serve-dir replaces
    what is there: only the one that is fetched writes it)."""
    out = os.path.join(work, name or "seed1-%d-localhost.%s" % (count, fmt))
    serve_dir = os.path.join(work, "serve")
    mark = os.path.join(serve_dir, "written-for")
    if not os.path.exists(out) or (serve and not (os.path.exists(mark) and open(mark).read() == out)):
        subprocess.run([sys.executable, os.path.join(HERE, "gen-corpus.py"), "--seed", "1", "--count",
                        str(count), "--ext-fraction", "0.1", "--format", fmt, "--out", out,
                        "--base-url", "http://127.0.0.1:%d/" % port, "--alt-host", "localhost", "--force", "-q"]
                       + (["--serve-dir", serve_dir] if serve else []), check=True)
        if serve:
            open(mark, "w").write(out)
    return out


def timed(argv, stdout=subprocess.DEVNULL):
    """Seconds from the start of @argv to its exit (exit status 0 required)."""
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit("%s exited %d: %s" % (" ".join(argv), p.returncode, p.stderr.decode(errors="replace")))
    return dt, p.stderr.decode(errors="replace")


def fresh_copy(src, dst):
    """A copy of src at dst, on disk and in the page cache."""
    shutil.copyfile(src, dst)
    with open(dst, "rb") as f:
        os.fsync(f.fileno())
        while f.read(1 << 20):
            pass


def rewrite_args(extbody, work, fetch):
    args = [extbody, "rewrite", "-c", os.path.join(work, "empty.conf")]
    if fetch:
        return args + ["--fetch", "--allow-network", "127.0.0.1/32", "-o", "allow_domains=127.0.0.1,localhost",
                       "-o", "max_requests_per_host=100000"]
    return args + ["-o", "fetch=off"]


def t_rewrite(extbody, box, work, runs, fetch, jobs=None):
    """Median seconds of extbody rewrite --mbox on fresh copies, and its summary line."""
    times, summary = [], ""
    dst = os.path.join(work, "run.mbox")
    for _ in range(runs):
        fresh_copy(box, dst)
        argv = rewrite_args(extbody, work, fetch) + (["-j", str(jobs)] if jobs else []) + ["--mbox", dst]
        dt, err = timed(argv)
        times.append(dt)
        summary = next((l for l in err.splitlines() if "messages scanned" in l), "")
    os.unlink(dst)
    return statistics.median(times), summary.replace("extbody: ", "")


def t_gmime(build, box, work, runs):
    out = os.path.join(work, "gmime-out.mbox")
    times = []
    for _ in range(runs):
        if os.path.exists(out):
            os.unlink(out)
        times.append(timed([os.path.join(build, "tests", "bench-rewrite"), "--mbox", box, out])[0])
    os.unlink(out)
    return statistics.median(times)


def t_cp_sync(box, work, runs):
    out = os.path.join(work, "cp-out.mbox")
    times = []
    for _ in range(runs):
        if os.path.exists(out):
            os.unlink(out)
        times.append(timed(["cp", box, out])[0] + timed(["sync", out])[0])
    os.unlink(out)
    return statistics.median(times)


def t_into_file(argv, out_path, runs, ok=(0,)):
    times = []
    for _ in range(runs):
        with open(out_path, "wb") as out:
            t0 = time.perf_counter()
            rc = subprocess.run(argv, stdout=out, stderr=subprocess.DEVNULL).returncode
            times.append(time.perf_counter() - t0)
        if rc not in ok:
            sys.exit("%s exited %d" % (" ".join(argv), rc))
    return statistics.median(times)


def inspect_vs_grep(extbody, box, work, runs):
    out = os.path.join(work, "out")
    t_grep = t_into_file(["grep", "-ci", "external-body", box], out, runs)
    t_ins = t_into_file([extbody, "inspect", "-c", os.path.join(work, "empty.conf"), "--mbox", box], out, runs)
    return t_ins, t_grep


def wait_port(port, seconds=10):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit("the HTTP server on 127.0.0.1:%d did not start" % port)


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def row(measure, t_ext, t_base, base_name, faster, goal):
    """One row: the two times, their ratio as the goal states it, whether it is met."""
    if faster:
        ratio = t_base / t_ext
        text = "%.2fx faster" % ratio
        met = ratio >= goal
        goal_text = "at least %.1fx faster" % goal
    else:
        ratio = t_ext / t_base
        text = "%.2fx the time" % ratio
        met = ratio <= goal
        goal_text = "at most %.1fx" % goal
    print("%-58s %8.3f s  %-14s %8.3f s  %-15s %-22s %s" % (
        measure, t_ext, base_name, t_base, text, goal_text, "met" if met else "NOT MET"))


def details(extbody, build, work, port, box, msgdir, runs):
    size = os.path.getsize(box) / 1e6
    t_cat = statistics.median(timed(["cat", box])[0] for _ in range(runs))
    t1, _ = t_rewrite(extbody, box, work, runs, False, 1)
    t2, _ = t_rewrite(extbody, box, work, runs, False, 2)
    files = sorted(os.path.join(msgdir, f) for f in os.listdir(msgdir))
    out = subprocess.run([os.path.join(build, "tests", "bench-rewrite"), "--repeat", "3"] + files,
                         capture_output=True, text=True, check=True).stdout
    gm = float(re.search(r"gmime roundtrip: [\d.]+ s\s+([\d.]+) MB/s", out).group(1))
    print()
    print("details (fetching off):")
    print("  cat of the mbox            %8.1f MB/s" % (size / t_cat))
    print("  GMime round trip (in proc) %8.1f MB/s  (messages in memory, written to a null stream)" % gm)
    print("  extbody rewrite -j 1       %8.1f MB/s  %6.0f msg/s" % (size / t1, 2000 / t1))
    print("  extbody rewrite -j 2       %8.1f MB/s  %6.0f msg/s" % (size / t2, 2000 / t2))
    print("  speed-up -j 2 over -j 1: %.2f x; -j 2 to cat: %.2f" % (t1 / t2, t_cat / t2))
    for count in (500, 4000):
        b = gen(work, count, port)
        dst = os.path.join(work, "run.mbox")
        fresh_copy(b, dst)
        p = subprocess.run(["/usr/bin/time", "-v"] + rewrite_args(extbody, work, False) + ["--mbox", dst],
                           stderr=subprocess.PIPE, text=True, check=True)
        rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
        os.unlink(dst)
        print("  peak RSS at %4d messages (%4.0f MB): %6.1f MB" % (count, os.path.getsize(b) / 1e6, rss / 1024))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--work", default="/tmp/extbody-bench-mailbox")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--load", type=int, default=os.cpu_count() or 1,
                    help="processes spinning for the loaded rows (default: the number of CPUs; 0: none)")
    ap.add_argument("--details", action="store_true", help="the older figures too")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    extbody = os.path.join(build, "src", "extbody")
    for p in (extbody, os.path.join(build, "tests", "bench-rewrite")):
        if not os.access(p, os.X_OK):
            sys.exit("no %s: build first" % p)
    os.makedirs(a.work, exist_ok=True)
    open(os.path.join(a.work, "empty.conf"), "w").close()
    portfile = os.path.join(a.work, "port")
    if os.path.exists(portfile):
        port = int(open(portfile).read())
    else:
        port = free_port()
        open(portfile, "w").write(str(port))
    box = gen(a.work, 2000, port, serve=True)
    box4k = gen(a.work, 4000, port)
    msgdir = gen(a.work, 2000, port, "dir", "seed1-2000-localhost-dir") if a.details else None
    srv = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                            "--directory", os.path.join(a.work, "serve")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    burners = []
    try:
        wait_port(port)
        start = uptime()
        print("extbody mailbox benchmark (issue 29): median of %d runs; extbody with its default jobs (%d CPUs)"
              % (a.runs, os.cpu_count() or 1))
        print("start: %s" % start)
        print("2000 messages: %.0f MB; 4000 messages: %.0f MB (gen-corpus.py --seed 1 --ext-fraction 0.1; "
              "http references on 127.0.0.1:%d and localhost:%d)"
              % (os.path.getsize(box) / 1e6, os.path.getsize(box4k) / 1e6, port, port))
        # warm the page cache with the inputs
        for b in (box, box4k):
            timed(["cat", b])
        t_off, sum_off = t_rewrite(extbody, box, a.work, a.runs, False)
        t_gm = t_gmime(build, box, a.work, a.runs)
        t_cp = t_cp_sync(box, a.work, a.runs)
        t_ins, t_grep = inspect_vs_grep(extbody, box4k, a.work, a.runs)
        t_on, sum_on = t_rewrite(extbody, box, a.work, a.runs, True)
        loaded = None
        if a.load > 0:
            burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.load)]
            time.sleep(1)   # let them take the CPUs
            loaded = inspect_vs_grep(extbody, box4k, a.work, a.runs)
            load_seen = uptime()
            for p in burners:
                p.kill()
                p.wait()
            burners = []
        print()
        print("%-58s %10s  %-14s %10s  %-15s %-22s %s" % ("measure", "extbody", "baseline", "", "ratio", "goal", ""))
        row("rewrite --mbox, 2000 messages, fetching off", t_off, t_gm, "GMime mbox", True, 2.5)
        row("rewrite --mbox, 2000 messages, fetching off", t_off, t_cp, "cp + sync", False, 1.5)
        row("inspect --mbox, 4000 messages", t_ins, t_grep, "grep -ci", False, 1.5)
        if loaded:
            row("inspect --mbox, 4000 messages, %d spinning processes" % a.load, loaded[0], loaded[1],
                "grep -ci", False, 1.5)
        row("rewrite --mbox, 2000 messages, fetching on (loopback)", t_on, t_gm, "GMime mbox", True, 1.5)
        print()
        print("fetching off: %s" % sum_off)
        print("fetching on:  %s" % sum_on)
        if loaded:
            print("under load:   %s" % load_seen)
        print("end:   %s" % uptime())
        if a.details:
            details(extbody, build, a.work, port, box, msgdir, a.runs)
    finally:
        for p in burners:
            p.kill()
            p.wait()
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    main()
