import FUSEKit
import ODRFSCore
import Synchronization

/// Open files: `FileHandleID → PackReader` and where the file's bytes sit in that
/// reader's pack. The handle owns its reader from open to release; the kernel hands the
/// id back with every read.
///
/// The extent is kept with the reader, not looked up again in the index at each read:
/// after an update switches the mount to a new revision, a handle opened before keeps
/// reading the old file's bytes from the old pack until it is closed.
///
/// Ids count up from 1 and are never reused during a mount, so a stale id (which the
/// kernel never sends) would find nothing rather than another file's reader. Bit 63 is
/// left to `VirtualFileTable`. One table serves every revision of a mount.
final class ReaderTable: Sendable {
    /// One open file.
    struct OpenFile: Sendable {
        let reader: PackReader
        let extent: PackExtent
        let cursor = ReadCursor()
    }

    /// Where a handle's reads are going: whether a read jumps (a seek to a central directory,
    /// a random access) or follows the reads before it (a sequential read and the kernel's
    /// readahead, which the pack's stream serves anyway). Only jumps are worth fetching ahead
    /// of the stream by range: readahead up to 4 MiB ahead would otherwise fetch every byte
    /// of a sequential read twice.
    final class ReadCursor: Sendable {
        /// The end (in the file) of the last read; -1 before the first.
        private let lastEnd = Atomic<Int64>(-1)

        /// Reads this close to the last one's end count as following it: the mount's 4 MiB
        /// readahead window (see `Readahead`) and one more 1 MiB request, for requests
        /// answered out of order.
        static let sequentialWindow: Int64 = 5 << 20

        /// Records a read of `start..<end` (file offsets); true when it jumps (the first read
        /// of a handle does: nothing before it brought its bytes closer).
        func noteRead(_ start: Int64, _ end: Int64) -> Bool {
            let last = lastEnd.exchange(end, ordering: .relaxed)
            guard last >= 0 else { return true }
            return start > last + Self.sequentialWindow || start < last - Self.sequentialWindow
        }
    }

    private struct State {
        var next: UInt64 = 0
        var files: [UInt64: OpenFile] = [:]
    }

    private let state = Mutex(State())

    /// Stores `reader` with the file's `extent` and returns its handle.
    func insert(_ reader: PackReader, extent: PackExtent) -> FileHandleID {
        state.withLock { state in
            state.next += 1
            state.files[state.next] = OpenFile(reader: reader, extent: extent)
            return FileHandleID(rawValue: state.next)
        }
    }

    func file(for handle: FileHandleID) -> OpenFile? {
        state.withLock { $0.files[handle.rawValue] }
    }

    func reader(for handle: FileHandleID) -> PackReader? {
        file(for: handle)?.reader
    }

    /// Removes and returns the handle's reader (release).
    func remove(_ handle: FileHandleID) -> PackReader? {
        state.withLock { $0.files.removeValue(forKey: handle.rawValue)?.reader }
    }

    /// Open file handles right now.
    var count: Int { state.withLock { $0.files.count } }
}
