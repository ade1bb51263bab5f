#!/usr/bin/env python3
"""Learned prefetch benchmark: a recorded "level load" replayed on a fresh mount.

prefetch_bench.py --binary ODRFS --work DIR [--latency-ms 20] [--rounds 3] [--think-ms 150]

A game bundle (Menu, Shared, thirty levels each with its own audio pack: 62 packs of
about 1.5 MB, 40 files each) is served by `odrfs serve` behind latency_proxy.py. The
session a player actually plays (resuming a saved game) is Menu, Shared, Level12,
Audio12, Level13, Audio13: it reads every
file of each pack in turn and then "plays" for --think-ms before the next one. Measured:
seconds from the mount being ready to the session's last file read, with an empty cache,
for three bundles of the same files:

  none         no prefetch list
  hand-written the author's guess: Menu, Shared, then Level1, Audio1, Level2, … in order
  learned      `odrfs build --prefetch-from` a trace recorded from one earlier session
  learn-mount  the hand-written bundle mounted with --learn-prefetch on the cache whose
               index recorded that earlier session (its packs purged first)

Every process it starts is stopped by PID and every mount unmounted, whatever happens.
"""
import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SESSION = ["Menu", "Shared", "Level12", "Audio12", "Level13", "Audio13"]
TAGS = ["Menu", "Shared"] + [f"{kind}{n}" for n in range(1, 31) for kind in ("Level", "Audio")]
HAND_WRITTEN = TAGS  # the author's guess: everything, in level order
PROCS = []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"nothing listens on port {port}")


def start(cmd, log):
    p = subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    PROCS.append(p)
    return p


def teardown(*_):
    for p in reversed(PROCS):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def odrfs(*args, check=True):
    r = subprocess.run([A.binary, *args], capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise SystemExit(f"odrfs {' '.join(args)} failed: {r.stderr}")
    return r


def make_tree(root):
    rng = random.Random(20261124)
    for tag in TAGS:
        for i in range(40):
            path = f"{root}/{tag}/f{i:02}.bin"
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(rng.randbytes(rng.randint(20_000, 56_000)))


def spec(prefetch):
    lines = ["tags:"] + [f'  {t}: ["{t}/**"]' for t in TAGS]
    if prefetch:
        lines.append("prefetch: [" + ", ".join(prefetch) + "]")
    return "\n".join(lines) + "\n"


def build(tree, dist, prefetch=None, traces=()):
    with open(f"{tree}/odr.yaml", "w") as f:
        f.write(spec(prefetch))
    args = ["build", tree, "-o", dist]
    for t in traces:
        args += ["--prefetch-from", t]
    odrfs(*args)


def play(mnt, tree):
    """The level load: every file of each pack in turn, then the player plays."""
    for i, tag in enumerate(SESSION):
        for name in sorted(os.listdir(f"{tree}/{tag}")):
            if name.endswith(".bin"):
                with open(f"{mnt}/{tag}/{name}", "rb") as f:
                    while f.read(1 << 20):
                        pass
        if i < len(SESSION) - 1:
            time.sleep(A.think_ms / 1000)


def session(url, mnt, cache, tree, extra=(), fresh=True):
    if fresh:
        shutil.rmtree(cache, ignore_errors=True)
    odrfs("mount", url, mnt, "--cache", cache, *extra)
    try:
        start_time = time.perf_counter()
        play(mnt, tree)
        return time.perf_counter() - start_time
    finally:
        odrfs("unmount", mnt, check=False)
        subprocess.run(["fusermount3", "-uz", mnt], capture_output=True)


def main():
    global A
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--think-ms", type=int, default=150)
    A = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    w = A.work
    tree, mnt = f"{w}/tree", f"{w}/mnt"
    os.makedirs(mnt, exist_ok=True)
    make_tree(tree)
    dists = {name: f"{w}/dist-{name}" for name in ("none", "hand-written", "learned")}
    build(tree, dists["none"])
    build(tree, dists["hand-written"], HAND_WRITTEN)

    ports = {}

    def serve(name):
        serve_port, proxy_port = free_port(), free_port()
        start([A.binary, "serve", dists[name], "--port", str(serve_port)], f"{w}/serve-{name}.log")
        wait_port(serve_port)
        start([sys.executable, f"{HERE}/latency_proxy.py", str(proxy_port), str(serve_port), str(A.latency_ms)], f"{w}/proxy-{name}.log")
        wait_port(proxy_port)
        ports[name] = proxy_port

    serve("none")
    serve("hand-written")
    url = lambda name: f"http://127.0.0.1:{ports[name]}/"

    # Record one session (no prefetch, so the trace is the player's alone) and learn from it.
    record_cache = f"{w}/cache-record"
    shutil.rmtree(record_cache, ignore_errors=True)
    odrfs("mount", url("none"), mnt, "--cache", record_cache)
    try:
        play(mnt, tree)
        odrfs("trace", mnt, "--output", f"{w}/trace.json")
    finally:
        odrfs("unmount", mnt, check=False)
    trace = json.load(open(f"{w}/trace.json"))
    assert [e["pack"] for e in trace] == SESSION, trace
    build(tree, dists["learned"], traces=[f"{w}/trace.json"])
    learned = json.load(open(f"{dists['learned']}/manifest.json"))["prefetch"]
    serve("learned")

    results = {name: [] for name in ("none", "hand-written", "learned", "learn-mount")}
    for _ in range(A.rounds):
        for name in ("none", "hand-written", "learned"):
            results[name].append(session(url(name), mnt, f"{w}/cache-{name}", tree))
        # --learn-prefetch: this machine's history is the recording cache's index; its
        # packs are purged first, so everything is fetched again.
        cache = record_cache
        odrfs("mount", url("hand-written"), mnt, "--cache", cache)
        odrfs("purge", mnt, "--all")
        odrfs("unmount", mnt)
        results["learn-mount"].append(session(url("hand-written"), mnt, cache, tree, ["--learn-prefetch"], fresh=False))

    print(f"learned prefetch list: {learned[:8]}…")
    print(f"latency {A.latency_ms} ms per request, think time {A.think_ms} ms between packs, {A.rounds} rounds, median")
    print(f"floor (think time alone): {(len(SESSION) - 1) * A.think_ms / 1000:.3f} s")
    print(f"{'prefetch':<14} {'seconds to last file':>22}  (all rounds)")
    for name, times in results.items():
        print(f"{name:<14} {statistics.median(times):>22.3f}  ({', '.join(f'{t:.3f}' for t in times)})")


if __name__ == "__main__":
    try:
        main()
    finally:
        teardown()
