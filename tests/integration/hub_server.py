#!/usr/bin/env python3
"""A model hub for tests: serves the folders under --root through the
Hugging Face hub's public HTTP API, as documented for its clients.

  GET /api/models/{org}/{name}[/revision/{rev}][?blobs=true]   id, sha, siblings
  GET /api/models/{org}/{name}/tree/{rev}?recursive=true       entries, --page-size a page,
                                                               Link: <...>; rel="next"
  GET|HEAD /{org}/{name}/resolve/{rev}/{path}                  bytes, with Range; large
                                                               (LFS) files redirect to a
                                                               second port, as the hub
                                                               sends clients to its CDN

Each repository is a folder ROOT/org/name; its one revision, "main", has a
commit sha derived from its files. With --token, every repository is gated:
401 without a token, 403 with another, both with X-Error-Code GatedRepo.
Files of --lfs-min bytes or more are LFS
files, with their SHA-256 in the API. The CDN port refuses any request
carrying an Authorization header: a client must drop the hub's token when a
redirect leaves the hub.

Faults for tests, each naming a file path: --lie-sha (declare a wrong
SHA-256), --truncate (send half the bytes, then close), --ftp-redirect
(redirect to ftp://), --extra-path (list a file of that name that is not
there, such as ../evil). --throttle B sends file bytes at about B bytes/s.

GET /stats on either port answers {"path": bytes sent, ...};
GET /set-throttle?rate=B changes --throttle (0: none). The ports are
written to --port-file as "HUB CDN" once both listen.
"""
import argparse
import hashlib
import json
import os
import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
STATS = {}
STATS_LOCK = threading.Lock()
PORTS = {}


def repo_dir(repo):
    d = os.path.realpath(os.path.join(ARGS.root, repo))
    if not d.startswith(os.path.realpath(ARGS.root) + os.sep) or not os.path.isdir(d):
        return None
    return d


def files_of(d):
    out = []
    for base, _, names in os.walk(d):
        for n in names:
            full = os.path.join(base, n)
            out.append(os.path.relpath(full, d).replace(os.sep, "/"))
    return sorted(out)


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def git_blob_id(path):
    data = open(path, "rb").read()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def describe(d, rel):
    full = os.path.join(d, rel)
    size = os.path.getsize(full)
    entry = {"type": "file", "path": rel, "size": size, "oid": git_blob_id(full)}
    if size >= ARGS.lfs_min:
        sha = sha256_of(full)
        if rel in ARGS.lie_sha:
            sha = hashlib.sha256(b"not the content").hexdigest()
        entry["lfs"] = {"oid": sha, "size": size, "pointerSize": 134}
    return entry


def commit_of(d):
    h = hashlib.sha1()
    for rel in files_of(d):
        h.update(rel.encode() + b"\0" + git_blob_id(os.path.join(d, rel)).encode())
    return h.hexdigest()


