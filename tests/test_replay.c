/* tests/test_replay.c - bit-exact replay across reduction orders, native
   divergence, round-only failure, tampering, calibrated bounds, and the
   empirical check of every op's bound. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "test.h"
#include "../examples/chargpt.h"
#include "../examples/digitsmlp.h"
#include "allops.h"

/* --- programs ------------------------------------------------------------- */

static vt_digits g_digits;
static digitsmlp g_mlp;
static chargpt g_gpt;

static vt_program mlp_program(void) { return digitsmlp_program(&g_mlp); }
static vt_program gpt_program(void) {
    /* a tiny character GPT: 2 layers, width 32, 2 heads, context 16, batch 4 */
    g_gpt.cfg.layers = 2; g_gpt.cfg.width = 32; g_gpt.cfg.heads = 2; g_gpt.T = 16; g_gpt.B = 4;
    g_gpt.steps = 200; g_gpt.lr = 3e-3;
    return chargpt_program(&g_gpt);
}
/* train with `train_order`, then audit with each of the other orders;
   returns the number of audits that matched every step */
static int train_audit(const vt_program *p, vt_mode mode, const char *log, int64_t steps, const char *train_order,
                       const char **orders, int norders, int64_t *first_bad, vt_report *trep) {
    vt_desc d = vt_desc_default();
    vt_report r;
    int k, ok = 0;
    d.mode = mode;
    d.log_path = log;
    vt_order_parse(&d.order, train_order);
    vt_run(&d, p, steps, trep ? trep : &r);
    CHECK((trep ? trep : &r)->status == VT_OK, "training (%s) failed: %s", vt_mode_name(mode), (trep ? trep : &r)->message);
    d.role = VT_ROLE_AUDIT;
    for (k = 0; k < norders; k++) {
        vt_order_parse(&d.order, orders[k]);
        vt_run(&d, p, steps, &r);
        if (r.status == VT_OK && r.steps == steps) ok++;
        if (first_bad) first_bad[k] = r.first_bad_step;
        if (mode == VT_MODE_VERIFIED)
            CHECK(r.status == VT_OK, "audit with order %s: %s", orders[k], r.message);
    }
    return ok;
}

static const char *orders4[4] = {"threads:1", "threads:3", "chaos:101,threads:2", "chaos:202,threads:1,block:37"};

TEST(mlp_replays_across_orders) {
    vt_report tr;
    vt_program p = mlp_program();
    int ok = train_audit(&p, VT_MODE_VERIFIED, "build/t_mlp.vtlog", 200, "threads:2", orders4, 4, NULL, &tr);
    CHECK(ok == 4, "%d of 4 audits matched", ok);
    NOTE("MLP, 200 steps: %lld log entries over %lld values (%.1f per million), %.0f log bytes per step", (long long)tr.log.entries,
         (long long)tr.log.values, 1e6 * (double)tr.log.entries / (double)tr.log.values, (double)tr.log.bytes / 200);
}

TEST(mlp_native_diverges) {
    int64_t bad[4];
    vt_program p = mlp_program();
    int ok = train_audit(&p, VT_MODE_NATIVE, "build/t_mlpn.vtlog", 200, "threads:2", orders4, 4, bad, NULL);
    CHECK(ok == 0, "native mode replayed under %d of 4 other orders: the orders are not really different", ok);
    NOTE("native MLP: first differing step per order: %lld %lld %lld %lld", (long long)bad[0], (long long)bad[1],
         (long long)bad[2], (long long)bad[3]);
}

TEST(gpt_replays_across_orders) {
    vt_report tr;
    vt_program p = gpt_program();
    int ok = train_audit(&p, VT_MODE_VERIFIED, "build/t_gpt.vtlog", 200, "threads:2", orders4, 4, NULL, &tr);
    CHECK(ok == 4, "%d of 4 audits matched", ok);
    NOTE("GPT, 200 steps: %lld log entries over %lld values (%.1f per million), %.0f log bytes per step", (long long)tr.log.entries,
         (long long)tr.log.values, 1e6 * (double)tr.log.entries / (double)tr.log.values, (double)tr.log.bytes / 200);
}

TEST(gpt_native_diverges) {
    int64_t bad[4];
    vt_program p = gpt_program();
    int ok = train_audit(&p, VT_MODE_NATIVE, "build/t_gptn.vtlog", 200, "threads:2", orders4, 4, bad, NULL);
    CHECK(ok == 0, "native mode replayed under %d of 4 other orders", ok);
    NOTE("native GPT: first differing step per order: %lld %lld %lld %lld", (long long)bad[0], (long long)bad[1],
         (long long)bad[2], (long long)bad[3]);
}

/* Least squares trained to its minimum: near the minimum each weight's
   gradient is the small sum of many large per-sample terms that cancel, so
   the order of that sum decides its rounding now and then. round-only (bound
   0, no log) then diverges under another order; verified replays it. */
typedef struct { vt_tensor *w; vt_optim *opt; float *x, *y; } lsq_app;
#define LSQ_IN 256
#define LSQ_OUT 64
#define LSQ_R 1024
static lsq_app g_lsq;

static vt_status lsq_setup(vt_ctx *c, void *u) {
    lsq_app *a = (lsq_app *)u;
    int64_t n[2] = {LSQ_OUT, LSQ_IN}, i;
    vt_sgd_desc sd = vt_sgd_default();
    a->w = vt_param(c, "w", 2, n);
    vt_init_normal(c, a->w, 1, 0, 0.01);
    sd.lr = 10; sd.momentum = 0.5;
    a->opt = vt_sgd_create(c, &sd);
    if (!a->x) {
        a->x = (float *)malloc(sizeof(float) * LSQ_R * LSQ_IN);
        a->y = (float *)malloc(sizeof(float) * LSQ_R * LSQ_OUT);
        for (i = 0; i < LSQ_R * LSQ_IN; i++) a->x[i] = (float)vt_rng_normal(5, 0, (uint64_t)i);
        for (i = 0; i < LSQ_R * LSQ_OUT; i++) a->y[i] = (float)vt_rng_normal(6, 0, (uint64_t)i);
    }
    return vt_status_of(c);
}

static vt_status lsq_step(vt_ctx *c, int64_t s, void *u) {
    lsq_app *a = (lsq_app *)u;
    int64_t xs[2] = {LSQ_R, LSQ_IN}, ys[2] = {LSQ_R, LSQ_OUT};
    (void)s;
    vt_backward(c, vt_mse(c, vt_linear(c, vt_from_f32(c, 2, xs, a->x), a->w, NULL), vt_from_f32(c, 2, ys, a->y)));
    vt_optim_step(c, a->opt, 10);
    return vt_status_of(c);
}

/* 32 steps: round-only's audits first differ at step 24 in both orders
   (least squares near its minimum puts many products on a boundary; each
   later step costs the verified runs thousands of exact evaluations) */
#define LSQ_STEPS 32
TEST(round_only_fails_verified_fixes) {
    const char *o[2] = {"chaos:3,threads:1", "threads:1,block:48"};
    int64_t bad[2];
    vt_program p;
    vt_desc d = vt_desc_default();
    vt_report r;
    int ok, k;
    p.setup = lsq_setup; p.step = lsq_step; p.on_step = NULL; p.user = &g_lsq;
    ok = train_audit(&p, VT_MODE_ROUND_ONLY, "build/t_lsq_ro.vtlog", LSQ_STEPS, "threads:2", o, 2, bad, NULL);
    CHECK(ok == 0, "round-only replayed %d steps under %d of 2 other orders", LSQ_STEPS, ok);
    NOTE("round-only: the audits first differ at steps %lld and %lld", (long long)bad[0], (long long)bad[1]);
    d.log_path = "build/t_lsq_v.vtlog";
    vt_order_parse(&d.order, "threads:2");
    vt_run(&d, &p, LSQ_STEPS, &r);
    CHECK(r.status == VT_OK, "verified training failed: %s", r.message);
    d.role = VT_ROLE_AUDIT;
    for (k = 0; k < 2; k++) {
        vt_order_parse(&d.order, o[k]);
        vt_run(&d, &p, LSQ_STEPS, &r);
        CHECK(r.status == VT_OK && r.steps == LSQ_STEPS, "verified audit in order %s: %s", o[k], r.message);
        /* what round-only lacked did the work: the products' boundary
           cases evaluated exactly (and log entries where the ops log) */
        CHECK(r.log.exact + r.log.corrections > 0, "order %s: nothing decided a boundary case", o[k]);
    }
    NOTE("verified audit (%s): %lld product values evaluated exactly, %lld log entries applied (%lld corrected the "
         "auditor's own rounding); final loss %.4f", o[1], (long long)r.log.exact, (long long)r.log.entries,
         (long long)r.log.corrections, r.last_loss);
    free(g_lsq.x);
    free(g_lsq.y);
    g_lsq.x = NULL; g_lsq.y = NULL;
}

/* Evaluation between steps (README: vt_eval_begin / vt_eval_end, nothing
   is logged there). A trainer that evaluates after every step (a forward
   pass and a loss on 64 held-out samples, no backward, no optimizer)
   writes the log and the commitments byte for byte as one that does not;
   its log audits in another order with an auditor that does not evaluate,
   and the other trainer's with one that does. */
static int64_t g_evals;
static double g_eval_loss;
static void mlp_eval(vt_ctx *c, int64_t s, void *u) {
    digitsmlp *a = (digitsmlp *)u;
    int64_t xs[2] = {64, 64}, ys[1] = {64};
    int32_t y[64];
    float loss = 0;
    int i;
    (void)s;
    for (i = 0; i < 64; i++) y[i] = g_digits.y[g_digits.n - 64 + i];
    vt_eval_begin(c);
    vt_read_f32(c, vt_cross_entropy(c, vt_mlp_forward(c, &a->m, vt_from_f32(c, 2, xs, g_digits.x + (g_digits.n - 64) * 64)), vt_from_i32(c, 1, ys, y)),
                &loss);
    vt_eval_end(c);
    g_eval_loss = loss;
    g_evals++;
}
TEST(evaluation_logs_nothing) {
    static const char *logs[2] = {"build/t_eval0.vtlog", "build/t_eval1.vtlog"}, *cm[2] = {"build/t_eval0.vtlog.commits", "build/t_eval1.vtlog.commits"};
    vt_program p = mlp_program();
    vt_report r;
    unsigned char *b[2], *cb[2];
    size_t n[2], cn[2];
    int k;
    for (k = 0; k < 2; k++) { /* k = 1: evaluates after every step */
        vt_desc d = vt_desc_default();
        d.log_path = logs[k];
        vt_order_parse(&d.order, "threads:2");
        p.on_step = k ? mlp_eval : NULL;
        g_evals = 0;
        vt_run(&d, &p, 40, &r);
        CHECK(r.status == VT_OK, "training (%s): %s", k ? "evaluating" : "not evaluating", r.message);
        if (k) CHECK(g_evals == 40 && g_eval_loss > 0 && g_eval_loss < 10, "%lld evaluations, the last loss %g", (long long)g_evals, g_eval_loss);
        b[k] = slurp(logs[k], &n[k]);
        cb[k] = slurp(cm[k], &cn[k]);
    }
    CHECK(b[0] && b[1] && n[0] == n[1] && !memcmp(b[0], b[1], n[0]), "the logs differ (%zu and %zu bytes): evaluation logged something", n[0], n[1]);
    CHECK(cb[0] && cb[1] && cn[0] == cn[1] && !memcmp(cb[0], cb[1], cn[0]), "the commitments differ (%zu and %zu bytes)", cn[0], cn[1]);
    for (k = 0; k < 2; k++) {
        vt_desc d = vt_desc_default();
        d.role = VT_ROLE_AUDIT;
        d.log_path = logs[k];
        vt_order_parse(&d.order, "threads:1,chaos:17");
        p.on_step = k ? NULL : mlp_eval; /* the evaluating trainer's log without evaluation, and the reverse */
        g_evals = 0;
        vt_run(&d, &p, 40, &r);
        CHECK(r.status == VT_OK && r.steps == 40, "audit of the %s trainer's log by an auditor that %s: %s", k ? "evaluating" : "plain",
              k ? "does not evaluate" : "evaluates", r.message);
        if (!k) CHECK(g_evals == 40, "the auditor evaluated %lld times", (long long)g_evals);
    }
    for (k = 0; k < 2; k++) { free(b[k]); free(cb[k]); }
}

/* --- crafted chunks: what a trainer who edits its log can write ----------- */

/* One step, every entry logged (values over 40 binades, so log_softmax
   logs some): x is trained by AdamW on sum(log_softmax(x) * w) + CE. */
enum { CR_R = 8, CR_C = 64 };
static float g_crx[CR_R * CR_C], g_crw[CR_R * CR_C];
static int32_t g_crt[CR_R];
static vt_tensor *g_crp;
static vt_optim *g_cro;
static vt_status crafted_setup(vt_ctx *c, void *u) {
    int64_t n[2] = {CR_R, CR_C};
    vt_adamw_desc ad = vt_adamw_default();
    (void)u;
    g_crp = vt_param(c, "x", 2, n);
    vt_write_f32(c, g_crp, g_crx);
    g_cro = vt_adamw_create(c, &ad);
    return vt_status_of(c);
}
static vt_status crafted_step(vt_ctx *c, int64_t s, void *u) {
    int64_t n[2] = {CR_R, CR_C}, nt[1] = {CR_R};
    vt_tensor *w = vt_from_f32(c, 2, n, g_crw), *tg = vt_from_i32(c, 1, nt, g_crt);
    (void)s; (void)u;
    vt_backward(c, vt_add(c, vt_sum(c, vt_mul(c, vt_log_softmax(c, g_crp), w)), vt_cross_entropy(c, g_crp, tg)));
    vt_optim_step(c, g_cro, 1e-3);
    return vt_status_of(c);
}
/* a chunk's records, decoded (the full form) and written back */
typedef struct { uint64_t kind, nd, dims[VT_MAX_DIMS], ne, v[64]; uint32_t pay[64]; } crafted_rec;
static int crafted_parse(const unsigned char *ch, crafted_rec *r, int max) {
    size_t q = 0, blen = (size_t)vt__get_u64(ch + 20);
    const unsigned char *b = ch + VT__CHUNK_HDR;
    int n = 0;
    uint64_t k;
    while (q < blen && n < max) {
        crafted_rec *x = &r[n++];
        vt__get_varint(b, blen, &q, &x->kind);
        vt__get_varint(b, blen, &q, &x->nd);
        for (k = 0; k < x->nd; k++) vt__get_varint(b, blen, &q, &x->dims[k]);
        vt__get_varint(b, blen, &q, &x->ne);
        if (x->ne > 64) return -1;
        for (k = 0; k < x->ne; k++) {
            vt__get_varint(b, blen, &q, &x->v[k]);
            if (x->v[k] & 1) { x->pay[k] = vt__get_u32(b + q); q += 4; }
            else x->pay[k] = b[q++];
        }
    }
    return n;
}
static size_t crafted_put_varint(unsigned char *p, uint64_t v) {
    size_t n = 0;
    do { unsigned char x = (unsigned char)(v & 127); v >>= 7; if (v) x |= 128; p[n++] = x; } while (v);
    return n;
}
/* the chunk of `nrec` records after the header of `orig`, counts and checksum made to fit */
static size_t crafted_build(const unsigned char *orig, const crafted_rec *r, int nrec, unsigned char *o) {
    unsigned char *b = o + VT__CHUNK_HDR;
    size_t q = 0;
    uint64_t k, nent = 0;
    int i;
    memcpy(o, orig, VT__CHUNK_HDR);
    for (i = 0; i < nrec; i++) {
        q += crafted_put_varint(b + q, r[i].kind);
        q += crafted_put_varint(b + q, r[i].nd);
        for (k = 0; k < r[i].nd; k++) q += crafted_put_varint(b + q, r[i].dims[k]);
        q += crafted_put_varint(b + q, r[i].ne);
        nent += r[i].ne;
        for (k = 0; k < r[i].ne; k++) {
            q += crafted_put_varint(b + q, r[i].v[k]);
            if (r[i].v[k] & 1) { vt__put_u32(b + q, r[i].pay[k]); q += 4; }
            else b[q++] = (unsigned char)r[i].pay[k];
        }
    }
    vt__put_u32(o + 12, (uint32_t)nrec);
    vt__put_u32(o + 16, (uint32_t)nent);
    vt__put_u64(o + 20, q);
    vt_sha256(o, VT__CHUNK_HDR + q, o + VT__CHUNK_HDR + q);
    return VT__CHUNK_HDR + q + 32;
}
/* an auditor of one step fed `ch`: its status and message */
static vt_status crafted_audit(vt_mode mode, const unsigned char *ch, size_t n, char *msg, size_t mn) {
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    vt_status st;
    d.mode = mode;
    d.log_memory = 1;
    d.role = VT_ROLE_AUDIT;
    vt_order_parse(&d.order, "threads:1,chaos:5");
    c = vt_create(&d);
    if (!c) { snprintf(msg, mn, "%s", vt_last_error()); return vt_last_status(); }
    crafted_setup(c, NULL);
    if (vt_feed_chunk(c, ch, n) == VT_OK && vt_step_begin(c) == VT_OK) crafted_step(c, 0, NULL);
    vt_step_end(c);
    st = vt_status_of(c);
    snprintf(msg, mn, "%s", vt_error_message(c));
    vt_destroy(c);
    return st;
}

