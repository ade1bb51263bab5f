import Foundation
import FUSEKit
import ODRFSCore
import ODRFSFetch
import ODRFSStore

extension BundleFileSystem {
    public func open(inode: InodeNumber, flags: OpenFlags, request: consuming FUSERequest) {
        if flags.isWriteRequested {
            request.replyError(.readOnlyFileSystem)
            return
        }
        switch inodes.node(for: inode) {
        case nil:
            request.replyError(.noSuchFileOrDirectory)
        case .controlDirectory:
            request.replyError(.isDirectory)
        case .statusFile:
            openStatusFile(request: request)
        case .entry(let number):
            let started = ContinuousClock.now
            guard let entry = index.entry(number) else {
                request.replyError(.noSuchFileOrDirectory)
                return
            }
            guard entry.kind == .regularFile, let pack = entry.pack else {
                request.replyError(entry.kind == .directory ? .isDirectory : .invalidArgument)
                return
            }
            guard let extent = entry.packExtent else {
                logger.error("file index entry outside its pack", metadata: ["path": "\(index.path(of: number))"])
                request.replyError(.ioError)
                return
            }
            // This file's first bytes, not the whole pack nor what precedes the file in it:
            // its first page verified is enough to start reading (a large file's first chunk,
            // released as soon as it matches the index; fetched by range if the pack's stream
            // is far from it).
            let needed = extent.offset..<(extent.offset + min(extent.size, Self.progressiveOpenBytes))
            // Or, for a large file, its end (see openWhenVerified): whichever is proven first.
            let end = extent.offset + extent.size
            let tail = extent.size >= Self.tailPrefetchMinimum ? (end - Self.tailPrefetchBytes)..<end : nil
            manager.noteAccess(pack, cause: .open, file: index.path(of: number))
            if let reader = manager.openReaderIfReady(pack, needing: needed, orElse: tail) {
                let handle = readers.insert(reader, extent: extent)
                let options = openOptions(inode: inode, handle: handle, pack: pack, extent: extent, passthrough: request.passthrough)
                request.replyOpen(handle: handle, options: options)
                manager.metrics.recordOpen(warm: true, since: started)
                return
            }
            openWhenVerified(pack, needed: needed, orElse: tail, file: number, inode: inode, extent: extent, started: started, request: request.detach())
        }
    }

    /// How much of a file must be verified before a progressive open returns: a page, so
    /// that an open waits for one chunk of a large file, not the 128 KiB readahead.
    static let progressiveOpenBytes: Int64 = 4096

    /// The slow path of open(): answered by the resource manager's callback once the
    /// file's first bytes are verified (the rest of the pack may still be streaming in),
    /// on whichever thread verified them; an interrupt answers EINTR from its own path.
    private func openWhenVerified(_ pack: PackNumber, needed: Range<Int64>, orElse tail: Range<Int64>?, file: EntryNumber, inode: InodeNumber, extent: PackExtent,
                                  started: ContinuousClock.Instant, request: DeferredRequest) {
        let waiter = VerifiedFile.makeWaiterID()
        // Archives are read from their end first: a `.zip`'s, `.pk3`'s or `.jar`'s central
        // directory, read by every engine that opens one. A cold open of a large file asks
        // for its last bytes too, by range alongside the stream (only when the stream is far
        // from them), so that the read of the end after the open does not pay a round trip
        // (and a connection) of its own. It costs about one chunk that the stream brings
        // again later, and waits behind any read's range (speculative, at most 4 per pack).
        // Whichever end is proven first lets the open return: on a new HTTP/2 connection the
        // stream's first bytes come a round trip after the range's (``RequestLane``).
        manager.openReader(pack, needing: needed, orElse: tail, waiter: waiter) { [self, manager, logger, readers, index] result in
            switch result {
            case .success(let reader):
                let handle = readers.insert(reader, extent: extent)
                request.replyOpen(handle: handle, options: openOptions(inode: inode, handle: handle, pack: pack, extent: extent, passthrough: request.passthrough))
                manager.metrics.recordOpen(warm: false, since: started)
            case .failure(let error):
                let errno = Errno(mapping: error)
                if error.kind != .cancelled {
                    logger.error("open failed: pack not available", metadata: [
                        "path": "\(index.path(of: file))", "pack.id": "\(manager.manifest.pack(pack).id)", "errno": "\(errno)", "error": "\(error)",
                    ])
                }
                request.replyError(errno)
            }
        }
        request.onInterrupt { [manager] in manager.cancelWaiter(waiter, on: pack) }
        if let tail { manager.demand(tail, of: pack, jumped: true, speculative: true) }
    }

