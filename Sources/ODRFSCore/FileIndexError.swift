/// A file index that cannot be read or trusted: truncated, hostile or inconsistent bytes, or a
/// tree the writer cannot encode. The message names the entry and the field at fault.
public struct FileIndexError: Error, CustomStringConvertible, Equatable {
    public enum Kind: Sendable, Equatable {
        /// open/fstat/mmap failed.
        case io
        /// Too short for what its header promises.
        case truncated
        case badMagic
        case unsupportedVersion
        /// A record's field points outside the index or contradicts another record.
        case corrupt
        /// A symlink whose target is absolute or, resolved inside the bundle, leaves it.
        case unsafeSymlink
        /// The writer was given a tree it cannot encode (duplicate or invalid names, bad pack number).
        case invalidTree
    }

    public let kind: Kind
    public let message: String
    /// The index file, when reading from disk.
    public var path: String?
    /// The bundle-relative path of the entry at fault, when known (``Kind/unsafeSymlink``).
    public var entry: String?

    public init(_ kind: Kind, _ message: String, path: String? = nil) {
        self.kind = kind
        self.message = message
        self.path = path
    }

    public var description: String {
        "file index\(path.map { " \($0)" } ?? ""): \(message)"
    }
}
