import Foundation
import ODRFSCore
import TestSupport
import Testing

/// FUSE passthrough under a real mount: large files of local packs are read by the
/// kernel from their own backing files under `files/`; files opened while their pack
/// streams in, small files and unprivileged daemons keep the FUSE read path.
@Suite("Passthrough", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct PassthroughMountTests {
    /// Above `BackingFileExtractor.minimumBytes` (1 MiB), at an odd size.
    static let bigBytes = 3 << 20 + 777
    static var bigContents: Data { Data(TestBundle.pseudoRandom(bigBytes, seed: 14)) }
    /// Below the default minimum size, above the one `--passthrough-min-size 128K` sets.
    static let midBytes = 200 << 10 + 13
    static var midContents: Data { Data(TestBundle.pseudoRandom(midBytes, seed: 15)) }

    func makeFixture() async throws -> MountFixture {
        let fixture = try MountFixture()
        try FileManager.default.createDirectory(atPath: fixture.source + "/big", withIntermediateDirectories: true)
        try Self.bigContents.write(to: URL(fileURLWithPath: fixture.source + "/big/big.bin"))
        try Data("small".utf8).write(to: URL(fileURLWithPath: fixture.source + "/big/small.txt"))
        try Self.midContents.write(to: URL(fileURLWithPath: fixture.source + "/big/mid.bin"))
        try Data("base".utf8).write(to: URL(fileURLWithPath: fixture.source + "/base.txt"))
        try "tags:\n  Big: [\"big/**\"]\n".write(toFile: fixture.source + "/odr.yaml", atomically: true, encoding: .utf8)
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(build.status == 0, "\(build.stderr)")
        return fixture
    }

    /// Reads the file whole with read(2) and through mmap(2), compares both with the
    /// reference, prints `ok`, then keeps the file open until `release` exists.
    static let readHoldScript = """
    import mmap, os, sys, time
    path, reference, release = sys.argv[1], open(sys.argv[2], 'rb').read(), sys.argv[3]
    with open(path, 'rb') as f:
        head = f.read(4096)
        print('opened', flush=True)
        while not os.path.exists(release + '.read'):
            time.sleep(0.02)
        data = head + f.read()
        assert data == reference, 'read(2) bytes differ'
        with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
            assert m[:] == reference, 'mmap bytes differ'
        print('ok', flush=True)
        while not os.path.exists(release):
            time.sleep(0.02)
    """

    struct Reader {
        let process: ChildProcess
        let output: String
        let release: String

        func printed(_ text: String) -> Bool {
            ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").contains(text)
        }
    }

    func startReader(_ fixture: MountFixture, name: String) throws -> Reader {
        let reference = fixture.root + "/big.reference"
        if !FileManager.default.fileExists(atPath: reference) {
            try Self.bigContents.write(to: URL(fileURLWithPath: reference))
        }
        let output = fixture.root + "/\(name).out"
        let release = fixture.root + "/\(name).release"
        let process = try ChildProcess("/usr/bin/python3", ["-c", Self.readHoldScript, fixture.mountpoint + "/big/big.bin", reference, release],
                                       stdout: output, stderr: fixture.root + "/\(name).err")
        return Reader(process: process, output: output, release: release)
    }

    func statusText(_ fixture: MountFixture) -> String {
        (try? String(contentsOfFile: fixture.mountpoint + "/.odrfs/status", encoding: .utf8)) ?? ""
    }

    /// The read path from the status's cache line: `reads passthrough (1 file passed through now); transport /dev/fuse`.
    func readsLine(_ fixture: MountFixture) -> String {
        guard let line = statusText(fixture).split(separator: "\n").first(where: { $0.hasPrefix("cache:") }),
              let range = line.range(of: ", reads ") else { return "(none)" }
        return "reads " + line[range.upperBound...]
    }

    /// Packs and backing files: the cache line's total less its pinned file indexes and manifest.
    func cachedBytes(_ fixture: MountFixture) throws -> Int64 {
        let line = try #require(statusText(fixture).split(separator: "\n").first { $0.hasPrefix("cache:") })
        let words = line.split(separator: " ")
        let pinned = words.firstIndex(of: "pinned").flatMap { Int64(words[$0 - 1]) } ?? 0
        return try #require(Int64(words[1])) - pinned
    }

    func backingFiles(_ fixture: MountFixture) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: fixture.cache + "/files")) ?? []
    }

    func catBig(_ fixture: MountFixture) async throws {
        let cat = try await Command.run("/bin/cat", [fixture.mountpoint + "/big/big.bin"])
        #expect(cat.status == 0, "\(cat.stderr)")
        #expect(cat.stdout == Self.bigContents, "big.bin differs")
    }

    @Test("a large file of a local pack passes through: read(2) and mmap return its bytes, the backing file is counted and purged with its pack")
    func passthroughReadsAndPurge() async throws {
        let fixture = try await makeFixture()
        try await fixture.mount()
        #expect(readsLine(fixture).hasPrefix("reads passthrough"), "\(readsLine(fixture))\n\(fixture.log)")
        try await catBig(fixture)  // downloads the pack: FUSE read path; its close starts the copy
        #expect(await eventually { backingFiles(fixture).count == 1 }, "no backing file appeared after the first read: \(fixture.log)")
        let manifest = try fixture.manifest
        let big = try #require(manifest.packs.first { $0.id.rawValue == "Big" })
        let base = manifest.packs[0].bytes.value
        #expect(try cachedBytes(fixture) == base + big.bytes.value + Int64(Self.bigBytes), "the backing file counts in the cache's bytes")

        let reader = try startReader(fixture, name: "passthrough")
        defer { reader.process.stop() }
        #expect(await eventually { reader.printed("opened") })
        #expect(readsLine(fixture) == "reads passthrough (1 file passed through now); transport /dev/fuse")
        #expect(try fixture.retains(of: "Big") == 1, "a passthrough open still retains its pack")
        _ = FileManager.default.createFile(atPath: reader.release + ".read", contents: nil)
        #expect(await eventually { reader.printed("ok") }, "\((try? String(contentsOfFile: fixture.root + "/passthrough.err", encoding: .utf8)) ?? "")")
        // A second open of the same file shares the inode's backing file.
        try await catBig(fixture)
        _ = FileManager.default.createFile(atPath: reader.release, contents: nil)
        #expect(await eventually { readsLine(fixture) == "reads passthrough (0 files passed through now); transport /dev/fuse" })
        #expect(await eventually { (try? fixture.retains(of: "Big")) == 0 })

        let purge = try await fixture.odrfs(["purge", fixture.mountpoint, "Big"])
        #expect(purge.status == 0, "\(purge.stderr)")
        #expect(backingFiles(fixture).isEmpty, "the backing file goes with its pack")
        #expect(try cachedBytes(fixture) == base)
        try await catBig(fixture)  // fetched again, FUSE path
    }

    @Test("a large file opened while its pack streams in keeps the FUSE read path while open, and later opens agree with it")
    func openWhileStreaming() async throws {
        let fixture = try await makeFixture()
        // 1.5 MiB: past the first chunk (and its zstd frame, a little longer than the chunk for
        // these random bytes), short of the pack.
        let slow = try SlowPack(fixture, pack: "Big", stallAfter: 3 << 19)
        defer { slow.restore() }
        try await fixture.mount()
        let reader = try startReader(fixture, name: "streaming")
        defer { reader.process.stop() }
        #expect(await eventually { reader.printed("opened") }, "the progressive open did not return")
        #expect(try fixture.state(of: "Big")?.hasPrefix("downloading") == true)
        slow.resume()
        #expect(await eventually { (try? fixture.state(of: "Big")) == "in-use" })
        // Pack local, file still open the FUSE way: a new open starts the copy but must
        // not pass through (the kernel would fail it with EIO); it reads correctly.
        try await catBig(fixture)
        #expect(await eventually { backingFiles(fixture).count == 1 })
        try await catBig(fixture)
        #expect(readsLine(fixture) == "reads passthrough (0 files passed through now); transport /dev/fuse")
        _ = FileManager.default.createFile(atPath: reader.release + ".read", contents: nil)
        #expect(await eventually { reader.printed("ok") }, "\((try? String(contentsOfFile: fixture.root + "/streaming.err", encoding: .utf8)) ?? "")")
        _ = FileManager.default.createFile(atPath: reader.release, contents: nil)
        #expect(await eventually { (try? fixture.retains(of: "Big")) == 0 })
        // Now nothing holds it the FUSE way: the next open passes through.
        let again = try startReader(fixture, name: "after")
        defer { again.process.stop() }
        #expect(await eventually { again.printed("opened") })
        #expect(readsLine(fixture) == "reads passthrough (1 file passed through now); transport /dev/fuse")
        _ = FileManager.default.createFile(atPath: again.release + ".read", contents: nil)
        #expect(await eventually { again.printed("ok") })
    }

    /// Runs inside a new user and mount namespace as its root: the daemon there has every
    /// capability of that namespace but not CAP_SYS_ADMIN of the initial one, which is what
    /// the kernel checks before it registers a backing file. (This VM's /dev/fuse is 0600,
    /// so a daemon run as another user could not mount at all.) The mount lives only in
    /// that namespace, so the reads and the unmount happen in the same script.
    static let namespaceScript = """
    set -e
    odrfs="$1"; dist="$2"; mnt="$3"; cache="$4"; out="$5"
    "$odrfs" mount "$dist" "$mnt" --cache "$cache"
    trap '"$odrfs" unmount "$mnt" >/dev/null 2>&1 || umount -l "$mnt"' EXIT
    cat "$mnt/big/big.bin" > "$out.1"
    cat "$mnt/big/big.bin" > "$out.2"
    cat "$mnt/.odrfs/status" > "$out.status"
    """

    @Test("a daemon without CAP_SYS_ADMIN (user namespace) falls back to the FUSE read path and says so")
    func unprivilegedFallsBack() async throws {
        let fixture = try await makeFixture()
        let out = fixture.root + "/userns"
        let result = try await Command.run("/usr/bin/unshare", [
            "--user", "--map-root-user", "--mount", "--propagation", "private", "--",
            "/bin/sh", "-c", Self.namespaceScript, "sh", MountFixture.binary, fixture.dist, fixture.mountpoint, fixture.cache, out,
        ])
        try #require(result.status == 0, "the namespace script failed: \(result.stderr)\n\(fixture.log)")
        for copy in ["1", "2"] {
            #expect(FileManager.default.contents(atPath: out + "." + copy) == Self.bigContents, "big.bin differs (read \(copy))")
        }
        let status = (try? String(contentsOfFile: out + ".status", encoding: .utf8)) ?? ""
        #expect(status.contains(", reads fuse (passthrough needs CAP_SYS_ADMIN)"), "\(status)")
        #expect(fixture.log.contains("fuse (passthrough needs CAP_SYS_ADMIN)"), "the log says which read path: \(fixture.log)")
        #expect(backingFiles(fixture).isEmpty, "no backing files are copied when they cannot be used")
    }

    /// Opens `name` under big/, prints the status while it is open, then its bytes.
    static let holdAndStatusScript = """
    set -e
    exec 3< "$1/big/$2"
    cat "$1/.odrfs/status" > "$3.status"
    cat <&3 > "$3.bytes"
    """

    /// The read path shown while `name` is held open, and the bytes read through that open.
    func readWhileHeld(_ fixture: MountFixture, name: String) async throws -> (readsLine: String, bytes: Data?) {
        let out = fixture.root + "/held-" + name
        let result = try await Command.run("/bin/sh", ["-c", Self.holdAndStatusScript, "sh", fixture.mountpoint, name, out])
        try #require(result.status == 0, "\(result.stderr)")
        let status = (try? String(contentsOfFile: out + ".status", encoding: .utf8)) ?? ""
        var reads = "(none)"
        if let line = status.split(separator: "\n").first(where: { $0.hasPrefix("cache:") }), let range = line.range(of: ", reads ") {
            reads = "reads " + line[range.upperBound...]
        }
        return (reads, FileManager.default.contents(atPath: out + ".bytes"))
    }

    @Test("--passthrough off: every read takes the FUSE path, no backing files are copied, and status and log say it was switched off")
    func switchedOff() async throws {
        let fixture = try await makeFixture()
        try await fixture.mount(extra: ["--passthrough", "off"])
        #expect(readsLine(fixture) == "reads fuse (passthrough switched off); transport /dev/fuse", "\(readsLine(fixture))")
        try await catBig(fixture)
        try await catBig(fixture)
        let held = try await readWhileHeld(fixture, name: "big.bin")
        #expect(held.readsLine == "reads fuse (passthrough switched off); transport /dev/fuse")
        #expect(held.bytes == Self.bigContents, "big.bin differs")
        // A copy would have started at the first close; give it time to show up.
        try await Task.sleep(for: .milliseconds(300))
        #expect(backingFiles(fixture).isEmpty, "no backing files with passthrough off: \(backingFiles(fixture))")
        #expect(fixture.log.contains("fuse (passthrough switched off)"), "the log says which read path: \(fixture.log)")
        let status = try await fixture.odrfs(["status", fixture.mountpoint, "--json"])
        let json = String(decoding: status.stdout, as: UTF8.self)
        #expect(json.contains("passthrough switched off"), "\(json)")
    }

    @Test("--passthrough-min-size 128K passes a 200 KiB file through (the default 1 MiB would not)")
    func lowerMinimumSize() async throws {
        let fixture = try await makeFixture()
        try await fixture.mount(extra: ["--passthrough-min-size", "128K"])
        let first = try await readWhileHeld(fixture, name: "mid.bin")  // downloads the pack: FUSE path
        #expect(first.bytes == Self.midContents, "mid.bin differs")
        #expect(await eventually { backingFiles(fixture).count == 1 }, "no backing file for mid.bin: \(fixture.log)")
        let small = try await Command.run("/bin/cat", [fixture.mountpoint + "/big/small.txt"])
        #expect(small.stdout == Data("small".utf8))
        let held = try await readWhileHeld(fixture, name: "mid.bin")
        #expect(held.readsLine == "reads passthrough (1 file passed through now); transport /dev/fuse", "\(held.readsLine)")
        #expect(held.bytes == Self.midContents, "mid.bin differs when passed through")
        #expect(backingFiles(fixture).count == 1, "small.txt stays below the minimum: \(backingFiles(fixture))")
    }
}
