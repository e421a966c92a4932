#!/usr/bin/python3
"""A TCP relay that delays what it forwards: the test bed's latency and jitter (the kernel here
has no netem). Listens on --listen HOST:PORT; each connection it accepts is joined to a new
connection to --to HOST:PORT, and every chunk read in either direction is written on after
--delay-ms plus a random 0..--jitter-ms, never before the chunk ahead of it (a stream stays in
order, as TCP's is). --rate-bytes paces each direction to that many bytes a second (0: no
limit). Prints "relay ready PORT" once it listens (--listen HOST:0 picks a free port); runs
until killed."""

import argparse
import asyncio
import random
import time


def address(text):
    host, _, port = text.rpartition(":")
    return host, int(port)


async def pipe(reader, writer, delay, jitter, rate):
    queue = asyncio.Queue()
    last = 0.0

    async def read():
        nonlocal last
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                last = max(time.monotonic() + delay + random.uniform(0, jitter), last)
                queue.put_nowait((last, data))
        except (ConnectionError, OSError):
            pass
        queue.put_nowait((None, None))

    async def write():
        try:
            while True:
                release, data = await queue.get()
                if data is None:
                    break
                wait = release - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()
                if rate > 0:
                    await asyncio.sleep(len(data) / rate)
            if writer.can_write_eof():
                writer.write_eof()
        except (ConnectionError, OSError):
            pass

    await asyncio.gather(read(), write())


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", required=True)
    parser.add_argument("--to", required=True)
    parser.add_argument("--delay-ms", type=float, default=0)
    parser.add_argument("--jitter-ms", type=float, default=0)
    parser.add_argument("--rate-bytes", type=float, default=0)
    args = parser.parse_args()
    delay, jitter = args.delay_ms / 1000, args.jitter_ms / 1000
    target = address(args.to)

    async def serve(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(*target)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            pipe(client_reader, server_writer, delay, jitter, args.rate_bytes),
            pipe(server_reader, client_writer, delay, jitter, args.rate_bytes))
        for writer in (client_writer, server_writer):
            writer.close()

    host, port = address(args.listen)
    server = await asyncio.start_server(serve, host, port, reuse_address=True)
    print(f"relay ready {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
