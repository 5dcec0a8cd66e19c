#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Send mail to the test Exim: one message, or N messages from K concurrent sessions.

    send.py PORT FILE [RCPT]           # one message, the bytes of FILE, to RCPT
                                       # (default b@test.example)
    send.py PORT --burst N K [RCPT]    # N messages from K threads, each with a
                                       # data: reference and Message-ID <burst-I@test.example>,
                                       # each session sending its share one after another

Prints the number of messages accepted; exits 1 if any was refused.
"""
import smtplib
import sys
import threading

# The name said in EHLO/LHLO. smtplib would find one with socket.getfqdn() and
# gethostbyname(gethostname()): DNS queries to the machine's resolver (outside
# the machine) wherever /etc/hosts lacks the host name, as in a bare Debian
# chroot, where one in a few waited 5 s for its answer. The address literal is
# what smtplib fell back to here.
HELO = "[127.0.0.1]"


def burst_message(i):
    return ("From: a@test.example\r\nTo: b@test.example\r\nSubject: burst %d\r\n"
            "Message-ID: <burst-%d@test.example>\r\nMIME-Version: 1.0\r\n"
            "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
            "Content-Type: message/external-body; access-type=URL; URL=\"data:,burst%%20%d\"\r\n\r\n"
            "Content-Type: text/plain\r\n\r\n--b--\r\n" % (i, i, i)).encode()


def main():
    port = int(sys.argv[1])
    if sys.argv[2] != "--burst":
        rcpt = sys.argv[3] if len(sys.argv) > 3 else "b@test.example"
        s = smtplib.SMTP("127.0.0.1", port, local_hostname=HELO, timeout=60)
        try:
            s.sendmail("a@test.example", [rcpt], open(sys.argv[2], "rb").read())
        finally:
            s.quit()
        print(1)
        return
    n, k = int(sys.argv[3]), int(sys.argv[4])
    rcpt = sys.argv[5] if len(sys.argv) > 5 else "b@test.example"
    ok = [0]
    bad = []
    lock = threading.Lock()

    def worker(w):
        # one SMTP session per thread, its messages one after another (RSET
        # between them, as smtplib does on a refusal)
        try:
            s = smtplib.SMTP("127.0.0.1", port, local_hostname=HELO, timeout=120)
        except Exception as e:   # noqa: BLE001 - report every failure
            with lock:
                bad.append("session %d: %s" % (w, e))
            return
        try:
            for i in range(w, n, k):
                try:
                    s.sendmail("a@test.example", [rcpt], burst_message(i))
                    with lock:
                        ok[0] += 1
                except Exception as e:   # noqa: BLE001
                    with lock:
                        bad.append("%d: %s" % (i, e))
        finally:
            try:
                s.quit()
            except Exception:   # noqa: BLE001
                pass

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(k)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(ok[0])
    for b in bad:
        print(b, file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
