import Foundation
import ODRFSControl

/// One line a client writes to the control socket (`odrfs status/request/purge`, the
/// BundleResourceRequest library, or anyone who can connect), and the same bytes as a
/// reply or event line the client library reads back from the daemon.
enum ControlTarget {
    static func run(_ line: Data) {
        if var response = try? ControlProtocol.decodeResponse(line) {
            // minimumFree belongs to low-disk-space events: the encoder writes it only there.
            if response.event != .lowDiskSpace { response.minimumFree = nil }
            let again = try? ControlProtocol.decodeResponse(ControlProtocol.encode(response))
            check(again == response, "response \(response) does not round-trip through its encoding")
        }
        guard case .success(let request) = ControlProtocol.decodeRequest(line) else { return }
        // A request the daemon accepted must survive its own encoding unchanged.
        let again = ControlProtocol.decodeRequest(ControlProtocol.encode(request))
        check(again == .success(request), "request \(request) does not round-trip through its encoding")
    }
}
