import Foundation
@testable import ODRFSControl
import Testing

/// `odrfs status` shows the bytes fetched on the wire (compressed packs travel smaller than
/// the uncompressed sizes every other figure counts) without renaming anything.
@Suite struct WireBytesStatusTests {
    static func snapshot(wireBytes: Int64?) -> StatusSnapshot {
        StatusSnapshot(packs: [.init(id: "base", tags: [], bytes: 4096, state: .downloaded)], tagPriorities: [],
                       cache: .init(cachedBytes: 4096, maximumInUse: 100, wireBytes: wireBytes))
    }

    @Test func tableAndJSONCarryTheWireBytes() throws {
        let snapshot = Self.snapshot(wireBytes: 1234)
        let cacheLine = try #require(snapshot.renderTable().split(separator: "\n").last)
        #expect(cacheLine.hasPrefix("cache: 4096 bytes cached"), "existing figures keep their place")
        #expect(cacheLine.hasSuffix(", fetched 1234 bytes on the wire"), "\(cacheLine)")
        let json = try JSONEncoder().encode(snapshot)
        #expect(String(decoding: json, as: UTF8.self).contains("\"wireBytes\":1234"))
        #expect(try JSONDecoder().decode(StatusSnapshot.self, from: json) == snapshot)
    }

    @Test func aSnapshotFromAnOlderDaemonStillDecodes() throws {
        let old = Self.snapshot(wireBytes: nil)
        let json = try JSONEncoder().encode(old)
        #expect(!String(decoding: json, as: UTF8.self).contains("wireBytes"))
        let decoded = try JSONDecoder().decode(StatusSnapshot.self, from: json)
        #expect(decoded.cache.wireBytes == nil)
        #expect(!decoded.renderTable().contains("on the wire"))
    }
}
