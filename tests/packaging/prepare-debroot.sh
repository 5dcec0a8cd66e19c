#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# prepare-debroot.sh - a bare Debian 12 root for the package tests, made once.
#
#   sh tests/packaging/prepare-debroot.sh [DIR]     (default /opt/extbody-test-debroot)
#
# The package tests (tests/packaging/deb-orders.sh) install the .deb files built
# from debian/ on a bare Debian 12, as a new administrator would, in both
# orders: extbodyd before Postfix and after it. They must not remove this
# machine's own Postfix, and they may not use the network, so this script,
# run at set-up time (it may use the network), makes a minimal Debian 12 root
# with `debootstrap --variant=minbase bookworm` from this machine's own apt
# mirror, and downloads into its apt cache (apt-get install --download-only:
# nothing is installed) the packages the tests then install offline: Postfix
# and the extbody packages' run-time dependencies. The tests work on a
# throw-away overlay of it; DIR itself is never changed by them.
#
# Needs root and debootstrap (apt-get install debootstrap). Run again, it only
# downloads what a changed package list adds. Remove DIR to start afresh.
set -eu
root=${1:-/opt/extbody-test-debroot}
# Postfix, and what libextbody2, extbody and extbodyd depend on
# (debian/control, python3 among them: extbody ships Python scripts such as
# extbody-imap-rewrite; the shared libraries dpkg-shlibdeps finds in the build)
pkgs="postfix adduser python3 libglib2.0-0 libgmime-3.0-0 libcurl4 libjson-glib-1.0-0
  libmilter1.0.1 libmicrohttpd12 libhiredis0.14 libssl3"

[ "$(id -u)" -eq 0 ] || { echo "prepare-debroot: needs root" >&2; exit 77; }
command -v debootstrap >/dev/null || { echo "prepare-debroot: apt-get install debootstrap" >&2; exit 69; }
src=/etc/apt/sources.list.d/debian.sources
if [ -f "$src" ]; then
  mirror=$(awk '/^URIs:/{print $2; exit}' "$src")
else
  mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list)
fi
if [ ! -x "$root/usr/bin/apt-get" ]; then
  echo "==> debootstrap --variant=minbase bookworm $root $mirror"
  rm -rf "$root"; mkdir -p "$root"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 || {
    tail -n 5 "$root.debootstrap.log" >&2; echo "prepare-debroot: debootstrap failed" >&2; exit 1; }
  if [ -f "$src" ]; then cp "$src" "$root/etc/apt/sources.list.d/"; rm -f "$root/etc/apt/sources.list"
  else cp /etc/apt/sources.list "$root/etc/apt/sources.list"; fi
  # a chroot starts no services while packages are installed (Debian's
  # policy-rc.d convention): the tests start the daemons themselves
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 0755 "$root/usr/sbin/policy-rc.d"
  echo extbody-test.example >"$root/etc/mailname"
  echo extbody-test >"$root/etc/hostname"
fi
stamp="$root/.extbody-test-packages"
if [ "$(cat "$stamp" 2>/dev/null)" != "$(echo $pkgs)" ]; then
  echo "==> apt-get install --download-only $(echo $pkgs) (into $root)"
  for m in proc sys dev; do mountpoint -q "$root/$m" || mount --bind "/$m" "$root/$m"; done
  # shellcheck disable=SC2086
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    sh -c "apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends --download-only $(echo $pkgs) >/dev/null" \
    || rc=$?
  for m in dev sys proc; do umount "$root/$m" 2>/dev/null || true; done
  [ "${rc:-0}" -eq 0 ] || { echo "prepare-debroot: apt-get --download-only failed" >&2; exit 1; }
  echo $pkgs >"$stamp"
fi
echo "==> $root: $(ls "$root/var/cache/apt/archives"/*.deb | wc -l) packages ready for offline installation"
