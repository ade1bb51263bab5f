/// What `odrfs variant` did: the reply to the `variant` operation, printed as is by
/// `odrfs variant --json` (which writes the keys in this order):
/// `{"variants": {"tcf": "astc", "locale": "it"}, "changed_packs": ["Level1[tcf=astc]"], "download_bytes": 1048576}`.
public struct VariantReport: Codable, Sendable, Equatable {
    /// The value each declared key serves now (its first preference).
    public var variants: [String: String]
    /// Ids of the packs the new selection serves that the old one did not.
    public var changedPacks: [String]
    /// Bytes downloaded before the switch: the new selection's packs replacing packs the
    /// mount had local or retained (others stay remote until used).
    public var downloadBytes: Int64

    /// A report.
    public init(variants: [String: String], changedPacks: [String], downloadBytes: Int64) {
        self.variants = variants
        self.changedPacks = changedPacks
        self.downloadBytes = downloadBytes
    }

    enum CodingKeys: String, CodingKey {
        case variants
        case changedPacks = "changed_packs"
        case downloadBytes = "download_bytes"
    }

    /// The contract's keys.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(variants, forKey: .variants)
        try container.encode(changedPacks, forKey: .changedPacks)
        try container.encode(downloadBytes, forKey: .downloadBytes)
    }
}
