#!/usr/bin/python3
"""Captures the HTTP seeds of tests/fuzz/corpus from real clients.

A one-shot HTTP listener records the exact bytes each client sends:
curl (plain API reads with a bearer token and a Range, a chunked upload),
boto3 and the aws CLI (SigV4-signed GetObject, HeadObject, ListObjectsV2,
and a presigned URL), and python3-libtorrent (its tracker announce). With
--rgw DIR (a radosgw started by tests/s3/radosgw.sh), the raw XML radosgw
answers to listings and errors becomes the s3_xml corpus.

    tests/fuzz/make_seeds.py --token TOKEN [--rgw DIR]    (writes tests/fuzz/corpus/)

TOKEN is a read token for namespace "team" that the targets' tracker
accepts (`build/fuzz/bin/fuzz_seed_writer --token` prints one), so the
announce seeds stay valid.
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

LIST_XML = (b'<?xml version="1.0" encoding="UTF-8"?>'
            b'<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            b"<Name>team</Name><Prefix></Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys>"
            b"<IsTruncated>false</IsTruncated></ListBucketResult>")


class Listener:
    """Accepts connections, records what each sends, answers plausibly."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.requests = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            conn, _ = self.sock.accept()
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn):
        conn.settimeout(1.0)
        data = b""
        try:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
                if b"Expect: 100-continue" in data and b"\r\n\r\n" in data and data.endswith(b"\r\n\r\n"):
                    conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        except socket.timeout:
            pass
        self.requests.append(data)
        head = data.split(b"\r\n", 1)[0]
        if b"/announce" in head:
            body = b"d14:failure reason7:capturee"
        elif b"list-type=2" in head:
            body = LIST_XML
        else:
            body = b"0123456789"
        status = b"206 Partial Content" if b"Range:" in data or b"range:" in data else b"200 OK"
        extra = b"Content-Range: bytes 0-9/100\r\n" if status.startswith(b"206") else b""
        try:
            conn.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Length: " +
                         str(len(body)).encode() + b"\r\nETag: \"e\"\r\n" + extra +
                         b"Connection: close\r\n\r\n" + body)
        except OSError:
            pass
        conn.close()

    def take(self, wait=1.5):
        time.sleep(wait)
        out, self.requests = self.requests, []
        return [r for r in out if r]


