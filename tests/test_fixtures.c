/* test_fixtures.c - golden files: logs and transcripts written by earlier
   versions of vtrain replay on this one, forever, or are refused by name.

   tests/fixtures/vN/ holds what the vtrain of log format N wrote for short
   runs of the digits MLP and the character GPT: a plain rounding log with
   its commitments, a calibrated log (whose header carries a calibration
   table of rounding-point kinds), and a transcript directory (manifest,
   log, commitments, checkpoints, root) of each program. Each set was
   written once, by `build/test_fixtures --write tests/fixtures/vN` on the
   code of that version, and is never rewritten:
     v1  vtrain 0.1.0 (log format 1, op table 0)
     v2  vtrain 0.2.0 (log format 2: vtrain's own exp, log, tanh and cosine)

   Every later version must either replay a set (every step identical to
   the trainer's commitment, every leaf, the Merkle root) or refuse it with
   a message that names both format versions; this program checks whichever
   applies. It also trains the same runs again and compares the bytes with
   the newest set: as long as the numerics are unchanged, what this build
   writes is byte-identical to it (logs, commitments, checkpoints, roots), so
   a change that was meant to change nothing shows that it did not. A change
   of numerics bumps the log format and adds a set.

   The programs are examples/digitsmlp.h and examples/chargpt.h with the
   fixed configurations below; the order is pinned (threads:2), because a
   trainer's log records what its own order computed. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "test.h"
#include "../examples/chargpt.h"
#include "../examples/digitsmlp.h"

#include <errno.h>
#include <sys/stat.h>

#define FIX_STEPS 6
/* the sets, oldest first; the last is what this build writes */
static const struct { const char *dir; unsigned version; } g_sets[] = {{"tests/fixtures/v1", 1}, {"tests/fixtures/v2", 2}};
#define NSETS ((int)(sizeof g_sets / sizeof g_sets[0]))
#define FIX_DIR (g_sets[NSETS - 1].dir)

static vt_digits g_digits;
static int g_digits_ok;
static chargpt g_gpt;
static int g_gpt_ok;

/* --- the two programs, exactly as the fixtures were written ----------------- */

static digitsmlp mlp_app(void) {
    digitsmlp a = digitsmlp_new(&g_digits);
    a.nlayers = 2; a.sizes[0] = 64; a.sizes[1] = 32; a.sizes[2] = 10;
    a.act = 2;            /* gelu */
    a.batch = 16;
    a.lr = 3e-3; a.lr_min = 3e-4; a.steps = FIX_STEPS;
    a.clip = 1.0;
    a.commit = 1;
    return a;
}

static void gpt_config(chargpt *a) {
    a->cfg.layers = 2; a->cfg.heads = 2; a->cfg.width = 32;
    a->T = 16; a->B = 4; a->lr = 3e-3; a->steps = FIX_STEPS;
}

static const char *const *mlp_manifest(void) {
    static const char *m[] = {"program=digitsmlp", "data.file=data/digits.csv", "model.sizes=64,32,10", "model.act=gelu",
                              "train.batch=16", "train.lr=0.003", "train.lr_min=0.0003", "train.clip=1", NULL};
    return m;
}

/* the keys of examples/vtrain.c (with the data file's SHA-256, as the CLI
   writes it), so `vtrain audit` replays this transcript too */
