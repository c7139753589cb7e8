/* tests/test_transcript.c - transcripts, Merkle proofs, checkpoints, audit
   from a checkpoint, tampering of every file, kill-and-resume, the dispute
   game, and the parsers on the fuzzers' regression inputs. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "test.h"
#include "../examples/chargpt.h"
#include <signal.h>
#include <sys/wait.h>
#include <sys/stat.h>

/* --- the program: a tiny character GPT that can be told to poison a step --- */

typedef struct { chargpt g; int64_t poison_at; int64_t lie_batch_at; } prog_app;
static prog_app P;

/* The judge's temporary files, seen from inside its replays: with dir set,
   every step lists dir (the TMPDIR of a dispute, writable by all as /tmp
   is) and counts what the judge keeps there. Another user may create
   names in dir, so anything of the judge's directly in it (a file, a
   link, a directory others may enter) is a path they could predict or
   plant a link at before the judge writes: `exposed`, with its name. The
   judge's files must be in a directory of its own that only this user can
   enter (`private`). */
static struct { const char *dir; int steps, private_dirs, exposed; char name[256]; } tmp_spy;
static void spy_tmp(void) {
    DIR *d = opendir(tmp_spy.dir);
    struct dirent *e;
    tmp_spy.steps++;
    if (!d) return;
    while ((e = readdir(d)) != NULL) {
        char path[700];
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", tmp_spy.dir, e->d_name);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 077) == 0 && st.st_uid == getuid()) tmp_spy.private_dirs++;
        else {
            tmp_spy.exposed++;
            snprintf(tmp_spy.name, sizeof tmp_spy.name, "%s", e->d_name);
        }
    }
    closedir(d);
}

static vt_status prog_step(vt_ctx *c, int64_t s, void *u) {
    prog_app *t = (prog_app *)u;
    chargpt *a = &t->g;
    int64_t ne[2], starts[64];
    int i;
    if (tmp_spy.dir) spy_tmp();
    chargpt_batch(a, s, 0, starts);
    if (s == t->lie_batch_at) starts[0] += 1; /* commits other batch offsets than it trains on */
    vt_commit_batch(c, starts, a->B);
    if (s == t->poison_at)
        for (i = 0; i < a->B * a->T; i++) { a->x[i] = (a->x[i] + 1) % a->text.vocab; }
    ne[0] = a->B; ne[1] = a->T;
    vt_backward(c, vt_gpt_forward(c, &a->gpt, vt_from_i32(c, 2, ne, a->x), vt_from_i32(c, 2, ne, a->y), s));
    vt_clip_grad_norm(c, 1.0);
    vt_optim_step(c, a->opt, vt_lr_cosine(s, 5, a->steps, a->lr, a->lr / 10));
    return vt_status_of(c);
}

static vt_program program(void) {
    vt_program p = chargpt_program(&P.g);
    p.step = prog_step;
    p.user = &P;
    return p;
}

static const char *manifest[] = {"program=tiny-chargpt", "model.layers=2", "model.width=32", NULL};
#define NSTEPS 120

static int full_entries;    /* the trainer writes every log entry with all 32 bits (vt_desc.compact_log = -1) */
static int slow_after = -1; /* the killed trainer sleeps after each step past this one */
static void sleep_ms(long ms);
static void slow_step(vt_ctx *c, int64_t s, void *u) {
    (void)c; (void)u;
    if (slow_after >= 0 && s >= slow_after) sleep_ms(40);
}

static vt_status train(const char *dir, const char *order, int resume, vt_report *r) {
    vt_desc d = vt_desc_default();
    vt_program p = program();
    p.on_step = slow_step;
    d.transcript = dir;
    d.manifest = manifest;
    d.ckpt_every = 40;
    d.resume = resume;
    d.compact_log = full_entries ? -1 : 0;
    vt_order_parse(&d.order, order);
    return vt_run(&d, &p, NSTEPS, r);
}

static vt_status audit(const char *dir, const char *order, int64_t from, vt_report *r) {
    vt_desc d = vt_desc_default();
    vt_program p = program();
    d.role = VT_ROLE_AUDIT;
    d.transcript = dir;
    d.audit_from = from;
    vt_order_parse(&d.order, order);
    return vt_run(&d, &p, NSTEPS, r);
}

/* --- SHA-256 and Merkle ----------------------------------------------------------- */

/* RFC 6962's Merkle Tree Hash, written recursively as the RFC states it */
static void mth(const unsigned char (*d)[32], int64_t n, unsigned char out[32]) {
    vt_sha256_ctx s;
    unsigned char pre, l[32], r[32];
    int64_t k = 1;
    if (n == 1) {
        pre = 0;
        vt_sha256_init(&s); vt_sha256_update(&s, &pre, 1); vt_sha256_update(&s, d[0], 32); vt_sha256_final(&s, out);
        return;
    }
    while (k * 2 < n) k *= 2;
    mth(d, k, l);
    mth(d + k, n - k, r);
    pre = 1;
    vt_sha256_init(&s); vt_sha256_update(&s, &pre, 1); vt_sha256_update(&s, l, 32); vt_sha256_update(&s, r, 32); vt_sha256_final(&s, out);
}

TEST(merkle_root_and_proofs) {
    static unsigned char lv[1100][32], path[64][32];
    unsigned char root[32], ref[32];
    int64_t n, i;
    int bad = 0, tamper_ok = 1;
    for (i = 0; i < 1100; i++) vt_sha256(&i, sizeof i, lv[i]);
    for (n = 1; n <= 1100; n += (n < 40 ? 1 : 97)) {
        vt_merkle_root((const unsigned char(*)[32])lv, n, root);
        mth((const unsigned char(*)[32])lv, n, ref);
        if (memcmp(root, ref, 32)) bad++;
        for (i = 0; i < n; i++) {
            int len = vt_merkle_proof((const unsigned char(*)[32])lv, n, i, path), k;
            if (!vt_merkle_verify(lv[i], i, n, (const unsigned char(*)[32])path, len, root)) bad++;
            if (i % 7 == 0) { /* any changed byte breaks the proof */
                unsigned char leaf[32];
                memcpy(leaf, lv[i], 32);
                leaf[i % 32] ^= 1;
                tamper_ok &= !vt_merkle_verify(leaf, i, n, (const unsigned char(*)[32])path, len, root);
                for (k = 0; k < len; k++) {
                    path[k][5] ^= 0x80;
                    tamper_ok &= !vt_merkle_verify(lv[i], i, n, (const unsigned char(*)[32])path, len, root);
                    path[k][5] ^= 0x80;
                }
                root[31] ^= 2;
                tamper_ok &= !vt_merkle_verify(lv[i], i, n, (const unsigned char(*)[32])path, len, root);
                root[31] ^= 2;
                if (n > 1) tamper_ok &= !vt_merkle_verify(lv[i], (i + 1) % n, n, (const unsigned char(*)[32])path, len, root);
            }
        }
    }
    CHECK(bad == 0, "%d roots or proofs wrong (against RFC 6962's recursive definition)", bad);
    CHECK(tamper_ok, "a proof verified with a changed leaf, path, root or index");
}

/* --- transcripts ----------------------------------------------------------------- */

TEST(transcript_train_and_audit) {
    vt_report r;
    unsigned char root[32], msha[32];
    int64_t n;
    char v[64];
    rm_rf("build/tr_a");
    CHECK(train("build/tr_a", "threads:2", 0, &r) == VT_OK, "train: %s", r.message);
    CHECK(vt_transcript_root("build/tr_a", root, msha, &n) == VT_OK && n == NSTEPS, "root: %s", vt_last_error());
    CHECK(vt_manifest_get("build/tr_a", "model.width", v, sizeof v) == VT_OK && !strcmp(v, "32"), "manifest: %s", v);
    CHECK(vt_manifest_get("build/tr_a", "vtrain.trainer_order", v, sizeof v) == VT_OK && strstr(v, "threads:2"), "order: %s", v);
    CHECK(audit("build/tr_a", "threads:1,chaos:3", 0, &r) == VT_OK && r.steps == NSTEPS, "audit from 0: %s", r.message);
    CHECK(audit("build/tr_a", "chaos:4", 40, &r) == VT_OK && r.steps == NSTEPS - 40, "audit from 40: %s", r.message);
    CHECK(audit("build/tr_a", "threads:3,block:17", 80, &r) == VT_OK, "audit from 80: %s", r.message);
    CHECK(audit("build/tr_a", "threads:1", 50, &r) == VT_ERR_ARG && strstr(r.message, "no checkpoint"), "from 50: %s", r.message);
    {   /* another order trains to the same root */
        unsigned char root2[32];
        rm_rf("build/tr_b");
        CHECK(train("build/tr_b", "threads:1,chaos:8", 0, &r) == VT_OK, "train b: %s", r.message);
        vt_transcript_root("build/tr_b", root2, NULL, NULL);
        CHECK(!memcmp(root, root2, 32), "two orders give two roots");
    }
    {   /* a finished transcript is not overwritten */
        CHECK(train("build/tr_a", "threads:2", 0, &r) == VT_ERR_STATE && strstr(r.message, "finished"), "overwrite: %s", r.message);
    }
}

/* a trainer that poisons one step's data, or commits another batch than it
   trains on, is caught at exactly that step */
TEST(tamper_poisoned_batch) {
    vt_report r;
    rm_rf("build/tr_p");
    P.poison_at = 57;
    train("build/tr_p", "threads:2", 0, &r);
    P.poison_at = -1;
    audit("build/tr_p", "chaos:5", 40, &r);
    CHECK(r.status != VT_OK && r.first_bad_step == 57, "poisoned step 57: %s at %lld: %s", vt_status_name(r.status),
          (long long)r.first_bad_step, r.message);
    NOTE("%s", r.message);
    rm_rf("build/tr_l");
    P.lie_batch_at = 63;
    train("build/tr_l", "threads:2", 0, &r);
    P.lie_batch_at = -1;
    audit("build/tr_l", "chaos:5", 40, &r);
    CHECK(r.status == VT_ERR_MISMATCH && r.first_bad_step == 63 && strstr(r.message, "batch"), "lied batch: %s", r.message);
}

TEST(tamper_checkpoint_bit) {
    vt_report r;
    size_t n;
    unsigned char *b;
    cp_r("build/tr_a", "build/tr_c");
    b = slurp("build/tr_c/ckpt-00000040.safetensors", &n);
    CHECK(b != NULL, "no checkpoint");
    if (!b) return;
    b[n - 4000] ^= 0x01; /* one bit of one weight */
    spit("build/tr_c/ckpt-00000040.safetensors", b, n);
    audit("build/tr_c", "chaos:5", 40, &r);
    CHECK(r.status == VT_ERR_CHECKSUM && strstr(r.message, "ckpt-00000040"), "flipped weight: %s", r.message);
    NOTE("%s", r.message);
    spit("build/tr_c/ckpt-00000040.safetensors", b, n / 2);
    audit("build/tr_c", "chaos:5", 40, &r);
    CHECK(r.status == VT_ERR_TRUNCATED || r.status == VT_ERR_FORMAT, "truncated checkpoint: %s", r.message);
    spit("build/tr_c/ckpt-00000040.safetensors", b, 5);
    audit("build/tr_c", "chaos:5", 40, &r);
    CHECK(r.status == VT_ERR_TRUNCATED, "5-byte checkpoint: %s", r.message);
    free(b);
}

