/* bench/btard.c - what BTARD costs and how reliably it bans.

   cc -std=c99 -O2 -march=native -ffp-contract=off bench/btard.c -o build/bench_btard -lm -lpthread
   ./build/bench_btard overhead [--peers 16] [--steps 200] [--reps 5] [--batch 32] [--hidden 128]
                                [--model mlp|cnn|resnet18] [--width W]   (cnn, resnet18: 20 steps, 8 images per peer)
                                [--only btard|cclip|mean]                (one defence, for a profiler)
   ./build/bench_btard bans [--seeds 20] [--first-seed 0] [--steps 250] [--jitter S] [--timeout 0.5] [--attacks a,b,...]
   ./build/bench_btard nudge
   ./build/bench_btard spike [--seeds 4]
   ./build/bench_btard sign
   ./build/bench_btard join [--peers 8] [--steps 40] [--reps 3]

   mpicc -DVTRAIN_MPI ... bench/btard.c -o build/bench_btard_mpi
   mpirun -np 16 build/bench_btard_mpi [--steps 200] [--reps 5] [--batch 32]

   overhead: step time of BTARD (1 validator per step), of CenteredClip
     without validators, and of a plain butterfly mean all-reduce, same peers,
     same model, in one process; the runs alternate, and the median of --reps
     is reported. --model cnn or resnet18: the digits CNN or a ResNet-18 on
     synthetic CIFAR-shaped images, 8 images per peer (the paper's setting),
     where a step computes far more per parameter than the MLP does. With
     MPI: the same over ranks, timed by rank 0 between barriers.
   bans: per attack, --seeds seeded runs of 16 peers, 7 attackers (ranks
     drawn by the seed), a small model (64-16-10, 8 samples per peer, so that
     20 x 19 runs take minutes), 1 validator per step, attacks from step 5:
     every attacker banned? any honest peer banned? steps until all banned.
     partial_then_silent: attacker i dies in exchange 1 + (seed + i) mod 6
     of step 5 + i mod 3, its envelope reaching the f lowest ranks.
   spike: the largest spike on an aggregate part that passes the checks
     unseen, and how soon a larger one is banned (8 peers, --seeds per norm).
   nudge: one part of a gradient times 1 + 1e-6: how far that is from the
     honest gradient, next to a tolerance-based check at 1e-4.
   join: the step time of n founders with a newcomer in probation beside the
     same founders with its slot empty (alternating, median of --reps). */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "../vtrain_btard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static const char *def_name[3] = {"BTARD (m=1)", "CenteredClip, no validators", "plain mean all-reduce"};

#ifndef VTRAIN_MPI

static int arg_i(int argc, char **argv, const char *k, int d) {
    int i;
    for (i = 1; i + 1 < argc; i++) if (!strcmp(argv[i], k)) return atoi(argv[i + 1]);
    return d;
}
static const char *arg_s(int argc, char **argv, const char *k, const char *d) {
    int i;
    for (i = 1; i + 1 < argc; i++) if (!strcmp(argv[i], k)) return argv[i + 1];
    return d;
}

