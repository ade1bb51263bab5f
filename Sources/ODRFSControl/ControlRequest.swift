import ODRFSCore

/// One client → daemon message: a client-chosen `id` and an operation.
/// See the protocol article in the module documentation for the wire form.
public struct ControlRequest: Sendable, Equatable {
    /// Chosen by the client; replies and events for this request carry it. Unique
    /// among the client's requests in progress or held on one connection.
    public var id: Int
    /// What to do.
    public var operation: ControlOperation

    /// A request.
    public init(id: Int, operation: ControlOperation) {
        self.id = id
        self.operation = operation
    }
}

/// The operations of protocol v1 (the `op` field).
public enum ControlOperation: Sendable, Equatable {
    /// `status`: reply carries `status`, a ``StatusSnapshot``.
    case status
    /// `request`: fetch and retain every pack of `tags` (`conditional`: only if all
    /// are local, else a `not-local` error; never downloads). Progress events until the
    /// reply; after an ok reply the retains are held until `end` or the connection drops.
    case request(tags: [String], loadingPriority: LoadingPriority, conditional: Bool)
    /// `end`: release the retains of an earlier `request` (or stop a watch;
    /// abandons a request still in progress).
    case end(request: Int)
    /// `priority.get`: reply carries `priorities`, tag → 0…1.
    case priorityGet(tags: [String])
    /// `priority.set`: set (and persist) the preservation priority of `tags`.
    case prioritySet(tags: [String], value: Double)
    /// `purge`: delete the unretained local packs of `tags`, or of all tags when nil
    /// (`"all":true`). Reply carries `purge`, a ``PurgeSummary``.
    case purge(tags: [String]?)
    /// `cancel`: abandon a `request` still in progress; it then fails with `cancelled`.
    case cancel(request: Int)
    /// `watch-disk`: an ok reply, then `low-disk-space` events until `end` or close.
    case watchDisk
    /// `update`: fetch the origin's manifest and compare it with the mounted revision
    /// (`check`: only report); reply carries `update`, an ``UpdateReport``.
    case update(check: Bool)
    /// `watch-events`: an ok reply, then one `mount` event per ``MountEvent`` until `end`
    /// or close (`odrfs events`).
    case watchEvents
    /// `trace`: reply carries `trace`, the first needs of the newest `sessions` mount
    /// sessions (1: this one), oldest first (`odrfs trace`).
    case trace(sessions: Int)
    /// `variant`: serve these variant preferences from now on (each key's values in order
    /// of preference; keys not named keep theirs); reply carries `variant`, a
    /// ``VariantReport`` (`odrfs variant`).
    case variant(preferences: VariantPreferences)

    /// Whether the operation changes the mount or reads what only its owner may see: on
    /// a mount shared with every local user, only the owner and root may do it
    /// (``ControlAccess``). Reading status and events, and requesting tags (whose retains
    /// end with the connection), are everyone's.
    public var changesTheMount: Bool {
        switch self {
        case .prioritySet, .purge, .update, .trace, .variant: true
        case .status, .request, .end, .priorityGet, .cancel, .watchDisk, .watchEvents: false
        }
    }

    /// The wire name.
    public var name: String {
        switch self {
        case .status: "status"
        case .request: "request"
        case .end: "end"
        case .priorityGet: "priority.get"
        case .prioritySet: "priority.set"
        case .purge: "purge"
        case .cancel: "cancel"
        case .watchDisk: "watch-disk"
        case .update: "update"
        case .watchEvents: "watch-events"
        case .trace: "trace"
        case .variant: "variant"
        }
    }
}

extension ControlOperation {
    /// The most sessions one `trace` may ask for.
    public static let maximumTraceSessions = 1000
}

