/* The implementation translation unit of the two-TU compile check of
   vtrain_btard.h. */
#define VTRAIN_IMPLEMENTATION
#include "../../vtrain.h"
#include "../../vtrain_btard.h"

int vt_check_btard_tu(void); /* in btard_user.c */

int main(void) {
    return vt_check_btard_tu() ? 0 : 1;
}
