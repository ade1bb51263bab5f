import Crypto
import Foundation

/// The bearer token clients must present, read from `--token-file`.
///
/// The token is never printed: `description` is redacted, and the comparison hashes both
/// sides first so that it takes the same time whatever the length or the first wrong byte
/// of a guess (a plain `==` would leak the matching prefix length through timing).
struct AccessToken: Sendable, CustomStringConvertible {
    private let digest: [UInt8]

    /// Reads the first line of `path`, trimmed of whitespace.
    init(contentsOfFile path: String) throws(OriginServerError) {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw OriginServerError(.tokenFile, "cannot read token file \(path): \((error as NSError).localizedDescription)")
        }
        let firstLine = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let token = firstLine.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else {
            throw OriginServerError(.tokenFile, "token file \(path) is empty; put the token on its first line")
        }
        self.digest = Array(SHA256.hash(data: Data(token.utf8)))
    }

    /// Whether an `Authorization` header value is "Bearer <this token>" (scheme case-insensitive).
    func accepts(authorization: String?) -> Bool {
        guard let authorization else { return false }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return false }
        let offered = Array(SHA256.hash(data: Data(parts[1].trimmingCharacters(in: .whitespaces).utf8)))
        // Constant time over the fixed-size digests: no early exit.
        var difference: UInt8 = 0
        for (left, right) in zip(offered, digest) {
            difference |= left ^ right
        }
        return difference == 0
    }

    var description: String { "<redacted>" }
}
