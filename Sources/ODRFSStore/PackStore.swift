import Crypto
import Foundation
import Logging
import ODRFSCore
import Synchronization

/// The local cache of verified packs and file indexes: a private cache directory, or one
/// bundle's view of the machine-wide store (see the module documentation for the layout).
///
/// Invariants:
/// - A file under `packs/` or `index/` is complete and verified: it got there by
///   `publish`, which fsyncs the data and renames it atomically.
/// - A private cache has one process at a time (an exclusive `flock` on `lock`, held for
///   the life of this object), so `tmp/` can be emptied at startup. A store has any number
///   of mounts, each holding `lock` shared and its own `mounts/<id>/lock` exclusively; its
///   work directory (`tmp/`, `files/`) is its own, and a dead mount's is removed by the
///   next mount that starts (the kernel dropped its locks).
///
/// The store knows nothing about origins, retains or policy; the resource manager
/// decides what to download and the fetcher streams into `makeTemporaryFile()`.
public final class PackStore: Sendable {
    public let layout: CacheLayout
    /// The durable record of verified packs and their access times (in a store, shared by
    /// every bundle).
    public let index: CacheIndex
    /// The bundle's own durable memory: priority overrides, trusted revisions, traces. The
    /// same object as ``index`` in a private cache.
    public let bundleIndex: CacheIndex
    /// This mount's identity in a store; nil for a private cache.
    public let mountID: StoreMountID?
    private let lockDescriptor: Mutex<[Int32]>
    /// What the store's live mounts published, as last parsed (``liveMounts(includingThisMount:)``).
    let publishedMounts = Mutex<[String: PublishedMount]>([:])
    /// This mount's mirror of the store's pack and copy rows, for purge decisions.
    public let storeRows = StoreRows()
    let logger: Logger

    /// Whether this is a mount of a machine-wide store (shared with other mounts).
    public var isShared: Bool { mountID != nil }

    /// Opens (creating if needed) the private cache at `root` and takes its lock.
    public init(root: String, logger: Logger) throws(StoreError) {
        let layout = CacheLayout(root: root)
        for directory in [layout.root, layout.packsDirectory, layout.indexDirectory, layout.temporaryDirectory, layout.trashDirectory, layout.backingFilesDirectory,
                          layout.unverifiedDirectory] {
            try Self.makeDirectory(directory)
        }
        let fd = try Self.lock(layout.lockFile, exclusive: true, what: "cache directory \(root)")
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pid.withCString { pwrite(fd, $0, strlen($0), 0) }
        let index: CacheIndex
        do {
            index = try CacheIndex(path: layout.indexFile)
        } catch {
            Glibc.close(fd)
            throw error
        }
        self.layout = layout
        self.index = index
        bundleIndex = index
        mountID = nil
        self.lockDescriptor = Mutex([fd])
        self.logger = logger
        removeTemporaryFiles()
        removeBackingFiles()
    }

    /// Opens (creating if needed) the machine-wide store at `root` for the bundle named
    /// `bundle` (``CacheLayout/bundleKey(forOrigin:)``) as a new mount of it: takes the
    /// store's lock shared and this mount's own lock, removes what dead mounts left, and
    /// takes in the cache a release before the store left for this origin (`<root>/<bundle>`).
    public init(store root: String, bundle: String, logger: Logger) throws(StoreError) {
        let mountID = StoreMountID.make()
        let layout = CacheLayout(store: root, bundle: bundle, mount: mountID.rawValue)
        var descriptors: [Int32] = []
        let opened: (index: CacheIndex, bundleIndex: CacheIndex)
        do {
            for directory in [layout.root, layout.packsDirectory, layout.trashDirectory, layout.mountsDirectory, layout.sharedFilesDirectory,
                              layout.sharedIndexesDirectory, layout.sharedManifestsDirectory, layout.bundleRoot,
                              layout.indexDirectory, layout.unverifiedDirectory, layout.workRoot, layout.temporaryDirectory,
                              layout.backingFilesDirectory] {
                try Self.makeDirectory(directory)
            }
            descriptors.append(try Self.lock(layout.lockFile, exclusive: false, what: "store \(root)"))
            descriptors.append(try Self.lock(layout.mountLockFile, exclusive: true, what: "mount directory \(layout.workRoot)"))
            let adopted = try Self.takeInLegacyCache(at: root + "/" + bundle, into: layout, logger: logger)
            let index = try CacheIndex(path: layout.indexFile)
            opened = (index, try CacheIndex(path: layout.bundleIndexFile))
            Self.record(adopted, in: index, logger: logger)
        } catch {
            for fd in descriptors { Glibc.close(fd) }
            Self.removeTree(layout.workRoot)
            throw error
        }
        self.layout = layout
        index = opened.index
        bundleIndex = opened.bundleIndex
        self.mountID = mountID
        self.lockDescriptor = Mutex(descriptors)
        self.logger = logger
        removeDeadMounts()
        emptyTrash()
        removeAbandonedClaims()
        shareBundleMetadata()
    }

