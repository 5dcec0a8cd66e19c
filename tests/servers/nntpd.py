#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A loopback NNTP server for extbody's fetch tests (RFC 3977, the commands a
reader of one article needs), good and hostile.

    /usr/bin/python3 nntpd.py ROOT [--log FILE] [--lifetime 120]

Articles are the files ROOT/GROUP/NUMBER (their Message-ID field names them
for ARTICLE <message-id>). Prints "NNTP <port>" (a server that greets with
200) and "BUSY <port>" (one that greets with 502 and closes), then serves
until standard input closes or --lifetime seconds pass. With --log, every
command line received is appended to FILE.

The groups hostile.* misbehave on ARTICLE 1: hostile.longline (a line of
100000 bytes), hostile.noterm (the article without its "." line, then the
connection closed), hostile.slow (a line a second for a minute),
hostile.huge (3 MB of lines), hostile.garbage (a status line that is none),
hostile.stuffed (lines that begin with dots, stuffed as RFC 3977 says).
"""
import argparse
import os
import re
import select
import socket
import sys
import threading
import time


def stuffed(data):
    out = []
    for line in data.split(b"\n"):
        line = line.rstrip(b"\r")
        out.append((b"." + line if line.startswith(b".") else line) + b"\r\n")
    if data.endswith(b"\n"):
        out.pop()
    return b"".join(out) + b".\r\n"


def find_id(root, mid):
    for group in sorted(os.listdir(root)):
        gdir = os.path.join(root, group)
        if not os.path.isdir(gdir):
            continue
        for name in sorted(os.listdir(gdir)):
            with open(os.path.join(gdir, name), "rb") as f:
                data = f.read()
            m = re.search(rb"^Message-ID:\s*(<[^>]*>)", data, re.M | re.I)
            if m and m.group(1) == mid:
                return data
    return None


def hostile(conn, group):
    if group == b"hostile.longline":
        conn.sendall(b"220 1 <l@x>\r\nSubject: x\r\n\r\n" + b"y" * 100000 + b"\r\n.\r\n")
    elif group == b"hostile.noterm":
        conn.sendall(b"220 1 <n@x>\r\nSubject: x\r\n\r\nno end\r\n")
        return False
    elif group == b"hostile.slow":
        conn.sendall(b"220 1 <s@x>\r\n")
        for _ in range(60):
            conn.sendall(b"line\r\n")
            time.sleep(1)
    elif group == b"hostile.huge":
        conn.sendall(b"220 1 <h@x>\r\nSubject: x\r\n\r\n")
        line = b"z" * 998 + b"\r\n"
        for _ in range(3000):
            conn.sendall(line)
        conn.sendall(b".\r\n")
    elif group == b"hostile.garbage":
        conn.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
    elif group == b"hostile.stuffed":
        conn.sendall(b"220 1 <d@x>\r\n" + stuffed(b"Subject: dots\n\n.\n..\n.x\nend\n"))
    return True


def serve(conn, root, log, greeting):
    f = conn.makefile("rb")
    group = None
    try:
        conn.sendall(greeting)
        if greeting.startswith(b"5"):
            return
        for raw in f:
            line = raw.rstrip(b"\r\n")
            if log:
                log.write(line.decode("latin-1") + "\n")
            words = line.split(b" ", 1)
            cmd = words[0].upper()
            arg = words[1] if len(words) > 1 else b""
            if cmd == b"QUIT":
                conn.sendall(b"205 bye\r\n")
                return
            if cmd == b"GROUP":
                if arg.startswith(b"hostile."):
                    group = arg
                    conn.sendall(b"211 1 1 1 " + arg + b"\r\n")
                    continue
                gdir = os.path.join(root, arg.decode("latin-1"))
                if b"/" in arg or b".." in arg or not os.path.isdir(gdir):
                    conn.sendall(b"411 no such group\r\n")
                    continue
                group = arg
                nums = sorted(int(n) for n in os.listdir(gdir) if n.isdigit())
                lo, hi = (nums[0], nums[-1]) if nums else (0, 0)
                conn.sendall(b"211 %d %d %d %s\r\n" % (len(nums), lo, hi, arg))
            elif cmd == b"ARTICLE":
                data = None
                if arg.startswith(b"<"):
                    data = find_id(root, arg)
                    if data is None:
                        conn.sendall(b"430 no such article\r\n")
                        continue
                    conn.sendall(b"220 0 " + arg + b"\r\n")
                else:
                    if group is None:
                        conn.sendall(b"412 no group selected\r\n")
                        continue
                    if group.startswith(b"hostile."):
                        if not hostile(conn, group):
                            return
                        continue
                    path = os.path.join(root, group.decode("latin-1"), arg.decode("latin-1"))
                    if not arg.isdigit() or not os.path.isfile(path):
                        conn.sendall(b"423 no such article number\r\n")
                        continue
                    with open(path, "rb") as fh:
                        data = fh.read()
                    conn.sendall(b"220 " + arg + b" <x@x>\r\n")
                conn.sendall(stuffed(data))
            else:
                conn.sendall(b"500 unknown command\r\n")
    except OSError:
        pass
    finally:
        conn.close()


def listener():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    return s


def accept_loop(sock, root, log, greeting):
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        threading.Thread(target=serve, args=(conn, root, log, greeting), daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--log")
    ap.add_argument("--lifetime", type=float, default=120)
    a = ap.parse_args()
    log = open(a.log, "a", buffering=1) if a.log else None
    good, busy = listener(), listener()
    print("NNTP %d" % good.getsockname()[1], flush=True)
    print("BUSY %d" % busy.getsockname()[1], flush=True)
    threading.Thread(target=accept_loop, args=(good, a.root, log, b"200 test server ready\r\n"),
                     daemon=True).start()
    threading.Thread(target=accept_loop, args=(busy, a.root, log, b"502 go away\r\n"),
                     daemon=True).start()
    end = time.monotonic() + a.lifetime
    while time.monotonic() < end:
        r, _, _ = select.select([sys.stdin], [], [], 0.5)
        if r and not sys.stdin.buffer.read1(4096):
            break


if __name__ == "__main__":
    main()
