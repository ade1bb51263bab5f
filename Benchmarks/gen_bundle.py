#!/usr/bin/env python3
"""Writes the deterministic synthetic resource trees the benchmark bundles.

Every byte comes from random.Random(seed), so the same arguments always give the
same tree (and `odrfs build` then gives a byte-identical dist dir).

  gen_bundle.py main DIR [--quick]   levels, a big file and a metadata tree
  gen_bundle.py tags DIR FILES DIRS     S1, S2, S4: many empty files, one tag per directory
  gen_bundle.py digits DIR FILES PACKS  (or `scale`) many empty files in packs from digit tags
"""
import os
import random
import sys

SEED = 20261122


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main_tree(root, quick):
    """8 levels x 400 small files (4-64 KiB), a 256 MiB file, a 20,000-file tree.

    Each level, the big file and each 1,000 files of the tree get their own tag, so
    nothing is in the base pack and every pack starts remote."""
    rng = random.Random(SEED)
    levels, per_level = 8, (6 if quick else 400)
    big_bytes = (4 if quick else 256) << 20
    tree_files = 1_000 if quick else 20_000
    tags = {}
    for level in range(1, levels + 1):
        tags[f"Level{level}"] = [f"Levels/{level}/**"]
        for i in range(per_level):
            size = rng.randint(4 << 10, 64 << 10)
            write(f"{root}/Levels/{level}/asset{i:04d}.bin", rng.randbytes(size))
    tags["Big"] = ["Big/**"]
    os.makedirs(f"{root}/Big", exist_ok=True)
    with open(f"{root}/Big/big.bin", "wb") as f:
        block = random.Random(SEED + 1).randbytes(1 << 20)  # 1 MiB, rotated per MiB
        for mib in range(big_bytes >> 20):
            k = (mib * 4099) % len(block)
            f.write(block[k:] + block[:k])
    # 20 dirs x 50 subdirs x 20 files; tiny files; one tag per 1,000 files.
    per_dir = 20
    for n in range(tree_files):
        top, sub = n // 1000, (n // per_dir) % 50
        write(f"{root}/Tree/t{top:02d}/s{sub:02d}/f{n:05d}.txt", b"x" * rng.randint(0, 200))
    for top in range((tree_files + 999) // 1000):
        tags[f"Tree{top:02d}"] = [f"Tree/t{top:02d}/**"]
    write_spec(root, tags)


def scale_tree(root, files, packs):
    """`files` empty files in `packs` packs, from only a few dozen tags.

    Pack p lives under S/d1/d2/.../dK, the decimal digits of p, and tag Dkv matches
    "digit k is v": each pack has its own tag set, so its own pack, from 10*K patterns.
    This was S1's and S4's shape while `odrfs build` tried every pattern on every file;
    since it indexes patterns by literal prefix (PatternTrie), they use `tags`, a tag
    per pack as the issue words it."""
    digits = max(1, len(str(packs - 1)))
    per_pack = max(1, files // packs)
    for p in range(packs):
        d = root + "/S/" + "/".join(f"{p:0{digits}d}")
        os.makedirs(d, exist_ok=True)
        for i in range(per_pack):
            open(f"{d}/f{i:04d}", "wb").close()
    tags = {f"D{k}{v}": ["S/" + "*/" * k + f"{v}/**"] for k in range(digits) for v in range(10)}
    write_spec(root, tags)


def tag_tree(root, files, dirs):
    """`files` empty files in `dirs` directories d00000, d00001, ... and one tag per
    directory (`T00042: ["d00042/**"]`), as a game with a tag per level would have.
    Files are created with os.open/os.close: a million of them take about a minute."""
    per_dir = max(1, files // dirs)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    for d in range(dirs):
        path = f"{root}/d{d:05d}"
        os.makedirs(path, exist_ok=True)
        for i in range(per_dir):
            os.close(os.open(f"{path}/f{i:04d}", flags, 0o644))
    write_spec(root, {f"T{d:05d}": [f"d{d:05d}/**"] for d in range(dirs)})


def write_spec(root, tags):
    # JSON is YAML; the tag spec lives beside the tree, as odr.yaml.
    lines = ["tags:"] + [f'  {t}: [{", ".join(chr(34) + g + chr(34) for g in globs)}]' for t, globs in tags.items()]
    write(f"{root}/odr.yaml", ("\n".join(lines) + "\n").encode())


if __name__ == "__main__":
    kind, root = sys.argv[1], sys.argv[2]
    if kind == "main":
        main_tree(root, "--quick" in sys.argv)
    elif kind == "tags":
        tag_tree(root, int(sys.argv[3]), int(sys.argv[4]))
    elif kind in ("digits", "scale"):
        scale_tree(root, int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(f"gen_bundle.py: unknown kind {kind!r} (main, tags, digits)")