    deinit {
        releaseLock()
    }

    /// Releases the cache's locks so another mount may use this directory (a store mount's
    /// work directory goes with them). Idempotent; the store must not be used afterwards.
    public func releaseLock() {
        let released = lockDescriptor.withLock { descriptors in
            defer { descriptors = [] }
            return descriptors
        }
        guard !released.isEmpty else { return }
        if isShared { Self.removeTree(layout.workRoot) }
        for fd in released { Glibc.close(fd) }
    }

    /// Opens `path` and takes its `flock` (exclusive or shared), without waiting.
    static func lock(_ path: String, exclusive: Bool, what: String) throws(StoreError) -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.system("cannot open lock file", path: path) }
        guard flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0 else { return fd }
        let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        Glibc.close(fd)
        let who = holder.isEmpty ? "another process" : "process \(holder)"
        if exclusive {
            throw StoreError(.locked, "\(what) is already in use by \(who); use another --cache directory or unmount the other mount first")
        }
        throw StoreError(.locked, "\(what) is locked for exclusive use by \(who) (a private --cache mount of that directory, or an odrfs from before the store); unmount it first")
    }

    /// Whether `pack` is recorded in the index, verified against these chunks, and its
    /// file is in place (a verified copy).
    public func contains(_ pack: PackDescriptor) -> Bool {
        guard FileIdentity.of(path: layout.path(of: pack)) != nil,
              let record = try? index.pack(sha256: pack.sha256.hex) else { return false }
        return record.isVerified(for: pack)
    }

    /// Whether a verified copy of the file index is in the cache: its size and SHA-256 are
    /// checked again (a mount asks once), because a file in the cache may have been damaged
    /// or replaced since it was published, and the index is trusted with every pack number
    /// and offset. A copy that does not match is removed.
    public func contains(_ index: IndexReference) -> Bool {
        let path = layout.path(of: index)
        if isShared { linkSharedIndex(index) }
        guard index.bytes <= BundleLimits.maxIndexBytes, contains(path: path, bytes: index.bytes) else { return false }
        guard let digest = Self.sha256(ofFileAt: path), digest == index.sha256 else {
            logger.warning("removing cached file index whose SHA-256 does not match the manifest", metadata: ["path": "\(path)"])
            if isShared { unlinkSharedIndex(named: (path as NSString).lastPathComponent, ifSameAs: path) }
            unlink(path)
            return false
        }
        return true
    }

    /// SHA-256 of a whole file, streamed; nil if it cannot be read.
    static func sha256(ofFileAt path: String) -> ContentHash? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if n == 0 { return ContentHash(digest: hasher.finalize()) }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
    }

    private func contains(path: String, bytes: ByteCount) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        if Int64(info.st_size) != bytes.value || (info.st_mode & S_IFMT) != S_IFREG {
            logger.warning("removing cached file of unexpected size", metadata: ["path": "\(path)", "bytes.expected": "\(bytes.value)", "bytes.found": "\(info.st_size)"])
            unlink(path)
            return false
        }
        return true
    }

    /// The path of the cached copy of `pack` (which may not exist yet).
    public func path(of pack: PackDescriptor) -> String { layout.path(of: pack) }

    /// The path of the cached file index (which may not exist yet).
    public func path(of index: IndexReference) -> String { layout.path(of: index) }

    /// A new, empty file under `tmp/` for a download in progress.
    /// Blocking: call it on the I/O executor. With `readableSize`, the file also gets a
    /// read-only ``VerifiedFile`` of that final size for progressive readers.
    public func makeTemporaryFile(label: String, readableSize: Int64? = nil) throws(StoreError) -> TemporaryFile {
        var template = Array("\(layout.temporaryDirectory)/\(label).XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        guard fd >= 0 else { throw StoreError.system("cannot create temporary file in", path: layout.temporaryDirectory) }
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        guard let readableSize else { return TemporaryFile(path: path, descriptor: fd) }
        let reader = open(path, O_RDONLY | O_CLOEXEC)
        guard reader >= 0 else {
            let error = StoreError.system("cannot open for reading", path: path)
            Glibc.close(fd)
            unlink(path)
            throw error
        }
        return TemporaryFile(path: path, descriptor: fd, verified: VerifiedFile(descriptor: reader, size: readableSize, verified: 0))
    }

    /// Makes a fully written and verified temporary file durable and visible at
    /// `destination`: fsync the data, rename atomically, fsync the directory.
    public func publish(_ file: TemporaryFile, to destination: String) throws(StoreError) {
        let path = file.path
        guard fsync(file.descriptor) == 0 else {
            let error = StoreError.system("cannot fsync", path: path)
            file.discard()
            throw error
        }
        guard rename(path, destination) == 0 else {
            let error = StoreError.system("cannot rename into place", path: destination)
            file.discard()
            throw error
        }
        file.markPublished()
        let directory = (destination as NSString).deletingLastPathComponent
        let dirfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirfd >= 0 {
            _ = fsync(dirfd)
            Glibc.close(dirfd)
        }
    }

    /// Publishes a verified pack download and records it in the index. Returns its record.
    @discardableResult
    public func publish(_ file: TemporaryFile, as pack: PackDescriptor, at date: Date) throws(StoreError) -> CachedPack {
        let destination = layout.path(of: pack)
        switch isShared ? try placeShared(file, as: pack) : .renameIntoPlace {
        case .kept(let existing): return existing
        case .linked: break
        case .renameIntoPlace: try publish(file, to: destination)
        }
        guard let identity = FileIdentity.of(path: destination) else {
            throw StoreError.system("cannot stat published pack", path: destination)
        }
        let record = CachedPack(sha256: pack.sha256, packID: pack.id, bytes: pack.bytes, firstFetch: date, identity: identity,
                                chunkList: pack.chunkListDigest)
        do {
            try index.save(record)
        } catch {
            unlink(destination)
            throw error
        }
        return record
    }

    /// Bytes available to unprivileged users on the cache's filesystem (statvfs), if known.
    public func availableBytes() -> Int64? {
        var info = statvfs()
        guard statvfs(layout.root, &info) == 0 else { return nil }
        // Saturating: the numbers come from whatever filesystem the cache is on.
        let (bytes, overflow) = Int64(clamping: info.f_bavail).multipliedReportingOverflow(by: Int64(clamping: info.f_frsize))
        return overflow ? .max : bytes
    }

    private func removeTemporaryFiles() {
        if let names = try? FileManager.default.contentsOfDirectory(atPath: layout.temporaryDirectory) {
            for name in names {
                logger.info("removing partial download left by an earlier run", metadata: ["file": "\(name)"])
                unlink(layout.temporaryDirectory + "/" + name)
            }
        }
        emptyTrash()
    }

    /// Moves the cached copy of the pack named `sha256` out of `packs/` into `trash/`
    /// (one `rename(2)`, cheap enough to do under the resource manager's lock): from then on
    /// no open finds it and a new download of the same pack can be published without
    /// being deleted by a late unlink. Open descriptors keep reading the old inode.
    /// Returns whether a file was moved.
    @discardableResult
    public func moveToTrash(sha256: String) -> Bool {
        let name = sha256 + ".tar"
        let trashed = layout.trashDirectory + "/" + name + "." + String(Self.trashCounter.wrappingAdd(1, ordering: .relaxed).oldValue)
        return rename(layout.packsDirectory + "/" + name, trashed) == 0
    }

    private static let trashCounter = Atomic<UInt64>(0)

    /// Moves one passthrough backing file into `trash/` (one `rename(2)`, done under the
    /// resource manager's lock when its pack is evicted). Returns whether it was moved.
    @discardableResult
    public func moveBackingFileToTrash(sha256: String, offset: Int64) -> Bool {
        let trashed = layout.trashDirectory + "/" + sha256 + "." + String(offset) + ".file." + String(Self.trashCounter.wrappingAdd(1, ordering: .relaxed).oldValue)
        return rename(layout.backingFilePath(sha256: sha256, offset: offset), trashed) == 0
    }

    /// Backing files are copies of verified pack bytes that only the running mount's
    /// memory accounts for; whatever an earlier run left (a crash, a kill) is deleted, so
    /// the purger never has to trust or count a file it did not write.
    private func removeBackingFiles() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: layout.backingFilesDirectory) else { return }
        for name in names {
            unlink(layout.backingFilesDirectory + "/" + name)
        }
    }

    /// Deletes everything in `trash/`. Blocking (unlink of large files): run it on the I/O executor.
    public func emptyTrash() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: layout.trashDirectory) else { return }
        for name in names {
            unlink(layout.trashDirectory + "/" + name)
        }
    }

    static func makeDirectory(_ path: String) throws(StoreError) {
        // 0700: a store is one user's (root's serves root's mounts), its objects shared only
        // between that user's mounts.
        if mkdir(path, 0o700) == 0 || errno == EEXIST { return }
        if errno == ENOENT {
            try makeDirectory((path as NSString).deletingLastPathComponent)
            if mkdir(path, 0o700) == 0 || errno == EEXIST { return }
        }
        throw StoreError.system("cannot create cache directory", path: path)
    }
}
