#!/usr/bin/env python3
"""A tiny TCP reverse proxy that emulates a CDN's round trip.

latency_proxy.py LISTEN_PORT UPSTREAM_PORT LATENCY_MS [RATE_MBIT] [wan]

Each client connection gets its own upstream connection and two threads. Every chunk
the client sends (with keep-alive GETs, one chunk is one request) is held LATENCY_MS
before it is forwarded, so each request pays the latency once. Responses are moved
back with splice(2) through a pipe, so the proxy costs the machine under test (which
a real CDN would not) as little CPU as possible: the bytes are never copied into
Python.

With RATE_MBIT, responses of all connections together share one link of that many
Mbit/s (1 Mbit = 10^6 bits): each 64 KiB slice books its transmission time on the link
and is sent when its slot ends, so the origin is limited like a real access network.

With `wan` (`wan.py`), the delay is a link's: every chunk is forwarded LATENCY_MS after it
arrived, however many arrived just before it (a TLS handshake's last flight and the first
HTTP/2 frames are several writes in a row; held one after the other they would pay the
round trip several times), and a new connection's first chunk is held one more LATENCY_MS:
the round trip of the TCP handshake, which a connection to 127.0.0.1 does not pay.
"""
import queue
import os
import socket
import sys
import threading
import time

LISTEN, UPSTREAM, DELAY = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) / 1000
RATE = float(sys.argv[4]) * 1e6 / 8 if len(sys.argv) > 4 and float(sys.argv[4]) > 0 else None  # bytes/s
WAN = len(sys.argv) > 5 and sys.argv[5] == "wan"
CHUNK = 1 << 20 if RATE is None else 1 << 16
LINK = threading.Lock()
link_free = 0.0
# LATENCY_PROXY_TRACE=1: one line per chunk each way (time, connection, direction, bytes) on
# stderr, to see where a request's round trips go.
TRACE = os.environ.get("LATENCY_PROXY_TRACE") == "1"
EPOCH = time.monotonic()


def trace(client, what, n):
    if TRACE:
        print(f"{(time.monotonic() - EPOCH) * 1000:9.1f} ms  conn {client.fileno():3}  {what} {n}", file=sys.stderr, flush=True)


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


def end_requests(upstream):
    """The client sent its last request: so does the proxy."""
    try:
        upstream.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def requests(client, upstream):
    """Client to origin: hold each chunk DELAY seconds, then forward it."""
    if WAN:
        return link_requests(client, upstream)
    try:
        while data := client.recv(1 << 16):
            if DELAY:
                time.sleep(DELAY)
            upstream.sendall(data)
    except OSError:
        pass
    finally:
        end_requests(upstream)


def link_requests(client, upstream):
    """Client to origin over a link: each chunk leaves DELAY after it arrived (the first one
    DELAY later still, for the TCP handshake), in order, chunks in flight together."""
    due = queue.Queue()

    def forward():
        try:
            while (item := due.get()) is not None:
                at, data = item
                pause = at - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                upstream.sendall(data)
        except OSError:
            pass
        finally:
            end_requests(upstream)

    sender = threading.Thread(target=forward, daemon=True)
    sender.start()
    first = True
    try:
        while data := client.recv(1 << 16):
            trace(client, "request chunk", len(data))
            due.put((time.monotonic() + DELAY * (2 if first else 1), data))
            first = False
    except OSError:
        pass
    finally:
        due.put(None)
        sender.join()


def responses(upstream, client):
    """Origin to client, untouched and zero-copy."""
    r, w = os.pipe()
    try:
        while n := os.splice(upstream.fileno(), w, CHUNK):
            trace(client, "response bytes", n)
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
    trace(client, "accepted", 0)
    try:
        upstream = socket.socket()
        if WAN and RATE:
            # What a link holds in flight is about its bandwidth-delay product, not the
            # megabytes Linux lets a socket on 127.0.0.1 buffer: a response written after
            # another on the same connection (HTTP/2) queues behind that much, not more.
            # (The kernel caps the request at net.core.rmem_max: 416 KiB by default, under
            # the 625 KB of 50 ms at 100 Mbit/s.)
            upstream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, max(65536, int(RATE * DELAY)))
        upstream.connect(("127.0.0.1", UPSTREAM))
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
