/// Who may use a daemon's control socket, by the peer's uid (SO_PEERCRED, which a client
/// cannot forge), and for what.
///
/// A private mount (the default) answers only its owner and root. A mount root made
/// with `allow_other` serves every local user: anyone may read (`status`, `events`,
/// `priority` without `--set`), and request tags (a request's retains end with its
/// connection, so nobody can pin packs beyond their own session); only the owner and root
/// may change the mount (``ControlOperation/changesTheMount``: purge, priorities,
/// updates) or read its access traces.
public struct ControlAccess: Sendable, Equatable {
    /// Who may connect at all; nil: every local user.
    public let connect: Set<UInt32>?
    /// Who may change the mount.
    public let change: Set<UInt32>

    /// The daemon's own user and root, for everything.
    public static func ownerOnly(_ owner: UInt32) -> ControlAccess {
        ControlAccess(connect: [owner, 0], change: [owner, 0])
    }

    /// Every local user may connect; only `owner` and root may change the mount.
    public static func everyLocalUser(owner: UInt32) -> ControlAccess {
        ControlAccess(connect: nil, change: [owner, 0])
    }

    public init(connect: Set<UInt32>?, change: Set<UInt32>) {
        self.connect = connect
        self.change = change
    }

    func mayConnect(_ uid: UInt32) -> Bool { connect?.contains(uid) ?? true }
    func mayChange(_ uid: UInt32) -> Bool { change.contains(uid) }
}
