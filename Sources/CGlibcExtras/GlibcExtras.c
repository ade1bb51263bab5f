#define _GNU_SOURCE
#include "CGlibcExtras.h"

#include <fcntl.h>
#include <malloc.h>

// glibc keeps memory freed by a thread in that thread's arena; a mount's start-up (the file
// index read and validated on several I/O threads) leaves tens of MiB of it resident.
int odrfs_release_free_heap(void) { return malloc_trim(0); }

// A download of a 1 GB file index is fsynced before it is published; started as it is
// written, that fsync finds the disk already busy with all but the last few MiB.
int odrfs_start_writeback(int fd, int64_t offset, int64_t length) {
    return sync_file_range(fd, (off64_t)offset, (off64_t)length, SYNC_FILE_RANGE_WRITE);
}
