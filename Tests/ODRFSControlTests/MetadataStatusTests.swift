import Foundation
@testable import ODRFSControl
import Testing

/// `odrfs status` shows the pinned file indexes and manifest inside `cachedBytes`, as an
/// additive `metadataBytes`, and says when they alone exceed the budget.
@Suite struct MetadataStatusTests {
    static func snapshot(metadataBytes: Int64?, budget: Int64? = nil, overBudget: Bool = false) -> StatusSnapshot {
        StatusSnapshot(packs: [.init(id: "base", tags: [], bytes: 4096, state: .downloaded)], tagPriorities: [],
                       cache: .init(cachedBytes: 4096 + (metadataBytes ?? 0), budget: budget, maximumInUse: 100,
                                    isOverBudget: overBudget, metadataBytes: metadataBytes))
    }

    @Test func tableAndJSONCarryTheMetadataBytes() throws {
        let snapshot = Self.snapshot(metadataBytes: 900, budget: 10_000)
        let cacheLine = try #require(snapshot.renderTable().split(separator: "\n").last)
        #expect(cacheLine.hasPrefix("cache: 4996 bytes cached, 0 reserved, 900 pinned in file indexes and manifest, budget 10000"), "\(cacheLine)")
        let json = try JSONEncoder().encode(snapshot)
        #expect(String(decoding: json, as: UTF8.self).contains("\"metadataBytes\":900"))
        #expect(try JSONDecoder().decode(StatusSnapshot.self, from: json) == snapshot)
    }

    @Test func overBudgetSaysWhetherMetadataAloneExceedsIt() throws {
        let pinned = Self.snapshot(metadataBytes: 5_000, budget: 3_000, overBudget: true).renderTable()
        #expect(pinned.contains("OVER BUDGET (file indexes and manifest alone exceed it; only retained packs are kept)"), "\(pinned)")
        let retained = Self.snapshot(metadataBytes: 500, budget: 3_000, overBudget: true).renderTable()
        #expect(retained.contains("OVER BUDGET (retained packs cannot be purged)"), "\(retained)")
    }

    @Test func aSnapshotFromAnOlderDaemonStillDecodes() throws {
        let json = try JSONEncoder().encode(Self.snapshot(metadataBytes: nil))
        #expect(!String(decoding: json, as: UTF8.self).contains("metadataBytes"))
        let decoded = try JSONDecoder().decode(StatusSnapshot.self, from: json)
        #expect(decoded.cache.metadataBytes == nil)
        #expect(!decoded.renderTable().contains("pinned"))
    }
}