/* Each is a chunk whose checksum and counts fit (a trainer can write them):
   the reader refuses an entry index past the point's end however large its
   delta (it was a signed overflow), a kind that is another kind modulo 2^32
   (or any kind no op has, named with the value the log holds),
   a varint with a needless zero byte (the same values from other bytes,
   another hash), and an auditor in a mode that reads no log refuses chunks
   rather than replaying without them. */
TEST(crafted_chunks_refused) {
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    const unsigned char *ch;
    unsigned char *orig = NULL, *o = (unsigned char *)malloc(1 << 16);
    size_t n = 0, m;
    crafted_rec *r = (crafted_rec *)malloc(sizeof(crafted_rec) * 64), *r2 = (crafted_rec *)malloc(sizeof(crafted_rec) * 64);
    int nrec, k, ri = -1;
    char msg[512];
    vt_status st;
    for (k = 0; k < CR_R * CR_C; k++) {
        uint64_t h = vt_rng_u64(1, (uint64_t)(k / CR_C), (uint64_t)(k % CR_C));
        g_crx[k] = (float)ldexp((h & 1 ? -1.0 : 1.0) * (1 + (double)((h >> 8) & 0xffffff) * 0x1p-24), (int)((h >> 40) % 40) - 20);
        g_crw[k] = (float)vt_rng_normal(2, (uint64_t)(k / CR_C), (uint64_t)(k % CR_C));
    }
    for (k = 0; k < CR_R; k++) g_crt[k] = k;
    d.log_memory = 1;
    vt_order_parse(&d.order, "threads:1");
    c = vt_create(&d);
    crafted_setup(c, NULL);
    vt_step_begin(c); crafted_step(c, 0, NULL); vt_step_end(c);
    if (vt_step_chunk(c, &ch, &n) == VT_OK) { orig = (unsigned char *)malloc(n); memcpy(orig, ch, n); }
    vt_destroy(c);
    CHECK(orig && n < (1 << 15), "no chunk");
    if (!orig) return;
    nrec = crafted_parse(orig, r, 64);
    CHECK(nrec > 0, "chunk not parsed");
    for (k = 0; k < nrec; k++)
        if (r[k].ne >= 2 && ri < 0) ri = k;
    CHECK(ri >= 0, "no record with two entries: the test's data no longer makes entries");
    /* the honest chunk, rebuilt, replays (the builder is faithful) */
    m = crafted_build(orig, r, nrec, o);
    CHECK(m == n && !memcmp(o, orig, n), "rebuilt chunk differs");
    st = crafted_audit(VT_MODE_VERIFIED, o, m, msg, sizeof msg);
    CHECK(st == VT_OK, "honest chunk: %s", msg);
    if (ri >= 0) { /* an index delta of 2^63 - 1 */
        memcpy(r2, r, sizeof(crafted_rec) * (size_t)nrec);
        r2[ri].v[1] = ((((uint64_t)1 << 63) - 1) << 1) | (r2[ri].v[1] & 1);
        m = crafted_build(orig, r2, nrec, o);
        st = crafted_audit(VT_MODE_VERIFIED, o, m, msg, sizeof msg);
        CHECK(st == VT_ERR_FORMAT && strstr(msg, "+ 9223372036854775807 is out of range"), "index delta 2^63-1: %s", msg);
    }
    { /* a kind + 2^32, and kinds past 2^31 and 2^63: refused, the kind named as the log has it */
        uint64_t kinds[3];
        kinds[0] = r[0].kind + ((uint64_t)1 << 32);
        kinds[1] = (uint64_t)1 << 31;
        kinds[2] = ~(uint64_t)0;
        for (k = 0; k < 3; k++) {
            char want[64];
            memcpy(r2, r, sizeof(crafted_rec) * (size_t)nrec);
            r2[0].kind = kinds[k];
            m = crafted_build(orig, r2, nrec, o);
            st = crafted_audit(VT_MODE_VERIFIED, o, m, msg, sizeof msg);
            snprintf(want, sizeof want, "log has kind %llu (no such op)[", (unsigned long long)kinds[k]);
            CHECK(st == VT_ERR_DESYNC && strstr(msg, want), "kind %llu: %s", (unsigned long long)kinds[k], msg);
        }
    }
    { /* the first record's count written with a needless zero byte */
        size_t q = 0, pos = VT__CHUNK_HDR, blen;
        uint64_t v, nd, kk;
        m = crafted_build(orig, r, nrec, o);
        blen = (size_t)vt__get_u64(o + 20);
        vt__get_varint(o + pos, blen, &q, &v);
        vt__get_varint(o + pos, blen, &q, &nd);
        for (kk = 0; kk < nd; kk++) vt__get_varint(o + pos, blen, &q, &v);
        memmove(o + pos + q + 2, o + pos + q + 1, blen - q - 1);
        o[pos + q] |= 0x80;
        o[pos + q + 1] = 0;
        vt__put_u64(o + 20, blen + 1);
        vt_sha256(o, VT__CHUNK_HDR + blen + 1, o + VT__CHUNK_HDR + blen + 1);
        st = crafted_audit(VT_MODE_VERIFIED, o, m + 1, msg, sizeof msg);
        CHECK(st == VT_ERR_FORMAT, "overlong varint: %s", msg);
    }
    { /* the decoder itself: one encoding per value */
        static const unsigned char over[2] = {0x81, 0x00}, big[10] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},
                                   top[10] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, zero[1] = {0};
        size_t q;
        uint64_t v;
        q = 0; CHECK(!vt__get_varint(over, 2, &q, &v), "overlong 1 accepted");
        q = 0; CHECK(!vt__get_varint(big, 10, &q, &v), "bits above 63 accepted");
        q = 0; CHECK(vt__get_varint(top, 10, &q, &v) && v == UINT64_MAX, "2^64 - 1 refused");
        q = 0; CHECK(vt__get_varint(zero, 1, &q, &v) && v == 0, "0 refused");
    }
    st = crafted_audit(VT_MODE_ROUND_ONLY, orig, n, msg, sizeof msg);
    CHECK(st == VT_ERR_STATE && strstr(msg, "reads no log"), "round-only auditor fed a chunk: %s", msg);
    st = crafted_audit(VT_MODE_NATIVE, (const unsigned char *)"garbage", 8, msg, sizeof msg);
    CHECK(st == VT_ERR_STATE && strstr(msg, "reads no log"), "native auditor fed junk: %s", msg);
    free(orig); free(o); free(r); free(r2);
}

/* A program whose steps round nothing (a relu of exact values) writes full
   chunks of no records and then short ones: its honest log audits (a short
   chunk after a full one with no records was refused as having none). A
   header naming op table 0 over avgpool2d records (op table 1) is refused,
   and a chaos auditor of a subnormal learning rate replays (its bits wrapped
   to NaN). */
static vt_tensor *g_zw;
static vt_optim *g_zo;
static double g_zlr;
static vt_status zero_setup(vt_ctx *c, void *u) {
    int64_t n[1] = {4};
    (void)u;
    g_zw = vt_param(c, "w", 1, n);
    vt_init_const(c, g_zw, 1.0);
    return vt_status_of(c);
}
static vt_status zero_step(vt_ctx *c, int64_t s, void *u) { (void)s; (void)u; vt_relu(c, g_zw); return vt_status_of(c); }
static vt_status pool_setup(vt_ctx *c, void *u) {
    int64_t n[4] = {1, 1, 4, 4};
    (void)u;
    g_zw = vt_param(c, "x", 4, n);
    vt_init_normal(c, g_zw, 1, 0, 1.0);
    g_zo = vt_sgd_create(c, NULL);
    return vt_status_of(c);
}
static vt_status pool_step(vt_ctx *c, int64_t s, void *u) {
    (void)s; (void)u;
    vt_backward(c, vt_sum(c, vt_avgpool2d(c, g_zw, 2, 2, 0)));
    vt_optim_step(c, g_zo, g_zlr);
    return vt_status_of(c);
}
TEST(log_edge_cases) {
    vt_desc d = vt_desc_default();
    vt_report r;
    vt_program z = {zero_setup, zero_step, NULL, NULL}, pz = {pool_setup, pool_step, NULL, NULL};
    size_t n;
    unsigned char *b;
    int k;
    d.log_path = "build/t_zero.vtlog";
    vt_run(&d, &z, 3, &r);
    CHECK(r.status == VT_OK && r.log.points == 0, "training: %s", r.message);
    d.role = VT_ROLE_AUDIT;
    vt_run(&d, &z, 3, &r);
    CHECK(r.status == VT_OK && r.steps == 3, "audit of a log with no records: %s", r.message);
    d = vt_desc_default();
    d.log_path = "build/t_table.vtlog";
    g_zlr = 0.1;
    vt_run(&d, &pz, 2, &r);
    CHECK(r.status == VT_OK, "training: %s", r.message);
    b = slurp(d.log_path, &n);
    CHECK(b && n > 48 && b[19] == 1, "the header's op table byte");
    if (b && n > 48) {
        uint32_t hl = vt__get_u32(b + 12);
        FILE *f;
        b[19] = 0; /* the header now names op table 0, its checksum made to fit */
        vt_sha256(b, 16 + hl, b + 16 + hl);
        f = fopen(d.log_path, "wb");
        if (f) { fwrite(b, 1, n, f); fclose(f); }
        d.role = VT_ROLE_AUDIT;
        vt_run(&d, &pz, 2, &r);
        CHECK(r.status == VT_ERR_FORMAT && strstr(r.message, "not in op table 0"), "op table 0 over avgpool2d: %s", r.message);
    }
    free(b);
    for (k = 0; k < 2; k++) {
        static const char *const ord[2] = {"chaos:1", "chaos:3"};
        d = vt_desc_default();
        d.log_path = "build/t_lr.vtlog";
        g_zlr = k ? 1.5e-323 : 4.9406564584124654e-324;
        vt_run(&d, &pz, 2, &r);
        CHECK(r.status == VT_OK, "training with lr %g: %s", g_zlr, r.message);
        d.role = VT_ROLE_AUDIT;
        vt_order_parse(&d.order, ord[k]);
        vt_run(&d, &pz, 2, &r);
        CHECK(r.status == VT_OK, "chaos audit with lr %g: %s", g_zlr, r.message);
    }
}

/* chunks in memory (no files): the trainer hands each step's chunk over,
   the auditor is fed them one by one; state digests agree every step */
TEST(memory_chunks_replay) {
    vt_desc dt = vt_desc_default(), da = vt_desc_default();
    vt_ctx *t, *a;
    vt_program p = mlp_program();
    digitsmlp ua = g_mlp, ub = g_mlp; /* one app per context: setup stores the model in it */
    int64_t s;
    int same = 1;
    dt.log_memory = 1;
    vt_order_parse(&dt.order, "threads:2");
    da.log_memory = 1;
    da.role = VT_ROLE_AUDIT;
    vt_order_parse(&da.order, "threads:1,chaos:77");
    t = vt_create(&dt);
    a = vt_create(&da);
    p.setup(t, &ua);
    p.setup(a, &ub);
    for (s = 0; s < 60 && same; s++) {
        const unsigned char *ch;
        size_t n;
        unsigned char d1[32], d2[32], s1[32], s2[32];
        vt_step_begin(t); p.step(t, s, &ua); vt_step_end(t);
        CHECK(vt_step_chunk(t, &ch, &n) == VT_OK && n >= 60, "no chunk after step %lld", (long long)s);
        vt_feed_chunk(a, ch, n);
        vt_step_begin(a); p.step(a, s, &ub); vt_step_end(a);
        CHECK(vt_status_of(a) == VT_OK, "audit step %lld: %s", (long long)s, vt_error_message(a));
        vt_weights_digest(t, d1);
        vt_weights_digest(a, d2);
        vt_step_chunk_sha(t, s1);
        vt_step_chunk_sha(a, s2);
        same = !memcmp(d1, d2, 32) && !memcmp(s1, s2, 32) && vt_status_of(a) == VT_OK;
    }
    CHECK(same, "state or chunk hash differs at step %lld", (long long)(s - 1));
    /* a missing or damaged chunk is an error, not a silent replay */
    vt_step_begin(a);
    CHECK(vt_status_of(a) == VT_ERR_STATE && strstr(vt_error_message(a), "no log chunk"), "%s", vt_error_message(a));
    vt_clear_error(a);
    {
        const unsigned char *ch;
        size_t n;
        unsigned char bad[64];
        vt_step_chunk(t, &ch, &n);
        memcpy(bad, ch, sizeof bad);
        vt_feed_chunk(a, bad, sizeof bad);
        vt_step_end(a);
        vt_clear_error(a);
        vt_step_begin(a);
        CHECK(vt_status_of(a) == VT_ERR_TRUNCATED || vt_status_of(a) == VT_ERR_DESYNC, "%s", vt_error_message(a));
    }
    vt_destroy(t);
    vt_destroy(a);
}

/* the table calibrated_and_probabilistic measured and trained with (calibrated_forgery_refused) */
static vt_calib g_cal;

/* Calibrated bounds (measured on two chaos orders, margin 8) replay exactly
   under those orders and log far less than the sound bound; the
   probabilistic bound (lambda = 12) replays under orders it never saw. */
TEST(calibrated_and_probabilistic) {
    vt_desc d = vt_desc_default();
    vt_program p = gpt_program();
    vt_order o[2];
    vt_calib t;
    vt_report tr, r;
    const char *cal_orders[2] = {"chaos:21,threads:1", "chaos:22,threads:2"};
    const char *unseen[2] = {"chaos:31,threads:1", "threads:1,block:11"};
    int k;
    vt_order_parse(&o[0], cal_orders[0]);
    vt_order_parse(&o[1], cal_orders[1]);
    vt_order_parse(&d.order, "threads:2");
    CHECK(vt_calibrate(&d, &p, 5, o, 2, 8.0, &t) == VT_OK, "calibration: %s", vt_last_error());
    d.bound = VT_BOUND_CALIBRATED;
    d.calib = &t;
    d.log_path = "build/t_cal.vtlog";
    vt_run(&d, &p, 200, &tr);
    CHECK(tr.status == VT_OK, "calibrated training: %s", tr.message);
    d.role = VT_ROLE_AUDIT;
    d.calib = NULL; /* the auditor reads the table from the log */
    for (k = 0; k < 2; k++) {
        vt_order_parse(&d.order, cal_orders[k]);
        vt_run(&d, &p, 200, &r);
        CHECK(r.status == VT_OK, "calibrated audit under %s: %s", cal_orders[k], r.message);
    }
    NOTE("calibrated (%d points, margin 8): %lld entries over %lld values (%.2f per million), %.0f log bytes per step",
         t.count, (long long)tr.log.entries, (long long)tr.log.values, 1e6 * (double)tr.log.entries / (double)tr.log.values,
         (double)tr.log.bytes / 200);
    vt_calib_free(&g_cal);
    g_cal = t;
    d = vt_desc_default();
    d.bound = VT_BOUND_PROBABILISTIC;
    d.log_path = "build/t_prob.vtlog";
    vt_order_parse(&d.order, "threads:2");
    vt_run(&d, &p, 200, &tr);
    CHECK(tr.status == VT_OK, "probabilistic training: %s", tr.message);
    d.role = VT_ROLE_AUDIT;
    for (k = 0; k < 2; k++) {
        vt_order_parse(&d.order, unseen[k]);
        vt_run(&d, &p, 200, &r);
        CHECK(r.status == VT_OK, "probabilistic audit under %s: %s", unseen[k], r.message);
    }
    NOTE("probabilistic (lambda 12): %lld entries over %lld values (%.2f per million), %.0f log bytes per step",
         (long long)tr.log.entries, (long long)tr.log.values, 1e6 * (double)tr.log.entries / (double)tr.log.values,
         (double)tr.log.bytes / 200);
}

/* --- tampering ----------------------------------------------------------------- */

