/// The largest bundle odrfs accepts, checked once when a manifest and its file index are
/// validated. Every number in a manifest or index comes from an origin that may be hostile;
/// once these bounds hold, any sum of pack sizes, any file offset plus size and any chunk
/// count fits in an `Int64` with room to spare, so code downstream of validation (the
/// mount's statvfs, reservations, snapshots) can add sizes without overflow checks.
///
/// | What                         | Bound                         |
/// |------------------------------|-------------------------------|
/// | all packs together           | ``maxTotalBytes`` (2^52 B, 4 PiB) |
/// | one pack, one file           | ``maxTotalBytes``             |
/// | chunk size                   | ``chunkSizeRange`` (1 KiB…1 GiB) |
/// | packs in a manifest          | ``maxPackCount`` (1,000,000)  |
/// | file index size              | ``maxIndexBytes`` (1 GiB, ~10 million entries) |
/// | file index entries           | `UInt32.max`                  |
/// | symlink hops when resolving  | ``maxSymlinkHops`` (40, as Linux's ELOOP) |
/// | one symlink target           | 4095 bytes (PATH_MAX - 1)     |
/// | all symlink targets together | ``maxSymlinkTargetBytes`` (64 MiB) |
/// | manifest revision            | ``revisionRange`` (1…2^53)    |
/// | manifest expiry (Unix s)     | ``expiryRange`` (1970…9999-12-31) |
public enum BundleLimits {
    /// Directory levels of a bundle that declares variants: its tree is walked
    /// recursively when a mount resolves it (``VariantView``), so a hostile index must
    /// not nest deeper than a thread's stack allows; `odrfs build` refuses deeper trees.
    public static let maxVariantTreeDepth = 256

    /// Upper bound of the sum of every pack's size. 2^52 leaves 2^11 headroom below
    /// `Int64.max`, so even 2,000 such sums added together cannot overflow.
    public static let maxTotalBytes = ByteCount(1 << 52)
    /// Chunk sizes a manifest may declare: tiny chunks would make a chunk list larger than
    /// the pack, huge ones would let one chunk fill memory or delay verification forever.
    public static let chunkSizeRange = ByteCount.kibibytes(1)...ByteCount.gibibytes(1)
    /// Packs in one manifest (one per distinct tag set).
    public static let maxPackCount = 1_000_000
    /// The file index is downloaded before the mount is ready and hashed on every mount;
    /// a hostile manifest must not make it unbounded.
    public static let maxIndexBytes = ByteCount.gibibytes(1)
    /// Symlinks followed while resolving one symlink target inside the bundle.
    public static let maxSymlinkHops = 40
    /// The bytes of all symlink targets together: each is resolved at validation, one
    /// lookup per component (a million links of 60 bytes fit).
    public static let maxSymlinkTargetBytes = ByteCount.mebibytes(64)
    /// Manifest revisions: 2^53 is the largest integer every JSON reader (JavaScript's
    /// doubles included) represents exactly; a build a second for 285 million years.
    public static let revisionRange: ClosedRange<Int64> = 1...(1 << 53)
    /// Manifest expiry times in Unix seconds: up to 9999-12-31T23:59:59Z, so that the date
    /// prints as ISO 8601 and converts to a `Date` without loss.
    public static let expiryRange: ClosedRange<Int64> = 0...253_402_300_799
}
