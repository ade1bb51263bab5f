import Foundation

/// An incremental, strictly bounded reader of a `multipart/byteranges` response body
/// (RFC 9110 §14.6), the answer to a request for several byte ranges.
///
/// The body is hostile input. The reader accepts only what was asked: each part's
/// `Content-Range`, inside the file of `fileBytes` bytes, must hold one or more of the
/// requested ranges not seen before, whole, and overlap no other one still pending. A
/// server may merge ranges separated by small gaps into one part (RFC 9110 §14.2): the
/// gaps' bytes are read and dropped, at most ``maximumUnwantedBytes`` or the requested
/// bytes, whichever is more, over the whole body. Parts may come in any order. Every
/// section that is not a part's bytes is bounded (preamble, each header line, each part's
/// header block), so the whole body is bounded by the requested bytes, the gaps' and
/// ``maximumFraming`` per part. A part's bytes are never searched for the boundary: its
/// Content-Range says how many there are. Anything else is a ``Failure``, never a trap.
///
/// Bytes go in with ``feed(_:)`` in chunks of any size; out come ``Piece``s, each a span of
/// the chunk just fed and its offset in the file. ``isComplete`` turns true at the closing
/// delimiter, after which the caller stops reading (an epilogue is never looked at).
struct MultipartByteRanges {
    /// Why a body was refused; the message names what was wrong, not the bytes.
    struct Failure: Error, CustomStringConvertible, Equatable {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Bytes of the chunk last fed (`bytes`, indexes into it) that belong at `offset` in the file.
    struct Piece: Equatable {
        var offset: Int64
        var bytes: Range<Int>
    }

    /// The longest header line, delimiter line or preamble line accepted.
    static let maximumLine = 1024
    /// The most bytes of one part's header block, and of the preamble.
    static let maximumHeaderBlock = 4096
    /// Framing one part may add to the body (its header block plus the lines around it).
    static let maximumFraming = maximumHeaderBlock + 3 * maximumLine
    /// Bytes between requested ranges that merged parts may carry, over the whole body, if
    /// the requested bytes are fewer.
    static let maximumUnwantedBytes: Int64 = 1 << 20

    private enum State {
        /// Before the first delimiter line.
        case preamble(seen: Int)
        /// A part's header lines; `range` once its Content-Range was read.
        case headers(range: Range<Int64>?, seen: Int)
        /// `remaining` bytes of the part at file offset `next`.
        case body(next: Int64, remaining: Int64)
        /// The CRLF that ends a part's bytes.
        case afterBody
        /// The delimiter line after a part.
        case delimiter
        /// The closing delimiter was read.
        case done
    }

    private let delimiter: [UInt8]
    private let fileBytes: Int64
    /// The requested ranges not yet received.
    private(set) var pending: Set<Range<Int64>>
    /// The requested ranges the current part holds, sorted: only their bytes are handed on.
    private var partRanges: [Range<Int64>] = []
    /// Gap bytes the body may still carry, and has carried.
    private let unwantedAllowance: Int64
    private var unwantedSeen: Int64 = 0
    private var state = State.preamble(seen: 0)
    private var line: [UInt8] = []

    /// - Parameters:
    ///   - boundary: from the response's Content-Type (``boundary(fromContentType:)``).
    ///   - requested: the ranges the request asked for, inside the file, none empty.
    init(boundary: String, requested: [Range<Int64>], fileBytes: Int64) {
        delimiter = Array(("--" + boundary).utf8)
        self.fileBytes = fileBytes
        pending = Set(requested)
        // Requested ranges lie inside the file: the sum fits.
        unwantedAllowance = max(requested.reduce(0) { $0 + Int64($1.count) }, Self.maximumUnwantedBytes)
    }

    /// The closing delimiter was read and every requested range arrived.
    var isComplete: Bool {
        if case .done = state { return true }
        return false
    }

    /// Reads `chunk`, returning the part bytes in it in order.
    mutating func feed(_ chunk: UnsafeRawBufferPointer) throws(Failure) -> [Piece] {
        var pieces: [Piece] = []
        var index = 0
        while index < chunk.count {
            switch state {
            case .body(let next, let remaining):
                let take = Int(min(Int64(chunk.count - index), remaining))
                // Only the requested ranges' bytes of the span [next, next + take).
                let end = next + Int64(take)
                for wanted in partRanges where wanted.lowerBound < end && next < wanted.upperBound {
                    let low = max(next, wanted.lowerBound), high = min(end, wanted.upperBound)
                    pieces.append(Piece(offset: low, bytes: (index + Int(low - next))..<(index + Int(high - next))))
                }
                index += take
                // take ≤ remaining, and next + remaining is a range end inside the file.
                state = remaining == Int64(take) ? .afterBody : .body(next: next + Int64(take), remaining: remaining - Int64(take))
            case .done:
                // Nothing after the closing delimiter is read.
                return pieces
            default:
                let byte = chunk[index]
                index += 1
                if byte == UInt8(ascii: "\n") {
                    if line.last == UInt8(ascii: "\r") { line.removeLast() }
                    let complete = line
                    line.removeAll(keepingCapacity: true)
                    try take(line: complete)
                } else {
                    guard line.count < Self.maximumLine else { throw Failure("a line of the multipart body is longer than \(Self.maximumLine) bytes") }
                    line.append(byte)
                    try count(bytes: 1)
                }
            }
        }
        return pieces
    }

