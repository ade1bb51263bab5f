import Foundation
import ODRFSCore
import ODRFSStore
import TestSupport
import Testing

/// Issue 23, item 4: the operator's tools on a store that mounts are using.
@Suite("Store tools", .serialized, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct StoreToolsTests {
    static let big = Data(TestBundle.files["big.bin"]!)

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test("status and list: two bundles, the shared pack stored once and counted as saved, mounts, retained bytes and running")
    func statusAndList() async throws {
        let fixture = try MountFixture()
        let (store, second) = try await fixture.storeWorld()
        let otherDist = try await fixture.buildSecondBundle()
        try await fixture.mount(store: store)
        try await fixture.mount(at: second, origin: otherDist, store: store)
        #expect(await readThroughMount(fixture.mountpoint + "/big.bin") == Self.big)
        let holding = try await HeldFile.open(fixture.mountpoint + "/big.bin")
        #expect(await holding.read(upTo: 4) == Self.big.prefix(4))
        #expect(await readThroughMount(second + "/big.bin") == Self.big)
        #expect(try fixture.fetches(of: "Big", at: second) == 0, "the second bundle fetched a pack the store had")

        let result = try await fixture.odrfs(["store", "status", "--store", store, "--json"])
        try #require(result.status == 0, "\(result.stderr)")
        let status = try Self.json(result.output)
        #expect(status["store"] as? String == store)
        let bigBytes = try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Big" }?.bytes.value)
        #expect((status["saved_bytes"] as? Int).map(Int64.init) ?? 0 >= bigBytes)
        #expect((status["shared_bytes"] as? Int).map(Int64.init) ?? 0 >= bigBytes)
        let bundles = try #require(status["bundles"] as? [[String: Any]])
        #expect(bundles.count == 2)
        let first = try #require(bundles.first { ($0["mountpoints"] as? [String]) == [fixture.mountpoint] })
        #expect(first["origin"] as? String == fixture.dist)
        #expect(first["mounted"] as? Bool == true)
        #expect(first["running"] as? Bool == true, "the bundle with an open file is not running")
        #expect((first["retained_bytes"] as? Int).map(Int64.init) ?? 0 >= bigBytes)
        #expect(first["revision"] as? Int == 1)
        #expect(first["bundle"] as? String == "source", "bundle is not the manifest's identity")
        let other = try #require(bundles.first { ($0["mountpoints"] as? [String]) == [second] })
        #expect(other["bundle"] as? String == MountFixture.secondBundleIdentity)
        #expect(first["key"] as? String == CacheLayout.bundleKey(forOrigin: fixture.dist))
        for key in ["cache_size", "min_free", "bytes", "objects", "bundle", "last_use"] {
            #expect(status[key] != nil || first[key] != nil, "no \(key)")
        }

        let listed = try await fixture.odrfs(["store", "list", "--store", store, "--json"])
        try #require(listed.status == 0, "\(listed.stderr)")
        let lines = try listed.output.split(separator: "\n").map { try Self.json(String($0)) }
        let bigHash = try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Big" }?.sha256.hex)
        let bigLine = try #require(lines.first { $0["sha256"] as? String == bigHash })
        #expect(bigLine["kind"] as? String == "pack")
        #expect((bigLine["bundles"] as? [String])?.count == 2)
        #expect(bigLine["retained"] as? Bool == true)
        #expect(lines.contains { $0["kind"] as? String == "index" } && lines.contains { $0["kind"] as? String == "manifest" })
        #expect(bigLine["bundles"] as? [String] == ["com.example.second", "source"])
        let filtered = try await fixture.odrfs(["store", "list", "--store", store, "--json", "--bundle", MountFixture.secondBundleIdentity])
        let own = try filtered.output.split(separator: "\n").map { try Self.json(String($0)) }
        #expect(!own.isEmpty && own.count < lines.count, "--bundle by identity did not filter")
        #expect(own.allSatisfy { ($0["bundles"] as? [String])?.contains(MountFixture.secondBundleIdentity) == true })
        holding.close()
        #expect(try await fixture.unmount(second).status == 0)
        #expect(try await fixture.unmount().status == 0)
    }

    @Test("gc removes a replaced revision's objects and prints the bytes freed; evict drops one bundle's packs but not a shared one")
    func gcAndEvict() async throws {
        let fixture = try MountFixture()
        let (store, second) = try await fixture.storeWorld()
        let otherDist = try await fixture.buildSecondBundle()
        try await fixture.mount(store: store)
        #expect(await readThroughMount(fixture.mountpoint + "/levels/2/map.dat") != nil)
        #expect(await readThroughMount(fixture.mountpoint + "/big.bin") == Self.big)
        let oldLevel2 = try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Level2" }).sha256.hex
        // Revision 2 changes Level2: after the update, nothing names the old pack.
        try Data(TestBundle.pseudoRandom(70_000, seed: 123)).write(to: URL(fileURLWithPath: fixture.source + "/levels/2/map.dat"))
        #expect(try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist]).status == 0)
        let update = try await fixture.odrfs(["update", fixture.mountpoint])
        try #require(update.status == 0, "\(update.stderr)")
        #expect(access(store + "/packs/\(oldLevel2).tar", F_OK) == 0)
        let manifestObjects = try FileManager.default.contentsOfDirectory(atPath: store + "/manifests")
        #expect(manifestObjects.count == 2, "the replaced manifest's object is gone before gc, or the new one is missing: \(manifestObjects)")
        let gc = try await fixture.odrfs(["store", "gc", "--store", store])
        try #require(gc.status == 0, "\(gc.stderr)")
        #expect(access(store + "/packs/\(oldLevel2).tar", F_OK) != 0, "gc left the replaced revision's pack")
        #expect(gc.output.contains("bytes freed") && !gc.output.contains(" 0 bytes freed"), "\(gc.output)")
        let current = try Data(contentsOf: URL(fileURLWithPath: fixture.dist + "/manifest.json"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: store + "/manifests") == [ContentHash.of(current).hex + ".json"],
                "gc left the replaced revision's manifest")
        #expect(await readThroughMount(fixture.mountpoint + "/big.bin") == Self.big)

        try await fixture.mount(at: second, origin: otherDist, store: store)
        #expect(await readThroughMount(second + "/levels/1/map.dat") != nil)
        #expect(try await fixture.unmount(second).status == 0)
        let otherManifest = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: otherDist + "/manifest.json")))
        let bigHash = try #require(otherManifest.packs.first { $0.id.rawValue == "Big" }).sha256.hex
        let level1Hash = try #require(otherManifest.packs.first { $0.id.rawValue == "Level1" }).sha256.hex
        let otherOnly = try #require(otherManifest.packs.first { $0.id.rawValue == "Level2" }).sha256.hex
        // Level1 is the same pack in both bundles (a shared one); Level2 of the second bundle is its own.
        let evict = try await fixture.odrfs(["store", "evict", "--store", store, otherDist])
        try #require(evict.status == 0, "\(evict.stderr)")
        #expect(access(store + "/packs/\(bigHash).tar", F_OK) == 0, "evict dropped a pack another bundle references")
        #expect(access(store + "/packs/\(level1Hash).tar", F_OK) == 0, "evict dropped a pack another bundle references")
        #expect(access(store + "/packs/\(otherOnly).tar", F_OK) != 0, "evict left the bundle's own pack")
        #expect(try await fixture.unmount().status == 0)
    }

    @Test("fsck finds a flipped byte (exit 1); --repair quarantines it; then clean (exit 0); the next mount fetches it again and reads right")
    func fsckRepairs() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let store = fixture.root + "/store"
        try await fixture.mount(store: store)
        #expect(await readThroughMount(fixture.mountpoint + "/big.bin") == Self.big)
        #expect(try await fixture.unmount().status == 0)
        let clean = try await fixture.odrfs(["store", "fsck", "--store", store])
        #expect(clean.status == 0, "\(clean.output)\(clean.stderr)")
        // A damaged file index too: found, quarantined with its bundle's link, fetched again.
        let indexObject = store + "/indexes/" + (try fixture.manifest.index.sha256.hex) + ".odrx"
        var indexByte: UInt8 = 0
        let indexFD = open(indexObject, O_RDWR)
        try #require(indexFD >= 0)
        #expect(pread(indexFD, &indexByte, 1, 40) == 1)
        indexByte ^= 0x01
        #expect(pwrite(indexFD, &indexByte, 1, 40) == 1)
        close(indexFD)
        let bigFile = store + "/packs/" + (try fixture.cacheFileName(of: "Big"))
        let fd = open(bigFile, O_RDWR)
        try #require(fd >= 0)
        var byte: UInt8 = 0
        #expect(pread(fd, &byte, 1, 100_000) == 1)
        byte ^= 0x40
        #expect(pwrite(fd, &byte, 1, 100_000) == 1)
        close(fd)
        let found = try await fixture.odrfs(["store", "fsck", "--store", store])
        #expect(found.status == 1, "\(found.output)\(found.stderr)")
        #expect(found.output.contains("mismatch: " + (try fixture.cacheFileName(of: "Big")).dropLast(4)))
        #expect(found.output.contains("mismatch: " + (try fixture.manifest.index.sha256.hex)), "\(found.output)")
        let repaired = try await fixture.odrfs(["store", "fsck", "--store", store, "--repair"])
        #expect(repaired.status == 1 && repaired.output.contains("quarantined"), "\(repaired.output)")
        #expect(access(bigFile, F_OK) != 0)
        #expect(access(indexObject, F_OK) != 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store + "/quarantine").count == 2)
        let after = try await fixture.odrfs(["store", "fsck", "--store", store])
        #expect(after.status == 0, "\(after.output)")
        try await fixture.mount(store: store)
        #expect(await readThroughMount(fixture.mountpoint + "/big.bin") == Self.big)
        // The pack is fetched again (the file itself may already have been read through the
        // store's passthrough copy of it, verified by its SHA-256).
        #expect(await eventually { (try? fixture.fetches(of: "Big")) == 1 }, "\((try? fixture.status()["Big"]) ?? [])")
        #expect(try await fixture.unmount().status == 0)
    }

    @Test("config sets the store's limits, kept in the store; status reports them")
    func config() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let store = fixture.root + "/store"
        try await fixture.mount(store: store)
        let set = try await fixture.odrfs(["store", "config", "--store", store, "--cache-size", "64M", "--min-free", "1G"])
        try #require(set.status == 0, "\(set.stderr)")
        let status = try Self.json(try await fixture.odrfs(["store", "status", "--store", store, "--json"]).output)
        #expect(status["cache_size"] as? Int == 64 << 20)
        #expect(status["min_free"] as? Int == 1 << 30)
        #expect(try await fixture.unmount().status == 0)
    }

    @Test("every mount of a store tells its subscribers low-disk-space when the store's min_free is not met")
    func lowDiskSpaceFromTheStore() async throws {
        let fixture = try MountFixture()
        let (store, second) = try await fixture.storeWorld()
        try await fixture.mount(store: store)
        try await fixture.mount(at: second, store: store)
        let outputs = [fixture.root + "/events1.jsonl", fixture.root + "/events2.jsonl"]
        let followers = try zip([fixture.mountpoint, second], outputs).map { mountpoint, output in
            try ChildProcess(MountFixture.binary, ["events", mountpoint, "--json"], stdout: output, stderr: output + ".err")
        }
        defer { for follower in followers { follower.stop() } }
        try await Task.sleep(for: .milliseconds(500))
        // More free space than any disk has: the store's floor is not met.
        #expect(try await fixture.odrfs(["store", "config", "--store", store, "--min-free", "1P"]).status == 0)
        for output in outputs {
            #expect(await eventually(timeout: .seconds(15)) {
                ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").contains("low-disk-space")
            }, "a mount's subscribers were not told: \((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")
        }
        #expect(try await fixture.unmount(second).status == 0)
        #expect(try await fixture.unmount().status == 0)
    }

    @Test("the store's directories are 0700 and its files 0600")
    func modes() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let store = fixture.root + "/store"
        try await fixture.mount(store: store)
        #expect(await readThroughMount(fixture.mountpoint + "/big.bin") == Self.big)
        #expect(try await fixture.odrfs(["store", "config", "--store", store, "--cache-size", "1G"]).status == 0)
        var wrong: [String] = []
        let walker = FileManager.default.enumerator(atPath: store)
        while let relative = walker?.nextObject() as? String {
            var info = stat()
            guard lstat(store + "/" + relative, &info) == 0 else { continue }
            let mode = info.st_mode & 0o777
            let isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
            if (isDirectory && mode != 0o700) || (!isDirectory && mode != 0o600) { wrong.append("\(relative) \(String(mode, radix: 8))") }
        }
        #expect(wrong.isEmpty, "\(wrong)")
        #expect(try await fixture.unmount().status == 0)
    }
}