/* rewrites commitment record `step` with its state digest changed and its
   checksum fixed; returns 1 if done */
static int edit_commit(const char *path, int64_t step) {
    size_t n, p = VT__COMMIT_HDR;
    unsigned char *b = slurp(path, &n);
    int64_t s = 0;
    while (b && p + 112 <= n) {
        size_t len = 112 + 32 * (size_t)vt__get_u32(b + p + 108);
        if (s == step) {
            b[p + 12] ^= 0x10;
            vt_sha256(b + p, len, b + p + len);
            spit(path, b, n);
            free(b);
            return 1;
        }
        p += len + 32;
        s++;
    }
    free(b);
    return 0;
}

TEST(tamper_commitment_and_manifest) {
    vt_report r;
    size_t n;
    unsigned char *b;
    cp_r("build/tr_a", "build/tr_c");
    CHECK(edit_commit("build/tr_c/commits.bin", 71), "could not edit");
    audit("build/tr_c", "chaos:5", 40, &r);
    CHECK(r.status == VT_ERR_MISMATCH && r.first_bad_step == 71, "changed commitment: %s at %lld", r.message, (long long)r.first_bad_step);
    NOTE("%s", r.message);
    /* the same edit made in the last record is caught by the root */
    cp_r("build/tr_a", "build/tr_c");
    b = slurp("build/tr_c/commits.bin", &n);
    if (b) { /* flip the batch digest of the last record and fix its checksum: the replay notices at step 119 */
        free(b);
        edit_commit("build/tr_c/commits.bin", NSTEPS - 1);
        audit("build/tr_c", "chaos:5", 80, &r);
        CHECK(r.status == VT_ERR_MISMATCH && r.first_bad_step == NSTEPS - 1, "last commitment: %s", r.message);
    }
    cp_r("build/tr_a", "build/tr_c");
    b = slurp("build/tr_c/manifest.txt", &n);
    if (b) {
        char *w = strstr((char *)b, "model.width = 32");
        if (w) w[15] = '3';
        spit("build/tr_c/manifest.txt", b, n);
        free(b);
    }
    audit("build/tr_c", "chaos:5", 0, &r);
    CHECK(r.status == VT_ERR_MISMATCH && strstr(r.message, "manifest"), "edited manifest: %s", r.message);
    NOTE("%s", r.message);
}

TEST(tamper_log_entry) {
    vt_report r;
    size_t n;
    unsigned char *b;
    cp_r("build/tr_a", "build/tr_c");
    b = slurp("build/tr_c/log.vtlog", &n);
    if (!b) { CHECK(0, "no log"); return; }
    b[n - 500] ^= 0x04; /* somewhere in one of the last chunks: its checksum catches it */
    spit("build/tr_c/log.vtlog", b, n);
    audit("build/tr_c", "chaos:5", 80, &r);
    CHECK(r.status == VT_ERR_CHECKSUM || r.status == VT_ERR_FORMAT, "changed log byte: %s", r.message);
    CHECK(r.first_bad_step > 80, "at step %lld", (long long)r.first_bad_step);
    NOTE("%s", r.message);
    free(b);
}

TEST(truncated_files) {
    static const char *files[] = {"manifest.txt", "log.vtlog", "commits.bin", "root.txt"};
    int k;
    for (k = 0; k < 4; k++) {
        vt_report r;
        size_t n;
        char path[256];
        unsigned char *b;
        cp_r("build/tr_a", "build/tr_c");
        snprintf(path, sizeof path, "build/tr_c/%s", files[k]);
        b = slurp(path, &n);
        if (!b) { CHECK(0, "no %s", files[k]); continue; }
        spit(path, b, k == 0 ? 10 : n * 2 / 3);
        audit("build/tr_c", "chaos:5", 80, &r);
        CHECK(r.status != VT_OK, "truncated %s was not noticed", files[k]);
        NOTE("%-12s %s", files[k], r.message);
        free(b);
    }
}

/* --- every field of every file ------------------------------------------------ */

/* root.txt as a consistent trainer would write it for the files in dir now
   (the commitments bound to the manifest as it now is): a dishonest
   trainer's transcript, every hash in order */
static void reseal(const char *dir) {
    char path[256], text[512], h1[65], h2[65], h3[65];
    unsigned char msha[32], root[32], run[32], (*lv)[32], *b;
    size_t n;
    vt_leaf_info *L;
    int64_t nl, k;
    snprintf(path, sizeof path, "%s/manifest.txt", dir);
    b = slurp(path, &n);
    vt_sha256(b, n, msha);
    free(b);
    snprintf(path, sizeof path, "%s/commits.bin", dir);
    b = slurp(path, &n);
    memcpy(b + 16, msha, 32);
    spit(path, b, n);
    free(b);
    vt_transcript_leaves(dir, &L, &nl);
    lv = (unsigned char(*)[32])malloc(32 * (size_t)(nl + 1));
    for (k = 0; k < nl; k++) memcpy(lv[k], L[k].leaf, 32);
    vt_merkle_root((const unsigned char(*)[32])lv, nl, root);
    vt__run_commitment(root, msha, nl, run);
    vt_hex(root, 32, h1); vt_hex(msha, 32, h2); vt_hex(run, 32, h3);
    snprintf(text, sizeof text, "vtrain-root 1\nsteps = %lld\nmanifest = %s\nleaves_root = %s\nrun = %s\n", (long long)nl, h2, h1, h3);
    snprintf(path, sizeof path, "%s/root.txt", dir);
    spit(path, (const unsigned char *)text, strlen(text));
    free(lv);
    vt_free_leaves(L);
}

/* dir/name with its first `find` replaced by `repl` (text files) */
static int edit_text(const char *dir, const char *name, const char *find, const char *repl) {
    char path[256], *at, *o;
    size_t n;
    unsigned char *b;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    b = slurp(path, &n);
    if (!b) return 0;
    b[n] = 0;
    at = strstr((char *)b, find);
    if (!at) { free(b); return 0; }
    o = (char *)malloc(n + strlen(repl) + 1);
    memcpy(o, b, (size_t)(at - (char *)b));
    strcpy(o + (at - (char *)b), repl);
    strcat(o, at + strlen(find));
    spit(path, (const unsigned char *)o, strlen(o));
    free(o);
    free(b);
    return 1;
}

static vt_status audit_n(const char *dir, int64_t from, int64_t nsteps, vt_report *r) {
    vt_desc d = vt_desc_default();
    vt_program p = program();
    d.role = VT_ROLE_AUDIT;
    d.transcript = dir;
    d.audit_from = from;
    vt_order_parse(&d.order, "chaos:5");
    return vt_run(&d, &p, nsteps, r);
}

/* root.txt: every field is parsed strictly and compared with what the
   other files give; a root that disagrees is never skipped, also not when
   the audit is partial */
TEST(root_every_field_checked) {
    static const struct { const char *find, *repl, *msg; } e[] = {
        {"steps = 120", "steps = 119", "says steps = 119, 'build/tr_c/commits.bin' holds 120"},
        {"steps = 120", "steps = 121", "says steps = 121"},
        {"steps = 120", "steps = 12x", "steps = '12x' is not a step count"},
        {"steps = 120", "steps = -120", "steps = '-120' is not a step count"},
        {"leaves_root = ", "leaves_root = 0", "leaves_root = '0"},
        {"run = ", "run = 00", "run = '00"},
        {"vtrain-root 1", "vtrain-root 2", "not a vtrain root (version 1)"},
        {"manifest = ", "manifest_sha = ", "line 3 should be 'manifest = ...'"},
        {"\nrun", "\nextra = 1\nrun", "line 5 should be 'run = ...'"},
        {"", "", NULL}};
    vt_report r;
    int k;
    unsigned char *b;
    size_t n;
    for (k = 0; e[k].find[0]; k++) {
        cp_r("build/tr_a", "build/tr_c");
        CHECK(edit_text("build/tr_c", "root.txt", e[k].find, e[k].repl), "could not edit root.txt (%s)", e[k].find);
        audit_n("build/tr_c", 80, 82, &r); /* a partial audit (two steps) checks the root like a full one */
        CHECK(r.status != VT_OK && strstr(r.message, e[k].msg), "root.txt '%s' -> '%s': %s", e[k].find, e[k].repl, r.message);
    }
    /* each hash field changed to another well-formed hash */
    {
        static const char *fields[3] = {"manifest = ", "leaves_root = ", "run = "};
        static const char *msgs[3] = {"names another manifest", "leaves_root is not the Merkle root", "run is not the commitment"};
        for (k = 0; k < 3; k++) {
            char *at;
            cp_r("build/tr_a", "build/tr_c");
            b = slurp("build/tr_c/root.txt", &n);
            b[n] = 0;
            at = strstr((char *)b, fields[k]) + strlen(fields[k]);
            *at = *at == 'a' ? 'b' : 'a';
            spit("build/tr_c/root.txt", b, n);
            free(b);
            audit_n("build/tr_c", 80, 82, &r);
            CHECK(r.status == VT_ERR_MISMATCH && strstr(r.message, msgs[k]), "%s: %s", fields[k], r.message);
        }
    }
    audit_n("build/tr_a", 80, 100, &r);
    CHECK(r.status == VT_OK && r.root_steps == NSTEPS && r.steps == 20, "partial audit of a good transcript: %s, root over %lld",
          r.message, (long long)r.root_steps);
    audit_n("build/tr_a", 80, NSTEPS, &r);
    CHECK(r.status == VT_OK && r.root_steps == NSTEPS, "full audit: %s, root over %lld", r.message, (long long)r.root_steps);
    {
        int64_t m = 0;
        CHECK(vt_transcript_check("build/tr_a", &m) == VT_OK && m == NSTEPS, "check: %s", vt_last_error());
    }
}

/* commits.bin, log.vtlog, manifest.txt: every field, also where the file's
   own checksums were made right again (a trainer who writes bad files) */
