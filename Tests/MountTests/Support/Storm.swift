import Foundation
import Synchronization

/// The load of the storm test, on dedicated threads (every call here blocks: reads of the
/// mount, control requests): readers that check every byte, a purger and a status asker.
/// Each worker ends soon after `stop()` unless something it waits for hangs, which the
/// test sees as `finishedWorkers < workerCount`.
final class Storm: Sendable {
    struct Stats {
        var reads = 0
        var bytes = 0
        var purges = 0
        var statuses = 0
        var interrupted = 0
        var failures: [String] = []

        mutating func fail(_ message: String) {
            if failures.count < 100 { failures.append(message) }
        }
    }

    let mountpoint: String
    let files: [String: [UInt8]]
    let stats = Mutex(Stats())
    private let stopping = Atomic(false)
    private let finished = Atomic(0)
    private let started = Atomic(0)

    init(mountpoint: String, files: [String: [UInt8]]) {
        self.mountpoint = mountpoint
        self.files = files
    }

    var workerCount: Int { started.load(ordering: .acquiring) }
    var finishedWorkers: Int { finished.load(ordering: .acquiring) }

    /// Starts `readers` reader threads, a purger on `purgeLine` (a purge of every tag every
    /// 10 ms, one at a time) and a status asker cycling over `statusLines`.
    func start(readers: Int, purgeLine: ControlLine, statusLines: [ControlLine]) {
        for index in 0..<readers {
            spawn("storm-reader-\(index)") { self.read() }
        }
        spawn("storm-purger") { self.purge(on: purgeLine) }
        spawn("storm-status") { self.askStatus(on: statusLines) }
    }

    func stop() {
        stopping.store(true, ordering: .releasing)
    }

    private var isStopping: Bool { stopping.load(ordering: .acquiring) }

    private func spawn(_ name: String, _ body: @escaping @Sendable () -> Void) {
        started.add(1, ordering: .acquiringAndReleasing)
        let thread = Thread { [self] in
            // Process-directed signals (SIGCHLD of other tests' children, with a handler
            // installed) must go elsewhere: one landing here interrupts the FUSE request in
            // flight and the daemon rightly answers EINTR, which is not what this test checks.
            var all = sigset_t()
            sigfillset(&all)
            pthread_sigmask(SIG_BLOCK, &all, nil)
            body()
            finished.add(1, ordering: .acquiringAndReleasing)
        }
        thread.name = name
        thread.start()
    }

    /// Reads random files whole, comparing every byte with the source.
    private func read() {
        let paths = Array(files.keys)
        var buffer = [UInt8](repeating: 0, count: 1 << 17)
        while !isStopping {
            let path = paths.randomElement()!
            let expected = files[path]!
            let descriptor = open(mountpoint + "/" + path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                let code = errno
                stats.withLock { stats in
                    // EINTR is the correct answer to an interrupted open; count it and retry.
                    if code == EINTR { stats.interrupted += 1 } else { stats.fail("open \(path): \(String(cString: strerror(code)))") }
                }
                continue
            }
            var contents: [UInt8] = []
            var failure: String?
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count < 0 {
                    failure = "read \(path): \(String(cString: strerror(errno)))"
                    break
                }
                if count == 0 { break }
                contents.append(contentsOf: buffer[0..<count])
            }
            close(descriptor)
            if failure == nil && contents != expected {
                failure = "\(path): \(contents.count) bytes read, \(expected.count) expected, first difference at \(contents.indices.first { $0 >= expected.count || contents[$0] != expected[$0] } ?? contents.count)"
            }
            stats.withLock { stats in
                if let failure {
                    stats.fail(failure)
                } else {
                    stats.reads += 1
                    stats.bytes += contents.count
                }
            }
        }
    }

    /// A purge of every tag every 10 ms, each answered (bounded) before the next.
    private func purge(on line: ControlLine) {
        var id = 100
        while !isStopping {
            id += 1
            guard line.send(#"{"v":1,"id":\#(id),"op":"purge","all":true}"#) else {
                stats.withLock { $0.fail("purge \(id): send failed") }
                return
            }
            guard let reply = line.readLine(timeout: .seconds(10)) else {
                stats.withLock { $0.fail("purge \(id): no reply within 10 s") }
                return
            }
            stats.withLock { stats in
                if reply.contains(#""ok":true"#) && reply.contains(#""id":\#(id)"#) { stats.purges += 1 } else { stats.fail("purge \(id): \(reply.prefix(300))") }
            }
            usleep(10_000)
        }
    }

    /// Asks for the status on each of `lines` in turn.
    private func askStatus(on lines: [ControlLine]) {
        var id = 1_000
        while !isStopping {
            for line in lines where !isStopping {
                id += 1
                guard line.send(#"{"v":1,"id":\#(id),"op":"status"}"#),
                      let reply = line.readLine(timeout: .seconds(10)) else {
                    stats.withLock { $0.fail("status \(id): no reply within 10 s") }
                    return
                }
                stats.withLock { stats in
                    if reply.contains(#""ok":true"#) { stats.statuses += 1 } else { stats.fail("status \(id): \(reply.prefix(300))") }
                }
            }
        }
    }
}
