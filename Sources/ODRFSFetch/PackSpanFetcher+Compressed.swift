import NIOCore
import ODRFSCore
import ODRFSRuntime

extension PackSpanFetcher {
    /// The spans of a compressed pack: the chunks they touch, fetched as frames (each run
    /// of adjacent frames one range request, or the file read once from an origin without
    /// ranges), each decoded and verified by ``FrameDecoder`` on its own executor — never
    /// the cooperative pool — and written whole at its uncompressed offset. A frame that
    /// does not decode or verify fails the fetch as corrupt; nothing of it is written.
    /// Returns the compressed bytes transferred.
    func fetchFrames(_ pack: PackDescriptor, table: FrameTable, spans: [Range<Int64>],
                     write: (Int64, [UInt8]) async throws(FetchError) -> Void) async throws(FetchError) -> Int64 {
        let runs = table.chunkRuns(touching: spans)
        guard !runs.isEmpty else { return 0 }
        let decoder = FrameDecoder(pack: pack, table: table, source: origin.displayName)
        let compressedBytes = ByteCount(table.compressedBytes)
        if origin.servesRanges {
            var fetched: Int64 = 0
            for run in runs {
                let range = table.compressedRange(ofChunks: run)
                var assembler = FrameAssembler(table: table, startingAt: run.lowerBound)
                try await origin.download(pack.file, range: range, fileBytes: compressedBytes) { (bytes: ByteBuffer) async throws(FetchError) in
                    for frame in try assembler.append(bytes) {
                        try await Self.deliver(frame, decoder: decoder, table: table, write: write)
                    }
                }
                guard assembler.nextChunk == run.upperBound + 1 else {
                    throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(origin.displayName): the range \(range) ended inside frame \(assembler.nextChunk)")
                }
                fetched += Int64(range.count)
            }
            return fetched
        }
        var wanted = Set<Int>()
        for run in runs { wanted.formUnion(run) }
        var assembler = FrameAssembler(table: table)
        try await origin.download(pack.file, expectedBytes: compressedBytes) { (bytes: ByteBuffer) async throws(FetchError) in
            for frame in try assembler.append(bytes) where wanted.contains(frame.chunk) {
                try await Self.deliver(frame, decoder: decoder, table: table, write: write)
            }
        }
        guard assembler.isComplete else {
            throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(origin.displayName) ended at byte \(assembler.offset) of \(table.compressedBytes)")
        }
        return table.compressedBytes
    }

    /// Decodes and verifies one frame off the cooperative pool, then writes its chunk.
    private static func deliver(_ frame: FrameAssembler.Frame, decoder: FrameDecoder, table: FrameTable,
                                write: (Int64, [UInt8]) async throws(FetchError) -> Void) async throws(FetchError) {
        let content = try await FrameDecoder.executor.run { () throws(FetchError) -> [UInt8] in
            try decoder.decode(frame)
        }
        try await write(table.uncompressedRange(ofChunk: frame.chunk).lowerBound, content)
    }
}
