import NIOCore

/// One unit of the control protocol's framing: a line, or the news that a line grew
/// past the limit (nothing after it is read).
enum ControlFrame: Equatable, Sendable {
    /// One line, newline excluded (a trailing `\r` is kept: JSON ignores it as whitespace).
    case line(ByteBuffer)
    /// A line longer than the limit arrived; the rest of the stream is discarded.
    case oversized
}

/// Splits a byte stream into `\n`-terminated lines of at most `limit` bytes, on the
/// event loop. A partial line at end of stream is a truncated message: dropped.
///
/// Only the bytes not yet searched are scanned for a newline, so a long line arriving
/// in small pieces costs linear, not quadratic, time.
struct LineFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ControlFrame

    let limit: Int
    /// Bytes after the reader index already known to hold no newline.
    private var searched = 0
    private var overflowed = false

    init(limit: Int) {
        self.limit = limit
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let frame = next(&buffer) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(frame))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while let frame = next(&buffer) {
            context.fireChannelRead(wrapInboundOut(frame))
        }
        buffer.moveReaderIndex(to: buffer.writerIndex)   // a truncated last message
        return .needMoreData
    }

    /// The next frame in `buffer`, consuming it; nil when more bytes are needed.
    mutating func next(_ buffer: inout ByteBuffer) -> ControlFrame? {
        guard !overflowed else {
            buffer.moveReaderIndex(to: buffer.writerIndex)
            return nil
        }
        let view = buffer.readableBytesView
        let start = view.startIndex + searched
        if let newline = view[start...].firstIndex(of: UInt8(ascii: "\n")) {
            let length = newline - view.startIndex
            searched = 0
            guard length <= limit else { return overflow(&buffer) }
            let line = buffer.readSlice(length: length)!   // within the readable bytes: checked above
            buffer.moveReaderIndex(forwardBy: 1)
            return .line(line)
        }
        searched = view.count
        return view.count > limit ? overflow(&buffer) : nil
    }

    private mutating func overflow(_ buffer: inout ByteBuffer) -> ControlFrame {
        overflowed = true
        searched = 0
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .oversized
    }
}