TEST(files_every_field_checked) {
    vt_report r;
    unsigned char *b;
    size_t n, p;
    /* a tensor digest changed under an unchanged state digest, the record's checksum fixed */
    cp_r("build/tr_a", "build/tr_c");
    b = slurp("build/tr_c/commits.bin", &n);
    for (p = VT__COMMIT_HDR; p + 112 <= n;) {
        size_t len = 112 + 32 * (size_t)vt__get_u32(b + p + 108);
        if (vt__get_u64(b + p + 4) == 90) { b[p + 112 + 32 * 3] ^= 1; vt_sha256(b + p, len, b + p + len); break; }
        p += len + 32;
    }
    spit("build/tr_c/commits.bin", b, n);
    free(b);
    reseal("build/tr_c");
    audit_n("build/tr_c", 80, 92, &r);
    CHECK(r.status == VT_ERR_MISMATCH && r.first_bad_step == 90 && strstr(r.message, "tensor digests were edited"), "tensor digest: %s", r.message);
    /* the state digest changed, the tensor digests not */
    cp_r("build/tr_a", "build/tr_c");
    edit_commit("build/tr_c/commits.bin", 91);
    reseal("build/tr_c");
    audit_n("build/tr_c", 80, 92, &r);
    CHECK(r.status == VT_ERR_MISMATCH && r.first_bad_step == 91 && strstr(r.message, "not the digest of its own tensor digests"), "state digest: %s",
          r.message);
    /* the header's reserved field */
    cp_r("build/tr_a", "build/tr_c");
    b = slurp("build/tr_c/commits.bin", &n);
    b[12] = 1;
    spit("build/tr_c/commits.bin", b, n);
    free(b);
    audit_n("build/tr_c", 80, 81, &r);
    CHECK(r.status == VT_ERR_FORMAT && strstr(r.message, "reserved field 0"), "reserved field: %s", r.message);
    /* bytes after the log's last chunk */
    cp_r("build/tr_a", "build/tr_c");
    b = slurp("build/tr_c/log.vtlog", &n);
    b = (unsigned char *)realloc(b, n + 7);
    memset(b + n, 0, 7);
    spit("build/tr_c/log.vtlog", b, n + 7);
    free(b);
    audit_n("build/tr_c", 80, NSTEPS, &r);
    CHECK(r.status == VT_ERR_FORMAT && strstr(r.message, "7 bytes after the chunk of the last step (119)"), "log tail: %s", r.message);
    /* the log header: compact flag, bound mode (its checksum fixed) */
    {
        static const struct { int at, v; const char *msg; } e[] = {
            {18, 7, "compact flag is 7"}, {17, 1, "bound probabilistic (lambda 12), 'build/tr_c/manifest.txt' says sound"}};
        int k;
        for (k = 0; k < 2; k++) {
            cp_r("build/tr_a", "build/tr_c");
            b = slurp("build/tr_c/log.vtlog", &n);
            b[e[k].at] = (unsigned char)e[k].v;
            vt_sha256(b, 16 + vt__get_u32(b + 12), b + 16 + vt__get_u32(b + 12));
            spit("build/tr_c/log.vtlog", b, n);
            free(b);
            audit_n("build/tr_c", 80, 81, &r);
            CHECK(r.status != VT_OK && strstr(r.message, e[k].msg), "log header byte %d: %s", e[k].at, r.message);
        }
    }
    /* a chunk header's entry count (its checksum fixed) */
    {
        vt_ctx *c;
        vt_desc d = vt_desc_default();
        unsigned char *chunk;
        size_t clen;
        vt_program pr = program();
        CHECK(vt_transcript_chunk("build/tr_a", 0, &chunk, &clen) == VT_OK, "%s", vt_last_error());
        vt__put_u32(chunk + 16, vt__get_u32(chunk + 16) + 1);
        vt_sha256(chunk, clen - 32, chunk + clen - 32);
        d.role = VT_ROLE_AUDIT;
        d.log_memory = 1;
        c = vt_create(&d);
        pr.setup(c, pr.user);
        vt_feed_chunk(c, chunk, clen);
        vt_step_begin(c);
        CHECK(vt_status_of(c) == VT_ERR_FORMAT && strstr(vt_error_message(c), "entries, its records hold"), "entry count: %s", vt_error_message(c));
        vt_destroy(c);
        free(chunk);
    }
    /* manifests a dishonest trainer wrote, every hash made consistent */
    {
        static const struct { const char *find, *repl; int status; const char *msg; } e[] = {
            {"model.width = 32\n", "model.width = 32\nmodel.width = 64\n", VT_ERR_FORMAT, "key 'model.width' appears twice"},
            {"vtrain.mode = verified", "vtrain.mode = trusted", VT_ERR_FORMAT, "vtrain.mode = 'trusted' is not a mode"},
            {"vtrain.bound = sound", "vtrain.bound = probabilistic", VT_ERR_MISMATCH, "'build/tr_c/manifest.txt' says probabilistic"},
            {"vtrain.lambda = 12", "vtrain.lambda = 13", VT_ERR_MISMATCH, "says sound (lambda 13)"},
            {"vtrain.lambda = 12", "vtrain.lambda = 12abc", VT_ERR_FORMAT, "vtrain.lambda = '12abc'"},
            {"vtrain.lambda = 12\n", "", VT_ERR_FORMAT, "lacks 'vtrain.lambda'"},
            {"vtrain.trainer_ckpt_every = 40", "vtrain.trainer_ckpt_every = 0", VT_ERR_FORMAT, "trainer_ckpt_every = '0'"},
            {"vtrain.trainer_order = ", "vtrain.trainer_order = threads:0,", VT_ERR_FORMAT, "trainer_order: order"},
            {"vtrain.version", "vtrain.trust = yes\nvtrain.version", VT_ERR_FORMAT, "'vtrain.trust' is not a key"},
            {"model.layers = 2", "model.layers=2", VT_ERR_FORMAT, "line 3 is not 'key = value'"}};
        int k;
        for (k = 0; k < (int)(sizeof e / sizeof e[0]); k++) {
            cp_r("build/tr_a", "build/tr_c");
            CHECK(edit_text("build/tr_c", "manifest.txt", e[k].find, e[k].repl), "could not edit the manifest (%s)", e[k].find);
            reseal("build/tr_c");
            audit_n("build/tr_c", 80, 81, &r);
            CHECK(r.status == (vt_status)e[k].status && strstr(r.message, e[k].msg), "manifest '%s': %s %s", e[k].repl, vt_status_name(r.status), r.message);
        }
    }
    audit_n("build/tr_a", 80, 81, &r);
    CHECK(r.status == VT_OK, "the untouched transcript: %s", r.message);
}

/* --- checkpoint files: names, structure, metadata ------------------------------- */

/* a checkpoint with its JSON header's first `find` replaced by `repl` (the
   header length fixed, nothing else), and `extra` zero bytes appended */
static int st_edit(const char *from, const char *to, const char *find, const char *repl, size_t extra) {
    size_t n, hl, fl = strlen(find), rl = strlen(repl);
    unsigned char *b = slurp(from, &n), *o;
    char *h, *at;
    FILE *f;
    if (!b) return 0;
    hl = (size_t)vt__get_u64(b);
    h = (char *)malloc(hl + 1);
    memcpy(h, b + 8, hl);
    h[hl] = 0;
    at = fl ? strstr(h, find) : NULL;
    if (fl && !at) { free(h); free(b); return 0; }
    o = (unsigned char *)calloc(n + rl + extra + 8, 1);
    if (fl) {
        size_t pre = (size_t)(at - h);
        memcpy(o + 8, h, pre);
        memcpy(o + 8 + pre, repl, rl);
        memcpy(o + 8 + pre + rl, at + fl, hl - pre - fl);
        hl = hl - fl + rl;
    } else memcpy(o + 8, h, hl);
    vt__put_u64(o, (uint64_t)hl);
    memcpy(o + 8 + hl, b + 8 + vt__get_u64(b), n - 8 - (size_t)vt__get_u64(b));
    f = fopen(to, "wb");
    if (f) { fwrite(o, 1, 8 + hl + (n - 8 - (size_t)vt__get_u64(b)) + extra, f); fclose(f); }
    free(o); free(h); free(b);
    return f != NULL;
}

/* the data_offsets of the last tensor in the header, moved by delta */
static int st_shift_last(const char *from, const char *to, long delta, size_t extra) {
    size_t n;
    unsigned char *b = slurp(from, &n);
    char *h, *at = NULL, *p, find[80], repl[80];
    unsigned long long lo, hi;
    int ok;
    if (!b) return 0;
    h = (char *)malloc((size_t)vt__get_u64(b) + 1);
    memcpy(h, b + 8, (size_t)vt__get_u64(b));
    h[vt__get_u64(b)] = 0;
    for (p = strstr(h, "\"data_offsets\":["); p; p = strstr(p + 1, "\"data_offsets\":[")) at = p;
    ok = at && sscanf(at, "\"data_offsets\":[%llu,%llu]", &lo, &hi) == 2;
    if (ok) {
        snprintf(find, sizeof find, "\"data_offsets\":[%llu,%llu]", lo, hi);
        snprintf(repl, sizeof repl, "\"data_offsets\":[%llu,%llu]", lo + (unsigned long long)delta, hi + (unsigned long long)delta);
    }
    free(h);
    free(b);
    return ok && st_edit(from, to, find, repl, extra);
}

static int has_bytes(const unsigned char *b, size_t n, const char *s) {
    size_t k, l = strlen(s);
    for (k = 0; k + l <= n; k++)
        if (!memcmp(b + k, s, l)) return 1;
    return 0;
}

static vt_tensor *NP[4];
static vt_status names_setup(vt_ctx *c, void *u) {
    static const char *names[4] = {"a_name_that_is_exactly_forty_seven_bytes_long_x", "a_name_that_is_exactly_forty_seven_bytes_long_y",
                                   "h.0 [odd] (fine): {ok}/'q' = 1,;<>?!@#$%^&*~`|", "x"};
    int64_t ne[2] = {3, 5};
    int k;
    (void)u;
    for (k = 0; k < 4; k++) {
        NP[k] = vt_param(c, names[k], 2, ne);
        vt_init_normal(c, NP[k], 5, (uint64_t)k, 1.0);
    }
    vt_adamw_create(c, NULL);
    return vt_status_of(c);
}

/* every name vt_param takes round-trips through a checkpoint; a name
   vt_set_name made unusable is refused at save, with nothing written */
TEST(checkpoint_names_round_trip) {
    vt_desc d = vt_desc_default();
    vt_ctx *a = vt_create(&d), *b = vt_create(&d);
    unsigned char da[32], db[32];
    size_t n;
    unsigned char *f;
    names_setup(a, NULL);
    names_setup(b, NULL);
    vt_init_const(b, NP[0], 0.0);
    remove("build/tr_names.safetensors");
    CHECK(vt_checkpoint_save(a, "build/tr_names.safetensors") == VT_OK, "save: %s", vt_error_message(a));
    CHECK(vt_checkpoint_load(b, "build/tr_names.safetensors") == VT_OK, "load: %s", vt_error_message(b));
    vt_weights_digest(a, da);
    vt_weights_digest(b, db);
    CHECK(!memcmp(da, db, 32), "the loaded state differs from the saved one");
    f = slurp("build/tr_names.safetensors", &n);
    CHECK(f && has_bytes(f, n, "\"h.0 [odd] (fine): {ok}/'q' = 1,;<>?!@#$%^&*~`|\":"), "the odd name is not in the header verbatim");
    free(f);
    vt_set_name(vt_param_at(a, 2), "quote\"d");
    remove("build/tr_badname.safetensors");
    CHECK(vt_checkpoint_save(a, "build/tr_badname.safetensors") == VT_ERR_ARG && strstr(vt_error_message(a), "byte 0x22"),
          "a renamed parameter with a quote: %s", vt_error_message(a));
    CHECK(!vt__exists("build/tr_badname.safetensors"), "a refused checkpoint was written");
    vt_clear_error(a);
    vt_set_name(vt_param_at(a, 2), "x");
    CHECK(vt_checkpoint_save(a, "build/tr_badname.safetensors") == VT_ERR_ARG && strstr(vt_error_message(a), "two tensors are named 'x'"),
          "two tensors named x: %s", vt_error_message(a));
    vt_destroy(a);
    vt_destroy(b);
}