static const char *const *gpt_manifest(void) {
    static char buf[10][128];
    static const char *ptr[11];
    FILE *f = fopen("data/kjv_nt.txt", "rb");
    vt_sha256_ctx s;
    unsigned char chunk[65536], h[32];
    char hex[65] = "unreadable";
    size_t n;
    int k = 0;
    if (f) {
        vt_sha256_init(&s);
        while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) vt_sha256_update(&s, chunk, n);
        fclose(f);
        vt_sha256_final(&s, h);
        vt_hex(h, 32, hex);
    }
    snprintf(buf[k++], sizeof buf[0], "program=chargpt");
    snprintf(buf[k++], sizeof buf[0], "data.file=data/kjv_nt.txt");
    snprintf(buf[k++], sizeof buf[0], "data.sha256=%s", hex);
    snprintf(buf[k++], sizeof buf[0], "model.layers=%d", g_gpt.cfg.layers);
    snprintf(buf[k++], sizeof buf[0], "model.width=%d", g_gpt.cfg.width);
    snprintf(buf[k++], sizeof buf[0], "model.heads=%d", g_gpt.cfg.heads);
    snprintf(buf[k++], sizeof buf[0], "model.context=%d", g_gpt.T);
    snprintf(buf[k++], sizeof buf[0], "train.batch=%d", g_gpt.B);
    snprintf(buf[k++], sizeof buf[0], "train.lr=%.17g", g_gpt.lr);
    snprintf(buf[k++], sizeof buf[0], "train.steps=%lld", (long long)g_gpt.steps);
    for (k = 0; k < 10; k++) ptr[k] = buf[k];
    ptr[10] = NULL;
    return ptr;
}

static int load_data(void) {
    if (!g_digits_ok) g_digits_ok = vt_digits_load("data/digits.csv", &g_digits) == VT_OK;
    if (!g_gpt_ok) {
        g_gpt_ok = chargpt_load(&g_gpt, "data/kjv_nt.txt") == VT_OK;
        if (g_gpt_ok) gpt_config(&g_gpt);
    }
    return g_digits_ok && g_gpt_ok;
}

/* the setups create the models and optimizers afresh on every context */
static vt_program mlp_program(digitsmlp *a) { *a = mlp_app(); return digitsmlp_program(a); }
static vt_program gpt_program(void) { return chargpt_program(&g_gpt); }

/* --- writing a fixture set ------------------------------------------------------ */

typedef enum { FX_LOG, FX_CALIB, FX_TRANSCRIPT } fx_kind;

typedef struct {
    const char *name;   /* file or directory under the set */
    int gpt;            /* 0 digits MLP, 1 character GPT */
    fx_kind kind;
} fixture;

static const fixture g_fixtures[] = {
    {"digits.vtlog", 0, FX_LOG},
    {"digits_calibrated.vtlog", 0, FX_CALIB},
    {"digits_run", 0, FX_TRANSCRIPT},
    {"chargpt.vtlog", 1, FX_LOG},
    {"chargpt_run", 1, FX_TRANSCRIPT},
};
#define NFIX ((int)(sizeof g_fixtures / sizeof g_fixtures[0]))

static void path_join(char *out, size_t n, const char *a, const char *b) {
    if (strlen(a) + strlen(b) + 2 > n) { out[0] = 0; return; }
    memcpy(out, a, strlen(a));
    out[strlen(a)] = '/';
    memcpy(out + strlen(a) + 1, b, strlen(b) + 1);
}

static int mkdir_p(const char *dir) {
    char tmp[512];
    size_t i, n = strlen(dir);
    if (n >= sizeof tmp) return 0;
    memcpy(tmp, dir, n + 1);
    for (i = 1; i <= n; i++)
        if (tmp[i] == '/' || tmp[i] == 0) {
            char ch = tmp[i];
            tmp[i] = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return 0;
            tmp[i] = ch;
        }
    return 1;
}

static void rm_dir_files(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[1024];
    if (!d) return;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') { path_join(p, sizeof p, dir, e->d_name); remove(p); }
    closedir(d);
}

/* the calibration both the writer and the re-trainer use */
static vt_status calibrate(vt_calib *t) {
    vt_desc d = vt_desc_default();
    digitsmlp a;
    vt_program p = mlp_program(&a);
    vt_order o[2];
    vt_order_parse(&o[0], "chaos:21,threads:1");
    vt_order_parse(&o[1], "chaos:22,threads:2");
    vt_order_parse(&d.order, "threads:2");
    memset(t, 0, sizeof *t);
    return vt_calibrate(&d, &p, 3, o, 2, 8.0, t);
}

