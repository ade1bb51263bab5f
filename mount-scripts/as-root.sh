# Sourced by the scripts that need root (package installs, FUSE mounts, drop_caches):
# as root it does nothing; otherwise it runs the calling script again through sudo,
# keeping PATH (Swift may live outside sudo's secure_path) and the environment
# (ODRFS_*, CI). So `mount-scripts/test.sh` works as written both as root on a machine
# without sudo (most containers) and as a user with sudo; `sudo mount-scripts/test.sh`
# works too.
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
        exec sudo -E env "PATH=$PATH" "$0" "$@"
    fi
    echo "$(basename "$0"): needs root (package installs and FUSE mounts), and sudo is not installed: run it as root" >&2
    exit 1
fi
