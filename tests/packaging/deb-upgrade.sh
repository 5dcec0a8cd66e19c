#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# deb-upgrade.sh - the packages upgraded as servers upgrade them: by apt,
# unattended (DEBIAN_FRONTEND=noninteractive, no terminal, standard input
# closed), in a bare root of this machine's release with Postfix, a message
# through Postfix's milter at every step.
#
#   sh tests/packaging/deb-upgrade.sh DEBDIR [ROOT]
#
# DEBDIR holds this tree's .deb files (deb-smoke.sh leaves them in build-deb/);
# ROOT (default /opt/extbody-test-debroot) is the bare root
# tests/packaging/prepare-debroot.sh made. The older and newer versions are
# built here, from sources, as the packages a site has installed or will be
# offered:
#
#   0.1.0  (Debian 12 only: 0.1.0 was built for it) from the project's
#          history, the tree of ee36a0d, the last 0.1.0 state whose packages
#          build; it needs the git history (a clone, not an exported tree)
#   next   this tree again as version THIS+next1, its shipped configuration
#          changed (a line added to /usr/share/extbody/extbody.conf), as the
#          next release will be
#
# Each scenario runs in a throw-away overlay of ROOT, chrooted, in private
# mount, PID and network namespaces, offline: the packages come from a local
# apt repository (file:/repo, its index made here), Postfix and the rest from
# ROOT's cache. The daemon runs as the unit runs it (no systemd in a chroot:
# by hand, as the extbody user), and is started again after each upgrade as
# the unit's restart would. Scenarios:
#
#   from-0.1.0           0.1.0's packages, 0.1.0's configuration as shipped,
#                        then `apt-get full-upgrade`: no prompt, extbodyd and
#                        the transitional extbody-milter installed, a message
#                        resolved; then `apt-get purge extbody-milter`: the
#                        socket's directory stays, a message resolved, and
#                        again after the daemon restarts
#   from-0.1.0-edited    the same with the administrator's edits to 0.1.0's
#                        /etc/extbody/extbody.conf: kept as they were
#   from-0.1.0-twice     a key set twice (0.1.0 took the later line): the
#                        upgrade's own output names the file, the line and
#                        the fix, and apt reports failure; fixed, `dpkg
#                        --configure -a` finishes and a message is resolved
#   to-next              this version with an edited configuration, then the
#                        next: no prompt, the edits kept, a message resolved
#
# Needs root, unshare, dpkg-dev (dpkg-scanpackages) and, for the 0.1.0
# scenarios, git with the history. Prints one line per scenario; exits 1 on
# a failure, 77 where it cannot run at all.
set -eu
[ $# -ge 1 ] || { echo "usage: deb-upgrade.sh DEBDIR [ROOT]" >&2; exit 64; }
debs=$(cd "$1" && pwd)
root=${2:-/opt/extbody-test-debroot}
top=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "deb-upgrade: skipped: $*" >&2; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (chroot, namespaces)"
[ -x "$root/usr/bin/apt-get" ] && [ -f "$root/.extbody-test-packages" ] \
  || skip "no prepared Debian root in $root (sh tests/packaging/prepare-debroot.sh)"
command -v dpkg-scanpackages >/dev/null || skip "no dpkg-scanpackages (apt-get install dpkg-dev)"
unshare --mount --pid --net --fork true 2>/dev/null || skip "unshare --mount --pid --net does not work here"
suite=$(cat "$root/.extbody-test-suite" 2>/dev/null || echo unknown)
this=$(dpkg-deb -f "$(ls "$debs"/extbodyd_*.deb | head -n 1)" Version)
# the commit whose packages are 0.1.0 (d6792bd, where the changelog first says
# 0.1.0, does not build)
old_commit=ee36a0d

work=$(mktemp -d /tmp/extbody-upgrade.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"

# build_debs SRC OUT: the binary packages of the tree SRC into OUT
build_debs() {
  (cd "$1" && dpkg-buildpackage -b -us -uc -j"$(nproc)" >"$1.build.log" 2>&1) \
    || { tail -n 30 "$1.build.log" >&2; echo "deb-upgrade: dpkg-buildpackage failed in $1" >&2; exit 1; }
  mkdir -p "$2"
  cp "$(dirname "$1")"/*.deb "$2"/
  rm -f "$2"/*-dbgsym_*.deb "$2"/libextbody-dev_*.deb
}

# 0.1.0, from the history (Debian 12 only)
old=
if [ "$suite" = bookworm ]; then
  if git -C "$top" cat-file -e "$old_commit^{commit}" 2>/dev/null; then
    echo "==> deb-upgrade: building 0.1.0 from $old_commit"
    mkdir -p "$work/old-src/extbody-0.1.0"
    git -C "$top" archive "$old_commit" | tar -x -C "$work/old-src/extbody-0.1.0"
    build_debs "$work/old-src/extbody-0.1.0" "$work/repo-old"
    old=yes
  else
    echo "==> deb-upgrade: the scenarios from 0.1.0 need the project's history (git, commit $old_commit):"
    echo "    this tree is an export; they run in a clone (CI)"
  fi
fi

# the next version: this tree, version THIS+next1, a line added to the
# shipped configuration
echo "==> deb-upgrade: building the next version ($this+next1) from this tree"
mkdir -p "$work/next-src/extbody-next"
tar -C "$top" --exclude='./build*' --exclude='./.git' --exclude='node_modules' -cf - . \
  | tar -C "$work/next-src/extbody-next" -xf -
{
  printf 'extbody (%s+next1) unstable; urgency=medium\n\n  * The next version, built by tests/packaging/deb-upgrade.sh.\n\n' "$this"
  printf ' -- extbody developers <extbody@example.org>  %s\n\n' "$(date -R)"
  cat "$work/next-src/extbody-next/debian/changelog"
} >"$work/changelog" && mv "$work/changelog" "$work/next-src/extbody-next/debian/changelog"
printf '\n# (a line the next version adds to the shipped file)\n' >>"$work/next-src/extbody-next/data/extbody.conf.example"
build_debs "$work/next-src/extbody-next" "$work/repo-next"
mkdir -p "$work/repo-this"
for p in libextbody2 extbody extbodyd extbody-milter; do cp "$debs/${p}_"*.deb "$work/repo-this/"; done

# index each repository (file:/repo, trusted: the packages are this test's)
for r in "$work"/repo-*; do
  (cd "$r" && dpkg-scanpackages -m . /dev/null >Packages 2>/dev/null)
done

# what runs inside the chroot, as root
cat >"$work/inside.sh" <<'EOF'
set -eu
scenario=$1
fail() { echo "deb-upgrade: $scenario: FAILED: $*" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
echo "postfix postfix/main_mailer_type select Local only" | debconf-set-selections
echo "postfix postfix/mailname string extbody-test.example" | debconf-set-selections
# the repository the site's apt sees: REPO (old, this or next)
use_repo() {
  rm -rf /repo; cp -r "/repos/repo-$1" /repo
  echo "deb [trusted=yes] file:/repo ./" >/etc/apt/sources.list.d/extbody.list
  apt-get update -q -o Dir::Etc::sourcelist=/etc/apt/sources.list.d/extbody.list \
    -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0 >/tmp/update.log 2>&1 \
    || { cat /tmp/update.log >&2; fail "apt-get update of file:/repo"; }
}
# apt as an unattended upgrade runs it: no terminal, nothing on standard input
apt_quiet() {
  apt-get -y -q -o Dpkg::Use-Pty=0 --no-install-recommends "$@" </dev/null >/tmp/apt.log 2>&1
}
daemon_pid=
daemon_stop() {
  [ -z "$daemon_pid" ] || { kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; }
  daemon_pid=
}
# the daemon as the unit runs it (User=extbody, UMask=0007, RuntimeDirectory)
daemon_start() {
  daemon_stop
  prog=/usr/sbin/extbodyd; [ -x $prog ] || prog=/usr/sbin/extbody-milter
  install -d -o extbody -g extbody -m 0755 /run/extbody
  setpriv --reuid=extbody --regid=extbody --init-groups --inh-caps=-all \
    sh -c "umask 007; exec $prog" >>/tmp/daemon.log 2>&1 &
  daemon_pid=$!
  i=0; while [ $i -lt 100 ] && [ ! -S /var/spool/postfix/extbody/extbody.sock ]; do sleep 0.1; i=$((i + 1)); done
  [ -S /var/spool/postfix/extbody/extbody.sock ] || { cat /tmp/daemon.log >&2; fail "$prog made no socket"; }
}
n_sent=0
resolved_count() {  # the messages in alice's mailbox with extbody's record
  if [ -f /var/mail/alice ]; then grep -c '^X-Extbody: resolved' /var/mail/alice || true; else echo 0; fi
}
# a message through Postfix's milter, resolved (WHAT: which step)
message_resolved() {
  n_sent=$((n_sent + 1))
  sed "s/^Message-ID: .*/Message-ID: <step-$n_sent@example.org>/" /tmp/references.eml \
    | /usr/sbin/sendmail -f sender@extbody-test.example alice || fail "$1: sendmail"
  i=0
  while [ $i -lt 300 ] && [ "$(resolved_count)" -lt $n_sent ]; do
    sleep 0.1; i=$((i + 1))
  done
  [ "$(resolved_count)" -eq $n_sent ] || {
    tail -n 20 /tmp/daemon.log >&2; postqueue -p >&2 || true
    fail "$1: message $n_sent did not arrive resolved through the milter"; }
  echo "==> $scenario: $1: message $n_sent resolved through Postfix's milter"
}
no_prompt() {  # the log of an apt run: no conffile question, no error
  ! grep -q "Configuration file '/etc/extbody\|conffile prompt\|end of file on stdin" /tmp/apt.log \
    || { cat /tmp/apt.log >&2; fail "$1: dpkg asked about a configuration file"; }
}

apt_quiet install postfix || { cat /tmp/apt.log >&2; fail "apt-get install postfix"; }
# (adduser comes with Postfix: Debian 13's minimal root has none)
adduser --quiet --disabled-password --gecos '' alice
[ -x /usr/lib/postfix/configure-instance.sh ] && /usr/lib/postfix/configure-instance.sh - >/dev/null 2>&1 || true

case $scenario in
from-0.1.0*)
  use_repo old
  apt_quiet install extbody-milter || { cat /tmp/apt.log >&2; fail "installing 0.1.0"; }
  echo "==> $scenario: installed $(dpkg-query -W -f='${Package} ${Version}\n' libextbody1 extbody extbody-milter | paste -sd, - | sed 's/,/, /g')"
  conf=/etc/extbody/extbody.conf
  case $scenario in
    from-0.1.0-edited)
      sed -i 's/^max_references = .*/max_references = 32/' $conf
      printf '# my own note\n' >>$conf
      grep -q '^max_references = 32$' $conf || fail "could not edit 0.1.0's configuration"
      cp $conf /tmp/edited.conf ;;
    from-0.1.0-twice)
      # as 0.1.0's documentation allowed: a line added further down
      echo 'max_references = 32' >>$conf
      twice=$(grep -n '^max_references = ' $conf | tail -n 1 | cut -d: -f1) ;;
  esac
  # 0.1.0's way into Postfix: its snippet appended to main.cf, its socket as
  # the package made it (0.1.0's snippet named another: a site had to)
  cat /usr/share/doc/extbody/filters/postfix-main.cf >>/etc/postfix/main.cf
  postconf -e "smtpd_milters = unix:extbody/extbody.sock"
  postfix start >/dev/null 2>&1 || fail "postfix start"
  daemon_start
  message_resolved "0.1.0"

  use_repo this
  rc=0; apt_quiet full-upgrade || rc=$?
  case $scenario in
  from-0.1.0-twice)
    [ "$rc" -ne 0 ] || { cat /tmp/apt.log >&2; fail "the upgrade reported success with a key set twice"; }
    grep -q "^  extbodyd: $conf:$twice: max_references is set a second time (first at $conf:[0-9]*): set each key once$" /tmp/apt.log \
      || { cat /tmp/apt.log >&2; fail "the upgrade's output does not name the file and the line"; }
    grep -q 'keep the line you mean and remove the other' /tmp/apt.log || fail "the upgrade's output does not give the fix"
    grep -q 'dpkg --configure -a' /tmp/apt.log || fail "the upgrade's output does not say how to finish"
    no_prompt "upgrade"
    echo "==> $scenario: the upgrade stopped, saying:"
    grep -A4 "is set a second time" /tmp/apt.log | sed 's/^/    /'
    sed -i "${twice}d" $conf
    rc=0; dpkg --configure -a </dev/null >/tmp/apt.log 2>&1 || rc=$?
    [ "$rc" -eq 0 ] || { cat /tmp/apt.log >&2; fail "dpkg --configure -a after the fix"; }
    ;;
  *)
    [ "$rc" -eq 0 ] || { cat /tmp/apt.log >&2; fail "apt-get full-upgrade from 0.1.0 (exit $rc)"; }
    no_prompt "upgrade" ;;
  esac
  dpkg-query -W -f='${Status}\n' extbodyd | grep -q 'install ok installed' || fail "extbodyd is not installed"
  dpkg-query -W -f='${Version}\n' extbody-milter | grep -qx "$THIS" || fail "extbody-milter is not the transitional package $THIS"
  [ ! -e /usr/share/man/man8/extbody-milter.8.gz ] || [ -L /usr/share/man/man8/extbody-milter.8.gz ] || fail "0.1.0's man page left behind"
  case $scenario in
    from-0.1.0-edited)
      cmp -s $conf /tmp/edited.conf || { diff /tmp/edited.conf $conf >&2 || true; fail "the administrator's edits were not kept"; }
      echo "==> $scenario: $conf kept as edited" ;;
    from-0.1.0)
      grep -q '^#fetch = off' $conf || fail "the unedited 0.1.0 file was not replaced by this version's"
      echo "==> $scenario: the unedited 0.1.0 file replaced by this version's" ;;
  esac
  [ ! -e $conf.dpkg-bak ] && [ ! -e $conf.dpkg-dist ] && [ ! -e $conf.dpkg-old ] || fail "a leftover $(ls $conf.dpkg-*)"
  # the seal's key, made by extbodyd's postinst on the upgrade too; an
  # upgraded file that was kept does not name it (NEWS.Debian: add the line)
  [ "$(stat -c '%a %U %G' /etc/extbody/trace.key 2>/dev/null)" = "640 root extbody" ] \
    || fail "the upgrade made no /etc/extbody/trace.key, mode 0640, root:extbody ($(ls -l /etc/extbody))"
  echo "==> $scenario: /etc/extbody/trace.key made; $conf $(grep -q '^trace_key_file = /etc/extbody/trace.key$' $conf && echo names it || echo does not name it)"
  # the unit's restart after the upgrade
  daemon_start
  message_resolved "after the upgrade"
  apt_quiet purge extbody-milter || { cat /tmp/apt.log >&2; fail "apt-get purge extbody-milter"; }
  [ -d /var/spool/postfix/extbody ] && [ -S /var/spool/postfix/extbody/extbody.sock ] \
    || fail "purging extbody-milter removed the socket or its directory"
  message_resolved "after purging extbody-milter"
  daemon_start
  message_resolved "after purging extbody-milter and restarting the daemon"
  ;;