/* offset of chunk `step` in a log file (-1 if absent); header is 16 + len + 32 bytes */
static long chunk_at(const unsigned char *b, size_t n, int64_t step) {
    size_t p = 16 + vt__get_u32(b + 12) + 32;
    while (p + VT__CHUNK_HDR <= n) {
        uint64_t st = vt__get_u64(b + p + 4), len = vt__get_u64(b + p + 20);
        if ((int64_t)st == step) return (long)p;
        p += VT__CHUNK_HDR + len + 32;
    }
    return -1;
}
static void reseal_chunk(unsigned char *b, long at) {
    uint64_t len = vt__get_u64(b + at + 20);
    vt_sha256(b + at, VT__CHUNK_HDR + len, b + at + VT__CHUNK_HDR + len);
}

/* the commitment record of `step` in a commits file; rewrite its chunk hash */
static void recommit_chunk(const char *cpath, int64_t step, const unsigned char sha[32]) {
    size_t n, p = VT__COMMIT_HDR;
    unsigned char *b = slurp(cpath, &n);
    while (b && p + 112 <= n) {
        uint32_t nt = vt__get_u32(b + p + 108);
        size_t len = 112 + 32 * (size_t)nt;
        if ((int64_t)vt__get_u64(b + p + 4) == step) {
            memcpy(b + p + 44, sha, 32);
            vt_sha256(b + p, len, b + p + len);
            spit(cpath, b, n);
            break;
        }
        p += len + 32;
    }
    free(b);
}

/* an audit of the GPT log's first `steps` steps */
static vt_report audit_gpt_n(const char *log, int64_t steps) {
    vt_desc d = vt_desc_default();
    vt_program p = gpt_program();
    vt_report r;
    d.role = VT_ROLE_AUDIT;
    d.log_path = log;
    vt_order_parse(&d.order, "threads:1,chaos:9");
    vt_run(&d, &p, steps, &r);
    return r;
}
static vt_report audit_gpt(const char *log) { return audit_gpt_n(log, 200); }

/* skips a record at *pos (a short one in a "VTCR" chunk has no header);
   returns the offset of entry `want` (counted across calls in *seen) or 0 */
static size_t walk_record(const unsigned char *b, size_t end, size_t *pos, int shortrec, int want, int *seen, int *full) {
    uint64_t kind = 0, nd = 0, d = 0, ne = 0, v = 0, k;
    size_t hit = 0;
    if (!shortrec) {
        vt__get_varint(b, end, pos, &kind);
        vt__get_varint(b, end, pos, &nd);
        for (k = 0; k < nd; k++) vt__get_varint(b, end, pos, &d);
    }
    vt__get_varint(b, end, pos, &ne);
    for (k = 0; k < ne; k++) {
        vt__get_varint(b, end, pos, &v);
        if (!hit && (*seen)++ == want) { hit = *pos; *full = (int)(v & 1); }
        *pos += (v & 1) ? 4 : 1;
    }
    return hit;
}

/* the k-th entry of the log: its step, the byte offset of its value, full flag */
static long nth_entry(const unsigned char *b, size_t n, int kth, int64_t *step, int *full) {
    int64_t s;
    int seen = 0;
    for (s = 0;; s++) {
        long at = chunk_at(b, n, s);
        size_t pos, end, hit;
        int shortrec;
        if (at < 0) return -1;
        shortrec = !memcmp(b + at, "VTCR", 4);
        pos = (size_t)at + VT__CHUNK_HDR;
        end = pos + vt__get_u64(b + at + 20);
        while (pos < end)
            if ((hit = walk_record(b, end, &pos, shortrec, kth, &seen, full)) != 0) { *step = s; return (long)hit; }
    }
}

/* the rounding point of the k-th entry of the log, named as vtrain's messages name it
   (vt__pt_name: kind and shape; a "VTCR" chunk reuses the last full chunk's record
   headers); 0 if there is no such entry */
static int entry_point_name(const unsigned char *b, size_t n, int kth, char *name, size_t nn) {
    enum { MAXREC = 4096 };
    static int kinds[MAXREC], nds[MAXREC];
    static int64_t dims[MAXREC][VT_MAX_DIMS];
    int64_t s;
    int seen = 0;
    for (s = 0;; s++) {
        long at = chunk_at(b, n, s);
        size_t pos, end;
        int shortrec, ri = 0;
        if (at < 0) return 0;
        shortrec = !memcmp(b + at, "VTCR", 4);
        pos = (size_t)at + VT__CHUNK_HDR;
        end = pos + vt__get_u64(b + at + 20);
        for (; pos < end && ri < MAXREC; ri++) {
            uint64_t kind, nd, dv, ne = 0, v, k;
            if (!shortrec) {
                vt__get_varint(b, end, &pos, &kind);
                vt__get_varint(b, end, &pos, &nd);
                kinds[ri] = (int)kind;
                nds[ri] = (int)(nd < VT_MAX_DIMS ? nd : VT_MAX_DIMS);
                for (k = 0; k < nd; k++) { vt__get_varint(b, end, &pos, &dv); if (k < VT_MAX_DIMS) dims[ri][k] = (int64_t)dv; }
            }
            vt__get_varint(b, end, &pos, &ne);
            for (k = 0; k < ne; k++) {
                vt__get_varint(b, end, &pos, &v);
                if (seen++ == kth) { vt__pt_name(kinds[ri], nds[ri], dims[ri], name, nn); return 1; }
                pos += (v & 1) ? 4 : 1;
            }
        }
    }
}

/* copy log `src` and its commitments to `dst` with entry k rewritten:
   delta 1 moves it to its neighbouring binary32 value; delta 128 moves it
   far (128 keys for a compact entry, whose plausible interval is narrower;
   an exponent bit for a full one); its chunk resealed and, with recommit,
   the trainer's commitment to the chunk rewritten, as a trainer lying
   consistently would. Returns the entry's step, -1 if there is none. */
static int64_t tamper_copy(const char *src, const char *dst, int kth, int delta, int recommit) {
    char sc[256], dc[256];
    size_t n, cn;
    unsigned char *b, *cb;
    int full = 0;
    long off, at;
    int64_t step = -1;
    snprintf(sc, sizeof sc, "%s.commits", src);
    snprintf(dc, sizeof dc, "%s.commits", dst);
    b = slurp(src, &n);
    cb = slurp(sc, &cn);
    off = b ? nth_entry(b, n, kth, &step, &full) : -1;
    if (off < 0 || !cb) { free(b); free(cb); return -1; }
    if (full) vt__put_u32(b + off, delta == 1 ? vt__get_u32(b + off) + 1 : vt__get_u32(b + off) ^ 0x20000000u);
    else b[off] = (unsigned char)(b[off] + delta);
    at = chunk_at(b, n, step);
    reseal_chunk(b, at);
    spit(dst, b, n);
    spit(dc, cb, cn);
    if (recommit) recommit_chunk(dc, step, b + at + VT__CHUNK_HDR + vt__get_u64(b + at + 20));
    free(b);
    free(cb);
    return step;
}

/* entry k of the GPT log rewritten (tamper_copy; its chunk's commitment rewritten with
   recommit), then audited to the end of its step (the steps after replay alike when the
   state after it is the committed one) */
static vt_report tamper_entry_c(int kth, int delta, int recommit, int64_t *step) {
    vt_report r;
    memset(&r, 0, sizeof r);
    *step = tamper_copy("build/t_gpt.vtlog", "build/t_gpt_tamper.vtlog", kth, delta, recommit);
    if (*step < 0) { r.status = VT_ERR_ARG; return r; }
    return audit_gpt_n("build/t_gpt_tamper.vtlog", *step + 1);
}
static vt_report tamper_entry(int kth, int delta, int64_t *step) { return tamper_entry_c(kth, delta, 1, step); }

/* An entry moved far outside the auditor's plausible interval is flagged as
   implausible at its step. An entry moved to its neighbouring binary32
   value (still plausible) either changes the weights, and the audit fails at
   exactly that step, or it changes nothing the step commits to. */
/* A product's bound computed only where the rounding point looks (vt__lazy)
   must log exactly what the written-out bound logs. */
/* The same at the primitive: a rounding point whose every 7th value sits
   on a binary32 midpoint, rounded on two threads whose worker stalls: the
   entries come out in index order, exactly the expected ones. */
/* n binary32 values from 1 up, every 7th moved onto the midpoint above
   it, each with a tiny bound: a rounding point logs exactly the 7th ones */
static void seventh_midpoints(int64_t n, double **x, double **e) {
    int64_t i;
    *x = (double *)malloc(sizeof(double) * (size_t)n);
    *e = (double *)malloc(sizeof(double) * (size_t)n);
    for (i = 0; i < n; i++) {
        float f = 1.0f + (float)i * 0x1p-23f;
        (*x)[i] = (double)f + (i % 7 == 0 ? 0x1p-24 : 0.0);
        (*e)[i] = 1e-12;
    }
}
/* a copy of those rounded on c, checked: no NaN, and the entries exactly
   0, 7, 14, ... in order (*k set at the first wrong one) */
static void round_seventh_checked(vt_ctx *c, const double *x, const double *e, int64_t n, vt__ents *out, int64_t *k) {
    double *y = (double *)malloc(sizeof(double) * (size_t)n);
    int64_t bad, i;
    memcpy(y, x, sizeof(double) * (size_t)n);
    out->n = 0;
    bad = vt__cpu_round(c, y, e, n, 1.0, 0, out);
    free(y);
    CHECK(bad < 0, "a NaN at %lld", (long long)bad);
    CHECK(out->n == (n + 6) / 7, "%lld entries, want %lld", (long long)out->n, (long long)((n + 6) / 7));
    for (i = 0; i < out->n && *k == 0; i++)
        if (out->e[i].i != 7 * i) { *k = 1; CHECK(0, "entry %lld has index %lld, want %lld", (long long)i, (long long)out->e[i].i, (long long)(7 * i)); }
}
TEST(stalled_threads_entries_in_order) {
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    int64_t n = 1 << 18, k = 0, bad;
    int r;
    double *x, *e;
    vt__ents out;
    memset(&out, 0, sizeof out);
    vt_order_parse(&d.order, "threads:2");
    c = vt_create(&d);
    seventh_midpoints(n, &x, &e);
    vt__pool_stall_us = 100;
    vt__pool_lent = 0;
    for (r = 0; r < 200 && !k && (r < 5 || !vt__pool_lent); r++) /* until the caller has taken the worker's chunks */
        round_seventh_checked(c, x, e, n, &out, &k);
    /* the first NaN, whichever thread met which first: two NaNs near the
       back of the worker's chunks (of 16); the caller takes those from the
       back, so it meets the later one first */
    x[n - 5] = NAN; x[n / 16 * 13 + 3] = NAN;
    for (r = 0; r < 20; r++) {
        double *y = (double *)malloc(sizeof(double) * (size_t)n);
        memcpy(y, x, sizeof(double) * (size_t)n);
        out.n = 0;
        bad = vt__cpu_round(c, y, e, n, 1.0, 0, &out);
        CHECK(bad == n / 16 * 13 + 3, "round: first NaN reported at %lld, want %lld", (long long)bad, (long long)(n / 16 * 13 + 3));
        memcpy(y, x, sizeof(double) * (size_t)n);
        bad = vt__cpu_cast(c, y, n, r & 1);
        CHECK(bad == n / 16 * 13 + 3, "cast (check only %d): first NaN reported at %lld, want %lld", r & 1, (long long)bad,
              (long long)(n / 16 * 13 + 3));
        free(y);
    }
    vt__pool_stall_us = 0;
    CHECK(vt__pool_lent > 0, "the stalls never made the caller take a worker's chunk: the test tests nothing");
    free(out.e); free(x); free(e);
    vt_destroy(c);
}

/* A CROWDED MACHINE: a worker that stalls for milliseconds inside a chunk
   (as one that loses its core to another process) sends the pool's next
   jobs to the caller alone for a spell, and every result stays what it
   was; after the spell the jobs go to the pool again. The rounding point's
   jobs under the stall hook check the results; a job whose tasks sleep (1
   ms each, and 200 ms more on a worker: far more than four times the
   caller's share, with or without a sanitizer) makes the stall certain. */
typedef struct { int ran[16]; } crowded_job;
static void crowded_sleep_task(void *arg, int64_t lo, int64_t hi, int tid) {
    struct timespec ts = {0, 1000000}, stall = {0, 200000000};
    int64_t i;
    if (tid != 0) nanosleep(&stall, NULL);
    for (i = lo; i < hi; i++) {
        nanosleep(&ts, NULL);
        ((crowded_job *)arg)->ran[i]++;
    }
}
static void crowded_dummy_task(void *arg, int64_t lo, int64_t hi, int tid) { /* (no stall) */
    int64_t i;
    (void)tid;
    for (i = lo; i < hi; i++) ((crowded_job *)arg)->ran[i]++;
}
/* past the longest spell (256 ms), one job of 16 tasks of fn: every task
   must run once; the number of jobs that ran on the caller alone meanwhile */
static int64_t crowded_job_after_spell(vt_ctx *c, vt__task_fn fn) {
    struct timespec wait = {0, 300000000};
    crowded_job job;
    int64_t i, before;
    nanosleep(&wait, NULL);
    before = vt__pool_solo;
    memset(&job, 0, sizeof job);
    vt__parallel(&c->pool, 16, 1 << 20, fn, &job);
    for (i = 0; i < 16; i++) CHECK(job.ran[i] == 1, "task %lld ran %d times", (long long)i, job.ran[i]);
    return vt__pool_solo - before;
}
TEST(crowded_pool_runs_solo_same_results) {
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    int64_t n = 1 << 16, i, k = 0;
    int r;
    double *x, *e;
    crowded_job job;
    vt__ents out;
    memset(&out, 0, sizeof out);
    vt_order_parse(&d.order, "threads:2");
    c = vt_create(&d);
    seventh_midpoints(n, &x, &e);
    vt__pool_solo_on = 1;
    vt__pool_solo = 0;
    vt__pool_os = 0; /* (the OS's word on the machine: crowded_os_extends_spells) */
    for (r = 0; r < 30 && !k; r++) { /* stalls of 0 to 15 ms before a worker's chunk, and a job of the sleeping
                                        kind every third round to make sure some jobs run on the caller alone */
        if (r % 3 == 0) { /* two at once: the second starts within the spell the first began */
            crowded_job j2;
            memset(&job, 0, sizeof job);
            memset(&j2, 0, sizeof j2);
            vt__parallel(&c->pool, 16, 1 << 20, crowded_sleep_task, &job);
            vt__parallel(&c->pool, 16, 1 << 20, crowded_sleep_task, &j2);
            for (i = 0; i < 16; i++) CHECK(job.ran[i] == 1 && j2.ran[i] == 1, "task %lld ran %d and %d times", (long long)i, job.ran[i], j2.ran[i]);
        }
        vt__pool_stall_us = 5000;
        round_seventh_checked(c, x, e, n, &out, &k);
        vt__pool_stall_us = 0;
        if (vt__pool_solo >= 3 && r >= 5) break;
    }
    CHECK(vt__pool_solo > 0, "stalls of 200 ms never sent a job to the caller alone");
    NOTE("%lld jobs on the caller alone in %d rounds", (long long)vt__pool_solo, r);
    CHECK(crowded_job_after_spell(c, crowded_sleep_task) == 0, "a job after the spell still ran on the caller alone");
    vt__pool_solo_on = 0;
    vt__pool_os = -1;
    free(out.e); free(x); free(e);
    vt_destroy(c);
}

/* At a spell's end the pool asks the OS whether the machine is still
   crowded (vt__os_crowded): while it says so, the next spell follows
   without a parallel job; once it does not, the pool is back after the
   spell. The answer read from /proc/loadavg's fourth field. */
TEST(crowded_os_extends_spells) {
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    int r;
    crowded_job job;
    CHECK(vt__loadavg_running("0.52 0.58 0.59 3/467 12345\n") == 3, "the running count of a loadavg line");
    CHECK(vt__loadavg_running("12.00 9.10 8.00 17/2000 1") == 17, "two-digit counts");
    CHECK(vt__loadavg_running("0.52 0.58 0.59 3") == -1, "a count without its total");
    CHECK(vt__loadavg_running("0.52 0.58 3/467 12345") == -1, "a line with a field short");
    CHECK(vt__loadavg_running("") == -1 && vt__loadavg_running("x y z w/1") == -1, "garbage");
    vt_order_parse(&d.order, "threads:2");
    c = vt_create(&d);
    vt__pool_solo_on = 1;
    vt__pool_os = 1;
    vt__pool_solo = 0;
    for (r = 0; r < 10 && vt__pool_solo == 0; r++) { /* a stalled worker (200 ms) starts a spell */
        memset(&job, 0, sizeof job);
        vt__parallel(&c->pool, 16, 1 << 20, crowded_sleep_task, &job);
        vt__parallel(&c->pool, 16, 1 << 20, crowded_sleep_task, &job);
    }
    CHECK(vt__pool_solo > 0, "stalls of 200 ms never sent a job to the caller alone");
    /* a job after the spell finds the machine crowded still */
    CHECK(crowded_job_after_spell(c, crowded_sleep_task) == 1,
          "a job after a spell, the OS saying crowded, did not run on the caller alone");
    vt__pool_os = 0; /* the other process gone: the pool back after this spell */
    CHECK(crowded_job_after_spell(c, crowded_dummy_task) == 0, "a job after the last spell still ran on the caller alone");
    vt__pool_solo_on = 0;
    vt__pool_os = -1;
    vt_destroy(c);
}

