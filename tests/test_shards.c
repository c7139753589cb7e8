/* tests/test_shards.c - shards in one process: the cross-shard sum, its
   rule, layouts emulated by the exchange, tampered contributions.

   A step split into S shards (SHARDS in vtrain.h) must give the same
   binary32 state, log and commitments whatever order the CPU sums in and
   whichever process computes which shard; one process audits it. The MPI
   runs of the same programs are tests/test_dp_mpi.c (tests/dp_run.sh). */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "test.h"
#include "../examples/digitsmlp.h"
#include "../examples/chargpt.h"

#define NSTEPS 6

static vt_digits g_digits;
static int g_digits_ok;
static chargpt g_gpt;
static int g_gpt_ok;

static int load_data(void) {
    if (!g_digits_ok) g_digits_ok = vt_digits_load("data/digits.csv", &g_digits) == VT_OK;
    if (!g_gpt_ok) {
        g_gpt_ok = chargpt_load(&g_gpt, "data/kjv_nt.txt") == VT_OK;
        g_gpt.cfg.layers = 1; g_gpt.cfg.heads = 2; g_gpt.cfg.width = 32;
        g_gpt.T = 16; g_gpt.B = 8; g_gpt.steps = NSTEPS;
    }
    return g_digits_ok && g_gpt_ok;
}

static digitsmlp mlp_app(int shards) {
    digitsmlp a = digitsmlp_new(&g_digits);
    a.nlayers = 2; a.sizes[0] = 64; a.sizes[1] = 32; a.sizes[2] = 10;
    a.act = 2; a.batch = 16; a.lr = 3e-3; a.lr_min = 3e-4; a.steps = NSTEPS; a.clip = 1.0; a.commit = 1;
    a.shards = shards;
    return a;
}

/* 1 if dir_a/name and dir_b/name hold the same bytes */
static int same_file(const char *da, const char *db, const char *name) {
    char pa[600], pb[600];
    size_t na = 0, nb = 0;
    unsigned char *a, *b;
    int same;
    snprintf(pa, sizeof pa, "%s/%s", da, name);
    snprintf(pb, sizeof pb, "%s/%s", db, name);
    a = slurp(pa, &na);
    b = slurp(pb, &nb);
    same = a && b && na == nb && !memcmp(a, b, na);
    free(a);
    free(b);
    return same;
}

/* 1 if two transcripts hold the same leaves (state, log chunk, batch per
   step): the same run, whatever order or layout the manifests name */
static int same_leaves(const char *da, const char *db) {
    vt_leaf_info *a = NULL, *b = NULL;
    int64_t na = -1, nb = -2, i;
    int same;
    vt_transcript_leaves(da, &a, &na);
    vt_transcript_leaves(db, &b, &nb);
    same = a && b && na == nb && na > 0;
    for (i = 0; same && i < na; i++) same = !memcmp(a[i].leaf, b[i].leaf, 32);
    vt_free_leaves(a);
    vt_free_leaves(b);
    return same;
}

/* a program: the MLP (gpt 0) or the character GPT (gpt 1), S shards (0: the plain step) */
static vt_program program(int gpt, int shards, digitsmlp *m) {
    if (gpt) { g_gpt.shards = shards; return chargpt_program(&g_gpt); }
    *m = mlp_app(shards);
    return digitsmlp_program(m);
}

static vt_status train(const char *dir, int gpt, int shards, vt_mode mode, const char *order, vt_report *r) {
    vt_desc d = vt_desc_default();
    digitsmlp m;
    vt_program p = program(gpt, shards, &m);
    rm_rf(dir);
    d.mode = mode;
    d.transcript = dir;
    d.shards = shards;
    d.ckpt_every = 3;
    vt_order_parse(&d.order, order);
    return vt_run(&d, &p, NSTEPS, r);
}

static vt_status audit(const char *dir, int gpt, const char *order, vt_report *r) {
    vt_desc d = vt_desc_default();
    digitsmlp m;
    vt_program p;
    if (vt_transcript_settings(dir, &d) != VT_OK) { memset(r, 0, sizeof *r); r->status = vt_last_status(); snprintf(r->message, sizeof r->message, "%s", vt_last_error()); return r->status; }
    unsigned char root[32], msha[32];
    int64_t n = NSTEPS;
    p = program(gpt, d.shards, &m);
    d.role = VT_ROLE_AUDIT;
    d.transcript = dir;
    vt_order_parse(&d.order, order);
    vt_transcript_root(dir, root, msha, &n); /* a run that stopped early: as far as it went */
    return vt_run(&d, &p, n, r);
}

