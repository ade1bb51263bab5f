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
            if let problem = preferences.problem(against: declarations, valuesToo: true) {
                throw UpdateError(.invalidRequest, problem)
            }
            let began = Date()
            let request = current.variants.overriding(preferences)
            let selection = request.selection(for: published.manifest)
            let chosen = Dictionary(uniqueKeysWithValues: selection.chosen.map { ($0.key.name, $0.value.name) })
            // Nothing to do: no new manager, no trace session, no retired one kept.
            if selection == current.selection {
                return VariantReport(variants: chosen, changedPacks: [], downloadBytes: 0)
            }
            let view: VariantView
            do {
                view = try await current.manager.io.run { () throws(FileIndexError) in
                    try request.view(of: published)
                }
            } catch {
                throw UpdateError(.resourceUnavailable, "cannot resolve the variants \(selection) in revision \(published.manifest.revision): \(error)")
            }
            let manager = current.manager
            let local = manager.localOrRetainedPacks()
            let held = revisions.held.tags
            let (mounted, mountedIndex, store) = (current.manifest, current.index, manager.store)
            // Walks both indexes and asks the store which packs it holds: on the I/O executor.
            let (plan, downloadBytes) = await manager.io.run {
                let plan = UpdatePlan.make(mounted: mounted, mountedIndex: mountedIndex, local: local,
                                           available: view.manifest, availableIndex: view.index, heldTags: held,
                                           otherBundles: { store.otherBundles() }, present: { store.contains($0) })
                // What crosses the wire: packs the store holds already (an earlier switch) are not fetched.
                let bytes = plan.fetches.filter { !store.contains(view.manifest.pack($0.pack)) }.reduce(Int64(0)) { $0 + $1.wireBytes }
                return (plan, bytes)
            }
            let candidate = Candidate(data: nil, signature: nil, published: published, view: view, variants: request, plan: plan)
            try await fetch(candidate)
            _ = try await switchRevision(to: candidate, updateBegan: began)
            logger.info("variants switched", metadata: [
                "variants": "\(selection)", "changed.packs": "\(plan.changedPacks.count)", "download.bytes": "\(downloadBytes)",
            ])
            return VariantReport(variants: chosen, changedPacks: plan.changedPacks.map { view.manifest.pack($0).id.rawValue },
                                 downloadBytes: downloadBytes)
        }
    }
}
