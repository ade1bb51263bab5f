#ifndef CFUSE3_SHIM_H
#define CFUSE3_SHIM_H
// A system-library target has no cSettings, so the API version is pinned here,
// before the first libfuse header is seen.
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#endif
