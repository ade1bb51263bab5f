import ODRFSCore
import Testing
@testable import ODRFSFetch

/// The `multipart/byteranges` reader: what a well-formed body yields at every chunk size,
/// and that every malformed or hostile body is refused with an error (never a trap, never
/// a byte outside the ranges asked for).
@Suite
struct MultipartByteRangesTests {
    static let file = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
    static let requested: [Range<Int64>] = [0..<10, 20..<30, 100..<200]

    static func part(_ range: Range<Int64>, total: String = "1000", boundary: String = "B0UND", extraHeaders: String = "") -> [UInt8] {
        Array("\r\n--\(boundary)\r\nContent-Type: application/octet-stream\r\n\(extraHeaders)Content-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/\(total)\r\n\r\n".utf8)
            + file[Int(range.lowerBound)..<Int(range.upperBound)]
    }

    static let closing = Array("\r\n--B0UND--\r\n".utf8)

    /// Feeds `body` in chunks of `chunkSize`; returns the bytes received per offset and
    /// whether the reader completed, or throws its failure.
    static func read(_ body: [UInt8], chunkSize: Int = 7, requested: [Range<Int64>] = requested) throws -> (bytes: [Int64: UInt8], complete: Bool) {
        var parser = MultipartByteRanges(boundary: "B0UND", requested: requested, fileBytes: 1000)
        var received: [Int64: UInt8] = [:]
        var start = 0
        while start < body.count, !parser.isComplete {
            let chunk = Array(body[start..<min(start + chunkSize, body.count)])
            start += chunkSize
            let pieces = try chunk.withUnsafeBytes { try parser.feed($0) }
            for piece in pieces {
                for (index, offset) in zip(piece.bytes, piece.offset...) {
                    #expect(received.updateValue(chunk[index], forKey: offset) == nil, "byte \(offset) twice")
                }
            }
        }
        return (received, parser.isComplete)
    }

    static func expectAllRequested(_ received: [Int64: UInt8]) {
        #expect(received.count == 120)
        for range in requested {
            for offset in range { #expect(received[offset] == file[Int(offset)]) }
        }
    }

    @Test(arguments: [1, 2, 3, 7, 64, 4096])
    func aWellFormedBodyYieldsEveryRequestedByteAtAnyChunkSize(chunkSize: Int) throws {
        let body = Self.part(0..<10) + Self.part(20..<30) + Self.part(100..<200) + Self.closing
        let (received, complete) = try Self.read(body, chunkSize: chunkSize)
        #expect(complete)
        Self.expectAllRequested(received)
    }

    @Test func partsInAnyOrderWithPreambleEpilogueAndPaddingAreRead() throws {
        // No CRLF before the first delimiter, spaces after one, `*` total, other headers, an epilogue.
        let body = Array("preamble text\r\n".utf8) + Array(Self.part(100..<200, total: "*", extraHeaders: "X-Other: 1\r\n").dropFirst(2))
            + Array("\r\n--B0UND  \t".utf8) + Array(Self.part(0..<10).dropFirst(2 + 7))
            + Self.part(20..<30) + Self.closing + Array("epilogue is never read".utf8)
        let (received, complete) = try Self.read(body)
        #expect(complete)
        Self.expectAllRequested(received)
    }

    @Test func aTruncatedBodyIsIncompleteNotAnError() throws {
        let body = Self.part(0..<10) + Self.part(20..<30) + Self.part(100..<200) + Self.closing
        for cut in [0, 5, 40, 100, body.count - 3] {
            let (_, complete) = try Self.read(Array(body.prefix(cut)))
            #expect(!complete, "complete after \(cut) of \(body.count) bytes")
        }
    }

    static let malformed: [(String, [UInt8])] = [
        ("an unrequested range", part(0..<10) + part(30..<40) + part(20..<30) + part(100..<200) + closing),
        ("a part cutting a requested range", part(5..<25) + part(100..<200) + closing),
        ("a range sent twice", part(0..<10) + part(0..<10) + part(20..<30) + part(100..<200) + closing),
        ("a missing range before the end", part(0..<10) + part(20..<30) + closing),
        ("another file size", part(0..<10, total: "999") + part(20..<30) + part(100..<200) + closing),
        ("a range past the file", part(0..<10) + Array("\r\n--B0UND\r\nContent-Range: bytes 990-1009/*\r\n\r\n".utf8)),
        ("a part without Content-Range", Array("\r\n--B0UND\r\nContent-Type: x\r\n\r\nabc".utf8)),
        ("two Content-Range headers", Array("\r\n--B0UND\r\nContent-Range: bytes 0-9/1000\r\nContent-Range: bytes 0-9/1000\r\n\r\n".utf8)),
        ("a malformed Content-Range", Array("\r\n--B0UND\r\nContent-Range: bytes 9-0/1000\r\n\r\n".utf8)),
        ("an overflowing Content-Range", Array("\r\n--B0UND\r\nContent-Range: bytes 0-9223372036854775807/9223372036854775807\r\n\r\n".utf8)),
        ("a header line without colon", Array("\r\n--B0UND\r\nContent-Range bytes 0-9/1000\r\n\r\n".utf8)),
        ("a part longer than its range", part(0..<10) + Array("extra".utf8) + part(20..<30)),
        ("a part followed by no delimiter", part(0..<10) + Array("\r\n--OTHER\r\n".utf8)),
        ("no parts", Array("\r\n--B0UND--\r\n".utf8)),
        ("an endless preamble", [UInt8](repeating: UInt8(ascii: "a"), count: 5000)),
        ("an endless preamble of short lines", Array(String(repeating: "a\r\n", count: 2000).utf8)),
        ("an endless header line", Array("\r\n--B0UND\r\nX: ".utf8) + [UInt8](repeating: 0x41, count: 2000)),
        ("an endless header block", Array("\r\n--B0UND\r\n".utf8) + Array(String(repeating: "X-A: b\r\n", count: 1000).utf8)),
    ]

    @Test(arguments: [1, 7, 4096])
    func partsMergedAcrossSmallGapsYieldOnlyTheRequestedBytes(chunkSize: Int) throws {
        // RFC 9110 lets a server coalesce ranges separated by a small gap: 0-29 holds 0..<10
        // and 20..<30, and the ten bytes between them are read and dropped.
        let body = Self.part(0..<30) + Self.part(100..<200) + Self.closing
        let (received, complete) = try Self.read(body, chunkSize: chunkSize)
        #expect(complete)
        Self.expectAllRequested(received)
        // A part that carries a requested range plus a byte or two more is taken the same way.
        let (more, done) = try Self.read(Self.part(0..<10) + Self.part(18..<31) + Self.part(100..<200) + Self.closing, chunkSize: chunkSize)
        #expect(done)
        Self.expectAllRequested(more)
    }

    @Test func mergedGapsAreBoundedOverTheWholeBody() throws {
        // Two 10-byte ranges 5 MB apart in a 10 MiB file, sent as one part: 5 MB nobody asked
        // for, over the 1 MiB allowance. Refused at the part's header, before any byte.
        var parser = MultipartByteRanges(boundary: "B0UND", requested: [0..<10, 5_000_000..<5_000_010], fileBytes: 10 << 20)
        let header = Array("\r\n--B0UND\r\nContent-Range: bytes 0-5000009/10485760\r\n\r\n".utf8)
        #expect(throws: MultipartByteRanges.Failure.self) { _ = try header.withUnsafeBytes { try parser.feed($0) } }
    }

    @Test(arguments: malformed.indices)
    func aMalformedBodyIsAFailure(index: Int) {
        let (name, body) = Self.malformed[index]
        for chunkSize in [1, 5, 4096] {
            #expect(throws: MultipartByteRanges.Failure.self, "\(name), chunks of \(chunkSize)") {
                _ = try Self.read(body, chunkSize: chunkSize)
            }
        }
    }

