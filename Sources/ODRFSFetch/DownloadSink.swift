import ODRFSCore

/// Where the acquisition pipeline (``PackPipeline``) puts what it downloads: a
/// transaction per download (as cvmfs's `StartTxn/CommitTxn/AbortTxn` and containerd's
/// ingest): a file is made, receives only verified bytes (or is verified whole before
/// publication), and is then published or discarded. The fetcher knows nothing else of
/// the cache; ODRFSStore's `PackStore` is the sink of a mount.
///
/// Every method blocks (file system calls): the pipeline calls them on its I/O executor,
/// never on Swift's cooperative pool.
public protocol DownloadSink: Sendable {
    associatedtype File: DownloadSinkFile
    /// What publishing a pack gives back (the store's record of it).
    associatedtype Published: Sendable

    /// A new, empty file for a download in progress, labelled for its purpose ("pack",
    /// "index", "update"). With `readableSize`, readers may follow it as it is verified
    /// (``DownloadSinkFile/readable``).
    func makeFile(label: String, readableSize: Int64?) throws(FetchError) -> File
    /// Makes the verified `file` the cached copy of `pack`.
    func publish(_ file: File, as pack: PackDescriptor) throws(FetchError) -> Published
    /// Makes the verified `file` the cached copy of `index`.
    func publish(_ file: File, index: IndexReference) throws(FetchError)
}

/// One download's file in a ``DownloadSink``. Blocking: called on the I/O executor.
public protocol DownloadSinkFile: Sendable {
    /// What progressive readers follow: the file with its verified prefix.
    associatedtype Readable: Sendable

    /// The file's descriptor, for positioned reads and writes (an update's assembly).
    var descriptor: Int32 { get }
    /// The readable view when the file was made with a readable size.
    var readable: Readable? { get }
    /// Appends all of `bytes`.
    func append(_ bytes: UnsafeRawBufferPointer) throws(FetchError)
    /// Writes `bytes`, not yet verified, at `offset`, except where the file already holds
    /// bytes released to readers ahead of the prefix (a range fetched and proven ahead of the
    /// stream): a released byte is never overwritten by one that is not proven.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(FetchError)
    /// Writes proven `bytes` at `offset`; with `release`, lets readers of ``readable`` read
    /// them at once, ahead of the verified prefix, in one step with the write as far as
    /// ``write(_:at:)`` is concerned.
    func writeVerified(_ bytes: UnsafeRawBufferPointer, at offset: Int64, release: Bool) throws(FetchError)
    /// Sets the file's size: cuts it back to bytes still trusted, or extends it with zeros.
    func resize(to size: Int64) throws(FetchError)
    /// Lets readers of ``readable`` read the first `bytes` bytes, which are verified.
    func release(verifiedUpTo bytes: Int64)
    /// The proven spans (prefix and released ranges) sharing a byte with `range`: what a
    /// range fetched ahead need not fetch again.
    func provenSpans(overlapping range: Range<Int64>) -> [Range<Int64>]
    /// Closes and deletes the file (a failed or cancelled download).
    func discard()
}
