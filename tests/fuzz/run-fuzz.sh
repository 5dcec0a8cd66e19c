#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# run-fuzz.sh - build the libFuzzer targets with clang and fuzz each one for
# as long as one likes.
#
#   sh tests/fuzz/run-fuzz.sh [SECONDS-PER-TARGET] [TARGET...]
#   EXTBODY_UPDATE_SEEDS=1 sh tests/fuzz/run-fuzz.sh 3600    # then merge into the seeds
#
# Each target's corpus grows in build-fuzz/corpus/NAME, started from the
# committed seeds (tests/fuzz/seeds/NAME), the regression inputs
# (tests/fuzz/regressions/NAME) and, for whole-message targets, the test
# messages; the dictionary is tests/fuzz/mime.dict. A crash, leak, time-out or
# broken property is written to build-fuzz/crashes/ and the script exits 1:
# copy the input into tests/fuzz/regressions/NAME/ (the replay tests run it in
# every build from then on) and fix the bug. With EXTBODY_UPDATE_SEEDS=1 the
# grown corpus is minimised (libFuzzer -merge=1, inputs up to 4 KiB) into the
# committed seeds. CI runs the same targets for 30 s each (ctest in a
# -DEXTBODY_FUZZ=ON build, see tests/quickstart.sh).
set -eu
secs=${1:-60}
[ $# -gt 0 ] && shift
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build-fuzz
cmake -S "$top" -B "$b" -DEXTBODY_FUZZ=ON -DEXTBODY_TESTS=OFF -DEXTBODY_WERROR=OFF \
      -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$b" -j "$(nproc)" >/dev/null
targets=${*:-"urlparam mimetype dataurl params rewrite inspect mbox externalize"}
mkdir -p "$b/crashes"
status=0
for t in $targets; do
  c=$b/corpus/$t
  mkdir -p "$c"
  cp "$top/tests/fuzz/seeds/$t"/* "$c"/ 2>/dev/null || true
  cp "$top/tests/fuzz/regressions/$t"/* "$c"/ 2>/dev/null || true
  case $t in
    rewrite|inspect|externalize) cp "$top"/tests/corpus/*.eml "$top"/data/samples/*.eml "$c"/ 2>/dev/null || true ;;
  esac
  echo "==> fuzz-$t for ${secs}s"
  if ! ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
       "$b/tests/fuzz/fuzz-$t" -max_total_time="$secs" -dict="$top/tests/fuzz/mime.dict" \
       -artifact_prefix="$b/crashes/$t-" -print_final_stats=1 -max_len=65536 -timeout=30 \
       -rss_limit_mb=2560 -close_fd_mask=1 "$c" > "$b/fuzz-$t.log" 2>&1; then
    echo "fuzz-$t FOUND A CRASH: see $b/fuzz-$t.log and $b/crashes/"
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$b/fuzz-$t.log" | tr '\n' ' '
  echo
  if [ "${EXTBODY_UPDATE_SEEDS:-0}" = 1 ]; then
    s=$top/tests/fuzz/seeds/$t
    rm -rf "$s.new" && mkdir -p "$s.new"
    ASAN_OPTIONS=detect_leaks=0 "$b/tests/fuzz/fuzz-$t" -merge=1 -max_len=4096 "$s.new" "$c" \
      > "$b/merge-$t.log" 2>&1 && rm -rf "$s" && mv "$s.new" "$s"
    echo "    seeds: $(ls "$s" | wc -l) inputs"
  fi
done
exit $status
