#ifndef CBUILDINFO_H
#define CBUILDINFO_H

/// The commit `odrfs` was built from, as mount-scripts/package.sh passed it at build time
/// (Package.swift turns ODRFS_BUILD_COMMIT into a C define: Swift has no string defines),
/// or "unknown" for a plain `swift build`.
const char *odrfs_build_commit(void);

#endif
