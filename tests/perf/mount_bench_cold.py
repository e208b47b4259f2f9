#!/usr/bin/python3
"""Cold 1 MiB ranges through `shoal mount`, against the same agent's plain
HTTP API, in one run. Called by mount_bench.sh with the agent and mount it
set up.

    mount_bench_cold.py AGENT_URL TOKEN MODEL PATH MOUNTED_FILE PIECE_SIZE RANGE_BYTES TRIALS

Trial i reads RANGE_BYTES at 5/16 of a piece into two pieces nobody has
read yet:
  http   piece 2 + 8i, a GET with Range from the agent: time to the first
         body byte, and to the last
  mount  piece 4 + 8i, one pread(2) of the whole range from the mounted
         file: the time it takes to return (its first byte is its last)
The two take turns going first, and each starts a second after the other
ended: the agent is still at work on a chunk it has just stored, which
slowed whichever read came second by about 30 ms when they ran back to
back. The pieces
lie 8 apart so that no read-ahead (the mount's reaches 4 pieces past a
stream) touches a later trial's. Prints one line per trial and the
medians, in milliseconds.
"""
import os
import statistics
import sys
import time

from agent_range import ms, ranged_read

agent_url, token, model, path, mounted = sys.argv[1:6]
piece_size, range_bytes, trials = int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
offset = piece_size * 5 // 16


def http_read(first, last):
    _, first_byte, total, body = ranged_read(agent_url, token, model, path, first, last)
    return first_byte, total, body


def mount_read(fd, first):
    t0 = time.perf_counter()
    data = os.pread(fd, range_bytes, first)
    took = ms(t0)
    assert len(data) == range_bytes, len(data)
    return took, data


fd = os.open(mounted, os.O_RDONLY)
rows = []
print('| trial | first | HTTP piece | HTTP first byte | HTTP last byte | mount piece | mount pread of the range |')
print('|---|---|---|---|---|---|---|')
for i in range(trials):
    hp, mp = 2 + 8 * i, 4 + 8 * i
    if i % 2 == 0:
        hf, ht, _ = http_read(hp * piece_size + offset, hp * piece_size + offset + range_bytes - 1)
        time.sleep(1)
        mt, data = mount_read(fd, mp * piece_size + offset)
    else:
        mt, data = mount_read(fd, mp * piece_size + offset)
        time.sleep(1)
        hf, ht, _ = http_read(hp * piece_size + offset, hp * piece_size + offset + range_bytes - 1)
    # The mount's bytes are the file's: check them against HTTP's, warm now.
    _, _, want = http_read(mp * piece_size + offset, mp * piece_size + offset + range_bytes - 1)
    assert data == want, 'trial %d: the mount and HTTP disagree' % i
    rows.append((hf, ht, mt))
    print('| %d | %s | %d | %.1f | %.1f | %d | %.1f |' % (i, 'HTTP' if i % 2 == 0 else 'mount', hp, hf, ht, mp, mt))
    time.sleep(2)
os.close(fd)
med = [statistics.median(c) for c in zip(*rows)]
print('| median | | | %.1f | %.1f | | %.1f |' % tuple(med))
print()
goal = med[0] + 2
print('cold: mount %.1f ms, HTTP first byte %.1f ms; goal mount <= HTTP + 2 ms = %.1f: %s' %
      (med[2], med[0], goal, 'met' if med[2] <= goal else 'NOT met'))
