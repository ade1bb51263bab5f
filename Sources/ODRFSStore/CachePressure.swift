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
        // Saturating throughout: `--min-free` and `--cache-size` accept any 63-bit value, and
        // 125 % of a large floor does not fit in an Int64 (converting it would trap).
        let occupied = ByteCount(cached) + ByteCount(reserved)
        var needed: Int64 = 0
        if let budget, occupied > budget {
            let lowWatermark = Self.saturatingBytes(Double(budget.value) * Self.lowWatermarkFraction)
            needed = (occupied - lowWatermark).value
        }
        if let minimumFree, let available {
            // Reserved bytes will be written soon: count them against free space too.
            let effectiveFree = ByteCount(available) - ByteCount(reserved)
            if effectiveFree < minimumFree {
                let target = Self.saturatingBytes(Double(minimumFree.value) * Self.freeSpaceTargetFraction)
                needed = max(needed, (target - effectiveFree).value)
            }
        }
        return needed
    }

    /// Whether `cached + reserved` is over the byte budget.
    public func isOverBudget(cached: Int64, reserved: Int64) -> Bool {
        guard let budget else { return false }
        return ByteCount(cached) + ByteCount(reserved) > budget
    }

    /// `bytes` as a ByteCount, clamped to what an Int64 holds (`Int64(_:)` traps beyond).
    private static func saturatingBytes(_ bytes: Double) -> ByteCount {
        guard bytes < 9.2e18 else { return ByteCount(.max) }
        return ByteCount(Int64(max(bytes, 0)))
    }
}
