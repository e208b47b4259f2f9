#!/usr/bin/env python3
"""A Hugging Face hub client for tests, written from the hub's documented
HTTP protocol, step by step, as snapshot_download and hf_hub_download take
them:

  1. GET  /api/models/{repo}/revision/{rev}?blobs=true   the commit sha and siblings
  2. GET  /api/models/{repo}/tree/{sha}?recursive=true   every page, by Link rel="next"
  3. HEAD /{repo}/resolve/{sha}/{path}                   redirects not followed:
                                                         X-Repo-Commit, X-Linked-Etag, size
  4. GET  /{repo}/resolve/{sha}/{path}                   redirects to other hosts followed
                                                         without the token; whole, or with
                                                         --resume-at N as a
                                                         download cut at N bytes and resumed
                                                         with Range: bytes=N-

Files land under --out. An LFS file's bytes are checked against its SHA-256
(its ETag), as a client may. Prints one JSON object: the commit, the tree's
pages, and per file its etag, size, sha256 and the commit each call gave.
Any answer that breaks the protocol exits 1 with one line on stderr.
"""
import argparse
import hashlib
import http.client
import json
import os
import re
import sys
import urllib.parse


def fail(msg):
    print("hub_client: " + msg, file=sys.stderr)
    sys.exit(1)


class Hub:
    def __init__(self, endpoint, token):
        u = urllib.parse.urlsplit(endpoint)
        self.host, self.port = u.hostname, u.port or 80
        self.token = token

    def call(self, method, target, headers=None, host=None):
        """One request, redirects not followed. `target` is a path on the
        hub, or on `host` (host, port), which gets no token."""
        host = host or (self.host, self.port)
        conn = http.client.HTTPConnection(host[0], host[1], timeout=60)
        h = {"Accept-Encoding": "identity", "User-Agent": "hub_client.py"}
        if self.token and host == (self.host, self.port):
            h["Authorization"] = "Bearer " + self.token
        h.update(headers or {})
        conn.request(method, target, headers=h)
        r = conn.getresponse()
        body = r.read() if method != "HEAD" else b""
        conn.close()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body

    def get(self, target, headers=None):
        """GET, following redirects to other hosts without the token."""
        host = None
        for _ in range(5):
            status, h, body = self.call("GET", target, headers, host)
            if status not in (301, 302, 307, 308):
                return status, h, body
            u = urllib.parse.urlsplit(h["location"])
            if u.scheme != "http":
                fail("redirect to %s" % h["location"])
            host = (u.hostname, u.port or 80)
            target = u.path + ("?" + u.query if u.query else "")
        fail("too many redirects")


def expect(status, headers, body, wanted, what):
    if status not in wanted:
        fail("%s: HTTP %d %s %s" % (what, status, headers.get("x-error-code", ""),
                                     headers.get("x-error-message", body[:200])))


