import Foundation
import ODRFSCore

/// Builds a manifest whose packs are arbitrary byte strings (the resource manager
/// never looks inside a pack), plus the origin files that go with it.
public struct SyntheticBundle: Sendable {
    public var manifest: Manifest
    public var files: [String: [UInt8]]

    public static let chunkSize = ByteCount(4096)

    public init(packContents: [(PackID, [UInt8])]) {
        var packs: [PackDescriptor] = []
        var files: [String: [UInt8]] = [:]
        for (id, bytes) in packContents {
            var hasher = ChunkHasher(chunkSize: Self.chunkSize)
            hasher.update(bytes)
            let digests = hasher.finalize()
            let file = "packs/\(digests.sha256.hex).tar"
            let tags = id == .base ? [] : id.rawValue.split(separator: "+").map { Tag(String($0)) }
            packs.append(PackDescriptor(id: id, tags: tags, file: file, bytes: digests.bytes, sha256: digests.sha256, chunks: digests.chunks, files: 1))
            files[file] = bytes
        }
        let indexHash = ContentHash(hex: String(repeating: "0", count: 64))!
        let index = IndexReference(file: "index/\(indexHash.hex).odrx", bytes: ByteCount(0), sha256: indexHash, entries: 1)
        let tagNames = Set(packs.flatMap(\.tags)).sorted()
        let tags = tagNames.map { tag in TagDescriptor(tag: tag, packs: packs.filter { $0.tags.contains(tag) }.map(\.id)) }
        manifest = Manifest(
            bundleVersion: Manifest.computeBundleVersion(index: indexHash, packs: packs), chunkSize: Self.chunkSize,
            index: index, packs: packs, tags: tags, initialInstall: [], prefetch: []
        )
        self.files = files
    }

    public static func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }
}
