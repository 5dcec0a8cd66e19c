#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""test-licence.py - the project says under which licence it is, everywhere.

    python3 test-licence.py TOP

- COPYING is the GNU LGPL version 2.1 (the project is LGPL-2.1-or-later, as
  GMime is);
- every source file of the project (C, headers, scripts, CMake files, man
  pages, Lua and JavaScript, Debian's maintainer scripts and rules) names it in
  an SPDX-License-Identifier line among its first five lines; files copied from
  other projects (tests/corpus, tests/conformance/wpt, the fuzz seeds) do not;
- debian/copyright is machine-readable (DEP-5): a Format header; Files
  paragraphs with Copyright and License; a stand-alone License paragraph with
  text for every licence named; and every file copied from another project is
  covered by a paragraph naming that project's licence, never by the "*" one.
Exit 0 when all hold, 1 with one line per failure."""
import os
import re
import sys

TAG = "SPDX-License-Identifier: LGPL-2.1-or-later"
VENDORED = ("tests/corpus/", "tests/conformance/wpt/", "tests/fuzz/seeds/", "tests/fuzz/regressions/")
SKIP_DIRS = {".git", "node_modules"}

top = sys.argv[1]
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def kind(rel):
    b = os.path.basename(rel)
    if rel.endswith((".c", ".h", ".h.in", ".py", ".sh", ".lua", ".js", ".1", ".5", ".8", ".cmake")):
        return True
    if b == "CMakeLists.txt" or rel in ("debian/rules", "examples/Makefile"):
        return True
    if rel.startswith("debian/") and rel.endswith((".postinst", ".postrm", ".preinst", ".prerm")):
        return True
    if "." in b:
        return False
    try:
        with open(os.path.join(top, rel), "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


files = []
for root, dirs, names in os.walk(top):
    rel_root = os.path.relpath(root, top)
    dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not (rel_root == "." and d.startswith("build"))]
    for n in names:
        rel = os.path.normpath(os.path.join(rel_root, n))
        files.append(rel)

# COPYING
try:
    copying = open(os.path.join(top, "COPYING"), encoding="utf-8").read()
    if "GNU LESSER GENERAL PUBLIC LICENSE" not in copying or "Version 2.1, February 1999" not in copying:
        fail("COPYING is not the GNU LGPL version 2.1")
except OSError:
    fail("no COPYING")

# the SPDX line
checked = 0
for rel in sorted(files):
    if rel.startswith(VENDORED) or not kind(rel):
        continue
    checked += 1
    with open(os.path.join(top, rel), encoding="utf-8", errors="replace") as f:
        head = [f.readline() for _ in range(5)]
    if not any(TAG in line for line in head):
        fail("%s has no \"%s\" line among its first five" % (rel, TAG))
print("%d source files checked for their SPDX line" % checked)
if checked < 150:
    fail("only %d source files found: the walk is wrong" % checked)

# debian/copyright
try:
    text = open(os.path.join(top, "debian", "copyright"), encoding="utf-8").read()
except OSError:
    fail("no debian/copyright")
    text = "Format: none"
paras = [p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]


def fields(p):
    out, key = {}, None
    for line in p.split("\n"):
        if line[:1] in (" ", "\t") and key:
            out[key] += "\n" + line
        elif ":" in line:
            key, v = line.split(":", 1)
            out[key.strip()] = v.strip()
    return out


head = fields(paras[0])
if not head.get("Format", "").startswith("https://www.debian.org/doc/packaging-manuals/copyright-format/1.0"):
    fail("debian/copyright has no DEP-5 Format header")
stanzas, texts = [], {}
for p in paras[1:]:
    f = fields(p)
    if "Files" in f:
        for k in ("Copyright", "License"):
            if not f.get(k):
                fail("debian/copyright: Files %s has no %s" % (f["Files"], k))
        stanzas.append(f)
    elif "License" in f:
        name, _, body = f["License"].partition("\n")
        if not body.strip():
            fail("debian/copyright: License %s has no text" % name)
        texts[name.strip()] = body
for f in stanzas:
    for name in re.split(r"\s+(?:or|and)\s+", f["License"].split("\n")[0]):
        if name not in texts:
            fail("debian/copyright: licence %s (Files %s) has no License paragraph" % (name, f["Files"]))


def matcher(pattern):
    return re.compile("^" + re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".") + "$")


compiled = [([matcher(p) for p in f["Files"].split()], f) for f in stanzas]
for rel in sorted(files):
    if not rel.startswith(("tests/corpus/", "tests/conformance/wpt/")) or rel.endswith(("SOURCES.md", "README.md")):
        continue
    last = None
    for pats, f in compiled:
        if any(m.match(rel) for m in pats):
            last = f
    if last is None or last["Files"].strip() == "*":
        fail("%s, copied from another project, has no debian/copyright paragraph of its own" % rel)

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
