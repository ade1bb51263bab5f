import NIOCore
import ODRFSCore
import ODRFSRuntime

extension PackSpanFetcher {
    /// The spans of a compressed pack: the chunks they touch, fetched as frames (each run
    /// of adjacent frames one range, all runs in one multi-range request, or the file read
    /// once from an origin without ranges), each decoded and verified by ``FrameDecoder``
    /// on its own executor — never the cooperative pool — and written whole at its uncompressed offset. A frame that
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
            for batch in stride(from: 0, to: runs.count, by: Self.maximumRangesPerRequest) {
                fetched += try await fetchRuns(Array(runs[batch..<min(batch + Self.maximumRangesPerRequest, runs.count)]),
                                               of: pack, table: table, decoder: decoder, write: write)
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

    /// Up to 64 runs of frames in one multi-range request. Each run's bytes arrive in order
    /// (the runs in any order), into an assembler of its own.
    private func fetchRuns(_ runs: [ClosedRange<Int>], of pack: PackDescriptor, table: FrameTable, decoder: FrameDecoder,
                           write: (Int64, [UInt8]) async throws(FetchError) -> Void) async throws(FetchError) -> Int64 {
        let ranges = runs.map { table.compressedRange(ofChunks: $0) }
        var assemblers = runs.map { FrameAssembler(table: table, startingAt: $0.lowerBound) }
        try await origin.download(pack.file, ranges: ranges, fileBytes: ByteCount(table.compressedBytes)) { (offset: Int64, bytes: ByteBuffer) async throws(FetchError) in
            // The runs are sorted and disjoint: the last one starting at or before `offset`.
            guard let index = ranges.lastIndex(where: { $0.lowerBound <= offset }), ranges[index].contains(offset),
                  assemblers[index].offset == offset else {
                throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(origin.displayName): bytes at \(offset) arrived out of order")
            }
            for frame in try assemblers[index].append(bytes) {
                try await Self.deliver(frame, decoder: decoder, table: table, write: write)
            }
        }
        for (index, run) in runs.enumerated() where assemblers[index].nextChunk != run.upperBound + 1 {
            throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(origin.displayName): the range \(ranges[index]) ended inside frame \(assemblers[index].nextChunk)")
        }
        return ranges.reduce(0) { $0 + Int64($1.count) }
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
