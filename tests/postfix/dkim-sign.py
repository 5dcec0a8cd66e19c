#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Sign a message with DKIM before it is sent to the test Postfix, as the
sender's domain would (run as /usr/bin/python3, with Debian's python3-dkim).

    dkim-sign.py FILE PRIVATE_KEY SELECTOR DOMAIN > SIGNED

PRIVATE_KEY is opendkim-genkey's SELECTOR.private. Writes FILE's bytes with a
DKIM-Signature field on top (rsa-sha256, relaxed/relaxed: the most lenient
canonicalization, so that a body that fails it was really changed; From, To,
Subject, Message-ID, MIME-Version and Content-Type signed; no l=). FILE keeps
its own line ends; the field's lines end in CR LF."""
import sys

import dkim


def main():
    msg = open(sys.argv[1], "rb").read()
    key = open(sys.argv[2], "rb").read()
    sig = dkim.sign(msg, sys.argv[3].encode(), sys.argv[4].encode(), key,
                    canonicalize=(b"relaxed", b"relaxed"),
                    include_headers=[b"from", b"to", b"subject", b"message-id",
                                     b"mime-version", b"content-type"])
    if not sig.startswith(b"DKIM-Signature: "):
        print("dkim.sign gave no DKIM-Signature field", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(sig + msg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
