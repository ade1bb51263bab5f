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

        /// A pack entry.
        public init(id: String, tags: [String], bytes: Int64, state: State, percent: Int? = nil, retainCount: Int = 0,
                    lastAccess: Date? = nil, preservationPriority: Double = 0, fetchCount: Int = 0) {
            self.id = id
            self.tags = tags
            self.bytes = bytes
            self.state = state
            self.percent = percent
            self.retainCount = retainCount
            self.lastAccess = lastAccess
            self.preservationPriority = preservationPriority
            self.fetchCount = fetchCount
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
        /// Bytes of verified packs on disk (this bundle's and older versions').
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

        /// Cache figures.
        public init(cachedBytes: Int64, reservedBytes: Int64 = 0, orphanBytes: Int64 = 0, budget: Int64? = nil,
                    minimumFree: Int64? = nil, availableBytes: Int64? = nil, inUseBytes: Int64 = 0,
                    maximumInUse: Int64, isOverBudget: Bool = false, evictionCount: Int = 0) {
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
        }
    }

    /// Every pack, in manifest order (base first).
    public var packs: [PackEntry]
    /// Every tag, in manifest order.
    public var tags: [TagEntry]
    /// The cache.
    public var cache: CacheEntry
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
