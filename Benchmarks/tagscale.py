#!/usr/bin/env python3
"""S2: `odrfs build` of a bundle with one tag per directory (see Benchmarks/README.md).

  Benchmarks/tagscale.py --binary PATH [--files 1000000] [--dirs 10000] [--tmp /work/tmp]

Generates FILES empty files in DIRS directories with one tag each (`T00042:
["d00042/**"]`, gen_bundle.py tags), then times, with the given odrfs binary:
  1. the first build into a fresh dist dir,
  2. a rebuild where nothing changed (revision 2),
  3. a rebuild after one file of one directory changed (revision 3).
Prints one line per step (wall seconds, CPU seconds and peak RSS from wait4) and removes the
tree and the dist dir afterwards, whatever happens. Needs no root."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))


def timed_build(binary, source, dist, log):
    """Runs one build; returns (seconds, CPU seconds, its peak RSS in MiB, the last lines
    it printed). CPU time (user + system) is the steadier figure on a shared machine.
    Output goes to a file (10,000 table rows would fill a pipe); wait4 gives this
    child's own rusage."""
    with open(log, "wb") as out:
        started = time.perf_counter()
        child = subprocess.Popen([binary, "build", source, "-o", dist], stdout=out, stderr=out)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
    with open(log, "rb") as f:
        lines = f.read().decode(errors="replace").splitlines()
    if status != 0:
        sys.exit(f"tagscale: build failed (wait status {status}): " + "\n".join(lines[-20:]))
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, [l for l in lines[-4:] if not l.startswith(("T0", "base"))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--dirs", type=int, default=10_000)
    parser.add_argument("--tmp", default="/tmp")
    parser.add_argument("--first-only", action="store_true", help="time only the first build")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="odrfs-tagscale.", dir=args.tmp)
    try:
        source, dist = work + "/src", work + "/dist"
        started = time.perf_counter()
        subprocess.run([sys.executable, here + "/gen_bundle.py", "tags", source, str(args.files), str(args.dirs)], check=True)
        print(f"S2 tree: {args.files:,} files in {args.dirs:,} directories, {args.dirs:,} tags "
              f"(generated in {time.perf_counter() - started:.1f} s)")
        steps = [("first build", None)]
        if not args.first_only:
            steps += [("rebuild, nothing changed", None), ("rebuild, one file changed", f"{source}/d00007/f0003")]
        for name, changed in steps:
            if changed:
                with open(changed, "wb") as f:
                    f.write(b"changed\n")
            subprocess.run(["sync"], check=False)
            seconds, cpu, rss, lines = timed_build(args.binary, source, dist, work + "/build.log")
            print(f"S2 {name:<28} {seconds:8.1f} s   CPU {cpu:7.1f} s   peak RSS {rss:,.0f} MiB")
            for line in lines:
                print(f"    {line}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
