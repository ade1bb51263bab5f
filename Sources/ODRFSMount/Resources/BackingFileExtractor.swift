import Crypto
import Foundation
import Logging
import ODRFSCore
import ODRFSStore
import Synchronization

/// Passthrough backing files: a large file's bytes copied out of its local, verified
/// pack into a file of its own (`files/<pack sha>.<offset>`), because the kernel's
/// FUSE passthrough reads a backing file from offset 0 and a pack is a tar with each
/// file at some offset.
///
/// Store layout, and why: only files of at least ``minimumSize`` (`--passthrough-min-size`) get one (the big
/// reads and mmaps that gain from the local filesystem's page cache; small files would
/// double the cache's file count for little), copied on their first open after their
/// pack is complete, off the FUSE thread, so that open and any open during the copy use
/// the FUSE read path. The copy comes from the published pack, which holds only verified
/// bytes; it is written under `tmp/` and renamed into `files/` under the cache ledger's
/// lock only if the pack is still local, and from then on counted in the cache's bytes
/// (the purger evicts it with its pack). No fsync: the files are derived, only this
/// mount's memory knows them, and the store deletes `files/` at startup, so a crash can
/// leave nothing that is trusted or uncounted.
///
/// In a machine-wide store the copies are the store's objects instead: named by the SHA-256
/// of the file's bytes (computed as they are copied, and kept only if it is the one the
/// verified index records), in the store's `files/`, shared by every bundle and kept across
/// mounts, counted in the store's index and purged by the store (first, being derived).
final class BackingFileExtractor: Sendable {
    /// Files smaller than this always use the FUSE read path.
    let minimumSize: ByteCount

    private struct Key: Hashable {
        var pack: PackNumber
        var offset: Int64
    }

    private let manager: ResourceManager
    private let inFlight = Mutex<Set<Key>>([])

    init(manager: ResourceManager, minimumSize: ByteCount) {
        self.manager = manager
        self.minimumSize = minimumSize
    }

    /// The backing file of the file at `extent` in `pack`, if it has been copied and
    /// the pack is still local; else nil, after starting the copy if the file is large
    /// enough and none is under way.
    func backingFile(pack: PackNumber, extent: PackExtent, digest: ContentHash?) -> String? {
        guard extent.size >= minimumSize.value else { return nil }
        if manager.store.isShared { return sharedBackingFile(pack: pack, extent: extent, digest: digest) }
        let index = Int(pack.rawValue)
        let (isLocal, isCopied) = manager.table.read { state in
            (state.slots[index].isLocal, state.slots[index].backingFiles[extent.offset] != nil)
        }
        guard isLocal else { return nil }
        let sha256 = manager.manifest.pack(pack).sha256.hex
        if isCopied {
            return manager.store.layout.backingFilePath(sha256: sha256, offset: extent.offset)
        }
        let key = Key(pack: pack, offset: extent.offset)
        guard inFlight.withLock({ $0.insert(key).inserted }) else { return nil }
        manager.io.submit { [self] in
            defer { _ = inFlight.withLock { $0.remove(key) } }
            copy(pack: pack, extent: extent)
        }
        return nil
    }

    /// In a store: the copy of the file with these bytes if the store has one (whichever
    /// bundle or mount made it); else nil, after starting the copy if its pack is local.
    /// An index before version 2 records no SHA-256: no copy.
    private func sharedBackingFile(pack: PackNumber, extent: PackExtent, digest: ContentHash?) -> String? {
        guard let digest else { return nil }
        let path = manager.store.layout.sharedFilePath(sha256: digest.hex)
        var info = stat()
        if stat(path, &info) == 0, Int64(info.st_size) == extent.size { return path }
        guard manager.table.read({ $0.slots[Int(pack.rawValue)].isLocal }) else { return nil }
        let key = Key(pack: pack, offset: extent.offset)
        guard inFlight.withLock({ $0.insert(key).inserted }) else { return nil }
        manager.io.submit { [self] in
            defer { _ = inFlight.withLock { $0.remove(key) } }
            copyShared(pack: pack, extent: extent, digest: digest)
        }
        return nil
    }

