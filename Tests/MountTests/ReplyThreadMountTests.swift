import Foundation
import Testing

/// The threading rule for FUSE replies, checked against a real mount: a reply or splice
/// never leaves from a Swift task (FUSEKit's `ReplyThread` asserts it in the debug daemon,
/// which then dies and fails the reads here).
@Suite("Reply threads", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct ReplyThreadMountTests {
    /// Eight plain (uncompressed) packs, each smaller than one chunk: their first bytes are
    /// verified only when the whole pack is, so every waiting open is answered when the
    /// download finishes — the path that answered from the download's task (issue 22).
    static func writeSmallPacks(to root: String) throws -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        var spec = "tags:\n"
        for level in 0..<8 {
            spec += "  Small\(level): [\"small/\(level)/**\"]\n"
            files["small/\(level)/a.bin"] = TestBundle.pseudoRandom(40_000 + level * 1_000, seed: UInt64(200 + level))
            files["small/\(level)/b.bin"] = TestBundle.pseudoRandom(150_000 + level, seed: UInt64(300 + level))
        }
        for (path, bytes) in files {
            let full = root + "/" + path
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: full))
        }
        try spec.write(toFile: root + "/odr.yaml", atomically: true, encoding: .utf8)
        return files
    }

    @Test("cold opens and reads of packs smaller than a chunk are answered off the cooperative pool")
    func smallPacksAnswerOffThePool() async throws {
        let fixture = try MountFixture()
        let files = try Self.writeSmallPacks(to: fixture.source)
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist, "--compress", "none"])
        try #require(build.status == 0, "\(build.stderr)")
        let chunk = try fixture.manifest.chunkSize.value
        for pack in try fixture.manifest.packs where pack.id.rawValue != "base" {
            #expect(pack.bytes.value < chunk, "pack \(pack.id) is not smaller than a chunk")
        }
        try await fixture.mount()
        let pid = try #require(fixture.daemonPID())

        // Two readers per file, all cold at once: several waiters per download.
        let mountpoint = fixture.mountpoint
        let results = try await withThrowingTaskGroup(of: (String, CommandResult).self) { group in
            for path in files.keys.sorted() {
                for _ in 0..<2 {
                    group.addTask { (path, try await Command.run("/usr/bin/sha256sum", [mountpoint + "/" + path], timeout: .seconds(30))) }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let source = fixture.source
        for (path, result) in results {
            let expected = try await Command.run("/usr/bin/sha256sum", [source + "/" + path])
            #expect(result.status == 0 && result.output.prefix(64) == expected.output.prefix(64),
                    "\(path): \(result.stderr)\n\(fixture.log)")
        }
        #expect(kill(pid, 0) == 0, "the daemon died: \(fixture.log)")
        #expect(!fixture.log.contains("sent from a Swift task"), "\(fixture.log)")
        #expect(try await fixture.unmount().status == 0)
    }
}
