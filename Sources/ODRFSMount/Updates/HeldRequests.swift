import ODRFSControl
import ODRFSCore
import Synchronization

/// Tag requests held on the control socket (`odrfs request --hold`, a
/// `BundleResourceRequest` between begin and end), so that an update can carry them over
/// by tag name: after a switch each hold retains its tags' packs in the new revision and
/// lets go of the old ones, and its end releases whatever it holds then.
///
/// Keyed by the token the control server holds and hands back once at the end; identical
/// tokens (same packs, same view) are interchangeable, so each key keeps a list.
final class HeldRequests: Sendable {
    struct Hold: Sendable {
        var tags: [Tag]
        /// The view (``ResourceManager/generation``) whose pack numbers `packs` are.
        var generation: Int64
        var packs: [PackNumber]
    }

    private let holds = Mutex<[RetainToken: [Hold]]>([:])

    /// Every tag some request holds now.
    var tags: Set<Tag> {
        holds.withLock { holds in Set(holds.values.flatMap { $0.flatMap(\.tags) }) }
    }

    func began(_ token: RetainToken, tags: [Tag], generation: Int64) {
        let hold = Hold(tags: tags, generation: generation, packs: token.packs.map(PackNumber.init))
        holds.withLock { $0[token, default: []].append(hold) }
    }

    /// The retains to drop for `token` (its own, or those a switch moved it to); nil if
    /// it was never recorded.
    func ended(_ token: RetainToken) -> Hold? {
        holds.withLock { holds in
            guard var list = holds[token], !list.isEmpty else { return nil }
            let hold = list.removeLast()
            holds[token] = list.isEmpty ? nil : list
            return hold
        }
    }

    /// After a switch to `manager`'s revision: each hold retains its tags there (they are
    /// local: an update fetches every pack retained before it) and returns the retains it
    /// had, for the caller to release in their own revision.
    func carryOver(to manager: ResourceManager) -> [Hold] {
        let generation = manager.generation
        return holds.withLock { holds in
            var released: [Hold] = []
            for (token, list) in holds {
                holds[token] = list.map { hold in
                    guard hold.generation != generation else { return hold }
                    released.append(hold)
                    // A tag the new revision lacks, or packs not local: the hold ends up holding nothing.
                    let packs = (try? manager.beginAccessingIfLocal(hold.tags)).flatMap { $0 } ?? []
                    return Hold(tags: hold.tags, generation: generation, packs: packs)
                }
            }
            return released
        }
    }
}
