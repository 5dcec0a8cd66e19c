#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Milter benchmark (root: it runs a private Postfix on 127.0.0.1).

Postfix's smtp-source sends 2000 messages of about 5 KB from 10 concurrent
sessions; measured in the same run, messages per second accepted through
Postfix with no milter, with a minimal pass-through libmilter milter (the floor
the milter protocol costs), and with extbodyd; over a unix socket and over
TCP on 127.0.0.1 (TCP with and without TCP_NODELAY); for mail without
references and for mail where one message in ten carries a data: reference.
Also extbodyd's peak memory (VmHWM). Each row is the median of --repeat
runs. Not a test: nothing asserts a speed.

    python3 tests/bench/bench-milter.py [--build build] [--daemon PATH] [--vs-build DIR]
                                        [--unix-only] [--count 2000] [--repeat 3]

--daemon names the daemon program (default: extbodyd or extbody-milter under
the build directory). --vs-build DIR measures, in the same run, the daemon of
another build too (e.g. an older version's: a regression check) and prints
the ratio of the two; --unix-only leaves the TCP rows out.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from benchlib import free_port, find_daemon, doors_off, refs_message

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "..", "postfix", "pf-peer.sh")


def wait_for(path_or_port, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if isinstance(path_or_port, str):
            if os.path.exists(path_or_port):
                return
        else:
            try:
                socket.create_connection(("127.0.0.1", path_or_port), 0.2).close()
                return
            except OSError:
                pass
        time.sleep(0.02)
    raise RuntimeError("milter did not come up")


def run(work, count, milter_cmd, spec, mix):
    """Start a milter (or none), a Postfix using it, send, return msg/s and peak KB."""
    proc = None
    if milter_cmd:
        proc = subprocess.Popen(milter_cmd, stderr=subprocess.DEVNULL)
        wait_for(spec[5:] if spec.startswith("unix:") else int(spec.split(":")[2]))
    pf = tempfile.mkdtemp(dir=work)
    os.chmod(pf, 0o755)
    port = free_port()
    subprocess.run(["sh", PEER, "up", pf, str(port), spec or "", "accept"], check=True)
    try:
        t0 = time.perf_counter()
        if mix:
            plain = count * 9 // 10
            a = subprocess.Popen(["smtp-source", "-s", "9", "-m", str(plain), "-l", "5120",
                                  "-f", "a@test.example", "-t", "b@test.example", "127.0.0.1:%d" % port])
            b = subprocess.Popen(["smtp-source", "-s", "1", "-m", str(count - plain),
                                  "-F", os.path.join(work, "refs.eml"),
                                  "-f", "a@test.example", "-t", "b@test.example", "127.0.0.1:%d" % port])
            a.wait()
            b.wait()
        else:
            subprocess.run(["smtp-source", "-s", "10", "-m", str(count), "-l", "5120",
                            "-f", "a@test.example", "-t", "b@test.example", "127.0.0.1:%d" % port],
                           check=True)
        dt = time.perf_counter() - t0
        peak = 0
        if proc:
            with open("/proc/%d/status" % proc.pid) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = int(line.split()[1])
    finally:
        subprocess.run(["sh", PEER, "down", pf])
        shutil.rmtree(pf, ignore_errors=True)
        if proc:
            proc.terminate()
            proc.wait()
    return count / dt, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3, help="runs per row; the median is shown")
    ap.add_argument("--daemon", help="the daemon program (default: extbodyd or extbody-milter under --build)")
    ap.add_argument("--vs-build", help="another build directory whose daemon is measured in the same run")
    ap.add_argument("--unix-only", action="store_true", help="leave the TCP rows out")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-milter.py runs a private Postfix and needs root")
    build = os.path.abspath(a.build)
    extbody = a.daemon or find_daemon(build)
    if not extbody:
        sys.exit("bench-milter.py: no extbodyd or extbody-milter under %s (give --daemon)" % build)
    other = None
    if a.vs_build:
        other = find_daemon(os.path.abspath(a.vs_build))
        if not other:
            sys.exit("bench-milter.py: no extbodyd or extbody-milter under %s" % a.vs_build)
        print("this build's daemon: %s\nthe other build's: %s" % (extbody, other))
    passthrough = os.path.join(build, "tests", "passthrough-milter")
    work = tempfile.mkdtemp(prefix="extbody-bench-milter-")
    os.chmod(work, 0o755)
    refs_message(os.path.join(work, "refs.eml"))
    conf = os.path.join(work, "empty.conf")
    open(conf, "w").close()
    usock = os.path.join(work, "m.sock")
    off = doors_off(extbody, conf)
    off_other = doors_off(other, conf) if other else []
    results = []
    try:
        for mix in (False, True):
            label = "one in ten with a data: reference" if mix else "no references"
            rows = [("no milter", None, None)]
            tport = free_port()
            tspec = "inet:127.0.0.1:%d" % tport
            lspec = "inet:%d@127.0.0.1" % tport
            rows += [
                ("pass-through, unix", [passthrough, "unix:" + usock], "unix:" + usock),
                ("extbodyd, unix", [extbody, "-c", conf, "-o", "fetch=off", "-o", "milter_umask=000", "-p", "unix:" + usock] + off, "unix:" + usock),
            ]
            if other:
                rows.append(("other build's daemon, unix",
                             [other, "-c", conf, "-o", "fetch=off", "-o", "milter_umask=000", "-p", "unix:" + usock] + off_other,
                             "unix:" + usock))
            if not a.unix_only:
                rows += [
                    ("pass-through, tcp", [passthrough, lspec], tspec),
                    ("pass-through, tcp, TCP_NODELAY", [passthrough, lspec, "--nodelay"], tspec),
                    ("extbodyd, tcp (TCP_NODELAY)", [extbody, "-c", conf, "-o", "fetch=off", "-p", lspec] + off, tspec),
                    ("extbodyd, tcp, Nagle on", [extbody, "-c", conf, "-o", "fetch=off", "-p", lspec, "--no-nodelay"] + off, tspec),
                ]
                if other:
                    rows.append(("other build's daemon, tcp (TCP_NODELAY)",
                                 [other, "-c", conf, "-o", "fetch=off", "-p", lspec] + off_other, tspec))
            print("%d messages of ~5 KB from 10 sessions, %s:" % (a.count, label))
            got = {}
            for name, cmd, spec in rows:
                if os.path.exists(usock):
                    os.unlink(usock)
                rates, peaks = [], []
                for _ in range(a.repeat):
                    if os.path.exists(usock):
                        os.unlink(usock)
                    r_, p_ = run(work, a.count, cmd, spec, mix)
                    rates.append(r_)
                    peaks.append(p_)
                    if cmd:
                        time.sleep(5.5)   # libmilter's shutdown delay before the port is free again
                rate = sorted(rates)[len(rates) // 2]
                peak = max(peaks)
                got[name] = rate
                print("  %-36s %7.0f msg/s (runs: %s)%s" % (name, rate, " ".join("%.0f" % x for x in rates),
                                                             ("   peak RSS %d KB" % peak) if peak else ""))
            print("  ratio extbody/pass-through, unix: %.2f" % (got["extbodyd, unix"] / got["pass-through, unix"]))
            if other:
                print("  ratio this build/other build, unix: %.2f" %
                      (got["extbodyd, unix"] / got["other build's daemon, unix"]))
            if not a.unix_only:
                print("  ratio extbody/pass-through, tcp (both TCP_NODELAY): %.2f" %
                      (got["extbodyd, tcp (TCP_NODELAY)"] / got["pass-through, tcp, TCP_NODELAY"]))
                print("  TCP_NODELAY speed-up for extbodyd: %.2f x" %
                      (got["extbodyd, tcp (TCP_NODELAY)"] / got["extbodyd, tcp, Nagle on"]))
                if other:
                    print("  ratio this build/other build, tcp: %.2f" %
                          (got["extbodyd, tcp (TCP_NODELAY)"] /
                           got["other build's daemon, tcp (TCP_NODELAY)"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
