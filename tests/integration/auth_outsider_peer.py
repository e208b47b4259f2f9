#!/usr/bin/python3
"""A hand-written BitTorrent client for a cluster in `--peer-security auth`:
it speaks the membership proof (or fails to) and then asks for pieces.

    auth_outsider_peer.py TORRENT HOST PORT SECONDS MODE [ARGS...]

MODE is one of
    silent            offer the shoal_auth extension and a nonce, send no proof
    prove CERT KEY    prove with CERT (PEM) and its key KEY (PEM)
    capture OUT       as silent, and write the agent's own proof to OUT
    replay PROOF      send PROOF (what capture wrote) as its own
    reflect           copy the agent's nonce and send its own proof back

Then it sends interested and requests every block, until SECONDS pass, the
file is whole or the agent closes. Prints one JSON object: payload bytes
received, rejects, whether the agent closed the connection.
"""

import hashlib
import json
import os
import socket
import struct
import sys
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

AUTH_ID = 7  # our id for shoal_auth; the agent names its own
LABEL = b"shoal-peer-auth-v1"
BLOCK = 16384


def bdecode(data, i=0):
    """Returns (value, end) for the bencoded value at data[i:]."""
    c = data[i:i + 1]
    if c == b"i":
        end = data.index(b"e", i)
        return int(data[i + 1:end]), end + 1
    if c in (b"l", b"d"):
        i += 1
        items = []
        while data[i:i + 1] != b"e":
            v, i = bdecode(data, i)
            items.append(v)
        if c == b"l":
            return items, i + 1
        return dict(zip(items[::2], items[1::2])), i + 1
    colon = data.index(b":", i)
    n = int(data[i:colon])
    return data[colon + 1:colon + 1 + n], colon + 1 + n


def bencode(v):
    if isinstance(v, int):
        return b"i%de" % v
    if isinstance(v, bytes):
        return b"%d:%s" % (len(v), v)
    if isinstance(v, dict):
        return b"d" + b"".join(bencode(k) + bencode(v[k]) for k in sorted(v)) + b"e"
    raise TypeError(v)


def torrent_facts(path):
    """The v2 info-hash (32 bytes), piece length and total size."""
    data = open(path, "rb").read()
    start = data.index(b"4:infod") + 6
    info, end = bdecode(data, start)
    ih = hashlib.sha256(data[start:end]).digest()
    files = info[b"file tree"]
    size = 0
    stack = [files]
    while stack:
        node = stack.pop()
        for k, v in node.items():
            if k == b"":
                size += v[b"length"]
            else:
                stack.append(v)
    return ih, info[b"piece length"], size


class Peer:
    def __init__(self, host, port, ih):
        self.sock = socket.create_connection((host, port), timeout=5)
        reserved = bytearray(8)
        reserved[5] |= 0x10  # extension protocol
        reserved[7] |= 0x04  # fast extension
        self.sock.sendall(b"\x13BitTorrent protocol" + bytes(reserved) + ih[:20] + os.urandom(20))
        self.recv_exact(68)
        self.send(15)  # have none

    def recv_exact(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed")
            out += chunk
        return out

    def send(self, msg_id, body=b""):
        self.sock.sendall(struct.pack(">IB", len(body) + 1, msg_id) + body)

    def read(self):
        (n,) = struct.unpack(">I", self.recv_exact(4))
        if n == 0:
            return None, b""
        data = self.recv_exact(n)
        return data[0], data[1:]

    def ext_handshake(self, fields):
        self.send(20, b"\x00" + bencode(fields))

    def wait_ext_handshake(self, other):
        """Reads until the agent's extension handshake; keeps the rest."""
        while True:
            msg, body = self.read()
            if msg == 20 and body[:1] == b"\x00":
                return bdecode(body[1:])[0]
            other.append((msg, body))


def sign(key_pem, msg):
    key = serialization.load_pem_private_key(key_pem, password=None)
    return key.sign(msg, ec.ECDSA(hashes.SHA256()))


def authenticate(peer, mode, args, ih, early):
    """Runs MODE's side of the proof. Returns the agent's handshake."""
    nonce = os.urandom(32)
    if mode == "reflect":
        theirs = peer.wait_ext_handshake(early)
        nonce = theirs[b"shoal_nonce"]
    peer.ext_handshake({b"m": {b"shoal_auth": AUTH_ID}, b"shoal_nonce": nonce})
    if mode != "reflect":
        theirs = peer.wait_ext_handshake(early)
    agent_id = theirs[b"m"][b"shoal_auth"]
    agent_nonce = theirs[b"shoal_nonce"]
    if mode == "prove":
        cert, key = open(args[0], "rb").read(), open(args[1], "rb").read()
        sig = sign(key, LABEL + b"O" + agent_nonce + nonce + ih)
        peer.send(20, bytes([agent_id]) + bencode({b"cert": cert, b"sig": sig}))
    elif mode == "replay":
        peer.send(20, bytes([agent_id]) + open(args[0], "rb").read())
    elif mode in ("capture", "reflect"):
        while True:  # the agent's proof comes at once
            msg, body = peer.read()
            if msg == 20 and body[:1] == bytes([AUTH_ID]):
                break
            early.append((msg, body))
        if mode == "capture":
            open(args[0], "wb").write(body[1:])
        else:
            peer.send(20, bytes([agent_id]) + body[1:])


def fetch(peer, piece_len, size, deadline, out):
    """Asks for every block; counts payload and rejects until the deadline."""
    peer.send(2)  # interested
    blocks = [(p, b, min(BLOCK, size - p * piece_len - b))
              for p in range((size + piece_len - 1) // piece_len)
              for b in range(0, min(piece_len, size - p * piece_len), BLOCK)]
    asked = False
    while time.monotonic() < deadline and out["downloaded"] < size:
        peer.sock.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            msg, body = peer.read()
        except socket.timeout:
            break
        if msg == 1 and not asked:  # unchoke: ask for everything at once
            asked = True
            for p, b, n in blocks:
                peer.send(6, struct.pack(">III", p, b, n))
        elif msg == 7:
            out["downloaded"] += len(body) - 8
        elif msg == 16:
            out["rejected"] += 1


def main():
    torrent, host, port, seconds, mode = sys.argv[1:6]
    args = sys.argv[6:]
    ih, piece_len, size = torrent_facts(torrent)
    deadline = time.monotonic() + float(seconds)
    out = {"downloaded": 0, "rejected": 0, "closed": False, "error": ""}
    try:
        peer = Peer(host, int(port), ih)
        early = []
        authenticate(peer, mode, args, ih, early)
        if mode != "capture":
            fetch(peer, piece_len, size, deadline, out)
    except (ConnectionError, OSError) as e:
        out["closed"] = True
        out["error"] = str(e)
    out["done"] = out["downloaded"] >= size
    print(json.dumps(out))


if __name__ == "__main__":
    main()
