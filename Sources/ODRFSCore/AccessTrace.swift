import Foundation

/// Access traces as files: writing them (`odrfs trace`), reading them back from
/// untrusted hands (`odrfs build --prefetch-from`), and turning several into one
/// prefetch order.
///
/// A trace file is hostile input: ``parse(_:)`` bounds its size, entry count, string
/// lengths and numbers before anything else looks at it, and reports the first problem
/// with the entry's position.
public enum AccessTrace {
    /// The largest trace file read (16 MiB).
    public static let maximumBytes = 16 * 1024 * 1024
    /// The most entries in one trace.
    public static let maximumEntries = 200_000
    /// The longest pack id, tag or file path accepted.
    public static let maximumStringLength = 4096
    /// The most tags one entry may name.
    public static let maximumTags = 1024

    /// Why a trace file was refused.
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// The JSON array `odrfs trace` writes: one entry per line, keys in a fixed order.
    public static func encode(_ entries: [TraceEntry]) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        var out = Data("[".utf8)
        for (position, entry) in entries.enumerated() {
            out += Data((position == 0 ? "\n  " : ",\n  ").utf8)
            // Strings, integers and finite doubles: encoding cannot fail.
            out += (try? encoder.encode(entry)) ?? Data("null".utf8)
        }
        out += Data((entries.isEmpty ? "]\n" : "\n]\n").utf8)
        return out
    }

    /// Reads a trace, refusing anything outside the bounds above.
    public static func parse(_ data: Data) throws(ParseError) -> [TraceEntry] {
        guard data.count <= maximumBytes else {
            throw ParseError(message: "the trace is \(data.count) bytes; at most \(maximumBytes) are read")
        }
        let entries: [TraceEntry]
        do {
            entries = try JSONDecoder().decode([TraceEntry].self, from: data)
        } catch let DecodingError.keyNotFound(key, context) {
            throw ParseError(message: "\(location(context.codingPath)): missing \"\(key.stringValue)\"")
        } catch let DecodingError.dataCorrupted(context), let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            guard !context.codingPath.isEmpty else {
                throw ParseError(message: "not a JSON array of trace entries: \(context.debugDescription)")
            }
            throw ParseError(message: "\(location(context.codingPath)): \(context.debugDescription)")
        } catch {
            throw ParseError(message: "not a JSON array of trace entries: \(error)")
        }
        guard entries.count <= maximumEntries else {
            throw ParseError(message: "the trace has \(entries.count) entries; at most \(maximumEntries) are accepted")
        }
        for (position, entry) in entries.enumerated() {
            if let problem = problem(with: entry) {
                throw ParseError(message: "entry \(position + 1): \(problem)")
            }
        }
        return entries
    }

    private static func problem(with entry: TraceEntry) -> String? {
        if entry.pack.isEmpty || entry.pack.utf8.count > maximumStringLength { return "\"pack\" must be 1…\(maximumStringLength) bytes" }
        if entry.tags.count > maximumTags { return "\(entry.tags.count) tags; at most \(maximumTags)" }
        for tag in entry.tags {
            if tag.utf8.count > maximumStringLength { return "a tag is longer than \(maximumStringLength) bytes" }
            if let problem = Tag(tag).validationProblem { return "tag '\(tag.prefix(80))': \(problem)" }
        }
        if let file = entry.firstFile, file.utf8.count > maximumStringLength { return "\"first_file\" is longer than \(maximumStringLength) bytes" }
        if !entry.secondsSinceMount.isFinite || entry.secondsSinceMount < 0 { return "\"seconds_since_mount\" must be a finite number ≥ 0" }
        if let session = entry.session, session < 0 { return "\"session\" must not be negative" }
        return nil
    }

    private static func location(_ path: [any CodingKey]) -> String {
        guard let index = path.first?.intValue else { return "the trace" }
        let field = path.dropFirst().map(\.stringValue).joined(separator: ".")
        return field.isEmpty ? "entry \(index + 1)" : "entry \(index + 1) \(field)"
    }

    /// The packs the traces needed, best first-need rank first: every session of every
    /// trace is ranked by first need (prefetch entries ignored, they are not the
    /// workload's), and a pack's rank is its best over all sessions (ties: the pack more
    /// sessions needed, then its id).
    public static func packOrder(_ traces: [[TraceEntry]]) -> [String] {
        var seen: Set<String> = []
        return ranked(traces).map(\.pack).filter { seen.insert($0).inserted }
    }

    /// Packs keyed by id *and* tags: a hostile or stale trace may give one id different
    /// tags, and each tag set a trace demanded must reach the prefetch order.
    private struct Key: Hashable {
        var pack: String
        var tags: [String]
    }

    private static func ranked(_ traces: [[TraceEntry]]) -> [(pack: String, tags: [String])] {
        var best: [Key: (rank: Int, sessions: Int)] = [:]
        for trace in traces {
            var sessions: [Int: [TraceEntry]] = [:]
            for entry in trace where entry.cause.isDemand { sessions[entry.session ?? 0, default: []].append(entry) }
            for session in sessions.values {
                let ordered = session.enumerated().sorted { ($0.element.secondsSinceMount, $0.offset) < ($1.element.secondsSinceMount, $1.offset) }
                var seen: Set<Key> = []
                var rank = 0
                for (_, entry) in ordered {
                    let key = Key(pack: entry.pack, tags: entry.tags)
                    guard seen.insert(key).inserted else { continue }
                    if let known = best[key] {
                        best[key] = (min(known.rank, rank), known.sessions + 1)
                    } else {
                        best[key] = (rank, 1)
                    }
                    rank += 1
                }
            }
        }
        return best.sorted { lhs, rhs in
            if lhs.value.rank != rhs.value.rank { return lhs.value.rank < rhs.value.rank }
            if lhs.value.sessions != rhs.value.sessions { return lhs.value.sessions > rhs.value.sessions }
            if lhs.key.pack != rhs.key.pack { return lhs.key.pack.utf8.lexicographicallyPrecedes(rhs.key.pack.utf8) }
            return lhs.key.tags.lexicographicallyPrecedes(rhs.key.tags) { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        }.map { ($0.key.pack, $0.key.tags) }
    }

    /// The tags to prefetch, in the order the traces first needed them (``packOrder(_:)``):
    /// a tag takes the rank of its own pack (the one tagged with it alone) or else of the
    /// first pack that carries it.
    public static func prefetchOrder(_ traces: [[TraceEntry]]) -> [Tag] {
        let packs = ranked(traces)
        var tagRank: [String: (own: Int?, any: Int)] = [:]
        for (position, pack) in packs.enumerated() {
            for tag in pack.tags {
                var rank = tagRank[tag] ?? (nil, position)
                rank.any = min(rank.any, position)
                if pack.tags == [tag] { rank.own = min(rank.own ?? position, position) }
                tagRank[tag] = rank
            }
        }
        return tagRank.sorted { lhs, rhs in
            let left = lhs.value.own ?? lhs.value.any, right = rhs.value.own ?? rhs.value.any
            return left != right ? left < right : Tag(lhs.key) < Tag(rhs.key)
        }.map { Tag($0.key) }
    }
}
