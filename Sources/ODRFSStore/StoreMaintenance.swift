import Dispatch
import Foundation
import ODRFSCore
import Synchronization

/// The operator's changes to a machine-wide store while its mounts run (`odrfs store gc`,
/// `evict`, `fsck`). Each removes a pack the way a mount's purger does: under the pack
/// file's exclusive lock, taken without waiting, so a pack any mount holds stays
/// (``PackStore/moveToTrashUnlessHeld(sha256:)``); then its row goes and the trash is
/// emptied. A mount whose pack was removed fetches it again at its next open.
/// Blocking throughout: run in a command.
public enum StoreMaintenance {
    /// What a removal did.
    public struct Removal: Sendable, Equatable {
        public var objects = 0
        public var bytes: Int64 = 0
        /// Packs left because a mount holds them.
        public var held = 0
    }

    /// Removes the packs no bundle references (neither a cached manifest nor a live mount),
    /// the file indexes of unmounted bundles other than their cached manifest's, and the
    /// index and manifest objects no bundle links any more (a replaced revision's).
    public static func collectGarbage(root: String) throws(StoreError) -> Removal {
        let inventory = try StoreInventory.read(root: root, probingHolds: false)
        var removal = try remove(inventory.unreferencedPacks, root: root)
        for bundle in inventory.bundles where bundle.mounts.isEmpty {
            for object in bundle.metadata where object.kind == .index && object.sha256 != bundle.currentIndex {
                // The bundle's link; its object goes below once nothing else links it. A
                // file of the previous layout (one link) is freed here.
                let path = root + "/bundles/" + bundle.key + "/index/" + object.sha256 + "." + FileIndex.fileExtension
                var info = stat()
                guard lstat(path, &info) == 0, unlink(path) == 0, info.st_nlink == 1 else { continue }
                removal.objects += 1
                removal.bytes = removal.bytes.saturatingAdd(Int64(info.st_size))
            }
        }
        for (directory, suffix) in [("/indexes", "." + FileIndex.fileExtension), ("/manifests", ".json")] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: root + directory)) ?? [] where name.hasSuffix(suffix) {
                let path = root + directory + "/" + name
                var info = stat()
                // One link: its own name. Every bundle that uses it holds another.
                guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_nlink == 1, unlink(path) == 0 else { continue }
                removal.objects += 1
                removal.bytes = removal.bytes.saturatingAdd(Int64(info.st_size))
            }
        }
        return removal
    }

    /// Removes the packs of bundle `name` (its identity, origin or key: every origin of an
    /// identity) that no other bundle references and no mount holds (its base packs too,
    /// unless it is mounted).
    public static func evict(bundle name: String, root: String) throws(StoreError) -> Removal {
        let inventory = try StoreInventory.read(root: root, probingHolds: false)
        let chosen = inventory.bundles(named: name)
        guard !chosen.isEmpty else {
            throw StoreError(.io, "the store \(root) has no bundle \(name) (see odrfs store status)")
        }
        let keys = Set(chosen.map(\.key))
        let mountedBase = chosen.filter { !$0.mounts.isEmpty }.reduce(into: Set<String>()) { $0.formUnion($1.basePacks) }
        let victims = inventory.objects.filter { object in
            object.kind == .pack && !object.bundles.isEmpty && keys.isSuperset(of: object.bundles) && !mountedBase.contains(object.sha256)
        }
        return try remove(victims, root: root)
    }

    private static func remove(_ packs: [StoreInventory.Object], root: String) throws(StoreError) -> Removal {
        let index = try CacheIndex(path: root + "/index.sqlite")
        var removal = Removal()
        for pack in packs where pack.kind == .pack {
            switch trash(path: pack.path, root: root) {
            case .moved:
                try? index.removePack(sha256: pack.sha256)
                removal.objects += 1
                removal.bytes = removal.bytes.saturatingAdd(pack.bytes)
            case .held:
                removal.held += 1
            case .absent:
                try? index.removePack(sha256: pack.sha256)
            }
        }
        emptyDirectory(root + "/trash")
        return removal
    }

    /// Moves the file at `path` into `<root>/trash/` unless a mount holds it.
    static func trash(path: String, root: String) -> TrashOutcome {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .absent }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return .held }
        let name = (path as NSString).lastPathComponent + ".gc." + String(getpid()) + "." + String(UInt32.random(in: .min ... .max))
        return rename(path, root + "/trash/" + name) == 0 ? .moved : .absent
    }

    static func emptyDirectory(_ path: String) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] { unlink(path + "/" + name) }
    }
}
