#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Postfix pipe(8) benchmark (root: it runs a private Postfix on 127.0.0.1,
tests/postfix/pf-peer.sh, and a private extbody daemon).

Postfix's smtp-source sends --count messages of about 5 KB from --sessions
concurrent SMTP sessions to one private Postfix whose transport_maps hand each
recipient to a pipe(8) transport (user nobody); measured in the same run and
on the same instance, messages per second from the first message sent to the
last one written by the pipe command into a directory of its own:

  pipe through cat            the floor: the command a pipe transport costs
                              (sh, then cat into the file);
  pipe through extbodyc       extbodyc against the daemon's http_socket, its
                              answer into the file (no process per message
                              besides the client);
  re-injected, no filter      the floor of an after-queue filter: the
                              sendmail stand-in alone (a shell and cat);
  extbodyc -e sendmail        the shipped master.cf line: extbodyc, its
                              answer handed to the sendmail stand-in (-e);
  extbody-pipe-client         filters/pipe/extbody-pipe-client as shipped,
                              its sendmail a stand-in writing the file;
  extbody-pipe (per message)  filters/pipe/extbody-pipe, extbody started per
                              message, the same stand-in for sendmail;

for mail without references and for mail where one message in ten carries a
data: reference. Each row is the median of --repeat runs, the rows of a run
taken in turn. The daemon's peak memory (VmHWM) is read at the end. Not a
test: nothing asserts a speed.

    python3 tests/bench/bench-postfix-pipe.py [--build build] [--daemon PATH]
                                              [--count 1000] [--sessions 10] [--repeat 3]

--daemon names the daemon program (default: extbodyd or extbody-milter under
the build directory).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import files_in, free_port, find_daemon, refs_message, stop_daemon, vm_hwm

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.join(HERE, "..", "..")
PEER = os.path.join(TOP, "tests", "postfix", "pf-peer.sh")


