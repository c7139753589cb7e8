/* vtrain_dp.h - v0.1.0 - MIT or public domain (see vtrain.h's end) - data-parallel verified training over MPI, on vtrain.h

   Train on many machines, audit on one. The ranks of an MPI job share each
   step's shards (SHARDS in vtrain.h: S is part of the program); every rank
   computes its own shards on its own backend, the shards' contributions
   (binary32 gradients, log records, batch bytes) are all-gathered, and
   every rank takes the same cross-shard sum, which is RNE32 of the exact
   sum whatever order anyone adds in. So -np 1, 2 or S give the same
   binary32 state at every step; rank 0 writes the transcript, byte for
   byte the one a single process writes with the same S, and vt_run or
   `vtrain audit` replays it in one process.

   This header needs vtrain.h, the way sokol_gl.h needs sokol_gfx.h.

   DO THIS in the one C or C++ file that defines VTRAIN_IMPLEMENTATION,
   built with mpicc (Open MPI or any MPI-3 library):

       #define VTRAIN_IMPLEMENTATION
       #include "vtrain.h"
       #include "vtrain_dp.h"

   and include both, in that order and without the define, elsewhere.

   USE

       MPI_Init(&argc, &argv);
       vt_desc d = vt_desc_default();
       d.shards = 4;                    // the program's S (ranks: 1..S)
       d.transcript = "run";            // rank 0 writes it, the others nothing
       vt_dp_cfg cfg = vt_dp_cfg_default();
       vt_report r;
       vt_status st = vt_dp_run(&d, &prog, steps, &cfg, &r);
       if (st != VT_OK) fprintf(stderr, "%s\n", r.message);
       return vt_dp_exit(st);           // MPI_Finalize, or MPI_Abort after a failure

   LAYOUT. Rank r of n computes shards [r S / n, (r + 1) S / n): the data of
   a shard comes from (seed, stream, row), so no rank reads another's
   layout. Rank 0's setup decides nothing the others do not: every rank
   runs setup, and the weights digests are compared before the first step.

   RESUME ON ANOTHER LAYOUT. With d.resume, rank 0 resumes the transcript
   (vt_resume: its last checkpoint, checked against its commitment) and
   sends the checkpoint's bytes to the others, which load them (every field
   checked, the digest compared): a run checkpointed on 4 ranks continues on
   2 or on 1 with the same leaves. Only rank 0 needs the transcript's
   directory.

   FAILURES. Every message between ranks is awaited with a deadline
   (vt_dp_cfg.timeout, 60 s by default): a rank that died or hangs makes
   every other rank stop within that time with an error that names it
   ("rank 0, step 12: rank 2 sent nothing for 10 s (dead or hung)"); a rank
   whose step failed (a NaN in its batch, say) sends its error, and all
   ranks stop with it. Rank 0 commits a step only after every shard of it
   arrived, so nothing half-written is saved: the transcript holds whole
   steps (its root.txt is written as the context closes), an audit replays
   them, and a resume continues from the last checkpoint. With Open MPI,
   run `mpirun --enable-recovery` so that the job outlives a dead rank long
   enough for the others to say which; without it mpirun ends the job
   itself (its message names the rank) and rank 0 may be killed before it
   writes root.txt (a resume still works: it needs only the checkpoint and
   the whole records before it).

   TRUST. The ranks of one job trust each other: a contribution is checked
   for form (its shard, step, sizes), not for honesty. A rank that lies
   about its gradient makes rank 0 commit a wrong step, which the first
   audit finds (the step's leaf differs). Collaborative training among
   parties who may lie is vtrain_btard.h.

   BUILD as vtrain.h says (-lm -lpthread, -ffp-contract=off, never
   -ffast-math) with mpicc. Of vtrain's private parts this header uses
   only those listed in vtrain.h's ">>companion" section.
*/
#ifndef VTRAIN_H
#error "vtrain_dp.h: include vtrain.h before vtrain_dp.h"
#define VTRAIN_DP_H
#define VTRAIN_DP_IMPLEMENTATION_INCLUDED
#endif

#ifndef VTRAIN_DP_H
#define VTRAIN_DP_H

#define VTRAIN_DP_VERSION_STRING "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vt_dp_cfg {
    double timeout;     /* seconds to wait for another rank's message before stopping (0: 60) */
} vt_dp_cfg;

