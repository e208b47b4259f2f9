#!/usr/bin/env python3
"""Pushes a folder to an OCI distribution registry as a CNCF ModelPack
artifact, speaking the distribution API (blob uploads, then the manifest).

  oci_push.py REGISTRY_URL REPO TAG FOLDER [--tar] [--user U --password P]

Each file becomes a layer application/vnd.cncf.model.weight.v1.raw with its
path in the org.cncf.model.filepath annotation; with --tar, every file goes
into one application/vnd.cncf.model.weight.v1.tar layer instead. Prints the
manifest's digest.
"""
import argparse
import base64
import hashlib
import io
import json
import os
import tarfile
import urllib.request

ARTIFACT = "application/vnd.cncf.model.manifest.v1+json"
CONFIG = "application/vnd.cncf.model.config.v1+json"
RAW = "application/vnd.cncf.model.weight.v1.raw"
TAR = "application/vnd.cncf.model.weight.v1.tar"


def request(args, method, url, data=None, headers=None):
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if args.user:
        cred = base64.b64encode(("%s:%s" % (args.user, args.password)).encode()).decode()
        req.add_header("Authorization", "Basic " + cred)
    return urllib.request.urlopen(req)


def push_blob(args, data):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    r = request(args, "POST", "%s/v2/%s/blobs/uploads/" % (args.registry, args.repo), b"")
    location = r.headers["Location"]
    if location.startswith("/"):
        location = args.registry + location
    sep = "&" if "?" in location else "?"
    request(args, "PUT", location + sep + "digest=" + digest, data,
            {"Content-Type": "application/octet-stream"})
    return {"digest": digest, "size": len(data)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("registry")
    p.add_argument("repo")
    p.add_argument("tag")
    p.add_argument("folder")
    p.add_argument("--tar", action="store_true")
    p.add_argument("--user", default="")
    p.add_argument("--password", default="")
    args = p.parse_args()

    files = []
    for base, _, names in os.walk(args.folder):
        for n in names:
            files.append(os.path.relpath(os.path.join(base, n), args.folder))
    files.sort()
    layers = []
    if args.tar:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
            for rel in files:
                t.add(os.path.join(args.folder, rel), arcname=rel)
        d = push_blob(args, buf.getvalue())
        d.update(mediaType=TAR, annotations={"org.cncf.model.filepath": "."})
        layers.append(d)
    else:
        for rel in files:
            d = push_blob(args, open(os.path.join(args.folder, rel), "rb").read())
            d.update(mediaType=RAW, annotations={"org.cncf.model.filepath": rel})
            layers.append(d)
    config = json.dumps({
        "descriptor": {"name": args.repo, "version": args.tag},
        "config": {"format": "safetensors"},
        "modelfs": {"type": "layers", "diffIds": [l["digest"] for l in layers]},
    }).encode()
    cfg = push_blob(args, config)
    cfg["mediaType"] = CONFIG
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": ARTIFACT,
        "config": cfg,
        "layers": layers,
    }).encode()
    request(args, "PUT", "%s/v2/%s/manifests/%s" % (args.registry, args.repo, args.tag), manifest,
            {"Content-Type": "application/vnd.oci.image.manifest.v1+json"})
    print("sha256:" + hashlib.sha256(manifest).hexdigest())


if __name__ == "__main__":
    main()
