#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Loopback HTTP and FTP servers that misbehave at the protocol level, for
extbody's hostile fetch suite (tests/hostile/test-hostile-fetch.c). Raw
sockets, standard library only: the faults are below what an HTTP library
would let a server do.

    python3 faultd.py [--lifetime 300]

Prints "HTTP <port>", "FTP <port>" and "CLOSED <port>" (a port nothing
listens on), then serves until standard input closes or --lifetime seconds
pass (a test that dies cannot leave it running).

HTTP: the request path is the behaviour (see HTTP_FAULTS below).
FTP: the first path segment, the first CWD, is the behaviour (see FTP_FAULTS);
the file is always "f.txt" and holds FTP_BODY.
"""
import argparse
import select
import socket
import struct
import sys
import threading
import time

BODY = b"hello from the fault server\n"
FTP_BODY = b"hello from the fault ftp server\n"
STALL = 30.0


def reset(conn):
    """Close with a TCP RST instead of a FIN."""
    try:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    conn.close()


def stall(conn, port=None):
    """Hold the connection open, saying nothing, until the client goes."""
    conn.settimeout(STALL)
    try:
        while conn.recv(4096):
            pass
    except OSError:
        pass


def head(status="200 OK", ctype="text/plain", length=None, extra=b""):
    h = b"HTTP/1.1 " + status.encode() + b"\r\n"
    if ctype is not None:
        h += b"Content-Type: " + ctype.encode() + b"\r\n"
    if length is not None:
        h += b"Content-Length: " + str(length).encode() + b"\r\n"
    return h + extra + b"Connection: close\r\n\r\n"


def endless(conn, piece, pause=0.0):
    try:
        while True:
            conn.sendall(piece)
            if pause:
                time.sleep(pause)
    except OSError:
        pass


# Each takes the connection and the server's own port.
HTTP_FAULTS = {
    # the connection ends early
    "/close-before-status": lambda c, p: None,
    "/close-mid-status": lambda c, p: c.sendall(b"HTTP/1.1 20"),
    "/close-mid-headers": lambda c, p: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Ty"),
    "/reset-before-status": lambda c, p: reset(c),
    "/reset-mid-body": lambda c, p: (c.sendall(head(length=100000) + b"x" * 1000), time.sleep(0.1), reset(c)),
    "/short-body": lambda c, p: c.sendall(head(length=100) + b"0123456789"),
    # the connection stays open and nothing (or too little) comes
    "/stall-before-status": stall,
    "/stall-mid-headers": lambda c, p: (c.sendall(b"HTTP/1.1 200 OK\r\n"), stall(c, p)),
    "/stall-mid-body": lambda c, p: (c.sendall(head(length=1000) + b"0123456789"), stall(c, p)),
    "/trickle": lambda c, p: (c.sendall(head(length=90000)), endless(c, b"x", 0.2)),
    # the reply is not HTTP, or not well-formed HTTP
    "/not-http": lambda c, p: c.sendall(b"SSH-2.0-OpenSSH_9.2\r\n"),
    "/http09": lambda c, p: c.sendall(b"hello without a status line\n"),
    "/status-999": lambda c, p: c.sendall(head("999 What") + BODY),
    "/nul-in-header": lambda c, p: c.sendall(b"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Type: text/plain\r\n"
                                             b"Content-Length: 28\r\nConnection: close\r\n\r\n" + BODY),
    "/header-without-colon": lambda c, p: c.sendall(b"HTTP/1.1 200 OK\r\nno colon here\r\n"
                                                    b"Content-Length: 28\r\nConnection: close\r\n\r\n" + BODY),
    "/content-length-negative": lambda c, p: c.sendall(head(length=-1) + BODY),
    "/content-length-huge": lambda c, p: c.sendall(head(length="9" * 30) + BODY),
    "/content-length-twice": lambda c, p: c.sendall(head(length=28, extra=b"Content-Length: 5\r\n") + BODY),
    "/content-length-announces-gigabytes": lambda c, p: c.sendall(head(length=8 << 30) + BODY),
    # chunked transfer coding gone wrong
    "/chunk-size-garbage": lambda c, p: c.sendall(head(extra=b"Transfer-Encoding: chunked\r\n") + b"zz\r\nhello\r\n0\r\n\r\n"),
    "/chunk-size-huge": lambda c, p: c.sendall(head(extra=b"Transfer-Encoding: chunked\r\n") + b"f" * 40 + b"\r\nhello\r\n"),
    "/chunked-unterminated": lambda c, p: c.sendall(head(extra=b"Transfer-Encoding: chunked\r\n") + b"5\r\nhello\r\n"),
    "/chunked-endless": lambda c, p: (c.sendall(head(extra=b"Transfer-Encoding: chunked\r\n")),
                                      endless(c, b"400\r\n" + b"x" * 1024 + b"\r\n")),
    "/transfer-encoding-unknown": lambda c, p: c.sendall(head(extra=b"Transfer-Encoding: rot13, chunked\r\n")
                                                         + b"5\r\nhello\r\n0\r\n\r\n"),
    # headers without end
    "/header-line-endless": lambda c, p: (c.sendall(b"HTTP/1.1 200 OK\r\nX-Long: "), endless(c, b"a" * 4096)),
    "/headers-endless": lambda c, p: (c.sendall(b"HTTP/1.1 200 OK\r\n"), endless(c, b"X-More: yes\r\n")),
    "/continue-endless": lambda c, p: endless(c, b"HTTP/1.1 100 Continue\r\n\r\n"),
    # content the client did not ask for
    "/content-encoding-gzip": lambda c, p: c.sendall(head(length=len(GZIP_BODY), extra=b"Content-Encoding: gzip\r\n") + GZIP_BODY),
    "/content-type-wrong": lambda c, p: c.sendall(head(ctype="image/png", length=len(BODY)) + BODY),
    "/content-type-garbage": lambda c, p: c.sendall(head(ctype=";;;/\x01", length=len(BODY)) + BODY),
    # redirects gone wrong
    "/redirect-without-location": lambda c, p: c.sendall(head("302 Found", length=0)),
    "/redirect-empty-location": lambda c, p: c.sendall(head("302 Found", length=0, extra=b"Location: \r\n")),
    "/redirect-to-itself": lambda c, p: c.sendall(head("301 Moved", length=0, extra=b"Location: /redirect-to-itself\r\n")),
    "/redirect-to-loopback-alias": lambda c, p: c.sendall(head("302 Found", length=0,
                                                               extra=b"Location: http://127.0.0.2:%d/ok\r\n" % p)),
    "/redirect-to-metadata": lambda c, p: c.sendall(head("302 Found", length=0,
                                                         extra=b"Location: http://169.254.169.254/latest/meta-data/\r\n")),
    "/redirect-to-data": lambda c, p: c.sendall(head("302 Found", length=0, extra=b"Location: data:,x\r\n")),
    "/redirect-to-gopher": lambda c, p: c.sendall(head("302 Found", length=0,
                                                       extra=b"Location: gopher://127.0.0.1:%d/\r\n" % p)),
    "/redirect-with-credentials": lambda c, p: c.sendall(head("302 Found", length=0,
                                                              extra=b"Location: http://u:p@127.0.0.1:%d/ok\r\n" % p)),
    "/redirect-location-garbage": lambda c, p: c.sendall(head("302 Found", length=0, extra=b"Location: http://[::1\r\n")),
    "/ok": lambda c, p: c.sendall(head(length=len(BODY)) + BODY),
    # success statuses that do not carry the whole body
    "/status-204": lambda c, p: c.sendall(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"),
    "/status-203": lambda c, p: c.sendall(head("203 Non-Authoritative Information", length=len(BODY)) + BODY),
    "/partial-206": lambda c, p: c.sendall(head("206 Partial Content", length=10,
                                                extra=b"Content-Range: bytes 0-9/1000\r\n") + b"0123456789"),
    # a transfer coding the client did not ask for (it sent no TE field)
    "/transfer-encoding-gzip": lambda c, p: c.sendall(head(extra=b"Transfer-Encoding: gzip, chunked\r\n")
                                                      + b"%x\r\n" % len(GZIP_BODY) + GZIP_BODY + b"\r\n0\r\n\r\n"),
}

# gzip of BODY, made once at start
GZIP_BODY = b""


def http_client(conn, port):
    try:
        conn.settimeout(10)
        req = b""
        while b"\r\n\r\n" not in req and len(req) < 65536:
            d = conn.recv(4096)
            if not d:
                return
            req += d
            if not req[:1].isalpha():
                break
        if not req[:1].isalpha():
            # not HTTP at all (a TLS hello, say): what a web server answers
            conn.sendall(head("400 Bad Request", length=0))
            return
        path = req.split(b" ", 2)[1].decode("latin-1", "replace") if req.count(b" ") >= 2 else ""
        fault = HTTP_FAULTS.get(path)
        if fault:
            fault(conn, port)
        else:
            conn.sendall(head("404 Not Found", length=0))
    except OSError:
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass


# ---- FTP ----
def ftp_client(conn, port):
    """A small FTP server (anonymous login, EPSV/PASV, SIZE, RETR) whose first
    CWD chooses the fault."""
    f = conn.makefile("rb")
    fault = None
    data_listener = None

    def say(line):
        conn.sendall(line.encode() + b"\r\n")

    def open_data():
        nonlocal data_listener
        data_listener = socket.socket()
        data_listener.bind(("127.0.0.1", 0))
        data_listener.listen(1)
        data_listener.settimeout(10)
        return data_listener.getsockname()[1]

    try:
        conn.settimeout(10)
        say("220 fault ftp server")
        while True:
            line = f.readline()
            if not line:
                return
            words = line.decode("latin-1").strip().split(" ", 1)
            cmd, arg = words[0].upper(), (words[1] if len(words) > 1 else "")
            if cmd == "USER":
                say("331 password please")
            elif cmd == "PASS":
                say("230 logged in")
            elif cmd == "PWD":
                say('257 "/" is the current directory')
            elif cmd == "CWD":
                if fault is None:
                    fault = arg
                if fault == "close-after-cwd":
                    return
                if fault == "garbage-after-cwd":
                    conn.sendall(b"this is not an ftp reply\r\n")
                    continue
                if fault == "reply-endless":
                    conn.sendall(b"250-")
                    endless(conn, b"more and more\r\n")
                    return
                if fault == "missing-directory":
                    say("550 no such directory")
                    continue
                say("250 ok")
            elif cmd == "EPSV":
                if fault == "pasv-to-metadata":
                    say("500 no EPSV here")      # so the client asks PASV
                else:
                    say("229 Entering Extended Passive Mode (|||%d|)" % open_data())
            elif cmd == "PASV":
                p = open_data()
                # a PASV reply naming the cloud metadata address: the data
                # connection must still go where the control connection went
                say("227 Entering Passive Mode (169,254,169,254,%d,%d)" % (p >> 8, p & 255))
            elif cmd == "TYPE":
                say("200 type set")
            elif cmd == "SIZE":
                if fault == "size-huge":
                    say("213 99999999999")
                elif fault == "size-garbage":
                    say("213 lots")
                elif fault == "size-small":
                    say("213 5")
                elif fault == "size-10-sends-2mib":
                    say("213 10")
                elif fault == "announce-in-150":
                    say("502 SIZE not implemented")
                elif fault == "data-over-limit":
                    say("502 SIZE not implemented")
                else:
                    say("213 %d" % len(FTP_BODY))
            elif cmd == "MDTM":
                say("502 not implemented")
            elif cmd == "RETR":
                if fault == "missing-file":
                    say("550 no such file")
                    continue
                if fault == "stall-after-150":
                    say("150 here it comes")
                    stall(conn)
                    return
                if fault == "announce-in-150":
                    say("150 Opening BINARY mode data connection for f.txt (10 bytes)")
                else:
                    say("150 here it comes")
                d, _ = data_listener.accept()
                if fault == "data-reset":
                    d.sendall(FTP_BODY[:10])
                    time.sleep(0.1)
                    reset(d)
                    say("426 connection closed; transfer aborted")
                    continue
                if fault == "data-over-limit":
                    d.sendall(b"y" * 200000)
                elif fault in ("size-small", "announce-in-150"):
                    d.sendall(b"hello and then much more")
                elif fault == "size-10-sends-2mib":
                    try:
                        d.sendall(b"z" * (2 << 20))
                    except OSError:
                        pass
                elif fault == "data-stall":
                    d.sendall(FTP_BODY[:10])
                    stall(d)
                    return
                else:
                    d.sendall(FTP_BODY)
                d.close()
                if fault == "no-226":
                    stall(conn)
                    return
                say("226 done")
            elif cmd == "QUIT":
                say("221 bye")
                return
            else:
                say("502 not implemented")
    except OSError:
        pass
    finally:
        if data_listener:
            data_listener.close()
        try:
            conn.close()
        except OSError:
            pass


FTP_FAULTS = ["ok", "size-small", "size-10-sends-2mib", "announce-in-150", "close-after-cwd", "garbage-after-cwd", "reply-endless", "missing-directory",
              "missing-file", "pasv-to-metadata", "size-huge", "size-garbage", "stall-after-150",
              "data-reset", "data-over-limit", "data-stall", "no-226"]


def serve(listener, handler):
    port = listener.getsockname()[1]
    while True:
        try:
            c, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=handler, args=(c, port), daemon=True).start()


def main():
    global GZIP_BODY
    import gzip
    GZIP_BODY = gzip.compress(BODY, mtime=0)
    ap = argparse.ArgumentParser()
    ap.add_argument("--lifetime", type=float, default=300)
    a = ap.parse_args()
    ports = {}
    for name, handler in (("HTTP", http_client), ("FTP", ftp_client)):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        s.listen(128)
        ports[name] = s.getsockname()[1]
        threading.Thread(target=serve, args=(s, handler), daemon=True).start()
    # a port with nothing behind it: bound, never listened on, so connections are refused
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    print("HTTP %d" % ports["HTTP"])
    print("FTP %d" % ports["FTP"])
    print("CLOSED %d" % closed.getsockname()[1], flush=True)
    end = time.monotonic() + a.lifetime
    while time.monotonic() < end:
        r, _, _ = select.select([sys.stdin], [], [], 0.5)
        if r and not sys.stdin.buffer.read1(4096):
            break


if __name__ == "__main__":
    main()