/* The pool hands out chunks to whichever thread is free (>>threads). With
   workers stalled before their chunks, as threads that lose their core to
   another process, the caller runs chunks out of turn: the log and every
   step's state must be byte-identical to an unstalled run with the same
   order. */
static vt_program gpt_program_wide(void) {
    /* wide enough (8 x 32 x 64 outputs) that rounding points run on the pool */
    vt_program p = gpt_program();
    g_gpt.cfg.width = 64; g_gpt.T = 32; g_gpt.B = 8;
    /* the batch buffers were sized for the smaller B*T of an earlier
       program: chargpt_setup makes them again for this one */
    free(g_gpt.x); free(g_gpt.y);
    g_gpt.x = g_gpt.y = NULL;
    return p;
}

TEST(stalled_threads_same_log) {
    vt_desc d = vt_desc_default();
    vt_report r1, r2;
    vt_program p = gpt_program_wide();
    unsigned char *a, *b;
    size_t na, nb;
    d.log_path = "build/t_stall1.vtlog";
    vt_order_parse(&d.order, "threads:2");
    vt_run(&d, &p, 8, &r1);
    vt__pool_stall_us = 100;
    vt__pool_lent = 0;
    p = gpt_program_wide();
    d.log_path = "build/t_stall2.vtlog";
    vt_run(&d, &p, 8, &r2);
    vt__pool_stall_us = 0;
    CHECK(r1.status == VT_OK && r2.status == VT_OK, "training failed: %s / %s", r1.message, r2.message);
    CHECK(vt__pool_lent > 0, "the stalls never made the caller take a worker's chunk: the test tests nothing");
    a = slurp("build/t_stall1.vtlog", &na);
    b = slurp("build/t_stall2.vtlog", &nb);
    CHECK(a && b && na == nb && !memcmp(a, b, na), "logs differ (%zu and %zu bytes)", na, nb);
    free(a); free(b);
    a = slurp("build/t_stall1.vtlog.commits", &na);
    b = slurp("build/t_stall2.vtlog.commits", &nb);
    CHECK(a && b && na == nb && !memcmp(a, b, na), "commitments differ");
    free(a); free(b);
    NOTE("%lld chunks ran on a thread that does not own them; %lld log entries", (long long)vt__pool_lent,
         (long long)r1.log.entries);
}

TEST(lazy_bound_logs_what_the_written_bound_logs) {
    vt_desc d = vt_desc_default();
    vt_program p = gpt_program();
    vt_report r1, r2;
    unsigned char *b1, *b2;
    size_t n1 = 0, n2 = 0;
    vt_order_parse(&d.order, "threads:2");
    d.log_path = "build/t_lazy1.vtlog";
    vt_run(&d, &p, 100, &r1);
    vt__no_lazy = 1;
    d.log_path = "build/t_lazy0.vtlog";
    vt_run(&d, &p, 100, &r2);
    vt__no_lazy = 0;
    CHECK(r1.status == VT_OK && r2.status == VT_OK, "%s / %s", r1.message, r2.message);
    CHECK(r1.log.entries > 0, "no log entries in 100 steps: the comparison would say nothing");
    b1 = slurp("build/t_lazy1.vtlog", &n1);
    b2 = slurp("build/t_lazy0.vtlog", &n2);
    CHECK(b1 && b2 && n1 == n2 && !memcmp(b1, b2, n1), "the logs differ (%zu and %zu bytes)", n1, n2);
    CHECK(!memcmp(r1.digest, r2.digest, 32), "the weights after 100 steps differ (a value the lazy rule cast otherwise)");
    NOTE("GPT, 100 steps: %lld entries, logs of %zu bytes byte-identical", (long long)r1.log.entries, n1);
    free(b1);
    free(b2);
    /* A ROW CAPS (a wider row width, A's statistics for the rows looked at only) against the lazy bound with
       every line's statistics: the same log and weights, and the caps' rows did look */
    vt__no_acap = 1;
    d.log_path = "build/t_lazy2.vtlog";
    vt_run(&d, &p, 100, &r2);
    vt__no_acap = 0;
    CHECK(r2.status == VT_OK, "%s", r2.message);
    b1 = slurp("build/t_lazy1.vtlog", &n1);
    b2 = slurp("build/t_lazy2.vtlog", &n2);
    CHECK(b1 && b2 && n1 == n2 && !memcmp(b1, b2, n1), "the logs with and without A ROW CAPS differ (%zu and %zu bytes)", n1, n2);
    CHECK(!memcmp(r1.digest, r2.digest, 32), "the weights after 100 steps differ with and without A ROW CAPS");
    free(b1);
    free(b2);
}

/* CAPS BY HISTORY: a product shape whose looks walked a quarter or more of
   its lines' groups gets the job's full statistics from then on (A ROW CAPS
   and B's sums otherwise). Training by the history, with the caps always
   and with the full statistics always gives the same log byte for byte and
   the same weights, in two orders; and the history gave some products
   their full statistics and kept the sums for others. */
TEST(caps_by_history_same_bits) {
#if VT__SPIN
    static const char *ords[2] = {"threads:2", "chaos:5"};
    int oi, f;
    for (oi = 0; oi < 2; oi++) {
        vt_report r[3];
        unsigned char *b[3];
        size_t n[3];
        char path[3][64];
        int64_t full[3];
        for (f = 0; f < 3; f++) { /* 0: by history, 1: caps always, 2: full statistics always */
            vt_desc d = vt_desc_default();
            vt_program p = gpt_program_wide();
            int64_t f0 = vt__lzh_full, big = vt__lzh_big;
            snprintf(path[f], sizeof path[f], "build/t_lzh%d%d.vtlog", oi, f);
            d.log_path = path[f];
            vt_order_parse(&d.order, ords[oi]);
            vt__lzh_force = f;
            vt__lzh_big = 0; /* (the history on these small operands too) */
            vt_run(&d, &p, 30, &r[f]);
            vt__lzh_force = 0;
            vt__lzh_big = big;
            full[f] = vt__lzh_full - f0;
            CHECK(r[f].status == VT_OK, "%s", r[f].message);
            b[f] = slurp(path[f], &n[f]);
        }
        CHECK(full[1] == 0, "order %s: %lld products took full statistics under caps always", ords[oi], (long long)full[1]);
        CHECK(full[0] > 0 && full[0] < full[2], "order %s: the history gave %lld of %lld products full statistics: the test tests "
              "nothing", ords[oi], (long long)full[0], (long long)full[2]);
        CHECK(r[0].log.entries > 0, "order %s: no log entries in 30 steps", ords[oi]);
        for (f = 1; f < 3; f++) {
            CHECK(b[0] && b[f] && n[0] == n[f] && !memcmp(b[0], b[f], n[0]), "order %s: the logs by history and with %s differ",
                  ords[oi], f == 1 ? "caps always" : "full statistics always");
            CHECK(!memcmp(r[0].digest, r[f].digest, 32), "order %s: the weights by history and with %s differ", ords[oi],
                  f == 1 ? "caps always" : "full statistics always");
        }
        NOTE("order %s: %lld of %lld products by history took full statistics; %lld entries", ords[oi], (long long)full[0],
             (long long)full[2], (long long)r[0].log.entries);
        for (f = 0; f < 3; f++) free(b[f]);
    }
#else
    NOTE("skipped: built without GCC's atomics (no history, no sums)");
#endif
}

/* KEPT ROW STATISTICS: layer norm's backward reads the rows' statistics its
   forward kept instead of computing them again; training with them and
   without them gives the same log byte for byte and the same weights, in
   the default order on two threads and in a chaos order (where the sums'
   order is the row's own); and the backward did read them. The grouped sum
   of |x| (vt__abs_sums, eight rows side by side) is each row's own sum bit
   for bit, NaN, infinities and subnormals among the values. */
TEST(layernorm_kept_statistics_change_nothing) {
    static const char *ords[2] = {"threads:2", "chaos:5"};
    int oi, keep;
    int64_t bad = 0, sums = 0;
    for (oi = 0; oi < 2; oi++) {
        vt_report r[2];
        unsigned char *b[2];
        size_t n[2];
        char path[2][64];
        int64_t kept = vt__ln_kept_rows;
        for (keep = 0; keep < 2; keep++) {
            vt_desc d = vt_desc_default();
            vt_program p = gpt_program();
            snprintf(path[keep], sizeof path[keep], "build/t_lnkeep%d%d.vtlog", oi, keep);
            d.log_path = path[keep];
            vt_order_parse(&d.order, ords[oi]);
            vt__ln_no_keep = !keep;
            vt_run(&d, &p, 40, &r[keep]);
            vt__ln_no_keep = 0;
            CHECK(r[keep].status == VT_OK, "%s", r[keep].message);
            if (!keep) CHECK(vt__ln_kept_rows == kept, "the backward read kept statistics while told not to");
        }
        CHECK(vt__ln_kept_rows > kept, "order %s: no backward read the forward's statistics: the test tests nothing", ords[oi]);
        CHECK(r[1].log.entries > 0, "order %s: no log entries in 40 steps: the comparison would say little", ords[oi]);
        b[0] = slurp(path[0], &n[0]);
        b[1] = slurp(path[1], &n[1]);
        CHECK(b[0] && b[1] && n[0] == n[1] && !memcmp(b[0], b[1], n[0]), "order %s: the logs with and without kept statistics differ",
              ords[oi]);
        CHECK(!memcmp(r[0].digest, r[1].digest, 32), "order %s: the weights with and without kept statistics differ", ords[oi]);
        free(b[0]);
        free(b[1]);
    }
    {
        static double x[8 * 70];
        int64_t C, i;
        int nr, q;
        for (C = 1; C <= 70; C++)
            for (nr = 1; nr <= 8; nr++) {
                double g[8], one;
                for (i = 0; i < nr * C; i++) {
                    uint64_t h = vt_rng_u64(91, (uint64_t)(C * 9 + nr), (uint64_t)i);
                    x[i] = h % 97 == 0 ? NAN : h % 89 == 0 ? -INFINITY : h % 13 == 0 ? 0x1p-1060 * (double)(h >> 40)
                                                                                      : vt_rng_normal(92, (uint64_t)C, (uint64_t)i) * 1e3;
                }
                vt__abs_sums(x, C, nr, g);
                for (q = 0; q < nr; q++) {
                    vt__abs_sums(x + q * C, C, 1, &one);
                    bad += memcmp(&g[q], &one, 8) != 0 && !(g[q] != g[q] && one != one);
                    sums++;
                }
            }
    }
    CHECK(bad == 0, "%lld of %lld grouped sums of |x| differ from the row's own", (long long)bad, (long long)sums);
    NOTE("logs and weights identical in 2 orders; %lld grouped sums equal", (long long)sums);
}

/* A ROW CAPS where A holds a NaN or an infinity: the cap (a maximum, which
   may drop a NaN) makes the row's width finite where the full statistics
   made it NaN; every output of such a row is NaN or infinite and is looked
   at either way. The same values, error and first NaN with and without the
   caps, A by rows and by columns, in three orders. */
TEST(a_row_caps_nan_and_infinity) {
    static const char *ords[3] = {"threads:1", "threads:2", "chaos:3"};
    enum { M = 37, K = 64, N = 50 };
    static float a[M * K], b[K * N], y[2][M * N];
    int oi, ta, caps, bad = 0;
    for (oi = 0; oi < 3; oi++)
        for (ta = 0; ta < 2; ta++) {
            char msg[2][256];
            vt_status st[2];
            int i;
            for (i = 0; i < M * K; i++) a[i] = (float)vt_rng_normal(61, (uint64_t)ta, (uint64_t)i);
            for (i = 0; i < K * N; i++) b[i] = (float)vt_rng_normal(62, 0, (uint64_t)i);
            /* A (M x K, or stored K x M when ta): row 9 holds an infinity, row 21 a NaN after it */
            a[ta ? 3 * M + 9 : 9 * K + 3] = INFINITY;
            a[ta ? 40 * M + 21 : 21 * K + 40] = NAN;
            for (caps = 0; caps < 2; caps++) {
                vt_desc d = vt_desc_default();
                vt_ctx *c;
                int64_t ea[2] = {ta ? K : M, ta ? M : K}, eb[2] = {K, N};
                vt_order_parse(&d.order, ords[oi]);
                c = vt_create(&d);
                if (!c) { CHECK(0, "vt_create: %s", vt_last_error()); return; }
                vt__no_acap = !caps;
                vt_step_begin(c);
                memset(y[caps], 0, sizeof y[caps]);
                vt_read_f32(c, vt_matmul(c, vt_from_f32(c, 2, ea, a), vt_from_f32(c, 2, eb, b), ta, 0), y[caps]);
                vt_step_end(c);
                vt__no_acap = 0;
                st[caps] = vt_status_of(c);
                snprintf(msg[caps], sizeof msg[caps], "%s", st[caps] == VT_OK ? "" : vt_error_message(c));
                vt_destroy(c);
            }
            bad += st[0] != st[1] || strcmp(msg[0], msg[1]) != 0 || memcmp(y[0], y[1], sizeof y[0]) != 0;
            CHECK(st[0] != VT_OK, "%s, ta %d: a NaN in A gave no error", ords[oi], ta);
            CHECK(st[0] == st[1] && !strcmp(msg[0], msg[1]), "%s, ta %d: without caps '%s', with '%s'", ords[oi], ta, msg[0], msg[1]);
        }
    CHECK(bad == 0, "%d runs differ with and without the caps", bad);
}

/* Products rounded in their GEMM, tile by tile (A FUSED PRODUCT in
   vtrain.h), against the rounding point's own pass (vt__no_gfuse): the logs,
   the states and the counts of exact evaluations, on one thread, on two
   (the threads' lists merged), and in a chaos order; a least-squares fit
   near its minimum puts thousands of products on a boundary, so the lists
   carry entries to the exact evaluation; and its audit in another order
   with the pass accepts the fused trainer's log. */
/* A program run twice, first with a test hook's path off (*off = 1), then
   on: the states and, in verified mode, the logs byte for byte. what names
   the case in messages; the logs are build/t_STEMf.vtlog (f = 0 off, 1 on);
   r gets the two reports. */
static void same_bits_both_ways(const char *what, vt_program p, vt_mode mode, const char *order, int64_t steps, int *off,
                                const char *stem, vt_report r[2]) {
    unsigned char *b[2] = {NULL, NULL};
    size_t nb[2] = {0, 0};
    char path[2][64];
    int f;
    for (f = 0; f < 2; f++) {
        vt_desc d = vt_desc_default();
        vt_program pf = p;
        d.mode = mode;
        vt_order_parse(&d.order, order);
        snprintf(path[f], sizeof path[f], "build/t_%s%d.vtlog", stem, f);
        d.log_path = mode == VT_MODE_VERIFIED ? path[f] : NULL;
        *off = !f;
        vt_run(&d, &pf, steps, &r[f]);
        *off = 0;
        CHECK(r[f].status == VT_OK, "%s, %s %s: %s", what, vt_mode_name(mode), order, r[f].message);
        if (d.log_path) b[f] = slurp(d.log_path, &nb[f]);
    }
    CHECK(!memcmp(r[0].digest, r[1].digest, 32), "%s, %s %s: the states differ", what, vt_mode_name(mode), order);
    if (mode == VT_MODE_VERIFIED)
        CHECK(b[0] && b[1] && nb[0] == nb[1] && !memcmp(b[0], b[1], nb[0]), "%s, %s: the logs differ (%zu and %zu bytes)", what,
              order, nb[0], nb[1]);
    free(b[0]);
    free(b[1]);
}