/* a checkpoint holds exactly what vtrain writes: its data tile the file
   (no trailing byte, hole or overlap), its metadata has the known keys
   once each with well-formed values, its step is the one its name says,
   and a full audit checks the optimizer counters, which no commitment
   covers */
TEST(checkpoint_structure_checked) {
    static const struct { const char *find, *repl; size_t extra; long shift; int status; const char *msg; } e[] = {
        {"", "", 1, 0, VT_ERR_FORMAT, "trailing bytes"},
        {"", "", 4096, 0, VT_ERR_FORMAT, "trailing bytes"},
        {NULL, NULL, 4, 4, VT_ERR_FORMAT, "a hole, an overlap"},
        {NULL, NULL, 0, -4, VT_ERR_FORMAT, "a hole, an overlap"},
        {"\"step\":\"40\"", "\"step\":\"40\",\"step\":\"40\"", 0, 0, VT_ERR_FORMAT, "'step' appears twice"},
        {"\"step\":\"40\"", "\"step\":\"40\",\"trust_me\":\"1\"", 0, 0, VT_ERR_FORMAT, "'trust_me' is not one vtrain writes"},
        {"\"step\":\"40\"", "\"step\":\"4O\"", 0, 0, VT_ERR_FORMAT, "'step' is '4O'"},
        {"\"step\":\"40\"", "\"step\":\"-40\"", 0, 0, VT_ERR_FORMAT, "'step' is '-40'"},
        {"\"step\":\"40\"", "\"step\":\"41\"", 0, 0, VT_ERR_MISMATCH, "after 41 steps, its name says 40"},
        {"\"optim0.t\":\"40\"", "\"optim0.t\":\"40x\"", 0, 0, VT_ERR_FORMAT, "'optim0.t' is '40x'"},
        {"\"optim0.t\":\"40\"", "\"optim0.t\":\"40\",\"optim1.t\":\"40\"", 0, 0, VT_ERR_FORMAT, "'optim1.t' is not one"},
        {"\"state_sha256\":\"", "\"state_sha256\":\"zz", 0, 0, VT_ERR_FORMAT, "not 64 hex digits"}};
    int k;
    for (k = 0; k < (int)(sizeof e / sizeof e[0]); k++) {
        vt_report r;
        int made;
        cp_r("build/tr_a", "build/tr_c");
        made = e[k].find ? st_edit("build/tr_a/ckpt-00000040.safetensors", "build/tr_c/ckpt-00000040.safetensors", e[k].find, e[k].repl, e[k].extra)
                         : st_shift_last("build/tr_a/ckpt-00000040.safetensors", "build/tr_c/ckpt-00000040.safetensors", e[k].shift, e[k].extra);
        CHECK(made, "case %d: could not edit the checkpoint", k);
        audit("build/tr_c", "chaos:5", 40, &r);
        CHECK(r.status == (vt_status)e[k].status && strstr(r.message, e[k].msg), "case %d (%s): %s %s", k, e[k].msg,
              vt_status_name(r.status), r.message);
    }
    {   /* an edited optimizer counter: an audit from the checkpoint before it passes through it and says so */
        vt_report r;
        cp_r("build/tr_a", "build/tr_c");
        CHECK(st_edit("build/tr_a/ckpt-00000080.safetensors", "build/tr_c/ckpt-00000080.safetensors", "\"optim0.t\":\"80\"",
                      "\"optim0.t\":\"79\"", 0), "could not edit optim0.t");
        audit("build/tr_c", "chaos:5", 40, &r);
        CHECK(r.status == VT_ERR_MISMATCH && r.first_bad_step == 80 && strstr(r.message, "optimizer 0 has taken 79 steps, the replay's 80"),
              "edited counter: %s at %lld: %s", vt_status_name(r.status), (long long)r.first_bad_step, r.message);
        NOTE("%s", r.message);
    }
}

/* --- kill and resume ------------------------------------------------------------- */

static void sleep_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

TEST(kill_and_resume_same_leaves) {
    vt_report r;
    pid_t pid;
    int status, waited = 0;
    vt_leaf_info *la, *lb;
    int64_t na, nb, k;
    rm_rf("build/tr_k");
    pid = fork();
    if (pid == 0) { /* the trainer, killed mid-run */
        vt_report rr;
        slow_after = 70;
        train("build/tr_k", "threads:1", 0, &rr);
        _exit(0);
    }
    while (waited < 600) { /* wait for the checkpoint at 80, then a few more steps */
        FILE *f = fopen("build/tr_k/ckpt-00000080.safetensors", "rb");
        if (f) { fclose(f); break; }
        sleep_ms(100);
        waited++;
    }
    sleep_ms(150);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status), "the trainer finished before it was killed");
    CHECK(train("build/tr_k", "threads:2", 1, &r) == VT_OK && r.steps > 0, "resume: %s", r.message);
    NOTE("resumed at step %lld, ran %lld steps", (long long)(NSTEPS - r.steps), (long long)r.steps);
    CHECK(vt_transcript_leaves("build/tr_a", &la, &na) == VT_OK && vt_transcript_leaves("build/tr_k", &lb, &nb) == VT_OK, "%s",
          vt_last_error());
    CHECK(na == NSTEPS && nb == NSTEPS, "steps %lld %lld", (long long)na, (long long)nb);
    for (k = 0; k < na && k < nb; k++)
        if (memcmp(la[k].leaf, lb[k].leaf, 32)) break;
    CHECK(k == NSTEPS, "leaves differ from step %lld", (long long)k);
    CHECK(audit("build/tr_k", "chaos:6", 0, &r) == VT_OK, "audit of the resumed run: %s", r.message);
    vt_free_leaves(la);
    vt_free_leaves(lb);
}

/* a trainer killed before its first checkpoint resumes from step 0 (there
   is nothing else to resume from) and ends with the leaves an unbroken
   run commits; the files the killed run left never block the next command */
TEST(kill_before_first_checkpoint_then_resume) {
    vt_report r;
    pid_t pid;
    int status, waited = 0;
    vt_leaf_info *la, *lb;
    int64_t na, nb, k;
    size_t n = 0;
    rm_rf("build/tr_k0");
    pid = fork();
    if (pid == 0) {
        vt_report rr;
        slow_after = 0;
        train("build/tr_k0", "threads:1", 0, &rr);
        _exit(0);
    }
    while (waited < 600) { /* some commitments, no checkpoint (the first is at step 40) */
        unsigned char *b = slurp("build/tr_k0/commits.bin", &n);
        free(b);
        if (b && n > 48 + 5 * 1100) break;
        sleep_ms(50);
        waited++;
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status), "the trainer finished before it was killed");
    CHECK(!vt__exists("build/tr_k0/ckpt-00000040.safetensors"), "the trainer got to its first checkpoint");
    NOTE("killed with %zu bytes of commitments and no checkpoint", n);
    CHECK(train("build/tr_k0", "threads:2", 1, &r) == VT_OK && r.steps == NSTEPS, "resume: %s (%lld steps)", r.message, (long long)r.steps);
    CHECK(vt_transcript_leaves("build/tr_a", &la, &na) == VT_OK && vt_transcript_leaves("build/tr_k0", &lb, &nb) == VT_OK, "%s",
          vt_last_error());
    for (k = 0; k < na && k < nb; k++)
        if (memcmp(la[k].leaf, lb[k].leaf, 32)) break;
    CHECK(na == NSTEPS && nb == NSTEPS && k == NSTEPS, "%lld and %lld leaves, differing from step %lld", (long long)na, (long long)nb, (long long)k);
    vt_free_leaves(la);
    vt_free_leaves(lb);
    CHECK(audit("build/tr_k0", "chaos:6", 0, &r) == VT_OK, "audit of the restarted run: %s", r.message);
    /* killed before even the log existed: a resume starts afresh too */
    rm_rf("build/tr_k1");
    mkdir("build/tr_k1", 0777);
    {
        FILE *f = fopen("build/tr_k1/manifest.txt", "wb"), *g = fopen("build/tr_a/manifest.txt", "rb");
        char buf[4096];
        size_t m = g ? fread(buf, 1, sizeof buf, g) : 0;
        if (f) { fwrite(buf, 1, m, f); fclose(f); }
        if (g) fclose(g);
    }
    CHECK(train("build/tr_k1", "threads:2", 1, &r) == VT_OK && r.steps == NSTEPS, "resume with only a manifest: %s", r.message);
}

/* a resume that fails changes no file and writes no root.txt: the log and
   commitments stay as they were, and the next command (a resume from an
   older checkpoint, or a fresh train) is not refused because of it */
TEST(failed_resume_changes_nothing) {
    static const char *files[] = {"log.vtlog", "commits.bin", "manifest.txt"};
    vt_report r;
    unsigned char *before[3], *after;
    size_t nb[3], na;
    int k;
    cp_r("build/tr_a", "build/tr_r");
    remove("build/tr_r/root.txt"); /* as if killed after its last checkpoint */
    CHECK(st_edit("build/tr_a/ckpt-00000120.safetensors", "build/tr_r/ckpt-00000120.safetensors", "\"step\":\"120\"",
                  "\"step\":\"12x\"", 0), "could not edit the checkpoint");
    for (k = 0; k < 3; k++) {
        char p[128];
        snprintf(p, sizeof p, "build/tr_r/%s", files[k]);
        before[k] = slurp(p, &nb[k]);
    }
    CHECK(train("build/tr_r", "threads:2", 1, &r) == VT_ERR_FORMAT && strstr(r.message, "ckpt-00000120"), "resume from a bad checkpoint: %s",
          r.message);
    NOTE("%s", r.message);
    for (k = 0; k < 3; k++) {
        char p[128];
        snprintf(p, sizeof p, "build/tr_r/%s", files[k]);
        after = slurp(p, &na);
        CHECK(after && na == nb[k] && !memcmp(after, before[k], na), "the failed resume changed %s", files[k]);
        free(after);
        free(before[k]);
    }
    CHECK(!vt__exists("build/tr_r/root.txt"), "the failed resume wrote root.txt");
    /* the checkpoint it named set aside, a resume from the one before works and ends where an unbroken run does */
    rename("build/tr_r/ckpt-00000120.safetensors", "build/tr_r/bad-ckpt");
    CHECK(train("build/tr_r", "threads:1", 1, &r) == VT_OK && r.steps == NSTEPS - 80, "resume from 80: %s", r.message);
    {
        unsigned char ra[32], rr[32];
        vt_transcript_root("build/tr_a", ra, NULL, NULL);
        CHECK(vt_transcript_root("build/tr_r", rr, NULL, NULL) == VT_OK && !memcmp(ra, rr, 32), "the resumed run's root differs");
    }
    /* a checkpoint beyond the commitments (they were lost): refused, nothing changed */
    cp_r("build/tr_a", "build/tr_r");
    remove("build/tr_r/root.txt");
    before[0] = slurp("build/tr_r/commits.bin", &nb[0]);
    spit("build/tr_r/commits.bin", before[0], nb[0] / 2);
    CHECK(train("build/tr_r", "threads:2", 1, &r) != VT_OK, "resume past the commitments was accepted");
    after = slurp("build/tr_r/commits.bin", &na);
    CHECK(after && na == nb[0] / 2 && !memcmp(after, before[0], na), "the failed resume changed commits.bin");
    CHECK(!vt__exists("build/tr_r/root.txt"), "the failed resume wrote root.txt");
    NOTE("%s", r.message);
    free(after);
    free(before[0]);
}

