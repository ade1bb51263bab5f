import Foundation
import NIOCore

/// Who is at the other end of a Unix socket (SO_PEERCRED): the kernel's record of the
/// peer's uid when it connected (client) or listened (server), which the peer cannot forge.
enum PeerCredentials {
    /// `struct ucred { pid_t pid; uid_t uid; gid_t gid; }` (Glibc hides it behind _GNU_SOURCE).
    struct UCred: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    /// The uid of the peer of `channel`; nil if the kernel does not say (not a socket
    /// channel, or the call failed). Completes at once when called on the channel's loop.
    static func uid(of channel: any Channel) -> EventLoopFuture<uid_t?> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(nil)
        }
        let future: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
            level: NIOBSDSocket.OptionLevel(rawValue: SOL_SOCKET), name: NIOBSDSocket.Option(rawValue: SO_PEERCRED))
        return future.map { Optional($0.uid) }.recover { _ in nil }
    }

    /// The uid of the peer of a connected descriptor; nil if the kernel does not say.
    static func uid(ofDescriptor fd: Int32) -> uid_t? {
        var credentials = UCred()
        var length = socklen_t(MemoryLayout<UCred>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
              length == socklen_t(MemoryLayout<UCred>.size) else { return nil }
        return credentials.uid
    }
}
