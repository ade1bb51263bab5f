import Foundation
import FUSEKit

/// How the mount answers directory listings: plain readdir (names, types and inode
/// numbers) or readdirplus (every entry with its attributes, which the kernel turns
/// into a cached inode and dentry, as if it had been looked up).
///
/// Readdirplus saves `ls -l` and `du` a lookup round trip per entry, but a walk that
/// needs only names and types (`find -type f`, `os.walk`) then makes the kernel build an
/// inode and a dentry for every file it passes: on a 1,000,000-file bundle that is a
/// million inodes in hash tables sized for far fewer (issue 28). Which walk is running is
/// unknown when a listing is answered, so the default, ``adaptive``, learns it from the
/// lookups that follow (``DirectoryListingPolicy``).
///
/// `ODRFS_READDIRPLUS=always|never|auto|directories|adaptive` in the daemon's environment
/// overrides the default, for measuring (Benchmarks/README.md); it is not part of the
/// user contract.
enum DirectoryListingMode: String, CaseIterable, Sendable {
    /// Readdirplus for every listing, every entry linked (the mount's behaviour before issue 28).
    case always
    /// Plain readdir only: a stat of an entry costs a lookup.
    case never
    /// The kernel's `FUSE_READDIRPLUS_AUTO`: readdirplus for a directory's first
    /// reply and after lookups in it, plain readdir otherwise.
    case auto
    /// Readdirplus for every listing, but only subdirectories are linked: files go with
    /// node id 0 (names and types only), so the kernel instantiates no file until
    /// someone stats it.
    case directories
    /// Readdirplus; files linked for the first ``DirectoryListingPolicy/linkBudget`` files,
    /// then only while lookups show that someone stats the files listed (see the policy).
    case adaptive

    /// The environment variable that overrides ``default`` (diagnostics and benchmarks).
    static let environmentVariable = "ODRFS_READDIRPLUS"

    /// Issue 28's measurements, 1,000,000 files, cold (caches dropped), one run, load ≤ 1.3,
    /// as multiples of the same walk of the source tree on ext4: `always` (and the kernel's
    /// `auto`, which asks readdirplus for a directory's first 4 KiB reply) walks
    /// `find -type f` at 3.4× and `os.walk` at 3.1×, `du -s` at 0.65× and `ls -lR` at 0.54×;
    /// `directories` 0.97×, 0.90×, 3.2× and 2.4×. Neither keeps both kinds of walk fast,
    /// so the default links files only while stats follow the listings.
    static let `default`: DirectoryListingMode = .adaptive

    /// The mode the daemon runs with: ``environmentVariable`` when it names a mode, else ``default``.
    static let current = DirectoryListingMode(environment: ProcessInfo.processInfo.environment)

    /// Parses the override; anything unknown (or absent) is the default.
    init(environment: [String: String]) {
        self = environment[Self.environmentVariable].flatMap { Self(rawValue: $0.lowercased()) } ?? Self.default
    }

    /// The connection flags this mode asks the kernel for.
    func apply(to connection: inout ConnectionConfiguration) {
        connection.readdirPlus = self != .never
        connection.readdirPlusAuto = self == .auto
    }
}
