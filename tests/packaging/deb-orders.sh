#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# deb-orders.sh - the Debian packages on a bare Debian of this machine's
# release (13 or 12), installed in both orders an administrator may choose and
# used through the shipped Postfix snippet as it is, and beside Dovecot as
# its README says.
#
#   sh tests/packaging/deb-orders.sh DEBDIR [ROOT]
#
# DEBDIR holds the .deb files built from debian/ (tests/packaging/deb-smoke.sh
# leaves them in build-deb/); ROOT (default /opt/extbody-test-debroot) is the
# bare root of this release that tests/packaging/prepare-debroot.sh made, with Postfix and
# the run-time dependencies in its apt cache. Each order runs in a throw-away
# overlay of ROOT (ROOT is never changed), chrooted, in private mount, PID and
# network namespaces (no network: apt installs from the cache, offline; every
# process started there ends with the namespace):
#
#   A  extbodyd first, then Postfix (the trigger on /usr/sbin/postfix
#      must put the postfix user in the extbody group);
#   B  Postfix first, then extbodyd (its postinst does it).
#   C  Dovecot (LMTP, Sieve: 2.4 on Debian 13, 2.3 on Debian 12), then the
#      packages; the shell steps of the installed filters/dovecot/README.md
#      run as they are written there; a message delivered over LMTP to a
#      system user's mbox (Debian's default storage) arrives resolved through
#      the per-message program, then, with the README's one line for the
#      daemon, through extbodyd's Dovecot socket.
#   D  a site whose Postfix has a milter already (OpenDKIM, verifying): the
#      packages, then the commands of the shipped postfix-main.cf as they are
#      written there; OpenDKIM stays first in smtpd_milters and still sees
#      every message, extbodyd resolves it, the site's milter_default_action
#      is untouched, and --check-mta names a smtpd_milters set twice.
#   E  one site running both documented paths with the packages' seal
#      (trace_key_file = /etc/extbody/trace.key, made by extbodyd's postinst):
#      Postfix with extbodyd's milter (the shipped commands) delivering over
#      LMTP to Dovecot, whose Sieve filter goes to the same daemon's Dovecot
#      socket (the README's steps and line), fetching on from a web server on
#      127.0.0.1. Messages sent to Postfix's SMTP arrive with one X-Extbody
#      field, the milter's, sealed with the key: (a) resolved, its URL fetched
#      once; (b) a URL the milter could not resolve left as it came with a
#      sealed "resolved 0 of 1", fetched once, not again at delivery; (c) an
#      X-Extbody field the sender put there (unsealed, or with a made-up
#      seal) removed; (d) one without a Message-ID, which Postfix adds,
#      resolved once, the seal holding at delivery; (e) through Dovecot's
#      per-message program instead: Dovecot 2.3 runs it as the mail user,
#      who cannot read the key (the milter's record removed, fetched again),
#      2.4.1 as root (kept); the program run by hand with the group extbody
#      keeps it.
#
# In both: the postfix user is in the extbody group; the packaged daemon runs
# as extbody; `extbodyd --check-mta postfix` says what is missing before
# the snippet is appended to main.cf, and OK after it; a message submitted to
# that Postfix arrives through the milter, resolved; and with the group
# membership removed the check names the group and the adduser command.
# Needs root, unshare and the prepared ROOT: exits 77 (skipped) without them.
set -eu
[ $# -ge 1 ] || { echo "usage: deb-orders.sh DEBDIR [ROOT]" >&2; exit 64; }
debs=$(cd "$1" && pwd)
root=${2:-/opt/extbody-test-debroot}
top=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "deb-orders: skipped: $*" >&2; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (chroot, namespaces)"
[ -x "$root/usr/bin/apt-get" ] && [ -f "$root/.extbody-test-packages" ] \
  || skip "no prepared Debian root in $root (sh tests/packaging/prepare-debroot.sh, as tests/quickstart.sh test does)"
unshare --mount --pid --net --fork true 2>/dev/null || skip "unshare --mount --pid --net does not work here"
for p in libextbody2 extbody extbodyd; do
  ls "$debs/${p}_"*.deb >/dev/null 2>&1 || { echo "deb-orders: no ${p}_*.deb in $debs" >&2; exit 1; }
done

work=$(mktemp -d /tmp/extbody-orders.XXXXXX)
trap 'rm -rf "$work"' EXIT

# what runs inside the chroot, as root: install in ORDER, then check
cat >"$work/inside.sh" <<'EOF'
set -eu
order=$1
fail() { echo "deb-orders: order $order: FAILED: $*" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
# Postfix as the installer's "Local only" answer sets it up
echo "postfix postfix/main_mailer_type select Local only" | debconf-set-selections
echo "postfix postfix/mailname string extbody-test.example" | debconf-set-selections
inst() {
  echo "==> order $order: apt-get install $*"
  apt-get install -y -q --no-install-recommends -o Dpkg::Use-Pty=0 "$@" >/tmp/apt.log 2>&1 \
    || { tail -n 30 /tmp/apt.log >&2; fail "apt-get install $* (offline, from the prepared cache)"; }
  grep -i 'extbodyd:' /tmp/apt.log || true
}
ours="/debs/libextbody2_*.deb /debs/extbody_*.deb /debs/extbodyd_*.deb"
# the commands of the shipped postfix-main.cf that add extbodyd to Postfix,
# run as they are written there (Postfix running: they end in a reload and
# extbodyd --check-mta postfix)
postfix_steps() {
  snippet=/usr/share/doc/extbody/filters/postfix-main.cf
  [ -f "$snippet" ] || fail "the package does not ship $snippet"
  awk '/Add extbodyd with these commands/ { f = 1 } /^# The last says OK/ { f = 0 }
       f && /^#   / { sub(/^#   /, ""); print }' "$snippet" >/tmp/postfix-steps.sh
  grep -q 'postconf -e' /tmp/postfix-steps.sh || fail "no commands in $snippet"
  sed 's/^/    /' /tmp/postfix-steps.sh
  (set -e; . /tmp/postfix-steps.sh) >/tmp/postfix-steps.log 2>&1 \
    || { cat /tmp/postfix-steps.log >&2; fail "the documented commands failed"; }
}
if [ "$order" = D ]; then
  # a site that already has a milter: OpenDKIM verifying (its
  # Authentication-Results on every message, AlwaysAddARHeader), in
  # Postfix's chroot as Debian's README.Debian of opendkim sets it up
  inst postfix opendkim
  adduser --quiet --disabled-password --gecos '' alice
  install -d -o opendkim -g opendkim -m 0750 /var/spool/postfix/opendkim
  adduser --quiet postfix opendkim
  cat >/etc/opendkim.conf <<'CONF'
Syslog no
Mode v
AlwaysAddARHeader yes
AuthservID dkim.extbody-test.example
# local submissions are verified too (by default 127.0.0.1 is internal: signed, not verified)
InternalHosts 192.0.2.1
UserID opendkim
UMask 007
Socket local:/var/spool/postfix/opendkim/opendkim.sock
PidFile /run/opendkim.pid
CONF
  opendkim -x /etc/opendkim.conf >/tmp/opendkim.log 2>&1 || { cat /tmp/opendkim.log >&2; fail "opendkim does not start"; }
  postconf -e 'smtpd_milters = unix:opendkim/opendkim.sock' 'non_smtpd_milters = $smtpd_milters' \
    'milter_default_action = accept'
  [ -x /usr/lib/postfix/configure-instance.sh ] && /usr/lib/postfix/configure-instance.sh - >/dev/null 2>&1 || true
  postfix start >/tmp/postfix.log 2>&1 || { cat /tmp/postfix.log >&2; fail "postfix start"; }
  n_delivered() { if [ -f /var/mail/alice ]; then grep -c '^Message-ID: <d-' /var/mail/alice || true; else echo 0; fi; }
  deliver_d() {  # deliver_d N: the Nth message to alice, waited for, in /tmp/msg-N
    sed "s/^Message-ID: .*/Message-ID: <d-$1@example.org>/" /tmp/references.eml \
      | /usr/sbin/sendmail -f sender@extbody-test.example alice
    i=0; while [ $i -lt 300 ] && [ "$(n_delivered)" -lt "$1" ]; do sleep 0.1; i=$((i + 1)); done
    [ "$(n_delivered)" -eq "$1" ] || { postqueue -p >&2 || true; fail "message $1 was not delivered"; }
    awk -v id="<d-$1@example.org>" '/^From /{n++} {m[n] = m[n] $0 "\n"} index($0, "Message-ID: " id) {w = n}
      END {printf "%s", m[w]}' /var/mail/alice >/tmp/msg-$1
  }
  deliver_d 1
  grep -q '^Authentication-Results: dkim.extbody-test.example' /tmp/msg-1 \
    || { cat /tmp/msg-1 >&2; fail "OpenDKIM did not see the first message (no Authentication-Results)"; }
  echo "==> order D: OpenDKIM verifying in smtpd_milters, before extbody: $(grep '^Authentication-Results' /tmp/msg-1)"
  # shellcheck disable=SC2086
  inst $ours
  install -d -o extbody -g extbody -m 0755 /run/extbody
  setpriv --reuid=extbody --regid=extbody --init-groups --inh-caps=-all \
    sh -c 'umask 007; exec /usr/sbin/extbodyd' >/tmp/milter.log 2>&1 &
  i=0; while [ $i -lt 100 ] && [ ! -S /var/spool/postfix/extbody/extbody.sock ]; do sleep 0.1; i=$((i + 1)); done
  echo "==> order D: the documented commands of the shipped postfix-main.cf:"
  postfix_steps
  milters=$(postconf -h smtpd_milters)
  [ "$milters" = "unix:opendkim/opendkim.sock, { unix:extbody/extbody.sock, default_action=accept }" ] \
    || fail "smtpd_milters after the documented commands: $milters"
  [ "$(grep -c '^smtpd_milters *=' /etc/postfix/main.cf)" -eq 1 ] || fail "main.cf sets smtpd_milters more than once"
  [ "$(postconf -h milter_default_action)" = accept ] || fail "the site's own milter_default_action changed"
  echo "==> order D: smtpd_milters = $milters"
  deliver_d 2
  grep -q '^Authentication-Results: dkim.extbody-test.example' /tmp/msg-2 \
    || { cat /tmp/msg-2 >&2; fail "OpenDKIM no longer sees mail after the documented commands"; }
  grep -q '^X-Extbody: resolved 3 of 6' /tmp/msg-2 || { cat /tmp/msg-2 >&2; fail "the message was not resolved"; }
  echo "==> order D: OpenDKIM still verifies, extbodyd resolves: $(grep '^X-Extbody' /tmp/msg-2)"
  # what appending the old snippet did: the check names it
  printf '\nsmtpd_milters = unix:extbody/extbody.sock\n' >>/etc/postfix/main.cf
  rc=0; extbodyd --check-mta postfix >/tmp/check.out 2>&1 || rc=$?
  cat /tmp/check.out
  [ "$rc" -eq 78 ] || fail "--check-mta exits $rc with smtpd_milters set twice, not 78"
  grep -q 'main.cf sets smtpd_milters 2 times' /tmp/check.out || fail "--check-mta does not name smtpd_milters set twice"
  postfix stop >/dev/null 2>&1 || true
  kill "$(cat /run/opendkim.pid)" 2>/dev/null || true
  echo "==> order D: passed"
  exit 0
fi
if [ "$order" = E ]; then
  # one site, both documented paths, with the seal the packages set up:
  # Postfix with extbodyd's milter (the shipped postconf commands), delivering
  # over LMTP to Dovecot, whose Sieve filter goes to the same extbodyd's
  # Dovecot socket (the README's steps and its one line); fetching on, from a
  # web server of the site's own on 127.0.0.1 whose log counts the fetches
  inst postfix
  inst dovecot-core dovecot-lmtpd dovecot-sieve
  # shellcheck disable=SC2086
  inst $ours
  echo "==> order E: Postfix $(postconf -h mail_version), Dovecot $(dovecot --version)"
  conf=/etc/extbody/extbody.conf
  key=/etc/extbody/trace.key
  [ -f $key ] || fail "the packages made no $key"
  [ "$(stat -c '%a %U %G' $key)" = "640 root extbody" ] || fail "$key is $(stat -c '%a %U %G' $key), not 640 root extbody"
  [ "$(stat -c %s $key)" -ge 32 ] || fail "$key holds $(stat -c %s $key) bytes, fewer than 32"
  grep -qx "trace_key_file = $key" $conf || fail "$conf does not set trace_key_file = $key"
  setpriv --reuid=extbody --regid=extbody --init-groups --inh-caps=-all /usr/sbin/extbodyd -n >/tmp/n.out 2>&1 \
    || { cat /tmp/n.out >&2; fail "extbodyd -n, as the user extbody, with the packaged key"; }
  echo "==> order E: $key $(stat -c '%A %U:%G, %s bytes' $key), named by $conf: $(grep '^trace_key_file' $conf)"
  adduser --quiet --disabled-password --gecos '' alice

  mkdir -p /tmp/www
  printf 'The annual report, served by the site.\n' >/tmp/www/e-a.txt
  printf 'The figures, served by the site.\n' >/tmp/www/e-c.txt
  (cd /tmp/www && PYTHONUNBUFFERED=1 exec python3 -m http.server 8080 --bind 127.0.0.1) >/tmp/http.log 2>&1 &
  i=0; while [ $i -lt 100 ] && ! python3 -c 'import socket; socket.create_connection(("127.0.0.1", 8080), 1)' 2>/dev/null; do
    sleep 0.1; i=$((i + 1)); done
  fetches() { grep -c "\"GET /$1 HTTP" /tmp/http.log || true; }
  # fetching on, the test's server allowed (loopback is refused by default);
  # nothing cached, so that every fetch of every pass reaches the server's log
  printf '\n# order E\nfetch = on\nallow_networks = 127.0.0.1/32\ncache_ttl = 0\n' >>$conf

  echo "==> order E: the packaged daemon, as extbody, every door on"
  install -d -o extbody -g extbody -m 0755 /run/extbody
  setpriv --reuid=extbody --regid=extbody --init-groups --inh-caps=-all \
    sh -c 'umask 007; exec /usr/sbin/extbodyd' >/tmp/daemon.log 2>&1 &
  i=0; while [ $i -lt 100 ] && ! { [ -S /var/spool/postfix/extbody/extbody.sock ] && [ -S /run/extbody/extbody ]; }; do
    sleep 0.1; i=$((i + 1)); done
  [ -S /var/spool/postfix/extbody/extbody.sock ] && [ -S /run/extbody/extbody ] \
    || { cat /tmp/daemon.log >&2; fail "the daemon does not listen on both the milter's and Dovecot's sockets"; }

  echo "==> order E: Dovecot's LMTP on 127.0.0.1:24 for Postfix, and the README's steps"
  # Postfix gives LMTP alice@extbody-test.example, the system user alice:
  # Debian 13's 20-lmtp.conf strips the domain (auth_username_format in
  # protocol lmtp), Debian 12's does not, so it is set here as 13 sets it
  lmtp_user=
  [ "$(dovecot --version | cut -d. -f1,2)" != 2.3 ] || lmtp_user='protocol lmtp {
  auth_username_format = %Ln
}'
  cat >/etc/dovecot/conf.d/95-order-e.conf <<CONF
listen = 127.0.0.1
$lmtp_user
service lmtp {
  inet_listener lmtp {
    port = 24
  }
}
CONF
  readme=/usr/share/doc/extbody/filters/dovecot/README.md
  sed -n '/^## At delivery with a program per message/,/^## /p' $readme \
    | sed -n '/^```sh$/,/^```$/p' | sed '1d;$d' >/tmp/steps.sh
  [ -s /tmp/steps.sh ] || fail "no shell steps in the README's section on delivery with a program"
  dovecot >/tmp/dovecot-start.log 2>&1 || { cat /tmp/dovecot-start.log >&2; doveconf -n >&2 || true; fail "dovecot does not start"; }
  (set -e; . /tmp/steps.sh) >/tmp/steps.log 2>&1 || { cat /tmp/steps.log >&2; fail "the README's steps failed"; }
  grep -q '^ *#sieve_filter_socket_dir = ../extbody$' /etc/dovecot/conf.d/90-extbody.conf \
    || fail "90-extbody.conf has no '#sieve_filter_socket_dir = ../extbody' line to uncomment"
  sed -i 's|^\( *\)#sieve_filter_socket_dir = ../extbody$|\1sieve_filter_socket_dir = ../extbody|' /etc/dovecot/conf.d/90-extbody.conf
  doveconf -n >/dev/null && doveadm reload || fail "doveconf -n or doveadm reload with sieve_filter_socket_dir"
  i=0; while [ $i -lt 100 ] && ! python3 -c 'import socket; socket.create_connection(("127.0.0.1", 24), 1)' 2>/dev/null; do
    sleep 0.1; i=$((i + 1)); done

  echo "==> order E: Postfix delivering to Dovecot's LMTP, and the documented commands of the shipped postfix-main.cf"
  [ -x /usr/lib/postfix/configure-instance.sh ] && /usr/lib/postfix/configure-instance.sh - >/dev/null 2>&1 || true
  postconf -e maillog_file=/var/log/postfix.log 'mailbox_transport = lmtp:inet:127.0.0.1:24'
  postfix start >/tmp/postfix.log 2>&1 || { cat /tmp/postfix.log >&2; fail "postfix start"; }
  postfix_steps
  grep -q '^extbodyd: OK: postfix connects' /tmp/postfix-steps.log \
    || { cat /tmp/postfix-steps.log >&2; fail "the documented commands did not end in --check-mta's OK"; }
  echo "==> order E: smtpd_milters = $(postconf -h smtpd_milters); mailbox_transport = $(postconf -h mailbox_transport)"

  # the messages, each with a Message-ID of its own (the seal covers it), but
  # d's, which Postfix's cleanup adds
  mk() {  # mk NAME TRACE-FIELD URL...: /tmp/e-NAME.eml ("Subject: order E, NAME"),
          # one reference per URL; NO_MESSAGE_ID=1: without a Message-ID
    n=$1; t=$2; shift 2
    { printf 'From: sender@extbody-test.example\nTo: alice@extbody-test.example\nSubject: order E, %s\n' "$n"
      printf 'Date: Mon, 07 Dec 2026 10:00:00 +0000\n'
      [ -n "${NO_MESSAGE_ID:-}" ] || printf 'Message-ID: <e-%s@extbody-test.example>\n' "$n"
      [ -z "$t" ] || printf 'X-Extbody: %s\n' "$t"
      printf 'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="=_e"\n\n--=_e\nContent-Type: text/plain\n\nBy reference.\n\n'
      for u in "$@"; do
        printf -- '--=_e\nContent-Type: message/external-body; access-type=URL;\n\tURL="%s"\n\nContent-Type: text/plain\n\n' "$u"
      done
      printf -- '--=_e--\n'; } >/tmp/e-$n.eml
  }
  send() {  # send NAME: /tmp/e-NAME.eml through Postfix's SMTP to alice, waited for as delivered
    python3 - "$1" <<'PY' || fail "SMTP to Postfix ($1)"
import smtplib, sys
with smtplib.SMTP("127.0.0.1", 25, local_hostname="[127.0.0.1]", timeout=60) as s:
    s.sendmail("sender@extbody-test.example", ["alice@extbody-test.example"],
               open("/tmp/e-%s.eml" % sys.argv[1], "rb").read())
PY
    i=0; while [ $i -lt 600 ] && ! grep -qx "Subject: order E, $1" /var/mail/alice 2>/dev/null; do
      sleep 0.1; i=$((i + 1)); done
    grep -qx "Subject: order E, $1" /var/mail/alice 2>/dev/null || {
      postqueue -p >&2 || true; tail -n 30 /var/log/postfix.log >&2 || true; cat /tmp/daemon.log >&2
      doveadm log errors >&2 || true; fail "message $1 was not delivered to /var/mail/alice"; }
  }
  # got NAME: the delivered message in /tmp/e-NAME.out, and its X-Extbody
  # fields, unfolded, one a line, in /tmp/e-NAME.x; each sealed one checked
  # against the key as eb-seal.h defines the seal; "forged" where it fails
  got() {
    python3 - "$1" "$key" <<'PY' || fail "reading message $1 from /var/mail/alice"
import base64, email, hashlib, hmac, mailbox, re, sys
n, keyfile = sys.argv[1], sys.argv[2]
key = open(keyfile, "rb").read()
canon = lambda s: re.sub(r"[ \t]+", " ", s.replace("\r", "").replace("\n", "")).strip()
box = mailbox.mbox("/var/mail/alice")
for k in box.keys():
    raw = box.get_bytes(k)   # as stored, not as Python would write it again
    m = email.message_from_bytes(raw)
    if canon(m.get("Subject", "")) == "order E, %s" % n:
        break
else:
    sys.exit("no message 'order E, %s'" % n)
open("/tmp/e-%s.out" % n, "wb").write(raw)
open("/tmp/e-%s.id" % n, "w").write(canon(m.get("Message-ID", "")))
with open("/tmp/e-%s.x" % n, "w") as out:
    for v in m.get_all("X-Extbody") or []:
        v = canon(str(v))
        r = re.fullmatch(r"(.*); seal=([A-Za-z0-9_-]{22})", v)
        ok = "unsealed"
        if r:
            d = hmac.new(key, b"extbody-seal-1\n" + canon(r.group(1)).encode() + b"\n"
                         + canon(m.get("Message-ID", "")).encode(), hashlib.sha256).digest()[:16]
            ok = "sealed" if base64.urlsafe_b64encode(d).rstrip(b"=").decode() == r.group(2) else "forged"
        out.write("%s\t%s\n" % (ok, v))
PY
  }
  # one X-Extbody field, sealed with the site's key, whose record is $2
  one_sealed() {
    [ "$(wc -l </tmp/e-$1.x)" -eq 1 ] && [ "$(cut -f1 /tmp/e-$1.x)" = sealed ] \
      && cut -f2 /tmp/e-$1.x | sed 's/; seal=[A-Za-z0-9_-]*$//' | grep -Fqx "$2" || {
      cat /tmp/e-$1.out /tmp/daemon.log >&2
      fail "message $1: its X-Extbody fields are not the one sealed record '$2': $(cat /tmp/e-$1.x)"; }
  }
  # the daemon saw the message at both doors: the milter's pass (queue_id,
  # Postfix's queue ID) and Dovecot's, which left it alone
  both_passes() {  # both_passes NAME WHAT: the milter's line WHAT
    grep -F "msgid=$(cat /tmp/e-$1.id) " /tmp/daemon.log | grep -v 'reason=sealed-record' | grep -q "$2" \
      || { cat /tmp/daemon.log >&2; fail "message $1: no line of the milter's pass with $2"; }
    grep -F "msgid=$(cat /tmp/e-$1.id) " /tmp/daemon.log | grep -q 'reason=sealed-record' \
      || { cat /tmp/daemon.log >&2; fail "message $1: no line of Dovecot's pass leaving it alone (reason=sealed-record)"; }
  }

  # a: resolved by the milter, a data: URL and one of the site's server
  mk a '' 'data:,the%20minutes' 'http://127.0.0.1:8080/e-a.txt'
  send a; got a
  one_sealed a 'resolved 2 of 2 external-body references'
  grep -q 'The annual report, served by the site.' /tmp/e-a.out || { cat /tmp/e-a.out >&2; fail "message a: the fetched part is not in it"; }
  ! grep -q 'message/external-body' /tmp/e-a.out || { cat /tmp/e-a.out >&2; fail "message a: a reference is left"; }
  [ "$(fetches e-a.txt)" -eq 1 ] || { cat /tmp/http.log >&2; fail "message a: the server saw $(fetches e-a.txt) requests for e-a.txt, not 1"; }
  both_passes a 'references=2 resolved=2'
  echo "==> order E: a (resolved by the milter): one X-Extbody, the milter's, sealed: $(cut -f2 /tmp/e-a.x); e-a.txt fetched $(fetches e-a.txt) time; Dovecot's pass left it alone"

  # b: one the milter cannot resolve (404): its sealed "resolved 0 of 1",
  # the reference as it came, and Dovecot's pass fetches nothing again
  mk b '' 'http://127.0.0.1:8080/e-b-missing.txt'
  send b; got b
  one_sealed b 'resolved 0 of 1 external-body reference'
  grep -q '^	URL="http://127.0.0.1:8080/e-b-missing.txt"$' /tmp/e-b.out \
    && [ "$(sed '1,/^$/d' /tmp/e-b.eml)" = "$(sed '1,/^$/d' /tmp/e-b.out)" ] \
    || { cat /tmp/e-b.out >&2; fail "message b: the reference is not left as it came"; }
  [ "$(fetches e-b-missing.txt)" -eq 1 ] || { cat /tmp/http.log >&2; fail "message b: the server saw $(fetches e-b-missing.txt) requests for e-b-missing.txt, not 1"; }
  both_passes b 'references=1 resolved=0'
  echo "==> order E: b (left by the milter, 404): $(cut -f2 /tmp/e-b.x); the body as sent; e-b-missing.txt requested $(fetches e-b-missing.txt) time; Dovecot's pass fetched nothing"

  # c: the sender's X-Extbody, unsealed and with a made-up seal: removed, the
  # message resolved, the site's sealed record alone
  mk c1 'resolved 1 of 1 external-body reference' 'data:,forged%20one'
  mk c2 'resolved 1 of 1 external-body reference; seal=AAAAAAAAAAAAAAAAAAAAAA' 'http://127.0.0.1:8080/e-c.txt'
  for c in c1 c2; do
    send $c; got $c
    one_sealed $c 'resolved 1 of 1 external-body reference'
    ! grep -q 'seal=AAAAAAAAAAAAAAAAAAAAAA' /tmp/e-$c.out || fail "message $c: the forged seal is still there"
    ! grep -q 'message/external-body' /tmp/e-$c.out || { cat /tmp/e-$c.out >&2; fail "message $c: the reference is left"; }
    both_passes $c 'trace_removed=1'
    echo "==> order E: $c (sent with X-Extbody: $(sed -n 's/^X-Extbody: //p' /tmp/e-$c.eml)): removed; delivered with $(cut -f2 /tmp/e-$c.x)"
  done
  [ "$(fetches e-c.txt)" -eq 1 ] || { cat /tmp/http.log >&2; fail "message c2: the server saw $(fetches e-c.txt) requests for e-c.txt, not 1"; }
  grep -q 'The figures, served by the site.' /tmp/e-c2.out || fail "message c2: the fetched part is not in it"

  # d: no Message-ID from the sender: Postfix's cleanup adds one before the
  # milter sees the header, so the milter's seal holds at delivery
  printf 'The notes, served by the site.\n' >/tmp/www/e-d.txt
  NO_MESSAGE_ID=1 mk d '' 'http://127.0.0.1:8080/e-d.txt'
  send d; got d
  grep -q '@extbody-test>$' /tmp/e-d.id || fail "message d: a Message-ID not Postfix's: $(cat /tmp/e-d.id)"
  one_sealed d 'resolved 1 of 1 external-body reference'
  [ "$(fetches e-d.txt)" -eq 1 ] || { cat /tmp/http.log >&2; fail "message d: the server saw $(fetches e-d.txt) requests for e-d.txt, not 1"; }
  both_passes d 'references=1 resolved=1'
  echo "==> order E: d (no Message-ID: Postfix's $(cat /tmp/e-d.id)): $(cut -f2 /tmp/e-d.x); e-d.txt fetched $(fetches e-d.txt) time; Dovecot's pass left it alone"

  # e: Dovecot's filter through the per-message program instead (the
  # socket's line commented out again). Dovecot 2.3.19's LMTP runs it as the
  # mail user alice, who cannot read the key (nor does adding alice to the
  # group extbody, or mail_access_groups = extbody, give the program that
  # group): it removes the milter's record as forged and fetches again what
  # the milter left; beside the milter the daemon's socket is the way.
  # Dovecot 2.4.1's LMTP runs it as root (with alice's gid), which reads the
  # key: the record is kept, nothing fetched again. The program itself, run
  # by hand as alice with the group extbody, keeps it.
  sed -i 's|^\( *\)sieve_filter_socket_dir = ../extbody$|\1#sieve_filter_socket_dir = ../extbody|' /etc/dovecot/conf.d/90-extbody.conf
  doveconf -n >/dev/null && doveadm reload || fail "doveadm reload without sieve_filter_socket_dir"
  sleep 1
  mk e '' 'http://127.0.0.1:8080/e-e-missing.txt'
  send e; got e
  if [ "$(dovecot --version | cut -d. -f1,2)" = 2.3 ]; then
    [ ! -s /tmp/e-e.x ] && [ "$(fetches e-e-missing.txt)" -eq 2 ] || { cat /tmp/e-e.out /tmp/http.log >&2
      fail "message e, Dovecot 2.3's program as alice: X-Extbody '$(cat /tmp/e-e.x)', $(fetches e-e-missing.txt) requests (expected none, 2)"; }
    echo "==> order E: e (Dovecot 2.3's per-message program, as alice, who cannot read the key): the milter's record removed, e-e-missing.txt requested $(fetches e-e-missing.txt) times"
  else
    one_sealed e 'resolved 0 of 1 external-body reference'
    [ "$(fetches e-e-missing.txt)" -eq 1 ] || { cat /tmp/http.log >&2; fail "message e: $(fetches e-e-missing.txt) requests for e-e-missing.txt, not 1"; }
    echo "==> order E: e (Dovecot $(dovecot --version | cut -d' ' -f1)'s per-message program, run as root): $(cut -f2 /tmp/e-e.x); e-e-missing.txt requested $(fetches e-e-missing.txt) time"
  fi
  adduser --quiet alice extbody
  setpriv --reuid=alice --regid=alice --init-groups /usr/libexec/extbody/sieve-filter/extbody </tmp/e-b.out >/tmp/e-b.again \
    || fail "the program as alice in the group extbody exits $?"
  cmp -s /tmp/e-b.out /tmp/e-b.again && [ "$(fetches e-b-missing.txt)" -eq 1 ] \
    || { diff /tmp/e-b.out /tmp/e-b.again >&2 || true; fail "the program as alice in the group extbody changed message b or fetched ($(fetches e-b-missing.txt) requests)"; }
  echo "==> order E: e (the program as alice in the group extbody, by hand): message b as delivered kept byte for byte, nothing fetched"

  postfix stop >/dev/null 2>&1 || true
  doveadm stop >/dev/null 2>&1 || true
  echo "==> order E: passed"
  exit 0
fi
if [ "$order" = C ]; then
  # shellcheck disable=SC2086
  inst dovecot-core dovecot-lmtpd dovecot-sieve
  # shellcheck disable=SC2086
  inst $ours
  echo "==> order C: Dovecot $(dovecot --version)"
  adduser --quiet --disabled-password --gecos '' alice
  readme=/usr/share/doc/extbody/filters/dovecot/README.md
  [ -f $readme ] || fail "the package does not ship $readme"
  # the README's shell block of the per-message section, as written
  sed -n '/^## At delivery with a program per message/,/^## /p' $readme \
    | sed -n '/^```sh$/,/^```$/p' | sed '1d;$d' >/tmp/steps.sh
  [ -s /tmp/steps.sh ] || fail "no shell steps in the README's section on delivery with a program"
  echo "==> order C: the README's steps:"; sed 's/^/    /' /tmp/steps.sh
  # Dovecot runs during the steps (doveadm reload), as on a live server
  dovecot >/tmp/dovecot-start.log 2>&1 || { cat /tmp/dovecot-start.log >&2; doveconf -n >&2 || true; fail "dovecot does not start with Debian's configuration"; }
  (set -e; . /tmp/steps.sh) >/tmp/steps.log 2>&1 || { cat /tmp/steps.log >&2; fail "the README's steps failed"; }
  cat /tmp/steps.log
  [ -f /etc/dovecot/conf.d/90-extbody.conf ] || fail "the steps installed no /etc/dovecot/conf.d/90-extbody.conf"
  lmtp=$(doveconf -h base_dir)/lmtp
  i=0; while [ $i -lt 100 ] && [ ! -S "$lmtp" ]; do sleep 0.1; i=$((i + 1)); done
  deliver() {  # deliver WHAT: /tmp/references.eml over LMTP to alice
    python3 - "$lmtp" <<'PY' || fail "LMTP delivery ($1)"
import smtplib, sys
with smtplib.LMTP(sys.argv[1], local_hostname="[127.0.0.1]") as s:
    s.sendmail("sender@extbody-test.example", ["alice"], open("/tmp/references.eml", "rb").read())
PY
  }
  deliver "the per-message program"
  i=0; while [ $i -lt 100 ] && ! grep -q '^X-Extbody:' /var/mail/alice 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
  grep -q '^X-Extbody: resolved' /var/mail/alice || {
    tail -n 30 /var/log/mail.log /tmp/dovecot.log 2>/dev/null >&2; doveadm log errors >&2 || true
    ls -l /var/mail >&2; fail "the message was not stored resolved through the per-message program"; }
  echo "==> order C: through the program: $(grep -c '^X-Extbody: resolved' /var/mail/alice) resolved in /var/mail/alice"

  echo "==> order C: the daemon's Dovecot socket, with the README's one line"
  install -d -o extbody -g extbody -m 0755 /run/extbody
  setpriv --reuid=extbody --regid=extbody --init-groups --inh-caps=-all \
    sh -c 'umask 007; exec /usr/sbin/extbodyd' >/tmp/daemon.log 2>&1 &
  i=0; while [ $i -lt 100 ] && [ ! -S /run/extbody/extbody ]; do sleep 0.1; i=$((i + 1)); done
  [ -S /run/extbody/extbody ] || { cat /tmp/daemon.log >&2; fail "no Dovecot socket /run/extbody/extbody with the shipped defaults"; }
  # (indented inside plugin { } in 2.3's file, at the top level in 2.4's)
  grep -q '^ *#sieve_filter_socket_dir = ../extbody$' /etc/dovecot/conf.d/90-extbody.conf \
    || fail "90-extbody.conf has no '#sieve_filter_socket_dir = ../extbody' line to uncomment"
  sed -i 's|^\( *\)#sieve_filter_socket_dir = ../extbody$|\1sieve_filter_socket_dir = ../extbody|' /etc/dovecot/conf.d/90-extbody.conf
  doveconf -n >/dev/null && doveadm reload || fail "doveconf -n or doveadm reload with sieve_filter_socket_dir"
  sleep 1
  deliver "the daemon"
  i=0; while [ $i -lt 100 ] && [ "$(grep -c '^X-Extbody: resolved' /var/mail/alice)" -lt 2 ]; do sleep 0.1; i=$((i + 1)); done
  [ "$(grep -c '^X-Extbody: resolved' /var/mail/alice)" -eq 2 ] || { cat /tmp/daemon.log >&2; fail "the second message was not stored resolved"; }
  grep -q 'msgid=<sample-references@example.org> references=6 resolved=3' /tmp/daemon.log \
    || { cat /tmp/daemon.log >&2; fail "the daemon did not filter the second message (its log has no record of it)"; }
  doveadm stop >/dev/null 2>&1 || true
  echo "==> order C: passed"
  exit 0
fi
# order A, before Postfix: a host with Exim and no Postfix. The package makes
# no /var/spool/postfix; the daemon, as the unit starts it, keeps its milter
# door off with a line and serves HTTP (extbodyc, as Exim calls it); the
# unit's check after the start has nothing to check
without_postfix() {
  [ ! -e /var/spool/postfix ] || fail "the package made /var/spool/postfix on a host without Postfix"
  install -d -o extbody -g extbody -m 0755 /run/extbody
  setpriv --reuid=extbody --regid=extbody --init-groups --inh-caps=-all \
    sh -c 'umask 007; exec /usr/sbin/extbodyd' >/tmp/nopostfix.log 2>&1 &
  pid=$!
  i=0; while [ $i -lt 100 ] && [ ! -S /run/extbody/http.sock ]; do sleep 0.1; i=$((i + 1)); done
  grep -q '^extbodyd: milter_socket /var/spool/postfix/extbody/extbody.sock: its directory /var/spool/postfix/extbody does not exist, so this door is off' \
    /tmp/nopostfix.log || { cat /tmp/nopostfix.log >&2; fail "no line saying the milter's door is off"; }
  /usr/bin/extbodyc </tmp/references.eml >/tmp/nopostfix.eml 2>/tmp/nopostfix.err \
    && grep -q '^X-Extbody: resolved' /tmp/nopostfix.eml || { cat /tmp/nopostfix.log /tmp/nopostfix.err >&2; fail "extbodyc through the HTTP door without Postfix"; }
  rc=0; extbodyd --check-mta postfix --if-installed >/tmp/check.out 2>&1 || rc=$?
  [ "$rc" -eq 0 ] && grep -q 'no user postfix on this system: its mail server is not installed, nothing to check' /tmp/check.out \
    || { cat /tmp/check.out >&2; fail "the unit's check without Postfix exits $rc"; }
  kill "$pid"; wait "$pid" || true
  echo "==> order $order: without Postfix: the milter's door off with a line, HTTP served, the unit's check quiet"
}
case $order in
  # shellcheck disable=SC2086
  A) inst $ours; without_postfix; inst postfix ;;
  # shellcheck disable=SC2086
  B) inst postfix; inst $ours ;;
