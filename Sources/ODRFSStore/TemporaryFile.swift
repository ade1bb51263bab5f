import CGlibcExtras
import Foundation
import Synchronization

/// A download in progress under the cache's `tmp/`. It is either published into
/// place by `PackStore.publish` or discarded; dropping it unpublished deletes it,
/// so a failed or cancelled download never leaves a partial file behind.
///
/// One download task owns it from creation to publication; it is Sendable so that its
/// blocking writes can run on the I/O executor.
public final class TemporaryFile: Sendable {
    public let path: String
    public let descriptor: Int32
    /// For pack downloads: the same file opened read-only, with its verified prefix, for
    /// readers that open the pack before it is complete (progressive open).
    public let verified: VerifiedFile?
    private let isOpen = Atomic<Bool>(true)
    /// Orders positioned writes of unproven bytes against writes that release proven ones.
    /// Held only by writers (I/O threads) for one write; readers never take it.
    private let positionedWrites = Mutex<Void>(())
    /// Bytes appended, and how many of them were already handed to writeback.
    private let appended = Mutex<(total: Int64, flushed: Int64)>((0, 0))

    /// Writeback of appended bytes starts every this many bytes, so that the `fsync` at
    /// publication finds little left to write: for a 1 GB file index (ten million files)
    /// that fsync took 0.3 s of a mount waiting for it.
    static let writebackInterval: Int64 = 16 << 20

    init(path: String, descriptor: Int32, verified: VerifiedFile? = nil) {
        self.path = path
        self.descriptor = descriptor
        self.verified = verified
    }

    /// Appends all of `bytes`, retrying short and interrupted writes.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw StoreError.system("cannot write", path: path)
            }
            offset += written
        }
        let unflushed = appended.withLock { counts -> (offset: Int64, length: Int64)? in
            counts.total += Int64(bytes.count)
            guard counts.total - counts.flushed >= Self.writebackInterval else { return nil }
            defer { counts.flushed = counts.total }
            return (counts.flushed, counts.total - counts.flushed)
        }
        if let unflushed {
            // Only starts writeback: no wait, no durability (publication's fsync gives that).
            // A failure changes nothing but the fsync's duration.
            _ = odrfs_start_writeback(descriptor, unflushed.offset, unflushed.length)
        }
    }

    /// Writes `bytes`, not yet proven, at `offset`, skipping every byte already proven — the
    /// prefix and the ranges released past it (see ``writeProven(_:at:release:)``): a stream
    /// going over a range fetched ahead, or a new attempt after bad bytes going over what
    /// index chunks released, never replaces a byte readers may read.
    public func writeUnlessReleased(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StoreError) {
        let end = offset + Int64(bytes.count)
        try positionedWrites.withLock { _ throws(StoreError) in
            var position = offset
            for released in (verified?.provenSpans(overlapping: offset..<end) ?? []) where released.upperBound > position && released.lowerBound < end {
                if released.lowerBound > position {
                    try writeAll(UnsafeRawBufferPointer(rebasing: bytes[Int(position - offset)..<Int(released.lowerBound - offset)]), at: position)
                }
                position = released.upperBound
            }
            if position < end { try writeAll(UnsafeRawBufferPointer(rebasing: bytes[Int(position - offset)...]), at: position) }
        }
    }

    /// Writes proven `bytes` at `offset` and, with `release`, releases them to readers, in one
    /// step as far as ``writeUnlessReleased(_:at:)`` is concerned: an unproven write never
    /// lands between the two.
    public func writeProven(_ bytes: UnsafeRawBufferPointer, at offset: Int64, release: Bool) throws(StoreError) {
        // Recorded under the lock, answered after it: the replies it wakes (splices) must not
        // hold up the stream's next write.
        let ready = try positionedWrites.withLock { _ throws(StoreError) -> VerifiedFile.ReadyWaiters? in
            try writeAll(bytes, at: offset)
            return release ? verified?.recordRelease(offset..<(offset + Int64(bytes.count))) : nil
        }
        ready?.answer()
    }

    /// Writes all of `bytes` at `offset`, retrying short and interrupted writes; the
    /// position appends continue from does not move.
    private func writeAll(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StoreError) {
        var done = 0
        while done < bytes.count {
            let written = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if written < 0 {
                if errno == EINTR { continue }
                throw StoreError.system("cannot write", path: path)
            }
            done += written
        }
    }

    /// Cuts the file back to its first `length` bytes and appends from there: a download
    /// that moves to another server after bad bytes keeps only its verified prefix.
    public func truncate(to length: Int64) throws(StoreError) {
        guard ftruncate(descriptor, off_t(length)) == 0, lseek(descriptor, off_t(length), SEEK_SET) >= 0 else {
            throw StoreError.system("cannot truncate", path: path)
        }
    }

    /// Deletes the file now.
    public func discard() {
        guard isOpen.exchange(false, ordering: .acquiringAndReleasing) else { return }
        close(descriptor)
        unlink(path)
        // `verified` is failed by the download's owner (the resource manager) once it has
        // recorded the failure, so that no reader learns of it before status does.
    }

    /// Called once the file has been renamed into place: only the descriptor goes.
    func markPublished() {
        guard isOpen.exchange(false, ordering: .acquiringAndReleasing) else { return }
        close(descriptor)
        // `verified` is completed by whoever records the pack as local (the resource
        // manager), so that no reader gets the last bytes before status says so.
    }

    /// The owner renamed the file out of `tmp/` itself (a passthrough backing file,
    /// renamed under the resource manager's lock): close it without unlinking.
    public func markPublishedByRename() {
        markPublished()
    }

    deinit {
        discard()
    }
}
