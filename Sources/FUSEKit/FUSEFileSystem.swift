/// What a filesystem implements to be served by a `FUSESession`.
///
/// Every callback runs on one of libfuse's worker threads, several at once,
/// and receives a `FUSERequest` that must be answered exactly once: reply
/// before returning, or `detach()` it and answer the `DeferredRequest` later
/// from any thread or Task. Blocking inside a callback ties up a worker
/// thread; anything that may wait (a download) should detach instead.
///
/// Strings (`name`) are copies; nothing a callback receives points into
/// libfuse's memory, so it may all be kept after the callback returns.
///
/// Inodes are assumed to be static for the life of the mount (ODRFS derives
/// them from an immutable manifest). FUSEKit therefore answers the kernel's
/// `forget`/`forget_multi` itself and never reports lookup counts; a
/// filesystem whose inodes come and go would need that added.
public protocol FUSEFileSystem: AnyObject, Sendable {
    /// Called once from libfuse's `init`, before any request: adjust what to ask of the kernel.
    func configure(_ connection: inout ConnectionConfiguration)
    /// Resolve `name` in directory `parent`: `replyEntry`, `replyNegativeEntry` or an error (ENOENT).
    func lookup(parent: InodeNumber, name: String, request: consuming FUSERequest)
    /// `stat(2)`: `replyAttributes`.
    func getAttributes(inode: InodeNumber, request: consuming FUSERequest)
    /// A symlink's target: `replyReadlink`.
    func readLink(inode: InodeNumber, request: consuming FUSERequest)
    /// `open(2)` of a non-directory: `replyOpen` (possibly from a `DeferredRequest`) or an error.
    func open(inode: InodeNumber, flags: OpenFlags, request: consuming FUSERequest)
    /// Read up to `size` bytes at `offset`: `replyData` (zero-copy) or `replyBytes`; fewer bytes mean end of file.
    func read(inode: InodeNumber, handle: FileHandleID, offset: Int64, size: Int, request: consuming FUSERequest)
    /// The last close of an open file: `replySuccess`. Errors are ignored by the kernel.
    func release(inode: InodeNumber, handle: FileHandleID, request: consuming FUSERequest)
    /// `opendir(3)`: `replyOpen` with a handle the readdir calls get back.
    func openDirectory(inode: InodeNumber, request: consuming FUSERequest)
    /// One chunk of a listing starting after `offset` (0 = start): fill a
    /// `DirectoryBuffer` of `size` bytes (readdirplus when `plus`) and `replyDirectory`.
    func readDirectory(inode: InodeNumber, handle: FileHandleID, offset: Int64, size: Int, plus: Bool, request: consuming FUSERequest)
    /// The last close of a directory: `replySuccess`.
    func releaseDirectory(inode: InodeNumber, handle: FileHandleID, request: consuming FUSERequest)
    /// `statfs(2)`: `replyStatistics`.
    func statistics(inode: InodeNumber, request: consuming FUSERequest)
    /// `getxattr(2)`: with `size` 0 reply the value's length (`replyXattrSize`);
    /// otherwise `replyBytes`, or ERANGE when the value is longer than `size`.
    /// Names outside `user.` (`ls -l` asks for `security.*` and
    /// `system.posix_acl_*` on every file) should get `notSupported`.
    func getExtendedAttribute(inode: InodeNumber, name: String, size: Int, request: consuming FUSERequest)
    /// `listxattr(2)`: NUL-terminated names, same size protocol as `getExtendedAttribute`.
    func listExtendedAttributes(inode: InodeNumber, size: Int, request: consuming FUSERequest)
    /// `access(2)`; not called when mounted with `default_permissions`.
    func access(inode: InodeNumber, mask: Int32, request: consuming FUSERequest)
    /// Every mutating operation (setattr, mknod, mkdir, unlink, rmdir, symlink,
    /// rename, link, write, create, setxattr, removexattr, fallocate,
    /// copy_file_range) arrives here with libfuse's name for it.
    func rejectMutation(_ operation: String, request: consuming FUSERequest)
    /// The session is being torn down (libfuse's `destroy`); no request follows.
    func destroy()
}

/// Defaults that fit a read-only filesystem with static inodes, so a minimal
/// implementation needs only lookup, getAttributes, open and read.
extension FUSEFileSystem {
    public func configure(_ connection: inout ConnectionConfiguration) {}

    public func readLink(inode: InodeNumber, request: consuming FUSERequest) {
        // readlink on something that is not a symlink is EINVAL per readlink(2).
        request.replyError(.invalidArgument)
    }

    public func release(inode: InodeNumber, handle: FileHandleID, request: consuming FUSERequest) {
        request.replySuccess()
    }

    public func openDirectory(inode: InodeNumber, request: consuming FUSERequest) {
        request.replyOpen(handle: FileHandleID(0), options: OpenReplyOptions())
    }

    public func readDirectory(inode: InodeNumber, handle: FileHandleID, offset: Int64, size: Int, plus: Bool, request: consuming FUSERequest) {
        request.replyError(.notDirectory)
    }

    public func releaseDirectory(inode: InodeNumber, handle: FileHandleID, request: consuming FUSERequest) {
        request.replySuccess()
    }

    public func statistics(inode: InodeNumber, request: consuming FUSERequest) {
        request.replyStatistics(FileSystemStatistics())
    }

    public func getExtendedAttribute(inode: InodeNumber, name: String, size: Int, request: consuming FUSERequest) {
        request.replyError(.notSupported)
    }

    public func listExtendedAttributes(inode: InodeNumber, size: Int, request: consuming FUSERequest) {
        request.replyError(.notSupported)
    }

    public func access(inode: InodeNumber, mask: Int32, request: consuming FUSERequest) {
        request.replySuccess()
    }

    public func rejectMutation(_ operation: String, request: consuming FUSERequest) {
        request.replyError(.readOnlyFileSystem)
    }

    public func destroy() {}
}
