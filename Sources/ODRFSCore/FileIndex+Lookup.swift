/// Name and path resolution over the sorted child ranges.
extension FileIndex {
    /// The child of `parent` called `name`, by binary search; no allocation.
    public func lookup(parent: EntryNumber, name: UnsafeRawBufferPointer) -> EntryNumber? {
        var range = children(of: parent)
        while !range.isEmpty {
            let middle = range.lowerBound + UInt32(range.count / 2)
            let order = FileIndex.compare(nameBytes(middle), name)
            if order == 0 { return EntryNumber(middle) }
            range = order < 0 ? (middle + 1)..<range.upperBound : range.lowerBound..<middle
        }
        return nil
    }

    public func lookup(parent: EntryNumber, name: String) -> EntryNumber? {
        var name = name
        return name.withUTF8 { lookup(parent: parent, name: UnsafeRawBufferPointer($0)) }
    }

    /// The entry at "a/b/c.txt" relative to the root ("" or "/" is the root). Empty and "."
    /// components are skipped; ".." is not resolved and finds nothing. Split on the byte
    /// "/", not the character: a name may start with a combining mark, which Swift would
    /// join with the "/" before it into one character (found by the fileindex fuzz target).
    public func lookup(path: String) -> EntryNumber? {
        var current = EntryNumber.root
        for component in path.utf8.split(separator: UInt8(ascii: "/")) where !component.elementsEqual(".".utf8) {
            let found = Array(component).withUnsafeBytes { lookup(parent: current, name: $0) }
            guard let next = found else { return nil }
            current = next
        }
        return current
    }

    /// "a/b/c.txt" for the entry, "" for the root or an out-of-range number.
    public func path(of n: EntryNumber) -> String {
        guard n.rawValue < count else { return "" }
        var components: [String] = []
        var current = n.rawValue
        // Validated: every parent number is smaller than its child, so this terminates.
        while current != 0 {
            components.append(name(of: EntryNumber(current)))
            current = record(current).u32(FileIndexLayout.Record.parent)
        }
        return components.reversed().joined(separator: "/")
    }
}
