import Foundation
import ODRFSCore
import TestSupport
import Testing

/// Local packs keep one open descriptor between opens (`CacheLedger+KeptFiles.swift`):
/// opens of many files of a pack neither open nor close the pack file each, and an
/// evicted pack's descriptor goes with it, so its disk space is freed.
@Suite("Pack descriptors", .serialized, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(2)))
struct PackDescriptorTests {
    static let fileCount = 40

    func makeFixture() async throws -> MountFixture {
        let fixture = try MountFixture()
        try FileManager.default.createDirectory(atPath: fixture.source + "/level", withIntermediateDirectories: true)
        for number in 0..<Self.fileCount {
            try Data(TestBundle.pseudoRandom(5000 + number * 101, seed: UInt64(number))).write(to: URL(fileURLWithPath: fixture.source + "/level/f\(number).bin"))
        }
        try Data("base".utf8).write(to: URL(fileURLWithPath: fixture.source + "/base.txt"))
        try "tags:\n  Level: [\"level/**\"]\n".write(toFile: fixture.source + "/odr.yaml", atomically: true, encoding: .utf8)
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(build.status == 0, "\(build.stderr)")
        return fixture
    }

    /// The daemon's open descriptors of `packFile` (deleted ones included).
    func descriptors(of packFile: String, pid: pid_t) -> Int {
        let directory = "/proc/\(pid)/fd"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.count { entry in
            ((try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + entry)) ?? "").contains(packFile)
        }
    }

    @Test("reading every file of a local pack twice leaves one descriptor of it open; a purge closes it")
    func oneDescriptorPerLocalPack() async throws {
        let fixture = try await makeFixture()
        try await fixture.mount()
        let pid = try #require(fixture.daemonPID())
        let packFile = try fixture.cacheFileName(of: "Level")
        for _ in 0..<2 {
            for number in 0..<Self.fileCount {
                let data = FileManager.default.contents(atPath: fixture.mountpoint + "/level/f\(number).bin")
                #expect(data == Data(TestBundle.pseudoRandom(5000 + number * 101, seed: UInt64(number))), "f\(number).bin differs")
            }
        }
        #expect(await eventually { (try? fixture.retains(of: "Level")) == 0 })
        // Without a kept descriptor every open opened the pack and every release closed it: 0 here.
        #expect(descriptors(of: packFile, pid: pid) == 1, "the daemon keeps exactly one descriptor of the local pack")
        let purge = try await fixture.odrfs(["purge", fixture.mountpoint, "Level"])
        #expect(purge.status == 0, "\(purge.stderr)")
        #expect(descriptors(of: packFile, pid: pid) == 0, "an evicted pack's descriptor is closed, so its space is freed")
        let again = FileManager.default.contents(atPath: fixture.mountpoint + "/level/f3.bin")
        #expect(again == Data(TestBundle.pseudoRandom(5000 + 3 * 101, seed: 3)), "read again after the purge")
    }
}
