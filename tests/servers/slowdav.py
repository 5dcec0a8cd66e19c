#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A loopback WebDAV-like object store that answers PUT slowly, for extbody's
tests of a slow externalize store (a milter waiting on it must keep the MTA
informed).

    python3 slowdav.py [--put-seconds 6] [--lifetime 120]

Objects live in memory under any path:
  HEAD, GET /PATH   the object (application/octet-stream), or 404
  PUT /PATH         reads the whole body, stores it, then trickles its answer
                    over --put-seconds: the status line at once, one header
                    line ("X-Wait: N") every 0.25 s, then the end of the
                    header (201 Created, no body)
  GET /puts         how many PUTs were answered (text), not an object

Prints "PORT <n>" on its first line, then serves until standard input closes
or --lifetime seconds pass (a test that dies cannot leave it running).
"""
import argparse
import select
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
OBJECTS = {}
PUTS = 0
PUT_SECONDS = 6.0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, body, head_only=False):
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head_only:
            self.wfile.write(body)

    def object(self, head_only):
        global PUTS
        if self.path == "/puts" and not head_only:
            with LOCK:
                return self.answer(200, b"%d\n" % PUTS)
        with LOCK:
            body = OBJECTS.get(self.path)
        if body is None:
            return self.answer(404, b"not here\n", head_only)
        return self.answer(200, body, head_only)

    def do_HEAD(self):
        self.object(True)

    def do_GET(self):
        self.object(False)

    def do_PUT(self):
        global PUTS
        if self.headers.get("Expect", "").lower() == "100-continue":
            self.send_response_only(100)
            self.end_headers()
        n = int(self.headers.get("Content-Length", "0"))
        body = b""
        while len(body) < n:
            chunk = self.rfile.read(min(65536, n - len(body)))
            if not chunk:
                return
            body += chunk
        with LOCK:
            OBJECTS[self.path] = body
        self.wfile.write(b"HTTP/1.1 201 Created\r\n")
        self.wfile.flush()
        end = time.monotonic() + PUT_SECONDS
        i = 0
        while time.monotonic() < end:
            time.sleep(0.25)
            self.wfile.write(b"X-Wait: %d\r\n" % i)
            self.wfile.flush()
            i += 1
        self.wfile.write(b"Content-Length: 0\r\n\r\n")
        self.wfile.flush()
        with LOCK:
            PUTS += 1


def main():
    global PUT_SECONDS
    ap = argparse.ArgumentParser()
    ap.add_argument("--put-seconds", type=float, default=6.0)
    ap.add_argument("--lifetime", type=float, default=120)
    a = ap.parse_args()
    PUT_SECONDS = a.put_seconds
    ThreadingHTTPServer.daemon_threads = True
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
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
