#ifndef CHEAPTRIM_H
#define CHEAPTRIM_H

/// Gives the heap's free memory back to the kernel (glibc's `malloc_trim(0)`, which Swift's
/// Glibc module does not export). Returns whether any was given back.
int odrfs_release_free_heap(void);

#endif
