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
        guard lstat(manifestPath, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= Manifest.maximumBytes.value,
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
        guard (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= Manifest.maximumBytes.value,
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

extension OutputDirectory {
    /// The frame tables that the manifests in the dist dir (the current one and the archived
    /// revisions) give their compressed pack files, by file: a pack file's name is its tar's
    /// hash, so a rebuild that would lay the same tar out in other frames (another release's
    /// cuts) must keep the published file and its table, never rename new bytes over a name
    /// that kept revisions and caches trust. Manifests that do not decode are skipped.
    func publishedCompressions() -> [String: PackCompression] {
        var tables: [String: PackCompression] = [:]
        let archived = ((try? FileManager.default.contentsOfDirectory(atPath: path + "/" + Self.manifestsDirectory)) ?? [])
            .filter { $0.hasSuffix(".json") }.map { Self.manifestsDirectory + "/" + $0 }
        for relative in [Manifest.fileName] + archived.sorted() {
            let file = path + "/" + relative
            var info = stat()
            guard lstat(file, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= Manifest.maximumBytes.value,
                  let data = FileManager.default.contents(atPath: file), let manifest = try? Manifest.decode(data) else { continue }
            for pack in manifest.packs {
                if let compression = pack.compression, tables[pack.file] == nil { tables[pack.file] = compression }
            }
        }
        return tables
    }
}
