import Foundation
import ODRFSControl
import ODRFSCore
import ODRFSFetch

extension MountEvent {
    /// An event about `pack`, its id and tags filled in.
    init(_ kind: Kind, _ pack: PackDescriptor, bytes: Int64? = nil) {
        self.init(event: kind, pack: pack.id.rawValue, tags: pack.tags.map(\.name), bytes: bytes)
    }

    /// `fetch-progress` for `pack`: `received` of its bytes so far.
    static func fetchProgress(_ pack: PackDescriptor, received: Int64) -> MountEvent {
        var event = MountEvent(.fetchProgress, pack, bytes: received)
        event.total = pack.bytes.value
        return event
    }

    /// `fetch-failed` for `pack`: the error's kind as reason, its text as message.
    static func fetchFailed(_ pack: PackDescriptor, _ error: FetchError) -> MountEvent {
        var event = MountEvent(.fetchFailed, pack, bytes: pack.bytes.value)
        event.reason = error.kind.eventName
        event.message = error.message
        return event
    }
}

extension FetchError.Kind {
    /// The kebab-case name used in `fetch-failed` events and the `kind` label of
    /// `odrfs_fetch_errors_total`.
    public var eventName: String {
        switch self {
        case .invalidOrigin: "invalid-origin"
        case .unsupported: "unsupported"
        case .unreachable: "unreachable"
        case .notFound: "not-found"
        case .unauthorized: "unauthorized"
        case .corrupt: "corrupt"
        case .noSpace: "no-space"
        case .localIO: "local-io"
        case .tooManyOpenFiles: "too-many-open-files"
        case .cancelled: "cancelled"
        }
    }
}

extension PurgeReason {
    /// The reason reported for packs this purge evicts: `odrfs purge` is manual, a pack
    /// that does not fit on disk is min-free, and pressure is cache-size when the cache
    /// was over its byte budget, else min-free.
    func evictionReason(overBudget: Bool) -> MountEvent.EvictionReason {
        switch self {
        case .requested: .manual
        case .diskFull: .minFree
        case .afterDownload, .afterRelease, .periodicCheck, .makingRoom, .manual: overBudget ? .cacheSize : .minFree
        }
    }
}
