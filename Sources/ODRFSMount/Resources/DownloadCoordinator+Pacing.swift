import ODRFSCore
import ODRFSFetch

extension DownloadCoordinator {
    /// How a download shares the link. A prefetch or background download steps aside
    /// (drops its connection, see ``DownloadPacing``) when an open waits for bytes, waits
    /// until no open does, then resumes with a range request; otherwise it takes its bytes
    /// from the background rate limit. A download an open has joined (its priority raised)
    /// is never held. An origin that cannot resume a download from an offset (a dist dir on
    /// a local or network filesystem, which is read again from the start) makes the
    /// download wait at its next buffer instead: stepping aside would fetch its bytes again.
    func pacing(for pack: PackNumber) -> DownloadPacing {
        let index = Int(pack.rawValue)
        let id = table.manifest.pack(pack).id
        let resumable = downloader.origin.servesRanges
        let isBackground: @Sendable () -> Bool = { [table] in
            let priority = table.read { $0.slots[index].download?.priority }
            return priority.map { $0 <= .prefetch } ?? false
        }
        return DownloadPacing(
            beforeWrite: { [self] bytes throws(FetchError) in
                guard isBackground() else { return .proceed }
                if foreground.isBusy {
                    if resumable {
                        logger.debug("prefetch steps aside while an open waits", metadata: ["pack.id": "\(id)"])
                        return .stepAside
                    }
                    try await waitWhileAnOpenWaits(id, isBackground: isBackground)
                }
                guard let backgroundRate else { return .proceed }
                do { try await backgroundRate.take(bytes) } catch {
                    throw FetchError(.cancelled, "download of pack '\(id)' cancelled while rate limited")
                }
                // An open may have begun waiting during the rate limit's wait.
                if resumable && foreground.isBusy && isBackground() {
                    logger.debug("prefetch steps aside while an open waits", metadata: ["pack.id": "\(id)"])
                    return .stepAside
                }
                return .proceed
            },
            untilResumable: { [self] () throws(FetchError) in
                try await waitWhileAnOpenWaits(id, isBackground: isBackground)
                logger.debug("prefetch resumes", metadata: ["pack.id": "\(id)"])
            }
        )
    }

    private func waitWhileAnOpenWaits(_ id: PackID, isBackground: () -> Bool) async throws(FetchError) {
        while foreground.isBusy && isBackground() {
            do { try await Task.sleep(for: .milliseconds(10)) } catch {
                throw FetchError(.cancelled, "download of pack '\(id)' cancelled while an open waited")
            }
        }
    }
}
