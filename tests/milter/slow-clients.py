#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A flood of slow clients against one of extbodyd's doors (run by test-http
and test-dovecot-protocol, as a second local user through setpriv).

    slow-clients.py --socket PATH --door http|dovecot [--connections N]
                    [--interval SECONDS] [--duration SECONDS]

Opens N connections to the unix socket PATH, one after the other, each
kept, and sends on every one of them one more byte of a request that never
ends every INTERVAL seconds (HTTP: a header that never ends; Dovecot: the
protocol's header, then a message that never ends), for DURATION seconds.
A connection the daemon answers or closes stops there. At the end one line:

    opened N refused-at-once R cut C open O answers A1=N1,A2=N2,...

refused-at-once: answered or closed within a second of being opened;
cut: answered or closed later, during the run; open: still open at the end;
answers: the first line of each distinct answer (HTTP status lines, or "-")
and how many got it.
"""
import argparse
import socket
import sys
import time


def first_line(data):
    line = data.split(b"\n", 1)[0].strip()
    return line.decode("latin1") or "(closed)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--door", choices=("http", "dovecot"), required=True)
    ap.add_argument("--connections", type=int, default=40)
    ap.add_argument("--interval", type=float, default=0.5)
    ap.add_argument("--duration", type=float, default=8.0)
    a = ap.parse_args()
    if a.door == "http":
        head = b"POST /rewrite HTTP/1.1\r\nHost: localhost\r\nX-Slow: "
    else:
        head = b"VERSION\tscript\t4\t0\n-\n\nFrom: slow@example.org\r\nX-Slow: "
    conns = []   # [socket, opened at, ended at or None, answer]
    answers = {}
    start = time.monotonic()

    def check(c, now):
        s = c[0]
        try:
            data = s.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        c[2] = now
        c[3] = first_line(data)
        answers[c[3]] = answers.get(c[3], 0) + 1
        s.close()

    for _ in range(a.connections):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            s.connect(a.socket)
            s.sendall(head)
        except OSError:
            pass
        s.setblocking(False)
        conns.append([s, time.monotonic(), None, None])
    while time.monotonic() - start < a.duration:
        now = time.monotonic()
        for c in conns:
            if c[2] is None:
                check(c, now)
        for c in [c for c in conns if c[2] is None]:
            try:
                c[0].send(b"a")
            except OSError:
                pass
        time.sleep(a.interval)
    now = time.monotonic()
    for c in conns:
        if c[2] is None:
            check(c, now)
    refused = sum(1 for c in conns if c[2] is not None and c[2] - c[1] < 1.0)
    cut = sum(1 for c in conns if c[2] is not None and c[2] - c[1] >= 1.0)
    still = sum(1 for c in conns if c[2] is None)
    print("opened %d refused-at-once %d cut %d open %d answers %s"
          % (len(conns), refused, cut, still, ",".join("%s=%d" % kv for kv in sorted(answers.items()))))
    for c in conns:
        if c[2] is None:
            c[0].close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
