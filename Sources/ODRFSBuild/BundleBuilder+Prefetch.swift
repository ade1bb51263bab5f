import ODRFSCore

extension BundleBuilder {
    /// The manifest's prefetch list: the learned order first (tags the spec defines and
    /// does not install initially; a trace may name tags this build no longer has), then
    /// the spec's hand-written prefetch tags not already listed.
    static func prefetchList(_ spec: TagSpec, learned: [Tag]) -> [Tag] {
        let defined = Set(spec.rules.map(\.tag))
        var listed = Set(spec.initialInstall)
        var result: [Tag] = []
        for tag in learned + spec.prefetch where defined.contains(tag) && listed.insert(tag).inserted {
            result.append(tag)
        }
        return result
    }
}
