import Foundation
import FUSEKit
import Logging
import ODRFSCore

/// The ODRFS filesystem: the bundle's tree from the file index, file contents from
/// packs that the resource manager makes local on open.
///
/// How requests flow:
/// - Metadata (lookup, getattr, readdir, readlink, xattrs, statfs) is answered from
///   the memory-mapped file index and never fetches anything.
/// - open() asks the resource manager for a `PackReader` (a retain plus the pack file
///   with its verified prefix). If the file's first bytes are verified it answers at
///   once; otherwise the request is detached and answered by the manager's callback,
///   from the I/O thread that verified the bytes — no task has to be scheduled. A FUSE
///   interrupt withdraws only that waiter and answers EINTR from the interrupt path.
/// - read() replies with a descriptor-backed buffer (splice when the kernel allows)
///   at the file's offset inside its pack, but only below the verified prefix of the
///   reader's own file; past it, the reply waits for those bytes (same callbacks).
///   `keep_cache` lets repeat reads come from the page cache.
/// - Passthrough: an open of a large file (≥ `--passthrough-min-size`, 1 MiB) whose pack is local is answered
///   with its backing file (`BackingFileExtractor`), so the kernel serves reads and
///   mmap from the cache's filesystem and never asks again; the open still retains
///   the pack and counts as an access. Otherwise, and whenever the kernel refuses, the
///   FUSE read path below.
/// - release() drops the handle's reader, which drops the retain.
///
/// This type holds no policy: decisions about packs live in `ResourceManager`, and
/// errors become errnos in one place, `Errno.init(mapping:)`.
public final class BundleFileSystem: FUSEFileSystem {
    let index: FileIndex
    let manager: ResourceManager
    let logger: Logger
    let inodes: InodeMap
    let attributes: AttributeFactory
    /// Open files and virtual files: shared by every revision of the mount, so a handle
    /// opened before an update is read and released as usual after it.
    let virtualFiles: VirtualFileTable
    let readers: ReaderTable
    /// Per-file copies of large files for FUSE passthrough.
    let backingFiles: BackingFileExtractor
    /// `--passthrough` and `--passthrough-min-size`, the same for every revision.
    let passthroughSettings: PassthroughSettings
    /// Readdir or readdirplus, and which entries a readdirplus reply links (issue 28);
    /// shared by every revision, as its evidence is about the walkers, not the tree.
    let listingPolicy: DirectoryListingPolicy
    /// The bundle's size in 4 KiB blocks for statfs, summed once (a `df` loop must not walk the packs).
    let totalBlocks: UInt64
    /// The variant of each file that came from a variant directory (`user.odrfs.variant`).
    let variantOfEntry: [EntryNumber: VariantAssignment]

    public convenience init(index: FileIndex, manager: ResourceManager, logger: Logger, passthrough: PassthroughSettings = PassthroughSettings(),
                            variantOfEntry: [EntryNumber: VariantAssignment] = [:]) {
        self.init(index: index, manager: manager, logger: logger, inodes: InodeMap(entryCount: index.entryCount), previous: nil,
                  passthrough: passthrough, variantOfEntry: variantOfEntry)
    }

    /// The file system of a revision; after an update, `previous` is the one it replaces,
    /// whose open files, virtual files, mount time and passthrough settings it takes over.
    init(index: FileIndex, manager: ResourceManager, logger: Logger, inodes: InodeMap, previous: BundleFileSystem?,
         passthrough: PassthroughSettings = PassthroughSettings(), variantOfEntry: [EntryNumber: VariantAssignment] = [:]) {
        self.index = index
        self.variantOfEntry = variantOfEntry
        self.manager = manager
        self.logger = logger
        self.inodes = inodes
        self.readers = previous?.readers ?? ReaderTable()
        self.virtualFiles = previous?.virtualFiles ?? VirtualFileTable()
        self.passthroughSettings = previous?.passthroughSettings ?? passthrough
        self.listingPolicy = previous?.listingPolicy ?? DirectoryListingPolicy(mode: DirectoryListingMode.current)
        self.backingFiles = BackingFileExtractor(manager: manager, minimumSize: passthroughSettings.minimumSize)
        // Saturating and bounded by manifest validation, so the rounding cannot overflow.
        self.totalBlocks = (UInt64(manager.manifest.totalBytes.value) + 4095) / 4096
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        self.attributes = AttributeFactory(
            inodes: inodes, uid: getuid(), gid: getgid(),
            mountTime: previous?.attributes.mountTime ?? Timespec(seconds: Int64(now.tv_sec), nanoseconds: UInt32(now.tv_nsec))
        )
    }

    public func configure(_ connection: inout ConnectionConfiguration) {
        connection.spliceWrite = true
        connection.spliceMove = true
        listingPolicy.mode.apply(to: &connection)
        connection.asyncRead = true
        connection.parallelDirectoryOperations = true
        connection.cacheSymlinks = true
        // The tree is fixed for the life of the mount: listings can live in
        // the kernel's cache with no opendir/releasedir round trips (W6).
        connection.noOpenDirectorySupport = true
        // Files never change either (content-addressed packs), so reads need
        // not check attributes for an mtime change (W5's 4 KiB preads).
        connection.autoInvalidateData = false
        // Large files of local packs are then read by the kernel from their own backing
        // files (needs CAP_SYS_ADMIN; otherwise, and for files still streaming in, the
        // FUSE read path below serves them). `--passthrough off` never asks.
        connection.passthrough = passthroughSettings.mode == .auto
        // Readahead of a file still streaming in waits for its bytes, and every such
        // read holds one of the kernel's background slots (12 by default). RELEASE is a
        // background request too: with a dozen readers waiting on downloads, closes would
        // queue in the kernel, keeping their handles' retains and pack descriptors (seen
        // as 292 open pack files under 64 readers in the storm test on a loaded machine).
        connection.maxBackground = 64
        connection.congestionThreshold = 48
    }

    public func rejectMutation(_ operation: String, request: consuming FUSERequest) {
        request.replyError(.readOnlyFileSystem)
    }

    /// Attributes and entry parameters for `node`, or nil if the inode is unknown.
    func entryParameters(for node: InodeMap.Node) -> EntryReplyParameters? {
        switch node {
        case .entry(let number):
            guard let entry = index.entry(number) else { return nil }
            return EntryReplyParameters(
                attributes: attributes.attributes(of: entry, number: number),
                entryTimeout: AttributeFactory.bundleTimeout,
                attributeTimeout: AttributeFactory.bundleTimeout
            )
        case .controlDirectory:
            return EntryReplyParameters(
                attributes: attributes.controlDirectory,
                entryTimeout: AttributeFactory.bundleTimeout,
                attributeTimeout: AttributeFactory.bundleTimeout
            )
        case .statusFile:
            // Its content changes all the time; it is served with direct_io.
            return EntryReplyParameters(attributes: attributes.statusFile, entryTimeout: AttributeFactory.bundleTimeout, attributeTimeout: 0)
        }
    }
}
