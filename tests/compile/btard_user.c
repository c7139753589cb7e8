/* A translation unit that includes both headers without the implementation
   and calls BTARD: linking fails if the implementation macro or VTDEF is
   wrong in vtrain_btard.h. */
#include "../../vtrain.h"
#include "../../vtrain_btard.h"
#include <string.h>

int vt_check_btard_tu(void) {
    float a[3] = {1, 2, 3}, b[3] = {1, 2, 5}, c[3] = {1, 4, 3}, out[3];
    const float *rows[3] = {a, b, c};
    vt_btard_cfg cfg = vt_btard_cfg_default();
    vt_btard_attack at = vt_btard_attack_default(VT_ATTACK_NUDGE);
    /* coordinate 0 is 1 in every row: CenteredClip starts there and stays */
    if (vt_centered_clip(rows, 3, 3, 100.0, 0, 0, out, NULL) != VT_OK) return 0;
    return out[0] == 1 && !strcmp(vt_btard_attack_name(at.kind), "nudge") && cfg.tau == 0 &&
           !strcmp(vt_btard_reason_name(VT_BAN_SILENT), "SILENT") && vt_net_now() > 0;
}
