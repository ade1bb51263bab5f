import Foundation
import ODRFSClient
import ODRFSCore
import TestSupport
import Testing

/// `odrfs variant` against a real mount: a running mount moves to another variant
/// selection with the live-update machinery.
@Suite("odrfs variant: switching a running mount's variants", .timingSensitive, .enabled(if: FUSEAvailability.shouldRun),
       .timeLimit(.minutes(3)))
struct VariantSwitchMountTests {
    static let textures: [String: [UInt8]] = [
        "astc": TestBundle.pseudoRandom(300_000, seed: 1),
        "etc2": TestBundle.pseudoRandom(310_000, seed: 2),
        "bc7": TestBundle.pseudoRandom(320_000, seed: 3),
    ]
    static let map = TestBundle.pseudoRandom(40_000, seed: 4)

    /// `levels/1/` (tag Level1) with `Textures#tcf_{astc,etc2,bc7}/t.ktx` and a plain map.
    static func buildBundle(_ fixture: MountFixture) async throws {
        let level = fixture.source + "/levels/1"
        for (value, bytes) in textures {
            try FileManager.default.createDirectory(atPath: "\(level)/Textures#tcf_\(value)", withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: "\(level)/Textures#tcf_\(value)/t.ktx"))
        }
        try Data(map).write(to: URL(fileURLWithPath: level + "/map.dat"))
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: fixture.source + "/README.txt"))
        try """
            tags:
              Level1: ["levels/1/**"]
            variants:
              tcf: {values: [astc, etc2, bc7], default: etc2}

            """.write(toFile: fixture.source + "/odr.yaml", atomically: true, encoding: .utf8)
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(build.status == 0, "\(build.stderr)")
    }

    static func json(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(String(decoding: data, as: UTF8.self))")
    }

    @Test("a switch fetches the new variant's pack first, new opens read it, an open handle keeps the old bytes")
    func switchKeepsOpenHandles() async throws {
        let fixture = try MountFixture()
        try await Self.buildBundle(fixture)
        try await fixture.mount(extra: ["--variant", "tcf=bc7"])
        let mnt = fixture.mountpoint
        let texture = mnt + "/levels/1/Textures/t.ktx"
        let old = try #require(Self.textures["bc7"])
        let handle = try #require(FileHandle(forReadingAtPath: texture))
        defer { try? handle.close() }
        #expect(try handle.read(upToCount: 100) == Data(old.prefix(100)))
        #expect(try fixture.fetches(of: "Level1[tcf=astc]") == nil, "a pack of another variant is not even listed")

        let switched = try await fixture.odrfs(["variant", mnt, "tcf=astc", "--json"])
        try #require(switched.status == 0, "\(switched.stderr)\n\(fixture.log)")
        let report = try Self.json(switched.stdout)
        #expect(report["variants"] as? [String: String] == ["tcf": "astc"])
        #expect(report["changed_packs"] as? [String] == ["Level1[tcf=astc]"])
        #expect((report["download_bytes"] as? Int ?? 0) >= Self.textures["astc"]!.count)
        // Fetched before the switch: local now, without another open.
        let rows = try fixture.status()
        #expect(rows["Level1[tcf=astc]"]?[2] == "downloaded", "\(rows)")

        #expect(try Data(contentsOf: URL(fileURLWithPath: texture)) == Data(Self.textures["astc"]!))
        #expect(try Data(contentsOf: URL(fileURLWithPath: mnt + "/levels/1/map.dat")) == Data(Self.map))
        #expect(try handle.readToEnd() == Data(old.dropFirst(100)), "the handle opened before the switch keeps its bytes")
        // The old variant's pack is no pack of the new view: an orphan, first in the purge
        // order (priority -1, before any pack the view serves).
        let bc7 = try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Level1[tcf=bc7]" })
        let cacheLine = try #require(String(contentsOfFile: mnt + "/.odrfs/status", encoding: .utf8)
            .split(separator: "\n").first { $0.hasPrefix("cache:") })
        #expect(cacheLine.contains("(\(bc7.bytes.value) from older bundle versions or other variants)"), "\(cacheLine)")
        let attribute = try await Command.run("/usr/bin/getfattr", ["--only-values", "-n", "user.odrfs.variant", texture])
        #expect(attribute.output == "tcf=astc")
        let status = try Self.json(try await fixture.odrfs(["status", mnt, "--json"]).stdout)
        #expect(status["variants"] as? [String: String] == ["tcf": "astc"])

        // Undeclared keys and values are refused, and the mount stays as it is.
        let unknown = try await fixture.odrfs(["variant", mnt, "lang=it"])
        #expect(unknown.status != 0 && unknown.stderr.contains("tcf"), "\(unknown.stderr)")
        let typo = try await fixture.odrfs(["variant", mnt, "tcf=astx"])
        #expect(typo.status != 0 && typo.stderr.contains("has no value 'astx'"), "\(typo.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: texture)) == Data(Self.textures["astc"]!))
        // The same selection again: nothing changes, nothing is fetched.
        let again = try Self.json(try await fixture.odrfs(["variant", mnt, "tcf=astc", "--json"]).stdout)
        #expect(again["changed_packs"] as? [String] == [] && again["download_bytes"] as? Int == 0, "\(again)")
        // Back to BC7, whose pack the cache still holds: nothing crosses the wire.
        let back = try Self.json(try await fixture.odrfs(["variant", mnt, "tcf=bc7", "--json"]).stdout)
        #expect(back["download_bytes"] as? Int == 0, "\(back)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: texture)) == Data(old))
    }

    @Test("a held tag request moves to the new variant's packs at a switch and releases them at its end")
    func heldRequestsMove() async throws {
        let fixture = try MountFixture()
        try await Self.buildBundle(fixture)
        try await fixture.mount(extra: ["--variant", "tcf=etc2"])
        let mnt = fixture.mountpoint
        let request = BundleResourceRequest(tags: ["Level1"], mountpoint: mnt)
        try await request.beginAccessingResources()
        #expect(try fixture.retains(of: "Level1[tcf=etc2]") == 1)
        let switched = try await fixture.odrfs(["variant", mnt, "tcf=bc7", "--json"])
        try #require(switched.status == 0, "\(switched.stderr)\n\(fixture.log)")
        #expect(try fixture.retains(of: "Level1[tcf=bc7]") == 1, "the request holds the new variant's pack: \((try? fixture.status()) ?? [:])")
        #expect(try fixture.retains(of: "Level1") == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: mnt + "/levels/1/Textures/t.ktx")) == Data(Self.textures["bc7"]!))
        request.endAccessingResources()
        #expect(await eventually { (try? fixture.retains(of: "Level1[tcf=bc7]")) == 0 && (try? fixture.retains(of: "Level1")) == 0 },
                "\((try? fixture.status()) ?? [:])")
    }

    @Test("an update keeps the selection; when the selected value leaves the bundle, the mount falls back to the default")
    func updatesKeepTheSelection() async throws {
        let fixture = try MountFixture()
        try await Self.buildBundle(fixture)
        try await fixture.mount(extra: ["--variant", "tcf=bc7"])
        let texture = fixture.mountpoint + "/levels/1/Textures/t.ktx"
        #expect(try Data(contentsOf: URL(fileURLWithPath: texture)) == Data(Self.textures["bc7"]!))

        // Revision 2: the map changes, BC7 is dropped (from the spec and the tree).
        try FileManager.default.removeItem(atPath: fixture.source + "/levels/1/Textures#tcf_bc7")
        try Data("map 2\n".utf8).write(to: URL(fileURLWithPath: fixture.source + "/levels/1/map.dat"))
        try """
            tags:
              Level1: ["levels/1/**"]
            variants:
              tcf: {values: [astc, etc2], default: etc2}

            """.write(toFile: fixture.source + "/odr.yaml", atomically: true, encoding: .utf8)
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(build.status == 0, "\(build.stderr)")
        let update = try await fixture.odrfs(["update", fixture.mountpoint, "--json"])
        try #require(update.status == 0, "\(update.stderr)\n\(fixture.log)")
        let report = try Self.json(update.stdout)
        #expect((report["changed_packs"] as? [String])?.contains("Level1[tcf=astc]") == false, "an unselected variant is never planned: \(report)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: texture)) == Data(Self.textures["etc2"]!))
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/levels/1/map.dat")) == Data("map 2\n".utf8))
        let status = try Self.json(try await fixture.odrfs(["status", fixture.mountpoint, "--json"]).stdout)
        #expect(status["variants"] as? [String: String] == ["tcf": "etc2"])
        #expect(try fixture.fetches(of: "Level1[tcf=astc]") == nil, "the view of revision 2 has no ASTC pack either")
    }
}
