import ODRFSCore
import Testing

@Suite("Variant preferences: --variant and the variant operation")
struct VariantPreferencesTests {
    @Test("KEY=V1,V2 keeps the order, drops repeats, and merges over older preferences")
    func parsesInOrder() throws {
        let preferences = try VariantPreferences(arguments: ["tcf=astc,bc7,astc", "locale=it"])
        #expect(preferences.wire == ["tcf": ["astc", "bc7"], "locale": ["it"]])
        let older = try VariantPreferences(arguments: ["tcf=etc2", "tier=high"])
        #expect(preferences.overriding(older).wire == ["tcf": ["astc", "bc7"], "locale": ["it"], "tier": ["high"]])
        let declared = [VariantDeclaration(key: VariantKey(validating: "tcf")!, values: [VariantValue(validating: "astc")!],
                                           defaultValue: VariantValue(validating: "astc")!)]
        #expect(preferences.undeclaredKeys(in: declared).map(\.name) == ["locale"])
    }

    @Test("malformed arguments are refused with the reason", arguments: [
        ["tcf"], ["=astc"], ["tcf="], ["tcf=astc", "tcf=bc7"], ["TCF=astc"], ["tcf=as tc"], ["tcf=astc,,bc7"], ["t_c=x"],
        ["tcf=" + String(repeating: "a", count: 65)],
    ])
    func refusesMalformed(arguments: [String]) {
        #expect(throws: VariantPreferences.Problem.self) { try VariantPreferences(arguments: arguments) }
    }

    @Test("more keys or values than a manifest may declare are refused")
    func bounded() {
        let keys = (0...VariantDeclaration.maximumKeys).map { "k\($0)=v" }
        #expect(throws: VariantPreferences.Problem.self) { try VariantPreferences(arguments: keys) }
        let values = (0...VariantDeclaration.maximumValues).map { "v\($0)" }.joined(separator: ",")
        #expect(throws: VariantPreferences.Problem.self) { try VariantPreferences(arguments: ["tcf=" + values]) }
    }
}
