#!/usr/bin/env python3
"""Compressed packs (zstd, one frame per chunk) against plain tar packs, in one run.

compression.py --binary ODRFS [--work DIR] [--rate-mbit 100] [--latency-ms 20]
               [--source /opt/swift/usr/lib/swift/linux] [--level zstd:3]

Builds one bundle twice (`--compress zstd:3` and `--compress none`) from two levels:
`Toolchain`, a copy of real files every machine here has in the same version (the Swift
toolchain's usr/lib/swift/linux: shared libraries and module files), and `Random`, 400
random-byte files of 4–64 KiB like the synthetic benchmark's levels (incompressible).
Reports the dist sizes, then W1 (cold: read every file of a level through a fresh mount,
page cache dropped) for each build behind `odrfs serve` and latency_proxy.py, once with
the link limited to RATE Mbit/s and once unlimited, with the bytes on the wire from
`odrfs status --json` (cache.wireBytes), and libzstd's decoding speed on one core. Needs
root (drop_caches, FUSE). Every process it starts is stopped by PID, every mount unmounted.
"""
import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROCS = []
MOUNTS = []


def sh(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def start(cmd, log):
    p = subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    PROCS.append(p)
    return p


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def tree(work, source):
    src = f"{work}/src"
    shutil.copytree(source, f"{src}/Toolchain", symlinks=True)
    rng = random.Random(20261122)
    os.makedirs(f"{src}/Random")
    for i in range(400):
        with open(f"{src}/Random/{i:03d}.bin", "wb") as f:
            f.write(rng.randbytes(rng.randint(4096, 65536)))
    with open(f"{src}/odr.yaml", "w") as f:
        f.write('tags:\n  Toolchain: ["Toolchain/**"]\n  Random: ["Random/**"]\n')
    return src


def files_of(root, level):
    out = []
    for d, _, names in os.walk(f"{root}/{level}"):
        out += [f"{d}/{n}" for n in sorted(names) if not os.path.islink(f"{d}/{n}")]
    return sorted(out)


def read_all(paths):
    total = 0
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while b := f.read(1 << 20):
                total += len(b)
    return total


def wire_bytes(binary, mnt):
    return json.loads(sh(binary, "status", mnt, "--json"))["cache"].get("wireBytes", 0)


def w1(binary, url, work, name, level):
    """A fresh mount with an empty cache; seconds to read the level, wire bytes, bytes read."""
    mnt, cache = f"{work}/mnt-{name}", f"{work}/cache-{name}"
    os.makedirs(mnt)
    sh(binary, "mount", url, mnt, "--cache", cache)
    MOUNTS.append(mnt)
    try:
        paths = files_of(mnt, level)
        before = wire_bytes(binary, mnt)
        drop_caches()
        t = time.perf_counter()
        read = read_all(paths)
        seconds = time.perf_counter() - t
        return seconds, wire_bytes(binary, mnt) - before, read
    finally:
        subprocess.run([binary, "unmount", mnt], capture_output=True)
        MOUNTS.remove(mnt)
        shutil.rmtree(cache, ignore_errors=True)


def decode_speed(pack, tar_bytes):
    """libzstd (the daemon's decoder) on one core, best of 3, MB/s of output."""
    best = None
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run(["zstd", "-d", "-q", "-c", "-T1", pack], stdout=subprocess.DEVNULL, check=True)
        s = time.perf_counter() - t
        best = s if best is None else min(best, s)
    return tar_bytes / best / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--work")
    ap.add_argument("--rate-mbit", type=float, default=100)
    ap.add_argument("--latency-ms", type=int, default=20)
    ap.add_argument("--source", default="/opt/swift/usr/lib/swift/linux")
    ap.add_argument("--level", default="zstd:3")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="odrfs-zstd-bench.")
    say = lambda m: print(f"[{time.strftime('%H:%M:%S')}] {m}", file=sys.stderr, flush=True)
    try:
        say("copying the levels")
        src = tree(work, a.source)
        builds, manifests = {}, {}
        for mode in (a.level, "none"):
            t = time.perf_counter()
            sh(a.binary, "build", src, "-o", f"{work}/dist-{mode}", "--compress", mode)
            builds[mode] = time.perf_counter() - t
            with open(f"{work}/dist-{mode}/manifest.json") as f:
                manifests[mode] = {p["id"]: p for p in json.load(f)["packs"]}
        print(f"\n## Compressed packs: {a.level} against plain tar ({os.cpu_count()} CPUs, "
              f"link {a.rate_mbit:g} Mbit/s + {a.latency_ms} ms per request)\n")
        print("| level | tar bytes | .tar.zst bytes | ratio | build s (zstd / none) |")
        print("|---|---|---|---|---|")
        for level in ("Toolchain", "Random"):
            z, n = manifests[a.level][level], manifests["none"][level]
            zb = z.get("compression", {}).get("bytes", z["bytes"])
            print(f"| {level} | {n['bytes']:,} | {zb:,} | {zb / n['bytes']:.3f} | {builds[a.level]:.1f} / {builds['none']:.1f} |")
        say("serving")
        urls = {}
        for mode in (a.level, "none"):
            port = free_port()
            start([a.binary, "serve", f"{work}/dist-{mode}", "--port", str(port)], f"{work}/serve-{mode}.log")
            wait_port(port)
            for rate in (a.rate_mbit, 0):
                proxy = free_port()
                start([sys.executable, f"{HERE}/latency_proxy.py", str(proxy), str(port), str(a.latency_ms), str(rate)],
                      f"{work}/proxy-{mode}-{rate}.log")
                wait_port(proxy)
                urls[(mode, rate)] = f"http://127.0.0.1:{proxy}/"
        print("\n| W1 cold level | link | packs | seconds | bytes on the wire | bytes read |")
        print("|---|---|---|---|---|---|")
        results = {}
        for level in ("Toolchain", "Random"):
            for rate in (a.rate_mbit, 0):
                for mode in (a.level, "none"):
                    say(f"W1 {level} {mode} {rate or 'unlimited'}")
                    s, wire, read = w1(a.binary, urls[(mode, rate)], work, f"{level}-{mode}-{rate}", level)
                    results[(level, rate, mode)] = (s, wire)
                    link = f"{rate:g} Mbit/s" if rate else "unlimited"
                    print(f"| {level} | {link} | {mode} | {s:.2f} | {wire:,} | {read:,} |", flush=True)
        s_z, w_z = results[("Toolchain", a.rate_mbit, a.level)]
        s_n, w_n = results[("Toolchain", a.rate_mbit, "none")]
        print(f"\nToolchain at {a.rate_mbit:g} Mbit/s: bytes {w_z / w_n:.3f}× and time {s_z / s_n:.3f}× of plain tar "
              f"(goal: time ≤ bytes ratio + 10 %).")
        z = manifests[a.level]["Toolchain"]
        speed = decode_speed(f"{work}/dist-{a.level}/{z['file']}", z["bytes"])
        print(f"libzstd decoding of the Toolchain pack on one core (zstd -d -T1, best of 3): {speed:,.0f} MB/s of tar")
    finally:
        for m in list(MOUNTS):
            subprocess.run(["fusermount3", "-uz", m], capture_output=True)
        for p in reversed(PROCS):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
