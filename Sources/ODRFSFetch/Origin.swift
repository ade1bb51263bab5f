import Foundation
import ODRFSCore

/// Where a bundle's dist dir lives: a local directory now, HTTP(S) servers later.
///
/// An origin only moves bytes. Verification, retries and single-flight live above
/// it (in `PackDownloader` and the resource manager), so every origin gets them.
/// Paths are relative to the dist dir and already validated by `Manifest.decode`.
public protocol Origin: Sendable {
    /// A description for messages and logs; never contains credentials.
    var displayName: String { get }

    /// Reads a whole small file such as `manifest.json`, refusing more than `limit` bytes.
    func data(at path: String, limit: ByteCount) async throws(FetchError) -> Data

    /// Streams the file at `path` to `consume` in order, in chunks of any size.
    /// Stops early with an error if the file is longer than `expectedBytes`.
    func download(
        _ path: String,
        expectedBytes: ByteCount,
        into consume: (UnsafeRawBufferPointer) throws(FetchError) -> Void
    ) async throws(FetchError)
}

/// Turns the user's `<origin>` argument into an `Origin`.
public enum OriginLocator {
    /// Accepts a dist dir path or a `file://` URL. HTTP(S) URLs are recognised and
    /// refused with a clear message until the HTTP fetcher exists.
    public static func origin(for argument: String) throws(FetchError) -> any Origin {
        let lowered = argument.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            throw FetchError(.unsupported, "HTTP origins are not supported by this build yet: \(argument); serve the dist dir locally and pass its path")
        }
        var path = argument
        if lowered.hasPrefix("file://") {
            guard let url = URL(string: argument), url.isFileURL, !url.path.isEmpty else {
                throw FetchError(.invalidOrigin, "not a valid file:// URL: \(argument)")
            }
            path = url.path
        }
        return try FileOrigin(root: path)
    }
}
