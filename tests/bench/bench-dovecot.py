#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Dovecot benchmark (root: it runs a private Dovecot on 127.0.0.1; needs
dovecot-core, dovecot-imapd, dovecot-lmtpd and dovecot-sieve).

At delivery: gen-corpus.py messages (one in ten with external-body parts)
delivered over LMTP from --sessions concurrent sessions into mdbox, measured in
the same run for a user with no Sieve script, one whose sieve_before filters
through `cat` (the floor Pigeonhole's filter command costs), one whose
sieve_before filters through extbody started per message
(filters/dovecot/extbody-sieve-filter) and one whose sieve_before filters
through the resident daemon: `filter "extbody"` meets the socket named extbody
in sieve_filter_socket_dir, the daemon's dovecot_filter_socket (no process per
message). The daemon's peak memory (VmHWM) is read at the end of the run.

At rest (issue 29): two --count-message mdbox INBOXes, one with 5% of its
messages holding external-body parts and one with 0.1%, each read over IMAP
(one FETCH of every message: the floor, from this process and again from a
python3 started for it, as the tool is) and rewritten by extbody-imap-rewrite
with one extbody process per batch (--no-daemon) and through the daemon's
HTTP listener (-s, POST /rewrite?stored); each of those twice: on a mailbox
whose BODYSTRUCTUREs Dovecot never made (the first run over a mailbox) and on
one where a FETCH of every BODYSTRUCTURE came first (cached: every later
run). Each row starts from a copy of the same loaded mailbox.

Messages per second, the median of --repeat runs, and the slowdown against
the first row of each part. Not a test: nothing asserts a speed.

    python3 tests/bench/bench-dovecot.py [--build build] [--daemon PATH] [--count 1000] [--sessions 4]
                                         [--repeat 3] [--delivery-only | --rest-only]

