#include "CBuildInfo.h"

// Only this file sees the define, so a new commit recompiles one C file and relinks.
#ifndef ODRFS_BUILD_COMMIT
#define ODRFS_BUILD_COMMIT "unknown"
#endif

const char *odrfs_build_commit(void) {
    return ODRFS_BUILD_COMMIT;
}
