/// How a compressed pack file is laid out on the origin, as `manifest.json` records it
/// (the `compression` object of a pack; absent for a plain tar pack).
///
/// A compressed pack is the pack's tar cut at the manifest's chunk boundaries, each chunk
/// compressed as its own zstd frame, the frames written one after another: the file is one
/// valid zstd stream (`zstd -d`, `tar --zstd -tvf`) and any chunk can be fetched alone with
/// a Range request for its frame. The pack's `bytes`, `sha256` and `chunks` still describe
/// the uncompressed tar, so the file name (`packs/<sha256>.tar.zst`), the cache and
/// verification are the same as for a plain pack. Read it through ``FrameTable``, which
/// validates it.
public struct PackCompression: Codable, Sendable, Equatable {
    /// The only format: "zstd".
    public static let zstd = "zstd"
    /// The file name suffix of a compressed pack.
    public static let fileExtension = ".tar.zst"

    /// Where one chunk's frame lies in the compressed file.
    public struct Frame: Codable, Sendable, Equatable {
        public var offset: Int64
        public var length: Int64

        public init(offset: Int64, length: Int64) {
            self.offset = offset
            self.length = length
        }
    }

    public var format: String
    /// Size of the compressed file: what crosses the wire.
    public var bytes: ByteCount
    /// One frame per chunk, in order, contiguous from offset 0.
    public var frames: [Frame]

    public init(format: String = PackCompression.zstd, bytes: ByteCount, frames: [Frame]) {
        self.format = format
        self.bytes = bytes
        self.frames = frames
    }
}
