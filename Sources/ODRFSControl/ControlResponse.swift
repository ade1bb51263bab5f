import ODRFSCore

/// One daemon → client message: the reply to a request (`ok` set) or an event for a
/// request in progress or a watch (`event` set). Fields an operation does not use
/// are absent.
public struct ControlResponse: Codable, Sendable, Equatable {
    /// The kinds of events.
    public enum Event: String, Codable, Sendable {
        /// `completed`/`total` bytes of a `request` in flight.
        case progress
        /// `availableBytes`/`minimumFree` for a `watch-disk`.
        case lowDiskSpace = "low-disk-space"
        /// A ``MountEvent`` (in `mount`) for a `watch-events`.
        case mount
    }

    /// The protocol version (1).
    public var v: Int
    /// The request this answers; nil when the daemon could not tell (malformed message,
    /// permission denied).
    public var id: Int?
    /// Set on replies: whether the request succeeded.
    public var ok: Bool?
    /// Set on failed replies.
    public var error: ControlError?
    /// Set on events.
    public var event: Event?
    /// Progress events: bytes done.
    public var completed: Int64?
    /// Progress events: bytes needed.
    public var total: Int64?
    /// Low-disk-space events: bytes free.
    public var availableBytes: Int64?
    /// Low-disk-space events: the configured floor.
    public var minimumFree: Int64?
    /// `status` replies.
    public var status: StatusSnapshot?
    /// `request` replies: the retained pack numbers.
    public var packs: [UInt32]?
    /// `priority.get` replies.
    public var priorities: [String: Double]?
    /// `purge` replies.
    public var purge: PurgeSummary?
    /// `update` replies.
    public var update: UpdateReport?
    /// `variant` replies.
    public var variant: VariantReport?
    /// `mount` events (`watch-events`).
    public var mount: MountEvent?
    /// `trace` replies: one array of first needs per session, oldest first.
    public var trace: [[TraceEntry]]?

    /// A bare message for `id`; set the fields the operation needs.
    public init(id: Int?) {
        self.v = ControlProtocol.version
        self.id = id
    }

    /// An ok reply.
    public static func success(_ id: Int) -> ControlResponse {
        var response = ControlResponse(id: id)
        response.ok = true
        return response
    }

    /// A failed reply.
    public static func failure(_ id: Int?, _ error: ControlError) -> ControlResponse {
        var response = ControlResponse(id: id)
        response.ok = false
        response.error = error
        return response
    }

    /// A progress event.
    public static func progress(_ id: Int, completed: Int64, total: Int64) -> ControlResponse {
        var response = ControlResponse(id: id)
        response.event = .progress
        response.completed = completed
        response.total = total
        return response
    }

    /// A low-disk-space event.
    public static func lowDiskSpace(_ id: Int, _ event: LowDiskSpaceEvent) -> ControlResponse {
        var response = ControlResponse(id: id)
        response.event = .lowDiskSpace
        response.availableBytes = event.availableBytes
        response.minimumFree = event.minimumFree
        return response
    }

    /// A mount event for a `watch-events`.
    public static func mountEvent(_ id: Int, _ event: MountEvent) -> ControlResponse {
        var response = ControlResponse(id: id)
        response.event = .mount
        response.mount = event
        return response
    }

    /// Whether this is the final reply to its request (not an event).
    public var isReply: Bool { ok != nil }

    private enum CodingKeys: String, CodingKey {
        case v, id, ok, error, event, completed, total, availableBytes, minimumFree, status, packs, priorities, purge, update, variant, mount, trace
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(v, forKey: .v)
        try container.encode(id, forKey: .id)   // `null` when unknown, never absent
        try container.encodeIfPresent(ok, forKey: .ok)
        try container.encodeIfPresent(error, forKey: .error)
        try container.encodeIfPresent(event, forKey: .event)
        try container.encodeIfPresent(completed, forKey: .completed)
        try container.encodeIfPresent(total, forKey: .total)
        try container.encodeIfPresent(availableBytes, forKey: .availableBytes)
        if event == .lowDiskSpace { try container.encode(minimumFree, forKey: .minimumFree) }
        try container.encodeIfPresent(status, forKey: .status)
        try container.encodeIfPresent(packs, forKey: .packs)
        try container.encodeIfPresent(priorities, forKey: .priorities)
        try container.encodeIfPresent(purge, forKey: .purge)
        try container.encodeIfPresent(update, forKey: .update)
        try container.encodeIfPresent(variant, forKey: .variant)
        try container.encodeIfPresent(mount, forKey: .mount)
        try container.encodeIfPresent(trace, forKey: .trace)
    }
}
