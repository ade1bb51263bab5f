import FUSEKit
import ODRFSFetch

extension Errno {
    /// The one place where ODRFS errors become errnos (DESIGN.md's error contract):
    /// origin unreachable or refusing the token, pack missing or corrupt → EIO; no space → ENOSPC;
    /// the cache's filesystem read-only → EROFS; an interrupted wait → EINTR. Anything unexpected is EIO.
    init(mapping error: any Error) {
        guard let error = error as? FetchError else {
            self = .ioError
            return
        }
        switch error.kind {
        case .noSpace: self = .noSpace
        case .readOnlyCache: self = .readOnlyFileSystem
        case .cancelled: self = .interrupted
        case .tooManyOpenFiles: self = .tooManyOpenFiles
        case .invalidOrigin, .unsupported, .unreachable, .notFound, .unauthorized, .corrupt, .localIO: self = .ioError
        }
    }
}
