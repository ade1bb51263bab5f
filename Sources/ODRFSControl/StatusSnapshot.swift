import Foundation

/// Everything `odrfs status` shows: every pack, every tag and the cache's totals.
/// This is the stable JSON of `odrfs status --json` (dates in ISO 8601, UTC).
public struct StatusSnapshot: Codable, Sendable, Equatable {
    /// A pack's state as Xcode's On-Demand Resources debug gauge names it.
    public enum State: String, Codable, Sendable {
        /// On the origin only.
        case notDownloaded = "not-downloaded"
        /// A download is under way.
        case downloading
        /// Local and unretained: the purger may drop it.
        case downloaded
        /// Local and retained by an open file or a held request.
        case inUse = "in-use"
    }

    /// One pack.
    public struct PackEntry: Codable, Sendable, Equatable {
        /// The pack id: its tags joined by `+`, or `base`.
        public var id: String
        /// The tags whose files live in this pack.
        public var tags: [String]
        /// Its size.
        public var bytes: Int64
        /// Its state.
        public var state: State
        /// 0…100 while downloading, nil otherwise.
        public var percent: Int?
        /// Open files and held requests retaining it.
        public var retainCount: Int
        /// The last open or request of it, if any.
        public var lastAccess: Date?
        /// The highest preservation priority of its tags.
        public var preservationPriority: Double
        /// Completed downloads since the mount started.
        public var fetchCount: Int
        /// The variant of its files (`{"tcf": "astc"}`); absent outside every variant.
        public var variant: [String: String]?

        /// A pack entry.
        public init(id: String, tags: [String], bytes: Int64, state: State, percent: Int? = nil, retainCount: Int = 0,
                    lastAccess: Date? = nil, preservationPriority: Double = 0, fetchCount: Int = 0,
                    variant: [String: String]? = nil) {
            self.id = id
            self.tags = tags
            self.bytes = bytes
            self.state = state
            self.percent = percent
            self.retainCount = retainCount
            self.lastAccess = lastAccess
            self.preservationPriority = preservationPriority
            self.fetchCount = fetchCount
            self.variant = variant
        }
    }

    /// One tag, aggregated over its packs.
    public struct TagEntry: Codable, Sendable, Equatable {
        /// The tag.
        public var tag: String
        /// Ids of every pack its files live in (shared packs included).
        public var packs: [String]
        /// The sum of those packs' sizes.
        public var bytes: Int64
        /// `in-use` if any pack is, else `downloading` if any is, else `downloaded`
        /// if all are local, else `not-downloaded` (see ``aggregate(_:)``).
        public var state: State
        /// The tag's preservation priority.
        public var preservationPriority: Double

        /// A tag entry.
        public init(tag: String, packs: [String], bytes: Int64, state: State, preservationPriority: Double) {
            self.tag = tag
            self.packs = packs
            self.bytes = bytes
            self.state = state
            self.preservationPriority = preservationPriority
        }
    }

    /// Cache-wide figures.
    public struct CacheEntry: Codable, Sendable, Equatable {
        /// Bytes the cache holds against its budget: verified packs on disk (this bundle's
        /// and older versions'), their passthrough backing files, and the pinned file indexes
        /// and manifest (`metadataBytes`).
        public var cachedBytes: Int64
        /// Bytes reserved by downloads in flight.
        public var reservedBytes: Int64
        /// Bytes of packs of older bundle versions still cached.
        public var orphanBytes: Int64
        /// `--cache-size`, if set.
        public var budget: Int64?
        /// `--min-free`, if set.
        public var minimumFree: Int64?
        /// Free space on the cache's filesystem, if known.
        public var availableBytes: Int64?
        /// Bytes of retained packs.
        public var inUseBytes: Int64
        /// `--max-in-use`: tag requests beyond it are refused.
        public var maximumInUse: Int64
        /// Retained packs hold the cache above its budget.
        public var isOverBudget: Bool
        /// Packs evicted since the mount started.
        public var evictionCount: Int
        /// Bytes of packs received from the origin since the mount started, as they
        /// travelled: compressed for compressed packs, so less than the uncompressed
        /// sizes every other figure counts. Absent in snapshots of older daemons.
        public var wireBytes: Int64?
        /// Of `cachedBytes`, the file indexes (the mounted revision's, the one an update
        /// replaced, one an update check fetched) and the manifest: pinned, never purged,
        /// so packs get only the rest of the budget. Absent in snapshots of older daemons.
        public var metadataBytes: Int64?

        /// Cache figures.
        public init(cachedBytes: Int64, reservedBytes: Int64 = 0, orphanBytes: Int64 = 0, budget: Int64? = nil,
                    minimumFree: Int64? = nil, availableBytes: Int64? = nil, inUseBytes: Int64 = 0,
                    maximumInUse: Int64, isOverBudget: Bool = false, evictionCount: Int = 0, wireBytes: Int64? = nil,
                    metadataBytes: Int64? = nil) {
            self.cachedBytes = cachedBytes
            self.reservedBytes = reservedBytes
            self.orphanBytes = orphanBytes
            self.budget = budget
            self.minimumFree = minimumFree
            self.availableBytes = availableBytes
            self.inUseBytes = inUseBytes
            self.maximumInUse = maximumInUse
            self.isOverBudget = isOverBudget
            self.evictionCount = evictionCount
            self.wireBytes = wireBytes
            self.metadataBytes = metadataBytes
        }
    }

