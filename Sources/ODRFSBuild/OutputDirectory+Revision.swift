#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ODRFSCore

extension OutputDirectory {
    /// Only the `revision` of the previous manifest: a dist dir of an older format must
    /// still be replaceable, so the rest of it is not validated here.
    private struct RevisionProbe: Decodable {
        var revision: Int64?
        var bundle: String?
    }

    /// The bundle identity of the manifest at the dist path now, if it has a valid one: a
    /// rebuild keeps the identity it was first given.
    func currentBundleIdentity() -> BundleIdentity? {
        let manifestPath = path + "/" + Manifest.fileName
        var info = stat()
        guard lstat(manifestPath, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= 64 << 20,
              let data = FileManager.default.contents(atPath: manifestPath),
              let text = (try? JSONDecoder().decode(RevisionProbe.self, from: data))?.bundle else { return nil }
        return BundleIdentity(text)
    }

    /// The revision the new manifest gets: 1 for a fresh output, else one more than the
    /// manifest it replaces (whose missing `revision` counts as ``Manifest/unrevisioned``).
    /// Read before the new manifest is published; a build never lowers a revision.
    func nextRevision() throws(BuildError) -> Int64 {
        guard let previous = try currentRevision() else { return BundleLimits.revisionRange.lowerBound }
        // Checked: the previous manifest is input like any other.
        let (next, overflow) = previous.addingReportingOverflow(1)
        guard !overflow, BundleLimits.revisionRange.contains(next) else {
            throw BuildError(.tooLarge, path: path + "/" + Manifest.fileName,
                             "the previous manifest's revision \(previous) cannot be followed (revisions are \(BundleLimits.revisionRange.lowerBound)...\(BundleLimits.revisionRange.upperBound))")
        }
        return next
    }

    /// The revision of the manifest at the dist path now, or nil when there is none.
    func currentRevision() throws(BuildError) -> Int64? {
        let manifestPath = path + "/" + Manifest.fileName
        var info = stat()
        guard lstat(manifestPath, &info) == 0 else {
            guard errno == ENOENT else { throw BuildError.io(SystemCallError("lstat"), "examine", manifestPath) }
            return nil
        }
        guard (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= 64 << 20,
              let data = FileManager.default.contents(atPath: manifestPath) else {
            throw BuildError(.outputNotReplaceable, path: manifestPath,
                             "cannot read the previous manifest '\(manifestPath)' to number the next revision")
        }
        do {
            return try JSONDecoder().decode(RevisionProbe.self, from: data).revision ?? Manifest.unrevisioned
        } catch {
            throw BuildError(.outputNotReplaceable, path: manifestPath,
                             "the previous manifest '\(manifestPath)' has no readable revision (\(error)); remove the dist dir to start again at revision 1")
        }
    }
}
