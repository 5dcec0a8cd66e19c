#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# deb-smoke.sh - build the Debian packages from this tree, install them with
# dpkg -i, use what they installed, and remove them again.
#
#   sh tests/packaging/deb-smoke.sh [OUTDIR]
#
# Builds in a copy of the tree (dpkg-buildpackage -b -us -uc), so the checkout
# keeps no debian/ build products; the .deb files and their file lists are left
# in OUTDIR (default: build-deb/). Needs root (dpkg -i) and the build
# dependencies of debian/control. Exits 77 (skipped) where it must not touch
# the machine: not root, or an extbody already installed or configured here
# that is not from an earlier run of this script. What a run installs is
# listed in $mark until it is purged: a run killed in between (a time limit,
# ^C) leaves it, and the next run purges those packages first instead of
# taking them for an administrator's and skipping.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$top/build-deb}
mark=/var/lib/extbody-deb-smoke.installed
skip() { echo "deb-smoke: skipped: $*" >&2; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "needs root for dpkg -i"
command -v dpkg-buildpackage >/dev/null || skip "no dpkg-buildpackage (apt-get install dpkg-dev debhelper)"
if [ -s "$mark" ]; then
  echo "==> purging what an earlier run of deb-smoke.sh installed and did not purge: $(cat "$mark")"
  # shellcheck disable=SC2046
  dpkg --purge $(cat "$mark") || { echo "deb-smoke: could not purge the packages listed in $mark" >&2; exit 1; }
fi
rm -f "$mark"
for p in extbody extbodyd libextbody2 libextbody-dev; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    skip "$p is installed on this machine already (not removing an administrator's package)"
  fi
done
if [ -e /etc/extbody/extbody.conf ] && ! dpkg -S /etc/extbody/extbody.conf >/dev/null 2>&1; then
  skip "/etc/extbody/extbody.conf exists and belongs to no package (not replacing it)"
fi

work=$(mktemp -d /tmp/extbody-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "==> copying the tree to $work/extbody-0"
mkdir "$work/extbody-0"
# the sources only: no build trees, no node_modules
tar -C "$top" --exclude='./build*' --exclude='./.git' --exclude='node_modules' -cf - . \
  | tar -C "$work/extbody-0" -xf -

echo "==> dpkg-buildpackage -b -us -uc"
(cd "$work/extbody-0" && dpkg-buildpackage -b -us -uc -j"$(nproc)" >"$work/build.log" 2>&1) || {
  tail -40 "$work/build.log" >&2; echo "deb-smoke: dpkg-buildpackage failed" >&2; exit 1; }
rm -rf "$out"; mkdir -p "$out"
cp "$work"/*.deb "$out"/

# lintian, this release's: no error (what Debian's archive would reject);
# its warnings are listed in OUTDIR/lintian.txt and shown, not fatal
command -v lintian >/dev/null || { echo "deb-smoke: no lintian (apt-get install lintian)" >&2; exit 1; }
echo "==> lintian $(lintian --version | sed 's/^Lintian v//') on the packages and their .changes"
rc=0
lintian --fail-on error --tag-display-limit 0 "$work"/*.changes >"$out/lintian.txt" 2>&1 || rc=$?
grep -v 'running with root privileges' "$out/lintian.txt" || true
[ "$rc" -eq 0 ] || { echo "deb-smoke: FAILED: lintian reports errors (E: above; exit $rc)" >&2; exit 1; }
for d in "$out"/*.deb; do
  echo "--- $(basename "$d")"
  dpkg-deb -c "$d" | awk '{ print $6 }' | grep -v '/$'
done | tee "$out/file-lists.txt"

installed=
pkgs=$(for d in "$out"/*.deb; do dpkg-deb -f "$d" Package; done)
cleanup() {
  if [ -n "$installed" ]; then
    # shellcheck disable=SC2086
    if dpkg --purge $pkgs >"$work/purge.log" 2>&1; then rm -f "$mark"
    else cat "$work/purge.log" >&2; echo "deb-smoke: the purge failed" >&2; fi
  fi
  rm -rf "$work"
}
trap cleanup EXIT

etc_before=$(ls -d /etc/extbody 2>/dev/null || true)
echo "==> dpkg -i"
echo "$pkgs" >"$mark"
installed=yes
DEBIAN_FRONTEND=noninteractive dpkg -i "$out"/*.deb

fail() { echo "deb-smoke: FAILED: $*" >&2; exit 1; }
echo "==> extbody --version"
/usr/bin/extbody --version
/usr/sbin/extbodyd --version
echo "==> extbodyd -n (the packaged configuration)"
/usr/sbin/extbodyd -n || fail "extbodyd -n rejects the packaged configuration"
grep -q '^milter_socket = unix:/var/spool/postfix/extbody/extbody.sock$' /etc/extbody/extbody.conf \
  || fail "the packaged configuration does not put the socket in Postfix's chroot"
getent passwd extbody >/dev/null || fail "postinst made no extbody user"
# the seal's key: made by extbodyd's postinst, named by the shipped file,
# read by the daemon's user and nobody else
key=/etc/extbody/trace.key
[ "$(stat -c '%a %U %G' $key 2>/dev/null)" = "640 root extbody" ] \
  || fail "no $key of mode 0640, root:extbody ($(ls -l /etc/extbody))"
[ "$(stat -c %s $key)" -ge 32 ] || fail "$key holds fewer than 32 bytes"
grep -qx "trace_key_file = $key" /etc/extbody/extbody.conf || fail "the packaged configuration does not name $key"
setpriv --reuid=extbody --regid=extbody --init-groups /usr/sbin/extbodyd -n \
  || fail "extbodyd -n, as the user extbody, with the packaged key"
! setpriv --reuid=nobody --regid=nogroup --clear-groups cat $key >/dev/null 2>&1 || fail "another user reads $key"
echo "==> the seal's key: $(stat -c '%A %U:%G %s bytes' $key), read by extbody, not by others"
[ "$(stat -c %U /var/spool/postfix/extbody)" = extbody ] || fail "/var/spool/postfix/extbody is not extbody's"
# the unit where Debian 13 puts units, from either release's build
[ -f /usr/lib/systemd/system/extbodyd.service ] || fail "no unit in /usr/lib/systemd/system"
dpkg -S /usr/lib/systemd/system/extbodyd.service >/dev/null 2>&1 || fail "extbodyd does not own /usr/lib/systemd/system/extbodyd.service"
grep -q 'deb-systemd-helper .*extbodyd.service' /var/lib/dpkg/info/extbodyd.postinst \
  || fail "the postinst does not enable the unit (debhelper did not see it)"
grep -q '^ExecStart=/usr/sbin/extbodyd' /usr/lib/systemd/system/extbodyd.service \
  || fail "the unit does not name the installed daemon"

echo "==> one message through the installed command"
/usr/bin/extbody rewrite --report "$top/data/samples/references.eml" >"$work/out.eml" 2>"$work/report.txt"
cat "$work/report.txt"
grep -q 'resolved' "$work/report.txt" || fail "nothing resolved"
! cmp -s "$top/data/samples/references.eml" "$work/out.eml" || fail "the message was not rewritten"

echo "==> externalize with the installed command (a directory store)"
mkdir -m 0755 "$work/store"
/usr/bin/extbody externalize -o externalize_store="$work/store" \
  -o externalize_base_url=https://files.example.org/objects -o externalize_min_size=32K \
  --report "$top/data/samples/attachment.eml" >"$work/ext.eml" 2>"$work/ext.txt" \
  || fail "extbody externalize failed"
cat "$work/ext.txt"
hex=be5cc2defc64b6b0fe645bf1b434f36b1bcbd70c6dbe971faf66f789986386c6
grep -qx "extbody: part 2 application/pdf 65547 bytes: externalized https://files.example.org/objects/$hex" \
  "$work/ext.txt" || fail "the PDF was not externalized"
[ "$(ls "$work/store")" = "$hex" ] || fail "the store does not hold the one object $hex"
[ "$(sha256sum <"$work/store/$hex" | cut -d' ' -f1)" = "$hex" ] || fail "the object is not named by its SHA-256"
grep -q '^Content-Type: message/external-body; access-type=URL;$' "$work/ext.eml" \
  && grep -q '^	URL="https://files.example.org/objects/be5cc2$' "$work/ext.eml" \
  && grep -q '^Content-MD5: ' "$work/ext.eml" || fail "no reference in the message"
/usr/bin/extbody externalize -o externalize_store="$work/store" \
  -o externalize_base_url=https://files.example.org/objects -o externalize_min_size=32K \
  "$work/ext.eml" | cmp -s - "$work/ext.eml" || fail "a second externalize changed the message"
for f in store-nginx.conf.example store-apache-dav.conf.example extbody.conf.example; do
  [ -f "/usr/share/doc/extbody/examples/$f" ] || fail "the package does not install examples/$f"
done

# What the documentation says must be true as installed (issue 26): every
# snippet names the packaged paths, and the documented commands run.
echo "==> the shipped snippets, as installed, name what the packages installed"
doc=/usr/share/doc/extbody/filters
sock=$(sed -n 's|^milter_socket = unix:||p' /etc/extbody/extbody.conf)
grep -q '^#   postconf -e "smtpd_milters = ${m:+$m, }{ unix:extbody/extbody.sock, default_action=accept }"$' \
  "$doc/postfix-main.cf" && [ "/var/spool/postfix/extbody/extbody.sock" = "$sock" ] \
  || fail "postfix-main.cf's commands do not add the packaged socket ($sock) as smtpd's chroot names it"
! grep -q '^smtpd_milters' "$doc/postfix-main.cf" \
  || fail "postfix-main.cf has a line that, appended to main.cf, would replace the site's milters"
grep -q "S=unix:$sock," "$doc/sendmail.mc" || fail "sendmail.mc does not name the packaged socket $sock"
for f in $(sed -n 's|^ *transport_filter = \([^ ]*\) .*|\1|p' "$doc/exim/exim4-extbody.conf" | sort -u) \
         $(sed -n 's|^  argv=\([^ ]*\) .*|\1|p' "$doc/pipe/README.md" | sort -u); do
  echo "    $f"
  [ -x "$f" ] || fail "a shipped snippet names $f, which is not installed"
  "$f" --help >/dev/null || fail "$f --help"
done
[ "$(sed -n 's|^ *transport_filter = \([^ ]*\) .*|\1|p' "$doc/exim/exim4-extbody.conf" | sort -u)" \
  = /usr/bin/extbodyc ] || fail "exim4-extbody.conf does not name /usr/bin/extbodyc"
# the way without the daemon, which the snippet gives in a comment
grep -q '^#   transport_filter = /usr/libexec/extbody/extbody-exim -q \$message_exim_id$' "$doc/exim/exim4-extbody.conf" \
  || fail "exim4-extbody.conf does not give the per-message /usr/libexec/extbody/extbody-exim"
# the configuration for the Dovecot here (2.4 on Debian 13, 2.3 on Debian 12),
# as the Dovecot README installs it; with no Dovecot, each file says the same
dovecot_ver=
command -v dovecot >/dev/null && dovecot_ver=$(dovecot --version | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p')
for v in 2.3 2.4; do
  [ -f "$doc/dovecot/90-extbody.conf-$v" ] || fail "the package does not ship filters/dovecot/90-extbody.conf-$v"
done
dovecot_conf=$doc/dovecot/90-extbody.conf-${dovecot_ver:-2.4}
[ -f "$dovecot_conf" ] || fail "no 90-extbody.conf for Dovecot $dovecot_ver (the README's step would fail)"
bindir=$(sed -n 's|^ *sieve_filter_bin_dir = ||p' "$dovecot_conf")
echo "    $bindir/extbody"
[ "$bindir" = /usr/libexec/extbody/sieve-filter ] && [ -x "$bindir/extbody" ] \
  || fail "90-extbody.conf's sieve_filter_bin_dir ($bindir) holds no program extbody"
[ "$(ls "$bindir")" = extbody ] || fail "$bindir holds more than the filter: $(ls "$bindir")"
grep -qx 'filter "extbody";' "$doc/dovecot/extbody.sieve" || fail "extbody.sieve does not call extbody"
# extbody-imap-rewrite on PATH with its man page; the old libexec path a
# link to it (cron jobs name it)
grep -q "^extbody-imap-rewrite -u alice " "$doc/dovecot/README.md" \
  || fail "the Dovecot README does not give extbody-imap-rewrite -u alice"
for cmd in /usr/bin/extbody-imap-rewrite /usr/libexec/extbody/extbody-imap-rewrite; do
  "$cmd" --help >/dev/null || fail "$cmd --help"
done
[ "$(readlink -f /usr/libexec/extbody/extbody-imap-rewrite)" = /usr/bin/extbody-imap-rewrite ] \
  || fail "/usr/libexec/extbody/extbody-imap-rewrite is not a link to /usr/bin/extbody-imap-rewrite"
[ -f /usr/share/man/man1/extbody-imap-rewrite.1.gz ] || fail "no man page extbody-imap-rewrite(1)"
! grep -rn '/usr/local/libexec/extbody-exim\|/usr/lib/dovecot/sieve-filter\|^smtpd_milters = unix:/run' "$doc" \
  || fail "an installed README or snippet still gives an old path"
echo "==> a message through the installed Exim and Sieve wrappers, as the snippets call them"
/usr/libexec/extbody/extbody-exim -q 1xTEST-000001-AB <"$top/data/samples/references.eml" >"$work/exim.eml"
grep -q '^X-Extbody: resolved' "$work/exim.eml" || fail "extbody-exim did not resolve the sample"
env -i "$bindir/extbody" -l stderr <"$top/data/samples/references.eml" >"$work/sieve.eml" \
  || fail "the Sieve filter program exits $?"
grep -q '^X-Extbody: resolved' "$work/sieve.eml" || fail "the Sieve filter did not resolve the sample"
if command -v doveconf >/dev/null; then
  echo "==> doveconf -n with the installed $(basename "$dovecot_conf") (Dovecot $(dovecot --version))"
  {
    # 2.4 wants its version settings first (Debian's dovecot.conf has them)
    case $dovecot_ver in 2.3) ;; *) v=$(dovecot --version | sed 's/^\([0-9.]*[0-9]\).*/\1/')
      printf 'dovecot_config_version = %s\ndovecot_storage_version = %s\n' "$v" "$v" ;; esac
    printf 'protocols = lmtp\n!include %s\n' "$dovecot_conf"
  } >"$work/dovecot.conf"
  doveconf -n -c "$work/dovecot.conf" >"$work/doveconf.out" 2>&1 || { cat "$work/doveconf.out" >&2; fail "doveconf -n"; }
  grep -q "sieve_filter_bin_dir = $bindir" "$work/doveconf.out" || fail "doveconf does not read sieve_filter_bin_dir"
fi
exim=${EXTBODY_TEST_EXIM:-/opt/extbody-test-exim/usr/sbin/exim4}
if [ -x "$exim" ]; then
  echo "==> exim -bV with the installed exim4-extbody.conf (tests/exim/exim-peer.sh check)"
  mkdir -p "$work/exim/etc" "$work/exim/spool"
  chmod 0755 "$work" "$work/exim" "$work/exim/etc"   # Exim reads the lines as Debian-exim
  cp /etc/passwd /etc/group "$work/exim/etc/"
  getent passwd Debian-exim >/dev/null || {
    echo "Debian-exim:x:64990:64990::$work/exim/spool:/usr/sbin/nologin" >>"$work/exim/etc/passwd"
    echo "Debian-exim:x:64990:" >>"$work/exim/etc/group"; }
  EXIM=$exim sh "$top/tests/exim/exim-peer.sh" check "$work/exim" "$doc/exim/exim4-extbody.conf" >"$work/exim.out" 2>&1 \
    || { cat "$work/exim.out" >&2; fail "Exim refuses the installed exim4-extbody.conf"; }
  grep -q 'transport_filter = /usr/bin/extbodyc -s unix:/run/extbody/http.sock ' "$work/exim.out" \
    || fail "Exim does not read the installed transport_filter"
fi

echo "==> the unit as installed: --check-mta after the start, the metrics directory writable"
unit=/usr/lib/systemd/system/extbodyd.service
grep -q '^ExecStartPost=-+/usr/sbin/extbodyd --check-mta postfix --if-installed$' "$unit" || fail "the unit does not run --check-mta"
grep -q '^ReadWritePaths=.* -/var/lib/prometheus/node-exporter' "$unit" \
  || fail "the unit does not let the daemon write /var/lib/prometheus/node-exporter"
zgrep -q /var/lib/prometheus/node-exporter /usr/share/man/man8/extbodyd.8.gz \
  || fail "extbodyd(8) does not name /var/lib/prometheus/node-exporter"

if [ -f "$top/examples/resolve-one.c" ]; then
  echo "==> examples/resolve-one.c against the installed libextbody-dev (pkg-config extbody-2)"
  # shellcheck disable=SC2046
  cc -o "$work/resolve-one" "$top/examples/resolve-one.c" $(pkg-config --cflags --libs extbody-2) \
    || fail "the example does not build against the installed package"
  "$work/resolve-one" "$top/data/samples/references.eml" >"$work/ex.eml" || fail "the example failed"
  cmp -s "$work/out.eml" "$work/ex.eml" || fail "the example's output differs from the command's"
fi
echo "==> deb-smoke: packages built, installed, used; purging them"
installed=
# shellcheck disable=SC2086
dpkg --purge $pkgs >"$work/purge.log" 2>&1 || { cat "$work/purge.log" >&2; fail "dpkg --purge"; }
rm -f "$mark"
for p in $pkgs; do
  ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q installed || fail "$p still installed after the purge"
done
[ ! -e /etc/extbody/extbody.conf ] || fail "the purge left /etc/extbody/extbody.conf"
[ ! -e /etc/extbody/trace.key ] || fail "the purge left /etc/extbody/trace.key"
[ -n "$etc_before" ] || [ ! -e /etc/extbody ] || fail "the purge left /etc/extbody: $(ls -A /etc/extbody)"
[ ! -e /var/spool/postfix/extbody ] || fail "the purge left /var/spool/postfix/extbody"

# On a bare root of this release (the one tests/packaging/prepare-debroot.sh made), in
# both orders, with the shipped Postfix snippet as it is
echo "==> deb-orders.sh: extbodyd before and after Postfix, and beside Dovecot, on a bare $(. /etc/os-release && echo "$PRETTY_NAME")"
sh "$top/tests/packaging/deb-orders.sh" "$out"

# Upgraded as servers upgrade, unattended: from 0.1.0 (Debian 12, from the
# project's history) and to a next version, a message through Postfix at
# every step
echo "==> deb-upgrade.sh: upgrades by apt, unattended, on a bare $(. /etc/os-release && echo "$PRETTY_NAME")"
sh "$top/tests/packaging/deb-upgrade.sh" "$out"
