import ODRFSCore
import Testing
@testable import ODRFSBuild

@Suite struct TagSpecTests {
    @Test func parsesTheDesignExample() throws {
        let spec = try TagSpec.parse("""
            tags:
              Italy:   ["Italy/**", "italy.json"]
              Iceland: ["Iceland/**", "iceland.json"]
            initial-install: [Iceland]
            prefetch: [Italy]          # in this order
            preservation: { Italy: 0.5 }
            """)
        #expect(spec.tags == [ODRFSCore.Tag("Iceland"), ODRFSCore.Tag("Italy")])
        #expect(spec.rules[1].patterns.map(\.pattern) == ["Italy/**", "italy.json"])
        #expect(spec.initialInstall == [ODRFSCore.Tag("Iceland")])
        #expect(spec.prefetch == [ODRFSCore.Tag("Italy")])
        #expect(spec.preservation == [ODRFSCore.Tag("Italy"): 0.5])
    }

    @Test func acceptsJSONAndEmptyDocuments() throws {
        let spec = try TagSpec.parse(#"{"tags": {"A": ["a/**"]}, "prefetch": ["A"]}"#)
        #expect(spec.prefetch == [ODRFSCore.Tag("A")])
        #expect(try TagSpec.parse("") == .empty)
        #expect(try TagSpec.parse("tags:\n  A: a/**\n").rules[0].patterns.map(\.pattern) == ["a/**"])
    }

    static let bad: [(String, TagSpecError.Kind, String)] = [
        ("tags: [a, b\n  c: d", .syntax, "YAML syntax error"),
        ("tags:\n  A: [\"a\"]\n  A: [\"b\"]\n", .syntax, "duplicate key 'A'"),
        ("- a\n- b\n", .wrongType, "must be a mapping"),
        ("tags:\n  A: [\"a/**\"]\nprefetchh: [A]\n", .unknownKey, "unknown key 'prefetchh'"),
        ("tags:\n  A: []\n", .tagWithoutPatterns, "tag 'A' has no patterns"),
        ("tags:\n  A:\n", .tagWithoutPatterns, "tag 'A' has no patterns"),
        ("tags:\n  A: [\"a/**\"]\nprefetch: [B]\n", .unknownTag, "prefetch names tag 'B'"),
        ("tags:\n  A: [\"a/**\"]\ninitial-install: [B]\n", .unknownTag, "initial-install names tag 'B'"),
        ("tags:\n  A: [\"a/**\"]\npreservation: {B: 0.5}\n", .unknownTag, "preservation names tag 'B'"),
        ("tags:\n  A: [\"a/**\"]\nprefetch: [A, A]\n", .duplicateTag, "twice"),
        ("tags:\n  A: [\"a/**\"]\npreservation: {A: 1.5}\n", .priorityOutOfRange, "outside 0...1"),
        ("tags:\n  A: [\"a/**\"]\npreservation: {A: -1}\n", .priorityOutOfRange, "outside 0...1"),
        ("tags:\n  A: [\"a/**\"]\npreservation: {A: high}\n", .wrongType, "must be a number"),
        ("tags:\n  base: [\"a/**\"]\n", .invalidTagName, "reserved"),
        ("tags:\n  \"a+b\": [\"a/**\"]\n", .invalidTagName, "'+'"),
        ("tags:\n  \"a/b\": [\"a/**\"]\n", .invalidTagName, "'/'"),
        ("tags:\n  \"a,b\": [\"a/**\"]\n", .invalidTagName, "','"),
        ("tags:\n  \"\": [\"a/**\"]\n", .invalidTagName, "empty"),
        ("tags:\n  \"a\\tb\": [\"a/**\"]\n", .invalidTagName, "control"),
        ("tags:\n  A: [\"/etc/**\"]\n", .invalidPattern, "absolute"),
        ("tags:\n  A: [\"a/../../b\"]\n", .invalidPattern, "'..'"),
        ("tags:\n  A: [\"a\\0b\"]\n", .invalidPattern, "NUL"),
        ("tags:\n  A: {x: y}\n", .wrongType, "list of patterns"),
        ("tags: [A]\n", .wrongType, "'tags' must map"),
    ]

    @Test(arguments: bad)
    func rejects(_ text: String, _ kind: TagSpecError.Kind, _ fragment: String) {
        do {
            _ = try TagSpec.parse(text, file: "odr.yaml")
            Issue.record("accepted:\n\(text)")
        } catch {
            #expect(error.kind == kind, "\(error)")
            #expect(error.description.contains(fragment), "\(error)")
            #expect(error.description.hasPrefix("odr.yaml"))
        }
    }

    @Test func errorsCarryLineAndColumn() {
        do {
            _ = try TagSpec.parse("tags:\n  A: [\"a/**\"]\nprefetch: [A, Nope]\n", file: "odr.yaml")
            Issue.record("accepted")
        } catch {
            #expect(error.line == 3)
            #expect(error.column == 15)
            #expect(error.description.hasPrefix("odr.yaml:3:15: "))
        }
        do {
            _ = try TagSpec.parse("tags:\n  A: [\"a/**\"\n", file: "odr.yaml")
            Issue.record("accepted")
        } catch {
            #expect(error.kind == .syntax)
            #expect(error.line != nil && error.column != nil, "\(error)")
        }
    }
}
