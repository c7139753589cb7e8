/* vtrain_btard.h - v0.1.0 - MIT or public domain (see end of file) - Byzantine-tolerant collaborative training (BTARD) on vtrain.h

   BTARD: n peers train one model together over a transport (vt_net:
   in-process threads, or MPI ranks with VTRAIN_MPI), and any minority of
   them may lie, go silent or send garbage. Validators recompute other
   peers' gradients bit for bit from their committed rounding logs (vtrain's
   verified replay), so a one-bit lie is caught and the liar banned; honest
   peers keep bit-identical weights. The protocol (BTARD-SGD, Gorbunov et
   al., ICML 2022), its checks, deadlines and attacks are described at the
   top of the ">>btard" section below.

   This header needs vtrain.h, the way sokol_gl.h needs sokol_gfx.h: a user
   who wants only verifiable training compiles vtrain.h alone.

   DO THIS in the one C or C++ file that defines VTRAIN_IMPLEMENTATION:

       #define VTRAIN_IMPLEMENTATION
       #include "vtrain.h"
       #include "vtrain_btard.h"

   and include both, in that order and without the define, everywhere else.

   OPTIONS (define before the #include that carries VTRAIN_IMPLEMENTATION):

       VTRAIN_MPI           the MPI transport (vt_net_mpi_create): peers as
                            MPI ranks of one job; includes <mpi.h>: build
                            with mpicc (define it also where you call
                            vt_net_mpi_create: it declares it)

   vtrain.h's options act here too, as they act there: VTRAIN_STATIC (every
   function static), VT_MALLOC / VT_REALLOC / VT_FREE, VTRAIN_NO_THREADS
   (no in-process transport: vt_net_inproc_create and vt_btard_simulate
   fail with a message), VTRAIN_NO_SIMD. BUILD as vtrain.h says: -lm
   -lpthread, -ffp-contract=off, never -ffast-math (CenteredClip and the
   projections are recomputed bit for bit by every peer).

   USE

       vt_btard_cfg cfg = vt_btard_cfg_default();   // tau, validators, deadlines
       vt_btard_task task = { init, optimizer, loss, ... };  // the model, its data
       vt_btard_peer *p = vt_btard_peer_create(&cfg, &task, net, NULL);
       for (s = 0; s < steps; s++) vt_btard_step(p);   // one whole BTARD step
       // or: vt_btard_simulate(&cfg, &task, 16, attacks, steps, obs, u, &res)

   CONTENTS (each a ">>name" banner: search for it)

       >>btard declarations  the API: transports, CenteredClip, attacks,
                             events, the task, configuration, a peer, a
                             swarm, the digits task
       >>btard     the protocol step by step, CenteredClip's definition, the
                   projection tolerance, deadlines, assumptions; small helpers
       >>inproc    the in-process transport (threads and queues)
       >>mpi       the MPI transport (VTRAIN_MPI)
       >>cclip     CenteredClip
       >>attacks   attacks and ban reasons by name
       >>peer      a peer: roles, work, validation, the rounds of a step,
                   the update, the plain mean baseline, creation
       >>swarm     an in-process swarm (vt_btard_simulate)
       >>digits    a ready task: an MLP on the digits

   Of vtrain's private parts the implementation uses only those listed in
   vtrain.h's ">>companion" section.
*/

/* this header is built on vtrain.h's declarations (and, for the
   implementation, on its implementation): without them, only the message */
#ifndef VTRAIN_H
#error "vtrain_btard.h: include vtrain.h before vtrain_btard.h"
#define VTRAIN_BTARD_H
#define VTRAIN_BTARD_IMPLEMENTATION_INCLUDED
#endif

#ifndef VTRAIN_BTARD_H
#define VTRAIN_BTARD_H

#define VTRAIN_BTARD_VERSION_STRING "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

/* ==========================================================================
   >>btard declarations: Byzantine-tolerant collaborative training. The
   protocol, its checks, deadlines and attacks are described at the top of
   the >>btard section of the implementation (below).
   ========================================================================== */

/* --- transport ------------------------------------------------------------ */

typedef struct vt_net vt_net;

typedef struct vt_net_stats {
    int64_t sent_msgs, sent_bytes;     /* counting every copy of a broadcast */
    int64_t recv_msgs, recv_bytes;
    int64_t late;                      /* dropped after their phase was over */
    int64_t dropped;                   /* too large, or over the per-sender queue limit */
    int64_t garbage;                   /* unreadable at the transport level */
} vt_net_stats;

/* The interface a BTARD peer talks through. Tags are 64-bit; a message is
   matched by (sender, tag). recv waits until `deadline` (vt_net_now()
   seconds) and returns 1 with a message (*p, owned by the caller: free it
   with vt_net_free), 0 when the deadline passed, -1 on transport failure.
   discard_before drops queued messages with tags below `tag` and adds one
   to late_from[sender] for each (late_from may be NULL). */
struct vt_net {
    int rank, size;
    int (*send)(vt_net *t, int to, uint64_t tag, const void *p, size_t n);
    /* the same bytes to every other peer, or to those with to[rank] != 0 */
    int (*bcast)(vt_net *t, uint64_t tag, const void *p, size_t n, const unsigned char *to);
    int (*recv)(vt_net *t, int from, uint64_t tag, unsigned char **p, size_t *n, double deadline);
    /* optional (NULL: recv one by one): the messages (from[i], tag) for each
       i with from[i] >= 0, all against one deadline; got[i] = 1 with p[i],
       n[i] for each that came. Returns how many came, -1 on failure. */
    int (*recv_set)(vt_net *t, const int *from, int cnt, uint64_t tag, unsigned char **p, size_t *n, int *got,
                    double deadline);
    void (*discard_before)(vt_net *t, uint64_t tag, int64_t *late_from);
    void (*destroy)(vt_net *t);
    vt_net_stats stats;
    void *impl;
};

VTDEF double vt_net_now(void);    /* monotonic seconds */
VTDEF void vt_net_free(void *p);  /* a message returned by recv */
/* n endpoints on one in-process hub (threads); endpoint i has rank i. Each
   endpoint's destroy releases it; the hub goes with the last one. Messages
   over max_msg bytes (0: 64 MiB) are dropped. NULL without threads. */
VTDEF vt_net **vt_net_inproc_create(int n, size_t max_msg);
#ifdef VTRAIN_MPI
/* this process's endpoint over MPI_COMM_WORLD (call MPI_Init first; destroy
   it before MPI_Finalize: it drains the traffic of every rank) */
VTDEF vt_net *vt_net_mpi_create(size_t max_msg);
#endif

/* --- CenteredClip ------------------------------------------------------------ */

typedef struct vt_cclip_info {
    int iters;          /* iterations run */
    int valid;          /* rows used (present and finite) */
    int clipped;        /* rows clipped in the last iteration */
    double last_step;   /* |step| of the last iteration */
} vt_cclip_info;

/* out[L] = CenteredClip of m rows of L binary32 values (see >>btard):
   rows[i] NULL or with a non-finite value are left out; tau > 0;
   max_iters 0: 100; eps 0: 2^-20. Bit-identical on every IEEE machine. */
VTDEF vt_status vt_centered_clip(const float *const *rows, int m, int64_t L, double tau, int max_iters,
                                 double eps, float *out, vt_cclip_info *info);

/* --- attacks ------------------------------------------------------------------ */

#define VT__BTARD_ATTACK_LIST(X)                                                   \
    X(NONE, "none")                                                                \
    X(SIGN_FLIP, "sign_flip")                                                      \
    X(RANDOM_DIRECTION, "random_direction")                                        \
    X(LABEL_FLIP, "label_flip")                                                    \
    X(DELAYED, "delayed")                                                          \
    X(IPM, "ipm")                                                                  \
    X(ALIE, "alie")                                                                \
    X(LYING_AGGREGATOR, "lying_aggregator")                                        \
    X(SPIKE, "spike")                                                              \
    X(WITHHOLD_REVEAL, "withhold_reveal")                                          \
    X(WRONG_REVEAL, "wrong_reveal")                                                \
    X(FORGED_LOG, "forged_log")                                                    \
    X(NUDGE, "nudge")                                                              \
    X(NAN, "nan")                                                                  \
    X(GARBAGE, "garbage")                                                          \
    X(GARBAGE_COMMIT, "garbage_commit")                                            \
    X(WRONG_SIZE, "wrong_size")                                                    \
    X(LATE, "late")                                                                \
    X(SILENT, "silent")                                                            \
    X(FALSE_ACCUSE, "false_accuse")

typedef enum vt_btard_attack_kind {
#define VT__X(name, str) VT_ATTACK_##name,
    VT__BTARD_ATTACK_LIST(VT__X)
#undef VT__X
    VT_ATTACK_COUNT
} vt_btard_attack_kind;

typedef struct vt_btard_attack {
    vt_btard_attack_kind kind;
    int64_t start;      /* first step it attacks */
    int64_t period;     /* then every period-th step (0 or 1: every step) */
    double scale;       /* sign_flip -1000, random_direction 1000, ipm 0.1, alie z, lying_aggregator -10, spike 1e6 (its norm), nudge 1e-6 */
    int64_t delay;      /* delayed: steps back (paper: 1000) */
    uint64_t seed;      /* shared by colluding attackers (random_direction, garbage) */
    int est;            /* ipm, alie: honest gradients computed to estimate mean and sd (default 3) */
} vt_btard_attack;

VTDEF const char *vt_btard_attack_name(vt_btard_attack_kind k);
VTDEF int vt_btard_attack_parse(const char *name); /* -1 if unknown */
VTDEF vt_btard_attack vt_btard_attack_default(vt_btard_attack_kind k); /* the paper's parameters, start 0 */
/* ALIE's z_max for n peers of which f are Byzantine (Baruch et al. 2019):
   s = floor(n/2 + 1) - f, z = Phi^-1((n - s) / n) */
VTDEF double vt_btard_alie_z(int n, int f);
/* 1 if an attacker with this config attacks at step t */
VTDEF int vt_btard_attacking(const vt_btard_attack *a, int64_t t);

/* --- events -------------------------------------------------------------------- */

#define VT__BTARD_REASON_LIST(X)                                                   \
    X(SILENT, "silent: no message before the deadline")                           \
    X(MALFORMED, "malformed message (size, format or values)")                    \
    X(WEIGHTS, "its weights digest differs from the honest peers'")               \
    X(GRADIENT, "its gradient differs from the exact recomputation")              \
    X(CHUNK, "its log chunk is missing or not the committed one")                 \
    X(FALSE_ACCUSATION, "accused a peer whose gradient recomputes exactly")       \
    X(PART, "a gradient part missing or not the committed one")                   \
    X(NONFINITE, "a gradient part with NaN or Inf")                               \
    X(FALSE_CLAIM, "claimed a part was not finite, and it was")                   \
    X(AGGREGATE, "its aggregate is not the CenteredClip of the parts")            \
    X(SCALARS, "its projection scalars do not match its gradient")                \
    X(REVEAL, "its MPRNG reveal was withheld or does not match")                  \
    X(ROLE, "acted outside its role")

typedef enum vt_btard_reason {
#define VT__X(name, str) VT_BAN_##name,
    VT__BTARD_REASON_LIST(VT__X)
#undef VT__X
    VT_BAN_COUNT
} vt_btard_reason;

typedef enum vt_btard_event_kind {
    VT_EV_BAN,          /* peer banned (by: the accuser or -1) */
    VT_EV_ACCUSE,       /* a validator accused peer (by: the validator) */
    VT_EV_AUDIT,        /* the aggregation of a part was audited (peer: its aggregator) */
    VT_EV_FALSE_ALARM,  /* ... and found exact */
    VT_EV_COMPLAINT,    /* an aggregator complained about peer's part */
    VT_EV_LATE          /* messages from peer arrived after their phase (count in `count`) */
} vt_btard_event_kind;

typedef struct vt_btard_event {
    int64_t step;
    int round;
    vt_btard_event_kind kind;
    int peer;           /* rank concerned */
    int by;             /* rank that raised it, -1: everyone */
    vt_btard_reason reason;
    int64_t count;
} vt_btard_event;

VTDEF const char *vt_btard_reason_name(vt_btard_reason r);
VTDEF const char *vt_btard_reason_message(vt_btard_reason r);

/* --- the task: the model and its data --------------------------------------------- */

typedef struct vt_btard_task {
    /* create the model's parameters on c, identically on every peer; return
       the model (user memory) */
    void *(*init)(vt_ctx *c, void *user);
    /* the optimizer (called on each peer's main context only) */
    vt_optim *(*optimizer)(vt_ctx *c, void *model, void *user);
    /* one minibatch from the public seed: build the forward pass and call
       vt_backward. flip_labels: the label-flip attack asks for wrong labels. */
    vt_status (*loss)(vt_ctx *c, void *model, uint64_t seed, int flip_labels, void *user);
    /* the learning rate at step t: must be the same double on every machine
       (+ - * / only, or a constant); NULL: lr below */
    double (*lr_at)(int64_t step, void *user);
    void (*release)(void *model, void *user);
    double lr;
    void *user;
} vt_btard_task;

/* --- configuration ----------------------------------------------------------------- */

typedef enum vt_btard_defence {
    VT_DEFENCE_BTARD,   /* the whole protocol */
    VT_DEFENCE_CCLIP,   /* the same without validators (m = 0): CenteredClip + checks */
    VT_DEFENCE_MEAN     /* plain butterfly all-reduce of the mean: no defence at all */
} vt_btard_defence;

typedef struct vt_btard_cfg {
    vt_btard_defence defence;
    int validators;          /* m per step (BTARD; 0: 1) */
    double tau;              /* CenteredClip radius (0: 1.0) */
    int cc_iters;            /* 0: 100 */
    double cc_eps;           /* 0: 2^-20 */
    double lambda;           /* projection check (0: 8) */
    double timeout;          /* seconds for an exchange (0: 10) */
    double compute_timeout;  /* seconds while others compute (0: 60) */
    uint64_t data_seed;      /* public minibatch seeds xi(i,t) = vt_rng_u64(data_seed, i, t) */
    uint64_t secret_seed;    /* MPRNG secrets: vt_rng_u64(secret_seed, rank, ...); private to each
                                peer in a real swarm (simulations share one for reproducibility) */
    int threads;             /* worker threads of each peer's contexts (0: 1) */
    const char *audit_order; /* the audit context's order (NULL: "threads:1,chaos:<7919*(rank+1)>") */
    int session;             /* 0..255: tag namespace, for several runs over one transport */
    size_t max_chunk;        /* largest log chunk accepted (0: 16 MiB) */
} vt_btard_cfg;

VTDEF vt_btard_cfg vt_btard_cfg_default(void);

/* --- a peer --------------------------------------------------------------------------- */

typedef struct vt_btard_stats {
    int64_t steps, rounds, restarts, skipped;
    int64_t validations, accusations, audits, false_alarms, complaints;
    int64_t cc_iters, cc_iters_max, cc_calls;
    int64_t late;                  /* late messages dropped */
    double t_step, t_grad, t_validate, t_aggregate, t_update, t_wait; /* seconds */
} vt_btard_stats;

typedef struct vt_btard_peer vt_btard_peer;

/* A peer on endpoint net (rank net->rank of net->size). atk NULL: honest.
   NULL on failure (vt_last_error()). */
VTDEF vt_btard_peer *vt_btard_peer_create(const vt_btard_cfg *cfg, const vt_btard_task *task, vt_net *net,
                                          const vt_btard_attack *atk);
VTDEF void vt_btard_peer_destroy(vt_btard_peer *p);
/* One whole step. VT_OK, or VT_ERR_STATE once this peer is banned (it then
   stops), or an error of its own engine (vt_btard_error). */
VTDEF vt_status vt_btard_step(vt_btard_peer *p);
VTDEF const char *vt_btard_error(const vt_btard_peer *p);
VTDEF int64_t vt_btard_step_index(const vt_btard_peer *p);
VTDEF int vt_btard_rank(const vt_btard_peer *p);
VTDEF int vt_btard_alive(const vt_btard_peer *p, int rank);
VTDEF int vt_btard_alive_count(const vt_btard_peer *p);
VTDEF vt_ctx *vt_btard_ctx(vt_btard_peer *p);     /* the main context: weights, optimizer */
VTDEF void *vt_btard_model(vt_btard_peer *p);
VTDEF void vt_btard_digest(const vt_btard_peer *p, unsigned char out[32]); /* vt_weights_digest now (weights and optimizer state) */
VTDEF int vt_btard_events(const vt_btard_peer *p, const vt_btard_event **ev);
VTDEF void vt_btard_stats_get(const vt_btard_peer *p, vt_btard_stats *s);

/* --- an in-process swarm ------------------------------------------------------------------ */

typedef void (*vt_btard_observer)(vt_btard_peer *p, int64_t step, void *user);

typedef struct vt_btard_result {
    vt_status status;
    int n;
    int64_t steps;                /* steps the observer completed */
    int observer;                 /* rank of the observer (the lowest honest rank) */
    int64_t *banned_at;           /* [n] step at which the observer saw each peer banned, -1 */
    int *ban_reason;              /* [n] */
    int honest_banned;            /* honest peers banned in any honest peer's view */
    int views_agree;              /* 1: every honest peer ends with the observer's ban list and weights */
    int64_t attackers_banned_at;  /* step by which every peer that attacked was banned; -1: one was not */
    int attackers_banned;         /* attackers banned (the observer's view) */
    int attackers;                /* peers that attacked at least once */
    double seconds, step_ms;      /* wall time; mean per step */
    vt_btard_stats stats;         /* the observer's */
    vt_btard_event *events;       /* the observer's events */
    int nevents;
    unsigned char digest[32];     /* the observer's final weights digest */
    char message[512];            /* the first error, if any */
} vt_btard_result;

/* Run n peers, one thread each, over an in-process transport for nsteps.
   attacks[i] is peer i's behaviour (NULL: all honest). After each of its
   steps the observer (the lowest honest rank) calls obs. When every peer
   has stopped, each honest peer drops what is still queued and records it
   as VT_EV_LATE, as it would at the start of another step. */
VTDEF vt_status vt_btard_simulate(const vt_btard_cfg *cfg, const vt_btard_task *task, int n,
                                  const vt_btard_attack *attacks, int64_t nsteps, vt_btard_observer obs,
                                  void *obs_user, vt_btard_result *res);
VTDEF void vt_btard_result_free(vt_btard_result *r);

/* --- a ready task: an MLP classifier on vt_digits -------------------------------------------- */

typedef struct vt_btard_digits {
    vt_digits data;
    int32_t *perm;       /* fixed shuffle: perm[0..ntrain) train, the rest test */
    int ntrain, ntest;
    int hidden, batch;   /* 64 -> hidden -> 10, ReLU; minibatch per peer */
    int adam;            /* 0: SGD with momentum 0.9 (as the paper), 1: AdamW */
    double lr;
    int64_t decay;       /* > 0: lr decays linearly to lr/10 at step `decay` (exact arithmetic) */
} vt_btard_digits;

VTDEF vt_status vt_btard_digits_load(vt_btard_digits *d, const char *path, int hidden, int batch, double lr);
VTDEF vt_btard_task vt_btard_digits_task(vt_btard_digits *d);
VTDEF double vt_btard_digits_accuracy(vt_ctx *c, void *model, const vt_btard_digits *d); /* on the test split */
VTDEF void vt_btard_digits_free(vt_btard_digits *d);

#ifdef __cplusplus
}
#endif
#endif /* VTRAIN_BTARD_H */

/* ==========================================================================
   ==========================================================================
   IMPLEMENTATION
   ==========================================================================
   ========================================================================== */
#ifdef VTRAIN_IMPLEMENTATION

/* vtrain.h's implementation, earlier in this translation unit, defines
   VT__COMPANION: the version of the internal interface this file uses
   (vtrain.h's >>companion section). Without it the implementation below
   is skipped, so the message is the only error. */
#if !defined(VT__COMPANION) && !defined(VTRAIN_BTARD_IMPLEMENTATION_INCLUDED)
#error "vtrain_btard.h: VTRAIN_IMPLEMENTATION is defined but vtrain.h's implementation is not in this file before it: write #define VTRAIN_IMPLEMENTATION, #include \"vtrain.h\", then #include \"vtrain_btard.h\""
#define VTRAIN_BTARD_IMPLEMENTATION_INCLUDED
#elif defined(VT__COMPANION) && VT__COMPANION != 1
#error "vtrain_btard.h: this vtrain.h has another companion interface (VT__COMPANION) than the one vtrain_btard.h was written for (1): take both headers from one release"
#define VTRAIN_BTARD_IMPLEMENTATION_INCLUDED
#endif

#ifndef VTRAIN_BTARD_IMPLEMENTATION_INCLUDED
#define VTRAIN_BTARD_IMPLEMENTATION_INCLUDED

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifndef VTRAIN_NO_THREADS
#include <pthread.h>
#include <sched.h>
#endif
#ifdef VTRAIN_MPI
#if defined(__cplusplus) && !defined(OMPI_SKIP_MPICXX)
#define OMPI_SKIP_MPICXX 1  /* only the C API (the old C++ bindings do not build with -Werror) */
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#endif