    /// Files this large get their last bytes asked for at a cold open.
    static let tailPrefetchMinimum: Int64 = 1 << 20
    /// What a cold open of a large file asks for at its end: a zip's end-of-central-directory
    /// record with the longest comment fits, and so do most central directories' ends.
    static let tailPrefetchBytes: Int64 = 64 * 1024

    /// The open's reply options: passthrough to the file's backing file when it has one
    /// (large file, pack local and copied out, kernel willing), else the FUSE read path.
    /// Every open is counted in `passthrough` (the kernel wants one I/O mode per inode),
    /// and release undoes it.
    private func openOptions(inode: InodeNumber, handle: FileHandleID, pack: PackNumber, extent: PackExtent, passthrough: Passthrough) -> OpenReplyOptions {
        var options = Self.fileOpenOptions
        let backingPath = passthrough.status.isAvailable ? backingFiles.backingFile(pack: pack, extent: extent, digest: digest(of: inode)) : nil
        options.passthrough = passthrough.beginOpen(inode: inode, handle: handle, backingPath: backingPath)
        return options
    }

    /// The SHA-256 the index records for the file at `inode` (nil before index version 2).
    private func digest(of inode: InodeNumber) -> ContentHash? {
        guard case .entry(let number) = inodes.node(for: inode) else { return nil }
        return index.sha256(of: number)
    }

    /// Files: the page cache may keep their contents across opens (the bundle is immutable).
    static var fileOpenOptions: OpenReplyOptions {
        var options = OpenReplyOptions()
        options.keepCache = true
        return options
    }

    public func read(inode: InodeNumber, handle: FileHandleID, offset: Int64, size: Int, request: consuming FUSERequest) {
        if VirtualFileTable.isVirtual(handle) {
            virtualFiles.read(handle, offset: offset, size: size, request: request)
            return
        }
        // The extent recorded at open: the handle reads the revision it opened, whatever
        // revision the mount serves now.
        guard let file = readers.file(for: handle) else {
            request.replyError(.badFileDescriptor)
            return
        }
        let (reader, extent) = (file.reader, file.extent)
        let start = min(max(offset, 0), extent.size)
        let count = Int(min(Int64(max(size, 0)), extent.size - start))
        let packOffset = extent.offset + start
        let end = packOffset + Int64(count)
        let waiter = VerifiedFile.makeWaiterID()
        let jumped = file.cursor.noteRead(start, start + Int64(count))
        // Only bytes verified in the reader's own file: past them, wait for them (fetched by
        // range when the read jumps far from the pack's stream).
        let deferred: DeferredRequest
        if reader.file.isVerified(packOffset..<end) {
            request.replyData(fileDescriptor: reader.descriptor, offset: packOffset, count: count)
            return
        }
        deferred = request.detach()
        manager.demand(packOffset..<end, of: reader.pack, jumped: jumped)
        let ready = reader.file.whenVerified(packOffset..<end, waiter: waiter) { [manager, logger] result in
            switch result {
            case .success:
                deferred.replyData(fileDescriptor: reader.descriptor, offset: packOffset, count: count)
            case .failure(.cancelled):
                deferred.replyError(.interrupted)
            case .failure(.incomplete(let reason)):
                logger.error("read failed: the rest of the pack did not arrive verified", metadata: [
                    "pack.id": "\(manager.manifest.pack(reader.pack).id)", "error": "\(reason)",
                ])
                deferred.replyError(.ioError)
            }
        }
        if ready {
            deferred.replyData(fileDescriptor: reader.descriptor, offset: packOffset, count: count)
            return
        }
        deferred.onInterrupt { reader.file.cancelWaiter(waiter) }
    }

    public func release(inode: InodeNumber, handle: FileHandleID, request: consuming FUSERequest) {
        if VirtualFileTable.isVirtual(handle) {
            virtualFiles.close(handle)
            request.replySuccess()
            return
        }
        let reader = readers.remove(handle)
        // A large file read while its pack streamed in: if the pack is complete now, copy
        // its backing file already, so that the next open can pass through.
        if let reader, request.passthrough.status.isAvailable, case .entry(let number) = inodes.node(for: inode),
           let extent = index.entry(number)?.packExtent {
            _ = backingFiles.backingFile(pack: reader.pack, extent: extent, digest: index.sha256(of: number))
        }
        reader?.close()
        request.passthrough.endOpen(handle: handle)
        request.replySuccess()
    }

    private func openStatusFile(request: consuming FUSERequest) {
        let snapshot = MountStatus.snapshot(of: manager, passthroughSettings: passthroughSettings,
                                            passthrough: request.passthrough, transport: request.transport)
        let text = snapshot.renderTable()
        let handle = virtualFiles.open(Array(text.utf8))
        var options = OpenReplyOptions()
        // Size is unknown until rendered and changes every time: bypass the page cache.
        options.directIO = true
        request.replyOpen(handle: handle, options: options)
    }
}
