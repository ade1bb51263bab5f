import Foundation
import ODRFSControl
import ODRFSCore
import ODRFSMount
import Testing

/// One test's world: a source tree, its dist dir, a cache and a mountpoint, all in a
/// fresh temp dir; the mount is always torn down (unmounted lazily, daemon killed by
/// PID) when the fixture goes away, so a failing test cannot leave a mount behind.
final class MountFixture {
    let root: String
    var source: String { root + "/source" }
    var dist: String { root + "/dist" }
    var cache: String { root + "/cache" }
    var mountpoint: String { root + "/mnt" }
    private var mountedAt: [String] = []

    /// The built `odrfs` executable, next to this test bundle.
    static var binary: String {
        if let explicit = ProcessInfo.processInfo.environment["ODRFS_BINARY"] { return explicit }
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return ((executable as NSString).deletingLastPathComponent as NSString).appendingPathComponent("odrfs")
    }

    init() throws {
        if let problem = FUSEAvailability.problem {
            Issue.record("FUSE is not usable: \(problem)")
            throw CancellationError()
        }
        var template = Array("/tmp/odrfs-mount-test.XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw CocoaError(.fileWriteUnknown)
        }
        root = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
    }

    /// Writes the standard test bundle and builds it into `dist`.
    func buildTestBundle() async throws {
        try TestBundle.write(to: source)
        let result = try await odrfs(["build", source, "-o", dist])
        #expect(result.status == 0, "odrfs build failed: \(result.stderr)")
    }

    /// Runs the `odrfs` binary.
    func odrfs(_ arguments: [String], timeout: Duration = .seconds(60)) async throws -> CommandResult {
        try await Command.run(Self.binary, arguments, timeout: timeout)
    }

    /// Mounts `dist` (or another origin, e.g. a URL) daemonized, and expects success;
    /// `environment` adds variables (e.g. `HTTP_PROXY`) for the mount command only.
    /// `store`: mount through that machine-wide store instead of the fixture's private cache.
    func mount(at mountpoint: String? = nil, origin: String? = nil, extra: [String] = [],
               environment: [String: String] = [:], store: String? = nil) async throws {
        let target = mountpoint ?? self.mountpoint
        let arguments = ["mount", origin ?? dist, target] + (store.map { ["--store", $0] } ?? ["--cache", cache]) + extra
        let result = environment.isEmpty ? try await odrfs(arguments)
            : try await Command.run("/usr/bin/env", environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                                        + [Self.binary] + arguments)
        try #require(result.status == 0, "odrfs mount failed: \(result.stderr)\n\(log)")
        mountedAt.append(target)
    }

    /// Starts `odrfs mount` of `origin` at the fixture's mountpoint (private cache, or
    /// `store`) without waiting for it; the mount is unmounted at teardown like the others.
    /// Await the task for the command's result.
    func startMount(origin: String, store: String? = nil) -> Task<CommandResult, any Error> {
        let arguments = ["mount", origin, mountpoint] + (store.map { ["--store", $0] } ?? ["--cache", cache])
        mountedAt.append(mountpoint)
        let binary = Self.binary
        return Task { try await Command.run(binary, arguments, timeout: .seconds(60)) }
    }

    /// A mount made outside ``mount(at:origin:extra:environment:store:)`` (by a shell, say),
    /// unmounted at teardown like the others.
    func adopt(_ mountpoint: String) {
        mountedAt.append(mountpoint)
    }

    func unmount(_ mountpoint: String? = nil) async throws -> CommandResult {
        let target = mountpoint ?? self.mountpoint
        let result = try await odrfs(["unmount", target])
        if result.status == 0 { mountedAt.removeAll { $0 == target } }
        return result
    }

    /// The mount daemon's PID, from its runtime directory.
    func daemonPID(_ mountpoint: String? = nil) -> pid_t? {
        let path = Self.resolvedWithoutEnteringMount(mountpoint ?? self.mountpoint)
        // A mount made with allow_other keeps its runtime files with the shared ones.
        return RuntimeDirectory(mountpoint: path).daemonPID() ?? RuntimeDirectory(sharedMountpoint: path).daemonPID()
    }

