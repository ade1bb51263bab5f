import ODRFSCore
import Foundation
import Hummingbird
import NIOCore
import NIOPosix

/// An open regular file in the dist dir and the validators derived from its metadata.
///
/// The descriptor stays open while the body streams, so a file replaced during a download
/// keeps serving the bytes the headers described. Reads use `pread` on NIO's thread pool,
/// one chunk at a time, and the writer's back-pressure keeps memory flat for any file size.
final class ServedFile: Sendable {
    let descriptor: Int32
    let size: Int64
    /// Modification time, whole seconds (what Last-Modified can express).
    let modifiedSeconds: Int
    /// A strong validator: inode, size and nanosecond mtime change whenever the bytes do
    /// (`odrfs build` writes new files; packs are content addressed and never rewritten).
    /// Seconds and nanoseconds stay separate: combined into one Int64 they overflow for an
    /// mtime after 2262, which a file can have (ext4 goes to 2446).
    let entityTag: String

    /// Bytes per `pread` and per body chunk.
    static let chunkSize = 256 * 1024

    init(descriptor: Int32, status info: stat) {
        self.descriptor = descriptor
        self.size = Int64(info.st_size)
        self.modifiedSeconds = Int(info.st_mtim.tv_sec)
        self.entityTag = "\"" + [UInt64(info.st_ino), UInt64(bitPattern: Int64(info.st_size)),
                                 UInt64(bitPattern: Int64(info.st_mtim.tv_sec)), UInt64(bitPattern: Int64(info.st_mtim.tv_nsec))]
            .map { String($0, radix: 16) }.joined(separator: "-") + "\""
    }

    deinit {
        close(descriptor)
    }

    var lastModified: String { HTTPDate.format(secondsSinceEpoch: modifiedSeconds) }

    /// A body that streams `range` and then reports the bytes written and the error, if the
    /// client went away (for the access log).
    func body(range: ClosedRange<Int64>, completion: @escaping @Sendable (Int64, (any Error)?) -> Void) -> ResponseBody {
        ResponseBody(contentLength: Int(range.count)) { writer in
            var offset = range.lowerBound
            do {
                while offset <= range.upperBound {
                    let wanted = Int(min(Int64(Self.chunkSize), range.upperBound - offset + 1))
                    let chunk = try await self.read(at: offset, count: wanted)
                    try await writer.write(chunk)
                    offset += Int64(chunk.readableBytes)
                }
                try await writer.finish(nil)
            } catch {
                completion(offset - range.lowerBound, error)
                throw error
            }
            completion(offset - range.lowerBound, nil)
        }
    }

    func read(at offset: Int64, count: Int) async throws -> ByteBuffer {
        let descriptor = self.descriptor
        return try await NIOThreadPool.singleton.runIfActive {
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            let read = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer in
                while true {
                    let result = pread(descriptor, pointer.baseAddress, count, off_t(offset))
                    if result >= 0 { return result }
                    if errno != EINTR { throw IOError(errnoCode: errno, reason: "pread") }
                }
            }
            // The file shrank under us: stop rather than send fewer bytes than Content-Length says.
            guard read > 0 else { throw IOError(errnoCode: EIO, reason: "file shrank while being served") }
            return buffer
        }
    }
}