/* the floating-point settings of vtrain.h's implementation (see its top):
   no contraction of a*b+c into fma, here as there, since every peer must
   recompute CenteredClip and the projections bit for bit. Keep the two
   alike. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC push_options
#ifdef VTRAIN_NO_O3
#pragma GCC optimize("fp-contract=off")
#else
#pragma GCC optimize("O3", "fp-contract=off")
#endif
#endif

/* ==========================================================================
   >>btard  Byzantine-tolerant collaborative training (BTARD)

   n peers train one model together and any minority of them may lie, go
   silent or send garbage. This is the protocol of Gorbunov, Borzunov,
   Diskin and Ryabinin (BTARD-SGD, ICML 2022). Their released code only
   simulated the detection half (a Byzantine "banned itself" with the
   probability that a validator would have caught it). Here the detection is
   real. vtrain recomputes any gradient bit for bit on any hardware, so a
   validator's check is a hash comparison. There is no tolerance: an honest
   peer is never falsely accused, and a one-bit lie is as provable as a sign
   flip.

   ONE STEP t, as every honest peer runs it.

   0. Roles. The validators of step t are drawn from the previous step's
      shared randomness r(t-1): m of the alive peers, each with a target among
      step t-1's workers. The other peers are workers. A target sends its
      step t-1 log chunk to its validator, point to point.
   1. Work. A worker computes its gradient at the common weights x(t). The
      minibatch comes from the public seed xi(i,t) = rng(data_seed, i, t) and
      the gradient from the verified engine (a vt_ctx with log_memory). The
      step's rounding-log chunk is part of what the worker commits.
      A validator computes no gradient. It replays its target's step t-1
      gradient on its own audit context (role AUDIT, its own chaos reduction
      order) with the target's chunk, the weights x(t-1) and the seed
      xi(j,t-1). It then compares the part hashes and the projection scalars
      (step 8) with what the target published at t-1.

   The rest of the step runs in ROUNDS. A round in which anyone is banned
   starts again with the smaller peer set. Gradients are kept; everything
   else is redone: partition, commitments, randomness. A step therefore ends
   after at most (number of liars + 1) rounds. If no round completes, no
   peer updates its weights. Nobody ever applies a local-only update.

   2. COMMIT (broadcast). Each worker sends the SHA-256 of each of the n equal
      contiguous parts of its flat gradient (zero-padded to n*L, L =
      ceil(d/n)) and of its log chunk. Every peer also sends a commitment to
      a fresh MPRNG secret, the digest of its weights x(t) (the paper's
      cross-check of hash(x): SHA-256 of the two halves of the flat binary32
      weights, hashed side by side, then of the two hashes), and, if it is a
      validator, its verdict. Honest peers hold bit-identical weights, so any
      other digest is a ban. (The optimizer state follows from the same
      agreed updates; a state that split silently shows in the weights at
      the next update.)
      Waiting for every commitment is the barrier: no data moves before it.
   3. ACCUSE. For each verdict that accuses, the accused broadcasts its
      step t-1 chunk, which is checked against its commitment. Every peer
      then re-executes the accused's gradient, and the guilty side is banned:
      the accused if the replay fails or disagrees, otherwise the accuser.
      The claim "I got no chunk" cannot be proven either way, so after it
      only a failed re-execution bans.
   4. SCATTER (point to point). Part k goes to the peer at position k of the
      sorted alive set, its aggregator, which checks size and hash.
   5. AGGREGATE. The aggregator computes the CenteredClip of the workers'
      copies of its part and broadcasts the result's SHA-256. Or it
      broadcasts complaints:
      * "no valid part from i": i must broadcast that part. If it is valid
        it is used; if not, i is banned.
      * "i's part is not finite": the aggregator broadcasts the part. It is
        pinned by i's hash, so a true claim bans i and a false one bans the
        aggregator. (vtrain's engine stops on a NaN, so an honest gradient
        has none. An Inf is treated alike: a gradient that overflowed means
        the run has diverged anyway.)
   6. ALL-GATHER. Each aggregated part is checked against its hash. The
      part travels in the same message as the hash (it goes to the same
      members at the same moment), but it is checked like a point-to-point
      copy: a peer that got none, or a wrong one, says so in its reveal,
      and the aggregator must then broadcast the part.
   7. MPRNG. Peers reveal the secrets they committed to in step 2, and
      r = SHA-256(step, round, all secrets in rank order). A withheld or wrong
      reveal is a ban and restarts the round. Biasing r therefore costs one
      banned peer per redraw.
   8. CHECK. z = Rademacher(r), over n*L coordinates. Each worker broadcasts,
      per part k, s_ik = <z_k, g_ik - agg_k> and nrm_ik = |g_ik - agg_k|. Both
      are binary64 sums in a fixed order (below), so anyone who holds g_ik
      gets the very same bits. Everyone checks per part that
      |sum_i c_ik s_ik| <= tol_k, with c_ik = min(1, tau / nrm_ik). A part that
      fails is AUDITED. Every worker broadcasts its copy (hash-checked), and
      everyone recomputes the CenteredClip and the scalars exactly. A wrong
      aggregate bans its aggregator, wrong scalars ban their worker, and a
      false alarm bans nobody.
   9. UPDATE. Every alive peer runs one more vt step on its main context.
      It writes the aggregate into its parameters' gradients (binary32
      values in the double storage, grad_fresh = 0) and runs the same
      vt_optim_step. The next step's commitment carries the new weights'
      digest.
      Every peer keeps x(t) and this step's commitments: at t+1 they are
      what the validators and any accusation check against.

   CENTEREDCLIP (vt_centered_clip), defined so that anyone can recompute it
   exactly.
   * Inputs are binary32. Rows that are absent or contain a NaN or an Inf are
     left out.
   * It starts at the coordinate-wise median. The tie rule: sort by the total
     order of binary32 bit patterns (-0 < +0) and take the lower middle.
   * Then, with equal weights, it iterates v += sum_i c_i (x_i - v) / m,
     where c_i = 1 if |x_i - v| <= tau and tau/|x_i - v| otherwise. All of it
     is binary64. Sums over rows run in row order. Sums over coordinates
     (norms) run in four lanes, lane = index mod 4, combined as
     (l0 + l1) + (l2 + l3): a fixed order with four independent chains.
   * It stops after cc_iters iterations (default 100), or as soon as
     |step| <= eps (|v| + tau), with eps = 2^-20. Both decisions use the same
     binary64 numbers on every machine, so the stop is bit-deterministic.
   * The result is rounded to binary32.
   vtrain compiles with -ffp-contract=off, so nothing is fused behind our
   back.

   THE PROJECTION TOLERANCE (step 8). R(v) = sum_i c_i(v)(g_i - v) is zero at
   the exact fixed point, and it is n-Lipschitz: each term's Jacobian has
   norm at most 1. At the stop, |R(v_old)| = m |step|, and so
   |R(v_new)| <= 2 m |step| <= 2 m eps (|v| + tau). Rounding v to binary32
   moves it by at most 2^-24 |v|. Hence
       |R(agg)| <= m (2 eps (|agg| + tau) + 2^-23 |agg|)  (x 1.01 for slack).
   For a Rademacher z, Hoeffding gives P(|<z, R>| > lambda |R|)
   <= 2 exp(-lambda^2 / 2): with lambda = 8 that is 2.5e-14 per part. To this
   bound we add the binary64 rounding of the scalars themselves,
   (L + 4) 2^-50 sum_i c_i sqrt(L) nrm_i. That gives tol_k.
   * If the iteration cap was hit, the honest residual may exceed tol_k.
     That is a false alarm: the audit finds the aggregate exact and bans
     nobody.
   * What the check cannot see is an aggregate off by less than roughly
     1e-5 of its norm. A lying aggregator can hide that much per step, and
     no more.
   * The exact audits and the validators have no such slack.

   SILENCE AND DEADLINES. Every wait has a deadline, and a message that has
   not come by then is silence, which is a ban. The deadlines follow a
   schedule. A round's phases add up budgets from its start (for round 0,
   from the step's start):
   * the commitments get compute_timeout + 2 timeout (time to compute, and
     for a validator to wait for its chunk first);
   * every exchange after that gets timeout;
   * the phase after a re-execution gets compute_timeout more.
   A wait that ends early, because everything came, moves the schedule to
   that moment: the last message reached all honest peers at about the same
   time. So a wait for a silent peer ends at the same moment on every honest
   peer, whatever each was busy with before (a validator first waits for
   its target's chunk): skews do not add up from phase to phase, and an
   honest peer that waited on the silent one is never itself late for the
   next phase.
   * Messages whose phase is over are dropped and counted as late, by
     sender. The bans they caused stand.
   * Sizes are checked before anything is read, so garbage, wrong sizes and
     NaN are attributed to their sender.
   * A peer that sees more than half of the others go silent at once
     concludes that it is the one cut off, and stops.

   WHAT THIS ASSUMES. The transport knows who sent a message (MPI and
   threads both do). The "broadcast" of the paper is a channel on which
   everyone receives the same bytes. Our transports send the same buffer to
   every member, and every decision is a function of broadcast data, so all
   honest peers take the same decisions.
   * Deadlines must be far longer than an honest peer's delay (synchrony).
     A message that lands right at a deadline could split honest views. The
     weights digest in every commitment would catch such a split.
   * Equivocation is excluded by the broadcast channel, as the paper
     assumes. A deployment over untrusted networks needs signatures plus an
     echo round; neither is here.
   * Sybil resistance is not here either.
   * Validators check step t-1, so a lie lands in one update before it is
     caught. As in the paper, nothing is rolled back; clipping bounds the
     damage.

   ATTACKS (vt_btard_attack; start step and period configurable; the
   paper's parameters where it gives them):
     sign_flip x-1000, random_direction (1000 x the norm of each tensor's
     gradient, seeded direction shared by all attackers), label_flip (the
     task flips y -> 9-y), delayed (the gradient of `delay` steps ago; the
     paper's 1000 needs a run longer than ours), ipm (-0.1 x the mean),
     alie (mean - z sd, z from Baruch et al.). ipm and alie need the honest
     mean: seeds and data are public, so an attacker can compute the honest
     gradients; ours compute `est` of them. Then: lying_aggregator
     (-10 x its aggregate), withhold_reveal, wrong_reveal, forged_log (a
     chunk that does not reproduce the committed gradient), nudge (one part
     x (1 + 1e-6): well inside any tolerance-based check, caught only by
     exact recomputation), and the bad inputs nan, garbage (random bytes in
     its parts), garbage_commit, wrong_size, late, silent, false_accuse.
     Attackers collude: as validators they accuse nobody (false_accuse
     accuses everyone).

   TRANSPORTS. vt_net is send / broadcast / receive-with-deadline. The
   in-process one (one thread per peer, a locked queue per peer) drives the
   tests and simulations. With -DVTRAIN_MPI, vt_net_mpi_create runs each
   peer as an MPI rank (mpirun -np 16).

   THE AUDIT CONTEXT'S STEP NUMBER. A chunk names its step, and the auditor
   accepts only chunks for its own next step. A validator's audit context
   does not step in lockstep with the target. So the validator first checks
   the chunk against the target's commitment, then "restamps" a copy with
   its own step number and checksum (the chunk format is in vtrain.h's
   >>log) before vt_feed_chunk. A vt_set_step() would make this unnecessary.
   Short chunks ("VTCR", whose record headers are the trainer's last full
   chunk's) replay too: an honest peer's gradient steps all have the same
   headers, and an auditor without a reference matches records by position
   and count. Either way the result is compared with the commitment.
   ========================================================================== */

/* --- small helpers ----------------------------------------------------------- */