/* A finished run whose checkpoints and root.txt are gone, and whose
   manifest lost or changed the trainer_ckpt_every line (outside the
   program's hash, so the resume takes the manifest as the same program's).
   A resume finds no checkpoint and would restart at step 0; it must refuse
   rather than cut the 120 committed steps: the manifest is not the one the
   commitments were made under, and where it is (both edited, resealed), the
   run's own interval (40) stands in for the missing line. */
TEST(resume_never_cuts_on_a_manifest_edit) {
    static const char *const edits[3][2] = {{"vtrain.trainer_ckpt_every = 40\n", ""},
                                            {"vtrain.trainer_ckpt_every = 40\n", "vtrain.trainer_ckpt_every = 1000\n"},
                                            {"vtrain.trainer_ckpt_every = 40\n", ""}};
    static const char *const want[3] = {"under another manifest", "under another manifest", "past its first checkpoint (after 40 steps)"};
    vt_report r;
    int k;
    for (k = 0; k < 3; k++) {
        unsigned char *before, *after, *lb, *la;
        size_t nb, na, nlb, nla;
        cp_r("build/tr_a", "build/tr_s");
        remove("build/tr_s/ckpt-00000040.safetensors");
        remove("build/tr_s/ckpt-00000080.safetensors");
        remove("build/tr_s/ckpt-00000120.safetensors");
        CHECK(edit_text("build/tr_s", "manifest.txt", edits[k][0], edits[k][1]), "case %d: no line to edit", k);
        if (k == 2) reseal("build/tr_s"); /* commits.bin's header names the edited manifest */
        remove("build/tr_s/root.txt");
        before = slurp("build/tr_s/commits.bin", &nb);
        lb = slurp("build/tr_s/log.vtlog", &nlb);
        CHECK(train("build/tr_s", "threads:2", 1, &r) == VT_ERR_STATE && strstr(r.message, want[k]), "case %d: resume: %s", k, r.message);
        after = slurp("build/tr_s/commits.bin", &na);
        la = slurp("build/tr_s/log.vtlog", &nla);
        CHECK(before && after && na == nb && !memcmp(before, after, na), "case %d: the refused resume changed commits.bin", k);
        CHECK(lb && la && nla == nlb && !memcmp(lb, la, nla), "case %d: the refused resume changed log.vtlog", k);
        if (k < 2) NOTE("%s", r.message);
        free(before);
        free(after);
        free(lb);
        free(la);
    }
}

/* --- the dispute game --------------------------------------------------------------- */

/* one game over leaf arrays: the trainer's (a) and the auditor's (b) */
static int64_t game(const vt_leaf_info *a, const vt_leaf_info *b, int64_t n, int *rounds) {
    unsigned char(*lv)[32] = (unsigned char(*)[32])malloc(32 * (size_t)n), root[32];
    vt_dispute g;
    int64_t i, lo, hi;
    for (i = 0; i < n; i++) memcpy(lv[i], a[i].leaf, 32);
    vt_merkle_root((const unsigned char(*)[32])lv, n, root);
    free(lv);
    vt_dispute_begin(&g, b, n, root);
    while (vt_dispute_query(&g, &lo, &hi)) {
        vt_claim c;
        vt_dispute_answer(a, n, lo, hi, &c);
        vt_dispute_receive(&g, &c);
    }
    *rounds = g.rounds;
    return g.result;
}

/* synthetic leaves: runs that agree before step p and differ from p on, or
   differ at p alone (a lie about one step's batch): the game must find p in
   at most ceil(log2 n) + 1 rounds */
TEST(dispute_random_divergence) {
    int seed, worst = -100, fails = 0, mode;
    for (mode = 0; mode < 2; mode++)
        for (seed = 0; seed < 200; seed++) {
            int64_t n = 2 + (int64_t)(vt_rng_u64(77, (uint64_t)seed, (uint64_t)mode) % 5000);
            int64_t p = (int64_t)(vt_rng_u64(78, (uint64_t)seed, (uint64_t)mode) % (uint64_t)n), i, found;
            vt_leaf_info *a = (vt_leaf_info *)calloc((size_t)n, sizeof *a), *b = (vt_leaf_info *)calloc((size_t)n, sizeof *b);
            int bound = 1, rounds;
            while (((int64_t)1 << (bound - 1)) < n) bound++; /* ceil(log2 n) + 1 */
            for (i = 0; i < n; i++) {
                a[i].step = b[i].step = i;
                a[i].state[0] = b[i].state[0] = (unsigned char)i;
                a[i].state[1] = b[i].state[1] = (unsigned char)(i >> 8);
                if (mode == 0 ? i >= p : i == p) b[i].batch[0] = 1;
                vt_leaf_hash(&a[i]);
                vt_leaf_hash(&b[i]);
            }
            found = game(a, b, n, &rounds);
            if (found != p || rounds > bound) fails++;
            if (rounds - bound > worst) worst = rounds - bound;
            free(a);
            free(b);
        }
    CHECK(fails == 0, "%d of 400 games found the wrong step or took too many rounds", fails);
    NOTE("400 games, n up to 5001: always the first differing step; rounds - (ceil(log2 n) + 1) at most %d", worst);
}

/* a trainer whose answers do not match its root loses on the spot */
TEST(dispute_forged_answers) {
    vt_leaf_info a[16], b[16];
    unsigned char lv[16][32], root[32];
    vt_dispute g;
    vt_claim c;
    int64_t lo, hi;
    int i;
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    for (i = 0; i < 16; i++) {
        a[i].step = b[i].step = i;
        a[i].state[0] = b[i].state[0] = (unsigned char)i;
        if (i >= 9) b[i].state[1] = 1;
        vt_leaf_hash(&a[i]);
        vt_leaf_hash(&b[i]);
        memcpy(lv[i], a[i].leaf, 32);
    }
    vt_merkle_root((const unsigned char(*)[32])lv, 16, root);
    vt_dispute_begin(&g, b, 16, root);
    vt_dispute_query(&g, &lo, &hi);
    vt_dispute_answer(a, 16, lo, hi, &c);
    c.right[3] ^= 1; /* a child that does not hash to the root */
    CHECK(vt_dispute_receive(&g, &c) == VT_ERR_IMPLAUSIBLE && g.done && strstr(g.message, "loses"), "%s", g.message);
    vt_dispute_begin(&g, b, 16, root);
    while (vt_dispute_query(&g, &lo, &hi)) {
        vt_dispute_answer(a, 16, lo, hi, &c);
        if (hi - lo == 1) c.leaf.state[7] ^= 1; /* reveals another leaf than it committed */
        vt_dispute_receive(&g, &c);
    }
    CHECK(g.result < 0 && strstr(g.message, "loses"), "forged leaf: %s", g.message);
}

static vt_verdict play(const char *trainer, const char *auditor, int64_t *at, char *why, size_t whylen) {
    vt_leaf_info *la, *lb;
    int64_t na, nb, lo, hi;
    unsigned char ra[32];
    vt_dispute g;
    vt_desc d = vt_desc_default();
    vt_program p = program();
    unsigned char *chunk = NULL;
    size_t clen = 0;
    vt_verdict v;
    vt_transcript_leaves(trainer, &la, &na);
    vt_transcript_leaves(auditor, &lb, &nb);
    vt_transcript_root(trainer, ra, NULL, NULL);
    vt_dispute_begin(&g, lb, nb, ra);
    while (vt_dispute_query(&g, &lo, &hi)) {
        vt_claim c;
        vt_dispute_answer(la, na, lo, hi, &c);
        vt_dispute_receive(&g, &c);
    }
    *at = g.result;
    vt_order_parse(&d.order, "threads:1,chaos:12");
    if (g.result > 0 && vt_transcript_state_before(&d, &p, trainer, g.result, "build/tr_state.safetensors") != VT_OK) {
        snprintf(why, whylen, "no state: %s", vt_last_error());
        return VT_VERDICT_TRAINER_WRONG;
    }
    vt_transcript_chunk(trainer, g.result, &chunk, &clen);
    v = vt_judge(&d, &p, g.result > 0 ? &g.agreed : NULL, "build/tr_state.safetensors", chunk, clen, &g.disputed_trainer,
                 &lb[g.result], why, whylen);
    free(chunk);
    vt_free_leaves(la);
    vt_free_leaves(lb);
    return v;
}

/* real transcripts: a poisoned trainer loses, an honest trainer never does */
TEST(dispute_judge_rules) {
    int64_t at;
    char why[400];
    vt_verdict v = play("build/tr_p", "build/tr_b", &at, why, sizeof why);
    CHECK(v == VT_VERDICT_TRAINER_WRONG && at == 57, "poisoned trainer: verdict %d at %lld: %s", (int)v, (long long)at, why);
    NOTE("poisoned trainer, step %lld: %s", (long long)at, why);
    v = play("build/tr_b", "build/tr_p", &at, why, sizeof why);
    CHECK(v == VT_VERDICT_AUDITOR_WRONG && at == 57, "honest trainer vs lying auditor: verdict %d at %lld: %s", (int)v, (long long)at, why);
    NOTE("honest trainer, lying auditor, step %lld: %s", (long long)at, why);
    v = play("build/tr_l", "build/tr_b", &at, why, sizeof why);
    CHECK(v == VT_VERDICT_TRAINER_WRONG && at == 63, "batch liar: verdict %d at %lld: %s", (int)v, (long long)at, why);
}

/* The game between two transcripts, every branch: its outcome is stated,
   and no branch convicts the honest party */