/// The flat wire form of a request: every field any operation uses.
struct WireRequest: Codable {
    var v: Int?
    var id: Int?
    var op: String?
    var tags: [String]?
    var loadingPriority: LoadingPriority?
    var conditional: Bool?
    var request: Int?
    var value: Double?
    var all: Bool?
    var check: Bool?
    var sessions: Int?
    var variants: [String: [String]]?
}

extension ControlRequest {
    var wire: WireRequest {
        var wire = WireRequest(v: ControlProtocol.version, id: id, op: operation.name)
        switch operation {
        case .status, .watchDisk, .watchEvents:
            break
        case let .request(tags, loadingPriority, conditional):
            wire.tags = tags
            wire.loadingPriority = loadingPriority
            wire.conditional = conditional
        case .end(let request), .cancel(let request):
            wire.request = request
        case .priorityGet(let tags):
            wire.tags = tags
        case let .prioritySet(tags, value):
            wire.tags = tags
            wire.value = value
        case .purge(let tags):
            if let tags { wire.tags = tags } else { wire.all = true }
        case .update(let check):
            wire.check = check
        case .trace(let sessions):
            wire.sessions = sessions
        case .variant(let preferences):
            wire.variants = preferences.wire
        }
        return wire
    }

    /// Validates a decoded wire request (version already checked).
    init(wire: WireRequest, id: Int) throws(ControlError) {
        func tags(_ op: String) throws(ControlError) -> [String] {
            guard let tags = wire.tags, !tags.isEmpty, !tags.contains(where: \.isEmpty) else {
                throw ControlError(.badRequest, "'\(op)' needs \"tags\": a non-empty array of non-empty strings")
            }
            return tags
        }
        func request(_ op: String) throws(ControlError) -> Int {
            guard let request = wire.request else { throw ControlError(.badRequest, "'\(op)' needs \"request\": the id of an earlier request") }
            return request
        }
        let operation: ControlOperation
        switch wire.op {
        case "status": operation = .status
        case "request":
            operation = .request(tags: try tags("request"), loadingPriority: wire.loadingPriority ?? .default, conditional: wire.conditional ?? false)
        case "end": operation = .end(request: try request("end"))
        case "cancel": operation = .cancel(request: try request("cancel"))
        case "priority.get": operation = .priorityGet(tags: try tags("priority.get"))
        case "priority.set":
            guard let value = wire.value, value.isFinite, (0...1).contains(value) else {
                throw ControlError(.badRequest, "'priority.set' needs \"value\": a number in 0…1")
            }
            operation = .prioritySet(tags: try tags("priority.set"), value: value)
        case "purge":
            if wire.all == true {
                guard wire.tags == nil else { throw ControlError(.badRequest, "'purge' takes \"tags\" or \"all\":true, not both") }
                operation = .purge(tags: nil)
            } else {
                operation = .purge(tags: try tags("purge"))
            }
        case "watch-disk": operation = .watchDisk
        case "update": operation = .update(check: wire.check ?? false)
        case "watch-events": operation = .watchEvents
        case "trace":
            let sessions = wire.sessions ?? 1
            guard (1...ControlOperation.maximumTraceSessions).contains(sessions) else {
                throw ControlError(.badRequest, "'trace' takes \"sessions\": 1…\(ControlOperation.maximumTraceSessions)")
            }
            operation = .trace(sessions: sessions)
        case "variant":
            guard let variants = wire.variants, !variants.isEmpty else {
                throw ControlError(.badRequest, "'variant' needs \"variants\": a non-empty object of keys to arrays of values")
            }
            do {
                operation = .variant(preferences: try VariantPreferences(wire: variants))
            } catch {
                throw ControlError(.badRequest, "'variant': \(error.reason)")
            }
        case nil: throw ControlError(.badRequest, "the message has no \"op\"")
        case let op?: throw ControlError(.badRequest, "unknown op '\(op)'; v1 knows status, request, end, priority.get, priority.set, purge, cancel, watch-disk, watch-events, trace, update, variant")
        }
        self.init(id: id, operation: operation)
    }
}
