#ifndef CPOWERCUTVFS_H
#define CPOWERCUTVFS_H

/// Registers (once) the SQLite VFS named "powercut" and returns an SQLite result code
/// (0 is SQLITE_OK). Open a database with it through a URI: `file:/dir/index.sqlite?vfs=powercut`.
///
/// It is the unix VFS with one addition, to simulate a power cut as LazyFS does: every
/// successful xSync of a file copies the file's whole content to `<file>.synced`. At any
/// moment, the `.synced` copies are the files as a power cut would leave them: every byte
/// written since the file's last fsync is lost, every byte before it kept. A file never
/// synced has no copy (it is lost). Deleting a file removes its copy only when SQLite asks
/// for the deletion to be made durable (xDelete's syncDir); otherwise it may come back.
int CPowerCutVFS_register(void);

#endif
