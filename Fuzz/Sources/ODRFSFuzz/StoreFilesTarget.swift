import Foundation
import ODRFSCore

/// The files a machine-wide store's mounts and its operator write for each other
/// (`mounts/<id>/mount.json`, `mounts/<id>/references`, `store.json`): any process of the
/// store's user can write them, every mount reads them. What parses must be within its
/// bounds and read back the same after it is written again.
enum StoreFilesTarget {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        let data = Data(bytes)
        if let record = MountRecord(parsing: data) {
            check(record.pid > 0 && !record.bundle.isEmpty && record.bundle.utf8.count <= 64, "mount record \(record) out of bounds")
            if let again = try? JSONEncoder().encode(record) {
                check(MountRecord(parsing: again) == record, "mount record \(record) does not read back")
            }
        }
        if let configuration = StoreConfiguration(parsing: data) {
            check((configuration.cacheSize ?? 0) >= 0 && (configuration.minFree ?? 0) >= 0, "negative store limits \(configuration)")
            if let again = try? JSONEncoder().encode(configuration) {
                check(StoreConfiguration(parsing: again) == configuration, "store configuration \(configuration) does not read back")
            }
        }
        let references = MountReferences(parsing: data)
        for (hash, entry) in references.packs {
            check(ContentHash(hex: hash)?.hex == hash, "reference \(hash.debugDescription) is not a lowercase SHA-256")
            check(entry.priority.isFinite, "priority \(entry.priority) of \(hash)")
        }
        let written = MountReferences.text(references.packs.map { ($0.key, $0.value.priority, $0.value.isBase) }, running: references.running)
        let again = MountReferences(parsing: Data(written.utf8))
        check(again.running == references.running && again.packs.count == references.packs.count, "references do not read back")
        for (hash, entry) in again.packs {
            let original = references.packs[hash]
            check(original?.priority == entry.priority && original?.isBase == entry.isBase, "reference \(hash) does not read back")
        }
    }
}
