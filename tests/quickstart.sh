#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# quickstart.sh - the README's two commands, on a fresh Debian 13 (trixie) or
# Debian 12 (bookworm) machine.
#
#   sh tests/quickstart.sh demo   install, build the command alone (build-demo/),
#                                 resolve the bundled samples, externalize one
#                                 into a temporary store; each step in a few
#                                 lines
#   sh tests/quickstart.sh test   install, build, run the whole test suite
#                                 (a normal build with valgrind memcheck, then
#                                 again with ASan+UBSan, then everything built
#                                 by clang (-Werror) with its fast tests, then
#                                 every fuzz target for 10 s in a clang
#                                 libFuzzer build)
#
# Packages are installed with apt-get (as root, or through sudo). Builds go to
# build/, build-sanitize/, build-clang/ and build-fuzz/ under the source tree
# (the demo's to build-demo/). A test that cannot run here (no root for
# Postfix, no Node, ...) exits 77 and ctest lists it as "Skipped"; test mode
# then fails at the end, as it does when any stage fails (every stage runs
# anyway, and the last lines sum each one up). EXTBODY_ALLOW_SKIP=1 accepts
# skips (a developer without root); CI never sets it.
set -eu

mode=${1:-}
case $mode in
  demo|test) ;;
  *) echo "usage: sh tests/quickstart.sh demo|test" >&2; exit 64 ;;
esac

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# --- the release ---------------------------------------------------------
# Supported and tested: Debian 13 (trixie, the current stable release) and
# Debian 12 (bookworm, oldstable). Package names below are the ones both
# releases share; what differs between them (the run-time libraries Debian 13
# renamed for 64-bit time_t, clang's version, Valkey beside Redis) is asked
# of apt, never written down for one release.
release=unknown
if [ -r /etc/os-release ]; then
  # shellcheck disable=SC1091
  release=$(. /etc/os-release && echo "${ID:-}:${VERSION_CODENAME:-}")
  pretty=$(. /etc/os-release && echo "${PRETTY_NAME:-$release}")
fi
case $release in
  debian:trixie|debian:bookworm) echo "==> ${pretty}: a supported release" ;;
  *) echo "==> ${pretty:-an unknown system}: not a release extbody is tested on (Debian 13 trixie, Debian 12 bookworm); trying anyway" ;;
esac

if [ "$(id -u)" -eq 0 ]; then sudo=; else sudo=sudo; fi
apt_updated=
apt_update () {  # once per run, before the first install or question to apt
  [ -z "$apt_updated" ] || return 0
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
  apt_updated=yes
}
# offered PKG: true when this release's apt knows PKG
offered () {
  [ -n "$(apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -v '(none)')" ]
}
# lib_depends PKG...: the shared-library packages (lib*) PKG depends on, by
# the names this release gives them (libdb5.3 on Debian 12, libdb5.3t64 on
# Debian 13): the MTAs the tests unpack rather than install need them
lib_depends () {
  apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
      --no-replaces --no-enhances "$@" 2>/dev/null \
    | sed -n 's/^ *|\{0,1\}\(Pre\)\{0,1\}Depends: \(lib[a-z0-9.+-]*\)$/\2/p' | sort -u
}
# install PKG...: apt-get install those of PKG not installed yet
install () {
  missing=
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
      || missing="$missing $p"
  done
  [ -n "$missing" ] || return 0
  echo "==> installing:$missing"
  # Postfix for the tests' private instance only: leave the system one unconfigured
  echo "postfix postfix/main_mailer_type select No configuration" | $sudo debconf-set-selections
  apt_update
  # --no-remove: never take away what the machine has (leafnode conflicts
  # with INN and the other news servers; apt-get -y would remove them)
  # shellcheck disable=SC2086
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends --no-remove $missing
  # Debian starts (and enables) the system services it installs: the tests run
  # private instances of their own, on other ports or the same ones, so the
  # system Dovecot (143), nginx and Apache (80), OpenDKIM, gophernicus's socket
  # unit (70, every address), Redis and Valkey (6379) and HAProxy are stopped
  # and disabled
  for unit in dovecot.service dovecot.socket nginx.service apache2.service opendkim.service \
              gophernicus.socket redis-server.service valkey-server.service haproxy.service; do
    case " $missing " in
      *" ${unit%%[.-]*}"*) ;;
      *) continue ;;
    esac
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
      $sudo systemctl disable --now "$unit" 2>/dev/null || true
    else
      case $unit in *.service) $sudo service "${unit%.service}" stop 2>/dev/null || true ;; esac
    fi
  done
}

