import FaultOriginSupport
import Foundation
import ODRFSCore
import Testing
import TestSupport
@testable import ODRFSFetch

/// Redirect targets are input from a server (issue 26, item 1): a `Location` with a port
/// outside 1-65535 killed the daemon with SIGILL inside swift-nio, reached from the redirect
/// follower. Every target is validated exactly as an origin URL is.
@Suite(.timeLimit(.minutes(1)))
struct RedirectTargetTests {
    static let from = "http://origin.example:8080/dist/packs/p.tar?key=1"

    /// Every invalid form a server could send; each must be refused without a request.
    static let invalidLocations = [
        "http://127.0.0.1:99999/packs/p.tar", "http://127.0.0.1:65536/p", "http://127.0.0.1:0/p",
        "http://[::1]:70000/p", "https://[::1]:99999/p", "//127.0.0.1:99999/p", "http://127.0.0.1:-1/p",
        "http://127.0.0.1:99999999999999999999/p", "http://127.0.0.1:+80/p", "http://localhost:4294967377/p",
        "http://user:secret@127.0.0.1/p", "http://user@127.0.0.1/p", "http://h%20x/p", "http://h'x/p",
        "http://[fe80::1%25eth0]/p", "http://[::1/p", "http://[zz::1]/p", "http:///p", "http://", "http:",
        "http+unix://%2Ftmp%2Fsock/p", "https+unix://%2Ftmp%2Fsock/p", "file:///etc/passwd", "ftp://h/p",
        "unix:///tmp/sock", "javascript:alert(1)", "data:,x", "http://a b/p",
        "http://127.0.0.1:99999/" + String(repeating: "a", count: 9000),
    ]

    @Test func invalidTargetsAreRefused() {
        for location in Self.invalidLocations {
            #expect(throws: FetchError.self, "\(location.prefix(80))") {
                try OriginAddress.redirectTarget(location, from: Self.from)
            }
        }
    }

    @Test func validTargetsAreRebuiltFromTheirParts() throws {
        try #require(OriginAddress.redirectTarget("/mirror/p.tar", from: Self.from) == "http://origin.example:8080/mirror/p.tar")
        try #require(OriginAddress.redirectTarget("other.tar?x=2#frag", from: Self.from) == "http://origin.example:8080/dist/packs/other.tar?x=2")
        try #require(OriginAddress.redirectTarget("https://CDN.example:443/a%20b/", from: Self.from) == "https://CDN.example:443/a%20b/")
        try #require(OriginAddress.redirectTarget("http://[::1]:65535", from: Self.from) == "http://[::1]:65535/")
        try #require(OriginAddress.redirectTarget("//cdn.example:1/p", from: Self.from) == "http://cdn.example:1/p")
        try #require(OriginAddress.redirectTarget("http://h:/p", from: Self.from) == "http://h/p")
    }

    /// The real path: a running origin redirects a pack to each invalid form. Today's main
    /// died here (SIGILL) on the first one; now each fetch fails and names the target's flaw,
    /// no request goes anywhere else, and the same origin still serves the file afterwards.
    /// A refused target fails at once; the deadline only bounds a fetch that wrongly follows
    /// one, and is long enough that a loaded machine never fails a fetch by it instead.
    @Test func aServerRedirectingToInvalidTargetsCannotKillTheFetcher() async throws {
        let file = testBytes(3000)
        try await withFaultOrigin { server in
            server.setFile("/packs/p.tar", file)
            let served = Self.invalidLocations.filter { $0.utf8.count < 2000 }
            try await withHTTPOrigin(server.baseURL, options: OriginOptions(fetchDeadline: .seconds(20))) { origin in
                for location in served {
                    server.script("/packs/p.tar", [.redirect(location)])
                    let error = await #expect(throws: FetchError.self, "\(location)") {
                        _ = try await origin.bytes(of: "packs/p.tar", expected: file.count)
                    }
                    #expect(error?.message.contains("redirect") == true, "\(location): \(String(describing: error))")
                }
                // A valid redirect (to another name on the same server) is still followed.
                server.setFile("/elsewhere/p.tar", file)
                server.script("/packs/p.tar", [.redirect("/elsewhere/p.tar")])
                let redirected = try await origin.bytes(of: "packs/p.tar", expected: file.count)
                #expect(redirected == file)
            }
            #expect(server.requests(of: "/packs/p.tar").count == served.count + 1)
        }
    }
}