--daemon names the daemon program (default: extbodyd or extbody-milter under
the build directory); --delivery-only leaves the at-rest part out,
--rest-only the delivery part.
"""
import argparse
import concurrent.futures
import imaplib
import os
import shutil
import smtplib
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import free_port, find_daemon, vm_hwm

# The name said in EHLO/LHLO. smtplib would find one with socket.getfqdn() and
# gethostbyname(gethostname()): DNS queries to the machine's resolver (outside
# the machine) wherever /etc/hosts lacks the host name, as in a bare Debian
# chroot, where one in a few waited 5 s for its answer. The address literal is
# what smtplib fell back to here.
HELO = "[127.0.0.1]"

HERE = os.path.dirname(os.path.abspath(__file__))
# at rest: the corpora (name: fraction of messages with external-body parts)
# and the rows, each on a user of its own (a copy of the loaded mailbox)
REST_FRACTIONS = {"5": 0.05, "01": 0.001}
REST_KINDS = ("fetch", "proc1", "procc", "daemon1", "daemonc")
TOP = os.path.join(HERE, "..", "..")


def put(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(TOP, "build"))
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--sessions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--daemon", help="the daemon program (default: extbodyd or extbody-milter under --build)")
    ap.add_argument("--delivery-only", action="store_true", help="leave out the at-rest (IMAP) part")
    ap.add_argument("--rest-only", action="store_true", help="leave out the delivery (LMTP) part")
    args = ap.parse_args()
    daemon_bin = args.daemon or find_daemon(os.path.abspath(args.build))
    if not daemon_bin:
        sys.exit("bench-dovecot.py: no extbodyd or extbody-milter under %s (give --daemon)" % args.build)
    if os.geteuid() != 0:
        sys.exit("bench-dovecot.py: needs root (it runs a private Dovecot)")
    work = tempfile.mkdtemp(prefix="extbody-bench-dovecot-")
    os.chmod(work, 0o755)
    dovecot = None
    daemon = None
    try:
        bindir = os.path.join(work, "bin")
        os.mkdir(bindir, 0o755)
        # the per-message command under another name than the socket's: a
        # socket named extbody in sieve_filter_socket_dir comes before the
        # program of that name in sieve_filter_bin_dir
        shutil.copy(os.path.join(TOP, "filters", "dovecot", "extbody-sieve-filter"), os.path.join(bindir, "extbody-exec"))
        extbody = os.path.join(bindir, "extbody-real")
        shutil.copy(os.path.join(args.build, "src", "extbody"), extbody)
        # its shared library beside it ($ORIGIN in its run path): without it
        # every run exits 127 and the row measures a failing filter
        for lib in os.listdir(os.path.join(args.build, "src")):
            if lib.startswith("libextbody.so"):
                shutil.copy(os.path.join(args.build, "src", lib), bindir, follow_symlinks=False)
        put(os.path.join(bindir, "copy"), "#!/bin/sh\nexec cat\n", 0o755)
        os.chmod(os.path.join(bindir, "extbody-exec"), 0o755)
        os.chmod(extbody, 0o755)
        econf = os.path.join(work, "extbody.conf")
        put(econf, "")
        sieve = os.path.join(work, "sieve")
        os.mkdir(sieve)
        put(os.path.join(sieve, "extbody.sieve"), 'require "vnd.dovecot.filter";\nfilter "extbody-exec" '
            '["-c", "%s", "-e", "%s"];\nkeep;\n' % (econf, extbody))
        put(os.path.join(sieve, "cat.sieve"), 'require "vnd.dovecot.filter";\nfilter "copy";\nkeep;\n')
        put(os.path.join(sieve, "socket.sieve"), 'require "vnd.dovecot.filter";\nfilter "extbody";\nkeep;\n')
        # the daemon's socket where Pigeonhole looks: sieve_filter_socket_dir,
        # relative to base_dir (WORK/run), WORK/extbody-run/extbody, mode 0777
        # (milter_umask 000) for the LMTP process running as nobody
        sockdir = os.path.join(work, "extbody-run")
        os.mkdir(sockdir, 0o755)
        dconf = os.path.join(work, "daemon.conf")
        # the one door this run uses; the HTTP listener's default (under
        # /run/extbody, the system's) not opened
        http_sock = os.path.join(sockdir, "http.sock")
        put(dconf, "[extbody]\nfetch = off\nmilter_umask = 000\nhttp_socket = unix:%s\n"
            "dovecot_filter_socket = %s/extbody\n" % (http_sock, sockdir))
        daemon = subprocess.Popen([daemon_bin, "-c", dconf, "-p", "unix:" + os.path.join(work, "milter.sock")],
                                  stderr=subprocess.DEVNULL)
        for _ in range(600):
            if os.path.exists(os.path.join(sockdir, "extbody")) or daemon.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(os.path.join(sockdir, "extbody")):
            raise RuntimeError("the daemon did not open %s/extbody" % sockdir)
        home = os.path.join(work, "home")
        os.mkdir(home)
        shutil.chown(home, "nobody", "nogroup")
        users = os.path.join(work, "users")
        lines = []
        for r in range(args.repeat):
            lines.append("none%d::65534:65534::%s/none%d::" % (r, home, r))
            lines.append("cat%d::65534:65534::%s/cat%d::userdb_sieve_before=%s/cat.sieve" % (r, home, r, sieve))
            lines.append("extbody%d::65534:65534::%s/extbody%d::userdb_sieve_before=%s/extbody.sieve" % (r, home, r, sieve))
            lines.append("socket%d::65534:65534::%s/socket%d::userdb_sieve_before=%s/socket.sieve" % (r, home, r, sieve))
        for f in REST_FRACTIONS:
            lines.append("base%s::65534:65534::%s/base%s::" % (f, home, f))
            for r in range(args.repeat):
                for kind in REST_KINDS:
                    lines.append("%s%s_%d::65534:65534::%s/%s%s_%d::" % (kind, f, r, home, kind, f, r))
        put(users, "\n".join(lines) + "\n")
        port = free_port()
        conf = os.path.join(work, "dovecot.conf")
        put(conf, """base_dir = {w}/run
