#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Debian's leafnode, a real NNTP server, private on loopback for extbody's
fetch tests.

    /usr/bin/python3 leafnoded.py ROOT [--lifetime 120]

ROOT holds the articles as ROOT/GROUP/NUMBER (each group needs two articles
or more: leafnode shows a placeholder for a group whose first article is its
last). A leafnode tree (spool and configuration) is built in a temporary
directory; each connection runs /usr/sbin/leafnode, as inetd would, in a
mount namespace of its own where that tree is bound over /var/spool/news and
/etc/news/leafnode (leafnode's paths are compiled in): nothing of the
machine's own news system is seen or touched. This needs root (mount
namespaces) and leafnode installed: otherwise "NNTP 0" is printed. Prints
"NNTP <port>", then serves until standard input closes or --lifetime
seconds pass.
"""
import argparse
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

LEAFNODE = "/usr/sbin/leafnode"


def build_tree(root, tree):
    spool = os.path.join(tree, "spool")
    etc = os.path.join(tree, "etc")
    for d in ("leaf.node", "interesting.groups", "out.going", "failed.postings", "temp.files"):
        os.makedirs(os.path.join(spool, d))
    for i in range(1000):
        os.makedirs(os.path.join(spool, "message.id", "%03d" % i))
    os.makedirs(etc)
    with open(os.path.join(etc, "config"), "w") as f:
        # leafnode refuses names it takes for unregistered (example.*, .test):
        # this one is never looked up
        f.write("server = 127.0.0.9\nexpire = 20\nhostname = leafnode.extbody-test.org\n")
    info = []
    for group in sorted(os.listdir(root)):
        gdir = os.path.join(root, group)
        if not os.path.isdir(gdir):
            continue
        nums = sorted(int(n) for n in os.listdir(gdir) if n.isdigit())
        if not nums:
            continue
        target = os.path.join(spool, *group.split("."))
        os.makedirs(target)
        for n in nums:
            art = os.path.join(target, str(n))
            shutil.copyfile(os.path.join(gdir, str(n)), art)
            with open(art, "rb") as f:
                m = re.search(rb"^Message-ID:\s*(<[^>/]*>)", f.read(), re.M | re.I)
            if m:
                # leafnode finds a message-id under a hash of it in
                # message.id/NNN: the article is linked under every one
                mid = m.group(1).decode("latin-1")
                for i in range(1000):
                    os.link(art, os.path.join(spool, "message.id", "%03d" % i, mid))
        open(os.path.join(spool, "interesting.groups", group), "w").close()
        info.append("%s y %d %d %d test group\n" % (group, nums[-1], nums[0], int(time.time())))
    with open(os.path.join(spool, "leaf.node", "groupinfo"), "w") as f:
        f.writelines(info)
    subprocess.run(["chown", "-R", "news:news", spool], check=True)
    return spool, etc


def serve(conn, spool, etc):
    script = 'mount --bind "$1" /var/spool/news && mount --bind "$2" /etc/news/leafnode && exec "$3"'
    try:
        subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", spool, etc, LEAFNODE],
                       stdin=conn.fileno(), stdout=conn.fileno(), stderr=subprocess.DEVNULL, timeout=120)
    except Exception:
        pass
    finally:
        conn.close()


def accept_loop(sock, spool, etc):
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        threading.Thread(target=serve, args=(conn, spool, etc), daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--lifetime", type=float, default=120)
    a = ap.parse_args()
    if os.geteuid() != 0 or not os.access(LEAFNODE, os.X_OK) or not os.path.isdir("/var/spool/news") \
       or not os.path.isdir("/etc/news/leafnode"):
        print("NNTP 0", flush=True)
        return
    # the test's death (SIGTERM) still removes the tree
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    tree = tempfile.mkdtemp(prefix="extbody-leafnode-")
    try:
        spool, etc = build_tree(a.root, tree)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        print("NNTP %d" % s.getsockname()[1], flush=True)
        threading.Thread(target=accept_loop, args=(s, spool, etc), daemon=True).start()
        end = time.monotonic() + a.lifetime
        while time.monotonic() < end:
            r, _, _ = select.select([sys.stdin], [], [], 0.5)
            if r and not sys.stdin.buffer.read1(4096):
                break
    finally:
        shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    main()
