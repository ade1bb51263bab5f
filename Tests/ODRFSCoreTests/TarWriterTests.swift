import Foundation
import Testing
@testable import ODRFSCore

@Suite struct TarWriterTests {
    struct Member {
        var path: String
        var content: [UInt8]
        var mode: UInt32
        var mtime: Int64
    }

    static let members: [Member] = [
        Member(path: "README.txt", content: Array("hello\n".utf8), mode: 0o644, mtime: 1_600_000_000),
        Member(path: "empty.txt", content: [], mode: 0o600, mtime: 1_600_000_001),
        Member(path: "Italy/Café Roma.txt", content: Array("espresso".utf8), mode: 0o644, mtime: 1_600_000_002),
        Member(path: "dir/" + String(repeating: "long-name-", count: 15) + ".bin",
               content: (0..<1000).map { UInt8($0 % 251) }, mode: 0o755, mtime: 1_600_000_003),
        Member(path: "block.bin", content: [UInt8](repeating: 7, count: 512), mode: 0o644, mtime: 0),
    ]

    /// Writes the members, returning the archive and each member's content offset.
    static func archive() -> ([UInt8], [UInt64]) {
        var tar = TarWriter()
        var out: [UInt8] = []
        var offsets: [UInt64] = []
        for member in members {
            let (header, offset) = tar.beginFile(path: member.path, size: UInt64(member.content.count), permissions: member.mode,
                                                 modificationTime: Timestamp(seconds: member.mtime, nanoseconds: 0))
            out += header
            #expect(offset == UInt64(out.count))
            offsets.append(offset)
            out += member.content
            out += tar.endFile()
            #expect(tar.offset == UInt64(out.count))
        }
        out += tar.finish()
        #expect(tar.offset == UInt64(out.count))
        return (out, offsets)
    }

    @Test func offsetsPointAtContent() {
        let (bytes, offsets) = Self.archive()
        #expect(bytes.count % 512 == 0)
        #expect(bytes.suffix(1024).allSatisfy { $0 == 0 })
        for (member, offset) in zip(Self.members, offsets) {
            #expect(Array(bytes[Int(offset)..<Int(offset) + member.content.count]) == member.content, "\(member.path)")
        }
        #expect(Self.archive().0 == bytes)   // deterministic
    }

    @Test func paxRecordLengthsCountThemselves() {
        for value in ["x", String(repeating: "y", count: 90), String(repeating: "z", count: 95), String(repeating: "w", count: 994)] {
            let record = String(decoding: TarWriter.paxRecords([("path", value)]), as: UTF8.self)
            let declared = Int(record.prefix { $0 != " " })
            #expect(declared == record.utf8.count)
        }
    }

    @Test func systemTarListsAndExtractsIdenticalFiles() throws {
        let tarPath = "/bin/tar"
        try #require(FileManager.default.isExecutableFile(atPath: tarPath), "needs /bin/tar")
        let dir = NSTemporaryDirectory() + "odrfs-tar-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data(Self.archive().0).write(to: URL(fileURLWithPath: dir + "/pack.tar"))

        let listing = try run(tarPath, ["tvf", dir + "/pack.tar"])
        for member in Self.members {
            #expect(listing.contains(member.path), "\(member.path) missing from:\n\(listing)")
        }
        #expect(listing.contains("-rwxr-xr-x 0/0"))
        #expect(!listing.contains("PaxHeaders"))

        _ = try run(tarPath, ["xf", dir + "/pack.tar", "-C", dir + "/out"])
        for member in Self.members {
            let path = dir + "/out/" + member.path
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(Array(data) == member.content, "\(member.path)")
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int).map { UInt32($0) } == member.mode, "\(member.path)")
            #expect((attributes[.modificationDate] as? Date)?.timeIntervalSince1970 == TimeInterval(member.mtime), "\(member.path)")
        }
    }

    private func run(_ tool: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: output, as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(tool) \(arguments): \(text)")
        return text
    }
}
