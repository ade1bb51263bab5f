#!/usr/bin/env bash
# The package on a clean machine: a minimal Debian 12 root made with debootstrap (no Swift
# in it), the .deb installed there with apt-get, the README's tour run inside it (build,
# serve, mount with /dev/fuse bound in, cat, status --json, unmount), then apt-get purge,
# after which no file of the package may remain.
#   mount-scripts/package-test.sh [DEB]    (default: builds one with mount-scripts/package.sh)
# The bare root (debootstrap + apt-get update) is cached per day under
# ODRFS_PACKAGE_TEST_CACHE (default /var/cache/odrfs-package-test); each run works on a copy,
# and a missing cache is made from nothing. Mounts and processes are cleaned up on exit.
set -euo pipefail
source "$(dirname "$0")/as-root.sh"
cd "$(dirname "$0")/.."
repo=$PWD
started=$SECONDS
say() { printf 'package-test: %s\n' "$*"; }
fail() { printf 'package-test: FAILED: %s\n' "$*" >&2; exit 1; }

deb=${1:-}
if [[ -z "$deb" ]]; then
    # The build's lines go to our stderr through the inherited descriptor: `tee /dev/stderr`
    # would reopen it and, when it is a log file, truncate everything written before.
    deb=$(mount-scripts/package.sh | tee >(cat >&2) | tail -1)
fi
deb=$(realpath "$deb")
[[ -f "$deb" ]] || fail "no package at $deb"

command -v debootstrap >/dev/null || {
    say "installing debootstrap"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq debootstrap >/dev/null
}

