import Foundation
import ODRFSCore

/// An access trace as `odrfs build --prefetch-from` reads it: bounded parsing, then the
/// merge into a prefetch order, which must only name tags the traces carried, once each.
enum TraceTarget {
    static func run(_ data: Data) {
        guard let entries = try? AccessTrace.parse(data) else { return }
        let tags = Set(entries.filter(\.cause.isDemand).flatMap(\.tags))
        let order = AccessTrace.prefetchOrder([entries, entries])
        check(Set(order.map(\.name)) == tags, "the prefetch order names other tags than the trace's demands")
        check(order.count == Set(order).count, "the prefetch order lists a tag twice")
        check((try? AccessTrace.parse(AccessTrace.encode(entries))) == entries, "a parsed trace does not parse again once re-encoded")
    }
}
