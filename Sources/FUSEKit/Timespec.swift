/// A point in time as the kernel stores it in `struct timespec`: seconds since
/// the Unix epoch plus nanoseconds (0 ..< 1_000_000_000).
public struct Timespec: Sendable, Hashable {
    public var seconds: Int64
    public var nanoseconds: UInt32

    public init(seconds: Int64, nanoseconds: UInt32 = 0) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    /// 1970-01-01T00:00:00Z.
    public static let epoch = Timespec(seconds: 0)
}
