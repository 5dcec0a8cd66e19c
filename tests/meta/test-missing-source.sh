#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-missing-source.sh - a source file listed in the build but missing from
# the tree is a configure error that names it, for the library
# (src/CMakeLists.txt, EB_LIB_SOURCES) and for the tests
# (tests/CMakeLists.txt): never a library built without a module, never a test
# silently dropped (issue 25: src/ built "what exists").
#
#   sh test-missing-source.sh TOP
set -u
top=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/extbody-missing-source.XXXXXX")
trap 'rm -rf "$work"' EXIT
# the sources only: no build trees, no node_modules, no fuzz seeds
tar -C "$top" --exclude='./build*' --exclude='./.git' --exclude='node_modules' \
  --exclude='./tests/fuzz/seeds' -cf - . | tar -C "$work" -xf - || exit 1
failed=0
for f in src/base/eb-reason.c tests/unit/test-header.c; do
  mv "$work/$f" "$work/moved"
  if out=$(cmake -S "$work" -B "$work/b" -DEXTBODY_DOCS=OFF 2>&1); then
    echo "FAIL: cmake configured the tree without $f"
    failed=1
  elif ! printf '%s\n' "$out" | grep -q "$f is missing"; then
    echo "FAIL: the configure error does not name $f:"
    printf '%s\n' "$out" | tail -n 5
    failed=1
  else
    echo "ok: without $f, cmake stops: $(printf '%s\n' "$out" | grep -m1 'is missing' | sed 's/^ *//')"
  fi
  mv "$work/moved" "$work/$f"
  rm -rf "$work/b"
done
# and the tree as it is configures
if ! cmake -S "$work" -B "$work/b" -DEXTBODY_DOCS=OFF >/dev/null 2>&1; then
  echo "FAIL: the whole tree does not configure"
  failed=1
fi
exit $failed
