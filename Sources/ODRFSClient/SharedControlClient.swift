import Foundation
import ODRFSControl
import Synchronization

/// One multiplexed connection per daemon for the whole process: every
/// ``BundleResourceRequest`` (and the static helpers) of a mount share it, each
/// request tagged by its own id, instead of one connection per request.
///
/// The connection is made on first use and made again on the next use after it
/// closed (the daemon restarted, or the mount was remounted); requests held on the old
/// connection ended with it, as the daemon that held them is gone.
enum SharedControlClient {
    private typealias Connecting = Task<Result<ControlClient, ControlError>, Never>

    /// By mountpoint as given: the connection for each, or the attempt under way.
    private static let clients = Mutex<[String: Connecting]>([:])

    /// The live shared client for `mountpoint`, connecting if there is none.
    static func client(mountpoint: String) async throws(ControlError) -> ControlClient {
        let key = RuntimeDirectory.resolve(mountpoint: mountpoint)
        while true {
            let attempt = clients.withLock { clients -> Connecting in
                if let existing = clients[key] { return existing }
                let connecting = Connecting {
                    do throws(ControlError) {
                        return .success(try await ControlClient.connect(mountpoint: mountpoint))
                    } catch {
                        return .failure(error)
                    }
                }
                clients[key] = connecting
                return connecting
            }
            switch await attempt.value {
            case .success(let client) where !client.isClosed:
                return client
            case .success, .failure:
                // Closed since, or the attempt failed: forget it (unless someone already
                // replaced it), so the next round connects anew.
                let replaced = clients.withLock { clients -> Bool in
                    guard let current = clients[key], current == attempt else { return true }
                    clients[key] = nil
                    return false
                }
                if case .failure(let error) = await attempt.value, !replaced { throw error }
            }
        }
    }
}
