import ArgumentParser
import Foundation
import ODRFSCore
import ODRFSStore

/// `odrfs store`: the operator's view of the machine-wide store every mount of a user
/// shares, as `cvmfs_talk` and `cvmfs_config` give for CernVM-FS's shared cache. These read
/// and change the store's files directly (no daemon involved) while mounts run.
struct StoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Inspect and maintain the machine-wide store (status, list, evict, gc, fsck, config).",
        discussion: """
            The store is /var/cache/odrfs for root and $XDG_CACHE_HOME/odrfs or ~/.cache/odrfs \
            otherwise, or --store DIR. A pack any mount holds (an open file, a held request) is \
            never removed.
            """,
        subcommands: [StoreStatusCommand.self, StoreListCommand.self, StoreEvictCommand.self, StoreGCCommand.self,
                      StoreCheckCommand.self, StoreConfigCommand.self]
    )
}

/// `--store DIR`, shared by the `odrfs store` subcommands.
struct StoreLocation: ParsableArguments {
    @Option(name: .long, help: "The store (default: ~/.cache/odrfs, or /var/cache/odrfs for root).")
    var store: String?

    var root: String { store.map(MountCommand.absolute) ?? CacheLayout.defaultStoreRoot() }

    /// Prints `odrfs store <command>: <message>` and exits with `code`.
    static func fail(_ command: String, _ message: String, code: Int32 = 1) -> Never {
        FileHandle.standardError.write(Data("odrfs store \(command): \(message)\n".utf8))
        Foundation.exit(code)
    }

    static func printJSON(_ value: some Encodable, pretty: Bool = true) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys] : [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        if let data = try? encoder.encode(value) { print(String(decoding: data, as: UTF8.self)) }
    }
}

struct StoreStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "The store's limits, totals, deduplication and bundles.")

    @OptionGroup var location: StoreLocation
    @Flag(name: .long, help: "Print JSON.") var json = false

    func run() throws {
        let status: StoreStatus
        do {
            status = try StoreInventory.read(root: location.root).status
        } catch {
            StoreLocation.fail("status", error.description)
        }
        if json { return StoreLocation.printJSON(status) }
        print("store: \(status.store)")
        print("limits: cache-size \(status.cacheSize.map { "\(ByteCount($0))" } ?? "none"), min-free \(status.minFree.map { "\(ByteCount($0))" } ?? "none")")
        print("objects: \(status.objects), \(ByteCount(status.bytes)); shared \(ByteCount(status.sharedBytes)), saved by deduplication \(ByteCount(status.savedBytes))")
        for bundle in status.bundles {
            let state = bundle.running ? "running" : bundle.mounted ? "mounted" : "not mounted"
            print("bundle \(bundle.bundle ?? bundle.key) (\(bundle.origin ?? "origin unknown")): revision \(bundle.revision.map(String.init) ?? "?"), \(state)"
                  + (bundle.mountpoints.isEmpty ? "" : " at \(bundle.mountpoints.joined(separator: ", "))")
                  + ", \(ByteCount(bundle.bytes)) (\(ByteCount(bundle.retainedBytes)) retained)"
                  + ", last use \(bundle.lastUse.map { $0.formatted(.iso8601) } ?? "never")")
        }
    }
}

struct StoreListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Every object: kind, SHA-256, bytes, the bundles that reference it, retained, last use.")

    @OptionGroup var location: StoreLocation
    @Option(name: .long, help: "Only the objects of this bundle (its identity, its origin, or its key in the store).") var bundle: String?
    @Flag(name: .long, help: "Print one JSON object a line.") var json = false

    func run() throws {
        let inventory: StoreInventory
        do {
            inventory = try StoreInventory.read(root: location.root)
        } catch {
            StoreLocation.fail("list", error.description)
        }
        for entry in inventory.list(bundle: bundle) {
            if json {
                StoreLocation.printJSON(entry, pretty: false)
            } else {
                print("\(entry.kind.rawValue)\t\(entry.sha256)\t\(entry.bytes)\t\(entry.bundles.isEmpty ? "-" : entry.bundles.joined(separator: ","))\t"
                      + "\(entry.retained ? "retained" : "-")\t\(entry.lastUse.map { $0.formatted(.iso8601) } ?? "never")")
            }
        }
    }
}