esac
id -nG postfix | tr ' ' '\n' | grep -qx extbody || fail "the postfix user is not in the group extbody ($(id postfix))"
echo "==> order $order: $(id postfix)"

echo "==> order $order: metrics_file in Debian's node_exporter directory, as the documentation says"
conf=/etc/extbody/extbody.conf
prom=/var/lib/prometheus/node-exporter/extbodyd.prom
mkdir -p /var/lib/prometheus/node-exporter
chown extbody /var/lib/prometheus/node-exporter   # (setfacl -m u:extbody:rwx, where acl is installed)
if grep -q '^metrics_file *=' $conf; then sed -i "s|^metrics_file *=.*|metrics_file = $prom|" $conf
else echo "metrics_file = $prom" >>$conf; fi
adduser --quiet --disabled-password --gecos '' alice

echo "==> order $order: the packaged daemon, as extbody, under the unit's umask"
# what the unit's RuntimeDirectory= makes (no systemd in this root): the
# HTTP and Dovecot doors' sockets go there by default
install -d -o extbody -g extbody -m 0755 /run/extbody
setpriv --reuid=extbody --regid=extbody --init-groups --inh-caps=-all \
  sh -c 'umask 007; exec /usr/sbin/extbodyd' >/tmp/milter.log 2>&1 &
