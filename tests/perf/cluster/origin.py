"""The origin: a one-node Ceph radosgw (tests/s3/radosgw.sh) in its own namespace,
listening on that namespace's veth address.

Its usage log is one of the two independent counts of origin egress (the
other is the kernel's tx counter on the origin's eth0).
"""
import json
import os
import time

from . import procs


class RadosgwOrigin:
    def __init__(self, host, script, state_dir, memstore_bytes):
        self.host = host
        self.script = script
        self.dir = state_dir
        self.memstore_bytes = memstore_bytes
        self.env = {}

    def start(self):
        env = dict(os.environ, SHOAL_RGW_ADDR=self.host.ip, SHOAL_RGW_MEMSTORE_BYTES=str(self.memstore_bytes))
        procs.run([self.script, "start", self.dir], ns=self.host.ns, env=env, timeout=240)
        with open(os.path.join(self.dir, "s3.env")) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                self.env[k] = v

    def stop(self):
        procs.run([self.script, "stop", self.dir], ns=self.host.ns, timeout=120, check=False)

    @property
    def endpoint(self):
        return self.env["SHOAL_S3_ENDPOINT"]

    @property
    def bucket(self):
        return self.env["SHOAL_S3_BUCKET"]

    def client_env(self):
        """Environment for any S3 client (shoal, aws) to reach this origin."""
        return {
            "AWS_ACCESS_KEY_ID": self.env["SHOAL_S3_ACCESS_KEY"],
            "AWS_SECRET_ACCESS_KEY": self.env["SHOAL_S3_SECRET_KEY"],
            "AWS_DEFAULT_REGION": self.env["SHOAL_S3_REGION"],
            "AWS_REGION": self.env["SHOAL_S3_REGION"],
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
            "AWS_CONFIG_FILE": "/dev/null",
            "no_proxy": "*", "NO_PROXY": "*",
        }

    def pids(self):
        """The ceph-mon, ceph-osd and radosgw pids."""
        out = []
        for name in ("mon.pid", "osd.pid", "rgw.pid"):
            try:
                with open(os.path.join(self.dir, name)) as f:
                    out.append(int(f.read().strip()))
            except (OSError, ValueError):
                pass
        return out

    def usage_bytes_sent(self):
        """Bytes radosgw sent in response bodies, all operations, by its usage log."""
        out = procs.run(["timeout", "30", "radosgw-admin", "-c", os.path.join(self.dir, "ceph.conf"), "usage", "show",
                         "--uid=test", "--show-log-entries=false"], ns=self.host.ns, timeout=40)
        d = json.loads(out)
        return sum(c["bytes_sent"] for u in d.get("summary", []) for c in u["categories"])

    def settled_usage_bytes_sent(self):
        """The same once the log stops moving (it flushes every second): two
        reads 1.5 s apart that agree, waiting at most about 20 s."""
        last = self.usage_bytes_sent()
        for _ in range(12):
            time.sleep(1.5)
            now = self.usage_bytes_sent()
            if now == last:
                return now
            last = now
        return last
