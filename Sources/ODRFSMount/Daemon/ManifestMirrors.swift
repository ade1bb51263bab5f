import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSRuntime

/// The manifest's `mirrors` list joins the mount's servers (after the command line's).
enum ManifestMirrors {
    /// Adds each of `manifest.mirrors` to `origin` when it is a ``MirrorSet`` (an HTTP
    /// origin or one given `--mirror`s); a local dist dir needs none. A mirror the fetcher
    /// refuses (credentials in the URL, a malformed URL) is logged and skipped: the list
    /// came from the origin and must not stop the mount. No token is sent to these.
    static func adopt(_ manifest: Manifest, into origin: any Origin, options: OriginOptions, logger: Logger) async {
        guard let set = origin as? MirrorSet, let urls = manifest.mirrors, !urls.isEmpty else { return }
        var added = 0
        for url in urls {
            let mirror: any Origin
            do {
                // Reads `--ca-file` (a file, maybe on a slow mount): on the I/O executor.
                mirror = try await IOExecutor.cache.run { () throws(FetchError) in
                    try OriginLocator.mirrorOrigin(MirrorOption(url: url), options: options, logger: logger)
                }
            } catch {
                logger.warning("ignoring a mirror the manifest lists", metadata: ["mirror": "\(OriginLocator.displayName(for: url))", "error": "\(error)"])
                continue
            }
            if set.add(mirror) {
                added += 1
            } else {
                await mirror.shutdown()
            }
        }
        if added > 0 {
            logger.info("mirrors from the manifest added", metadata: ["mirrors": "\(added)", "servers": "\(set.urls.count)"])
        }
    }
}
