// Compiled alone with the actors layer's include paths: it sees messages/ and proto/.
#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/messages/vocabulary/interfaces.h"
