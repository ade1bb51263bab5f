import CZstd

/// One zstd frame at a time, through Debian's libzstd: what `odrfs build` writes for each
/// chunk of a compressed pack and what the fetcher turns back into that chunk.
///
/// The only importer of `CZstd`. Decoding treats the frame as hostile input: it must be
/// exactly one frame, must not declare a content size other than the one the manifest
/// promises, and is decoded into a buffer of exactly that size, so a frame that expands
/// further (a decompression bomb) fails with `tooLarge` once the buffer is full and never
/// allocates more. The one-shot decoder writes straight into that buffer: no window
/// buffer is allocated whatever window size the frame header claims.
public enum ZstdFrame {
    /// `odrfs build`'s default level.
    public static let defaultLevel = 3
    /// The levels `--compress zstd:LEVEL` accepts (libzstd's own range of positive levels).
    public static var levels: ClosedRange<Int> { 1...Int(ZSTD_maxCLevel()) }

    /// The largest frame libzstd can make from `size` bytes (incompressible input stored in
    /// raw blocks plus the frame and block headers), or nil beyond libzstd's input limit.
    public static func maximumFrameLength(forContentSize size: Int) -> Int? {
        guard size >= 0 else { return nil }
        let bound = ZSTD_compressBound(size)
        return ZSTD_isError(bound) != 0 ? nil : bound
    }

    /// Compresses `input` into one frame that records its content size. Input that does not
    /// shrink is stored in raw blocks by libzstd, so the frame is at most a few bytes per
    /// 128 KiB larger than the input.
    public static func compress(_ input: UnsafeRawBufferPointer, level: Int) throws(ZstdError) -> [UInt8] {
        guard let capacity = maximumFrameLength(forContentSize: input.count) else {
            throw ZstdError(.compressionFailed, "\(input.count) bytes is more than libzstd compresses in one frame")
        }
        var output = [UInt8](repeating: 0, count: capacity)
        let written = output.withUnsafeMutableBytes { out in
            ZSTD_compress(out.baseAddress, out.count, input.baseAddress, input.count, Int32(clamping: level))
        }
        if ZSTD_isError(written) != 0 {
            throw ZstdError(.compressionFailed, "libzstd could not compress \(input.count) bytes: \(errorName(written))")
        }
        output.removeSubrange(written...)
        return output
    }

    /// Decodes `frame`, which must be exactly one zstd frame whose content is exactly
    /// `contentSize` bytes. Never writes or allocates more than `contentSize` bytes.
    public static func decompress(_ frame: UnsafeRawBufferPointer, contentSize: Int) throws(ZstdError) -> [UInt8] {
        guard contentSize >= 0 else { throw ZstdError(.sizeMismatch, "negative content size \(contentSize)") }
        guard let base = frame.baseAddress, !frame.isEmpty else {
            throw ZstdError(.corrupt, "empty frame")
        }
        let frameLength = ZSTD_findFrameCompressedSize(base, frame.count)
        if ZSTD_isError(frameLength) != 0 {
            throw ZstdError(.corrupt, "not a zstd frame: \(errorName(frameLength))")
        }
        guard frameLength == frame.count else {
            throw ZstdError(.corrupt, "the frame is \(frameLength) bytes but \(frame.count) were given: more than one frame")
        }
        let declared = ZSTD_getFrameContentSize(base, frame.count)
        // ZSTD_CONTENTSIZE_UNKNOWN (all ones) is allowed: the bounded buffer still limits it.
        if declared != UInt64.max, declared != UInt64.max - 1, declared != UInt64(contentSize) {
            throw ZstdError(.tooLarge, "the frame declares \(declared) bytes of content, the manifest \(contentSize)")
        }
        var output = [UInt8](repeating: 0, count: contentSize)
        let produced = output.withUnsafeMutableBytes { out in
            ZSTD_decompress(out.baseAddress, out.count, base, frame.count)
        }
        if ZSTD_isError(produced) != 0 {
            if ZSTD_getErrorCode(produced) == ZSTD_error_dstSize_tooSmall {
                throw ZstdError(.tooLarge, "the frame expands past the \(contentSize) bytes the manifest declares; cut off")
            }
            throw ZstdError(.corrupt, "the frame does not decode: \(errorName(produced))")
        }
        guard produced == contentSize else {
            throw ZstdError(.sizeMismatch, "the frame holds \(produced) bytes, the manifest says \(contentSize)")
        }
        return output
    }

    private static func errorName(_ code: Int) -> String {
        String(cString: ZSTD_getErrorName(code))
    }
}

/// A frame that cannot be made or is not what the manifest promises.
public struct ZstdError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Not exactly one valid zstd frame.
        case corrupt
        /// Declares or expands to more than the content size the manifest gives (a bomb).
        case tooLarge
        /// Decodes to fewer bytes than the manifest gives.
        case sizeMismatch
        /// libzstd refused to compress (out of memory, input too large).
        case compressionFailed
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
