import Foundation
import ODRFSCore
import Testing

/// What users must never see go wrong: writes, corrupt packs, failed mounts, busy unmounts.
@Suite("Mount failures", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountFailureTests {
    @Test("every mutating operation fails with EROFS")
    func readOnly() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        let file = fixture.mountpoint + "/README.txt"
        func errnoOf(_ body: () -> Int32) -> Int32 {
            errno = 0
            return body() < 0 ? errno : 0
        }
        #expect(errnoOf { open(file, O_WRONLY) } == EROFS)
        #expect(errnoOf { open(file, O_RDWR) } == EROFS)
        #expect(errnoOf { open(fixture.mountpoint + "/new.txt", O_WRONLY | O_CREAT, 0o644) } == EROFS)
        #expect(errnoOf { mkdir(fixture.mountpoint + "/newdir", 0o755) } == EROFS)
        #expect(errnoOf { unlink(file) } == EROFS)
        #expect(errnoOf { rmdir(fixture.mountpoint + "/emptydir") } == EROFS)
        #expect(errnoOf { rename(file, fixture.mountpoint + "/moved.txt") } == EROFS)
        #expect(errnoOf { symlink("x", fixture.mountpoint + "/link2") } == EROFS)
        #expect(errnoOf { chmod(file, 0o777) } == EROFS)
        #expect(errnoOf { truncate(file, 0) } == EROFS)
        let setfattr = try await Command.run("/usr/bin/setfattr", ["-n", "user.x", "-v", "1", file])
        #expect(setfattr.status != 0 && setfattr.stderr.contains("Read-only file system"), "\(setfattr.stderr)")
        let touch = try await Command.run("/usr/bin/touch", [fixture.mountpoint + "/levels/1/map.dat"])
        #expect(touch.status != 0 && touch.stderr.contains("Read-only file system"), "\(touch.stderr)")
        #expect(try fixture.fetches(of: "Level1") == 0, "a refused write must not fetch")
    }

    @Test("a corrupt or truncated pack on the origin fails with EIO, never leaks bad bytes, and is retried")
    func corruptPack() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        let packPath = fixture.dist + "/packs/" + (try fixture.distFileName(of: "Level2"))
        let good = try Data(contentsOf: URL(fileURLWithPath: packPath))
        var flipped = good
        flipped[flipped.count / 3] ^= 0x01
        try flipped.write(to: URL(fileURLWithPath: packPath))

        let file = fixture.mountpoint + "/levels/2/map.dat"
        let corrupt = try await Command.run("/bin/cat", [file])
        #expect(corrupt.status != 0)
        #expect(corrupt.stderr.contains("Input/output error"), "\(corrupt.stderr)")
        #expect(corrupt.stdout.isEmpty, "bytes of an unverified pack were served")
        #expect(try fixture.state(of: "Level2") == "not-downloaded")
        #expect(!fixture.cachedPackFiles.contains(try fixture.cacheFileName(of: "Level2")))
        #expect(fixture.log.contains("pack fetch failed"))

        try good.prefix(good.count - 700).write(to: URL(fileURLWithPath: packPath))
        let truncated = try await Command.run("/bin/cat", [file])
        #expect(truncated.status != 0 && truncated.stdout.isEmpty)
        #expect(truncated.stderr.contains("Input/output error"))

        try good.write(to: URL(fileURLWithPath: packPath))
        let repaired = try await Command.run("/bin/cat", [file])
        #expect(repaired.status == 0, "\(repaired.stderr)")
        #expect(repaired.stdout == Data(TestBundle.files["levels/2/map.dat"]!))
        let tmp = try FileManager.default.contentsOfDirectory(atPath: fixture.cache + "/tmp")
        #expect(tmp.isEmpty, "partial downloads left behind: \(tmp)")
    }

    @Test("odrfs mount fails non-zero with a clear message")
    func mountErrors() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()

        let missing = try await fixture.odrfs(["mount", fixture.dist, fixture.root + "/nowhere", "--cache", fixture.cache])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("mountpoint") && missing.stderr.contains("nowhere"), "\(missing.stderr)")

        let noOrigin = try await fixture.odrfs(["mount", fixture.root + "/no-dist", fixture.mountpoint, "--cache", fixture.cache])
        #expect(noOrigin.status == 1)
        #expect(noOrigin.stderr.contains("no-dist"), "\(noOrigin.stderr)")

        let badDist = fixture.root + "/bad-dist"
        try FileManager.default.createDirectory(atPath: badDist, withIntermediateDirectories: true)
        try Data("{ not json".utf8).write(to: URL(fileURLWithPath: badDist + "/manifest.json"))
        let badManifest = try await fixture.odrfs(["mount", badDist, fixture.mountpoint, "--cache", fixture.root + "/cache2"])
        #expect(badManifest.status == 1)
        #expect(badManifest.stderr.contains("manifest"), "\(badManifest.stderr)")
        #expect(!MountFixture.isMounted(fixture.mountpoint))

        try await fixture.mount()
        let busy = try await fixture.odrfs(["mount", fixture.dist, fixture.mountpoint, "--cache", fixture.root + "/cache3"])
        #expect(busy.status == 1)
        #expect(busy.stderr.contains("busy"), "\(busy.stderr)")

        let second = fixture.root + "/mnt2"
        try FileManager.default.createDirectory(atPath: second, withIntermediateDirectories: true)
        let sharedCache = try await fixture.odrfs(["mount", fixture.dist, second, "--cache", fixture.cache])
        #expect(sharedCache.status == 1)
        #expect(sharedCache.stderr.contains("already in use"), "\(sharedCache.stderr)")
        #expect(!MountFixture.isMounted(second))
    }

    @Test("unmount: busy gives a clear message; SIGTERM and odrfs unmount end the daemon cleanly")
    func unmountAndSignals() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        let pid = try #require(fixture.daemonPID())
        let handle = try #require(FileHandle(forReadingAtPath: fixture.mountpoint + "/levels/1/map.dat"))
        let busy = try await fixture.unmount()
        #expect(busy.status == 1)
        #expect(busy.stderr.contains("busy"), "\(busy.stderr)")
        #expect(MountFixture.isMounted(fixture.mountpoint))
        try handle.close()
        #expect(await eventually { ((try? fixture.retains(of: "Level1")) ?? -1) == 0 })
        let clean = try await fixture.unmount()
        #expect(clean.status == 0, "\(clean.stderr)")
        #expect(!MountFixture.isMounted(fixture.mountpoint))
        #expect(kill(pid, 0) != 0, "daemon still running after unmount")

        try await fixture.mount()
        let second = try #require(fixture.daemonPID())
        kill(second, SIGTERM)
        #expect(await eventually { kill(second, 0) != 0 }, "daemon ignored SIGTERM")
        #expect(!MountFixture.isMounted(fixture.mountpoint), "SIGTERM left the mount behind")
        // The cache survived: a remount needs no refetch of Level1.
        try await fixture.mount()
        #expect(try fixture.state(of: "Level1") == "downloaded")
    }

    @Test("tar and cp see the whole bundle")
    func realTools() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        let copy = fixture.root + "/copy"
        let cp = try await Command.run("/bin/cp", ["-a", fixture.mountpoint + "/.", copy])
        #expect(cp.status == 0, "\(cp.stderr)")
        let diff = try await Command.run("/usr/bin/diff", ["-r", "--no-dereference", "-x", "odr.yaml", "-x", ".odrfs", fixture.source, copy])
        #expect(diff.status == 0, "\(diff.output)")
        let tar = try await Command.run("/bin/sh", ["-c", "tar cf - -C \"$0\" --exclude ./.odrfs . | tar tf - | sort", fixture.mountpoint])
        #expect(tar.status == 0, "\(tar.stderr)")
        #expect(tar.output.contains("./levels/2/ünïcödé name.txt"))
        #expect(tar.output.contains("./emptydir/"))
    }
}

extension MountFixture {
    static func isMounted(_ path: String) -> Bool {
        let resolved = realpath(path, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? path
        return MountTable.current().entry(at: resolved) != nil
    }

    /// This fixture's entry in the mount table, looked for (bounded) until it shows: a
    /// read of the table while parallel tests mount and unmount has missed it.
    func mountTableEntry(timeout: Duration = .seconds(5)) async -> MountTable.Entry? {
        var entry: MountTable.Entry?
        _ = await eventually(timeout: timeout) {
            entry = MountTable.current().entry(at: self.mountpoint)
            return entry != nil
        }
        return entry
    }
}
