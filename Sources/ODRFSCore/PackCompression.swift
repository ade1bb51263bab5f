/// How a compressed pack file is laid out on the origin, as `manifest.json` records it
/// (the `compression` object of a pack; absent for a plain tar pack).
///
/// A compressed pack is the pack's tar cut into frames, each compressed as its own zstd
/// frame, the frames written one after another: the file is one valid zstd stream (`zstd
/// -d`, `tar --zstd -tvf`) and any frame can be fetched alone with a Range request. Every
/// chunk boundary of the manifest is a frame boundary. Without `size` on its frames (packs
/// built before frames followed file chunks, and packs with no large file), each frame is
/// one whole chunk; with it, a chunk may be cut into several frames, which `odrfs build`
/// does at the content-defined chunk boundaries of large files, so an update fetches the
/// frames of the chunks of a file that changed rather than whole manifest chunks. The pack's `bytes`, `sha256` and `chunks` still describe
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
}
