import Foundation
import Logging
import NIOCore
import ODRFSCore
import Synchronization

/// Several servers holding the same dist dir (a CDN and a fallback bucket, a LAN mirror and
/// the internet), used as one origin: the downloader never knows which server sent a byte,
/// and every byte is verified the same way whichever did.
///
/// How a download goes:
/// - Servers are tried healthiest first (``ranking(for:)``): those that answered before
///   those that did not, fewer failures in a row first, then the lowest round-trip time,
///   then the order given (the main origin first).
/// - When one fails or stalls (its own retries used up, see ``HTTPOrigin``), the download
///   moves to the next, resuming with a range request from the bytes already delivered.
///   Members are created with a zero connect-failure budget, so a server that refuses
///   connections costs one attempt; the set itself keeps going round for
///   `unreachableAfter` while no server can be reached at all.
/// - A server whose bytes failed verification (the consumer threw `.corrupt`) is passed over
///   for that file for a while (``ServerDistrust``: 5 s, doubling with each bad answer, at
///   most 5 min; a good answer forgets it); ``hasAlternative(for:)`` tells the downloader
///   whether a trusted server remains to retry with at once. When every server is
///   distrusted for a file, the next fetch (the next open) tries the one whose distrust
///   ends first anyway and logs it: one bad response from a CDN edge must not make a
///   pack unreadable for the life of the mount.
/// - 404 and 401 from one server move on too (a mirror may lag or want another token); the
///   error the caller gets is the last server's.
/// - Range requests (update spans) and conditional GETs (periodic update checks) go the
///   same way (`MirrorSet+Failover.swift`); a range moves on from its first byte not yet
///   delivered, a multi-range download with the ranges or remainders not yet delivered
///   (`MirrorSet+MultiRange.swift`).
public final class MirrorSet: ResumableOrigin {
    /// One server with its health record.
    struct Member: Sendable {
        let origin: any Origin
        let record: OriginHealth
    }

    /// The most servers a set holds (command line and manifest together): the manifest is
    /// hostile input and a long list would only multiply failed attempts.
    public static let maximumMembers = 16

    let members: Mutex<[Member]>
    /// Members that served bad bytes, per file path.
    let distrusted = Mutex<[String: [Int: ServerDistrust]]>([:])
    let unreachableAfter: Duration
    let logger: Logger

    /// - Parameter origins: the main origin first, then the mirrors in the order given.
    public init(_ origins: [any Origin], unreachableAfter: Duration = .milliseconds(2500), logger: Logger) {
        members = Mutex(origins.prefix(Self.maximumMembers).map(Self.member))
        self.unreachableAfter = unreachableAfter
        self.logger = logger
    }

    private static func member(_ origin: any Origin) -> Member {
        Member(origin: origin, record: origin.health.first ?? OriginHealth(url: origin.displayName))
    }

    /// Adds a server (e.g. one the manifest lists) unless one with the same URL is already
    /// in the set or the set is full. Returns whether it was added.
    @discardableResult
    public func add(_ origin: any Origin) -> Bool {
        members.withLock { members in
            guard members.count < Self.maximumMembers,
                  !members.contains(where: { $0.origin.displayName == origin.displayName }) else { return false }
            members.append(Self.member(origin))
            return true
        }
    }

    /// The URLs of the servers, main origin first.
    public var urls: [String] { members.withLock { $0.map(\.origin.displayName) } }

    public var displayName: String {
        let all = members.withLock { $0 }
        guard let first = all.first else { return "no origin" }
        return all.count == 1 ? first.origin.displayName : "\(first.origin.displayName) (+\(all.count - 1) mirrors)"
    }

    public var health: [OriginHealth] { members.withLock { $0.map(\.record) } }

    public func hasAlternative(for path: String) -> Bool {
        !ranking(for: path).isEmpty
    }

