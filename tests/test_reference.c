/* tests/test_reference.c - forward values, gradients and optimizer steps
   against an independent reference: PyTorch in float64.

   tests/fixtures/reference.txt is made by tests/fixtures/make_reference.py
   (see tests/fixtures/README.md). Every input in it is binary32-representable,
   so vtrain takes it without rounding. Each case is rebuilt here with the
   public API and compared twice:

   - in VT_MODE_FP64, where values stay binary64, with tolerances near binary64
     (they differ from PyTorch only by summation order and libm);
   - in VT_MODE_VERIFIED, where every op output is a binary32 value, with
     tolerances at binary32 level.

   The error measure of one tensor, used by every check below, is
       err = max_i |got_i - ref_i| / max(|ref_i|, 1e-3 max_j |ref_j|)
   an elementwise relative error whose denominator never falls below a
   thousandth of the tensor's largest value (so entries that cancel to near 0,
   and exact zeros such as relu's, are judged on the tensor's scale). A check
   passes when err <= its tolerance; each test notes its worst err per mode.

   Tolerances (err as above):
     FP64, forward of elementwise / row ops (gelu, tanh, relu, softmax,
       log_softmax, layernorm), losses, attention:        1e-12
     FP64, gradients of those:                            1e-11
     FP64, the GPT-2 (logits, loss, every parameter's gradient): 1e-10
     FP64, optimizer steps and clipping:                  1e-13
     VERIFIED, forward outputs of one op (one rounding of an accurate
       binary64 value: at most half a binary32 ulp):      2^-23
     VERIFIED, gradients of one op (inputs of the backward are binary32
       values, the result is rounded):                    1e-5
       except tanh: 3e-4. Its backward is dy (1 - y^2) with y the binary32
       output (as PyTorch does in float32); 1 - y^2 loses relative accuracy
       as |y| -> 1, about 2^-23 y^2 / (1 - y^2): 4.7e-5 predicted, 2.8e-5
       measured at x = -4.235 (y = -0.99958).
     VERIFIED, attention (three ops in sequence): forward 1e-5, backward 1e-4
     VERIFIED, the GPT-2 (many binary32 roundings in sequence): 1e-3
     VERIFIED, optimizers (m, v, w are binary32 after every step, the lr is
       rounded to binary32, and w - lr d can cancel):     5e-5
     VERIFIED, clipping: the norm 2^-23, the clipped gradients 2^-22.
   Tolerances sit well above the errors measured when they were set (each
   test notes its measured worst err per mode), and VERIFIED results are
   bit-identical on every machine, so these checks are not flaky.

   Run from the repository root: the fixture path is relative. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "test.h"

#define FIXTURE "tests/fixtures/reference.txt"

/* --- the fixture ------------------------------------------------------------ */

typedef struct {
    char name[64];
    int ndim;
    int64_t ne[VT_MAX_DIMS];
    int64_t n;
    double *v;
} ref_rec;

static ref_rec *g_recs;
static int g_nrecs;
static char g_parse_err[512]; /* empty when the file parsed */

static void parse_fail(const char *fmt, ...) VT__PRINTF(1, 2);
static void parse_fail(const char *fmt, ...) {
    va_list ap;
    if (g_parse_err[0]) return;
    va_start(ap, fmt);
    vsnprintf(g_parse_err, sizeof g_parse_err, fmt, ap);
    va_end(ap);
}

/* whitespace-separated tokens, with the line each starts on */
typedef struct { char *s; size_t pos, len; int line; } tok_stream;

static const char *next_tok(tok_stream *ts, int *line) {
    size_t b;
    while (ts->pos < ts->len && (ts->s[ts->pos] == ' ' || ts->s[ts->pos] == '\t' || ts->s[ts->pos] == '\n' || ts->s[ts->pos] == '\r')) {
        if (ts->s[ts->pos] == '\n') ts->line++;
        ts->pos++;
    }
    if (ts->pos >= ts->len) return NULL;
    b = ts->pos;
    while (ts->pos < ts->len && !(ts->s[ts->pos] == ' ' || ts->s[ts->pos] == '\t' || ts->s[ts->pos] == '\n' || ts->s[ts->pos] == '\r'))
        ts->pos++;
    if (ts->pos < ts->len) {
        if (ts->s[ts->pos] == '\n') ts->line++;
        ts->s[ts->pos++] = 0;
    }
    *line = ts->line;
    return ts->s + b;
}

static int parse_int(const char *t, long *out) {
    char *end;
    long v;
    if (!t || !*t) return 0;
    v = strtol(t, &end, 10);
    if (*end) return 0;
    *out = v;
    return 1;
}

