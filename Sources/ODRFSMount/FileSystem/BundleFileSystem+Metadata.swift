import Foundation
import FUSEKit
import ODRFSCore

extension BundleFileSystem {
    public func lookup(parent: InodeNumber, name: String, request: consuming FUSERequest) {
        guard let parentNode = inodes.node(for: parent) else {
            request.replyError(.noSuchFileOrDirectory)
            return
        }
        let child: InodeMap.Node?
        switch parentNode {
        case .entry(let directory):
            if directory == .root && name == InodeMap.controlDirectoryName {
                child = .controlDirectory
            } else {
                child = index.lookup(parent: directory, name: name).map { .entry($0) }
            }
        case .controlDirectory:
            child = name == InodeMap.statusFileName ? .statusFile : nil
        case .statusFile:
            request.replyError(.notDirectory)
            return
        }
        guard let child, let parameters = entryParameters(for: child) else {
            request.replyError(.noSuchFileOrDirectory)
            return
        }
        if !parameters.attributes.isDirectory {
            listingPolicy.lookedUpFile()
        }
        index.noteEntriesServed(1)
        request.replyEntry(parameters)
    }

    public func getAttributes(inode: InodeNumber, request: consuming FUSERequest) {
        guard let node = inodes.node(for: inode), let parameters = entryParameters(for: node) else {
            request.replyError(.noSuchFileOrDirectory)
            return
        }
        request.replyAttributes(parameters.attributes, timeout: parameters.attributeTimeout)
    }

    public func readLink(inode: InodeNumber, request: consuming FUSERequest) {
        guard case .entry(let number) = inodes.node(for: inode), let target = index.symlinkTarget(of: number) else {
            request.replyError(.invalidArgument)
            return
        }
        request.replyReadlink(target)
    }

    public func openDirectory(inode: InodeNumber, request: consuming FUSERequest) {
        var options = OpenReplyOptions()
        // The tree never changes while mounted: let the kernel cache listings.
        options.cacheReaddir = true
        options.keepCache = true
        request.replyOpen(handle: FileHandleID(rawValue: 0), options: options)
    }

    /// Directory offsets: 0 starts, entry k of the listing has next offset k + 1.
    /// The listing is ".", "..", the children in index order, then (at the root) `.odrfs`.
    public func readDirectory(inode: InodeNumber, handle: FileHandleID, offset: Int64, size: Int, plus: Bool, request: consuming FUSERequest) {
        guard let node = inodes.node(for: inode) else {
            request.replyError(.noSuchFileOrDirectory)
            return
        }
        var listing: [(name: String, node: InodeMap.Node)] = []
        var children: Range<UInt32> = 0..<0
        switch node {
        case .entry(let number):
            guard index.entry(number)?.kind == .directory else {
                request.replyError(.notDirectory)
                return
            }
            let parent = index.entry(number)?.parent ?? .root
            listing = [(".", .entry(number)), ("..", .entry(parent))]
            children = index.children(of: number)
        case .controlDirectory:
            listing = [(".", .controlDirectory), ("..", .entry(.root)), (InodeMap.statusFileName, .statusFile)]
        case .statusFile:
            request.replyError(.notDirectory)
            return
        }
        let isRoot = node == .entry(.root)
        let total = Int64(listing.count) + Int64(children.count) + (isRoot ? 1 : 0)
        var buffer = DirectoryBuffer(request: request, capacity: size, plus: plus)
        let linksFiles = plus && listingPolicy.linksFiles(startsListing: offset <= 0)
        var files = 0
        var position = max(offset, 0)
        while position < total {
            let name: String
            let child: InodeMap.Node
            if position < listing.count {
                (name, child) = listing[Int(position)]
            } else if position - Int64(listing.count) < Int64(children.count) {
                let number = EntryNumber(children.lowerBound + UInt32(position - Int64(listing.count)))
                name = index.name(of: number)
                child = .entry(number)
            } else {
                name = InodeMap.controlDirectoryName
                child = .controlDirectory
            }
            guard let parameters = entryParameters(for: child) else { break }
            let isDirectory = parameters.attributes.isDirectory
            let added: Bool
            if !plus {
                added = buffer.add(name: name, attributes: parameters.attributes, nextOffset: position + 1)
            } else if linksFiles || isDirectory {
                added = buffer.add(name: name, entry: parameters, nextOffset: position + 1)
            } else {
                added = buffer.addNameOnly(name: name, attributes: parameters.attributes, nextOffset: position + 1)
            }
            if !added { break }
            files += isDirectory ? 0 : 1
            position += 1
        }
        if plus {
            listingPolicy.replied(files: files, linked: linksFiles)
        }
        // A walk reads every record and name once: keep what it leaves resident bounded.
        index.noteEntriesServed(Int(clamping: position - max(offset, 0)))
        request.replyDirectory(buffer)
    }

    public func statistics(inode: InodeNumber, request: consuming FUSERequest) {
        let blockSize: UInt64 = 4096
        var statistics = FileSystemStatistics()
        statistics.blockSize = blockSize
        statistics.fragmentSize = blockSize
        statistics.totalBlocks = totalBlocks
        statistics.freeBlocks = 0
        statistics.availableBlocks = 0
        statistics.totalFiles = UInt64(index.entryCount) + 2
        statistics.freeFiles = 0
        statistics.maximumNameLength = 255
        request.replyStatistics(statistics)
    }

    public func access(inode: InodeNumber, mask: Int32, request: consuming FUSERequest) {
        if mask & W_OK != 0 {
            request.replyError(.readOnlyFileSystem)
        } else {
            request.replySuccess()
        }
    }
}
