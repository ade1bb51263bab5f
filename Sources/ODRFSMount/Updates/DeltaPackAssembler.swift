import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSRuntime
import ODRFSStore

/// Builds a changed pack of a new revision in the cache from what is already there plus
/// the missing spans (see ``PackAssemblyPlan``), verifies it against the new manifest's
/// chunk hashes and publishes it like any download — it is the third source of the
/// acquisition pipeline (``DeltaPackSource``): never an unverified byte.
///
/// Any failure — a source pack gone, a range the origin will not serve, a chunk that does
/// not verify — discards the file (the pipeline does) and throws; the caller then
/// downloads the pack whole.
struct DeltaPackAssembler {
    let origin: any Origin
    let store: PackStore
    let io: IOExecutor
    /// The mounted revision's manifest: where the reused spans come from.
    let mounted: Manifest
    /// The new revision's index and chunk size.
    let index: FileIndex
    let chunkSize: ByteCount
    let logger: Logger
    /// Told the size of each piece of a span as it arrives (the update's progress watchdog).
    var received: @Sendable (Int) -> Void = { _ in }

    /// Assembles, verifies and publishes `pack` through the acquisition pipeline (a
    /// ``DeltaPackSource`` into the cache). Returns the bytes fetched from the origin.
    @discardableResult
    func assemble(_ pack: PackDescriptor, plan: PackAssemblyPlan) async throws(FetchError) -> Int64 {
        var source = DeltaPackSource(assembler: self, pack: pack, plan: plan)
        let pipeline = PackPipeline(origin: origin, sink: store, chunkSize: chunkSize, io: io, logger: logger)
        _ = try await pipeline.run(&source, pack)
        return source.fetched
    }

    /// The guesses first, then the spans known to be right (which may overwrite a guess),
    /// then the blocks that verify, then the rebuilt tar framing. Returns the blocks that
    /// did not verify, to be fetched.
    func writeLocalBytes(_ plan: PackAssemblyPlan, into file: AssemblyFile) async throws(FetchError) -> [Range<Int64>] {
        let (index, mounted, store, logger) = (self.index, self.mounted, self.store, self.logger)
        return try await io.run { () throws(FetchError) -> [Range<Int64>] in
            let fd = file.descriptor
            var sources = SourcePacks(mounted: mounted, store: store)
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            for span in plan.speculative + plan.reused {
                let source = try sources.descriptor(of: span.source)
                var done: Int64 = 0
                while done < span.length {
                    let count = Int(min(Int64(buffer.count), span.length - done))
                    let n = buffer.withUnsafeMutableBytes { pread(source, $0.baseAddress, count, off_t(span.sourceOffset + done)) }
                    guard n > 0 else { throw FetchError(.localIO, "cannot read a cached pack for the update: \(n < 0 ? String(cString: strerror(errno)) : "short file")") }
                    try Self.write(buffer[0..<n], to: fd, at: span.target + done, path: file.path)
                    done += Int64(n)
                }
            }
            let blocks = try Self.copyBlocks(plan.blocks, sources: &sources, into: fd, path: file.path)
            if !plan.blocks.isEmpty {
                logger.debug("update: copied \(blocks.copied) bytes in unchanged blocks, \(blocks.failed.count) blocks did not verify and are fetched")
            }
            if plan.rebuildsFraming {
                // Padding and the end-of-archive blocks are zeros: the sized file already has them.
                var tar = TarWriter()
                for entry in plan.files {
                    guard let attributes = index.entry(entry.entry) else { continue }
                    let (header, contentOffset) = tar.beginFile(path: index.path(of: entry.entry), size: attributes.size,
                                                                permissions: attributes.permissions,
                                                                modificationTime: attributes.modificationTime)
                    try Self.write(header, to: fd, at: Int64(contentOffset) - Int64(header.count), path: file.path)
                    _ = tar.endFile()
                }
            }
            return blocks.failed
        }
    }

    /// The missing spans, coalesced, or for a compressed pack the verified chunks holding
    /// them (see ``PackSpanFetcher``); returns the bytes fetched.
    func fetchRemote(_ pack: PackDescriptor, spans: [Range<Int64>], into file: AssemblyFile) async throws(FetchError) -> Int64 {
        let (io, fd, path, received) = (self.io, file.descriptor, file.path, self.received)
        return try await PackSpanFetcher(origin: origin).fetch(pack, chunkSize: chunkSize, spans: spans) { (offset: Int64, bytes: [UInt8]) async throws(FetchError) in
            try await io.run { () throws(FetchError) in try Self.write(bytes, to: fd, at: offset, path: path) }
            received(bytes.count)
        }
    }

    /// The byte ranges of the chunks whose hash differs from the new manifest's.
    func failingChunks(_ pack: PackDescriptor, file: AssemblyFile) async throws(FetchError) -> [Range<Int64>] {
        let size = chunkSize.value
        return try await io.run { () throws(FetchError) -> [Range<Int64>] in
            guard size > 0, size <= 1 << 30 else { return [0..<pack.bytes.value] }
            // Exactly the pack's size, as the final verification checks: a pass that finds
            // no failing chunk stands for it.
            var info = stat()
            guard fstat(file.descriptor, &info) == 0, Int64(info.st_size) == pack.bytes.value else {
                throw FetchError(.localIO, "\(file.path) is not \(pack.bytes.value) bytes")
            }
            var failing: [Range<Int64>] = []
            var buffer = [UInt8](repeating: 0, count: Int(size))
            var start: Int64 = 0
            for expected in pack.chunks where start < pack.bytes.value {
                let length = Int(min(size, pack.bytes.value - start))
                var got = 0
                while got < length {
                    let n = buffer.withUnsafeMutableBytes { pread(file.descriptor, $0.baseAddress! + got, length - got, off_t(start + Int64(got))) }
                    guard n > 0 else { throw FetchError(.localIO, "cannot read back \(file.path)") }
                    got += n
                }
                if ContentHash.of(buffer[0..<length]) != expected { failing.append(start..<(start + Int64(length))) }
                start += Int64(length)
            }
            return failing
        }
    }

    /// Reads the assembled file back through the chunk hashes of the new manifest.
    func verify(_ pack: PackDescriptor, file: AssemblyFile) async throws(FetchError) {
        let chunkSize = self.chunkSize
        try await io.run { () throws(FetchError) in
            var verifier = PackVerifier(expected: pack, chunkSize: chunkSize)
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            var offset: Int64 = 0
            while true {
                let n = buffer.withUnsafeMutableBytes { pread(file.descriptor, $0.baseAddress, $0.count, off_t(offset)) }
                guard n >= 0 else { throw FetchError(.localIO, "cannot read back \(file.path): \(String(cString: strerror(errno)))") }
                if n == 0 { break }
                buffer.withUnsafeBytes { verifier.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                offset += Int64(n)
                if verifier.firstMismatchedChunk != nil { break }
            }
            do {
                try verifier.finish()
            } catch {
                throw FetchError(.corrupt, "the pack assembled for the update does not verify: \(error)")
            }
        }
    }

    static func write<Bytes: ContiguousBytes>(_ bytes: Bytes, to fd: Int32, at offset: Int64, path: String) throws(FetchError) {
        let result: Int = bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let n = pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + Int64(done)))
                if n < 0 {
                    if errno == EINTR { continue }
                    return -Int(errno)
                }
                done += n
            }
            return done
        }
        if result < 0 {
            let code = Int32(-result)
            throw FetchError(code == ENOSPC ? .noSpace : .localIO, "cannot write \(path): \(String(cString: strerror(code)))")
        }
    }
}
