import Foundation
import NIOCore
import ODRFSCore
import ODRFSRuntime
import Synchronization

/// An origin that is a dist dir on a local or network filesystem.
///
/// Every `open(2)` and `read(2)` runs on the origin's own ``IOExecutor`` and is bounded
/// by `fetchDeadline` without progress, like an HTTP fetch: a dist dir on NFS, sshfs
/// or another FUSE mount can stop answering, `poll(2)` always calls a regular file
/// readable, and a thread blocked in the kernel cannot be interrupted. Such a thread is
/// left behind (it finishes when the filesystem answers, releasing what it opened); the
/// download fails with `.unreachable` at the deadline. Stuck threads tie up only the file
/// origins' executor, never the cache's or the cooperative pool.
public struct FileOrigin: Origin {
    public let root: String
    let fetchDeadline: Duration
    let io: IOExecutor

    /// The size of each read; large enough that syscalls do not dominate, small
    /// enough that memory stays flat whatever the pack size.
    static let readSize = 1 << 20

    /// Checks that `root` is a directory (blocking: called once, at mount time).
    public init(root: String, fetchDeadline: Duration = .seconds(30), io: IOExecutor? = nil) throws(FetchError) {
        var info = stat()
        guard stat(root, &info) == 0 else {
            throw FetchError(.unreachable, "origin \(root) is not readable: \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw FetchError(.invalidOrigin, "origin \(root) is not a directory (expected a dist dir made by `odrfs build`)")
        }
        self.root = root.hasSuffix("/") && root.count > 1 ? String(root.dropLast()) : root
        self.fetchDeadline = fetchDeadline
        self.io = io ?? Self.sharedExecutor
    }

    /// The threads every file origin of the process reads on: twice the default
    /// `--max-downloads`, so eight reads stuck on a dead filesystem leave eight for others.
    /// Shared, because a pool's threads live as long as the process.
    static let sharedExecutor = IOExecutor(name: "odrfs-origin", threads: 16)

    public var displayName: String { root }

    public func download(
        _ path: String,
        expectedBytes: ByteCount,
        into consume: (ByteBuffer) async throws(FetchError) -> Void
    ) async throws(FetchError) {
        let fullPath = root + "/" + path
        let opened = await io.run(deadline: fetchDeadline, {
            let fd = open(fullPath, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
            return fd >= 0 ? Result<Int32, Errno32>.success(fd) : .failure(Errno32(errno))
        }, onLate: { result in
            if case .success(let fd) = result { close(fd) }
        })
        let fd: Int32
        switch opened {
        case .finished(.success(let descriptor)):
            fd = descriptor
        case .finished(.failure(let code)):
            let kind: FetchError.Kind = code.value == ENOENT ? .notFound : .unreachable
            throw FetchError(kind, "cannot open \(fullPath) on origin: \(code)")
        case .timedOut:
            throw FetchError(.unreachable, "origin \(root) did not answer: open(\(path)) took longer than \(fetchDeadline)")
        case .cancelled:
            throw FetchError(.cancelled, "download of \(fullPath) cancelled")
        }
        // Closed by whoever is last: this function, or a read that returns after its deadline.
        let descriptor = SharedDescriptor(fd)
        var total: Int64 = 0
        while true {
            let outcome = await io.run(deadline: fetchDeadline, { () -> Result<ByteBuffer, Errno32> in
                descriptor.read(upTo: Self.readSize)
            })
            let chunk: ByteBuffer
            switch outcome {
            case .finished(.success(let bytes)):
                chunk = bytes
            case .finished(.failure(let code)):
                descriptor.release(closingOn: io)
                throw FetchError(.unreachable, "cannot read \(fullPath) on origin: \(code)")
            case .timedOut:
                descriptor.release(closingOn: io)
                throw FetchError(.unreachable, "origin \(root) stalled: no byte of \(path) for \(fetchDeadline)")
            case .cancelled:
                descriptor.release(closingOn: io)
                throw FetchError(.cancelled, "download of \(fullPath) cancelled")
            }
            if chunk.readableBytes == 0 {
                descriptor.release(closingOn: io)
                return
            }
            total += Int64(chunk.readableBytes)
            if total > expectedBytes.value {
                descriptor.release(closingOn: io)
                throw FetchError(.corrupt, "\(fullPath) on origin is larger than the \(expectedBytes) the manifest records")
            }
            do {
                try await consume(chunk)
            } catch {
                descriptor.release(closingOn: io)
                throw error
            }
            if Task.isCancelled {
                descriptor.release(closingOn: io)
                throw FetchError(.cancelled, "download of \(fullPath) cancelled")
            }
        }
    }
}

/// An errno value with its message, for results that cross threads.
struct Errno32: Error, Sendable, CustomStringConvertible {
    let value: Int32
    init(_ value: Int32) { self.value = value }
    var description: String { String(cString: strerror(value)) }
}

/// A descriptor shared by the downloading task and a read that may outlive it: closed
/// once both are done with it, never while a read is in the kernel.
final class SharedDescriptor: Sendable {
    private struct State {
        var fd: Int32
        var reading = false
        var released = false
    }

    private let state: Mutex<State>

    init(_ fd: Int32) { state = Mutex(State(fd: fd)) }

    /// One blocking read (retrying EINTR and EAGAIN, which O_NONBLOCK gives only for
    /// pipes and sockets, waiting with poll).
    func read(upTo count: Int) -> Result<ByteBuffer, Errno32> {
        guard let fd = state.withLock({ state -> Int32? in
            guard !state.released else { return nil }
            state.reading = true
            return state.fd
        }) else { return .failure(Errno32(EBADF)) }
        defer { finishRead() }
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        while true {
            var code: Int32 = 0
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer in
                let n = Glibc.read(fd, pointer.baseAddress, count)
                if n < 0 { code = errno }
                return max(n, 0)
            }
            switch code {
            case 0:
                // Bytes, or an empty buffer at end of file.
                return .success(buffer)
            case EINTR:
                continue
            case EAGAIN:
                // O_NONBLOCK only matters for a FIFO or socket planted in the dist dir.
                // Given up on (released): stop rather than wait on it forever.
                if state.withLock({ $0.released }) { return .failure(Errno32(ETIMEDOUT)) }
                var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                _ = poll(&descriptor, 1, 1000)
            default:
                return .failure(Errno32(code))
            }
        }
    }

    private func finishRead() {
        let close = state.withLock { state -> Int32? in
            state.reading = false
            return state.released ? state.fd : nil
        }
        if let close { Glibc.close(close) }
    }

    /// The owner is done with the descriptor: closed soon on `io`, or when the read in flight
    /// ends. The owner is a task: close(2) of a file on a stalled FUSE or network mount
    /// waits for that filesystem (FLUSH), which must not hold a cooperative thread.
    func release(closingOn io: IOExecutor) {
        let close = state.withLock { state -> Int32? in
            guard !state.released else { return nil }
            state.released = true
            return state.reading ? nil : state.fd
        }
        if let close { io.submit { _ = Glibc.close(close) } }
    }
}
