#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Check the DKIM-Signature of a delivered message against a public key,
without DNS (run as /usr/bin/python3, with Debian's python3-dkim).

    dkim-check.py FILE KEY_TXT [BODY_FILE]

FILE is the delivered message (LF or CRLF line ends), KEY_TXT the zone file
line opendkim-genkey wrote (SELECTOR.txt). Prints:

    d=DOMAIN s=SELECTOR c=CANONICALIZATION
    h=THE SIGNED HEADER FIELDS (as in the signature, lower case)
    bh=THE SIGNATURE'S BODY HASH
    body-hash=SHA-256 (base64) of FILE's body, canonicalized as c= says
    body-hash-other=the same of BODY_FILE's body (when given: the message as
                    it was sent, to tell which body a signer saw)
    verify=ok | verify=fail

The body hashes are computed here (RFC 6376 3.4.3 simple, 3.4.4 relaxed),
apart from dkimpy, which verifies the whole signature (headers and body)."""
import base64
import hashlib
import re
import sys

import dkim


def crlf(data):
    return re.sub(rb"\r?\n", b"\r\n", data)


def body_of(msg):
    i = msg.find(b"\r\n\r\n")
    return b"" if i < 0 else msg[i + 4:]


def canon_body(body, how):
    if how == "relaxed":
        lines = body.split(b"\r\n")
        lines = [re.sub(rb"[ \t]+", b" ", l).rstrip(b" \t") for l in lines]
        body = b"\r\n".join(lines)
    # both: no empty lines at the end; simple keeps one CRLF for an empty body
    body = re.sub(rb"(\r\n)*$", b"", body)
    if body or how == "simple":
        body += b"\r\n"
    return body


def body_hash(msg, how):
    return base64.b64encode(hashlib.sha256(canon_body(body_of(msg), how)).digest()).decode()


def tags(sig):
    value = sig.split(b":", 1)[1]
    value = re.sub(rb"\s+", b"", value)
    out = {}
    for item in value.split(b";"):
        if b"=" in item:
            k, v = item.split(b"=", 1)
            out[k.decode()] = v.decode()
    return out


def main():
    msg = crlf(open(sys.argv[1], "rb").read())
    txt = open(sys.argv[2], "rb").read()
    record = b"".join(re.findall(rb'"([^"]*)"', txt))
    head = msg.split(b"\r\n\r\n", 1)[0]
    m = re.search(rb"^DKIM-Signature:.*?(?=\r\n[^ \t])", head, re.M | re.S | re.I)
    if not m:
        print("no DKIM-Signature")
        return 1
    t = tags(m.group(0))
    body_canon = t.get("c", "simple/simple").split("/")
    body_canon = body_canon[1] if len(body_canon) > 1 else "simple"
    print("d=%s s=%s c=%s" % (t.get("d"), t.get("s"), t.get("c", "simple/simple")))
    print("h=%s" % t.get("h", "").lower())
    print("bh=%s" % t.get("bh"))
    print("body-hash=%s" % body_hash(msg, body_canon))
    if len(sys.argv) > 3:
        other = crlf(open(sys.argv[3], "rb").read())
        print("body-hash-other=%s" % body_hash(other, body_canon))

    def dnsfunc(name, timeout=5):
        want = ("%s._domainkey.%s." % (t.get("s"), t.get("d"))).encode()
        return record if name in (want, want[:-1]) else None

    ok = dkim.verify(msg, dnsfunc=dnsfunc)
    print("verify=%s" % ("ok" if ok else "fail"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
