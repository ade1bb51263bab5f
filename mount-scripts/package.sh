#!/usr/bin/env bash
# Builds the Debian package odrfs_<version>_<arch>.deb with dpkg-deb, for machines with
# no Swift toolchain: the release binary linked with the Swift standard library and
# Foundation statically (--static-swift-stdlib) and stripped; Depends: computed from its
# shared libraries by dpkg-shlibdeps (plus fuse3, for fusermount3 and /etc/fuse.conf).
#   mount-scripts/package.sh [OUTPUT_DIR]     (default .build/package)
# Prints the .deb's path last. The version is ODRFSVersion.number (Sources/odrfs), read
# back from the built binary; the commit is baked in through ODRFS_BUILD_COMMIT (see
# Package.swift). lintian checks the result and fails the script on an error.
set -euo pipefail
source "$(dirname "$0")/as-root.sh"
cd "$(dirname "$0")/.."
[[ -d /opt/swift/usr/bin && ":$PATH:" != *":/opt/swift/usr/bin:"* ]] && export PATH="/opt/swift/usr/bin:$PATH"
# Files 0644 and directories 0755 whatever the caller's umask, as Debian expects.
umask 022
# git refuses a checkout owned by another user (as under sudo) unless told it is safe.
git() { command git -c safe.directory="$PWD" "$@"; }
output=$(realpath -m "${1:-.build/package}")
# The Debian revision of this packaging of a version (the upstream version lives in Swift).
debian_revision=1
# Who built the package: ODRFS_MAINTAINER, else the author of the last commit.
maintainer=${ODRFS_MAINTAINER:-$(git log -1 --format='%an <%ae>' 2>/dev/null || true)}
[[ -n "$maintainer" ]] || { echo "package: set ODRFS_MAINTAINER='Name <email>'" >&2; exit 1; }

tools=(dpkg-dev lintian binutils)
missing=()
for package in "${tools[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
    echo "package: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
fi

commit=unknown
if git rev-parse --git-dir >/dev/null 2>&1; then
    commit=$(git rev-parse HEAD)
    # Tracked changes not committed: the binary is not exactly that commit.
    [[ -z "$(git status --porcelain --untracked-files=no)" ]] || commit+="-dirty"
fi

started=$SECONDS
build=(swift build -c release --static-swift-stdlib --product odrfs)
ODRFS_BUILD_COMMIT=$commit "${build[@]}"
binary="$(ODRFS_BUILD_COMMIT=$commit "${build[@]}" --show-bin-path)/odrfs"
echo "package: release build took $((SECONDS - started)) s"

# `odrfs --version` prints "0.1.0 (commit …)".
upstream=$("$binary" --version | awk '{print $1}')
[[ $upstream =~ ^[0-9]+(\.[0-9]+)*$ ]] || { echo "package: odrfs --version gave '$upstream', not a version" >&2; exit 1; }
version="$upstream-$debian_revision"
arch=$(dpkg --print-architecture)

work="$output/work"
root="$work/root"
rm -rf "$work"
mkdir -p "$root/DEBIAN" "$output"

install -Dm755 "$binary" "$root/usr/bin/odrfs"
# What dh_strip does: no symbols, no .comment or .note sections.
strip --remove-section=.comment --remove-section=.note --strip-unneeded "$root/usr/bin/odrfs"
install -Dm755 mount-scripts/mount.odrfs "$root/sbin/mount.odrfs"
# The template unit, pointing at the packaged binary rather than a source install's.
install -d "$root/lib/systemd/system"
sed 's#/usr/local/bin/odrfs#/usr/bin/odrfs#g' mount-scripts/odrfs@.service >"$root/lib/systemd/system/odrfs@.service"
chmod 644 "$root/lib/systemd/system/odrfs@.service"

# Bundles on first access: the autofs program map and its master-map entry (/odr), the
# folder of bundle configurations and an example of one.
install -Dm755 mount-scripts/auto.odrfs "$root/usr/libexec/odrfs/auto.odrfs"
install -Dm644 mount-scripts/odrfs.autofs "$root/etc/auto.master.d/odrfs.autofs"
install -d "$root/etc/odrfs/bundles.d"
install -Dm644 mount-scripts/bundle.conf.example "$root/usr/share/doc/odrfs/examples/bundle.conf"

install -d "$root/usr/share/man/man1"
gzip -9n <docs/odrfs.1 >"$root/usr/share/man/man1/odrfs.1.gz"

install -d "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d"
# bash-completion sources the file: no #! line.
"$binary" --generate-completion-script bash | sed '1{/^#!/d}' >"$root/usr/share/bash-completion/completions/odrfs"
"$binary" --generate-completion-script zsh >"$root/usr/share/zsh/vendor-completions/_odrfs"
"$binary" --generate-completion-script fish >"$root/usr/share/fish/vendor_completions.d/odrfs.fish"

doc="$root/usr/share/doc/odrfs"
install -Dm644 mount-scripts/debian/copyright "$doc/copyright"
install -Dm644 mount-scripts/debian/lintian-overrides "$root/usr/share/lintian/overrides/odrfs"
{
    echo "odrfs ($version) unstable; urgency=medium"
    echo
    echo "  * ODRFS $upstream, built from commit"
    echo "    $commit."
    echo
    # The date of the commit, so the same commit gives the same package.
    echo " -- $maintainer  $(date -R -u -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)")"
} | gzip -9n >"$doc/changelog.Debian.gz"
find "$root" -type f -exec chmod go-w {} +

# Depends: from the shared libraries the binary needs (dpkg-shlibdeps wants a debian/control).
mkdir -p "$work/debian"
printf 'Source: odrfs\n\nPackage: odrfs\nArchitecture: any\n' >"$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O "root/usr/bin/odrfs" | sed -n 's/^shlibs:Depends=//p')
[[ -n "$shlibs" ]] || { echo "package: dpkg-shlibdeps found no shared library" >&2; exit 1; }
depends="$shlibs, fuse3"
rm -rf "$work/debian"

installed_size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
# Every file under /etc is the administrator's once installed.
(cd "$root" && find etc -type f -printf '/%p\n' | sort) >"$root/DEBIAN/conffiles"
cat >"$root/DEBIAN/control" <<EOF
Package: odrfs
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: $depends
Recommends: autofs
Section: utils
Priority: optional
Description: on-demand resources for Linux as a FUSE filesystem
 ODRFS mounts an app bundle whose tagged asset packs are fetched from an
 HTTP origin (or a local directory) when a file is first opened, verified
 (SHA-256) and kept in a local cache; ls and stat never download anything.
 .
 This package holds the odrfs command (build, serve, mount, status, request,
 update, unmount, config, ...), the mount helper mount.odrfs for /etc/fstab,
 the systemd template unit odrfs@.service, and an autofs map that mounts the
 bundle configured in /etc/odrfs/bundles.d/NAME.conf at /odr/NAME on first
 access.
EOF
(cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"

deb="$output/odrfs_${version}_${arch}.deb"
rm -f "$deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
rm -rf "$work"

echo "package: lintian"
lint_status=0
lintian --fail-on error --tag-display-limit 0 "$deb" >"$output/lintian.log" 2>&1 || lint_status=$?
grep -v "running with root privileges" "$output/lintian.log" || true
((lint_status == 0)) || { echo "package: lintian reports errors (exit $lint_status)" >&2; exit 1; }
echo "package: $(du -h "$deb" | cut -f1) ($(stat -c %s "$deb") bytes), Depends: $depends"
echo "package: $(basename "$deb") in $((SECONDS - started)) s"
echo "$deb"
