import ArgumentParser
import Foundation
import ODRFSControl

/// `odrfs priority <mountpoint> <tag>… [--set P]`: read or set preservation priorities.
struct PriorityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "priority",
        abstract: "Show or set the preservation priority (0 to 1) of tags; lower is purged first under disk pressure.",
        discussion: "Without --set, prints one line per tag: TAG PRIORITY. With --set, the daemon persists the value across remounts.\n\n" + ControlExitCode.help
    )

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    @Argument(help: "One or more tags.")
    var tags: [String]

    @Option(name: .long, help: "The new priority, 0 to 1.")
    var set: Double?

    func validate() throws {
        guard !tags.isEmpty else { throw ValidationError("name at least one tag") }
        if let set, !(set.isFinite && (0...1).contains(set)) {
            throw ValidationError("--set takes a priority in 0…1, not \(set)")
        }
    }

    func run() async throws {
        let client = await ControlExitCode.connect("priority", mountpoint)
        defer { client.close() }
        do throws(ControlError) {
            if let set {
                try await client.call(.prioritySet(tags: tags, value: set))
            }
            let priorities = try await client.call(.priorityGet(tags: tags)).priorities ?? [:]
            let width = tags.map(\.count).max() ?? 0
            for tag in tags {
                print(tag.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + String(format: "%.2f", priorities[tag] ?? 0))
            }
        } catch {
            ControlExitCode.fail("priority", error)
        }
    }
}
