import Foundation
import ODRFSCompression
import ODRFSCore
import Testing
import TestSupport
@testable import ODRFSBuild

/// `odrfs build --compress zstd[:LEVEL]`: packs are `packs/<sha256>.tar.zst`, one zstd
/// frame per chunk, a valid zstd stream that standard tools read, and frames that decode
/// to the very chunks the manifest hashes.
@Suite(.timeLimit(.minutes(1)))
struct CompressedBuildTests {
    /// Runs a tool with its output in a file; nil if it did not finish in 20 s.
    static func run(_ tool: String, _ arguments: [String], output: String) async throws -> (Int32, String)? {
        let child = try ChildProcess(tool, arguments, stdout: output, stderr: output + ".err")
        guard await child.wait(timeout: .seconds(20)) else {
            await child.terminate()
            return nil
        }
        return (child.terminationStatus ?? -1, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }

    /// A level with text (compressible) and random bytes (not), 2.5 chunks of 64 KiB.
    static func writeTree(_ tree: TestTree) throws {
        let text = String(repeating: "{\"tile\": 17, \"kind\": \"grass\", \"height\": 3.25}\n", count: 1500)
        try tree.write("res/levels/1/map.json", text)
        var random = SplitMix(seed: 17)
        let noise = Data((0..<100_000).map { _ in UInt8.random(in: 0...255, using: &random) })
        try tree.mkdir("res/levels/1/raw")
        try noise.write(to: URL(fileURLWithPath: tree.path + "/res/levels/1/raw/noise.bin"))
        try tree.write("res/odr.yaml", "tags:\n  Level1: [\"levels/1/**\"]\n")
    }

    @Test func packsAreSeekableZstdStreamsThatToolsRead() async throws {
        let tree = try TestTree()
        try Self.writeTree(tree)
        var builder = tree.builder("res", compression: .default)
        builder.chunkSize = .kibibytes(64)
        let report = try builder.build(into: tree.path + "/dist")
        let manifest = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: tree.path + "/dist/manifest.json")))
        let level = try #require(manifest.packs.first { $0.id.rawValue == "Level1" })
        let compression = try #require(level.compression)
        #expect(level.file == "packs/\(level.sha256.hex).tar.zst")
        // Three chunks; the random file's chunk also cut at its tar entry (frames with sizes).
        #expect(level.chunks.count == 3 && compression.frames.count > level.chunks.count)
        #expect(compression.frames.allSatisfy { $0.size != nil })
        let path = tree.path + "/dist/" + level.file
        let onDisk = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(Int64(onDisk.count) == compression.bytes.value)
        #expect(compression.bytes.value < level.bytes.value, "text must shrink")
        #expect(report.rows.first { $0.id == level.id }?.compressedBytes == compression.bytes)
        #expect(report.table().contains("compressed: "))

        // Each frame alone decodes to its bytes: what a Range request for it would get; a
        // chunk's frames together are the chunk.
        let table = try #require(try FrameTable(validating: level, chunkSize: manifest.chunkSize))
        var tar: [UInt8] = []
        for chunk in 0..<table.count {
            var content: [UInt8] = []
            for frameNumber in table.frames(ofChunk: chunk) {
                let range = table.compressedRange(ofFrame: frameNumber)
                let frame = Array(onDisk[Int(range.lowerBound)..<Int(range.upperBound)])
                content += try frame.withUnsafeBytes {
                    try ZstdFrame.decompress($0, contentSize: Int(table.uncompressedRange(ofFrame: frameNumber).count))
                }
            }
            #expect(ContentHash.of(content) == level.chunks[chunk], "chunk \(chunk)")
            tar += content
        }
        #expect(ContentHash.of(tar) == level.sha256, "the name is the uncompressed tar's hash")

        // The whole file is one zstd stream: zstd and tar read it as it is.
        let decoded = tree.path + "/decoded.tar"
        let zstd = try await Self.run("/usr/bin/zstd", ["-d", "-q", "-c", path], output: decoded)
        #expect(zstd?.0 == 0)
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: decoded))) == tar)
        let listing = try await Self.run("/bin/tar", ["--zstd", "-tvf", path], output: tree.path + "/listing")
        #expect(listing?.0 == 0)
        #expect(listing?.1.contains("levels/1/map.json") == true && listing?.1.contains("levels/1/raw/noise.bin") == true,
                "\(listing?.1 ?? "tar did not finish")")
    }

    /// Frames follow file chunks only where that costs at most 2 % of compression: a
    /// compressible large file keeps (nearly) the ratio of whole-chunk frames, a random one
    /// is cut at its chunks. A version-3 build (for older releases) cuts nothing.
    @Test func framesFollowChunksWhereCompressionAllows() throws {
        let tree = try TestTree()
        let line = "{\"tile\": 17, \"kind\": \"grass\", \"height\": 3.25, \"seed\": %d}\n"
        try tree.write("res/text/big.json", (0..<60_000).map { String(format: line, $0 % 977) }.joined())
        var random = SplitMix(seed: 5)
        try tree.mkdir("res/noise")
        try Data((0..<2_500_000).map { _ in UInt8.random(in: 0...255, using: &random) }).write(to: URL(fileURLWithPath: tree.path + "/res/noise/big.bin"))
        try tree.write("res/odr.yaml", "tags:\n  Text: [\"text/**\"]\n  Noise: [\"noise/**\"]\n")
        _ = try tree.builder("res", compression: .default).build(into: tree.path + "/cut")
        var old = tree.builder("res", compression: .default)
        old.indexChunking = .fixedBlocks(.kibibytes(64))
        _ = try old.build(into: tree.path + "/whole")
        let pack = { (dist: String, id: String) throws -> PackDescriptor in
            let manifest = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: tree.path + "/" + dist + "/manifest.json")))
            return try #require(manifest.packs.first { $0.id.rawValue == id })
        }
        let (text, wholeText) = (try pack("cut", "Text"), try pack("whole", "Text"))
        let (noise, wholeNoise) = (try pack("cut", "Noise"), try pack("whole", "Noise"))
        #expect(wholeText.compression?.frames.count == wholeText.chunks.count && wholeNoise.compression?.frames.allSatisfy { $0.size == nil } == true)
        let ratio = Double(try #require(text.compression).bytes.value) / Double(try #require(wholeText.compression).bytes.value)
        #expect(ratio <= 1.02, "compressible text grew by \(ratio)")
        #expect(try #require(noise.compression).frames.count >= 2_500_000 / (256 << 10), "random data is cut at its chunks")
        let noiseRatio = Double(try #require(noise.compression).bytes.value) / Double(try #require(wholeNoise.compression).bytes.value)
        #expect(noiseRatio <= 1.01, "\(noiseRatio)")
    }

    /// A pack file's name is its tar's hash: a rebuild that would cut the same tar into other
    /// frames (here: a version-3 build, which cuts nothing, then a version-4 one) keeps the
    /// published file and its frame table, and never renames new bytes over the name.
    @Test func aPublishedPackFileKeepsItsFramesAcrossBuilders() throws {
        let tree = try TestTree()
        var random = SplitMix(seed: 8)
        try tree.mkdir("res/noise")
        try Data((0..<1_500_000).map { _ in UInt8.random(in: 0...255, using: &random) }).write(to: URL(fileURLWithPath: tree.path + "/res/noise/big.bin"))
        try tree.write("res/odr.yaml", "tags:\n  Noise: [\"noise/**\"]\n")
        var old = tree.builder("res", compression: .default)
        old.indexChunking = .fixedBlocks(.kibibytes(64))
        _ = try old.build(into: tree.path + "/dist")
        let manifest = { try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: tree.path + "/dist/manifest.json"))) }
        let before = try #require(try manifest().packs.first { $0.id.rawValue == "Noise" })
        let path = tree.path + "/dist/" + before.file
        var first = stat()
        #expect(stat(path, &first) == 0)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        _ = try tree.builder("res", compression: .default).build(into: tree.path + "/dist")
        let after = try #require(try manifest().packs.first { $0.id.rawValue == "Noise" })
        #expect(after.file == before.file && after.compression == before.compression, "the frame table changed under the same name")
        var second = stat()
        #expect(stat(path, &second) == 0 && second.st_ino == first.st_ino, "the pack file was replaced")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes)
        #expect(try manifest().revision == 2)
        // A new tar (the file changed) gets the new layout.
        try Data((0..<1_500_000).map { _ in UInt8.random(in: 0...255, using: &random) }).write(to: URL(fileURLWithPath: tree.path + "/res/noise/big.bin"))
        _ = try tree.builder("res", compression: .default).build(into: tree.path + "/dist")
        let changed = try #require(try manifest().packs.first { $0.id.rawValue == "Noise" })
        #expect(changed.file != before.file && (changed.compression?.frames.count ?? 0) > changed.chunks.count)
    }

    @Test func sameInputSameBytesAndPlainBuildsAreUnchanged() throws {
        let tree = try TestTree()
        try Self.writeTree(tree)
        _ = try tree.builder("res", compression: .zstd(level: 5)).build(into: tree.path + "/a")
        _ = try tree.builder("res", compression: .zstd(level: 5)).build(into: tree.path + "/b")
        #expect(try tree.snapshot("a") == tree.snapshot("b"))
        _ = try tree.builder("res", compression: .none).build(into: tree.path + "/plain")
        let plain = try String(contentsOfFile: tree.path + "/plain/manifest.json", encoding: .utf8)
        #expect(!plain.contains("compression") && !plain.contains(".tar.zst"))
        #expect(try tree.entries("plain/packs").allSatisfy { $0.hasSuffix(".tar") })
        #expect(try tree.entries("a/packs").allSatisfy { $0.hasSuffix(".tar.zst") })
    }

    @Test func incompressibleChunksGrowByLessThanOnePercent() throws {
        var random = SplitMix(seed: 99)
        let noise = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &random) }
        let frame = try noise.withUnsafeBytes { try ZstdFrame.compress($0, level: 3) }
        #expect(frame.count <= noise.count + noise.count / 100, "\(frame.count) bytes for \(noise.count)")
        #expect(try frame.withUnsafeBytes { try ZstdFrame.decompress($0, contentSize: noise.count) } == noise)
        #expect(Int64(frame.count) <= FrameTable.maximumFrameLength(chunkSize: Int64(noise.count)))
    }

    @Test func compressArgument() {
        #expect(CompressionSetting(parsing: "zstd") == .zstd(level: 3))
        #expect(CompressionSetting(parsing: "zstd:19") == .zstd(level: 19))
        #expect(CompressionSetting(parsing: "none") == CompressionSetting.none)
        for bad in ["zstd:0", "zstd:99", "zstd:", "gzip", "ZSTD", "zstd:-1", ""] {
            #expect(CompressionSetting(parsing: bad) == nil, "\(bad)")
        }
    }
}
