import Foundation
import Logging

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
