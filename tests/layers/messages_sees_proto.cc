// Compiled alone by tests/CMakeLists.txt with the messages layer's include paths: it sees proto/.
#include "muster/messages/task_name.h"
#include "muster/proto/coordination_service.pb.h"
