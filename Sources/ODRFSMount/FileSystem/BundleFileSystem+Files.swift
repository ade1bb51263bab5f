import Foundation
import FUSEKit
import ODRFSCore
import ODRFSFetch

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
            guard let entry = index.entry(number) else {
                request.replyError(.noSuchFileOrDirectory)
                return
            }
            guard entry.kind == .regularFile, let pack = entry.pack else {
                request.replyError(entry.kind == .directory ? .isDirectory : .invalidArgument)
                return
            }
            // This file's first bytes, not the whole pack: its first 128 KiB (or all of it
            // if smaller) verified is enough to start reading.
            let prefix = Int64(entry.dataOffset) + Int64(min(entry.size, Self.progressiveOpenBytes))
            if let access = manager.retainIfVerified(pack, prefix: prefix) {
                switch openPackFile(pack, access: access) {
                case .success(let handle): request.replyOpen(handle: handle, options: Self.fileOpenOptions)
                case .failure(let error): request.replyError(error)
                }
                return
            }
            openAfterFetching(pack, prefix: prefix, file: number, request: request.detach())
        }
    }

    /// How much of a file must be verified before a progressive open returns.
    static let progressiveOpenBytes: UInt64 = 128 * 1024

    /// The slow path of open(): answered from a task once the file's first bytes are
    /// verified (the rest of the pack may still be streaming in).
    private func openAfterFetching(_ pack: PackNumber, prefix: Int64, file: EntryNumber, request: DeferredRequest) {
        let task = Task(priority: .userInitiated) { [manager, logger] in
            let access: PackAccess
            do {
                access = try await manager.retainProgressively(pack, prefix: prefix)
            } catch {
                let errno = Errno(mapping: error)
                logger.error("open failed: pack not available", metadata: [
                    "path": "\(self.index.path(of: file))", "pack.id": "\(manager.manifest.pack(pack).id)", "errno": "\(errno)", "error": "\(error)",
                ])
                request.replyError(errno)
                return
            }
            if request.isInterrupted {
                manager.release(pack)
                request.replyError(.interrupted)
                return
            }
            switch self.openPackFile(pack, access: access) {
            case .success(let handle): request.replyOpen(handle: handle, options: Self.fileOpenOptions)
            case .failure(let error): request.replyError(error)
            }
        }
        request.onInterrupt { task.cancel() }
    }

    /// Opens a descriptor on a retained pack; on failure the retain is dropped. A pack
    /// still downloading gives a progressive handle, whose reads check the verified prefix.
    private func openPackFile(_ pack: PackNumber, access: PackAccess? = nil) -> Result<FileHandleID, Errno> {
        var progressive = false
        var path: String
        switch access ?? .local(path: manager.path(of: pack)) {
        case .local(let published):
            path = published
        case .partial(let temporary):
            path = temporary
            progressive = true
        case .unavailable:
            manager.release(pack)
            return .failure(.ioError)
        }
        var fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 && errno == ENOENT && progressive {
            // Published in the meantime: the same bytes now live at the cache path.
            path = manager.path(of: pack)
            fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            progressive = false
        }
        if fd >= 0 { return .success(PackHandle(descriptor: fd, isProgressive: progressive).id) }
        let code = errno
        manager.release(pack)
        if code == ENOENT && !progressive { manager.markMissing(pack) }
        logger.error("cannot open cached pack", metadata: ["pack.path": "\(path)", "errno": "\(code)"])
        return .failure(code == EMFILE || code == ENFILE ? .tooManyOpenFiles : .ioError)
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
        guard case .entry(let number) = inodes.node(for: inode), let entry = index.entry(number) else {
            request.replyError(.badFileDescriptor)
            return
        }
        let fileSize = Int64(entry.size)
        let start = min(max(offset, 0), fileSize)
        let count = Int(min(Int64(size), fileSize - start))
        let packHandle = PackHandle(handle)
        let packOffset = Int64(entry.dataOffset) + start
        // A progressive handle was opened once the file's first `progressiveOpenBytes` were
        // verified, and that prefix only grows: reads inside it need no look at the pack.
        let verifiedAtOpen = Int64(min(entry.size, Self.progressiveOpenBytes))
        guard packHandle.isProgressive, let pack = entry.pack, start + Int64(count) > verifiedAtOpen,
              manager.verifiedBytes(of: pack) < packOffset + Int64(count) else {
            request.replyData(fileDescriptor: packHandle.descriptor, offset: packOffset, count: count)
            return
        }
        // Past the verified prefix of a pack still downloading: wait for those bytes.
        let deferred = request.detach()
        let task = Task(priority: .userInitiated) { [manager, logger] in
            do {
                try await manager.waitForVerified(pack, bytes: packOffset + Int64(count))
                deferred.replyData(fileDescriptor: packHandle.descriptor, offset: packOffset, count: count)
            } catch {
                logger.error("read failed: the rest of the pack did not arrive verified", metadata: [
                    "pack.id": "\(manager.manifest.pack(pack).id)", "error": "\(error)",
                ])
                deferred.replyError(Errno(mapping: error))
            }
        }
        deferred.onInterrupt { task.cancel() }
    }

    public func release(inode: InodeNumber, handle: FileHandleID, request: consuming FUSERequest) {
        if VirtualFileTable.isVirtual(handle) {
            virtualFiles.close(handle)
            request.replySuccess()
            return
        }
        Glibc.close(PackHandle(handle).descriptor)
        if case .entry(let number) = inodes.node(for: inode), let pack = index.entry(number)?.pack {
            manager.release(pack)
        }
        request.replySuccess()
    }

    private func openStatusFile(request: consuming FUSERequest) {
        let text = manager.snapshot().renderTable()
        let handle = virtualFiles.open(Array(text.utf8))
        var options = OpenReplyOptions()
        // Size is unknown until rendered and changes every time: bypass the page cache.
        options.directIO = true
        request.replyOpen(handle: handle, options: options)
    }
}
