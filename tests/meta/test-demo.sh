#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-demo.sh - the README's first command, `sh tests/quickstart.sh demo`,
# run on a copy of the tree: it succeeds, builds the command alone (no test
# programs, no API reference) in build-demo/, and shows each step's result in
# a few lines (issue 26: it printed about 1,200 lines and built the whole test
# suite to show a few commands).
#
#   sh test-demo.sh TOP
#
# The packages the demo installs are the build's own, present wherever this
# suite runs, so apt-get is not run here.
set -u
top=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/extbody-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -C "$top" --exclude='./build*' --exclude='./.git' --exclude='node_modules' \
  --exclude='./tests/fuzz/seeds' -cf - . | tar -C "$work" -xf - || exit 1
failed=0
fail () { echo "FAIL: $*"; failed=1; }
(cd "$work" && sh tests/quickstart.sh demo) >"$work/demo.out" 2>&1
rc=$?
cat "$work/demo.out"
[ "$rc" -eq 0 ] || fail "the demo exited $rc"
lines=$(wc -l <"$work/demo.out")
[ "$lines" -le 100 ] || fail "the demo printed $lines lines (at most 100: each step in a few)"
[ -x "$work/build-demo/src/extbody" ] || fail "no build-demo/src/extbody"
[ ! -e "$work/build-demo/tests" ] || fail "the demo configured the test suite (build-demo/tests)"
[ ! -e "$work/build-demo/docs/reference/html" ] || fail "the demo built the API reference"
[ ! -e "$work/build" ] || fail "the demo wrote build/, the test command's directory"
for step in "1. extbody inspect" "2. extbody rewrite --report" "3. extbody externalize --report" \
            "4. extbody inspect" "5. a second externalize changes nothing" "byte for byte the same (cmp)" \
            "the object holds exactly the PDF's decoded bytes (cmp)"; do
  grep -qF "$step" "$work/demo.out" || fail "the demo's output has no \"$step\""
done
echo "the demo: exit $rc, $lines lines"
exit $failed
