#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Parse a Prometheus text file with the reference parser (Debian's
python3-prometheus-client) and print what it read, for test-metrics.c:

    # TYPE <family> <type>
    <sample name>{<label>=<value>,...} <value>

labels sorted, values as Python's repr of a float. A file the parser refuses
exits non-zero with its error."""
import sys

from prometheus_client.parser import text_string_to_metric_families

with open(sys.argv[1], encoding="utf-8") as f:
    text = f.read()
for family in text_string_to_metric_families(text):
    print("# TYPE %s %s" % (family.name, family.type))
    for s in family.samples:
        labels = ",".join("%s=%s" % (k, v) for k, v in sorted(s.labels.items()))
        print("%s{%s} %r" % (s.name, labels, float(s.value)))
