#ifndef CGLIBCEXTRAS_H
#define CGLIBCEXTRAS_H

#include <stdint.h>

// glibc functions that Swift's Glibc module does not export (they are GNU extensions), each
// behind a function of ours so that Swift never sees a variadic or macro-laden declaration.

/// Gives the heap's free memory back to the kernel (glibc's `malloc_trim(0)`). Returns whether
/// any was given back.
int odrfs_release_free_heap(void);

/// Starts writeback of the dirty pages of `length` bytes at `offset` of `fd` without waiting
/// for it (`sync_file_range(SYNC_FILE_RANGE_WRITE)`): durability still needs fsync, which then
/// finds little left to write. Returns 0, or -1 with errno set.
int odrfs_start_writeback(int fd, int64_t offset, int64_t length);

#endif
