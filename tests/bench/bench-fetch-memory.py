#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Peak memory of one message whose fetches run together (issue 25, item 3).

A private nginx on 127.0.0.1 serves 32 text files of --size bytes (3.5 MiB by
default). A message with N references to them (N = --counts, 2,16,32) is
rewritten by

  - `extbody rewrite --fetch` (peak RSS from wait4, and the same message
    without --fetch for the baseline);
  - extbodyd, --parallel sessions sending such a message at once
    through the milter protocol (a small client here: miltertest crashes
    receiving a replaced body over about 1 KB), each with URLs of its own
    unless --same-urls, so that none shares another's bodies through the
    cache; VmHWM of a fresh daemon per row, which counts the pages of the
    spill files it sends new bodies from, and its peak RssAnon (sampled every
    5 ms), its own memory; the same for a daemon that received no message.

under max_part_bytes / max_message_bytes (--limits, 4M,8M by default); the
references resolved and the requests nginx answered are shown too. --chunked:
nginx sends the bodies chunked (its SSI filter on), so their size is unknown
until the end. --build-before: the same rows with an older build, for a
before/after table.

    python3 tests/bench/bench-fetch-memory.py [--build build] [--build-before DIR]
        [--counts 2,16,32] [--size 3670016] [--limits 4M,8M] [--chunked]
        [--parallel 4] [--same-urls] [--no-milter]

Not a test (tests/integration/test-fetch-memory.c is): nothing is asserted.
"""
import argparse
import concurrent.futures
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

from benchlib import free_port

HERE = os.path.dirname(os.path.abspath(__file__))


class Nginx:
    def __init__(self, work, root, chunked):
        self.dir = os.path.join(work, "nginx")
        os.makedirs(self.dir)
        self.port = free_port()
        d = self.dir
        loc = "ssi on; ssi_types *;" if chunked else ""
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""daemon off; master_process off; worker_processes 1; pid {d}/nginx.pid;
error_log {d}/error.log warn; events {{ worker_connections 256; }}
http {{ access_log {d}/access.log; types {{ }} default_type text/plain;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  server {{ listen 127.0.0.1:{self.port}; root {root}; location / {{ {loc} }} }} }}
""")
        self.proc = subprocess.Popen(["/usr/sbin/nginx", "-p", d, "-c", conf, "-e", d + "/error.log"])
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.025)
        raise RuntimeError("nginx did not start")

    def requests(self):
        """Requests answered since the last call."""
        log = os.path.join(self.dir, "access.log")
        n = 0
        if os.path.exists(log):
            with open(log) as f:
                n = sum(1 for _ in f)
            os.unlink(log)
            subprocess.run(["kill", "-USR1", str(self.proc.pid)])
            time.sleep(0.2)
        return n

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def message(port, n, eol="\n", session=0):
    parts = "".join(
        '--b{e}Content-Type: message/external-body; access-type=URL;{e}'
        ' URL="http://127.0.0.1:{p}/f{f:02d}.txt?i={i}&s={s}"{e}{e}Content-Type: text/plain{e}{e}'
        .format(e=eol, p=port, f=i % 32, i=i, s=session) for i in range(n))
    return ("--b{e}Content-Type: text/plain{e}{e}before{e}".format(e=eol) + parts + "--b--" + eol)


def rewrite_peak(extbody, conf, limits, msg_file, fetch):
    part, whole = limits
    cmd = [extbody, "rewrite", "-c", conf, "-o", "max_part_bytes=" + part, "-o", "max_message_bytes=" + whole,
           "--allow-network", "127.0.0.1/32", "--report"] + (["--fetch"] if fetch else [])
    with open(msg_file, "rb") as i, open(os.devnull, "wb") as o, tempfile.TemporaryFile() as e:
        pid = os.fork()
        if pid == 0:
            os.dup2(i.fileno(), 0)
            os.dup2(o.fileno(), 1)
            os.dup2(e.fileno(), 2)
            os.execv(extbody, cmd)
        _, status, ru = os.wait4(pid, 0)
        e.seek(0)
        report = e.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("extbody rewrite failed: " + report)
    resolved = [ln.split(":")[1].split()[-1] for ln in report.splitlines() if ": resolved (" in ln]
    return ru.ru_maxrss, resolved


