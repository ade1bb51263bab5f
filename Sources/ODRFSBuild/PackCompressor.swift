#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ODRFSCompression
import ODRFSCore

/// Turns a written pack tar into its seekable compressed form (`packs/<sha256>.tar.zst`):
/// the tar cut at the chunk boundaries, each chunk one zstd frame (see ``PackCompression``).
///
/// Reads the tar back chunk by chunk (it was just written, so from the page cache); holds
/// one chunk and one frame in memory at a time. Deterministic: libzstd at a fixed level
/// gives the same frames for the same bytes.
struct PackCompressor {
    let chunkSize: ByteCount
    let level: Int

    /// Writes the frames of the tar at `tarPath` to `outputPath` (created, fsynced) and
    /// returns the frame table for the manifest.
    func compress(tar tarPath: String, to outputPath: String) throws(BuildError) -> PackCompression {
        let input = open(tarPath, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw BuildError.io(SystemCallError("open"), "open pack file", tarPath) }
        defer { close(input) }
        let out: Int32
        do { out = try POSIXFile.create(outputPath) } catch { throw BuildError.io(error, "create pack file", outputPath) }
        defer { close(out) }
        var chunk = [UInt8](repeating: 0, count: Int(chunkSize.value))
        var frames: [PackCompression.Frame] = []
        var offset: Int64 = 0
        while true {
            let filled = try readChunk(input, into: &chunk, path: tarPath)
            if filled == 0 { break }
            let frame: [UInt8]
            do {
                frame = try chunk.withUnsafeBytes { buffer throws(ZstdError) in
                    try ZstdFrame.compress(UnsafeRawBufferPointer(rebasing: buffer[0..<filled]), level: level)
                }
            } catch {
                throw BuildError(.io, path: tarPath, "cannot compress '\(tarPath)': \(error)")
            }
            let written = frame.withUnsafeBytes { buffer in Swift.Result { () throws(SystemCallError) in try POSIXFile.writeAll(out, buffer) } }
            do { try written.get() } catch { throw BuildError.io(error, "write pack file", outputPath) }
            frames.append(PackCompression.Frame(offset: offset, length: Int64(frame.count)))
            offset += Int64(frame.count)
            if filled < chunk.count { break }
        }
        do { try POSIXFile.sync(out) } catch { throw BuildError.io(error, "fsync pack file", outputPath) }
        return PackCompression(bytes: ByteCount(offset), frames: frames)
    }

    /// Fills `chunk` from `fd`; fewer bytes only at the end of the file.
    private func readChunk(_ fd: Int32, into chunk: inout [UInt8], path: String) throws(BuildError) -> Int {
        var filled = 0
        while filled < chunk.count {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
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