def write(target, name, data):
    path = os.path.join(CORPUS, target, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    print(f"{path} ({len(data)} bytes)")


def target_of(request):
    return request.split(b"\r\n", 1)[0].split(b" ")[1]


def capture_http(token):
    lis = Listener()
    base = f"http://127.0.0.1:{lis.port}"
    captured = {}

    def curl(name, *args):
        subprocess.run(["curl", "-s", "-o", "/dev/null", "--max-time", "5", *args], check=False)
        captured[name] = lis.take()

    curl("curl_plain_range", "-H", f"Authorization: Bearer {token}", "-H", "Range: bytes=0-99",
         f"{base}/v1/models/team/model:latest/files/config%20v2.json")
    curl("curl_manifest", "-H", f"Authorization: Bearer {token}",
         f"{base}/v1/models/team/model:0123abcd/manifest")
    curl("curl_announce_like", f"{base}/announce?info_hash=%12%34%56%78%9a%bc%de%f0%12%34%56%78%9a%bc%de%f0%12%34%56%78&peer_id=-LT2080-abcdefghijkl&port=6881&left=0&numwant=50&event=started")
    curl("curl_chunked_post", "-H", "Transfer-Encoding: chunked", "-H", "Content-Type: application/json",
         "--data-binary", '{"ns":"team","role":"read"}', f"{base}/v1/tokens")
    curl("curl_expect_post", "--data-binary", "x" * 2000, f"{base}/v1/tokens")

    import boto3
    from botocore.config import Config
    s3 = boto3.client("s3", endpoint_url=base, aws_access_key_id=token,
                      aws_secret_access_key=token, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                    connect_timeout=2, read_timeout=2))

    def boto(name, call):
        try:
            call()
        except Exception:
            pass
        captured[name] = lis.take(0.5)

    boto("boto3_get_range", lambda: s3.get_object(Bucket="team", Key="model/latest/config.json",
                                                  Range="bytes=0-9"))
    boto("boto3_head", lambda: s3.head_object(Bucket="team", Key="model/v1/a/b c+d.bin"))
    boto("boto3_list", lambda: s3.list_objects_v2(Bucket="team", Prefix="model/latest/",
                                                 Delimiter="/", MaxKeys=2))
    boto("boto3_list_token", lambda: s3.list_objects_v2(Bucket="team", Prefix="model/",
                                                       ContinuationToken="a20vdjEvYg",
                                                       StartAfter="model/v1", EncodingType="url"))
    boto("boto3_get_part", lambda: s3.get_object(Bucket="team", Key="model/latest/w.bin",
                                                 PartNumber=1))
    s3v4 = boto3.client("s3", endpoint_url=base, aws_access_key_id=token,
                        aws_secret_access_key=token, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
    url = s3v4.generate_presigned_url("get_object", Params={"Bucket": "team",
                                                          "Key": "model/latest/config.json"},
                                    ExpiresIn=3600)
    try:
        urllib.request.urlopen(url, timeout=3).read()
    except Exception:
        pass
    captured["presigned_get"] = lis.take(0.5)

    env = dict(os.environ, AWS_ACCESS_KEY_ID=token, AWS_SECRET_ACCESS_KEY=token,
               AWS_DEFAULT_REGION="us-east-1", AWS_MAX_ATTEMPTS="1")
    subprocess.run(["aws", "s3api", "get-object", "--endpoint-url", base, "--bucket", "team",
                    "--key", "model/latest/tokenizer.json", "--range", "bytes=10-", "/dev/null"],
                   env=env, check=False, capture_output=True, timeout=60)
    captured["awscli_get"] = lis.take(0.5)
    return captured, lis


def capture_announce(lis, token):
    import libtorrent as lt
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "weights.bin")
        with open(path, "wb") as f:
            f.write(os.urandom(40000))
        fs = lt.file_storage()
        lt.add_files(fs, path)
        t = lt.create_torrent(fs, 16384)
        t.add_tracker(f"http://127.0.0.1:{lis.port}/announce?token={token}&zone=rack-a")
        lt.set_piece_hashes(t, d)
        info = lt.torrent_info(lt.bencode(t.generate()))
        ses = lt.session({"listen_interfaces": "127.0.0.1:0", "enable_dht": False,
                          "enable_lsd": False, "enable_upnp": False, "enable_natpmp": False})
        ses.add_torrent({"ti": info, "save_path": d})
        deadline = time.time() + 10
        got = []
        while time.time() < deadline and not got:
            got = [r for r in lis.take(0.5) if b"/announce" in r]
        del ses
    return got


