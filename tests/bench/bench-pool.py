#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A pool of extbodyd daemons behind HAProxy on this machine (root: network
namespaces). Not a test of speed: it reports figures.

The network of tests/pool/test-pool.c, made by tests/pool/pool-net.sh: a
bridge with 198.18.N.1 where the origin (tests/servers/httpd.py, every answer
delayed by --delay ms) and Redis (or Valkey: EXTBODY_TEST_REDIS_SERVER)
listen; three namespaces, one extbodyd each (198.18.N.11, .12, .13); and the
MTA's namespace 198.18.N.2 with HAProxy, from the shipped
filters/daemon/haproxy.cfg with the pool's addresses put in, and the clients.
For each row the daemons are started afresh (their own Redis prefix, so each
row begins with an empty shared cache) and HAProxy names only them:

  - messages per second through HAProxy: --count messages of about 5 KB,
    each with a reference to one of --urls URLs of the origin and a data:
    one, sent by extbodyc from --clients processes at once, the first start
    to the last answer;
  - each daemon's peak resident memory (VmHWM, /proc/PID/status) at the end;

for 1, 2 and 3 daemons, as ratios against the row of 1 measured in the same
run (--repeat runs per row: the median rate, the largest peak).

    sudo python3 tests/bench/bench-pool.py [--build build] [--count 600]
        [--clients 8] [--urls 30] [--delay 100] [--repeat 1]

On a machine of few cores the daemons, HAProxy, the origin and the clients
share them: more daemons then bring no more CPU, only more places to wait on
fetches. It exits 1 when a message came back unresolved.
"""
import argparse
import concurrent.futures
import ctypes
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import find_daemon, vm_hwm

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
NET = os.path.join(TOP, "tests", "pool", "pool-net.sh")
HTTPD = os.path.join(TOP, "tests", "servers", "httpd.py")
TEMPLATE = os.path.join(TOP, "filters", "daemon", "haproxy.cfg")
CLONE_NEWNET = 0x40000000

libc = ctypes.CDLL(None, use_errno=True)


def enter(path):
    """This thread (and what it starts afterwards) into the network namespace
    of the file path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, "setns %s: %s" % (path, os.strerror(e)))
    finally:
        os.close(fd)


def http_get(addr, port, path, timeout=5):
    """(status, body) of GET http://addr:port/path; (0, b"") when nothing
    answered."""
    try:
        with socket.create_connection((addr, port), timeout) as s:
            s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path.encode())
            data = b""
            while True:
                b = s.recv(65536)
                if not b:
                    break
                data += b
    except OSError:
        return 0, b""
    head, _, body = data.partition(b"\r\n\r\n")
    try:
        return int(head.split()[1]), body
    except (IndexError, ValueError):
        return 0, b""


def wait_for(what, cond, timeout=60):
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise RuntimeError("timed out waiting for " + what)
        time.sleep(0.05)


def haproxy_stat(sock):
    """show stat on HAProxy's stats socket: {(proxy, server): status}."""
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(sock)
        s.sendall(b"show stat\n")
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    except OSError:
        return {}
    finally:
        s.close()
    lines = data.decode().splitlines()
    if not lines or not lines[0].startswith("# "):
        return {}
    head = lines[0][2:].split(",")
    col = head.index("status")
    out = {}
    for line in lines[1:]:
        f = line.split(",")
        if len(f) > col:
            out[(f[0], f[1])] = f[col]
    return out


