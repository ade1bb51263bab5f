import Foundation

/// How a compressed pack file is laid out on the origin, as `manifest.json` records it
/// (the `compression` object of a pack; absent for a plain tar pack).
///
/// A compressed pack is the pack's tar cut into frames, each compressed as its own zstd
/// frame, the frames written one after another: the file is one valid zstd stream (`zstd
/// -d`, `tar --zstd -tvf`) and any frame can be fetched alone with a Range request. Every
/// chunk boundary of the manifest is a frame boundary. Without `size` on its frames (packs
/// built before frames followed file chunks, and packs whose chunks were not cut), each
/// frame is one whole chunk; with it, a chunk may be cut into several frames, which `odrfs
/// build` does at the content-defined chunk boundaries of large files and at file entries,
/// so an update fetches the frames of what changed rather than whole manifest chunks. The pack's `bytes`, `sha256` and `chunks` still describe
/// the uncompressed tar, so the file name (`packs/<sha256>.tar.zst`), the cache and
/// verification are the same as for a plain pack. Read it through ``FrameTable``, which
/// validates it.
public struct PackCompression: Codable, Sendable, Equatable {
    /// The only format: "zstd".
    public static let zstd = "zstd"
    /// The file name suffix of a compressed pack.
    public static let fileExtension = ".tar.zst"

    /// Where one frame lies in the compressed file, and how many bytes of the tar it holds.
    public struct Frame: Codable, Sendable, Equatable {
        public var offset: Int64
        public var length: Int64
        /// The frame's uncompressed size; absent when every frame of the pack is one chunk.
        public var size: Int64?

        public init(offset: Int64, length: Int64, size: Int64? = nil) {
            self.offset = offset
            self.length = length
            self.size = size
        }
    }

    public var format: String
    /// Size of the compressed file: what crosses the wire.
    public var bytes: ByteCount
    /// The frames, in order, contiguous from offset 0: one per chunk, or (all with `size`)
    /// one or more per chunk.
    public var frames: [Frame]

    public init(format: String = PackCompression.zstd, bytes: ByteCount, frames: [Frame]) {
        self.format = format
        self.bytes = bytes
        self.frames = frames
    }

    private enum CodingKeys: String, CodingKey {
        case format, bytes, frames, frameTable
    }

    /// Frames with sizes are many (a large file's chunks, small files' entries): in JSON they
    /// are one string, `frameTable`, instead of an object each (about 8 bytes a frame instead
    /// of 110): standard base64 of unsigned LEB128 numbers, two per frame, its compressed
    /// length and its uncompressed size; offsets follow, contiguous from 0. Frames without
    /// sizes keep the `frames` objects of releases before them, byte for byte.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        format = try container.decode(String.self, forKey: .format)
        bytes = try container.decode(ByteCount.self, forKey: .bytes)
        let listed = try container.decodeIfPresent([Frame].self, forKey: .frames)
        let table = try container.decodeIfPresent(String.self, forKey: .frameTable)
        switch (listed, table) {
        case (let listed?, nil):
            frames = listed
        case (nil, let table?):
            guard let decoded = Self.decodeFrameTable(table) else {
                throw DecodingError.dataCorruptedError(forKey: .frameTable, in: container,
                                                       debugDescription: "frameTable is not base64 of (length, size) LEB128 pairs within 2^52")
            }
            frames = decoded
        default:
            throw DecodingError.dataCorruptedError(forKey: .frames, in: container,
                                                   debugDescription: "a compressed pack has either frames or a frameTable, not \(listed == nil ? "neither" : "both")")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(format, forKey: .format)
        try container.encode(bytes, forKey: .bytes)
        if let table = encodedFrameTable {
            try container.encode(table, forKey: .frameTable)
        } else {
            try container.encode(frames, forKey: .frames)
        }
    }

    /// The `frameTable` string of frames that all have sizes and lie back to back from 0;
    /// nil otherwise (then they are listed as objects).
    var encodedFrameTable: String? {
        guard !frames.isEmpty, frames.allSatisfy({ $0.size != nil && $0.length >= 0 && ($0.size ?? -1) >= 0 }) else { return nil }
        var offset: Int64 = 0
        var bytes: [UInt8] = []
        bytes.reserveCapacity(frames.count * 6)
        for frame in frames {
            guard frame.offset == offset else { return nil }
            Self.appendLEB128(UInt64(frame.length), to: &bytes)
            Self.appendLEB128(UInt64(frame.size ?? 0), to: &bytes)
            offset &+= frame.length
        }
        return Data(bytes).base64EncodedString()
    }

    /// The largest number a `frameTable` carries: the bound every size in a manifest has.
    static let frameTableLimit: UInt64 = 1 << 52

    /// Parses a `frameTable`; nil when it is not base64, a number is cut off or longer than
    /// 8 bytes of LEB128, a number exceeds 2^52, the count of numbers is odd, or the offsets
    /// would overflow. Lengths and sizes are checked further by ``FrameTable``.
    static func decodeFrameTable(_ text: String) -> [Frame]? {
        guard let data = Data(base64Encoded: text) else { return nil }
        var frames: [Frame] = []
        frames.reserveCapacity(data.count / 4)
        var offset: Int64 = 0
        var pending: Int64?
        var value: UInt64 = 0, shift: UInt64 = 0
        for byte in data {
            guard shift < 56 else { return nil }
            value |= UInt64(byte & 0x7F) << shift
            shift += 7
            guard byte & 0x80 == 0 else { continue }
            guard value <= frameTableLimit else { return nil }
            if let length = pending {
                frames.append(Frame(offset: offset, length: length, size: Int64(value)))
                // Both ≤ 2^52: the sum of two cannot overflow, but a long table could.
                let (next, overflow) = offset.addingReportingOverflow(length)
                guard !overflow, next <= Int64(frameTableLimit) else { return nil }
                offset = next
                pending = nil
            } else {
                pending = Int64(value)
            }
            value = 0
            shift = 0
        }
        guard pending == nil, shift == 0, !frames.isEmpty else { return nil }
        return frames
    }

    static func appendLEB128(_ value: UInt64, to bytes: inout [UInt8]) {
        var rest = value
        repeat {
            let low = UInt8(rest & 0x7F)
            rest >>= 7
            bytes.append(rest == 0 ? low : low | 0x80)
        } while rest != 0
    }
}