/* little-endian integers on the wire (a plain load on little-endian hosts) */
static void vt__bt_p32(unsigned char *p, uint32_t v) {
    int i;
    if (vt__host_le()) { memcpy(p, &v, 4); return; }
    for (i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void vt__bt_p64(unsigned char *p, uint64_t v) {
    int i;
    if (vt__host_le()) { memcpy(p, &v, 8); return; }
    for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t vt__bt_g32(const unsigned char *p) {
    uint32_t v = 0;
    int i;
    if (vt__host_le()) { memcpy(&v, p, 4); return v; }
    for (i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static uint64_t vt__bt_g64(const unsigned char *p) {
    uint64_t v = 0;
    int i;
    if (vt__host_le()) { memcpy(&v, p, 8); return v; }
    for (i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static void vt__bt_pf64(unsigned char *p, double x) { uint64_t u; memcpy(&u, &x, 8); vt__bt_p64(p, u); }
static double vt__bt_gf64(const unsigned char *p) { uint64_t u = vt__bt_g64(p); double x; memcpy(&x, &u, 8); return x; }

/* binary32 arrays <-> little-endian bytes */
static void vt__bt_f2le(const float *x, int64_t n, unsigned char *o) {
    int64_t i;
    if (vt__host_le()) { memcpy(o, x, 4 * (size_t)n); return; }
    for (i = 0; i < n; i++) { uint32_t b; memcpy(&b, &x[i], 4); vt__bt_p32(o + 4 * i, b); }
}
static void vt__bt_le2f(const unsigned char *p, int64_t n, float *x) {
    int64_t i;
    if (vt__host_le()) { memcpy(x, p, 4 * (size_t)n); return; }
    for (i = 0; i < n; i++) { uint32_t b = vt__bt_g32(p + 4 * i); memcpy(&x[i], &b, 4); }
}
/* SHA-256 of n binary32 values as little-endian bytes */
static void vt__bt_hash_f32(const float *x, int64_t n, unsigned char out[32]) {
    if (vt__host_le()) vt_sha256(x, 4 * (size_t)n, out);
    else {
        unsigned char buf[4096];
        vt_sha256_ctx s;
        int64_t i = 0;
        vt_sha256_init(&s);
        while (i < n) {
            int64_t k = VT__MIN(n - i, 1024);
            vt__bt_f2le(x + i, k, buf);
            vt_sha256_update(&s, buf, 4 * (size_t)k);
            i += k;
        }
        vt_sha256_final(&s, out);
    }
}
/* SHA-256 of two messages of n bytes each (vt__sha256_update2: SHA-NI
   hashes the two side by side) */
static void vt__sha256_2(const void *pa, const void *pb, size_t n, unsigned char oa[32], unsigned char ob[32]) {
    vt_sha256_ctx a, b;
    vt_sha256_init(&a);
    vt_sha256_init(&b);
    vt__sha256_update2(&a, pa, &b, pb, n);
    vt_sha256_final(&a, oa);
    vt_sha256_final(&b, ob);
}
/* the n parts of L values at x (the commitments), two at a time */
static void vt__bt_hash_parts(const float *x, int n, int64_t L, unsigned char *out) {
    int k = 0;
    if (vt__host_le())
        for (; k + 1 < n; k += 2) vt__sha256_2(x + k * L, x + (k + 1) * L, 4 * (size_t)L, out + 32 * k, out + 32 * (k + 1));
    for (; k < n; k++) vt__bt_hash_f32(x + k * L, L, out + 32 * k);
}
static int vt__bt_finite(const float *x, int64_t n) {
    /* NaN and Inf: exponent all ones, and then adding 1 to the exponent
       carries into bit 31. Branch-free, eight values at a time. */
    uint32_t acc = 0, u[8];
    int64_t i = 0;
    int k;
#ifdef VT__AVX2
    {
        const __m256i ex = _mm256_set1_epi32(0x7f800000), one = _mm256_set1_epi32(0x00800000);
        __m256i A = _mm256_setzero_si256();
        for (; i + 8 <= n; i += 8) {
            A = _mm256_or_si256(A, _mm256_add_epi32(_mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i)), ex), one));
            if ((i & 511) == 0 && _mm256_movemask_ps(_mm256_castsi256_ps(A))) return 0;
        }
        if (_mm256_movemask_ps(_mm256_castsi256_ps(A))) return 0;
    }
#endif
    for (; i + 8 <= n; i += 8) {
        memcpy(u, x + i, sizeof u);
        for (k = 0; k < 8; k++) acc |= (u[k] & 0x7f800000u) + 0x00800000u;
        if (acc & 0x80000000u) return 0;
    }
    for (; i < n; i++) { memcpy(u, x + i, 4); acc |= (u[0] & 0x7f800000u) + 0x00800000u; }
    return !(acc & 0x80000000u);
}

VTDEF double vt_net_now(void) { return vt__now(); }

static void vt__bt_sleep(double s) {
#if defined(CLOCK_MONOTONIC) && !defined(VTRAIN_NO_THREADS)
    struct timespec ts;
    if (s <= 0) return;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
#else
    double t = vt_net_now() + s;
    while (vt_net_now() < t) { }
#endif
}

VTDEF void vt_net_free(void *p) { VT_FREE(p, NULL); }

typedef struct vt__bt_buf { unsigned char *p; size_t n, cap; } vt__bt_buf;
static int vt__bt_reserve(vt__bt_buf *b, size_t n) {
    if (n > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        unsigned char *q;
        while (c < n) c *= 2;
        q = (unsigned char *)VT_REALLOC(b->p, c, NULL);
        if (!q) return 0;
        b->p = q;
        b->cap = c;
    }
    return 1;
}
static int vt__bt_set(vt__bt_buf *b, const void *p, size_t n) {
    if (!vt__bt_reserve(b, n ? n : 1)) return 0;
    if (n) memcpy(b->p, p, n);
    b->n = n;
    return 1;
}

/* Tags: session(8) step(24) round(8) phase(8) sub(16). A message is matched
   by (sender, tag); everything of an earlier (session, step, round) is late. */
#define VT__BT_TAG(sess, step, round, phase, sub)                                                   \
    ((((uint64_t)(sess) & 0xFFu) << 56) | (((uint64_t)(step) & 0xFFFFFFu) << 32) |                  \
     (((uint64_t)(round) & 0xFFu) << 24) | (((uint64_t)(phase) & 0xFFu) << 16) | ((uint64_t)(sub) & 0xFFFFu))
#define VT__BT_BYE (~(uint64_t)0)

enum {
    VT__PH_CHUNK = 1, /* target -> its validator: last step's log chunk (p2p) */
    VT__PH_COMMIT,    /* hashes, MPRNG commitment, weights digest, verdict (bcast) */
    VT__PH_ACCPUB,    /* the accused's chunk (bcast) */
    VT__PH_PART,      /* a gradient part to its aggregator (p2p) */
    VT__PH_AGGH,      /* an aggregator's hash or complaints, and its aggregate (bcast) */
    VT__PH_PUB1,      /* a worker publishes a part it was said not to deliver (bcast) */
    VT__PH_PUB2,      /* an aggregator publishes a part it says is not finite (bcast) */
    VT__PH_AGGH2,     /* a complaining aggregator's hash and aggregate, after the publications (bcast) */
    VT__PH_REVEAL,    /* MPRNG reveal and all-gather complaints (bcast) */
    VT__PH_AGGPUB,    /* an aggregator publishes its aggregate (bcast) */
    VT__PH_SCALARS,   /* projection scalars (bcast) */
    VT__PH_AUDIT,     /* a worker publishes its copy of an audited part (bcast) */
    VT__PH_MPART,     /* plain all-reduce: part (p2p) */
    VT__PH_MAGG       /* plain all-reduce: mean (p2p) */
};

/* ==========================================================================
   >>inproc  the in-process transport: a queue per peer, a mutex and a
   condition variable on a monotonic clock; senders copy
   ========================================================================== */

typedef struct vt__bt_msg {
    struct vt__bt_msg *next;
    int from;
    uint64_t tag;
    size_t n;
    unsigned char *p;
    int inl; /* the header sits in p's block, after the payload: freeing p frees both */
} vt__bt_msg;

static VT__UNUSED void vt__bt_msg_free(vt__bt_msg *m) {
    unsigned char *p = m->p;
    if (!m->inl) VT_FREE(m, NULL);
    VT_FREE(p, NULL);
}

/* find and unlink the first message matching (from, tag) */
static VT__UNUSED vt__bt_msg *vt__bt_take(vt__bt_msg **head, vt__bt_msg **tail, int from, uint64_t tag) {
    vt__bt_msg *m, *prev = NULL;
    for (m = *head; m; prev = m, m = m->next)
        if (m->from == from && m->tag == tag) break;
    if (!m) return NULL;
    if (prev) prev->next = m->next;
    else *head = m->next;
    if (*tail == m) *tail = prev;
    m->next = NULL;
    return m;
}

/* drop every message with a tag below `tag`; count them per sender */
static VT__UNUSED int64_t vt__bt_purge(vt__bt_msg **head, vt__bt_msg **tail, uint64_t tag, size_t *pending, int64_t *late_from) {
    vt__bt_msg *m = *head, *prev = NULL;
    int64_t k = 0;
    while (m) {
        vt__bt_msg *nx = m->next;
        if (m->tag < tag) {
            if (prev) prev->next = nx;
            else *head = nx;
            if (*tail == m) *tail = prev;
            if (pending) pending[m->from] -= m->n;
            if (late_from) late_from[m->from]++;
            vt__bt_msg_free(m);
            k++;
        } else prev = m;
        m = nx;
    }
    return k;
}

static VT__UNUSED void vt__bt_free_list(vt__bt_msg *m) {
    while (m) { vt__bt_msg *nx = m->next; vt__bt_msg_free(m); m = nx; }
}

/* one allocation per message: the payload, then the header */
static VT__UNUSED vt__bt_msg *vt__bt_newmsg(int from, uint64_t tag, const void *p, size_t n) {
    size_t off = (n + 15) & ~(size_t)15;
    unsigned char *b = (unsigned char *)VT_MALLOC(off + sizeof(vt__bt_msg), NULL);
    vt__bt_msg *m;
    if (!b) return NULL;
    m = (vt__bt_msg *)(void *)(b + off);
    if (n) memcpy(b, p, n);
    m->p = b; m->n = n; m->from = from; m->tag = tag; m->next = NULL; m->inl = 1;
    return m;
}

/* recv for a transport with recv_set: a set of one */
static VT__UNUSED int vt__bt_recv_one(vt_net *t, int from, uint64_t tag, unsigned char **p, size_t *n, double deadline) {
    int got = 0;
    *p = NULL;
    *n = 0;
    if (from < 0 || from >= t->size) return -1;
    if (t->recv_set(t, &from, 1, tag, p, n, &got, deadline) < 0) return -1;
    return got;
}

#ifndef VTRAIN_NO_THREADS
typedef struct vt__bt_box {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    vt__bt_msg *head, *tail;
    size_t *pending;     /* bytes queued per sender */
    int64_t dropped;
    /* The owner sleeps until every message it waits for has come: want[from]
       marks the senders still missing under want_tag, want_left counts them,
       and the sender of the last one wakes it. One wake-up per gather, not
       one per message: with 16 peers on 2 cores each wake-up is a thread
       switch. */
    int waiting, want_left;
    uint64_t want_tag;
    unsigned char *want;    /* [n] */
} vt__bt_box;

typedef struct vt__bt_hub {
    int n, live;
    volatile int closed;  /* simulate: the honest peers are done; wake everyone */
    size_t max_msg, max_pending;
    vt__bt_box *box;
    vt_net *ep;
    vt_net **eps;
    pthread_mutex_t mu;
} vt__bt_hub;

static int vt__bt_ip_put(vt__bt_hub *h, int from, int to, uint64_t tag, const void *p, size_t n) {
    vt__bt_box *b;
    vt__bt_msg *m;
    int wake = 0;
    if (to < 0 || to >= h->n) return -1;
    b = &h->box[to];
    if (n > h->max_msg) {
        pthread_mutex_lock(&b->mu); b->dropped++; pthread_mutex_unlock(&b->mu);
        return 0;
    }
    m = vt__bt_newmsg(from, tag, p, n);
    if (!m) return -1;
    pthread_mutex_lock(&b->mu);
    if (b->pending[from] + n > h->max_pending) {
        b->dropped++;
        pthread_mutex_unlock(&b->mu);
        vt__bt_free_list(m);
        return 0;
    }
    if (b->tail) b->tail->next = m;
    else b->head = m;
    b->tail = m;
    b->pending[from] += n;
    if (b->waiting && b->want_tag == tag && b->want[from]) {
        b->want[from] = 0;
        wake = --b->want_left == 0;
    }
    pthread_mutex_unlock(&b->mu);
    /* after unlocking: the woken owner does not run into our lock (a spurious
       wake-up of a later wait only makes it look at its queue again) */
    if (wake) pthread_cond_signal(&b->cv);
    return 0;
}

static int vt__bt_ip_send(vt_net *t, int to, uint64_t tag, const void *p, size_t n) {
    vt__bt_hub *h = (vt__bt_hub *)t->impl;
    t->stats.sent_msgs++;
    t->stats.sent_bytes += (int64_t)n;
    return vt__bt_ip_put(h, t->rank, to, tag, p, n);
}

static int vt__bt_ip_bcast(vt_net *t, uint64_t tag, const void *p, size_t n, const unsigned char *to) {
    vt__bt_hub *h = (vt__bt_hub *)t->impl;
    int i, rc = 0;
    for (i = 0; i < h->n; i++)
        if (i != t->rank && (!to || to[i])) {
            t->stats.sent_msgs++;
            t->stats.sent_bytes += (int64_t)n;
            if (vt__bt_ip_put(h, t->rank, i, tag, p, n) < 0) rc = -1;
        }
    return rc;
}

/* A wait first yields the core (sched_yield) for VT__BT_YIELD_S seconds and
   looks again, then blocks. With more peers than cores the others run in
   the meantime, and a message that lands needs no wake-up (a futex wake and
   a context switch per phase, which made up a sixth of BTARD's extra CPU
   time with 16 peers on 2 cores); on a core of its own this is MPI's usual
   busy poll. A peer that waits out a silent one still sleeps. */
#ifndef VT__BT_YIELD_S
#define VT__BT_YIELD_S 2e-3
#endif
/* the messages (from[i], tag) for every i with from[i] >= 0, all against one
   deadline; got[i] = 1 for each that came (*p[i] owned by the caller) */
static int vt__bt_ip_recv_set(vt_net *t, const int *from, int cnt, uint64_t tag, unsigned char **p, size_t *n, int *got,
                              double deadline) {
    vt__bt_hub *h = (vt__bt_hub *)t->impl;
    vt__bt_box *b = &h->box[t->rank];
    int i, k = 0;
    double t0 = vt_net_now();
    for (i = 0; i < cnt; i++) {
        p[i] = NULL; n[i] = 0; got[i] = 0;
        if (from[i] >= h->n) return -1;
    }
    pthread_mutex_lock(&b->mu);
    for (;;) {
        int left = 0;
        double now;
        for (i = 0; i < cnt; i++) {
            vt__bt_msg *m;
            if (from[i] < 0 || got[i]) continue;
            m = vt__bt_take(&b->head, &b->tail, from[i], tag);
            if (!m) { b->want[from[i]] = 1; left++; continue; }
            b->pending[from[i]] -= m->n;
            p[i] = m->p; n[i] = m->n; got[i] = 1; k++;
            if (!m->inl) VT_FREE(m, NULL);
            t->stats.recv_msgs++;
            t->stats.recv_bytes += (int64_t)n[i];
        }
        now = vt_net_now();
        if (!left || now >= deadline || h->closed) break;
        if (now - t0 < VT__BT_YIELD_S) {
            pthread_mutex_unlock(&b->mu);
            sched_yield();
            pthread_mutex_lock(&b->mu);
            continue;
        }
        {
            struct timespec ts;
            double dl = deadline < now + 3600 ? deadline : now + 3600;
            ts.tv_sec = (time_t)dl;
            ts.tv_nsec = (long)((dl - (double)ts.tv_sec) * 1e9);
            if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
            b->waiting = 1;
            b->want_left = left;
            b->want_tag = tag;
            pthread_cond_timedwait(&b->cv, &b->mu, &ts);
            b->waiting = 0;
            for (i = 0; i < cnt; i++) if (from[i] >= 0) b->want[from[i]] = 0;
        }
    }
    for (i = 0; i < cnt; i++) if (from[i] >= 0) b->want[from[i]] = 0;
    pthread_mutex_unlock(&b->mu);
    return k;
}

static void vt__bt_ip_discard(vt_net *t, uint64_t tag, int64_t *late_from) {
    vt__bt_hub *h = (vt__bt_hub *)t->impl;
    vt__bt_box *b = &h->box[t->rank];
    int64_t k;
    pthread_mutex_lock(&b->mu);
    k = vt__bt_purge(&b->head, &b->tail, tag, b->pending, late_from);
    t->stats.dropped = b->dropped;
    pthread_mutex_unlock(&b->mu);
    t->stats.late += k;
}

static void vt__bt_ip_destroy(vt_net *t) {
    vt__bt_hub *h = (vt__bt_hub *)t->impl;
    int i, last;
    pthread_mutex_lock(&h->mu);
    last = --h->live == 0;
    pthread_mutex_unlock(&h->mu);
    if (!last) return;
    for (i = 0; i < h->n; i++) {
        vt__bt_free_list(h->box[i].head);
        VT_FREE(h->box[i].pending, NULL);
        VT_FREE(h->box[i].want, NULL);
        pthread_mutex_destroy(&h->box[i].mu);
        pthread_cond_destroy(&h->box[i].cv);
    }
    pthread_mutex_destroy(&h->mu);
    VT_FREE(h->box, NULL);
    VT_FREE(h->ep, NULL);
    VT_FREE(h->eps, NULL);
    VT_FREE(h, NULL);
}

VTDEF vt_net **vt_net_inproc_create(int n, size_t max_msg) {
    vt__bt_hub *h;
    int i;
    if (n < 1 || n > 4096) { vt__tls_fail(VT_ERR_ARG, "vt_net_inproc_create: %d peers (1..4096)", n); return NULL; }
    h = (vt__bt_hub *)VT_MALLOC(sizeof(vt__bt_hub), NULL);
    if (!h) { vt__tls_fail(VT_ERR_NOMEM, "vt_net_inproc_create: out of memory"); return NULL; }
    memset(h, 0, sizeof *h);
    h->n = h->live = n;
    h->max_msg = max_msg ? max_msg : ((size_t)64 << 20);
    h->max_pending = 4 * h->max_msg;
    h->box = (vt__bt_box *)VT_MALLOC(sizeof(vt__bt_box) * (size_t)n, NULL);
    h->ep = (vt_net *)VT_MALLOC(sizeof(vt_net) * (size_t)n, NULL);
    h->eps = (vt_net **)VT_MALLOC(sizeof(vt_net *) * (size_t)n, NULL);
    if (!h->box || !h->ep || !h->eps) {
        VT_FREE(h->box, NULL); VT_FREE(h->ep, NULL); VT_FREE(h->eps, NULL); VT_FREE(h, NULL);
        vt__tls_fail(VT_ERR_NOMEM, "vt_net_inproc_create: out of memory");
        return NULL;
    }
    pthread_mutex_init(&h->mu, NULL);
    for (i = 0; i < n; i++) {
        vt__bt_box *b = &h->box[i];
        pthread_condattr_t ca;
        memset(b, 0, sizeof *b);
        pthread_mutex_init(&b->mu, NULL);
        pthread_condattr_init(&ca);
#if defined(CLOCK_MONOTONIC)
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
#endif
        pthread_cond_init(&b->cv, &ca);
        pthread_condattr_destroy(&ca);
        b->pending = (size_t *)VT_MALLOC(sizeof(size_t) * (size_t)n, NULL);
        if (b->pending) memset(b->pending, 0, sizeof(size_t) * (size_t)n);
        b->want = (unsigned char *)VT_MALLOC((size_t)n, NULL);
        if (b->want) memset(b->want, 0, (size_t)n);
        memset(&h->ep[i], 0, sizeof(vt_net));
        h->ep[i].rank = i;
        h->ep[i].size = n;
        h->ep[i].send = vt__bt_ip_send;
        h->ep[i].bcast = vt__bt_ip_bcast;
        h->ep[i].recv = vt__bt_recv_one;
        h->ep[i].recv_set = vt__bt_ip_recv_set;
        h->ep[i].discard_before = vt__bt_ip_discard;
        h->ep[i].destroy = vt__bt_ip_destroy;
        h->ep[i].impl = h;
        h->eps[i] = &h->ep[i];
    }
    for (i = 0; i < n; i++)
        if (!h->box[i].pending || !h->box[i].want) { h->live = 1; vt__bt_ip_destroy(&h->ep[0]); vt__tls_fail(VT_ERR_NOMEM, "out of memory"); return NULL; }
    return h->eps;
}
#else
VTDEF vt_net **vt_net_inproc_create(int n, size_t max_msg) {
    (void)n; (void)max_msg;
    vt__tls_fail(VT_ERR_BACKEND, "vt_net_inproc_create: built with VTRAIN_NO_THREADS (the in-process transport needs threads)");
    return NULL;
}
#endif

/* ==========================================================================
   >>mpi  the MPI transport (VTRAIN_MPI): every message is one MPI_BYTE
   message with one MPI tag, carrying [u64 tag][payload]; the source rank
   comes from MPI, so nobody can speak for another. Sends are MPI_Isend
   (never block on a slow or banned peer); receiving polls MPI_Iprobe into a
   local queue. destroy() drains: it sends BYE to everyone and keeps
   receiving until every rank's BYE is in and its own sends are done, so
   MPI_Finalize finds no traffic in flight.
   ========================================================================== */
#ifdef VTRAIN_MPI
#define VT__BT_MPI_TAG 4242

/* a send in flight; the sends of one broadcast share their buffer, which
   holds [int: sends not yet done][pad to 16][u64 tag][payload] */
typedef struct vt__bt_mpis { MPI_Request req; unsigned char *buf; struct vt__bt_mpis *next; } vt__bt_mpis;
#define VT__BT_MPI_HDR 16
static void vt__bt_mpi_unref(unsigned char *buf) {
    int left;
    memcpy(&left, buf, sizeof left);
    if (--left == 0) VT_FREE(buf, NULL);
    else memcpy(buf, &left, sizeof left);
}
static void vt__bt_mpi_done(vt__bt_mpis *d) {
    vt__bt_mpi_unref(d->buf);
    VT_FREE(d, NULL);
}

typedef struct vt__bt_mpi {
    MPI_Comm comm;
    vt__bt_msg *head, *tail;
    size_t *pending;
    size_t max_msg, max_pending;
    vt__bt_mpis *sends;
    unsigned char *bye;
} vt__bt_mpi;

static void vt__bt_mpi_poll(vt_net *t) {
    vt__bt_mpi *m = (vt__bt_mpi *)t->impl;
    vt__bt_mpis **sp;
    for (;;) {
        int flag = 0, cnt = 0, from;
        MPI_Status st;
        unsigned char *buf;
        uint64_t tag;
        size_t n;
        MPI_Iprobe(MPI_ANY_SOURCE, VT__BT_MPI_TAG, m->comm, &flag, &st);
        if (!flag) break;
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        from = st.MPI_SOURCE;
        buf = (unsigned char *)VT_MALLOC(cnt > 0 ? (size_t)cnt : 1, NULL);
        if (!buf) { MPI_Recv(NULL, 0, MPI_BYTE, from, VT__BT_MPI_TAG, m->comm, MPI_STATUS_IGNORE); t->stats.dropped++; continue; }
        MPI_Recv(buf, cnt, MPI_BYTE, from, VT__BT_MPI_TAG, m->comm, MPI_STATUS_IGNORE);
        if (cnt < 8) { t->stats.garbage++; VT_FREE(buf, NULL); continue; }
        tag = vt__bt_g64(buf);
        if (tag == VT__BT_BYE) { m->bye[from] = 1; VT_FREE(buf, NULL); continue; }
        n = (size_t)cnt - 8;
        if (n > m->max_msg || m->pending[from] + n > m->max_pending) { t->stats.dropped++; VT_FREE(buf, NULL); continue; }
        {
            vt__bt_msg *q = (vt__bt_msg *)VT_MALLOC(sizeof(vt__bt_msg), NULL);
            if (!q) { t->stats.dropped++; VT_FREE(buf, NULL); continue; }
            memmove(buf, buf + 8, n);
            q->p = buf; q->n = n; q->from = from; q->tag = tag; q->next = NULL; q->inl = 0;
            if (m->tail) m->tail->next = q;
            else m->head = q;
            m->tail = q;
            m->pending[from] += n;
        }
    }
    for (sp = &m->sends; *sp;) {
        int done = 0;
        MPI_Test(&(*sp)->req, &done, MPI_STATUS_IGNORE);
        if (done) { vt__bt_mpis *d = *sp; *sp = d->next; vt__bt_mpi_done(d); }
        else sp = &(*sp)->next;
    }
}

/* one buffer, sent to every rank with to[rank] set (to == NULL: all but me;
   only = -1), or to rank `only` */
static int vt__bt_mpi_dest(const vt_net *t, int only, const unsigned char *to, int i) {
    return only < 0 ? i != t->rank && (!to || to[i]) : i == only;
}
static int vt__bt_mpi_post(vt_net *t, int only, const unsigned char *to, uint64_t tag, const void *p, size_t n) {
    vt__bt_mpi *m = (vt__bt_mpi *)t->impl;
    unsigned char *buf;
    int i, cnt = 0, rc = 0;
    if (n > (size_t)0x7fffff00) return -1;
    for (i = 0; i < t->size; i++) cnt += vt__bt_mpi_dest(t, only, to, i);
    if (!cnt) return 0;
    buf = (unsigned char *)VT_MALLOC(VT__BT_MPI_HDR + 8 + n, NULL);
    if (!buf) return -1;
    memcpy(buf, &cnt, sizeof cnt);
    vt__bt_p64(buf + VT__BT_MPI_HDR, tag);
    if (n) memcpy(buf + VT__BT_MPI_HDR + 8, p, n);
    for (i = 0; i < t->size; i++) {
        vt__bt_mpis *s;
        if (!vt__bt_mpi_dest(t, only, to, i)) continue;
        s = (vt__bt_mpis *)VT_MALLOC(sizeof(vt__bt_mpis), NULL);
        if (!s) { vt__bt_mpi_unref(buf); rc = -1; continue; } /* not sent: done */
        s->buf = buf;
        MPI_Isend(buf + VT__BT_MPI_HDR, (int)(n + 8), MPI_BYTE, i, VT__BT_MPI_TAG, m->comm, &s->req);
        s->next = m->sends;
        m->sends = s;
        t->stats.sent_msgs++;
        t->stats.sent_bytes += (int64_t)n;
    }
    return rc;
}

static int vt__bt_mpi_send(vt_net *t, int to, uint64_t tag, const void *p, size_t n) {
    if (to < 0 || to >= t->size) return -1;
    return vt__bt_mpi_post(t, to, NULL, tag, p, n);
}

static int vt__bt_mpi_bcast(vt_net *t, uint64_t tag, const void *p, size_t n, const unsigned char *to) {
    return vt__bt_mpi_post(t, -1, to, tag, p, n);
}

/* Waiting: poll, yielding the core between polls for VT__BT_YIELD_S (see
   the in-process transport), then nap, 5 us growing to 200 us. */
static int vt__bt_mpi_recv_set(vt_net *t, const int *from, int cnt, uint64_t tag, unsigned char **p, size_t *n, int *got,
                               double deadline) {
    vt__bt_mpi *m = (vt__bt_mpi *)t->impl;
    double t0 = vt_net_now(), nap = 5e-6;
    int i, k = 0;
    for (i = 0; i < cnt; i++) {
        p[i] = NULL; n[i] = 0; got[i] = 0;
        if (from[i] >= t->size) return -1;
    }
    for (;;) {
        int left = 0;
        double now;
        vt__bt_mpi_poll(t);
        for (i = 0; i < cnt; i++) {
            vt__bt_msg *q;
            if (from[i] < 0 || got[i]) continue;
            if (!(q = vt__bt_take(&m->head, &m->tail, from[i], tag))) { left++; continue; }
            m->pending[from[i]] -= q->n;
            p[i] = q->p; n[i] = q->n; got[i] = 1; k++;
            VT_FREE(q, NULL);
            t->stats.recv_msgs++;
            t->stats.recv_bytes += (int64_t)n[i];
        }
        now = vt_net_now();
        if (!left || now >= deadline) break;
#ifndef VTRAIN_NO_THREADS
        if (now - t0 < VT__BT_YIELD_S) { sched_yield(); continue; }
#endif
        vt__bt_sleep(nap);
        if (nap < 2e-4) nap *= 2;
    }
    return k;
}

static void vt__bt_mpi_discard(vt_net *t, uint64_t tag, int64_t *late_from) {
    vt__bt_mpi *m = (vt__bt_mpi *)t->impl;
    vt__bt_mpi_poll(t);
    t->stats.late += vt__bt_purge(&m->head, &m->tail, tag, m->pending, late_from);
}

static void vt__bt_mpi_destroy(vt_net *t) {
    vt__bt_mpi *m = (vt__bt_mpi *)t->impl;
    double until = vt_net_now() + 120;
    int i;
    vt__bt_mpi_bcast(t, VT__BT_BYE, NULL, 0, NULL);
    for (;;) {
        int all = 1;
        vt__bt_mpi_poll(t);
        for (i = 0; i < t->size; i++) if (i != t->rank && !m->bye[i]) all = 0;
        if ((all && !m->sends) || vt_net_now() > until) break;
        vt__bt_sleep(1e-4);
    }
    while (m->sends) { /* give up on what never completed (a dead rank) */
        vt__bt_mpis *d = m->sends;
        m->sends = d->next;
        MPI_Cancel(&d->req);
        MPI_Request_free(&d->req);
        vt__bt_mpi_done(d);
    }
    vt__bt_free_list(m->head);
    MPI_Comm_free(&m->comm);
    VT_FREE(m->pending, NULL);
    VT_FREE(m->bye, NULL);
    VT_FREE(m, NULL);
    VT_FREE(t, NULL);
}

VTDEF vt_net *vt_net_mpi_create(size_t max_msg) {
    vt_net *t = (vt_net *)VT_MALLOC(sizeof(vt_net), NULL);
    vt__bt_mpi *m = (vt__bt_mpi *)VT_MALLOC(sizeof(vt__bt_mpi), NULL);
    int rank, size;
    if (!t || !m) { VT_FREE(t, NULL); VT_FREE(m, NULL); vt__tls_fail(VT_ERR_NOMEM, "vt_net_mpi_create: out of memory"); return NULL; }
    memset(t, 0, sizeof *t);
    memset(m, 0, sizeof *m);
    MPI_Comm_dup(MPI_COMM_WORLD, &m->comm);
    MPI_Comm_rank(m->comm, &rank);
    MPI_Comm_size(m->comm, &size);
    m->max_msg = max_msg ? max_msg : ((size_t)64 << 20);
    m->max_pending = 4 * m->max_msg;
    m->pending = (size_t *)VT_MALLOC(sizeof(size_t) * (size_t)size, NULL);
    m->bye = (unsigned char *)VT_MALLOC((size_t)size, NULL);
    if (!m->pending || !m->bye) {
        MPI_Comm_free(&m->comm);
        VT_FREE(m->pending, NULL); VT_FREE(m->bye, NULL); VT_FREE(m, NULL); VT_FREE(t, NULL);
        vt__tls_fail(VT_ERR_NOMEM, "vt_net_mpi_create: out of memory");
        return NULL;
    }
    memset(m->pending, 0, sizeof(size_t) * (size_t)size);
    memset(m->bye, 0, (size_t)size);
    t->rank = rank;
    t->size = size;
    t->send = vt__bt_mpi_send;
    t->bcast = vt__bt_mpi_bcast;
    t->recv = vt__bt_recv_one;
    t->recv_set = vt__bt_mpi_recv_set;
    t->discard_before = vt__bt_mpi_discard;
    t->destroy = vt__bt_mpi_destroy;
    t->impl = m;
    return t;
}
#endif /* VTRAIN_MPI */

/* ==========================================================================
   >>cclip  CenteredClip (see >>btard for the definition)
   ========================================================================== */

/* binary32 bit patterns in their total order (-NaN < -Inf < ... < -0 < +0 < ...) */
static uint32_t vt__bt_okey(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
static float vt__bt_unokey(uint32_t k) {
    uint32_t b = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* Sums over coordinates run in four lanes (lane = index mod 4), combined as
   (l0 + l1) + (l2 + l3): a fixed order, so anyone gets the same bits, and
   four independent chains instead of one. */
static double vt__bt_dist2(const float *x, const double *v, int64_t L) {
    double q[4] = {0, 0, 0, 0};
    int64_t j = 0;
#ifdef VT__AVX2 /* the four lanes in one register: the same sums */
    __m256d Q = _mm256_setzero_pd();
    for (; j + 4 <= L; j += 4) {
        __m256d d = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + j)), _mm256_loadu_pd(v + j));
        Q = _mm256_add_pd(Q, _mm256_mul_pd(d, d));
    }
    _mm256_storeu_pd(q, Q);
#endif
    for (; j < L; j++) { double d = (double)x[j] - v[j]; q[j & 3] += d * d; }
    return (q[0] + q[1]) + (q[2] + q[3]);
}
/* vt__bt_dist2 of four rows at once: four independent chains, each in the
   order above (the same bits, four times the throughput) */
static void vt__bt_dist2x4(const float *const *x, const double *v, int64_t L, double out[4]) {
    double q[4][4];
    int r;
    int64_t j = 0;
    memset(q, 0, sizeof q);
#ifdef VT__AVX2
    {
        __m256d Q0 = _mm256_setzero_pd(), Q1 = Q0, Q2 = Q0, Q3 = Q0;
        for (; j + 4 <= L; j += 4) {
            __m256d vj = _mm256_loadu_pd(v + j);
            __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x[0] + j)), vj);
            __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x[1] + j)), vj);
            __m256d d2 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x[2] + j)), vj);
            __m256d d3 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x[3] + j)), vj);
            Q0 = _mm256_add_pd(Q0, _mm256_mul_pd(d0, d0));
            Q1 = _mm256_add_pd(Q1, _mm256_mul_pd(d1, d1));
            Q2 = _mm256_add_pd(Q2, _mm256_mul_pd(d2, d2));
            Q3 = _mm256_add_pd(Q3, _mm256_mul_pd(d3, d3));
        }
        _mm256_storeu_pd(q[0], Q0); _mm256_storeu_pd(q[1], Q1); _mm256_storeu_pd(q[2], Q2); _mm256_storeu_pd(q[3], Q3);
    }
#endif
    for (r = 0; r < 4; r++) {
        int64_t k;
        for (k = j; k < L; k++) { double d = (double)x[r][k] - v[k]; q[r][k & 3] += d * d; }
        out[r] = (q[r][0] + q[r][1]) + (q[r][2] + q[r][3]);
    }
}

/* one CenteredClip move, in the defined order: per coordinate j,
   st = (c_0 (x_0 - v) + c_1 (x_1 - v) + ... over the valid rows in order) / nv
   and v += st; then s2 = |st|^2 and v2 = |v|^2, each summed as vt__bt_dist2
   sums (lane j % 4, (l0 + l1) + (l2 + l3)), in the same pass. */
static void vt__cc_move(const float *const *x, const double *c, int nr, double *v, int64_t L, double *s2, double *v2) {
    double qs[4] = {0, 0, 0, 0}, qv[4] = {0, 0, 0, 0}, nv = (double)nr;
    int i;
    int64_t j = 0;
#ifdef VT__AVX2
    {
        __m256d S2 = _mm256_setzero_pd(), V2 = S2, N = _mm256_set1_pd(nv);
        /* sixteen coordinates at a time: four independent row sums (the
           rest below, one at a time, continues each lane j % 4 in order) */
        for (; j + 16 <= L; j += 16) {
            __m256d v0 = _mm256_loadu_pd(v + j), v1 = _mm256_loadu_pd(v + j + 4), v2_ = _mm256_loadu_pd(v + j + 8), v3 = _mm256_loadu_pd(v + j + 12);
            __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0, t;
            for (i = 0; i < nr; i++) {
                __m256d ci = _mm256_set1_pd(c[i]);
                const float *xi = x[i] + j;
                a0 = _mm256_add_pd(a0, _mm256_mul_pd(ci, _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(xi)), v0)));
                a1 = _mm256_add_pd(a1, _mm256_mul_pd(ci, _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(xi + 4)), v1)));
                a2 = _mm256_add_pd(a2, _mm256_mul_pd(ci, _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(xi + 8)), v2_)));
                a3 = _mm256_add_pd(a3, _mm256_mul_pd(ci, _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(xi + 12)), v3)));
            }
            /* in coordinate order, as the loop below would */
            t = _mm256_div_pd(a0, N); v0 = _mm256_add_pd(v0, t); S2 = _mm256_add_pd(S2, _mm256_mul_pd(t, t)); V2 = _mm256_add_pd(V2, _mm256_mul_pd(v0, v0));
            t = _mm256_div_pd(a1, N); v1 = _mm256_add_pd(v1, t); S2 = _mm256_add_pd(S2, _mm256_mul_pd(t, t)); V2 = _mm256_add_pd(V2, _mm256_mul_pd(v1, v1));
            t = _mm256_div_pd(a2, N); v2_ = _mm256_add_pd(v2_, t); S2 = _mm256_add_pd(S2, _mm256_mul_pd(t, t)); V2 = _mm256_add_pd(V2, _mm256_mul_pd(v2_, v2_));
            t = _mm256_div_pd(a3, N); v3 = _mm256_add_pd(v3, t); S2 = _mm256_add_pd(S2, _mm256_mul_pd(t, t)); V2 = _mm256_add_pd(V2, _mm256_mul_pd(v3, v3));
            _mm256_storeu_pd(v + j, v0); _mm256_storeu_pd(v + j + 4, v1); _mm256_storeu_pd(v + j + 8, v2_); _mm256_storeu_pd(v + j + 12, v3);
        }
        _mm256_storeu_pd(qs, S2);
        _mm256_storeu_pd(qv, V2);
    }
