import CFuse3

/// Builds libfuse's `fuse_lowlevel_ops` table.
///
/// Every entry is a closure that captures nothing (a C function pointer) and
/// recovers the `SessionContext` from the request's userdata. Copies are made
/// of everything libfuse lends for the duration of the call (`name`, the
/// fields of `fuse_file_info`) before the filesystem sees it.
///
/// Operations left nil (locks, ioctl, poll, bmap, lseek, write_buf) get
/// libfuse's default: ENOSYS, or the kernel handles them locally.
enum LowLevelOperations {
    static func make() -> fuse_lowlevel_ops {
        var ops = fuse_lowlevel_ops()
        ops.`init` = { userdata, connection in
            guard let userdata, let connection else { return }
            Unmanaged<SessionContext>.fromOpaque(userdata).takeUnretainedValue().initialize(&connection.pointee)
        }
        ops.destroy = { userdata in
            guard let userdata else { return }
            Unmanaged<SessionContext>.fromOpaque(userdata).takeUnretainedValue().destroyOnce()
        }
        addQueries(to: &ops)
        addFileOperations(to: &ops)
        addMutations(to: &ops)
        return ops
    }

    /// Names and inodes: lookup, forget, getattr, readlink, statfs, xattrs, access.
    private static func addQueries(to ops: inout fuse_lowlevel_ops) {
        ops.lookup = { request, parent, name in
            let name = String(cString: name!)
            dispatch(request, "lookup") { $0.lookup(parent: InodeNumber(parent), name: name, request: $1) }
        }
        // Inodes are static (see FUSEFileSystem), so lookup counts need no bookkeeping.
        ops.forget = { request, _, _ in
            fuse_reply_none(request)
        }
        ops.forget_multi = { request, _, _ in
            fuse_reply_none(request)
        }
        ops.getattr = { request, inode, _ in
            dispatch(request, "getattr") { $0.getAttributes(inode: InodeNumber(inode), request: $1) }
        }
        ops.readlink = { request, inode in
            dispatch(request, "readlink") { $0.readLink(inode: InodeNumber(inode), request: $1) }
        }
        ops.statfs = { request, inode in
            dispatch(request, "statfs") { $0.statistics(inode: InodeNumber(inode), request: $1) }
        }
        ops.getxattr = { request, inode, name, size in
            let name = String(cString: name!)
            dispatch(request, "getxattr") {
                $0.getExtendedAttribute(inode: InodeNumber(inode), name: name, size: size, request: $1)
            }
        }
        ops.listxattr = { request, inode, size in
            dispatch(request, "listxattr") { $0.listExtendedAttributes(inode: InodeNumber(inode), size: size, request: $1) }
        }
        ops.access = { request, inode, mask in
            dispatch(request, "access") { $0.access(inode: InodeNumber(inode), mask: mask, request: $1) }
        }
    }

