#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A stand-in for the extbody daemon's HTTP listener, good and bad, for
tests/client/test-extbodyc.c and tests/opensmtpd/test-smtpd-filter.c. Raw sockets, standard library only: the
faults are below what an HTTP library would let a server do.

    python3 answerd.py --dir DIR [--lifetime 600]

Listens on DIR/MODE.sock for every MODE of MODES (the socket the client is
given is the behaviour) and on a TCP port of 127.0.0.1 ("echo"); prints
"PORT <port>", then serves until standard input closes or --lifetime
seconds pass (a test that dies cannot leave it running). Every request
read whole appends "MODE METHOD PATH LENGTH HOST|CTYPE|CONNECTION" to
DIR/requests.log, so that a test can tell that none came.
"""
import argparse
import os
import socket
import sys
import threading
import time

PREFIX = b"X-Answerd: changed\r\n"
SLOW = 30.0


def transform(msg):
    """The fixed change the good modes make: a header line on top."""
    return PREFIX + msg


def read_request(conn):
    """(method, path, fields, body), or None when the client went early."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return None
        data += piece
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    fields = {}
    for line in lines[1:]:
        name, value = line.split(":", 1)
        fields[name.strip().lower()] = value.strip()
    length = int(fields.get("content-length", "0"))
    while len(body) < length:
        piece = conn.recv(1 << 20)
        if not piece:
            return None
        body += piece
    return method, path, fields, body


def answer(status, body, extra=b"", length=True):
    h = b"HTTP/1.1 " + status + b"\r\n"
    if length:
        h += b"Content-Length: " + str(len(body)).encode() + b"\r\n"
    return h + extra + b"Connection: close\r\n\r\n" + body


EXT = b"Extbody-Changed: yes\r\nExtbody-References: 1\r\nExtbody-Resolved: 1\r\n"


def chunked(body):
    out = b""
    sizes = [1, 7, 100, 4096, 65536]
    i = 0
    pos = 0
    while pos < len(body):
        n = sizes[i % len(sizes)]
        i += 1
        piece = body[pos:pos + n]
        pos += n
        ext = b";note=x" if i == 2 else b""
        out += b"%x" % len(piece) + ext + b"\r\n" + piece + b"\r\n"
    return out + b"0\r\nX-Trailer: ok\r\n\r\n"


def respond(mode, conn, req):
    method, path, fields, msg = req
    if mode == "echo" and path == "/inspect":
        body = b'{"path":"/inspect","bytes":%d}\n' % len(msg)
        return answer(b"200 OK", body, b"Content-Type: application/json\r\n")
    new = transform(msg)
    if mode == "echo":
        return answer(b"200 OK", new, EXT)
    if mode == "unchanged":
        return answer(b"200 OK", b"not the message\r\n",
                      b"Extbody-Changed: no\r\nExtbody-References: 0\r\nExtbody-Resolved: 0\r\n")
    if mode == "plain":        # a web server, not the daemon: no Extbody-Changed
        return answer(b"200 OK", b"<html>hello</html>\n")
    if mode == "error":
        return answer(b"500 Internal Server Error", b"the daemon failed: test\n")
    if mode == "refuse":
        return answer(b"413 Content Too Large", b"message over max_message_size\n")
    if mode == "garbage":
        return b"\x00\x01SSH-2.0-garbage\r\n\r\nnot http at all"
    if mode == "chunked":
        return (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n" + EXT
                + b"Connection: close\r\n\r\n" + chunked(new))
    if mode == "eof":          # neither length nor chunks: the body ends at the close
        return answer(b"200 OK", new, EXT, length=False)
    if mode == "short":        # Content-Length shorter than the body sent
        return (b"HTTP/1.1 200 OK\r\nContent-Length: " + str(len(new) // 2).encode()
                + b"\r\n" + EXT + b"Connection: close\r\n\r\n" + new)
    if mode == "cut":          # closed in the middle of the body
        whole = answer(b"200 OK", new, EXT)
        return whole[:len(whole) - len(new) // 2]
    if mode == "hugeheader":
        return answer(b"200 OK", new, EXT + b"X-Big: " + b"a" * 70000 + b"\r\n")
    if mode == "busy":         # a daemon stopping, or full: another may take it
        return answer(b"503 Service Unavailable", b"stopping: try again later\n")
    if mode == "gateway":      # a balancer whose server went away
        return answer(b"502 Bad Gateway", b"<html>502 Bad Gateway</html>\n")
    if mode == "dies":         # killed once the message is in: no answer at all
        return b""
    if mode == "interim":      # a 100 Continue first
        return b"HTTP/1.1 100 Continue\r\n\r\n" + answer(b"200 OK", new, EXT)
    raise ValueError(mode)


MODES = ["echo", "unchanged", "plain", "error", "refuse", "garbage", "chunked", "eof", "short",
         "cut", "hugeheader", "interim", "slow", "early", "busy", "gateway", "dies"]


def serve(mode, conn, log, lock):
    try:
        if mode == "early":     # answers and closes before reading the message
            conn.recv(100)
            conn.sendall(answer(b"503 Service Unavailable", b"busy\n"))
            conn.close()
            return
        req = read_request(conn)
        if req is None:
            return
        with lock, open(log, "a") as f:
            f.write("%s %s %s %d %s|%s|%s\n" % (mode, req[0], req[1], len(req[3]),
                                                 req[2].get("host"), req[2].get("content-type"),
                                                 req[2].get("connection")))
        if mode == "slow":
            conn.settimeout(SLOW)
            try:
                conn.recv(1)    # until the client gives up
            except OSError:
                pass
            return
        conn.sendall(respond(mode, conn, req))
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        conn.close()


def listen(sock, mode, log, lock):
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        threading.Thread(target=serve, args=(mode, conn, log, lock), daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--lifetime", type=float, default=600)
    args = ap.parse_args()
    log = os.path.join(args.dir, "requests.log")
    lock = threading.Lock()
    for mode in MODES:
        path = os.path.join(args.dir, mode + ".sock")
        if os.path.exists(path):
            os.unlink(path)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.listen(16)
        threading.Thread(target=listen, args=(s, mode, log, lock), daemon=True).start()
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.bind(("127.0.0.1", 0))
    t.listen(16)
    threading.Thread(target=listen, args=(t, "echo", log, lock), daemon=True).start()
    print("PORT %d" % t.getsockname()[1], flush=True)
    end = time.monotonic() + args.lifetime
    stdin = threading.Thread(target=sys.stdin.read, daemon=True)
    stdin.start()
    while stdin.is_alive() and time.monotonic() < end:
        stdin.join(0.5)


if __name__ == "__main__":
    main()
