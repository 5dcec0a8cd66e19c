#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# exim-peer.sh -- a private, throwaway Exim 4 on 127.0.0.1 for extbody's tests
# and benchmark (run as root).
#
#   exim-peer.sh up DIR SMTP_PORT EXTBODY_EXIM EXTBODY [SECONDS]
#   exim-peer.sh exim DIR EXIM_ARGUMENT...   (the instance's exim: -bp, -M ID, ...)
#   exim-peer.sh check DIR LINES         (filters/exim/exim4-extbody.conf: its
#                                        transports and router in a configuration
#                                        of their own, checked by exim -bV; after up)
#   exim-peer.sh down DIR
#
# The exim binary is $EXIM, default /opt/extbody-test-exim/usr/sbin/exim4:
# Debian's exim4-daemon-light unpacked with dpkg-deb -x (tests/quickstart.sh),
# never installed, since Debian's exim4 packages conflict with postfix.
#
# Debian's exim is built with EXIM_USER=Debian-exim, looked up by name when it
# starts, before it reads any configuration. So that the system's user database
# is never touched, every exim of the instance runs in a private mount
# namespace (unshare(1)) in which /etc/passwd and /etc/group are copies with
# that user and group added (unless the system has them).
#
# Privilege: root starts the daemon with -C DIR/exim.conf and keeps root (the
# caller is root); the receiving process runs as Debian-exim, and the delivery
# process it re-executes with -C drops privilege, since the file is not in
# Debian's TRUSTED_CONFIG_LIST (/etc/exim4/trusted_configs). So the
# configuration is a "mostly unprivileged" one (deliver_drop_privilege, the
# Exim specification's "Running Exim without privilege"): every delivery, and
# the transport filter, runs as Debian-exim, into Maildirs Debian-exim owns.
#
# It listens on 127.0.0.1 only, looks nothing up in the DNS, relays nothing,
# and delivers mail for test.example by local part, to DIR/mail/NAME/Maildir:
#
#   plain@         no filter (transport maildir_plain)
#   cat@           mail/cat: transport_filter = /bin/cat (the benchmark's floor
#                  for what a transport filter costs)
#   mbox@          mail/mbox/mbox, an mbox file, with the filter as below
#   broken@        the filter with DIR/broken.conf, --on-error accept (the default)
#   broken-defer@  the filter with DIR/broken-defer.conf, --on-error tempfail
#   client@        mail/client: transport_filter = $EXTBODYC (when the
#                  environment names it: extbodyc, readable by Debian-exim)
#                  -s unix:DIR/http.sock -l DIR/log/extbodyc.log -t 30, the
#                  daemon's listener (the test starts the daemon)
#   anyone else    mail/extbody: the filter with DIR/extbody.conf, the lines of
#                  filters/exim/README.md (transport extbody_maildir)
#
# The filter is EXTBODY_EXIM -e EXTBODY -l DIR/log/extbody.log [-t SECONDS];
# the test writes the three extbody configuration files (readable by
# Debian-exim). Exim's logs are DIR/log/mainlog, rejectlog and paniclog; the
# daemon's pid is in DIR/exim.pid. Deferred deliveries are retried every
# second (the daemon runs the queue every second: -q1s).
set -eu
cmd=$1; DIR=$2; shift 2
case $DIR in /*) ;; *) DIR=$(pwd)/$DIR ;; esac
EXIM=${EXIM:-/opt/extbody-test-exim/usr/sbin/exim4}
C=$DIR/exim.conf

# run the instance's exim with ARGS in the private namespace
in_ns () {
  in_ns_conf "$C" "$@"
}
in_ns_conf () {
  conf=$1; shift
  unshare --mount --propagation private sh -c '
    d=$1; shift
    mount --bind "$d/etc/passwd" /etc/passwd && mount --bind "$d/etc/group" /etc/group && exec "$@"' \
    sh "$DIR" "$EXIM" -C "$conf" "$@"
}

case $cmd in
up)
  PORT=$1; FILTER=$2; EXTBODY=$3; LIMIT=${4:-}
  [ -x "$EXIM" ] || { echo "exim-peer.sh: no exim at $EXIM" >&2; exit 77; }
  mkdir -p "$DIR/etc" "$DIR/spool" "$DIR/log" "$DIR/mail"
  chmod 755 "$DIR" "$DIR/etc"
  cp /etc/passwd "$DIR/etc/passwd"; cp /etc/group "$DIR/etc/group"
  if ! getent passwd Debian-exim >/dev/null; then
    uid=64990
    while getent passwd "$uid" >/dev/null || getent group "$uid" >/dev/null; do uid=$((uid - 1)); done
    echo "Debian-exim:x:$uid:$uid:Exim test instance:$DIR/spool:/usr/sbin/nologin" >> "$DIR/etc/passwd"
    echo "Debian-exim:x:$uid:" >> "$DIR/etc/group"
  else
    uid=$(getent passwd Debian-exim | cut -d: -f3)
  fi
  gid=$(awk -F: '$1 == "Debian-exim" { print $3 }' "$DIR/etc/group")
  chmod 644 "$DIR/etc/passwd" "$DIR/etc/group"
  chown "$uid:$gid" "$DIR/spool" "$DIR/log" "$DIR/mail"
  chmod 750 "$DIR/spool"
  touch "$DIR/log/extbody.log" "$DIR/log/extbodyc.log"
  chown "$uid:$gid" "$DIR/log/extbody.log" "$DIR/log/extbodyc.log"
  for f in extbody broken broken-defer; do
    [ -e "$DIR/$f.conf" ] || : > "$DIR/$f.conf"
    chmod 644 "$DIR/$f.conf"
  done
  filter="$FILTER -e $EXTBODY -l $DIR/log/extbody.log${LIMIT:+ -t $LIMIT}"
  # the daemon's client (filters/exim/README.md); without EXTBODYC, /bin/false
  # (a client@ message then stays deferred: nobody sends one)
  client="${EXTBODYC:-/bin/false} -s unix:$DIR/http.sock -l $DIR/log/extbodyc.log -t 30"
  cat > "$C" <<EOF
# written by tests/exim/exim-peer.sh for one test run
primary_hostname = exim.test.example
qualify_domain = test.example
domainlist local_domains = test.example
spool_directory = $DIR/spool
log_file_path = $DIR/log/%slog
pid_file_path = $DIR/exim.pid
# a port taken since the test was handed it: give up at once (the default
# waits 30 s, nine times) and say so; the test tries another port
daemon_startup_retries = 0
local_interfaces = <; 127.0.0.1
daemon_smtp_ports = $PORT
deliver_drop_privilege = true
never_users = root
host_lookup =
rfc1413_hosts =
keep_environment =
tls_advertise_hosts =
acl_smtp_rcpt = acl_rcpt
smtp_accept_max = 100
# at most 2 deliveries started at once per connection; a connection's further
# messages are queued for the queue runners (-q1s, queue_run_max 5), as
# Exim's own default (10) does so as not to start "a zillion processes": with
# no limit (0), the burst's 10 sessions started 200 deliveries at once, each
# a per-message filter, and on two cores a build under AddressSanitizer took
# more than the filter's -t to start each one (Debian 13's, seen: 364 exim
# and 71 extbody processes at once, every message passed unresolved)
smtp_accept_queue_per_connection = 2
message_size_limit = 100M

begin acl
acl_rcpt:
  accept hosts = 127.0.0.1
         domains = +local_domains
  deny   message = relay not permitted

begin routers
plain:
  driver = accept
  domains = +local_domains
  local_parts = plain
  transport = maildir_plain
cat:
  driver = accept
  domains = +local_domains
  local_parts = cat
  transport = maildir_cat
mbox:
  driver = accept
  domains = +local_domains
  local_parts = mbox
  transport = mbox_extbody
client:
  driver = accept
  domains = +local_domains
  local_parts = client
  transport = extbody_client
broken:
  driver = accept
  domains = +local_domains
  local_parts = broken
  transport = extbody_broken
broken_defer:
  driver = accept
  domains = +local_domains
  local_parts = broken-defer
  transport = extbody_broken_defer
extbody:
  driver = accept
  domains = +local_domains
  transport = extbody_maildir

begin transports
maildir_plain:
  driver = appendfile
  directory = $DIR/mail/plain/Maildir
  maildir_format
  create_directory
  delivery_date_add
  envelope_to_add
  return_path_add
  user = Debian-exim
  group = Debian-exim
  mode = 0644
maildir_cat:
  driver = appendfile
  directory = $DIR/mail/cat/Maildir
  maildir_format
  create_directory
  delivery_date_add
  envelope_to_add
  return_path_add
  user = Debian-exim
  group = Debian-exim
  mode = 0644
  transport_filter = /bin/cat
  transport_filter_timeout = 300s
extbody_maildir:
  driver = appendfile
  directory = $DIR/mail/extbody/Maildir
  maildir_format
  create_directory
  delivery_date_add
  envelope_to_add
  return_path_add
  user = Debian-exim
  group = Debian-exim
  mode = 0644
  transport_filter = $filter -c $DIR/extbody.conf -q \$message_exim_id
  transport_filter_timeout = 300s
mbox_extbody:
  driver = appendfile
  file = $DIR/mail/mbox/mbox
  create_directory
  delivery_date_add
  envelope_to_add
  return_path_add
  user = Debian-exim
  group = Debian-exim
  mode = 0644
  transport_filter = $filter -c $DIR/extbody.conf -q \$message_exim_id
  transport_filter_timeout = 300s
extbody_client:
  driver = appendfile
  directory = $DIR/mail/client/Maildir
  maildir_format
  create_directory
  delivery_date_add
  envelope_to_add
  return_path_add
  user = Debian-exim
  group = Debian-exim
  mode = 0644
  transport_filter = $client
  transport_filter_timeout = 300s
extbody_broken:
  driver = appendfile
  directory = $DIR/mail/broken/Maildir
  maildir_format
  create_directory
  delivery_date_add
  envelope_to_add
  return_path_add
  user = Debian-exim
  group = Debian-exim
  mode = 0644
  transport_filter = $filter -c $DIR/broken.conf -q \$message_exim_id
  transport_filter_timeout = 300s
extbody_broken_defer:
  driver = appendfile
  directory = $DIR/mail/broken-defer/Maildir
  maildir_format
  create_directory
  delivery_date_add
  envelope_to_add
  return_path_add
  user = Debian-exim
  group = Debian-exim
  mode = 0644
  transport_filter = $filter -c $DIR/broken-defer.conf --on-error tempfail -q \$message_exim_id
  transport_filter_timeout = 300s

begin retry
*  *  F,1h,1s
EOF
  chmod 644 "$C"
  in_ns -bV >/dev/null 2>"$DIR/log/bV.err" || { cat "$DIR/log/bV.err" >&2; exit 1; }
  in_ns -bd -q1s
  # up when this instance's daemon (its pid file) listens on the port, never
  # another process that holds it; exit 75 when the port was taken before
  # the daemon bound it (the test tries another)
  i=0
  until [ -s "$DIR/exim.pid" ] && ss -Hltnp "sport = :$PORT" 2>/dev/null | grep -q "pid=$(cat "$DIR/exim.pid"),"; do
    if grep -qs "Address already in use" "$DIR/log/paniclog" "$DIR/log/mainlog"; then
      echo "exim-peer.sh: port $PORT taken before the daemon bound it" >&2
      exit 75
    fi
    i=$((i + 1)); [ $i -lt 200 ] || { echo "exim-peer.sh: exim did not come up" >&2; cat "$DIR/log/paniclog" >&2 2>/dev/null; exit 1; }
    sleep 0.05
  done
  ;;
exim)
  in_ns "$@"
  ;;
check)
  LINES=$1
  awk '/^# router \(after/ { exit } { print }' "$LINES" > "$DIR/check-transports.conf"
  awk 'f { print } /^# router \(after/ { f = 1 }' "$LINES" > "$DIR/check-routers.conf"
  grep -q '^extbody_local_user:' "$DIR/check-routers.conf"
  grep -q '^extbody_maildir_home:' "$DIR/check-transports.conf"
  cat > "$DIR/check.conf" <<EOF
domainlist local_domains = test.example
spool_directory = $DIR/spool
keep_environment =
begin routers
.include $DIR/check-routers.conf
begin transports
.include $DIR/check-transports.conf
EOF
  in_ns_conf "$DIR/check.conf" -bV >/dev/null
  for t in extbody_maildir_home extbody_mail_spool; do
    in_ns_conf "$DIR/check.conf" -bP transport "$t"
  done
  in_ns_conf "$DIR/check.conf" -bP router extbody_local_user
  ;;
down)
  if [ -s "$DIR/exim.pid" ]; then
    pid=$(cat "$DIR/exim.pid")
    kill "$pid" 2>/dev/null || true
    i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  fi
  ;;
*)
  echo "usage: exim-peer.sh up|exim|down DIR ..." >&2; exit 64 ;;
esac
