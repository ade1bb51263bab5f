import Foundation
import ODRFSCore
import ODRFSRuntime
import ODRFSStore

extension PackDownloader {
    /// How many times one pack download moves on after bad bytes (a set has at most 16
    /// servers; each that lies is dropped for the pack, see ``MirrorSet``).
    static let maximumRestarts = MirrorSet.maximumMembers

    /// Cuts `file` back to its verified `prefix` and returns a verifier that has seen exactly
    /// those bytes (read back from the file, whose prefix is proven), so that the download
    /// can go on from `prefix` with another server. Readers of `readable` never notice: its
    /// verified count does not move back.
    static func rewind(_ file: TemporaryFile, readable: VerifiedFile, to prefix: Int64, pack: PackDescriptor,
                       chunkSize: ByteCount, io: IOExecutor) async throws(FetchError) -> PackVerifier {
        try await io.run { () throws(FetchError) in
            do throws(StoreError) {
                try file.truncate(to: prefix)
            } catch {
                throw FetchError(.localIO, "cache: \(error.message)")
            }
        }
        var verifier = PackVerifier(expected: pack, chunkSize: chunkSize)
        var done: Int64 = 0
        while done < prefix {
            let wanted = Int(min(1 << 20, prefix - done))
            let offset = done
            // Read on the I/O executor, hashed here: the verifier stays with its download.
            let piece = try await io.run { () throws(FetchError) -> [UInt8] in
                var buffer = [UInt8](repeating: 0, count: wanted)
                while true {
                    let count = buffer.withUnsafeMutableBytes { pread(readable.descriptor, $0.baseAddress, wanted, off_t(offset)) }
                    if count < 0 && errno == EINTR { continue }
                    guard count > 0 else {
                        throw FetchError(.localIO, "cache: cannot read back the verified part of pack '\(pack.id)': \(String(cString: strerror(errno)))")
                    }
                    buffer.removeLast(wanted - count)
                    return buffer
                }
            }
            piece.withUnsafeBytes { verifier.update($0) }
            done += Int64(piece.count)
        }
        return verifier
    }
}
