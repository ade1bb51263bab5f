import ArgumentParser
import Foundation
import Logging
import ODRFSControl
import ODRFSCore
import ODRFSFetch

/// `odrfs probe ORIGIN`: can this origin be mounted, and how is each of its servers doing?
/// Like `cvmfs_config probe`: reachability, TLS, auth, manifest validity and signature,
/// round-trip time and throughput per server. Exit 0 only if the bundle is mountable.
struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Check that an origin (and each of its mirrors) serves a mountable bundle.",
        discussion: """
            Fetches manifest.json from the origin, every --mirror and every mirror the manifest \
            lists, and reports for each: reachable, HTTP status, round-trip time, throughput and \
            the error if any; then whether the manifest is valid (and, with --trust-key, signed \
            by a trusted key) and its file index intact.

            --json prints one object: {"mountable": true, "revision": 4, \
            "signature": "valid|invalid|unsigned|not-checked", "mirrors": [{"url": "...", \
            "reachable": true, "rtt_ms": 21.5, "http_status": 200, "error": null}]}.

            Exit codes: 0 mountable; 1 not mountable; 2 bad arguments.
            """
    )

    @Argument(help: "The dist dir: http(s):// URL, path or file:// URL.")
    var origin: String

    @Option(name: .long, help: "A file whose first line is a bearer token for the origin.")
    var tokenFile: String?

    @Option(name: .long, help: "A PEM file of CA certificates to trust for an https:// origin, besides the system store.")
    var caFile: String?

    @Option(name: .customLong("trust-key"), help: "A public key file; the manifest must be signed by one of the keys given.")
    var trustKeys: [String] = []

    @Option(name: .long, help: "Another server of the same dist dir (repeatable); ,token-file=F for its own token.")
    var mirror: [String] = []

    @Option(name: .long, help: "Seconds to wait for each server.")
    var timeout: Double = 10

    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false

    func validate() throws {
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be between 0 and 3600 seconds") }
        if let tokenFile, access(tokenFile, R_OK) != 0 {
            throw ValidationError("cannot read the token file \(tokenFile): \(String(cString: strerror(errno)))")
        }
        if let caFile, access(caFile, R_OK) != 0 {
            throw ValidationError("cannot read the CA file \(caFile): \(String(cString: strerror(errno)))")
        }
    }

    func run() async throws {
        let keys = try trustKeys.map(MountCommand.loadTrustKey)
        let mirrors: [MirrorOption]
        do {
            mirrors = try mirror.map { (argument: String) throws(FetchError) in try MirrorOption(parsing: argument) }
        } catch {
            throw ValidationError(error.message)
        }
        let options = OriginOptions(tokenFile: tokenFile, caFile: caFile, fetchDeadline: .milliseconds(Int64(timeout * 1000)),
                                    maxConnections: 2)
        var logger = Logger(label: "odrfs.probe")
        logger.logLevel = .critical   // the report says everything; no retry chatter
        let report = await ProbeRun(origin: origin, mirrors: mirrors, options: options, trustedKeys: keys, logger: logger).run()
        if json {
            let encoder = ControlProtocol.makeEncoder()
            encoder.outputFormatting.insert(.prettyPrinted)
            FileHandle.standardOutput.write(try encoder.encode(report) + Data("\n".utf8))
        } else {
            FileHandle.standardOutput.write(Data(report.text.utf8))
        }
        if !report.mountable { throw ExitCode.failure }
    }
}
