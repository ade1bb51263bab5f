import Foundation
import GRDB
import Logging
import ODRFSCore

/// The cache's durable memory, in SQLite (WAL): which verified packs are on disk,
/// when each was fetched and last used, how often, users' priority overrides, and the
/// highest manifest revision accepted per trust key (see `CacheIndex+Revisions.swift`).
///
/// The index only ever describes files that were verified and renamed into place
/// first; `PackStore.reconcile` makes index and files agree after a crash.
///
/// Durability: every commit survives a crash of the process (kill -9); what guards trust
/// (revisions), what users set (priorities) and the rows of verified packs (which would
/// cost a re-hash to relearn) survive a power cut as well, as soon as their write returns
/// (``durableAccess(_:)``). Access times and traces may lose their last seconds to one.
/// Thread-safe: GRDB's `DatabaseQueue` serializes access.
public final class CacheIndex: Sendable {
    private let database: DatabaseQueue
    public let path: String

    public init(path: String) throws(StoreError) {
        self.path = path
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            // WAL: a crash never corrupts the index. NORMAL: a commit survives the
            // process (kill -9) but not the power, its WAL frames unsynced until the next
            // checkpoint; writes that must survive both go through `durableAccess`.
            // EXTRA around the switch: a new index switches to WAL through a rollback
            // journal, and only EXTRA syncs that journal's deletion. Were a power cut to
            // bring the journal back, it would roll the switch back, truncate the file
            // and take the WAL, and all the index ever held, with it.
            try db.execute(sql: "PRAGMA synchronous = EXTRA")
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        configuration.busyMode = .timeout(5)
        // The index is its user's alone (a store's files are 0600): created so, before SQLite
        // opens it, and its -wal and -shm files take the same mode.
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 { close(fd) }
        do {
            database = try DatabaseQueue(path: path, configuration: configuration)
            try Self.migrator.migrate(database)
        } catch {
            throw StoreError(.io, "cannot open the cache index \(path): \(error)")
        }
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: CachedPack.databaseTableName) { table in
                table.primaryKey("sha256", .text)
                table.column("packID", .text).notNull()
                table.column("bytes", .integer).notNull()
                table.column("firstFetch", .datetime).notNull()
                table.column("lastAccess", .datetime)
                table.column("accessCount", .integer).notNull().defaults(to: 0)
                table.column("fileSize", .integer).notNull()
                table.column("fileModifiedNanoseconds", .integer).notNull()
                table.column("fileInode", .integer).notNull()
            }
            try db.create(table: TagPriority.databaseTableName) { table in
                table.primaryKey("tag", .text)
                table.column("priority", .double).notNull()
            }
        }
        migrator.registerMigration("v2: chunk list") { db in
            try db.alter(table: CachedPack.databaseTableName) { table in
                table.add(column: "chunkList", .text)
            }
        }
        migrator.registerMigration("v3: trusted revisions") { db in
            try db.create(table: Self.revisionTable) { table in
                table.primaryKey("keyID", .text)
                table.column("revision", .integer).notNull()
                table.column("seen", .datetime).notNull()
            }
        }
        registerTraceMigration(&migrator)
        registerStoreMigration(&migrator)
        return migrator
    }

    public func allPacks() throws(StoreError) -> [CachedPack] {
        try access { db in try CachedPack.fetchAll(db) }
    }

    /// The row of one pack, if it is recorded.
    public func pack(sha256: String) throws(StoreError) -> CachedPack? {
        try access { db in try CachedPack.fetchOne(db, key: sha256) }
    }

    /// Records a verified pack, durably: after a power cut the pack is still known and
    /// served without being hashed again.
    public func save(_ pack: CachedPack) throws(StoreError) {
        try durableAccess { db in try pack.save(db) }
    }

    public func removePack(sha256: String) throws(StoreError) {
        try access { db in _ = try CachedPack.deleteOne(db, key: sha256) }
    }

    /// Writes a batch of access times and counts in one transaction.
    public func recordAccesses(_ accesses: [(sha256: String, lastAccess: Date, count: Int64)]) throws(StoreError) {
        guard !accesses.isEmpty else { return }
        try access { db in
            for item in accesses {
                try db.execute(
                    sql: "UPDATE pack SET lastAccess = ?, accessCount = accessCount + ? WHERE sha256 = ?",
                    arguments: [item.lastAccess, item.count, item.sha256]
                )
            }
        }
    }

    public func priorityOverrides() throws(StoreError) -> [Tag: Double] {
        let rows = try access { db in try TagPriority.fetchAll(db) }
        return Dictionary(rows.map { (Tag($0.tag), $0.priority) }, uniquingKeysWith: { $1 })
    }

    /// `odrfs priority --set`, durably: a user's setting survives a power cut.
    public func setPriority(_ priority: Double?, for tag: Tag) throws(StoreError) {
        try durableAccess { db in
            if let priority {
                try TagPriority(tag: tag, priority: priority).save(db)
            } else {
                _ = try TagPriority.deleteOne(db, key: tag.name)
            }
        }
    }

    /// The queue, for the store's immediate transactions (`CacheIndex+Store.swift`).
    var databaseForStore: DatabaseQueue { database }

    /// One transaction, durable across a crash of the process (synchronous = NORMAL).
    func access<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do {
            return try database.write(body)
        } catch {
            throw StoreError(.io, "cache index \(path): \(error)")
        }
    }

    /// One transaction, on stable storage when this returns. In WAL mode SQLite's
    /// `synchronous = FULL` syncs the WAL at each commit (and with it every earlier
    /// commit), where NORMAL leaves that to the next checkpoint, so a power cut may take
    /// every commit since. One fsync per call: for rare writes that must not be lost.
    func durableAccess<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do {
            return try database.writeWithoutTransaction { db in
                // SQLite refuses to change the level inside a transaction: around it, then.
                // Should NORMAL fail to come back, the connection stays FULL: slower, as safe.
                try db.execute(sql: "PRAGMA synchronous = FULL")
                defer { try? db.execute(sql: "PRAGMA synchronous = NORMAL") }
                return try Self.inOneTransaction(db, .deferred, body)
            }
        } catch {
            throw StoreError(.io, "cache index \(path): \(error)")
        }
    }
}

extension CacheIndex {
    /// `body` in one transaction of `kind` on `db`, committed if it returns.
    static func inOneTransaction<T>(_ db: Database, _ kind: Database.TransactionKind, _ body: (Database) throws -> T) throws -> T {
        var result: T?
        try db.inTransaction(kind) {
            result = try body(db)
            return .commit
        }
        guard let result else { throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "the transaction returned nothing") }
        return result
    }
}

extension Date {
    /// This date as the cache index will give it back: the index keeps dates to the
    /// millisecond and rounds (GRDB stores them as text), so 12:00:00.9996 would come
    /// back as 12:00:01 and a pack's last access would move a second across a remount.
    /// Dates recorded at this precision survive the round trip exactly.
    public var cacheIndexPrecision: Date {
        Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded(.down) / 1000)
    }
}
