"""The checks check_manifests.py adds for a fleet of trackers on etcd
(tracker-fleet.yaml): the etcd StatefulSet, the trackers' registry and
shared secrets, their spread over nodes and their disruption budgets.

FleetChecks is mixed into check_manifests.Checker, and uses its objs, err,
find, resolve and workloads_selected.
"""

import re

# What a fleet's trackers share through --secrets-dir (core/base/peer_ca_files.cpp
# names the peer CA's files).
FLEET_SECRETS = ("token.secret", "signing.key", "peer-ca.key", "peer-ca.pem")


def pod_spec(obj):
    return obj.get("spec", {}).get("template", {}).get("spec", {})


class FleetChecks:
    # --- disruption budgets -------------------------------------------------
    def check_pdb(self, where, o):
        ns = o["metadata"]["namespace"]
        spec = o.get("spec", {})
        selector = spec.get("selector", {}).get("matchLabels", {})
        pods = self.workloads_selected(ns, selector) if selector else []
        if not pods:
            self.err(where, f"selector {selector} matches no workload in {ns}")
            return
        low = spec.get("minAvailable")
        if not isinstance(low, int):
            self.err(where, "needs minAvailable as a number of pods")
            return
        for w in pods:
            replicas = w.get("spec", {}).get("replicas", 1)
            if low >= replicas:
                self.err(where, f"minAvailable {low} of {w['metadata']['name']}'s {replicas} pods "
                         "leaves no pod to drain: nodes could never be emptied")

    def check_etcd(self, where, o, cmd):
        """A static etcd cluster: its members are the StatefulSet's pods, by
        their stable names, started together."""
        ns = o["metadata"]["namespace"]
        spec = o["spec"]
        name, replicas, svc = o["metadata"]["name"], spec.get("replicas", 1), spec.get("serviceName")
        if replicas < 3 or replicas % 2 == 0:
            self.err(where, f"{replicas} etcd members: run an odd number, at least 3, to outlive one")
        if replicas > 1 and spec.get("podManagementPolicy") != "Parallel":
            self.err(where, "etcd members need podManagementPolicy Parallel: none is ready before a quorum is up")
        wanted = {f"{name}-{i}": f"http://{name}-{i}.{svc}.{ns}.svc.cluster.local:2380" for i in range(replicas)}
        initial = cmd.split("--initial-cluster ", 1)[1].split()[0].strip('"')
        members = dict(m.split("=", 1) for m in initial.split(",") if "=" in m)
        if members != wanted:
            self.err(where, f"--initial-cluster {initial} is not the StatefulSet's {replicas} pods "
                     f"by their stable names ({','.join(f'{k}={v}' for k, v in wanted.items())})")
        claims = {c["metadata"]["name"] for c in spec.get("volumeClaimTemplates", [])}
        data_dir = cmd.split("--data-dir ", 1)[1].split()[0].strip('"') if "--data-dir " in cmd else ""
        on_claim = [m for c in pod_spec(o).get("containers", []) for m in c.get("volumeMounts", [])
                    if m.get("name") in claims and data_dir.startswith(m["mountPath"].rstrip("/") + "/")]
        if not on_claim:
            self.err(where, f"etcd --data-dir {data_dir or '(default)'} must be inside a volumeClaimTemplate's "
                     "mount, so a member keeps its data across restarts")
        if gov := self.find("Service", ns, svc):
            if not gov["spec"].get("publishNotReadyAddresses"):
                self.err(where, f"Service {svc} needs publishNotReadyAddresses: members resolve each "
                         "other before any is ready")
        self.check_pdb_covers(where, o)

    def check_pdb_covers(self, where, o):
        ns = o["metadata"]["namespace"]
        labels = o["spec"]["template"]["metadata"].get("labels", {})
        for _, b in self.objs:
            sel = b.get("spec", {}).get("selector", {}).get("matchLabels", {})
            if (b.get("kind") == "PodDisruptionBudget" and b["metadata"].get("namespace") == ns and sel
                    and all(labels.get(k) == v for k, v in sel.items())):
                return
        self.err(where, "needs a PodDisruptionBudget, so draining nodes cannot take most of its pods at once")

    def check_spread(self, where, o):
        labels = o["spec"]["template"]["metadata"].get("labels", {})
        anti = pod_spec(o).get("affinity", {}).get("podAntiAffinity", {})
        terms = anti.get("requiredDuringSchedulingIgnoredDuringExecution", []) + [
            t.get("podAffinityTerm", {}) for t in anti.get("preferredDuringSchedulingIgnoredDuringExecution", [])]
        for t in terms:
            sel = t.get("labelSelector", {}).get("matchLabels", {})
            if t.get("topologyKey") == "kubernetes.io/hostname" and sel and all(
                    labels.get(k) == v for k, v in sel.items()):
                return
        self.err(where, "needs podAntiAffinity on kubernetes.io/hostname against its own pods: "
                 "one node lost must cost one member")

    def check_fleet(self, where, o, serve, mounts):
        """A fleet's trackers: one etcd registry the manifests run, the shared
        secrets in a folder of their own, spread over nodes, under a budget."""
        registry = serve["registry"]
        m = re.fullmatch(r"etcd(\+https)?://([^/]+)/(\S+)", registry)
        if not m:
            self.err(where, f"registry {registry} is not etcd://host:port,.../prefix (a fleet's keys need a prefix)")
        else:
            for endpoint in m.group(2).split(","):
                host, _, port = endpoint.rpartition(":")
                found = self.resolve(where, host) if port.isdigit() else None
                if found is None:
                    if not port.isdigit():
                        self.err(where, f"registry member {endpoint} is not host:port")
                    continue
                svc, sts, _ = found
                if int(port) not in {p.get("port") for p in svc["spec"].get("ports", [])}:
                    self.err(where, f"registry member {endpoint}: Service {svc['metadata']['name']} has no port {port}")
                if sts is None or not any("etcd" in " ".join(x.get("command", []) + [x.get("image", "")])
                                          for x in pod_spec(sts).get("containers", [])):
                    self.err(where, f"registry member {endpoint} is not a pod of an etcd StatefulSet")
            if m.group(1) and not serve.get("registry-ca"):
                self.err(where, "an etcd+https:// registry needs registry-ca")
        secrets_dir = serve.get("secrets-dir", "")
        if not secrets_dir:
            self.err(where, "a fleet needs secrets-dir, the keys every tracker shares")
        elif secrets_dir not in mounts:
            self.err(where, f"secrets-dir {secrets_dir} is not a mounted volume")
        if o["spec"].get("replicas", 1) < 2:
            self.err(where, "a fleet runs at least two trackers")
        self.check_spread(where, o)
        self.check_pdb_covers(where, o)