echo "==> order $order: before the snippet: extbodyd --check-mta postfix"
rc=0; extbodyd --check-mta postfix >/tmp/check.out 2>&1 || rc=$?
cat /tmp/check.out
[ "$rc" -eq 78 ] || fail "--check-mta postfix exits $rc without smtpd_milters, not 78"
grep -q 'set smtpd_milters = unix:extbody/extbody.sock in main.cf' /tmp/check.out \
  || fail "--check-mta does not say what to set"

echo "==> order $order: Postfix started; the documented commands of the shipped postfix-main.cf, as they are"
[ -x /usr/lib/postfix/configure-instance.sh ] && /usr/lib/postfix/configure-instance.sh - >/dev/null 2>&1 || true
postconf -e maillog_file=/var/log/postfix.log   # no syslog here: its log, for a failure
postfix start >/tmp/postfix.log 2>&1 || { cat /tmp/postfix.log >&2; fail "postfix start"; }
postfix_steps
postconf -h smtpd_milters >/dev/null 2>/tmp/postconf.err && [ ! -s /tmp/postconf.err ] \
  || fail "postconf warns after the documented commands: $(cat /tmp/postconf.err)"
rc=0; extbodyd --check-mta postfix >/tmp/check.out 2>&1 || rc=$?
cat /tmp/check.out
[ "$rc" -eq 0 ] || fail "--check-mta postfix exits $rc after the documented commands"
grep -q '^extbodyd: OK: postfix connects to /var/spool/postfix/extbody/extbody.sock and negotiates milter protocol 6' \
  /tmp/check.out || fail "--check-mta's OK line"