def capture_rgw(rgw_dir):
    import boto3
    from botocore.config import Config
    env = {}
    with open(os.path.join(rgw_dir, "s3.env")) as f:
        for line in f:
            if "=" in line:
                k, v = line.strip().split("=", 1)
                env[k] = v.strip("'\"")
    s3 = boto3.client("s3", endpoint_url=env["SHOAL_S3_ENDPOINT"],
                      aws_access_key_id=env["SHOAL_S3_ACCESS_KEY"],
                      aws_secret_access_key=env["SHOAL_S3_SECRET_KEY"],
                      region_name=env.get("SHOAL_S3_REGION", "us-east-1"),
                      config=Config(s3={"addressing_style": "path"}))
    bodies = {}

    def keep(name):
        def hook(http_response, **_):
            bodies[name] = http_response.content
        return hook

    bucket = env["SHOAL_S3_BUCKET"]
    for key in ["fuzz/a/chunk-1", "fuzz/a/chunk 2", "fuzz/b/&amp;<x>", "fuzz/c"]:
        s3.put_object(Bucket=bucket, Key=key, Body=b"x" * 10)
    calls = [
        ("list", lambda: s3.list_objects_v2(Bucket=bucket, Prefix="fuzz/")),
        ("list_delimiter", lambda: s3.list_objects_v2(Bucket=bucket, Prefix="fuzz/", Delimiter="/")),
        ("list_truncated", lambda: s3.list_objects_v2(Bucket=bucket, Prefix="fuzz/", MaxKeys=2)),
        ("list_url", lambda: s3.list_objects_v2(Bucket=bucket, Prefix="fuzz/", EncodingType="url")),
        ("error_no_key", lambda: s3.get_object(Bucket=bucket, Key="fuzz/missing")),
        ("error_no_bucket", lambda: s3.list_objects_v2(Bucket="no-such-bucket-fuzz")),
        ("multipart_init", lambda: s3.create_multipart_upload(Bucket=bucket, Key="fuzz/mp")),
    ]
    for name, call in calls:
        s3.meta.events.register("after-call.s3.*", keep(name), unique_id="fuzzkeep")
        try:
            call()
        except Exception:
            pass
        s3.meta.events.unregister("after-call.s3.*", unique_id="fuzzkeep")
    bad = boto3.client("s3", endpoint_url=env["SHOAL_S3_ENDPOINT"],
                       aws_access_key_id=env["SHOAL_S3_ACCESS_KEY"],
                       aws_secret_access_key="wrong-secret", region_name="us-east-1",
                       config=Config(s3={"addressing_style": "path"}))
    bad.meta.events.register("after-call.s3.*", keep("error_signature"))
    try:
        bad.list_objects_v2(Bucket=bucket)
    except Exception:
        pass
    return bodies


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--token", required=True, help="a read token for namespace team")
    ap.add_argument("--rgw", help="a radosgw folder from tests/s3/radosgw.sh start")
    a = ap.parse_args()

    captured, lis = capture_http(a.token)
    for name, reqs in captured.items():
        for i, r in enumerate(reqs[:1]):
            write("http_request", name, r)
            if name.startswith(("boto3", "presigned", "awscli")):
                write("sigv4", name, b"\x00" + r)
                write("s3_address", name, target_of(r))
            if name.startswith("curl_plain"):
                write("s3_address", name, target_of(r))
                write("range", name, b"\x03" + b"bytes=0-99")
    # Two requests on one keep-alive connection.
    if captured.get("curl_manifest") and captured.get("curl_chunked_post"):
        write("http_request", "keep_alive_pair",
              captured["curl_manifest"][0].replace(b"Connection: close", b"") +
              captured["curl_chunked_post"][0])
    for name, reqs in captured.items():
        for r in reqs[:1]:
            for line in r.split(b"\r\n"):
                if line.lower().startswith(b"range:"):
                    write("range", name, b"\x05" + line.split(b":", 1)[1].strip())
    # The other forms RFC 9110 gives as examples: suffix, open-ended, several.
    for name, value in [("rfc_suffix", b"bytes=-500"), ("rfc_open", b"bytes=9500-"),
                        ("rfc_several", b"bytes=500-600,601-999")]:
        write("range", name, b"\x03" + value)

    announces = capture_announce(lis, a.token)
    for i, r in enumerate(announces[:2]):
        target = target_of(r)
        write("announce", f"libtorrent_{i}", b"\x00" + target)
        write("announce", f"libtorrent_{i}_known", b"\x02" + target)
        write("announce", f"libtorrent_{i}_v6", b"\x06" + target)
        write("http_request", f"libtorrent_announce_{i}", r)

    if a.rgw:
        for name, body in capture_rgw(a.rgw).items():
            sel = 1 if name.startswith("list") else 3 if name.startswith("error") else 0
            write("s3_xml", f"rgw_{name}", bytes([sel, 104]) + body)


if __name__ == "__main__":
    sys.exit(main())
