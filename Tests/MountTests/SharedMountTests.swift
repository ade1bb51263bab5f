import Foundation
import ODRFSControl
import ODRFSCore
import TestSupport
import Testing

/// Issue 25, item 4: a mount made by root with `-o allow_other` serves every local user:
/// they read files as the files' modes allow (`default_permissions`), read status and
/// request tags through the control socket, and are refused (exit code 9) what only the
/// owner and root may do. The cache stays closed to them.
@Suite("One mount for every local user", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(2)))
struct SharedMountTests {
    /// Runs the `odrfs` binary (or another program) as the unprivileged `nobody`.
    static func asNobody(_ executable: String, _ arguments: [String]) async throws -> CommandResult {
        try await Command.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", executable] + arguments)
    }

    @Test("as nobody: reads by mode, status, request, --hold and a BundleResourceRequest work; purge and priority --set are refused with exit code 9; root may")
    func everyUser() async throws {
        try #require(geteuid() == 0, "needs root to mount with allow_other and to run commands as nobody")
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount(extra: ["-o", "allow_other"])
        // Let other users reach the mountpoint (the fixture's directory is private).
        chmod(fixture.root, 0o755)
        let mnt = fixture.mountpoint
        let odrfs = MountFixture.binary

        let readme = try await Self.asNobody("/bin/cat", [mnt + "/README.txt"])
        #expect(readme.status == 0 && readme.stdout == Data(TestBundle.files["README.txt"]!), "\(readme.stderr)")
        let remote = try await Self.asNobody("/bin/cat", [mnt + "/levels/1/map.dat"])
        #expect(remote.status == 0 && remote.stdout == Data(TestBundle.files["levels/1/map.dat"]!), "\(remote.stderr)")
        // config/settings.json is 0600: the kernel holds others to the file's mode.
        let privateFile = try await Self.asNobody("/bin/cat", [mnt + "/config/settings.json"])
        #expect(privateFile.status != 0 && privateFile.stderr.contains("Permission denied"), "\(privateFile.stderr)")

        let status = try await Self.asNobody(odrfs, ["status", mnt, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        #expect((try? JSONSerialization.jsonObject(with: status.stdout)) is [String: Any])
        let request = try await Self.asNobody(odrfs, ["request", mnt, "Level2"])
        #expect(request.status == 0, "\(request.stderr)")
        #expect(try fixture.state(of: "Level2") == "downloaded")

        // A held request retains its packs until its process goes.
        let hold = try Command.start("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", odrfs, "request", mnt, "Level3", "--hold"])
        let held = await eventually(timeout: .seconds(20)) { (try? fixture.retains(of: "Level3")) == 1 }
        #expect(held, "nobody's --hold did not retain Level3")
        hold.stop()
        #expect(await eventually(timeout: .seconds(20)) { (try? fixture.retains(of: "Level3")) == 0 }, "the retain outlived its connection")

        // A Swift program of nobody's, through ODRFSClient's BundleResourceRequest (the
        // iTravel example: it requests the tag, reads, ends access, twice).
        let itravel = (MountFixture.binary as NSString).deletingLastPathComponent + "/odrfs-itravel"
        #expect(try fixture.state(of: "Big") == "not-downloaded")
        let client = try await Self.asNobody(itravel, [mnt, "Big"])
        #expect(client.status == 0 && client.output.contains("visit 2"), "\(client.output) \(client.stderr)")
        #expect(try fixture.state(of: "Big") == "downloaded")

        // Changes are the owner's and root's.
        for arguments in [["purge", mnt, "--all"], ["priority", mnt, "Level1", "--set", "0.9"], ["update", mnt]] {
            let refused = try await Self.asNobody(odrfs, arguments)
            #expect(refused.status == 9, "\(arguments): \(refused.status) \(refused.stderr)")
            #expect(refused.stderr.lowercased().contains("permission denied"), "\(refused.stderr)")
        }
        #expect(try fixture.state(of: "Level2") == "downloaded", "a refused purge purged")
        let purge = try await fixture.odrfs(["purge", mnt, "--all"])
        #expect(purge.status == 0, "\(purge.stderr)")
        #expect(try fixture.state(of: "Level2") == "not-downloaded")

        // Another user gets 32 connections at once, no more (the rest are the owner's and root's).
        let socketPath = RuntimeDirectory(sharedMountpoint: MountFixture.resolvedWithoutEnteringMount(mnt)).controlSocket
        let script = """
            import socket, sys
            held, ok, refused = [], 0, 0
            for i in range(40):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(10)
                s.connect(sys.argv[1])
                try:
                    s.sendall(b'{"v":1,"id":1,"op":"status"}\\n')
                except OSError:
                    pass  # a refused connection may be closed before the request is sent
                data = b""
                try:
                    while not data.endswith(b"\\n"):
                        chunk = s.recv(1 << 20)
                        if not chunk: break
                        data += chunk
                except OSError:
                    pass
                if b"too-many-connections" in data: refused += 1
                elif b'"ok":true' in data: ok += 1
                held.append(s)
            print(ok, refused)
            """
        let flood = try await Self.asNobody("/usr/bin/python3", ["-c", script, socketPath])
        #expect(flood.output.trimmingCharacters(in: .whitespacesAndNewlines) == "32 8", "\(flood.output) \(flood.stderr)")
        let rootStatus = try await fixture.odrfs(["status", mnt])
        #expect(rootStatus.status == 0, "root could not connect: \(rootStatus.stderr)")

        // The cache and its log stay closed to other users.
        let cache = try await Self.asNobody("/bin/ls", [fixture.cache])
        #expect(cache.status != 0, "nobody listed the cache: \(cache.output)")
        let log = try await Self.asNobody("/bin/cat", [fixture.cache + "/odrfs.log"])
        #expect(log.status != 0)
        #expect(try await fixture.unmount().status == 0)
    }
}
