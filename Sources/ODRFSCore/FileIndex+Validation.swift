#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import Synchronization

/// Up-front validation: after it, every accessor can trust every record. One pass over the
/// records plus one over each directory's children (the child ranges are disjoint, so that is
/// O(entries + name bytes) in all), no allocation per entry.
///
/// An index of at least twice ``defaultEntriesPerPart`` entries is checked in parts on several
/// cores (``inParts(_:_:)``): ten million
/// entries are 640 MB of records, 0.24 s of a mount's critical path on one core (issue 28).
/// The check of an entry reads only its own record, its parent's kind and child range, and
/// its children's records, each bounds-checked before use, never assuming that another part
/// has been checked yet. The error reported is the first one in entry order, as a single
/// pass would report.
extension FileIndex {
    struct Header {
        var entryCount: UInt32
        var packCount: UInt32
        var recordsStart: Int
        var stringsStart: Int
        var stringsLength: Int
        /// Version 2: where the digest table starts; nil for version 1 (no digests).
        var digestsStart: Int?
        /// Versions 3 and 4: the block (3) or chunk (4) table's bytes, nil when absent (see
        /// ``FileIndex/BlockTable``, ``FileIndex/ChunkTable``).
        var trailing: Range<Int>?
        var version: UInt32
    }

    static func validateHeader(_ base: UnsafeRawPointer, byteCount: Int) throws(FileIndexError) -> Header {
        typealias H = FileIndexLayout.Header
        guard byteCount >= FileIndexLayout.headerSize else {
            throw FileIndexError(.truncated, "is \(byteCount) bytes, shorter than the \(FileIndexLayout.headerSize)-byte header")
        }
        guard memcmp(base, FileIndexLayout.magic, FileIndexLayout.magic.count) == 0 else {
            throw FileIndexError(.badMagic, "does not start with \"ODRIDX1\" (not an odrfs file index)")
        }
        let version = base.u32(H.version)
        guard FileIndexLayout.readableVersions.contains(version) else {
            let readable = FileIndexLayout.readableVersions
            throw FileIndexError(.unsupportedVersion, "version \(version) is not supported (this odrfs reads versions \(readable.lowerBound) to \(readable.upperBound))")
        }
        guard base.u32(H.recordSize) == UInt32(FileIndexLayout.recordSize) else {
            throw FileIndexError(.corrupt, "record size \(base.u32(H.recordSize)) is not \(FileIndexLayout.recordSize)")
        }
        let entryCount = base.u32(H.entryCount)
        guard entryCount >= 1 else { throw FileIndexError(.corrupt, "has no root entry") }
        let size = UInt64(byteCount)
        let recordsOffset = base.u64(H.recordsOffset), recordsLength = base.u64(H.recordsLength)
        let stringsOffset = base.u64(H.stringsOffset), stringsLength = base.u64(H.stringsLength)
        guard recordsLength == UInt64(entryCount) * UInt64(FileIndexLayout.recordSize) else {
            throw FileIndexError(.corrupt, "record table is \(recordsLength) bytes but \(entryCount) entries need \(UInt64(entryCount) * 64)")
        }
        // Compare without adding first: hostile offsets near UInt64.max must not wrap around.
        guard recordsOffset >= UInt64(FileIndexLayout.headerSize), recordsOffset <= size, recordsLength <= size - recordsOffset else {
            throw FileIndexError(.truncated, "record table (\(recordsLength) bytes at \(recordsOffset)) extends past the end of the \(size)-byte index")
        }
        guard stringsOffset >= UInt64(FileIndexLayout.headerSize), stringsOffset <= size, stringsLength <= size - stringsOffset else {
            throw FileIndexError(.truncated, "string table (\(stringsLength) bytes at \(stringsOffset)) extends past the end of the \(size)-byte index")
        }
        var digestsStart: Int?
        var trailing: Range<Int>?
        if version >= 2 {
            let digestsOffset = base.u64(H.digestsOffset)
            let digestsLength = UInt64(entryCount) * UInt64(FileIndexLayout.digestSize)
            guard digestsOffset >= UInt64(FileIndexLayout.headerSize), digestsOffset <= size, digestsLength <= size - digestsOffset else {
                throw FileIndexError(.truncated, "digest table (\(digestsLength) bytes at \(digestsOffset)) extends past the end of the \(size)-byte index")
            }
            digestsStart = Int(digestsOffset)
            // Versions 3 and 4: the block or chunk table runs from the end of the digest table to the end.
            let trailingStart = digestsOffset + digestsLength
            if version >= 3, trailingStart < size { trailing = Int(trailingStart)..<byteCount }
        }
        return Header(entryCount: entryCount, packCount: base.u32(H.packCount), recordsStart: Int(recordsOffset),
                      stringsStart: Int(stringsOffset), stringsLength: Int(stringsLength), digestsStart: digestsStart,
                      trailing: trailing, version: version)
    }

