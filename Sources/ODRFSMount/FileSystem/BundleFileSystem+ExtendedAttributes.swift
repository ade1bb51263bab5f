import FUSEKit
import ODRFSCore

/// The `user.odrfs.*` attributes that let people inspect packs with getfattr.
enum BundleAttribute: String, CaseIterable {
    case tags = "user.odrfs.tags"
    case pack = "user.odrfs.pack"
    case state = "user.odrfs.state"
    /// `tcf=astc`: only on files that came from a variant directory.
    case variant = "user.odrfs.variant"

    /// `listxattr`'s reply for a file: every name but ``variant``, each NUL-terminated.
    static let nameList: [UInt8] = [tags, pack, state].flatMap { Array($0.rawValue.utf8) + [0] }
    /// The same for a file of a variant.
    static let variantNameList: [UInt8] = nameList + Array(variant.rawValue.utf8) + [0]
}

extension BundleFileSystem {
    public func getExtendedAttribute(inode: InodeNumber, name: String, size: Int, request: consuming FUSERequest) {
        // `ls -l` asks for security.* and system.posix_acl_* on every file: EOPNOTSUPP
        // tells the kernel not to ask again, ENODATA would cost a request per file.
        guard name.hasPrefix("user.") else {
            request.replyError(.notSupported)
            return
        }
        guard let attribute = BundleAttribute(rawValue: name), let value = value(of: attribute, inode: inode) else {
            request.replyError(.noData)
            return
        }
        Self.replyXattr(Array(value.utf8), size: size, request: request)
    }

    public func listExtendedAttributes(inode: InodeNumber, size: Int, request: consuming FUSERequest) {
        let names = packOfFile(inode) == nil ? [] : variant(of: inode) == nil ? BundleAttribute.nameList : BundleAttribute.variantNameList
        Self.replyXattr(names, size: size, request: request)
    }

    /// The xattr protocol: size 0 asks for the length, a short buffer is ERANGE.
    private static func replyXattr(_ bytes: [UInt8], size: Int, request: consuming FUSERequest) {
        if size == 0 {
            request.replyXattrSize(bytes.count)
        } else if size < bytes.count {
            request.replyError(.outOfRange)
        } else {
            request.replyBytes(bytes[...])
        }
    }

    private func value(of attribute: BundleAttribute, inode: InodeNumber) -> String? {
        guard let pack = packOfFile(inode) else { return nil }
        let descriptor = manager.manifest.pack(pack)
        switch attribute {
        case .tags: return descriptor.tags.map(\.name).joined(separator: ",")
        case .pack: return descriptor.id.rawValue
        case .state: return manager.state(of: pack).rawValue
        case .variant: return variant(of: inode)?.description
        }
    }

    private func variant(of inode: InodeNumber) -> VariantAssignment? {
        guard !variantOfEntry.isEmpty, case .entry(let number) = inodes.node(for: inode) else { return nil }
        return variantOfEntry[number]
    }

    private func packOfFile(_ inode: InodeNumber) -> PackNumber? {
        guard case .entry(let number) = inodes.node(for: inode) else { return nil }
        return index.entry(number)?.pack
    }
}
