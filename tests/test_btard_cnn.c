/* test_btard_cnn.c - BTARD with batch norm: the digits CNN and ResNet-18
   tasks of vtrain_btard.h (>>cnn). What must hold:

   * a gradient with batch norm is recomputed bit for bit from its rounding
     log in another reduction order (what a validator does), and a training
     step moves no state but the weights and moments (no running statistics);
   * in a swarm with Byzantine attackers every honest peer ends with the
     same weights, moments and ban list, and the attackers are banned;
   * the running statistics, recomputed from the agreed weights over the
     public calibration set, are the same bits on every honest peer (and in
     another reduction order), so nothing a peer says can move them; a peer
     that normalises its gradient with statistics of its own choosing is
     banned for its gradient.

   Small: widths 2 to 4, 4 to 8 images per peer, 4 to 6 peers. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "../vtrain_btard.h"
#include "test.h"
#include "btard_test.h"

#include <pthread.h>
#include <sys/stat.h>

static vt_btard_cnn g_cnn, g_rn;

static vt_btard_cfg small_cfg(uint64_t seed) {
    vt_btard_cfg c = vt_btard_cfg_default();
    c.validators = 2;
    c.tau = 1.0;
    c.data_seed = 300 + seed;
    c.secret_seed = 400 + seed;
    c.timeout = 1.0;
    c.compute_timeout = 4.0;
    return c;
}

/* What a validator does, with batch norm: the trainer (threads:2) computes
   gradients and keeps each step's log chunk; an auditor in another order
   (chaos, no fma, one thread) replays them and gets the same bits. The
   trainer's state digest does not move in a gradient step: the training
   model keeps no running statistics. A different minibatch (another seed)
   gives another gradient, so the comparison can fail. */
static void replay_case(vt_btard_cnn *task, const char *what) {
    vt_btard_task t = vt_btard_cnn_task(task);
    vt_ctx *c, *a;
    void *mc, *ma;
    int64_t D = trainer_auditor(&t, "threads:2", "threads:1,chaos:11,nofma", &c, &a, &mc, &ma);
    float *g, *h, *g0;
    unsigned char d0[32], d1[32];
    int s, same = 0, moved = 0, differ = 0;
    g = (float *)calloc((size_t)D, sizeof(float));
    h = (float *)calloc((size_t)D, sizeof(float));
    g0 = (float *)calloc((size_t)D, sizeof(float));
    vt_weights_digest(c, d0);
    for (s = 0; s < 3; s++) {
        const unsigned char *cb;
        size_t cn;
        vt_step_begin(c);
        t.loss(c, mc, 700 + (uint64_t)s, 0, t.user);
        grad_of(c, g);
        vt_step_end(c);
        CHECK(vt_status_of(c) == VT_OK, "%s: trainer: %s", what, vt_error_message(c));
        vt_weights_digest(c, d1);
        moved += memcmp(d0, d1, 32) != 0;
        vt_step_chunk(c, &cb, &cn);
        vt_feed_chunk(a, cb, cn);
        if (vt_step_begin(a) == VT_OK) t.loss(a, ma, 700 + (uint64_t)s, 0, t.user);
        grad_of(a, h);
        vt_step_end(a);
        CHECK(vt_status_of(a) == VT_OK, "%s: auditor, step %d: %s", what, s, vt_error_message(a));
        vt_clear_error(a);
        same += !memcmp(g, h, sizeof(float) * (size_t)D);
        if (s == 0) memcpy(g0, g, sizeof(float) * (size_t)D);
        else differ += memcmp(g0, g, sizeof(float) * (size_t)D) != 0;
    }
    CHECK(same == 3, "%s: %d of 3 gradients replayed bit for bit in another order", what, same);
    CHECK(moved == 0, "%s: a gradient step moved the state digest (running statistics in the training state?)", what);
    CHECK(differ == 2, "%s: another minibatch gave the same gradient", what);
    t.release(mc, t.user);
    t.release(ma, t.user);
    vt_destroy(c);
    vt_destroy(a);
    free(g); free(h); free(g0);
}

TEST(cnn_gradient_replays_bit_exactly) {
    replay_case(&g_cnn, "digits cnn");
    replay_case(&g_rn, "resnet18");
}

/* a CNN swarm under attack: 6 peers, the last two flip their gradients'
   sign (x -1000) from step 2 */
