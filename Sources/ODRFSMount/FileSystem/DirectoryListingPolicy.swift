import Synchronization

/// Decides, per readdirplus reply, whether its files go linked (with attributes: the
/// kernel caches an inode and a dentry for each, and a stat costs nothing) or name-only
/// (node id 0: a stat costs a lookup, a walk that never stats costs the kernel nothing).
/// Subdirectories are always linked: every walk descends into them.
///
/// ``DirectoryListingMode/adaptive``: the first ``linkBudget`` files are linked, so small
/// bundles list exactly as with readdirplus always. Past the budget a reply links its
/// files only while the mount sees stat walkers: lookups of files amount to at least a
/// quarter of the files listed name-only (both counts halved every ``evidenceWindow``
/// name-only files, so the last few dozen directories count, not the walks of an hour
/// ago). An `ls -lR` or `du` turns linking on after its first name-only directories; while linking,
/// the first reply of every ``probeInterval``-th listing goes name-only anyway, so the
/// policy notices when the walkers stop stat-ing and a `find` turns it back off. (Listings,
/// not replies: a listing is typically one reply with entries and an empty one that ends
/// it, so one reply in 16 was always an empty one.)
///
/// Shared by every revision of a mount; counters are atomics, since lookups and readdirs
/// arrive on every FUSE thread.
final class DirectoryListingPolicy: Sendable {
    let mode: DirectoryListingMode
    /// Files linked before the policy starts judging: about one inode per bucket of the
    /// kernel's inode hash on a small VM (`ihash_entries=65536`), where a million inodes
    /// made chains of 15 and `find` 3.4× native (issue 28).
    let linkBudget: Int
    /// While linking past the budget, one listing in this many starts name-only as a probe.
    static let probeInterval = 16
    /// The evidence counters are halved once this many files were listed name-only.
    static let evidenceWindow = 2048

    private let linkedFiles = Atomic<Int>(0)
    private let nameOnlyFiles = Atomic<Int>(0)
    private let fileLookups = Atomic<Int>(0)
    private let listings = Atomic<Int>(0)

    init(mode: DirectoryListingMode, linkBudget: Int = 65_536) {
        self.mode = mode
        self.linkBudget = linkBudget
    }

    /// Whether the readdirplus reply about to be built links its files; `startsListing`
    /// when it is a listing's first reply (offset 0).
    func linksFiles(startsListing: Bool) -> Bool {
        switch mode {
        case .always, .never, .auto:
            return true
        case .directories:
            return false
        case .adaptive:
            if linkedFiles.load(ordering: .relaxed) < linkBudget { return true }
            let statWalkers = fileLookups.load(ordering: .relaxed) * 4 > nameOnlyFiles.load(ordering: .relaxed)
            guard statWalkers else { return false }
            return !startsListing || listings.add(1, ordering: .relaxed).newValue % Self.probeInterval != 0
        }
    }

    /// Records a readdirplus reply's `files` (non-directories) and how they went.
    func replied(files: Int, linked: Bool) {
        guard mode == .adaptive, files > 0 else { return }
        if linked {
            linkedFiles.add(files, ordering: .relaxed)
            return
        }
        let listed = nameOnlyFiles.add(files, ordering: .relaxed).newValue
        if listed > Self.evidenceWindow {
            // Decay: both halved, so the ratio reflects the recent walks. Races between
            // threads only blur the counts, which are evidence, not bookkeeping.
            nameOnlyFiles.store(listed / 2, ordering: .relaxed)
            fileLookups.store(fileLookups.load(ordering: .relaxed) / 2, ordering: .relaxed)
        }
    }

    /// Records a lookup of a file (not a directory): someone wants its attributes.
    func lookedUpFile() {
        guard mode == .adaptive else { return }
        fileLookups.add(1, ordering: .relaxed)
    }
}