    /// Every pack, in manifest order (base first).
    public var packs: [PackEntry]
    /// Every tag, in manifest order.
    public var tags: [TagEntry]
    /// The cache.
    public var cache: CacheEntry
    /// False while no origin server answers (or with `--offline`): only cached packs open.
    public var online = true
    /// When an origin server last answered, possibly in an earlier mount; nil if never.
    public var lastOriginContact: Date?
    /// Every origin server with its state, round-trip time and errors; empty for a local dist dir.
    public var mirrors: [MirrorEntry] = []
    /// The manifest revision the mount serves (`"revision"`).
    public var revision: Int64?
    /// The revision the origin offered at the last update check; null before a check
    /// (`"available_revision"`).
    public var availableRevision: Int64?
    /// When the origin was last asked for updates; null before a check (`"last_update_check"`).
    public var lastUpdateCheck: Date?
    /// The value each variant key serves (`{"tcf": "astc", "locale": "it"}`); empty when
    /// the bundle declares no variants (`"variants"`).
    public var variants: [String: String] = [:]

    enum CodingKeys: String, CodingKey {
        case packs, tags, cache, online, mirrors, revision, readPath, variants
        case lastOriginContact = "last_origin_contact"
        case availableRevision = "available_revision"
        case lastUpdateCheck = "last_update_check"
    }

    /// Like the synthesized encoding, except that fields whose null means something are
    /// written as `null` when unknown: scripts can tell "never checked" or "never reached"
    /// from an old daemon that does not know the field.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(packs, forKey: .packs)
        try container.encode(tags, forKey: .tags)
        try container.encode(cache, forKey: .cache)
        try container.encode(online, forKey: .online)
        try container.encode(lastOriginContact, forKey: .lastOriginContact)
        try container.encode(mirrors, forKey: .mirrors)
        try container.encodeIfPresent(revision, forKey: .revision)
        try container.encode(availableRevision, forKey: .availableRevision)
        try container.encode(lastUpdateCheck, forKey: .lastUpdateCheck)
        try container.encode(variants, forKey: .variants)
        try container.encodeIfPresent(readPath, forKey: .readPath)
    }

    /// Decodes a snapshot; fields newer daemons added default when absent (an older daemon
    /// answering a newer client).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        packs = try container.decode([PackEntry].self, forKey: .packs)
        tags = try container.decode([TagEntry].self, forKey: .tags)
        cache = try container.decode(CacheEntry.self, forKey: .cache)
        online = try container.decodeIfPresent(Bool.self, forKey: .online) ?? true
        lastOriginContact = try container.decodeIfPresent(Date.self, forKey: .lastOriginContact)
        mirrors = try container.decodeIfPresent([MirrorEntry].self, forKey: .mirrors) ?? []
        revision = try container.decodeIfPresent(Int64.self, forKey: .revision)
        availableRevision = try container.decodeIfPresent(Int64.self, forKey: .availableRevision)
        lastUpdateCheck = try container.decodeIfPresent(Date.self, forKey: .lastUpdateCheck)
        variants = try container.decodeIfPresent([String: String].self, forKey: .variants) ?? [:]
        readPath = try container.decodeIfPresent(String.self, forKey: .readPath)
    }
    /// How the mount serves reads of local files: `passthrough` (the kernel reads backing
    /// files directly) or `fuse (…why not…)`; absent from daemons that do not say.
    public var readPath: String? = nil

    /// A snapshot.
    public init(packs: [PackEntry], tags: [TagEntry], cache: CacheEntry) {
        self.packs = packs
        self.tags = tags
        self.cache = cache
    }

    /// A snapshot whose tag entries are derived from `packs` and `tagPriorities`
    /// (tags in the order given there; a pack belongs to each tag it lists).
    public init(packs: [PackEntry], tagPriorities: [(tag: String, priority: Double)], cache: CacheEntry) {
        // One pass over the packs, not one per tag: bundles may have 10,000 of each.
        var membersByTag: [String: [PackEntry]] = [:]
        for pack in packs {
            for tag in pack.tags { membersByTag[tag, default: []].append(pack) }
        }
        let tags = tagPriorities.map { tag, priority in
            let members = membersByTag[tag] ?? []
            return TagEntry(tag: tag, packs: members.map(\.id), bytes: members.reduce(0) { $0 + $1.bytes },
                            state: Self.aggregate(members.map(\.state)), preservationPriority: priority)
        }
        self.init(packs: packs, tags: tags, cache: cache)
    }

    /// A tag's state from its packs' states.
    public static func aggregate(_ states: [State]) -> State {
        if states.contains(.inUse) { return .inUse }
        if states.contains(.downloading) { return .downloading }
        if !states.isEmpty && states.allSatisfy({ $0 == .downloaded }) { return .downloaded }
        return .notDownloaded
    }
}