# The mirror this machine's apt uses (deb822 .sources or a one-line sources.list).
mirror=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | grep -v -- '-security' | head -1 || true)
[[ -n "$mirror" ]] || mirror=$(awk '$1 == "deb" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
suite=bookworm

cache=${ODRFS_PACKAGE_TEST_CACHE:-/var/cache/odrfs-package-test}
key="$suite-minbase-$(printf '%s' "$mirror" | sha256sum | cut -c1-12)-$(date -u +%F)"
pristine="$cache/$key"
work=$(mktemp -d /var/tmp/odrfs-package-test.XXXXXX)
root="$work/root"
serve_pid=""

cleanup() {
    local status=$?
    set +e
    [[ -n "$serve_pid" ]] && kill "$serve_pid" 2>/dev/null
    # Anything still mounted under the root (the FUSE mount first, then /dev/fuse, /proc).
    if [[ -d "$root" ]]; then
        while read -r target; do
            umount "$target" 2>/dev/null || umount -l "$target"
        done < <(findmnt -rn -o TARGET | awk -v r="$root" 'index($0, r) == 1' | sort -r)
        # Processes this test started inside the root (a daemon left by a failure), by PID.
        for proc in /proc/[0-9]*; do
            [[ "$(readlink "$proc/root" 2>/dev/null)" == "$root" ]] && kill -9 "${proc#/proc/}" 2>/dev/null
        done
    fi
    if findmnt -rn -o TARGET | grep -q "^$work"; then
        say "left $work in place: something is still mounted under it"
    else
        rm -rf "$work"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 1. The clean root: from the cache, or made from nothing (and then cached).
if [[ -f "$pristine/.complete" ]]; then
    say "root from the cache ($pristine)"
    cp -a "$pristine" "$root"
else
    say "debootstrap --variant=minbase $suite from $mirror"
    t=$SECONDS
    debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 \
        || { tail -20 "$work/debootstrap.log" >&2; fail "debootstrap"; }
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    chroot "$root" apt-get update -qq || fail "apt-get update in the root"
    chroot "$root" apt-get clean
    say "debootstrap took $((SECONDS - t)) s"
    # Only today's root is kept; a half-written one never has .complete.
    if mkdir -p "$cache" && rm -rf "${cache:?}"/"$suite"-minbase-* && cp -a "$root" "$pristine.tmp"; then
        touch "$pristine.tmp/.complete" && mv "$pristine.tmp" "$pristine"
    fi
fi
rm -f "$root/.complete"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A login-like environment inside the root: Debian's default PATH, nothing of this machine's.
root_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
in_root=(chroot "$root" /usr/bin/env -i "PATH=$root_path" HOME=/root LANG=C.UTF-8)

# 2. What the root has: no Swift.
if "${in_root[@]}" sh -c 'command -v swift'; then fail "swift is on PATH in the clean root"; fi
say "no swift on PATH in the clean root (PATH=$root_path)"

# 3. Install the package as a user would.
cp "$deb" "$root/tmp/"
t=$SECONDS
"${in_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "/tmp/$(basename "$deb")" >"$work/install.log" 2>&1 \
    || { cat "$work/install.log" >&2; fail "apt-get install of the package"; }
say "apt-get install took $((SECONDS - t)) s"
say "package size: $(stat -c %s "$deb") bytes ($(du -h "$deb" | cut -f1)), installed: $("${in_root[@]}" dpkg-query -W -f='${Installed-Size}' odrfs) KiB"
say "$(dpkg-deb -f "$deb" Depends | sed 's/^/Depends: /')"
"${in_root[@]}" dpkg -L odrfs >"$work/files.txt"

# 4. The README's tour, inside the root, with /dev/fuse and /proc.
mount -t proc proc "$root/proc"
touch "$root/dev/fuse"
mount --bind /dev/fuse "$root/dev/fuse"
cp -a Examples/travel-guide "$root/tmp/travel-guide"

say "\$ odrfs --version"
"${in_root[@]}" odrfs --version | tee "$work/version.txt"
grep -Eq '^[0-9]+(\.[0-9]+)* \(commit [0-9a-f]{40}(-dirty)?\)$' "$work/version.txt" || fail "odrfs --version does not name a version and a commit"

say "\$ odrfs build /tmp/travel-guide -o /tmp/dist"
"${in_root[@]}" odrfs build /tmp/travel-guide -o /tmp/dist

say "\$ odrfs serve /tmp/dist --port 0 &"
# $! is the PID of odrfs itself: chroot and env exec it.
"${in_root[@]}" odrfs serve /tmp/dist --port 0 >"$work/serve.log" 2>&1 &
serve_pid=$!
url=""
for _ in $(seq 100); do
    url=$(sed -n 's/^Serving on \(http:[^ ]*\)$/\1/p' "$work/serve.log")
    [[ -n "$url" ]] && break
    kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.log" >&2; fail "odrfs serve exited"; }
    sleep 0.1
done
[[ -n "$url" ]] || fail "odrfs serve printed no URL in 10 s"
say "origin at $url"

say "\$ odrfs mount $url /mnt/travel"
mkdir -p "$root/mnt/travel"
timeout 60 "${in_root[@]}" odrfs mount "$url" /mnt/travel || fail "odrfs mount"
findmnt -n "$root/mnt/travel" >/dev/null || fail "nothing mounted at /mnt/travel"

say "\$ cat /mnt/travel/Italy/Rome.txt"
timeout 60 "${in_root[@]}" cat /mnt/travel/Italy/Rome.txt >"$work/rome.txt" || fail "cat of a remote file"
cmp "$work/rome.txt" Examples/travel-guide/Italy/Rome.txt || fail "Rome.txt read through the mount differs from the source"
head -c 200 "$work/rome.txt"; echo

say "\$ odrfs status /mnt/travel --json"
timeout 30 "${in_root[@]}" odrfs status /mnt/travel --json >"$work/status.json" || fail "odrfs status --json"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$work/status.json" || fail "odrfs status --json is not JSON"
head -c 400 "$work/status.json"; echo

say "\$ odrfs unmount /mnt/travel"
timeout 60 "${in_root[@]}" odrfs unmount /mnt/travel || fail "odrfs unmount"
! findmnt -n "$root/mnt/travel" >/dev/null || fail "/mnt/travel still mounted after odrfs unmount"

say "\$ mount -t odrfs $url /mnt/travel      # /sbin/mount.odrfs, as /etc/fstab would"
timeout 60 "${in_root[@]}" mount -t odrfs "$url" /mnt/travel || fail "mount -t odrfs"
timeout 60 "${in_root[@]}" cat /mnt/travel/Italy/Rome.txt | cmp - Examples/travel-guide/Italy/Rome.txt \
    || fail "Rome.txt through mount -t odrfs"
timeout 60 "${in_root[@]}" odrfs unmount /mnt/travel || fail "odrfs unmount after mount -t odrfs"

say "\$ odrfs config check travel; mount -t odrfs travel /mnt/travel   # a bundle configured in /etc/odrfs/bundles.d"
for path in /usr/libexec/odrfs/auto.odrfs /etc/auto.master.d/odrfs.autofs /etc/odrfs/bundles.d; do
    grep -qx "$path" "$work/files.txt" || fail "the package has no $path"
done
[[ -x "$root/usr/libexec/odrfs/auto.odrfs" ]] || fail "auto.odrfs is not executable"
grep -q '^/odr program:/usr/libexec/odrfs/auto.odrfs' "$root/etc/auto.master.d/odrfs.autofs" || fail "odrfs.autofs has no /odr entry"
printf 'origin = %s\n' "$url" >"$root/etc/odrfs/bundles.d/travel.conf"
timeout 60 "${in_root[@]}" odrfs config check travel || fail "odrfs config check travel"
[[ "$("${in_root[@]}" /usr/libexec/odrfs/auto.odrfs travel)" == "-fstype=odrfs,allow_other :travel" ]] \
    || fail "auto.odrfs travel does not give the map entry"
timeout 60 "${in_root[@]}" mount -t odrfs travel /mnt/travel || fail "mount -t odrfs travel"
timeout 60 "${in_root[@]}" cat /mnt/travel/Italy/Rome.txt | cmp - Examples/travel-guide/Italy/Rome.txt \
    || fail "Rome.txt through mount -t odrfs travel"
timeout 60 "${in_root[@]}" odrfs unmount /mnt/travel || fail "odrfs unmount after mount -t odrfs travel"
# The administrator's file, not the package's: purge leaves it (and so its folder) alone.
rm "$root/etc/odrfs/bundles.d/travel.conf"
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=""
umount "$root/dev/fuse" "$root/proc"

# 5. Purge: no file of the package remains, and no directory only it owned.
"${in_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq odrfs >"$work/purge.log" 2>&1 \
    || { cat "$work/purge.log" >&2; fail "apt-get purge"; }
left=()
while read -r path; do
    [[ "$path" == /. || -z "$path" ]] && continue
    # A directory (or a symbolic link to one, as /sbin is) may stay if another package owns it.
    if [[ -d "$root$path" ]]; then
        "${in_root[@]}" dpkg-query -S "$path" >/dev/null 2>&1 || left+=("$path/")
    elif [[ -e "$root$path" || -L "$root$path" ]]; then
        left+=("$path")
    fi
done <"$work/files.txt"
((${#left[@]} == 0)) || fail "left after apt-get purge: ${left[*]}"
say "apt-get purge left none of the package's $(grep -vc '^/\.$' "$work/files.txt") paths"
say "passed in $((SECONDS - started)) s"
