import Foundation
import Testing
@testable import ODRFSServer

/// Requests that try to leave the dist dir: each must be refused with 400 or 404, and the
/// file outside must never be sent.
@Suite(.timeLimit(.minutes(1)))
struct PathSafetyTests {
    @Test(arguments: [
        "/../etc/passwd",
        "/%2e%2e/etc/passwd",
        "/%2E%2E/%2E%2E/etc/passwd",
        "/packs/../../outside.txt",
        "/packs/%2e%2e/%2e%2e/outside.txt",
        "/packs/..%2f..%2foutside.txt",
        "//etc/passwd",
        "/./manifest.json",
        "/packs\\..\\..\\outside.txt",
        "/manifest.json%00.tar",
        "/etc/passwd",
        "/packs/escape.tar",
        "/packs/",
        "/",
        "/%zz",
        "*",
    ])
    func escapeAttemptIsRefused(target: String) async throws {
        try await withOriginServer { port, _, log in
            let response = try await RawHTTP.send(port: port, target: target)
            #expect([400, 404].contains(response.status), "\(target) gave \(response.status)")
            let text = String(decoding: response.body, as: UTF8.self)
            #expect(!text.contains("root:"), "\(target) leaked /etc/passwd")
            #expect(!text.contains("outside"), "\(target) leaked a file outside the dist dir")
            try await Task.sleep(for: .milliseconds(50))
            #expect(log.records.contains { $0.message == "request" && $0.metadata["http.note"] != nil })
        }
    }

    @Test func absoluteFormTargetNeverEscapes() async throws {
        try await withOriginServer { port, _, _ in
            let response = try await RawHTTP.send(port: port, target: "http://127.0.0.1/../../etc/passwd")
            #expect([400, 404].contains(response.status))
            #expect(!String(decoding: response.body, as: UTF8.self).contains("root:"))
        }
    }

    @Test func relativePathValidation() throws {
        #expect(try DistDirectory.relativePath(of: "/packs/a.tar") == "packs/a.tar")
        #expect(try DistDirectory.relativePath(of: "/packs/a%20b.tar") == "packs/a b.tar")
        for bad in ["packs/a.tar", "/a/../b", "/a/%2e%2e/b", "/a//b", "/a\\b", "/a%00", "/a/./b"] {
            #expect(throws: DistDirectory.Refusal.self, "\(bad)") { try DistDirectory.relativePath(of: bad) }
        }
    }
}
