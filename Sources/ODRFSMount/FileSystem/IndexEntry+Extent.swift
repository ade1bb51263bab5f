import ODRFSCore

/// Where a regular file's bytes sit in its pack, as signed byte counts that cannot overflow.
struct PackExtent: Sendable, Equatable {
    var offset: Int64
    var size: Int64
}

extension IndexEntry {
    /// The file's extent in its pack, or nil if the index claims offsets beyond what any
    /// pack can hold (a hostile index must fail the open, never trap the daemon).
    var packExtent: PackExtent? {
        guard let offset = Int64(exactly: dataOffset), let size = Int64(exactly: self.size),
              !offset.addingReportingOverflow(size).overflow else { return nil }
        return PackExtent(offset: offset, size: size)
    }
}