static double g_acc;
static void obs_acc(vt_btard_peer *p, int64_t s, void *u) {
    (void)s;
    g_acc = vt_btard_cnn_accuracy(vt_btard_ctx(p), vt_btard_model(p), (const vt_btard_cnn *)u, NULL);
}
TEST(cnn_swarm_attackers_banned) {
    static const vt_btard_attack_kind kinds[2] = {VT_ATTACK_SIGN_FLIP, VT_ATTACK_FALSE_ACCUSE};
    static const vt_btard_reason why[2] = {VT_BAN_GRADIENT, VT_BAN_FALSE_ACCUSATION};
    int q;
    for (q = 0; q < 2; q++) {
        vt_btard_cfg cfg = small_cfg(1 + (uint64_t)q);
        vt_btard_task t = vt_btard_cnn_task(&g_cnn);
        vt_btard_attack a[6];
        vt_btard_result r;
        int i, n = 6;
        for (i = 0; i < n; i++) a[i] = vt_btard_attack_default(VT_ATTACK_NONE);
        for (i = n - 2; i < n; i++) { a[i] = vt_btard_attack_default(kinds[q]); a[i].start = 2; }
        g_acc = 0;
        vt_btard_simulate(&cfg, &t, n, a, 24, obs_acc, &g_cnn, &r);
        CHECK(r.status == VT_OK && r.steps == 24, "%s: %s", vt_btard_attack_name(kinds[q]), r.message);
        CHECK(r.views_agree && r.honest_banned == 0, "%s: honest peers disagree or were banned (%d)", vt_btard_attack_name(kinds[q]), r.honest_banned);
        CHECK(r.attackers == 2 && r.attackers_banned == 2, "%s: %d of %d attackers banned", vt_btard_attack_name(kinds[q]), r.attackers_banned, r.attackers);
        for (i = n - 2; i < n; i++)
            CHECK(r.ban_reason[i] == (int)why[q], "%s: peer %d banned for %s", vt_btard_attack_name(kinds[q]), i,
                  vt_btard_reason_name((vt_btard_reason)r.ban_reason[i]));
        CHECK(g_acc > 0.5, "%s: accuracy %.3f after 24 steps", vt_btard_attack_name(kinds[q]), g_acc);
        vt_btard_result_free(&r);
    }
}

/* The liar: it normalises its gradient with the statistics of a batch of
   its own choosing (its minibatch and as many images again, the way a peer
   would push "better" running statistics into the gradient it sends). */
static vt_ctx *g_liar;
static vt_status liar_loss(vt_ctx *c, void *model, uint64_t seed, int flip, void *user) {
    const vt_btard_cnn *t = (const vt_btard_cnn *)user;
    int B = t->batch, b;
    int64_t ys[1];
    float x[16 * 64];
    int32_t y[8];
    vt_tensor *lg;
    if (c != g_liar) return vt__bt_cnn_loss(c, model, seed, flip, user);
    for (b = 0; b < 2 * B; b++) {
        int k = (int)(vt_rng_u64(seed, b < B ? 0 : 2, (uint64_t)(b % B)) % (uint64_t)t->ntrain);
        int lab = vt__bt_cnn_image(t, 0, k, x + 64 * b);
        if (b < B) y[b] = lab;
    }
    ys[0] = B;
    lg = vt__bt_cnn_forward(c, (vt__bt_cnn_m *)model, t, vt__bt_cnn_images(c, t, 2 * B, x), 0.1);
    vt_backward(c, vt_cross_entropy(c, vt_split(c, lg, 0, 0, B), vt_from_i32(c, 1, ys, y)));
    return vt_status_of(c);
}

typedef struct { vt_btard_peer *p; int steps, done; } peer_job;
static void *run_peer(void *a) {
    peer_job *j = (peer_job *)a;
    while (j->done < j->steps && vt_btard_step(j->p) == VT_OK) j->done++;
    return NULL;
}

