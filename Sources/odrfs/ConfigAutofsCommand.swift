import ArgumentParser
import Foundation
import ODRFSFetch

/// `odrfs config autofs NAME`: the autofs program map's answer (`auto.odrfs` runs it).
/// A configured, valid bundle gives its map entry; an unknown or invalid NAME gives
/// nothing (autofs answers ENOENT); a broken configuration gives one line on stderr,
/// which automount logs, and nothing on stdout, so only that NAME fails.
struct ConfigAutofsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "autofs",
        abstract: "Print the autofs map entry of a configured bundle (the program map /usr/libexec/odrfs/auto.odrfs runs this)."
    )

    @Argument(help: "The key autofs looks up: the NAME in /odr/NAME.")
    var name: String

    @Option(name: .long, help: "The filesystem type the entry mounts with (mount.TYPE is the helper).")
    var fstype = "odrfs"

    func validate() throws {
        guard BundleName(fstype) != nil, !fstype.contains(".") else { throw ValidationError("--fstype takes letters, digits, '_' and '-'") }
    }

    func run() throws {
        // Any name a program looks up under /odr arrives here (".Trash", "autorun.inf"):
        // names that cannot be bundles and bundles not configured fail silently.
        guard let bundle = BundleName(name) else { throw ExitCode.failure }
        do {
            _ = try BundleDirectory().load(bundle)
        } catch {
            if case .notConfigured = error { throw ExitCode.failure }
            FileHandle.standardError.write(Data("odrfs: bundle \(bundle) not mounted: \(error)\n".utf8))
            throw ExitCode.failure
        }
        // allow_other: a bundle mounted by the automounter (root) is for every local user.
        print("-fstype=\(fstype),allow_other :\(bundle)")
    }
}
