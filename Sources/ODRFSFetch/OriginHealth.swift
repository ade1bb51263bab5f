import Foundation
import Synchronization

/// What a mount knows about one origin's health: whether it answered the last time it was
/// asked, how fast, and when it last answered at all.
///
/// An HTTP origin records every response head (any status: the server was reached) and
/// every failure to connect (refused, no route, DNS, connect timeout); status, the
/// background probe and `odrfs probe` read it. Only memory is guarded, never I/O.
public final class OriginHealth: Sendable {
    /// One reading of the record.
    public struct Snapshot: Sendable, Equatable {
        /// The origin as shown to users (no credentials, no query).
        public var url: String
        /// Whether the origin answered last time; nil before the first contact.
        public var isReachable: Bool?
        /// Time from sending the last request to its response head.
        public var roundTrip: Duration?
        /// The status of the last response.
        public var httpStatus: Int?
        /// Why the last request failed, if it did.
        public var error: String?
        /// When the origin last answered (possibly in an earlier mount: see ``OriginHealth/init(url:lastContact:)``).
        public var lastContact: Date?
        /// Failed downloads since the last one that completed.
        public var failuresInARow: Int
        /// Failed requests since the mount started (unreachable, 5xx, corrupt bytes).
        public var errorCount: Int
    }

    private let state: Mutex<Snapshot>

    /// - Parameter lastContact: the last answer known from before, e.g. when the cached
    ///   manifest was saved, so an offline mount can say how old its view is.
    public init(url: String, lastContact: Date? = nil) {
        state = Mutex(Snapshot(url: url, isReachable: nil, roundTrip: nil, httpStatus: nil, error: nil,
                               lastContact: lastContact, failuresInARow: 0, errorCount: 0))
    }

    /// The current reading.
    public var snapshot: Snapshot { state.withLock { $0 } }

    /// False only once a request failed to reach the origin and none has reached it since.
    public var isOnline: Bool { state.withLock { $0.isReachable != false } }

    /// The origin answered a request with `status` after `roundTrip`. 5xx counts as an
    /// error but the origin is reachable.
    public func recordResponse(status: Int, roundTrip: Duration, at now: Date = Date()) {
        state.withLock { record in
            record.isReachable = true
            record.roundTrip = roundTrip
            record.httpStatus = status
            record.lastContact = now
            if status >= 500 {
                record.error = "HTTP \(status)"
                record.errorCount += 1
            } else {
                record.error = nil
            }
        }
    }

    /// A request could not reach the origin at all.
    public func recordUnreachable(_ reason: String) {
        state.withLock { record in
            record.isReachable = false
            record.httpStatus = nil
            record.error = reason
            record.failuresInARow += 1
            record.errorCount += 1
        }
    }

    /// A download from this server finished: its run of failures is over.
    public func recordCompleted() {
        state.withLock { record in
            record.failuresInARow = 0
            record.error = nil
        }
    }

    /// A download from this server failed although it answered (stalled, 404, bad bytes):
    /// it counts against it when servers are ranked.
    public func recordFailure(_ reason: String) {
        state.withLock { record in
            record.error = reason
            record.failuresInARow += 1
            record.errorCount += 1
        }
    }

    /// The origin was reached but what it sent was wrong (a stalled body, bad bytes).
    public func recordError(_ reason: String) {
        state.withLock { record in
            record.error = reason
            record.errorCount += 1
        }
    }

    /// Sets the last contact from an earlier mount if none is known yet.
    public func seedLastContact(_ date: Date) {
        state.withLock { record in
            if record.lastContact == nil { record.lastContact = date }
        }
    }
}
