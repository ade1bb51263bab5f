import ControlTestSupport
import Foundation
import ODRFSControl
import Synchronization
import Testing
import TestSupport

@Suite(.timingSensitive, .timeLimit(.minutes(1))) struct ControlServerTests {
    @Test func statusOverTheSocket() async throws {
        let fixture = try ControlFixture()
        let client = try await ControlClient.connect(mountpoint: fixture.mountpoint)
        let reply = try await client.call(.status)
        #expect(reply.status?.packs.map(\.id) == ["base", "Iceland", "Italy", "Italy+Rome", "Rome", "Huge"])
        #expect(reply.status?.tags.first { $0.tag == "Italy" }?.packs == ["Italy", "Italy+Rome"])
        client.close()
        await fixture.stop()
    }

    /// The daemon trims its heap after a large reply (issue 28: a status of 100,000 packs
    /// left it 150 MiB larger per call); small replies, the common case, never trim.
    @Test func largeRepliesCallTheHookOnceWritten() async throws {
        let calls = Atomic<Int>(0)
        let fixture = try ControlFixture(service: FakeControlService(extraPacks: 10_000),
                                         afterLargeReply: { calls.add(1, ordering: .relaxed) })
        let client = try await ControlClient.connect(mountpoint: fixture.mountpoint)
        let small = try await client.call(.priorityGet(tags: ["Italy"]))
        #expect(small.ok == true)
        let reply = try await client.call(.status)
        let packs = try #require(reply.status?.packs)
        #expect(packs.count == 10_006)
        #expect(ControlProtocol.encode(reply).count >= ControlServer.largeReplyBytes, "the status is not large enough to test with")
        #expect(await eventually { calls.load(ordering: .relaxed) == 1 }, "the hook was not called after a large reply")
        _ = try await client.call(.status)
        #expect(await eventually { calls.load(ordering: .relaxed) == 2 })
        // Small replies after large ones (their hooks done): still two.
        _ = try await client.call(.priorityGet(tags: ["Italy"]))
        #expect(calls.load(ordering: .relaxed) == 2, "a small reply called the hook")
        client.close()
        await fixture.stop()
    }

    @Test func requestSendsProgressAndHoldsUntilEnd() async throws {
        let fixture = try ControlFixture()
        let raw = try await fixture.raw()
        await raw.send(#"{"v":1,"id":1,"op":"request","tags":["Italy"],"loadingPriority":0.5}"# + "\n")
        let (reply, events) = await raw.readReply(to: 1)
        #expect(reply?.ok == true)
        #expect(reply?.packs == [2, 3])
        #expect(!events.isEmpty && events.allSatisfy { $0.event == .progress && $0.id == 1 })
        #expect(events.last?.completed == 2_500 && events.last?.total == 2_500)
        #expect(fixture.service.retains("Italy") == 1 && fixture.service.retains("Italy+Rome") == 1)
        await raw.send(#"{"v":1,"id":2,"op":"end","request":1}"# + "\n")
        #expect(await raw.readReply(to: 2).reply?.ok == true)
        #expect(fixture.service.totalRetains == 0)
        await raw.send(#"{"v":1,"id":3,"op":"end","request":1}"# + "\n")
        #expect(await raw.readReply(to: 3).reply?.error?.code == .badRequest)
        await fixture.stop()
    }

    @Test func conditionalRequestNeverDownloads() async throws {
        let fixture = try ControlFixture()
        let client = try await ControlClient.connect(mountpoint: fixture.mountpoint)
        await #expect(throws: ControlError.self) {
            try await client.call(.request(tags: ["Rome"], loadingPriority: .default, conditional: true))
        }
        do {
            try await client.call(.request(tags: ["Rome"], loadingPriority: .default, conditional: true))
        } catch {
            #expect(error.code == .notLocal)
        }
        #expect(!fixture.service.isLocal("Rome"))
        let reply = try await client.call(.request(tags: ["Iceland"], loadingPriority: .default, conditional: true))
        #expect(reply.packs == [1])
        #expect(fixture.service.retains("Iceland") == 1)
        client.close()
        #expect(await eventually { fixture.service.totalRetains == 0 })
        await fixture.stop()
    }

    @Test func errorsComeBackTyped() async throws {
        let fixture = try ControlFixture(service: FakeControlService(maximumInUse: 10_000))
        let client = try await ControlClient.connect(mountpoint: fixture.mountpoint)
        for (tags, code) in [(["Nowhere"], ControlError.Code.invalidTag), (["Huge"], .exceededMaximumSize)] {
            do {
                try await client.call(.request(tags: tags, loadingPriority: .urgent, conditional: false))
                Issue.record("\(tags) succeeded")
            } catch {
                #expect(error.code == code)
                #expect(error.odrCode == code.odrCode)
            }
        }
        #expect(fixture.service.totalRetains == 0)
        client.close()
        await fixture.stop()
    }

    @Test func prioritiesAndPurge() async throws {
        let fixture = try ControlFixture()
        let client = try await ControlClient.connect(mountpoint: fixture.mountpoint)
        try await client.call(.prioritySet(tags: ["Italy", "Rome"], value: 0.75))
        #expect(try await client.call(.priorityGet(tags: ["Italy", "Iceland"])).priorities == ["Italy": 0.75, "Iceland": 0])
        let rome = try await client.call(.request(tags: ["Rome"], loadingPriority: .default, conditional: false))
        try await client.call(.request(tags: ["Italy"], loadingPriority: .default, conditional: false))
        let held = try await client.call(.request(tags: ["Iceland"], loadingPriority: .default, conditional: true))
        try await client.call(.end(request: try #require(rome.id)))
        let summary = try #require(try await client.call(.purge(tags: nil)).purge)
        #expect(Set(summary.evicted.map(\.id)) == ["Rome"])
        #expect(Set(summary.kept) == ["Iceland", "Italy", "Italy+Rome"])
        #expect(held.ok == true)
        client.close()
        #expect(await eventually { fixture.service.totalRetains == 0 })
        await fixture.stop()
    }

    @Test func clientVanishingMidRequestLeavesNoRetain() async throws {
        let service = FakeControlService(stepDelay: .milliseconds(200))
        let fixture = try ControlFixture(service: service)
        do {
            let raw = try await fixture.raw()
            await raw.send(#"{"v":1,"id":1,"op":"request","tags":["Iceland"]}"# + "\n")
            #expect(await raw.readReply(to: 1).reply?.ok == true)
            await raw.send(#"{"v":1,"id":2,"op":"request","tags":["Rome"]}"# + "\n")
            #expect(await raw.readResponse()?.event == .progress)
        }   // the connection closes here, mid-download
        #expect(await eventually { service.cancelledWaits == 1 && fixture.server.connectionCount == 0 })
        #expect(service.totalRetains == 0)
        #expect(service.beginCount == service.endCount)
        await fixture.stop()
    }

    @Test func cancelStopsARequestInFlight() async throws {
        // A 10 s download (10 steps of 1 s): a loaded machine cannot finish it before the cancel.
        let fixture = try ControlFixture(service: FakeControlService(stepDelay: .seconds(1)))
        let raw = try await fixture.raw()
        await raw.send(#"{"v":1,"id":1,"op":"request","tags":["Rome"]}"# + "\n")
        #expect(await raw.readResponse()?.event == .progress)
        await raw.send(#"{"v":1,"id":2,"op":"cancel","request":1}"# + "\n")
        var replies: [Int: ControlResponse] = [:]
        while replies.count < 2, let response = await raw.readResponse() {
            if response.isReply { replies[response.id ?? -1] = response }
        }
        #expect(replies[2]?.ok == true)
        #expect(replies[1]?.error?.code == .cancelled)
        #expect(fixture.service.totalRetains == 0)
        await fixture.stop()
    }

    @Test func badMessagesGetErrorsAndTheServerKeepsServing() async throws {
        let fixture = try ControlFixture()
        let raw = try await fixture.raw()
        await raw.send("this is not json\n")
        #expect(await raw.readResponse()?.error?.code == .badRequest)
        await raw.send(#"{"v":1,"id":5,"op":"explode"}"# + "\n")
        let unknown = await raw.readResponse()
        #expect(unknown?.error?.code == .badRequest && unknown?.id == 5)
        await raw.send(#"{"v":9,"id":6,"op":"status"}"# + "\n")
        #expect(await raw.readResponse()?.error?.code == .unsupportedVersion)
        await raw.send("\n")
        await raw.send(#"{"v":1,"id":7,"op":"status"}"# + "\n")
        #expect(await raw.readResponse()?.status != nil)
        // A truncated message followed by a hang-up is dropped without harm.
        let truncated = try await fixture.raw()
        await truncated.send(#"{"v":1,"id":1,"op":"request","tags":["It"#)
        _ = truncated
        await fixture.stop()
    }

    @Test func oversizedMessageIsRefusedThenClosed() async throws {
        let fixture = try ControlFixture()
        let raw = try await fixture.raw()
        await raw.send(Data(repeating: UInt8(ascii: "a"), count: ControlProtocol.maximumRequestLength + 10))
        let reply = await raw.readResponse()
        #expect(reply?.error?.code == .badRequest)
        #expect(reply?.id == nil)
        #expect(await raw.isClosedByPeer())
        let other = try await fixture.raw()
        await other.send(#"{"v":1,"id":1,"op":"status"}"# + "\n")
        #expect(await other.readResponse()?.ok == true)
        await fixture.stop()
    }

    @Test func watchDiskStreamsEvents() async throws {
        let fixture = try ControlFixture()
        let raw = try await fixture.raw()
        await raw.send(#"{"v":1,"id":1,"op":"watch-disk"}"# + "\n")
        #expect(await raw.readResponse()?.ok == true)
        fixture.service.emitLowDiskSpace(LowDiskSpaceEvent(availableBytes: 42, minimumFree: 100))
        let event = await raw.readResponse()
        #expect(event?.event == .lowDiskSpace && event?.availableBytes == 42 && event?.minimumFree == 100)
        await raw.send(#"{"v":1,"id":2,"op":"end","request":1}"# + "\n")
        #expect(await raw.readReply(to: 2).reply?.ok == true)
        #expect(await eventually { fixture.service.watcherCount == 0 })
        await fixture.stop()
    }

    @Test func connectionsBeyondTheLimitAreRefusedWithAReason() async throws {
        let fixture = try ControlFixture(maximumConnections: 2)
        var first: RawConnection? = try await fixture.raw()
        let second = try await fixture.raw()
        #expect(await eventually { fixture.server.connectionCount == 2 })
        let third = try await fixture.raw()
        let refusal = await third.readResponse()
        #expect(refusal?.ok == false)
        #expect(refusal?.error?.code == .tooManyConnections, "\(String(describing: refusal))")
        #expect(await third.isClosedByPeer())
        // The two accepted ones still work; closing one makes room again.
        _ = await first?.send(#"{"v":1,"id":1,"op":"status"}"# + "\n")
        #expect(await first?.readReply(to: 1).reply?.ok == true)
        _ = second
        first = nil  // closes it
        #expect(await eventually { fixture.server.connectionCount == 1 })
        let fourth = try await fixture.raw()
        _ = await fourth.send(#"{"v":1,"id":1,"op":"status"}"# + "\n")
        #expect(await fourth.readReply(to: 1).reply?.ok == true)
        await fixture.stop()
    }

    @Test func socketIsPrivateAndStaleSocketsAreReplaced() async throws {
        let fixture = try ControlFixture()
        var info = stat()
        #expect(stat(fixture.socketPath, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect((info.st_mode & S_IFMT) == S_IFSOCK)
        #expect(stat((fixture.socketPath as NSString).deletingLastPathComponent, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        // A second server on a live socket refuses to start.
        let second = ControlServer(socketPath: fixture.socketPath, service: fixture.service, logger: .init(label: "test"))
        #expect(throws: ControlError.self) { try second.start() }
        await fixture.server.stop()
        #expect(access(fixture.socketPath, F_OK) != 0)
        // A stale socket file (nobody listening) is replaced.
        let stale = try UnixSocketFile(path: fixture.socketPath)
        try second.start()
        let client = try await ControlClient.connect(socketPath: fixture.socketPath)
        #expect(try await client.call(.status).ok == true)
        client.close()
        _ = stale
        await second.stop()
        await fixture.stop()
    }

    @Test func missingDaemonIsExplained() async throws {
        let directory = try TemporaryDirectory()
        do {
            _ = try await ControlClient.connect(mountpoint: directory.path)
            Issue.record("connected")
        } catch {
            #expect(error.code == .notRunning)
            #expect(error.message.contains("is not an ODRFS mount or its daemon is not running (no control socket at"))
        }
    }
}

/// A socket file nobody listens on (as a crashed daemon leaves).
struct UnixSocketFile {
    init(path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        guard withUnixAddress(path, { bind(fd, $0, $1) }) == 0 else { throw POSIXError(.EADDRINUSE) }
    }
}
