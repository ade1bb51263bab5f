import ArgumentParser
import Foundation
import ODRFSControl

/// `odrfs update <mountpoint> [--check] [--json]`: move a running mount to the origin's
/// newest revision, or (`--check`) only say what that would fetch.
struct UpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Check for (--check) or switch to the origin's newest bundle revision.",
        discussion: """
            Fetches the origin's manifest and compares it with the revision the mount serves: the \
            packs that changed, the bytes an update downloads (for packs local or retained now; \
            others stay remote) and the bytes it reuses from files already cached. A revision \
            older than the mounted one is refused. Exit 0 whether or not an update is available.
            """ + "\n\n" + ControlExitCode.help
    )

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    @Flag(name: .long, help: "Only report what an update would do; download no pack.")
    var check = false

    @Flag(name: .long, help: "Print one JSON object (mounted_revision, available_revision, changed_packs, download_bytes, reused_bytes[, switched]).")
    var json = false

    func run() async throws {
        let client = await ControlExitCode.connect("update", mountpoint)
        defer { client.close() }
        let report: UpdateReport
        do throws(ControlError) {
            guard let reply = try await client.call(.update(check: check)).update else {
                throw ControlError(.internalError, "the daemon's update reply has no report")
            }
            report = reply
        } catch {
            ControlExitCode.fail("update", error)
        }
        if json {
            print(try Self.json(report))
            return
        }
        print(Self.describe(report))
    }

    /// The contract's object, keys in the documented order (JSONEncoder does not keep an
    /// order): `{"mounted_revision": 3, "available_revision": 4, "changed_packs": […], "download_bytes": …, "reused_bytes": …}`.
    static func json(_ report: UpdateReport) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let packs = "[" + (try report.changedPacks.map { String(decoding: try encoder.encode($0), as: UTF8.self) }).joined(separator: ", ") + "]"
        var text = "{\"mounted_revision\": \(report.mountedRevision), \"available_revision\": \(report.availableRevision), "
        text += "\"changed_packs\": \(packs), \"download_bytes\": \(report.downloadBytes), \"reused_bytes\": \(report.reusedBytes)"
        if let switched = report.switched { text += ", \"switched\": \(switched)" }
        return text + "}"
    }

    static func describe(_ report: UpdateReport) -> String {
        var lines = ["mounted revision \(report.mountedRevision), available \(report.availableRevision)"]
        if report.switched == true {
            lines.append("switched to revision \(report.availableRevision)")
        } else if !report.isUpdateAvailable && report.changedPacks.isEmpty {
            lines.append("up to date")
        }
        if !report.changedPacks.isEmpty {
            lines.append("changed packs: " + report.changedPacks.joined(separator: ", "))
            lines.append("download \(report.downloadBytes) bytes, reuse \(report.reusedBytes) bytes already cached")
        }
        return lines.joined(separator: "\n")
    }
}
