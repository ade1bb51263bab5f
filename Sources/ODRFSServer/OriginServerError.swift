/// Why the embedded origin could not start; the message names the directory, file or
/// address and what to do.
public struct OriginServerError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// The dist dir is missing, not a directory, or has no manifest.json.
        case distDirectory
        /// The token file is unreadable or empty.
        case tokenFile
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