static int g_cap;
/* append: keep the records of an earlier file (reference_cnn.txt after reference.txt) */
static void load_fixture_into(const char *path, int append) {
    FILE *f = fopen(path, "rb");
    long sz;
    int line = 0, cap = append ? g_cap : 0;
    tok_stream ts;
    const char *t;
    if (!append) { g_parse_err[0] = 0; g_nrecs = 0; }
    if (!f) { parse_fail("cannot open %s (run the test from the repository root)", path); return; }
    fseek(f, 0, SEEK_END);
    sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    ts.s = sz >= 0 ? (char *)malloc((size_t)sz + 1) : NULL;
    if (!ts.s || fread(ts.s, 1, (size_t)sz, f) != (size_t)sz) {
        fclose(f);
        free(ts.s);
        parse_fail("cannot read %s", path);
        return;
    }
    fclose(f);
    ts.s[sz] = 0;
    ts.pos = 0; ts.len = (size_t)sz; ts.line = 1;
    while ((t = next_tok(&ts, &line)) != NULL) {
        ref_rec r;
        long nd, d;
        int64_t i;
        memset(&r, 0, sizeof r);
        if (strcmp(t, "tensor")) { parse_fail("%s:%d: expected 'tensor', found '%.40s'", path, line, t); goto done; }
        t = next_tok(&ts, &line);
        if (!t || strlen(t) >= sizeof r.name) { parse_fail("%s:%d: record without a (short) name", path, line); goto done; }
        strcpy(r.name, t);
        for (i = 0; i < g_nrecs; i++)
            if (!strcmp(g_recs[i].name, r.name)) { parse_fail("%s:%d: record '%s' appears twice", path, line, r.name); goto done; }
        if (!parse_int(next_tok(&ts, &line), &nd) || nd < 0 || nd > VT_MAX_DIMS) {
            parse_fail("%s:%d: record '%s': ndim missing or not in 0..%d", path, line, r.name, VT_MAX_DIMS);
            goto done;
        }
        r.ndim = (int)nd;
        r.n = 1;
        for (i = 0; i < nd; i++) {
            if (!parse_int(next_tok(&ts, &line), &d) || d < 1 || d > 1000000) {
                parse_fail("%s:%d: record '%s': dimension %d missing or bad", path, line, r.name, (int)i);
                goto done;
            }
            r.ne[i] = d;
            r.n *= d;
        }
        r.v = (double *)malloc(sizeof(double) * (size_t)r.n);
        if (!r.v) { parse_fail("out of memory"); goto done; }
        for (i = 0; i < r.n; i++) {
            char *end;
            t = next_tok(&ts, &line);
            if (!t || !strcmp(t, "tensor")) {
                parse_fail("%s:%d: record '%s' has %lld values, its shape needs %lld", path, line, r.name, (long long)i, (long long)r.n);
                free(r.v);
                goto done;
            }
            r.v[i] = strtod(t, &end);
            if (*end || !isfinite(r.v[i])) {
                parse_fail("%s:%d: record '%s', value %lld: '%.40s' is not a finite number", path, line, r.name, (long long)i, t);
                free(r.v);
                goto done;
            }
        }
        if (g_nrecs == cap) {
            cap = cap ? 2 * cap : 64;
            g_recs = (ref_rec *)realloc(g_recs, sizeof(ref_rec) * (size_t)cap);
            if (!g_recs) { parse_fail("out of memory"); goto done; }
            g_cap = cap;
        }
        g_recs[g_nrecs++] = r;
    }
    if (!g_nrecs) parse_fail("%s holds no record", path);
done:
    free(ts.s);
}
static void load_fixture(const char *path) { load_fixture_into(path, 0); }

static const ref_rec *find_rec(const char *name) {
    int i;
    for (i = 0; i < g_nrecs; i++)
        if (!strcmp(g_recs[i].name, name)) return &g_recs[i];
    return NULL;
}

/* a record that must exist with this shape (ndim -1: any shape); a missing or
   misshapen record fails the running test with its name */
static const ref_rec *need_rec(const char *name, int ndim, int64_t d0, int64_t d1, int64_t d2) {
    const ref_rec *r = find_rec(name);
    int64_t want[3];
    int i;
    want[0] = d0; want[1] = d1; want[2] = d2;
    if (g_parse_err[0]) { CHECK(0, "fixture unusable (%s): cannot check '%s'", g_parse_err, name); return NULL; }
    if (!r) { CHECK(0, "fixture %s: record '%s' is missing", FIXTURE, name); return NULL; }
    if (ndim < 0) return r;
    if (r->ndim != ndim) { CHECK(0, "fixture record '%s': ndim %d, expected %d", name, r->ndim, ndim); return NULL; }
    for (i = 0; i < ndim && i < 3; i++)
        if (r->ne[i] != want[i]) {
            CHECK(0, "fixture record '%s': dim %d is %lld, expected %lld", name, i, (long long)r->ne[i], (long long)want[i]);
            return NULL;
        }
    return r;
}

/* --- comparing -------------------------------------------------------------- */

typedef struct { double worst; char where[96]; } err_acc;
static err_acc g_acc[2]; /* [0] FP64, [1] VERIFIED, per test */
static int g_mi;         /* which g_acc the running case fills */
#define MODE_NAME (g_mi ? "verified" : "fp64")

static void acc_reset(void) { memset(g_acc, 0, sizeof g_acc); }

