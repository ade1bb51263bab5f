import CFuse3
import Dispatch
import Glibc

extension FUSESession {
    /// Calls `fuse_session_new` with a C argv built from `arguments`.
    /// libfuse copies the operations table and parses the options into its
    /// own storage, so everything here may be freed afterwards.
    static func makeSession(arguments: [String], operations: inout fuse_lowlevel_ops, userdata: UnsafeMutableRawPointer) -> OpaquePointer? {
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        defer {
            for argument in argv {
                free(argument)
            }
        }
        return argv.withUnsafeMutableBufferPointer { buffer in
            var args = fuse_args(argc: Int32(buffer.count), argv: buffer.baseAddress, allocated: 0)
            // fuse_opt_parse may replace args with an allocated copy; free that copy, not ours.
            defer { fuse_opt_free_args(&args) }
            return cfuse3_session_new(&args, &operations, MemoryLayout<fuse_lowlevel_ops>.size, userdata)
        }
    }

    /// Checks what fuse_session_mount would only report vaguely.
    static func checkMountpoint(_ mountpoint: String) throws(FUSEError) {
        func failure(_ message: String, _ errno: Errno? = nil) -> FUSEError {
            FUSEError(operation: .mount, mountpoint: mountpoint, errno: errno, message: message)
        }
        var device = stat()
        if stat("/dev/fuse", &device) != 0 {
            throw failure("/dev/fuse is missing: load the kernel module (modprobe fuse) or give the container the device (--device /dev/fuse --cap-add SYS_ADMIN)", .current)
        }
        var target = stat()
        if stat(mountpoint, &target) != 0 {
            let error = Errno.current
            switch error {
            case .noSuchFileOrDirectory:
                throw failure("the mountpoint does not exist; create it first (mkdir -p)", error)
            case Errno(ENOTCONN):
                throw failure("a stale FUSE mount is still attached here (its daemon exited); detach it with 'fusermount3 -u \(mountpoint)'", error)
            case .permissionDenied:
                throw failure("permission denied while looking up the mountpoint", error)
            default:
                throw failure("cannot stat the mountpoint", error)
            }
        }
        guard target.st_mode & S_IFMT == S_IFDIR else {
            throw failure("the mountpoint is not a directory")
        }
        var parent = stat()
        let isMountRoot = stat(mountpoint + "/..", &parent) == 0
            && (parent.st_dev != target.st_dev || parent.st_ino == target.st_ino)
        if isMountRoot {
            throw failure("something is already mounted here (busy); unmount it first ('fusermount3 -u \(mountpoint)' or umount)", Errno(EBUSY))
        }
    }

    /// Makes one request reach the daemon so a worker notices `fuse_session_exit`.
    /// Runs off the caller's thread: if the loop is wedged, only this thread waits,
    /// and it is released when teardown closes the connection.
    static func wakeLoop(mountpoint: String) {
        DispatchQueue.global().async {
            var statistics = statvfs()
            _ = statvfs(mountpoint, &statistics)
        }
    }
}
