#!/usr/bin/python3
"""Reads every object under an S3 prefix the way streaming model loaders do
(vLLM's Run:ai streamer): ListObjectsV2, HeadObject of each object, then
ranged GETs of RANGE bytes over all of them, CONCURRENCY at once, each on
its own connection from a pool of that size.

    loader_reads.py ENDPOINT TOKEN BUCKET PREFIX [CONCURRENCY=64] [RANGE=8388608]
                    [--verify DIR]

The token is both S3 keys (the agent's S3 endpoint); with TOKEN "-", the
keys come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (an S3 server
itself, the baseline). With --verify, each
range is compared with the same bytes of DIR/<key after PREFIX>. Prints one
JSON object: requests, bytes, seconds, MB/s, time to first byte (time until
the answer's headers, p50, p99, max, and how many took over 1 s), and the
requests that failed (refused, timed out or wrong bytes), with the first
error.
"""
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.config import Config


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--verify")]
    verify = None
    if "--verify" in sys.argv:
        verify = sys.argv[sys.argv.index("--verify") + 1]
        args.remove(verify)
    endpoint, token, bucket, prefix = args[:4]
    concurrency = int(args[4]) if len(args) > 4 else 64
    range_size = int(args[5]) if len(args) > 5 else 8 << 20
    keys = {} if token == "-" else {"aws_access_key_id": token, "aws_secret_access_key": token}
    s3 = boto3.client(
        "s3", endpoint_url=endpoint, region_name=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
        **keys,
        config=Config(s3={"addressing_style": "path"}, max_pool_connections=concurrency,
                      retries={"max_attempts": 1}, connect_timeout=5, read_timeout=60))
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [o["Key"] for o in page.get("Contents", [])]
    sizes = {k: s3.head_object(Bucket=bucket, Key=k)["ContentLength"] for k in keys}
    ranges = [(k, off, min(range_size, sizes[k] - off))
              for k in sorted(keys) for off in range(0, sizes[k], range_size)]
    ttfb, errors, lock = [], [], threading.Lock()
    total = [0]

    def read(job):
        key, off, n = job
        t0 = time.monotonic()
        try:
            r = s3.get_object(Bucket=bucket, Key=key, Range="bytes=%d-%d" % (off, off + n - 1))
            t1 = time.monotonic()
            data = r["Body"].read()
            if len(data) != n:
                raise ValueError("%s@%d: %d bytes, not %d" % (key, off, len(data), n))
            if verify:
                with open(verify + "/" + key[len(prefix):], "rb") as f:
                    f.seek(off)
                    if f.read(n) != data:
                        raise ValueError("%s@%d: bytes differ" % (key, off))
            with lock:
                ttfb.append(t1 - t0)
                total[0] += n
        except Exception as e:  # refused, timed out or wrong: counted, never raised
            with lock:
                errors.append("%s@%d: %s" % (key, off, str(e).splitlines()[0][:200]))

    start = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(read, ranges))
    seconds = time.monotonic() - start
    ttfb.sort()
    pick = lambda q: round(ttfb[min(len(ttfb) - 1, int(q * len(ttfb)))] * 1000, 1) if ttfb else None
    print(json.dumps({
        "objects": len(keys), "requests": len(ranges), "bytes": total[0],
        "seconds": round(seconds, 3), "MBps": round(total[0] / seconds / 1e6, 1),
        "ttfb_ms_p50": pick(0.5), "ttfb_ms_p99": pick(0.99), "ttfb_ms_max": pick(1.0),
        "over_1s": sum(1 for t in ttfb if t > 1.0), "failed": len(errors),
        "first_error": errors[0] if errors else ""}))


if __name__ == "__main__":
    main()
