#!/bin/sh
# run-fuzz.sh - build the libFuzzer targets with clang and run each one.
#
#   sh tests/fuzz/run-fuzz.sh [SECONDS-PER-TARGET] [TARGET...]
#
# Seeds come from the test messages (tests/corpus, data/samples) and short
# hand-made inputs; the dictionary is tests/fuzz/mime.dict. Each target's
# growing corpus lives in build-fuzz/corpus/NAME; a crash is written to
# build-fuzz/crashes/ and the script exits 1 (turn it into a regression test).
set -eu
secs=${1:-60}
[ $# -gt 0 ] && shift
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build-fuzz
cmake -S "$top" -B "$b" -DEXTBODY_FUZZ=ON -DEXTBODY_TESTS=OFF -DEXTBODY_WERROR=OFF \
      -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$b" -j "$(nproc)" >/dev/null
targets=${*:-"urlparam mimetype dataurl params rewrite inspect mbox"}
mkdir -p "$b/crashes"
status=0
for t in $targets; do
  c=$b/corpus/$t
  mkdir -p "$c"
  case $t in
    rewrite|inspect|params|urlparam) cp "$top"/tests/corpus/*.eml "$top"/data/samples/*.eml "$c"/ 2>/dev/null || true ;;
    mbox) cp "$top"/tests/corpus/*.mmdf "$c"/ 2>/dev/null || true
          printf 'From a b\n\nx\n\nFrom c d\n>From e\n' > "$c/seed1" ;;
    dataurl) printf 'data:,x' > "$c/s1"; printf 'data:text/plain;base64,aGk=' > "$c/s2"
             printf 'data://a:1/p/../q?x#y' > "$c/s3" ;;
    mimetype) printf 'text/html;charset="utf-8"' > "$c/s1"; printf 'a/b;c=d;e="f\\\\g"' > "$c/s2" ;;
  esac
  echo "==> fuzz-$t for ${secs}s"
  if ! ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1 \
       "$b/tests/fuzz/fuzz-$t" -max_total_time="$secs" -dict="$top/tests/fuzz/mime.dict" \
       -artifact_prefix="$b/crashes/$t-" -print_final_stats=1 -max_len=65536 "$c" \
       > "$b/fuzz-$t.log" 2>&1; then
    echo "fuzz-$t FOUND A CRASH: see $b/fuzz-$t.log and $b/crashes/"
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$b/fuzz-$t.log" | tr '\n' ' '
  echo
done
exit $status
