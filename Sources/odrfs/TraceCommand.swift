import ArgumentParser
import Foundation
import ODRFSControl
import ODRFSCore

/// `odrfs trace <mountpoint> [--output FILE] [--sessions N]`: the recorded access order.
struct TraceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace",
        abstract: "Export the order in which this mount session first needed each pack, as JSON.",
        discussion: """
            Writes a JSON array in first-need order, one object per pack: {"pack": "Level1", \
            "tags": ["Level1"], "cause": "open", "first_file": "levels/1/map.bin", \
            "seconds_since_mount": 0.42}. The cause is open, request, prefetch or initial-install; \
            first_file is null when no open caused it. A pack is listed at its first demand, or \
            at its prefetch if nothing asked for it. --sessions N exports the newest N sessions \
            recorded in the cache (this one included), oldest first, each entry with "session" \
            (1 = oldest). Feed traces to `odrfs build --prefetch-from`, or mount with \
            --learn-prefetch to use this machine's history directly.
            """ + "\n\n" + ControlExitCode.help
    )

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    @Option(name: .long, help: ArgumentHelp("Write the trace to this file instead of standard output.", valueName: "file"))
    var output: String?

    @Option(name: .long, help: "Export the newest N mount sessions, not only the current one.")
    var sessions: Int = 1

    func validate() throws {
        guard (1...ControlOperation.maximumTraceSessions).contains(sessions) else {
            throw ValidationError("--sessions takes 1…\(ControlOperation.maximumTraceSessions)")
        }
    }

    func run() async throws {
        let client = await ControlExitCode.connect("trace", mountpoint)
        defer { client.close() }
        let traces: [[TraceEntry]]
        do throws(ControlError) {
            traces = try await client.call(.trace(sessions: sessions)).trace ?? []
        } catch {
            ControlExitCode.fail("trace", error)
        }
        var entries: [TraceEntry] = []
        for (number, session) in traces.enumerated() {
            for var entry in session {
                if sessions > 1 { entry.session = number + 1 }
                entries.append(entry)
            }
        }
        let data = AccessTrace.encode(entries)
        if let output {
            do {
                try data.write(to: URL(fileURLWithPath: output), options: .atomic)
            } catch {
                FileHandle.standardError.write(Data("odrfs trace: cannot write \(output): \(error.localizedDescription)\n".utf8))
                throw ExitCode.failure
            }
        } else {
            FileHandle.standardOutput.write(data)
        }
    }
}
