import Foundation
import Logging
import ODRFSControl
import ODRFSCore
import ODRFSFetch

/// What `odrfs probe` found: the JSON of `--json` (exactly these keys) and the text report.
struct ProbeReport: Encodable {
    var mountable = false
    var revision: Int64?
    /// `valid`, `invalid`, `unsigned` or `not-checked` (no `--trust-key`).
    var signature = "not-checked"
    var mirrors: [MirrorEntry] = []
    /// Why it is not mountable, and other findings, for the text report.
    var problems: [String] = []
    /// Per server, bytes per second of the manifest download (text report only).
    var throughput: [String: Double] = [:]

    enum CodingKeys: String, CodingKey { case mountable, revision, signature, mirrors }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(mountable, forKey: .mountable)
        try container.encode(revision, forKey: .revision)
        try container.encode(signature, forKey: .signature)
        try container.encode(mirrors, forKey: .mirrors)
    }

    var text: String {
        var lines: [String] = []
        for mirror in mirrors {
            var line = "server \(mirror.url): " + (mirror.reachable ? "reachable" : "unreachable")
            if let status = mirror.httpStatus { line += ", HTTP \(status)" }
            if let rtt = mirror.rttMilliseconds { line += String(format: ", rtt %.1f ms", rtt) }
            if let rate = throughput[mirror.url] { line += String(format: ", %.1f MB/s", rate / 1e6) }
            if let error = mirror.error { line += "; " + error }
            lines.append(line)
        }
        lines.append("manifest: " + (revision.map { "revision \($0)" } ?? "not read") + ", signature \(signature)")
        lines += problems.map { "problem: " + $0 }
        lines.append("mountable: " + (mountable ? "yes" : "no"))
        return lines.joined(separator: "\n") + "\n"
    }
}

/// One probe: every server asked for the manifest, the first good manifest checked
/// (signature, file index), the manifest's own mirrors asked too.
struct ProbeRun {
    let origin: String
    let mirrors: [MirrorOption]
    let options: OriginOptions
    let trustedKeys: [TrustKey]
    let logger: Logger

    /// The largest file index the probe downloads to check; bigger ones are noted, not fetched.
    static let indexCheckLimit = ByteCount(256 << 20)

    func run() async -> ProbeReport {
        var report = ProbeReport()
        var servers: [any Origin] = []
        defer { let all = servers; Task { for server in all { await server.shutdown() } } }
        do {
            servers.append(try OriginLocator.origin(for: origin, options: options, logger: logger))
            for mirror in mirrors { servers.append(try OriginLocator.mirrorOrigin(mirror, options: options, logger: logger)) }
        } catch {
            report.problems.append("\(error)")
            report.mirrors.append(MirrorEntry(url: OriginLocator.displayName(for: origin), reachable: false, error: error.message))
            return report
        }
        var good: (server: any Origin, data: Data, manifest: Manifest)?
        var position = 0
        while position < servers.count {
            let server = servers[position]
            position += 1
            let (entry, data, rate) = await fetchManifest(from: server)
            var row = entry
            if let rate { report.throughput[row.url] = rate }
            if let data {
                do {
                    let manifest = try Manifest.decode(data)
                    if good == nil {
                        good = (server, data, manifest)
                        // The manifest's own mirrors are servers of the bundle too.
                        for url in manifest.mirrors ?? [] where servers.count < MirrorSet.maximumMembers {
                            guard !servers.contains(where: { $0.displayName == OriginLocator.displayName(for: url) }),
                                  let extra = try? OriginLocator.mirrorOrigin(MirrorOption(url: url), options: options, logger: logger)
                            else { continue }
                            servers.append(extra)
                        }
                    }
                } catch {
                    row.error = "invalid manifest: \(error)"
                    report.problems.append("\(server.displayName) serves an invalid manifest: \(error)")
                }
            } else if let error = row.error {
                report.problems.append("\(server.displayName): \(error)")
            }
            report.mirrors.append(row)
        }
        guard let good else { return report }
        report.revision = good.manifest.revision
        report.signature = await checkSignature(good.data, from: good.server, problems: &report.problems)
        let indexOK = await checkIndex(good.manifest.index, from: good.server, problems: &report.problems)
        report.mountable = indexOK && (trustedKeys.isEmpty || report.signature == "valid")
        return report
    }

    /// The manifest's bytes (or nil), the server's row, and the download's rate in bytes/s.
    private func fetchManifest(from server: any Origin) async -> (MirrorEntry, Data?, Double?) {
        let started = ContinuousClock.now
        var data: Data?
        var failure: FetchError?
        do {
            data = try await server.data(at: Manifest.fileName, limit: Manifest.maximumBytes)
        } catch {
            failure = error
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = data.flatMap { seconds > 0 ? Double($0.count) / seconds : nil }
        guard let health = server.health.first?.snapshot else {
            // A local dist dir: reachable if it could be read.
            return (MirrorEntry(url: server.displayName, reachable: data != nil, error: failure?.message), data, rate)
        }
        let rtt = health.roundTrip.map(MirrorEntry.milliseconds)
        return (MirrorEntry(url: health.url, reachable: health.isReachable == true, rttMilliseconds: rtt,
                            httpStatus: health.httpStatus, error: failure?.message), data, rate)
    }

    private func checkSignature(_ data: Data, from server: any Origin, problems: inout [String]) async -> String {
        guard !trustedKeys.isEmpty else { return "not-checked" }
        let signature: Data?
        do {
            signature = try await server.data(at: ManifestSignature.fileName, limit: ByteCount(4096))
        } catch where error.kind == .notFound {
            signature = nil
        } catch {
            problems.append("cannot fetch \(ManifestSignature.fileName): \(error)")
            return "invalid"
        }
        do {
            _ = try ManifestTrust(trustedKeys: trustedKeys).verify(manifest: data, signature: signature, now: Date(), seen: [:])
            return "valid"
        } catch {
            problems.append("\(error)")
            return error.kind == .unsigned ? "unsigned" : "invalid"
        }
    }

    private func checkIndex(_ index: IndexReference, from server: any Origin, problems: inout [String]) async -> Bool {
        guard index.bytes <= Self.indexCheckLimit else {
            problems.append("file index \(index.file) not checked: \(index.bytes.value) bytes is more than the probe fetches")
            return true
        }
        do {
            try await server.verifyIndex(index)
        } catch {
            problems.append("\(error)")
            return false
        }
        return true
    }
}
