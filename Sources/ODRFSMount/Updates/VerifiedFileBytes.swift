import Foundation
import ODRFSCore
import ODRFSStore

/// Whether a file of the new revision holds exactly the bytes of a file of the mounted
/// one, read from both revisions' packs in the cache, which hold only verified bytes.
///
/// Why: a file keeps its inode number across an update, and with it the kernel's page
/// cache (`keep_cache`) and every handle's view of it, only if its bytes did not change.
/// An index's SHA-256 is a claim until the bytes it names have been read: a new index
/// that gives a changed file the old file's digest would otherwise make the kernel serve
/// the old revision's cached pages for the new file, and fill them in with the new one's
/// (a mix of two revisions within one file). So ``RevisionTransition`` asks this type,
/// and only for the files whose digests claim they are unchanged; a file whose bytes are
/// not both local (its pack of either revision is not in the cache) cannot be shown the
/// same and becomes a new file.
///
/// Blocking (reads packs): used on the I/O executor only, by one transition at a time,
/// hence not `Sendable`. Each pack is opened once; the descriptors close with the value.
final class VerifiedFileBytes {
    private let store: PackStore
    private let mounted: Manifest
    private let available: Manifest
    /// Opened packs by content hash; nil for a pack the cache does not hold verified.
    private var packs: [ContentHash: Int32?] = [:]
    private var buffers = ([UInt8](repeating: 0, count: VerifiedFileBytes.chunk), [UInt8](repeating: 0, count: VerifiedFileBytes.chunk))
    /// Bytes read from each revision so far (for the log: what the check cost).
    private(set) var comparedBytes: Int64 = 0
    /// Files read from both revisions and found different: an index whose digest lies.
    private(set) var mismatches = 0

    private static let chunk = 1 << 20

    init(store: PackStore, mounted: Manifest, available: Manifest) {
        self.store = store
        self.mounted = mounted
        self.available = available
    }

    deinit {
        for case let fd? in packs.values { close(fd) }
    }

    /// Whether `new` (an entry of the available revision) holds the same bytes as `old` (an
    /// entry of the mounted one). False whenever that cannot be read and shown.
    func same(old: IndexEntry, new: IndexEntry) -> Bool {
        guard old.kind == .regularFile, new.kind == .regularFile, old.size == new.size,
              let a = old.packExtent, let b = new.packExtent,
              let p = old.pack.flatMap(mounted.packIfPresent), let q = new.pack.flatMap(available.packIfPresent),
              // packExtent's ends do not overflow.
              a.offset + a.size <= p.bytes.value, b.offset + b.size <= q.bytes.value,
              let source = descriptor(of: p), let target = descriptor(of: q) else { return false }
        var done: Int64 = 0
        while done < a.size {
            let count = Int(min(Int64(Self.chunk), a.size - done))
            guard Self.read(source, at: a.offset + done, count: count, into: &buffers.0),
                  Self.read(target, at: b.offset + done, count: count, into: &buffers.1) else { return false }
            comparedBytes += Int64(count)
            let equal = buffers.0.withUnsafeBytes { x in buffers.1.withUnsafeBytes { y in memcmp(x.baseAddress!, y.baseAddress!, count) == 0 } }
            guard equal else {
                mismatches += 1
                return false
            }
            done += Int64(count)
        }
        return true
    }

    /// The pack's cached file, opened, if the cache holds it verified.
    private func descriptor(of pack: PackDescriptor) -> Int32? {
        if let known = packs[pack.sha256] { return known }
        var fd: Int32? = nil
        if store.contains(pack) {
            let opened = open(store.path(of: pack), O_RDONLY | O_CLOEXEC)
            if opened >= 0 { fd = opened }
        }
        packs[pack.sha256] = fd
        return fd
    }

    /// Reads exactly `count` bytes at `offset`; false on an error or a short file.
    private static func read(_ fd: Int32, at offset: Int64, count: Int, into buffer: inout [UInt8]) -> Bool {
        var got = 0
        while got < count {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + got, count - got, off_t(offset) + off_t(got)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            got += n
        }
        return true
    }
}
