#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-examples.sh - the examples extbody ships pass their servers' own checks
# as they are (issue 26: data/store-nginx.conf.example failed `nginx -t`):
#
#   - data/store-nginx.conf.example, included unchanged in a minimal nginx.conf:
#     `nginx -t` (its certificate lines name Debian's ssl-cert snake-oil pair,
#     which tests/quickstart.sh makes where it is missing);
#   - data/store-apache-dav.conf.example, included unchanged in a minimal
#     httpd.conf with the modules its header names: `apache2 -t`;
#   - data/extbody.conf.example: `extbody config --check -c` exits 0;
#   - filters/daemon/haproxy.cfg, the pool's balancer: `haproxy -c`, and
#     its health checks ask the daemons' GET /healthz.
#
#   sh test-examples.sh TOP EXTBODY
#
# Exit 0 when all pass, 1 with one line per failure; 77 (skipped, which CI
# counts as a failure) when nginx, Apache or HAProxy is not installed.
set -u
top=$1
extbody=$2
nginx=$(command -v nginx || echo /usr/sbin/nginx)
apache=/usr/sbin/apache2
mods=/usr/lib/apache2/modules
haproxy=$(command -v haproxy || echo /usr/sbin/haproxy)
for p in "$nginx" "$apache" "$haproxy"; do
  [ -x "$p" ] || { echo "skipped: $p is not installed (tests/quickstart.sh installs it)"; exit 77; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/extbody-examples.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
fail () { echo "FAIL: $*"; failed=1; }

# nginx: the server block as shipped, inside http {}
cat >"$work/nginx.conf" <<NGINX
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events {}
http {
  access_log off;
  include $top/data/store-nginx.conf.example;
}
NGINX
if out=$("$nginx" -t -p "$work" -c "$work/nginx.conf" -e "$work/nginx-error.log" 2>&1); then
  echo "ok: nginx -t with data/store-nginx.conf.example"
else
  fail "nginx -t with data/store-nginx.conf.example: $out"
fi

# Apache: the WebDAV store as shipped, with the modules its header enables
{
  echo "ServerRoot /etc/apache2"
  echo "ServerName localhost"
  echo "PidFile $work/httpd.pid"
  echo "ErrorLog $work/httpd-error.log"
  echo "Mutex file:$work default"
  echo "Listen 127.0.0.1:1"
  for m in mpm_event authz_core authz_user authn_core authn_file auth_basic alias dav dav_fs; do
    echo "LoadModule ${m}_module $mods/mod_$m.so"
  done
  echo "Include $top/data/store-apache-dav.conf.example"
} >"$work/httpd.conf"
if out=$("$apache" -t -f "$work/httpd.conf" 2>&1); then
  echo "ok: apache2 -t with data/store-apache-dav.conf.example"
else
  fail "apache2 -t with data/store-apache-dav.conf.example: $out"
fi
# the example's own a2enmod line names every module the check needed
for m in dav dav_fs auth_basic authn_file authz_user; do
  grep -q "a2enmod.* $m\b" "$top/data/store-apache-dav.conf.example" \
    || fail "data/store-apache-dav.conf.example does not name $m in its a2enmod line"
done

# HAProxy in front of a pool: valid as shipped (-c binds nothing), and
# both backends take a daemon out by its /healthz
if out=$("$haproxy" -c -f "$top/filters/daemon/haproxy.cfg" 2>&1); then
  echo "ok: haproxy -c -f filters/daemon/haproxy.cfg"
else
  fail "haproxy -c -f filters/daemon/haproxy.cfg: $out"
fi
[ "$(grep -c 'http-check send meth GET uri /healthz' "$top/filters/daemon/haproxy.cfg")" = 2 ] \
  || fail "filters/daemon/haproxy.cfg: both backends should check GET /healthz"

# extbody's own example configuration
if out=$("$extbody" config --check -c "$top/data/extbody.conf.example" 2>&1); then
  echo "ok: extbody config --check -c data/extbody.conf.example"
else
  fail "extbody config --check -c data/extbody.conf.example: $out"
fi
exit $failed
