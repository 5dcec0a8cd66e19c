#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Exim benchmark (root: it runs a private Exim on 127.0.0.1, tests/exim/exim-peer.sh).

Postfix's smtp-source sends --count messages of about 5 KB from 10 concurrent
SMTP sessions to one private Exim 4 (Debian's exim4-daemon-light unpacked under
/opt/extbody-test-exim by tests/quickstart.sh, or $EXIM); measured in the same
run and on the same instance, messages per second delivered to the Maildir
(from the first message sent to the last one delivered) through a transport
with no filter, with transport_filter = /bin/cat (the floor a transport filter
costs: a pipe and two more processes a delivery), with extbody's
filters/exim/extbody-exim (extbody started per delivery) and with extbodyc
against a private extbodyd's http_socket (the daemon's door, as
filters/exim/exim4-extbody.conf ships it); for mail without references and for mail where one
message in ten carries a data: reference. Each row is the median of --repeat
runs, the rows of a run taken in turn. Not a test: nothing asserts a speed.

    python3 tests/bench/bench-exim.py [--build build] [--daemon PATH] [--count 1000] [--repeat 3]

--daemon names the daemon program (default: extbodyd or extbody-milter under
the build directory); its peak memory (VmHWM) is printed at the end.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from benchlib import files_in, free_port, find_daemon, refs_message, stop_daemon, vm_hwm

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "..", "exim", "exim-peer.sh")
WRAPPER = os.path.join(HERE, "..", "..", "filters", "exim", "extbody-exim")


