#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ODRFSCore

extension OutputDirectory {
    /// A new object written under a temporary name, not yet durable nor at its address.
    struct PendingObject: Sendable {
        var temporary: String
        /// Dist-relative content address, e.g. `packs/<sha256>.tar`.
        var relative: String
    }

    /// Makes new objects durable and moves them to their content addresses: one `syncfs`
    /// for all of them where the system has it (else an fsync each), then the renames, then
    /// an fsync of their directories — so that an address never names bytes a crash could
    /// lose, and an interrupted build leaves only temporary files.
    func publishObjects(_ objects: [PendingObject]) throws(BuildError) {
        guard !objects.isEmpty else { return }
        if !FilesystemSync.sync(filesystemOf: path) {
            for object in objects {
                let fd = Glibc.open(object.temporary, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { throw BuildError.io(SystemCallError("open"), "open", object.temporary) }
                defer { close(fd) }
                do { try POSIXFile.sync(fd) } catch { throw BuildError.io(error, "fsync", object.temporary) }
            }
        }
        for object in objects {
            do { try POSIXFile.rename(object.temporary, path + "/" + object.relative) } catch { throw BuildError.io(error, "rename", object.temporary) }
        }
    }

    /// Removes every temporary file in the dist dir; only under the build's lock, where any
    /// such file is this build's or a killed one's.
    func removeTemporaries() {
        for directory in [path, path + "/" + Self.packsDirectory, path + "/" + Self.indexDirectory,
                          path + "/" + Self.manifestsDirectory] {
            for name in (try? POSIXFile.names(in: directory)) ?? [] where name.hasPrefix(Self.temporaryPrefix) {
                unlink(directory + "/" + name)
            }
        }
    }

    /// Whether a kept revision already holds this object (same name and size).
    func hasObject(_ relative: String, bytes: ByteCount) -> Bool {
        POSIXFile.regularFileSize(path + "/" + relative) == bytes.value
    }

    /// A temporary path in one of the dist dir's directories ("" for the root).
    func temporaryPath(in directory: String, _ suffix: String) -> String {
        (directory.isEmpty ? path : path + "/" + directory) + "/" + Self.temporaryPrefix + suffix
    }

    /// `manifests/<revision>.json`, relative to the dist dir.
    static func archivedManifest(_ revision: Int64) -> String {
        "\(manifestsDirectory)/\(revision).json"
    }

    /// Publishes a revision whose objects are all in place: records the manifest (and its
    /// signature) as `manifests/<revision>.json`, then replaces `manifest.json` — the switch
    /// point — by a rename, last. Everything it names is fsynced before, and the directory
    /// after. With a signature, `manifest.json.sig` is renamed into place just before the
    /// manifest (two renames cannot be one atomic step; see the README); an unsigned build
    /// removes a previous signature after the switch, since it no longer matches.
    func publish(manifest: [UInt8], signature: ManifestSignature?, revision: Int64) throws(BuildError) {
        for directory in [Self.packsDirectory, Self.indexDirectory] {
            do { try POSIXFile.syncDirectoryChecked(path + "/" + directory) } catch { throw BuildError.io(error, "fsync", path + "/" + directory) }
        }
        let archive = path + "/" + Self.archivedManifest(revision)
        let signatureBytes = signature.map { Array($0.fileContents.utf8) }
        do {
            try POSIXFile.replaceFile(archive, manifest, temporary: temporaryPath(in: Self.manifestsDirectory, "manifest"))
            if let signatureBytes {
                try POSIXFile.replaceFile(archive + ".sig", signatureBytes, temporary: temporaryPath(in: Self.manifestsDirectory, "signature"))
            } else {
                unlink(archive + ".sig")
            }
            try POSIXFile.syncDirectoryChecked(path + "/" + Self.manifestsDirectory)
        } catch {
            throw BuildError.io(error, "record the manifest as", archive)
        }
        let manifestPath = path + "/" + Manifest.fileName
        let signaturePath = path + "/" + ManifestSignature.fileName
        do {
            // Both written and fsynced first, so the two renames follow each other at once.
            let manifestTemporary = temporaryPath(in: "", "manifest")
            try POSIXFile.writeFile(manifestTemporary, manifest)
            if let signatureBytes {
                let signatureTemporary = temporaryPath(in: "", "signature")
                try POSIXFile.writeFile(signatureTemporary, signatureBytes)
                try POSIXFile.rename(signatureTemporary, signaturePath)
            }
            try POSIXFile.rename(manifestTemporary, manifestPath)
            if signatureBytes == nil { unlink(signaturePath) }
            try POSIXFile.syncDirectoryChecked(path)
        } catch {
            throw BuildError.io(error, "publish", manifestPath)
        }
    }

    /// A dist dir written before revisions were recorded has a manifest but no
    /// `manifests/<revision>.json`: records it, so that pruning keeps its objects.
    func recordCurrentManifest(revision: Int64) {
        let archive = path + "/" + Self.archivedManifest(revision)
        guard access(archive, F_OK) != 0, let bytes = try? POSIXFile.readAll(path + "/" + Manifest.fileName) else { return }
        try? POSIXFile.replaceFile(archive, bytes, temporary: temporaryPath(in: Self.manifestsDirectory, "manifest"))
        if let signature = try? POSIXFile.readAll(path + "/" + ManifestSignature.fileName) {
            try? POSIXFile.replaceFile(archive + ".sig", signature, temporary: temporaryPath(in: Self.manifestsDirectory, "signature"))
        }
        POSIXFile.syncDirectory(path + "/" + Self.manifestsDirectory)
    }
}
