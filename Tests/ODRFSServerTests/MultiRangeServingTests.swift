import Foundation
import Testing
@testable import ODRFSServer

/// `odrfs serve` answering `Range: bytes=a-b,c-d,…`: one 206 `multipart/byteranges` whose
/// parts are the ranges asked for, sorted and merged; a single range left is a plain 206;
/// more than 64 parts, or a malformed spec, is the whole file; nothing satisfiable is 416.
@Suite(.timeLimit(.minutes(1)))
struct MultiRangeServingTests {
    let pack = TestDist.pack
    let path = TestDist.packPath

    /// One part of a multipart body: its headers (lowercased names) and bytes.
    struct Part {
        var headers: [String: String]
        var body: [UInt8]
    }

    /// Splits a multipart body by hand (independently of the client's reader): the framing
    /// must be exactly the RFC's, CRLF before every delimiter and a closing one at the end.
    static func parts(of body: [UInt8], boundary: String) throws -> [Part] {
        let delimiter = Array("\r\n--\(boundary)".utf8)
        var positions: [Int] = []
        var index = 0
        while index + delimiter.count <= body.count {
            if Array(body[index..<(index + delimiter.count)]) == delimiter {
                positions.append(index)
                index += delimiter.count
            } else {
                index += 1
            }
        }
        try #require(positions.first == 0, "the body starts with a delimiter")
        let closing = try #require(positions.last)
        #expect(Array(body[closing...]) == Array("\r\n--\(boundary)--\r\n".utf8), "the body ends with the closing delimiter")
        return try zip(positions, positions.dropFirst()).map { start, end in
            let section = Array(body[(start + delimiter.count)..<end])
            let separator = Array("\r\n\r\n".utf8)
            let split = try #require((0...(section.count - 4)).first { Array(section[$0..<($0 + 4)]) == separator })
            let lines = String(decoding: section[..<split], as: UTF8.self).components(separatedBy: "\r\n").filter { !$0.isEmpty }
            var headers: [String: String] = [:]
            for line in lines {
                let pair = line.split(separator: ":", maxSplits: 1)
                headers[pair[0].lowercased()] = pair[1].trimmingCharacters(in: .whitespaces)
            }
            return Part(headers: headers, body: Array(section[(split + 4)...]))
        }
    }

    func multipart(_ header: String, port: Int) async throws -> (RawResponse, [Part]) {
        let response = try await RawHTTP.send(port: port, target: path, headers: ["Range": header])
        try #require(response.status == 206)
        let type = try #require(response.header("Content-Type"))
        try #require(type.hasPrefix("multipart/byteranges; boundary="), "\(type)")
        #expect(response.header("Content-Length") == String(response.body.count))
        #expect(response.header("Content-Range") == nil)
        return (response, try Self.parts(of: response.body, boundary: String(type.dropFirst("multipart/byteranges; boundary=".count))))
    }

    @Test func severalRangesAreOneMultipartAnswer() async throws {
        try await withOriginServer { port, _, log in
            let (response, parts) = try await multipart("bytes=100-199, 0-9,20-29", port: port)
            #expect(parts.count == 3)
            for (part, range) in zip(parts, [0...9, 20...29, 100...199]) {
                #expect(part.headers["content-type"] == "application/octet-stream")
                #expect(part.headers["content-range"] == "bytes \(range.lowerBound)-\(range.upperBound)/1000")
                #expect(part.body == Array(pack[range]))
            }
            // The access log counts the body bytes sent, framing included.
            let logged = log.records.filter { $0.message == "request" }.last?.metadata["http.bytes"]
            #expect(logged == String(response.body.count))
        }
    }

    @Test func overlappingAndAdjacentRangesAreMerged() async throws {
        try await withOriginServer { port, _, _ in
            let (_, parts) = try await multipart("bytes=0-9,5-19,20-24,40-49,30-39,-10,995-", port: port)
            #expect(parts.map { $0.headers["content-range"] } == ["bytes 0-24/1000", "bytes 30-49/1000", "bytes 990-999/1000"])
            #expect(parts.map(\.body) == [Array(pack[0...24]), Array(pack[30...49]), Array(pack[990...999])])
            // Asking for the same bytes many times costs them once: the answer is never larger than the file.
            let (repeated, same) = try await multipart("bytes=" + Array(repeating: "0-499", count: 200).joined(separator: ",") + ",600-", port: port)
            #expect(same.count == 2)
            #expect(repeated.body.count < 1000 + 400)
        }
    }

    @Test func rangesMergedIntoOneAreAPlainPartialAnswer() async throws {
        try await withOriginServer { port, _, _ in
            for header in ["bytes=0-9,10-19", "bytes=0-19,5-10", "bytes=0-19,2000-3000"] {
                let response = try await RawHTTP.send(port: port, target: path, headers: ["Range": header])
                #expect(response.status == 206, "\(header)")
                #expect(response.header("Content-Range") == "bytes 0-19/1000", "\(header)")
                #expect(response.body == Array(pack[0...19]), "\(header)")
            }
        }
    }

    @Test func atMostSixtyFourPartsElseTheWholeFile() async throws {
        try await withOriginServer { port, _, _ in
            let ranges = (0..<65).map { "\($0 * 10)-\($0 * 10 + 4)" }
            let (_, parts) = try await multipart("bytes=" + ranges.prefix(64).joined(separator: ","), port: port)
            #expect(parts.count == 64)
            #expect(parts.last?.body == Array(pack[630...634]))
            let whole = try await RawHTTP.send(port: port, target: path, headers: ["Range": "bytes=" + ranges.joined(separator: ",")])
            #expect(whole.status == 200)
            #expect(whole.body == pack)
            // More specs than are read at all: the whole file too, even if they would merge.
            let long = try await RawHTTP.send(port: port, target: path, headers: ["Range": "bytes=" + Array(repeating: "0-1", count: 257).joined(separator: ",")])
            #expect(long.status == 200)
        }
    }

    @Test(arguments: ["bytes=0-9,abc", "bytes=0-9,,20-29", "bytes=0-9,9-3", "bytes=0-9,99999999999999999999-"])
    func aMalformedSpecGivesTheWholeFile(header: String) async throws {
        try await withOriginServer { port, _, _ in
            let response = try await RawHTTP.send(port: port, target: path, headers: ["Range": header])
            #expect(response.status == 200)
            #expect(response.body == pack)
        }
    }

    @Test func nothingSatisfiableIs416() async throws {
        try await withOriginServer { port, _, _ in
            let response = try await RawHTTP.send(port: port, target: path, headers: ["Range": "bytes=1000-1999,5000-,-0"])
            #expect(response.status == 416)
            #expect(response.header("Content-Range") == "bytes */1000")
        }
    }

    @Test func theParserMergesAndBounds() {
        #expect(ByteRangeRequest(header: "bytes=5-9,0-4", fileSize: 10) == .partial(0...9))
        #expect(ByteRangeRequest(header: "bytes=0-0,2-2", fileSize: 10) == .multipart([0...0, 2...2]))
        #expect(ByteRangeRequest(header: "bytes=0-0,2-2", fileSize: 0) == .unsatisfiable)
        #expect(ByteRangeRequest(header: "bytes=0-9223372036854775806,9223372036854775806-", fileSize: Int64.max) == .partial(0...(Int64.max - 1)))
    }
}
