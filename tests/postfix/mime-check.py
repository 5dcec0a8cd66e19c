#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What a test needs to know of a message, read with the standard library's
email package (run as /usr/bin/python3).

    mime-check.py leaves FILE      # one line per leaf part: TYPE SHA256 LENGTH
                                   # (decoded bytes; message/external-body
                                   # parts are leaves here)
    mime-check.py reference FILE   # the first message/external-body part:
                                   # access-type=, url= (the words joined),
                                   # size=, maxword= (the longest word of a
                                   # quoted string in its Content-Type), and of its phantom
                                   # header type=, md5=, cte=; exit 1 if none
    mime-check.py tree FILE        # one line per entity, two spaces of indent
                                   # per level: its content type
                                   # (message/external-body a leaf)
"""
import email
import email.utils
import hashlib
import re
import sys


def leaves(msg):
    for part in msg.walk():
        t = part.get_content_type()
        if t == "message/external-body":
            yield part
        elif not part.is_multipart():
            yield part


def tree(part, depth=0):
    t = part.get_content_type()
    print("%s%s" % ("  " * depth, t))
    if t != "message/external-body" and part.is_multipart():
        for sub in part.get_payload():
            tree(sub, depth + 1)


def main():
    mode, path = sys.argv[1], sys.argv[2]
    msg = email.message_from_bytes(open(path, "rb").read())
    if mode == "tree":
        tree(msg)
        return 0
    if mode == "leaves":
        for part in leaves(msg):
            if part.get_content_type() == "message/external-body":
                print("message/external-body - -")
                continue
            data = part.get_payload(decode=True) or b""
            print("%s %s %d" % (part.get_content_type(), hashlib.sha256(data).hexdigest(), len(data)))
        return 0
    for part in msg.walk():
        if part.get_content_type() != "message/external-body":
            continue
        raw = str(part.get("Content-Type", ""))
        # RFC 2017 3.1: the URL is written as a quoted string folded into
        # words; a word is what lies between folds
        words = [len(w) for q in re.findall(r'"([^"]*)"', raw) for w in q.split()]
        print("access-type=%s" % (part.get_param("access-type") or ""))
        print("url=%s" % "".join((email.utils.collapse_rfc2231_value(part.get_param("url") or "") or "").split()))
        print("size=%s" % (part.get_param("size") or ""))
        print("maxword=%d" % (max(words) if words else 0))
        inner = part.get_payload()
        inner = inner[0] if isinstance(inner, list) and inner else None
        if inner is not None:
            print("type=%s" % inner.get_content_type())
            print("md5=%s" % (inner.get("Content-MD5") or "").strip())
            print("cte=%s" % (inner.get("Content-Transfer-Encoding") or "").strip())
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
