import Foundation
import ODRFSCore
import ODRFSStore
import TestSupport
import Testing

/// Issue 23, items 2 and 3: one budget across the store's mounts, purged across bundles in
/// iOS's order: what no mounted revision names first, then idle bundles, then running ones,
/// never what a mount retains.
@Suite("Store budget", .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct StoreBudgetTests {
    /// A bundle of the standard tree whose level files and big file are its own (`seed`).
    static func buildBundle(_ fixture: MountFixture, name: String, seed: UInt64) async throws -> String {
        let source = fixture.root + "/source-" + name, dist = fixture.root + "/dist-" + name
        try TestBundle.write(to: source)
        for (path, bytes) in TestBundle.files where path.hasPrefix("levels/") || path == "big.bin" {
            try Data(TestBundle.pseudoRandom(bytes.count, seed: seed &* 1000 &+ UInt64(bytes.count))).write(to: URL(fileURLWithPath: source + "/" + path))
        }
        #expect(try await fixture.odrfs(["build", source, "-o", dist]).status == 0)
        return dist
    }

    static let noPassthrough = ["--passthrough", "off"]

    static func packFiles(_ dist: String) throws -> [String: String] {
        let manifest = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: dist + "/manifest.json")))
        return Dictionary(uniqueKeysWithValues: manifest.packs.map { ($0.id.rawValue, $0.sha256.hex + ".tar") })
    }

    @Test("a download of bundle B evicts the unmounted bundle A's packs first and never the running bundle C's retained pack")
    func sharedBudget() async throws {
        let fixture = try MountFixture()
        let store = fixture.root + "/store"
        let (a, b, c) = (try await Self.buildBundle(fixture, name: "a", seed: 1), try await Self.buildBundle(fixture, name: "b", seed: 2),
                         try await Self.buildBundle(fixture, name: "c", seed: 3))
        let (mountB, mountC) = (fixture.root + "/mnt-b", fixture.root + "/mnt-c")
        for directory in [mountB, mountC] { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }

        // A: everything read, then unmounted: its packs are named by no mounted revision.
        try await fixture.mount(origin: a, extra: Self.noPassthrough, store: store)
        for path in ["big.bin", "levels/1/map.dat", "levels/2/map.dat"] {
            #expect(await readThroughMount(fixture.mountpoint + "/" + path) != nil)
        }
        #expect(try await fixture.unmount().status == 0)
        // C: running, with its big file open.
        try await fixture.mount(at: mountC, origin: c, extra: Self.noPassthrough, store: store)
        let held = try await HeldFile.open(mountC + "/big.bin")
        #expect(await held.readToEnd().count == TestBundle.files["big.bin"]!.count)
        // With passthrough off nothing is added to the store behind the test's back (a
        // passthrough copy is made after a read, when its close is done): the store holds P
        // bytes of packs. B's big file needs R more; a budget of P + R - 0.5 MB puts the store
        // over it, and the purge frees down to 75 % of it: 0.25 (P + R) + 0.375 MB, about
        // 2.8 MB here, which the unmounted bundle A's 3.4 MB of packs cover.
        let storeBytes = try Self.storeBytes(store)
        let bigPack = try #require(try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: b + "/manifest.json"))).packs.first { $0.id.rawValue == "Big" })
        let budget = storeBytes + bigPack.bytes.value - 500_000
        #expect(try await fixture.odrfs(["store", "config", "--store", store, "--cache-size", "\(budget)"]).status == 0)

        try await fixture.mount(at: mountB, origin: b, extra: Self.noPassthrough, store: store)
        let expected = Data(TestBundle.pseudoRandom(TestBundle.files["big.bin"]!.count, seed: 2 &* 1000 &+ UInt64(TestBundle.files["big.bin"]!.count)))
        #expect(await readThroughMount(mountB + "/big.bin") == expected)

        let aPacks = try Self.packFiles(a), cPacks = try Self.packFiles(c)
        // What went is the unmounted bundle's (its least recently used first, passthrough
        // copies among them); nothing of the running bundle, retained or not, had to.
        #expect(access(store + "/packs/" + aPacks["Big"]!, F_OK) != 0, "the unmounted bundle's least recently used pack was kept")
        for (id, file) in cPacks where ["Big", "Level3", "base"].contains(id) {
            #expect(access(store + "/packs/" + file, F_OK) == 0, "the running bundle's \(id) went before the unmounted bundle's packs")
        }
        held.rewind()
        #expect(await held.read(upTo: 16).count == 16, "the open file stopped reading")
        #expect(try Self.storeBytes(store) <= budget + Int64(TestBundle.files["big.bin"]!.count), "the store stayed far over its budget")
        held.close()
        #expect(try await fixture.unmount(mountB).status == 0)
        #expect(try await fixture.unmount(mountC).status == 0)
    }

    static func storeBytes(_ store: String) throws -> Int64 {
        var total: Int64 = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: store + "/packs") {
            var info = stat()
            if stat(store + "/packs/" + name, &info) == 0 { total += Int64(info.st_size) }
        }
        return total
    }
}
