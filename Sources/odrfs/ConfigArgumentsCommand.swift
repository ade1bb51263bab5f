import ArgumentParser
import Foundation
import ODRFSFetch

/// `odrfs config arguments NAME`: the `odrfs mount` arguments of a configured bundle,
/// one per line, the origin first (the mountpoint is the caller's). `mount.odrfs` uses it
/// when fstab (or autofs) names a bundle instead of an origin.
struct ConfigArgumentsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "arguments",
        abstract: "Print the odrfs mount arguments of a configured bundle, one per line (for mount.odrfs)."
    )

    @Argument(help: "The bundle's NAME (its configuration is NAME.conf).")
    var name: String

    func run() throws {
        let (_, configuration) = try ConfigCommand.load(name)
        // The parser refuses control characters, so a line is exactly one argument.
        print(configuration.mountArguments.joined(separator: "\n"))
    }
}