def run(work, port, count, rcpt, box, mix, timeout=600):
    """Send count messages to rcpt; seconds until all are in box (Maildir/new)."""
    before = files_in(box)
    t0 = time.perf_counter()
    if mix:
        plain = count * 9 // 10
        a = subprocess.Popen(["smtp-source", "-d", "-s", "9", "-m", str(plain), "-l", "5120",
                              "-f", "a@test.example", "-t", rcpt, "127.0.0.1:%d" % port])
        b = subprocess.Popen(["smtp-source", "-d", "-s", "1", "-m", str(count - plain),
                              "-F", os.path.join(work, "refs.eml"),
                              "-f", "a@test.example", "-t", rcpt, "127.0.0.1:%d" % port])
        if a.wait() or b.wait():
            raise RuntimeError("smtp-source failed")
    else:
        subprocess.run(["smtp-source", "-d", "-s", "10", "-m", str(count), "-l", "5120",
                        "-f", "a@test.example", "-t", rcpt, "127.0.0.1:%d" % port], check=True)
    end = time.time() + timeout
    while files_in(box) < before + count:
        if time.time() > end:
            raise RuntimeError("only %d of %d delivered to %s" % (files_in(box) - before, count, box))
        time.sleep(0.01)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3, help="runs per row; the median is shown")
    ap.add_argument("--daemon", help="the daemon program (default: extbodyd or extbody-milter under --build)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-exim.py runs a private Exim and needs root")
    exim = os.environ.get("EXIM", "/opt/extbody-test-exim/usr/sbin/exim4")
    if not os.access(exim, os.X_OK):
        sys.exit("no Exim at %s: run sh tests/quickstart.sh test (it unpacks Debian's exim4-daemon-light), "
                 "or set EXIM" % exim)
    extbody_src = os.path.join(os.path.abspath(a.build), "src", "extbody")
    client_src = os.path.join(os.path.abspath(a.build), "filters", "client", "extbodyc")
    milter = a.daemon or find_daemon(os.path.abspath(a.build))
    if not milter:
        sys.exit("bench-exim.py: no extbodyd or extbody-milter under %s (give --daemon)" % a.build)
    daemon = None
    work = tempfile.mkdtemp(prefix="extbody-bench-exim-")
    os.chmod(work, 0o755)
    port = free_port()
    try:
        # the filter runs as Exim's user: copies it can read and run
        run_dir = os.path.join(work, "run")
        os.mkdir(run_dir)
        os.chmod(run_dir, 0o755)
        wrapper = shutil.copy(WRAPPER, run_dir)
        extbody = shutil.copy(extbody_src, run_dir)
        # its shared library beside it ($ORIGIN in its run path): without it
        # every run exits 127 and the row measures a failing filter
        for lib in os.listdir(os.path.dirname(extbody_src)):
            if lib.startswith("libextbody.so"):
                shutil.copy(os.path.join(os.path.dirname(extbody_src), lib), run_dir, follow_symlinks=False)
        client = shutil.copy(client_src, run_dir)
        os.chmod(wrapper, 0o755)
        os.chmod(extbody, 0o755)
        os.chmod(client, 0o755)
        with open(os.path.join(work, "extbody.conf"), "w") as f:
            f.write("[extbody]\nfetch = off\n")
        # the daemon extbodyc talks to: its socket open to Exim's user
        http_sock = os.path.join(work, "http.sock")
        with open(os.path.join(work, "daemon.conf"), "w") as f:
            f.write("[extbody]\nfetch = off\nmilter_umask = 000\ndovecot_filter_socket =\nhttp_socket = unix:%s\n" % http_sock)
        daemon = subprocess.Popen([milter, "-p", "unix:" + os.path.join(work, "milter.sock"),
                                   "-c", os.path.join(work, "daemon.conf")], stderr=subprocess.DEVNULL)
        for _ in range(600):
            if os.path.exists(http_sock) or daemon.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(http_sock):
            raise RuntimeError("the daemon did not open %s" % http_sock)
        refs_message(os.path.join(work, "refs.eml"))
        env = dict(os.environ, EXIM=exim, EXTBODYC=client)
        subprocess.run(["sh", PEER, "up", work, str(port), wrapper, extbody], check=True, env=env)
        rows = [("no filter", "plain@test.example", "plain"),
                ("transport_filter = /bin/cat", "cat@test.example", "cat"),
                ("extbody-exim", "b@test.example", "extbody"),
                ("extbodyc (daemon)", "client@test.example", "client")]
        # one message to each first: the Maildirs exist, the caches are warm
        for _, rcpt, box in rows:
            run(work, port, 1, rcpt, os.path.join(work, "mail", box, "Maildir", "new"), False)
        for mix in (False, True):
            label = "one in ten with a data: reference" if mix else "no references"
            print("%d messages of ~5 KB from 10 sessions, %s, delivered to a Maildir:" % (a.count, label))
            rates = {name: [] for name, _, _ in rows}
            for _ in range(a.repeat):
                for name, rcpt, box in rows:
                    dt = run(work, port, a.count, rcpt, os.path.join(work, "mail", box, "Maildir", "new"), mix)
                    rates[name].append(a.count / dt)
            got = {}
            for name, _, _ in rows:
                r = rates[name]
                got[name] = sorted(r)[len(r) // 2]
                print("  %-30s %7.0f msg/s (runs: %s)" % (name, got[name], " ".join("%.0f" % x for x in r)))
            print("  ratio extbody-exim/no filter: %.2f (slowdown %.0f%%)" %
                  (got["extbody-exim"] / got["no filter"], 100 * (1 - got["extbody-exim"] / got["no filter"])))
            print("  ratio extbody-exim/cat filter: %.2f" % (got["extbody-exim"] / got["transport_filter = /bin/cat"]))
            print("  ratio extbodyc/no filter: %.2f (slowdown %.0f%%)" %
                  (got["extbodyc (daemon)"] / got["no filter"], 100 * (1 - got["extbodyc (daemon)"] / got["no filter"])))
            print("  ratio extbodyc/cat filter: %.2f" % (got["extbodyc (daemon)"] / got["transport_filter = /bin/cat"]))
            print("  ratio extbodyc/extbody-exim: %.2f" % (got["extbodyc (daemon)"] / got["extbody-exim"]))
        # the extbodyc rows were the daemon's work, not its fallback
        with open(os.path.join(work, "log", "extbodyc.log")) as f:
            fallbacks = sum(1 for _ in f)
        print("extbodyc fallbacks (messages passed through without the daemon): %d" % fallbacks)
        print("daemon %s: peak memory (VmHWM) %d KB after %d messages through its HTTP listener"
              % (milter, vm_hwm(daemon.pid), 2 * a.count * a.repeat + 1))
    finally:
        subprocess.run(["sh", PEER, "down", work], env=dict(os.environ, EXIM=exim))
        stop_daemon(daemon)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
