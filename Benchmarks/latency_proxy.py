#!/usr/bin/env python3
"""A tiny TCP reverse proxy that emulates a CDN's round trip.

latency_proxy.py LISTEN_PORT UPSTREAM_PORT LATENCY_MS

Each client connection gets its own upstream connection; every chunk the client
sends (with keep-alive GETs, one chunk is one request) is held LATENCY_MS before it
is forwarded, so each request pays the latency once. Responses stream back untouched.
"""
import asyncio
import sys

LISTEN, UPSTREAM, DELAY = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) / 1000


async def pipe(reader, writer, delay):
    try:
        while data := await reader.read(1 << 16):
            if delay:
                await asyncio.sleep(delay)
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def handle(client_reader, client_writer):
    try:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", UPSTREAM)
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(pipe(client_reader, up_writer, DELAY), pipe(up_reader, client_writer, 0))


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", LISTEN, backlog=256)
    async with server:
        await server.serve_forever()


asyncio.run(main())
