import Foundation
import Logging
import ODRFSControl
import ODRFSCore
import ODRFSFetch
import Synchronization

/// The control plane's view of a mount: `ControlService` over the revision served now
/// (``MountRevisions/current``).
///
/// Requests from `odrfs request` and `BundleResourceRequest` become `beginAccessing`
/// calls whose retains the control server ties to the client's connection. Errors map
/// to control codes (and ODR's) here, in one place: resource errors below, update errors
/// (``UpdateError``) in `MountControlService+Update.swift`.
public final class MountControlService: ControlService {
    /// The current revision's manager, and the retired ones that own older retains.
    let revisions: MountRevisions
    /// The manager of the revision served now.
    var manager: ResourceManager { revisions.current.manager }
    private let logger: Logger
    private let diskWatchers = Mutex<[UUID: AsyncStream<LowDiskSpaceEvent>.Continuation]>([:])
    /// `odrfs update`; nil when the daemon was built without an origin (tests).
    let updater: BundleUpdater?
    /// The status of a manager: ``MountStatus/snapshot(of:passthroughSettings:passthrough:transport:)``
    /// with the FUSE session's read path in a daemon, the bare snapshot in tests without one.
    private let snapshot: @Sendable (ResourceManager) -> StatusSnapshot

    init(revisions: MountRevisions, updater: BundleUpdater?, logger: Logger,
         snapshot: @escaping @Sendable (ResourceManager) -> StatusSnapshot = { $0.snapshot() }) {
        self.revisions = revisions
        self.updater = updater
        self.logger = logger
        self.snapshot = snapshot
    }

    /// A service over one manager without a mount (no updates); throws only if the empty
    /// tree its revision shows cannot be built.
    public convenience init(manager: ResourceManager, logger: Logger) throws(FileIndexError) {
        self.init(revisions: try MountRevisions(manager: manager), updater: nil, logger: logger)
    }

    public func status() async -> StatusSnapshot {
        snapshot(manager)
    }

    public func beginAccessing(
        tags: [String], loadingPriority: LoadingPriority, progress: ProgressSink
    ) async throws(ControlError) -> RetainToken {
        // One revision for the whole request, even if an update switches meanwhile.
        let manager = self.manager
        let tags = tags.map(Tag.init)
        let packs: [PackNumber]
        do {
            packs = try manager.packs(for: tags)
        } catch {
            throw Self.controlError(error)
        }
        let priority: DownloadPriority
        switch loadingPriority {
        case .urgent: priority = .urgent
        case .value(let value): priority = .request(value)
        }
        // Pushed by the resource manager as the packs' bytes are verified (the server
        // coalesces reports to one per 100 ms per request).
        let observation = manager.observeProgress(of: packs) { completed, total in
            progress.report(completed: completed, total: total)
        }
        defer { observation.cancel() }
        do {
            let retained = try await manager.beginAccessing(tags, priority: priority)
            let (done, total) = manager.progress(of: packs)
            progress.report(completed: done, total: total)
            let token = RetainToken(packs: retained.map(\.rawValue), generation: manager.generation)
            revisions.held.began(token, tags: tags, generation: manager.generation)
            return token
        } catch {
            throw Self.controlError(error)
        }
    }

    public func beginAccessingIfLocal(tags: [String]) throws(ControlError) -> RetainToken? {
        do {
            let manager = self.manager
            let tags = tags.map(Tag.init)
            guard let packs = try manager.beginAccessingIfLocal(tags) else { return nil }
            let token = RetainToken(packs: packs.map(\.rawValue), generation: manager.generation)
            revisions.held.began(token, tags: tags, generation: manager.generation)
            return token
        } catch {
            throw Self.controlError(error)
        }
    }

    public func endAccessing(_ token: RetainToken) {
        // What the request holds now (an update or a variant switch may have moved it to a newer view),
        // released in the revision whose pack numbers they are.
        if let hold = revisions.held.ended(token) {
            (revisions.manager(generation: hold.generation) ?? manager).endAccessing(hold.packs)
            return
        }
        let owner = token.generation.flatMap { revisions.manager(generation: $0) } ?? manager
        owner.endAccessing(token.packs.map(PackNumber.init))
    }