    /// Open files and directories: open, read, release, flush, fsync, opendir, readdir(plus), releasedir.
    private static func addFileOperations(to ops: inout fuse_lowlevel_ops) {
        ops.open = { request, inode, info in
            let flags = OpenFlags(rawValue: info?.pointee.flags ?? 0)
            dispatch(request, "open") { $0.open(inode: InodeNumber(inode), flags: flags, request: $1) }
        }
        ops.read = { request, inode, size, offset, info in
            let handle = FileHandleID(info?.pointee.fh ?? 0)
            dispatch(request, "read") {
                $0.read(inode: InodeNumber(inode), handle: handle, offset: Int64(offset), size: size, request: $1)
            }
        }
        ops.release = { request, inode, info in
            let handle = FileHandleID(info?.pointee.fh ?? 0)
            dispatch(request, "release") { $0.release(inode: InodeNumber(inode), handle: handle, request: $1) }
        }
        // Nothing is ever dirty on a read-only filesystem. ENOSYS, not success:
        // the kernel then reports these as succeeded to the caller and never
        // sends them again, so `close` stops costing a round trip (W7: 3,200
        // flushes for 3,200 files before this).
        ops.flush = { request, _, _ in
            notImplemented(request, "flush")
        }
        ops.fsync = { request, _, _, _ in
            notImplemented(request, "fsync")
        }
        ops.fsyncdir = { request, _, _, _ in
            notImplemented(request, "fsyncdir")
        }
        ops.opendir = { request, inode, _ in
            if SessionContext.of(request!).skipsDirectoryOpens.load(ordering: .acquiring) {
                // With no-opendir the kernel keeps every listing in its cache
                // (FOPEN_KEEP_CACHE | FOPEN_CACHE_DIR) and stops the round trips.
                notImplemented(request, "opendir")
                return
            }
            dispatch(request, "opendir") { $0.openDirectory(inode: InodeNumber(inode), request: $1) }
        }
        ops.readdir = { request, inode, size, offset, info in
            let handle = FileHandleID(info?.pointee.fh ?? 0)
            dispatch(request, "readdir") {
                $0.readDirectory(inode: InodeNumber(inode), handle: handle, offset: Int64(offset), size: size, plus: false, request: $1)
            }
        }
        ops.readdirplus = { request, inode, size, offset, info in
            let handle = FileHandleID(info?.pointee.fh ?? 0)
            dispatch(request, "readdirplus") {
                $0.readDirectory(inode: InodeNumber(inode), handle: handle, offset: Int64(offset), size: size, plus: true, request: $1)
            }
        }
        ops.releasedir = { request, inode, info in
            let handle = FileHandleID(info?.pointee.fh ?? 0)
            dispatch(request, "releasedir") { $0.releaseDirectory(inode: InodeNumber(inode), handle: handle, request: $1) }
        }
    }

    /// Every operation that would change the filesystem goes to `rejectMutation`.
    private static func addMutations(to ops: inout fuse_lowlevel_ops) {
        ops.setattr = { request, _, _, _, _ in reject(request, "setattr") }
        ops.mknod = { request, _, _, _, _ in reject(request, "mknod") }
        ops.mkdir = { request, _, _, _ in reject(request, "mkdir") }
        ops.unlink = { request, _, _ in reject(request, "unlink") }
        ops.rmdir = { request, _, _ in reject(request, "rmdir") }
        ops.symlink = { request, _, _, _ in reject(request, "symlink") }
        ops.rename = { request, _, _, _, _, _ in reject(request, "rename") }
        ops.link = { request, _, _, _ in reject(request, "link") }
        ops.write = { request, _, _, _, _, _ in reject(request, "write") }
        ops.create = { request, _, _, _, _ in reject(request, "create") }
        ops.setxattr = { request, _, _, _, _, _ in reject(request, "setxattr") }
        ops.removexattr = { request, _, _ in reject(request, "removexattr") }
        ops.fallocate = { request, _, _, _, _, _ in reject(request, "fallocate") }
        ops.copy_file_range = { request, _, _, _, _, _, _, _, _ in reject(request, "copy_file_range") }
    }

}

// File-level rather than static members: a closure that calls a static method
// unqualified captures the metatype and can no longer be a C function pointer.

/// Wraps the raw request and hands it to `body` with the filesystem.
@inline(__always)
private func dispatch(_ request: fuse_req_t?, _ operation: StaticString, _ body: (any FUSEFileSystem, consuming FUSERequest) -> Void) {
    let raw = request!
    let context = SessionContext.of(raw)
    body(context.fileSystem, FUSERequest(raw: raw, context: context, operation: operation))
}

private func notImplemented(_ request: fuse_req_t?, _ operation: StaticString) {
    SessionContext.of(request!).send(request!, operation: operation) { Reply.error($0, .functionNotImplemented) }
}

private func reject(_ request: fuse_req_t?, _ operation: StaticString) {
    let name = "\(operation)"
    dispatch(request, operation) { $0.rejectMutation(name, request: $1) }
}
