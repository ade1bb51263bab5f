// Intentionally empty: the target only exports CLibFuzzer.h (a C target needs a source file).
#include "CLibFuzzer.h"
