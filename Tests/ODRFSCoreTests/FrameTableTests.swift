import Foundation
import Testing
@testable import ODRFSCore

/// The `compression` object of a pack comes from an origin: every way it can lie is refused
/// by `Manifest.decode`, and a manifest without it reads exactly as before.
@Suite struct FrameTableTests {
    /// The valid test manifest with every pack compressed into frames of the given lengths
    /// (one per chunk: 1024-byte chunks, so 0, 3, 1 and 1 frames).
    static func compressed(_ lengths: (Int) -> Int64 = { _ in 100 }) -> Manifest {
        var manifest = ManifestTests.valid()
        for index in manifest.packs.indices {
            var offset: Int64 = 0
            var frames: [PackCompression.Frame] = []
            for chunk in manifest.packs[index].chunks.indices {
                frames.append(PackCompression.Frame(offset: offset, length: lengths(chunk)))
                offset += lengths(chunk)
            }
            manifest.packs[index].compression = PackCompression(bytes: ByteCount(offset), frames: frames)
        }
        return manifest
    }

    static func expectRefused(_ kind: ManifestError.Kind, _ text: String, _ change: (inout PackCompression) -> Void) {
        var manifest = compressed()
        change(&manifest.packs[1].compression!)
        manifest.bundleVersion = Manifest.computeBundleVersion(index: manifest.index.sha256, packs: manifest.packs)
        do {
            _ = try Manifest.decode(manifest.encoded())
            Issue.record("expected \(kind) for \(text)")
        } catch {
            #expect(error.kind == kind, "\(error)")
            #expect(error.message.contains(text), "\(error.message)")
        }
    }

    @Test func aValidTableMapsChunksToFrames() throws {
        let manifest = try Manifest.decode(Self.compressed { 100 + Int64($0) }.encoded())
        let pack = manifest.packs[1]
        let table = try #require(try FrameTable(validating: pack, chunkSize: manifest.chunkSize))
        #expect(table.count == 3)
        #expect(table.compressedRange(ofChunk: 0) == 0..<100)
        #expect(table.compressedRange(ofChunk: 2) == 201..<303)
        #expect(table.uncompressedRange(ofChunk: 2) == 2048..<3000)
        #expect(table.chunk(startingAt: 201) == 2)
        #expect(table.chunk(startingAt: 200) == nil)
        #expect(table.compressedBytes == 303)
    }

    @Test func aManifestWithoutCompressionEncodesAsBefore() throws {
        let plain = ManifestTests.valid().encoded()
        #expect(!String(decoding: plain, as: UTF8.self).contains("compression"))
        let decoded = try Manifest.decode(plain)
        #expect(decoded.packs.allSatisfy { $0.compression == nil })
        #expect(try FrameTable(validating: decoded.packs[1], chunkSize: decoded.chunkSize) == nil)
    }

    @Test func hostileTablesAreRefused() {
        Self.expectRefused(.unsupportedFormat, "format 'gzip'") { $0.format = "gzip" }
        Self.expectRefused(.chunkCountMismatch, "2 frames") { $0.frames.removeLast() }
        Self.expectRefused(.inconsistent, "frame 1 starts at 101") { $0.frames[1].offset += 1 }
        Self.expectRefused(.inconsistent, "frame 0 starts at -5") { $0.frames[0].offset = -5 }
        Self.expectRefused(.invalidSize, "frame 2 is 0 bytes") { $0.frames[2].length = 0 }
        Self.expectRefused(.invalidSize, "frame 1 is -100 bytes") { $0.frames[1].length = -100 }
        Self.expectRefused(.invalidSize, "frame 0 is \(Int64.max) bytes") { $0.frames[0].length = .max }
        // Bigger than any frame libzstd makes from a 1 KiB chunk: a decompression-bomb carrier.
        Self.expectRefused(.invalidSize, "a frame of a 1024-byte chunk is 1...") { $0.frames[0].length = 1 << 20 }
        Self.expectRefused(.invalidSize, "frames end at 300 but the compressed size is 301") { $0.bytes = ByteCount(301) }
        Self.expectRefused(.invalidSize, "ends past the compressed size") { $0.bytes = ByteCount(299) }
        Self.expectRefused(.invalidSize, "compressed size -1") { $0.bytes = ByteCount(-1) }
        Self.expectRefused(.invalidSize, "compressed size \(Int64.max)") { $0.bytes = ByteCount(.max) }
    }

    @Test func offsetsNearTheTopOfInt64DoNotTrap() {
        // Contiguity is checked before the sum, and the sum with overflow detection.
        Self.expectRefused(.inconsistent, "starts at") { compression in
            compression.frames[1].offset = .max - 10
        }
    }
}
