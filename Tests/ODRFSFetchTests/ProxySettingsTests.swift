import Foundation
import Testing
@testable import ODRFSFetch

/// `--proxy` and the environment's HTTPS_PROXY / HTTP_PROXY / NO_PROXY.
struct ProxySettingsTests {
    @Test func environmentPicksTheProxyPerSchemeAndHonoursNoProxy() throws {
        let settings = ProxySettings.resolve(explicit: nil, environment: [
            "HTTPS_PROXY": "http://secure-proxy:3128", "http_proxy": "plain-proxy:8080", "NO_PROXY": "localhost, .lan,example.org",
        ])
        #expect(settings.https == "http://secure-proxy:3128")
        #expect(settings.http == "plain-proxy:8080")
        #expect(try settings.proxy(scheme: "https", host: "cdn.example.com") != nil)
        #expect(try settings.proxy(scheme: "http", host: "cdn.example.com") != nil)
        #expect(try settings.proxy(scheme: "http", host: "localhost") == nil)
        #expect(try settings.proxy(scheme: "https", host: "mirror.site.lan") == nil)
        #expect(try settings.proxy(scheme: "https", host: "example.org") == nil)
        #expect(try settings.proxy(scheme: "https", host: "www.example.org") == nil)
        #expect(try settings.proxy(scheme: "https", host: "notexample.org") != nil)
    }

    @Test func explicitProxyWinsAndNoneMeansDirect() throws {
        let settings = ProxySettings.resolve(explicit: "http://user:pa%40ss@proxy:3128", environment: ["HTTP_PROXY": "other:1"])
        #expect(settings.http == settings.https)
        #expect(try settings.proxy(scheme: "http", host: "origin") != nil)
        #expect(try ProxySettings.resolve(explicit: nil, environment: [:]).proxy(scheme: "https", host: "origin") == nil)
        #expect(try ProxySettings.resolve(explicit: nil, environment: ["NO_PROXY": "*", "HTTPS_PROXY": "p:1"]).proxy(scheme: "https", host: "x") == nil)
        #expect(ProxySettings.redacted("http://user:secret@proxy:3128") == "http://…@proxy:3128")
    }

    @Test func aProxyThatIsNotHTTPIsRefused() {
        #expect(throws: FetchError.self) {
            _ = try ProxySettings(http: "socks5://proxy:1080").proxy(scheme: "http", host: "origin")
        }
    }
}
