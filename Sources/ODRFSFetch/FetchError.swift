import Foundation

/// Why a fetch failed. The filesystem maps `kind` to an errno in one place; the
/// message names the pack, path or origin so the log line alone explains it.
public struct FetchError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// The origin argument is not something ODRFS can fetch from.
        case invalidOrigin
        /// The origin kind is recognised but not supported yet.
        case unsupported
        /// The origin could not be reached or read (down, permission denied).
        case unreachable
        /// The origin has no such file.
        case notFound
        /// The origin refused the credentials (HTTP 401 or 403): no token, or the wrong one.
        case unauthorized
        /// The bytes arrived but are not what the manifest promised (size or SHA-256).
        case corrupt
        /// The local cache has no room for the download.
        case noSpace
        /// Writing into the local cache failed.
        case localIO
        /// The local cache's filesystem is read-only (EROFS: remounted so after errors).
        case readOnlyCache
        /// The daemon is out of file descriptors (EMFILE/ENFILE) and cannot open a cached pack.
        case tooManyOpenFiles
        /// The waiting caller gave up (FUSE interrupt or task cancellation).
        case cancelled
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
