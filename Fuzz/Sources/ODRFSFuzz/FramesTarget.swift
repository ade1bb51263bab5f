import ODRFSCompression
import ODRFSCore

/// A compressed pack as a fetcher meets it: the frame table of its manifest entry (numbers
/// from the input) and one frame through the decoder wrapper.
///
/// Input: 8 bytes of declared content size (taken modulo 256 KiB), then the frame. The same
/// leading 48 bytes also give six frame lengths of a table over a pack of matching size, and
/// when the input is longer, the next 48 bytes six frame sizes (frames that follow file
/// chunks, several to a chunk).
enum FramesTarget {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 8 else { return }
        let declared = Int(bytes.loadUnaligned(as: UInt64.self) % (256 * 1024))
        let frame = UnsafeRawBufferPointer(rebasing: bytes[8...])
        do {
            let content = try ZstdFrame.decompress(frame, contentSize: declared)
            check(content.count == declared, "decoded \(content.count) bytes, \(declared) declared")
        } catch {
            // Refused: fine, as long as it returned.
        }
        if bytes.count >= 48 { table(bytes) }
    }

    /// A pack of six 1 KiB chunks whose frames' offsets, lengths (and sizes) come from the
    /// input; whatever validates must map every chunk and frame inside the file, contiguously.
    private static func table(_ bytes: UnsafeRawBufferPointer) {
        let numbers = (0..<6).map { Int64(bitPattern: bytes.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self)) }
        let sizes: [Int64]? = bytes.count >= 96
            ? (0..<6).map { n in
                let raw = Int64(bitPattern: bytes.loadUnaligned(fromByteOffset: 48 + n * 8, as: UInt64.self))
                return raw % 5 == 0 ? raw : (raw & 0x7FF)
            } : nil
        var frames: [PackCompression.Frame] = []
        var offset = numbers[0] % 3 == 0 ? Int64(0) : numbers[0]
        for (n, length) in numbers.enumerated() {
            let small = length % 3 == 0 ? length : (length & 0x7FF)
            frames.append(PackCompression.Frame(offset: offset, length: small, size: sizes?[n]))
            offset = offset &+ small
        }
        let chunks = (0..<6).map { ContentHash.of([UInt8($0)]) }
        let pack = PackDescriptor(id: PackID("A"), tags: [Tag("A")], file: "packs/a.tar.zst", bytes: ByteCount(6 * 1024 - 7),
                                  sha256: ContentHash.of([9]), chunks: chunks, files: 1,
                                  compression: PackCompression(bytes: ByteCount(offset), frames: frames))
        guard let table = try? FrameTable(validating: pack, chunkSize: .kibibytes(1)) else { return }
        var end: Int64 = 0
        for chunk in 0..<table.count {
            let range = table.compressedRange(ofChunk: chunk)
            check(range.lowerBound == end && !range.isEmpty && range.upperBound <= table.compressedBytes, "frame \(chunk) at \(range)")
            check(table.chunk(startingAt: range.lowerBound) == chunk, "frame \(chunk) not found by its offset")
            let plain = table.uncompressedRange(ofChunk: chunk)
            check(!plain.isEmpty && plain.upperBound <= table.uncompressedBytes, "chunk \(chunk) at \(plain)")
            end = range.upperBound
        }
        check(end == table.compressedBytes, "frames end at \(end), file is \(table.compressedBytes)")
        var plainEnd: Int64 = 0
        for frame in 0..<table.frameCount {
            let plain = table.uncompressedRange(ofFrame: frame)
            check(plain.lowerBound == plainEnd && !plain.isEmpty, "frame \(frame) holds \(plain)")
            check(table.frames(ofChunk: table.chunk(ofFrame: frame)).contains(frame), "frame \(frame) is not among its chunk's")
            check(table.frame(containing: plain.lowerBound) == frame, "frame \(frame) is not found by its first byte")
            plainEnd = plain.upperBound
        }
        check(plainEnd == table.uncompressedBytes, "frames hold \(plainEnd) of \(table.uncompressedBytes) bytes")
    }
}
