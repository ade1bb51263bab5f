import Foundation

/// One `--mirror URL[,token-file=F]`: another server of the same dist dir, with its own
/// bearer token (the main origin's `--token-file` is never sent to a mirror).
public struct MirrorOption: Sendable, Codable, Equatable {
    /// The mirror's base URL, http or https.
    public var url: String
    /// A file whose first line is the mirror's bearer token.
    public var tokenFile: String?

    public init(url: String, tokenFile: String? = nil) {
        self.url = url
        self.tokenFile = tokenFile
    }

    /// Parses `URL` or `URL,token-file=F`. The URL may itself contain commas (a query), so
    /// only a trailing `,token-file=` is an option.
    public init(parsing argument: String) throws(FetchError) {
        var url = argument
        var tokenFile: String?
        if let marker = argument.range(of: ",token-file=", options: .backwards) {
            url = String(argument[..<marker.lowerBound])
            tokenFile = String(argument[marker.upperBound...])
            guard !tokenFile!.isEmpty else {
                throw FetchError(.invalidOrigin, "--mirror \(OriginLocator.displayName(for: url)): token-file= names no file")
            }
        }
        let lowered = url.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
            throw FetchError(.invalidOrigin, "--mirror takes an http(s) URL, not '\(OriginLocator.displayName(for: url))'")
        }
        _ = try OriginAddress(url)   // refuses credentials and malformed URLs now, not at mount
        self.init(url: url, tokenFile: tokenFile)
    }
}
