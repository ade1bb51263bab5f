import Foundation
import ODRFSCore
import ODRFSFetch

/// Why a tag request failed, with ODR's error codes where ODR has one.
public enum ResourceRequestError: Error, CustomStringConvertible, Sendable, Equatable {
    /// A tag the manifest does not know (NSBundleResourceRequest's invalid-tag error, 4994).
    case invalidTag(Tag)
    /// Retaining these packs would put more than `--max-in-use` in use (ODR's 4993).
    case exceedsMaximumInUse(requested: ByteCount, inUse: ByteCount, limit: ByteCount)
    /// A pack could not be fetched.
    case fetchFailed(PackID, FetchError)

    public static func == (a: Self, b: Self) -> Bool { a.description == b.description }

    public var description: String {
        switch self {
        case .invalidTag(let tag):
            return "unknown tag '\(tag)': the bundle's manifest has no such tag"
        case let .exceedsMaximumInUse(requested, inUse, limit):
            return "requesting \(requested) more would put \(requested + inUse) in use, over the in-use limit of \(limit) (--max-in-use); end other requests or close files first"
        case let .fetchFailed(pack, error):
            return "pack '\(pack)' could not be fetched: \(error)"
        }
    }
}

extension ResourceManager {
    /// Every pack that files carrying any of `tags` live in (shared packs included),
    /// or `.invalidTag` for the first unknown tag.
    public func packs(for tags: [Tag]) throws(ResourceRequestError) -> [PackNumber] {
        if let unknown = tags.first(where: { !tagPacks.declares($0) }) { throw .invalidTag(unknown) }
        return tagPacks.packs(for: tags)
    }

    /// Begins accessing `tags` like `NSBundleResourceRequest.beginAccessingResources`:
    /// fetches every pack they need (once each, joining downloads in flight) and retains
    /// them all, or retains nothing and throws. Unlike a plain open(), an explicit request
    /// is refused when it would exceed `--max-in-use`. Balance with `endAccessing`.
    public func beginAccessing(_ tags: [Tag], priority: DownloadPriority = .request(0.5)) async throws(ResourceRequestError) -> [PackNumber] {
        let packs = try packs(for: tags)
        for pack in packs { noteAccess(pack, cause: .request) }
        let (newBytes, inUse) = table.read { state -> (Int64, Int64) in
            let newBytes = packs.filter { state.slots[Int($0.rawValue)].retainCount == 0 }
                .reduce(Int64(0)) { $0 + manifest.pack($1).bytes.value }
            return (newBytes, state.inUseBytes)
        }
        if inUse + newBytes > limits.maximumInUse.value {
            throw .exceedsMaximumInUse(requested: ByteCount(newBytes), inUse: ByteCount(inUse), limit: limits.maximumInUse)
        }
        let outcome = await withTaskGroup(of: (PackNumber, FetchError?).self) { group in
            for pack in packs {
                group.addTask {
                    do throws(FetchError) {
                        try await self.retain(pack, priority: priority)
                        return (pack, nil)
                    } catch {
                        return (pack, error)
                    }
                }
            }
            var retained: [PackNumber] = []
            var failure: (PackNumber, FetchError)?
            for await (pack, error) in group {
                if let error { failure = failure ?? (pack, error) } else { retained.append(pack) }
            }
            return (retained, failure)
        }
        if let (pack, error) = outcome.1 {
            outcome.0.forEach(release)
            throw .fetchFailed(manifest.pack(pack).id, error)
        }
        return packs
    }

    /// Whether every pack `tags` need is local (`conditionallyBeginAccessingResources`);
    /// never downloads. If so, retains them all and returns them.
    public func beginAccessingIfLocal(_ tags: [Tag]) throws(ResourceRequestError) -> [PackNumber]? {
        let packs = try packs(for: tags)
        return table.retainIfLocal(packs) ? packs : nil
    }

    /// Ends a request: drops the retains `beginAccessing` took.
    public func endAccessing(_ packs: [PackNumber]) {
        packs.forEach(release)
    }
}
