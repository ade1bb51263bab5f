import Foundation
import ODRFSCore

/// A pack's state as Xcode's On-Demand Resources debug gauge names it.
public enum PackState: String, Sendable, Codable {
    /// On the origin only.
    case notDownloaded = "not-downloaded"
    /// A download is under way.
    case downloading
    /// Local, and nothing retains it: the purger may drop it.
    case downloaded
    /// Local and retained by at least one open handle or held request.
    case inUse = "in-use"
}

/// A snapshot of one pack for status displays.
public struct PackStatus: Sendable {
    public var number: PackNumber
    public var id: PackID
    public var tags: [Tag]
    public var bytes: ByteCount
    public var state: PackState
    /// Bytes downloaded so far while `state == .downloading`.
    public var bytesDownloaded: ByteCount
    public var retainCount: Int
    public var lastAccess: Date?
    /// Completed downloads of this pack since the mount started.
    public var fetchCount: Int
    /// The highest preservation priority of its tags.
    public var preservationPriority: Double
}
