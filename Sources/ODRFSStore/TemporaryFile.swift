import Foundation

/// A download in progress under the cache's `tmp/`. It is either published into
/// place by `PackStore.publish` or discarded; dropping it unpublished deletes it,
/// so a failed or cancelled download never leaves a partial file behind.
///
/// Not Sendable: one download task owns it from creation to publication.
public final class TemporaryFile {
    public let path: String
    public let descriptor: Int32
    private var isOpen = true

    init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    /// Appends all of `bytes`, retrying short and interrupted writes.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw StoreError.system("cannot write", path: path)
            }
            offset += written
        }
    }

    /// Deletes the file now.
    public func discard() {
        guard isOpen else { return }
        isOpen = false
        close(descriptor)
        unlink(path)
    }

    /// Called once the file has been renamed into place: only the descriptor goes.
    func markPublished() {
        guard isOpen else { return }
        isOpen = false
        close(descriptor)
    }

    deinit {
        discard()
    }
}
