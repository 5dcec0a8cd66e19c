#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A minimal SMTP server that keeps every message it is given, for the tests'
private OpenSMTPD to relay to.

    sink.py PORT_FILE DIR

Listens on a free port of 127.0.0.1 (written to PORT_FILE once listening),
one thread per connection; each message accepted is written as a file into
DIR/new (through DIR/tmp, then renamed): the data as received, dot-unstuffed,
CRLF line ends made LF. No extension but PIPELINING and 8BITMIME; never
refuses.
"""
import os
import socket
import socketserver
import sys
import threading

counter = [0]
lock = threading.Lock()


class Handler(socketserver.StreamRequestHandler):
    def reply(self, text):
        self.wfile.write(text.encode() + b"\r\n")
        self.wfile.flush()

    def handle(self):
        self.reply("220 sink.test.example ESMTP sink")
        while True:
            line = self.rfile.readline()
            if not line:
                return
            verb = line.strip().split(b" ", 1)[0].upper()
            if verb == b"EHLO":
                self.reply("250-sink.test.example\r\n250-PIPELINING\r\n250 8BITMIME")
            elif verb in (b"HELO", b"MAIL", b"RCPT", b"RSET", b"NOOP"):
                self.reply("250 ok")
            elif verb == b"DATA":
                self.reply("354 go")
                data = []
                while True:
                    d = self.rfile.readline()
                    if not d:
                        return
                    if d in (b".\r\n", b".\n"):
                        break
                    if d.startswith(b"."):
                        d = d[1:]
                    data.append(d.replace(b"\r\n", b"\n"))
                with lock:
                    counter[0] += 1
                    n = counter[0]
                tmp = os.path.join(sys.argv[2], "tmp", "m.%d.%d" % (os.getpid(), n))
                with open(tmp, "wb") as f:
                    f.write(b"".join(data))
                os.rename(tmp, os.path.join(sys.argv[2], "new", os.path.basename(tmp)))
                self.reply("250 kept %d" % n)
            elif verb == b"QUIT":
                self.reply("221 bye")
                return
            else:
                self.reply("502 no")


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    os.makedirs(os.path.join(sys.argv[2], "new"), exist_ok=True)
    os.makedirs(os.path.join(sys.argv[2], "tmp"), exist_ok=True)
    srv = Server(("127.0.0.1", 0), Handler)
    port = srv.server_address[1]
    tmp = sys.argv[1] + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.rename(tmp, sys.argv[1])
    srv.serve_forever()


main()
