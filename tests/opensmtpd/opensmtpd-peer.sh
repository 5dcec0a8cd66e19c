#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# opensmtpd-peer.sh -- a private, throwaway OpenSMTPD 6.8 on 127.0.0.1 for
# extbody's tests (run as root).
#
#   opensmtpd-peer.sh up DIR SMTP_PORT SINK_PORT FILTER_COMMAND
#   opensmtpd-peer.sh down DIR
#
# The smtpd binary is $SMTPD, default /opt/extbody-test-opensmtpd/usr/sbin/smtpd:
# Debian's opensmtpd 6.8.0p2 unpacked with dpkg-deb -x (tests/quickstart.sh),
# never installed, since Debian's opensmtpd conflicts with postfix.
#
# Debian's smtpd has its paths compiled in: the queue /var/spool/smtpd, the
# control socket /var/run/smtpd.sock, the chroot /var/lib/opensmtpd/empty, and
# its users opensmtpd and opensmtpq, looked up by name. So that the system is
# never touched, smtpd runs in a private mount and UTS namespace (unshare(1))
# in which /var/spool, /run and /var/lib are directories of DIR, /etc/passwd
# and /etc/group are copies with those users added (unless the system has
# them), /etc/hosts names the host mta.test.example (its host name there) and
# /etc/resolv.conf names 127.0.0.1, so no lookup leaves the machine.
#
# Its configuration (DIR/smtpd.conf): listen on 127.0.0.1:SMTP_PORT with the
# filter "extbody" (proc-exec FILTER_COMMAND, run by smtpd as opensmtpd: the
# command and what it reads must be readable by that user), and relay every
# message to 127.0.0.1:SINK_PORT (the test's SMTP sink, sink.py), so no
# delivery agent of OpenSMTPD's runs. smtpd's log (-d -v, foreground, in the
# background of this script) is DIR/smtpd.log; its pid DIR/smtpd.pid.
# Exit status 75: the port was taken; 77: no unpacked OpenSMTPD.
set -eu
cmd=$1; DIR=$2; shift 2
case $DIR in /*) ;; *) DIR=$(pwd)/$DIR ;; esac
SMTPD=${SMTPD:-/opt/extbody-test-opensmtpd/usr/sbin/smtpd}

case $cmd in
up)
  PORT=$1; SINK=$2; FILTER=$3
  [ -x "$SMTPD" ] || { echo "opensmtpd-peer.sh: no smtpd at $SMTPD" >&2; exit 77; }
  if ss -Hltn "sport = :$PORT" | grep -q .; then exit 75; fi
  mkdir -p "$DIR/etc" "$DIR/ns/spool" "$DIR/ns/run" "$DIR/ns/lib/opensmtpd/empty"
  chmod 755 "$DIR" "$DIR/etc" "$DIR/ns" "$DIR/ns/spool" "$DIR/ns/run" "$DIR/ns/lib" \
    "$DIR/ns/lib/opensmtpd" "$DIR/ns/lib/opensmtpd/empty"
  cp /etc/passwd "$DIR/etc/passwd"; cp /etc/group "$DIR/etc/group"
  uid=64980
  for u in opensmtpd opensmtpq; do
    if ! getent passwd $u >/dev/null; then
      while getent passwd "$uid" >/dev/null || getent group "$uid" >/dev/null; do uid=$((uid - 1)); done
      echo "$u:x:$uid:$uid:OpenSMTPD test instance:/var/lib/opensmtpd/empty:/usr/sbin/nologin" >> "$DIR/etc/passwd"
      echo "$u:x:$uid:" >> "$DIR/etc/group"
      uid=$((uid - 1))
    fi
  done
  printf '127.0.0.1\tmta.test.example localhost\n::1\tlocalhost\n' > "$DIR/etc/hosts"
  printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' > "$DIR/etc/resolv.conf"
  echo mta.test.example > "$DIR/etc/mailname"
  chmod 644 "$DIR/etc/passwd" "$DIR/etc/group" "$DIR/etc/hosts" "$DIR/etc/resolv.conf" "$DIR/etc/mailname"
  cat > "$DIR/smtpd.conf" <<EOF
# written by tests/opensmtpd/opensmtpd-peer.sh for one test run
filter "extbody" proc-exec "$FILTER"
listen on 127.0.0.1 port $PORT hostname mta.test.example filter "extbody"
action "sink" relay host smtp://127.0.0.1:$SINK
match from any for any action "sink"
EOF
  chmod 644 "$DIR/smtpd.conf"
  rm -f "$DIR/smtpd.pid"
  # smtpd -d stays in the foreground: it runs in the background of this
  # script, its pid (the unshare's exec'd smtpd) kept for down
  unshare --uts --mount --propagation private sh -c '
    d=$1; shift
    hostname mta.test.example &&
    mount --bind "$d/etc/passwd" /etc/passwd && mount --bind "$d/etc/group" /etc/group &&
    mount --bind "$d/etc/hosts" /etc/hosts && mount --bind "$d/etc/resolv.conf" /etc/resolv.conf &&
    { [ ! -e /etc/mailname ] || mount --bind "$d/etc/mailname" /etc/mailname; } &&
    mount --bind "$d/ns/spool" /var/spool && mount --bind "$d/ns/run" /run &&
    mount --bind "$d/ns/lib" /var/lib && echo $$ > "$d/smtpd.pid" && exec "$@"' \
    sh "$DIR" "$SMTPD" -d -v -f "$DIR/smtpd.conf" > "$DIR/smtpd.log" 2>&1 < /dev/null &
  i=0
  while [ $i -lt 400 ]; do
    if [ -s "$DIR/smtpd.pid" ]; then
      pid=$(cat "$DIR/smtpd.pid")
      kill -0 "$pid" 2>/dev/null || { cat "$DIR/smtpd.log" >&2; exit 1; }
      if ss -Hltnp "sport = :$PORT" 2>/dev/null | grep -q "smtpd"; then
        exit 0
      fi
    fi
    sleep 0.05; i=$((i + 1))
  done
  echo "opensmtpd-peer.sh: smtpd did not come up on port $PORT" >&2
  cat "$DIR/smtpd.log" >&2
  [ -s "$DIR/smtpd.pid" ] && kill "$(cat "$DIR/smtpd.pid")" 2>/dev/null || true
  exit 1
  ;;
down)
  if [ -s "$DIR/smtpd.pid" ]; then
    pid=$(cat "$DIR/smtpd.pid")
    kill "$pid" 2>/dev/null || true
    i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  ;;
*)
  echo "usage: opensmtpd-peer.sh up|down DIR ..." >&2; exit 64 ;;
esac