static void acc_note(void) {
    NOTE("max err: fp64 %.3g (%s), verified %.3g (%s)", g_acc[0].worst, g_acc[0].where[0] ? g_acc[0].where : "all exact",
         g_acc[1].worst, g_acc[1].where[0] ? g_acc[1].where : "all exact");
}

/* compares n values against a record; what names the tensor in messages */
static void compare(const char *what, const double *got, const ref_rec *r, double tol) {
    int64_t i, worst_i = 0;
    double mx = 0, err = 0;
    const char *mode = MODE_NAME;
    if (!r || !got) return;
    for (i = 0; i < r->n; i++) if (fabs(r->v[i]) > mx) mx = fabs(r->v[i]);
    for (i = 0; i < r->n; i++) {
        double den = fabs(r->v[i]) > 1e-3 * mx ? fabs(r->v[i]) : 1e-3 * mx, e;
        if (den < 1e-300) den = 1e-300;
        e = fabs(got[i] - r->v[i]) / den;
        if (!(e <= err)) { err = e; worst_i = i; } /* NaN is worst */
    }
    CHECK(err <= tol, "[%s] %s vs %s: err %.3g > tolerance %.3g at element %lld (got %.17g, reference %.17g)", mode, what,
          r->name, err, tol, (long long)worst_i, got[worst_i], r->v[worst_i]);
    if (!(err <= g_acc[g_mi].worst)) {
        g_acc[g_mi].worst = err;
        snprintf(g_acc[g_mi].where, sizeof g_acc[g_mi].where, "%s", r->name);
    }
}

/* compares a tensor's values (or its gradient) against a record, checking the
   element count first */
static void compare_t(vt_ctx *c, const char *what, const vt_tensor *t, const ref_rec *r, double tol) {
    double *buf;
    if (!r) return;
    if (!t) { CHECK(0, "[%s] %s: no tensor (%s)", MODE_NAME, what, vt_error_message(c)); return; }
    if (vt_numel(t) != r->n) {
        CHECK(0, "%s has %lld elements, reference '%s' %lld", what, (long long)vt_numel(t), r->name, (long long)r->n);
        return;
    }
    buf = (double *)malloc(sizeof(double) * (size_t)(r->n + 1));
    vt_read_f64(c, t, buf);
    compare(what, buf, r, tol);
    free(buf);
}

/* a parameter's gradient (a fresh gradient reads as zeros) */
static void compare_grad(vt_ctx *c, const char *what, const vt_tensor *p, const ref_rec *r, double tol) {
    if (!p || !r) return;
    if (!p->grad || p->grad_fresh) {
        double *z = (double *)calloc((size_t)r->n + 1, sizeof(double));
        compare(what, z, r, tol);
        free(z);
        return;
    }
    compare_t(c, what, p->grad, r, tol);
}

/* --- helpers --------------------------------------------------------------- */

static const vt_mode k_modes[2] = {VT_MODE_FP64, VT_MODE_VERIFIED};

static vt_ctx *mk_ctx(vt_mode m) {
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    d.mode = m;
    c = vt_create(&d);
    CHECK(c != NULL, "vt_create(%s): %s", vt_mode_name(m), vt_last_error());
    return c;
}

/* Each case runs once per mode, FP64 (g_mi 0) then VERIFIED (1), each in a
   context of its own: EACH_MODE(c) { ...; done(c); }. TOL(f, v) is the
   tolerance of the running mode. */
#define EACH_MODE(c) for (g_mi = 0; g_mi < 2; g_mi++) if (((c) = mk_ctx(k_modes[g_mi])) != NULL)
#define TOL(f, v) (g_mi ? (v) : (f))
static void done(vt_ctx *c) {
    vt_step_end(c);
    vt_destroy(c);
}

/* a parameter holding a record's values, with its shape */
static vt_tensor *param_from(vt_ctx *c, const char *name, const ref_rec *r) {
    int64_t one = 1;
    vt_tensor *p;
    if (!r) return NULL;
    p = vt_param(c, name, r->ndim ? r->ndim : 1, r->ndim ? r->ne : &one);
    if (p) vt_write_f64(c, p, r->v);
    return p;
}

/* a step-arena constant holding a record's values */
static vt_tensor *const_from(vt_ctx *c, const ref_rec *r) {
    int64_t one = 1;
    if (!r) return NULL;
    return vt_from_f64(c, r->ndim ? r->ndim : 1, r->ndim ? r->ne : &one, r->v);
}

static vt_tensor *int_from(vt_ctx *c, const ref_rec *r) {
    int32_t *v;
    int64_t i;
    vt_tensor *t;
    if (!r) return NULL;
    v = (int32_t *)malloc(sizeof(int32_t) * (size_t)r->n);
    for (i = 0; i < r->n; i++) v[i] = (int32_t)r->v[i];
    t = vt_from_i32(c, r->ndim, r->ne, v);
    free(v);
    return t;
}

/* L = sum(y * R): its gradient w.r.t. y is R */
static vt_tensor *dot_loss(vt_ctx *c, vt_tensor *y, const ref_rec *R) {
    return vt_sum(c, vt_mul(c, y, const_from(c, R)));
}

