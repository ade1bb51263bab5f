#!/usr/bin/env python3
"""The cold path over an emulated WAN (issue 27, item 5): a cold mount, the first 4 KiB of
the 256 MiB file and its last 64 KiB read first, each against the link's limit measured in
the same run.

  sudo python3 Benchmarks/wan.py --binary .build/release/odrfs [--rtt-ms 50] [--rate-mbit 100]
                                 [--rounds 3] [--quick] [--keep]

The link: nginx (TLS 1.3, HTTP/2; a 64 KiB socket send buffer, as CDNs keep what is
queued unsent small for HTTP/2's sake) behind `latency_proxy.py ... wan`, which forwards every
chunk a client sends one round trip after it arrived (chunks in flight together, as on a
link), charges every new connection one more (the TCP handshake), and sends every response
through one shared link of RATE Mbit/s. This kernel
has no `sch_netem`; the proxy's model is one round trip per client flight, which is what a
request, a TLS 1.3 handshake and a TCP handshake each cost on a real link.

The limits, printed with every figure:
- mount: 4 round trips (TCP, TLS, the manifest, then the index and the packs the manifest
  names, requested at once) + every byte the origin sent for it / rate;
- first 4 KiB and last 64 KiB, each on a new connection (the proxy is restarted, so the
  mount's pooled connection is gone): 3 round trips (TCP, TLS, the request) + the bytes
  asked for / rate. (The design also needs the whole chunk holding the bytes, about
  64 KiB, to verify them; that is inside the figure, not the limit.)
Also the local part of a mount: `odrfs mount` of the dist dir as a directory (no network).
"""
import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PIDS = []
MOUNTS = []


def sh(*args, **kw):
    return subprocess.run(list(args), check=True, **kw)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def wait_for(check, seconds, what):
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"wan.py: timed out waiting for {what}")
        time.sleep(0.02)


def start(args, log):
    process = subprocess.Popen(args, stdout=open(log, "a"), stderr=subprocess.STDOUT, start_new_session=True)
    PIDS.append(process.pid)
    return process


def stop(process):
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except OSError:
        pass
    process.wait(timeout=10)
    # Never signalled again at cleanup: its process group id may be reused by then.
    if process.pid in PIDS:
        PIDS.remove(process.pid)


def cleanup():
    for m in MOUNTS:
        subprocess.run(["fusermount3", "-uz", m], stderr=subprocess.DEVNULL)
    for p in PIDS:
        try:
            os.killpg(p, signal.SIGKILL)
        except OSError:
            pass


def certificate(work):
    key, cert = f"{work}/tls/key.pem", f"{work}/tls/cert.pem"
    os.makedirs(f"{work}/tls", exist_ok=True)
    sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
       "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert,
       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return key, cert