/* Shards 1 is the plain step: the same transcript, byte for byte (the
   machinery moves the shard's gradient, records and batch bytes out and
   back, and the sum of one term is that term). */
TEST(one_shard_is_the_plain_step) {
    int g;
    if (!load_data()) { CHECK(0, "cannot load the data"); return; }
    for (g = 0; g < 2; g++) {
        vt_report a, b;
        train("build/sh_plain", g, 0, VT_MODE_VERIFIED, "threads:2", &a);
        train("build/sh_one", g, 1, VT_MODE_VERIFIED, "threads:2", &b);
        CHECK(a.status == VT_OK && b.status == VT_OK, "%s / %s", a.message, b.message);
        CHECK(same_file("build/sh_plain", "build/sh_one", "log.vtlog"), "%s: the logs differ", g ? "gpt" : "mlp");
        CHECK(same_file("build/sh_plain", "build/sh_one", "commits.bin"), "%s: the commitments differ", g ? "gpt" : "mlp");
        CHECK(same_file("build/sh_plain", "build/sh_one", "manifest.txt"), "%s: the manifests differ", g ? "gpt" : "mlp");
        CHECK(same_file("build/sh_plain", "build/sh_one", "root.txt"), "%s: the roots differ", g ? "gpt" : "mlp");
    }
}

/* S = 4 in one process, trained in two reduction orders: the same bytes in
   every file; audited in a third order: every step identical. */
TEST(four_shards_any_order) {
    int g;
    if (!load_data()) { CHECK(0, "cannot load the data"); return; }
    for (g = 0; g < 2; g++) {
        vt_report a, b, au;
        train("build/sh_a", g, 4, VT_MODE_VERIFIED, "threads:2", &a);
        train("build/sh_b", g, 4, VT_MODE_VERIFIED, "threads:1,chaos:7,block:48", &b);
        CHECK(a.status == VT_OK && b.status == VT_OK, "%s / %s", a.message, b.message);
        CHECK(same_file("build/sh_a", "build/sh_b", "log.vtlog"), "%s: the logs differ", g ? "gpt" : "mlp");
        CHECK(same_leaves("build/sh_a", "build/sh_b"), "%s: the leaves differ", g ? "gpt" : "mlp");
        audit("build/sh_a", g, "threads:1,chaos:3,nofma", &au);
        CHECK(au.status == VT_OK && au.root_steps == NSTEPS, "%s: audit: %s", g ? "gpt" : "mlp", au.message);
        CHECK(a.log.shard_values == (int64_t)NSTEPS * (g ? 0 : 64 * 32 + 32 + 32 * 10 + 10) || g, "mlp: %lld values summed", (long long)a.log.shard_values);
        NOTE("%s: %lld gradient values summed across shards, %lld of them exactly; %.3f s in the sums",
             g ? "gpt" : "mlp", (long long)a.log.shard_values, (long long)a.log.shard_exact, a.log.shard_seconds);
    }
}

/* the manifest records S; an auditor whose program has another S is
   refused by name; vt_transcript_settings reads S back */
TEST(manifest_records_the_shards) {
    vt_report r;
    vt_desc d = vt_desc_default();
    digitsmlp m;
    vt_program p;
    char v[64];
    if (!load_data()) { CHECK(0, "cannot load the data"); return; }
    train("build/sh_a", 0, 4, VT_MODE_VERIFIED, "threads:2", &r);
    CHECK(r.status == VT_OK, "%s", r.message);
    CHECK(vt_manifest_get("build/sh_a", "vtrain.shards", v, sizeof v) == VT_OK && !strcmp(v, "4"), "vtrain.shards = '%s'", v);
    CHECK(vt_transcript_settings("build/sh_a", &d) == VT_OK && d.shards == 4, "settings: shards %d", d.shards);
    d = vt_desc_default();
    p = program(0, 2, &m);
    d.role = VT_ROLE_AUDIT;
    d.transcript = "build/sh_a";
    d.shards = 2;
    vt_run(&d, &p, NSTEPS, &r);
    CHECK(r.status == VT_ERR_MISMATCH && strstr(r.message, "4 shards") && strstr(r.message, "has 2"), "%s", r.message);
    NOTE("%s", r.message);
}

