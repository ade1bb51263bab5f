/// The kernel's name for a file: the `fuse_ino_t` in every request.
///
/// ODRFS assigns inode numbers statically (from the manifest), so an inode
/// number stays valid for the whole life of a mount and FUSEKit answers the
/// kernel's `forget` requests itself without telling the filesystem.
public struct InodeNumber: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    public var rawValue: UInt64

    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// The mount's root directory; the kernel always calls it `FUSE_ROOT_ID` (1).
    public static let root = InodeNumber(rawValue: 1)

    public var description: String { "ino \(rawValue)" }
}
