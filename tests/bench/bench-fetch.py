#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Fetch benchmark: one message with 50 references to 20 distinct URLs on a
loopback server that waits 20 ms before each response. Measured in the same run:

  - `extbody rewrite` (concurrent fetches, each URL once);
  - the same with max_concurrent_fetches=1 (each URL once, one at a time);
  - the `curl` command fetching the 20 URLs one after another (one process);
  - the `curl` command fetching all 50 references one after another.

    python3 tests/bench/bench-fetch.py [--build build] [--runs 5]

Not a test: nothing asserts a speed. Median wall time of --runs runs.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(cmd, stdin_bytes=None, runs=5):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, input=stdin_bytes, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), p.stderr.decode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    extbody = os.path.join(os.path.abspath(a.build), "src", "extbody")
    srv = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "servers", "httpd.py"),
                            "--lifetime", "600"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    port = int(srv.stdout.readline().split()[1])
    try:
        urls = ["http://127.0.0.1:%d/slow?ms=20&n=%d" % (port, i) for i in range(20)]
        refs = [urls[i % 20] for i in range(50)]
        parts = "".join(
            "--b\nContent-Type: message/external-body; access-type=URL; URL=\"%s\"\n\n"
            "Content-Type: text/plain\n\n" % u for u in refs)
        msg = ("From: bench@example.org\nMIME-Version: 1.0\n"
               "Content-Type: multipart/mixed; boundary=b\n\n" + parts + "--b--\n").encode()
        base = [extbody, "rewrite", "--report", "--fetch", "--allow-network", "127.0.0.1/32",
                "-o", "max_requests_per_host=100000"]
        t_eb, rep = timed(base, msg, a.runs)
        resolved = rep.count("resolved")
        t_eb1, _ = timed(base + ["-o", "max_concurrent_fetches=1"], msg, a.runs)
        curl20 = ["curl", "-s", "--noproxy", "*"]
        for u in urls:
            curl20 += ["-o", "/dev/null", u]
        t_c20, _ = timed(curl20, None, a.runs)
        curl50 = ["curl", "-s", "--noproxy", "*"]
        for u in refs:
            curl50 += ["-o", "/dev/null", u]
        t_c50, _ = timed(curl50, None, a.runs)
    finally:
        srv.stdin.close()
        srv.wait()
    print("one message, 50 references to 20 distinct URLs, server waits 20 ms per response")
    print("  extbody rewrite (8 at once, each URL once)   %6.0f ms  (%d references resolved)" % (t_eb * 1000, resolved))
    print("  extbody, max_concurrent_fetches=1            %6.0f ms" % (t_eb1 * 1000))
    print("  curl, the 20 URLs one after another          %6.0f ms" % (t_c20 * 1000))
    print("  curl, all 50 references one after another    %6.0f ms" % (t_c50 * 1000))
    print("  extbody relative to curl x20: %.2f x faster" % (t_c20 / t_eb))
    print("  speed-up from concurrency (extbody 1 at once / 8 at once): %.2f x" % (t_eb1 / t_eb))
    print("  speed-up from fetching each URL once (curl x50 / curl x20): %.2f x" % (t_c50 / t_c20))


if __name__ == "__main__":
    main()
