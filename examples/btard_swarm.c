/* btard_swarm.c - 16 peers train the digits MLP together while 7 of them
   attack, under BTARD, under CenteredClip without validators, and under a
   plain mean all-reduce; every attack, the paper's table, and the curves.

   cc -std=c99 -O2 -march=native -ffp-contract=off examples/btard_swarm.c -o build/btard_swarm -lm -lpthread
   ./build/btard_swarm [--steps 300] [--start 50] [--every 10] [--peers 16] [--byzantine 7]
                       [--attacks sign_flip,nudge,...] [--defences btard,cclip,mean] [--seed 1]
                       [--svg build/btard_swarm.svg] [--md FILE] [--quiet]
                       [--model mlp|cnn|resnet18] [--data FILE|DIR] [--width W] [--batch B] [--lr LR]

   --model cnn: the digits CNN (two convolutions with batch norm, max
   pooling; vtrain_btard.h's >>cnn), 8 images per peer; --model resnet18: a
   CIFAR ResNet-18 of base width 8 (--width; the paper's is 64), 8 images per
   peer, the paper's setting, on CIFAR-10 with --data DIR, else on synthetic
   CIFAR-shaped images (say so beside any figure). Batch norm keeps no
   running statistics in the swarm: the observer recomputes them from the
   agreed weights over a public calibration set when it evaluates (>>cnn says
   why). make swarm-cnn runs the CNN.

   Each run is an in-process swarm: one thread per peer, one vt_ctx (one
   thread) each. The 7 attackers (ranks drawn from 1..15 by the seed; rank 0,
   the observer, is honest, as in the paper's code) behave honestly until
   --start and then attack every step. The observer evaluates the test
   accuracy every --every steps. The delayed-gradient attack resends the
   gradient of 20 steps ago (the paper's 1000 is longer than these runs). */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "../vtrain_btard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXPTS 2048

typedef struct {
    int kind;                  /* attack */
    int defence;
    int ok;                    /* ran */
    double acc[MAXPTS];        /* accuracy at step every*i (and the last step) */
    int alive[MAXPTS];
    int npts;
    double final_acc;
    int64_t all_banned;        /* step when the last attacker was banned, -1 */
    int attackers, banned, honest_banned, agree;
    int64_t steps_done;
    double step_ms;
    int64_t audits, false_alarms, accusations;
    char note[200];
} run_t;

typedef struct { float *w; int64_t step; int alive, bans; } snap_t;

typedef struct {
    vt_btard_digits *d;
    vt_btard_cnn *cnn;         /* --model cnn, resnet18 */
    run_t *r;
    int every;
    int64_t steps;
    int quiet;
    const char *label;
    snap_t *snaps;             /* CNNs: the weights at each evaluation point */
    int nsnap;
} obs_t;

/* one evaluation point: accuracy a (and the CNNs' test loss tl) at step s */
static void record(obs_t *o, int64_t s, double a, double tl, int alive, int nb) {
    run_t *r = o->r;
    if (r->npts < MAXPTS) { r->acc[r->npts] = a; r->alive[r->npts] = alive; r->npts++; }
    r->final_acc = a;
    if (o->quiet) return;
    if (o->cnn) /* the CNNs: every evaluation, with the test loss */
        printf("  %-28s step %4lld  accuracy %5.1f%%  test loss %.4f  alive %2d  bans %d\n", o->label, (long long)s, 100 * a, tl, alive, nb);
    else if (s % (5 * o->every) == 0 || s == o->steps - 1)
        printf("  %-28s step %4lld  accuracy %5.1f%%  alive %2d  bans %d\n", o->label, (long long)s, 100 * a, alive, nb);
    fflush(stdout);
}

/* The observer is a peer: what it does here, inside its step, delays the
   swarm. The MLP is evaluated at once; a CNN's evaluation (a calibration
   pass and the test images) is long, so its weights are copied and
   evaluated after the run (evaluate_snaps), never late for a deadline. */