VTDEF vt_dp_cfg vt_dp_cfg_default(void);
/* vt_run over the ranks of MPI_COMM_WORLD (MPI_Init first): d->shards is
   the program's S, at least the number of ranks. Rank 0 writes d's
   transcript or log; the others write nothing. The report is each rank's
   own (rank 0's has the run's log sizes). */
VTDEF vt_status vt_dp_run(const vt_desc *d, const vt_program *p, int64_t nsteps, const vt_dp_cfg *cfg, vt_report *r);
/* the end of the process: MPI_Finalize and 0 after VT_OK; else MPI_Abort
   (MPI_Finalize would wait for a dead rank) with exit code 1 */
VTDEF int vt_dp_exit(vt_status st);

#ifdef __cplusplus
}
#endif
#endif /* VTRAIN_DP_H */

/* ==========================================================================
   IMPLEMENTATION
   ========================================================================== */
#ifdef VTRAIN_IMPLEMENTATION

#if !defined(VT__COMPANION_SHARDS) && !defined(VTRAIN_DP_IMPLEMENTATION_INCLUDED)
#error "vtrain_dp.h: VTRAIN_IMPLEMENTATION is defined but vtrain.h's implementation (with shards) is not in this file before it: write #define VTRAIN_IMPLEMENTATION, #include \"vtrain.h\", then #include \"vtrain_dp.h\""
#define VTRAIN_DP_IMPLEMENTATION_INCLUDED
#elif defined(VT__COMPANION_SHARDS) && VT__COMPANION_SHARDS != 1
#error "vtrain_dp.h: this vtrain.h has another shard interface (VT__COMPANION_SHARDS) than the one vtrain_dp.h was written for (1): take both headers from one release"
#define VTRAIN_DP_IMPLEMENTATION_INCLUDED
#endif