def message(i, path, addr, port):
    return ("From: a@test.example\r\nTo: b@test.example\r\nSubject: bench %d\r\n"
            "Message-ID: <bench-%d@test.example>\r\nMIME-Version: 1.0\r\n"
            "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
            "--b\r\nContent-Type: text/plain\r\n\r\n" + ("some text to make it about 5 KB long\r\n" * 120) +
            "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n"
            "\tURL=\"http://%s:%d%s\"\r\n\r\nContent-Type: text/plain\r\n\r\n"
            "--b\r\nContent-Type: message/external-body; access-type=URL; URL=\"data:,data%%20%d\"\r\n\r\n"
            "Content-Type: text/plain\r\n\r\n--b--\r\n") % (i, i, addr, port, path, i)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(TOP, "build"))
    ap.add_argument("--count", type=int, default=600, help="messages per row")
    ap.add_argument("--clients", type=int, default=8, help="extbodyc processes at once")
    ap.add_argument("--urls", type=int, default=30, help="distinct origin URLs the messages reference")
    ap.add_argument("--delay", type=int, default=100, help="ms the origin waits before each answer")
    ap.add_argument("--repeat", type=int, default=1, help="runs per row")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-pool.py: needs root (network namespaces)")
    daemon = find_daemon(a.build)
    client = os.path.join(a.build, "filters", "client", "extbodyc")
    redis_server = os.environ.get("EXTBODY_TEST_REDIS_SERVER") or "/usr/bin/redis-server"
    for p in (daemon, client, redis_server):
        if not p or not os.access(p, os.X_OK):
            sys.exit("bench-pool.py: %s is missing" % p)

    work = tempfile.mkdtemp(prefix="extbody-bench-pool-")
    prefix = "ebp%d" % os.getpid()
    subprocess.run(["sh", NET, "sweep"], check=False)
    net = int(subprocess.run(["sh", NET, "up", prefix], check=True, capture_output=True, text=True).stdout)
    bridge = "198.18.%d.1" % net
    mta = "198.18.%d.2" % net
    addrs = ["198.18.%d.%d" % (net, 11 + k) for k in range(3)]
    root_ns = os.open("/proc/self/ns/net", os.O_RDONLY)
    procs = []
    try:
        origin = subprocess.Popen([sys.executable, HTTPD, "--bind", bridge, "--lifetime", "3600"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(origin)
        origin_port = int(origin.stdout.readline().split()[1])
        s = socket.socket()
        s.bind((bridge, 0))
        redis_port = s.getsockname()[1]
        s.close()
        with open(os.path.join(work, "redis.conf"), "w") as f:
            f.write("port %d\nbind %s\nprotected-mode no\nsave \"\"\nappendonly no\ndaemonize no\n"
                    "dir %s\nlogfile %s/redis.log\n" % (redis_port, bridge, work, work))
        procs.append(subprocess.Popen([redis_server, os.path.join(work, "redis.conf")], stdout=subprocess.DEVNULL))

        enter("/run/netns/%s-mta" % prefix)   # from here on, the MTA's host
        wait_for("the origin", lambda: http_get(bridge, origin_port, "/hits")[0] == 200)
        cfg_ports = os.path.join(work, "ports.cfg")
        with open(cfg_ports, "w") as f:
            subprocess.run(["sh", NET, "haproxy-cfg", TEMPLATE, mta, work, "192.0.2.1"], stdout=f, check=True)
        fe_port, http_port, milter_port = read_ports(cfg_ports)
        sock = os.path.join(work, "haproxy.sock")

        msgs = [message(i, "/slow?ms=%d&u=%d" % (a.delay, i % a.urls), bridge, origin_port).encode()
                for i in range(a.count)]
        rows = []
        for n in (1, 2, 3):
            rates, peaks = [], [0] * n
            for r in range(a.repeat):
                tag = "r%d-%d" % (n, r)
                daemons = []
                for k in range(n):
                    conf = os.path.join(work, "d%d-%s.conf" % (k + 1, tag))
                    with open(conf, "w") as f:
                        f.write("[extbody]\nfetch = on\nallow_networks = %s/32\nmax_requests_per_host = 100000\n"
                                "redis_server = %s:%d\nredis_timeout = 1000\nredis_prefix = bench-%s:\n"
                                "http_socket = inet:%d@%s\nhttp_allow_networks = 198.18.0.0/15\n"
                                "http_max_peer_connections = 40\nmilter_socket = inet:%d@%s\n"
                                "dovecot_filter_socket =\n"
                                % (bridge, bridge, redis_port, tag, http_port, addrs[k], milter_port, addrs[k]))
                    log = open(os.path.join(work, "d%d-%s.log" % (k + 1, tag)), "w")
                    p = subprocess.Popen(["ip", "netns", "exec", "%s-h%d" % (prefix, k + 1), daemon, "-c", conf],
                                         stdout=log, stderr=log)
                    procs.append(p)
                    daemons.append(p)
                for k in range(n):
                    wait_for("d%d" % (k + 1), lambda k=k: http_get(addrs[k], http_port, "/healthz")[0] == 200)
                cfg = os.path.join(work, "haproxy-%s.cfg" % tag)
                with open(cfg, "w") as f:
                    subprocess.run(["sh", NET, "haproxy-cfg", TEMPLATE, mta, work] + addrs[:n], stdout=f, check=True)
                subprocess.run(["haproxy", "-c", "-q", "-f", cfg], check=True)
                hlog = open(os.path.join(work, "haproxy-%s.log" % tag), "w")
                haproxy = subprocess.Popen(["haproxy", "-db", "-f", cfg], stdout=hlog, stderr=hlog)
                procs.append(haproxy)
                wait_for("HAProxy", lambda: [st for (px, sv), st in haproxy_stat(sock).items()
                                             if sv.startswith("d")].count("UP") == 2 * n)

                def one(m):
                    p = subprocess.run([client, "-s", "inet:%d@%s" % (fe_port, mta), "-t", "60", "--tries", "3"],
                                       input=m, capture_output=True)
                    return p.returncode == 0 and b"\r\nX-Extbody: resolved 2 of 2 external-body" in p.stdout

                t0 = time.monotonic()
                with concurrent.futures.ThreadPoolExecutor(a.clients) as ex:
                    ok = sum(ex.map(one, msgs))
                secs = time.monotonic() - t0
                if ok != a.count:
                    print("%d daemon(s), run %d: %d of %d messages resolved" % (n, r + 1, ok, a.count),
                          file=sys.stderr)
                    sys.exit(1)
                rates.append(a.count / secs)
                for k, p in enumerate(daemons):
                    peaks[k] = max(peaks[k], vm_hwm(p.pid))
                haproxy.send_signal(signal.SIGTERM)
                haproxy.wait()
                for p in daemons:
                    p.send_signal(signal.SIGTERM)
                for p in daemons:
                    p.wait(60)
            rows.append((n, statistics.median(rates), peaks))

        base_rate, base_peak = rows[0][1], rows[0][2][0]
        print("A pool behind HAProxy on this machine (%d cores): %d messages of about 5 KB a row, each with a "
              "reference to one of %d origin URLs (answered after %d ms, then shared through %s) and a data: "
              "one, from %d extbodyc at once; the median of %d run(s) a row, daemons started afresh each run"
              % (os.cpu_count(), a.count, a.urls, a.delay, os.path.basename(redis_server), a.clients, a.repeat))
        print()
        print("%-8s %11s %8s   %s" % ("daemons", "messages/s", "vs 1", "peak RSS (VmHWM) of each daemon, vs 1"))
        for n, rate, peaks in rows:
            print("%-8d %11.1f %7.2fx   %s" % (n, rate, rate / base_rate,
                                              ", ".join("d%d %.1f MiB (%.2fx)" % (k + 1, kb / 1024, kb / base_peak)
                                                        for k, kb in enumerate(peaks))))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if libc.setns(root_ns, CLONE_NEWNET) != 0:
            print("bench-pool.py: cannot go back to the root namespace", file=sys.stderr)
        subprocess.run(["sh", NET, "down", prefix], check=False)
        subprocess.run(["rm", "-rf", work], check=False)


def read_ports(cfg):
    """The HTTP front end's port, and the daemons' HTTP and milter ports, from
    the rendered configuration (the backend in mode http, the one in mode
    tcp)."""
    sections, cur = [], None
    for line in open(cfg):
        w = line.split()
        if not w or w[0].startswith("#"):
            continue
        if w[0] in ("global", "defaults", "frontend", "backend", "listen"):
            cur = {"kind": w[0], "name": w[1] if len(w) > 1 else "", "mode": None, "bind": None,
                   "server": None, "default_backend": None}
            sections.append(cur)
        elif cur is not None and w[0] == "mode":
            cur["mode"] = w[1]
        elif cur is not None and w[0] == "bind":
            cur["bind"] = int(w[1].rsplit(":", 1)[1])
        elif cur is not None and w[0] == "server" and cur["server"] is None:
            cur["server"] = int(w[2].rsplit(":", 1)[1])
        elif cur is not None and w[0] == "default_backend":
            cur["default_backend"] = w[1]
    backends = {s["name"]: s for s in sections if s["server"]}
    http_be = next(s for s in backends.values() if s["mode"] == "http")
    milter_be = next(s for s in backends.values() if s["mode"] != "http")
    fe = next(s for s in sections if s["default_backend"] == http_be["name"] or s is http_be and s["bind"])
    return fe["bind"], http_be["server"], milter_be["server"]


if __name__ == "__main__":
    main()
