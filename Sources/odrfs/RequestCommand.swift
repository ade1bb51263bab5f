import ArgumentParser
import Foundation
import ODRFSControl
import Synchronization

/// `odrfs request <mountpoint> <tag>… [--priority urgent|P] [--conditional] [--hold]`.
struct RequestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "request",
        abstract: "Begin accessing tags: fetch every pack they need (shared packs included) and report when all are local.",
        discussion: """
            Shows a progress bar (bytes, rate, ETA) on a terminal and plain 'progress' lines otherwise. \
            --conditional never downloads: it exits 0 if everything is local and 3 otherwise. \
            Without --hold the retains end when the command exits; with --hold they are kept \
            (state in-use in `odrfs status`) until SIGINT/SIGTERM or the daemon goes away.
            """ + "\n\n" + ControlExitCode.help
    )

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    @Argument(help: "One or more tags.")
    var tags: [String]

    @Option(name: .long, help: "Loading priority: 'urgent' or 0 to 1 (default 0.5).")
    var priority: String = "0.5"

    @Flag(name: .long, help: "Never download: succeed only if everything is already local.")
    var conditional = false

    @Flag(name: .long, help: "Keep the tags retained until interrupted (SIGINT/SIGTERM).")
    var hold = false

    func validate() throws {
        guard !tags.isEmpty else { throw ValidationError("name at least one tag") }
        _ = try loadingPriority()
    }

    private func loadingPriority() throws -> LoadingPriority {
        if priority == "urgent" { return .urgent }
        guard let value = Double(priority), value.isFinite, (0...1).contains(value) else {
            throw ValidationError("--priority takes 'urgent' or a number in 0…1, not '\(priority)'")
        }
        return .value(value)
    }

    func run() async throws {
        // Signals end a --hold; before that they must not kill us mid-reply either way.
        let signals = SignalWatcher([SIGINT, SIGTERM])
        let client = await ControlExitCode.connect("request", mountpoint)
        let display = ProgressDisplay()
        let names = tags.joined(separator: ", ")
        let request = Task {
            try await client.call(.request(tags: tags, loadingPriority: try loadingPriority(), conditional: conditional)) { event in
                if let completed = event.completed, let total = event.total { display.update(completed: completed, total: total) }
            }
        }
        let interrupted = Task {
            await signals.next()
            request.cancel()
        }
        defer { interrupted.cancel() }
        let reply: ControlResponse
        do {
            reply = try await request.value
            display.finish()
            writeLine("\(names): all \(reply.packs?.count ?? 0) packs local")
        } catch let error as ControlError {
            display.finish()
            if error.code == .cancelled { FileHandle.standardError.write(Data("odrfs request: interrupted\n".utf8)); throw ExitCode(130) }
            ControlExitCode.fail("request", error)
        }
        guard hold else {
            // End the request and wait for the daemon to say so, so that when this command
            // exits the tags are no longer in use (closing alone releases them too, but
            // only once the daemon has noticed the hang-up).
            if let id = reply.id { _ = try? await client.call(.end(request: id)) }
            client.close()
            return
        }
        writeLine("holding \(names) (in use); press Ctrl-C or send SIGTERM to release")
        // Whichever comes first: a signal (true) or the daemon hanging up (false).
        let outcome = await withCheckedContinuation { (first: CheckedContinuation<Bool, Never>) in
            let resumed = Mutex(false)
            let finish: @Sendable (Bool) -> Void = { value in
                if resumed.withLock({ done in defer { done = true }; return !done }) { first.resume(returning: value) }
            }
            Task { await signals.next(); finish(true) }
            Task { await client.waitUntilClosed(); finish(false) }
        }
        client.close()
        guard outcome else {
            FileHandle.standardError.write(Data("odrfs request: the daemon went away; the tags are no longer held\n".utf8))
            throw ExitCode.failure
        }
        writeLine("released \(names)")
    }
}

/// Turns SIGINT/SIGTERM into an async wait (their default action is disabled while it exists).
final class SignalWatcher: Sendable {
    private let state = Mutex<(received: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    nonisolated(unsafe) private var sources: [DispatchSourceSignal] = []

    init(_ numbers: [Int32]) {
        sources = numbers.map { [weak self] number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                let waiters: [CheckedContinuation<Void, Never>] = self?.state.withLock { state in
                    state.received = true
                    defer { state.waiters.removeAll() }
                    return state.waiters
                } ?? []
                waiters.forEach { $0.resume() }
            }
            source.resume()
            return source
        }
    }

    /// Returns once one of the signals has arrived (at once if one already did).
    func next() async {
        await withCheckedContinuation { continuation in
            let received = state.withLock { state in
                if !state.received { state.waiters.append(continuation) }
                return state.received
            }
            if received { continuation.resume() }
        }
    }
}