TEST(cnn_running_stats_identical_liar_banned) {
    int n = 5, i, k, steps = 14, liar = 4;
    vt_net **e = vt_net_inproc_create(n, 0);
    vt_btard_cfg cfg = small_cfg(7);
    vt_btard_task t = vt_btard_cnn_task(&g_cnn);
    vt_btard_peer *p[5];
    peer_job jb[5];
    pthread_t th[5];
    unsigned char d0[32], d1[32];
    float *rs0 = NULL, *rs1 = NULL;
    int64_t nr = 0, nr1 = 0, und = -1, und1 = -1;
    vt_btard_cnn other;
    t.loss = liar_loss;
    cfg.roster = g_roster;
    for (i = 0; i < n; i++) {
        cfg.key = &g_keys[i];
        p[i] = vt_btard_peer_create(&cfg, &t, e[i], NULL);
        jb[i].p = p[i]; jb[i].steps = steps; jb[i].done = 0;
    }
    g_liar = vt_btard_ctx(p[liar]);
    for (i = 0; i < n; i++) pthread_create(&th[i], NULL, run_peer, &jb[i]);
    for (i = 0; i < n; i++) pthread_join(th[i], NULL);
    vt_btard_digest(p[0], d0);
    for (i = 0; i < n; i++) {
        const vt_btard_event *ev;
        int q, nev, why = -1;
        if (i == liar) continue;
        CHECK(jb[i].done == steps, "peer %d stopped after %d steps: %s", i, jb[i].done, vt_btard_error(p[i]));
        vt_btard_digest(p[i], d1);
        CHECK(!memcmp(d0, d1, 32), "peer %d's weights or moments differ from peer 0's", i);
        for (k = 0; k < n; k++) CHECK(vt_btard_alive(p[i], k) == (k != liar), "peer %d: peer %d alive %d", i, k, vt_btard_alive(p[i], k));
        nev = vt_btard_events(p[i], &ev);
        for (q = 0; q < nev; q++) if (ev[q].kind == VT_EV_BAN && ev[q].peer == liar) why = (int)ev[q].reason;
        CHECK(why == VT_BAN_GRADIENT, "peer %d banned the liar for %d, want GRADIENT", i, why);
    }
    /* the running statistics, from the agreed weights: the same bits on every honest peer */
    CHECK(vt_btard_cnn_running(vt_btard_ctx(p[0]), vt_btard_model(p[0]), &g_cnn, NULL, &nr, NULL) == VT_OK, "%s", vt_last_error());
    CHECK(nr == 2 * (g_cnn.width + 2 * g_cnn.width), "%lld running statistics, want two (2,C) per norm", (long long)nr);
    rs0 = (float *)calloc((size_t)nr + 1, sizeof(float));
    rs1 = (float *)calloc((size_t)nr + 1, sizeof(float));
    vt_btard_cnn_running(vt_btard_ctx(p[0]), vt_btard_model(p[0]), &g_cnn, rs0, &nr, &und);
    for (i = 1; i < n; i++) {
        if (i == liar) continue;
        memset(rs1, 0, sizeof(float) * (size_t)nr);
        CHECK(vt_btard_cnn_running(vt_btard_ctx(p[i]), vt_btard_model(p[i]), &g_cnn, rs1, &nr1, NULL) == VT_OK && nr1 == nr, "peer %d", i);
        CHECK(!memcmp(rs0, rs1, sizeof(float) * (size_t)nr), "peer %d's running statistics differ from peer 0's", i);
    }
    /* they moved from their start (mean 0, variance 1) */
    for (k = 0, i = 0; i < g_cnn.width; i++) k += rs0[i] != 0.0f && rs0[g_cnn.width + i] != 1.0f;
    CHECK(k == g_cnn.width, "only %d of %d channels' statistics moved", k, g_cnn.width);
    /* in another reduction order: the same bits when no rounding was left undecided */
    other = g_cnn;
    other.eval_order = "threads:2,chaos:5,nofma";
    vt_btard_cnn_running(vt_btard_ctx(p[0]), vt_btard_model(p[0]), &other, rs1, &nr1, &und1);
    CHECK(und == 0 && und1 == 0, "%lld and %lld undecided roundings in the calibration", (long long)und, (long long)und1);
    CHECK(!memcmp(rs0, rs1, sizeof(float) * (size_t)nr), "the running statistics depend on the reduction order");
    /* the liar's own statistics-bent weights are not the swarm's */
    vt_btard_digest(p[liar], d1);
    CHECK(memcmp(d0, d1, 32) != 0 || jb[liar].done < steps, "the liar ended with the honest state");
    free(rs0); free(rs1);
    for (i = 0; i < n; i++) vt_btard_peer_destroy(p[i]);
    for (i = 0; i < n; i++) e[i]->destroy(e[i]);
}

/* a ResNet-18 swarm (4 peers, width 2, synthetic CIFAR-shaped images): the
   same invariant with twenty batch norms; one sign flipper banned */
TEST(resnet_swarm_identical) {
    vt_btard_cfg cfg = small_cfg(9);
    vt_btard_task t = vt_btard_cnn_task(&g_rn);
    vt_btard_attack a[4];
    vt_btard_result r;
    int i;
    cfg.validators = 3;
    for (i = 0; i < 4; i++) a[i] = vt_btard_attack_default(VT_ATTACK_NONE);
    a[3] = vt_btard_attack_default(VT_ATTACK_SIGN_FLIP);
    a[3].start = 1;
    vt_btard_simulate(&cfg, &t, 4, a, 6, NULL, NULL, &r);
    CHECK(r.status == VT_OK && r.steps == 6, "%s", r.message);
    CHECK(r.views_agree && r.honest_banned == 0, "honest peers disagree or were banned (%d)", r.honest_banned);
    CHECK(r.attackers_banned == 1 && r.ban_reason[3] == VT_BAN_GRADIENT, "the sign flipper: banned %d, for %s", r.attackers_banned,
          vt_btard_reason_name((vt_btard_reason)r.ban_reason[3]));
    vt_btard_result_free(&r);
}

/* The alternative the task rejects, shown to fail: a training model that
   moves per-peer running statistics (momentum 0.1, as on one machine).
   Every honest peer computes its gradient on its own minibatch, so their
   statistics - model state, in the digest - split at the first step,
   although the weights they commit to stay equal (nobody is banned). */
