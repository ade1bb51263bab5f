import Foundation
import Logging
import ODRFSCore

/// One mount of a machine-wide store: `<pid>-<16 hex digits>`, the name of its directory
/// under `mounts/`. The random part keeps a reused pid from naming a live mount's directory.
public struct StoreMountID: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    static func make() -> StoreMountID {
        StoreMountID(rawValue: "\(getpid())-" + String(format: "%016llx", UInt64.random(in: .min ... .max)))
    }

    public var description: String { rawValue }
}

/// A shared `flock` on one pack file, held while this process retains the pack, so that
/// another mount of the store never evicts it (``PackStore/moveToTrashUnlessHeld(sha256:)``
/// asks for the file's lock exclusively and gives up if it cannot have it). The kernel
/// drops the lock when the descriptor closes: on release, on deinit, or when the process
/// dies, so a mount killed with -9 holds nothing.
public final class PackHold: Sendable {
    private let descriptor: Int32

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }
}

/// What ``PackStore/moveToTrashUnlessHeld(sha256:)`` did.
public enum TrashOutcome: Sendable, Equatable {
    /// The file is in `trash/` now.
    case moved
    /// There was no file (already evicted, or never there).
    case absent
    /// Another mount retains it: left in place.
    case held
}

extension PackStore {
    // MARK: Retains across mounts

    /// Takes a shared lock on the pack file named `sha256`, for as long as the returned
    /// hold lives. Nil in a private cache (one process: the ledger's count is enough) and
    /// when the file is gone or was evicted while this waited (the open that follows finds
    /// it missing and downloads it again). Called when a retained pack is local: an
    /// `open(2)` and a `flock(2)` that waits at most for an eviction's rename or an
    /// operator's probe (``isHeld(sha256:)``), each a few system calls long.
    public func hold(sha256: String) -> PackHold? {
        guard isShared else { return nil }
        let path = layout.packsDirectory + "/" + sha256 + ".tar"
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var locked = flock(fd, LOCK_SH)
        while locked != 0 && errno == EINTR { locked = flock(fd, LOCK_SH) }
        // Locked after an eviction renamed it away: that file is not the pack any more.
        var held = stat(), named = stat()
        guard locked == 0, fstat(fd, &held) == 0, stat(path, &named) == 0, held.st_ino == named.st_ino, held.st_dev == named.st_dev else {
            close(fd)
            return nil
        }
        return PackHold(descriptor: fd)
    }

    /// Whether a mount holds the pack named `sha256` now (a probe: the exclusive lock taken
    /// without waiting and let go at once). False when there is no such file.
    public func isHeld(sha256: String) -> Bool {
        Self.isHeld(path: layout.packsDirectory + "/" + sha256 + ".tar")
    }

    static func isHeld(path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return flock(fd, LOCK_EX | LOCK_NB) != 0
    }

