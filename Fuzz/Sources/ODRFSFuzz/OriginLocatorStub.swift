import Foundation

/// What `MirrorOption`'s parser (symlinked from ODRFSFetch for the `bundleconf` target)
/// needs of ODRFSFetch's `OriginLocator`, whose other members create HTTP clients: the
/// same display rule as `OriginLocator.displayName(for:)` in Sources/ODRFSFetch/Origin.swift.
enum OriginLocator {
    static func displayName(for argument: String) -> String {
        let lowered = argument.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            return (try? OriginAddress(argument))?.displayName ?? "the origin"
        }
        return argument
    }
}