TEST(fused_products_same_bits) {
    static const char *ords[3] = {"threads:1", "threads:2", "threads:2,chaos:5"};
    int64_t fused = vt__gfused, exact = 0;
    int q, o;
    for (q = 0; q < 2; q++)
        for (o = 0; o < 3; o++) {
            vt_program p = gpt_program();
            vt_report r[2];
            char what[32];
            if (q == 1) { p.setup = lsq_setup; p.step = lsq_step; p.on_step = NULL; p.user = &g_lsq; }
            snprintf(what, sizeof what, "program %d", q);
            same_bits_both_ways(what, p, VT_MODE_VERIFIED, ords[o], q == 0 ? 30 : LSQ_STEPS, &vt__no_gfuse, "gf", r);
            CHECK(r[0].log.exact == r[1].log.exact && r[0].log.entries == r[1].log.entries,
                  "program %d, %s: %lld and %lld exact evaluations, %lld and %lld entries", q, ords[o], (long long)r[0].log.exact,
                  (long long)r[1].log.exact, (long long)r[0].log.entries, (long long)r[1].log.entries);
            if (q == 1) exact += r[1].log.exact;
            if (q == 1 && o == 1) { /* the fused trainer's log, audited in another order without fusion */
                vt_desc d = vt_desc_default();
                vt_report ra;
                vt_program pa = p;
                d.role = VT_ROLE_AUDIT;
                d.log_path = "build/t_gf1.vtlog";
                vt_order_parse(&d.order, "threads:1,block:48");
                vt__no_gfuse = 1;
                vt_run(&d, &pa, LSQ_STEPS, &ra);
                vt__no_gfuse = 0;
                CHECK(ra.status == VT_OK && ra.steps == LSQ_STEPS && !memcmp(ra.digest, r[1].digest, 32), "audit: %s", ra.message);
            }
        }
    free(g_lsq.x);
    free(g_lsq.y);
    g_lsq.x = NULL; g_lsq.y = NULL;
    CHECK(vt__gfused > fused, "no product was rounded in its GEMM: the test compares the pass with itself");
    CHECK(exact > 0, "no product value was evaluated exactly: the fused lists carried nothing");
    NOTE("%lld products rounded in their GEMM; %lld exact evaluations in the least-squares runs", (long long)(vt__gfused - fused),
         (long long)exact);
}

/* The attention kernels' fused rounding of their causal T x T points (A
   FUSED CAUSAL POINT in vtrain.h) and of their T x hs blocks (A FUSED
   BLOCK: P V, dq and dk, dv, the last a second output beside datt) against
   the rounding point's own pass (vt__no_fuse): the logs and commitments
   byte for byte, on one thread and on three (the threads' entry lists
   merged), with entries in the causal points and in the blocks (else the
   comparison would say nothing). */
static int64_t g_att_entries, g_blk_entries, g_ln_entries, g_lnb_entries;
static void count_att_entries(vt_ctx *c, int64_t step, void *u) {
    static const int kinds[8] = {VT_OP_ATT_SCORES * 8, VT_OP_ATT_SOFTMAX * 8, VT_OP_ATT_SOFTMAX * 8 + 1, VT_OP_ATT_MIX * 8 + 1,
                                 VT_OP_ATT_MIX * 8, VT_OP_ATT_SCORES * 8 + 1, VT_OP_ATT_MIX * 8 + 2, VT_OP_LAYERNORM * 8};
    int i;
    (void)step; (void)u;
    vt_log_stats st;
    g_att_entries = g_blk_entries = g_ln_entries = g_lnb_entries = 0;
    for (i = 0; i < 8; i++)
        if (vt_log_kind_stats(c, kinds[i], &st, NULL, 0)) *(i < 4 ? &g_att_entries : i < 7 ? &g_blk_entries : &g_ln_entries) += st.entries;
    if (vt_log_kind_stats(c, VT_OP_LAYERNORM * 8 + 1, &st, NULL, 0)) g_lnb_entries = st.entries; /* the layer norms' dx */
}
TEST(fused_causal_points_log_what_the_pass_logs) {
    static const char *ords[2] = {"threads:1", "threads:3"};
    vt_program p;
    int oi, fuse;
    gpt_program();
    g_gpt.cfg.width = 64; g_gpt.T = 48; g_gpt.B = 4;
    p = chargpt_program(&g_gpt);
    p.on_step = count_att_entries;
    for (oi = 0; oi < 2; oi++) {
        unsigned char *lg[2], *cm[2];
        size_t nl[2] = {0, 0}, nc[2] = {0, 0};
        int64_t att[2] = {0, 0}, blk[2] = {0, 0}, ln[2] = {0, 0}, lnb[2] = {0, 0};
        for (fuse = 0; fuse < 2; fuse++) {
            vt_desc d = vt_desc_default();
            vt_report r;
            char path[64];
            snprintf(path, sizeof path, "build/t_fuse%d.vtlog", fuse);
            vt_order_parse(&d.order, ords[oi]);
            d.log_path = path;
            vt__no_fuse = !fuse;
            vt__fused_points = 0;
            vt_run(&d, &p, 40, &r);
            vt__no_fuse = 0;
            /* 2 layers: 7 points each per step (scores, softmax, its gradient, datt; P V, dq and dk, dv) and
               2 layer norms, forward and backward (A LAYERNORM ROW, A LAYERNORM BACKWARD ROW), and the final
               layer norm both ways */
            CHECK(vt__fused_points == (fuse ? 40 * (2 * (7 + 2 * 2) + 2) : 0), "%s: %lld points fused", ords[oi],
                  (long long)vt__fused_points);
            CHECK(r.status == VT_OK, "%s, %s: %s", ords[oi], fuse ? "fused" : "pass", r.message);
            att[fuse] = g_att_entries;
            blk[fuse] = g_blk_entries;
            ln[fuse] = g_ln_entries;
            lnb[fuse] = g_lnb_entries;
            lg[fuse] = slurp(path, &nl[fuse]);
            snprintf(path, sizeof path, "build/t_fuse%d.vtlog.commits", fuse);
            cm[fuse] = slurp(path, &nc[fuse]);
        }
        CHECK(att[0] > 0 && att[0] == att[1], "%s: %lld and %lld entries in the causal points (none: the test tests nothing)",
              ords[oi], (long long)att[0], (long long)att[1]);
        CHECK(blk[0] > 0 && blk[0] == blk[1], "%s: %lld and %lld entries in the T x hs blocks (none: the test tests nothing)",
              ords[oi], (long long)blk[0], (long long)blk[1]);
        CHECK(ln[0] > 0 && ln[0] == ln[1], "%s: %lld and %lld entries in the layer norms (none: the test tests nothing)",
              ords[oi], (long long)ln[0], (long long)ln[1]);
        CHECK(lnb[0] > 0 && lnb[0] == lnb[1], "%s: %lld and %lld entries in the layer norms' dx (none: the test tests nothing)",
              ords[oi], (long long)lnb[0], (long long)lnb[1]);
        CHECK(lg[0] && lg[1] && nl[0] == nl[1] && !memcmp(lg[0], lg[1], nl[0]), "%s: the logs differ (%zu and %zu bytes)",
              ords[oi], nl[0], nl[1]);
        CHECK(cm[0] && cm[1] && nc[0] == nc[1] && !memcmp(cm[0], cm[1], nc[0]), "%s: the commitments differ", ords[oi]);
        NOTE("%s: 40 steps, %lld entries in the causal points, %lld in the blocks, %lld in the layer norms and %lld in their dx, "
             "logs of %zu bytes", ords[oi], (long long)att[1], (long long)blk[1], (long long)ln[1], (long long)lnb[1], nl[1]);
        free(lg[0]); free(lg[1]); free(cm[0]); free(cm[1]);
    }
    gpt_program(); /* the other tests' GPT */
}

/* A FUSED BLOCK where dq and dk are added to old values that are not zero
   (the attention's input also feeds another term of the loss, whose
   gradient arrives first): those blocks take the bounds written out, dv's
   output (added to, too) the pass; the logs and states with the fused
   blocks are the pass's, on one thread and on three, with entries in the
   added point (else the comparison would say nothing). */
static vt_tensor *g_aq;
static vt_optim *g_aqo;
static int64_t g_aq_entries;
static vt_status attacc_setup(vt_ctx *c, void *u) {
    int64_t n[3] = {4, 40, 3 * 64};
    vt_sgd_desc sd;
    (void)u;
    g_aq = vt_param(c, "qkv", 3, n);
    vt_init_normal(c, g_aq, 7, 0, 1.0);
    memset(&sd, 0, sizeof sd);
    g_aqo = vt_sgd_create(c, &sd);
    return vt_status_of(c);
}
static vt_status attacc_step(vt_ctx *c, int64_t s, void *u) {
    vt_tensor *y = vt_attention(c, g_aq, 4);
    (void)s; (void)u;
    vt_backward(c, vt_add(c, vt_mean(c, vt_mul(c, y, y)), vt_scale(c, vt_mean(c, vt_mul(c, g_aq, g_aq)), 0.25)));
    vt_optim_step(c, g_aqo, 0.05);
    return vt_status_of(c);
}
static void attacc_count(vt_ctx *c, int64_t step, void *u) {
    vt_log_stats st;
    (void)step; (void)u;
    if (vt_log_kind_stats(c, VT_OP_ATT_SCORES * 8 + 1, &st, NULL, 0)) g_aq_entries = st.entries;
}
TEST(fused_blocks_added_to_old_values) {
    static const char *ords[2] = {"threads:1", "threads:3"};
    vt_program p = {attacc_setup, attacc_step, attacc_count, NULL};
    int oi;
    for (oi = 0; oi < 2; oi++) {
        vt_report r[2];
        int64_t w0 = vt__att_blocks_written, pts = vt__fused_points;
        g_aq_entries = 0;
        same_bits_both_ways("attention added to", p, VT_MODE_VERIFIED, ords[oi], 30, &vt__no_fuse, "attacc", r);
        CHECK(vt__att_blocks_written - w0 == 30 * 4 * 4 * 2, "%s: %lld blocks took the written bounds", ords[oi],
              (long long)(vt__att_blocks_written - w0));
        CHECK(vt__fused_points - pts == 30 * 6, "%s: %lld points fused (scores, softmax and its gradient, P V, datt, dq and dk)",
              ords[oi], (long long)(vt__fused_points - pts));
        CHECK(g_aq_entries > 0, "%s: no entries in dq and dk's point: the comparison says nothing", ords[oi]);
        NOTE("%s: 30 steps, %lld entries in dq and dk's point, logs byte-identical", ords[oi], (long long)g_aq_entries);
    }
}

/* AdamW in one pass (the CPU's) against its three passes (vt__no_fused):
   the same weights and moments (the digest covers both) and the same log
   bytes after 40 GPT steps in verified, fp64 and native mode on 1 and 2
   threads; and a NaN in the weights or in a moment stops training at the
   same point with the same message either way. */
static vt_tensor *g_nan_w, *g_nan_u;
static vt_optim *g_nan_opt;
static int g_nan_what; /* 1: a NaN in the unused parameter's weight, 2: in the first moment */
static vt_status nan_setup(vt_ctx *c, void *u) {
    int64_t ws[2] = {2, 3}, us[1] = {10};
    (void)u;
    g_nan_w = vt_param(c, "w", 2, ws);
    g_nan_u = vt_param(c, "u", 1, us); /* never used: its gradient is 0, its update only the decay */
    vt_init_normal(c, g_nan_w, 1, 1, 0.5);
    vt_init_normal(c, g_nan_u, 1, 2, 0.5);
    g_nan_opt = vt_adamw_create(c, NULL);
    return vt_status_of(c);
}
static vt_status nan_step(vt_ctx *c, int64_t s, void *u) {
    float xs[12], ys[8];
    int64_t xsh[2] = {4, 3}, ysh[2] = {4, 2};
    int i;
    (void)u;
    for (i = 0; i < 12; i++) xs[i] = (float)vt_rng_uniform(5, (uint64_t)s, (uint64_t)i);
    for (i = 0; i < 8; i++) ys[i] = (float)vt_rng_uniform(6, (uint64_t)s, (uint64_t)i);
    if (s == 3 && g_nan_what) {
        float v[10];
        vt_tensor *t = g_nan_what == 1 ? g_nan_u : g_nan_opt->mt;
        int64_t n = vt_numel(t);
        float *all = (float *)malloc(sizeof(float) * (size_t)n);
        vt_read_f32(c, t, all);
        all[n > 10 ? 13 : 7] = NAN;
        vt_write_f32(c, t, all);
        free(all);
        (void)v;
    }
    vt_backward(c, vt_mse(c, vt_linear(c, vt_from_f32(c, 2, xsh, xs), g_nan_w, NULL), vt_from_f32(c, 2, ysh, ys)));
    vt_optim_step(c, g_nan_opt, 1e-2);
    return vt_status_of(c);
}

TEST(adamw_one_pass_same_bits) {
    static const vt_mode modes[] = {VT_MODE_VERIFIED, VT_MODE_FP64, VT_MODE_NATIVE};
    static const char *orders[] = {"threads:1", "threads:2"};
    vt_program p = gpt_program(), q = {nan_setup, nan_step, NULL, NULL};
    int m, o, f, w;
    for (m = 0; m < 3; m++)
        for (o = 0; o < 2; o++) {
            vt_report r[2];
            unsigned char *b[2] = {NULL, NULL};
            size_t nb[2] = {0, 0};
            for (f = 0; f < 2; f++) {
                vt_desc d = vt_desc_default();
                d.mode = modes[m];
                vt_order_parse(&d.order, orders[o]);
                d.log_path = modes[m] == VT_MODE_VERIFIED ? (f ? "build/t_adamw1.vtlog" : "build/t_adamw3.vtlog") : NULL;
                vt__no_fused = !f;
                vt_run(&d, &p, 40, &r[f]);
                vt__no_fused = 0;
                CHECK(r[f].status == VT_OK, "%s %s: %s", vt_mode_name(modes[m]), orders[o], r[f].message);
                if (d.log_path) b[f] = slurp(d.log_path, &nb[f]);
            }
            CHECK(!memcmp(r[0].digest, r[1].digest, 32), "%s %s: weights or moments differ after 40 steps", vt_mode_name(modes[m]),
                  orders[o]);
            if (modes[m] == VT_MODE_VERIFIED)
                CHECK(b[0] && b[1] && nb[0] == nb[1] && !memcmp(b[0], b[1], nb[0]), "%s: the logs differ (%zu and %zu bytes)",
                      orders[o], nb[0], nb[1]);
            free(b[0]);
            free(b[1]);
        }
    for (w = 1; w <= 2; w++)
        for (m = 0; m < 3; m++) {
            vt_report r[2];
            for (f = 0; f < 2; f++) {
                vt_desc d = vt_desc_default();
                d.mode = modes[m];
                g_nan_what = w;
                vt__no_fused = !f;
                vt_run(&d, &q, 10, &r[f]);
                vt__no_fused = 0;
                g_nan_what = 0;
            }
            CHECK(r[0].status == VT_ERR_NONFINITE && r[1].status == VT_ERR_NONFINITE && r[0].steps == r[1].steps &&
                      !strcmp(r[0].message, r[1].message),
                  "NaN in %s, %s: three passes '%s' (step %lld), one pass '%s' (step %lld)", w == 1 ? "a weight" : "m",
                  vt_mode_name(modes[m]), r[0].message, (long long)r[0].steps, r[1].message, (long long)r[1].steps);
            if (m == 0) NOTE("NaN in %s: %s", w == 1 ? "a weight" : "the first moment", r[1].message);
        }
}

/* FLAT PARAMETERS: the optimizer and clipping read the parameters and
   their gradients in the blocks vt_adamw_create / vt_sgd_create moved them
   into, instead of flat copies (vt__no_flat keeps the copies). The same
   weights, moments and log bytes either way: the GPT (clipping at 1.0 scales
   its early gradients) in every mode on 1 and 2 threads, and a small program
   with a parameter that gets a gradient every other step (fresh, read as 0,
   in the others, while its block holds the last one), one made
   after the optimizer or none (clipping can read the parameters in one
   block only then), clipping hard or not at all, AdamW and SGD. And a step
   that fails leaves the weights as they were. */
