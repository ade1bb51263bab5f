import NIOCore
import ODRFSCore

/// Fetches chosen spans of a pack: what an update lacks of a changed pack.
///
/// A plain tar pack: spans closer than ``coalescingGap`` are merged, and all the runs go in
/// one multi-range request (``Origin/download(_:ranges:fileBytes:into:)``, at most
/// ``maximumRangesPerRequest`` runs each, forwarded by a ``MirrorSet`` to its healthiest
/// server; an origin without multi-range support sends one range request per run). An origin without ranges (a local dist dir,
/// ``Origin/servesRanges`` false) is read once, whole, and only the spans' bytes are kept.
/// These bytes are not verified here: the caller verifies the whole assembled pack.
///
/// A compressed pack (`packs/<sha256>.tar.zst`) cannot be cut at uncompressed offsets:
/// the spans are mapped to the frames holding them, and those frames are fetched (adjacent
/// frames one range, all ranges in one request) and decoded; chunks whose frames are all
/// fetched are verified against their chunk hashes, the rest with the assembled pack (see
/// `PackSpanFetcher+Compressed.swift`).
public struct PackSpanFetcher: Sendable {
    public let origin: any Origin

    /// Re-fetching a gap this small costs less than another part of a response.
    public static let coalescingGap: Int64 = 4096

    /// The most span groups (or frame runs) one request asks for; more take several requests.
    public static let maximumRangesPerRequest = 64

    public init(origin: any Origin) {
        self.origin = origin
    }

    /// Hands every byte of `spans` (sorted, disjoint, inside the pack) to `write` with its
    /// offset in the uncompressed pack — for a compressed pack, the whole frames holding
    /// them. Returns the bytes transferred (compressed bytes for a
    /// compressed pack). `chunkSize` is the manifest's.
    @discardableResult
    public func fetch(_ pack: PackDescriptor, chunkSize: ByteCount, spans: [Range<Int64>],
                      write: (Int64, [UInt8]) async throws(FetchError) -> Void) async throws(FetchError) -> Int64 {
        if let table = try Self.frameTable(of: pack, chunkSize: chunkSize) {
            return try await fetchFrames(pack, table: table, spans: spans, write: write)
        }
        var groups: [Range<Int64>] = []
        for span in spans where !span.isEmpty {
            if let last = groups.last, span.lowerBound - last.upperBound <= Self.coalescingGap {
                groups[groups.count - 1] = last.lowerBound..<max(last.upperBound, span.upperBound)
            } else {
                groups.append(span)
            }
        }
        guard !groups.isEmpty else { return 0 }
        if origin.servesRanges {
            var fetched: Int64 = 0
            // One request per pack (per 64 groups): `Range: bytes=a-b,c-d,…`.
            for batch in stride(from: 0, to: groups.count, by: Self.maximumRangesPerRequest) {
                let ranges = Array(groups[batch..<min(batch + Self.maximumRangesPerRequest, groups.count)])
                try await origin.download(pack.file, ranges: ranges, fileBytes: pack.bytes) { (offset: Int64, chunk: ByteBuffer) async throws(FetchError) in
                    try await write(offset, Array(chunk.readableBytesView))
                }
                fetched += ranges.reduce(0) { $0 + Int64($1.count) }
            }
            return fetched
        }
        var position: Int64 = 0
        try await origin.download(pack.file, expectedBytes: pack.bytes) { (chunk: ByteBuffer) async throws(FetchError) in
            let start = position
            let end = start + Int64(chunk.readableBytes)
            position = end
            for group in groups where group.lowerBound < end && group.upperBound > start {
                let from = max(group.lowerBound, start), to = min(group.upperBound, end)
                let bytes = chunk.readableBytesView
                let first = bytes.index(bytes.startIndex, offsetBy: Int(from - start))
                try await write(from, Array(bytes[first..<bytes.index(first, offsetBy: Int(to - from))]))
            }
        }
        return pack.bytes.value
    }

    /// What fetching `spans` of `pack` moves over the wire, for the update plan: the
    /// spans' bytes for a plain pack, the frames holding them for a compressed one.
    public static func transferBytes(of pack: PackDescriptor, chunkSize: ByteCount, spans: [Range<Int64>]) -> Int64 {
        guard let table = try? frameTable(of: pack, chunkSize: chunkSize) else {
            return spans.reduce(0) { $0 + Int64($1.count) }
        }
        return table.compressedBytes(ofFrameRuns: table.frameRuns(touching: spans))
    }

    /// The validated frame table of a compressed pack; nil for a plain tar.
    static func frameTable(of pack: PackDescriptor, chunkSize: ByteCount) throws(FetchError) -> FrameTable? {
        do {
            return try FrameTable(validating: pack, chunkSize: chunkSize)
        } catch {
            throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)): \(error)")
        }
    }
}
