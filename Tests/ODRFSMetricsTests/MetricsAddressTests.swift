import ODRFSMetrics
import Testing

@Suite("--metrics ADDR:PORT")
struct MetricsAddressTests {
    @Test("the documented forms parse", arguments: [
        ("127.0.0.1:9464", "127.0.0.1", 9464), ("[::1]:9464", "::1", 9464), (":9464", "0.0.0.0", 9464),
        ("localhost:0", "localhost", 0), ("[fe80::1%eth0]:1", "fe80::1%eth0", 1),
    ])
    func documentedForms(text: String, host: String, port: Int) {
        let address = MetricsAddress(text)
        #expect(address?.host == host)
        #expect(address?.port == port)
        #expect(address.flatMap { MetricsAddress($0.description) } == address, "what parses reads back from its description")
    }

    // What the `options` fuzz target checks (what parses reads back): "[[x]]:1" parsed to host "[x]", whose description
    // "[x]:1" parses to host "x".
    @Test("hosts that are no host name or address are refused", arguments: [
        "[[x]]:1", "[x:1", "a b:1", "a/b:1", "a\tb:1", "é:1", "host:65536", "host:", "9464",
    ])
    func refused(text: String) {
        #expect(MetricsAddress(text) == nil)
    }
}
