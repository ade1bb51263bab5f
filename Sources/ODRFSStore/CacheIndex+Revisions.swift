import Foundation
import GRDB
import ODRFSCore

/// The cache's memory against rollbacks: for each trust key, the highest manifest
/// revision a mount with `--trust-key` accepted, and when. In the SQLite index (WAL, locked
/// to one mount) rather than a file of its own; written with ``CacheIndex/durableAccess(_:)``,
/// so that a power cut cannot forget it and let an origin roll the mount back.
extension CacheIndex {
    static let revisionTable = "trustedRevision"

    /// Every key's highest accepted revision. Rows that do not parse (a damaged index) are
    /// skipped; that can only weaken, never fake, the rollback check of those keys.
    public func seenRevisions() throws(StoreError) -> [KeyID: SeenRevision] {
        let rows = try access { db in
            try Row.fetchAll(db, sql: "SELECT keyID, revision, seen FROM \(Self.revisionTable)")
        }
        var result: [KeyID: SeenRevision] = [:]
        for row in rows {
            // fromDatabaseValue: nil for a value of the wrong type, where a typed subscript traps.
            guard let key = String.fromDatabaseValue(row[0] as DatabaseValue).flatMap({ KeyID(hex: $0) }),
                  let revision = Int64.fromDatabaseValue(row[1] as DatabaseValue),
                  let seen = Date.fromDatabaseValue(row[2] as DatabaseValue) else { continue }
            result[key] = SeenRevision(revision: revision, date: seen)
        }
        return result
    }

    /// Records that `revision` was accepted with `key` at `date`, unless a higher one was
    /// already (an equal one keeps its first date: the message says when it was first seen).
    /// On stable storage when this returns.
    public func recordRevision(_ revision: Int64, key: KeyID, at date: Date) throws(StoreError) {
        try durableAccess { db in
            try db.execute(
                sql: """
                    INSERT INTO \(Self.revisionTable) (keyID, revision, seen) VALUES (?, ?, ?)
                    ON CONFLICT(keyID) DO UPDATE SET revision = excluded.revision, seen = excluded.seen
                    WHERE excluded.revision > \(Self.revisionTable).revision
                    """,
                arguments: [key.hex, revision, date])
        }
    }
}
