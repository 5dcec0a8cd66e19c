#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Dovecot tests' client side (tests/dovecot): LMTP and IMAP with the
Python standard library.

  dovecot-client.py lmtp PORT SENDER RECIPIENT FILE     deliver FILE over LMTP
  dovecot-client.py lmtp-many PORT SENDER RECIPIENT S N  S LMTP sessions at once, N
                                                         messages each, message K of
                                                         session J with the Message-ID
                                                         <J.K@test.example> and a data:
                                                         reference to "message J.K"
  dovecot-client.py load DOVECOT_CONF USER DIR           APPEND every *.eml of DIR
                                                         to INBOX, message N with
                                                         flags and a date from N
  dovecot-client.py dump DOVECOT_CONF USER               every message of INBOX, one
                                                         line: uid|flags|date|msgid|base64
  dovecot-client.py expect MANIFEST                      per gen-corpus.py message with
                                                         data: references to resolve:
                                                         msgid|sha256,sha256...

IMAP goes through `doveadm -c DOVECOT_CONF exec imap -u USER` (PREAUTH on
standard input and output); flags are sorted, \\Recent left out.
"""
import base64
import imaplib
import json
import os
import re
import smtplib
import sys

# The name said in EHLO/LHLO. smtplib would find one with socket.getfqdn() and
# gethostbyname(gethostname()): DNS queries to the machine's resolver (outside
# the machine) wherever /etc/hosts lacks the host name, as in a bare Debian
# chroot, where one in a few waited 5 s for its answer. The address literal is
# what smtplib fell back to here.
HELO = "[127.0.0.1]"


def imap(conf, user):
    return imaplib.IMAP4_stream("doveadm -c '%s' exec imap -u '%s' 2>/dev/null" % (conf, user))


def flags_for(n):
    # every kind of flag and keyword, and none
    return ["()", "(\\Seen)", "(\\Seen \\Flagged)", "(\\Answered $Label1)",
            "(\\Draft work)", "(\\Seen \\Answered \\Flagged $Forwarded)"][n % 6]


def date_for(n):
    return '"%02d-%s-20%02d %02d:%02d:%02d %s"' % (
        1 + n % 28, ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][n % 12],
        10 + n % 15, n % 24, (7 * n) % 60, (13 * n) % 60, ["+0000", "+0200", "-0500"][n % 3])


def lmtp_many(port, sender, rcpt, sessions, per):
    import threading
    failed = []

    def session(j):
        try:
            c = smtplib.LMTP("127.0.0.1", port, local_hostname=HELO)
            for k in range(per):
                msg = ("From: a@example.org\r\nTo: %s\r\nSubject: %d.%d\r\n"
                       "Message-ID: <%d.%d@test.example>\r\nMIME-Version: 1.0\r\n"
                       "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
                       "Content-Type: message/external-body; access-type=URL; "
                       "URL=\"data:,message%%20%d.%d\"\r\n\r\nContent-Type: text/plain\r\n\r\n"
                       "--b--\r\n" % (rcpt, j, k, j, k, j, k)).encode()
                if c.sendmail(sender, [rcpt], msg):
                    failed.append((j, k))
            c.quit()
        except Exception as e:  # noqa: BLE001 - any failure fails the run
            failed.append((j, str(e)))

    threads = [threading.Thread(target=session, args=(j,)) for j in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        print("failed: %s" % failed, file=sys.stderr)
    return 1 if failed else 0


def main():
    cmd = sys.argv[1]
    if cmd == "lmtp-many":
        port, sender, rcpt, sessions, per = sys.argv[2:7]
        return lmtp_many(int(port), sender, rcpt, int(sessions), int(per))
    if cmd == "lmtp":
        port, sender, rcpt, path = sys.argv[2:6]
        with open(path, "rb") as f:
            msg = f.read()
        c = smtplib.LMTP("127.0.0.1", int(port), local_hostname=HELO)
        refused = c.sendmail(sender, [rcpt], msg)
        c.quit()
        return 1 if refused else 0
    if cmd == "load":
        conf, user, d = sys.argv[2:5]
        c = imap(conf, user)
        for name in sorted(os.listdir(d)):
            if not name.endswith(".eml"):
                continue
            n = int(re.sub(r"\D", "", name))
            with open(os.path.join(d, name), "rb") as f:
                msg = f.read().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
            typ, data = c.append("INBOX", flags_for(n), date_for(n), msg)
            if typ != "OK":
                print("APPEND %s: %s" % (name, data), file=sys.stderr)
                return 1
        c.logout()
        return 0
    if cmd == "dump":
        conf, user = sys.argv[2:4]
        c = imap(conf, user)
        c.select("INBOX", readonly=True)
        typ, data = c.uid("FETCH", "1:*", "(UID FLAGS INTERNALDATE BODY.PEEK[])")
        for item in data:
            if not isinstance(item, tuple):
                continue
            head = item[0].decode()
            uid = re.search(r"UID (\d+)", head).group(1)
            flags = re.search(r"FLAGS \(([^)]*)\)", head).group(1).split()
            flags = " ".join(sorted(f for f in flags if f != "\\Recent"))
            date = re.search(r'INTERNALDATE "([^"]*)"', head).group(1)
            m = re.search(rb"^Message-ID:\s*(<[^>\r\n]*>)", item[1], re.I | re.M)
            msgid = m.group(1).decode() if m else ""
            print("|".join([uid, flags, date, msgid, base64.b64encode(item[1]).decode()]))
        c.logout()
        return 0
    if cmd == "expect":
        with open(sys.argv[2], encoding="utf-8") as f:
            for line in f:
                m = json.loads(line)
                shas = [e["content_sha256"] for e in m["ext"]
                        if e["kind"].startswith("data") and e["expect"] == "resolve"]
                if shas:
                    print("%s|%s" % (m["message_id"], ",".join(shas)))
        return 0
    print("usage: see the comment at the top", file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main())
