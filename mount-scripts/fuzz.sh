#!/usr/bin/env bash
# Builds the libFuzzer targets in Fuzz/ (with -sanitize=fuzzer,address, in Fuzz/.build so the
# main build is untouched) and runs each for SECONDS (default 20), seeded from Fuzz/Corpus.
#
#   mount-scripts/fuzz.sh [SECONDS]            every target
#   FUZZ_TARGETS="manifest control" mount-scripts/fuzz.sh 60
#
# Exits non-zero if any target crashed, hit a sanitizer error, timed out on one input or
# violated a parser property. The input that did it is left in Fuzz/Crashes/<target>/
# (crash-*, timeout-*, oom-*), the run's output in Fuzz/Crashes/<target>.log. Reproduce with
#   ODRFS_FUZZ_TARGET=<target> Fuzz/.build/debug/odrfs-fuzz Fuzz/Crashes/<target>/crash-…
# New interesting inputs go to Fuzz/.build/corpus/<target> (not committed); copy a small,
# telling one into Fuzz/Corpus/<target> to keep it as a seed.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -d /opt/swift/usr/bin && ":$PATH:" != *":/opt/swift/usr/bin:"* ]] && export PATH="/opt/swift/usr/bin:$PATH"

seconds="${1:-20}"
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -gt 0 ]] || { echo "usage: $0 [SECONDS]" >&2; exit 2; }
targets="${FUZZ_TARGETS:-manifest fileindex httpdate headers multipart control tagspec signature frames trace mounttable options originurl requestpath bundleconf storefiles}"

start=$(date +%s)
swift build --package-path Fuzz -Xswiftc -sanitize=fuzzer,address
binary="$(swift build --package-path Fuzz -Xswiftc -sanitize=fuzzer,address --show-bin-path)/odrfs-fuzz"
echo "fuzz: build took $(( $(date +%s) - start )) s"

failed=()
for target in $targets; do
    [[ -d "Fuzz/Corpus/$target" ]] || { echo "fuzz: no seed corpus Fuzz/Corpus/$target" >&2; exit 2; }
    work="Fuzz/.build/corpus/$target"
    crashes="Fuzz/Crashes/$target"
    mkdir -p "$work" "$crashes"
    echo "fuzz: $target for ${seconds} s"
    # Boundary numbers and keywords libFuzzer would take long to guess byte by byte.
    dictionary=()
    [[ -f "Fuzz/Dictionaries/$target.dict" ]] && dictionary=(-dict="Fuzz/Dictionaries/$target.dict")
    # The first corpus directory receives new inputs, so the committed seeds stay as they are.
    # Leak detection is off: the Swift runtime's metadata caches look like leaks to LSan.
    # SWIFT_BACKTRACE off: the Swift backtracer and ASan both want the crash signal.
    if SWIFT_BACKTRACE=enable=no ODRFS_FUZZ_TARGET="$target" "$binary" "$work" "Fuzz/Corpus/$target" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -detect_leaks=0 -print_final_stats=1 -artifact_prefix="$crashes/" "${dictionary[@]}" \
        > "Fuzz/Crashes/$target.log" 2>&1; then
        grep -E '^(stat::number_of_executed_units|Done)' "Fuzz/Crashes/$target.log" | sed "s/^/fuzz: $target: /" || true
    else
        echo "fuzz: $target FAILED; input in $crashes, output in Fuzz/Crashes/$target.log:" >&2
        grep -E 'ERROR|Fatal error|runtime failure|property violated|SUMMARY|Test unit written' "Fuzz/Crashes/$target.log" | head -20 >&2 || true
        failed+=("$target")
    fi
done
echo "fuzz: total $(( $(date +%s) - start )) s"
if (( ${#failed[@]} > 0 )); then
    echo "fuzz: crashes in: ${failed[*]}" >&2
    exit 1
fi
