"""One ranged read of a file through the agent's plain HTTP read API, timed
as the cold read benchmarks time it (read_bench_cold.py, mount_bench_cold.py)."""
import http.client
import time
import urllib.parse


def ms(t0):
    """Milliseconds since perf_counter() read t0."""
    return (time.perf_counter() - t0) * 1000


def ranged_read(agent_url, token, model, path, first, last):
    """GET bytes first..last of `path` of `model` (ns/name:ref) from the
    agent at agent_url. Returns the milliseconds to the headers, to the
    first body byte and to the last, and the body."""
    agent = urllib.parse.urlparse(agent_url)
    conn = http.client.HTTPConnection(agent.hostname, agent.port)
    conn.connect()
    t0 = time.perf_counter()
    conn.request('GET', '/v1/models/%s/files/%s' % (model, path),
                 headers={'Authorization': 'Bearer ' + token, 'Range': 'bytes=%d-%d' % (first, last)})
    resp = conn.getresponse()
    headers = ms(t0)
    body = resp.read(1)
    first_byte = ms(t0)
    body += resp.read()
    total = ms(t0)
    conn.close()
    assert resp.status == 206 and len(body) == last - first + 1, (resp.status, len(body))
    return headers, first_byte, total, body