/* train fixture f into set directory `set`; returns the report's status */
static vt_status write_fixture(const fixture *f, const char *set, vt_report *r) {
    vt_desc d = vt_desc_default();
    digitsmlp a;
    vt_program p;
    vt_calib t;
    char path[512];
    vt_status st;
    memset(&t, 0, sizeof t);
    vt_order_parse(&d.order, "threads:2");
    path_join(path, sizeof path, set, f->name);
    p = f->gpt ? gpt_program() : mlp_program(&a);
    if (f->kind == FX_TRANSCRIPT) {
        if (!mkdir_p(path)) return VT_ERR_IO;
        rm_dir_files(path);
        d.transcript = path;
        d.manifest = f->gpt ? gpt_manifest() : mlp_manifest();
        d.ckpt_every = 3;
    } else {
        d.log_path = path;
    }
    if (f->kind == FX_CALIB) {
        if (calibrate(&t) != VT_OK) return vt_last_status();
        d.bound = VT_BOUND_CALIBRATED;
        d.calib = &t;
    }
    st = vt_run(&d, &p, FIX_STEPS, r);
    vt_calib_free(&t);
    return st;
}

static int write_set(const char *set) {
    int i;
    if (!load_data() || !mkdir_p(set)) { fprintf(stderr, "cannot load the data or create '%s'\n", set); return 1; }
    for (i = 0; i < NFIX; i++) {
        vt_report r;
        char hex[65];
        if (write_fixture(&g_fixtures[i], set, &r) != VT_OK) { fprintf(stderr, "%s: %s\n", g_fixtures[i].name, r.message); return 1; }
        vt_hex(r.digest, 32, hex);
        printf("%-26s %lld steps, final state %s\n", g_fixtures[i].name, (long long)r.steps, hex);
    }
    return 0;
}

/* --- checks ---------------------------------------------------------------------------- */

/* 1 if the two files hold the same bytes; else says where they first differ */
static int same_file(const char *a, const char *b) {
    size_t na, nb, i;
    unsigned char *pa = slurp(a, &na), *pb = slurp(b, &nb);
    int same = pa && pb && na == nb && !memcmp(pa, pb, na);
    if (!pa || !pb) CHECK(0, "cannot read '%s' or '%s'", a, b);
    else if (!same) {
        for (i = 0; i < na && i < nb && pa[i] == pb[i]; i++) {}
        CHECK(0, "'%s' (%zu bytes) and '%s' (%zu bytes) first differ at byte %zu", a, na, b, nb, i);
    }
    free(pa);
    free(pb);
    return same;
}

/* every file of a fixture (the log and its commitments, or every file of a transcript) */
static void compare_fixture(const fixture *f, const char *set, const char *mine) {
    char a[1024], b[1024];
    path_join(a, sizeof a, set, f->name);
    path_join(b, sizeof b, mine, f->name);
    if (f->kind != FX_TRANSCRIPT) {
        same_file(a, b);
        strcat(a, ".commits");
        strcat(b, ".commits");
        same_file(a, b);
    } else {
        DIR *d = opendir(a);
        struct dirent *e;
        int files = 0;
        CHECK(d != NULL, "cannot list '%s'", a);
        while (d && (e = readdir(d))) {
            char fa[1100], fb[1100];
            if (e->d_name[0] == '.') continue;
            path_join(fa, sizeof fa, a, e->d_name);
            path_join(fb, sizeof fb, b, e->d_name);
            same_file(fa, fb);
            files++;
        }
        if (d) closedir(d);
        CHECK(files >= 5, "'%s' holds %d files, a transcript has at least 5", a, files);
    }
}

/* replay one fixture as an auditor in another order */
static vt_status audit_fixture(const fixture *f, const char *set, const char *order, vt_report *r) {
    vt_desc d = vt_desc_default();
    digitsmlp a;
    vt_program p;
    char path[512];
    path_join(path, sizeof path, set, f->name);
    p = f->gpt ? gpt_program() : mlp_program(&a);
    d.role = VT_ROLE_AUDIT;
    vt_order_parse(&d.order, order);
    if (f->kind == FX_TRANSCRIPT) d.transcript = path;
    else d.log_path = path;
    return vt_run(&d, &p, FIX_STEPS, r);
}

