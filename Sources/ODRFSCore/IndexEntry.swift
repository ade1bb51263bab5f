/// What an index entry is. Only these three kinds exist in a bundle; `odrfs build` refuses others.
public enum EntryKind: UInt8, Sendable {
    case directory = 0
    case regularFile = 1
    case symlink = 2
}

/// A modification time with nanosecond precision, as `struct timespec` holds it.
public struct Timestamp: Sendable, Hashable {
    public var seconds: Int64
    public var nanoseconds: UInt32

    public init(seconds: Int64, nanoseconds: UInt32) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }
}

/// One directory, regular file or symlink of the bundle, decoded from its index record.
/// Everything `getattr` needs is here, so stat never touches a pack.
public struct IndexEntry: Sendable, Hashable {
    public var kind: EntryKind
    /// `st_mode & 0o7777`.
    public var permissions: UInt32
    /// Files: byte size; symlinks: target length; directories: 0.
    public var size: UInt64
    public var modificationTime: Timestamp
    /// The pack holding the file's bytes; regular files only.
    public var pack: PackNumber?
    /// Regular files: offset of the first content byte inside the pack file; 0 otherwise.
    public var dataOffset: UInt64
    /// The containing directory; the root's parent is the root.
    public var parent: EntryNumber
    /// Directories only: how many children are directories (nlink = 2 + this).
    public var subdirectoryCount: UInt32

    public init(kind: EntryKind, permissions: UInt32, size: UInt64, modificationTime: Timestamp,
                pack: PackNumber?, dataOffset: UInt64, parent: EntryNumber, subdirectoryCount: UInt32) {
        self.kind = kind
        self.permissions = permissions
        self.size = size
        self.modificationTime = modificationTime
        self.pack = pack
        self.dataOffset = dataOffset
        self.parent = parent
        self.subdirectoryCount = subdirectoryCount
    }
}
