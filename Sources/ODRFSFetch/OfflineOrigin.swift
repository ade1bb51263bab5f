import Foundation
import NIOCore
import ODRFSCore

/// The origin of a mount made with `--offline`: the real origin is never contacted, and
/// every fetch fails at once with `.unreachable`, so an open of a file whose pack is not
/// cached fails with EIO immediately. Its health record says "offline" for status.
public struct OfflineOrigin: Origin {
    /// The origin the mount would use online, as shown to users.
    public let displayName: String
    let record: OriginHealth

    /// - Parameter lastContact: when the cached manifest was last fetched, if known.
    public init(displayName: String, lastContact: Date?) {
        self.displayName = displayName
        self.record = OriginHealth(url: displayName, lastContact: lastContact)
        record.recordUnreachable("mounted with --offline")
    }

    public var health: [OriginHealth] { [record] }

    public func download(
        _ path: String,
        expectedBytes: ByteCount,
        into consume: (ByteBuffer) async throws(FetchError) -> Void
    ) async throws(FetchError) {
        throw FetchError(.unreachable, "cannot fetch \(path): the mount is offline (--offline); only cached packs can be read")
    }
}
