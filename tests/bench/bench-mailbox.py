#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Mailbox benchmark: a generated mailbox of 2000 messages (gen-corpus.py --seed 1
--ext-fraction 0.1, its http references served on 127.0.0.1), measured in the
same run:

  - `extbody rewrite` of the mbox (MB/s and messages/s), against `cat` of the same
    mbox and against a GMime parse-and-write round trip of the same messages
    (in process, bench-rewrite: the round trip pays no process start or file I/O);
  - the speed-up of -j 2 over -j 1;
  - peak memory (maximum resident set size) at 500 and at 4000 messages.

Fetching is confined to 127.0.0.1 (allow_networks and allow_domains): the
corpus also names hosts such as ftp.example.net, which are refused before any
name lookup, so the benchmark never leaves the machine.

    python3 tests/bench/bench-mailbox.py [--build build] [--work DIR]

Not a test: nothing asserts a speed. Median of 3 runs, each on a fresh copy.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

from benchlib import free_port

HERE = os.path.dirname(os.path.abspath(__file__))


def gen(work, count, port, fmt="mbox", name=None):
    out = os.path.join(work, name or "box-%d.%s" % (count, fmt))
    if not os.path.exists(out):
        subprocess.run([sys.executable, os.path.join(HERE, "gen-corpus.py"), "--seed", "1", "--count",
                        str(count), "--ext-fraction", "0.1", "--format", fmt, "--out", out,
                        "--base-url", "http://127.0.0.1:%d/" % port,
                        "--serve-dir", os.path.join(work, "serve"), "--force", "-q"], check=True)
    return out


def rewrite(extbody, src, work, jobs):
    """Seconds and peak RSS (KB) of one rewrite of a fresh copy of src."""
    dst = os.path.join(work, "run.mbox")
    shutil.copyfile(src, dst)
    subprocess.run(["cat", dst], stdout=subprocess.DEVNULL)   # warm the page cache
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-v", extbody, "rewrite", "-c", os.path.join(work, "empty.conf"),
                        "--fetch", "--allow-network", "127.0.0.1/32", "-o", "allow_domains=127.0.0.1",
                        "-o", "max_requests_per_host=100000",
                        "-j", str(jobs), "--mbox", dst], stderr=subprocess.PIPE, text=True, check=True)
    dt = time.perf_counter() - t0
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    summary = [l for l in p.stderr.splitlines() if "messages scanned" in l]
    return dt, rss, summary[0] if summary else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--work", default="/tmp/extbody-bench-mailbox")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    extbody = os.path.join(build, "src", "extbody")
    os.makedirs(a.work, exist_ok=True)
    open(os.path.join(a.work, "empty.conf"), "w").close()
    portfile = os.path.join(a.work, "port")
    if os.path.exists(portfile):
        port = int(open(portfile).read())
    else:
        port = free_port()
        open(portfile, "w").write(str(port))
    box = gen(a.work, 2000, port)
    msgdir = gen(a.work, 2000, port, "dir", "dir-2000")
    srv = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                            "--directory", os.path.join(a.work, "serve")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    try:
        size = os.path.getsize(box) / 1e6
        cat = []
        for _ in range(3):
            t0 = time.perf_counter()
            subprocess.run(["cat", box], stdout=subprocess.DEVNULL, check=True)
            cat.append(time.perf_counter() - t0)
        t_cat = statistics.median(cat)
        runs = {1: [], 2: []}
        summary = ""
        for jobs in (1, 2):
            for _ in range(3):
                dt, rss, summary = rewrite(extbody, box, a.work, jobs)
                runs[jobs].append(dt)
        t1, t2 = statistics.median(runs[1]), statistics.median(runs[2])
        files = sorted(os.path.join(msgdir, f) for f in os.listdir(msgdir))
        out = subprocess.run([os.path.join(build, "tests", "bench-rewrite"), "--repeat", "3"] + files,
                             capture_output=True, text=True, check=True).stdout
        gm = float(re.search(r"gmime roundtrip: [\d.]+ s\s+([\d.]+) MB/s", out).group(1))
        # GMime's own mbox round trip as a process: read the mbox file, write an
        # mbox file, fsync - the same I/O extbody does
        gmf = []
        for _ in range(3):
            t0 = time.perf_counter()
            subprocess.run([os.path.join(build, "tests", "bench-rewrite"), "--mbox", box,
                            os.path.join(a.work, "gmime-out.mbox")], stdout=subprocess.DEVNULL, check=True)
            gmf.append(time.perf_counter() - t0)
        gm_file = size / statistics.median(gmf)
        print("2000 messages, %.0f MB mbox, 10%% with references (http ones served on 127.0.0.1)" % size)
        print("  %s" % summary.replace("extbody: ", ""))
        print("  cat                        %8.1f MB/s" % (size / t_cat))
        print("  GMime round trip (in proc) %8.1f MB/s  (messages in memory, written to a null stream)" % gm)
        print("  GMime mbox round trip      %8.1f MB/s  (a process: mbox file in, mbox file out, fsync)" % gm_file)
        print("  extbody rewrite -j 1       %8.1f MB/s  %6.0f msg/s" % (size / t1, 2000 / t1))
        print("  extbody rewrite -j 2       %8.1f MB/s  %6.0f msg/s" % (size / t2, 2000 / t2))
        print("  ratio -j 2 to cat: %.2f; to the GMime round trip in process: %.2f; to GMime's mbox round trip: %.2f"
              % (t_cat / t2, (size / t2) / gm, (size / t2) / gm_file))
        print("  speed-up -j 2 over -j 1: %.2f x" % (t1 / t2))
        for count in (500, 4000):
            b = gen(a.work, count, port)
            dt, rss, _ = rewrite(extbody, b, a.work, 2)
            print("  peak RSS at %4d messages (%4.0f MB): %6.1f MB" % (count, os.path.getsize(b) / 1e6, rss / 1024))
    finally:
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    main()