    /// Moves the pack named `sha256` into `trash/` unless a mount of the store holds it
    /// (``hold(sha256:)``): the exclusive lock is taken without waiting and kept across the
    /// rename, so no hold can start on the file in between. In a private cache, the same as
    /// ``moveToTrash(sha256:)``.
    public func moveToTrashUnlessHeld(sha256: String) -> TrashOutcome {
        guard isShared else { return moveToTrash(sha256: sha256) ? .moved : .absent }
        let fd = open(layout.packsDirectory + "/" + sha256 + ".tar", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .absent }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return .held }
        return moveToTrash(sha256: sha256) ? .moved : .absent
    }

    /// Whether another mount of the store published a verified copy of `pack` that its
    /// row still vouches for (same file identity, verified against the same chunks): then a
    /// download of it is a local fetch. Always false in a private cache, whose one mount
    /// knows what it published. Blocking (stat, SQLite): on the I/O executor.
    public func hasVerifiedCopy(of pack: PackDescriptor) -> Bool {
        guard isShared, let identity = FileIdentity.of(path: layout.path(of: pack)),
              let row = try? index.pack(sha256: pack.sha256.hex) else { return false }
        return row.identity == identity && row.bytes == identity.size && row.isVerified(for: pack) && row.chunkList == pack.chunkListDigest.hex
    }

    /// How a store places a verified download (``placeShared(_:as:)``).
    enum SharedPlacement {
        /// Linked under its name (nothing was there); the temporary name is gone.
        case linked
        /// Another mount's copy, vouched for by its row, stays; this file was dropped.
        case kept(CachedPack)
        /// A file whose row is not written yet is there: replace it, as a private cache does.
        case renameIntoPlace
    }

    /// In a store, two mounts may download one pack at once. The second to finish must not
    /// rename its copy over the first's: a mount holding the first file (``hold(sha256:)``)
    /// would then hold a file no longer in `packs/`. So the copy is linked into place only
    /// if no file is there; if one is and its row vouches for it, that one stays and this
    /// download's file is dropped (its readers keep reading their descriptors of it: the
    /// same verified bytes).
    func placeShared(_ file: TemporaryFile, as pack: PackDescriptor) throws(StoreError) -> SharedPlacement {
        let destination = layout.path(of: pack)
        guard fsync(file.descriptor) == 0 else {
            let error = StoreError.system("cannot fsync", path: file.path)
            file.discard()
            throw error
        }
        if link(file.path, destination) == 0 {
            unlink(file.path)
            file.markPublished()
            let directory = open(layout.packsDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if directory >= 0 {
                _ = fsync(directory)
                close(directory)
            }
            return .linked
        }
        guard errno == EEXIST, hasVerifiedCopy(of: pack), let row = try? index.pack(sha256: pack.sha256.hex) else { return .renameIntoPlace }
        logger.info("another mount of the store published this pack first; keeping its copy", metadata: ["pack.id": "\(pack.id)"])
        file.discard()
        return .kept(row)
    }

    // MARK: Passthrough copies

    /// Places a verified passthrough copy (`file`, its bytes hashing to `sha256`) in the
    /// store's `files/` and records it: linked under its name if none is there (another
    /// mount's copy of the same bytes is as good), the temporary name removed. Returns the
    /// path. Blocking: on the I/O executor.
    public func placeSharedFile(_ file: TemporaryFile, sha256: ContentHash, bytes: Int64, now: Date) -> String? {
        let destination = layout.sharedFilePath(sha256: sha256.hex)
        guard link(file.path, destination) == 0 || errno == EEXIST else {
            logger.warning("cannot place a passthrough copy in the store", metadata: ["path": "\(destination)", "errno": "\(errno)"])
            file.discard()
            return nil
        }
        file.discard()
        do {
            try index.recordFileCopy(sha256: sha256.hex, bytes: bytes, at: now)
        } catch {
            logger.warning("cannot record a passthrough copy", metadata: ["error": "\(error)"])
        }
        return destination
    }

    /// Moves the store's passthrough copy named `sha256` into `trash/` and forgets it (a
    /// passthrough open keeps reading it until its last close). Returns whether it moved.
    @discardableResult
    public func removeSharedFile(sha256: String) -> Bool {
        let trashed = layout.trashDirectory + "/" + sha256 + ".file." + String(UInt32.random(in: .min ... .max))
        let moved = rename(layout.sharedFilePath(sha256: sha256), trashed) == 0
        try? index.removeFileCopy(sha256: sha256)
        return moved
    }

    // MARK: References

    /// Records the packs this mount's revision names, each with its preservation priority
    /// and whether it is a base pack, and whether the mount is running (retains anything),
    /// replacing what it recorded before: other mounts do not count these packs as garbage,
    /// and a store-wide purge orders them by this mount's priorities
    /// (``StorePurgePlan``). Blocking (a write and a rename): on the I/O executor.
    public func recordReferences(_ packs: [(sha256: String, priority: Double, isBase: Bool)], running: Bool) {
        guard isShared else { return }
        let text = MountReferences.text(packs, running: running)
        let temporary = layout.referencesFile + ".new"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]),
              rename(temporary, layout.referencesFile) == 0 else {
            logger.warning("cannot record this mount's references in the store", metadata: ["path": "\(layout.referencesFile)"])
            return
        }
    }

    /// The content hashes that live mounts of the store other than this one recorded
    /// (``recordReferences(_:running:)``). A mount is live while its lock is held. Blocking:
    /// on the I/O executor. Empty in a private cache.
    public func referencesOfOtherMounts() -> Set<String> {
        Set(mountedBundles(includingThisMount: false).flatMap(\.packs.keys))
    }

    /// What the live mounts of the store recorded, one entry per mount, as the store-wide
    /// purge takes it. Blocking: on the I/O executor.
    public func mountedBundles(includingThisMount: Bool = true) -> [StorePurgePlan.MountedBundle] {
        liveMounts(includingThisMount: includingThisMount).bundles
    }

    /// The store's live mounts (this one included unless told otherwise) and what each
    /// published, in one pass over `mounts/`. A mount's files are parsed again only when
    /// they changed (their inode, size or time): a purge decision over twenty mounts then
    /// costs twenty `stat`s and lock probes, not twenty parses. Blocking: on the I/O executor.
    public func liveMounts(includingThisMount: Bool = true) -> (ids: [String], bundles: [StorePurgePlan.MountedBundle]) {
        guard isShared else { return ([], []) }
        var ids: [String] = [], bundles: [StorePurgePlan.MountedBundle] = []
        var seen: [String: PublishedMount] = [:]
        let cached = publishedMounts.withLock { $0 }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: layout.mountsDirectory)) ?? [] {
            if !includingThisMount && name == mountID?.rawValue { continue }
            let directory = layout.mountsDirectory + "/" + name
            guard name == mountID?.rawValue || Self.isLive(mountDirectory: directory) else { continue }
            ids.append(name)
            let stamp = PublishedMount.Stamp(references: directory + "/references", record: directory + "/mount.json")
            if let known = cached[name], known.stamp == stamp {
                seen[name] = known
                bundles.append(known.bundle)
                continue
            }
            guard let data = Self.boundedContents(of: directory + "/references", limit: MountReferences.limit) else { continue }
            let record = Self.boundedContents(of: directory + "/mount.json", limit: MountRecord.limit).flatMap(MountRecord.init(parsing:))
            let references = MountReferences(parsing: data)
            let bundle = StorePurgePlan.MountedBundle(key: record?.bundle ?? name, running: references.running, packs: references.packs)
            seen[name] = PublishedMount(stamp: stamp, bundle: bundle)
            bundles.append(bundle)
        }
        publishedMounts.withLock { $0 = seen }
        return (ids, bundles)
    }

}

