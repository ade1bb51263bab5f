import NIOCore
import ODRFSCore

/// Fetches chosen spans of a pack file: what an update lacks of a changed pack.
///
/// Spans closer than ``coalescingGap`` are merged, and each run is one HTTP range
/// request (`HTTPOrigin.download(_:range:fileBytes:into:)`). An origin without ranges (a
/// local dist dir) is read once, whole, and only the spans' bytes are kept. The bytes are
/// not verified here: the caller verifies the whole assembled pack.
public struct PackSpanFetcher: Sendable {
    public let origin: any Origin

    /// Re-fetching a gap this small costs less than another round trip.
    public static let coalescingGap: Int64 = 4096

    public init(origin: any Origin) {
        self.origin = origin
    }

    /// Hands every byte of `spans` (sorted, disjoint, inside the pack) to `write` with its
    /// offset in the pack. Returns the bytes transferred.
    @discardableResult
    public func fetch(_ pack: PackDescriptor, spans: [Range<Int64>],
                      write: (Int64, [UInt8]) async throws(FetchError) -> Void) async throws(FetchError) -> Int64 {
        var groups: [Range<Int64>] = []
        for span in spans where !span.isEmpty {
            if let last = groups.last, span.lowerBound - last.upperBound <= Self.coalescingGap {
                groups[groups.count - 1] = last.lowerBound..<max(last.upperBound, span.upperBound)
            } else {
                groups.append(span)
            }
        }
        guard !groups.isEmpty else { return 0 }
        if let http = origin as? HTTPOrigin {
            var fetched: Int64 = 0
            for group in groups {
                var position = group.lowerBound
                try await http.download(pack.file, range: group, fileBytes: pack.bytes) { (chunk: ByteBuffer) async throws(FetchError) in
                    let at = position
                    position += Int64(chunk.readableBytes)
                    try await write(at, Array(chunk.readableBytesView))
                }
                fetched += Int64(group.count)
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
}
