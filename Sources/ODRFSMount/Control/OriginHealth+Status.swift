import Foundation
import ODRFSControl
import ODRFSFetch

extension MirrorEntry {
    /// The status row of one origin server.
    init(_ health: OriginHealth.Snapshot) {
        self.init(url: health.url, reachable: health.isReachable == true,
                  rttMilliseconds: health.roundTrip.map(Self.milliseconds), httpStatus: health.httpStatus,
                  error: health.error, errors: health.errorCount)
    }
}

extension StatusSnapshot {
    /// Fills `online`, `last_origin_contact` and `mirrors` from the origin's health records.
    mutating func describeOrigin(_ origin: any Origin) {
        let records = origin.health.map(\.snapshot)
        online = origin.isOnline
        lastOriginContact = records.compactMap(\.lastContact).max()
        mirrors = records.map(MirrorEntry.init)
    }
}
