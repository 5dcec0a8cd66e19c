#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Peak memory of extbodyd's HTTP and Dovecot doors under many large
messages at once (issue 39, item 4).

For each door (http_socket: POST /rewrite; dovecot_filter_socket: Dovecot's
program-client protocol) a fresh daemon of default limits (fetch off) takes
one small message, then --count messages of --mib MiB at once, each with a
data: reference (so that its plan parses and resolves it) and an attachment
of random bytes; every answer is checked (200 or "+", the reference
resolved, whole). Shown per door: the daemon's VmHWM before and after (its
peak resident memory, which counts the pages of the spool files it maps
while their messages are planned), how much it grew as a multiple of the
messages' bytes, and its peak RssAnon (sampled every 10 ms: its own memory,
without file pages). With --build-before, the same for an older build in
the same run, and the ratio of each figure to that baseline.

    python3 tests/bench/bench-door-memory.py [--build build] [--build-before DIR]
        [--count 16] [--mib 50] [--doors http,dovecot]

Not a test (milter/test-http and milter/test-dovecot-protocol are, with four
16 MiB messages): nothing is asserted but that every answer is whole.
"""
import argparse
import base64
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from benchlib import find_daemon, stop_daemon

HERE = os.path.dirname(os.path.abspath(__file__))


def status_kib(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class AnonPeak:
    """The largest RssAnon of pid seen, sampled every 10 ms."""

    def __init__(self, pid):
        self.pid, self.peak, self.stop = pid, 0, False
        self.t = threading.Thread(target=self.run)
        self.t.start()

    def run(self):
        while not self.stop:
            self.peak = max(self.peak, status_kib(self.pid, "RssAnon"))
            time.sleep(0.01)

    def end(self):
        self.stop = True
        self.t.join()
        return self.peak


def attachment(mib):
    """About mib MiB of random bytes as base64 lines, CR LF, the same bytes
    in every message (the driver holds them once)."""
    rnd = random.Random(39)
    raw = bytes(rnd.getrandbits(8) for _ in range(57 * 1024))
    block = b"".join(base64.b64encode(raw[i:i + 57]) + b"\r\n" for i in range(0, len(raw), 57))
    reps = (mib * 1024 * 1024) // len(block) + 1
    return block * reps


def message(i, body):
    head = ("From: a@example.org\r\nTo: b@example.net\r\nSubject: big %d\r\nMessage-ID: <big-%d@bench.example>\r\n"
            "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
            "Content-Type: message/external-body; access-type=URL; URL=\"data:,big%%20%d\"\r\n\r\n"
            "Content-Type: text/plain\r\n\r\n--b\r\nContent-Type: application/octet-stream\r\n"
            "Content-Transfer-Encoding: base64\r\n\r\n" % (i, i, i)).encode()
    return head, b"--b--\r\n"


def send_one(door, sock, i, body, results):
    head, tail = message(i, body)
    size = len(head) + len(body) + len(tail)
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(600)
    s.connect(sock)
    if door == "http":
        s.sendall(b"POST /rewrite HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                  b"Content-Length: %d\r\n\r\n" % size)
    else:
        s.sendall(b"VERSION\tscript\t4\t0\n-\n\n")
    s.sendall(head)
    s.sendall(body)
    s.sendall(tail)
    if door == "dovecot":
        s.shutdown(socket.SHUT_WR)
    got, n = [], 0
    first = b""
    last = b""
    while True:
        d = s.recv(1 << 20)
        if not d:
            break
        if len(first) < 8192:
            first += d[:8192]
        last = (last + d)[-64:]
        n += len(d)
    s.close()
    mine = b"\r\n\r\nbig %d" % i
    ok = n > size and mine in first and last.endswith(b"+\n" if door == "dovecot" else b"--b--\r\n")
    if door == "http":
        ok = ok and first.startswith(b"HTTP/1.1 200 OK\r\n")
    results[i] = (ok, size)


def run_door(daemon, door, count, body, work):
    d = tempfile.mkdtemp(dir=work)
    sock = os.path.join(d, "door.sock")
    conf = os.path.join(d, "extbody.conf")
    with open(conf, "w") as f:
        f.write("[extbody]\nfetch = off\n")
        if door == "http":
            f.write("http_socket = unix:%s\ndovecot_filter_socket =\n" % sock)
        else:
            f.write("http_socket =\ndovecot_filter_socket = %s\n" % sock)
    log = open(os.path.join(d, "daemon.log"), "w")
    proc = subprocess.Popen([daemon, "-c", conf, "-p", "unix:" + os.path.join(d, "milter.sock")],
                            stderr=log)
    try:
        for _ in range(600):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        small = {}
        send_one(door, sock, 10000, b"c21hbGw=\r\n", small)
        idle = status_kib(proc.pid, "VmHWM")
        anon = AnonPeak(proc.pid)
        results = {}
        ts = [threading.Thread(target=send_one, args=(door, sock, i, body, results)) for i in range(count)]
        t0 = time.monotonic()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        took = time.monotonic() - t0
        peak_anon = anon.end()
        peak = status_kib(proc.pid, "VmHWM")
    finally:
        stop_daemon(proc)
        log.close()
    total = sum(r[1] for r in results.values())
    whole = sum(1 for r in results.values() if r[0])
    return {"idle": idle, "peak": peak, "anon": peak_anon, "total": total, "whole": whole, "took": took}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--build-before", help="an older build directory, measured the same way: the baseline")
    ap.add_argument("--count", type=int, default=16, help="messages at once")
    ap.add_argument("--mib", type=int, default=50, help="MiB per message")
    ap.add_argument("--doors", default="http,dovecot")
    a = ap.parse_args()
    builds = [("before", a.build_before)] if a.build_before else []
    builds.append(("after" if a.build_before else "build", a.build))
    daemons = []
    for name, b in builds:
        daemon = find_daemon(b)
        if not daemon:
            print("no extbodyd under %s" % b, file=sys.stderr)
            return 2
        daemons.append((name, daemon))
    body = attachment(a.mib)
    work = tempfile.mkdtemp(prefix="bench-door-memory-")
    print("%d messages of %.1f MiB at once, per door; a fresh daemon per row; KiB" % (a.count, len(body) / 1048576))
    print("%-7s %-8s %10s %10s %10s %8s %10s %8s %9s %10s" % ("build", "door", "idle HWM", "peak HWM", "growth",
                                                             "x msgs", "RssAnon", "x msgs", "answers", "vs base"))
    base = {}
    try:
        for door in a.doors.split(","):
            for name, daemon in daemons:
                r = run_door(daemon, door, a.count, body, work)
                growth = r["peak"] - r["idle"]
                ratio = growth * 1024 / r["total"] if r["total"] else 0
                aratio = r["anon"] * 1024 / r["total"] if r["total"] else 0
                if door not in base:
                    base[door] = r["peak"]
                print("%-7s %-8s %10d %10d %10d %8.2f %10d %8.2f %6d/%-2d %9.2fx"
                      % (name, door, r["idle"], r["peak"], growth, ratio, r["anon"], aratio, r["whole"], a.count,
                         r["peak"] / base[door]))
                sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
