/// An error of the control protocol, as sent on the wire and thrown by ``ControlService``.
///
/// `odrCode` is the `NSBundleResourceRequest` error code where ODR has one (4994
/// invalid tag, 4993 exceeded maximum size, 4992 out of space); it is encoded as
/// `null` otherwise. `message` is for humans: it says what was wrong and with what.
public struct ControlError: Error, Codable, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is; the raw value is the wire form.
    public enum Code: String, Codable, Sendable {
        /// A tag the bundle's manifest does not know (ODR 4994).
        case invalidTag = "invalid-tag"
        /// Retaining the request's packs would exceed the in-use limit (ODR 4993).
        case exceededMaximumSize = "exceeded-maximum-size"
        /// No space for a pack even after purging (ODR 4992).
        case outOfSpace = "out-of-space"
        /// The origin could not be reached after bounded retries.
        case originUnreachable = "origin-unreachable"
        /// A pack is missing or corrupt on the origin.
        case resourceUnavailable = "resource-unavailable"
        /// A conditional request found something not local.
        case notLocal = "not-local"
        /// Malformed, oversized or invalid message.
        case badRequest = "bad-request"
        /// The peer's user may not use this daemon.
        case permissionDenied = "permission-denied"
        /// The daemon already serves its maximum number of control connections.
        case tooManyConnections = "too-many-connections"
        /// The message's `v` is not a version this side speaks.
        case unsupportedVersion = "unsupported-version"
        /// The request was cancelled (`cancel`, `end`, or the connection dropped).
        case cancelled
        /// Client side: no daemon answers at the mountpoint, or it went away.
        case notRunning = "not-running"
        /// An update to a revision older than the mounted one (or one already seen) was refused.
        case rollbackRefused = "rollback-refused"
        /// The daemon does not offer this operation.
        case unsupported
        /// Anything else.
        case internalError = "internal"

        /// ODR's error code for this kind of failure, if it has one.
        public var odrCode: Int? {
            switch self {
            case .invalidTag: 4994
            case .exceededMaximumSize: 4993
            case .outOfSpace: 4992
            default: nil
            }
        }
    }

    /// The kind of failure.
    public var code: Code
    /// ODR's error code (see ``Code/odrCode``).
    public var odrCode: Int?
    /// What went wrong, with which tag, pack or path.
    public var message: String

    /// An error of kind `code`; `odrCode` defaults to ODR's code for it.
    public init(_ code: Code, _ message: String, odrCode: Int? = nil) {
        self.code = code
        self.odrCode = odrCode ?? code.odrCode
        self.message = message
    }

    public var description: String { message }

    private enum CodingKeys: String, CodingKey { case code, odrCode, message }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // An unknown code from a newer peer still decodes: as `internal`.
        let raw = try container.decode(String.self, forKey: .code)
        code = Code(rawValue: raw) ?? .internalError
        odrCode = try container.decodeIfPresent(Int.self, forKey: .odrCode)
        message = try container.decode(String.self, forKey: .message)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        // Always present, `null` when ODR has no code: the documented wire form.
        try container.encode(odrCode, forKey: .odrCode)
        try container.encode(message, forKey: .message)
    }
}
