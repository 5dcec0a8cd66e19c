#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A loopback HTTP server for extbody's fetch tests; each path is a behaviour.

    python3 httpd.py [--bind 127.0.0.1] [--tls CERT KEY] [--lifetime 120]

Prints "PORT <n>" on its first line, then serves until standard input closes
or --lifetime seconds pass (a test that dies cannot leave it running).

Paths:
  /text                 "hello from the test server\\n", text/plain
  /bin?n=N              N bytes 0,1,2,...,255,0,... application/octet-stream
  /type?t=T&b=B         body B (default "x"), Content-Type T (raw; t= absent: none)
  /status/N             status N, short text body
  /redirect?to=URL&code=302   a redirect to URL
  /loop                 a redirect to itself
  /chain/N              N redirects in a row, then /text
  /slow?ms=N            wait N ms, then /text
  /peak?reset=1         the most /slow requests ever in progress at once (text);
                        reset=1 starts counting again
  /rate?bps=N&ms=M      N*M/1000 bytes at a steady N bytes a second, a tenth
                        with the header and one each 0.1 s
  /stall                send the header, then nothing for 30 s
  /short                Content-Length 100, 10 bytes, then close
  /long                 Content-Length 5, 50 bytes
  /big?n=N              N bytes without a Content-Length (close-delimited)
  /hits                 how many requests this server has answered (text)
  /counts               the requests each target (path and query) got, one
                        "N TARGET" line each, /hits and /counts not counted
  /header-flood         a response header of 200 lines of 1 KB
  /headers?n=N          a response whose header (status line to blank line) is N bytes
  /hold?gate=G&n=I      wait until gate G is opened (at most 60 s), then "held I\n"
  /held?gate=G          how many /hold requests wait at gate G now (text)
  /open?gate=G          open gate G: its waiting and later /hold requests go on
"""
import argparse
import os
import select
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HITS = 0
LOCK = threading.Lock()
INFLIGHT = 0   # /slow requests in progress
PEAK = 0       # the most of them at once
GATES = {}     # /hold gate name: threading.Event
HELD = {}      # /hold gate name: requests waiting there
COUNTS = {}    # request target: requests


def gate(name):
    with LOCK:
        return GATES.setdefault(name, threading.Event())


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send(self, status, body, ctype="text/plain", extra=None, length=None):
        self.send_response(status)
        if ctype is not None:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def do_GET(self):
        global HITS, INFLIGHT, PEAK
        with LOCK:
            HITS += 1
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        p = u.path
        host = self.headers.get("Host", "127.0.0.1")
        if p not in ("/hits", "/counts"):
            with LOCK:
                COUNTS[self.path] = COUNTS.get(self.path, 0) + 1
        if p == "/counts":
            with LOCK:
                body = "".join("%d %s\n" % (n, t) for t, n in sorted(COUNTS.items()))
            return self.send(200, body.encode())
        if p == "/text":
            return self.send(200, b"hello from the test server\n")
        if p == "/bin":
            n = int(q.get("n", ["256"])[0])
            return self.send(200, bytes(i % 256 for i in range(n)), "application/octet-stream")
        if p == "/type":
            body = q.get("b", ["x"])[0].encode()
            return self.send(200, body, q["t"][0] if "t" in q else None)
        if p.startswith("/status/"):
            code = int(p.split("/")[2])
            return self.send(code, b"status body\n")
        if p == "/redirect":
            code = int(q.get("code", ["302"])[0])
            return self.send(code, b"", extra={"Location": q["to"][0]})
        if p == "/loop":
            return self.send(302, b"", extra={"Location": "/loop"})
        if p.startswith("/chain/"):
            n = int(p.split("/")[2])
            loc = "/text" if n <= 1 else "/chain/%d" % (n - 1)
            return self.send(302, b"", extra={"Location": loc})
        if p == "/slow":
            with LOCK:
                INFLIGHT += 1
                PEAK = max(PEAK, INFLIGHT)
            try:
                time.sleep(int(q.get("ms", ["100"])[0]) / 1000.0)
            finally:
                with LOCK:
                    INFLIGHT -= 1
            return self.send(200, b"hello from the test server\n")
        if p == "/peak":
            with LOCK:
                peak = PEAK
                if q.get("reset"):
                    PEAK = INFLIGHT
            return self.send(200, b"%d\n" % peak)
        if p == "/rate":
            bps = int(q["bps"][0])
            ms = int(q.get("ms", ["1000"])[0])
            tenth = max(1, bps // 10)
            chunks = max(1, ms // 100)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(tenth * chunks))
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                # the first tenth with the header, then one each 0.1 s: the
                # rate holds from the first byte on
                for i in range(chunks):
                    if i:
                        time.sleep(0.1)
                    self.wfile.write(b"r" * tenth)
                    self.wfile.flush()
            except OSError:
                pass
            self.close_connection = True
            return
        if p == "/stall":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "10")
            self.end_headers()
            self.wfile.flush()
            time.sleep(30)
            return
        if p == "/short":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "100")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"0123456789")
            self.wfile.flush()
            self.close_connection = True
            return
        if p == "/long":
            return self.send(200, b"x" * 50, length=5)
        if p == "/big":
            n = int(q.get("n", ["1000"])[0])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            chunk = b"b" * 65536
            while n > 0:
                try:
                    self.wfile.write(chunk[:n])
                except OSError:
                    break
                n -= len(chunk)
            self.close_connection = True
            return
        if p == "/hold":
            g = q.get("gate", ["g"])[0]
            ev = gate(g)
            with LOCK:
                HELD[g] = HELD.get(g, 0) + 1
            try:
                ev.wait(60)
            finally:
                with LOCK:
                    HELD[g] -= 1
            return self.send(200, b"held %s\n" % q.get("n", ["0"])[0].encode())
        if p == "/held":
            with LOCK:
                n = HELD.get(q.get("gate", ["g"])[0], 0)
            return self.send(200, b"%d\n" % n)
        if p == "/open":
            gate(q.get("gate", ["g"])[0]).set()
            return self.send(200, b"0\n")
        if p == "/hits":
            with LOCK:
                h = HITS
            return self.send(200, b"%d\n" % h)
        if p == "/headers":
            n = int(q.get("n", ["200"])[0])
            head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
                    b"Connection: close\r\nX-Pad: ")
            tail = b"\r\n\r\n"
            pad = n - len(head) - len(tail)
            if pad < 0:
                return self.send(400, b"n too small\n")
            self.wfile.write(head + b"p" * pad + tail + b"ok\n")
            self.close_connection = True
            return
        if p == "/header-flood":
            return self.send(200, b"x", extra={"X-Flood-%d" % i: "f" * 1000 for i in range(200)})
        return self.send(404, b"no such behaviour\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    ap.add_argument("--lifetime", type=float, default=120)
    a = ap.parse_args()
    family = socket.AF_INET6 if ":" in a.bind else socket.AF_INET
    ThreadingHTTPServer.address_family = family
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 128   # the default 5 drops concurrent SYNs
    srv = ThreadingHTTPServer((a.bind, 0), Handler)
    if a.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls[0], a.tls[1])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("PORT %d" % srv.server_address[1], flush=True)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    end = time.monotonic() + a.lifetime
    while time.monotonic() < end:
        r, _, _ = select.select([sys.stdin], [], [], 0.5)
        if r and not sys.stdin.buffer.read1(4096):
            break
    srv.shutdown()


if __name__ == "__main__":
    main()
