#!/usr/bin/python3
"""Sequential read throughput, with the same consumer for every source: it
reads into one 4 MiB buffer and keeps nothing, as a loader copying into
its own memory would.

    read_bench_seq.py http URL TOKEN [UNIX_SOCKET]   GET the URL (Bearer TOKEN), over the unix socket
                                                     if given; prints "bytes milliseconds"
    read_bench_seq.py stdin                          read standard input (e.g. from cat); prints the same
"""
import fcntl
import socket
import sys
import time
import urllib.parse

buf = bytearray(4 << 20)
view = memoryview(buf)


def drain(readinto):
    n = 0
    while True:
        got = readinto(view)
        if not got:
            return n
        n += got


if sys.argv[1] == 'stdin':
    try:  # a 1 MiB pipe, so a pipe is not held to 64 KiB per read
        fcntl.fcntl(0, 1031, 1 << 20)  # F_SETPIPE_SZ
    except OSError:
        pass
    t0 = time.perf_counter()
    n = drain(sys.stdin.buffer.raw.readinto)
else:
    url = urllib.parse.urlparse(sys.argv[2])
    if len(sys.argv) > 4:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sys.argv[4])
    else:
        s = socket.create_connection((url.hostname, url.port))
    t0 = time.perf_counter()
    s.sendall(('GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n'
               % (url.path, url.netloc, sys.argv[3])).encode())
    head = b''
    while b'\r\n\r\n' not in head:
        chunk = s.recv(65536)
        if not chunk:
            sys.exit('connection closed before the headers ended')
        head += chunk
    header, rest = head.split(b'\r\n\r\n', 1)
    if not header.startswith(b'HTTP/1.1 200'):
        sys.exit(header.split(b'\r\n')[0].decode())
    n = len(rest) + drain(s.recv_into)
print(n, round((time.perf_counter() - t0) * 1000, 1))
