import Foundation
import ODRFSCore

/// What a machine-wide store holds, read from its files for the operator's tools
/// (`odrfs store status`, `list`, `gc`, `evict`, `fsck`), while mounts use it: its objects,
/// its bundles (with the packs each names: its cached manifest's and its live mounts'
/// references) and its live mounts. Everything read is bounded and checked (manifests
/// through `Manifest.decode`, records by size); what does not parse is skipped.
/// Blocking (directory listings, SQLite, optionally one lock probe per pack): run it in a
/// command or on an I/O executor.
public struct StoreInventory: Sendable {
    /// The kinds of objects a store keeps.
    public enum Kind: String, Sendable, Codable {
        case pack, file, index, manifest
    }

    /// One stored object.
    public struct Object: Sendable {
        public var kind: Kind
        public var sha256: String
        public var bytes: Int64
        public var path: String
        /// The bundles (keys) that reference it.
        public var bundles: [String]
        /// Whether a mount holds it (packs only; false when holds were not probed).
        public var retained: Bool
        public var lastUse: Date?
    }

    /// One bundle of the store.
    public struct Bundle: Sendable {
        /// Its directory under `bundles/` (the hash of its origin).
        public var key: String
        /// Its cached manifest's bundle identity, if the manifest has one.
        public var identity: BundleIdentity?
        public var origin: String?
        /// The revision of its cached manifest, if that parses.
        public var revision: Int64?
        /// The SHA-256 (hex) of the file index its cached manifest names, if that parses.
        public var currentIndex: String?
        /// Its live mounts.
        public var mounts: [MountRecord]
        /// Content hashes of the packs it names: its cached manifest's, and what its live
        /// mounts recorded (another revision, another variant view).
        public var packs: Set<String>
        /// Its base packs (never purged while it is mounted).
        public var basePacks: Set<String>
        /// Its cached file indexes and manifest, as objects.
        public var metadata: [Object]
    }

    public let root: String
    public var objects: [Object]
    public var bundles: [Bundle]
    public var configuration: StoreConfiguration