static void check_ok(vt_ctx *c, const char *what) {
    CHECK(vt_status_of(c) == VT_OK, "[%s] %s: %s", MODE_NAME, what, vt_error_message(c));
}

/* --- the cases ---------------------------------------------------------------- */

TEST(fixture_parses) {
    static const char *names[] = {
        "gelu.x", "gelu.R", "gelu.y", "gelu.dx", "act.x", "act.R", "tanh.y", "tanh.dx", "relu.y", "relu.dx", "softmax.y",
        "softmax.dx", "log_softmax.y", "log_softmax.dx", "ln.x", "ln.w", "ln.b", "ln.R", "ln.y", "ln.dx", "ln.dw", "ln.db",
        "ce.logits", "ce.targets", "ce.loss", "ce.dlogits", "mse.pred", "mse.target", "mse.loss", "mse.dpred",
        "mse.dtarget", "att.qkv", "att.R", "att.out", "att.dqkv", "wte", "wpe", "lnfw", "lnfb", "grad.wte", "grad.lnfb",
        "gpt.tokens", "gpt.targets", "gpt.logits", "gpt.loss", "adamw.p0", "adamw.g1", "adamw.g2", "adamw.g3", "adamw.p1",
        "adamw.p2", "adamw.p3", "sgd.p0", "sgd.g1", "sgd.g2", "sgd.g3", "sgd.p1", "sgd.p2", "sgd.p3", "sgd_nesterov.p1",
        "sgd_nesterov.p2", "sgd_nesterov.p3", "clip.ga", "clip.gb", "clip.norm", "clip.a", "clip.b"};
    size_t i;
    CHECK(!g_parse_err[0], "%s", g_parse_err);
    if (g_parse_err[0]) return;
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        CHECK(find_rec(names[i]) != NULL, "fixture %s: record '%s' is missing", FIXTURE, names[i]);
    NOTE("%d records", g_nrecs);
}

/* the parser rejects what it should, naming the record */
TEST(fixture_parser_rejects_bad_files) {
    static const struct { const char *text, *want; } bad[] = {
        {"tensor a 1 3\n1 2\n", "'a' has 2 values"},
        {"tensor a 1 2\n1 2\ntensor b 1 2\n1 x\n", "'b', value 1"},
        {"tensor a 1 2\n1 2\ntensor a 1 1\n5\n", "'a' appears twice"},
        {"tensor a 1 2\n1 2\nvector b\n", "expected 'tensor'"},
        {"tensor a 9 1\n1\n", "ndim missing"},
        {"tensor a 1 2\n1 nan\n", "not a finite number"},
        {"tensor a 2 2\n", "dimension 1 missing"},
        {"", "no record"}};
    const char *path = "build/test_reference_bad.txt";
    size_t i;
    ref_rec *saved = g_recs;
    int saved_n = g_nrecs;
    char saved_err[sizeof g_parse_err];
    memcpy(saved_err, g_parse_err, sizeof saved_err);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fopen(path, "wb");
        if (!f) { CHECK(0, "cannot write %s", path); break; }
        fputs(bad[i].text, f);
        fclose(f);
        g_recs = NULL;
        load_fixture(path);
        CHECK(strstr(g_parse_err, bad[i].want) != NULL, "bad file %d: error '%s', expected it to mention '%s'", (int)i,
              g_parse_err, bad[i].want);
        {
            int k;
            for (k = 0; k < g_nrecs; k++) free(g_recs[k].v);
            free(g_recs);
        }
    }
    remove(path);
    g_recs = saved;
    g_nrecs = saved_n;
    memcpy(g_parse_err, saved_err, sizeof saved_err);
}

TEST(gelu) {
    vt_ctx *c;
    const ref_rec *x = need_rec("gelu.x", 2, 4, 7, 0), *R = need_rec("gelu.R", 2, 4, 7, 0);
    const ref_rec *y = need_rec("gelu.y", 2, 4, 7, 0), *dx = need_rec("gelu.dx", 2, 4, 7, 0);
    acc_reset();
    if (!x || !R || !y || !dx) return;
    EACH_MODE(c) {
        vt_tensor *p, *out;
        p = param_from(c, "x", x);
        vt_step_begin(c);
        out = vt_gelu(c, p);
        vt_backward(c, dot_loss(c, out, R));
        check_ok(c, "gelu");
        compare_t(c, "vt_gelu", out, y, TOL(1e-12, 0x1p-23));
        compare_grad(c, "vt_gelu backward", p, dx, TOL(1e-11, 1e-5));
        done(c);
    }
    acc_note();
}

