/* tests/test_dp_mpi.c - the data-parallel programs of tests/dp_run.sh:
   vtrain_dp.h over MPI ranks, audited in one process.

     train DIR MODEL S STEPS [--native] [--resume] [--ckpt N] [--timeout S]
           [--threads N] [--pids DIR] [--slow MS] [--cuda] [--gpu]
                         under mpirun: the sharded MODEL (mlp or gpt), S
                         shards, STEPS steps, rank 0 writes DIR; prints
                         "root HEX" (rank 0) or each rank's error
     audit DIR MODEL     one process, another reduction order: every step
                         of DIR's transcript replayed; prints "audit ok N"
     same DIR1 DIR2      the two transcripts' leaves: "same N" or "differ"

   Built with mpicc (VTRAIN_CUDA adds --gpu: every rank on GPU 0; with
   VTRAIN_CUDA_EMU also --cuda: the ranks on the CUDA backend's emulator). */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "../vtrain_dp.h"
#include "../examples/digitsmlp.h"
#include "../examples/chargpt.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static vt_digits g_digits;
static chargpt g_gpt;
static digitsmlp g_mlp;

static int load(const char *model, int shards, vt_program *p) {
    if (!strcmp(model, "mlp")) {
        if (vt_digits_load("data/digits.csv", &g_digits) != VT_OK) return 0;
        g_mlp = digitsmlp_new(&g_digits);
        g_mlp.nlayers = 2; g_mlp.sizes[0] = 64; g_mlp.sizes[1] = 32; g_mlp.sizes[2] = 10;
        g_mlp.act = 2; g_mlp.batch = 16; g_mlp.lr = 3e-3; g_mlp.lr_min = 3e-4; g_mlp.steps = 40; g_mlp.clip = 1.0; g_mlp.commit = 1;
        g_mlp.shards = shards;
        *p = digitsmlp_program(&g_mlp);
        return 1;
    }
    if (!strcmp(model, "gpt")) {
        if (chargpt_load(&g_gpt, "data/kjv_nt.txt") != VT_OK) return 0;
        g_gpt.cfg.layers = 1; g_gpt.cfg.heads = 2; g_gpt.cfg.width = 32;
        g_gpt.T = 16; g_gpt.B = 8; g_gpt.steps = 40;
        g_gpt.shards = shards;
        *p = chargpt_program(&g_gpt);
        return 1;
    }
    return 0;
}

/* slows one rank down (a straggler, or time for the test to kill one) */
static int g_slow_ms;
static vt_program g_inner;
static vt_status slow_step(vt_ctx *c, int64_t s, void *u) {
    struct timespec t;
    t.tv_sec = g_slow_ms / 1000;
    t.tv_nsec = (long)(g_slow_ms % 1000) * 1000000L;
    nanosleep(&t, NULL);
    return g_inner.step(c, s, u);
}

static int train(int argc, char **argv) {
    vt_desc d = vt_desc_default();
    vt_dp_cfg cfg = vt_dp_cfg_default();
    vt_program p;
    vt_report r;
    vt_status st;
    int rank = 0, i, S;
    char order[64] = "threads:1";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 6) { fprintf(stderr, "train DIR MODEL S STEPS [options]\n"); return vt_dp_exit(VT_ERR_ARG); }
    S = atoi(argv[4]);
    if (!load(argv[3], S, &p)) { fprintf(stderr, "rank %d: cannot load the model's data\n", rank); return vt_dp_exit(VT_ERR_IO); }
    d.transcript = argv[2];
    d.shards = S;
    d.ckpt_every = 4;
    for (i = 6; i < argc; i++) {
        if (!strcmp(argv[i], "--native")) d.mode = VT_MODE_NATIVE;
        else if (!strcmp(argv[i], "--resume")) d.resume = 1;
        else if (!strcmp(argv[i], "--ckpt") && i + 1 < argc) d.ckpt_every = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) cfg.timeout = atof(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) snprintf(order, sizeof order, "threads:%d", atoi(argv[++i]));
        else if (!strcmp(argv[i], "--slow") && i + 1 < argc) g_slow_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pids") && i + 1 < argc) {
            char path[600];
            FILE *f;
            snprintf(path, sizeof path, "%s/rank%d.pid", argv[++i], rank);
            f = fopen(path, "w");
            if (f) { fprintf(f, "%d\n", (int)getpid()); fclose(f); }
        }