static void observe(vt_btard_peer *p, int64_t s, void *u) {
    obs_t *o = (obs_t *)u;
    const vt_btard_event *ev;
    int i, nb = 0, k;
    if (!(s % o->every == 0 || s == o->steps - 1)) return;
    k = vt_btard_events(p, &ev);
    for (i = 0; i < k; i++) nb += ev[i].kind == VT_EV_BAN;
    if (o->cnn) {
        vt_ctx *c = vt_btard_ctx(p);
        int64_t at = 0, D = vt_param_numel(c);
        snap_t *sn = o->nsnap < MAXPTS ? &o->snaps[o->nsnap] : NULL;
        double *v = (double *)malloc(sizeof(double) * (size_t)D);
        if (sn && v && (sn->w = (float *)malloc(sizeof(float) * (size_t)D)) != NULL) {
            for (i = 0; i < vt_param_count(c); i++) {
                vt_tensor *t = vt_param_at(c, i);
                int64_t e, ne = vt_numel(t);
                vt_read_f64(c, t, v);
                for (e = 0; e < ne; e++) sn->w[at + e] = (float)v[e];
                at += ne;
            }
            sn->step = s; sn->alive = vt_btard_alive_count(p); sn->bans = nb;
            o->nsnap++;
        }
        free(v);
        return;
    }
    record(o, s, vt_btard_digits_accuracy(vt_btard_ctx(p), vt_btard_model(p), o->d), -1, vt_btard_alive_count(p), nb);
}

/* the CNN snapshots, evaluated on a context of their own */
static void evaluate_snaps(obs_t *o, const vt_btard_task *task) {
    vt_ctx *c = vt_create(NULL);
    void *m = c ? task->init(c, task->user) : NULL;
    double *v = NULL;
    int q, i;
    for (q = 0; q < o->nsnap; q++) {
        snap_t *sn = &o->snaps[q];
        int64_t at = 0;
        double a = -1, tl = -1;
        for (i = 0; m && vt_status_of(c) == VT_OK && i < vt_param_count(c); i++) {
            vt_tensor *t = vt_param_at(c, i);
            int64_t e, ne = vt_numel(t);
            double *nv = (double *)realloc(v, sizeof(double) * (size_t)ne);
            if (!nv) break;
            v = nv;
            for (e = 0; e < ne; e++) v[e] = sn->w[at + e];
            vt_write_f64(c, t, v);
            at += ne;
        }
        if (m && vt_status_of(c) == VT_OK) a = vt_btard_cnn_accuracy(c, m, o->cnn, &tl);
        record(o, sn->step, a, tl, sn->alive, sn->bans);
        free(sn->w);
    }
    o->nsnap = 0;
    free(v);
    if (m && task->release) task->release(m, task->user);
    vt_destroy(c);
}

static const char *defence_name[3] = {"BTARD", "CenteredClip, no validators", "mean all-reduce"};
static const char *defence_key[3] = {"btard", "cclip", "mean"};

/* attacks that mean something under a defence (the rest are n/a) */
static int applicable(int def, int kind) {
    if (def == VT_DEFENCE_MEAN)
        return kind == VT_ATTACK_NONE || kind == VT_ATTACK_SIGN_FLIP || kind == VT_ATTACK_RANDOM_DIRECTION ||
               kind == VT_ATTACK_LABEL_FLIP || kind == VT_ATTACK_DELAYED || kind == VT_ATTACK_IPM || kind == VT_ATTACK_ALIE ||
               kind == VT_ATTACK_LYING_AGGREGATOR || kind == VT_ATTACK_NUDGE || kind == VT_ATTACK_NAN || kind == VT_ATTACK_GARBAGE;
    if (def == VT_DEFENCE_CCLIP) return kind != VT_ATTACK_FALSE_ACCUSE;
    return 1;
}

