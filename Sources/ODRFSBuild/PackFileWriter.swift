#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import ODRFSCore

/// Writes one pack as a tar file, hashing every byte on its way out (whole file and chunks), and
/// records where each file's content starts. Source files are streamed, never loaded whole.
struct PackFileWriter {
    /// Where a file's bytes ended up.
    struct Placement: Sendable {
        var pack: PackNumber
        var dataOffset: UInt64
        /// The file's own SHA-256, for the index's digest table.
        var sha256: ContentHash
        /// Files of at least ``FileIndexWriter/minimumBlockHashedSize``: their content-defined
        /// chunks, for the index's chunk table.
        var chunks: [FileChunk]?
        /// The same files' fixed blocks, when the index is a version-3 one.
        var blockHashes: [BlockHash]?
    }

    struct Result {
        var digests: ChunkHasher.Digests
        var placements: [(path: String, placement: Placement)]
        /// Where a compressed pack may start frames (``PackCompressor``), as offsets in the
        /// pack, increasing: each file's tar entry, at least ``minimumFrame`` after the cut
        /// before it (so tiny files never make tiny frames), and the content-defined chunks
        /// of large files. An update then fetches the frames holding what changed.
        var frameCuts: [Int64]
    }

    /// The smallest stretch between two file-entry cuts: the content-defined chunks' minimum.
    static let minimumFrame: Int64 = 16 << 10

    let resourceRoot: String
    let chunkSize: ByteCount
    var indexChunking: IndexChunking = .contentDefined(.standard)

    /// Writes the pack to `path` (which must not exist). With `sync` false the caller fsyncs,
    /// or discards the file unsynced when its content is already in the dist dir.
    func write(files: [ScannedFile], number: PackNumber, to path: String, sync: Bool = true) throws(BuildError) -> Result {
        let out: Int32
        do { out = try POSIXFile.create(path) } catch { throw BuildError.io(error, "create pack file", path) }
        defer { close(out) }
        var tar = TarWriter()
        var hasher = ChunkHasher(chunkSize: chunkSize)
        var placements: [(String, Placement)] = []
        placements.reserveCapacity(files.count)
        var frameCuts: [Int64] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 20)

        func emit(_ bytes: UnsafeRawBufferPointer) throws(BuildError) {
            hasher.update(bytes)
            do { try POSIXFile.writeAll(out, bytes) } catch { throw BuildError.io(error, "write pack file", path) }
        }
        func emit(_ bytes: [UInt8]) throws(BuildError) {
            let result = bytes.withUnsafeBytes { b in Swift.Result { () throws(BuildError) in try emit(b) } }
            try result.get()
        }

        let root = open(resourceRoot, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else { throw BuildError.io(SystemCallError("open"), "open the resource directory", resourceRoot) }
        defer { close(root) }
        for file in files {
            let source = resourceRoot + "/" + file.path
            let input: Int32
            do {
                input = try POSIXFile.openRegularFile(beneath: root, file.components)
            } catch {
                switch error {
                case .system(let error):
                    throw BuildError(.unreadable, path: source, "cannot read '\(source)': \(error.reason)")
                case .notRegular(let why):
                    throw BuildError(.unsupportedFileType, path: source,
                                     "'\(source)' changed while the build ran (\(why)); build again when the resource directory is quiet")
                }
            }
            defer { close(input) }
            let entryStart = Int64(tar.offset)
            // Version-3 bundles are for releases that read one frame per chunk only.
            if case .contentDefined = indexChunking, entryStart - (frameCuts.last ?? 0) >= Self.minimumFrame {
                frameCuts.append(entryStart)
            }
            let (header, contentOffset) = tar.beginFile(path: file.path, size: file.size, permissions: file.permissions,
                                                       modificationTime: file.modificationTime)
            try emit(header)
            var remaining = file.size
            var fileHasher = SHA256()
            let large = file.size >= UInt64(FileIndexWriter.minimumBlockHashedSize.value)
            var chunker: ContentChunker?
            var blockHasher: BlockHasher?
            switch indexChunking {
            case .contentDefined(let parameters) where large: chunker = ContentChunker(parameters)
            case .fixedBlocks(let size) where large: blockHasher = BlockHasher(blockSize: size)
            default: break
            }
            while true {
                let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
                if n < 0 {
                    if errno == EINTR { continue }
                    let error = SystemCallError("read")
                    throw BuildError(.unreadable, path: source, "cannot read '\(source)': \(error.reason)")
                }
                if n == 0 { break }
                // The header already promised `size` bytes; a file that grows cannot be packed faithfully.
                guard UInt64(n) <= remaining else { throw changed(source) }
                remaining -= UInt64(n)
                buffer.withUnsafeBytes {
                    fileHasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n]))
                    chunker?.update(UnsafeRawBufferPointer(rebasing: $0[0..<n]))
                    blockHasher?.update(UnsafeRawBufferPointer(rebasing: $0[0..<n]))
                }
                let result = buffer.withUnsafeBytes { b in Swift.Result { () throws(BuildError) in try emit(UnsafeRawBufferPointer(rebasing: b[0..<n])) } }
                try result.get()
            }
            guard remaining == 0 else { throw changed(source) }
            try emit(tar.endFile())
            let chunks = chunker.map { chunker in
                var chunker = chunker
                var start: Int64 = 0
                return chunker.finalize().map { chunk in
                    defer { start = Int64(chunk.end) }
                    return FileChunk(offset: start, length: Int64(chunk.end) - start, digest: chunk.digest)
                }
            }
            // The first chunk starts one header after the entry (a cut already, or too close).
            for chunk in (chunks ?? []).dropFirst() { frameCuts.append(Int64(contentOffset) + chunk.offset) }
            placements.append((file.path, Placement(pack: number, dataOffset: contentOffset,
                                                   sha256: ContentHash(digest: fileHasher.finalize()),
                                                   chunks: chunks, blockHashes: blockHasher?.finalize())))
        }
        try emit(tar.finish())
        if sync {
            do { try POSIXFile.sync(out) } catch { throw BuildError.io(error, "fsync pack file", path) }
        }
        return Result(digests: hasher.finalize(), placements: placements, frameCuts: frameCuts)
    }

    private func changed(_ source: String) -> BuildError {
        BuildError(.io, path: source, "'\(source)' changed size while it was being packed; build again when the resource directory is quiet")
    }
}