static int overhead(int argc, char **argv) {
    const char *model = arg_s(argc, argv, "--model", "mlp");
    int cnn = !strcmp(model, "cnn"), rn = !strcmp(model, "resnet18");
    int n = arg_i(argc, argv, "--peers", 16), steps = arg_i(argc, argv, "--steps", cnn || rn ? 20 : 200), reps = arg_i(argc, argv, "--reps", 5);
    int batch = arg_i(argc, argv, "--batch", cnn || rn ? 8 : 32), hidden = arg_i(argc, argv, "--hidden", 128), r, d;
    /* --only btard|cclip|mean: that defence alone (for a profiler; the ratios then read nothing) */
    const char *on = arg_s(argc, argv, "--only", "");
    int only = !strcmp(on, "btard") ? 0 : !strcmp(on, "cclip") ? 1 : !strcmp(on, "mean") ? 2 : -1;
    double ms[3][64], cpu[3][64];
    vt_btard_digits dg;
    vt_btard_cnn cn;
    vt_btard_task task;
    char what[160];
    if (reps > 64) reps = 64;
    memset(&dg, 0, sizeof dg);
    memset(&cn, 0, sizeof cn);
    if (cnn || rn) { /* the paper's setting: a convolutional model, 8 images per peer */
        vt_status st = rn ? vt_btard_cnn_cifar(&cn, NULL, arg_i(argc, argv, "--width", 8), batch, 0.05)
                          : vt_btard_cnn_digits(&cn, "data/digits.csv", arg_i(argc, argv, "--width", 16), batch, 0.05);
        if (st != VT_OK) { fprintf(stderr, "%s\n", vt_last_error()); return 1; }
        task = vt_btard_cnn_task(&cn);
        snprintf(what, sizeof what, "%s width %d", rn ? "ResNet-18 (synthetic CIFAR-shaped images)" : "digits CNN", cn.width);
    } else if (!strcmp(model, "mlp")) {
        if (vt_btard_digits_load(&dg, "data/digits.csv", hidden, batch, 0.05) != VT_OK) { fprintf(stderr, "%s\n", vt_last_error()); return 1; }
        task = vt_btard_digits_task(&dg);
        snprintf(what, sizeof what, "digits MLP 64-%d-10", hidden);
    } else {
        fprintf(stderr, "unknown --model '%s' (mlp, cnn, resnet18)\n", model);
        return 2;
    }
    printf("overhead, in-process: %d peers (threads, one vt_ctx thread each), %s, %d samples per peer, %d steps, median of %d\n",
           n, what, batch, steps, reps);
    for (r = 0; r < reps; r++)
        for (d = 0; d < 3; d++) {
            int order[3] = {2, 0, 1}, def = order[d];
            vt_btard_cfg cfg = vt_btard_cfg_default();
            if (only >= 0 && def != only) { ms[def][r] = cpu[def][r] = 1; continue; }
            vt_btard_result res;
            clock_t c0 = clock();
            cfg.defence = (vt_btard_defence)def;
            cfg.validators = 1;
            cfg.tau = 1.0;
            cfg.data_seed = 1 + (uint64_t)r;
            cfg.secret_seed = 2 + (uint64_t)r;
            if (rn) cfg.compute_timeout = 120.0; /* 16 ResNet gradients share the cores */
            vt_btard_simulate(&cfg, &task, n, NULL, steps, NULL, NULL, &res);
            if (res.status != VT_OK) { fprintf(stderr, "%s: %s\n", def_name[def], res.message); return 1; }
            ms[def][r] = res.step_ms;
            cpu[def][r] = 1e3 * (double)(clock() - c0) / CLOCKS_PER_SEC / steps;
            vt_btard_result_free(&res);
        }
    {
        double m0 = median(ms[2], reps), c2 = median(cpu[2], reps);
        for (d = 0; d < 3; d++) {
            double m = median(ms[d], reps), c = median(cpu[d], reps);
            printf("  %-28s %7.2f ms/step  (x%.2f)   CPU %7.2f ms/step (x%.2f)\n", def_name[d], m, m / m0, c, c / c2);
        }
    }
    if (cnn || rn) vt_btard_cnn_free(&cn);
    else vt_btard_digits_free(&dg);
    return 0;
}

