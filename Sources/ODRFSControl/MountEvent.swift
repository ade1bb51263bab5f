import Foundation

/// One thing a mount did, as `odrfs events --json` prints it and `BundleResourceRequest`
/// subscribers receive it: a fetch starting, progressing, finishing or failing, a pack
/// evicted (with why and by which rule), retained or released, or free space running low.
///
/// The JSON form is part of the contract (one object per line, keys sorted):
/// `{"bytes": 123, "event": "evicted", "pack": "Level1", "reason": "cache-size", "rule": "…", "tags": ["Level1"], "time": "2026-11-23T10:00:00.123Z"}`.
/// `time` is ISO 8601 UTC with milliseconds; fields an event does not use are absent.
public struct MountEvent: Codable, Sendable, Equatable {
    /// The kinds of events (the `event` field).
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// A download left the queue and started; `bytes` is the pack's size.
        case fetchStarted = "fetch-started"
        /// Bytes of a download arrived; `bytes` is the total received so far, `total` the pack's size.
        /// Coalesced for slow readers: only the latest per pack is kept.
        case fetchProgress = "fetch-progress"
        /// A download was verified and published; `bytes` is the pack's size.
        case fetchFinished = "fetch-finished"
        /// A download failed; `reason` is the error's kind, `message` what happened.
        case fetchFailed = "fetch-failed"
        /// A pack was deleted from the cache; `reason` is an ``EvictionReason``, `rule` how it was chosen.
        case evicted
        /// A pack went into use (its first retain: an open file or a held tag request).
        case retained
        /// A pack's last retain ended: it may be evicted again.
        case released
        /// Free space on the cache's filesystem fell below `--min-free`; `bytes` is what is free.
        case lowDiskSpace = "low-disk-space"
    }

    /// Why a pack was evicted (the `reason` of `evicted` events and the `reason` label of
    /// `odrfs_evictions_total`).
    public enum EvictionReason: String, Codable, Sendable, CaseIterable {
        /// The cache was over `--cache-size`.
        case cacheSize = "cache-size"
        /// The cache's filesystem had less than `--min-free` available (or not even room
        /// for the pack being fetched).
        case minFree = "min-free"
        /// `odrfs purge` or `BundleResourceRequest` asked for it.
        case manual
        /// A new bundle revision no longer needs the pack.
        case update
    }

    /// When it happened.
    public var time: Date
    /// What happened.
    public var event: Kind
    /// The pack's id (e.g. `Level1+Level2`); absent on `low-disk-space`.
    public var pack: String?
    /// The pack's tags.
    public var tags: [String]?
    /// Bytes: the pack's size, bytes received so far (progress) or bytes free (low disk space).
    public var bytes: Int64?
    /// Progress events: the pack's size.
    public var total: Int64?
    /// `evicted`: an ``EvictionReason`` raw value; `fetch-failed`: the error's kind.
    public var reason: String?
    /// `evicted`: the rule that chose this pack.
    public var rule: String?
    /// `fetch-failed`: the error as logged.
    public var message: String?

    /// An event; set the optional fields it uses.
    public init(time: Date = Date(), event: Kind, pack: String? = nil, tags: [String]? = nil, bytes: Int64? = nil) {
        self.time = time
        self.event = event
        self.pack = pack
        self.tags = tags
        self.bytes = bytes
    }

    private enum CodingKeys: String, CodingKey {
        case time, event, pack, tags, bytes, total, reason, rule, message
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let text = try container.decode(String.self, forKey: .time)
        if let time = try? Date(text, strategy: Self.timeFormat) {
            self.time = time
        } else if let time = try? Date(text, strategy: .iso8601) {
            self.time = time
        } else {
            throw DecodingError.dataCorruptedError(forKey: .time, in: container, debugDescription: "time must be an ISO 8601 date, not \"\(text.prefix(40))\"")
        }
        event = try container.decode(Kind.self, forKey: .event)
        pack = try container.decodeIfPresent(String.self, forKey: .pack)
        tags = try container.decodeIfPresent([String].self, forKey: .tags)
        bytes = try container.decodeIfPresent(Int64.self, forKey: .bytes)
        total = try container.decodeIfPresent(Int64.self, forKey: .total)
        reason = try container.decodeIfPresent(String.self, forKey: .reason)
        rule = try container.decodeIfPresent(String.self, forKey: .rule)
        message = try container.decodeIfPresent(String.self, forKey: .message)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        // Milliseconds, whatever date strategy the encoder has: events come faster than seconds.
        try container.encode(time.formatted(Self.timeFormat), forKey: .time)
        try container.encode(event, forKey: .event)
        try container.encodeIfPresent(pack, forKey: .pack)
        try container.encodeIfPresent(tags, forKey: .tags)
        try container.encodeIfPresent(bytes, forKey: .bytes)
        try container.encodeIfPresent(total, forKey: .total)
        try container.encodeIfPresent(reason, forKey: .reason)
        try container.encodeIfPresent(rule, forKey: .rule)
        try container.encodeIfPresent(message, forKey: .message)
    }

    /// ISO 8601 in UTC with milliseconds: `2026-11-23T10:00:00.123Z`.
    static let timeFormat = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)

    /// The one-line JSON form `odrfs events --json` prints (without its newline).
    public var jsonLine: Data {
        // Encoding these fields cannot fail (strings, integers and a formatted date).
        (try? ControlProtocol.makeEncoder().encode(self)) ?? Data()
    }
}
