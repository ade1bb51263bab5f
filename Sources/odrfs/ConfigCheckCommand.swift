import ArgumentParser
import Foundation
import Logging
import ODRFSCore
import ODRFSFetch

/// `odrfs config check NAME`: like `cvmfs_config chksetup` and `probe` for one bundle: the
/// configuration file is valid, the files it names are readable, and the origin (with its
/// mirrors) serves a mountable bundle. Exit 0 only if all holds.
struct ConfigCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate a bundle's configuration file and probe its origin.",
        discussion: """
            Reads /etc/odrfs/bundles.d/NAME.conf (or NAME.conf in ODRFS_BUNDLES_DIR), reports \
            the first problem with its line number, checks that the token, CA and trust-key files \
            it names can be read, then probes the origin and mirrors as `odrfs probe` does. \
            Exit codes: 0 valid and mountable; 1 not.
            """
    )

    @Argument(help: "The bundle's NAME (its configuration is NAME.conf).")
    var name: String

    @Flag(name: .long, help: "Check the file only; do not contact the origin.")
    var noProbe = false

    @Option(name: .long, help: "Seconds to wait for each server.")
    var timeout: Double = 10

    func validate() throws {
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be between 0 and 3600 seconds") }
    }

    func run() async throws {
        let loaded: (name: BundleName, configuration: BundleConfiguration)
        do {
            loaded = try ConfigCommand.load(name)
        } catch let error as ValidationError {
            FileHandle.standardError.write(Data("odrfs config check: \(error.message)\n".utf8))
            throw ExitCode.failure
        }
        let configuration = loaded.configuration
        let file = BundleDirectory().configurationPath(for: loaded.name)
        print("configuration \(file): valid")
        var problems: [String] = []
        let files = [configuration.tokenFile, configuration.caFile].compactMap { $0 }
            + configuration.mirrors.compactMap(\.tokenFile)
        for path in files where access(path, R_OK) != 0 {
            problems.append("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        var keys: [TrustKey] = []
        for path in configuration.trustKeys {
            do { keys.append(try MountCommand.loadTrustKey(path)) } catch { problems.append("\(error)") }
        }
        if let cache = configuration.cache ?? configuration.store, access(cache, F_OK) == 0, access(cache, W_OK) != 0 {
            problems.append("cannot write to the cache \(cache): \(String(cString: strerror(errno)))")
        }
        for problem in problems { print("problem: " + problem) }
        guard problems.isEmpty else { throw ExitCode.failure }
        if noProbe { return }
        var options = OriginOptions(tokenFile: configuration.tokenFile, caFile: configuration.caFile,
                                    fetchDeadline: .milliseconds(Int64(timeout * 1000)), maxConnections: 2)
        options.proxy = ProxySettings.resolve(explicit: configuration.proxy)
        var logger = Logger(label: "odrfs.config")
        logger.logLevel = .critical   // the report says everything
        let report = await ProbeRun(origin: configuration.origin, mirrors: configuration.mirrors, options: options,
                                    trustedKeys: keys, logger: logger).run()
        FileHandle.standardOutput.write(Data(report.text.utf8))
        if !report.mountable { throw ExitCode.failure }
    }
}
