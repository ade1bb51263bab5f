import Foundation

/// Splits a byte stream into `\n`-terminated lines of bounded length.
struct LineBuffer {
    enum Item: Equatable {
        case line(Data)
        /// A line grew past the limit; nothing after it is read.
        case oversized
    }

    let limit: Int
    private var pending = Data()
    private(set) var isOverflowed = false

    init(limit: Int) {
        self.limit = limit
    }

    /// Appends `bytes` and returns the complete lines (newline excluded; a trailing
    /// `\r` is kept, JSON ignores it as whitespace).
    mutating func append(_ bytes: UnsafeRawBufferPointer) -> [Item] {
        guard !isOverflowed else { return [] }
        var items: [Item] = []
        var start = bytes.startIndex
        while let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) {
            pending.append(contentsOf: bytes[start..<newline])
            if pending.count > limit { return overflow(items) }
            items.append(.line(pending))
            pending = Data()
            start = newline + 1
        }
        pending.append(contentsOf: bytes[start...])
        if pending.count > limit { return overflow(items) }
        return items
    }

    /// Bytes left without a newline at end of stream (a truncated message).
    var remainder: Data? { pending.isEmpty || isOverflowed ? nil : pending }

    private mutating func overflow(_ items: [Item]) -> [Item] {
        isOverflowed = true
        pending = Data()
        return items + [.oversized]
    }
}

/// Reads lines from a socket on a dedicated thread (a control connection must never
/// block the cooperative pool) and hands them out as an async stream that ends at end
/// of stream, on a read error, after shutdown or after an oversized line.
enum LineReader {
    static func lines(from socket: UnixSocket, limit: Int, name: String) -> AsyncStream<LineBuffer.Item> {
        let (stream, continuation) = AsyncStream.makeStream(of: LineBuffer.Item.self)
        let thread = Thread {
            var buffer = LineBuffer(limit: limit)
            let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 1)
            defer { chunk.deallocate() }
            reading: while true {
                let count = socket.read(into: chunk)
                guard count > 0 else { break }
                for item in buffer.append(UnsafeRawBufferPointer(rebasing: chunk[..<count])) {
                    continuation.yield(item)
                    if item == .oversized { break reading }
                }
            }
            // A final line without its newline is a truncated message: dropped.
            continuation.finish()
        }
        thread.name = name
        thread.start()
        return stream
    }
}

/// Writes lines to a socket from a dedicated thread, in order, so that no caller —
/// least of all a download's progress callback — ever blocks on a slow client.
///
/// A client that stops reading while more than `limit` bytes wait is disconnected.
final class LineWriter: @unchecked Sendable {
    private let socket: UnixSocket
    private let limit: Int
    private let condition = NSCondition()
    // GUARDED_BY(condition)
    private var queue: [Data] = []
    private var queuedBytes = 0
    private var finishing = false
    private var finished = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    init(socket: UnixSocket, limit: Int = 8 * 1024 * 1024, name: String) {
        self.socket = socket
        self.limit = limit
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// Queues one line (a newline is added); false if the writer is finishing or the
    /// client is too far behind (it is then disconnected).
    @discardableResult
    func send(_ line: Data) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !finishing else { return false }
        guard queuedBytes + line.count < limit else {
            finishing = true
            queue.removeAll()
            socket.shutdown()
            condition.signal()
            return false
        }
        var framed = line
        framed.append(UInt8(ascii: "\n"))
        queue.append(framed)
        queuedBytes += framed.count
        condition.signal()
        return true
    }

    /// Writes what is queued, then stops; with `shutdown`, then also shuts the socket
    /// down (so the peer and the reader see the end). Returns when the thread is done.
    func finish(shutdown: Bool) async {
        await withCheckedContinuation { continuation in
            condition.lock()
            finishing = true
            if finished {
                condition.unlock()
                continuation.resume()
            } else {
                waiters.append(continuation)
                condition.signal()
                condition.unlock()
            }
        }
        if shutdown { socket.shutdown() }
    }

    private func run() {
        while true {
            condition.lock()
            while queue.isEmpty && !finishing { condition.wait() }
            let batch = queue
            queue.removeAll()
            queuedBytes = 0
            let done = finishing && batch.isEmpty
            condition.unlock()
            if done { break }
            for line in batch where !socket.send(line) {
                // The peer is gone: wake the reader, drop the rest.
                socket.shutdown()
                condition.lock()
                finishing = true
                queue.removeAll()
                condition.unlock()
                break
            }
        }
        condition.lock()
        finished = true
        let waiting = waiters
        waiters.removeAll()
        condition.unlock()
        waiting.forEach { $0.resume() }
    }
}
