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
        Self.expectRefused(.invalidSize, "a frame of 1024 bytes is 1...") { $0.frames[0].length = 1 << 20 }
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

    /// Pack 1 (3000 bytes, chunks of 1024) cut into six frames, as `odrfs build` cuts the
    /// chunks of a large file: chunk 0 in two, chunk 1 whole, chunk 2 in three.
    static let sizes: [Int64] = [500, 524, 1024, 100, 300, 552]

    static func sized(_ change: (inout PackCompression) -> Void = { _ in }) -> Manifest {
        var manifest = compressed()
        var frames: [PackCompression.Frame] = []
        var offset: Int64 = 0
        for (n, size) in sizes.enumerated() {
            frames.append(PackCompression.Frame(offset: offset, length: 50 + Int64(n), size: size))
            offset += 50 + Int64(n)
        }
        manifest.packs[1].compression = PackCompression(bytes: ByteCount(offset), frames: frames)
        change(&manifest.packs[1].compression!)
        manifest.bundleVersion = Manifest.computeBundleVersion(index: manifest.index.sha256, packs: manifest.packs)
        return manifest
    }

    @Test func sizedFramesMapChunksToRunsOfFrames() throws {
        let encoded = Self.sized().encoded()
        // Sized frames travel as one compact string, not an object each.
        #expect(String(decoding: encoded, as: UTF8.self).contains("\"frameTable\""))
        #expect(!String(decoding: encoded, as: UTF8.self).contains("\"size\""))
        let manifest = try Manifest.decode(encoded)
        let table = try #require(try FrameTable(validating: manifest.packs[1], chunkSize: manifest.chunkSize))
        #expect(table.count == 3 && table.frameCount == 6)
        #expect(table.frames(ofChunk: 0) == 0..<2 && table.frames(ofChunk: 1) == 2..<3 && table.frames(ofChunk: 2) == 3..<6)
        #expect(table.uncompressedRange(ofFrame: 1) == 500..<1024)
        #expect(table.uncompressedRange(ofFrame: 4) == 2148..<2448)
        #expect(table.compressedRange(ofFrame: 1) == 50..<101)
        #expect(table.compressedRange(ofChunk: 2) == table.compressedRange(ofFrame: 3).lowerBound..<table.compressedBytes)
        #expect((0..<6).map(table.chunk(ofFrame:)) == [0, 0, 1, 2, 2, 2])
        #expect(table.frame(containing: 0) == 0 && table.frame(containing: 499) == 0 && table.frame(containing: 500) == 1)
        #expect(table.frame(containing: 2999) == 5)
        // A span inside chunk 2 needs one frame of it, not the whole chunk.
        #expect(table.frameRuns(touching: [2200..<2300]) == [4...4])
        #expect(table.frameRuns(touching: [2200..<2300, 10..<20, 600..<1500]) == [0...2, 4...4])
        #expect(table.compressedBytes(ofFrameRuns: [4...4]) == 54)
        #expect(table.chunk(startingAt: table.compressedRange(ofFrame: 2).lowerBound) == 1)
        #expect(table.chunk(startingAt: table.compressedRange(ofFrame: 1).lowerBound) == nil, "frame 1 starts no chunk")
    }

    static func expectSizedRefused(_ kind: ManifestError.Kind, _ text: String, _ change: (inout PackCompression) -> Void) {
        do {
            _ = try Manifest.decode(sized(change).encoded())
            Issue.record("expected \(kind) for \(text)")
        } catch {
            #expect(error.kind == kind, "\(error)")
            #expect(error.message.contains(text), "\(error.message)")
        }
    }

    @Test func hostileSizedTablesAreRefused() {
        Self.expectSizedRefused(.invalidSize, "frame 3 has size none") { $0.frames[3].size = nil }
        Self.expectSizedRefused(.chunkCountMismatch, "6 frames and 3 chunk hashes") { $0.frames[0].size = nil }
        Self.expectRefused(.inconsistent, "frame 1 has a size but the first frame has none") { $0.frames[1].size = 1024 }
        Self.expectSizedRefused(.invalidSize, "frame 2 has size 0") { $0.frames[2].size = 0 }
        Self.expectSizedRefused(.invalidSize, "frame 2 has size -3") { $0.frames[2].size = -3 }
        Self.expectSizedRefused(.invalidSize, "frame 2 has size 1025") { $0.frames[2].size = 1025 }
        // Beyond 2^52: the frame table string cannot even carry it.
        Self.expectSizedRefused(.syntax, "frameTable is not base64") { $0.frames[1].size = .max }
        // Frame 1 reaching into chunk 1: a frame never crosses a chunk boundary.
        Self.expectSizedRefused(.inconsistent, "frame 1 (525 bytes at 500) crosses a chunk boundary") { $0.frames[1].size = 525 }
        Self.expectSizedRefused(.inconsistent, "frames hold 2999 bytes") { $0.frames[5].size = 551 }
        Self.expectSizedRefused(.inconsistent, "crosses a chunk boundary or the end of the pack") { $0.frames[5].size = 553 }
        // A frame far larger than libzstd makes from its size: a decompression-bomb carrier.
        Self.expectSizedRefused(.invalidSize, "a frame of 100 bytes is 1...") { compression in
            compression.frames[3].length = 1 << 20
            for n in 4..<6 { compression.frames[n].offset += (1 << 20) - 53 }
            compression.bytes = ByteCount(compression.bytes.value + (1 << 20) - 53)
        }
        Self.expectSizedRefused(.chunkCountMismatch, "2 frames") { $0.frames.removeLast(4) }
    }

    @Test func theFrameTableStringRoundTripsAndRefusesWhatItCannotHold() throws {
        let frames = [PackCompression.Frame(offset: 0, length: 300, size: 1024), PackCompression.Frame(offset: 300, length: 1, size: 1),
                      PackCompression.Frame(offset: 301, length: 1 << 40, size: 5)]
        let table = try #require(PackCompression(bytes: ByteCount(301 + (1 << 40)), frames: frames).encodedFrameTable)
        #expect(PackCompression.decodeFrameTable(table) == frames)
        // (length, size) pairs: 300 = 0xAC 0x02, 1024 = 0x80 0x08.
        #expect(Array(Data(base64Encoded: table)!.prefix(4)) == [0xAC, 0x02, 0x80, 0x08])
        let encode = { (bytes: [UInt8]) in Data(bytes).base64EncodedString() }
        let refused: [(String, String)] = [
            ("not base64", "%%%"),
            ("empty", ""),
            ("an odd count of numbers", encode([5, 5, 5])),
            ("a number cut off", encode([5, 0x85])),
            ("nine LEB128 bytes", encode([1] + [UInt8](repeating: 0xFF, count: 8) + [0x01])),
            ("above 2^52", encode([0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10, 1])),
            ("offsets past 2^52", encode([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x08, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x08, 1])),
        ]
        for (name, text) in refused { #expect(PackCompression.decodeFrameTable(text) == nil, "\(name)") }
        // Frames without sizes, or not back to back, are listed as objects.
        #expect(PackCompression(bytes: ByteCount(2), frames: [PackCompression.Frame(offset: 0, length: 2)]).encodedFrameTable == nil)
        #expect(PackCompression(bytes: ByteCount(2), frames: [PackCompression.Frame(offset: 1, length: 1, size: 1)]).encodedFrameTable == nil)
    }

    @Test func aManifestWithBothFramesAndAFrameTableIsRefused() throws {
        var text = String(decoding: Self.sized().encoded(), as: UTF8.self)
        text = text.replacingOccurrences(of: "\"frameTable\"", with: "\"frames\" : [], \"frameTable\"")
        #expect(throws: ManifestError.self) { try Manifest.decode(Data(text.utf8)) }
        text = String(decoding: Self.sized().encoded(), as: UTF8.self).replacingOccurrences(of: "\"frameTable\"", with: "\"frameTablx\"")
        #expect(throws: ManifestError.self) { try Manifest.decode(Data(text.utf8)) }
    }

    /// Found in review: a fixed slack of 4 KiB a frame let a manifest of 1-byte frames make
    /// a download about 4,000 times its pack. The slack is now libzstd's bound plus a header.
    @Test func tinyFramesCannotCarryKilobytes() {
        #expect(FrameTable.maximumFrameLength(chunkSize: 1) <= 300)
        #expect(FrameTable.maximumFrameLength(chunkSize: 1 << 20) < (1 << 20) + (1 << 20) / 100)
        Self.expectSizedRefused(.invalidSize, "a frame of 100 bytes is 1...356") { compression in
            compression.frames[3].length = 400
            for n in 4..<6 { compression.frames[n].offset += 400 - 53 }
            compression.bytes = ByteCount(compression.bytes.value + 400 - 53)
        }
    }
}
