import ArgumentParser
import Foundation
import ODRFSControl

/// `odrfs status <mountpoint> [--json]`: every tag and pack of a running mount.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show each tag's and pack's state, size, retains, priority and last access, and the cache's totals.",
        discussion: "The table is the one at <mountpoint>/.odrfs/status; --json prints the stable JSON snapshot (ISO 8601 dates) for scripts.\n\n" + ControlExitCode.help
    )

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    @Flag(name: .long, help: "Print JSON instead of the table.")
    var json = false

    func run() async throws {
        let client = await ControlExitCode.connect("status", mountpoint)
        defer { client.close() }
        let snapshot: StatusSnapshot
        do throws(ControlError) {
            guard let status = try await client.call(.status).status else {
                throw ControlError(.internalError, "the daemon's status reply has no snapshot")
            }
            snapshot = status
        } catch {
            ControlExitCode.fail("status", error)
        }
        if json {
            let encoder = ControlProtocol.makeEncoder()
            encoder.outputFormatting.insert(.prettyPrinted)
            FileHandle.standardOutput.write(try encoder.encode(snapshot) + Data("\n".utf8))
        } else {
            FileHandle.standardOutput.write(Data(snapshot.renderTable().utf8))
        }
    }
}
