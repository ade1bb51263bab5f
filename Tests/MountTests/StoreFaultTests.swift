import Foundation
import ODRFSCore
import TestSupport
import Testing

/// Issue 23, item 5: faults of the store's disk. With failures injected into one daemon's
/// system calls (libfiu's POSIX preload, controlled with `fiu-ctrl`), an open of a file whose
/// pack is not local fails with a clear errno and a log line, the other mount of the same
/// store keeps working, no wrong byte is read, the open works again once the fault is gone,
/// and `odrfs store fsck` finds the store clean. A read-only remount of the store's
/// filesystem likewise.
@Suite("Store faults", .serialized, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct StoreFaultTests {
    static let preload = "/usr/lib/fiu/fiu_run_preload.so /usr/lib/fiu/fiu_posix_preload.so"

    static func requireLibfiu() throws {
        if access("/usr/bin/fiu-ctrl", X_OK) != 0 || access("/usr/lib/fiu/fiu_posix_preload.so", R_OK) != 0 {
            Issue.record("libfiu is not installed (mount-scripts/setup.sh installs fiu-utils)")
            throw CancellationError()
        }
    }

    /// The errno of opening and reading `path` whole (0 if it reads), on a thread of its own.
    static func errnoOfRead(_ path: String) async -> Int32 {
        await onDedicatedThread { readErrno(path) }
    }

    static func readErrno(_ path: String) -> Int32 {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count < 0 { return errno }
            if count == 0 { return 0 }
        }
    }

    /// Mounts the fixture's bundle twice on one store, the second under libfiu; runs `body`
    /// with a function that enables (true) or disables (false) failure points in that
    /// second daemon, with the given errno.
    static func withFaultyMount(_ fixture: MountFixture, store: String, cache: String? = nil,
                                _ body: (_ faulty: String, _ inject: ([String], Int32, Bool) async throws -> Void) async throws -> Void) async throws {
        try await fixture.buildTestBundle()
        let faulty = fixture.root + "/mnt-faulty"
        try FileManager.default.createDirectory(atPath: faulty, withIntermediateDirectories: true)
        try await fixture.mount(store: store)
        let environment = ["LD_PRELOAD": preload, "FIU_CTRL_FIFO": fixture.root + "/fiu", "FIU_ENABLE": ""]
        if let cache {
            try await fixture.mount(at: faulty, extra: ["--cache", cache], environment: environment, store: nil)
        } else {
            try await fixture.mount(at: faulty, environment: environment, store: store)
        }
        let pid = try #require(fixture.daemonPID(faulty))
        try await body(faulty) { points, code, enable in
            for point in points {
                let command = enable ? "enable name=\(point),failinfo=\(code)" : "disable name=\(point)"
                let result = try await Command.run("/usr/bin/fiu-ctrl", ["-f", fixture.root + "/fiu", "-c", command, "\(pid)"])
                try #require(result.status == 0, "fiu-ctrl: \(result.stderr)")
            }
        }
        #expect(try await fixture.unmount(faulty).status == 0)
        #expect(try await fixture.unmount().status == 0)
    }

    @Test("ENOSPC and EIO on write, EIO on fsync: the open fails with that errno, the other mount reads, the open recovers, the store stays clean", arguments: [
        // Downloads write at explicit offsets (pwrite); appends (write) are the index's.
        ("posix/io/rw/pwrite", ENOSPC, "levels/1/map.dat"),
        ("posix/io/rw/pwrite", EIO, "levels/2/map.dat"),
        ("posix/io/sync/fsync", EIO, "big.bin"),
    ])
    func injectedFailures(point: String, code: Int32, path: String) async throws {
        try Self.requireLibfiu()
        let fixture = try MountFixture()
        let store = fixture.root + "/store"
        try await Self.withFaultyMount(fixture, store: store) { faulty, inject in
            try await inject([point], code, true)
            #expect(await Self.errnoOfRead(faulty + "/" + path) == code, "the open did not fail with \(code)")
            // The other mount of the same store is unaffected.
            #expect(await readThroughMount(fixture.mountpoint + "/" + path) == Data(TestBundle.files[path]!))
            try await inject([point], code, false)
            #expect(await readThroughMount(faulty + "/" + path) == Data(TestBundle.files[path]!), "the open did not recover")
            let log = (try? String(contentsOfFile: try Self.logFile(store), encoding: .utf8)) ?? ""
            #expect(log.contains(String(cString: strerror(code))), "no log line says why")
        }
        let check = try await fixture.odrfs(["store", "fsck", "--store", store])
        #expect(check.status == 0, "\(check.output)")
    }

    @Test("EIO on rename (a private cache publishes by rename; a store by link): the open fails with EIO and recovers")
    func renameFailure() async throws {
        try Self.requireLibfiu()
        let fixture = try MountFixture()
        let store = fixture.root + "/store", cache = fixture.root + "/private"
        try await Self.withFaultyMount(fixture, store: store, cache: cache) { faulty, inject in
            try await inject(["posix/io/dir/rename"], EIO, true)
            #expect(await Self.errnoOfRead(faulty + "/big.bin") == EIO)
            #expect(await readThroughMount(fixture.mountpoint + "/big.bin") == Data(TestBundle.files["big.bin"]!))
            try await inject(["posix/io/dir/rename"], EIO, false)
            #expect(await readThroughMount(faulty + "/big.bin") == Data(TestBundle.files["big.bin"]!))
        }
    }

    @Test("the store's filesystem turned read-only under a running mount: remote opens fail with EROFS, local files read, other mounts read, recovery, fsck clean")
    func readOnlyStore() async throws {
        try Self.requireLibfiu()
        let fixture = try MountFixture()
        let store = fixture.root + "/store"
        // What ext4's errors=remount-ro leaves: every write, sync, create, rename and unlink
        // refused with EROFS. (A clean `mount -o remount,ro` is refused by the kernel, EBUSY,
        // while the store's index is open for writing: checked on a tmpfs below.)
        let points = ["posix/io/rw/write", "posix/io/rw/pwrite", "posix/io/sync/fsync", "posix/io/dir/rename", "posix/io/dir/unlink",
                      "posix/io/rw/ftruncate"]
        try await Self.withFaultyMount(fixture, store: store) { faulty, inject in
            #expect(await readThroughMount(faulty + "/levels/1/map.dat") == Data(TestBundle.files["levels/1/map.dat"]!))
            try await inject(points, EROFS, true)
            #expect(await Self.errnoOfRead(faulty + "/levels/2/map.dat") == EROFS)
            #expect(await readThroughMount(faulty + "/levels/1/map.dat") == Data(TestBundle.files["levels/1/map.dat"]!))
            #expect(await readThroughMount(fixture.mountpoint + "/levels/2/map.dat") == Data(TestBundle.files["levels/2/map.dat"]!))
            try await inject(points, EROFS, false)
            #expect(await readThroughMount(faulty + "/levels/2/map.dat") == Data(TestBundle.files["levels/2/map.dat"]!))
        }
        let check = try await fixture.odrfs(["store", "fsck", "--store", store])
        #expect(check.status == 0, "\(check.output)")
    }

    @Test("a clean read-only remount of the store's filesystem is refused while a mount uses it (the kernel's EBUSY), and the mount keeps working")
    func readOnlyRemountRefused() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let filesystem = fixture.root + "/storefs"
        try FileManager.default.createDirectory(atPath: filesystem, withIntermediateDirectories: true)
        let mounted = try await Command.run("/bin/mount", ["-t", "tmpfs", "-o", "size=64m", "tmpfs", filesystem])
        try #require(mounted.status == 0, "\(mounted.stderr)")
        defer { umount2(filesystem, Int32(MNT_DETACH)) }
        try await fixture.mount(store: filesystem + "/store")
        let remount = try await Command.run("/bin/mount", ["-o", "remount,ro", filesystem])
        #expect(remount.status != 0, "the kernel made the store read-only under a writer")
        #expect(await readThroughMount(fixture.mountpoint + "/levels/2/map.dat") == Data(TestBundle.files["levels/2/map.dat"]!))
        #expect(try await fixture.unmount().status == 0)
    }

    static func logFile(_ store: String) throws -> String {
        let bundles = try FileManager.default.contentsOfDirectory(atPath: store + "/bundles")
        return store + "/bundles/" + (try #require(bundles.first)) + "/odrfs.log"
    }
}
