// Compiled alone with the net layer's include paths: tools/ is above it and not found.
#include "muster/tools/common/cli_common.h"
