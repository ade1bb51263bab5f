import Foundation
import ODRFSCore
import TestSupport
import Testing

/// Debian's `automount` on a private master map: one indirect mount at `<root>/odr` whose
/// program map asks the built `odrfs config autofs`, with `ODRFS_BUNDLES_DIR` pointing at
/// a temp folder. Nothing of the machine's autofs configuration is read or changed;
/// `-C` lets it run beside a system automounter.
///
/// mount(8) only looks for helpers in /sbin, so the map's entries name a filesystem type
/// of this run's own (`odrfstXXXXXXXX`) whose helper, a wrapper that runs this checkout's
/// `mount-scripts/mount.odrfs`, lives in /usr/sbin only while the test runs: parallel runs
/// and an installed package's `/sbin/mount.odrfs` are never touched.
final class PrivateAutomount {
    let root: String
    let bundles: String
    var mountRoot: String { root + "/odr" }
    let fstype = "odrfst" + String(UInt32.random(in: .min ... .max), radix: 16)
    var helper: String { "/usr/sbin/mount." + fstype }
    private(set) var process: ChildProcess?
    var errorLog: String { root + "/automount.err" }

    static var problem: String? {
        access("/usr/sbin/automount", X_OK) == 0 ? nil : "/usr/sbin/automount is missing (apt-get install autofs; mount-scripts/setup.sh does)"
    }

    /// Run when autofs is here, and always in CI, where a missing autofs fails loudly.
    static var shouldRun: Bool {
        if let problem, !FUSEAvailability.isCI {
            print("⚠️  SKIPPING autofs tests: \(problem). In CI these tests fail instead of skipping.")
            return false
        }
        return FUSEAvailability.shouldRun
    }

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    init(root: String, bundles: String) {
        self.root = root
        self.bundles = bundles
    }

    /// Starts automount with an idle timeout of `timeout` seconds and waits (bounded) for
    /// its autofs mount.
    func start(timeout: Int) async throws {
        // mount(8) clears PATH before it runs a helper (sanitize_env): the wrapper puts this
        // build's odrfs first, then runs the checkout's mount.odrfs as it is.
        let binaries = (MountFixture.binary as NSString).deletingLastPathComponent
        let wrapper = "#!/bin/sh\nPATH=\(binaries):/usr/sbin:/usr/bin:/sbin:/bin exec \(Self.repository)/mount-scripts/mount.odrfs \"$@\"\n"
        guard FileManager.default.createFile(atPath: helper, contents: Data(wrapper.utf8), attributes: [.posixPermissions: 0o755]) else {
            Issue.record("cannot create \(helper)")
            throw CancellationError()
        }
        let map = root + "/auto.odrfs"
        try """
            #!/bin/sh
            exec \(MountFixture.binary) config autofs --fstype \(fstype) -- "$1"

            """.write(toFile: map, atomically: true, encoding: .utf8)
        chmod(map, 0o755)
        let master = root + "/auto.master"
        try "\(mountRoot) program:\(map) --timeout=\(timeout)\n".write(toFile: master, atomically: true, encoding: .utf8)
        // Its own session, so its own process group: the kernel answers lookups from the
        // automounter's group itself (ENOENT, never a mount), and that would be this test's.
        // setsid execs in place (the child is no group leader), so the PID is automount's.
        process = try ChildProcess("/usr/bin/setsid", ["/usr/bin/env",
            "PATH=\(binaries):/usr/sbin:/usr/bin:/sbin:/bin", "ODRFS_BUNDLES_DIR=\(bundles)",
            "/usr/sbin/automount", "-f", "-C", "-v", "-t", String(timeout), "-n", "1", "-p", root + "/automount.pid", master,
        ], stdout: root + "/automount.out", stderr: errorLog)
        let up = await eventually(timeout: .seconds(20)) { self.mounted(at: self.mountRoot) == "autofs" }
        try #require(up, "automount did not mount \(mountRoot) within 20 s: \(log)")
    }

    /// The filesystem type mounted at `path`, if any.
    func mounted(at path: String) -> String? {
        MountTable.current().entry(at: path)?.filesystemType
    }

    /// What automount logged (`-f`: to stderr; `-v`: each mount and failure too).
    var log: String {
        (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? "(no log)"
    }

    /// Stops automount (SIGTERM: it unmounts what it can), then detaches whatever is left
    /// under `root`, signals the mount daemons it started and removes the helper.
    func stop(daemons: [pid_t]) async {
        if let process {
            process.signal(SIGTERM)
            if !(await process.wait(timeout: .seconds(10))) { await process.terminate() }
        }
        process = nil
        detachEverything(daemons: daemons)
    }

    private func detachEverything(daemons: [pid_t]) {
        let leftovers = MountTable.current().entries.map(\.mountpoint).filter { $0.hasPrefix(root + "/") }
        for target in leftovers.sorted(by: { $0.count > $1.count }) { _ = umount2(target, Int32(MNT_DETACH)) }
        for pid in daemons { kill(pid, SIGTERM) }
        unlink(helper)
        // An automounter that had to be killed leaves its FIFO (named after the mount path).
        unlink("/var/run/autofs.fifo" + mountRoot.replacingOccurrences(of: "/", with: "-"))
    }

    deinit {
        process?.stop()
        detachEverything(daemons: [])
    }
}