/* Every set replays under other orders (every step equal to the
   commitment, and for transcripts every leaf and the Merkle root), or, for
   a set of an older log format that this build does not read, is refused
   with a message that names both versions. */
TEST(fixtures_replay_or_refused) {
    static const char *orders[] = {"threads:1,chaos:7", "threads:2,block:13,nofma"};
    int i, k, si;
    if (!load_data()) { CHECK(0, "cannot load data/digits.csv or data/kjv_nt.txt"); return; }
    CHECK(g_sets[NSETS - 1].version == VT__LOG_VERSION, "the newest set is format %u, this build writes %u: add a set",
          g_sets[NSETS - 1].version, VT__LOG_VERSION);
    for (si = 0; si < NSETS; si++)
        for (i = 0; i < NFIX; i++)
            for (k = 0; k < 2; k++) {
                vt_report r;
                char want[64], mine[64];
                audit_fixture(&g_fixtures[i], g_sets[si].dir, orders[k], &r);
                if (g_sets[si].version == VT__LOG_VERSION) {
                    CHECK(r.status == VT_OK, "%s/%s under %s: %s", g_sets[si].dir, g_fixtures[i].name, orders[k], r.message);
                    CHECK(r.steps == FIX_STEPS, "%s: %lld steps replayed", g_fixtures[i].name, (long long)r.steps);
                    continue;
                }
                snprintf(want, sizeof want, "version %u", g_sets[si].version);
                snprintf(mine, sizeof mine, "reads version %u", VT__LOG_VERSION);
                CHECK(r.status == VT_ERR_FORMAT && strstr(r.message, want) && strstr(r.message, mine),
                      "%s/%s: neither replayed nor refused by name: %s", g_sets[si].dir, g_fixtures[i].name, r.message);
                if (i == 0 && k == 0) NOTE("%s", r.message);
            }
}

/* A transcript fixture resumes an audit from its checkpoint at step 3. */
TEST(fixtures_audit_from_checkpoint) {
    vt_desc d = vt_desc_default();
    vt_report r;
    digitsmlp a;
    vt_program p;
    int g;
    if (!load_data()) { CHECK(0, "cannot load the data"); return; }
    for (g = 0; g < 2; g++) {
        char path[512];
        d = vt_desc_default();
        path_join(path, sizeof path, FIX_DIR, g ? "chargpt_run" : "digits_run");
        p = g ? gpt_program() : mlp_program(&a);
        d.role = VT_ROLE_AUDIT;
        d.transcript = path;
        d.audit_from = 3;
        vt_order_parse(&d.order, "threads:1,chaos:3");
        vt_run(&d, &p, FIX_STEPS, &r);
        CHECK(r.status == VT_OK, "%s from step 3: %s", path, r.message);
    }
}

/* This build, training the same runs, writes the same bytes as the newest
   fixture set: logs, commitments, manifests, checkpoints and roots. */
TEST(fixtures_retrain_identical) {
    int i;
    if (!load_data()) { CHECK(0, "cannot load the data"); return; }
    if (!mkdir_p("build/fixtures_now")) { CHECK(0, "cannot create build/fixtures_now"); return; }
    for (i = 0; i < NFIX; i++) {
        vt_report r;
        write_fixture(&g_fixtures[i], "build/fixtures_now", &r);
        CHECK(r.status == VT_OK, "%s: %s", g_fixtures[i].name, r.message);
        if (r.status == VT_OK) compare_fixture(&g_fixtures[i], FIX_DIR, "build/fixtures_now");
    }
}

/* a copy of a fixture log with its header edited (and its checksum made
   right again, as a forger would): returns the audit's report */