state_dir = {w}/state
log_path = {w}/dovecot.log
protocols = imap lmtp
listen = 127.0.0.1
ssl = no
first_valid_uid = 1
mail_location = mdbox:~/mail
passdb {{
  driver = static
  args = nopassword=y
}}
userdb {{
  driver = passwd-file
  args = {users}
}}
service imap-login {{
  inet_listener imap {{
    port = 0
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service pop3-login {{
  inet_listener pop3 {{
    port = 0
  }}
}}
service submission-login {{
  inet_listener submission {{
    port = 0
  }}
}}
service lmtp {{
  inet_listener lmtp {{
    address = 127.0.0.1
    port = {port}
  }}
}}
lmtp_add_received_header = no
protocol lmtp {{
  mail_plugins = sieve
}}
plugin {{
  sieve_plugins = sieve_extprograms
  sieve_global_extensions = +vnd.dovecot.filter
  sieve_filter_bin_dir = {bin}
  sieve_filter_socket_dir = ../extbody-run
  sieve_filter_exec_timeout = 130s
}}
""".format(w=work, users=users, port=port, bin=bindir))
        os.mkdir(os.path.join(work, "state"))
        dovecot = subprocess.Popen(["dovecot", "-F", "-c", conf])
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        for s in ("extbody.sieve", "cat.sieve", "socket.sieve"):
            subprocess.run(["sievec", "-c", conf, os.path.join(sieve, s)], check=True)

        corpus = os.path.join(work, "corpus")
        subprocess.run([sys.executable, os.path.join(HERE, "gen-corpus.py"), "-q", "--count", str(args.count),
                        "--ext-fraction", "0.1", "--format", "dir", "--eol", "crlf", "--out", corpus], check=True)
        msgs = []
        for name in sorted(os.listdir(corpus)):
            with open(os.path.join(corpus, name), "rb") as f:
                msgs.append(f.read())
        mb = sum(len(m) for m in msgs) / 1e6
        print("%d messages, %.1f MB, one in ten with external-body parts; %d LMTP sessions; median of %d runs"
              % (len(msgs), mb, args.sessions, args.repeat))

        def deliver(user):
            def session(part):
                c = smtplib.LMTP("127.0.0.1", port, local_hostname=HELO)
                for m in part:
                    if c.sendmail("bench@example.org", [user], m):
                        raise RuntimeError("refused")
                c.quit()
            parts = [msgs[i::args.sessions] for i in range(args.sessions)]
            t = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(args.sessions) as ex:
                list(ex.map(session, parts))
            return len(msgs) / (time.monotonic() - t)

        def imap(user):
            return imaplib.IMAP4_stream("doveadm -c '%s' exec imap -u '%s' 2>/dev/null" % (conf, user))

        def load(user, corpus_msgs):
            c = imap(user)
            for m in corpus_msgs:
                c.append("INBOX", "(\\Seen)", None, m)
            c.logout()

        def copy_user(src, dst):
            shutil.rmtree(os.path.join(home, dst), ignore_errors=True)
            subprocess.run(["cp", "-a", os.path.join(home, src), os.path.join(home, dst)], check=True)

        def drop_user(user):
            shutil.rmtree(os.path.join(home, user), ignore_errors=True)

        def fetch_all(user, n):
            t = time.monotonic()
            c = imap(user)
            c.select("INBOX")
            c.uid("FETCH", "1:*", "(UID FLAGS INTERNALDATE BODY.PEEK[])")
            c.logout()
            return n / (time.monotonic() - t)

        def fetch_all_process(user, n):
            # the floor again, from a python3 started for it, as the tool is
            code = ("import imaplib, sys\n"
                    "c = imaplib.IMAP4_stream(\"doveadm -c '%s' exec imap -u '%s' 2>/dev/null\" % tuple(sys.argv[1:3]))\n"
                    "c.select('INBOX')\n"
                    "c.uid('FETCH', '1:*', '(UID FLAGS INTERNALDATE BODY.PEEK[])')\n"
                    "c.logout()\n")
            t = time.monotonic()
            subprocess.run([sys.executable, "-c", code, conf, user], check=True)
            return n / (time.monotonic() - t)

        def prime(user):
            c = imap(user)
            c.select("INBOX")
            c.uid("FETCH", "1:*", "(UID FLAGS BODYSTRUCTURE)")
            c.logout()

        seen_lines = {}

        def tool(user, n, how):
            t = time.monotonic()
            p = subprocess.run([sys.executable, os.path.join(TOP, "filters", "dovecot", "extbody-imap-rewrite"),
                                "-c", econf, "-e", extbody, "-u", user, "--dovecot-config", conf] + how,
                               check=True, stdout=subprocess.PIPE)
            v = n / (time.monotonic() - t)
            for line in p.stdout.decode(errors="replace").splitlines():   # the count lines
                if "INBOX:" in line:
                    seen_lines.setdefault(user.rsplit("_", 1)[0], line.split("INBOX: ")[1])
            return v

        rows = {"LMTP, no Sieve script": [], "LMTP, Sieve filter through cat": [],
                "LMTP, Sieve filter through extbody per message": [],
                "LMTP, Sieve filter through the daemon's socket": []}
        names = list(rows)
        rest = {}
        # one message to each delivery user first: its mailbox exists before
        # the sessions deliver at once (concurrent deliveries creating the
        # same new mdbox can deadlock on its index locks: Dovecot panics, the
        # LMTP session drops)
        if not args.rest_only:
            for r in range(args.repeat):
                for kind in ("none", "cat", "extbody", "socket"):
                    c = smtplib.LMTP("127.0.0.1", port, local_hostname=HELO)
                    c.sendmail("bench@example.org", ["%s%d" % (kind, r)], msgs[0])
                    c.quit()
            for r in range(args.repeat):
                rows[names[0]].append(deliver("none%d" % r))
                rows[names[1]].append(deliver("cat%d" % r))
                rows[names[2]].append(deliver("extbody%d" % r))
                rows[names[3]].append(deliver("socket%d" % r))
            base = statistics.median(rows[names[0]])
            for n in names:
                v = statistics.median(rows[n])
                print("  %-62s %8.1f messages/s  x%.2f slower  (%.2fx of %s)" % (n, v, base / v, v / base, names[0]))
        if not args.delivery_only:
            for f, frac in REST_FRACTIONS.items():
                rcorpus = os.path.join(work, "corpus" + f)
                subprocess.run([sys.executable, os.path.join(HERE, "gen-corpus.py"), "-q", "--count", str(args.count),
                                "--ext-fraction", str(frac), "--format", "dir", "--eol", "crlf", "--out", rcorpus],
                               check=True)
                rmsgs = []
                for name in sorted(os.listdir(rcorpus)):
                    with open(os.path.join(rcorpus, name), "rb") as fh:
                        rmsgs.append(fh.read())
                n = len(rmsgs)
                load("base" + f, rmsgs)
                label = "%s%% with references" % ("5" if f == "5" else "0.1")
                rrows = {"IMAP, FETCH of every message (the floor)": [],
                         "the same from a new python3 process": [],
                         "extbody-imap-rewrite, one process a batch, first run": [],
                         "extbody-imap-rewrite, one process a batch, BODYSTRUCTURE cached": [],
                         "extbody-imap-rewrite, daemon socket, first run": [],
                         "extbody-imap-rewrite, daemon socket, BODYSTRUCTURE cached": []}
                rn = list(rrows)
                for r in range(args.repeat):
                    u = {kind: "%s%s_%d" % (kind, f, r) for kind in REST_KINDS}
                    for kind in ("fetch", "proc1", "daemon1"):
                        copy_user("base" + f, u[kind])
                    rrows[rn[0]].append(fetch_all(u["fetch"], n))
                    rrows[rn[1]].append(fetch_all_process(u["fetch"], n))
                    rrows[rn[2]].append(tool(u["proc1"], n, ["--no-daemon"]))
                    rrows[rn[4]].append(tool(u["daemon1"], n, ["-s", "unix:" + http_sock]))
                    for kind in ("fetch", "proc1", "daemon1"):
                        drop_user(u[kind])
                    for kind in ("procc", "daemonc"):
                        copy_user("base" + f, u[kind])
                        prime(u[kind])
                    rrows[rn[3]].append(tool(u["procc"], n, ["--no-daemon"]))
                    rrows[rn[5]].append(tool(u["daemonc"], n, ["-s", "unix:" + http_sock]))
                    for kind in ("procc", "daemonc"):
                        drop_user(u[kind])
                drop_user("base" + f)
                rest[label] = (n, sum(len(m) for m in rmsgs) / 1e6, rrows)
            for label, (n, size, rrows) in rest.items():
                print("at rest, %d messages, %.1f MB, %s:" % (n, size, label))
                base = statistics.median(rrows[list(rrows)[0]])
                for name, vals in rrows.items():
                    v = statistics.median(vals)
                    print("  %-62s %8.1f messages/s  %.2fx the floor's time" % (name, v, base / v))
            for user, line in sorted(seen_lines.items()):
                print("  %s: %s" % (user, line))
        print("daemon %s: peak memory (VmHWM) %d KB after %d deliveries through its Dovecot socket"
              % (daemon_bin, vm_hwm(daemon.pid), (len(msgs) + 1) * args.repeat))
        # a failed filter is logged by Pigeonhole (and the message kept as it came)
        with open(os.path.join(work, "dovecot.log"), errors="replace") as f:
            bad = [line for line in f if "filter" in line and ("rror" in line or "ailed" in line)]
            failed = len(bad)
            sys.stdout.write("".join(bad[:5]))
        print("Dovecot log lines about a failed filter: %d" % failed)
    finally:
        if dovecot:
            dovecot.terminate()
            dovecot.wait()
        if daemon and daemon.poll() is None:
            daemon.terminate()
            daemon.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
