import Foundation
import ODRFSCore
import Testing
import TestSupport
@testable import ODRFSFetch

@Suite struct OriginAddressTests {
    @Test func displayNameHasNoQueryOrTrailingSlash() throws {
        let address = try OriginAddress("https://cdn.example.com:8443/apps/game/?key=s3cret")
        #expect(address.displayName == "https://cdn.example.com:8443/apps/game")
        #expect(address.url(for: "packs/a b.tar") == "https://cdn.example.com:8443/apps/game/packs/a%20b.tar?key=s3cret")
        #expect(address.displayURL(for: "packs/a.tar") == "https://cdn.example.com:8443/apps/game/packs/a.tar")
        #expect(address.isSameOrigin("https://CDN.example.com:8443/other"))
        #expect(!address.isSameOrigin("https://cdn.example.com/other"))
        #expect(!address.isSameOrigin("http://cdn.example.com:8443/other"))
        #expect(try OriginAddress("http://host").url(for: "manifest.json") == "http://host/manifest.json")
        #expect(try OriginAddress("http://host").isSameOrigin("http://host:80/x"))
    }

    // What the `originurl` fuzz target checks (a seed tripped it): URLComponents keeps an IPv6 literal's brackets
    // in `host`, so every URL built was `http://[[::1]]:9000/…`, and no URL on the origin
    // itself counted as the same origin (its token was never sent).
    @Test func ipv6LiteralOrigin() throws {
        let address = try OriginAddress("http://[::1]:9000/dist?k=v")
        #expect(address.displayName == "http://[::1]:9000/dist")
        #expect(address.url(for: "manifest.json") == "http://[::1]:9000/dist/manifest.json?k=v")
        #expect(address.isSameOrigin("http://[::1]:9000/other"))
        #expect(!address.isSameOrigin("http://[::2]:9000/other"))
        #expect(try OriginAddress(address.displayName).displayName == address.displayName)
    }

    // The `originurl` fuzz target found this: URLComponents percent-decodes the host, so
    // "https://h'a%20b/" had the host "h'a b", and every URL built from it was malformed.
    @Test func hostsThatNoURLCanHoldAreRefused() throws {
        for bad in ["https://h'a%20b/", "http://h%2Fx/dist", "http://a%40b/", "http://[::1%0A]/", "http://[th%t%t%%4]", "http://[fe80::1%25eth0]/", "http://[abc]/"] {
            #expect(throws: FetchError.self, "\(bad)") { try OriginAddress(bad) }
        }
        // Found by the fuzz target in a CI run: an escape and a non-ASCII letter in the host
        // became punycode that the origin's own display read back as another host.
        for bad in ["https://h_W_%70\u{41E}bck", "https://caf\u{E9}.example/", "http://h%70st/d", "https://xn--caf-dma.example%2F/"] {
            #expect(throws: FetchError.self, "\(bad)") { try OriginAddress(bad) }
        }
        #expect(try OriginAddress("https://cdn.example/d%20x?a=%20").host == "cdn.example", "escapes after the host are fine")
        #expect(try OriginAddress("http://my_host-1.example:8/").host == "my_host-1.example")
        // swift-nio traps on a port outside 1-65535: an origin or mirror URL naming one is refused.
        for bad in ["http://127.0.0.1:99999/", "http://h:0/", "http://[::1]:65536/", "http://h:99999999999999999999/"] {
            #expect(throws: FetchError.self, "\(bad)") { try OriginAddress(bad) }
        }
        #expect(try OriginAddress("http://h:65535/").port == 65535)
    }

    // URLComponents accepts a tab in the path (the `bundleconf` fuzz target found it through
    // a bundle configuration); no origin, mirror or redirect URL may carry one.
    @Test func spacesAndControlCharactersAreRefused() {
        for bad in ["http://h/a\tb", "http://h/\t", "http://h/a b", "http://h/a\u{7F}", "http://h/\r\nX: y", "http://h/a\u{0}"] {
            #expect(throws: FetchError.self, "\(bad.debugDescription)") { try OriginAddress(bad) }
        }
    }

    @Test func credentialsInTheURLAreRefusedWithoutEchoingThem() {
        let error = #expect(throws: FetchError.self) { try OriginAddress("https://alice:hunter2@host/dist") }
        #expect(error?.kind == .invalidOrigin)
        #expect(error?.message.contains("hunter2") == false)
        #expect(error?.message.contains("--token-file") == true)
        #expect(throws: FetchError.self) { try OriginAddress("ftp://host/dist") }
        #expect(throws: FetchError.self) { try OriginAddress("http:///nohost") }
    }

    @Test func locatorGivesAnHTTPOrigin() async throws {
        let origin = try OriginLocator.origin(for: "HTTP://127.0.0.1:9/dist?x=1", options: OriginOptions(), logger: LogCapture().logger)
        #expect(origin is HTTPOrigin)
        #expect(origin.displayName == "http://127.0.0.1:9/dist")
        await origin.shutdown()
        let local = try OriginLocator.origin(for: FileManager.default.temporaryDirectory.path)
        #expect(local is FileOrigin)
        await local.shutdown()
    }

    @Test func contentRangeParsing() {
        #expect(ContentRange(header: "bytes 10-99/100") == ContentRange(header: "bytes 10-99/100"))
        #expect(ContentRange(header: "bytes 10-99/100")?.first == 10)
        #expect(ContentRange(header: "bytes 10-99/*")?.total == nil)
        #expect(ContentRange(header: "bytes 10-99/50") == nil)
        #expect(ContentRange(header: "bytes */100") == nil)
        #expect(ContentRange.unsatisfiedTotal("bytes */100") == 100)
    }

    @Test func backoffGrowsIsCappedAndJittered() {
        var random = SystemRandomNumberGenerator()
        var backoff = RetryPolicy()
        (backoff.initialDelay, backoff.maximumDelay) = (.milliseconds(100), .seconds(1))
        for failures in 1...10 {
            let delay = backoff.delay(afterFailure: failures, using: &random)
            let ceiling = min(Duration.milliseconds(100) * (1 << (failures - 1)), .seconds(1))
            #expect(delay <= ceiling && delay >= ceiling / 2)
        }
    }
}
