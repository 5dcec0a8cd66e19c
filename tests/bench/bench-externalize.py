#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Externalize benchmark (issue 20): `extbody externalize --mbox` over a
generated mailbox of 2000 messages (gen-corpus.py --seed 1 --count 2000,
cached under the build directory) with externalize_min_size = 100K and a
directory store (no web server: nothing is fetched), measured in the same run
against:

  - `cat` of the same mbox (the I/O floor);
  - a GMime parse-and-write round trip of the same messages in process
    (bench-rewrite, as bench.py and bench-mailbox.py measure it: no process
    start, no file I/O);
  - GMime's own mbox round trip as a process (bench-rewrite --mbox: mbox file
    in, mbox file out, fsync - the I/O a mailbox rewrite does).

Reports the mailbox size before and after, the parts externalized and their
bytes, the objects stored and their bytes, the dedup (bytes referred to over
bytes stored), and throughput (messages/s, MB/s, and the command's CPU time,
user + system, which a machine shared with other work disturbs less than the
elapsed time) with ratios to the baselines; each time is the median of
--runs runs, each on a fresh copy of the mbox and an empty store.

    python3 tests/bench/bench-externalize.py [--build build] [--runs 3] [--jobs 1] [--extbody PATH]

Not a test (no ctest): nothing asserts a speed.
"""
import argparse
import email
import email.utils
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BASE_URL = "http://127.0.0.1:8080/parts"


def gen(work, fmt, name):
    out = os.path.join(work, name)
    if not os.path.exists(out):
        subprocess.run([sys.executable, os.path.join(HERE, "gen-corpus.py"), "--seed", "1", "--count", "2000",
                        "--format", fmt, "--out", out, "--force", "-q"], check=True)
    return out


def cpu_children():
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def timed(cmd, **kw):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, **kw)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit("%s exited %d: %s" % (" ".join(cmd), p.returncode, getattr(p, "stderr", "") or ""))
    return dt, p


def references(path):
    """Parts of the mbox at @path that refer to the store: (count, bytes)."""
    data = open(path, "rb").read()
    starts = [m.start() for m in re.finditer(rb"^From ", data, re.M)]
    n = size = 0
    for i, s in enumerate(starts):
        e = starts[i + 1] if i + 1 < len(starts) else len(data)
        chunk = data[s:e]
        msg = email.message_from_bytes(chunk[chunk.index(b"\n") + 1:])
        for part in msg.walk():
            if part.get_content_type() != "message/external-body":
                continue
            url = "".join((email.utils.collapse_rfc2231_value(part.get_param("url") or "") or "").split())
            if url.startswith(BASE_URL + "/"):
                n += 1
                size += int(part.get_param("size") or 0)
    return n, size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--extbody", help="another extbody to run (default: BUILD/src/extbody)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    extbody = a.extbody or os.path.join(build, "src", "extbody")
    bench_rewrite = os.path.join(build, "tests", "bench-rewrite")
    work = os.path.join(build, "bench-externalize")
    os.makedirs(work, exist_ok=True)
    box = gen(work, "mbox", "corpus-2000.mbox")
    msgdir = gen(work, "dir", "corpus-2000.dir")
    store = os.path.join(work, "store")
    conf = os.path.join(work, "externalize.conf")
    with open(conf, "w") as f:
        f.write("externalize_min_size = 100K\nexternalize_store = %s\nexternalize_base_url = %s\n"
                % (store, BASE_URL))
    run_box = os.path.join(work, "run.mbox")
    size_before = os.path.getsize(box)
    mb = size_before / 1e6

    def fresh():
        shutil.copyfile(box, run_box)
        shutil.rmtree(store, ignore_errors=True)
        os.makedirs(store)
        subprocess.run(["cat", run_box], stdout=subprocess.DEVNULL, check=True)   # page cache

    times, cpus, summary = [], [], ""
    for _ in range(a.runs):
        fresh()
        c0 = cpu_children()
        dt, p = timed([extbody, "externalize", "-c", conf, "-j", str(a.jobs), "--mbox", run_box],
                      stderr=subprocess.PIPE, text=True)
        times.append(dt)
        cpus.append(cpu_children() - c0)
        lines = [l for l in p.stderr.splitlines() if "messages scanned" in l]
        summary = lines[-1] if lines else (p.stderr.strip().splitlines() or [""])[-1]
    t_ext = statistics.median(times)
    cpu_ext = statistics.median(cpus)
    size_after = os.path.getsize(run_box)
    objects = [os.path.join(store, n) for n in os.listdir(store)]
    stored = sum(os.path.getsize(o) for o in objects)
    n_refs, ref_bytes = references(run_box)

    cat = []
    for _ in range(a.runs):
        dt, _ = timed(["cat", box], stdout=subprocess.DEVNULL)
        cat.append(dt)
    t_cat = statistics.median(cat)
    files = sorted(os.path.join(msgdir, f) for f in os.listdir(msgdir))
    out = subprocess.run([bench_rewrite, "--repeat", str(a.runs)] + files, capture_output=True, text=True,
                         check=True).stdout
    gm = float(re.search(r"gmime roundtrip: [\d.]+ s\s+([\d.]+) MB/s", out).group(1))
    gmf = []
    for _ in range(a.runs):
        dt, _ = timed([bench_rewrite, "--mbox", box, os.path.join(work, "gmime-out.mbox")],
                      stdout=subprocess.DEVNULL)
        gmf.append(dt)
    t_gmf = statistics.median(gmf)

    print("gen-corpus.py --seed 1 --count 2000: %.1f MB mbox; externalize_min_size = 100K, directory store; "
          "median of %d runs, -j %d" % (mb, a.runs, a.jobs))
    print("  %s" % summary.replace("extbody: ", ""))
    print("  mailbox before %10d bytes, after %10d bytes (%.1f%% of before, %.1f MB taken out)"
          % (size_before, size_after, 100.0 * size_after / size_before, (size_before - size_after) / 1e6))
    print("  parts externalized %5d, %10d bytes referred to" % (n_refs, ref_bytes))
    print("  objects stored     %5d, %10d bytes stored (dedup: %.2f x, %d parts per object)"
          % (len(objects), stored, ref_bytes / stored if stored else 0.0,
             round(n_refs / len(objects)) if objects else 0))
    print("  cat                        %8.1f MB/s" % (mb / t_cat))
    print("  GMime round trip (in proc) %8.1f MB/s  (messages in memory, written to a null stream)" % gm)
    print("  GMime mbox round trip      %8.1f MB/s  (a process: mbox file in, mbox file out, fsync)" % (mb / t_gmf))
    print("  extbody externalize --mbox %8.1f MB/s  %6.0f msg/s  (%.2f s; CPU user+sys %.2f s)"
          % (mb / t_ext, 2000 / t_ext, t_ext, cpu_ext))
    print("  ratio to cat: %.3f; to the GMime round trip in process: %.2f; to GMime's mbox round trip: %.2f"
          % (t_cat / t_ext, (mb / t_ext) / gm, t_gmf / t_ext))


if __name__ == "__main__":
    main()
