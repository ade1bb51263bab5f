/// A tag spec (`odr.yaml`) that cannot be used, with the file, the line and column when known,
/// and what to change: "odr.yaml:3:12: prefetch names tag 'Itly', which is not defined under tags".
public struct TagSpecError: Error, CustomStringConvertible, Equatable {
    public enum Kind: Sendable, Equatable {
        case unreadable
        case syntax
        case wrongType
        case unknownKey
        case invalidTagName
        case tagWithoutPatterns
        case invalidPattern
        case unknownTag
        case duplicateTag
        case priorityOutOfRange
        /// A `variants:` declaration that cannot be used (names, values, default, rules).
        case invalidVariant
        /// `bundle:` is not a valid bundle identity.
        case invalidBundleIdentity
    }

    public let kind: Kind
    /// The spec file as the user named it.
    public let file: String
    public let line: Int?
    public let column: Int?
    public let message: String

    public init(_ kind: Kind, file: String, line: Int? = nil, column: Int? = nil, _ message: String) {
        self.kind = kind
        self.file = file
        self.line = line
        self.column = column
        self.message = message
    }

    public var description: String {
        var location = file
        if let line { location += ":\(line)" }
        if let column { location += ":\(column)" }
        return "\(location): \(message)"
    }
}
