import Foundation
import Logging

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

extension OriginLocator {
    /// The origin of a mount: `argument` alone, or, when it is an HTTP(S) URL or `mirrors`
    /// are given, a ``MirrorSet`` of it and the mirrors (to which the manifest's own mirrors
    /// can be added later). `options.tokenFile` goes to the main origin only; each mirror
    /// gets its own token file or none.
    public static func origin(
        for argument: String,
        mirrors: [MirrorOption],
        options: OriginOptions,
        logger: Logger
    ) throws(FetchError) -> any Origin {
        let lowered = argument.lowercased()
        let isHTTP = lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
        guard isHTTP || !mirrors.isEmpty else {
            return try origin(for: argument, options: options, logger: logger)
        }
        // Inside a set each server gets one connection attempt per round; the set keeps
        // going round for the fail-fast budget (see MirrorSet).
        var memberOptions = options
        memberOptions.unreachableAfter = .zero
        var members: [any Origin] = [try origin(for: argument, options: memberOptions, logger: logger)]
        for mirror in mirrors {
            members.append(try mirrorOrigin(mirror, options: options, logger: logger))
        }
        return MirrorSet(members, unreachableAfter: options.unreachableAfter, logger: logger)
    }

    /// An HTTP origin for a mirror: the main origin's trust, patience and connection budget,
    /// the mirror's own token.
    public static func mirrorOrigin(_ mirror: MirrorOption, options: OriginOptions, logger: Logger) throws(FetchError) -> any Origin {
        var mirrorOptions = options
        mirrorOptions.tokenFile = mirror.tokenFile
        mirrorOptions.unreachableAfter = .zero
        return try HTTPOrigin(url: mirror.url, options: mirrorOptions, logger: logger)
    }
}
