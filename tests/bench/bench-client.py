#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Per-message benchmark: extbodyc against a running daemon against
`extbody rewrite --filter` started per message.

The sample corpus (data/samples/*.eml and tests/corpus/*.eml, or --corpus
files) taken in turn until --count messages, one after another (no
concurrency: the wall time a message costs the program that asks): each
message through `extbodyc -s unix:HTTP_SOCKET` against a private daemon
(http_socket; started before the clock runs, as a resident daemon is), and
through `extbody rewrite --filter` started for it; both with fetch = off and
their output to /dev/null. Milliseconds per message, the median of --repeat
runs, and how many times less extbodyc takes. The daemon's peak memory
(VmHWM) is read at the end, and every answer of the daemon is checked against
what extbody wrote for the same message. Not a test: nothing asserts a speed.

    python3 tests/bench/bench-client.py [--build build] [--daemon PATH] [--count 200] [--repeat 3]
                                        [--corpus FILE...]

--daemon names the daemon program (default: extbodyd or extbody-milter under
the build directory).
"""
import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import find_daemon, stop_daemon, vm_hwm

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))


def timed(cmd, files):
    """Seconds for cmd run once per file, the file on standard input, output to /dev/null."""
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as null:
        for path in files:
            with open(path, "rb") as inp:
                subprocess.run(cmd, stdin=inp, stdout=null, check=True)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(TOP, "build"))
    ap.add_argument("--daemon", help="the daemon program (default: extbodyd or extbody-milter under --build)")
    ap.add_argument("--count", type=int, default=200, help="messages per run (the corpus taken in turn)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per row; the median is shown")
    ap.add_argument("--corpus", nargs="*", help="message files (default data/samples/*.eml tests/corpus/*.eml)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    daemon_bin = a.daemon or find_daemon(build)
    if not daemon_bin:
        sys.exit("bench-client.py: no extbodyd or extbody-milter under %s (give --daemon)" % build)
    client = os.path.join(build, "filters", "client", "extbodyc")
    extbody = os.path.join(build, "src", "extbody")
    corpus = a.corpus or sorted(glob.glob(os.path.join(TOP, "data", "samples", "*.eml")) +
                                glob.glob(os.path.join(TOP, "tests", "corpus", "*.eml")))
    if not corpus:
        sys.exit("bench-client.py: no messages")
    files = [corpus[i % len(corpus)] for i in range(a.count)]
    work = tempfile.mkdtemp(prefix="extbody-bench-client-")
    daemon = None
    try:
        conf = os.path.join(work, "extbody.conf")
        with open(conf, "w") as f:
            f.write("[extbody]\nfetch = off\n")
        http_sock = os.path.join(work, "http.sock")
        dconf = os.path.join(work, "daemon.conf")
        with open(dconf, "w") as f:
            # the Dovecot door's default (under /run/extbody, the system's) not opened
            f.write("[extbody]\nfetch = off\ndovecot_filter_socket =\nhttp_socket = unix:%s\n" % http_sock)
        daemon = subprocess.Popen([daemon_bin, "-p", "unix:" + os.path.join(work, "milter.sock"), "-c", dconf],
                                  stderr=subprocess.DEVNULL)
        for _ in range(600):
            if os.path.exists(http_sock) or daemon.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(http_sock):
            raise RuntimeError("the daemon did not open %s" % http_sock)
        clog = os.path.join(work, "extbodyc.log")
        rows = [("extbody rewrite --filter, per message", [extbody, "rewrite", "--filter", "-c", conf]),
                ("extbodyc, running daemon", [client, "-s", "unix:" + http_sock, "-t", "30", "-l", clog])]
        # the same answer both ways (and a warm page cache)
        same = 0
        for path in corpus:
            with open(path, "rb") as inp:
                want = subprocess.run(rows[0][1], stdin=inp, capture_output=True).stdout
            with open(path, "rb") as inp:
                got = subprocess.run(rows[1][1], stdin=inp, capture_output=True).stdout
            same += want == got
        size = sum(os.path.getsize(p) for p in files) / 1e3
        print("%d messages (%d files of the sample corpus in turn, %.0f KB), one after another; median of %d runs"
              % (a.count, len(corpus), size, a.repeat))
        print("the daemon's answer is what extbody rewrite --filter writes for %d of %d files" % (same, len(corpus)))
        times = {name: [] for name, _ in rows}
        for _ in range(a.repeat):
            for name, cmd in rows:
                times[name].append(timed(cmd, files))
        got = {}
        for name, _ in rows:
            got[name] = statistics.median(times[name]) / a.count * 1e3
            print("  %-40s %7.3f ms/message (runs: %s)" %
                  (name, got[name], " ".join("%.3f" % (t / a.count * 1e3) for t in times[name])))
        print("  extbodyc takes %.1fx less wall time per message" % (got[rows[0][0]] / got[rows[1][0]]))
        try:
            with open(clog) as f:
                fallbacks = sum(1 for _ in f)
        except FileNotFoundError:
            fallbacks = 0
        print("extbodyc fallbacks (messages passed through without the daemon): %d" % fallbacks)
        print("daemon %s: peak memory (VmHWM) %d KB after %d messages through its HTTP listener"
              % (daemon_bin, vm_hwm(daemon.pid), len(corpus) + a.count * a.repeat))
    finally:
        stop_daemon(daemon)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
