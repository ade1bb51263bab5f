import Foundation
import Logging
@testable import ODRFSBuild

/// A scratch directory for one test, removed at deinit.
final class TestTree {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "odrfs-build-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func write(_ relative: String, _ text: String) throws {
        let url = URL(fileURLWithPath: path + "/" + relative)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    func mkdir(_ relative: String) throws {
        try FileManager.default.createDirectory(atPath: path + "/" + relative, withIntermediateDirectories: true)
    }

    func symlink(_ relative: String, to target: String) throws {
        try FileManager.default.createSymbolicLink(atPath: path + "/" + relative, withDestinationPath: target)
    }

    /// Copies an example bundle from Examples/ into `relative`.
    func copyExample(_ name: String, to relative: String) throws {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Examples/\(name)").path
        try FileManager.default.copyItem(atPath: source, toPath: path + "/" + relative)
    }

    /// Every file and directory under `relative` with its contents (nil for directories),
    /// symlinks as "-> target", for byte-for-byte comparisons.
    func snapshot(_ relative: String) throws -> [String: Data?] {
        var result: [String: Data?] = [:]
        let root = path + "/" + relative
        for item in try FileManager.default.subpathsOfDirectory(atPath: root) {
            let full = root + "/" + item
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: full) {
                result[item] = Data("-> \(target)".utf8)
                continue
            }
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory)
            result[item] = isDirectory.boolValue ? nil : try Data(contentsOf: URL(fileURLWithPath: full))
        }
        return result
    }

    func entries(_ relative: String = "") throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path + (relative.isEmpty ? "" : "/" + relative)).sorted()
    }

    /// Plain tar packs unless told otherwise: most tests read file bytes straight from the
    /// pack files; the compressed layout has tests of its own.
    func builder(_ root: String, spec: String? = nil, compression: CompressionSetting = .none) -> BundleBuilder {
        var builder = BundleBuilder(resourceRoot: path + "/" + root, specPath: spec.map { path + "/" + $0 },
                                    logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        builder.compression = compression
        return builder
    }
}
