#!/usr/bin/env python3
"""A tiny TCP reverse proxy that emulates a CDN's round trip.

latency_proxy.py LISTEN_PORT UPSTREAM_PORT LATENCY_MS [RATE_MBIT] [handshake]

Each client connection gets its own upstream connection and two threads. Every chunk
the client sends (with keep-alive GETs, one chunk is one request) is held LATENCY_MS
before it is forwarded, so each request pays the latency once. Responses are moved
back with splice(2) through a pipe, so the proxy costs the machine under test (which
a real CDN would not) as little CPU as possible: the bytes are never copied into
Python.

With RATE_MBIT, responses of all connections together share one link of that many
Mbit/s (1 Mbit = 10^6 bits): each 64 KiB slice books its transmission time on the link
and is sent when its slot ends, so the origin is limited like a real access network.

With `handshake`, a new connection's first chunk is held one more LATENCY_MS: the round
trip of the TCP handshake, which a connection to 127.0.0.1 does not pay (`wan.py`).
"""
import os
import socket
import sys
import threading
import time

LISTEN, UPSTREAM, DELAY = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) / 1000
RATE = float(sys.argv[4]) * 1e6 / 8 if len(sys.argv) > 4 and float(sys.argv[4]) > 0 else None  # bytes/s
HANDSHAKE = len(sys.argv) > 5 and sys.argv[5] == "handshake"
CHUNK = 1 << 20 if RATE is None else 1 << 16
LINK = threading.Lock()
link_free = 0.0


def book(n):
    """Waits until the shared link has carried `n` more bytes (RATE only)."""
    global link_free
    with LINK:
        start = max(time.monotonic(), link_free)
        link_free = start + n / RATE
        done = link_free
    pause = done - time.monotonic()
    if pause > 0:
        time.sleep(pause)


def requests(client, upstream):
    """Client to origin: hold each chunk DELAY seconds, then forward it."""
    first = HANDSHAKE
    try:
        while data := client.recv(1 << 16):
            if DELAY:
                time.sleep(DELAY * 2 if first else DELAY)
            first = False
            upstream.sendall(data)
    except OSError:
        pass
    finally:
        try:
            upstream.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def responses(upstream, client):
    """Origin to client, untouched and zero-copy."""
    r, w = os.pipe()
    try:
        while n := os.splice(upstream.fileno(), w, CHUNK):
            if RATE:
                book(n)
            while n:
                n -= os.splice(r, client.fileno(), n)
    except OSError:
        pass
    finally:
        os.close(r)
        os.close(w)
        for s in (client, upstream):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def handle(client):
    try:
        upstream = socket.create_connection(("127.0.0.1", UPSTREAM))
    except OSError:
        client.close()
        return
    for s in (client, upstream):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    back = threading.Thread(target=responses, args=(upstream, client), daemon=True)
    back.start()
    requests(client, upstream)
    back.join()
    client.close()
    upstream.close()


def main():
    server = socket.create_server(("127.0.0.1", LISTEN), backlog=256)
    while True:
        client, _ = server.accept()
        threading.Thread(target=handle, args=(client,), daemon=True).start()


if __name__ == "__main__":
    main()
