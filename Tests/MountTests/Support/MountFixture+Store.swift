import FaultOriginSupport
import Foundation
import ODRFSCore
import Testing

/// Set-up shared by the machine-wide store's mount tests.
extension MountFixture {
    /// The standard test bundle built, and a store path and a second mountpoint under the
    /// fixture's root.
    func storeWorld() async throws -> (store: String, second: String) {
        try await buildTestBundle()
        let second = root + "/mnt2"
        try FileManager.default.createDirectory(atPath: second, withIntermediateDirectories: true)
        return (root + "/store", second)
    }

    /// A second bundle: the source tree copied with its times (so the packs of unchanged files
    /// are byte for byte the same, the Big pack among them) and `levels/2/map.dat` changed.
    /// Returns its dist dir.
    func buildSecondBundle() async throws -> String {
        let source = root + "/source2", dist = root + "/dist2"
        #expect(try await Command.run("/bin/cp", ["-a", self.source, source]).status == 0)
        try Data(TestBundle.pseudoRandom(70_000, seed: 99)).write(to: URL(fileURLWithPath: source + "/levels/2/map.dat"))
        #expect(try await odrfs(["build", source, "-o", dist]).status == 0)
        let other = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: dist + "/manifest.json")))
        #expect(other.packs.first { $0.id.rawValue == "Big" }?.sha256 == (try manifest.packs.first { $0.id.rawValue == "Big" }?.sha256),
                "the two bundles do not share their Big pack")
        return dist
    }

    /// Kills the daemon of `mountpoint` with SIGKILL and waits (at most 5 s) until it is gone.
    func killDaemon(_ mountpoint: String? = nil) throws {
        let pid = try #require(daemonPID(mountpoint))
        #expect(kill(pid, SIGKILL) == 0)
        var waited = 0
        while kill(pid, 0) == 0, waited < 500 {
            usleep(10_000)
            waited += 1
        }
    }
}

/// Runs `body` with a fault origin serving the files of `dist`; always stops it.
func withFaultOrigin(serving dist: String, _ body: (FaultOrigin) async throws -> Void) async throws {
    let origin = try await FaultOrigin.start()
    do {
        try origin.setFiles(from: dist)
        try await body(origin)
    } catch {
        await origin.stop()
        throw error
    }
    await origin.stop()
}
