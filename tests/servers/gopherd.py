#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A loopback gopher server for extbody's fetch tests: Debian's gophernicus,
run once per connection as inetd would run it, and a second port whose
answers misbehave on purpose.

    /usr/bin/python3 gopherd.py ROOT [--lifetime 120]

Prints "GOPHER <port>" (gophernicus serving ROOT; "GOPHER 0" when
/usr/sbin/gophernicus is missing) and "RAW <port>" (the selectors below,
answered by this script), then serves until standard input closes or
--lifetime seconds pass. gophernicus refuses to run as root: as root, each
one runs as nobody, so ROOT must be readable by all.

RAW selectors (the first line the client sends, without CR LF):
  /dot        a text item ended by "." on a line of its own (RFC 1436)
  /error      an error item (a one-line menu of type 3) instead of a document
  /big?N      N bytes of "x", no terminator, then close
  /slow       one byte every second, for a minute
  anything else: "raw:" and the selector
"""
import argparse
import os
import pwd
import select
import socket
import subprocess
import sys
import threading
import time

GOPHERNICUS = "/usr/sbin/gophernicus"


def listener():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    return s


def drop_root():
    if os.getuid() == 0:
        pw = pwd.getpwnam("nobody")
        os.setgroups([])
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)


def serve_gophernicus(conn, root, port):
    try:
        subprocess.run([GOPHERNICUS, "-h", "127.0.0.1", "-p", str(port), "-r", root, "-nv"],
                       stdin=conn.fileno(), stdout=conn.fileno(), stderr=subprocess.DEVNULL,
                       preexec_fn=drop_root, timeout=120)
    except Exception:
        pass
    finally:
        conn.close()


def read_selector(conn):
    data = b""
    conn.settimeout(10)
    while b"\n" not in data and len(data) < 4096:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.split(b"\n")[0].rstrip(b"\r")


def serve_raw(conn):
    try:
        sel = read_selector(conn)
        if sel == b"/dot":
            conn.sendall(b"first line\r\n..stuffed\r\nlast line\r\n.\r\n")
        elif sel == b"/error":
            conn.sendall(b"3'/error' does not exist (no handler found)\t\terror.host\t1\r\n.\r\n")
        elif sel.startswith(b"/big?"):
            n = int(sel[5:])
            block = b"x" * 65536
            while n > 0:
                conn.sendall(block[:min(n, len(block))])
                n -= min(n, len(block))
        elif sel == b"/slow":
            for _ in range(60):
                conn.sendall(b"x")
                time.sleep(1)
        else:
            conn.sendall(b"raw:" + sel)
    except OSError:
        pass
    finally:
        conn.close()


def accept_loop(sock, handler):
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        threading.Thread(target=handler, args=(conn,), daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--lifetime", type=float, default=120)
    a = ap.parse_args()
    g = listener()
    r = listener()
    gport = g.getsockname()[1] if os.access(GOPHERNICUS, os.X_OK) else 0
    print("GOPHER %d" % gport, flush=True)
    print("RAW %d" % r.getsockname()[1], flush=True)
    threading.Thread(target=accept_loop,
                     args=(g, lambda c: serve_gophernicus(c, a.root, gport)), daemon=True).start()
    threading.Thread(target=accept_loop, args=(r, serve_raw), daemon=True).start()
    end = time.monotonic() + a.lifetime
    while time.monotonic() < end:
        rd, _, _ = select.select([sys.stdin], [], [], 0.5)
        if rd and not sys.stdin.buffer.read1(4096):
            break


if __name__ == "__main__":
    main()
