#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# bare-debian.sh - the README's test command in a bare Debian of another
# release than this machine's, as a new administrator's machine would be.
#
#   sh tests/bare-debian.sh SUITE DIR [STAGES]
#
#   SUITE    trixie (Debian 13) or bookworm (Debian 12)
#   DIR      where the root is made (removed and made afresh on every run)
#   STAGES   the stages of tests/quickstart.sh to run there (EXTBODY_STAGES;
#            default "normal packages")
#
# Makes a minimal root with `debootstrap --variant=minbase SUITE` from this
# machine's own Debian mirror (its sources, with SUITE's names), copies the
# committed tree (git archive HEAD; without git, the working tree) to
# /root/extbody there, under a 0700 /root as when root clones into its home
# (daemons that drop privileges cannot read it: the tests must not need
# them to), and runs `sh tests/quickstart.sh test` in it, chrooted, with a
# clean environment: every package it needs is installed by the README's
# command itself, from nothing. CI runs it for Debian 13 after the full run on
# its own Debian 12 (.ci/run). Needs root, debootstrap and the network to the
# mirror; exits with the quickstart's status, 77 where it cannot run.
set -eu
[ $# -ge 2 ] || { echo "usage: sh tests/bare-debian.sh SUITE DIR [STAGES]" >&2; exit 64; }
suite=$1 root=$2 stages=${3:-normal packages}
top=$(cd "$(dirname "$0")/.." && pwd)
case $suite in trixie|bookworm) ;; *) echo "bare-debian: $suite is not a release extbody is tested on (trixie, bookworm)" >&2; exit 64 ;; esac
case $root in /|/usr|/usr/*|/etc|/etc/*|/bin|/bin/*|/lib|/lib/*|/var|/root|/home) echo "bare-debian: $root is no place for a root of its own" >&2; exit 64 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "bare-debian: needs root (debootstrap, chroot, mounts)" >&2; exit 77; }
if ! command -v debootstrap >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null \
    || { echo "bare-debian: apt-get install debootstrap" >&2; exit 77; }
fi

src=/etc/apt/sources.list.d/debian.sources
if [ -f "$src" ]; then
  mirror=$(awk '/^URIs:/{print $2; exit}' "$src")
else
  mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list)
fi
here=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")

# mounts under the root: undone on every exit, before anything is removed
umount_all () {
  for m in dev/pts dev sys proc ""; do
    mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m" 2>/dev/null || true
  done
}
trap umount_all EXIT INT TERM
umount_all
# never remove through a mount (a /dev or /proc left bound in an old root)
if awk -v r="$root" '$2 == r || index($2, r "/") == 1 { found = 1 } END { exit !found }' /proc/mounts; then
  echo "bare-debian: something is still mounted under $root: not removing it" >&2; exit 1
fi
rm -rf --one-file-system "$root"
mkdir -p "$root"
start=$(date +%s)
echo "==> debootstrap --variant=minbase $suite $root $mirror"
debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 || {
  tail -n 5 "$root.debootstrap.log" >&2; echo "bare-debian: debootstrap failed" >&2; exit 1; }
# this machine's sources, for SUITE (SUITE, SUITE-updates, SUITE-security)
if [ -f "$src" ]; then
  sed "s/\\b$here\\b/$suite/g" "$src" >"$root/etc/apt/sources.list.d/debian.sources"
  rm -f "$root/etc/apt/sources.list"
else
  sed "s/\\b$here\\b/$suite/g" /etc/apt/sources.list >"$root/etc/apt/sources.list"
fi
# a site whose mirror is reached through its own certificate authority
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
chmod 0700 "$root/root"
mkdir "$root/root/extbody"
if git -C "$top" rev-parse --verify -q HEAD >/dev/null 2>&1; then
  git -C "$top" archive HEAD | tar -x -C "$root/root/extbody"
else
  tar -C "$top" --exclude='./build*' --exclude='./.git' --exclude='node_modules' -cf - . | tar -x -C "$root/root/extbody"
fi
echo "==> the root is ready in $(( $(date +%s) - start )) s: sh tests/quickstart.sh test (EXTBODY_STAGES=\"$stages\") in it"
# the root a mount point of its own (unshare --mount inside it needs one),
# and the kernel's file systems
mount --bind "$root" "$root"
for m in proc sys dev dev/pts; do mount --bind "/$m" "$root/$m"; done
rc=0
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  TERM=dumb LANG=C.UTF-8 NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt EXTBODY_STAGES="$stages" \
  /bin/sh -c 'update-ca-certificates >/dev/null 2>&1 || true; cd /root/extbody && exec sh tests/quickstart.sh test' \
  || rc=$?
echo "==> bare-debian: $suite, $(( $(date +%s) - start )) s in all, exit $rc"
exit $rc
