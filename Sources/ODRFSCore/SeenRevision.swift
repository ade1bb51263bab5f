import Foundation

/// The highest manifest revision a cache has accepted with one trust key, and when: what
/// ``ManifestTrust`` compares a new manifest with to refuse a rollback.
public struct SeenRevision: Sendable, Equatable {
    public let revision: Int64
    public let date: Date

    public init(revision: Int64, date: Date) {
        self.revision = revision
        self.date = date
    }
}