# --- packages ------------------------------------------------------------
packages="build-essential cmake pkg-config libglib2.0-dev libgmime-3.0-dev
  libcurl4-openssl-dev libjson-glib-dev libmilter-dev libhiredis-dev libssl-dev ca-certificates"
# the tests' own servers and certificates
[ "$mode" = test ] && packages="$packages python3 python3-pyftpdlib python3-prometheus-client openssl curl miltertest postfix strace"
# a real gopher server and a real news server (test-fetch /fetch/gopher and
# /fetch/nntp-leafnode run them per connection on loopback; leafnode in a
# mount namespace of its own, with util-linux's unshare)
[ "$mode" = test ] && packages="$packages gophernicus leafnode util-linux"
# the API reference (gtk-doc), built in every build and installed by test-install
[ "$mode" = test ] && packages="$packages gtk-doc-tools"
# memcheck, and clang with the compiler runtime of the release's default clang
# (libFuzzer, the sanitizers) for the fuzz build: libclang-rt-dev names it
# (clang 14 on Debian 12, clang 19 on Debian 13)
[ "$mode" = test ] && packages="$packages valgrind clang libclang-rt-dev"
# Dovecot for the tests' private instances (the system one is stopped): IMAP
# for test-dovecot and test-dovecot-rest, LMTP and Pigeonhole's Sieve
# (sieve_extprograms, sievec) for test-dovecot-lmtp; 2.3 on Debian 12, 2.4 on
# Debian 13, each given the configuration of its own version
[ "$mode" = test ] && packages="$packages dovecot-core dovecot-imapd dovecot-lmtpd dovecot-sieve"
# Redis for the shared cache's tests (private servers; the system one is
# stopped); Valkey too where the release has it (Debian 13): the tests run
# against both engines
[ "$mode" = test ] && packages="$packages redis-server"
# Node.js and npm for the differential data: URL test, unless the machine has them
[ "$mode" = test ] && ! command -v npm >/dev/null 2>&1 && packages="$packages nodejs npm"
# m4 to build Sendmail's configuration from sendmail-cf's macros (test-sendmail)
[ "$mode" = test ] && packages="$packages m4"
# the hostile fetch suite's DNS case: a private network namespace (ip link set lo up)
[ "$mode" = test ] && packages="$packages iproute2"
# the Debian packages' build (tests/packaging/deb-smoke.sh) and lintian's
# verdict on them, and the minimal root of this release deb-orders.sh installs
# them into, in both orders with Postfix (tests/packaging/prepare-debroot.sh,
# below)
[ "$mode" = test ] && packages="$packages dpkg-dev debhelper fakeroot debootstrap lintian"
# the externalize stores' servers (test-store): nginx serving a directory store
# (test-roundtrip, test-postfix-externalize too), Apache with mod_dav and
# mod_auth_basic (htpasswd from apache2-utils) as a WebDAV store; each test
# runs a private instance (the system ones are stopped)
[ "$mode" = test ] && packages="$packages nginx apache2 apache2-utils"
# Debian's self-signed snake-oil certificate, which data/store-nginx.conf.example
# names as shipped (test-examples runs nginx -t on it)
[ "$mode" = test ] && packages="$packages ssl-cert"
# the DKIM signer test-postfix-externalize lists after extbodyd: OpenDKIM
# (a private instance), opendkim-genkey for its key, dkimpy to verify the
# signature without DNS
[ "$mode" = test ] && packages="$packages opendkim opendkim-tools python3-dkim"
# the pool's balancer (test-pool: HAProxy in front of three daemons, each in
# a network namespace of its own; test-examples: haproxy -c on the shipped
# filters/daemon/haproxy.cfg)
[ "$mode" = test ] && packages="$packages haproxy"
# shellcheck disable=SC2086
install $packages