static int bans(int argc, char **argv) {
    int seeds = arg_i(argc, argv, "--seeds", 20), steps = arg_i(argc, argv, "--steps", 250), n = 16, f = 7, s, i;
    int s0 = arg_i(argc, argv, "--first-seed", 0);
    double jit = atof(arg_s(argc, argv, "--jitter", "0")); /* seconds of delivery delay, at most (in-process hub) */
    double tmo = atof(arg_s(argc, argv, "--timeout", "0.5")); /* seconds per exchange (computing: twice that) */
    char list[1024];
    const char *al = arg_s(argc, argv, "--attacks",
                           "sign_flip,random_direction,label_flip,delayed,ipm,alie,lying_aggregator,withhold_reveal,wrong_reveal,"
                           "forged_log,nudge,nan,garbage,garbage_commit,wrong_size,late,silent,false_accuse");
    char *tok;
    vt_btard_digits dg;
    vt_btard_task task;
    int total_honest = 0, total_fail = 0;
    if (vt_btard_digits_load(&dg, "data/digits.csv", 16, 8, 0.05) != VT_OK) { fprintf(stderr, "%s\n", vt_last_error()); return 1; }
    task = vt_btard_digits_task(&dg);
    snprintf(list, sizeof list, "%s", al);
    printf("bans: %d seeds per attack; %d peers, %d attackers (ranks drawn by the seed), MLP 64-16-10, 8 samples per peer,\n"
           "1 validator per step, attacks from step 5 (every step; name/K: every K-th), %d steps, deadlines %g s (computing %g s)\n\n",
           seeds, n, f, steps, tmo, 2 * tmo);
    printf("| attack | runs | every attacker banned | honest peers banned | honest views identical | steps to ban all: median | max |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        char name[64], *sl;
        int kind, allb = 0, hon = 0, agree = 0, period = 1, unprov;
        double st[256];
        int nst = 0;
        double t0 = vt_net_now();
        snprintf(name, sizeof name, "%s", tok);
        if ((sl = strchr(name, '/')) != NULL) { *sl = 0; period = atoi(sl + 1); } /* name/period: every period-th step */
        kind = vt_btard_attack_parse(name);
        if (kind < 0) { fprintf(stderr, "unknown attack %s\n", tok); return 2; }
        for (s = s0; s < s0 + seeds && s < 256; s++) {
            vt_btard_cfg cfg = vt_btard_cfg_default();
            vt_btard_attack at[16];
            vt_btard_result res;
            cfg.validators = 1;
            cfg.tau = 1.0;
            cfg.data_seed = 1000 + (uint64_t)s;
            cfg.secret_seed = 5000 + (uint64_t)s + 1000 * (uint64_t)kind; /* other validator draws per attack */
            cfg.timeout = tmo;
            cfg.compute_timeout = 2 * tmo;
            cfg.net_jitter = jit;
            for (i = 0; i < n; i++) at[i] = vt_btard_attack_default(VT_ATTACK_NONE);
            for (i = 0; i < f; i++) {
                int rk = 1 + (int)vt_shuffle(77 + (uint64_t)s, 3, (uint64_t)i, (uint64_t)(n - 1));
                at[rk] = vt_btard_attack_default((vt_btard_attack_kind)kind);
                at[rk].start = 5;
                at[rk].period = period;
                at[rk].delay = 3;
                at[rk].seed = 99 + (uint64_t)s;
                if (kind == VT_ATTACK_ALIE) at[rk].scale = vt_btard_alie_z(n, f);
                if (kind == VT_ATTACK_PARTIAL_THEN_SILENT) { /* each dies in another exchange, one of three steps */
                    at[rk].exchange = 1 + (s + i) % 6;
                    at[rk].start = 5 + i % 3;
                }
            }
#ifdef VT__BT_DEBUG
            vt__bt_dbg_len = 0;
#endif
            vt_btard_simulate(&cfg, &task, n, at, steps, NULL, NULL, &res);
#ifdef VT__BT_DEBUG
            if (res.honest_banned || !res.views_agree) { /* what every peer decided, and when */
                char fn[64];
                FILE *df;
                snprintf(fn, sizeof fn, "/tmp/btard_dbg_%s_%d.txt", name, s);
                if ((df = fopen(fn, "w")) != NULL) { fwrite(vt__bt_dbg_buf, 1, vt__bt_dbg_len, df); fclose(df); }
            }
#endif
            if (res.status != VT_OK) printf("  seed %d: %s\n", s, res.message);
            if (res.honest_banned || !res.views_agree)
                printf("  seed %d: %d honest peers banned, honest views %s\n", s, res.honest_banned, res.views_agree ? "identical" : "apart");
            hon += res.honest_banned;
            agree += res.views_agree;
            if (res.attackers_banned_at >= 0 && res.attackers == f) { allb++; st[nst++] = (double)(res.attackers_banned_at - 5); }
            vt_btard_result_free(&res);
        }
        /* withholding from one peer and lying echoes cannot be proven to
           anyone (the victim's word against the attacker's): the protocol
           relays around them and bans nobody for them */
        unprov = kind >= VT_ATTACK_WITHHOLD_COMMIT && kind <= VT_ATTACK_LYING_ECHO;
        total_honest += hon;
        total_fail += (unprov ? 0 : seeds - allb) + (seeds - agree);
        {
            double mx = 0, med;
            for (i = 0; i < nst; i++) if (st[i] > mx) mx = st[i];
            med = nst ? median(st, nst) : -1;
            if (unprov) printf("| %s | %d | %d/%d (not required: unprovable, relayed around) | %d | %d/%d | - | - |\n", tok, seeds, allb, seeds, hon, agree, seeds);
            else printf("| %s | %d | %d/%d | %d | %d/%d | %.0f | %.0f |\n", tok, seeds, allb, seeds, hon, agree, seeds, med, mx);
        }
        fprintf(stderr, "  (%s: %.1f s)\n", tok, vt_net_now() - t0);
        fflush(stdout);
    }
    printf("\nhonest peers banned over all runs: %d; runs with an attacker left or honest views apart: %d\n", total_honest, total_fail);
    vt_btard_digits_free(&dg);
    return total_honest || total_fail;
}

