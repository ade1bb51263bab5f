// The C boundary for Debian's libzstd (libzstd-dev): the one-shot frame API is all ODRFS
// uses. Only ODRFSCompression imports this module.
#ifndef ODRFS_CZSTD_SHIM_H
#define ODRFS_CZSTD_SHIM_H
#include <zstd.h>
#include <zstd_errors.h>
#endif
