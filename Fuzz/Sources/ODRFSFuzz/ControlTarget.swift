import Foundation
import ODRFSControl

/// One line a client writes to the control socket (`odrfs status/request/purge`, the
/// BundleResourceRequest library, or anyone who can connect).
enum ControlTarget {
    static func run(_ line: Data) {
        guard case .success(let request) = ControlProtocol.decodeRequest(line) else { return }
        // A request the daemon accepted must survive its own encoding unchanged.
        let again = ControlProtocol.decodeRequest(ControlProtocol.encode(request))
        check(again == .success(request), "request \(request) does not round-trip through its encoding")
    }
}
