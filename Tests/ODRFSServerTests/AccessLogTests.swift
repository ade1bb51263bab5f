import ODRFSCore
import Foundation
import Testing
@testable import ODRFSServer

@Suite(.timeLimit(.minutes(1)))
struct AccessLogTests {
    @Test func oneLinePerRequestWithTheFacts() async throws {
        try await withOriginServer { port, _, log in
            _ = try await RawHTTP.send(port: port, target: TestDist.packPath + "?secret=query",
                                       headers: ["Range": "bytes=100-199"])
            _ = try await RawHTTP.send(port: port, target: "/missing")
            try await Task.sleep(for: .milliseconds(100))
            let lines = log.records.filter { $0.message == "request" }
            #expect(lines.count == 2)
            let ranged = try #require(lines.first { $0.metadata["http.status"] == "206" })
            #expect(ranged.metadata["http.method"] == "GET")
            #expect(ranged.metadata["http.path"] == TestDist.packPath, "the query is not logged")
            #expect(ranged.metadata["http.bytes"] == "100")
            #expect(ranged.metadata["http.range"] == "bytes=100-199")
            #expect(ranged.metadata["http.duration_ms"] != nil)
            #expect(ranged.level == .info)
            let missing = try #require(lines.first { $0.metadata["http.status"] == "404" })
            #expect(missing.metadata["http.path"] == "/missing")
            #expect(!log.records.contains { $0.text.contains("secret=query") })
        }
    }

    @Test func rangeParsing() {
        #expect(ByteRangeRequest(header: nil, fileSize: 10) == .whole)
        #expect(ByteRangeRequest(header: "bytes=2-4", fileSize: 10) == .partial(2...4))
        #expect(ByteRangeRequest(header: "bytes=-3", fileSize: 10) == .partial(7...9))
        #expect(ByteRangeRequest(header: "bytes=8-", fileSize: 10) == .partial(8...9))
        #expect(ByteRangeRequest(header: "bytes=10-", fileSize: 10) == .unsatisfiable)
        #expect(ByteRangeRequest(header: "bytes=-1", fileSize: 0) == .unsatisfiable)
        #expect(ByteRangeRequest(header: "bytes=99999999999999999999-", fileSize: 10) == .whole)
        #expect(ByteRangeRequest(header: "bytes=-", fileSize: 10) == .whole)
    }

    @Test func httpDatesRoundTrip() {
        let text = HTTPDate.format(secondsSinceEpoch: 784_111_777)
        #expect(text == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse(text) == 784_111_777)
        #expect(HTTPDate.parse("yesterday") == nil)
    }
}