    /// Blocking: runs on the I/O executor. Copies the file's bytes out of its verified pack,
    /// hashing them, and places the copy in the store only if they hash to `digest`.
    private func copyShared(pack: PackNumber, extent: PackExtent, digest: ContentHash) {
        let descriptor = manager.manifest.pack(pack)
        let source = open(manager.store.path(of: descriptor), O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { return }
        defer { close(source) }
        guard let temporary = try? manager.store.makeTemporaryFile(label: "file-" + digest.hex.prefix(16)) else { return }
        var hasher = SHA256()
        guard Self.copyRange(from: source, offset: extent.offset, count: extent.size, to: temporary.descriptor, hashing: { hasher.update(bufferPointer: $0) }) else {
            temporary.discard()
            return
        }
        guard ContentHash(digest: hasher.finalize()) == digest else {
            manager.logger.warning("a file's bytes do not hash to the SHA-256 its index records: it is read without passthrough", metadata: [
                "pack.id": "\(descriptor.id)", "offset": "\(extent.offset)",
            ])
            temporary.discard()
            return
        }
        if manager.store.placeSharedFile(temporary, sha256: digest, bytes: extent.size, now: Date()) != nil {
            manager.logger.debug("passthrough copy placed in the store", metadata: ["pack.id": "\(descriptor.id)", "bytes": "\(extent.size)"])
        }
    }

    /// Blocking: runs on the I/O executor.
    private func copy(pack: PackNumber, extent: PackExtent) {
        let descriptor = manager.manifest.pack(pack)
        let sha256 = descriptor.sha256.hex
        let source = open(manager.store.path(of: descriptor), O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { return }  // evicted or still downloading: a later open tries again
        defer { close(source) }
        let temporary: TemporaryFile
        do {
            temporary = try manager.store.makeTemporaryFile(label: "file-" + sha256.prefix(16))
        } catch {
            manager.logger.warning("cannot create a passthrough backing file", metadata: ["pack.id": "\(descriptor.id)", "error": "\(error)"])
            return
        }
        guard Self.copyRange(from: source, offset: extent.offset, count: extent.size, to: temporary.descriptor) else {
            manager.logger.warning("cannot copy a file out of its pack for passthrough", metadata: [
                "pack.id": "\(descriptor.id)", "offset": "\(extent.offset)", "errno": "\(errno)",
            ])
            temporary.discard()
            return
        }
        let destination = manager.store.layout.backingFilePath(sha256: sha256, offset: extent.offset)
        // Renamed under the lock, like an eviction's rename into trash/: the file exists
        // in files/ exactly while the ledger counts it.
        let published = manager.table.attachBackingFile(pack, offset: extent.offset, bytes: extent.size) {
            rename(temporary.path, destination) == 0
        }
        if published {
            temporary.markPublishedByRename()
            manager.logger.debug("passthrough backing file ready", metadata: ["pack.id": "\(descriptor.id)", "bytes": "\(extent.size)"])
            manager.purger.wake(.afterDownload)
        } else {
            temporary.discard()
        }
    }

    /// Copies `count` bytes at `offset` of `source` to the start of `destination` with
    /// pread/write in 1 MiB blocks (Glibc's module does not export `copy_file_range`);
    /// true when all of them were copied (false on an error or a short pack).
    static func copyRange(from source: Int32, offset: Int64, count: Int64, to destination: Int32,
                          hashing: (UnsafeRawBufferPointer) -> Void = { _ in }) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var position = offset
        var remaining = count
        while remaining > 0 {
            let read = buffer.withUnsafeMutableBytes { pread(source, $0.baseAddress, Int(min(remaining, Int64($0.count))), off_t(position)) }
            if read < 0, errno == EINTR { continue }
            guard read > 0 else { return false }
            buffer.withUnsafeBytes { hashing(UnsafeRawBufferPointer(rebasing: $0[0..<read])) }
            var written = 0
            while written < read {
                let result = buffer.withUnsafeBytes { write(destination, $0.baseAddress! + written, read - written) }
                if result < 0, errno == EINTR { continue }
                guard result > 0 else { return false }
                written += result
            }
            position += Int64(read)
            remaining -= Int64(read)
        }
        return true
    }
}