def entries_of(d):
    entries = [describe(d, rel) for rel in files_of(d)]
    for extra in ARGS.extra_path:
        entries.append({"type": "file", "path": extra, "size": 5, "oid": "0" * 40})
    return entries


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, code, body=b"", headers=None, error_code=None):
        self.send_response(code)
        if error_code:
            self.send_header("X-Error-Code", error_code)
            self.send_header("X-Error-Message", error_code + " for " + self.path)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def json(self, obj, headers=None):
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        self.reply(200, json.dumps(obj).encode(), h)

    def authorized(self):
        if not ARGS.token:
            return True
        return self.headers.get("Authorization") == "Bearer " + ARGS.token

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/stats":
            with STATS_LOCK:
                return self.json(dict(STATS))
        if url.path == "/set-throttle":
            ARGS.throttle = float(urllib.parse.parse_qs(url.query)["rate"][0])
            return self.json({"throttle": ARGS.throttle})
        if self.server.cdn:
            return self.cdn(url)
        if not self.authorized():
            # A gated repository: 401 without a token, 403 with one that
            # is not allowed in.
            code = 403 if self.headers.get("Authorization") else 401
            return self.reply(code, b"", error_code="GatedRepo")
        m = re.match(r"^/api/models/([^/]+/[^/]+)(?:/revision/([^/]+))?$", url.path)
        if m:
            return self.model_info(m.group(1), urllib.parse.unquote(m.group(2) or "main"))
        m = re.match(r"^/api/models/([^/]+/[^/]+)/tree/([^/]+)$", url.path)
        if m:
            return self.tree(m.group(1), m.group(2), urllib.parse.parse_qs(url.query))
        m = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", url.path)
        if m:
            return self.resolve(m.group(1), m.group(2), urllib.parse.unquote(m.group(3)))
        self.reply(404, b"", error_code="EntryNotFound")

    def revision(self, repo, rev):
        d = repo_dir(repo)
        if d is None:
            self.reply(404, b"", error_code="RepoNotFound")
            return None, None
        sha = commit_of(d)
        if rev not in ("main", sha):
            self.reply(404, b"", error_code="RevisionNotFound")
            return None, None
        return d, sha

    def model_info(self, repo, rev):
        d, sha = self.revision(repo, rev)
        if d is None:
            return
        siblings = []
        for e in entries_of(d):
            s = {"rfilename": e["path"], "size": e["size"], "blobId": e["oid"]}
            if "lfs" in e:
                s["lfs"] = {"sha256": e["lfs"]["oid"], "size": e["size"], "pointerSize": 134}
            siblings.append(s)
        self.json({"id": repo, "modelId": repo, "sha": sha, "private": False,
                   "siblings": siblings, "tags": ["test"], "downloads": 0})

    def tree(self, repo, rev, query):
        d, sha = self.revision(repo, rev)
        if d is None:
            return
        entries = entries_of(d)
        start = int(query.get("cursor", ["0"])[0])
        page = entries[start:start + ARGS.page_size]
        headers = {}
        if start + ARGS.page_size < len(entries):
            nxt = "/api/models/%s/tree/%s?recursive=true&cursor=%d" % (repo, rev, start + ARGS.page_size)
            headers["Link"] = '<http://127.0.0.1:%d%s>; rel="next"' % (PORTS["hub"], nxt)
        self.json(page, headers)

    def resolve(self, repo, rev, rel):
        d, sha = self.revision(repo, rev)
        if d is None:
            return
        full = os.path.join(d, rel)
        if rel not in files_of(d):
            return self.reply(404, b"", error_code="EntryNotFound")
        size = os.path.getsize(full)
        common = {"X-Repo-Commit": sha, "ETag": '"%s"' % git_blob_id(full)}
        if rel in ARGS.ftp_redirect:
            return self.reply(302, b"", dict(common, Location="ftp://127.0.0.1/" + rel))
        if size >= ARGS.lfs_min:
            # The hub sends LFS files to its CDN, on another host.
            loc = "http://127.0.0.1:%d/cdn/%s/%s" % (PORTS["cdn"], repo, urllib.parse.quote(rel))
            # The hub names the LFS object beside the redirect.
            return self.reply(302, b"", dict(common, Location=loc,
                                             **{"X-Linked-Etag": '"%s"' % sha256_of(full),
                                                "X-Linked-Size": str(size)}))
        self.serve_file(full, rel, common)

    def cdn(self, url):
        if self.headers.get("Authorization"):
            return self.reply(400, b"the hub's token reached the CDN")
        m = re.match(r"^/cdn/([^/]+/[^/]+)/(.+)$", url.path)
        d = repo_dir(m.group(1)) if m else None
        if d is None:
            return self.reply(404)
        rel = urllib.parse.unquote(m.group(2))
        full = os.path.join(d, rel)
        if not os.path.isfile(full):
            return self.reply(404)
        # As a web server would: a strong ETag.
        self.serve_file(full, rel, {"ETag": '"%s"' % sha256_of(full)})

    def serve_file(self, full, rel, headers):
        size = os.path.getsize(full)
        start, end = 0, size - 1
        code = 200
        rng = self.headers.get("Range")
        if rng:
            m = re.match(r"bytes=(\d+)-(\d*)$", rng)
            start = int(m.group(1))
            end = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
            if start >= size:
                return self.reply(416, b"", {"Content-Range": "bytes */%d" % size})
            code = 206
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(end - start + 1))
        if code == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.end_headers()
        if self.command == "HEAD":
            return
        todo = end - start + 1
        if rel in ARGS.truncate:
            todo = todo // 2
        with open(full, "rb") as f:
            f.seek(start)
            while todo > 0:
                block = f.read(min(todo, 64 << 10))
                if not block:
                    break
                self.wfile.write(block)
                todo -= len(block)
                with STATS_LOCK:
                    STATS[rel] = STATS.get(rel, 0) + len(block)
                if ARGS.throttle:
                    time.sleep(len(block) / ARGS.throttle)
        if rel in ARGS.truncate:
            self.close_connection = True
            self.wfile.flush()
            self.connection.shutdown(2)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--token", default="")
    p.add_argument("--page-size", type=int, default=2)
    p.add_argument("--lfs-min", type=int, default=1 << 20)
    p.add_argument("--lie-sha", action="append", default=[])
    p.add_argument("--truncate", action="append", default=[])
    p.add_argument("--ftp-redirect", action="append", default=[])
    p.add_argument("--extra-path", action="append", default=[])
    p.add_argument("--throttle", type=float, default=0)
    ARGS = p.parse_args()
    hub = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    hub.cdn = False
    cdn = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    cdn.cdn = True
    hub.daemon_threads = cdn.daemon_threads = True
    PORTS["hub"] = hub.server_address[1]
    PORTS["cdn"] = cdn.server_address[1]
    threading.Thread(target=cdn.serve_forever, daemon=True).start()
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %d\n" % (PORTS["hub"], PORTS["cdn"]))
    os.rename(tmp, ARGS.port_file)
    hub.serve_forever()


if __name__ == "__main__":
    main()
