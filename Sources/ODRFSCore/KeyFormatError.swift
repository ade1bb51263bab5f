/// A key or signature file that is not in its documented format (see ``TrustKey``,
/// ``SigningKey`` and ``ManifestSignature``); the message names the format expected.
public struct KeyFormatError: Error, CustomStringConvertible, Sendable, Equatable {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
