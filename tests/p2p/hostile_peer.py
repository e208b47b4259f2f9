#!/usr/bin/python3
"""A hostile BitTorrent v2 peer for tests: plain sockets, BEP 3 handshake and
messages, BEP 6 fast extension, BEP 52 hash messages. Standard library only.

It connects to a leecher's peer port and misbehaves in one of these ways
(--scenario):

  bad-block-reject  Two connections (from 127.0.0.2 and 127.0.0.3) both claim
                    every piece. The first serves one block of garbage and
                    then chokes and rejects the rest; the second serves the
                    rest of the piece, also garbage. The piece fails its hash
                    check with two peers to blame, so the leecher asks one of
                    them for the piece's block hashes; every hash request is
                    answered with a hash reject. After that reject the
                    first connection serves garbage for every block asked,
                    and the second chokes and sends hashes nobody asked for.
  unsolicited       One connection per message, none of them asked for:
                    hashes for the real file, hashes naming an all-zero root
                    and an index far out of range, a hash request out of
                    range, and a hash reject.
  zero-root         A hash request, hashes and a hash reject naming the
                    all-zero root (which pad files and empty files report),
                    each on its own connection.

Every event is printed as one line "<connection> <event> [details]", and the
peer exits 0 when every connection has been closed by the leecher or timed
out (it closes them itself then), 2 on a usage error.
"""

import argparse
import os
import socket
import struct
import sys
import threading
import time

CHOKE, UNCHOKE, HAVE, REQUEST, PIECE = 0, 1, 4, 6, 7
HAVE_ALL, REJECT = 14, 16
HASH_REQUEST, HASHES, HASH_REJECT = 21, 22, 23
NAMES = {HASH_REQUEST: "hash-request", HASHES: "hashes", HASH_REJECT: "hash-reject"}

print_lock = threading.Lock()


def log(name, event, details=""):
    with print_lock:
        print(f"{name} {event} {details}".rstrip(), flush=True)


class Conn:
    """One connection to the leecher, from a loopback address of its own."""

    def __init__(self, args, name, source_ip, peer_id_char):
        self.name = name
        self.args = args
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((source_ip, 0))
        self.sock.settimeout(args.timeout)
        self.sock.connect(("127.0.0.1", args.port))
        reserved = bytearray(8)
        reserved[7] = 0x04 | 0x10  # fast extension, BitTorrent v2
        info_hash = bytes.fromhex(args.info_hash)[:20]
        peer_id = b"-HP0001-" + peer_id_char.encode() * 12
        self.sock.sendall(b"\x13BitTorrent protocol" + bytes(reserved) + info_hash + peer_id)
        theirs = self.read_exact(68)
        if theirs is None or theirs[28:48] != info_hash:
            raise ConnectionError("handshake refused")
        log(name, "connected")

    def read_exact(self, n):
        buf = b""
        while len(buf) < n:
            try:
                part = self.sock.recv(n - len(buf))
            except (ConnectionResetError, BrokenPipeError):
                return None
            if not part:
                return None
            buf += part
        return buf

    def read_message(self):
        """(id, payload), (None, b"") for a keep-alive, or None once closed.
        Raises socket.timeout when nothing arrives in --poll seconds."""
        head = self.read_exact(4)
        if head is None:
            return None
        (length,) = struct.unpack(">I", head)
        if length == 0:
            return (None, b"")
        body = self.read_exact(length)
        if body is None:
            return None
        return (body[0], body[1:])

    def send(self, msg_id, payload=b""):
        try:
            self.sock.sendall(struct.pack(">IB", len(payload) + 1, msg_id) + payload)
            return True
        except OSError:
            return False

    def wait_closed(self, seconds):
        """True if the leecher closes the connection within `seconds`."""
        deadline = time.monotonic() + seconds
        self.sock.settimeout(0.2)
        while time.monotonic() < deadline:
            try:
                msg = self.read_message()
            except socket.timeout:
                continue
            if msg is None:
                log(self.name, "closed-by-leecher")
                return True
            if msg[0] in NAMES:
                log(self.name, "got-" + NAMES[msg[0]])
        log(self.name, "still-open")
        return False


def hash_header(root, base, index, count, proof_layers):
    return root + struct.pack(">iiii", base, index, count, proof_layers)


