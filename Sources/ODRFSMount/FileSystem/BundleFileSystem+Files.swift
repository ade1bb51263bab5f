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
            if manager.retainIfLocal(pack) {
                switch openPackFile(pack) {
                case .success(let handle): request.replyOpen(handle: handle, options: Self.fileOpenOptions)
                case .failure(let error): request.replyError(error)
                }
                return
            }
            openAfterFetching(pack, path: index.path(of: number), request: request.detach())
        }
    }

    /// The slow path of open(): answered from a task once the pack is local.
    private func openAfterFetching(_ pack: PackNumber, path: String, request: DeferredRequest) {
        let task = Task(priority: .userInitiated) { [manager, logger] in
            do {
                try await manager.retain(pack)
            } catch {
                let errno = Errno(mapping: error)
                logger.error("open failed: pack not available", metadata: [
                    "path": "\(path)", "pack.id": "\(manager.manifest.pack(pack).id)", "errno": "\(errno)", "error": "\(error)",
                ])
                request.replyError(errno)
                return
            }
            if request.isInterrupted {
                manager.release(pack)
                request.replyError(.interrupted)
                return
            }
            switch self.openPackFile(pack) {
            case .success(let handle): request.replyOpen(handle: handle, options: Self.fileOpenOptions)
            case .failure(let error): request.replyError(error)
            }
        }
        request.onInterrupt { task.cancel() }
    }

    /// Opens a descriptor on a retained, local pack; on failure the retain is dropped.
    private func openPackFile(_ pack: PackNumber) -> Result<FileHandleID, Errno> {
        let path = manager.path(of: pack)
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        if fd >= 0 { return .success(FileHandleID(rawValue: UInt64(fd))) }
        let code = errno
        manager.release(pack)
        if code == ENOENT { manager.markMissing(pack) }
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
        request.replyData(fileDescriptor: Int32(truncatingIfNeeded: handle.rawValue), offset: Int64(entry.dataOffset) + start, count: count)
    }

    public func release(inode: InodeNumber, handle: FileHandleID, request: consuming FUSERequest) {
        if VirtualFileTable.isVirtual(handle) {
            virtualFiles.close(handle)
            request.replySuccess()
            return
        }
        Glibc.close(Int32(truncatingIfNeeded: handle.rawValue))
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
