import Foundation
import TestSupport

/// A throwaway certificate authority and a server certificate it signed for 127.0.0.1,
/// made with the openssl command line: the "HTTPS origin with a private CA" a company
/// CDN or an internal mirror would have.
struct PrivateCA {
    /// The CA's certificate (what `--ca-file` takes).
    let certificate: String
    let serverCertificate: String
    let serverKey: String

    init(in directory: String) async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        certificate = directory + "/ca.pem"
        serverCertificate = directory + "/server.pem"
        serverKey = directory + "/server.key"
        let extensions = directory + "/server.ext"
        try """
            subjectAltName=IP:127.0.0.1
            basicConstraints=CA:FALSE
            keyUsage=digitalSignature,keyEncipherment
            extendedKeyUsage=serverAuth
            """.write(toFile: extensions, atomically: true, encoding: .utf8)
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for arguments in [
            ["req", "-x509"] + curve + ["-keyout", directory + "/ca.key", "-out", certificate, "-days", "2",
                                        "-subj", "/CN=ODRFS test CA"],
            ["req"] + curve + ["-keyout", serverKey, "-out", directory + "/server.csr", "-subj", "/CN=127.0.0.1"],
            ["x509", "-req", "-in", directory + "/server.csr", "-CA", certificate, "-CAkey", directory + "/ca.key",
             "-CAcreateserial", "-out", serverCertificate, "-days", "2", "-extfile", extensions],
        ] {
            let result = try await Command.run("/usr/bin/openssl", arguments)
            guard result.status == 0 else { throw CAError(message: "openssl \(arguments[0]) failed: \(result.stderr)") }
        }
    }

    struct CAError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
