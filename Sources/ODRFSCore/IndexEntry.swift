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

    /// Nanoseconds since the epoch, clamped to `Int64`'s range: an mtime after 2262 or
    /// before 1677 (any file can be given one with `touch -d`) must not trap.
    public var totalNanoseconds: Int64 {
        Timestamp.totalNanoseconds(seconds: seconds, nanoseconds: Int64(nanoseconds))
    }

    /// `seconds · 10^9 + nanoseconds`, saturating; for `stat`'s `st_mtim` fields.
    public static func totalNanoseconds(seconds: Int64, nanoseconds: Int64) -> Int64 {
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, carry) = scaled.addingReportingOverflow(nanoseconds)
        return carry ? (nanoseconds < 0 ? .min : .max) : sum
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
    /// For an entry read from a ``FileIndex``, `dataOffset + size ≤ Int64.max`; prefer
    /// ``packOffset`` and ``packEnd``, which never trap even on a hand-built entry.
    public var dataOffset: UInt64
    /// The containing directory; the root's parent is the root.
    public var parent: EntryNumber
    /// Directories only: how many children are directories (nlink = 2 + this).
    public var subdirectoryCount: UInt32

    /// Where the file's bytes start in its pack, as an `off_t`.
    public var packOffset: Int64 { Int64(clamping: dataOffset) }

    /// Where the file's bytes end in its pack (exclusive), as an `off_t`; saturating.
    public var packEnd: Int64 {
        let (end, overflow) = packOffset.addingReportingOverflow(Int64(clamping: size))
        return overflow ? .max : end
    }

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
