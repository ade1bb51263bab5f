extension FrameTable {
    /// The frames that spans of the uncompressed pack touch, as runs of adjacent frames: the
    /// frames of one run lie back to back in the compressed file, so each run is one range
    /// request. Spans may come in any order and overlap; parts outside the pack are ignored.
    public func frameRuns(touching spans: [Range<Int64>]) -> [ClosedRange<Int>] {
        var runs: [ClosedRange<Int>] = []
        for span in spans.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            let lower = max(span.lowerBound, 0), upper = min(span.upperBound, uncompressedBytes)
            guard lower < upper else { continue }
            let first = frame(containing: lower), last = frame(containing: upper - 1)
            if let previous = runs.last, first <= previous.upperBound + 1 {
                runs[runs.count - 1] = previous.lowerBound...max(previous.upperBound, last)
            } else {
                runs.append(first...last)
            }
        }
        return runs
    }

    /// Where a run of frames lies in the compressed file.
    public func compressedRange(ofFrames run: ClosedRange<Int>) -> Range<Int64> {
        compressedRange(ofFrame: run.lowerBound).lowerBound..<compressedRange(ofFrame: run.upperBound).upperBound
    }

    /// The compressed bytes that fetching the frame runs `runs` moves.
    public func compressedBytes(ofFrameRuns runs: [ClosedRange<Int>]) -> Int64 {
        // Disjoint ranges inside a validated file: the sum is at most its size.
        runs.reduce(0) { $0 + Int64(compressedRange(ofFrames: $1).count) }
    }
}
