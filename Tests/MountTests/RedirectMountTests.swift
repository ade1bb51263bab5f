import FaultOriginSupport
import Foundation
import ODRFSCore
import TestSupport
import Testing

/// Issue 26, item 1: a server that redirects the manifest, the index or a pack to an invalid
/// target (a port swift-nio traps on, credentials, a Unix socket, no host…) killed the
/// mount daemon with SIGILL. Every target is now validated as an origin URL is: the fetch
/// fails with one clear message, and the daemon and every other file of the mount live on.
@Suite("Hostile redirects", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct RedirectMountTests {
    /// The forms a server can send: each crashed a fetch or must never be followed.
    static let invalidTargets = [
        "http://127.0.0.1:99999/p", "http://127.0.0.1:65536/p", "http://127.0.0.1:0/p", "http://[::1]:70000/p",
        "//127.0.0.1:99999/p", "http://127.0.0.1:99999999999999999999/p", "http://127.0.0.1:-1/p",
        "http://user:secret@127.0.0.1/p", "http://h%20x/p", "http://[fe80::1%25eth0]/p", "http://[::1/p",
        "http:///p", "http://", "http+unix://%2Ftmp%2Fodrfs-none.sock/p", "file:///etc/passwd", "ftp://127.0.0.1/p",
        "javascript:alert(1)",
    ]

    /// A redirect answered to every request (more than any retry loop makes).
    static func always(_ location: String) -> [FaultOrigin.Behaviour] {
        Array(repeating: .redirect(location), count: 50)
    }

    @Test("a manifest, index or pack redirected to an invalid target fails that fetch with a clear message; the daemon and the other files live on")
    func invalidRedirectTargets() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let origin = try await FaultOrigin.start()
        do {
            try await Self.run(fixture, origin)
        } catch {
            await origin.stop()
            throw error
        }
        await origin.stop()
    }

    static func run(_ fixture: MountFixture, _ origin: FaultOrigin) async throws {
        try origin.setFiles(from: fixture.dist)
        let manifest = try fixture.manifest
        let indexPath = "/" + manifest.index.file
        let packPath = "/" + (try #require(manifest.packs.first { $0.id.rawValue == "Level1" })).file
        let mountArguments = ["--cache", fixture.cache, "--fetch-timeout", "3"]

        // At mount time: the manifest, then the index, redirected. The mount fails and says why.
        for (path, target) in [("/manifest.json", invalidTargets[0]), ("/manifest.json", invalidTargets[7]),
                               (indexPath, invalidTargets[0]), (indexPath, invalidTargets[13])] {
            origin.script(path, always(target))
            let refused = try await fixture.odrfs(["mount", origin.baseURL, fixture.mountpoint] + mountArguments)
            #expect(refused.status != 0, "mount succeeded through a redirect of \(path) to \(target)")
            #expect(refused.stderr.contains("redirect"), "\(path) → \(target): \(refused.stderr)")
            origin.script(path, [])
        }

        // A running mount: every invalid form answered for a pack. Each open fails with EIO,
        // and the daemon still answers for files it has and for other packs.
        try await fixture.mount(origin: origin.baseURL, extra: ["--fetch-timeout", "3"])
        let daemon = try #require(fixture.daemonPID())
        let level1 = fixture.mountpoint + "/levels/1/map.dat"
        for target in invalidTargets {
            origin.script(packPath, always(target))
            let open = try await Command.run("/bin/cat", [level1])
            #expect(open.status != 0 && open.stderr.contains("Input/output error"), "\(target): \(open.stderr)")
            #expect(open.stdout.isEmpty)
            #expect(kill(daemon, 0) == 0, "the daemon died on a redirect to \(target)")
            let other = try await Command.run("/bin/cat", [fixture.mountpoint + "/README.txt"])
            #expect(other.status == 0 && other.stdout == Data(TestBundle.files["README.txt"]!), "after \(target): \(other.stderr)")
        }
        #expect(fixture.log.contains("redirect"), "no log line names the refused redirect")
        let level2 = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/2/map.dat"])
        #expect(level2.status == 0 && level2.stdout == Data(TestBundle.files["levels/2/map.dat"]!), "\(level2.stderr)")
        // The server behaves again: the same pack is fetched and verified.
        origin.script(packPath, [])
        let healed = try await Command.run("/bin/cat", [level1])
        #expect(healed.status == 0 && healed.stdout == Data(TestBundle.files["levels/1/map.dat"]!), "\(healed.stderr)")

        // An update check whose manifest is redirected, to each form, fails cleanly; the mount stays.
        for target in invalidTargets {
            origin.script("/manifest.json", always(target))
            let update = try await fixture.odrfs(["update", fixture.mountpoint])
            #expect(update.status != 0 && update.stderr.contains("redirect"), "\(target): \(update.stderr)")
            #expect(kill(daemon, 0) == 0, "the daemon died on a manifest redirect to \(target)")
        }
        origin.script("/manifest.json", [])

        // Revision 2's new index redirected: the update fails, the mount stays on revision 1.
        try Data("revision 2\n".utf8).write(to: URL(fileURLWithPath: fixture.source + "/levels/3/new.txt"))
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(build.status == 0, "\(build.stderr)")
        try origin.setFiles(from: fixture.dist)
        let newIndex = "/" + (try fixture.manifest.index.file)
        try #require(newIndex != indexPath)
        for target in invalidTargets {
            origin.script(newIndex, always(target))
            let indexUpdate = try await fixture.odrfs(["update", fixture.mountpoint])
            #expect(indexUpdate.status != 0 && indexUpdate.stderr.contains("redirect"), "\(target): \(indexUpdate.stderr)")
            #expect(kill(daemon, 0) == 0, "the daemon died on an index redirect to \(target)")
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.mountpoint + "/levels/3/new.txt"))
        #expect(kill(daemon, 0) == 0)
        #expect(try await fixture.unmount().status == 0)
    }
}