if [ "$mode" = test ]; then
  # Valkey, where the release offers it (Debian 13's valkey-server 8, beside
  # Redis): the shared cache's tests run against each engine installed
  if offered valkey-server || { apt_update >/dev/null && offered valkey-server; }; then
    install valkey-server
  else
    echo "==> ${pretty:-this release}: no valkey-server package (Debian 12 has none): the shared cache is tested against Redis only"
  fi
  # The MTAs that conflict with Postfix (Exim, Sendmail, OpenSMTPD: each
  # provides mail-transport-agent) are unpacked below, not installed: the
  # shared libraries they link are installed instead, by the names this
  # release's packages give them
  mtas="exim4-daemon-light exim4-base sendmail-bin opensmtpd"
  libs=$(lib_depends $mtas)
  [ -n "$libs" ] || { apt_update >/dev/null; libs=$(lib_depends $mtas); }
  [ -n "$libs" ] || { echo "==> apt-cache knows no dependencies of $mtas: test-exim, test-sendmail and test-opensmtpd will fail"; }
  # shellcheck disable=SC2086
  install $libs
fi

# A minimal Debian 12 root with Postfix and the packages' runtime dependencies
# downloaded into it (not installed), made once in /opt/extbody-test-debroot:
# deb-orders.sh (run by deb-smoke.sh) installs the built packages there,
# offline, before and after Postfix (root only, as deb-smoke.sh)
if [ "$mode" = test ] && [ "$(id -u)" -eq 0 ]; then
  sh tests/packaging/prepare-debroot.sh || echo "==> prepare-debroot.sh failed: the package stage will skip, and the run fail"
fi

# ssl-cert makes the snake-oil pair when it is installed, unless something
# stopped it; make it where it is missing (test-examples)
if [ "$mode" = test ] && [ ! -f /etc/ssl/certs/ssl-cert-snakeoil.pem ]; then
  if [ "$(id -u)" -eq 0 ]; then sudo=; else sudo=sudo; fi
  $sudo make-ssl-cert generate-default-snakeoil
fi

jobs=$(nproc 2>/dev/null || echo 2)

