/// An opaque 64-bit value the filesystem returns from open/opendir
/// (`fuse_file_info.fh`); the kernel passes it back with every read, readdir
/// and release on that open file. FUSEKit never interprets it.
public struct FileHandleID: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    public var rawValue: UInt64

    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public var description: String { "fh \(rawValue)" }
}