static void audit_edited_header(const char *src, void (*edit)(unsigned char *body, uint32_t blen), vt_report *r) {
    size_t n;
    unsigned char *b = slurp(src, &n);
    const char *dst = "build/fixture_edited.vtlog", *cdst = "build/fixture_edited.vtlog.commits";
    char csrc[600];
    uint32_t blen;
    FILE *f;
    vt_desc d = vt_desc_default();
    digitsmlp a;
    vt_program p = mlp_program(&a);
    memset(r, 0, sizeof *r);
    r->status = VT_ERR_IO;
    if (!b || n < 48) { free(b); return; }
    blen = (uint32_t)b[12] | (uint32_t)b[13] << 8 | (uint32_t)b[14] << 16 | (uint32_t)b[15] << 24;
    edit(b, blen);
    vt_sha256(b, 16 + blen, b + 16 + blen);
    f = fopen(dst, "wb");
    if (f) { fwrite(b, 1, n, f); fclose(f); }
    free(b);
    snprintf(csrc, sizeof csrc, "%s.commits", src);
    b = slurp(csrc, &n);
    f = fopen(cdst, "wb");
    if (f && b) fwrite(b, 1, n, f);
    if (f) fclose(f);
    free(b);
    d.role = VT_ROLE_AUDIT;
    d.log_path = dst;
    vt_run(&d, &p, FIX_STEPS, r);
}
static void edit_version(unsigned char *b, uint32_t blen) { (void)blen; b[8] = 99; }
static void edit_table(unsigned char *b, uint32_t blen) { (void)blen; b[16 + 3] = 200; }
static void edit_calib_kind(unsigned char *b, uint32_t blen) { /* the first calibration entry's kind: op 250 */
    (void)blen;
    b[16 + 24] = 0xd0; b[16 + 25] = 0x07; b[16 + 26] = 0; b[16 + 27] = 0;
}
static void edit_calib_kind_high(unsigned char *b, uint32_t blen) { /* the same kind past 2^31: 2^31 + 8 */
    (void)blen;
    b[16 + 24] = 0x08; b[16 + 25] = 0; b[16 + 26] = 0; b[16 + 27] = 0x80;
}

/* A log of a newer format version, or of a newer op table, is refused with
   a message that names both; so is a calibration table naming an op that
   its op table does not have (named with the kind's value as read). */
TEST(newer_formats_refused_by_name) {
    vt_report r;
    char path[600];
    if (!load_data()) { CHECK(0, "cannot load the data"); return; }
    path_join(path, sizeof path, FIX_DIR, "digits.vtlog");
    audit_edited_header(path, edit_version, &r);
    CHECK(r.status == VT_ERR_FORMAT && strstr(r.message, "version 99") && strstr(r.message, "reads version 2"), "version: %s", r.message);
    NOTE("%s", r.message);
    audit_edited_header(path, edit_table, &r);
    {
        char knows[64];
        snprintf(knows, sizeof knows, "knows op table %d", VT__OP_TABLE);
        CHECK(r.status == VT_ERR_FORMAT && strstr(r.message, "op table 200") && strstr(r.message, knows), "op table: %s", r.message);
    }
    NOTE("%s", r.message);
    path_join(path, sizeof path, FIX_DIR, "digits_calibrated.vtlog");
    audit_edited_header(path, edit_calib_kind, &r);
    CHECK(r.status == VT_ERR_FORMAT && strstr(r.message, "kind 2000") && strstr(r.message, "op table 0"), "calibration kind: %s", r.message);
    NOTE("%s", r.message);
    audit_edited_header(path, edit_calib_kind_high, &r); /* named as read, not as a negative int */
    CHECK(r.status == VT_ERR_FORMAT && strstr(r.message, "has kind 2147483656 (kind 2147483656 (no such op))"), "calibration kind 2^31 + 8: %s",
          r.message);
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--write")) return write_set(argv[2]);
    TEST_FILTER(argc, argv);
    RUN(fixtures_replay_or_refused);
    RUN(fixtures_audit_from_checkpoint);
    RUN(fixtures_retrain_identical);
    RUN(newer_formats_refused_by_name);
    vt_digits_free(&g_digits);
    chargpt_free(&g_gpt);
    return TEST_SUMMARY();
}