def unquote_etag(v):
    if v is None:
        return None
    if v.startswith("W/"):
        v = v[2:]
    return v.strip('"')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--revision", default="main")
    ap.add_argument("--token", default=os.environ.get("HF_TOKEN", ""))
    ap.add_argument("--out", required=True)
    ap.add_argument("--page-limit", type=int, default=0, help="ask for tree pages this long")
    ap.add_argument("--resume-at", type=int, default=0, help="cut each download here, resume")
    ap.add_argument("--no-hash", action="store_true",
                    help="do not hash the bytes (as hf_hub_download does not); for benchmarks")
    a = ap.parse_args()
    hub = Hub(a.endpoint, a.token)
    rev = urllib.parse.quote(a.revision, safe="")

    status, h, body = hub.call("GET", "/api/models/%s/revision/%s?blobs=true" % (a.repo, rev))
    expect(status, h, body, [200], "revision")
    info = json.loads(body)
    sha = info.get("sha", "")
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        fail("revision: sha %r is not a commit" % sha)
    if info.get("id") != a.repo:
        fail("revision: id %r is not %r" % (info.get("id"), a.repo))
    siblings = {s["rfilename"]: s for s in info["siblings"]}

    tree, pages = {}, 0
    target = "/api/models/%s/tree/%s?recursive=true" % (a.repo, sha)
    if a.page_limit:
        target += "&limit=%d" % a.page_limit
    while target:
        status, h, body = hub.call("GET", target)
        expect(status, h, body, [200], "tree")
        pages += 1
        for e in json.loads(body):
            if e["type"] == "file":
                tree[e["path"]] = e
        m = re.search(r'<([^>]+)>;\s*rel="next"', h.get("link", ""))
        target = None
        if m:
            u = urllib.parse.urlsplit(m.group(1))
            target = u.path + ("?" + u.query if u.query else "")
    if set(tree) != set(siblings):
        fail("tree lists %s, siblings %s" % (sorted(tree), sorted(siblings)))

    files = {}
    for path in sorted(tree):
        entry = tree[path]
        url = "/%s/resolve/%s/%s" % (a.repo, sha, urllib.parse.quote(path))
        status, h, _ = hub.call("HEAD", url)
        expect(status, h, b"", [200, 302], "HEAD " + path)
        etag = unquote_etag(h.get("x-linked-etag") or h.get("etag"))
        size = int(h.get("x-linked-size") or h.get("content-length"))
        if status == 200 and h.get("accept-ranges") != "bytes":
            fail("HEAD %s: no Accept-Ranges: bytes" % path)
        if any(k.startswith("x-xet") for k in h):
            fail("HEAD %s: Xet headers %s" % (path, [k for k in h if k.startswith("x-xet")]))
        if size != entry["size"]:
            fail("HEAD %s: size %d, tree says %d" % (path, size, entry["size"]))
        lfs = entry.get("lfs")
        if lfs and etag != lfs["oid"]:
            fail("HEAD %s: etag %s, tree's LFS oid %s" % (path, etag, lfs["oid"]))
        commits = [h.get("x-repo-commit")]
        if a.resume_at and size > a.resume_at:
            s1, h1, b1 = hub.get(url, {"Range": "bytes=0-%d" % (a.resume_at - 1)})
            expect(s1, h1, b1, [206], "GET first part of " + path)
            s2, h2, b2 = hub.get(url, {"Range": "bytes=%d-" % a.resume_at})
            expect(s2, h2, b2, [206], "GET rest of " + path)
            want = "bytes %d-%d/%d" % (a.resume_at, size - 1, size)
            if h2.get("content-range") != want:
                fail("GET %s: Content-Range %s, not %s" % (path, h2.get("content-range"), want))
            data = b1 + b2
            etags = [unquote_etag(h1.get("x-linked-etag") or h1.get("etag")),
                     unquote_etag(h2.get("x-linked-etag") or h2.get("etag"))]
            commits += [h1.get("x-repo-commit"), h2.get("x-repo-commit")]
        else:
            s1, h1, data = hub.get(url)
            expect(s1, h1, data, [200], "GET " + path)
            etags = [unquote_etag(h1.get("x-linked-etag") or h1.get("etag"))]
            commits.append(h1.get("x-repo-commit"))
        if any(e != etag for e in etags):
            fail("GET %s: ETags %s differ from HEAD's %s" % (path, etags, etag))
        if len(data) != size:
            fail("GET %s: %d bytes, HEAD said %d" % (path, len(data), size))
        digest = "" if a.no_hash else hashlib.sha256(data).hexdigest()
        if lfs and digest and digest != etag:
            fail("GET %s: SHA-256 %s, its ETag says %s" % (path, digest, etag))
        out = os.path.join(a.out, path)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "wb") as f:
            f.write(data)
        files[path] = {"etag": etag, "size": size, "sha256": digest, "lfs": bool(lfs),
                       "commits": sorted(set(c for c in commits if c))}
    print(json.dumps({"sha": sha, "pages": pages, "files": files}, sort_keys=True))


if __name__ == "__main__":
    main()
