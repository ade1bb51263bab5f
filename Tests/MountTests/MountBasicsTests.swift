import Foundation
import FUSEKit
import ODRFSCore
import Testing

/// Real mounts of the test bundle, driven through the `odrfs` binary and real tools.
@Suite("Mount", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountBasicsTests {
    @Test("find lists every file with the source's sizes, modes and mtimes, and fetches nothing")
    func metadataWithoutFetching() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        let initial = fixture.cachedPackFiles
        // Base and the initial-install tag are local before mount returns; nothing else.
        #expect(initial == [try fixture.cacheFileName(of: "base"), try fixture.cacheFileName(of: "Level3")])

        let listed = try await Command.run("/usr/bin/find", [fixture.mountpoint, "-printf", "%P\t%y\t%s\t%m\t%T@\n"])
        #expect(listed.status == 0, "\(listed.stderr)")
        let expected = try await Command.run("/usr/bin/find", [fixture.source, "-printf", "%P\t%y\t%s\t%m\t%T@\n"])
        func rows(_ output: String, dropping: Set<String>) -> [String: String] {
            var rows: [String: String] = [:]
            for line in output.split(separator: "\n") {
                let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                guard fields.count == 5, !dropping.contains(fields[0]) else { continue }
                // Directory sizes are filesystem-specific; everything else must match exactly.
                rows[fields[0]] = fields[1] == "d" ? "d \(fields[3])" : fields[1...].joined(separator: " ")
            }
            return rows
        }
        let mounted = rows(listed.output, dropping: ["", ".odrfs", ".odrfs/status"])
        let source = rows(expected.output, dropping: ["", "odr.yaml"])
        #expect(mounted == source)
        #expect(mounted.count == TestBundle.files.count + 12)

        let stat = try await Command.run("/usr/bin/stat", ["-c", "%s %a %F", fixture.mountpoint + "/big.bin"])
        #expect(stat.output == "\(3 * 1_048_576 + 123) 644 regular file\n")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: fixture.mountpoint + "/readme-link") == "README.txt")
        let df = try await Command.run("/bin/df", ["-P", fixture.mountpoint])
        #expect(df.status == 0 && df.output.contains("odrfs"), "\(df.output) \(df.stderr)")
        #expect(fixture.cachedPackFiles == initial, "metadata operations fetched a pack")
        #expect(try fixture.fetches(of: "Level1") == 0)
    }

    @Test("odrfs mount returns once the mount answers: INIT done, 4 MiB readahead, zero-copy max_read")
    func mountReturnsWhenServing() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        // No waiting: the daemon says ready only after a statfs went through the
        // session, and raises readahead (which INIT resets) before that.
        let entry = try #require(await fixture.mountTableEntry())
        let readahead = try String(contentsOfFile: "/sys/class/bdi/\(entry.device)/read_ahead_kb", encoding: .utf8)
        #expect(readahead == "4096\n")
        // Reads just under the splice pipe's size, or libfuse copies every large reply.
        #expect(entry.superOptions.contains("max_read=\(MountOptions.spliceSafeMaxRead())"), "\(entry.superOptions)")
    }

    @Test("the connection takes 64 background requests, so reads waiting on a download cannot hold back closes")
    func backgroundSlots() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        let connections = "/sys/fs/fuse/connections"
        let listed = (try? FileManager.default.contentsOfDirectory(atPath: connections)) ?? []
        if listed.isEmpty {
            // fusectl is not mounted in most containers; as root (the mount tests' condition) it can be.
            let mounted = try await Command.run("/bin/mount", ["-t", "fusectl", "fusectl", connections])
            try #require(mounted.status == 0 || mounted.stderr.contains("already mounted"), "\(mounted.stderr)")
        }
        let entry = try #require(await fixture.mountTableEntry())
        // The connection directory is named by the device number (major 0 for FUSE).
        let minor = try #require(entry.device.split(separator: ":").last)
        let read = { (name: String) in try String(contentsOfFile: "\(connections)/\(minor)/\(name)", encoding: .utf8) }
        #expect(try read("max_background") == "64\n")
        #expect(try read("congestion_threshold") == "48\n")
    }

    @Test("cat of on-demand files is byte-identical and fetches exactly one pack, once")
    func readFetchesOnePack() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        let before = fixture.cachedPackFiles
        #expect(try fixture.state(of: "Level2") == "not-downloaded")

        let cat = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/2/map.dat"])
        #expect(cat.status == 0, "\(cat.stderr)")
        #expect(cat.stdout == Data(TestBundle.files["levels/2/map.dat"]!))
        #expect(fixture.cachedPackFiles == before.union([try fixture.cacheFileName(of: "Level2")]))
        #expect(try fixture.fetches(of: "Level2") == 1)
        #expect(try fixture.fetches(of: "Level1") == 0)
        #expect(try fixture.fetches(of: "Level1+Level2") == 0)

        // Every file, through sha256sum, matches the source; each pack is fetched once.
        for (path, bytes) in TestBundle.files {
            let read = try await Command.run("/bin/cat", [fixture.mountpoint + "/" + path])
            #expect(read.status == 0, "\(path): \(read.stderr)")
            #expect(read.stdout == Data(bytes), "\(path) differs")
        }
        let sums = try await Command.run("/usr/bin/sha256sum", [fixture.mountpoint + "/big.bin", fixture.source + "/big.bin"])
        let digests = sums.output.split(separator: "\n").map { $0.split(separator: " ")[0] }
        #expect(digests.count == 2 && digests[0] == digests[1])
        for pack in ["Level1", "Level2", "Level1+Level2", "Big"] {
            #expect(try fixture.fetches(of: pack) == 1, "\(pack)")
        }
        #expect(try fixture.fetches(of: "Level3") == 1, "initial-install packs are fetched once, before the mount is ready")
    }

    @Test("32 concurrent readers of one remote pack cause one fetch")
    func concurrentReadersSingleFlight() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        let paths = ["levels/1/map.dat", "levels/1/sprites/hero.png", "levels/1/sprites/enemy.png"]
        let outputs = (0..<32).map { _ in fixture.root + "/out-\(UUID().uuidString)" }
        let readers = try (0..<32).map { index in
            try Command.start("/bin/sh", ["-c", "cat \"$0\" > \"$1\"", fixture.mountpoint + "/" + paths[index % paths.count], outputs[index]])
        }
        let finished = await eventually(timeout: .seconds(60)) { readers.allSatisfy { !$0.isRunning } }
        readers.forEach { $0.stop() }
        #expect(finished)
        for (index, reader) in readers.enumerated() {
            #expect(reader.terminationStatus == 0)
            #expect(FileManager.default.contents(atPath: outputs[index]) == Data(TestBundle.files[paths[index % paths.count]]!))
        }
        #expect(try fixture.fetches(of: "Level1") == 1)
    }

    @Test("an open file retains its pack until it is closed")
    func openHandleRetains() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        let path = fixture.mountpoint + "/shared/forest/tree.png"
        let handle = try #require(FileHandle(forReadingAtPath: path))
        #expect(try fixture.state(of: "Level1+Level2") == "in-use")
        #expect(try fixture.retains(of: "Level1+Level2") == 1)
        let attribute = try await Command.run("/usr/bin/getfattr", ["--only-values", "-n", "user.odrfs.state", path])
        #expect(attribute.output == "in-use")
        let second = try #require(FileHandle(forReadingAtPath: path))
        #expect(try fixture.retains(of: "Level1+Level2") == 2)
        #expect(try handle.readToEnd() == Data(TestBundle.files["shared/forest/tree.png"]!))
        try handle.close()
        try second.close()
        // release reaches the daemon asynchronously after close(2).
        #expect(try await eventually { try fixture.retains(of: "Level1+Level2") == 0 })
        #expect(try fixture.state(of: "Level1+Level2") == "downloaded")
    }

    @Test("xattrs name each file's tags, pack and state; ls -l and getfattr work")
    func extendedAttributes() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        let shared = fixture.mountpoint + "/shared/forest/tree.png"
        let dump = try await Command.run("/usr/bin/getfattr", ["-d", "-m", "-", shared])
        #expect(dump.status == 0, "\(dump.stderr)")
        #expect(dump.output.contains("user.odrfs.tags=\"Level1,Level2\""))
        #expect(dump.output.contains("user.odrfs.pack=\"Level1+Level2\""))
        #expect(dump.output.contains("user.odrfs.state=\"not-downloaded\""))
        let base = try await Command.run("/usr/bin/getfattr", ["--only-values", "-n", "user.odrfs.pack", fixture.mountpoint + "/README.txt"])
        #expect(base.output == "base")
        let missing = try await Command.run("/usr/bin/getfattr", ["-n", "user.nope", shared])
        #expect(missing.status != 0 && missing.stderr.contains("No such attribute"))
        let listing = try await Command.run("/bin/ls", ["-lR", fixture.mountpoint])
        #expect(listing.status == 0 && listing.output.contains("naïve café.txt"), "\(listing.stderr)")
        #expect(try fixture.state(of: "Level1+Level2") == "not-downloaded", "inspecting must not fetch")
    }
}
