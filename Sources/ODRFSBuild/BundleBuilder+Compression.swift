import ODRFSCore

extension BundleBuilder {
    /// Moves a written pack tar to its content-addressed name, compressing it first when
    /// ``compression`` asks for it; returns the dist-dir path and the frame table (nil for a
    /// plain tar). Both names carry the uncompressed tar's SHA-256: the manifest's `sha256`
    /// and chunk hashes describe the tar in either case, so verification and the cache do
    /// not depend on how the pack travelled.
    func publishPack(_ partial: String, sha256: ContentHash, staging: String) throws(BuildError) -> (String, PackCompression?) {
        switch compression {
        case .none:
            let file = "packs/\(sha256.hex).tar"
            do { try POSIXFile.rename(partial, staging + "/" + file) } catch { throw BuildError.io(error, "rename", partial) }
            return (file, nil)
        case .zstd(let level):
            let file = "packs/\(sha256.hex)\(PackCompression.fileExtension)"
            let compressedPartial = partial + ".zst"
            let table = try PackCompressor(chunkSize: chunkSize, level: level).compress(tar: partial, to: compressedPartial)
            do { try POSIXFile.rename(compressedPartial, staging + "/" + file) } catch { throw BuildError.io(error, "rename", compressedPartial) }
            POSIXFile.removeTree(partial)
            return (file, table)
        }
    }
}
