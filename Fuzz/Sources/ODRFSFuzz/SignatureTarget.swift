import Foundation
import ODRFSCore

/// `manifest.json.sig` as served by an origin, and the key file formats: the one-line
/// parsers, and the trust check that consumes a signature file.
enum SignatureTarget {
    /// A fixed key and manifest: the input is only ever the signature file.
    private static let key = try! SigningKey(fileContents: Array("odrfs-ed25519-private AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n".utf8))
    private static let manifest = Data("{\"format\":1}\n".utf8)

    static func run(_ bytes: UnsafeRawBufferPointer) {
        let input = Array(bytes)
        if let signature = try? ManifestSignature(fileContents: input) {
            // What parses, re-encodes to something that parses to the same value.
            let again = try? ManifestSignature(fileContents: Array(signature.fileContents.utf8))
            check(again == signature, "signature file does not round-trip: \(signature.fileContents)")
        }
        if let trusted = try? TrustKey(fileContents: input) {
            let again = try? TrustKey(fileContents: Array(trusted.fileContents.utf8))
            check(again == trusted, "public key file does not round-trip")
        }
        _ = try? SigningKey(fileContents: input)
        // No input forges a signature of these bytes (and none crashes the check).
        let verified = try? ManifestTrust(trustedKeys: [key.publicKey])
            .verify(manifest: manifest, signature: Data(input), now: Date(), seen: [:])
        check(verified == nil, "a fuzzed signature file was accepted")
    }
}
