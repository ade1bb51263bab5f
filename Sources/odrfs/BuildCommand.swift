import Foundation
import ArgumentParser
import Foundation
import Logging
import ODRFSBuild

/// `odrfs build`: splits a resource directory into tagged packs and writes a dist dir that any
/// static host can serve.
struct BuildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Plan packs from a tag spec and write a dist dir.",
        discussion: """
            Files are grouped by their exact set of tags (from odr.yaml at the resource root, or \
            --spec); untagged files form the base pack. The same input always gives a \
            byte-identical dist dir. An existing output directory is replaced only if it is \
            empty or a previous dist dir.
            """)

    @Argument(help: "The resource directory to bundle.")
    var resourceDir: String

    @Option(name: [.short, .customLong("output")], help: "The dist dir to write.")
    var output: String

    @Option(help: "The tag spec (default: odr.yaml in the resource directory).")
    var spec: String?

    @Option(name: .customLong("sign-key"), help: "Sign the manifest with this Ed25519 key (not implemented yet).")
    var signKey: String?

    func validate() throws {
        if signKey != nil {
            throw ValidationError("signing is not implemented yet; build without --sign-key")
        }
    }

    func run() throws {
        var logger = Logger(label: "odrfs.build")
        // Warnings reach the user through the report below; the logger is for debugging.
        logger.logLevel = .error
        let builder = BundleBuilder(resourceRoot: resourceDir, specPath: spec, logger: logger)
        do {
            let report = try builder.build(into: output)
            print(report.table(), terminator: "")
            for warning in report.warnings {
                printToStandardError("warning: \(warning)")
            }
        } catch {
            printToStandardError("error: \(error)")
            throw ExitCode.failure
        }
    }

    private func printToStandardError(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
