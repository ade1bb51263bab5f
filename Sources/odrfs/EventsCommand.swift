import ArgumentParser
import Foundation
import ODRFSControl

/// `odrfs events <mountpoint> [--json]`: follows a mount live.
struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Follow a mount live: fetches, evictions (with their reason), retains, releases and low disk space.",
        discussion: """
            Prints one line per event as it happens until interrupted (or until the daemon goes away, exit 1). \
            With --json each line is one JSON object: {"time": "2026-11-23T10:00:00.123Z", "event": "evicted", \
            "pack": "Level1", "tags": ["Level1"], "bytes": 123, "reason": "cache-size", "rule": "..."}. \
            Events: fetch-started, fetch-progress, fetch-finished, fetch-failed, evicted, retained, released, \
            low-disk-space. The reason of an eviction is cache-size, min-free, manual or update; progress \
            events are coalesced, so a slow reader sees the latest figure rather than every step.
            """ + "\n\n" + ControlExitCode.help
    )

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    @Flag(name: .long, help: "Print one JSON object per line instead of text.")
    var json = false

    func run() async throws {
        let client = await ControlExitCode.connect("events", mountpoint)
        defer { client.close() }
        let asJSON = json
        do throws(ControlError) {
            try await client.call(.watchEvents) { response in
                guard let event = response.mount else { return }
                let line = asJSON ? event.jsonLine : Data(Self.text(event).utf8)
                FileHandle.standardOutput.write(line + Data("\n".utf8))
            }
        } catch {
            ControlExitCode.fail("events", error)
        }
        await client.waitUntilClosed()
        ControlExitCode.fail("events", ControlError(.notRunning, "the daemon of \(mountpoint) went away"))
    }

    /// The human form: time, event, pack, size and the fields the event uses.
    static func text(_ event: MountEvent) -> String {
        var parts = [event.time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)), event.event.rawValue]
        if let pack = event.pack { parts.append(pack) }
        if let bytes = event.bytes {
            parts.append(event.total.map { "\(bytes)/\($0) bytes" } ?? "\(bytes) bytes")
        }
        if let reason = event.reason { parts.append("reason=\(reason)") }
        if let rule = event.rule { parts.append("rule: \(rule)") }
        if let message = event.message { parts.append("— \(message)") }
        return parts.joined(separator: " ")
    }
}