# Exim 4 for test-exim and tests/bench/bench-exim.py. Debian's
# exim4-daemon-light conflicts with postfix (both provide
# mail-transport-agent), so it is never installed: the packages are fetched
# with apt-get download and unpacked with dpkg-deb -x under
# /opt/extbody-test-exim, where test-exim finds it (the CMake cache path
# EXTBODY_TEST_EXIM). Nothing runs from it but the tests' private instance.
exim_root=/opt/extbody-test-exim
if [ "$mode" = test ] && [ ! -x "$exim_root/usr/sbin/exim4" ]; then
  if [ "$(id -u)" -eq 0 ]; then sudo=; else sudo=sudo; fi
  echo "==> unpacking Debian's exim4-daemon-light into $exim_root (not installed: it conflicts with postfix)"
  debs=$(mktemp -d)
  chmod 755 "$debs"
  if (cd "$debs" && { apt-get download -q exim4-daemon-light exim4-base 2>/dev/null \
        || { $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null \
             && apt-get download -q exim4-daemon-light exim4-base; }; }); then
    for deb in "$debs"/*.deb; do $sudo dpkg-deb -x "$deb" "$exim_root"; done
  else
    echo "==> could not fetch Exim: test-exim will skip"
  fi
  rm -rf "$debs"
fi

# Sendmail 8.17 for test-sendmail: Debian's sendmail-bin conflicts with
# postfix (both provide mail-transport-agent), so it is never installed:
# sendmail-bin, sendmail-base and sendmail-cf (the m4 macros) are fetched with
# apt-get download and unpacked with dpkg-deb -x under
# /opt/extbody-test-sendmail, where test-sendmail finds them (the CMake cache
# path EXTBODY_TEST_SENDMAIL). Nothing runs from it but the test's private
# instances.
sendmail_root=/opt/extbody-test-sendmail
if [ "$mode" = test ] && [ ! -x "$sendmail_root/usr/libexec/sendmail/sendmail" ]; then
  if [ "$(id -u)" -eq 0 ]; then sudo=; else sudo=sudo; fi
  echo "==> unpacking Debian's sendmail-bin into $sendmail_root (not installed: it conflicts with postfix)"
  debs=$(mktemp -d)
  chmod 755 "$debs"
  if (cd "$debs" && { apt-get download -q sendmail-bin sendmail-base sendmail-cf 2>/dev/null \
        || { $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null \
             && apt-get download -q sendmail-bin sendmail-base sendmail-cf; }; }); then
    for deb in "$debs"/*.deb; do $sudo dpkg-deb -x "$deb" "$sendmail_root"; done
  else
    echo "==> could not fetch Sendmail: test-sendmail will skip"
  fi
  rm -rf "$debs"
fi

# OpenSMTPD 6.8 for test-opensmtpd: Debian's opensmtpd conflicts with postfix
# too: fetched and unpacked the same way under /opt/extbody-test-opensmtpd
# (the CMake cache path EXTBODY_TEST_OPENSMTPD). Its users (opensmtpd,
# opensmtpq) are not created: the test's smtpd runs in a private mount
# namespace with a copy of /etc/passwd that has them
# (tests/opensmtpd/opensmtpd-peer.sh).
opensmtpd_root=/opt/extbody-test-opensmtpd
if [ "$mode" = test ] && [ ! -x "$opensmtpd_root/usr/sbin/smtpd" ]; then
  if [ "$(id -u)" -eq 0 ]; then sudo=; else sudo=sudo; fi
  echo "==> unpacking Debian's opensmtpd into $opensmtpd_root (not installed: it conflicts with postfix)"
  debs=$(mktemp -d)
  chmod 755 "$debs"
  if (cd "$debs" && { apt-get download -q opensmtpd 2>/dev/null \
        || { $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null \
             && apt-get download -q opensmtpd; }; }); then
    for deb in "$debs"/*.deb; do $sudo dpkg-deb -x "$deb" "$opensmtpd_root"; done
  else
    echo "==> could not fetch OpenSMTPD: test-opensmtpd will skip"
  fi
  rm -rf "$debs"
fi

if [ "$mode" = test ]; then
  # the second data: URL implementation for test-diff-dataurl (exact version,
  # from package-lock.json); the test skips itself if this fails (no
  # registry), which fails the run
  echo "==> npm ci --prefix tests/conformance/differential"
  npm ci --prefix tests/conformance/differential --no-audit --no-fund --loglevel=error \
    || echo "==> npm ci failed: test-diff-dataurl will skip"
fi

if [ "$mode" = test ]; then
  # An S3-compatible server for test-store-s3 (externalize_store_auth =
  # aws-sigv4): s3rver from npm at the versions in
  # tests/integration/s3rver/package-lock.json, in /opt/extbody-test-s3rver
  # where the test finds it (EXTBODY_TEST_S3RVER names another directory).
  # @20minutes/s3rver 4.0.2: it checks Signature Version 4 (s3rver 3.7.1
  # accepts any and could not show a wrong secret refused) and runs on Debian
  # 12's node 18 (the fork's 5.0.0 needs node 24). Installed again whenever
  # the lock file changes. The test only runs it on 127.0.0.1; without it the
  # test skips, which fails the run.
  s3_root=/opt/extbody-test-s3rver
  if [ ! -f "$s3_root/node_modules/@20minutes/s3rver/lib/s3rver.js" ] \
     || ! cmp -s tests/integration/s3rver/package-lock.json "$s3_root/package-lock.json"; then
    if [ "$(id -u)" -eq 0 ]; then sudo=; else sudo=sudo; fi
    echo "==> npm ci --prefix $s3_root (s3rver for test-store-s3)"
    $sudo rm -rf "$s3_root/node_modules"
    $sudo mkdir -p "$s3_root"
    $sudo cp tests/integration/s3rver/package.json tests/integration/s3rver/package-lock.json "$s3_root/"
    $sudo npm ci --prefix "$s3_root" --no-audit --no-fund --loglevel=error \
      || echo "==> npm ci failed: test-store-s3 will skip, and the run fail"
  fi
fi

build() {  # build DIR [cmake options...]: 0 when it configured and built
  dir=$1; shift
  echo "==> configuring and building in $dir"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null && cmake --build "$dir" -j "$jobs"
}

if [ "$mode" = demo ]; then
  # only the command, in a build directory of its own (no tests, no API
  # reference): its compiler output goes to build-demo/build.log
  echo "==> building extbody in build-demo (compiler output: build-demo/build.log)"
  mkdir -p build-demo
  if ! { cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEXTBODY_TESTS=OFF -DEXTBODY_DOCS=OFF \
         && cmake --build build-demo -j "$jobs" --target extbody; } >build-demo/build.log 2>&1; then
    tail -n 20 build-demo/build.log
    echo "==> the build failed (build-demo/build.log)"
    exit 1
  fi
  eb=build-demo/src/extbody
  "$eb" --version | cut -c1-100
  out=build-demo/demo
  mkdir -p "$out"
  # fetching is off by default: the demo resolves data: URLs and stays on this machine
  echo
  echo "==> 1. extbody inspect data/samples/*.eml: every reference, and what rewrite would do"
  "$eb" inspect data/samples/*.eml
  echo
  echo "==> 2. extbody rewrite --report data/samples/references.eml > $out/references.eml"
  "$eb" rewrite --report data/samples/references.eml 2>&1 >"$out/references.eml"
  echo "    the message: $(wc -c <data/samples/references.eml) bytes in, $(wc -c <"$out/references.eml") bytes out;" \
       "external-body parts left: $(grep -c '^Content-Type: message/external-body' "$out/references.eml")" \
       "(the ones the report says were left, byte for byte)"
  echo "    a part it resolved, as written:"
  sed -n '/^Content-Type: text\/csv/,/^$/p' "$out/references.eml" | cut -c1-100 | sed 's/^/      /'
  echo
  # externalize: the 64 KiB PDF of data/samples/attachment.eml into a directory
  # store in a temporary directory (the threshold lowered from 1M to 32K for
  # the sample); the URLs name files.example.org, nothing is fetched or served
  store=$(mktemp -d "${TMPDIR:-/tmp}/extbody-demo-store.XXXXXX")
  trap 'rm -rf "$store"' EXIT
  ext="-o externalize_store=$store -o externalize_base_url=https://files.example.org/objects -o externalize_min_size=32K -o externalize_retention=30"
  echo "==> 3. extbody externalize --report data/samples/attachment.eml > $out/attachment.eml (store: $store)"
  # shellcheck disable=SC2086
  "$eb" externalize $ext --report data/samples/attachment.eml 2>&1 >"$out/attachment.eml"
  obj=$(ls "$store")
  echo "    the store holds one object, named by the SHA-256 of the PDF's bytes:"
  echo "      $obj ($(wc -c <"$store/$obj") bytes; sha256sum: $(sha256sum <"$store/$obj" | cut -c1-16)...)"
  echo "    the message: $(wc -c <data/samples/attachment.eml) bytes in, $(wc -c <"$out/attachment.eml") bytes out; the reference in place of the PDF:"
  sed -n '/^Content-Type: message\/external-body/,/^Content-ID/p' "$out/attachment.eml" | sed 's/^/      /'
  if sed -n '/^JVBER/,/^$/p' data/samples/attachment.eml | base64 -d | cmp -s - "$store/$obj"; then
    echo "    the object holds exactly the PDF's decoded bytes (cmp)"
  else
    echo "    the object differs from the PDF's bytes"; exit 1
  fi
  echo
  echo "==> 4. extbody inspect $out/attachment.eml: the reference rewrite --fetch would fetch back"
  "$eb" inspect "$out/attachment.eml"
  echo
  echo "==> 5. a second externalize changes nothing"
  # shellcheck disable=SC2086
  if "$eb" externalize $ext "$out/attachment.eml" | cmp -s - "$out/attachment.eml"; then
    echo "    byte for byte the same (cmp)"
  else
    echo "    it changed the message"; exit 1
  fi
  echo
  echo "==> done: the outputs are in $out; extbody(1): man -l src/cli/extbody.1"
  exit 0
fi

# --- the stages -----------------------------------------------------------
# Every stage runs whatever happened to the ones before it; each is reported
# on one line at the end, and the command fails if any stage failed or any test
# (or any case inside a test) was skipped: a skip is a missing install step or
# a machine the suite cannot test on, never a pass. EXTBODY_ALLOW_SKIP=1 lets
# a developer without root run it anyway (the skips are still listed).
summary=
bad=0
stage_t0=$(date +%s)
stage_line () {  # stage_line NAME TEXT [failed]: with the stage's time (since wanted)
  case $2 in "not run"*) took= ;; *) took=" ($(( $(date +%s) - stage_t0 )) s)" ;; esac
  summary="$summary$(printf '%-10s %s%s' "$1:" "$2" "$took")
"
  [ "${3:-}" != failed ] || bad=1
}

# run_ctest NAME DIR [ctest arguments...]: ctest in DIR, its result as a line
run_ctest () {
  name=$1 dir=$2; shift 2
  log="$dir/ctest-$name.log"
  rc=0
  (cd "$dir" && ctest --output-on-failure -j "$jobs" "$@") >"$log" 2>&1 || rc=$?
  cat "$log"
  total=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\1 \2/p' "$log" | tail -n 1)
  nfail=${total% *}
  ntotal=${total#* }
  [ -n "$total" ] || { nfail=?; ntotal=?; }
  nskip=$(grep -c '\*\*\*Skipped' "$log" || true)
  # a case a test program skipped itself (GLib's "ok N /path # SKIP reason")
  ncase=$(grep -c '^ok [0-9]* .* # SKIP' "$dir/Testing/Temporary/LastTest.log" 2>/dev/null || true)
  text="$ntotal tests, $nfail failed, $nskip skipped, $ncase skipped cases"
  if [ "$nskip" != 0 ]; then
    text="$text ($(grep '\*\*\*Skipped' "$log" | sed 's/.*: \([^ ]*\) .*/\1/' | tr '\n' ' ' | sed 's/ $//'))"
  fi
  if [ "$ncase" != 0 ]; then
    text="$text [$(grep '^ok [0-9]* .* # SKIP' "$dir/Testing/Temporary/LastTest.log" | sed 's/^ok [0-9]* \([^ ]*\) .*/\1/' | tr '\n' ' ' | sed 's/ $//')]"
  fi
  if [ "$rc" -ne 0 ] || [ "$nfail" != 0 ]; then
    stage_line "$name" "FAILED: $text" failed
  elif [ "$nskip" != 0 ] || [ "$ncase" != 0 ]; then
    if [ "${EXTBODY_ALLOW_SKIP:-0}" = 1 ]; then
      stage_line "$name" "passed with skips: $text"
    else
      stage_line "$name" "SKIPPED TESTS (a skip fails the run): $text" failed
    fi
  else
    stage_line "$name" "passed: $text"
  fi
}