# A milter client (the protocol as libmilter speaks it, version 6): the steps a
# message goes through, each reply awaited unless the filter asked for none;
# the modifications at the end of the message are read and dropped.
NO_STEP = {b"C": 0x1, b"M": 0x4, b"R": 0x8, b"B": 0x10, b"L": 0x20, b"N": 0x40}
NO_REPLY = {b"C": 0x1000, b"M": 0x4000, b"R": 0x8000, b"B": 0x80000, b"L": 0x80, b"N": 0x40000}


def milter_send(sock_path, body):
    """Send one message through the milter at @sock_path; returns its final reply."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    f = s.makefile("rb")

    def put(cmd, data=b""):
        s.sendall(struct.pack(">I", len(data) + 1) + cmd + data)

    def get():
        n = struct.unpack(">I", f.read(4))[0]
        pkt = f.read(n)
        return pkt[:1], pkt[1:]

    put(b"O", struct.pack(">III", 6, 0x1FF, 0x1FFFFF))
    _, data = get()
    proto = struct.unpack(">III", data[:12])[2]

    def step(cmd, data=b""):
        if proto & NO_STEP.get(cmd, 0):
            return
        put(cmd, data)
        if not proto & NO_REPLY.get(cmd, 0):
            get()

    step(b"C", b"localhost\0" + b"4" + struct.pack(">H", 25) + b"127.0.0.1\0")
    put(b"D", b"M" + b"i\0" + b"4BENCH\0")
    step(b"M", b"<a@test.example>\0")
    step(b"R", b"<b@test.example>\0")
    for name, value in (("From", "a@test.example"), ("MIME-Version", "1.0"),
                        ("Content-Type", "multipart/mixed; boundary=b")):
        step(b"L", name.encode() + b"\0" + value.encode() + b"\0")
    step(b"N")
    for at in range(0, len(body), 65535):
        step(b"B", body[at:at + 65535])
    put(b"E")
    while True:
        cmd, _ = get()
        if cmd in (b"a", b"c", b"t", b"r", b"d", b"y"):
            break
    put(b"Q")
    s.close()
    return cmd.decode()


def status_kib(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class AnonPeak:
    """The largest RssAnon of @pid seen, sampled every 5 ms: the daemon's own
    memory, without the file pages of the spill files it sends from (which
    VmHWM counts)."""

    def __init__(self, pid):
        self.pid, self.peak, self.stop = pid, 0, False
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        while not self.stop:
            self.peak = max(self.peak, status_kib(self.pid, "RssAnon"))
            time.sleep(0.005)

    def end(self):
        self.stop = True
        self.thread.join()
        return self.peak


def milter_peak(milter, conf, limits, work, body_files, parallel):
    """VmHWM and the peak RssAnon (KiB) of a fresh extbodyd over
    @parallel sessions (0: none), and the parts resolved in any of them."""
    part, whole = limits
    sock = os.path.join(work, "m.sock")
    if os.path.exists(sock):
        os.unlink(sock)
    log = open(os.path.join(work, "milter.log"), "w+")
    proc = subprocess.Popen([milter, "-p", "unix:" + sock, "-c", conf, "-o", "max_part_bytes=" + part,
                             "-o", "max_message_bytes=" + whole, "-o", "fetch=on",
                             "--allow-network", "127.0.0.1/32"], stderr=log)
    try:
        for _ in range(250):
            if os.path.exists(sock):
                break
            time.sleep(0.02)
        bodies = []
        for k in range(parallel):
            with open(body_files[k % len(body_files)], "rb") as f:
                bodies.append(f.read())
        anon = AnonPeak(proc.pid)
        with concurrent.futures.ThreadPoolExecutor(max(parallel, 1)) as pool:
            replies = list(pool.map(lambda b: milter_send(sock, b), bodies))
        anon_peak = anon.end()
        if any(r != "a" and r != "c" for r in replies):
            raise RuntimeError("extbodyd answered %s" % replies)
        peak = status_kib(proc.pid, "VmHWM")
    finally:
        proc.terminate()
        proc.wait()
    log.seek(0)
    resolved = sorted({ln.split(" part=")[1].split()[0] for ln in log if " outcome=resolved" in ln}, key=int)
    log.close()
    return peak, anon_peak, resolved


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--build-before", help="an older build directory, measured the same way")
    ap.add_argument("--counts", default="2,16,32")
    ap.add_argument("--size", type=int, default=3584 * 1024)
    ap.add_argument("--limits", default="4M,8M", help="max_part_bytes,max_message_bytes")
    ap.add_argument("--chunked", action="store_true")
    ap.add_argument("--parallel", type=int, default=4, help="milter sessions at once")
    ap.add_argument("--same-urls", action="store_true",
                    help="the milter sessions send one message (else each its own URLs)")
    ap.add_argument("--no-milter", action="store_true")
    a = ap.parse_args()
    counts = [int(x) for x in a.counts.split(",")]
    limits = a.limits.split(",")
    work = tempfile.mkdtemp(prefix="extbody-bench-fetch-memory-")
    os.chmod(work, 0o755)
    root = os.path.join(work, "root")
    os.makedirs(root)
    for i in range(32):
        line = b"body-%02d " % i + b"x" * 69 + b"\n"
        with open(os.path.join(root, "f%02d.txt" % i), "wb") as f:
            f.write((line * (a.size // len(line) + 1))[:a.size])
    conf = os.path.join(work, "empty.conf")
    open(conf, "w").close()
    nginx = Nginx(work, root, a.chunked)
    builds = [("after", os.path.abspath(a.build))]
    if a.build_before:
        builds.insert(0, ("before", os.path.abspath(a.build_before)))
    milter_ok = not a.no_milter
    try:
        print("%d references at most of %d bytes each, max_part_bytes %s, max_message_bytes %s%s"
              % (max(counts), a.size, limits[0], limits[1], ", chunked" if a.chunked else ""))
        print("%-7s %5s %12s %12s %8s %9s  %s" % ("build", "refs", "rss KiB", "no-fetch", "growth",
                                                 "requests", "resolved"))
        for name, build in builds:
            extbody = os.path.join(build, "src", "extbody")
            first = None
            for n in counts:
                mf = os.path.join(work, "m%d.eml" % n)
                with open(mf, "w") as f:
                    f.write("From: a@example.org\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
                            + message(nginx.port, n))
                base, _ = rewrite_peak(extbody, conf, limits, mf, False)
                nginx.requests()
                peak, resolved = rewrite_peak(extbody, conf, limits, mf, True)
                reqs = nginx.requests()
                first = first if first is not None else peak
                print("%-7s %5d %12d %12d %+8d %9d  parts %s" % (name, n, peak, base, peak - first, reqs,
                                                                 ",".join(resolved)))
        if milter_ok:
            print()
            print("extbodyd, a fresh daemon, %d sessions at once: VmHWM (the spill files' pages"
                  " included) and peak RssAnon (sampled), KiB" % a.parallel)
            print("%-7s %5s %10s %10s %10s %10s %9s  %s" % ("build", "refs", "VmHWM", "RssAnon", "idle HWM",
                                                            "idle anon", "requests", "resolved"))
            for name, build in builds:
                milter = os.path.join(build, "filters", "daemon", "extbodyd")
                if not os.path.exists(milter):
                    continue
                idle, idle_anon, _ = milter_peak(milter, conf, limits, work, [os.devnull], 0)
                for n in counts:
                    bfs = []
                    for k in range(1 if a.same_urls else a.parallel):
                        bfs.append(os.path.join(work, "b%d-%d.eml" % (n, k)))
                        with open(bfs[-1], "w", newline="") as f:
                            f.write(message(nginx.port, n, "\r\n", k))
                    nginx.requests()
                    peak, anon, resolved = milter_peak(milter, conf, limits, work, bfs, a.parallel)
                    print("%-7s %5d %10d %10d %10d %10d %9d  parts %s" % (name, n, peak, anon, idle, idle_anon,
                                                                          nginx.requests(), ",".join(resolved)))
    finally:
        nginx.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
