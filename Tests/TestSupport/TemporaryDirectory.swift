import Foundation

/// A directory removed at the end of the test.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init() throws {
        var template = Array((NSTemporaryDirectory() + "/odrfs-test.XXXXXX").utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw CocoaError(.fileWriteUnknown)
        }
        path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}