def put(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def run(work, port, count, sessions, rcpt, box, mix, timeout=600):
    """Send count messages to rcpt; seconds until the pipe command wrote all of them into box."""
    before = files_in(box)
    t0 = time.perf_counter()
    common = ["-f", "a@test.example", "-t", rcpt, "127.0.0.1:%d" % port]
    if mix and count >= 10:
        plain = count * 9 // 10
        a = subprocess.Popen(["smtp-source", "-s", str(max(1, sessions - 1)), "-m", str(plain), "-l", "5120"] + common)
        b = subprocess.Popen(["smtp-source", "-s", "1", "-m", str(count - plain),
                              "-F", os.path.join(work, "refs.eml")] + common)
        if a.wait() or b.wait():
            raise RuntimeError("smtp-source failed")
    else:
        subprocess.run(["smtp-source", "-s", str(sessions), "-m", str(count), "-l", "5120"] + common, check=True)
    end = time.time() + timeout
    while files_in(box) < before + count:
        if time.time() > end:
            raise RuntimeError("only %d of %d written to %s" % (files_in(box) - before, count, box))
        time.sleep(0.01)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(TOP, "build"))
    ap.add_argument("--daemon", help="the daemon program (default: extbodyd or extbody-milter under --build)")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3, help="runs per row; the median is shown")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-postfix-pipe.py runs a private Postfix and needs root")
    build = os.path.abspath(a.build)
    daemon_bin = a.daemon or find_daemon(build)
    if not daemon_bin:
        sys.exit("bench-postfix-pipe.py: no extbodyd or extbody-milter under %s (give --daemon)" % build)
    client = os.path.join(build, "filters", "client", "extbodyc")
    extbody = os.path.join(build, "src", "extbody")
    for p in (client, extbody):
        if not os.access(p, os.X_OK):
            sys.exit("bench-postfix-pipe.py: no %s (build first)" % p)
    pipe_client = os.path.abspath(os.path.join(TOP, "filters", "pipe", "extbody-pipe-client"))
    pipe_per_msg = os.path.abspath(os.path.join(TOP, "filters", "pipe", "extbody-pipe"))
    work = tempfile.mkdtemp(prefix="extbody-bench-postfix-pipe-")
    os.chmod(work, 0o755)
    pf = os.path.join(work, "pf")
    daemon = None
    up = False
    try:
        # the pipe commands run as nobody: their directories open to it
        out = os.path.join(work, "out")
        log = os.path.join(work, "log")
        for d in (out, log):
            os.mkdir(d)
            shutil.chown(d, "nobody", "nogroup")
        bindir = os.path.join(work, "bin")
        os.mkdir(bindir, 0o755)
        put(os.path.join(work, "extbody.conf"), "[extbody]\nfetch = off\n")
        http_sock = os.path.join(work, "http.sock")
        put(os.path.join(work, "daemon.conf"),
            "[extbody]\nfetch = off\nmilter_umask = 000\ndovecot_filter_socket =\nhttp_socket = unix:%s\n" % http_sock)
        daemon = subprocess.Popen([daemon_bin, "-p", "unix:" + os.path.join(work, "milter.sock"),
                                   "-c", os.path.join(work, "daemon.conf")], stderr=subprocess.DEVNULL)
        for _ in range(600):
            if os.path.exists(http_sock) or daemon.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(http_sock):
            raise RuntimeError("the daemon did not open %s" % http_sock)
        refs_message(os.path.join(work, "refs.eml"))
        # argv: QUEUE_ID SENDER RECIPIENT; the file is named after the queue id
        # and the process (a queue id may come back once its file is gone)
        sendmail = os.path.join(bindir, "sendmail-to-file")
        put(sendmail, "#!/bin/sh\n# stands in for sendmail -G -i -f SENDER -- RCPT: the message into $OUTBOX\n"
            "exec cat > \"$OUTBOX/$QID.$$\"\n", 0o755)
        rows = [
            ("pipe through cat", "cat",
             "exec cat > \"%s/cat/$1.$$\"\n" % out),
            ("pipe through extbodyc", "client",
             "exec %s -s unix:%s -t 30 -l %s/extbodyc.log > \"%s/client/$1.$$\"\n" % (client, http_sock, log, out)),
            ("re-injected, no filter", "reinject",
             "OUTBOX=%s/reinject QID=$1\nexport OUTBOX QID\n"
             "exec %s -G -i -f \"$2\" -- \"$3\"\n" % (out, sendmail)),
            ("extbodyc -e sendmail", "exec",
             "OUTBOX=%s/exec QID=$1\nexport OUTBOX QID\n"
             "exec %s -s unix:%s -t 30 -l %s/extbodyc.log -q \"$1\" -e %s -G -i -f \"$2\" -- \"$3\"\n"
             % (out, client, http_sock, log, sendmail)),
            ("extbody-pipe-client", "pclient",
             "OUTBOX=%s/pclient QID=$1 SENDMAIL=%s EXTBODYC=%s\nexport OUTBOX QID SENDMAIL EXTBODYC\n"
             "exec %s -s unix:%s -t 30 -l %s/extbodyc.log -f \"$2\" -- \"$3\"\n"
             % (out, sendmail, client, pipe_client, http_sock, log)),
            ("extbody-pipe (per message)", "permsg",
             "OUTBOX=%s/permsg QID=$1 SENDMAIL=%s\nexport OUTBOX QID SENDMAIL\n"
             "exec %s -c %s/extbody.conf -e %s -l stderr -q \"$1\" -f \"$2\" -- \"$3\" 2>/dev/null\n"
             % (out, sendmail, pipe_per_msg, work, extbody)),
        ]
        port = free_port()
        subprocess.run(["sh", PEER, "up", pf, str(port), "", "accept"], check=True)
        up = True
        services = []
        tmap = []
        for _, key, body in rows:
            os.mkdir(os.path.join(out, key))
            shutil.chown(os.path.join(out, key), "nobody", "nogroup")
            put(os.path.join(bindir, key), "#!/bin/sh\n" + body, 0o755)
            services.append("%s unix - n n - - pipe user=nobody argv=%s ${queue_id} ${sender} ${recipient}"
                            % (key, os.path.join(bindir, key)))
            tmap.append("%s@test.example=%s:" % (key, key))
        subprocess.run(["sh", PEER, "service", pf] + services, check=True)
        subprocess.run(["sh", PEER, "set", pf, "transport_maps=inline:{%s}" % ", ".join(tmap)]
                       + ["%s_destination_recipient_limit=1" % key for _, key, _ in rows], check=True)
        # one message to each first: the transports run, the caches are warm
        for _, key, _ in rows:
            run(work, port, 1, 1, key + "@test.example", os.path.join(out, key), False)
        for mix in (False, True):
            label = "one in ten with a data: reference" if mix else "no references"
            print("%d messages of ~5 KB from %d sessions, %s, written by the pipe command:"
                  % (a.count, a.sessions, label))
            rates = {name: [] for name, _, _ in rows}
            for _ in range(a.repeat):
                for name, key, _ in rows:
                    dt = run(work, port, a.count, a.sessions, key + "@test.example", os.path.join(out, key), mix)
                    rates[name].append(a.count / dt)
            got = {}
            for name, _, _ in rows:
                got[name] = statistics.median(rates[name])
                print("  %-30s %7.0f msg/s (runs: %s)  %.2fx of cat" %
                      (name, got[name], " ".join("%.0f" % x for x in rates[name]), got[name] / got["pipe through cat"]))
            print("  ratio extbodyc -e sendmail/re-injected, no filter: %.2f" %
                  (got["extbodyc -e sendmail"] / got["re-injected, no filter"]))
            print("  ratio extbodyc/extbody-pipe (per message): %.2f" %
                  (got["pipe through extbodyc"] / got["extbody-pipe (per message)"]))
            print("  ratio extbody-pipe-client/extbody-pipe (per message): %.2f" %
                  (got["extbody-pipe-client"] / got["extbody-pipe (per message)"]))
        # what the pipe commands wrote: never empty; the references resolved
        # (an X-Extbody field) in the rows through extbody
        for name, key, _ in rows:
            box = os.path.join(out, key)
            empty = resolved = 0
            for n in os.listdir(box):
                with open(os.path.join(box, n), "rb") as f:
                    data = f.read()
                empty += not data
                resolved += b"\nX-Extbody:" in data
            print("  %-30s %d files, %d empty, %d with an X-Extbody field" % (name, len(os.listdir(box)), empty, resolved))
        # the extbodyc rows were the daemon's work, not its fallback
        try:
            with open(os.path.join(log, "extbodyc.log")) as f:
                fallbacks = sum(1 for _ in f)
        except FileNotFoundError:
            fallbacks = 0
        print("extbodyc fallbacks (messages passed through without the daemon): %d" % fallbacks)
        print("daemon %s: peak memory (VmHWM) %d KB after %d messages through its HTTP listener"
              % (daemon_bin, vm_hwm(daemon.pid), 3 * (2 * a.count * a.repeat + 1)))
    finally:
        if up:
            subprocess.run(["sh", PEER, "down", pf])
        stop_daemon(daemon)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
