import Foundation

/// One line of an access trace: a pack the first time a mount session needed it, by
/// what, and when. `odrfs trace` writes an array of these in first-need order, and
/// `odrfs build --prefetch-from` reads them back (see ``AccessTrace``).
///
/// JSON (the contract): `{"pack": "Level1", "tags": ["Level1"], "cause": "open",
/// "first_file": "levels/1/map.bin", "seconds_since_mount": 0.42}`; `first_file` is null
/// when no open caused it. `--sessions N` adds `"session"`, counting from 1 for the oldest.
public struct TraceEntry: Codable, Sendable, Equatable {
    /// What first needed the pack.
    public enum Cause: String, Codable, Sendable, CaseIterable {
        /// A program opened one of its files.
        case open
        /// A tag request (`odrfs request`, `BundleResourceRequest`).
        case request
        /// The manifest's (or the learned) prefetch list. Not a demand: learning ignores it.
        case prefetch
        /// The initial-install tags, local before the mount was ready.
        case initialInstall = "initial-install"

        /// Whether the workload itself asked for the pack (everything but prefetch).
        public var isDemand: Bool { self != .prefetch }
    }

    /// The pack id (`Level1+Level2`).
    public var pack: String
    /// The pack's tags.
    public var tags: [String]
    public var cause: Cause
    /// The file whose open first needed the pack; nil for other causes.
    public var firstFile: String?
    /// Seconds from the mount's start to the first need.
    public var secondsSinceMount: Double
    /// Which session of a multi-session export (1 = oldest); nil in a single-session trace.
    public var session: Int?

    /// An entry.
    public init(pack: String, tags: [String], cause: Cause, firstFile: String?, secondsSinceMount: Double, session: Int? = nil) {
        self.pack = pack
        self.tags = tags
        self.cause = cause
        self.firstFile = firstFile
        self.secondsSinceMount = secondsSinceMount
        self.session = session
    }

    private enum CodingKeys: String, CodingKey {
        case pack, tags, cause
        case firstFile = "first_file"
        case secondsSinceMount = "seconds_since_mount"
        case session
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(pack, forKey: .pack)
        try container.encode(tags, forKey: .tags)
        try container.encode(cause, forKey: .cause)
        try container.encode(firstFile, forKey: .firstFile)   // null, never absent
        try container.encode(secondsSinceMount, forKey: .secondsSinceMount)
        try container.encodeIfPresent(session, forKey: .session)
    }
}
