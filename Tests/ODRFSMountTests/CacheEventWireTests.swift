import Foundation
import ODRFSControl
import ODRFSCore
import ODRFSFetch
@testable import ODRFSMount
import TestSupport
import Testing

/// The one conversion of the Mount's events into the control plane's wire events: each
/// kind encodes exactly as the wire event the resources layer used to build itself.
@Suite("CacheEvent wire form")
struct CacheEventWireTests {
    let bundle = SyntheticBundle(packContents: [
        (.base, SyntheticBundle.bytes(10, seed: 0)),
        (PackID("Level1+Level2"), SyntheticBundle.bytes(5_000, seed: 1)),
    ])
    let time = Date(timeIntervalSince1970: 1_795_428_000.125)

    /// The wire event as it used to be made from a pack: id, tags, bytes.
    func wire(_ kind: MountEvent.Kind, bytes: Int64?) -> MountEvent {
        MountEvent(time: time, event: kind, pack: "Level1+Level2", tags: ["Level1", "Level2"], bytes: bytes)
    }

    func line(_ event: MountEvent) -> String { String(decoding: event.jsonLine, as: UTF8.self) }

    @Test("every kind encodes byte for byte as before")
    func everyKind() {
        let pack = bundle.manifest.packs[1]
        let error = FetchError(.unreachable, "connection refused")
        var progress = wire(.fetchProgress, bytes: 4_096)
        progress.total = 5_000
        var failed = wire(.fetchFailed, bytes: 5_000)
        failed.reason = "unreachable"
        failed.message = error.message
        var evicted = MountEvent(time: time, event: .evicted, pack: "Old (older bundle version)", tags: [], bytes: 123)
        evicted.reason = "update"
        evicted.rule = "older bundle version first"
        let cases: [(CacheEvent.What, MountEvent)] = [
            (.fetchStarted(pack), wire(.fetchStarted, bytes: 5_000)),
            (.fetchProgress(pack, received: 4_096), progress),
            (.fetchFinished(pack), wire(.fetchFinished, bytes: 5_000)),
            (.fetchFailed(pack, error), failed),
            (.retained(pack), wire(.retained, bytes: 5_000)),
            (.released(pack), wire(.released, bytes: 5_000)),
            (.evicted(CacheEvent.Eviction(pack: "Old (older bundle version)", tags: [], bytes: 123, reason: .update,
                                          rule: "older bundle version first")), evicted),
            (.lowDiskSpace(availableBytes: 77), MountEvent(time: time, event: .lowDiskSpace, bytes: 77)),
        ]
        for (what, expected) in cases {
            let converted = MountEvent(CacheEvent(what, time: time))
            #expect(converted == expected)
            #expect(line(converted) == line(expected))
        }
        #expect(line(wire(.retained, bytes: 5_000))
                == #"{"bytes":5000,"event":"retained","pack":"Level1+Level2","tags":["Level1","Level2"],"time":"2026-11-23T10:00:00.125Z"}"#)
    }

    @Test("eviction reasons keep their wire names and metric labels")
    func evictionReasons() {
        #expect(CacheEvent.EvictionReason.allCases.map(\.rawValue) == MountEvent.EvictionReason.allCases.map(\.rawValue))
        for reason in CacheEvent.EvictionReason.allCases {
            #expect(MountEvent.EvictionReason(reason).rawValue == reason.rawValue)
        }
    }

    @Test("a subscription receives the converted events and stops observing when finished")
    func subscription() async {
        let hub = CacheEvents()
        let subscription = hub.subscribe()
        #expect(hub.isObserved)
        hub.publish(CacheEvent(.retained(bundle.manifest.packs[1]), time: time))
        let received = await subscription.next()
        #expect(received == wire(.retained, bytes: 5_000))
        subscription.finish()
        #expect(!hub.isObserved)
    }
}