#endif
    for (; j < L; j++) {
        double acc = 0, st;
        for (i = 0; i < nr; i++) acc += c[i] * ((double)x[i][j] - v[j]);
        st = acc / nv;
        v[j] += st;
        qs[j & 3] += st * st;
        qv[j & 3] += v[j] * v[j];
    }
    *s2 = (qs[0] + qs[1]) + (qs[2] + qs[3]);
    *v2 = (qv[0] + qv[1]) + (qv[2] + qv[3]);
}

VTDEF vt_status vt_centered_clip(const float *const *rows, int m, int64_t L, double tau, int max_iters,
                                 double eps, float *out, vt_cclip_info *info) {
    vt_cclip_info inf;
    unsigned char *ok = NULL;
    double *v = NULL, *c = NULL;
    const float **vr = NULL; /* the valid rows */
    uint32_t *keys = NULL;
    int i, nv = 0, it, nvr;
    int64_t j;
    memset(&inf, 0, sizeof inf);
    if (info) *info = inf;
    if (m < 0 || L < 0 || !(tau > 0) || (L > 0 && !out) || (m > 0 && !rows))
        return vt__tls_fail(VT_ERR_ARG, "vt_centered_clip: bad arguments (m %d, L %lld, tau %g)", m, (long long)L, tau);
    if (max_iters <= 0) max_iters = 100;
    if (!(eps > 0)) eps = 0x1p-20;
    if (L == 0) return VT_OK;
    ok = (unsigned char *)VT_MALLOC((size_t)(m ? m : 1), NULL);
    v = (double *)VT_MALLOC(sizeof(double) * (size_t)L, NULL);
    vr = (const float **)VT_MALLOC(sizeof(float *) * (size_t)(m ? m : 1), NULL);
    c = (double *)VT_MALLOC(sizeof(double) * (size_t)(m ? m : 1), NULL);
    {
        size_t P = 1;
        while (P < (size_t)(m ? m : 1)) P <<= 1;
        keys = (uint32_t *)VT_MALLOC(sizeof(uint32_t) * 64 * P, NULL);
    }
    if (!ok || !v || !vr || !c || !keys) {
        VT_FREE(ok, NULL); VT_FREE(v, NULL); VT_FREE((void *)vr, NULL); VT_FREE(c, NULL); VT_FREE(keys, NULL);
        return vt__tls_fail(VT_ERR_NOMEM, "vt_centered_clip: out of memory");
    }
    for (i = 0; i < m; i++) {
        ok[i] = rows[i] != NULL && vt__bt_finite(rows[i], L);
        nv += ok[i];
    }
    inf.valid = nv;
    if (!nv) {
        for (j = 0; j < L; j++) out[j] = 0.0f;
    } else {
        /* the coordinate-wise median: lower middle in the total order of bits,
           64 coordinates at a time through Batcher's odd-even merge sort
           (rows padded to a power of two with the largest key) */
        int P = 1, pp, kk, a, q, lo = (nv - 1) / 2, pass, ncmp = 0, *cmp = NULL;
        int64_t j0;
        while (P < nv) P <<= 1;
        for (i = 0, nvr = 0; i < m; i++) if (ok[i]) vr[nvr++] = rows[i];
        /* the network's comparators (row pairs), listed once: count, then fill */
        for (pass = 0; pass < 2; pass++) {
            ncmp = 0;
            for (pp = 1; pp < P; pp <<= 1)
                for (kk = pp; kk >= 1; kk >>= 1)
                    for (a = kk % pp; a + kk < P; a += 2 * kk)
                        for (q = 0; q < kk && a + q + kk < P; q++)
                            if ((a + q) / (2 * pp) == (a + q + kk) / (2 * pp)) {
                                if (pass) { cmp[2 * ncmp] = a + q; cmp[2 * ncmp + 1] = a + q + kk; }
                                ncmp++;
                            }
            if (!pass && !(cmp = (int *)VT_MALLOC(sizeof(int) * 2 * (size_t)(ncmp + 1), NULL))) {
                VT_FREE(ok, NULL); VT_FREE(v, NULL); VT_FREE((void *)vr, NULL); VT_FREE(c, NULL); VT_FREE(keys, NULL);
                return vt__tls_fail(VT_ERR_NOMEM, "vt_centered_clip: out of memory");
            }
        }
        for (j0 = 0; j0 < L; j0 += 64) {
            int B = (int)VT__MIN(64, L - j0), r, b;
            for (r = 0; r < nv; r++)
                for (b = 0; b < B; b++) keys[r * 64 + b] = vt__bt_okey(vr[r][j0 + b]);
            for (; r < P; r++) for (b = 0; b < 64; b++) keys[r * 64 + b] = 0xFFFFFFFFu;
            for (q = 0; q < ncmp; q++) {
                uint32_t *x = keys + cmp[2 * q] * 64, *y = keys + cmp[2 * q + 1] * 64;
                for (b = 0; b < 64; b++) {
                    uint32_t u = x[b], v2 = y[b];
                    x[b] = u < v2 ? u : v2;
                    y[b] = u < v2 ? v2 : u;
                }
            }
            for (b = 0; b < B; b++) v[j0 + b] = (double)vt__bt_unokey(keys[lo * 64 + b]);
        }
        VT_FREE(cmp, NULL);
        for (it = 0; it < max_iters; it++) {
            double s2, v2;
            int clipped = 0;
            for (i = 0; i < nv; i += 4) {
                double nrm[4];
                int k;
                if (i + 4 <= nv) vt__bt_dist2x4(vr + i, v, L, nrm);
                else for (k = 0; i + k < nv; k++) nrm[k] = vt__bt_dist2(vr[i + k], v, L);
                for (k = 0; k < 4 && i + k < nv; k++) {
                    nrm[k] = sqrt(nrm[k]);
                    c[i + k] = nrm[k] <= tau ? 1.0 : tau / nrm[k];
                    clipped += nrm[k] > tau;
                }
            }
            vt__cc_move(vr, c, nv, v, L, &s2, &v2);
            inf.iters = it + 1;
            inf.clipped = clipped;
            inf.last_step = sqrt(s2);
            if (inf.last_step <= eps * (sqrt(v2) + tau)) break;
        }
        for (j = 0; j < L; j++) out[j] = (float)v[j];
    }
    VT_FREE(ok, NULL); VT_FREE(v, NULL); VT_FREE((void *)vr, NULL); VT_FREE(c, NULL); VT_FREE(keys, NULL);
    if (info) *info = inf;
    return VT_OK;
}

/* ==========================================================================
   >>attacks  attacks, reasons
   ========================================================================== */

static const char *vt__bt_attack_names[] = {
#define VT__X(name, str) str,
    VT__BTARD_ATTACK_LIST(VT__X)
#undef VT__X
};
static const char *vt__bt_reason_names[] = {
#define VT__X(name, str) #name,
    VT__BTARD_REASON_LIST(VT__X)
#undef VT__X
};
static const char *vt__bt_reason_msgs[] = {
#define VT__X(name, str) str,
    VT__BTARD_REASON_LIST(VT__X)
#undef VT__X
};

VTDEF const char *vt_btard_attack_name(vt_btard_attack_kind k) {
    return (unsigned)k < VT_ATTACK_COUNT ? vt__bt_attack_names[k] : "?";
}
VTDEF int vt_btard_attack_parse(const char *name) {
    int i;
    for (i = 0; name && i < VT_ATTACK_COUNT; i++)
        if (!strcmp(name, vt__bt_attack_names[i])) return i;
    return -1;
}
VTDEF const char *vt_btard_reason_name(vt_btard_reason r) { return (unsigned)r < VT_BAN_COUNT ? vt__bt_reason_names[r] : "?"; }
VTDEF const char *vt_btard_reason_message(vt_btard_reason r) { return (unsigned)r < VT_BAN_COUNT ? vt__bt_reason_msgs[r] : "?"; }

VTDEF vt_btard_attack vt_btard_attack_default(vt_btard_attack_kind k) {
    vt_btard_attack a;
    memset(&a, 0, sizeof a);
    a.kind = k;
    a.period = 1;
    a.delay = 1000;
    a.seed = 0x5eed;
    a.est = 3;
    switch (k) {
    case VT_ATTACK_SIGN_FLIP: a.scale = -1000; break;
    case VT_ATTACK_RANDOM_DIRECTION: a.scale = 1000; break;
    case VT_ATTACK_IPM: a.scale = 0.1; break;
    case VT_ATTACK_ALIE: a.scale = 1.0; break;
    case VT_ATTACK_LYING_AGGREGATOR: a.scale = -10; break;
    case VT_ATTACK_SPIKE: a.scale = 1e6; break;
    case VT_ATTACK_NUDGE: a.scale = 1e-6; break;
    default: break;
    }
    return a;
}

VTDEF double vt_btard_alie_z(int n, int f) {
    int s = n / 2 + 1 - f;
    double p = (double)(n - s) / (double)n, lo = -10, hi = 10;
    int i;
    if (p >= 1) return 10;
    if (p <= 0) return -10;
    for (i = 0; i < 200; i++) { /* Phi(x) = erfc(-x/sqrt 2)/2 is increasing */
        double mid = 0.5 * (lo + hi);
        if (0.5 * erfc(-mid / sqrt(2.0)) < p) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

VTDEF int vt_btard_attacking(const vt_btard_attack *a, int64_t t) {
    if (!a || a->kind == VT_ATTACK_NONE || t < a->start) return 0;
    return a->period <= 1 || (t - a->start) % a->period == 0;
}

VTDEF vt_btard_cfg vt_btard_cfg_default(void) {
    vt_btard_cfg c;
    memset(&c, 0, sizeof c);
    return c;
}

/* ==========================================================================
   >>peer  the peer: roles, work, the rounds of a step, the update
   ========================================================================== */

enum { VT__V_OK = 0, VT__V_NOCHUNK, VT__V_BADCHUNK, VT__V_GRADIENT, VT__V_SCALARS };

struct vt_btard_peer {
    vt_btard_cfg cfg;
    vt_btard_task task;
    vt_btard_attack atk;
    vt_net *net;
    int rank, N;
    vt_status status;
    char msg[512];
    /* engine: M trains (weights, optimizer, log chunks), A replays others */
    vt_ctx *M, *A;
    void *mm, *ma;
    vt_optim *opt;
    int np;
    int64_t d;
    int64_t *poff;            /* [np + 1] parameter offsets in the flat vector */
    /* membership */
    unsigned char *alive;     /* [N] */
    int64_t step;
    int n, me;                /* alive peers this round, my position */
    int *mem;                 /* [N] their ranks, ascending */
    int *wk;                  /* [N] by position: the rank if a worker, else -1 */
    int *pos;                 /* [N] rank -> position, -1 */
    unsigned char *val;       /* [N] by rank: validator this step */
    int64_t L;                /* part length */
    /* this step */
    int worker;
    float *g;                 /* [d] my gradient as committed */
    float *gt;                /* [d] my honest gradient */
    float *gp;                /* [d + N] the gradient padded to n*L */
    float *tmpf;              /* [d + N] scratch */
    vt__bt_buf chunk, chunk_prev, tmp;
    unsigned char chunk_sha[32];  /* SHA-256 of chunk (the whole bytes) */
    float *w_cur, *w_prev;    /* [d] x(t), x(t-1) */
    unsigned char wdig[32];
    int nvp, *vv, *vtg;       /* validation pairs (validator, target ranks) */
    int vcode, acc_done;
    /* round state, by position */
    unsigned char *c_has, *c_parts, *c_chunk, *c_mprng; /* [N] [N*N*32] [N*32] [N*32] */
    int *c_vt, *c_vc;
    unsigned char *a_hash, *a_stat;  /* [N*32] [N*N]: aggregator a's verdict on worker w's part */
    unsigned char x_mine[32];
    unsigned char *r_x, *r_comp;     /* [N*32] [N*N]: peer i got no valid aggregate from a */
    double *sc;                      /* [N*N*2] worker w's (s, nrm) for part k */
    float *agg;                      /* [d + N] */
    float *rows;                     /* [d + N] parts received as aggregator */
    unsigned char r[32];
    /* the previous step, as it ended */
    int pv_ok, pv_n;
    int64_t pv_L, pv_step;
    int *pv_mem;
    unsigned char *pv_has, *pv_parts, *pv_chunk;
    double *pv_sc;
    float *pv_agg;
    unsigned char pv_r[32];
    /* attacks */
    float *ring;                     /* delayed: (delay + 1) * d */
    int64_t ring_len;
    double *est1, *est2;             /* ipm, alie: sums */
    /* book-keeping */
    vt_btard_event *ev;
    int nev, cev;
    vt_btard_stats st;
    int64_t *late;
    double sched;              /* the current phase's deadline (see vt__bt_gather) */
    int *g_from, *g_got;       /* [N] vt__bt_gather's scratch for recv_set */
    unsigned char **g_p;
    size_t *g_n;
    unsigned char *hs;         /* [N*32] hashes of received or recomputed parts */
    int nbans;
    uint64_t secret;
};

static void vt__bt_fail(vt_btard_peer *p, vt_status s, const char *fmt, ...) VT__PRINTF(3, 4);
static void vt__bt_fail(vt_btard_peer *p, vt_status s, const char *fmt, ...) {
    va_list ap;
    if (p->status != VT_OK) return;
    va_start(ap, fmt);
    vsnprintf(p->msg, sizeof p->msg, fmt, ap);
    va_end(ap);
    p->status = s;
}

static void vt__bt_event(vt_btard_peer *p, int rd, vt_btard_event_kind k, int peer, int by, vt_btard_reason why, int64_t count) {
    vt_btard_event *e;
    if (p->nev == p->cev) {
        int c = p->cev ? 2 * p->cev : 64;
        vt_btard_event *q = (vt_btard_event *)VT_REALLOC(p->ev, sizeof(vt_btard_event) * (size_t)c, NULL);
        if (!q) return;
        p->ev = q;
        p->cev = c;
    }
    e = &p->ev[p->nev++];
    e->step = p->step; e->round = rd; e->kind = k; e->peer = peer; e->by = by; e->reason = why; e->count = count;
}

static void vt__bt_ban(vt_btard_peer *p, int rank, vt_btard_reason why, int by, int rd) {
    if (rank < 0 || rank >= p->N || !p->alive[rank]) return;
    p->alive[rank] = 0;
    p->nbans++;
    vt__bt_event(p, rd, VT_EV_BAN, rank, by, why, 0);
}

static uint64_t vt__bt_seed(const vt_btard_peer *p, int rank, int64_t step) {
    return vt_rng_u64(p->cfg.data_seed, (uint64_t)rank, (uint64_t)step);
}

static uint64_t vt__bt_tag(const vt_btard_peer *p, int rd, int phase, int sub) {
    return VT__BT_TAG(p->cfg.session, p->step, rd, phase, sub);
}

static int vt__bt_attacking(const vt_btard_peer *p, vt_btard_attack_kind k) {
    return p->atk.kind == k && vt_btard_attacking(&p->atk, p->step);
}

static void vt__bt_garbage(const vt_btard_peer *p, unsigned char *b, size_t n, uint64_t salt) {
    size_t i;
    for (i = 0; i < n; i++) b[i] = (unsigned char)(vt_rng_u64(p->atk.seed ^ salt, (uint64_t)p->step, i / 8) >> (8 * (i % 8)));
}

/* the flat gradient of context c (fresh gradients read as 0) */
static void vt__bt_read_grad(vt_btard_peer *p, vt_ctx *c, float *out) {
    int i;
    for (i = 0; i < p->np; i++) {
        vt_tensor *t = vt_param_at(c, i);
        int64_t k, n = p->poff[i + 1] - p->poff[i];
        float *o = out + p->poff[i];
        if (!t->grad || t->grad_fresh) { for (k = 0; k < n; k++) o[k] = 0.0f; continue; }
        for (k = 0; k < n; k++) o[k] = (float)((const double *)t->grad->data)[k];
    }
}

/* one gradient on c: a whole vt step. 0, or -1 if c failed (left cleared) */
static int vt__bt_grad(vt_btard_peer *p, vt_ctx *c, void *model, uint64_t seed, int flip, float *out, char *why, size_t nwhy) {
    vt_status st = VT_OK;
    if (vt_step_begin(c) == VT_OK) {
        st = p->task.loss(c, model, seed, flip, p->task.user);
        if (vt_status_of(c) == VT_OK && st == VT_OK) vt__bt_read_grad(p, c, out);
    }
    vt_step_end(c);
    if (vt_status_of(c) != VT_OK || st != VT_OK) {
        if (why && nwhy) {
            const char *src = vt_status_of(c) != VT_OK ? vt_error_message(c) : "the task's loss failed";
            size_t l = strlen(src) < nwhy - 1 ? strlen(src) : nwhy - 1;
            memcpy(why, src, l);
            why[l] = 0;
        }
        vt_clear_error(c);
        return -1;
    }
    return 0;
}

/* --- log chunks: restamp (for our auditor's step counter) and forge ---------- */

#define VT__BT_CHUNK_HDR VT__CHUNK_HDR /* the chunk layout of vtrain.h's >>log (see its >>companion) */

/* a whole chunk: "VTCK" (full records) or "VTCR" (short records: the headers
   are those of the last full chunk; vt_feed_chunk replays it by position
   and count when it has none) */
static int vt__bt_chunk_ok(const unsigned char *ch, size_t n) {
    return n >= VT__BT_CHUNK_HDR + 32 && (!memcmp(ch, "VTCK", 4) || !memcmp(ch, "VTCR", 4)) &&
           vt__bt_g64(ch + 20) == (uint64_t)(n - VT__BT_CHUNK_HDR - 32);
}
static void vt__bt_chunk_seal(unsigned char *ch, size_t n) { vt_sha256(ch, n - 32, ch + n - 32); }

static int vt__bt_restamp(vt__bt_buf *out, const unsigned char *ch, size_t n, int64_t step) {
    if (!vt__bt_chunk_ok(ch, n) || !vt__bt_set(out, ch, n)) return -1;
    vt__bt_p64(out->p + 4, (uint64_t)step);
    vt__bt_chunk_seal(out->p, n);
    return 0;
}

static int vt__bt_varint(const unsigned char *p, size_t n, size_t *at, uint64_t *v) {
    int s = 0;
    *v = 0;
    while (*at < n && s < 64) {
        unsigned char b = p[(*at)++];
        *v |= (uint64_t)(b & 127) << s;
        if (!(b & 128)) return 0;
        s += 7;
    }
    return -1;
}

/* the forged-log attack: change the first logged value, or, if nothing was
   logged, append a record the replay will not have; reseal the checksum so
   the chunk is well formed */
static void vt__bt_forge(vt__bt_buf *ch) {
    unsigned char *body;
    size_t blen, at = 0;
    int full;
    if (!vt__bt_chunk_ok(ch->p, ch->n)) return;
    full = !memcmp(ch->p, "VTCK", 4);
    body = ch->p + VT__BT_CHUNK_HDR;
    blen = ch->n - VT__BT_CHUNK_HDR - 32;
    while (at < blen) {
        uint64_t kind, nd, dim, cnt, k, e;
        if (full) {
            if (vt__bt_varint(body, blen, &at, &kind) || vt__bt_varint(body, blen, &at, &nd)) break;
            for (k = 0; k < nd; k++) if (vt__bt_varint(body, blen, &at, &dim)) break;
        }
        if (vt__bt_varint(body, blen, &at, &cnt)) break;
        if (cnt > 0) {
            if (vt__bt_varint(body, blen, &at, &e) || at >= blen) break;
            body[at] ^= 1; /* the low byte of the first entry's value */
            vt__bt_chunk_seal(ch->p, ch->n);
            return;
        }
    }
    /* nothing logged: one record more than the replay will have */
    if (!vt__bt_reserve(ch, ch->n + 3)) return;
    memmove(ch->p + ch->n - 32 + 3, ch->p + ch->n - 32, 32);
    ch->p[ch->n - 32] = full ? 8 : 0; ch->p[ch->n - 31] = 0; ch->p[ch->n - 30] = 0;
    ch->n += 3;
    vt__bt_p64(ch->p + 20, (uint64_t)(ch->n - VT__BT_CHUNK_HDR - 32));
    vt__bt_p32(ch->p + 12, vt__bt_g32(ch->p + 12) + 1);
    vt__bt_chunk_seal(ch->p, ch->n);
}

/* --- projections --------------------------------------------------------------- */

static uint64_t vt__bt_zseed(const unsigned char r[32]) {
    unsigned char h[32];
    vt_sha256_ctx s;
    vt_sha256_init(&s);
    vt_sha256_update(&s, "vt-btard-z", 10);
    vt_sha256_update(&s, r, 32);
    vt_sha256_final(&s, h);
    return vt__bt_g64(h);
}

/* s = <z, x - a> and |x - a| over one part (global offset off), binary64,
   each summed in four lanes (j mod 4) combined (l0 + l1) + (l2 + l3);
   z_i = -1 if bit i%64 of vt_rng_u64(zseed, 0, i/64) is set, else +1.
   The bits are realigned to the part (64 per block of 64 coordinates), so
   four coordinates take one nibble, the four z of a nibble come from a
   table, and the four lanes are one AVX2 register: the same products and
   sums in the same order as the plain loop, so the same bits. */
static const double vt__bt_ztab[16][4] = {
    {1, 1, 1, 1}, {-1, 1, 1, 1}, {1, -1, 1, 1}, {-1, -1, 1, 1}, {1, 1, -1, 1}, {-1, 1, -1, 1}, {1, -1, -1, 1}, {-1, -1, -1, 1},
    {1, 1, 1, -1}, {-1, 1, 1, -1}, {1, -1, 1, -1}, {-1, -1, 1, -1}, {1, 1, -1, -1}, {-1, 1, -1, -1}, {1, -1, -1, -1}, {-1, -1, -1, -1}};
static void vt__bt_scalar(const float *x, const float *a, int64_t L, int64_t off, uint64_t zseed, double *s, double *nrm) {
    double ss[4] = {0, 0, 0, 0}, q[4] = {0, 0, 0, 0};
    int64_t j, e, w = off >> 6;
    int sh = (int)(off & 63);
    uint64_t next = vt_rng_u64(zseed, 0, (uint64_t)w);
    for (j = 0; j < L; j += 64) { /* bits of coordinates off+j .. off+j+63 */
        uint64_t bits = next, nib;
        int64_t B = VT__MIN(64, L - j);
        if (sh || B == 64) next = vt_rng_u64(zseed, 0, (uint64_t)++w);
        if (sh) bits = (bits >> sh) | (next << (64 - sh));
        e = 0;
#ifdef VT__AVX2
        {
            __m256d S = _mm256_loadu_pd(ss), Q = _mm256_loadu_pd(q);
            for (; e + 4 <= B; e += 4) {
                __m256d d = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + j + e)), _mm256_cvtps_pd(_mm_loadu_ps(a + j + e)));
                S = _mm256_add_pd(S, _mm256_mul_pd(_mm256_loadu_pd(vt__bt_ztab[(bits >> e) & 15]), d));
                Q = _mm256_add_pd(Q, _mm256_mul_pd(d, d));
            }
            _mm256_storeu_pd(ss, S);
            _mm256_storeu_pd(q, Q);
        }
#endif
        for (; e < B; e++) {
            double dl = (double)x[j + e] - (double)a[j + e];
            nib = (bits >> (e & ~(int64_t)3)) & 15;
            ss[e & 3] += vt__bt_ztab[nib][e & 3] * dl; /* z = +-1: exact */
            q[e & 3] += dl * dl;
        }
    }
    *s = (ss[0] + ss[1]) + (ss[2] + ss[3]);
    *nrm = sqrt((q[0] + q[1]) + (q[2] + q[3]));
}

