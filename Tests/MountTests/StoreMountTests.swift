import FaultOriginSupport
import Foundation
import ODRFSCore
import ODRFSStore
import TestSupport
import Synchronization
import Testing

/// Issue 23, item 1: one store for the machine. Mounts of the same bundle, and of bundles
/// that share packs, use one store at once; a pack is stored and fetched once; a pack one
/// mount holds open is never evicted by another, and a mount killed with -9 holds nothing;
/// the cache of the release before the store is taken in without a download.
@Suite("One store for the machine", .serialized, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct StoreMountTests {
    static func withOrigin(_ dist: String, _ body: (FaultOrigin) async throws -> Void) async throws {
        try await withFaultOrigin(serving: dist, body)
    }

    static func packPath(_ fixture: MountFixture, _ id: String) throws -> String {
        "/" + (try #require(try fixture.manifest.packs.first { $0.id.rawValue == id })).file
    }

    static let big = Data(TestBundle.files["big.bin"]!)

    @Test("the same bundle mounted twice at once on one store: the second mount reads what the first fetched, without a request")
    func sameBundleTwice() async throws {
        let fixture = try MountFixture()
        let (store, second) = try await fixture.storeWorld()
        try await Self.withOrigin(fixture.dist) { origin in
            try await fixture.mount(origin: origin.baseURL, store: store)
            #expect(await readThroughMount(fixture.mountpoint + "/big.bin") == Self.big)
            let bigPack = try Self.packPath(fixture, "Big")
            #expect(origin.streams(of: bigPack).count >= 1)
            let before = origin.streams(of: bigPack).count
            try await fixture.mount(at: second, origin: origin.baseURL, store: store)
            #expect(await readThroughMount(second + "/big.bin") == Self.big)
            #expect(origin.streams(of: bigPack).count == before, "the second mount fetched a pack the store had")
            let bigFile = try fixture.cacheFileName(of: "Big")
            let packs = try FileManager.default.contentsOfDirectory(atPath: store + "/packs")
            #expect(packs.filter { $0 == bigFile }.count == 1)
            #expect(try FileManager.default.contentsOfDirectory(atPath: store + "/mounts").count == 2)
            #expect(try await fixture.unmount(second).status == 0)
            #expect(try await fixture.unmount().status == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: store + "/mounts").isEmpty, "an unmounted mount left its directory")
        }
    }

    @Test("a pack another mount fetched after this one started is read from the store, not fetched again")
    func publishedByAnotherMountLater() async throws {
        let fixture = try MountFixture()
        let (store, second) = try await fixture.storeWorld()
        try await Self.withOrigin(fixture.dist) { origin in
            try await fixture.mount(origin: origin.baseURL, store: store)
            try await fixture.mount(at: second, origin: origin.baseURL, store: store)
            let bigPack = try Self.packPath(fixture, "Big")
            #expect(await readThroughMount(fixture.mountpoint + "/big.bin") == Self.big)
            let fetched = origin.streams(of: bigPack).count
            #expect(await readThroughMount(second + "/big.bin") == Self.big)
            #expect(origin.streams(of: bigPack).count == fetched, "the second mount fetched a pack the first had just put in the store")
            #expect(try fixture.fetches(of: "Big", at: second) == 0)
            #expect(try await fixture.unmount(second).status == 0)
            #expect(try await fixture.unmount().status == 0)
        }
    }

    @Test("two bundles with one identical pack: stored once, and the second bundle's origin is never asked for it")
    func sharedPackAcrossBundles() async throws {
        let fixture = try MountFixture()
        let (store, second) = try await fixture.storeWorld()
        let otherDist = try await fixture.buildSecondBundle()
        try await Self.withOrigin(fixture.dist) { first in
            try await Self.withOrigin(otherDist) { other in
                try await fixture.mount(origin: first.baseURL, store: store)
                #expect(await readThroughMount(fixture.mountpoint + "/big.bin") == Self.big)
                try await fixture.mount(at: second, origin: other.baseURL, store: store)
                #expect(await readThroughMount(second + "/big.bin") == Self.big)
                #expect(await readThroughMount(second + "/levels/2/map.dat") == Data(TestBundle.pseudoRandom(70_000, seed: 99)))
                let bigPack = try Self.packPath(fixture, "Big")
                #expect(other.requests(of: bigPack).isEmpty, "the second bundle's origin was asked for a pack the store had")
                #expect(try FileManager.default.contentsOfDirectory(atPath: store + "/bundles").count == 2)
                #expect(try await fixture.unmount(second).status == 0)
                #expect(try await fixture.unmount().status == 0)
            }
        }
    }

    @Test("one bundle from two origins: its file index and manifest are stored once, and the second origin is never asked for the index")
    func indexAndManifestStoredOnce() async throws {
        let fixture = try MountFixture()
        let (store, second) = try await fixture.storeWorld()
        try await Self.withOrigin(fixture.dist) { first in
            try await Self.withOrigin(fixture.dist) { other in
                try await fixture.mount(origin: first.baseURL, store: store)
                try await fixture.mount(at: second, origin: other.baseURL, store: store)
                let index = try fixture.manifest.index
                #expect(first.requests(of: "/" + index.file).count == 1)
                #expect(other.requests(of: "/" + index.file).isEmpty, "the second origin was asked for an index the store had")
                #expect(await readThroughMount(second + "/big.bin") == Self.big)
                // One object each, linked by both bundles (and named once in the store).
                let indexes = try FileManager.default.contentsOfDirectory(atPath: store + "/indexes")
                #expect(indexes == [index.sha256.hex + ".odrx"])
                var info = stat()
                #expect(stat(store + "/indexes/" + indexes[0], &info) == 0 && info.st_nlink == 3)
                let manifests = try FileManager.default.contentsOfDirectory(atPath: store + "/manifests")
                #expect(manifests.count == 1)
                #expect(stat(store + "/manifests/" + manifests[0], &info) == 0 && info.st_nlink == 3)
                let listed = try await fixture.odrfs(["store", "list", "--store", store, "--json"])
                let lines = listed.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                let indexLines = lines.filter { $0["kind"] as? String == "index" }
                #expect(indexLines.count == 1 && indexLines.first?["bundles"] as? [String] == ["source"], "\(indexLines)")
                #expect(try await fixture.unmount(second).status == 0)
                #expect(try await fixture.unmount().status == 0)
                // Both bundles still link them: gc keeps them.
                #expect(try await fixture.odrfs(["store", "gc", "--store", store]).status == 0)
                #expect(try FileManager.default.contentsOfDirectory(atPath: store + "/indexes") == indexes)
            }
        }
    }

    @Test("a pack one mount holds open is never evicted by another mount's purge; once closed, it is; a mount killed with -9 holds nothing")
    func holdsAcrossMounts() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let store = fixture.root + "/store"
        let second = fixture.root + "/mnt2", third = fixture.root + "/mnt3"
        for directory in [second, third] { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        let bigFile = store + "/packs/" + (try fixture.cacheFileName(of: "Big"))
        try await Self.withOrigin(fixture.dist) { origin in
            try await fixture.mount(origin: origin.baseURL, store: store)
            let holding = try await HeldFile.open(fixture.mountpoint + "/big.bin")
            try await fixture.mount(at: second, origin: origin.baseURL, store: store)
            #expect(try await fixture.odrfs(["purge", second, "--all"]).status == 0)
            #expect(access(bigFile, F_OK) == 0, "another mount evicted a pack this one holds open")
            #expect(await holding.readToEnd() == Self.big)
            holding.close()
            // The first mount lets its hold go at its next maintenance tick (2 s).
            #expect(await eventually(timeout: .seconds(10)) {
                _ = try? await fixture.odrfs(["purge", second, "--all"])
                return access(bigFile, F_OK) != 0
            }, "a pack nothing holds was not evicted")

            // Another pack held, then the holder dies without a word. (Big is not used again:
            // the first mount still reads the evicted copy through the descriptor it kept.)
            let levelFile = store + "/packs/" + (try fixture.cacheFileName(of: "Level1"))
            let level = try await HeldFile.open(fixture.mountpoint + "/levels/1/map.dat")
            #expect(await level.read(upTo: 16) == Data(TestBundle.files["levels/1/map.dat"]!.prefix(16)))
            _ = try await fixture.waitUntilCached("Level1", in: store + "/packs")
            // The other mount learns the pack is in the store when it reads it.
            #expect(await readThroughMount(second + "/levels/1/map.dat") == Data(TestBundle.files["levels/1/map.dat"]!))
            #expect(try await fixture.odrfs(["purge", second, "--all"]).status == 0)
            #expect(access(levelFile, F_OK) == 0, "another mount evicted a pack this one holds open")
            try await fixture.killDaemon()
            level.close()
            #expect(try await fixture.odrfs(["purge", second, "--all"]).status == 0)
            #expect(access(levelFile, F_OK) != 0, "a killed mount's hold outlived it")
            // The next mount removes what the dead one left.
            try await fixture.mount(at: third, origin: origin.baseURL, store: store)
            #expect(try FileManager.default.contentsOfDirectory(atPath: store + "/mounts").count == 2)
            #expect(await readThroughMount(third + "/big.bin") == Self.big)
            #expect(try await fixture.unmount(third).status == 0)
            #expect(try await fixture.unmount(second).status == 0)
        }
    }

    @Test("the cache the release before the store kept for an origin is taken in on the first mount, without a download")
    func legacyCacheTakenIn() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let store = fixture.root + "/store"
        try await Self.withOrigin(fixture.dist) { origin in
            let legacy = store + "/" + CacheLayout.bundleKey(forOrigin: origin.baseURL)
            let old = try await fixture.odrfs(["mount", origin.baseURL, fixture.mountpoint, "--cache", legacy])
            try #require(old.status == 0, "\(old.stderr)")
            #expect(await readThroughMount(fixture.mountpoint + "/big.bin") == Self.big)
            #expect(try await fixture.unmount().status == 0)
            let requests = origin.requests(of: try Self.packPath(fixture, "Big")).count
            let initial = origin.requests(of: try Self.packPath(fixture, "Level3")).count
            try await fixture.mount(origin: origin.baseURL, store: store)
            #expect(access(legacy, F_OK) != 0, "the old cache directory was left")
            #expect(await readThroughMount(fixture.mountpoint + "/big.bin") == Self.big)
            #expect(origin.requests(of: try Self.packPath(fixture, "Big")).count == requests, "a pack of the old cache was downloaded again")
            #expect(origin.requests(of: try Self.packPath(fixture, "Level3")).count == initial, "the initial-install pack was downloaded again")
            #expect(try await fixture.unmount().status == 0)
        }
    }

    @Test("kill -9 of one daemon mid-download while another mount reads: the survivor reads right, the store's books stay right, the killed one remounts and reads")
    func killedMidDownload() async throws {
        let fixture = try MountFixture()
        let (store, second) = try await fixture.storeWorld()
        try await Self.withOrigin(fixture.dist) { origin in
            let bigPack = try Self.packPath(fixture, "Big")
            // The first mount's download of Big stalls half-way, on every attempt.
            origin.script(bigPack, Array(repeating: .trickle(after: 1_000_000), count: 1000))
            try await fixture.mount(origin: origin.baseURL, store: store)
            try await fixture.mount(at: second, origin: fixture.dist, store: store)
            let reader = try ChildProcess("/bin/cat", [fixture.mountpoint + "/big.bin"], stdout: "/dev/null", stderr: fixture.root + "/cat.err")
            defer { reader.stop() }
            #expect(await eventually(timeout: .seconds(10)) { !origin.requests(of: bigPack).isEmpty }, "the download never started")
            try await fixture.killDaemon()
            // The survivor downloads and reads beside it.
            #expect(await readThroughMount(second + "/levels/1/map.dat") == Data(TestBundle.files["levels/1/map.dat"]!))
            // The books match the disk: no row without its file, no file without its row.
            let check = try await fixture.odrfs(["store", "fsck", "--store", store])
            #expect(check.status == 0, "\(check.output)")
            // The killed mount comes back (its dead FUSE mount detached first) and reads.
            _ = umount2(fixture.mountpoint, Int32(MNT_DETACH))
            origin.script(bigPack, [])
            try await fixture.mount(origin: origin.baseURL, store: store)
            #expect(await readThroughMount(fixture.mountpoint + "/big.bin") == Self.big)
            #expect(await readThroughMount(second + "/big.bin") == Self.big)
            #expect(try await fixture.unmount(second).status == 0)
            #expect(try await fixture.unmount().status == 0)
        }
    }

    /// The log the mounts of `origin` share in `store` (one bundle directory per origin).
    static func storeLog(_ store: String, origin: String) -> String {
        (try? String(contentsOfFile: store + "/bundles/" + CacheLayout.bundleKey(forOrigin: origin) + "/odrfs.log", encoding: .utf8)) ?? ""
    }

    static let waitingLine = "another mount of the store is downloading this pack; waiting for it"

    /// Two mounts of one bundle on one store, through one origin whose answer for the Big
    /// pack sends 100,000 bytes and then waits for `gate`: the first mount's download of it
    /// is started (by `startFirst`, given the fixture) and held in flight, and the second
    /// mount's read of `big.bin` is waiting for it when `body` runs.
    static func withSecondMountWaiting(
        startFirst: (MountFixture) throws -> Void = { _ in },
        _ body: (_ fixture: MountFixture, _ store: String, _ second: String, _ origin: FaultOrigin, _ gate: FaultGate,
                 _ secondRead: Task<Data?, Never>) async throws -> Void
    ) async throws {
        let fixture = try MountFixture()
        let (store, second) = try await fixture.storeWorld()
        try await withOrigin(fixture.dist) { origin in
            let bigPack = try packPath(fixture, "Big")
            let gate = FaultGate()
            origin.script(bigPack, [.pause(after: 100_000, gate: gate)])
            try await fixture.mount(origin: origin.baseURL, store: store)
            try await fixture.mount(at: second, origin: origin.baseURL, store: store)
            try startFirst(fixture)
            // 30 s: under `swift test`'s full parallel load on two cores, 10 s was once too short.
            #expect(await eventually(timeout: .seconds(30)) { origin.streams(of: bigPack).count == 1 }, "the first download never started")
            let secondRead = Task { await readThroughMount(second + "/big.bin") }
            let waited = await eventually(timeout: .seconds(30)) { storeLog(store, origin: origin.baseURL).contains(waitingLine) }
            #expect(waited, "the second mount did not wait for the first's download")
            #expect(origin.streams(of: bigPack).count == 1, "the second mount asked the origin for a pack the first was downloading")
            try await body(fixture, store, second, origin, gate, secondRead)
            gate.open()
        }
    }

    @Test("two mounts of a store that want one pack at once download it once: the second waits for the first's download, then reads the store's copy")
    func oneDownloadAcrossMounts() async throws {
        let firstRead = Mutex<Task<Data?, Never>?>(nil)
        try await Self.withSecondMountWaiting(startFirst: { fixture in
            let path = fixture.mountpoint + "/big.bin"
            firstRead.withLock { $0 = Task { await readThroughMount(path) } }
        }) { fixture, _, second, origin, gate, secondRead async throws in
            gate.open()
            #expect(await firstRead.withLock({ $0 })?.value == Self.big)
            #expect(await secondRead.value == Self.big)
            #expect(origin.streams(of: try Self.packPath(fixture, "Big")).count == 1)
            #expect(try fixture.fetches(of: "Big", at: second) == 0)
            #expect(try await fixture.unmount(second).status == 0)
            #expect(try await fixture.unmount().status == 0)
        }
    }

    @Test("the mount downloading a pack others wait for is killed with -9: its claim goes with it, and a waiting mount downloads the pack and reads right")
    func waitingMountTakesOverFromAKilledOne() async throws {
        let reader = Mutex<ChildProcess?>(nil)
        defer { reader.withLock { $0?.stop() } }
        try await Self.withSecondMountWaiting(startFirst: { fixture in
            let cat = try ChildProcess("/bin/cat", [fixture.mountpoint + "/big.bin"], stdout: "/dev/null", stderr: fixture.root + "/cat.err")
            reader.withLock { $0 = cat }
        }) { fixture, store, second, origin, _, secondRead async throws in
            try await fixture.killDaemon()
            #expect(await secondRead.value == Self.big, "the waiting mount did not take the download over")
            #expect(origin.streams(of: try Self.packPath(fixture, "Big")).count == 2)
            // The read may end before the pack is published (its last chunks are released as
            // they verify): the fetch is counted at publication.
            #expect(await eventually(timeout: .seconds(10)) { (try? fixture.fetches(of: "Big", at: second)) == 1 })
            _ = umount2(fixture.mountpoint, Int32(MNT_DETACH))
            #expect(try await fixture.unmount(second).status == 0)
            let check = try await fixture.odrfs(["store", "fsck", "--store", store])
            #expect(check.status == 0, "\(check.output)")
        }
    }

    /// The cache line of a mount's status: `… reads passthrough (N files passed through now); …`.
    static func passedThrough(_ mountpoint: String) -> String {
        let text = (try? String(contentsOfFile: mountpoint + "/.odrfs/status", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").first { $0.hasPrefix("cache:") }.map(String.init) ?? ""
    }

    @Test("passthrough copies are the store's, named by the file's SHA-256: kept across a remount and used by another bundle with the same file")
    func sharedPassthroughCopies() async throws {
        let fixture = try MountFixture()
        let (store, second) = try await fixture.storeWorld()
        let copy = store + "/files/" + ContentHash.of(Self.big).hex
        try await fixture.mount(store: store)
        #expect(Self.passedThrough(fixture.mountpoint).contains("reads passthrough"), "passthrough is not available: \(Self.passedThrough(fixture.mountpoint))")
        #expect(await readThroughMount(fixture.mountpoint + "/big.bin") == Self.big)  // its close starts the copy
        #expect(await eventually { access(copy, F_OK) == 0 }, "no copy in the store's files/: \(fixture.log)")
        #expect(await readThroughMount(copy) == Self.big)
        var before = stat()
        #expect(stat(copy, &before) == 0)
        #expect(try await fixture.unmount().status == 0)

        // A new mount finds it: the first open passes through, nothing copied again.
        try await fixture.mount(store: store)
        #expect(await readThroughMount(fixture.mountpoint + "/README.txt") != nil)
        let held = try await HeldFile.open(fixture.mountpoint + "/big.bin")
        #expect(Self.passedThrough(fixture.mountpoint).contains("(1 file passed through now)"), "\(Self.passedThrough(fixture.mountpoint))")
        #expect(await held.readToEnd() == Self.big)
        held.close()
        var after = stat()
        #expect(stat(copy, &after) == 0 && after.st_ino == before.st_ino, "the copy was made again")

        // Another bundle with the same file (and so the same Big pack) uses the same copy.
        let otherDist = try await fixture.buildSecondBundle()
        try await fixture.mount(at: second, origin: otherDist, store: store)
        let other = try await HeldFile.open(second + "/big.bin")
        #expect(Self.passedThrough(second).contains("(1 file passed through now)"), "\(Self.passedThrough(second))")
        #expect(await other.readToEnd() == Self.big)
        other.close()
        #expect(try FileManager.default.contentsOfDirectory(atPath: store + "/files") == [ContentHash.of(Self.big).hex])
        #expect(try await fixture.unmount(second).status == 0)
        #expect(try await fixture.unmount().status == 0)
        let check = try await fixture.odrfs(["store", "fsck", "--store", store])
        #expect(check.status == 0, "\(check.output)")
    }
}