static int g_flat_sgd, g_flat_late; /* SGD instead of AdamW; a parameter made after the optimizer */
static double g_flat_clip;
static vt_tensor *g_flat_p[3];
static vt_optim *g_flat_opt;
static vt_status flat_setup(vt_ctx *c, void *u) {
    int64_t ws[2] = {2, 3}, ls[2] = {4, 2};
    (void)u;
    g_flat_p[0] = vt_param(c, "w", 2, ws);
    g_flat_p[1] = vt_param(c, "u", 2, ws); /* used on even steps only: fresh on odd ones, its block holding the last */
    vt_init_normal(c, g_flat_p[0], 1, 1, 0.5);
    vt_init_normal(c, g_flat_p[1], 1, 2, 0.5);
    if (g_flat_sgd) {
        vt_sgd_desc sd = vt_sgd_default();
        sd.momentum = 0.9;
        sd.weight_decay = 0.01;
        g_flat_opt = vt_sgd_create(c, &sd);
    } else g_flat_opt = vt_adamw_create(c, NULL);
    g_flat_p[2] = NULL;
    if (g_flat_late) {
        g_flat_p[2] = vt_param(c, "late", 2, ls); /* after the optimizer: clipped, never updated */
        vt_init_normal(c, g_flat_p[2], 1, 3, 0.5);
    }
    return vt_status_of(c);
}
static vt_status flat_step(vt_ctx *c, int64_t s, void *u) {
    float xs[12], ys[8];
    int64_t xsh[2] = {4, 3}, ysh[2] = {4, 2};
    int i;
    (void)u;
    for (i = 0; i < 12; i++) xs[i] = (float)vt_rng_uniform(5, (uint64_t)s, (uint64_t)i);
    for (i = 0; i < 8; i++) ys[i] = (float)vt_rng_uniform(6, (uint64_t)s, (uint64_t)i);
    {
        vt_tensor *x = vt_from_f32(c, 2, xsh, xs), *h = vt_linear(c, x, g_flat_p[0], NULL), *y;
        if (s % 2 == 0) h = vt_add(c, h, vt_linear(c, x, g_flat_p[1], NULL));
        y = g_flat_p[2] ? vt_mul(c, h, g_flat_p[2]) : h;
        vt_backward(c, vt_mse(c, y, vt_from_f32(c, 2, ysh, ys)));
    }
    if (g_flat_clip > 0) vt_clip_grad_norm(c, g_flat_clip);
    vt_optim_step(c, g_flat_opt, 1e-2);
    return vt_status_of(c);
}

/* The backward of an operand broadcast over the leading dimensions (a
   position embedding, a bias) sums each target's terms on the pool, in the
   order the general gather lists them (vt__bcast_bwd_task): the same log and
   state as the gather (vt__no_bcast_fast), in every mode and order, for add,
   for sub's first operand, with a target that accumulates (p is used twice);
   sub's second operand and mul keep the gather. */
static vt_tensor *g_bc_p[2];
static vt_status bcast_setup(vt_ctx *c, void *u) {
    int64_t ps[2] = {16, 16}, qs[1] = {16};
    (void)u;
    g_bc_p[0] = vt_param(c, "p", 2, ps);
    g_bc_p[1] = vt_param(c, "q", 1, qs);
    vt_init_normal(c, g_bc_p[0], 1, 1, 0.5);
    vt_init_normal(c, g_bc_p[1], 1, 2, 0.5);
    g_flat_opt = vt_adamw_create(c, NULL);
    return vt_status_of(c);
}
static vt_status bcast_step(vt_ctx *c, int64_t s, void *u) {
    static float xs[64 * 16 * 16], ys[64 * 16 * 16];
    int64_t sh[3] = {64, 16, 16};
    int i;
    (void)u;
    for (i = 0; i < 64 * 16 * 16; i++) {
        xs[i] = (float)vt_rng_uniform(7, (uint64_t)s, (uint64_t)i);
        ys[i] = (float)vt_rng_uniform(8, (uint64_t)s, (uint64_t)i);
    }
    {
        vt_tensor *x = vt_from_f32(c, 3, sh, xs);
        vt_tensor *h = vt_add(c, x, g_bc_p[0]);      /* add: p's gradient by the pool */
        h = vt_sub(c, g_bc_p[1], h);                  /* sub, first operand: q's */
        h = vt_sub(c, h, g_bc_p[1]);                  /* sub, second operand: the gather (accumulates into q) */
        h = vt_add(c, vt_mul(c, h, g_bc_p[0]), g_bc_p[0]); /* mul: the gather; add: p accumulates */
        vt_backward(c, vt_mse(c, h, vt_from_f32(c, 3, sh, ys)));
    }
    vt_optim_step(c, g_flat_opt, 1e-2);
    return vt_status_of(c);
}

/* A FUSED CAST (vtrain.h): without a bound (fp64, native, round-only) a
   product's GEMM casts, or in fp64 checks, each tile as it finishes it, the
   attention kernels each causal row, and an elementwise kernel each piece
   (in a verified trainer too: GELU, the adds), instead of the point's own
   pass. The states (and verified logs) match the pass's (vt__no_gfuse,
   vt__no_fuse) in each mode on one thread, two, and in a chaos order. */
TEST(fused_casts_same_bits) {
    static const vt_mode modes[] = {VT_MODE_FP64, VT_MODE_NATIVE, VT_MODE_ROUND_ONLY, VT_MODE_VERIFIED};
    static const char *ords[] = {"threads:1", "threads:2", "threads:2,chaos:3"};
    int64_t casts = vt__gcast, rows = vt__fused_points, clips = vt__gclip;
    int m, o;
    vt_program q = {flat_setup, flat_step, NULL, NULL};
    for (m = 0; m < 4; m++)
        for (o = 0; o < 3; o++) {
            vt_report r[2];
            same_bits_both_ways("products", gpt_program(), modes[m], ords[o], 20, &vt__no_gfuse, "gc", r);
            same_bits_both_ways("causal rows", gpt_program(), modes[m], ords[o], 20, &vt__no_fuse, "fc", r);
            g_flat_sgd = 0; g_flat_late = 1; g_flat_clip = 0.01; /* clipped every step: scaled and cast in one pass */
            same_bits_both_ways("clipped gradients", q, modes[m], ords[o], 12, &vt__no_gfuse, "gk", r);
        }
    CHECK(vt__gcast > casts, "no product was cast in its GEMM: the test compares the pass with itself");
    CHECK(vt__fused_points > rows, "no causal point was cast row by row: the test compares the pass with itself");
    CHECK(vt__gclip > clips, "no clipped gradient was cast as it was scaled: the test compares the pass with itself");
}

/* ... and a NaN stops the step at the same point and element either way:
   the first NaN of a product is the smallest index over the tiles (a NaN
   in x's row 37 fills output row 37, one in w's row 5 output column 5:
   element 5, which the tile of row 0 holds), in a causal point the
   smallest over the rows (a NaN in token 6's key of head 1: pre[1, 6, 6]
   first), in an elementwise kernel over the pieces; in the three modes
   without bounds and in verified (whose own passes the test compares
   too). */
static void first_nan_message(vt_mode mode, const char *order, int att, char *msg, size_t n) {
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    float *v = (float *)malloc(sizeof(float) * 200 * 96);
    int64_t i;
    d.mode = mode;
    vt_order_parse(&d.order, order);
    c = vt_create(&d);
    for (i = 0; i < 200 * 96; i++) v[i] = (float)(0.01 * sin(0.37 * (double)i));
    if (!att) {
        int64_t nx[2] = {200, 64}, nw[2] = {300, 64};
        vt_tensor *w = vt_param(c, "w", 2, nw);
        vt_init_const(c, w, 0.5);
        vt__d(w)[5 * 64 + 7] = NAN;
        v[37 * 64 + 3] = NAN;
        vt_step_begin(c);
        vt_linear(c, vt_from_f32(c, 2, nx, v), w, NULL);
    } else if (att == 2) { /* GELU: NaNs at 15000 and 9000 (pieces of 4096, three threads) */
        int64_t nx[2] = {200, 96};
        v[15000] = NAN;
        v[9000] = NAN;
        vt_step_begin(c);
        vt_gelu(c, vt_from_f32(c, 2, nx, v));
    } else if (att == 3) { /* a layer norm (A LAYERNORM ROW): NaNs in rows 150 and 7 */
        int64_t nx[2] = {200, 64}, nc[1] = {64};
        vt_tensor *w = vt_param(c, "w", 1, nc), *b = vt_param(c, "b", 1, nc);
        vt_init_const(c, w, 1.0);
        vt_init_const(c, b, 0.0);
        v[150 * 64 + 9] = NAN;
        v[7 * 64 + 3] = NAN;
        vt_step_begin(c);
        vt_layernorm(c, vt_from_f32(c, 2, nx, v), w, b, 1e-5);
    } else { /* B 2, T 24, C 32 (2 heads of 16) */
        int64_t nq[3] = {2, 24, 96};
        v[6 * 96 + 32 + 16 + 3] = NAN; /* token 6, k part, head 1 */
        vt_step_begin(c);
        vt_attention(c, vt_from_f32(c, 3, nq, v), 2);
    }
    snprintf(msg, n, "%s: %s", vt_status_name(vt_status_of(c)), vt_error_message(c));
    vt_destroy(c);
    free(v);
}
TEST(fused_casts_name_the_first_nan) {
    static const vt_mode modes[] = {VT_MODE_FP64, VT_MODE_NATIVE, VT_MODE_ROUND_ONLY, VT_MODE_VERIFIED};
    static const char *ords[] = {"threads:1", "threads:2", "threads:3,chaos:5"};
    static const char *want[4] = {"(linear[200x300]), element 5:", "(att_scores[2x2x24x24]), element 726:",
                                  "(gelu[200x96]), element 9000:", "(layernorm[200x64]), element 448:"};
    int m, o, att, f;
    for (att = 0; att < 4; att++)
        for (m = 0; m < 4; m++)
            for (o = 0; o < 3; o++) {
                char msg[2][512];
                for (f = 0; f < 2; f++) {
                    vt__no_gfuse = vt__no_fuse = !f;
                    first_nan_message(modes[m], ords[o], att, msg[f], sizeof msg[f]);
                    vt__no_gfuse = vt__no_fuse = 0;
                }
                CHECK(!strcmp(msg[0], msg[1]), "%s %s: the pass says '%s', the fused form '%s'", vt_mode_name(modes[m]), ords[o],
                      msg[0], msg[1]);
                CHECK(strstr(msg[1], want[att]) != NULL, "%s %s: '%s' (wanted '%s')", vt_mode_name(modes[m]), ords[o], msg[1], want[att]);
            }
}

TEST(broadcast_backward_same_bits) {
    static const vt_mode modes[] = {VT_MODE_VERIFIED, VT_MODE_FP64, VT_MODE_NATIVE};
    static const char *orders[] = {"threads:1", "threads:2", "threads:2,chaos:7"};
    vt_program q = {bcast_setup, bcast_step, NULL, NULL};
    int m, o, k;
    int64_t runs = vt__bcast_fast_runs;
    for (k = 0; k < 2; k++)
        for (m = 0; m < 3; m++)
            for (o = 0; o < 3; o++) {
                vt_report r[2];
                char what[32];
                if (k == 0 && o == 2) continue;
                snprintf(what, sizeof what, "program %d", k);
                same_bits_both_ways(what, k == 0 ? gpt_program() : q, modes[m], orders[o], k == 0 ? 20 : 6, &vt__no_bcast_fast, "bc", r);
            }
    CHECK(vt__bcast_fast_runs > runs, "the broadcast backward never took the pool's form: the test compares the gather with itself");
}

TEST(flat_parameters_same_bits) {
    static const vt_mode modes[] = {VT_MODE_VERIFIED, VT_MODE_FP64, VT_MODE_NATIVE};
    static const char *orders[] = {"threads:1", "threads:2"};
    vt_program q = {flat_setup, flat_step, NULL, NULL};
    int m, o, f, k;
    for (k = 0; k < 5; k++) {
        char what[32];
        /* 1: AdamW, a late parameter, clipping every step; 2: SGD, the same; 3 and 4:
           AdamW without a late one (clipping reads the blocks too), clipping every
           step, or no clipping (the optimizer sees fresh gradients) */
        vt_program p = k == 0 ? gpt_program() : q;
        g_flat_sgd = k == 2;
        g_flat_late = k <= 2;
        g_flat_clip = k == 4 ? 0 : 0.01;
        snprintf(what, sizeof what, "program %d", k);
        for (m = 0; m < 3; m++)
            for (o = 0; o < 2; o++) {
                vt_report r[2];
                same_bits_both_ways(what, p, modes[m], orders[o], k == 0 ? 40 : 12, &vt__no_flat, "flat", r);
            }
    }
    /* the blocks are really used (else the comparison above compares the copies with themselves) */
    {
        vt_desc d = vt_desc_default();
        vt_ctx *c = vt_create(&d);
        g_flat_sgd = 0;
        g_flat_late = 1;
        CHECK(c && flat_setup(c, NULL) == VT_OK, "setup: %s", vt_last_error());
        if (c) {
            double *w0 = (double *)g_flat_p[0]->data, *u0 = (double *)g_flat_p[1]->data;
            CHECK(u0 == w0 + 6 && (double *)g_flat_p[1]->grad->data == (double *)g_flat_p[0]->grad->data + 6,
                  "the optimizer's parameters are not in one block");
            CHECK((double *)g_flat_p[2]->data != u0 + 6, "a parameter made after the optimizer is in its block");
            vt_destroy(c);
        }
    }
    /* a step that fails (a NaN in a weight) leaves every weight as it was */
    for (f = 0; f < 2; f++) {
        vt_desc d = vt_desc_default();
        vt_ctx *c;
        float before[12], after[12], nan_u[6];
        int i, same = 1;
        vt__no_flat = !f;
        c = vt_create(&d);
        g_flat_sgd = 0;
        g_flat_late = 0;
        g_flat_clip = 0.01;
        CHECK(c && flat_setup(c, NULL) == VT_OK, "setup: %s", vt_last_error());
        if (!c) { vt__no_flat = 0; continue; }
        vt_step_begin(c);
        flat_step(c, 0, NULL);
        vt_step_end(c);
        vt_read_f32(c, g_flat_p[1], nan_u);
        nan_u[1] = NAN; /* step 1 leaves u out: the NaN reaches only its decayed weight */
        vt_write_f32(c, g_flat_p[1], nan_u);
        vt_read_f32(c, g_flat_p[0], before);
        vt_read_f32(c, g_flat_p[1], before + 6);
        vt_step_begin(c);
        CHECK(flat_step(c, 1, NULL) == VT_ERR_NONFINITE, "%s: a NaN weight: %s", f ? "blocks" : "copies", vt_status_name(vt_status_of(c)));
        vt_clear_error(c);
        vt_read_f32(c, g_flat_p[0], after);
        vt_read_f32(c, g_flat_p[1], after + 6);
        for (i = 0; i < 12; i++) same &= i == 7 ? after[i] != after[i] : after[i] == before[i];
        CHECK(same, "%s: the failed step changed the weights", f ? "blocks" : "copies");
        vt_destroy(c);
        vt__no_flat = 0;
    }
}

TEST(tamper_changed_entry) {
    int k, caught = 0, silent = 0, named = 0;
    size_t n;
    unsigned char *b = slurp("build/t_gpt.vtlog", &n);
    /* the first 8 entries (30 in all today, the 8th at step 51) */
    for (k = 0; k < 8; k++) {
        int64_t step;
        char want[256], pt[160];
        vt_report r = tamper_entry(k, 128, &step);
        if (step < 0) break;
        CHECK(r.status == VT_ERR_IMPLAUSIBLE && r.first_bad_step == step, "entry %d moved far (step %lld): %s %s", k,
              (long long)step, vt_status_name(r.status), r.message);
        /* the message names the step and the rounding point (its kind and shape) */
        snprintf(want, sizeof want, "at step %lld, point ", (long long)step);
        CHECK(b && entry_point_name(b, n, k, pt, sizeof pt), "entry %d: no rounding point found in the log", k);
        CHECK(strstr(r.message, want) && strstr(r.message, pt), "entry %d moved far: the message does not name step %lld and point %s: %s", k,
              (long long)step, pt, r.message);
        if (k == 0) NOTE("%s", r.message);
        r = tamper_entry(k, 1, &step);
        if (r.status == VT_OK) silent++;
        else {
            caught++;
            CHECK((r.status == VT_ERR_MISMATCH || r.status == VT_ERR_IMPLAUSIBLE) && r.first_bad_step == step,
                  "entry %d moved to its neighbour (step %lld): %s at step %lld: %s", k, (long long)step,
                  vt_status_name(r.status), (long long)r.first_bad_step, r.message);
            /* in the state: the message names the step and the first tensor that differs */
            snprintf(want, sizeof want, "step %lld: the training state differs from the trainer's commitment: tensor '", (long long)step);
            if (r.status == VT_ERR_MISMATCH) {
                const char *q = strstr(r.message, want);
                if (!named) NOTE("%s", r.message);
                named++;
                CHECK(q && q[strlen(want)] != '\'' && strchr(q + strlen(want), '\''), "entry %d: the message does not name step %lld and a tensor: %s",
                      k, (long long)step, r.message);
            }
        }
    }
    CHECK(named > 0, "no neighbour change of %d showed in the weights", caught + silent);
    NOTE("neighbour changes: %d caught at their step (%d in the weights), %d changed nothing committed", caught, named, silent);
    free(b);
}

/* A changed entry (still in the auditor's interval) whose chunk commitment the
   trainer did not rewrite: the audit says the log chunk differs, at that step
   (before it looks at the state). */