static void svg_plot(const char *path, const char *model, run_t *runs, int nruns, const int *kinds, int nk, int every, int64_t steps,
                     int64_t start, int n, int nbyz) {
    static const char *col[3] = {"#1f6fb4", "#e08a1e", "#c8322d"};
    FILE *f = fopen(path, "w");
    int cols = 4, rows = (nk + cols - 1) / cols, pw = 260, ph = 170, mx = 40, my = 28, k, i, j;
    int W = cols * pw + 20, H = rows * ph + 70;
    if (!f) { fprintf(stderr, "cannot write %s\n", path); return; }
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">\n", W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"10\" y=\"18\" font-size=\"14\">Test accuracy of the %s, %d peers, %d Byzantine from step %lld (grey: BTARD without attack)</text>\n",
            model, n, nbyz, (long long)start);
    for (i = 0; i < 3; i++)
        fprintf(f, "<line x1=\"%d\" y1=\"34\" x2=\"%d\" y2=\"34\" stroke=\"%s\" stroke-width=\"2\"/><text x=\"%d\" y=\"38\">%s</text>\n",
                10 + 220 * i, 30 + 220 * i, col[i], 35 + 220 * i, defence_name[i]);
    for (k = 0; k < nk; k++) {
        int x0 = 10 + (k % cols) * pw, y0 = 50 + (k / cols) * ph, w = pw - mx - 10, h = ph - my - 16;
        int ax = x0 + mx, ay = y0 + 14;
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">%s</text>\n", ax, y0 + 10, vt_btard_attack_name((vt_btard_attack_kind)kinds[k]));
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n", ax, ay, w, h);
        for (j = 0; j <= 4; j++) {
            double a = j / 4.0;
            int y = ay + h - (int)(a * h);
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#eee\"/><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%d%%</text>\n",
                    ax, y, ax + w, y, ax - 3, y + 4, (int)(100 * a));
        }
        fprintf(f, "<text x=\"%d\" y=\"%d\">0</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%lld</text>\n", ax, ay + h + 12, ax + w,
                ay + h + 12, (long long)steps);
        if (kinds[k] != VT_ATTACK_NONE) {
            int xs = ax + (int)((double)start / (double)steps * w);
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\" stroke-dasharray=\"3,3\"/>\n", xs, ay, xs, ay + h);
        }
        /* the no-attack reference, then the three defences */
        for (i = -1; i < 3; i++) {
            run_t *r = NULL;
            int q;
            for (q = 0; q < nruns; q++)
                if (runs[q].ok && runs[q].kind == (i < 0 ? VT_ATTACK_NONE : kinds[k]) && runs[q].defence == (i < 0 ? 0 : i)) r = &runs[q];
            if (!r || (i < 0 && kinds[k] == VT_ATTACK_NONE)) continue;
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s points=\"", i < 0 ? "#bbb" : col[i],
                    i < 0 ? "3" : "1.5", i < 0 ? "" : "");
            for (q = 0; q < r->npts; q++) {
                double s = q * (double)every;
                if (s > steps - 1) s = (double)(steps - 1);
                fprintf(f, "%.1f,%.1f ", ax + s / (double)steps * w, ay + h - r->acc[q] * h);
            }
            fprintf(f, "\"/>\n");
            if (i >= 0 && r->steps_done < steps)
                fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"%s\">%s</text>\n", ax + 4, ay + h - 4 - 12 * i, col[i], "collapsed (NaN)");
        }
    }
    fprintf(f, "</svg>\n");
    fclose(f);
}