    public func preservationPriorities(tags: [String]) throws(ControlError) -> [String: Double] {
        var result: [String: Double] = [:]
        for name in tags {
            try requireTag(name)
            result[name] = manager.preservationPriority(of: Tag(name))
        }
        return result
    }

    public func setPreservationPriority(_ value: Double, tags: [String]) async throws(ControlError) {
        guard (0...1).contains(value) else {
            throw ControlError(.badRequest, "preservation priority must be within 0…1, not \(value)")
        }
        for name in tags { try requireTag(name) }
        for name in tags {
            do {
                try await manager.setPreservationPriorityDurably(value, for: Tag(name))
            } catch {
                throw ControlError(.internalError, "the priority of '\(name)' is set for this session but could not be saved to the cache index: \(error)")
            }
        }
        logger.info("preservation priority set", metadata: ["tags": "\(tags)", "priority": "\(value)"])
    }

    public func purge(tags: [String]?) async throws(ControlError) -> PurgeSummary {
        var selected: Set<UInt32>?
        if let tags {
            do {
                selected = Set(try manager.packs(for: tags.map(Tag.init)).map(\.rawValue))
            } catch {
                throw Self.controlError(error)
            }
        }
        let chosen = selected
        let report = await manager.purge { pack in chosen?.contains(pack.rawValue) ?? true }
        return PurgeSummary(
            evicted: report.evicted.map { PurgeSummary.EvictedPack(id: $0.id, bytes: $0.bytes) },
            kept: report.kept.map(\.rawValue)
        )
    }

    /// Events while the cache's filesystem has less than `--min-free` available (checked
    /// every 2 s while someone listens), like UIApplication's low-disk-space notification.
    public func lowDiskSpaceEvents() -> AsyncStream<LowDiskSpaceEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: LowDiskSpaceEvent.self, bufferingPolicy: .bufferingNewest(4))
        let id = UUID()
        diskWatchers.withLock { $0[id] = continuation }
        let watcher = Task { [manager] in
            var wasLow = false
            while !Task.isCancelled {
                let cache = manager.cacheStatus()
                // The mount's own --min-free, else the store's (every mount of a store tells
                // its subscribers when the store's filesystem runs low).
                let storeMinimum = await manager.io.run { manager.storeMinimumFree() }
                if let minimum = cache.limits.minimumFree ?? storeMinimum, let available = cache.availableBytes {
                    let isLow = available < minimum.value
                    if isLow && !wasLow {
                        continuation.yield(LowDiskSpaceEvent(availableBytes: available, minimumFree: minimum.value))
                    }
                    wasLow = isLow
                }
                try? await Task.sleep(for: .seconds(2))
            }
        }
        continuation.onTermination = { [weak self] _ in
            watcher.cancel()
            _ = self?.diskWatchers.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }

    private func requireTag(_ name: String) throws(ControlError) {
        guard manager.manifest.tags.contains(where: { $0.tag.name == name }) else {
            throw Self.controlError(.invalidTag(Tag(name)))
        }
    }

    /// ODRFS errors → control-plane errors (and through them ODR's codes), in one place.
    static func controlError(_ error: ResourceRequestError) -> ControlError {
        switch error {
        case .invalidTag:
            return ControlError(.invalidTag, error.description)
        case .exceedsMaximumInUse:
            return ControlError(.exceededMaximumSize, error.description)
        case .fetchFailed(_, let fetch):
            switch fetch.kind {
            case .noSpace: return ControlError(.outOfSpace, error.description)
            case .cancelled: return ControlError(.cancelled, error.description)
            case .unreachable, .unauthorized, .invalidOrigin, .unsupported: return ControlError(.originUnreachable, error.description)
            case .notFound, .corrupt, .localIO, .readOnlyCache, .tooManyOpenFiles: return ControlError(.resourceUnavailable, error.description)
            }
        }
    }
}