def start_nginx(work, dist, key, cert, http1=False):
    d = f"{work}/nginx"
    os.makedirs(f"{d}/tmp", exist_ok=True)
    port = free_port()
    temps = "".join(f"{k}_temp_path {d}/tmp; " for k in ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"])
    with open(f"{d}/nginx.conf", "w") as f:
        f.write(f"""daemon off; master_process on; worker_processes 2; user root;
pid {d}/nginx.pid; error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  log_format bytes '$bytes_sent $server_protocol $status $request';
  access_log {d}/access.log bytes; {temps}
  sendfile on; keepalive_requests 100000;
  server {{
    listen 127.0.0.1:{port} ssl {"" if http1 else "http2"} sndbuf=64k;
    ssl_certificate {cert}; ssl_certificate_key {key}; ssl_protocols TLSv1.3;
    location / {{ root {dist}; }}
  }}
}}
""")
    start(["/usr/sbin/nginx", "-c", f"{d}/nginx.conf", "-p", d], f"{d}/stderr.log")
    wait_for(lambda: port_open(port), 10, "nginx")
    return port, f"{d}/access.log"


class Link:
    """latency_proxy.py in front of nginx; restart() drops every connection."""

    def __init__(self, work, upstream, rtt_ms, rate_mbit):
        self.work, self.upstream, self.rtt_ms, self.rate_mbit = work, upstream, rtt_ms, rate_mbit
        self.port = free_port()
        self.process = None
        self.restart()

    def restart(self):
        if self.process:
            stop(self.process)
            wait_for(lambda: not port_open(self.port), 10, "the proxy to stop")
        self.process = start([sys.executable, f"{HERE}/latency_proxy.py", str(self.port), str(self.upstream),
                              str(self.rtt_ms), str(self.rate_mbit), "wan"], f"{self.work}/proxy.log")
        wait_for(lambda: port_open(self.port), 10, "the proxy")


def log_bytes(log, since):
    """Bytes nginx sent (headers and bodies) in the lines after offset `since`, and the protocols seen."""
    total, protocols = 0, set()
    with open(log) as f:
        f.seek(since)
        for line in f:
            parts = line.split()
            if len(parts) >= 2:
                total += int(parts[0])
                protocols.add(parts[1])
    return total, protocols


def mount(binary, origin, mountpoint, cache, cert=None):
    # Always cold: a cache left by an earlier run (--work) would make it warm.
    subprocess.run(["rm", "-rf", cache])
    args = [binary, "mount", origin, mountpoint, "--cache", cache] + (["--ca-file", cert] if cert else [])
    started = time.monotonic()
    result = subprocess.run(args, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(f"wan.py: odrfs mount failed: {result.stderr}")
    MOUNTS.append(mountpoint)
    return elapsed


def unmount(binary, mountpoint):
    subprocess.run([binary, "unmount", mountpoint], capture_output=True)
    subprocess.run(["fusermount3", "-uz", mountpoint], stderr=subprocess.DEVNULL)


def timed_read(path, offset, count):
    started = time.monotonic()
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.pread(fd, count, offset)
    finally:
        os.close(fd)
    return time.monotonic() - started, data


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--rtt-ms", type=int, default=50)
    parser.add_argument("--rate-mbit", type=float, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--http1", action="store_true", help="nginx without HTTP/2")
    parser.add_argument("--work")
    A = parser.parse_args()
    work = A.work or subprocess.check_output(["mktemp", "-d", "/tmp/odrfs-wan.XXXXXX"], text=True).strip()
    rtt, rate = A.rtt_ms / 1000, A.rate_mbit * 1e6 / 8
    try:
        src, dist = f"{work}/src", f"{work}/dist"
        if not os.path.exists(f"{dist}/manifest.json"):
            sh(sys.executable, f"{HERE}/gen_bundle.py", "main", src, *(["--quick"] if A.quick else []))
            sh(A.binary, "build", src, "-o", dist, stdout=subprocess.DEVNULL)
        key, cert = certificate(work)
        port, log = start_nginx(work, dist, key, cert, http1=A.http1)
        link = Link(work, port, A.rtt_ms, A.rate_mbit)
        origin = f"https://127.0.0.1:{link.port}/"
        big = f"{src}/Big/big.bin"
        size = os.path.getsize(big)
        with open(big, "rb") as f:
            head = f.read(4096)
            f.seek(size - 65536)
            tail = f.read()
        rows = {"local mount (dist dir)": [], "mount": [], "first 4 KiB": [], "last 64 KiB read first": []}
        protocols = set()
        for round in range(A.rounds):
            mnt = f"{work}/mnt-{round}"
            os.makedirs(mnt, exist_ok=True)
            # The local part of a mount: no network at all.
            t = mount(A.binary, dist, mnt, f"{work}/cache-local-{round}")
            rows["local mount (dist dir)"].append((t, None, None))
            unmount(A.binary, mnt)
            # A cold mount over the link, on a new connection.
            link.restart()
            since = os.path.getsize(log) if os.path.exists(log) else 0
            t = mount(A.binary, origin, mnt, f"{work}/cache-a-{round}", cert)
            time.sleep(0.3)   # nginx logs a request when its response is done
            sent, seen = log_bytes(log, since)
            protocols |= seen
            rows["mount"].append((t, 4 * rtt + sent / rate, sent))
            # The first 4 KiB of the big file, on a new connection.
            link.restart()
            t, data = timed_read(f"{mnt}/Big/big.bin", 0, 4096)
            assert data == head, "the first 4 KiB differ"
            rows["first 4 KiB"].append((t, 3 * rtt + 4096 / rate, 4096))
            unmount(A.binary, mnt)
            # The last 64 KiB read first, on a new connection, with a fresh cache.
            mount(A.binary, origin, mnt, f"{work}/cache-b-{round}", cert)
            link.restart()
            t, data = timed_read(f"{mnt}/Big/big.bin", size - 65536, 65536)
            assert data == tail, "the last 64 KiB differ"
            rows["last 64 KiB read first"].append((t, 3 * rtt + 65536 / rate, 65536))
            unmount(A.binary, mnt)
        print(f"\nWAN: {A.rtt_ms} ms round trip, {A.rate_mbit:g} Mbit/s, TLS 1.3, protocols seen {sorted(protocols)}; "
              f"{A.rounds} rounds, medians; big file {size >> 20} MiB")
        print(f"{'':28} {'time':>9} {'limit':>9} {'ratio':>7}  runs")
        for name, runs in rows.items():
            times = [r[0] for r in runs]
            median = statistics.median(times)
            if runs[0][1] is None:
                print(f"{name:28} {median * 1000:8.0f}ms {'':>9} {'':>7}  " + ", ".join(f"{x * 1000:.0f}" for x in times))
                continue
            limit = statistics.median([r[1] for r in runs])
            print(f"{name:28} {median * 1000:8.0f}ms {limit * 1000:8.0f}ms {median / limit:6.2f}x  "
                  + ", ".join(f"{r[0] * 1000:.0f}/{r[1] * 1000:.0f}" for r in runs))
        mount_bytes = statistics.median([r[2] for r in rows["mount"]])
        print(f"(mount: {mount_bytes / 1024:.0f} KiB from the origin; limits: mount 4 RTT + bytes/rate, "
              f"reads 3 RTT + bytes/rate)")
    finally:
        cleanup()
        if not A.keep and not A.work:
            subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