/* how big the nudge is, against a tolerance check */
static int nudge(void) {
    vt_btard_digits dg;
    vt_btard_task task;
    vt_desc de = vt_desc_default();
    vt_ctx *c;
    void *m;
    int64_t D, L, i, k = 3;
    int n = 16, j;
    float *g, *h;
    double maxrel = 0, d2 = 0, g2 = 0;
    unsigned char a[32], b[32];
    if (vt_btard_digits_load(&dg, "data/digits.csv", 128, 32, 0.05) != VT_OK) return 1;
    task = vt_btard_digits_task(&dg);
    c = vt_create(&de);
    m = task.init(c, task.user);
    D = vt_param_numel(c);
    L = (D + n - 1) / n;
    g = (float *)calloc((size_t)D, sizeof(float));
    h = (float *)calloc((size_t)D, sizeof(float));
    vt_step_begin(c);
    task.loss(c, m, 12345, 0, task.user);
    for (j = 0, i = 0; j < vt_param_count(c); j++) {
        vt_tensor *t = vt_param_at(c, j);
        int64_t e;
        for (e = 0; e < vt_numel(t); e++, i++) g[i] = (float)((double *)t->grad->data)[e];
    }
    vt_step_end(c);
    memcpy(h, g, sizeof(float) * (size_t)D);
    for (i = k * L; i < (k + 1) * L && i < D; i++) h[i] = (float)((double)g[i] * (1 + 1e-6));
    for (i = 0; i < D; i++) {
        double rel = g[i] != 0 ? fabs((double)h[i] - g[i]) / fabs((double)g[i]) : 0;
        if (rel > maxrel) maxrel = rel;
        d2 += ((double)h[i] - g[i]) * ((double)h[i] - g[i]);
        g2 += (double)g[i] * g[i];
    }
    vt_sha256(g + k * L, 4 * (size_t)L, a);
    vt_sha256(h + k * L, 4 * (size_t)L, b);
    printf("nudge: part %lld of %d (%lld values) times 1 + 1e-6\n", (long long)k, n, (long long)L);
    printf("  largest relative change of a value  %.3g   (tolerance check at 1e-4: %s)\n", maxrel, maxrel <= 1e-4 ? "passes" : "fails");
    printf("  |nudged - honest| / |honest|        %.3g   (tolerance check at 1e-4: %s)\n", sqrt(d2 / g2), sqrt(d2 / g2) <= 1e-4 ? "passes" : "fails");
    printf("  SHA-256 of the part                 %s\n", memcmp(a, b, 32) ? "differs: exact recomputation catches it" : "same");
    vt_destroy(c);
    task.release(m, task.user);
    free(g);
    free(h);
    vt_btard_digits_free(&dg);
    return 0;
}

/* the largest lie on an aggregate that passes unseen: one aggregator adds a
   spike of norm s (alternating signs) to its part from step 1; 8 peers, the
   digits MLP 64-128-10, tau 1, --seeds runs per size (4), 6 steps: how many
   runs ban it at all, in step 1 (the step of its first lie), by step 2 */
