import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceLifecycle

/// `odrfs mount --metrics ADDR:PORT`: the process's swift-metrics, served in Prometheus
/// text format at `/metrics` (any other path is 404) by Hummingbird.
///
/// ``bootstrap()`` makes swift-prometheus the process's metrics backend; it must run
/// before anything creates a metric handle (ODRFSMount's `MountMetrics` are made when its
/// resource manager is), and only once per process. Before each scrape `refresh` runs, so
/// gauges come from one snapshot taken when Prometheus asks.
public struct MetricsEndpoint: Service {
    public let host: String
    public let port: Int
    private let application: Application<RouterResponder<BasicRequestContext>>

    /// Buckets of `odrfs_open_seconds`: a warm open takes microseconds, a cold one a round
    /// trip (milliseconds) to a whole pack over a slow link (seconds).
    public static let openBuckets: [Duration] = [
        .microseconds(50), .microseconds(250), .milliseconds(1), .milliseconds(5), .milliseconds(25),
        .milliseconds(100), .milliseconds(250), .seconds(1), .seconds(2.5), .seconds(10), .seconds(30),
    ]

    /// Makes swift-prometheus the backend of swift-metrics and returns its registry.
    public static func bootstrap() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["odrfs_open_seconds"] = openBuckets
        MetricsSystem.bootstrap(factory)
        return registry
    }

    /// - Parameters:
    ///   - onListening: called once the socket is bound, with the actual port (0 picks one).
    public init(registry: PrometheusCollectorRegistry, host: String, port: Int, logger: Logger,
                refresh: @escaping @Sendable () -> Void,
                onListening: @escaping @Sendable (_ port: Int) async -> Void = { _ in }) {
        self.host = host
        self.port = port
        let router = Router()
        router.get("/metrics") { _, _ -> Response in
            refresh()
            var text: [UInt8] = []
            registry.emit(into: &text)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: ResponseBody(byteBuffer: ByteBuffer(bytes: text)))
        }
        application = Application(
            responder: router.buildResponder(),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? port) },
            logger: logger
        )
    }

    /// Serves until the task is cancelled or the enclosing `ServiceGroup` shuts down.
    public func run() async throws {
        try await application.run()
    }
}
