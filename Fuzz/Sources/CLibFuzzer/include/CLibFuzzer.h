#ifndef CLIBFUZZER_H
#define CLIBFUZZER_H

#include <stddef.h>
#include <stdint.h>

// libFuzzer's driver, called from our own entry point: SwiftPM renames an executable's
// `main` to `<module>_main` and aliases `main` to it at link time, so libFuzzer's own
// `main` is never linked and the driver must be started by hand (see main.swift).
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
