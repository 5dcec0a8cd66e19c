#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""One SMTP transaction to the test Sendmail, step by step, saying where it ended.

    smtp-steps.py PORT FILE [PID]

Sends the bytes of FILE from a@test.example to root@test.example over one
session on 127.0.0.1:PORT. With PID, the process PID (the milter daemon) is
killed (SIGKILL) once DATA was answered 354 and gone before the message is
sent, so the MTA meets a milter that died in the middle of the transaction.
Prints one line: the step that ended it (MAIL, RCPT, DATA or END, the end of
data) and the server's reply, e.g. "END 250 2.0.0 ... Message accepted" or
"MAIL 451 4.3.2 Please try again later"; exits 0 whatever the reply.
"""
import os
import signal
import smtplib
import sys
import time

# The name said in EHLO/LHLO. smtplib would find one with socket.getfqdn() and
# gethostbyname(gethostname()): DNS queries to the machine's resolver (outside
# the machine) wherever /etc/hosts lacks the host name, as in a bare Debian
# chroot, where one in a few waited 5 s for its answer. The address literal is
# what smtplib fell back to here.
HELO = "[127.0.0.1]"


def gone(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            return any(line.startswith("State:") and "Z" in line.split()[1] for line in f)
    except OSError:   # gone between the open and the read: ESRCH, not ENOENT
        return True


def main():
    port, path = int(sys.argv[1]), sys.argv[2]
    pid = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    data = open(path, "rb").read()
    s = smtplib.SMTP("127.0.0.1", port, local_hostname=HELO, timeout=120)
    try:
        s.ehlo()
        code, text = s.mail("a@test.example")
        if code != 250:
            print("MAIL %d %s" % (code, text.decode()))
            return
        code, text = s.rcpt("root@test.example")
        if code not in (250, 251):
            print("RCPT %d %s" % (code, text.decode()))
            return
        s.putcmd("data")
        code, text = s.getreply()
        if code != 354:
            print("DATA %d %s" % (code, text.decode()))
            return
        if pid:
            os.kill(pid, signal.SIGKILL)
            for _ in range(2000):
                if gone(pid):
                    break
                time.sleep(0.005)
        q = smtplib.quotedata(data.decode("latin-1")).encode("latin-1")
        if not q.endswith(b"\r\n"):
            q += b"\r\n"
        s.send(q + b".\r\n")
        code, text = s.getreply()
        print("END %d %s" % (code, text.decode()))
    finally:
        try:
            s.quit()
        except smtplib.SMTPException:
            pass


main()