/* the projection check of one part: |sum_w c_w s_w| <= tol (see >>btard) */
static int vt__bt_check(const vt_btard_peer *p, const double *s, const double *nrm, int nw, const float *a, int64_t L) {
    double S = 0, slack = 0, gn = 0, tol, eps = p->cfg.cc_eps, tau = p->cfg.tau, lam = p->cfg.lambda;
    int64_t j;
    int w;
    for (w = 0; w < nw; w++) {
        double c = nrm[w] <= tau ? 1.0 : tau / nrm[w];
        S += c * s[w];
        slack += c * nrm[w];
    }
    {
        /* four lanes in a fixed order, so that every peer gets the same
           tolerance (the rest goes to lane 0) */
        double g[4] = {0, 0, 0, 0};
        j = 0;
#ifdef VT__AVX2
        {
            __m256d G = _mm256_setzero_pd();
            for (; j + 4 <= L; j += 4) { __m256d d = _mm256_cvtps_pd(_mm_loadu_ps(a + j)); G = _mm256_add_pd(G, _mm256_mul_pd(d, d)); }
            _mm256_storeu_pd(g, G);
        }
#endif
        for (; j + 4 <= L; j += 4) {
            g[0] += (double)a[j] * (double)a[j]; g[1] += (double)a[j + 1] * (double)a[j + 1];
            g[2] += (double)a[j + 2] * (double)a[j + 2]; g[3] += (double)a[j + 3] * (double)a[j + 3];
        }
        for (; j < L; j++) g[0] += (double)a[j] * (double)a[j];
        gn = sqrt((g[0] + g[1]) + (g[2] + g[3]));
    }
    tol = lam * nw * (2 * eps * (gn + tau) + 0x1p-23 * gn) * 1.01 + (double)(L + 4) * 0x1p-50 * sqrt((double)L) * slack + 1e-300;
    return fabs(S) <= tol;
}

/* --- roles and partition ---------------------------------------------------------------- */

static void vt__bt_partition(vt_btard_peer *p) {
    int i;
    p->n = 0;
    for (i = 0; i < p->N; i++) {
        p->pos[i] = -1;
        if (p->alive[i]) { p->pos[i] = p->n; p->mem[p->n++] = i; }
    }
    p->me = p->pos[p->rank];
    p->L = p->n ? (p->d + p->n - 1) / p->n : 0;
}

/* validators of this step and their targets, from r(t-1) */
static void vt__bt_roles(vt_btard_peer *p) {
    int i, q, na, m;
    int *al = p->mem; /* alive ranks (partition not yet done: fill here) */
    memset(p->val, 0, (size_t)p->N);
    p->nvp = 0;
    vt__bt_partition(p);
    na = p->n;
    m = p->cfg.defence == VT_DEFENCE_BTARD ? p->cfg.validators : 0;
    if (!p->pv_ok || m <= 0 || na < 2) return;
    if (m > na - 1) m = na - 1;
    {
        uint64_t s1 = vt__bt_g64(p->pv_r), s2 = vt__bt_g64(p->pv_r + 8);
        for (q = 0; q < m; q++) {
            int v = al[vt_shuffle(s1, 0, (uint64_t)q, (uint64_t)na)], nt = 0, t;
            for (i = 0; i < p->pv_n; i++) {
                int r = p->pv_mem[i];
                if (p->pv_has[i] && p->alive[r] && r != v) nt++;
            }
            if (!nt) continue;
            t = (int)(vt_rng_u64(s2, (uint64_t)q, 0) % (uint64_t)nt);
            for (i = 0; i < p->pv_n; i++) {
                int r = p->pv_mem[i];
                if (p->pv_has[i] && p->alive[r] && r != v && t-- == 0) { p->vv[p->nvp] = v; p->vtg[p->nvp] = r; p->nvp++; break; }
            }
            p->val[v] = 1;
        }
    }
}

static int vt__bt_pv_pos(const vt_btard_peer *p, int rank) {
    int i;
    for (i = 0; i < p->pv_n; i++) if (p->pv_mem[i] == rank) return i;
    return -1;
}

/* Recompute target j's gradient of the previous step on the audit context
   with its chunk, and compare with what j published then. Everyone who runs
   this gets the same answer, on any machine, in any order. */
static int vt__bt_recheck(vt_btard_peer *p, int j, const unsigned char *ch, size_t n) {
    int pj = vt__bt_pv_pos(p, j), i, k;
    int64_t L = p->pv_L;
    uint64_t zs;
    char why[256];
    if (pj < 0 || !p->pv_has[pj]) return VT__V_OK; /* nothing to check */
    if (vt__bt_restamp(&p->tmp, ch, n, vt_step_index(p->A)) < 0) return VT__V_GRADIENT;
    for (i = 0; i < p->np; i++) { /* parameters store binary32 values in doubles (see ON STORAGE) */
        vt_tensor *t = vt_param_at(p->A, i);
        int64_t e, ne = p->poff[i + 1] - p->poff[i];
        for (e = 0; e < ne; e++) ((double *)t->data)[e] = (double)p->w_prev[p->poff[i] + e];
    }
    if (vt_feed_chunk(p->A, p->tmp.p, p->tmp.n) != VT_OK) { vt_clear_error(p->A); return VT__V_GRADIENT; }
    if (vt__bt_grad(p, p->A, p->ma, vt__bt_seed(p, j, p->pv_step), 0, p->tmpf, why, sizeof why) < 0) return VT__V_GRADIENT;
    for (k = (int)p->d; k < p->pv_n * L; k++) p->tmpf[k] = 0.0f;
    vt__bt_hash_parts(p->tmpf, p->pv_n, L, p->hs);
    if (memcmp(p->hs, p->pv_parts + (size_t)pj * p->N * 32, 32 * (size_t)p->pv_n)) return VT__V_GRADIENT;
    zs = vt__bt_zseed(p->pv_r);
    for (k = 0; k < p->pv_n; k++) {
        double s, nrm;
        const double *rep = p->pv_sc + ((size_t)pj * p->N + k) * 2;
        vt__bt_scalar(p->tmpf + k * L, p->pv_agg + k * L, L, k * L, zs, &s, &nrm);
        if (memcmp(&s, &rep[0], 8) || memcmp(&nrm, &rep[1], 8)) return VT__V_SCALARS;
    }
    return VT__V_OK;
}

/* --- work: my gradient, with the attack applied ----------------------------------------- */

static void vt__bt_work(vt_btard_peer *p) {
    int64_t i, d = p->d;
    const vt_btard_attack *a = &p->atk;
    int att = vt_btard_attacking(a, p->step), got = 0;
    char why[256];
    const unsigned char *cb;
    size_t cn;
    if (att && (a->kind == VT_ATTACK_IPM || a->kind == VT_ATTACK_ALIE)) {
        /* the honest mean and sd, estimated from est other peers' public seeds */
        int e, ne = a->est > 0 ? a->est : 3;
        for (i = 0; i < d; i++) p->est1[i] = p->est2[i] = 0;
        for (e = 1; e <= ne; e++) {
            int r = (p->rank + e) % p->N;
            if (vt__bt_grad(p, p->M, p->mm, vt__bt_seed(p, r, p->step), 0, p->gt, why, sizeof why) < 0) continue;
            for (i = 0; i < d; i++) { p->est1[i] += p->gt[i]; p->est2[i] += (double)p->gt[i] * p->gt[i]; }
            got++;
        }
    }
    if (vt__bt_grad(p, p->M, p->mm, vt__bt_seed(p, p->rank, p->step), att && a->kind == VT_ATTACK_LABEL_FLIP, p->gt, why,
                    sizeof why) < 0) {
        vt__bt_fail(p, VT_ERR_STATE, "peer %d, step %lld: computing its gradient failed: %s", p->rank, (long long)p->step, why);
        return;
    }
    if (vt_step_chunk(p->M, &cb, &cn) != VT_OK || !vt__bt_set(&p->chunk, cb, cn)) {
        vt__bt_fail(p, VT_ERR_NOMEM, "peer %d: no log chunk after its gradient (log_memory?)", p->rank);
        return;
    }
    memcpy(p->g, p->gt, sizeof(float) * (size_t)d);
    if (p->ring) memcpy(p->ring + (p->step % p->ring_len) * d, p->gt, sizeof(float) * (size_t)d);
    if (att) {
        switch (a->kind) {
        case VT_ATTACK_SIGN_FLIP:
            for (i = 0; i < d; i++) p->g[i] = (float)(a->scale * p->gt[i]);
            break;
        case VT_ATTACK_RANDOM_DIRECTION: {
            int t;
            for (t = 0; t < p->np; t++) {
                int64_t o = p->poff[t], n = p->poff[t + 1] - o;
                double gn = 0, un = 0;
                for (i = 0; i < n; i++) { double u = vt_rng_normal(a->seed, (uint64_t)t, (uint64_t)i); gn += (double)p->gt[o + i] * p->gt[o + i]; un += u * u; }
                gn = sqrt(gn); un = sqrt(un);
                for (i = 0; i < n; i++) p->g[o + i] = (float)(un > 0 ? a->scale * gn * vt_rng_normal(a->seed, (uint64_t)t, (uint64_t)i) / un : 0);
            }
            break;
        }
        case VT_ATTACK_DELAYED:
            if (p->step >= a->delay) memcpy(p->g, p->ring + ((p->step - a->delay) % p->ring_len) * d, sizeof(float) * (size_t)d);
            break;
        case VT_ATTACK_IPM:
        case VT_ATTACK_ALIE: {
            int ne = got + 1; /* with the attacker's own */
            for (i = 0; i < d; i++) {
                double s1 = p->est1[i] + p->gt[i], s2 = p->est2[i] + (double)p->gt[i] * p->gt[i];
                double mu = s1 / ne, var = ne > 1 ? (s2 - ne * mu * mu) / (ne - 1) : 0;
                p->g[i] = (float)(a->kind == VT_ATTACK_IPM ? -a->scale * mu : mu - a->scale * sqrt(var > 0 ? var : 0));
            }
            break;
        }
        case VT_ATTACK_NUDGE: {
            /* one part (as partitioned in round 0) times 1 + 1e-6 */
            int na = 0, k;
            int64_t L;
            for (k = 0; k < p->N; k++) na += p->alive[k];
            L = (d + na - 1) / na;
            k = (int)(p->step % na);
            for (i = k * L; i < (k + 1) * L && i < d; i++) p->g[i] = (float)((double)p->gt[i] * (1 + a->scale));
            break;
        }
        case VT_ATTACK_NAN:
            for (i = p->step % 7; i < d; i += 97) p->g[i] = (float)NAN;
            break;
        case VT_ATTACK_FORGED_LOG:
            vt__bt_forge(&p->chunk);
            break;
        default:
            break;
        }
    }
}

/* --- the validator's job ----------------------------------------------------------------- */

static void vt__bt_validate(vt_btard_peer *p) {
    int q, j = -1, pj;
    unsigned char *m = NULL, h[32];
    size_t n = 0;
    double t0 = vt_net_now();
    for (q = 0; q < p->nvp; q++) if (p->vv[q] == p->rank) j = p->vtg[q];
    p->vcode = VT__V_OK;
    if (j < 0) return;
    p->st.validations++;
    pj = vt__bt_pv_pos(p, j);
    if (p->net->recv(p->net, j, vt__bt_tag(p, 0, VT__PH_CHUNK, 0), &m, &n, p->sched + p->cfg.timeout) != 1)
        p->vcode = VT__V_NOCHUNK;
    else {
        vt_sha256(m, n, h);
        if (pj < 0 || memcmp(h, p->pv_chunk + (size_t)pj * 32, 32)) p->vcode = VT__V_BADCHUNK;
        else p->vcode = vt__bt_recheck(p, j, m, n);
        vt_net_free(m);
    }
    /* attackers collude: they never accuse; false_accuse always does */
    if (p->atk.kind == VT_ATTACK_FALSE_ACCUSE && vt_btard_attacking(&p->atk, p->step)) p->vcode = VT__V_GRADIENT;
    else if (p->atk.kind != VT_ATTACK_NONE) p->vcode = VT__V_OK;
    p->st.t_validate += vt_net_now() - t0;
}

/* --- gathering: one message per peer in a list, all against one deadline --------------------- */

typedef struct { unsigned char *p; size_t n; int got; } vt__bt_in;

/* the hashes of the received messages of `want` bytes, two at a time; the
   others are left alone */
static void vt__bt_hash_in(const vt__bt_in *in, int cnt, size_t want, unsigned char *out) {
    int i, prev = -1;
    for (i = 0; i < cnt; i++) {
        if (!in[i].got || in[i].n != want) continue;
        if (prev < 0) { prev = i; continue; }
        vt__sha256_2(in[prev].p, in[i].p, want, out + 32 * (size_t)prev, out + 32 * (size_t)i);
        prev = -1;
    }
    if (prev >= 0) vt_sha256(in[prev].p, want, out + 32 * (size_t)prev);
}

/* Deadlines follow a schedule: each phase adds its budget to p->sched,
   which starts at the step's (round 0) or the round's start. Waiting for a
   silent peer then ends at the same moment on every honest peer, whatever
   each did before (a validator first waits for its target's chunk): skews
   do not add up from phase to phase. A wait that ends early (everything
   came) settles the schedule to now: the last message reached every honest
   peer at about the same time, so the next budget starts from there. */
static double vt__bt_next(vt_btard_peer *p, double budget) {
    p->sched += budget;
    return p->sched;
}
static void vt__bt_settle(vt_btard_peer *p) {
    double now = vt_net_now();
    if (now < p->sched) p->sched = now;
}

static void vt__bt_gather(vt_btard_peer *p, const int *ranks, int cnt, uint64_t tag, double dl, vt__bt_in *in) {
    double t0 = vt_net_now();
    int i;
    for (i = 0; i < cnt; i++) {
        in[i].p = NULL; in[i].n = 0; in[i].got = 0;
        p->g_from[i] = ranks[i] == p->rank ? -1 : ranks[i];
    }
    if (p->net->recv_set) { /* one wait for the lot */
        if (p->net->recv_set(p->net, p->g_from, cnt, tag, p->g_p, p->g_n, p->g_got, dl) >= 0)
            for (i = 0; i < cnt; i++) { in[i].p = p->g_p[i]; in[i].n = p->g_n[i]; in[i].got = p->g_got[i]; }
    } else
        for (i = 0; i < cnt; i++)
            if (p->g_from[i] >= 0) in[i].got = p->net->recv(p->net, ranks[i], tag, &in[i].p, &in[i].n, dl) == 1;
    vt__bt_settle(p);
    p->st.t_wait += vt_net_now() - t0;
}

static void vt__bt_in_free(vt__bt_in *in, int cnt) {
    int i;
    for (i = 0; i < cnt; i++) { vt_net_free(in[i].p); in[i].p = NULL; }
}

/* a peer that sees more than half of the others go silent at once is the
   one cut off (honest majority): it stops instead of banning the swarm */
static int vt__bt_cut_off(vt_btard_peer *p, int missing, int expected) {
    if (expected >= 2 && 2 * missing > expected) {
        vt__bt_fail(p, VT_ERR_STATE, "peer %d, step %lld: %d of %d peers silent at once: this peer is cut off from the swarm",
                    p->rank, (long long)p->step, missing, expected);
        return 1;
    }
    return 0;
}

#define VT__BT_M_COMMIT 0x31435442u  /* "BTC1" */
#define VT__BT_M_AGGH 0x31485442u    /* "BTH1" */
#define VT__BT_M_REVEAL 0x31525442u  /* "BTR1" */
#define VT__BT_M_SCAL 0x31535442u    /* "BTS1" */

static void vt__bt_mprng_commit(const vt_btard_peer *p, int rd, int rank, const unsigned char x[32], unsigned char out[32]) {
    unsigned char b[16];
    vt_sha256_ctx s;
    vt_sha256_init(&s);
    vt_sha256_update(&s, "vt-btard-mprng", 14);
    vt__bt_p64(b, (uint64_t)p->step);
    vt__bt_p32(b + 8, (uint32_t)rd);
    vt__bt_p32(b + 12, (uint32_t)rank);
    vt_sha256_update(&s, b, 16);
    vt_sha256_update(&s, x, 32);
    vt_sha256_final(&s, out);
}

/* --- accusations (step 3) ------------------------------------------------------------------ */

/* returns 1 if gradients were re-executed */
static int vt__bt_accusations(vt_btard_peer *p, int rd) {
    int i, k, na = 0;
    int acc_v[64], acc_j[64], acc_c[64];
    int jl[64], nj = 0;
    vt__bt_in in[64];
    for (i = 0; i < p->n && na < 64; i++) {
        int v = p->mem[i], j = p->c_vt[i];
        if (!p->val[v] || p->c_vc[i] == VT__V_OK || j < 0 || j >= p->N || !p->alive[j] || !p->alive[v]) continue;
        acc_v[na] = v; acc_j[na] = j; acc_c[na] = p->c_vc[i]; na++;
        vt__bt_event(p, rd, VT_EV_ACCUSE, j, v, VT_BAN_GRADIENT, 0);
        p->st.accusations++;
        for (k = 0; k < nj; k++) if (jl[k] == j) break;
        if (k == nj) jl[nj++] = j;
    }
    if (!na) return 0;
    /* the accused publish their chunk of the previous step */
    for (k = 0; k < nj; k++)
        if (jl[k] == p->rank && !vt__bt_attacking(p, VT_ATTACK_SILENT))
            p->net->bcast(p->net, vt__bt_tag(p, rd, VT__PH_ACCPUB, 0), p->chunk_prev.p, p->chunk_prev.n, p->alive);
    vt__bt_gather(p, jl, nj, vt__bt_tag(p, rd, VT__PH_ACCPUB, 0), vt__bt_next(p, p->cfg.timeout), in);
    for (k = 0; k < nj; k++) {
        int j = jl[k], pj = vt__bt_pv_pos(p, j), res;
        const unsigned char *ch = j == p->rank ? p->chunk_prev.p : in[k].p;
        size_t cn = j == p->rank ? p->chunk_prev.n : in[k].n;
        unsigned char h[32];
        if (j != p->rank && !in[k].got) { vt__bt_ban(p, j, VT_BAN_CHUNK, -1, rd); continue; }
        vt_sha256(ch, cn, h);
        if (pj < 0 || cn > p->cfg.max_chunk || memcmp(h, p->pv_chunk + (size_t)pj * 32, 32)) { vt__bt_ban(p, j, VT_BAN_CHUNK, -1, rd); continue; }
        res = vt__bt_recheck(p, j, ch, cn); /* everyone re-executes */
        if (res != VT__V_OK) { vt__bt_ban(p, j, res == VT__V_SCALARS ? VT_BAN_SCALARS : VT_BAN_GRADIENT, -1, rd); continue; }
        for (i = 0; i < na; i++)
            if (acc_j[i] == j && (acc_c[i] == VT__V_GRADIENT || acc_c[i] == VT__V_SCALARS))
                vt__bt_ban(p, acc_v[i], VT_BAN_FALSE_ACCUSATION, -1, rd);
    }
    vt__bt_in_free(in, nj);
    return 1;
}

/* --- aggregation of my part ----------------------------------------------------------------- */

static void vt__bt_aggregate(vt_btard_peer *p) {
    const float *rp[4096];
    int w, nr = 0;
    rp[0] = NULL;
    vt_cclip_info info;
    double t0 = vt_net_now();
    float *out = p->agg + p->me * p->L;
    for (w = 0; w < p->n && nr < 4096; w++)
        if (p->c_has[w]) rp[nr++] = p->rows + w * p->L;
    vt_centered_clip(rp, nr, p->L, p->cfg.tau, p->cfg.cc_iters, p->cfg.cc_eps, out, &info);
    p->st.cc_calls++;
    p->st.cc_iters += info.iters;
    if (info.iters > p->st.cc_iters_max) p->st.cc_iters_max = info.iters;
    if (vt__bt_attacking(p, VT_ATTACK_LYING_AGGREGATOR)) {
        int64_t j;
        for (j = 0; j < p->L; j++) out[j] = (float)(p->atk.scale * out[j]);
    }
    if (vt__bt_attacking(p, VT_ATTACK_SPIKE)) { /* a spike of norm `scale`, signs alternating */
        int64_t j;
        for (j = 0; j < p->L; j++) out[j] = (float)(out[j] + (j % 2 ? -1 : 1) * p->atk.scale / sqrt((double)p->L));
    }
    vt__bt_hash_f32(out, p->L, p->a_hash + (size_t)p->me * 32);
    p->st.t_aggregate += vt_net_now() - t0;
}

/* AGGH: [magic][n][hash 32][n status bytes], then, if the aggregator has
   an aggregate (no complaints), the aggregate (4L bytes, little-endian).
   The header is the broadcast commitment. The aggregate goes to the same
   members at the same moment, so it rides in the same message; it is
   still checked against the hash, and a missing or wrong copy is an
   all-gather complaint as for a point-to-point one. */
static void vt__bt_send_aggh(vt_btard_peer *p, int rd, int phase, int with_agg) {
    size_t hs = 40 + (size_t)p->n, sz = hs + (with_agg ? 4 * (size_t)p->L : 0);
    unsigned char *b = (unsigned char *)VT_MALLOC(sz, NULL);
    if (!b) return;
    vt__bt_p32(b, VT__BT_M_AGGH);
    vt__bt_p32(b + 4, (uint32_t)p->n);
    memcpy(b + 8, p->a_hash + (size_t)p->me * 32, 32);
    memcpy(b + 40, p->a_stat + (size_t)p->me * p->N, (size_t)p->n);
    if (with_agg) vt__bt_f2le(p->agg + p->me * p->L, p->L, b + hs);
    p->net->bcast(p->net, vt__bt_tag(p, rd, phase, 0), b, sz, p->alive);
    VT_FREE(b, NULL);
}

