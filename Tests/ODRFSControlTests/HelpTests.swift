import Foundation
import Testing
import TestSupport

/// `odrfs --help` and every subcommand's help: paragraphs without hard line breaks (so
/// they wrap to the terminal), and a man page in docs/ that documents every command and
/// option of the binary.
@Suite(.timeLimit(.minutes(1))) struct HelpTests {
    struct Command: Decodable {
        var commandName: String
        var abstract: String?
        var discussion: String?
        var subcommands: [Command]?
        var arguments: [Argument]?
    }

    struct Argument: Decodable {
        var names: [Name]?
        var abstract: String?
        var discussion: String?
        var shouldDisplay: Bool
    }

    struct Name: Decodable {
        var kind: String
        var name: String
    }

    struct ToolInfo: Decodable {
        var command: Command
    }

    private static var available: Bool { FileManager.default.isExecutableFile(atPath: CLITests.odrfs) }

    private func dumpHelp() async throws -> Command {
        let output = try TemporaryDirectory()
        let child = try ChildProcess(CLITests.odrfs, ["--experimental-dump-help"], stdout: output.path + "/out")
        #expect(await child.wait(timeout: .seconds(20)))
        let data = try Data(contentsOf: URL(fileURLWithPath: output.path + "/out"))
        return try JSONDecoder().decode(ToolInfo.self, from: data).command
    }

    private func all(_ command: Command) -> [Command] {
        [command] + (command.subcommands ?? []).flatMap(all)
    }

    /// A paragraph breaks lines only in an indented block (examples after a line ending in ':').
    static func hardBreaks(in text: String) -> [String] {
        text.components(separatedBy: "\n\n").flatMap { paragraph -> [String] in
            let lines = paragraph.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            guard lines.count > 1 else { return [] }
            let introducesBlock = lines[0].hasSuffix(":")
            return lines.dropFirst().filter { !(introducesBlock && $0.hasPrefix("  ")) }
        }
    }

    @Test(.enabled(if: available)) func helpIsWrappedParagraphs() async throws {
        for command in all(try await dumpHelp()) {
            for text in [command.abstract, command.discussion].compactMap({ $0 }) {
                #expect(Self.hardBreaks(in: text).isEmpty, "odrfs \(command.commandName): a hard line break inside a paragraph: \(Self.hardBreaks(in: text))")
            }
            #expect(!(command.abstract ?? "").contains("\n"), "odrfs \(command.commandName)'s abstract spans lines")
            // generate-manual drops every non-ASCII character ("0…1" became "01" in the man page).
            for text in [command.abstract, command.discussion].compactMap({ $0 }) {
                let ascii = text.unicodeScalars.allSatisfy { $0.isASCII }
                #expect(ascii, "odrfs \(command.commandName): non-ASCII help text is lost in the man page")
            }
            for argument in command.arguments ?? [] where argument.shouldDisplay {
                #expect(!(argument.abstract ?? "").contains("\n"), "odrfs \(command.commandName) \(argument.names?.first?.name ?? ""): help spans lines")
                let ascii = (argument.abstract ?? "").unicodeScalars.allSatisfy { $0.isASCII }
                #expect(ascii, "odrfs \(command.commandName) \(argument.names?.first?.name ?? ""): non-ASCII help")
            }
        }
        #expect(Self.hardBreaks(in: "Typical use:\n  odrfs build a -o b\n  odrfs mount b /mnt").isEmpty)
        #expect(Self.hardBreaks(in: "A sentence broken\nin two.") == ["in two."], "the check itself must catch a break")
    }

    @Test(.enabled(if: available)) func manPageDocumentsEveryCommandAndOption() async throws {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/odrfs.1")
        let text = try String(contentsOf: page, encoding: .utf8)
        for command in all(try await dumpHelp()) {
            #expect(text.contains(command.commandName), "docs/odrfs.1 lacks the command \(command.commandName): run mount-scripts/man.sh")
            for argument in command.arguments ?? [] where argument.shouldDisplay {
                for name in argument.names ?? [] where name.kind == "long" {
                    // mdoc escapes the dashes of option names.
                    #expect(text.contains("Fl -\(name.name)") || text.contains(name.name),
                            "docs/odrfs.1 lacks --\(name.name) of \(command.commandName): run mount-scripts/man.sh")
                }
            }
        }
    }

    /// `odrfs --version` names the commit it was built from (issue 25): "unknown" for a
    /// plain `swift build`, the 40-digit commit (perhaps "-dirty") from mount-scripts/package.sh.
    @Test(.enabled(if: available)) func versionNamesTheCommit() async throws {
        let output = try TemporaryDirectory()
        let child = try ChildProcess(CLITests.odrfs, ["--version"], stdout: output.path + "/out")
        #expect(await child.wait(timeout: .seconds(20)))
        let text = try String(contentsOfFile: output.path + "/out", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let pattern = #/[0-9]+(\.[0-9]+)* \(commit (unknown|[0-9a-f]{40}(-dirty)?)\)/#
        #expect(text.wholeMatch(of: pattern) != nil, "odrfs --version printed \(text)")
    }
}
