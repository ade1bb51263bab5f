import Foundation
import ODRFSCore
import Testing

/// `odrfs keygen`, `odrfs build --sign-key/--expires` and `odrfs mount --trust-key`,
/// end to end through the built binary (issue 12, "Trust").
@Suite("Signed mounts", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct SignedMountTests {
    /// A fixture with the test bundle's source written and a key pair made by `odrfs keygen`.
    static func fixture(keys: [String] = ["key"]) async throws -> MountFixture {
        let fixture = try MountFixture()
        try TestBundle.write(to: fixture.source)
        for name in keys {
            let made = try await fixture.odrfs(["keygen", fixture.root + "/" + name])
            try #require(made.status == 0, "odrfs keygen failed: \(made.stderr)")
        }
        return fixture
    }

    static func build(_ fixture: MountFixture, into dist: String? = nil, _ extra: [String] = []) async throws {
        let result = try await fixture.odrfs(["build", fixture.source, "-o", dist ?? fixture.dist] + extra)
        try #require(result.status == 0, "odrfs build failed: \(result.stderr)")
    }

    /// Runs `odrfs mount` expecting a refusal; unmounts at once if it mounted after all.
    static func expectRefused(_ fixture: MountFixture, _ extra: [String], saying text: String,
                              sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let result = try await fixture.odrfs(["mount", fixture.dist, fixture.mountpoint, "--cache", fixture.cache] + extra)
        if result.status == 0 {
            _ = try? await Command.run("/usr/bin/fusermount3", ["-u", "-z", fixture.mountpoint], timeout: .seconds(10))
            Issue.record("mounted although it should have been refused (\(text))", sourceLocation: sourceLocation)
            return
        }
        #expect(result.stderr.contains(text), "\(result.stderr)", sourceLocation: sourceLocation)
    }

    @Test("keygen writes a 0600 private key and a .pub, and never overwrites either")
    func keygen() async throws {
        let fixture = try await Self.fixture()
        let keyPath = fixture.root + "/key"
        var info = stat()
        #expect(stat(keyPath, &info) == 0 && info.st_mode & 0o777 == 0o600)
        let publicText = try String(contentsOfFile: keyPath + ".pub", encoding: .utf8)
        #expect(publicText.hasPrefix("odrfs-ed25519-public ") && publicText.hasSuffix("\n"))
        let privateBefore = try Data(contentsOf: URL(fileURLWithPath: keyPath))
        let again = try await fixture.odrfs(["keygen", keyPath])
        #expect(again.status != 0 && again.stderr.contains("refusing to overwrite"), "\(again.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: keyPath)) == privateBefore)
        // Only the .pub exists: still refused, and no private key is left behind.
        try publicText.write(toFile: fixture.root + "/other.pub", atomically: false, encoding: .utf8)
        let other = try await fixture.odrfs(["keygen", fixture.root + "/other"])
        #expect(other.status != 0 && other.stderr.contains("refusing to overwrite"))
        #expect(!FileManager.default.fileExists(atPath: fixture.root + "/other"))
    }

    @Test("a correctly signed bundle mounts and reads; another key, an altered manifest and an unsigned one are refused")
    func goodBadAndUnsigned() async throws {
        let fixture = try await Self.fixture(keys: ["key", "other"])
        let trust = ["--trust-key", fixture.root + "/key.pub"]
        try await Self.build(fixture, ["--sign-key", fixture.root + "/key"])
        #expect(FileManager.default.fileExists(atPath: fixture.dist + "/manifest.json.sig"))

        try await Self.expectRefused(fixture, ["--trust-key", fixture.root + "/other.pub"], saying: "which is not trusted")
        // Rotation: either of two trusted keys will do.
        try await fixture.mount(extra: trust + ["--trust-key", fixture.root + "/other.pub"])
        let read = try await Command.run("/bin/cat", [fixture.mountpoint + "/README.txt"])
        #expect(read.status == 0 && read.stdout == Data(TestBundle.files["README.txt"]!))
        #expect(try await fixture.unmount().status == 0)

        let manifestURL = URL(fileURLWithPath: fixture.dist + "/manifest.json")
        let signed = try Data(contentsOf: manifestURL)
        try (signed + Data("\n".utf8)).write(to: manifestURL)   // still valid JSON, not the signed bytes
        try await Self.expectRefused(fixture, trust, saying: "does not match the manifest")
        try signed.write(to: manifestURL)

        try FileManager.default.removeItem(atPath: fixture.dist + "/manifest.json.sig")
        try await Self.expectRefused(fixture, trust, saying: "manifest is not signed")
        // Without --trust-key nothing changes: the unsigned bundle mounts.
        try await fixture.mount()
        #expect(try await Command.run("/bin/cat", [fixture.mountpoint + "/README.txt"]).status == 0)
    }

    @Test("after revision 2 was mounted, a signed revision 1 is refused as a rollback on the same cache")
    func rollback() async throws {
        let fixture = try await Self.fixture()
        let sign = ["--sign-key", fixture.root + "/key"]
        let trust = ["--trust-key", fixture.root + "/key.pub"]
        let older = fixture.root + "/dist-r1"
        try await Self.build(fixture, into: older, sign)
        try await Self.build(fixture, sign)
        try await Self.build(fixture, sign)   // into the same dist dir: revision 2
        #expect(try fixture.manifest.revision == 2)
        try await fixture.mount(extra: trust)
        #expect(try await fixture.unmount().status == 0)

        try FileManager.default.removeItem(atPath: fixture.dist)
        try FileManager.default.moveItem(atPath: older, toPath: fixture.dist)
        #expect(try fixture.manifest.revision == 1)
        try await Self.expectRefused(fixture, trust, saying: "rollback to revision 1 refused: revision 2 was seen on ")
        // Without --trust-key the manifest is trusted as served (documented): it mounts.
        try await fixture.mount()
    }

    @Test("an expired manifest is refused with its expiry time")
    func expired() async throws {
        let fixture = try await Self.fixture()
        try await Self.build(fixture, ["--sign-key", fixture.root + "/key", "--expires", "1s"])
        let expires = try #require(try fixture.manifest.expires)
        // Wait past the expiry (at most ~2 s: the build rounds the time down).
        #expect(await eventually(timeout: .seconds(5)) { Date().timeIntervalSince1970 >= Double(expires) + 0.1 })
        try await Self.expectRefused(fixture, ["--trust-key", fixture.root + "/key.pub"], saying: "manifest expired at ")
    }

    @Test("odrfs serve serves the signature; offline, the cached signature is checked again")
    func servedAndOffline() async throws {
        let fixture = try await Self.fixture()
        try await Self.build(fixture, ["--sign-key", fixture.root + "/key"])
        let trust = ["--trust-key", fixture.root + "/key.pub", "--fetch-timeout", "2"]
        var origin: ServeOrigin? = try await onFreePort { try await ServeOrigin(serving: fixture.dist, in: fixture.root + "/serve-\($0)", port: $0) }
        let url = origin!.url
        try await fixture.mount(origin: url, extra: trust)
        #expect(try await fixture.unmount().status == 0)
        #expect(FileManager.default.fileExists(atPath: fixture.cache + "/manifest.json.sig"))
        origin = nil

        try await fixture.mount(origin: url, extra: trust)
        #expect(fixture.log.contains("mounting the cached bundle version offline"))
        #expect(try await fixture.unmount().status == 0)

        let cachedManifest = URL(fileURLWithPath: fixture.cache + "/manifest.json")
        try (try Data(contentsOf: cachedManifest) + Data(" ".utf8)).write(to: cachedManifest)
        let result = try await fixture.odrfs(["mount", url, fixture.mountpoint, "--cache", fixture.cache] + trust)
        if result.status == 0 { _ = try? await fixture.unmount() }
        #expect(result.status != 0 && result.stderr.contains("does not match the manifest"), "\(result.stderr)")
    }
}