/* a part as bytes (with the attacks that corrupt what leaves the peer) */
static void vt__bt_send_part(vt_btard_peer *p, int to, uint64_t tag, const float *x, int bcast) {
    size_t sz = 4 * (size_t)p->L;
    unsigned char *b;
    if (vt__host_le() && !vt__bt_attacking(p, VT_ATTACK_GARBAGE) && !vt__bt_attacking(p, VT_ATTACK_WRONG_SIZE)) {
        if (bcast) p->net->bcast(p->net, tag, x, sz, p->alive); /* the transport copies */
        else p->net->send(p->net, to, tag, x, sz);
        return;
    }
    if (!(b = (unsigned char *)VT_MALLOC(sz + 8, NULL))) return;
    vt__bt_f2le(x, p->L, b);
    if (vt__bt_attacking(p, VT_ATTACK_GARBAGE)) vt__bt_garbage(p, b, sz, tag);
    if (vt__bt_attacking(p, VT_ATTACK_WRONG_SIZE)) { memset(b + sz, 0, 4); sz += 4; }
    if (bcast) p->net->bcast(p->net, tag, b, sz, p->alive);
    else p->net->send(p->net, to, tag, b, sz);
    VT_FREE(b, NULL);
}

/* check a received part: size, hash against the commitment; decode into out.
   have: the message's hash if already computed (vt__bt_hash_in), or NULL */
static int vt__bt_part_ok(const vt_btard_peer *p, const unsigned char *m, size_t n, const unsigned char *have, const unsigned char *hash,
                          float *out) {
    unsigned char h[32];
    if (n != 4 * (size_t)p->L) return 0;
    if (!have) vt_sha256(m, n, h);
    if (memcmp(have ? have : h, hash, 32)) return 0;
    vt__bt_le2f(m, p->L, out);
    return 1;
}

/* drop what is queued for earlier phases than round rd of this step, and
   note who sent it late */
static void vt__bt_drop_late(vt_btard_peer *p, int rd) {
    int q;
    memset(p->late, 0, sizeof(int64_t) * (size_t)p->N);
    p->net->discard_before(p->net, vt__bt_tag(p, rd, 0, 0), p->late);
    for (q = 0; q < p->N; q++)
        if (p->late[q]) { vt__bt_event(p, rd, VT_EV_LATE, q, -1, VT_BAN_SILENT, p->late[q]); p->st.late += p->late[q]; }
}

/* --- one round (steps 2 to 8 of >>btard): 1 done, 0 restart, -1 stop ----------------------- */

static int vt__bt_round(vt_btard_peer *p, int rd) {
    int i, k, w, n, me, N, bans0 = p->nbans, missing, any;
    int64_t L;
    vt__bt_in *in = NULL, *ag = NULL; /* ag: the AGGH messages, kept for their aggregates */
    unsigned char *buf = NULL, *hh = p->hs; /* hh: the hashes of received messages */
    size_t sz;
    int ret = 0, recomputed = 0;
    double t0, dl;
    if (rd > 0) {
        p->sched = vt_net_now();
        vt__bt_drop_late(p, rd);
    }
    vt__bt_partition(p);
    n = p->n; me = p->me; L = p->L; N = p->N;
    if (me < 0) return -1;
    in = (vt__bt_in *)VT_MALLOC(sizeof(vt__bt_in) * (size_t)N, NULL);
    ag = (vt__bt_in *)VT_MALLOC(sizeof(vt__bt_in) * (size_t)N, NULL);
    sz = 120 + 32 * (size_t)n + 16 * (size_t)n + 64 + 4 * (size_t)L;
    buf = (unsigned char *)VT_MALLOC(sz, NULL);
    if (!in || !ag || !buf) { vt__bt_fail(p, VT_ERR_NOMEM, "out of memory"); ret = -1; goto done; }
    memset(ag, 0, sizeof(vt__bt_in) * (size_t)N);
    memset(p->c_has, 0, (size_t)N);
    memset(p->a_stat, 0, (size_t)N * N);
    memset(p->r_comp, 0, (size_t)N * N);
    for (i = 0; i < n; i++) p->c_has[i] = !p->val[p->mem[i]];
    if (p->worker) {
        memcpy(p->gp, p->g, sizeof(float) * (size_t)p->d);
        for (k = (int)p->d; k < n * L; k++) p->gp[k] = 0.0f;
    }

    /* ---- 2. COMMIT ------------------------------------------------------------------------ */
    {
        unsigned char b[40];
        vt__bt_p64(b, p->secret);
        vt__bt_p64(b + 8, (uint64_t)p->step);
        vt__bt_p32(b + 16, (uint32_t)rd);
        vt__bt_p32(b + 20, (uint32_t)p->rank);
        vt__bt_p32(b + 24, (uint32_t)p->cfg.session);
        vt_sha256(b, 28, p->x_mine);
    }
    vt__bt_mprng_commit(p, rd, p->rank, p->x_mine, p->c_mprng + (size_t)me * 32);
    memcpy(p->c_chunk + (size_t)me * 32, p->chunk_sha, 32);
    if (p->worker)
        vt__bt_hash_parts(p->gp, n, L, p->c_parts + (size_t)me * N * 32);
    sz = 120 + (p->worker ? 32 * (size_t)n : 0);
    memset(buf, 0, sz);
    vt__bt_p32(buf, VT__BT_M_COMMIT);
    vt__bt_p32(buf + 4, (uint32_t)p->worker);
    vt__bt_p32(buf + 8, (uint32_t)n);
    {
        int vt = -1, vc = 0, q;
        if (p->val[p->rank] && !p->acc_done)
            for (q = 0; q < p->nvp; q++) if (p->vv[q] == p->rank) { vt = p->vtg[q]; vc = p->vcode; }
        vt__bt_p32(buf + 12, (uint32_t)vt);
        vt__bt_p32(buf + 16, (uint32_t)vc);
        p->c_vt[me] = vt;
        p->c_vc[me] = vc;
    }
    memcpy(buf + 24, p->wdig, 32);
    memcpy(buf + 56, p->c_mprng + (size_t)me * 32, 32);
    if (p->worker) {
        memcpy(buf + 88, p->chunk_sha, 32);
        memcpy(buf + 120, p->c_parts + (size_t)me * N * 32, 32 * (size_t)n);
    }
    if (vt__bt_attacking(p, VT_ATTACK_GARBAGE_COMMIT)) vt__bt_garbage(p, buf, sz, 77);
    /* round 0: the others may still compute, and a validator may first wait
       up to `timeout` for its target's chunk, then recompute */
    dl = vt__bt_next(p, rd == 0 ? p->cfg.compute_timeout + 2 * p->cfg.timeout : p->cfg.timeout);
    if (vt__bt_attacking(p, VT_ATTACK_LATE)) vt__bt_sleep(dl - vt_net_now() + p->cfg.timeout);
    if (!vt__bt_attacking(p, VT_ATTACK_SILENT)) p->net->bcast(p->net, vt__bt_tag(p, rd, VT__PH_COMMIT, 0), buf, sz, p->alive);
    vt__bt_gather(p, p->mem, n, vt__bt_tag(p, rd, VT__PH_COMMIT, 0), dl, in);
    for (i = 0, missing = 0; i < n; i++) missing += i != me && !in[i].got;
    if (vt__bt_cut_off(p, missing, n - 1)) { ret = -1; goto done; }
    for (i = 0; i < n; i++) {
        int r = p->mem[i], has, vt;
        uint32_t vc;
        const unsigned char *m = in[i].p;
        if (i == me) continue;
        if (!in[i].got) { vt__bt_ban(p, r, VT_BAN_SILENT, -1, rd); continue; }
        has = !p->val[r];
        if (in[i].n < 120 || vt__bt_g32(m) != VT__BT_M_COMMIT || vt__bt_g32(m + 8) != (uint32_t)n ||
            vt__bt_g32(m + 4) > 1 || in[i].n != 120 + (vt__bt_g32(m + 4) ? 32 * (size_t)n : 0)) {
            vt__bt_ban(p, r, VT_BAN_MALFORMED, -1, rd);
            continue;
        }
        if ((int)vt__bt_g32(m + 4) != has) { vt__bt_ban(p, r, VT_BAN_ROLE, -1, rd); continue; }
        if (memcmp(m + 24, p->wdig, 32)) { vt__bt_ban(p, r, VT_BAN_WEIGHTS, -1, rd); continue; }
        vt = (int)vt__bt_g32(m + 12);
        vc = vt__bt_g32(m + 16);
        p->c_vt[i] = -1;
        p->c_vc[i] = 0;
        if (!p->acc_done) {
            int q, want = -1;
            for (q = 0; q < p->nvp; q++) if (p->vv[q] == r) want = p->vtg[q];
            if (vt != want || vc > VT__V_SCALARS || (want < 0 && vc != 0)) { vt__bt_ban(p, r, VT_BAN_ROLE, -1, rd); continue; }
            p->c_vt[i] = vt;
            p->c_vc[i] = (int)vc;
        }
        memcpy(p->c_mprng + (size_t)i * 32, m + 56, 32);
        if (has) {
            memcpy(p->c_chunk + (size_t)i * 32, m + 88, 32);
            memcpy(p->c_parts + (size_t)i * N * 32, m + 120, 32 * (size_t)n);
        }
    }
    vt__bt_in_free(in, n);
    if (p->nbans != bans0) goto done;

    /* ---- 3. ACCUSE ------------------------------------------------------------------------- */
    if (!p->acc_done) {
        recomputed = vt__bt_accusations(p, rd);
        p->acc_done = 1;
        if (p->nbans != bans0) goto done;
    }

    /* ---- 4. SCATTER -------------------------------------------------------------------------- */
    t0 = vt_net_now();
    if (p->worker && !vt__bt_attacking(p, VT_ATTACK_SILENT))
        for (k = 0; k < n; k++)
            if (k != me) vt__bt_send_part(p, p->mem[k], vt__bt_tag(p, rd, VT__PH_PART, k), p->gp + k * L, 0);
    /* ---- 5. AGGREGATE ------------------------------------------------------------------------ */
    for (w = 0; w < n; w++) p->wk[w] = p->c_has[w] ? p->mem[w] : -1;
    /* after accusations everyone re-executed a gradient: allow for that */
    vt__bt_gather(p, p->wk, n, vt__bt_tag(p, rd, VT__PH_PART, me), vt__bt_next(p, p->cfg.timeout + (recomputed ? p->cfg.compute_timeout : 0)), in);
    any = 0;
    vt__bt_hash_in(in, n, 4 * (size_t)L, hh);
    for (w = 0; w < n; w++) {
        unsigned char *st = p->a_stat + (size_t)me * N + w;
        float *row = p->rows + w * L;
        if (!p->c_has[w]) continue;
        if (w == me) { memcpy(row, p->gp + me * L, sizeof(float) * (size_t)L); continue; }
        if (!in[w].got || !vt__bt_part_ok(p, in[w].p, in[w].n, hh + 32 * (size_t)w, p->c_parts + ((size_t)w * N + me) * 32, row)) {
            *st = 1;
            any = 1;
            continue;
        }
        if (!vt__bt_finite(row, L)) { *st = 2; any = 1; }
    }
    vt__bt_in_free(in, n);
    if (!any) vt__bt_aggregate(p);
    else memset(p->a_hash + (size_t)me * 32, 0, 32);
    vt__bt_send_aggh(p, rd, VT__PH_AGGH, !any);
    vt__bt_gather(p, p->mem, n, vt__bt_tag(p, rd, VT__PH_AGGH, 0), vt__bt_next(p, p->cfg.timeout), ag);
    for (i = 0, missing = 0; i < n; i++) missing += i != me && !ag[i].got;
    if (vt__bt_cut_off(p, missing, n - 1)) { ret = -1; goto done; }
    for (i = 0; i < n; i++) {
        const unsigned char *m = ag[i].p;
        int bad = 0, c = 0;
        if (i == me) continue;
        if (!ag[i].got) { vt__bt_ban(p, p->mem[i], VT_BAN_SILENT, -1, rd); continue; }
        if (ag[i].n < 40 + (size_t)n || vt__bt_g32(m) != VT__BT_M_AGGH || vt__bt_g32(m + 4) != (uint32_t)n) bad = 1;
        for (w = 0; w < n && !bad; w++) {
            unsigned char s = m[40 + w];
            if (s > 2 || (s && (!p->c_has[w] || w == i))) bad = 1;
            c |= s;
        }
        if (!bad && c && ag[i].n != 40 + (size_t)n) bad = 1; /* complaints come without an aggregate */
        if (bad) { vt__bt_ban(p, p->mem[i], VT_BAN_MALFORMED, -1, rd); continue; }
        memcpy(p->a_hash + (size_t)i * 32, m + 8, 32);
        memcpy(p->a_stat + (size_t)i * N, m + 40, (size_t)n);
    }
    if (p->nbans != bans0) goto done;

    /* complaints: publication on the broadcast channel decides */
    any = 0;
    for (i = 0; i < n; i++) for (w = 0; w < n; w++) if (p->a_stat[(size_t)i * N + w]) any = 1;
    if (any) {
        int a;
        double dl;
        for (a = 0; a < n; a++)
            for (w = 0; w < n; w++) {
                int s = p->a_stat[(size_t)a * N + w];
                if (!s) continue;
                vt__bt_event(p, rd, VT_EV_COMPLAINT, p->mem[w], p->mem[a], s == 1 ? VT_BAN_PART : VT_BAN_NONFINITE, 0);
                p->st.complaints++;
                if (s == 1 && w == me && !vt__bt_attacking(p, VT_ATTACK_SILENT))
                    vt__bt_send_part(p, -1, vt__bt_tag(p, rd, VT__PH_PUB1, a), p->gp + a * L, 1);
                if (s == 2 && a == me) {
                    vt__bt_f2le(p->rows + w * L, L, buf);
                    p->net->bcast(p->net, vt__bt_tag(p, rd, VT__PH_PUB2, w), buf, 4 * (size_t)L, p->alive);
                }
            }
        dl = vt__bt_next(p, p->cfg.timeout);
        for (a = 0; a < n; a++)
            for (w = 0; w < n; w++) {
                int s = p->a_stat[(size_t)a * N + w], from = s == 1 ? w : a, got;
                unsigned char *m = NULL;
                size_t mn = 0;
                const unsigned char *hash = p->c_parts + ((size_t)w * N + a) * 32;
                float *dst = p->tmpf;
                if (!s) continue;
                if (from == me) {
                    /* my own publication: I know what it is */
                    if (s == 2) vt__bt_ban(p, p->mem[w], VT_BAN_NONFINITE, p->mem[a], rd);
                    continue;
                }
                got = p->net->recv(p->net, p->mem[from], vt__bt_tag(p, rd, s == 1 ? VT__PH_PUB1 : VT__PH_PUB2, s == 1 ? a : w), &m, &mn, dl) == 1;
                if (s == 1) {
                    if (!got || !vt__bt_part_ok(p, m, mn, NULL, hash, dst)) vt__bt_ban(p, p->mem[w], VT_BAN_PART, p->mem[a], rd);
                    else if (!vt__bt_finite(dst, L)) vt__bt_ban(p, p->mem[w], VT_BAN_NONFINITE, p->mem[a], rd);
                    else if (a == me) memcpy(p->rows + w * L, dst, sizeof(float) * (size_t)L);
                } else {
                    if (!got) vt__bt_ban(p, p->mem[a], VT_BAN_SILENT, -1, rd);
                    else if (!vt__bt_part_ok(p, m, mn, NULL, hash, dst) || vt__bt_finite(dst, L)) vt__bt_ban(p, p->mem[a], VT_BAN_FALSE_CLAIM, -1, rd);
                    else vt__bt_ban(p, p->mem[w], VT_BAN_NONFINITE, p->mem[a], rd);
                }
                vt_net_free(m);
            }
        vt__bt_settle(p);
        if (p->nbans != bans0) goto done;
        /* every complaint was answered with a valid part: the aggregators that
           complained aggregate now and commit (AGGH2) */
        {
            int mine = 0;
            int *who = (int *)VT_MALLOC(sizeof(int) * (size_t)n, NULL);
            if (!who) { vt__bt_fail(p, VT_ERR_NOMEM, "out of memory"); ret = -1; goto done; }
            for (a = 0; a < n; a++) {
                int c = 0;
                for (w = 0; w < n; w++) c |= p->a_stat[(size_t)a * N + w];
                who[a] = c ? p->mem[a] : -1;
                if (c && a == me) mine = 1;
            }
            if (mine) {
                memset(p->a_stat + (size_t)me * N, 0, (size_t)n);
                vt__bt_aggregate(p);
                vt__bt_send_aggh(p, rd, VT__PH_AGGH2, 1);
            }
            vt__bt_gather(p, who, n, vt__bt_tag(p, rd, VT__PH_AGGH2, 0), vt__bt_next(p, p->cfg.timeout), in);
            for (a = 0; a < n; a++) {
                const unsigned char *m = in[a].p;
                int bad = 0;
                if (who[a] < 0 || a == me) continue;
                if (!in[a].got) { vt__bt_ban(p, who[a], VT_BAN_SILENT, -1, rd); continue; }
                if (in[a].n < 40 + (size_t)n || vt__bt_g32(m) != VT__BT_M_AGGH || vt__bt_g32(m + 4) != (uint32_t)n) bad = 1;
                for (w = 0; w < n && !bad; w++) if (m[40 + w]) bad = 1;
                if (bad) { vt__bt_ban(p, who[a], VT_BAN_MALFORMED, -1, rd); continue; }
                memcpy(p->a_hash + (size_t)a * 32, m + 8, 32);
                /* this message carries the aggregate now */
                vt_net_free(ag[a].p);
                ag[a] = in[a];
                in[a].p = NULL;
            }
            vt__bt_in_free(in, n);
            VT_FREE(who, NULL);
        }
        if (p->nbans != bans0) goto done;
    }

    /* ---- 6. ALL-GATHER -------------------------------------------------------------------------- */
    /* the aggregates came with AGGH (or AGGH2): after the 40 + n header bytes */
    for (i = 0; i < n; i++) {
        size_t hs = 40 + (size_t)n;
        in[i].got = i != me && ag[i].got && ag[i].n >= hs;
        in[i].p = in[i].got ? ag[i].p + hs : NULL;
        in[i].n = in[i].got ? ag[i].n - hs : 0;
    }
    vt__bt_hash_in(in, n, 4 * (size_t)L, hh);
    for (i = 0; i < n; i++) {
        if (i == me) continue;
        if (!in[i].got || in[i].n != 4 * (size_t)L) { p->r_comp[(size_t)me * N + i] = 1; continue; }
        if (memcmp(hh + 32 * (size_t)i, p->a_hash + (size_t)i * 32, 32)) { p->r_comp[(size_t)me * N + i] = 1; continue; }
        vt__bt_le2f(in[i].p, L, p->agg + i * L);
    }
    for (i = 0; i < n; i++) { in[i].p = NULL; in[i].got = 0; } /* views into ag */
    vt__bt_in_free(ag, n);

    /* ---- 7. MPRNG reveal --------------------------------------------------------------------------- */
    sz = 40 + (size_t)n;
    vt__bt_p32(buf, VT__BT_M_REVEAL);
    vt__bt_p32(buf + 4, (uint32_t)n);
    memcpy(buf + 8, p->x_mine, 32);
    memcpy(buf + 40, p->r_comp + (size_t)me * N, (size_t)n);
    memcpy(p->r_x + (size_t)me * 32, p->x_mine, 32);
    if (vt__bt_attacking(p, VT_ATTACK_WRONG_REVEAL)) buf[8] ^= 0x5a;
    if (!vt__bt_attacking(p, VT_ATTACK_WITHHOLD_REVEAL) && !vt__bt_attacking(p, VT_ATTACK_SILENT))
        p->net->bcast(p->net, vt__bt_tag(p, rd, VT__PH_REVEAL, 0), buf, sz, p->alive);
    vt__bt_gather(p, p->mem, n, vt__bt_tag(p, rd, VT__PH_REVEAL, 0), vt__bt_next(p, p->cfg.timeout), in);
    for (i = 0, missing = 0; i < n; i++) missing += i != me && !in[i].got;
    if (vt__bt_cut_off(p, missing, n - 1)) { ret = -1; goto done; }
    for (i = 0; i < n; i++) {
        const unsigned char *m = in[i].p;
        unsigned char h[32];
        int bad = 0;
        if (i == me) continue;
        if (!in[i].got) { vt__bt_ban(p, p->mem[i], VT_BAN_REVEAL, -1, rd); continue; }
        if (in[i].n != 40 + (size_t)n || vt__bt_g32(m) != VT__BT_M_REVEAL || vt__bt_g32(m + 4) != (uint32_t)n) bad = 1;
        for (k = 0; k < n && !bad; k++) if (m[40 + k] > 1 || (m[40 + k] && k == i)) bad = 1;
        if (bad) { vt__bt_ban(p, p->mem[i], VT_BAN_MALFORMED, -1, rd); continue; }
        vt__bt_mprng_commit(p, rd, p->mem[i], m + 8, h);
        if (memcmp(h, p->c_mprng + (size_t)i * 32, 32)) { vt__bt_ban(p, p->mem[i], VT_BAN_REVEAL, -1, rd); continue; }
        memcpy(p->r_x + (size_t)i * 32, m + 8, 32);
        memcpy(p->r_comp + (size_t)i * N, m + 40, (size_t)n);
    }
    vt__bt_in_free(in, n);
    if (p->nbans != bans0) goto done;
    /* all-gather complaints: the aggregator publishes its aggregate */
    {
        int a;
        double dl2 = 0;
        for (a = 0; a < n; a++) {
            int c = 0;
            for (i = 0; i < n; i++) c |= p->r_comp[(size_t)i * N + a];
            if (c && a == me) {
                vt__bt_f2le(p->agg + me * L, L, buf);
                p->net->bcast(p->net, vt__bt_tag(p, rd, VT__PH_AGGPUB, 0), buf, 4 * (size_t)L, p->alive);
            }
        }
        for (a = 0; a < n; a++) {
            int c = 0;
            unsigned char *m = NULL;
            size_t mn = 0;
            for (i = 0; i < n; i++) c |= p->r_comp[(size_t)i * N + a];
            if (!c || a == me) continue;
            if (dl2 == 0) dl2 = vt__bt_next(p, p->cfg.timeout);
            if (p->net->recv(p->net, p->mem[a], vt__bt_tag(p, rd, VT__PH_AGGPUB, 0), &m, &mn, dl2) != 1 ||
                !vt__bt_part_ok(p, m, mn, NULL, p->a_hash + (size_t)a * 32, p->agg + a * L))
                vt__bt_ban(p, p->mem[a], VT_BAN_AGGREGATE, -1, rd);
            vt_net_free(m);
        }
        vt__bt_settle(p);
        if (p->nbans != bans0) goto done;
    }
    {
        vt_sha256_ctx s;
        unsigned char b[12];
        vt_sha256_init(&s);
        vt_sha256_update(&s, "vt-btard-r", 10);
        vt__bt_p64(b, (uint64_t)p->step);
        vt__bt_p32(b + 8, (uint32_t)rd);
        vt_sha256_update(&s, b, 12);
        vt_sha256_update(&s, p->r_x, 32 * (size_t)n);
        vt_sha256_final(&s, p->r);
    }

    /* ---- 8. CHECK ---------------------------------------------------------------------------------- */
    {
        uint64_t zs = vt__bt_zseed(p->r);
        int nfail = 0, *fail = (int *)VT_MALLOC(sizeof(int) * (size_t)n, NULL), nw = 0;
        double *s = (double *)VT_MALLOC(sizeof(double) * 2 * (size_t)n, NULL), *nr = s ? s + n : NULL;
        int *wk = (int *)VT_MALLOC(sizeof(int) * (size_t)n, NULL);
        if (!fail || !s || !wk) { VT_FREE(fail, NULL); VT_FREE(s, NULL); VT_FREE(wk, NULL); vt__bt_fail(p, VT_ERR_NOMEM, "out of memory"); ret = -1; goto done; }
        t0 = vt_net_now();
        for (w = 0; w < n; w++) wk[w] = p->c_has[w] ? p->mem[w] : -1;
        if (p->worker) {
            double *o = p->sc + (size_t)me * N * 2;
            for (k = 0; k < n; k++) vt__bt_scalar(p->gp + k * L, p->agg + k * L, L, k * L, zs, &o[2 * k], &o[2 * k + 1]);
            sz = 8 + 16 * (size_t)n;
            vt__bt_p32(buf, VT__BT_M_SCAL);
            vt__bt_p32(buf + 4, (uint32_t)n);
            for (k = 0; k < 2 * n; k++) vt__bt_pf64(buf + 8 + 8 * k, o[k]);
            if (!vt__bt_attacking(p, VT_ATTACK_SILENT)) p->net->bcast(p->net, vt__bt_tag(p, rd, VT__PH_SCALARS, 0), buf, sz, p->alive);
        }
        p->st.t_aggregate += vt_net_now() - t0;
        vt__bt_gather(p, wk, n, vt__bt_tag(p, rd, VT__PH_SCALARS, 0), vt__bt_next(p, p->cfg.timeout), in);
        for (w = 0; w < n; w++) {
            const unsigned char *m = in[w].p;
            int bad = 0;
            if (wk[w] < 0 || w == me) continue;
            if (!in[w].got) { vt__bt_ban(p, wk[w], VT_BAN_SILENT, -1, rd); continue; }
            if (in[w].n != 8 + 16 * (size_t)n || vt__bt_g32(m) != VT__BT_M_SCAL || vt__bt_g32(m + 4) != (uint32_t)n) bad = 1;
            for (k = 0; k < n && !bad; k++) {
                double sv = vt__bt_gf64(m + 8 + 16 * k), nv = vt__bt_gf64(m + 16 + 16 * k);
                /* |<z, x>| <= sqrt(L) |x| for z = +-1, up to the binary64 rounding of both */
                if (!(sv - sv == 0) || !(nv - nv == 0) || nv < 0 ||
                    fabs(sv) > sqrt((double)L) * nv * (1 + (double)(L + 4) * 0x1p-50) + 1e-300)
                    bad = 1;
                p->sc[((size_t)w * N + k) * 2] = sv;
                p->sc[((size_t)w * N + k) * 2 + 1] = nv;
            }
            if (bad) vt__bt_ban(p, wk[w], VT_BAN_MALFORMED, -1, rd);
        }
        vt__bt_in_free(in, n);
        if (p->nbans == bans0) {
            for (k = 0; k < n; k++) {
                nw = 0;
                for (w = 0; w < n; w++)
                    if (wk[w] >= 0) { s[nw] = p->sc[((size_t)w * N + k) * 2]; nr[nw] = p->sc[((size_t)w * N + k) * 2 + 1]; nw++; }
                if (!vt__bt_check(p, s, nr, nw, p->agg + k * L, L)) fail[nfail++] = k;
            }
        }
        /* audits: every worker publishes its copy of each failing part; everyone recomputes */
        if (nfail && p->nbans == bans0) {
            int f;
            const float **rp = (const float **)VT_MALLOC(sizeof(float *) * (size_t)n, NULL);
            float *pub = (float *)VT_MALLOC(sizeof(float) * (size_t)n * (size_t)(L ? L : 1), NULL);
            float *cc = (float *)VT_MALLOC(sizeof(float) * (size_t)(L ? L : 1), NULL);
            if (!rp || !pub || !cc) { VT_FREE(rp, NULL); VT_FREE(pub, NULL); VT_FREE(cc, NULL); VT_FREE(fail, NULL); VT_FREE(s, NULL); VT_FREE(wk, NULL); vt__bt_fail(p, VT_ERR_NOMEM, "out of memory"); ret = -1; goto done; }
            for (f = 0; f < nfail; f++) {
                vt__bt_event(p, rd, VT_EV_AUDIT, p->mem[fail[f]], -1, VT_BAN_AGGREGATE, 0);
                p->st.audits++;
                if (p->worker && !vt__bt_attacking(p, VT_ATTACK_SILENT))
                    vt__bt_send_part(p, -1, vt__bt_tag(p, rd, VT__PH_AUDIT, fail[f]), p->gp + fail[f] * L, 1);
            }
            dl = vt__bt_next(p, p->cfg.timeout);
            for (f = 0; f < nfail; f++) {
                int kk = fail[f], bans1 = p->nbans, nrw = 0, incomplete = 0;
                vt_cclip_info info;
                vt__bt_gather(p, wk, n, vt__bt_tag(p, rd, VT__PH_AUDIT, kk), dl, in);
                for (w = 0; w < n; w++) {
                    float *dst = pub + w * L;
                    if (wk[w] < 0) continue;
                    if (w == me) memcpy(dst, p->gp + kk * L, sizeof(float) * (size_t)L);
                    else if (!in[w].got) { vt__bt_ban(p, wk[w], VT_BAN_SILENT, -1, rd); incomplete = 1; continue; }
                    else if (!vt__bt_part_ok(p, in[w].p, in[w].n, NULL, p->c_parts + ((size_t)w * N + kk) * 32, dst)) { vt__bt_ban(p, wk[w], VT_BAN_PART, -1, rd); incomplete = 1; continue; }
                    rp[nrw++] = dst;
                }
                vt__bt_in_free(in, n);
                if (incomplete) continue; /* the round restarts without the silent worker */
                vt_centered_clip(rp, nrw, L, p->cfg.tau, p->cfg.cc_iters, p->cfg.cc_eps, cc, &info);
                if (memcmp(cc, p->agg + kk * L, sizeof(float) * (size_t)L)) vt__bt_ban(p, p->mem[kk], VT_BAN_AGGREGATE, -1, rd);
                for (w = 0; w < n; w++) {
                    double sv, nv;
                    const double *rep = p->sc + ((size_t)w * N + kk) * 2;
                    if (wk[w] < 0) continue;
                    vt__bt_scalar(pub + w * L, p->agg + kk * L, L, kk * L, zs, &sv, &nv);
                    if (memcmp(&sv, &rep[0], 8) || memcmp(&nv, &rep[1], 8)) vt__bt_ban(p, wk[w], VT_BAN_SCALARS, -1, rd);
                }
                if (p->nbans == bans1) { vt__bt_event(p, rd, VT_EV_FALSE_ALARM, p->mem[kk], -1, VT_BAN_AGGREGATE, 0); p->st.false_alarms++; }
            }
            VT_FREE(rp, NULL); VT_FREE(pub, NULL); VT_FREE(cc, NULL);
        }
        VT_FREE(fail, NULL); VT_FREE(s, NULL); VT_FREE(wk, NULL);
        if (p->nbans != bans0) goto done;
    }
    ret = 1;
done:
    if (ag) vt__bt_in_free(ag, n);
    VT_FREE(in, NULL);
    VT_FREE(ag, NULL);
    VT_FREE(buf, NULL);
    if (ret >= 0 && !p->alive[p->rank]) ret = -1;
    return ret;
}

