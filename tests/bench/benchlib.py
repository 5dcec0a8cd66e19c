# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the benchmark drivers share: a free port, the daemon under a build
directory, its peak memory, and the -o lines that close the doors a run does
not use. Imported by the bench-*.py beside it (their own directory is on
Python's path when they run)."""
import os
import socket
import subprocess


def free_port():
    """A TCP port of 127.0.0.1 free a moment ago."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def find_daemon(build):
    """The resident daemon under build: filters/daemon/extbodyd, or
    filters/milter/extbody-milter in a build from before 0.2.0; None when
    there is neither."""
    for rel in (("filters", "daemon", "extbodyd"), ("filters", "milter", "extbody-milter")):
        p = os.path.join(build, *rel)
        if os.access(p, os.X_OK):
            return p
    return None


def vm_hwm(pid):
    """Peak resident set of a running process in KB (VmHWM), 0 when unknown."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def doors_off(daemon, conf):
    """-o lines closing the daemon's HTTP and Dovecot doors (their defaults are
    the system's, under /run/extbody); none for a daemon without them."""
    off = ["-o", "http_socket=", "-o", "dovecot_filter_socket="]
    r = subprocess.run([daemon, "-c", conf, "-n"] + off, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return off if r.returncode == 0 else []