/* --- the cross-shard sum's rule ---------------------------------------------- */

static double sum_of(const float *t, int S, int64_t *exact) {
    vt__shc sc[16];
    unsigned char b[16][4];
    int k, nan = 0;
    for (k = 0; k < S; k++) {
        vt__put_u32(b[k], vt__fbits(t[k]));
        sc[k].vals = b[k];
    }
    return vt__sh_sum(sc, S, 0, exact, &nan);
}

/* The value is RNE32 of the exact sum, whatever the order: 1 + 2^-24 +
   2^-70 lies just above the midpoint between 1 and 1 + 2^-23, but binary64
   addition in any order loses 2^-70 and lands on the midpoint, which
   rounds to even (1). The bound cannot decide, the exact sum can. */
TEST(cross_shard_sum_is_the_exact_sum_rounded) {
    float t[3] = {1.0f, 0x1p-24f, 0x1p-70f}, u[3] = {0x1p-70f, 0x1p-24f, 1.0f}, z[4] = {1.5f, -1.5f, 0x1p-149f, -0x1p-149f};
    float m0[2] = {-0.0f, -0.0f}, inf[3] = {INFINITY, 1.0f, -3.0f};
    int64_t exact = 0;
    double r = sum_of(t, 3, &exact), r2 = sum_of(u, 3, &exact), r0;
    CHECK(r == 1.0 + 0x1p-23 && r2 == r, "sum %.17g / %.17g, want 1 + 2^-23", r, r2);
    CHECK(exact == 2, "%lld exact sums, want 2", (long long)exact);
    r0 = sum_of(z, 4, &exact);
    CHECK(r0 == 0 && !signbit(r0), "an exact zero from cancelling terms is +0: %g", r0);
    r0 = sum_of(m0, 2, &exact);
    CHECK(r0 == 0 && signbit(r0), "-0 + -0 is -0: %g", r0);
    CHECK(isinf(sum_of(inf, 3, &exact)), "an infinite term gives infinity");
    { /* random terms with wide range and cancellation: every permutation gives the same bits */
        int i, k, bad = 0;
        for (i = 0; i < 20000; i++) {
            float a[5], p[5];
            double x0, x1;
            for (k = 0; k < 5; k++) {
                double v = (vt_rng_uniform(99, (uint64_t)i, (uint64_t)k) - 0.5) * ldexp(1.0, (int)(vt_rng_u64(98, (uint64_t)i, (uint64_t)k) % 60) - 30);
                a[k] = (float)v;
            }
            if (i % 3 == 0) a[4] = -(a[0] + a[1]); /* heavy cancellation */
            for (k = 0; k < 5; k++) p[k] = a[(k + 2 + (int)(vt_rng_u64(97, (uint64_t)i, 0) % 3)) % 5];
            x0 = sum_of(a, 5, &exact);
            x1 = sum_of(p, 5, &exact);
            if (vt__fbits((float)x0) != vt__fbits((float)x1)) bad++;
        }
        CHECK(bad == 0, "%d of 20000 permuted sums differ", bad);
    }
}

/* --- layouts and tampering through the exchange -------------------------------- */

typedef enum { EX_GROUPS, EX_TRUNCATE, EX_DUPLICATE, EX_DROP, EX_STEP, EX_BITFLIP } ex_kind;
typedef struct { ex_kind kind; int64_t at_step; } ex_cfg;

/* An exchange that plays another layout: every contribution gets the group
   (rank) it would have on two ranks with two shards each; and, from step
   at_step on, the tampering of `kind`. */
