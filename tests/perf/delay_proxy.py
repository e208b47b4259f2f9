#!/usr/bin/python3
"""A TCP proxy that adds latency: every byte is forwarded DELAY_MS/2 after it
arrives, in each direction, so a request and its answer cross DELAY_MS of
extra round trip. Bandwidth is not limited: data keeps flowing while earlier
data waits out its delay.

    delay_proxy.py LISTEN_PORT TARGET_HOST:TARGET_PORT DELAY_MS

Prints "listening PORT" once it accepts connections; LISTEN_PORT 0 lets
the kernel choose.
"""
import asyncio
import sys


async def pipe(reader, writer, delay):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def pump():
        while True:
            data = await reader.read(1 << 20)
            queue.put_nowait((loop.time() + delay, data))
            if not data:
                return

    async def drain():
        while True:
            at, data = await queue.get()
            wait = at - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    try:
        await asyncio.gather(pump(), drain())
    except (ConnectionError, asyncio.CancelledError):
        pass


async def main():
    listen_port, target, delay_ms = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    host, port = target.rsplit(':', 1)
    one_way = delay_ms / 2000.0

    async def handle(client_r, client_w):
        try:
            up_r, up_w = await asyncio.open_connection(host, int(port))
        except OSError:
            client_w.close()
            return
        await asyncio.gather(pipe(client_r, up_w, one_way), pipe(up_r, client_w, one_way))
        for w in (up_w, client_w):
            w.close()

    server = await asyncio.start_server(handle, '127.0.0.1', listen_port)
    print('listening', server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
