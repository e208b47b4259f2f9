"""Shoal's processes in the namespaces, driven only through their command-line
flags, their control socket (through the `shoal` CLI) and /metrics."""
import os
import time

from . import nsnet, procs

AGENT_PEER_PORT = 6881
AGENT_HTTP_PORT = 7402


def parse_metrics(text):
    """Prometheus text -> {'name{labels}': value}, and {'name': sum over labels}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        try:
            v = float(value)
        except ValueError:
            continue
        out[key] = v
        name = key.split("{", 1)[0]
        if name != key:
            out[name] = out.get(name, 0.0) + v
    return out


def _wait_for(what, predicate, timeout, interval=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise RuntimeError("timed out after %.0f s waiting for %s" % (timeout, what))


class Shoal:
    """Paths to the binaries and what every process shares."""

    def __init__(self, bin_dir, origin, prefix, work):
        self.bin = bin_dir
        self.origin = origin
        self.origin_url = "s3://%s/%s" % (origin.bucket, prefix)
        self.work = work
        self.tokens = {}
        self.agent_flags = []  # given to every shoald, e.g. --hand-on-owners 2

    def exe(self, name):
        return os.path.join(self.bin, name)

    def env(self, **extra):
        e = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": self.work, "XDG_CACHE_HOME": os.path.join(self.work, "xdg")}
        e.update(self.origin.client_env())
        e.update({k: str(v) for k, v in extra.items()})
        return e

    def origin_flags(self):
        return ["--origin", self.origin_url, "--s3-endpoint", self.origin.endpoint,
                "--s3-region", self.origin.env["SHOAL_S3_REGION"]]


class Tracker:
    def __init__(self, shoal, host, extra_flags=()):
        self.shoal = shoal
        self.host = host
        self.extra_flags = list(extra_flags)  # e.g. --replicas 2
        self.data_dir = os.path.join(shoal.work, "tracker")
        self.process = None
        self.address = None    # host:port of the RPC listener, once started
        self.http_port = None

    def token(self, ns, role, subject):
        return procs.run([self.shoal.exe("shoal-tracker"), "token", "create", "--data-dir", self.data_dir,
                          "--ns", ns, "--role", role, "--subject", subject, "--ttl", "1d"],
                         ns=self.host.ns).strip()

    def start(self, log_path):
        """Starts (or restarts) the tracker; the registry persists in data_dir."""
        ports = os.path.join(self.shoal.work, "tracker.ports")
        if os.path.exists(ports):
            os.unlink(ports)
        argv = [self.shoal.exe("shoal-tracker"), "serve", "--data-dir", self.data_dir,
                "--rpc-listen", self.host.ip + ":0", "--http-listen", self.host.ip + ":0",
                "--port-file", ports] + self.shoal.origin_flags() + self.extra_flags
        self.process = procs.Process("tracker", self.host.ns, argv, log_path, env=self.shoal.env())
        _wait_for("the tracker's port file (%s)" % log_path,
                  lambda: os.path.exists(ports) or self.process.poll() is not None, 30)
        if self.process.poll() is not None:
            raise RuntimeError("shoal-tracker exited: " + self.process.log_tail())
        with open(ports) as f:
            rpc, http = f.read().split()
        self.address = "%s:%s" % (self.host.ip, rpc)
        self.http_port = int(http)

    def stop(self):
        if self.process:
            self.process.stop()
            self.process = None

    def metrics(self):
        _, text = nsnet.http_get(self.host.ns, "http://%s:%d/metrics" % (self.host.ip, self.http_port))
        return parse_metrics(text)

    def wait_agents(self, count, timeout=60):
        _wait_for("%d agents registered" % count, lambda: self.metrics().get("shoal_tracker_agents", -1) == count,
                  timeout, interval=0.3)


class Agent:
    """One shoald in node namespace `host`, with its own cache, socket and name."""

    def __init__(self, shoal, tracker, host, name, scenario_dir, cache_bytes):
        self.shoal = shoal
        self.tracker = tracker
        self.host = host
        self.name = name
        self.dir = os.path.join(scenario_dir, host.name)
        self.socket = os.path.join(self.dir, "shoald.sock")
        self.cache_bytes = cache_bytes
        self.process = None
        self.pull = None
        self.killed_at = None

    def start(self):
        os.makedirs(self.dir, exist_ok=True)
        argv = [self.shoal.exe("shoald"), "--name", self.name, "--token", self.shoal.tokens["agent"],
                "--tracker", self.tracker.address, "--cache-dir", os.path.join(self.dir, "cache"),
                "--cache-size", str(self.cache_bytes), "--peer-listen", "%s:%d" % (self.host.ip, AGENT_PEER_PORT),
                "--http-listen", "127.0.0.1:%d" % AGENT_HTTP_PORT, "--control-socket", self.socket,
                "--port-file", os.path.join(self.dir, "ports")] + self.shoal.origin_flags() + self.shoal.agent_flags
        self.process = procs.Process(self.name, self.host.ns, argv, os.path.join(self.dir, "shoald.log"),
                                     env=self.shoal.env())

    def healthy(self):
        status, _ = nsnet.http_get(self.host.ns, "http://127.0.0.1:%d/healthz" % AGENT_HTTP_PORT, timeout=2)
        return status == 200

    def wait_registered(self, timeout=30):
        def ready():
            if self.process.poll() is not None:
                raise RuntimeError("shoald %s exited: %s" % (self.name, self.process.log_tail()))
            return self.healthy()
        _wait_for("agent %s to register" % self.name, ready, timeout)

    def start_pull(self, ref):
        dest = os.path.join(self.dir, "model")
        argv = [self.shoal.exe("shoal"), "pull", ref, "--to", dest, "--agent", self.socket]
        self.pull = procs.Process("pull-" + self.name, self.host.ns, argv, os.path.join(self.dir, "pull.log"),
                                  env=self.shoal.env(SHOAL_TOKEN=self.shoal.tokens["reader"]))
        return self.pull

    @property
    def dest(self):
        return os.path.join(self.dir, "model")

    def metrics(self):
        _, text = nsnet.http_get(self.host.ns, "http://127.0.0.1:%d/metrics" % AGENT_HTTP_PORT)
        return parse_metrics(text)

    def stop(self):
        if self.process:
            self.process.stop()
        if self.pull and self.pull.poll() is None:
            self.pull.stop(5)


def publish(shoal, tracker, folder, ref_name, tag, log_path, piece_size=None):
    """`shoal publish` from the tracker's namespace, not seeded by any agent."""
    env = shoal.env(SHOAL_TRACKER=tracker.address, SHOAL_TOKEN=shoal.tokens["writer"])
    argv = [shoal.exe("shoal"), "publish", folder, "--name", ref_name, "--tag", tag, "--no-seed",
            "--no-hash-cache"] + shoal.origin_flags()
    if piece_size:
        argv += ["--piece-size", str(piece_size)]
    p = procs.Process("publish", tracker.host.ns, argv, log_path, env=env)
    if p.wait(900) != 0:
        raise RuntimeError("shoal publish failed: " + p.log_tail())


def warm(shoal, tracker, ref, log_path):
    """`shoal warm`; returns its exit code."""
    env = shoal.env(SHOAL_TRACKER=tracker.address, SHOAL_TOKEN=shoal.tokens["writer"])
    p = procs.Process("warm", tracker.host.ns, [shoal.exe("shoal"), "warm", ref], log_path, env=env)
    return p.wait(900)
