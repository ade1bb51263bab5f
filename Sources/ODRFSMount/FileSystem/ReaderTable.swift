import FUSEKit
import ODRFSCore
import Synchronization

/// Open files: `FileHandleID → PackReader`. The handle owns its reader from open to
/// release; the kernel hands the id back with every read.
///
/// Ids count up from 1 and are never reused during a mount, so a stale id (which the
/// kernel never sends) would find nothing rather than another file's reader. Bit 63 is
/// left to `VirtualFileTable`.
final class ReaderTable: Sendable {
    private struct State {
        var next: UInt64 = 0
        var readers: [UInt64: PackReader] = [:]
    }

    private let state = Mutex(State())

    /// Stores `reader` and returns its handle.
    func insert(_ reader: PackReader) -> FileHandleID {
        state.withLock { state in
            state.next += 1
            state.readers[state.next] = reader
            return FileHandleID(rawValue: state.next)
        }
    }

    func reader(for handle: FileHandleID) -> PackReader? {
        state.withLock { $0.readers[handle.rawValue] }
    }

    /// Removes and returns the handle's reader (release).
    func remove(_ handle: FileHandleID) -> PackReader? {
        state.withLock { $0.readers.removeValue(forKey: handle.rawValue) }
    }

    /// Open file handles right now.
    var count: Int { state.withLock { $0.readers.count } }
}