    @Test func theBoundaryComesFromAMultipartContentTypeOnly() {
        #expect(MultipartByteRanges.boundary(fromContentType: "multipart/byteranges; boundary=3d6b6a416f9b5") == "3d6b6a416f9b5")
        #expect(MultipartByteRanges.boundary(fromContentType: "Multipart/ByteRanges;charset=x; Boundary=\"a b\"") == "a b")
        #expect(MultipartByteRanges.boundary(fromContentType: "multipart/byteranges") == nil)
        #expect(MultipartByteRanges.boundary(fromContentType: "multipart/byteranges; boundary=") == nil)
        #expect(MultipartByteRanges.boundary(fromContentType: "multipart/byteranges; boundary=\(String(repeating: "x", count: 71))") == nil)
        #expect(MultipartByteRanges.boundary(fromContentType: "multipart/byteranges; boundary=a\u{1}b") == nil)
        #expect(MultipartByteRanges.boundary(fromContentType: "application/octet-stream; boundary=abc") == nil)
    }

    @Test func remainingRangesShrinkAsBytesArrive() throws {
        var ranges = try ByteRanges([100..<200, 0..<10, 5..<20, 20..<30, 50..<50], fileBytes: ByteCount(1000), path: "p")
        #expect(ranges.ranges == [0..<30, 100..<200])
        #expect(ranges.headerValue == "bytes=0-29,100-199")
        ranges.remove(0..<10)
        ranges.remove(150..<160)
        #expect(ranges.ranges == [10..<30, 100..<150, 160..<200])
        #expect(ranges.byteCount == 110)
        #expect(throws: FetchError.self) { try ByteRanges([990..<1001], fileBytes: ByteCount(1000), path: "p") }
        let starts: [Int64] = (0..<130).map { Int64($0) * 10 }
        let many = try ByteRanges(starts.map { $0..<($0 + 5) }, fileBytes: ByteCount(2000), path: "p")
        #expect(many.batches(of: 64).map(\.count) == [64, 64, 2])
    }
}
