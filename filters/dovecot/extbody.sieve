# extbody at delivery: every message passes through extbody (the program
# "extbody" in sieve_filter_bin_dir, /usr/libexec/extbody/sieve-filter/extbody
# from the Debian package: extbody-sieve-filter), then is
# kept. As a sieve_before script, a personal script that runs after it (fileinto,
# discard) replaces this keep, and gets the rewritten message. When the filter
# fails, the message goes on exactly as it came.
# Precompile it (global scripts are not compiled at delivery), once
# 90-extbody.conf is in /etc/dovecot/conf.d (it makes the filter command
# known; before it sievec fails: unknown Sieve capability vnd.dovecot.filter):
#   sievec -c /etc/dovecot/dovecot.conf /etc/dovecot/sieve/extbody.sieve
# (-c: a running Dovecot 2.3 otherwise gives sievec the configuration it
# started with, without 90-extbody.conf)
require "vnd.dovecot.filter";
filter "extbody";
keep;
