#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# pf-peer.sh -- a private, throwaway Postfix on 127.0.0.1 for extbody's tests (run as root).
#   pf-peer.sh up DIR SMTP_PORT [MILTER_SPEC] [DEFAULT_ACTION]
#   pf-peer.sh set DIR name=value ...   (postconf -e, then reload)
#   pf-peer.sh service DIR 'master.cf line' ...   (append, then reload)
#   pf-peer.sh reload DIR               (after an edit of DIR/etc of one's own)
# Every reload returns once master has read the configuration again.
#   pf-peer.sh down DIR
# It listens on loopback only, makes no DNS lookups, sends nothing off the box,
# and delivers everything for test.example to DIR/mail/Maildir/.
set -eu
cmd=$1; DIR=$2; shift 2
case $DIR in /*) ;; *) DIR=$(pwd)/$DIR ;; esac   # postfix -c wants an absolute path
C=$DIR/etc

cool() { touch -d '-1 minute' "$C/main.cf" "$C/master.cf"; }   # see pitfall "main.cf cool-down"

# `postfix reload` only signals master: a message sent right after it may still
# meet the old configuration (a content_filter not yet in force). Wait for
# master's "reload -- version" log line.
reloads() { n=$(grep -c 'master\[[0-9]*\]: reload -- ' "$DIR/log/maillog" 2>/dev/null || true); echo "${n:-0}"; }
reload() {
  before=$(reloads)
  postfix -c "$C" reload >/dev/null
  i=0
  until [ "$(reloads)" -gt "$before" ]; do
    i=$((i+1)); [ $i -lt 400 ] || { echo "postfix test peer: master did not reload" >&2; tail -20 "$DIR/log/maillog" >&2; exit 1; }
    sleep 0.05
  done
}

case $cmd in
up)
  PORT=$1; MILTER=${2:-}; ACTION=${3:-tempfail}
  mkdir -p "$C" "$DIR/spool" "$DIR/data" "$DIR/mail" "$DIR/log"
  chmod 755 "$DIR"                                 # delivery uid must be able to traverse it
  DUID=$(id -u nobody); DGID=$(id -g nobody)
  chown postfix:postfix "$DIR/data"
  chown "$DUID:$DGID" "$DIR/mail"
  cat > "$C/main.cf" <<EOF
compatibility_level = 3.6
queue_directory = $DIR/spool
data_directory = $DIR/data
syslog_name = postfix-test
maillog_file = $DIR/log/maillog
maillog_file_prefixes = $DIR/log
myhostname = mx.test.example
mydomain = test.example
myorigin = test.example
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
smtp_dns_support_level = disabled
smtpd_peername_lookup = no
alias_maps =
alias_database =
local_recipient_maps =
biff = no
smtpd_relay_restrictions = reject_unauth_destination
local_header_rewrite_clients =
default_transport = error:outbound mail disabled in test instance
relay_transport = error:outbound mail disabled in test instance
virtual_mailbox_domains = test.example
virtual_mailbox_base = $DIR/mail
virtual_mailbox_maps = static:Maildir/
virtual_uid_maps = static:$DUID
virtual_gid_maps = static:$DGID
smtpd_milters = $MILTER
milter_default_action = $ACTION
milter_connect_timeout = 5s
milter_command_timeout = 5s
milter_content_timeout = 10s
EOF
  cat > "$C/master.cf" <<EOF
127.0.0.1:$PORT inet n - n - - smtpd
cleanup   unix n - n -   0 cleanup
qmgr      unix n - n 300 1 qmgr
rewrite   unix - - n -   - trivial-rewrite
bounce    unix - - n -   0 bounce
defer     unix - - n -   0 bounce
trace     unix - - n -   0 bounce
showq     unix n - n -   - showq
error     unix - - n -   - error
virtual   unix - n n -   - virtual
anvil     unix - - n -   1 anvil
postlog   unix-dgram n - n - 1 postlogd
EOF
  cool
  # returns once master has initialised (master -w); a port another process
  # took since the test was handed it: exit 75, and the test tries another
  if ! postfix -c "$C" start; then
    if grep -q "Address already in use" "$DIR/log/maillog" 2>/dev/null; then
      echo "postfix test peer: port $PORT taken before master bound it" >&2
      exit 75
    fi
    tail -20 "$DIR/log/maillog" >&2
    exit 1
  fi
  # readiness: this instance's own master listens on the port (never another
  # process that holds it: a parallel test's server), and answers with 220
  i=0
  until [ -s "$DIR/spool/pid/master.pid" ] \
        && ss -Hltnp "sport = :$PORT" 2>/dev/null | grep -q "pid=$(tr -d ' ' <"$DIR/spool/pid/master.pid")," \
        && timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT && head -c 3 <&3 && printf 'QUIT\r\n' >&3" 2>/dev/null | grep -q 220; do
    i=$((i+1)); [ $i -lt 200 ] || { echo "postfix test peer not ready on :$PORT" >&2; tail -20 "$DIR/log/maillog" >&2; exit 1; }
    sleep 0.05
  done
  ;;
set)
  postconf -c "$C" -e "$@"
  cool
  reload
  ;;
reload)
  cool
  reload
  ;;
service)
  # append a master.cf entry (one line; continuation lines start with spaces)
  printf '%s\n' "$@" >> "$C/master.cf"
  cool
  reload
  ;;
down)
  if [ -f "$DIR/spool/pid/master.pid" ] && postfix -c "$C" status >/dev/null 2>&1; then
    postfix -c "$C" stop
  fi
  ;;
*) echo "usage: $0 up|set|down DIR ..." >&2; exit 2 ;;
esac
