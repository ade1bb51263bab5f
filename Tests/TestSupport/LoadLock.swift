/// A readers-writer lock for tasks. Readers are preferred: a waiting writer (the storm)
/// runs once no reader is left, so no timing-sensitive test ever waits behind it for
/// long — the writer, which has the longer time limit, does the waiting.
actor LoadLock {
    static let shared = LoadLock()
    private var readers = 0
    private var writing = false
    private var waitingReaders: [CheckedContinuation<Void, Never>] = []
    private var waitingWriters: [CheckedContinuation<Void, Never>] = []

    func lockShared() async {
        guard writing else {
            readers += 1
            return
        }
        // Counted as a reader by the writer's unlock, which resumes it.
        await withCheckedContinuation { waitingReaders.append($0) }
    }

    func unlockShared() {
        readers -= 1
        if readers == 0, !waitingWriters.isEmpty {
            writing = true
            waitingWriters.removeFirst().resume()
        }
    }

    func lockExclusive() async {
        guard writing || readers > 0 else {
            writing = true
            return
        }
        // Marked as writing by whoever resumes it.
        await withCheckedContinuation { waitingWriters.append($0) }
    }

    func unlockExclusive() {
        writing = false
        if !waitingReaders.isEmpty {
            readers += waitingReaders.count
            waitingReaders.forEach { $0.resume() }
            waitingReaders = []
        } else if !waitingWriters.isEmpty {
            writing = true
            waitingWriters.removeFirst().resume()
        }
    }
}
