#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Pool benchmark (root: it runs private Postfix instances on 127.0.0.1).

A private redis-server (no persistence) on a free loopback port, the loopback
test HTTP server (tests/servers/httpd.py, every response delayed by --delay
ms) and, for each row, N extbodyd instances each behind its own private
Postfix (tests/postfix/pf-peer.sh). --count messages, each referencing one of
--urls distinct URLs, are sent round-robin to the Postfix instances from 8
SMTP sessions. Measured in the same run, for one instance alone, then for a
pool of 2 and 3 sharing Redis, and a pool of 3 without Redis:

  - messages per second, first SMTP connection to the last delivery;
  - messages resolved (an X-Extbody: resolved 1 of 1 field) of those delivered;
  - fetches per distinct URL (what the HTTP server counted);
  - Redis commands per message (INFO's total_commands_processed).

    python3 tests/bench/bench-redis.py [--build build] [--count 300] [--urls 30]

With --check it exits 1 unless every message was resolved and, for the pools
sharing Redis, each URL was fetched exactly once. Not a test of speed.
"""
import argparse
import os
import shutil
import smtplib
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from benchlib import doors_off, free_port

# The name said in EHLO/LHLO. smtplib would find one with socket.getfqdn() and
# gethostbyname(gethostname()): DNS queries to the machine's resolver (outside
# the machine) wherever /etc/hosts lacks the host name, as in a bare Debian
# chroot, where one in a few waited 5 s for its answer. The address literal is
# what smtplib fell back to here.
HELO = "[127.0.0.1]"

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "..", "postfix", "pf-peer.sh")


def wait_port(port, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("nothing listens on %d" % port)


def redis_cmd(port, *args):
    """One command in RESP over a socket; returns the raw reply text."""
    s = socket.create_connection(("127.0.0.1", port), 5)
    out = "*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a), a) for a in args)
    s.sendall(out.encode())
    data = b""
    s.settimeout(5)
    while True:
        chunk = s.recv(65536)
        data += chunk
        if not chunk or (data.endswith(b"\r\n") and (not data.startswith(b"$") or data.count(b"\r\n") >= 2)):
            break
    s.close()
    return data.decode(errors="replace")


def redis_commands(port):
    for line in redis_cmd(port, "INFO", "stats").splitlines():
        if line.startswith("total_commands_processed:"):
            return int(line.split(":")[1])
    return 0


def http_get(port, path):
    h = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return h.open("http://127.0.0.1:%d%s" % (port, path), timeout=10).read().decode()


def message(i, url):
    return ("From: a@test.example\r\nTo: b@test.example\r\nSubject: pool %d\r\n"
            "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n"
            "--b\r\nContent-Type: text/plain\r\n\r\nmessage %d\r\n"
            "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n"
            "\tURL=\"%s\"\r\n\r\nContent-Type: text/plain\r\n\r\n--b--\r\n" % (i, i, url))


def delivered(pfs):
    n = 0
    for pf in pfs:
        d = os.path.join(pf, "mail", "Maildir", "new")
        if os.path.isdir(d):
            n += len(os.listdir(d))
    return n


def resolved(pfs):
    n = 0
    for pf in pfs:
        d = os.path.join(pf, "mail", "Maildir", "new")
        for name in os.listdir(d) if os.path.isdir(d) else []:
            with open(os.path.join(d, name), "rb") as f:
                if b"X-Extbody: resolved 1 of 1" in f.read():
                    n += 1
    return n


def run(a, work, instances, redis_port, http_port, tag):
    milter = os.path.join(a.build, "filters", "daemon", "extbodyd")
    procs, pfs, smtp_ports = [], [], []
    try:
        for k in range(instances):
            mport = free_port()
            conf = os.path.join(work, "%s-%d.conf" % (tag, k))
            with open(conf, "w") as f:
                f.write("fetch = on\nallow_networks = 127.0.0.1/32\nmilter_umask = 000\n"
                        "max_requests_per_host = 100000\nmessage_deadline = 60\n")
                if redis_port:
                    f.write("redis_server = 127.0.0.1:%d\nredis_prefix = %s:\n" % (redis_port, tag))
            # the HTTP and Dovecot doors closed: their defaults are the system's
            procs.append(subprocess.Popen([milter, "-c", conf, "-p", "inet:%d@127.0.0.1" % mport]
                                          + doors_off(milter, conf), stderr=subprocess.DEVNULL))
            wait_port(mport)
            pf = tempfile.mkdtemp(dir=work)
            os.chmod(pf, 0o755)
            sport = free_port()
            subprocess.run(["sh", PEER, "up", pf, str(sport), "inet:127.0.0.1:%d" % mport, "accept"],
                           check=True, stdout=subprocess.DEVNULL)
            subprocess.run(["sh", PEER, "set", pf, "milter_content_timeout=120s"], check=True,
                           stdout=subprocess.DEVNULL)
            pfs.append(pf)
            smtp_ports.append(sport)
        urls = ["http://127.0.0.1:%d/slow?ms=%d&n=%s-%d" % (http_port, a.delay, tag, u) for u in range(a.urls)]
        c0 = redis_commands(redis_port) if redis_port else 0
        t0 = time.perf_counter()
        todo = list(range(a.count))
        lock = threading.Lock()

        def sender(sid):
            conns = {}
            while True:
                with lock:
                    if not todo:
                        break
                    i = todo.pop(0)
                # every URL reaches every instance: not i % n (30 URLs, 3 instances)
                port = smtp_ports[(i + i // len(urls)) % len(smtp_ports)]
                if port not in conns:
                    conns[port] = smtplib.SMTP("127.0.0.1", port, local_hostname=HELO, timeout=120)
                conns[port].sendmail("a@test.example", ["b@test.example"],
                                     message(i, urls[i % len(urls)]))
            for c in conns.values():
                c.quit()

        th = [threading.Thread(target=sender, args=(s,)) for s in range(8)]
        for t in th:
            t.start()
        for t in th:
            t.join()
        end = time.time() + 120
        while delivered(pfs) < a.count and time.time() < end:
            time.sleep(0.05)
        dt = time.perf_counter() - t0
        c1 = redis_commands(redis_port) if redis_port else 0
        counts = {}
        for line in http_get(http_port, "/counts").splitlines():
            n, target = line.split(" ", 1)
            if ("n=%s-" % tag) in target:
                counts[target] = int(n)
        return {
            "rate": a.count / dt,
            "delivered": delivered(pfs),
            "resolved": resolved(pfs),
            "fetches": sum(counts.values()),
            "max_per_url": max(counts.values()) if counts else 0,
            "redis_per_msg": (c1 - c0) / a.count if redis_port else 0.0,
        }
    finally:
        for pf in pfs:
            subprocess.run(["sh", PEER, "down", pf], stdout=subprocess.DEVNULL)
            shutil.rmtree(pf, ignore_errors=True)
        for p in procs:
            p.terminate()
            p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--urls", type=int, default=30)
    ap.add_argument("--delay", type=int, default=200, help="ms the HTTP server waits before each response")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    if os.geteuid() != 0:
        sys.exit("bench-redis.py runs private Postfix instances and needs root")
    work = tempfile.mkdtemp(prefix="extbody-bench-redis-")
    os.chmod(work, 0o755)
    rport = free_port()
    with open(os.path.join(work, "redis.conf"), "w") as f:
        f.write('port %d\nbind 127.0.0.1\nprotected-mode no\nsave ""\nappendonly no\n'
                'daemonize no\ndir %s\nlogfile ""\nloglevel warning\n' % (rport, work))
    redis = subprocess.Popen([os.environ.get("EXTBODY_TEST_REDIS_SERVER", "/usr/bin/redis-server"), os.path.join(work, "redis.conf")],
                             stdout=subprocess.DEVNULL)
    srv = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "servers", "httpd.py"),
                            "--lifetime", "3600"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    hport = int(srv.stdout.readline().split()[1])
    ok = True
    try:
        wait_port(rport)
        rows = [("one instance", 1, False), ("pool of 2, Redis", 2, True),
                ("pool of 3, Redis", 3, True), ("pool of 3, no Redis", 3, False)]
        print("%d messages, %d distinct URLs (server delay %d ms), 8 SMTP sessions round-robin:" %
              (a.count, a.urls, a.delay))
        print("  %-22s %8s %10s %9s %12s %14s" % ("", "msg/s", "resolved", "fetches", "per URL max",
                                                  "Redis cmd/msg"))
        for name, n, shared in rows:
            tag = "r%d%s" % (n, "s" if shared else "l")
            r = run(a, work, n, rport if shared else None, hport, tag)
            print("  %-22s %8.1f %6d/%-4d %9d %12d %14.2f" % (name, r["rate"], r["resolved"], r["delivered"],
                                                           r["fetches"], r["max_per_url"], r["redis_per_msg"]))
            if r["resolved"] != a.count or (shared and r["fetches"] != a.urls):
                ok = False
            time.sleep(1)
    finally:
        srv.stdin.close()
        srv.wait()
        redis.kill()
        redis.wait()
        shutil.rmtree(work, ignore_errors=True)
    if a.check and not ok:
        print("check failed: not every message resolved, or a URL fetched more than once in a pool sharing Redis")
        sys.exit(1)


if __name__ == "__main__":
    main()
