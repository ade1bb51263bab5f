import Foundation
import Testing
@testable import ODRFSServer

@Suite(.timeLimit(.minutes(1)))
struct OriginServerTests {
    let pack = TestDist.pack
    let path = TestDist.packPath

    @Test func fullGetHasLengthValidatorsAndBytes() async throws {
        try await withOriginServer { port, _, _ in
            let response = try await RawHTTP.send(port: port, target: path)
            #expect(response.status == 200)
            #expect(response.body == pack)
            #expect(response.header("Content-Length") == "1000")
            #expect(response.header("Accept-Ranges") == "bytes")
            let tag = try #require(response.header("ETag"))
            #expect(tag.hasPrefix("\"") && tag.hasSuffix("\""), "a strong ETag, usable in If-Range")
            #expect(response.header("Last-Modified")?.hasSuffix(" GMT") == true)
            #expect(response.header("Cache-Control")?.contains("immutable") == true)

            let manifest = try await RawHTTP.send(port: port, target: "/manifest.json")
            #expect(manifest.status == 200)
            #expect(manifest.header("Content-Type") == "application/json")
            #expect(manifest.header("Cache-Control") == "no-cache")
        }
    }

    @Test(arguments: [
        ("bytes=10-19", 10...19),
        ("bytes=990-", 990...999),
        ("bytes=-5", 995...999),
        ("bytes=500-5000", 500...999),
        ("bytes=0-0", 0...0),
        ("bytes=-5000", 0...999),
    ])
    func rangeGivesPartialContent(header: String, expected: ClosedRange<Int>) async throws {
        try await withOriginServer { port, _, _ in
            let response = try await RawHTTP.send(port: port, target: path, headers: ["Range": header])
            #expect(response.status == 206)
            #expect(response.body == Array(pack[expected]))
            #expect(response.header("Content-Range") == "bytes \(expected.lowerBound)-\(expected.upperBound)/1000")
            #expect(response.header("Content-Length") == String(expected.count))
        }
    }

    @Test(arguments: ["bytes=1000-", "bytes=5000-6000", "bytes=-0"])
    func unsatisfiableRangeIs416(header: String) async throws {
        try await withOriginServer { port, _, _ in
            let response = try await RawHTTP.send(port: port, target: path, headers: ["Range": header])
            #expect(response.status == 416)
            #expect(response.header("Content-Range") == "bytes */1000")
        }
    }

    @Test(arguments: ["bytes=abc", "bytes=0-1,abc", "items=0-5", "bytes=9-3"])
    func unusableRangeGivesWholeFile(header: String) async throws {
        try await withOriginServer { port, _, _ in
            let response = try await RawHTTP.send(port: port, target: path, headers: ["Range": header])
            #expect(response.status == 200)
            #expect(response.body == pack)
        }
    }

    @Test func headHasLengthButNoBody() async throws {
        try await withOriginServer { port, _, _ in
            let response = try await RawHTTP.send(port: port, method: "HEAD", target: path)
            #expect(response.status == 200)
            #expect(response.header("Content-Length") == "1000")
            #expect(response.header("ETag") != nil)
            #expect(response.body.isEmpty)
        }
    }

    @Test func conditionalRequests() async throws {
        try await withOriginServer { port, _, _ in
            let first = try await RawHTTP.send(port: port, target: path)
            let tag = try #require(first.header("ETag"))
            let modified = try #require(first.header("Last-Modified"))

            let unchanged = try await RawHTTP.send(port: port, target: path, headers: ["If-None-Match": tag])
            #expect(unchanged.status == 304)
            #expect(unchanged.body.isEmpty)
            let listed = try await RawHTTP.send(port: port, target: path, headers: ["If-None-Match": "\"other\", W/\(tag)"])
            #expect(listed.status == 304, "weak comparison for If-None-Match")
            let changed = try await RawHTTP.send(port: port, target: path, headers: ["If-None-Match": "\"other\""])
            #expect(changed.status == 200)
            #expect(changed.body == pack)

            let since = try await RawHTTP.send(port: port, target: path, headers: ["If-Modified-Since": modified])
            #expect(since.status == 304)
            let old = try await RawHTTP.send(port: port, target: path,
                                             headers: ["If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"])
            #expect(old.status == 200)
        }
    }

    @Test func ifRangeHonoursOnlyTheCurrentValidator() async throws {
        try await withOriginServer { port, _, _ in
            let tag = try #require(try await RawHTTP.send(port: port, method: "HEAD", target: path).header("ETag"))
            let matching = try await RawHTTP.send(port: port, target: path,
                                                  headers: ["Range": "bytes=100-", "If-Range": tag])
            #expect(matching.status == 206)
            #expect(matching.body == Array(pack[100...]))

            for stale in ["\"stale-etag\"", "W/\(tag)", "Sun, 06 Nov 1994 08:49:37 GMT"] {
                let response = try await RawHTTP.send(port: port, target: path,
                                                      headers: ["Range": "bytes=100-", "If-Range": stale])
                #expect(response.status == 200, "If-Range \(stale) must give the whole file")
                #expect(response.body == pack)
                #expect(response.header("Content-Length") == "1000")
            }
        }
    }

    @Test func onlyGetAndHeadAreServed() async throws {
        try await withOriginServer { port, _, _ in
            let response = try await RawHTTP.send(port: port, method: "DELETE", target: path)
            #expect(response.status == 405)
            #expect(response.header("Allow") == "GET, HEAD")
        }
    }

    @Test func tokenIsRequiredAndNeverLogged() async throws {
        try await withOriginServer(token: true) { port, _, log in
            let missing = try await RawHTTP.send(port: port, target: path)
            #expect(missing.status == 401)
            #expect(missing.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
            let wrong = try await RawHTTP.send(port: port, target: path, headers: ["Authorization": "Bearer nope"])
            #expect(wrong.status == 401)
            #expect(wrong.header("WWW-Authenticate")?.contains("invalid_token") == true)
            let prefix = try await RawHTTP.send(port: port, target: path,
                                                headers: ["Authorization": "Bearer " + TestDist.token.dropLast()])
            #expect(prefix.status == 401)
            let right = try await RawHTTP.send(port: port, target: path,
                                               headers: ["Authorization": "Bearer \(TestDist.token)"])
            #expect(right.status == 200)
            #expect(right.body == pack)
            let scheme = try await RawHTTP.send(port: port, target: path,
                                                headers: ["Authorization": "bearer \(TestDist.token)"])
            #expect(scheme.status == 200, "the auth scheme is case-insensitive")

            try await Task.sleep(for: .milliseconds(100))
            let records = log.records
            #expect(records.count >= 5)
            #expect(!records.contains { $0.text.contains(TestDist.token) })
            #expect(!records.contains { $0.text.contains("nope") })
        }
    }

    @Test func tokenFileInsideDistIsNotServed() async throws {
        try await withOriginServer { port, dist, _ in
            // The fixture's dist has a dot file; a plain name is guarded by the exclusion list.
            let hidden = try await RawHTTP.send(port: port, target: "/.hidden")
            #expect(hidden.status == 404)
            let directory = try DistDirectory(path: dist.dist, excluding: [dist.dist + "/manifest.json"])
            #expect(throws: DistDirectory.Refusal.self) { try directory.open(target: "/manifest.json") }
        }
    }
}