static vt_status fake_exchange(vt_ctx *c, void *user) {
    ex_cfg *x = (ex_cfg *)user;
    size_t at = 0, first_len = 0;
    vt__buf t = c->sh.all;
    c->sh.all = c->sh.mine;
    c->sh.mine = t;
    while (at + VT__SH_HDR <= c->sh.all.n) {
        unsigned char *h = c->sh.all.p + at;
        uint32_t k = vt__get_u32(h + 4);
        size_t len = VT__SH_HDR + (size_t)vt__get_u32(h + 12) + (size_t)vt__get_u64(h + 24) * vt__get_u32(h + 32) +
                     (size_t)(vt__get_u64(h + 44) + vt__get_u64(h + 52) + vt__get_u64(h + 60) + vt__get_u64(h + 68));
        vt__put_u32(h + 8, k / 2);
        if (!at) first_len = len;
        at += len;
    }
    if (c->step_no < x->at_step || x->kind == EX_GROUPS) return VT_OK;
    switch (x->kind) {
    case EX_TRUNCATE: c->sh.all.n -= 7; break;
    case EX_DUPLICATE: vt__buf_put(c, &c->sh.all, c->sh.all.p, first_len); break;
    case EX_DROP: memmove(c->sh.all.p, c->sh.all.p + first_len, c->sh.all.n - first_len); c->sh.all.n -= first_len; break;
    case EX_STEP: c->sh.all.p[16] ^= 1; break;
    case EX_BITFLIP: c->sh.all.p[VT__SH_HDR + 2 + 4 * 5] ^= 0x40; break; /* a gradient value of shard 0 */
    default: break;
    }
    return VT_OK;
}

static vt_status train_with(const char *dir, vt_mode mode, ex_cfg *x, vt_report *r) {
    vt_desc d = vt_desc_default();
    digitsmlp m = mlp_app(4);
    vt_program p = digitsmlp_program(&m);
    vt_ctx *c;
    rm_rf(dir);
    d.mode = mode;
    d.transcript = dir;
    d.shards = 4;
    d.ckpt_every = 3;
    vt_order_parse(&d.order, "threads:2");
    c = vt_create(&d);
    if (!c) { memset(r, 0, sizeof *r); r->status = vt_last_status(); return r->status; }
    c->sh.exchange = fake_exchange;
    c->sh.user = x;
    p.setup(c, p.user);
    vt_run_ctx(c, &p, NSTEPS, r);
    vt_destroy(c);
    return r->status;
}

/* Native mode sums the way a plain data-parallel trainer does (binary32,
   each rank's shards in turn, then the ranks pairwise): the layout changes
   its bits. Verified mode: the same bits in every layout. */
TEST(native_depends_on_the_layout_verified_does_not) {
    vt_report a, b, na, nb;
    ex_cfg x = {EX_GROUPS, 0};
    if (!load_data()) { CHECK(0, "cannot load the data"); return; }
    train("build/sh_a", 0, 4, VT_MODE_VERIFIED, "threads:2", &a);
    train_with("build/sh_b", VT_MODE_VERIFIED, &x, &b);
    CHECK(a.status == VT_OK && b.status == VT_OK, "%s / %s", a.message, b.message);
    CHECK(!memcmp(a.digest, b.digest, 32) && same_leaves("build/sh_a", "build/sh_b"), "verified: the layouts differ");
    train("build/sh_na", 0, 4, VT_MODE_NATIVE, "threads:2", &na);
    train_with("build/sh_nb", VT_MODE_NATIVE, &x, &nb);
    CHECK(na.status == VT_OK && nb.status == VT_OK, "%s / %s", na.message, nb.message);
    CHECK(memcmp(na.digest, nb.digest, 32) != 0, "native: one process and two emulated ranks gave the same bits (the test has no teeth)");
}

/* A contribution that is truncated, duplicated, missing, for another step
   or (from a trusted rank, unchecked) edited: a clear error at that step,
   the steps before stay committed and auditable, nothing of that step. */
TEST(tampered_contributions) {
    static const struct { ex_kind k; const char *want; } cases[] = {
        {EX_TRUNCATE, "truncated"}, {EX_DUPLICATE, "two contributions for shard 0"}, {EX_DROP, "no contribution for shard 0"},
        {EX_STEP, "for step 5"}};
    int i;
    if (!load_data()) { CHECK(0, "cannot load the data"); return; }
    for (i = 0; i < 4; i++) {
        vt_report r, au;
        ex_cfg x;
        x.kind = cases[i].k; x.at_step = 4;
        train_with("build/sh_t", VT_MODE_VERIFIED, &x, &r);
        CHECK(r.status != VT_OK && r.first_bad_step == 4 && strstr(r.message, "step 4") && strstr(r.message, cases[i].want),
              "case %d: %s (at step %lld)", i, r.message, (long long)r.first_bad_step);
        if (i == 0) NOTE("%s", r.message);
        audit("build/sh_t", 0, "threads:1", &au);
        CHECK(au.root_steps == 4 && au.steps == 4, "case %d: the transcript up to step 3: %lld steps audited, root covers %lld (%s)", i,
              (long long)au.steps, (long long)au.root_steps, au.message);
    }
    {   /* an edited gradient value from a rank (ranks trust each other; the
           commitments hold what rank 0 summed, and an auditor finds the step) */
        vt_report r, au;
        ex_cfg x;
        x.kind = EX_BITFLIP; x.at_step = 2;
        train_with("build/sh_t", VT_MODE_VERIFIED, &x, &r);
        CHECK(r.status == VT_OK, "%s", r.message);
        audit("build/sh_t", 0, "threads:1", &au);
        CHECK(au.status == VT_ERR_MISMATCH && au.first_bad_step == 2, "audit of an edited contribution: %s at %lld", au.message,
              (long long)au.first_bad_step);
    }
}