    /// Counts framing bytes against the bound of the section they are in.
    private mutating func count(bytes: Int) throws(Failure) {
        switch state {
        case .preamble(let seen):
            guard seen < Self.maximumHeaderBlock else { throw Failure("the multipart body has no delimiter in its first \(Self.maximumHeaderBlock) bytes") }
            state = .preamble(seen: seen + bytes)
        case .headers(let range, let seen):
            guard seen < Self.maximumHeaderBlock else { throw Failure("a part's headers are longer than \(Self.maximumHeaderBlock) bytes") }
            state = .headers(range: range, seen: seen + bytes)
        default:
            break
        }
    }

    private mutating func take(line: [UInt8]) throws(Failure) {
        switch state {
        case .preamble:
            try count(bytes: 1)
            switch delimiterKind(line) {
            case .open: state = .headers(range: nil, seen: 0)
            case .close: throw Failure("the multipart body has no parts")
            case nil: break
            }
        case .headers(let range, let seen):
            guard !line.isEmpty else {
                guard let range else { throw Failure("a part has no Content-Range") }
                state = .body(next: range.lowerBound, remaining: Int64(range.count))
                return
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { throw Failure("a part's header line has no colon") }
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            guard name == "content-range" else {
                state = .headers(range: range, seen: seen + 1)
                return
            }
            guard range == nil else { throw Failure("a part has two Content-Range headers") }
            state = .headers(range: try accept(String(decoding: line[(colon + 1)...], as: UTF8.self)), seen: seen + 1)
        case .afterBody:
            guard line.isEmpty else { throw Failure("a part is longer than its Content-Range") }
            state = .delimiter
        case .delimiter:
            switch delimiterKind(line) {
            case .open: state = .headers(range: nil, seen: 0)
            case .close:
                guard pending.isEmpty else { throw Failure("the multipart body ended without \(pending.count) of the requested ranges") }
                state = .done
            case nil: throw Failure("a part is not followed by a delimiter")
            }
        case .body, .done:
            break
        }
    }

    /// The range a part's Content-Range names, if it holds pending ranges whole (see the
    /// type's documentation); those ranges become the part's.
    private mutating func accept(_ value: String) throws(Failure) -> Range<Int64> {
        guard let answered = ContentRange(header: value) else { throw Failure("a part has a malformed Content-Range") }
        guard answered.total == nil || answered.total == fileBytes, answered.last < fileBytes else {
            throw Failure("a part's Content-Range \(answered.first)-\(answered.last) does not fit the \(fileBytes)-byte file")
        }
        // last < fileBytes ≤ Int64.max: last + 1 cannot overflow.
        let range = answered.first..<(answered.last + 1)
        if pending.remove(range) != nil {
            partRanges = [range]
            return range
        }
        // Merged: every pending range it touches must lie inside it.
        let held = pending.filter { $0.overlaps(range) }.sorted { $0.lowerBound < $1.lowerBound }
        guard !held.isEmpty, held.allSatisfy({ range.lowerBound <= $0.lowerBound && $0.upperBound <= range.upperBound }) else {
            throw Failure("a part holds bytes \(answered.first)-\(answered.last), which were not asked for or came twice")
        }
        let gap = Int64(range.count) - held.reduce(0) { $0 + Int64($1.count) }
        guard gap <= unwantedAllowance - unwantedSeen else {
            throw Failure("a part holds bytes \(answered.first)-\(answered.last): more bytes between the ranges asked for than the \(unwantedAllowance) allowed")
        }
        unwantedSeen += gap
        for wanted in held { pending.remove(wanted) }
        partRanges = held
        return range
    }

    private enum DelimiterKind {
        case open
        case close
    }

    /// Whether `line` is the boundary's delimiter ("--boundary"), or its closing form
    /// ("--boundary--"), allowing the trailing spaces or tabs RFC 2046 permits.
    private func delimiterKind(_ line: [UInt8]) -> DelimiterKind? {
        guard line.starts(with: delimiter) else { return nil }
        var rest = line[delimiter.count...]
        var kind = DelimiterKind.open
        if rest.starts(with: [UInt8(ascii: "-"), UInt8(ascii: "-")]) {
            kind = .close
            rest = rest.dropFirst(2)
        }
        return rest.allSatisfy { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") } ? kind : nil
    }

    /// The boundary of a `multipart/byteranges` Content-Type, nil for another type or a
    /// boundary RFC 2046 does not allow (1 to 70 characters, no control characters).
    static func boundary(fromContentType value: String) -> String? {
        let parameters = value.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let type = parameters.first, type.lowercased() == "multipart/byteranges" else { return nil }
        for parameter in parameters.dropFirst() {
            guard let equals = parameter.firstIndex(of: "="),
                  parameter[..<equals].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else { continue }
            var boundary = parameter[parameter.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if boundary.count >= 2, boundary.hasPrefix("\""), boundary.hasSuffix("\"") {
                boundary = String(boundary.dropFirst().dropLast())
            }
            guard (1...70).contains(boundary.utf8.count),
                  boundary.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
            return boundary
        }
        return nil
    }
}