grep -q "Postfix's smtpd_milters (smtp/inet, chrooted in /var/spool/postfix) names it as unix:extbody/extbody.sock" \
  /tmp/check.out || fail "--check-mta does not name Postfix's setting"

echo "==> order $order: the daemon's counters, readable by another user (node_exporter's)"
[ "$(stat -c %a $prom)" = 644 ] || fail "$prom is mode $(stat -c %a $prom), not 644"
setpriv --reuid=nobody --regid=nogroup --clear-groups cat $prom | grep -qx 'extbody_messages_total 0' \
  || fail "another user cannot read $prom"
echo "==> order $order: an ordinary user's mailbox run: no metrics line, the daemon's file untouched"
{ echo 'From sender@extbody-test.example Mon Jan  5 10:00:00 2026'; cat /tmp/references.eml; } >/tmp/alice.mbox
chown alice /tmp/alice.mbox
cp $prom /tmp/prom.before
setpriv --reuid=alice --regid=alice --init-groups extbody rewrite --mbox /tmp/alice.mbox 2>/tmp/alice.err \
  || fail "alice's extbody rewrite --mbox: $(cat /tmp/alice.err)"
cat /tmp/alice.err
! grep -qi metrics /tmp/alice.err || fail "alice's run says something about metrics"
cmp -s /tmp/prom.before $prom || fail "alice's run changed the daemon's $prom"

