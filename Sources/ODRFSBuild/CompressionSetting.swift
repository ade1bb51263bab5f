import ODRFSCompression

/// What `odrfs build --compress` asks for: `zstd` (level ``ZstdFrame/defaultLevel``),
/// `zstd:LEVEL`, or `none` for plain tar packs as before compression existed.
public enum CompressionSetting: Sendable, Equatable, CustomStringConvertible {
    case none
    case zstd(level: Int)

    /// The default: zstd at level 3, fast to build and to decode, most of the gain.
    public static let `default` = CompressionSetting.zstd(level: ZstdFrame.defaultLevel)

    /// Parses `none`, `zstd` or `zstd:LEVEL` (LEVEL within ``ZstdFrame/levels``).
    public init?(parsing text: String) {
        switch text {
        case "none": self = .none
        case "zstd": self = .default
        default:
            guard text.hasPrefix("zstd:"), let level = Int(text.dropFirst(5)), ZstdFrame.levels.contains(level) else {
                return nil
            }
            self = .zstd(level: level)
        }
    }

    public var description: String {
        switch self {
        case .none: "none"
        case .zstd(let level): "zstd:\(level)"
        }
    }
}
