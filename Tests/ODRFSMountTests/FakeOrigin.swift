import Foundation
import NIOCore
import ODRFSCore
import ODRFSFetch
import Synchronization
import TestSupport

/// A gate that downloads wait on until the test opens it.
final class Gate: Sendable {
    private let state = Mutex<(isOpen: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    init(open: Bool = false) {
        state.withLock { $0.isOpen = open }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.isOpen { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }
}

/// An in-memory origin whose files, failures and speed the test controls, and
/// which counts the downloads it serves.
final class FakeOrigin: Origin {
    private let state = Mutex<(files: [String: [UInt8]], downloads: [String: Int], started: Int)>(([:], [:], 0))
    let gate: Gate
    /// Between the first and the second half of every download.
    let midGate: Gate

    init(files: [String: [UInt8]], gate: Gate = Gate(open: true), midGate: Gate = Gate(open: true)) {
        self.gate = gate
        self.midGate = midGate
        state.withLock { $0.files = files }
    }

    var displayName: String { "fake-origin" }

    func setFile(_ path: String, _ bytes: [UInt8]?) {
        state.withLock { $0.files[path] = bytes }
    }

    func downloads(of path: String) -> Int {
        state.withLock { $0.downloads[path] ?? 0 }
    }

    /// Downloads that reached the origin, finished or not.
    var startedDownloads: Int { state.withLock { $0.started } }

    func data(at path: String, limit: ByteCount) async throws(FetchError) -> Data {
        guard let bytes = state.withLock({ $0.files[path] }) else { throw FetchError(.notFound, "no \(path)") }
        return Data(bytes)
    }

    func download(_ path: String, expectedBytes: ByteCount, into consume: (ByteBuffer) async throws(FetchError) -> Void) async throws(FetchError) {
        state.withLock { $0.started += 1 }
        await gate.wait()
        if Task.isCancelled { throw FetchError(.cancelled, "cancelled") }
        guard let bytes = state.withLock({ state -> [UInt8]? in
            state.downloads[path, default: 0] += 1
            return state.files[path]
        }) else {
            throw FetchError(.notFound, "no \(path) on the fake origin")
        }
        // Two pieces, so verification sees a stream rather than one buffer.
        let middle = bytes.count / 2
        for (number, piece) in [bytes[..<middle], bytes[middle...]].enumerated() {
            if number == 1 {
                await midGate.wait()
                if Task.isCancelled { throw FetchError(.cancelled, "cancelled") }
            }
            try await consume(ByteBuffer(bytes: piece))
        }
    }
}

