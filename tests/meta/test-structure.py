#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""test-structure.py SOURCE_DIR [--report]

Holds the code to the shape its design promises (src/README.md):

  1. the graph of modules (a module is a .c file, its .h and its
     -private.h, named by the file's stem; a header of no .c, such as the
     one a family of files shares, is a node of its own), drawn from #include "..." lines and from calls of a
     function another module defines, has no circle;
  2. the modules sit in layers (the folders of src/, bottom to top, as
     LAYERS lists them, the front ends under filters/ above them, the
     command on top: it compiles in extbodyd's key table, as postconf knows
     every Postfix daemon's parameters): at
     most MAX_UPWARD edges go from a lower layer to a higher one, each
     listed in UPWARD_ALLOWED with the reason it is there;
  3. no function is longer than MAX_FUNCTION_LINES lines, counted from the
     line that names it to its closing brace, except the parsers in
     GRAMMAR, whose shape is their grammar's;
  4. every function a module of src/ exports (not static) begins with the
     name of its file: the name read without its underscores begins with
     the file's stem read without its dashes (eb-fetch.c: eb_fetch_...,
     eb_fetcher_...; eb-dataurl.c: eb_data_url_...), except those in
     PREFIX_ALLOWED;
  5. a folder of LIBC_ONLY includes nothing but its own headers and the C
     library's: no header of src/ or include/, none of GLib, GMime, curl;
  6. every variable a module of src/ or filters/ defines at file scope and
     does not keep static is exported data and begins with the name of its
     file, as its functions do (milter-session.c: milter_session_...): an
     exported "config" or "stats" is any program's, and the linker takes
     another module's of that name as the same;
  7. no file but those of CONFIG_MODULES looks a configuration key up by
     its name (eb_config_get_*, eb_config_networks_contain with a literal
     key): each key is bound once to a typed field or accessor there.
  8. a URL scheme's name (the names of the rows of SCHEME_TABLE) is a
     string literal of src/ in the table only, outside comments: the code
     asks the table (eb_scheme_lookup and the row's columns) and compares
     no name, so that a scheme is one row (src/README.md, "Adding a URL
     scheme"); the same word meaning something else is listed in
     SCHEME_NAME_ALLOWED with the reason.

With --report it prints the modules by layer, the edges that go up and
the longest functions, and exits 0 whatever it finds.
"""
import os
import re
import sys

# bottom to top; a folder of src/ per layer, the front ends above them
LAYERS = ["base", "mime", "net", "message", "report", "mailbox", "filters", "cli"]
MAX_UPWARD = 3
MAX_FUNCTION_LINES = 120
GRAMMAR = {
    # RFC 2045 5.1 and RFC 2231 parameters: one state per production
    "eb_params_parse_only",
}
UPWARD_ALLOWED = {}
# Library-wide public names, not a module's: as GMime's g_mime_init and
# GLib's glib_major_version (eb-version.c).
PREFIX_ALLOWED = {
    "eb_init": "the library's start, as GMime's g_mime_init (eb-version.c)",
    "eb_shutdown": "the library's end (eb-version.c)",
    "eb_get_major_version": "version, as GLib's glib_major_version (eb-version.c)",
    "eb_get_minor_version": "version (eb-version.c)",
    "eb_get_micro_version": "version (eb-version.c)",
    "eb_get_version_string": "version (eb-version.c)",
    "eb_get_library_versions": "version (eb-version.c)",
}

# The configuration modules: the only files that look a key up by its name
# (a getter of the library's with a literal key); every other file reads a
# typed field bound there once (the library's EbConfig, the daemon's
# DaemonSettings, the command's CliSettings) or a named accessor, so that a
# misspelt key does not compile.
CONFIG_MODULES = {
    "src/base/eb-config.c": "the library's keys and their accessors",
    "filters/daemon/daemon-keys.c": "extbodyd's keys and DaemonSettings",
    "src/cli/extbody-cli-keys.c": "the command's CliSettings",
}
LOOKUP_RE = re.compile(r"\b(eb_config_(?:get_[a-z0-9_]+|networks_contain))\s*\([^,()]*,\s*\"([^\"]*)\"")

# Folders whose programs use the C library alone, each with its reason.
LIBC_ONLY = {
    "filters/client": "extbodyc starts in about a millisecond: libc only (issue 28)",
}
# <...> headers of the libraries the rest of the project uses.
NOT_LIBC = ("extbody/", "glib", "gio/", "gmime/", "curl/", "json-glib/", "hiredis/", "libmilter/",
            "openssl/")
SYSTEM_INCLUDE_RE = re.compile(r'^\s*#\s*include\s+<([^>]+)>', re.M)

# The table of URL schemes: a row each, its name written .name = "NAME".
SCHEME_TABLE = "src/base/eb-scheme.c"
SCHEME_ROW_RE = re.compile(r'\.name\s*=\s*"([^"\\]*)"')
# (file, literal): a scheme's name as a word that is not the scheme, with why.
SCHEME_NAME_ALLOWED = {
    ("src/net/eb-nntp.c", "data"): "NNTP's data block (RFC 3977 3.1.1), named in an error's detail",
    ("src/net/eb-nntp.c", "http"): "the protocol libcurl connects the NNTP client's socket as "
                                   "(CURLOPT_CONNECT_ONLY): nothing is sent in it",
}

DEF_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*) \(")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
CALL_RE = re.compile(r"\b([a-z_][a-z0-9_]*)\s*\(")
# A definition of a variable at file scope, not static (nor a declaration:
# extern, typedef, struct NAME;): its name, the word before "=", "[" or ";",
# no "(" before it on its line.
GLOBAL_RE = re.compile(r"^(?!static\b|extern\b|typedef\b|(?:struct|union|enum)\s+\w+\s*;)"
                       r"[A-Za-z_][^(;=\n]*?\b([A-Za-z_][A-Za-z0-9_]*)\s*(?:\[[^]\n]*\]\s*)*[=;]", re.M)


def sources(top):
    out = []
    for base in ("src", "filters"):
        for d, dirs, files in os.walk(os.path.join(top, base)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    out.append(os.path.join(d, f))
    return out


def layer_of(top, path):
    rel = os.path.relpath(path, top).split(os.sep)
    if rel[0] == "filters":
        return "filters"
    if len(rel) > 2 and rel[1] in LAYERS:
        return rel[1]
    return None


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def string_literals(text):
    """(line, contents) of each string literal of C source @text outside
    comments (character literals and escapes read as C reads them)."""
    out = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if c == '"':
                out.append((line, text[i + 1:j]))
            i = j + 1
        else:
            i += 1
    return out


def functions(text):
    """(name, first line, line count, static) for each definition, GNU style:
    the name at column 0, its body's braces at column 0."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = DEF_RE.match(lines[i])
        if m:
            j = i
            while j < len(lines) and lines[j] != "{":
                if lines[j].rstrip().endswith(";") or (j > i and DEF_RE.match(lines[j])):
                    break
                j += 1
            if j < len(lines) and lines[j] == "{":
                k = j + 1
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                prev = lines[i - 1] if i > 0 else ""
                out.append((m.group(1), i + 1, k - i + 1, prev.startswith("static")))
                i = k
        i += 1
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    report = "--report" in sys.argv
    top = args[0] if args else "."
    files = sources(top)
    module_of = {}
    layer = {}
    text = {}
    for p in files:
        stem = os.path.splitext(os.path.basename(p))[0]
        own = stem[:-len("-private")] if stem.endswith("-private") else None
        if own and os.path.exists(os.path.join(os.path.dirname(p), own + ".c")):
            stem = own
        module_of[p] = stem
        text[p] = strip_comments(open(p, encoding="utf-8", errors="replace").read())
        lay = layer_of(top, p)
        if lay is not None:
            layer[stem] = lay
    header_module = {os.path.basename(p): module_of[p] for p in files if p.endswith(".h")}
    defined = {}
    funcs = []
    for p in files:
        if p.endswith(".c"):
            for name, line, n, static in functions(text[p]):
                funcs.append((p, name, line, n, static))
                # every program has a main: nobody calls another's
                if not static and name != "main":
                    defined.setdefault(name, module_of[p])
    edges = {}
    for p in files:
        m = module_of[p]
        raw = open(p, encoding="utf-8", errors="replace").read()
        for inc in INCLUDE_RE.findall(raw):
            t = header_module.get(os.path.basename(inc))
            if t and t != m:
                edges.setdefault((m, t), set()).add("includes " + os.path.basename(inc))
        if p.endswith(".c"):
            for name in set(CALL_RE.findall(text[p])):
                t = defined.get(name)
                if t and t != m:
                    edges.setdefault((m, t), set()).add("calls " + name)
    problems = []
    # 1. circles (Tarjan)
    graph = {}
    for (a, b) in edges:
        graph.setdefault(a, set()).add(b)
    index, low, stack, on, sccs = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)

    def strong(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in sorted(set(module_of.values())):
        if v not in index:
            strong(v)
    for comp in sccs:
        ties = ["%s -> %s (%s)" % (a, b, ", ".join(sorted(edges[(a, b)]))) for (a, b) in sorted(edges)
                if a in comp and b in comp]
        problems.append("circle among %s: %s" % (", ".join(comp), "; ".join(ties)))
    # 2. layers
    unplaced = sorted(m for m in set(module_of.values()) if m not in layer)
    for m in unplaced:
        problems.append("module %s is in no layer (a folder of src/ named in LAYERS)" % m)
    upward = []
    for (a, b) in sorted(edges):
        if a in layer and b in layer and LAYERS.index(layer[a]) < LAYERS.index(layer[b]):
            upward.append((a, b))
    if len(upward) > MAX_UPWARD:
        problems.append("%d edges go up a layer (at most %d)" % (len(upward), MAX_UPWARD))
    for (a, b) in upward:
        if (a, b) not in UPWARD_ALLOWED:
            problems.append("edge up not listed in UPWARD_ALLOWED: %s (%s) -> %s (%s): %s"
                            % (a, layer[a], b, layer[b], ", ".join(sorted(edges[(a, b)]))))
    # 3. long functions
    long_ones = sorted((n, p, name) for (p, name, line, n, static) in funcs if n > MAX_FUNCTION_LINES)
    for n, p, name in long_ones:
        if name not in GRAMMAR:
            problems.append("%s: %s is %d lines (at most %d)" % (os.path.relpath(p, top), name, n,
                                                                 MAX_FUNCTION_LINES))
    # 4. prefixes
    for (p, name, line, n, static) in funcs:
        if static or not p.startswith(os.path.join(top, "src")):
            continue
        prefix = module_of[p].replace("-", "")
        if not name.replace("_", "").startswith(prefix) and name != "main" and name not in PREFIX_ALLOWED:
            problems.append("%s: %s does not begin with the name of its file"
                            % (os.path.relpath(p, top), name))
    # 5. libc-only folders
    for folder, why in sorted(LIBC_ONLY.items()):
        base = os.path.join(top, folder)
        for p in files:
            if os.path.dirname(p) != base:
                continue
            raw = open(p, encoding="utf-8", errors="replace").read()
            for inc in INCLUDE_RE.findall(raw):
                if not os.path.exists(os.path.join(base, inc)):
                    problems.append("%s includes \"%s\", not a header of its folder (%s)"
                                    % (os.path.relpath(p, top), inc, why))
            for inc in SYSTEM_INCLUDE_RE.findall(raw):
                if inc.startswith(NOT_LIBC):
                    problems.append("%s includes <%s> (%s)" % (os.path.relpath(p, top), inc, why))
    # 6. exported data
    for p in files:
        if not p.endswith(".c"):
            continue
        prefix = module_of[p].replace("-", "")
        for m in GLOBAL_RE.finditer(text[p]):
            if not m.group(1).replace("_", "").startswith(prefix):
                line = text[p].count("\n", 0, m.start()) + 1
                problems.append("%s:%d: %s is exported (not static) and does not begin with the name of its file"
                                % (os.path.relpath(p, top), line, m.group(1)))
    # 7. configuration keys by name
    for p in files:
        rel = os.path.relpath(p, top)
        if rel in CONFIG_MODULES:
            continue
        for m in LOOKUP_RE.finditer(text[p]):
            line = text[p].count("\n", 0, m.start()) + 1
            problems.append("%s:%d: %s looks a configuration key up by its name: read a typed field or "
                            "accessor (bound in %s)" % (rel, line, m.group(1), ", ".join(sorted(CONFIG_MODULES))))
    # 8. scheme names: in the table only
    table = os.path.join(top, SCHEME_TABLE)
    names = []
    if os.path.exists(table):
        names = SCHEME_ROW_RE.findall(open(table, encoding="utf-8", errors="replace").read())
    if not names:
        problems.append("%s: no row of the table of URL schemes (.name = \"NAME\") found" % SCHEME_TABLE)
    for name in sorted(set(x for x in names if names.count(x) > 1)):
        problems.append("%s: the scheme \"%s\" has more than one row" % (SCHEME_TABLE, name))
    seen_allowed = set()
    for p in files:
        rel = os.path.relpath(p, top)
        if not rel.startswith("src" + os.sep) or rel == SCHEME_TABLE:
            continue
        raw = open(p, encoding="utf-8", errors="replace").read()
        for line, lit in string_literals(raw):
            if lit in names and (rel, lit) in SCHEME_NAME_ALLOWED:
                seen_allowed.add((rel, lit))
            elif lit in names:
                problems.append("%s:%d: \"%s\" is a URL scheme's name: it is spelled once, in its row of %s; "
                                "ask the table (eb_scheme_lookup, the row's columns)" % (rel, line, lit, SCHEME_TABLE))
    for rel, lit in sorted(set(SCHEME_NAME_ALLOWED) - seen_allowed):
        problems.append("SCHEME_NAME_ALLOWED lists \"%s\" in %s, which no longer spells it: remove the entry"
                        % (lit, rel))
    if report:
        for lay in LAYERS:
            ms = sorted(m for m in layer if layer[m] == lay)
            print("%-8s %s" % (lay, " ".join(ms)))
        print("unplaced %s" % " ".join(unplaced))
        print("modules %d, edges %d, edges up %d, circles %d"
              % (len(set(module_of.values())), len(edges), len(upward), len(sccs)))
        for (a, b) in upward:
            print("  up: %s -> %s: %s" % (a, b, ", ".join(sorted(edges[(a, b)]))))
        top_funcs = sorted(((n, os.path.relpath(p, top), name) for (p, name, line, n, s) in funcs),
                           reverse=True)[:12]
        for n, p, name in top_funcs:
            print("  %4d %s %s" % (n, p, name))
        for line in problems:
            print("problem: " + line)
        return 0
    for line in problems:
        print(line)
    if problems:
        print("%d problems" % len(problems))
        return 1
    print("structure holds: %d modules, %d edges, %d up, no circle, %d functions of at most %d lines"
          % (len(set(module_of.values())), len(edges), len(upward), len(funcs), MAX_FUNCTION_LINES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
