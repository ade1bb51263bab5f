import Foundation

/// A failure of the local pack cache, with the path and the system error that caused it.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure this is; callers map it to an errno once, in the filesystem layer.
    public enum Kind: Sendable, Equatable {
        /// The filesystem holding the cache is full (ENOSPC or EDQUOT).
        case noSpace
        /// Another mount already uses this cache directory.
        case locked
        /// The filesystem holding the cache is read-only (EROFS).
        case readOnly
        /// Any other I/O failure.
        case io
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// An error for a failed system call on `path`, classified by `errno`.
    static func system(_ operation: String, path: String, errno code: Int32 = errno) -> StoreError {
        let reason = String(cString: strerror(code))
        let kind: Kind = (code == ENOSPC || code == EDQUOT) ? .noSpace : code == EROFS ? .readOnly : .io
        return StoreError(kind, "\(operation) \(path): \(reason)")
    }

    public var description: String { message }
}
