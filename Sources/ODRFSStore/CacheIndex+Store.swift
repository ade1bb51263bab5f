import Foundation
import GRDB

/// The machine-wide store's shared books, in the store's index beside the packs' rows:
/// every mount's reservations for the downloads it is running, and the log of evictions
/// so that every mount learns which of its local packs another mount removed. Each check
/// and reservation is one immediate transaction, so two mounts never both find room for
/// the same bytes.
extension CacheIndex {
    static func registerStoreMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v5: store") { db in
            try db.create(table: "reservation") { table in
                table.column("mount", .text).notNull()
                table.column("sha256", .text).notNull()
                table.column("bytes", .integer).notNull()
                table.primaryKey(["mount", "sha256"])
            }
            try db.create(table: "eviction") { table in
                table.autoIncrementedPrimaryKey("seq")
                table.column("sha256", .text).notNull()
            }
        }
        migrator.registerMigration("v6: shared file copies") { db in
            try db.create(table: "filecopy") { table in
                table.primaryKey("sha256", .text)
                table.column("bytes", .integer).notNull()
                table.column("lastAccess", .datetime)
            }
        }
        migrator.registerMigration("v7: change sequence") { db in
            // Every change to a pack or copy row takes the next number of one store-wide
            // sequence (in the row, or in `removal` for a deleted row), kept by triggers so
            // that every writer, whichever process, numbers its changes; a mount's mirror of
            // the rows (StoreRows) then reads only what changed since it last looked.
            try db.execute(sql: """
                CREATE TABLE storeSequence (value INTEGER NOT NULL, prunedThrough INTEGER NOT NULL);
                INSERT INTO storeSequence (value, prunedThrough) VALUES (1, 0);
                CREATE TABLE removal (seq INTEGER PRIMARY KEY, sha256 TEXT NOT NULL, isFileCopy INTEGER NOT NULL);
                ALTER TABLE pack ADD COLUMN changeSeq INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE filecopy ADD COLUMN changeSeq INTEGER NOT NULL DEFAULT 0;
                CREATE INDEX packChange ON pack (changeSeq);
                CREATE INDEX filecopyChange ON filecopy (changeSeq);
                """)
            for (table, isFileCopy) in [("pack", 0), ("filecopy", 1)] {
                try db.execute(sql: """
                    CREATE TRIGGER \(table)Inserted AFTER INSERT ON \(table) BEGIN
                        UPDATE storeSequence SET value = value + 1;
                        UPDATE \(table) SET changeSeq = (SELECT value FROM storeSequence) WHERE rowid = NEW.rowid;
                    END;
                    CREATE TRIGGER \(table)Updated AFTER UPDATE OF sha256, bytes, lastAccess ON \(table) BEGIN
                        UPDATE storeSequence SET value = value + 1;
                        UPDATE \(table) SET changeSeq = (SELECT value FROM storeSequence) WHERE rowid = NEW.rowid;
                    END;
                    CREATE TRIGGER \(table)Deleted AFTER DELETE ON \(table) BEGIN
                        UPDATE storeSequence SET value = value + 1;
                        INSERT INTO removal (seq, sha256, isFileCopy) VALUES ((SELECT value FROM storeSequence), OLD.sha256, \(isFileCopy));
                    END;
                    """)
            }
        }
    }

    /// What changed in the store's pack and copy rows since sequence number `seq`
    /// (everything when `seq` is 0 or older than the removals kept), read in one transaction.
    public func storeChanges(since seq: Int64) throws(StoreError) -> StoreRowChanges {
        try access { db in try Self.changes(db, since: seq) }
    }

    private static func changes(_ db: Database, since seq: Int64) throws -> StoreRowChanges {
        let sequence = try Row.fetchOne(db, sql: "SELECT value, prunedThrough FROM storeSequence")
        let current: Int64 = sequence?[0] ?? 0
        let prunedThrough: Int64 = sequence?[1] ?? 0
        var changes = StoreRowChanges(sequence: current, isComplete: seq == 0 || seq < prunedThrough)
        guard current != seq || changes.isComplete else { return changes }
        let since = changes.isComplete ? -1 : seq
        for (table, isFileCopy) in [("pack", false), ("filecopy", true)] {
            let rows = try Row.fetchCursor(db, sql: "SELECT sha256, bytes, (julianday(lastAccess) - 2440587.5) * 86400.0 FROM \(table) WHERE changeSeq > ?",
                                           arguments: [since])
            while let row = try rows.next() {
                let seconds: Double? = row[2]
                changes.changed.append(StorePurgePlan.Object(sha256: row[0], bytes: row[1],
                                                             lastAccess: seconds.flatMap { $0.isFinite ? Date(timeIntervalSince1970: $0) : nil },
                                                             isFileCopy: isFileCopy))
            }
        }
        if !changes.isComplete {
            let rows = try Row.fetchCursor(db, sql: "SELECT sha256, isFileCopy FROM removal WHERE seq > ?", arguments: [seq])
            while let row = try rows.next() { changes.removed.append((row[0], row[1])) }
        }
        return changes
    }

    /// The bytes of every recorded pack and passthrough copy (each counted once).
    public func storedBytes() throws(StoreError) -> Int64 {
        try access { db in try Int64.fetchOne(db, sql: Self.storedBytesQuery) ?? 0 }
    }

    static let storedBytesQuery = "SELECT (SELECT COALESCE(SUM(bytes), 0) FROM pack) + (SELECT COALESCE(SUM(bytes), 0) FROM filecopy)"

    /// Records a passthrough copy placed in the store's `files/` (its name is the SHA-256
    /// of its bytes, computed as it was copied).
    public func recordFileCopy(sha256: String, bytes: Int64, at date: Date) throws(StoreError) {
        try access { db in
            try db.execute(sql: "INSERT OR REPLACE INTO filecopy (sha256, bytes, lastAccess) VALUES (?, ?, ?)", arguments: [sha256, bytes, date])
        }
    }

    public func removeFileCopy(sha256: String) throws(StoreError) {
        try access { db in try db.execute(sql: "DELETE FROM filecopy WHERE sha256 = ?", arguments: [sha256]) }
    }

    /// Every recorded passthrough copy: SHA-256, bytes, last access.
    public func fileCopies() throws(StoreError) -> [(sha256: String, bytes: Int64, lastAccess: Date?)] {
        try objects(in: "filecopy")
    }

    /// Every recorded pack: content hash, bytes, last access.
    public func storedPacks() throws(StoreError) -> [(sha256: String, bytes: Int64, lastAccess: Date?)] {
        try objects(in: "pack")
    }

    /// Drops the reservations of mounts not in `live` (they died: their downloads with
    /// them) and returns the bytes the live ones reserved.
    public func reservedBytes(liveMounts live: Set<String>) throws(StoreError) -> Int64 {
        try access { db in
            let mounts = try String.fetchAll(db, sql: "SELECT DISTINCT mount FROM reservation")
            for mount in mounts where !live.contains(mount) {
                try db.execute(sql: "DELETE FROM reservation WHERE mount = ?", arguments: [mount])
            }
            return try Int64.fetchOne(db, sql: "SELECT COALESCE(SUM(bytes), 0) FROM reservation") ?? 0
        }
    }

    /// Reserves `bytes` for `mount`'s download of `sha256` if `fits` says the store has room
    /// for them beside everything stored and reserved now (one immediate transaction).
    /// Returns whether it reserved.
    public func reserve(mount: String, sha256: String, bytes: Int64,
                        fits: (_ stored: Int64, _ reserved: Int64) -> Bool) throws(StoreError) -> Bool {
        try writeImmediately { db in
                let stored = try Int64.fetchOne(db, sql: Self.storedBytesQuery) ?? 0
                let reserved = try Int64.fetchOne(db, sql: "SELECT COALESCE(SUM(bytes), 0) FROM reservation") ?? 0
                guard fits(stored, reserved) else { return false }
                try db.execute(sql: "INSERT OR REPLACE INTO reservation (mount, sha256, bytes) VALUES (?, ?, ?)",
                               arguments: [mount, sha256, bytes])
                return true
        }
    }

    /// Ends `mount`'s reservation for `sha256` (its download published or failed).
    public func releaseReservation(mount: String, sha256: String) throws(StoreError) {
        try access { db in
            try db.execute(sql: "DELETE FROM reservation WHERE mount = ? AND sha256 = ?", arguments: [mount, sha256])
        }
    }

    /// Records packs removed by a store-wide purge, for the other mounts to learn of. The
    /// logs keep their newest `keeping` entries (numbers, for the removals).
    public func recordEvictions(_ hashes: [String], keeping kept: Int64 = 100_000) throws(StoreError) {
        guard !hashes.isEmpty else { return }
        try access { db in
            for hash in hashes { try db.execute(sql: "INSERT INTO eviction (sha256) VALUES (?)", arguments: [hash]) }
            // The log keeps its newest 100,000 entries: a mount further behind re-learns at its next open.
            try db.execute(sql: "DELETE FROM eviction WHERE seq <= (SELECT MAX(seq) FROM eviction) - ?", arguments: [kept])
            // So does the removals' log; a mirror further behind reads every row again.
            if let cut = try Int64.fetchOne(db, sql: "SELECT MAX(seq) - ? FROM removal", arguments: [kept]), cut > 0 {
                try db.execute(sql: "DELETE FROM removal WHERE seq <= ?", arguments: [cut])
                try db.execute(sql: "UPDATE storeSequence SET prunedThrough = MAX(prunedThrough, ?)", arguments: [cut])
            }
        }
    }

    /// Evictions after `seq` (all of them from 0), with the newest sequence number.
    public func evictions(after seq: Int64) throws(StoreError) -> (hashes: [String], last: Int64) {
        try access { db in
            let rows = try Row.fetchAll(db, sql: "SELECT seq, sha256 FROM eviction WHERE seq > ? ORDER BY seq", arguments: [seq])
            let newest = try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(seq), 0) FROM eviction") ?? 0
            let last = rows.last.map { $0["seq"] as Int64 } ?? newest
            return (rows.map { $0["sha256"] as String }, max(last, seq))
        }
    }

    /// Content hash, bytes and last access of every row of `table` (`pack` or `filecopy`),
    /// the date as seconds computed by SQLite (GRDB's text dates cost a parse each).
    private func objects(in table: String) throws(StoreError) -> [(sha256: String, bytes: Int64, lastAccess: Date?)] {
        try access { db in
            let rows = try Row.fetchCursor(db, sql: "SELECT sha256, bytes, (julianday(lastAccess) - 2440587.5) * 86400.0 FROM \(table)")
            var objects: [(sha256: String, bytes: Int64, lastAccess: Date?)] = []
            while let row = try rows.next() {
                let seconds: Double? = row[2]
                objects.append((row[0], row[1], seconds.flatMap { $0.isFinite ? Date(timeIntervalSince1970: $0) : nil }))
            }
            return objects
        }
    }

    /// The newest eviction's sequence number (0 for none).
    public func latestEviction() throws(StoreError) -> Int64 {
        try access { db in try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(seq), 0) FROM eviction") ?? 0 }
    }

    /// One immediate transaction: the write lock is taken at its start, so what it read is
    /// still true when it writes, whichever process writes beside it.
    func writeImmediately<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do {
            return try databaseForStore.writeWithoutTransaction { db in try Self.inOneTransaction(db, .immediate, body) }
        } catch {
            throw StoreError(.io, "cache index \(path): \(error)")
        }
    }
}
