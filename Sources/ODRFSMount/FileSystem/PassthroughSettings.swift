import FUSEKit
import ODRFSCore

/// `odrfs mount --passthrough auto|off` and `--passthrough-min-size`: whether the mount
/// asks the kernel for FUSE passthrough, and which files get a backing file for it.
public struct PassthroughSettings: Sendable, Codable, Equatable {
    /// Whether to ask for passthrough at all.
    public enum Mode: String, Sendable, Codable, CaseIterable {
        /// Ask for it; the kernel and the daemon's privileges decide (``PassthroughStatus``).
        case auto
        /// Never ask: every read takes the FUSE read path and no backing files are copied
        /// (for comparing the two paths, or a kernel whose passthrough misbehaves).
        case off
    }

    /// The default `--passthrough-min-size`: smaller files gain little from the local
    /// filesystem's page cache and would double the cache's file count.
    public static let defaultMinimumSize = ByteCount.mebibytes(1)

    /// The read path reported when passthrough is off (status, `readPath`, the log).
    public static let switchedOffReadPath = "fuse (passthrough switched off)"

    public var mode: Mode
    /// Files smaller than this always take the FUSE read path.
    public var minimumSize: ByteCount

    public init(mode: Mode = .auto, minimumSize: ByteCount = Self.defaultMinimumSize) {
        self.mode = mode
        self.minimumSize = minimumSize
    }

    /// The mount's read path for status and logs: `passthrough`'s own account, unless
    /// passthrough was switched off, which it cannot tell from "not requested".
    func readPath(_ passthrough: Passthrough) -> String {
        mode == .off ? Self.switchedOffReadPath : passthrough.summary
    }
}
