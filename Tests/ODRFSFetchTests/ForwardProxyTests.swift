import FaultOriginSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import ODRFSCore
import Testing
import TestSupport
@testable import ODRFSFetch

/// http:// URLs go to a forward proxy in absolute form (`GET http://origin/path`), so that a
/// caching proxy can serve them; here a `FaultOrigin` plays the proxy (it answers the
/// absolute-form request itself) and records what it was sent, and the origin's host does
/// not even resolve: only the proxy is ever connected to.
@Suite(.timeLimit(.minutes(1)))
struct ForwardProxyTests {
    let origin = "http://origin.invalid:8080"
    let path = "/packs/big.tar"
    let file = testBytes(1 << 20)

    func options(proxy: String, noProxy: [String] = [], deadline: Duration = .seconds(20)) -> OriginOptions {
        var options = OriginOptions(fetchDeadline: deadline)
        options.proxy = ProxySettings(http: proxy, https: nil, noProxy: noProxy)
        return options
    }

    @Test func requestHeadIsAbsoluteFormWithHostAndProxyCredentials() throws {
        var headers = HTTPHeaders()
        headers.add(name: "Range", value: "bytes=5-")
        let head = try ForwardProxyClient.requestHead(url: "http://user:pw@origin.example:8080/packs/a%20b.pack?k=v#part",
                                                      headers: headers, proxyAuthorization: "Basic eDp5")
        #expect(head.uri == "http://origin.example:8080/packs/a%20b.pack?k=v")
        #expect(head.method == .GET)
        #expect(head.headers["Host"] == ["origin.example:8080"])
        #expect(head.headers["Range"] == ["bytes=5-"])
        #expect(head.headers["Proxy-Authorization"] == ["Basic eDp5"])
        let bare = try ForwardProxyClient.requestHead(url: "http://[::1]", headers: [:], proxyAuthorization: nil)
        #expect(bare.uri == "http://[::1]/")
        #expect(bare.headers["Host"] == ["[::1]"])
        #expect(bare.headers["Proxy-Authorization"].isEmpty)
        #expect(throws: (any Error).self) {
            _ = try ForwardProxyClient.requestHead(url: "https://origin.example/x", headers: [:], proxyAuthorization: nil)
        }
    }

    @Test func onlyHTTPURLsThatNoProxyDoesNotExemptGoThroughTheProxy() throws {
        let settings = ProxySettings(http: "proxy:3128", https: "proxy:3128", noProxy: ["localhost", ".lan"])
        let client = try #require(try ForwardProxyClient(settings: settings, group: MultiThreadedEventLoopGroup.singleton,
                                                         connectTimeout: .seconds(1), readTimeout: .seconds(1)))
        #expect(client.endpoint == (try ProxyEndpoint("http://proxy:3128")))
        #expect(client.carries("http://cdn.example.com/dist/manifest.json"))
        #expect(!client.carries("https://cdn.example.com/dist/manifest.json"))
        #expect(!client.carries("http://localhost:8080/dist/manifest.json"))
        #expect(!client.carries("http://mirror.site.lan/dist/manifest.json"))
        #expect(try ForwardProxyClient(settings: ProxySettings(https: "proxy:3128"), group: MultiThreadedEventLoopGroup.singleton,
                                       connectTimeout: .seconds(1), readTimeout: .seconds(1)) == nil)
        let endpoint = try ProxyEndpoint("user:pa%40ss@[::1]:3128")
        #expect(endpoint.host == "::1" && endpoint.port == 3128)
        #expect(endpoint.authorization == "Basic " + Data("user:pa@ss".utf8).base64EncodedString())
        #expect(try ProxyEndpoint("proxy").port == 80)
        #expect(throws: FetchError.self) { _ = try ProxyEndpoint("http://proxy:0") }
    }

    /// Each origin is stopped only by the proxy setting of its own scheme; the other one is
    /// needed only for a redirect across schemes.
    @Test func onlyTheProxyOfTheOriginsSchemeMustBeValid() async throws {
        var badHTTP = OriginOptions()
        badHTTP.proxy = ProxySettings(http: "socks5://proxy:1080", https: "proxy:3128")
        var badHTTPS = OriginOptions()
        badHTTPS.proxy = ProxySettings(http: "proxy:3128", https: "socks5://proxy:1080")
        #expect(throws: FetchError.self) { _ = try HTTPOrigin(url: "http://origin.example/", options: badHTTP, logger: LogCapture().logger) }
        #expect(throws: FetchError.self) { _ = try HTTPOrigin(url: "https://origin.example/", options: badHTTPS, logger: LogCapture().logger) }
        let https = try HTTPOrigin(url: "https://origin.example/", options: badHTTP, logger: LogCapture().logger)
        #expect(https.forwardProxy == nil)
        await https.shutdown()
        let http = try HTTPOrigin(url: "http://origin.example/", options: badHTTPS, logger: LogCapture().logger)
        #expect(http.forwardProxy?.endpoint.port == 3128)
        await http.shutdown()
    }

    @Test func downloadGoesToTheProxyInAbsoluteForm() async throws {
        try await withFaultOrigin { proxy in
            proxy.setFile(path, file)
            let proxyURL = "http://user:secret@127.0.0.1:\(proxy.port)"
            try await withHTTPOrigin(origin, options: options(proxy: proxyURL)) { origin in
                let received = try await origin.bytes(of: "packs/big.tar", expected: file.count)
                #expect(received == file)
            }
            let seen = proxy.requests(of: path)
            #expect(seen.count == 1)
            #expect(seen.first?.target == "http://origin.invalid:8080/packs/big.tar")
            #expect(seen.first?.host == "origin.invalid:8080")
            #expect(seen.first?.range == nil)
            #expect(seen.first?.proxyAuthorization == "Basic " + Data("user:secret".utf8).base64EncodedString())
        }
    }

    /// A lazy mount makes many small requests: they share kept-alive connections, or the
    /// machine's ephemeral ports would pile up in TIME_WAIT.
    @Test func requestsReuseKeptAliveConnections() async throws {
        try await withFaultOrigin { proxy in
            let small = testBytes(4096)
            proxy.setFile("/packs/small.tar", small)
            try await withHTTPOrigin(origin, options: options(proxy: proxy.baseURL)) { origin in
                for _ in 0..<50 {
                    let received = try await origin.bytes(of: "packs/small.tar", expected: small.count)
                    #expect(received == small)
                }
                // Readers that stop early (a 404 body nobody reads, a cancelled fetch) close theirs.
                await #expect(throws: FetchError.self) { _ = try await origin.bytes(of: "packs/missing.tar", expected: 1) }
                let received = try await origin.bytes(of: "packs/small.tar", expected: small.count)
                #expect(received == small)
            }
            #expect(proxy.requests(of: "/packs/small.tar").count == 51)
            #expect(proxy.connections <= 2, "\(proxy.connections) connections for 52 requests")
        }
    }

    @Test func aKeptAliveConnectionThatThePeerClosedIsNotUsed() async throws {
        try await withFaultOrigin { proxy in
            let small = testBytes(4096)
            proxy.setFile("/packs/small.tar", small)
            proxy.script("/packs/small.tar", [.serveThenClose])
            let log = LogCapture()
            try await withHTTPOrigin(origin, options: options(proxy: proxy.baseURL), log: log) { origin in
                for _ in 0..<2 {
                    let received = try await origin.bytes(of: "packs/small.tar", expected: small.count)
                    #expect(received == small)
                    try await Task.sleep(for: .milliseconds(200))
                }
            }
            #expect(proxy.connections == 2)
            #expect(!log.records.contains { $0.text.contains("retrying") }, "\(log.records.map(\.text))")
        }
    }

    @Test func truncatedAndResetBodiesResumeWithRangeThroughTheProxy() async throws {
        try await withFaultOrigin { proxy in
            proxy.setFile(path, file)
            proxy.script(path, [.truncate(after: 123_457), .reset(after: 200_000)])
            try await withHTTPOrigin(origin, options: options(proxy: proxy.baseURL)) { origin in
                let received = try await origin.bytes(of: "packs/big.tar", expected: file.count)
                #expect(received == file)
            }
            let seen = proxy.requests(of: path)
            #expect(seen.count == 3)
            #expect(seen.allSatisfy { $0.target.hasPrefix("http://origin.invalid:8080/") })
            #expect(seen.dropFirst().allSatisfy { $0.range?.hasPrefix("bytes=") == true && $0.ifRange == FaultOrigin.entityTag },
                    "\(seen.map { $0.range ?? "-" })")
        }
    }

    /// The read timeout is a third of the deadline: a stall cut only at the deadline leaves no
    /// time for the second attempt, and the fetch fails. The deadline is generous (a 10 s cut,
    /// 20 s for the retry): a stop-time CI run under full parallel load once saw a 9 s deadline
    /// pass with the retry still unanswered.
    @Test(.timingSensitive) func aStalledResponseIsCutAndRetried() async throws {
        try await withFaultOrigin { proxy in
            proxy.setFile(path, file)
            proxy.script(path, [.stall])
            try await withHTTPOrigin(origin, options: options(proxy: proxy.baseURL, deadline: .seconds(30))) { origin in
                let received = try await origin.bytes(of: "packs/big.tar", expected: file.count)
                #expect(received == file)
            }
            // Cut and retried (a loaded machine may cut the retry too: then a third attempt).
            #expect(proxy.requests(of: path).count >= 2)
        }
    }

    /// Regression: failing a request that had no answer yet re-entered the handler while it
    /// changed state (an exclusivity trap, seen under load).
    @Test(.timingSensitive) func aProxyThatNeverAnswersIsCutAndRetried() async throws {
        try await withFaultOrigin { proxy in
            proxy.setFile(path, file)
            proxy.script(path, [.silent])
            try await withHTTPOrigin(origin, options: options(proxy: proxy.baseURL, deadline: .seconds(30))) { origin in
                let received = try await origin.bytes(of: "packs/big.tar", expected: file.count)
                #expect(received == file)
            }
            #expect(proxy.requests(of: path).count >= 2)
        }
    }

    @Test func redirectsAreFollowedThroughTheProxy() async throws {
        try await withFaultOrigin { proxy in
            proxy.setFile(path, file)
            proxy.setFile("/moved/big.tar", file)
            proxy.script(path, [.redirect("http://cdn.invalid:9000/moved/big.tar")])
            try await withHTTPOrigin(origin, options: options(proxy: proxy.baseURL)) { origin in
                let received = try await origin.bytes(of: "packs/big.tar", expected: file.count)
                #expect(received == file)
            }
            #expect(proxy.seen.map(\.target) == ["http://origin.invalid:8080/packs/big.tar", "http://cdn.invalid:9000/moved/big.tar"])
        }
    }

    /// Back-pressure: the connection is read only as fast as the consumer takes the chunks.
    // Timing-sensitive: a consumer starved past the read timeout (seen in a CI run under extra
    // load) is cut and retried, a second request, as it should be.
    @Test(.timingSensitive) func aSlowConsumerGetsEveryByteOnce() async throws {
        let big = testBytes(6 << 20, seed: 7)
        try await withFaultOrigin { proxy in
            proxy.setFile(path, big)
            try await withHTTPOrigin(origin, options: options(proxy: proxy.baseURL)) { origin in
                var received: [UInt8] = []
                var chunks = 0
                try await origin.download("packs/big.tar", expectedBytes: ByteCount(Int64(big.count))) { (chunk: ByteBuffer) throws(FetchError) in
                    received.append(contentsOf: chunk.readableBytesView)
                    chunks += 1
                    if chunks % 8 == 0 { try? await Task.sleep(for: .milliseconds(2)) }
                }
                #expect(received == big)
            }
            #expect(proxy.requests(of: path).count == 1)
        }
    }

    @Test(.timingSensitive) func aProxyThatIsNotThereFailsFast() async throws {
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let start = ContinuousClock.now
        try await withHTTPOrigin(origin, options: options(proxy: "127.0.0.1:\(refusing.port)", deadline: .seconds(30))) { origin in
            let error = await #expect(throws: FetchError.self) {
                _ = try await origin.bytes(of: "packs/big.tar", expected: 10)
            }
            #expect(error?.kind == .unreachable)
            #expect(error?.message.contains("refused") == true, "\(error?.message ?? "")")
        }
        // Half the 30 s deadline: a refused proxy must not wait it out (the budget is 2.5 s).
        #expect(ContinuousClock.now - start < .seconds(15))
    }

    @Test func noProxyHostsAreReachedDirectly() async throws {
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        try await withFaultOrigin { server in
            server.setFile(path, file)
            try await withHTTPOrigin(server.baseURL, options: options(proxy: "127.0.0.1:\(refusing.port)", noProxy: ["127.0.0.1"])) { origin in
                let received = try await origin.bytes(of: "packs/big.tar", expected: file.count)
                #expect(received == file)
            }
            #expect(server.requests(of: path).first?.target == path)
        }
    }

    /// Regression: with only HTTPS_PROXY set, an http:// origin went through it by CONNECT.
    @Test func anHTTPOriginWithOnlyAnHTTPSProxyIsReachedDirectly() async throws {
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        try await withFaultOrigin { server in
            server.setFile(path, file)
            var options = OriginOptions(fetchDeadline: .seconds(20))
            options.proxy = ProxySettings(http: nil, https: "127.0.0.1:\(refusing.port)")
            try await withHTTPOrigin(server.baseURL, options: options) { origin in
                let received = try await origin.bytes(of: "packs/big.tar", expected: file.count)
                #expect(received == file)
            }
            #expect(server.requests(of: path).first?.target == path)
        }
    }

    @Test(.timingSensitive) func cancellingAFetchThroughTheProxyEndsItPromptly() async throws {
        try await withFaultOrigin { proxy in
            proxy.setFile(path, file)
            proxy.script(path, Array(repeating: .stall, count: 20))
            try await withHTTPOrigin(origin, options: options(proxy: proxy.baseURL)) { origin in
                let fetch = Task { () async throws(FetchError) -> [UInt8] in
                    try await origin.bytes(of: "packs/big.tar", expected: file.count)
                }
                try await Task.sleep(for: .milliseconds(300))
                let start = ContinuousClock.now
                fetch.cancel()
                let result = await fetch.result
                // Well before the stall's read timeout or the fetch deadline (20 s); a loaded
                // machine's wake-ups leave some margin (5.6 s seen under `swift test`).
                #expect(ContinuousClock.now - start < .seconds(12))
                guard case .failure(let error) = result else {
                    Issue.record("a cancelled fetch succeeded")
                    return
                }
                #expect((error as? FetchError)?.kind == .cancelled, "\(error)")
            }
        }
    }
}
