#!/usr/bin/python3
"""A TCP proxy that caps the bytes it forwards from clients to the target at
RATE bytes a second, across all connections; answers flow back unlimited.
It stands in for a slow link to object storage.

    slow_proxy.py TARGET_HOST:TARGET_PORT RATE PORT_FILE [FLIP_AT]

With FLIP_AT, byte FLIP_AT of each connection's answers has one bit
flipped on the way back: a link that corrupts what it carries.

Listens on 127.0.0.1 at a port of the kernel's choosing and writes it to
PORT_FILE once it accepts connections.
"""
import asyncio
import sys

CHUNK = 16384


class Budget:
    """One shared schedule: each chunk forwarded takes its share of time."""

    def __init__(self, rate):
        self.rate = rate
        self.free_at = 0.0

    async def take(self, n):
        loop = asyncio.get_running_loop()
        now = loop.time()
        start = max(now, self.free_at)
        self.free_at = start + n / self.rate
        if self.free_at > now:
            await asyncio.sleep(self.free_at - now)


async def pipe(reader, writer, budget, flip_at=None):
    seen = 0
    try:
        while True:
            data = await reader.read(CHUNK)
            if not data:
                break
            if flip_at is not None and seen <= flip_at < seen + len(data):
                data = bytearray(data)
                data[flip_at - seen] ^= 0x10
                data = bytes(data)
            seen += len(data)
            if budget is not None:
                await budget.take(len(data))
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def main():
    host, port = sys.argv[1].rsplit(":", 1)
    budget = Budget(float(sys.argv[2]))
    flip_at = int(sys.argv[4]) if len(sys.argv) > 4 else None

    async def serve(client_reader, client_writer):
        try:
            target_reader, target_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, target_writer, budget),
                             pipe(target_reader, client_writer, None, flip_at))

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    with open(sys.argv[3] + ".tmp", "w") as f:
        f.write(str(server.sockets[0].getsockname()[1]))
    import os
    os.rename(sys.argv[3] + ".tmp", sys.argv[3])
    async with server:
        await server.serve_forever()


asyncio.run(main())