echo "==> order $order: a message submitted to Postfix"
/usr/sbin/sendmail -f sender@extbody-test.example alice </tmp/references.eml
i=0
while [ $i -lt 600 ] && ! grep -q '^X-Extbody:' /var/mail/alice 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
grep -q '^X-Extbody: resolved' /var/mail/alice || {
  cat /tmp/milter.log >&2; ls -l /var/mail >&2; postqueue -p >&2 || true; tail -n 30 /var/log/postfix.log >&2 || true
  fail "the message did not arrive through the milter (no X-Extbody field in /var/mail/alice)"; }
echo "==> order $order: $(grep '^X-Extbody:' /var/mail/alice)"

echo "==> order $order: alice, as Exim's local deliveries run, through the HTTP door with the shipped defaults"
i=0
while [ $i -lt 100 ] && [ ! -S /run/extbody/http.sock ]; do sleep 0.1; i=$((i + 1)); done
[ "$(stat -c %a /run/extbody/http.sock)" = 777 ] || fail "/run/extbody/http.sock is mode $(stat -c %a /run/extbody/http.sock), not 777"
[ -S /run/extbody/extbody ] || fail "no Dovecot socket /run/extbody/extbody with the shipped defaults"
rc=0
setpriv --reuid=alice --regid=alice --init-groups /usr/bin/extbodyc --on-error tempfail \
  </tmp/references.eml >/tmp/alice.http 2>/tmp/alice.http.err || rc=$?
