import FUSEKit

/// The kernel's file handle for an open file: the descriptor of its pack, plus a flag
/// for handles opened while the pack was still downloading (progressive open), whose
/// reads must stay within the verified prefix. Bit 63 is left to virtual files.
struct PackHandle {
    private static let progressiveFlag: UInt64 = 1 << 62

    let descriptor: Int32
    let isProgressive: Bool

    init(descriptor: Int32, isProgressive: Bool) {
        self.descriptor = descriptor
        self.isProgressive = isProgressive
    }

    init(_ handle: FileHandleID) {
        descriptor = Int32(truncatingIfNeeded: handle.rawValue & 0xFFFF_FFFF)
        isProgressive = handle.rawValue & Self.progressiveFlag != 0
    }

    var id: FileHandleID {
        FileHandleID(rawValue: UInt64(UInt32(bitPattern: descriptor)) | (isProgressive ? Self.progressiveFlag : 0))
    }
}
