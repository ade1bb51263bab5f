/// Why the purger ran or a pack was evicted: logged with every eviction.
public enum PurgeReason: Sendable, Equatable, CustomStringConvertible {
    /// A download finished and may have pushed the cache over its limits.
    case afterDownload
    /// A retain ended, so a pack held over budget may go now.
    case afterRelease
    /// The periodic check (other programs can fill the disk).
    case periodicCheck
    /// Room for a download about to start.
    case makingRoom(for: String)
    /// The pack does not fit on disk even within the limits: everything unretained may go.
    case diskFull
    /// `odrfs purge`.
    case requested
    /// A test or tool asked for a pressure check.
    case manual

    public var description: String {
        switch self {
        case .afterDownload: return "after download"
        case .afterRelease: return "after release"
        case .periodicCheck: return "periodic check"
        case .makingRoom(let pack): return "making room for pack '\(pack)'"
        case .diskFull: return "disk full"
        case .requested: return "requested"
        case .manual: return "manual"
        }
    }
}
