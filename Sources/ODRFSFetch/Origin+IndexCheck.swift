import Crypto
import Foundation
import NIOCore
import ODRFSCore

extension Origin {
    /// Downloads the file index into memory-free hashing and checks its size and SHA-256
    /// against `index` (for `odrfs probe`: is the bundle whole?). Nothing is written.
    public func verifyIndex(_ index: IndexReference) async throws(FetchError) {
        guard index.bytes.value >= 0, index.bytes <= BundleLimits.maxIndexBytes else {
            throw FetchError(.corrupt, "file index \(index.file) is declared as \(index.bytes.value) bytes; the limit is \(BundleLimits.maxIndexBytes.value)")
        }
        var hasher = SHA256()
        var count: Int64 = 0
        try await download(index.file, expectedBytes: index.bytes) { (bytes: ByteBuffer) throws(FetchError) in
            bytes.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            count += Int64(bytes.readableBytes)
        }
        let digest = ContentHash(digest: hasher.finalize())
        guard count == index.bytes.value, digest == index.sha256 else {
            throw FetchError(.corrupt, "file index \(index.file) from \(displayName) is damaged: got \(count) bytes with SHA-256 \(digest.hex), manifest says \(index.bytes.value) bytes with \(index.sha256.hex)")
        }
    }
}
