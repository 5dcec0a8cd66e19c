#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Deliver one message into an mbox the way a delivery agent does: take the
dot-lock (FILE.lock, O_EXCL, waiting while someone else holds it), then open
the file, take an fcntl lock, append, unlock, remove the dot-lock.

    deliver.py MBOX MESSAGE-ID
"""
import fcntl
import os
import sys
import time

path, mid = sys.argv[1], sys.argv[2]
lock = path + ".lock"
end = time.time() + 60
while True:
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"%d\n" % os.getpid())
        os.close(fd)
        break
    except FileExistsError:
        if time.time() > end:
            sys.exit("lock timeout")
        time.sleep(0.05)
try:
    with open(path, "ab") as f:
        fcntl.lockf(f, fcntl.LOCK_EX)
        f.write(b"From delivered@test.example Sat Nov 21 12:00:00 2026\n"
                b"From: delivered@test.example\nMessage-ID: " + mid.encode() + b"\n"
                b"Subject: delivered during the run\n\nhello\n\n")
        f.flush()
        os.fsync(f.fileno())
        fcntl.lockf(f, fcntl.LOCK_UN)
finally:
    os.unlink(lock)
