import ControlTestSupport
import Foundation
import ODRFSControl
import Testing
import TestSupport

/// How connections live and end on the event-loop server.
@Suite(.timingSensitive, .timeLimit(.minutes(1))) struct ConnectionLifecycleTests {
    @Test func stopClosesEveryConnectionAndReleasesItsRetains() async throws {
        let service = FakeControlService(stepDelay: .milliseconds(500))
        let fixture = try ControlFixture(service: service)
        let holder = try await fixture.raw()
        await holder.send(#"{"v":1,"id":1,"op":"request","tags":["Iceland"]}"# + "\n")
        #expect(await holder.readReply(to: 1).reply?.ok == true)
        let waiter = try await fixture.raw()
        await waiter.send(#"{"v":1,"id":1,"op":"request","tags":["Rome"]}"# + "\n")
        #expect(await waiter.readResponse()?.event == .progress)
        #expect(service.totalRetains == 1)

        await fixture.server.stop()
        #expect(service.totalRetains == 0)        // released before stop() returned
        #expect(service.cancelledWaits == 1)
        #expect(fixture.server.connectionCount == 0)
        #expect(await holder.isClosedByPeer())
        #expect(await waiter.isClosedByPeer())
        #expect(access(fixture.socketPath, F_OK) != 0)
        await fixture.stop()
    }

    /// One connection cannot grow the daemon without bound (a shared mount's socket is
    /// open to every local user): at most 16 watches, and further ones are refused.
    @Test func watchesPerConnectionAreBounded() async throws {
        let fixture = try ControlFixture()
        let raw = try await fixture.raw()
        var accepted = 0
        var refused = 0
        for id in 1...20 {
            await raw.send(#"{"v":1,"id":\#(id),"op":"watch-disk"}"# + "\n")
            let reply = await raw.readReply(to: id).reply
            if reply?.ok == true { accepted += 1 } else if reply?.error?.code == .tooManyConnections { refused += 1 }
        }
        #expect(accepted == 16 && refused == 4, "accepted \(accepted), refused \(refused)")
        await fixture.stop()
    }

    @Test func laterRequestsAreAnsweredWhileADownloadWaits() async throws {
        let fixture = try ControlFixture(service: FakeControlService(stepDelay: .milliseconds(100)))
        let raw = try await fixture.raw()
        await raw.send(#"{"v":1,"id":1,"op":"request","tags":["Rome"]}"# + "\n")
        await raw.send(#"{"v":1,"id":2,"op":"priority.get","tags":["Rome"]}"# + "\n")
        var order: [Int] = []
        while order.count < 2, let response = await raw.readResponse(timeout: .seconds(10)) {
            if response.isReply, let id = response.id { order.append(id) }
        }
        #expect(order == [2, 1])   // the quick request did not queue behind the download
        await fixture.stop()
    }

    @Test func aClientThatHalfClosesStillGetsItsReplies() async throws {
        let fixture = try ControlFixture()
        let raw = try await fixture.raw()
        await raw.send(#"{"v":1,"id":1,"op":"status"}"# + "\n" + #"{"v":1,"id":2,"op":"priority.get","tags":["Italy"]}"# + "\n")
        #expect(shutdown(raw.fd, Int32(SHUT_WR)) == 0)
        #expect(await raw.readReply(to: 1).reply?.status != nil)
        #expect(await raw.readReply(to: 2).reply?.priorities == ["Italy": 0])
        #expect(await raw.isClosedByPeer())
        #expect(await eventually { fixture.server.connectionCount == 0 })
        await fixture.stop()
    }

    @Test func aSilentClientStallsNobody() async throws {
        let fixture = try ControlFixture()
        let silent = try await fixture.raw()
        await silent.send(#"{"v":1,"id":1,"op":"watch-disk"}"# + "\n")   // then never reads again
        for _ in 0..<50 { fixture.service.emitLowDiskSpace(LowDiskSpaceEvent(availableBytes: 1, minimumFree: 2)) }
        // Another client is answered at once. Measured on a thread of its own with blocking
        // calls: with async reads, a parallel run's queue on the cooperative pool would count.
        let socketPath = fixture.socketPath
        let (reply, elapsed) = await onDedicatedThread {
            blockingRoundTrip(socketPath: socketPath, line: #"{"v":1,"id":1,"op":"status"}"# + "\n", timeout: .seconds(5))
        }
        #expect(reply.map { $0.contains(#""ok":true"#) } == true, "\(reply ?? "no reply")")
        #expect(elapsed < .seconds(1))
        _ = silent
        await fixture.stop()
    }
}
