#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A loopback anonymous, read-only FTP server for extbody's fetch tests
(Debian's python3-pyftpdlib).

    /usr/bin/python3 ftpd.py ROOT [--port 0] [--log FILE] [--lifetime 120]

Serves ROOT to the anonymous user; with --log, every command received is
appended to FILE as a line ("TYPE A", "CWD pub", "RETR text.txt"), so tests
can check the exact protocol trace. Prints "PORT <n>" (or "PORT 0" when the port
asked for cannot be bound), then serves until standard input closes or
--lifetime seconds pass.
"""
import argparse
import logging
import select
import sys
import threading
import time

from pyftpdlib.authorizers import DummyAuthorizer
from pyftpdlib.handlers import FTPHandler
from pyftpdlib.servers import ThreadedFTPServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log")
    ap.add_argument("--lifetime", type=float, default=120)
    a = ap.parse_args()
    logging.basicConfig(level=logging.CRITICAL)
    auth = DummyAuthorizer()
    auth.add_anonymous(a.root, perm="elr")
    log = open(a.log, "a", buffering=1) if a.log else None

    class Handler(FTPHandler):
        def pre_process_command(self, line, cmd, arg):
            if log:
                log.write(("%s %s" % (cmd, arg)).strip() + "\n")
            return super().pre_process_command(line, cmd, arg)

    handler = Handler
    handler.authorizer = auth
    handler.passive_ports = None
    try:
        srv = ThreadedFTPServer(("127.0.0.1", a.port), handler)
    except OSError:
        print("PORT 0", flush=True)
        return
    print("PORT %d" % srv.address[1], flush=True)
    t = threading.Thread(target=srv.serve_forever, kwargs={"timeout": 0.5}, daemon=True)
    t.start()
    end = time.monotonic() + a.lifetime
    while time.monotonic() < end:
        r, _, _ = select.select([sys.stdin], [], [], 0.5)
        if r and not sys.stdin.buffer.read1(4096):
            break
    srv.close_all()


if __name__ == "__main__":
    main()
