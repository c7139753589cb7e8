/* vtrain_btard.h - v0.2.7 - MIT or public domain (see end of file) - Byzantine-tolerant collaborative training (BTARD) on vtrain.h

   BTARD: n peers train one model together over a transport (vt_net:
   in-process threads, MPI ranks with VTRAIN_MPI, or processes on separate
   machines over TCP with VTRAIN_ZMQ), and any minority of them may lie, go
   silent, send different messages to different peers or garbage. Every
   protocol message is signed (Ed25519, libsodium: VTRAIN_SODIUM); what one
   honest peer holds every honest peer obtains before anyone is punished, so
   honest peers end every step with identical weights and ban lists.
   Validators recompute other peers' gradients bit for bit from their
   committed rounding logs (vtrain's verified replay), so a one-bit lie is
   caught and the liar banned. The protocol (BTARD-SGD, Gorbunov et al.,
   ICML 2022, with the signed broadcast it assumes built in), its checks,
   deadlines, attacks, peers joining mid-run (validated probation before
   they aggregate) and the price of every action are described at the top
   of the ">>btard" section below.

   This header needs vtrain.h, the way sokol_gl.h needs sokol_gfx.h: a user
   who wants only verifiable training compiles vtrain.h alone.

   DO THIS in the one C or C++ file that defines VTRAIN_IMPLEMENTATION:

       #define VTRAIN_IMPLEMENTATION
       #define VTRAIN_SODIUM        // signatures (the protocol needs them)
       #include "vtrain.h"
       #include "vtrain_btard.h"

   and include both, in that order and without VTRAIN_IMPLEMENTATION,
   everywhere else. Link with -lsodium (and -lzmq for VTRAIN_ZMQ).

   OPTIONS (define before the #include that carries VTRAIN_IMPLEMENTATION;
   VTRAIN_MPI and VTRAIN_ZMQ also where their create function is called: it
   declares it):

       VTRAIN_SODIUM   Ed25519 identities and signatures from libsodium
                       (Debian libsodium-dev; link -lsodium). Without it
                       BTARD refuses to start (vt_btard_peer_create fails
                       with a message); CenteredClip, the transports and
                       the plain-mean baseline still work.
       VTRAIN_ZMQ      the TCP transport (vt_net_zmq_create) over ZeroMQ
                       (Debian libzmq3-dev; link -lzmq): peers as separate
                       processes on separate machines; needs VTRAIN_SODIUM
                       (links are CURVE-encrypted and authenticated with
                       keys derived from the peers' identities)
       VTRAIN_MPI      the MPI transport (vt_net_mpi_create): peers as MPI
                       ranks of one job on a trusted cluster (one rank's
                       death ends the job); build with mpicc

   vtrain.h's options act here too, as they act there: VTRAIN_STATIC (every
   function static), VT_MALLOC / VT_REALLOC / VT_FREE, VTRAIN_NO_THREADS
   (no in-process transport: vt_net_inproc_create and vt_btard_simulate
   fail with a message), VTRAIN_NO_SIMD. BUILD as vtrain.h says: -lm
   -lpthread, -ffp-contract=off, never -ffast-math (CenteredClip and the
   projections are recomputed bit for bit by every peer).

   USE

       vt_btard_cfg cfg = vt_btard_cfg_default();   // tau, validators, deadlines
       cfg.roster = pks; cfg.key = &my_key;         // every peer's public key, mine
       vt_btard_task task = { init, optimizer, loss, ... };  // the model, its data
       vt_btard_peer *p = vt_btard_peer_create(&cfg, &task, net, NULL);
       for (s = 0; s < steps; s++) vt_btard_step(p);   // one whole BTARD step
       // or: vt_btard_simulate(&cfg, &task, 16, attacks, steps, obs, u, &res)

   CONTENTS (each a ">>name" banner: search for it)

       >>btard declarations  the API: identities, transports, CenteredClip,
                             attacks, events, the task, configuration, a
                             peer, a swarm, the digits task, the CNN tasks
       >>btard     the protocol step by step, agreement before punishment,
                   peers joining mid-run (probation),
                   CenteredClip's definition, the aggregate checks and what
                   a lie can still move, deadlines, bounded resources, the
                   price of every action, assumptions; small helpers
       >>sign      identities, signatures and randomness (libsodium)
       >>inproc    the in-process transport (threads and queues)
       >>mpi       the MPI transport (VTRAIN_MPI)
       >>zmq       the TCP transport (VTRAIN_ZMQ)
       >>cclip     CenteredClip
       >>attacks   attacks and ban reasons by name
       >>mail      a peer's mailbox: per-sender limits, the window of steps
       >>agree     signed envelopes, echoes, the slow path (Dolev-Strong
                   relays of the echoes, the count rule, fetches)
       >>peer      a peer: roles, work, validation, the exchanges of a
                   round, one function each, the update, the plain mean
                   baseline, creation
       >>swarm     an in-process swarm (vt_btard_simulate)
       >>digits    a ready task: an MLP on the digits
       >>cnn       ready tasks with batch norm (the digits CNN, a CIFAR
                   ResNet-18) and why the swarm keeps no running statistics

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

#define VTRAIN_BTARD_VERSION_STRING "0.2.7"

#ifdef __cplusplus
extern "C" {
#endif

/* ==========================================================================
   >>btard declarations: Byzantine-tolerant collaborative training. The
   protocol, its checks, deadlines and attacks are described at the top of
   the >>btard section of the implementation (below).
   ========================================================================== */

/* --- identities ------------------------------------------------------------ */

/* An Ed25519 key pair: a peer's identity is its public key. */
typedef struct vt_btard_key {
    unsigned char pk[32];
    unsigned char sk[64];
} vt_btard_key;

/* a fresh key pair from the operating system's randomness (libsodium) */
VTDEF vt_status vt_btard_key_new(vt_btard_key *k);
/* a key pair from 32 seed bytes: reproducible, so for tests only (anyone
   who knows the seed can sign as this peer) */
VTDEF vt_status vt_btard_key_from_seed(vt_btard_key *k, const unsigned char seed[32]);
/* 1 if this build signs (VTRAIN_SODIUM), 0 if BTARD cannot run */
VTDEF int vt_btard_can_sign(void);

/* --- transport ------------------------------------------------------------ */

typedef struct vt_net vt_net;

typedef struct vt_net_stats {
    int64_t sent_msgs, sent_bytes;     /* counting every copy of a broadcast */
    int64_t recv_msgs, recv_bytes;
    int64_t dropped;                   /* refused: too large, over a sender's queue, or a full send queue */
    int64_t garbage;                   /* unreadable at the transport level */
} vt_net_stats;

/* The interface a BTARD peer talks through: a pipe of (tag, bytes) messages
   that knows who sent each one (the in-process hub and MPI know; the TCP
   transport authenticates every link; `authenticated` says whether BTARD
   may rely on it). send and bcast never wait for a
   slow peer: a full queue drops the message. recv waits until a message
   arrives or until `deadline` (vt_net_now() seconds) and returns 1 with
   *from, *tag and *p (owned by the caller: vt_net_free), 0 at the deadline,
   -1 if the transport is closed. want: how many messages the caller still
   waits for (the in-process transport wakes it only when that many are
   queued; others may ignore it). Each transport refuses a message larger
   than its max_msg before allocating it, and bounds what one sender can
   queue. */
struct vt_net {
    int rank, size;
    int (*send)(vt_net *t, int to, uint64_t tag, const void *p, size_t n);
    /* the same bytes to every other peer, or to those with to[i] != 0 */
    int (*bcast)(vt_net *t, uint64_t tag, const void *p, size_t n, const unsigned char *to);
    int (*recv)(vt_net *t, int *from, uint64_t *tag, unsigned char **p, size_t *n, double deadline, int want);
    void (*destroy)(vt_net *t);
    vt_net_stats stats;
    void *impl;
    /* optional (NULL: the transport knows nobody by key): the peer's view
       after each step, roster[size * 32] (32 zero bytes: an open slot) and
       alive[size] (0: banned), so that a transport that authenticates links
       by key (TCP) admits a newcomer's key once it is admitted, and refuses
       a banned slot */
    void (*roster)(vt_net *t, const unsigned char *roster, const unsigned char *alive);
    /* 1: *from is the sender as surely as a signature would say (the
       in-process hub: an endpoint is its rank's; TCP: ZAP checked the
       link's CURVE key against the roster), so BTARD checks an envelope's
       signature only where it must convince a third party (>>agree: THE
       CHEAPER RULE). 0 (MPI, whose source is the library's word, or a
       transport that does not say): every envelope's signature is checked
       on receipt. */
    int authenticated;
};

VTDEF double vt_net_now(void);    /* monotonic seconds */
VTDEF void vt_net_free(void *p);  /* a message returned by recv */
/* n endpoints on one in-process hub (threads); endpoint i has rank i. Each
   endpoint's destroy releases it; the hub goes with the last one. Messages
   over max_msg bytes (0: 64 MiB) are dropped; each sender may have at most
   4 max_msg bytes and 4096 messages queued at each receiver. NULL without
   threads. */
VTDEF vt_net **vt_net_inproc_create(int n, size_t max_msg);
/* close the hub: every recv returns -1 from now on (ends a simulation) */
VTDEF void vt_net_inproc_close(vt_net *any_endpoint);
/* delay every message of the hub by a pseudo-random time in [0, max_s)
   (from seed), each link still in order: a network whose delivery times
   vary up to max_s, for tests (honest peers must agree whatever the delays
   below the deadlines). Set before any traffic. */
VTDEF void vt_net_inproc_jitter(vt_net *any_endpoint, double max_s, uint64_t seed);
/* delay every message sent by `from` by s seconds more (a slow link, for
   tests: an honest peer slower than the others but within the deadlines) */
VTDEF void vt_net_inproc_delay(vt_net *any_endpoint, int from, double s);
#ifdef VTRAIN_MPI
/* this process's endpoint over MPI_COMM_WORLD (call MPI_Init first; destroy
   it before MPI_Finalize: it drains the traffic of every rank). For trusted
   clusters: one rank that dies takes the job down. */
VTDEF vt_net *vt_net_mpi_create(size_t max_msg);
#endif
#ifdef VTRAIN_ZMQ
/* Peers as processes on separate machines, over TCP (ZeroMQ). Peer i binds
   endpoints[i] and connects to every other endpoint whose key it knows;
   every link is CURVE (Curve25519 keys derived from the Ed25519 identities
   in roster), and a peer accepts a connection from a member only with that
   member's key, so the sender of every message is known. Open slots (32
   zero bytes in roster, >>btard: JOINING): while a slot is open, a
   connection with a key nobody holds may speak for it, on the peer's
   guest endpoint only (guest_endpoints[rank]: a socket of its own, whose
   messages are at most guest_max bytes and few queued, so a stranger
   costs bounded memory; >>zmq); once the peer's view admits a key there
   (vt_net.roster, called by the peer after each step), only that key, and
   the peer connects to the newcomer's endpoint; a banned slot: nobody.
   Before that, a send to an open slot is a reply (at most guest_max bytes:
   a step statement) to the guest connection that last spoke for it, which
   a newcomer reads on its connection to that member's guest endpoint. A
   newcomer speaks on the members' guest endpoints until its own view
   admits it, then on their endpoints. A dead, hung or slow peer is
   silence: sends to it queue up to `queue` messages and then drop. */
typedef struct vt_net_zmq_desc {
    int rank, size;
    const char *const *endpoints;   /* [size] "tcp://127.0.0.1:5550", ... */
    const unsigned char *roster;    /* [size * 32] public keys, rank order; 32 zero bytes: an open slot */
    const vt_btard_key *key;        /* this peer's key pair (roster[rank], or its own if join) */
    size_t max_msg;                 /* largest message accepted (0: 64 MiB) */
    int queue;                      /* messages queued per link and direction (0: 1000) */
    int join;                       /* 1: this peer is a newcomer in open slot rank (cfg.join) */
    size_t guest_max;               /* largest message accepted from a key not yet admitted (0: 256; a JOIN is 112) */
    /* [size] where each peer hears keys not yet admitted (guests, for open slots), e.g.
       "tcp://127.0.0.1:5650"; an entry NULL or "": that peer hears none. NULL: nobody does, and a
       newcomer (join) cannot be created. Each peer binds guest_endpoints[rank] when it is given. */
    const char *const *guest_endpoints;
} vt_net_zmq_desc;
VTDEF vt_net *vt_net_zmq_create(const vt_net_zmq_desc *d);
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
   max_iters 0: 100; it stops when |step| <= eps tau (eps 0: 2^-20).
   Bit-identical on every IEEE machine. */
VTDEF vt_status vt_centered_clip(const float *const *rows, int m, int64_t L, double tau, int max_iters,
                                 double eps, float *out, vt_cclip_info *info);

/* --- attacks ------------------------------------------------------------------ */

/* What a Byzantine peer does (the behaviour of an attacker in a simulation
   or a test). The equivocate_* and withhold_* attacks act on one message
   kind toward one victim (vt_btard_attack.victim; -1: a different peer each
   step). partial_then_silent is a peer that dies in the middle of a
   broadcast (a process killed, or stopped, while its sends go out in rank
   order): in the exchange vt_btard_attack.exchange (1 COMMIT, 2 PARTS,
   3 AGG, 4 REVEAL, 5 SCALARS, 6 FIN) of step `start` its envelope reaches
   the `reach` lowest-ranked other members only (-1: f of them, the most
   that is still fewer than f + 1), and then it sends nothing ever again
   (its vt_btard_step fails: the peer stopped). */
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
    X(FALSE_ACCUSE, "false_accuse")                                                \
    X(EQUIVOCATE_COMMIT, "equivocate_commit")                                      \
    X(EQUIVOCATE_AGGREGATE, "equivocate_aggregate")                                \
    X(EQUIVOCATE_REVEAL, "equivocate_reveal")                                      \
    X(EQUIVOCATE_SCALARS, "equivocate_scalars")                                    \
    X(EQUIVOCATE_FINAL, "equivocate_final")                                        \
    X(EQUIVOCATE_HALF, "equivocate_half")                                          \
    X(WITHHOLD_COMMIT, "withhold_commit")                                          \
    X(WITHHOLD_PART, "withhold_part")                                              \
    X(WITHHOLD_AGGREGATE, "withhold_aggregate")                                    \
    X(WITHHOLD_REVEAL_ONE, "withhold_reveal_one")                                  \
    X(WITHHOLD_SCALARS, "withhold_scalars")                                        \
    X(WITHHOLD_FINAL, "withhold_final")                                            \
    X(WITHHOLD_CHUNK, "withhold_chunk")                                            \
    X(WITHHOLD_HALF, "withhold_half")                                              \
    X(LYING_ECHO, "lying_echo")                                                    \
    X(FALSE_AUDIT, "false_audit")                                                  \
    X(FLOOD, "flood")                                                              \
    X(WRONG_STATE, "wrong_state")                                                  \
    X(LYING_STEP, "lying_step")                                                    \
    X(PARTIAL_THEN_SILENT, "partial_then_silent")

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
    double scale;       /* sign_flip -1000, random_direction 1000, ipm 0.1, alie z, lying_aggregator -10,
                           spike 1e6 (its norm), nudge 1e-6, flood: messages per exchange (200) */
    int64_t delay;      /* delayed: steps back (paper: 1000) */
    uint64_t seed;      /* shared by colluding attackers (random_direction, garbage) */
    int est;            /* ipm, alie: honest gradients computed to estimate mean and sd (default 3) */
    int victim;         /* equivocate_*, withhold_*: the peer deceived (-1: another each step) */
    int exchange;       /* partial_then_silent: the exchange it dies in (1 COMMIT .. 6 FIN; default 1) */
    int reach;          /* partial_then_silent: how many of the lowest-ranked members get that envelope (-1: f) */
} vt_btard_attack;
/* lying_step: a member that answers a newcomer's step query (>>btard: JOINING) with its step + scale
   (default 1000; negative: a step in the past, never below 0), signed like a true answer */

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
    X(SILENT, "silent: honest peers agree it sent nothing before the deadline")   \
    X(MALFORMED, "malformed message (size, format or values)")                    \
    X(WEIGHTS, "its weights digest differs from the honest peers'")               \
    X(GRADIENT, "its gradient differs from the exact recomputation")              \
    X(CHUNK, "its log chunk is missing or not the committed one")                 \
    X(FALSE_ACCUSATION, "accused a peer whose gradient recomputes exactly")       \
    X(PART, "a gradient part missing or not the committed one")                   \
    X(NONFINITE, "a gradient part with NaN or Inf")                               \
    X(FALSE_CLAIM, "claimed a part was not finite, or asked for an audit, untruly") \
    X(AGGREGATE, "its aggregate is not the CenteredClip of the parts")            \
    X(SCALARS, "its projection scalars do not match its gradient")                \
    X(REVEAL, "its MPRNG reveal was withheld or does not match")                  \
    X(ROLE, "acted outside its role")                                             \
    X(EQUIVOCATION, "signed two different messages for one slot")

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
    VT_EV_SLOW,         /* an exchange needed the slow path (peer: -1; count: its index in the round) */
    VT_EV_LATE,         /* messages from peer arrived after their phase (count in `count`) */
    VT_EV_FLOOD,        /* messages from peer dropped: outside the window of steps or over its limits */
    VT_EV_JOIN,         /* peer admitted to probation from the next step on (count: the step it aggregates from) */
    VT_EV_BAD_STATE     /* a joiner: the state peer sent it is not the one the members attested (it fetched another) */
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
    VT_DEFENCE_MEAN     /* plain butterfly all-reduce of the mean: no defence, no signatures */
} vt_btard_defence;

typedef struct vt_btard_cfg {
    vt_btard_defence defence;
    int validators;          /* m per step (BTARD; 0: 1) */
    double tau;              /* CenteredClip radius (0: 1.0) */
    int cc_iters;            /* 0: 100 */
    double cc_eps;           /* 0: 2^-20 */
    double lambda;           /* projection check (0: 8) */
    double kappa;            /* a worker asks for an audit when |g - agg| > kappa (|g| + tau) (0: 4) */
    double timeout;          /* seconds for an exchange (0: 10) */
    double compute_timeout;  /* seconds while others compute (0: 60) */
    uint64_t data_seed;      /* public minibatch seeds xi(i,t) = vt_rng_u64(data_seed, i, t) */
    uint64_t secret_seed;    /* 0 (default): MPRNG secrets from the operating system, fresh every
                                round. Anything else: vt_rng_u64(secret_seed, rank, ...), which anyone
                                who knows it can predict: INSECURE, for reproducible tests only */
    const unsigned char *roster; /* [net->size * 32] every peer's Ed25519 public key, rank order; 32 zero
                                    bytes: an open slot, where a newcomer may join (see join below) */
    const vt_btard_key *key;     /* this peer's key pair; its pk must be roster[rank] */
    int threads;             /* worker threads of each peer's contexts (0: 1) */
    const char *audit_order; /* the audit context's order (NULL: "threads:1,chaos:<7919*(rank+1)>") */
    int session;             /* 0..255: tag namespace, for several runs over one transport */
    size_t max_chunk;        /* largest log chunk accepted (0: 16 MiB) */
    double net_jitter;       /* vt_btard_simulate only: vt_net_inproc_jitter of its hub (0: none) */
    /* Peers joining mid-run (>>btard: JOINING). A roster entry of 32 zero bytes is an open slot:
       the endpoint of that rank may ask to join with a key of its own. */
    int join;                /* 1: this peer is a newcomer: its roster entry is open, cfg.key its own key pair */
    int64_t join_step;       /* the newcomer asks to join at this step (admitted at its end, if agreed);
                                VT_BTARD_JOIN_AUTO: it asks the founders their step first and joins
                                shortly after the step f0 + 1 of them vouch for (JOINING: step discovery) */
    int probation;           /* steps of validated work before a newcomer aggregates (0: 3) */
    int join_max;            /* newcomers in probation at once (0: 2) */
    int join_per_step;       /* newcomers admitted per step (0: 1) */
    double join_wait;        /* seconds a newcomer waits to be admitted and synced (0: 120) */
} vt_btard_cfg;

#define VT_BTARD_JOIN_AUTO (-1) /* cfg.join_step: learn the step from the founders' signed statements */

VTDEF vt_btard_cfg vt_btard_cfg_default(void);

/* --- a peer --------------------------------------------------------------------------- */

typedef struct vt_btard_stats {
    int64_t steps, rounds, restarts, skipped;
    int64_t validations, accusations, audits, false_alarms;
    int64_t cc_iters, cc_iters_max, cc_calls;
    int64_t late;                  /* late messages dropped */
    int64_t flood;                 /* messages dropped: outside the window or over a sender's limits */
    int64_t slow, ds_rounds, fetched; /* slow-path agreements, their relay rounds, envelopes fetched (the slow path's, and asked for) */
    int64_t signs, verifies;       /* Ed25519 operations */
    int64_t mail_peak;             /* most bytes ever held in the mailbox */
    int64_t probes, states_sent;   /* newcomers' gradients replayed; states sent to newcomers */
    double t_step, t_grad, t_validate, t_aggregate, t_update, t_wait, t_sign; /* seconds */
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
VTDEF int vt_btard_alive(const vt_btard_peer *p, int rank);     /* not banned */
VTDEF int vt_btard_alive_count(const vt_btard_peer *p);
VTDEF vt_ctx *vt_btard_ctx(vt_btard_peer *p);     /* the main context: weights, optimizer */
VTDEF void *vt_btard_model(vt_btard_peer *p);
VTDEF void vt_btard_digest(const vt_btard_peer *p, unsigned char out[32]); /* vt_weights_digest now (weights and optimizer state) */
VTDEF void vt_btard_last_r(const vt_btard_peer *p, unsigned char out[32]); /* the shared randomness of the last step */
VTDEF int vt_btard_events(const vt_btard_peer *p, const vt_btard_event **ev);
VTDEF void vt_btard_stats_get(const vt_btard_peer *p, vt_btard_stats *s);
/* membership (>>btard: JOINING): where `rank` stands in p's view, and since
   when (*since: the step of its first probation step, 0 for a founding
   member, -1 for an open slot; NULL: not wanted) */
typedef enum vt_btard_membership {
    VT_BTARD_OPEN,       /* an open slot: nobody admitted */
    VT_BTARD_PROBATION,  /* admitted; its gradients are validated, never aggregated */
    VT_BTARD_MEMBER,     /* aggregates */
    VT_BTARD_BANNED
} vt_btard_membership;
VTDEF vt_btard_membership vt_btard_member(const vt_btard_peer *p, int rank, int64_t *since);
/* SHA-256 of p's whole view of the swarm: every rank's identity, ban (step,
   reason), admission and probation steps. Equal on every honest peer. */
VTDEF void vt_btard_view_digest(const vt_btard_peer *p, unsigned char out[32]);

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
    int views_agree;              /* 1: every honest peer ends with the observer's ban list, ban steps,
                                     ban reasons and weights, and completed every step */
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
   steps the observer (the lowest honest rank) calls obs. Keys: fresh from
   the OS, or from cfg->secret_seed when it is set (reproducible). When every
   honest peer has stopped, the hub closes (attackers waiting give up). */
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

/* --- ready tasks with batch norm: the digits CNN, a CIFAR ResNet-18 ---------------------------- */

/* Batch norm in a swarm (see >>cnn): training normalises with each
   minibatch's own statistics and keeps NO running statistics, so a
   gradient is a function of (weights, public seed) alone, which validators
   recompute bit for bit; evaluation recomputes the running statistics from
   the agreed weights over a public calibration set (vt_btard_cnn_running),
   the same bits on every honest peer, and nothing any peer says enters them. */
typedef enum vt_btard_cnn_model {
    VT_BTARD_CNN_DIGITS,  /* the digits CNN of examples/digitscnn.h: conv 3x3 (W), bn, relu, conv 3x3 (2W), bn,
                             relu, max pool 2x2, linear 10, on 8x8 digits */
    VT_BTARD_CNN_RESNET18 /* vt_resnet (depth 18, CIFAR form) of base width W on 32x32x3 images, the papers'
                             augmentation (crop with padding 4, flip) keyed by the public seed */
} vt_btard_cnn_model;

typedef struct vt_btard_cnn {
    vt_btard_cnn_model model;
    vt_digits digits;        /* DIGITS: the data; perm: the fixed shuffle, train first (as vt_btard_digits) */
    int32_t *perm;
    vt_cifar train, test;    /* RESNET18: CIFAR-10 (data_batch_*.bin, test_batch.bin) or synthetic */
    int synthetic;           /* RESNET18: 1 if the images are the synthetic CIFAR-shaped set */
    int ntrain, ntest;
    int width, batch;        /* W; images per peer per step */
    double lr;               /* SGD, momentum 0.9 (RESNET18: Nesterov, weight decay 5e-4, as the paper) */
    int64_t decay;           /* > 0: lr decays linearly to lr/10 at step `decay` (exact arithmetic) */
    int calib;               /* the calibration set: the first `calib` training images (0: 512) */
    int eval_n;              /* test images vt_btard_cnn_accuracy uses (0: all) */
    const char *eval_order;  /* the evaluation context's order (NULL: "threads:1") */
} vt_btard_cnn;

/* the digits CNN on the digits file at path (width 0: 16, batch 0: 8, lr 0: 0.05) */
VTDEF vt_status vt_btard_cnn_digits(vt_btard_cnn *t, const char *path, int width, int batch, double lr);
/* a ResNet-18 on CIFAR-10 in dir (data_batch_1.bin .. _5.bin, as many as are there from the first;
   test_batch.bin, or else the last fifth held out), or dir NULL: 2,048 + 512 synthetic CIFAR-shaped
   images (ten classes of coloured stripes with noise, as examples/cnnprog.h makes them).
   width 0: 8 (the paper: 64), batch 0: 8 (the paper's images per peer), lr 0: 0.05 */
VTDEF vt_status vt_btard_cnn_cifar(vt_btard_cnn *t, const char *dir, int width, int batch, double lr);
VTDEF vt_btard_task vt_btard_cnn_task(vt_btard_cnn *t);
/* The running statistics of every batch norm, for the weights of `model` on c: a private context
   copies the weights and runs the calibration set through the network in training mode, batch by
   batch, averaging the batches' statistics (momentum 1/(k+1)). Writes *n values (each norm's (2,C)
   state, in creation order) to out (NULL: count only); *undecided: roundings in the calibration
   that the sound bound left open (0: the same bits on every IEEE machine; else on every machine
   with eval_order's reduction order). */
VTDEF vt_status vt_btard_cnn_running(vt_ctx *c, void *model, const vt_btard_cnn *t, float *out, int64_t *n, int64_t *undecided);
/* test accuracy (the first eval_n test images) with those running statistics; -1 on failure.
   loss (NULL: not wanted): their mean cross-entropy (computed with libm: a report, not a
   bit-exact value) */
VTDEF double vt_btard_cnn_accuracy(vt_ctx *c, void *model, const vt_btard_cnn *t, double *loss);
VTDEF void vt_btard_cnn_free(vt_btard_cnn *t);

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
#if defined(VTRAIN_ZMQ) && !defined(VTRAIN_SODIUM) && !defined(VTRAIN_BTARD_IMPLEMENTATION_INCLUDED)
#error "vtrain_btard.h: VTRAIN_ZMQ needs VTRAIN_SODIUM (the TCP links are authenticated with keys derived from the peers' Ed25519 identities)"
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
#ifdef VTRAIN_SODIUM
#include <sodium.h>
#endif
#ifdef VTRAIN_ZMQ
#include <zmq.h>
#include <poll.h>
#endif
#ifdef VTRAIN_MPI
#if defined(__cplusplus) && !defined(OMPI_SKIP_MPICXX)
#define OMPI_SKIP_MPICXX 1  /* only the C API (the old C++ bindings do not build with -Werror) */
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#endif

/* the floating-point settings of vtrain.h's implementation (VT__FP_PUSH,
   at its >>elementary): no contraction of a*b+c into fma and, with clang,
   precise semantics, here as there, since every peer must recompute
   CenteredClip and the projections bit for bit; popped at the end */
VT__FP_PUSH

/* ==========================================================================
   >>btard  Byzantine-tolerant collaborative training (BTARD)

   THE SETTING. N peers with Ed25519 key pairs; the roster (every public
   key, rank order) is known to all. Peers talk over a vt_net that knows who
   sent each message (the in-process hub and MPI by construction, TCP by
   CURVE keys derived from the identities). At most f = (n - 1) / 2 of the
   n members of a round are Byzantine: they collude, know the protocol, may
   send anything to anyone or nothing, and cannot forge signatures or break
   SHA-256. Honest messages arrive within a deadline (cfg.timeout; partial
   synchrony is NOT assumed: a network slower than the deadline looks like
   silence). Data is public: peer i's minibatch at step t comes from the
   seed xi(i, t) = vt_rng_u64(data_seed, i, t), so anyone can recompute
   anyone's gradient, bit for bit, from its committed rounding log (vtrain's
   verified replay): that is what makes a one-bit lie provable.

   ONE STEP. Roles first: m validators and their targets are drawn from the
   previous step's shared randomness r(t-1); a validator computes no
   gradient of its own this step but replays its target's previous one. The
   others (workers) compute their gradients, split them into n equal parts
   (part k belongs to member k) and run a ROUND of exchanges, each one
   signed envelope from every member to every member:

     1 COMMIT   weights digest, MPRNG commitment H(session, step, round,
                rank, secret), the chunk hash and the n part hashes (a
                worker), a validator's verdict on its target
     2 PARTS    (nothing but the echo of COMMIT) - and after it, point to
                point, part k to member k: the barrier is over only when
                every commitment is in, so nobody chooses its part after
                seeing the others'
     3 AGG      the aggregator's CenteredClip of the parts that match their
                agreed commitments, and one code per worker (used, missing,
                not finite - a non-finite part rides along, pinned by its
                owner's hash, as the proof)
     4 REVEAL   the MPRNG secret; r = H(session, step, round, secrets in
                position order), uniform if one secret is honest; an accused
                target's answer (its log chunk) rides here, and the join
                requests and newcomers' probation work it carries (JOINING)
     5 SCALARS  per part k: <z1, g_k - a_k>, <z2, g_k - a_k>, |g_k - a_k|,
                |g_k|, with z1, z2 in {-1, +1}^L drawn from r (after every
                aggregate is fixed), and a request for an audit when
                |g_k - a_k| > kappa (|g_k| + tau)
     6 FIN      echoes of SCALARS (late scalars, for a worker that had no r
                yet)
     + AUDIT, AEND when a check fails: every worker publishes its copy of
                the audited part; everyone recomputes the CenteredClip.

   Every peer applies the same agreed aggregates (never a local-only
   update). A ban restarts the round without the banned peer (n shrinks,
   the parts are re-cut); at most N + 1 rounds per step.

   ONE EXCHANGE: AGREEMENT BEFORE PUNISHMENT. An envelope is [header: step,
   round, exchange, sender][Ed25519 signature over (session, header,
   H(echo), H(rest))][echo][evidence][content]. The session hash binds every
   signature to this run's configuration and roster. The echo in exchange
   x + 1 is the sender's view of exchange x: the SHA-256 of each member's
   envelope it holds (zeros: none); a round's first exchange has no echo.
   A peer holds an envelope only if its header names the slot and its echo
   has that length (none, or 32 n bytes), however it came, and its
   signature holds wherever it must convince a peer that did not get it
   from its sender: forwarded, relayed, in a proof. Over a transport that
   authenticates senders one straight from its sender is held unchecked
   and checked before it becomes a relay item in a slow path (dropped if
   it fails, before the peer echoes it), and a fetched one is taken by its
   agreed digest; over any other every envelope is checked (>>agree: THE
   CHEAPER RULE, 0.2.6). What is agreed is an envelope's bytes, and every
   honest peer fetches them or agrees on none (0.2.4 made relay items of
   unchecked envelopes, and f members holding a badly signed one split the
   honest views). One exchange later every peer sees what every other peer
   holds:
     fast path: every member's envelope of x + 1 is in, and each echo equals
       my view. Then my view is every honest peer's, and a member whose slot
       is empty in it is banned: silent, and every honest peer agrees it
       was. (Echoes alike from only those I heard prove nothing: in 0.2.0 a
       peer that heard 7 of 13 went fast while the 6 it missed went slow and
       waited for fetches nobody sent.)
     slow path (some echo differs): Dolev-Strong over the echoes. f more
       relay rounds, each relayer signing the list of echo digests it
       forwards, an item accepted in round r only with r - 1 distinct relay
       signatures, so what one honest peer accepts by the last round every
       honest peer accepts. Then the count rule per slot: f + 1 agreed
       echoes name the same envelope -> that envelope (one of them is
       honest); f + 1 empty echoes, or no digest with f + 1 -> silent (an
       honest sender's envelope is in every honest echo, n - f >= f + 1 of
       them), counted exactly however many different digests the echoes
       name. Whoever holds an agreed envelope sends it to the members whose
       echo lacks it (a fetch), checked against the agreed digest.
     equivocation: two valid signatures of one sender over different
       envelopes for one (step, round, exchange) - seen directly, or as two
       relayed echo items - are a proof anyone can check; it goes into my
       next envelope's evidence, and is judged only when that envelope is
       itself agreed: then every honest peer bans the signer at the same
       point. A member whose echo in the slow path deviates from the agreed
       view, in any slot (an empty one too: since 0.2.5), is published as a
       suspect; whoever holds the other signed envelope of that slot turns
       it into a proof. An honest member that lacked an envelope is a
       suspect too, harmlessly: it signed one envelope for its slot, so
       whoever holds one holds that one, and no proof comes of it.
     accusations: a validator's verdict is part of its COMMIT, so it counts
       once agreed; the accused answers with its log chunk in its REVEAL
       (agreed too), and only then every peer re-executes it: guilty ->
       banned (GRADIENT, SCALARS or CHUNK), exact -> the accuser is banned
       (FALSE_ACCUSATION). "I got no chunk" cannot be proven either way, so
       it only makes the chunk public.
   Timing: whether a peer needs the slow path depends on what it received,
   so a Byzantine showing a deviating echo to some honest peers splits them
   into fast and slow. A peer missing, at its deadline, a member that sent
   relay messages waits once more the slow path's length ((f + 1)
   timeouts); one missing a member whose previous envelope it holds (alive,
   but late: a peer deprived by a withholding Byzantine goes on a grace
   period after the others) waits once more one timeout; the first exchange
   of a restarted round waits (f + 2) timeouts; all end as soon as the
   envelopes are in. The relay rounds listen to every member that showed
   life in the exchange or the one it echoes (not only those whose envelope
   reached me), and round r ends at start + r timeouts: one timeout of
   slack for honest peers that started the slow path apart. A peer that sees more than half of the others
   silent at once concludes that it is the one cut off and stops (honest
   majority), instead of banning the swarm - but not before it has waited
   as long as the latest honest peer could take for those of them whose
   previous envelope it holds (DEADLINES AND SILENCE).

   CENTEREDCLIP (Karimireddy, He and Jaggi 2021), defined so that anyone
   recomputes it bit for bit: rows with a NaN or Inf are left out; v starts
   at the coordinate-wise median (the lower middle value in the total order
   of binary32 bit patterns); then up to cc_iters times
       c_i = min(1, tau / |x_i - v|),  v_j += (sum_i c_i (x_i,j - v_j)) / m
   in binary64, norms and |step| summed in four lanes (index mod 4) combined
   as (l0 + l1) + (l2 + l3), rows in rank order; it stops when
   |step| <= eps tau (eps = 2^-20). The stop does not grow with |v|: in
   0.1.0 it did, and a spike on the aggregate loosened its own check.
   Output rounded to binary32.

   THE AGGREGATE CHECKS, AND WHAT A LIE CAN STILL MOVE. Per part k, over the
   agreed scalars of every worker w, with c_w = min(1, tau / |g_w - a_k|):
       |sum_w c_w <z, g_w - a_k>| <= lambda (2.02 m eps tau +
                                 1.01 2^-24 (sum_w c_w) |a_k|) + rounding
   for both z (the projected CenteredClip fixed-point residual: exact
   CenteredClip leaves at most m eps tau of it, binary32 rounding of the
   output 2^-24 |a| per clipped row; lambda = 8 of slack). The aggregate
   must be finite; a worker's scalars must be finite, non-negative where
   norms, and obey |<z, x>| <= sqrt(L) |x|; a worker that finds
   |g - a| > kappa (|g| + tau) asks for an audit. A failed check or a
   request audits the part: everyone recomputes CenteredClip from the
   published parts; a wrong aggregate bans its aggregator, wrong scalars
   their worker, an untrue request its asker, and if nobody lied (a false
   alarm: CenteredClip cut off far from its fixed point) the recomputed
   aggregate is applied. z is drawn from r after every aggregate is agreed,
   so an aggregator cannot aim a lie at the null space of z.
   Measured (./build/bench_btard spike --seeds 100, bench/RESULTS.md: 8
   peers, digits MLP, tau 1, 100 runs each): a spike added to one aggregate
   part passes undetected at norm <= 3e-6; at 1e-5 it is caught in its
   first step in 15 runs, by the next in 30, within six steps in 61; at
   3e-5 in its first step in 77 and within six in all; from 1e-4 on in its
   first step in 98-100 and by the next in all. The check is probabilistic
   (two random sign vectors). So an undetected lie
   moves an aggregate part by at most about 1e-5 tau per step (ten times
   CenteredClip's own stopping tolerance), the weights by lr times that
   (times 1 / (1 - momentum) over many steps). Within the honest spread,
   CenteredClip itself bounds what each Byzantine worker moves (about
   tau / n per part); the validators catch a dishonest gradient with
   probability about m / n per attacked step.

   DEADLINES AND SILENCE. Deadlines follow one schedule: each exchange adds
   its budget (compute_timeout + 2 timeout for the first of a step, timeout
   for the others, + compute_timeout after a re-execution) to a common
   start, so waiting for a silent peer ends at the same moment everywhere;
   a wait that ends early settles the schedule to now. A peer from which a
   Byzantine withheld a message goes on within timeout / 8 after f + 1
   members have moved on (one of them honest) and gets what it lacks in the
   slow path. When fewer than f + 1 went on, it is not a minority that
   lacks the message but a majority - a peer died in the middle of its
   broadcast (sent in rank order: the lowest ranks got it), or a Byzantine
   sent its envelope to f members or fewer and fell silent
   (partial_then_silent) - and the few that got it went on at once while
   the others waited the exchange out and its slow path. So a peer that
   still lacks envelopes timeout / 8 after a member went on asks each
   member that went on, once, for them (ASK: the senders' ranks); that
   member answers with the envelopes of that exchange it holds (FWD: the
   senders' own signed bytes; once per asker, step, round and exchange),
   and an answer is taken as its sender's envelope if its header names the
   slot and its signature holds (two different signed ones are a proof of
   equivocation). The deprived then go on timeout / 8 after the few, as
   under the moved-on rule, and what they got, every honest peer holds.
   Should the answers be lost, the few find more than half of the others
   missing at their deadline: for those whose envelope of the previous
   exchange they hold (alive, and behind), they wait up to the latest an
   honest peer could send - the deadline the previous exchange had, plus
   (2f + 5) T + compute_timeout (a grace as long as a slow path, the slow
   path before it and a fetch, a re-execution or a step's compute, a
   validator's wait, a timeout of slack) - and once no more than half are
   missing, their deadline is one timeout from that arrival, as the late
   ones count it. Before 0.2.4 they stopped there as cut off ("K of n - 1
   peers silent at once": issue 14, the tcp_kill9 / tcp_hung flake;
   test_btard_byz dies_mid_broadcast_*, answers_lost for the wait).
   At a deadline, what the transport has already queued still comes in
   (at most the mailbox's capacity): a wait that sleeps until
   several messages came may hold fewer when it passes, and 0.2.1 took one
   of them and left the rest (an honest relay then missed its round; its
   2 ms yield before sleeping hid it for early messages; test_btard_byz
   wait_deadline_takes_what_is_queued). Silence is a ban only when agreed
   (above).

   BOUNDED RESOURCES. The transport refuses a message over max_msg before
   allocating it (in-process: 64 MiB by default, and per sender at most
   4 max_msg bytes and 4096 messages queued at each receiver; TCP: ZeroMQ's
   ZMQ_MAXMSGSIZE and a high-water mark of `queue` messages per link and
   direction; MPI: a truncating receive; MPI's own queue is not ours to
   bound - trusted clusters only). Then the mailbox files every message by
   (sender, tag) and keeps only this step's rounds from the current one on
   and the next step's first round (the window); older is counted late,
   newer or foreign is counted flood, and each sender may hold at most
   mb_cap_cnt = 64 + 2 XMAX (f + 3) messages and mb_cap_bytes = 4 x (the
   largest message any phase sends: an AGG with every part claimed
   non-finite, or a REVEAL with a whole chunk up to max_chunk = 16 MiB)
   bytes. So a peer holds at most N mb_cap_bytes of mail, whatever the
   others send; every size in a message is checked against what is left
   before anything is read or allocated. Measured under the flood attack (2
   of 6 peers sending 2000 junk messages per exchange, far-future steps,
   this round's tags, oversized): the mailbox peaked at 384 KB and 11,658
   messages were dropped (tests/test_btard_byz.c: flood_attack_bounded...);
   a rogue endpoint sending 400,000 far-future messages leaves at most 4096
   queued (flood_stays_bounded).

   RANDOMNESS. MPRNG secrets: 32 bytes from the operating system
   (libsodium's randombytes_buf: getrandom(2) on Linux), fresh every round.
   cfg.secret_seed != 0 derives them (and vt_btard_simulate's identities)
   from a seed instead: reproducible and INSECURE - anyone who knows the
   seed predicts every validator draw. For tests only.

   THE PRICE OF EVERY ACTION. What a Byzantine can make honest peers spend,
   and what it costs the Byzantine (timeouts T = cfg.timeout, n members):

   | action                                   | worst cost to honest peers                 | cost to the attacker            |
   |------------------------------------------|--------------------------------------------|---------------------------------|
   | silence (or death, a hang) in any phase  | one deadline T; a round restart            | banned (SILENT), once agreed    |
   | die mid-broadcast: an envelope to f      | the rest ask after T / 8 (those that went  | banned (SILENT), once agreed    |
   | members or fewer, then silence           | on send them <= n - 1 envelopes each); if  |                                 |
   | (partial_then_silent)                    | no answer comes, the few wait for them up  |                                 |
   |                                          | to (2f+5) T + compute_timeout; a restart   |                                 |
   | ask for envelopes (ASK), any member      | one answer per asker, step, round and      | none (asking is honest); a      |
   |                                          | exchange: <= n - 1 envelopes sent          | second ask is dropped (flood)   |
   | late messages                            | one deadline T; a restart                  | banned (SILENT)                 |
   | withhold a message from some peers       | slow path: f relay rounds (<= (f+1) T),    | none: unprovable, relayed around|
   |                                          | fetch; one more T waiting for the deprived |                                 |
   | badly signed envelope, or an echo of the | a length check; a signature check in a     | none, as withholding; banned    |
   | wrong length (to some or all)            | slow path (0.2.6); then as withheld from   | (SILENT) unless f + 1 agreed    |
   |                                          | those who get it only forwarded            | echoes name a badly signed one  |
   |                                          |                                            | (its bytes are then agreed)     |
   | deviating echo to some or all (lying)    | slow path (<= f T) per exchange            | none: unprovable (bounded: one  |
   |                                          |                                            | slow path per exchange)         |
   | equivocate (two signed envelopes)        | slow path, one restart                     | banned (EQUIVOCATION), proof    |
   | garbage, wrong sizes, bad scalars        | a parse; one restart                       | banned (MALFORMED)              |
   | NaN/Inf in a part                        | one restart                                | banned (NONFINITE)              |
   | lie in a gradient (any bit)              | CenteredClip bounds it (~tau/n per part);  | banned (GRADIENT) when drawn:   |
   |                                          | a validator's replay (m per step)          | probability ~m/n per step       |
   | lie in an aggregate                      | an audit (publish parts, recompute)        | banned (AGGREGATE); <= ~1e-5 tau |
   |                                          |                                            | per part passes unseen          |
   | wrong or withheld MPRNG reveal           | one restart                                | banned (REVEAL)                 |
   | false accusation                         | one re-execution by everyone               | banned (FALSE_ACCUSATION)       |
   | false audit request                      | one audit (recompute one part)             | banned (FALSE_CLAIM)            |
   | forged rounding log                      | one replay by the validator                | banned (GRADIENT or CHUNK)      |
   | flood (any tags, sizes)                  | parsing, bounded memory (above)            | dropped, counted; its own slots |
   |                                          |                                            | turn to garbage -> banned       |
   | relay spam in the slow path              | <= 2 items per member per round, each      | unsigned or unchained items     |
   |                                          | checked (<= 2 n signatures per relay msg)  | dropped; two echoes = proof     |
   | "I got no chunk" (validator)             | the chunk is made public in REVEAL         | none (unprovable either way)    |
   | join requests, fresh keys, any number    | per slot and step <= 4 signature checks    | none for unadmitted requests;   |
   | (JOINING)                                | and one kept request (112 B); each REVEAL  | a slot admits one key ever, and |
   |                                          | carries <= one per open slot, checked once | <= join_per_step per step, <=   |
   |                                          |                                            | join_max in probation at once   |
   | admitted, then silent in probation       | one wait for its PROBE (<= compute_timeout | banned (SILENT); the slot is    |
   |                                          | + 2 T from the step's start), once         | closed for good                 |
   | admitted, lying in probation             | per newcomer and step: the state sent once | banned (GRADIENT) at its first  |
   |                                          | (weights, optimizer, commitments), n       | probation step; its gradient    |
   |                                          | digests signed, one gradient replayed by   | never aggregated                |
   |                                          | every member: <= join_max of each per step |                                 |
   |                                          | (measured: 1.72x the step time, 8 founders,|                                 |
   |                                          | one newcomer; ./build/bench_btard join)    |                                 |
   | member serving a newcomer wrong state    | T / 2 (the grace for the member that sends | none (the newcomer cannot prove |
   |                                          | it unasked, cut short by a wrong state),   | it to others); it is detected   |
   |                                          | then f0 + 1 attesters asked at once (one   |                                 |
   |                                          | honest): up to f0 + 1 states over the      |                                 |
   |                                          | newcomer's link, within the PROBE deadline |                                 |
   | a request sent to some members only      | nothing: f + 1 carriers admit it, fewer do | none                            |
   |                                          | not, the same on every honest member       |                                 |
   | a newcomer's copies of its request       | a 112-byte comparison each (one per        | none (the same signed bytes)    |
   |                                          | timeout / 4 while it waits)                |                                 |
   | TCP: connect with a key nobody holds     | a CURVE handshake (~4 Curve25519 ops)      | the same handshake; <= 8 guest  |
   | (JOINING, >>zmq)                         | before ZAP; accepted as a guest only on    | keys per open slot at once,     |
   |                                          | the guest endpoint while a slot is open,   | forgotten after 60 s idle; on   |
   |                                          | <= 8 handshakes per key                    | the members' endpoint put off   |
   |                                          |                                            | (ZAP 300) while a slot is open  |
   | TCP: a guest's messages, any number and  | only on the guest endpoint (0.2.7): ZeroMQ | dropped unless for an open slot |
   | size (a flood)                           | refuses one over guest_max (256) + 520 B   | and <= guest_max bytes (then as |
   |                                          | before allocating it (and drops the        | any request, above); an over-   |
   |                                          | connection), queues <= 16 per connection,  | size one costs it its           |
   |                                          | the members' endpoint first: <= 64         | connection                      |
   |                                          | connections per open slot at once, about   |                                 |
   |                                          | 45 KiB each (64: +2.9 MiB resident); heard |                                 |
   |                                          | only as the slot it claims (join rows).    |                                 |
   |                                          | Measured (tests/zmq_slots.c): 3 keys       |                                 |
   |                                          | sending 192 MiB, 1 MiB messages on both    |                                 |
   |                                          | endpoints and 200 B ones: +0.6-0.9 MiB     |                                 |
   |                                          | peak (0.2.6: +193 MiB, all of it queued)   |                                 |
   | TCP: claim a member's or admitted slot   | one handshake, messages dropped            | refused: it lacks the key       |
   | TCP: take or close an open slot          | a newcomer's join denied (not defended)    | one request (then probation     |
   |                                          |                                            | work, from the slot's address)  |
   | step queries from an open slot (step     | per open slot and step <= 8 answers, each  | none; over TCP <= 20 messages a |
   | discovery, JOINING)                      | one send of an 80-byte statement signed    | second per guest key (bursts of |
   |                                          | once per step (only in a step that got a   | 10), <= 8 keys per open slot:   |
   |                                          | query)                                     | it may use the 8 answers up     |
   | lie about my step to a newcomer          | none to members; the newcomer: <= 4        | none (signed, but only the      |
   | (lying_step)                             | signature checks per founder and query     | newcomer sees it: not punished);|
   |                                          | round; its join at most D + 2 = 6 steps    | moves nothing while f0 + 1      |
   |                                          | after the highest honest step (only when   | honest founders answer          |
   |                                          | fewer than f0 + 1 honest founders answer)  |                                 |

   The unprovable rows are the price of not trusting anyone's word: each
   is bounded per exchange (one slow path, f T at most) but costs the
   attacker nothing. A run with f liars echoing untruly every exchange runs
   f T slower per exchange and stays correct.

   FIXED IN 0.2.1: with 16 peers, 7 Byzantines that each send their
   commitment to half the members only (withhold_half) got honest peers
   banned in 5 of 20 seeded runs of 0.2.0 on a loaded machine. Per-peer
   logs of a failing run showed the deprived half finishing its COMMIT
   wait 1 s (two timeouts) after the others instead of a grace period
   later: the in-process transport wakes a waiter only once `want`
   messages are queued (the number it still misses), so the last few
   messages that make the moved-on rule fire sat unread. The others then
   went on without the deprived half's PARTS envelopes, took the fast path
   on the 7 echoes they had (alike), and banned the half as silent one
   exchange later, while the half, in the slow path, waited for fetches
   nobody sent. Fixed at each layer: a wait wakes on every message while
   the moved-on rule may fire; the fast path needs every member's echo; a
   late but live member is waited for once more; the relays listen to
   every member that showed life and keep one timeout of slack; and a
   deadline holds even while messages keep coming (the transport hands
   over what is queued before it looks at the clock, so a steady stream
   kept a relay round open past its end). tests/test_btard_byz.c
   (withhold_half_16_peers_slow_honest_link) replays the case with an
   honest peer on a link slowed to 0.9 of the deadline; 0.2.0 fails it.

   JOINING (the paper's Sybil heuristic: validated work before aggregation).
   A roster entry of 32 zero bytes is an open slot: the founders are the
   others, N0 of them, of which at most f0 = (N0 - 1) / 2 lie (the run's
   assumption). The endpoint of an open slot asks to join with a key of its
   own (cfg.join, cfg.join_step):
     admission  its signed JOIN (rank, step s, public key) goes to the
                founders; each member keeps one request per slot and
                carries the requests for step s in its REVEAL of step s, so
                they are agreed with the REVEAL envelopes (echoes, the slow
                path). At the end of step s, a request carried by f + 1
                agreed REVEALs (one carrier honest, who got it from that
                endpoint) is admitted by every honest member, one carried by
                fewer by none: all or none, at the same step, whoever the
                newcomer or a Byzantine sent it to. Two such requests for one
                slot ban the slot. Admitted, lowest rank first, while fewer
                than cfg.join_per_step (1) were admitted this step and fewer
                than cfg.join_max (2) are in probation; over the bounds the
                request lapses (the newcomer may ask again). A slot admits one
                key, ever: banned, it stays banned; a key once in the roster is
                refused in any slot.
     the state  at the start of each step from s + 1 to the end of probation,
                every member sends the newcomer its signed digest of the state
                (weights, optimizer state, bans, membership and keys, the
                previous step's commitments and weights that validators check:
                the same bytes on every honest member); the member at position
                (newcomer + step) mod n sends the state. The newcomer takes the
                digest f0 + 1 founders signed alike (one of them honest), and a
                state whose SHA-256 is that digest: a wrong one is reported
                (VT_EV_BAD_STATE). After T / 2 for that member (less if a
                wrong state came), f0 + 1 members that attested the digest
                are asked at once, founders first; each wrong state makes
                one more asked, and nobody whose state failed is asked again.
     probation  cfg.probation steps (3): the newcomer computes its gradient on
                the agreed weights from its public seed and sends every member
                a signed PROBE: the SHA-256 of its gradient and its log chunk.
                It is in no round: it sends no part, aggregates nothing, and
                its gradient never reaches an aggregator. Members carry the
                PROBE in their REVEAL (waiting for it as for any message: until
                f + 1 members moved on, at most until the step's COMMIT
                deadline: a state withheld from it costs it one timeout of
                that); at the end of the step the count rule again: no
                PROBE with f + 1 carriers is silence (banned SILENT), two are
                equivocation, one is replayed by every member with its chunk on
                the step's weights, bit for bit: another gradient bans it
                (GRADIENT, or CHUNK). Every probation step is checked, by
                everyone, not m / n of them.
     member     from step s + 1 + probation it is a member like the founders
                (synced once more at the start of that step).
   Membership - each rank's key, ban (step, reason), first step and first
   aggregating step - is part of every honest peer's view
   (vt_btard_member, vt_btard_view_digest) and of the state a newcomer
   fetches. What joining does NOT defend against: a patient Sybil that
   works honestly through probation and lies later is caught only by the
   ordinary validation, at the ordinary rate (about m / n per attacked
   step); each slot admits one identity, so the number of Sybils is bounded
   by the slots (endpoints) an attacker holds, not by compute - probation
   costs a Sybil cfg.probation honest gradients, which is the paper's
   "computationally constrained" premise, not a proof. A newcomer trusts the
   founders' majority: if more than f0 founders lie, it can be fed a state.
   Tested over the in-process transport (tests/test_btard_join.c) and over
   TCP between processes (tests/tcp_run.sh: 8 founder processes and a
   newcomer, honest or lying; tests/zmq_slots.c: impostors). MPI ranks in
   open slots could join (nothing there names keys); untested.
   Over TCP (>>zmq) a link is known by its CURVE key, and a newcomer's key
   is known to nobody before admission, so the transport learns the view:
   the peer hands it roster and bans after every step (vt_net.roster).
   While slot r is open, a member's ZAP handler accepts a key that no slot
   holds as a GUEST, on the member's guest endpoint only: a socket of its
   own whose limits fit what a newcomer sends (messages up to guest_max
   bytes, 256 by default, a JOIN being 112; 16 queued per connection), so
   a stranger's flood costs bounded memory (since 0.2.7; the members'
   socket takes messages up to max_msg, `queue` of them per connection).
   The guest's connection names the slot it speaks for (its routing id,
   inside CURVE's encrypted handshake), and its messages are heard as from
   r only while r is open. Once r is admitted, only the admitted key is
   heard as r, and only then do members connect to r's endpoint, with that
   key pinned as the CURVE server key: the newcomer gets its state only if
   it holds both the admitted key and the slot's address. The newcomer
   speaks on the members' endpoints once its own view admits it (after it
   synced the state); a member that has not admitted it yet puts the
   handshake off (ZAP 300) until it has. A banned slot is
   refused at the handshake and its messages dropped. A connection that
   claims a member's slot must prove that member's key (a guest claiming
   it is refused), so joining weakens nothing CURVE gave the members.
   What it does not give: an open slot over TCP is first come. Anyone who
   reaches the members can send a request for it (in-process, only the
   slot's endpoint could), so a stranger can take an open slot (then it
   must do validated work, from the slot's address, or be banned and the
   slot closed for good), or send a second request so that the slot is
   banned, or fill the guest table (8 keys per open slot) so that an honest
   newcomer's handshake is refused while the stranger keeps its keys busy:
   joining can be denied by anyone, but never used to speak for a member
   or to reach aggregation unvalidated. A request sent before the handshake
   is queued by ZeroMQ; a copy lost with a broken connection is covered by
   the newcomer sending the same bytes again every timeout / 4 until it is
   attested (a member keeps the first and compares the others with it).
   STEP DISCOVERY. A newcomer told a step (cfg.join_step; btard_peer --join
   STEP) asks for it: at most 64 steps ahead of the members, not behind
   them, and a request for a step they have passed, or one that lapsed over
   the bounds, is not renewed. One started whenever (VT_BTARD_JOIN_AUTO;
   btard_peer --join auto) first asks every founder its step (STEPQ, an
   empty message through its slot: over TCP a guest's, answered through
   the member's ROUTER on the connection it came by, so the newcomer reads
   its DEALERs, whose server keys it pinned). Each founder answers with a
   signed statement (session, its rank, the step it runs), signed once per
   step, at most 8 answers per open slot and step. The newcomer keeps each
   founder's latest statement and, over every window [v, v + D] (D = 4,
   v a statement) that holds the statements of f0 + 1 founders, takes the
   (f0 + 1)-th smallest statement in it; c, the least of these, is the step
   vouched for, and it asks to join at c + 2. At most f0 founders lie, so
   the f0 + 1 statements at or below c include an honest one: c is never
   below the lowest honest statement (a lie "behind" cannot make it ask for
   a step the members passed), and never more than D above the highest (a
   lie "ahead" delays it at most D + 2 steps); when f0 + 1 honest founders
   answer within D of each other, the window from the lowest of them holds
   f0 + 1 honest statements, so c is at most the highest honest one and
   the liars move nothing (tests/test_btard_join.c
   step_pick_bounded_by_honest_statements; tcp_run.sh join_auto_liars:
   3 of 8 founders lying 1000 ahead, 1000 behind and 3 ahead). Fewer than
   f0 + 1 statements alike (founders dead, or the statements more than D
   apart): it asks again, a round per timeout, until join_wait. While it
   waits to be admitted it asks again every timeout; when f0 + 1 founders
   state a step past join_step + 1 (one of them honest: the step ended at
   every honest member, and an admitted newcomer would have been sent the
   state at the start of the next one) its request lapsed - it came after
   their REVEALs, or over the bounds - and it asks for a new step by the
   same rule (a liar cannot make it renew, nor stop it: the honest
   statements suffice). What it costs the attacker: nothing. A statement
   is signed, but only the newcomer sees it and it is no proof the members
   could agree on, so a lying founder is not banned (NOT DEFENDED). The
   newcomer trusts f0 + 1 founders as it trusts their attested state.

   MODEL STATE BEYOND THE WEIGHTS. Everything a step carries to the next
   must be the same on every honest peer and covered by what the peers
   agree on; a gradient must depend on the weights and the public seed
   alone. Batch norm's running statistics break both if each peer moves its
   own, so the CNN tasks (>>cnn) keep none in the training state and
   recompute them from the agreed weights over a public calibration set
   when evaluating: nothing a peer sends enters them.

   NOT DEFENDED (say it plainly): a network slower than the deadlines
   (honest peers are then taken for silent); a majority of Byzantine
   members; Sybils beyond what JOINING bounds (a patient Sybil that behaves
   through probation and lies later is caught at the ordinary rate; one
   identity per slot, not per unit of compute); the denial of joining over
   TCP (an open slot is first come: JOINING; a stranger's guest keys may
   also use up an open slot's 8 step answers per step); a founder that lies
   to a newcomer about its step is not punished (it is bounded: STEP
   DISCOVERY); a machine so loaded that an honest process is descheduled
   past a deadline (it is taken for silent, like a slow network:
   tests/tcp_run.sh scales its deadlines with the load); lies within the honest spread
   that CenteredClip lets through (bounded, above); a Byzantine that makes
   every exchange take the slow path (bounded cost, above); denial of
   service below the transport (TCP connection floods: the CURVE handshake
   of any key costs a member about four Curve25519 operations before the
   ZAP handler sees the key, at the attacker's rate, and each connection
   ZeroMQ holds costs its buffers, about 45 KiB, until the handshake fails
   or times out; a guest key forgotten after 60 s idle keeps the
   connections it opened, so over time guests hold more than the 64 per
   open slot the table admits at once; a Byzantine member's connection may
   queue `queue` messages of up to max_msg bytes before the transport drops
   them: BOUNDED RESOURCES). MPI is for trusted clusters: one rank that
   dies ends the job.
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

/* append n bytes */
static int vt__bt_add(vt__bt_buf *b, const void *p, size_t n) {
    if (!vt__bt_reserve(b, b->n + n + 1)) return 0;
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
    return 1;
}
static int vt__bt_add32(vt__bt_buf *b, uint32_t v) { unsigned char q[4]; vt__bt_p32(q, v); return vt__bt_add(b, q, 4); }
static int vt__bt_add64(vt__bt_buf *b, uint64_t v) { unsigned char q[8]; vt__bt_p64(q, v); return vt__bt_add(b, q, 8); }
static int vt__bt_addf64(vt__bt_buf *b, double x) { unsigned char q[8]; vt__bt_pf64(q, x); return vt__bt_add(b, q, 8); }
static int vt__bt_zero32(const unsigned char *d) {
    int i;
    for (i = 0; i < 32; i++) if (d[i]) return 0;
    return 1;
}

/* Tags: session(8) step(24) round(8) phase(8) sub(16); sub is (exchange << 12)
   | index for the phases that need both. A message is matched by (sender,
   tag); the mailbox keeps only tags of this step's rounds from the current
   one on, and of the next step's first round. */
#define VT__BT_TAG(sess, step, round, phase, sub)                                                   \
    ((((uint64_t)(sess) & 0xFFu) << 56) | (((uint64_t)(step) & 0xFFFFFFu) << 32) |                  \
     (((uint64_t)(round) & 0xFFu) << 24) | (((uint64_t)(phase) & 0xFFu) << 16) | ((uint64_t)(sub) & 0xFFFFu))
#define VT__BT_SUB(x, i) ((((unsigned)(x) & 0xFu) << 12) | ((unsigned)(i) & 0xFFFu))
#define VT__BT_BYE (~(uint64_t)0)
#define VT__BT_TSESS(t) ((int)(((t) >> 56) & 0xFF))
#define VT__BT_TSTEP(t) ((int64_t)(((t) >> 32) & 0xFFFFFF))
#define VT__BT_TROUND(t) ((int)(((t) >> 24) & 0xFF))
#define VT__BT_TPHASE(t) ((int)(((t) >> 16) & 0xFF))
#define VT__BT_TSUB(t) ((int)((t) & 0xFFFF))

enum {
    VT__PH_CHUNK = 1, /* target -> its validator: last step's log chunk (point to point) */
    VT__PH_ENV,       /* a signed envelope of exchange x (sub: x) */
    VT__PH_PART,      /* a gradient part to its aggregator (point to point; sub: the part) */
    VT__PH_DS,        /* a relay round of the slow path (sub: exchange, relay round) */
    VT__PH_FETCH,     /* an agreed envelope sent to a peer that lacks it (sub: exchange, slot) */
    VT__PH_MPART,     /* plain all-reduce: part (point to point) */
    VT__PH_MAGG,      /* plain all-reduce: mean (point to point) */
    VT__PH_JUNK,      /* the flood attack's messages */
    VT__PH_JOIN,      /* a newcomer's join request (tag step: the step it asks for) */
    VT__PH_PROBE,     /* a newcomer's probation work of a step */
    VT__PH_ATTEST,    /* a member's signed digest of the state, to a newcomer */
    VT__PH_STATE,     /* the state, to a newcomer */
    VT__PH_SREQ,      /* a newcomer asks a member for the state */
    VT__PH_STEPQ,     /* an open slot asks a member's step (step discovery; tag step 0) */
    VT__PH_STEPA,     /* a member's signed statement of its step, to an open slot */
    VT__PH_ASK,       /* a member that lacks envelopes of exchange x asks one that went on (sub: x; the ranks) */
    VT__PH_FWD        /* the answer: a member's signed envelope of exchange x, as I hold it (sub: exchange, its rank) */
};

/* ==========================================================================
   >>sign  identities, signatures and randomness: libsodium's Ed25519
   (crypto_sign_detached, crypto_sign_verify_detached) and randombytes_buf,
   which draws from getrandom(2) on Linux. Nothing here is hand-made
   cryptography; vtrain's SHA-256 hashes what is signed.
   ========================================================================== */

#ifdef VTRAIN_SODIUM
static int vt__bt_sodium(void) { return sodium_init() >= 0; } /* idempotent and thread-safe */
VTDEF int vt_btard_can_sign(void) { return vt__bt_sodium(); }
VTDEF vt_status vt_btard_key_new(vt_btard_key *k) {
    if (!k || !vt__bt_sodium()) return vt__tls_fail(VT_ERR_BACKEND, "vt_btard_key_new: libsodium did not initialise");
    crypto_sign_keypair(k->pk, k->sk);
    return VT_OK;
}
VTDEF vt_status vt_btard_key_from_seed(vt_btard_key *k, const unsigned char seed[32]) {
    if (!k || !seed || !vt__bt_sodium()) return vt__tls_fail(VT_ERR_BACKEND, "vt_btard_key_from_seed: libsodium did not initialise");
    crypto_sign_seed_keypair(k->pk, k->sk, seed);
    return VT_OK;
}
static void vt__bt_sign_raw(const unsigned char sk[64], const unsigned char *m, size_t n, unsigned char sig[64]) {
    crypto_sign_detached(sig, NULL, m, (unsigned long long)n, sk);
}
static int vt__bt_verify_raw(const unsigned char pk[32], const unsigned char *m, size_t n, const unsigned char sig[64]) {
    return crypto_sign_verify_detached(sig, m, (unsigned long long)n, pk) == 0;
}
static void vt__bt_os_random(unsigned char *b, size_t n) { randombytes_buf(b, n); }
#else
static const char vt__bt_nosodium[] =
    "vtrain_btard.h was built without VTRAIN_SODIUM: BTARD signs every message with Ed25519 from libsodium "
    "(define VTRAIN_SODIUM before the implementation and link -lsodium; Debian: libsodium-dev)";
VTDEF int vt_btard_can_sign(void) { return 0; }
VTDEF vt_status vt_btard_key_new(vt_btard_key *k) { (void)k; return vt__tls_fail(VT_ERR_BACKEND, "vt_btard_key_new: %s", vt__bt_nosodium); }
VTDEF vt_status vt_btard_key_from_seed(vt_btard_key *k, const unsigned char seed[32]) {
    (void)k; (void)seed;
    return vt__tls_fail(VT_ERR_BACKEND, "vt_btard_key_from_seed: %s", vt__bt_nosodium);
}
/* never reached: vt_btard_peer_create refuses to start BTARD without them */
static void vt__bt_sign_raw(const unsigned char sk[64], const unsigned char *m, size_t n, unsigned char sig[64]) {
    (void)sk; (void)m; (void)n;
    memset(sig, 0, 64);
}
static int vt__bt_verify_raw(const unsigned char pk[32], const unsigned char *m, size_t n, const unsigned char sig[64]) {
    (void)pk; (void)m; (void)n; (void)sig;
    return 0;
}
static void vt__bt_os_random(unsigned char *b, size_t n) { memset(b, 0, n); }
#endif

/* ==========================================================================
   >>inproc  the in-process transport: a queue per receiver, a mutex and a
   condition variable on a monotonic clock; senders copy. Each receiver
   holds at most 4 max_msg bytes and 4096 messages from one sender; more is
   dropped (counted), so a flooding thread cannot grow another's memory.
   ========================================================================== */

typedef struct vt__bt_msg {
    struct vt__bt_msg *next;
    int from;
    uint64_t tag;
    size_t n;
    unsigned char *p;
    double ready;        /* delivered from this time on (the hub's jitter) */
} vt__bt_msg;

/* one allocation per message: the payload, then the header */
static VT__UNUSED vt__bt_msg *vt__bt_newmsg(int from, uint64_t tag, const void *p, size_t n) {
    size_t off = (n + 15) & ~(size_t)15;
    unsigned char *b = (unsigned char *)VT_MALLOC(off + sizeof(vt__bt_msg), NULL);
    vt__bt_msg *m;
    if (!b) return NULL;
    m = (vt__bt_msg *)(void *)(b + off);
    if (n) memcpy(b, p, n);
    m->p = b; m->n = n; m->from = from; m->tag = tag; m->next = NULL; m->ready = 0;
    return m;
}

#ifndef VTRAIN_NO_THREADS
#define VT__BT_QMSGS 4096
typedef struct vt__bt_box {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    vt__bt_msg *head, *tail;
    int count;           /* messages queued */
    size_t *qbytes;      /* [n] bytes queued per sender */
    int *qcount;         /* [n] messages queued per sender */
    int waiting, want;   /* the owner sleeps until `want` messages are queued */
    int64_t dropped;
    double *last;        /* [n] the latest delivery time per sender (jitter keeps each link in order) */
    uint64_t jctr;
} vt__bt_box;

typedef struct vt__bt_hub {
    int n, live;
    volatile int closed;
    size_t max_msg, max_bytes;
    double jitter;       /* each message waits up to this many seconds (vt_net_inproc_jitter) */
    uint64_t jseed;
    double *delay;       /* [n] per sender, seconds (vt_net_inproc_delay); NULL: none */
    int timed;           /* jitter or delays: messages carry a delivery time */
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
    /* sizes first: nothing is allocated for what would be dropped */
    pthread_mutex_lock(&b->mu);
    if (n > h->max_msg || b->qbytes[from] + n > h->max_bytes || b->qcount[from] >= VT__BT_QMSGS || h->closed) {
        b->dropped++;
        pthread_mutex_unlock(&b->mu);
        return 0;
    }
    pthread_mutex_unlock(&b->mu);
    m = vt__bt_newmsg(from, tag, p, n);
    if (!m) return -1;
    pthread_mutex_lock(&b->mu);
    if (b->qbytes[from] + n > h->max_bytes || b->qcount[from] >= VT__BT_QMSGS) {
        b->dropped++;
        pthread_mutex_unlock(&b->mu);
        VT_FREE(m->p, NULL);
        return 0;
    }
    if (h->timed) { /* a delay uniform in [0, jitter), and the sender's, never before the link's previous message */
        double u = (double)(vt_rng_u64(h->jseed, (uint64_t)to, b->jctr++) >> 11) * (1.0 / 9007199254740992.0);
        m->ready = vt_net_now() + u * h->jitter + (h->delay ? h->delay[from] : 0);
        if (m->ready < b->last[from]) m->ready = b->last[from];
        b->last[from] = m->ready;
    }
    if (b->tail) b->tail->next = m;
    else b->head = m;
    b->tail = m;
    b->count++;
    b->qbytes[from] += n;
    b->qcount[from]++;
    if (b->waiting && b->count >= b->want) { b->waiting = 0; wake = 1; }
    pthread_mutex_unlock(&b->mu);
    /* after unlocking: the woken owner does not run into our lock */
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

/* A wait blocks until `want` messages are queued (or the deadline). It may
   first yield the core (sched_yield) for VT__BT_IP_YIELD_S seconds and look
   again, so that a message landing meanwhile needs no wake-up; 0.2.1 did so
   for 2 ms. Measured (16 peers on 2 cores, bench_btard overhead, 3 rounds
   ABAB at load 7 to 19, bench/RESULTS.md): without the yield BTARD uses 15%
   less CPU and the plain mean 13% less (the yields were a spin: a woken
   peer's syscalls and switches), and neither is slower, so the in-process
   transport now blocks at once. The MPI transport keeps its own
   (VT__BT_YIELD_S: it has no wake-up to block on, only naps). */
#ifndef VT__BT_YIELD_S
#define VT__BT_YIELD_S 2e-3
#endif
#ifndef VT__BT_IP_YIELD_S
#define VT__BT_IP_YIELD_S 0
#endif
static int vt__bt_ip_recv(vt_net *t, int *from, uint64_t *tag, unsigned char **p, size_t *n, double deadline, int want) {
    vt__bt_hub *h = (vt__bt_hub *)t->impl;
    vt__bt_box *b = &h->box[t->rank];
    double t0 = vt_net_now();
    *p = NULL;
    *n = 0;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        double now = vt_net_now(), wake = deadline;
        vt__bt_msg *m = b->head, *prev = NULL;
        if (h->timed) /* the first message due (each link stays in order) */
            for (; m && m->ready > now; prev = m, m = m->next) if (m->ready < wake) wake = m->ready;
        if (m) {
            if (prev) prev->next = m->next;
            else b->head = m->next;
            if (b->tail == m) b->tail = prev;
            b->count--;
            b->qbytes[m->from] -= m->n;
            b->qcount[m->from]--;
            t->stats.dropped = b->dropped;
            pthread_mutex_unlock(&b->mu);
            *from = m->from; *tag = m->tag; *p = m->p; *n = m->n;
            t->stats.recv_msgs++;
            t->stats.recv_bytes += (int64_t)m->n;
            return 1;
        }
        if (h->closed) { pthread_mutex_unlock(&b->mu); return -1; }
        if (now >= deadline) { pthread_mutex_unlock(&b->mu); return 0; }
        if (now - t0 < VT__BT_IP_YIELD_S) {
            pthread_mutex_unlock(&b->mu);
            sched_yield();
            pthread_mutex_lock(&b->mu);
            continue;
        }
        {
            struct timespec ts;
            double dl = wake < now + 3600 ? wake : now + 3600;
            ts.tv_sec = (time_t)dl;
            ts.tv_nsec = (long)((dl - (double)ts.tv_sec) * 1e9);
            if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
            b->waiting = 1;
            b->want = want > 1 && !h->timed ? want : 1;
            pthread_cond_timedwait(&b->cv, &b->mu, &ts);
            b->waiting = 0;
        }
    }
}

VTDEF void vt_net_inproc_close(vt_net *any) {
    vt__bt_hub *h;
    int i;
    if (!any || any->recv != vt__bt_ip_recv) return;
    h = (vt__bt_hub *)any->impl;
    h->closed = 1;
    for (i = 0; i < h->n; i++) {
        pthread_mutex_lock(&h->box[i].mu);
        pthread_cond_broadcast(&h->box[i].cv);
        pthread_mutex_unlock(&h->box[i].mu);
    }
}

VTDEF void vt_net_inproc_jitter(vt_net *any, double max_s, uint64_t seed) {
    vt__bt_hub *h;
    if (!any || any->recv != vt__bt_ip_recv) return;
    h = (vt__bt_hub *)any->impl;
    h->jitter = max_s > 0 ? max_s : 0;
    h->jseed = seed;
    h->timed = h->jitter > 0 || h->delay;
}
VTDEF void vt_net_inproc_delay(vt_net *any, int from, double s) {
    vt__bt_hub *h;
    if (!any || any->recv != vt__bt_ip_recv) return;
    h = (vt__bt_hub *)any->impl;
    if (from < 0 || from >= h->n || !(s >= 0)) return;
    if (!h->delay) {
        h->delay = (double *)VT_MALLOC(sizeof(double) * (size_t)h->n, NULL);
        if (!h->delay) return;
        memset(h->delay, 0, sizeof(double) * (size_t)h->n);
        h->timed = 1;
    }
    h->delay[from] = s;
}

static void vt__bt_ip_destroy(vt_net *t) {
    vt__bt_hub *h = (vt__bt_hub *)t->impl;
    int i, last;
    pthread_mutex_lock(&h->mu);
    last = --h->live == 0;
    pthread_mutex_unlock(&h->mu);
    if (!last) return;
    for (i = 0; i < h->n; i++) {
        vt__bt_msg *m = h->box[i].head;
        while (m) { vt__bt_msg *nx = m->next; VT_FREE(m->p, NULL); m = nx; }
        VT_FREE(h->box[i].qbytes, NULL);
        VT_FREE(h->box[i].qcount, NULL);
        VT_FREE(h->box[i].last, NULL);
        pthread_mutex_destroy(&h->box[i].mu);
        pthread_cond_destroy(&h->box[i].cv);
    }
    pthread_mutex_destroy(&h->mu);
    VT_FREE(h->delay, NULL);
    VT_FREE(h->box, NULL);
    VT_FREE(h->ep, NULL);
    VT_FREE(h->eps, NULL);
    VT_FREE(h, NULL);
}

VTDEF vt_net **vt_net_inproc_create(int n, size_t max_msg) {
    vt__bt_hub *h;
    int i, bad = 0;
    if (n < 1 || n > 4096) { vt__tls_fail(VT_ERR_ARG, "vt_net_inproc_create: %d peers (1..4096)", n); return NULL; }
    h = (vt__bt_hub *)VT_MALLOC(sizeof(vt__bt_hub), NULL);
    if (!h) { vt__tls_fail(VT_ERR_NOMEM, "vt_net_inproc_create: out of memory"); return NULL; }
    memset(h, 0, sizeof *h);
    h->n = h->live = n;
    h->max_msg = max_msg ? max_msg : ((size_t)64 << 20);
    h->max_bytes = 4 * h->max_msg;
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
        b->qbytes = (size_t *)VT_MALLOC(sizeof(size_t) * (size_t)n, NULL);
        b->qcount = (int *)VT_MALLOC(sizeof(int) * (size_t)n, NULL);
        b->last = (double *)VT_MALLOC(sizeof(double) * (size_t)n, NULL);
        if (b->qbytes) memset(b->qbytes, 0, sizeof(size_t) * (size_t)n);
        if (b->qcount) memset(b->qcount, 0, sizeof(int) * (size_t)n);
        if (b->last) memset(b->last, 0, sizeof(double) * (size_t)n);
        if (!b->qbytes || !b->qcount || !b->last) bad = 1;
        memset(&h->ep[i], 0, sizeof(vt_net));
        h->ep[i].rank = i;
        h->ep[i].size = n;
        h->ep[i].send = vt__bt_ip_send;
        h->ep[i].bcast = vt__bt_ip_bcast;
        h->ep[i].recv = vt__bt_ip_recv;
        h->ep[i].destroy = vt__bt_ip_destroy;
        h->ep[i].impl = h;
        h->ep[i].authenticated = 1;
        h->eps[i] = &h->ep[i];
    }
    if (bad) { h->live = 1; vt__bt_ip_destroy(&h->ep[0]); vt__tls_fail(VT_ERR_NOMEM, "vt_net_inproc_create: out of memory"); return NULL; }
    return h->eps;
}
#else
VTDEF vt_net **vt_net_inproc_create(int n, size_t max_msg) {
    (void)n; (void)max_msg;
    vt__tls_fail(VT_ERR_BACKEND, "vt_net_inproc_create: built with VTRAIN_NO_THREADS (the in-process transport needs threads)");
    return NULL;
}
VTDEF void vt_net_inproc_close(vt_net *any) { (void)any; }
VTDEF void vt_net_inproc_jitter(vt_net *any, double max_s, uint64_t seed) { (void)any; (void)max_s; (void)seed; }
VTDEF void vt_net_inproc_delay(vt_net *any, int from, double s) { (void)any; (void)from; (void)s; }
#endif

/* ==========================================================================
   >>mpi  the MPI transport (VTRAIN_MPI): every message is one MPI_BYTE
   message with one MPI tag, carrying [u64 tag][payload]; the source rank
   comes from MPI, so nobody can speak for another. Sends are MPI_Isend
   (never block on a slow or banned peer); receiving polls MPI_Iprobe, and a
   message larger than max_msg is discarded without being allocated (a
   truncating receive into a small buffer, under MPI_ERRORS_RETURN).
   destroy() drains: it sends BYE to everyone and keeps receiving until every
   rank's BYE is in and its own sends are done, so MPI_Finalize finds no
   traffic in flight. MPI is for trusted clusters: the MPI library's own
   queue of unexpected messages is not bounded by us, and one rank that dies
   ends the job (mpirun's default).
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
    size_t max_msg;
    vt__bt_mpis *sends;
    unsigned char *bye;
} vt__bt_mpi;

static void vt__bt_mpi_reap(vt__bt_mpi *m) {
    vt__bt_mpis **sp;
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
    if (n > m->max_msg || n > (size_t)0x7fffff00) { t->stats.dropped++; return 0; }
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
    vt__bt_mpi_reap(m);
    return rc;
}

static int vt__bt_mpi_send(vt_net *t, int to, uint64_t tag, const void *p, size_t n) {
    if (to < 0 || to >= t->size) return -1;
    return vt__bt_mpi_post(t, to, NULL, tag, p, n);
}

static int vt__bt_mpi_bcast(vt_net *t, uint64_t tag, const void *p, size_t n, const unsigned char *to) {
    return vt__bt_mpi_post(t, -1, to, tag, p, n);
}

/* one message if one is there: 1, else 0 */
static int vt__bt_mpi_poll1(vt_net *t, int *from, uint64_t *tag, unsigned char **p, size_t *n) {
    vt__bt_mpi *m = (vt__bt_mpi *)t->impl;
    for (;;) {
        int flag = 0, cnt = 0, src;
        MPI_Status st;
        unsigned char *buf;
        MPI_Iprobe(MPI_ANY_SOURCE, VT__BT_MPI_TAG, m->comm, &flag, &st);
        if (!flag) return 0;
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        src = st.MPI_SOURCE;
        if (cnt < 8 || (size_t)cnt - 8 > m->max_msg) {
            /* too small or too large: receive it truncated into 16 bytes (an
               error under MPI_ERRORS_RETURN, but the message is consumed) */
            unsigned char scratch[16];
            MPI_Recv(scratch, (int)sizeof scratch, MPI_BYTE, src, VT__BT_MPI_TAG, m->comm, MPI_STATUS_IGNORE);
            if (cnt < 8) t->stats.garbage++;
            else t->stats.dropped++;
            continue;
        }
        buf = (unsigned char *)VT_MALLOC((size_t)cnt, NULL);
        if (!buf) {
            unsigned char scratch[16];
            MPI_Recv(scratch, (int)sizeof scratch, MPI_BYTE, src, VT__BT_MPI_TAG, m->comm, MPI_STATUS_IGNORE);
            t->stats.dropped++;
            continue;
        }
        MPI_Recv(buf, cnt, MPI_BYTE, src, VT__BT_MPI_TAG, m->comm, MPI_STATUS_IGNORE);
        *tag = vt__bt_g64(buf);
        if (*tag == VT__BT_BYE) { m->bye[src] = 1; VT_FREE(buf, NULL); continue; }
        *n = (size_t)cnt - 8;
        memmove(buf, buf + 8, *n);
        *p = buf;
        *from = src;
        t->stats.recv_msgs++;
        t->stats.recv_bytes += (int64_t)*n;
        return 1;
    }
}

/* Waiting: poll, yielding the core between polls for VT__BT_YIELD_S (see
   the in-process transport), then nap, 5 us growing to 200 us. */
static int vt__bt_mpi_recv(vt_net *t, int *from, uint64_t *tag, unsigned char **p, size_t *n, double deadline, int want) {
    vt__bt_mpi *m = (vt__bt_mpi *)t->impl;
    double t0 = vt_net_now(), nap = 5e-6;
    (void)want;
    *p = NULL;
    *n = 0;
    for (;;) {
        double now;
        if (vt__bt_mpi_poll1(t, from, tag, p, n)) return 1;
        vt__bt_mpi_reap(m);
        now = vt_net_now();
        if (now >= deadline) return 0;
#ifndef VTRAIN_NO_THREADS
        if (now - t0 < VT__BT_YIELD_S) { sched_yield(); continue; }
#endif
        vt__bt_sleep(nap);
        if (nap < 2e-4) nap *= 2;
    }
}

static void vt__bt_mpi_destroy(vt_net *t) {
    vt__bt_mpi *m = (vt__bt_mpi *)t->impl;
    double until = vt_net_now() + 120;
    int i;
    vt__bt_mpi_bcast(t, VT__BT_BYE, NULL, 0, NULL);
    for (;;) {
        int all = 1, from;
        uint64_t tag;
        unsigned char *p;
        size_t n;
        while (vt__bt_mpi_poll1(t, &from, &tag, &p, &n)) VT_FREE(p, NULL);
        vt__bt_mpi_reap(m);
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
    MPI_Comm_free(&m->comm);
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
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m->comm, &rank);
    MPI_Comm_size(m->comm, &size);
    m->max_msg = max_msg ? max_msg : ((size_t)64 << 20);
    m->bye = (unsigned char *)VT_MALLOC((size_t)size, NULL);
    if (!m->bye) {
        MPI_Comm_free(&m->comm);
        VT_FREE(m, NULL); VT_FREE(t, NULL);
        vt__tls_fail(VT_ERR_NOMEM, "vt_net_mpi_create: out of memory");
        return NULL;
    }
    memset(m->bye, 0, (size_t)size);
    t->rank = rank;
    t->size = size;
    t->send = vt__bt_mpi_send;
    t->bcast = vt__bt_mpi_bcast;
    t->recv = vt__bt_mpi_recv;
    t->destroy = vt__bt_mpi_destroy;
    t->impl = m;
    return t;
}
#endif /* VTRAIN_MPI */

/* ==========================================================================
   >>zmq  the TCP transport (VTRAIN_ZMQ), over ZeroMQ (libzmq).

   Why ZeroMQ: it is in every distribution (Debian libzmq3-dev), it frames
   messages, reconnects by itself when a peer comes back, queues per link
   with a bound (high-water marks) and never blocks a sender that uses
   ZMQ_DONTWAIT, refuses an inbound message over ZMQ_MAXMSGSIZE before
   allocating it, and its CURVE mechanism authenticates and encrypts every
   link with libsodium's crypto_box, which BTARD links anyway. nng would
   serve as well; ZeroMQ's ZAP hook is what lets a peer accept a connection
   only from a roster key and learn, for every message, whose key sent it.

   Each peer binds one ROUTER socket (CURVE server) at endpoints[rank] and
   connects one DEALER (CURVE client, the server's key pinned) to every
   other peer's ROUTER whose key it knows: peer i sends to j over its
   DEALER to j. A ZAP handler thread answers the handshake of every
   incoming connection: the client's Curve25519 key must be one derived
   from a roster identity not banned, and the connection's User-Id becomes
   that peer's rank, which every message received on the ROUTER then
   carries. Keys: libsodium's crypto_sign_ed25519_pk_to_curve25519 /
   sk_to_curve25519 of the Ed25519 identities, so a peer has one identity
   for signing and for its links. Keys nobody holds (a newcomer's, before
   the members admit it) are heard on a second ROUTER of their own, at
   guest_endpoints[rank], with limits sized for what a newcomer sends
   (below).

   A dead, hung or slow peer: the DEALER to it queues `queue` messages and
   then refuses (EAGAIN: counted as dropped), the ROUTER's queue from a
   flooding peer stops at its high-water mark (TCP backpressure), and the
   protocol sees silence. Nothing waits on it past a deadline.
   ========================================================================== */
#ifdef VTRAIN_ZMQ
#ifdef VTRAIN_NO_THREADS
#error "vtrain_btard.h: VTRAIN_ZMQ runs its ZAP handler on a thread: it cannot build with VTRAIN_NO_THREADS"
#endif

/* Open slots (>>btard: JOINING). A newcomer's key is known to nobody until
   the members admit it, so it cannot speak on their ROUTERs: the members'
   limits there (messages up to max_msg, `queue` of them per connection)
   would let any stranger make a member hold max_msg x queue bytes (64 GiB
   by default) per connection, refused only once received (0.2.6 and
   before: 6 MiB to 1 GiB resident in 6 s). Instead each peer binds a
   GUEST ROUTER at guest_endpoints[rank], whose ZAP handler accepts a key
   that no slot holds, as a GUEST, while some slot other than its own is
   open, and whose limits fit a newcomer: messages up to guest_max bytes
   (ZMQ_MAXMSGSIZE, with room for CURVE's framing and handshake: the
   largest a newcomer sends before it is admitted is a 112-byte JOIN) and
   VT__BT_ZGQ queued per connection and direction. The guest names the slot
   it speaks for in its connection's routing id ("J", u32 rank, 8 random
   bytes: set by the newcomer's DEALERs, sent inside CURVE's encrypted
   INITIATE, so bound to the key that proved itself), and every message it
   sends is delivered as from that slot only while the slot is open, or
   admitted with that very key. A connection with a member's key is that
   member (on either ROUTER); a guest claiming a member's slot is refused; a
   banned slot (in the peer's view, vt_net.roster) is refused at the
   handshake and its messages dropped. At most VT__BT_ZGUESTS guest keys
   per open slot are known at once, each passes the handshake at most
   VT__BT_ZHELLO times, and a guest silent for VT__BT_ZIDLE seconds is
   forgotten (its messages dropped, its key refused until the table has
   room). The members' ROUTER answers a key it does not know, while a slot
   is open, with ZAP's temporary failure (300: the client tries again):
   a newcomer that others admitted may connect before this member has
   admitted it; a refusal (400) would end that connection for good, and
   with it the messages queued on it (libzmq 4.3). When a slot is admitted
   the peer connects a DEALER to its endpoint with the admitted key pinned
   as the CURVE server key: members reach a newcomer only once they know
   which key must answer there. Before, a member can only answer a guest:
   a send to an open slot goes through the guest ROUTER to the routing id
   of the guest connection that last delivered a message for it (a step
   statement: >>peer, step discovery), and a newcomer reads its DEALERs to
   the guest endpoints for such answers. A newcomer speaks on the members'
   guest endpoints until its own view admits it (vt_net.roster, after it
   synced the state), then on their endpoints like any member. Every DEALER
   refuses a message over guest_max bytes (ZMQ_MAXMSGSIZE) and queues at
   most VT__BT_ZGQ: nothing else comes that way. */
#define VT__BT_ZGUESTS 8
#define VT__BT_ZHELLO 8
#define VT__BT_ZIDLE 60.0
#define VT__BT_ZGQ 16      /* messages queued per guest connection, and per DEALER inbound */
#define VT__BT_ZGMAX 256   /* guest_max by default: a JOIN is 112 bytes, a step statement 80, a step query or a state request 0 */
/* What ZMQ_MAXMSGSIZE counts beyond a message's tag and payload: CURVE's framing of each message
   (33 bytes in libzmq 4.3: command name, nonce, flags, MAC) and its handshake commands, which pass
   the same limit (HELLO 200 bytes, INITIATE about 310 with a newcomer's routing id): a limit of
   tag + payload alone refused a message of exactly max_msg, and one under 300 every handshake. */
#define VT__BT_ZWIRE 512
/* A guest key's messages are delivered at most VT__BT_ZRATE a second, in bursts of at most
   VT__BT_ZBURST (a token bucket per key; the rest dropped, counted garbage): what one open slot's
   guests make a member parse, verify and answer (join requests, step queries) is at most
   VT__BT_ZGUESTS * VT__BT_ZRATE messages a second of at most guest_max bytes. An honest newcomer
   sends a request every timeout / 4 and a step query every timeout to each member. */
#define VT__BT_ZRATE 20.0
#define VT__BT_ZBURST 10.0

typedef struct vt__bt_zguest {
    unsigned char key[32];
    double seen;                /* last handshake or delivered message */
    int hello;                  /* handshakes passed */
    double tokens, filled;      /* the rate bucket: messages it may still send, when it was last topped up */
} vt__bt_zguest;

typedef struct vt__bt_zmq {
    void *ctx, *router, **dealer;
    void *grouter;              /* the guest ROUTER at guest_endpoints[rank] (NULL: no guest is heard) */
    void **gdealer;             /* [size] a newcomer's DEALERs to the members' guest ROUTERs, until it is admitted */
    char **ep, **gep;           /* [size] copies of the endpoints and guest endpoints (a dealer to an admitted slot connects later) */
    unsigned char *cpk;         /* [size * 32] Curve25519 public keys of the roster */
    unsigned char *keyed;       /* [size] 1: cpk[i] holds a key (a founder, or an admitted newcomer) */
    unsigned char *alive;       /* [size] 0: banned in the peer's view: refused */
    unsigned char my_cpk[32], my_csk[32];
    unsigned char rid[13];      /* a newcomer's routing id: the slot it speaks for */
    unsigned char *grid;        /* [size * 13] the routing id of the guest connection that last spoke for each open slot */
    unsigned char *grid_ok;     /* [size] 1: grid holds one (a reply to the open slot goes there) */
    vt__bt_zguest *guest;       /* [cap_guest] keys not in the roster, accepted for open slots */
    int nguest, cap_guest;
    size_t max_msg, guest_max;
    pthread_mutex_t mu;         /* keyed, alive, cpk, guest: the ZAP thread reads them */
    int mu_up;
    pthread_t zap;
    int zap_up;
    void *zap_ready;            /* the handler's socket, bound before any connection */
    zmq_pollitem_t *items;      /* [size + 2] what a newcomer's recv polls: the ROUTERs and its DEALERs */
    int size, rank, queue, join;
    int rfd, gfd;               /* the ROUTERs' ZMQ_FD: readable when a mailbox has news (recv waits on them) */
} vt__bt_zmq;

/* one frame of a ZAP request into buf (at most cap bytes); -1 when the context ends */
static int vt__bt_zap_frame(void *s, unsigned char *buf, size_t cap, size_t *n, int *more) {
    zmq_msg_t m;
    int rc;
    zmq_msg_init(&m);
    rc = zmq_msg_recv(&m, s, 0);
    if (rc < 0) { zmq_msg_close(&m); return -1; }
    *n = zmq_msg_size(&m) < cap ? zmq_msg_size(&m) : cap;
    memcpy(buf, zmq_msg_data(&m), *n);
    *more = zmq_msg_more(&m);
    zmq_msg_close(&m);
    return 0;
}

/* slots other than mine that are open (no key) and not banned (z->mu held) */
static int vt__bt_zmq_open(const vt__bt_zmq *z) {
    int i, k = 0;
    for (i = 0; i < z->size; i++) k += i != z->rank && !z->keyed[i] && z->alive[i];
    return k;
}

/* the guest entry of key k (z->mu held): found, or added if add and there
   is room (idle guests forgotten first); NULL otherwise */
static vt__bt_zguest *vt__bt_zmq_guest(vt__bt_zmq *z, const unsigned char *k, int add) {
    double now = vt_net_now();
    int i, cap = VT__MIN(VT__BT_ZGUESTS * vt__bt_zmq_open(z), z->cap_guest);
    for (i = 0; i < z->nguest;)
        if (now - z->guest[i].seen > VT__BT_ZIDLE) z->guest[i] = z->guest[--z->nguest];
        else i++;
    for (i = 0; i < z->nguest; i++) if (!memcmp(z->guest[i].key, k, 32)) return &z->guest[i];
    if (!add || z->nguest >= cap) return NULL;
    memcpy(z->guest[z->nguest].key, k, 32);
    z->guest[z->nguest].seen = now;
    z->guest[z->nguest].hello = 0;
    z->guest[z->nguest].tokens = VT__BT_ZBURST;
    z->guest[z->nguest].filled = now;
    return &z->guest[z->nguest++];
}

/* the ZAP verdict on client key k at the members' ROUTER (guest 0) or the guest ROUTER (guest 1):
   "200" with its User-Id ("rank", or "g" and the key in hex: a guest), "300" (try again: a key that
   may be admitted soon) or "400", with why */
static const char *vt__bt_zap_judge(vt__bt_zmq *z, const unsigned char *k, int guest, char *user, const char **why) {
    const char *st = "400";
    int i;
    vt__bt_zguest *g;
    pthread_mutex_lock(&z->mu);
    for (i = 0; i < z->size && !(z->keyed[i] && !memcmp(k, z->cpk + 32 * (size_t)i, 32)); i++) {}
    if (i < z->size) { /* a member, or an admitted newcomer (on the guest ROUTER: one that has not moved yet) */
        *why = i != z->rank && z->alive[i] ? "OK" : "banned";
        if (i != z->rank && z->alive[i]) { snprintf(user, 16, "%d", i); st = "200"; }
    } else if (!vt__bt_zmq_open(z)) *why = "not in the roster";
    else if (!guest) { *why = "not admitted here (yet): a newcomer speaks on the guest endpoint until admitted"; st = "300"; }
    else if (!(g = vt__bt_zmq_guest(z, k, 1)) || g->hello >= VT__BT_ZHELLO) *why = "no room for newcomers";
    else {
        g->hello++;
        g->seen = vt_net_now();
        user[0] = 'g';
        for (i = 0; i < 32; i++) snprintf(user + 1 + 2 * i, 3, "%02x", k[i]);
        *why = "OK";
        st = "200";
    }
    pthread_mutex_unlock(&z->mu);
    return st;
}

/* RFC 27 (ZAP): version, request id, domain, address, identity, mechanism,
   credentials -> version, request id, status, text, user id, metadata. The
   domain says which ROUTER asks: "vtrain" (members) or "vtrain-guest". */
static void *vt__bt_zap_main(void *arg) {
    vt__bt_zmq *z = (vt__bt_zmq *)arg;
    void *s = z->zap_ready;
    for (;;) {
        unsigned char fr[8][256];
        size_t fn[8];
        int k = 0, more = 1;
        char user[80];
        const char *why = "not CURVE", *st = "400";
        while (more) {
            unsigned char junk[256];
            size_t jn;
            if (vt__bt_zap_frame(s, k < 8 ? fr[k] : junk, 256, k < 8 ? &fn[k] : &jn, &more) < 0) { zmq_close(s); return NULL; }
            k++;
        }
        /* CURVE: frame 5 is "CURVE", frame 6 the client's 32-byte key */
        if (k >= 7 && fn[5] == 5 && !memcmp(fr[5], "CURVE", 5) && fn[6] == 32)
            st = vt__bt_zap_judge(z, fr[6], fn[2] == 12 && !memcmp(fr[2], "vtrain-guest", 12), user, &why);
        zmq_send(s, "1.0", 3, ZMQ_SNDMORE);
        zmq_send(s, k >= 2 ? fr[1] : (const unsigned char *)"", k >= 2 ? fn[1] : 0, ZMQ_SNDMORE);
        zmq_send(s, st, 3, ZMQ_SNDMORE);
        zmq_send(s, why, strlen(why), ZMQ_SNDMORE);
        zmq_send(s, st[0] == '2' ? user : "", st[0] == '2' ? strlen(user) : 0, ZMQ_SNDMORE);
        zmq_send(s, "", 0, 0);
    }
}

/* who sent m, on the connection with routing id rid, of the members' ROUTER (guest 0) or the guest
   ROUTER (guest 1): its rank, or -1 (refused: a banned slot, a guest that claims no open slot, a slot
   admitted with another key, or on the guest ROUTER a message over guest_max) */
static int vt__bt_zmq_who(vt__bt_zmq *z, zmq_msg_t *m, const unsigned char *rid, size_t rn, int guest) {
    const char *user = zmq_msg_gets(m, "User-Id");
    unsigned char k[32];
    int r, i;
    if (!user || (guest && zmq_msg_size(m) > z->guest_max + 8)) return -1;
    if (user[0] != 'g') { /* a roster key, checked at the handshake */
        char *e = NULL;
        long v = strtol(user, &e, 10);
        if (!e || *e || v < 0 || v >= z->size || v == z->rank) return -1;
        r = (int)v;
        pthread_mutex_lock(&z->mu);
        if (!z->alive[r]) r = -1;
        pthread_mutex_unlock(&z->mu);
        return r;
    }
    if (!guest || strlen(user) != 65 || rn != sizeof z->rid || rid[0] != 'J') return -1; /* the members' ROUTER admits no guest */
    for (i = 0; i < 32; i++) {
        unsigned int b;
        if (sscanf(user + 1 + 2 * i, "%2x", &b) != 1) return -1;
        k[i] = (unsigned char)b;
    }
    r = (int)vt__bt_g32(rid + 1);
    if (r < 0 || r >= z->size || r == z->rank) return -1;
    pthread_mutex_lock(&z->mu);
    if (!z->alive[r]) r = -1;
    else if (z->keyed[r]) { if (memcmp(k, z->cpk + 32 * (size_t)r, 32)) r = -1; } /* admitted (or a member): only its key */
    else {
        vt__bt_zguest *g = vt__bt_zmq_guest(z, k, 0);
        double now = vt_net_now();
        if (g) { /* top the bucket up */
            g->tokens += (now - g->filled) * VT__BT_ZRATE;
            if (g->tokens > VT__BT_ZBURST) g->tokens = VT__BT_ZBURST;
            g->filled = now;
        }
        if (!g || g->tokens < 1) r = -1;
        else {
            g->tokens -= 1;
            g->seen = now;
            memcpy(z->grid + 13 * (size_t)r, rid, 13); /* a reply to slot r goes to this connection */
            z->grid_ok[r] = 1;
        }
    }
    pthread_mutex_unlock(&z->mu);
    return r;
}

/* the frame on the wire: tag (8 bytes), payload; 0, or -1 out of memory */
static int vt__bt_zmq_frame(zmq_msg_t *m, uint64_t tag, const void *p, size_t n) {
    if (zmq_msg_init_size(m, n + 8) != 0) return -1;
    vt__bt_p64((unsigned char *)zmq_msg_data(m), tag);
    if (n) memcpy((unsigned char *)zmq_msg_data(m) + 8, p, n);
    return 0;
}

/* a message to open slot `to` (no key, no DEALER): a reply, through the guest ROUTER, to the guest
   connection that last spoke for it, at most guest_max bytes (a step statement); dropped if there is
   none (an open slot is reached only by answering it) */
static int vt__bt_zmq_reply(vt_net *t, int to, uint64_t tag, const void *p, size_t n) {
    vt__bt_zmq *z = (vt__bt_zmq *)t->impl;
    unsigned char rid[13];
    zmq_msg_t m;
    int ok;
    pthread_mutex_lock(&z->mu);
    ok = z->grouter && z->grid_ok[to] && !z->keyed[to] && z->alive[to];
    if (ok) memcpy(rid, z->grid + 13 * (size_t)to, 13);
    pthread_mutex_unlock(&z->mu);
    if (!ok || n > z->guest_max) { t->stats.dropped++; return 0; }
    if (vt__bt_zmq_frame(&m, tag, p, n) < 0) return -1;
    if (zmq_send(z->grouter, rid, sizeof rid, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 || zmq_msg_send(&m, z->grouter, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&m);
        t->stats.dropped++;
        return 0;
    }
    t->stats.sent_msgs++;
    t->stats.sent_bytes += (int64_t)n;
    return 0;
}

/* the DEALER a message to peer `to` goes out on, and the largest it takes: the one to its ROUTER
   (max_msg), or a newcomer's to its guest ROUTER (guest_max); NULL for an open slot (a reply) */
static void *vt__bt_zmq_out(const vt__bt_zmq *z, int to, size_t *lim) {
    *lim = z->dealer[to] ? z->max_msg : z->guest_max;
    return z->dealer[to] ? z->dealer[to] : z->gdealer[to];
}

/* queue a frame of n payload bytes for peer `to` without waiting: the frame
   is given away (sent or closed) */
static void vt__bt_zmq_put(vt_net *t, int to, zmq_msg_t *m, size_t n) {
    size_t lim;
    void *s = vt__bt_zmq_out((vt__bt_zmq *)t->impl, to, &lim);
    if (n > lim || !s) { zmq_msg_close(m); t->stats.dropped++; return; } /* too large, or nobody to reach */
    if (zmq_msg_send(m, s, ZMQ_DONTWAIT) < 0) { zmq_msg_close(m); t->stats.dropped++; return; }
    t->stats.sent_msgs++;
    t->stats.sent_bytes += (int64_t)n;
}

static int vt__bt_zmq_send(vt_net *t, int to, uint64_t tag, const void *p, size_t n) {
    zmq_msg_t m;
    size_t lim;
    if (to < 0 || to >= t->size || to == t->rank) return -1;
    if (!vt__bt_zmq_out((vt__bt_zmq *)t->impl, to, &lim)) return vt__bt_zmq_reply(t, to, tag, p, n);
    if (vt__bt_zmq_frame(&m, tag, p, n) < 0) return -1;
    vt__bt_zmq_put(t, to, &m, n);
    return 0;
}

/* One frame, built once and shared by every recipient (zmq_msg_copy counts
   references to one buffer, it copies nothing; CURVE encrypts each link's
   copy into a message of its own and leaves the shared one as it is): a
   broadcast of an envelope costs one allocation and one copy, not 15. */
static int vt__bt_zmq_bcast(vt_net *t, uint64_t tag, const void *p, size_t n, const unsigned char *to) {
    zmq_msg_t m0;
    size_t lim;
    int i, rc = 0;
    if (vt__bt_zmq_frame(&m0, tag, p, n) < 0) return -1;
    for (i = 0; i < t->size; i++) {
        zmq_msg_t m;
        if (i == t->rank || (to && !to[i])) continue;
        if (!vt__bt_zmq_out((vt__bt_zmq *)t->impl, i, &lim)) { if (vt__bt_zmq_reply(t, i, tag, p, n) < 0) rc = -1; continue; } /* an open slot */
        zmq_msg_init(&m);
        if (zmq_msg_copy(&m, &m0) != 0) { zmq_msg_close(&m); rc = -1; continue; }
        vt__bt_zmq_put(t, i, &m, n);
    }
    zmq_msg_close(&m0);
    return rc;
}

/* A newcomer also reads its DEALERs to the guest ROUTERs: a member answers an open slot (a step
   statement) through its guest ROUTER, to the connection the question came on, so the answer comes
   back on the newcomer's DEALER to that member, whose key was pinned there: it is from that member.
   One frame [tag][payload], at most guest_max bytes (ZMQ_MAXMSGSIZE of the DEALER). 1 with the
   message, 0 if there was none. */
static int vt__bt_zmq_dealer_take(vt_net *t, int i, int *from, uint64_t *tag, unsigned char **p, size_t *n) {
    vt__bt_zmq *z = (vt__bt_zmq *)t->impl;
    zmq_msg_t m;
    int more;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, z->gdealer[i], ZMQ_DONTWAIT) < 0) { zmq_msg_close(&m); return 0; }
    more = zmq_msg_more(&m);
    while (more) { /* one frame only: drain the rest */
        zmq_msg_t x;
        zmq_msg_init(&x);
        if (zmq_msg_recv(&x, z->gdealer[i], 0) < 0) { zmq_msg_close(&x); break; }
        more = zmq_msg_more(&x);
        zmq_msg_close(&x);
        zmq_msg_close(&m);
        zmq_msg_init(&m); /* the message is refused: an empty one */
    }
    if (zmq_msg_size(&m) < 8 || zmq_msg_size(&m) > z->guest_max + 8) { zmq_msg_close(&m); t->stats.garbage++; return 0; }
    *from = i;
    *tag = vt__bt_g64((const unsigned char *)zmq_msg_data(&m));
    *n = zmq_msg_size(&m) - 8;
    *p = (unsigned char *)VT_MALLOC(*n ? *n : 1, NULL);
    if (!*p) { zmq_msg_close(&m); t->stats.dropped++; return 0; }
    if (*n) memcpy(*p, (const unsigned char *)zmq_msg_data(&m) + 8, *n);
    zmq_msg_close(&m);
    t->stats.recv_msgs++;
    t->stats.recv_bytes += (int64_t)*n;
    return 1;
}

/* One message from ROUTER s (the members', guest 0, or the guest ROUTER, guest 1), without waiting:
   1 taken (*from, *tag, *p, *n), 0 none queued (the receive took in the socket's pending commands),
   2 one not taken (garbage, a refused sender, a goodbye), -1 the context is closing, -2 interrupted */
static int vt__bt_zmq_take(vt_net *t, void *s, int guest, int *from, uint64_t *tag, unsigned char **p, size_t *n) {
    vt__bt_zmq *z = (vt__bt_zmq *)t->impl;
    zmq_msg_t id, m;
    int frames = 2, ok, more;
    zmq_msg_init(&id);
    if (zmq_msg_recv(&id, s, ZMQ_DONTWAIT) < 0) {
        int e = zmq_errno();
        zmq_msg_close(&id);
        return e == EAGAIN ? 0 : e == EINTR ? -2 : -1; /* ETERM: the context is closing */
    }
    /* [routing id][payload]; anything else is garbage */
    if (!zmq_msg_more(&id)) { zmq_msg_close(&id); t->stats.garbage++; return 2; }
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, s, 0) < 0) { zmq_msg_close(&m); zmq_msg_close(&id); return 2; }
    more = zmq_msg_more(&m);
    while (more) { /* a peer sent several frames: drain them */
        zmq_msg_t x;
        zmq_msg_init(&x);
        if (zmq_msg_recv(&x, s, 0) < 0) { zmq_msg_close(&x); break; }
        more = zmq_msg_more(&x);
        zmq_msg_close(&x);
        frames++;
    }
    ok = frames == 2 && zmq_msg_size(&m) >= 8 && (*from = vt__bt_zmq_who(z, &m, (const unsigned char *)zmq_msg_data(&id), zmq_msg_size(&id), guest)) >= 0;
    zmq_msg_close(&id);
    if (!ok) { t->stats.garbage++; zmq_msg_close(&m); return 2; }
    *tag = vt__bt_g64((const unsigned char *)zmq_msg_data(&m));
    *n = zmq_msg_size(&m) - 8;
    *p = (unsigned char *)VT_MALLOC(*n ? *n : 1, NULL);
    if (!*p) { zmq_msg_close(&m); t->stats.dropped++; return 2; }
    if (*n) memcpy(*p, (const unsigned char *)zmq_msg_data(&m) + 8, *n);
    zmq_msg_close(&m);
    if (*tag == VT__BT_BYE) { VT_FREE(*p, NULL); *p = NULL; return 2; }
    t->stats.recv_msgs++;
    t->stats.recv_bytes += (int64_t)*n;
    return 1;
}

static int vt__bt_zmq_recv(vt_net *t, int *from, uint64_t *tag, unsigned char **p, size_t *n, double deadline, int want) {
    vt__bt_zmq *z = (vt__bt_zmq *)t->impl;
    (void)want;
    *p = NULL;
    *n = 0;
    for (;;) {
        int r;
        /* What is queued is taken without a system call: a non-blocking
           receive first, which also takes in the socket's pending commands
           (a message that came while we worked), and a wait only when
           nothing is queued. The wait is one poll(2) on the sockets' ZMQ_FDs,
           which the I/O thread signals when a socket has news; after a
           receive that found nothing and took in every command, news can
           only come through that signal. zmq_poll, before, cost a poll per
           message and four when idle (a first pass, ZMQ_EVENTS twice): at a
           busy step's end most messages wait queued, and those polls were
           the larger part of a TCP peer's system calls. The members' ROUTER
           is read first: a guest's flood waits behind the members. The
           deadline is looked at when nothing is queued, and after each
           message that is not taken (garbage, a refused sender, a goodbye):
           a stream of garbage must not hold the caller past it; a message
           that is taken and queued when it passes still comes in. A
           newcomer also reads its DEALERs (answers to its step queries), so
           it waits in zmq_poll over all of them and its ROUTERs. */
        if (z->join) {
            zmq_pollitem_t *it = z->items;
            double left = deadline - vt_net_now();
            long ms;
            int rc, k = 0, i;
            it[k].socket = z->router; it[k].fd = 0; it[k].events = ZMQ_POLLIN; it[k].revents = 0; k++;
            if (z->grouter) { it[k].socket = z->grouter; it[k].fd = 0; it[k].events = ZMQ_POLLIN; it[k].revents = 0; k++; }
            for (i = 0; i < z->size; i++)
                if (z->gdealer[i]) { it[k].socket = z->gdealer[i]; it[k].fd = 0; it[k].events = ZMQ_POLLIN; it[k].revents = 0; k++; }
            ms = left <= 0 ? 0 : (long)(left * 1e3) + 1;
            if (ms > 3600000L) ms = 3600000L;
            rc = zmq_poll(it, k, ms);
            if (rc < 0) return zmq_errno() == EINTR ? 0 : -1;
            if (rc == 0) { if (vt_net_now() >= deadline) return 0; continue; }
            for (i = 0; i < z->size; i++)
                if (z->gdealer[i] && vt__bt_zmq_dealer_take(t, i, from, tag, p, n)) return 1;
        }
        r = vt__bt_zmq_take(t, z->router, 0, from, tag, p, n);
        if (r == 0 && z->grouter) r = vt__bt_zmq_take(t, z->grouter, 1, from, tag, p, n);
        if (r == 1) return 1;
        if (r == -1) return -1;
        if (r == -2 || (r == 2 && vt_net_now() >= deadline)) return 0;
        if (r == 0 && !z->join) { /* nothing queued: wait for news */
            struct pollfd pf[2];
            double left = deadline - vt_net_now();
            long ms;
            int rc;
            if (left <= 0) return 0;
            ms = (long)(left * 1e3) + 1;
            if (ms > 3600000L) ms = 3600000L;
            pf[0].fd = z->rfd; pf[0].events = POLLIN; pf[0].revents = 0;
            pf[1].fd = z->gfd; pf[1].events = POLLIN; pf[1].revents = 0;
            rc = poll(pf, z->grouter ? 2 : 1, (int)ms);
            if (rc < 0 && errno != EINTR) return -1;
            if (rc <= 0 && vt_net_now() >= deadline) return 0;
        } else if (r == 0 && vt_net_now() >= deadline) return 0; /* a newcomer's DEALER had garbage only: zmq_poll above waits */
    }
}

static int vt__bt_zmq_opt(void *s, int opt, int v) { return zmq_setsockopt(s, opt, &v, sizeof v); }

/* the DEALER to peer i's ROUTER (guest 0), or a newcomer's to its guest ROUTER (guest 1), its key
   pinned; nothing but CURVE's commands and step statements comes back on either: at most guest_max
   bytes, VT__BT_ZGQ queued. A newcomer's to a guest ROUTER carries its claim, and backs off to one
   attempt in 2 s when refused (every 100 ms would cost a member a handshake each time). One made
   after the start (late: to an admitted newcomer, or a newcomer's own once admitted) may find the
   other side not yet aware of the admission, which puts the handshake off (ZAP 300); libzmq 4.3 then
   reconnects, unless the client read the verdict before the server closed, and then it waits out
   the handshake interval (30 s by default): 2 s here, so that what was queued goes out soon after
   the other side admits the key. 0 with errno */
static int vt__bt_zmq_dealer(vt__bt_zmq *z, int i, int guest, int late) {
    void *s = (guest ? z->gdealer : z->dealer)[i] = zmq_socket(z->ctx, ZMQ_DEALER);
    int64_t maxin = (int64_t)z->guest_max + 8 + VT__BT_ZWIRE;
    return s && !zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, z->cpk + 32 * (size_t)i, 32) && !zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, z->my_cpk, 32) &&
           !zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, z->my_csk, 32) && !vt__bt_zmq_opt(s, ZMQ_SNDHWM, z->queue) && !vt__bt_zmq_opt(s, ZMQ_LINGER, 0) &&
           !zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxin, sizeof maxin) && !vt__bt_zmq_opt(s, ZMQ_RCVHWM, VT__BT_ZGQ) &&
           (!guest || (!zmq_setsockopt(s, ZMQ_ROUTING_ID, z->rid, sizeof z->rid) && !vt__bt_zmq_opt(s, ZMQ_RECONNECT_IVL_MAX, 2000))) &&
           (!late || !vt__bt_zmq_opt(s, ZMQ_HANDSHAKE_IVL, 2000)) && !zmq_connect(s, (guest ? z->gep : z->ep)[i]);
}

/* vt_net.roster: keys admitted since the last call get their slot (and a
   DEALER to their endpoint); banned slots are refused from now on. A
   newcomer whose own key the view admits is a member from now on: it
   speaks on the members' ROUTERs (a member that has not admitted it yet
   puts its handshake off: ZAP 300) and no longer on their guest ROUTERs. */
static void vt__bt_zmq_roster(vt_net *t, const unsigned char *roster, const unsigned char *alive) {
    vt__bt_zmq *z = (vt__bt_zmq *)t->impl;
    unsigned char c[32];
    int i;
    const unsigned char *mine = roster + 32 * (size_t)z->rank;
    if (z->join && !vt__bt_zero32(mine) && crypto_sign_ed25519_pk_to_curve25519(c, mine) == 0 && !memcmp(c, z->my_cpk, 32)) {
        z->join = 0;
        for (i = 0; i < z->size; i++) if (z->gdealer[i]) { zmq_close(z->gdealer[i]); z->gdealer[i] = NULL; }
    }
    for (i = 0; i < z->size; i++) {
        int reach;
        if (i == z->rank) continue;
        pthread_mutex_lock(&z->mu);
        if (!z->keyed[i] && !vt__bt_zero32(roster + 32 * (size_t)i)) {
            z->keyed[i] = 1; /* an admitted key that has no Curve25519 form is kept as unreachable: its slot falls silent */
            if (crypto_sign_ed25519_pk_to_curve25519(z->cpk + 32 * (size_t)i, roster + 32 * (size_t)i) != 0) z->alive[i] = 0;
        }
        if (!alive[i]) z->alive[i] = 0;
        reach = !z->join && z->keyed[i] && z->alive[i] && !z->dealer[i];
        pthread_mutex_unlock(&z->mu);
        if (reach && !vt__bt_zmq_dealer(z, i, 0, 1)) t->stats.dropped++;
    }
}

/* what is still queued for the others goes out for up to 2 s (a dead peer's
   queue is given up then): a peer that ends its last step first does not
   take its last messages with it */
static void vt__bt_zmq_destroy(vt_net *t) {
    vt__bt_zmq *z = (vt__bt_zmq *)t->impl;
    int i, linger = 2000;
    if (z->router) zmq_close(z->router);
    if (z->grouter) zmq_close(z->grouter);
    for (i = 0; z->dealer && i < t->size; i++)
        if (z->dealer[i]) { zmq_setsockopt(z->dealer[i], ZMQ_LINGER, &linger, sizeof linger); zmq_close(z->dealer[i]); }
    for (i = 0; z->gdealer && i < t->size; i++)
        if (z->gdealer[i]) zmq_close(z->gdealer[i]);
    if (z->ctx) zmq_ctx_shutdown(z->ctx);
    if (z->zap_up) pthread_join(z->zap, NULL);
    else if (z->zap_ready) zmq_close(z->zap_ready);
    if (z->ctx) zmq_ctx_term(z->ctx);
    if (z->mu_up) pthread_mutex_destroy(&z->mu);
    sodium_memzero(z->my_csk, sizeof z->my_csk);
    for (i = 0; z->ep && i < t->size; i++) VT_FREE(z->ep[i], NULL);
    for (i = 0; z->gep && i < t->size; i++) VT_FREE(z->gep[i], NULL);
    VT_FREE(z->ep, NULL);
    VT_FREE(z->gep, NULL);
    VT_FREE(z->dealer, NULL);
    VT_FREE(z->gdealer, NULL);
    VT_FREE(z->cpk, NULL);
    VT_FREE(z->keyed, NULL);
    VT_FREE(z->alive, NULL);
    VT_FREE(z->guest, NULL);
    VT_FREE(z->grid, NULL);
    VT_FREE(z->grid_ok, NULL);
    VT_FREE(z->items, NULL);
    VT_FREE(z, NULL);
    VT_FREE(t, NULL);
}

/* a copy of endpoint s ("" for NULL); NULL out of memory */
static char *vt__bt_zmq_strdup(const char *s) {
    size_t l = s ? strlen(s) : 0;
    char *c = (char *)VT_MALLOC(l + 1, NULL);
    if (!c) return NULL;
    if (l) memcpy(c, s, l);
    c[l] = 0;
    return c;
}

/* a ROUTER (CURVE server) bound at ep, its ZAP domain, its limits, its ZMQ_FD; NULL with errno */
static void *vt__bt_zmq_bind(vt__bt_zmq *z, const char *ep, const char *domain, int64_t maxin, int hwm, int *fd) {
    size_t fdn = sizeof(int);
    void *s = zmq_socket(z->ctx, ZMQ_ROUTER);
    if (s && !vt__bt_zmq_opt(s, ZMQ_CURVE_SERVER, 1) && !zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, z->my_csk, 32) &&
        !zmq_setsockopt(s, ZMQ_ZAP_DOMAIN, domain, strlen(domain)) && !zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxin, sizeof maxin) &&
        !vt__bt_zmq_opt(s, ZMQ_RCVHWM, hwm) && !vt__bt_zmq_opt(s, ZMQ_SNDHWM, hwm) && !vt__bt_zmq_opt(s, ZMQ_LINGER, 0) &&
        !zmq_bind(s, ep) && !zmq_getsockopt(s, ZMQ_FD, fd, &fdn))
        return s;
    if (s) { int e = zmq_errno(); zmq_close(s); errno = e; }
    return NULL;
}

VTDEF vt_net *vt_net_zmq_create(const vt_net_zmq_desc *d) {
    vt_net *t;
    vt__bt_zmq *z;
    int i, bad = 0, nomem = 0;
    const char *gme;
    if (!d || d->size < 1 || d->size > 4096 || d->rank < 0 || d->rank >= d->size || !d->endpoints || !d->roster || !d->key) {
        vt__tls_fail(VT_ERR_ARG, "vt_net_zmq_create: need rank, size, endpoints, roster and key");
        return NULL;
    }
    if (!vt__bt_sodium()) { vt__tls_fail(VT_ERR_BACKEND, "vt_net_zmq_create: libsodium did not initialise"); return NULL; }
    if (!d->join && memcmp(d->key->pk, d->roster + 32 * (size_t)d->rank, 32)) {
        vt__tls_fail(VT_ERR_ARG, "vt_net_zmq_create: this key is not roster[%d] (a newcomer sets join)", d->rank);
        return NULL;
    }
    if (d->join && !vt__bt_zero32(d->roster + 32 * (size_t)d->rank)) {
        vt__tls_fail(VT_ERR_ARG, "vt_net_zmq_create: a newcomer (join) needs an open slot: roster[%d] must be 32 zero bytes", d->rank);
        return NULL;
    }
    if (d->join && !d->guest_endpoints) {
        vt__tls_fail(VT_ERR_ARG, "vt_net_zmq_create: a newcomer (join) needs guest_endpoints: until admitted it speaks on the members' guest endpoints");
        return NULL;
    }
    if (!zmq_has("curve")) { vt__tls_fail(VT_ERR_BACKEND, "vt_net_zmq_create: this libzmq has no CURVE (build it with libsodium)"); return NULL; }
    gme = d->guest_endpoints ? d->guest_endpoints[d->rank] : NULL;
    t = (vt_net *)VT_MALLOC(sizeof(vt_net), NULL);
    z = (vt__bt_zmq *)VT_MALLOC(sizeof(vt__bt_zmq), NULL);
    if (!t || !z) { VT_FREE(t, NULL); VT_FREE(z, NULL); vt__tls_fail(VT_ERR_NOMEM, "vt_net_zmq_create: out of memory"); return NULL; }
    memset(t, 0, sizeof *t);
    memset(z, 0, sizeof *z);
    t->rank = d->rank; t->size = d->size; t->impl = z;
    t->send = vt__bt_zmq_send; t->bcast = vt__bt_zmq_bcast; t->recv = vt__bt_zmq_recv; t->destroy = vt__bt_zmq_destroy;
    t->roster = vt__bt_zmq_roster;
    t->authenticated = 1; /* a member's key proved at the handshake (vt__bt_zap_judge, vt__bt_zmq_who) */
    z->size = d->size;
    z->rank = d->rank;
    z->join = d->join;
    z->max_msg = d->max_msg ? d->max_msg : ((size_t)64 << 20);
    z->guest_max = d->guest_max ? d->guest_max : VT__BT_ZGMAX;
    z->queue = d->queue > 0 ? d->queue : 1000;
    z->cap_guest = VT__MIN(VT__BT_ZGUESTS * d->size, 256);
    z->cpk = (unsigned char *)VT_MALLOC(32 * (size_t)d->size, NULL);
    z->keyed = (unsigned char *)VT_MALLOC((size_t)d->size, NULL);
    z->alive = (unsigned char *)VT_MALLOC((size_t)d->size, NULL);
    z->guest = (vt__bt_zguest *)VT_MALLOC(sizeof(vt__bt_zguest) * (size_t)z->cap_guest, NULL);
    z->dealer = (void **)VT_MALLOC(sizeof(void *) * (size_t)d->size, NULL);
    z->gdealer = (void **)VT_MALLOC(sizeof(void *) * (size_t)d->size, NULL);
    z->ep = (char **)VT_MALLOC(sizeof(char *) * (size_t)d->size, NULL);
    z->gep = (char **)VT_MALLOC(sizeof(char *) * (size_t)d->size, NULL);
    z->grid = (unsigned char *)VT_MALLOC(13 * (size_t)d->size, NULL);
    z->grid_ok = (unsigned char *)VT_MALLOC((size_t)d->size, NULL);
    z->items = (zmq_pollitem_t *)VT_MALLOC(sizeof(zmq_pollitem_t) * ((size_t)d->size + 2), NULL);
    if (!z->cpk || !z->keyed || !z->alive || !z->guest || !z->dealer || !z->gdealer || !z->ep || !z->gep || !z->grid || !z->grid_ok || !z->items) {
        vt__bt_zmq_destroy(t);
        vt__tls_fail(VT_ERR_NOMEM, "vt_net_zmq_create: out of memory");
        return NULL;
    }
    memset(z->dealer, 0, sizeof(void *) * (size_t)d->size);
    memset(z->gdealer, 0, sizeof(void *) * (size_t)d->size);
    memset(z->ep, 0, sizeof(char *) * (size_t)d->size);
    memset(z->gep, 0, sizeof(char *) * (size_t)d->size);
    memset(z->cpk, 0, 32 * (size_t)d->size);
    memset(z->alive, 1, (size_t)d->size);
    memset(z->grid_ok, 0, (size_t)d->size);
    for (i = 0; i < d->size; i++) {
        z->ep[i] = vt__bt_zmq_strdup(d->endpoints[i]);
        z->gep[i] = vt__bt_zmq_strdup(d->guest_endpoints ? d->guest_endpoints[i] : NULL);
        if (!z->ep[i] || !z->gep[i]) { nomem = 1; break; }
        z->keyed[i] = !vt__bt_zero32(d->roster + 32 * (size_t)i) || i == d->rank;
        if (i == d->rank) { if (crypto_sign_ed25519_pk_to_curve25519(z->cpk + 32 * (size_t)i, d->key->pk) != 0) bad = 1; }
        else if (z->keyed[i] && crypto_sign_ed25519_pk_to_curve25519(z->cpk + 32 * (size_t)i, d->roster + 32 * (size_t)i) != 0) bad = 1;
    }
    if (nomem) { vt__bt_zmq_destroy(t); vt__tls_fail(VT_ERR_NOMEM, "vt_net_zmq_create: out of memory"); return NULL; }
    if (bad || crypto_sign_ed25519_sk_to_curve25519(z->my_csk, d->key->sk) != 0) {
        vt__bt_zmq_destroy(t);
        vt__tls_fail(VT_ERR_ARG, "vt_net_zmq_create: a roster key is not a valid Ed25519 public key");
        return NULL;
    }
    memcpy(z->my_cpk, z->cpk + 32 * (size_t)d->rank, 32);
    z->rid[0] = 'J';
    vt__bt_p32(z->rid + 1, (uint32_t)d->rank);
    randombytes_buf(z->rid + 5, 8); /* two connections of one key never share a routing id */
    if (pthread_mutex_init(&z->mu, NULL) != 0) { vt__bt_zmq_destroy(t); vt__tls_fail(VT_ERR_BACKEND, "vt_net_zmq_create: no mutex"); return NULL; }
    z->mu_up = 1;
    z->ctx = zmq_ctx_new();
    if (!z->ctx) { vt__bt_zmq_destroy(t); vt__tls_fail(VT_ERR_BACKEND, "vt_net_zmq_create: zmq_ctx_new failed"); return NULL; }
    /* the ZAP handler first: every CURVE handshake asks it */
    z->zap_ready = zmq_socket(z->ctx, ZMQ_REP);
    if (!z->zap_ready || zmq_bind(z->zap_ready, "inproc://zeromq.zap.01") != 0 ||
        pthread_create(&z->zap, NULL, vt__bt_zap_main, z) != 0) {
        vt__bt_zmq_destroy(t);
        vt__tls_fail(VT_ERR_BACKEND, "vt_net_zmq_create: the ZAP handler did not start (%s)", zmq_strerror(zmq_errno()));
        return NULL;
    }
    z->zap_up = 1;
    /* the members' ROUTER, and the guests' (only with a guest endpoint): the same key, their own limits */
    if (!(z->router = vt__bt_zmq_bind(z, d->endpoints[d->rank], "vtrain", (int64_t)z->max_msg + 8 + VT__BT_ZWIRE, z->queue, &z->rfd)) ||
        (gme && *gme && !(z->grouter = vt__bt_zmq_bind(z, gme, "vtrain-guest", (int64_t)z->guest_max + 8 + VT__BT_ZWIRE, VT__BT_ZGQ, &z->gfd)))) {
        char why[160];
        const char *ep = z->router ? gme : d->endpoints[d->rank];
        snprintf(why, sizeof why, "%s", zmq_strerror(zmq_errno()));
        vt__bt_zmq_destroy(t);
        vt__tls_fail(VT_ERR_BACKEND, "vt_net_zmq_create: cannot bind %s: %s", ep, why);
        return NULL;
    }
    for (i = 0; i < d->size; i++) {
        if (i == d->rank || !z->keyed[i]) continue; /* an open slot: connected once a key is admitted there */
        if (d->join && !*z->gep[i]) continue;      /* a newcomer reaches only members with a guest endpoint */
        if (!vt__bt_zmq_dealer(z, i, d->join, 0)) {
            char why[160];
            snprintf(why, sizeof why, "%s", zmq_strerror(zmq_errno()));
            vt__bt_zmq_destroy(t);
            vt__tls_fail(VT_ERR_BACKEND, "vt_net_zmq_create: cannot connect to peer %d at %s: %s", i, d->join ? z->gep[i] : z->ep[i], why);
            return NULL;
        }
    }
    return t;
}
#endif /* VTRAIN_ZMQ */
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
   and v += st; then s2 = |st|^2, summed as vt__bt_dist2 sums (lane j % 4,
   (l0 + l1) + (l2 + l3)), in the same pass. */
static void vt__cc_move(const float *const *x, const double *c, int nr, double *v, int64_t L, double *s2) {
    double qs[4] = {0, 0, 0, 0}, nv = (double)nr;
    int i;
    int64_t j = 0;
#ifdef VT__AVX2
    {
        __m256d S2 = _mm256_setzero_pd(), N = _mm256_set1_pd(nv);
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
            t = _mm256_div_pd(a0, N); v0 = _mm256_add_pd(v0, t); S2 = _mm256_add_pd(S2, _mm256_mul_pd(t, t));
            t = _mm256_div_pd(a1, N); v1 = _mm256_add_pd(v1, t); S2 = _mm256_add_pd(S2, _mm256_mul_pd(t, t));
            t = _mm256_div_pd(a2, N); v2_ = _mm256_add_pd(v2_, t); S2 = _mm256_add_pd(S2, _mm256_mul_pd(t, t));
            t = _mm256_div_pd(a3, N); v3 = _mm256_add_pd(v3, t); S2 = _mm256_add_pd(S2, _mm256_mul_pd(t, t));
            _mm256_storeu_pd(v + j, v0); _mm256_storeu_pd(v + j + 4, v1); _mm256_storeu_pd(v + j + 8, v2_); _mm256_storeu_pd(v + j + 12, v3);
        }
        _mm256_storeu_pd(qs, S2);
    }
#endif
    for (; j < L; j++) {
        double acc = 0, st;
        for (i = 0; i < nr; i++) acc += c[i] * ((double)x[i][j] - v[j]);
        st = acc / nv;
        v[j] += st;
        qs[j & 3] += st * st;
    }
    *s2 = (qs[0] + qs[1]) + (qs[2] + qs[3]);
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
            double s2;
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
            vt__cc_move(vr, c, nv, v, L, &s2);
            inf.iters = it + 1;
            inf.clipped = clipped;
            inf.last_step = sqrt(s2);
            if (inf.last_step <= eps * tau) break;
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
    a.victim = -1;
    a.exchange = 1;
    a.reach = -1;
    switch (k) {
    case VT_ATTACK_SIGN_FLIP: a.scale = -1000; break;
    case VT_ATTACK_RANDOM_DIRECTION: a.scale = 1000; break;
    case VT_ATTACK_IPM: a.scale = 0.1; break;
    case VT_ATTACK_ALIE: a.scale = 1.0; break;
    case VT_ATTACK_LYING_AGGREGATOR: a.scale = -10; break;
    case VT_ATTACK_SPIKE: a.scale = 1e6; break;
    case VT_ATTACK_FLOOD: a.scale = 200; break;
    case VT_ATTACK_NUDGE: a.scale = 1e-6; break;
    case VT_ATTACK_LYING_STEP: a.scale = 1000; break;
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
   >>mail  a peer's state, and its mailbox: every message the transport
   delivers is filed by (sender, tag) here before any phase looks at it.
   The mailbox keeps only this step's rounds from the current one on and the
   next step's first round (the window); anything else is dropped on
   arrival (older: late, counted against the sender; newer: flood). Each
   sender may have at most mb_cap_cnt messages and mb_cap_bytes bytes in the
   mailbox; more is dropped and counted (flood). The transport has already
   refused anything over its max_msg before allocating it. So whatever the
   others send, a peer holds at most N * mb_cap_bytes bytes of mail (and the
   transport's own per-sender bound in its queues).
   ========================================================================== */

#ifdef VT__BT_DEBUG
/* debugging only: lines into one buffer (vt__bt_dbg_buf, vt__bt_dbg_len) that a harness prints when it wants */
static char vt__bt_dbg_buf[1 << 26];
static size_t vt__bt_dbg_len;
static pthread_mutex_t vt__bt_dbg_mu = PTHREAD_MUTEX_INITIALIZER;
static void vt__bt_dbgf(const char *fmt, ...) {
    char ln[512];
    int k;
    va_list ap;
    va_start(ap, fmt);
    k = vsnprintf(ln, sizeof ln, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if (k > (int)sizeof ln - 1) k = (int)sizeof ln - 1;
    pthread_mutex_lock(&vt__bt_dbg_mu);
    if (vt__bt_dbg_len + (size_t)k < sizeof vt__bt_dbg_buf) { memcpy(vt__bt_dbg_buf + vt__bt_dbg_len, ln, (size_t)k); vt__bt_dbg_len += (size_t)k; }
    pthread_mutex_unlock(&vt__bt_dbg_mu);
}
#define VT__BT_DBG(a) vt__bt_dbgf a
#else
#define VT__BT_DBG(a) ((void)0)
#endif

enum { VT__V_OK = 0, VT__V_NOCHUNK, VT__V_BADCHUNK, VT__V_GRADIENT, VT__V_SCALARS };

/* the exchanges of a round (>>btard): a round schedules COMMIT .. FIN,
   each at the index of its kind, and adds FIN2, AUDIT, AEND after them when
   its agreed data asks for them */
enum { VT__K_COMMIT = 1, VT__K_PARTS, VT__K_AGG, VT__K_REVEAL, VT__K_SCALARS, VT__K_FIN, VT__K_FIN2, VT__K_AUDIT, VT__K_AEND };
#define VT__BT_XMAX 11   /* exchange indices 1..10 */
#define VT__BT_STEP_LEN 80 /* a step statement (>>peer: joining) */
#define VT__BT_NSC 4     /* scalars per part: <z1, g - a>, <z2, g - a>, |g - a|, |g| */

typedef struct vt__bt_mail {
    struct vt__bt_mail *next;
    uint64_t tag;
    size_t n;
    unsigned char *p;
} vt__bt_mail;

struct vt_btard_peer {
    vt_btard_cfg cfg;
    vt_btard_task task;
    vt_btard_attack atk;
    vt_net *net;
    int rank, N;
    vt_status status;
    char msg[512];
    unsigned char session[32];  /* H(configuration, roster): every signature is bound to this run */
    unsigned char *roster;      /* [N * 32] */
    vt_btard_key key;
    /* engine: M trains (weights, optimizer, log chunks), A replays others */
    vt_ctx *M, *A;
    void *mm, *ma;
    vt_optim *opt;
    int np;
    int64_t d;
    int64_t *poff;            /* [np + 1] parameter offsets in the flat vector */
    /* membership */
    unsigned char *alive;     /* [N] not banned */
    int64_t step;
    int rd;                   /* the round of this step now running */
    int n, me, f;             /* members this round, my position, f = (n - 1) / 2 */
    int *mem;                 /* [N] their ranks, ascending */
    int *pos;                 /* [N] rank -> position, -1 */
    unsigned char *memmask;   /* [N] by rank: a member this round (not me) */
    unsigned char *val;       /* [N] by rank: validator this step */
    int64_t L;                /* part length */
    /* joining (>>btard: JOINING), by rank; all of it part of the state a newcomer fetches */
    int64_t *joined;          /* [N] first step in the swarm (probation or not): 0 founders, -1 open slot */
    int64_t *prob_end;        /* [N] first step it aggregates (0 founders) */
    int64_t *ban_at;          /* [N] step of its ban, -1 */
    int *ban_why;             /* [N] its reason, -1 */
    int N0, f0;               /* founding members; the most of them that may lie ((N0 - 1) / 2) */
    int joining;              /* this peer is a newcomer not yet aggregating */
    int join_sent;
    vt__bt_buf *jreq;         /* [N] a member: the join request each open slot sent me (one) */
    vt__bt_buf *probe;        /* [2 N] a member: each newcomer's probation work, of step t at [2 r + t % 2] (this step's and the next) */
    unsigned char *jtries;    /* [N] signatures checked for it this step (bounded) */
    unsigned char *served;    /* [N] states sent to it this step */
    unsigned char *seen;      /* [N] scratch */
    unsigned char *qans;      /* [N] a member: step queries of this open slot answered this step (bounded) */
    int64_t *qst;             /* [N] a newcomer: each founder's latest signed step (-1: none) */
    unsigned char stmt[VT__BT_STEP_LEN]; /* a member: my signed step statement, of step stmt_step */
    int64_t stmt_step;
    int join_auto;            /* a newcomer that learns its join step from the founders (VT_BTARD_JOIN_AUTO) */
    double join_until;        /* a newcomer: when it gives up being admitted (join_wait from its first step) */
    vt__bt_buf blob;          /* the state newcomers fetch, of step blob_step */
    int64_t blob_step;
    unsigned char blob_dig[32];
    double t_step0;
    /* this step */
    int worker;
    float *g;                 /* [d] my gradient as committed */
    float *gt;                /* [d] my honest gradient */
    float *gp;                /* [d + N] the gradient padded to n*L */
    float *tmpf;              /* [d + N] scratch */
    vt__bt_buf chunk, chunk_prev, tmp;
    unsigned char chunk_sha[32];
    float *w_cur, *w_prev;    /* [d] x(t), x(t-1) */
    unsigned char wdig[32];
    int nvp, *vv, *vtg;       /* validation pairs (validator, target ranks) */
    int vcode, acc_done;
    /* the round's exchanges, by exchange x and position j */
    unsigned char **xenv;     /* [XMAX * N] envelope bytes held (mine too), NULL: none */
    size_t *xlen;             /* [XMAX * N] */
    unsigned char *xdig;      /* [XMAX * N * 32] my view: their SHA-256, zeros: none */
    int kind[VT__BT_XMAX];    /* what exchange x carries */
    int nx;                   /* exchanges scheduled in this round */
    vt__bt_buf evid;          /* evidence for my next envelope: proofs of equivocation, suspects */
    int nevid;
    size_t ev_sent[VT__BT_XMAX]; /* how much of evid went into my envelope of exchange x */
    unsigned char **pxenv;    /* [XMAX * N] the envelopes of the previous round (suspects may name them) */
    size_t *pxlen;
    int64_t pstep, xstep;     /* the step and round of the previous round's envelopes and of this one's (-1: none) */
    int pround, xround;
    /* the round's agreed data, by position */
    unsigned char *c_has;     /* [N] a worker */
    unsigned char *c_parts;   /* [N * N * 32] worker w's commitment to part k */
    unsigned char *c_chunk;   /* [N * 32] */
    unsigned char *c_mprng;   /* [N * 32] */
    int *c_vt, *c_vc;         /* [N] verdicts: target rank, code */
    unsigned char *a_inc;     /* [N * N] aggregator a's code for worker w: 1 used, 0 missing, 2 not finite */
    float *agg;               /* [d + N] the aggregates as broadcast */
    float *fin;               /* [d + N] the aggregates to apply (an audit may replace one) */
    float *rows;              /* [d + N] parts received as aggregator */
    unsigned char *recvd;     /* [N] parts received as aggregator, by worker position */
    unsigned char *r_x;       /* [N * 32] reveals */
    double *sc;               /* [N * N * NSC] worker w's scalars of part k */
    unsigned char *areq;      /* [N * N] worker w asks for an audit of part k */
    unsigned char *pend;      /* [N] worker sends its scalars late (FIN) */
    unsigned char *audit;     /* [N] part k is audited */
    unsigned char x_mine[32]; /* my MPRNG secret */
    unsigned char r[32];
    int reexec;               /* a gradient was re-executed: the next wait gets compute_timeout more */
    int mypend;
    /* the previous step, as it ended */
    int pv_ok, pv_n;
    int64_t pv_L, pv_step;
    int *pv_mem;
    unsigned char *pv_has, *pv_parts, *pv_chunk;
    double *pv_sc;
    float *pv_agg;
    unsigned char pv_r[32];
    /* the mailbox */
    vt__bt_mail **mb;         /* [N] per sender, in arrival order */
    int *mb_cnt;              /* [N] */
    size_t *mb_bytes;         /* [N] */
    size_t mb_total, mb_cap_bytes;
    int mb_cap_cnt;
    int64_t *late, *flood;    /* [N] dropped per sender since the last report */
    double wake;              /* a wait's left() may ask to be called again at this time (0: no) */
    /* asking for envelopes that others went on with (>>agree: gathering) */
    unsigned char *asked;     /* [N] by position: asked in this gather */
    int64_t *ans_at;          /* [N] by requester: the step and round (step * 256 + round) of ... */
    unsigned *ans_x;          /* [N] ... the exchanges whose asks I answered (a bit each): once each */
    /* the slow path (>>agree) */
    vt__bt_buf *ds_item;      /* [N * 2] relayed echoes accepted, per member */
    vt__bt_buf *ds_chain;     /* [N * 2] the relay links each came with */
    unsigned char *ds_idg;    /* [N * 2 * 32] their digests */
    unsigned char *ds_cnt;    /* [N] accepted per member (0..2) */
    unsigned char *ds_fresh;  /* [N * 2] accepted in the last relay round */
    unsigned char *ds_active; /* [N] still relaying */
    /* attacks */
    float *ring;              /* delayed: (delay + 1) * d */
    int64_t ring_len;
    double *est1, *est2;      /* ipm, alie: sums */
    /* book-keeping */
    vt_btard_event *ev;
    int nev, cev;
    vt_btard_stats st;
    double sched;             /* the current phase's deadline (see vt__bt_next) */
    double gdl[VT__BT_XMAX];  /* the deadline each gather of this round had, before it settled */
    double done_dl;           /* the last round that completed a step: its last gather's deadline, ... */
    int64_t done_step;        /* ... its step (-1: none) ... */
    int done_x;               /* ... and that exchange */
    int nbans;
    vt__bt_buf sb, sb2;       /* scratch for building messages */
    unsigned char *hs;        /* [N * 32] scratch hashes */
    uint64_t secret_ctr;
};

#define VT__XENV(p, x, j) ((p)->xenv[(size_t)(x) * (size_t)(p)->N + (size_t)(j)])
#define VT__XLEN(p, x, j) ((p)->xlen[(size_t)(x) * (size_t)(p)->N + (size_t)(j)])
#define VT__XDIG(p, x, j) ((p)->xdig + ((size_t)(x) * (size_t)(p)->N + (size_t)(j)) * 32)

static void vt__bt_fail(vt_btard_peer *p, vt_status s, const char *fmt, ...) VT__PRINTF(3, 4);
static void vt__bt_fail(vt_btard_peer *p, vt_status s, const char *fmt, ...) {
    va_list ap;
    if (p->status != VT_OK) return;
    va_start(ap, fmt);
    vsnprintf(p->msg, sizeof p->msg, fmt, ap);
    va_end(ap);
    p->status = s;
}

static void vt__bt_event(vt_btard_peer *p, vt_btard_event_kind k, int peer, int by, vt_btard_reason why, int64_t count) {
    vt_btard_event *e;
    if (p->nev == p->cev) {
        int c = p->cev ? 2 * p->cev : 64;
        vt_btard_event *q = (vt_btard_event *)VT_REALLOC(p->ev, sizeof(vt_btard_event) * (size_t)c, NULL);
        if (!q) return;
        p->ev = q;
        p->cev = c;
    }
    e = &p->ev[p->nev++];
    e->step = p->step; e->round = p->rd; e->kind = k; e->peer = peer; e->by = by; e->reason = why; e->count = count;
}

static void vt__bt_ban(vt_btard_peer *p, int rank, vt_btard_reason why, int by) {
    if (rank < 0 || rank >= p->N || !p->alive[rank]) return;
    VT__BT_DBG(("%.3f peer %d step %lld rd %d: bans %d (%d)\n", vt_net_now(), p->rank, (long long)p->step, p->rd, rank, (int)why));
    p->alive[rank] = 0;
    p->ban_at[rank] = p->step;
    p->ban_why[rank] = (int)why;
    p->nbans++;
    vt__bt_event(p, VT_EV_BAN, rank, by, why, 0);
}

/* membership at step t (>>btard: JOINING): a member aggregates; a
   newcomer in probation works, validated, and never aggregates; one that
   needs the state gets it at the start of the step */
static int vt__bt_member_at(const vt_btard_peer *p, int r, int64_t t) {
    return p->alive[r] && p->joined[r] >= 0 && t >= p->prob_end[r];
}
static int vt__bt_on_probation(const vt_btard_peer *p, int r, int64_t t) {
    return p->alive[r] && p->joined[r] >= 0 && t >= p->joined[r] && t < p->prob_end[r];
}
static int vt__bt_needs_state(const vt_btard_peer *p, int r, int64_t t) {
    return p->alive[r] && p->joined[r] > 0 && t >= p->joined[r] && t <= p->prob_end[r];
}
/* ban the member at position j */
static void vt__bt_banp(vt_btard_peer *p, int j, vt_btard_reason why, int by) {
    if (j >= 0 && j < p->n) vt__bt_ban(p, p->mem[j], why, by);
}

/* the public minibatch seed of peer `rank` at step `step` */
static uint64_t vt__bt_seed(const vt_btard_peer *p, int rank, int64_t step) {
    return vt_rng_u64(p->cfg.data_seed, (uint64_t)rank, (uint64_t)step);
}

static uint64_t vt__bt_tag(const vt_btard_peer *p, int phase, int sub) {
    return VT__BT_TAG(p->cfg.session, p->step, p->rd, phase, sub);
}

static int vt__bt_attacking(const vt_btard_peer *p, vt_btard_attack_kind k) {
    return p->atk.kind == k && vt_btard_attacking(&p->atk, p->step);
}

/* --- the mailbox ----------------------------------------------------------------- */

/* 0: in the window; -1: older (late); 1: newer or foreign (flood) */
static int vt__bt_window(const vt_btard_peer *p, uint64_t tag) {
    int64_t s = VT__BT_TSTEP(tag), cur = p->step & 0xFFFFFF;
    if (tag == VT__BT_BYE || VT__BT_TSESS(tag) != (p->cfg.session & 0xFF)) return 1;
    if (s == cur) return VT__BT_TROUND(tag) >= p->rd ? 0 : -1;
    if (s == ((cur + 1) & 0xFFFFFF)) return VT__BT_TROUND(tag) == 0 ? 0 : 1;
    return ((cur - s) & 0xFFFFFF) < 0x800000 ? -1 : 1;
}

static int vt__bt_intercept(vt_btard_peer *p, int from, uint64_t tag, unsigned char *m, size_t n); /* >>peer: joining */
static void vt__bt_mb_put(vt_btard_peer *p, int from, uint64_t tag, unsigned char *m, size_t n) {
    vt__bt_mail *x, **pp;
    int w;
    if (from < 0 || from >= p->N || from == p->rank) { VT_FREE(m, NULL); return; }
    if (vt__bt_intercept(p, from, tag, m, n)) return;
    w = vt__bt_window(p, tag);
    if (w || p->mb_cnt[from] >= p->mb_cap_cnt || p->mb_bytes[from] + n > p->mb_cap_bytes) {
        if (w < 0) p->late[from]++;
        else p->flood[from]++;
        VT_FREE(m, NULL);
        return;
    }
    x = (vt__bt_mail *)VT_MALLOC(sizeof(vt__bt_mail), NULL);
    if (!x) { VT_FREE(m, NULL); p->flood[from]++; return; }
    x->next = NULL; x->tag = tag; x->n = n; x->p = m;
    for (pp = &p->mb[from]; *pp; pp = &(*pp)->next) {}
    *pp = x;
    p->mb_cnt[from]++;
    p->mb_bytes[from] += n;
    p->mb_total += n;
    if ((int64_t)p->mb_total > p->st.mail_peak) p->st.mail_peak = (int64_t)p->mb_total;
}

static void vt__bt_mb_unlink(vt_btard_peer *p, int from, vt__bt_mail **pp) {
    vt__bt_mail *x = *pp;
    *pp = x->next;
    p->mb_cnt[from]--;
    p->mb_bytes[from] -= x->n;
    p->mb_total -= x->n;
    VT_FREE(x, NULL);
}

/* the first message from `from` with this tag, taken out (NULL: none) */
static unsigned char *vt__bt_mb_take(vt_btard_peer *p, int from, uint64_t tag, size_t *n) {
    vt__bt_mail **pp;
    if (from < 0 || from >= p->N) return NULL;
    for (pp = &p->mb[from]; *pp; pp = &(*pp)->next)
        if ((*pp)->tag == tag) {
            unsigned char *m = (*pp)->p;
            *n = (*pp)->n;
            vt__bt_mb_unlink(p, from, pp);
            return m;
        }
    return NULL;
}

/* Where a message stands in a round's course: ENV(x) at 1024 x, the parts
   right after ENV(1), relay round r of the echoes in ENV(x) at 1024 x + 2 + r,
   the fetches of exchange y at 1024 (y + 1) + 1010; anything of a later
   round or step beyond all of them. A peer that sent something past the point
   I wait at has moved on from it. */
#define VT__BT_PINF ((int64_t)1 << 40)
#define VT__BT_PENV(x) ((int64_t)(x) * 1024)
#define VT__BT_PPART (VT__BT_PENV(1) + 1)
#define VT__BT_PDS(x, r) (VT__BT_PENV(x) + 2 + (r))
#define VT__BT_PFETCH(y) (VT__BT_PENV((y) + 1) + 1010)
static int64_t vt__bt_prog(const vt_btard_peer *p, uint64_t tag) {
    int sub = VT__BT_TSUB(tag);
    if (VT__BT_TSTEP(tag) != (p->step & 0xFFFFFF) || VT__BT_TROUND(tag) > p->rd) return VT__BT_PINF;
    switch (VT__BT_TPHASE(tag)) {
    case VT__PH_CHUNK: return 1;
    case VT__PH_ENV: return VT__BT_PENV(sub);
    case VT__PH_PART: return VT__BT_PPART;
    case VT__PH_DS: return VT__BT_PDS(sub >> 12, sub & 0xFFF);
    case VT__PH_FETCH: return VT__BT_PFETCH(sub >> 12);
    default: return 0;
    }
}
/* has `from` sent something past progress point `at` */
static int vt__bt_ahead(const vt_btard_peer *p, int from, int64_t at) {
    const vt__bt_mail *m;
    for (m = p->mb[from]; m; m = m->next) if (vt__bt_prog(p, m->tag) > at) return 1;
    return 0;
}
/* how many members have moved on from point `at` */
static int vt__bt_moved_on(const vt_btard_peer *p, int64_t at) {
    int j, k = 0;
    for (j = 0; j < p->n; j++) if (j != p->me && vt__bt_ahead(p, p->mem[j], at)) k++;
    return k;
}

/* drop what left the window (a new round or step), counting it late */
static void vt__bt_mb_purge(vt_btard_peer *p) {
    int q;
    for (q = 0; q < p->N; q++) {
        vt__bt_mail **pp = &p->mb[q];
        while (*pp) {
            if (vt__bt_window(p, (*pp)->tag)) {
                VT_FREE((*pp)->p, NULL);
                p->late[q]++;
                vt__bt_mb_unlink(p, q, pp);
            } else pp = &(*pp)->next;
        }
    }
}

static void vt__bt_mb_free(vt_btard_peer *p) {
    int q;
    if (!p->mb) return;
    for (q = 0; q < p->N; q++)
        while (p->mb[q]) { VT_FREE(p->mb[q]->p, NULL); vt__bt_mb_unlink(p, q, &p->mb[q]); }
}

/* report what was dropped since the last report (events LATE, FLOOD) */
static void vt__bt_mb_report(vt_btard_peer *p) {
    int q;
    for (q = 0; q < p->N; q++) {
        if (p->late[q]) { vt__bt_event(p, VT_EV_LATE, q, -1, VT_BAN_SILENT, p->late[q]); p->st.late += p->late[q]; }
        if (p->flood[q]) { vt__bt_event(p, VT_EV_FLOOD, q, -1, VT_BAN_MALFORMED, p->flood[q]); p->st.flood += p->flood[q]; }
        p->late[q] = p->flood[q] = 0;
    }
}

/* one message from the transport into the mailbox: 1, 0 at the deadline,
   -1 if the transport closed */
static int vt__bt_pump(vt_btard_peer *p, double dl, int want) {
    int from = -1, rc;
    uint64_t tag = 0;
    unsigned char *m = NULL;
    size_t n = 0;
    rc = p->net->recv(p->net, &from, &tag, &m, &n, dl, want);
    if (rc == 1) vt__bt_mb_put(p, from, tag, m, n);
    return rc;
}

/* Wait until left(p, u) says nothing is missing, or the deadline, or a
   grace period (timeout / 8) after f + 1 members (so at least one honest
   peer) have moved on from point `at` (0: no such rule): 1 done, 0 stopped,
   -1 closed. left() takes what it needs from the mailbox and returns how
   many it still misses (the transport's wake-up hint). Without the last
   rule, a peer from which a Byzantine withheld a message would wait out its
   deadline, fall that far behind, and be taken for silent by the others;
   with it, it goes on within the grace period of the honest peers, and
   what it lacks it obtains in the slow path (>>agree). The grace absorbs
   the spread in delivery and scheduling among honest peers (a peer
   descheduled between two sends of one broadcast); waiting it out costs
   everyone that much, once per withheld message. */
static int vt__bt_wait(vt_btard_peer *p, double dl, int64_t at, int (*left)(vt_btard_peer *, void *), void *u) {
    double t0 = vt_net_now(), until = dl;
    int rc = 1, grace = 0;
    for (;;) {
        double pd;
        int k;
        p->wake = 0;
        k = left(p, u);
        if (!k) break;
        if (!grace && at > 0 && p->n > 1 && vt__bt_moved_on(p, at) >= p->f + 1) {
            double g = vt_net_now() + p->cfg.timeout / 8;
            grace = 1;
            if (g < until) until = g;
        }
        /* k is the transport's wake-up hint; while the moved-on rule may still
           fire, any message can end the wait, so wake on each one; left() may
           also want to run again at a time of its own (p->wake: an ask) */
        pd = p->wake > 0 && p->wake < until ? p->wake : until;
        rc = vt__bt_pump(p, pd, !grace && at > 0 ? 1 : k);
        if (rc < 0) break;
        /* the deadline holds even while messages keep coming (the transport
           hands over what is queued before it looks at the clock); what is
           queued when it passes still comes in, boundedly (a wait blocked
           until `want` messages came may have fewer queued: without this, all
           but one of them would miss it, e.g. the honest relays of a relay
           round that one silent member keeps short of `want`) */
        if (vt_net_now() >= until || (rc == 0 && pd >= until)) {
            int lim = p->N * p->mb_cap_cnt;
            while (lim-- > 0 && vt__bt_pump(p, 0, 1) == 1) {}
            left(p, u);
            rc = 0;
            break;
        }
    }
    p->wake = 0;
    p->st.t_wait += vt_net_now() - t0;
    return rc < 0 ? -1 : rc;
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
/* the seed of projection vector z_i (i = 1, 2) drawn from r */
static uint64_t vt__bt_zseed(const unsigned char r[32], int i) {
    unsigned char h[32], c = (unsigned char)i;
    vt_sha256_ctx s;
    vt_sha256_init(&s);
    vt_sha256_update(&s, "vt-btard-z", 10);
    vt_sha256_update(&s, &c, 1);
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

/* ==========================================================================
   >>agree  signed envelopes, echoes and the slow path (see >>btard: ONE
   EXCHANGE, AGREEMENT BEFORE PUNISHMENT)

   An envelope: [32 header][64 signature][echo][u32 evidence length]
   [evidence][content]. Header: "BTE2", u64 step, u32 round, u32 exchange x,
   u32 sender, u32 echo length, u32 length of the rest. The signature is
   Ed25519 over "vt-btard-env2" || session || header || SHA-256(echo) ||
   SHA-256(rest), so a relayed echo (header, signature, echo, SHA-256(rest))
   can be checked without the content, and a proof of equivocation is two
   such summaries. The echo in an envelope of exchange x is the sender's view
   of exchange x-1: the SHA-256 of the envelope it holds from each member, in
   position order, 32 zero bytes for none.
   ========================================================================== */

#define VT__BT_EH 96          /* header + signature */
#define VT__BT_SUMMARY 160    /* header, signature, SHA-256(echo), SHA-256(rest) */
#define VT__BT_PROOF (2 * VT__BT_SUMMARY)

typedef struct {
    int64_t step;
    int round, x, sender;
    const unsigned char *hdr, *sig, *echo, *ev, *content;
    size_t echo_len, ev_len, content_len, rest_len;
} vt__bt_env;

static int vt__bt_env_parse(const unsigned char *m, size_t n, vt__bt_env *e) {
    uint32_t el, rl;
    if (!m || n < VT__BT_EH + 4 || memcmp(m, "BTE2", 4)) return 0;
    el = vt__bt_g32(m + 24);
    rl = vt__bt_g32(m + 28);
    if ((uint64_t)VT__BT_EH + el + rl != (uint64_t)n || rl < 4) return 0;
    e->hdr = m;
    e->sig = m + 32;
    e->step = (int64_t)vt__bt_g64(m + 4);
    e->round = (int)vt__bt_g32(m + 12);
    e->x = (int)vt__bt_g32(m + 16);
    e->sender = (int)vt__bt_g32(m + 20);
    e->echo = m + VT__BT_EH;
    e->echo_len = el;
    e->rest_len = rl;
    e->ev_len = vt__bt_g32(m + VT__BT_EH + el);
    if (e->ev_len > rl - 4) return 0;
    e->ev = m + VT__BT_EH + el + 4;
    e->content = e->ev + e->ev_len;
    e->content_len = rl - 4 - e->ev_len;
    return 1;
}

static void vt__bt_sigmsg_env(const vt_btard_peer *p, const unsigned char *hdr, const unsigned char he[32], const unsigned char hr[32],
                              unsigned char out[141]) {
    memcpy(out, "vt-btard-env2", 13);
    memcpy(out + 13, p->session, 32);
    memcpy(out + 45, hdr, 32);
    memcpy(out + 77, he, 32);
    memcpy(out + 109, hr, 32);
}

static void vt__bt_sign(vt_btard_peer *p, const unsigned char *m, size_t n, unsigned char sig[64]) {
    double t0 = vt_net_now();
    vt__bt_sign_raw(p->key.sk, m, n, sig);
    p->st.signs++;
    p->st.t_sign += vt_net_now() - t0;
}
static int vt__bt_verify(vt_btard_peer *p, int rank, const unsigned char *m, size_t n, const unsigned char sig[64]) {
    double t0 = vt_net_now();
    int ok = rank >= 0 && rank < p->N && vt__bt_verify_raw(p->roster + 32 * (size_t)rank, m, n, sig);
    p->st.verifies++;
    p->st.t_sign += vt_net_now() - t0;
    return ok;
}

/* a summary's signature (header sender) */
static int vt__bt_summary_ok(vt_btard_peer *p, const unsigned char *s) {
    unsigned char m[141];
    vt__bt_sigmsg_env(p, s, s + 96, s + 128, m);
    return !memcmp(s, "BTE2", 4) && vt__bt_verify(p, (int)vt__bt_g32(s + 20), m, sizeof m, s + 32);
}
static void vt__bt_summarize(const vt__bt_env *e, unsigned char out[VT__BT_SUMMARY]) {
    memcpy(out, e->hdr, VT__BT_EH);
    vt_sha256(e->echo, e->echo_len, out + 96);
    vt_sha256(e->echo + e->echo_len, e->rest_len, out + 128);
}
/* Evidence, published in the next envelope and judged once it is agreed:
   [u32 1][two summaries] proves that their signer signed two different
   envelopes for one (step, round, exchange): it is banned; [u32 2][one
   summary] names an envelope whose echo my slow path found deviating: who
   holds a different signed envelope of that signer for that slot publishes
   the proof. An honest peer publishes nothing it has not verified, and at
   most 64 items at once, of which suspects take at most half: every member
   whose echo deviates is one (0.2.5: an empty slot too), and they must not
   crowd out a proof. */
#define VT__BT_EV_PROOF 1
#define VT__BT_EV_SUSPECT 2
/* a proof of summaries a and b; `checked`: both signatures are known to
   hold (summaries of relay items, each checked when it was accepted:
   vt__bt_ds_evidence), so they are not checked again */
static void vt__bt_add_proof(vt_btard_peer *p, const unsigned char *a, const unsigned char *b, int checked) {
    if (p->nevid >= 64 || memcmp(a, "BTE2", 4) || memcmp(a + 4, b + 4, 20) || !memcmp(a + 96, b + 96, 64)) return;
    if (!checked && (!vt__bt_summary_ok(p, a) || !vt__bt_summary_ok(p, b))) return;
    if (vt__bt_add32(&p->evid, VT__BT_EV_PROOF) && vt__bt_add(&p->evid, a, VT__BT_SUMMARY) && vt__bt_add(&p->evid, b, VT__BT_SUMMARY)) p->nevid++;
}
/* two envelopes I hold of one sender for one slot */
static void vt__bt_proof(vt_btard_peer *p, const unsigned char *a, size_t an, const unsigned char *b, size_t bn) {
    vt__bt_env ea, eb;
    unsigned char s[2 * VT__BT_SUMMARY];
    if (!vt__bt_env_parse(a, an, &ea) || !vt__bt_env_parse(b, bn, &eb)) return;
    vt__bt_summarize(&ea, s);
    vt__bt_summarize(&eb, s + VT__BT_SUMMARY);
    vt__bt_add_proof(p, s, s + VT__BT_SUMMARY, 0);
}
/* the envelope I hold of `rank` for (step, round, x): this round's or the previous one's */
static const unsigned char *vt__bt_held(const vt_btard_peer *p, int64_t step, int round, int x, int rank, size_t *n) {
    int j;
    if (x < 1 || x >= VT__BT_XMAX || rank < 0 || rank >= p->N) return NULL;
    if (step == p->step && round == p->rd && (j = p->pos[rank]) >= 0) { *n = VT__XLEN(p, x, j); return VT__XENV(p, x, j); }
    if (step == p->pstep && round == p->pround) { *n = p->pxlen[(size_t)x * p->N + rank]; return p->pxenv[(size_t)x * p->N + rank]; }
    return NULL;
}

/* my envelope of exchange x into out: echo (my view of x-1, n*32 bytes, or
   none), the proofs I hold, content */
static int vt__bt_env_make(vt_btard_peer *p, int x, const unsigned char *echo, size_t el, const unsigned char *content, size_t cl,
                           vt__bt_buf *out) {
    unsigned char h[32], he[32], hr[32], m[141], sig[64];
    size_t rl = 4 + p->evid.n + cl;
    out->n = 0;
    memcpy(h, "BTE2", 4);
    vt__bt_p64(h + 4, (uint64_t)p->step);
    vt__bt_p32(h + 12, (uint32_t)p->rd);
    vt__bt_p32(h + 16, (uint32_t)x);
    vt__bt_p32(h + 20, (uint32_t)p->rank);
    vt__bt_p32(h + 24, (uint32_t)el);
    vt__bt_p32(h + 28, (uint32_t)rl);
    if (!vt__bt_reserve(out, VT__BT_EH + el + rl + 1) || !vt__bt_add(out, h, 32) || !vt__bt_add(out, memset(sig, 0, 64), 64) || !vt__bt_add(out, echo, el) ||
        !vt__bt_add32(out, (uint32_t)p->evid.n) || !vt__bt_add(out, p->evid.p, p->evid.n) || !vt__bt_add(out, content, cl))
        return 0;
    vt_sha256(out->p + VT__BT_EH, el, he);
    vt_sha256(out->p + VT__BT_EH + el, rl, hr);
    vt__bt_sigmsg_env(p, h, he, hr, m);
    vt__bt_sign(p, m, sizeof m, out->p + 32);
    return 1;
}

/* the echo an envelope of exchange x carries: none in a round's first
   exchange, else the sender's view of x - 1, 32 bytes per member. Any other
   length is not an envelope of x: the slow path reads 32 n bytes of every
   echo it counts. */
static size_t vt__bt_echo_len(const vt_btard_peer *p, int x) {
    return x > 1 ? 32 * (size_t)p->n : 0;
}

/* keep an envelope as my view's entry for (x, j) */
static void vt__bt_hold(vt_btard_peer *p, int x, int j, unsigned char *m, size_t n) {
    VT_FREE(VT__XENV(p, x, j), NULL);
    VT__XENV(p, x, j) = m;
    VT__XLEN(p, x, j) = n;
    if (m) vt_sha256(m, n, VT__XDIG(p, x, j));
    else memset(VT__XDIG(p, x, j), 0, 32);
}

/* the peer a targeted attack deceives this step: its victim if a member,
   else one that changes with the step */
static int vt__bt_victim(const vt_btard_peer *p) {
    int v = p->atk.victim;
    if (v >= 0 && v < p->N && v != p->rank && p->memmask[v]) return v;
    if (p->n < 2) return -1;
    v = p->mem[(int)((p->step + p->rd + 1) % p->n)];
    return v == p->rank ? p->mem[(int)((p->step + p->rd + 2) % p->n)] : v;
}

static int vt__bt_kind_attack(int kind, int equivocate) {
    switch (kind) {
    case VT__K_COMMIT: return equivocate ? VT_ATTACK_EQUIVOCATE_COMMIT : VT_ATTACK_WITHHOLD_COMMIT;
    case VT__K_AGG: return equivocate ? VT_ATTACK_EQUIVOCATE_AGGREGATE : VT_ATTACK_WITHHOLD_AGGREGATE;
    case VT__K_REVEAL: return equivocate ? VT_ATTACK_EQUIVOCATE_REVEAL : VT_ATTACK_WITHHOLD_REVEAL_ONE;
    case VT__K_SCALARS: return equivocate ? VT_ATTACK_EQUIVOCATE_SCALARS : VT_ATTACK_WITHHOLD_SCALARS;
    case VT__K_FIN: return equivocate ? VT_ATTACK_EQUIVOCATE_FINAL : VT_ATTACK_WITHHOLD_FINAL;
    default: return -1;
    }
}

/* the flood attack: junk toward everyone, for far-future steps and for this
   round's tags, some larger than any transport accepts */
static void vt__bt_flood(vt_btard_peer *p) {
    int i, k = (int)p->atk.scale;
    unsigned char junk[2048];
    for (i = 0; i < (int)sizeof junk; i++) junk[i] = (unsigned char)(vt_rng_u64(p->atk.seed, 77, (uint64_t)i) >> 3);
    for (i = 0; i < k; i++) {
        uint64_t z = vt_rng_u64(p->atk.seed, (uint64_t)p->step, (uint64_t)i);
        uint64_t tag = i % 2 ? VT__BT_TAG(p->cfg.session, p->step + 100 + (int64_t)(z % 100000), 0, VT__PH_ENV, 1)
                             : VT__BT_TAG(p->cfg.session, p->step, p->rd, 1 + (int)(z % 8), (int)(z >> 20) & 0xFFFF);
        p->net->bcast(p->net, tag, junk, (size_t)(z >> 40) % sizeof junk, p->memmask);
    }
}

/* Build, sign, keep and send my envelope of exchange x. The attacks that
   act on envelopes act here: silent sends nothing, withhold_* skips its
   victim, equivocate_* signs a second envelope for the victim (half the
   members for equivocate_half), flood adds junk. */
static int vt__bt_env_send(vt_btard_peer *p, int x, const unsigned char *content, size_t cl) {
    size_t el = vt__bt_echo_len(p, x);
    unsigned char *echo = NULL, *mine;
    int kind = p->kind[x], v = -1, half = 0, wa = vt__bt_kind_attack(kind, 0), ea = vt__bt_kind_attack(kind, 1), j;
    if (el) {
        echo = (unsigned char *)VT_MALLOC(el, NULL);
        if (!echo) return 0;
        memcpy(echo, VT__XDIG(p, x - 1, 0), el);
        if (vt__bt_attacking(p, VT_ATTACK_LYING_ECHO)) {
            int vj = vt__bt_victim(p);
            if (vj >= 0 && p->pos[vj] >= 0) memset(echo + 32 * (size_t)p->pos[vj], 0, 32); /* "I got nothing from it" */
        }
    }
    if (!vt__bt_env_make(p, x, echo, el, content, cl, &p->sb)) { VT_FREE(echo, NULL); vt__bt_fail(p, VT_ERR_NOMEM, "out of memory"); return 0; }
    p->ev_sent[x] = p->evid.n; /* it stays until an envelope that carried it is agreed */
    mine = (unsigned char *)VT_MALLOC(p->sb.n, NULL);
    if (!mine) { VT_FREE(echo, NULL); vt__bt_fail(p, VT_ERR_NOMEM, "out of memory"); return 0; }
    memcpy(mine, p->sb.p, p->sb.n);
    vt__bt_hold(p, x, p->me, mine, p->sb.n);
    if (vt__bt_attacking(p, VT_ATTACK_SILENT)) { VT_FREE(echo, NULL); return 1; }
    if (vt__bt_attacking(p, VT_ATTACK_PARTIAL_THEN_SILENT) && kind == (p->atk.exchange > 0 ? p->atk.exchange : VT__K_COMMIT)) {
        int reach = p->atk.reach >= 0 ? p->atk.reach : p->f, k = 0; /* dies in the middle of the broadcast (rank order) */
        for (j = 0; j < p->n && k < reach; j++)
            if (p->mem[j] != p->rank) { p->net->send(p->net, p->mem[j], vt__bt_tag(p, VT__PH_ENV, x), p->sb.p, p->sb.n); k++; }
        VT_FREE(echo, NULL);
        vt__bt_fail(p, VT_ERR_STATE, "peer %d, step %lld: partial_then_silent: its envelope of exchange %d went to %d of %d members, then it stopped",
                    p->rank, (long long)p->step, x, k, p->n - 1);
        return 0;
    }
    if (kind == VT__K_COMMIT && (vt__bt_attacking(p, VT_ATTACK_WITHHOLD_HALF) || vt__bt_attacking(p, VT_ATTACK_EQUIVOCATE_HALF))) half = 1;
    if (half || (wa >= 0 && vt__bt_attacking(p, (vt_btard_attack_kind)wa)) || (ea >= 0 && vt__bt_attacking(p, (vt_btard_attack_kind)ea)))
        v = vt__bt_victim(p);
    if (v < 0) p->net->bcast(p->net, vt__bt_tag(p, VT__PH_ENV, x), p->sb.p, p->sb.n, p->memmask);
    else {
        int equiv = (ea >= 0 && vt__bt_attacking(p, (vt_btard_attack_kind)ea)) || vt__bt_attacking(p, VT_ATTACK_EQUIVOCATE_HALF);
        unsigned char *alt = NULL;
        size_t an = 0;
        if (equiv) { /* the same envelope with one content bit flipped (or an echo bit), signed again */
            unsigned char *c2 = (unsigned char *)VT_MALLOC(cl + 1, NULL);
            size_t off = kind == VT__K_COMMIT ? 52 : kind == VT__K_AGG ? 8 + (size_t)p->n : kind == VT__K_REVEAL ? 4 : 12;
            if (!c2) { VT_FREE(echo, NULL); return 0; }
            memcpy(c2, content, cl);
            if (off < cl) c2[off] ^= 1;
            else if (el) echo[0] ^= 1;
            if (vt__bt_env_make(p, x, echo, el, c2, cl, &p->sb2)) { alt = p->sb2.p; an = p->sb2.n; }
            VT_FREE(c2, NULL);
        }
        for (j = 0; j < p->n; j++) {
            int r = p->mem[j], deceived = half ? (j % 2 == 1) : r == v;
            if (r == p->rank) continue;
            if (!deceived) p->net->send(p->net, r, vt__bt_tag(p, VT__PH_ENV, x), p->sb.p, p->sb.n);
            else if (alt) p->net->send(p->net, r, vt__bt_tag(p, VT__PH_ENV, x), alt, an);
        }
    }
    if (vt__bt_attacking(p, VT_ATTACK_FLOOD)) vt__bt_flood(p);
    VT_FREE(echo, NULL);
    return 1;
}

/* --- gathering the envelopes of an exchange ------------------------------------------ */

typedef struct { int x, missing; double ahead; } vt__bt_envwait;
static int vt__bt_parts_left(vt_btard_peer *p, void *u); /* >>peer: the parts beside the PARTS envelopes */

/* Asking for what others went on with. A member that has gone on past
   exchange x holds every envelope of x it went on with; one that a dying
   or Byzantine sender sent its envelope to, and me not, can give it to me:
   the envelope is the sender's, signed, exactly what the sender would have
   sent me. So once a member has gone on and I still lack envelopes of x
   for timeout / 8 (the spread of honest delivery: what is in flight is in
   by then), I ask each member that has gone on, once, for the envelopes I
   lack (VT__PH_ASK: their ranks); it answers with those it holds
   (VT__PH_FWD, vt__bt_answer), and I take one as that sender's if it
   passes vt__bt_env_ok. Without it the few a dying peer's last broadcast
   reached went on at once, the others waited the exchange out (and its
   slow path), and the few, finding more than half of the others missing,
   stopped as cut off (0.2.3: tcp_kill9, tcp_hung; test_btard_byz
   dies_mid_broadcast_*). */

/* May m enter my view as `rank`'s envelope of exchange x: its header names
   this step, round, exchange and sender and its echo has the length x's
   echo has (vt__bt_env_fits: always, however it came), and its signature
   holds (vt__bt_env_ok: where THE CHEAPER RULE below wants it). An echo of
   another length, or a header that names another slot, counts as none and
   is asked for like a missing one: the slow path reads 32 n bytes of every
   echo it counts (0.2.5, test_btard_byz bad_echo_lengths_count_as_none).

   THE CHEAPER RULE (0.2.6). A signature matters only where an envelope must
   convince a peer that did not get it from its sender. So, on a transport
   that authenticates every message's sender (vt_net.authenticated: the
   in-process hub, TCP with CURVE and ZAP), I check it
     (a) on a copy a member I asked forwards me (vt__bt_fwd_take): anyone
         could have made it, so it must be the sender's;
     (b) on every envelope of x I hold, before it becomes my own relay item
         in the slow path of x - 1 (vt__bt_ds_start), and one that fails
         leaves my view there: every other peer checks an item's signature
         (vt__bt_ds_take), so an item only I accepted would split the
         relays; and that is before anything else I say of x (my echo of x
         goes out in x + 1, after this slow path);
     (c) in every proof and suspect, as before: those I make of envelopes I
         hold (vt__bt_add_proof) and those I receive (the judges); those I
         make of relay items (vt__bt_ds_proofs, vt__bt_ds_suspects) carry
         signatures checked when the items were accepted ((b) and
         vt__bt_ds_take), once (0.2.7: before, again);
   and not on an envelope straight from its sender (vt__bt_env_left), nor
   on a fetched one, which I take by its agreed digest alone
   (vt__bt_fetch_left). On any other transport (MPI, a user's) every
   envelope is checked wherever it comes from: 0.2.5's rule.

   Why every honest view stays identical:
   1. Who can put an envelope in my view as r's: r itself (the transport
      says so), anyone with a copy that verifies (forwarded), or anyone
      with the bytes of an agreed digest (fetched). An honest r signs one envelope per slot,
      so an honest slot holds that envelope or none, in every honest view,
      as in 0.2.5. Only a Byzantine's slot may hold a badly signed one, and
      only if the Byzantine sent it itself.
   2. An echo names bytes (their SHA-256), not a signature. The fast path
      (vt__bt_agree) rests on the honest echoes reaching me from their
      senders, not on anyone's signature. The count rule counts the echoes
      the relays agreed on; a relay item carries its sender's signature
      over its echo, and (b) makes every item of mine one that every other
      peer accepts too, so the Dolev-Strong rounds still end with the same
      items at every honest peer, and the count rule gives every honest
      peer the same digest for every slot, or the same ban.
   3. An agreed digest is named by f + 1 echoes, so by an honest one, whose
      sender held those bytes when it sent that echo and still holds them
      (a view of y changes after its echo only by fetching agreed
      envelopes of y; (b) drops envelopes of x in the slow path of x - 1,
      before my echo of x). The honest holders send them to every member
      whose agreed echo differs, and the digest pins them: every honest
      peer fetches the same bytes, signed or not, or stops for want of them
      (more than half not honest, as before). Checking a fetched
      envelope's signature would refuse agreed bytes that an honest peer
      held from their sender: that peer would agree on them and I would
      stop, so the fetch must not check it.
   4. What is judged is the agreed bytes' content (the judges parse; a
      badly signed Byzantine envelope agreed by all is judged like a signed
      one). Before agreement a view's content is read in one place,
      vt__bt_view_r: a reveal opens its agreed commitment or counts for
      nothing, so any envelope that opens it gives the same secret; if
      the agreed one does not, its sender is banned and the round starts
      again, as with two signed envelopes before.
   5. Bans: a proof needs two envelopes that both verify (c), so a badly
      signed one never bans anyone by proof; the count rule bans a sender
      whose slot is agreed empty or named twice by f + 1 agreed echoes,
      which by 1 never happens to an honest one. A Byzantine whose badly
      signed envelope reached f + 1 honest peers directly may instead be
      agreed on and not banned: it could have signed it.
   6. Liveness: to a peer that gets it only forwarded, a badly signed
      envelope is one withheld from it, with answers that never come; the
      slow path already settles that (test_btard_byz
      dies_mid_broadcast_answers_lost, badly_signed_split_counts_as_none
      and badly_signed_to_any_number).
   0.2.4 held an envelope from its sender on its header alone but checked
   forwarded and fetched copies, and made relay items of what it held
   unchecked: a Byzantine that sent a badly signed envelope to f members,
   and to them an echo naming it, had those f count it in the slow path
   while the others, who refused the copy they asked for, banned it as
   silent (badly_signed_split_counts_as_none). 0.2.5 checked every envelope
   on receipt: 90 checks per peer and step at 16 peers, where this rule
   makes none off the slow path and at most n - 1 in one (bench/RESULTS.md). */
/* The rule for the header of an envelope of exchange x, or of a relay
   item (which carries it), however it came: it names this step and round,
   exchange x and sender `rank`, and its echo (el bytes, as long as its
   length field says) has the length x's echo has. The one place the echo
   length is checked: everything held passed it (vt__bt_env_fits), every
   relay item accepted too (vt__bt_ds_take), so the fast path and the
   count rule read 32 n bytes of echo without checking again. */
static int vt__bt_hdr_fits(const vt_btard_peer *p, const unsigned char *h, int x, int rank, size_t el) {
    return !memcmp(h, "BTE2", 4) && (int64_t)vt__bt_g64(h + 4) == p->step && (int)vt__bt_g32(h + 12) == p->rd && (int)vt__bt_g32(h + 16) == x &&
           (int)vt__bt_g32(h + 20) == rank && vt__bt_g32(h + 24) == el && el == vt__bt_echo_len(p, x);
}
static int vt__bt_env_fits(vt_btard_peer *p, const unsigned char *m, size_t n, int x, int rank, vt__bt_env *e) {
    return vt__bt_env_parse(m, n, e) && vt__bt_hdr_fits(p, m, x, rank, e->echo_len);
}
/* the signature of parsed envelope e by `rank`, given hr = SHA-256 of its rest */
static int vt__bt_env_sig(vt_btard_peer *p, const vt__bt_env *e, int rank, const unsigned char hr[32]) {
    unsigned char he[32], sm[141];
    vt_sha256(e->echo, e->echo_len, he);
    vt__bt_sigmsg_env(p, e->hdr, he, hr, sm);
    return vt__bt_verify(p, rank, sm, sizeof sm, e->sig);
}
static int vt__bt_env_ok(vt_btard_peer *p, const unsigned char *m, size_t n, int x, int rank) {
    vt__bt_env e;
    unsigned char hr[32];
    if (!vt__bt_env_fits(p, m, n, x, rank, &e)) return 0;
    vt_sha256(e.echo + e.echo_len, e.rest_len, hr);
    return vt__bt_env_sig(p, &e, rank, hr);
}
/* an envelope from its sender, or fetched by its agreed digest: its
   signature is checked only if the transport does not vouch for senders */
static int vt__bt_env_direct(vt_btard_peer *p, const unsigned char *m, size_t n, int x, int rank) {
    vt__bt_env e;
    return p->net->authenticated ? vt__bt_env_fits(p, m, n, x, rank, &e) : vt__bt_env_ok(p, m, n, x, rank);
}
/* the envelopes of slot j of exchange x that members I asked sent me: the
   first signed one is held if I lack it; another signed one is a proof */
static void vt__bt_fwd_take(vt_btard_peer *p, int x, int j) {
    int q;
    for (q = 0; q < p->n; q++) {
        unsigned char *m, d[32];
        size_t n;
        if (!p->asked[q]) continue;
        while ((m = vt__bt_mb_take(p, p->mem[q], vt__bt_tag(p, VT__PH_FWD, VT__BT_SUB(x, p->mem[j])), &n)) != NULL) {
            if (!VT__XENV(p, x, j)) {
                if (vt__bt_env_ok(p, m, n, x, p->mem[j])) { vt__bt_hold(p, x, j, m, n); p->st.fetched++; continue; }
            } else {
                vt_sha256(m, n, d);
                if (memcmp(d, VT__XDIG(p, x, j), 32) && vt__bt_env_ok(p, m, n, x, p->mem[j])) vt__bt_proof(p, VT__XENV(p, x, j), VT__XLEN(p, x, j), m, n);
            }
            VT_FREE(m, NULL);
        }
    }
}
static void vt__bt_ask(vt_btard_peer *p, vt__bt_envwait *w) {
    int q, j;
    double now;
    vt__bt_buf b;
    for (q = 0; q < p->n; q++) if (q != p->me && !p->asked[q] && vt__bt_ahead(p, p->mem[q], VT__BT_PENV(w->x))) break;
    if (q == p->n || vt__bt_attacking(p, VT_ATTACK_SILENT)) return;
    now = vt_net_now();
    if (w->ahead <= 0) w->ahead = now;
    if (now < w->ahead + p->cfg.timeout / 8) { p->wake = w->ahead + p->cfg.timeout / 8; return; }
    memset(&b, 0, sizeof b);
    for (j = 0; j < p->n; j++) if (j != p->me && !VT__XENV(p, w->x, j)) vt__bt_add32(&b, (uint32_t)p->mem[j]);
    for (q = 0; q < p->n; q++)
        if (q != p->me && !p->asked[q] && vt__bt_ahead(p, p->mem[q], VT__BT_PENV(w->x))) {
            p->asked[q] = 1;
            if (b.n) p->net->send(p->net, p->mem[q], vt__bt_tag(p, VT__PH_ASK, VT__BT_SUB(w->x, 0)), b.p, b.n);
        }
    VT_FREE(b.p, NULL);
}
/* an ask from member `from` for envelopes of exchange x of its step and
   round (the ranks of their senders): those I hold go back to it, once per
   asker, step, round and exchange: at most one exchange's envelopes each */
static void vt__bt_answer(vt_btard_peer *p, int from, uint64_t tag, const unsigned char *m, size_t n) {
    int64_t st = VT__BT_TSTEP(tag), step = -1, key;
    int rd = VT__BT_TROUND(tag), x = VT__BT_TSUB(tag) >> 12;
    size_t i;
    if (st == (p->step & 0xFFFFFF)) step = p->step;
    else if (p->pstep >= 0 && st == (p->pstep & 0xFFFFFF)) step = p->pstep;
    if (step < 0 || !p->alive[from] || vt__bt_attacking(p, VT_ATTACK_SILENT)) return; /* not a step I hold envelopes of */
    if (x < 1 || x >= VT__BT_XMAX || n % 4 || n > 4 * (size_t)p->N) { p->flood[from]++; return; }
    key = step * 256 + rd;
    if (key < p->ans_at[from]) return;
    if (key > p->ans_at[from]) { p->ans_at[from] = key; p->ans_x[from] = 0; }
    if (p->ans_x[from] & (1u << x)) { p->flood[from]++; return; }
    p->ans_x[from] |= 1u << x;
    /* the ranks strictly increasing, as an honest ask lists them (vt__bt_ask, in member order): one
       rank named n times would get n copies of its envelope back, an amplification; such an ask gets
       nothing */
    for (i = 4; i < n; i += 4)
        if (vt__bt_g32(m + i) <= vt__bt_g32(m + i - 4)) { p->flood[from]++; return; }
    for (i = 0; i < n; i += 4) {
        uint32_t r = vt__bt_g32(m + i);
        const unsigned char *e;
        size_t len = 0;
        if (r >= (uint32_t)p->N || (int)r == from || !(e = vt__bt_held(p, step, rd, x, (int)r, &len)) || !len) continue;
        p->net->send(p->net, from, VT__BT_TAG(p->cfg.session, step, rd, VT__PH_FWD, VT__BT_SUB(x, r)), e, len);
    }
}

/* take from the mailbox what came for exchange x (from its senders, or as
   members I asked sent it); envelopes that fail vt__bt_env_direct (from
   their senders) or vt__bt_env_ok (forwarded) count as none */
static int vt__bt_env_left(vt_btard_peer *p, void *u) {
    vt__bt_envwait *w = (vt__bt_envwait *)u;
    int j, left = 0;
    for (j = 0; j < p->n; j++) {
        unsigned char *m;
        size_t n;
        if (j == p->me || VT__XENV(p, w->x, j)) continue;
        m = vt__bt_mb_take(p, p->mem[j], vt__bt_tag(p, VT__PH_ENV, w->x), &n);
        if (m && vt__bt_env_direct(p, m, n, w->x, p->mem[j])) {
            vt__bt_hold(p, w->x, j, m, n);
            continue;
        }
        VT_FREE(m, NULL);
        vt__bt_fwd_take(p, w->x, j);
        if (!VT__XENV(p, w->x, j)) left++;
    }
    w->missing = left;
    if (left) vt__bt_ask(p, w);
    if (p->kind[w->x] == VT__K_PARTS) left += vt__bt_parts_left(p, NULL);
    return left;
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

/* has `rank` sent relay messages of exchange x in this round: it is in the
   slow path of exchange x - 1 */
static int vt__bt_went_slow(const vt_btard_peer *p, int rank, int x) {
    const vt__bt_mail *m;
    for (m = p->mb[rank]; m; m = m->next)
        if (VT__BT_TPHASE(m->tag) == VT__PH_DS && (VT__BT_TSUB(m->tag) >> 12) == x && VT__BT_TSTEP(m->tag) == (p->step & 0xFFFFFF) &&
            VT__BT_TROUND(m->tag) == p->rd)
            return 1;
    return 0;
}

/* Gather exchange x until the deadline: 0, or -1 if this peer must stop.
   Whether a peer needs the slow path depends on what it received, so a
   Byzantine that shows a deviating echo to some honest peers only sends
   those into the slow path (f relay rounds) while the others go on: a
   member still missing at the deadline that sent relay messages of exchange
   x - 1 is in that slow path, and the deadline moves once by the slow path's
   length (f timeouts), so it is not taken for silent. */
/* Is member j alive: do I hold its envelope of the exchange before x (for
   the first of a step, of the last exchange of the step before) */
static int vt__bt_was_alive(const vt_btard_peer *p, int x, int j) {
    if (x >= 2) return VT__XENV(p, x - 1, j) != NULL;
    return x == 1 && p->rd == 0 && p->done_step == p->step - 1 && p->pstep == p->step - 1 &&
           p->pxenv[(size_t)p->done_x * (size_t)p->N + (size_t)p->mem[j]] != NULL;
}

/* the wait of a peer that finds more than half of the others missing: done
   once no more than half are */
static int vt__bt_half_left(vt_btard_peer *p, void *u) {
    vt__bt_envwait *w = (vt__bt_envwait *)u;
    int need;
    vt__bt_env_left(p, u);
    need = w->missing - (p->n - 1) / 2;
    return need > 0 ? need : 0;
}

static int vt__bt_env_gather(vt_btard_peer *p, int x, double dl) {
    vt__bt_envwait w;
    int j, extended = 0, alive = 0;
    memset(p->asked, 0, (size_t)p->N);
    w.x = x;
    w.ahead = 0;
    for (;;) {
        double ext = 0;
        w.missing = 0;
        if (vt__bt_wait(p, dl, VT__BT_PENV(x), vt__bt_env_left, &w) < 0) { vt__bt_fail(p, VT_ERR_STATE, "peer %d: the transport closed", p->rank); return -1; }
        if (!w.missing || extended) break;
        for (j = 0; j < p->n; j++) {
            if (j == p->me || VT__XENV(p, x, j)) continue;
            if (x >= 3 && vt__bt_went_slow(p, p->mem[j], x - 1)) ext = (p->f + 1) * p->cfg.timeout; /* in the slow path of x - 1 */
            else if (x >= 2 && VT__XENV(p, x - 1, j) && ext < p->cfg.timeout) ext = p->cfg.timeout; /* alive: late by a grace of its own */
        }
        if (ext <= 0) break;
        extended = 1;
        VT__BT_DBG(("%.3f peer %d step %lld rd %d: gather %d extended by %.3f\n", vt_net_now(), p->rank, (long long)p->step, p->rd, x, ext));
        dl = vt__bt_next(p, ext);
    }
    /* More than half of the others missing at once: either I am cut off, or
       they are behind me - honest members deprived of an envelope of x - 1
       that I got (a peer died in the middle of its broadcast, or a Byzantine
       sent it to me and few others) wait x - 1 out and its slow path, while
       I had all of it early and went on; asking (above) catches them up
       unless the answers are lost or late. Those whose envelope of x - 1 (for
       a step's first exchange: of the step before's last) I hold are alive;
       I wait for them as long as the latest honest member could take to send
       x - from the deadline x - 1 had: a grace as long as a slow path, the
       slow path of x - 2 and a fetch, a re-execution or a step's compute, a
       validator's wait, one timeout of slack: (2f + 5) T + compute_timeout -
       before I conclude that I am the one cut off. Once no more than half
       are missing, x has a timeout from that arrival, as those late ones
       count it (not from my early start, nor to a fixed point past it:
       3588131 did that and lagged their slow path). */
    if (2 * w.missing > p->n - 1)
        for (j = 0; j < p->n; j++) alive += j != p->me && !VT__XENV(p, x, j) && vt__bt_was_alive(p, x, j);
    if (alive) {
        double cap = (x >= 2 ? p->gdl[x - 1] : p->done_dl) + (2 * p->f + 5) * p->cfg.timeout + p->cfg.compute_timeout;
        VT__BT_DBG(("%.3f peer %d step %lld rd %d: gather %d: %d missing, %d alive: waiting until %.3f\n", vt_net_now(), p->rank, (long long)p->step,
                    p->rd, x, w.missing, alive, cap));
        if (vt__bt_wait(p, cap, VT__BT_PENV(x), vt__bt_half_left, &w) < 0) { vt__bt_fail(p, VT_ERR_STATE, "peer %d: the transport closed", p->rank); return -1; }
        if (2 * w.missing <= p->n - 1) {
            p->sched = vt_net_now();
            dl = vt__bt_next(p, p->cfg.timeout);
            if (w.missing && vt__bt_wait(p, dl, VT__BT_PENV(x), vt__bt_env_left, &w) < 0) {
                vt__bt_fail(p, VT_ERR_STATE, "peer %d: the transport closed", p->rank);
                return -1;
            }
        }
    }
    p->gdl[x] = dl;
    VT__BT_DBG(("%.3f peer %d step %lld rd %d: gathered %d missing %d (dl %.3f, moved on %d)\n", vt_net_now(), p->rank, (long long)p->step, p->rd, x,
                w.missing, dl, vt__bt_moved_on(p, VT__BT_PENV(x))));
    vt__bt_settle(p);
    return vt__bt_cut_off(p, w.missing, p->n - 1) ? -1 : 0;
}


/* --- the slow path: relays of the echoes (Dolev-Strong), then the count rule --------------- */

/* A relay item: a member's envelope of exchange x reduced to what its echo
   needs: [96 header and signature][32 SHA-256(rest)][echo]. A relay round's
   message: [u32 "BTD2"][u64 step][u32 round][u32 x][u32 relay round r]
   [u32 relayer][u32 count][count * 32 item digests][64 signature, if count]
   then count times [u32 item length][item][u32 chain length][chain]; the
   relayer signs "vt-btard-ds2" || session || step || round || x || r ||
   relayer || SHA-256(digests). A chain is the links of the relayers the item
   came through: [u32 relayer][u32 r][u32 count][count * 32][64 signature]. */

static void vt__bt_ds_sigmsg(const vt_btard_peer *p, int x, int r, int relayer, const unsigned char hl[32], unsigned char out[100]) {
    memcpy(out, "vt-btard-ds2", 12);
    memcpy(out + 12, p->session, 32);
    vt__bt_p64(out + 44, (uint64_t)p->step);
    vt__bt_p32(out + 52, (uint32_t)p->rd);
    vt__bt_p32(out + 56, (uint32_t)x);
    vt__bt_p32(out + 60, (uint32_t)r);
    vt__bt_p32(out + 64, (uint32_t)relayer);
    memcpy(out + 68, hl, 32);
}

static int vt__bt_ds_has(const vt_btard_peer *p, int j, const unsigned char d[32]) {
    int v;
    for (v = 0; v < p->ds_cnt[j]; v++) if (!memcmp(p->ds_idg + ((size_t)j * 2 + v) * 32, d, 32)) return 1;
    return 0;
}
static void vt__bt_ds_accept(vt_btard_peer *p, int j, const unsigned char *it, size_t in, const unsigned char *ch, size_t cn) {
    int v = p->ds_cnt[j];
    if (v >= 2) return;
    if (!vt__bt_set(&p->ds_item[j * 2 + v], it, in) || !vt__bt_set(&p->ds_chain[j * 2 + v], ch, cn)) return;
    vt_sha256(it, in, p->ds_idg + ((size_t)j * 2 + v) * 32);
    p->ds_fresh[j * 2 + v] = 1;
    p->ds_cnt[j] = (unsigned char)(v + 1);
}

/* round 1 of the relays: the envelopes of x I hold, each an item; one
   that I took from its sender unchecked and whose signature fails leaves
   my view first (>>agree: THE CHEAPER RULE, (b)). The rest is hashed once,
   for the check and the item; every item I accept is checked (here, on
   receipt, or in vt__bt_ds_take), which vt__bt_ds_evidence relies on. */
static void vt__bt_ds_start(vt_btard_peer *p, int x) {
    int j;
    for (j = 0; j < p->n; j++) {
        vt__bt_env e;
        unsigned char hr[32];
        int item = VT__XENV(p, x, j) && vt__bt_env_parse(VT__XENV(p, x, j), VT__XLEN(p, x, j), &e);
        if (item) vt_sha256(e.echo + e.echo_len, e.rest_len, hr);
        if (p->net->authenticated && j != p->me && VT__XENV(p, x, j) && !(item && vt__bt_hdr_fits(p, e.hdr, x, p->mem[j], e.echo_len) && vt__bt_env_sig(p, &e, p->mem[j], hr))) {
            vt__bt_hold(p, x, j, NULL, 0);
            item = 0;
        }
        p->ds_cnt[j] = 0;
        p->ds_fresh[2 * j] = p->ds_fresh[2 * j + 1] = 0;
        /* listen to every member that showed life in this exchange or the one it
           echoes, even if its envelope of x has not reached me (yet): an honest
           peer late by a grace relays what I may lack */
        p->ds_active[j] = VT__XENV(p, x, j) || VT__XENV(p, x - 1, j) || vt__bt_went_slow(p, p->mem[j], x);
        if (!item) continue;
        p->sb.n = 0;
        if (vt__bt_add(&p->sb, e.hdr, VT__BT_EH) && vt__bt_add(&p->sb, hr, 32) && vt__bt_add(&p->sb, e.echo, e.echo_len))
            vt__bt_ds_accept(p, j, p->sb.p, p->sb.n, NULL, 0);
    }
}

/* my relay message of round r: the items I accepted in round r - 1 */
static int vt__bt_ds_send(vt_btard_peer *p, int x, int r) {
    vt__bt_buf *b = &p->sb;
    int j, v, cnt = 0;
    unsigned char hl[32], m[100], sig[64];
    vt__bt_buf list;
    memset(&list, 0, sizeof list);
    for (j = 0; j < p->n; j++)
        for (v = 0; v < p->ds_cnt[j]; v++)
            if (p->ds_fresh[j * 2 + v]) { vt__bt_add(&list, p->ds_idg + ((size_t)j * 2 + v) * 32, 32); cnt++; }
    b->n = 0;
    vt__bt_add32(b, 0x32445442u); /* "BTD2" */
    vt__bt_add64(b, (uint64_t)p->step);
    vt__bt_add32(b, (uint32_t)p->rd);
    vt__bt_add32(b, (uint32_t)x);
    vt__bt_add32(b, (uint32_t)r);
    vt__bt_add32(b, (uint32_t)p->rank);
    vt__bt_add32(b, (uint32_t)cnt);
    if (cnt) {
        vt_sha256(list.p, list.n, hl);
        vt__bt_ds_sigmsg(p, x, r, p->rank, hl, m);
        vt__bt_sign(p, m, sizeof m, sig);
        vt__bt_add(b, list.p, list.n);
        vt__bt_add(b, sig, 64);
        for (j = 0; j < p->n; j++)
            for (v = 0; v < p->ds_cnt[j]; v++) {
                if (!p->ds_fresh[j * 2 + v]) continue;
                vt__bt_add32(b, (uint32_t)p->ds_item[j * 2 + v].n);
                vt__bt_add(b, p->ds_item[j * 2 + v].p, p->ds_item[j * 2 + v].n);
                vt__bt_add32(b, (uint32_t)p->ds_chain[j * 2 + v].n);
                vt__bt_add(b, p->ds_chain[j * 2 + v].p, p->ds_chain[j * 2 + v].n);
            }
    }
    VT_FREE(list.p, NULL);
    for (j = 0; j < 2 * p->n; j++) p->ds_fresh[j] = 0;
    if (!vt__bt_attacking(p, VT_ATTACK_SILENT)) p->net->bcast(p->net, vt__bt_tag(p, VT__PH_DS, VT__BT_SUB(x, r)), b->p, b->n, p->memmask);
    return 1;
}

/* does digest d appear in a list of cnt digests */
static int vt__bt_in_list(const unsigned char *l, uint32_t cnt, const unsigned char d[32]) {
    uint32_t i;
    for (i = 0; i < cnt; i++) if (!memcmp(l + 32 * (size_t)i, d, 32)) return 1;
    return 0;
}

/* one relay message from position q in round r: accept what is new and
   carries a valid chain of r - 1 relayers */
static void vt__bt_ds_take(vt_btard_peer *p, int x, int r, int q, const unsigned char *m, size_t n) {
    uint32_t cnt, i;
    size_t at;
    const unsigned char *list, *sig;
    int link_ok = -1; /* q's own link: checked once, when first needed */
    unsigned char hl[32];
    if (n < 32 || vt__bt_g32(m) != 0x32445442u || (int64_t)vt__bt_g64(m + 4) != p->step || (int)vt__bt_g32(m + 12) != p->rd ||
        (int)vt__bt_g32(m + 16) != x || (int)vt__bt_g32(m + 20) != r || (int)vt__bt_g32(m + 24) != p->mem[q])
        return;
    cnt = vt__bt_g32(m + 28);
    if (cnt == 0 || cnt > 2 * (uint32_t)p->n || n < 32 + 32 * (size_t)cnt + 64) return;
    list = m + 32;
    sig = list + 32 * (size_t)cnt;
    at = 32 + 32 * (size_t)cnt + 64;
    for (i = 0; i < cnt; i++) {
        uint32_t il, cl, k;
        const unsigned char *it, *ch;
        unsigned char d[32], he[32], sm[141];
        int j, ok = 1;
        size_t c;
        if (at + 4 > n) return;
        il = vt__bt_g32(m + at);
        at += 4;
        if (il < 128 || at + il + 4 > n) return;
        it = m + at;
        at += il;
        cl = vt__bt_g32(m + at);
        at += 4;
        if (cl > n - at) return;
        ch = m + at;
        at += cl;
        vt_sha256(it, il, d);
        if (memcmp(d, list + 32 * (size_t)i, 32)) return; /* q signed another list */
        if (!vt__bt_hdr_fits(p, it, x, (int)vt__bt_g32(it + 20), il - 128)) continue; /* not an item of x; an echo of another length is none */
        j = p->pos[vt__bt_g32(it + 20) < (uint32_t)p->N ? (int)vt__bt_g32(it + 20) : 0];
        if ((int)vt__bt_g32(it + 20) >= p->N || j < 0 || p->mem[j] != (int)vt__bt_g32(it + 20)) continue;
        if (vt__bt_ds_has(p, j, d) || p->ds_cnt[j] >= 2) continue;
        /* new to me: q's link, the chain's r - 2 links, the member's signature */
        if (link_ok < 0) {
            unsigned char lm[100];
            vt_sha256(list, 32 * (size_t)cnt, hl);
            vt__bt_ds_sigmsg(p, x, r, p->mem[q], hl, lm);
            link_ok = vt__bt_verify(p, p->mem[q], lm, sizeof lm, sig);
        }
        if (!link_ok) return;
        for (k = 0, c = 0; ok && k < (uint32_t)(r - 2); k++) {
            uint32_t lr, lround, lc, u;
            unsigned char lh[32], lm[100];
            if (c + 12 > cl) { ok = 0; break; }
            lr = vt__bt_g32(ch + c);
            lround = vt__bt_g32(ch + c + 4);
            lc = vt__bt_g32(ch + c + 8);
            if (lc > 2 * (uint32_t)p->n || c + 12 + 32 * (size_t)lc + 64 > cl || lround != k + 2 || lr >= (uint32_t)p->N ||
                (int)lr == p->mem[j] || (int)lr == p->mem[q] || !vt__bt_in_list(ch + c + 12, lc, d)) { ok = 0; break; }
            for (u = 0; u < k; u++) { /* relayers distinct: compare with the earlier links */
                size_t c2 = 0;
                uint32_t w;
                for (w = 0; w < u; w++) c2 += 12 + 32 * (size_t)vt__bt_g32(ch + c2 + 8) + 64;
                if (vt__bt_g32(ch + c2) == lr) ok = 0;
            }
            if (!ok) break;
            vt_sha256(ch + c + 12, 32 * (size_t)lc, lh);
            vt__bt_ds_sigmsg(p, x, (int)lround, (int)lr, lh, lm);
            if (!vt__bt_verify(p, (int)lr, lm, sizeof lm, ch + c + 12 + 32 * (size_t)lc)) ok = 0;
            c += 12 + 32 * (size_t)lc + 64;
        }
        if (!ok || c != cl) continue;
        vt_sha256(it + 128, il - 128, he);
        vt__bt_sigmsg_env(p, it, he, it + 96, sm);
        if (!vt__bt_verify(p, p->mem[j], sm, sizeof sm, it + 32)) continue;
        /* accepted: its chain is the old one and q's link */
        p->sb2.n = 0;
        vt__bt_add(&p->sb2, ch, cl);
        vt__bt_add32(&p->sb2, (uint32_t)p->mem[q]);
        vt__bt_add32(&p->sb2, (uint32_t)r);
        vt__bt_add32(&p->sb2, cnt);
        vt__bt_add(&p->sb2, list, 32 * (size_t)cnt);
        vt__bt_add(&p->sb2, sig, 64);
        vt__bt_ds_accept(p, j, it, il, p->sb2.p, p->sb2.n);
    }
}

typedef struct { int x, r; unsigned char *got; } vt__bt_dswait;

static int vt__bt_ds_left(vt_btard_peer *p, void *u) {
    vt__bt_dswait *w = (vt__bt_dswait *)u;
    int q, left = 0;
    for (q = 0; q < p->n; q++) {
        unsigned char *m;
        size_t n;
        if (q == p->me || !p->ds_active[q] || w->got[q]) continue;
        m = vt__bt_mb_take(p, p->mem[q], vt__bt_tag(p, VT__PH_DS, VT__BT_SUB(w->x, w->r)), &n);
        if (m) { vt__bt_ds_take(p, w->x, w->r, q, m, n); VT_FREE(m, NULL); w->got[q] = 1; continue; }
        /* it went on (without the slow path, or past this relay round without
           sending me its message): no more waiting for it (>>btard) */
        if (vt__bt_ahead(p, p->mem[q], VT__BT_PDS(w->x, w->r))) { p->ds_active[q] = 0; continue; }
        left++;
    }
    return left;
}

/* the echo that member j's one accepted relay item carries (32 n bytes:
   vt__bt_hdr_fits), or NULL: none, or two (its own equivocation) */
static const unsigned char *vt__bt_ds_echo(const vt_btard_peer *p, int j) {
    return p->ds_cnt[j] == 1 ? p->ds_item[j * 2].p + 128 : NULL;
}

/* The count rule on the agreed echoes for slot s of exchange y: its agreed
   digest into d (1), or 0 with the reason to ban its sender. f + 1 echoes
   include an honest one; an honest sender's envelope is in every honest
   echo (so at least n - f >= f + 1 of them), and no other envelope of it
   exists.
   Counted exactly, whatever the number of different digests: f + 1 >= n / 2
   of the at most n echoes is more than a third of them, and one pass that
   keeps two candidates (a digest that matches one adds to it, another takes
   a free one, else both lose one: Misra and Gries' frequent items) keeps
   every digest named by more than a third; a second pass counts the two.
   Before 0.2.5 a table of 64 digests dropped the 65th different digest and
   later ones: from n = 129 on, 64 Byzantines each naming another fake
   hid an honest envelope and had its sender banned as silent (test_btard_byz
   count_rule_counts_every_digest). */
static int vt__bt_count(vt_btard_peer *p, int s, unsigned char d[32], vt_btard_reason *why) {
    const unsigned char *cand[2] = {NULL, NULL}, *e;
    int j, k, cz = 0, c[2] = {0, 0}, best = -1;
    for (j = 0; j < p->n; j++) {
        if (!(e = vt__bt_ds_echo(p, j))) continue;
        e += 32 * (size_t)s;
        if (vt__bt_zero32(e)) { cz++; continue; }
        if (c[0] && !memcmp(cand[0], e, 32)) c[0]++;
        else if (c[1] && !memcmp(cand[1], e, 32)) c[1]++;
        else if (!c[0]) { cand[0] = e; c[0] = 1; }
        else if (!c[1]) { cand[1] = e; c[1] = 1; }
        else { c[0]--; c[1]--; }
    }
    if (cz >= p->f + 1) { *why = VT_BAN_SILENT; return 0; }
    for (k = 0; k < 2; k++) {
        if (!cand[k] || (k == 1 && cand[0] && !memcmp(cand[0], cand[1], 32))) continue;
        for (j = 0, c[k] = 0; j < p->n; j++) c[k] += (e = vt__bt_ds_echo(p, j)) != NULL && !memcmp(e + 32 * (size_t)s, cand[k], 32);
        if (c[k] < p->f + 1) continue;
        if (best >= 0) { *why = VT_BAN_EQUIVOCATION; return 0; }
        best = k;
    }
    if (best < 0) { *why = VT_BAN_SILENT; return 0; }
    memcpy(d, cand[best], 32);
    return 1;
}

/* The evidence the relays give me, published in my next envelope. Every
   relay item I accepted was checked, its signature included (vt__bt_ds_start,
   vt__bt_ds_take), so its summary is not checked again: [96 header and
   signature][32 H(echo)][32 H(rest)] from the item's [96][32 H(rest)][echo],
   the bytes vt__bt_summarize makes of the envelope. */
static void vt__bt_item_summary(const vt__bt_buf *it, unsigned char out[VT__BT_SUMMARY]) {
    memcpy(out, it->p, 96);
    vt_sha256(it->p + 128, it->n - 128, out + 96);
    memcpy(out + 128, it->p + 96, 32);
}
/* two signed echoes of one member: proof of its equivocation */
static void vt__bt_ds_proofs(vt_btard_peer *p) {
    int j;
    for (j = 0; j < p->n; j++)
        if (p->ds_cnt[j] == 2) {
            unsigned char pr[2 * VT__BT_SUMMARY];
            vt__bt_item_summary(&p->ds_item[j * 2], pr);
            vt__bt_item_summary(&p->ds_item[j * 2 + 1], pr + VT__BT_SUMMARY);
            vt__bt_add_proof(p, pr, pr + VT__BT_SUMMARY, 1);
        }
}
/* A member whose echo, as it reached me, is not the agreed view (of x - 1),
   in any slot, an empty one too: if it sent the others another envelope,
   they will prove it. Before 0.2.5 an empty slot was passed over, so an
   echo naming an envelope to some and nothing to the others (two signed
   envelopes) was never a proof (test_btard_byz signed_split_echo_is_a_proof).
   A suspect proves nothing by itself: an honest member that lacked an
   envelope signed one echo, and whoever holds its envelope holds that one,
   so no proof can come of it. Its one accepted item is the envelope I hold
   (vt__bt_ds_start made it the first; a second would make two). At most 32
   suspects, so that they leave room for proofs (64 items in all). */
static void vt__bt_ds_suspects(vt_btard_peer *p, int x, const unsigned char *agreed) {
    int j;
    for (j = 0; j < p->n && p->nevid < 32; j++) {
        const unsigned char *e = vt__bt_ds_echo(p, j);
        unsigned char sum[VT__BT_SUMMARY];
        if (j == p->me || !e || !VT__XENV(p, x, j) || !memcmp(e, agreed, 32 * (size_t)p->n)) continue;
        vt__bt_item_summary(&p->ds_item[j * 2], sum);
        if (vt__bt_add32(&p->evid, VT__BT_EV_SUSPECT) && vt__bt_add(&p->evid, sum, VT__BT_SUMMARY)) p->nevid++;
    }
}

typedef struct { int y; unsigned char *need; const unsigned char *want; int left; } vt__bt_fwait;
static int vt__bt_fetch_left(vt_btard_peer *p, void *u) {
    vt__bt_fwait *w = (vt__bt_fwait *)u;
    int s, q, left = 0;
    for (s = 0; s < p->n; s++) {
        if (!w->need[s]) continue;
        for (q = 0; q < p->N && w->need[s]; q++) {
            unsigned char *m, d[32];
            size_t n;
            while (w->need[s] && (m = vt__bt_mb_take(p, q, vt__bt_tag(p, VT__PH_FETCH, VT__BT_SUB(w->y, s)), &n)) != NULL) {
                vt_sha256(m, n, d);
                if (memcmp(d, w->want + 32 * (size_t)s, 32) || !vt__bt_env_direct(p, m, n, w->y, p->mem[s])) { VT_FREE(m, NULL); continue; }
                if (VT__XENV(p, w->y, s)) vt__bt_proof(p, VT__XENV(p, w->y, s), VT__XLEN(p, w->y, s), m, n);
                vt__bt_hold(p, w->y, s, m, n);
                p->st.fetched++;
                w->need[s] = 0;
            }
        }
        if (w->need[s]) left++;
    }
    w->left = left;
    return left;
}

/* The slow path for exchange y: f more relay rounds of the echoes carried
   by exchange y + 1, the count rule, then the envelopes I lack from those
   that hold them. 0, or -1 if this peer must stop.
   The relay rounds keep Dolev and Strong's lockstep: round r ends at
   start + (r - 1) timeout for everyone (no settling to an early finish), and
   a round waits for every member still relaying (no "moved on" rule: an
   honest relayer must be heard in every round, the last included). Those
   that went on without the slow path, or sent nothing last round, are not
   waited for (>>btard). */
static int vt__bt_slow(vt_btard_peer *p, int y) {
    int x = y + 1, r, s, j, bans0 = p->nbans;
    unsigned char *agreed = p->hs, *got = NULL, *need = NULL;
    vt__bt_dswait w;
    vt__bt_fwait fw;
    double start = vt_net_now();
    p->st.slow++;
    VT__BT_DBG(("%.3f peer %d step %lld rd %d: slow path of %d\n", vt_net_now(), p->rank, (long long)p->step, p->rd, y));
    vt__bt_event(p, VT_EV_SLOW, -1, -1, VT_BAN_SILENT, y);
    vt__bt_ds_start(p, x);
    got = (unsigned char *)VT_MALLOC((size_t)p->n + 1, NULL);
    need = (unsigned char *)VT_MALLOC((size_t)p->n + 1, NULL);
    if (!got || !need) { VT_FREE(got, NULL); VT_FREE(need, NULL); vt__bt_fail(p, VT_ERR_NOMEM, "out of memory"); return -1; }
    for (r = 2; r <= p->f + 1; r++) {
        p->st.ds_rounds++;
        vt__bt_ds_send(p, x, r);
        memset(got, 0, (size_t)p->n);
        w.x = x; w.r = r; w.got = got;
        if (vt__bt_wait(p, start + r * p->cfg.timeout, 0, vt__bt_ds_left, &w) < 0) {
            VT_FREE(got, NULL); VT_FREE(need, NULL);
            vt__bt_fail(p, VT_ERR_STATE, "peer %d: the transport closed", p->rank);
            return -1;
        }
        for (j = 0; j < p->n; j++) if (j != p->me && p->ds_active[j] && !got[j]) p->ds_active[j] = 0;
    }
    p->sched = start + (p->f + 1) * p->cfg.timeout;
    vt__bt_ds_proofs(p);
#ifdef VT__BT_DEBUG
    {
        char ln[512];
        int o = 0;
        for (j = 0; j < p->n; j++) o += snprintf(ln + o, sizeof ln - (size_t)o, "%d", p->ds_cnt[j]);
        o += snprintf(ln + o, sizeof ln - (size_t)o, " active ");
        for (j = 0; j < p->n; j++) o += snprintf(ln + o, sizeof ln - (size_t)o, "%d", p->ds_active[j]);
        VT__BT_DBG(("%.3f peer %d step %lld rd %d: slow %d items %s start %.3f\n", vt_net_now(), p->rank, (long long)p->step, p->rd, y, ln, start));
    }
#endif
    for (s = 0; s < p->n; s++) {
        vt_btard_reason why;
        if (!vt__bt_count(p, s, agreed + 32 * (size_t)s, &why)) { vt__bt_banp(p, s, why, -1); memset(agreed + 32 * (size_t)s, 0, 32); }
    }
    vt__bt_ds_suspects(p, x, agreed);
    if (p->nbans != bans0) { VT_FREE(got, NULL); VT_FREE(need, NULL); return 0; } /* the round starts again */
    /* fetch: who holds an agreed envelope sends it to each member whose echo differs */
    memset(need, 0, (size_t)p->n);
    for (s = 0; s < p->n; s++) {
        const unsigned char *d = agreed + 32 * (size_t)s;
        if (memcmp(VT__XDIG(p, y, s), d, 32)) { need[s] = 1; continue; }
        for (j = 0; j < p->n; j++)
            if (j != p->me && vt__bt_ds_echo(p, j) && memcmp(vt__bt_ds_echo(p, j) + 32 * (size_t)s, d, 32) &&
                !vt__bt_attacking(p, VT_ATTACK_SILENT))
                p->net->send(p->net, p->mem[j], vt__bt_tag(p, VT__PH_FETCH, VT__BT_SUB(y, s)), VT__XENV(p, y, s), VT__XLEN(p, y, s));
    }
    fw.y = y; fw.need = need; fw.want = agreed; fw.left = 0;
    if (vt__bt_wait(p, vt__bt_next(p, p->cfg.timeout), VT__BT_PFETCH(y), vt__bt_fetch_left, &fw) < 0) fw.left = -1;
    vt__bt_settle(p);
    VT_FREE(got, NULL);
    VT_FREE(need, NULL);
    if (fw.left) {
        vt__bt_fail(p, VT_ERR_STATE, "peer %d, step %lld: %d agreed envelopes of exchange %d never came from the peers that hold them "
                    "(more than half the swarm is not honest, or this peer is cut off)", p->rank, (long long)p->step, fw.left, y);
        return -1;
    }
    return 0;
}

/* Agree on exchange y with the echoes in exchange y + 1: if every echo I
   received is my view, my view is every honest peer's; else the slow path.
   Then every sender whose slot is empty in the agreed view is banned
   (silent: the honest peers agree it sent nothing). 0, or -1: stop. */
static int vt__bt_agree(vt_btard_peer *p, int y) {
    size_t el = 32 * (size_t)p->n; /* every echo held in y + 1 has it (vt__bt_hdr_fits) */
    int j, fast = 1;
    for (j = 0; j < p->n && fast; j++) {
        vt__bt_env e;
        if (j == p->me) continue;
        if (!VT__XENV(p, y + 1, j) || !vt__bt_env_parse(VT__XENV(p, y + 1, j), VT__XLEN(p, y + 1, j), &e) || memcmp(e.echo, VT__XDIG(p, y, 0), el))
            fast = 0;
    }
    if (!fast) return vt__bt_slow(p, y); /* the count rule banned, or every agreed envelope is here */
    for (j = 0; j < p->n; j++)
        if (!VT__XENV(p, y, j)) vt__bt_banp(p, j, VT_BAN_SILENT, -1);
    return 0;
}

/* the evidence in an agreed envelope of member j: each proof bans its
   signer, a proof that does not hold (or a malformed section) bans j; a
   suspect is checked against the envelope I hold for its slot */
static void vt__bt_judge_evidence(vt_btard_peer *p, int j, const vt__bt_env *e) {
    size_t i = 0;
    while (i < e->ev_len) {
        uint32_t type;
        const unsigned char *a;
        if (i + 4 > e->ev_len) { vt__bt_banp(p, j, VT_BAN_MALFORMED, -1); return; }
        type = vt__bt_g32(e->ev + i);
        a = e->ev + i + 4;
        if (type == VT__BT_EV_PROOF) {
            const unsigned char *b = a + VT__BT_SUMMARY;
            int who;
            if (i + 4 + 2 * VT__BT_SUMMARY > e->ev_len || memcmp(a, "BTE2", 4) || memcmp(a + 4, b + 4, 20) || !memcmp(a + 96, b + 96, 64) ||
                (who = (int)vt__bt_g32(a + 20)) >= p->N || who < 0 || !vt__bt_summary_ok(p, a) || !vt__bt_summary_ok(p, b)) {
                vt__bt_banp(p, j, VT_BAN_MALFORMED, -1);
                return;
            }
            vt__bt_ban(p, who, VT_BAN_EQUIVOCATION, p->mem[j]);
            i += 4 + 2 * VT__BT_SUMMARY;
        } else if (type == VT__BT_EV_SUSPECT) {
            const unsigned char *mine;
            size_t mn = 0;
            vt__bt_env me;
            if (i + 4 + VT__BT_SUMMARY > e->ev_len || memcmp(a, "BTE2", 4)) { vt__bt_banp(p, j, VT_BAN_MALFORMED, -1); return; }
            mine = vt__bt_held(p, (int64_t)vt__bt_g64(a + 4), (int)vt__bt_g32(a + 12), (int)vt__bt_g32(a + 16), (int)vt__bt_g32(a + 20), &mn);
            if (mine && vt__bt_env_parse(mine, mn, &me)) {
                unsigned char sum[VT__BT_SUMMARY];
                vt__bt_summarize(&me, sum);
                if (memcmp(sum, a, 4 + 20) == 0 && memcmp(sum + 96, a + 96, 64)) vt__bt_add_proof(p, sum, a, 0);
            }
            i += 4 + VT__BT_SUMMARY;
        } else { vt__bt_banp(p, j, VT_BAN_MALFORMED, -1); return; }
    }
}

/* ==========================================================================
   >>peer  the peer: roles, work, validation, the exchanges of a round (one
   function each, over the peer's round state), the update, creation
   ========================================================================== */

/* --- roles and partition ------------------------------------------------------------------ */

static void vt__bt_partition(vt_btard_peer *p) {
    int i;
    p->n = 0;
    for (i = 0; i < p->N; i++) {
        p->pos[i] = -1;
        p->memmask[i] = 0;
        if (vt__bt_member_at(p, i, p->step)) { p->pos[i] = p->n; p->mem[p->n++] = i; p->memmask[i] = i != p->rank; }
    }
    p->me = p->pos[p->rank];
    p->L = p->n ? (p->d + p->n - 1) / p->n : 0;
    p->f = p->n ? (p->n - 1) / 2 : 0;
}

/* validators of this step and their targets, from r(t-1) */
static void vt__bt_roles(vt_btard_peer *p) {
    int i, q, na, m;
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
            int v = p->mem[vt_shuffle(s1, 0, (uint64_t)q, (uint64_t)na)], nt = 0, t;
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

/* |x| with the four-lane sums of >>cclip */
static double vt__bt_norm(const float *x, int64_t L) {
    double q[4] = {0, 0, 0, 0};
    int64_t j;
    for (j = 0; j < L; j++) q[j & 3] += (double)x[j] * (double)x[j];
    return sqrt((q[0] + q[1]) + (q[2] + q[3]));
}

/* a worker's four scalars of one part against the aggregate a (see >>btard) */
static void vt__bt_scalars(const float *x, const float *a, int64_t L, int64_t off, const unsigned char r[32], double out[VT__BT_NSC]) {
    double nrm2;
    vt__bt_scalar(x, a, L, off, vt__bt_zseed(r, 1), &out[0], &out[2]);
    vt__bt_scalar(x, a, L, off, vt__bt_zseed(r, 2), &out[1], &nrm2);
    out[3] = vt__bt_norm(x, L);
}

/* Recompute target j's gradient of the previous step on the audit context
   with its chunk, and compare with what j published then. Everyone who runs
   this gets the same answer, on any machine, in any order. */
static int vt__bt_recheck(vt_btard_peer *p, int j, const unsigned char *ch, size_t n) {
    int pj = vt__bt_pv_pos(p, j), i, k;
    int64_t L = p->pv_L;
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
    for (k = 0; k < p->pv_n; k++) {
        double s[VT__BT_NSC];
        vt__bt_scalars(p->tmpf + k * L, p->pv_agg + k * L, L, k * L, p->pv_r, s);
        if (memcmp(s, p->pv_sc + ((size_t)pj * p->N + k) * VT__BT_NSC, sizeof s)) return VT__V_SCALARS;
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
    if (!att) return;
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
        for (k = 0; k < p->N; k++) na += vt__bt_member_at(p, k, p->step);
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

/* --- the validator's job ----------------------------------------------------------------- */

typedef struct { int from; unsigned char *m; size_t n; } vt__bt_one;
static int vt__bt_chunk_left(vt_btard_peer *p, void *u) {
    vt__bt_one *o = (vt__bt_one *)u;
    if (!o->m) o->m = vt__bt_mb_take(p, o->from, vt__bt_tag(p, VT__PH_CHUNK, 0), &o->n);
    return o->m ? 0 : 1;
}

static void vt__bt_validate(vt_btard_peer *p) {
    int q, j = -1, pj;
    unsigned char h[32];
    vt__bt_one o;
    double t0 = vt_net_now();
    for (q = 0; q < p->nvp; q++) if (p->vv[q] == p->rank) j = p->vtg[q];
    p->vcode = VT__V_OK;
    if (j < 0) return;
    p->st.validations++;
    pj = vt__bt_pv_pos(p, j);
    o.from = j; o.m = NULL; o.n = 0;
    vt__bt_wait(p, p->sched + p->cfg.timeout, 1, vt__bt_chunk_left, &o);
    if (!o.m) p->vcode = VT__V_NOCHUNK;
    else {
        vt_sha256(o.m, o.n, h);
        if (pj < 0 || o.n > p->cfg.max_chunk || memcmp(h, p->pv_chunk + (size_t)pj * 32, 32)) p->vcode = VT__V_BADCHUNK;
        else p->vcode = vt__bt_recheck(p, j, o.m, o.n);
        vt_net_free(o.m);
    }
    /* attackers collude: they never accuse; false_accuse always does */
    if (p->atk.kind == VT_ATTACK_FALSE_ACCUSE && vt_btard_attacking(&p->atk, p->step)) p->vcode = VT__V_GRADIENT;
    else if (p->atk.kind != VT_ATTACK_NONE) p->vcode = VT__V_OK;
    p->st.t_validate += vt_net_now() - t0;
}

/* --- contents: what each exchange carries (formats in >>btard) ------------------------------- */

#define VT__BT_M_COMMIT 0x32435442u  /* "BTC2" */
#define VT__BT_M_AGG 0x32415442u     /* "BTA2" */
#define VT__BT_M_REVEAL 0x32525442u  /* "BTR2" */
#define VT__BT_M_SCAL 0x32535442u    /* "BTS2" */
#define VT__BT_M_AUDIT 0x32555442u   /* "BTU2" */

static void vt__bt_garbage(const vt_btard_peer *p, unsigned char *b, size_t n, uint64_t salt) {
    size_t i;
    for (i = 0; i < n; i++) b[i] = (unsigned char)(vt_rng_u64(p->atk.seed ^ salt, (uint64_t)p->step, i / 8) >> (8 * (i % 8)));
}

static void vt__bt_mprng_commit(const vt_btard_peer *p, int rank, const unsigned char x[32], unsigned char out[32]) {
    unsigned char b[16];
    vt_sha256_ctx s;
    vt_sha256_init(&s);
    vt_sha256_update(&s, "vt-btard-mprng2", 15);
    vt_sha256_update(&s, p->session, 32);
    vt__bt_p64(b, (uint64_t)p->step);
    vt__bt_p32(b + 8, (uint32_t)p->rd);
    vt__bt_p32(b + 12, (uint32_t)rank);
    vt_sha256_update(&s, b, 16);
    vt_sha256_update(&s, x, 32);
    vt_sha256_final(&s, out);
}

/* a fresh secret for this round: from the OS, or (INSECURE, for
   reproducible tests) from cfg.secret_seed */
static void vt__bt_secret(vt_btard_peer *p) {
    if (!p->cfg.secret_seed) { vt__bt_os_random(p->x_mine, 32); return; }
    {
        unsigned char b[32];
        int i;
        for (i = 0; i < 4; i++) vt__bt_p64(b + 8 * i, vt_rng_u64(p->cfg.secret_seed, 0x5ec7e7u + (uint64_t)p->rank, p->secret_ctr * 4 + (uint64_t)i));
        p->secret_ctr++;
        vt_sha256(b, 32, p->x_mine);
    }
}

/* COMMIT: [magic][worker][n][verdict target][verdict code][weights digest]
   [MPRNG commitment][chunk hash][n part hashes, if a worker] */
static int vt__bt_mk_commit(vt_btard_peer *p, vt__bt_buf *b) {
    int vt = -1, vc = 0, q;
    unsigned char c[32];
    b->n = 0;
    if (p->val[p->rank] && !p->acc_done)
        for (q = 0; q < p->nvp; q++) if (p->vv[q] == p->rank) { vt = p->vtg[q]; vc = p->vcode; }
    vt__bt_secret(p);
    vt__bt_mprng_commit(p, p->rank, p->x_mine, c);
    vt__bt_add32(b, VT__BT_M_COMMIT);
    vt__bt_add32(b, (uint32_t)p->worker);
    vt__bt_add32(b, (uint32_t)p->n);
    vt__bt_add32(b, (uint32_t)vt);
    vt__bt_add32(b, (uint32_t)vc);
    vt__bt_add(b, p->wdig, 32);
    vt__bt_add(b, c, 32);
    if (p->worker) {
        vt__bt_add(b, p->chunk_sha, 32);
        vt__bt_hash_parts(p->gp, p->n, p->L, p->hs);
        vt__bt_add(b, p->hs, 32 * (size_t)p->n);
    } else {
        memset(c, 0, 32);
        vt__bt_add(b, c, 32); /* a validator commits to no chunk */
    }
    if (vt__bt_attacking(p, VT_ATTACK_GARBAGE_COMMIT)) vt__bt_garbage(p, b->p, b->n, 77);
    return 1;
}

/* a worker's parts to their aggregators (after every COMMIT came: the barrier) */
static void vt__bt_send_parts(vt_btard_peer *p) {
    int k;
    size_t sz = 4 * (size_t)p->L;
    if (!p->worker || vt__bt_attacking(p, VT_ATTACK_SILENT)) return;
    for (k = 0; k < p->n; k++) {
        unsigned char *b;
        int to = p->mem[k];
        if (k == p->me) continue;
        if (vt__bt_attacking(p, VT_ATTACK_WITHHOLD_PART) && to == vt__bt_victim(p)) continue;
        b = (unsigned char *)VT_MALLOC(sz + 8, NULL);
        if (!b) return;
        vt__bt_f2le(p->gp + k * p->L, p->L, b);
        if (vt__bt_attacking(p, VT_ATTACK_GARBAGE)) vt__bt_garbage(p, b, sz, (uint64_t)k);
        if (vt__bt_attacking(p, VT_ATTACK_WRONG_SIZE)) memset(b + sz, 0, 4);
        p->net->send(p->net, to, vt__bt_tag(p, VT__PH_PART, k), b, sz + (vt__bt_attacking(p, VT_ATTACK_WRONG_SIZE) ? 4 : 0));
        VT_FREE(b, NULL);
    }
}

/* gather the parts of my position from the workers: rows[w * L], recvd[w] */
static int vt__bt_parts_left(vt_btard_peer *p, void *u) {
    int w, left = 0;
    (void)u;
    for (w = 0; w < p->n; w++) {
        unsigned char *m;
        size_t n;
        if (w == p->me || p->val[p->mem[w]] || p->recvd[w]) continue;
        m = vt__bt_mb_take(p, p->mem[w], vt__bt_tag(p, VT__PH_PART, p->me), &n);
        if (!m) { left++; continue; }
        if (n == 4 * (size_t)p->L) { vt__bt_le2f(m, p->L, p->rows + w * p->L); p->recvd[w] = 1; }
        else p->recvd[w] = 2; /* a wrong size: no part */
        VT_FREE(m, NULL);
    }
    return left;
}

/* AGG: [magic][n][n codes][aggregate 4L][the parts it says are not finite,
   4L each, in worker order]. The aggregate is the CenteredClip of the parts
   that match their agreed commitments (code 1); code 0: missing or
   mismatched; code 2: matched and not finite (the part rides along, pinned by
   its owner's hash, as the evidence). */
static int vt__bt_mk_agg(vt_btard_peer *p, vt__bt_buf *b) {
    int w, nr = 0;
    int64_t L = p->L, j;
    const float **rp = (const float **)VT_MALLOC(sizeof(float *) * (size_t)p->n + 1, NULL);
    unsigned char *code = p->a_inc + (size_t)p->me * p->N, h[32];
    float *out = p->agg + p->me * L;
    vt_cclip_info info;
    double t0 = vt_net_now();
    if (!rp) return 0;
    for (w = 0; w < p->n; w++) {
        const unsigned char *ch;
        code[w] = 0;
        if (!p->c_has[w]) continue;
        if (w == p->me) { memcpy(p->rows + w * L, p->gp + p->me * L, sizeof(float) * (size_t)L); code[w] = 1; }
        else {
            if (p->recvd[w] != 1) continue;
            ch = p->c_parts + ((size_t)w * p->N + p->me) * 32;
            vt__bt_hash_f32(p->rows + w * L, L, h);
            if (memcmp(h, ch, 32)) continue;
            code[w] = vt__bt_finite(p->rows + w * L, L) ? 1 : 2;
        }
        if (code[w] == 1) rp[nr++] = p->rows + w * L;
    }
    vt_centered_clip(rp, nr, L, p->cfg.tau, p->cfg.cc_iters, p->cfg.cc_eps, out, &info);
    VT_FREE((void *)rp, NULL);
    p->st.cc_calls++;
    p->st.cc_iters += info.iters;
    if (info.iters > p->st.cc_iters_max) p->st.cc_iters_max = info.iters;
    if (vt__bt_attacking(p, VT_ATTACK_LYING_AGGREGATOR))
        for (j = 0; j < L; j++) out[j] = (float)(p->atk.scale * out[j]);
    if (vt__bt_attacking(p, VT_ATTACK_SPIKE)) /* a spike of norm `scale`, signs alternating */
        for (j = 0; j < L; j++) out[j] = (float)(out[j] + (j % 2 ? -1 : 1) * p->atk.scale / sqrt((double)L));
    b->n = 0;
    vt__bt_add32(b, VT__BT_M_AGG);
    vt__bt_add32(b, (uint32_t)p->n);
    vt__bt_add(b, code, (size_t)p->n);
    if (!vt__bt_reserve(b, b->n + 4 * (size_t)L * (size_t)(p->n + 1))) return 0;
    vt__bt_f2le(out, L, b->p + b->n);
    b->n += 4 * (size_t)L;
    for (w = 0; w < p->n; w++)
        if (code[w] == 2) { vt__bt_f2le(p->rows + w * L, L, b->p + b->n); b->n += 4 * (size_t)L; }
    p->st.t_aggregate += vt_net_now() - t0;
    return 1;
}

static int vt__bt_key_taken(const vt_btard_peer *p, const unsigned char *pk); /* joining, below */
/* where newcomer r's probation work of step t is kept: its slot, holding
   that work or nothing (NULL: the slot holds another step's) */
static vt__bt_buf *vt__bt_probe_of(vt_btard_peer *p, int r, int64_t t) {
    vt__bt_buf *q = &p->probe[2 * (size_t)r + (size_t)(t & 1)];
    if (q->n && (int64_t)vt__bt_g64(q->p + 8) < p->step) q->n = 0; /* an old one: the slot is free */
    return !q->n || (int64_t)vt__bt_g64(q->p + 8) == t ? q : NULL;
}
static int vt__bt_probe_held(vt_btard_peer *p, int r, int64_t t) {
    const vt__bt_buf *q = vt__bt_probe_of(p, r, t);
    return q && q->n;
}
/* newcomers in probation whose work of this step I lack */
static int vt__bt_probes_left(vt_btard_peer *p, void *u) {
    int r, left = 0;
    (void)u;
    for (r = 0; r < p->N; r++)
        left += vt__bt_on_probation(p, r, p->step) && !vt__bt_probe_held(p, r, p->step);
    return left;
}
/* The carried section of my REVEAL (>>btard: JOINING): [u32 count] then
   [u32 length][message] for each open slot's join request of this step and
   each newcomer's probation work of this step that I hold. The work is
   waited for first as any message is: until f + 1 members have moved on
   (a grace later), at most until the deadline of this step's COMMIT. */
static void vt__bt_carry(vt_btard_peer *p, vt__bt_buf *b) {
    int r, cnt = 0;
    size_t at = b->n;
    if (vt__bt_probes_left(p, NULL)) { /* the exchange's deadline then runs from the end of this wait, the same moment on every honest member */
        vt__bt_wait(p, p->t_step0 + p->cfg.compute_timeout + 2 * p->cfg.timeout, VT__BT_PENV(VT__K_REVEAL) - 1, vt__bt_probes_left, NULL);
        if (vt_net_now() > p->sched) p->sched = vt_net_now();
    }
    vt__bt_add32(b, 0);
    for (r = 0; r < p->N; r++) {
        const vt__bt_buf *q = NULL;
        if (p->joined[r] < 0 && p->alive[r] && p->jreq[r].n && (int64_t)vt__bt_g64(p->jreq[r].p + 8) == p->step &&
            !vt__bt_key_taken(p, p->jreq[r].p + 16))
            q = &p->jreq[r];
        if (vt__bt_on_probation(p, r, p->step) && vt__bt_probe_held(p, r, p->step)) q = vt__bt_probe_of(p, r, p->step);
        if (!q) continue;
        vt__bt_add32(b, (uint32_t)q->n);
        vt__bt_add(b, q->p, q->n);
        cnt++;
    }
    vt__bt_p32(b->p + at, (uint32_t)cnt);
}

/* REVEAL: [magic][secret 32][u32 chunk length][my chunk of the previous
   step, if I stand accused][carried: see vt__bt_carry] */
static int vt__bt_mk_reveal(vt_btard_peer *p, vt__bt_buf *b) {
    int i, accused = 0;
    b->n = 0;
    vt__bt_add32(b, VT__BT_M_REVEAL);
    vt__bt_add(b, p->x_mine, 32);
    if (vt__bt_attacking(p, VT_ATTACK_WRONG_REVEAL)) b->p[4] ^= 0x5a;
    if (vt__bt_attacking(p, VT_ATTACK_WITHHOLD_REVEAL)) memset(b->p + 4, 0, 32);
    for (i = 0; i < p->n; i++) if (p->c_vt[i] == p->rank && p->c_vc[i] != VT__V_OK) accused = 1;
    if (accused && !p->acc_done) {
        vt__bt_add32(b, (uint32_t)p->chunk_prev.n);
        vt__bt_add(b, p->chunk_prev.p, p->chunk_prev.n);
    } else vt__bt_add32(b, 0);
    vt__bt_carry(p, b);
    return 1;
}

/* the shared randomness of the round: H(session, step, round, the secrets in position order) */
static void vt__bt_draw_r(vt_btard_peer *p) {
    vt_sha256_ctx s;
    unsigned char b[12];
    vt_sha256_init(&s);
    vt_sha256_update(&s, "vt-btard-r2", 11);
    vt_sha256_update(&s, p->session, 32);
    vt__bt_p64(b, (uint64_t)p->step);
    vt__bt_p32(b + 8, (uint32_t)p->rd);
    vt_sha256_update(&s, b, 12);
    vt_sha256_update(&s, p->r_x, 32 * (size_t)p->n);
    vt_sha256_final(&s, p->r);
}

/* SCALARS (and FIN): [magic][n][state: 0 none, 1 scalars, 2 later]
   [n * 4 binary64: <z1, g_k - a_k>, <z2, g_k - a_k>, |g_k - a_k|, |g_k|]
   [n bytes: 1 = I ask for an audit of part k] */
static void vt__bt_scalar_content(vt_btard_peer *p, vt__bt_buf *b, int state) {
    int k;
    b->n = 0;
    vt__bt_add32(b, VT__BT_M_SCAL);
    vt__bt_add32(b, (uint32_t)p->n);
    vt__bt_add32(b, (uint32_t)state);
    if (state != 1) return;
    for (k = 0; k < p->n; k++) {
        double *o = p->sc + ((size_t)p->me * p->N + k) * VT__BT_NSC;
        vt__bt_scalars(p->gp + k * p->L, p->agg + k * p->L, p->L, k * p->L, p->r, o);
        vt__bt_addf64(b, o[0]); vt__bt_addf64(b, o[1]); vt__bt_addf64(b, o[2]); vt__bt_addf64(b, o[3]);
    }
    for (k = 0; k < p->n; k++) {
        const double *o = p->sc + ((size_t)p->me * p->N + k) * VT__BT_NSC;
        unsigned char q = (unsigned char)(o[2] > p->cfg.kappa * (o[3] + p->cfg.tau) || vt__bt_attacking(p, VT_ATTACK_FALSE_AUDIT));
        vt__bt_add(b, &q, 1);
    }
}

/* my view of the reveals, if it is whole and every one opens its commitment: r */
static int vt__bt_view_r(vt_btard_peer *p) {
    int j;
    for (j = 0; j < p->n; j++) {
        vt__bt_env e;
        unsigned char h[32];
        if (!VT__XENV(p, VT__K_REVEAL, j) || !vt__bt_env_parse(VT__XENV(p, VT__K_REVEAL, j), VT__XLEN(p, VT__K_REVEAL, j), &e) || e.content_len < 40 ||
            vt__bt_g32(e.content) != VT__BT_M_REVEAL)
            return 0;
        vt__bt_mprng_commit(p, p->mem[j], e.content + 4, h);
        if (memcmp(h, p->c_mprng + 32 * (size_t)j, 32)) return 0;
        memcpy(p->r_x + 32 * (size_t)j, e.content + 4, 32);
    }
    vt__bt_draw_r(p);
    return 1;
}

static int vt__bt_mk_scalars(vt_btard_peer *p, vt__bt_buf *b) {
    double t0 = vt_net_now();
    p->mypend = 0;
    if (!p->worker) { vt__bt_scalar_content(p, b, 0); return 1; }
    if (!vt__bt_view_r(p)) { p->mypend = 1; vt__bt_scalar_content(p, b, 2); return 1; } /* after the agreement on the reveals */
    vt__bt_scalar_content(p, b, 1);
    p->st.t_aggregate += vt_net_now() - t0;
    return 1;
}
static int vt__bt_mk_fin(vt_btard_peer *p, vt__bt_buf *b) {
    vt__bt_scalar_content(p, b, p->mypend ? 1 : 0);
    return 1;
}
static int vt__bt_mk_empty(vt_btard_peer *p, vt__bt_buf *b) {
    vt__bt_scalar_content(p, b, 0);
    return 1;
}
/* AUDIT: [magic][count][my copy of each audited part, in part order, if a worker] */
static int vt__bt_mk_audit(vt_btard_peer *p, vt__bt_buf *b) {
    int k, cnt = 0;
    b->n = 0;
    vt__bt_add32(b, VT__BT_M_AUDIT);
    for (k = 0; k < p->n; k++) cnt += p->audit[k];
    vt__bt_add32(b, p->worker ? (uint32_t)cnt : 0);
    if (!p->worker) return 1;
    if (!vt__bt_reserve(b, b->n + 4 * (size_t)p->L * (size_t)cnt + 1)) return 0;
    for (k = 0; k < p->n; k++)
        if (p->audit[k]) {
            vt__bt_f2le(p->gp + k * p->L, p->L, b->p + b->n);
            if (vt__bt_attacking(p, VT_ATTACK_GARBAGE)) vt__bt_garbage(p, b->p + b->n, 4 * (size_t)p->L, 91);
            b->n += 4 * (size_t)p->L;
        }
    if (vt__bt_attacking(p, VT_ATTACK_WRONG_SIZE)) vt__bt_add32(b, 0); /* its parts are 4 bytes too long wherever it sends them */
    return 1;
}

/* --- judges: what the agreed envelopes of an exchange decide ------------------------------- */

/* the agreed envelope of member j in exchange y (0: none) */
static int vt__bt_agreed(vt_btard_peer *p, int y, int j, vt__bt_env *e) {
    return VT__XENV(p, y, j) && vt__bt_env_parse(VT__XENV(p, y, j), VT__XLEN(p, y, j), e);
}

static void vt__bt_judge_commit(vt_btard_peer *p) {
    int j, N = p->N;
    for (j = 0; j < p->n; j++) {
        vt__bt_env e;
        const unsigned char *m;
        int r = p->mem[j], has = !p->val[r], vt;
        uint32_t vc;
        p->c_has[j] = 0;
        p->c_vt[j] = -1;
        p->c_vc[j] = 0;
        if (!vt__bt_agreed(p, VT__K_COMMIT, j, &e)) continue;
        m = e.content;
        if (e.content_len < 116 || vt__bt_g32(m) != VT__BT_M_COMMIT || vt__bt_g32(m + 8) != (uint32_t)p->n || vt__bt_g32(m + 4) > 1 ||
            e.content_len != 116 + (vt__bt_g32(m + 4) ? 32 * (size_t)p->n : 0)) {
            vt__bt_ban(p, r, VT_BAN_MALFORMED, -1);
            continue;
        }
        if ((int)vt__bt_g32(m + 4) != has) { vt__bt_ban(p, r, VT_BAN_ROLE, -1); continue; }
        if (memcmp(m + 20, p->wdig, 32)) { vt__bt_ban(p, r, VT_BAN_WEIGHTS, -1); continue; }
        vt = (int)vt__bt_g32(m + 12);
        vc = vt__bt_g32(m + 16);
        if (!p->acc_done) {
            int q, want = -1;
            for (q = 0; q < p->nvp; q++) if (p->vv[q] == r) want = p->vtg[q];
            if (vt != want || vc > VT__V_SCALARS || (want < 0 && vc != 0)) { vt__bt_ban(p, r, VT_BAN_ROLE, -1); continue; }
            p->c_vt[j] = vt;
            p->c_vc[j] = (int)vc;
        } else if (vt != -1 || vc != 0) { vt__bt_ban(p, r, VT_BAN_ROLE, -1); continue; }
        memcpy(p->c_mprng + (size_t)j * 32, m + 52, 32);
        p->c_has[j] = (unsigned char)has;
        if (has) {
            memcpy(p->c_chunk + (size_t)j * 32, m + 84, 32);
            memcpy(p->c_parts + (size_t)j * N * 32, m + 116, 32 * (size_t)p->n);
        }
    }
    for (j = 0; j < p->n; j++)
        if (p->c_vc[j] != VT__V_OK) { vt__bt_event(p, VT_EV_ACCUSE, p->c_vt[j], p->mem[j], VT_BAN_GRADIENT, 0); p->st.accusations++; }
}

static void vt__bt_judge_agg(vt_btard_peer *p) {
    int a, w, N = p->N;
    int64_t L = p->L;
    for (a = 0; a < p->n; a++) {
        vt__bt_env e;
        const unsigned char *m;
        size_t want;
        int n2 = 0, bad = 0;
        if (!vt__bt_agreed(p, VT__K_AGG, a, &e)) continue;
        m = e.content;
        if (e.content_len < 8 + (size_t)p->n || vt__bt_g32(m) != VT__BT_M_AGG || vt__bt_g32(m + 4) != (uint32_t)p->n) {
            vt__bt_banp(p, a, VT_BAN_MALFORMED, -1);
            continue;
        }
        for (w = 0; w < p->n; w++) {
            unsigned char c = m[8 + w];
            if (c > 2 || (c && !p->c_has[w])) bad = 1;
            n2 += c == 2;
        }
        want = 8 + (size_t)p->n + 4 * (size_t)L * (size_t)(1 + n2);
        if (bad || e.content_len != want) { vt__bt_banp(p, a, VT_BAN_MALFORMED, -1); continue; }
        memcpy(p->a_inc + (size_t)a * N, m + 8, (size_t)p->n);
        vt__bt_le2f(m + 8 + p->n, L, p->agg + a * L);
        if (!vt__bt_finite(p->agg + a * L, L)) { vt__bt_banp(p, a, VT_BAN_AGGREGATE, -1); continue; }
        /* each part it says is not finite: pinned by its owner's hash */
        {
            const unsigned char *q = m + 8 + p->n + 4 * (size_t)L;
            for (w = 0; w < p->n; w++) {
                unsigned char h[32];
                if (m[8 + w] != 2) continue;
                vt_sha256(q, 4 * (size_t)L, h);
                vt__bt_le2f(q, L, p->tmpf);
                if (!memcmp(h, p->c_parts + ((size_t)w * N + a) * 32, 32) && !vt__bt_finite(p->tmpf, L))
                    vt__bt_banp(p, w, VT_BAN_NONFINITE, p->mem[a]);
                else vt__bt_banp(p, a, VT_BAN_FALSE_CLAIM, -1);
                q += 4 * (size_t)L;
            }
        }
    }
}

static int vt__bt_carried_ok(vt_btard_peer *p, const unsigned char *c, size_t n, size_t at); /* joining, below */
/* REVEAL: the secrets open their commitments; accusations are answered by
   the accused's chunk (in its REVEAL) and re-executed by everyone */
static void vt__bt_judge_reveal(vt_btard_peer *p) {
    int j, bans0 = p->nbans;
    for (j = 0; j < p->n; j++) {
        vt__bt_env e;
        unsigned char h[32];
        if (!vt__bt_agreed(p, VT__K_REVEAL, j, &e)) continue;
        if (e.content_len < 44 || vt__bt_g32(e.content) != VT__BT_M_REVEAL || (size_t)vt__bt_g32(e.content + 36) > e.content_len - 44 ||
            !vt__bt_carried_ok(p, e.content, e.content_len, 40 + (size_t)vt__bt_g32(e.content + 36))) {
            vt__bt_banp(p, j, VT_BAN_MALFORMED, -1);
            continue;
        }
        vt__bt_mprng_commit(p, p->mem[j], e.content + 4, h);
        if (memcmp(h, p->c_mprng + 32 * (size_t)j, 32)) { vt__bt_banp(p, j, VT_BAN_REVEAL, -1); continue; }
        memcpy(p->r_x + 32 * (size_t)j, e.content + 4, 32);
    }
    if (p->nbans != bans0) return;
    vt__bt_draw_r(p);
    if (p->acc_done) return;
    /* accusations: every accused j re-executed once, by everyone */
    for (j = 0; j < p->n; j++) {
        int v, accused = 0, res, pj = vt__bt_pv_pos(p, p->mem[j]);
        vt__bt_env e;
        const unsigned char *ch;
        size_t cn;
        unsigned char h[32];
        for (v = 0; v < p->n; v++) if (p->c_vt[v] == p->mem[j] && p->c_vc[v] != VT__V_OK) accused = 1;
        if (!accused || !vt__bt_env_parse(VT__XENV(p, VT__K_REVEAL, j), VT__XLEN(p, VT__K_REVEAL, j), &e)) continue;
        ch = e.content + 40;
        cn = vt__bt_g32(e.content + 36);
        vt_sha256(ch, cn, h);
        if (!cn || pj < 0 || cn > p->cfg.max_chunk || memcmp(h, p->pv_chunk + (size_t)pj * 32, 32)) { vt__bt_banp(p, j, VT_BAN_CHUNK, -1); continue; }
        res = vt__bt_recheck(p, p->mem[j], ch, cn);
        p->reexec = 1;
        if (res != VT__V_OK) { vt__bt_banp(p, j, res == VT__V_SCALARS ? VT_BAN_SCALARS : VT_BAN_GRADIENT, -1); continue; }
        /* it recomputes exactly: a validator that said it did not is wrong ("I got no chunk" cannot be proven either way) */
        for (v = 0; v < p->n; v++)
            if (p->c_vt[v] == p->mem[j] && (p->c_vc[v] == VT__V_GRADIENT || p->c_vc[v] == VT__V_SCALARS))
                vt__bt_banp(p, v, VT_BAN_FALSE_ACCUSATION, -1);
    }
    p->acc_done = 1;
}

/* the scalars of member w from an agreed SCALARS or FIN envelope: its state */
static int vt__bt_take_scalars(vt_btard_peer *p, int y, int w) {
    vt__bt_env e;
    const unsigned char *m;
    int k, st;
    if (!vt__bt_agreed(p, y, w, &e)) return -1;
    m = e.content;
    if (e.content_len < 12 || vt__bt_g32(m) != VT__BT_M_SCAL || vt__bt_g32(m + 4) != (uint32_t)p->n || vt__bt_g32(m + 8) > 2) {
        vt__bt_banp(p, w, VT_BAN_MALFORMED, -1);
        return -1;
    }
    st = (int)vt__bt_g32(m + 8);
    if (st != 1) return e.content_len == 12 ? st : (vt__bt_banp(p, w, VT_BAN_MALFORMED, -1), -1);
    if (e.content_len != 12 + (size_t)p->n * (8 * VT__BT_NSC + 1)) { vt__bt_banp(p, w, VT_BAN_MALFORMED, -1); return -1; }
    for (k = 0; k < p->n; k++) {
        double *o = p->sc + ((size_t)w * p->N + k) * VT__BT_NSC;
        int i;
        for (i = 0; i < VT__BT_NSC; i++) o[i] = vt__bt_gf64(m + 12 + 8 * (VT__BT_NSC * (size_t)k + (size_t)i));
        p->areq[(size_t)w * p->N + k] = m[12 + 8 * VT__BT_NSC * (size_t)p->n + k];
        /* |<z, x>| <= sqrt(L) |x| for z = +-1, up to the binary64 rounding of both */
        if (!(o[0] - o[0] == 0) || !(o[1] - o[1] == 0) || !(o[2] - o[2] == 0) || !(o[3] - o[3] == 0) || o[2] < 0 || o[3] < 0 ||
            p->areq[(size_t)w * p->N + k] > 1 ||
            fabs(o[0]) > sqrt((double)p->L) * o[2] * (1 + (double)(p->L + 4) * 0x1p-50) + 1e-300 ||
            fabs(o[1]) > sqrt((double)p->L) * o[2] * (1 + (double)(p->L + 4) * 0x1p-50) + 1e-300) {
            vt__bt_banp(p, w, VT_BAN_MALFORMED, -1);
            return -1;
        }
    }
    return 1;
}

/* The check of part k (>>btard): for both projections,
   |sum_w c_w s_w| <= lambda (2.02 m eps tau + 1.01 * 2^-24 (sum_w c_w) |a_k|)
   + the binary64 rounding of the scalars, c_w = min(1, tau / |g_w - a_k|);
   a worker's own request for an audit also fails it. */
static int vt__bt_check_part(const vt_btard_peer *p, int k) {
    double S[2] = {0, 0}, sc = 0, slack = 0, tol, an, tau = p->cfg.tau;
    int w, m = 0, i;
    for (w = 0; w < p->n; w++) {
        const double *o = p->sc + ((size_t)w * p->N + k) * VT__BT_NSC;
        double c;
        if (!p->c_has[w]) continue;
        if (p->areq[(size_t)w * p->N + k]) return 0;
        c = o[2] <= tau ? 1.0 : tau / o[2];
        S[0] += c * o[0];
        S[1] += c * o[1];
        sc += c;
        slack += c * o[2];
        m++;
    }
    an = vt__bt_norm(p->agg + k * p->L, p->L);
    tol = p->cfg.lambda * (2.02 * m * p->cfg.cc_eps * tau + 1.01 * 0x1p-24 * sc * an) +
          (double)(p->L + 4) * 0x1p-50 * sqrt((double)p->L) * slack + 1e-300;
    for (i = 0; i < 2; i++) if (!(fabs(S[i]) <= tol)) return 0;
    return 1;
}

/* after every scalar is agreed: the checks, and the audits they call for */
static void vt__bt_check(vt_btard_peer *p) {
    int k, any = 0;
    memcpy(p->fin, p->agg, sizeof(float) * (size_t)(p->n * p->L));
    for (k = 0; k < p->n; k++) {
        p->audit[k] = !vt__bt_check_part(p, k);
        if (p->audit[k]) { any = 1; vt__bt_event(p, VT_EV_AUDIT, p->mem[k], -1, VT_BAN_AGGREGATE, 0); p->st.audits++; }
    }
    if (any && p->nx + 2 < VT__BT_XMAX) {
        p->kind[++p->nx] = VT__K_AUDIT;
        p->kind[++p->nx] = VT__K_AEND;
    }
}

static void vt__bt_judge_scalars(vt_btard_peer *p) {
    int w, any = 0;
    for (w = 0; w < p->n; w++) {
        int st = vt__bt_take_scalars(p, VT__K_SCALARS, w);
        p->pend[w] = 0;
        if (st < 0) continue;
        if (st != (p->c_has[w] ? 1 : 0) && !(st == 2 && p->c_has[w])) { vt__bt_banp(p, w, VT_BAN_ROLE, -1); continue; }
        if (st == 2) { p->pend[w] = 1; any = 1; }
    }
    if (any) { /* FIN carries their scalars; FIN2 carries the echoes that agree on FIN */
        if (p->nx + 1 < VT__BT_XMAX) p->kind[++p->nx] = VT__K_FIN2;
        return;
    }
    vt__bt_check(p);
}

static void vt__bt_judge_fin(vt_btard_peer *p) {
    int w;
    for (w = 0; w < p->n; w++) {
        int st;
        if (!p->pend[w]) continue;
        st = vt__bt_take_scalars(p, VT__K_FIN, w);
        if (st >= 0 && st != 1) vt__bt_banp(p, w, VT_BAN_SILENT, -1); /* it owed its scalars */
    }
    vt__bt_check(p);
}

/* The audit: every worker published its copy of each audited part. A part
   that is not its owner's commitment bans the owner; an aggregate that is not
   the CenteredClip of the parts its aggregator said it used bans the
   aggregator; scalars that do not recompute ban their worker; an audit asked
   for untruly bans who asked. Without a ban, the part's aggregate becomes the
   CenteredClip of every published part. */
static void vt__bt_judge_audit(vt_btard_peer *p, int y) {
    int w, k, N = p->N, bans0 = p->nbans, na = 0;
    int64_t L = p->L;
    float *pub = NULL, *cc = NULL;
    const float **rp = NULL;
    for (k = 0; k < p->n; k++) na += p->audit[k];
    pub = (float *)VT_MALLOC(sizeof(float) * (size_t)p->n * (size_t)na * (size_t)(L ? L : 1) + 1, NULL);
    cc = (float *)VT_MALLOC(sizeof(float) * (size_t)(L ? L : 1), NULL);
    rp = (const float **)VT_MALLOC(sizeof(float *) * (size_t)p->n + 1, NULL);
    if (!pub || !cc || !rp) { VT_FREE(pub, NULL); VT_FREE(cc, NULL); VT_FREE((void *)rp, NULL); vt__bt_fail(p, VT_ERR_NOMEM, "out of memory"); return; }
    for (w = 0; w < p->n; w++) {
        vt__bt_env e;
        int i = 0;
        if (!p->c_has[w]) continue;
        if (!vt__bt_agreed(p, y, w, &e)) continue;
        if (e.content_len != 8 + 4 * (size_t)L * (size_t)na || vt__bt_g32(e.content) != VT__BT_M_AUDIT || vt__bt_g32(e.content + 4) != (uint32_t)na) {
            vt__bt_banp(p, w, VT_BAN_MALFORMED, -1);
            continue;
        }
        for (k = 0; k < p->n; k++) {
            const unsigned char *q = e.content + 8 + 4 * (size_t)L * (size_t)i;
            unsigned char h[32];
            if (!p->audit[k]) continue;
            vt_sha256(q, 4 * (size_t)L, h);
            if (memcmp(h, p->c_parts + ((size_t)w * N + k) * 32, 32)) { vt__bt_banp(p, w, VT_BAN_PART, -1); break; }
            vt__bt_le2f(q, L, pub + ((size_t)i * p->n + w) * L);
            i++;
        }
    }
    if (p->nbans == bans0) {
        int i = 0;
        for (k = 0; k < p->n; k++) {
            int nr = 0, bans1 = p->nbans;
            vt_cclip_info info;
            if (!p->audit[k]) continue;
            for (w = 0; w < p->n; w++)
                if (p->c_has[w] && p->a_inc[(size_t)k * N + w] == 1) rp[nr++] = pub + ((size_t)i * p->n + w) * L;
            vt_centered_clip(rp, nr, L, p->cfg.tau, p->cfg.cc_iters, p->cfg.cc_eps, cc, &info);
            if (memcmp(cc, p->agg + k * L, sizeof(float) * (size_t)L)) vt__bt_banp(p, k, VT_BAN_AGGREGATE, -1);
            for (w = 0; w < p->n; w++) {
                double s[VT__BT_NSC];
                const double *rep = p->sc + ((size_t)w * N + k) * VT__BT_NSC;
                if (!p->c_has[w]) continue;
                vt__bt_scalars(pub + ((size_t)i * p->n + w) * L, p->agg + k * L, L, k * L, p->r, s);
                if (memcmp(s, rep, sizeof s)) { vt__bt_banp(p, w, VT_BAN_SCALARS, -1); continue; }
                if (p->areq[(size_t)w * N + k] && !(s[2] > p->cfg.kappa * (s[3] + p->cfg.tau))) vt__bt_banp(p, w, VT_BAN_FALSE_CLAIM, -1);
            }
            if (p->nbans == bans1) {
                /* the aggregate of every published part (the aggregator may have missed some) */
                for (nr = 0, w = 0; w < p->n; w++) if (p->c_has[w]) rp[nr++] = pub + ((size_t)i * p->n + w) * L;
                vt_centered_clip(rp, nr, L, p->cfg.tau, p->cfg.cc_iters, p->cfg.cc_eps, p->fin + k * L, &info);
                if (!memcmp(p->fin + k * L, p->agg + k * L, sizeof(float) * (size_t)L)) {
                    vt__bt_event(p, VT_EV_FALSE_ALARM, p->mem[k], -1, VT_BAN_AGGREGATE, 0);
                    p->st.false_alarms++;
                }
            }
            i++;
        }
    }
    VT_FREE(pub, NULL);
    VT_FREE(cc, NULL);
    VT_FREE((void *)rp, NULL);
}

/* what the agreed envelopes of exchange y decide: first their evidence, then
   what their kind carries */
static void vt__bt_judge(vt_btard_peer *p, int y) {
    int j;
    for (j = 0; j < p->n; j++) {
        vt__bt_env e;
        if (!vt__bt_agreed(p, y, j, &e)) { if (VT__XENV(p, y, j)) vt__bt_banp(p, j, VT_BAN_MALFORMED, -1); continue; }
        vt__bt_judge_evidence(p, j, &e);
    }
    /* my evidence that went out in y is published now */
    if (p->ev_sent[y] && p->ev_sent[y] <= p->evid.n) {
        size_t done = p->ev_sent[y];
        memmove(p->evid.p, p->evid.p + done, p->evid.n - done);
        p->evid.n -= done;
        for (j = 0; j < VT__BT_XMAX; j++) p->ev_sent[j] = p->ev_sent[j] > done ? p->ev_sent[j] - done : 0;
        p->nevid = 0;
    }
    switch (p->kind[y]) {
    case VT__K_COMMIT: vt__bt_judge_commit(p); break;
    case VT__K_AGG: vt__bt_judge_agg(p); break;
    case VT__K_REVEAL: vt__bt_judge_reveal(p); break;
    case VT__K_SCALARS: vt__bt_judge_scalars(p); break;
    case VT__K_FIN: vt__bt_judge_fin(p); break;
    case VT__K_AUDIT: vt__bt_judge_audit(p, y); break;
    default: break; /* FIN2, AEND carry only echoes */
    }
}

/* --- one round (>>btard): a short loop over its exchanges --------------------------------------- */

static int vt__bt_mk(vt_btard_peer *p, int kind, vt__bt_buf *b) {
    switch (kind) {
    case VT__K_COMMIT: return vt__bt_mk_commit(p, b);
    case VT__K_AGG: return vt__bt_mk_agg(p, b);
    case VT__K_REVEAL: return vt__bt_mk_reveal(p, b);
    case VT__K_SCALARS: return vt__bt_mk_scalars(p, b);
    case VT__K_FIN: return vt__bt_mk_fin(p, b);
    case VT__K_AUDIT: return vt__bt_mk_audit(p, b);
    default: return vt__bt_mk_empty(p, b);
    }
}

/* exchange x: my content, my envelope to every member, theirs; with the
   PARTS envelope (every COMMIT came: the barrier is over) the parts go to
   their aggregators, and the gather waits for both */
static int vt__bt_exchange(vt_btard_peer *p, int x) {
    vt__bt_buf c;
    double budget = x == 1 && p->rd == 0 ? p->cfg.compute_timeout + 2 * p->cfg.timeout : p->cfg.timeout, dl;
    /* A round starts again after a ban, and a Byzantine decides who needed
       the slow path to get there (a deviating echo shown to some): honest
       peers may start it up to the slow path's length (f timeouts) apart,
       so its first exchange waits that much longer for the last of them. */
    if (x == 1 && p->rd > 0) budget = (p->f + 2) * p->cfg.timeout;
    int ok;
    memset(&c, 0, sizeof c);
    if (p->reexec) { budget += p->cfg.compute_timeout; p->reexec = 0; }
    ok = vt__bt_mk(p, p->kind[x], &c);
    dl = vt__bt_next(p, budget);
    if (x == 1 && vt__bt_attacking(p, VT_ATTACK_LATE)) vt__bt_sleep(dl - vt_net_now() + p->cfg.timeout);
    if (!ok || !vt__bt_env_send(p, x, c.p, c.n)) { VT_FREE(c.p, NULL); if (p->status == VT_OK) vt__bt_fail(p, VT_ERR_NOMEM, "out of memory"); return -1; }
    VT_FREE(c.p, NULL);
    if (p->kind[x] == VT__K_PARTS) {
        memset(p->recvd, 0, (size_t)p->N);
        vt__bt_send_parts(p);
    }
    if (vt__bt_env_gather(p, x, dl) < 0) return -1;
    return 0;
}

static void vt__bt_round_reset(vt_btard_peer *p) {
    int x, j;
    /* this round's envelopes become the previous round's (suspects may name
       them); the older ones go */
    for (x = 0; x < VT__BT_XMAX; x++)
        for (j = 0; j < p->N; j++) {
            size_t i = (size_t)x * p->N + (size_t)j;
            VT_FREE(p->pxenv[i], NULL);
            p->pxenv[i] = NULL;
            p->pxlen[i] = 0;
        }
    for (x = 0; x < VT__BT_XMAX; x++) /* indexed by their sender (the membership may change now) */
        for (j = 0; j < p->N; j++) {
            unsigned char *m = VT__XENV(p, x, j);
            size_t i;
            if (!m || VT__XLEN(p, x, j) < 32) continue;
            i = (size_t)x * p->N + (size_t)(vt__bt_g32(m + 20) % (uint32_t)p->N);
            VT_FREE(p->pxenv[i], NULL);
            p->pxenv[i] = m;
            p->pxlen[i] = VT__XLEN(p, x, j);
            VT__XENV(p, x, j) = NULL;
        }
    p->pstep = p->xstep;
    p->pround = p->xround;
    p->xstep = p->step;
    p->xround = p->rd;
    for (x = 0; x < VT__BT_XMAX; x++)
        for (j = 0; j < p->N; j++) vt__bt_hold(p, x, j, NULL, 0);
    memset(p->kind, 0, sizeof p->kind);
    for (x = VT__K_COMMIT; x <= VT__K_FIN; x++) p->kind[x] = x;
    p->nx = VT__K_FIN;
    memset(p->ev_sent, 0, sizeof p->ev_sent);
    memset(p->c_has, 0, (size_t)p->N);
    memset(p->a_inc, 0, (size_t)p->N * p->N);
    memset(p->areq, 0, (size_t)p->N * p->N);
    memset(p->pend, 0, (size_t)p->N);
    memset(p->audit, 0, (size_t)p->N);
    for (j = 0; j < p->N; j++) { p->c_vt[j] = -1; p->c_vc[j] = 0; }
    p->reexec = 0;
    p->mypend = 0;
}

/* one round: 1 done, 0 start again (someone was banned), -1 stop */
static int vt__bt_round(vt_btard_peer *p) {
    int x, bans0 = p->nbans, k;
    if (p->rd > 0) p->sched = vt_net_now();
    vt__bt_mb_purge(p);
    vt__bt_partition(p);
    if (p->me < 0) return -1;
    vt__bt_round_reset(p);
    if (p->worker) {
        memcpy(p->gp, p->g, sizeof(float) * (size_t)p->d);
        for (k = (int)p->d; k < p->n * p->L; k++) p->gp[k] = 0.0f;
    }
    for (x = 1; x <= p->nx; x++) {
        if (vt__bt_exchange(p, x) < 0) return -1;
        if (x < 2) continue;
        if (vt__bt_agree(p, x - 1) < 0) return -1;
        if (p->nbans == bans0) vt__bt_judge(p, x - 1);
        if (p->status != VT_OK || !p->alive[p->rank]) return -1;
        if (p->nbans != bans0) return 0;
    }
    p->done_dl = p->gdl[p->nx];
    p->done_step = p->step;
    p->done_x = p->nx;
    return 1;
}

/* --- the update ------------------------------------------------------------------------------ */

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
        memcpy(p->pv_sc + (size_t)i * N * VT__BT_NSC, p->sc + (size_t)i * N * VT__BT_NSC, sizeof(double) * VT__BT_NSC * (size_t)p->n);
    }
    memcpy(p->pv_agg, p->agg, sizeof(float) * (size_t)(p->n * p->L));
    memcpy(p->pv_r, p->r, 32);
    t = p->w_prev; p->w_prev = p->w_cur; p->w_cur = t;
    b = p->chunk_prev; p->chunk_prev = p->chunk; p->chunk = b;
    p->chunk.n = 0;
    if (!p->worker) p->chunk_prev.n = 0;
}

/* --- the plain butterfly all-reduce of the mean (the baseline; no defence) --------------------------- */

typedef struct { int phase; unsigned char *got; } vt__bt_mwait;
static int vt__bt_mean_left(vt_btard_peer *p, void *u) {
    vt__bt_mwait *w = (vt__bt_mwait *)u;
    int i, left = 0;
    for (i = 0; i < p->n; i++) {
        unsigned char *m;
        size_t n;
        if (i == p->me || w->got[i]) continue;
        m = vt__bt_mb_take(p, p->mem[i], vt__bt_tag(p, w->phase, w->phase == VT__PH_MPART ? p->me : 0), &n);
        if (!m) { left++; continue; }
        w->got[i] = 1;
        if (n == 4 * (size_t)p->L) vt__bt_le2f(m, p->L, (w->phase == VT__PH_MPART ? p->rows : p->agg) + i * p->L);
        else w->got[i] = 2;
        VT_FREE(m, NULL);
    }
    return left;
}

static vt_status vt__bt_step_mean(vt_btard_peer *p) {
    int i, k, n, me;
    int64_t L, j;
    unsigned char *got = (unsigned char *)VT_MALLOC((size_t)p->N + 1, NULL), *b;
    vt__bt_mwait w;
    if (!got) { vt__bt_fail(p, VT_ERR_NOMEM, "out of memory"); return p->status; }
    p->rd = 0;
    vt__bt_mb_purge(p);
    for (i = 0; i < p->N; i++) p->alive[i] = 1;
    vt__bt_partition(p);
    n = p->n; me = p->me; L = p->L;
    p->worker = 1;
    vt__bt_work(p);
    if (p->status != VT_OK) { VT_FREE(got, NULL); return p->status; }
    memcpy(p->gp, p->g, sizeof(float) * (size_t)p->d);
    for (k = (int)p->d; k < n * L; k++) p->gp[k] = 0.0f;
    b = (unsigned char *)VT_MALLOC(4 * (size_t)L + 1, NULL);
    if (!b) { VT_FREE(got, NULL); vt__bt_fail(p, VT_ERR_NOMEM, "out of memory"); return p->status; }
    if (!vt__bt_attacking(p, VT_ATTACK_SILENT))
        for (k = 0; k < n; k++)
            if (k != me) {
                vt__bt_f2le(p->gp + k * L, L, b);
                p->net->send(p->net, p->mem[k], vt__bt_tag(p, VT__PH_MPART, k), b, 4 * (size_t)L);
            }
    memset(got, 0, (size_t)p->N);
    w.phase = VT__PH_MPART; w.got = got;
    vt__bt_wait(p, vt_net_now() + p->cfg.timeout, 0, vt__bt_mean_left, &w);
    {
        double t0 = vt_net_now();
        double *acc = (double *)VT_MALLOC(sizeof(double) * (size_t)(L ? L : 1), NULL);
        int cnt = 0;
        if (!acc) { VT_FREE(got, NULL); VT_FREE(b, NULL); vt__bt_fail(p, VT_ERR_NOMEM, "out of memory"); return p->status; }
        for (j = 0; j < L; j++) acc[j] = 0;
        for (i = 0; i < n; i++) {
            const float *x = i == me ? p->gp + me * L : p->rows + i * L;
            if (i != me && got[i] != 1) continue;
            for (j = 0; j < L; j++) acc[j] += (double)x[j];
            cnt++;
        }
        for (j = 0; j < L; j++) p->agg[me * L + j] = (float)(acc[j] / (cnt ? cnt : 1));
        if (vt__bt_attacking(p, VT_ATTACK_LYING_AGGREGATOR))
            for (j = 0; j < L; j++) p->agg[me * L + j] = (float)(p->atk.scale * p->agg[me * L + j]);
        if (vt__bt_attacking(p, VT_ATTACK_SPIKE))
            for (j = 0; j < L; j++) p->agg[me * L + j] = (float)(p->agg[me * L + j] + (j % 2 ? -1 : 1) * p->atk.scale / sqrt((double)L));
        VT_FREE(acc, NULL);
        p->st.t_aggregate += vt_net_now() - t0;
    }
    vt__bt_f2le(p->agg + me * L, L, b);
    if (vt__bt_attacking(p, VT_ATTACK_GARBAGE)) vt__bt_garbage(p, b, 4 * (size_t)L, 3);
    for (i = 0; i < n; i++) if (i != me) p->net->send(p->net, p->mem[i], vt__bt_tag(p, VT__PH_MAGG, 0), b, 4 * (size_t)L);
    VT_FREE(b, NULL);
    memset(got, 0, (size_t)p->N);
    w.phase = VT__PH_MAGG;
    vt__bt_wait(p, vt_net_now() + p->cfg.timeout, 0, vt__bt_mean_left, &w);
    for (i = 0; i < n; i++)
        if (i != me && got[i] != 1) for (j = 0; j < L; j++) p->agg[i * L + j] = 0.0f;
    VT_FREE(got, NULL);
    vt__bt_update(p, p->agg);
    return p->status;
}

/* --- joining (>>btard: JOINING) --------------------------------------------------------------------------

   Messages from outside the members, taken out of the stream before the
   mailbox (vt__bt_intercept), each bounded per sender and step:
     JOIN    newcomer -> founders: [magic][u32 rank][u64 step][32 pk][64 signature by pk over
             "vt-btard-join2" || session || rank || step || pk]
     PROBE   newcomer in probation -> members: [magic][u32 rank][u64 step][32 SHA-256 of its
             gradient, d binary32][u32 chunk length][its log chunk][64 signature over
             "vt-btard-probe2" || session || SHA-256(all before it)]
     ATTEST  member -> newcomer at the start of a step: [magic][u32 member][u32 newcomer]
             [u64 step][32 state digest][64 signature over "vt-btard-state2" || session || all
             from member to digest]
     STATE   member -> newcomer: the state (vt__bt_blob), its digest the attested one
     SREQ    newcomer -> member: send me the state of this step (the tag's step)
   Members carry the JOIN and PROBE messages they hold in their REVEAL, so
   that what they carry is agreed with the REVEAL envelopes themselves. */

#define VT__BT_M_JOIN 0x324a5442u    /* "BTJ2" */
#define VT__BT_M_PROBE 0x32505442u   /* "BTP2" */
#define VT__BT_M_ATTEST 0x32545442u  /* "BTT2" */
#define VT__BT_M_STATE 0x32585442u   /* "BTX2" */
#define VT__BT_JOIN_LEN 112
#define VT__BT_ATTEST_LEN 116
#define VT__BT_TRIES 4               /* signatures checked per sender and step, at most */

static void vt__bt_join_sigmsg(const vt_btard_peer *p, const unsigned char *req, unsigned char out[90]) {
    memcpy(out, "vt-btard-join2", 14);
    memcpy(out + 14, p->session, 32);
    memcpy(out + 46, req + 4, 44); /* rank, step, pk */
}
/* a key somebody in the swarm holds or held */
static int vt__bt_key_taken(const vt_btard_peer *p, const unsigned char *pk) {
    int i;
    for (i = 0; i < p->N; i++) if (!memcmp(p->roster + 32 * (size_t)i, pk, 32)) return 1;
    return 0;
}
/* a join request for open slot `rank`: well formed, signed by the key it
   names, a key nobody in the swarm holds or held */
static int vt__bt_join_ok(vt_btard_peer *p, const unsigned char *m, size_t n, int rank) {
    unsigned char sm[90];
    if (n != VT__BT_JOIN_LEN || vt__bt_g32(m) != VT__BT_M_JOIN || (int)vt__bt_g32(m + 4) != rank || vt__bt_zero32(m + 16) ||
        vt__bt_key_taken(p, m + 16))
        return 0;
    vt__bt_join_sigmsg(p, m, sm);
    p->st.verifies++;
    return vt__bt_verify_raw(m + 16, sm, sizeof sm, m + 48);
}

static void vt__bt_probe_sigmsg(const vt_btard_peer *p, const unsigned char *m, size_t body, unsigned char out[79]) {
    memcpy(out, "vt-btard-probe2", 15);
    memcpy(out + 15, p->session, 32);
    vt_sha256(m, body, out + 47);
}
/* newcomer r's probation work of step t: well formed, signed by r */
static int vt__bt_probe_ok(vt_btard_peer *p, const unsigned char *m, size_t n, int r, int64_t t) {
    size_t cl;
    unsigned char sm[79];
    if (n < 52 + 64 || vt__bt_g32(m) != VT__BT_M_PROBE || (int)vt__bt_g32(m + 4) != r || (int64_t)vt__bt_g64(m + 8) != t) return 0;
    cl = vt__bt_g32(m + 48);
    if (cl > p->cfg.max_chunk || n != 52 + cl + 64) return 0;
    vt__bt_probe_sigmsg(p, m, 52 + cl, sm);
    return vt__bt_verify(p, r, sm, sizeof sm, m + 52 + cl);
}

static void vt__bt_attest_sigmsg(const vt_btard_peer *p, const unsigned char *a, unsigned char out[95]) {
    memcpy(out, "vt-btard-state2", 15);
    memcpy(out + 15, p->session, 32);
    memcpy(out + 47, a + 4, 48); /* member, newcomer, step, digest */
}

/* The state a newcomer fetches: everything a member carries from one step
   to the next, the same bytes on every honest member at the start of a
   step: [magic][u32 N][u64 step][u64 d], per rank [u8 not banned][i64
   joined][i64 prob_end][i64 ban step][i32 ban reason][32 key], the previous
   step as it ended (what validators check: [u32 pv_ok][u32 pv_n][u64 pv_L]
   [u64 pv_step][pv_n u32 ranks][pv_n worker flags][pv_n x pv_n part
   hashes][pv_n chunk hashes][pv_n x pv_n x 4 binary64 scalars][pv_n pv_L
   binary32 aggregates][32 r]), the weights of that step (d binary32), then
   [u64 length][the checkpoint of weights and optimizer state, its step
   the BTARD step]. */
static int vt__bt_blob_build(vt_btard_peer *p) {
    vt__bt_buf *b = &p->blob;
    unsigned char *ck = NULL;
    size_t ckn = 0;
    int i, k, pn = p->pv_ok ? p->pv_n : 0;
    int64_t pl = p->pv_ok ? p->pv_L : 0;
    b->n = 0;
    if (vt__checkpoint_bytes(p->M, p->step, "the state for a newcomer", &ck, &ckn) != VT_OK) { vt_clear_error(p->M); return 0; }
    vt__bt_add32(b, VT__BT_M_STATE);
    vt__bt_add32(b, (uint32_t)p->N);
    vt__bt_add64(b, (uint64_t)p->step);
    vt__bt_add64(b, (uint64_t)p->d);
    for (i = 0; i < p->N; i++) {
        vt__bt_add(b, &p->alive[i], 1);
        vt__bt_add64(b, (uint64_t)p->joined[i]);
        vt__bt_add64(b, (uint64_t)p->prob_end[i]);
        vt__bt_add64(b, (uint64_t)p->ban_at[i]);
        vt__bt_add32(b, (uint32_t)p->ban_why[i]);
        vt__bt_add(b, p->roster + 32 * (size_t)i, 32);
    }
    vt__bt_add32(b, (uint32_t)p->pv_ok);
    vt__bt_add32(b, (uint32_t)pn);
    vt__bt_add64(b, (uint64_t)pl);
    vt__bt_add64(b, (uint64_t)p->pv_step);
    for (i = 0; i < pn; i++) vt__bt_add32(b, (uint32_t)p->pv_mem[i]);
    vt__bt_add(b, p->pv_has, (size_t)pn);
    for (i = 0; i < pn; i++) vt__bt_add(b, p->pv_parts + (size_t)i * p->N * 32, 32 * (size_t)pn);
    vt__bt_add(b, p->pv_chunk, 32 * (size_t)pn);
    for (i = 0; i < pn; i++)
        for (k = 0; k < pn * VT__BT_NSC; k++) vt__bt_addf64(b, p->pv_sc[(size_t)i * p->N * VT__BT_NSC + (size_t)k]);
    if (vt__bt_reserve(b, b->n + 4 * (size_t)(pn * pl + p->d) + 64)) {
        vt__bt_f2le(p->pv_agg, pn * pl, b->p + b->n);
        b->n += 4 * (size_t)(pn * pl);
        vt__bt_add(b, p->pv_r, 32);
        vt__bt_f2le(p->w_prev, p->d, b->p + b->n);
        b->n += 4 * (size_t)p->d;
    }
    vt__bt_add64(b, (uint64_t)ckn);
    k = vt__bt_add(b, ck, ckn);
    VT_FREE(ck, NULL);
    if (!k) return 0;
    vt_sha256(b->p, b->n, p->blob_dig);
    p->blob_step = p->step;
    return 1;
}

/* a newcomer: the state of step t (its digest already checked) into this
   peer; 0 with a message if it does not parse */
static int vt__bt_blob_load(vt_btard_peer *p, const unsigned char *b, size_t n, int64_t t, int from) {
    size_t at = 24, need;
    int i, k, pn, N = p->N;
    int64_t pl, ckn;
#define VT__BT_NEED(x) do { if ((x) > n - at) goto bad; } while (0)
    if (n < 24 || vt__bt_g32(b) != VT__BT_M_STATE || (int)vt__bt_g32(b + 4) != N || (int64_t)vt__bt_g64(b + 8) != t ||
        (int64_t)vt__bt_g64(b + 16) != p->d)
        goto bad;
    VT__BT_NEED((size_t)N * 61 + 24);
    /* every field in range before any of it is taken (the digest was attested by f0 + 1 founders, but a
       blob more than f0 liars agree on must make a wrong state, never a write out of bounds), and my
       own slot must carry my own key: another key there is no malformed state but the members' word
       that they admitted another request for my slot (an open slot is first come) */
    for (i = 0; i < N; i++) {
        const unsigned char *r = b + at + 61 * (size_t)i;
        int64_t jo = (int64_t)vt__bt_g64(r + 1), pe = (int64_t)vt__bt_g64(r + 9), ba = (int64_t)vt__bt_g64(r + 17);
        int why = (int)vt__bt_g32(r + 25);
        if (r[0] > 1 || jo < -1 || pe < -1 || ba < -1 || why < -1 || why >= (int)VT_BAN_COUNT) goto bad;
    }
    if (memcmp(b + at + 61 * (size_t)p->rank + 29, p->key.pk, 32) != 0) {
        vt__bt_fail(p, VT_ERR_STATE, "newcomer %d, step %lld: the state the founders attested (sent by peer %d) gives slot %d to another key: the members "
                    "admitted another request for this slot (an open slot is first come), not this newcomer's", p->rank, (long long)t, from, p->rank);
        return 0;
    }
    for (i = 0; i < N; i++, at += 61) {
        p->alive[i] = b[at] ? 1 : 0;
        p->joined[i] = (int64_t)vt__bt_g64(b + at + 1);
        p->prob_end[i] = (int64_t)vt__bt_g64(b + at + 9);
        p->ban_at[i] = (int64_t)vt__bt_g64(b + at + 17);
        p->ban_why[i] = (int)vt__bt_g32(b + at + 25);
        memcpy(p->roster + 32 * (size_t)i, b + at + 29, 32);
    }
    VT__BT_NEED(24);
    k = (int)vt__bt_g32(b + at);
    pn = (int)vt__bt_g32(b + at + 4);
    pl = (int64_t)vt__bt_g64(b + at + 8);
    /* pv_ok 0 carries nothing; pv_ok 1 carries 1 <= pn <= N parts of pl = ceil(d / pn) each, so
       0 <= pl <= d and pn pl < d + pn <= d + N, what pv_agg holds */
    if ((k != 0 && k != 1) || (!k && (pn || pl)) || (k && (pn < 1 || pn > N || pl != (p->d + pn - 1) / pn))) goto bad;
    p->pv_ok = k;
    p->pv_step = (int64_t)vt__bt_g64(b + at + 16);
    at += 24;
    need = 4 * (size_t)pn + (size_t)pn + 32 * (size_t)pn * (size_t)pn + 32 * (size_t)pn + 8 * VT__BT_NSC * (size_t)pn * (size_t)pn +
           4 * (size_t)(pn * pl) + 32 + 4 * (size_t)p->d + 8;
    VT__BT_NEED(need);
    p->pv_n = pn;
    p->pv_L = pl;
    for (i = 0; i < pn; i++, at += 4) {
        p->pv_mem[i] = (int)vt__bt_g32(b + at);
        if (p->pv_mem[i] < 0 || p->pv_mem[i] >= N) goto bad;
    }
    memcpy(p->pv_has, b + at, (size_t)pn);
    at += (size_t)pn;
    for (i = 0; i < pn; i++, at += 32 * (size_t)pn) memcpy(p->pv_parts + (size_t)i * N * 32, b + at, 32 * (size_t)pn);
    memcpy(p->pv_chunk, b + at, 32 * (size_t)pn);
    at += 32 * (size_t)pn;
    for (i = 0; i < pn; i++)
        for (k = 0; k < pn * VT__BT_NSC; k++, at += 8) p->pv_sc[(size_t)i * N * VT__BT_NSC + (size_t)k] = vt__bt_gf64(b + at);
    vt__bt_le2f(b + at, pn * pl, p->pv_agg);
    at += 4 * (size_t)(pn * pl);
    memcpy(p->pv_r, b + at, 32);
    at += 32;
    vt__bt_le2f(b + at, p->d, p->w_prev);
    at += 4 * (size_t)p->d;
    ckn = (int64_t)vt__bt_g64(b + at);
    at += 8;
    if (ckn < 0 || (uint64_t)ckn != (uint64_t)(n - at)) goto bad;
    if (vt__checkpoint_parse(p->M, b + at, (size_t)ckn, "the state from the members") != VT_OK) {
        vt__bt_fail(p, VT_ERR_STATE, "newcomer %d, step %lld: the attested state from peer %d does not load: %s", p->rank, (long long)t, from,
                    vt_error_message(p->M));
        return 0;
    }
    p->step = t;
    p->chunk_prev.n = 0;
    return 1;
bad:
    vt__bt_fail(p, VT_ERR_FORMAT, "newcomer %d, step %lld: the attested state from peer %d is malformed (at byte %zu of %zu)", p->rank,
                (long long)t, from, at, n);
    return 0;
#undef VT__BT_NEED
}

/* a member: the state to newcomer r (the wrong_state attack flips a bit of it) */
static void vt__bt_send_state(vt_btard_peer *p, int r) {
    if (p->blob_step != p->step || p->served[r] >= 2 || vt__bt_attacking(p, VT_ATTACK_SILENT)) return;
    p->served[r]++;
    p->st.states_sent++;
    if (vt__bt_attacking(p, VT_ATTACK_WRONG_STATE)) {
        unsigned char *q = (unsigned char *)VT_MALLOC(p->blob.n, NULL);
        if (!q) return;
        memcpy(q, p->blob.p, p->blob.n);
        q[p->blob.n - 5] ^= 0x04; /* a weight's bit */
        p->net->send(p->net, r, vt__bt_tag(p, VT__PH_STATE, 0), q, p->blob.n);
        VT_FREE(q, NULL);
        return;
    }
    p->net->send(p->net, r, vt__bt_tag(p, VT__PH_STATE, 0), p->blob.p, p->blob.n);
}

/* A member at the start of a step: every newcomer that needs the state of
   this step gets my signed digest of it; the member at position
   (newcomer + step) mod n sends the state itself (the others when asked). */
static void vt__bt_serve(vt_btard_peer *p) {
    int r, any = 0;
    memset(p->jtries, 0, (size_t)p->N);
    memset(p->served, 0, (size_t)p->N);
    memset(p->qans, 0, (size_t)p->N);
    for (r = 0; r < p->N; r++) any |= r != p->rank && vt__bt_needs_state(p, r, p->step);
    if (!any || p->me < 0 || !vt__bt_blob_build(p)) return;
    for (r = 0; r < p->N; r++) {
        unsigned char a[VT__BT_ATTEST_LEN], sm[95];
        if (r == p->rank || !vt__bt_needs_state(p, r, p->step) || vt__bt_attacking(p, VT_ATTACK_SILENT)) continue;
        vt__bt_p32(a, VT__BT_M_ATTEST);
        vt__bt_p32(a + 4, (uint32_t)p->rank);
        vt__bt_p32(a + 8, (uint32_t)r);
        vt__bt_p64(a + 12, (uint64_t)p->step);
        memcpy(a + 20, p->blob_dig, 32);
        vt__bt_attest_sigmsg(p, a, sm);
        vt__bt_sign(p, sm, sizeof sm, a + 52);
        p->net->send(p->net, r, vt__bt_tag(p, VT__PH_ATTEST, 0), a, sizeof a);
        if (p->mem[(int)((r + p->step) % p->n)] == p->rank) vt__bt_send_state(p, r);
    }
}

/* --- step discovery (>>btard: JOINING) --------------------------------------------------------------------

   A newcomer that does not know the members' step asks every founder (STEPQ, no body) and each answers
   with its STATEMENT: [magic "BTS2"][u32 member][u64 step][64 signature over "vt-btard-step2" ||
   session || the 16 bytes before it], the step it is running (it keeps a join request for that step, if
   it comes before its REVEAL, up to 64 steps ahead). A member signs one statement per step, and only in a
   step that got a query; it answers at most VT__BT_QMAX queries per open slot and step. */
#define VT__BT_M_STEP 0x32535442u  /* "BTS2" */
#define VT__BT_QMAX 8      /* step queries answered per open slot and step */
#define VT__BT_SPREAD 4    /* D: the most two honest statements of one query round differ by */
#define VT__BT_LEAD 2      /* the newcomer asks to join this many steps after the vouched step */

static void vt__bt_step_sigmsg(const vt_btard_peer *p, const unsigned char *st, unsigned char out[62]) {
    memcpy(out, "vt-btard-step2", 14);
    memcpy(out + 14, p->session, 32);
    memcpy(out + 46, st, 16);
}
/* a member answers open slot r's step query (a lying_step attacker signs a false step as readily) */
static void vt__bt_step_answer(vt_btard_peer *p, int r) {
    int64_t s = p->step;
    unsigned char sm[62];
    if (p->qans[r] >= VT__BT_QMAX || vt__bt_attacking(p, VT_ATTACK_SILENT)) return;
    p->qans[r]++;
    if (vt__bt_attacking(p, VT_ATTACK_LYING_STEP)) {
        s += (int64_t)p->atk.scale;
        if (s < 0) s = 0;
    }
    if (p->stmt_step != s) {
        vt__bt_p32(p->stmt, VT__BT_M_STEP);
        vt__bt_p32(p->stmt + 4, (uint32_t)p->rank);
        vt__bt_p64(p->stmt + 8, (uint64_t)s);
        vt__bt_step_sigmsg(p, p->stmt, sm);
        vt__bt_sign(p, sm, sizeof sm, p->stmt + 16);
        p->stmt_step = s;
    }
    p->net->send(p->net, r, VT__BT_TAG(p->cfg.session, 0, 0, VT__PH_STEPA, 0), p->stmt, VT__BT_STEP_LEN);
}
/* a newcomer takes founder `from`'s statement: its step, or -1 (not one; at most VT__BT_TRIES
   signature checks per founder and query round, counted in jtries, a newcomer's scratch) */
static int64_t vt__bt_step_take(vt_btard_peer *p, int from, const unsigned char *m, size_t n) {
    unsigned char sm[62];
    if (n != VT__BT_STEP_LEN || vt__bt_g32(m) != VT__BT_M_STEP || (int)vt__bt_g32(m + 4) != from || p->joined[from] != 0 ||
        p->jtries[from] >= VT__BT_TRIES || vt__bt_g64(m + 8) >= 0xFFFFFF)
        return -1;
    p->jtries[from]++;
    vt__bt_step_sigmsg(p, m, sm);
    return vt__bt_verify(p, from, sm, sizeof sm, m + 16) ? (int64_t)vt__bt_g64(m + 8) : -1;
}
/* The step the founders vouch for, from their latest statements st[] (-1: none): over every window
   [v, v + D] (v a statement) that holds the statements of f0 + 1 founders, the (f0 + 1)-th smallest
   statement in it, u; the smallest u of all windows; -1 if no window holds f0 + 1. At most f0 founders
   lie, so f0 + 1 statements at or below u include an honest one: u >= the lowest honest statement; and
   u <= v + D, with an honest statement in [v, v + D]: u <= the highest honest + D. When f0 + 1 honest
   statements lie within D of each other, the window from the lowest honest statement holds them, so its
   u, and the result, is at most the highest honest statement: then liars move nothing. */
static int64_t vt__bt_step_pick(const vt_btard_peer *p, const int64_t *st) {
    int i, j, k, c;
    int64_t best = -1;
    for (i = 0; i < p->N; i++) {
        int64_t u = -1;
        if (st[i] < 0) continue;
        for (j = 0, k = 0; j < p->N; j++) k += st[j] >= st[i] && st[j] <= st[i] + VT__BT_SPREAD;
        if (k < p->f0 + 1) continue;
        for (j = 0; j < p->N && u < 0; j++) { /* the (f0 + 1)-th smallest in the window: the least value with f0 + 1 at or below it */
            if (!(st[j] >= st[i] && st[j] <= st[i] + VT__BT_SPREAD)) continue;
            for (k = 0, c = 0; k < p->N; k++) c += st[k] >= st[i] && st[k] <= st[j];
            if (c >= p->f0 + 1) {
                int k2, c2;
                for (k2 = 0, c2 = 0; k2 < p->N; k2++) c2 += st[k2] >= st[i] && st[k2] < st[j];
                if (c2 < p->f0 + 1) u = st[j];
            }
        }
        if (u >= 0 && (best < 0 || u < best)) best = u;
    }
    return best;
}
/* a newcomer's step query to every founder */
static void vt__bt_step_ask(vt_btard_peer *p) {
    unsigned char *to = p->seen;
    int i;
    for (i = 0; i < p->N; i++) to[i] = p->joined[i] == 0 && i != p->rank;
    memset(p->jtries, 0, (size_t)p->N);
    p->net->bcast(p->net, VT__BT_TAG(p->cfg.session, 0, 0, VT__PH_STEPQ, 0), "", 0, to);
}
/* a newcomer's request has lapsed when f0 + 1 founders (one of them honest) state a step past the one
   after it: that step ended at every honest member without admitting it (an admitted newcomer gets the
   state at the start of the next step) - too late for their REVEALs, or over the bounds */
static int vt__bt_step_lapsed(const vt_btard_peer *p) {
    int i, k = 0;
    for (i = 0; i < p->N; i++) k += p->qst[i] >= p->cfg.join_step + 2;
    return k >= p->f0 + 1;
}

/* Messages from newcomers and open slots, and members' asks for envelopes
   (vt__bt_answer), before the mailbox: 1 if taken (m is freed). Each sender gets at most VT__BT_TRIES signature checks per
   step and one kept request (a member) or probation message; nothing of it
   bans anyone (it is not agreed: what counts is what members carry). */
static int vt__bt_intercept(vt_btard_peer *p, int from, uint64_t tag, unsigned char *m, size_t n) {
    int ph = VT__BT_TPHASE(tag);
    if (tag == VT__BT_BYE || VT__BT_TSESS(tag) != (p->cfg.session & 0xFF) || ph < VT__PH_JOIN || ph == VT__PH_FWD) return 0;
    if (p->joining) { VT_FREE(m, NULL); return 1; } /* a newcomer takes ATTEST and STATE itself (vt__bt_sync) */
    if (ph == VT__PH_ASK) { /* a member asks for envelopes I went on with (>>agree: gathering) */
        if (p->joined[from] >= 0) vt__bt_answer(p, from, tag, m, n);
        else p->flood[from]++;
        VT_FREE(m, NULL);
        return 1;
    }
    if (ph == VT__PH_JOIN && p->joined[from] < 0 && p->alive[from] && n == VT__BT_JOIN_LEN) {
        vt__bt_buf *q = &p->jreq[from];
        int64_t s = (int64_t)vt__bt_g64(m + 8);
        int have = q->n && (int64_t)vt__bt_g64(q->p + 8) >= p->step;
        if (!have && s >= p->step && s <= p->step + 64 && p->jtries[from] < VT__BT_TRIES) {
            p->jtries[from]++;
            if (vt__bt_join_ok(p, m, n, from)) vt__bt_set(q, m, n);
        } else if (!have || q->n != n || memcmp(q->p, m, n)) p->flood[from]++;
    } else if (ph == VT__PH_PROBE && n >= 16) { /* this step's, or the next one's from a newcomer ahead of me */
        int64_t s = (int64_t)vt__bt_g64(m + 8);
        vt__bt_buf *q = vt__bt_probe_of(p, from, s);
        int have = !q || q->n != 0;
        if (!have && (s == p->step || s == p->step + 1) && vt__bt_on_probation(p, from, s) && p->jtries[from] < VT__BT_TRIES) {
            p->jtries[from]++;
            if (vt__bt_probe_ok(p, m, n, from, s)) vt__bt_set(q, m, n);
        } else if (!q || !have || q->n != n || memcmp(q->p, m, n)) p->flood[from]++;
    } else if (ph == VT__PH_SREQ && VT__BT_TSTEP(tag) == (p->step & 0xFFFFFF) && vt__bt_needs_state(p, from, p->step))
        vt__bt_send_state(p, from);
    else if (ph == VT__PH_STEPQ && p->joined[from] < 0 && p->alive[from] && n == 0) /* step discovery: an open slot asks my step */
        vt__bt_step_answer(p, from);
    else if (ph != VT__PH_ATTEST && ph != VT__PH_STATE && ph != VT__PH_STEPA) p->flood[from]++;
    VT_FREE(m, NULL);
    return 1;
}

/* the carried section of member j's agreed REVEAL: its item for rank r */
static int vt__bt_carried(vt_btard_peer *p, int j, int r, const unsigned char **it, size_t *in) {
    vt__bt_env e;
    size_t at;
    uint32_t cnt, i;
    if (!vt__bt_agreed(p, VT__K_REVEAL, j, &e) || e.content_len < 44) return 0;
    at = 40 + (size_t)vt__bt_g32(e.content + 36);
    if (at + 4 > e.content_len) return 0;
    cnt = vt__bt_g32(e.content + at);
    at += 4;
    for (i = 0; i < cnt && at + 4 <= e.content_len; i++) {
        size_t l = vt__bt_g32(e.content + at);
        if (l < 8 || l > e.content_len - at - 4) return 0;
        if ((int)vt__bt_g32(e.content + at + 8) == r) { *it = e.content + at + 4; *in = l; return 1; }
        at += 4 + l;
    }
    return 0;
}

/* the carried section of a REVEAL (content c, n bytes, from its byte at):
   1 if every item is a join request of this step for an open slot or the
   probation work of this step of a newcomer in probation, each signed, at
   most one per rank; an honest member carries nothing else */
static int vt__bt_carried_ok(vt_btard_peer *p, const unsigned char *c, size_t n, size_t at) {
    uint32_t cnt, i;
    unsigned char *seen = p->seen;
    if (at + 4 > n) return 0;
    cnt = vt__bt_g32(c + at);
    at += 4;
    if (cnt > (uint32_t)p->N) return 0;
    memset(seen, 0, (size_t)p->N);
    for (i = 0; i < cnt; i++) {
        size_t l;
        const unsigned char *it;
        int r;
        if (at + 4 > n) return 0;
        l = vt__bt_g32(c + at);
        if (l < 12 || l > n - at - 4) return 0;
        it = c + at + 4;
        r = (int)vt__bt_g32(it + 4);
        if (r < 0 || r >= p->N || seen[r]) return 0;
        seen[r] = 1;
        if (vt__bt_g32(it) == VT__BT_M_JOIN) {
            if (!(p->joined[r] < 0 && p->alive[r]) || l != VT__BT_JOIN_LEN || (int64_t)vt__bt_g64(it + 8) != p->step || vt__bt_key_taken(p, it + 16))
                return 0; /* the state of now, the same on every honest member (a key admitted since I kept it is refused) */
            if (!(p->jreq[r].n == l && !memcmp(p->jreq[r].p, it, l)) && !vt__bt_join_ok(p, it, l, r)) return 0;
        } else if (vt__bt_g32(it) == VT__BT_M_PROBE) {
            if (!vt__bt_on_probation(p, r, p->step)) return 0;
            const vt__bt_buf *q = vt__bt_probe_of(p, r, p->step);
            if (!(q && q->n == l && !memcmp(q->p, it, l)) && !vt__bt_probe_ok(p, it, l, r, p->step)) return 0;
        } else return 0;
        at += 4 + l;
    }
    return at == n;
}

/* newcomer r's probation gradient, replayed with its chunk on the weights
   of this step: VT__V_OK if it is the one it committed to */
static int vt__bt_probe_replay(vt_btard_peer *p, int r, const unsigned char *m) {
    size_t cl = vt__bt_g32(m + 48);
    unsigned char h[32];
    char why[256];
    int i;
    double t0 = vt_net_now();
    p->st.probes++;
    if (vt__bt_restamp(&p->tmp, m + 52, cl, vt_step_index(p->A)) < 0) return VT__V_BADCHUNK;
    for (i = 0; i < p->np; i++) {
        vt_tensor *t = vt_param_at(p->A, i);
        int64_t e, ne = p->poff[i + 1] - p->poff[i];
        for (e = 0; e < ne; e++) ((double *)t->data)[e] = (double)p->w_cur[p->poff[i] + e];
    }
    if (vt_feed_chunk(p->A, p->tmp.p, p->tmp.n) != VT_OK) { vt_clear_error(p->A); return VT__V_GRADIENT; }
    i = vt__bt_grad(p, p->A, p->ma, vt__bt_seed(p, r, p->step), 0, p->tmpf, why, sizeof why);
    p->st.t_validate += vt_net_now() - t0;
    if (i < 0) return VT__V_GRADIENT;
    vt__bt_hash_f32(p->tmpf, p->d, h);
    return memcmp(h, m + 16, 32) ? VT__V_GRADIENT : VT__V_OK;
}

/* After a completed round, what the agreed REVEALs carry decides, the same
   on every honest member (the count rule of the slow path, on carriers):
   an item carried by f + 1 members was received by an honest one. A
   newcomer in probation with no such item is silent, with two is an
   equivocator, with one is replayed (a wrong gradient bans it). An open
   slot's request with f + 1 carriers is admitted, lowest rank first, while
   fewer than join_per_step were admitted this step and fewer than join_max
   are in probation; two such requests for one slot ban the slot. */
static void vt__bt_settle_joins(vt_btard_peer *p) {
    int r, j, j2, admitted = 0, inprob = 0, N = p->N;
    int64_t t = p->step;
    for (r = 0; r < N; r++) {
        int prob = vt__bt_on_probation(p, r, t), open = p->joined[r] < 0 && p->alive[r], nwin = 0;
        const unsigned char *win = NULL;
        size_t wn = 0;
        if (!prob && !open) continue;
        for (j = 0; j < p->n; j++) {
            const unsigned char *it, *it2;
            size_t in, in2;
            int cnt = 0, first = 1;
            if (!vt__bt_carried(p, j, r, &it, &in)) continue;
            for (j2 = 0; j2 < p->n; j2++) {
                if (!vt__bt_carried(p, j2, r, &it2, &in2) || in2 != in || memcmp(it, it2, in)) continue;
                if (j2 < j) first = 0;
                cnt++;
            }
            if (first && cnt >= p->f + 1) { nwin++; win = it; wn = in; }
        }
        if (prob) {
            int v;
            if (nwin != 1) { vt__bt_ban(p, r, nwin ? VT_BAN_EQUIVOCATION : VT_BAN_SILENT, -1); continue; }
            v = vt__bt_probe_replay(p, r, win);
            if (v != VT__V_OK) vt__bt_ban(p, r, v == VT__V_BADCHUNK ? VT_BAN_CHUNK : VT_BAN_GRADIENT, -1);
        } else if (nwin > 1) vt__bt_ban(p, r, VT_BAN_EQUIVOCATION, -1);
        else if (nwin == 1 && wn == VT__BT_JOIN_LEN) { /* a candidate: its key in its slot, unless another slot holds it */
            for (j = 0; j < N && memcmp(p->roster + 32 * (size_t)j, win + 16, 32); j++) {}
            if (j == N) memcpy(p->roster + 32 * (size_t)r, win + 16, 32);
        }
    }
    for (r = 0; r < N; r++) inprob += vt__bt_on_probation(p, r, t + 1);
    for (r = 0; r < N; r++) {
        if (!(p->joined[r] < 0 && p->alive[r]) || vt__bt_zero32(p->roster + 32 * (size_t)r)) continue;
        if (admitted < p->cfg.join_per_step && inprob < p->cfg.join_max) {
            p->joined[r] = t + 1;
            p->prob_end[r] = t + 1 + p->cfg.probation;
            admitted++;
            inprob++;
            vt__bt_event(p, VT_EV_JOIN, r, -1, VT_BAN_SILENT, p->prob_end[r]);
        } else memset(p->roster + 32 * (size_t)r, 0, 32); /* over the bounds: it may ask again */
    }
}
/* at the end of a step, completed or not: what was for it goes */
static void vt__bt_join_tidy(vt_btard_peer *p) {
    int r;
    for (r = 0; r < p->N && !p->joining; r++) {
        if (p->probe[2 * r].n && (int64_t)vt__bt_g64(p->probe[2 * r].p + 8) <= p->step) p->probe[2 * r].n = 0;
        if (p->probe[2 * r + 1].n && (int64_t)vt__bt_g64(p->probe[2 * r + 1].p + 8) <= p->step) p->probe[2 * r + 1].n = 0;
        if (p->jreq[r].n && (int64_t)vt__bt_g64(p->jreq[r].p + 8) <= p->step) p->jreq[r].n = 0;
    }
}

/* --- the newcomer's side ------------------------------------------------------------------------------- */

/* a newcomer's join request (the same bytes every time: a member keeps
   one, and a copy costs it a comparison) to the founders */
static void vt__bt_join_send(vt_btard_peer *p) {
    unsigned char m[VT__BT_JOIN_LEN], jm[90];
    unsigned char *to = p->seen;
    int i;
    vt__bt_p32(m, VT__BT_M_JOIN);
    vt__bt_p32(m + 4, (uint32_t)p->rank);
    vt__bt_p64(m + 8, (uint64_t)p->cfg.join_step);
    memcpy(m + 16, p->key.pk, 32);
    vt__bt_join_sigmsg(p, m, jm);
    vt__bt_sign(p, jm, sizeof jm, m + 48);
    for (i = 0; i < p->N; i++) to[i] = p->joined[i] == 0 && i != p->rank;
    p->net->bcast(p->net, VT__BT_TAG(p->cfg.session, p->cfg.join_step, 0, VT__PH_JOIN, 0), m, sizeof m, to);
}

/* Step discovery (VT_BTARD_JOIN_AUTO): ask every founder its step, in query rounds of at most one
   timeout (a round ends early once every founder answered), keep each founder's latest signed step,
   and take the step they vouch for (vt__bt_step_pick) once some window holds f0 + 1 of them: the join
   request is for that step + VT__BT_LEAD. 0, or -1 with the peer failed at `until`. */
static int vt__bt_discover(vt_btard_peer *p, double until) {
    int N = p->N, q, from, rc = 0, rounds = 0;
    int64_t c = -1;
    while (c < 0 && vt_net_now() < until) {
        double end = vt_net_now() + p->cfg.timeout;
        int fresh = 0, founders = 0;
        if (end > until) end = until;
        vt__bt_step_ask(p);
        rounds++;
        for (q = 0; q < N; q++) {
            founders += p->joined[q] == 0 && q != p->rank;
            p->served[q] = 0; /* a newcomer's scratch: answered this round */
        }
        while (fresh < founders) {
            uint64_t tag = 0;
            unsigned char *m = NULL;
            size_t n = 0;
            int64_t s;
            rc = p->net->recv(p->net, &from, &tag, &m, &n, end, 1);
            if (rc <= 0) break;
            if (from >= 0 && from < N && from != p->rank && VT__BT_TSESS(tag) == (p->cfg.session & 0xFF) && tag != VT__BT_BYE &&
                VT__BT_TPHASE(tag) == VT__PH_STEPA && (s = vt__bt_step_take(p, from, m, n)) >= 0) {
                p->qst[from] = s;
                if (!p->served[from]) { p->served[from] = 1; fresh++; }
            }
            VT_FREE(m, NULL);
        }
        if (rc < 0) { vt__bt_fail(p, VT_ERR_STATE, "newcomer %d: the transport closed", p->rank); return -1; }
        c = vt__bt_step_pick(p, p->qst);
        if (c < 0 && fresh >= founders) vt__bt_sleep(p->cfg.timeout / 4); /* all answered, no f0 + 1 alike: ask again soon */
    }
    if (c < 0) {
        int k = 0;
        for (q = 0; q < N; q++) k += p->qst[q] >= 0;
        vt__bt_fail(p, VT_ERR_STATE, "newcomer %d: no step vouched for by %d founders within %d steps of each other after %d query rounds (%d founders answered)",
                    p->rank, p->f0 + 1, VT__BT_SPREAD, rounds, k);
        return -1;
    }
    p->cfg.join_step = c + VT__BT_LEAD;
    p->step = p->cfg.join_step + 1;
    return 0;
}

/* a newcomer asks up to `count` members that attested the digest it took (ast, adg) for the state of
   step t: founders first (f0 + 1 founders that attested it hold one honest), never one asked already or
   whose state failed (done); the number asked */
static int vt__bt_sync_ask(vt_btard_peer *p, int64_t t, const int64_t *ast, const unsigned char *adg, unsigned char *done, int count) {
    int N = p->N, pass, i, k = 0;
    for (pass = 0; pass < 2; pass++)
        for (i = 0; i < N && k < count; i++) {
            int q = (int)((p->rank + t + i) % N);
            if (q == p->rank || done[q] || ast[q] != t || memcmp(adg + 32 * (size_t)q, p->blob_dig, 32) || (p->joined[q] == 0) != !pass) continue;
            done[q] = 1;
            p->net->send(p->net, q, VT__BT_TAG(p->cfg.session, t, 0, VT__PH_SREQ, 0), "", 0);
            k++;
        }
    return k;
}

/* Wait for the state of the next step: f0 + 1 founders' signed digests
   alike (one of them honest: at most f0 founders lie), then the state with
   that digest from whoever sent it, or from those that attested it; a
   state that is not the attested one is reported (VT_EV_BAD_STATE) and
   another fetched. The fetch must end well inside the members' PROBE
   deadline (t_step0 + compute_timeout + 2 T, vt__bt_carry): past it they
   are in the next step, refuse the old step's SREQ, and the newcomer,
   missing its PROBE, is banned SILENT. Asked one by one, a timeout each,
   f0 liars that attest first and serve a wrong state cost f0 T and got an
   honest newcomer banned (review F1). So: ATTESTs are taken after the
   digest is found too (more members to ask); the member that sends the
   state unasked gets T / 2, cut short by any wrong state; then f0 + 1
   attesters are asked at once, founders first (one of f0 + 1 founders that
   attested the digest is honest: its state comes within one transfer);
   each wrong state makes one more asked at once, a member whose state
   failed or that was asked is never asked again, and a wave with no
   answer in T makes f0 + 1 more. The price in the honest case: none (the
   designated member's state comes within the grace); under f0 liars:
   T / 2 and up to f0 + 1 states over the newcomer's link. The first time (not yet
   admitted), the join request goes again every timeout / 4 until an
   attestation comes: a copy lost with a broken connection is sent again
   (a member keeps the first copy and compares the others with it).
   0, or -1 with the peer failed. */
static int vt__bt_sync(vt_btard_peer *p, int first) {
    int N = p->N, q, k, from, rc = 0, need = p->f0 + 1, found = -1, ok;
    double span = first ? p->cfg.join_wait : (double)(N + 2) * (p->cfg.compute_timeout + 12 * p->cfg.timeout);
    double until = vt_net_now() + span, again = vt_net_now() + p->cfg.timeout / 4, ask = vt_net_now() + p->cfg.timeout;
    int64_t t = -1, want = first ? p->cfg.join_step + 1 : p->step;
    if (first && p->join_auto) { /* the time spent learning the step counts in join_wait */
        until = p->join_until;
        span = p->cfg.join_wait;
    }
    int64_t *ast = (int64_t *)VT_MALLOC(sizeof(int64_t) * (size_t)N, NULL);
    /* per founder: the digest it attested (with ast, what its last valid ATTEST says: one that says the
       same is not checked again, whatever its signature bytes), the signatures checked for it in this
       call (at most VT__BT_TRIES, as for JOIN, PROBE and statements) */
    unsigned char *adg = (unsigned char *)VT_MALLOC((32 + 2) * (size_t)N + 1, NULL), dg[32];
    unsigned char *atry = adg ? adg + 32 * (size_t)N : NULL;
    unsigned char *done = atry ? atry + N : NULL; /* asked for the state, or its state failed: never asked again */
    int asking = 0;                               /* the grace for the member that sends it unasked is over */
    vt__bt_buf *bl = p->jreq; /* a newcomer's scratch: one state per sender */
    size_t cap;
    if (!ast || !adg) { VT_FREE(ast, NULL); VT_FREE(adg, NULL); vt__bt_fail(p, VT_ERR_NOMEM, "out of memory"); return -1; }
    for (q = 0; q < N; q++) { ast[q] = -1; bl[q].n = 0; }
    memset(atry, 0, 2 * (size_t)N);
    { /* the largest state accepted: what this peer would send, and room for the bookkeeping */
        unsigned char *ck = NULL;
        size_t ckn = 0;
        vt__checkpoint_bytes(p->M, 0, "the size of the state", &ck, &ckn);
        VT_FREE(ck, NULL);
        vt_clear_error(p->M);
        cap = 2 * ckn + 4096 + 128 * (size_t)N + (size_t)N * (size_t)N * (32 + 8 * VT__BT_NSC) + 8 * (size_t)(p->d + N);
    }
    for (;;) {
        uint64_t tag = 0;
        unsigned char *m = NULL;
        size_t n = 0;
        rc = p->net->recv(p->net, &from, &tag, &m, &n, first && found < 0 && again < until ? again : until, 1);
        if (rc < 0) break;
        if (rc == 1 && (from < 0 || from >= N || from == p->rank || VT__BT_TSESS(tag) != (p->cfg.session & 0xFF) || tag == VT__BT_BYE))
            VT_FREE(m, NULL);
        else if (rc == 1 && VT__BT_TPHASE(tag) == VT__PH_ATTEST) {
            unsigned char sm[95];
            int64_t s = n == VT__BT_ATTEST_LEN ? (int64_t)vt__bt_g64(m + 12) : -1;
            if ((found < 0 || s == t) && n == VT__BT_ATTEST_LEN && vt__bt_g32(m) == VT__BT_M_ATTEST && (int)vt__bt_g32(m + 4) == from &&
                (int)vt__bt_g32(m + 8) == p->rank && s >= want && (first || s == want) && !vt__bt_zero32(p->roster + 32 * (size_t)from) &&
                !(ast[from] == s && !memcmp(adg + 32 * (size_t)from, m + 20, 32)) && atry[from] < VT__BT_TRIES) {
                atry[from]++;
                vt__bt_attest_sigmsg(p, m, sm);
                if (vt__bt_verify(p, from, sm, sizeof sm, m + 52)) {
                    int c = 0;
                    ast[from] = s;
                    memcpy(adg + 32 * (size_t)from, m + 20, 32);
                    for (q = 0; q < N; q++) c += p->joined[q] == 0 && ast[q] == s && !memcmp(adg + 32 * (size_t)q, m + 20, 32);
                    if (found < 0 && c >= need) { /* found: give the member that sends it T / 2 to do so, then ask */
                        t = s;
                        memcpy(p->blob_dig, m + 20, 32);
                        found = from;
                        p->step = t;
                        if (vt_net_now() + p->cfg.timeout / 2 < until) until = vt_net_now() + p->cfg.timeout / 2;
                    }
                }
            }
            VT_FREE(m, NULL);
        } else if (rc == 1 && VT__BT_TPHASE(tag) == VT__PH_STATE) {
            /* one per sender, of a step this sync can take: an answer to an earlier step's SREQ (f0 + 1 are asked
               at once, the first good one ends that sync) must not take the place of this step's state */
            int64_t st = n >= 24 ? (int64_t)vt__bt_g64(m + 8) : -1;
            if (!bl[from].n && n >= 24 && n <= cap && st >= want && (first || st == want) && (found < 0 || st == t)) vt__bt_set(&bl[from], m, n);
            VT_FREE(m, NULL);
        } else if (rc == 1 && VT__BT_TPHASE(tag) == VT__PH_STEPA) {
            int64_t s = first && p->join_auto && found < 0 ? vt__bt_step_take(p, from, m, n) : -1;
            VT_FREE(m, NULL);
            if (s > p->qst[from]) p->qst[from] = s;
            if (s >= 0 && vt__bt_step_lapsed(p)) { /* f0 + 1 founders (one honest) are past the step asked for, and no state came */
                int64_t c = vt__bt_step_pick(p, p->qst);
                if (c >= 0 && c + VT__BT_LEAD > p->cfg.join_step) {
                    p->cfg.join_step = c + VT__BT_LEAD;
                    p->step = p->cfg.join_step + 1;
                    vt__bt_join_send(p);
                    again = vt_net_now() + p->cfg.timeout / 4;
                }
            }
        } else if (rc == 1)
            vt__bt_mb_put(p, from, tag, m, n); /* a member's envelope of this step, once it is known */
        if (found >= 0) { /* a state in hand with the attested digest? */
            for (q = 0; q < N; q++) {
                if (!bl[q].n) continue;
                vt_sha256(bl[q].p, bl[q].n, dg);
                if (!memcmp(dg, p->blob_dig, 32)) break;
                if ((int64_t)vt__bt_g64(bl[q].p + 8) == t) { vt__bt_event(p, VT_EV_BAD_STATE, q, -1, VT_BAN_MALFORMED, t); p->st.flood++; }
                bl[q].n = 0;
                done[q] = 1; /* never asked (again) */
                if (!asking) until = vt_net_now(); /* a wrong state ends the grace */
                else vt__bt_sync_ask(p, t, ast, adg, done, 1); /* one more asked at once, in its place */
            }
            if (q < N) {
                ok = vt__bt_blob_load(p, bl[q].p, bl[q].n, t, q);
                for (k = 0; k < N; k++) bl[k].n = 0;
                VT_FREE(ast, NULL);
                VT_FREE(adg, NULL);
                if (ok && !vt__bt_needs_state(p, p->rank, t))
                    vt__bt_fail(p, VT_ERR_STATE, "newcomer %d: the attested state of step %lld does not list it as a newcomer", p->rank, (long long)t);
                return ok && p->status == VT_OK ? 0 : -1;
            }
        }
        if (first && found < 0 && vt_net_now() >= again && vt_net_now() < until) { /* not admitted yet: the request again */
            vt__bt_join_send(p);
            again = vt_net_now() + p->cfg.timeout / 4;
            if (p->join_auto && vt_net_now() >= ask) { vt__bt_step_ask(p); ask = vt_net_now() + p->cfg.timeout; } /* and is it still ahead? */
            continue;
        }
        if (rc == 0 || vt_net_now() >= until) {
            if (found < 0) break; /* the deadline, unsynced */
            asking = 1;
            if (!vt__bt_sync_ask(p, t, ast, adg, done, need)) break; /* f0 + 1 attesters at once, then f0 + 1 more a timeout later */
            until = vt_net_now() + p->cfg.timeout;
        }
    }
    for (k = 0; k < N; k++) bl[k].n = 0;
    VT_FREE(ast, NULL);
    VT_FREE(adg, NULL);
    if (rc < 0) vt__bt_fail(p, VT_ERR_STATE, "newcomer %d: the transport closed", p->rank);
    else if (found < 0)
        vt__bt_fail(p, VT_ERR_STATE, "newcomer %d: no state of step %s%lld attested by %d founders within %.1f s (%s)", p->rank, first ? ">= " : "",
                    (long long)want, need, span,
                    first ? "not admitted: its request reached too few members, the bounds on newcomers were full, or the members admitted another "
                            "key to this slot, which over TCP then no longer reaches this one"
                          : "banned, or cut off");
    else vt__bt_fail(p, VT_ERR_STATE, "newcomer %d: no member sent the state of step %lld that %d founders attested", p->rank, (long long)t, need);
    return -1;
}

/* a newcomer's step: sync, then (in probation) its gradient, committed and
   sent with its log chunk to every member; at the end of probation it is a
   member (p->joining = 0) and vt_btard_step goes on with the member's step */
static void vt__bt_step_newcomer(vt_btard_peer *p) {
    vt__bt_buf *b = &p->sb;
    unsigned char sm[79], h[32];
    int i, first = !p->join_sent;
    if (first) {
        p->join_until = vt_net_now() + p->cfg.join_wait;
        if (p->join_auto && vt__bt_discover(p, p->join_until) < 0) return;
        vt__bt_join_send(p);
        p->join_sent = 1;
    }
    if (vt__bt_sync(p, first) < 0) return;
    if (p->net->roster) p->net->roster(p->net, p->roster, p->alive); /* the members' view, and its keys, from the state */
    if (p->step >= p->prob_end[p->rank]) { p->joining = 0; return; } /* a member from this step on */
    for (i = 0; i < p->np; i++) {
        const vt_tensor *t = vt_param_at(p->M, i);
        int64_t e, ne = p->poff[i + 1] - p->poff[i];
        for (e = 0; e < ne; e++) p->w_cur[p->poff[i] + e] = (float)((const double *)t->data)[e];
    }
    vt__bt_partition(p);
    vt__bt_work(p);
    if (p->status != VT_OK) return;
    vt__bt_hash_f32(p->g, p->d, h);
    b->n = 0;
    vt__bt_add32(b, VT__BT_M_PROBE);
    vt__bt_add32(b, (uint32_t)p->rank);
    vt__bt_add64(b, (uint64_t)p->step);
    vt__bt_add(b, h, 32);
    vt__bt_add32(b, (uint32_t)p->chunk.n);
    vt__bt_add(b, p->chunk.p, p->chunk.n);
    vt__bt_probe_sigmsg(p, b->p, b->n, sm);
    if (!vt__bt_reserve(b, b->n + 64 + 1)) { vt__bt_fail(p, VT_ERR_NOMEM, "out of memory"); return; }
    vt__bt_sign(p, sm, sizeof sm, b->p + b->n);
    b->n += 64;
    if (!vt__bt_attacking(p, VT_ATTACK_SILENT)) p->net->bcast(p->net, vt__bt_tag(p, VT__PH_PROBE, 0), b->p, b->n, p->memmask);
    p->step++;
    p->st.steps++;
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
    int res = 0, q, maxr;
    if (!p) return VT_ERR_ARG;
    if (p->status != VT_OK) return p->status;
    if (!p->alive[p->rank]) return VT_ERR_STATE;
    if (p->step >= 0xFFFFFF) { vt__bt_fail(p, VT_ERR_STATE, "step %lld: the tag space has 2^24 steps", (long long)p->step); return p->status; }
    if (p->cfg.defence == VT_DEFENCE_MEAN) {
        vt__bt_step_mean(p);
        vt__bt_mb_report(p);
        p->step++;
        p->st.steps++;
        p->st.t_step += vt_net_now() - t0;
        return p->status;
    }
    if (p->joining) { /* a newcomer: admission, state, probation (>>btard: JOINING) */
        vt__bt_step_newcomer(p);
        if (p->status != VT_OK || p->joining) { p->st.t_step += vt_net_now() - t0; return p->status; }
    }
    p->rd = 0;
    p->sched = p->t_step0 = vt_net_now();
    vt__bt_mb_purge(p);
    vt__bt_roles(p);
    vt__bt_serve(p);
    p->worker = !p->val[p->rank];
    /* my validators get my chunk of the previous step */
    for (q = 0; q < p->nvp; q++)
        if (p->vtg[q] == p->rank && !vt__bt_attacking(p, VT_ATTACK_SILENT) && !vt__bt_attacking(p, VT_ATTACK_WITHHOLD_CHUNK))
            p->net->send(p->net, p->vv[q], vt__bt_tag(p, VT__PH_CHUNK, 0), p->chunk_prev.p, p->chunk_prev.n);
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
    for (p->rd = 0; p->rd < maxr; p->rd++) {
        p->st.rounds++;
        res = vt__bt_round(p);
        vt__bt_mb_report(p);
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
        vt__bt_settle_joins(p);
        vt__bt_update(p, p->fin);
        vt__bt_keep(p);
    } else {
        /* no round completed: nobody updates (never a local-only update) */
        p->st.skipped++;
        p->pv_ok = 0;
        p->chunk_prev.n = 0;
    }
    vt__bt_join_tidy(p);
    if (p->net->roster) p->net->roster(p->net, p->roster, p->alive); /* a transport that knows peers by key learns the admitted and the banned */
    p->step++;
    p->st.steps++;
    p->st.t_step += vt_net_now() - t0;
    return p->status;
}

/* --- creating a peer --------------------------------------------------------------------------------- */

/* what every signature is bound to: this run's parameters and roster */
static void vt__bt_session(vt_btard_peer *p) {
    unsigned char b[8];
    vt_sha256_ctx s;
    vt_sha256_init(&s);
    vt_sha256_update(&s, "vt-btard-session2", 17);
    vt__bt_p32(b, (uint32_t)p->cfg.session);
    vt__bt_p32(b + 4, (uint32_t)p->N);
    vt_sha256_update(&s, b, 8);
    vt_sha256_update(&s, p->roster, 32 * (size_t)p->N);
    vt__bt_p64(b, p->cfg.data_seed);
    vt_sha256_update(&s, b, 8);
    vt__bt_pf64(b, p->cfg.tau); vt_sha256_update(&s, b, 8);
    vt__bt_pf64(b, p->cfg.cc_eps); vt_sha256_update(&s, b, 8);
    vt__bt_pf64(b, p->cfg.lambda); vt_sha256_update(&s, b, 8);
    vt__bt_pf64(b, p->cfg.kappa); vt_sha256_update(&s, b, 8);
    vt__bt_p32(b, (uint32_t)p->cfg.cc_iters);
    vt__bt_p32(b + 4, (uint32_t)(p->cfg.validators | (p->cfg.defence << 16)));
    vt_sha256_update(&s, b, 8);
    if (p->N0 < p->N) { /* open slots: the rules of joining are part of the run (a run without any signs what it always did) */
        vt__bt_p32(b, (uint32_t)p->cfg.probation);
        vt__bt_p32(b + 4, (uint32_t)(p->cfg.join_max | (p->cfg.join_per_step << 16)));
        vt_sha256_update(&s, b, 8);
    }
    vt_sha256_final(&s, p->session);
}

VTDEF vt_btard_peer *vt_btard_peer_create(const vt_btard_cfg *cfg, const vt_btard_task *task, vt_net *net,
                                          const vt_btard_attack *atk) {
    vt_btard_peer *p;
    vt_desc dm = vt_desc_default(), da = vt_desc_default();
    int i, N;
    size_t NN, XN;
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
    if (cfg && (unsigned)cfg->defence > (unsigned)VT_DEFENCE_MEAN) { /* it acted as CCLIP (no validators), silently */
        vt__tls_fail(VT_ERR_ARG, "vt_btard_peer_create: cfg.defence %d is none of VT_DEFENCE_BTARD, _CCLIP, _MEAN", (int)cfg->defence);
        return NULL;
    }
    if (!cfg || cfg->defence != VT_DEFENCE_MEAN) {
        if (!vt_btard_can_sign()) {
            vt__tls_fail(VT_ERR_BACKEND, "vt_btard_peer_create: %s",
#ifdef VTRAIN_SODIUM
                         "libsodium did not initialise"
#else
                         vt__bt_nosodium
#endif
            );
            return NULL;
        }
        if (!cfg || !cfg->roster || !cfg->key) {
            vt__tls_fail(VT_ERR_ARG, "vt_btard_peer_create: BTARD needs cfg.roster (every peer's public key) and cfg.key (this peer's key pair)");
            return NULL;
        }
        if (!cfg->join && memcmp(cfg->key->pk, cfg->roster + 32 * (size_t)net->rank, 32)) {
            vt__tls_fail(VT_ERR_ARG, "vt_btard_peer_create: cfg.key is not roster[%d]", net->rank);
            return NULL;
        }
        if (cfg->join && !vt__bt_zero32(cfg->roster + 32 * (size_t)net->rank)) {
            vt__tls_fail(VT_ERR_ARG, "vt_btard_peer_create: a newcomer (cfg.join) needs an open slot: roster[%d] must be 32 zero bytes", net->rank);
            return NULL;
        }
        for (i = 0, N = 0; i < net->size; i++) N += !vt__bt_zero32(cfg->roster + 32 * (size_t)i);
        if (N < 1 || (cfg->join && cfg->join_step < 0 && cfg->join_step != VT_BTARD_JOIN_AUTO)) {
            vt__tls_fail(VT_ERR_ARG, "vt_btard_peer_create: %s", N < 1 ? "the roster has no founding member" : "cfg.join_step < 0 (VT_BTARD_JOIN_AUTO: ask the founders)");
            return NULL;
        }
    } else if (cfg && cfg->join) {
        vt__tls_fail(VT_ERR_ARG, "vt_btard_peer_create: peers join only under BTARD's defences (VT_DEFENCE_MEAN has no validation)");
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
    if (!(p->cfg.kappa > 0)) p->cfg.kappa = 4;
    if (!(p->cfg.timeout > 0)) p->cfg.timeout = 10;
    if (!(p->cfg.compute_timeout > 0)) p->cfg.compute_timeout = 60;
    if (p->cfg.threads <= 0) p->cfg.threads = 1;
    if (!p->cfg.max_chunk) p->cfg.max_chunk = (size_t)16 << 20;
    if (p->cfg.probation <= 0) p->cfg.probation = 3;
    if (p->cfg.join_max <= 0) p->cfg.join_max = 2;
    if (p->cfg.join_per_step <= 0) p->cfg.join_per_step = 1;
    if (!(p->cfg.join_wait > 0)) p->cfg.join_wait = 120;
    p->task = *task;
    if (atk) p->atk = *atk;
    else p->atk = vt_btard_attack_default(VT_ATTACK_NONE);
    p->net = net;
    p->rank = net->rank;
    p->N = N = net->size;
    if (p->cfg.key) p->key = *p->cfg.key;
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
    XN = (size_t)VT__BT_XMAX * (size_t)N;
#define VT__BT_A(ptr, type, cnt) (ptr = (type *)VT_MALLOC(sizeof(type) * (size_t)(cnt) + 1, NULL), ptr ? (memset(ptr, 0, sizeof(type) * (size_t)(cnt) + 1), 1) : 0)
    if (!VT__BT_A(p->poff, int64_t, p->np + 1) || !VT__BT_A(p->alive, unsigned char, N) || !VT__BT_A(p->mem, int, N) ||
        !VT__BT_A(p->pos, int, N) || !VT__BT_A(p->memmask, unsigned char, N) || !VT__BT_A(p->val, unsigned char, N) ||
        !VT__BT_A(p->g, float, D) || !VT__BT_A(p->gt, float, D) || !VT__BT_A(p->gp, float, D + N) ||
        !VT__BT_A(p->tmpf, float, D + N) || !VT__BT_A(p->w_cur, float, D) || !VT__BT_A(p->w_prev, float, D) ||
        !VT__BT_A(p->vv, int, 65) || !VT__BT_A(p->vtg, int, 65) || !VT__BT_A(p->xenv, unsigned char *, XN) ||
        !VT__BT_A(p->xlen, size_t, XN) || !VT__BT_A(p->pxenv, unsigned char *, XN) || !VT__BT_A(p->pxlen, size_t, XN) || !VT__BT_A(p->xdig, unsigned char, XN * 32) || !VT__BT_A(p->c_has, unsigned char, N) ||
        !VT__BT_A(p->c_parts, unsigned char, NN * 32) || !VT__BT_A(p->c_chunk, unsigned char, N * 32) ||
        !VT__BT_A(p->c_mprng, unsigned char, N * 32) || !VT__BT_A(p->c_vt, int, N) || !VT__BT_A(p->c_vc, int, N) ||
        !VT__BT_A(p->a_inc, unsigned char, NN) || !VT__BT_A(p->agg, float, D + N) || !VT__BT_A(p->fin, float, D + N) ||
        !VT__BT_A(p->rows, float, D + N) || !VT__BT_A(p->recvd, unsigned char, N) || !VT__BT_A(p->r_x, unsigned char, N * 32) ||
        !VT__BT_A(p->sc, double, NN * VT__BT_NSC) || !VT__BT_A(p->areq, unsigned char, NN) || !VT__BT_A(p->pend, unsigned char, N) ||
        !VT__BT_A(p->audit, unsigned char, N) || !VT__BT_A(p->pv_mem, int, N) || !VT__BT_A(p->pv_has, unsigned char, N) ||
        !VT__BT_A(p->pv_parts, unsigned char, NN * 32) || !VT__BT_A(p->pv_chunk, unsigned char, N * 32) ||
        !VT__BT_A(p->pv_sc, double, NN * VT__BT_NSC) || !VT__BT_A(p->pv_agg, float, D + N) || !VT__BT_A(p->mb, vt__bt_mail *, N) ||
        !VT__BT_A(p->mb_cnt, int, N) || !VT__BT_A(p->mb_bytes, size_t, N) || !VT__BT_A(p->late, int64_t, N) ||
        !VT__BT_A(p->flood, int64_t, N) || !VT__BT_A(p->ds_item, vt__bt_buf, 2 * N) || !VT__BT_A(p->ds_chain, vt__bt_buf, 2 * N) ||
        !VT__BT_A(p->ds_idg, unsigned char, 2 * (size_t)N * 32) || !VT__BT_A(p->ds_cnt, unsigned char, N) ||
        !VT__BT_A(p->ds_fresh, unsigned char, 2 * N) || !VT__BT_A(p->ds_active, unsigned char, N) ||
        !VT__BT_A(p->hs, unsigned char, N * 32) || !VT__BT_A(p->roster, unsigned char, N * 32) ||
        !VT__BT_A(p->joined, int64_t, N) || !VT__BT_A(p->prob_end, int64_t, N) || !VT__BT_A(p->ban_at, int64_t, N) ||
        !VT__BT_A(p->ban_why, int, N) || !VT__BT_A(p->jreq, vt__bt_buf, N) || !VT__BT_A(p->probe, vt__bt_buf, 2 * N) ||
        !VT__BT_A(p->jtries, unsigned char, N) || !VT__BT_A(p->served, unsigned char, N) || !VT__BT_A(p->seen, unsigned char, N) ||
        !VT__BT_A(p->qans, unsigned char, N) || !VT__BT_A(p->qst, int64_t, N) || !VT__BT_A(p->asked, unsigned char, N) ||
        !VT__BT_A(p->ans_at, int64_t, N) || !VT__BT_A(p->ans_x, unsigned, N) ||
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
    p->pstep = p->xstep = p->done_step = -1;
    if (p->cfg.roster) memcpy(p->roster, p->cfg.roster, 32 * (size_t)N);
    for (i = 0, p->N0 = 0; i < N; i++) { /* founders, and open slots (>>btard: JOINING) */
        p->joined[i] = p->cfg.defence == VT_DEFENCE_MEAN || !vt__bt_zero32(p->roster + 32 * (size_t)i) ? 0 : -1;
        p->N0 += p->joined[i] == 0;
        p->ban_at[i] = -1;
        p->ban_why[i] = -1;
    }
    p->f0 = (p->N0 - 1) / 2;
    p->blob_step = -1;
    p->stmt_step = -1;
    for (i = 0; i < N; i++) p->qst[i] = -1;
    if (p->cfg.join) { /* a newcomer; one that asks its step first starts at 0 and learns it (vt__bt_discover) */
        p->joining = 1;
        p->join_auto = p->cfg.join_step == VT_BTARD_JOIN_AUTO;
        if (p->join_auto) p->cfg.join_step = 0;
        p->step = p->cfg.join_step + 1;
    }
    p->cfg.roster = p->roster;
    p->cfg.key = NULL; /* the copy in p->key is used */
    vt__bt_session(p);
    /* the mailbox's bounds: the largest message any phase sends (an AGG with
       every part claimed not finite, a REVEAL with a whole chunk, a relay
       round), four of them per sender, and 16 + 2 messages per exchange and
       relay round */
    {
        int64_t L0 = (D + N - 1) / N;
        size_t env = VT__BT_EH + 32 * (size_t)N + 4 + 64 * VT__BT_PROOF + 64 + 4 * (size_t)L0 * (size_t)(N + 1) + p->cfg.max_chunk;
        size_t ds = 64 + (size_t)N * 2 * (64 + 128 + 32 * (size_t)N + 8 + ((size_t)N / 2 + 1) * (76 + 64 * (size_t)N));
        if (p->N0 < N) env += (size_t)p->cfg.join_max * (p->cfg.max_chunk + 128) + (size_t)N * (VT__BT_JOIN_LEN + 4);
        p->mb_cap_bytes = 4 * (env > ds ? env : ds);
        p->mb_cap_cnt = 64 + 2 * VT__BT_XMAX * ((N - 1) / 2 + 3);
    }
    return p;
}

VTDEF void vt_btard_peer_destroy(vt_btard_peer *p) {
    int i;
    if (!p) return;
    if (p->task.release) {
        if (p->mm) p->task.release(p->mm, p->task.user);
        if (p->ma) p->task.release(p->ma, p->task.user);
    }
    vt_destroy(p->M);
    vt_destroy(p->A);
    vt__bt_mb_free(p);
    if (p->xenv) for (i = 0; i < VT__BT_XMAX * p->N; i++) VT_FREE(p->xenv[i], NULL);
    if (p->pxenv) for (i = 0; i < VT__BT_XMAX * p->N; i++) VT_FREE(p->pxenv[i], NULL);
    if (p->ds_item) for (i = 0; i < 2 * p->N; i++) { VT_FREE(p->ds_item[i].p, NULL); VT_FREE(p->ds_chain[i].p, NULL); }
    VT_FREE(p->poff, NULL); VT_FREE(p->alive, NULL); VT_FREE(p->mem, NULL); VT_FREE(p->pos, NULL); VT_FREE(p->memmask, NULL);
    VT_FREE(p->val, NULL); VT_FREE(p->g, NULL); VT_FREE(p->gt, NULL); VT_FREE(p->gp, NULL); VT_FREE(p->tmpf, NULL);
    VT_FREE(p->w_cur, NULL); VT_FREE(p->w_prev, NULL); VT_FREE(p->vv, NULL); VT_FREE(p->vtg, NULL);
    VT_FREE(p->xenv, NULL); VT_FREE(p->xlen, NULL); VT_FREE(p->xdig, NULL); VT_FREE(p->pxenv, NULL); VT_FREE(p->pxlen, NULL);
    VT_FREE(p->c_has, NULL); VT_FREE(p->c_parts, NULL); VT_FREE(p->c_chunk, NULL); VT_FREE(p->c_mprng, NULL);
    VT_FREE(p->c_vt, NULL); VT_FREE(p->c_vc, NULL); VT_FREE(p->a_inc, NULL); VT_FREE(p->agg, NULL); VT_FREE(p->fin, NULL);
    VT_FREE(p->rows, NULL); VT_FREE(p->recvd, NULL); VT_FREE(p->r_x, NULL); VT_FREE(p->sc, NULL); VT_FREE(p->areq, NULL);
    VT_FREE(p->pend, NULL); VT_FREE(p->audit, NULL);
    VT_FREE(p->pv_mem, NULL); VT_FREE(p->pv_has, NULL); VT_FREE(p->pv_parts, NULL); VT_FREE(p->pv_chunk, NULL);
    VT_FREE(p->pv_sc, NULL); VT_FREE(p->pv_agg, NULL);
    VT_FREE(p->mb, NULL); VT_FREE(p->mb_cnt, NULL); VT_FREE(p->mb_bytes, NULL); VT_FREE(p->late, NULL); VT_FREE(p->flood, NULL);
    VT_FREE(p->ds_item, NULL); VT_FREE(p->ds_chain, NULL); VT_FREE(p->ds_idg, NULL); VT_FREE(p->ds_cnt, NULL);
    VT_FREE(p->ds_fresh, NULL); VT_FREE(p->ds_active, NULL);
    VT_FREE(p->est1, NULL); VT_FREE(p->est2, NULL); VT_FREE(p->ring, NULL); VT_FREE(p->ev, NULL);
    VT_FREE(p->hs, NULL); VT_FREE(p->roster, NULL);
    if (p->jreq) for (i = 0; i < p->N; i++) VT_FREE(p->jreq[i].p, NULL);
    if (p->probe) for (i = 0; i < 2 * p->N; i++) VT_FREE(p->probe[i].p, NULL);
    VT_FREE(p->joined, NULL); VT_FREE(p->prob_end, NULL); VT_FREE(p->ban_at, NULL); VT_FREE(p->ban_why, NULL);
    VT_FREE(p->jreq, NULL); VT_FREE(p->probe, NULL); VT_FREE(p->jtries, NULL); VT_FREE(p->served, NULL); VT_FREE(p->seen, NULL);
    VT_FREE(p->qans, NULL); VT_FREE(p->qst, NULL); VT_FREE(p->asked, NULL); VT_FREE(p->ans_at, NULL); VT_FREE(p->ans_x, NULL);
    VT_FREE(p->blob.p, NULL);
    VT_FREE(p->chunk.p, NULL); VT_FREE(p->chunk_prev.p, NULL); VT_FREE(p->tmp.p, NULL);
    VT_FREE(p->evid.p, NULL); VT_FREE(p->sb.p, NULL); VT_FREE(p->sb2.p, NULL);
#ifdef VTRAIN_SODIUM
    sodium_memzero(p->key.sk, sizeof p->key.sk);
#endif
    VT_FREE(p, NULL);
}

VTDEF const char *vt_btard_error(const vt_btard_peer *p) { return p ? p->msg : "no peer"; }
VTDEF int64_t vt_btard_step_index(const vt_btard_peer *p) { return p->step; }
VTDEF int vt_btard_rank(const vt_btard_peer *p) { return p->rank; }
VTDEF int vt_btard_alive(const vt_btard_peer *p, int rank) { return rank >= 0 && rank < p->N && p->alive[rank]; }
VTDEF int vt_btard_alive_count(const vt_btard_peer *p) {
    int i, k = 0;
    for (i = 0; i < p->N; i++) k += p->alive[i] && p->joined[i] >= 0;
    return k;
}
VTDEF vt_ctx *vt_btard_ctx(vt_btard_peer *p) { return p->M; }
VTDEF void *vt_btard_model(vt_btard_peer *p) { return p->mm; }
VTDEF void vt_btard_digest(const vt_btard_peer *p, unsigned char out[32]) {
    vt_weights_digest(p->M, out);
}
VTDEF void vt_btard_last_r(const vt_btard_peer *p, unsigned char out[32]) { memcpy(out, p->pv_r, 32); }
VTDEF int vt_btard_events(const vt_btard_peer *p, const vt_btard_event **ev) {
    *ev = p->ev;
    return p->nev;
}
VTDEF void vt_btard_stats_get(const vt_btard_peer *p, vt_btard_stats *s) { *s = p->st; }
VTDEF vt_btard_membership vt_btard_member(const vt_btard_peer *p, int rank, int64_t *since) {
    if (since) *since = -1;
    if (!p || rank < 0 || rank >= p->N) return VT_BTARD_OPEN;
    if (since) *since = p->joined[rank];
    if (!p->alive[rank]) return VT_BTARD_BANNED;
    if (p->joined[rank] < 0) return VT_BTARD_OPEN;
    return p->step < p->prob_end[rank] ? VT_BTARD_PROBATION : VT_BTARD_MEMBER;
}
VTDEF void vt_btard_view_digest(const vt_btard_peer *p, unsigned char out[32]) {
    vt_sha256_ctx s;
    unsigned char b[36];
    int i;
    vt_sha256_init(&s);
    vt_sha256_update(&s, "vt-btard-view2", 14);
    for (i = 0; i < p->N; i++) {
        b[0] = p->alive[i];
        vt__bt_p64(b + 1, (uint64_t)p->joined[i]);
        vt__bt_p64(b + 9, (uint64_t)p->prob_end[i]);
        vt__bt_p64(b + 17, (uint64_t)p->ban_at[i]);
        vt__bt_p32(b + 25, (uint32_t)p->ban_why[i]);
        vt_sha256_update(&s, b, 29);
        vt_sha256_update(&s, p->roster + 32 * (size_t)i, 32);
    }
    vt_sha256_final(&s, out);
}

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

/* the first ban of each rank in p's events: step and reason (-1: none) */
static void vt__bt_bans_of(const vt_btard_peer *p, int64_t *at, int *why) {
    int i;
    for (i = 0; i < p->N; i++) { at[i] = -1; why[i] = -1; }
    for (i = 0; i < p->nev; i++)
        if (p->ev[i].kind == VT_EV_BAN && at[p->ev[i].peer] < 0) { at[p->ev[i].peer] = p->ev[i].step; why[p->ev[i].peer] = (int)p->ev[i].reason; }
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
    vt_btard_key *keys;
    unsigned char *roster;
    int64_t *at2;
    int *why2;
    int i, j, obsv = -1;
    double t0 = vt_net_now();
    vt_btard_peer *o;
    vt_btard_cfg c = cfg ? *cfg : vt_btard_cfg_default();
    memset(res, 0, sizeof *res);
    res->n = n;
    res->attackers_banned_at = -1;
    for (i = 0; i < n && obsv < 0; i++) if (!attacks || attacks[i].kind == VT_ATTACK_NONE) obsv = i;
    if (obsv < 0) { res->status = VT_ERR_ARG; snprintf(res->message, sizeof res->message, "no honest peer"); return res->status; }
    res->observer = obsv;
    eps = vt_net_inproc_create(n, 0);
    if (eps && c.net_jitter > 0) vt_net_inproc_jitter(eps[0], c.net_jitter, c.data_seed ^ 0x6a6974746572ull);
    peers = (vt_btard_peer **)VT_MALLOC(sizeof(vt_btard_peer *) * (size_t)n, NULL);
    th = (vt__bt_thr *)VT_MALLOC(sizeof(vt__bt_thr) * (size_t)n, NULL);
    tid = (pthread_t *)VT_MALLOC(sizeof(pthread_t) * (size_t)n, NULL);
    keys = (vt_btard_key *)VT_MALLOC(sizeof(vt_btard_key) * (size_t)n, NULL);
    roster = (unsigned char *)VT_MALLOC(32 * (size_t)n, NULL);
    at2 = (int64_t *)VT_MALLOC(sizeof(int64_t) * (size_t)n, NULL);
    why2 = (int *)VT_MALLOC(sizeof(int) * (size_t)n, NULL);
    res->banned_at = (int64_t *)VT_MALLOC(sizeof(int64_t) * (size_t)n, NULL);
    res->ban_reason = (int *)VT_MALLOC(sizeof(int) * (size_t)n, NULL);
    if (!eps || !peers || !th || !tid || !keys || !roster || !at2 || !why2 || !res->banned_at || !res->ban_reason) {
        res->status = VT_ERR_NOMEM;
        snprintf(res->message, sizeof res->message, "out of memory");
        if (eps) for (i = 0; i < n; i++) eps[i]->destroy(eps[i]);
        VT_FREE(peers, NULL); VT_FREE(th, NULL); VT_FREE(tid, NULL); VT_FREE(keys, NULL); VT_FREE(roster, NULL);
        VT_FREE(at2, NULL); VT_FREE(why2, NULL);
        return res->status;
    }
    /* identities: fresh from the OS, or reproducible from secret_seed (tests) */
    for (i = 0; i < n && c.defence != VT_DEFENCE_MEAN; i++) {
        vt_status ks;
        if (c.secret_seed) {
            unsigned char seed[32];
            int k;
            for (k = 0; k < 4; k++) vt__bt_p64(seed + 8 * k, vt_rng_u64(c.secret_seed, 0x6b657973u, (uint64_t)(4 * i + k)));
            ks = vt_btard_key_from_seed(&keys[i], seed);
        } else ks = vt_btard_key_new(&keys[i]);
        if (ks != VT_OK) {
            res->status = ks;
            snprintf(res->message, sizeof res->message, "%.500s", vt_last_error());
            for (j = 0; j < n; j++) eps[j]->destroy(eps[j]);
            VT_FREE(peers, NULL); VT_FREE(th, NULL); VT_FREE(tid, NULL); VT_FREE(keys, NULL); VT_FREE(roster, NULL);
            VT_FREE(at2, NULL); VT_FREE(why2, NULL);
            return res->status;
        }
        memcpy(roster + 32 * (size_t)i, keys[i].pk, 32);
    }
    c.roster = roster;
    for (i = 0; i < n; i++) {
        c.key = c.defence != VT_DEFENCE_MEAN ? &keys[i] : NULL;
        peers[i] = vt_btard_peer_create(&c, task, eps[i], attacks ? &attacks[i] : NULL);
        if (!peers[i]) {
            res->status = vt_last_status() != VT_OK ? vt_last_status() : VT_ERR_STATE;
            snprintf(res->message, sizeof res->message, "peer %d: %.400s", i, vt_last_error());
            for (j = 0; j < i; j++) vt_btard_peer_destroy(peers[j]);
            for (j = 0; j < n; j++) eps[j]->destroy(eps[j]);
            VT_FREE(peers, NULL); VT_FREE(th, NULL); VT_FREE(tid, NULL); VT_FREE(keys, NULL); VT_FREE(roster, NULL);
            VT_FREE(at2, NULL); VT_FREE(why2, NULL);
            return res->status;
        }
    }
    memset(keys, 0, sizeof(vt_btard_key) * (size_t)n);
    for (i = 0; i < n; i++) {
        th[i].p = peers[i]; th[i].nsteps = nsteps; th[i].done = 0; th[i].observer = i == obsv; th[i].obs = obs; th[i].ou = obs_user;
        pthread_create(&tid[i], NULL, vt__bt_thread, &th[i]);
    }
    /* the honest peers first; then whoever is left (Byzantines waiting on a
       swarm that dropped them) finds the hub closed and gives up */
    for (i = 0; i < n; i++) if (!attacks || attacks[i].kind == VT_ATTACK_NONE) pthread_join(tid[i], NULL);
    res->seconds = vt_net_now() - t0;
    vt_net_inproc_close(eps[0]);
    for (i = 0; i < n; i++) if (attacks && attacks[i].kind != VT_ATTACK_NONE) pthread_join(tid[i], NULL);
    o = peers[obsv];
    res->steps = th[obsv].done;
    res->status = o->status;
    if (o->status != VT_OK) snprintf(res->message, sizeof res->message, "%.500s", o->msg);
    vt_btard_stats_get(o, &res->stats);
    res->step_ms = res->steps ? 1e3 * res->stats.t_step / (double)res->steps : 0;
    vt_btard_digest(o, res->digest);
    vt__bt_bans_of(o, res->banned_at, res->ban_reason);
    res->events = (vt_btard_event *)VT_MALLOC(sizeof(vt_btard_event) * (size_t)(o->nev + 1), NULL);
    if (res->events) { if (o->nev) memcpy(res->events, o->ev, sizeof(vt_btard_event) * (size_t)o->nev); res->nevents = o->nev; }
    /* every honest peer: nobody honest banned in its view; its ban list, ban
       steps, ban reasons and weights those of the observer; every step done */
    res->views_agree = 1;
    for (i = 0; i < n; i++) {
        int honest_i = !attacks || attacks[i].kind == VT_ATTACK_NONE;
        unsigned char dg[32];
        if (!honest_i) continue;
        vt__bt_bans_of(peers[i], at2, why2);
        for (j = 0; j < n; j++) {
            int honest_j = !attacks || attacks[j].kind == VT_ATTACK_NONE;
            if (honest_j && !peers[i]->alive[j]) { res->honest_banned++; res->views_agree = 0; }
            if (peers[i]->alive[j] != o->alive[j] || at2[j] != res->banned_at[j] || why2[j] != res->ban_reason[j]) res->views_agree = 0;
        }
        if (th[i].done != th[obsv].done) res->views_agree = 0;
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
    VT_FREE(peers, NULL); VT_FREE(th, NULL); VT_FREE(tid, NULL); VT_FREE(keys, NULL); VT_FREE(roster, NULL);
    VT_FREE(at2, NULL); VT_FREE(why2, NULL);
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

/* ==========================================================================
   >>cnn  ready tasks with batch norm: the digits CNN and a CIFAR ResNet-18

   BATCH NORM IN A SWARM. A batch norm in training normalises with its
   minibatch's mean and variance, and a single-machine run also moves
   running statistics (model state: vtrain commits them in every step's
   digest) that evaluation then uses. In BTARD each peer computes its
   gradient on its own minibatch, so per-peer running statistics would
   differ from peer to peer, and the invariant every defence rests on -
   every honest peer holds identical state, a validator recomputes a
   peer's gradient from (weights, public seed) bit for bit, the weights
   digest names a peer whose state split - would no longer hold. The
   choices, and why this one:
     * aggregate the batch statistics like gradients (CenteredClip): then
       they are claims a Byzantine can bend within the honest spread, so
       they need commitments, validation and their own checks (a protocol
       change for every message that carries them), and CenteredClip's
       bound for gradients says nothing about what a bent variance does to
       evaluation;
     * recompute them from the agreed public batches: every peer would
       forward every other peer's minibatch each step (n times the forward
       work; 16x in the paper's setting);
     * a normalisation with no batch-dependent state (group or layer
       norm): sound, but not the paper's ResNet-18 (and vtrain has no
       group norm);
     * CHOSEN: no running statistics in the training state. The training
       forward passes no state to vt_batchnorm2d (it uses the batch's
       statistics and moves nothing), so a gradient depends on the weights
       and the public seed alone - exactly what validators recompute, with
       batch norm's rounding points in the committed chunk like any
       other's - and the weights digest covers everything a step carries.
       The running statistics are recomputed when someone evaluates, from
       the agreed weights and a public calibration set (the first `calib`
       training images, no augmentation), in a private context
       (vt_btard_cnn_running): the average of the calibration batches'
       statistics ("precise BN": Wu and Johnson, "Rethinking 'Batch' in
       BatchNorm", 2021, find it at least as good as the moving average).
       Nothing a peer sends enters them, so there is nothing to lie about:
       a Byzantine can move them only by moving the weights, which the
       protocol already bounds and validates. A peer that normalises its
       own gradient with other statistics (a running average, a bigger
       batch) sends a gradient that is not the recomputation: banned
       (GRADIENT) when a validator draws it, like any other lie
       (tests/test_btard_cnn.c). The cost: one forward pass over the
       calibration set per evaluation, none per step.
   vt_resnet_init always creates running statistics; in the training
   contexts the task detaches them from the model (the forward passes
   none), so they stay at their initial (0, 1) on every peer: constant
   values in the digest. The calibration's rounding points are verified
   ones whose rare undecided roundings are not logged: it reports how many
   there were (0: the same bits on every IEEE machine; otherwise on every
   machine with the same eval_order).

   THE PAPER'S SETTING (seed-btard.md): ResNet-18 on CIFAR-10, 8 images per
   peer per step, 16 peers, 7 Byzantine; SGD with Nesterov momentum 0.9,
   weight decay 5e-4. Here the base width defaults to 8 (the paper: 64)
   so that 16 peers fit on two cores, and without --data the images are
   the synthetic CIFAR-shaped set (CIFAR-10 cannot be downloaded on the
   machine these figures were measured on).
   ========================================================================== */

typedef struct vt__bt_cnn_m {
    vt_resnet rn;                                     /* RESNET18 */
    vt_tensor *w1, *g1, *b1, *w2, *g2, *b2, *fw, *fb; /* DIGITS */
    vt_tensor *s1, *s2;                               /* DIGITS, evaluation contexts only */
} vt__bt_cnn_m;

/* the batch norms of a ResNet in creation order: stem, then per block c1, c2, c3, shortcut */
static int vt__bt_rn_norms(vt_resnet *r, vt_convbn **out) {
    int q, k = 0;
    out[k++] = &r->stem;
    for (q = 0; q < r->nblocks; q++) {
        vt_resblock *b = &r->blocks[q];
        out[k++] = &b->c1;
        out[k++] = &b->c2;
        if (b->bottleneck) out[k++] = &b->c3;
        if (b->has_sc) out[k++] = &b->sc;
    }
    return k;
}
#define VT__BT_RN_MAXNORM 64

/* the model on c; state: with running statistics (evaluation) or without (training) */
static vt__bt_cnn_m *vt__bt_cnn_make(vt_ctx *c, const vt_btard_cnn *t, int state) {
    vt__bt_cnn_m *m = (vt__bt_cnn_m *)VT_MALLOC(sizeof(vt__bt_cnn_m), NULL);
    if (!m) { vt_set_error(c, VT_ERR_NOMEM, "the CNN task: out of memory"); return NULL; }
    memset(m, 0, sizeof *m);
    if (t->model == VT_BTARD_CNN_RESNET18) {
        vt_resnet_config cfg = vt_resnet_default(18);
        vt_convbn *nb[VT__BT_RN_MAXNORM];
        int k, nn;
        cfg.width = t->width;
        vt_resnet_init(c, &m->rn, &cfg, 2024);
        if (!state && m->rn.blocks) {
            nn = vt__bt_rn_norms(&m->rn, nb);
            for (k = 0; k < nn; k++) nb[k]->st = NULL; /* the training forward moves no running statistics */
        }
    } else {
        int64_t W = t->width, n1[4], n2[4], c1[1], c2[1], nf[2], nb[1];
        n1[0] = W; n1[1] = 1; n1[2] = 3; n1[3] = 3;
        n2[0] = 2 * W; n2[1] = W; n2[2] = 3; n2[3] = 3;
        c1[0] = W; c2[0] = 2 * W; nf[0] = 10; nf[1] = 2 * W * 16; nb[0] = 10;
        m->w1 = vt_param(c, "conv1.w", 4, n1);
        m->g1 = vt_param(c, "bn1.w", 1, c1);
        m->b1 = vt_param(c, "bn1.b", 1, c1);
        m->w2 = vt_param(c, "conv2.w", 4, n2);
        m->g2 = vt_param(c, "bn2.w", 1, c2);
        m->b2 = vt_param(c, "bn2.b", 1, c2);
        m->fw = vt_param(c, "fc.w", 2, nf);
        m->fb = vt_param(c, "fc.b", 1, nb);
        if (state) {
            m->s1 = vt_bn_state(c, "bn1.running", W);
            m->s2 = vt_bn_state(c, "bn2.running", 2 * W);
        }
        vt_init_normal(c, m->w1, 11, 0, sqrt(2.0 / 9));
        vt_init_normal(c, m->w2, 11, 1, sqrt(2.0 / (9.0 * (double)W)));
        vt_init_normal(c, m->fw, 11, 2, sqrt(1.0 / (double)(2 * W * 16)));
        vt_init_const(c, m->g1, 1.0);
        vt_init_const(c, m->b1, 0.0);
        vt_init_const(c, m->g2, 1.0);
        vt_init_const(c, m->b2, 0.0);
        vt_init_const(c, m->fb, 0.0);
    }
    return m;
}

/* images x (B,1,8,8) or (B,3,32,32) -> logits (B,10); mom moves the running statistics (when the
   model has them and gradients are on) */
static vt_tensor *vt__bt_cnn_forward(vt_ctx *c, vt__bt_cnn_m *m, const vt_btard_cnn *t, vt_tensor *x, double mom) {
    if (t->model == VT_BTARD_CNN_RESNET18) {
        m->rn.cfg.bn_momentum = mom;
        return vt_resnet_forward(c, &m->rn, x);
    }
    x = vt_conv2d(c, x, m->w1, NULL, 1, 1, 1, 1);
    x = vt_relu(c, vt_batchnorm2d(c, x, m->g1, m->b1, m->s1, mom, 1e-5));
    x = vt_conv2d(c, x, m->w2, NULL, 1, 1, 1, 1);
    x = vt_relu(c, vt_batchnorm2d(c, x, m->g2, m->b2, m->s2, mom, 1e-5));
    x = vt_maxpool2d(c, x, 2, 2, 0);
    return vt_linear(c, vt_flatten(c, x), m->fw, m->fb);
}

static int64_t vt__bt_cnn_px(const vt_btard_cnn *t) { return t->model == VT_BTARD_CNN_RESNET18 ? 3072 : 64; }
static vt_tensor *vt__bt_cnn_images(vt_ctx *c, const vt_btard_cnn *t, int B, const float *x) {
    int64_t xs[4];
    xs[0] = B;
    if (t->model == VT_BTARD_CNN_RESNET18) { xs[1] = 3; xs[2] = 32; xs[3] = 32; }
    else { xs[1] = 1; xs[2] = 8; xs[3] = 8; }
    return vt_from_f32(c, 4, xs, x);
}
/* image i of the training (test 0) or test (test 1) split, without augmentation; its label */
static int vt__bt_cnn_image(const vt_btard_cnn *t, int test, int i, float *out) {
    if (t->model == VT_BTARD_CNN_RESNET18) {
        const vt_cifar *d = test ? &t->test : &t->train;
        vt_cifar_image(d, i, 0, 0, 0, 0, out);
        return d->y[i];
    } else {
        int k = t->perm[test ? t->ntrain + i : i];
        memcpy(out, t->digits.x + 64 * (size_t)k, sizeof(float) * 64);
        return t->digits.y[k];
    }
}

static void *vt__bt_cnn_init(vt_ctx *c, void *user) { return vt__bt_cnn_make(c, (const vt_btard_cnn *)user, 0); }
static vt_optim *vt__bt_cnn_opt(vt_ctx *c, void *model, void *user) {
    const vt_btard_cnn *t = (const vt_btard_cnn *)user;
    vt_sgd_desc s = vt_sgd_default();
    (void)model;
    s.lr = t->lr;
    s.momentum = 0.9;
    if (t->model == VT_BTARD_CNN_RESNET18) { s.nesterov = 1; s.weight_decay = 5e-4; }
    return vt_sgd_create(c, &s);
}
/* one minibatch from the public seed: images drawn with replacement from the training split
   (seed, 0, b); for the ResNet augmented from (seed, 1, b) */
static vt_status vt__bt_cnn_loss(vt_ctx *c, void *model, uint64_t seed, int flip, void *user) {
    const vt_btard_cnn *t = (const vt_btard_cnn *)user;
    int B = t->batch, b;
    int64_t ys[1], px = vt__bt_cnn_px(t);
    float *x = (float *)VT_MALLOC(sizeof(float) * (size_t)(px * B), NULL);
    int32_t *y = (int32_t *)VT_MALLOC(sizeof(int32_t) * (size_t)B, NULL);
    vt_tensor *lg;
    if (!x || !y || !model) { VT_FREE(x, NULL); VT_FREE(y, NULL); return VT_ERR_NOMEM; }
    for (b = 0; b < B; b++) {
        int k = (int)(vt_rng_u64(seed, 0, (uint64_t)b) % (uint64_t)t->ntrain), lab;
        if (t->model == VT_BTARD_CNN_RESNET18) {
            vt_cifar_image(&t->train, k, 1, seed, 1, (uint64_t)b, x + px * b);
            lab = t->train.y[k];
        } else lab = vt__bt_cnn_image(t, 0, k, x + px * b);
        y[b] = flip ? 9 - lab : lab;
    }
    ys[0] = B;
    lg = vt__bt_cnn_forward(c, (vt__bt_cnn_m *)model, t, vt__bt_cnn_images(c, t, B, x), 0.1);
    vt_backward(c, vt_cross_entropy(c, lg, vt_from_i32(c, 1, ys, y)));
    VT_FREE(x, NULL);
    VT_FREE(y, NULL);
    return vt_status_of(c);
}
static void vt__bt_cnn_release(void *model, void *user) {
    vt__bt_cnn_m *m = (vt__bt_cnn_m *)model;
    (void)user;
    if (!m) return;
    vt_resnet_free(&m->rn);
    VT_FREE(m, NULL);
}
static double vt__bt_cnn_lr(int64_t s, void *user) {
    const vt_btard_cnn *t = (const vt_btard_cnn *)user;
    double f = t->decay > 0 ? (double)(s < t->decay ? s : t->decay) / (double)t->decay : 0;
    return t->lr * (1 - 0.9 * f); /* + - * / only: the same double everywhere */
}

static vt_status vt__bt_cnn_defaults(vt_btard_cnn *t, int width, int batch, double lr) {
    t->width = width > 0 ? width : t->model == VT_BTARD_CNN_RESNET18 ? 8 : 16;
    t->batch = batch > 0 ? batch : 8;
    t->lr = lr > 0 ? lr : 0.05;
    t->calib = 512;
    if (t->width > 1024 || t->batch < 2 || t->batch > 4096) {
        vt_btard_cnn_free(t);
        return vt__tls_fail(VT_ERR_ARG, "the CNN task: width %d (1..1024), batch %d (2..4096: batch norm needs two images)", t->width, t->batch);
    }
    return VT_OK;
}

VTDEF vt_status vt_btard_cnn_digits(vt_btard_cnn *t, const char *path, int width, int batch, double lr) {
    int i;
    memset(t, 0, sizeof *t);
    t->model = VT_BTARD_CNN_DIGITS;
    if (vt_digits_load(path, &t->digits) != VT_OK) return vt_last_status();
    t->perm = (int32_t *)VT_MALLOC(sizeof(int32_t) * (size_t)t->digits.n + 1, NULL);
    if (!t->perm) { vt_btard_cnn_free(t); return vt__tls_fail(VT_ERR_NOMEM, "out of memory"); }
    for (i = 0; i < t->digits.n; i++) t->perm[i] = (int32_t)vt_shuffle(7, 0, (uint64_t)i, (uint64_t)t->digits.n);
    t->ntest = t->digits.n / 5;
    t->ntrain = t->digits.n - t->ntest;
    if (t->ntrain < 1 || t->ntest < 1) { vt_btard_cnn_free(t); return vt__tls_fail(VT_ERR_FORMAT, "'%s': too few samples to split", path); }
    return vt__bt_cnn_defaults(t, width, batch, lr);
}

/* the synthetic set: image i of class i % 10, stripes whose direction, period and colour depend
   on the class, plus noise from (31, i, pixel): the recipe of examples/cnnprog.h */
static int vt__bt_synthetic(vt_cifar *d, int first, int n) {
    int i, ch, y, x;
    memset(d, 0, sizeof *d);
    d->x = (unsigned char *)VT_MALLOC((size_t)n * 3072, NULL);
    d->y = (int32_t *)VT_MALLOC(sizeof(int32_t) * (size_t)n, NULL);
    if (!d->x || !d->y) { vt_cifar_free(d); return 0; }
    d->n = n;
    for (i = 0; i < n; i++) {
        int g = first + i, k = g % 10;
        d->y[i] = k;
        for (ch = 0; ch < 3; ch++)
            for (y = 0; y < 32; y++)
                for (x = 0; x < 32; x++) {
                    int pos = k < 5 ? x : y, per = 3 + k % 5, on = (pos / per) % 2;
                    int v = (on ? 80 + 40 * ((k + ch) % 3) : 60) +
                            (int)(vt_rng_u64(31, (uint64_t)g, (uint64_t)(ch * 1024 + y * 32 + x)) % 61) - 30;
                    d->x[(size_t)i * 3072 + ch * 1024 + y * 32 + x] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
    }
    return 1;
}

VTDEF vt_status vt_btard_cnn_cifar(vt_btard_cnn *t, const char *dir, int width, int batch, double lr) {
    memset(t, 0, sizeof *t);
    t->model = VT_BTARD_CNN_RESNET18;
    if (!dir) {
        t->synthetic = 1;
        if (!vt__bt_synthetic(&t->train, 0, 2048) || !vt__bt_synthetic(&t->test, 2048, 512)) {
            vt_btard_cnn_free(t);
            return vt__tls_fail(VT_ERR_NOMEM, "out of memory for the synthetic images");
        }
    } else {
        char paths[5][1100], tp[1100];
        const char *pp[5];
        int n = 0, k;
        FILE *f;
        for (k = 1; k <= 5; k++) {
            snprintf(paths[n], sizeof paths[n], "%.1000s/data_batch_%d.bin", dir, k);
            if (!(f = fopen(paths[n], "rb"))) {
                if (k == 1) return vt__tls_fail(VT_ERR_IO, "cannot open '%s' (a CIFAR-10 directory holds data_batch_1.bin ...)", paths[0]);
                break;
            }
            fclose(f);
            pp[n] = paths[n];
            n++;
        }
        if (vt_cifar_load(pp, n, &t->train) != VT_OK) return vt_last_status();
        snprintf(tp, sizeof tp, "%.1000s/test_batch.bin", dir);
        if ((f = fopen(tp, "rb")) != NULL) {
            const char *tpp[1];
            fclose(f);
            tpp[0] = tp;
            if (vt_cifar_load(tpp, 1, &t->test) != VT_OK) { vt_status st = vt_last_status(); vt_btard_cnn_free(t); return st; }
        } else { /* no test file: the last fifth of the training images is held out */
            int h = t->train.n / 5;
            if (h < 1) { vt_btard_cnn_free(t); return vt__tls_fail(VT_ERR_FORMAT, "'%s': too few images to hold a fifth out", paths[0]); }
            t->test.x = (unsigned char *)VT_MALLOC((size_t)h * 3072, NULL);
            t->test.y = (int32_t *)VT_MALLOC(sizeof(int32_t) * (size_t)h, NULL);
            if (!t->test.x || !t->test.y) { vt_btard_cnn_free(t); return vt__tls_fail(VT_ERR_NOMEM, "out of memory"); }
            t->train.n -= h;
            t->test.n = h;
            memcpy(t->test.x, t->train.x + (size_t)t->train.n * 3072, (size_t)h * 3072);
            memcpy(t->test.y, t->train.y + t->train.n, sizeof(int32_t) * (size_t)h);
        }
    }
    t->ntrain = t->train.n;
    t->ntest = t->test.n;
    if (t->ntrain < 1 || t->ntest < 1) { vt_btard_cnn_free(t); return vt__tls_fail(VT_ERR_FORMAT, "'%s': no images", dir); }
    return vt__bt_cnn_defaults(t, width, batch, lr);
}

VTDEF vt_btard_task vt_btard_cnn_task(vt_btard_cnn *t) {
    vt_btard_task k;
    memset(&k, 0, sizeof k);
    k.init = vt__bt_cnn_init;
    k.optimizer = vt__bt_cnn_opt;
    k.loss = vt__bt_cnn_loss;
    k.release = vt__bt_cnn_release;
    k.lr_at = vt__bt_cnn_lr;
    k.lr = t->lr;
    k.user = t;
    return k;
}

/* A private context holding c's weights with running statistics computed over the calibration
   set (see the top of this section); NULL and a message in why on failure */
static vt_ctx *vt__bt_cnn_calibrated(vt_ctx *c, const vt_btard_cnn *t, vt__bt_cnn_m **em, int64_t *undecided, char *why, size_t nwhy) {
    vt_desc d = vt_desc_default();
    vt_ctx *E;
    vt__bt_cnn_m *m;
    vt_log_stats ls;
    int i, k, cb = t->model == VT_BTARD_CNN_RESNET18 ? 64 : 128, nc = t->calib > 0 ? t->calib : 512, nbat;
    int64_t px = vt__bt_cnn_px(t);
    double *w = NULL;
    float *x;
    *em = NULL;
    if (nc > t->ntrain) nc = t->ntrain;
    if (cb > nc) cb = nc;
    if (cb < 2) { snprintf(why, nwhy, "the calibration set needs at least 2 images (calib %d, %d training images)", t->calib, t->ntrain); return NULL; }
    nbat = nc / cb;
    if (vt_order_parse(&d.order, t->eval_order ? t->eval_order : "threads:1") != VT_OK || !(E = vt_create(&d))) {
        snprintf(why, nwhy, "%.250s", vt_last_error());
        return NULL;
    }
    m = vt__bt_cnn_make(E, t, 1);
    if (vt_status_of(E) != VT_OK || vt_param_count(E) != vt_param_count(c)) {
        snprintf(why, nwhy, "%.250s", vt_status_of(E) != VT_OK ? vt_error_message(E) : "the model on c is not this task's");
        if (m) vt__bt_cnn_release(m, NULL);
        vt_destroy(E);
        return NULL;
    }
    /* the weights, parameter by parameter */
    for (i = 0; i < vt_param_count(c) && vt_status_of(E) == VT_OK; i++) {
        vt_tensor *a = vt_param_at(c, i), *b = vt_param_at(E, i);
        double *q = w ? (double *)VT_REALLOC(w, sizeof(double) * (size_t)vt_numel(a), NULL) : (double *)VT_MALLOC(sizeof(double) * (size_t)vt_numel(a), NULL);
        if (!q || vt_numel(a) != vt_numel(b)) { vt_set_error(E, VT_ERR_STATE, q ? "the model on c is not this task's" : "out of memory"); if (q) w = q; break; }
        w = q;
        if (vt_read_f64(c, a, w) != VT_OK) { vt_set_error(E, VT_ERR_STATE, vt_error_message(c)); break; }
        vt_write_f64(E, b, w);
    }
    VT_FREE(w, NULL);
    /* the calibration: batch k moves the statistics by 1/(k+1), so they end as the batches' mean */
    x = (float *)VT_MALLOC(sizeof(float) * (size_t)(px * cb), NULL);
    if (!x) vt_set_error(E, VT_ERR_NOMEM, "out of memory for the calibration batch");
    for (k = 0; k < nbat && vt_status_of(E) == VT_OK; k++) {
        for (i = 0; i < cb; i++) vt__bt_cnn_image(t, 0, k * cb + i, x + px * i);
        if (vt_step_begin(E) == VT_OK) vt__bt_cnn_forward(E, m, t, vt__bt_cnn_images(E, t, cb, x), 1.0 / (double)(k + 1));
        vt_step_end(E);
    }
    VT_FREE(x, NULL);
    vt_log_stats_get(E, &ls);
    if (undecided) *undecided = ls.entries;
    if (vt_status_of(E) != VT_OK) {
        snprintf(why, nwhy, "calibrating batch norm: %.250s", vt_error_message(E));
        vt__bt_cnn_release(m, NULL);
        vt_destroy(E);
        return NULL;
    }
    *em = m;
    return E;
}

/* the running-statistics tensors of an evaluation model, in creation order */
static int vt__bt_cnn_states(vt__bt_cnn_m *m, const vt_btard_cnn *t, vt_tensor **st) {
    if (t->model == VT_BTARD_CNN_RESNET18) {
        vt_convbn *nb[VT__BT_RN_MAXNORM];
        int k, nn = vt__bt_rn_norms(&m->rn, nb);
        for (k = 0; k < nn; k++) st[k] = nb[k]->st;
        return nn;
    }
    st[0] = m->s1;
    st[1] = m->s2;
    return 2;
}

VTDEF vt_status vt_btard_cnn_running(vt_ctx *c, void *model, const vt_btard_cnn *t, float *out, int64_t *n, int64_t *undecided) {
    char why[300];
    vt__bt_cnn_m *m;
    vt_tensor *st[VT__BT_RN_MAXNORM];
    vt_ctx *E;
    int k, ns;
    int64_t at = 0;
    double *v = NULL;
    if (!c || !model || !t || !n) return vt__tls_fail(VT_ERR_ARG, "vt_btard_cnn_running: need a context, its model, the task and n");
    E = vt__bt_cnn_calibrated(c, t, &m, undecided, why, sizeof why);
    if (!E) return vt__tls_fail(VT_ERR_STATE, "vt_btard_cnn_running: %s", why);
    ns = vt__bt_cnn_states(m, t, st);
    for (k = 0; k < ns; k++) {
        int64_t j, ne = vt_numel(st[k]);
        if (out) {
            double *q = (double *)VT_REALLOC(v, sizeof(double) * (size_t)ne, NULL);
            if (!q) { VT_FREE(v, NULL); vt__bt_cnn_release(m, NULL); vt_destroy(E); return vt__tls_fail(VT_ERR_NOMEM, "out of memory"); }
            v = q;
            vt_read_f64(E, st[k], v);
            for (j = 0; j < ne; j++) out[at + j] = (float)v[j];
        }
        at += ne;
    }
    *n = at;
    VT_FREE(v, NULL);
    vt__bt_cnn_release(m, NULL);
    vt_destroy(E);
    return VT_OK;
}

VTDEF double vt_btard_cnn_accuracy(vt_ctx *c, void *model, const vt_btard_cnn *t, double *loss) {
    char why[300];
    vt__bt_cnn_m *m;
    vt_ctx *E;
    int i, j, k, correct = 0, n = t->eval_n > 0 && t->eval_n < t->ntest ? t->eval_n : t->ntest, cb = 64;
    int64_t px = vt__bt_cnn_px(t);
    float *x;
    double *l, ce = 0;
    int32_t *y;
    if (loss) *loss = -1;
    if (!c || !model || n < 1) return -1;
    E = vt__bt_cnn_calibrated(c, t, &m, NULL, why, sizeof why);
    if (!E) { vt__tls_fail(VT_ERR_STATE, "vt_btard_cnn_accuracy: %s", why); return -1; }
    x = (float *)VT_MALLOC(sizeof(float) * (size_t)(px * cb), NULL);
    l = (double *)VT_MALLOC(sizeof(double) * 10 * (size_t)cb, NULL);
    y = (int32_t *)VT_MALLOC(sizeof(int32_t) * (size_t)cb, NULL);
    for (k = 0; x && l && y && k < n; k += cb) {
        int b = n - k < cb ? n - k : cb;
        vt_tensor *lg;
        for (i = 0; i < b; i++) y[i] = vt__bt_cnn_image(t, 1, k + i, x + px * i);
        vt_eval_begin(E);
        lg = vt__bt_cnn_forward(E, m, t, vt__bt_cnn_images(E, t, b, x), 0.1);
        if (lg && vt_read_f64(E, lg, l) == VT_OK)
            for (i = 0; i < b; i++) {
                int best = 0;
                double z = 0;
                for (j = 1; j < 10; j++) if (l[i * 10 + j] > l[i * 10 + best]) best = j;
                for (j = 0; j < 10; j++) z += exp(l[i * 10 + j] - l[i * 10 + best]);
                ce += log(z) - (l[i * 10 + y[i]] - l[i * 10 + best]);
                correct += best == y[i];
            }
        vt_eval_end(E);
    }
    k = x && l && y && vt_status_of(E) == VT_OK;
    if (k && loss) *loss = ce / n;
    VT_FREE(x, NULL); VT_FREE(l, NULL); VT_FREE(y, NULL);
    vt__bt_cnn_release(m, NULL);
    vt_destroy(E);
    return k ? (double)correct / n : -1;
}

VTDEF void vt_btard_cnn_free(vt_btard_cnn *t) {
    vt_digits_free(&t->digits);
    vt_cifar_free(&t->train);
    vt_cifar_free(&t->test);
    VT_FREE(t->perm, NULL);
    t->perm = NULL;
}

VT__FP_POP
#endif /* VTRAIN_BTARD_IMPLEMENTATION_INCLUDED */
#endif /* VTRAIN_IMPLEMENTATION */

/*
   REVISION HISTORY
     0.1.0  (2026-12-01) BTARD moved out of vtrain.h 0.1.0 into this header,
            unchanged: transports (in-process, MPI), CenteredClip, the
            protocol, attacks, the swarm, the digits task.
     0.2.0  (2026-12-01) Byzantines that 0.1.0 did not survive (issue 14):
            Ed25519 identities and signed envelopes (libsodium,
            VTRAIN_SODIUM, required); echoes and a Dolev-Strong slow path,
            so silence is banned only when agreed and equivocation is a
            proof; CenteredClip stops at |step| <= eps tau (numerics change:
            a spike can no longer loosen its own check), audits of failed
            checks; MPRNG secrets from the OS by default; a mailbox with
            per-sender limits and a window of steps; the TCP transport
            (VTRAIN_ZMQ); the transport's recv returns any sender's next
            message (API change); new attacks for equivocation, withholding,
            spikes, floods. Peers joining mid-run are not implemented.
     0.2.1  (2026-12-01) No honest peer banned by withhold_half at 16
            peers (see FIXED IN 0.2.1 in >>btard): waits wake on every
            message while the moved-on rule may fire, and deadlines hold
            under a steady stream; the fast path needs every member's echo;
            a late but live member is waited for once more; the relays
            listen to every live member, with one timeout of slack. The
            in-process hub can delay messages (vt_net_inproc_jitter,
            vt_net_inproc_delay, cfg.net_jitter) for tests. Wire format
            unchanged; deadlines longer where a member is late or silent.
            Tasks with batch norm (>>cnn): the digits CNN and a CIFAR
            ResNet-18 (vt_btard_cnn_*), with no running statistics in a
            swarm's training state (recomputed from the agreed weights to
            evaluate, vt_btard_cnn_running).
     0.2.2  (2026-12-01) Peers joining mid-run (JOINING in >>btard): open
            slots, signed join requests agreed like every message, the
            state from the members checked against a digest f0 + 1
            founders signed, probation replayed by every member, bounds on
            newcomers (cfg.join, join_step, probation, join_max,
            join_per_step, join_wait; vt_btard_member,
            vt_btard_view_digest), a join request sent again until attested;
            over TCP too: vt_net gains an optional roster() (API addition:
            a custom transport zeroes it), vt_net_zmq_desc gains join and
            guest_max, an open slot hears a guest key until it admits one,
            banned peers are refused at the handshake. A wait's deadline
            takes in what the transport already queued (before, it took one
            message and left the rest: DEADLINES AND SILENCE); the
            in-process transport blocks at once instead of yielding 2 ms.
            0.2.1's messages unchanged; joining adds its own (the join
            request carried in REVEAL, the state digest, the state, PROBE).
     0.2.3  (2026-12-02) Step discovery (JOINING): a newcomer with
            cfg.join_step = VT_BTARD_JOIN_AUTO asks every founder its step
            (STEPQ) and takes the step f0 + 1 founders' signed statements
            (STEPA, "vt-btard-step2") vouch for within 4 steps, joins 2
            steps after it, and asks again if f0 + 1 founders show the step
            passed without it (a request that lapsed is renewed). Attack
            lying_step. TCP: a message to an open slot is a reply through
            the ROUTER to the guest connection that last spoke for it; a
            newcomer reads its DEALERs; every DEALER refuses messages over
            guest_max (before, a member's DEALERs, never read, took any size
            a Byzantine's ROUTER sent, up to 1000 queued); a guest key's
            messages pass a token bucket (20 a second, bursts of 10). Wire:
            0.2.2's messages unchanged, two added (phases STEPQ, STEPA).
     0.2.4  (2026-12-04) A peer dying in the middle of a broadcast (issue
            14: tcp_kill9 and tcp_hung stopped the lowest ranks as cut off
            in 1 of 4 to 7 runs): its envelope reached a few of the lowest
            ranks, who went on at once, while the rest waited the exchange
            out and its slow path, and the few found more than half missing.
            As an attack, partial_then_silent (vt_btard_attack gains
            exchange and reach). A peer that lacks envelopes timeout / 8
            after a member went on asks those that went on (ASK), which
            answer with the senders' signed envelopes (FWD), once per asker
            and exchange; a peer that finds more than half of the others
            missing waits for those alive and behind as long as the latest
            honest peer could take, then counts the exchange's deadline
            from their arrival (DEADLINES AND SILENCE). Wire: 0.2.3's
            messages unchanged, two added (phases ASK, FWD); deadlines
            longer only where more than half the others are missing.
     0.2.5  (2026-12-06) Four findings of an adversarial review, each a
            test in test_btard_byz that 0.2.4 fails. An envelope enters a
            peer's view only if its header names the slot, its echo has the
            length of its exchange's (none in the first, 32 n bytes after)
            and its signature holds, whether it came from its sender,
            forwarded, relayed or fetched (vt__bt_env_ok): before, one from
            its sender was held on its header alone, so a badly signed
            envelope sent to f members split the honest views, and an echo
            of any length was held and read for 32 n bytes. The count rule
            counts every distinct digest (a table of 64 let 64 Byzantines
            get an honest sender banned as silent from n = 129 on). The
            slow path publishes as a suspect an echo that deviates from the
            agreed view in an empty slot too (an echo naming an envelope to
            some members and nothing to the others was never a proof);
            suspects take at most half the room for evidence. Wire
            unchanged; a peer checks the signature of every envelope it
            receives (n - 1 per exchange: 90 per step at 16 peers).
     0.2.6  (2026-12-06) The cheaper rule (>>agree): over a transport that
            authenticates senders (vt_net.authenticated, new: the
            in-process hub and TCP set it, MPI does not), an envelope from
            its sender is held on its header and echo length alone, checked
            before it becomes a relay item in a slow path (dropped from the
            view if it fails, before its holder echoes it), and a fetched
            one is taken by its agreed digest; forwarded copies, relay items
            and proofs are checked as before. The checks off the slow path
            go back to 0.2.4's (none; bench/RESULTS.md), and every honest
            view stays identical: what is agreed is an envelope's bytes
            (test_btard_byz badly_signed_to_any_number: a badly signed
            envelope to 1, f, f + 1 and all honest peers at every exchange).
            A second review's findings on joining and the transports, each
            a test 0.2.5 fails: a newcomer asks f0 + 1 attesters of the
            state at once after T / 2 for the one due to send it, one more
            per wrong state, never one whose state failed (f0 fast lying
            attesters had it banned SILENT past the members' PROBE
            deadline); vt__bt_blob_load checks every field before it takes
            any (a blob f0 + 1 lying founders attested could write past
            pv_agg); an ASK is answered only if its ranks strictly increase
            (a rank named n times got n copies); at most VT__BT_TRIES
            ATTEST signature checks per founder and sync; the TCP recv
            keeps its deadline under a stream of garbage;
            vt_btard_peer_create refuses an unknown cfg.defence (it ran as
            CCLIP with no validators). Not fixed: a TCP guest's memory is
            bounded only by max_msg x queue (fixed in 0.2.7). Wire
            unchanged.
     0.2.7  (2026-12-07) A TCP guest's memory is bounded (>>zmq: open
            slots): keys not yet admitted are heard on a ROUTER of their
            own at guest_endpoints[rank] (vt_net_zmq_desc gains it: API
            addition; without it no guest is heard, and a newcomer needs
            it), which refuses a message over guest_max (now 256 by
            default) before allocating it and queues 16 per connection;
            the members' ROUTER puts a key it does not know off (ZAP 300)
            while a slot is open, and a newcomer moves to the members'
            endpoints when its own view admits it. Measured
            (tests/zmq_slots.c): 3 guest keys sending 192 MiB of 1 MiB
            messages leave a member +0.6 to 0.9 MiB resident; 0.2.6 held
            all of it (+193 MiB). ZMQ_MAXMSGSIZE now allows for CURVE's
            33 bytes of framing (a message of exactly max_msg was
            refused). Work done twice, gone: the slow path hashes a
            held envelope's rest once for its check and its relay item,
            and evidence made of relay items (suspects, two-item proofs)
            is not checked again (each item was, when accepted:
            test_btard_byz relay_evidence_checked_once); the echo-length
            rule is checked in one place (vt__bt_hdr_fits) for envelopes
            and relay items; a newcomer does not check again an ATTEST
            that says what the founder's last valid one said, whatever
            its signature bytes; a newcomer whose slot the members gave
            to another key says so (it said "malformed"). Wire: the
            messages are 0.2.6's; a newcomer connects to the guest
            endpoints, so 0.2.6 and 0.2.7 peers cannot admit each
            other's newcomers over TCP. No honest run's values or
            digests change.

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
