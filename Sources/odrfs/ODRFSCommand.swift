import ArgumentParser
import Foundation

/// The `odrfs` executable: one subcommand per file in this folder.
@main
struct ODRFSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "odrfs",
        abstract: "On-Demand Resources for Linux: tagged asset packs served by a FUSE filesystem that fetches on open.",
        discussion: """
            Typical use:
              odrfs build MyApp.resources -o dist   # split a tagged tree into packs
              odrfs mount dist /mnt/myapp           # files download when opened
              odrfs status /mnt/myapp               # which tags and packs are local
              odrfs request /mnt/myapp Level1       # fetch a tag ahead of time
              odrfs events /mnt/myapp               # follow fetches and evictions
              odrfs unmount /mnt/myapp

            Every subcommand has its own help (odrfs help <subcommand>); the manual page \
            is docs/odrfs.1 (man odrfs once installed).
            """,
        version: ODRFSVersion.description,
        subcommands: [
            BuildCommand.self, ServeCommand.self, MountCommand.self, UnmountCommand.self, StatusCommand.self,
            RequestCommand.self, PriorityCommand.self, PurgeCommand.self, UpdateCommand.self, VariantCommand.self, EventsCommand.self, TraceCommand.self, KeygenCommand.self, ProbeCommand.self,
            ConfigCommand.self, StoreCommand.self,
        ]
    )

    /// ArgumentParser's own main, except that `odrfs probe` exits with 2 (not 64) on bad
    /// arguments: its contract is 0 mountable, 1 not, 2 usage, like `cvmfs_config probe`.
    static func main() async {
        // The parent of `odrfs mount`'s early fork only waits for its daemon (see Daemonizer).
        if let daemon = Daemonizer.earlyDaemon { Daemonizer.awaitEarlyDaemon(daemon.descriptor, pid: daemon.pid) }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if CommandLine.arguments.dropFirst().first == "probe", exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Glibc.exit(2)
            }
            exit(withError: error)
        }
    }
}
