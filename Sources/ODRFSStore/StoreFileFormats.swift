import Foundation
import ODRFSCore

// The small files a machine-wide store's mounts and operator write for each other, parsed
// once into checked values. They are outside input (any process of the store's user can
// write them), so parsing is bounded, never traps, and drops what does not check; the
// `storefiles` fuzz target runs these functions (this file is linked into the fuzz package).

/// What a live mount of a store says about itself in `mounts/<id>/mount.json`, for the
/// operator's tools (`odrfs store status`): written once at mount, read bounded.
public struct MountRecord: Codable, Sendable, Equatable {
    public var pid: Int32
    public var mountpoint: String
    public var origin: String
    /// The bundle's directory name in the store (`CacheLayout.bundleKey(forOrigin:)`).
    public var bundle: String
    public var started: Date

    public init(pid: Int32, mountpoint: String, origin: String, bundle: String, started: Date) {
        self.pid = pid
        self.mountpoint = mountpoint
        self.origin = origin
        self.bundle = bundle
        self.started = started
    }

    /// 64 KiB: a record is a few hundred bytes; a larger file was not written by a mount.
    public static let limit = 64 << 10

    /// The record in `data`, if it is one: at most ``limit`` bytes, a positive pid, a bundle
    /// name of 1-64 hex digits (the store's directory names), paths without NUL.
    public init?(parsing data: Data) {
        guard data.count <= Self.limit, let record = try? JSONDecoder().decode(MountRecord.self, from: data),
              record.pid > 0, (1...64).contains(record.bundle.utf8.count), record.bundle.utf8.allSatisfy(\.isHexDigit),
              !record.mountpoint.utf8.contains(0), !record.origin.utf8.contains(0) else { return nil }
        self = record
    }
}

/// The store's own limits, set by `odrfs store config` and kept in `<store>/store.json`:
/// every mount of the store obeys them.
public struct StoreConfiguration: Codable, Sendable, Equatable {
    /// Bytes of objects the store keeps at most; nil for no limit.
    public var cacheSize: Int64?
    /// Bytes to keep free on the store's filesystem; nil for none.
    public var minFree: Int64?

    enum CodingKeys: String, CodingKey {
        case cacheSize = "cache_size"
        case minFree = "min_free"
    }

    public init(cacheSize: Int64? = nil, minFree: Int64? = nil) {
        self.cacheSize = cacheSize
        self.minFree = minFree
    }

    static let fileName = "store.json"
    /// 4 KiB: the file holds two numbers.
    public static let limit = 4 << 10

    /// The configuration in `data`, if it is one: at most ``limit`` bytes of JSON whose
    /// limits, when present, are non-negative.
    public init?(parsing data: Data) {
        guard data.count <= Self.limit, let configuration = try? JSONDecoder().decode(StoreConfiguration.self, from: data),
              configuration.cacheSize.map({ $0 >= 0 }) ?? true, configuration.minFree.map({ $0 >= 0 }) ?? true else { return nil }
        self = configuration
    }
}

/// A store mount's `references` file: whether it is running (retains anything), then the
/// packs its revision names, one a line, `<sha256> <priority> <base|->`.
public struct MountReferences: Sendable {
    public var running = false
    /// Per pack (lowercase hex SHA-256): its preservation priority (finite) and whether it is a base pack.
    public var packs: [String: (priority: Double, isBase: Bool)] = [:]

    /// 64 MiB: a million packs' lines; a larger file was not written by a mount.
    public static let limit = 64 << 20

    public init(running: Bool = false, packs: [String: (priority: Double, isBase: Bool)] = [:]) {
        self.running = running
        self.packs = packs
    }

    /// Parses `data`; malformed lines are skipped, and input over ``limit`` gives nothing.
    public init(parsing data: Data) {
        guard data.count <= Self.limit else { return }
        for (number, line) in String(decoding: data, as: UTF8.self).split(separator: "\n").enumerated() {
            if number == 0, line == "running" || line == "idle" {
                running = line == "running"
                continue
            }
            let fields = line.split(separator: " ")
            guard let first = fields.first, let hash = ContentHash(hex: String(first)) else { continue }
            let priority = fields.count > 1 ? Double(fields[1]).flatMap { $0.isFinite ? $0 : nil } ?? 0 : 0
            packs[hash.hex] = (priority, fields.count > 2 && fields[2] == "base")
        }
    }

    /// The file's text for `packs` (in order) and `running`.
    public static func text(_ packs: [(sha256: String, priority: Double, isBase: Bool)], running: Bool) -> String {
        var text = running ? "running\n" : "idle\n"
        text.reserveCapacity(packs.count * 80)
        for pack in packs { text += pack.sha256 + " " + String(pack.priority) + (pack.isBase ? " base\n" : " -\n") }
        return text
    }
}

extension UInt8 {
    var isHexDigit: Bool { (0x30...0x39).contains(self) || (0x61...0x66).contains(self) }
}
