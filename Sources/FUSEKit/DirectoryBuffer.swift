import CFuse3

/// Builds a readdir or readdirplus reply within the size the kernel asked
/// for, packing entries with `fuse_add_direntry` / `fuse_add_direntry_plus`.
///
/// Offsets: each entry carries `nextOffset`, the value the kernel sends back
/// as `offset` to continue after that entry. It must identify a position in
/// the listing (e.g. index + 1), never 0.
public struct DirectoryBuffer: ~Copyable {
    private let raw: fuse_req_t
    private let storage: UnsafeMutableRawPointer
    /// The maximum reply size in bytes.
    public let capacity: Int
    /// True when entries are readdirplus entries (with attributes and timeouts).
    public let plus: Bool
    /// Bytes used so far.
    public private(set) var byteCount = 0

    /// A buffer of `capacity` bytes (pass the `size` of the readdir request).
    public init(request: borrowing FUSERequest, capacity: Int, plus: Bool) {
        self.raw = request.raw
        self.capacity = max(0, capacity)
        self.plus = plus
        storage = UnsafeMutableRawPointer.allocate(byteCount: max(1, capacity), alignment: 8)
    }

    deinit {
        storage.deallocate()
    }

    /// True when no entry has been added; replying with an empty buffer ends the listing.
    public var isEmpty: Bool { byteCount == 0 }

    /// Adds a readdir entry; only the inode and the file type bits of `mode`
    /// are used. In a readdirplus buffer the entry goes with zero timeouts.
    /// Returns false (and adds nothing) when the entry does not fit.
    public mutating func add(name: String, attributes: FileAttributes, nextOffset: Int64) -> Bool {
        if plus {
            return add(name: name, entry: EntryReplyParameters(attributes: attributes, entryTimeout: 0, attributeTimeout: 0), nextOffset: nextOffset)
        }
        var stat = attributes.stat
        let request = raw
        return append { buffer, remaining in
            name.withCString { fuse_add_direntry(request, buffer, remaining, $0, &stat, off_t(nextOffset)) }
        }
    }

    /// Adds a readdirplus entry (the kernel caches it like a lookup). In a plain
    /// readdir buffer only the attributes' inode and type are used.
    /// Returns false (and adds nothing) when the entry does not fit.
    public mutating func add(name: String, entry: EntryReplyParameters, nextOffset: Int64) -> Bool {
        guard plus else {
            return add(name: name, attributes: entry.attributes, nextOffset: nextOffset)
        }
        var parameters = Reply.entryParameters(entry)
        let request = raw
        return append { buffer, remaining in
            name.withCString { fuse_add_direntry_plus(request, buffer, remaining, $0, &parameters, off_t(nextOffset)) }
        }
    }

    /// Adds an entry the kernel lists but does not instantiate: in a readdirplus
    /// buffer it goes with node id 0, which the kernel takes as "no attributes for
    /// this one" (`fuse_direntplus_link` in fs/fuse/readdir.c skips it: no inode, no
    /// dentry; a later stat sends a lookup). In a plain buffer it is a plain entry.
    /// Only the attributes' inode and type are used.
    /// Returns false (and adds nothing) when the entry does not fit.
    public mutating func addNameOnly(name: String, attributes: FileAttributes, nextOffset: Int64) -> Bool {
        guard plus else {
            return add(name: name, attributes: attributes, nextOffset: nextOffset)
        }
        var parameters = fuse_entry_param()
        parameters.ino = 0  // the node id: nothing to link
        parameters.attr.st_ino = attributes.stat.st_ino  // the dirent's inode number, as in a plain readdir
        parameters.attr.st_mode = attributes.stat.st_mode & mode_t(S_IFMT)
        let request = raw
        return append { buffer, remaining in
            name.withCString { fuse_add_direntry_plus(request, buffer, remaining, $0, &parameters, off_t(nextOffset)) }
        }
    }

    /// libfuse writes the entry only if it fits and always returns its size,
    /// so a size larger than the space left means "not added".
    private mutating func append(_ write: (UnsafeMutablePointer<CChar>, Int) -> Int) -> Bool {
        let remaining = capacity - byteCount
        let needed = write((storage + byteCount).assumingMemoryBound(to: CChar.self), remaining)
        guard needed <= remaining else {
            return false
        }
        byteCount += needed
        return true
    }

    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        body(UnsafeRawBufferPointer(start: storage, count: byteCount))
    }
}