TEST(tanh_relu_softmax_log_softmax) {
    vt_ctx *c;
    static const char *ops[4] = {"tanh", "relu", "softmax", "log_softmax"};
    const ref_rec *x = need_rec("act.x", 3, 3, 5, 9), *R = need_rec("act.R", 3, 3, 5, 9);
    int k;
    acc_reset();
    if (!x || !R) return;
    for (k = 0; k < 4; k++) {
        char ny[32], nd[32];
        const ref_rec *y, *dx;
        snprintf(ny, sizeof ny, "%s.y", ops[k]);
        snprintf(nd, sizeof nd, "%s.dx", ops[k]);
        y = need_rec(ny, 3, 3, 5, 9);
        dx = need_rec(nd, 3, 3, 5, 9);
        if (!y || !dx) continue;
        EACH_MODE(c) {
            vt_tensor *p, *out;
            char what[64];
            p = param_from(c, "x", x);
            vt_step_begin(c);
            out = k == 0 ? vt_tanh(c, p) : k == 1 ? vt_relu(c, p) : k == 2 ? vt_softmax(c, p) : vt_log_softmax(c, p);
            vt_backward(c, dot_loss(c, out, R));
            check_ok(c, ops[k]);
            snprintf(what, sizeof what, "vt_%s", ops[k]);
            compare_t(c, what, out, y, TOL(1e-12, 0x1p-23));
            snprintf(what, sizeof what, "vt_%s backward", ops[k]);
            /* tanh' = 1 - y^2 from the binary32 y: see the tolerance table */
            compare_grad(c, what, p, dx, TOL(1e-11, k == 0 ? 3e-4 : 1e-5));
            done(c);
        }
    }
    acc_note();
}

TEST(layernorm) {
    vt_ctx *c;
    const ref_rec *x = need_rec("ln.x", 3, 2, 3, 10), *w = need_rec("ln.w", 1, 10, 0, 0), *b = need_rec("ln.b", 1, 10, 0, 0);
    const ref_rec *R = need_rec("ln.R", 3, 2, 3, 10), *y = need_rec("ln.y", 3, 2, 3, 10);
    const ref_rec *dx = need_rec("ln.dx", 3, 2, 3, 10), *dw = need_rec("ln.dw", 1, 10, 0, 0), *db = need_rec("ln.db", 1, 10, 0, 0);
    acc_reset();
    if (!x || !w || !b || !R || !y || !dx || !dw || !db) return;
    EACH_MODE(c) {
        vt_tensor *px, *pw, *pb, *out;
        px = param_from(c, "x", x);
        pw = param_from(c, "w", w);
        pb = param_from(c, "b", b);
        vt_step_begin(c);
        out = vt_layernorm(c, px, pw, pb, 1e-5);
        vt_backward(c, dot_loss(c, out, R));
        check_ok(c, "layernorm");
        compare_t(c, "vt_layernorm", out, y, TOL(1e-12, 0x1p-23));
        compare_grad(c, "vt_layernorm dx", px, dx, TOL(1e-11, 1e-5));
        compare_grad(c, "vt_layernorm dw", pw, dw, TOL(1e-11, 1e-5));
        compare_grad(c, "vt_layernorm db", pb, db, TOL(1e-11, 1e-5));
        done(c);
    }
    acc_note();
}

TEST(cross_entropy) {
    vt_ctx *c;
    const ref_rec *lg = need_rec("ce.logits", 2, 6, 11, 0), *tg = need_rec("ce.targets", 1, 6, 0, 0);
    const ref_rec *loss = need_rec("ce.loss", 0, 0, 0, 0), *dl = need_rec("ce.dlogits", 2, 6, 11, 0);
    acc_reset();
    if (!lg || !tg || !loss || !dl) return;
    EACH_MODE(c) {
        vt_tensor *p, *l;
        p = param_from(c, "logits", lg);
        vt_step_begin(c);
        l = vt_cross_entropy(c, p, int_from(c, tg));
        vt_backward(c, l);
        check_ok(c, "cross_entropy");
        compare_t(c, "vt_cross_entropy", l, loss, TOL(1e-12, 0x1p-23));
        compare_grad(c, "vt_cross_entropy backward", p, dl, TOL(1e-11, 1e-5));
        done(c);
    }
    acc_note();
}

TEST(mse) {
    vt_ctx *c;
    const ref_rec *pr = need_rec("mse.pred", 2, 5, 4, 0), *tg = need_rec("mse.target", 2, 5, 4, 0);
    const ref_rec *loss = need_rec("mse.loss", 0, 0, 0, 0), *dp = need_rec("mse.dpred", 2, 5, 4, 0);
    const ref_rec *dt = need_rec("mse.dtarget", 2, 5, 4, 0);
    acc_reset();
    if (!pr || !tg || !loss || !dp || !dt) return;
    EACH_MODE(c) {
        vt_tensor *pp, *pt, *l;
        pp = param_from(c, "pred", pr);
        pt = param_from(c, "target", tg);
        vt_step_begin(c);
        l = vt_mse(c, pp, pt);
        vt_backward(c, l);
        check_ok(c, "mse");
        compare_t(c, "vt_mse", l, loss, TOL(1e-12, 0x1p-23));
        compare_grad(c, "vt_mse d/dpred", pp, dp, TOL(1e-11, 1e-5));
        compare_grad(c, "vt_mse d/dtarget", pt, dt, TOL(1e-11, 1e-5));
        done(c);
    }
    acc_note();
}

