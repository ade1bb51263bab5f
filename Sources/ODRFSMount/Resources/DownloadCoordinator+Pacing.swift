import ODRFSCore
import ODRFSFetch

extension DownloadCoordinator {
    /// How a download shares the link. A prefetch or background download steps aside
    /// (drops its connection, see ``DownloadPacing``) when an open waits for bytes, waits
    /// until no open does, then resumes with a range request; otherwise it takes its bytes
    /// from the background rate limit. A download an open has joined (its priority raised)
    /// is never held.
    func pacing(for pack: PackNumber) -> DownloadPacing {
        let index = Int(pack.rawValue)
        let id = table.manifest.pack(pack).id
        let isBackground: @Sendable () -> Bool = { [table] in
            let priority = table.withState { $0.slots[index].download?.priority }
            return priority.map { $0 <= .prefetch } ?? false
        }
        return DownloadPacing(
            beforeWrite: { [self] bytes throws(FetchError) in
                guard isBackground() else { return .proceed }
                if foreground.isBusy {
                    logger.debug("prefetch steps aside while an open waits", metadata: ["pack.id": "\(id)"])
                    return .stepAside
                }
                guard let backgroundRate else { return .proceed }
                do { try await backgroundRate.take(bytes) } catch {
                    throw FetchError(.cancelled, "download of pack '\(id)' cancelled while rate limited")
                }
                return .proceed
            },
            untilResumable: { [self] () throws(FetchError) in
                while foreground.isBusy && isBackground() {
                    do { try await Task.sleep(for: .milliseconds(10)) } catch {
                        throw FetchError(.cancelled, "download of pack '\(id)' cancelled while it stepped aside")
                    }
                }
                logger.debug("prefetch resumes", metadata: ["pack.id": "\(id)"])
            }
        )
    }
}
