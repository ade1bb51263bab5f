import Foundation
import ODRFSControl
import Synchronization

/// Asks the ODRFS daemon of a mount for tagged resources and keeps them local while
/// in use: `NSBundleResourceRequest` for Swift programs on Linux.
///
/// ```swift
/// let request = BundleResourceRequest(tags: ["Italy"], mountpoint: "/mnt/travel")
/// try await request.beginAccessingResources()       // fetches every pack of the tag once
/// let text = try String(contentsOfFile: "/mnt/travel/Italy/Rome.txt", encoding: .utf8)
/// request.endAccessingResources()                    // the packs may now be purged
/// ```
///
/// While a request is accessing its resources the daemon keeps their packs (shared
/// packs included) retained, so they are never purged. All requests of a process share
/// one connection per mount (requests are told apart by id; see `SharedControlClient`);
/// the retains live on it: ``endAccessingResources()``, deinit, or the process exiting
/// all end them. A request object begins successfully at most once.
/// ``progress`` reports the bytes fetched; cancelling it abandons the wait, pausing
/// it stops waiting until it is resumed (the daemon's download goes on for others).
public final class BundleResourceRequest: Sendable {
    /// `loadingPriority` for a request that should go ahead of everything else
    /// (`NSBundleResourceRequestLoadingPriorityUrgent`).
    public static let loadingPriorityUrgent = Double.greatestFiniteMagnitude

    /// The tags this request accesses.
    public let tags: Set<String>
    /// The mount whose daemon serves the request.
    public let mountpoint: String
    /// Bytes fetched so far: `fractionCompleted` reaches 1.0 when every pack is local.
    /// `cancel()` cancels the request; `pause()`/`resume()` stop and resume waiting.
    public let progress: Progress
    let state = Mutex(State())

    enum Phase {
        case idle, beginning, accessing, ended
    }

    struct State {
        var loadingPriority = 0.5
        /// See ``requireLatestVersion``.
        var requireLatestVersion = false
        var phase = Phase.idle
        /// While accessing: the shared connection and the id its retains are held under.
        var held: (client: ControlClient, id: Int)?
        var wait: Task<Result<ControlResponse, ControlError>, Never>?
        var paused = false
        /// A pause interrupted the wait in flight: its `cancelled` reply means "wait again",
        /// even if `resume()` came before the reply did.
        var interruptedByPause = false
        var unpaused: [CheckedContinuation<Void, Never>] = []
    }

    /// A request for `tags` on the mount at `mountpoint`. Nothing happens until a begin method is called.
    public init(tags: Set<String>, mountpoint: String) {
        self.tags = tags
        self.mountpoint = mountpoint
        progress = Progress(totalUnitCount: 0)
        progress.isPausable = true
        progress.cancellationHandler = { [weak self] in self?.interrupt(pausing: false) }
        progress.pausingHandler = { [weak self] in self?.interrupt(pausing: true) }
        progress.resumingHandler = { [weak self] in self?.unpause() }
    }

    deinit {
        state.withLock { state in
            state.wait?.cancel()
            if let held = state.held { held.client.post(.end(request: held.id)) }
        }
    }

    /// 0…1, or ``loadingPriorityUrgent``; ODR's default is 0.5. Read when a begin
    /// method sends the request.
    public var loadingPriority: Double {
        get { state.withLock { $0.loadingPriority } }
        set { state.withLock { $0.loadingPriority = newValue } }
    }

    /// Fetches every pack the tags need (waiting for downloads already under way) and
    /// keeps them local until ``endAccessingResources()``. Throws a
    /// ``BundleResourceRequestError``; after a failure the request may begin again, after
    /// success it may not (``BundleResourceRequestError/alreadyBegun``).
    public func beginAccessingResources() async throws(BundleResourceRequestError) {
        var client = try await claim()
        var reconnected = false
        do throws(BundleResourceRequestError) {
            try await updateFirstIfRequired(client)
            while true {
                await waitWhilePaused()
                if progress.isCancelled { throw .cancelled }
                let operation = ControlOperation.request(tags: tags.sorted(), loadingPriority: priority, conditional: false)
                let progress = self.progress
                let task = Task { [client] () -> Result<ControlResponse, ControlError> in
                    do throws(ControlError) {
                        return .success(try await client.call(operation) { event in
                            guard let completed = event.completed, let total = event.total, total > 0 else { return }
                            progress.totalUnitCount = total
                            progress.completedUnitCount = completed
                        })
                    } catch {
                        return .failure(error)
                    }
                }
                state.withLock { $0.wait = task }
                let result = await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
                state.withLock { $0.wait = nil }
                switch result {
                case .success(let reply):
                    complete(client, id: reply.id)
                    return
                case .failure(let error) where error.code == .cancelled:
                    let paused = state.withLock { state in
                        defer { state.interruptedByPause = false }
                        return (state.paused || state.interruptedByPause) && state.phase == .beginning   // not ended meanwhile
                    }
                    if paused && !progress.isCancelled && !Task.isCancelled { continue }
                    throw .cancelled
                case .failure(let error) where error.code == .notRunning && client.isClosed && !reconnected:
                    // The shared connection was to a daemon that has since restarted: the
                    // request never reached a live daemon, so ask the new one, once.
                    reconnected = true
                    do {
                        client = try await SharedControlClient.client(mountpoint: mountpoint)
                    } catch {
                        throw BundleResourceRequestError(error)
                    }
                case .failure(let error):
                    throw BundleResourceRequestError(error)
                }
            }
        } catch {
            release()
            throw error
        }
    }

