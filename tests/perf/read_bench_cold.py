#!/usr/bin/python3
"""Cold range reads through an agent, against the same bytes straight from
the origin, in one run. Called by read_bench.sh with the cluster it set up.

    read_bench_cold.py AGENT_URL TOKEN MODEL PATH S3_ENDPOINT BUCKET PREFIX PIECE_SIZE RANGE_BYTES TRIALS CHUNK_ID...

For trial i it reads RANGE_BYTES at 5 MiB into piece 2 + 7i (a piece no
earlier trial touched), three ways:
  agent   GET with Range from the agent (plain API), cold: time to the
          first body byte, and to the last
  (a)     the same range straight from the origin (a ranged GET of the chunk)
  (b)     the whole chunk under it straight from the origin
and prints one line per trial and the medians, in milliseconds.
"""
import os
import statistics
import sys
import time

import boto3
from botocore.config import Config

from agent_range import ms, ranged_read

agent_url, token, model, path, endpoint, bucket, prefix = sys.argv[1:8]
piece_size, range_bytes, trials = int(sys.argv[8]), int(sys.argv[9]), int(sys.argv[10])
chunks = sys.argv[11:]

s3 = boto3.client('s3', endpoint_url=endpoint, region_name=os.environ.get('AWS_DEFAULT_REGION', 'us-east-1'),
                  config=Config(s3={'addressing_style': 'path'}, retries={'max_attempts': 1}))


def agent_read(first, last):
    headers, first_byte, total, _ = ranged_read(agent_url, token, model, path, first, last)
    return headers, first_byte, total


def origin_read(chunk, rng=None):
    t0 = time.perf_counter()
    kw = {'Range': 'bytes=%d-%d' % rng} if rng else {}
    r = s3.get_object(Bucket=bucket, Key=prefix + '/chunks/' + chunk, **kw)
    body = r['Body']
    first = body.read(1)
    first_byte = ms(t0)
    n = len(first) + len(body.read())
    return first_byte, ms(t0), n


origin_read(chunks[0], (0, 0))  # open the client's connection, as the agent keeps its own open
rows = []
print('| trial | piece | agent headers | agent first byte | agent last byte | (a) range first byte | (a) range last byte | (b) chunk last byte |')
print('|---|---|---|---|---|---|---|---|')
for i in range(trials):
    piece = 2 + 7 * i
    offset = 5 << 20
    first = piece * piece_size + offset
    h, f, t = agent_read(first, first + range_bytes - 1)
    af, at, an = origin_read(chunks[piece], (offset, offset + range_bytes - 1))
    bf, bt, bn = origin_read(chunks[piece])
    assert an == range_bytes and bn == piece_size, (an, bn)
    rows.append((h, f, t, af, at, bt))
    print('| %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |' % (i, piece, h, f, t, af, at, bt))
med = [statistics.median(c) for c in zip(*rows)]
print('| median | | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |' % tuple(med))
h, f, t, af, at, bt = med
print()
print('agent TTFB %.1f ms = %.2f x (b) whole chunk %.1f ms; goal <= 1.2 x (b) + 5 ms = %.1f ms: %s'
      % (f, f / bt, bt, 1.2 * bt + 5, 'met' if f <= 1.2 * bt + 5 else 'NOT met'))
print('agent TTFB %.2f x (a) range first byte %.1f ms; agent last byte %.2f x (a) range last byte %.1f ms'
      % (f / af, af, t / at, at))