static vt_dispute_report dispute(const char *trainer, const char *auditor) {
    vt_desc d = vt_desc_default();
    vt_program p = program();
    vt_dispute_report r;
    memset(&r, 0, sizeof r); /* on_round and user are inputs */
    vt_order_parse(&d.order, "threads:1,chaos:12");
    if (vt_dispute_transcripts(&d, &p, trainer, auditor, &r) != VT_OK) {
        r.outcome = VT_DISPUTE_OPEN;
        snprintf(r.message, sizeof r.message, "vt_dispute_transcripts failed: %s", vt_last_error());
    }
    return r;
}

TEST(dispute_every_branch) {
    vt_dispute_report r;
    vt_report tr;
    /* agreeing roots (two honest runs, two orders): no dispute, and no judge */
    r = dispute("build/tr_a", "build/tr_b");
    CHECK(r.outcome == VT_DISPUTE_NONE && r.verdict == VT_VERDICT_NONE && r.step < 0, "agreeing roots: %d %d: %s", (int)r.outcome, (int)r.verdict, r.message);
    /* the auditor is an honest copy of the trainer with an edited root (the case): the auditor's challenge is malformed */
    cp_r("build/tr_a", "build/tr_e");
    edit_text("build/tr_e", "root.txt", "leaves_root = ", "leaves_root = 0");
    edit_text("build/tr_e", "root.txt", "leaves_root = 0", "leaves_root = ");
    {
        unsigned char *b;
        size_t n;
        char *at;
        b = slurp("build/tr_e/root.txt", &n);
        b[n] = 0;
        at = strstr((char *)b, "leaves_root = ") + 14;
        *at = *at == 'a' ? 'b' : 'a';
        spit("build/tr_e/root.txt", b, n);
        free(b);
    }
    r = dispute("build/tr_a", "build/tr_e");
    CHECK(r.outcome == VT_DISPUTE_AUDITOR_LOSES && r.verdict != VT_VERDICT_TRAINER_WRONG && strstr(r.message, "auditor loses"),
          "honest trainer, auditor with an edited root: %s", r.message);
    NOTE("%s", r.message);
    /* the same edit in the trainer's root: it cannot answer for the root it published */
    r = dispute("build/tr_e", "build/tr_a");
    CHECK(r.outcome == VT_DISPUTE_TRAINER_LOSES && r.verdict == VT_VERDICT_TRAINER_WRONG, "trainer with an edited root: %s", r.message);
    /* different lengths, different programs: no game, no verdict */
    cp_r("build/tr_a", "build/tr_e");
    {
        unsigned char *b;
        size_t n;
        b = slurp("build/tr_e/commits.bin", &n);
        spit("build/tr_e/commits.bin", b, n - (112 + 32 * 30 + 32));
        free(b);
        reseal("build/tr_e");
    }
    r = dispute("build/tr_a", "build/tr_e");
    CHECK(r.outcome == VT_DISPUTE_INVALID && r.verdict == VT_VERDICT_NONE && strstr(r.message, "120 and 119"), "lengths: %s", r.message);
    cp_r("build/tr_a", "build/tr_e");
    edit_text("build/tr_e", "manifest.txt", "model.width = 32", "model.width = 33");
    reseal("build/tr_e");
    r = dispute("build/tr_a", "build/tr_e");
    CHECK(r.outcome == VT_DISPUTE_INVALID && r.verdict == VT_VERDICT_NONE && strstr(r.message, "different programs"), "programs: %s", r.message);
    /* found steps: the poisoned trainer loses, the honest one wins against a lying auditor */
    r = dispute("build/tr_p", "build/tr_b");
    CHECK(r.outcome == VT_DISPUTE_FOUND && r.step == 57 && r.verdict == VT_VERDICT_TRAINER_WRONG, "poisoned trainer: %s", r.message);
    r = dispute("build/tr_b", "build/tr_p");
    CHECK(r.outcome == VT_DISPUTE_FOUND && r.step == 57 && r.verdict == VT_VERDICT_AUDITOR_WRONG, "honest trainer, lying auditor: %s", r.message);
    r = dispute("build/tr_l", "build/tr_a");
    CHECK(r.outcome == VT_DISPUTE_FOUND && r.step == 63 && r.verdict == VT_VERDICT_TRAINER_WRONG, "batch liar: %s", r.message);
    /* A trainer that edits an optimizer counter in a checkpoint and trains
       on from it: its transcript is consistent from there, and the counter
       is in no commitment. The state it offers the judge carries the
       edited counter; the judge must not rest on it. */
    cp_r("build/tr_a", "build/tr_t");
    remove("build/tr_t/ckpt-00000120.safetensors");
    remove("build/tr_t/root.txt");
    st_edit("build/tr_a/ckpt-00000080.safetensors", "build/tr_t/ckpt-00000080.safetensors", "\"optim0.t\":\"80\"", "\"optim0.t\":\"70\"", 0);
    CHECK(train("build/tr_t", "threads:2", 1, &tr) == VT_OK && tr.steps == 40, "resuming the counter liar: %s", tr.message);
    {   /* (what the judge would say on the state the trainer offers) */
        vt_leaf_info *la, *lb;
        int64_t na, nb;
        vt_desc d = vt_desc_default();
        vt_program p = program();
        unsigned char *chunk = NULL;
        size_t clen = 0;
        char why[600];
        vt_verdict v;
        vt_transcript_leaves("build/tr_t", &la, &na);
        vt_transcript_leaves("build/tr_a", &lb, &nb);
        vt_transcript_state_before(&d, &p, "build/tr_t", 80, "build/tr_state.safetensors");
        vt_transcript_chunk("build/tr_t", 80, &chunk, &clen);
        v = vt_judge(&d, &p, &lb[79], "build/tr_state.safetensors", chunk, clen, &la[80], &lb[80], why, sizeof why);
        CHECK(v == VT_VERDICT_AUDITOR_WRONG, "the attack is real: on the trainer's own state the judge rules %d: %s", (int)v, why);
        free(chunk);
        vt_free_leaves(la);
        vt_free_leaves(lb);
    }
    r = dispute("build/tr_t", "build/tr_a");
    CHECK(r.outcome == VT_DISPUTE_FOUND && r.step == 80 && r.verdict == VT_VERDICT_TRAINER_WRONG, "counter liar: %s", r.message);
    NOTE("counter liar: %s", r.message);
    CHECK(audit("build/tr_t", "chaos:3", 0, &tr) == VT_ERR_MISMATCH && strstr(tr.message, "optimizer 0 has taken 70 steps"), "full audit of the counter liar: %s",
          tr.message);
}

/* the judge with both parties' chunks (vt_judge_both), called directly on
   step q of two transcripts: the state before q rebuilt from the
   trainer's own files, each party's leaf and log chunk from its own */
static vt_verdict judge_both(const char *trainer, const char *auditor, int64_t q, char *why, size_t whylen) {
    vt_leaf_info *la = NULL, *lb = NULL;
    int64_t na = 0, nb = 0;
    vt_desc d = vt_desc_default();
    vt_program p = program();
    unsigned char *tc = NULL, *ac = NULL;
    size_t tl = 0, al = 0;
    vt_verdict v = VT_VERDICT_NONE;
    snprintf(why, whylen, "(no verdict asked)");
    vt_order_parse(&d.order, "threads:1,chaos:12");
    if (vt_transcript_leaves(trainer, &la, &na) != VT_OK || vt_transcript_leaves(auditor, &lb, &nb) != VT_OK || q < 0 || q >= na || q >= nb)
        snprintf(why, whylen, "no leaves of step %lld: %s", (long long)q, vt_last_error());
    else if (q > 0 && vt_transcript_state_before(&d, &p, trainer, q, "build/tr_state.safetensors") != VT_OK)
        snprintf(why, whylen, "no state: %s", vt_last_error());
    else if (vt_transcript_chunk(trainer, q, &tc, &tl) != VT_OK || vt_transcript_chunk(auditor, q, &ac, &al) != VT_OK)
        snprintf(why, whylen, "no chunk: %s", vt_last_error());
    else
        v = vt_judge_both(&d, &p, q > 0 ? &la[q - 1] : NULL, q > 0 ? "build/tr_state.safetensors" : NULL, tc, tl, &la[q], ac, al, &lb[q], why,
                          whylen);
    free(tc);
    free(ac);
    vt_free_leaves(la);
    vt_free_leaves(lb);
    return v;
}

/* vt_judge_both on its three rulings. No fault: two honest runs of one
   program in one order, one logging compact entries and one full 32-bit
   entries (vt_desc.compact_log, not in the manifest: the same program),
   hold the same values at every step and different log chunks wherever
   there are entries; judged at the first such step, each chunk replays to
   its own leaf, with either run as the trainer. The trainer's fault: a
   poisoned trainer against an honest auditor. The auditor's fault: an
   honest trainer against a poisoned auditor, whose own chunk the judge
   replays (vt_judge would not). */
TEST(dispute_judge_both) {
    vt_leaf_info *la, *lf;
    int64_t na, nf, q = -1, s, other = 0;
    vt_report r;
    vt_dispute_report dr;
    vt_verdict v;
    char why[1024];
    rm_rf("build/tr_f");
    full_entries = 1;
    CHECK(train("build/tr_f", "threads:2", 0, &r) == VT_OK, "train with full entries: %s", r.message);
    full_entries = 0;
    CHECK(vt_transcript_leaves("build/tr_a", &la, &na) == VT_OK && vt_transcript_leaves("build/tr_f", &lf, &nf) == VT_OK && na == nf, "%s",
          vt_last_error());
    for (s = 0; s < na && s < nf; s++) {
        if (memcmp(la[s].state, lf[s].state, 32) || memcmp(la[s].batch, lf[s].batch, 32)) other++;
        if (q < 0 && memcmp(la[s].chunk, lf[s].chunk, 32)) q = s;
    }
    vt_free_leaves(la);
    vt_free_leaves(lf);
    CHECK(other == 0 && q >= 0, "compact and full entries: %lld steps with other values, first other chunk at step %lld", (long long)other,
          (long long)q);
    if (q < 0) return;
    v = judge_both("build/tr_a", "build/tr_f", q, why, sizeof why);
    CHECK(v == VT_VERDICT_NONE && strstr(why, "both are valid executions") && strstr(why, "differ only in their log chunks"),
          "chunk-only difference at step %lld: verdict %d: %s", (long long)q, (int)v, why);
    NOTE("compact against full entries, step %lld: %s", (long long)q, why);
    v = judge_both("build/tr_f", "build/tr_a", q, why, sizeof why);
    CHECK(v == VT_VERDICT_NONE && strstr(why, "differ only in their log chunks"), "the same, roles swapped: verdict %d: %s", (int)v, why);
    dr = dispute("build/tr_a", "build/tr_f");
    CHECK(dr.outcome == VT_DISPUTE_NO_FAULT && dr.verdict == VT_VERDICT_NONE && dr.step == q, "the whole game: outcome %d, step %lld: %s",
          (int)dr.outcome, (long long)dr.step, dr.message);
    v = judge_both("build/tr_p", "build/tr_b", 57, why, sizeof why);
    CHECK(v == VT_VERDICT_TRAINER_WRONG && strstr(why, "gives another state than the trainer committed") &&
          strstr(why, "the auditor's log reproduces the auditor's leaf"), "poisoned trainer: verdict %d: %s", (int)v, why);
    NOTE("poisoned trainer, step 57: %s", why);
    v = judge_both("build/tr_b", "build/tr_p", 57, why, sizeof why);
    CHECK(v == VT_VERDICT_AUDITOR_WRONG && strstr(why, "reproduces the trainer's leaf; the auditor's leaf is wrong"),
          "honest trainer, poisoned auditor: verdict %d: %s", (int)v, why);
    NOTE("honest trainer, poisoned auditor, step 57: %s", why);
}