/* The dispute game over sharded transcripts: the judge re-executes the
   one differing step, all S shards in one process, with the trainer's log
   chunk. A trainer that committed an edited cross-shard sum (a lying rank)
   loses; an honest one against that transcript as the auditor wins. */
static vt_dispute_report dispute(const char *trainer, const char *auditor) {
    vt_desc d = vt_desc_default();
    digitsmlp m;
    vt_program p = program(0, 4, &m);
    vt_dispute_report r;
    memset(&r, 0, sizeof r);
    vt_order_parse(&d.order, "threads:1,chaos:12");
    if (vt_dispute_transcripts(&d, &p, trainer, auditor, &r) != VT_OK) {
        r.outcome = VT_DISPUTE_OPEN;
        snprintf(r.message, sizeof r.message, "vt_dispute_transcripts failed: %s", vt_last_error());
    }
    return r;
}

TEST(dispute_over_sharded_transcripts) {
    vt_report a, b;
    vt_dispute_report r;
    ex_cfg x;
    if (!load_data()) { CHECK(0, "cannot load the data"); return; }
    train("build/sh_honest", 0, 4, VT_MODE_VERIFIED, "threads:2", &a);
    x.kind = EX_BITFLIP; x.at_step = 2;
    train_with("build/sh_liar", VT_MODE_VERIFIED, &x, &b);
    CHECK(a.status == VT_OK && b.status == VT_OK, "%s / %s", a.message, b.message);
    r = dispute("build/sh_liar", "build/sh_honest");
    CHECK(r.verdict == VT_VERDICT_TRAINER_WRONG && r.step == 2, "lying trainer: verdict %d at step %lld: %s", (int)r.verdict, (long long)r.step, r.message);
    NOTE("%s", r.message);
    r = dispute("build/sh_honest", "build/sh_liar");
    CHECK(r.verdict == VT_VERDICT_AUDITOR_WRONG && r.step == 2, "honest trainer: verdict %d at step %lld: %s", (int)r.verdict, (long long)r.step, r.message);
}

/* calls out of order: clear errors, no abort */
static vt_status bad_step(vt_ctx *c, int64_t s, void *u) {
    int how = *(int *)u;
    (void)s;
    if (how == 0) return vt_status_of(c);           /* no shards at all */
    if (how == 1) { vt_shard_begin(c, 7); return vt_status_of(c); }
    if (how == 2) { vt_shard_begin(c, 1); return vt_status_of(c); }
    if (how == 3) { vt_shard_begin(c, 0); vt_shard_end(c); vt_shards_sum(c); return vt_status_of(c); }
    return vt_status_of(c);
}

TEST(misuse_is_an_error) {
    static const char *want[4] = {"without vt_shards_sum", "shards 0..1", "shard 0 comes next", "ran shards 0..0"};
    int how;
    for (how = 0; how < 4; how++) {
        vt_desc d = vt_desc_default();
        vt_program p;
        vt_report r;
        p.setup = NULL; p.step = bad_step; p.on_step = NULL; p.user = &how;
        d.shards = 2;
        vt_run(&d, &p, 1, &r);
        CHECK(r.status != VT_OK && strstr(r.message, want[how]), "case %d: %s", how, r.message);
    }
}

int main(int argc, char **argv) {
    TEST_FILTER(argc, argv);
    RUN(one_shard_is_the_plain_step);
    RUN(four_shards_any_order);
    RUN(manifest_records_the_shards);
    RUN(cross_shard_sum_is_the_exact_sum_rounded);
    RUN(native_depends_on_the_layout_verified_does_not);
    RUN(tampered_contributions);
    RUN(dispute_over_sharded_transcripts);
    RUN(misuse_is_an_error);
    return TEST_SUMMARY();
}
