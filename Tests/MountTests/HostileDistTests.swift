import Foundation
import ODRFSCore
import Testing

/// A dist dir whose index names a pack the manifest does not have, with every hash fixed up
/// so that the mutation reaches the parsers (issue 12, defect 3): the mount must refuse it,
/// where it used to mount and then die on the first open of that file.
@Suite("Hostile dist dirs", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct HostileDistTests {
    /// Offsets from FileIndexLayout: header packCount, record size and a record's pack field.
    static let headerPackCount = 20, recordsStart = 64, recordSize = 64, recordPack = 44

    @Test("an index whose file is in a pack the manifest lacks is refused at mount")
    func indexPackBeyondTheManifest() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        var manifest = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: fixture.dist + "/" + Manifest.fileName)))
        let indexPath = fixture.dist + "/" + manifest.index.file
        let index = try FileIndex(contentsOf: indexPath)
        let readme = try #require(index.lookup(path: "README.txt"))
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: indexPath)))
        let packs = UInt32(manifest.packs.count)
        func put(_ value: UInt32, at offset: Int) {
            withUnsafeBytes(of: value.littleEndian) { for (i, b) in $0.enumerated() { bytes[offset + i] = b } }
        }
        put(packs + 1, at: Self.headerPackCount)
        put(packs, at: Self.recordsStart + Int(readme.rawValue) * Self.recordSize + Self.recordPack)
        // Consistent with itself: only the manifest can tell.
        #expect((try? FileIndex(bytes: bytes)) != nil)
        let hash = ContentHash.of(bytes)
        manifest.index.file = "index/\(hash.hex).odrx"
        manifest.index.sha256 = hash
        manifest.bundleVersion = Manifest.computeBundleVersion(index: hash, packs: manifest.packs)
        try Data(bytes).write(to: URL(fileURLWithPath: fixture.dist + "/" + manifest.index.file))
        try manifest.encoded().write(to: URL(fileURLWithPath: fixture.dist + "/" + Manifest.fileName))

        let result = try await fixture.odrfs(["mount", fixture.dist, fixture.mountpoint, "--cache", fixture.cache])
        if result.status == 0 {
            // The old behaviour: mounted. Reading the file then killed the daemon.
            _ = try? await Command.run("/bin/cat", [fixture.mountpoint + "/README.txt"], timeout: .seconds(10))
            _ = try? await Command.run("/usr/bin/fusermount3", ["-u", "-z", fixture.mountpoint], timeout: .seconds(10))
            Issue.record("a mismatched index was mounted")
            return
        }
        #expect(result.stderr.contains("does not match the manifest"), "\(result.stderr)")
    }
}
