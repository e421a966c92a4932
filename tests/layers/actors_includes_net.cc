// Compiled alone with the actors layer's include paths: net/ is above it and not found.
#include "muster/net/leader/leader.h"
