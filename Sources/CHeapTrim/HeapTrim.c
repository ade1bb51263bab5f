// glibc keeps memory freed by a thread in that thread's arena; a mount's start-up (the file
// index read and validated on several I/O threads) leaves tens of MiB of it resident.
#include "CHeapTrim.h"

#include <malloc.h>

int odrfs_release_free_heap(void) { return malloc_trim(0); }