class BadBlockPeer(threading.Thread):
    """One of the two connections of the bad-block-reject scenario."""

    def __init__(self, args, name, source_ip, peer_id_char, first, others_may_go, rejected):
        super().__init__(daemon=True)
        self.conn = Conn(args, name, source_ip, peer_id_char)
        self.first = first  # serves one block, then chokes until a reject
        self.others_may_go = others_may_go
        self.rejected = rejected
        self.quiet = False  # rejects every request
        self.root = bytes.fromhex(args.root)
        self.args = args

    def run(self):
        c = self.conn
        c.send(HAVE_ALL)
        unchoked = False
        served = 0
        deadline = time.monotonic() + self.args.timeout
        c.sock.settimeout(0.3)
        while time.monotonic() < deadline:
            if not unchoked and (self.first or self.others_may_go.is_set()):
                c.send(UNCHOKE)
                unchoked = True
            if self.rejected.is_set() and self.first is not None:
                if self.first:
                    c.send(UNCHOKE)
                else:
                    c.send(CHOKE)
                    junk = os.urandom(32) * self.args.blocks
                    c.send(HASHES, hash_header(self.root, 0, 0, self.args.blocks, 0) + junk)
                    log(c.name, "sent-unasked-hashes")
                self.quiet = not self.first
                self.first = None
            if served and not c.send(HAVE, struct.pack(">I", 0)):
                break  # a HAVE makes the leecher look for hashes to ask for
            try:
                msg = c.read_message()
            except socket.timeout:
                continue
            if msg is None:
                log(c.name, "closed-by-leecher")
                return
            msg_id, payload = msg
            if msg_id == REQUEST:
                index, begin, length = struct.unpack(">III", payload)
                if (self.first and served) or self.quiet:
                    c.send(REJECT, payload)
                    continue
                c.send(PIECE, struct.pack(">II", index, begin) + b"\xa5" * length)
                served += 1
                log(c.name, "served-garbage", f"piece={index} offset={begin}")
                if self.first:
                    c.send(CHOKE)
                    self.others_may_go.set()
            elif msg_id == HASH_REQUEST:
                _, base, index, count, proofs = struct.unpack(">32siiii", payload)
                log(c.name, "hash-request", f"base={base} index={index} count={count}")
                c.send(HASH_REJECT, payload)
                log(c.name, "hash-reject-sent")
                self.rejected.set()
        log(c.name, "timed-out")
        c.sock.close()


def bad_block_reject(args):
    go, rejected = threading.Event(), threading.Event()
    peers = [
        BadBlockPeer(args, "first", "127.0.0.2", "a", True, go, rejected),
        BadBlockPeer(args, "second", "127.0.0.3", "b", False, go, rejected),
    ]
    for p in peers:
        p.start()
    for p in peers:
        p.join()


def one_message_each(args, messages):
    """Sends each (name, id, payload) on its own connection after HAVE_ALL,
    then reports whether the leecher closed that connection."""
    for i, (name, msg_id, payload) in enumerate(messages):
        c = Conn(args, name, f"127.0.0.{10 + i}", chr(ord("c") + i))
        c.send(HAVE_ALL)
        c.send(msg_id, payload)
        log(name, "sent", f"message={msg_id}")
        c.wait_closed(args.close_wait)
        c.sock.close()


def unsolicited(args):
    root = bytes.fromhex(args.root)
    zero = bytes(32)
    junk = os.urandom(32)
    far = 1 << 30
    one_message_each(args, [
        ("hashes-real-root", HASHES, hash_header(root, 0, 0, 2, 0) + junk + junk),
        ("hashes-zero-root-far", HASHES, hash_header(zero, 0, far, 2, 0) + junk + junk),
        ("hash-request-far", HASH_REQUEST, hash_header(root, 0, far, 2, 0)),
        ("hash-reject-unasked", HASH_REJECT, hash_header(root, 0, 0, 2, 0)),
    ])


def zero_root(args):
    zero = bytes(32)
    junk = os.urandom(32)
    one_message_each(args, [
        ("zero-root-hash-request", HASH_REQUEST, hash_header(zero, 0, 0, 1, 0)),
        ("zero-root-hashes", HASHES, hash_header(zero, 0, 0, 1, 0) + junk),
        ("zero-root-hash-reject", HASH_REJECT, hash_header(zero, 0, 0, 1, 0)),
    ])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, required=True, help="the leecher's peer port")
    p.add_argument("--info-hash", required=True, help="the torrent's v2 info-hash, hex")
    p.add_argument("--root", default="00" * 32, help="the file's pieces root, hex")
    p.add_argument("--scenario", required=True,
                   choices=["bad-block-reject", "unsolicited", "zero-root"])
    p.add_argument("--blocks", type=int, default=4,
                   help="bad-block-reject: leaves of the file's merkle tree (a power of two)")
    p.add_argument("--timeout", type=float, default=20.0, help="seconds per connection")
    p.add_argument("--close-wait", type=float, default=3.0,
                   help="seconds to wait for the leecher to close a connection")
    args = p.parse_args()
    if len(args.info_hash) != 64 or len(args.root) != 64:
        print("hostile_peer: --info-hash and --root are 64 hex digits", file=sys.stderr)
        return 2
    {"bad-block-reject": bad_block_reject, "unsolicited": unsolicited,
     "zero-root": zero_root}[args.scenario](args)
    log("all", "done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
