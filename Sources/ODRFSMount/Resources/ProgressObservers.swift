import ODRFSCore
import Synchronization

/// Who wants to hear about download progress: tag requests (a progress bar in
/// `odrfs request`, `BundleResourceRequest.progress`) and the initial install.
///
/// Progress is pushed from the thread that made it (the I/O thread after a write, the
/// I/O thread that ends a download), never polled. A leaf lock: taken after the resource
/// manager's lock is released, and callbacks run after this one is released too.
final class ProgressObservers: Sendable {
    struct Observer {
        var packs: Set<PackNumber>
        var notify: @Sendable () -> Void
    }

    private let state = Mutex<(next: UInt64, observers: [UInt64: Observer])>((0, [:]))

    func add(_ packs: Set<PackNumber>, _ notify: @escaping @Sendable () -> Void) -> UInt64 {
        state.withLock { state in
            state.next += 1
            state.observers[state.next] = Observer(packs: packs, notify: notify)
            return state.next
        }
    }

    func remove(_ id: UInt64) {
        _ = state.withLock { $0.observers.removeValue(forKey: id) }
    }

    /// Tells every observer of `pack` that it moved.
    func changed(_ pack: PackNumber) {
        let interested = state.withLock { state in
            state.observers.values.filter { $0.packs.contains(pack) }.map(\.notify)
        }
        interested.forEach { $0() }
    }
}

extension ResourceManager {
    /// Calls `report(completed, total)` over `packs` now and whenever one of them moves
    /// (bytes verified, published, failed), from the thread that moved it, until the
    /// returned observation is cancelled. `report` must not block.
    public func observeProgress(of packs: [PackNumber], _ report: @escaping @Sendable (Int64, Int64) -> Void) -> ProgressObservation {
        let id = progressObservers.add(Set(packs)) { [self] in
            let (completed, total) = progress(of: packs)
            report(completed, total)
        }
        let (completed, total) = progress(of: packs)
        report(completed, total)
        return ProgressObservation(observers: progressObservers, id: id)
    }
}

/// A live progress subscription; `cancel()` (or deinit) ends it.
public final class ProgressObservation: Sendable {
    private let observers: ProgressObservers
    private let id: UInt64

    init(observers: ProgressObservers, id: UInt64) {
        self.observers = observers
        self.id = id
    }

    public func cancel() { observers.remove(id) }

    deinit { cancel() }
}
