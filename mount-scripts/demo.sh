#!/usr/bin/env bash
# The main job: install what is missing, build ODRFS, build the travel-guide example
# into packs, mount it, and show a file being fetched on first open.
set -euo pipefail
source "$(dirname "$0")/as-root.sh"
cd "$(dirname "$0")/.."
[[ -d /opt/swift/usr/bin && ":$PATH:" != *":/opt/swift/usr/bin:"* ]] && export PATH="/opt/swift/usr/bin:$PATH"
mount-scripts/setup.sh
swift build
odrfs=$(swift build --show-bin-path)/odrfs

demo=${ODRFS_DEMO_DIR:-/tmp/odrfs-demo}
port=${ODRFS_DEMO_PORT:-8765}
mnt="$demo/mnt"
if mountpoint -q "$mnt" 2>/dev/null; then "$odrfs" unmount "$mnt" || fusermount3 -uz "$mnt"; fi
if [[ -f "$demo/serve.pid" ]]; then kill "$(cat "$demo/serve.pid")" 2>/dev/null || true; rm -f "$demo/serve.pid"; fi
rm -rf "$demo/cache"   # start cold, so every fetch shows
mkdir -p "$demo" "$mnt"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step odrfs build Examples/travel-guide -o "$demo/dist"
"$odrfs" build Examples/travel-guide -o "$demo/dist"

step "odrfs serve $demo/dist --port $port &      # the origin: any static HTTP server would do"
"$odrfs" serve "$demo/dist" --port "$port" >"$demo/serve.log" 2>&1 &
echo $! >"$demo/serve.pid"
for _ in $(seq 50); do grep -q Serving "$demo/serve.log" 2>/dev/null && break; sleep 0.1; done

step odrfs mount "http://127.0.0.1:$port/" "$mnt" --cache "$demo/cache"
"$odrfs" mount "http://127.0.0.1:$port/" "$mnt" --cache "$demo/cache"

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

step "cat $mnt/Guide/welcome.txt      # Guide#locale_en/ in the bundle: the language LANG asks for, else English"
cat "$mnt/Guide/welcome.txt"

step "odrfs variant $mnt locale=it      # the Italian guide, switched live (open files keep their bytes)"
"$odrfs" variant "$mnt" locale=it
cat "$mnt/Guide/welcome.txt"

step "grep /packs/ $demo/serve.log      # the origin saw one request per pack, none for ls or getfattr"
grep -o 'path=[^ ]*packs/[^ ]*' "$demo/serve.log" || true

printf '\nThe bundle stays mounted at %s (origin log: %s). Stop with:\n  %s unmount %s && kill $(cat %s)\n' \
    "$mnt" "$demo/serve.log" "$odrfs" "$mnt" "$demo/serve.pid"
