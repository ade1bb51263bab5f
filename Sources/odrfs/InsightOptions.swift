import ArgumentParser
import Logging
import ODRFSMetrics
import ODRFSMount
import Prometheus

/// `odrfs mount`'s options for learned prefetch and observability.
struct InsightOptions: ParsableArguments {
    @Flag(name: .customLong("learn-prefetch"), help: "Prefetch in the order this machine's earlier sessions first needed packs (see `odrfs trace`), after initial-install and before the manifest's prefetch list.")
    var learnPrefetch = false

    @Option(name: .customLong("metrics"), help: ArgumentHelp("Serve Prometheus metrics at http://ADDR:PORT/metrics (e.g. 127.0.0.1:9464).", valueName: "addr:port"))
    var metrics: String?

    func validate() throws {
        if let metrics, MetricsAddress(metrics) == nil {
            throw ValidationError("--metrics takes ADDR:PORT (e.g. 127.0.0.1:9464), not '\(metrics)'")
        }
    }

    /// Copies the options into the daemon's configuration.
    func apply(to configuration: inout MountConfiguration) {
        configuration.learnPrefetch = learnPrefetch
        configuration.metricsAddress = metrics
    }

    /// In the daemon: makes swift-prometheus the metrics backend if `--metrics` was given
    /// (before the mount creates its handles); the address and the registry to serve.
    static func bootstrapMetrics(_ configuration: MountConfiguration) -> (MetricsAddress, PrometheusCollectorRegistry)? {
        guard let text = configuration.metricsAddress, let address = MetricsAddress(text) else { return nil }
        return (address, MetricsEndpoint.bootstrap())
    }

    /// Serves the metrics until the returned task is cancelled. A port that cannot be
    /// bound is logged as an error; the mount goes on without metrics.
    static func serveMetrics(_ metrics: (MetricsAddress, PrometheusCollectorRegistry), daemon: MountDaemon, logger: Logger) -> Task<Void, Never> {
        let (address, registry) = metrics
        // The revision served at each scrape, not the first one: an update replaces it,
        // and the gauges must follow the mount.
        let endpoint = MetricsEndpoint(registry: registry, host: address.host, port: address.port, logger: logger,
                                       refresh: { daemon.current.manager.recordGauges() },
                                       onListening: { port in logger.info("serving metrics", metadata: ["metrics.address": "\(address.host):\(port)"]) })
        return Task {
            do {
                try await endpoint.run()
            } catch {
                logger.error("cannot serve metrics", metadata: ["metrics.address": "\(address)", "error": "\(error)"])
            }
        }
    }
}
