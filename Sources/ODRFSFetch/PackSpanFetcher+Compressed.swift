import NIOCore
import ODRFSCore
import ODRFSRuntime

extension PackSpanFetcher {
    /// The spans of a compressed pack, fetched as the frames holding them (each run of
    /// adjacent frames one range, all runs in one multi-range request, or the file read once
    /// from an origin without ranges), decoded on ``FrameDecoder``'s executor — never the
    /// cooperative pool — and written at their uncompressed offsets. A chunk whose frames
    /// are all fetched is verified against its chunk hash before it is written; the frames
    /// of a chunk fetched only in part (a pack whose frames follow the chunks of its large
    /// files) are written unverified, for the caller, which verifies the whole assembled
    /// pack before it is used. A frame that does not decode, or a chunk that does not
    /// verify, fails the fetch as corrupt. Returns the compressed bytes transferred.
    func fetchFrames(_ pack: PackDescriptor, table: FrameTable, spans: [Range<Int64>],
                     write: (Int64, [UInt8]) async throws(FetchError) -> Void) async throws(FetchError) -> Int64 {
        var runs = table.frameRuns(touching: spans)
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
        // The whole file crosses the wire anyway: take every frame of the chunks touched, so
        // each of them is verified.
        runs = runs.map { table.frames(ofChunk: table.chunk(ofFrame: $0.lowerBound)).lowerBound...(table.frames(ofChunk: table.chunk(ofFrame: $0.upperBound)).upperBound - 1) }
        var wanted = Set<Int>()
        for run in runs { wanted.formUnion(run) }
        var assembler = FrameAssembler(table: table)
        var partial = FrameDecoder.PartialChunk()
        try await origin.download(pack.file, expectedBytes: compressedBytes) { (bytes: ByteBuffer) async throws(FetchError) in
            let frames = try assembler.append(bytes).filter { wanted.contains($0.frame) }
            try await Self.deliver(frames, covering: { _ in true }, decoder: decoder, partial: &partial, write: write)
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
        let ranges = runs.map { table.compressedRange(ofFrames: $0) }
        var assemblers = runs.map { FrameAssembler(table: table, startingAt: $0.lowerBound) }
        var partials = runs.map { _ in FrameDecoder.PartialChunk() }
        try await origin.download(pack.file, ranges: ranges, fileBytes: ByteCount(table.compressedBytes)) { (offset: Int64, bytes: ByteBuffer) async throws(FetchError) in
            // The runs are sorted and disjoint: the last one starting at or before `offset`.
            guard let index = ranges.lastIndex(where: { $0.lowerBound <= offset }), ranges[index].contains(offset),
                  assemblers[index].offset == offset else {
                throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(origin.displayName): bytes at \(offset) arrived out of order")
            }
            let run = runs[index]
            let frames = try assemblers[index].append(bytes)
            try await Self.deliver(frames, covering: { chunk in
                let all = table.frames(ofChunk: chunk)
                return run.contains(all.lowerBound) && run.contains(all.upperBound - 1)
            }, decoder: decoder, partial: &partials[index], write: write)
        }
        for (index, run) in runs.enumerated() where assemblers[index].nextFrame != run.upperBound + 1 {
            throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(origin.displayName): the range \(ranges[index]) ended inside frame \(assemblers[index].nextFrame)")
        }
        return ranges.reduce(0) { $0 + Int64($1.count) }
    }

    /// Decodes `frames` off the cooperative pool and writes them: whole chunks (those for
    /// which `covering` is true: all their frames are fetched) once verified, frames of other
    /// chunks as they decode.
    private static func deliver(_ frames: [FrameAssembler.Frame], covering: @escaping @Sendable (Int) -> Bool,
                                decoder: FrameDecoder, partial: inout FrameDecoder.PartialChunk,
                                write: (Int64, [UInt8]) async throws(FetchError) -> Void) async throws(FetchError) {
        guard !frames.isEmpty else { return }
        let table = decoder.table
        let start = partial
        let (pieces, next) = try await FrameDecoder.executor.run { () throws(FetchError) -> ([(Int64, [UInt8])], FrameDecoder.PartialChunk) in
            var joining = start
            var pieces: [(Int64, [UInt8])] = []
            for frame in frames {
                if covering(table.chunk(ofFrame: frame.frame)) {
                    for chunk in try decoder.decode([frame], partial: &joining) {
                        pieces.append((table.uncompressedRange(ofChunk: chunk.chunk).lowerBound, chunk.bytes))
                    }
                } else {
                    pieces.append((table.uncompressedRange(ofFrame: frame.frame).lowerBound, try decoder.decompress(frame)))
                }
            }
            return (pieces, joining)
        }
        partial = next
        for (offset, bytes) in pieces { try await write(offset, bytes) }
    }
}
