#!/usr/bin/env bash
# The main job: install what is missing, build ODRFS, build the travel-guide example
# into packs, mount it, and show a file being fetched on first open.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -d /opt/swift/usr/bin && ":$PATH:" != *":/opt/swift/usr/bin:"* ]] && export PATH="/opt/swift/usr/bin:$PATH"
mount-scripts/setup.sh
swift build
odrfs=$(swift build --show-bin-path)/odrfs

demo=${ODRFS_DEMO_DIR:-/tmp/odrfs-demo}
mnt="$demo/mnt"
if mountpoint -q "$mnt" 2>/dev/null; then "$odrfs" unmount "$mnt" || fusermount3 -uz "$mnt"; fi
mkdir -p "$demo" "$mnt"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step odrfs build Examples/travel-guide -o "$demo/dist"
"$odrfs" build Examples/travel-guide -o "$demo/dist"

step odrfs mount "$demo/dist" "$mnt" --cache "$demo/cache"
"$odrfs" mount "$demo/dist" "$mnt" --cache "$demo/cache"

step ls -l "$mnt" "$mnt/Italy"
ls -l "$mnt" "$mnt/Italy"

step "cat $mnt/.odrfs/status      # Iceland is initial-install; Japan is not downloaded"
cat "$mnt/.odrfs/status"

japan_file=$(find "$mnt/Japan" -type f -size +0 | sort | head -1)
step getfattr -d -m user.odrfs "$japan_file"
getfattr -d -m user.odrfs "$japan_file"

step "head -c 300 '$japan_file'      # opening fetches the Japan pack"
head -c 300 "$japan_file"; echo

step "cat $mnt/.odrfs/status"
cat "$mnt/.odrfs/status"

printf '\nThe bundle stays mounted at %s. Unmount with:\n  %s unmount %s\n' "$mnt" "$odrfs" "$mnt"
