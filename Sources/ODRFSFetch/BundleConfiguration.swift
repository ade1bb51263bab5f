import Foundation
import ODRFSCore

/// One bundle's configuration file, `/etc/odrfs/bundles.d/NAME.conf`: what `odrfs mount`
/// needs to mount the bundle at `/odr/NAME` (through autofs or /etc/fstab), parsed once
/// into checked values (see `BundleConfiguration+Parsing.swift` for the format).
///
/// Every value is validated here the way the same `odrfs mount` option is (origin and
/// mirror URLs through ``OriginAddress`` and ``MirrorOption``, sizes through
/// ``ODRFSCore/ByteCount``), so that a broken file is reported by `odrfs config check` and
/// by the autofs map with its line number, not by a mount that fails later.
public struct BundleConfiguration: Sendable, Equatable {
    /// The keys a file may set, each at most once.
    public enum Key: String, CaseIterable, Sendable {
        case origin
        case mirrors
        case tokenFile = "token-file"
        case caFile = "ca-file"
        case trustKey = "trust-key"
        case cache
        case store
        case cacheSize = "cache-size"
        case minFree = "min-free"
        case maxInUse = "max-in-use"
        case fetchTimeout = "fetch-timeout"
        case maxBackgroundRate = "max-background-rate"
        case proxy
        case offline
        case logLevel = "log-level"
        case variants
    }

    /// The dist dir: an http(s) URL, an absolute path or a file:// URL.
    public var origin: String
    public var mirrors: [MirrorOption] = []
    public var tokenFile: String?
    public var caFile: String?
    public var trustKeys: [String] = []
    public var cache: String?
    /// `store = DIR`: the machine-wide store (`--store`); the default store when unset.
    public var store: String?
    public var cacheSize: ByteCount?
    public var minFree: ByteCount?
    public var maxInUse: ByteCount?
    /// Seconds, as `--fetch-timeout`.
    public var fetchTimeout: Double?
    public var maxBackgroundRate: ByteCount?
    public var proxy: String?
    public var offline = false
    public var logLevel: String?
    /// `variants = tcf=astc,etc2 locale=it`: the `--variant` values, one word per key.
    public var variants: [String] = []

    public init(origin: String) {
        self.origin = origin
    }

    /// Mirrors beside the origin: a mirror set holds at most 16 servers.
    public static let maximumMirrors = 15
    /// Trust keys at once (key rotation needs two).
    public static let maximumTrustKeys = 8
    /// The log levels `--log-level` takes.
    public static let logLevels: Set<String> = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// The `odrfs mount` arguments that mount this bundle, the origin first and the
    /// mountpoint left out: `mount.odrfs` inserts it and appends the fstab options.
    public var mountArguments: [String] {
        var arguments = [origin]
        for mirror in mirrors {
            arguments += ["--mirror", mirror.url + (mirror.tokenFile.map { ",token-file=" + $0 } ?? "")]
        }
        if let tokenFile { arguments += ["--token-file", tokenFile] }
        if let caFile { arguments += ["--ca-file", caFile] }
        for key in trustKeys { arguments += ["--trust-key", key] }
        if let cache { arguments += ["--cache", cache] }
        if let store { arguments += ["--store", store] }
        if let cacheSize { arguments += ["--cache-size", String(cacheSize.value)] }
        if let minFree { arguments += ["--min-free", String(minFree.value)] }
        if let maxInUse { arguments += ["--max-in-use", String(maxInUse.value)] }
        if let fetchTimeout { arguments += ["--fetch-timeout", String(fetchTimeout)] }
        if let maxBackgroundRate { arguments += ["--max-background-rate", String(maxBackgroundRate.value)] }
        if let proxy { arguments += ["--proxy", proxy] }
        if offline { arguments.append("--offline") }
        if let logLevel { arguments += ["--log-level", logLevel] }
        for variant in variants { arguments += ["--variant", variant] }
        return arguments
    }
}

/// Why a bundle configuration was refused: the line (when one is to blame) and what is
/// wrong with it, phrased so that one log line tells the operator what to fix.
public struct BundleConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 1-based; nil for the file as a whole (too large, not UTF-8, no origin).
    public var line: Int?
    public var message: String

    public init(line: Int?, _ message: String) {
        self.line = line
        self.message = message
    }

    public var description: String { line.map { "line \($0): \(message)" } ?? message }
}
