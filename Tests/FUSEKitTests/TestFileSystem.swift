import FUSEKit
import Foundation
import Synchronization

/// A small in-memory filesystem exercising every FUSEKit reply path:
/// plain files, a directory, a symlink, a large directory (readdir paging),
/// an open answered later from a dispatch queue, an open answered only on interrupt,
/// requests dropped unanswered, and reads served from a file descriptor.
final class TestFileSystem: FUSEFileSystem {
    enum Content: Sendable {
        case bytes([UInt8])
        case directory([String: InodeNumber])
        case symlink(String)
        /// open is answered from a Task after a delay.
        case slowOpen([UInt8])
        /// open is answered only when interrupted (EINTR).
        case hangOpen
        /// open's request is dropped unanswered (expect EIO).
        case dropOpen
        /// open is detached and the DeferredRequest dropped (expect EIO).
        case dropDeferredOpen
        /// read is served by replyData from this descriptor.
        case descriptor(Int32, size: UInt64)
    }

    struct Node: Sendable {
        var attributes: FileAttributes
        var content: Content
    }

    /// What the tests observe; guarded by one lock.
    struct Events: Sendable {
        var slowOpenArrived = false
        var slowOpenAnswered = false
        /// While true, the slow open is not answered (tests release it when they have checked).
        var holdSlowOpen = false
        var hangOpenArrived = false
        var interruptHandlerRan = false
        var rejectedOperations: [String] = []
        /// The `plus` flag of every readdir request, in order.
        var readdirPlusFlags: [Bool] = []
        var openDirectoryCalls = 0
        var releaseDirectoryCalls = 0
        var destroyed = false
        /// Reads of `big.bin` that reached the filesystem (passthrough reads do not).
        var descriptorReads = 0
        /// The name of every lookup, in order.
        var lookups: [String] = []
        /// Readdirplus replies carry files name-only (node id 0), directories linked.
        var nameOnlyFiles = false
    }

    static let helloText = Array("Hello, FUSE!\n".utf8)
    static let slowText = Array("slow but steady\n".utf8)
    static let xattrValue = Array("value".utf8)
    static let manyCount = 300
    static let statistics = FileSystemStatistics(
        blockSize: 4096, fragmentSize: 4096, totalBlocks: 1000, freeBlocks: 10, availableBlocks: 5,
        totalFiles: 50, freeFiles: 0, maximumNameLength: 255
    )

    let nodes: [InodeNumber: Node]
    /// The only file with an extended attribute (`user.test`).
    let helloInode: InodeNumber
    let events = Mutex(Events())
    let slowOpenDelay: Duration
    /// False makes the kernel use plain readdir, exercising the other DirectoryBuffer path.
    let readdirPlus: Bool
    /// Asks for `noOpenDirectorySupport`.
    let skipDirectoryOpens: Bool
    /// When set, asks for passthrough and opens `big.bin` with this file as its backing file.
    let passthroughBacking: String?
    /// Handles of `big.bin` opens when passing through: each open its own.
    let nextHandle = Atomic<UInt64>(1 << 40)

    init(
        descriptor: Int32, descriptorSize: UInt64, slowOpenDelay: Duration = .milliseconds(200),
        readdirPlus: Bool = true, skipDirectoryOpens: Bool = false, passthroughBacking: String? = nil
    ) {
        self.passthroughBacking = passthroughBacking
        self.slowOpenDelay = slowOpenDelay
        self.readdirPlus = readdirPlus
        self.skipDirectoryOpens = skipDirectoryOpens
        var nodes: [InodeNumber: Node] = [:]
        var next: UInt64 = 2
        func add(_ content: Content, mode: UInt32, size: UInt64 = 0) -> InodeNumber {
            let inode = InodeNumber(next)
            next += 1
            let time = Timespec(seconds: 1_700_000_000, nanoseconds: 5)
            nodes[inode] = Node(attributes: FileAttributes(inode: inode, mode: mode, size: size, modificationTime: time), content: content)
            return inode
        }
        let file = UInt32(S_IFREG) | 0o444
        let directory = UInt32(S_IFDIR) | 0o555
        let hello = add(.bytes(Self.helloText), mode: file, size: UInt64(Self.helloText.count))
        var many: [String: InodeNumber] = [:]
        for index in 0..<Self.manyCount {
            many[String(format: "entry-with-a-longish-name-%04d.txt", index)] = add(.bytes([]), mode: file)
        }
        let root: [String: InodeNumber] = [
            "hello.txt": hello,
            "dir": add(.directory(["nested.txt": add(.bytes(Array("nested\n".utf8)), mode: file, size: 7)]), mode: directory),
            "link": add(.symlink("hello.txt"), mode: UInt32(S_IFLNK) | 0o777, size: 9),
            "slow.txt": add(.slowOpen(Self.slowText), mode: file, size: UInt64(Self.slowText.count)),
            "hang.txt": add(.hangOpen, mode: file, size: 1),
            "drop.txt": add(.dropOpen, mode: file, size: 1),
            "lost.txt": add(.dropDeferredOpen, mode: file, size: 1),
            "big.bin": add(.descriptor(descriptor, size: descriptorSize), mode: file, size: descriptorSize),
            "many": add(.directory(many), mode: directory),
        ]
        nodes[.root] = Node(attributes: FileAttributes(inode: .root, mode: directory, linkCount: 2), content: .directory(root))
        self.nodes = nodes
        self.helloInode = hello
    }

