#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ODRFSCompression
import ODRFSCore

/// Turns a written pack tar into its seekable compressed form (`packs/<sha256>.tar.zst`):
/// the tar cut at the chunk boundaries, and inside chunks at the `cuts` given (where the
/// content-defined chunks of large files start and end) where that keeps compression
/// within 2 % of whole chunks (``framesOf(_:cuts:path:)``), each piece one zstd frame (see
/// ``PackCompression``). So an update that needs a few chunks of a large file fetches
/// their frames, not the whole manifest chunks around them; small files keep sharing
/// frames as large as a chunk, which compress best.
///
/// Reads the tar back piece by piece (it was just written, so from the page cache); holds
/// one chunk and one frame in memory at a time. Deterministic: libzstd at a fixed level
/// gives the same frames for the same bytes.
struct PackCompressor {
    let chunkSize: ByteCount
    let level: Int

    /// Writes the frames of the tar at `tarPath` to `outputPath` (created, fsynced) and
    /// returns the frame table for the manifest. `cuts`: offsets in the tar, increasing,
    /// where a frame must start; frames carry their sizes only when there are such cuts
    /// inside chunks (otherwise each frame is a chunk, as releases before them read).
    func compress(tar tarPath: String, to outputPath: String, cuts: [Int64] = []) throws(BuildError) -> PackCompression {
        let input = open(tarPath, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw BuildError.io(SystemCallError("open"), "open pack file", tarPath) }
        defer { close(input) }
        let out: Int32
        do { out = try POSIXFile.create(outputPath) } catch { throw BuildError.io(error, "create pack file", outputPath) }
        defer { close(out) }
        var chunk = [UInt8](repeating: 0, count: Int(chunkSize.value))
        var frames: [PackCompression.Frame] = []
        var offset: Int64 = 0
        var position: Int64 = 0
        var nextCut = cuts.startIndex
        let size = chunkSize.value
        while true {
            let want = Int(size)
            let filled = try readChunk(input, into: &chunk, count: want, path: tarPath)
            if filled == 0 { break }
            // The cuts inside this chunk, as offsets in it.
            while nextCut < cuts.endIndex && cuts[nextCut] <= position { nextCut += 1 }
            var inside: [Int] = []
            while nextCut < cuts.endIndex && cuts[nextCut] < position + Int64(filled) {
                inside.append(Int(cuts[nextCut] - position))
                nextCut += 1
            }
            let result = chunk.withUnsafeBytes { buffer in
                Swift.Result { () throws(BuildError) in
                    try framesOf(UnsafeRawBufferPointer(rebasing: buffer[0..<filled]), cuts: inside, path: tarPath)
                }
            }
            let pieces = try result.get()
            for (frame, pieceSize) in pieces {
                let written = frame.withUnsafeBytes { buffer in Swift.Result { () throws(SystemCallError) in try POSIXFile.writeAll(out, buffer) } }
                do { try written.get() } catch { throw BuildError.io(error, "write pack file", outputPath) }
                frames.append(PackCompression.Frame(offset: offset, length: Int64(frame.count), size: Int64(pieceSize)))
                offset += Int64(frame.count)
            }
            position += Int64(filled)
            if filled < want { break }
        }
        // Every frame a whole chunk: the sizes say nothing, and a manifest without them is
        // the one earlier releases wrote and read.
        if frames.count == Int((position + size - 1) / size) {
            frames = frames.map { PackCompression.Frame(offset: $0.offset, length: $0.length) }
        }
        do { try POSIXFile.sync(out) } catch { throw BuildError.io(error, "fsync pack file", outputPath) }
        return PackCompression(bytes: ByteCount(offset), frames: frames)
    }

    /// How much larger than one frame for the whole chunk its cut frames may be: the
    /// compression a pack keeps (issue 27 asks for 2 %).
    static let cutAllowance = 1.02
    /// The runs of cut pieces tried as frames, finest first.
    static let groupings = [1, 4]

    /// The frames of one chunk (`bytes`, with `cuts` inside it) and the size each holds: cut
    /// at every cut when that compresses within ``cutAllowance`` of the chunk as one frame,
    /// else at every fourth cut when that does, else the chunk whole. Incompressible data
    /// (the common case for large media files) is cut at every cut for nothing; a compressible
    /// large file keeps the ratio of whole chunks and updates by the coarser frames.
    private func framesOf(_ bytes: UnsafeRawBufferPointer, cuts: [Int], path: String) throws(BuildError) -> [([UInt8], Int)] {
        func compress(_ range: Range<Int>) throws(BuildError) -> [UInt8] {
            do {
                return try ZstdFrame.compress(UnsafeRawBufferPointer(rebasing: bytes[range]), level: level)
            } catch {
                throw BuildError(.io, path: path, "cannot compress '\(path)': \(error)")
            }
        }
        let whole = try compress(0..<bytes.count)
        guard !cuts.isEmpty else { return [(whole, bytes.count)] }
        let bounds = [0] + cuts + [bytes.count]
        for group in Self.groupings where group == 1 || cuts.count >= group {
            var frames: [([UInt8], Int)] = []
            var total = 0
            var start = 0
            while start < bounds.count - 1 {
                let end = min(start + group, bounds.count - 1)
                let frame = try compress(bounds[start]..<bounds[end])
                total += frame.count
                frames.append((frame, bounds[end] - bounds[start]))
                start = end
            }
            if Double(total) <= Self.cutAllowance * Double(whole.count) { return frames }
        }
        return [(whole, bytes.count)]
    }

    /// Reads `count` bytes (at most `chunk.count`) from `fd` into `chunk`; fewer only at the
    /// end of the file.
    private func readChunk(_ fd: Int32, into chunk: inout [UInt8], count: Int, path: String) throws(BuildError) -> Int {
        var filled = 0
        while filled < count {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, count - filled) }
            if n < 0 {
                if errno == EINTR { continue }
                throw BuildError.io(SystemCallError("read"), "read pack file", path)
            }
            if n == 0 { break }
            filled += n
        }
        return filled
    }
}