int main(int argc, char **argv) {
    int64_t steps = 300, start = 50;
    int every = 10, n = 16, f = 7, quiet = 0, i, k, def;
    uint64_t seed = 1;
    const char *svg = "build/btard_swarm.svg", *md = NULL, *data = NULL, *model = "mlp";
    int width = 0, batch = 0;
    double lr = 0;
    char attacks_s[1024] = "none,sign_flip,random_direction,label_flip,delayed,ipm,alie,lying_aggregator,withhold_reveal,"
                           "wrong_reveal,forged_log,nudge,nan,garbage,garbage_commit,wrong_size,late,silent,false_accuse,"
                           "spike,equivocate_commit,equivocate_aggregate,equivocate_reveal,equivocate_scalars,equivocate_final,"
                           "equivocate_half,withhold_commit,withhold_part,withhold_aggregate,withhold_reveal_one,withhold_scalars,"
                           "withhold_final,withhold_chunk,withhold_half,lying_echo,false_audit,flood,partial_then_silent";
    char defences_s[128] = "btard,cclip,mean";
    int kinds[64], nk = 0, defs[3], nd = 0;
    run_t *runs;
    snap_t *snaps;
    int nruns = 0;
    vt_btard_digits d;
    vt_btard_cnn cnn;
    int use_cnn = 0;
    char title[96];
    FILE *mf = NULL;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--start") && i + 1 < argc) start = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--every") && i + 1 < argc) every = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--peers") && i + 1 < argc) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--byzantine") && i + 1 < argc) f = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--attacks") && i + 1 < argc) snprintf(attacks_s, sizeof attacks_s, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--defences") && i + 1 < argc) snprintf(defences_s, sizeof defences_s, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = (uint64_t)atoll(argv[++i]);
        else if (!strcmp(argv[i], "--svg") && i + 1 < argc) svg = argv[++i];
        else if (!strcmp(argv[i], "--md") && i + 1 < argc) md = argv[++i];
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
        else if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--width") && i + 1 < argc) width = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--lr") && i + 1 < argc) lr = atof(argv[++i]);
        else if (!strcmp(argv[i], "--quiet")) quiet = 1;
        else {
            fprintf(stderr, "usage: %s [--steps N] [--start S] [--every K] [--peers N] [--byzantine F] [--attacks a,b] "
                            "[--defences btard,cclip,mean] [--seed S] [--svg FILE] [--md FILE] [--quiet]\n"
                            "       [--model mlp|cnn|resnet18] [--data FILE|DIR] [--width W] [--batch B] [--lr LR]\n", argv[0]);
            return 2;
        }
    }
    if (n < 2 || n > 64 || f < 0 || 2 * f >= n || every < 1 || steps < 1 || steps / every >= MAXPTS) {
        fprintf(stderr, "need 2 <= peers <= 64, byzantine < peers/2, steps/every < %d\n", MAXPTS);
        return 2;
    }
    {
        char *tok = strtok(attacks_s, ",");
        for (; tok && nk < 64; tok = strtok(NULL, ",")) {
            int a = vt_btard_attack_parse(tok);
            if (a < 0) { fprintf(stderr, "unknown attack '%s'\n", tok); return 2; }
            kinds[nk++] = a;
        }
        for (tok = strtok(defences_s, ","); tok && nd < 3; tok = strtok(NULL, ",")) {
            int dk = -1;
            for (k = 0; k < 3; k++) if (!strcmp(tok, defence_key[k])) dk = k;
            if (dk < 0) { fprintf(stderr, "unknown defence '%s' (btard, cclip, mean)\n", tok); return 2; }
            defs[nd++] = dk;
        }
    }
#ifndef VTRAIN_SODIUM
    /* BTARD and CenteredClip runs sign every message: without libsodium each would stop at
       step 0 and print a table of zeros, which reads like a result */
    for (k = 0; k < nd; k++) {
        if (strcmp(defence_key[defs[k]], "mean") != 0) {
            fprintf(stderr, "btard_swarm: built without libsodium (VTRAIN_SODIUM), which the '%s' defence needs to sign "
                            "its messages; install libsodium-dev (Debian) and rebuild (make swarm), or run --defences mean\n",
                    defence_key[defs[k]]);
            return 2;
        }
    }