/* --- 9. UPDATE ------------------------------------------------------------------------------------ */

static void vt__bt_update(vt_btard_peer *p, const float *agg) {
    int i;
    double t0 = vt_net_now();
    double lr = p->task.lr_at ? p->task.lr_at(p->step, p->task.user) : p->task.lr;
    if (vt_step_begin(p->M) == VT_OK) {
        for (i = 0; i < p->np; i++) {
            vt_tensor *t = vt_param_at(p->M, i);
            int64_t k, n = p->poff[i + 1] - p->poff[i];
            double *gd = (double *)t->grad->data;
            for (k = 0; k < n; k++) gd[k] = (double)agg[p->poff[i] + k];
            t->grad_fresh = 0;
        }
        vt_optim_step(p->M, p->opt, lr);
    }
    vt_step_end(p->M);
    if (vt_status_of(p->M) != VT_OK)
        vt__bt_fail(p, vt_status_of(p->M), "peer %d, step %lld: the update failed: %s", p->rank, (long long)p->step, vt_error_message(p->M));
    p->st.t_update += vt_net_now() - t0;
}

/* the previous step, as it ended, for the validators of the next */
static void vt__bt_keep(vt_btard_peer *p) {
    int i, N = p->N;
    float *t;
    vt__bt_buf b;
    p->pv_ok = 1;
    p->pv_n = p->n;
    p->pv_L = p->L;
    p->pv_step = p->step;
    memcpy(p->pv_mem, p->mem, sizeof(int) * (size_t)p->n);
    memcpy(p->pv_has, p->c_has, (size_t)p->n);
    for (i = 0; i < p->n; i++) {
        if (!p->c_has[i]) continue;
        memcpy(p->pv_parts + (size_t)i * N * 32, p->c_parts + (size_t)i * N * 32, 32 * (size_t)p->n);
        memcpy(p->pv_chunk + (size_t)i * 32, p->c_chunk + (size_t)i * 32, 32);
        memcpy(p->pv_sc + (size_t)i * N * 2, p->sc + (size_t)i * N * 2, sizeof(double) * 2 * (size_t)p->n);
    }
    memcpy(p->pv_agg, p->agg, sizeof(float) * (size_t)(p->n * p->L));
    memcpy(p->pv_r, p->r, 32);
    t = p->w_prev; p->w_prev = p->w_cur; p->w_cur = t;
    b = p->chunk_prev; p->chunk_prev = p->chunk; p->chunk = b;
    p->chunk.n = 0;
    if (!p->worker) p->chunk_prev.n = 0;
}

/* --- the plain butterfly all-reduce of the mean (the baseline; no defence) --------------------------- */

static vt_status vt__bt_step_mean(vt_btard_peer *p) {
    int i, k, n, me;
    int64_t L, j;
    vt__bt_in *in = (vt__bt_in *)VT_MALLOC(sizeof(vt__bt_in) * (size_t)p->N, NULL);
    unsigned char *b = NULL;
    if (!in) { vt__bt_fail(p, VT_ERR_NOMEM, "out of memory"); return p->status; }
    for (i = 0; i < p->N; i++) p->alive[i] = 1;
    vt__bt_partition(p);
    n = p->n; me = p->me; L = p->L;
    p->worker = 1;
    vt__bt_work(p);
    if (p->status != VT_OK) { VT_FREE(in, NULL); return p->status; }
    memcpy(p->gp, p->g, sizeof(float) * (size_t)p->d);
    for (k = (int)p->d; k < n * L; k++) p->gp[k] = 0.0f;
    if (!vt__bt_attacking(p, VT_ATTACK_SILENT))
        for (k = 0; k < n; k++)
            if (k != me) vt__bt_send_part(p, p->mem[k], vt__bt_tag(p, 0, VT__PH_MPART, k), p->gp + k * L, 0);
    vt__bt_gather(p, p->mem, n, vt__bt_tag(p, 0, VT__PH_MPART, me), vt_net_now() + p->cfg.timeout, in);
    {
        double t0 = vt_net_now();
        double *acc = (double *)VT_MALLOC(sizeof(double) * (size_t)(L ? L : 1), NULL);
        int cnt = 0;
        if (!acc) { vt__bt_in_free(in, n); VT_FREE(in, NULL); vt__bt_fail(p, VT_ERR_NOMEM, "out of memory"); return p->status; }
        for (j = 0; j < L; j++) acc[j] = 0;
        for (i = 0; i < n; i++) {
            const float *x = p->rows + i * L;
            if (i == me) x = p->gp + me * L;
            else if (!in[i].got || in[i].n != 4 * (size_t)L) continue;
            else vt__bt_le2f(in[i].p, L, p->rows + i * L);
            for (j = 0; j < L; j++) acc[j] += (double)x[j];
            cnt++;
        }
        for (j = 0; j < L; j++) p->agg[me * L + j] = (float)(acc[j] / (cnt ? cnt : 1));
        if (vt__bt_attacking(p, VT_ATTACK_LYING_AGGREGATOR))
            for (j = 0; j < L; j++) p->agg[me * L + j] = (float)(p->atk.scale * p->agg[me * L + j]);
        VT_FREE(acc, NULL);
        p->st.t_aggregate += vt_net_now() - t0;
    }
    vt__bt_in_free(in, n);
    b = (unsigned char *)VT_MALLOC(4 * (size_t)L + 1, NULL);
    if (b) {
        vt__bt_f2le(p->agg + me * L, L, b);
        if (vt__bt_attacking(p, VT_ATTACK_GARBAGE)) vt__bt_garbage(p, b, 4 * (size_t)L, 3);
        for (i = 0; i < n; i++) if (i != me) p->net->send(p->net, p->mem[i], vt__bt_tag(p, 0, VT__PH_MAGG, 0), b, 4 * (size_t)L);
        VT_FREE(b, NULL);
    }
    vt__bt_gather(p, p->mem, n, vt__bt_tag(p, 0, VT__PH_MAGG, 0), vt_net_now() + p->cfg.timeout, in);
    for (i = 0; i < n; i++) {
        if (i == me) continue;
        if (in[i].got && in[i].n == 4 * (size_t)L) vt__bt_le2f(in[i].p, L, p->agg + i * L);
        else for (j = 0; j < L; j++) p->agg[i * L + j] = 0.0f;
    }
    vt__bt_in_free(in, n);
    VT_FREE(in, NULL);
    vt__bt_update(p, p->agg);
    return p->status;
}

/* --- one step ------------------------------------------------------------------------------------------ */

/* the weights digest of COMMIT: H("vt-btard-x", d, H(first half), H(second
   half)) over the little-endian binary32 weights; the halves side by side */
static void vt__bt_xdigest(const float *x, int64_t d, unsigned char out[32]) {
    int64_t h = (d + 1) / 2; /* values in the first half; the second has d - h */
    unsigned char b[8 + 64];
    vt_sha256_ctx s;
    if (vt__host_le()) {
        vt_sha256_ctx a, c;
        vt_sha256_init(&a);
        vt_sha256_init(&c);
        vt__sha256_update2(&a, x, &c, x + h, 4 * (size_t)(d - h));
        vt_sha256_update(&a, x + (d - h), 4 * (size_t)(h - (d - h)));
        vt_sha256_final(&a, b + 8);
        vt_sha256_final(&c, b + 40);
    } else {
        vt__bt_hash_f32(x, h, b + 8);
        vt__bt_hash_f32(x + h, d - h, b + 40);
    }
    vt__bt_p64(b, (uint64_t)d);
    vt_sha256_init(&s);
    vt_sha256_update(&s, "vt-btard-x", 10);
    vt_sha256_update(&s, b, sizeof b);
    vt_sha256_final(&s, out);
}

VTDEF vt_status vt_btard_step(vt_btard_peer *p) {
    double t0 = vt_net_now();
    int rd, res = 0, q, maxr;
    if (!p) return VT_ERR_ARG;
    if (p->status != VT_OK) return p->status;
    if (!p->alive[p->rank]) return VT_ERR_STATE;
    if (p->step >= 0xFFFFFF) { vt__bt_fail(p, VT_ERR_STATE, "step %lld: the tag space has 2^24 steps", (long long)p->step); return p->status; }
    vt__bt_drop_late(p, 0);
    if (p->cfg.defence == VT_DEFENCE_MEAN) {
        vt__bt_step_mean(p);
        p->step++;
        p->st.steps++;
        p->st.t_step += vt_net_now() - t0;
        return p->status;
    }
    p->sched = t0;
    vt__bt_roles(p);
    p->worker = !p->val[p->rank];
    /* my validators get my chunk of the previous step */
    for (q = 0; q < p->nvp; q++)
        if (p->vtg[q] == p->rank && !vt__bt_attacking(p, VT_ATTACK_SILENT))
            p->net->send(p->net, p->vv[q], vt__bt_tag(p, 0, VT__PH_CHUNK, 0), p->chunk_prev.p, p->chunk_prev.n);
    {
        int i;
        for (i = 0; i < p->np; i++) {
            const vt_tensor *t = vt_param_at(p->M, i);
            int64_t e, ne = p->poff[i + 1] - p->poff[i];
            for (e = 0; e < ne; e++) p->w_cur[p->poff[i] + e] = (float)((const double *)t->data)[e];
        }
    }
    vt__bt_xdigest(p->w_cur, p->d, p->wdig);
    if (p->worker) {
        double tg = vt_net_now();
        vt__bt_work(p);
        p->st.t_grad += vt_net_now() - tg;
        if (p->status != VT_OK) return p->status;
        vt_sha256(p->chunk.p, p->chunk.n, p->chunk_sha);
    } else {
        memset(p->chunk_sha, 0, 32);
        p->chunk.n = 0;
        vt__bt_validate(p);
    }
    p->acc_done = 0;
    maxr = p->N + 1 < 255 ? p->N + 1 : 255;
    for (rd = 0; rd < maxr; rd++) {
        p->st.rounds++;
        res = vt__bt_round(p, rd);
        if (res != 0) break;
        p->st.restarts++;
        if (!p->alive[p->rank]) { res = -1; break; }
    }
    if (res < 0) {
        if (p->status == VT_OK) vt__bt_fail(p, VT_ERR_STATE, "peer %d was banned at step %lld", p->rank, (long long)p->step);
        p->st.t_step += vt_net_now() - t0;
        return p->status;
    }
    if (res == 1) {
        vt__bt_update(p, p->agg);
        vt__bt_keep(p);
    } else {
        /* no round completed: nobody updates (never a local-only update) */
        p->st.skipped++;
        p->pv_ok = 0;
        p->chunk_prev.n = 0;
    }
    p->step++;
    p->st.steps++;
    p->st.t_step += vt_net_now() - t0;
    return p->status;
}

/* --- creating a peer --------------------------------------------------------------------------------- */

VTDEF vt_btard_peer *vt_btard_peer_create(const vt_btard_cfg *cfg, const vt_btard_task *task, vt_net *net,
                                          const vt_btard_attack *atk) {
    vt_btard_peer *p;
    vt_desc dm = vt_desc_default(), da = vt_desc_default();
    int i, N;
    size_t NN;
    int64_t D;
    char ord[64];
    if (!task || !task->init || !task->loss || !net || net->size < 1 || net->size > 4096 || net->rank < 0 || net->rank >= net->size) {
        vt__tls_fail(VT_ERR_ARG, "vt_btard_peer_create: need a task (init, loss) and a transport");
        return NULL;
    }
    if (task->optimizer == NULL) { vt__tls_fail(VT_ERR_ARG, "vt_btard_peer_create: the task has no optimizer"); return NULL; }
    if (vt__contracts()) {
        vt__tls_fail(VT_ERR_BACKEND, "vt_btard_peer_create: this build fuses a*b+c into fma: compile with -ffp-contract=off");
        return NULL;
    }
    p = (vt_btard_peer *)VT_MALLOC(sizeof(vt_btard_peer), NULL);
    if (!p) { vt__tls_fail(VT_ERR_NOMEM, "vt_btard_peer_create: out of memory"); return NULL; }
    memset(p, 0, sizeof *p);
    p->cfg = cfg ? *cfg : vt_btard_cfg_default();
    if (p->cfg.validators <= 0) p->cfg.validators = 1;
    if (p->cfg.validators > 64) p->cfg.validators = 64;
    if (!(p->cfg.tau > 0)) p->cfg.tau = 1.0;
    if (p->cfg.cc_iters <= 0) p->cfg.cc_iters = 100;
    if (!(p->cfg.cc_eps > 0)) p->cfg.cc_eps = 0x1p-20;
    if (!(p->cfg.lambda > 0)) p->cfg.lambda = 8;
    if (!(p->cfg.timeout > 0)) p->cfg.timeout = 10;
    if (!(p->cfg.compute_timeout > 0)) p->cfg.compute_timeout = 60;
    if (p->cfg.threads <= 0) p->cfg.threads = 1;
    if (!p->cfg.max_chunk) p->cfg.max_chunk = (size_t)16 << 20;
    p->task = *task;
    if (atk) p->atk = *atk;
    else p->atk = vt_btard_attack_default(VT_ATTACK_NONE);
    p->net = net;
    p->rank = net->rank;
    p->N = N = net->size;
    p->secret = vt_rng_u64(p->cfg.secret_seed, 0x5ec7e7u, (uint64_t)p->rank);
    dm.log_memory = 1;
    dm.order.threads = p->cfg.threads;
    da.role = VT_ROLE_AUDIT;
    da.log_memory = 1;
    if (p->cfg.audit_order) {
        if (vt_order_parse(&da.order, p->cfg.audit_order) != VT_OK) { VT_FREE(p, NULL); return NULL; }
    } else {
        snprintf(ord, sizeof ord, "threads:%d,chaos:%d", p->cfg.threads, 7919 * (p->rank + 1));
        vt_order_parse(&da.order, ord);
    }
    p->M = vt_create(&dm);
    p->A = p->M ? vt_create(&da) : NULL;
    if (!p->M || !p->A) { vt_destroy(p->M); VT_FREE(p, NULL); return NULL; }
    p->mm = task->init(p->M, task->user);
    if (vt_status_of(p->M) == VT_OK) p->opt = task->optimizer(p->M, p->mm, task->user);
    p->ma = task->init(p->A, task->user);
    if (vt_status_of(p->M) != VT_OK || vt_status_of(p->A) != VT_OK || !p->opt) {
        vt__tls_fail(VT_ERR_STATE, "vt_btard_peer_create: the task's init failed: %s",
                     vt_status_of(p->M) != VT_OK ? vt_error_message(p->M) : vt_error_message(p->A));
        vt_btard_peer_destroy(p);
        return NULL;
    }
    p->np = vt_param_count(p->M);
    p->d = D = vt_param_numel(p->M);
    if (vt_param_count(p->A) != p->np || vt_param_numel(p->A) != D || D < 1) {
        vt__tls_fail(VT_ERR_STATE, "vt_btard_peer_create: the task's init made different models on two contexts");
        vt_btard_peer_destroy(p);
        return NULL;
    }
    NN = (size_t)N * (size_t)N;
#define VT__BT_A(ptr, type, cnt) (ptr = (type *)VT_MALLOC(sizeof(type) * (size_t)(cnt) + 1, NULL), ptr ? (memset(ptr, 0, sizeof(type) * (size_t)(cnt) + 1), 1) : 0)
    if (!VT__BT_A(p->poff, int64_t, p->np + 1) || !VT__BT_A(p->alive, unsigned char, N) || !VT__BT_A(p->mem, int, N) ||
        !VT__BT_A(p->wk, int, N) || !VT__BT_A(p->pos, int, N) || !VT__BT_A(p->val, unsigned char, N) ||
        !VT__BT_A(p->g, float, D) || !VT__BT_A(p->gt, float, D) || !VT__BT_A(p->gp, float, D + N) ||
        !VT__BT_A(p->tmpf, float, D + N) || !VT__BT_A(p->w_cur, float, D) || !VT__BT_A(p->w_prev, float, D) ||
        !VT__BT_A(p->vv, int, 65) || !VT__BT_A(p->vtg, int, 65) || !VT__BT_A(p->c_has, unsigned char, N) ||
        !VT__BT_A(p->c_parts, unsigned char, NN * 32) || !VT__BT_A(p->c_chunk, unsigned char, N * 32) ||
        !VT__BT_A(p->c_mprng, unsigned char, N * 32) || !VT__BT_A(p->c_vt, int, N) || !VT__BT_A(p->c_vc, int, N) ||
        !VT__BT_A(p->a_hash, unsigned char, N * 32) || !VT__BT_A(p->a_stat, unsigned char, NN) ||
        !VT__BT_A(p->r_x, unsigned char, N * 32) || !VT__BT_A(p->r_comp, unsigned char, NN) ||
        !VT__BT_A(p->sc, double, NN * 2) || !VT__BT_A(p->agg, float, D + N) || !VT__BT_A(p->rows, float, D + N) ||
        !VT__BT_A(p->pv_mem, int, N) || !VT__BT_A(p->pv_has, unsigned char, N) ||
        !VT__BT_A(p->pv_parts, unsigned char, NN * 32) || !VT__BT_A(p->pv_chunk, unsigned char, N * 32) ||
        !VT__BT_A(p->pv_sc, double, NN * 2) || !VT__BT_A(p->pv_agg, float, D + N) || !VT__BT_A(p->late, int64_t, N) ||
        !VT__BT_A(p->g_from, int, N) || !VT__BT_A(p->g_got, int, N) || !VT__BT_A(p->g_p, unsigned char *, N) ||
        !VT__BT_A(p->g_n, size_t, N) || !VT__BT_A(p->hs, unsigned char, N * 32) ||
        !vt__bt_reserve(&p->chunk, 256) || !vt__bt_reserve(&p->chunk_prev, 256) || !vt__bt_reserve(&p->tmp, 256)) {
        vt__tls_fail(VT_ERR_NOMEM, "vt_btard_peer_create: out of memory (%d peers, %lld parameters)", N, (long long)D);
        vt_btard_peer_destroy(p);
        return NULL;
    }
    if (p->atk.kind == VT_ATTACK_IPM || p->atk.kind == VT_ATTACK_ALIE) {
        if (!VT__BT_A(p->est1, double, D) || !VT__BT_A(p->est2, double, D)) {
            vt__tls_fail(VT_ERR_NOMEM, "vt_btard_peer_create: out of memory");
            vt_btard_peer_destroy(p);
            return NULL;
        }
    }
    if (p->atk.kind == VT_ATTACK_DELAYED) {
        p->ring_len = (p->atk.delay > 0 ? p->atk.delay : 1) + 1;
        if ((double)p->ring_len * (double)D * 4 > 4e9 || !VT__BT_A(p->ring, float, p->ring_len * D)) {
            vt__tls_fail(VT_ERR_NOMEM, "vt_btard_peer_create: no memory for %lld delayed gradients", (long long)p->ring_len);
            vt_btard_peer_destroy(p);
            return NULL;
        }
    }
#undef VT__BT_A
    for (i = 0; i < p->np; i++) p->poff[i + 1] = p->poff[i] + vt_numel(vt_param_at(p->M, i));
    for (i = 0; i < N; i++) p->alive[i] = 1;
    return p;
}

