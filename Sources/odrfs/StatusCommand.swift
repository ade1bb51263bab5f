import ArgumentParser
import Foundation

/// `odrfs status <mountpoint>`: the per-pack table of a running mount.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show each pack's state, size, retains and last access for a mount."
    )

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    func run() throws {
        let path = mountpoint + "/.odrfs/status"
        guard let data = FileManager.default.contents(atPath: path) else {
            FileHandle.standardError.write(Data("odrfs status: \(mountpoint) is not an ODRFS mount (no readable \(path))\n".utf8))
            throw ExitCode.failure
        }
        FileHandle.standardOutput.write(data)
    }
}