TEST(tamper_chunk_not_recommitted) {
    int k, done = 0;
    for (k = 0; k < 8 && !done; k++) {
        char want[160];
        int64_t step;
        vt_report r = tamper_entry_c(k, 1, 0, &step);
        if (step < 0) break;
        if (r.status == VT_ERR_IMPLAUSIBLE && r.first_bad_step == step) continue; /* out of the interval: refused before */
        done = 1;
        snprintf(want, sizeof want, "step %lld: the log chunk's hash differs from the one the trainer committed", (long long)step);
        CHECK(r.status == VT_ERR_MISMATCH && r.first_bad_step == step && strstr(r.message, want), "entry %d changed (step %lld), its chunk not "
              "recommitted: %s at step %lld: %s", k, (long long)step, vt_status_name(r.status), (long long)r.first_bad_step, r.message);
    }
    CHECK(done, "no entry of the first 8 could be moved within the auditor's interval: gpt_replays_across_orders runs first");
}

TEST(tamper_deleted_record) {
    size_t n;
    unsigned char *b = slurp("build/t_gpt.vtlog", &n), *nb;
    long at;
    size_t pos, len;
    int seen = 0, full = 0;
    vt_report r;
    if (!b) { CHECK(0, "no log"); return; }
    /* drop the first record of step 3's chunk */
    at = chunk_at(b, n, 3);
    pos = (size_t)at + VT__CHUNK_HDR;
    len = vt__get_u64(b + at + 20);
    walk_record(b, pos + len, &pos, !memcmp(b + at, "VTCR", 4), -1, &seen, &full);
    {
        size_t cut = pos - ((size_t)at + VT__CHUNK_HDR);
        nb = (unsigned char *)malloc(n);
        memcpy(nb, b, (size_t)at + VT__CHUNK_HDR);
        memcpy(nb + at + VT__CHUNK_HDR, b + pos, n - pos);
        vt__put_u64(nb + at + 20, len - cut);
        reseal_chunk(nb, at);
        spit("build/t_gpt_del.vtlog", nb, n - cut);
        free(nb);
    }
    {
        size_t cn;
        unsigned char *cb = slurp("build/t_gpt.vtlog.commits", &cn);
        spit("build/t_gpt_del.vtlog.commits", cb, cn);
        free(cb);
    }
    r = audit_gpt("build/t_gpt_del.vtlog");
    CHECK((r.status == VT_ERR_DESYNC || r.status == VT_ERR_FORMAT) && r.first_bad_step == 3, "status %s at step %lld: %s",
          vt_status_name(r.status), (long long)r.first_bad_step, r.message);
    CHECK(strstr(r.message, "step 3") != NULL, "message: %s", r.message);
    CHECK(strstr(r.message, "'build/t_gpt_del.vtlog'") != NULL, "the message does not name the file: %s", r.message);
    NOTE("%s", r.message);
    free(b);
}

TEST(tamper_truncated_and_checksum) {
    size_t n, cn;
    unsigned char *b = slurp("build/t_gpt.vtlog", &n), *cb = slurp("build/t_gpt.vtlog.commits", &cn);
    long at;
    vt_report r;
    if (!b || !cb) { CHECK(0, "no log"); return; }
    spit("build/t_gpt_trunc.vtlog.commits", cb, cn);
    spit("build/t_gpt_trunc.vtlog", b, n - 1000);
    r = audit_gpt("build/t_gpt_trunc.vtlog");
    CHECK(r.status == VT_ERR_TRUNCATED && strstr(r.message, "'build/t_gpt_trunc.vtlog'") && strstr(r.message, "step "), "truncated log: %s %s",
          vt_status_name(r.status), r.message);
    NOTE("%s", r.message);
    spit("build/t_gpt_trunc.vtlog", b, 20);
    r = audit_gpt("build/t_gpt_trunc.vtlog");
    CHECK(r.status == VT_ERR_TRUNCATED && strstr(r.message, "header"), "truncated header: %s", r.message);
    at = chunk_at(b, n, 7);
    b[at + VT__CHUNK_HDR + vt__get_u64(b + at + 20) + 3] ^= 0x40; /* a checksum byte */
    spit("build/t_gpt_sum.vtlog", b, n);
    spit("build/t_gpt_sum.vtlog.commits", cb, cn);
    r = audit_gpt("build/t_gpt_sum.vtlog");
    CHECK(r.status == VT_ERR_CHECKSUM && r.first_bad_step == 7 && strstr(r.message, "'build/t_gpt_sum.vtlog'") && strstr(r.message, "step 7"),
          "flipped checksum: %s %s", vt_status_name(r.status), r.message);
    b[at + VT__CHUNK_HDR + vt__get_u64(b + at + 20) + 3] ^= 0x40;
    b[at + VT__CHUNK_HDR + 2] ^= 0x01; /* a body byte, checksum left alone */
    spit("build/t_gpt_sum.vtlog", b, n);
    r = audit_gpt("build/t_gpt_sum.vtlog");
    CHECK(r.status == VT_ERR_CHECKSUM && r.first_bad_step == 7, "flipped body: %s %s", vt_status_name(r.status), r.message);
    b[at + VT__CHUNK_HDR + 2] ^= 0x01;
    b[10] ^= 1; /* the header's version field */
    spit("build/t_gpt_sum.vtlog", b, n);
    r = audit_gpt("build/t_gpt_sum.vtlog");
    CHECK(r.status == VT_ERR_FORMAT, "bad version: %s %s", vt_status_name(r.status), r.message);
    free(b);
    free(cb);
}

/* a log for another program (another model size) is a desync, not a silent misapplication */
TEST(log_of_another_program) {
    vt_desc d = vt_desc_default();
    vt_program p = gpt_program();
    vt_report r;
    d.role = VT_ROLE_AUDIT;
    d.log_path = "build/t_gpt.vtlog";
    g_gpt.cfg.width = 48;
    vt_run(&d, &p, 200, &r);
    g_gpt.cfg.width = 32;
    CHECK(r.status == VT_ERR_DESYNC || r.status == VT_ERR_MISMATCH, "%s: %s", vt_status_name(r.status), r.message);
    CHECK(r.first_bad_step == 0, "detected at step %lld", (long long)r.first_bad_step);
    CHECK(strstr(r.message, "at step 0, point 0") && strstr(r.message, "replay is add[4x16x48]"), "the message does not name the step and the "
          "rounding point: %s", r.message);
    NOTE("%s", r.message);
}

/* --- calibrated and probabilistic bounds against a forger --------------------------- */

/* an auditor of the GPT log `log` in bound mode bm and order `order`, for its first `steps` steps */
static vt_report audit_bound(const char *log, vt_bound_mode bm, const char *order, int64_t steps) {
    vt_desc d = vt_desc_default();
    vt_program p = gpt_program();
    vt_report r;
    d.role = VT_ROLE_AUDIT;
    d.bound = bm;
    d.log_path = log;
    vt_order_parse(&d.order, order);
    vt_run(&d, &p, steps, &r);
    return r;
}
/* every factor of the calibration table in log `path`'s header set to f, the header's
   checksum made to fit (a trainer who writes its own table); returns the table's size */
static int set_calib_factors(const char *path, double f) {
    size_t n;
    unsigned char *b = slurp(path, &n);
    uint32_t hl, k, cnt = 0;
    uint64_t u;
    if (!b || n < 16 + 24) { free(b); return 0; }
    hl = vt__get_u32(b + 12);
    cnt = vt__get_u32(b + 16 + 20);
    memcpy(&u, &f, 8);
    for (k = 0; k < cnt && 16 + 24 + 20 * (size_t)(k + 1) <= 16 + (size_t)hl; k++) vt__put_u64(b + 16 + 24 + 20 * (size_t)k + 12, u);
    vt_sha256(b, 16 + hl, b + 16 + hl);
    spit(path, b, n);
    free(b);
    return (int)cnt;
}

/* A sum that lands near a binary32 midpoint in one order and across it in
   another: 1 + (2^-24 - 3 2^-40) + N t, t = 2^-53 + 2^-76, N = 16384. Its
   exact value lies 2^-40 below the midpoint 1 + 2^-24 (RNE32: 1); the
   blocked orders (block 256, 4 lanes) stay within 2^-47 of it, while one
   term at a time (block:1) rounds every + t up to a whole binary64 ulp and
   ends 2^-40 above it (RNE32: 1 + 2^-23). The sound bound logs it; a table
   calibrated on two blocked orders (divergence 2^-47, margin 8) does not,
   and the auditor in block:1 rounds the other way: the state after step 0
   (SGD on (sum w)^2) differs from the commitment. */
enum { MS_N = 16384, MS_K = MS_N + 2 };
static float g_ms[MS_K];
static vt_tensor *g_msw;
static vt_optim *g_mso;
static vt_status midsum_setup(vt_ctx *c, void *u) {
    int64_t n[1] = {MS_K};
    int i;
    (void)u;
    for (i = 0; i < MS_K; i++) g_ms[i] = (float)(0x1p-53 + 0x1p-76);
    g_ms[0] = 1;
    g_ms[1] = (float)(0x1p-24 - 3 * 0x1p-40);
    g_msw = vt_param(c, "w", 1, n);
    vt_write_f32(c, g_msw, g_ms);
    g_mso = vt_sgd_create(c, NULL);
    return vt_status_of(c);
}
static vt_status midsum_step(vt_ctx *c, int64_t s, void *u) {
    vt_tensor *y = vt_sum(c, g_msw);
    (void)s; (void)u;
    vt_backward(c, vt_mul(c, y, y));
    vt_optim_step(c, g_mso, 1e-3);
    return vt_status_of(c);
}
static void midsum_too_small_factor(void) {
    vt_program p = {midsum_setup, midsum_step, NULL, NULL};
    vt_desc d = vt_desc_default();
    vt_order o[2];
    vt_calib t;
    vt_report r;
    vt_order_parse(&o[0], "threads:1,block:128");
    vt_order_parse(&o[1], "threads:2,block:64");
    vt_order_parse(&d.order, "threads:1");
    /* the sound bound: the trainer logs the sum, the block:1 auditor takes the entry */
    d.log_path = "build/t_midsum.vtlog";
    vt_run(&d, &p, 2, &r);
    CHECK(r.status == VT_OK && r.log.entries > 0, "sound training: %s (%lld entries)", r.message, (long long)r.log.entries);
    d.role = VT_ROLE_AUDIT;
    vt_order_parse(&d.order, "threads:1,block:1");
    vt_run(&d, &p, 2, &r);
    CHECK(r.status == VT_OK, "sound audit in block:1: %s", r.message);
    /* calibrated where the orders agree */
    d = vt_desc_default();
    vt_order_parse(&d.order, "threads:1");
    CHECK(vt_calibrate(&d, &p, 1, o, 2, 8.0, &t) == VT_OK, "calibration: %s", vt_last_error());
    d.bound = VT_BOUND_CALIBRATED;
    d.calib = &t;
    d.log_path = "build/t_midsum_cal.vtlog";
    vt_run(&d, &p, 2, &r);
    CHECK(r.status == VT_OK && r.log.entries == 0, "calibrated training: %s (%lld entries: the table did not shrink the bound)", r.message,
          (long long)r.log.entries);
    d.role = VT_ROLE_AUDIT;
    d.calib = NULL;
    vt_order_parse(&d.order, "threads:2,block:64");
    vt_run(&d, &p, 2, &r);
    CHECK(r.status == VT_OK, "calibrated audit in a calibrated order: %s", r.message);
    vt_order_parse(&d.order, "threads:1,block:1");
    vt_run(&d, &p, 2, &r);
    CHECK(r.status == VT_ERR_MISMATCH && r.first_bad_step == 0 && strstr(r.message, "step 0: the training state differs") &&
              strstr(r.message, "tensor 'w'"),
          "too small a factor, audited in block:1: %s at step %lld: %s (want the state of step 0 named as differing)", vt_status_name(r.status),
          (long long)r.first_bad_step, r.message);
    vt_calib_free(&t);
}

/* The calibrated bound only decides what the trainer logs (BOUND MODES in
   vtrain.h): the auditor checks every entry against its own sound interval.
   So, on the log calibrated_and_probabilistic trained (margin 8):
   - an entry moved out of the auditor's interval (a forged rounding) is
     refused as implausible at its step, with the honest table, with every
     factor edited to 1 (the largest a header may hold) and to 0;
   - a factor above 1 in the header (which would widen what an auditor that
     used it accepts) is refused;
   - an entry moved to its neighbouring binary32 value (a flipped rounding
     decision), its chunk commitment rewritten, is refused at its step
     (implausible, or the state differs from the commitment) or changed
     nothing committed. (A trainer that rewrote the state commitment too
     would have chosen within the auditor's sound interval: the freedom
     every bound mode leaves, no wider here.)
   And a factor too small makes an honest audit fail, not pass, and says
   where (midsum_too_small_factor). The probabilistic bound: a far-moved
   entry is refused as implausible too. */
TEST(calibrated_forgery_refused) {
    static const char *orders[3] = {"chaos:21,threads:1", "chaos:22,threads:2", "chaos:31,threads:1"};
    static const double tables[3] = {-1, 1.0, 0.0}; /* -1: the honest table */
    const int ncase = 2;
    size_t n;
    unsigned char *b = slurp("build/t_cal.vtlog", &n);
    int64_t nent = 0, st, k;
    int full, i, caught = 0, silent = 0, mism = 0, impl = 0;
    vt_report r;
    CHECK(b && g_cal.count > 0, "no calibrated log or table: calibrated_and_probabilistic runs first");
    if (!b || g_cal.count <= 0) { free(b); return; }
    while (nth_entry(b, n, (int)nent, &st, &full) >= 0) nent++;
    free(b);
    CHECK(nent >= ncase, "the calibrated log has %lld entries: too few to forge", (long long)nent);
    for (i = 0; i < ncase && nent >= ncase; i++) {
        int kth = i, t; /* the first entries (steps 33 and 34 today): short audits */
        for (t = 0; t < 3; t++) { /* moved far, under three tables */
            st = tamper_copy("build/t_cal.vtlog", "build/t_cal_forged.vtlog", kth, 128, 1);
            if (tables[t] >= 0) CHECK(set_calib_factors("build/t_cal_forged.vtlog", tables[t]) == g_cal.count, "the header's table");
            r = audit_bound("build/t_cal_forged.vtlog", VT_BOUND_CALIBRATED, orders[i % 2], st + 1);
            CHECK(r.status == VT_ERR_IMPLAUSIBLE && r.first_bad_step == st, "calibrated entry %d moved far (step %lld), %s table: %s at step %lld: %s",
                  kth, (long long)st, t == 0 ? "the honest" : t == 1 ? "an all-1" : "an all-0", vt_status_name(r.status), (long long)r.first_bad_step,
                  r.message);
        }
    }
    /* the other rounding, entry by entry until one has shown in the state and one has left the
       auditor's interval (today entries 2 and 4, at steps 38 and 47) */
    for (i = 0; i < nent && (!mism || !impl); i++) {
        st = tamper_copy("build/t_cal.vtlog", "build/t_cal_forged.vtlog", i, 1, 1);
        r = audit_bound("build/t_cal_forged.vtlog", VT_BOUND_CALIBRATED, orders[i % 2], st + 1);
        if (r.status == VT_OK) silent++;
        else {
            caught++;
            mism += r.status == VT_ERR_MISMATCH;
            impl += r.status == VT_ERR_IMPLAUSIBLE;
            CHECK((r.status == VT_ERR_MISMATCH || r.status == VT_ERR_IMPLAUSIBLE) && r.first_bad_step == st,
                  "calibrated entry %d flipped (step %lld): %s at step %lld: %s", i, (long long)st, vt_status_name(r.status),
                  (long long)r.first_bad_step, r.message);
        }
    }
    CHECK(caught > 0, "no flipped calibrated entry of %d showed: the test tests nothing", caught + silent);
    /* a factor above 1: refused before any step */
    tamper_copy("build/t_cal.vtlog", "build/t_cal_forged.vtlog", 0, 0, 0);
    set_calib_factors("build/t_cal_forged.vtlog", 1e6);
    r = audit_bound("build/t_cal_forged.vtlog", VT_BOUND_CALIBRATED, orders[0], 1);
    CHECK(r.status == VT_ERR_FORMAT && strstr(r.message, "factor 1e+06"), "a factor of 1e6 in the header: %s %s", vt_status_name(r.status), r.message);
    /* the probabilistic log: its first two entries moved far are implausible */
    b = slurp("build/t_prob.vtlog", &n);
    for (k = 0; b && k < 2; k++) {
        st = tamper_copy("build/t_prob.vtlog", "build/t_prob_forged.vtlog", (int)k, 128, 1);
        CHECK(st >= 0, "the probabilistic log has no entry %lld", (long long)k);
        if (st < 0) break;
        r = audit_bound("build/t_prob_forged.vtlog", VT_BOUND_PROBABILISTIC, orders[2], st + 1);
        CHECK(r.status == VT_ERR_IMPLAUSIBLE && r.first_bad_step == st, "probabilistic entry %lld moved far (step %lld): %s at step %lld: %s",
              (long long)k, (long long)st, vt_status_name(r.status), (long long)r.first_bad_step, r.message);
    }
    CHECK(b != NULL, "no probabilistic log: calibrated_and_probabilistic runs first");
    free(b);
    /* too small: calibrated where the orders agree, audited where they do not */
    midsum_too_small_factor();
}

