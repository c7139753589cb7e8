/* tests/test_transcript.c - transcripts, Merkle proofs, checkpoints, audit
   from a checkpoint, tampering of every file, kill-and-resume, the dispute
   game, and the parsers on the fuzzers' regression inputs. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "test.h"
#include "../examples/chargpt.h"
#include <signal.h>
#include <sys/wait.h>

/* --- the program: a tiny character GPT that can be told to poison a step --- */

typedef struct { chargpt g; int64_t poison_at; int64_t lie_batch_at; } prog_app;
static prog_app P;

static vt_status prog_step(vt_ctx *c, int64_t s, void *u) {
    prog_app *t = (prog_app *)u;
    chargpt *a = &t->g;
    int64_t ne[2], starts[64];
    int i;
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

static void rm_rf(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("    (could not remove %s)\n", dir);
}
static void cp_r(const char *from, const char *to) {
    char cmd[1200];
    rm_rf(to);
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", from, to);
    if (system(cmd) != 0) printf("    (could not copy %s)\n", from);
}

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char *b;
    long sz;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = (unsigned char *)malloc((size_t)sz + 1);
    if (fread(b, 1, (size_t)sz, f) != (size_t)sz) { fclose(f); free(b); return NULL; }
    fclose(f);
    *n = (size_t)sz;
    return b;
}
static void spit(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) { fwrite(b, 1, n, f); fclose(f); }
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

/* --- parsers on hostile input ------------------------------------------------------ */

/* every file in tests/fuzz/regress (inputs the fuzzers once found, and
   hand-made ones) goes through each parser: clean errors, no crash */
static void parse_all(const unsigned char *b, size_t n) {
    vt__st_header h;
    char err[200], val[64];
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    vt__st_parse((const char *)b, n, &h, err, sizeof err);
    spit("build/fz_input", b, n);
    vt__read_leaves("build/fz_input", NULL, NULL, NULL);
    {
        char *t = (char *)malloc(n + 1);
        memcpy(t, b, n);
        t[n] = 0;
        vt__manifest_find(t, "model.width", val, sizeof val);
        free(t);
    }
    d.role = VT_ROLE_AUDIT;
    d.log_memory = 1;
    c = vt_create(&d);
    if (c) {
        vt_feed_chunk(c, b, n);
        vt_step_begin(c);
        vt_destroy(c);
    }
}

TEST(parsers_on_regression_inputs) {
    DIR *dir = opendir("tests/fuzz/regress");
    struct dirent *e;
    int count = 0;
    CHECK(dir != NULL, "tests/fuzz/regress is missing");
    if (!dir) return;
    while ((e = readdir(dir)) != NULL) {
        char path[600];
        size_t n;
        unsigned char *b;
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "tests/fuzz/regress/%s", e->d_name);
        b = slurp(path, &n);
        if (!b) continue;
        parse_all(b, n);
        free(b);
        count++;
    }
    closedir(dir);
    CHECK(count > 0, "no regression inputs");
    NOTE("%d inputs parsed without a crash", count);
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
    RUN(kill_and_resume_same_leaves);
    RUN(dispute_random_divergence);
    RUN(dispute_forged_answers);
    RUN(dispute_judge_rules);
    RUN(parsers_on_regression_inputs);
    chargpt_free(&P.g);
    return TEST_SUMMARY();
}
