import Foundation
import ODRFSClient
import ODRFSCore
import TestSupport
import Testing

/// `odrfs update` against real mounts: a new revision of the dist dir reaches a running
/// mount atomically, old handles keep their bytes, and only what changed is fetched.
@Suite("Live bundle updates", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountUpdateTests {
    static let changedMap = TestBundle.pseudoRandom(30_000, seed: 99)
    static let newFile = Array("new in revision 2\n".utf8)

    /// Revision 2 of the test bundle: levels/3/map.dat (an initial-install file) changes,
    /// levels/3/new.txt appears, config/settings.json disappears; everything else stays.
    static func buildRevision2(_ fixture: MountFixture) async throws {
        try Data(changedMap).write(to: URL(fileURLWithPath: fixture.source + "/levels/3/map.dat"))
        try Data(newFile).write(to: URL(fileURLWithPath: fixture.source + "/levels/3/new.txt"))
        try FileManager.default.removeItem(atPath: fixture.source + "/config/settings.json")
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(build.status == 0, "\(build.stderr)")
        #expect(try fixture.manifest.revision == 2)
    }

    static func inode(_ path: String) -> UInt64? {
        var info = stat()
        return stat(path, &info) == 0 ? UInt64(info.st_ino) : nil
    }

    static func json(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(String(decoding: data, as: UTF8.self))")
    }

    @Test("update: a changed file shows new content, an old handle reads the old bytes to the end, files appear and disappear")
    func switchKeepsOldHandles() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        let mnt = fixture.mountpoint
        let readmeInode = try #require(Self.inode(mnt + "/README.txt"))
        let old = try #require(TestBundle.files["levels/3/map.dat"])
        let handle = try #require(FileHandle(forReadingAtPath: mnt + "/levels/3/map.dat"))
        defer { try? handle.close() }
        #expect(try handle.read(upToCount: 100) == Data(old.prefix(100)))
        #expect(FileManager.default.fileExists(atPath: mnt + "/config/settings.json"))
        let before = try await fixture.odrfs(["status", mnt, "--json"])
        let beforeStatus = try Self.json(before.stdout)
        #expect(beforeStatus["revision"] as? Int == 1)
        #expect(beforeStatus.keys.contains("available_revision") && beforeStatus["available_revision"] is NSNull)
        #expect(beforeStatus["last_update_check"] is NSNull)

        try await Self.buildRevision2(fixture)
        let check = try await fixture.odrfs(["update", mnt, "--check", "--json"])
        try #require(check.status == 0, "\(check.stderr)\n\(fixture.log)")
        let report = try Self.json(check.stdout)
        #expect(report["mounted_revision"] as? Int == 1)
        #expect(report["available_revision"] as? Int == 2)
        let changed = Set(try #require(report["changed_packs"] as? [String]))
        #expect(changed == ["base", "Level3"], "\(changed)")
        #expect(report["switched"] == nil)
        // Nothing switched yet.
        #expect(try Data(contentsOf: URL(fileURLWithPath: mnt + "/levels/3/map.dat")) == Data(old))

        let update = try await fixture.odrfs(["update", mnt, "--json"])
        try #require(update.status == 0, "\(update.stderr)\n\(fixture.log)")
        let done = try Self.json(update.stdout)
        #expect(done["switched"] as? Bool == true)
        #expect(done["available_revision"] as? Int == 2)
        // The changed Level3 pack keeps the old one's last access (it was opened above).
        let lastAccess = try fixture.status()["Level3"]?[7]
        #expect(lastAccess != nil && lastAccess != "-", "\(lastAccess ?? "no row")")

        #expect(try Data(contentsOf: URL(fileURLWithPath: mnt + "/levels/3/map.dat")) == Data(Self.changedMap))
        #expect(try Data(contentsOf: URL(fileURLWithPath: mnt + "/levels/3/new.txt")) == Data(Self.newFile))
        #expect(!FileManager.default.fileExists(atPath: mnt + "/config/settings.json"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: mnt + "/levels/3").sorted() == ["map.dat", "new.txt"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: mnt + "/config") == [])
        // The handle opened before the switch reads the old revision's bytes to the end.
        #expect(try handle.readToEnd() == Data(old.dropFirst(100)))
        #expect(Self.inode(mnt + "/README.txt") == readmeInode, "an unchanged file changed its inode number")
        #expect(try Data(contentsOf: URL(fileURLWithPath: mnt + "/levels/1/map.dat")) == Data(TestBundle.files["levels/1/map.dat"]!))

        let after = try Self.json(try await fixture.odrfs(["status", mnt, "--json"]).stdout)
        #expect(after["revision"] as? Int == 2)
        #expect(after["available_revision"] as? Int == 2)
        #expect(after["last_update_check"] is String)
        let statusFile = try String(contentsOfFile: mnt + "/.odrfs/status", encoding: .utf8)
        #expect(statusFile.contains("revision: 2, available 2"), "\(statusFile)")

        // A second update on top of the first: renumbered inodes renumbered again.
        let newInode = try #require(Self.inode(mnt + "/levels/3/new.txt"))
        let revision3 = TestBundle.pseudoRandom(30_000, seed: 100)
        try Data(revision3).write(to: URL(fileURLWithPath: fixture.source + "/levels/3/map.dat"))
        #expect(try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist]).status == 0)
        let again = try await fixture.odrfs(["update", mnt])
        try #require(again.status == 0, "\(again.stderr)\n\(fixture.log)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: mnt + "/levels/3/map.dat")) == Data(revision3))
        #expect(Self.inode(mnt + "/README.txt") == readmeInode)
        #expect(Self.inode(mnt + "/levels/3/new.txt") == newInode)
        #expect(try Data(contentsOf: URL(fileURLWithPath: mnt + "/levels/3/new.txt")) == Data(Self.newFile))
    }

    @Test("update over HTTP: --check fetches no pack; requireLatestVersion updates first, fetching only changed packs; a rollback is refused")
    func checkFetchesNothingAndRollbackIsRefused() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let revision1 = fixture.root + "/dist-r1"
        try FileManager.default.copyItem(atPath: fixture.dist, toPath: revision1)
        let origin = try await OriginKind.odrfsServe.start(serving: fixture.dist, in: fixture.root + "/origin")
        try await fixture.mount(origin: origin.url)
        let mounted = origin.packRequests

        try await Self.buildRevision2(fixture)
        let check = try await fixture.odrfs(["update", fixture.mountpoint, "--check"])
        #expect(check.status == 0, "\(check.stderr)")
        let text = String(decoding: check.stdout, as: UTF8.self)
        #expect(text.contains("available 2"), "\(text)")
        #expect(origin.packRequests == mounted, "--check fetched a pack")
        let report = try await BundleResourceRequest.checkForUpdates(mountpoint: fixture.mountpoint)
        #expect(report.mountedRevision == 1 && report.availableRevision == 2 && report.isUpdateAvailable)

        // A Swift program asking for the latest version updates the mount before it begins.
        let request = BundleResourceRequest(tags: ["Level3"], mountpoint: fixture.mountpoint)
        request.requireLatestVersion = true
        try await request.beginAccessingResources()
        #expect(try Self.json(try await fixture.odrfs(["status", fixture.mountpoint, "--json"]).stdout)["revision"] as? Int == 2)
        request.endAccessingResources()
        let fetched = origin.packRequests.dropFirst(mounted.count)
        let manifest = try fixture.manifest
        let changedFiles = Set(["base", "Level3"].compactMap { id in manifest.packs.first { $0.id.rawValue == id }?.file })
        #expect(!fetched.isEmpty && fetched.allSatisfy { request in changedFiles.contains { request.contains($0) } }, "\(fetched)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/levels/3/map.dat")) == Data(Self.changedMap))

        // The origin goes back to revision 1: refused, and the mount stays on revision 2.
        try FileManager.default.removeItem(atPath: fixture.dist)
        try FileManager.default.copyItem(atPath: revision1, toPath: fixture.dist)
        let rollback = try await fixture.odrfs(["update", fixture.mountpoint])
        #expect(rollback.status != 0)
        #expect(rollback.stderr.contains("refusing revision 1"), "\(rollback.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/levels/3/map.dat")) == Data(Self.changedMap))
        #expect(FileManager.default.fileExists(atPath: fixture.mountpoint + "/levels/3/new.txt"))
    }

    /// Bytes `odrfs serve` sent for requests of `file`, from its access log.
    static func bytesServed(_ log: String, file: String) -> Int {
        log.split(separator: "\n").filter { $0.contains("http.path=/" + file) }.reduce(0) { total, line in
            guard let range = line.range(of: "http.bytes=") else { return total }
            return total + (Int(line[range.upperBound...].prefix { $0.isNumber }) ?? 0)
        }
    }

    /// The status file's "fetched N bytes on the wire".
    static func wireBytes(_ fixture: MountFixture) -> Int64? {
        let text = (try? String(contentsOfFile: fixture.mountpoint + "/.odrfs/status", encoding: .utf8)) ?? ""
        guard let range = text.range(of: #"fetched (\d+) bytes on the wire"#, options: .regularExpression) else { return nil }
        return Int64(text[range].split(separator: " ")[1])
    }

    @Test("delta update: 4 KiB changed inside the 3 MiB big file fetches about one chunk, not the pack; the content is exact")
    func deltaUpdateFetchesOnlyWhatChanged() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let server = try await onFreePort { try await ServeOrigin(serving: fixture.dist, in: fixture.root + "/serve-\($0)", port: $0) }
        try await fixture.mount(origin: server.url)
        var big = try #require(TestBundle.files["big.bin"])
        // Make the Big pack local (an update fetches only packs that are local or retained).
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/big.bin")) == Data(big))
        for offset in 2_000_000..<(2_000_000 + 4096) { big[offset] ^= 0x5A }
        try Data(big).write(to: URL(fileURLWithPath: fixture.source + "/big.bin"))
        #expect(try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist]).status == 0)
        let pack = try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Big" })

        let check = try Self.json(try await fixture.odrfs(["update", fixture.mountpoint, "--check", "--json"]).stdout)
        #expect(check["changed_packs"] as? [String] == ["Big"])
        let planned = try #require(check["download_bytes"] as? Int)
        // A compressed pack moves whole frames: one chunk's frame is the unit (random bytes
        // compress to a little more than the chunk). Plain: the chunk itself.
        let frame = Int(pack.compression?.frames.map(\.length).max() ?? 1_048_576)
        // An upper bound: the chunk holding the changed header and the chunk holding the change.
        #expect(planned > 0 && planned <= 2 * frame, "planned download of \(planned) bytes for a 4 KiB change")
        let reused = try #require(check["reused_bytes"] as? Int)
        if pack.compression == nil {
            #expect(reused + planned == Int(pack.bytes.value))
        } else {
            // Reused bytes count the uncompressed pack; the download counts compressed frames.
            #expect(reused > 0 && reused < Int(pack.bytes.value) && planned <= Int(pack.compression?.bytes.value ?? 0))
        }

        let wireBefore = try #require(Self.wireBytes(fixture), "no wire bytes in the status")
        let update = try await fixture.odrfs(["update", fixture.mountpoint, "--json"])
        try #require(update.status == 0, "\(update.stderr)\n\(fixture.log)")
        let served = Self.bytesServed(server.logText, file: pack.file)
        // The mount's wire counter goes on across the switch and counts the update's ranges.
        let wireAfter = try #require(Self.wireBytes(fixture), "no wire bytes in the status after the update")
        #expect(wireAfter >= wireBefore + Int64(served), "wire bytes \(wireBefore) → \(wireAfter) after fetching \(served)")
        // The header is rebuilt locally, the old bytes are guessed in, and only the chunk that changed is fetched.
        #expect(served > 0 && served <= frame && served <= planned, "fetched \(served) bytes of a \(pack.bytes.value)-byte pack")
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/big.bin")) == Data(big))
        #expect(!fixture.log.contains("downloading it whole"), "the assembly fell back to a whole download")
    }

    @Test("delta update: two separated changes in one pack are fetched in exactly one multi-range request",
          arguments: OriginKind.allCases)
    func deltaUpdateIsOneRequestPerPack(kind: OriginKind) async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let origin = try await kind.start(serving: fixture.dist, in: fixture.root + "/origin")
        try await fixture.mount(origin: origin.url)
        var big = try #require(TestBundle.files["big.bin"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/big.bin")) == Data(big))
        // Two changes more than a chunk apart: two spans (or frame runs) that cannot coalesce.
        for offset in [200_000, 2_600_000] {
            for index in offset..<(offset + 1000) { big[index] ^= 0xA5 }
        }
        try Data(big).write(to: URL(fileURLWithPath: fixture.source + "/big.bin"))
        #expect(try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist]).status == 0)
        let pack = try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Big" })
        let before = origin.packRequests.count

        let update = try await fixture.odrfs(["update", fixture.mountpoint, "--json"])
        try #require(update.status == 0, "\(update.stderr)\n\(fixture.log)")
        // nginx answers with its own multipart framing: the mount's reader takes it as well.
        let requests = origin.packRequests.dropFirst(before)
        #expect(requests.count == 1 && requests.allSatisfy { $0.contains(pack.file) }, "\(requests)")
        if let serve = origin as? ServeOrigin {
            let line = serve.logText.split(separator: "\n").last { $0.contains("http.path=/" + pack.file) }
            let range = line.flatMap { line in line.range(of: "http.range=").map { line[$0.upperBound...].prefix { $0 != " " } } }
            #expect(line?.contains("http.status=206") == true && range?.contains(",") == true, "\(line ?? "no request")")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/big.bin")) == Data(big))
        #expect(!fixture.log.contains("downloading it whole"), "the assembly fell back to a whole download")
        #expect(!fixture.log.contains("ignores multi-range"), "the origin answered the whole file")
    }

    @Test("block delta (issue 13 W8): 1 MiB changed at an unaligned offset of the big file fetches little more than 1 MiB (a plain pack, and a compressed one with 64 KiB chunks); an old handle keeps the old bytes",
          arguments: [["--compress", "none"], ["--compress", "zstd", "--chunk-size", "64K"]])
    func blockDeltaFetchesAboutTheChange(layout: [String]) async throws {
        let fixture = try MountFixture()
        try TestBundle.write(to: fixture.source)
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist] + layout)
        try #require(build.status == 0, "\(build.stderr)")
        let server = try await onFreePort { try await ServeOrigin(serving: fixture.dist, in: fixture.root + "/serve-\($0)", port: $0) }
        try await fixture.mount(origin: server.url)
        let old = try #require(TestBundle.files["big.bin"])
        // Reading it makes the Big pack local (an update fetches only local or retained packs).
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/big.bin")) == Data(old))
        let handle = try #require(FileHandle(forReadingAtPath: fixture.mountpoint + "/big.bin"))
        defer { try? handle.close() }
        #expect(try handle.read(upToCount: 10) == Data(old.prefix(10)))
        // 1 MiB from an offset aligned to neither the 64 KiB blocks nor the chunks.
        let changeLength = 1 << 20
        var big = old
        for i in 1_234_567..<(1_234_567 + changeLength) { big[i] = ~big[i] }
        try Data(big).write(to: URL(fileURLWithPath: fixture.source + "/big.bin"))
        let rebuild = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist] + layout)
        try #require(rebuild.status == 0, "\(rebuild.stderr)")
        let pack = try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Big" })
        let compressed = layout.contains("zstd")
        #expect((pack.compression != nil) == compressed)
        if compressed { #expect(try fixture.manifest.chunkSize == ByteCount.kibibytes(64)) }
        let before = Self.bytesServed(server.logText, file: pack.file)

        // Random bytes do not compress: a 64 KiB frame is stored raw plus a few bytes of framing.
        let limit = Int(1.1 * Double(changeLength)) + 16 * 1024
        let check = try Self.json(try await fixture.odrfs(["update", fixture.mountpoint, "--check", "--json"]).stdout)
        let planned = try #require(check["download_bytes"] as? Int)
        let reused = try #require(check["reused_bytes"] as? Int)
        #expect(planned >= changeLength && planned <= limit, "planned \(planned) bytes for a 1 MiB change")
        if !compressed { #expect(reused + planned == Int(pack.bytes.value)) }

        let update = try await fixture.odrfs(["update", fixture.mountpoint, "--json"])
        try #require(update.status == 0, "\(update.stderr)\n\(fixture.log)")
        let served = Self.bytesServed(server.logText, file: pack.file) - before
        #expect(served >= changeLength && served <= limit, "fetched \(served) bytes of a \(pack.bytes.value)-byte pack for a 1 MiB change")
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/big.bin")) == Data(big))
        #expect(try handle.readToEnd() == Data(old.dropFirst(10)), "the handle opened before the update lost the old bytes")
        #expect(!fixture.log.contains("downloading it whole"), "the assembly fell back to a whole download")
    }

    @Test("block delta: bytes of a cached pack damaged since it was verified are fetched again, never published")
    func corruptedLocalBlockIsFetched() async throws {
        let fixture = try MountFixture()
        try TestBundle.write(to: fixture.source)
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist, "--compress", "none"])
        try #require(build.status == 0, "\(build.stderr)")
        let server = try await onFreePort { try await ServeOrigin(serving: fixture.dist, in: fixture.root + "/serve-\($0)", port: $0) }
        try await fixture.mount(origin: server.url)
        let old = try #require(TestBundle.files["big.bin"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/big.bin")) == Data(old))
        let index = try FileIndex(contentsOf: fixture.dist + "/" + fixture.manifest.index.file)
        let entry = try #require(index.lookup(path: "big.bin"))
        let offset = try #require(index.entry(entry)).packOffset
        // Byte 300,000 of big.bin lies outside the change below, so the update copies its bytes
        // from the cache: by the pack's first 1 MiB chunk when the rebuilt tar header of big.bin
        // is unchanged (the file's mtime is in it: rewritten within the same second), else by
        // the file chunk holding it. Damage the cached copy.
        let damaged: Int64 = 300_000
        let cached = try await fixture.waitUntilCached("Big")
        let fd = open(cached, O_RDWR)
        try #require(fd >= 0, "cannot open \(cached)")
        var byte: UInt8 = ~old[Int(damaged)]
        #expect(pwrite(fd, &byte, 1, off_t(offset + damaged)) == 1)
        close(fd)
        let changeLength = 1 << 20
        var big = old
        for i in 1_234_567..<(1_234_567 + changeLength) { big[i] = ~big[i] }
        try Data(big).write(to: URL(fileURLWithPath: fixture.source + "/big.bin"))
        let rebuild = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist, "--compress", "none"])
        try #require(rebuild.status == 0, "\(rebuild.stderr)")
        let pack = try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Big" })
        let before = Self.bytesServed(server.logText, file: pack.file)

        let update = try await fixture.odrfs(["update", fixture.mountpoint, "--json"])
        try #require(update.status == 0, "\(update.stderr)\n\(fixture.log)")
        let served = Self.bytesServed(server.logText, file: pack.file) - before
        // The file chunks the change touches, and the damaged bytes again: the file chunk
        // holding them (a copy that failed its digest), or the 1 MiB chunk they were copied
        // with (a whole-chunk copy is checked after the fetch, and fetched again when it
        // fails); not the whole pack.
        let newIndex = try FileIndex(contentsOf: fixture.dist + "/" + fixture.manifest.index.file)
        let bigEntry = try #require(newIndex.lookup(path: "big.bin"))
        let chunks = try #require(newIndex.chunks(of: bigEntry))
        let change: Range<Int64> = 1_234_567..<(1_234_567 + Int64(changeLength))
        let changed = chunks.filter { $0.range.overlaps(change) }.reduce(0) { $0 + $1.length }
        let damagedChunk = try #require(chunks.first { $0.range.contains(damaged) })
        #expect(!damagedChunk.range.overlaps(change), "the damaged chunk must be outside the change")
        #expect(served >= Int(changed + damagedChunk.length) && served <= Int(changed) + (1 << 20) + 1024,
                "fetched \(served) bytes, \(changed) of them the changed chunks")
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/big.bin")) == Data(big))
        #expect(!fixture.log.contains("downloading it whole"), "the assembly fell back to a whole download")
    }

    @Test("kill -9 during an update: the cache still names the old revision, no partial pack is kept, and a restart serves one whole revision")
    func killDuringUpdate() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        try await Self.buildRevision2(fixture)
        let newLevel3 = try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Level3" })
        // The new Level3 pack stalls after 1,000 bytes: the update hangs in the middle of assembling it.
        let slow = try SlowPack(fixture, pack: "Level3", stallAfter: 1_000)
        let update = try ChildProcess(MountFixture.binary, ["update", fixture.mountpoint])
        defer { update.stop() }
        #expect(await eventually(timeout: .seconds(30)) { fixture.log.contains("pack.id=base [ODRFSMount] pack assembled for the update") },
                "the update never got to the stalled pack: \(fixture.log)")
        await pause(.milliseconds(300))
        let pid = try #require(fixture.daemonPID())
        kill(pid, SIGKILL)
        #expect(await eventually { kill(pid, 0) != 0 })
        #expect(await update.wait(timeout: .seconds(10)))
        #expect(update.terminationStatus != 0)

        // Packs are published before the manifest: the cache still says revision 1.
        let cached = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: fixture.cache + "/manifest.json")))
        #expect(cached.revision == 1)
        #expect(!fixture.cachedPackFiles.contains((newLevel3.file as NSString).lastPathComponent), "a partly assembled pack was published")

        #expect(try await Command.run("/usr/bin/fusermount3", ["-u", "-z", fixture.mountpoint]).status == 0)
        slow.restore()
        try await fixture.mount()
        let tmp = try FileManager.default.contentsOfDirectory(atPath: fixture.cache + "/tmp")
        #expect(tmp.isEmpty, "the half-assembled pack survived the restart: \(tmp)")
        // The restart mounts the origin's revision 2, whole.
        let mnt = fixture.mountpoint
        #expect(try Data(contentsOf: URL(fileURLWithPath: mnt + "/levels/3/map.dat")) == Data(Self.changedMap))
        #expect(try Data(contentsOf: URL(fileURLWithPath: mnt + "/levels/3/new.txt")) == Data(Self.newFile))
        #expect(!FileManager.default.fileExists(atPath: mnt + "/config/settings.json"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: mnt + "/README.txt")) == Data(TestBundle.files["README.txt"]!))
        let status = try Self.json(try await fixture.odrfs(["status", mnt, "--json"]).stdout)
        #expect(status["revision"] as? Int == 2)
    }

    @Test("--update-interval: notify shows the new revision in status without switching; auto switches by itself")
    func periodicChecks() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let mnt = fixture.mountpoint
        try await fixture.mount(extra: ["--update-interval", "1s"])   // notify is the default
        try await Self.buildRevision2(fixture)
        let status = { () async throws -> [String: Any] in try Self.json(try await fixture.odrfs(["status", mnt, "--json"]).stdout) }
        #expect(try await eventually(timeout: .seconds(20)) { try await status()["available_revision"] as? Int == 2 },
                "no periodic check: \(fixture.log)")
        let notified = try await status()
        #expect(notified["revision"] as? Int == 1, "notify switched")
        #expect(notified["last_update_check"] is String)
        #expect(try Data(contentsOf: URL(fileURLWithPath: mnt + "/levels/3/map.dat")) == Data(TestBundle.files["levels/3/map.dat"]!))
        let text = try String(contentsOfFile: mnt + "/.odrfs/status", encoding: .utf8)
        #expect(text.contains("update available"), "\(text)")
        #expect(try await fixture.unmount().status == 0)

        try await fixture.mount(extra: ["--update-interval", "1s", "--update-policy", "auto"])
        let revision3 = TestBundle.pseudoRandom(30_000, seed: 100)
        try Data(revision3).write(to: URL(fileURLWithPath: fixture.source + "/levels/3/map.dat"))
        #expect(try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist]).status == 0)
        #expect(await eventually(timeout: .seconds(20)) { (try? Data(contentsOf: URL(fileURLWithPath: mnt + "/levels/3/map.dat"))) == Data(revision3) },
                "auto did not switch: \(fixture.log)")
        #expect(try await status()["revision"] as? Int == 3)

        let bad = try await fixture.odrfs(["mount", fixture.dist, fixture.root + "/nowhere", "--update-interval", "soon"])
        #expect(bad.status != 0 && bad.stderr.contains("--update-interval"), "\(bad.stderr)")
    }

    @Test("a tag request held across an update moves to the new revision's packs by tag name, and its end releases them")
    func heldRequestCarriesOver() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        let hold = try ChildProcess(MountFixture.binary, ["request", fixture.mountpoint, "Level3", "--hold"])
        defer { hold.stop() }
        #expect(await eventually { (try? fixture.retains(of: "Level3")) == 1 }, "the hold never took")
        try await Self.buildRevision2(fixture)
        let update = try await fixture.odrfs(["update", fixture.mountpoint])
        try #require(update.status == 0, "\(update.stderr)")
        // Level3 changed: the row is the new revision's pack, retained by the carried-over hold.
        #expect(try fixture.retains(of: "Level3") == 1, "\((try? fixture.status()) ?? [:])")
        #expect(try fixture.state(of: "Level3") == "in-use")
        hold.signal(SIGTERM)
        #expect(await hold.wait(timeout: .seconds(10)))
        #expect(await eventually { (try? fixture.retains(of: "Level3")) == 0 }, "the hold's end left a retain: \((try? fixture.status()) ?? [:])")
    }

    @Test("with --trust-key an update must be signed by a trusted key; a signed newer revision switches")
    func signedUpdates() async throws {
        let fixture = try await SignedMountTests.fixture()
        let key = fixture.root + "/key"
        try await SignedMountTests.build(fixture, ["--sign-key", key])
        try await fixture.mount(extra: ["--trust-key", key + ".pub"])
        // Revision 2, unsigned: refused, nothing switches.
        try Data(Self.changedMap).write(to: URL(fileURLWithPath: fixture.source + "/levels/3/map.dat"))
        try await SignedMountTests.build(fixture)
        let unsigned = try await fixture.odrfs(["update", fixture.mountpoint, "--check"])
        #expect(unsigned.status != 0)
        #expect(unsigned.stderr.contains("not signed"), "\(unsigned.stderr)")
        #expect(try await fixture.odrfs(["update", fixture.mountpoint]).status != 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/levels/3/map.dat")) == Data(TestBundle.files["levels/3/map.dat"]!))
        // Revision 3, signed: accepted.
        try await SignedMountTests.build(fixture, ["--sign-key", key])
        let signed = try await fixture.odrfs(["update", fixture.mountpoint, "--json"])
        #expect(signed.status == 0, "\(signed.stderr)\n\(fixture.log)")
        #expect(try Self.json(signed.stdout)["available_revision"] as? Int == 3)
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/levels/3/map.dat")) == Data(Self.changedMap))
    }

    @Test("readers running through an update see each file whole, from one revision or the other, never mixed")
    func readersDuringAnUpdate() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        let old = fixture.root + "/old.dat", new = fixture.root + "/new.dat"
        try Data(TestBundle.files["levels/3/map.dat"]!).write(to: URL(fileURLWithPath: old))
        try Data(Self.changedMap).write(to: URL(fileURLWithPath: new))
        // Each reader copies the file out and compares the copy with both revisions for 3 s.
        let script = "end=$(($(date +%s) + 3)); n=0; while [ $(date +%s) -lt $end ]; do cat \"$1/levels/3/map.dat\" > \"$4\" || exit 2; "
            + "cmp -s \"$4\" \"$2\" || cmp -s \"$4\" \"$3\" || { echo mixed; exit 1; }; n=$((n + 1)); done; echo $n"
        let readers = try (0..<6).map { index in
            try ChildProcess("/bin/sh", ["-c", script, "reader", fixture.mountpoint, old, new, fixture.root + "/copy\(index)"])
        }
        defer { readers.forEach { $0.stop() } }
        try await Self.buildRevision2(fixture)
        let update = try await fixture.odrfs(["update", fixture.mountpoint])
        #expect(update.status == 0, "\(update.stderr)")
        #expect(await eventually(timeout: .seconds(30)) { readers.allSatisfy { !$0.isRunning } })
        for reader in readers { #expect(reader.terminationStatus == 0, "a reader saw a file that is neither revision") }
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/levels/3/map.dat")) == Data(Self.changedMap))
    }
}
