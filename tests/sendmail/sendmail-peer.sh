#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# sendmail-peer.sh -- a private, throwaway Sendmail 8.17 on 127.0.0.1 for
# extbody's tests (run as root).
#
#   sendmail-peer.sh up DIR NAME SMTP_PORT MILTER_SOCKET FLAGS MC_LINE_FILE
#   sendmail-peer.sh down DIR NAME
#
# The sendmail binary is $SENDMAIL, default
# /opt/extbody-test-sendmail/usr/libexec/sendmail/sendmail, and the m4 macros
# $SENDMAIL_CF, default /opt/extbody-test-sendmail/usr/share/sendmail/cf:
# Debian's sendmail-bin, sendmail-base and sendmail-cf unpacked with dpkg-deb
# -x (tests/quickstart.sh), never installed, since Debian's sendmail-bin
# conflicts with postfix.
#
# The instance NAME lives in DIR/NAME: its .mc and the .cf m4 builds from it
# (sendmail.mc, sendmail.cf), its queue (queue/), pid and statistics files.
# The .mc is a minimal one of its own with the INPUT_MAIL_FILTER line taken
# from MC_LINE_FILE (filters/daemon/sendmail.mc, as shipped) with its socket
# (S=) replaced by unix:MILTER_SOCKET and its flags (F=) by FLAGS (the shipped
# ones when FLAGS is "-"), so the line the test proves is the shipped one.
#
# Privilege: the daemon runs as root (the caller), without RunAsUser, as
# Debian's init script runs it; it delivers to root, by the local mailer
# replaced with DIR/deliver.sh (run as the recipient, root), which writes each
# message as a file into the Maildir-like DIR/mail/new (tmp/ then rename). The
# test directory is under /tmp, whose sticky world-writable mode Sendmail's
# file safety checks refuse unless told to trust the sticky bit
# (DontBlameSendmail=TrustStickyBit); nothing else is relaxed.
#
# Needs unshare --uts --mount (below: the host name).
#
# It listens on 127.0.0.1:SMTP_PORT only (no MSA port), is the host
# test.example (no DNS lookup of its own name, nothing canonified), relays
# nothing, and takes mail for root@test.example. The load average never makes
# it queue or refuse (QueueLA, RefuseLA high); a queue runner every 5 s
# (-q5s) delivers whatever was queued anyway. Exit status 75: the port was
# taken (the test tries another); 77: no unpacked Sendmail.
set -eu
cmd=$1; DIR=$2; NAME=$3; shift 3
case $DIR in /*) ;; *) DIR=$(pwd)/$DIR ;; esac
SENDMAIL=${SENDMAIL:-/opt/extbody-test-sendmail/usr/libexec/sendmail/sendmail}
SENDMAIL_CF=${SENDMAIL_CF:-/opt/extbody-test-sendmail/usr/share/sendmail/cf}
I=$DIR/$NAME

case $cmd in
up)
  PORT=$1; SOCK=$2; FLAGS=$3; LINE_FILE=$4
  [ -x "$SENDMAIL" ] && [ -r "$SENDMAIL_CF/m4/cf.m4" ] || { echo "sendmail-peer.sh: no sendmail at $SENDMAIL" >&2; exit 77; }
  # a port taken since the test was handed it: 75 at once (Sendmail itself
  # would retry binding for a minute)
  if ss -Hltn "sport = :$PORT" | grep -q .; then exit 75; fi
  mkdir -p "$I/queue" "$DIR/mail/new" "$DIR/mail/tmp"
  chmod 700 "$I/queue"
  if [ ! -x "$DIR/deliver.sh" ]; then
    cat > "$DIR/deliver.sh" <<EOF
#!/bin/sh
# the local mailer of the test's Sendmail: the message into $DIR/mail/new
f=\$(mktemp "$DIR/mail/tmp/m.XXXXXX") && cat > "\$f" && mv "\$f" "$DIR/mail/new/" || exit 75
EOF
    chmod 755 "$DIR/deliver.sh"
  fi
  : > "$I/aliases"
  line=$(grep '^INPUT_MAIL_FILTER(' "$LINE_FILE")
  line=$(printf '%s\n' "$line" | sed "s#S=[^,']*#S=unix:$SOCK#")
  [ "$FLAGS" = - ] || line=$(printf '%s\n' "$line" | sed "s#F=[^,']*#F=$FLAGS#")
  cat > "$I/sendmail.mc" <<EOF
divert(-1)
# written by tests/sendmail/sendmail-peer.sh for one test run
divert(0)dnl
OSTYPE(\`linux')dnl
undefine(\`PROCMAIL_MAILER_PATH')dnl
define(\`confDOMAIN_NAME', \`test.example')dnl
define(\`QUEUE_DIR', \`$I/queue')dnl
define(\`ALIAS_FILE', \`$I/aliases')dnl
define(\`STATUS_FILE', \`$I/statistics')dnl
define(\`confPID_FILE', \`$I/sendmail.pid')dnl
define(\`confDONT_PROBE_INTERFACES', \`True')dnl
define(\`confDONT_BLAME_SENDMAIL', \`TrustStickyBit')dnl
define(\`confQUEUE_LA', \`500')dnl
define(\`confREFUSE_LA', \`1000')dnl
define(\`confDELAY_LA', \`0')dnl
define(\`confMAX_DAEMON_CHILDREN', \`0')dnl
define(\`confCONNECTION_RATE_THROTTLE', \`0')dnl
define(\`confMILTER_LOG_LEVEL', \`6')dnl
define(\`LOCAL_MAILER_PATH', \`$DIR/deliver.sh')dnl
define(\`LOCAL_MAILER_ARGS', \`deliver.sh \$u')dnl
FEATURE(\`nocanonify')dnl
FEATURE(\`no_default_msa')dnl
DAEMON_OPTIONS(\`Port=$PORT, Addr=127.0.0.1, Name=MTA')dnl
$line
MAILER(\`local')dnl
MAILER(\`smtp')dnl
EOF
  m4 -D_CF_DIR_="$SENDMAIL_CF/" "$SENDMAIL_CF/m4/cf.m4" "$I/sendmail.mc" > "$I/sendmail.cf"
  rm -f "$I/sendmail.pid"
  # its own host name and name service, in a private UTS and mount namespace
  # (unshare(1)): Sendmail qualifies the system's host name at start through
  # the resolver and, when that fails, sleeps 60 s and says "unknown"; here
  # the host is mta.test.example, in a private /etc/hosts, and a private
  # /etc/resolv.conf names 127.0.0.1, so no query ever leaves the machine
  mkdir -p "$DIR/etc"
  printf '127.0.0.1\tmta.test.example localhost\n::1\tlocalhost\n' > "$DIR/etc/hosts"
  printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' > "$DIR/etc/resolv.conf"
  chmod 644 "$DIR/etc/hosts" "$DIR/etc/resolv.conf"
  unshare --uts --mount --propagation private sh -c '
    d=$1; shift
    hostname mta.test.example && mount --bind "$d/etc/hosts" /etc/hosts &&
    mount --bind "$d/etc/resolv.conf" /etc/resolv.conf && exec "$@"' \
    sh "$DIR" "$SENDMAIL" -C "$I/sendmail.cf" -bd -q5s > "$I/start.log" 2>&1 || { cat "$I/start.log" >&2; exit 1; }
  # up when its pid file names a live process listening on the port; the
  # port taken (Sendmail retries binding, then gives up): 75
  i=0
  while [ $i -lt 200 ]; do
    if [ -s "$I/sendmail.pid" ]; then
      pid=$(head -1 "$I/sendmail.pid")
      if ss -Hltnp "sport = :$PORT" 2>/dev/null | grep -q "pid=$pid,"; then
        exit 0
      fi
    fi
    if grep -q -i 'address already in use' "$I/start.log" 2>/dev/null; then
      [ -s "$I/sendmail.pid" ] && kill "$(head -1 "$I/sendmail.pid")" 2>/dev/null || true
      exit 75
    fi
    sleep 0.05; i=$((i + 1))
  done
  echo "sendmail-peer.sh: $NAME did not come up on port $PORT" >&2
  cat "$I/start.log" >&2
  [ -s "$I/sendmail.pid" ] && kill "$(head -1 "$I/sendmail.pid")" 2>/dev/null || true
  ss -Hltnp "sport = :$PORT" >&2 || true
  exit 75
  ;;
down)
  if [ -s "$I/sendmail.pid" ]; then
    pid=$(head -1 "$I/sendmail.pid")
    kill "$pid" 2>/dev/null || true
    i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  ;;
*)
  echo "usage: sendmail-peer.sh up|down DIR NAME ..." >&2; exit 64 ;;
esac