to-next)
  use_repo this
  apt_quiet install extbodyd || { cat /tmp/apt.log >&2; fail "installing $THIS"; }
  conf=/etc/extbody/extbody.conf
  sed -i 's/^#max_references = .*/max_references = 32/' $conf
  grep -q '^max_references = 32$' $conf || fail "could not edit the configuration"
  cp $conf /tmp/edited.conf
  postfix start >/dev/null 2>&1 || fail "postfix start"
  daemon_start
  # the documented way into Postfix: the commands of the shipped postfix-main.cf
  awk '/Add extbodyd with these commands/ { f = 1 } /^# The last says OK/ { f = 0 }
       f && /^#   / { sub(/^#   /, ""); print }' /usr/share/doc/extbody/filters/postfix-main.cf >/tmp/steps.sh
  (set -e; . /tmp/steps.sh) >/tmp/steps.log 2>&1 || { cat /tmp/steps.log >&2; fail "postfix-main.cf's commands"; }
  message_resolved "$THIS"
  cp /etc/extbody/trace.key /tmp/trace.key.before
  use_repo next
  rc=0; apt_quiet full-upgrade || rc=$?
  [ "$rc" -eq 0 ] || { cat /tmp/apt.log >&2; fail "apt-get full-upgrade to the next version (exit $rc)"; }
  no_prompt "upgrade"
  dpkg-query -W -f='${Version}\n' extbodyd | grep -qx "$THIS+next1" || fail "extbodyd was not upgraded"
  grep -q 'a line the next version adds' /usr/share/extbody/extbody.conf || fail "the shipped file did not change"
  cmp -s $conf /tmp/edited.conf || { diff /tmp/edited.conf $conf >&2 || true; fail "the edits were not kept"; }
  echo "==> $scenario: the shipped file changed, $conf kept as edited, no prompt"
  cmp -s /etc/extbody/trace.key /tmp/trace.key.before && [ "$(stat -c '%a %U %G' /etc/extbody/trace.key)" = "640 root extbody" ] \
    || fail "the upgrade changed /etc/extbody/trace.key"
  echo "==> $scenario: /etc/extbody/trace.key kept as it was"
  daemon_start
  message_resolved "the next version"
  ;;
