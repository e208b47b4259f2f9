#!/usr/bin/python3
"""Checks the Kubernetes manifests in deploy/k8s/ the way a cluster would.

    check_manifests.py K8S_DIR SHOALD SHOAL_TRACKER

Every file must parse as YAML, and every object must hold together:
workloads have images, resources, probes and the volumes they mount; a
Service selects a workload and targets ports it declares; the DaemonSet keeps
its cache on the host, is reachable by its peers, and passes the node's zone;
a StatefulSet has a governing headless Service and, unless it is a fleet's
tracker, a volume; every ConfigMap, Secret and key a pod refers to exists;
a PodDisruptionBudget selects a workload and leaves room to drain; the
config files in the ConfigMaps are accepted by the real binaries, and their
addresses match the ports and Services around them.

Some files are alternatives (tracker.yaml, one tracker on LevelDB, or
tracker-fleet.yaml, a fleet on etcd): the directory is checked once per
choice, with the other left out, and no object may be defined twice within
one. For a fleet it also checks that --registry names the etcd members the
manifests run, that the shared Secret holds the peer CA as well as the keys,
that the trackers spread over nodes under a PodDisruptionBudget, that the
agents list every tracker of the fleet, and that the etcd members form the
cluster their flags describe.

Then it breaks copies of the manifests on purpose, one fault at a time
(manifest_faults.py), and fails unless the checks catch each fault.

Run with Debian's /usr/bin/python3 (python3-yaml).
"""

import copy
import glob
import os
import re
import subprocess
import sys
import tempfile
import tomllib

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from fleet_checks import FLEET_SECRETS, FleetChecks  # noqa: E402
from manifest_faults import FAULTS  # noqa: E402

WORKLOADS = ("Deployment", "DaemonSet", "StatefulSet", "Job")
# Files a cluster applies one of: the checks run once per choice.
ALTERNATIVES = {"single tracker": "tracker.yaml", "tracker fleet": "tracker-fleet.yaml"}
CLUSTER_SCOPED = ("Namespace", "ClusterRole", "ClusterRoleBinding")
# ConfigMaps every namespace has without anyone applying them.
BUILTIN_CONFIGMAPS = ("kube-root-ca.crt",)


def load(k8s_dir):
    """[(file name, object)] for every YAML document in k8s_dir."""
    objs = []
    paths = sorted(glob.glob(os.path.join(k8s_dir, "*.yaml")))
    if not paths:
        sys.exit(f"check_manifests: no *.yaml in {k8s_dir}")
    for path in paths:
        with open(path) as f:
            try:
                docs = list(yaml.safe_load_all(f))
            except yaml.YAMLError as e:
                sys.exit(f"check_manifests: {path} is not valid YAML: {e}")
        for doc in docs:
            if doc is not None:
                objs.append((os.path.basename(path), doc))
    return objs


def variant(objs, choice):
    """objs without the files that are alternatives to ALTERNATIVES[choice]."""
    others = {f for name, f in ALTERNATIVES.items() if name != choice}
    return [(f, o) for f, o in objs if f not in others]


def pod_spec(obj):
    return obj.get("spec", {}).get("template", {}).get("spec", {})


def all_containers(spec):
    return spec.get("initContainers", []) + spec.get("containers", [])


def port_of(address):
    return int(address.rsplit(":", 1)[1])


