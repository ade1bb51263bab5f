import Foundation
import Synchronization

/// Reaps children that were signalled from places that cannot wait (`defer`, `deinit`),
/// on one dedicated thread that polls `waitpid(WNOHANG)`: no zombie is left behind and
/// no caller (nor any thread of Swift's cooperative pool) blocks on an exit.
final class ChildReaper: Sendable {
    static let shared = ChildReaper()

    private struct Entry {
        var child: ChildProcess
        /// When to escalate to SIGKILL; nil once killed.
        var killAt: ContinuousClock.Instant?
        /// When to give up on a child that will not die (stuck in an uninterruptible wait).
        var giveUpAt: ContinuousClock.Instant
    }

    private let entries = Mutex<[Entry]>([])
    private let running = Mutex(false)

    /// Watches `child` until it has exited; SIGKILLs it after `graceUntilKill` if given.
    func reap(_ child: ChildProcess, graceUntilKill: Duration?) {
        let now = ContinuousClock.now
        let killAt = graceUntilKill.map { now + $0 }
        entries.withLock { $0.append(Entry(child: child, killAt: killAt, giveUpAt: (killAt ?? now) + .seconds(60))) }
        let start = running.withLock { running in
            defer { running = true }
            return !running
        }
        if start {
            let thread = Thread { [self] in loop() }
            thread.name = "test-child-reaper"
            thread.start()
        }
    }

    private func loop() {
        while true {
            let now = ContinuousClock.now
            let remaining = entries.withLock { entries in
                entries.removeAll { entry in
                    if !entry.child.isRunning { return true }
                    return now >= entry.giveUpAt
                }
                for index in entries.indices {
                    if let killAt = entries[index].killAt, now >= killAt {
                        entries[index].child.signal(SIGKILL)
                        entries[index].killAt = nil
                    }
                }
                return entries.count
            }
            if remaining == 0 {
                // Stop the thread, unless an entry arrived meanwhile.
                let stop = running.withLock { running in
                    guard entries.withLock({ $0.isEmpty }) else { return false }
                    running = false
                    return true
                }
                if stop { return }
            }
            usleep(20_000)
        }
    }
}