static int spike(int argc, char **argv) {
    static const double sc[] = {1e-7, 3e-7, 1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 1e-3, 1e-2, 1.0, 1e6};
    vt_btard_digits dg;
    vt_btard_task task;
    int n = 8, i, k, s, seeds = 4;
    for (i = 2; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--seeds")) seeds = atoi(argv[i + 1]);
    if (seeds < 1) seeds = 1;
    if (vt_btard_digits_load(&dg, "data/digits.csv", 128, 32, 0.05) != VT_OK) return 1;
    task = vt_btard_digits_task(&dg);
    printf("spike: one of %d aggregators adds a spike of norm s to its part every step from step 1; tau 1; %d seeds x 6 steps\n", n, seeds);
    printf("| spike norm | caught | in the step of its first lie | by the next step | steps before the ban (mean) |\n|---|---|---|---|---|\n");
    for (k = 0; k < (int)(sizeof sc / sizeof sc[0]); k++) {
        int caught = 0, at1 = 0, by2 = 0;
        double first = 0;
        for (s = 0; s < seeds; s++) {
            vt_btard_cfg c = vt_btard_cfg_default();
            vt_btard_result r;
            vt_btard_attack a[8];
            /* (the first 4 seeds are those of the 4-seed table in bench/RESULTS.md) */
            c.validators = 1; c.data_seed = 10 + (uint64_t)s; c.secret_seed = 20 + (uint64_t)s + 100 * (uint64_t)k + (s >= 4 ? 100000 * (uint64_t)s : 0);
            c.timeout = 0.5; c.compute_timeout = 1;
            for (i = 0; i < n; i++) a[i] = vt_btard_attack_default(VT_ATTACK_NONE);
            a[n - 1] = vt_btard_attack_default(VT_ATTACK_SPIKE);
            a[n - 1].scale = sc[k];
            a[n - 1].start = 1;
            vt_btard_simulate(&c, &task, n, a, 6, NULL, NULL, &r);
            if (r.status != VT_OK || r.honest_banned || !r.views_agree) printf("  (seed %d: honest banned %d, views agree %d: %s)\n", s, r.honest_banned, r.views_agree, r.message);
            if (r.banned_at[n - 1] >= 0) {
                caught++;
                first += (double)(r.banned_at[n - 1] - 1);
                at1 += r.banned_at[n - 1] == 1;
                by2 += r.banned_at[n - 1] <= 2;
            }
            vt_btard_result_free(&r);
        }
        if (caught) printf("| %.0e | %d/%d | %d/%d | %d/%d | %.2f |\n", sc[k], caught, seeds, at1, seeds, by2, seeds, first / caught);
        else printf("| %.0e | 0/%d | 0/%d | 0/%d | - |\n", sc[k], seeds, seeds, seeds);
        fflush(stdout);
    }
    vt_btard_digits_free(&dg);
    return 0;
}

/* what one signature costs, next to what a step signs: Ed25519 (libsodium)
   over the 141-byte message every envelope signs, verification, and
   vtrain's SHA-256 (SHA-NI where the CPU has it) per KB */
static int sign_cost(void) {
    vt_btard_key k;
    unsigned char m[141], sig[64], buf[4096], h[32];
    int i, N = 4000;
    double t0, ts, tv, th;
    if (vt_btard_key_new(&k) != VT_OK) { printf("sign: %s\n", vt_last_error()); return 1; }
    memset(m, 7, sizeof m);
    memset(buf, 3, sizeof buf);
    t0 = vt_net_now();
    for (i = 0; i < N; i++) { m[0] = (unsigned char)i; vt__bt_sign_raw(k.sk, m, sizeof m, sig); }
    ts = (vt_net_now() - t0) / N;
    t0 = vt_net_now();
    for (i = 0; i < N; i++) if (!vt__bt_verify_raw(k.pk, m, sizeof m, sig)) m[1]++;
    tv = (vt_net_now() - t0) / N;
    t0 = vt_net_now();
    for (i = 0; i < 20 * N; i++) { buf[0] = (unsigned char)i; vt_sha256(buf, sizeof buf, h); }
    th = (vt_net_now() - t0) / (20.0 * N) / 4;
    printf("sign: Ed25519 sign %.1f us, verify %.1f us (libsodium %s), SHA-256 %.2f us per KB\n", 1e6 * ts, 1e6 * tv,
#ifdef VTRAIN_SODIUM
           sodium_version_string(),
#else
           "absent",
#endif
           1e6 * th);
    printf("      a BTARD step signs 6 envelopes per peer (no slow path): %.2f ms per peer per step\n", 6e3 * ts);
    return 0;
}

/* join: what a newcomer in probation costs the members. n founders and one
   open slot on one hub; run A: the slot stays empty; run B: a newcomer asks
   at step 0 and stays in probation the whole run (probation = steps), so
   every step from 1 on sends it the state, n signed digests, and every
   member replays its gradient. Alternating A B, median of --reps. */
typedef struct { vt_btard_peer *p; int steps; } join_job;
static void *join_thread(void *a) {
    join_job *j = (join_job *)a;
    while (vt_btard_step_index(j->p) < j->steps && vt_btard_step(j->p) == VT_OK) {}
    return NULL;
}
static int join_cost(int argc, char **argv) {
    int n = arg_i(argc, argv, "--peers", 8), steps = arg_i(argc, argv, "--steps", 40), reps = arg_i(argc, argv, "--reps", 3);
    int batch = arg_i(argc, argv, "--batch", 32), hidden = arg_i(argc, argv, "--hidden", 128), r, b, i, k;
    double ms[2][64];
    vt_btard_digits dg;
    vt_btard_task task;
    vt_btard_key keys[65];
    unsigned char roster[65 * 32];
    if (reps > 64) reps = 64;
    if (n > 64) n = 64;
    if (vt_btard_digits_load(&dg, "data/digits.csv", hidden, batch, 0.05) != VT_OK) { fprintf(stderr, "%s\n", vt_last_error()); return 1; }
    task = vt_btard_digits_task(&dg);
    for (i = 0; i <= n; i++) {
        unsigned char seed[32];
        for (k = 0; k < 32; k++) seed[k] = (unsigned char)vt_rng_u64(0x701, (uint64_t)i, (uint64_t)k);
        vt_btard_key_from_seed(&keys[i], seed);
        memcpy(roster + 32 * i, keys[i].pk, 32);
    }
    memset(roster + 32 * n, 0, 32); /* slot n: open */
    printf("join: %d founders and one open slot (threads), digits MLP 64-%d-10, %d samples per peer, %d steps, median of %d;\n"
           "  B: a newcomer in probation the whole run (state, digests, a replay by every member, every step)\n", n, hidden, batch, steps, reps);
    for (r = 0; r < reps; r++)
        for (b = 0; b < 2; b++) {
            vt_net **e = vt_net_inproc_create(n + 1, 0);
            vt_btard_peer *p[65];
            join_job jb[65];
            pthread_t th[65];
            int np = b ? n + 1 : n;
            double t0;
            vt_btard_stats st;
            for (i = 0; i < np; i++) {
                vt_btard_cfg cfg = vt_btard_cfg_default();
                cfg.validators = 1;
                cfg.data_seed = 1 + (uint64_t)r;
                cfg.secret_seed = 2 + (uint64_t)r;
                cfg.roster = roster;
                cfg.key = &keys[i];
                cfg.probation = steps;
                if (i == n) { cfg.join = 1; cfg.join_step = 0; }
                p[i] = vt_btard_peer_create(&cfg, &task, e[i], NULL);
                if (!p[i]) { fprintf(stderr, "peer %d: %s\n", i, vt_last_error()); return 1; }
                jb[i].p = p[i];
                jb[i].steps = steps;
            }
            t0 = vt_net_now();
            for (i = 0; i < np; i++) pthread_create(&th[i], NULL, join_thread, &jb[i]);
            for (i = 0; i < n; i++) pthread_join(th[i], NULL);
            ms[b][r] = 1e3 * (vt_net_now() - t0) / steps;
            vt_net_inproc_close(e[0]);
            if (b) pthread_join(th[n], NULL);
            vt_btard_stats_get(p[0], &st);
            if (vt_btard_step_index(p[0]) != steps || (b && vt_btard_member(p[0], n, NULL) != VT_BTARD_PROBATION)) {
                fprintf(stderr, "join bench, run %c: founder 0 at step %lld, the newcomer %d: %s\n", b ? 'B' : 'A',
                        (long long)vt_btard_step_index(p[0]), (int)vt_btard_member(p[0], n, NULL), vt_btard_error(p[0]));
                return 1;
            }
            if (b && r == 0) printf("  founder 0 in B: %lld probation replays, %lld states sent\n", (long long)st.probes, (long long)st.states_sent);
            for (i = 0; i < np; i++) vt_btard_peer_destroy(p[i]);
            for (i = 0; i <= n; i++) e[i]->destroy(e[i]);
        }
    {
        double a = median(ms[0], reps), bb = median(ms[1], reps);
        printf("  A: no newcomer                 %7.2f ms/step  (x1.00)\n", a);
        printf("  B: a newcomer in probation     %7.2f ms/step  (x%.2f)\n", bb, bb / a);
    }
    vt_btard_digits_free(&dg);
    return 0;
}

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "all";
    int rc = 0;
    if (!strcmp(what, "spike")) return spike(argc, argv);
    if (!strcmp(what, "join")) return join_cost(argc, argv);
    if (!strcmp(what, "sign")) return sign_cost();
    if (!strcmp(what, "overhead") || !strcmp(what, "all")) rc |= overhead(argc, argv);
    if (!strcmp(what, "nudge") || !strcmp(what, "all")) rc |= nudge();
    if (!strcmp(what, "bans") || !strcmp(what, "all")) rc |= bans(argc, argv);
    return rc;
}

