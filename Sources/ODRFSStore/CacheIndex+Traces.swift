import Foundation
import GRDB
import ODRFSCore

/// Access traces: per mount session, the first need of each pack (`odrfs trace`,
/// `--learn-prefetch`). Only the newest ``keptSessions`` sessions are kept.
extension CacheIndex {
    /// Sessions kept in the index; older ones are deleted when a new one begins.
    public static let keptSessions = 50

    static let sessionTable = "traceSession"
    static let entryTable = "traceEntry"

    static func registerTraceMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v4: access traces") { db in
            try db.create(table: sessionTable) { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("started", .datetime).notNull()
                table.column("bundleVersion", .text).notNull()
            }
            try db.create(table: entryTable) { table in
                table.column("session", .integer).notNull().references(sessionTable, onDelete: .cascade)
                // Order of recording within the session (ties of `seconds`).
                table.column("rank", .integer).notNull()
                table.column("pack", .text).notNull()
                // Tag names joined by "," (a tag never contains one).
                table.column("tags", .text).notNull()
                table.column("cause", .text).notNull()
                table.column("firstFile", .text)
                table.column("seconds", .double).notNull()
                table.primaryKey(["session", "rank"])
            }
        }
    }

    /// Starts a mount session and forgets the oldest beyond ``keptSessions``; returns its id.
    public func beginTraceSession(started: Date, bundleVersion: String) throws(StoreError) -> Int64 {
        try access { db in
            try db.execute(sql: "INSERT INTO \(Self.sessionTable) (started, bundleVersion) VALUES (?, ?)", arguments: [started, bundleVersion])
            let id = db.lastInsertedRowID
            let cutoff = id - Int64(Self.keptSessions)
            try db.execute(sql: "DELETE FROM \(Self.entryTable) WHERE session <= ?", arguments: [cutoff])
            try db.execute(sql: "DELETE FROM \(Self.sessionTable) WHERE id <= ?", arguments: [cutoff])
            return id
        }
    }

    /// Records first needs of `session` (`rank` orders them within it).
    public func appendTrace(session: Int64, _ entries: [(rank: Int, entry: TraceEntry)]) throws(StoreError) {
        guard !entries.isEmpty else { return }
        try access { db in
            for (rank, entry) in entries {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO \(Self.entryTable) (session, rank, pack, tags, cause, firstFile, seconds) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    arguments: [session, rank, entry.pack, entry.tags.joined(separator: ","), entry.cause.rawValue, entry.firstFile, entry.secondsSinceMount]
                )
            }
        }
    }

    /// The traces of the newest `count` sessions up to and including `through` (all
    /// sessions when nil), oldest first; each lists every pack once, at its first
    /// demand (or, if only prefetched, at its prefetch), in first-need order.
    public func traces(last count: Int, through: Int64? = nil) throws(StoreError) -> [[TraceEntry]] {
        try access { db in
            let newest = try through ?? Int64.fetchOne(db, sql: "SELECT MAX(id) FROM \(Self.sessionTable)") ?? 0
            let ids = try Int64.fetchAll(db, sql: "SELECT id FROM \(Self.sessionTable) WHERE id <= ? ORDER BY id DESC LIMIT ?",
                                         arguments: [newest, max(count, 0)]).reversed()
            return try ids.map { id in
                let rows = try Row.fetchAll(db, sql: "SELECT pack, tags, cause, firstFile, seconds FROM \(Self.entryTable) WHERE session = ? ORDER BY seconds, rank",
                                            arguments: [id])
                var entries: [TraceEntry] = []
                var position: [String: Int] = [:]
                for row in rows {
                    // Throwing decodes, not `row[...]`: GRDB's subscript traps on a value it cannot
                    // convert, and the cache's SQLite file is outside input (a damaged or edited row).
                    let tags = try row.decode(String.self, forColumn: "tags")
                    let entry = TraceEntry(pack: try row.decode(String.self, forColumn: "pack"),
                                           tags: tags.isEmpty ? [] : tags.split(separator: ",").map(String.init),
                                           cause: TraceEntry.Cause(rawValue: try row.decode(String.self, forColumn: "cause")) ?? .open,
                                           firstFile: try row.decode(String?.self, forColumn: "firstFile"),
                                           secondsSinceMount: try row.decode(Double.self, forColumn: "seconds"))
                    if let earlier = position[entry.pack] {
                        // A pack prefetched first and demanded later is listed at its demand.
                        if !entries[earlier].cause.isDemand && entry.cause.isDemand { entries[earlier] = entry }
                        continue
                    }
                    position[entry.pack] = entries.count
                    entries.append(entry)
                }
                return entries.enumerated().sorted { ($0.element.secondsSinceMount, $0.offset) < ($1.element.secondsSinceMount, $1.offset) }.map(\.element)
            }
        }
    }
}