    func configure(_ connection: inout ConnectionConfiguration) {
        connection.readdirPlus = readdirPlus
        connection.noOpenDirectorySupport = skipDirectoryOpens
        connection.passthrough = passthroughBacking != nil
    }

    func openDirectory(inode: InodeNumber, request: consuming FUSERequest) {
        events.withLock { $0.openDirectoryCalls += 1 }
        request.replyOpen(handle: FileHandleID(rawValue: 7), options: OpenReplyOptions())
    }

    func release(inode: InodeNumber, handle: FileHandleID, request: consuming FUSERequest) {
        if case .descriptor? = nodes[inode]?.content, passthroughBacking != nil {
            request.passthrough.endOpen(handle: handle)
        }
        request.replySuccess()
    }

    func releaseDirectory(inode: InodeNumber, handle: FileHandleID, request: consuming FUSERequest) {
        events.withLock { $0.releaseDirectoryCalls += 1 }
        request.replySuccess()
    }

    func lookup(parent: InodeNumber, name: String, request: consuming FUSERequest) {
        guard case .directory(let children)? = nodes[parent]?.content else {
            request.replyError(.notDirectory)
            return
        }
        events.withLock { $0.lookups.append(name) }
        guard let inode = children[name], let node = nodes[inode] else {
            request.replyError(.noSuchFileOrDirectory)
            return
        }
        request.replyEntry(EntryReplyParameters(attributes: node.attributes, entryTimeout: 60, attributeTimeout: 60))
    }

    func getAttributes(inode: InodeNumber, request: consuming FUSERequest) {
        guard let node = nodes[inode] else {
            request.replyError(.noSuchFileOrDirectory)
            return
        }
        request.replyAttributes(node.attributes, timeout: 60)
    }

    func readLink(inode: InodeNumber, request: consuming FUSERequest) {
        guard case .symlink(let target)? = nodes[inode]?.content else {
            request.replyError(.invalidArgument)
            return
        }
        request.replyReadlink(target)
    }

