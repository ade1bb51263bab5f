import Foundation
import GRDB
import ODRFSCore
import ODRFSStore
import TestSupport
import Testing

/// Access traces in the cache index: one row per first need, read back per session.
@Suite("Access traces in the cache index")
struct TraceIndexTests {
    private func entry(_ pack: String, _ cause: TraceEntry.Cause, at seconds: Double) -> TraceEntry {
        TraceEntry(pack: pack, tags: [pack], cause: cause, firstFile: cause == .open ? pack + "/a" : nil, secondsSinceMount: seconds)
    }

    @Test("sessions read back in first-need order, a prefetched pack listed at its later demand")
    func readBack() throws {
        let directory = try TemporaryDirectory()
        let index = try CacheIndex(path: directory.path + "/index.sqlite")
        let first = try index.beginTraceSession(started: Date(), bundleVersion: "v")
        // Written out of order (the I/O executor may reorder) and with a prefetch first.
        try index.appendTrace(session: first, [(2, entry("C", .open, at: 0.3)), (0, entry("B", .prefetch, at: 0.1))])
        try index.appendTrace(session: first, [(1, entry("A", .open, at: 0.2)), (3, entry("B", .open, at: 0.4)), (4, entry("D", .prefetch, at: 0.5))])
        let second = try index.beginTraceSession(started: Date(), bundleVersion: "v")
        try index.appendTrace(session: second, [(0, entry("D", .request, at: 0.05))])

        let current = try index.traces(last: 1)
        #expect(current.map { $0.map(\.pack) } == [["D"]])
        let both = try index.traces(last: 2)
        #expect(both.map { $0.map(\.pack) } == [["A", "C", "B", "D"], ["D"]])
        #expect(both[0].map(\.cause) == [.open, .open, .open, .prefetch])
        #expect(both[0][0].firstFile == "A/a" && both[0][3].firstFile == nil)
        #expect(try index.traces(last: 5, through: first).map(\.count) == [4], "through: limits to older sessions")
    }

    @Test("only the newest sessions are kept")
    func pruning() throws {
        let directory = try TemporaryDirectory()
        let index = try CacheIndex(path: directory.path + "/index.sqlite")
        for number in 0..<(CacheIndex.keptSessions + 5) {
            let session = try index.beginTraceSession(started: Date(), bundleVersion: "v")
            try index.appendTrace(session: session, [(0, entry("P\(number)", .open, at: 0))])
        }
        let all = try index.traces(last: 1000)
        #expect(all.count == CacheIndex.keptSessions)
        #expect(all.first?.first?.pack == "P5" && all.last?.first?.pack == "P\(CacheIndex.keptSessions + 4)")
    }

    // GRDB's `row["seconds"]` is a `try!`: a value it cannot convert (text in a REAL column,
    // which SQLite keeps as text) trapped the daemon at `--learn-prefetch` or `odrfs trace`.
    @Test("a damaged trace row is an error, never a crash", arguments: [
        "seconds = 'soon'", "pack = x'ff00'", "cause = x'fffe'",
    ])
    func damagedRow(damage: String) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/index.sqlite"
        let index = try CacheIndex(path: path)
        let session = try index.beginTraceSession(started: Date(), bundleVersion: "v")
        try index.appendTrace(session: session, [(0, entry("A", .open, at: 0.1))])
        let damaging = try DatabaseQueue(path: path)
        try damaging.write { try $0.execute(sql: "UPDATE traceEntry SET \(damage)") }
        try damaging.close()
        #expect(throws: StoreError.self) { try index.traces(last: 1) }
    }
}
