#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Instructions extbodyd spends per message in its HTTP and milter doors
(issue 40: they must not rise over the build before the doors' one job).

The daemon runs under callgrind (valgrind --tool=callgrind, every thread in
one count) with a private configuration in a temporary directory: fetch =
off, the milter and HTTP doors on unix sockets, the Dovecot door closed. A
workload goes through one door, then SIGTERM stops the daemon (its exit
status must be 0) and callgrind's total (Ir) is read. The workloads are
issue 27's, with fetch off:

  small   a 3.9 KB message with one data: reference;
  big     an 8.6 MB message whose data: URL holds 6 MiB (base64, folded);
  corpus  the 600 messages of gen-corpus.py --seed 1 --count 600 (59.6 MB, 70
          references), one by one.

The HTTP door: each message through extbodyc (-s unix:SOCKET, --on-error
tempfail, so a failure stops the run instead of passing the message)
from the same build, one process and one connection per message, as
Postfix's pipe(8) or Exim's transport_filter start it. The milter door: each
message through a milter-protocol client here (version 6, one connection per
message as an SMTP session of one message; the header fields, the body in
CRLF in 65,535-byte chunks and the end, as Postfix sends them), so that only
the daemon is measured. A daemon that takes no message (idle: started and
stopped) is measured too, and each row also shows (Ir - idle Ir) / messages.
Each figure is the median of --repeat runs, with their spread: the count of
a daemon of several threads moves by a few thousand instructions from run to
run (malloc's arenas, thread exits, how often a waiting thread wakes), so
the daemon runs with LD_BIND_NOW=1 to keep the binding of symbols, done once
at start, out of that spread. Every answer is checked (HTTP: extbodyc exits
0; milter: continue or accept) and, with --vs-build, compared with the other
build's (extbodyc's output, the milter's modifications): the table says
whether they are the same.

    python3 tests/bench/bench-doors-instructions.py [--build build] [--vs-build DIR]
        [--workloads small,big,corpus] [--doors http,milter] [--count 600]
        [--repeat 3] [--keep DIR] [--work DIR]

--vs-build DIR measures another build's daemon in the same run (e.g. the
build before a change, built the same way: RelWithDebInfo, targets extbodyd
and extbodyc) and prints build/vs-build for every figure; "ratio per msg"
compares (Ir - idle Ir) / messages. --keep DIR keeps callgrind's files
(callgrind.BUILD.DOOR.WORKLOAD.RUN, BUILD being build or vs-build) for
callgrind_annotate. Needs valgrind (Debian package valgrind). Callgrind's
counts do not depend on the machine's load; a run of both builds with
--repeat 3 takes about five minutes. Not a test: nothing asserts a speed.
"""
import argparse
import base64
import glob
import hashlib
import os
import random
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

from benchlib import find_daemon

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
WORKLOADS = ("small", "big", "corpus")
DOORS = ("http", "milter")


# ---- the workloads ----------------------------------------------------------

def small_message(path):
    """Write to path a 3.9 KB message (LF line ends): some text and one
    data: reference."""
    with open(path, "w", newline="") as f:
        f.write("From: a@test.example\nTo: b@test.example\nSubject: with a reference\n"
                "Date: Mon, 1 Jan 2024 00:00:00 +0000\nMessage-ID: <small@test.example>\n"
                "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
                "--b\nContent-Type: text/plain\n\n" + ("some text to make it about 4 KB long\n" * 94) +
                "--b\nContent-Type: message/external-body; access-type=URL;\n"
                "\tURL=\"data:text/plain,Hello%2C%20\n\tbenchmark!%0A\"\n\n"
                "Content-Type: text/plain\nContent-ID: <small-part@test.example>\n\n--b--\n")


def big_message(path):
    """Write to path an 8.6 MB message (LF line ends) whose one external body
    is a data: URL holding 6 MiB of random bytes in base64, the URL split
    into 76-character words on folded lines (the RFC 2017 form)."""
    rnd = random.Random(6)
    url = b"data:application/octet-stream;base64," + base64.b64encode(rnd.randbytes(6 << 20))
    with open(path, "wb") as f:
        f.write(b"From: a@test.example\nTo: b@test.example\nSubject: a 6 MiB data: URL\n"
                b"Date: Mon, 1 Jan 2024 00:00:00 +0000\nMessage-ID: <big@test.example>\n"
                b"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
                b"--b\nContent-Type: text/plain\n\nThe data is in the reference.\n"
                b"--b\nContent-Type: message/external-body; access-type=URL;\n\tURL=\"")
        f.write(b"\n\t".join(url[i:i + 76] for i in range(0, len(url), 76)))
        f.write(b"\"\n\nContent-Type: application/octet-stream\nContent-ID: <big-part@test.example>\n\n"
                b"--b--\n")


def corpus(work, count):
    """The first count messages of gen-corpus.py --seed 1 (one file each, LF
    line ends), in order."""
    out = os.path.join(work, "corpus")
    subprocess.run([sys.executable, os.path.join(HERE, "gen-corpus.py"), "--seed", "1", "--count", str(count),
                    "--format", "dir", "--out", out, "-q"], check=True)
    return sorted(glob.glob(os.path.join(out, "msg-*.eml")))


def crlf(data):
    """data with every line ending CR LF, as an MTA hands a message to a milter."""
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


# ---- the HTTP door: extbodyc ------------------------------------------------

def send_http(build, sock, files):
    """Each file through extbodyc of build; returns (answer digests, messages
    the daemon changed)."""
    client = os.path.join(build, "filters", "client", "extbodyc")
    digests, changed = [], 0
    for path in files:
        with open(path, "rb") as inp:
            data = inp.read()
            inp.seek(0)
            r = subprocess.run([client, "-s", "unix:" + sock, "-t", "0", "--on-error", "tempfail"],
                               stdin=inp, capture_output=True)
        if r.returncode != 0:
            raise RuntimeError("extbodyc exited %d on %s: %s" % (r.returncode, path, r.stderr.decode(errors="replace")))
        digests.append(hashlib.sha256(r.stdout).hexdigest())
        changed += r.stdout != data
    return digests, changed


# ---- the milter door: a milter-protocol client ------------------------------

# the steps a filter can ask not to get (SMFIP_NO*) and not to answer (SMFIP_NR_*)
NO_STEP = {b"C": 0x1, b"H": 0x2, b"M": 0x4, b"R": 0x8, b"B": 0x10, b"L": 0x20, b"N": 0x40, b"T": 0x200}
NO_REPLY = {b"C": 0x1000, b"H": 0x2000, b"M": 0x4000, b"R": 0x8000, b"T": 0x10000, b"N": 0x40000,
            b"B": 0x80000, b"L": 0x80}
HDR_LEADSPC = 0x100000
FINAL = (b"a", b"c", b"d", b"r", b"t", b"y")


def header_fields(data):
    """The top-level header of a CRLF message as (name, value) pairs, a
    folded value's lines joined by LF (Postfix's form), and its body."""
    head, _, body = data.partition(b"\r\n\r\n")
    fields = []
    for line in head.split(b"\r\n"):
        if line[:1] in (b" ", b"\t") and fields:
            fields[-1][1] += b"\n" + line
        elif b":" in line:
            name, _, value = line.partition(b":")
            fields.append([name, value])
    return fields, body


class MilterSession:
    """One connection to the milter at sock, negotiated as Postfix does
    (every action and step offered, the leading space of header values
    kept)."""

    def __init__(self, sock):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(sock)
        self.f = self.s.makefile("rb")
        self.put(b"O", struct.pack(">III", 6, 0x1FF, 0x1FFFFF))
        cmd, data = self.get()
        if cmd != b"O":
            raise RuntimeError("milter negotiation answered %r" % cmd)
        self.proto = struct.unpack(">III", data[:12])[2]

    def put(self, cmd, data=b""):
        self.s.sendall(struct.pack(">I", len(data) + 1) + cmd + data)

    def get(self):
        head = self.f.read(4)
        if len(head) < 4:
            raise RuntimeError("the milter closed the connection")
        pkt = self.f.read(struct.unpack(">I", head)[0])
        return pkt[:1], pkt[1:]

    def step(self, cmd, data=b""):
        """Send one step unless the filter opted out of it; its reply (b"c"
        when none is due)."""
        if self.proto & NO_STEP.get(cmd, 0):
            return b"c"
        self.put(cmd, data)
        if self.proto & NO_REPLY.get(cmd, 0):
            return b"c"
        return self.get()[0]

    def message(self, data, qid):
        """One message (CRLF); returns (final reply, digest of every
        modification in order, whether anything was modified)."""
        fields, body = header_fields(data)
        steps = [(b"C", b"localhost\0" + b"4" + struct.pack(">H", 25) + b"127.0.0.1\0"),
                 (b"H", b"localhost\0"), (b"M", b"<a@test.example>\0"), (b"R", b"<b@test.example>\0"),
                 (b"T", b"")]
        for name, value in fields:
            if not self.proto & HDR_LEADSPC and value[:1] == b" ":
                value = value[1:]
            steps.append((b"L", name + b"\0" + value + b"\0"))
        steps.append((b"N", b""))
        for cmd, arg in steps:
            if cmd == b"M":
                self.put(b"D", b"M" + b"i\0" + qid + b"\0")
            r = self.step(cmd, arg)
            if r != b"c":
                return r, hashlib.sha256(r).hexdigest(), False
        for at in range(0, len(body), 65535):
            r = self.step(b"B", body[at:at + 65535])
            if r == b"s":
                break
            if r != b"c":
                return r, hashlib.sha256(r).hexdigest(), False
        self.put(b"E")
        digest, modified = hashlib.sha256(), False
        while True:
            cmd, arg = self.get()
            if cmd == b"p":          # progress
                continue
            digest.update(struct.pack(">I", len(arg) + 1) + cmd + arg)
            if cmd in FINAL:
                return cmd, digest.hexdigest(), modified
            modified = True

    def close(self):
        try:
            self.put(b"Q")
        finally:
            self.f.close()
            self.s.close()


def send_milter(sock, files):
    """Each file (CRLF line ends made) through the milter at sock, one
    connection each; returns (modification digests, messages changed)."""
    digests, changed = [], 0
    for n, path in enumerate(files):
        with open(path, "rb") as f:
            data = crlf(f.read())
        m = MilterSession(sock)
        try:
            reply, digest, modified = m.message(data, b"BENCH%05d" % n)
        finally:
            m.close()
        if reply not in (b"a", b"c"):
            raise RuntimeError("the milter answered %r to %s" % (reply, path))
        digests.append(digest)
        changed += modified
    return digests, changed


# ---- the daemon under callgrind ---------------------------------------------

def listening(paths):
    """Whether every unix socket in paths is listening (/proc/net/unix: the
    flag __SO_ACCEPTCON), seen without connecting to it: a connection would
    cost the daemon instructions."""
    want = set(paths)
    try:
        with open("/proc/net/unix") as f:
            for line in f:
                cols = line.split()
                if len(cols) >= 8 and cols[7] in want and int(cols[3], 16) & 0x10000:
                    want.discard(cols[7])
    except OSError:
        return False
    return not want


def callgrind_total(path):
    """The Ir total of a callgrind file."""
    with open(path) as f:
        for line in f:
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    raise RuntimeError("no total in %s" % path)


def measure(daemon, build, work, out, door, files):
    """Run daemon under callgrind (callgrind's file: out), send files
    through door (None: nothing), stop it with SIGTERM; returns (Ir, answer
    digests, messages changed)."""
    run = tempfile.mkdtemp(prefix="run-", dir=work)
    msock, hsock = os.path.join(run, "milter.sock"), os.path.join(run, "http.sock")
    conf = os.path.join(run, "extbody.conf")
    with open(conf, "w") as f:
        # generous timeouts: the daemon runs some fifty times slower under callgrind
        f.write("[extbody]\nfetch = off\nmilter_socket = unix:%s\nmilter_umask = 077\nhttp_socket = unix:%s\n"
                "dovecot_filter_socket =\nhttp_timeout = 600\nhttp_request_timeout = 600\n" % (msock, hsock))
    log = open(os.path.join(run, "daemon.log"), "w+")
    # every symbol bound at start (LD_BIND_NOW): the binding of a function
    # called first on a path one run takes and another does not stays out
    # of the messages' counts
    env = dict(os.environ, LD_BIND_NOW="1")
    proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                             daemon, "-c", conf], stdout=log, stderr=log, env=env)
    try:
        end = time.monotonic() + 300
        while not listening((msock, hsock)):
            if proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError("the daemon did not open its doors")
            time.sleep(0.1)
        digests, changed = [], 0
        if door == "http":
            digests, changed = send_http(build, hsock, files)
        elif door == "milter":
            digests, changed = send_milter(msock, files)
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(600)
        if status != 0:
            raise RuntimeError("the daemon exited %d" % status)
    except BaseException:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.seek(0)
        sys.stderr.write(log.read()[-4000:])
        raise
    finally:
        log.close()
    shutil.rmtree(run, ignore_errors=True)
    return callgrind_total(out), digests, changed


# ---- main -------------------------------------------------------------------

def mega(ir):
    return "%.3f M" % (ir / 1e6)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(TOP, "build"))
    ap.add_argument("--vs-build", help="another build directory whose daemon is measured in the same run")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="some of small,big,corpus")
    ap.add_argument("--doors", default=",".join(DOORS), help="some of http,milter")
    ap.add_argument("--count", type=int, default=600, help="messages of the corpus (default 600)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure; the median is shown (default 3)")
    ap.add_argument("--keep", help="a directory to keep callgrind's files in")
    ap.add_argument("--work", help="the directory for the inputs (default: a temporary one, removed)")
    a = ap.parse_args()
    workloads = [w for w in a.workloads.split(",") if w]
    doors = [d for d in a.doors.split(",") if d]
    if not set(workloads) <= set(WORKLOADS) or not set(doors) <= set(DOORS):
        ap.error("--workloads takes small, big, corpus; --doors http, milter")
    if a.repeat < 1:
        ap.error("--repeat must be 1 or more")
    if not shutil.which("valgrind"):
        sys.exit("bench-doors-instructions.py: needs valgrind (Debian package valgrind)")
    builds = [("build", os.path.abspath(a.build))]
    if a.vs_build:
        builds.append(("vs-build", os.path.abspath(a.vs_build)))
    for _, b in builds:
        for prog in (find_daemon(b), os.path.join(b, "filters", "client", "extbodyc")):
            if not prog or not os.access(prog, os.X_OK):
                sys.exit("bench-doors-instructions.py: no extbodyd and extbodyc under %s" % b)
    work = os.path.abspath(a.work) if a.work else tempfile.mkdtemp(prefix="extbody-bench-doors-")
    os.makedirs(work, exist_ok=True)
    keep = os.path.abspath(a.keep) if a.keep else work
    os.makedirs(keep, exist_ok=True)
    try:
        inputs = {}
        if "small" in workloads:
            inputs["small"] = [os.path.join(work, "small.eml")]
            small_message(inputs["small"][0])
        if "big" in workloads:
            inputs["big"] = [os.path.join(work, "big.eml")]
            big_message(inputs["big"][0])
        if "corpus" in workloads:
            inputs["corpus"] = corpus(work, a.count)
        for w in workloads:
            size = sum(os.path.getsize(p) for p in inputs[w])
            print("%-7s %d message%s, %.1f KB" % (w, len(inputs[w]), "s" * (len(inputs[w]) != 1), size / 1e3))
        for tag, b in builds:
            print("%-8s %s (%s)" % (tag, b, find_daemon(b)))
        sys.stdout.flush()

        idle, got = {}, {}
        for tag, b in builds:
            daemon = find_daemon(b)
            runs = []
            for r in range(a.repeat):
                out = os.path.join(keep, "callgrind.%s.idle.%d" % (tag, r + 1))
                runs.append(measure(daemon, b, work, out, None, [])[0])
            idle[tag] = runs
            print("%-8s idle           %s Ir" % (tag, " ".join(mega(x) for x in runs)))
            sys.stdout.flush()
            for door in doors:
                for w in workloads:
                    t0 = time.monotonic()
                    runs = []
                    for r in range(a.repeat):
                        out = os.path.join(keep, "callgrind.%s.%s.%s.%d" % (tag, door, w, r + 1))
                        runs.append(measure(daemon, b, work, out, door, inputs[w]))
                    if any(x[1] != runs[0][1] for x in runs):
                        raise RuntimeError("%s: the answers differ between runs" % tag)
                    got[tag, door, w] = runs
                    print("%-8s %-6s %-7s %s Ir, %d of %d changed (%.0f s)"
                          % (tag, door, w, " ".join(mega(x[0]) for x in runs), runs[0][2], len(inputs[w]),
                             time.monotonic() - t0))
                    sys.stdout.flush()

        def median(xs):
            return statistics.median(xs)

        def spread(xs):
            return "%.1f K" % ((max(xs) - min(xs)) / 1e3)

        print()
        print("Instructions (Ir) of the whole daemon process, fetch off: the median of %d run%s, the spread "
              "(largest - smallest)," % (a.repeat, "s" * (a.repeat != 1)))
        print("and per message (Ir - idle Ir) / messages; ratio: build / vs-build")
        cols = ["door", "workload", "msgs", "build Ir", "spread", "per msg"]
        if a.vs_build:
            cols += ["vs-build Ir", "spread", "per msg", "ratio", "ratio per msg", "same answers"]
        rows = [cols]
        for door in doors:
            for w in workloads:
                n = len(inputs[w])
                irs = [x[0] for x in got["build", door, w]]
                ir, dg = median(irs), got["build", door, w][0][1]
                per = (ir - median(idle["build"])) / n
                row = [door, w, str(n), mega(ir), spread(irs), mega(per)]
                if a.vs_build:
                    virs = [x[0] for x in got["vs-build", door, w]]
                    vir, vdg = median(virs), got["vs-build", door, w][0][1]
                    vper = (vir - median(idle["vs-build"])) / n
                    row += [mega(vir), spread(virs), mega(vper), "%.4f" % (ir / vir), "%.4f" % (per / vper),
                            "yes" if dg == vdg else "NO (%d differ)" % sum(x != y for x, y in zip(dg, vdg))]
                rows.append(row)
        row = ["(idle)", "", "0", mega(median(idle["build"])), spread(idle["build"]), ""]
        if a.vs_build:
            row += [mega(median(idle["vs-build"])), spread(idle["vs-build"]), "",
                    "%.4f" % (median(idle["build"]) / median(idle["vs-build"])), "", ""]
        rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(cols))]
        for r in rows:
            print("  ".join(c.rjust(w) if i >= 2 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if a.keep:
            print("callgrind's files: %s" % keep)
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