#else /* VTRAIN_MPI: the overhead over real processes */

#include <mpi.h>

int main(int argc, char **argv) {
    int rank, size, i, r, d, steps = 200, reps = 5, batch = 32, hidden = 128;
    double ms[3][64];
    vt_btard_digits dg;
    vt_btard_task task;
    vt_net *net;
    vt_btard_key key;
    unsigned char *roster;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--hidden")) hidden = atoi(argv[i + 1]);
    }
    if (reps > 64) reps = 64;
    if (vt_btard_digits_load(&dg, "data/digits.csv", hidden, batch, 0.05) != VT_OK) MPI_Abort(MPI_COMM_WORLD, 1);
    task = vt_btard_digits_task(&dg);
    /* identities from a public seed (a bench: anyone could sign as anyone) */
    roster = (unsigned char *)malloc(32 * (size_t)size);
    for (i = 0; i < size; i++) {
        unsigned char sd[32];
        vt_btard_key k;
        int b;
        for (b = 0; b < 32; b++) sd[b] = (unsigned char)vt_rng_u64(0xbe1c, (uint64_t)i, (uint64_t)b);
        vt_btard_key_from_seed(&k, sd);
        memcpy(roster + 32 * i, k.pk, 32);
        if (i == rank) key = k;
    }
    net = vt_net_mpi_create(0);
    if (!rank)
        printf("overhead over MPI: %d ranks (one peer each), digits MLP 64-%d-10, %d samples per peer, %d steps, median of %d\n",
               size, hidden, batch, steps, reps);
    for (r = 0; r < reps; r++)
        for (d = 0; d < 3; d++) {
            int order[3] = {2, 0, 1}, def = order[d], s;
            vt_btard_cfg cfg = vt_btard_cfg_default();
            vt_btard_peer *p;
            double t0, t1, mine, worst;
            cfg.defence = (vt_btard_defence)def;
            cfg.validators = 1;
            cfg.tau = 1.0;
            cfg.data_seed = 1 + (uint64_t)r;
            cfg.secret_seed = 2 + (uint64_t)r;
            cfg.session = (r * 3 + d) % 256;
            cfg.roster = roster;
            cfg.key = &key;
            p = vt_btard_peer_create(&cfg, &task, net, NULL);
            if (!p) MPI_Abort(MPI_COMM_WORLD, 1);
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = vt_net_now();
            for (s = 0; s < steps; s++)
                if (vt_btard_step(p) != VT_OK) { fprintf(stderr, "rank %d: %s\n", rank, vt_btard_error(p)); MPI_Abort(MPI_COMM_WORLD, 1); }
            t1 = vt_net_now();
            mine = 1e3 * (t1 - t0) / steps;
            MPI_Reduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            ms[def][r] = worst;
            vt_btard_peer_destroy(p);
        }
    if (!rank) {
        double m0 = median(ms[2], reps);
        for (d = 0; d < 3; d++) {
            double m = median(ms[d], reps);
            printf("  %-28s %7.2f ms/step  (x%.2f)\n", def_name[d], m, m / m0);
        }
    }
    net->destroy(net);
    vt_btard_digits_free(&dg);
    free(roster);
    MPI_Finalize();
    return 0;
}
#endif