class Checker(FleetChecks):
    def __init__(self, objs, shoald=None, tracker=None):
        self.objs = objs
        self.shoald = shoald
        self.tracker = tracker
        self.errors = []

    def err(self, where, msg):
        self.errors.append(f"{where[0]}: {where[1]}: {msg}")

    def find(self, kind, ns, name):
        for _, o in self.objs:
            md = o.get("metadata", {})
            if o.get("kind") == kind and md.get("name") == name and md.get("namespace") == ns:
                return o
        return None

    def run(self):
        defined = {}
        for f, o in self.objs:
            kind = o.get("kind")
            md = o.get("metadata", {})
            where = (f, f"{kind}/{md.get('name')}")
            if not o.get("apiVersion") or not kind or not md.get("name"):
                self.err(where, "needs apiVersion, kind and metadata.name")
                continue
            key = (kind, md.get("namespace"), md["name"])
            if key in defined:
                self.err(where, f"is defined in {defined[key]} too: applying both, one replaces the other")
            defined.setdefault(key, f)
            if kind not in CLUSTER_SCOPED and not md.get("namespace"):
                self.err(where, "needs metadata.namespace")
            if kind in WORKLOADS:
                self.check_workload(where, o)
            if kind == "DaemonSet":
                self.check_daemonset(where, o)
            if kind == "StatefulSet":
                self.check_statefulset(where, o)
            if kind == "Service":
                self.check_service(where, o)
            if kind == "ConfigMap":
                self.check_config_files(where, o)
            if kind == "PodDisruptionBudget":
                self.check_pdb(where, o)
        return self.errors

    def workloads_selected(self, ns, selector):
        """Workloads in ns whose pods carry every label of selector."""
        found = []
        for _, w in self.objs:
            if w.get("kind") in WORKLOADS and w["metadata"].get("namespace") == ns:
                labels = w.get("spec", {}).get("template", {}).get("metadata", {}).get("labels", {})
                if all(labels.get(k) == v for k, v in selector.items()):
                    found.append(w)
        return found

    def resolve(self, where, host):
        """The Service a cluster DNS name points at, as (Service, StatefulSet,
        ordinal): a Service name (name.namespace.svc...) gives (svc, None,
        None); a StatefulSet pod's name (pod.service.namespace.svc...) gives
        the pod's StatefulSet and ordinal. None, reported, if the manifests
        define no such thing."""
        parts = host.split(".")
        if len(parts) >= 3 and parts[2] == "svc":
            pod, name, ns = None, parts[0], parts[1]
        elif len(parts) >= 4 and parts[3] == "svc":
            pod, name, ns = parts[0], parts[1], parts[2]
        else:
            self.err(where, f"{host} is not a Service or StatefulSet pod address (name.namespace.svc...)")
            return None
        svc = self.find("Service", ns, name)
        if svc is None:
            self.err(where, f"{host}: no Service {ns}/{name}")
            return None
        if pod is None:
            return svc, None, None
        for _, w in self.objs:
            md = w.get("metadata", {})
            if w.get("kind") != "StatefulSet" or md.get("namespace") != ns:
                continue
            if w.get("spec", {}).get("serviceName") != name or not pod.startswith(md["name"] + "-"):
                continue
            ordinal = pod[len(md["name"]) + 1:]
            if ordinal.isdigit() and int(ordinal) < w["spec"].get("replicas", 1):
                return svc, w, int(ordinal)
        self.err(where, f"{host}: no StatefulSet governed by {ns}/{name} has a pod {pod}")
        return None

    # --- every workload -----------------------------------------------------
    def check_workload(self, where, o):
        ns = o["metadata"].get("namespace")
        spec = o.get("spec", {})
        template = spec.get("template", {})
        ps = template.get("spec", {})
        if not ps.get("containers"):
            self.err(where, "has no containers")
        if o["kind"] != "Job":
            match = spec.get("selector", {}).get("matchLabels", {})
            labels = template.get("metadata", {}).get("labels", {})
            if not match:
                self.err(where, "needs spec.selector.matchLabels")
            for k, v in match.items():
                if labels.get(k) != v:
                    self.err(where, f"selector {k}={v} does not match the pod template's labels")
        elif ps.get("restartPolicy") not in ("Never", "OnFailure"):
            self.err(where, "a Job's pods need restartPolicy Never or OnFailure")
        volumes = {v["name"]: v for v in ps.get("volumes", [])}
        claims = {c["metadata"]["name"] for c in spec.get("volumeClaimTemplates", [])}
        for v in volumes.values():
            self.check_volume_source(where, ns, v)
        for c in all_containers(ps):
            cw = (where[0], f"{where[1]} container {c.get('name')}")
            if not c.get("name") or not c.get("image"):
                self.err(cw, "needs a name and an image")
            res = c.get("resources", {})
            if not {"cpu", "memory"} <= set(res.get("requests", {})):
                self.err(cw, "needs cpu and memory requests")
            if "memory" not in res.get("limits", {}):
                self.err(cw, "needs a memory limit")
            for m in c.get("volumeMounts", []):
                if m.get("name") not in volumes and m.get("name") not in claims:
                    self.err(cw, f"mounts volume {m.get('name')}, which the pod does not declare")
            for e in c.get("env", []):
                ref = e.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    self.check_ref(cw, "Secret", ns, ref.get("name"), ref.get("key"), ref.get("optional"))
                ref = e.get("valueFrom", {}).get("configMapKeyRef")
                if ref:
                    self.check_ref(cw, "ConfigMap", ns, ref.get("name"), ref.get("key"), ref.get("optional"))
            for e in c.get("envFrom", []):
                for kind, key in (("Secret", "secretRef"), ("ConfigMap", "configMapRef")):
                    if key in e:
                        self.check_ref(cw, kind, ns, e[key].get("name"), None, e[key].get("optional"))
            names = {p.get("name") for p in c.get("ports", [])}
            numbers = {p.get("containerPort") for p in c.get("ports", [])}
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                port = c.get(probe, {}).get("httpGet", {}).get("port")
                if port is not None and port not in names and port not in numbers:
                    self.err(cw, f"{probe} uses port {port}, which the container does not declare")

    def check_volume_source(self, where, ns, v):
        if "configMap" in v:
            self.check_ref(where, "ConfigMap", ns, v["configMap"].get("name"), None, v["configMap"].get("optional"))
        if "secret" in v:
            self.check_ref(where, "Secret", ns, v["secret"].get("secretName"), None, v["secret"].get("optional"))
        for src in v.get("projected", {}).get("sources", []):
            if "configMap" in src:
                self.check_ref(where, "ConfigMap", ns, src["configMap"].get("name"), None,
                               src["configMap"].get("optional"))
            if "secret" in src:
                self.check_ref(where, "Secret", ns, src["secret"].get("name"), None, src["secret"].get("optional"))

    def check_ref(self, where, kind, ns, name, key, optional):
        if optional or (kind == "ConfigMap" and name in BUILTIN_CONFIGMAPS):
            return
        o = self.find(kind, ns, name)
        if o is None:
            self.err(where, f"refers to {kind} {ns}/{name}, which no manifest defines")
            return
        if key is not None and key not in {**o.get("data", {}), **o.get("stringData", {})}:
            self.err(where, f"refers to key {key} of {kind} {ns}/{name}, which it does not have")

    # --- the agent ----------------------------------------------------------
    def agent_config(self, ns):
        cm = self.find("ConfigMap", ns, "shoald-config")
        if cm is None or "shoald.toml" not in cm.get("data", {}):
            return None
        return tomllib.loads(cm["data"]["shoald.toml"])

    def check_daemonset(self, where, o):
        ns = o["metadata"]["namespace"]
        ps = pod_spec(o)
        agents = [c for c in ps.get("containers", []) if "shoald" in " ".join(c.get("command", []) + c.get("args", []))]
        if len(agents) != 1:
            self.err(where, "needs exactly one container running shoald")
            return
        c = agents[0]
        cmd = " ".join(c.get("command", []) + c.get("args", []))
        cfg = self.agent_config(ns)
        if cfg is None:
            self.err(where, "needs ConfigMap shoald-config with shoald.toml")
            return
        hostpaths = {v["name"]: v["hostPath"]["path"] for v in ps.get("volumes", []) if "hostPath" in v}
        mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
        for key in ("cache-dir", "control-socket"):
            path = cfg.get(key, "")
            folder = path if key == "cache-dir" else os.path.dirname(path)
            if mounts.get(folder) not in hostpaths:
                self.err(where, f"{key} {path} must be on a hostPath volume, so it outlives the pod")
        peer_port = port_of(cfg.get("peer-listen", "0.0.0.0:6881"))
        host_ports = {p.get("hostPort") for p in c.get("ports", []) if p.get("hostPort")}
        if not ps.get("hostNetwork") and peer_port not in host_ports:
            self.err(where, f"peers cannot reach port {peer_port}: use hostNetwork or a hostPort")
        if ps.get("hostNetwork") and ps.get("dnsPolicy") != "ClusterFirstWithHostNet":
            self.err(where, "with hostNetwork, dnsPolicy must be ClusterFirstWithHostNet to resolve the tracker")
        if "--zone" not in cmd and "zone" not in cfg:
            self.err(where, "does not pass the node's zone to shoald")
        if "--http-listen" not in cmd:
            self.err(where, "needs --http-listen on an address the kubelet and pods can reach")
        else:
            http_port = int(cmd.split("--http-listen", 1)[1].split()[0].strip('"').rsplit(":", 1)[1])
            declared = {p.get("containerPort"): p.get("name") for p in c.get("ports", [])}
            if http_port not in declared:
                self.err(where, f"HTTP port {http_port} is not a declared container port")
        ready = c.get("readinessProbe", {}).get("httpGet", {})
        if ready.get("path") != "/healthz":
            self.err(where, "needs a readinessProbe on /healthz")
        if not c.get("livenessProbe", {}).get("httpGet", {}).get("path"):
            self.err(where, "needs an HTTP livenessProbe")
        if not c.get("env") or not any(e.get("name") == "SHOAL_AGENT_TOKEN" for e in c["env"]):
            self.err(where, "needs SHOAL_AGENT_TOKEN from a Secret")
        address = cfg.get("tracker", "")
        flag = re.search(r'--tracker[ =]"?([^"\s]+)', cmd)
        if flag:
            arg = flag.group(1)
            address = self.env_value(where, ns, c, arg.strip("${}()")) if arg.startswith("$") else arg
        if address is not None:
            self.check_tracker_address(where, address)

    def env_value(self, where, ns, c, name):
        """The value a container's environment variable takes, from a literal
        or a ConfigMap key; None, reported, if it has none."""
        for e in c.get("env", []):
            if e.get("name") != name:
                continue
            if "value" in e:
                return e["value"]
            ref = e.get("valueFrom", {}).get("configMapKeyRef")
            cm = self.find("ConfigMap", ns, ref.get("name")) if ref else None
            if cm is not None and ref.get("key") in cm.get("data", {}):
                return cm["data"][ref["key"]]
        self.err(where, f"${name} has no value from a literal or a ConfigMap the manifests define")
        return None

    def check_tracker_address(self, where, address):
        """Each entry of the agents' tracker list is a tracker Service or pod,
        on its RPC port, with its HTTP port beside it; a fleet is listed
        whole, pod by pod, since agents register with every tracker."""
        listed = {}
        for entry in address.split(","):
            host, _, port = entry.strip().rpartition(":")
            found = self.resolve(where, host) if port.isdigit() else None
            if found is None:
                if not port.isdigit():
                    self.err(where, f"tracker {entry} is not host:port")
                continue
            svc, sts, ordinal = found
            ns = svc["metadata"]["namespace"]
            ports = {p.get("port") for p in svc.get("spec", {}).get("ports", [])}
            if int(port) not in ports:
                self.err(where, f"tracker {entry}: the Service has no port {port}")
            cm = self.find("ConfigMap", ns, "shoal-tracker-config")
            if cm is not None:
                serve = tomllib.loads(cm["data"]["shoal-tracker.toml"]).get("serve", {})
                if port_of(serve.get("http-listen", "127.0.0.1:7401")) not in ports:
                    self.err(where, "agents announce to the tracker's HTTP port on the same host: "
                             "expose it on the Service")
            if sts is None:
                sts = next((w for w in self.workloads_selected(ns, svc["spec"].get("selector", {}))
                            if w["kind"] == "StatefulSet"), None)
                if sts is not None and sts["spec"].get("replicas", 1) > 1:
                    self.err(where, f"tracker {entry} reaches one of {sts['spec']['replicas']} trackers at "
                             "random: agents register with every tracker, so list each one's pod name")
                continue
            listed.setdefault(sts["metadata"]["name"], (sts, set()))[1].add(ordinal)
        for name, (sts, ordinals) in listed.items():
            missing = sorted(set(range(sts["spec"].get("replicas", 1))) - ordinals)
            if missing:
                self.err(where, f"tracker list leaves out {', '.join(f'{name}-{i}' for i in missing)}: "
                         "agents register with every tracker of the fleet")

    # --- StatefulSets: the tracker, a fleet's trackers, etcd ---------------
    def check_statefulset(self, where, o):
        ns = o["metadata"]["namespace"]
        spec = o["spec"]
        gov = self.find("Service", ns, spec.get("serviceName"))
        if gov is None:
            self.err(where, f"serviceName {spec.get('serviceName')} is not a Service in {ns}")
        elif gov["spec"].get("clusterIP") != "None":
            self.err(where, f"serviceName {spec.get('serviceName')} should be a headless Service")
        claims = {c["metadata"]["name"]: c for c in spec.get("volumeClaimTemplates", [])}
        for name, c in claims.items():
            if not c.get("spec", {}).get("resources", {}).get("requests", {}).get("storage"):
                self.err(where, f"volumeClaimTemplate {name} needs a storage request")
        ps = pod_spec(o)
        commands = [" ".join(c.get("command", []) + c.get("args", [])) for c in ps.get("containers", [])]
        if any("shoal-tracker" in cmd for cmd in commands):
            self.check_tracker(where, o, claims)
            return
        if not claims:
            self.err(where, "needs a volumeClaimTemplate for its data")
        etcd = [cmd for cmd in commands if re.search(r"\betcd\b", cmd) and "--initial-cluster " in cmd]
        if etcd:
            self.check_etcd(where, o, etcd[0])

    def check_tracker(self, where, o, claims):
        ns = o["metadata"]["namespace"]
        spec = o["spec"]
        cm = self.find("ConfigMap", ns, "shoal-tracker-config")
        if cm is None:
            self.err(where, "needs ConfigMap shoal-tracker-config")
            return
        serve = tomllib.loads(cm["data"]["shoal-tracker.toml"]).get("serve", {})
        fleet = bool(serve.get("registry"))
        if not fleet and not claims:
            self.err(where, "needs a volumeClaimTemplate for the registry")
        if not fleet and spec.get("replicas", 1) != 1:
            self.err(where, "a tracker on LevelDB runs as one replica: a fleet needs registry=etcd://...")
        ps = pod_spec(o)
        trackers = [c for c in ps.get("containers", []) if "shoal-tracker" in " ".join(c.get("command", []))]
        if len(trackers) != 1:
            self.err(where, "needs exactly one container running shoal-tracker")
            return
        c = trackers[0]
        mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
        if not fleet and mounts.get(serve.get("data-dir", "/var/lib/shoal-tracker")) not in claims:
            self.err(where, "data-dir must be on the persistent volume")
        ports = {p.get("containerPort") for p in c.get("ports", [])}
        for key in ("rpc-listen", "http-listen"):
            address = serve.get(key, "")
            if not address.startswith("0.0.0.0:") and not address.startswith("[::]:"):
                self.err(where, f"{key} {address} must listen on every address to be reachable")
            elif port_of(address) not in ports:
                self.err(where, f"{key} port {port_of(address)} is not a declared container port")
        if c.get("readinessProbe", {}).get("httpGet", {}).get("path") != "/healthz":
            self.err(where, "needs a readinessProbe on /healthz")
        if c.get("livenessProbe", {}).get("httpGet", {}).get("path") != "/healthz":
            self.err(where, "needs a livenessProbe on /healthz")
        secrets = [v for v in ps.get("volumes", []) if "secret" in v]
        if not secrets:
            self.err(where, "needs the Secret with the token secret and the signing key")
        needed = FLEET_SECRETS if fleet else ("token.secret", "signing.key")
        for v in secrets:
            s = self.find("Secret", ns, v["secret"]["secretName"])
            have = set({**s.get("data", {}), **s.get("stringData", {})}) if s is not None else set(needed)
            if not set(needed) <= have:
                self.err(where, f"Secret {v['secret']['secretName']} needs {', '.join(needed)}"
                         + (": every tracker of a fleet must hold the same peer CA" if fleet else ""))
        if fleet:
            self.check_fleet(where, o, serve, mounts)

    # --- Services -----------------------------------------------------------
    def check_service(self, where, o):
        ns = o["metadata"]["namespace"]
        selector = o.get("spec", {}).get("selector", {})
        if not selector:
            self.err(where, "needs a selector")
            return
        pods = []
        for _, w in self.objs:
            if w.get("kind") in WORKLOADS and w["metadata"].get("namespace") == ns:
                labels = w.get("spec", {}).get("template", {}).get("metadata", {}).get("labels", {})
                if all(labels.get(k) == v for k, v in selector.items()):
                    pods.append(w)
        if not pods:
            self.err(where, f"selector {selector} matches no workload in {ns}")
            return
        declared = set()
        for w in pods:
            for c in pod_spec(w).get("containers", []):
                for p in c.get("ports", []):
                    declared.add(p.get("name"))
                    declared.add(p.get("containerPort"))
        for p in o["spec"].get("ports", []):
            target = p.get("targetPort", p.get("port"))
            if target not in declared:
                self.err(where, f"port {p.get('name')} targets {target}, which no selected container declares")

    # --- config files -------------------------------------------------------
    def check_config_files(self, where, o):
        for key, text in o.get("data", {}).items():
            if not key.endswith(".toml"):
                continue
            try:
                tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                self.err(where, f"{key} is not valid TOML: {e}")
                continue
            if key == "shoald.toml" and self.shoald:
                self.run_binary(where, key, text, [self.shoald, "--config", "{}", "--print-config"])
            if key == "shoal-tracker.toml" and self.tracker:
                self.run_binary(where, key, text, [self.tracker, "--config", "{}", "serve", "--print-config"])

    def run_binary(self, where, key, text, argv):
        with tempfile.NamedTemporaryFile("w", suffix=".toml") as f:
            f.write(text)
            f.flush()
            argv = [a.replace("{}", f.name) for a in argv]
            r = subprocess.run(argv, capture_output=True, text=True)
            if r.returncode != 0:
                self.err(where, f"{os.path.basename(argv[0])} refuses {key}: {r.stderr.strip()}")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    k8s_dir, shoald, tracker = sys.argv[1:]
    objs = load(k8s_dir)
    failed = False
    for choice in ALTERNATIVES:
        chosen = variant(objs, choice)
        errors = Checker(chosen, shoald, tracker).run()
        for e in errors:
            print(f"{choice}: {e}")
        missed = []
        for name, fault in FAULTS[choice].items():
            broken = copy.deepcopy(chosen)
            fault(broken)
            if not Checker(broken, shoald, tracker).run():
                missed.append(name)
        for name in missed:
            print(f"self-check ({choice}): the checks did not catch: {name}")
        print(f"{choice}: {len(chosen)} objects in {k8s_dir}: {len(errors)} problems; "
              f"{len(FAULTS[choice]) - len(missed)} of {len(FAULTS[choice])} planted faults caught")
        failed = failed or bool(errors or missed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
