import ODRFSFetch

/// Why an update (``BundleUpdater``) did not happen: what kind of failure, and a message
/// saying what, with its context (the origin, the revisions, the pack).
///
/// The updater knows nothing of the control protocol: ``MountControlService`` maps these
/// to `ControlError`, in one place (`MountControlService+Update.swift`).
struct UpdateError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as far as the caller can act on it.
    enum Kind: Sendable, Equatable {
        /// Another update of this mount is running; this one was refused, not queued.
        case busy
        /// The request names what the bundle does not have (an undeclared variant key).
        case invalidRequest
        /// The origin offers a revision that is not newer than the mounted one (or, with
        /// trusted keys, older than one already seen).
        case rollbackRefused
        /// The origin could not be reached, refused us, or stopped making progress.
        case originUnreachable
        /// The update was cancelled (the mount is going away).
        case cancelled
        /// The origin answered with something unusable: an invalid manifest or index, a
        /// missing or corrupt pack, no space for it.
        case resourceUnavailable
        /// The cache index or the cache's manifest could not be read or written.
        case internalError
    }

    let kind: Kind
    let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// A fetch's failure, in `context` ("cannot fetch pack 'x' of revision 3").
    init(_ error: FetchError, _ context: String) {
        switch error.kind {
        case .unreachable, .unauthorized, .invalidOrigin, .unsupported:
            self.init(.originUnreachable, "\(context): \(error)")
        case .cancelled:
            self.init(.cancelled, "\(context): \(error)")
        default:
            self.init(.resourceUnavailable, "\(context): \(error)")
        }
    }

    var description: String { message }
}

extension UpdateError: WatchdogFailure {
    static func cancelled(_ message: String) -> UpdateError { UpdateError(.cancelled, message) }
}