    /// The servers to try for `path`, best first: ``ranking(for:)``; when no trusted server
    /// is left that answers (all distrusted for it, or the rest unreachable), the one whose
    /// distrust ends first is added at the end (`lastResort` set).
    func candidates(for path: String, now: ContinuousClock.Instant = .now) -> (order: [Int], lastResort: Bool) {
        let order = ranking(for: path, now: now)
        let reachable = members.withLock { members in order.contains { members[$0].record.snapshot.isReachable != false } }
        guard !reachable else { return (order, false) }
        let soonest = distrusted.withLock { table in
            table[path]?.filter { $0.value.until > now }.min { $0.value.until < $1.value.until }?.key
        }
        guard let soonest else { return (order, false) }
        return (order + [soonest], true)
    }

    public func shutdown() async {
        for member in members.withLock({ $0 }) { await member.origin.shutdown() }
    }

    /// Asks each server marked unreachable for `path` (the manifest), so that one that came
    /// back is ranked by its health again and status shows it; the others are left alone.
    public func recheckUnreachable(_ path: String, limit: ByteCount) async {
        let down = members.withLock { $0.filter { $0.record.snapshot.isReachable == false } }
        for member in down {
            if (try? await member.origin.data(at: path, limit: limit)) != nil { member.record.recordCompleted() }
        }
    }

    /// Member indexes to try for `path`, best first; those distrusted for it now left out.
    func ranking(for path: String, now: ContinuousClock.Instant = .now) -> [Int] {
        let all = members.withLock { $0 }
        let excluded = distrusted.withLock { $0[path]?.filter { $0.value.until > now }.keys.map { $0 } ?? [] }
        let scored = all.indices.filter { !excluded.contains($0) }.map { ($0, all[$0].record.snapshot) }
        return scored.sorted { a, b in
            let (ia, ha) = a
            let (ib, hb) = b
            let downA = ha.isReachable == false, downB = hb.isReachable == false
            if downA != downB { return !downA }
            if ha.failuresInARow != hb.failuresInARow { return ha.failuresInARow < hb.failuresInARow }
            switch (ha.roundTrip, hb.roundTrip) {
            case let (ra?, rb?) where ra != rb:
                // Within 20 % counts as equal, so that jitter does not flip the order each time.
                if ra < rb * 0.8 || rb < ra * 0.8 { return ra < rb }
            default: break
            }
            return ia < ib
        }.map(\.0)
    }

    public func download(
        _ path: String,
        from offset: Int64,
        expectedBytes: ByteCount,
        into consume: (ByteBuffer) async throws(FetchError) -> Void
    ) async throws(FetchError) {
        var delivered = max(0, offset)
        try await withFailover(path) { (origin: any Origin, consumerFailed: inout Bool) async throws(FetchError) in
            try await origin.download(path, from: delivered, expectedBytes: expectedBytes) { (bytes: ByteBuffer) async throws(FetchError) in
                do throws(FetchError) { try await consume(bytes) } catch {
                    consumerFailed = true
                    throw error
                }
                delivered += Int64(bytes.readableBytes)
            }
        }
    }

    func distrust(_ index: Int, for path: String, member: Member, error: FetchError, now: ContinuousClock.Instant = .now) {
        let distrust = distrusted.withLock { table in
            let next = ServerDistrust.after(table[path]?[index], now: now)
            table[path, default: [:]][index] = next
            return next
        }
        member.record.recordFailure("bad bytes for \(path)")
        logger.error("server sent bytes that failed verification; passing it over for this file for a while", metadata: [
            "fetch.path": "\(path)", "mirror": "\(member.origin.displayName)", "error": "\(error)",
            "distrust.seconds": "\(distrust.backoff.components.seconds)", "distrust.strikes": "\(distrust.strikes)",
        ])
    }

    /// A good answer from `index` for `path`: its distrust for that file is forgotten.
    func trust(_ index: Int, for path: String) {
        distrusted.withLock { table in
            guard table[path]?.removeValue(forKey: index) != nil, table[path]?.isEmpty == true else { return }
            table[path] = nil
        }
    }
}