VTDEF void vt_btard_peer_destroy(vt_btard_peer *p) {
    if (!p) return;
    if (p->task.release) {
        if (p->mm) p->task.release(p->mm, p->task.user);
        if (p->ma) p->task.release(p->ma, p->task.user);
    }
    vt_destroy(p->M);
    vt_destroy(p->A);
    VT_FREE(p->poff, NULL); VT_FREE(p->alive, NULL); VT_FREE(p->mem, NULL); VT_FREE(p->wk, NULL); VT_FREE(p->pos, NULL);
    VT_FREE(p->val, NULL); VT_FREE(p->g, NULL); VT_FREE(p->gt, NULL); VT_FREE(p->gp, NULL); VT_FREE(p->tmpf, NULL);
    VT_FREE(p->w_cur, NULL); VT_FREE(p->w_prev, NULL); VT_FREE(p->vv, NULL); VT_FREE(p->vtg, NULL);
    VT_FREE(p->c_has, NULL); VT_FREE(p->c_parts, NULL); VT_FREE(p->c_chunk, NULL); VT_FREE(p->c_mprng, NULL);
    VT_FREE(p->c_vt, NULL); VT_FREE(p->c_vc, NULL); VT_FREE(p->a_hash, NULL); VT_FREE(p->a_stat, NULL);
    VT_FREE(p->r_x, NULL); VT_FREE(p->r_comp, NULL); VT_FREE(p->sc, NULL); VT_FREE(p->agg, NULL); VT_FREE(p->rows, NULL);
    VT_FREE(p->pv_mem, NULL); VT_FREE(p->pv_has, NULL); VT_FREE(p->pv_parts, NULL); VT_FREE(p->pv_chunk, NULL);
    VT_FREE(p->pv_sc, NULL); VT_FREE(p->pv_agg, NULL); VT_FREE(p->late, NULL); VT_FREE(p->est1, NULL);
    VT_FREE(p->est2, NULL); VT_FREE(p->ring, NULL); VT_FREE(p->ev, NULL);
    VT_FREE(p->g_from, NULL); VT_FREE(p->g_got, NULL); VT_FREE(p->g_p, NULL); VT_FREE(p->g_n, NULL);
    VT_FREE(p->hs, NULL);
    VT_FREE(p->chunk.p, NULL); VT_FREE(p->chunk_prev.p, NULL); VT_FREE(p->tmp.p, NULL);
    VT_FREE(p, NULL);
}

VTDEF const char *vt_btard_error(const vt_btard_peer *p) { return p ? p->msg : "no peer"; }
VTDEF int64_t vt_btard_step_index(const vt_btard_peer *p) { return p->step; }
VTDEF int vt_btard_rank(const vt_btard_peer *p) { return p->rank; }
VTDEF int vt_btard_alive(const vt_btard_peer *p, int rank) { return rank >= 0 && rank < p->N && p->alive[rank]; }
VTDEF int vt_btard_alive_count(const vt_btard_peer *p) {
    int i, k = 0;
    for (i = 0; i < p->N; i++) k += p->alive[i];
    return k;
}
VTDEF vt_ctx *vt_btard_ctx(vt_btard_peer *p) { return p->M; }
VTDEF void *vt_btard_model(vt_btard_peer *p) { return p->mm; }
VTDEF void vt_btard_digest(const vt_btard_peer *p, unsigned char out[32]) {
    vt_weights_digest(p->M, out);
}
VTDEF int vt_btard_events(const vt_btard_peer *p, const vt_btard_event **ev) {
    *ev = p->ev;
    return p->nev;
}
VTDEF void vt_btard_stats_get(const vt_btard_peer *p, vt_btard_stats *s) { *s = p->st; }

/* ==========================================================================
   >>swarm  an in-process swarm: one thread per peer
   ========================================================================== */

#ifndef VTRAIN_NO_THREADS
typedef struct {
    vt_btard_peer *p;
    int64_t nsteps, done;
    int observer;
    vt_btard_observer obs;
    void *ou;
} vt__bt_thr;

static void *vt__bt_thread(void *arg) {
    vt__bt_thr *t = (vt__bt_thr *)arg;
    int64_t s;
    for (s = 0; s < t->nsteps; s++) {
        if (vt_btard_step(t->p) != VT_OK) break;
        t->done++;
        if (t->observer && t->obs) t->obs(t->p, s, t->ou);
    }
    return NULL;
}
#endif

VTDEF void vt_btard_result_free(vt_btard_result *r) {
    if (!r) return;
    VT_FREE(r->banned_at, NULL);
    VT_FREE(r->ban_reason, NULL);
    VT_FREE(r->events, NULL);
    r->banned_at = NULL; r->ban_reason = NULL; r->events = NULL;
}

VTDEF vt_status vt_btard_simulate(const vt_btard_cfg *cfg, const vt_btard_task *task, int n,
                                  const vt_btard_attack *attacks, int64_t nsteps, vt_btard_observer obs,
                                  void *obs_user, vt_btard_result *res) {
#ifdef VTRAIN_NO_THREADS
    (void)cfg; (void)task; (void)n; (void)attacks; (void)nsteps; (void)obs; (void)obs_user;
    memset(res, 0, sizeof *res);
    res->status = VT_ERR_BACKEND;
    snprintf(res->message, sizeof res->message, "vt_btard_simulate needs threads (built with VTRAIN_NO_THREADS)");
    return res->status;
#else
    vt_net **eps;
    vt_btard_peer **peers;
    vt__bt_thr *th;
    pthread_t *tid;
    int i, j, obsv = -1;
    double t0 = vt_net_now();
    vt_btard_peer *o;
    memset(res, 0, sizeof *res);
    res->n = n;
    res->attackers_banned_at = -1;
    for (i = 0; i < n && obsv < 0; i++) if (!attacks || attacks[i].kind == VT_ATTACK_NONE) obsv = i;
    if (obsv < 0) { res->status = VT_ERR_ARG; snprintf(res->message, sizeof res->message, "no honest peer"); return res->status; }
    res->observer = obsv;
    eps = vt_net_inproc_create(n, 0);
    peers = (vt_btard_peer **)VT_MALLOC(sizeof(vt_btard_peer *) * (size_t)n, NULL);
    th = (vt__bt_thr *)VT_MALLOC(sizeof(vt__bt_thr) * (size_t)n, NULL);
    tid = (pthread_t *)VT_MALLOC(sizeof(pthread_t) * (size_t)n, NULL);
    res->banned_at = (int64_t *)VT_MALLOC(sizeof(int64_t) * (size_t)n, NULL);
    res->ban_reason = (int *)VT_MALLOC(sizeof(int) * (size_t)n, NULL);
    if (!eps || !peers || !th || !tid || !res->banned_at || !res->ban_reason) {
        res->status = VT_ERR_NOMEM;
        snprintf(res->message, sizeof res->message, "out of memory");
        if (eps) for (i = 0; i < n; i++) eps[i]->destroy(eps[i]);
        VT_FREE(peers, NULL); VT_FREE(th, NULL); VT_FREE(tid, NULL);
        return res->status;
    }
    for (i = 0; i < n; i++) {
        peers[i] = vt_btard_peer_create(cfg, task, eps[i], attacks ? &attacks[i] : NULL);
        if (!peers[i]) {
            res->status = vt_last_status() != VT_OK ? vt_last_status() : VT_ERR_STATE;
            snprintf(res->message, sizeof res->message, "peer %d: %.400s", i, vt_last_error());
            for (j = 0; j < i; j++) vt_btard_peer_destroy(peers[j]);
            for (j = 0; j < n; j++) eps[j]->destroy(eps[j]);
            VT_FREE(peers, NULL); VT_FREE(th, NULL); VT_FREE(tid, NULL);
            return res->status;
        }
    }
    for (i = 0; i < n; i++) {
        th[i].p = peers[i]; th[i].nsteps = nsteps; th[i].done = 0; th[i].observer = i == obsv; th[i].obs = obs; th[i].ou = obs_user;
        pthread_create(&tid[i], NULL, vt__bt_thread, &th[i]);
    }
    /* the honest peers first; then whoever is left (Byzantines waiting on a
       swarm that dropped them) is woken and gives up at once */
    for (i = 0; i < n; i++) if (!attacks || attacks[i].kind == VT_ATTACK_NONE) pthread_join(tid[i], NULL);
    res->seconds = vt_net_now() - t0;
    {
        vt__bt_hub *h = (vt__bt_hub *)eps[0]->impl;
        h->closed = 1;
        for (i = 0; i < n; i++) {
            pthread_mutex_lock(&h->box[i].mu);
            pthread_cond_broadcast(&h->box[i].cv);
            pthread_mutex_unlock(&h->box[i].mu);
        }
    }
    for (i = 0; i < n; i++) if (attacks && attacks[i].kind != VT_ATTACK_NONE) pthread_join(tid[i], NULL);
    /* everyone has stopped: what is still queued for a step already taken
       came late (a run can end before a late message lands) */
    for (i = 0; i < n; i++)
        if ((!attacks || attacks[i].kind == VT_ATTACK_NONE) && peers[i]->status == VT_OK) vt__bt_drop_late(peers[i], 0);
    o = peers[obsv];
    res->steps = th[obsv].done;
    res->status = o->status;
    if (o->status != VT_OK) snprintf(res->message, sizeof res->message, "%.500s", o->msg);
    vt_btard_stats_get(o, &res->stats);
    res->step_ms = res->steps ? 1e3 * res->stats.t_step / (double)res->steps : 0;
    vt_btard_digest(o, res->digest);
    for (i = 0; i < n; i++) { res->banned_at[i] = -1; res->ban_reason[i] = -1; }
    for (i = 0; i < o->nev; i++)
        if (o->ev[i].kind == VT_EV_BAN && res->banned_at[o->ev[i].peer] < 0) {
            res->banned_at[o->ev[i].peer] = o->ev[i].step;
            res->ban_reason[o->ev[i].peer] = (int)o->ev[i].reason;
        }
    res->events = (vt_btard_event *)VT_MALLOC(sizeof(vt_btard_event) * (size_t)(o->nev + 1), NULL);
    if (res->events) { if (o->nev) memcpy(res->events, o->ev, sizeof(vt_btard_event) * (size_t)o->nev); res->nevents = o->nev; }
    /* honest peers: nobody honest banned in any honest view; identical views and weights */
    res->views_agree = 1;
    for (i = 0; i < n; i++) {
        int honest_i = !attacks || attacks[i].kind == VT_ATTACK_NONE;
        unsigned char dg[32];
        if (!honest_i) continue;
        for (j = 0; j < n; j++) {
            int honest_j = !attacks || attacks[j].kind == VT_ATTACK_NONE;
            if (honest_j && !peers[i]->alive[j]) { res->honest_banned++; res->views_agree = 0; }
            if (peers[i]->alive[j] != o->alive[j]) res->views_agree = 0;
        }
        if (peers[i]->status != VT_OK && !res->message[0]) snprintf(res->message, sizeof res->message, "peer %d: %.400s", i, peers[i]->msg);
        if (peers[i]->status != VT_OK) res->views_agree = 0;
        vt_btard_digest(peers[i], dg);
        if (memcmp(dg, res->digest, 32)) res->views_agree = 0;
    }
    /* attackers: those that attacked at least once; when was the last banned */
    for (i = 0; attacks && i < n; i++) {
        int64_t s, first = -1;
        if (attacks[i].kind == VT_ATTACK_NONE) continue;
        for (s = 0; s < res->steps && first < 0; s++) if (vt_btard_attacking(&attacks[i], s)) first = s;
        if (first < 0 || (res->banned_at[i] >= 0 && res->banned_at[i] < first)) continue;
        res->attackers++;
        if (res->banned_at[i] >= 0) {
            res->attackers_banned++;
            if (res->banned_at[i] > res->attackers_banned_at) res->attackers_banned_at = res->banned_at[i];
        }
    }
    if (res->attackers_banned < res->attackers) res->attackers_banned_at = -1;
    for (i = 0; i < n; i++) vt_btard_peer_destroy(peers[i]);
    for (i = 0; i < n; i++) eps[i]->destroy(eps[i]);
    VT_FREE(peers, NULL); VT_FREE(th, NULL); VT_FREE(tid, NULL);
    return res->status;
#endif
}

/* ==========================================================================
   >>digits  a ready task: 64 -> hidden -> 10 MLP on the digits,
   minibatches from the public seed (with replacement from the training
   split)
   ========================================================================== */

static void *vt__bt_dg_init(vt_ctx *c, void *user) {
    vt_btard_digits *d = (vt_btard_digits *)user;
    vt_mlp *m = (vt_mlp *)VT_MALLOC(sizeof(vt_mlp), NULL);
    int sizes[3];
    if (!m) return NULL;
    sizes[0] = 64; sizes[1] = d->hidden; sizes[2] = 10;
    vt_mlp_init(c, m, 2, sizes, 0, 1234);
    return m;
}
static vt_optim *vt__bt_dg_opt(vt_ctx *c, void *model, void *user) {
    vt_btard_digits *d = (vt_btard_digits *)user;
    (void)model;
    if (d->adam) {
        vt_adamw_desc a = vt_adamw_default();
        a.lr = d->lr;
        a.weight_decay = 1e-4;
        return vt_adamw_create(c, &a);
    } else {
        vt_sgd_desc s = vt_sgd_default();
        s.lr = d->lr;
        s.momentum = 0.9;
        return vt_sgd_create(c, &s);
    }
}
static vt_status vt__bt_dg_loss(vt_ctx *c, void *model, uint64_t seed, int flip, void *user) {
    vt_btard_digits *d = (vt_btard_digits *)user;
    int B = d->batch, b;
    int64_t xs[2], ys[1];
    float *x = (float *)VT_MALLOC(sizeof(float) * 64 * (size_t)B, NULL);
    int32_t *y = (int32_t *)VT_MALLOC(sizeof(int32_t) * (size_t)B, NULL);
    vt_tensor *loss;
    if (!x || !y || !model) { VT_FREE(x, NULL); VT_FREE(y, NULL); return VT_ERR_NOMEM; }
    for (b = 0; b < B; b++) {
        int k = d->perm[vt_rng_u64(seed, 0, (uint64_t)b) % (uint64_t)d->ntrain];
        memcpy(x + 64 * b, d->data.x + 64 * k, sizeof(float) * 64);
        y[b] = flip ? 9 - d->data.y[k] : d->data.y[k];
    }
    xs[0] = B; xs[1] = 64; ys[0] = B;
    loss = vt_cross_entropy(c, vt_mlp_forward(c, (const vt_mlp *)model, vt_from_f32(c, 2, xs, x)), vt_from_i32(c, 1, ys, y));
    vt_backward(c, loss);
    VT_FREE(x, NULL);
    VT_FREE(y, NULL);
    return vt_status_of(c);
}
static void vt__bt_dg_release(void *model, void *user) { (void)user; VT_FREE(model, NULL); }
static double vt__bt_dg_lr(int64_t t, void *user) {
    const vt_btard_digits *d = (const vt_btard_digits *)user;
    double f = d->decay > 0 ? (double)(t < d->decay ? t : d->decay) / (double)d->decay : 0;
    return d->lr * (1 - 0.9 * f); /* + - * / only: the same double everywhere */
}

VTDEF vt_status vt_btard_digits_load(vt_btard_digits *d, const char *path, int hidden, int batch, double lr) {
    int i;
    memset(d, 0, sizeof *d);
    if (vt_digits_load(path, &d->data) != VT_OK) return vt_last_status();
    d->perm = (int32_t *)VT_MALLOC(sizeof(int32_t) * (size_t)d->data.n, NULL);
    if (!d->perm) { vt_digits_free(&d->data); return vt__tls_fail(VT_ERR_NOMEM, "out of memory"); }
    for (i = 0; i < d->data.n; i++) d->perm[i] = (int32_t)vt_shuffle(7, 0, (uint64_t)i, (uint64_t)d->data.n);
    d->ntest = d->data.n / 5;
    d->ntrain = d->data.n - d->ntest;
    d->hidden = hidden > 0 ? hidden : 128;
    d->batch = batch > 0 ? batch : 32;
    d->lr = lr > 0 ? lr : 0.05;
    return VT_OK;
}

VTDEF vt_btard_task vt_btard_digits_task(vt_btard_digits *d) {
    vt_btard_task t;
    memset(&t, 0, sizeof t);
    t.init = vt__bt_dg_init;
    t.optimizer = vt__bt_dg_opt;
    t.loss = vt__bt_dg_loss;
    t.release = vt__bt_dg_release;
    t.lr_at = vt__bt_dg_lr;
    t.lr = d->lr;
    t.user = d;
    return t;
}

VTDEF double vt_btard_digits_accuracy(vt_ctx *c, void *model, const vt_btard_digits *d) {
    int i, j, correct = 0, n = d->ntest;
    int64_t xs[2];
    float *x = (float *)VT_MALLOC(sizeof(float) * 64 * (size_t)n + 1, NULL);
    double *l = (double *)VT_MALLOC(sizeof(double) * 10 * (size_t)n + 1, NULL);
    vt_tensor *logits;
    if (!x || !l || !model || n < 1) { VT_FREE(x, NULL); VT_FREE(l, NULL); return 0; }
    for (i = 0; i < n; i++) memcpy(x + 64 * i, d->data.x + 64 * d->perm[d->ntrain + i], sizeof(float) * 64);
    vt_eval_begin(c);
    xs[0] = n; xs[1] = 64;
    logits = vt_mlp_forward(c, (const vt_mlp *)model, vt_from_f32(c, 2, xs, x));
    if (logits && vt_read_f64(c, logits, l) == VT_OK)
        for (i = 0; i < n; i++) {
            int best = 0;
            for (j = 1; j < 10; j++) if (l[i * 10 + j] > l[i * 10 + best]) best = j;
            correct += best == d->data.y[d->perm[d->ntrain + i]];
        }
    vt_eval_end(c);
    VT_FREE(x, NULL);
    VT_FREE(l, NULL);
    return (double)correct / n;
}

VTDEF void vt_btard_digits_free(vt_btard_digits *d) {
    vt_digits_free(&d->data);
    VT_FREE(d->perm, NULL);
    d->perm = NULL;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
#endif /* VTRAIN_BTARD_IMPLEMENTATION_INCLUDED */
#endif /* VTRAIN_IMPLEMENTATION */

/*
   REVISION HISTORY
     0.1.0  (2026-12-01) BTARD moved out of vtrain.h 0.1.0 into this header,
            unchanged: transports (in-process, MPI), CenteredClip, the
            protocol, attacks, the swarm, the digits task.

   ------------------------------------------------------------------------------
   This software is available under 2 licenses -- choose whichever you prefer.
   ------------------------------------------------------------------------------
   ALTERNATIVE A - MIT License
   Copyright (c) 2026 the vtrain authors
   Permission is hereby granted, free of charge, to any person obtaining a copy
   of this software and associated documentation files (the "Software"), to deal
   in the Software without restriction, including without limitation the rights
   to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
   copies of the Software, and to permit persons to whom the Software is
   furnished to do so, subject to the following conditions:
   The above copyright notice and this permission notice shall be included in
   all copies or substantial portions of the Software.
   THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
   IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
   FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
   AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
   LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
   OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
   SOFTWARE.
   ------------------------------------------------------------------------------
   ALTERNATIVE B - Public Domain (www.unlicense.org)
   This is free and unencumbered software released into the public domain.
   Anyone is free to copy, modify, publish, use, compile, sell, or distribute
   this software, either in source code form or as a compiled binary, for any
   purpose, commercial or non-commercial, and by any means.
   In jurisdictions that recognize copyright laws, the author or authors of this
   software dedicate any and all copyright interest in the software to the
   public domain. We make this dedication for the benefit of the public at large
   and to the detriment of our heirs and successors. We intend this dedication
   to be an overt act of relinquishment in perpetuity of all present and future
   rights to this software under copyright law.
   THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
   IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
   FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
   AUTHORS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN
   ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION
   WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
   ------------------------------------------------------------------------------
*/
