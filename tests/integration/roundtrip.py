#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The externalize round trip over a generated mailbox (run by test-roundtrip).

    roundtrip.py --extbody PATH --corpus MBOX --work DIR --store DIR --base-url URL [--fallback]

1. `extbody externalize --mbox` (externalize_min_size = 20K, the directory
   store DIR served under URL by the caller's web server) on a copy of MBOX;
2. a second `extbody externalize --mbox` on a copy of the result changes
   nothing (byte-identical mbox);
3. `extbody rewrite --mbox --fetch --allow-network 127.0.0.1/32` on a copy of
   the result brings every part back:
   - a message with nothing externalized is byte for byte the original, after
     the externalize and after the rewrite;
   - any other one has the original's MIME structure, the original's header
     fields everywhere (X-Extbody trace fields apart) but in the restored
     parts, whose Content-Type (type and parameters), Content-Disposition,
     Content-ID and Content-Description are the original's, which have every
     field they had (Content-Location, Content-Language, X-Attachment-Id...:
     the corpus gets two messages of its own with such parts), and the same
     decoded bytes in every leaf; its top-level header is byte for byte the
     original's once the trace fields are taken out;
   - every reference written has its URL in quoted words of at most 40
     characters, a size, a Content-MD5; every object in the store is named
     by the SHA-256 of its bytes, and each was stored once.
Every failure is printed; the exit status is 1 if there was any, else 0.
Parsing uses only the standard library's email package (/usr/bin/python3).
"""
import argparse
import email
import email.utils
import email.policy
import hashlib
import os
import re
import shutil
import subprocess
import sys

failures = []


def fail(msg):
    failures.append(msg)
    if len(failures) <= 40:
        print("FAIL: " + msg)


def split_mbox(data):
    """The messages of an mbox as (From_ line, message bytes), split at every
    line that starts with "From " (an mboxrd writer quotes the others)."""
    starts = [m.start() for m in re.finditer(rb"^From ", data, re.M)]
    out = []
    for i, s in enumerate(starts):
        e = starts[i + 1] if i + 1 < len(starts) else len(data)
        chunk = data[s:e]
        nl = chunk.index(b"\n") + 1
        out.append((chunk[:nl], chunk[nl:]))
    return out


def top_header(msg_bytes):
    end = msg_bytes.find(b"\n\n")
    return msg_bytes[:end + 1] if end >= 0 else msg_bytes


def without_trace(header):
    """A raw header without its X-Extbody and X-Extbody-Resolved fields
    (continuation lines included)."""
    out, skip = [], False
    for line in header.split(b"\n"):
        if line[:1] in (b" ", b"\t"):
            if not skip:
                out.append(line)
            continue
        skip = line.lower().startswith(b"x-extbody:") or line.lower().startswith(b"x-extbody-resolved:")
        if not skip:
            out.append(line)
    return b"\n".join(out)


def without_content(header):
    """A raw header without its Content-* fields (continuation lines included)."""
    out, skip = [], False
    for line in header.split(b"\n"):
        if line[:1] in (b" ", b"\t"):
            if not skip:
                out.append(line)
            continue
        skip = line.lower().startswith(b"content-")
        if not skip:
            out.append(line)
    return b"\n".join(out)


def fields(part):
    return [(k.lower(), " ".join(str(v).split())) for k, v in part.items()
            if k.lower() not in ("x-extbody", "x-extbody-resolved")]


def field(part, name):
    v = part.get(name)
    return None if v is None else " ".join(str(v).split())


def is_reference(part):
    return part.get_content_type() == "message/external-body"


def check_reference(where, ref):
    """The reference as the design writes it: URL words <= 40 characters, a
    size, a phantom header with a Content-MD5. Returns the URL."""
    raw = ref.get("Content-Type", "")
    for m in re.finditer(r'"([^"]*)"', str(raw)):
        for w in m.group(1).split():
            if len(w) > 40:
                fail("%s: a word of %d characters in the reference's Content-Type" % (where, len(w)))
    url = email.utils.collapse_rfc2231_value(ref.get_param("url") or "")
    if ref.get_param("access-type", "").lower() != "url" or not url:
        fail("%s: the reference has no access-type=URL and URL" % where)
        return None
    url = "".join(url.split())
    if not ref.get_param("size"):
        fail("%s: the reference has no size parameter" % where)
    inner = ref.get_payload()
    inner = inner[0] if isinstance(inner, list) and inner else None
    if inner is None or not inner.get("Content-MD5"):
        fail("%s: the reference's phantom header has no Content-MD5" % where)
    return url


def compare(where, orig, ext, back, urls):
    """Walk the original, externalized and restored trees together."""
    restored = False
    if not orig.is_multipart():
        if ext is not None and (is_reference(ext) or (ext.get_content_type() == "multipart/alternative"
                                                     and orig.get_content_type() != "multipart/alternative")):
            restored = True
            ref = ext
            if not is_reference(ext):
                kids = ext.get_payload()
                refs = [k for k in kids if is_reference(k)]
                if len(kids) != 2 or kids[0].get_content_type() != "text/plain" or len(refs) != 1:
                    fail("%s: the fallback is not a text/plain part and a reference" % where)
                    return
                ref = refs[0]
            url = check_reference(where, ref)
            if url:
                urls.append((url, orig.get_payload(decode=True) or b""))
    if back.get_content_type() != orig.get_content_type():
        fail("%s: type %s, was %s" % (where, back.get_content_type(), orig.get_content_type()))
        return
    if restored:
        if back.get_params() != orig.get_params():
            fail("%s: Content-Type parameters %r, were %r" % (where, back.get_params(), orig.get_params()))
        for name in ("Content-Disposition", "Content-ID", "Content-Description"):
            if field(back, name) != field(orig, name):
                fail("%s: %s %r, was %r" % (where, name, field(back, name), field(orig, name)))
        # every field the part had comes back (its transfer encoding chosen
        # afresh; a stale length or checksum replaced by the reference's own)
        got = fields(back)
        for k, v in fields(orig):
            if k not in ("content-transfer-encoding", "content-md5", "content-length") and (k, v) not in got:
                fail("%s: the restored part lost %s: %s" % (where, k, v))
    elif fields(back) != fields(orig):
        fail("%s: header fields differ:\n  %r\n  %r" % (where, fields(back), fields(orig)))
    if orig.is_multipart():
        ok, eb = orig.get_payload(), back.get_payload()
        ek = ext.get_payload() if ext is not None and ext.is_multipart() else None
        if not isinstance(eb, list) or len(eb) != len(ok):
            fail("%s: %s parts, was %d" % (where, len(eb) if isinstance(eb, list) else "no", len(ok)))
            return
        if ek is not None and len(ek) != len(ok):
            fail("%s: the externalized message has %d parts here, the original %d" % (where, len(ek), len(ok)))
            ek = None
        if orig.preamble != back.preamble or orig.epilogue != back.epilogue:
            fail("%s: preamble or epilogue differs" % where)
        for i in range(len(ok)):
            compare("%s.%d" % (where, i + 1), ok[i], ek[i] if ek else None, eb[i], urls)
    else:
        a, b = orig.get_payload(decode=True) or b"", back.get_payload(decode=True) or b""
        if a != b:
            fail("%s: decoded payload differs (%d bytes, was %d)" % (where, len(b), len(a)))


def extra_messages():
    """Two messages in mbox form whose attachments (30,000 bytes) carry fields
    of every kind."""
    payload = bytes((i * 131 + 7) % 256 for i in range(30000))
    import base64
    b64 = base64.encodebytes(payload)
    out = b"From sender@example.org Sat Nov 21 10:00:00 2026\n"
    out += (b"From: sender@example.org\nTo: r@example.org\nSubject: fields of every kind\n"
            b"Message-ID: <fields-1@example.org>\nMIME-Version: 1.0\n"
            b"Content-Type: multipart/mixed; boundary=\"outer\"\n\n"
            b"--outer\nContent-Type: text/plain\n\nsee the plan\n--outer\n"
            b"Content-Type: application/octet-stream; name=\"plan.bin\"\n"
            b"Content-Location: http://example.org/docs/plan.bin\n"
            b"Content-Language: en\n"
            b"Content-Base: http://example.org/docs/\n"
            b"X-Attachment-Id: f_kq1\n"
            b"Content-Disposition: attachment; filename=\"plan.bin\"\n"
            b"Content-Description: the plan\n"
            b"Content-ID: <plan@example.org>\n"
            b"Content-Transfer-Encoding: base64\n\n") + b64 + b"--outer--\n\n"
    out += b"From sender@example.org Sat Nov 21 10:01:00 2026\n"
    out += (b"From: sender@example.org\nTo: r@example.org\nSubject: a message that is an attachment\n"
            b"Message-ID: <fields-2@example.org>\nMIME-Version: 1.0\n"
            b"Content-Type: application/octet-stream; name=\"whole.bin\"\n"
            b"Content-Location: http://example.org/docs/whole.bin\n"
            b"Content-Language: de\n"
            b"Content-Disposition: attachment; filename=\"whole.bin\"\n"
            b"Content-Transfer-Encoding: base64\n\n") + base64.encodebytes(payload[::-1]) + b"\n"
    return out


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        fail("%s exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--extbody", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--store", required=True)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--fallback", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    conf = os.path.join(a.work, "extbody.conf")
    with open(conf, "w") as f:
        f.write("externalize_min_size = 20K\nexternalize_store = %s\nexternalize_base_url = %s\n"
                % (a.store, a.base_url))
    # the corpus and a few messages of its own: parts with the content fields
    # externalize leaves outside the phantom header (Content-Location,
    # Content-Language, Content-Base) and others (X-Attachment-Id), in a
    # multipart and as the body of a message
    corpus = os.path.join(a.work, "corpus.mbox")
    shutil.copyfile(a.corpus, corpus)
    with open(corpus, "ab") as f:
        f.write(extra_messages())
    a.corpus = corpus
    ext = os.path.join(a.work, "ext.mbox")
    shutil.copyfile(a.corpus, ext)
    cmd = [a.extbody, "externalize", "-c", conf] + (["--fallback"] if a.fallback else []) + ["--mbox", ext]
    p = run(cmd)
    print("externalize: " + p.stderr.strip())
    again = os.path.join(a.work, "again.mbox")
    shutil.copyfile(ext, again)
    run(cmd[:-1] + [again])
    back = os.path.join(a.work, "back.mbox")
    shutil.copyfile(ext, back)
    # every object from one host: no rate limit to wait on (max_requests_per_host)
    p = run([a.extbody, "rewrite", "-c", conf, "--fetch", "--allow-network", "127.0.0.1/32",
             "-o", "max_requests_per_host=100000", "--mbox", back])
    print("rewrite: " + p.stderr.strip())
    if failures:
        return 1

    data = {k: open(v, "rb").read() for k, v in (("orig", a.corpus), ("ext", ext), ("again", again),
                                                  ("back", back))}
    if data["again"] != data["ext"]:
        fail("a second externalize changed the mbox")
    msgs = {k: split_mbox(v) for k, v in data.items()}
    n = len(msgs["orig"])
    for k in ("ext", "back"):
        if len(msgs[k]) != n:
            fail("%s: %d messages, the corpus has %d" % (k, len(msgs[k]), n))
            return 1
    unchanged = changed = 0
    urls = []
    for i in range(n):
        (f0, o), (f1, e), (f2, b) = msgs["orig"][i], msgs["ext"][i], msgs["back"][i]
        where = "message %d" % (i + 1)
        if f0 != f1 or f0 != f2:
            fail("%s: the From_ line changed" % where)
        if e == o:
            unchanged += 1
            if b != o:
                fail("%s: nothing externalized, but the rewrite changed it" % where)
            continue
        changed += 1
        if b"message/external-body" not in e:
            fail("%s: changed by externalize without a reference" % where)
        ob, bb = without_trace(top_header(o)), without_trace(top_header(b))
        if email.message_from_bytes(o).get_content_maintype() != "multipart":
            # the message's body was the part: its content fields come back
            # from the reference (compare() checks each), after its own fields
            ob, bb = without_content(ob), without_content(bb)
        if bb != ob:
            fail("%s: the top-level header changed" % where)
        compare(where, email.message_from_bytes(o), email.message_from_bytes(e),
                email.message_from_bytes(b), urls)
    if changed == 0:
        fail("nothing was externalized")
    # the store: every object named by the SHA-256 of its bytes, each part's
    # bytes stored once, and every URL naming the object of its part's bytes
    objects = {}
    for root, _, files in os.walk(a.store):
        for name in files:
            blob = open(os.path.join(root, name), "rb").read()
            h = hashlib.sha256(blob).hexdigest()
            if h != name:
                fail("store object %s holds bytes whose SHA-256 is %s" % (name, h))
            objects[name] = len(blob)
    distinct = set()
    for url, payload in urls:
        h = hashlib.sha256(payload).hexdigest()
        distinct.add(h)
        if not url.startswith(a.base_url.rstrip("/") + "/") or not url.endswith(h):
            fail("reference URL %s does not name the object %s" % (url, h))
        if h not in objects:
            fail("object %s is not in the store" % h)
    print("%d messages: %d with parts externalized (%d parts, %d distinct), %d unchanged; %d objects in the store"
          % (n, changed, len(urls), len(distinct), unchanged, len(objects)))
    if failures:
        print("%d failures" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
