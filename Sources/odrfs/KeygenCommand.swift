import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ODRFSCore

/// `odrfs keygen KEYFILE`: a new Ed25519 key pair for signing manifests.
struct KeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Create an Ed25519 key pair for signing manifests.",
        discussion: """
            Writes the private key to KEYFILE (mode 0600, one line \
            'odrfs-ed25519-private <base64>') and the public key to KEYFILE.pub (one line \
            'odrfs-ed25519-public <base64>'). Neither file is ever overwritten. Sign with \
            `odrfs build --sign-key KEYFILE`; give KEYFILE.pub to the mounts \
            (`odrfs mount --trust-key KEYFILE.pub`).
            """)

    @Argument(help: "Where to write the private key; the public key goes to KEYFILE.pub.")
    var keyFile: String

    func run() throws {
        let key = SigningKey()
        let publicPath = keyFile + ".pub"
        // O_EXCL: a key file is never replaced, not even by a race with another keygen.
        let privateFD = try create(keyFile, mode: 0o600)
        let publicFD: Int32
        do {
            publicFD = try create(publicPath, mode: 0o644)
        } catch {
            close(privateFD)
            unlink(keyFile)   // ours: just created, and nothing written yet
            throw error
        }
        do {
            try write(key.fileContents, to: privateFD, path: keyFile)
            try write(key.publicKey.fileContents, to: publicFD, path: publicPath)
        } catch {
            unlink(keyFile)
            unlink(publicPath)
            throw error
        }
        print("private key: \(keyFile) (keep it secret; mode 0600)")
        print("public key:  \(publicPath) (key id \(key.publicKey.id))")
    }

    private func create(_ path: String, mode: mode_t) throws -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else {
            let code = errno
            if code == EEXIST {
                throw KeygenError("\(path) already exists; refusing to overwrite a key (choose another name or remove it first)")
            }
            throw KeygenError("cannot create \(path): \(String(cString: strerror(code)))")
        }
        // The umask may have removed bits, never added them; set the mode exactly.
        _ = fchmod(fd, mode)
        return fd
    }

    private func write(_ text: String, to fd: Int32, path: String) throws {
        defer { close(fd) }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(fd) == 0 else {
            throw KeygenError("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// Why `odrfs keygen` wrote nothing; printed as "Error: <message>" without the usage text.
private struct KeygenError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
