import FaultOriginSupport
import Foundation
import ODRFSCore
import TestSupport
import Testing

/// Issue 27, item 5: a cold mount in two round trips. After the manifest, the base and
/// initial-install packs are requested beside the file index, not after it.
@Suite("A cold mount in two round trips", .serialized, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct EarlyInstallMountTests {
    @Test("the base and initial-install packs are requested while the file index is still arriving, each once, and the mount serves them",
          arguments: [false, true])
    func packsTravelBesideTheIndex(throughStore: Bool) async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let manifest = try fixture.manifest
        let numbers = manifest.basePacks + TagPackIndex(manifest).packs(for: manifest.initialInstall)
        let packs = Set(numbers.map { "/" + manifest.pack($0).file })
        try #require(packs.count >= 2, "the test bundle has an initial-install pack beside its base pack")
        try await withFaultOrigin(serving: fixture.dist) { origin in
            let gate = FaultGate()
            let index = "/" + manifest.index.file
            origin.script(index, [.pause(after: 0, gate: gate)])
            let store = throughStore ? fixture.root + "/store" : nil
            let mounting = fixture.startMount(origin: origin.baseURL, store: store)
            // The index's answer is held (headers only) until the gate opens: both packs must
            // be asked for meanwhile, whichever request reached the origin first.
            let overlapped = await eventually(timeout: .seconds(10)) {
                origin.requests(of: index).count == 1 && packs.allSatisfy { !origin.requests(of: $0).isEmpty }
            }
            #expect(overlapped, "the packs were not requested while the file index was held: \(origin.seen.map(\.path))")
            gate.open()
            let mounted = try await mounting.value
            try #require(mounted.status == 0, "odrfs mount failed: \(mounted.stderr)")
            for pack in packs { #expect(origin.requests(of: pack).count == 1, "\(pack) was fetched again") }
            for (path, bytes) in TestBundle.files where path.hasPrefix("levels/1/") {
                #expect(await readThroughMount(fixture.mountpoint + "/" + path) == Data(bytes))
            }
            #expect(try await fixture.unmount().status == 0)
        }
    }
}
