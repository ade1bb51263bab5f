import ODRFSCore
import ODRFSFetch
import ODRFSRuntime

/// The sink file an update's pack is assembled in, as the assembly's positioned reads and
/// writes see it (on the I/O executor).
struct AssemblyFile: Sendable {
    let descriptor: Int32
    /// Names the file in messages.
    let path: String
}

/// The acquisition pipeline's third source: an update's changed pack built from the cached
/// packs of the mounted revision plus the spans fetched (``DeltaPackAssembler``). Nothing
/// is released to readers while it is built (the file has no readable view); the whole file
/// is verified against the new manifest's chunk hashes (by the last pass of ``attempt(into:through:)``
/// or in ``finish(_:io:)``), before the
/// pipeline publishes it. One attempt only: a failure discards the file, and the updater
/// downloads the pack whole.
struct DeltaPackSource: PackSource {
    let assembler: DeltaPackAssembler
    let pack: PackDescriptor
    let plan: PackAssemblyPlan
    /// Bytes fetched from the origin.
    private(set) var fetched: Int64 = 0
    /// Whether the last pass over the assembled file found every chunk (of the sized file)
    /// equal to the manifest's: that pass was the verification, which need not run again.
    private var proven = false

    init(assembler: DeltaPackAssembler, pack: PackDescriptor, plan: PackAssemblyPlan) {
        (self.assembler, self.pack, self.plan) = (assembler, pack, plan)
    }

    var label: String { "update" }
    var readableSize: Int64? { nil }
    var restartsAfterBadBytes: Bool { false }

    mutating func attempt<File: DownloadSinkFile>(into file: File, through transfer: PackTransfer<File>) async throws(FetchError) {
        let (bytes, target) = (pack.bytes.value, AssemblyFile(descriptor: file.descriptor, path: "the update's copy of pack '\(pack.id)'"))
        try await transfer.io.run { () throws(FetchError) in try file.resize(to: bytes) }
        let unverifiedBlocks = try await assembler.writeLocalBytes(plan, into: target)
        // Only what the local bytes did not get right: remote spans inside chunks that fail.
        let failing = try await assembler.failingChunks(pack, file: target)
        let remote = PackAssemblyPlan.union(plan.remote, unverifiedBlocks)
        let spans = PackAssemblyPlan.subtract(PackAssemblyPlan.subtract(failing, from: [0..<bytes]), from: remote)
        fetched = try await assembler.fetchRemote(pack, spans: spans, into: target)
        // Local bytes taken on trust (whole files and chunks matched by hash, not hashed as
        // they were copied) may come from a cached pack damaged since it was verified: the
        // chunks still failing are fetched whole, once, before the final check.
        let stillFailing = try await assembler.failingChunks(pack, file: target)
        proven = stillFailing.isEmpty
        if !stillFailing.isEmpty {
            assembler.logger.notice("update: \(stillFailing.count) chunks built from local bytes do not verify (a cached pack damaged since it was verified, or a hash that lied); fetching them", metadata: ["pack.id": "\(pack.id)"])
            fetched += try await assembler.fetchRemote(pack, spans: stillFailing, into: target)
        }
    }

    mutating func rewind<File: DownloadSinkFile>(_ file: File, io: IOExecutor) async throws(FetchError) -> Int64 {
        throw FetchError(.corrupt, "an update's pack is assembled once")
    }

    mutating func finish<File: DownloadSinkFile>(_ file: File, io: IOExecutor) async throws(FetchError) {
        guard !proven else { return }
        try await assembler.verify(pack, file: AssemblyFile(descriptor: file.descriptor, path: "the update's copy of pack '\(pack.id)'"))
    }
}
