import Foundation
import ODRFSClient
import ODRFSCore
import TestSupport
import Testing

/// Capability variants under real mounts served over HTTP: each selection reads its own
/// bytes under the same logical paths, and the origin sees only the selected packs.
@Suite("Variants", .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct VariantMountTests {
    static let textures: [String: [UInt8]] = [
        "astc": TestBundle.pseudoRandom(2 << 20, seed: 11),   // large: the passthrough read path
        "etc2": TestBundle.pseudoRandom(70_000, seed: 12),
        "bc7": TestBundle.pseudoRandom(80_000, seed: 13),
    ]
    static let voices: [String: [UInt8]] = ["en": Array("hello\n".utf8), "it": Array("ciao\n".utf8), "ja": Array("こんにちは\n".utf8)]
    static let detail = TestBundle.pseudoRandom(30_000, seed: 14)

    /// `levels/1` (tag Level1) with `Textures#tcf_{astc,etc2,bc7}`, a `Hi#tier_high`
    /// directory; untagged `Voice#locale_{en,it,ja}`.
    static func buildBundle(_ fixture: MountFixture) async throws {
        for (value, bytes) in textures {
            try write(bytes, fixture.source + "/levels/1/Textures#tcf_\(value)/t.ktx")
        }
        try write(detail, fixture.source + "/levels/1/Hi#tier_high/detail.bin")
        try write(Array("map\n".utf8), fixture.source + "/levels/1/map.dat")
        for (value, bytes) in voices { try write(bytes, fixture.source + "/Voice#locale_\(value)/hello.txt") }
        try """
            tags:
              Level1: ["levels/1/**"]
            variants:
              tcf:    {values: [astc, etc2, bc7], default: etc2}
              locale: {values: [en, it, ja], default: en}
              tier:   {values: [high, low], default: low, rules: {high: {min-memory: 1K, min-cpus: 1}}}

            """.write(toFile: fixture.source + "/odr.yaml", atomically: true, encoding: .utf8)
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(build.status == 0, "\(build.stderr)")
    }

    static func write(_ bytes: [UInt8], _ path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    static func read(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static func statusJSON(_ fixture: MountFixture) async throws -> [String: Any] {
        let status = try await fixture.odrfs(["status", fixture.mountpoint, "--json"])
        return try #require(try JSONSerialization.jsonObject(with: status.stdout) as? [String: Any], "\(status.stderr)")
    }

    @Test("--variant tcf=astc: the ASTC textures, English voice, the high tier on a machine its rule admits; the origin sees only those packs")
    func explicitSelection() async throws {
        let fixture = try MountFixture()
        try await Self.buildBundle(fixture)
        let origin = try await onFreePort { try await ServeOrigin(serving: fixture.dist, in: fixture.root + "/serve-\($0)", port: $0) }
        try await fixture.mount(origin: origin.url, extra: ["--variant", "tcf=astc"], environment: ["LANG": "C"])
        let mnt = fixture.mountpoint

        // Listings and attributes download nothing, and never show a suffix.
        let listing = try await Command.run("/bin/ls", ["-lR", mnt])
        #expect(listing.status == 0 && !listing.output.contains("#"), "\(listing.output)")
        let attributes = try await Command.run("/usr/bin/getfattr", ["-d", "-m", "-", mnt + "/levels/1/Textures/t.ktx"])
        #expect(attributes.output.contains("user.odrfs.variant=\"tcf=astc\""), "\(attributes.output)")
        #expect(attributes.output.contains("user.odrfs.pack=\"Level1[tcf=astc]\""), "\(attributes.output)")
        let astcFile = try pack("Level1[tcf=astc]", fixture)
        #expect(!origin.packRequests.contains { $0.contains(astcFile) }, "ls -lR or getfattr downloaded")
        var info = stat()
        #expect(stat(mnt + "/levels/1/Textures/t.ktx", &info) == 0 && Int(info.st_size) == Self.textures["astc"]!.count)

        #expect(try Self.read(mnt + "/levels/1/Textures/t.ktx") == Self.textures["astc"]!)
        #expect(try Self.read(mnt + "/levels/1/Hi/detail.bin") == Self.detail, "min-memory 1K, min-cpus 1 hold here")
        #expect(try Self.read(mnt + "/Voice/hello.txt") == Self.voices["en"]!, "LANG=C: the default")
        // The large file again: its pack is local now, so the kernel reads a backing copy.
        #expect(await eventually { (try? FileManager.default.contentsOfDirectory(atPath: fixture.cache + "/files").count) == 1 },
                "no passthrough copy of the texture: \(fixture.log)")
        #expect(try Self.read(mnt + "/levels/1/Textures/t.ktx") == Self.textures["astc"]!)

        let selected = Set(try ["base", "Level1[tcf=astc]", "Level1[tier=high]", "base[locale=en]"].map { try pack($0, fixture) })
        let requested = Set(origin.packRequests.compactMap { request in selected.first { request.contains($0) } })
        #expect(requested == selected, "\(origin.packRequests)")
        let plain = try pack("Level1", fixture)
        let others = try fixture.manifest.packs.map(\.file).filter { file in !selected.contains(file) && file != plain }
        for file in others {
            #expect(!origin.packRequests.contains { $0.contains(file) }, "another variant's pack \(file) was requested: \(origin.packRequests)")
        }
        let status = try await Self.statusJSON(fixture)
        #expect(status["variants"] as? [String: String] == ["tcf": "astc", "locale": "en", "tier": "high"])
        let packs = try #require(status["packs"] as? [[String: Any]])
        #expect(packs.compactMap { $0["id"] as? String }.sorted() == ["Level1", "Level1[tcf=astc]", "Level1[tier=high]", "base", "base[locale=en]"])
        #expect(packs.first { $0["id"] as? String == "Level1[tcf=astc]" }?["variant"] as? [String: String] == ["tcf": "astc"])
        let request = BundleResourceRequest(tags: ["Level1"], mountpoint: mnt)
        #expect(try await request.variants == ["tcf": "astc", "locale": "en", "tier": "high"])
    }

    @Test("without --variant: LANG=ja_JP.UTF-8 picks ja; an unavailable preference falls back to the default; an undeclared key fails the mount")
    func defaultsAndFallback() async throws {
        let fixture = try MountFixture()
        try await Self.buildBundle(fixture)
        try await fixture.mount(extra: ["--variant", "tcf=pvrtc,bc7"], environment: ["LANG": "ja_JP.UTF-8"])
        #expect(try Self.read(fixture.mountpoint + "/Voice/hello.txt") == Self.voices["ja"]!)
        #expect(try Self.read(fixture.mountpoint + "/levels/1/Textures/t.ktx") == Self.textures["bc7"]!, "pvrtc is no value: bc7")
        let second = try MountFixture()
        try await Self.buildBundle(second)
        try await second.mount(extra: ["--variant", "tcf=pvrtc"], environment: ["LC_ALL": "C.UTF-8", "LANG": "it_IT.UTF-8"])
        #expect(try Self.read(second.mountpoint + "/levels/1/Textures/t.ktx") == Self.textures["etc2"]!, "no preference left: the default")
        #expect(try Self.read(second.mountpoint + "/Voice/hello.txt") == Self.voices["en"]!, "LC_ALL wins over LANG, and C is no language")

        let third = try MountFixture()
        try await Self.buildBundle(third)
        let refused = try await third.odrfs(["mount", third.dist, third.mountpoint, "--cache", third.cache, "--variant", "lang=it"])
        #expect(refused.status != 0 && refused.stderr.contains("'tcf', 'locale', 'tier'"), "\(refused.stderr)")
        #expect(!MountFixture.isMounted(third.mountpoint))
    }
}

/// The content-addressed file of pack `id` in the fixture's dist dir.
private func pack(_ id: String, _ fixture: MountFixture) throws -> String {
    try #require(try fixture.manifest.packs.first { $0.id.rawValue == id }?.file, "no pack \(id)")
}
