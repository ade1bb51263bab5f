import Foundation
import ODRFSCore

/// Ranges readers wait for ahead of the stream (``SpanDemands``), served alongside it.
///
/// Each range is widened to what can be proven on its own: the file index's chunks that
/// overlap it (a large file's content-defined chunks), and for bytes no such chunk covers
/// (tar headers, small files), the manifest chunks holding them. Those spans are fetched by
/// range — for a compressed pack, the frames holding them (``PackSpanFetcher``) — and every
/// byte is proven before it is written: a chunk that matches its index digest, or a whole
/// manifest chunk that matches its hash. Proven bytes are written at their offsets and
/// released; the rest is dropped. A demand that fails (an origin that lies, a timeout)
/// changes nothing: its readers wait for the stream, which still verifies every chunk.
///
/// Served one at a time, reads before speculative ranges (``SpanDemands``), on the origin's
/// ``RequestLane/reader`` connections (never queued behind the stream), only from
/// origins that serve ranges: reading a local dist dir's
/// whole pack again for one range would only compete with the stream.
extension PackPipeline {
    /// Demands wider than this are cut to it (a read is at most 1 MiB; an open 128 KiB).
    static var maximumDemand: Int64 { 16 << 20 }

    func serve(_ demands: SpanDemands, of pack: PackDescriptor, table: FrameTable?, chunkMap: PackChunkMap,
               into file: Sink.File, through transfer: PackTransfer<Sink.File>) async {
        for await _ in demands.signals {
            guard let range = demands.next() else { continue }
            defer { demands.served(range) }
            guard origin.servesRanges, !Task.isCancelled else { continue }
            // What is proven by now (the stream passed, another demand brought it) is not
            // fetched again.
            let spans = Self.provableSpans(of: range, chunkMap: chunkMap, chunkSize: chunkSize.value, packBytes: pack.bytes.value)
                .filter { span in !Self.covered(span, by: file.provenSpans(overlapping: span)) }
            guard !spans.isEmpty, !Self.covered(range, by: file.provenSpans(overlapping: range)) else { continue }
            do throws(FetchError) {
                var pieces: [(Int64, [UInt8])] = []
                // A reader waits on these bytes: a pool of their own, not behind the stream.
                let fetched = await RequestLane.$current.withValue(.reader) { () async -> Result<Int64, FetchError> in
                    do throws(FetchError) {
                        return .success(try await PackSpanFetcher(origin: origin).fetch(pack, chunkSize: chunkSize, spans: spans) { offset, bytes in
                            pieces.append((offset, bytes))
                        })
                    } catch {
                        return .failure(error)
                    }
                }
                let moved = try fetched.get()
                wire.add(moved)
                transfer.tally?.add(moved)
                let arrived = pieces
                let proven = await FrameDecoder.executor.run { [chunkSize] in
                    Self.prove(arrived, of: pack, chunkMap: chunkMap, chunkSize: chunkSize.value)
                }
                try await transfer.writeAhead(to: file, proven)
                logger.debug("served a range ahead of the stream", metadata: [
                    "pack.id": "\(pack.id)", "range": "\(range)", "fetched": "\(moved)", "released": "\(proven.reduce(0) { $0 + $1.1.count })",
                ])
            } catch {
                if Task.isCancelled { return }
                logger.info("a range ahead of the stream was not served; its readers wait for the stream", metadata: [
                    "pack.id": "\(pack.id)", "range": "\(range)", "error": "\(error)",
                ])
            }
        }
    }

    /// Whether `spans` cover every byte of `range`.
    static func covered(_ range: Range<Int64>, by spans: [Range<Int64>]) -> Bool {
        var position = range.lowerBound
        for span in spans.sorted(by: { $0.lowerBound < $1.lowerBound }) where span.lowerBound <= position && span.upperBound > position {
            position = span.upperBound
        }
        return position >= range.upperBound
    }

