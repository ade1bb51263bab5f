/// What `odrfs update` found (with `--check`) or did: the reply to the `update` operation,
/// printed as is by `odrfs update --json`. Keys are the contract's snake_case ones, in
/// this order:
/// `{"mounted_revision": 3, "available_revision": 4, "changed_packs": ["Italy"], "download_bytes": 1048576, "reused_bytes": 268435456}`,
/// plus `"switched": true` once a switch is done.
public struct UpdateReport: Codable, Sendable, Equatable {
    /// The revision the mount serves (before the switch, when there was one).
    public var mountedRevision: Int64
    /// The revision the origin's manifest has now.
    public var availableRevision: Int64
    /// Ids of the available revision's packs whose content differs from every pack of
    /// the mounted one (as `user.odrfs.pack` names them).
    public var changedPacks: [String]
    /// Bytes the update fetches: the spans of changed packs, local or retained now, that
    /// no local file already holds. Packs that are remote now stay remote.
    public var downloadBytes: Int64
    /// Bytes of those packs assembled from files the cache already holds.
    public var reusedBytes: Int64
    /// Set (true) once the mount serves the available revision.
    public var switched: Bool?

    /// A report.
    public init(mountedRevision: Int64, availableRevision: Int64, changedPacks: [String], downloadBytes: Int64,
                reusedBytes: Int64, switched: Bool? = nil) {
        self.mountedRevision = mountedRevision
        self.availableRevision = availableRevision
        self.changedPacks = changedPacks
        self.downloadBytes = downloadBytes
        self.reusedBytes = reusedBytes
        self.switched = switched
    }

    /// Whether the origin has a newer revision than the mount serves.
    public var isUpdateAvailable: Bool { availableRevision > mountedRevision }

    enum CodingKeys: String, CodingKey {
        case mountedRevision = "mounted_revision"
        case availableRevision = "available_revision"
        case changedPacks = "changed_packs"
        case downloadBytes = "download_bytes"
        case reusedBytes = "reused_bytes"
        case switched
    }

    /// In the contract's key order (an encoder without `.sortedKeys` keeps it).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(mountedRevision, forKey: .mountedRevision)
        try container.encode(availableRevision, forKey: .availableRevision)
        try container.encode(changedPacks, forKey: .changedPacks)
        try container.encode(downloadBytes, forKey: .downloadBytes)
        try container.encode(reusedBytes, forKey: .reusedBytes)
        try container.encodeIfPresent(switched, forKey: .switched)
    }
}
