import ODRFSCompression
import Testing

/// One zstd frame per chunk, as `odrfs build` writes and the fetcher reads them: content
/// comes back byte for byte, within the bounds libzstd promises. (Hostile frames are
/// tested with the fetcher, in ODRFSFetchTests' ZstdFrameTests.)
@Suite("ZstdFrame")
struct ZstdFrameRoundTripTests {
    static func pseudoRandom(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        return (0..<count).map { _ in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
    }

    @Test("content of every shape comes back unchanged at the lowest, default and highest levels",
          arguments: [1, ZstdFrame.defaultLevel, 19])
    func roundTrip(level: Int) throws {
        let inputs: [(String, [UInt8])] = [
            ("one byte", [42]),
            ("text", Array(String(repeating: "level one, map and sprites. ", count: 500).utf8)),
            ("zeros", [UInt8](repeating: 0, count: 1 << 20)),
            ("random", Self.pseudoRandom(300_000, seed: 5)),
        ]
        for (name, input) in inputs {
            let frame = try input.withUnsafeBytes { try ZstdFrame.compress($0, level: level) }
            #expect(frame.count <= ZstdFrame.maximumFrameLength(forContentSize: input.count)!, "\(name)")
            let output = try frame.withUnsafeBytes { try ZstdFrame.decompress($0, contentSize: input.count) }
            #expect(output == input, "\(name) at level \(level)")
        }
    }

    @Test("compressible content shrinks; incompressible content grows by a few bytes at most")
    func sizes() throws {
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        let small = try zeros.withUnsafeBytes { try ZstdFrame.compress($0, level: ZstdFrame.defaultLevel) }
        #expect(small.count < 1_000)
        let random = Self.pseudoRandom(1 << 20, seed: 9)
        let frame = try random.withUnsafeBytes { try ZstdFrame.compress($0, level: ZstdFrame.defaultLevel) }
        #expect(frame.count > random.count - 1_000 && frame.count <= random.count + 1_000, "\(frame.count)")
    }

    @Test("the bounds: levels, the largest frame, an empty input and a negative content size")
    func bounds() throws {
        #expect(ZstdFrame.levels.lowerBound == 1 && ZstdFrame.levels.upperBound >= 19)
        #expect(ZstdFrame.levels.contains(ZstdFrame.defaultLevel))
        #expect(ZstdFrame.maximumFrameLength(forContentSize: -1) == nil)
        let bound = try #require(ZstdFrame.maximumFrameLength(forContentSize: 1 << 20))
        // libzstd's bound: the input plus about 1/256 of it (raw blocks) and a few header bytes.
        #expect(bound > 1 << 20 && bound < (1 << 20) + (1 << 20) / 128)
        let empty = try [UInt8]().withUnsafeBytes { try ZstdFrame.compress($0, level: 3) }
        #expect(try empty.withUnsafeBytes { try ZstdFrame.decompress($0, contentSize: 0) } == [])
        let negative = #expect(throws: ZstdError.self) {
            try empty.withUnsafeBytes { try ZstdFrame.decompress($0, contentSize: -1) }
        }
        #expect(negative?.kind == .sizeMismatch)
    }
}