    /// The spans to fetch for `range`: the index chunks overlapping it, and the manifest
    /// chunks holding the bytes no index chunk covers; sorted, merged, inside the pack.
    static func provableSpans(of range: Range<Int64>, chunkMap: PackChunkMap, chunkSize: Int64, packBytes: Int64) -> [Range<Int64>] {
        let wanted = range.clamped(to: 0..<packBytes)
        guard !wanted.isEmpty, chunkSize > 0 else { return [] }
        let (cap, capOverflow) = wanted.lowerBound.addingReportingOverflow(maximumDemand)
        let limited = wanted.lowerBound..<(capOverflow ? wanted.upperBound : min(wanted.upperBound, cap))
        var spans: [Range<Int64>] = []
        var position = limited.lowerBound
        func wholeChunks(_ gap: Range<Int64>) {
            let start = gap.lowerBound / chunkSize * chunkSize
            // Checked: an end near Int64.max cannot wrap.
            let (rounded, overflow) = gap.upperBound.addingReportingOverflow(chunkSize - 1)
            let end = overflow ? packBytes : min(rounded / chunkSize * chunkSize, packBytes)
            spans.append(start..<end)
        }
        for chunk in chunkMap.chunks(overlapping: limited) {
            if chunk.range.lowerBound > position { wholeChunks(position..<chunk.range.lowerBound) }
            spans.append(chunk.range)
            position = max(position, chunk.range.upperBound)
        }
        if position < limited.upperBound { wholeChunks(position..<limited.upperBound) }
        spans.sort { $0.lowerBound < $1.lowerBound }
        var merged: [Range<Int64>] = []
        for span in spans where !span.isEmpty {
            if let last = merged.last, span.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, span.upperBound)
            } else {
                merged.append(span)
            }
        }
        return merged
    }

    /// The proven parts of fetched `pieces` (offset, bytes, unverified): joined into
    /// contiguous runs, then each index chunk wholly inside a run that matches its digest,
    /// and each manifest chunk wholly inside one that matches its hash.
    static func prove(_ pieces: [(Int64, [UInt8])], of pack: PackDescriptor, chunkMap: PackChunkMap, chunkSize: Int64) -> [(Int64, [UInt8])] {
        var runs: [(Int64, [UInt8])] = []
        for (offset, bytes) in pieces.sorted(by: { $0.0 < $1.0 }) where !bytes.isEmpty {
            if let last = runs.last, last.0 + Int64(last.1.count) == offset {
                runs[runs.count - 1].1.append(contentsOf: bytes)
            } else if let last = runs.last, last.0 + Int64(last.1.count) > offset {
                // Overlapping pieces (frames fetched for two spans): keep the first copy.
                let end = offset + Int64(bytes.count)
                let lastEnd = last.0 + Int64(last.1.count)
                if end > lastEnd { runs[runs.count - 1].1.append(contentsOf: bytes[Int(lastEnd - offset)...]) }
            } else {
                runs.append((offset, bytes))
            }
        }
        var proven: [(Int64, [UInt8])] = []
        for (start, bytes) in runs {
            bytes.withUnsafeBytes { raw in
                proven += chunkMap.verifiedPieces(of: raw, at: start).pieces
                let end = start + Int64(raw.count)
                // Whole manifest chunks inside the run (the last chunk of the pack may be short).
                var chunk = (start + chunkSize - 1) / chunkSize
                while chunk < Int64(pack.chunks.count) {
                    let from = chunk * chunkSize
                    let to = min(from + chunkSize, pack.bytes.value)
                    guard to <= end else { break }
                    let slice = UnsafeRawBufferPointer(rebasing: raw[Int(from - start)..<Int(to - start)])
                    if ContentHash.of(slice) == pack.chunks[Int(chunk)] {
                        proven.append((from, Array(slice)))
                    }
                    chunk += 1
                }
            }
        }
        return proven
    }
}
