"""Faults planted in copies of the Kubernetes manifests: check_manifests.py
must report each one, or its checks are not checking.

Each fault takes the loaded objects, [(file name, object)], and breaks one
thing in place. FAULTS holds them per choice of tracker manifest
(check_manifests.ALTERNATIVES): each is planted in the objects of its choice.
"""


def pod_spec(obj):
    return obj.get("spec", {}).get("template", {}).get("spec", {})


def first(objs, kind, name=None):
    for _, o in objs:
        if o.get("kind") == kind and (name is None or o["metadata"]["name"] == name):
            return o
    raise LookupError(f"no {kind} {name or ''} to break")


def agent_container(objs):
    return pod_spec(first(objs, "DaemonSet"))["containers"][0]


def set_toml(objs, cm_name, file_key, old, new):
    cm = first(objs, "ConfigMap", cm_name)
    assert old in cm["data"][file_key], old
    cm["data"][file_key] = cm["data"][file_key].replace(old, new)


def set_data(objs, cm_name, key, old, new):
    cm = first(objs, "ConfigMap", cm_name)
    assert old in cm["data"][key], old
    cm["data"][key] = cm["data"][key].replace(old, new)


def secret_keys(objs, name):
    return first(objs, "Secret", name)["stringData"]


SINGLE_TRACKER = {
    "DaemonSet without a readiness probe": lambda m: agent_container(m).pop("readinessProbe"),
    "DaemonSet without a liveness probe": lambda m: agent_container(m).pop("livenessProbe"),
    "DaemonSet without resource limits": lambda m: agent_container(m)["resources"].pop("limits"),
    "DaemonSet selector that misses its pods": lambda m: first(m, "DaemonSet")["spec"]["selector"]["matchLabels"].update(
        {"app.kubernetes.io/name": "other"}),
    "DaemonSet cache on an emptyDir": lambda m: [v.update({"emptyDir": {}}) or v.pop("hostPath")
                                                 for v in pod_spec(first(m, "DaemonSet"))["volumes"]
                                                 if v["name"] == "cache"],
    "DaemonSet off the host network, no host port": lambda m: [pod_spec(first(m, "DaemonSet")).pop("hostNetwork"),
                                                               [p.pop("hostPort", None)
                                                                for p in agent_container(m)["ports"]]],
    "DaemonSet without the zone": lambda m: agent_container(m).update(
        {"command": [a.replace('--zone "$(cat /node/zone)"', "") for a in agent_container(m)["command"]]}),
    "DaemonSet token from a missing Secret": lambda m: [e["valueFrom"]["secretKeyRef"].update({"name": "nope"})
                                                        for e in agent_container(m)["env"]
                                                        if e["name"] == "SHOAL_AGENT_TOKEN"],
    "StatefulSet without a volume": lambda m: first(m, "StatefulSet")["spec"].pop("volumeClaimTemplates"),
    "StatefulSet governed by a missing Service": lambda m: first(m, "StatefulSet")["spec"].update(
        {"serviceName": "missing"}),
    "Service selecting nothing": lambda m: first(m, "Service", "shoal-tracker")["spec"]["selector"].update(
        {"app.kubernetes.io/name": "missing"}),
    "Service targeting an undeclared port": lambda m: first(m, "Service", "shoal-tracker")["spec"]["ports"][0].update(
        {"targetPort": "grpc"}),
    "tracker listening on loopback only": lambda m: set_toml(m, "shoal-tracker-config", "shoal-tracker.toml",
                                                             'rpc-listen="0.0.0.0:7400"', 'rpc-listen="127.0.0.1:7400"'),
    "agents pointed at a port the Service lacks": lambda m: set_data(
        m, "shoal-tracker-address", "tracker", ".svc.cluster.local:7400", ".svc.cluster.local:7411"),
    "two tracker replicas on one LevelDB each": lambda m: first(m, "StatefulSet")["spec"].update({"replicas": 2}),
    "a misspelt key in the agent's config": lambda m: set_toml(m, "shoald-config", "shoald.toml",
                                                               "cache-size=", "cache_sise="),
}

ETCD_1 = "shoal-etcd-1.shoal-etcd.shoal.svc"
TRACKER_SERVICE = "shoal-tracker.shoal.svc.cluster.local:7400"
TRACKER_2 = ",shoal-tracker-2.shoal-tracker-headless.shoal.svc.cluster.local:7400"

TRACKER_FLEET = {
    "registry naming an etcd Service that does not exist": lambda m: set_toml(
        m, "shoal-tracker-config", "shoal-tracker.toml", ETCD_1, "shoal-etcd-1.etcd-missing.shoal.svc"),
    "registry naming an etcd member beyond the replicas": lambda m: set_toml(
        m, "shoal-tracker-config", "shoal-tracker.toml", ETCD_1, "shoal-etcd-3.shoal-etcd.shoal.svc"),
    "registry without a key prefix": lambda m: set_toml(
        m, "shoal-tracker-config", "shoal-tracker.toml", ':2379/shoal"', ':2379"'),
    "fleet without secrets-dir": lambda m: set_toml(
        m, "shoal-tracker-config", "shoal-tracker.toml", 'secrets-dir="/run/shoal-tracker/secrets"', ""),
    "fleet Secret without the peer CA": lambda m: secret_keys(m, "shoal-tracker-keys").pop("peer-ca.key"),
    "tracker PodDisruptionBudget selecting nothing": lambda m: first(m, "PodDisruptionBudget", "shoal-tracker")[
        "spec"]["selector"]["matchLabels"].update({"app.kubernetes.io/name": "missing"}),
    "tracker PodDisruptionBudget leaving nothing to drain": lambda m: first(
        m, "PodDisruptionBudget", "shoal-tracker")["spec"].update({"minAvailable": 3}),
    "fleet trackers free to share a node": lambda m: pod_spec(first(m, "StatefulSet", "shoal-tracker")).pop(
        "affinity"),
    "agents leaving out a tracker of the fleet": lambda m: set_data(m, "shoal-tracker-address", "tracker",
                                                                    TRACKER_2, ""),
    "agents pointed at the fleet's load-balanced Service": lambda m: first(
        m, "ConfigMap", "shoal-tracker-address")["data"].update({"tracker": TRACKER_SERVICE}),
    "etcd started one member at a time": lambda m: first(m, "StatefulSet", "shoal-etcd")["spec"].pop(
        "podManagementPolicy"),
    "etcd initial cluster missing a member": lambda m: pod_spec(first(m, "StatefulSet", "shoal-etcd"))[
        "containers"][0].update({"command": [a.replace(
            ",shoal-etcd-2=http://shoal-etcd-2.shoal-etcd.shoal.svc.cluster.local:2380", "")
            for a in pod_spec(first(m, "StatefulSet", "shoal-etcd"))["containers"][0]["command"]]}),
    "etcd data outside its volume": lambda m: pod_spec(first(m, "StatefulSet", "shoal-etcd"))["containers"][0].update(
        {"command": [a.replace("--data-dir /var/lib/etcd/data", "--data-dir /tmp/etcd")
                     for a in pod_spec(first(m, "StatefulSet", "shoal-etcd"))["containers"][0]["command"]]}),
    "etcd without its volume": lambda m: first(m, "StatefulSet", "shoal-etcd")["spec"].pop("volumeClaimTemplates"),
}

FAULTS = {"single tracker": SINGLE_TRACKER, "tracker fleet": TRACKER_FLEET}
