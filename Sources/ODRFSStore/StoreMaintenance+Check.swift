import Dispatch
import Foundation
import ODRFSCore
import Synchronization

/// What `odrfs store fsck` found (and, with `--repair`, did).
public struct StoreCheck: Sendable, Equatable {
    /// Packs hashed, and their bytes.
    public var checked = 0
    public var bytes: Int64 = 0
    /// Packs whose SHA-256 is not their name (quarantined with `--repair`).
    public var mismatched: [String] = []
    /// Packs the store's index has no row for (recorded with `--repair`, once hashed right).
    public var unknown: [String] = []
    /// Rows whose file is gone (dropped with `--repair`).
    public var missing: [String] = []
    /// Files that could not be read (an I/O error: the check is incomplete).
    public var unreadable: [String] = []
    public var repaired = false

    /// Whether the store is clean.
    public var isClean: Bool { mismatched.isEmpty && unknown.isEmpty && missing.isEmpty && unreadable.isEmpty }
}

extension StoreMaintenance {
    /// Re-hashes every pack, passthrough copy, file index and manifest of the store at `root`
    /// (`threads` at once) against its name and
    /// compares the files with the index's rows. With `repair`: a pack that does not match
    /// moves to `quarantine/` (never served again; the next open fetches it) and its row
    /// goes; rows without a file are dropped; a right file without a row, or whose row
    /// records another identity, is recorded as it is now.
    public static func check(root: String, repair: Bool, threads: Int = ProcessInfo.processInfo.activeProcessorCount) throws(StoreError) -> StoreCheck {
        guard access(root + "/index.sqlite", F_OK) == 0, access(root + "/packs", F_OK) == 0 else {
            throw StoreError(.io, "\(root) is not an odrfs store (no index.sqlite and packs/)")
        }
        let index = try CacheIndex(path: root + "/index.sqlite")
        let rows = Dictionary(try index.allPacks().map { ($0.sha256, $0) }, uniquingKeysWith: { first, _ in first })
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: root + "/packs")) ?? []).filter {
            $0.hasSuffix(".tar") && ContentHash(hex: String($0.dropLast(4))) != nil
        }
        let copies = ((try? FileManager.default.contentsOfDirectory(atPath: root + "/files")) ?? []).filter { ContentHash(hex: $0) != nil }
        let metadata = metadataObjects(root: root)
        let hashed = hashAll(names.map { root + "/packs/" + $0 } + copies.map { root + "/files/" + $0 } + metadata.map(\.path), threads: threads)
        var check = StoreCheck()
        try checkCopies(copies, hashed: hashed, root: root, index: index, repair: repair, into: &check)
        checkMetadata(metadata, hashed: hashed, root: root, repair: repair, into: &check)
        var onDisk: Set<String> = []
        for name in names.sorted() {
            let hash = String(name.dropLast(4))
            onDisk.insert(hash)
            guard let result = hashed[root + "/packs/" + name], let digest = result.digest, let identity = result.identity else {
                check.unreadable.append(hash)
                continue
            }
            check.checked += 1
            check.bytes = check.bytes.saturatingAdd(identity.size)
            guard digest.hex == hash else {
                check.mismatched.append(hash)
                if repair { quarantine(root: root, name: name, index: index) }
                continue
            }
            if let row = rows[hash] {
                if repair, row.identity != identity || row.bytes != identity.size {
                    var updated = row
                    updated.bytes = identity.size
                    updated.fileSize = identity.size
                    updated.fileModifiedNanoseconds = identity.modifiedNanoseconds
                    updated.fileInode = identity.inode
                    try index.save(updated)
                }
            } else {
                check.unknown.append(hash)
                if repair, let sha = ContentHash(hex: hash) {
                    // Verified whole against its name just now; no chunk list is known, so a
                    // mount trusts it for a descriptor with this very SHA-256 only.
                    try index.save(CachedPack(sha256: sha, packID: PackID("(fsck)"), bytes: ByteCount(identity.size),
                                              firstFetch: Date(), identity: identity))
                }
            }
        }
        for hash in rows.keys.sorted() where !onDisk.contains(hash) {
            check.missing.append(hash)
            if repair { try index.removePack(sha256: hash) }
        }
        check.repaired = repair
        return check
    }

    /// SHA-256 and identity of every file in `paths`, `threads` at a time (reading is the cost).
    private static func hashAll(_ paths: [String], threads: Int) -> [String: (digest: ContentHash?, identity: FileIdentity?)] {
        let results = Mutex([String: (digest: ContentHash?, identity: FileIdentity?)]())
        let next = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: max(1, min(threads, paths.count))) { _ in
            while true {
                let position = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard position < paths.count else { return }
                let identity = FileIdentity.of(path: paths[position])
                let digest = PackStore.sha256(ofFileAt: paths[position])
                results.withLock { $0[paths[position]] = (digest, identity) }
            }
        }
        return results.withLock { $0 }
    }

    /// The store's passthrough copies: each must hash to its name; rows and files must agree.
    private static func checkCopies(_ names: [String], hashed: [String: (digest: ContentHash?, identity: FileIdentity?)], root: String,
                                    index: CacheIndex, repair: Bool, into check: inout StoreCheck) throws(StoreError) {
        let rows = Set(try index.fileCopies().map(\.sha256))
        for name in names.sorted() {
            guard let result = hashed[root + "/files/" + name], let digest = result.digest, let identity = result.identity else {
                check.unreadable.append(name)
                continue
            }
            check.checked += 1
            check.bytes = check.bytes.saturatingAdd(identity.size)
            if digest.hex != name {
                check.mismatched.append(name)
                if repair {
                    _ = mkdir(root + "/quarantine", 0o700)
                    if rename(root + "/files/" + name, root + "/quarantine/" + name + ".file." + String(UInt32.random(in: .min ... .max))) == 0 {
                        try index.removeFileCopy(sha256: name)
                    }
                }
            } else if !rows.contains(name) {
                check.unknown.append(name)
                if repair { try index.recordFileCopy(sha256: name, bytes: identity.size, at: Date()) }
            }
        }
        for name in rows.subtracting(names).sorted() {
            check.missing.append(name)
            if repair { try index.removeFileCopy(sha256: name) }
        }
    }

    /// The store's file index and manifest objects: `indexes/<sha256>.odrx`, `manifests/<sha256>.json`.
    private static func metadataObjects(root: String) -> [(path: String, hash: String, bundleLink: String)] {
        var objects: [(path: String, hash: String, bundleLink: String)] = []
        for (directory, suffix) in [("indexes", "." + FileIndex.fileExtension), ("manifests", ".json")] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: root + "/" + directory)) ?? [] where name.hasSuffix(suffix) {
                let hash = String(name.dropLast(suffix.count))
                guard ContentHash(hex: hash) != nil else { continue }
                objects.append((root + "/" + directory + "/" + name, hash, directory == "indexes" ? "index/" + name : Manifest.fileName))
            }
        }
        return objects
    }

    /// File indexes and manifests must hash to their names. With `repair`, a damaged one
    /// moves to `quarantine/` and every bundle's link to it goes: a mount then fetches the
    /// index again (it hashes a cached index before trusting it anyway), and a bundle without
    /// a manifest takes its origin's at its next mount.
    private static func checkMetadata(_ objects: [(path: String, hash: String, bundleLink: String)],
                                      hashed: [String: (digest: ContentHash?, identity: FileIdentity?)], root: String, repair: Bool,
                                      into check: inout StoreCheck) {
        for object in objects.sorted(by: { $0.path < $1.path }) {
            guard let result = hashed[object.path], let digest = result.digest, let identity = result.identity else {
                check.unreadable.append(object.hash)
                continue
            }
            check.checked += 1
            check.bytes = check.bytes.saturatingAdd(identity.size)
            guard digest.hex != object.hash else { continue }
            check.mismatched.append(object.hash)
            guard repair else { continue }
            for key in (try? FileManager.default.contentsOfDirectory(atPath: root + "/bundles")) ?? [] {
                let link = root + "/bundles/" + key + "/" + object.bundleLink
                if FileIdentity.of(path: link)?.inode == identity.inode { unlink(link) }
            }
            _ = mkdir(root + "/quarantine", 0o700)
            _ = rename(object.path, root + "/quarantine/" + (object.path as NSString).lastPathComponent + "." + String(UInt32.random(in: .min ... .max)))
        }
    }

    private static func quarantine(root: String, name: String, index: CacheIndex) {
        _ = mkdir(root + "/quarantine", 0o700)
        let destination = root + "/quarantine/" + name + "." + String(UInt32.random(in: .min ... .max))
        if rename(root + "/packs/" + name, destination) == 0 {
            try? index.removePack(sha256: String(name.dropLast(4)))
        }
    }
}