/* the game's messages: a truncated, oversized or garbled answer, one for
   another node, a leaf of another step, no answer at all: the trainer
   loses at that round, the auditor never does */
TEST(dispute_malformed_answers) {
    vt_leaf_info a[16], b[16];
    unsigned char lv[16][32], root[32], msg[VT_CLAIM_BYTES + 1];
    vt_dispute g;
    vt_claim c;
    int64_t lo, hi;
    int i, k;
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    for (i = 0; i < 16; i++) {
        a[i].step = b[i].step = i;
        a[i].state[0] = b[i].state[0] = (unsigned char)i;
        if (i >= 9) b[i].state[1] = 1;
        vt_leaf_hash(&a[i]);
        vt_leaf_hash(&b[i]);
        memcpy(lv[i], a[i].leaf, 32);
    }
    vt_merkle_root((const unsigned char(*)[32])lv, 16, root);
    CHECK(vt_dispute_begin(&g, a, 16, root) == VT_ERR_STATE && g.outcome == VT_DISPUTE_NONE && !vt_dispute_query(&g, &lo, &hi),
          "agreeing leaves: %s", g.message);
    CHECK(vt_dispute_begin(&g, b, 0, root) == VT_ERR_ARG && g.outcome == VT_DISPUTE_INVALID, "no steps: %s", g.message);
    for (k = 0; k < 8; k++) {
        int rounds = 0;
        vt_status st = VT_OK;
        vt_dispute_begin(&g, b, 16, root);
        while (vt_dispute_query(&g, &lo, &hi)) {
            vt_dispute_answer(a, 16, lo, hi, &c);
            vt_claim_encode(&c, msg);
            msg[VT_CLAIM_BYTES] = 0;
            if (++rounds < 3 || (k >= 6 && hi - lo > 1)) { st = vt_dispute_receive_bytes(&g, msg, VT_CLAIM_BYTES); continue; }
            switch (k) {
            case 0: st = vt_dispute_receive_bytes(&g, msg, VT_CLAIM_BYTES - 1); break; /* truncated */
            case 1: st = vt_dispute_receive_bytes(&g, msg, VT_CLAIM_BYTES + 1); break; /* a byte too many */
            case 2: msg[0] = 'X'; st = vt_dispute_receive_bytes(&g, msg, VT_CLAIM_BYTES); break;
            case 3: st = vt_dispute_receive_bytes(&g, msg, 0); break;
            case 4: st = vt_dispute_forfeit(&g, "deadline passed"); break;
            case 5: c.hi += 1; st = vt_dispute_receive(&g, &c); break; /* another node */
            case 6: c.leaf.step += 1; vt_leaf_hash(&c.leaf); st = vt_dispute_receive(&g, &c); break; /* a leaf outside the range */
            case 7: st = vt_dispute_receive(&g, NULL); break;
            }
        }
        CHECK(st != VT_OK && g.outcome == VT_DISPUTE_TRAINER_LOSES && g.result < 0 && strstr(g.message, "the trainer loses"), "case %d: %s", k,
              g.message);
        if (k < 4) NOTE("%s", g.message);
    }
    {   /* the honest trainer against an auditor whose leaves are garbage: a verdict only through the judge */
        vt_leaf_info z[16];
        memset(z, 0x5a, sizeof z);
        vt_dispute_begin(&g, z, 16, root);
        while (vt_dispute_query(&g, &lo, &hi)) {
            vt_dispute_answer(a, 16, lo, hi, &c);
            vt_dispute_receive(&g, &c);
        }
        CHECK(g.outcome == VT_DISPUTE_FOUND && g.result == 0, "garbage auditor: %s", g.message);
    }
    {   /* the judge rules on nothing that is not from a game */
        vt_desc d = vt_desc_default();
        vt_program p = program();
        char why[400];
        vt_leaf_info t = a[3];
        unsigned char ch[64];
        memset(ch, 0, sizeof ch);
        CHECK(vt_judge(&d, &p, &a[2], NULL, NULL, 0, &a[3], &b[3], why, sizeof why) == VT_VERDICT_NONE, "no chunk: %s", why);
        CHECK(vt_judge(&d, &p, &a[2], NULL, ch, sizeof ch, &a[3], &a[3], why, sizeof why) == VT_VERDICT_NONE && strstr(why, "same leaf"), "same leaf: %s", why);
        t.state[0] ^= 1;
        CHECK(vt_judge(&d, &p, &a[2], NULL, ch, sizeof ch, &t, &b[3], why, sizeof why) == VT_VERDICT_NONE && strstr(why, "does not hash"), "inconsistent leaf: %s", why);
        CHECK(vt_judge(&d, &p, &a[1], NULL, ch, sizeof ch, &a[3], &b[3], why, sizeof why) == VT_VERDICT_NONE, "agreed leaf of another step: %s", why);
    }
}

/* the review's findings on files and names: only canonical checkpoint
   names count; the judge's temporary files are in a private directory,
   and an atomic write follows no planted link; a manifest's duplicate
   keys are found in n log n; disputes over runs with no rounding log are
   refused; a resume never cuts a finished run */
TEST(transcript_review_findings) {
    vt_report r;
    vt_dispute_report dr;
    FILE *f;
    char buf[64];
    int k;
    size_t n;
    cp_r("build/tr_a", "build/tr_s");
    spit("build/tr_s/ckpt-45.safetensors", (const unsigned char *)"junk", 4);
    spit("build/tr_s/ckpt-00000050.safetensors.bak", (const unsigned char *)"junk", 4);
    spit("build/tr_s/ckpt-+0000060.safetensors", (const unsigned char *)"junk", 4);
    CHECK(vt__last_checkpoint("build/tr_s", 100) == 80 && vt__last_checkpoint("build/tr_s", 79) == 40, "stray names: %lld",
          (long long)vt__last_checkpoint("build/tr_s", 79));
    /* the judge's temporary files under a shared TMPDIR (mode 1777, as
       /tmp): watched from inside its replays (tmp_spy), they are never in
       the shared directory itself, only in a private directory of the
       judge's, which is gone afterwards. (The judge's name for it comes
       from mkdtemp; this checks where the files are, not the name.) */
    rm_rf("build/tr_tmp");
    mkdir("build/tr_tmp", 0777);
    chmod("build/tr_tmp", 01777);
    setenv("TMPDIR", "build/tr_tmp", 1);
    memset(&tmp_spy, 0, sizeof tmp_spy);
    tmp_spy.dir = "build/tr_tmp";
    dr = dispute("build/tr_p", "build/tr_b");
    tmp_spy.dir = NULL;
    unsetenv("TMPDIR");
    CHECK(dr.verdict == VT_VERDICT_TRAINER_WRONG && dr.step == 57, "dispute with TMPDIR set: %s", dr.message);
    CHECK(tmp_spy.steps > 0 && tmp_spy.private_dirs > 0 && tmp_spy.exposed == 0,
          "the judge's temporary files: %d steps watched, %d sightings of a private directory, %d of files others could reach (last '%s')",
          tmp_spy.steps, tmp_spy.private_dirs, tmp_spy.exposed, tmp_spy.name);
    NOTE("the judge's temporary files, watched at %d steps of its replays: in a private directory of its own", tmp_spy.steps);
    {
        DIR *d = opendir("build/tr_tmp");
        struct dirent *e;
        int left = 0;
        while (d && (e = readdir(d)) != NULL) left += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
        if (d) closedir(d);
        CHECK(d && left == 0, "the judge left %d entries in its TMPDIR", left);
    }
    spit("build/tr_victim", (const unsigned char *)"precious", 8);
    {   /* an atomic write's temporary "<path>.tmp", a link planted there: created exclusively, the link is not followed */
        vt_desc d = vt_desc_default();
        vt_ctx *c = vt_create(&d);
        if (symlink("tr_victim", "build/tr_atomic.tmp")) {}
        CHECK(c && vt__write_atomic(c, "build/tr_atomic", "new", 3, NULL, 0) == VT_OK, "atomic write: %s", c ? vt_error_message(c) : "");
        f = fopen("build/tr_victim", "rb");
        n = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (f) fclose(f);
        CHECK(n == 8 && !memcmp(buf, "precious", 8), "the atomic write followed the planted link");
        vt_destroy(c);
    }
    {   /* duplicate keys, at any distance, in a large manifest: found in
           n log n key comparisons (vt__mkey_cmps counts them; comparing
           each line with all before it takes n^2 / 2: here 3 billion, 4500 times more) */
        size_t cap = 1 << 20, m = 0;
        char *t = (char *)malloc(cap + 400);
        int mode, bound, i, lg = 0;
        double lam;
        unsigned long long lines, most;
        m += (size_t)sprintf(t, "vtrain-manifest 1\n");
        for (i = 0; m + 40 < cap; i++) m += (size_t)sprintf(t + m, "k%07d = 1\n", i);
        m += (size_t)sprintf(t + m, "vtrain.version = x\nvtrain.mode = verified\nvtrain.bound = sound\nvtrain.lambda = 1\n"
                                    "vtrain.trainer_order = threads:1\nvtrain.trainer_ckpt_every = 5\n");
        lines = (unsigned long long)i + 7;
        while ((1ull << lg) < lines) lg++;
        most = 2 * lines * (unsigned long long)lg; /* a merge sort makes at most n log2 n, a quicksort about 1.4 times that */
        vt__mkey_cmps = 0;
        CHECK(vt__manifest_check(t, m, "big", &mode, &bound, &lam) == VT_OK, "big manifest: %s", vt_last_error());
        CHECK(vt__mkey_cmps > 0 && vt__mkey_cmps <= most, "%llu lines: %llu key comparisons, more than %llu", lines, vt__mkey_cmps, most);
        m += (size_t)sprintf(t + m, "k0000007 = 2\n");
        vt__mkey_cmps = 0;
        CHECK(vt__manifest_check(t, m, "big", &mode, &bound, &lam) == VT_ERR_FORMAT && strstr(vt_last_error(), "key 'k0000007' appears twice"),
              "duplicate: %s", vt_last_error());
        CHECK(vt__mkey_cmps > 0 && vt__mkey_cmps <= most + 2 * (unsigned long long)lg + 2, "%llu lines and a duplicate: %llu key comparisons",
              lines + 1, vt__mkey_cmps);
        NOTE("a manifest of %llu lines: duplicates found in %llu key comparisons", lines + 1, vt__mkey_cmps);
        free(t);
    }
    {   /* two honest runs with no rounding log, two orders: no game */
        vt_mode modes[2] = {VT_MODE_NATIVE, VT_MODE_ROUND_ONLY};
        for (k = 0; k < 2; k++) {
            vt_desc d = vt_desc_default();
            vt_program p = program();
            rm_rf("build/tr_n1");
            rm_rf("build/tr_n2");
            d.manifest = manifest;
            d.ckpt_every = 4;
            d.mode = modes[k];
            d.transcript = "build/tr_n1";
            vt_order_parse(&d.order, "chaos:11");
            vt_run(&d, &p, 12, &r);
            d.transcript = "build/tr_n2";
            vt_order_parse(&d.order, "chaos:12");
            vt_run(&d, &p, 12, &r);
            dr = dispute("build/tr_n1", "build/tr_n2");
            CHECK(dr.outcome == VT_DISPUTE_INVALID && dr.verdict == VT_VERDICT_NONE && strstr(dr.message, "only verified"), "%s: %s",
                  vt_mode_name(modes[k]), dr.message);
            dr = dispute("build/tr_n2", "build/tr_n1");
            CHECK(dr.verdict == VT_VERDICT_NONE, "%s, reversed: %s", vt_mode_name(modes[k]), dr.message);
        }
    }
    {   /* a finished run whose checkpoints are gone: a resume is refused, nothing cut */
        unsigned char *before, *after;
        size_t nb, na;
        cp_r("build/tr_a", "build/tr_s");
        remove("build/tr_s/ckpt-00000040.safetensors");
        remove("build/tr_s/ckpt-00000080.safetensors");
        remove("build/tr_s/ckpt-00000120.safetensors");
        before = slurp("build/tr_s/commits.bin", &nb);
        CHECK(train("build/tr_s", "threads:2", 1, &r) == VT_ERR_STATE && strstr(r.message, "finished transcript"), "resume: %s", r.message);
        remove("build/tr_s/root.txt");
        CHECK(train("build/tr_s", "threads:2", 1, &r) == VT_ERR_STATE && strstr(r.message, "past its first checkpoint"), "resume: %s", r.message);
        after = slurp("build/tr_s/commits.bin", &na);
        CHECK(before && after && na == nb && !memcmp(before, after, na), "the refused resume changed commits.bin");
        free(before);
        free(after);
    }
}