    /// The completion-handler form of ``beginAccessingResources()``: `completionHandler`
    /// gets nil on success or the error.
    public func beginAccessingResources(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        Task {
            do {
                try await beginAccessingResources()
                completionHandler(nil)
            } catch {
                completionHandler(error)
            }
        }
    }

    /// Begins accessing the resources only if every pack they need is already local
    /// (never downloads): true if so, and they are then kept until ``endAccessingResources()``.
    public func conditionallyBeginAccessingResources() async -> Bool {
        guard var client = try? await claim() else { return false }
        let operation = ControlOperation.request(tags: tags.sorted(), loadingPriority: priority, conditional: true)
        for attempt in 0..<2 {
            do {
                let reply = try await client.call(operation)
                complete(client, id: reply.id)
                return true
            } catch {
                // A shared connection to a daemon that has since restarted: ask the new one, once.
                guard attempt == 0, error.code == .notRunning, client.isClosed,
                      let fresh = try? await SharedControlClient.client(mountpoint: mountpoint) else { break }
                client = fresh
            }
        }
        release()
        return false
    }

    /// The completion-handler form of ``conditionallyBeginAccessingResources()``.
    public func conditionallyBeginAccessingResources(completionHandler: @escaping @Sendable (Bool) -> Void) {
        Task { completionHandler(await conditionallyBeginAccessingResources()) }
    }

    /// Ends access: the daemon may purge the packs again once nothing else uses them.
    /// A begin still waiting is cancelled. Also happens on deinit.
    public func endAccessingResources() {
        state.withLock { state in
            state.wait?.cancel()
            if let held = state.held { held.client.post(.end(request: held.id)) }
            state.held = nil
            state.phase = .ended
        }
    }

    private var priority: LoadingPriority {
        let value = loadingPriority
        return value >= Self.loadingPriorityUrgent ? .urgent : .value(min(max(value.isFinite ? value : 0.5, 0), 1))
    }

    /// Moves from idle to beginning and gets the process's shared connection to the
    /// daemon; throws if already begun.
    private func claim() async throws(BundleResourceRequestError) -> ControlClient {
        try state.withLock { state throws(BundleResourceRequestError) in
            guard state.phase == .idle else { throw .alreadyBegun }
            state.phase = .beginning
        }
        do {
            return try await SharedControlClient.client(mountpoint: mountpoint)
        } catch {
            state.withLock { $0.phase = .idle }
            throw BundleResourceRequestError(error)
        }
    }

    /// Records the retains of request `id`; if the request was ended meanwhile, gives
    /// them back at once.
    private func complete(_ client: ControlClient, id: Int?) {
        if progress.totalUnitCount <= 0 { progress.totalUnitCount = 1 }
        progress.completedUnitCount = progress.totalUnitCount
        let keep = state.withLock { state -> Bool in
            guard state.phase == .beginning else { return false }
            state.phase = .accessing
            if let id { state.held = (client, id) }
            return true
        }
        if !keep, let id { client.post(.end(request: id)) }
    }

    /// After a failed begin: allow another begin unless ended meanwhile.
    private func release() {
        state.withLock { state in
            if state.phase == .beginning { state.phase = .idle }
        }
    }

    private func interrupt(pausing: Bool) {
        let waiters = state.withLock { state in
            if pausing {
                state.paused = true
                state.interruptedByPause = state.wait != nil
            }
            state.wait?.cancel()
            defer { if !pausing { state.unpaused.removeAll() } }
            return pausing ? [] : state.unpaused
        }
        waiters.forEach { $0.resume() }
    }

    private func unpause() {
        let waiters = state.withLock { state in
            state.paused = false
            defer { state.unpaused.removeAll() }
            return state.unpaused
        }
        waiters.forEach { $0.resume() }
    }

    private func waitWhilePaused() async {
        await withCheckedContinuation { continuation in
            let paused = state.withLock { state -> Bool in
                guard state.paused && !progress.isCancelled else { return false }
                state.unpaused.append(continuation)
                return true
            }
            if !paused { continuation.resume() }
        }
    }
}
