// Compiled alone with the net layer's include paths: it sees actors/, messages/ and proto/.
#include "muster/net/leader/leader.h"
