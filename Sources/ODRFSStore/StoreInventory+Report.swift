import Foundation

/// `odrfs store status --json`: the store's limits and totals, and one entry per bundle.
/// The field names are the contract (scripts read them).
public struct StoreStatus: Codable, Sendable, Equatable {
    /// One bundle of the store.
    public struct BundleEntry: Codable, Sendable, Equatable {
        /// The bundle's identity from its manifest ("com.example.Game"); `null` for a manifest
        /// built before identities existed.
        public var bundle: String?
        /// Its directory in the store (the hash of its origin; see `CacheLayout.bundleKey`):
        /// one identity served from two origins is two entries.
        public var key: String
        public var origin: String?
        public var revision: Int64?
        public var mounted: Bool
        public var mountpoints: [String]
        /// Whether any of its mounts retains anything (an open file, a held request).
        public var running: Bool
        /// Bytes of the objects it references (shared ones counted in full for each bundle).
        public var bytes: Int64
        public var retainedBytes: Int64
        public var lastUse: Date?

        enum CodingKeys: String, CodingKey {
            case bundle, key, origin, revision, mounted, mountpoints, running, bytes
            case retainedBytes = "retained_bytes"
            case lastUse = "last_use"
        }

        /// Every field, unknown ones as `null`: scripts look for them by name.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(bundle, forKey: .bundle)
            try container.encode(key, forKey: .key)
            try container.encode(origin, forKey: .origin)
            try container.encode(revision, forKey: .revision)
            try container.encode(mounted, forKey: .mounted)
            try container.encode(mountpoints, forKey: .mountpoints)
            try container.encode(running, forKey: .running)
            try container.encode(bytes, forKey: .bytes)
            try container.encode(retainedBytes, forKey: .retainedBytes)
            try container.encode(lastUse, forKey: .lastUse)
        }
    }

    public var store: String
    public var cacheSize: Int64?
    public var minFree: Int64?
    /// Bytes of every object, each counted once.
    public var bytes: Int64
    public var objects: Int
    /// Bytes of objects two or more bundles reference.
    public var sharedBytes: Int64
    /// What deduplication saved: for each object, its bytes once per bundle beyond the first.
    public var savedBytes: Int64
    public var bundles: [BundleEntry]

    enum CodingKeys: String, CodingKey {
        case store, bytes, objects, bundles
        case cacheSize = "cache_size"
        case minFree = "min_free"
        case sharedBytes = "shared_bytes"
        case savedBytes = "saved_bytes"
    }

    /// Every field, no limit as `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(store, forKey: .store)
        try container.encode(cacheSize, forKey: .cacheSize)
        try container.encode(minFree, forKey: .minFree)
        try container.encode(bytes, forKey: .bytes)
        try container.encode(objects, forKey: .objects)
        try container.encode(sharedBytes, forKey: .sharedBytes)
        try container.encode(savedBytes, forKey: .savedBytes)
        try container.encode(bundles, forKey: .bundles)
    }
}

/// One line of `odrfs store list --json`.
public struct StoreListEntry: Codable, Sendable, Equatable {
    public var kind: StoreInventory.Kind
    public var sha256: String
    public var bytes: Int64
    public var bundles: [String]
    public var retained: Bool
    public var lastUse: Date?

    enum CodingKeys: String, CodingKey {
        case kind, sha256, bytes, bundles, retained
        case lastUse = "last_use"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encode(sha256, forKey: .sha256)
        try container.encode(bytes, forKey: .bytes)
        try container.encode(bundles, forKey: .bundles)
        try container.encode(retained, forKey: .retained)
        try container.encode(lastUse, forKey: .lastUse)
    }
}

extension StoreInventory {
    /// The status report. Sums saturate: sizes come from whatever the filesystem reports.
    public var status: StoreStatus {
        var total: Int64 = 0, shared: Int64 = 0, saved: Int64 = 0
        for object in objects {
            total = total.saturatingAdd(object.bytes)
            if object.bundles.count > 1 {
                shared = shared.saturatingAdd(object.bytes)
                saved = saved.saturatingAdd(object.bytes.saturatingMultiply(Int64(object.bundles.count - 1)))
            }
        }
        let packs = Dictionary(objects.filter { $0.kind == .pack }.map { ($0.sha256, $0) }, uniquingKeysWith: { first, _ in first })
        let entries = bundles.map { bundle -> StoreStatus.BundleEntry in
            var bytes: Int64 = 0, retained: Int64 = 0
            var lastUse: Date?
            for hash in bundle.packs {
                guard let object = packs[hash] else { continue }
                bytes = bytes.saturatingAdd(object.bytes)
                if object.retained && !bundle.mounts.isEmpty { retained = retained.saturatingAdd(object.bytes) }
                if let used = object.lastUse, used > (lastUse ?? .distantPast) { lastUse = used }
            }
            for object in bundle.metadata { bytes = bytes.saturatingAdd(object.bytes) }
            return StoreStatus.BundleEntry(bundle: bundle.identity?.rawValue, key: bundle.key, origin: bundle.origin, revision: bundle.revision, mounted: !bundle.mounts.isEmpty,
                                           mountpoints: bundle.mounts.map(\.mountpoint).sorted(), running: retained > 0,
                                           bytes: bytes, retainedBytes: retained, lastUse: lastUse)
        }
        return StoreStatus(store: root, cacheSize: configuration.cacheSize, minFree: configuration.minFree, bytes: total,
                           objects: objects.count, sharedBytes: shared, savedBytes: saved, bundles: entries)
    }

    /// The list report, optionally only the objects the bundle `name` references (its
    /// identity, origin or key: ``bundles(named:)``). Each object names the bundles that
    /// reference it by identity (by key when their manifest has none), each once.
    public func list(bundle name: String? = nil) -> [StoreListEntry] {
        let chosen = name.map { Set(bundles(named: $0).map(\.key)) }
        let names = Dictionary(bundles.map { ($0.key, $0.identity?.rawValue ?? $0.key) }, uniquingKeysWith: { first, _ in first })
        return objects.filter { object in chosen.map { !$0.isDisjoint(with: object.bundles) } ?? true }.map {
            StoreListEntry(kind: $0.kind, sha256: $0.sha256, bytes: $0.bytes, bundles: Array(Set($0.bundles.map { names[$0] ?? $0 })).sorted(),
                           retained: $0.retained, lastUse: $0.lastUse)
        }
    }

    /// The bundles an operator means by `name`: its identity (every origin of it), its
    /// origin, or its key in the store.
    public func bundles(named name: String) -> [Bundle] {
        bundles.filter { $0.identity?.rawValue == name || $0.origin == name || $0.key == name }
    }
}

extension Int64 {
    func saturatingAdd(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }

    func saturatingMultiply(_ other: Int64) -> Int64 {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? .max : product
    }
}
