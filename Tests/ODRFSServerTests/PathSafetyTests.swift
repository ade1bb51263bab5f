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

    // The `requestpath` fuzz target checks for this. Split as Characters, U+0600 (a prepend mark)
    // and the `/` after it were one Character, so `x\u{0600}/..` passed as one segment, and
    // `.` followed by a combining mark was no `.` prefix. The kernel compares bytes.
    @Test("a dot segment or dot file behind a prepend or combining mark is refused", arguments: [
        "/x%D8%80/../etc/passwd", "/x\u{0600}/../etc", "/x\u{0600}/.hidden", "/x\u{0600}//y", "/.%CC%81token",
    ])
    func graphemesDoNotHideSegments(target: String) {
        #expect(throws: DistDirectory.Refusal.self) { try DistDirectory.relativePath(of: target) }
    }

    /// The race `realpath` alone loses: a directory inside the dist dir is swapped for a
    /// symlink to the outside between the check and the open. The opened descriptor's own
    /// path gives it away.
    @Test func directorySwappedForASymlinkAfterTheCheckIsRefused() throws {
        let base = NSTemporaryDirectory() + "odrfs-swap-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let dist = base + "/dist", outside = base + "/outside"
        let manager = FileManager.default
        try manager.createDirectory(atPath: dist + "/packs", withIntermediateDirectories: true)
        try manager.createDirectory(atPath: outside, withIntermediateDirectories: true)
        defer { try? manager.removeItem(atPath: base) }
        try Data("inside".utf8).write(to: URL(fileURLWithPath: dist + "/packs/a.tar"))
        try Data("outside secret".utf8).write(to: URL(fileURLWithPath: outside + "/a.tar"))
        let directory = try DistDirectory(path: dist)
        let resolved = directory.root + "/packs/a.tar"
        let file = try directory.openResolved(resolved)
        close(file.descriptor)

        // The swap, as another local user with write access to the dist dir could do it.
        try manager.moveItem(atPath: dist + "/packs", toPath: dist + "/packs.old")
        try manager.createSymbolicLink(atPath: dist + "/packs", withDestinationPath: outside)
        #expect(throws: DistDirectory.Refusal.self) { try directory.openResolved(resolved) }
        // Through the normal entry point realpath already refuses it.
        #expect(throws: DistDirectory.Refusal.self) { try directory.open(target: "/packs/a.tar") }
    }
}
