import ControlTestSupport
import Foundation
@testable import ODRFSControl
import Testing

/// The event hub, its bounded per-subscriber queues and the `watch-events` operation.
@Suite("Mount events")
struct MountEventTests {
    private func progress(_ pack: String, _ bytes: Int64) -> MountEvent {
        MountEvent(event: .fetchProgress, pack: pack, tags: [pack], bytes: bytes)
    }

    @Test("the JSON form has the contract's field names, event names and millisecond UTC time")
    func jsonForm() throws {
        var event = MountEvent(time: Date(timeIntervalSince1970: 1_795_428_000.125), event: .evicted, pack: "Level1", tags: ["Level1"], bytes: 123)
        event.reason = MountEvent.EvictionReason.cacheSize.rawValue
        let object = try #require(try JSONSerialization.jsonObject(with: event.jsonLine) as? [String: Any])
        #expect(object["time"] as? String == "2026-11-23T10:00:00.125Z")
        #expect(object["event"] as? String == "evicted")
        #expect(object["pack"] as? String == "Level1")
        #expect(object["tags"] as? [String] == ["Level1"])
        #expect(object["bytes"] as? Int == 123)
        #expect(object["reason"] as? String == "cache-size")
        #expect(!String(decoding: event.jsonLine, as: UTF8.self).contains("\n"))
        #expect(try ControlProtocol.makeDecoder().decode(MountEvent.self, from: event.jsonLine) == event)
        #expect(MountEvent.Kind.allCases.map(\.rawValue) == [
            "fetch-started", "fetch-progress", "fetch-finished", "fetch-failed", "evicted", "retained", "released", "low-disk-space",
        ])
        #expect(MountEvent.EvictionReason.allCases.map(\.rawValue) == ["cache-size", "min-free", "manual", "update"])
    }

    @Test("progress of one pack is coalesced to the latest; other events keep their order")
    func progressCoalesces() async {
        let hub = MountEvents()
        let subscription = hub.subscribe(capacity: 16)
        hub.publish(MountEvent(event: .fetchStarted, pack: "A"))
        for bytes in 1...100 { hub.publish(progress("A", Int64(bytes))) }
        hub.publish(progress("B", 5))
        hub.publish(MountEvent(event: .fetchFinished, pack: "A"))
        var seen: [MountEvent] = []
        for _ in 0..<4 { if let event = await subscription.next() { seen.append(event) } }
        #expect(seen.map(\.event) == [.fetchStarted, .fetchProgress, .fetchProgress, .fetchFinished])
        #expect(seen[1].pack == "A" && seen[1].bytes == 100, "the latest progress of A replaced the others")
        #expect(subscription.droppedCount == 0)
    }

    @Test("a full queue drops progress first, then the oldest events, and never blocks the publisher")
    func fullQueueDrops() async {
        let hub = MountEvents()
        let subscription = hub.subscribe(capacity: 3)
        hub.publish(progress("A", 1))
        hub.publish(MountEvent(event: .retained, pack: "A"))
        hub.publish(MountEvent(event: .released, pack: "A"))
        hub.publish(MountEvent(event: .evicted, pack: "A"))   // full: A's progress goes
        hub.publish(MountEvent(event: .evicted, pack: "B"))   // full, no progress left: the oldest goes
        hub.publish(progress("C", 1))                          // full: a new progress is dropped
        var seen: [String] = []
        for _ in 0..<3 { if let event = await subscription.next() { seen.append("\(event.event.rawValue) \(event.pack ?? "")") } }
        #expect(seen == ["released A", "evicted A", "evicted B"])
        #expect(subscription.droppedCount == 3)
        // Publishing to a subscriber that never reads is bounded work.
        let clock = ContinuousClock()
        let elapsed = clock.measure { for bytes in 0..<50_000 { hub.publish(MountEvent(event: .retained, pack: "P\(bytes)")) } }
        #expect(elapsed < .seconds(5))
    }

    @Test("finishing wakes a waiting reader with nil and unsubscribes from the hub")
    func finishUnsubscribes() async {
        let hub = MountEvents()
        let subscription = hub.subscribe()
        #expect(hub.isObserved)
        let reader = Task { await subscription.next() }
        try? await Task.sleep(for: .milliseconds(20))
        subscription.finish()
        #expect(await reader.value == nil)
        #expect(!hub.isObserved)
        let cancelled = hub.subscribe()
        let waiting = Task { await cancelled.next() }
        waiting.cancel()
        #expect(await waiting.value == nil)
        #expect(!hub.isObserved, "a cancelled reader ends its subscription")
    }

    @Test("watch-events streams the hub's events to the client until end")
    func watchEventsOverTheSocket() async throws {
        let fixture = try ControlFixture()
        let raw = try await fixture.raw()
        await raw.send(#"{"v":1,"id":1,"op":"watch-events"}"# + "\n")
        #expect(await raw.readResponse()?.ok == true)
        #expect(await eventually { fixture.service.events.isObserved })
        var evicted = MountEvent(event: .evicted, pack: "Italy", tags: ["Italy"], bytes: 2_000)
        evicted.reason = "manual"
        fixture.service.events.publish(evicted)
        let event = await raw.readResponse()
        #expect(event?.event == .mount)
        #expect(event?.mount?.event == .evicted && event?.mount?.reason == "manual" && event?.mount?.pack == "Italy")
        await raw.send(#"{"v":1,"id":2,"op":"end","request":1}"# + "\n")
        #expect(await raw.readReply(to: 2).reply?.ok == true)
        #expect(await eventually { !fixture.service.events.isObserved }, "end did not unsubscribe")
        await fixture.stop()
    }

    @Test("a client that stops reading is neither disconnected nor a drag on publishing")
    func slowReader() async throws {
        let fixture = try ControlFixture()
        let raw = try await fixture.raw()
        await raw.send(#"{"v":1,"id":1,"op":"watch-events"}"# + "\n")
        #expect(await raw.readResponse()?.ok == true)
        #expect(await eventually { fixture.service.events.isObserved })
        var big = MountEvent(event: .fetchFailed, pack: "Italy", tags: ["Italy"], bytes: 1)
        big.message = String(repeating: "x", count: 60_000)
        let clock = ContinuousClock()
        // ~24 MiB of events, three times the server's outbound limit, never read.
        let elapsed = clock.measure { for _ in 0..<400 { fixture.service.events.publish(big) } }
        #expect(elapsed < .seconds(5))
        try await Task.sleep(for: .milliseconds(300))
        #expect(fixture.server.connectionCount == 1, "the slow events client was disconnected")
        // It can still be answered: the events never filled its outbound buffer.
        await raw.send(#"{"v":1,"id":2,"op":"status"}"# + "\n")
        try await Task.sleep(for: .milliseconds(300))
        #expect(fixture.server.connectionCount == 1, "a reply to the slow events client overflowed its buffer")
        _ = raw
        await fixture.stop()
    }
}
