import Foundation
import ODRFSCore
import TestSupport
import Testing

/// The cache under a real mount: budget and eviction order, retains under pressure,
/// persistence across remounts, and a bounded stress run.
@Suite("Mount cache", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountCacheTests {
    static let packBytes = 100_000

    /// Six levels of two files each (~100 KB per pack), Level1 with preservation 0.5.
    static func writeLevels(to root: String) throws {
        var spec = "tags:\n"
        for level in 1...6 {
            spec += "  Level\(level): [\"level\(level)/**\"]\n"
            let directory = root + "/level\(level)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for part in 0..<2 {
                let bytes = TestBundle.pseudoRandom(packBytes / 2 - 1_024, seed: UInt64(level * 10 + part))
                try Data(bytes).write(to: URL(fileURLWithPath: "\(directory)/part\(part).bin"))
            }
        }
        spec += "preservation: { Level6: 0.5 }\n"
        try Data("base".utf8).write(to: URL(fileURLWithPath: root + "/base.txt"))
        try spec.write(toFile: root + "/odr.yaml", atomically: true, encoding: .utf8)
    }

    static func expected(_ level: Int, part: Int) -> Data {
        Data(TestBundle.pseudoRandom(packBytes / 2 - 1_024, seed: UInt64(level * 10 + part)))
    }

    /// `compress` is passed to `odrfs build --compress` (default: the builder's, zstd).
    func makeFixture(compress: String? = nil) async throws -> MountFixture {
        let fixture = try MountFixture()
        try Self.writeLevels(to: fixture.source)
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist] + (compress.map { ["--compress", $0] } ?? []))
        try #require(build.status == 0, "\(build.stderr)")
        return fixture
    }

    func cachedBytes(_ fixture: MountFixture) throws -> Int64 {
        let text = try String(contentsOfFile: fixture.mountpoint + "/.odrfs/status", encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("cache:") })
        return try #require(Int64(line.split(separator: " ")[1]))
    }

    func read(_ fixture: MountFixture, level: Int) async throws {
        for part in 0..<2 {
            let cat = try await Command.run("/bin/cat", [fixture.mountpoint + "/level\(level)/part\(part).bin"])
            #expect(cat.status == 0, "\(cat.stderr)")
            #expect(cat.stdout == Self.expected(level, part: part), "level\(level)/part\(part) differs")
        }
    }

    @Test("a three-pack budget: reading six packs stays under budget and evicts oldest first, priority kept longer")
    func budgetEvictionOrder() async throws {
        let fixture = try await makeFixture()
        let manifest = try fixture.manifest
        let packSize = manifest.packs[1].bytes.value
        let budget = 3 * packSize + manifest.packs[0].bytes.value
        try await fixture.mount(extra: ["--cache-size", String(budget)])
        for level in [6, 1, 2, 3, 4, 5] {
            try await read(fixture, level: level)
            #expect(await eventually { ((try? cachedBytes(fixture)) ?? .max) <= budget }, "over budget after Level\(level)")
        }
        // Level6 was read first but has preservation 0.5: priority-0 packs went before it,
        // oldest first, so the most recent ones and Level6 remain.
        let states = try fixture.status()
        #expect(states["Level6"]?[2] == "downloaded", "\(states)")
        #expect(states["Level5"]?[2] == "downloaded")
        #expect(states["Level1"]?[2] == "not-downloaded")
        #expect(states["Level2"]?[2] == "not-downloaded")
        #expect(fixture.log.contains("evicted pack"))
        let cachedFiles = fixture.cachedPackFiles.count
        let local = states.values.filter { $0[2] == "downloaded" }.count
        #expect(cachedFiles == local, "cache files and status disagree")
    }

    @Test("a pack held open survives any pressure, its fd keeps reading the right bytes, and it is purged once closed")
    func openPackSurvivesPressure() async throws {
        let fixture = try await makeFixture()
        let manifest = try fixture.manifest
        let budget = 2 * manifest.packs[1].bytes.value + manifest.packs[0].bytes.value
        try await fixture.mount(extra: ["--cache-size", String(budget)])
        let held = try #require(FileHandle(forReadingAtPath: fixture.mountpoint + "/level1/part0.bin"))
        for level in 2...6 { try await read(fixture, level: level) }
        #expect(try fixture.state(of: "Level1") == "in-use")
        #expect(try held.readToEnd() == Self.expected(1, part: 0))
        try held.close()
        #expect(await eventually { (try? fixture.retains(of: "Level1")) == 0 })
        // Closed, Level1 is the least recently used pack: the next fetch purges it.
        try await read(fixture, level: 2)
        #expect(try fixture.state(of: "Level1") == "not-downloaded", "Level1 was not purged after it was closed")
        #expect(await eventually { ((try? cachedBytes(fixture)) ?? .max) <= budget })
    }

    @Test("unmount and remount with the same cache: packs, last-access times and priorities are kept, nothing is refetched")
    func remountKeepsCache() async throws {
        let fixture = try await makeFixture()
        try await fixture.mount()
        try await read(fixture, level: 2)
        try await read(fixture, level: 6)
        let before = try fixture.status()
        #expect(try await fixture.unmount().status == 0)
        try await fixture.mount()
        let after = try fixture.status()
        for pack in ["Level2", "Level6"] {
            #expect(after[pack]?[2] == "downloaded", "\(pack) not kept")
            #expect(after[pack]?[7] == before[pack]?[7], "\(pack) last access changed: \(before[pack] ?? []) → \(after[pack] ?? [])")
        }
        #expect(after["Level6"]?[6] == "0.50")
        try await read(fixture, level: 2)
        #expect(try fixture.fetches(of: "Level2") == 0, "a cached pack was fetched again after remount")
        #expect(try fixture.fetches(of: "Level3") == 0)
    }

    @Test("stress: concurrent readers over six packs with a two-pack budget read exact bytes and end with no retains")
    func stress() async throws {
        let fixture = try await makeFixture()
        let manifest = try fixture.manifest
        let budget = 2 * manifest.packs[1].bytes.value + manifest.packs[0].bytes.value
        try await fixture.mount(extra: ["--cache-size", String(budget)])
        // Each reader loops for a few seconds over the levels and compares bytes with cmp.
        var script = "end=$(($(date +%s) + 4)); i=$0; while [ $(date +%s) -lt $end ]; do l=$((i % 6 + 1)); p=$((i % 2)); "
        script += "cmp -s \"$1/level$l/part$p.bin\" \"$2/level$l/part$p.bin\" || { echo \"mismatch level$l/part$p\"; exit 1; }; i=$((i + 1)); done"
        let readers = try (0..<12).map { index in
            try ChildProcess("/bin/sh", ["-c", script, String(index), fixture.mountpoint, fixture.source])
        }
        let finished = await eventually(timeout: .seconds(60)) { readers.allSatisfy { !$0.isRunning } }
        readers.forEach { $0.stop() }
        #expect(finished)
        for reader in readers { #expect(reader.terminationStatus == 0, "\(fixture.log.split(separator: "\n").filter { $0.contains("error") }.suffix(5))") }
        #expect(await eventually { ((try? fixture.status()) ?? [:]).values.allSatisfy { $0[4] == "0" } }, "retains left behind")
        #expect(await eventually { ((try? cachedBytes(fixture)) ?? .max) <= budget })
    }

    @Test("kill -9 in the middle of a slow fetch: the stale mount is named, a remount on the same cache reads correctly, no partial pack is served")
    func killDuringSlowFetch() async throws {
        // Plain tar: the partial download must be on disk when the daemon dies, and a
        // compressed ~100 KB pack is one frame, written only once it is whole.
        let fixture = try await makeFixture(compress: "none")
        try await fixture.mount()
        let slow = try SlowPack(fixture, pack: "Level3", stallAfter: 60_000)
        let reader = try ChildProcess("/bin/cat", [fixture.mountpoint + "/level3/part0.bin"])
        defer { reader.stop() }
        let partial = { () -> Int in
            let names = (try? FileManager.default.contentsOfDirectory(atPath: fixture.cache + "/tmp")) ?? []
            return names.compactMap { try? FileManager.default.attributesOfItem(atPath: fixture.cache + "/tmp/" + $0)[.size] as? Int }.max() ?? 0
        }
        #expect(await eventually { partial() >= 60_000 }, "the download never started")
        let pid = try #require(fixture.daemonPID())
        kill(pid, SIGKILL)
        #expect(await eventually { kill(pid, 0) != 0 })
        #expect(await reader.wait(timeout: .seconds(10)), "a reader stayed blocked on the dead mount")
        #expect(reader.terminationStatus != 0)

        // The dead mount is stale; mounting over it says what to do.
        let stale = try await fixture.odrfs(["mount", fixture.dist, fixture.mountpoint, "--cache", fixture.cache])
        #expect(stale.status == 1)
        #expect(stale.stderr.contains("fusermount3 -uz"), "\(stale.stderr)")
        #expect(try await Command.run("/usr/bin/fusermount3", ["-u", "-z", fixture.mountpoint]).status == 0)

        slow.restore()
        try await fixture.mount()
        let tmp = try FileManager.default.contentsOfDirectory(atPath: fixture.cache + "/tmp")
        #expect(tmp.isEmpty, "partial download survived the restart: \(tmp)")
        #expect(try fixture.state(of: "Level3") == "not-downloaded", "a partial pack was taken for a cached one")
        try await read(fixture, level: 3)
        #expect(try fixture.fetches(of: "Level3") == 1)
    }

    @Test("Ctrl-C on a reader waiting for a slow fetch abandons only that reader; the fetch completes for the others")
    func interruptedReaderLeavesFetchRunning() async throws {
        let fixture = try await makeFixture()
        try await fixture.mount()
        let slow = try SlowPack(fixture, pack: "Level4", stallAfter: 30_000)
        let output = fixture.root + "/patient.out"
        let patient = try ChildProcess("/bin/cat", [fixture.mountpoint + "/level4/part1.bin"], stdout: output)
        defer { patient.stop() }
        let impatient = try ChildProcess("/bin/cat", [fixture.mountpoint + "/level4/part0.bin"])
        defer { impatient.stop() }
        #expect(await eventually { (try? fixture.state(of: "Level4"))?.hasPrefix("downloading") == true })
        impatient.signal(SIGINT)
        #expect(await impatient.wait(timeout: .seconds(5)), "Ctrl-C did not free the waiting reader")
        #expect(patient.isRunning, "the other reader gave up too")
        #expect(try fixture.state(of: "Level4")?.hasPrefix("downloading") == true, "the fetch was cancelled with the interrupted reader")
        slow.resume()
        #expect(await patient.wait(timeout: .seconds(30)))
        #expect(patient.terminationStatus == 0)
        #expect(FileManager.default.contents(atPath: output) == Self.expected(4, part: 1))
        #expect(try fixture.fetches(of: "Level4") == 1)
    }

    @Test("prefetch tags arrive after the mount is ready, without any open, in the given order")
    func prefetchInOrder() async throws {
        let fixture = try MountFixture()
        try Self.writeLevels(to: fixture.source)
        var spec = try String(contentsOfFile: fixture.source + "/odr.yaml", encoding: .utf8)
        spec += "initial-install: [Level1]\nprefetch: [Level5, Level2]\n"
        try spec.write(toFile: fixture.source + "/odr.yaml", atomically: true, encoding: .utf8)
        #expect(try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist]).status == 0)
        try await fixture.mount()
        #expect(try fixture.state(of: "Level1") == "downloaded", "initial-install is local when mount returns")
        #expect(await eventually { (try? fixture.state(of: "Level2")) == "downloaded" }, "prefetch did not complete")
        #expect(try fixture.state(of: "Level5") == "downloaded")
        #expect(try fixture.state(of: "Level3") == "not-downloaded", "only prefetch tags are fetched")
        let fetched = fixture.log.split(separator: "\n").filter { $0.contains("fetched pack") }
        let level5 = try #require(fetched.firstIndex { $0.contains("pack.id=Level5") })
        let level2 = try #require(fetched.firstIndex { $0.contains("pack.id=Level2") })
        #expect(level5 < level2, "prefetch order not kept")
    }

    @Test("progressive open: the first bytes of a large file are readable while its pack streams in; a corrupt tail fails with EIO, never with bad bytes")
    func progressiveOpen() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        // 1.5 MiB (one whole verified chunk), then a stall until the test resumes it.
        let slow = try SlowPack(fixture, pack: "Big", stallAfter: 1_572_864)
        let expected = Data(TestBundle.files["big.bin"]!)

        let head = try await Command.run("/usr/bin/head", ["-c", "4096", fixture.mountpoint + "/big.bin"], timeout: .seconds(20))
        #expect(head.status == 0, "\(head.stderr)")
        #expect(head.stdout == expected.prefix(4096))
        #expect(try fixture.state(of: "Big")?.hasPrefix("downloading") == true, "the first bytes were served only after the whole pack")

        let output = fixture.root + "/big.out"
        let whole = try ChildProcess("/bin/cat", [fixture.mountpoint + "/big.bin"], stdout: output)
        defer { whole.stop() }
        await pause(.milliseconds(300))
        #expect(whole.isRunning, "a read past the verified prefix did not wait")
        slow.resume()
        #expect(await whole.wait(timeout: .seconds(30)))
        #expect(whole.terminationStatus == 0)
        #expect(FileManager.default.contents(atPath: output) == expected)
        // The read may end before the pack is published: its last chunks are released as they verify.
        #expect(await eventually(timeout: .seconds(10)) { (try? fixture.state(of: "Big")) == "downloaded" })

        // Again with a corrupt third chunk, after a purge: a prefix read works, a full
        // read fails with EIO and what it did get is a correct prefix.
        #expect(try await fixture.odrfs(["purge", fixture.mountpoint, "Big"]).status == 0)
        slow.restore()
        var corrupt = try Data(contentsOf: URL(fileURLWithPath: slow.path))
        corrupt[2_500_000] ^= 0xFF
        try corrupt.write(to: URL(fileURLWithPath: slow.path))
        // The kernel may keep big.bin's pages from the first read (keep_cache): drop them
        // so this read really goes to the new download.
        try "1".write(toFile: "/proc/sys/vm/drop_caches", atomically: false, encoding: .utf8)
        let prefix = try await Command.run("/usr/bin/head", ["-c", "4096", fixture.mountpoint + "/big.bin"])
        #expect(prefix.stdout == expected.prefix(4096))
        let failed = try await Command.run("/bin/cat", [fixture.mountpoint + "/big.bin"])
        #expect(failed.status != 0)
        #expect(failed.stderr.contains("Input/output error"), "\(failed.stderr)")
        #expect(failed.stdout.count < expected.count && failed.stdout == expected.prefix(failed.stdout.count), "bytes past the verified prefix leaked")
    }
}
