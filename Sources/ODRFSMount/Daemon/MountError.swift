/// Why `odrfs mount` could not produce a usable mount. The message is what the
/// user sees on stderr, so it names the mountpoint, origin or pack concerned.
public struct MountError: Error, CustomStringConvertible, Sendable {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
