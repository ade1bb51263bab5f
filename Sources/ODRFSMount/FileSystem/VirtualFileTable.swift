import FUSEKit
import Synchronization

/// Open handles of virtual files (`.odrfs/status`): each open gets a snapshot of
/// the content, so a reader sees one consistent table however it reads.
///
/// Virtual handles set the top bit, which no `ReaderTable` handle has.
final class VirtualFileTable: Sendable {
    private static let marker: UInt64 = 1 << 63
    private let state = Mutex<(next: UInt64, contents: [UInt64: [UInt8]])>((0, [:]))

    static func isVirtual(_ handle: FileHandleID) -> Bool {
        handle.rawValue & marker != 0
    }

    func open(_ content: [UInt8]) -> FileHandleID {
        state.withLock { state in
            state.next += 1
            let handle = Self.marker | state.next
            state.contents[handle] = content
            return FileHandleID(rawValue: handle)
        }
    }

    func read(_ handle: FileHandleID, offset: Int64, size: Int, request: consuming FUSERequest) {
        guard let content = state.withLock({ $0.contents[handle.rawValue] }) else {
            request.replyError(.badFileDescriptor)
            return
        }
        let start = Int(min(max(offset, 0), Int64(content.count)))
        let end = min(start + size, content.count)
        request.replyBytes(content[start..<end])
    }

    func close(_ handle: FileHandleID) {
        _ = state.withLock { $0.contents.removeValue(forKey: handle.rawValue) }
    }
}
