import ArgumentParser
import Foundation
import ODRFSControl
import ODRFSCore

/// `odrfs variant <mountpoint> KEY=VALUE[,VALUE...]… [--json]`: change which variants a
/// running mount serves.
struct VariantCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "variant",
        abstract: "Change the variants (texture format, language, tier) a running mount serves.",
        discussion: """
            Each KEY=VALUE[,VALUE...] names a key the bundle declares and its values in order of \
            preference; keys not named keep their selection. The switch uses the live-update \
            machinery: new opens see the new variants at once, open files keep their bytes, the \
            new variants' packs that replace local or retained ones download first, and the old \
            variants' packs are purged first.
            """ + "\n\n" + ControlExitCode.help
    )

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    @Argument(help: "KEY=VALUE[,VALUE...]: a variant key and its values in order of preference.")
    var selections: [String]

    @Flag(name: .long, help: "Print one JSON object (variants, changed_packs, download_bytes).")
    var json = false

    func validate() throws {
        guard !selections.isEmpty else { throw ValidationError("name at least one KEY=VALUE") }
        do throws(VariantPreferences.Problem) {
            _ = try VariantPreferences(arguments: selections)
        } catch {
            throw ValidationError(error.reason)
        }
    }

    func run() async throws {
        let preferences: VariantPreferences
        do throws(VariantPreferences.Problem) {
            preferences = try VariantPreferences(arguments: selections)
        } catch {
            throw ValidationError(error.reason)
        }
        let client = await ControlExitCode.connect("variant", mountpoint)
        defer { client.close() }
        let report: VariantReport
        do throws(ControlError) {
            guard let reply = try await client.call(.variant(preferences: preferences)).variant else {
                throw ControlError(.internalError, "the daemon's variant reply has no report")
            }
            report = reply
        } catch {
            ControlExitCode.fail("variant", error)
        }
        if json {
            print(try Self.json(report))
            return
        }
        print(Self.describe(report))
    }

    /// The contract's object, keys in the documented order, each key's variants sorted.
    static func json(_ report: VariantReport) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        let variants = String(decoding: try encoder.encode(report.variants), as: UTF8.self)
        let packs = String(decoding: try encoder.encode(report.changedPacks), as: UTF8.self)
        return "{\"variants\": \(variants), \"changed_packs\": \(packs), \"download_bytes\": \(report.downloadBytes)}"
    }

    static func describe(_ report: VariantReport) -> String {
        var lines = ["variants: " + report.variants.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")]
        if !report.changedPacks.isEmpty {
            lines.append("new packs: " + report.changedPacks.joined(separator: ", "))
        }
        lines.append("downloaded \(report.downloadBytes) bytes before the switch")
        return lines.joined(separator: "\n")
    }
}
