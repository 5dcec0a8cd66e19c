# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the benchmark drivers share: a free port, the daemon under a build
directory, its peak memory, the -o lines that close the doors a run does
not use, the daemon stopped at the end of a run, the message with a
reference the MTA drivers send, and how many files a mail directory holds.
Imported by the bench-*.py beside it (their own directory is on Python's path
when they run)."""
import os
import signal
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


def stop_daemon(proc):
    """SIGTERM to the daemon proc (a subprocess.Popen, or None) when it still
    runs, and wait for it; killed after 30 s."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def refs_message(path):
    """Write to path the message the MTA drivers send: about 5 KB of text and
    one data: reference, CRLF line ends."""
    with open(path, "w", newline="") as f:
        f.write("From: a@test.example\r\nTo: b@test.example\r\nSubject: with a reference\r\n"
                "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n"
                "--b\r\nContent-Type: text/plain\r\n\r\n" + ("some text to make it about 5 KB long\r\n" * 120) +
                "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n"
                "\tURL=\"data:text/plain,Hello%2C%20\r\n\tbenchmark!%0A\"\r\n\r\n"
                "Content-Type: text/plain\r\n\r\n--b--\r\n")


def files_in(directory):
    """How many files directory holds (a Maildir's new/, a pipe's output): 0
    when it does not exist yet."""
    try:
        return len(os.listdir(directory))
    except FileNotFoundError:
        return 0
