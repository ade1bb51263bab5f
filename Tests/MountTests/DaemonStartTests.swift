import Foundation
import Testing

/// How `odrfs mount` starts its daemon (issue 27, item 5: nothing local may add more than
/// 50 ms to a mount): forked before `main` while the process has one thread, so the daemon
/// does not load the binary and its libraries a second time; spawned as
/// `mount --foreground` when that fork is off (ODRFS_NO_EARLY_FORK).
@Suite("Daemon start", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct DaemonStartTests {
    /// The daemon's argv, from /proc.
    static func arguments(of pid: pid_t) -> [String] {
        let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") ?? Data()
        return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Processes whose command line mentions `text`.
    static func processes(mentioning text: String) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { pid_t($0) }.filter { arguments(of: $0).contains { $0.contains(text) } }
    }

    /// The session id of `pid` (/proc/PID/stat's 6th field, counted after the command name).
    static func session(of pid: pid_t) -> pid_t? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 3 ? pid_t(fields[3]) : nil
    }

    @Test("odrfs mount forks its daemon before main: one process with the command's own arguments, a session of its own once ready, files read")
    func forkedBeforeMain() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        let pid = try #require(fixture.daemonPID())
        let arguments = Self.arguments(of: pid)
        #expect(arguments.dropFirst().first == "mount" && !arguments.contains("--foreground") && !arguments.contains("--ready-fd"),
                "the daemon was spawned again, not forked: \(arguments)")
        #expect(await eventually(timeout: .seconds(5)) { Self.session(of: pid) == pid }, "the daemon did not leave the caller's session")
        #expect(await readThroughMount(fixture.mountpoint + "/levels/1/map.dat") == Data(TestBundle.files["levels/1/map.dat"]!))
        // Its output went to the log once its configuration was known, not to the caller.
        #expect(fixture.log.contains("odrfs.mount"), "the daemon did not log to its cache directory: \(fixture.log.prefix(300))")
        #expect(try await fixture.unmount().status == 0)
    }

    @Test("with ODRFS_NO_EARLY_FORK the daemon is spawned as mount --foreground, and mounts the same")
    func spawnedWhenTheForkIsOff() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount(environment: ["ODRFS_NO_EARLY_FORK": "1"])
        let pid = try #require(fixture.daemonPID())
        let arguments = Self.arguments(of: pid)
        #expect(arguments.contains("--foreground") && arguments.contains("--ready-fd"), "\(arguments)")
        #expect(await eventually(timeout: .seconds(5)) { Self.session(of: pid) == pid })
        #expect(await readThroughMount(fixture.mountpoint + "/levels/1/map.dat") == Data(TestBundle.files["levels/1/map.dat"]!))
        #expect(try await fixture.unmount().status == 0)
    }

    @Test("bad arguments: the forked daemon says why on the caller's terminal and its status (64) is the command's; a mount that fails says why and exits 1")
    func failuresReachTheCaller() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let bad = try await fixture.odrfs(["mount", fixture.dist, fixture.mountpoint, "--cache", fixture.cache, "--cache-size", "lots"])
        #expect(bad.status == 64, "\(bad.status) \(bad.stderr)")
        #expect(bad.stderr.contains("--cache-size"), "\(bad.stderr)")
        let missing = try await fixture.odrfs(["mount", fixture.root + "/no-such-dist", fixture.mountpoint, "--cache", fixture.cache])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("odrfs mount: ") && missing.stderr.contains("no-such-dist"), "\(missing.stderr)")
        // Nothing is left running: neither a daemon nor a mount.
        #expect(fixture.daemonPID() == nil)
    }

    @Test("a caller that closed stdin and stdout still gets a mount (the fork fills descriptors 0-2), and one that ignores SIGCHLD still gets the daemon's status")
    func closedDescriptorsAndIgnoredChildren() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let odrfs = MountFixture.binary
        let closed = try await Command.run("/bin/sh", ["-c", "exec \"$0\" mount \"$1\" \"$2\" --cache \"$3\" <&- >&-",
                                                       odrfs, fixture.dist, fixture.mountpoint, fixture.cache], timeout: .seconds(30))
        #expect(closed.status == 0, "\(closed.status) \(closed.stderr)")
        if closed.status != 0 {
            // A daemon that hung before it wrote its pid file: stopped here, by its PID.
            for pid in Self.processes(mentioning: fixture.cache) { kill(pid, SIGKILL) }
        } else {
            fixture.adopt(fixture.mountpoint)
            #expect(await readThroughMount(fixture.mountpoint + "/levels/1/map.dat") == Data(TestBundle.files["levels/1/map.dat"]!))
            #expect(try await fixture.unmount().status == 0)
        }
        let ignored = try await Command.run("/bin/sh", ["-c", "trap '' CHLD; exec \"$0\" mount \"$1\" \"$2\" --cache-size lots",
                                                        odrfs, fixture.dist, fixture.mountpoint], timeout: .seconds(30))
        #expect(ignored.status == 64, "\(ignored.status) \(ignored.stderr)")
        let help = try await fixture.odrfs(["mount", "--help"])
        #expect(help.status == 0 && help.output.contains("USAGE"), "\(help.status) \(help.stderr)")
    }
}
