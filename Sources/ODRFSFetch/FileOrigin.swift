import Foundation
import ODRFSCore

/// An origin that is a dist dir on a local or network filesystem.
public struct FileOrigin: Origin {
    public let root: String

    /// The size of each read; large enough that syscalls do not dominate, small
    /// enough that memory stays flat whatever the pack size.
    static let readSize = 1 << 20

    public init(root: String) throws(FetchError) {
        var info = stat()
        guard stat(root, &info) == 0 else {
            throw FetchError(.unreachable, "origin \(root) is not readable: \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw FetchError(.invalidOrigin, "origin \(root) is not a directory (expected a dist dir made by `odrfs build`)")
        }
        self.root = root.hasSuffix("/") && root.count > 1 ? String(root.dropLast()) : root
    }

    public var displayName: String { root }

    public func download(
        _ path: String,
        expectedBytes: ByteCount,
        into consume: (UnsafeRawBufferPointer) throws(FetchError) -> Void
    ) async throws(FetchError) {
        let fullPath = root + "/" + path
        let fd = open(fullPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            let kind: FetchError.Kind = code == ENOENT ? .notFound : .unreachable
            throw FetchError(kind, "cannot open \(fullPath) on origin: \(String(cString: strerror(code)))")
        }
        defer { close(fd) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.readSize, alignment: 16)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        while true {
            // Regular files are always readable; a pipe or a stalled network filesystem
            // may not be, and a cancelled download must not stay blocked in read(2).
            var pollfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while poll(&pollfd, 1, 200) == 0 {
                if Task.isCancelled { throw FetchError(.cancelled, "download of \(fullPath) cancelled") }
            }
            let count = read(fd, buffer.baseAddress, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw FetchError(.unreachable, "cannot read \(fullPath) on origin: \(String(cString: strerror(errno)))")
            }
            if count == 0 { return }
            total += Int64(count)
            if total > expectedBytes.value {
                throw FetchError(.corrupt, "\(fullPath) on origin is larger than the \(expectedBytes) the manifest records")
            }
            try consume(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            // A large local copy should not starve other tasks on the cooperative pool,
            // and an abandoned download should stop.
            await Task.yield()
            if Task.isCancelled {
                throw FetchError(.cancelled, "download of \(fullPath) cancelled")
            }
        }
    }
}
