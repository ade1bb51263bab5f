import Foundation
import ODRFSCore
import Testing

/// Access traces: the contract's JSON, bounded parsing of hostile files, and the merge of
/// several traces into one prefetch order.
@Suite("Access traces")
struct AccessTraceTests {
    private func entry(_ pack: String, _ cause: TraceEntry.Cause = .open, at seconds: Double, tags: [String]? = nil, session: Int? = nil) -> TraceEntry {
        TraceEntry(pack: pack, tags: tags ?? pack.split(separator: "+").map(String.init), cause: cause,
                   firstFile: cause == .open ? "\(pack.lowercased())/map.bin" : nil, secondsSinceMount: seconds, session: session)
    }

    @Test("the JSON has the contract's field names, with first_file null when no open caused it")
    func contractJSON() throws {
        let data = AccessTrace.encode([entry("Level1", at: 0.42), entry("Level2", .request, at: 1)])
        let array = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        #expect(array.count == 2)
        #expect(Set(array[0].keys) == ["pack", "tags", "cause", "first_file", "seconds_since_mount"])
        #expect(array[0]["pack"] as? String == "Level1")
        #expect(array[0]["tags"] as? [String] == ["Level1"])
        #expect(array[0]["cause"] as? String == "open")
        #expect(array[0]["first_file"] as? String == "level1/map.bin")
        #expect(array[0]["seconds_since_mount"] as? Double == 0.42)
        #expect(array[1]["first_file"] is NSNull, "first_file must be present and null")
        #expect(try AccessTrace.parse(data) == [entry("Level1", at: 0.42), entry("Level2", .request, at: 1)])
        #expect(TraceEntry.Cause.allCases.map(\.rawValue) == ["open", "request", "prefetch", "initial-install"])
        #expect(try AccessTrace.parse(AccessTrace.encode([])) == [])
    }

    @Test("hostile traces are refused with the entry and the reason", arguments: [
        (#"{"pack":"A"}"#, "not a JSON array"),
        (#"[{"pack":"A","tags":["A"],"cause":"open","first_file":null}]"#, "entry 1: missing \"seconds_since_mount\""),
        (#"[{"pack":"A","tags":["A"],"cause":"teleport","first_file":null,"seconds_since_mount":1}]"#, "entry 1 cause"),
        (#"[{"pack":"","tags":[],"cause":"open","first_file":null,"seconds_since_mount":1}]"#, "\"pack\" must be"),
        (#"[{"pack":"A","tags":["a/b"],"cause":"open","first_file":null,"seconds_since_mount":1}]"#, "must not contain '/'"),
        (#"[{"pack":"A","tags":["A"],"cause":"open","first_file":null,"seconds_since_mount":-1}]"#, "finite number ≥ 0"),
        (#"[{"pack":"A","tags":["A"],"cause":"open","first_file":null,"seconds_since_mount":1e999}]"#, "not valid JSON"),
        (#"[{"pack":"A","tags":["A"],"cause":"open","first_file":null,"seconds_since_mount":1,"session":-3}]"#, "\"session\""),
    ])
    func hostile(_ text: String, _ expected: String) {
        #expect {
            try AccessTrace.parse(Data(text.utf8))
        } throws: { error in
            "\(error)".contains(expected)
        }
    }

    @Test("oversized traces are refused before decoding")
    func oversized() {
        let big = Data(repeating: UInt8(ascii: " "), count: AccessTrace.maximumBytes + 1)
        #expect(throws: AccessTrace.ParseError.self) { try AccessTrace.parse(big) }
        let long = String(repeating: "x", count: AccessTrace.maximumStringLength + 1)
        let text = #"[{"pack":"A","tags":["A"],"cause":"open","first_file":"\#(long)","seconds_since_mount":1}]"#
        #expect(throws: AccessTrace.ParseError.self) { try AccessTrace.parse(Data(text.utf8)) }
    }

    @Test("one trace gives its first-need order; prefetch entries do not count")
    func singleTraceOrder() {
        let trace = [entry("Level3", at: 0.1), entry("Level5", .prefetch, at: 0.2), entry("Level1", at: 0.3), entry("Level2", .request, at: 0.9)]
        #expect(AccessTrace.prefetchOrder([trace]).map(\.name) == ["Level3", "Level1", "Level2"])
        #expect(AccessTrace.packOrder([trace]) == ["Level3", "Level1", "Level2"])
    }

    @Test("several traces merge by first-need rank; a shared pack does not pull its other tag forward")
    func merge() {
        let first = [entry("Level1", at: 0), entry("Level1+Level4", at: 1), entry("Level2", at: 2), entry("Level4", at: 3)]
        let second = [entry("Level3", at: 0), entry("Level2", at: 1)]
        // Ranks: Level1 0, Level3 0, Level1+Level4 1, Level2 1 (best of 2 and 1), Level4 3.
        #expect(AccessTrace.packOrder([first, second]) == ["Level1", "Level3", "Level2", "Level1+Level4", "Level4"])
        #expect(AccessTrace.prefetchOrder([first, second]).map(\.name) == ["Level1", "Level3", "Level2", "Level4"])
        // Sessions inside one file rank separately.
        let sessions = [entry("B", at: 5, session: 1), entry("A", at: 6, session: 1), entry("A", at: 0, session: 2)]
        #expect(AccessTrace.packOrder([sessions]) == ["A", "B"])
    }

    @Test("fuzz finding: a pack id traced with different tags still brings every demanded tag")
    func inconsistentTags() throws {
        let text = #"""
        [{"cause":"initial-install","first_file":null,"pack":"Level1","seconds_since_mount":0.01,"tags":["Level1"]},
         {"cause":"open","first_file":"level2/map.bin","pack":"Level2","seconds_since_mount":0.42,"tags":["Level2"]},
         {"cause":"open","first_file":"shared/a.bin","pack":"Level2+Level3","seconds_since_mount":0.5,"tags":["Level2","LevelA"]},
         {"cause":"prefetch","first_file":null,"pack":"Level5","seconds_since_mount":0.6,"tags":["Level5"]},
         {"cause":"request","first_file":null,"pack":"Level1","seconds_since_mount":1.5,"tags":["Level3"],"session":2}]
        """#
        let entries = try AccessTrace.parse(Data(text.utf8))
        let order = AccessTrace.prefetchOrder([entries, entries]).map(\.name)
        #expect(Set(order) == ["Level1", "Level2", "LevelA", "Level3"])
        #expect(order.count == Set(order).count)
        #expect(AccessTrace.packOrder([entries]) == ["Level1", "Level2", "Level2+Level3"], "each pack id once")
    }
}
