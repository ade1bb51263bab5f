import FUSEKit

extension FUSERequest {
    /// Replies with a copy of `bytes` (small replies: xattrs, the status file).
    /// A closure cannot consume the request, so the bytes go through a scratch buffer.
    consuming func replyBytes(copying bytes: ArraySlice<UInt8>) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        defer { buffer.deallocate() }
        buffer.copyBytes(from: bytes)
        replyBytes(UnsafeRawBufferPointer(buffer))
    }
}
