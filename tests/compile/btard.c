/* vtrain_btard.h in one translation unit, compiled as C and as C++,
   optionally VTRAIN_STATIC or VTRAIN_NO_THREADS: a
   CenteredClip whose answer is known, the attack names, and a short swarm
   of five peers, one of which sends NaN in its gradient from step 1: it
   must be banned and the honest four must end with one weights digest
   (without threads the swarm must refuse with a message; without
   VTRAIN_SODIUM too, and it prints the refusal). */
#define VTRAIN_IMPLEMENTATION
#include "../../vtrain.h"
#include "../../vtrain_btard.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    /* three rows at (1, 1), one far away, tau 1: at the fixed point the
       three pull 3 (1 - v) and the clipped outlier at most 1, so v stops
       at distance 1/3 from (1, 1), however far the outlier is */
    float r0[2] = {1, 1}, r1[2] = {1, 1}, r2[2] = {1, 1}, r3[2] = {1000, -1000}, out[2];
    const float *rows[4] = {r0, r1, r2, r3};
    vt_cclip_info info;
    double dist;
    vt_btard_digits dg;
    vt_btard_task task;
    vt_btard_cfg cfg = vt_btard_cfg_default();
    vt_btard_result res;
    vt_btard_attack atk[5];
    int k, ok = 1;
    if (vt_centered_clip(rows, 4, 2, 1.0, 0, 0, out, &info) != VT_OK) { printf("centered_clip: %s\n", vt_last_error()); return 1; }
    dist = sqrt((out[0] - 1.0) * (out[0] - 1.0) + (out[1] - 1.0) * (out[1] - 1.0));
    if (fabs(dist - 1.0 / 3) > 1e-4 || info.valid != 4) {
        printf("centered_clip: (%.9g, %.9g) lies %.9g from (1, 1), want 1/3\n", out[0], out[1], dist);
        return 1;
    }
    for (k = 0; k < VT_ATTACK_COUNT; k++)
        if (vt_btard_attack_parse(vt_btard_attack_name((vt_btard_attack_kind)k)) != k) { printf("attack %d: name does not parse back\n", k); return 1; }
    if (vt_btard_digits_load(&dg, "data/digits.csv", 8, 4, 0.05) != VT_OK) { printf("digits: %s\n", vt_last_error()); return 1; }
    task = vt_btard_digits_task(&dg);
    cfg.data_seed = 3; cfg.secret_seed = 4; cfg.timeout = 2.0; cfg.compute_timeout = 5.0;
    for (k = 0; k < 5; k++) atk[k] = vt_btard_attack_default(VT_ATTACK_NONE);
    atk[4] = vt_btard_attack_default(VT_ATTACK_NAN);
    atk[4].start = 1;
    vt_btard_simulate(&cfg, &task, 5, atk, 6, NULL, NULL, &res);
#ifdef VTRAIN_NO_THREADS
    if (res.status == VT_OK || !res.message[0]) { printf("simulate without threads should refuse with a message\n"); ok = 0; }
#else
    if (!vt_btard_can_sign()) { /* without libsodium (VTRAIN_SODIUM) BTARD refuses to start, with a message */
        if (res.status == VT_OK || !strstr(res.message, "libsodium")) { printf("simulate without libsodium should refuse with a message: %s\n", res.message); ok = 0; }
        else printf("refused: %s\n", res.message); /* the Makefile's cc-btard_no_sodium looks for it */
        { /* a peer made by hand refuses too */
            vt_net **e = vt_net_inproc_create(1, 0);
            vt_btard_peer *p = e ? vt_btard_peer_create(&cfg, &task, e[0], NULL) : NULL;
            if (p || !strstr(vt_last_error(), "built without VTRAIN_SODIUM")) {
                printf("vt_btard_peer_create without libsodium should refuse with a message: %s\n", vt_last_error());
                ok = 0;
            } else printf("refused: %s\n", vt_last_error());
            vt_btard_peer_destroy(p);
            if (e) e[0]->destroy(e[0]);
        }
    } else
    if (res.status != VT_OK || res.steps != 6 || !res.views_agree || res.honest_banned || res.attackers_banned != 1) {
        printf("swarm: status %d, %lld steps, views agree %d, honest banned %d, attackers banned %d: %s\n", (int)res.status,
               (long long)res.steps, res.views_agree, res.honest_banned, res.attackers_banned, res.message);
        ok = 0;
    }
#endif
    vt_btard_result_free(&res);
    vt_btard_digits_free(&dg);
    return ok ? 0 : 1;
}
