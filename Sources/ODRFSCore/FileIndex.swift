#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bundle's file tree, read lazily from a memory-mapped `.odrx` file (see ``FileIndexLayout``).
///
/// Opening costs one mmap and one validation pass over the records and names, with no per-entry
/// allocation: a million-entry index maps ~64 MiB of records that the kernel pages in on demand
/// and shares with the page cache. After init every record is known to be in bounds and
/// consistent (parents, child ranges, sorted names, pack numbers, file extents that fit in an
/// `Int64`, symlinks that stay inside the bundle), so accessors never trap on hostile bytes
/// they were given. ``validate(against:)`` adds the checks that need the manifest.
///
/// Immutable and safe to share between threads: the mapping is read-only and lives as long as
/// this object.
public final class FileIndex: @unchecked Sendable {
    // @unchecked: the only stored state is a read-only region and fields that no one writes
    // after init (`blocks` and `contentChunks` are set once, at the end of init, after validation).
    public static let fileExtension = "odrx"

    let region: Region
    let base: UnsafeRawPointer
    let count: UInt32
    let recordsStart: Int
    let stringsStart: Int
    let stringsLength: Int
    /// Where the digest table starts (version 2), nil when the index has none (version 1).
    let digestsStart: Int?
    /// The validated block table (version 3), nil when the index has none.
    private(set) var blocks: BlockTable?
    /// The validated chunk table (version 4), nil when the index has none.
    private(set) var contentChunks: ChunkTable?
    /// The format version the index was written in.
    public let version: UInt32
    /// How many packs the manifest that goes with this index has; every file's pack is below it.
    public let packCount: Int
    /// When to release the pages requests have touched (see ``noteEntriesServed(_:)``).
    let residency: ResidentPageBudget
    /// How many entries one part of a validation pass checks (see ``inParts(_:_:)``).
    let entriesPerPart: UInt32

    /// Maps the index at `path` read-only.
    public convenience init(contentsOf path: String, residency: ResidentPageBudget = ResidentPageBudget()) throws(FileIndexError) {
        let region: Region
        do {
            region = try Region(mapping: path)
        } catch var error {
            error.path = path
            throw error
        }
        do {
            try self.init(region: region, residency: residency)
        } catch var error {
            error.path = path
            throw error
        }
    }

    /// Copies `bytes` and reads them as an index; for tests and small indexes.
    public convenience init(bytes: [UInt8]) throws(FileIndexError) {
        try self.init(region: Region(copying: bytes))
    }

    /// As ``init(bytes:)``, validating in parts of `entriesPerPart` entries (tests split small indexes).
    convenience init(bytes: [UInt8], entriesPerPart: UInt32) throws(FileIndexError) {
        try self.init(region: Region(copying: bytes), entriesPerPart: entriesPerPart)
    }

    init(region: Region, residency: ResidentPageBudget = ResidentPageBudget(),
         entriesPerPart: UInt32 = FileIndex.defaultEntriesPerPart) throws(FileIndexError) {
        let header = try FileIndex.validateHeader(region.base, byteCount: region.count)
        self.region = region
        self.base = region.base
        self.count = header.entryCount
        self.recordsStart = header.recordsStart
        self.stringsStart = header.stringsStart
        self.stringsLength = header.stringsLength
        self.digestsStart = header.digestsStart
        self.packCount = Int(header.packCount)
        self.version = header.version
        self.residency = residency
        self.entriesPerPart = max(1, entriesPerPart)
        // Most bundles have no symlinks: their resolution pass is skipped, not run empty.
        if try validateRecords() > 0 { try validateSymlinks() }
        if let range = header.trailing {
            if header.version >= 4 { contentChunks = try validateChunks(range) } else { blocks = try validateBlocks(range) }
        }
    }

    public var entryCount: Int { Int(count) }

    /// Unmaps the pages that validation touched, keeping the mapping: they stay in the page
    /// cache, and a later access maps the page it needs again (a minor fault). Validation
    /// reads every record and name, so without this a 1,000,000-entry index stays ~90 MiB
    /// of the daemon's resident memory from the mount on, used or not (issue 28); with it,
    /// resident index pages are the ones the mount's requests have touched since.
    /// Call once the index is fully validated; no effect on an index read from bytes.
    public func releaseResidentPages() {
        region.releaseResidentPages()
    }

    @inline(__always) func record(_ n: UInt32) -> UnsafeRawPointer {
        base + recordsStart + Int(n) * FileIndexLayout.recordSize
    }

    @inline(__always) func kind(_ n: UInt32) -> EntryKind {
        // Validated at init.
        EntryKind(rawValue: record(n).load(fromByteOffset: FileIndexLayout.Record.kind, as: UInt8.self)) ?? .regularFile
    }