TEST(attention) {
    vt_ctx *c;
    const ref_rec *qkv = need_rec("att.qkv", 3, 2, 5, 36), *R = need_rec("att.R", 3, 2, 5, 12);
    const ref_rec *out = need_rec("att.out", 3, 2, 5, 12), *dq = need_rec("att.dqkv", 3, 2, 5, 36);
    acc_reset();
    if (!qkv || !R || !out || !dq) return;
    EACH_MODE(c) {
        vt_tensor *p, *y;
        p = param_from(c, "qkv", qkv);
        vt_step_begin(c);
        y = vt_attention(c, p, 3);
        vt_backward(c, dot_loss(c, y, R));
        check_ok(c, "attention");
        /* three ops, three binary32 roundings in VERIFIED */
        compare_t(c, "vt_attention", y, out, TOL(1e-12, 1e-5));
        compare_grad(c, "vt_attention backward", p, dq, TOL(1e-11, 1e-4));
        done(c);
    }
    acc_note();
}

TEST(gpt2_forward_backward) {
    vt_ctx *c;
    const ref_rec *tok = need_rec("gpt.tokens", 2, 2, 6, 0), *tg = need_rec("gpt.targets", 2, 2, 6, 0);
    const ref_rec *lg = need_rec("gpt.logits", 3, 2, 6, 13), *loss = need_rec("gpt.loss", 0, 0, 0, 0);
    acc_reset();
    if (!tok || !tg || !lg || !loss) return;
    EACH_MODE(c) {
        vt_gpt g;
        vt_gpt_config cfg;
        vt_tensor *logits, *l, *l2;
        int i, np;
        memset(&cfg, 0, sizeof cfg);
        cfg.vocab = 13; cfg.context = 8; cfg.layers = 2; cfg.heads = 2; cfg.width = 8; cfg.dropout = 0;
        vt_gpt_init(c, &g, &cfg, 1);
        check_ok(c, "vt_gpt_init");
        np = vt_param_count(c);
        CHECK(np == 2 + 12 * cfg.layers + 2, "vt_gpt_init made %d parameters, expected %d", np, 2 + 12 * cfg.layers + 2);
        for (i = 0; i < np; i++) {
            vt_tensor *p = vt_param_at(c, i);
            const ref_rec *r = need_rec(p->name, -1, 0, 0, 0);
            int d, same;
            if (!r) continue;
            same = r->ndim == p->ndim;
            for (d = 0; same && d < p->ndim; d++) same = r->ne[d] == p->ne[d];
            CHECK(same, "parameter '%s': shape differs from the reference's (ndim %d vs %d)", p->name, p->ndim, r->ndim);
            if (same) vt_write_f64(c, p, r->v);
        }
        vt_step_begin(c);
        logits = vt_gpt_forward(c, &g, int_from(c, tok), NULL, 0);
        l = vt_gpt_forward(c, &g, int_from(c, tok), int_from(c, tg), 0);
        vt_backward(c, l);
        check_ok(c, "gpt forward/backward");
        compare_t(c, "vt_gpt_forward logits", logits, lg, TOL(1e-10, 1e-3));
        compare_t(c, "vt_gpt_forward loss", l, loss, TOL(1e-10, 1e-3));
        /* the loss with targets is the cross-entropy of the logits without
           (two separate forward passes: equal up to summation order, which
           other reduction orders than the default change between calls) */
        l2 = vt_cross_entropy(c, logits, int_from(c, tg));
        CHECK(l && l2 && vt_test_close(vt_item(c, l), vt_item(c, l2), TOL(1e-13, 0x1p-22), 0),
              "[%s] vt_gpt_forward loss %.17g != cross_entropy(logits) %.17g", MODE_NAME,
              l ? vt_item(c, l) : NAN, l2 ? vt_item(c, l2) : NAN);
        for (i = 0; i < np; i++) {
            vt_tensor *p = vt_param_at(c, i);
            char nm[80], what[96];
            snprintf(nm, sizeof nm, "grad.%s", p->name);
            snprintf(what, sizeof what, "gradient of %s", p->name);
            compare_grad(c, what, p, need_rec(nm, -1, 0, 0, 0), TOL(1e-10, 1e-3));
        }
        done(c);
    }
    acc_note();
}

/* steps of one optimizer on a (4,5) parameter, with the gradients of the
   fixture set through L = sum(p * G) */