static void *state_init(vt_ctx *c, void *user) { return vt__bt_cnn_make(c, (const vt_btard_cnn *)user, 1); }
TEST(per_peer_running_stats_would_split) {
    vt_btard_cfg cfg = small_cfg(11);
    vt_btard_task t = vt_btard_cnn_task(&g_cnn);
    vt_btard_result r;
    t.init = state_init;
    vt_btard_simulate(&cfg, &t, 4, NULL, 2, NULL, NULL, &r);
    CHECK(r.status == VT_OK && r.steps == 2 && r.honest_banned == 0, "%s", r.message);
    CHECK(!r.views_agree, "per-peer running statistics left every honest peer's state identical");
    vt_btard_result_free(&r);
}

/* CIFAR-10 files written here: 20 records and no test_batch.bin (the last
   fifth is held out); then the same file truncated, and a label out of
   range: errors that name the file. And a missing directory, a batch of one. */
static void write_cifar(const char *path, int n, int cut, int badlab) {
    FILE *f = fopen(path, "wb");
    int r, k;
    for (r = 0; f && r < n; r++) {
        fputc(r == badlab ? 10 : r % 10, f);
        for (k = 0; k < 3072 - (r == n - 1 ? cut : 0); k++) fputc((r * 7 + k) & 255, f);
    }
    if (f) fclose(f);
}
TEST(cnn_task_bad_input) {
    vt_btard_cnn x;
    const char *dir = "build/test_btard_cnn_cifar";
    char path[256];
    mkdir("build", 0755);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/data_batch_1.bin", dir);
    write_cifar(path, 20, 0, -1);
    CHECK(vt_btard_cnn_cifar(&x, dir, 2, 4, 0) == VT_OK && x.ntrain == 16 && x.ntest == 4 && x.test.y[0] == 16 % 10 && !x.synthetic,
          "20 records: %s (train %d, test %d)", vt_last_error(), x.ntrain, x.ntest);
    vt_btard_cnn_free(&x);
    write_cifar(path, 20, 100, -1);
    CHECK(vt_btard_cnn_cifar(&x, dir, 2, 4, 0) == VT_ERR_TRUNCATED && strstr(vt_last_error(), "data_batch_1.bin"), "truncated: %s", vt_last_error());
    write_cifar(path, 20, 0, 3);
    CHECK(vt_btard_cnn_cifar(&x, dir, 2, 4, 0) != VT_OK && strstr(vt_last_error(), "record 3"), "label 10: %s", vt_last_error());
    CHECK(vt_btard_cnn_cifar(&x, "/nonexistent/cifar", 0, 0, 0) == VT_ERR_IO && strstr(vt_last_error(), "data_batch_1.bin"),
          "a missing directory: %s", vt_last_error());
    CHECK(vt_btard_cnn_digits(&x, "data/digits.csv", 0, 1, 0) == VT_ERR_ARG && strstr(vt_last_error(), "batch 1"),
          "batch 1: %s", vt_last_error());
    CHECK(vt_btard_cnn_digits(&x, "/nonexistent.csv", 0, 0, 0) != VT_OK && strstr(vt_last_error(), "nonexistent"), "%s", vt_last_error());
}

int main(int argc, char **argv) {
    TEST_FILTER(argc, argv);
    if (vt_btard_cnn_digits(&g_cnn, "data/digits.csv", 4, 8, 0.05) != VT_OK || vt_btard_cnn_cifar(&g_rn, NULL, 2, 4, 0.05) != VT_OK) {
        printf("cannot load the tasks (run from the repository root): %s\n0 passed, 1 failed\n", vt_last_error());
        return 1;
    }
    g_cnn.calib = 256;
    g_rn.calib = 64;
    g_rn.eval_n = 64;
    make_keys(8, 0xc11);
    RUN(cnn_gradient_replays_bit_exactly);
    RUN(cnn_task_bad_input);
    if (!vt_btard_can_sign()) {
        printf("skipped: btard cnn swarms: built without libsodium (VTRAIN_SODIUM): the swarms are not tested (apt-get install libsodium-dev)\n");
        vt_btard_cnn_free(&g_cnn);
        vt_btard_cnn_free(&g_rn);
        printf("%d passed, %d failed, 1 skipped\n", vt_test_pass, vt_test_fail);
        return vt_test_fail ? 1 : 0;
    }
    RUN(cnn_swarm_attackers_banned);
    RUN(cnn_running_stats_identical_liar_banned);
    RUN(resnet_swarm_identical);
    RUN(per_peer_running_stats_would_split);
    vt_btard_cnn_free(&g_cnn);
    vt_btard_cnn_free(&g_rn);
    return TEST_SUMMARY();
}
