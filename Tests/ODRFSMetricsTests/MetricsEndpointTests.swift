import Dispatch
import Foundation
import Logging
import ODRFSMetrics
import Prometheus
import Synchronization
import TestSupport
import Testing

/// `--metrics`: the endpoint refreshes the gauges before each scrape, serves the registry
/// as Prometheus text at /metrics and nothing anywhere else.
@Suite("MetricsEndpoint", .timingSensitive)
struct MetricsEndpointTests {
    /// One HTTP/1.1 GET over a plain socket, on a dispatch queue (connect, write and read
    /// block): the status line, the headers and the body, or nil on a socket error.
    static func get(_ path: String, port: Int) async -> String? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: blockingGet(path, port: port)) }
        }
    }

    private static func blockingGet(_ path: String, port: Int) -> String? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == request.count else { return nil }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            response += buffer[0..<count]
        }
        return String(decoding: response, as: UTF8.self)
    }

    @Test("each scrape refreshes first and returns the registry as Prometheus text; other paths are 404")
    func servesTheRegistry() async throws {
        let registry = PrometheusCollectorRegistry()
        let gauge = registry.makeGauge(descriptor: MetricNameDescriptor(namespace: "odrfs", metricName: "test", unitName: "gauge", helpText: "a test gauge"))
        let refreshes = Atomic<Int>(0)
        let bound = Mutex<Int?>(nil)
        let endpoint = MetricsEndpoint(registry: registry, host: "127.0.0.1", port: 0, logger: Logger(label: "test"),
                                       refresh: { gauge.set(Double(refreshes.add(1, ordering: .relaxed).newValue)) },
                                       onListening: { port in bound.withLock { $0 = port } })
        let server = Task { try await endpoint.run() }
        defer { server.cancel() }
        let deadline = ContinuousClock.now + .seconds(30)
        while bound.withLock({ $0 }) == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let port = try #require(bound.withLock { $0 }, "the endpoint never listened")
        #expect(port > 0)

        let first = try #require(await Self.get("/metrics", port: port))
        #expect(first.hasPrefix("HTTP/1.1 200"), "\(first)")
        #expect(first.lowercased().contains("content-type: text/plain; version=0.0.4"), "\(first)")
        #expect(first.contains("# TYPE odrfs_test_gauge gauge"), "\(first)")
        #expect(first.contains("\nodrfs_test_gauge 1"), "\(first)")
        let second = try #require(await Self.get("/metrics", port: port))
        #expect(second.contains("\nodrfs_test_gauge 2"), "the gauge is refreshed before every scrape: \(second)")
        #expect(refreshes.load(ordering: .relaxed) == 2)

        let other = try #require(await Self.get("/status", port: port))
        #expect(other.hasPrefix("HTTP/1.1 404"), "\(other)")
        #expect(refreshes.load(ordering: .relaxed) == 2, "only a scrape refreshes")
    }

    @Test("the open-latency buckets run from microseconds to tens of seconds, in order")
    func openBuckets() {
        let buckets = MetricsEndpoint.openBuckets
        #expect(buckets.first == .microseconds(50) && buckets.last == .seconds(30))
        #expect(zip(buckets, buckets.dropFirst()).allSatisfy { $0 < $1 })
    }
}