#endif
    memset(&d, 0, sizeof d);
    memset(&cnn, 0, sizeof cnn);
    if (!strcmp(model, "mlp")) {
        if (vt_btard_digits_load(&d, data ? data : "data/digits.csv", width > 0 ? width : 128, batch > 0 ? batch : 32, lr > 0 ? lr : 0.05) != VT_OK) {
            fprintf(stderr, "error: %s\n", vt_last_error());
            return 1;
        }
        d.decay = steps;
        snprintf(title, sizeof title, "digits MLP");
        printf("BTARD swarm: %d peers (%d Byzantine, attacking from step %lld), digits MLP 64-%d-10, %d samples per peer,\n"
               "SGD momentum 0.9, lr %g -> %g, tau 1, 1 validator per step; %lld steps\n",
               n, f, (long long)start, d.hidden, d.batch, d.lr, d.lr / 10, (long long)steps);
    } else if (!strcmp(model, "cnn") || !strcmp(model, "resnet18")) {
        int rn = !strcmp(model, "resnet18");
        vt_status st = rn ? vt_btard_cnn_cifar(&cnn, data, width, batch, lr) : vt_btard_cnn_digits(&cnn, data ? data : "data/digits.csv", width, batch, lr);
        if (st != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return 1; }
        cnn.decay = steps;
        if (rn) cnn.eval_n = 500;
        use_cnn = 1;
        snprintf(title, sizeof title, "%s%s", rn ? "ResNet-18" : "digits CNN", rn && cnn.synthetic ? " (synthetic CIFAR-shaped data)" : "");
        printf("BTARD swarm: %d peers (%d Byzantine, attacking from step %lld), %s, width %d, %d images per peer,\n"
               "batch norm on each minibatch (running statistics recomputed from the agreed weights over %d public images to evaluate),\n"
               "SGD momentum 0.9%s, lr %g -> %g, tau 1, 1 validator per step; %lld steps; accuracy on %d test images\n",
               n, f, (long long)start, rn ? (cnn.synthetic ? "ResNet-18 on SYNTHETIC CIFAR-shaped images (no CIFAR-10 given: --data DIR)"
                                                           : "ResNet-18 on CIFAR-10")
                                          : "digits CNN (conv-bn-relu x2, max pool, linear)",
               cnn.width, cnn.batch, cnn.calib, rn ? " (Nesterov), weight decay 5e-4" : "", cnn.lr, cnn.lr / 10, (long long)steps,
               cnn.eval_n > 0 && cnn.eval_n < cnn.ntest ? cnn.eval_n : cnn.ntest);
    } else {
        fprintf(stderr, "unknown --model '%s' (mlp, cnn, resnet18)\n", model);
        return 2;
    }
    runs = (run_t *)calloc((size_t)(nk * 3 + 3), sizeof(run_t));
    snaps = (snap_t *)calloc(MAXPTS, sizeof(snap_t));
    if (!runs || !snaps) return 1;
    for (k = 0; k < nk; k++)
        for (i = 0; i < nd; i++) {
            vt_btard_cfg cfg = vt_btard_cfg_default();
            vt_btard_task task = use_cnn ? vt_btard_cnn_task(&cnn) : vt_btard_digits_task(&d);
            vt_btard_attack at[64];
            vt_btard_result res;
            obs_t o;
            run_t *r = &runs[nruns];
            char label[96];
            int b, kind = kinds[k];
            def = defs[i];
            r->kind = kind;
            r->defence = def;
            if (!applicable(def, kind)) continue;
            nruns++;
            cfg.defence = (vt_btard_defence)def;
            cfg.validators = 1;
            cfg.tau = 1.0;
            cfg.data_seed = seed;
            /* the MPRNG secrets, and so the validators drawn, differ per attack
               (with one schedule, every attack would be caught at the same steps) */
            cfg.secret_seed = seed * 7919 + 1 + 1000 * (uint64_t)kind;
            cfg.timeout = 1.0;
            cfg.compute_timeout = 5.0;
            /* a ResNet-18 gradient of 8 images takes a second or more on a loaded core */
            if (use_cnn && cnn.model == VT_BTARD_CNN_RESNET18) cfg.compute_timeout = 20.0;
            for (b = 0; b < n; b++) at[b] = vt_btard_attack_default(VT_ATTACK_NONE);
            /* f attackers among ranks 1..n-1, drawn from the seed */
            for (b = 0; b < f && kind != VT_ATTACK_NONE; b++) {
                int rk = 1 + (int)vt_shuffle(seed, 99, (uint64_t)b, (uint64_t)(n - 1));
                at[rk] = vt_btard_attack_default((vt_btard_attack_kind)kind);
                at[rk].start = start;
                at[rk].delay = 20;
                at[rk].seed = seed + 12345;
                if (kind == VT_ATTACK_ALIE) at[rk].scale = vt_btard_alie_z(n, f);
            }
            snprintf(label, sizeof label, "%s/%s", vt_btard_attack_name((vt_btard_attack_kind)kind), defence_key[def]);
            o.d = &d; o.cnn = use_cnn ? &cnn : NULL; o.r = r; o.every = every; o.steps = steps; o.quiet = quiet; o.label = label;
            if (!quiet) printf("%s\n", label);
            o.snaps = snaps; o.nsnap = 0;
            vt_btard_simulate(&cfg, &task, n, at, steps, observe, &o, &res);
            if (use_cnn) evaluate_snaps(&o, &task);
            r->ok = 1;
            r->steps_done = res.steps;
            r->step_ms = res.step_ms;
            r->attackers = res.attackers;
            r->banned = res.attackers_banned;
            r->all_banned = res.attackers_banned_at;
            r->honest_banned = res.honest_banned;
            r->agree = res.views_agree;
            r->audits = res.stats.audits;
            r->false_alarms = res.stats.false_alarms;
            r->accusations = res.stats.accusations;
            if (res.steps < steps) snprintf(r->note, sizeof r->note, "stopped at step %lld: %.150s", (long long)res.steps, res.message);
            if (!quiet || res.steps < steps)
                printf("  -> %s: accuracy %.1f%%, attackers banned %d/%d%s, honest banned %d, %.2f ms/step%s%s\n", label,
                       100 * r->final_acc, r->banned, r->attackers, r->all_banned >= 0 ? "" : " (not all)", r->honest_banned,
                       r->step_ms, r->note[0] ? "; " : "", r->note);
            vt_btard_result_free(&res);
            fflush(stdout);
        }
    /* the table: attack x defence -> final accuracy, steps until all attackers banned */
    if (md) mf = fopen(md, "w");
    for (i = 0; i < 2; i++) {
        FILE *o = i ? mf : stdout;
        int q;
        if (!o) continue;
        fprintf(o, "\n| attack | BTARD accuracy | all attackers banned after | honest banned | CenteredClip, no validators | mean all-reduce |\n");
        fprintf(o, "|---|---|---|---|---|---|\n");
        for (k = 0; k < nk; k++) {
            run_t *rb = NULL, *rc = NULL, *rm = NULL;
            char ban[64] = "-", c1[80] = "n/a", c2[80] = "n/a", a0[32] = "n/a", hb[16] = "-";
            for (q = 0; q < nruns; q++) {
                if (runs[q].kind != kinds[k]) continue;
                if (runs[q].defence == 0) rb = &runs[q];
                if (runs[q].defence == 1) rc = &runs[q];
                if (runs[q].defence == 2) rm = &runs[q];
            }
            if (rb) {
                snprintf(a0, sizeof a0, "%.1f%%", 100 * rb->final_acc);
                snprintf(hb, sizeof hb, "%d", rb->honest_banned);
                if (kinds[k] != VT_ATTACK_NONE) {
                    if (rb->all_banned >= 0) snprintf(ban, sizeof ban, "%lld steps (%d/%d)", (long long)(rb->all_banned - start), rb->banned, rb->attackers);
                    else snprintf(ban, sizeof ban, "not all (%d/%d)", rb->banned, rb->attackers);
                }
            }
            if (rc) {
                if (rc->banned) snprintf(c1, sizeof c1, "%.1f%% (banned %d/%d)", 100 * rc->final_acc, rc->banned, rc->attackers);
                else snprintf(c1, sizeof c1, "%.1f%%", 100 * rc->final_acc);
            }
            if (rm) {
                if (rm->steps_done < steps) snprintf(c2, sizeof c2, "diverged (NaN at step %lld)", (long long)rm->steps_done);
                else snprintf(c2, sizeof c2, "%.1f%%", 100 * rm->final_acc);
            }
            fprintf(o, "| %s | %s | %s | %s | %s | %s |\n", vt_btard_attack_name((vt_btard_attack_kind)kinds[k]), a0, ban, hb, c1, c2);
        }
    }
    if (mf) fclose(mf);
    svg_plot(svg, title, runs, nruns, kinds, nk, every, steps, start, n, f);
    printf("\ncurves: %s\n", svg);
    free(runs);
    free(snaps);
    vt_btard_digits_free(&d);
    vt_btard_cnn_free(&cnn);
    return 0;
}