/* A chunk's length near 2^63 in the log: each of the three readers that
   walk chunks (an audit's, an audit from a checkpoint past it, and
   vt_transcript_chunk, which the dispute reads a party's chunk with) says
   the same thing, naming the step, with no overflow and no huge allocation */
TEST(chunk_length_checked_alike) {
    static const char *const want = "'build/tr_s/log.vtlog': the chunk of step 10 claims 9223372036854775792 body bytes";
    unsigned char *b, *chunk = NULL;
    size_t n, at, clen = 0;
    int s;
    vt_report r;
    cp_r("build/tr_a", "build/tr_s");
    b = slurp("build/tr_s/log.vtlog", &n);
    CHECK(b != NULL, "no log");
    if (!b) return;
    at = 16 + vt__get_u32(b + 12) + 32;
    for (s = 0; s < 10; s++) at += 28 + (size_t)vt__get_u64(b + at + 20) + 32;
    vt__put_u64(b + at + 20, 0x7ffffffffffffff0ull);
    spit("build/tr_s/log.vtlog", b, n);
    free(b);
    CHECK(vt_transcript_chunk("build/tr_s", 12, &chunk, &clen) == VT_ERR_TRUNCATED && strstr(vt_last_error(), want), "vt_transcript_chunk: %s",
          vt_last_error());
    NOTE("%s", vt_last_error());
    free(chunk);
    CHECK(vt_transcript_chunk("build/tr_s", 9, &chunk, &clen) == VT_OK, "the chunk before it: %s", vt_last_error());
    free(chunk);
    CHECK(audit("build/tr_s", "threads:1", 0, &r) == VT_ERR_TRUNCATED && r.first_bad_step == 10 && strstr(r.message, want), "audit: %s",
          r.message);
    CHECK(audit("build/tr_s", "threads:1", 40, &r) == VT_ERR_TRUNCATED && strstr(r.message, want), "audit from 40: %s", r.message);
}

/* --- parsers on hostile input ------------------------------------------------------ */

/* every file in tests/fuzz/regress (inputs the fuzzers once found, and
   hand-made ones) goes through each parser, whole and without its first
   byte (the fuzzer's parser selector): clean errors, no crash. Files named
   for what they break must be refused by their parser: ckpt_* (a
   checkpoint of the fuzzer's program; ckpt_good alone is accepted),
   root_*, manifest_*, claim_*, order_*. Returns what the named parser said
   of the input without its first byte (VT_OK if none is named). */
static vt_tensor *FW[2];
static vt_status fuzz_setup(vt_ctx *c) { /* the program of tests/fuzz/fuzz_parsers.c */
    int64_t n1[2] = {8, 6}, n2[2] = {3, 8};
    FW[0] = vt_param(c, "w1", 2, n1);
    FW[1] = vt_param(c, "w2", 2, n2);
    vt_init_normal(c, FW[0], 1, 0, 0.5);
    vt_init_normal(c, FW[1], 1, 1, 0.5);
    vt_adamw_create(c, NULL);
    return vt_status_of(c);
}

static vt_status parse_one(const unsigned char *b, size_t n, const char *name) {
    vt__st_header h;
    char err[200], val[64], *t = (char *)malloc(n + 1);
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    vt_status named = VT_OK, st;
    int mode, bound;
    double lambda;
    vt_claim cl;
    vt_order o;
    memcpy(t, b, n);
    t[n] = 0;
    vt__st_parse((const char *)b, n, &h, err, sizeof err);
    spit("build/fz_input", b, n);
    vt__read_leaves("build/fz_input", NULL, NULL, NULL);
    vt__manifest_find(t, "model.width", val, sizeof val);
    st = vt__manifest_check(t, n, "fz", &mode, &bound, &lambda);
    if (!strncmp(name, "manifest_", 9)) named = st;
    st = vt_claim_decode(b, n, &cl);
    if (!strncmp(name, "claim_", 6) && st == VT_OK) { /* decodes: the game must refuse it */
        vt_leaf_info mine[5];
        unsigned char root[32];
        vt_dispute g;
        memset(mine, 0, sizeof mine);
        memset(root, 7, sizeof root);
        vt_dispute_begin(&g, mine, 5, root);
        st = vt_dispute_receive_bytes(&g, b, n);
    }
    if (!strncmp(name, "claim_", 6)) named = st;
    st = vt_order_parse(&o, t);
    if (!strncmp(name, "order_", 6)) named = st;
    mkdir("build/fz_dir", 0777);
    spit("build/fz_dir/root.txt", b, n);
    {
        unsigned char r[32], m[32];
        int64_t k;
        st = vt_transcript_root("build/fz_dir", r, m, &k);
        if (!strncmp(name, "root_", 5)) named = st;
    }
    free(t);
    d.order.threads = 1;
    c = vt_create(&d);
    if (c && fuzz_setup(c) == VT_OK) {
        st = vt__checkpoint_parse(c, b, n, "fz");
        if (!strncmp(name, "ckpt_", 5)) named = st;
    }
    vt_destroy(c);
    d.role = VT_ROLE_AUDIT;
    d.log_memory = 1;
    c = vt_create(&d);
    if (c) {
        vt_feed_chunk(c, b, n);
        vt_step_begin(c);
        vt_destroy(c);
    }
    return named;
}

TEST(parsers_on_regression_inputs) {
    DIR *dir = opendir("tests/fuzz/regress");
    struct dirent *e;
    int count = 0, named = 0;
    CHECK(dir != NULL, "tests/fuzz/regress is missing");
    if (!dir) return;
    while ((e = readdir(dir)) != NULL) {
        char path[600];
        size_t n;
        unsigned char *b;
        vt_status st;
        int want_ok;
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "tests/fuzz/regress/%s", e->d_name);
        b = slurp(path, &n);
        if (!b) continue;
        parse_one(b, n, "");
        st = n ? parse_one(b + 1, n - 1, e->d_name) : VT_OK;
        want_ok = !strcmp(e->d_name, "ckpt_good");
        if (!strncmp(e->d_name, "ckpt_", 5) || !strncmp(e->d_name, "root_", 5) || !strncmp(e->d_name, "manifest_", 9) ||
            !strncmp(e->d_name, "claim_", 6) || !strncmp(e->d_name, "order_", 6)) {
            CHECK(want_ok ? st == VT_OK : st != VT_OK, "%s: its parser said %s", e->d_name, vt_status_name(st));
            named++;
        }
        free(b);
        count++;
    }
    closedir(dir);
    CHECK(count > 0, "no regression inputs");
    NOTE("%d inputs parsed without a crash; %d refused (or, ckpt_good, accepted) by the parser they are named for", count, named);
}

int main(int argc, char **argv) {
    TEST_FILTER(argc, argv);
    setvbuf(stdout, NULL, _IONBF, 0);
    if (chargpt_load(&P.g, "data/kjv_nt.txt") != VT_OK) { printf("%s\n0 passed, 1 failed\n", vt_last_error()); return 1; }
    P.g.cfg.layers = 2; P.g.cfg.width = 32; P.g.cfg.heads = 2; P.g.T = 16; P.g.B = 4; P.g.steps = NSTEPS; P.g.lr = 3e-3;
    P.poison_at = P.lie_batch_at = -1;
    RUN(merkle_root_and_proofs);
    RUN(transcript_train_and_audit);
    RUN(tamper_poisoned_batch);
    RUN(tamper_checkpoint_bit);
    RUN(tamper_commitment_and_manifest);
    RUN(tamper_log_entry);
    RUN(truncated_files);
    RUN(root_every_field_checked);
    RUN(files_every_field_checked);
    RUN(checkpoint_names_round_trip);
    RUN(checkpoint_structure_checked);
    RUN(kill_and_resume_same_leaves);
    RUN(kill_before_first_checkpoint_then_resume);
    RUN(failed_resume_changes_nothing);
    RUN(resume_never_cuts_on_a_manifest_edit);
    RUN(dispute_random_divergence);
    RUN(dispute_forged_answers);
    RUN(dispute_judge_rules);
    RUN(dispute_every_branch);
    RUN(dispute_judge_both);
    RUN(dispute_malformed_answers);
    RUN(transcript_review_findings);
    RUN(chunk_length_checked_alike);
    RUN(parsers_on_regression_inputs);
    chargpt_free(&P.g);
    return TEST_SUMMARY();
}