esac
daemon_stop
postfix stop >/dev/null 2>&1 || true
echo "==> $scenario: passed"
EOF

run_scenario() {
  scenario=$1
  w="$work/$scenario"
  mkdir -p "$w/upper" "$w/ovl" "$w/merged"
  cat >"$w/outer.sh" <<EOF
set -eu
if ! mount -t overlay overlay -o lowerdir=$root,upperdir=$w/upper,workdir=$w/ovl $w/merged 2>/dev/null; then
  cp -a $root/. $w/merged/
fi
mount -t proc proc $w/merged/proc
mount --bind /dev $w/merged/dev
mkdir -p $w/merged/repos
cp -r $work/repo-* $w/merged/repos/
cp $work/inside.sh $w/merged/tmp/inside.sh
cp $top/data/samples/references.eml $w/merged/tmp/references.eml
ip link set lo up 2>/dev/null || true
chroot $w/merged /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 THIS=$this \\
  sh /tmp/inside.sh $scenario
EOF
  unshare --mount --propagation private --pid --net --fork sh "$w/outer.sh"
  rm -rf "$w"
}

start=$(date +%s)
if [ -n "$old" ]; then
  run_scenario from-0.1.0
  run_scenario from-0.1.0-edited
  run_scenario from-0.1.0-twice
fi
run_scenario to-next
echo "==> deb-upgrade: ${old:+0.1.0 to $this (3 scenarios), }$this to $this+next1 passed in $(( $(date +%s) - start )) s"
