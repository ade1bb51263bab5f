import ODRFSCore

/// The cache's limits and how far below them a purge cleans.
///
/// Pressure means the cache holds more than `budget` (with in-flight downloads'
/// reservations counted), or the cache's filesystem has less than `minimumFree`
/// available. A purge then cleans down to the low watermarks — 75 % of the budget,
/// and 125 % of the free-space floor — so it does not run again after every download
/// (hysteresis; CVMFS cleans to half its quota, 75 % keeps more of what users fetched).
public struct CacheLimits: Sendable, Equatable, Codable {
    /// `--cache-size`: nil means no byte budget (only free space limits the cache).
    public var budget: ByteCount?
    /// `--min-free`: nil means no free-space floor.
    public var minimumFree: ByteCount?
    /// `--max-in-use`: bytes of retained packs beyond which explicit tag requests fail.
    public var maximumInUse: ByteCount

    public static let lowWatermarkFraction = 0.75
    public static let freeSpaceTargetFraction = 1.25
    public static let defaultMaximumInUse = ByteCount.gibibytes(2)

    public init(budget: ByteCount? = nil, minimumFree: ByteCount? = nil, maximumInUse: ByteCount = CacheLimits.defaultMaximumInUse) {
        self.budget = budget
        self.minimumFree = minimumFree
        self.maximumInUse = maximumInUse
    }

    /// Bytes to free now, or 0 when there is no pressure.
    /// - Parameters:
    ///   - cached: bytes of verified packs on disk.
    ///   - reserved: bytes reserved by downloads in flight (not yet on disk).
    ///   - available: free bytes on the cache's filesystem, if known.
    public func bytesToFree(cached: Int64, reserved: Int64, available: Int64?) -> Int64 {
        var needed: Int64 = 0
        if let budget, cached + reserved > budget.value {
            let lowWatermark = Int64(Double(budget.value) * Self.lowWatermarkFraction)
            needed = cached + reserved - lowWatermark
        }
        if let minimumFree, let available {
            // Reserved bytes will be written soon: count them against free space too.
            let effectiveFree = available - reserved
            if effectiveFree < minimumFree.value {
                let target = Int64(Double(minimumFree.value) * Self.freeSpaceTargetFraction)
                needed = max(needed, target - effectiveFree)
            }
        }
        return needed
    }

    /// Whether `cached + reserved` is over the byte budget.
    public func isOverBudget(cached: Int64, reserved: Int64) -> Bool {
        guard let budget else { return false }
        return cached + reserved > budget.value
    }
}