    /// The entry's attributes, or nil when `n` is out of range.
    public func entry(_ n: EntryNumber) -> IndexEntry? {
        guard n.rawValue < count else { return nil }
        let r = record(n.rawValue)
        typealias F = FileIndexLayout.Record
        let kind = kind(n.rawValue)
        let pack = r.u32(F.pack)
        return IndexEntry(
            kind: kind,
            permissions: r.u32(F.permissions) & 0o7777,
            size: r.u64(F.size),
            modificationTime: Timestamp(seconds: r.i64(F.mtimeSeconds), nanoseconds: r.u32(F.mtimeNanoseconds)),
            pack: kind == .regularFile ? PackNumber(pack) : nil,
            dataOffset: kind == .regularFile ? r.u64(F.data) : 0,
            parent: EntryNumber(r.u32(F.parent)),
            subdirectoryCount: kind == .directory ? r.u32(F.subdirectoryCount) : 0)
    }

    /// Raw entry numbers of the directory's children: contiguous and sorted by name bytes.
    /// Empty for files, symlinks and out-of-range numbers.
    public func children(of dir: EntryNumber) -> Range<UInt32> {
        guard dir.rawValue < count, kind(dir.rawValue) == .directory else { return 0..<0 }
        let r = record(dir.rawValue)
        let first = UInt32(truncatingIfNeeded: r.u64(FileIndexLayout.Record.data))
        return first..<(first + r.u32(FileIndexLayout.Record.count))
    }

    /// Calls `body` with the entry's name bytes (empty for the root or out-of-range numbers)
    /// without copying them out of the mapping.
    public func withNameBytes<R>(of n: EntryNumber, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard n.rawValue < count else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(nameBytes(n.rawValue))
    }

    @inline(__always) func nameBytes(_ n: UInt32) -> UnsafeRawBufferPointer {
        let r = record(n)
        return strings(offset: r.u64(FileIndexLayout.Record.nameOffset), length: r.u32(FileIndexLayout.Record.nameLength))
    }

    @inline(__always) func strings(offset: UInt64, length: UInt32) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + stringsStart + Int(offset), count: Int(length))
    }

    /// The entry's name; "" for the root.
    public func name(of n: EntryNumber) -> String {
        withNameBytes(of: n) { String(decoding: $0, as: UTF8.self) }
    }

    /// The symlink's target, or nil when `n` is not a symlink.
    public func symlinkTarget(of n: EntryNumber) -> String? {
        guard n.rawValue < count, kind(n.rawValue) == .symlink else { return nil }
        let r = record(n.rawValue)
        let bytes = strings(offset: r.u64(FileIndexLayout.Record.data), length: r.u32(FileIndexLayout.Record.count))
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension FileIndex {
    /// Owns the bytes an index is read from: either an mmap or a heap copy.
    final class Region: @unchecked Sendable {
        // @unchecked: immutable after init; the memory is only read.
        let base: UnsafeRawPointer
        let count: Int
        private let isMapped: Bool

        init(copying bytes: [UInt8]) {
            let memory = UnsafeMutableRawPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
            bytes.withUnsafeBytes { memory.copyMemory(from: $0.baseAddress ?? UnsafeRawPointer(memory), byteCount: $0.count) }
            self.base = UnsafeRawPointer(memory)
            self.count = bytes.count
            self.isMapped = false
        }

        init(mapping path: String) throws(FileIndexError) {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                throw FileIndexError(.io, "cannot open: \(String(cString: strerror(errno)))")
            }
            defer { close(fd) }
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                throw FileIndexError(.io, "cannot stat: \(String(cString: strerror(errno)))")
            }
            let size = Int(info.st_size)
            guard size >= FileIndexLayout.headerSize else {
                throw FileIndexError(.truncated, "is \(size) bytes, shorter than the \(FileIndexLayout.headerSize)-byte header")
            }
            guard let memory = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), memory != MAP_FAILED else {
                throw FileIndexError(.io, "cannot mmap \(size) bytes: \(String(cString: strerror(errno)))")
            }
            self.base = UnsafeRawPointer(memory)
            self.count = size
            self.isMapped = true
        }

        /// `MADV_DONTNEED` on a read-only private file mapping drops the page table entries
        /// only: nothing was written, so every page comes back from the file as it was.
        func releaseResidentPages() {
            guard isMapped else { return }
            _ = madvise(UnsafeMutableRawPointer(mutating: base), count, MADV_DONTNEED)
        }

        deinit {
            if isMapped {
                munmap(UnsafeMutableRawPointer(mutating: base), count)
            } else {
                UnsafeMutableRawPointer(mutating: base).deallocate()
            }
        }
    }
}
