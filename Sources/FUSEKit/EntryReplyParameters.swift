/// The answer to a lookup (and each readdirplus entry): the file's attributes
/// and how long the kernel may cache the name and the attributes.
///
/// Timeouts are in seconds. ODRFS's bundles are immutable, so long timeouts
/// are correct and save a round trip per path component.
public struct EntryReplyParameters: Sendable {
    public var attributes: FileAttributes
    /// How long the kernel may remember that this name maps to this inode.
    public var entryTimeout: Double
    /// How long the kernel may cache `attributes` without a getattr.
    public var attributeTimeout: Double
    /// Distinguishes reuses of one inode number; 0 is right for static inode tables.
    public var generation: UInt64 = 0

    public init(attributes: FileAttributes, entryTimeout: Double, attributeTimeout: Double, generation: UInt64 = 0) {
        self.attributes = attributes
        self.entryTimeout = entryTimeout
        self.attributeTimeout = attributeTimeout
        self.generation = generation
    }
}
