/* Trains (argv[1] = "train") or audits ("audit") a tiny character GPT with a
   log at argv[2]: built once with gcc and once with clang, the compile check
   trains with one build and audits with the other (different compilers,
   libm calls inlined or not, different evaluation orders). */
#define VTRAIN_IMPLEMENTATION
#include "../../vtrain.h"
#include "../../examples/chargpt.h"

int main(int argc, char **argv) {
    chargpt a;
    vt_desc d = vt_desc_default();
    vt_program p;
    vt_report r;
    if (argc < 3) return 2;
    if (chargpt_load(&a, "data/kjv_nt.txt") != VT_OK) { printf("%s\n", vt_last_error()); return 1; }
    a.cfg.layers = 2; a.cfg.width = 32; a.cfg.heads = 2; a.T = 16; a.B = 4; a.steps = 30;
    p = chargpt_program(&a);
    d.log_path = argv[2];
    if (!strcmp(argv[1], "audit")) {
        d.role = VT_ROLE_AUDIT;
        vt_order_parse(&d.order, "threads:1,chaos:3");
    } else vt_order_parse(&d.order, "threads:2");
    vt_run(&d, &p, 30, &r);
    if (r.status != VT_OK) printf("%s: %s\n", argv[1], r.message);
    chargpt_free(&a);
    return r.status == VT_OK ? 0 : 1;
}