    /// Reads the store at `root`; `probingHolds` also asks every pack's lock whether a
    /// mount holds it (a non-blocking probe). Fails when `root` is not a store.
    public static func read(root: String, probingHolds: Bool = true) throws(StoreError) -> StoreInventory {
        guard access(root + "/index.sqlite", F_OK) == 0, access(root + "/packs", F_OK) == 0 else {
            throw StoreError(.io, "\(root) is not an odrfs store (no index.sqlite and packs/)")
        }
        let configuration = try StoreConfiguration.read(storeRoot: root)
        let index = try CacheIndex(path: root + "/index.sqlite")
        let rows = Dictionary(try index.allPacks().map { ($0.sha256, $0) }, uniquingKeysWith: { first, _ in first })
        var bundles = readBundles(root: root)
        let live = liveMounts(root: root)
        for (position, bundle) in bundles.enumerated() {
            for mount in live where mount.record.bundle == bundle.key {
                bundles[position].mounts.append(mount.record)
                bundles[position].packs.formUnion(mount.references)
            }
        }
        var referencing: [String: [String]] = [:]
        for bundle in bundles {
            for hash in bundle.packs { referencing[hash, default: []].append(bundle.key) }
        }
        var objects: [Object] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: root + "/packs")) ?? [] {
            guard name.hasSuffix(".tar"), let hash = ContentHash(hex: String(name.dropLast(4))) else { continue }
            let path = root + "/packs/" + name
            var info = stat()
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            objects.append(Object(kind: .pack, sha256: hash.hex, bytes: Int64(info.st_size), path: path,
                                  bundles: (referencing[hash.hex] ?? []).sorted(),
                                  retained: probingHolds && PackStore.isHeld(path: path), lastUse: rows[hash.hex]?.lastAccess))
        }
        let copies = Dictionary(((try? index.fileCopies()) ?? []).map { ($0.sha256, $0.lastAccess) }, uniquingKeysWith: { first, _ in first })
        for name in (try? FileManager.default.contentsOfDirectory(atPath: root + "/files")) ?? [] {
            guard let hash = ContentHash(hex: name) else { continue }
            var info = stat()
            let path = root + "/files/" + name
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            // A passthrough copy: derived from whichever pack holds these bytes, named by no bundle.
            objects.append(Object(kind: .file, sha256: hash.hex, bytes: Int64(info.st_size), path: path, bundles: [], retained: false,
                                  lastUse: copies[hash.hex] ?? nil))
        }
        objects += sharedMetadata(root: root, bundles: bundles)
        return StoreInventory(root: root, objects: objects.sorted { ($0.kind.rawValue, $0.sha256) < ($1.kind.rawValue, $1.sha256) },
                              bundles: bundles.sorted { $0.key < $1.key }, configuration: configuration)
    }

    /// The bundles under `bundles/`, each with what its cached manifest names.
    static func readBundles(root: String) -> [Bundle] {
        var bundles: [Bundle] = []
        for key in (try? FileManager.default.contentsOfDirectory(atPath: root + "/bundles")) ?? [] {
            let directory = root + "/bundles/" + key
            var bundle = Bundle(key: key, identity: nil, origin: nil, revision: nil, currentIndex: nil, mounts: [], packs: [], basePacks: [], metadata: [])
            bundle.origin = PackStore.boundedContents(of: directory + "/origin", limit: 64 << 10).map { String(decoding: $0, as: UTF8.self) }
            let manifestPath = directory + "/" + Manifest.fileName
            if let data = PackStore.boundedContents(of: manifestPath, limit: Int(Manifest.maximumBytes.value)), let manifest = try? Manifest.decode(data) {
                bundle.revision = manifest.revision
                bundle.identity = manifest.bundle
                bundle.currentIndex = manifest.index.sha256.hex
                bundle.packs = Set(manifest.packs.map(\.sha256.hex))
                bundle.basePacks = Set(manifest.basePacks.map { manifest.pack($0).sha256.hex })
                bundle.metadata.append(Object(kind: .manifest, sha256: ContentHash.of(data).hex, bytes: Int64(data.count),
                                              path: manifestPath, bundles: [key], retained: false, lastUse: nil))
            }
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory + "/index")) ?? [] {
                guard name.hasSuffix("." + FileIndex.fileExtension),
                      let hash = ContentHash(hex: String(name.dropLast(FileIndex.fileExtension.count + 1))) else { continue }
                var info = stat()
                let path = directory + "/index/" + name
                guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
                bundle.metadata.append(Object(kind: .index, sha256: hash.hex, bytes: Int64(info.st_size), path: path,
                                              bundles: [key], retained: false, lastUse: nil))
            }
            bundles.append(bundle)
        }
        return bundles
    }

    /// The file indexes and manifests, each once: the store's objects (`indexes/`,
    /// `manifests/`, referenced by the bundles that link them, unreferenced when none does)
    /// and what a bundle holds that is no object yet (a store of the previous layout).
    static func sharedMetadata(root: String, bundles: [Bundle]) -> [Object] {
        var merged: [String: Object] = [:]
        for bundle in bundles {
            for object in bundle.metadata {
                let key = object.kind.rawValue + object.sha256
                if merged[key] == nil { merged[key] = object } else { merged[key]!.bundles.append(bundle.key) }
            }
        }
        let directories: [(Kind, String, String)] = [(.index, "/indexes", "." + FileIndex.fileExtension), (.manifest, "/manifests", ".json")]
        for (kind, directory, suffix) in directories {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: root + directory)) ?? [] {
                guard name.hasSuffix(suffix), let hash = ContentHash(hex: String(name.dropLast(suffix.count))) else { continue }
                let path = root + directory + "/" + name
                var info = stat()
                guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
                let key = kind.rawValue + hash.hex
                if merged[key] == nil {
                    merged[key] = Object(kind: kind, sha256: hash.hex, bytes: Int64(info.st_size), path: path, bundles: [], retained: false, lastUse: nil)
                } else {
                    merged[key]!.path = path
                }
            }
        }
        return merged.values.map { object in
            var object = object
            object.bundles.sort()
            return object
        }
    }

    /// The live mounts of the store: their records and the packs their revisions name.
    static func liveMounts(root: String) -> [(record: MountRecord, references: Set<String>)] {
        var mounts: [(record: MountRecord, references: Set<String>)] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: root + "/mounts")) ?? [] {
            let directory = root + "/mounts/" + name
            guard PackStore.isLive(mountDirectory: directory),
                  let data = PackStore.boundedContents(of: directory + "/mount.json", limit: MountRecord.limit),
                  let record = MountRecord(parsing: data) else { continue }
            let references = PackStore.boundedContents(of: directory + "/references", limit: MountReferences.limit)
                .map { Set(MountReferences(parsing: $0).packs.keys) } ?? []
            mounts.append((record, references))
        }
        return mounts
    }

    /// Packs no bundle references (neither a cached manifest nor a live mount): garbage.
    public var unreferencedPacks: [Object] {
        objects.filter { $0.kind == .pack && $0.bundles.isEmpty }
    }
}