static void run_optim(int adamw, int nesterov, const char *prefix) {
    vt_ctx *c;
    const ref_rec *p0 = need_rec(adamw ? "adamw.p0" : "sgd.p0", 2, 4, 5, 0);
    int s;
    if (!p0) return;
    EACH_MODE(c) {
        vt_tensor *p;
        vt_optim *o;
        double lr = adamw ? 1e-2 : 0.1;
        p = param_from(c, "p", p0);
        if (adamw) {
            vt_adamw_desc d = vt_adamw_default();
            d.lr = lr; d.beta1 = 0.9; d.beta2 = 0.999; d.eps = 1e-8; d.weight_decay = 0.1;
            o = vt_adamw_create(c, &d);
        } else {
            vt_sgd_desc d = vt_sgd_default();
            d.lr = lr; d.momentum = 0.9; d.weight_decay = 0.01; d.nesterov = nesterov;
            o = vt_sgd_create(c, &d);
        }
        for (s = 1; s <= 3; s++) {
            char ng[32], np_[32], what[64];
            const ref_rec *G, *P;
            snprintf(ng, sizeof ng, "%s.g%d", adamw ? "adamw" : "sgd", s);
            snprintf(np_, sizeof np_, "%s.p%d", prefix, s);
            G = need_rec(ng, 2, 4, 5, 0);
            P = need_rec(np_, 2, 4, 5, 0);
            if (!G || !P) break;
            vt_step_begin(c);
            vt_backward(c, dot_loss(c, p, G));
            vt_optim_step(c, o, lr);
            vt_step_end(c);
            check_ok(c, prefix);
            snprintf(what, sizeof what, "%s step %d", prefix, s);
            compare_t(c, what, p, P, TOL(1e-13, 5e-5));
        }
        vt_destroy(c);
    }
}

TEST(adamw_steps) {
    acc_reset();
    run_optim(1, 0, "adamw");
    acc_note();
}

TEST(sgd_momentum_steps) {
    acc_reset();
    run_optim(0, 0, "sgd");
    acc_note();
}

TEST(sgd_nesterov_steps) {
    acc_reset();
    run_optim(0, 1, "sgd_nesterov");
    acc_note();
}

TEST(clip_grad_norm) {
    vt_ctx *c;
    const ref_rec *ga = need_rec("clip.ga", 2, 3, 4, 0), *gb = need_rec("clip.gb", 1, 5, 0, 0);
    const ref_rec *norm = need_rec("clip.norm", 0, 0, 0, 0), *a = need_rec("clip.a", 2, 3, 4, 0);
    const ref_rec *b = need_rec("clip.b", 1, 5, 0, 0);
    acc_reset();
    if (!ga || !gb || !norm || !a || !b) return;
    EACH_MODE(c) {
        vt_tensor *pa, *pb;
        double n;
        pa = vt_param(c, "a", ga->ndim, ga->ne);
        pb = vt_param(c, "b", gb->ndim, gb->ne);
        vt_init_const(c, pa, 0);
        vt_init_const(c, pb, 0);
        vt_step_begin(c);
        vt_backward(c, vt_add(c, dot_loss(c, pa, ga), dot_loss(c, pb, gb)));
        n = vt_clip_grad_norm(c, 1.0);
        check_ok(c, "clip");
        compare("vt_clip_grad_norm norm", &n, norm, TOL(1e-13, 0x1p-23));
        compare_grad(c, "clipped gradient of a", pa, a, TOL(1e-13, 0x1p-22));
        compare_grad(c, "clipped gradient of b", pb, b, TOL(1e-13, 0x1p-22));
        done(c);
    }
    acc_note();
}


/* --- convolutional ops (op table 1): tests/fixtures/reference_cnn.txt ----------
   Tolerances as for the ops above: FP64 forward 1e-12, gradients 1e-11;
   VERIFIED forward 2^-23 (one rounding; max pooling is a copy: 0; conv2d
   with its bias and batch norm, two or more roundings: 1e-5), gradients 1e-5. The batch norm's running statistics after one step: 2^-22 in
   VERIFIED (the statistics and the update are each rounded once). */

TEST(conv2d) {
    vt_ctx *c;
    const ref_rec *x = need_rec("conv.x", 4, 2, 4, 7), *w = need_rec("conv.w", 4, 6, 2, 3), *b = need_rec("conv.b", 1, 6, 0, 0);
    const ref_rec *R = need_rec("conv.R", 4, 2, 6, 4), *y = need_rec("conv.y", 4, 2, 6, 4);
    const ref_rec *dx = need_rec("conv.dx", 4, 2, 4, 7), *dw = need_rec("conv.dw", 4, 6, 2, 3), *db = need_rec("conv.db", 1, 6, 0, 0);
    acc_reset();
    if (!x || !w || !b || !R || !y || !dx || !dw || !db) return;
    EACH_MODE(c) {
        vt_tensor *px, *pw, *pb, *out;
        px = param_from(c, "x", x);
        pw = param_from(c, "w", w);
        pb = param_from(c, "b", b);
        vt_step_begin(c);
        out = vt_conv2d(c, px, pw, pb, 2, 2, 2, 2);
        vt_backward(c, dot_loss(c, out, R));
        check_ok(c, "conv2d");
        /* verified: the convolution and the bias add round once each, and
           their sum can cancel (measured 1.3e-6 at an output of 0.0096
           whose terms are 30x larger): 1e-5, as for a gradient */
        compare_t(c, "vt_conv2d", out, y, TOL(1e-12, 1e-5));
        compare_grad(c, "vt_conv2d dx", px, dx, TOL(1e-11, 1e-5));
        compare_grad(c, "vt_conv2d dw", pw, dw, TOL(1e-11, 1e-5));
        compare_grad(c, "vt_conv2d dbias", pb, db, TOL(1e-11, 1e-5));
        done(c);
    }
    acc_note();
}

