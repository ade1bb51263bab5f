import Foundation
import ODRFSCore

extension BundleWriter {
    /// The stored form of a written pack tar, still under a temporary name: the tar itself
    /// (`packs/<sha256>.tar`) or its seekable zstd form (`packs/<sha256>.tar.zst`, one frame
    /// per chunk, see ``PackCompressor``; the tar is removed). `<sha256>` is always the
    /// uncompressed tar's, which is what a mount verifies.
    func store(_ tar: String, sha256: ContentHash, position: Int, cuts: [Int64] = []) throws(BuildError) -> (relative: String, temporary: String, compression: PackCompression?) {
        switch compression {
        case .none:
            return ("\(OutputDirectory.packsDirectory)/\(sha256.hex).tar", tar, nil)
        case .zstd(let level):
            let relative = "\(OutputDirectory.packsDirectory)/\(sha256.hex)\(PackCompression.fileExtension)"
            let temporary = output.temporaryPath(in: OutputDirectory.packsDirectory, "\(position).tar.zst")
            let table = try PackCompressor(chunkSize: chunkSize, level: level).compress(tar: tar, to: temporary, cuts: cuts)
            unlink(tar)
            return (relative, temporary, table)
        }
    }
}
