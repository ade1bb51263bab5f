import FaultOriginSupport
import Foundation
import ODRFSCore
import TestSupport
import Testing

/// Issue 26, item 3: a pack that once arrived corrupt from the only server could never be
/// fetched again (EIO at once, no request, until a remount). The next open tries again.
@Suite("Retry after bad bytes", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(2)))
struct BadBytesRetryMountTests {
    @Test("corrupt on the only origin: EIO; restored on the origin: the next open fetches it again and reads the right bytes")
    func nextOpenTriesAgain() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let origin = try await FaultOrigin.start()
        do {
            try origin.setFiles(from: fixture.dist)
            let packPath = "/" + (try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Level2" })).file
            let good = try Array(Data(contentsOf: URL(fileURLWithPath: fixture.dist + packPath)))
            var corrupt = good
            corrupt[corrupt.count / 3] ^= 0x01
            origin.setFile(packPath, corrupt)
            try await fixture.mount(origin: origin.baseURL)
            let file = fixture.mountpoint + "/levels/2/map.dat"
            let bad = try await Command.run("/bin/cat", [file])
            #expect(bad.status != 0 && bad.stderr.contains("Input/output error"), "\(bad.stderr)")
            #expect(bad.stdout.isEmpty, "bytes of an unverified pack were served")
            let asked = origin.requests(of: packPath).count
            #expect(asked >= 1)

            origin.setFile(packPath, good)
            let repaired = try await Command.run("/bin/cat", [file])
            #expect(repaired.status == 0, "\(repaired.stderr)\n\(fixture.log)")
            #expect(repaired.stdout == Data(TestBundle.files["levels/2/map.dat"]!))
            #expect(origin.requests(of: packPath).count > asked, "the next open did not ask the origin again")
            #expect(fixture.log.contains("trying the last one again"), "no log line says the distrusted server is tried again")
        } catch {
            await origin.stop()
            throw error
        }
        await origin.stop()
    }
}
