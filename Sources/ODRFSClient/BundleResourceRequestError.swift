import ODRFSControl

/// Why a ``BundleResourceRequest`` failed, with On-Demand Resources' error codes
/// where ODR has one (``odrCode``). Each case carries the daemon's explanation.
public enum BundleResourceRequestError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A tag the bundle does not have (`NSBundleOnDemandResourceInvalidTagError`, 4994).
    case invalidTag(String)
    /// The request would put more than the mount's in-use limit in use
    /// (`NSBundleOnDemandResourceExceededMaximumSizeError`, 4993).
    case exceededMaximumSize(String)
    /// No room for the packs even after purging (`NSBundleOnDemandResourceOutOfSpaceError`, 4992).
    case outOfSpace(String)
    /// The origin could not be reached.
    case originUnreachable(String)
    /// A pack is missing or corrupt on the origin.
    case resourceUnavailable(String)
    /// `progress.cancel()`, task cancellation or `endAccessingResources()` stopped the request
    /// (`NSUserCancelledError`, 3072).
    case cancelled
    /// This request object already began accessing its resources: use a new one.
    case alreadyBegun
    /// No ODRFS daemon answers at the mountpoint (not mounted, or it stopped).
    case daemonUnavailable(String)
    /// Anything else the daemon reported.
    case failed(ControlError)

    /// The equivalent `NSBundleResourceRequest` error code, if ODR has one.
    public var odrCode: Int? {
        switch self {
        case .invalidTag: 4994
        case .exceededMaximumSize: 4993
        case .outOfSpace: 4992
        case .cancelled: 3072
        default: nil
        }
    }

    /// The error for a control-protocol error.
    public init(_ error: ControlError) {
        switch error.code {
        case .invalidTag: self = .invalidTag(error.message)
        case .exceededMaximumSize: self = .exceededMaximumSize(error.message)
        case .outOfSpace: self = .outOfSpace(error.message)
        case .originUnreachable: self = .originUnreachable(error.message)
        case .resourceUnavailable: self = .resourceUnavailable(error.message)
        case .cancelled: self = .cancelled
        case .notRunning: self = .daemonUnavailable(error.message)
        default: self = .failed(error)
        }
    }

    public var description: String {
        switch self {
        case .invalidTag(let message), .exceededMaximumSize(let message), .outOfSpace(let message),
             .originUnreachable(let message), .resourceUnavailable(let message), .daemonUnavailable(let message):
            message
        case .cancelled: "the resource request was cancelled"
        case .alreadyBegun: "this BundleResourceRequest already began accessing its resources; create a new request"
        case .failed(let error): error.message
        }
    }
}
