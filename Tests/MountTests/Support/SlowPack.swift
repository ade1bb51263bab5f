import Foundation
import TestSupport
import Testing

/// A slow origin without any test hook in ODRFS: one pack of the dist dir becomes a
/// FIFO whose writer sends the first `bytes` bytes and then stalls — for good, or until
/// `resume()` creates a flag file, after which it sends the rest.
final class SlowPack {
    /// The real pack file, moved aside.
    let saved: String
    let path: String
    private let flag: String
    private let writer: ChildProcess

    init(_ fixture: MountFixture, pack id: String, stallAfter bytes: Int) throws {
        path = fixture.dist + "/packs/" + (try fixture.distFileName(of: id))
        saved = fixture.root + "/\(id).tar"
        flag = fixture.root + "/resume-\(id)"
        try #require(rename(path, saved) == 0)
        try #require(mkfifo(path, 0o644) == 0)
        let script = "{ head -c \(bytes) \"$0\"; while [ ! -e \"$2\" ]; do sleep 0.05; done; tail -c +\(bytes + 1) \"$0\"; } > \"$1\""
        writer = try ChildProcess("/bin/sh", ["-c", script, saved, path, flag])
    }

    /// Lets the writer send the rest of the pack.
    func resume() {
        _ = FileManager.default.createFile(atPath: flag, contents: nil)
    }

    /// Stops the writer and puts the real pack file back in place.
    func restore() {
        writer.stop()
        unlink(path)
        rename(saved, path)
    }

    deinit {
        writer.stop()
    }
}
