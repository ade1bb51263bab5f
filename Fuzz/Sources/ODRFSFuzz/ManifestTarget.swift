import Foundation
import ODRFSCore

/// manifest.json as a mount reads it from an origin or its offline cache.
enum ManifestTarget {
    static func run(_ data: Data) {
        guard let manifest = try? Manifest.decode(data) else { return }
        // Everything a validated manifest promises the daemon may use without further checks.
        for number in 0..<manifest.packs.count {
            let pack = manifest.pack(PackNumber(UInt32(number)))
            check(manifest.packNumber(of: pack.id) != nil, "pack \(number) cannot be found by its id")
        }
        for tag in manifest.tags {
            for number in manifest.packs(for: tag.tag) {
                _ = manifest.pack(number)
            }
            _ = manifest.preservationPriority(of: tag.tag)
        }
        check((try? Manifest.decode(manifest.encoded())) != nil, "a validated manifest does not decode once re-encoded")
    }
}