[ "$rc" -eq 0 ] || fail "alice's extbodyc exits $rc: $(cat /tmp/alice.http.err)"
grep -q '^X-Extbody: resolved' /tmp/alice.http || fail "alice's extbodyc: the message came back unresolved"

echo "==> order $order: the postfix user out of the group: the check names it"
gpasswd -d postfix extbody >/dev/null
rc=0; extbodyd --check-mta postfix >/tmp/check.out 2>&1 || rc=$?
cat /tmp/check.out
[ "$rc" -eq 77 ] || fail "--check-mta postfix exits $rc without the group, not 77"
grep -q 'postfix is not in the group extbody: adduser postfix extbody' /tmp/check.out \
  || fail "--check-mta does not name the group and the command"
postfix stop >/dev/null 2>&1 || true
echo "==> order $order: passed"
EOF

run_order() {
  order=$1
  w="$work/$order"
  mkdir -p "$w/upper" "$w/ovl" "$w/merged"
  cat >"$w/outer.sh" <<EOF
set -eu
# a throw-away view of the prepared root: an overlay, or a copy where
# overlays cannot be mounted
if ! mount -t overlay overlay -o lowerdir=$root,upperdir=$w/upper,workdir=$w/ovl $w/merged 2>/dev/null; then
  cp -a $root/. $w/merged/
fi
mount -t proc proc $w/merged/proc
mount --bind /dev $w/merged/dev
mkdir -p $w/merged/debs
cp $debs/*.deb $w/merged/debs/
cp $work/inside.sh $w/merged/tmp/inside.sh
cp $top/data/samples/references.eml $w/merged/tmp/references.eml
ip link set lo up 2>/dev/null || true
chroot $w/merged /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
  sh /tmp/inside.sh $order
EOF
  unshare --mount --propagation private --pid --net --fork sh "$w/outer.sh"
  rm -rf "$w"
}

start=$(date +%s)
# DEB_ORDERS: the orders to run (all of them by default)
for o in ${DEB_ORDERS:-A B C D E}; do run_order "$o"; done
echo "==> deb-orders: orders ${DEB_ORDERS:-A B C D E} (both orders, Dovecot, OpenDKIM, the milter and Dovecot on one site) passed in $(( $(date +%s) - start )) s"
