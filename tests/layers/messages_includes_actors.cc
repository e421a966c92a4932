// Compiled alone with the messages layer's include paths: actors/ is above it and not found.
#include "muster/actors/tasks/task_table.h"
