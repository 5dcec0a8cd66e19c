#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# pool-net.sh - the network of tests/pool/test-pool.c and
# tests/bench/bench-pool.py, all on this machine (run as root; iproute2's ip):
#
#   a Linux bridge PREFIX in the root namespace, 198.18.N.1/24 (RFC 2544's
#   benchmarking range: never routed anywhere): the origin HTTP server and
#   Redis (or Valkey) listen there;
#   three network namespaces ("hosts") PREFIX-h1, -h2, -h3, each with one
#   veth on the bridge, 198.18.N.11, .12, .13: one extbodyd each;
#   a fourth, PREFIX-mta, 198.18.N.2: the MTA side (HAProxy, extbodyc,
#   Postfix).
#   Each namespace has its loopback up. Nothing has a default route: nothing
#   leaves the bridge.
#
#   pool-net.sh up PREFIX         make it (PREFIX: "ebp" then the caller's
#                                 process id, so at most 10 characters) on the
#                                 first 198.18.N.0/24 no interface of this
#                                 machine has an address in, and print N
#   pool-net.sh down PREFIX       kill every process left in its namespaces,
#                                 remove them and the bridge (what is not
#                                 there is skipped)
#   pool-net.sh sweep             "down" for every ebpPID left by a run whose
#                                 process PID is gone (a run that crashed or
#                                 was killed before its clean-up)
#   pool-net.sh haproxy-cfg TEMPLATE MTA_ADDRESS DIR DAEMON_ADDRESS...
#                                 HAProxy's configuration TEMPLATE (the shipped
#                                 filters/daemon/haproxy.cfg) for this network,
#                                 on standard output: every bind on
#                                 MTA_ADDRESS (its port kept), each backend's
#                                 server lines one per DAEMON_ADDRESS, named
#                                 d1, d2, ... (the first server line's port and
#                                 options kept), the global section's log,
#                                 stats socket, chroot, user, group, pidfile and
#                                 daemon lines replaced by a log to standard
#                                 error and a stats socket DIR/haproxy.sock
set -eu

ns_of() { printf '%s-h1 %s-h2 %s-h3 %s-mta' "$1" "$1" "$1" "$1"; }

down() {
  for ns in $(ns_of "$1"); do
    [ -e "/run/netns/$ns" ] || continue
    # only processes this run started can be in its namespaces
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  ! ip link show "$1" >/dev/null 2>&1 || ip link del "$1" 2>/dev/null || true
}

# alive PID: the process that made ebpPID still runs (a test-pool or a
# bench-pool, not another program that got the number since)
alive() {
  [ -r "/proc/$1/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$1/cmdline" | grep -q -e test-pool -e bench-pool
}

case ${1:-} in
up)
  P=$2
  case $P in ebp[0-9]*) ;; *) echo "pool-net.sh: PREFIX must be ebp and a number" >&2; exit 64 ;; esac
  [ "${#P}" -le 10 ] || { echo "pool-net.sh: PREFIX $P is longer than 10 characters" >&2; exit 64; }
  down "$P"
  used=$(ip -4 -o addr show | sed -n 's/.* inet 198\.18\.\([0-9]*\)\..*/\1/p')
  N=$(( ${P#ebp} % 254 + 1 )); i=0
  while printf '%s\n' $used | grep -qx "$N"; do
    N=$(( N % 254 + 1 )); i=$((i + 1))
    [ $i -lt 254 ] || { echo "pool-net.sh: every 198.18.N.0/24 is in use" >&2; exit 1; }
  done
  ip link add "$P" type bridge
  ip addr add "198.18.$N.1/24" dev "$P"
  ip link set "$P" up
  i=0
  for h in h1 h2 h3 mta; do
    i=$((i + 1))
    case $h in mta) a=2 ;; *) a=$((10 + i)) ;; esac
    ip netns add "$P-$h"
    ip link add "${P}v$i" type veth peer name eth0 netns "$P-$h"
    ip link set "${P}v$i" master "$P" up
    ip -n "$P-$h" addr add "198.18.$N.$a/24" dev eth0
    ip -n "$P-$h" link set eth0 up
    ip -n "$P-$h" link set lo up
  done
  echo "$N"
  ;;
down)
  down "$2"
  ;;
sweep)
  for p in $( { ip netns list 2>/dev/null | sed -n 's/^\(ebp[0-9][0-9]*\)-\(h[123]\|mta\)\( .*\)\{0,1\}$/\1/p';
                ip -o link show type bridge 2>/dev/null | sed -n 's/^[0-9]*: \(ebp[0-9][0-9]*\)[:@].*/\1/p'; } | sort -u); do
    alive "${p#ebp}" || { echo "pool-net.sh: removing $p, left by a run that is gone" >&2; down "$p"; }
  done
  ;;
haproxy-cfg)
  template=$2; mta=$3; dir=$4; shift 4
  awk -v mta="$mta" -v dir="$dir" -v servers="$*" '
    function flush_servers(   n, a, i, line) {
      if (proto == "") return
      n = split(servers, a, " ")
      for (i = 1; i <= n; i++) {
        line = proto
        sub(/@NAME@/, "d" i, line)
        sub(/@ADDRESS@/, a[i], line)
        print line
      }
      proto = ""
    }
    /^[ \t]*(global|defaults|frontend|backend|listen|resolvers|peers|userlist|program|ring|cache|mailers)([ \t]|$)/ {
      flush_servers()
      section = $1
      print
      if (section == "global") {
        print "    log stderr format rfc3164 local0 info"
        print "    stats socket " dir "/haproxy.sock mode 600 level admin"
      }
      next
    }
    section == "global" && $1 ~ /^(log|chroot|user|group|pidfile|daemon|stats|master-worker|nbthread)$/ { next }
    $1 == "bind" {
      addr = $2; port = addr; sub(/^.*:/, "", port)
      rest = $0; sub(/^[ \t]*bind[ \t]+[^ \t]+/, "", rest)
      print "    bind " mta ":" port rest
      next
    }
    $1 == "server" {
      if (proto != "") next       # the first server line is the pattern
      port = $3; sub(/^.*:/, "", port)
      rest = $0; sub(/^[ \t]*server[ \t]+[^ \t]+[ \t]+[^ \t]+/, "", rest)
      proto = "    server @NAME@ @ADDRESS@:" port rest
      next
    }
    /^[ \t]*$/ { flush_servers() }
    { print }
    END { flush_servers() }
  ' "$template"
  ;;
*)
  echo "usage: pool-net.sh up PREFIX | down PREFIX | sweep | haproxy-cfg TEMPLATE MTA_ADDRESS DIR DAEMON_ADDRESS..." >&2
  exit 64
  ;;
esac