# stage NAME DIR [cmake options...] -- [ctest arguments...]: configure, build, test
stage () {
  name=$1 dir=$2; shift 2
  opts=
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts="$opts $1"; shift; done
  [ $# -gt 0 ] && shift
  # shellcheck disable=SC2086
  if build "$dir" $opts; then
    run_ctest "$name" "$dir" "$@"
  else
    stage_line "$name" "FAILED: the build failed" failed
  fi
}

# EXTBODY_STAGES: the stages to run, of "normal packages sanitize clang fuzz"
# (all of them by default; tests/bare-debian.sh runs some in a bare root of
# another release)
stages=${EXTBODY_STAGES:-normal packages sanitize clang fuzz}
for s in $stages; do
  case $s in normal|packages|sanitize|clang|fuzz) ;;
    *) echo "EXTBODY_STAGES: no stage '$s' (normal packages sanitize clang fuzz)" >&2; exit 64 ;;
  esac
done
wanted () {  # wanted STAGE: true when EXTBODY_STAGES names it (its clock starts)
  stage_t0=$(date +%s)
  case " $stages " in *" $1 "*) return 0 ;; esac
  stage_line "$1" "not run (EXTBODY_STAGES=\"$stages\")"
  return 1
}

wanted normal && stage normal build --
# The Debian packages: built from a copy of the tree, installed with dpkg -i,
# used (the command, the milter's configuration check, the example against
# libextbody-dev), purged (exit 77 where it would touch an administrator's own
# extbody: a skip, which fails the run like any other)
if wanted packages; then
  echo "==> building, installing and trying the Debian packages"
  rc=0; sh tests/packaging/deb-smoke.sh build-deb || rc=$?
  case $rc in
    0) stage_line packages "passed: built, lintian, installed, used, purged; both orders, Dovecot and upgrades on a bare ${pretty:-root}" ;;
    77) if [ "${EXTBODY_ALLOW_SKIP:-0}" = 1 ]; then stage_line packages "skipped (see above)"
        else stage_line packages "SKIPPED (a skip fails the run; see above)" failed; fi ;;
    *) stage_line packages "FAILED (exit $rc)" failed ;;
  esac