#ifndef VTRAIN_DP_IMPLEMENTATION_INCLUDED
#define VTRAIN_DP_IMPLEMENTATION_INCLUDED

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__cplusplus) && !defined(OMPI_SKIP_MPICXX)
#define OMPI_SKIP_MPICXX 1 /* only the C API (the old C++ bindings do not build with -Werror) */
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ==========================================================================
   >>dp  the all-gather with a deadline, the step's exchange, the run

   Each exchange is an all-gather of byte strings, written with point-to-
   point messages (MPI_Isend / MPI_Irecv, polled with MPI_Test) rather than
   MPI_Allgatherv: a collective that waits forever for a dead rank cannot
   say which rank it waits for. First every rank's length (8 bytes), then
   the bytes. Messages between two ranks with one tag arrive in the order
   sent (MPI's non-overtaking rule), so the steps' exchanges need no step
   in their tags; each kind of exchange has its own pair of tags.
   ========================================================================== */

#define VT__DP_TAG_HELLO 7100
#define VT__DP_TAG_READY 7102
#define VT__DP_TAG_LOADED 7104
#define VT__DP_TAG_STEP 7106
#define VT__DP_HDR 592 /* "VTDP" u32 status u64 step u64 payload length u32 message length, message[564] */
#define VT__DP_MSG (VT__DP_HDR - 28)

typedef struct vt__dpnet {
    MPI_Comm comm;
    int rank, size;
    double timeout;
    unsigned char **in; /* per rank: what it sent in the last all-gather (malloc'd) */
    size_t *inlen;
    MPI_Request *rq;
    char why[640];      /* the failure of the last all-gather */
} vt__dpnet;

static double vt__dp_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void vt__dp_nap(void) {
    struct timespec t;
    t.tv_sec = 0;
    t.tv_nsec = 200000; /* 0.2 ms: a rank that waits leaves the cores to those that compute */
    nanosleep(&t, NULL);
}

/* waits for rq[0..n) until the deadline; -1 when all are done, else the
   index of the first one still pending */
static int vt__dp_wait(vt__dpnet *dp, MPI_Request *rq, int n, double t0) {
    for (;;) {
        int i, pending = -1;
        for (i = n - 1; i >= 0; i--) {
            int done = 0;
            if (rq[i] == MPI_REQUEST_NULL) continue;
            MPI_Test(&rq[i], &done, MPI_STATUS_IGNORE);
            if (!done) pending = i;
        }
        if (pending < 0) return -1;
        if (vt__dp_now() - t0 > dp->timeout) return pending;
        vt__dp_nap();
    }
}

/* Every rank's n bytes to every rank: dp->in[r], dp->inlen[r] (in[rank] is
   a copy of mine). 0, or -1 with dp->why naming the rank that was silent. */
static int vt__dp_allgather(vt__dpnet *dp, const unsigned char *mine, size_t n, int tag, const char *what, long long step) {
    int r, k, m = dp->size - 1, late;
    unsigned char len8[8], *lens = NULL;
    double t0 = vt__dp_now();
    MPI_Request *rr = dp->rq, *sr = dp->rq + dp->size;
    if (n > (size_t)0x7fffffff) {
        snprintf(dp->why, sizeof dp->why, "rank %d, %s of step %lld: %zu bytes, more than one MPI message holds (2^31 - 1)", dp->rank, what, step, n);
        return -1;
    }
    for (r = 0; r < dp->size; r++) { free(dp->in[r]); dp->in[r] = NULL; dp->inlen[r] = 0; }
    dp->in[dp->rank] = (unsigned char *)malloc(n ? n : 1);
    lens = (unsigned char *)malloc(8 * (size_t)dp->size);
    if (!dp->in[dp->rank] || !lens) { free(lens); snprintf(dp->why, sizeof dp->why, "rank %d: out of memory", dp->rank); return -1; }
    if (n) memcpy(dp->in[dp->rank], mine, n);
    dp->inlen[dp->rank] = n;
    for (k = 0; k < 8; k++) len8[k] = (unsigned char)((uint64_t)n >> (8 * k));
    for (r = 0, k = 0; r < dp->size; r++) {
        if (r == dp->rank) continue;
        MPI_Irecv(lens + 8 * r, 8, MPI_BYTE, r, tag, dp->comm, &rr[k]);
        MPI_Isend(len8, 8, MPI_BYTE, r, tag, dp->comm, &sr[k]);
        k++;
    }
    late = vt__dp_wait(dp, rr, m, t0);
    if (late < 0) late = vt__dp_wait(dp, sr, m, t0) >= 0 ? -2 : -1;
    for (r = 0, k = 0; late == -1 && r < dp->size; r++) {
        uint64_t len = 0;
        int b;
        if (r == dp->rank) continue;
        for (b = 7; b >= 0; b--) len = (len << 8) | lens[8 * r + b];
        if (len > 0x7fffffff || !(dp->in[r] = (unsigned char *)malloc(len ? (size_t)len : 1))) {
            snprintf(dp->why, sizeof dp->why, "rank %d, %s of step %lld: rank %d announces %llu bytes (more than this rank can take)", dp->rank, what,
                     step, r, (unsigned long long)len);
            free(lens);
            return -1;
        }
        dp->inlen[r] = (size_t)len;
        MPI_Irecv(dp->in[r], (int)len, MPI_BYTE, r, tag + 1, dp->comm, &rr[k]);
        MPI_Isend((void *)(uintptr_t)mine, (int)n, MPI_BYTE, r, tag + 1, dp->comm, &sr[k]);
        k++;
    }
    if (late == -1) {
        late = vt__dp_wait(dp, rr, m, t0);
        if (late < 0) late = vt__dp_wait(dp, sr, m, t0) >= 0 ? -2 : -1;
    }
    free(lens);
    if (late == -1) return 0;
    if (late == -2) { /* every message arrived, one of ours was not taken */
        for (k = 0; k < m && sr[k] == MPI_REQUEST_NULL; k++) {}
        r = k < dp->rank ? k : k + 1;
        snprintf(dp->why, sizeof dp->why, "rank %d, %s of step %lld: rank %d did not take this rank's message within %.0f s (dead or hung): stopping",
                 dp->rank, what, step, r, dp->timeout);
    } else {
        char more[64] = "";
        int others = 0;
        for (k = late + 1; k < m; k++) others += rr[k] != MPI_REQUEST_NULL;
        if (others) snprintf(more, sizeof more, " (and %d more)", others);
        r = late < dp->rank ? late : late + 1;
        snprintf(dp->why, sizeof dp->why, "rank %d, %s of step %lld: rank %d%s sent nothing for %.0f s (dead or hung): stopping", dp->rank, what,
                 step, r, more, dp->timeout);
    }
    return -1;
}

static void vt__dp_put32(unsigned char *p, uint32_t v) { int i; for (i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static void vt__dp_put64(unsigned char *p, uint64_t v) { int i; for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static uint32_t vt__dp_get32(const unsigned char *p) { uint32_t v = 0; int i; for (i = 3; i >= 0; i--) v = (v << 8) | p[i]; return v; }
static uint64_t vt__dp_get64(const unsigned char *p) { uint64_t v = 0; int i; for (i = 7; i >= 0; i--) v = (v << 8) | p[i]; return v; }

/* [header: this rank's status and message, the step][payload] to every
   rank; 0 when every rank is fine; else -1 with the error in dp->why (a
   silent rank, or the first rank that failed, by its own words) */
static int vt__dp_round(vt__dpnet *dp, vt_status st, const char *msg, long long step, const unsigned char *pay, size_t n, int tag, const char *what) {
    unsigned char *b = (unsigned char *)malloc(VT__DP_HDR + n);
    size_t ml = st == VT_OK ? 0 : strlen(msg);
    int r;
    if (!b) { snprintf(dp->why, sizeof dp->why, "rank %d: out of memory", dp->rank); return -1; }
    memset(b, 0, VT__DP_HDR);
    if (ml > VT__DP_MSG) ml = VT__DP_MSG;
    memcpy(b, "VTDP", 4);
    vt__dp_put32(b + 4, (uint32_t)st);
    vt__dp_put64(b + 8, (uint64_t)step);
    vt__dp_put64(b + 16, (uint64_t)n);
    vt__dp_put32(b + 24, (uint32_t)ml);
    memcpy(b + 28, msg, ml);
    if (n) memcpy(b + VT__DP_HDR, pay, n);
    r = vt__dp_allgather(dp, b, VT__DP_HDR + n, tag, what, step);
    free(b);
    if (r < 0) return -1;
    for (r = 0; r < dp->size; r++) {
        const unsigned char *h = dp->in[r];
        if (dp->inlen[r] < VT__DP_HDR || memcmp(h, "VTDP", 4) || vt__dp_get64(h + 8) != (uint64_t)step ||
            vt__dp_get64(h + 16) != (uint64_t)(dp->inlen[r] - VT__DP_HDR)) {
            snprintf(dp->why, sizeof dp->why, "rank %d, %s of step %lld: rank %d sent %zu bytes that are not one (another program or version?)", dp->rank,
                     what, step, r, dp->inlen[r]);
            return -1;
        }
    }
    for (r = 0; r < dp->size; r++) {
        const unsigned char *h = dp->in[r];
        uint32_t rs = vt__dp_get32(h + 4), l = vt__dp_get32(h + 24);
        if (rs != VT_OK) {
            if (l > VT__DP_MSG) l = VT__DP_MSG;
            snprintf(dp->why, sizeof dp->why, "rank %d failed%s: %.*s", r, step >= 0 ? "" : " before the first step", (int)l, (const char *)h + 28);
            return -1;
        }
    }
    return 0;
}

/* the step's exchange (vt_shards_sum): every rank's shards to every rank */
static vt_status vt__dp_exchange(vt_ctx *c, void *user) {
    vt__dpnet *dp = (vt__dpnet *)user;
    const unsigned char *mine;
    size_t n;
    int r;
    vt_status st = vt_status_of(c);
    vt__shards_mine(c, &mine, &n);
    if (vt__dp_round(dp, st, vt_error_message(c), (long long)vt_step_index(c), st == VT_OK ? mine : NULL, st == VT_OK ? n : 0,
                     VT__DP_TAG_STEP, "the shards' exchange") < 0)
        return vt_set_error(c, st != VT_OK ? st : VT_ERR_BACKEND, st != VT_OK ? vt_error_message(c) : dp->why);
    for (r = 0; r < dp->size; r++)
        if (!vt__shards_put(c, dp->in[r] + VT__DP_HDR, dp->inlen[r] - VT__DP_HDR)) break;
    return vt_status_of(c);
}

VTDEF vt_dp_cfg vt_dp_cfg_default(void) {
    vt_dp_cfg g;
    memset(&g, 0, sizeof g);
    return g;
}

static void vt__dp_free(vt__dpnet *dp, int clean) {
    int r;
    for (r = 0; dp->in && r < dp->size; r++) free(dp->in[r]);
    free(dp->in);
    free(dp->inlen);
    free(dp->rq);
    if (clean) MPI_Comm_free(&dp->comm); /* (after a failure a rank may be dead: nothing collective) */
}

static vt_status vt__dp_fail(vt_report *r, vt_status st, const char *msg) {
    memset(r, 0, sizeof *r);
    r->status = st;
    r->first_bad_step = -1;
    snprintf(r->message, sizeof r->message, "%.700s", msg);
    return st;
}

/* the same job on every rank: shards, steps, mode, bound, resume */
static int vt__dp_hello(vt__dpnet *dp, const vt_desc *d, int S, int64_t nsteps) {
    unsigned char h[28];
    int r;
    memcpy(h, "VTDH", 4);
    vt__dp_put32(h + 4, (uint32_t)S);
    vt__dp_put64(h + 8, (uint64_t)nsteps);
    vt__dp_put32(h + 16, (uint32_t)d->mode);
    vt__dp_put32(h + 20, (uint32_t)d->bound);
    vt__dp_put32(h + 24, (uint32_t)(d->resume != 0));
    if (vt__dp_round(dp, VT_OK, "", -1, h, sizeof h, VT__DP_TAG_HELLO, "the start") < 0) return -1;
    for (r = 0; r < dp->size; r++)
        if (dp->inlen[r] != VT__DP_HDR + sizeof h || memcmp(dp->in[r] + VT__DP_HDR, dp->in[0] + VT__DP_HDR, sizeof h)) {
            const unsigned char *o = dp->in[r] + VT__DP_HDR;
            snprintf(dp->why, sizeof dp->why, "rank %d runs another job than rank 0: shards %u, steps %llu, mode %u, bound %u, resume %u "
                     "(rank 0: %d, %lld, %d, %d, %d)", r, vt__dp_get32(o + 4), (unsigned long long)vt__dp_get64(o + 8), vt__dp_get32(o + 16),
                     vt__dp_get32(o + 20), vt__dp_get32(o + 24), S, (long long)nsteps, (int)d->mode, (int)d->bound, d->resume != 0);
            return -1;
        }
    return 0;
}

/* After setup (and rank 0's resume): rank 0's step and, if it resumed,
   its checkpoint's bytes to everyone, which the others load; then every
   rank's step and state digest, which must be rank 0's. */
static int vt__dp_ready(vt__dpnet *dp, vt_ctx *c) {
    unsigned char *pay = NULL, dg[40];
    size_t ck = 0;
    int r;
    vt_status st = vt_status_of(c);
    if (st == VT_OK && dp->rank == 0 && vt_step_index(c) > 0) {
        char path[700];
        vt__ckpt_path(vt_ctx_desc(c)->transcript, vt_step_index(c), path, sizeof path);
        pay = vt__read_file(path, &ck, (size_t)0x7fffffff - 4096);
        if (!pay) {
            char m[800];
            snprintf(m, sizeof m, "resume: rank 0 cannot read back '%s' for the other ranks", path);
            st = vt_set_error(c, VT_ERR_IO, m);
        }
    }
    r = vt__dp_round(dp, st, vt_error_message(c), -1, pay, st == VT_OK ? ck : 0, VT__DP_TAG_READY, "the start");
    VT_FREE(pay, NULL);
    if (r < 0) return -1;
    if (dp->rank != 0 && dp->inlen[0] > VT__DP_HDR) { /* rank 0 resumed: its checkpoint */
        if (vt__checkpoint_parse(c, dp->in[0] + VT__DP_HDR, dp->inlen[0] - VT__DP_HDR, "rank 0's checkpoint") != VT_OK)
            st = vt_status_of(c);
    }
    memset(dg, 0, sizeof dg);
    if (st == VT_OK) { vt__dp_put64(dg, (uint64_t)vt_step_index(c)); vt_weights_digest(c, dg + 8); }
    if (vt__dp_round(dp, st, vt_error_message(c), -1, dg, st == VT_OK ? sizeof dg : 0, VT__DP_TAG_LOADED, "the start") < 0) return -1;
    for (r = 1; r < dp->size; r++) {
        const unsigned char *o = dp->in[r] + VT__DP_HDR, *z = dp->in[0] + VT__DP_HDR;
        if (dp->inlen[r] != VT__DP_HDR + sizeof dg || dp->inlen[0] != VT__DP_HDR + sizeof dg || memcmp(o, z, sizeof dg)) {
            snprintf(dp->why, sizeof dp->why, "rank %d's state at step %llu differs from rank 0's at step %llu (another program, data or "
                     "setup: each rank's setup must make the same parameters)", r, (unsigned long long)vt__dp_get64(o),
                     (unsigned long long)vt__dp_get64(z));
            return -1;
        }
    }
    return 0;
}

VTDEF vt_status vt_dp_run(const vt_desc *d, const vt_program *p, int64_t nsteps, const vt_dp_cfg *cfg, vt_report *r) {
    vt__dpnet net;
    vt_desc dd = *d;
    vt_ctx *c;
    vt_report tmp;
    int S = d->shards > 1 ? d->shards : 1, lo, hi, inited = 0;
    vt_status st;
    if (!r) r = &tmp;
    MPI_Initialized(&inited);
    if (!inited) return vt__dp_fail(r, VT_ERR_STATE, "vt_dp_run: call MPI_Init first");
    if (d->role != VT_ROLE_TRAIN) return vt__dp_fail(r, VT_ERR_ARG, "vt_dp_run trains; an audit runs in one process (vt_run)");
    memset(&net, 0, sizeof net);
    net.timeout = cfg && cfg->timeout > 0 ? cfg->timeout : 60;
    MPI_Comm_dup(MPI_COMM_WORLD, &net.comm);
    MPI_Comm_rank(net.comm, &net.rank);
    MPI_Comm_size(net.comm, &net.size);
    net.in = (unsigned char **)calloc((size_t)net.size, sizeof(unsigned char *));
    net.inlen = (size_t *)calloc((size_t)net.size, sizeof(size_t));
    net.rq = (MPI_Request *)malloc(sizeof(MPI_Request) * 2 * (size_t)net.size);
    if (!net.in || !net.inlen || !net.rq) { vt__dp_free(&net, 1); return vt__dp_fail(r, VT_ERR_NOMEM, "vt_dp_run: out of memory"); }
    if (net.size > S) {
        char m[200];
        snprintf(m, sizeof m, "vt_dp_run: %d ranks for %d shards (vt_desc.shards): every rank needs at least one shard", net.size, S);
        vt__dp_free(&net, 1);
        return vt__dp_fail(r, VT_ERR_ARG, m);
    }
    if (vt__dp_hello(&net, d, S, nsteps) < 0) { vt__dp_free(&net, 0); return vt__dp_fail(r, VT_ERR_BACKEND, net.why); }
    lo = (int)((int64_t)net.rank * S / net.size);
    hi = (int)((int64_t)(net.rank + 1) * S / net.size);
    if (net.rank != 0) { /* rank 0 alone writes */
        dd.transcript = NULL; dd.log_path = NULL; dd.commit_path = NULL; dd.resume = 0; dd.log_memory = 0;
    }
    c = vt_create(&dd);
    if (!c) { /* the others learn it at the start's exchange */
        char m[800];
        vt_ctx *e = vt_create(NULL);
        snprintf(m, sizeof m, "%s", vt_last_error());
        st = vt_last_status() != VT_OK ? vt_last_status() : VT_ERR_ARG;
        if (e) { vt_set_error(e, st, m); vt__dp_ready(&net, e); vt_destroy(e); }
        vt__dp_free(&net, 0);
        return vt__dp_fail(r, st, m);
    }
    vt__shards_attach(c, lo, hi, net.rank, 1, vt__dp_exchange, &net);
    if (p->setup) {
        st = p->setup(c, p->user);
        if (st != VT_OK && vt_status_of(c) == VT_OK) vt_set_error(c, st, "the program's setup failed");
    }
    if (net.rank == 0) vt_resume(c);
    if (vt__dp_ready(&net, c) < 0) {
        if (vt_status_of(c) == VT_OK) vt_set_error(c, VT_ERR_BACKEND, net.why);
        vt__dp_fail(r, vt_status_of(c), vt_error_message(c));
        vt_destroy(c);
        vt__dp_free(&net, 0);
        return r->status;
    }
    st = vt_run_ctx(c, p, nsteps, r);
    vt_destroy(c);
    vt__dp_free(&net, st == VT_OK);
    return st;
}

/* After a failure rank 0 ends the job (MPI_Abort), once it has closed its
   transcript; another rank only leaves (with mpirun --enable-recovery the
   job outlives it), so that it never kills rank 0 while that writes. */
VTDEF int vt_dp_exit(vt_status st) {
    int rank = 0;
    if (st == VT_OK) { MPI_Finalize(); return 0; }
    fflush(stdout);
    fflush(stderr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

#ifdef __cplusplus
}
#endif
#endif /* VTRAIN_DP_IMPLEMENTATION_INCLUDED */
#endif /* VTRAIN_IMPLEMENTATION */
