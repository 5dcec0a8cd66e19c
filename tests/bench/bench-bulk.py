#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Bulk rewrite of a generated mbox, the way an administrator resolves an archive.

    python3 tests/bench/bench-bulk.py [--build build] [--seed 7] [--count 3000]
                                      [--ext-fraction 0.1] [--extbody PATH] [-- OPTION...]

Generates the corpus with gen-corpus.py (its http URLs pointing at a static
server this script starts on 127.0.0.1, serving the files the generator wrote),
runs `extbody rewrite --mbox` over it with fetching on and confined to that
server (allow_networks 127.0.0.1/32, allow_domains 127.0.0.1), and prints the
run's summary: references found, resolved, left by reason, and the time taken,
beside a GMime-free baseline (`cat` of the same mbox) measured in the same run.
Options after `--` go to extbody (e.g. `-- -o max_requests_per_host=600`).
--extbody runs another build (an older one, for a before/after comparison).
Nothing leaves the machine.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from benchlib import free_port


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(here, "..", "..", "build"))
    ap.add_argument("--extbody")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--ext-fraction", default="0.1")
    ap.add_argument("rest", nargs="*")
    a = ap.parse_args()
    extbody = a.extbody or os.path.join(a.build, "src", "extbody")
    work = tempfile.mkdtemp(prefix="extbody-bulk-")
    try:
        port = free_port()
        box = os.path.join(work, "corpus.mbox")
        serve = os.path.join(work, "serve")
        subprocess.run([sys.executable, os.path.join(here, "gen-corpus.py"), "--seed", str(a.seed),
                        "--count", str(a.count), "--ext-fraction", a.ext_fraction, "--out", box,
                        "--serve-dir", serve, "--base-url", "http://127.0.0.1:%d/" % port, "-q"],
                       check=True)
        srv = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                                "--directory", serve], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.05)
            conf = os.path.join(work, "empty.conf")
            open(conf, "w").close()
            t0 = time.perf_counter()
            subprocess.run(["cat", box], stdout=subprocess.DEVNULL, check=True)
            t_cat = time.perf_counter() - t0
            old = "--fetch" not in subprocess.run([extbody, "rewrite", "--help-all"], capture_output=True,
                                                  text=True).stdout
            cmd = [extbody, "rewrite", "-c", conf, "--allow-network", "127.0.0.1/32",
                   "-o", "allow_domains=127.0.0.1"]
            cmd += ["-o", "fetch=on"] if old else ["--fetch"]
            cmd += a.rest + ([box] if old else ["--mbox", box])
            t0 = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True)
            t = time.perf_counter() - t0
        finally:
            srv.terminate()
            srv.wait()
        summary = [l for l in p.stderr.splitlines() if "messages scanned" in l]
        print("extbody bulk rewrite: gen-corpus.py --seed %d --count %d --ext-fraction %s (%.1f MB)"
              % (a.seed, a.count, a.ext_fraction, os.path.getsize(box) / 1e6))
        print("  %s" % (summary[-1] if summary else p.stderr.strip()[-400:]))
        print("  exit %d, %.2f s (cat of the same mbox: %.3f s)" % (p.returncode, t, t_cat))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
