/// The kernel's name for a file registered as a passthrough backing file
/// (`FUSE_DEV_IOC_BACKING_OPEN`); sent in an open reply with `FOPEN_PASSTHROUGH`.
/// Always positive.
public struct BackingID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    init?(rawValue: Int32) {
        guard rawValue > 0 else { return nil }
        self.rawValue = rawValue
    }

    public var description: String { "backing \(rawValue)" }
}