    func open(inode: InodeNumber, flags: OpenFlags, request: consuming FUSERequest) {
        guard !flags.isWriteRequested else {
            request.replyError(.readOnlyFileSystem)
            return
        }
        switch nodes[inode]?.content {
        case .slowOpen?:
            let deferred = request.detach()
            events.withLock { $0.slowOpenArrived = true }
            let delay = slowOpenDelay
            // From a dispatch queue, not a Task: a reply never leaves from a Swift task
            // (FUSEKit asserts it in debug builds).
            let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                self.answerSlowOpen(deferred, inode: inode, checksLeft: 1000)
            }
        case .hangOpen?:
            let deferred = request.detach()
            deferred.onInterrupt {
                self.events.withLock { $0.interruptHandlerRan = true }
                deferred.replyError(.interrupted)
            }
            events.withLock { $0.hangOpenArrived = true }
        case .dropOpen?:
            _ = consume request
        case .dropDeferredOpen?:
            _ = request.detach()
        case nil:
            request.replyError(.noSuchFileOrDirectory)
        case .descriptor? where passthroughBacking != nil:
            var options = OpenReplyOptions(keepCache: true, noFlush: true)
            let handle = FileHandleID(nextHandle.add(1, ordering: .relaxed).newValue)
            options.passthrough = request.passthrough.beginOpen(inode: inode, handle: handle, backingPath: passthroughBacking)
            request.replyOpen(handle: handle, options: options)
        default:
            request.replyOpen(handle: FileHandleID(inode.rawValue), options: OpenReplyOptions(keepCache: true, noFlush: true))
        }
    }

    /// Answers the slow open once the test stops holding it (checked every 10 ms, at most
    /// `checksLeft` more times), without keeping a thread asleep meanwhile.
    private func answerSlowOpen(_ deferred: DeferredRequest, inode: InodeNumber, checksLeft: Int) {
        if checksLeft > 0, events.withLock({ $0.holdSlowOpen }) {
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.01) {
                self.answerSlowOpen(deferred, inode: inode, checksLeft: checksLeft - 1)
            }
            return
        }
        events.withLock { $0.slowOpenAnswered = true }
        deferred.replyOpen(handle: FileHandleID(inode.rawValue), options: OpenReplyOptions(keepCache: true))
        // The first reply wins: this one must be ignored.
        deferred.replyError(.ioError)
    }

    func read(inode: InodeNumber, handle: FileHandleID, offset: Int64, size: Int, request: consuming FUSERequest) {
        switch nodes[inode]?.content {
        case .bytes(let bytes)?, .slowOpen(let bytes)?:
            let start = min(Int(offset), bytes.count)
            let end = min(start + size, bytes.count)
            request.replyBytes(bytes[start..<end])
        case .descriptor(let descriptor, let fileSize)?:
            events.withLock { $0.descriptorReads += 1 }
            let remaining = max(0, Int64(fileSize) - offset)
            request.replyData(fileDescriptor: descriptor, offset: offset, count: min(size, Int(remaining)))
        default:
            request.replyError(.ioError)
        }
    }

    func readDirectory(inode: InodeNumber, handle: FileHandleID, offset: Int64, size: Int, plus: Bool, request: consuming FUSERequest) {
        guard let node = nodes[inode], case .directory(let children) = node.content else {
            request.replyError(.notDirectory)
            return
        }
        let nameOnlyFiles = events.withLock {
            $0.readdirPlusFlags.append(plus)
            return $0.nameOnlyFiles
        }
        var entries: [(String, FileAttributes)] = [(".", node.attributes), ("..", nodes[.root]!.attributes)]
        entries += children.sorted { $0.key < $1.key }.map { ($0.key, nodes[$0.value]!.attributes) }
        var buffer = DirectoryBuffer(request: request, capacity: size, plus: plus)
        var index = Int(offset)
        while index < entries.count {
            let (name, attributes) = entries[index]
            let entry = EntryReplyParameters(attributes: attributes, entryTimeout: 60, attributeTimeout: 60)
            let added = nameOnlyFiles && !attributes.isDirectory
                ? buffer.addNameOnly(name: name, attributes: attributes, nextOffset: Int64(index + 1))
                : buffer.add(name: name, entry: entry, nextOffset: Int64(index + 1))
            guard added else { break }
            index += 1
        }
        request.replyDirectory(buffer)
    }

    func statistics(inode: InodeNumber, request: consuming FUSERequest) {
        request.replyStatistics(Self.statistics)
    }

    func getExtendedAttribute(inode: InodeNumber, name: String, size: Int, request: consuming FUSERequest) {
        guard name.hasPrefix("user.") else {
            request.replyError(.notSupported)
            return
        }
        guard name == "user.test", inode == helloInode else {
            request.replyError(.noData)
            return
        }
        Self.replySized(Self.xattrValue, size: size, request: request)
    }

    func listExtendedAttributes(inode: InodeNumber, size: Int, request: consuming FUSERequest) {
        Self.replySized(inode == helloInode ? Array("user.test\0".utf8) : [], size: size, request: request)
    }

    func rejectMutation(_ operation: String, request: consuming FUSERequest) {
        events.withLock { $0.rejectedOperations.append(operation) }
        request.replyError(.readOnlyFileSystem)
    }

    func destroy() {
        events.withLock { $0.destroyed = true }
    }

    /// The getxattr/listxattr size protocol: 0 asks for the length; too small is ERANGE.
    private static func replySized(_ value: [UInt8], size: Int, request: consuming FUSERequest) {
        if size == 0 {
            request.replyXattrSize(value.count)
        } else if size < value.count {
            request.replyError(.outOfRange)
        } else {
            request.replyBytes(value)
        }
    }
}
