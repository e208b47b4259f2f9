"""Reaching into a network namespace from a thread of this process, without
starting a program: setns(2) moves only the calling thread, and a socket
keeps the namespace it was made in. Cheap enough to poll every agent's
/metrics once a second."""
import contextlib
import ctypes
import os
import threading
import urllib.error
import urllib.request

_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)
_mu = threading.Lock()
_home = {}  # thread id -> fd of the namespace the thread started in


def _setns(fd):
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "setns: " + os.strerror(e))


@contextlib.contextmanager
def entered(ns):
    """Runs the block with this thread in namespace `ns`, then moves it back."""
    tid = threading.get_ident()
    with _mu:
        if tid not in _home:
            _home[tid] = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        home = _home[tid]
    fd = os.open("/run/netns/" + ns, os.O_RDONLY)
    try:
        _setns(fd)
        yield
    finally:
        _setns(home)
        os.close(fd)


_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_get(ns, url, timeout=5):
    """(status, body) of a GET from inside `ns`; status 0 if nothing answered."""
    with entered(ns):
        try:
            with _opener.open(url, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, ""
        except (OSError, urllib.error.URLError):
            return 0, ""


def link_bytes(ns, dev="eth0"):
    """(tx, rx) bytes of `dev` in `ns`, from /proc/thread-self/net/dev."""
    with entered(ns):
        with open("/proc/thread-self/net/dev") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name.strip() == dev:
                    v = rest.split()
                    return int(v[8]), int(v[0])
    raise RuntimeError("no %s in namespace %s" % (dev, ns))


def tcp_retransmitted_segments(ns):
    """The namespace's TCP RetransSegs counter (/proc/thread-self/net/snmp)."""
    with entered(ns):
        with open("/proc/thread-self/net/snmp") as f:
            rows = [line.split() for line in f if line.startswith("Tcp:")]
    return int(rows[1][rows[0].index("RetransSegs")])
