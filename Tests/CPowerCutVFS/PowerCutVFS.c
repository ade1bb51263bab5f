// A test-only SQLite VFS over the default (unix) one that records, for each file, its
// content as of its last successful fsync: what survives a power cut. Why a VFS: SQLite
// does all of its I/O through one, so this sees every write and every sync the cache
// index makes, in the test's own process, with no FUSE filesystem (LazyFS) or root
// needed. Directory entries are not modelled: the copy of a file exists from its first
// sync on (SQLite syncs the directory of a new journal or WAL with its first sync).
#include "CPowerCutVFS.h"

#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct PowerCutFile {
    sqlite3_file base;
    /// `<path>.synced`; NULL for SQLite's nameless temporary files.
    char *shadowPath;
    /// The unix VFS's file, allocated right after this struct (szOsFile covers both).
    sqlite3_file *real;
} PowerCutFile;

static sqlite3_vfs *realVFS;
static sqlite3_vfs powerCutVFS;
static int registration = SQLITE_OK;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static char *shadowPathFor(const char *path) {
    if (path == NULL) return NULL;
    static const char suffix[] = ".synced";
    size_t length = strlen(path);
    char *shadow = malloc(length + sizeof(suffix));
    if (shadow == NULL) return NULL;
    memcpy(shadow, path, length);
    memcpy(shadow + length, suffix, sizeof(suffix));
    return shadow;
}

/// Copies the whole file, as it is now, to its shadow: called right after it was synced.
static int copyToShadow(PowerCutFile *file) {
    sqlite3_int64 size = 0;
    int rc = file->real->pMethods->xFileSize(file->real, &size);
    if (rc != SQLITE_OK) return rc;
    int fd = open(file->shadowPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return SQLITE_IOERR_FSYNC;
    char buffer[65536];
    for (sqlite3_int64 offset = 0; offset < size && rc == SQLITE_OK;) {
        int count = size - offset < (sqlite3_int64)sizeof(buffer) ? (int)(size - offset) : (int)sizeof(buffer);
        rc = file->real->pMethods->xRead(file->real, buffer, count, offset);
        if (rc == SQLITE_OK && write(fd, buffer, (size_t)count) != count) rc = SQLITE_IOERR_FSYNC;
        offset += count;
    }
    close(fd);
    return rc;
}

static int pcClose(sqlite3_file *f) {
    PowerCutFile *file = (PowerCutFile *)f;
    int rc = file->real->pMethods->xClose(file->real);
    free(file->shadowPath);
    file->shadowPath = NULL;
    return rc;
}

static int pcSync(sqlite3_file *f, int flags) {
    PowerCutFile *file = (PowerCutFile *)f;
    int rc = file->real->pMethods->xSync(file->real, flags);
    if (rc == SQLITE_OK && file->shadowPath != NULL) rc = copyToShadow(file);
    return rc;
}

// Everything else goes to the real file unchanged.
#define REAL(f) (((PowerCutFile *)(f))->real)
static int pcRead(sqlite3_file *f, void *b, int n, sqlite3_int64 o) { return REAL(f)->pMethods->xRead(REAL(f), b, n, o); }
static int pcWrite(sqlite3_file *f, const void *b, int n, sqlite3_int64 o) { return REAL(f)->pMethods->xWrite(REAL(f), b, n, o); }
static int pcTruncate(sqlite3_file *f, sqlite3_int64 size) { return REAL(f)->pMethods->xTruncate(REAL(f), size); }
static int pcFileSize(sqlite3_file *f, sqlite3_int64 *size) { return REAL(f)->pMethods->xFileSize(REAL(f), size); }
static int pcLock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int pcUnlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int pcCheckReservedLock(sqlite3_file *f, int *out) { return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out); }
static int pcFileControl(sqlite3_file *f, int op, void *arg) { return REAL(f)->pMethods->xFileControl(REAL(f), op, arg); }
static int pcSectorSize(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int pcDeviceCharacteristics(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int pcShmMap(sqlite3_file *f, int region, int size, int extend, void volatile **out) {
    return REAL(f)->pMethods->xShmMap(REAL(f), region, size, extend, out);
}
static int pcShmLock(sqlite3_file *f, int offset, int n, int flags) { return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags); }
static void pcShmBarrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int pcShmUnmap(sqlite3_file *f, int deleteFlag) { return REAL(f)->pMethods->xShmUnmap(REAL(f), deleteFlag); }
static int pcFetch(sqlite3_file *f, sqlite3_int64 o, int n, void **out) { return REAL(f)->pMethods->xFetch(REAL(f), o, n, out); }
static int pcUnfetch(sqlite3_file *f, sqlite3_int64 o, void *p) { return REAL(f)->pMethods->xUnfetch(REAL(f), o, p); }

static const sqlite3_io_methods powerCutMethods = {
    3, pcClose, pcRead, pcWrite, pcTruncate, pcSync, pcFileSize, pcLock, pcUnlock, pcCheckReservedLock,
    pcFileControl, pcSectorSize, pcDeviceCharacteristics, pcShmMap, pcShmLock, pcShmBarrier, pcShmUnmap,
    pcFetch, pcUnfetch,
};

static int pcOpen(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags, int *outFlags) {
    (void)vfs;
    PowerCutFile *file = (PowerCutFile *)f;
    file->real = (sqlite3_file *)(file + 1);
    file->shadowPath = shadowPathFor(name);
    int rc = realVFS->xOpen(realVFS, name, file->real, flags, outFlags);
    // SQLite calls xClose only when pMethods is set; the real file sets its own the same way.
    file->base.pMethods = file->real->pMethods != NULL ? &powerCutMethods : NULL;
    if (file->base.pMethods == NULL) {
        free(file->shadowPath);
        file->shadowPath = NULL;
    }
    return rc;
}

static int pcDelete(sqlite3_vfs *vfs, const char *path, int syncDir) {
    (void)vfs;
    int rc = realVFS->xDelete(realVFS, path, syncDir);
    if (rc == SQLITE_OK && syncDir) {
        char *shadow = shadowPathFor(path);
        if (shadow != NULL) unlink(shadow);
        free(shadow);
    }
    return rc;
}

static void registerOnce(void) {
    realVFS = sqlite3_vfs_find(NULL);
    if (realVFS == NULL) {
        registration = SQLITE_ERROR;
        return;
    }
    // The unix VFS's other methods read only mxPathname and pAppData, which the copy keeps.
    powerCutVFS = *realVFS;
    powerCutVFS.zName = "powercut";
    powerCutVFS.pNext = NULL;
    powerCutVFS.szOsFile = (int)sizeof(PowerCutFile) + realVFS->szOsFile;
    powerCutVFS.xOpen = pcOpen;
    powerCutVFS.xDelete = pcDelete;
    registration = sqlite3_vfs_register(&powerCutVFS, 0);
}

int CPowerCutVFS_register(void) {
    pthread_once(&once, registerOnce);
    return registration;
}
