#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# prepare-debroot.sh - a bare root of this machine's Debian release for the
# package tests, made once.
#
#   sh tests/packaging/prepare-debroot.sh [DIR]     (default /opt/extbody-test-debroot)
#
# The package tests (tests/packaging/deb-orders.sh) install the .deb files built
# from debian/ on a bare Debian, as a new administrator would, in both orders
# (extbodyd before Postfix and after it) and beside Dovecot. They must not
# remove this machine's own Postfix, and they may not use the network, so this
# script, run at set-up time (it may use the network), makes a minimal root of
# the release this machine runs (the packages are built here, against its
# libraries: Debian 13 trixie or Debian 12 bookworm, read from /etc/os-release)
# with `debootstrap --variant=minbase` from this machine's own apt mirror, and
# downloads into its apt cache (apt-get install --download-only: nothing is
# installed) the packages the tests then install offline: Postfix, Dovecot's
# LMTP server and Sieve, and the extbody packages' run-time dependencies. Those
# are not named here: they are the libraries debian/control's Build-Depends
# (the -dev packages) depend on, as this release names them (libcurl4 on
# Debian 12, libcurl4t64 on Debian 13). The tests work on a throw-away overlay
# of it; DIR itself is never changed by them.
#
# Needs root and debootstrap (apt-get install debootstrap). Run again, it only
# downloads what a changed package list adds, and makes the root afresh when
# this machine's release is no longer the root's. Remove DIR to start afresh.
set -eu
root=${1:-/opt/extbody-test-debroot}
top=$(cd "$(dirname "$0")/../.." && pwd)

[ "$(id -u)" -eq 0 ] || { echo "prepare-debroot: needs root" >&2; exit 77; }
command -v debootstrap >/dev/null || { echo "prepare-debroot: apt-get install debootstrap" >&2; exit 69; }
# shellcheck disable=SC1091
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$suite" ] || { echo "prepare-debroot: /etc/os-release names no release (VERSION_CODENAME)" >&2; exit 69; }

# the run-time libraries of the build dependencies, by this release's names
bd=$(sed -n '/^Build-Depends:/,/^[A-Z]/p' "$top/debian/control" | sed '1s/^Build-Depends://;$d' \
     | tr ',' '\n' | sed 's/(.*)//;s/[[:space:]]//g' | grep -- '-dev$')
# shellcheck disable=SC2086
libs=$(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
         --no-enhances $bd 2>/dev/null \
       | sed -n 's/^ *|\{0,1\}Depends: \(lib[a-z0-9.+-]*\)$/\1/p' \
       | grep -v -- '-\(dev\|bin\|doc\)$' | sort -u | tr '\n' ' ')
[ -n "$libs" ] || { echo "prepare-debroot: apt-cache knows no dependencies of $(echo $bd) (apt-get update?)" >&2; exit 1; }
# Postfix, Dovecot (LMTP, Sieve) and OpenDKIM for the orders deb-orders.sh
# tries; adduser
# and python3, which the packages depend on by name
pkgs="postfix dovecot-core dovecot-lmtpd dovecot-sieve opendkim adduser python3 $libs"

src=/etc/apt/sources.list.d/debian.sources
if [ -f "$src" ]; then
  mirror=$(awk '/^URIs:/{print $2; exit}' "$src")
else
  mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list)
fi
if [ -x "$root/usr/bin/apt-get" ] && [ "$(cat "$root/.extbody-test-suite" 2>/dev/null)" != "$suite" ]; then
  echo "==> $root is not a $suite root (this machine's release): making it afresh"
  rm -rf "$root"
fi
if [ ! -x "$root/usr/bin/apt-get" ]; then
  echo "==> debootstrap --variant=minbase $suite $root $mirror"
  rm -rf "$root"; mkdir -p "$root"
  debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 || {
    tail -n 5 "$root.debootstrap.log" >&2; echo "prepare-debroot: debootstrap failed" >&2; exit 1; }
  if [ -f "$src" ]; then cp "$src" "$root/etc/apt/sources.list.d/"; rm -f "$root/etc/apt/sources.list"
  else cp /etc/apt/sources.list "$root/etc/apt/sources.list"; fi
  # a chroot starts no services while packages are installed (Debian's
  # policy-rc.d convention): the tests start the daemons themselves
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 0755 "$root/usr/sbin/policy-rc.d"
  echo extbody-test.example >"$root/etc/mailname"
  echo extbody-test >"$root/etc/hostname"
  echo "$suite" >"$root/.extbody-test-suite"
fi
# the root brought up to date with its release (security updates), so that
# an offline `apt-get full-upgrade` in it (tests/packaging/deb-upgrade.sh)
# has only the test's own packages to upgrade
pkgs="$pkgs (full-upgrade)"
stamp="$root/.extbody-test-packages"
if [ "$(cat "$stamp" 2>/dev/null)" != "$(echo $pkgs)" ]; then
  echo "==> apt-get full-upgrade, apt-get install --download-only $(echo $pkgs | sed 's/ (full-upgrade)$//') (into $root)"
  for m in proc sys dev; do mountpoint -q "$root/$m" || mount --bind "/$m" "$root/$m"; done
  # shellcheck disable=SC2086
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    sh -c "apt-get update -q >/dev/null && apt-get full-upgrade -y -q >/dev/null && apt-get install -y -q --no-install-recommends --download-only $(echo $pkgs | sed 's/ (full-upgrade)$//') >/dev/null" \
    || rc=$?
  for m in dev sys proc; do umount "$root/$m" 2>/dev/null || true; done
  [ "${rc:-0}" -eq 0 ] || { echo "prepare-debroot: apt-get --download-only failed" >&2; exit 1; }
  echo $pkgs >"$stamp"
fi
echo "==> $root: $(ls "$root/var/cache/apt/archives"/*.deb | wc -l) packages ready for offline installation"