    /// Entries in one part of a validation pass: an index with fewer is checked on the
    /// calling thread alone (splitting would cost more than it saves).
    static var defaultEntriesPerPart: UInt32 { 1 << 18 }

    /// Runs `check` over `0..<count` split into contiguous parts, several at once when there
    /// are enough entries, and returns the sum of what the parts return. Throws the error of
    /// the lowest part that failed: each part stops at its first error, so that is the error
    /// a single pass in entry order would have thrown.
    func inParts(_ count: UInt32, _ check: @Sendable (Range<UInt32>) throws(FileIndexError) -> Int) throws(FileIndexError) -> Int {
        let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)
        // A few parts per core balance directories with many children against plain files.
        let parts = Int(min(UInt32(clamping: cores * 4), max(1, count / entriesPerPart)))
        guard parts > 1 else { return try check(0..<count) }
        let step = count / UInt32(parts)
        let outcomes = Mutex([Result<Int, FileIndexError>?](repeating: nil, count: parts))
        DispatchQueue.concurrentPerform(iterations: parts) { part in
            let lower = UInt32(part) * step
            let upper = part == parts - 1 ? count : lower + step
            let outcome: Result<Int, FileIndexError>
            do throws(FileIndexError) { outcome = .success(try check(lower..<upper)) } catch { outcome = .failure(error) }
            outcomes.withLock { $0[part] = outcome }
        }
        var total = 0
        for outcome in outcomes.withLock({ $0 }) {
            switch outcome {
            case .success(let value)?: total += value
            case .failure(let error)?: throw error
            case nil: preconditionFailure("concurrentPerform returned before every part ran")
            }
        }
        return total
    }

    /// Checks every record; returns how many are symlinks (their targets are resolved after).
    func validateRecords() throws(FileIndexError) -> Int {
        try inParts(count) { [self] range throws(FileIndexError) in try validateRecords(range) }
    }

    private func validateRecords(_ entries: Range<UInt32>) throws(FileIndexError) -> Int {
        typealias F = FileIndexLayout.Record
        var symlinks = 0
        for n in entries {
            let r = record(n)
            guard let kind = EntryKind(rawValue: r.load(fromByteOffset: F.kind, as: UInt8.self)) else {
                throw corrupt(n, "has unknown kind \(r.load(fromByteOffset: F.kind, as: UInt8.self))")
            }
            try checkString(n, "name", offset: r.u64(F.nameOffset), length: r.u32(F.nameLength))
            let parent = r.u32(F.parent)
            if n == 0 {
                guard kind == .directory, parent == 0, r.u32(F.nameLength) == 0 else {
                    throw corrupt(n, "the root must be an unnamed directory that is its own parent")
                }
            } else {
                try checkName(n)
                // Parents come first in breadth-first order, which also rules out cycles. The
                // parent's record may lie in a part not checked yet: its kind byte and child
                // range are read raw, in checked arithmetic.
                let p = record(parent < n ? parent : 0)
                let firstChild = p.u64(F.data), childCount = UInt64(p.u32(F.count))
                guard parent < n, p.load(fromByteOffset: F.kind, as: UInt8.self) == EntryKind.directory.rawValue,
                      UInt64(n) >= firstChild, UInt64(n) - firstChild < childCount else {
                    throw corrupt(n, "claims parent \(parent), which does not list it as a child")
                }
            }
            let pack = r.u32(F.pack)
            switch kind {
            case .regularFile:
                guard pack < UInt32(clamping: packCount) else {
                    throw corrupt(n, "is in pack \(pack) but the bundle has \(packCount) packs")
                }
                // Offsets and sizes are used as Int64 (pread, off_t): their sum must fit.
                let (end, overflow) = r.u64(F.data).addingReportingOverflow(r.u64(F.size))
                guard !overflow, end <= UInt64(Int64.max) else { throw corrupt(n, "has an impossible size or offset") }
            case .symlink:
                symlinks += 1
                try checkNoDigest(n)
                guard pack == FileIndexLayout.noPack, r.u64(F.size) == UInt64(r.u32(F.count)) else {
                    throw corrupt(n, "is a symlink with a pack or a size that is not its target length")
                }
                try checkString(n, "symlink target", offset: r.u64(F.data), length: r.u32(F.count))
                guard FileIndex.isUTF8(strings(offset: r.u64(F.data), length: r.u32(F.count))) else {
                    throw corrupt(n, "has a symlink target that is not UTF-8")
                }
            case .directory:
                guard pack == FileIndexLayout.noPack else { throw corrupt(n, "is a directory with a pack") }
                try checkNoDigest(n)
                try checkChildren(n)
            }
        }
        return symlinks
    }

    /// Only regular files have content hashes; a digest elsewhere means the table is misplaced.
    private func checkNoDigest(_ n: UInt32) throws(FileIndexError) {
        guard let digest = digestBytes(n) else { return }
        guard !digest.contains(where: { $0 != 0 }) else { throw corrupt(n, "is not a regular file but has a content hash") }
    }

    private func checkString(_ n: UInt32, _ what: String, offset: UInt64, length: UInt32) throws(FileIndexError) {
        let blob = UInt64(stringsLength)
        guard offset <= blob, UInt64(length) <= blob - offset else {
            throw corrupt(n, "has a \(what) (\(length) bytes at \(offset)) outside the \(blob)-byte string table")
        }
    }

    private func checkName(_ n: UInt32) throws(FileIndexError) {
        let name = nameBytes(n)
        let isDots = (name.count == 1 && name[0] == UInt8(ascii: "."))
            || (name.count == 2 && name[0] == UInt8(ascii: ".") && name[1] == UInt8(ascii: "."))
        guard !name.isEmpty, !isDots, !name.contains(UInt8(ascii: "/")), !name.contains(0), FileIndex.isUTF8(name) else {
            throw corrupt(n, "has an invalid name (empty, '.', '..', not UTF-8, or containing '/' or NUL)")
        }
    }

    /// Names are Strings to every caller; bytes that do not decode would make `name(of:)` and
    /// `lookup(path:)` disagree. Validates in place, without allocating.
    static func isUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var iterator = bytes.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    private func checkChildren(_ n: UInt32) throws(FileIndexError) {
        typealias F = FileIndexLayout.Record
        let r = record(n)
        let first = r.u64(F.data), childCount = UInt64(r.u32(F.count))
        guard first <= UInt64(count), childCount <= UInt64(count) - first, childCount == 0 || first > UInt64(n) else {
            throw corrupt(n, "has \(childCount) children from \(first), outside 1..<\(count) or before itself")
        }
        var subdirectories: UInt32 = 0
        var previous: UnsafeRawBufferPointer?
        for child in UInt32(first)..<UInt32(first + childCount) {
            guard record(child).u32(F.parent) == n else {
                throw corrupt(n, "lists child \(child), whose parent is \(record(child).u32(F.parent))")
            }
            // Names are range-checked when their own record comes up; check here first so the
            // comparison below never reads outside the string table.
            let c = record(child)
            try checkString(child, "name", offset: c.u64(F.nameOffset), length: c.u32(F.nameLength))
            let name = nameBytes(child)
            if let previous, FileIndex.compare(previous, name) >= 0 {
                throw corrupt(n, "has children that are not sorted by name or not unique (at entry \(child))")
            }
            previous = name
            if c.load(fromByteOffset: F.kind, as: UInt8.self) == EntryKind.directory.rawValue { subdirectories += 1 }
        }
        guard r.u32(F.subdirectoryCount) == subdirectories else {
            throw corrupt(n, "records \(r.u32(F.subdirectoryCount)) subdirectories but has \(subdirectories)")
        }
    }

    private func corrupt(_ n: UInt32, _ problem: String) -> FileIndexError {
        FileIndexError(.corrupt, "entry \(n) \(problem)")
    }

    /// memcmp order, shorter first on a common prefix.
    @inline(__always) static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let common = min(a.count, b.count)
        if common > 0, let pa = a.baseAddress, let pb = b.baseAddress {
            let result = memcmp(pa, pb, common)
            if result != 0 { return Int(result) }
        }
        return a.count - b.count
    }
}