struct StoreEvictCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evict", abstract: "Drop a bundle's packs that no other bundle references and no mount holds.")

    @OptionGroup var location: StoreLocation
    @Argument(help: "The bundle: its identity (every origin of it), its origin, or its key in the store (see odrfs store status).") var bundle: String

    func run() throws {
        do {
            let removal = try StoreMaintenance.evict(bundle: bundle, root: location.root)
            print("evicted \(removal.objects) objects, \(ByteCount(removal.bytes)) freed"
                  + (removal.held > 0 ? "; \(removal.held) held by a mount, kept" : ""))
        } catch {
            StoreLocation.fail("evict", error.description)
        }
    }
}

struct StoreGCCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gc", abstract: "Remove the objects nothing references any more, now, and print the bytes freed.")

    @OptionGroup var location: StoreLocation

    func run() throws {
        do {
            let removal = try StoreMaintenance.collectGarbage(root: location.root)
            print("removed \(removal.objects) unreferenced objects, \(removal.bytes) bytes freed (\(ByteCount(removal.bytes)))")
        } catch {
            StoreLocation.fail("gc", error.description)
        }
    }
}

struct StoreCheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fsck",
        abstract: "Re-hash every object; report mismatches and objects the accounting does not know.",
        discussion: "Exit codes: 0 clean; 1 problems found (repaired with --repair); 2 errors.")

    @OptionGroup var location: StoreLocation
    @Flag(name: .long, help: "Quarantine bad objects and rebuild the accounting from what is on disk.") var repair = false

    func run() throws {
        let check: StoreCheck
        do {
            check = try StoreMaintenance.check(root: location.root, repair: repair)
        } catch {
            StoreLocation.fail("fsck", error.description, code: 2)
        }
        print("checked \(check.checked) objects, \(ByteCount(check.bytes))")
        for hash in check.mismatched { print("mismatch: \(hash)" + (repair ? " (quarantined)" : "")) }
        for hash in check.unknown { print("unknown to the accounting: \(hash)" + (repair ? " (recorded)" : "")) }
        for hash in check.missing { print("recorded but missing: \(hash)" + (repair ? " (forgotten)" : "")) }
        for hash in check.unreadable { print("unreadable: \(hash)") }
        if !check.unreadable.isEmpty { Foundation.exit(2) }
        if !check.isClean { Foundation.exit(1) }
        print("clean")
    }
}

struct StoreConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Show or set the store's limits, which every mount of the store obeys.")

    @OptionGroup var location: StoreLocation
    @Option(name: .long, help: "The most the store keeps (e.g. 20G; 0 for no limit).") var cacheSize: ByteCountArgument?
    @Option(name: .long, help: "Keep at least this much free on the store's filesystem (e.g. 5G; 0 for none).") var minFree: ByteCountArgument?

    func run() throws {
        do {
            var configuration = try StoreConfiguration.read(storeRoot: location.root)
            if cacheSize != nil || minFree != nil {
                guard access(location.root + "/index.sqlite", F_OK) == 0 else {
                    StoreLocation.fail("config", "\(location.root) is not an odrfs store (mount a bundle with --store first)")
                }
                if let cacheSize { configuration.cacheSize = cacheSize.value.value == 0 ? nil : cacheSize.value.value }
                if let minFree { configuration.minFree = minFree.value.value == 0 ? nil : minFree.value.value }
                try configuration.write(storeRoot: location.root)
            }
            StoreLocation.printJSON(configuration)
        } catch {
            StoreLocation.fail("config", error.description)
        }
    }
}
