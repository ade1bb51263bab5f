/// Why `odrfs build` stopped. Messages name the file or directory at fault and what to do;
/// when a build fails, the output directory is left as it was.
public struct BuildError: Error, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The tag spec is unreadable or invalid; see ``spec``.
        case spec
        case resourceRootNotDirectory
        case unreadable
        case unsupportedFileType
        case symlinkOutsideRoot
        case reservedName
        case invalidName
        case outputNotReplaceable
        case outputInsideResourceRoot
        case tooLarge
        /// A variant directory that breaks a rule of ``VariantLayout``.
        case invalidVariant
        case io
    }

    public let kind: Kind
    /// The path at fault, as the user would recognise it.
    public let path: String?
    public let message: String
    /// The spec problem, for ``Kind/spec``.
    public let spec: TagSpecError?

    public init(_ kind: Kind, path: String?, _ message: String) {
        self.kind = kind
        self.path = path
        self.message = message
        self.spec = nil
    }

    public init(spec: TagSpecError) {
        self.kind = .spec
        self.path = spec.file
        self.message = spec.description
        self.spec = spec
    }

    public var description: String { message }

    static func io(_ error: SystemCallError, _ what: String, _ path: String) -> BuildError {
        BuildError(.io, path: path, "cannot \(what) '\(path)': \(error.reason) (\(error.call))")
    }
}
