import Foundation
import ODRFSCore

/// What the ``ControlServer`` asks of the mount daemon: the daemon-side API of tag
/// requests, priorities, purging and status. The mount daemon implements it over its
/// resource manager; tests implement it with a fake.
///
/// The server ties every ``RetainToken`` it gets from ``beginAccessing(tags:loadingPriority:progress:)``
/// or ``beginAccessingIfLocal(tags:)`` to the connection that asked and hands it back
/// to ``endAccessing(_:)`` exactly once: when the client ends the request, or when the
/// connection drops.
///
/// Where the methods run: never on the server's event loop. The server calls every
/// method from a task on its service executor (a small pool of threads of its own, see
/// ``ControlServer``), so a method may block briefly on a lock or on disk without
/// stalling other clients or Swift's cooperative pool; a long wait (a download) should
/// suspend rather than block.
public protocol ControlService: Sendable {
    /// A consistent snapshot of every pack and tag and of the cache.
    func status() async -> StatusSnapshot
    /// Fetches and retains every pack of `tags`; throws on failure. Pushes progress to
    /// `progress` whenever bytes arrive (the server coalesces; see ``ProgressSink``),
    /// including a first report of what is already local. Cancellation of the calling
    /// task abandons the wait (throw `.cancelled`, retain nothing); the download itself
    /// may go on for others.
    func beginAccessing(
        tags: [String], loadingPriority: LoadingPriority, progress: ProgressSink
    ) async throws(ControlError) -> RetainToken
    /// Retains and returns a token only if everything is already local; nil otherwise (never downloads).
    func beginAccessingIfLocal(tags: [String]) throws(ControlError) -> RetainToken?
    /// Drops the retains of a token returned by one of the begin methods.
    func endAccessing(_ token: RetainToken)
    /// The preservation priority (0…1) of each of `tags`.
    func preservationPriorities(tags: [String]) throws(ControlError) -> [String: Double]
    /// Sets the preservation priority of each of `tags`; on stable storage when this returns.
    func setPreservationPriority(_ value: Double, tags: [String]) async throws(ControlError)
    /// Deletes the unretained local packs of `tags` (nil: of every tag) now.
    func purge(tags: [String]?) async throws(ControlError) -> PurgeSummary
    /// A stream of low-disk-space events; each call gets its own stream, which ends
    /// when the consumer stops iterating.
    func lowDiskSpaceEvents() -> AsyncStream<LowDiskSpaceEvent>
    /// Compares the origin's manifest with the mounted revision; unless `check`, downloads
    /// what the new revision needs and switches to it (see `ControlService+Update.swift`).
    func update(check: Bool) async throws(ControlError) -> UpdateReport
    /// A new subscription to the mount's ``MountEvent``s (`watch-events`), or nil if this
    /// service publishes none. The server finishes it when the watch ends.
    func mountEvents() -> MountEventSubscription?
    /// The access traces of the newest `sessions` mount sessions, oldest first.
    func trace(sessions: Int) async throws(ControlError) -> [[TraceEntry]]
    /// Serves `preferences` from now on, with the live-update machinery (see
    /// `ControlService+Variant.swift`).
    func switchVariants(to preferences: VariantPreferences) async throws(ControlError) -> VariantReport
}

extension ControlService {
    /// Publishes no events: `watch-events` is refused.
    public func mountEvents() -> MountEventSubscription? { nil }

    /// Records no traces: `trace` is refused.
    public func trace(sessions: Int) async throws(ControlError) -> [[TraceEntry]] {
        throw ControlError(.badRequest, "this daemon records no access traces")
    }
}

/// The retains taken by one successful tag request: one per pack, by pack number.
public struct RetainToken: Sendable, Hashable {
    /// The retained packs (manifest pack numbers).
    public let packs: [UInt32]
    /// The served view (a revision with a variant selection) whose pack numbers these
    /// are: a mount that switched views since (an update, `odrfs variant`) releases them
    /// in the view that retained them.
    public let generation: Int64?

    /// A token for `packs` of view `generation`.
    public init(packs: [UInt32], generation: Int64? = nil) {
        self.packs = packs
        self.generation = generation
    }
}

/// How urgently a request wants its packs, as in `NSBundleResourceRequest.loadingPriority`.
///
/// On the wire: the string `"urgent"` or a number in 0…1.
public enum LoadingPriority: Sendable, Codable, Equatable {
    /// Ahead of everything else (a blocked open() is urgent).
    case urgent
    /// 0…1; ODR's default is 0.5.
    case value(Double)

    /// ODR's default loading priority.
    public static let `default` = LoadingPriority.value(0.5)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) {
            guard text == "urgent" else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "loadingPriority must be \"urgent\" or a number in 0…1, not \"\(text)\"")
            }
            self = .urgent
            return
        }
        let value = try container.decode(Double.self)
        guard (0...1).contains(value) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "loadingPriority must be \"urgent\" or a number in 0…1, not \(value)")
        }
        self = .value(value)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .urgent: try container.encode("urgent")
        case .value(let value): try container.encode(value)
        }
    }
}

/// What an explicit purge did.
public struct PurgeSummary: Codable, Sendable, Equatable {
    /// A pack that was deleted.
    public struct EvictedPack: Codable, Sendable, Equatable {
        /// The pack id (e.g. `Italy+Rome`).
        public var id: String
        /// Its size.
        public var bytes: Int64

        /// An evicted pack.
        public init(id: String, bytes: Int64) {
            self.id = id
            self.bytes = bytes
        }
    }

    /// Packs deleted.
    public var evicted: [EvictedPack]
    /// Ids of local packs that matched but are retained (open files, held requests): kept.
    public var kept: [String]

    /// A summary.
    public init(evicted: [EvictedPack] = [], kept: [String] = []) {
        self.evicted = evicted
        self.kept = kept
    }
}

/// Free space on the cache's filesystem fell below what the cache needs
/// (ODR's `NSBundleResourceRequestLowDiskSpaceNotification`).
public struct LowDiskSpaceEvent: Codable, Sendable, Equatable {
    /// Bytes free on the cache's filesystem.
    public var availableBytes: Int64
    /// The configured floor (`--min-free`), if any.
    public var minimumFree: Int64?

    /// An event.
    public init(availableBytes: Int64, minimumFree: Int64?) {
        self.availableBytes = availableBytes
        self.minimumFree = minimumFree
    }
}