fi
if wanted sanitize; then
  export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  echo "==> the test suite under AddressSanitizer and UndefinedBehaviorSanitizer (all but the skip path's heavy run and the HAProxy pool)"
  # test-skip-path-heavy is /skip-path/heavy alone: many more messages down
  # the same paths test-skip-path takes under the sanitizers here; the
  # normal build runs it. test-pool is three daemons, HAProxy and Postfix
  # on namespaces for 75 s, all of it serial: the daemon code it drives
  # (/healthz, drain_delay, extbodyc's lists and tries, the shared-cache
  # check) runs under the sanitizers in test-http, test-extbodyc and
  # test-redis; the normal build runs the pool
  stage sanitize build-sanitize -DEXTBODY_SANITIZE=ON -- -E '^(test-skip-path-heavy|test-pool)$'
  unset ASAN_OPTIONS UBSAN_OPTIONS
fi
# Everything again with clang, tests included, under the same -Werror: clang
# warns where gcc does not. Its tests without the slow ones the gcc builds
# already ran twice (Postfix, valgrind, the hostile suites, the skip path and
# its runs over the hostile suite's messages, the mailbox runs, the demo).
if wanted clang; then
  echo "==> the clang build's tests (all but Postfix, the Redis pool, the HAProxy pool, Exim, Sendmail, OpenSMTPD, Dovecot, valgrind, the hostile suites, the skip path, the mailbox runs and the demo)"
  stage clang build-clang -DCMAKE_C_COMPILER=clang -- \
    -E '^(test-postfix.*|test-redis-pool|test-pool|test-teardown|test-valgrind|test-hostile.*|test-skip-path.*|test-mailbox|test-demo|test-exim|test-sendmail|test-opensmtpd|test-dovecot.*)$'
fi
# Every libFuzzer target for EXTBODY_FUZZ_SECONDS (10) from the committed seeds;
# tests/fuzz/run-fuzz.sh runs them for longer.
if wanted fuzz; then
  echo "==> fuzzing every target (libFuzzer, ASan, UBSan) for ${EXTBODY_FUZZ_SECONDS:-10} s each"
  export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1
  stage fuzz build-fuzz -DEXTBODY_FUZZ=ON -DEXTBODY_TESTS=OFF -DEXTBODY_WERROR=OFF -DCMAKE_C_COMPILER=clang \
    -DEXTBODY_FUZZ_SECONDS="${EXTBODY_FUZZ_SECONDS:-10}" --
  unset ASAN_OPTIONS
fi

echo
echo "==> summary (${pretty:-this system})"
printf '%s' "$summary"
if [ "$bad" -ne 0 ]; then
  echo "==> FAILED: a stage above failed or skipped tests"
  exit 1
fi
if [ -n "${EXTBODY_STAGES:-}" ]; then
  echo "==> every stage run passed, nothing skipped"
else
  echo "==> every stage passed, nothing skipped"
fi
