import Foundation
import ODRFSCore

/// What decides a mount's variant selection, kept so that every revision it serves (at
/// mount, after an update, after `odrfs variant`) is resolved the same way: the values
/// named with `--variant` (or `odrfs variant`, over them), the locale of whoever ran
/// `odrfs mount`, and the machine's memory and CPUs for the bundle's rules. The bundle's
/// own declarations come from each revision's manifest, so a new revision that drops a
/// value falls back by the order ``VariantSelection`` gives.
struct VariantRequest: Sendable, Equatable {
    var explicit: VariantPreferences
    /// `LC_ALL`, `LC_MESSAGES` and `LANG` only.
    var environment: [String: String]
    var machine: VariantSelection.Machine

    init(explicit: VariantPreferences, environment: [String: String], machine: VariantSelection.Machine = .current) {
        self.explicit = explicit
        self.environment = environment.filter { VariantSelection.localeVariables.contains($0.key) }
        self.machine = machine
    }

    /// The selection of a revision with `manifest`.
    func selection(for manifest: Manifest) -> VariantSelection {
        VariantSelection(declarations: manifest.variantDeclarations, explicit: explicit.values, environment: environment,
                         machine: machine)
    }

    /// `published` as this request serves it. Walks the whole index once when the bundle
    /// declares variants (page faults in the mapping): call it on the I/O executor.
    func view(of published: PublishedRevision) throws(FileIndexError) -> VariantView {
        try VariantView.resolve(manifest: published.manifest, index: published.index, selection: selection(for: published.manifest))
    }

    /// This request with `preferences` over its explicit values.
    func overriding(_ preferences: VariantPreferences) -> VariantRequest {
        var copy = self
        copy.explicit = preferences.overriding(explicit)
        return copy
    }
}

/// A revision as its origin publishes it: the signed manifest and the physical file index
/// (variant directories and all), from which each mount's served view is resolved.
struct PublishedRevision: Sendable {
    let manifest: Manifest
    let index: FileIndex
}

extension VariantSelection.Machine {
    /// This machine: physical memory and online CPUs.
    static var current: VariantSelection.Machine {
        let pages = Int64(max(sysconf(Int32(_SC_PHYS_PAGES)), 0))
        let pageSize = Int64(max(sysconf(Int32(_SC_PAGESIZE)), 0))
        let (memory, overflow) = pages.multipliedReportingOverflow(by: pageSize)
        return VariantSelection.Machine(memory: ByteCount(overflow ? .max : memory),
                                        cpus: max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1))
    }
}
