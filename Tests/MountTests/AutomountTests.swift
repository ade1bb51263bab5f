import Foundation
import ODRFSCore
import TestSupport
import Testing

/// Bundles mounted on first access (issue 25): `/etc/odrfs/bundles.d/NAME.conf` and the
/// autofs program map, with Debian's automount on a private master map (see
/// ``PrivateAutomount``) and a bundle served by `odrfs serve`.
@Suite("autofs: bundles mounted on first access", .serialized, .timingSensitive,
       .enabled(if: PrivateAutomount.shouldRun), .timeLimit(.minutes(3)))
struct AutomountTests {
    @Test("ls /odr/NAME mounts the bundle, its files read correctly, the idle timeout unmounts it; a broken configuration gives one log line and ENOENT for that name only")
    func firstAccessMountsAndIdleUnmounts() async throws {
        if let problem = PrivateAutomount.problem {
            Issue.record("autofs is not usable: \(problem)")
            return
        }
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let origin = try await onFreePort { try await ServeOrigin(serving: fixture.dist, in: fixture.root + "/serve-\($0)", port: $0) }
        let bundles = fixture.root + "/bundles.d"
        try FileManager.default.createDirectory(atPath: bundles, withIntermediateDirectories: true)
        try "# the test bundle\norigin = \(origin.url)\ncache = \(fixture.root)/cache-travel\n"
            .write(toFile: bundles + "/travel.conf", atomically: true, encoding: .utf8)
        try "origin = \(origin.url)\norgin = typo\n".write(toFile: bundles + "/broken.conf", atomically: true, encoding: .utf8)

        let automount = PrivateAutomount(root: fixture.root, bundles: bundles)
        var daemons: [pid_t] = []
        do {
            try await automount.start(timeout: 3)
            try await exercise(automount, fixture: fixture, daemons: &daemons)
        } catch {
            await automount.stop(daemons: daemons)
            throw error
        }
        await automount.stop(daemons: daemons)
    }

    private func exercise(_ automount: PrivateAutomount, fixture: MountFixture, daemons: inout [pid_t]) async throws {
        let odr = automount.mountRoot
        // A broken configuration: ENOENT, one clear log line, and only for that name.
        let broken = try await Command.run("/bin/ls", [odr + "/broken"], timeout: .seconds(30))
        #expect(broken.status != 0 && broken.stderr.contains("No such file or directory"), "ls /odr/broken: \(broken.stderr)")
        let brokenLines = { automount.log.split(separator: "\n").filter { $0.contains("bundle broken") } }
        #expect(await eventually(timeout: .seconds(5)) { brokenLines().count == 1 }, "automount's log: \(automount.log)")
        let line = try #require(brokenLines().first)
        #expect(line.contains("broken.conf") && line.contains("line 2") && line.contains("unknown key 'orgin'"), "\(line)")
        // A name with no configuration, or one that is no bundle name: ENOENT, no log line.
        for name in ["absent", ".hidden"] {
            let result = try await Command.run("/bin/ls", [odr + "/" + name], timeout: .seconds(30))
            #expect(result.status != 0 && result.stderr.contains("No such file or directory"), "ls /odr/\(name): \(result.stderr)")
            #expect(!automount.log.contains("bundle \(name)"), "\(automount.log)")
        }

        // First access mounts the configured bundle; its files read as built.
        let travel = odr + "/travel"
        let listing = try await Command.run("/bin/ls", [travel], timeout: .seconds(60))
        try #require(listing.status == 0, "ls /odr/travel: \(listing.stderr)\nautomount: \(automount.log)")
        #expect(listing.output.split(separator: "\n").contains("README.txt"), "\(listing.output)")
        // A file held open keeps the mount busy while it is checked and read: on a loaded
        // machine those steps can outlast the 3 s idle timeout (autofs unmounted it between
        // the `ls` and the check once). Opening it mounts the bundle again if that happened.
        var holder = open(travel + "/README.txt", O_RDONLY)
        #expect(holder >= 0, "open \(travel)/README.txt: errno \(errno)")
        defer { if holder >= 0 { close(holder) } }
        // A read of /proc/self/mountinfo while other tests mount and unmount can miss an
        // entry (the kernel's seq_file is read in chunks): look again before failing.
        let isFUSE = await eventually(timeout: .seconds(10)) { automount.mounted(at: travel)?.hasPrefix("fuse") == true }
        #expect(isFUSE, "\(String(describing: automount.mounted(at: travel)))")
        for path in ["README.txt", "levels/1/map.dat", "big.bin"] {
            let read = try await Command.run("/bin/cat", [travel + "/" + path], timeout: .seconds(60))
            #expect(read.status == 0 && Array(read.stdout) == TestBundle.files[path], "\(path): \(read.stderr)")
        }
        #expect(brokenLines().count == 1, "the broken name logged again: \(automount.log)")
        let daemon = fixture.daemonPID(travel)
        if let daemon { daemons.append(daemon) }
        #expect(daemon != nil, "no daemon PID for \(travel)")
        // Once ready the daemon has left the automounter's process group for a session of its own.
        if let daemon { #expect(getsid(daemon) == daemon, "the daemon \(daemon) is in session \(getsid(daemon))") }

        if holder >= 0 { close(holder); holder = -1 }
        // Unused for the idle timeout (3 s): autofs unmounts it, and the daemon exits.
        let unmounted = await eventually(timeout: .seconds(30)) { automount.mounted(at: travel) == nil }
        #expect(unmounted, "/odr/travel still mounted 30 s after its last use: \(automount.log)")
        if let daemon {
            #expect(await eventually(timeout: .seconds(15)) { Self.isGone(daemon) }, "the daemon \(daemon) outlived its mount")
        }

        // The next access mounts it again.
        let again = try await Command.run("/bin/cat", [travel + "/README.txt"], timeout: .seconds(60))
        #expect(again.status == 0 && Array(again.stdout) == TestBundle.files["README.txt"], "\(again.stderr)")
        if let second = fixture.daemonPID(travel) { daemons.append(second) }
    }

    /// Exited: no such process, or a zombie nobody has reaped yet (the daemon's parent,
    /// `odrfs mount`, exited long ago; whoever inherits it may be slow to reap).
    static func isGone(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 else { return true }
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        return stat.range(of: ") ").map { stat[$0.upperBound...].hasPrefix("Z") } ?? true
    }
}
