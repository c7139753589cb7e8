/* Must NOT compile: vtrain_btard.h's implementation asked for in a file
   where vtrain.h's implementation is not compiled first. The compile check
   passes when the compiler stops with vtrain_btard.h's message that names
   the include order. */
#include "../../vtrain.h"
#define VTRAIN_IMPLEMENTATION
#include "../../vtrain_btard.h"

int main(void) { return 0; }
