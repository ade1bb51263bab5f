import Foundation

/// `/etc/odrfs/bundles.d/NAME.conf`, which root's automounter reads, and the NAME autofs
/// passes from any lookup under /odr. What is accepted must be what `mount.odrfs` can
/// pass on safely: one argument per line (no control character in any value), the origin
/// first, paths absolute, lists within their bounds; and a name accepted builds a path
/// inside the folder.
enum BundleConfTarget {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        let text = String(decoding: bytes.prefix(128), as: UTF8.self)
        if let name = BundleName(text) {
            check(!name.rawValue.contains("/") && !name.rawValue.contains("..") && !name.rawValue.hasPrefix("."),
                  "bundle name \(text.debugDescription) could leave the folder")
            check(name.rawValue.utf8.count <= BundleName.maximumLength, "bundle name \(text.debugDescription) is too long")
        }
        guard let configuration = try? BundleConfiguration(parsing: bytes) else { return }
        let arguments = configuration.mountArguments
        check(arguments.first == configuration.origin && !configuration.origin.isEmpty, "the origin is not the first argument")
        for argument in arguments {
            check(!argument.isEmpty && !argument.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F },
                  "argument \(argument.debugDescription) cannot travel one per line")
        }
        check(configuration.mirrors.count <= BundleConfiguration.maximumMirrors, "\(configuration.mirrors.count) mirrors")
        check(configuration.trustKeys.count <= BundleConfiguration.maximumTrustKeys, "\(configuration.trustKeys.count) trust keys")
        let paths = [configuration.tokenFile, configuration.caFile, configuration.cache].compactMap { $0 }
            + configuration.trustKeys + configuration.mirrors.compactMap(\.tokenFile)
        for path in paths { check(path.hasPrefix("/"), "path \(path.debugDescription) is not absolute") }
        if let timeout = configuration.fetchTimeout { check(timeout > 0 && timeout <= 3600, "fetch-timeout \(timeout)") }
        for size in [configuration.cacheSize, configuration.minFree, configuration.maxInUse, configuration.maxBackgroundRate].compactMap({ $0 }) {
            check(size.value >= 0, "a negative size \(size.value)")
        }
    }
}
