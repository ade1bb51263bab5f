import ArgumentParser
import Foundation
import ODRFSControl

/// `odrfs purge <mountpoint> [<tag>… | --all]`: drop unretained packs now.
struct PurgeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Delete the local packs of tags (or of every tag) that nothing retains; retained ones are kept.",
        discussion: "Prints one line per pack: 'evicted <pack> <bytes>' or 'kept <pack> (in use)'. Base resources are never purged.\n\n" + ControlExitCode.help
    )

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    @Argument(help: "Tags whose packs to purge.")
    var tags: [String] = []

    @Flag(name: .long, help: "Purge the packs of every tag.")
    var all = false

    func validate() throws {
        if all == !tags.isEmpty { throw ValidationError("name tags to purge, or --all (not both)") }
    }

    func run() async throws {
        let client = await ControlExitCode.connect("purge", mountpoint)
        defer { client.close() }
        do throws(ControlError) {
            let summary = try await client.call(.purge(tags: all ? nil : tags)).purge ?? PurgeSummary()
            for pack in summary.evicted { print("evicted \(pack.id) \(pack.bytes)") }
            for pack in summary.kept { print("kept \(pack) (in use)") }
            let freed = summary.evicted.reduce(Int64(0)) { $0 + $1.bytes }
            print("\(summary.evicted.count) packs evicted (\(freed) bytes), \(summary.kept.count) kept")
        } catch {
            ControlExitCode.fail("purge", error)
        }
    }
}
