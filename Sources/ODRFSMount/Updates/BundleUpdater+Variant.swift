import Foundation
import ODRFSControl
import ODRFSCore
import ODRFSFetch

extension BundleUpdater {
    /// `odrfs variant MNT KEY=VALUE…`: serves another variant selection of the mounted
    /// revision, with the update machinery (``BundleUpdater``'s plan, fetch and switch) on
    /// two views of one revision.
    ///
    /// 1. The new selection is the named preferences over the mount's current ones; the
    ///    published manifest and index are resolved with it (``VariantView``).
    /// 2. Plan (``UpdatePlan``): the new view's packs the old view lacks; of those, the
    ///    ones replacing packs local or retained now (same tag set) and base-like ones
    ///    are fetched, verified and published first, before anything changes.
    /// 3. Switch: the new view built by ``MountedRevision/make`` and served by one pointer
    ///    swap; open handles keep their readers and bytes; the old view's packs, which the
    ///    new manifest does not name, are purged first (as a replaced revision's are).
    ///    The cache's manifest is not touched: the revision is the same.
    func switchVariants(to preferences: VariantPreferences) async throws(UpdateError) -> VariantReport {
        try await exclusively { () throws(UpdateError) in
            let current = revisions.current
            let published = current.published
            let declarations = published.manifest.variantDeclarations
            guard !declarations.isEmpty else {
                throw UpdateError(.invalidRequest, "the bundle declares no variants")
            }
            let undeclared = preferences.undeclaredKeys(in: declarations)
            guard undeclared.isEmpty else {
                throw UpdateError(.invalidRequest, "the bundle declares no variant key \(undeclared.map { "'\($0)'" }.joined(separator: ", ")); it declares \(declarations.map { "'\($0.key)'" }.joined(separator: ", "))")
            }
            let request = current.variants.overriding(preferences)
            let view: VariantView
            do {
                view = try await current.manager.io.run { () throws(FileIndexError) in
                    try request.view(of: published)
                }
            } catch {
                throw UpdateError(.resourceUnavailable, "cannot resolve the variants \(request.selection(for: published.manifest)) in revision \(published.manifest.revision): \(error)")
            }
            let local = current.manager.localOrRetainedPacks()
            let (mounted, mountedIndex) = (current.manifest, current.index)
            let plan = await current.manager.io.run {
                UpdatePlan.make(mounted: mounted, mountedIndex: mountedIndex, local: local,
                                available: view.manifest, availableIndex: view.index)
            }
            let candidate = Candidate(data: nil, signature: nil, published: published, view: view, variants: request, plan: plan)
            try await fetch(candidate)
            _ = try await switchRevision(to: candidate, updateBegan: Date())
            let report = VariantReport(
                variants: Dictionary(uniqueKeysWithValues: request.selection(for: published.manifest).chosen.map { ($0.key.name, $0.value.name) }),
                changedPacks: plan.changedPacks.map { view.manifest.pack($0).id.rawValue },
                downloadBytes: plan.downloadBytes)
            logger.info("variants switched", metadata: [
                "variants": "\(request.selection(for: published.manifest))", "changed.packs": "\(plan.changedPacks.count)",
                "download.bytes": "\(plan.downloadBytes)",
            ])
            return report
        }
    }
}
