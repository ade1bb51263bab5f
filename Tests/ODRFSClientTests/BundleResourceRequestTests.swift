import ControlTestSupport
import Foundation
import ODRFSClient
import ODRFSControl
import Testing
import TestSupport

@Suite(.timingSensitive, .timeLimit(.minutes(1))) struct BundleResourceRequestTests {
    @Test func beginAndEnd() async throws {
        let fixture = try ControlFixture()
        let request = BundleResourceRequest(tags: ["Italy"], mountpoint: fixture.mountpoint)
        #expect(request.loadingPriority == 0.5)
        try await request.beginAccessingResources()
        #expect(request.progress.fractionCompleted == 1.0)
        #expect(fixture.service.retains("Italy") == 1 && fixture.service.retains("Italy+Rome") == 1)
        request.endAccessingResources()
        #expect(await eventually { fixture.service.totalRetains == 0 })
        await fixture.stop()
    }

    @Test func progressReachesOneThroughIntermediateValues() async throws {
        // The fake download holds at half of its first pack until the test has seen an
        // intermediate fraction: sampling a free-running download missed every one of them
        // on a loaded machine.
        let service = FakeControlService()
        service.holdHalfway.withLock { $0 = true }
        let fixture = try ControlFixture(service: service)
        let request = BundleResourceRequest(tags: ["Rome"], mountpoint: fixture.mountpoint)
        request.loadingPriority = BundleResourceRequest.loadingPriorityUrgent
        let begin = Task { () -> BundleResourceRequestError? in
            do throws(BundleResourceRequestError) {
                try await request.beginAccessingResources()
                return nil
            } catch {
                return error
            }
        }
        let sawIntermediate = await eventually(.seconds(20)) {
            let fraction = request.progress.fractionCompleted
            return fraction > 0 && fraction < 1
        }
        #expect(sawIntermediate)
        service.holdHalfway.withLock { $0 = false }
        guard sawIntermediate else {
            request.progress.cancel()
            begin.cancel()
            await fixture.stop()
            return
        }
        #expect(await begin.value == nil)
        #expect(request.progress.fractionCompleted == 1.0)
        #expect(request.progress.totalUnitCount == 800)   // Rome + Italy+Rome
        request.endAccessingResources()
        await fixture.stop()
    }

    @Test func conditionalBeginNeverDownloads() async throws {
        let fixture = try ControlFixture()
        let remote = BundleResourceRequest(tags: ["Rome"], mountpoint: fixture.mountpoint)
        #expect(await remote.conditionallyBeginAccessingResources() == false)
        #expect(!fixture.service.isLocal("Rome"))
        let local = BundleResourceRequest(tags: ["Iceland"], mountpoint: fixture.mountpoint)
        #expect(await local.conditionallyBeginAccessingResources())
        #expect(fixture.service.retains("Iceland") == 1)
        local.endAccessingResources()
        #expect(await eventually { fixture.service.totalRetains == 0 })
        await fixture.stop()
    }

    @Test func cancelStopsASlowRequest() async throws {
        // 10 s a pack uncancelled (10 steps of 1 s): the 5 s bound below shows the cancel,
        // with room for a loaded machine.
        let fixture = try ControlFixture(service: FakeControlService(stepDelay: .seconds(1)))
        let request = BundleResourceRequest(tags: ["Italy"], mountpoint: fixture.mountpoint)
        let begin = Task { () -> BundleResourceRequestError? in
            do throws(BundleResourceRequestError) {
                try await request.beginAccessingResources()
                return nil
            } catch {
                return error
            }
        }
        #expect(await eventually(.seconds(20)) { request.progress.totalUnitCount > 0 })
        let started = ContinuousClock.now
        request.progress.cancel()
        let outcome = await begin.value
        #expect(outcome == BundleResourceRequestError.cancelled)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(await eventually { fixture.service.cancelledWaits == 1 })
        #expect(fixture.service.totalRetains == 0)
        await fixture.stop()
    }

    @Test func pauseStopsWaitingAndResumeFinishes() async throws {
        let fixture = try ControlFixture(service: FakeControlService(stepDelay: .milliseconds(50)))
        let request = BundleResourceRequest(tags: ["Rome"], mountpoint: fixture.mountpoint)
        let begin = Task { try await request.beginAccessingResources() }
        #expect(await eventually(.seconds(20)) { request.progress.totalUnitCount > 0 })
        request.progress.pause()
        #expect(await eventually { fixture.service.cancelledWaits == 1 })
        request.progress.resume()
        try await begin.value
        #expect(request.progress.fractionCompleted == 1.0)
        #expect(fixture.service.retains("Rome") == 1)
        request.endAccessingResources()
        await fixture.stop()
    }

    @Test func aResumeRightAfterAPauseStillFinishes() async throws {
        // The resume comes before the daemon's `cancelled` reply to the paused wait: that
        // reply must mean "wait again", not "the request was cancelled".
        let fixture = try ControlFixture(service: FakeControlService(stepDelay: .milliseconds(50)))
        let request = BundleResourceRequest(tags: ["Rome"], mountpoint: fixture.mountpoint)
        let begin = Task { try await request.beginAccessingResources() }
        #expect(await eventually(.seconds(20)) { request.progress.totalUnitCount > 0 })
        request.progress.pause()
        request.progress.resume()
        try await begin.value
        #expect(fixture.service.retains("Rome") == 1)
        request.endAccessingResources()
        await fixture.stop()
    }

    @Test func errorsMapToODRCodes() async throws {
        let fixture = try ControlFixture(service: FakeControlService(maximumInUse: 10_000))
        do {
            try await BundleResourceRequest(tags: ["Nowhere"], mountpoint: fixture.mountpoint).beginAccessingResources()
            Issue.record("unknown tag accepted")
        } catch {
            guard case .invalidTag(let message) = error else { Issue.record("\(error)"); return }
            #expect(message.contains("Nowhere"))
            #expect(error.odrCode == 4994)
        }
        await #expect(throws: BundleResourceRequestError.self) {
            try await BundleResourceRequest(tags: ["Huge"], mountpoint: fixture.mountpoint).beginAccessingResources()
        }
        do {
            try await BundleResourceRequest(tags: ["Huge"], mountpoint: fixture.mountpoint).beginAccessingResources()
        } catch {
            #expect(error.odrCode == 4993)
        }
        fixture.service.failure.withLock { $0 = ControlError(.originUnreachable, "origin down") }
        do {
            try await BundleResourceRequest(tags: ["Rome"], mountpoint: fixture.mountpoint).beginAccessingResources()
        } catch {
            #expect(error == .originUnreachable("origin down"))
        }
        #expect(fixture.service.totalRetains == 0)
        await fixture.stop()
    }

    @Test func secondBeginIsRefused() async throws {
        let fixture = try ControlFixture()
        let request = BundleResourceRequest(tags: ["Iceland"], mountpoint: fixture.mountpoint)
        try await request.beginAccessingResources()
        await #expect(throws: BundleResourceRequestError.alreadyBegun) { try await request.beginAccessingResources() }
        #expect(await request.conditionallyBeginAccessingResources() == false)
        #expect(fixture.service.retains("Iceland") == 1)
        request.endAccessingResources()
        await fixture.stop()
    }

    @Test func deinitReleases() async throws {
        let fixture = try ControlFixture()
        var request: BundleResourceRequest? = BundleResourceRequest(tags: ["Iceland"], mountpoint: fixture.mountpoint)
        try await request?.beginAccessingResources()
        #expect(fixture.service.retains("Iceland") == 1)
        request = nil
        #expect(await eventually { fixture.service.totalRetains == 0 })
        await fixture.stop()
    }

    @Test func completionHandlerForm() async throws {
        let fixture = try ControlFixture()
        let request = BundleResourceRequest(tags: ["Iceland"], mountpoint: fixture.mountpoint)
        let error: (any Error)? = await withCheckedContinuation { continuation in
            request.beginAccessingResources { continuation.resume(returning: $0) }
        }
        #expect(error == nil)
        request.endAccessingResources()
        await fixture.stop()
    }

    @Test func preservationPrioritiesAndDiskEvents() async throws {
        let fixture = try ControlFixture()
        #expect(try await BundleResourceRequest.preservationPriority(forTag: "Italy", mountpoint: fixture.mountpoint) == 0)
        try await BundleResourceRequest.setPreservationPriority(0.8, forTags: ["Italy"], mountpoint: fixture.mountpoint)
        #expect(try await BundleResourceRequest.preservationPriority(forTag: "Italy", mountpoint: fixture.mountpoint) == 0.8)
        let events = BundleResourceRequest.lowDiskSpaceEvents(mountpoint: fixture.mountpoint)
        let first = Task { try await events.first { _ in true } }
        // Bounded: if the watch never arrives, awaiting `first` would wait for ever (a time
        // limit does not cancel an unstructured task), and the whole test process with it.
        let watching = await eventually(.seconds(20)) { fixture.service.watcherCount == 1 }
        #expect(watching)
        guard watching else {
            first.cancel()
            await fixture.stop()
            return
        }
        fixture.service.emitLowDiskSpace(LowDiskSpaceEvent(availableBytes: 7, minimumFree: 10))
        #expect(try await first.value?.availableBytes == 7)
        await fixture.stop()
    }

    @Test func mountEventsReachSubscribersAndStopWithThem() async throws {
        let fixture = try ControlFixture()
        let mountpoint = fixture.mountpoint
        // The stream lives only in the task: once `first` returns, nothing holds it.
        let first = Task { try await BundleResourceRequest.mountEvents(mountpoint: mountpoint).first { $0.event == .evicted } }
        // Bounded, as above: a subscription that never arrives must fail the test, not hang it.
        let observed = await eventually(.seconds(20)) { fixture.service.events.isObserved }
        #expect(observed)
        guard observed else {
            first.cancel()
            await fixture.stop()
            return
        }
        fixture.service.events.publish(MountEvent(event: .retained, pack: "Italy", tags: ["Italy"], bytes: 2_000))
        var evicted = MountEvent(event: .evicted, pack: "Rome", tags: ["Rome"], bytes: 300)
        evicted.reason = MountEvent.EvictionReason.minFree.rawValue
        fixture.service.events.publish(evicted)
        let received = try await first.value
        #expect(received?.pack == "Rome" && received?.reason == "min-free")
        // The consumer stopped iterating: the daemon's subscription ends.
        #expect(await eventually { !fixture.service.events.isObserved })
        await fixture.stop()
    }

    @Test func requestsOfAProcessShareOneConnection() async throws {
        let fixture = try ControlFixture()
        let requests = ["Iceland", "Italy", "Rome"].map { BundleResourceRequest(tags: [$0], mountpoint: fixture.mountpoint) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for request in requests { group.addTask { try await request.beginAccessingResources() } }
            try await group.waitForAll()
        }
        #expect(try await BundleResourceRequest.preservationPriority(forTag: "Italy", mountpoint: fixture.mountpoint) == 0)
        #expect(fixture.server.connectionCount == 1)
        #expect(fixture.service.retains("Italy+Rome") == 2)
        // Ending one request releases its retains only: the connection (and the others) stay.
        requests[1].endAccessingResources()
        #expect(await eventually { fixture.service.retains("Italy") == 0 })
        #expect(fixture.service.retains("Iceland") == 1 && fixture.service.retains("Rome") == 1)
        #expect(fixture.server.connectionCount == 1)
        requests[0].endAccessingResources()
        requests[2].endAccessingResources()
        #expect(await eventually { fixture.service.totalRetains == 0 })
        await fixture.stop()
    }

    @Test func theSharedConnectionIsRemadeAfterTheDaemonRestarts() async throws {
        let fixture = try ControlFixture()
        let before = BundleResourceRequest(tags: ["Iceland"], mountpoint: fixture.mountpoint)
        try await before.beginAccessingResources()
        await fixture.server.stop()   // the daemon goes away: its retains with it
        #expect(fixture.service.totalRetains == 0)
        let restarted = ControlServer(socketPath: fixture.socketPath, service: fixture.service, logger: .init(label: "test"))
        try restarted.start()
        let after = BundleResourceRequest(tags: ["Rome"], mountpoint: fixture.mountpoint)
        try await after.beginAccessingResources()
        #expect(fixture.service.retains("Rome") == 1)
        #expect(restarted.connectionCount == 1)
        before.endAccessingResources()   // its daemon is gone: nothing to release, no harm
        after.endAccessingResources()
        #expect(await eventually { fixture.service.totalRetains == 0 })
        await restarted.stop()
        await fixture.stop()
    }

    @Test func noDaemonIsAClearError() async throws {
        let request = BundleResourceRequest(tags: ["Italy"], mountpoint: "/nonexistent/mount")
        do {
            try await request.beginAccessingResources()
        } catch {
            guard case .daemonUnavailable(let message) = error else { Issue.record("\(error)"); return }
            #expect(message.contains("not an ODRFS mount"))
        }
    }
}
