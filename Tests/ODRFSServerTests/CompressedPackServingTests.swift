import Foundation
import Testing

/// `odrfs serve` serves a compressed pack (`packs/<sha256>.tar.zst`) like any other file:
/// whole, and one frame at a time by Range (what a fetcher resuming or updating asks for).
@Suite(.timeLimit(.minutes(1)))
struct CompressedPackServingTests {
    @Test func aTarZstPackIsServedWholeAndByRange() async throws {
        try await withOriginServer { port, dist, _ in
            // Any bytes: the server neither knows nor cares that they are zstd frames.
            let frames = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
            let path = "/packs/" + String(repeating: "ab", count: 32) + ".tar.zst"
            try Data(frames).write(to: URL(fileURLWithPath: dist.dist + path))
            let whole = try await RawHTTP.send(port: port, target: path)
            #expect(whole.status == 200)
            #expect(whole.body == frames)
            let frame = try await RawHTTP.send(port: port, target: path, headers: ["Range": "bytes=1200-2399"])
            #expect(frame.status == 206)
            #expect(frame.headers["content-range"] == "bytes 1200-2399/5000", "\(frame.headers)")
            #expect(frame.body == Array(frames[1200...2399]))
        }
    }
}
