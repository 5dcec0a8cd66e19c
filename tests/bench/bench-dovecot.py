#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Dovecot benchmark (root: it runs a private Dovecot on 127.0.0.1; needs
dovecot-core, dovecot-imapd, dovecot-lmtpd and dovecot-sieve).

At delivery: gen-corpus.py messages (one in ten with external-body parts)
delivered over LMTP from --sessions concurrent sessions into mdbox, measured in
the same run for a user with no Sieve script, one whose sieve_before filters
through `cat` (the floor Pigeonhole's filter command costs) and one whose
sieve_before filters through extbody (filters/dovecot/extbody-sieve-filter).

At rest: the same messages in an mdbox INBOX, read over IMAP (one FETCH of
every message: the floor), passed through extbody-imap-rewrite with a
stand-in that copies the message (the tool's own cost: a process per message,
nothing to store), and rewritten by extbody-imap-rewrite with extbody.

Messages per second, the median of --repeat runs, and the slowdown against
the first row of each part. Not a test: nothing asserts a speed.

    python3 tests/bench/bench-dovecot.py [--build build] [--count 1000] [--sessions 4] [--repeat 3]
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

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.join(HERE, "..", "..")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


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
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-dovecot.py: needs root (it runs a private Dovecot)")
    work = tempfile.mkdtemp(prefix="extbody-bench-dovecot-")
    os.chmod(work, 0o755)
    dovecot = None
    try:
        bindir = os.path.join(work, "bin")
        os.mkdir(bindir, 0o755)
        shutil.copy(os.path.join(TOP, "filters", "dovecot", "extbody-sieve-filter"), os.path.join(bindir, "extbody"))
        extbody = os.path.join(bindir, "extbody-real")
        shutil.copy(os.path.join(args.build, "src", "extbody"), extbody)
        put(os.path.join(bindir, "copy"), "#!/bin/sh\nexec cat\n", 0o755)
        os.chmod(os.path.join(bindir, "extbody"), 0o755)
        os.chmod(extbody, 0o755)
        econf = os.path.join(work, "extbody.conf")
        put(econf, "")
        sieve = os.path.join(work, "sieve")
        os.mkdir(sieve)
        put(os.path.join(sieve, "extbody.sieve"), 'require "vnd.dovecot.filter";\nfilter "extbody" '
            '["-c", "%s", "-e", "%s"];\nkeep;\n' % (econf, extbody))
        put(os.path.join(sieve, "cat.sieve"), 'require "vnd.dovecot.filter";\nfilter "copy";\nkeep;\n')
        home = os.path.join(work, "home")
        os.mkdir(home)
        shutil.chown(home, "nobody", "nogroup")
        users = os.path.join(work, "users")
        lines = []
        for r in range(args.repeat):
            lines.append("none%d::65534:65534::%s/none%d::" % (r, home, r))
            lines.append("cat%d::65534:65534::%s/cat%d::userdb_sieve_before=%s/cat.sieve" % (r, home, r, sieve))
            lines.append("extbody%d::65534:65534::%s/extbody%d::userdb_sieve_before=%s/extbody.sieve" % (r, home, r, sieve))
            for kind in ("fetch", "copy", "rest"):
                lines.append("%s%d::65534:65534::%s/%s%d::" % (kind, r, home, kind, r))
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
        for s in ("extbody.sieve", "cat.sieve"):
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
                c = smtplib.LMTP("127.0.0.1", port)
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

        def load(user):
            c = imap(user)
            for m in msgs:
                c.append("INBOX", "(\\Seen)", None, m)
            c.logout()

        def fetch_all(user):
            t = time.monotonic()
            c = imap(user)
            c.select("INBOX")
            c.uid("FETCH", "1:*", "(UID FLAGS INTERNALDATE BODY.PEEK[])")
            c.logout()
            return len(msgs) / (time.monotonic() - t)

        def tool(user, eb):
            t = time.monotonic()
            subprocess.run([sys.executable, os.path.join(TOP, "filters", "dovecot", "extbody-imap-rewrite"),
                            "-c", econf, "-e", eb, "-u", user, "--dovecot-config", conf],
                           check=True, stderr=subprocess.DEVNULL)
            return len(msgs) / (time.monotonic() - t)

        rows = {"LMTP, no Sieve script": [], "LMTP, Sieve filter through cat": [],
                "LMTP, Sieve filter through extbody": [],
                "IMAP, FETCH of every message": [], "extbody-imap-rewrite, copying stand-in": [],
                "extbody-imap-rewrite, extbody": []}
        names = list(rows)
        for r in range(args.repeat):
            rows[names[0]].append(deliver("none%d" % r))
            rows[names[1]].append(deliver("cat%d" % r))
            rows[names[2]].append(deliver("extbody%d" % r))
            for kind in ("fetch", "copy", "rest"):
                load("%s%d" % (kind, r))
            rows[names[3]].append(fetch_all("fetch%d" % r))
            rows[names[4]].append(tool("copy%d" % r, os.path.join(bindir, "copy")))
            rows[names[5]].append(tool("rest%d" % r, extbody))
        for part in (names[:3], names[3:]):
            base = statistics.median(rows[part[0]])
            for n in part:
                v = statistics.median(rows[n])
                print("  %-42s %8.1f messages/s  x%.2f slower" % (n, v, base / v))
    finally:
        if dovecot:
            dovecot.terminate()
            dovecot.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