TEST(batchnorm2d) {
    vt_ctx *c;
    const ref_rec *x = need_rec("bn.x", 4, 3, 4, 3), *w = need_rec("bn.w", 1, 4, 0, 0), *b = need_rec("bn.b", 1, 4, 0, 0);
    const ref_rec *R = need_rec("bn.R", 4, 3, 4, 3), *y = need_rec("bn.y", 4, 3, 4, 3);
    const ref_rec *dx = need_rec("bn.dx", 4, 3, 4, 3), *dw = need_rec("bn.dw", 1, 4, 0, 0), *db = need_rec("bn.db", 1, 4, 0, 0);
    const ref_rec *rm = need_rec("bn.rmean", 1, 4, 0, 0), *rv = need_rec("bn.rvar", 1, 4, 0, 0);
    acc_reset();
    if (!x || !w || !b || !R || !y || !dx || !dw || !db || !rm || !rv) return;
    EACH_MODE(c) {
        vt_tensor *px, *pw, *pb, *st, *out;
        double s[8];
        px = param_from(c, "x", x);
        pw = param_from(c, "w", w);
        pb = param_from(c, "b", b);
        st = vt_bn_state(c, "bn.running", 4);
        vt_step_begin(c);
        out = vt_batchnorm2d(c, px, pw, pb, st, 0.1, 1e-5);
        vt_backward(c, dot_loss(c, out, R));
        check_ok(c, "batchnorm2d");
        compare_t(c, "vt_batchnorm2d", out, y, TOL(1e-12, 1e-5));
        compare_grad(c, "vt_batchnorm2d dx", px, dx, TOL(1e-11, 1e-5));
        compare_grad(c, "vt_batchnorm2d dw", pw, dw, TOL(1e-11, 1e-5));
        compare_grad(c, "vt_batchnorm2d db", pb, db, TOL(1e-11, 1e-5));
        vt_read_f64(c, st, s);
        compare("running mean", s, rm, TOL(1e-13, 0x1p-22));
        compare("running variance", s + 4, rv, TOL(1e-13, 0x1p-22));
        done(c);
    }
    acc_note();
}

TEST(pooling) {
    vt_ctx *c;
    const ref_rec *x = need_rec("pool.x", 4, 2, 3, 5), *R = need_rec("pool.R", 4, 2, 3, 3);
    const ref_rec *my = need_rec("maxpool.y", 4, 2, 3, 3), *mdx = need_rec("maxpool.dx", 4, 2, 3, 5);
    const ref_rec *ay = need_rec("avgpool.y", 4, 2, 3, 3), *adx = need_rec("avgpool.dx", 4, 2, 3, 5);
    const ref_rec *gx = need_rec("gap.x", 4, 2, 3, 4), *gR = need_rec("gap.R", 2, 2, 3, 0), *gy = need_rec("gap.y", 2, 2, 3, 0);
    const ref_rec *gdx = need_rec("gap.dx", 4, 2, 3, 4);
    int k;
    acc_reset();
    if (!x || !R || !my || !mdx || !ay || !adx || !gx || !gR || !gy || !gdx) return;
    for (k = 0; k < 3; k++)
        EACH_MODE(c) {
            vt_tensor *px, *out;
            px = param_from(c, "x", k == 2 ? gx : x);
            vt_step_begin(c);
            out = k == 0 ? vt_maxpool2d(c, px, 3, 2, 1) : k == 1 ? vt_avgpool2d(c, px, 3, 2, 1) : vt_global_avgpool(c, px);
            vt_backward(c, dot_loss(c, out, k == 2 ? gR : R));
            check_ok(c, "pooling");
            compare_t(c, k == 0 ? "vt_maxpool2d" : k == 1 ? "vt_avgpool2d" : "vt_global_avgpool", out, k == 0 ? my : k == 1 ? ay : gy,
                      k == 0 ? 0 : TOL(1e-12, 0x1p-23));
            compare_grad(c, k == 0 ? "vt_maxpool2d dx" : k == 1 ? "vt_avgpool2d dx" : "vt_global_avgpool dx", px,
                         k == 0 ? mdx : k == 1 ? adx : gdx, TOL(1e-11, 1e-5));
            done(c);
        }
    acc_note();
}

int main(void) {
    int i;
    load_fixture(FIXTURE);
    if (!g_parse_err[0]) load_fixture_into("tests/fixtures/reference_cnn.txt", 1);
    RUN(fixture_parses);
    RUN(fixture_parser_rejects_bad_files);
    RUN(gelu);
    RUN(tanh_relu_softmax_log_softmax);
    RUN(layernorm);
    RUN(cross_entropy);
    RUN(mse);
    RUN(attention);
    RUN(gpt2_forward_backward);
    RUN(adamw_steps);
    RUN(sgd_momentum_steps);
    RUN(sgd_nesterov_steps);
    RUN(clip_grad_norm);
    RUN(conv2d);
    RUN(batchnorm2d);
    RUN(pooling);
    for (i = 0; i < g_nrecs; i++) free(g_recs[i].v);
    free(g_recs);
    return TEST_SUMMARY();
}