/* --- bounds ----------------------------------------------------------------------- */

/* the all-ops program (tests/allops.h) */
static allops_app g_all;

/* The all-ops program runs every op of VT__OP_LIST forward and backward,
   and the optimizer's and clipping's points: an op added to vtrain.h but
   not to tests/allops.h fails here. */
TEST(every_op_covered) {
    vt_desc d = vt_desc_default();
    vt_program p = allops_program(&g_all);
    vt_report r;
    vt_ctx *c = vt_create(&d);
    CHECK(c != NULL, "vt_create: %s", vt_last_error());
    if (!c) return;
    p.setup(c, p.user);
    vt_run_ctx(c, &p, 2, &r);
    CHECK(r.status == VT_OK, "%s", r.message);
    vt_test_cover(c);
    vt_destroy(c);
    vt_test_check_coverage("the all-ops program (tests/allops.h)", 1);
}

/* Every op's bound holds empirically: at every rounding point of a program
   that uses all ops, the op is recomputed in several other orders (chaos:
   permuted and re-blocked sums, fma on and off, libm results moved by up to
   3 ulps) and |x_a - x_b| must never exceed e_a + e_b. Reports how loose the
   bounds are (the largest observed divergence as a fraction of 2e). */
TEST(bounds_hold_for_every_op) {
    vt_desc d = vt_desc_default();
    vt_program p;
    vt_order o[3];
    vt_calib t;
    int i;
    int64_t samples = 0, viol = 0;
    p = allops_program(&g_all);
    vt_order_parse(&o[0], "chaos:1");
    vt_order_parse(&o[1], "chaos:2,nofma");
    vt_order_parse(&o[2], "threads:1,block:13");
    CHECK(vt_calibrate(&d, &p, 12, o, 3, 1.0, &t) == VT_OK, "%s", vt_last_error());
    for (i = 0; i < t.count; i++) {
        char nm[64];
        vt__kind_name(t.e[i].kind, nm, sizeof nm);
        samples += t.e[i].samples;
        viol += t.e[i].violations;
        CHECK(t.e[i].violations == 0, "%s[%lld]: %lld elements diverged by more than e_a + e_b", nm, (long long)t.e[i].n,
              (long long)t.e[i].violations);
        if (t.e[i].max_ratio > 0)
            NOTE("%-18s n=%-7lld divergence up to %.2e of 2e (bound %.0fx loose), %lld samples", nm, (long long)t.e[i].n,
                 t.e[i].max_ratio, 1.0 / t.e[i].max_ratio, (long long)t.e[i].samples);
    }
    CHECK(samples >= 1000000, "only %lld outputs compared", (long long)samples);
    NOTE("%lld outputs compared over %d points, %lld violations", (long long)samples, t.count, (long long)viol);
    vt_calib_free(&t);
}

/* --- the numeric contract against an adversary ---------------------------------- */

/* Binary64 input (vt_from_f64, a VT_F64 tensor) outside fp64 mode is rounded
   to binary32 at entry: a product of two unrounded binary64 values is not
   exact, and with and without fma two machines would round it apart with a
   bound that assumed it exact. One two-term product, trained with fma and
   audited without, and the reverse. */
typedef struct { vt_tensor *w; vt_optim *opt; } f64_app;
static vt_status f64_setup(vt_ctx *c, void *u) {
    f64_app *a = (f64_app *)u;
    int64_t n[2] = {1, 2};
    a->w = vt_param(c, "w", 2, n);
    vt_init_const(c, a->w, 1.0);
    a->opt = vt_sgd_create(c, NULL);
    return vt_status_of(c);
}
static vt_status f64_step(vt_ctx *c, int64_t s, void *u) {
    f64_app *a = (f64_app *)u;
    /* x w with x = (1 + 2^-30, 1 - 2^-30) (not binary32 values) and w = 1 */
    double xv[2] = {1 + 0x1p-30, -(1 - 0x1p-29)};
    int64_t n[2] = {1, 2};
    vt_tensor *x = vt_from_f64(c, 2, n, xv), *y = vt_linear(c, x, a->w, NULL);
    (void)s;
    vt_backward(c, vt_sum(c, y));
    vt_optim_step(c, a->opt, 0.5);
    return vt_status_of(c);
}
TEST(binary64_input_rounded_at_entry) {
    f64_app a;
    vt_program p;
    vt_desc d = vt_desc_default();
    vt_ctx *c = vt_create(&d);
    const char *o[1] = {"threads:1,nofma"};
    int64_t n[1] = {2};
    double v[2] = {1 + 0x1p-40, 0.1}, back[2];
    vt_tensor *t;
    if (!c) { CHECK(0, "%s", vt_last_error()); return; }
    vt_step_begin(c);
    t = vt_from_f64(c, 1, n, v);
    vt_read_f64(c, t, back);
    CHECK(back[0] == 1.0 && back[1] == (double)0.1f, "vt_from_f64 kept %.17g and %.17g", back[0], back[1]);
    vt_step_end(c);
    vt_destroy(c);
    p.setup = f64_setup; p.step = f64_step; p.on_step = NULL; p.user = &a;
    CHECK(train_audit(&p, VT_MODE_VERIFIED, "build/t_f64.vtlog", 5, "threads:1", o, 1, NULL, NULL) == 1, "fma then nofma");
    o[0] = "threads:1";
    CHECK(train_audit(&p, VT_MODE_VERIFIED, "build/t_f64b.vtlog", 5, "threads:1,nofma", o, 1, NULL, NULL) == 1, "nofma then fma");
}

/* Compact entries decode uniquely whatever the auditor's own value. Random
   honest pairs: a reference x*, a trainer x within e of it and an auditor
   x' within e' of it, with
   x* on and near binary32 midpoints, across magnitudes (subnormals, zero,
   huge) and bounds from 2^-12 to 2^14 binary32 ulps, the two bounds 2^-21
   apart (TWO HONEST BOUNDS in >>rounding): wherever the trainer
   logs, the auditor must decode exactly the trainer's value, in compact and
   full entries alike; and a compact entry where the auditor's interval
   holds more than 256 values is refused (the calibrated mode's old decoding
   against a guessed window is what made an honest trainer lose). */
TEST(compact_entries_decode_uniquely) {
    int64_t t, logged = 0, compact = 0, wide_refused = 0;
    for (t = 0; t < 2000000; t++) {
        uint64_t h = vt_rng_u64(77, 1, (uint64_t)t);
        double u1 = vt_rng_uniform(77, 2, (uint64_t)t), u2 = vt_rng_uniform(77, 3, (uint64_t)t), u3 = vt_rng_uniform(77, 4, (uint64_t)t);
        float base = (float)ldexp(1 + (double)(h & 0xffff) / 65536, (int)((h >> 16) % 300) - 160);
        double ulp = (double)nextafterf(fabsf(base), INFINITY) - (double)fabsf(base), xs, e, e2, x, x2, w;
        float r, rr;
        int32_t kl, kh;
        int full, d;
        if (h >> 63) base = -base;
        if ((h >> 40) % 16 == 0) base = 0;
        xs = (double)base + ((h >> 50) & 1 ? 0.5 * ulp : 0) + (u3 - 0.5) * ulp * ((h >> 51) & 1 ? 1e-6 : 2);
        e = ulp * ldexp(1, (int)((h >> 32) % 27) - 12) * (0.5 + u1);
        e2 = e * (1 + (2 * u2 - 1) * 0x1p-21);
        x = xs + e * (2 * vt_rng_uniform(78, 1, (uint64_t)t) - 1);
        x2 = xs + e2 * (2 * vt_rng_uniform(78, 2, (uint64_t)t) - 1);
        /* half the trials as a calibrated trainer: a factor of 1e-3 decides what it logs, the sound bound
           what it writes compact (and the auditor decodes against its sound interval) */
        w = vt__widen(x, t % 2 ? e * 1e-3 : e);
        if (vt__fbits((float)(x - w)) == vt__fbits((float)(x + w))) continue; /* the trainer logs nothing */
        logged++;
        r = (float)x;
        full = !vt__compact_ok(x, e);
        compact += !full;
        d = vt__decode_entry(x2, e2, full, full ? vt__fbits(r) : (uint32_t)vt__key(r) & 0xFFu, &rr, &kl, &kh);
        if (d || vt__fbits(rr) != vt__fbits(r)) {
            CHECK(0, "trial %lld: x %.17g e %.3g, x' %.17g e' %.3g: the %s entry for %.9g decoded as %.9g (status %d)", (long long)t,
                  x, e, x2, e2, full ? "full" : "compact", (double)r, (double)rr, d);
            return;
        }
        if ((int64_t)kh - kl > 255) { /* a forged compact entry here is refused */
            d = vt__decode_entry(x2, e2, 0, (uint32_t)vt__key(r) & 0xFFu, &rr, &kl, &kh);
            CHECK(d == 1, "trial %lld: a compact entry in an interval of %lld values was accepted", (long long)t, (long long)kh - kl + 1);
            wide_refused++;
        }
    }
    CHECK(logged > 100000 && compact > 10000 && wide_refused > 10000, "too few cases: %lld logged, %lld compact, %lld wide",
          (long long)logged, (long long)compact, (long long)wide_refused);
    NOTE("%lld logged entries (%lld compact) decoded to the trainer's value by an auditor with another value and bound; %lld "
         "forged compact entries in wide intervals refused", (long long)logged, (long long)compact, (long long)wide_refused);
}

/* Probabilistic bounds assume random rounding errors: a transcript refuses
   them unless asked for by name. */
TEST(probabilistic_transcript_needs_consent) {
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    static const char *files[] = {"manifest.txt", "log.vtlog", "commits.bin", "root.txt"};
    int i;
    for (i = 0; i < 4; i++) { /* a fresh directory each run */
        char p[128];
        snprintf(p, sizeof p, "build/t_prob_run/%s", files[i]);
        remove(p);
    }
    d.bound = VT_BOUND_PROBABILISTIC;
    d.transcript = "build/t_prob_run";
    c = vt_create(&d);
    CHECK(!c && strstr(vt_last_error(), "allow_probabilistic"), "a probabilistic transcript was created without consent");
    vt_destroy(c);
    d.allow_probabilistic = 1;
    c = vt_create(&d);
    CHECK(c != NULL, "with consent: %s", vt_last_error());
    vt_destroy(c);
}

/* A correctly rounded product decides with the sound bound in every bound
   mode (vt__sound_ord). The product 1 + (2^-24 - d) + N t, t = 2^-53 +
   2^-76, N = 16384, d = 3 2^-40: its exact value lies 2^-40 below the
   binary32 midpoint 1 + 2^-24 (RNE32: 1), but a sum in k order, one term at
   a time (block:1), rounds every + t up to a whole binary64 ulp and ends
   2^-40 ABOVE the midpoint, N u away from the exact value: far outside
   lambda sqrt(K) u S (lambda 12: 1536 u) and inside the sound K u S. With
   the probabilistic gamma the trainer's rule took RNE32(x) = 1 + 2^-23
   there, another order gave 1, and neither logged anything. Now every
   order, lazy or written-out bound, evaluates that output exactly. */
static float crp_product(const char *ord, int lazy, int64_t *exact) {
    enum { N = 16384, K = N + 2 };
    static float a[K], b[K];
    int64_t ea[2] = {1, K}, eb[2] = {K, 1};
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    vt_log_stats st;
    float r = -1;
    int i;
    for (i = 0; i < K; i++) { a[i] = 1; b[i] = (float)(0x1p-53 + 0x1p-76); }
    b[0] = 1;
    b[1] = (float)(0x1p-24 - 3 * 0x1p-40);
    d.bound = VT_BOUND_PROBABILISTIC;
    vt_order_parse(&d.order, ord);
    c = vt_create(&d);
    if (!c) return -1;
    vt__no_lazy = !lazy;
    vt_step_begin(c);
    vt_read_f32(c, vt_matmul(c, vt_from_f32(c, 2, ea, a), vt_from_f32(c, 2, eb, b), 0, 0), &r);
    vt_step_end(c);
    vt__no_lazy = 0;
    vt_log_stats_get(c, &st);
    *exact = st.exact;
    CHECK(vt_status_of(c) == VT_OK, "%s: %s", ord, vt_error_message(c));
    vt_destroy(c);
    return r;
}

TEST(probabilistic_products_correctly_rounded) {
    static const char *orders[] = {"threads:1", "block:1", "block:1,nofma", "threads:2,block:1", "chaos:5"};
    enum { N = 16384, K = N + 2 };
    double s = 1 + (double)(float)(0x1p-24 - 3 * 0x1p-40), t = (double)(float)(0x1p-53 + 0x1p-76), mid = 1 + 0x1p-24;
    double S = s + N * t, wprob = 2 * 12 * sqrt((double)K) * 0x1p-53 * S;
    int i, oi, lazy;
    for (i = 0; i < N; i++) s += t; /* the block:1 order, by hand */
    CHECK(s - mid > 1.5 * wprob && (double)N * t - 3 * 0x1p-40 < 0, "the case does not separate the two gammas: the "
          "sequential sum is %a above the midpoint, the probabilistic width %a", s - mid, wprob);
    for (oi = 0; oi < 5; oi++)
        for (lazy = 0; lazy < 2; lazy++) {
            int64_t ex = 0;
            float r = crp_product(orders[oi], lazy, &ex);
            CHECK(r == 1.0f && ex == 1, "%s, %s bound: the product is %a with %lld exact evaluations, its correctly rounded "
                  "value is 1 (the probabilistic gamma decided it)", orders[oi], lazy ? "lazy" : "written-out", (double)r,
                  (long long)ex);
        }
}

int main(int argc, char **argv) {
    TEST_FILTER(argc, argv);
    setvbuf(stdout, NULL, _IONBF, 0);
    if (vt_digits_load("data/digits.csv", &g_digits) != VT_OK) { printf("%s\n0 passed, 1 failed\n", vt_last_error()); return 1; }
    /* 64-48-10, batch 32, clipping, cosine schedule, batches committed */
    g_mlp = digitsmlp_new(&g_digits);
    g_mlp.sizes[1] = 48; g_mlp.batch = 32; g_mlp.clip = 5.0; g_mlp.lr_min = 3e-4; g_mlp.commit = 1;
    if (chargpt_load(&g_gpt, "data/kjv_nt.txt") != VT_OK) { printf("%s\n0 passed, 1 failed\n", vt_last_error()); return 1; }
    RUN(every_op_covered);
    RUN(bounds_hold_for_every_op);
    RUN(mlp_replays_across_orders);
    RUN(mlp_native_diverges);
    RUN(memory_chunks_replay);
    RUN(evaluation_logs_nothing);
    RUN(crafted_chunks_refused);
    RUN(log_edge_cases);
    RUN(gpt_replays_across_orders);
    RUN(gpt_native_diverges);
    RUN(calibrated_and_probabilistic);
    RUN(calibrated_forgery_refused);
    RUN(lazy_bound_logs_what_the_written_bound_logs);
    RUN(layernorm_kept_statistics_change_nothing);
    RUN(caps_by_history_same_bits);
    RUN(a_row_caps_nan_and_infinity);
    RUN(fused_products_same_bits);
    RUN(fused_casts_same_bits);
    RUN(fused_casts_name_the_first_nan);
    RUN(fused_causal_points_log_what_the_pass_logs);
    RUN(fused_blocks_added_to_old_values);
    RUN(adamw_one_pass_same_bits);
    RUN(flat_parameters_same_bits);
    RUN(broadcast_backward_same_bits);
    RUN(stalled_threads_same_log);
    RUN(stalled_threads_entries_in_order);
    RUN(crowded_pool_runs_solo_same_results);
    RUN(crowded_os_extends_spells);
    RUN(tamper_changed_entry);
    RUN(tamper_chunk_not_recommitted);
    RUN(tamper_deleted_record);
    RUN(tamper_truncated_and_checksum);
    RUN(log_of_another_program);
    RUN(round_only_fails_verified_fixes);
    RUN(binary64_input_rounded_at_entry);
    RUN(compact_entries_decode_uniquely);
    RUN(probabilistic_transcript_needs_consent);
    RUN(probabilistic_products_correctly_rounded);
    vt_calib_free(&g_cal);
    vt_digits_free(&g_digits);
    chargpt_free(&g_gpt);
    return TEST_SUMMARY();
}
