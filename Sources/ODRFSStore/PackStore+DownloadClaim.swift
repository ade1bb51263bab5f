import Foundation
import ODRFSCore
import Synchronization

/// One download per pack across the mounts of a store (issue 23, item 1): before fetching
/// a pack from its origin, a mount claims it, an exclusive `flock` on
/// `downloads/<sha256>.lock`, taken without waiting. A mount that finds the claim taken
/// waits for the pack to appear in the store instead of downloading it a second time, and
/// claims it itself when the claim is released without a pack (the other download failed)
/// or dropped by the kernel (the other mount died), or when the claim's file has not been
/// touched for a while (the other mount's download makes no progress: it is stopped or
/// wedged; both then download, and only one copy is kept, as before).
///
/// The claimer touches the file as bytes arrive (at most once a second) and unlinks it
/// while still holding the lock when it is done; a mount that locked an unlinked file sees
/// that its descriptor is no longer the path's file and tries again. Blocking (open, flock,
/// fstat): on the I/O executor. A private cache has one mount and claims nothing.
extension PackStore {
    /// The outcome of ``claimDownload(sha256:)``.
    public enum DownloadClaimOutcome: Sendable {
        /// This mount downloads the pack; release the claim when done.
        case claimed(DownloadClaim)
        /// Another live mount downloads it; its claim was last touched at this time.
        case busy(lastProgress: Date)
        /// Not a store, or the claim cannot be made (the directory is not writable): download.
        case unclaimed
    }

    /// The directory of download claims.
    var downloadClaimsDirectory: String { layout.root + "/downloads" }

    /// Claims the download of the pack `sha256` for this mount, if no other mount has.
    public func claimDownload(sha256: String) -> DownloadClaimOutcome {
        guard isShared else { return .unclaimed }
        let path = downloadClaimsDirectory + "/" + sha256 + ".lock"
        for _ in 0..<4 {
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            if fd < 0, errno == ENOENT, (try? Self.makeDirectory(downloadClaimsDirectory)) != nil { continue }
            guard fd >= 0 else { return .unclaimed }
            if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                var info = stat()
                let touched = fstat(fd, &info) == 0 ? Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec)) : Date()
                close(fd)
                return .busy(lastProgress: touched)
            }
            // Locked; but the file may have been unlinked by the claimer that just finished.
            var held = stat(), named = stat()
            guard fstat(fd, &held) == 0, stat(path, &named) == 0, held.st_ino == named.st_ino, held.st_dev == named.st_dev else {
                close(fd)
                continue
            }
            _ = futimens(fd, nil)
            return .claimed(DownloadClaim(descriptor: fd, path: path))
        }
        return .unclaimed
    }

    /// Runs `body` as the store's one purge at a time (`purge.lock`, an exclusive `flock`):
    /// twenty mounts over their store's limits at one tick would otherwise each decide over
    /// every object and race to evict the same victims. With `waiting` false it returns nil
    /// at once when another mount is purging (that purge frees the room); with it, it waits
    /// for that purge to end (a download that needs the room). Not a store: `body` runs.
    public func purging<T>(waiting: Bool, _ body: () -> T) -> T? {
        guard isShared else { return body() }
        let fd = open(layout.root + "/purge.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return body() }
        defer { close(fd) }
        while flock(fd, waiting ? LOCK_EX : LOCK_EX | LOCK_NB) != 0 {
            guard errno == EINTR else { return nil }
        }
        return body()
    }

    /// Removes claims no mount holds (left by mounts that died). Blocking.
    func removeAbandonedClaims() {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: downloadClaimsDirectory)) ?? [] {
            let path = downloadClaimsDirectory + "/" + name
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { continue }
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { unlink(path) }
            close(fd)
        }
    }
}

/// A mount's claim on one pack's download (``PackStore/claimDownload(sha256:)``): held
/// until ``release()``, or until the process dies (the kernel drops the lock).
public final class DownloadClaim: Sendable {
    private let descriptor: Int32
    private let path: String
    private let state = Mutex<(released: Bool, lastTouch: ContinuousClock.Instant)>((false, .now))

    init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    /// Tells waiting mounts the download progresses: touches the claim, at most once a second.
    /// Cheap enough for a progress callback (a clock read, and a `futimens` once a second).
    public func touch() {
        let due = state.withLock { state -> Bool in
            guard !state.released, ContinuousClock.now - state.lastTouch >= .seconds(1) else { return false }
            state.lastTouch = .now
            return true
        }
        if due { _ = futimens(descriptor, nil) }
    }

    /// Ends the claim: the file goes first, while still locked, then the lock.
    public func release() {
        guard state.withLock({ state in
            defer { state.released = true }
            return !state.released
        }) else { return }
        unlink(path)
        close(descriptor)
    }

    deinit {
        release()
    }
}
