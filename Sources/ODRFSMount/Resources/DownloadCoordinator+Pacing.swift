import ODRFSCore
import ODRFSFetch

extension DownloadCoordinator {
    /// Called by a download before it writes each buffer (a chunk boundary of the stream):
    /// a prefetch or background download waits here while any open waits for bytes, then
    /// takes its bytes from the background rate limit. A download an open has joined (its
    /// priority raised) is never held.
    func pacing(for pack: PackNumber) -> @Sendable (Int) async throws(FetchError) -> Void {
        let index = Int(pack.rawValue)
        return { [self] bytes throws(FetchError) in
            func isBackground() -> Bool {
                let priority = table.withState { $0.slots[index].download?.priority }
                return priority.map { $0 <= .prefetch } ?? false
            }
            guard isBackground() else { return }
            var paused = false
            while foreground.isBusy && isBackground() {
                if !paused {
                    paused = true
                    logger.debug("prefetch paused while an open waits", metadata: ["pack.id": "\(table.manifest.pack(pack).id)"])
                }
                do { try await Task.sleep(for: .milliseconds(10)) } catch {
                    throw FetchError(.cancelled, "download of pack '\(table.manifest.pack(pack).id)' cancelled while paused")
                }
            }
            guard let backgroundRate, isBackground() else { return }
            do { try await backgroundRate.take(bytes) } catch {
                throw FetchError(.cancelled, "download of pack '\(table.manifest.pack(pack).id)' cancelled while rate limited")
            }
        }
    }
}
