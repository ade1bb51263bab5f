import Foundation
import ODRFSClient
import ODRFSCore
import TestSupport
import Testing

/// The control plane against a real mount: the CLI commands and the Swift client library.
@Suite("Mount control plane", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountControlTests {
    @Test("request fetches every pack of a tag, the shared one included; --conditional fetches nothing and exits 3")
    func requestAndConditional() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let nginx = try await OriginKind.nginx.start(serving: fixture.dist, in: fixture.root + "/nginx")
        try await fixture.mount(origin: nginx.url)
        let before = nginx.packRequests.count

        let conditional = try await fixture.odrfs(["request", fixture.mountpoint, "Level1", "--conditional"])
        #expect(conditional.status == 3, "\(conditional.stdout) \(conditional.stderr)")
        #expect(nginx.packRequests.count == before, "--conditional downloaded")

        let request = try await fixture.odrfs(["request", fixture.mountpoint, "Level1"])
        #expect(request.status == 0, "\(request.stderr)")
        #expect(try fixture.state(of: "Level1") == "downloaded")
        #expect(try fixture.state(of: "Level1+Level2") == "downloaded")
        #expect(try fixture.state(of: "Level2") == "not-downloaded")
        #expect(nginx.packRequests.count == before + 2)
        #expect(try await fixture.odrfs(["request", fixture.mountpoint, "Level1", "--conditional"]).status == 0)

        let unknown = try await fixture.odrfs(["request", fixture.mountpoint, "Atlantis"])
        #expect(unknown.status == 4)
        #expect(unknown.stderr.contains("Atlantis"))
    }

    @Test("--hold keeps a tag in use until killed; purge --all keeps held and open packs and removes the rest")
    func holdAndPurge() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        let hold = try ChildProcess(MountFixture.binary, ["request", fixture.mountpoint, "Level2", "--hold"])
        defer { hold.stop() }
        #expect(await eventually { (try? fixture.state(of: "Level2")) == "in-use" }, "held tag not in use")
        let open = try #require(FileHandle(forReadingAtPath: fixture.mountpoint + "/big.bin"))
        defer { try? open.close() }
        // A progressive open returns with the first chunk verified; let the rest arrive.
        #expect(await eventually { (try? fixture.state(of: "Big")) == "in-use" }, "open file's pack not in use")
        _ = try await fixture.odrfs(["request", fixture.mountpoint, "Level1"])
        #expect(try fixture.state(of: "Level1") == "downloaded")

        let purge = try await fixture.odrfs(["purge", fixture.mountpoint, "--all"])
        #expect(purge.status == 0, "\(purge.stderr)")
        #expect(try fixture.state(of: "Level1") == "not-downloaded")
        #expect(try fixture.state(of: "Level1+Level2") == "in-use", "Level2's shared pack is held too")
        #expect(try fixture.state(of: "Level2") == "in-use")
        #expect(try fixture.state(of: "Big") == "in-use")
        #expect(try fixture.state(of: "base") == "downloaded", "base is never purged")
        #expect(purge.output.contains("Level2"), "kept packs are reported: \(purge.output)")

        hold.signal(SIGTERM)
        #expect(await hold.wait(timeout: .seconds(10)))
        #expect(await eventually { (try? fixture.state(of: "Level2")) == "downloaded" }, "the hold was not released")
        let json = try await fixture.odrfs(["status", fixture.mountpoint, "--json"])
        #expect(json.status == 0)
        let object = try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any]
        #expect((object?["packs"] as? [[String: Any]])?.count == (try fixture.manifest).packs.count)
    }

    @Test("priorities persist across a remount and change the purge order")
    func prioritiesPersist() async throws {
        let fixture = try MountFixture()
        try MountCacheTests.writeLevels(to: fixture.source)
        #expect(try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist]).status == 0)
        try await fixture.mount()
        #expect(try await fixture.odrfs(["priority", fixture.mountpoint, "Level1", "--set", "0.9"]).status == 0)
        #expect(try await fixture.unmount().status == 0)
        let manifest = try fixture.manifest
        let budget = manifest.packs[0].bytes.value + 4 * manifest.packs[1].bytes.value + 500
        try await fixture.mount(extra: ["--cache-size", String(budget)])
        let read = try await fixture.odrfs(["priority", fixture.mountpoint, "Level1"])
        #expect(read.status == 0 && read.output.contains("0.9"), "\(read.output) \(read.stderr)")
        for level in 1...5 {
            _ = try await Command.run("/bin/cat", [fixture.mountpoint + "/level\(level)/part0.bin"])
        }
        // Level1 is the least recently used, but its priority (0.9, set before the
        // remount) keeps it; the oldest priority-0 packs went instead.
        #expect(try fixture.state(of: "Level1") == "downloaded")
        #expect(try fixture.state(of: "Level2") == "not-downloaded")
        #expect(try fixture.state(of: "Level5") == "downloaded")
    }

    @Test("a user other than the owner is refused by the control socket")
    func otherUserRefused() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        // Let the other user reach the mountpoint; the socket itself must refuse it.
        chmod(fixture.root, 0o755)
        let result = try await Command.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", MountFixture.binary, "status", fixture.mountpoint, "--json"])
        #expect(result.status != 0)
        #expect(result.stderr.lowercased().contains("permission") || result.stderr.lowercased().contains("denied"), "\(result.stderr)")
    }

    @Test("odrfs status prints the text of .odrfs/status, the cache line's read path and transport included")
    func statusFileMatchesCommand() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        #expect(try await fixture.odrfs(["request", fixture.mountpoint, "Level1"]).status == 0)
        let command = try await fixture.odrfs(["status", fixture.mountpoint])
        try #require(command.status == 0, "\(command.stderr)")
        let file = try String(contentsOfFile: fixture.mountpoint + "/.odrfs/status", encoding: .utf8)
        // Free space is measured at each read and other tests write to the same disk:
        // the one value on the cache line that may change between the two reads.
        func masked(_ text: String) -> String { text.replacing(/free \d+/, with: "free N") }
        #expect(masked(file) == masked(command.output))
        let cacheLine = command.output.split(separator: "\n").first { $0.hasPrefix("cache:") } ?? ""
        #expect(cacheLine.contains("; transport "), "\(cacheLine)")
    }

    @Test("BundleResourceRequest against a real mount: conditional, begin with progress to 1.0, plain file reads, end, errors")
    func clientLibrary() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount(extra: ["--max-in-use", "3M"])
        let conditional = BundleResourceRequest(tags: ["Level1"], mountpoint: fixture.mountpoint)
        #expect(await conditional.conditionallyBeginAccessingResources() == false)
        #expect(try fixture.state(of: "Level1") == "not-downloaded")

        let request = BundleResourceRequest(tags: ["Level1"], mountpoint: fixture.mountpoint)
        try await request.beginAccessingResources()
        #expect(request.progress.fractionCompleted == 1.0)
        #expect(try fixture.state(of: "Level1") == "in-use")
        #expect(try fixture.state(of: "Level1+Level2") == "in-use")
        #expect(FileManager.default.contents(atPath: fixture.mountpoint + "/levels/1/map.dat") == Data(TestBundle.files["levels/1/map.dat"]!))
        request.endAccessingResources()
        #expect(await eventually { (try? fixture.state(of: "Level1")) == "downloaded" })

        let unknown = BundleResourceRequest(tags: ["Atlantis"], mountpoint: fixture.mountpoint)
        do {
            try await unknown.beginAccessingResources()
            Issue.record("unknown tag accepted")
        } catch {
            #expect(error.odrCode == 4994)
        }
        // big.bin alone is over 3 MiB in use.
        let tooBig = BundleResourceRequest(tags: ["Big"], mountpoint: fixture.mountpoint)
        do {
            try await tooBig.beginAccessingResources()
            Issue.record("the in-use limit was not enforced")
        } catch {
            #expect(error.odrCode == 4993)
        }
    }

    @Test("cancelling a BundleResourceRequest's progress stops a slow download")
    func cancelStopsSlowDownload() async throws {
        let fixture = try MountFixture()
        try MountCacheTests.writeLevels(to: fixture.source)
        #expect(try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist]).status == 0)
        try await fixture.mount()
        let slow = try SlowPack(fixture, pack: "Level2", stallAfter: 40_000)
        defer { slow.restore() }

        let request = BundleResourceRequest(tags: ["Level2"], mountpoint: fixture.mountpoint)
        let begin = Task { try await request.beginAccessingResources() }
        #expect(await eventually { (try? fixture.state(of: "Level2"))?.hasPrefix("downloading") == true })
        #expect(await eventually { request.progress.fractionCompleted > 0 }, "no progress reported while downloading")
        request.progress.cancel()
        let outcome = await begin.result
        guard case .failure = outcome else {
            Issue.record("a cancelled request succeeded")
            return
        }
        #expect(await eventually { (try? fixture.state(of: "Level2")) == "not-downloaded" }, "the download went on after cancel")
        #expect(await eventually { ((try? FileManager.default.contentsOfDirectory(atPath: fixture.cache + "/tmp")) ?? ["x"]).isEmpty }, "partial download left behind")
        #expect(try fixture.retains(of: "Level2") == 0)
    }
}