    var manifest: Manifest {
        get throws { try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: dist + "/manifest.json"))) }
    }

    /// Pack files in the cache, by content address.
    var cachedPackFiles: Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: cache + "/packs")) ?? [])
    }

    /// The pack's file in the cache: always the uncompressed `<sha256>.tar`.
    func cacheFileName(of id: String) throws -> String {
        let pack = try #require(try manifest.packs.first { $0.id.rawValue == id })
        return pack.sha256.hex + ".tar"
    }

    /// Waits (up to 10 s) until the pack's verified copy is published at `directory`
    /// (`packs/` of the cache or a store): reading a file through the mount no longer means
    /// its whole pack is in, since a large file's last chunks are released as they verify.
    func waitUntilCached(_ id: String, in directory: String? = nil) async throws -> String {
        let path = (directory ?? cache + "/packs") + "/" + (try cacheFileName(of: id))
        try #require(await eventually(timeout: .seconds(10)) { access(path, F_OK) == 0 }, "pack \(id) never reached \(path)")
        return path
    }

    /// The pack's file in the dist dir: `<sha256>.tar.zst` when compressed, else as in the cache.
    func distFileName(of id: String) throws -> String {
        let pack = try #require(try manifest.packs.first { $0.id.rawValue == id })
        return (pack.file as NSString).lastPathComponent
    }

    /// The pack table of `.odrfs/status`, rows keyed by pack id (columns split on whitespace).
    func status(at mountpoint: String? = nil) throws -> [String: [String]] {
        let text = try String(contentsOfFile: (mountpoint ?? self.mountpoint) + "/.odrfs/status", encoding: .utf8)
        var rows: [String: [String]] = [:]
        var inPackTable = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("PACK ") {
                inPackTable = true
                continue
            }
            guard inPackTable, !["total:", "cache:", "origin:", "mirror:"].contains(where: { line.hasPrefix($0) }) else { continue }
            let columns = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            if let id = columns.first { rows[id] = columns }
        }
        return rows
    }

    /// A pack's state column ("not-downloaded", "downloaded", "in-use", "downloading(…)").
    func state(of pack: String) throws -> String? { try status()[pack]?[2] }
    func retains(of pack: String) throws -> Int? { try status()[pack].flatMap { Int($0[4]) } }
    func fetches(of pack: String, at mountpoint: String? = nil) throws -> Int? { try status(at: mountpoint)[pack].flatMap { Int($0[5]) } }

    var log: String {
        (try? String(contentsOfFile: cache + "/odrfs.log", encoding: .utf8)) ?? "(no log)"
    }

    // A deinit cannot `await`, and it runs on a thread of the cooperative pool, so it
    // must not wait there: sampling a parallel run showed both pool threads asleep in
    // this cleanup (daemon exit, rm -rf) while every async test stalled. So the part the
    // next tests depend on is immediate — the mount is detached with umount2(MNT_DETACH),
    // a syscall that does not wait for the filesystem, and the daemon gets SIGTERM — and
    // the waiting (SIGKILL after 5 s, rm -rf) is done by a dedicated thread. Only if
    // umount2 is refused (not root) does it fall back to a bounded, blocking fusermount3.
    deinit {
        var daemons: [pid_t] = []
        for target in mountedAt {
            let pid = daemonPID(target)
            if umount2(target, Int32(MNT_DETACH)) != 0 {
                _ = try? Command.runBlocking("/usr/bin/fusermount3", ["-u", "-z", target], timeout: .seconds(10))
            }
            if let pid {
                kill(pid, SIGTERM)
                daemons.append(pid)
            }
        }
        let root = root
        let signalled = daemons
        let thread = Thread {
            let deadline = ContinuousClock.now + .seconds(5)
            while signalled.contains(where: { kill($0, 0) == 0 }), ContinuousClock.now < deadline { usleep(10_000) }
            for pid in signalled where kill(pid, 0) == 0 { kill(pid, SIGKILL) }
            try? FileManager.default.removeItem(atPath: root)
        }
        thread.name = "mount-fixture-cleanup"
        thread.start()
    }

    /// The absolute, symlink-free form of a mountpoint, resolving only its parent: a
    /// `realpath` of the mountpoint itself would ask the (perhaps hung) daemon.
    static func resolvedWithoutEnteringMount(_ path: String) -> String {
        let parent = (path as NSString).deletingLastPathComponent
        guard let resolved = realpath(parent, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved) + "/" + (path as NSString).lastPathComponent
    }
}
