import Foundation
import Logging
import ODRFSCore

/// What startup reconciliation found and fixed.
public struct ReconcileReport: Sendable {
    /// Verified packs on disk, by content hash (including packs of other bundle versions).
    public var packs: [String: CachedPack] = [:]
    /// Rows whose file was missing: forgotten (those packs are remote again).
    public var missingFiles: [String] = []
    /// Files that were not in the index or had changed: hashed again and kept.
    public var reverified: [String] = []
    /// Files deleted: unrecorded and unknown, or failing verification.
    public var deleted: [String] = []
    /// With `deferringHashes`: this bundle's packs whose files needed a fresh hash, moved
    /// unhashed to `unverified/` (see `PackStore+Unverified.swift`); not local until then.
    public var unverified: [PackDescriptor] = []
}

extension PackStore {
    /// Makes the index and the files under `packs/` agree, after any crash:
    /// - a row whose file is missing is dropped (the pack is remote again);
    /// - a recorded file whose size, mtime or inode changed, or that was verified against
    ///   other chunk hashes than `expected` lists for it, is hashed again against `expected`
    ///   and kept only if it matches, else deleted;
    /// - a file with no row is hashed against `expected` (a crash between the rename
    ///   and the index write) and recorded, or deleted if unknown or wrong;
    /// - partial downloads in `tmp/` were already removed when the store opened.
    /// `expected` are the current bundle's packs; verified packs of other versions (and, in
    /// a store, of other bundles) stay: the manager decides which are garbage.
    ///
    /// `deferringHashes` (a mount starting, with nothing else using the store): files of
    /// `expected` that need a fresh hash are moved to `unverified/` instead, unread, so that
    /// a lost index (hashing ~2 s per GiB from disk) does not hold up the mount; copies left
    /// there by an earlier session are listed again. Without it, `unverified/` is left alone:
    /// it belongs to the manager that is verifying it.
    public func reconcile(expected: [PackDescriptor], chunkSize: ByteCount, now: Date = Date(),
                          deferringHashes: Bool = false) throws(StoreError) -> ReconcileReport {
        var report = ReconcileReport()
        let expectedByHash = Dictionary(expected.map { ($0.sha256.hex, $0) }, uniquingKeysWith: { first, _ in first })
        var records = Dictionary(try index.allPacks().map { ($0.sha256, $0) }, uniquingKeysWith: { first, _ in first })
        let names = (try? FileManager.default.contentsOfDirectory(atPath: layout.packsDirectory)) ?? []

        var filesOnDisk: Set<String> = []
        for name in names {
            let path = layout.packsDirectory + "/" + name
            guard name.hasSuffix(".tar"), let hash = ContentHash(hex: String(name.dropLast(4))) else {
                logger.warning("deleting unexpected file in the cache", metadata: ["path": "\(path)"])
                unlink(path)
                report.deleted.append(name)
                continue
            }
            filesOnDisk.insert(hash.hex)
            guard let identity = FileIdentity.of(path: path) else { continue }
            if let record = records[hash.hex], record.identity == identity, record.bytes == identity.size,
               expectedByHash[hash.hex].map(record.isVerified(for:)) ?? true {
                report.packs[hash.hex] = record
                continue
            }
            // Unrecorded, changed since it was verified, or verified against other chunks
            // than this bundle's descriptor lists: trust only a fresh check. In a store, a
            // file written in the last minute may be another mount's publication whose row
            // is on its way: left alone (not local for us), looked at by a later reconcile.
            if isShared, identity.modifiedNanoseconds > Self.nanoseconds(Date()) - Self.publicationGrace {
                continue
            }
            if deferringHashes, let pack = expectedByHash[hash.hex], rename(path, layout.unverifiedPath(of: pack)) == 0 {
                // Its row, if any, stays: the history is kept if the hash matches.
                report.unverified.append(pack)
                continue
            }
            guard let pack = expectedByHash[hash.hex], verify(path: path, as: pack, chunkSize: chunkSize) else {
                logger.warning("deleting cached pack that is unrecorded or fails verification", metadata: ["path": "\(path)"])
                unlink(path)
                if records.removeValue(forKey: hash.hex) != nil { try index.removePack(sha256: hash.hex) }
                report.deleted.append(hash.hex)
                continue
            }
            var record = records[hash.hex] ?? CachedPack(sha256: pack.sha256, packID: pack.id, bytes: pack.bytes, firstFetch: now, identity: identity)
            record.chunkList = pack.chunkListDigest.hex
            record.fileSize = identity.size
            record.fileModifiedNanoseconds = identity.modifiedNanoseconds
            record.fileInode = identity.inode
            try index.save(record)
            report.packs[hash.hex] = record
            report.reverified.append(hash.hex)
            logger.info("re-verified cached pack", metadata: ["pack.id": "\(pack.id)"])
        }
        if deferringHashes {
            listUnverified(expected: expectedByHash, into: &report, filesOnDisk: &filesOnDisk)
        }
        for (hash, record) in records where !filesOnDisk.contains(hash) {
            logger.warning("cache index lists a pack whose file is gone; it will be fetched again", metadata: ["pack.id": "\(record.packID)"])
            try index.removePack(sha256: hash)
            report.missingFiles.append(hash)
        }
        return report
    }

    /// One minute, in nanoseconds: how long a store's fresh file without a row is left to
    /// the mount publishing it.
    static let publicationGrace: Int64 = 60_000_000_000

    static func nanoseconds(_ date: Date) -> Int64 {
        Int64(exactly: (date.timeIntervalSince1970 * 1e9).rounded(.down)) ?? .max
    }

    /// Copies an earlier session left in `unverified/`: kept for verification if they are
    /// this bundle's and not verified in `packs/` already, else deleted.
    private func listUnverified(expected: [String: PackDescriptor], into report: inout ReconcileReport, filesOnDisk: inout Set<String>) {
        let listed = Set(report.unverified.map(\.sha256.hex))
        for name in (try? FileManager.default.contentsOfDirectory(atPath: layout.unverifiedDirectory)) ?? [] {
            let path = layout.unverifiedDirectory + "/" + name
            guard name.hasSuffix(".tar"), let hash = ContentHash(hex: String(name.dropLast(4))) else {
                unlink(path)
                continue
            }
            if listed.contains(hash.hex) { continue }
            guard let pack = expected[hash.hex], report.packs[hash.hex] == nil else {
                unlink(path)
                continue
            }
            report.unverified.append(pack)
            filesOnDisk.insert(hash.hex)
        }
    }

    /// Hashes the file at `path` and compares its size and chunk hashes with `pack`.
    func verify(path: String, as pack: PackDescriptor, chunkSize: ByteCount) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var verifier = PackVerifier(expected: pack, chunkSize: chunkSize)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(fd, buffer.baseAddress, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count < 0 { return false }
            if count == 0 { break }
            verifier.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
        do {
            try verifier.finish()
            return true
        } catch {
            return false
        }
    }
}