/// What one live mount published, parsed, with the stamp of the files it came from.
struct PublishedMount: Sendable {
    /// Inode, size and modification time of a mount's `references` and `mount.json`: they
    /// are replaced by rename, so a new version has a new inode.
    struct Stamp: Equatable, Sendable {
        var references: [Int64]
        var record: [Int64]

        init(references: String, record: String) {
            self.references = Self.of(references)
            self.record = Self.of(record)
        }

        private static func of(_ path: String) -> [Int64] {
            var info = stat()
            guard stat(path, &info) == 0 else { return [] }
            return [Int64(bitPattern: UInt64(info.st_ino)), Int64(info.st_size), Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec)]
        }
    }

    var stamp: Stamp
    var bundle: StorePurgePlan.MountedBundle
}

extension PackStore {

    // MARK: Dead mounts

    /// Whether the mount owning `directory` still holds its lock.
    static func isLive(mountDirectory directory: String) -> Bool {
        let fd = open(directory + "/lock", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return flock(fd, LOCK_SH | LOCK_NB) != 0
    }

    /// Removes the work directories of mounts that died without cleaning up (kill -9, a
    /// crash): their partial downloads and backing files, which only they accounted for.
    /// The dead mount's lock is taken first, so two starting mounts never both remove one.
    func removeDeadMounts() {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: layout.mountsDirectory)) ?? [] where name != mountID?.rawValue {
            let directory = layout.mountsDirectory + "/" + name
            let fd = open(directory + "/lock", O_RDONLY | O_CLOEXEC)
            if fd >= 0 {
                defer { close(fd) }
                guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            } else {
                // No lock yet: a mount may be starting right now; only an old one is dead.
                var info = stat()
                guard lstat(directory, &info) == 0, time(nil) - info.st_mtim.tv_sec > 60 else { continue }
            }
            logger.info("removing what a dead mount of the store left", metadata: ["mount": "\(name)"])
            Self.removeTree(directory)
        }
    }

    /// Deletes `path` and everything under it (no symlink is followed). Best effort.
    static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
                removeTree(path + "/" + name)
            }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}