#ifdef VTRAIN_CUDA_EMU
        else if (!strcmp(argv[i], "--cuda")) { d.backend = VT_BACKEND_CUDA; d.device = VT_CUDA_EMULATOR; }
#endif
#ifdef VTRAIN_CUDA
        else if (!strcmp(argv[i], "--gpu")) { d.backend = VT_BACKEND_CUDA; d.device = 0; } /* every rank on GPU 0 */
#endif
        else { fprintf(stderr, "unknown option '%s'\n", argv[i]); return vt_dp_exit(VT_ERR_ARG); }
    }
    vt_order_parse(&d.order, order);
    if (g_slow_ms) { g_inner = p; p.step = slow_step; }
    st = vt_dp_run(&d, &p, atoll(argv[5]), &cfg, &r);
    if (st != VT_OK) {
        printf("rank %d: %s\n", rank, r.message);
    } else if (rank == 0) {
        unsigned char root[32], ms[32];
        char hex[65];
        int64_t n = 0;
        if (vt_transcript_root(argv[2], root, ms, &n) == VT_OK) {
            vt_hex(root, 32, hex);
            printf("root %s steps %lld log %lld bytes %lld entries, cross-shard sums %lld (%lld exact) %.4f s, run %.3f s\n", hex, (long long)n,
                   (long long)r.log.bytes, (long long)r.log.entries, (long long)r.log.shard_values, (long long)r.log.shard_exact,
                   r.log.shard_seconds, r.seconds);
        } else printf("rank 0: no root: %s\n", vt_last_error());
    }
    return vt_dp_exit(st);
}

static int audit(const char *dir, const char *model) {
    vt_desc d = vt_desc_default();
    vt_program p;
    vt_report r;
    unsigned char root[32], ms[32];
    int64_t n = 0;
    if (vt_transcript_settings(dir, &d) != VT_OK || vt_transcript_root(dir, root, ms, &n) != VT_OK) {
        printf("audit FAILED: %s\n", vt_last_error());
        return 1;
    }
    if (!load(model, d.shards, &p)) { printf("audit FAILED: cannot load the data\n"); return 1; }
    d.role = VT_ROLE_AUDIT;
    d.transcript = dir;
    vt_order_parse(&d.order, "threads:2,chaos:11");
    vt_run(&d, &p, n, &r);
    if (r.status != VT_OK || r.root_steps != n) { printf("audit FAILED at step %lld: %s\n", (long long)r.first_bad_step, r.message); return 1; }
    printf("audit ok %lld\n", (long long)n);
    return 0;
}

static int same(const char *a, const char *b) {
    vt_leaf_info *la = NULL, *lb = NULL;
    int64_t na = -1, nb = -2, i;
    if (vt_transcript_leaves(a, &la, &na) != VT_OK || vt_transcript_leaves(b, &lb, &nb) != VT_OK) {
        printf("differ: %s\n", vt_last_error());
        return 1;
    }
    for (i = 0; i < na && i < nb; i++)
        if (memcmp(la[i].leaf, lb[i].leaf, 32)) break;
    if (na != nb || i < na) printf("differ at step %lld (%lld and %lld leaves)\n", (long long)i, (long long)na, (long long)nb);
    else printf("same %lld\n", (long long)na);
    vt_free_leaves(la);
    vt_free_leaves(lb);
    return na != nb || i < na;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "train")) return train(argc, argv);
    if (argc == 4 && !strcmp(argv[1], "audit")) return audit(argv[2], argv[3]);
    if (argc == 4 && !strcmp(argv[1], "same")) return same(argv[2], argv[3]);
    fprintf(stderr, "usage: train DIR MODEL S STEPS [options] | audit DIR MODEL | same DIR1 DIR2\n");
    return 2;
}
