/* vtrain.h - v0.2.0 - MIT or public domain (see end of file) - bit-exact, verifiable neural-network training in one C header

   Training that replays bit for bit on any hardware. Every op computes in
   binary64, rounds its output to binary32 at a "rounding point", and logs the
   rare rounding decisions that another machine could take differently. An
   auditor on other hardware (another CPU, thread count, BLAS order, a GPU)
   replays with the log and gets identical binary32 weights at every step.

   DO THIS in exactly one C or C++ file:

       #define VTRAIN_IMPLEMENTATION
       #include "vtrain.h"

   and include "vtrain.h" without the define everywhere else.

   OPTIONS (define before the #include that carries VTRAIN_IMPLEMENTATION;
   config macros only act in that translation unit):

       VTRAIN_STATIC        every function static (private copy per TU)
       VT_ASSERT(x)         your assert (default: <assert.h>)
       VT_MALLOC(sz,u)      allocator, all three or none; u is the
       VT_REALLOC(p,sz,u)   context's user pointer (vt_desc.alloc_user), NULL
       VT_FREE(p,u)         in the functions that take no context (reading a
                            transcript's files); a block goes back through
                            VT_FREE with the u it was made with
                            (tests/test_alloc.c)
       VTRAIN_NO_THREADS    no pthreads: everything on the calling thread
       VTRAIN_NO_SIMD       no AVX2 intrinsics even where the compiler targets
                            AVX2 and FMA (the plain-C kernels; the same results)
       VTRAIN_NO_O3         leave the implementation at your optimisation level
                            (see BUILD)
       VTRAIN_CUDA          the CUDA backend: vtrain_cuda.cu.h (next to this
                            file) is compiled in; vt_desc.backend selects it
       VTRAIN_CUDA_EMU      with VTRAIN_CUDA: also its emulator (the kernel
                            source run on the CPU), vt_desc.device =
                            VT_CUDA_EMULATOR; used by the tests
       VTRAIN_CUDA_PTX_DIR  with VTRAIN_CUDA: "dir", read the kernels' PTX from
                            dir at run time instead of the embedded header
       VTDEF                the decoration of every function (default extern,
                            static with VTRAIN_STATIC)
   ENVIRONMENT: VTRAIN_SIMD=avx2 keeps the AVX2 GEMM kernels and vector
   elementary functions on a CPU with AVX-512 (the results are the same; to
   measure them, bench/gemm.c). Read
   at run time by the CUDA backend: VTRAIN_CUDA_SYNC=1
   waits after every kernel, so an error names the kernel; VTRAIN_EMU_GUARD=0
   turns off the emulator's device-memory guard (two mprotect calls per
   device call: GPT-2-sized audits need it off); VTRAIN_EMU_GIB=N reserves N
   GiB of emulated device memory.
   COMPANIONS: vtrain_btard.h (collaborative training among peers who may
   lie), vtrain_dp.h (data-parallel training over MPI ranks, SHARDS) and
   vtrain_cuda.cu.h (the CUDA backend) sit beside this file; each says how
   to include it.

   BUILD: link with -lm -lpthread. Compile with -ffp-contract=off (no implicit
   fused multiply-add) and never with -ffast-math: the numeric contract needs
   IEEE-754 behaviour (vt_create refuses a build that contracts). vtrain asks
   for fma() explicitly where it wants one; with -mfma (or -march=native on a
   CPU that has it) those are instructions. With GCC the implementation
   switches contraction off itself and compiles at -O3 whatever the command
   line says (a push/pop of GCC's options around the implementation, so
   your own code keeps its flags): the character GPT's verified step is
   13-17% faster than at -O2 (bench/step.c, three alternating rounds on a
   2-core Xeon, 2026-12-01); VTRAIN_NO_O3 keeps your level (to debug at -O0).
   Under -std=c99 or -std=c11, include vtrain.h before any system header in
   the file that defines VTRAIN_IMPLEMENTATION (it defines _POSIX_C_SOURCE
   for itself), or compile with -D_POSIX_C_SOURCE=200809L; else it stops
   with an #error that says so.

   CONTENTS (grep-able banners, "// >>name" style, in this order)
       >>public types        >>public functions    (the API, in the header part)
       >>errors  >>hash  >>rng  >>threads  >>memory  >>order  >>context
       >>backend   the vtable, the backends of a build, host/device mirroring
       >>rounding  the numeric contract: rounding points, bounds, the log rule
       >>gemm  >>tensors  >>exec  >>cpu (kernels and their bounds)
       >>ops       constructors, and HOW TO ADD AN OP
       >>optim  >>log (the file format)  >>commit  >>transcript (Merkle tree,
       checkpoints, disputes)  >>step  >>setup  >>run  >>calibrate  >>models
       >>data  >>companion (what companion headers may use)

   TUTORIAL: fit y = 3x - 1 with a one-neuron linear model, then audit it.

       #define VTRAIN_IMPLEMENTATION
       #include "vtrain.h"
       #include <stdio.h>

       static vt_tensor *W, *b;
       static vt_optim *opt;

       static vt_status setup(vt_ctx *c, void *user) {
           (void)user;
           int64_t wshape[2] = {1, 1};
           W = vt_param(c, "W", 2, wshape);      // (OUT, IN) like PyTorch
           b = vt_param(c, "b", 1, wshape);
           vt_init_normal(c, W, 42, 1, 0.5);     // (seed, stream, std)
           vt_init_const(c, b, 0.0);
           vt_adamw_desc ad = vt_adamw_default(); ad.lr = 0.05;
           opt = vt_adamw_create(c, &ad);
           return vt_status_of(c);
       }

       static vt_status step(vt_ctx *c, int64_t s, void *user) {
           (void)user;
           float xs[8], ys[8];
           for (int i = 0; i < 8; i++) {          // batch from (seed, stream, index)
               xs[i] = (float)(vt_rng_uniform(7, 2, (uint64_t)(s * 8 + i)) * 2 - 1);
               ys[i] = 3 * xs[i] - 1;
           }
           int64_t shape[2] = {8, 1};
           vt_tensor *x = vt_from_f32(c, 2, shape, xs);
           vt_tensor *y = vt_from_f32(c, 2, shape, ys);
           vt_tensor *loss = vt_mse(c, vt_linear(c, x, W, b), y);
           vt_backward(c, loss);
           vt_optim_step(c, opt, 0.05);
           return vt_status_of(c);
       }

       int main(void) {
           vt_program prog = {setup, step, NULL, NULL};
           vt_desc d = vt_desc_default();
           d.log_path = "fit.vtlog";              // trainer writes log + commitments
           vt_report r;
           vt_run(&d, &prog, 200, &r);
           printf("trained: %lld steps, loss %g\n", (long long)r.steps, r.last_loss);
           d.role = VT_ROLE_AUDIT;                 // replay in another order
           vt_order_parse(&d.order, "threads:1,chaos:5");
           vt_run(&d, &prog, 200, &r);
           printf("audit: %s\n", r.status == VT_OK ? "every step identical" : r.message);
           return 0;
       }

   STEP BY STEP

   --- create a context: vt_desc d = vt_desc_default(); set fields; zero
       means default everywhere. vt_ctx *c = vt_create(&d);
   --- parameters live across steps: vt_param(c, name, ndim, shape); give them
       values with vt_init_normal / vt_init_uniform / vt_init_const /
       vt_write_f32. Their creation order is the canonical order in which
       weights are hashed.
   --- a training step: vt_step_begin(c); build the forward pass out of ops
       (each returns a new tensor and records itself on the tape);
       vt_backward(c, loss); vt_clip_grad_norm(...); vt_optim_step(...);
       vt_step_end(c). Everything made between begin and end lives in the
       step arena, which step_begin rewinds: long runs neither leak nor
       fragment. vt_run() drives these calls for you from a vt_program.
   --- evaluation: vt_set_grad(c, 0) stops recording the tape (no-grad scope).
   --- one op per statement, or nested as a single chain: in f(g(x), h(y)) C
       leaves open whether g or h runs first, two compilers can record the
       two ops in different orders, and a log written by one build would not
       replay on the other (the auditor reports a desync).
   --- errors are sticky: the first failure is kept in the context, later ops
       return NULL and do nothing; check vt_status_of(c) / vt_error_message(c)
       at the end of a step. Nothing aborts on bad input.

   ON THE NUMERIC CONTRACT (see the ">>rounding" section for the essay)

   target format T = binary32, compute format C = binary64. Every value that
   outlives an op - activations, gradients, weights, optimizer moments, the
   learning rate, the loss - is a T value. An op reads T values, computes in
   C, and ends in a rounding point with its computed value x and a bound e on
   |x - exact| valid for any IEEE-754 binary64 machine in any summation order,
   with or without fma. The trainer logs (index, value) when
   RNE(x - 2e) != RNE(x + 2e); the auditor copies logged values and rounds
   the rest itself. Modes: VT_MODE_VERIFIED (that), VT_MODE_ROUND_ONLY (bound
   0, no log: mostly replicates, sometimes not), VT_MODE_NATIVE (binary32
   accumulation, no rounding points: diverges), VT_MODE_FP64 (binary64
   throughout, no rounding points: the "cast at the end" alternative).

   ON STORAGE: tensors of dtype VT_F32 and VT_F64 both store doubles; a VT_F32
   tensor holds binary32 values in them (DESIGN allows T values in C-typed
   buffers; it saves conversions before every binary64 product and matches
   cuBLAS's DGEMM). VT_I32 tensors store int32_t. Shapes are row-major, like
   PyTorch: ne[0] is the outermost dimension, ne[ndim-1] the innermost.

   COLLABORATIVE TRAINING among peers who may lie (Byzantine-tolerant) is in
   the companion header vtrain_btard.h, beside this one: include it after.

   THREAD SAFETY: a vt_ctx is used by one thread at a time (it runs its own
   worker threads inside). Separate contexts are independent. The free
   functions (rng, sha256, loaders) are thread-safe.

   Dimension letters used in shape comments: B batch, T time (sequence), C
   channels (width), V vocabulary, NH heads, hs head size (C/NH), R rows
   (all leading dims flattened), K reduction length, OC output channels.
*/

/* the implementation wants POSIX (threads, clock_gettime) also under -std=c99 */
#if defined(VTRAIN_IMPLEMENTATION) && !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE) && !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#endif

#ifndef VTRAIN_H
#define VTRAIN_H

#define VTRAIN_VERSION_MAJOR 0
#define VTRAIN_VERSION_MINOR 2
#define VTRAIN_VERSION_PATCH 0
#define VTRAIN_VERSION_STRING "0.2.0"

#include <stddef.h>
#include <stdint.h>

#ifndef VTDEF
#ifdef VTRAIN_STATIC
#define VTDEF static
#else
#define VTDEF extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ==========================================================================
   >>public types
   ========================================================================== */

#define VT_MAX_DIMS 4
#define VT_MAX_SRC 4

/* Status codes and their messages come from one list. */
#define VT__STATUS_LIST(X)                                                     \
    X(VT_OK, "ok")                                                             \
    X(VT_ERR_ARG, "invalid argument")                                          \
    X(VT_ERR_SHAPE, "shape mismatch")                                          \
    X(VT_ERR_NOMEM, "out of memory")                                           \
    X(VT_ERR_IO, "i/o error")                                                  \
    X(VT_ERR_FORMAT, "malformed file")                                         \
    X(VT_ERR_TRUNCATED, "truncated file")                                      \
    X(VT_ERR_CHECKSUM, "checksum mismatch")                                    \
    X(VT_ERR_DESYNC, "log does not match the replay")                          \
    X(VT_ERR_IMPLAUSIBLE, "implausible log entry")                             \
    X(VT_ERR_MISMATCH, "replay differs from the trainer's commitment")         \
    X(VT_ERR_NONFINITE, "non-finite value")                                    \
    X(VT_ERR_BACKEND, "backend unavailable or failed")                         \
    X(VT_ERR_STATE, "call out of order")

typedef enum vt_status {
#define VT__X(name, msg) name,
    VT__STATUS_LIST(VT__X)
#undef VT__X
    VT_STATUS_COUNT
} vt_status;

typedef enum vt_dtype { VT_F32, VT_F64, VT_I32, VT_DTYPE_COUNT } vt_dtype;

typedef enum vt_mode {
    VT_MODE_VERIFIED,   /* binary64 compute, rounding points with bounds, log */
    VT_MODE_ROUND_ONLY, /* binary64 compute, rounding points, bound 0, no log */
    VT_MODE_NATIVE,     /* binary32 accumulation, plain casts, no log (storage is still double: ON STORAGE) */
    VT_MODE_FP64,       /* binary64 everywhere, no rounding points at all */
    VT_MODE_COUNT
} vt_mode;

typedef enum vt_bound_mode {
    VT_BOUND_SOUND,         /* worst case, any IEEE binary64 machine, any order */
    VT_BOUND_PROBABILISTIC, /* Higham-Mary: lambda*sqrt(K)*u instead of K*u */
    VT_BOUND_CALIBRATED,    /* sound bound scaled per (point, shape) from a measured table */
    VT_BOUND_COUNT
} vt_bound_mode;

typedef enum vt_role { VT_ROLE_TRAIN, VT_ROLE_AUDIT } vt_role;

typedef enum vt_backend_kind { VT_BACKEND_CPU, VT_BACKEND_CUDA } vt_backend_kind;
/* vt_desc.device for VT_BACKEND_CUDA: the emulator instead of a GPU (in a
   program whose implementation file defines VTRAIN_CUDA_EMU) */
#define VT_CUDA_EMULATOR (-1)

/* Ops. One list gives the enum, the name table and every per-op fact the
   engine needs; "how to add an op" is at the top of the >>ops section.

   AN OP'S ID IS PART OF THE FILE FORMAT. A rounding point's kind is
   id * 8 + slot, and kinds are written into every rounding log and into
   calibration tables. So ids are fixed here, in the list itself: never
   renumbered, never reused (an op that goes away keeps its row, marked
   VT__OPF_RETIRED); a new op is appended at the end with the next id and
   VT__OP_TABLE + 1 in its "table" column, and VT__OP_TABLE is raised to
   it. Each log header records the op table it was written with; a reader
   refuses a log from a newer table, naming both. The rows must stay in id
   order (a compile-time check below): inserting a row in the middle does
   not compile, which is the point.

   X(id, NAME, "name", table, flags, slot names)
     table       the op-table revision that introduced the op (0: vtrain 0.1.0)
     flags       VT__OPF_* below
     slot names  NULL: slot 0 is "name", slot 1+i "name.d<i>" (the gradient
                 of src[i]); else the names of the slots, space-separated */
#define VT__OPF_ENGINE 1u     /* the engine's own rounding points, not a graph op: no constructor, no kernel */
#define VT__OPF_RETIRED 2u    /* nothing produces it any more; its id stays taken */
#define VT__OPF_NOFWD 4u      /* the forward is a view of its input: no kernel runs, no rounding point */
#define VT__OPF_BWD_SPARSE 8u /* the backward kernel writes only part of its outputs (their bounds start at 0) */
#define VT__OP_TABLE 1 /* 1 (after vtrain 0.2.0): conv2d, batchnorm2d (and its running statistics), max and average pooling */

#define VT__OP_LIST(X)                                                                          \
    X( 0, NONE,          "leaf",          0, VT__OPF_ENGINE, NULL)                             \
    X( 1, VIEW,          "view",          0, VT__OPF_NOFWD | VT__OPF_BWD_SPARSE, NULL)         \
    X( 2, COPY,          "copy",          0, 0, NULL)                                          \
    X( 3, ADD,           "add",           0, 0, NULL)                                          \
    X( 4, SUB,           "sub",           0, 0, NULL)                                          \
    X( 5, MUL,           "mul",           0, 0, NULL)                                          \
    X( 6, SCALE,         "scale",         0, 0, NULL)                                          \
    X( 7, MATMUL,        "matmul",        0, 0, NULL)                                          \
    X( 8, LINEAR,        "linear",        0, 0, NULL)                                          \
    X( 9, RELU,          "relu",          0, 0, NULL)                                          \
    X(10, GELU,          "gelu",          0, 0, NULL)                                          \
    X(11, TANH,          "tanh",          0, 0, NULL)                                          \
    X(12, SOFTMAX,       "softmax",       0, 0, NULL)                                          \
    X(13, LOG_SOFTMAX,   "log_softmax",   0, 0, NULL)                                          \
    X(14, CROSS_ENTROPY, "cross_entropy", 0, 0, NULL)                                          \
    X(15, MSE,           "mse",           0, 0, NULL)                                          \
    X(16, LAYERNORM,     "layernorm",     0, 0, NULL)                                          \
    X(17, EMBEDDING,     "embedding",     0, VT__OPF_BWD_SPARSE, NULL)                         \
    X(18, ATT_SCORES,    "att_scores",    0, 0, NULL)                                          \
    X(19, ATT_SOFTMAX,   "att_softmax",   0, 0, NULL)                                          \
    X(20, ATT_MIX,       "att_mix",       0, 0, NULL)                                          \
    X(21, DROPOUT,       "dropout",       0, 0, NULL)                                          \
    X(22, SUM,           "sum",           0, 0, NULL)                                          \
    X(23, MEAN,          "mean",          0, 0, NULL)                                          \
    X(24, CONCAT,        "concat",        0, 0, NULL)                                          \
    X(25, SPLIT,         "split",         0, VT__OPF_BWD_SPARSE, NULL)                         \
    X(26, OPTIM,         "optim",         0, VT__OPF_ENGINE, "m v w lr momentum w")            \
    X(27, CLIP,          "clip",          0, VT__OPF_ENGINE, "norm grad")                      \
    X(28, SCALAR,        "scalar",        0, VT__OPF_ENGINE | VT__OPF_RETIRED, NULL)          \
    X(29, CONV2D,        "conv2d",        1, 0, NULL)                                          \
    X(30, BATCHNORM2D,   "batchnorm2d",   1, 0, NULL)                                          \
    X(31, BN_STATS,      "bn_stats",      1, 0, "stats dx running")                            \
    X(32, MAXPOOL2D,     "maxpool2d",     1, 0, NULL)                                          \
    X(33, AVGPOOL2D,     "avgpool2d",     1, 0, NULL)

typedef enum vt_op {
#define VT__X(id, name, str, table, flags, slots) VT_OP_##name = id,
    VT__OP_LIST(VT__X)
#undef VT__X
    VT_OP_COUNT /* the number of ids: 0 .. VT_OP_COUNT - 1 are all taken (list order = id order) */
} vt_op;

/* Tensor flags */
#define VT_FLAG_PARAM 1u      /* a trainable parameter (persistent, hashed) */
#define VT_FLAG_PERSIST 2u    /* lives across steps */
#define VT_FLAG_GRAD 4u       /* gradient flows to it */

typedef struct vt_tensor {
    vt_dtype dtype;
    int ndim;
    int64_t ne[VT_MAX_DIMS]; /* elements per dim, row-major: ne[0] outermost */
    int64_t nb[VT_MAX_DIMS]; /* strides in elements */
    void *data;              /* backend memory: double* (F32, F64) or int32_t* */
    vt_op op;                /* op that produced it; VT_OP_NONE for leaves */
    struct vt_tensor *src[VT_MAX_SRC];
    struct vt_tensor *grad;  /* same shape as the tensor, contiguous */
    struct vt_tensor *view_src; /* for views: the tensor whose memory we share */
    int64_t view_offs;          /* element offset into view_src */
    unsigned flags;
    int grad_fresh;          /* 1: grad holds nothing yet this step (logically 0) */
    double fparam[4];        /* op parameters */
    int64_t iparam[4];
    int64_t id;              /* creation index (tape position) */
    char name[48];
    void *extra;             /* kernel-private (the CPU's gelu keeps tanh here) */
    void *bmem;              /* a backend with memory of its own (CUDA): this storage there */
    unsigned loc;            /* ... and where the values are current: 1 host, 2 backend, 3 both */
} vt_tensor;

/* The reduction-order knob: how the CPU backend orders its sums. All of
   these agree bit for bit in VT_MODE_VERIFIED and must not in
   VT_MODE_NATIVE. A string form is parsed by vt_order_parse:
   "threads:2,block:64,chaos:7,nofma". */
#define VT_MAX_THREADS 256  /* vt_create refuses more: each is a pthread with its own buffers */
#define VT_MAX_SHARDS 65536 /* shards per step (vt_program.shards) */
#define VT_MAX_BLOCK 4096   /* a GEMM block of kc doubles per row of a packing buffer */
typedef struct vt_order {
    int threads;         /* worker threads (0: all cores, at most 64; 1..VT_MAX_THREADS) */
    int block;           /* reduction block size (GEMM kc; 0: 256; 1..VT_MAX_BLOCK) */
    int chaos;           /* 1: permute/re-block every reduction from chaos_seed,
                            switch fma on/off, perturb libm results by a few ulps */
    uint64_t chaos_seed;
    int nofma;           /* 1: never use fma in the default order */
} vt_order;

typedef struct vt_calib_entry {
    int kind;            /* rounding-point kind: op * 8 + slot */
    int64_t n;           /* element count of the point */
    double factor;       /* bound = factor * sound bound */
    double max_ratio;    /* largest |x_a - x_b| / (2 e_sound) seen (not stored in logs) */
    int64_t samples;     /* elements compared */
    int64_t violations;  /* elements where |x_a - x_b| > e_a + e_b: a wrong sound bound */
} vt_calib_entry;

typedef struct vt_calib {
    int count, cap;
    vt_calib_entry *e;
    double margin;       /* what the factors were multiplied by (recorded) */
} vt_calib;

typedef struct vt_ctx vt_ctx;
typedef struct vt_optim vt_optim;

typedef struct vt_desc {
    vt_mode mode;             /* default VT_MODE_VERIFIED */
    vt_bound_mode bound;      /* default VT_BOUND_SOUND; an auditor takes both from the log's header (a transcript's
                                 manifest must agree with it), since they say what the trainer logged: its own
                                 entries are checked against the sound bound whatever the trainer used */
    double lambda;            /* probabilistic bound: 0 means 12 */
    const vt_calib *calib;    /* calibrated bound: the table (trainer) */
    vt_role role;             /* VT_ROLE_TRAIN or VT_ROLE_AUDIT */
    const char *log_path;     /* trainer writes it, auditor reads it; NULL: no log */
    const char *commit_path;  /* NULL: log_path + ".commits" */
    vt_backend_kind backend;  /* VT_BACKEND_CPU */
    int device;               /* CUDA device ordinal */
    vt_order order;
    int compact_log;          /* 0 default: compact entries (low 8 bits); -1: full 32 bits */
    const char *transcript;   /* a directory: the trainer writes its transcript there (manifest, log,
                                 commitments, checkpoints, root), the auditor reads it. Replaces
                                 log_path / commit_path. */
    const char *const *manifest; /* NULL-terminated "key=value" strings the program adds to the
                                 manifest (model config, hyper-parameters, data digest, seeds) */
    int ckpt_every;           /* trainer: a checkpoint every N steps (0: 100) */
    int resume;               /* trainer: continue the transcript from its last checkpoint */
    int64_t audit_from;       /* auditor: start from the checkpoint at this step (0: step 0) */
    int allow_probabilistic;  /* 1: a transcript may use VT_BOUND_PROBABILISTIC (refused otherwise:
                                 its promise assumes random rounding errors, see BOUND MODES) */
    int log_memory;           /* 1: step chunks in memory too: the trainer's via vt_step_chunk after
                                 each step, the auditor's from vt_feed_chunk before each step
                                 (no file needed; peers exchange chunks this way) */
    void *alloc_user;         /* passed to VT_MALLOC & co */
    int shards;               /* S, the shards of each step of the program (SHARDS; 0: 1): part of the
                                 program, recorded in the manifest; an auditor gets it from there
                                 (vt_transcript_settings) */
} vt_desc;

/* A training program, for vt_run: setup creates parameters and optimizer,
   step does one training step (vt_run calls vt_step_begin/end around it),
   on_step (optional) reports progress after each step. A step may split
   its batch into shards (SHARDS under "training" in >>public functions). */
typedef struct vt_program {
    vt_status (*setup)(vt_ctx *c, void *user);
    vt_status (*step)(vt_ctx *c, int64_t step, void *user);
    void (*on_step)(vt_ctx *c, int64_t step, void *user);
    void *user;
} vt_program;

typedef struct vt_log_stats {
    int64_t steps;
    int64_t points;          /* rounding points passed */
    int64_t values;          /* values rounded at rounding points */
    int64_t entries;         /* log entries written / applied */
    int64_t bytes;           /* log bytes (chunks, headers included) */
    int64_t entries_full;    /* entries stored with all 32 bits */
    int64_t corrections;     /* auditor: entries that differed from its own rounding */
    double seconds;          /* per kind: time in kernels and rounding (the backward
                                time of an op is under its gradient kinds) */
    double round_seconds;    /* of which in the rounding points */
    int64_t runs;            /* per kind: outputs of this kind produced, in every mode,
                                exact ones (no rounding point) included */
    int64_t multi;           /* auditor: entries whose plausible interval holds more than one
                                binary32 value (a dishonest trainer could have written another) */
    double freedom_bits;     /* auditor: sum over entries of log2(values in the interval): the
                                bits a trainer could choose freely while passing the audit */
    int64_t exact;           /* values of correctly rounded products that the bound could not
                                decide and that were evaluated exactly (no log entry) */
    int64_t shard_values;    /* values of the cross-shard sums (gradient elements x steps) */
    int64_t shard_exact;     /* ... of which the bound could not decide: summed exactly */
    double shard_seconds;    /* time in the cross-shard sums (packing, exchange and sum) */
} vt_log_stats;

typedef struct vt_report {
    vt_status status;
    int64_t steps;           /* steps completed */
    int64_t first_bad_step;  /* -1 if none */
    double last_loss;
    unsigned char digest[32];/* weights digest after the last step */
    vt_log_stats log;
    double seconds;
    char message[768];
    int64_t root_steps;      /* auditor of a transcript: the steps its root.txt covers, checked against
                                every commitment (0: no root was checked); more than the steps
                                replayed (first replayed + steps) means a partial audit */
} vt_report;

/* ==========================================================================
   >>public functions
   ========================================================================== */

/* --- library ------------------------------------------------------------ */
VTDEF const char *vt_version(void);
VTDEF const char *vt_status_name(vt_status s);
VTDEF const char *vt_status_message(vt_status s);
VTDEF const char *vt_op_name(vt_op op);
VTDEF const char *vt_mode_name(vt_mode m);
VTDEF const char *vt_bound_name(vt_bound_mode b);
VTDEF const char *vt_last_error(void); /* thread-local: last error of a ctx-less call */
VTDEF vt_status vt_last_status(void);  /* its status code */

/* --- context -------------------------------------------------------------- */
VTDEF vt_desc vt_desc_default(void);
VTDEF vt_status vt_order_parse(vt_order *o, const char *s); /* "threads:2,block:64,chaos:7,nofma" */
VTDEF void vt_order_string(const vt_order *o, char *buf, size_t n);
VTDEF vt_ctx *vt_create(const vt_desc *d); /* NULL on failure: see vt_last_error() */
VTDEF void vt_destroy(vt_ctx *c);
VTDEF vt_status vt_status_of(const vt_ctx *c);
VTDEF const char *vt_error_message(const vt_ctx *c);
VTDEF void vt_clear_error(vt_ctx *c);
/* a program's own error (its setup or step found bad data): sticky like an
   op's, so vt_run reports msg; returns s */
VTDEF vt_status vt_set_error(vt_ctx *c, vt_status s, const char *msg);
VTDEF const vt_desc *vt_ctx_desc(const vt_ctx *c);
VTDEF int64_t vt_step_index(const vt_ctx *c);
VTDEF double vt_last_loss(const vt_ctx *c); /* the loss of the last vt_backward */
VTDEF void vt_log_stats_get(const vt_ctx *c, vt_log_stats *s);
/* per rounding-point kind (0 .. VT_POINT_KINDS-1): 1 if the kind occurred;
   fills points, values and entries, and its name ("linear.d1") */
#define VT_POINT_KINDS (VT_OP_COUNT * 8)
VTDEF int vt_log_kind_stats(const vt_ctx *c, int kind, vt_log_stats *s, char *name, size_t n);

/* --- tensors ------------------------------------------------------------ */
VTDEF vt_tensor *vt_new(vt_ctx *c, vt_dtype dt, int ndim, const int64_t *ne); /* step arena, zeroed */
VTDEF vt_tensor *vt_new_persistent(vt_ctx *c, vt_dtype dt, int ndim, const int64_t *ne);
VTDEF vt_tensor *vt_param(vt_ctx *c, const char *name, int ndim, const int64_t *ne);
VTDEF vt_tensor *vt_from_f32(vt_ctx *c, int ndim, const int64_t *ne, const float *v); /* step arena */
VTDEF vt_tensor *vt_from_i32(vt_ctx *c, int ndim, const int64_t *ne, const int32_t *v);
/* VT_F64: binary64 values in VT_MODE_FP64; in the other modes they are
   rounded to binary32 on entry, like VT_F32 (every bound assumes binary32 inputs) */
VTDEF vt_tensor *vt_from_f64(vt_ctx *c, int ndim, const int64_t *ne, const double *v);
VTDEF vt_status vt_write_f32(vt_ctx *c, vt_tensor *t, const float *v);
VTDEF vt_status vt_write_f64(vt_ctx *c, vt_tensor *t, const double *v);
VTDEF vt_status vt_write_i32(vt_ctx *c, vt_tensor *t, const int32_t *v);
VTDEF vt_status vt_read_f32(vt_ctx *c, const vt_tensor *t, float *v);  /* contiguous copy out */
VTDEF vt_status vt_read_f64(vt_ctx *c, const vt_tensor *t, double *v);
VTDEF double vt_item(vt_ctx *c, const vt_tensor *t); /* first element (e.g. a loss) */
VTDEF int64_t vt_numel(const vt_tensor *t);
VTDEF int vt_is_contiguous(const vt_tensor *t);
VTDEF void vt_set_name(vt_tensor *t, const char *name);
VTDEF int vt_param_count(const vt_ctx *c);
VTDEF vt_tensor *vt_param_at(const vt_ctx *c, int i);
VTDEF int64_t vt_param_numel(const vt_ctx *c);

/* views share memory; their gradients flow back to the viewed tensor */
VTDEF vt_tensor *vt_reshape(vt_ctx *c, vt_tensor *t, int ndim, const int64_t *ne);
VTDEF vt_tensor *vt_permute(vt_ctx *c, vt_tensor *t, const int *perm); /* out dim i = in dim perm[i] */
VTDEF vt_tensor *vt_transpose(vt_ctx *c, vt_tensor *t, int d0, int d1);
VTDEF vt_tensor *vt_slice(vt_ctx *c, vt_tensor *t, int dim, int64_t start, int64_t len);
VTDEF vt_tensor *vt_contiguous(vt_ctx *c, vt_tensor *t);

/* --- initialisation (counter-based: the same values on any machine) ------- */
VTDEF void vt_init_normal(vt_ctx *c, vt_tensor *t, uint64_t seed, uint64_t stream, double std);
VTDEF void vt_init_uniform(vt_ctx *c, vt_tensor *t, uint64_t seed, uint64_t stream, double lo, double hi);
VTDEF void vt_init_const(vt_ctx *c, vt_tensor *t, double v);

/* --- steps and autograd ---------------------------------------------------- */
VTDEF vt_status vt_step_begin(vt_ctx *c);
VTDEF vt_status vt_step_end(vt_ctx *c);
VTDEF int vt_set_grad(vt_ctx *c, int enabled); /* returns the previous setting */
/* evaluation between steps: rewinds the step arena, no tape, nothing logged */
VTDEF void vt_eval_begin(vt_ctx *c);
VTDEF void vt_eval_end(vt_ctx *c);
VTDEF vt_status vt_backward(vt_ctx *c, vt_tensor *loss);
VTDEF void vt_zero_grad(vt_ctx *c);
VTDEF void vt_commit_batch(vt_ctx *c, const int64_t *idx, int64_t n); /* data order into the commitment */
/* the complete log chunk (header, records, checksum) of the step that ended last */
VTDEF vt_status vt_step_chunk(const vt_ctx *c, const unsigned char **bytes, size_t *len);
/* auditor with log_memory: the chunk to replay the next step with (copied) */
VTDEF vt_status vt_feed_chunk(vt_ctx *c, const unsigned char *bytes, size_t len);
/* SHA-256 of the chunk of the step that ended last */
VTDEF void vt_step_chunk_sha(const vt_ctx *c, unsigned char out[32]);

/* SHARDS: data parallelism, and gradient accumulation, which is the same
   thing in one process. A program whose step's batch is split into S
   shards (vt_desc.shards = S: part of the program, in the manifest) runs,
   inside its step:

       for (k = 0; k < vt_shard_count(c); k++) {
           if (!vt_shard_begin(c, k)) continue;   // 0: another process's shard
           ... forward and backward of shard k's rows only, its data drawn
               from (seed, stream, row) and never from where it runs; a mean
               loss scaled by the shard's share of the rows ...
           vt_shard_end(c);
       }
       vt_shards_sum(c);      // the parameters' gradients = the sum over shards
       ... clipping, the optimizer ...

   Every shard starts from zero gradients; the step's gradient is RNE32 of
   the exact sum of the S shard gradients (the cross-shard sum, >>step), so
   every mapping of shards to processes - one process running all S in
   turn, or the ranks of an MPI job (vtrain_dp.h) - gives the same binary32
   state, the same log and the same commitments, and one process audits
   any of them. Tensors made in the step before its first shard live
   through all of them; a shard's own die at the next shard. */
VTDEF int vt_shard_count(const vt_ctx *c);
VTDEF int vt_shard_begin(vt_ctx *c, int k);
VTDEF vt_status vt_shard_end(vt_ctx *c);
VTDEF vt_status vt_shards_sum(vt_ctx *c);

/* --- ops (forward and backward; all end in rounding points) --------------- */
VTDEF vt_tensor *vt_add(vt_ctx *c, vt_tensor *a, vt_tensor *b);   /* broadcasting */
VTDEF vt_tensor *vt_sub(vt_ctx *c, vt_tensor *a, vt_tensor *b);
VTDEF vt_tensor *vt_mul(vt_ctx *c, vt_tensor *a, vt_tensor *b);
VTDEF vt_tensor *vt_scale(vt_ctx *c, vt_tensor *a, double s);
VTDEF vt_tensor *vt_matmul(vt_ctx *c, vt_tensor *a, vt_tensor *b, int ta, int tb); /* batched over leading dims */
VTDEF vt_tensor *vt_linear(vt_ctx *c, vt_tensor *x, vt_tensor *w, vt_tensor *bias); /* x (..,IN) w (OC,IN) bias (OC) or NULL */
VTDEF vt_tensor *vt_relu(vt_ctx *c, vt_tensor *x);
VTDEF vt_tensor *vt_gelu(vt_ctx *c, vt_tensor *x);  /* tanh form, as GPT-2 */
VTDEF vt_tensor *vt_tanh(vt_ctx *c, vt_tensor *x);
VTDEF vt_tensor *vt_softmax(vt_ctx *c, vt_tensor *x);      /* over the last dim */
VTDEF vt_tensor *vt_log_softmax(vt_ctx *c, vt_tensor *x);
VTDEF vt_tensor *vt_cross_entropy(vt_ctx *c, vt_tensor *logits, vt_tensor *targets); /* mean over rows; targets I32 */
VTDEF vt_tensor *vt_mse(vt_ctx *c, vt_tensor *pred, vt_tensor *target); /* mean of squares */
VTDEF vt_tensor *vt_layernorm(vt_ctx *c, vt_tensor *x, vt_tensor *w, vt_tensor *b, double eps);
VTDEF vt_tensor *vt_embedding(vt_ctx *c, vt_tensor *table, vt_tensor *idx); /* table (V,C), idx I32 (...) */
VTDEF vt_tensor *vt_attention(vt_ctx *c, vt_tensor *qkv, int nh); /* causal MHA: qkv (B,T,3C) -> (B,T,C) */
VTDEF vt_tensor *vt_dropout(vt_ctx *c, vt_tensor *x, double p, uint64_t seed);
VTDEF vt_tensor *vt_sum(vt_ctx *c, vt_tensor *x);
VTDEF vt_tensor *vt_mean(vt_ctx *c, vt_tensor *x);
VTDEF vt_tensor *vt_concat(vt_ctx *c, vt_tensor *a, vt_tensor *b, int dim);
VTDEF vt_tensor *vt_split(vt_ctx *c, vt_tensor *x, int dim, int64_t start, int64_t len); /* a copy of a slice */
/* convolutional networks (op table 1). Images are (N,C,H,W), row-major like
   PyTorch. conv2d: w (OC, C/groups, KH, KW), bias (OC) or NULL; square
   stride, padding (zeros) and dilation; OH = (H + 2 pad - dil (KH-1) - 1) /
   stride + 1. groups = C = OC is a depthwise convolution. */
VTDEF vt_tensor *vt_conv2d(vt_ctx *c, vt_tensor *x, vt_tensor *w, vt_tensor *bias, int stride, int pad, int dilation, int groups);
/* batch normalisation over (N,H,W) per channel: w, b (C). With gradients on
   (training) it uses the batch's mean and biased variance and moves the
   running statistics in `state` (from vt_bn_state; may be NULL) by momentum
   (PyTorch's rule: r = (1 - m) r + m stat, the unbiased variance); with
   gradients off (vt_eval_begin) it uses the running statistics. */
VTDEF vt_tensor *vt_batchnorm2d(vt_ctx *c, vt_tensor *x, vt_tensor *w, vt_tensor *b, vt_tensor *state, double momentum, double eps);
/* the running statistics of a batch norm over C channels: (2,C), row 0 the
   mean (starts at 0), row 1 the variance (starts at 1). Model state like the
   optimizer's moments: in every step's digest, in checkpoints, restored on
   resume. Created outside a step, named like a parameter. */
VTDEF vt_tensor *vt_bn_state(vt_ctx *c, const char *name, int64_t C);
/* pooling: square windows, stride, padding (max: never chosen; average:
   counted as zeros, PyTorch's count_include_pad). Max pooling takes the
   first maximum of a window in row-major order. */
VTDEF vt_tensor *vt_maxpool2d(vt_ctx *c, vt_tensor *x, int k, int stride, int pad);
VTDEF vt_tensor *vt_avgpool2d(vt_ctx *c, vt_tensor *x, int k, int stride, int pad);
VTDEF vt_tensor *vt_global_avgpool(vt_ctx *c, vt_tensor *x); /* (N,C,H,W) -> (N,C): the mean over H and W */
VTDEF vt_tensor *vt_flatten(vt_ctx *c, vt_tensor *x);        /* (N, ...) -> (N, rest): a view */

/* --- optimizers ---------------------------------------------------------- */
typedef struct vt_adamw_desc { double lr, beta1, beta2, eps, weight_decay; } vt_adamw_desc;
typedef struct vt_sgd_desc { double lr, momentum, weight_decay; int nesterov; } vt_sgd_desc;
VTDEF vt_adamw_desc vt_adamw_default(void); /* 1e-3, 0.9, 0.999, 1e-8, 0.01 */
VTDEF vt_sgd_desc vt_sgd_default(void);     /* 1e-2, 0, 0, 0 */
/* Both take every parameter made so far. On the CPU they move the values
   and gradients of those parameters into one block each, unless they are in
   one already (FLAT PARAMETERS in >>optim): a t->data pointer kept from
   before points at freed memory, so read it again (or use vt_read_f32 /
   vt_write_f32, which always do). */
VTDEF vt_optim *vt_adamw_create(vt_ctx *c, const vt_adamw_desc *d);
VTDEF vt_optim *vt_sgd_create(vt_ctx *c, const vt_sgd_desc *d);
/* lr passes a rounding point: it may differ between machines by up to 32
   binary64 ulps (a schedule computed with a libm); a constant or
   vt_lr_cosine is the same double everywhere */
VTDEF vt_status vt_optim_step(vt_ctx *c, vt_optim *o, double lr);
VTDEF double vt_clip_grad_norm(vt_ctx *c, double max_norm); /* returns the (T-valued) norm */
/* warm-up (linear over `warmup` steps), then cosine from max_lr to min_lr at
   `total`: the same double on every machine (vtrain's own cosine) */
VTDEF double vt_lr_cosine(int64_t step, int64_t warmup, int64_t total, double max_lr, double min_lr);

/* --- randomness: counter-based, keyed by (seed, stream, index) ------------ */
VTDEF uint64_t vt_rng_u64(uint64_t seed, uint64_t stream, uint64_t index);
VTDEF double vt_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index); /* [0,1) */
VTDEF double vt_rng_normal(uint64_t seed, uint64_t stream, uint64_t index);  /* N(0,1), bit-identical everywhere */
VTDEF uint64_t vt_shuffle(uint64_t seed, uint64_t stream, uint64_t i, uint64_t n); /* a permutation of [0,n) */

/* --- hashing ---------------------------------------------------------------- */
typedef struct vt_sha256_ctx { uint32_t h[8]; uint64_t len; unsigned char buf[64]; size_t nbuf; } vt_sha256_ctx;
VTDEF void vt_sha256_init(vt_sha256_ctx *s);
VTDEF void vt_sha256_update(vt_sha256_ctx *s, const void *data, size_t n);
VTDEF void vt_sha256_final(vt_sha256_ctx *s, unsigned char out[32]);
VTDEF void vt_sha256(const void *data, size_t n, unsigned char out[32]);
VTDEF void vt_hex(const unsigned char *b, int n, char *out); /* 2n+1 chars */
/* state digest: SHA-256 over (name, shape, SHA-256 of binary32 LE bytes) per
   parameter in creation order, then per optimizer moment ("optim0.m", ...):
   everything a step carries to the next. */
VTDEF vt_status vt_weights_digest(vt_ctx *c, unsigned char out[32]);
VTDEF vt_status vt_tensor_digest(vt_ctx *c, const vt_tensor *t, unsigned char out[32]);

/* --- running and auditing ------------------------------------------------- */
VTDEF vt_status vt_run(const vt_desc *d, const vt_program *p, int64_t nsteps, vt_report *r);
VTDEF vt_status vt_run_ctx(vt_ctx *c, const vt_program *p, int64_t nsteps, vt_report *r);

/* compare two contexts' state (weights, then optimizer moments): number of
   differing elements, max |dw|, index of the first tensor that differs */
VTDEF int64_t vt_weights_compare(vt_ctx *a, vt_ctx *b, double *max_abs, int *first_param);

/* --- transcripts, commitments, disputes ----------------------------------- */
/* A transcript is a directory:
     manifest.txt          "key = value" lines: the program's entries, then vtrain's
                           (version, mode, bound, order, checkpoint interval)
     log.vtlog             the rounding log (verified mode)
     commits.bin           per step: state digest, log chunk hash, batch digest,
                           tensor digests; bound to the manifest's hash
     ckpt-NNNNNNNN.safetensors  weights and optimizer state after N steps
     root.txt              the Merkle root over the step leaves, and the run commitment
   A step's leaf is SHA-256("vtrain-leaf-1", step, state digest, chunk hash,
   batch digest); leaves form an RFC 6962 Merkle tree. vt_run drives a
   transcript like a log: it writes the root when the run ends. */
typedef struct vt_leaf_info {
    int64_t step;
    unsigned char state[32], chunk[32], batch[32], leaf[32];
} vt_leaf_info;
VTDEF void vt_leaf_hash(vt_leaf_info *l); /* fills l->leaf from the rest */
VTDEF void vt_merkle_root(const unsigned char (*leaves)[32], int64_t n, unsigned char root[32]);
/* the audit path of leaf i (at most 64 hashes); returns its length, -1 on
   bad input. vt_merkle_verify checks a path for leaf i of a tree of n
   leaves; a path can verify for other (i, n) pairs of the same root too
   (the shape of a tree does not fix n), so n must come from the run
   commitment (root.txt's steps, which its run hash binds) and not from
   whoever sends the proof, and the caller must check that the leaf is of
   step i (vt_leaf_info.step is inside the hashed leaf). */
VTDEF int vt_merkle_proof(const unsigned char (*leaves)[32], int64_t n, int64_t i, unsigned char (*path)[32]);
VTDEF int vt_merkle_verify(const unsigned char leaf[32], int64_t i, int64_t n, const unsigned char (*path)[32], int len,
                           const unsigned char root[32]);
/* a transcript's leaves (malloc'd, vt_free_leaves) read from its commitments */
VTDEF vt_status vt_transcript_leaves(const char *dir, vt_leaf_info **leaves, int64_t *n);
VTDEF void vt_free_leaves(vt_leaf_info *leaves);
/* its root.txt: the Merkle root over the leaves, the manifest's hash, the step count */
VTDEF vt_status vt_transcript_root(const char *dir, unsigned char root[32], unsigned char manifest_sha[32], int64_t *nsteps);
/* the files agree with each other, every field (root.txt with commits.bin
   and manifest.txt, commits.bin with manifest.txt), without a replay; the
   step count in *nsteps. An audit of a transcript checks this at its end. */
VTDEF vt_status vt_transcript_check(const char *dir, int64_t *nsteps);
VTDEF vt_status vt_manifest_get(const char *dir, const char *key, char *value, size_t n);
/* SHA-256 of the manifest without its "vtrain.trainer_*" lines (the order
   and checkpoint interval the trainer happened to use): equal for two runs
   of the same program on different machines */
VTDEF vt_status vt_manifest_program_sha(const char *dir, unsigned char out[32]);
/* after setup: a trainer with resume loads the last checkpoint, an auditor
   with audit_from loads that checkpoint and seeks its log (vt_run does this) */
VTDEF vt_status vt_resume(vt_ctx *c);
/* checkpoints: weights and optimizer state as safetensors (binary32 tensors,
   our metadata), written atomically (temporary file, fsync, rename) */
VTDEF vt_status vt_checkpoint_save(vt_ctx *c, const char *path);
VTDEF vt_status vt_checkpoint_load(vt_ctx *c, const char *path);

/* The dispute game. Trainer and auditor each hold a transcript of the same
   program whose roots differ. The auditor walks down the trainer's Merkle
   tree from its root: for a node (a range of steps) the trainer answers with
   the hashes of its two children, which must hash to the node; the auditor
   goes into the left child if it differs from its own, else the right one.
   At a single step the trainer reveals the leaf, which must hash to the
   node. That is the first step where the runs differ (every step before it
   lies in a subtree that agreed), found in ceil(log2 n) + 1 rounds. The
   trainer then supplies the state before that step (it must match the
   agreed leaf before it) and its log chunk; the judge re-executes that one
   step and rules.

   Every branch ends in a stated outcome (vt_dispute.outcome), and none can
   convict an honest party: roots that agree end the game before it starts
   (no dispute); a trainer whose answer is for another node, does not hash
   to the node, reveals a leaf of another step, cannot be decoded (a
   truncated or malformed message, vt_dispute_receive_bytes) or never comes
   (vt_dispute_forfeit, called by the driver at its deadline) loses at that
   round; only a found step goes to the judge, whose ruling rests on a
   re-execution. vt_dispute_transcripts plays the whole game between two
   transcripts on this machine, judge included. */
typedef enum vt_dispute_outcome {
    VT_DISPUTE_OPEN,          /* the game goes on */
    VT_DISPUTE_FOUND,         /* result is the first differing step: the judge rules */
    VT_DISPUTE_NONE,          /* the roots agree: nothing to dispute */
    VT_DISPUTE_TRAINER_LOSES, /* the trainer answered malformed or inconsistently, or not at all */
    VT_DISPUTE_AUDITOR_LOSES, /* the auditor's challenge is malformed (its own files disagree) */
    VT_DISPUTE_INVALID,       /* no game: the transcripts are of different programs or lengths, or not verified */
    VT_DISPUTE_NO_FAULT       /* the judge found both leaves valid executions of the step: nobody is wrong */
} vt_dispute_outcome;
#define VT_CLAIM_BYTES 220 /* a claim on the wire: "VTCL", lo, hi, left, right, the leaf */
typedef struct vt_claim { /* trainer -> auditor, one round */
    int64_t lo, hi;                  /* the node's steps [lo, hi) */
    unsigned char left[32], right[32]; /* its children (hi - lo > 1) */
    vt_leaf_info leaf;               /* the leaf itself (hi - lo == 1) */
} vt_claim;
typedef struct vt_dispute {
    int64_t n;                        /* steps in both transcripts */
    int64_t lo, hi;                   /* the current node of the trainer's tree */
    unsigned char node[32];           /* its hash (verified from the trainer's root down) */
    int rounds;
    int done;
    const vt_leaf_info *mine;         /* the auditor's leaves */
    vt_leaf_info agreed;              /* the leaf before the result (both hold it) */
    vt_leaf_info disputed_trainer;    /* the trainer's leaf at the result */
    int64_t result;                   /* the first differing step, -1 if none */
    char message[256];
    vt_dispute_outcome outcome;
} vt_dispute;
VTDEF vt_status vt_dispute_begin(vt_dispute *g, const vt_leaf_info *mine, int64_t n, const unsigned char trainer_root[32]);
/* the node to ask about next (1), or 0 when the game is over */
VTDEF int vt_dispute_query(const vt_dispute *g, int64_t *lo, int64_t *hi);
VTDEF vt_status vt_dispute_answer(const vt_leaf_info *leaves, int64_t n, int64_t lo, int64_t hi, vt_claim *out); /* trainer */
VTDEF vt_status vt_dispute_receive(vt_dispute *g, const vt_claim *c); /* checks the answer, descends */
/* the wire form of a claim, and the auditor's side of it: a message that is
   not exactly one encoded claim loses the trainer the game */
VTDEF void vt_claim_encode(const vt_claim *c, unsigned char out[VT_CLAIM_BYTES]);
VTDEF vt_status vt_claim_decode(const unsigned char *b, size_t n, vt_claim *c);
VTDEF vt_status vt_dispute_receive_bytes(vt_dispute *g, const unsigned char *b, size_t n);
/* the trainer did not answer in time (why says so): it loses */
VTDEF vt_status vt_dispute_forfeit(vt_dispute *g, const char *why);
/* the trainer's side of the last round: the state before `step` as a
   checkpoint file (replaying its own log from its last checkpoint before it)
   and its log chunk for that step */
VTDEF vt_status vt_transcript_state_before(const vt_desc *d, const vt_program *p, const char *dir, int64_t step,
                                           const char *ckpt_out);
/* the same from a given start: from = 0 replays from step 0 and trusts no
   checkpoint (their optimizer counters are in no commitment), else from
   must be a checkpoint of dir */
VTDEF vt_status vt_transcript_state_from(const vt_desc *d, const vt_program *p, const char *dir, int64_t from, int64_t step,
                                         const char *ckpt_out);
VTDEF vt_status vt_transcript_chunk(const char *dir, int64_t step, unsigned char **bytes, size_t *len);
/* the settings a transcript was trained with, which a judge or any replay
   of it must use: mode, bound mode and lambda from its manifest (checked as
   an auditor checks them) into d */
VTDEF vt_status vt_transcript_settings(const char *dir, vt_desc *d);
/* a checkpoint's step and optimizer step counters (up to max of them, the
   count in *n), from its metadata */
VTDEF vt_status vt_checkpoint_counters(const char *path, int64_t *step, int64_t *t, int max, int *n);
typedef enum vt_verdict { VT_VERDICT_NONE, VT_VERDICT_TRAINER_WRONG, VT_VERDICT_AUDITOR_WRONG } vt_verdict;
/* The judge (d->mode must be verified: the other modes keep no log, and
   give no verdict). vt_judge_both loads the state (its digest must equal
   agreed->state, or the trainer loses) and re-executes `trainer->step`
   from it twice, in any order: with the trainer's chunk (its hash must
   equal trainer->chunk) and with the auditor's (auditor->chunk). A party
   is wrong when its own chunk does not replay to its own leaf: the
   trainer if its does not (whatever the auditor's does), else the auditor
   if its does not. When both do, both are valid executions and nobody is
   convicted (VT_VERDICT_NONE): two honest runs in two orders may log
   different entries for the same values, or, where the bound leaves a
   rounding undecided for both, choose differently (the log's freedom).
   vt_judge has the trainer's chunk alone: the trainer is wrong if it does
   not reproduce the trainer's leaf; if it does, no fault when the
   auditor's leaf has the same state and batch (a chunk-only difference),
   else "the auditor is wrong", which an honest auditor whose own chunk is
   valid may not deserve: rule with vt_judge_both where the auditor's
   chunk is at hand (vt_dispute_transcripts does). */
VTDEF vt_verdict vt_judge(const vt_desc *d, const vt_program *p, const vt_leaf_info *agreed, const char *state_ckpt,
                          const unsigned char *chunk, size_t chunk_len, const vt_leaf_info *trainer,
                          const vt_leaf_info *auditor, char *why, size_t whylen);
VTDEF vt_verdict vt_judge_both(const vt_desc *d, const vt_program *p, const vt_leaf_info *agreed, const char *state_ckpt,
                               const unsigned char *tchunk, size_t tlen, const vt_leaf_info *trainer, const unsigned char *achunk,
                               size_t alen, const vt_leaf_info *auditor, char *why, size_t whylen);
/* The whole game between two transcripts of one program on this machine:
   the trainer's (its answers come from its commits.bin, checked against
   its root.txt) and the auditor's (its own run, or a replay). d gives the
   judge's order and backend; the run's own settings come from the
   trainer's manifest (verified transcripts only: others are refused, no
   game). From the first differing step the judge goes on to the first
   whose state or batch differ (leaves that differ in their log chunks
   alone are no fault) and rules with vt_judge_both on a state rebuilt
   from the trainer's own files: any of them missing, unreadable or
   malformed loses the trainer the game; only this machine's own trouble
   (memory, backend, its temporary files) gives no verdict. The outcome,
   the verdict and why are in the report. */
typedef struct vt_dispute_report {
    vt_dispute_outcome outcome;
    vt_verdict verdict;      /* VT_VERDICT_NONE unless a party loses or the judge rules */
    int64_t step;            /* the step judged: the first whose state or batch differ (past chunk-only
                                differences), else the first differing step; -1 if none was found */
    int64_t nsteps;
    int rounds;
    double judge_seconds;    /* the judge's re-executions of the step */
    char message[1024];
    /* set by the caller before the call (or left 0): called after each
       round with the node [lo, hi) that was asked and the game after it */
    void (*on_round)(const struct vt_dispute *g, int64_t lo, int64_t hi, void *user);
    void *user;
    /* the judge's other cost: rebuilding the trainer's state before the
       step, a replay of this many steps (from the trainer's last
       checkpoint before it, the auditor's for its optimizer counters, and
       from step 0 where there is none or the counters differ) */
    int64_t replayed_steps;
    double rebuild_seconds;
} vt_dispute_report;
VTDEF vt_status vt_dispute_transcripts(const vt_desc *d, const vt_program *p, const char *trainer_dir, const char *auditor_dir,
                                       vt_dispute_report *r);

/* --- calibration (VT_BOUND_CALIBRATED) ------------------------------------ */
/* Runs the program for nsteps in sound mode with order d->order, and at every
   rounding point recomputes the op with each of the n extra orders; records
   per (point, size) the largest |x_a - x_b| / (2 e_sound), times margin. */
VTDEF vt_status vt_calibrate(const vt_desc *d, const vt_program *p, int64_t nsteps,
                             const vt_order *orders, int n, double margin, vt_calib *out);
VTDEF void vt_calib_free(vt_calib *t);

/* --- models -------------------------------------------------------------- */
typedef struct vt_mlp {
    int nlayers;
    int sizes[9];          /* sizes[0] inputs ... sizes[nlayers] outputs */
    vt_tensor *w[8], *b[8];
    int act;               /* 0 relu, 1 tanh, 2 gelu */
} vt_mlp;
VTDEF vt_status vt_mlp_init(vt_ctx *c, vt_mlp *m, int nlayers, const int *sizes, int act, uint64_t seed);
VTDEF vt_tensor *vt_mlp_forward(vt_ctx *c, const vt_mlp *m, vt_tensor *x); /* x (B,IN) -> logits (B,OUT) */

typedef struct vt_gpt_config {
    int vocab;      /* V, e.g. 50257 */
    int context;    /* maximum T, e.g. 1024 */
    int layers;     /* L, e.g. 12 */
    int heads;      /* NH, e.g. 12 */
    int width;      /* C, e.g. 768 */
    double dropout; /* 0 for none */
} vt_gpt_config;

typedef struct vt_gpt_block {
    vt_tensor *ln1w, *ln1b;       /* (C) */
    vt_tensor *qkvw, *qkvb;       /* (3C, C), (3C) */
    vt_tensor *projw, *projb;     /* (C, C), (C) */
    vt_tensor *ln2w, *ln2b;       /* (C) */
    vt_tensor *fcw, *fcb;         /* (4C, C), (4C) */
    vt_tensor *fcprojw, *fcprojb; /* (C, 4C), (C) */
} vt_gpt_block;

typedef struct vt_gpt {
    vt_gpt_config cfg;
    vt_tensor *wte;  /* (V, C), tied with the output head */
    vt_tensor *wpe;  /* (context, C) */
    vt_gpt_block *h; /* layers */
    vt_tensor *lnfw, *lnfb;
    uint64_t seed;
} vt_gpt;
VTDEF vt_status vt_gpt_init(vt_ctx *c, vt_gpt *g, const vt_gpt_config *cfg, uint64_t seed);
VTDEF void vt_gpt_free(vt_gpt *g);
/* tokens (B,T) I32 -> logits (B,T,V); with targets (B,T) returns the mean cross-entropy loss */
VTDEF vt_tensor *vt_gpt_forward(vt_ctx *c, const vt_gpt *g, vt_tensor *tokens, vt_tensor *targets, int64_t step);
/* sample n tokens after a prompt (greedy when temperature <= 0), deterministic in (seed) */
VTDEF vt_status vt_gpt_generate(vt_ctx *c, const vt_gpt *g, int32_t *toks, int nprompt, int n,
                                double temperature, uint64_t seed);


/* ResNets in their CIFAR form (He et al. 2016, as the two source papers
   train them: a 3x3 stem, no initial max-pool): depth 18 (basic blocks
   2,2,2,2) or 50 (bottlenecks 3,4,6,3), base width 64 (a smaller width
   makes the narrow networks the tests train), a batch norm after every
   convolution, global average pooling, a linear head. Parameters are named
   like "layer2.0.conv1.w", "layer2.0.conv1.bn.w"; running statistics
   "layer2.0.conv1.bn.running" (state, see vt_bn_state). */
typedef struct vt_convbn { vt_tensor *w, *g, *b, *st; int stride, pad; } vt_convbn;
typedef struct vt_resblock { vt_convbn c1, c2, c3, sc; int bottleneck, has_sc; } vt_resblock;
typedef struct vt_resnet_config {
    int depth;          /* 18 or 50 */
    int width;          /* channels of the stem and the first stage (64) */
    int classes;        /* 10 */
    int in_channels;    /* 3 */
    double bn_momentum; /* 0.1 */
} vt_resnet_config;
typedef struct vt_resnet {
    vt_resnet_config cfg;
    vt_convbn stem;
    vt_resblock *blocks;
    int nblocks;
    vt_tensor *fcw, *fcb; /* (classes, features), (classes) */
    void *u;              /* the context's allocator argument (vt_resnet_free gives blocks back through VT_FREE) */
} vt_resnet;
VTDEF vt_resnet_config vt_resnet_default(int depth);
VTDEF vt_status vt_resnet_init(vt_ctx *c, vt_resnet *m, const vt_resnet_config *cfg, uint64_t seed);
VTDEF void vt_resnet_free(vt_resnet *m);
/* x (B,in_channels,H,W) -> logits (B,classes); batch norm in training mode
   while gradients are on, in evaluation mode between vt_eval_begin/end */
VTDEF vt_tensor *vt_resnet_forward(vt_ctx *c, const vt_resnet *m, vt_tensor *x);

/* --- data -------------------------------------------------------------- */
/* CIFAR-10's binary form (data_batch_1.bin ... and test_batch.bin): records
   of one label byte (0..9) and 3,072 pixel bytes (the red, green and blue
   32x32 planes). vt_cifar_load reads npaths files one after another; a
   truncated file or a label out of range is an error naming file and record. */
typedef struct vt_cifar { int n; unsigned char *x; int32_t *y; } vt_cifar; /* x (n,3,32,32), y 0..9 */
VTDEF vt_status vt_cifar_load(const char *const *paths, int npaths, vt_cifar *d);
VTDEF void vt_cifar_free(vt_cifar *d);
/* image i as (3,32,32) binary32 values, normalised per channel with the
   CIFAR-10 mean and standard deviation; with augment, as the papers train:
   a 32x32 crop of the image padded by 4 zeros on each side and a horizontal
   flip with probability 1/2, both drawn from (seed, stream, index), so a
   trainer and an auditor augment alike */
VTDEF void vt_cifar_image(const vt_cifar *d, int i, int augment, uint64_t seed, uint64_t stream, uint64_t index, float *out);

typedef struct vt_digits { int n; float *x; int32_t *y; } vt_digits; /* x (n,64) in [0,1], y 0..9 */
VTDEF vt_status vt_digits_load(const char *path, vt_digits *d);
VTDEF void vt_digits_free(vt_digits *d);
typedef struct vt_text {
    int64_t n;          /* tokens */
    int32_t *tok;       /* token ids 0..vocab-1 */
    int vocab;
    unsigned char itos[256];
    int stoi[256];      /* -1 for bytes not in the text */
} vt_text;
VTDEF vt_status vt_text_load(const char *path, vt_text *t);
VTDEF void vt_text_free(vt_text *t);

#ifdef __cplusplus
}
#endif
#endif /* VTRAIN_H */

/* ==========================================================================
   >>elementary  exp, expm1, log, tanh, sigmoid and cos(pi p / 2), written
   in plain IEEE binary64 arithmetic

   WHY. Libraries disagree: two conforming libms return exp(x) an ulp or two
   apart, and CUDA's differs from both. Calling them would make every
   transcendental output a machine-dependent value, bounded only by an
   accuracy that no libm guarantees. These functions use + - * / on
   binary64, comparisons and exponent-field arithmetic only, each operation
   written out (no contraction: the pragmas of the implementation, nvcc
   -fmad=false) and none whose result IEEE-754 leaves open, so every
   conforming machine, CPU or GPU, computes the same bits from the same
   input: what they produce from binary32 inputs is the same everywhere
   (an e = 0 value in >>rounding's words), and needs no allowance at all.
   One source serves the CPU, the CUDA kernels under nvcc (vtrain_cuda.cu.h
   includes this block with VTRAIN_ELEMENTARY_DEVICE) and the emulator.
   Vector versions must do the same operations in the same order.

   ACCURACY (checked against __float128 by tests/test_bounds.c): exp and
   expm1 within 1 ulp, expm1 within 4 ulps for |x| in (0.35, 1), log within
   2.5 ulps (2.01 measured, near 1), tanh and sigmoid within 3 ulps, cospi2 within 2 ulps; glibc is
   within 1 ulp. Outputs are rounded to binary32 (2^29 binary64 ulps) at
   the next rounding point, so training does not see the difference.
   Where an input differs between machines (log of a sum in log_softmax and
   cross_entropy) the kernel's bound uses VT__DLOG_ERR, derived at vt__dlog.
   COST: about libm's for exp (13 multiply-adds), one division more for log.
   ========================================================================== */
#if (defined(VTRAIN_IMPLEMENTATION) || defined(VTRAIN_ELEMENTARY_DEVICE)) && !defined(VT__ELEMENTARY_DEFINED)
#define VT__ELEMENTARY_DEFINED 1
/* #pragma float_control: clang 11 and later (Apple's numbering: 13) */
#if defined(__clang__) && ((defined(__apple_build_version__) && __clang_major__ >= 13) || \
                           (!defined(__apple_build_version__) && __clang_major__ >= 11))
#define VT__CLANG_FLOAT_CONTROL_EF 1
#else
#define VT__CLANG_FLOAT_CONTROL_EF 0
#endif
#if defined(__CUDACC__)
#define VT__EF static __device__ __forceinline__
#define VT__EF_BITS(d) ((uint64_t)__double_as_longlong(d))
#define VT__EF_DBL(b) __longlong_as_double((long long)(b))
#define VT__EF_INF __longlong_as_double(0x7ff0000000000000LL)
#else
#include <string.h>
#if defined(__GNUC__) || defined(__clang__)
#define VT__EF static __attribute__((unused))
#else
#define VT__EF static
#endif
VT__EF uint64_t vt__ef_bits(double d) { uint64_t b; memcpy(&b, &d, 8); return b; }
VT__EF double vt__ef_dbl(uint64_t b) { double d; memcpy(&d, &b, 8); return d; }
#define VT__EF_BITS(d) vt__ef_bits(d)
#define VT__EF_DBL(b) vt__ef_dbl(b)
#define VT__EF_INF VT__EF_DBL(0x7ff0000000000000ull)
/* No contraction and precise semantics here too: this block comes before
   the implementation's pragmas, and clang's default (-ffp-contract=on)
   fused exp's and log's multiply-adds when a build left out
   -ffp-contract=off, where vt_create's check, compiled after those
   pragmas, saw nothing. Both stay pushed to the implementation's end (the
   elementary functions then have its options, and inline into its kernels
   as they did), and clang reads the system headers the implementation
   includes (immintrin.h's intrinsics, inlined into the kernels) under its
   float_control too (float_control first, then FP_CONTRACT: see the
   implementation). VT__FP_PUSH / VT__FP_POP are these settings, for
   vtrain_btard.h too. */
#if defined(__clang__)
#if VT__CLANG_FLOAT_CONTROL_EF
#define VT__FP_PRECISE_PUSH _Pragma("float_control(precise, on, push)")
#define VT__FP_POP _Pragma("float_control(pop)")
#else
#define VT__FP_PRECISE_PUSH
#define VT__FP_POP
#endif
#define VT__FP_PUSH VT__FP_PRECISE_PUSH _Pragma("STDC FP_CONTRACT OFF")
#elif defined(__GNUC__) && defined(VTRAIN_NO_O3)
#define VT__FP_PUSH _Pragma("GCC push_options") _Pragma("GCC optimize(\"fp-contract=off\")")
#define VT__FP_POP _Pragma("GCC pop_options")
#elif defined(__GNUC__)
#define VT__FP_PUSH _Pragma("GCC push_options") _Pragma("GCC optimize(\"O3\", \"fp-contract=off\")")
#define VT__FP_POP _Pragma("GCC pop_options")
#else
#define VT__FP_PUSH
#define VT__FP_POP
#endif
VT__FP_PUSH
#endif

/* exp(r) - 1 for |r| <= 0.35: Taylor to r^13 (the remainder is below
   2^-62 relative), Horner from the highest term */
VT__EF double vt__dexpm1_core(double r) {
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    return r + (p * r) * r;
}

/* exp(x) = 2^k exp(r): k = round(x / ln2) (adding and removing 1.5 2^52
   rounds to an integer), r = x - k ln2 in two parts (Cody and Waite): ln2's
   high part has 32 bits, so k ln2_hi (|k| < 2^11) and x - k ln2_hi are exact;
   then 2^k from the exponent field, in two factors where 2^k is not normal */
VT__EF double vt__dexp(double x) {
    double kd, r, y;
    int64_t k;
    if (!(x < 709.782712893384)) return x != x ? x : VT__EF_INF;
    if (x < -745.2) return 0.0;
    kd = (x * 1.4426950408889634 + 6755399441055744.0) - 6755399441055744.0;
    k = (int64_t)kd;
    r = (x - kd * 0x1.62e42fee00000p-1) - kd * 0x1.a39ef35793c76p-33;
    y = 1.0 + vt__dexpm1_core(r);
    if (k > 1023) return y * 2.0 * VT__EF_DBL((uint64_t)(k - 1 + 1023) << 52);
    if (k < -1021) return y * VT__EF_DBL((uint64_t)(k + 1000 + 1023) << 52) * 0x1p-1000;
    return y * VT__EF_DBL((uint64_t)(k + 1023) << 52);
}

VT__EF double vt__dexpm1(double x) {
    if (x <= 0.35 && x >= -0.35) return vt__dexpm1_core(x);
    return vt__dexp(x) - 1.0;
}

/* log(x) = k ln2 + log(m), x = 2^k m, m in [sqrt(1/2), sqrt(2)) (subnormals
   scaled by 2^54 first), log m = 2 atanh(s) = 2 (s + s^3/3 + ... + s^23/23),
   s = f/(2 + f), f = m - 1 (exact), |s| < 0.1716: the series' remainder is
   below 2^-60 relative.
   VT__DLOG_ERR: f is exact and 2 + f rounds at most once, so s carries at
   most 2u relative error (u = 2^-53), and log m = 2 atanh(s) (slope 1.03 s
   at most in s) about 2.1u plus the roundings of the polynomial's small
   correction and of 2s + ...: within 3.5u |log m|. With k != 0 the two
   additions of k ln2_lo and k ln2_hi round once each (u |log x| + u 0.35),
   and |log x| >= 0.34: in all, |vt__dlog(x) - log x| <= 8u |log x|. */
#define VT__DLOG_ERR (8 * 0x1p-53)
VT__EF double vt__dlog(double x) {
    uint64_t b;
    int k = 0;
    double m, f, s, z, p;
    if (!(x > 0)) return x == 0 ? -VT__EF_INF : (x - x) / (x - x);
    if (x == VT__EF_INF) return x;
    if (x < 0x1p-1022) { x *= 0x1p54; k = -54; }
    b = VT__EF_BITS(x);
    k += (int)((b >> 52) & 0x7ff) - 1022;
    m = VT__EF_DBL((b & 0x000fffffffffffffull) | 0x3fe0000000000000ull); /* [0.5, 1) */
    if (m < 0.70710678118654752440) { m *= 2.0; k--; }
    f = m - 1.0;
    s = f / (2.0 + f);
    z = s * s;
    p = 1.0 / 23;
    p = p * z + 1.0 / 21;
    p = p * z + 1.0 / 19;
    p = p * z + 1.0 / 17;
    p = p * z + 1.0 / 15;
    p = p * z + 1.0 / 13;
    p = p * z + 1.0 / 11;
    p = p * z + 1.0 / 9;
    p = p * z + 1.0 / 7;
    p = p * z + 1.0 / 5;
    p = p * z + 1.0 / 3;
    return k * 0x1.62e42fee00000p-1 + (k * 0x1.a39ef35793c76p-33 + (2.0 * s + 2.0 * s * (z * p)));
}

/* tanh(x) = sign(x) e / (e + 2), e = expm1(2|x|): no cancellation at small
   |x|; 1 beyond 20 (tanh 20 = 1 - 2^-57.7, which rounds to 1 - 2^-53 at
   worst: within 1 ulp) */
VT__EF double vt__dtanh(double x) {
    double a = x < 0 ? -x : x, e, t;
    if (!(a < 20)) return x != x ? x : (x > 0 ? 1.0 : -1.0);
    e = vt__dexpm1(2.0 * a);
    t = e / (e + 2.0);
    return x < 0 ? -t : t;
}

/* sigmoid(x) = 1 / (1 + exp(-x)), as exp(x) / (1 + exp(x)) below 0: no
   cancellation on either side (1 + tanh(x/2) = 2 sigmoid(x) is what GELU
   needs where 1 + tanh cancels) */
VT__EF double vt__dsigmoid(double x) {
    double E;
    if (x != x) return x;
    if (x >= 0) return 1.0 / (1.0 + vt__dexp(-x));
    E = vt__dexp(x);
    return E / (1.0 + E);
}

/* cos(pi p / 2) for p in [0, 1] (the cosine schedule), given p and q =
   1 - p, each with at most one rounding (the caller computes both as
   quotients of integers): t = (pi/2) p and cos t where p <= 1/2, else
   t = (pi/2) q and sin t = cos(pi p / 2); t is in [0, pi/4], where the
   Taylor series to t^18 (cos) and t^17 (sin) leave remainders below 2^-58
   relative. Near p = 1 the result is relatively accurate (the sine of a
   small, relatively accurate t), so a schedule that decays to 0 keeps its
   relative accuracy to the last step. */
VT__EF double vt__dcospi2(double p, double q) {
    double t = 1.5707963267948966 * (p <= 0.5 ? p : q), t2 = t * t, c;
    if (p <= 0.5) {
        c = -1.0 / 6402373705728000.0;
        c = c * t2 + 1.0 / 20922789888000.0;
        c = c * t2 - 1.0 / 87178291200.0;
        c = c * t2 + 1.0 / 479001600.0;
        c = c * t2 - 1.0 / 3628800.0;
        c = c * t2 + 1.0 / 40320.0;
        c = c * t2 - 1.0 / 720.0;
        c = c * t2 + 1.0 / 24.0;
        c = c * t2 - 0.5;
        return 1.0 + t2 * c;
    }
    c = 1.0 / 355687428096000.0;
    c = c * t2 - 1.0 / 1307674368000.0;
    c = c * t2 + 1.0 / 6227020800.0;
    c = c * t2 - 1.0 / 39916800.0;
    c = c * t2 + 1.0 / 362880.0;
    c = c * t2 - 1.0 / 5040.0;
    c = c * t2 + 1.0 / 120.0;
    c = c * t2 - 1.0 / 6.0;
    return t + t * (t2 * c);
}
/* --- exact sums of products of binary32 values, rounded once to binary32 ---

   vt__xacc holds a sum of binary32 values and of products a b of two of
   them exactly (such a product is exact in binary64, and its lowest set bit
   is at least 2^-298): a fixed-point number with 32-bit digits, digit i
   worth 2^(32 i - 320), kept in int64 limbs whose carries are resolved at
   the end (a limb takes 2^29 additions before it could overflow; the
   caller's sums are far shorter). 21 digits reach 2^352, beyond any sum of
   fewer than 2^90 such terms. vt__xacc_round32 returns RNE32 of the exact
   sum, as a double: the correctly rounded value, which every machine
   computes alike. An exact sum of zero is -0 when every term was -0 (as
   IEEE addition gives in any order), else +0. Only integer arithmetic: the
   same source runs on the CPU and in CUDA kernels. */
#define VT__XD 21
#define VT__XE0 (-320)
typedef struct { int64_t d[VT__XD]; int negzero; } vt__xacc;

VT__EF void vt__xacc_init(vt__xacc *a) {
    int i;
    for (i = 0; i < VT__XD; i++) a->d[i] = 0;
    a->negzero = 1;
}

/* t exactly: a finite binary64 value whose lowest set bit is at least 2^-320 */
VT__EF void vt__xacc_add(vt__xacc *a, double t) {
    uint64_t b = VT__EF_BITS(t), m, lo, hi;
    int ex = (int)((b >> 52) & 0x7ff), p, d, s;
    int64_t c0, c1, c2;
    if (!(b << 1)) { if (!(b >> 63)) a->negzero = 0; return; } /* +0, -0 */
    a->negzero = 0;
    m = b & 0x000fffffffffffffull;
    if (ex) m |= 0x0010000000000000ull; else ex = 1;
    p = ex - 1075 - VT__XE0; /* t = m 2^(p + E0) */
    while (p < 0) { m >>= 1; p++; } /* only zero bits leave: the caller's promise */
    d = p >> 5; s = p & 31;
    lo = (m & 0xffffffffull) << s; /* < 2^63 */
    hi = (m >> 32) << s;           /* < 2^52 */
    c0 = (int64_t)(lo & 0xffffffffull);
    c1 = (int64_t)((lo >> 32) + (hi & 0xffffffffull));
    c2 = (int64_t)(hi >> 32);
    if (b >> 63) { a->d[d] -= c0; a->d[d + 1] -= c1; a->d[d + 2] -= c2; }
    else { a->d[d] += c0; a->d[d + 1] += c1; a->d[d + 2] += c2; }
}

/* every digit into [0, 2^32), the sign in the top limb (floor division
   written out: right shifts of negative integers are not portable C) */
VT__EF void vt__xacc_carry(int64_t *d) {
    int i;
    for (i = 0; i < VT__XD - 1; i++) {
        int64_t q = d[i] >= 0 ? d[i] / 4294967296LL : -((-d[i] - 1) / 4294967296LL) - 1;
        d[i] -= q * 4294967296LL;
        d[i + 1] += q;
    }
}

VT__EF double vt__xacc_round32(vt__xacc *a) {
    int64_t *d = a->d;
    int i, top, tb, P, q, k, neg = 0, sticky = 0, rbit;
    uint64_t mant = 0;
    double v, scale;
    vt__xacc_carry(d);
    if (d[VT__XD - 1] < 0) {
        neg = 1;
        for (i = 0; i < VT__XD; i++) d[i] = -d[i];
        vt__xacc_carry(d);
    }
    for (top = VT__XD - 1; top >= 0 && d[top] == 0; top--) {}
    if (top < 0) return a->negzero ? -0.0 : 0.0;
    for (tb = 31; tb > 0 && !((d[top] >> tb) & 1); tb--) {}
    P = 32 * top + tb;                         /* the leading 1: 2^(P + E0) */
    q = P + VT__XE0 < -126 ? -149 - VT__XE0 : P - 23; /* the lowest kept bit: 24 bits, or the subnormal quantum */
    for (k = P; k >= q; k--) mant = (mant << 1) | (uint64_t)((d[k >> 5] >> (k & 31)) & 1);
    rbit = q > 0 ? (int)((d[(q - 1) >> 5] >> ((q - 1) & 31)) & 1) : 0;
    for (k = 0; k < ((q - 1) >> 5) && !sticky; k++) sticky = d[k] != 0;
    if (q - 1 > 0 && !sticky) sticky = (d[(q - 1) >> 5] & ((1LL << ((q - 1) & 31)) - 1)) != 0;
    if (rbit && (sticky || (mant & 1))) mant++;
    if (q + VT__XE0 + (mant >> 24 ? 24 : 23) >= 128) return neg ? -VT__EF_INF : VT__EF_INF;
    scale = VT__EF_DBL((uint64_t)(q + VT__XE0 + 1023) << 52); /* 2^(q + E0): a normal binary64 */
    v = (double)mant * scale;
    return neg ? -v : v;
}

/* A correctly rounded product (CORRECTLY ROUNDED PRODUCTS in >>rounding):
   its output C[off + m N + n] = RNE32(sum_k A[m sam + k sak] B[k sbk + n sbn]
   + C0[m N + n] + bias[n]) exactly; B NULL: the terms are A's alone. An
   output is a list of such blocks (a batched product has one per batch), in
   the order of off. Addresses are the backend's (device memory in a CUDA
   kernel). */
typedef struct vt__xblk {
    int64_t off, M, N, K;
    const double *A; int64_t sam, sak;
    const double *B; int64_t sbk, sbn;
    const double *C0;   /* the old values of an accumulating output, copied; or NULL */
    const double *bias; /* or NULL */
    const struct vt__wstat *ws; int64_t wn; /* CPU: B is image wn's part of this im2col matrix (B itself stays valid); or NULL */
} vt__xblk;
/* gs, gx: the refinement of the point's bounds by its own values (A ONE-CHUNK
   PRODUCT'S BOUND FROM ITS VALUE, >>rounding): every element's bound is G s
   with G >= gs, and its error is at most gx (s + |x|); gx = 0: none */
typedef struct vt__xprod { vt__xblk *b; int n, cap; double gs, gx; } vt__xprod;

/* RNE32 of output i of the blocks b[0..nb), exactly */
VT__EF double vt__xprod_value(const vt__xblk *b, int nb, int64_t i) {
    int lo = 0, hi = nb - 1;
    int64_t m, nn, k;
    const vt__xblk *z;
    vt__xacc a;
    while (lo < hi) { /* the last block whose off <= i */
        int mid = (lo + hi + 1) / 2;
        if (b[mid].off <= i) lo = mid; else hi = mid - 1;
    }
    z = &b[lo];
    m = (i - z->off) / z->N;
    nn = (i - z->off) % z->N;
    vt__xacc_init(&a);
    for (k = 0; k < z->K; k++)
        vt__xacc_add(&a, z->B ? z->A[m * z->sam + k * z->sak] * z->B[k * z->sbk + nn * z->sbn] : z->A[m * z->sam + k * z->sak]);
    if (z->C0) vt__xacc_add(&a, z->C0[m * z->N + nn]);
    if (z->bias) vt__xacc_add(&a, z->bias[nn]);
    return vt__xacc_round32(&a);
}
#endif /* >>elementary */

/* ==========================================================================
   ==========================================================================
   IMPLEMENTATION
   ==========================================================================
   ========================================================================== */
#ifdef VTRAIN_IMPLEMENTATION
#ifndef VTRAIN_IMPLEMENTATION_INCLUDED
#define VTRAIN_IMPLEMENTATION_INCLUDED

#include <errno.h>
#include <float.h>
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
#if !defined(_WIN32)
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif
#if defined(__AVX2__) && defined(__FMA__) && !defined(VTRAIN_NO_SIMD)
#include <immintrin.h>
#define VT__AVX2 1
#endif
/* The _POSIX_C_SOURCE at the top of this file only counts when no system
   header came before it: under -std=c99 or -std=c11 a header included
   first leaves clock_gettime, nanosleep, fileno and ftruncate undeclared,
   and the clock would fall back to clock(), the process's CPU time, which
   runs twice as fast as the wall clock on two threads (every step time and
   benchmark halved in effect). Refused instead of built that way. */
#if !defined(_WIN32) && !defined(CLOCK_MONOTONIC)
#error "vtrain.h: the implementation needs POSIX (clock_gettime, nanosleep, fileno, ftruncate), which a system header included before vtrain.h left undeclared under -std=c99/-std=c11: include vtrain.h first in the file that defines VTRAIN_IMPLEMENTATION, or compile with -D_POSIX_C_SOURCE=200809L"
#endif


/* Arithmetic written in a kernel must run exactly as written: a compiler
   that fuses a*b+c into one fma ("contraction") changes results. GCC does it
   by default in GNU modes and clang in all modes when the CPU has fma. These
   pragmas switch it off for the implementation (and, for GCC, for the rest
   of this translation unit); vt_create also checks it at run time. */
#if defined(__clang__)
/* clang: precise semantics for the implementation whatever the command
   line says (-fassociative-math, -freciprocal-math, -fno-signed-zeros and
   -funsafe-math-optimizations define none of the macros the #error below
   reads in clang 14): float_control(precise, on), pushed at >>elementary
   and popped at the implementation's end. It must come before FP_CONTRACT
   OFF: precise mode allows contraction within a statement, and the pragma
   after it takes that back (the other order fused a * b + c). */
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
/* GCC: -O3 and fp-contract=off for the implementation (13-17% on a GPT
   step against -O2; see BUILD at the top), pushed at >>elementary (so that
   its functions have the implementation's options and inline as before)
   and restored with the rest of GCC's options at its end */
#endif

/* Options that let the compiler change arithmetic (GCC says so in these
   macros; clang only for -ffast-math and -ffinite-math-only, and its
   float_control pragma above undoes the others in the implementation):
   reassociated sums and reciprocals change values that every
   machine must compute alike (e = 0: >>rounding), and finite-math-only
   removes the NaN checks the rounding points rely on. The file that holds
   the implementation must be built without them (other files may be; a
   program linked with -ffast-math also switches FTZ/DAZ on, which vt_create
   refuses at run time). */
#if defined(__FAST_MATH__) || (defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__) || defined(__ASSOCIATIVE_MATH__) || \
    defined(__RECIPROCAL_MATH__) || defined(__NO_SIGNED_ZEROS__)
#error "vtrain.h: the implementation needs IEEE arithmetic as written: compile the file that defines VTRAIN_IMPLEMENTATION without -ffast-math, -Ofast, -funsafe-math-optimizations, -ffinite-math-only, -fassociative-math, -freciprocal-math or -fno-signed-zeros"
#endif

/* x87 arithmetic (FLT_EVAL_METHOD 2: every double evaluated in 80 bits and
   rounded twice) computes other binary64 values than IEEE binary64 */
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 2
#error "vtrain: this compiler evaluates double in extended precision (FLT_EVAL_METHOD 2); compile with -msse2 -mfpmath=sse"
#endif

#ifndef VT_ASSERT
#include <assert.h>
#define VT_ASSERT(x) assert(x)
#endif

#if defined(VT_MALLOC) && defined(VT_FREE) && defined(VT_REALLOC)
/* user allocator */
#elif !defined(VT_MALLOC) && !defined(VT_FREE) && !defined(VT_REALLOC)
#define VT_MALLOC(sz, u) ((void)(u), malloc(sz))
#define VT_REALLOC(p, sz, u) ((void)(u), realloc((p), (sz)))
#define VT_FREE(p, u) ((void)(u), free(p))
#else
#error "vtrain: define all of VT_MALLOC, VT_REALLOC and VT_FREE, or none of them"
#endif

#if defined(__GNUC__) || defined(__clang__)
#define VT__THREAD_LOCAL __thread
#define VT__UNUSED __attribute__((unused))
#define VT__PRINTF(a, b) __attribute__((format(printf, a, b)))
#define VT__NOINLINE __attribute__((noinline))
#define VT__INLINE __inline__ __attribute__((always_inline))
#elif defined(_MSC_VER)
#define VT__THREAD_LOCAL __declspec(thread)
#define VT__UNUSED
#define VT__PRINTF(a, b)
#define VT__NOINLINE __declspec(noinline)
#define VT__INLINE __forceinline
#else
#define VT__THREAD_LOCAL
#define VT__UNUSED
#define VT__PRINTF(a, b)
#define VT__NOINLINE
#define VT__INLINE
#endif

#if defined(__FMA__) || defined(FP_FAST_FMA)
#define VT__HAVE_FAST_FMA 1
#else
#define VT__HAVE_FAST_FMA 0
#endif

#define VT__MIN(a, b) ((a) < (b) ? (a) : (b))
#define VT__MAX(a, b) ((a) > (b) ? (a) : (b))

/* --- >>elementary, vector forms: the functions of >>elementary four
   (AVX2) and eight (AVX-512) at a time, for the kernels' elementwise loops.
   Each lane runs the scalar function's operations in the scalar function's
   order (the same range reduction, the same Horner steps of the same
   coefficients, no fma: intrinsics under this file's no-contraction
   pragmas), so every lane's result is the scalar function's bits for every
   input; a lane outside the common range (exp: x < -707 or x >= 709, or
   NaN, where the scalar function takes its other branches) is handed to the
   scalar function itself. tests/test_core.c compares them with the scalar
   functions bit for bit over millions of inputs, edge cases included, on
   each ISA path. The AVX-512 forms are compiled by a target attribute and
   chosen at run time like the GEMM kernel (vt__isa512: VTRAIN_SIMD=avx2
   keeps AVX2). The array forms below are what kernels call: y[i] = f(x[i])
   over [0, n), the tail by the scalar function. */
static int vt__force_isa = -1; /* tests: -1 as the machine and VTRAIN_SIMD say, 0 the base kernels, 1 AVX-512 */
#ifdef VT__AVX2
#define VT__H4(p, r, c) p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(c))
static __m256d vt__v4_expm1_core(__m256d r) {
    __m256d p = _mm256_set1_pd(1.0 / 6227020800.0);
    VT__H4(p, r, 1.0 / 479001600.0); VT__H4(p, r, 1.0 / 39916800.0); VT__H4(p, r, 1.0 / 3628800.0);
    VT__H4(p, r, 1.0 / 362880.0); VT__H4(p, r, 1.0 / 40320.0); VT__H4(p, r, 1.0 / 5040.0);
    VT__H4(p, r, 1.0 / 720.0); VT__H4(p, r, 1.0 / 120.0); VT__H4(p, r, 1.0 / 24.0);
    VT__H4(p, r, 1.0 / 6.0); VT__H4(p, r, 0.5);
    return _mm256_add_pd(r, _mm256_mul_pd(_mm256_mul_pd(p, r), r));
}
#undef VT__H4

/* vt__dexp: k from the bits of x/ln2 + 1.5 2^52 (its last bits are k), 2^k
   from k's exponent field */
static __m256d vt__v4_exp(__m256d x) {
    const __m256d S = _mm256_set1_pd(6755399441055744.0);
    __m256d t = _mm256_add_pd(_mm256_mul_pd(x, _mm256_set1_pd(1.4426950408889634)), S), kd = _mm256_sub_pd(t, S);
    __m256d r = _mm256_sub_pd(_mm256_sub_pd(x, _mm256_mul_pd(kd, _mm256_set1_pd(0x1.62e42fee00000p-1))),
                              _mm256_mul_pd(kd, _mm256_set1_pd(0x1.a39ef35793c76p-33)));
    __m256d y = _mm256_add_pd(_mm256_set1_pd(1.0), vt__v4_expm1_core(r));
    __m256i k = _mm256_sub_epi64(_mm256_castpd_si256(t), _mm256_castpd_si256(S));
    __m256d p2 = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(k, _mm256_set1_epi64x(1023)), 52));
    __m256d v = _mm256_mul_pd(y, p2);
    int ok = _mm256_movemask_pd(_mm256_and_pd(_mm256_cmp_pd(x, _mm256_set1_pd(-707.0), _CMP_GE_OQ),
                                              _mm256_cmp_pd(x, _mm256_set1_pd(709.0), _CMP_LT_OQ)));
    if (ok != 15) {
        double xs[4], vs[4];
        int l;
        _mm256_storeu_pd(xs, x);
        _mm256_storeu_pd(vs, v);
        for (l = 0; l < 4; l++)
            if (!((ok >> l) & 1)) vs[l] = vt__dexp(xs[l]);
        v = _mm256_loadu_pd(vs);
    }
    return v;
}

static __m256d vt__v4_expm1(__m256d x) {
    __m256d small = _mm256_and_pd(_mm256_cmp_pd(x, _mm256_set1_pd(0.35), _CMP_LE_OQ), _mm256_cmp_pd(x, _mm256_set1_pd(-0.35), _CMP_GE_OQ));
    int m = _mm256_movemask_pd(small);
    __m256d e;
    if (m == 15) return vt__v4_expm1_core(x);
    e = _mm256_sub_pd(vt__v4_exp(x), _mm256_set1_pd(1.0));
    return m ? _mm256_blendv_pd(e, vt__v4_expm1_core(x), small) : e;
}

/* vt__dtanh; a lane with |x| >= 20 or NaN computes on 0 and takes +-1 or x */
static __m256d vt__v4_tanh(__m256d x) {
    const __m256d sign = _mm256_set1_pd(-0.0), one = _mm256_set1_pd(1.0);
    __m256d a = _mm256_andnot_pd(sign, x), big = _mm256_cmp_pd(a, _mm256_set1_pd(20.0), _CMP_NLT_UQ), e, t;
    int anybig = _mm256_movemask_pd(big);
    if (anybig) a = _mm256_andnot_pd(big, a);
    e = vt__v4_expm1(_mm256_mul_pd(_mm256_set1_pd(2.0), a));
    t = _mm256_div_pd(e, _mm256_add_pd(e, _mm256_set1_pd(2.0)));
    t = _mm256_blendv_pd(t, _mm256_xor_pd(t, sign), _mm256_cmp_pd(x, _mm256_setzero_pd(), _CMP_LT_OQ));
    if (anybig) {
        __m256d s = _mm256_blendv_pd(_mm256_xor_pd(one, sign), one, _mm256_cmp_pd(x, _mm256_setzero_pd(), _CMP_GT_OQ));
        s = _mm256_blendv_pd(s, x, _mm256_cmp_pd(x, x, _CMP_UNORD_Q));
        t = _mm256_blendv_pd(t, s, big);
    }
    return t;
}

/* vt__dsigmoid: both branches take E = exp(-|x|) (exp(-x) for x >= 0,
   exp(x) below) and divide 1 or E by 1 + E */
static __m256d vt__v4_sigmoid(__m256d x) {
    const __m256d one = _mm256_set1_pd(1.0);
    __m256d E = vt__v4_exp(_mm256_or_pd(x, _mm256_set1_pd(-0.0)));
    __m256d v = _mm256_div_pd(_mm256_blendv_pd(E, one, _mm256_cmp_pd(x, _mm256_setzero_pd(), _CMP_GE_OQ)), _mm256_add_pd(one, E));
    return _mm256_blendv_pd(v, x, _mm256_cmp_pd(x, x, _CMP_UNORD_Q));
}
#endif

#ifdef VT__AVX2
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define VT__AVX512 1
#define VT__T512 __attribute__((target("avx512f")))
/* (the masked shift, all lanes on, and & instead of andnot: g++ 12 warns
   about the undefined source of the unmasked forms, as in >>gemm) */
#define VT__H8(p, r, c) p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(c))
#define VT__XOR8(a, b) _mm512_castsi512_pd(_mm512_xor_epi64(_mm512_castpd_si512(a), _mm512_castpd_si512(b)))
#define VT__OR8(a, b) _mm512_castsi512_pd(_mm512_or_epi64(_mm512_castpd_si512(a), _mm512_castpd_si512(b)))
VT__T512 static __m512d vt__v8_expm1_core(__m512d r) {
    __m512d p = _mm512_set1_pd(1.0 / 6227020800.0);
    VT__H8(p, r, 1.0 / 479001600.0); VT__H8(p, r, 1.0 / 39916800.0); VT__H8(p, r, 1.0 / 3628800.0);
    VT__H8(p, r, 1.0 / 362880.0); VT__H8(p, r, 1.0 / 40320.0); VT__H8(p, r, 1.0 / 5040.0);
    VT__H8(p, r, 1.0 / 720.0); VT__H8(p, r, 1.0 / 120.0); VT__H8(p, r, 1.0 / 24.0);
    VT__H8(p, r, 1.0 / 6.0); VT__H8(p, r, 0.5);
    return _mm512_add_pd(r, _mm512_mul_pd(_mm512_mul_pd(p, r), r));
}

VT__T512 static __m512d vt__v8_exp(__m512d x) {
    const __m512d S = _mm512_set1_pd(6755399441055744.0);
    __m512d t = _mm512_add_pd(_mm512_mul_pd(x, _mm512_set1_pd(1.4426950408889634)), S), kd = _mm512_sub_pd(t, S);
    __m512d r = _mm512_sub_pd(_mm512_sub_pd(x, _mm512_mul_pd(kd, _mm512_set1_pd(0x1.62e42fee00000p-1))),
                              _mm512_mul_pd(kd, _mm512_set1_pd(0x1.a39ef35793c76p-33)));
    __m512d y = _mm512_add_pd(_mm512_set1_pd(1.0), vt__v8_expm1_core(r));
    __m512i k = _mm512_sub_epi64(_mm512_castpd_si512(t), _mm512_castpd_si512(S));
    __m512d v = _mm512_mul_pd(y, _mm512_castsi512_pd(_mm512_maskz_slli_epi64(0xff, _mm512_add_epi64(k, _mm512_set1_epi64(1023)), 52)));
    __mmask8 ok = _mm512_cmp_pd_mask(x, _mm512_set1_pd(-707.0), _CMP_GE_OQ) & _mm512_cmp_pd_mask(x, _mm512_set1_pd(709.0), _CMP_LT_OQ);
    if (ok != 0xff) {
        double xs[8], vs[8];
        int l;
        _mm512_storeu_pd(xs, x);
        _mm512_storeu_pd(vs, v);
        for (l = 0; l < 8; l++)
            if (!((ok >> l) & 1)) vs[l] = vt__dexp(xs[l]);
        v = _mm512_loadu_pd(vs);
    }
    return v;
}

VT__T512 static __m512d vt__v8_expm1(__m512d x) {
    __mmask8 small = _mm512_cmp_pd_mask(x, _mm512_set1_pd(0.35), _CMP_LE_OQ) & _mm512_cmp_pd_mask(x, _mm512_set1_pd(-0.35), _CMP_GE_OQ);
    __m512d e;
    if (small == 0xff) return vt__v8_expm1_core(x);
    e = _mm512_sub_pd(vt__v8_exp(x), _mm512_set1_pd(1.0));
    return small ? _mm512_mask_blend_pd(small, e, vt__v8_expm1_core(x)) : e;
}

VT__T512 static __m512d vt__v8_tanh(__m512d x) {
    const __m512d sign = _mm512_set1_pd(-0.0), one = _mm512_set1_pd(1.0), zero = _mm512_setzero_pd();
    __m512d a = _mm512_castsi512_pd(_mm512_and_epi64(_mm512_set1_epi64(0x7fffffffffffffffLL), _mm512_castpd_si512(x))), e, t;
    __mmask8 big = _mm512_cmp_pd_mask(a, _mm512_set1_pd(20.0), _CMP_NLT_UQ);
    if (big) a = _mm512_mask_blend_pd(big, a, zero);
    e = vt__v8_expm1(_mm512_mul_pd(_mm512_set1_pd(2.0), a));
    t = _mm512_div_pd(e, _mm512_add_pd(e, _mm512_set1_pd(2.0)));
    t = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, zero, _CMP_LT_OQ), t, VT__XOR8(t, sign));
    if (big) {
        __m512d s = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, zero, _CMP_GT_OQ), VT__XOR8(one, sign), one);
        s = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q), s, x);
        t = _mm512_mask_blend_pd(big, t, s);
    }
    return t;
}

VT__T512 static __m512d vt__v8_sigmoid(__m512d x) {
    const __m512d one = _mm512_set1_pd(1.0);
    __m512d E = vt__v8_exp(VT__OR8(x, _mm512_set1_pd(-0.0)));
    __m512d v = _mm512_div_pd(_mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, _mm512_setzero_pd(), _CMP_GE_OQ), E, one), _mm512_add_pd(one, E));
    return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q), v, x);
}
#undef VT__H8
#undef VT__XOR8
#undef VT__OR8
#endif
#endif

/* 1 where the AVX-512 kernels run (GEMM, elementary): the CPU has them and
   VTRAIN_SIMD is not "avx2"; vt__force_isa overrides (tests) */
static VT__UNUSED int vt__isa512(void) {
#ifdef VT__AVX512
    static int have = -1; /* every thread computes the same value; relaxed atomics keep that race defined */
    int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
    if (vt__force_isa >= 0) return vt__force_isa;
    if (h < 0) {
        const char *s = getenv("VTRAIN_SIMD");
        __builtin_cpu_init();
        h = __builtin_cpu_supports("avx512f") && !(s && !strcmp(s, "avx2"));
        __atomic_store_n(&have, h, __ATOMIC_RELAXED);
    }
    return h;
#else
    (void)vt__force_isa;
    return 0;
#endif
}

/* the array forms: y[i] = f(x[i] - sub) for exp (softmax's rows), f(x[i])
   for the others; y may be x */
#ifdef VT__AVX512
#define VT__VARR8(name, f8, arg8)                                                     \
    VT__T512 static int64_t name##_512(const double *x, double sub, double *y, int64_t n) { \
        int64_t i = 0;                                                                 \
        __m512d s8 = _mm512_set1_pd(sub);                                              \
        (void)s8;                                                                      \
        for (; i + 8 <= n; i += 8) _mm512_storeu_pd(y + i, f8(arg8));                  \
        return i;                                                                      \
    }
VT__VARR8(vt__vexp, vt__v8_exp, _mm512_sub_pd(_mm512_loadu_pd(x + i), s8))
VT__VARR8(vt__vtanh, vt__v8_tanh, _mm512_loadu_pd(x + i))
VT__VARR8(vt__vsigmoid, vt__v8_sigmoid, _mm512_loadu_pd(x + i))
#undef VT__VARR8
#endif
#ifdef VT__AVX512
#define VT__VPICK(name) if (vt__isa512()) i = name##_512(x, sub, y, n);
#else
#define VT__VPICK(name)
#endif
#ifdef VT__AVX2
#define VT__VARR(name, f1, f4, arg4, arg1)                                               \
    static void name(const double *x, double sub, double *y, int64_t n) {              \
        int64_t i = 0;                                                                 \
        __m256d s4 = _mm256_set1_pd(sub);                                              \
        (void)s4;                                                                      \
        VT__VPICK(name)                                                                \
        for (; i + 4 <= n; i += 4) _mm256_storeu_pd(y + i, f4(arg4));                  \
        for (; i < n; i++) y[i] = f1(arg1);                                            \
    }
VT__VARR(vt__vexp, vt__dexp, vt__v4_exp, _mm256_sub_pd(_mm256_loadu_pd(x + i), s4), x[i] - sub)
VT__VARR(vt__vtanh, vt__dtanh, vt__v4_tanh, _mm256_loadu_pd(x + i), x[i])
VT__VARR(vt__vsigmoid, vt__dsigmoid, vt__v4_sigmoid, _mm256_loadu_pd(x + i), x[i])
#else
#define VT__VARR(name, f1, f4, arg4, arg1)                                    \
    static void name(const double *x, double sub, double *y, int64_t n) {   \
        int64_t i;                                                          \
        (void)sub;                                                          \
        for (i = 0; i < n; i++) y[i] = f1(arg1);                            \
    }
VT__VARR(vt__vexp, vt__dexp, 0, 0, x[i] - sub)
VT__VARR(vt__vtanh, vt__dtanh, 0, 0, x[i])
VT__VARR(vt__vsigmoid, vt__dsigmoid, 0, 0, x[i])
#endif
#undef VT__VARR
#undef VT__VPICK

/* Compile-time checks that the name tables match their enums. */
typedef char vt__assert_status_count[(VT_STATUS_COUNT == 14) ? 1 : -1];
/* The op list is in id order with no gap: each row's id equals its
   position. A row inserted anywhere but at the end, or a reused id, fails
   here (see VT__OP_LIST). */
enum vt__op_seq {
#define VT__X(id, name, str, table, flags, slots) VT__OPSEQ_##name,
    VT__OP_LIST(VT__X)
#undef VT__X
    VT__OPSEQ_END
};
#define VT__X(id, name, str, table, flags, slots) \
    typedef char vt__assert_op_id_##name[((int)VT__OPSEQ_##name == (id) && (table) <= VT__OP_TABLE) ? 1 : -1];
VT__OP_LIST(VT__X)
#undef VT__X
typedef char vt__assert_op_count[((int)VT__OPSEQ_END == (int)VT_OP_COUNT) ? 1 : -1];

/* ==========================================================================
   >>errors
   ========================================================================== */

static const char *vt__status_names[] = {
#define VT__X(name, msg) #name,
    VT__STATUS_LIST(VT__X)
#undef VT__X
};
static const char *vt__status_msgs[] = {
#define VT__X(name, msg) msg,
    VT__STATUS_LIST(VT__X)
#undef VT__X
};
static const struct vt__opinfo {
    const char *name;
    int table;          /* op-table revision that introduced it */
    unsigned flags;     /* VT__OPF_* */
    const char *slots;  /* slot names, or NULL */
} vt__ops[] = {
#define VT__X(id, name, str, table, flags, slots) {str, table, flags, slots},
    VT__OP_LIST(VT__X)
#undef VT__X
};
static unsigned vt__op_flags(int op) { return (unsigned)op < VT_OP_COUNT ? vt__ops[op].flags : VT__OPF_RETIRED; }

static VT__THREAD_LOCAL char vt__tls_err[768];
static VT__THREAD_LOCAL vt_status vt__tls_status;

VTDEF const char *vt_version(void) { return VTRAIN_VERSION_STRING; }
VTDEF const char *vt_status_name(vt_status s) {
    return (unsigned)s < VT_STATUS_COUNT ? vt__status_names[s] : "VT_?";
}
VTDEF const char *vt_status_message(vt_status s) {
    return (unsigned)s < VT_STATUS_COUNT ? vt__status_msgs[s] : "unknown status";
}
VTDEF const char *vt_op_name(vt_op op) {
    return (unsigned)op < VT_OP_COUNT ? vt__ops[op].name : "?";
}
VTDEF const char *vt_mode_name(vt_mode m) {
    static const char *n[] = {"verified", "round-only", "native", "fp64"};
    return (unsigned)m < VT_MODE_COUNT ? n[m] : "?";
}
VTDEF const char *vt_bound_name(vt_bound_mode b) {
    static const char *n[] = {"sound", "probabilistic", "calibrated"};
    return (unsigned)b < VT_BOUND_COUNT ? n[b] : "?";
}
VTDEF const char *vt_last_error(void) { return vt__tls_err; }
VTDEF vt_status vt_last_status(void) { return vt__tls_status; }

static vt_status vt__tls_fail(vt_status s, const char *fmt, ...) VT__PRINTF(2, 3);
static vt_status vt__tls_fail(vt_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(vt__tls_err, sizeof vt__tls_err, fmt, ap);
    va_end(ap);
    vt__tls_status = s;
    return s;
}

/* ==========================================================================
   >>hash  SHA-256 (FIPS 180-4), written from the specification
   ========================================================================== */

static const uint32_t vt__sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define VT__ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

#if defined(__SHA__) && defined(__SSE4_1__) && !defined(VTRAIN_NO_SIMD)
#include <immintrin.h>
/* the same compression with the x86 SHA extensions (about 5x faster): the
   state is kept as (A,B,E,F) in S0 and (C,D,G,H) in S1, two rounds per
   sha256rnds2. The 16 four-round groups are written out so that the
   message schedule stays in four registers. The SHA instructions have no
   VEX form, and a legacy SSE instruction run while the upper halves of the
   AVX registers hold data pays an AVX-SSE transition on Intel: so the two
   block functions stay out of line (VT__NOINLINE), entered by a call, before
   which the compiler clears those halves (vzeroupper). Inlined into
   vt__block_digest2 beside its AVX conversion loop, they made every step's
   commitment 4x slower on a Xeon. */
#define VT__SHA_BSWAP _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL)
/* four rounds on W (message words 4i..4i+3) */
#define VT__SHA_R4(S0, S1, W, i)                                                     \
    do {                                                                             \
        __m128i m_ = _mm_add_epi32(W, _mm_loadu_si128((const __m128i *)&vt__sha_k[4 * (i)])); \
        S1 = _mm_sha256rnds2_epu32(S1, S0, m_);                                      \
        S0 = _mm_sha256rnds2_epu32(S0, S1, _mm_shuffle_epi32(m_, 0x0E));             \
    } while (0)
/* the next four schedule words into W0, from W0..W3 (oldest first) */
#define VT__SHA_NEXT(W0, W1, W2, W3) \
    W0 = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(W0, W1), _mm_alignr_epi8(W3, W2, 4)), W3)
/* rounds 4i..4i+3 for i >= 4: extend the schedule, then the rounds */
#define VT__SHA_G(S0, S1, W0, W1, W2, W3, i) VT__SHA_NEXT(W0, W1, W2, W3); VT__SHA_R4(S0, S1, W0, i)
/* rounds 16..63 of one message (G1) or of two interleaved (G2) */
#define VT__SHA_G1(S0, S1, W0, W1, W2, W3, i) VT__SHA_G(S0, S1, W0, W1, W2, W3, i)
#define VT__SHA_G2(S0, S1, W0, W1, W2, W3, T0, T1, X0, X1, X2, X3, i) \
    VT__SHA_G(S0, S1, W0, W1, W2, W3, i); VT__SHA_G(T0, T1, X0, X1, X2, X3, i)
#define VT__SHA_LOAD(W, p, k) W = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)((p) + 16 * (k))), VT__SHA_BSWAP)

/* h[8] <-> the (S0, S1) register layout */
static void vt__sha_ni_in(const uint32_t h[8], __m128i *s0, __m128i *s1) {
    __m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1);
    __m128i u = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B);
    *s0 = _mm_alignr_epi8(t, u, 8);
    *s1 = _mm_blend_epi16(u, t, 0xF0);
}
static void vt__sha_ni_out(__m128i s0, __m128i s1, uint32_t h[8]) {
    __m128i t = _mm_shuffle_epi32(s0, 0x1B), u = _mm_shuffle_epi32(s1, 0xB1);
    _mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(t, u, 0xF0));
    _mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(u, t, 8));
}

static VT__NOINLINE void vt__sha_blocks_ni(uint32_t h[8], const unsigned char *p, size_t nblocks) {
    __m128i s0, s1;
    vt__sha_ni_in(h, &s0, &s1);
    while (nblocks--) {
        __m128i a0 = s0, a1 = s1, w0, w1, w2, w3;
        VT__SHA_LOAD(w0, p, 0); VT__SHA_LOAD(w1, p, 1); VT__SHA_LOAD(w2, p, 2); VT__SHA_LOAD(w3, p, 3);
        VT__SHA_R4(s0, s1, w0, 0); VT__SHA_R4(s0, s1, w1, 1); VT__SHA_R4(s0, s1, w2, 2); VT__SHA_R4(s0, s1, w3, 3);
        {
            int i;
            for (i = 4; i < 16; i += 4) {
                VT__SHA_G1(s0, s1, w0, w1, w2, w3, i);
                VT__SHA_G1(s0, s1, w1, w2, w3, w0, i + 1);
                VT__SHA_G1(s0, s1, w2, w3, w0, w1, i + 2);
                VT__SHA_G1(s0, s1, w3, w0, w1, w2, i + 3);
            }
        }
        s0 = _mm_add_epi32(s0, a0);
        s1 = _mm_add_epi32(s1, a1);
        p += 64;
    }
    vt__sha_ni_out(s0, s1, h);
}

/* two messages at once: a sha256rnds2 waits for the one before it, so a
   second independent chain fills the gaps (about 1.8x the throughput) */
static VT__NOINLINE void vt__sha_blocks_ni2(uint32_t ha[8], const unsigned char *pa, uint32_t hb[8], const unsigned char *pb, size_t nblocks) {
    __m128i s0, s1, t0, t1;
    vt__sha_ni_in(ha, &s0, &s1);
    vt__sha_ni_in(hb, &t0, &t1);
    while (nblocks--) {
        __m128i a0 = s0, a1 = s1, b0 = t0, b1 = t1, w0, w1, w2, w3, x0, x1, x2, x3;
        VT__SHA_LOAD(w0, pa, 0); VT__SHA_LOAD(w1, pa, 1); VT__SHA_LOAD(w2, pa, 2); VT__SHA_LOAD(w3, pa, 3);
        VT__SHA_LOAD(x0, pb, 0); VT__SHA_LOAD(x1, pb, 1); VT__SHA_LOAD(x2, pb, 2); VT__SHA_LOAD(x3, pb, 3);
        VT__SHA_R4(s0, s1, w0, 0); VT__SHA_R4(t0, t1, x0, 0); VT__SHA_R4(s0, s1, w1, 1); VT__SHA_R4(t0, t1, x1, 1);
        VT__SHA_R4(s0, s1, w2, 2); VT__SHA_R4(t0, t1, x2, 2); VT__SHA_R4(s0, s1, w3, 3); VT__SHA_R4(t0, t1, x3, 3);
        {
            int i;
            for (i = 4; i < 16; i += 4) {
                VT__SHA_G2(s0, s1, w0, w1, w2, w3, t0, t1, x0, x1, x2, x3, i);
                VT__SHA_G2(s0, s1, w1, w2, w3, w0, t0, t1, x1, x2, x3, x0, i + 1);
                VT__SHA_G2(s0, s1, w2, w3, w0, w1, t0, t1, x2, x3, x0, x1, i + 2);
                VT__SHA_G2(s0, s1, w3, w0, w1, w2, t0, t1, x3, x0, x1, x2, i + 3);
            }
        }
        s0 = _mm_add_epi32(s0, a0); s1 = _mm_add_epi32(s1, a1);
        t0 = _mm_add_epi32(t0, b0); t1 = _mm_add_epi32(t1, b1);
        pa += 64;
        pb += 64;
    }
    vt__sha_ni_out(s0, s1, ha);
    vt__sha_ni_out(t0, t1, hb);
}
#undef VT__SHA_BSWAP
#undef VT__SHA_R4
#undef VT__SHA_NEXT
#undef VT__SHA_G
#undef VT__SHA_G1
#undef VT__SHA_G2
#undef VT__SHA_LOAD
#define VT__SHA_NI 1
#endif

/* the compression function in plain C, from FIPS 180-4 section 6.2.2 */
static VT__UNUSED void vt__sha_block_c(uint32_t h[8], const unsigned char *p) {
    uint32_t w[64], a, b, c, d, e, f, g, hh;
    int i;
    for (i = 0; i < 16; i++)
        w[i] = ((uint32_t)p[4 * i] << 24) | ((uint32_t)p[4 * i + 1] << 16) |
               ((uint32_t)p[4 * i + 2] << 8) | (uint32_t)p[4 * i + 3];
    for (i = 16; i < 64; i++) {
        uint32_t s0 = VT__ROTR(w[i - 15], 7) ^ VT__ROTR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = VT__ROTR(w[i - 2], 17) ^ VT__ROTR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4]; f = h[5]; g = h[6]; hh = h[7];
    for (i = 0; i < 64; i++) {
        uint32_t S1 = VT__ROTR(e, 6) ^ VT__ROTR(e, 11) ^ VT__ROTR(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + S1 + ch + vt__sha_k[i] + w[i];
        uint32_t S0 = VT__ROTR(a, 2) ^ VT__ROTR(a, 13) ^ VT__ROTR(a, 22);
        uint32_t mj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + mj;
        hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

static void vt__sha_block(uint32_t h[8], const unsigned char *p) {
#ifdef VT__SHA_NI
    vt__sha_blocks_ni(h, p, 1);
#else
    vt__sha_block_c(h, p);
#endif
}

VTDEF void vt_sha256_init(vt_sha256_ctx *s) {
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof iv);
    s->len = 0;
    s->nbuf = 0;
}

VTDEF void vt_sha256_update(vt_sha256_ctx *s, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    s->len += n;
    if (s->nbuf) {
        size_t k = VT__MIN(n, 64 - s->nbuf);
        memcpy(s->buf + s->nbuf, p, k);
        s->nbuf += k; p += k; n -= k;
        if (s->nbuf == 64) { vt__sha_block(s->h, s->buf); s->nbuf = 0; }
    }
#ifdef VT__SHA_NI
    if (n >= 64) { vt__sha_blocks_ni(s->h, p, n / 64); p += n & ~(size_t)63; n &= 63; }
#endif
    while (n >= 64) { vt__sha_block(s->h, p); p += 64; n -= 64; }
    if (n) { memcpy(s->buf, p, n); s->nbuf = n; }
}

VTDEF void vt_sha256_final(vt_sha256_ctx *s, unsigned char out[32]) {
    uint64_t bits = s->len * 8;
    unsigned char pad[72];
    size_t npad = (s->nbuf < 56) ? 56 - s->nbuf : 120 - s->nbuf;
    int i;
    memset(pad, 0, sizeof pad);
    pad[0] = 0x80;
    for (i = 0; i < 8; i++) pad[npad + i] = (unsigned char)(bits >> (56 - 8 * i));
    {   /* feed padding without counting it in len */
        uint64_t len = s->len;
        vt_sha256_update(s, pad, npad + 8);
        s->len = len;
    }
    for (i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(s->h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
        out[4 * i + 3] = (unsigned char)s->h[i];
    }
}

VTDEF void vt_sha256(const void *data, size_t n, unsigned char out[32]) {
    vt_sha256_ctx s;
    vt_sha256_init(&s);
    vt_sha256_update(&s, data, n);
    vt_sha256_final(&s, out);
}

/* n more bytes into each of two hashes; two-at-once where both stand at a
   block boundary (the bytes and digests are those of two updates) */
static void vt__sha256_update2(vt_sha256_ctx *a, const void *pa, vt_sha256_ctx *b, const void *pb, size_t n) {
#ifdef VT__SHA_NI
    size_t nb = n / 64;
    if (!a->nbuf && !b->nbuf && nb) {
        vt__sha_blocks_ni2(a->h, (const unsigned char *)pa, b->h, (const unsigned char *)pb, nb);
        a->len += 64 * nb;
        b->len += 64 * nb;
        pa = (const unsigned char *)pa + 64 * nb;
        pb = (const unsigned char *)pb + 64 * nb;
        n -= 64 * nb;
    }
#endif
    vt_sha256_update(a, pa, n);
    vt_sha256_update(b, pb, n);
}

VTDEF void vt_hex(const unsigned char *b, int n, char *out) {
    static const char *d = "0123456789abcdef";
    int i;
    for (i = 0; i < n; i++) { out[2 * i] = d[b[i] >> 4]; out[2 * i + 1] = d[b[i] & 15]; }
    out[2 * n] = 0;
}

/* ==========================================================================
   >>rng  counter-based randomness: Philox4x32-10 (Salmon et al., SC'11)

   A value is a pure function of (seed, stream, index): the same on any
   thread count, machine or backend. Normal samples use the polar method
   with our own logarithm built from IEEE + - * / only, so they are
   bit-identical everywhere (libm's log may differ by an ulp between
   platforms, which would change a binary32 weight now and then).
   ========================================================================== */

static void vt__philox(uint32_t ctr[4], uint32_t key[2]) {
    int r;
    for (r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * ctr[0];
        uint64_t p1 = (uint64_t)0xCD9E8D57u * ctr[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ ctr[1] ^ key[0];
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ ctr[3] ^ key[1];
        ctr[0] = n0; ctr[1] = (uint32_t)p1; ctr[2] = n2; ctr[3] = (uint32_t)p0;
        key[0] += 0x9E3779B9u; key[1] += 0xBB67AE85u;
    }
}

VTDEF uint64_t vt_rng_u64(uint64_t seed, uint64_t stream, uint64_t index) {
    uint32_t ctr[4], key[2];
    ctr[0] = (uint32_t)index; ctr[1] = (uint32_t)(index >> 32);
    ctr[2] = (uint32_t)stream; ctr[3] = (uint32_t)(stream >> 32);
    key[0] = (uint32_t)seed; key[1] = (uint32_t)(seed >> 32);
    vt__philox(ctr, key);
    return ((uint64_t)ctr[1] << 32) | ctr[0];
}

VTDEF double vt_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
    return (double)(vt_rng_u64(seed, stream, index) >> 11) * 0x1p-53;
}

/* ln(x) for x > 0 from + - * / only: x = m 2^k with m in [sqrt(.5), sqrt(2)),
   ln m = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.172; the series to s^41 is
   accurate to a few ulps, and every operation is exactly specified by IEEE,
   so the result is identical on every conforming machine. */
static double vt__det_log(double x) {
    int k;
    double m = frexp(x, &k), s, s2, t, sum;
    int i;
    if (m < 0.70710678118654752440) { m *= 2; k--; }
    s = (m - 1) / (m + 1);
    s2 = s * s;
    t = s;
    sum = 0;
    for (i = 1; i <= 41; i += 2) { sum += t / i; t *= s2; }
    return 2 * sum + k * 0.69314718055994530942;
}

VTDEF double vt_rng_normal(uint64_t seed, uint64_t stream, uint64_t index) {
    /* Marsaglia's polar method; attempt j uses sub-indices (4*index + j) of a
       derived stream; the chance of more than 64 rejections is 0.215^64. */
    uint64_t j;
    for (j = 0; j < 64; j++) {
        uint64_t r = vt_rng_u64(seed, stream ^ 0x6e6f726d616c0000ull, index * 64 + j);
        double u = ((double)(r >> 40) + 0.5) * 0x1p-23 - 1; /* (-1,1), 24 bits each */
        double v = ((double)((r >> 16) & 0xFFFFFF) + 0.5) * 0x1p-23 - 1;
        double s = u * u + v * v;
        if (s < 1 && s > 0) return u * sqrt(-2 * vt__det_log(s) / s);
    }
    return 0;
}

/* A bijection of [0,n) keyed by (seed, stream): a 4-round Feistel network on
   the smallest power-of-4 domain >= n, with cycle walking. */
VTDEF uint64_t vt_shuffle(uint64_t seed, uint64_t stream, uint64_t i, uint64_t n) {
    int half = 1, r;
    uint64_t mask, x = i;
    if (n <= 1) return 0;
    while (((uint64_t)1 << (2 * half)) < n) half++;
    mask = ((uint64_t)1 << half) - 1;
    do {
        uint64_t L = x >> half, R = x & mask;
        for (r = 0; r < 4; r++) {
            uint64_t F = vt_rng_u64(seed, stream, ((uint64_t)r << 58) ^ R) & mask;
            uint64_t t = R;
            R = L ^ F;
            L = t;
        }
        x = (L << half) | R;
    } while (x >= n);
    return x;
}

/* ==========================================================================
   >>threads  a fixed pool; jobs are cut into chunks that idle threads claim

   A job over [0, ntask) is cut into nchunk contiguous chunks, a pure function
   of (ntask, nchunk). Thread t of n (the caller is 0) owns the chunks
   [nchunk t / n, nchunk (t + 1) / n) and claims them front to back; a
   thread whose own are gone takes the others' from their back ends. So in
   a quiet machine every job over the same rows gives each thread the same
   rows (a product's rows, then their rounding check, stay in one core's
   cache: 8% of a width-64 step went to moving them between cores), while a
   thread that lost its core to another process simply claims fewer (the
   job waits at most for the chunk it holds), and a thread that wakes after
   the job is over claims nothing; where that wait keeps coming back (A
   CROWDED MACHINE, vt__parallel) the jobs run on the caller alone for a
   while. Which thread ran which chunk is therefore
   not fixed, and nothing may depend on it: a result is a function of the chunk, never of the
   thread. Every reduction stays inside one task or combines per-task (or
   per-chunk) partials in task order; per-thread buffers are only scratch,
   or (the rounding point's entries, the first NaN) lists and minima that
   are ordered by index afterwards: a thread's chunks do not come in index
   order (its own, then others' from their back ends). tid, the
   thread's number, picks scratch memory and nothing else.
   ========================================================================== */

typedef void (*vt__task_fn)(void *arg, int64_t lo, int64_t hi, int tid);

/* chunks per thread: enough that a thread running at half speed (a shared
   core) leaves little tail, few enough that claiming costs nothing */
#define VT__CHUNKS_PER_THREAD 8

typedef struct vt__pool {
    int n; /* threads including the caller */
#ifndef VTRAIN_NO_THREADS
    pthread_t *th;
    pthread_mutex_t mu;
    pthread_cond_t cv_go, cv_done;
    int64_t gen;        /* the job's number, published after the job */
    uint64_t *claim;    /* per thread, a cache line apart: (gen mod 2^32) << 32 | front << 16 | back,
                           its unclaimed chunks [front, back) */
    void *claim_mem;
    int64_t done;       /* chunks finished */
    int quit;
    int sleepers;
    vt__task_fn fn;
    void *arg;
    int64_t ntask, nchunk;
    double solo_until;  /* A CROWDED MACHINE (vt__parallel): jobs run on the caller alone until then */
    double solo_len;    /* the last such spell's length (0: none lately) */
    double par_since;   /* when the pool last came back from one */
    int64_t njob;       /* jobs run on the pool (every VT__SAMPLE_EVERY-th is timed in CPU time too) */
    double s_wall, s_cpu, s_sleep; /* the timed jobs' wall time, the caller's CPU time and sleep in them */
#endif
} vt__pool;

static VT__UNUSED void vt__range(int64_t n, int parts, int i, int64_t *lo, int64_t *hi) {
    *lo = n * i / parts;
    *hi = n * (i + 1) / parts;
}

/* Workers spin for a short while on the job counter before they sleep on the
   condition variable: a training step launches hundreds of short jobs, and
   a futex round trip for each cost a tenth of a small model's step. Without
   GCC's atomics (another compiler) the same protocol runs under the mutex.
   Every VT__YIELD_EVERY pauses a spinning thread (a worker waiting for a
   job, the caller for a worker's chunk) yields its core: where another
   process takes one of two cores, the thread it spins for may be the one
   waiting for a core (bench/load.sh on a Zen 3, the 2-thread step over the
   1-thread one: median 1.025 of twelve runs, three of them 1.09-1.17,
   before; 1.015 of fourteen, none above 1.08, after; unloaded, no change
   within the noise). */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(VTRAIN_NO_THREADS)
#define VT__LOAD(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define VT__STORE(p, v) __atomic_store_n(p, v, __ATOMIC_RELEASE)
#define VT__ADD(p, v) __atomic_add_fetch(p, v, __ATOMIC_ACQ_REL)
#define VT__CAS(p, expect, v) __atomic_compare_exchange_n(p, expect, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#define VT__SPIN 4000
#define VT__YIELD_EVERY 256 /* (a power of two) */
#if defined(__x86_64__) || defined(__i386__)
#define VT__PAUSE() __builtin_ia32_pause()
#else
#define VT__PAUSE() ((void)0)
#endif
#else
#define VT__SPIN 0
#endif

typedef struct { vt__pool *p; int tid; } vt__worker_arg;
#ifndef VTRAIN_NO_THREADS

/* tests: vt__pool_race_us makes a worker sleep between loading the claim
   word and reading nchunk (each try), and the caller sleep 20 times as
   long between publishing a job's nchunk and opening its claim word: the
   window in which a worker leaving the last job could claim a chunk of the
   next one (test_core's pool_stale_claim_refused). */
static int vt__pool_race_us;
/* tests: workers pause for a chunk-dependent 0..3 x this many microseconds
   before each chunk, as threads that lose their core would; the caller then
   claims chunks out of turn (vt__pool_lent counts them), and the results
   must not change. */
static int vt__pool_stall_us;

static void vt__sleep_us(long us) {
#if VT__SPIN
    struct timespec ts;
    ts.tv_sec = us / 1000000;
    ts.tv_nsec = 1000L * (us % 1000000);
    nanosleep(&ts, NULL);
#else
    (void)us;
#endif
}

/* claim a chunk of job g from thread t's range (the front when t is the
   claimer, tid, else the back): its index, or -1 when that range has none
   left or job g is over. The tag makes a word from an earlier job fail the
   compare-and-swap; a successful claim means job g is not finished, so fn,
   arg and the counts read after it are job g's. */
#define VT__CLAIM_STRIDE 8 /* uint64s: one cache line per thread's word */
static int64_t vt__claim_from(vt__pool *p, int64_t g, int t, int tid) {
    uint64_t tag = (uint64_t)g << 32, *w = p->claim + (size_t)t * VT__CLAIM_STRIDE;
#if VT__SPIN
    uint64_t c = VT__LOAD(w);
    for (;;) {
        uint64_t front = (c >> 16) & 0xffffu, back = c & 0xffffu;
        if (vt__pool_race_us && tid != 0) vt__sleep_us(vt__pool_race_us);
        if ((c & ~(uint64_t)0xffffffffu) != tag || front >= back) return -1;
        if (t == tid ? VT__CAS(w, &c, c + 0x10000u) : VT__CAS(w, &c, c - 1)) return (int64_t)(t == tid ? front : back - 1);
    }
#else
    int64_t i = -1;
    pthread_mutex_lock(&p->mu);
    if ((*w & ~(uint64_t)0xffffffffu) == tag && ((*w >> 16) & 0xffffu) < (*w & 0xffffu)) {
        i = t == tid ? (int64_t)((*w >> 16) & 0xffffu) : (int64_t)(*w & 0xffffu) - 1;
        *w = t == tid ? *w + 0x10000u : *w - 1;
    }
    pthread_mutex_unlock(&p->mu);
    return i;
#endif
}

static VT__UNUSED int64_t vt__pool_lent; /* tests: chunks run by a thread that does not own them */

/* the next chunk of job g for thread tid: its own first, then the others' */
static int64_t vt__claim(vt__pool *p, int64_t g, int tid) {
    int64_t i = vt__claim_from(p, g, tid, tid);
    int k;
    for (k = 1; i < 0 && k < p->n; k++)
        if ((i = vt__claim_from(p, g, (tid + k) % p->n, tid)) >= 0) {
#if VT__SPIN
            if (vt__pool_stall_us) VT__ADD(&vt__pool_lent, 1);
#endif
        }
    return i;
}


/* run chunks of job g until none is left; wake the caller after the last */
static void vt__run_chunks(vt__pool *p, int64_t g, int tid) {
    int64_t i, lo, hi, left, nchunk;
    while ((i = vt__claim(p, g, tid)) >= 0) {
        nchunk = p->nchunk; /* job g's, read before this chunk counts as done (the caller may then publish the next) */
        vt__range(p->ntask, (int)nchunk, (int)i, &lo, &hi);
#if VT__SPIN
        if (vt__pool_stall_us && tid != 0) {
            struct timespec ts;
            ts.tv_sec = 0;
            ts.tv_nsec = 1000L * vt__pool_stall_us * (long)((((uint64_t)g * 131 + (uint64_t)i) * 2654435761u >> 13) % 4);
            nanosleep(&ts, NULL);
        }
#endif
        if (hi > lo) p->fn(p->arg, lo, hi, tid);
#if VT__SPIN
        left = nchunk - VT__ADD(&p->done, 1);
        if (left == 0 && tid != 0) { /* the caller may be asleep */
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->cv_done);
            pthread_mutex_unlock(&p->mu);
        }
#else
        pthread_mutex_lock(&p->mu);
        left = p->nchunk - ++p->done;
        if (left == 0) pthread_cond_signal(&p->cv_done);
        pthread_mutex_unlock(&p->mu);
#endif
    }
}

#if VT__SPIN
/* one step of a spin wait, the spins-th: a pause, and every VT__YIELD_EVERY-th a yield of the core */
static void vt__spin(int spins) {
    VT__PAUSE();
    if ((spins & (VT__YIELD_EVERY - 1)) == 0) sched_yield();
}
#endif

static void *vt__worker(void *a) {
    vt__worker_arg *wa = (vt__worker_arg *)a;
    vt__pool *p = wa->p;
    int64_t seen = 0;
    for (;;) {
#if VT__SPIN
        int spins = 0;
        while (VT__LOAD(&p->gen) == seen && !VT__LOAD(&p->quit) && spins < VT__SPIN) vt__spin(++spins);
        if (VT__LOAD(&p->gen) == seen && !VT__LOAD(&p->quit)) {
            pthread_mutex_lock(&p->mu);
            p->sleepers++;
            while (VT__LOAD(&p->gen) == seen && !p->quit) pthread_cond_wait(&p->cv_go, &p->mu);
            p->sleepers--;
            pthread_mutex_unlock(&p->mu);
        }
        if (VT__LOAD(&p->quit)) break;
        seen = VT__LOAD(&p->gen);
#else
        pthread_mutex_lock(&p->mu);
        while (p->gen == seen && !p->quit) pthread_cond_wait(&p->cv_go, &p->mu);
        if (p->quit) { pthread_mutex_unlock(&p->mu); break; }
        seen = p->gen;
        pthread_mutex_unlock(&p->mu);
#endif
        vt__run_chunks(p, seen & 0xffffffff, wa->tid);
    }
    return NULL;
}
#endif

static int vt__ncpu(void) {
#ifndef VTRAIN_NO_THREADS
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)VT__MIN(n, 64) : 1;
#else
    return 1;
#endif
}

static vt__worker_arg *vt__pool_start(vt__pool *p, int n, void *u) {
    vt__worker_arg *wa = NULL;
    (void)u;
    p->n = n < 1 ? 1 : n;
#ifndef VTRAIN_NO_THREADS
    {
        int i;
        p->gen = 0; p->done = 0; p->nchunk = 0; p->quit = 0; p->sleepers = 0;
        p->solo_until = 0; p->solo_len = 0; p->par_since = 0;
        p->njob = 0; p->s_wall = p->s_cpu = p->s_sleep = 0;
        pthread_mutex_init(&p->mu, NULL);
        pthread_cond_init(&p->cv_go, NULL);
        pthread_cond_init(&p->cv_done, NULL);
        p->claim_mem = VT_MALLOC(sizeof(uint64_t) * VT__CLAIM_STRIDE * (size_t)(p->n + 1), u);
        p->th = (pthread_t *)VT_MALLOC(sizeof(pthread_t) * p->n, u);
        wa = (vt__worker_arg *)VT_MALLOC(sizeof(vt__worker_arg) * p->n, u);
        p->claim = NULL;
        if (!p->claim_mem || !p->th || !wa) p->n = 1; /* out of memory: the caller alone (vt__parallel runs inline) */
        else {
            p->claim = (uint64_t *)p->claim_mem +
                       (VT__CLAIM_STRIDE - ((uintptr_t)p->claim_mem / sizeof(uint64_t)) % VT__CLAIM_STRIDE) % VT__CLAIM_STRIDE;
            memset(p->claim, 0, sizeof(uint64_t) * VT__CLAIM_STRIDE * (size_t)p->n);
        }
        for (i = 1; i < p->n; i++) {
            wa[i].p = p; wa[i].tid = i;
            if (pthread_create(&p->th[i], NULL, vt__worker, &wa[i]) != 0) { p->n = i; break; } /* the threads there are */
        }
    }
#else
    p->n = 1;
#endif
    return wa;
}

static void vt__pool_stop(vt__pool *p, vt__worker_arg *wa, void *u) {
    (void)p; (void)wa; (void)u;
#ifndef VTRAIN_NO_THREADS
    {
        int i;
        pthread_mutex_lock(&p->mu);
#if VT__SPIN
        VT__STORE(&p->quit, 1);
#else
        p->quit = 1;
#endif
        pthread_cond_broadcast(&p->cv_go);
        pthread_mutex_unlock(&p->mu);
        for (i = 1; i < p->n; i++) pthread_join(p->th[i], NULL);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv_go);
        pthread_cond_destroy(&p->cv_done);
        VT_FREE(p->th, u);
        VT_FREE(p->claim_mem, u);
        VT_FREE(wa, u);
    }
#endif
}

static double vt__now(void);
static VT__UNUSED int vt__pool_solo_on;     /* tests: judge stalls even while vt__pool_stall_us is set */
static VT__UNUSED int64_t vt__pool_solo;    /* tests: jobs a crowded machine ran on the caller alone */

/* A CROWDED MACHINE. With another process on one of two cores, three
   threads share two: whichever of the pool's is off its core holds up the
   job (the caller waits for a chunk a worker holds, or the worker for the
   caller, who publishes the next job), and every job is such a chance: a
   2-thread step ran 1.01-1.34x the time of a 1-thread one (bench/load.sh,
   a Zen 3). Two signs of it: a wait for the chunks the caller could not take longer
   than VT__STALL_S and four times the caller's own share of the job (a
   worker off its core: an unequal last chunk on a quiet machine waits
   less than that share), and the caller itself off its core for more than
   VT__OFF_FRAC of the time inside jobs (one job in VT__SAMPLE_EVERY is
   timed in the thread's CPU time as well, a system call of about a
   microsecond, and every job from a spell until a second passes without
   a sign; judged over VT__SAMPLE_S of such jobs). Then the jobs of
   the next spell run on the caller alone, one thread fewer wanting a core:
   4 ms, or twice the last spell (up to 256 ms) when the sign came within
   four spells' time of the pool's return (the other process is still
   there); then the pool is tried again, unless the OS says the machine is
   still crowded (vt__os_crowded: the next spell follows at once). Which
   thread runs a chunk never changes a value (>>threads), so neither does
   this. */
#define VT__STALL_S 1e-3
#define VT__OFF_FRAC 0.15
#define VT__SAMPLE_EVERY 32
#define VT__SAMPLE_S 2e-3
static VT__UNUSED double vt__thread_cpu(void) { /* the calling thread's CPU time in seconds, or -1 */
#if defined(CLOCK_THREAD_CPUTIME_ID) && !defined(VTRAIN_NO_THREADS)
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#endif
    return -1;
}
/* At a spell's end, where the OS tells (Linux's /proc/loadavg: the threads
   running or waiting for a processor now, the caller among them, the
   pool's workers asleep through the spell), is the machine still crowded:
   the others and the pool's n threads more than the processors online?
   Trying the pool to find out cost a stalled job or two a spell (a 2-thread
   step under load 2-5% slower than a 1-thread one, on a 2-core Xeon); the
   answer is one read of a small file a spell of 4 ms or more. 0 where the
   OS does not tell, as before. */
static VT__UNUSED int vt__pool_os = -1; /* tests: -1 ask the OS, 0 never crowded, 1 always */
/* the running count of a /proc/loadavg line ("1.00 0.50 0.25 3/180 4321":
   3), or -1 where it is not one */
static VT__UNUSED long vt__loadavg_running(const char *b) {
    const char *q = b;
    char *e;
    long run;
    int i;
    for (i = 0; i < 3; i++) {
        while (*q == ' ') q++;
        while (*q && *q != ' ') q++;
        if (*q != ' ') return -1;
    }
    while (*q == ' ') q++;
    if (*q < '0' || *q > '9') return -1;
    run = strtol(q, &e, 10);
    return *e == '/' ? run : -1;
}
static VT__UNUSED int vt__os_crowded(int n) {
    if (vt__pool_os >= 0) return vt__pool_os;
#if defined(__linux__) && !defined(VTRAIN_NO_THREADS)
    {
        char b[128];
        long run;
        int fd = open("/proc/loadavg", O_RDONLY);
        ssize_t got = fd >= 0 ? read(fd, b, sizeof b - 1) : -1;
        if (fd >= 0) close(fd);
        if (got <= 0) return 0;
        b[got] = 0;
        run = vt__loadavg_running(b);
        return run > 0 && run - 1 + n > vt__ncpu();
    }
#else
    (void)n;
    return 0;
#endif
}
static VT__UNUSED void vt__pool_spell(vt__pool *p, double now) {
#if !defined(VTRAIN_NO_THREADS) && VT__SPIN
    if ((vt__pool_stall_us || vt__pool_race_us) && !vt__pool_solo_on) return; /* (tests that want lent chunks) */
    if (p->solo_len == 0 || now - p->par_since > 4 * p->solo_len) p->solo_len = 0.004; /* (an isolated sign) */
    else p->solo_len = VT__MIN(2 * p->solo_len, 0.256);
    p->solo_until = now + p->solo_len;
    p->s_wall = p->s_cpu = p->s_sleep = 0;
#else
    (void)p; (void)now;
#endif
}

/* Run fn over [0, ntask) in chunks that the pool's threads claim; small jobs
   (work below ~32k element-operations) run on the caller alone, as do all
   jobs during a spell of A CROWDED MACHINE. */
static void vt__parallel(vt__pool *p, int64_t ntask, int64_t work, vt__task_fn fn, void *arg) {
#ifndef VTRAIN_NO_THREADS
    int pooled = p->n > 1 && ntask > 1 && work >= 32768;
#endif
    if (ntask <= 0) return;
#ifndef VTRAIN_NO_THREADS
    if (pooled && p->solo_until > 0) { /* in a spell, or just past one */
        double now = vt__now();
        if (now >= p->solo_until) {
            p->solo_until = 0;
            p->par_since = now;
            if (vt__os_crowded(p->n)) vt__pool_spell(p, now); /* the OS's word a sign at the pool's return: the next
                                                                 spell at once, twice as long */
        }
    }
    if (pooled && p->solo_until == 0) {
        int64_t g = (p->gen + 1) & 0xffffffff, nchunk = VT__MIN(ntask, (int64_t)VT__CHUNKS_PER_THREAD * p->n);
#if VT__SPIN
        int spins = 0, t, timed = ++p->njob % VT__SAMPLE_EVERY == 0 || p->solo_len > 0; /* (every job while on probation) */
        double t0 = vt__now(), t1, t2, c0 = timed ? vt__thread_cpu() : -1, slept = 0;
        /* every chunk of the last job has been claimed and has finished, so
           no claim word is open; a worker that loaded one (then exhausted)
           fails its compare-and-swap once the word changes. fn, arg and the
           counts are written before any word opens (release), and a claim
           reads them after its swap (acquire). */
        p->fn = fn; p->arg = arg; p->ntask = ntask;
        VT__STORE(&p->nchunk, nchunk);
        VT__STORE(&p->done, 0);
        if (vt__pool_race_us) vt__sleep_us(20L * vt__pool_race_us);
        for (t = 0; t < p->n; t++)
            VT__STORE(p->claim + (size_t)t * VT__CLAIM_STRIDE,
                      ((uint64_t)g << 32) | (uint64_t)(nchunk * t / p->n) << 16 | (uint64_t)(nchunk * (t + 1) / p->n));
        pthread_mutex_lock(&p->mu);
        VT__STORE(&p->gen, g);
        if (p->sleepers) pthread_cond_broadcast(&p->cv_go);
        pthread_mutex_unlock(&p->mu);
        vt__run_chunks(p, g, 0);
        t1 = vt__now();
        while (VT__LOAD(&p->done) < nchunk && ++spins < VT__SPIN) vt__spin(spins);
        if (VT__LOAD(&p->done) < nchunk) { /* a worker lost its core mid-chunk: sleep instead of spinning */
            double ts = vt__now();
            pthread_mutex_lock(&p->mu);
            while (VT__LOAD(&p->done) < nchunk) pthread_cond_wait(&p->cv_done, &p->mu);
            pthread_mutex_unlock(&p->mu);
            slept = vt__now() - ts;
        }
        t2 = spins >= 64 || c0 >= 0 ? vt__now() : t1; /* (a wait for a worker, or a timed job) */
        if (spins >= 64 && t2 - t1 > VT__STALL_S && t2 - t1 > 4 * (t1 - t0)) { /* a worker off its core */
            vt__pool_spell(p, t2);
            c0 = -1;
        }
        if (c0 >= 0) { /* a timed job: the caller off its core inside jobs? */
            double c1 = vt__thread_cpu();
            if (c1 >= 0) {
                p->s_wall += t2 - t0; p->s_cpu += c1 - c0; p->s_sleep += slept;
                if (p->s_wall >= VT__SAMPLE_S) {
                    if (p->s_wall - p->s_sleep - p->s_cpu > VT__OFF_FRAC * p->s_wall) vt__pool_spell(p, t2);
                    else if (p->solo_len > 0 && t2 - p->par_since > 1.0) p->solo_len = 0; /* quiet for a second */
                    p->s_wall = p->s_cpu = p->s_sleep = 0;
                }
            }
        }
#else
        int t;
        pthread_mutex_lock(&p->mu);
        p->fn = fn; p->arg = arg; p->ntask = ntask; p->nchunk = nchunk; p->done = 0;
        for (t = 0; t < p->n; t++)
            p->claim[(size_t)t * VT__CLAIM_STRIDE] = ((uint64_t)g << 32) | (uint64_t)(nchunk * t / p->n) << 16 | (uint64_t)(nchunk * (t + 1) / p->n);
        p->gen = g;
        pthread_cond_broadcast(&p->cv_go);
        pthread_mutex_unlock(&p->mu);
        vt__run_chunks(p, g, 0);
        pthread_mutex_lock(&p->mu);
        while (p->done < nchunk) pthread_cond_wait(&p->cv_done, &p->mu);
        pthread_mutex_unlock(&p->mu);
#endif
        return;
    }
#if VT__SPIN
    if (pooled) VT__ADD(&vt__pool_solo, 1); /* (a spell's) */
#endif
#endif
    (void)work;
    (void)p;
    fn(arg, 0, ntask, 0);
}

static double vt__now(void) {
#if defined(CLOCK_MONOTONIC)
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#else
    return (double)clock() / CLOCKS_PER_SEC;
#endif
}

/* ==========================================================================
   >>memory  arenas

   Per-step memory (activations, their gradients, tensor headers, bound
   scratch) comes from an arena that vt_step_begin rewinds: a long run reuses
   the same blocks and neither leaks nor fragments. Blocks are kept between
   steps; a step that needs more adds a block once.
   ========================================================================== */

typedef struct vt__block { struct vt__block *next; size_t size, used; } vt__block;
typedef struct vt__arena { vt__block *head, *cur; void *user; size_t peak, total; } vt__arena;

static void *vt__arena_alloc(vt__arena *a, size_t n) {
    vt__block *b = a->cur;
    n = (n + 63) & ~(size_t)63;
    while (b && b->used + n > b->size) b = b->next;
    if (!b) {
        size_t sz = VT__MAX(n, (size_t)16 << 20);
        b = (vt__block *)VT_MALLOC(sizeof(vt__block) + 64 + sz, a->user);
        if (!b) return NULL;
        b->size = sz; b->used = 0; b->next = NULL;
        if (!a->head) a->head = b;
        else { vt__block *t = a->head; while (t->next) t = t->next; t->next = b; }
        a->total += sz;
    }
    a->cur = b;
    {
        uintptr_t base = ((uintptr_t)(b + 1) + 63) & ~(uintptr_t)63;
        void *p = (void *)(base + b->used);
        b->used += n;
        return p;
    }
}

static void vt__arena_reset(vt__arena *a) {
    vt__block *b;
    size_t used = 0;
    for (b = a->head; b; b = b->next) { used += b->used; b->used = 0; }
    if (used > a->peak) a->peak = used;
    a->cur = a->head;
}

/* a place in the arena, and back to it: what was made after it is gone */
typedef struct vt__amark { vt__block *b; size_t used; } vt__amark;
static void vt__arena_mark(const vt__arena *a, vt__amark *m) { m->b = a->cur; m->used = a->cur ? a->cur->used : 0; }
static void vt__arena_rewind(vt__arena *a, const vt__amark *m) {
    vt__block *b;
    size_t used = 0;
    for (b = a->head; b; b = b->next) used += b->used;
    if (used > a->peak) a->peak = used;
    if (!m->b) { vt__arena_reset(a); return; }
    for (b = m->b->next; b; b = b->next) b->used = 0;
    m->b->used = m->used;
    a->cur = m->b;
}

static void vt__arena_free(vt__arena *a) {
    vt__block *b = a->head;
    while (b) { vt__block *n = b->next; VT_FREE(b, a->user); b = n; }
    a->head = a->cur = NULL;
}

/* ==========================================================================
   >>order  the reduction-order knob and the reduction primitives

   Every order-sensitive sum in the CPU backend goes through vt__rsum /
   vt__rdot / vt__gemm, which read the order from a vt__ord:

     default   blocks of `block` terms (256), four interleaved lanes inside a
               block, lanes combined pairwise, blocks summed left to right;
               fma where the hardware has it.
     block:N   the same with blocks of N terms (and GEMM k-blocks of N).
     threads:N long reductions that the backend splits across threads (split-K
               weight gradients in native mode, the gradient norm) are split
               into N parts, so N changes the order as it would on a GPU.
     chaos:S   per call and row, from (S, call, row): a random lane count,
               block size, starting rotation and direction, fma on or off;
               GEMM k-blocks re-sized and permuted; transcendental results
               perturbed by up to 3 binary64 ulps (another libm). This is how
               the suite emulates other hardware on one CPU.

   In VT_MODE_NATIVE every accumulation is rounded to binary32 after each
   addition, as a plain binary32 library would do, and GEMM runs binary32
   micro-kernels on operands converted while packing; tensors still store
   doubles (ON STORAGE) and elementwise ops compute in binary64 and cast, so
   native is a binary32-arithmetic baseline, not a binary32-storage one.
   ========================================================================== */

typedef struct vt__ord {
    int threads;
    int block;
    int chaos;
    uint64_t seed;
    uint64_t call;   /* distinct per kernel invocation (chaos key) */
    int fma;         /* default order uses fma */
    int f32;         /* native: accumulate in binary32 */
    int bounds;      /* compute error bounds */
    vt_bound_mode bmode;
    double lambda;
} vt__ord;

#define VT__U 0x1p-53            /* unit roundoff of binary64 */
#define VT__ELIB (8 * VT__U)     /* assumed libm error: 4 ulps = at most 8u relative */

static double vt__f32r(double v) { return (double)(float)v; }
#define VT__ACC(o, v) ((o)->f32 ? vt__f32r(v) : (v))

static uint64_t vt__mix(uint64_t x) {
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27; x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}
static uint64_t vt__ckey(const vt__ord *o, uint64_t row) {
    return vt__mix(o->seed ^ vt__mix(o->call * 0x9E3779B97F4A7C15ull + row));
}

/* gamma(n) = n u / (1 - n u): the worst-case relative error factor of any
   summation of n terms (Higham, Accuracy and Stability, Lemma 3.1). The
   probabilistic mode uses Higham & Mary (2019): lambda sqrt(n) u, valid with
   probability at least 1 - 2n exp(-lambda^2/2) per sum. */
static double vt__gam(int64_t n) {
    double t = (double)n * VT__U;
    return t / (1 - t);
}
static double vt__g(const vt__ord *o, int64_t n) {
    double s = vt__gam(n);
    if (o->bmode == VT_BOUND_PROBABILISTIC) {
        double p = o->lambda * sqrt((double)n) * VT__U;
        p = p * (1 + p) + 2 * (double)n * VT__U * VT__U;
        if (p < s) return p;
    }
    return s;
}

/* EXACTNESS. A product of two binary32 values is exact in binary64 (48
   bits), and a sum of terms that are all multiples of 2^L is exact in ANY
   order, with or without fma, as long as the sum of their magnitudes stays
   below 2^(L+53): every partial sum is then a representable multiple of 2^L.
   Inputs with few significant bits (pixel values k/16, one-hot rows, exact
   zeros, values that differ by one binade) make such sums common, and their
   results often sit exactly on a binary32 midpoint: a bound of gamma(n) S
   would log every one of them. vt__sum_bound returns 0 for them instead. */
#define VT__LSB_NONE 100000
/* frexp's exponent (x = f 2^e, 1/2 <= |f| < 1) of a finite nonzero x, and
   2^k, from the bits: the bound passes call them per line and per column,
   where a libm call costs more than the rest of the work */
static int vt__fexp(double x) {
    uint64_t b;
    int ex, e;
    memcpy(&b, &x, 8);
    ex = (int)((b >> 52) & 0x7ff);
    if (ex) return ex - 1022;
    frexp(x, &e); /* subnormal */
    return e;
}
static double vt__pow2(int k) {
    uint64_t b;
    double r;
    if (k > 1023) return INFINITY;
    if (k < -1022) return ldexp(1.0, k);
    b = (uint64_t)(k + 1023) << 52;
    memcpy(&r, &b, 8);
    return r;
}
static int vt__lsb(double x) {
    uint64_t b, m;
    int ex, z = 0;
    if (x == 0 || !isfinite(x)) return VT__LSB_NONE;
    memcpy(&b, &x, 8);
    ex = (int)((b >> 52) & 0x7ff);
    m = b & (((uint64_t)1 << 52) - 1);
    if (ex) m |= (uint64_t)1 << 52;
    else ex = 1;
#if defined(__GNUC__) || defined(__clang__)
    z = __builtin_ctzll(m);
#else
    while (!(m & 1)) { m >>= 1; z++; }
#endif
    return ex - 1075 + z;
}
/* A sum of n terms that are exact binary64 values (binary32 values, or
   products of two of them) takes n - 1 roundings in any order, with or
   without fma: gamma(n - 1) sum|terms|. With n <= 2 there is at most one
   rounding, of the same exact operands on every machine: the result is the
   same everywhere, bound 0. */
static double vt__gsum(const vt__ord *o, int64_t n) { return n <= 2 ? 0.0 : vt__g(o, n - 1); }

/* the bound of a sum of n exact terms whose magnitudes add to mag and whose
   lowest set bits are at least L: 0 when exact in any order, else gsum */
static double vt__sum_bound(const vt__ord *o, int64_t n, double mag, int L) {
    if (L >= VT__LSB_NONE / 2 || mag * (1 + 0x1p-40) < vt__pow2(VT__MIN(L + 53, 1100))) return 0;
    return vt__gsum(o, n) * mag;
}

/* Sum of n terms x[i*s]. */
static double vt__rsum(const vt__ord *o, uint64_t row, const double *x, int64_t s, int64_t n) {
    if (n <= 0) return 0;
    if (o->chaos) {
        uint64_t h = vt__ckey(o, row);
        int lanes = 1 + (int)(h % 6);
        int64_t rot = (int64_t)((h >> 8) % (uint64_t)n);
        int rev = (int)((h >> 40) & 1);
        double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, t;
        int64_t i, j = rot;
        int l, lane = 0;
        for (i = 0; i < n; i++) {
            int64_t q = rev ? n - 1 - j : j;
            acc[lane] = VT__ACC(o, acc[lane] + x[q * s]);
            if (++j == n) j = 0;
            if (++lane == lanes) lane = 0;
        }
        t = acc[lanes - 1];
        for (l = lanes - 2; l >= 0; l--) t = VT__ACC(o, acc[l] + t);
        return t;
    } else {
        int64_t blk = o->block, b0, i;
        double tot = 0;
        for (b0 = 0; b0 < n; b0 += blk) {
            int64_t b1 = VT__MIN(n, b0 + blk);
            double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            i = b0;
#ifdef VT__AVX2
            if (s == 1) { /* the four lanes below in one register: lane l adds x[i + l], cast as VT__ACC casts */
                __m256d a = _mm256_setzero_pd();
                double l4[4];
                if (o->f32)
                    for (; i + 4 <= b1; i += 4) a = _mm256_cvtps_pd(_mm256_cvtpd_ps(_mm256_add_pd(a, _mm256_loadu_pd(x + i))));
                else
                    for (; i + 4 <= b1; i += 4) a = _mm256_add_pd(a, _mm256_loadu_pd(x + i));
                _mm256_storeu_pd(l4, a);
                a0 = l4[0]; a1 = l4[1]; a2 = l4[2]; a3 = l4[3];
            }
#endif
            for (; i + 4 <= b1; i += 4) {
                a0 = VT__ACC(o, a0 + x[i * s]);
                a1 = VT__ACC(o, a1 + x[(i + 1) * s]);
                a2 = VT__ACC(o, a2 + x[(i + 2) * s]);
                a3 = VT__ACC(o, a3 + x[(i + 3) * s]);
            }
            for (; i < b1; i++) a0 = VT__ACC(o, a0 + x[i * s]);
            tot = VT__ACC(o, tot + VT__ACC(o, VT__ACC(o, a0 + a1) + VT__ACC(o, a2 + a3)));
        }
        return tot;
    }
}

#ifdef VT__AVX2
/* vt__rsum of four adjacent columns at once (x[i s + q], q < 4), for a
   binary32-accumulating order without chaos: vector lane q runs column q's
   scalar sum, the same additions and casts in the same order (native mode's
   column sums walked each column alone, 14% of its step at context 256) */
static void vt__rsum4_f32(const vt__ord *o, const double *x, int64_t s, int64_t n, double *out) {
#define VT__R32(v) _mm256_cvtps_pd(_mm256_cvtpd_ps(v))
    int64_t blk = o->block, b0, i;
    __m256d tot = _mm256_setzero_pd();
    for (b0 = 0; b0 < n; b0 += blk) {
        int64_t b1 = VT__MIN(n, b0 + blk);
        __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
        for (i = b0; i + 4 <= b1; i += 4) {
            a0 = VT__R32(_mm256_add_pd(a0, _mm256_loadu_pd(x + i * s)));
            a1 = VT__R32(_mm256_add_pd(a1, _mm256_loadu_pd(x + (i + 1) * s)));
            a2 = VT__R32(_mm256_add_pd(a2, _mm256_loadu_pd(x + (i + 2) * s)));
            a3 = VT__R32(_mm256_add_pd(a3, _mm256_loadu_pd(x + (i + 3) * s)));
        }
        for (; i < b1; i++) a0 = VT__R32(_mm256_add_pd(a0, _mm256_loadu_pd(x + i * s)));
        tot = VT__R32(_mm256_add_pd(tot, VT__R32(_mm256_add_pd(VT__R32(_mm256_add_pd(a0, a1)), VT__R32(_mm256_add_pd(a2, a3))))));
    }
    _mm256_storeu_pd(out, tot);
#undef VT__R32
}
#endif

/* Dot product of a[i*sa] and b[i*sb]; also returns sum |a_i b_i| in *abs
   (for the bound) when abs is not NULL. */
static double vt__rdot(const vt__ord *o, uint64_t row, const double *a, int64_t sa, const double *b,
                       int64_t sb, int64_t n, double *abs) {
    int64_t i;
    if (abs) {
        double t = 0;
        for (i = 0; i < n; i++) t += fabs(a[i * sa] * b[i * sb]);
        *abs = t;
    }
    if (n <= 0) return 0;
    if (o->chaos || o->f32) {
        uint64_t h = o->chaos ? vt__ckey(o, row) : 0;
        int lanes = o->chaos ? 1 + (int)(h % 6) : 4;
        int64_t rot = o->chaos ? (int64_t)((h >> 8) % (uint64_t)n) : 0;
        int rev = (int)((h >> 40) & 1), usefma = o->chaos ? (int)((h >> 41) & 1) : o->fma;
        double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, t;
        int64_t j = rot;
        int l, lane = 0;
        for (i = 0; i < n; i++) {
            int64_t q = rev ? n - 1 - j : j;
            if (usefma) acc[lane] = VT__ACC(o, fma(a[q * sa], b[q * sb], acc[lane]));
            else acc[lane] = VT__ACC(o, acc[lane] + VT__ACC(o, a[q * sa] * b[q * sb]));
            if (++j == n) j = 0;
            if (++lane == lanes) lane = 0;
        }
        t = acc[lanes - 1];
        for (l = lanes - 2; l >= 0; l--) t = VT__ACC(o, acc[l] + t);
        return t;
    } else {
        double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        for (i = 0; i + 4 <= n; i += 4) {
            if (o->fma) {
                a0 = fma(a[i * sa], b[i * sb], a0);
                a1 = fma(a[(i + 1) * sa], b[(i + 1) * sb], a1);
                a2 = fma(a[(i + 2) * sa], b[(i + 2) * sb], a2);
                a3 = fma(a[(i + 3) * sa], b[(i + 3) * sb], a3);
            } else {
                a0 += a[i * sa] * b[i * sb];
                a1 += a[(i + 1) * sa] * b[(i + 1) * sb];
                a2 += a[(i + 2) * sa] * b[(i + 2) * sb];
                a3 += a[(i + 3) * sa] * b[(i + 3) * sb];
            }
        }
        for (; i < n; i++) a0 = o->fma ? fma(a[i * sa], b[i * sb], a0) : a0 + a[i * sa] * b[i * sb];
        return (a0 + a1) + (a2 + a3);
    }
}

/* ==========================================================================
   >>context
   ========================================================================== */

typedef struct vt__buf { unsigned char *p; size_t n, cap; } vt__buf;

typedef struct vt__entry { int64_t i; float r; int full; } vt__entry;
typedef struct vt__ents { vt__entry *e; int64_t n, cap; int64_t bad; } vt__ents;
/* a thread's first NaN so far: its chunks need not come in index order (>>threads) */
static void vt__first(int64_t *bad, int64_t i) { if (*bad < 0 || i < *bad) *bad = i; }

typedef struct vt__logrd {
    FILE *f;
    int64_t fsize;
    vt__buf chunk;      /* current step's body */
    size_t pos;         /* read position in chunk body */
    int repeat;         /* the chunk's records omit their headers: take them from shape */
    int noshape;        /* ... and there is no shape: trust the replay's own headers */
    vt__buf shape;      /* record headers of the last full chunk */
    uint64_t shape_records;
    int have_full;      /* a full chunk was read (its headers are shape, none if it had no records) */
    int table;          /* the log header's op table; -1: none read (chunks fed in memory) */
    size_t spos;        /* read position in shape */
    int64_t step;       /* step of the loaded chunk */
    unsigned char sha[32];
} vt__logrd;

/* the shards of a sharded program (>>step): which of them this context
   computes, their packed contributions, the exchange that brings the others */
typedef struct vt__shards {
    int S, lo, hi;          /* S shards per step; this context computes [lo, hi) */
    int cur;                /* the shard running, -1 outside one */
    int records;            /* build log records without a log (a rank whose records the writer needs) */
    int group;              /* this context's place among those computing a step (its rank) */
    vt__buf mine;           /* this context's shards, packed (vt__shard_end), in shard order */
    vt__buf all;            /* after the exchange: every shard's, in any order */
    vt__buf batch;          /* the running shard's batch commitment bytes */
    int next, summed;       /* the next shard of this context to run; 1 after vt_shards_sum */
    vt__amark mark;         /* the step arena at this context's first shard (each next one rewinds to it) */
    int64_t mtape;          /* ... and the tape's length */
    size_t c0, s0, b0;      /* where the running shard's records start in chunk, shape_cur, cbody */
    int64_t p0, e0;         /* ... and chunk_points, chunk_entries there */
    /* the exchange: fills `all` from every context's `mine` (NULL: this
       context computes every shard, all = mine); a failure sets c's error */
    vt_status (*exchange)(vt_ctx *c, void *user);
    void *user;
} vt__shards;

struct vt__backend;

struct vt_ctx {
    vt_desc d;
    vt_status status;
    char msg[768];
    void *u;
    vt__pool pool;
    vt__worker_arg *wa;
    vt__arena step, scratch;
    vt__ord ord;            /* the order for this context */
    /* tensors */
    vt_tensor **params; int nparams, cparams;
    vt_tensor **xstate; int nxstate, cxstate; /* optimizer state: committed with the weights */
    void **pers; int npers, cpers;         /* persistent allocations */
    vt_tensor **tape; int64_t ntape, ctape;
    int64_t next_id;
    int grad_enabled;
    int in_step;
    int64_t step_no;
    /* rounding */
    int64_t point;          /* rounding point index within the step */
    uint64_t calls;         /* kernel invocation counter (chaos key) */
    vt__ents *tents;        /* per-thread entry buffers (2 pool.n: the second half, tents + pool.n, for a kernel's
                               second fused output: A FUSED BLOCK) */
    const vt__xprod *rxp;   /* the correctly rounded product being rounded (vt__round), or NULL */
    int64_t round_tri;      /* the next vt__round's point is causal, blocks of this side (vt__tri_round; CPU) */
    int round_fused;        /* the next vt__round's kernel applied the trainer's rule itself (vt__fuse_begin; CPU);
                               2 + slot: a product rounded in its GEMM (A FUSED PRODUCT), its entries in fents[slot] */
    vt__ents fents[VT_MAX_SRC]; int64_t fbad[VT_MAX_SRC]; /* A FUSED PRODUCT's entries and first NaN, per output slot */
    const struct vt__rjob *gfuse; /* the next vt__gemm_go's fused rounding job (A FUSED PRODUCT), or NULL */
    struct vt__lazy *gstat; /* the next vt__gemm_go's pending bound statistics (STATISTICS IN THE PRODUCT'S JOB), or NULL */
    struct vt__lzh *lzh; int nlzh; /* CAPS BY HISTORY: per product shape, how much of the caps' saving the looks took back */
    int pre_cast; int64_t pre_bad; /* >>optim: the next cast's values are binary32 already, their first NaN
                                      pre_bad (-1: none); vt__cpu_cast returns it without a pass */
    vt__ents ents;          /* entries of the current point, in index order */
    struct vt__rent *rents; int64_t crents; /* auditor: entries read from the log */
    FILE *logf;             /* trainer: log being written */
    int log_table;          /* trainer: the newest op table its records use (the header's optable) */
    vt__buf chunk;          /* trainer: current chunk body */
    vt__buf lastchunk;      /* trainer: the complete chunk of the last step */
    vt__buf cbody;          /* trainer: the chunk's records without their headers */
    vt__buf shape_cur, shape_prev; /* trainer: the record headers of this and the last step */
    int force_full;         /* trainer: the next chunk carries its headers (a checkpoint follows) */
    vt__buf fed;            /* auditor (log_memory): the chunk fed for the next step */
    int have_fed;
    vt__logrd rd;           /* auditor: log being read */
    vt_calib calib;         /* the table in force (copied) */
    vt_log_stats stats;
    vt_log_stats kstats[VT_OP_COUNT * 8]; /* per point kind: points, values, entries */
    int64_t chunk_points, chunk_entries;
    unsigned char last_chunk_sha[32];
    /* calibration */
    int ncal;
    vt__ord *cal_ord;
    vt_calib *cal_out;
    /* transcript */
    char tdir[512];         /* the transcript directory, "" if none */
    int man_bound;          /* auditor of a transcript: the manifest's bound mode and lambda, which the */
    double man_lambda;      /* log header must repeat (-1: not a transcript) */
    int root_ok;            /* trainer: the commitments file is this run's (a fresh one, or a resume
                               that succeeded): vt_destroy may write root.txt from it */
    char logpath[600], commitpath[600];
    unsigned char manifest_sha[32];
    int64_t start_step;     /* auditor from a checkpoint: the first step replayed */
    /* commitments */
    FILE *commitf;
    vt_sha256_ctx batch;
    int batch_used;
    double last_loss;
    /* optimizers to free */
    vt_optim **optims; int noptims;
    vt__shards sh;          /* a sharded program's shards (>>step) */
    int man_shards;         /* auditor of a transcript: the manifest's shard count (1 without the key) */
    const struct vt__backend *be;
    void *bes;
};

static vt_status vt__fail(vt_ctx *c, vt_status s, const char *fmt, ...) VT__PRINTF(3, 4);
static vt_status vt__fail(vt_ctx *c, vt_status s, const char *fmt, ...) {
    va_list ap;
    if (!c) return s;
    if (c->status != VT_OK) return c->status; /* keep the first error */
    c->status = s;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
    return s;
}

VTDEF vt_status vt_status_of(const vt_ctx *c) { return c ? c->status : VT_ERR_ARG; }
VTDEF const char *vt_error_message(const vt_ctx *c) {
    if (!c) return "no context";
    return c->status == VT_OK ? "ok" : c->msg;
}
VTDEF void vt_clear_error(vt_ctx *c) { if (c) { c->status = VT_OK; c->msg[0] = 0; } }
VTDEF vt_status vt_set_error(vt_ctx *c, vt_status s, const char *msg) {
    if (s == VT_OK) return VT_OK;
    return vt__fail(c, s, "%s", msg ? msg : vt_status_message(s));
}
VTDEF const vt_desc *vt_ctx_desc(const vt_ctx *c) { return &c->d; }
VTDEF int64_t vt_step_index(const vt_ctx *c) { return c->step_no; }
VTDEF double vt_last_loss(const vt_ctx *c) { return c->last_loss; }
VTDEF void vt_log_stats_get(const vt_ctx *c, vt_log_stats *s) { *s = c->stats; }

static void *vt__xmalloc(vt_ctx *c, size_t n) {
    void *p = VT_MALLOC(n ? n : 1, c->u);
    if (!p) vt__fail(c, VT_ERR_NOMEM, "out of memory allocating %zu bytes", n);
    return p;
}

static int vt__grow(vt_ctx *c, void **p, int64_t *cap, int64_t need, size_t elt) {
    if (need <= *cap) return 1;
    {
        int64_t nc = VT__MAX(need, *cap * 2 + 16);
        void *q = VT_REALLOC(*p, (size_t)nc * elt, c->u);
        if (!q) { vt__fail(c, VT_ERR_NOMEM, "out of memory growing a buffer to %lld items", (long long)nc); return 0; }
        *p = q; *cap = nc;
    }
    return 1;
}

static int vt__buf_put(vt_ctx *c, vt__buf *b, const void *d, size_t n) {
    if (!n) return 1;
    if (b->n + n > b->cap) {
        size_t nc = VT__MAX(b->n + n, b->cap * 2 + 256);
        unsigned char *q = (unsigned char *)VT_REALLOC(b->p, nc, c->u);
        if (!q) { vt__fail(c, VT_ERR_NOMEM, "out of memory growing the log buffer"); return 0; }
        b->p = q; b->cap = nc;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
    return 1;
}

/* room for n more bytes at b->p + b->n */
static int vt__buf_reserve(vt_ctx *c, vt__buf *b, size_t n) {
    size_t nc;
    unsigned char *q;
    if (b->n + n <= b->cap) return 1;
    nc = VT__MAX(b->n + n, b->cap * 2 + 256);
    q = (unsigned char *)VT_REALLOC(b->p, nc, c->u);
    if (!q) { vt__fail(c, VT_ERR_NOMEM, "out of memory growing a buffer to %zu bytes", nc); return 0; }
    b->p = q; b->cap = nc;
    return 1;
}

static void vt__buf_varint(vt_ctx *c, vt__buf *b, uint64_t v) {
    unsigned char t[10];
    int n = 0;
    do { unsigned char x = (unsigned char)(v & 127); v >>= 7; if (v) x |= 128; t[n++] = x; } while (v);
    vt__buf_put(c, b, t, (size_t)n);
}

/* reads a varint at *pos from p[0..n); 0 on truncation or on a form
   vt__buf_varint never writes: a last byte of 0 after others (overlong) or
   bits above bit 63. One value, one encoding: a chunk's bytes, and so its
   hash, are fixed by what it says. */
static int vt__get_varint(const unsigned char *p, size_t n, size_t *pos, uint64_t *v) {
    uint64_t r = 0;
    int sh = 0;
    while (*pos < n && sh < 64) {
        unsigned char x = p[(*pos)++];
        if (sh == 63 && x > 1) return 0;
        r |= (uint64_t)(x & 127) << sh;
        if (!(x & 128)) {
            if (sh && !x) return 0;
            *v = r;
            return 1;
        }
        sh += 7;
    }
    return 0;
}

static void vt__put_u32(unsigned char *p, uint32_t v) { int i; for (i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static void vt__put_u64(unsigned char *p, uint64_t v) { int i; for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static uint32_t vt__get_u32(const unsigned char *p) { uint32_t v = 0; int i; for (i = 3; i >= 0; i--) v = (v << 8) | p[i]; return v; }
static uint64_t vt__get_u64(const unsigned char *p) { uint64_t v = 0; int i; for (i = 7; i >= 0; i--) v = (v << 8) | p[i]; return v; }

/* ==========================================================================
   >>backend  what a backend is, which one a context gets, where values live

   A backend runs kernels and owns the memory they touch. The CPU backend
   (>>cpu, and the rounding and optimizer primitives of >>rounding and
   >>optim) is always there; its memory is the host's. A backend with memory
   of its own (CUDA, vtrain_cuda.cu.h) keeps each tensor's storage there too
   (vt_tensor.bmem) and the engine moves values on demand: vt__bp/vt__bptr
   give a kernel the backend copy, vt__h/vt__hw the host one, and
   vt_tensor.loc says which is current. Every address a backend member
   receives is a backend address (host memory for the CPU).

   The table is declared once, by VT__BACKEND_LIST: it generates the struct
   and fills each instance by member name (VT__BACKEND_TABLE(name,
   has_memory, prefix) takes prefix##member for every member), so an
   instance that lacks a member does not compile. A backend marks a member
   it does not have by defining prefix##member as NULL; vt_create refuses a
   backend whose required member is NULL (the last column: 1 always, 2 when
   the backend has memory of its own, 0 optional).

   ADDING A BACKEND
     1. a vt_backend_kind value (public types) and a row in vt__backends below;
     2. a prefix (vt__xyz_) and one function per member of VT__BACKEND_LIST,
        NULL macros for the optional ones it lacks, its table with
        VT__BACKEND_TABLE("xyz", has_memory, vt__xyz_), and an attach
        function that opens the device and sets c->be (see vt__cuda_attach);
     3. its kernels compute every op's binary64 values with the bounds
        derived beside the CPU kernels (>>cpu, >>gemm): any order, the same
        formulas; rounding primitives that emit entries in index order;
     4. tests: the kernel-by-kernel check against the CPU op and the
        trained-here, audited-on-the-CPU runs of tests/test_cuda.c, and the
        op coverage check (every_op_covered) over its kernel check.
   ========================================================================== */

struct vt__kern;
struct vt__opt_job;
struct vt__rent;

/* X(P, return type, member, parameters, required) */
#define VT__BACKEND_LIST(X, P)                                                                               \
    /* run node k->t forward (k->bwd 0) or backward, writing k->out[] (values, bounds) */                     \
    X(P, void, kernel, (struct vt__kern *k), 1)                                                                \
    /* memory of its own: root's storage there, allocated on first use; copies both ways */                   \
    X(P, void *, storage, (vt_ctx *c, vt_tensor *root), 2)                                                     \
    X(P, void, h2b, (vt_ctx *c, void *dst, const void *host, size_t bytes), 2)                                 \
    X(P, void, b2h, (vt_ctx *c, void *host, const void *src, size_t bytes), 2)                                 \
    /* free the alloc()s of a life: 0 the op, 1 the step */                                                    \
    X(P, void, reset, (vt_ctx *c, int life), 0)                                                                \
    /* work memory: life 0 until the op ends, 1 until the step ends */                                         \
    X(P, void *, alloc, (vt_ctx *c, size_t bytes, int life), 1)                                                \
    X(P, void, copy, (vt_ctx *c, double *dst, const double *src, int64_t n), 1)                                \
    X(P, void, zero, (vt_ctx *c, double *x, int64_t n), 1)                                                     \
    /* rounding points (vt__round); each returns the first NaN's index or -1. cast: x = RNE32(x)             \
       (check_only: look for NaN only); round: the trainer's rule with bounds e * ef, entries               \
       appended to out in index order; gather: x and e at m indices (e may be NULL); put: x[i] = r */      \
    X(P, int64_t, cast, (vt_ctx *c, double *x, int64_t n, int check_only), 1)                                 \
    X(P, int64_t, round, (vt_ctx *c, double *x, const double *e, int64_t n, double ef, int compact, vt__ents *out), 1) \
    X(P, void, gather, (vt_ctx *c, const double *x, const double *e, const struct vt__rent *at, int64_t m,    \
                        double *xo, double *eo), 1)                                                            \
    X(P, void, put, (vt_ctx *c, double *x, const vt__ents *en), 1)                                             \
    /* x[i] = RNE32 of the exact product at each entry's index (vt__xprod): the correctly rounded    \
       products' fallback where the bound cannot decide */                                                      \
    X(P, void, exact, (vt_ctx *c, double *x, const vt__xprod *xp, const vt__ents *at), 1)                    \
    /* g = RNE32(g + h): the second gradient of a tensor an op used twice */                                   \
    X(P, void, add_round, (vt_ctx *c, double *g, const double *h, int64_t n, int cast), 1)                     \
    /* the optimizer: one phase over the flat parameter vector (vt_optim_step) */                              \
    X(P, void, optim, (vt_ctx *c, const struct vt__opt_job *j), 1)                                             \
    /* clipping: parameter i's squared gradient norm (any order within it) and S = sum g^2 for the           \
       bound; g *= s */                                                                                        \
    X(P, double, sumsq, (vt_ctx *c, int i, const double *g, int64_t n, double *S), 1)                          \
    X(P, void, scale, (vt_ctx *c, double *g, double s, int64_t n), 1)                                          \
    /* SHA-256 of each 64 KiB block of t's binary32 values (vt__block_digest); 0: the engine hashes */        \
    X(P, int, block_digests, (vt_ctx *c, const vt_tensor *t, unsigned char *out), 0)                           \
    X(P, void, destroy, (vt_ctx *c), 0)

typedef struct vt__backend {
    const char *name;
    int has_memory; /* 1: tensors are mirrored in memory of its own (see above) */
#define VT__X(P, ret, member, params, req) ret(*member) params;
    VT__BACKEND_LIST(VT__X, _)
#undef VT__X
} vt__backend;

/* an instance, filled by member name: prefix##member for every member */
#define VT__BACKEND_FILL(P, ret, member, params, req) P##member,
#define VT__BACKEND_TABLE(name, has_memory, prefix) {name, has_memory, VT__BACKEND_LIST(VT__BACKEND_FILL, prefix)}

/* the first required member that is NULL, or NULL */
static const char *vt__backend_missing(const vt__backend *be) {
#define VT__X(P, ret, member, params, req) \
    if (!be->member && ((req) == 1 || ((req) == 2 && be->has_memory))) return #member;
    VT__BACKEND_LIST(VT__X, _)
#undef VT__X
    return NULL;
}

/* The backends of this build. vt_create looks d.backend up here before it
   allocates anything (a build without one says how to get it), then
   attaches it: the CPU table first, which attach may replace. */
static vt_status vt__cpu_attach(vt_ctx *c);  /* >>optim, after the last CPU primitive */
#ifdef VTRAIN_CUDA
static vt_status vt__cuda_attach(vt_ctx *c); /* vtrain_cuda.cu.h */
#define VT__CUDA_ATTACH vt__cuda_attach
#else
#define VT__CUDA_ATTACH NULL
#endif
static const struct vt__backend_entry {
    vt_backend_kind kind;
    vt_status (*attach)(vt_ctx *c); /* NULL: not in this build */
    const char *absent;             /* ... and what to do about it */
} vt__backends[] = {
    {VT_BACKEND_CPU, vt__cpu_attach, NULL},
    {VT_BACKEND_CUDA, VT__CUDA_ATTACH, "this program was built without the CUDA backend: define VTRAIN_CUDA "
                                       "where VTRAIN_IMPLEMENTATION is defined (see vtrain_cuda.cu.h)"},
};

static const struct vt__backend_entry *vt__backend_find(vt_backend_kind k) {
    size_t i;
    for (i = 0; i < sizeof vt__backends / sizeof vt__backends[0]; i++)
        if (vt__backends[i].kind == k) return &vt__backends[i];
    return NULL;
}

static vt_status vt__backend_attach(vt_ctx *c) {
    const struct vt__backend_entry *b = vt__backend_find(c->d.backend);
    const char *missing;
    if (vt__cpu_attach(c) != VT_OK) return c->status;
    if (b && b->attach != vt__cpu_attach && b->attach(c) != VT_OK) return c->status;
    missing = vt__backend_missing(c->be);
    if (missing) return vt__fail(c, VT_ERR_BACKEND, "vt_create: backend '%s' lacks its required member '%s'", c->be->name, missing);
    return VT_OK;
}

/* --- where values live ------------------------------------------------------ */

static double *vt__d(const vt_tensor *t) { return (double *)t->data; }
static int32_t *vt__i(const vt_tensor *t) { return (int32_t *)t->data; }

/* Where values live. With the CPU backend t->data is the only copy. A
   backend with memory of its own mirrors each storage (a root tensor: views
   share their root's); loc says which copy is current, and these move values
   when the other side asks:
     vt__h / vt__hi    host values to read
     vt__hw / vt__hwi  host values about to be changed on the host
     vt__bptr          backend address for a kernel: mode 0 read, 1 write
                       every element (nothing uploaded), 2 read and write */
#define VT__LOC_HOST 1u
#define VT__LOC_DEV 2u
static size_t vt__bytes(const vt_tensor *t) {
    int64_t n = vt_numel(t);
    return (size_t)(n ? n : 1) * (t->dtype == VT_I32 ? sizeof(int32_t) : sizeof(double));
}
static vt_tensor *vt__root(const vt_tensor *t) {
    while (t->view_src) t = t->view_src;
    return (vt_tensor *)(uintptr_t)t;
}
static void vt__sync_host(vt_ctx *c, const vt_tensor *t) {
    vt_tensor *r;
    if (!c->be->has_memory || !t) return;
    r = vt__root(t);
    if (!(r->loc & VT__LOC_HOST)) {
        void *b = c->be->storage(c, r);
        if (b) c->be->b2h(c, r->data, b, vt__bytes(r));
        r->loc |= VT__LOC_HOST;
    }
}
static double *vt__h(vt_ctx *c, const vt_tensor *t) { vt__sync_host(c, t); return vt__d(t); }
static int32_t *vt__hi(vt_ctx *c, const vt_tensor *t) { vt__sync_host(c, t); return vt__i(t); }
static void vt__host_dirty(vt_ctx *c, vt_tensor *t) {
    if (!c->be->has_memory) return;
    vt__sync_host(c, t);
    vt__root(t)->loc = VT__LOC_HOST;
}
static double *vt__hw(vt_ctx *c, vt_tensor *t) { vt__host_dirty(c, t); return vt__d(t); }
static int32_t *vt__hwi(vt_ctx *c, vt_tensor *t) { vt__host_dirty(c, t); return vt__i(t); }
static void *vt__bptr(vt_ctx *c, const vt_tensor *t, int mode) {
    vt_tensor *r;
    char *base;
    if (!c->be->has_memory) return t->data;
    r = vt__root(t);
    if (r != t && mode == 1) mode = 2; /* part of a storage: keep the rest */
    base = (char *)c->be->storage(c, r);
    if (!base) return NULL;
    if (mode != 1 && !(r->loc & VT__LOC_DEV)) {
        c->be->h2b(c, base, r->data, vt__bytes(r));
        r->loc |= VT__LOC_DEV;
    }
    if (mode) r->loc = VT__LOC_DEV;
    return base + ((const char *)t->data - (const char *)r->data);
}
static double *vt__bp(vt_ctx *c, const vt_tensor *t) { return (double *)vt__bptr(c, t, 0); }

/* the end of an op (life 0) or of a step (life 1): work memory is reused */
static void vt__reset_life(vt_ctx *c, int life) {
    vt__arena_reset(&c->scratch);
    if (life) vt__arena_reset(&c->step);
    if (c->be->reset) c->be->reset(c, life);
}

/* ==========================================================================
   >>rounding  the numeric contract

   WHERE ROUNDING POINTS ARE. Every op ends in one rounding point per output
   (a backward op has one per input gradient). The optimizer update has three
   (the moments and the weights, each over all parameters at once), gradient
   clipping two (the norm, the scaled gradients), and the learning rate and
   the loss one each. A step split into shards (SHARDS) has one more, the
   cross-shard sum of the gradients, which every machine resolves alike and
   which logs nothing (its rule and bound: >>step). Ops whose outputs are exact copies of T values (relu,
   embedding lookup, views, concat, split) have none: nothing there depends
   on the machine.

   WHAT AN OP HANDS THE ROUNDING POINT. Its binary64 values x[i] and bounds
   e[i], valid for any IEEE binary64 implementation, in any summation order,
   with or without fma, and meaning exactly one of two things:
     e = 0   every conforming machine computes exactly this x: it comes from
             the op's identical binary32 inputs by a fixed sequence of IEEE
             operations (+ - * / sqrt, comparisons, vtrain's own exp, log,
             tanh and sigmoid of >>elementary, which are such sequences),
             written out in the kernel and run as written on every backend
             (no contraction: the pragmas above, -ffp-contract=off, nvcc
             -fmad=false; vt_create refuses a build that contracts, and a
             machine that flushes subnormals). Sums of two terms, a row of
             length one, the optimizer update, GELU and tanh are such values.
     e > 0   x is within e of the reference value x*: the real-number result
             of the op's definition in which every value of the first kind
             is taken as computed (the same everywhere) and every reduction
             whose order is free (a sum, a dot product, a GEMM) is exact.
             Two machines' values are then within e + e' of each other.
   No libm function is called: the only inputs that differ between machines
   are the results of reductions, and of arithmetic downstream of them. Each
   kernel derives its bound in a comment beside it. Ingredients:
     * a sum of n terms in any order: |err| <= gamma(n) sum |terms|,
       gamma(n) = n u / (1 - n u), u = 2^-53 (gsum: n - 1 roundings of
       exact terms; 0 for n <= 2, one addition of the same operands);
     * a correctly rounded + - * / sqrt on inputs that may differ between
       machines (because they come from a reduction): u |result|, plus the
       inputs' bounds propagated by the operation's condition number;
     * vtrain's own log of an input that differs between machines (the log of
       a softmax's sum): VT__DLOG_ERR relative, derived at vt__dlog;
     * a fixed-order outer reduction (a weight gradient summed per sequence,
       then over sequences left to right): gamma(chunk) + gamma(chunks + 1)
       instead of gamma(all rows) - the order of the outer sum is part of the
       op's definition, so every backend must keep it.
   tests/test_bounds.c hunts for violations: adversarial inputs (wide
   dynamic range, cancellation, binary32 midpoints, subnormals, reductions
   of 8192+ terms, rows of length 1 and 2) against a __float128 evaluation
   of x*, and e = 0 values compared bit for bit across orders.

   WHAT THE TRAINER DOES. r = RNE32(x). With w = 2e(1 + 2^-20) + 2^-50 |x|
   (the extra terms cover the rounding of the bound itself and of x +- w), it
   appends (i, r) to the log iff RNE32(x - w) != RNE32(x + w), comparing bit
   patterns in an order where -0 < +0 (the sign of zero is part of the hash).
   Overflow, ties, subnormals and exponent changes need no special case.

   WHAT THE AUDITOR DOES. For a logged index it checks the entry is plausible,
   RNE32(x' - w') <= r <= RNE32(x' + w'), and takes r; otherwise it rounds
   its own x'. If the trainer logged nothing, RNE32 is constant on
   [x - 2e, x + 2e], which contains x' (both are within e of exact): the
   auditor's rounding equals the trainer's. By induction over points and
   steps, both hold identical binary32 state.

   CORRECTLY ROUNDED PRODUCTS. The outputs of matrix products (vt_linear
   forward and backward, vt_matmul forward and backward: everything vt__mm
   computes, and the CUDA backend's same products) need no log at all. Each
   output element is defined as RNE32 of the exact value of its sum of
   products (plus bias and old value): where the sound bound decides (RNE32
   is constant on [x - w, x + w], which contains the exact value) that is
   RNE32(x); elsewhere, for the rare element the bound cannot decide, the
   backend evaluates the sum exactly (vt__xacc: integer arithmetic, the same
   source on the CPU and the GPU) and rounds it once. Trainer and auditor
   apply the same rule, so every machine computes the same binary32 value,
   the log records nothing for these points (a record with entries there is
   refused), and a dishonest trainer has no choice to make. The cost is the
   exact evaluation of the undecided elements (about 10^-5 of them on
   training data: K integer additions each) and the auditor's own pass of
   the trainer's rule. Where an op's output is such a sum, register it
   (vt__xprod_add) and it joins this rule.
   The width there is w = e (1 + 2^-20) + 2^-50 |x|, half the log rule's:
   the exact value is within e of this machine's own x, and no other
   machine's value enters the decision (the log rule's 2e covers the
   auditor's x' as well). The probabilistic mode keeps 2e and no bound from
   the value (below): a product's e is sound there too (vt__sound_ord,
   >>gemm), so both would hold, but no test covers them in that mode yet,
   and 2e is the conservative side. The factor 1 + 2^-20 covers the roundings of the
   bound's own arithmetic (a few u) and the statistics' order (K u).

   A ONE-CHUNK PRODUCT'S BOUND FROM ITS VALUE. Let the n terms of one output
   be exact (products of binary32 values, C0, bias), P the sum of the
   positive ones, N that of the magnitudes of the negative ones, T = P + N,
   S = P - N the exact sum. Any evaluation (any order, with or without fma)
   is a tree of n - 1 roundings, and its value is S + sum_v r_v, r_v the
   error of node v: |r_v| <= u |a_v + b_v| (fl(a + b) = (a + b)(1 + d),
   |d| <= u; a sum that underflows is exact), where a_v + b_v = S_v + the
   errors below v, S_v the exact sum of the terms under v. A sum of a subset
   of the terms lies in [-N, P], so |S_v| <= max(P, N) = (T + |S|) / 2.
   With R = sum_v |r_v|: R <= (n - 1) u ((T + |S|) / 2 + R), so R <= g (T +
   |S|) / 2, g = gamma(n - 1) = gsum(n); and |S| <= |x| + R gives R (1 -
   g / 2) <= g (T + |x|) / 2, that is |x - S| <= R <= gx (T + |x|) with gx =
   g / (2 - g). The statistics give s >= T with e = G s, G = gsum(K + [C0] +
   [bias]) >= gs = gsum(K); so with s' = e / gs >= s (less 2u relative) and
   gsum(K + 2) >= g in gx, e' = gx (s' + |x|) bounds this machine's error
   too: about e / 2 where the sum cancels (|x| << s), which is where an
   undecided value lies. vt__round_look takes e' where e cannot decide (the
   width's 2^-20 absorbs the 4u of e's, s' and e' roundings). A chunked sum
   (a weight gradient in a fixed order over its chunks) has G far below
   gsum(n) and keeps e. Neither changes a value: only how many are
   evaluated exactly.

   TWO HONEST BOUNDS. The trainer's bound e and an auditor's e' for one
   element are the same formula of values that agree to gamma(n) relative
   (a formula's inputs are mostly the same everywhere: statistics of the
   binary32 operands); the rule assumes they agree to 2^-20 relative, and
   tests/test_bounds.c measures the largest ratio across orders on
   adversarial inputs. That is what the factor 1 + 2^-20 in w pays for: the
   auditor's w' = 2e'(1 + 2^-20) + 2^-50|x'| covers |x - x'| <= e + e', so
   an honest entry is always plausible.

   COMPACT ENTRIES. An entry stores only the low 8 bits of r's ordered key
   when every honest auditor's plausible interval I_A = [RNE32(x' - w'),
   RNE32(x' + w')] holds at most 256 binary32 values: the entry then names
   exactly one value of I_A, whatever the auditor's own x'. The trainer
   cannot see x', so it bounds I_A: |x' - x| <= e + e' and w' <= 2e'(1 +
   2^-20) + 2^-50 |x'| with e' <= e (1 + 2^-20) (TWO HONEST BOUNDS), so x' +
   w' <= x + W and x' - w' >= x - W for W = 4.01 e + 2^-48 |x|. So I_A lies
   inside [RNE32(x - W), RNE32(x + W)], and the trainer writes a compact
   entry exactly when that holds at most 256 values (vt__compact_ok),
   otherwise all 32 bits (a flag bit in the index says which). The auditor
   decodes a compact entry inside its own I_A, from its low end
   (vt__decode_entry); a compact entry where I_A holds more than 256 values
   cannot come from an honest trainer and is refused (never decoded against
   a guess). The calibrated factor plays no part: compactness and
   plausibility use the sound bound.

   BOUND MODES. sound: the bounds above, for any input. calibrated: e is
   multiplied by a factor per (point kind, size) measured by vt_calibrate
   and recorded in the log; it only decides what the trainer logs, the
   auditor checks plausibility against the sound bound, so a too-small
   factor makes an honest audit fail, never a forged one pass.
   probabilistic: vt__g uses lambda sqrt(n) u instead of n u for the sums
   (Higham and Mary 2019), except in the bound of a correctly rounded
   product, which decides without a log and stays sound (vt__sound_ord).
   ITS PROMISE ASSUMES RANDOM ROUNDING ERRORS: it holds with probability
   at least 1 - 2n exp(-lambda^2 / 2) per sum when the rounding errors of a
   sum behave as independent, mean-zero random variables, which training
   data usually gives. Inputs chosen by an
   adversary (long sums built to land near a binary32 midpoint) break that
   assumption, and then honest audits fail. It is never the default, a
   transcript records it, and vt_create refuses it for a transcript unless
   vt_desc.allow_probabilistic is set.
   ========================================================================== */

/* ordered key: consecutive integers over binary32 values, -0 just below +0 */
static int32_t vt__key(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return (b & 0x80000000u) ? -1 - (int32_t)(b & 0x7fffffffu) : (int32_t)b;
}
static float vt__unkey(int32_t k) {
    uint32_t b = k >= 0 ? (uint32_t)k : (0x80000000u | (uint32_t)(-1 - k));
    float f;
    memcpy(&f, &b, 4);
    return f;
}
static uint32_t vt__fbits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
/* a little-endian host: binary32 values in memory are their wire bytes */
static int vt__host_le(void) { uint32_t one = 1; unsigned char c; memcpy(&c, &one, 1); return c == 1; }
static float vt__bitsf(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }

#define VT__SAFE (1 + 0x1p-20)
/* e = 0 certifies that every machine computes exactly x: nothing to widen */
static double vt__widen(double x, double e) { return e > 0 ? 2 * e * VT__SAFE + fabs(x) * 0x1p-50 : 0; }

/* point kinds: id * 8 + slot, written into logs and calibration tables
   (ids are fixed in VT__OP_LIST); slot 0 is the forward output, slot 1+i
   the gradient of src[i]; the engine's ops name their slots in the list
   (the optimizer's: 0 m, 1 v, 2 w, 3 lr, 4 momentum). */
static int vt__kind(vt_op op, int slot) { return (int)op * 8 + slot; }
/* 1 if kind names an op that op table `table` has (and that is a graph or engine op) */
static int vt__kind_in_table(int64_t kind, int table) {
    int op = (int)(kind / 8);
    return kind >= 0 && op > 0 && op < VT_OP_COUNT && vt__ops[op].table <= table;
}
/* a point kind's name; a kind no op has (from a log or a table: any
   unsigned value a reader decoded) is named with its value as read */
static void vt__kind_name(uint64_t kind, char *buf, size_t n) {
    int op, slot;
    const char *sl;
    if (kind >= (uint64_t)VT_OP_COUNT * 8) { snprintf(buf, n, "kind %llu (no such op)", (unsigned long long)kind); return; }
    op = (int)(kind / 8);
    slot = (int)(kind % 8);
    sl = vt__ops[op].slots;
    if (sl) { /* the slot-th word of the op's slot names */
        int k;
        size_t w;
        for (k = 0; k < slot && *sl; k++) { sl += strcspn(sl, " "); sl += *sl == ' '; }
        w = strcspn(sl, " ");
        if (w) snprintf(buf, n, "%s.%.*s", vt_op_name((vt_op)op), (int)w, sl);
        else snprintf(buf, n, "%s.?", vt_op_name((vt_op)op));
    } else if (slot == 0) snprintf(buf, n, "%s", vt_op_name((vt_op)op));
    else snprintf(buf, n, "%s.d%d", vt_op_name((vt_op)op), slot - 1);
}
static void vt__pt_name(uint64_t kind, int ndim, const int64_t *dims, char *buf, size_t n) {
    int i;
    size_t l;
    vt__kind_name(kind, buf, n);
    l = strlen(buf);
    snprintf(buf + l, n - l, "[");
    for (i = 0; i < ndim; i++) {
        l = strlen(buf);
        snprintf(buf + l, n - l, i ? "x%lld" : "%lld", (long long)dims[i]);
    }
    l = strlen(buf);
    snprintf(buf + l, n - l, "]");
}

VTDEF int vt_log_kind_stats(const vt_ctx *c, int kind, vt_log_stats *s, char *name, size_t n) {
    if (kind < 0 || kind >= VT_OP_COUNT * 8) return 0;
    *s = c->kstats[kind];
    if (name) vt__kind_name(kind, name, n);
    return s->points > 0;
}

static double vt__calib_factor(const vt_calib *t, int kind, int64_t n) {
    int i;
    for (i = 0; i < t->count; i++)
        if (t->e[i].kind == kind && t->e[i].n == n) return t->e[i].factor;
    return 1.0; /* not calibrated: the sound bound */
}

typedef struct vt__rjob {
    vt_ctx *c;
    double *x;
    const double *e;
    double ef;          /* bound factor (calibrated) */
    int compact;
    const struct vt__lazy *lz; /* a product's bound, computed where needed (>>gemm) */
    double gs, gx;      /* a correctly rounded product's refinement (vt__xprod; gx 0: none) */
    int64_t tri;        /* vt__tri_round: the side of the square blocks */
    int cast;           /* A FUSED CAST (no bound): 1 the first NaN only (fp64), 2 also x = RNE32(x) */
    int64_t ld, off;    /* A FUSED CAST: the product's row length, and its first element's index in x */
} vt__rjob;

static int vt__ents_push(vt_ctx *c, vt__ents *t, int64_t i, float r, int full) {
    if (!vt__grow(c, (void **)&t->e, &t->cap, t->n + 1, sizeof(vt__entry))) return 0;
    t->e[t->n].i = i; t->e[t->n].r = r; t->e[t->n].full = full;
    t->n++;
    return 1;
}

/* trainer: round x[lo,hi) in place, collect entries in thread tid's buffer */
/* trainer: in blocks of 256, a branch-free pass (the compilers vectorise it)
   computes RNE32(x - w) and RNE32(x + w) and the rounded values; a scalar
   pass visits only the elements whose two ends differ. Comparing the bit
   patterns is the same as comparing ordered keys (a bijection). */
/* x[i] = RNE32(x[i]) for a block */
static void vt__cast_block(double *x, int64_t n) {
    int64_t i = 0;
#ifdef VT__AVX2
    for (; i + 8 <= n; i += 8) {
        __m256d a = _mm256_loadu_pd(x + i), b = _mm256_loadu_pd(x + i + 4);
        _mm256_storeu_pd(x + i, _mm256_cvtps_pd(_mm256_cvtpd_ps(a)));
        _mm256_storeu_pd(x + i + 4, _mm256_cvtps_pd(_mm256_cvtpd_ps(b)));
    }
    for (; i + 4 <= n; i += 4) _mm256_storeu_pd(x + i, _mm256_cvtps_pd(_mm256_cvtpd_ps(_mm256_loadu_pd(x + i))));
#endif
    for (; i < n; i++) x[i] = (double)(float)x[i];
}

/* 1 if an entry for x with (sound) bound e may be written compact: every
   auditor's plausible interval then holds at most 256 binary32 values (see
   COMPACT ENTRIES above; the calibrated factor plays no part) */
static int vt__compact_ok(double x, double e) {
    double W = 4.01 * e + fabs(x) * 0x1p-48;
    return (int64_t)vt__key((float)(x + W)) - (int64_t)vt__key((float)(x - W)) <= 255;
}

/* The auditor's reading of one entry (value bits v, full or the low 8 bits
   of the ordered key) against its own value x and sound bound e: 0 and the
   value in *r, or 1 (a compact entry where the interval holds more than 256
   values) or 2 (a value outside the interval); [*kl, *kh] are the interval's
   keys. COMPACT ENTRIES says why the decoding is unique. */
static int vt__decode_entry(double x, double e, int full, uint32_t v, float *r, int32_t *kl, int32_t *kh) {
    double w = vt__widen(x, e);
    int64_t kr;
    *kl = vt__key((float)(x - w));
    *kh = vt__key((float)(x + w));
    if (!full && (int64_t)*kh - *kl > 255) return 1;
    if (full) { *r = vt__bitsf(v); kr = vt__key(*r); }
    else { /* in 64 bits: *kl + 255 passes INT32_MAX only for a NaN's key (the caller refuses a NaN x) */
        kr = (int64_t)*kl + (int64_t)((v - (uint32_t)*kl) & 0xFFu);
        *r = vt__unkey((int32_t)VT__MIN(kr, (int64_t)INT32_MAX));
    }
    return (*r != *r || kr < *kl || kr > *kh) ? 2 : 0;
}

/* the scalar pass over a block x[0,n) (element b0 of the point) that the
   branch-free one flagged: entries and the first NaN */
static void vt__round_look(const vt__rjob *j, vt__ents *t, const double *x, const double *e, int64_t n, int64_t b0) {
    double ef2 = 2 * j->ef * VT__SAFE;
    int64_t i;
    for (i = 0; i < n; i++) {
        double xv = x[i];
        if (xv != xv) { vt__first(&t->bad, b0 + i); continue; }
        double w = e[i] * ef2 + fabs(xv) * (e[i] > 0 ? 0x1p-50 : 0.0);
        if (vt__fbits((float)(xv - w)) != vt__fbits((float)(xv + w)) && e[i] > 0) {
            if (j->gx > 0) { /* a correctly rounded product: its bound from its own value (vt__xprod) */
                double e2 = j->gx * (e[i] / j->gs + fabs(xv)), w2 = e2 * ef2 + fabs(xv) * 0x1p-50;
                if (e2 < e[i] && vt__fbits((float)(xv - w2)) == vt__fbits((float)(xv + w2))) continue;
            }
            vt__ents_push(j->c, t, b0 + i, (float)xv, !j->compact || !vt__compact_ok(xv, e[i]));
        }
    }
}

/* After a block's branch-free pass: the elements [0, nv) that it already
   cast (their old values in keep) and the rest; a look, when the pass asked
   for one, sees the old values. */
static void vt__round_finish(const vt__rjob *j, vt__ents *t, double *x, const double *keep, int64_t nv, int64_t n,
                             const double *e, int64_t b0, int any) {
    if (!any) { vt__cast_block(x + nv, n - nv); return; }
    memcpy(x, keep, sizeof(double) * (size_t)nv);
    vt__round_look(j, t, x, e, n, b0);
    vt__cast_block(x, n);
}

#ifdef VT__AVX512
/* vt__round_span's branch-free pass eight at a time (vt__isa512): the same
   arithmetic per element as its AVX2 form, so the same casts and the same
   "look" answer; returns how many it did, ORs that answer into *any. (The
   masked conversions, all lanes on, as in >>gemm: g++ 12 warns about the
   undefined source of the unmasked ones.) */
VT__T512 static int64_t vt__round_pass512(double *x, const double *e, double *keep, int64_t n, double ef2, int *any) {
    const __m512d tiny = _mm512_set1_pd(0x1p-50), f2 = _mm512_set1_pd(ef2);
    __m256i acc = _mm256_setzero_si256();
    __m256 nan = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d xv = _mm512_loadu_pd(x + i), ev = _mm512_loadu_pd(e + i);
        __m512d w = _mm512_add_pd(_mm512_mul_pd(ev, f2), _mm512_mul_pd(_mm512_abs_pd(xv), tiny));
        __m256 l = _mm512_mask_cvtpd_ps(_mm256_setzero_ps(), 0xff, _mm512_sub_pd(xv, w));
        __m256 h = _mm512_mask_cvtpd_ps(_mm256_setzero_ps(), 0xff, _mm512_add_pd(xv, w));
        acc = _mm256_or_si256(acc, _mm256_xor_si256(_mm256_castps_si256(l), _mm256_castps_si256(h)));
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(l, l, _CMP_UNORD_Q));
        _mm512_storeu_pd(keep + i, xv);
        _mm512_storeu_pd(x + i, _mm512_mask_cvtps_pd(_mm512_setzero_pd(), 0xff, l));
    }
    *any |= !_mm256_testz_si256(acc, acc) || _mm256_movemask_ps(nan) != 0;
    return i;
}
#endif

/* the trainer's rule for x[0, n), element b0 of the point, bounds e[0, n), n <= 256 */
#ifdef VT__AVX2
/* vt__round_span's pass on x[0, 4): the two ends of each value's width
   (e ef2 + 2^-50 |x|) differ (into *acc) or are NaN (into *nan); the old
   values into keep, the low end (the cast where the ends agree) into x */
static VT__INLINE void vt__round4(double *x, const double *e, double *keep, __m256d f2, __m128i *acc, __m128 *nan) {
    const __m256d sign = _mm256_set1_pd(-0.0), tiny = _mm256_set1_pd(0x1p-50);
    __m256d xv = _mm256_loadu_pd(x);
    __m256d w = _mm256_add_pd(_mm256_mul_pd(_mm256_loadu_pd(e), f2), _mm256_mul_pd(_mm256_andnot_pd(sign, xv), tiny));
    __m128 l = _mm256_cvtpd_ps(_mm256_sub_pd(xv, w)), h = _mm256_cvtpd_ps(_mm256_add_pd(xv, w));
    *acc = _mm_or_si128(*acc, _mm_xor_si128(_mm_castps_si128(l), _mm_castps_si128(h)));
    *nan = _mm_or_ps(*nan, _mm_cmpunord_ps(l, l)); /* x or its width NaN: a look (never a NaN cast) */
    _mm256_storeu_pd(keep, xv);
    _mm256_storeu_pd(x, _mm256_cvtps_pd(l));
}
#endif
static void vt__round_span(const vt__rjob *j, vt__ents *t, double *x, const double *e, int64_t b0, int64_t n) {
    int64_t i, nv;
    double keep[256];
    {
        double ef2 = 2 * j->ef * VT__SAFE;
        int any = 0;
        i = 0;
#ifdef VT__AVX2
        {   /* the same arithmetic four at a time (conversions round to nearest
               like the casts); only "does this block need a look". The
               2^-50 |x| term is added everywhere: a wider test, never a
               narrower one (the look applies the exact rule). Where the two
               ends agree the cast of x is that end (x lies between them), so
               the pass writes it at once and keeps the old value for a look */
            const __m256d f2 = _mm256_set1_pd(ef2);
            __m128i acc = _mm_setzero_si128();
            __m128 nan = _mm_setzero_ps();
#ifdef VT__AVX512
            if (vt__isa512()) i = vt__round_pass512(x, e, keep, n, ef2, &any);
#endif
            for (; i + 8 <= n; i += 8) { /* (two vectors a trip: the loop's own instructions were a quarter of it) */
                vt__round4(x + i, e + i, keep + i, f2, &acc, &nan);
                vt__round4(x + i + 4, e + i + 4, keep + i + 4, f2, &acc, &nan);
            }
            for (; i + 4 <= n; i += 4) vt__round4(x + i, e + i, keep + i, f2, &acc, &nan);
            any |= !_mm_testz_si128(acc, acc) || _mm_movemask_ps(nan) != 0;
        }
#endif
        nv = i;
        for (; i < n; i++) {
            /* vt__widen, without a branch: the 2^-50 |x| term only where e > 0 */
            double xv = x[i], ev = e[i], w = ev * ef2 + fabs(xv) * (ev > 0 ? 0x1p-50 : 0.0);
            any |= (int)(vt__fbits((float)(xv - w)) != vt__fbits((float)(xv + w))) | (int)(xv != xv);
        }
        vt__round_finish(j, t, x, keep, nv, n, e, b0, any);
    }
}
/* the trainer's rule for x[b0, b0 + n), n <= 256 */
static void vt__round_block(const vt__rjob *j, vt__ents *t, int64_t b0, int64_t n) {
    vt__round_span(j, t, j->x + b0, j->e + b0, b0, n);
}
static void vt__round_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__rjob *j = (vt__rjob *)arg;
    vt__ents *t = &j->c->tents[tid];
    int64_t b0;
    for (b0 = lo; b0 < hi; b0 += 256) vt__round_block(j, t, b0, VT__MIN(256, hi - b0));
}

/* the first NaN in x[lo,hi) (or -1): a branch-free pass per block of 256
   (four at a time where AVX2 is: the scalar loop was 3.5 instructions an
   element, 8% of an fp64 step's at width 64, and fp64 is the baseline
   verified is measured against), a scalar one only in a block that has one */
static int64_t vt__find_nan(const double *x, int64_t lo, int64_t hi) {
    int64_t b0, i;
    for (b0 = lo; b0 < hi; b0 += 256) {
        int64_t n = VT__MIN(256, hi - b0);
        int any = 0;
        i = 0;
#ifdef VT__AVX2
        {
            __m256d u = _mm256_setzero_pd();
            for (; i + 8 <= n; i += 8) {
                __m256d a = _mm256_loadu_pd(x + b0 + i), b = _mm256_loadu_pd(x + b0 + i + 4);
                u = _mm256_or_pd(u, _mm256_cmp_pd(a, b, _CMP_UNORD_Q)); /* (either NaN) */
            }
            any = _mm256_movemask_pd(u);
        }
#endif
        for (; i < n; i++) any |= (int)(x[b0 + i] != x[b0 + i]);
        if (any)
            for (i = 0; i < n; i++)
                if (x[b0 + i] != x[b0 + i]) return b0 + i;
    }
    return -1;
}

/* x = RNE32(x) and the first NaN, one pass per block of 256 (a cast keeps
   NaN and never makes one: the scalar search after it finds the same index) */
static void vt__cast_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__rjob *j = (vt__rjob *)arg;
    vt__ents *t = &j->c->tents[tid];
    int64_t b0, i;
    for (b0 = lo; b0 < hi; b0 += 256) {
        int64_t n = VT__MIN(256, hi - b0);
        double *x = j->x + b0;
        int any = 0;
        i = 0;
#ifdef VT__AVX2
        {
            __m256d nan = _mm256_setzero_pd();
            for (; i + 8 <= n; i += 8) { /* (two vectors a trip: the loop's own instructions were a third of it) */
                __m256d v = _mm256_loadu_pd(x + i), v2 = _mm256_loadu_pd(x + i + 4);
                nan = _mm256_or_pd(nan, _mm256_cmp_pd(v, v2, _CMP_UNORD_Q)); /* (either NaN) */
                _mm256_storeu_pd(x + i, _mm256_cvtps_pd(_mm256_cvtpd_ps(v)));
                _mm256_storeu_pd(x + i + 4, _mm256_cvtps_pd(_mm256_cvtpd_ps(v2)));
            }
            for (; i + 4 <= n; i += 4) {
                __m256d v = _mm256_loadu_pd(x + i);
                nan = _mm256_or_pd(nan, _mm256_cmp_pd(v, v, _CMP_UNORD_Q));
                _mm256_storeu_pd(x + i, _mm256_cvtps_pd(_mm256_cvtpd_ps(v)));
            }
            any = _mm256_movemask_pd(nan) != 0;
        }
#endif
        for (; i < n; i++) { any |= (int)(x[i] != x[i]); x[i] = (double)(float)x[i]; }
        if (any && (t->bad < 0 || b0 < t->bad))
            for (i = 0; i < n; i++)
                if (x[i] != x[i]) { vt__first(&t->bad, b0 + i); break; }
    }
}

static void vt__nan_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__rjob *j = (vt__rjob *)arg;
    vt__ents *t = &j->c->tents[tid];
    int64_t bad = vt__find_nan(j->x, lo, hi);
    if (bad >= 0) vt__first(&t->bad, bad);
}

/* A FUSED CAST's work on x[lo, hi): the cast (j->cast 2) or fp64's check (1) */
static void vt__cast_span(const vt__rjob *j, int64_t lo, int64_t hi, int tid) {
    (j->cast == 2 ? vt__cast_task : vt__nan_task)((void *)(uintptr_t)j, lo, hi, tid);
}

/* --- log record encoding --------------------------------------------------- */

/* A record goes into two bodies while the step runs: the full one (header
   kind, ndim, dims, then count and entries) and the short one (count and
   entries); the headers alone go into shape_cur. At the end of the step a
   chunk whose headers equal the previous step's is written short ("VTCR"):
   the auditor takes the headers from the last full chunk ("VTCK"). Every
   64th step, and before a checkpoint, is written full. */
static void vt__log_need_table(vt_ctx *c, int kind);
static void vt__log_put_record(vt_ctx *c, int kind, int ndim, const int64_t *dims, const vt__ents *en) {
    int64_t prev = -1, k;
    int i;
    size_t h0 = c->chunk.n, hn;
    vt__buf *b = &c->chunk;
    vt__log_need_table(c, kind);
    vt__buf_varint(c, b, (uint64_t)kind);
    vt__buf_varint(c, b, (uint64_t)ndim);
    for (i = 0; i < ndim; i++) vt__buf_varint(c, b, (uint64_t)dims[i]);
    hn = c->chunk.n - h0;
    vt__buf_put(c, &c->shape_cur, c->chunk.p + h0, hn);
    h0 = c->chunk.n;
    vt__buf_varint(c, b, (uint64_t)en->n);
    for (k = 0; k < en->n; k++) {
        const vt__entry *e = &en->e[k];
        vt__buf_varint(c, b, ((uint64_t)(e->i - prev - 1) << 1) | (uint64_t)(e->full != 0));
        if (e->full) {
            unsigned char t[4];
            vt__put_u32(t, vt__fbits(e->r));
            vt__buf_put(c, b, t, 4);
            c->stats.entries_full++;
        } else {
            unsigned char t = (unsigned char)((uint32_t)vt__key(e->r) & 0xFF);
            vt__buf_put(c, b, &t, 1);
        }
        prev = e->i;
    }
    vt__buf_put(c, &c->cbody, c->chunk.p + h0, c->chunk.n - h0);
    c->chunk_points++;
    c->chunk_entries += en->n;
}

/* auditor: parse the next record; entries get r = NaN and full=0 with the
   low byte in i's high bits when compact (resolved against x' later). */
typedef struct vt__rent { int64_t i; uint32_t v; int full; } vt__rent;

static vt_status vt__log_get_record(vt_ctx *c, int kind, int ndim, const int64_t *dims, int64_t n,
                                    vt__rent **out, int64_t *nout, int64_t *cap) {
    vt__logrd *r = &c->rd;
    const unsigned char *p = r->chunk.p;
    size_t len = r->chunk.n;
    uint64_t lk, lnd, ld[VT_MAX_DIMS], ne, v;
    int i, same;
    int64_t k, prev = -1;
    char want[128], have[128];
    const unsigned char *hp = r->repeat ? r->shape.p : p;   /* where the record's header is */
    size_t hlen = r->repeat ? r->shape.n : len, *hpos = r->repeat ? &r->spos : &r->pos;
    vt__pt_name(kind, ndim, dims, want, sizeof want);
    if (r->pos >= len || (!r->noshape && *hpos >= hlen))
        return vt__fail(c, VT_ERR_DESYNC, "log desync at step %lld, point %lld: the log's step chunk has no more records, replay is %s",
                        (long long)c->step_no, (long long)c->point, want);
    if (r->noshape) {
        lk = (uint64_t)kind; lnd = (uint64_t)ndim;
        for (i = 0; i < ndim; i++) ld[i] = (uint64_t)dims[i];
    } else {
        if (!vt__get_varint(hp, hlen, hpos, &lk) || !vt__get_varint(hp, hlen, hpos, &lnd) || lnd > VT_MAX_DIMS)
            return vt__fail(c, VT_ERR_FORMAT, "log corrupt at step %lld, point %lld: bad record header", (long long)c->step_no, (long long)c->point);
        for (i = 0; i < (int)lnd; i++)
            if (!vt__get_varint(hp, hlen, hpos, &ld[i]))
                return vt__fail(c, VT_ERR_FORMAT, "log corrupt at step %lld, point %lld: bad record shape", (long long)c->step_no, (long long)c->point);
    }
    {
        int64_t d64[VT_MAX_DIMS] = {0, 0, 0, 0};
        for (i = 0; i < (int)lnd; i++) d64[i] = (int64_t)ld[i];
        vt__pt_name(lk, (int)lnd, d64, have, sizeof have);
    }
    same = lk == (uint64_t)kind && lnd == (uint64_t)ndim; /* as read: a kind + 2^32 is another kind */
    for (i = 0; same && i < ndim; i++) same = ld[i] == (uint64_t)dims[i];
    if (!same)
        return vt__fail(c, VT_ERR_DESYNC, "log desync at step %lld, point %lld: log has %s, replay is %s",
                        (long long)c->step_no, (long long)c->point, have, want);
    if (!vt__get_varint(p, len, &r->pos, &ne) || ne > (uint64_t)n)
        return vt__fail(c, VT_ERR_FORMAT, "log corrupt at step %lld, point %lld (%s): bad entry count",
                        (long long)c->step_no, (long long)c->point, have);
    if (!vt__grow(c, (void **)out, cap, (int64_t)ne, sizeof(vt__rent))) return c->status;
    for (k = 0; k < (int64_t)ne; k++) {
        vt__rent *e = &(*out)[k];
        if (!vt__get_varint(p, len, &r->pos, &v))
            return vt__fail(c, VT_ERR_FORMAT, "log corrupt at step %lld, point %lld (%s): truncated entry %lld",
                            (long long)c->step_no, (long long)c->point, have, (long long)k);
        if ((v >> 1) >= (uint64_t)(n - 1 - prev)) /* prev + 1 + delta >= n, asked without overflow (prev < n) */
            return vt__fail(c, VT_ERR_FORMAT, "log corrupt at step %lld, point %lld (%s): entry %lld's index %lld + %llu is out of range %lld",
                            (long long)c->step_no, (long long)c->point, have, (long long)k, (long long)(prev + 1),
                            (unsigned long long)(v >> 1), (long long)n);
        e->i = prev + 1 + (int64_t)(v >> 1);
        e->full = (int)(v & 1);
        if (r->pos + (e->full ? 4 : 1) > len)
            return vt__fail(c, VT_ERR_FORMAT, "log corrupt at step %lld, point %lld (%s): truncated entry %lld",
                            (long long)c->step_no, (long long)c->point, have, (long long)k);
        if (e->full) { e->v = vt__get_u32(p + r->pos); r->pos += 4; }
        else { e->v = p[r->pos]; r->pos += 1; }
        prev = e->i;
    }
    *nout = (int64_t)ne;
    return VT_OK;
}


/* --- the rounding point -------------------------------------------------- */

/* the CPU backend's rounding primitives (see vt__backend) */
/* After a rounding job: the first bad (NaN) element over all threads, or -1;
   and, when there is none, every thread's entries into out in index order.
   A thread fills its list in index order within a chunk, but takes its own
   chunks first and then others' (>>threads), so a list is sorted here
   first where it is not; a merge of the lists by index then gives the same
   entries in the same order whichever thread ran which chunk (an index is
   in one list only). */
static void *vt__scratch(vt_ctx *c, size_t n);
static int vt__entry_cmp(const void *a, const void *b) {
    int64_t x = ((const vt__entry *)a)->i, y = ((const vt__entry *)b)->i;
    return x < y ? -1 : x > y;
}
static int64_t vt__ents_gather_from(vt_ctx *c, vt__ents *ls, vt__ents *out) {
    int t, nt = c->pool.n;
    int64_t bad = -1, at_s[64], *at = at_s, k;
    for (t = 0; t < nt; t++)
        if (ls[t].bad >= 0 && (bad < 0 || ls[t].bad < bad)) bad = ls[t].bad;
    if (bad >= 0 || !out) return bad;
    for (t = 0; t < nt; t++) {
        vt__ents *l = &ls[t];
        for (k = 1; k < l->n && l->e[k - 1].i < l->e[k].i; k++) {}
        if (k < l->n) qsort(l->e, (size_t)l->n, sizeof(vt__entry), vt__entry_cmp);
    }
    if (nt > 64 && !(at = (int64_t *)vt__scratch(c, sizeof(int64_t) * (size_t)nt))) return -1;
    for (t = 0; t < nt; t++) at[t] = 0;
    for (;;) {
        int best = -1;
        const vt__entry *e;
        for (t = 0; t < nt; t++)
            if (at[t] < ls[t].n && (best < 0 || ls[t].e[at[t]].i < ls[best].e[at[best]].i)) best = t;
        if (best < 0) break;
        e = &ls[best].e[at[best]++];
        vt__ents_push(c, out, e->i, e->r, e->full);
    }
    return -1;
}
static int64_t vt__ents_gather(vt_ctx *c, vt__ents *out) { return vt__ents_gather_from(c, c->tents, out); }

static int64_t vt__cpu_cast(vt_ctx *c, double *x, int64_t n, int check_only) {
    vt__rjob job;
    int t, nt = c->pool.n;
    if (c->pre_cast) { c->pre_cast = 0; return c->pre_bad; } /* a fused pass rounded and checked them (>>optim) */
    for (t = 0; t < nt; t++) c->tents[t].bad = -1;
    job.c = c; job.x = x; job.e = NULL; job.ef = 1; job.compact = 0; job.lz = NULL; job.gs = job.gx = 0; job.tri = 0;
    vt__parallel(&c->pool, n, n, check_only ? vt__nan_task : vt__cast_task, &job);
    return vt__ents_gather(c, NULL);
}

static int64_t vt__cpu_round(vt_ctx *c, double *x, const double *e, int64_t n, double ef, int compact, vt__ents *out) {
    vt__rjob job;
    int t, nt = c->pool.n;
    for (t = 0; t < nt; t++) { c->tents[t].n = 0; c->tents[t].bad = -1; }
    job.c = c; job.x = x; job.e = e; job.ef = ef; job.compact = compact; job.lz = NULL; job.tri = 0;
    job.gs = c->rxp ? c->rxp->gs : 0; job.gx = c->rxp ? c->rxp->gx : 0;
    vt__parallel(&c->pool, n, 8 * n, vt__round_task, &job);
    return vt__ents_gather(c, out);
}

/* A CAUSAL POINT (CPU backend only: vt__kout.tri, attention's T x T
   outputs): x is square blocks of T x T whose elements above each diagonal
   are +0 or -0 with bound 0, written so by the kernel. There the trainer's
   rule writes no entry and the cast changes nothing (RNE32(x -+ 0) = x, not
   a NaN), so each row is checked only up to its diagonal: the same values,
   entries and first NaN as vt__cpu_round over everything. */
static void vt__tri_round_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__rjob *j = (vt__rjob *)arg;
    vt__ents *t = &j->c->tents[tid];
    int64_t r, b0;
    for (r = lo; r < hi; r++) {
        int64_t end = r * j->tri + r % j->tri + 1; /* row r: its elements [r T, end) */
        for (b0 = r * j->tri; b0 < end; b0 += 256) vt__round_block(j, t, b0, VT__MIN(256, end - b0));
    }
}
static int64_t vt__tri_round(vt_ctx *c, double *x, const double *e, int64_t n, int64_t T, double ef, int compact, vt__ents *out) {
    vt__rjob job;
    int t, nt = c->pool.n;
    for (t = 0; t < nt; t++) { c->tents[t].n = 0; c->tents[t].bad = -1; }
    job.c = c; job.x = x; job.e = e; job.ef = ef; job.compact = compact; job.lz = NULL; job.tri = T;
    job.gs = job.gx = 0; /* not a product (those take vt__cpu_round) */
    vt__parallel(&c->pool, n / T, 4 * n, vt__tri_round_task, &job);
    return vt__ents_gather(c, out);
}

/* A FUSED CAUSAL POINT (CPU backend; the trainer in verified mode): the
   attention kernels apply vt__tri_round's rule to each row of a causal
   point as soon as they have written it, while it is in cache, taking the
   row's bounds from a buffer of their own, so the point's bound array is
   never written and the rounding point makes no pass (at T 256 the four
   T x T points are 16 MiB of values and as much of bounds per layer, read
   back from memory by the pass). Each thread collects entries and its first
   NaN in its own list as vt__tri_round_task does, and vt__round gathers
   them (c->round_fused, vt__ents_gather: sorted by index, the smallest
   NaN) into the same entries in the same order. The rule runs element by element on the same
   x and e (where a 256-block starts changes no result), so values, entries
   and the first NaN are vt__tri_round's. vt__no_fuse (tests) turns it off.
   vt__fuse_begin says whether the point is fused (it must be causal, not
   accumulated, and rounded by the trainer's rule in a step) and readies the
   job and the threads' lists; vt__fuse_row then takes each row, x[0, n) the
   point's elements b0 .. b0 + n - 1 up to the row's diagonal. The caller
   has written the row's zeros above the diagonal already (x = +0), so the
   row is checked on to the next multiple of 4 (at most the row's end j->tri)
   with bounds of 0 there (e[n ..] is the caller's buffer, written): x = +0
   with e = 0 logs nothing, is no NaN and casts to itself, so values,
   entries and the first NaN are the same, and the check has no scalar tail. */
static int vt__no_fuse;
static int64_t vt__fused_points; /* tests: how many points were fused */
static void vt__fuse_row(const vt__rjob *j, int tid, double *x, double *e, int64_t b0, int64_t n) {
    int64_t i, n4 = VT__MIN(j->tri, (n + 3) / 4 * 4);
    if (j->cast) { /* no bound (e unused): the row's values cast or checked by the pass's own task (its zeros
                      above the diagonal neither change nor are NaN) */
        (void)x; (void)e;
        vt__cast_span(j, b0, b0 + n, tid);
        return;
    }
    if (n < n4) { /* at most 3 (as stores: a loop here became a call of memset) */
        e[n] = 0;
        if (n + 1 < n4) e[n + 1] = 0;
        if (n + 2 < n4) e[n + 2] = 0;
    }
    for (i = 0; i < n4; i += 256) vt__round_span(j, &j->c->tents[tid], x + i, e + i, b0 + i, VT__MIN(256, n4 - i));
}

/* A LAZY CAUSAL ROW (attention's scores and datt in a verified trainer,
   fused; the same filter takes A FUSED BLOCK's rows and A LAZY SOFTMAX
   ROW): the row x[0, n) (element b0 of the point) under the trainer's
   rule, with each element's bound computed only where the rule looks. The
   caller gives a width that caps every element's: W + c |x| at least e ef2
   + |x| 2^-50 (2^-50 only where e > 0) for the element's bound e, which
   bnd(arg, i, x) computes as the written-out bounds would. A group of four
   whose two ends under that width agree (x lies between them, so that end
   is its cast) and hold no NaN takes that end; each element of the other
   groups gets vt__round_look with its exact e, and its cast: the entries,
   casts and first NaN of vt__fuse_row over the written-out bounds, without
   writing them (the bounds of attention's square products were a tenth of
   a verified width-64 step's extra instructions). A branch a group, not a
   branch-free pass over 256 values, a kept copy and a second test of the
   flagged blocks: attention's rows are short (16 values in a T x hs block,
   t + 1 in a causal row), and a group asks rarely. A width that is NaN or
   infinite asks everywhere. */
typedef double (*vt__bnd_fn)(const void *arg, int64_t i, double x);
/* the rule on x (element i of the point) with its exact bound e, and its cast */
static void vt__look1(const vt__rjob *j, vt__ents *t, double *x, double e, int64_t i) {
    vt__round_look(j, t, x, &e, 1, i);
    *x = (double)(float)*x;
}
#ifdef VT__AVX2
/* vt__fuse_row_lazy's test on x[0, 4): nonzero where a value's ends under
   W + c |x| differ; *l the low ends (NaN where x or its width is: the
   caller's look, vt__fuse_nan) */
static VT__INLINE __m128i vt__fuse_ends(const double *x, __m256d wv, __m256d cv, __m128 *l) {
    const __m256d sign = _mm256_set1_pd(-0.0);
    __m256d xv = _mm256_loadu_pd(x);
    __m256d w = _mm256_add_pd(wv, _mm256_mul_pd(cv, _mm256_andnot_pd(sign, xv)));
    __m128 h = _mm256_cvtpd_ps(_mm256_add_pd(xv, w));
    *l = _mm256_cvtpd_ps(_mm256_sub_pd(xv, w));
    return _mm_xor_si128(_mm_castps_si128(*l), _mm_castps_si128(h));
}
/* nonzero where a or b is NaN */
static VT__INLINE __m128i vt__fuse_nan(__m128 a, __m128 b) { return _mm_castps_si128(_mm_cmpunord_ps(a, b)); }
/* ... on the group x[i, i + 4): where no value asks, the ends (the casts);
   else a look for each of its elements */
static VT__INLINE void vt__fuse_group(const vt__rjob *j, vt__ents *t, double *x, int64_t i, int64_t b0, __m256d wv, __m256d cv,
                                      vt__bnd_fn bnd, const void *arg) {
    __m128 l;
    __m128i d = vt__fuse_ends(x + i, wv, cv, &l);
    int64_t q;
    d = _mm_or_si128(d, vt__fuse_nan(l, l));
    if (_mm_testz_si128(d, d)) _mm256_storeu_pd(x + i, _mm256_cvtps_pd(l));
    else
        for (q = i; q < i + 4; q++) vt__look1(j, t, x + q, bnd(arg, q, x[q]), b0 + q);
}
#endif
#ifdef VT__AVX512
/* vt__fuse_row_lazy's pass eight at a time (vt__isa512) while no element
   asks: the same operations per element as vt__fuse_ends (the
   masked conversion, all lanes on, as in >>gemm); returns where it stopped
   (at a group of eight that asked, or the end) */
VT__T512 static int64_t vt__fuse_pass512(double *x, int64_t n, double W, double c) {
    const __m512d wv = _mm512_set1_pd(W), cv = _mm512_set1_pd(c);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d xv = _mm512_loadu_pd(x + i);
        __m512d w = _mm512_add_pd(wv, _mm512_mul_pd(cv, _mm512_abs_pd(xv)));
        __m256 l = _mm512_mask_cvtpd_ps(_mm256_setzero_ps(), 0xff, _mm512_sub_pd(xv, w));
        __m256 h = _mm512_mask_cvtpd_ps(_mm256_setzero_ps(), 0xff, _mm512_add_pd(xv, w));
        __m256i d = _mm256_or_si256(_mm256_xor_si256(_mm256_castps_si256(l), _mm256_castps_si256(h)),
                                    _mm256_castps_si256(_mm256_cmp_ps(l, l, _CMP_UNORD_Q)));
        if (!_mm256_testz_si256(d, d)) break;
        _mm512_storeu_pd(x + i, _mm512_mask_cvtps_pd(_mm512_setzero_pd(), 0xff, l));
    }
    return i;
}
#endif
static VT__INLINE void vt__fuse_row_lazy(const vt__rjob *j, vt__ents *t, double *x, int64_t n, int64_t b0, double W, double c,
                                         vt__bnd_fn bnd, const void *arg) {
    int64_t i = 0;
#ifdef VT__AVX2
    const __m256d wv = _mm256_set1_pd(W), cv = _mm256_set1_pd(c);
#ifdef VT__AVX512
    if (n >= 8 && vt__isa512()) i = vt__fuse_pass512(x, n, W, c);
#endif
    while (i + 8 <= n) {
        for (; i + 8 <= n; i += 8) { /* two groups a trip while neither asks (vt__fuse_group's test on each) */
            __m128 l, l2;
            __m128i d = _mm_or_si128(vt__fuse_ends(x + i, wv, cv, &l), vt__fuse_ends(x + i + 4, wv, cv, &l2));
            d = _mm_or_si128(d, vt__fuse_nan(l, l2));
            if (!_mm_testz_si128(d, d)) break;
            _mm256_storeu_pd(x + i, _mm256_cvtps_pd(l));
            _mm256_storeu_pd(x + i + 4, _mm256_cvtps_pd(l2));
        }
        if (i + 8 > n) break;
        vt__fuse_group(j, t, x, i, b0, wv, cv, bnd, arg); /* a pair that asked: a group at a time */
        vt__fuse_group(j, t, x, i + 4, b0, wv, cv, bnd, arg);
        i += 8;
    }
    for (; i + 4 <= n; i += 4) vt__fuse_group(j, t, x, i, b0, wv, cv, bnd, arg);
#endif
    for (; i < n; i++) { /* the tail (or, without AVX2, every element): the same test one at a time */
        double xv = x[i], w = W + c * fabs(xv);
        if (vt__fbits((float)(xv - w)) != vt__fbits((float)(xv + w)) || xv != xv || w != w) vt__look1(j, t, x + i, bnd(arg, i, xv), b0 + i);
        else x[i] = (double)(float)xv;
    }
}

static void vt__cpu_gather(vt_ctx *c, const double *x, const double *e, const vt__rent *at, int64_t m, double *xo, double *eo) {
    int64_t k;
    (void)c;
    for (k = 0; k < m; k++) { xo[k] = x[at[k].i]; eo[k] = e ? e[at[k].i] : 0; }
}

static void vt__cpu_put(vt_ctx *c, double *x, const vt__ents *en) {
    int64_t k;
    (void)c;
    for (k = 0; k < en->n; k++) x[en->e[k].i] = (double)en->e[k].r;
}

/* Round x[0,n) in place to binary32 values (kept as doubles). kind and dims
   name the point in the log and in errors. e may be NULL (exact op). x and e
   are backend addresses. lz (CPU backend only): the bound is a product's lazy
   bound (>>gemm), e is not used. */
/* a kernel's output slot's gathered entries (c->fents[slot]) into out (NULL: none wanted), and its first NaN */
static int64_t vt__fents_take(vt_ctx *c, int slot, vt__ents *out) {
    int64_t q;
    if (c->fbad[slot] >= 0 || !out) return c->fbad[slot];
    for (q = 0; q < c->fents[slot].n; q++)
        if (!vt__ents_push(c, out, c->fents[slot].e[q].i, c->fents[slot].e[q].r, c->fents[slot].e[q].full)) break;
    return -1;
}

struct vt__lazy;
static int64_t vt__lazy_round(vt_ctx *c, double *x, const struct vt__lazy *z, double ef, int compact, vt__ents *out);
static double vt__lazy_e(const struct vt__lazy *z, int64_t i);
static void vt__round(vt_ctx *c, int kind, int ndim, const int64_t *dims, double *x, double *e, const struct vt__lazy *lz,
                      const vt__xprod *xp, int64_t n) {
    const vt__backend *be = c->be;
    int64_t bad = -1;
    double ef = 1;
    int compact = c->d.compact_log >= 0;
    char nm[128];
    if (c->status != VT_OK) return;
    if (kind >= 0 && kind < VT_OP_COUNT * 8) c->kstats[kind].runs++;
    if (c->d.mode == VT_MODE_FP64) {
        vt__fused_points += c->round_fused == 1;
        bad = c->round_fused >= 2 ? c->fbad[c->round_fused - 2] /* (A FUSED CAST) */
            : c->round_fused ? vt__ents_gather(c, NULL) /* (rows checked as written: vt__fuse_begin) */
            : be->cast(c, x, n, 1);
        if (bad >= 0) goto nonfinite;
        c->point++;
        return;
    }
    if (!c->in_step) { /* evaluation between steps: a plain cast, nothing logged */
        bad = c->round_fused >= 2 && !e ? c->fbad[c->round_fused - 2] : be->cast(c, x, n, 0);
        if (bad >= 0) goto nonfinite;
        return;
    }
    c->stats.points++;
    c->stats.values += n;
    if (kind >= 0 && kind < VT_OP_COUNT * 8) { c->kstats[kind].points++; c->kstats[kind].values += n; }
    if (c->d.mode != VT_MODE_VERIFIED) e = NULL;
    if (!e) { lz = NULL; xp = NULL; }
    if (e && c->d.bound == VT_BOUND_CALIBRATED) ef = vt__calib_factor(&c->calib, kind, n);
    c->ents.n = 0;

    if (xp) {
        /* a correctly rounded product, the same rule for trainer and auditor:
           RNE32(x) where the sound bound decides, the exact value elsewhere,
           no log entry (CORRECTLY ROUNDED PRODUCTS) */
        int64_t nx;
        double xef = c->d.bound == VT_BOUND_PROBABILISTIC ? 1 : 0.5; /* width e, not 2e: see above */
        c->rxp = xp;
        if (c->round_fused >= 2) { /* A FUSED PRODUCT: the GEMM applied the rule; its entries in the slot's list */
            bad = vt__fents_take(c, c->round_fused - 2, &c->ents);
            if (c->status != VT_OK) return;
        } else bad = lz ? vt__lazy_round(c, x, lz, xef, 0, &c->ents) : be->round(c, x, e, n, xef, 0, &c->ents);
        c->rxp = NULL;
        if (bad >= 0) goto nonfinite;
        nx = c->ents.n;
        if (nx) be->exact(c, x, xp, &c->ents);
        c->ents.n = 0;
        c->stats.exact += nx;
        if (kind >= 0 && kind < VT_OP_COUNT * 8) c->kstats[kind].exact += nx;
        if (c->status != VT_OK) return;
        if (c->d.role == VT_ROLE_TRAIN) {
            if (c->logf || c->d.log_memory || c->sh.records) vt__log_put_record(c, kind, ndim, dims, &c->ents);
        } else {
            int64_t ne = 0;
            if (vt__log_get_record(c, kind, ndim, dims, n, &c->rents, &ne, &c->crents) != VT_OK) return;
            if (ne) {
                vt__pt_name(kind, ndim, dims, nm, sizeof nm);
                vt__fail(c, VT_ERR_IMPLAUSIBLE, "log entries at step %lld, point %lld (%s): %lld entries for a correctly "
                                                "rounded product, which every machine computes alike (a forged or foreign log)",
                         (long long)c->step_no, (long long)c->point, nm, (long long)ne);
                return;
            }
            c->chunk_points++;
        }
        c->point++;
        return;
    }

    if (c->d.role == VT_ROLE_TRAIN || c->d.mode != VT_MODE_VERIFIED) {
        /* the trainer's rule; without a log (round-only, native, or training
           without one) the entries are only counted */
        vt__fused_points += c->round_fused == 1;
        bad = c->round_fused >= 2 ? vt__fents_take(c, c->round_fused - 2, e ? &c->ents : NULL) /* its GEMM cast it (A FUSED
                                                                  CAST), or the kernel gathered its rule's entries (A FUSED BLOCK) */
            : c->round_fused ? vt__ents_gather(c, &c->ents) /* the kernel ran the rule (vt__fuse_begin) */
            : lz  ? vt__lazy_round(c, x, lz, ef, compact, &c->ents)
            : e && c->round_tri > 0 && n % c->round_tri == 0 ? vt__tri_round(c, x, e, n, c->round_tri, ef, compact, &c->ents)
            : e ? be->round(c, x, e, n, ef, compact, &c->ents) : be->cast(c, x, n, 0);
        if (c->status != VT_OK) return;
        if (bad >= 0) goto nonfinite;
        c->stats.entries += c->ents.n;
        if (c->d.mode == VT_MODE_VERIFIED && (c->logf || c->d.log_memory || c->sh.records)) vt__log_put_record(c, kind, ndim, dims, &c->ents);
    } else {
        /* auditor: read this point's record, resolve entries against our own
           x' and e' before rounding, round everything, then put the entries */
        int64_t ne = 0, k;
        double *gx, *ge;
        if (vt__log_get_record(c, kind, ndim, dims, n, &c->rents, &ne, &c->crents) != VT_OK) return;
        gx = (double *)vt__arena_alloc(&c->scratch, sizeof(double) * (size_t)(2 * ne + 1));
        if (!gx) { vt__fail(c, VT_ERR_NOMEM, "out of memory for %lld log entries", (long long)ne); return; }
        ge = gx + ne;
        if (lz)
            for (k = 0; k < ne; k++) { gx[k] = x[c->rents[k].i]; ge[k] = vt__lazy_e(lz, c->rents[k].i); }
        else be->gather(c, x, e, c->rents, ne, gx, ge);
        for (k = 0; k < ne; k++) {
            vt__rent *en = &c->rents[k];
            /* a calibrated bound (ef < 1) only decides what the trainer logs;
               an entry is plausible within the sound interval, and a compact
               one decodes within it (COMPACT ENTRIES) */
            double xv = gx[k];
            int32_t kl, kh;
            float r;
            int d;
            if (xv != xv) { /* the replay's own value: no interval to read an entry in (the trainer's was a number) */
                vt__pt_name(kind, ndim, dims, nm, sizeof nm);
                vt__fail(c, VT_ERR_NONFINITE, "the replay made NaN at step %lld, point %lld (%s), index %lld, where the log "
                         "has an entry: the trainer's value there was a number",
                         (long long)c->step_no, (long long)c->point, nm, (long long)en->i);
                return;
            }
            d = vt__decode_entry(xv, e ? ge[k] : 0, en->full, en->v, &r, &kl, &kh);
            if (d) {
                vt__pt_name(kind, ndim, dims, nm, sizeof nm);
                if (d == 1)
                    vt__fail(c, VT_ERR_IMPLAUSIBLE,
                             "implausible log entry at step %lld, point %lld (%s), index %lld: a compact entry (low 8 bits %02x), "
                             "but the auditor's interval [%.9g, %.9g] around its own value %.17g holds %lld values: an honest "
                             "trainer writes all 32 bits there",
                             (long long)c->step_no, (long long)c->point, nm, (long long)en->i, (unsigned)en->v,
                             (double)vt__unkey(kl), (double)vt__unkey(kh), xv, (long long)kh - kl + 1);
                else
                    vt__fail(c, VT_ERR_IMPLAUSIBLE,
                             "implausible log entry at step %lld, point %lld (%s), index %lld: log value %.9g (bits %08x%s) "
                             "is outside the auditor's interval [%.9g, %.9g] around its own value %.17g",
                             (long long)c->step_no, (long long)c->point, nm, (long long)en->i, (double)r,
                             (unsigned)en->v, en->full ? "" : ", low 8 bits of key",
                             (double)vt__unkey(kl), (double)vt__unkey(kh), xv);
                return;
            }
            if (vt__fbits(r) != vt__fbits((float)xv)) {
                c->stats.corrections++;
                if (kind >= 0 && kind < VT_OP_COUNT * 8) c->kstats[kind].corrections++;
            }
            if (kh > kl) { /* the trainer's freedom at this entry */
                double bits = log2((double)((int64_t)kh - kl + 1));
                c->stats.multi++;
                c->stats.freedom_bits += bits;
                if (kind >= 0 && kind < VT_OP_COUNT * 8) { c->kstats[kind].multi++; c->kstats[kind].freedom_bits += bits; }
            }
            vt__ents_push(c, &c->ents, en->i, r, en->full);
        }
        bad = be->cast(c, x, n, 0); /* plain rounding for the rest */
        if (bad >= 0) goto nonfinite;
        be->put(c, x, &c->ents);
        c->stats.entries += ne;
        c->chunk_points++;
        c->chunk_entries += ne;
    }
    if (kind >= 0 && kind < VT_OP_COUNT * 8) c->kstats[kind].entries += c->ents.n;
    c->point++;
    return;
nonfinite:
    vt__pt_name(kind, ndim, dims, nm, sizeof nm);
    vt__fail(c, VT_ERR_NONFINITE, "non-finite value (NaN) at step %lld, point %lld (%s), element %lld: check the inputs of this step",
             (long long)c->step_no, (long long)c->point, nm, (long long)bad);
}

/* ==========================================================================
   >>gemm  blocked binary64 matrix product with its error bound

   C[M,N] = C0 + bias[N] + sum_k A[m,k] B[k,n], where C0 is C's old value when
   accumulating and 0 otherwise. A and B are read through strides, so any
   transpose is free. K is split into chunks of `kchunk` terms: each chunk's
   partial product P_b is an order-free sum (k-blocks, micro-kernel order,
   fma: anything); the partials are then added to C in chunk order,
   C = ((C0 + P_1) + P_2) + ... . With one chunk the whole thing is one
   order-free sum of K + 2 terms.

   Bound (per element). S = sum_k |a_mk b_kn| <= min(|a_m|_2 |b_n|_2,
   max|a_m| sum|b_n|, sum|a_m| max|b_n|), computed from per-row and
   per-column statistics in O((M+N)K). The terms (products of binary32
   values, C0, bias) are exact binary64 values, so a sum of n of them rounds
   n - 1 times (vt__gsum). One chunk: e = gsum(K + [C0] + [bias]) (S + |C0| +
   |bias|). Chunks of length kc, nch of them: each partial is within
   gsum(kc) S_b of exact, and the nch - 1 + [C0] ordered additions add at
   most gamma(nch - 1 + [C0]) (|C0| + sum |P_b|), so e = (gsum(kc) +
   gamma(nch - 1 + [C0])(1 + gsum(kc))) (S + |C0|). A weight gradient over B
   sequences of T rows costs (T + B) u S instead of B T u S: the
   "fixed-order outer reduction" lever.
   Products of binary32 values are exact, so when S + |C0| + |bias| is below
   2^(L+53), L the lowest set bit any term can have (from per-row and
   per-column minima), every order computes the exact result and e = 0.

   Micro-kernel: MR x NR = 6 x 8 doubles held in registers (12 AVX2
   accumulators), k-blocks of `block` (256), packing into panels that are
   contiguous in k. With AVX2 and FMA it is written with intrinsics (the
   compilers did not keep the plain-C accumulators in registers: 9 against
   36 GFLOP/s per core, see bench/RESULTS.md); elsewhere the plain C loop
   below, with fma() where the hardware has it. On a CPU with AVX-512 a
   12 x 16 kernel (24 accumulators of 8) is chosen at run time; every
   kernel computes each element the same way (a zero accumulator, the
   k-block's terms in k order, then t = acc or t + acc), so they agree bit
   for bit and the tile sizes are free. Column panels are NC = 1024 wide on
   one thread, so A's block is packed once per 1024 columns (B's k-block
   panel, 2 MiB, then sits in L3; each of its micro-panels is read once per
   MC rows), and 512 on more, where every tile packs its own B panel. vt__gemm_naive is the
   reference all are tested against (tests/test_core.c).
   ========================================================================== */

#define VT__MR 6
#define VT__NR 8
#define VT__NRF 16
#define VT__MC 96
#define VT__NC 1024
typedef char vt__mc_whole[VT__NR <= 16 && VT__MC % VT__MR == 0 ? 1 : -1]; /* vt__gemm_chunks_tile's L */

#ifdef VT__AVX2
/* the same micro-kernel in AVX2 registers: 12 accumulators of 4 doubles */
static void vt__ukr64_avx2(int64_t kc, const double *a, const double *b, double *t, int64_t ldt, int mr, int nr,
                           int first, int usefma) {
    __m256d c00 = _mm256_setzero_pd(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256d c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    double acc[VT__MR][VT__NR];
    int64_t k;
    int i, j;
    for (i = 0; i < mr; i++) { /* the tile's rows of t, while the products run */
        _mm_prefetch((const char *)(t + i * ldt), _MM_HINT_T0);
        _mm_prefetch((const char *)(t + i * ldt + VT__NR - 1), _MM_HINT_T0);
    }
#define VT__ROW(r, OP)                                                                             \
    { __m256d ar = _mm256_broadcast_sd(a + k * VT__MR + r); c##r##0 = OP(ar, b0, c##r##0); c##r##1 = OP(ar, b1, c##r##1); }
#define VT__FMA(x, y, z) _mm256_fmadd_pd(x, y, z)
#define VT__MULADD(x, y, z) _mm256_add_pd(_mm256_mul_pd(x, y), z)
    if (usefma) {
        for (k = 0; k < kc; k++) {
            __m256d b0 = _mm256_loadu_pd(b + k * VT__NR), b1 = _mm256_loadu_pd(b + k * VT__NR + 4);
            VT__ROW(0, VT__FMA) VT__ROW(1, VT__FMA) VT__ROW(2, VT__FMA)
            VT__ROW(3, VT__FMA) VT__ROW(4, VT__FMA) VT__ROW(5, VT__FMA)
        }
    } else {
        for (k = 0; k < kc; k++) {
            __m256d b0 = _mm256_loadu_pd(b + k * VT__NR), b1 = _mm256_loadu_pd(b + k * VT__NR + 4);
            VT__ROW(0, VT__MULADD) VT__ROW(1, VT__MULADD) VT__ROW(2, VT__MULADD)
            VT__ROW(3, VT__MULADD) VT__ROW(4, VT__MULADD) VT__ROW(5, VT__MULADD)
        }
    }
#undef VT__ROW
#undef VT__FMA
#undef VT__MULADD
    if (mr == VT__MR && nr == VT__NR) {
        double *r0 = t, *r1 = t + ldt, *r2 = t + 2 * ldt, *r3 = t + 3 * ldt, *r4 = t + 4 * ldt, *r5 = t + 5 * ldt;
        if (first) {
            _mm256_storeu_pd(r0, c00); _mm256_storeu_pd(r0 + 4, c01); _mm256_storeu_pd(r1, c10); _mm256_storeu_pd(r1 + 4, c11);
            _mm256_storeu_pd(r2, c20); _mm256_storeu_pd(r2 + 4, c21); _mm256_storeu_pd(r3, c30); _mm256_storeu_pd(r3 + 4, c31);
            _mm256_storeu_pd(r4, c40); _mm256_storeu_pd(r4 + 4, c41); _mm256_storeu_pd(r5, c50); _mm256_storeu_pd(r5 + 4, c51);
        } else {
#define VT__ACCST(p, v) _mm256_storeu_pd(p, _mm256_add_pd(_mm256_loadu_pd(p), v))
            VT__ACCST(r0, c00); VT__ACCST(r0 + 4, c01); VT__ACCST(r1, c10); VT__ACCST(r1 + 4, c11);
            VT__ACCST(r2, c20); VT__ACCST(r2 + 4, c21); VT__ACCST(r3, c30); VT__ACCST(r3 + 4, c31);
            VT__ACCST(r4, c40); VT__ACCST(r4 + 4, c41); VT__ACCST(r5, c50); VT__ACCST(r5 + 4, c51);
#undef VT__ACCST
        }
        return;
    }
    _mm256_storeu_pd(acc[0], c00); _mm256_storeu_pd(acc[0] + 4, c01); _mm256_storeu_pd(acc[1], c10); _mm256_storeu_pd(acc[1] + 4, c11);
    _mm256_storeu_pd(acc[2], c20); _mm256_storeu_pd(acc[2] + 4, c21); _mm256_storeu_pd(acc[3], c30); _mm256_storeu_pd(acc[3] + 4, c31);
    _mm256_storeu_pd(acc[4], c40); _mm256_storeu_pd(acc[4] + 4, c41); _mm256_storeu_pd(acc[5], c50); _mm256_storeu_pd(acc[5] + 4, c51);
    for (i = 0; i < mr; i++)
        for (j = 0; j < nr; j++) t[i * ldt + j] = first ? acc[i][j] : t[i * ldt + j] + acc[i][j];
}
#endif

static void vt__ukr64(int64_t kc, const double *a, const double *b, double *t, int64_t ldt, int mr, int nr,
                      int first, int usefma) {
    double acc[VT__MR][VT__NR];
    int i, j;
    int64_t k;
#ifdef VT__AVX2
    vt__ukr64_avx2(kc, a, b, t, ldt, mr, nr, first, usefma);
    return;
#endif
    for (i = 0; i < VT__MR; i++)
        for (j = 0; j < VT__NR; j++) acc[i][j] = 0;
    if (usefma) {
        for (k = 0; k < kc; k++) {
            const double *ak = a + k * VT__MR, *bk = b + k * VT__NR;
            for (i = 0; i < VT__MR; i++)
                for (j = 0; j < VT__NR; j++) acc[i][j] = fma(ak[i], bk[j], acc[i][j]);
        }
    } else {
        for (k = 0; k < kc; k++) {
            const double *ak = a + k * VT__MR, *bk = b + k * VT__NR;
            for (i = 0; i < VT__MR; i++)
                for (j = 0; j < VT__NR; j++) acc[i][j] = acc[i][j] + ak[i] * bk[j];
        }
    }
    if (first) {
        for (i = 0; i < mr; i++)
            for (j = 0; j < nr; j++) t[i * ldt + j] = acc[i][j];
    } else if (mr == VT__MR && nr == VT__NR) {
        for (i = 0; i < VT__MR; i++)
            for (j = 0; j < VT__NR; j++) t[i * ldt + j] += acc[i][j];
    } else {
        for (i = 0; i < mr; i++)
            for (j = 0; j < nr; j++) t[i * ldt + j] += acc[i][j];
    }
}

#ifdef VT__AVX2
static void vt__ukr32_avx2(int64_t kc, const float *a, const float *b, double *t, int64_t ldt, int mr, int nr,
                           int first, int usefma) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    float acc[VT__MR][VT__NRF];
    int64_t k;
    int i, j;
    for (i = 0; i < mr; i++) { /* the tile's rows of t (16 doubles: two lines), while the products run */
        _mm_prefetch((const char *)(t + i * ldt), _MM_HINT_T0);
        _mm_prefetch((const char *)(t + i * ldt + VT__NRF - 1), _MM_HINT_T0);
    }
#define VT__ROW(r, OP)                                                                             \
    { __m256 ar = _mm256_broadcast_ss(a + k * VT__MR + r); c##r##0 = OP(ar, b0, c##r##0); c##r##1 = OP(ar, b1, c##r##1); }
#define VT__FMA(x, y, z) _mm256_fmadd_ps(x, y, z)
#define VT__MULADD(x, y, z) _mm256_add_ps(_mm256_mul_ps(x, y), z)
    if (usefma) {
        for (k = 0; k < kc; k++) {
            __m256 b0 = _mm256_loadu_ps(b + k * VT__NRF), b1 = _mm256_loadu_ps(b + k * VT__NRF + 8);
            VT__ROW(0, VT__FMA) VT__ROW(1, VT__FMA) VT__ROW(2, VT__FMA)
            VT__ROW(3, VT__FMA) VT__ROW(4, VT__FMA) VT__ROW(5, VT__FMA)
        }
    } else {
        for (k = 0; k < kc; k++) {
            __m256 b0 = _mm256_loadu_ps(b + k * VT__NRF), b1 = _mm256_loadu_ps(b + k * VT__NRF + 8);
            VT__ROW(0, VT__MULADD) VT__ROW(1, VT__MULADD) VT__ROW(2, VT__MULADD)
            VT__ROW(3, VT__MULADD) VT__ROW(4, VT__MULADD) VT__ROW(5, VT__MULADD)
        }
    }
#undef VT__ROW
#undef VT__FMA
#undef VT__MULADD
    if (mr == VT__MR && nr == VT__NRF) { /* the loop below, a vector at a time: (double)acc, or
                                            vt__f32r(t + (double)acc) by vcvtpd2ps (RNE, as the cast) */
#define VT__ST32(p, v)                                                                                           \
    if (first) { _mm256_storeu_pd(p, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));                                \
                 _mm256_storeu_pd((p) + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))); }                      \
    else { _mm256_storeu_pd(p, _mm256_cvtps_pd(_mm256_cvtpd_ps(_mm256_add_pd(_mm256_loadu_pd(p),                 \
                                               _mm256_cvtps_pd(_mm256_castps256_ps128(v)))))); \
           _mm256_storeu_pd((p) + 4, _mm256_cvtps_pd(_mm256_cvtpd_ps(_mm256_add_pd(_mm256_loadu_pd((p) + 4),     \
                                                     _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)))))); }
#define VT__ROW32(r) { VT__ST32(t + (r) * ldt, c##r##0) VT__ST32(t + (r) * ldt + 8, c##r##1) }
        VT__ROW32(0) VT__ROW32(1) VT__ROW32(2) VT__ROW32(3) VT__ROW32(4) VT__ROW32(5)
#undef VT__ROW32
#undef VT__ST32
        return;
    }
    _mm256_storeu_ps(acc[0], c00); _mm256_storeu_ps(acc[0] + 8, c01); _mm256_storeu_ps(acc[1], c10); _mm256_storeu_ps(acc[1] + 8, c11);
    _mm256_storeu_ps(acc[2], c20); _mm256_storeu_ps(acc[2] + 8, c21); _mm256_storeu_ps(acc[3], c30); _mm256_storeu_ps(acc[3] + 8, c31);
    _mm256_storeu_ps(acc[4], c40); _mm256_storeu_ps(acc[4] + 8, c41); _mm256_storeu_ps(acc[5], c50); _mm256_storeu_ps(acc[5] + 8, c51);
    for (i = 0; i < mr; i++)
        for (j = 0; j < nr; j++) t[i * ldt + j] = first ? (double)acc[i][j] : vt__f32r(t[i * ldt + j] + (double)acc[i][j]);
}
#endif

/* binary32 micro-kernel for VT_MODE_NATIVE: products and sums in float */
static void vt__ukr32(int64_t kc, const float *a, const float *b, double *t, int64_t ldt, int mr, int nr,
                      int first, int usefma) {
    float acc[VT__MR][VT__NRF];
    int i, j;
    int64_t k;
#ifdef VT__AVX2
    vt__ukr32_avx2(kc, a, b, t, ldt, mr, nr, first, usefma);
    return;
#endif
    for (i = 0; i < VT__MR; i++)
        for (j = 0; j < VT__NRF; j++) acc[i][j] = 0;
    for (k = 0; k < kc; k++) {
        const float *ak = a + k * VT__MR, *bk = b + k * VT__NRF;
        for (i = 0; i < VT__MR; i++)
            for (j = 0; j < VT__NRF; j++)
                acc[i][j] = usefma ? fmaf(ak[i], bk[j], acc[i][j]) : acc[i][j] + ak[i] * bk[j];
    }
    for (i = 0; i < mr; i++)
        for (j = 0; j < nr; j++) t[i * ldt + j] = first ? (double)acc[i][j] : vt__f32r(t[i * ldt + j] + (double)acc[i][j]);
}

/* AVX-512 (issue 15). The same arithmetic per output element as the kernels
   above - a zero accumulator, one fma (or product and sum) per k in k order
   inside the k-block, then t = acc or t + acc - in registers twice as wide,
   so the values are bit for bit those of the AVX2 and the plain-C kernels
   (tests/test_core.c: gemm_avx512_matches). Tiles are MR x NR = 12 x 16
   doubles (24 accumulators of 8; 12 x 32 floats for native): 2 loads of B and
   12 broadcasts of A feed 24 fma per k. Compiled for AVX-512 by a target
   attribute, so the file builds without -mavx512f, and chosen at run time
   (vt__gemm_isa): one binary serves AVX2 and AVX-512 machines.
   VTRAIN_SIMD=avx2 in the environment keeps the AVX2 kernels (to measure
   them on an AVX-512 machine). */
#ifdef VT__AVX512
#define VT__MR5 12
#define VT__NR5 16
#define VT__NRF5 32
typedef char vt__tile_fits[VT__NR5 <= 16 && VT__MC % VT__MR5 == 0 ? 1 : -1]; /* vt__gemm_chunks_tile's L */
#define VT__R12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

VT__T512 static void vt__ukr64_avx512(int64_t kc, const double *a, const double *b, double *t, int64_t ldt, int mr,
                                      int nr, int first, int usefma) {
#define VT__DECL(r) __m512d c##r##0 = _mm512_setzero_pd(), c##r##1 = _mm512_setzero_pd();
    VT__R12(VT__DECL)
#undef VT__DECL
    double acc[VT__MR5][VT__NR5];
    int64_t k, k2;
    int i, j;
    if (kc < 8 * 2 * VT__MR5) /* a short block: the tile's rows of t at once, while the products run */
        for (i = 0; i < mr; i++) {
            _mm_prefetch((const char *)(t + i * ldt), _MM_HINT_T0);
            _mm_prefetch((const char *)(t + i * ldt + VT__NR5 - 1), _MM_HINT_T0);
        }
    /* Prefetches (they change no value). A's micro-panel streams from L2:
       each pair of k steps asks for the three lines (2 x 12 doubles) 768
       bytes ahead. t's 24 lines come from L3 or memory: all 24 at once took
       the L1 fill buffers from A's stream (bench/RESULTS.md, issue 15 round
       4: 0.72-0.87x OpenBLAS's kernel with 192 rows of A, 0.88-0.94x with
       this), so one line into L2 every 8 k steps, while the products run. */
#define VT__PFA(k) { const char *pa = (const char *)(a + (k) * VT__MR5) + 768; \
        _mm_prefetch(pa, _MM_HINT_T0); _mm_prefetch(pa + 64, _MM_HINT_T0); _mm_prefetch(pa + 128, _MM_HINT_T0); }
#define VT__PFT(k) if (((k) & 7) == 0 && (k) < 8 * 2 * VT__MR5 && ((k) >> 4) < mr) \
        _mm_prefetch((const char *)(t + ((k) >> 4) * ldt + (((k) >> 3) & 1) * 8), _MM_HINT_T1);
#define VT__FMA(r) { __m512d ar = _mm512_set1_pd(a[k * VT__MR5 + r]); \
        c##r##0 = _mm512_fmadd_pd(ar, b0, c##r##0); c##r##1 = _mm512_fmadd_pd(ar, b1, c##r##1); }
#define VT__MULADD(r) { __m512d ar = _mm512_set1_pd(a[k * VT__MR5 + r]); \
        c##r##0 = _mm512_add_pd(_mm512_mul_pd(ar, b0), c##r##0); c##r##1 = _mm512_add_pd(_mm512_mul_pd(ar, b1), c##r##1); }
#define VT__STEP(OP) { __m512d b0 = _mm512_loadu_pd(b + k * VT__NR5), b1 = _mm512_loadu_pd(b + k * VT__NR5 + 8); \
        VT__R12(OP) }
    k2 = kc & ~(int64_t)1;
    if (usefma) {
        for (k = 0; k < k2;) {
            VT__PFA(k) VT__PFT(k)
            VT__STEP(VT__FMA) k++;
            VT__STEP(VT__FMA) k++;
        }
        if (k < kc) VT__STEP(VT__FMA)
    } else {
        for (k = 0; k < k2;) {
            VT__PFA(k) VT__PFT(k)
            VT__STEP(VT__MULADD) k++;
            VT__STEP(VT__MULADD) k++;
        }
        if (k < kc) VT__STEP(VT__MULADD)
    }
#undef VT__FMA
#undef VT__MULADD
#undef VT__STEP
#undef VT__PFA
#undef VT__PFT
    if (mr == VT__MR5 && nr == VT__NR5) {
        if (first) {
#define VT__ST(r) _mm512_storeu_pd(t + r * ldt, c##r##0); _mm512_storeu_pd(t + r * ldt + 8, c##r##1);
            VT__R12(VT__ST)
#undef VT__ST
        } else {
#define VT__ST(r) _mm512_storeu_pd(t + r * ldt, _mm512_add_pd(_mm512_loadu_pd(t + r * ldt), c##r##0)); \
                  _mm512_storeu_pd(t + r * ldt + 8, _mm512_add_pd(_mm512_loadu_pd(t + r * ldt + 8), c##r##1));
            VT__R12(VT__ST)
#undef VT__ST
        }
        return;
    }
#define VT__ST(r) _mm512_storeu_pd(acc[r], c##r##0); _mm512_storeu_pd(acc[r] + 8, c##r##1);
    VT__R12(VT__ST)
#undef VT__ST
    for (i = 0; i < mr; i++)
        for (j = 0; j < nr; j++) t[i * ldt + j] = first ? acc[i][j] : t[i * ldt + j] + acc[i][j];
}

/* t = first ? (double)acc : RNE32(t + (double)acc), 8 at a time (the casts
   and the sum as written in vt__ukr32; the masked conversions, all lanes on,
   because g++ 12 warns about the unmasked ones' undefined source) */
VT__T512 static void vt__acc32_avx512(double *t, __m256 acc, int first) {
    __m512d v = _mm512_mask_cvtps_pd(_mm512_setzero_pd(), 0xff, acc);
    if (!first)
        v = _mm512_mask_cvtps_pd(_mm512_setzero_pd(), 0xff,
                                 _mm512_mask_cvtpd_ps(_mm256_setzero_ps(), 0xff, _mm512_add_pd(_mm512_loadu_pd(t), v)));
    _mm512_storeu_pd(t, v);
}

VT__T512 static void vt__ukr32_avx512(int64_t kc, const float *a, const float *b, double *t, int64_t ldt, int mr,
                                      int nr, int first, int usefma) {
#define VT__DECL(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = _mm512_setzero_ps();
    VT__R12(VT__DECL)
#undef VT__DECL
    float acc[VT__MR5][VT__NRF5];
    int64_t k;
    int i, j;
#define VT__FMA(r) { __m512 ar = _mm512_set1_ps(a[k * VT__MR5 + r]); \
        c##r##0 = _mm512_fmadd_ps(ar, b0, c##r##0); c##r##1 = _mm512_fmadd_ps(ar, b1, c##r##1); }
#define VT__MULADD(r) { __m512 ar = _mm512_set1_ps(a[k * VT__MR5 + r]); \
        c##r##0 = _mm512_add_ps(_mm512_mul_ps(ar, b0), c##r##0); c##r##1 = _mm512_add_ps(_mm512_mul_ps(ar, b1), c##r##1); }
    if (usefma) {
        for (k = 0; k < kc; k++) {
            __m512 b0 = _mm512_loadu_ps(b + k * VT__NRF5), b1 = _mm512_loadu_ps(b + k * VT__NRF5 + 16);
            VT__R12(VT__FMA)
        }
    } else {
        for (k = 0; k < kc; k++) {
            __m512 b0 = _mm512_loadu_ps(b + k * VT__NRF5), b1 = _mm512_loadu_ps(b + k * VT__NRF5 + 16);
            VT__R12(VT__MULADD)
        }
    }
#undef VT__FMA
#undef VT__MULADD
#define VT__ST(r) _mm512_storeu_ps(acc[r], c##r##0); _mm512_storeu_ps(acc[r] + 16, c##r##1);
    VT__R12(VT__ST)
#undef VT__ST
    if (mr == VT__MR5 && nr == VT__NRF5) {
        for (i = 0; i < VT__MR5; i++)
            for (j = 0; j < VT__NRF5; j += 8) vt__acc32_avx512(t + i * ldt + j, _mm256_loadu_ps(acc[i] + j), first);
        return;
    }
    for (i = 0; i < mr; i++)
        for (j = 0; j < nr; j++) t[i * ldt + j] = first ? (double)acc[i][j] : vt__f32r(t[i * ldt + j] + (double)acc[i][j]);
}
#endif

/* The micro-kernels of a product: tile sizes and the two kernels (binary64,
   and binary32 for native mode). */
typedef void (*vt__ukr64_fn)(int64_t kc, const double *a, const double *b, double *t, int64_t ldt, int mr, int nr,
                             int first, int usefma);
typedef void (*vt__ukr32_fn)(int64_t kc, const float *a, const float *b, double *t, int64_t ldt, int mr, int nr,
                             int first, int usefma);
typedef struct { int mr, nr, nrf; vt__ukr64_fn k64; vt__ukr32_fn k32; const char *name; } vt__ukr_set;
static const vt__ukr_set vt__ukr_base = {VT__MR, VT__NR, VT__NRF, vt__ukr64, vt__ukr32,
#ifdef VT__AVX2
                                         "avx2"
#else
                                         "c"
#endif
};
#ifdef VT__AVX512
static const vt__ukr_set vt__ukr_512 = {VT__MR5, VT__NR5, VT__NRF5, vt__ukr64_avx512, vt__ukr32_avx512, "avx512"};
#endif

/* the kernels vt__isa512 chooses (>>elementary's vector forms) */
static const vt__ukr_set *vt__gemm_isa(void) {
#ifdef VT__AVX512
    return vt__isa512() ? &vt__ukr_512 : &vt__ukr_base;
#else
    return &vt__ukr_base;
#endif
}

typedef struct vt__gemm {
    vt_ctx *c;
    const vt__ord *o;
    int64_t M, N, K;
    const double *A; int64_t sam, sak;
    const double *B; int64_t sbk, sbn;
    double *C; int64_t ldc;
    int64_t kchunk, nch;
    int64_t mc, nc, tm, tn; /* tiles: tm rows of tiles (vt__gemm_row0) by tn columns of nc */
    double *part;          /* chunk-parallel partials (nch * M * N) */
    void **tbuf;           /* per-thread packing buffers */
    size_t tbytes;
    const vt__ukr_set *ks; /* the micro-kernels and their tile sizes */
    int set;               /* one chunk, C not read: the first k-block writes it (vt__gemm_set) */
    int tri;               /* square causal products (vt__mm_serial): VT__TRI_* below */
    const vt__rjob *fz;    /* A FUSED PRODUCT: the lazy rounding job applied to each finished tile, or NULL */
    const double *bias;    /* vt__gemm_run_bias: the row put into (bacc: added to) C before the products */
    int bacc;
    double *bpre;          /* SHARED B PANELS: B packed once for all tiles, or NULL (each tile packs its own) */
    int64_t *boff, bcol;   /* chunk ch's first panel at bpre + tj bcol + boff[ch] (column tile tj) */
    double **apk;          /* CHUNKS PER MICRO-TILE: per thread, A's panels of every chunk, or NULL */
    unsigned char *cfma;   /* ... and each chunk's fma choice (its one k-block's) */
    struct vt__lazy *zs;   /* STATISTICS IN THE PRODUCT'S JOB: the lazy bound whose statistics its tasks compute, or NULL */
} vt__gemm;

/* CAUSAL PRODUCTS. Attention multiplies T x T matrices that are 0 on one
   side of the diagonal. A micro-kernel sums a k-block's terms in k order
   into an accumulator that starts at +0, so a term a b with a = +-0 and b
   finite changes nothing: at the head of the block the accumulator stays
   +0 (+0 + -0 = +0, and fma(+-0, b, +0) = +0), after it acc + (+-0) = acc
   because an accumulator is never -0 (it starts at +0, and a sum that
   cancels to zero rounds to +0). So each micro-tile may run only the part
   of each k-block where its rows have nonzero terms, bit for bit what the
   full block computes (an empty part still writes or adds its +0). The
   caller guarantees the zeros and a finite B (0 Inf would be NaN).
     OUT  only outputs n <= m are wanted: tiles wholly above the diagonal
          are skipped and those outputs left unwritten;
     KLE  A[m][k] = 0 for k > m: a tile of rows m..m' runs k <= m';
     KGE  A[m][k] = 0 for k < m: a tile of rows m..m' runs k >= m. */
#define VT__TRI_NONE 0
#define VT__TRI_OUT 1
#define VT__TRI_KLE 2
#define VT__TRI_KGE 3

/* the k-blocks of chunk ch: their size and visiting order, fma per block */
static void vt__gemm_blocks(const vt__gemm *g, int64_t ch, int64_t *kc, int64_t *nblk, int64_t *rot, int *rev,
                            uint64_t *fmamask) {
    int64_t len = VT__MIN(g->K, (ch + 1) * g->kchunk) - ch * g->kchunk;
    *kc = g->o->block;
    *rot = 0; *rev = 0;
    *fmamask = g->o->fma ? ~(uint64_t)0 : 0;
    if (g->o->chaos) {
        static const int64_t sizes[6] = {7, 24, 64, 100, 256, 512};
        uint64_t h = vt__ckey(g->o, (uint64_t)ch);
        *kc = sizes[h % 6];
        *fmamask = vt__mix(h);
        *rev = (int)((h >> 50) & 1);
    }
    *nblk = (len + *kc - 1) / *kc;
    if (g->o->chaos && *nblk > 0) *rot = (int64_t)((vt__mix(*fmamask) >> 3) % (uint64_t)*nblk);
}

/* a causal product's micro-tile (g->tri): rows r0 .. r0 + nr - 1, columns
   from n, k-block [k0, k0 + kb). 0: the tile is wholly above the diagonal
   (VT__TRI_OUT: nothing to compute); else [*lo, *hi) is the part of the
   k-block where its rows have nonzero terms (VT__TRI_KLE: k <= row, KGE:
   k >= row), possibly empty. */
static int vt__tri_krange(int tri, int64_t r0, int64_t nr, int64_t n, int64_t k0, int64_t kb, int64_t *lo, int64_t *hi) {
    *lo = 0;
    *hi = kb;
    if (tri == VT__TRI_OUT && n >= r0 + nr) return 0;
    if (tri == VT__TRI_KLE) *hi = VT__MAX(0, VT__MIN(kb, r0 + nr - k0));
    if (tri == VT__TRI_KGE) *lo = VT__MIN(kb, VT__MAX(0, r0 - k0));
    if (*hi < *lo) *hi = *lo;
    return 1;
}

/* Packing: panels of MR rows of A (NR columns of B) interleaved along k.
   Each reads its source in the order its layout is contiguous. Copies only:
   how they move the values changes none of them. */

#ifdef VT__AVX2
/* a 4 x 4 transpose in registers: v[q] becomes lane q of the four inputs */
static void vt__tr4(__m256d *v) {
    __m256d t0 = _mm256_unpacklo_pd(v[0], v[1]), t1 = _mm256_unpackhi_pd(v[0], v[1]);
    __m256d t2 = _mm256_unpacklo_pd(v[2], v[3]), t3 = _mm256_unpackhi_pd(v[2], v[3]);
    v[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    v[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    v[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    v[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}
#endif

#ifdef VT__AVX2
/* streams c .. c + 3 of a panel of w, k .. k + 3: p[(k + q) w + c + i] =
   src[(c + i) ld + k + q], as one 4 x 4 transpose */
static VT__INLINE void vt__pack_group4(double *p, int w, const double *src, int64_t ld, int64_t k, int c) {
    const double *s = src + c * ld + k;
    __m256d v[4];
    int q;
    for (q = 0; q < 4; q++) v[q] = _mm256_loadu_pd(s + q * ld);
    vt__tr4(v);
    for (q = 0; q < 4; q++) _mm256_storeu_pd(p + (k + q) * w + c, v[q]);
}
#endif

/* p[k w + c] = src[c ld + k] for c < w, k in [klo, khi): w streams along k
   into one interleaved panel (w = 6, 8, 12 or 16: the tile sizes), four k
   at a time as 4 x 4 transposes in registers where AVX2 has them */
static void vt__pack_streams(double *p, const double *src, int64_t ld, int64_t klo, int64_t khi, int w) {
    int64_t k = klo;
    int c;
#ifdef VT__AVX2
    for (; k + 4 <= khi; k += 4) {
        for (c = 0; c + 4 <= w; c += 4) vt__pack_group4(p, w, src, ld, k, c);
        if (c + 2 == w) { /* the last two streams (w = 6) */
            const double *s = src + c * ld + k;
            __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + ld);
            __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
            double *d = p + k * w + c;
            _mm_storeu_pd(d, _mm256_castpd256_pd128(t0));
            _mm_storeu_pd(d + w, _mm256_castpd256_pd128(t1));
            _mm_storeu_pd(d + 2 * w, _mm256_extractf128_pd(t0, 1));
            _mm_storeu_pd(d + 3 * w, _mm256_extractf128_pd(t1, 1));
        } else
            for (; c < w; c++) {
                int64_t q;
                for (q = 0; q < 4; q++) p[(k + q) * w + c] = src[c * ld + k + q];
            }
    }
#endif
    for (; k < khi; k++)
        for (c = 0; c < w; c++) p[k * w + c] = src[c * ld + k];
}

/* panel j of np (at p + j ps): p[k w + c] = src[k ld + j w + c] for c < w,
   k in [klo, khi). Each source line is read once, in order, into every
   panel (panel by panel, a wide source strided by a page or more per k is a
   stream of cache and TLB misses), w values at a time as whole vectors
   (w as above) */
static void vt__pack_rows(double *p, int64_t ps, int64_t np, const double *src, int64_t ld, int64_t klo, int64_t khi, int w) {
    int64_t k, j;
    int c;
    for (k = klo; k < khi; k++) {
        const double *s = src + k * ld;
        double *d = p + k * w;
#ifdef VT__AVX2
        if (w % 4 == 0) {
            for (j = 0; j < np; j++, s += w, d += ps)
                for (c = 0; c < w; c += 4) _mm256_storeu_pd(d + c, _mm256_loadu_pd(s + c));
            continue;
        }
        if (w == 6) {
            for (j = 0; j < np; j++, s += w, d += ps) {
                _mm256_storeu_pd(d, _mm256_loadu_pd(s));
                _mm_storeu_pd(d + 4, _mm_loadu_pd(s + 4));
            }
            continue;
        }
#endif
        for (j = 0; j < np; j++, s += w, d += ps)
            for (c = 0; c < w; c++) d[c] = s[c];
    }
}

/* a partial panel: p[k w + c] = src[c ld + k] for the r < w streams there
   are, 0 for the rest of its w, k in [klo, khi) (vt__pack_streams's
   transposes for whole groups of four streams; the last panel of a product
   whose rows are not a whole number of panels went value by value) */
static void vt__pack_part(double *p, int w, const double *src, int64_t ld, int64_t klo, int64_t khi, int r) {
    int64_t k = klo;
    int c;
#ifdef VT__AVX2
    for (; k + 4 <= khi; k += 4) {
        int64_t q;
        for (c = 0; c + 4 <= r; c += 4) vt__pack_group4(p, w, src, ld, k, c);
        for (q = 0; q < 4; q++) {
            int cc;
            for (cc = c; cc < r; cc++) p[(k + q) * w + cc] = src[cc * ld + k + q];
            for (; cc < w; cc++) p[(k + q) * w + cc] = 0.0;
        }
    }
#endif
    for (; k < khi; k++) {
        for (c = 0; c < r; c++) p[k * w + c] = src[c * ld + k];
        for (; c < w; c++) p[k * w + c] = 0.0;
    }
}

/* a partial panel whose streams lie side by side in each source line:
   p[k w + c] = src[k ld + c] for c < r, 0 for the rest of its w */
static void vt__pack_runs(double *p, int w, const double *src, int64_t ld, int64_t klo, int64_t khi, int r) {
    int64_t k;
    int c;
    for (k = klo; k < khi; k++) {
        memcpy(p + k * w, src + k * ld, sizeof(double) * (size_t)r);
        for (c = r; c < w; c++) p[k * w + c] = 0.0;
    }
}

static void vt__pack_a64(const vt__gemm *g, double *ap, int64_t m0, int64_t mb, int64_t k0, int64_t kb) {
    int64_t ir, k;
    int i, MR = g->ks->mr;
    if (g->sam == 1 && g->sak != 1 && !g->tri && mb >= MR) { /* columns contiguous along m: the full panels row by row */
        vt__pack_rows(ap, MR * kb, mb / MR, g->A + k0 * g->sak + m0, g->sak, 0, kb, MR);
        if (mb % MR == 0) return;
    }
    for (ir = 0; ir < mb; ir += MR) {
        double *p = ap + ir * kb;
        int full = ir + MR <= mb;
        int64_t klo, khi; /* a causal product: only the part the panel's micro-tiles read (column 0: never skipped) */
        vt__tri_krange(g->tri, m0 + ir, VT__MIN(MR, mb - ir), 0, k0, kb, &klo, &khi);
        if (full && g->sak == 1) /* rows contiguous along k: MR streams in, one out */
            vt__pack_streams(p, g->A + (m0 + ir) * g->sam + k0, g->sam, klo, khi, MR);
        else if (full && g->sam == 1) { /* columns contiguous along m (a causal product: its panels' own k) */
            if (!g->tri) continue; /* done above */
            vt__pack_rows(p, 0, 1, g->A + k0 * g->sak + m0 + ir, g->sak, klo, khi, MR);
        } else if (g->sak == 1) /* the last panel, partial */
            vt__pack_part(p, MR, g->A + (m0 + ir) * g->sam + k0, g->sam, klo, khi, (int)(mb - ir));
        else if (g->sam == 1) /* the last panel, partial, its rows along m */
            vt__pack_runs(p, MR, g->A + k0 * g->sak + m0 + ir, g->sak, klo, khi, (int)(mb - ir));
        else {
            for (k = klo; k < khi; k++)
                for (i = 0; i < MR; i++)
                    p[k * MR + i] = (ir + i < mb) ? g->A[(m0 + ir + i) * g->sam + (k0 + k) * g->sak] : 0.0;
        }
    }
}
static void vt__pack_b64(const vt__gemm *g, double *bp, int64_t n0, int64_t nb, int64_t k0, int64_t kb) {
    int64_t jr, k, nfull;
    int j, NR = g->ks->nr;
    nfull = (g->sbn == 1 || g->sbk == 1) ? nb / NR * NR : 0;
    if (g->sbn == 1) /* rows of B contiguous along n: each row once, into every panel */
        vt__pack_rows(bp, NR * kb, nfull / NR, g->B + k0 * g->sbk + n0, g->sbk, 0, kb, NR);
    else if (g->sbk == 1) /* columns of B contiguous along k (B = W^T): NR streams in, one out */
        for (jr = 0; jr < nfull; jr += NR) vt__pack_streams(bp + jr * kb, g->B + (n0 + jr) * g->sbn + k0, g->sbn, 0, kb, NR);
    for (jr = nfull; jr < nb; jr += NR) {
        double *p = bp + jr * kb;
        if (g->sbk == 1 || g->sbn == 1) { /* the last panel, partial: streams or runs as above */
            if (g->sbk == 1) vt__pack_part(p, NR, g->B + (n0 + jr) * g->sbn + k0, g->sbn, 0, kb, (int)(nb - jr));
            else vt__pack_runs(p, NR, g->B + k0 * g->sbk + n0 + jr, g->sbk, 0, kb, (int)(nb - jr));
            continue;
        }
        for (k = 0; k < kb; k++)
            for (j = 0; j < NR; j++)
                p[k * NR + j] = (jr + j < nb) ? g->B[(k0 + k) * g->sbk + (n0 + jr + j) * g->sbn] : 0.0;
    }
}
/* vt__pack_streams for the binary32 kernels: p[k w + c] = (float)src[c ld + k],
   k in [klo, khi), the casts after the transposes (a cast is per value: where it
   happens changes none) */
static void vt__pack_streams32(float *p, const double *src, int64_t ld, int64_t klo, int64_t khi, int w) {
    int64_t k = klo;
    int c;
#ifdef VT__AVX2
    for (; k + 4 <= khi; k += 4) {
        int q;
        for (c = 0; c + 4 <= w; c += 4) {
            __m256d v[4];
            for (q = 0; q < 4; q++) v[q] = _mm256_loadu_pd(src + (c + q) * ld + k);
            vt__tr4(v);
            for (q = 0; q < 4; q++) _mm_storeu_ps(p + (k + q) * w + c, _mm256_cvtpd_ps(v[q]));
        }
        for (; c < w; c++)
            for (q = 0; q < 4; q++) p[(k + q) * w + c] = (float)src[c * ld + k + q];
    }
#endif
    for (; k < khi; k++)
        for (c = 0; c < w; c++) p[k * w + c] = (float)src[c * ld + k];
}
/* vt__pack_rows for the binary32 kernels: np panels of w values a k (panel
   j at p + j ps), each source row src + k ld read once, in order, and cast */
static void vt__pack_rows32(float *p, int64_t ps, int64_t np, const double *src, int64_t ld, int64_t kb, int w) {
    int64_t k, j;
    int c;
    for (k = 0; k < kb; k++) {
        const double *s = src + k * ld;
        float *d = p + k * w;
        for (j = 0; j < np; j++, s += w, d += ps)
            for (c = 0; c < w; c++) d[c] = (float)s[c];
    }
}
static void vt__pack_a32(const vt__gemm *g, float *ap, int64_t m0, int64_t mb, int64_t k0, int64_t kb) {
    int64_t ir, k;
    int i, MR = g->ks->mr;
    if (g->sam == 1 && g->sak != 1 && !g->tri && mb >= MR) { /* columns contiguous along m: the full panels row by row */
        vt__pack_rows32(ap, MR * kb, mb / MR, g->A + k0 * g->sak + m0, g->sak, kb, MR);
        if (mb % MR == 0) return;
    }
    for (ir = 0; ir < mb; ir += MR) {
        float *p = ap + ir * kb;
        int full = ir + MR <= mb;
        int64_t klo, khi; /* a causal product: only the part the panel's micro-tiles read, as vt__pack_a64 */
        vt__tri_krange(g->tri, m0 + ir, VT__MIN(MR, mb - ir), 0, k0, kb, &klo, &khi);
        if (full && g->sak == 1) /* rows contiguous along k: MR streams in, one out */
            vt__pack_streams32(p, g->A + (m0 + ir) * g->sam + k0, g->sam, klo, khi, MR);
        else if (full && g->sam == 1) { /* columns contiguous along m (A^T): MR values per k, in order */
            const double *src = g->A + k0 * g->sak + m0 + ir;
            if (!g->tri && g->sak != 1) continue; /* done above */
            for (k = klo; k < khi; k++)
                for (i = 0; i < MR; i++) p[k * MR + i] = (float)src[k * g->sak + i];
        } else
            for (k = klo; k < khi; k++)
                for (i = 0; i < MR; i++)
                    p[k * MR + i] = (ir + i < mb) ? (float)g->A[(m0 + ir + i) * g->sam + (k0 + k) * g->sak] : 0.0f;
    }
}
static void vt__pack_b32(const vt__gemm *g, float *bp, int64_t n0, int64_t nb, int64_t k0, int64_t kb) {
    int j, NRF = g->ks->nrf;
    int64_t jr, k, nfull = g->sbn == 1 ? nb / NRF * NRF : 0;
    if (nfull) /* rows of B contiguous along n: each row once, into every panel */
        vt__pack_rows32(bp, NRF * kb, nfull / NRF, g->B + k0 * g->sbk + n0, g->sbk, kb, NRF);
    for (jr = nfull; jr < nb; jr += NRF) {
        float *p = bp + jr * kb;
        int full = jr + NRF <= nb;
        if (full && g->sbk == 1) /* columns contiguous along k (B = W^T): NRF streams in, one out */
            vt__pack_streams32(p, g->B + (n0 + jr) * g->sbn + k0, g->sbn, 0, kb, NRF);
        else
            for (k = 0; k < kb; k++)
                for (j = 0; j < NRF; j++)
                    p[k * NRF + j] = (jr + j < nb) ? (float)g->B[(k0 + k) * g->sbk + (n0 + jr + j) * g->sbn] : 0.0f;
    }
}

/* output rows [m0,m0+mb) x columns [n0,n0+nb) (nb <= NC), chunk ch, into t
   (ld ldt); first: t is overwritten by the chunk's partial, else accumulated
   into. Each k-block packs its B panel once and reuses it for every MC rows. */
static void vt__gemm_tile(const vt__gemm *g, int tid, int64_t m0, int64_t mb, int64_t n0, int64_t nb, int64_t ch,
                          double *t, int64_t ldt, int first) {
    int64_t kc, nblk, rot, bi, ir, jr, ms;
    int rev;
    uint64_t fm;
    int64_t cbase = ch * g->kchunk, cend = VT__MIN(g->K, cbase + g->kchunk);
    unsigned char *buf = (unsigned char *)g->tbuf[tid];
    int f32 = g->o->f32, MR = g->ks->mr, NR = g->ks->nr, NRF = g->ks->nrf;
    vt__ukr64_fn k64 = g->ks->k64;
    vt__ukr32_fn k32 = g->ks->k32;
    vt__gemm_blocks(g, ch, &kc, &nblk, &rot, &rev, &fm);
    for (bi = 0; bi < nblk; bi++) {
        int64_t b = (bi + rot) % nblk, k0, kb;
        int usefma;
        if (rev) b = nblk - 1 - b;
        k0 = cbase + b * kc;
        kb = VT__MIN(cend, k0 + kc) - k0;
        usefma = (int)((fm >> (b & 63)) & 1);
        if (!f32) {
            double *ap = (double *)buf, *bp = ap + VT__MC * kc;
            if (g->bpre) bp = g->bpre + n0 / g->nc * g->bcol + g->boff[ch] + b * kc * (g->nc + 32);
            else vt__pack_b64(g, bp, n0, nb, k0, kb);
            for (ms = 0; ms < mb; ms += VT__MC) {
                int64_t mm = VT__MIN(VT__MC, mb - ms);
                double *ts = t + ms * ldt;
                vt__pack_a64(g, ap, m0 + ms, mm, k0, kb);
                if (g->tri) {
                    for (jr = 0; jr < nb; jr += NR)
                        for (ir = 0; ir < mm; ir += MR) {
                            int64_t lo, hi;
                            if (!vt__tri_krange(g->tri, m0 + ms + ir, VT__MIN(MR, mm - ir), n0 + jr, k0, kb, &lo, &hi)) continue;
                            k64(hi - lo, ap + ir * kb + lo * MR, bp + jr * kb + lo * NR, ts + ir * ldt + jr, ldt,
                                (int)VT__MIN(MR, mm - ir), (int)VT__MIN(NR, nb - jr), first && bi == 0, usefma);
                        }
                    continue;
                }
                for (jr = 0; jr < nb; jr += NR)
                    for (ir = 0; ir < mm; ir += MR)
                        k64(kb, ap + ir * kb, bp + jr * kb, ts + ir * ldt + jr, ldt, (int)VT__MIN(MR, mm - ir),
                            (int)VT__MIN(NR, nb - jr), first && bi == 0, usefma);
            }
        } else {
            float *ap = (float *)buf, *bp = ap + VT__MC * kc;
            vt__pack_b32(g, bp, n0, nb, k0, kb);
            for (ms = 0; ms < mb; ms += VT__MC) {
                int64_t mm = VT__MIN(VT__MC, mb - ms);
                double *ts = t + ms * ldt;
                vt__pack_a32(g, ap, m0 + ms, mm, k0, kb);
                if (g->tri) {
                    for (jr = 0; jr < nb; jr += NRF)
                        for (ir = 0; ir < mm; ir += MR) {
                            int64_t lo, hi;
                            if (!vt__tri_krange(g->tri, m0 + ms + ir, VT__MIN(MR, mm - ir), n0 + jr, k0, kb, &lo, &hi)) continue;
                            k32(hi - lo, ap + ir * kb + lo * MR, bp + jr * kb + lo * NRF, ts + ir * ldt + jr, ldt,
                                (int)VT__MIN(MR, mm - ir), (int)VT__MIN(NRF, nb - jr), first && bi == 0, usefma);
                        }
                    continue;
                }
                for (jr = 0; jr < nb; jr += NRF)
                    for (ir = 0; ir < mm; ir += MR)
                        k32(kb, ap + ir * kb, bp + jr * kb, ts + ir * ldt + jr, ldt, (int)VT__MIN(MR, mm - ir),
                            (int)VT__MIN(NRF, nb - jr), first && bi == 0, usefma);
            }
        }
    }
}

/* The first row of tile row ti (ti = tm: M). The micro-panels of mr rows
   are dealt out evenly, so tiles differ by at most one panel: 256 rows on
   two threads (22 panels of 12) were tiles of 48, 48, 48 | 48, 48, 16 rows
   (one thread 144, the other 112); now 36, 48, 48 | 36, 48, 40. No tile is
   taller than mc (tm mc >= M, mc a whole number of panels) or empty
   (tm <= the panels). */
static int64_t vt__gemm_row0(const vt__gemm *g, int64_t ti) {
    int64_t mr = g->ks->mr, panels = (g->M + mr - 1) / mr;
    return VT__MIN(g->M, mr * (ti * panels / g->tm));
}

static void vt__lazy_tile(const vt__rjob *j, int tid, int64_t m0, int64_t mb, int64_t n0, int64_t nb);
struct vt__lazy;
static void vt__pstat_help(struct vt__lazy *z);
static void vt__pstat_wait(struct vt__lazy *z);
static VT__UNUSED int vt__gemm_via_t; /* tests: every chunk through the tile buffer (the two must agree) */
static VT__UNUSED int vt__gemm_no_prepack; /* benches and tests: every tile packs its own B panel */
/* C's rows [m0, m0 + mb), columns [n0, n0 + nb): = bias, or += bias
   (vt__gemm_run_bias): one IEEE operation per element, the same in any split */
static void vt__gemm_put_bias(const vt__gemm *g, int64_t m0, int64_t mb, int64_t n0, int64_t nb) {
    int64_t i, j;
    for (i = m0; i < m0 + mb; i++) {
        double *c = g->C + i * g->ldc + n0;
        const double *b = g->bias + n0;
        if (!g->bacc) memcpy(c, b, sizeof(double) * (size_t)nb);
        else
            for (j = 0; j < nb; j++) c[j] = VT__ACC(g->o, c[j] + b[j]);
    }
}

/* CHUNKS PER MICRO-TILE. A chunked product (a weight gradient: the sum
   over each sequence, then the sequences' sums in order) whose chunks are
   one k-block each added every chunk's partial to the tile's C in the
   micro-kernel's store, one chunk after another: the tile of C went
   through the caches once per chunk (8 times for B8 T64), along rows whose
   stride, a power of two, folds them onto a quarter of L2's sets (a 512 x
   2048 gradient ran at 0.76x OpenBLAS's speed on two threads, Zen 4:
   bench_gemm --layers 512).
   Here a tile packs A's panels of every chunk once, then each micro-tile
   runs all the chunks in order into a copy of its C held in L1 (ldt nr),
   written back once: per element t = t + acc chunk after chunk, the same
   operations in the same order (the first chunk writes t where the
   product sets C). B's panels are the shared ones (SHARED B PANELS).
   A column of micro-tiles (nr columns, the tile's rows) keeps its copies
   of C in L1 together and takes the chunks a group at a time, a group
   spanning at most 16 KiB of B's micro-panel (256 k with AVX2's 8
   columns, 128 with AVX-512's 16): that panel then stays in L1 while the
   group runs down the column, where all chunks at once (512 k: 32 KiB,
   L1's size) went to L2 for it on every micro-tile, beside A's whole
   block (96 x 512 doubles, 384 KiB): on a Zen 3, 512 KiB of L2 a core,
   the step's 512-row gradients are 1-7% faster so on one thread, 6-29% on
   two (bench/RESULTS.md). Each element still takes its chunks in order,
   one after another: the same values. */
static void vt__gemm_chunks_tile(const vt__gemm *g, int tid, int64_t m0, int64_t mb, int64_t n0, int64_t nb) {
    int MR = g->ks->mr, NR = g->ks->nr;
    int64_t mbr = (mb + MR - 1) / MR * MR, ch, c0, c1, ir, jr, i, j, kg = 2048 / NR;
    double *ap = g->apk[tid], L[VT__MC * 16]; /* a column of micro-tiles: up to VT__MC rows (a chunked
                                                 product's tiles) by the widest panel (AVX-512: VT__NR5) */
    const double *bp0 = (const double *)g->bpre + n0 / g->nc * g->bcol;
    for (ch = 0; ch < g->nch; ch++) { /* A's panels, chunk after chunk */
        int64_t k0 = ch * g->kchunk;
        vt__pack_a64(g, ap + k0 * mbr, m0, mb, k0, VT__MIN(g->K, k0 + g->kchunk) - k0);
    }
    for (jr = 0; jr < nb; jr += NR) {
        int nr = (int)VT__MIN(NR, nb - jr);
        if (!g->set) /* micro-tile ir's copy at L + ir NR, rows of nr */
            for (ir = 0; ir < mb; ir += MR)
                for (i = 0; i < VT__MIN(MR, mb - ir); i++)
                    for (j = 0; j < nr; j++) L[ir * NR + i * nr + j] = g->C[(m0 + ir + i) * g->ldc + n0 + jr + j];
        for (c0 = 0; c0 < g->nch; c0 = c1) { /* chunks [c0, c1): at most kg k, at least one chunk */
            for (c1 = c0 + 1; c1 < g->nch && VT__MIN(g->K, (c1 + 1) * g->kchunk) - c0 * g->kchunk <= kg; c1++) {}
            for (ir = 0; ir < mb; ir += MR) {
                int mr = (int)VT__MIN(MR, mb - ir);
                for (ch = c0; ch < c1; ch++) {
                    int64_t k0 = ch * g->kchunk, kb = VT__MIN(g->K, k0 + g->kchunk) - k0;
                    g->ks->k64(kb, ap + k0 * mbr + ir * kb, bp0 + g->boff[ch] + jr * kb, L + ir * NR, nr, mr, nr,
                               ch == 0 && g->set, g->cfma[ch]);
                }
            }
        }
        for (ir = 0; ir < mb; ir += MR)
            for (i = 0; i < VT__MIN(MR, mb - ir); i++)
                for (j = 0; j < nr; j++) g->C[(m0 + ir + i) * g->ldc + n0 + jr + j] = L[ir * NR + i * nr + j];
    }
}

static void vt__gemm_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__gemm *g = (vt__gemm *)arg;
    int64_t task;
    if (g->zs) vt__pstat_help(g->zs); /* the statistics first, while there are any to claim */
    for (task = lo; task < hi; task++) {
        int64_t ti = task / g->tn, tj = task % g->tn;
        int64_t m0 = vt__gemm_row0(g, ti), n0 = tj * g->nc;
        int64_t mb = vt__gemm_row0(g, ti + 1) - m0, nb = VT__MIN(g->nc, g->N - n0), ch, i, j;
        double *C = g->C + m0 * g->ldc + n0;
        if (g->bias) vt__gemm_put_bias(g, m0, mb, n0, nb);
        if (g->apk) vt__gemm_chunks_tile(g, tid, m0, mb, n0, nb);
        else if (g->nch == 1) /* tiles of at most mc rows straight into C */
            vt__gemm_tile(g, tid, m0, mb, n0, nb, 0, C, g->ldc, g->set);
        else {
            double *T = (double *)((unsigned char *)g->tbuf[tid] + g->tbytes - sizeof(double) * VT__MC * VT__NC);
            for (ch = 0; ch < g->nch; ch++) {
                if (ch == 0 && g->set) { /* C not read (vt__gemm_set): the first chunk's partial written to it, as
                                            C = +0 + partial would be (a partial is never -0: see vt__gemm_set) */
                    vt__gemm_tile(g, tid, m0, mb, n0, nb, 0, C, g->ldc, 1);
                    continue;
                }
                if (!g->o->f32) { /* a chunk of one k-block: its partial added to C by the micro-kernel's
                                     store (t + acc, as the loop below), not through T */
                    int64_t kc, nblk, rot;
                    int rev;
                    uint64_t fm;
                    vt__gemm_blocks(g, ch, &kc, &nblk, &rot, &rev, &fm);
                    if (nblk == 1 && !vt__gemm_via_t) {
                        vt__gemm_tile(g, tid, m0, mb, n0, nb, ch, C, g->ldc, 0);
                        continue;
                    }
                }
                vt__gemm_tile(g, tid, m0, mb, n0, nb, ch, T, VT__NC, 1);
                for (i = 0; i < mb; i++)
                    for (j = 0; j < nb; j++) C[i * g->ldc + j] = VT__ACC(g->o, C[i * g->ldc + j] + T[i * VT__NC + j]);
            }
        }
        if (g->fz) { /* the tile is final: round it while it is in cache (once the statistics are) */
            if (g->zs) vt__pstat_wait(g->zs);
            vt__lazy_tile(g->fz, tid, m0, mb, n0, nb);
        }
    }
}

/* SHARED B PANELS. On more threads a column of tiles packed the same B
   panels once per tile: at width 512 packing was 8% of a verified step
   (perf, Zen 4, 2 threads), and a weight gradient's B was packed once for
   each of its tiles of up to 96 rows. OpenBLAS packs B once for all its
   threads. A binary64 product of two or more tile rows on more threads,
   or a chunked one on any (CHUNKS PER MICRO-TILE reads every chunk's
   panels), now packs every (column tile, chunk, k-block) panel once, on
   the pool, before the tiles run, with each chunk's own k-blocks
   (vt__gemm_blocks); a tile reads the panel where it packed its own. The
   same copies of the same values: no result changes. A panel holds nb <= nc columns rounded up to a whole
   micro-panel (nc + 32 doubles a k). The panels are a copy of B, held in
   the op's scratch while the product runs: above VT__PREPACK_MAX bytes
   (a weight gradient of a wide layer over a long batch) the tiles pack
   their own, as before, rather than hold a second B (and chunked products
   run their chunks one after another). */
#ifndef VT__PREPACK_MAX
#define VT__PREPACK_MAX (64.0 * 1024 * 1024)
#endif
static void vt__gemm_prepack_task(void *arg, int64_t lo, int64_t hi, int tid) { /* task: (column tile, chunk) */
    vt__gemm *g = (vt__gemm *)arg;
    int64_t task;
    (void)tid;
    for (task = lo; task < hi; task++) {
        int64_t tj = task / g->nch, ch = task % g->nch, n0 = tj * g->nc, kc, nblk, rot, b;
        int64_t cend = VT__MIN(g->K, (ch + 1) * g->kchunk);
        int rev;
        uint64_t fm;
        double *p = g->bpre + tj * g->bcol + g->boff[ch];
        vt__gemm_blocks(g, ch, &kc, &nblk, &rot, &rev, &fm);
        for (b = 0; b < nblk; b++) {
            int64_t k0 = ch * g->kchunk + b * kc;
            vt__pack_b64(g, p + b * kc * (g->nc + 32), n0, VT__MIN(g->nc, g->N - n0), k0, VT__MIN(cend, k0 + kc) - k0);
        }
    }
}

/* chunk-parallel: chunk ch's partial for the whole output into part[ch] */
static void vt__gemm_chunk_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__gemm *g = (vt__gemm *)arg;
    int64_t ch, m0, n0;
    if (g->zs) vt__pstat_help(g->zs);
    for (ch = lo; ch < hi; ch++) {
        double *P = g->part + ch * g->M * g->N;
        for (m0 = 0; m0 < g->M; m0 += VT__MC)
            for (n0 = 0; n0 < g->N; n0 += VT__NC)
                vt__gemm_tile(g, tid, m0, VT__MIN(VT__MC, g->M - m0), n0, VT__MIN(VT__NC, g->N - n0), ch,
                              P + m0 * g->N + n0, g->N, 1);
    }
}

/* (the chunks' job before it computed any pending statistics: STATISTICS IN THE PRODUCT'S JOB) */
static void vt__gemm_sum_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__gemm *g = (vt__gemm *)arg;
    int64_t m, n, ch;
    (void)tid;
    for (m = lo; m < hi; m++) {
        if (g->bias) vt__gemm_put_bias(g, m, 1, 0, g->N);
        for (ch = 0; ch < g->nch; ch++) {
            const double *P = g->part + ch * g->M * g->N + m * g->N;
            double *C = g->C + m * g->ldc;
            for (n = 0; n < g->N; n++) C[n] = VT__ACC(g->o, C[n] + P[n]);
        }
        if (g->fz) vt__lazy_tile(g->fz, tid, m, 1, 0, g->N);
    }
}

static void *vt__scratch(vt_ctx *c, size_t n);

/* per-thread packing buffers, grown on demand, kept in the context */
static void **vt__tbufs(vt_ctx *c, size_t bytes);
static size_t vt__gemm_tbytes(const vt__ord *o);

static void vt__gemm_go(vt_ctx *c, const vt__ord *o, int64_t M, int64_t N, int64_t K, const double *A, int64_t sam,
                        int64_t sak, const double *B, int64_t sbk, int64_t sbn, double *C, int64_t ldc, int64_t kchunk,
                        int set, const double *bias, int bacc);

/* C (+)= A B as described above. C must already hold C0 (+ bias, where
   the caller adds it: vt__gemm_run_bias puts it in itself). */
static void vt__gemm_run(vt_ctx *c, const vt__ord *o, int64_t M, int64_t N, int64_t K, const double *A, int64_t sam,
                         int64_t sak, const double *B, int64_t sbk, int64_t sbn, double *C, int64_t ldc, int64_t kchunk) {
    vt__gemm_go(c, o, M, N, K, A, sam, sak, B, sbk, sbn, C, ldc, kchunk, 0, NULL, 0);
}

/* C = bias + A B (bacc: C = (C + bias) + A B), bias a row of N: what
   vt__gemm_run computes after a pass that sets (adds) the bias row by row,
   bit for bit, without that pass: each tile puts the bias into its own
   part of C just before its first k-block (while in cache, on the thread
   that then adds to it), the chunk-parallel sum into each row before the
   chunks. The same additions in the same order. */
static void vt__gemm_run_bias(vt_ctx *c, const vt__ord *o, int64_t M, int64_t N, int64_t K, const double *A, int64_t sam,
                              int64_t sak, const double *B, int64_t sbk, int64_t sbn, double *C, int64_t ldc, int64_t kchunk,
                              const double *bias, int bacc) {
    vt__gemm_go(c, o, M, N, K, A, sam, sak, B, sbk, sbn, C, ldc, kchunk, 0, bias, bacc);
}

/* C = A B, C's old value never read: what vt__gemm_run computes from C = 0,
   bit for bit (the first k-block writes its accumulator where the other
   form adds it to +0: an accumulator starts at +0 and so is never -0, and
   +0 + x = x for every other x, NaN payloads included), without the pass
   that zeroes C and the first block's read of it. With more than one chunk
   the chunks' ordered sum starts from C, so C is zeroed first. */
typedef struct { double *C; int64_t N, ldc; } vt__zrows_job;
static void vt__zrows_task(void *arg, int64_t lo, int64_t hi, int tid) { /* rows [lo, hi) of C = +0 */
    const vt__zrows_job *z = (const vt__zrows_job *)arg;
    int64_t i, j;
    (void)tid;
    for (i = lo; i < hi; i++)
        for (j = 0; j < z->N; j++) z->C[i * z->ldc + j] = 0.0;
}
static void vt__gemm_set(vt_ctx *c, const vt__ord *o, int64_t M, int64_t N, int64_t K, const double *A, int64_t sam,
                         int64_t sak, const double *B, int64_t sbk, int64_t sbn, double *C, int64_t ldc, int64_t kchunk) {
    vt__zrows_job z;
    if (M <= 0 || N <= 0) return;
    if (K > 0 && (kchunk <= 0 || kchunk >= K || (!o->f32 && !vt__gemm_via_t))) { /* (chunks: the first writes C) */
        vt__gemm_go(c, o, M, N, K, A, sam, sak, B, sbk, sbn, C, ldc, kchunk, 1, NULL, 0);
        return;
    }
    z.C = C; z.N = N; z.ldc = ldc;
    vt__parallel(&c->pool, M, M * N, vt__zrows_task, &z); /* (on the pool: the worker slept through it) */
    vt__gemm_run(c, o, M, N, K, A, sam, sak, B, sbk, sbn, C, ldc, kchunk);
}

static void vt__gemm_go(vt_ctx *c, const vt__ord *o, int64_t M, int64_t N, int64_t K, const double *A, int64_t sam,
                        int64_t sak, const double *B, int64_t sbk, int64_t sbn, double *C, int64_t ldc, int64_t kchunk,
                        int set, const double *bias, int bacc) {
    vt__gemm g;
    int nt = c->pool.n;
    if (M <= 0 || N <= 0) return;
    memset(&g, 0, sizeof g);
    g.set = set;
    g.bias = bias; g.bacc = bacc;
    if (K <= 0) { /* no product: the bias alone */
        g.o = o; g.C = C; g.ldc = ldc;
        if (bias) vt__gemm_put_bias(&g, 0, M, 0, N);
        return;
    }
    g.fz = c->gfuse; /* (for this product only) */
    c->gfuse = NULL;
    g.zs = c->gstat;
    c->gstat = NULL;
    g.c = c; g.o = o; g.M = M; g.N = N; g.K = K;
    g.A = A; g.sam = sam; g.sak = sak; g.B = B; g.sbk = sbk; g.sbn = sbn; g.C = C; g.ldc = ldc;
    g.kchunk = (kchunk <= 0 || kchunk > K) ? K : kchunk;
    g.nch = (K + g.kchunk - 1) / g.kchunk;
    g.tbytes = vt__gemm_tbytes(o);
    g.ks = vt__gemm_isa();
    g.tbuf = vt__tbufs(c, g.tbytes);
    if (!g.tbuf) return;
    g.nc = nt == 1 ? VT__NC : VT__NC / 2; /* on more threads half as wide, for more tiles to share out */
    g.tn = (N + g.nc - 1) / g.nc;
    g.mc = VT__MC;
    if (g.nch == 1 || nt > 1) { /* tiles of nearly equal height (whole micro-panels), on more threads two or
                                   more per thread for idle threads to claim. Unchunked: a few tall tiles per
                                   column panel (B is packed once per tile). Chunked (a weight gradient): at
                                   most VT__MC rows (the chunk tile); with VT__MC rows a 128-row gradient was a
                                   96-row and a 32-row tile per column panel, and one thread took both tall ones */
        int64_t mtiles = (M + VT__MC - 1) / VT__MC, mr = g.ks->mr, want = (2 * nt + g.tn - 1) / g.tn;
        int64_t split = g.nch > 1 ? VT__MAX(mtiles, want) : nt == 1 ? 1 : VT__MAX(1, VT__MIN(mtiles, want));
        g.mc = (((M + split - 1) / split + mr - 1) / mr) * mr;
        if (g.nch > 1) g.mc = VT__MIN(VT__MC, g.mc);
    }
    g.tm = (M + g.mc - 1) / g.mc;
    if (g.nch > 1 && g.tm * g.tn < nt && nt > 1) {
        /* few output tiles, a long chunked reduction: chunks in parallel, then
           an ordered sum; per-element results are the same as the tiled path */
        g.part = (double *)vt__scratch(c, sizeof(double) * (size_t)(g.nch * M * N));
        if (!g.part) return;
        if (set) { /* the ordered sum starts from C */
            vt__zrows_job z;
            z.C = C; z.N = N; z.ldc = ldc;
            vt__parallel(&c->pool, M, M * N, vt__zrows_task, &z);
        }
        vt__parallel(&c->pool, g.nch, 2 * M * N * K, vt__gemm_chunk_task, &g);
        vt__parallel(&c->pool, M, M * N * g.nch, vt__gemm_sum_task, &g);
        return;
    }
    /* shrink tiles so that every thread has work (results do not depend on tiling) */
    while (nt > 1 && g.tm * g.tn < 2 * nt && g.mc > g.ks->mr * 2) {
        g.mc = ((g.mc / 2 + g.ks->mr - 1) / g.ks->mr) * g.ks->mr;
        g.tm = (M + g.mc - 1) / g.mc;
    }
    /* SHARED B PANELS, within VT__PREPACK_MAX (on one thread for CHUNKS PER MICRO-TILE) */
    if ((nt > 1 || g.nch > 1) && g.tm > 1 && !o->f32 && !vt__gemm_no_prepack) {
        int64_t ch, kc, nblk, rot;
        int rev, one = 1, t;
        uint64_t fm;
        g.boff = (int64_t *)vt__scratch(c, sizeof(int64_t) * (size_t)g.nch);
        g.cfma = (unsigned char *)vt__scratch(c, (size_t)g.nch);
        if (!g.boff || !g.cfma) return;
        for (ch = 0; ch < g.nch; ch++) { /* each chunk's panels, and whether it is one k-block (and its fma) */
            vt__gemm_blocks(&g, ch, &kc, &nblk, &rot, &rev, &fm);
            g.boff[ch] = g.bcol;
            g.bcol += nblk * kc * (g.nc + 32);
            one &= nblk == 1;
            g.cfma[ch] = (unsigned char)(fm & 1);
        }
        if ((double)g.tn * (double)g.bcol * sizeof(double) <= VT__PREPACK_MAX) {
            g.bpre = (double *)vt__scratch(c, sizeof(double) * (size_t)(g.tn * g.bcol));
            if (!g.bpre) return;
            vt__parallel(&c->pool, g.tn * g.nch, N * K, vt__gemm_prepack_task, &g);
        }
        /* CHUNKS PER MICRO-TILE: every chunk one k-block, B's panels shared, and A's panels of a tile
           (mc K doubles a thread) within VT__PREPACK_MAX */
        if (g.bpre && g.nch > 1 && one && !vt__gemm_via_t &&
            (double)nt * (double)g.mc * (double)K * sizeof(double) <= VT__PREPACK_MAX) {
            g.apk = (double **)vt__scratch(c, sizeof(double *) * (size_t)nt);
            if (!g.apk) return;
            for (t = 0; t < nt; t++)
                if (!(g.apk[t] = (double *)vt__scratch(c, sizeof(double) * (size_t)(g.mc * K)))) return;
        }
    }
    vt__parallel(&c->pool, g.tm * g.tn, 2 * M * N * K, vt__gemm_task, &g);
}

/* reference: the textbook triple loop in binary64 (for tests) */
static VT__UNUSED void vt__gemm_naive(int64_t M, int64_t N, int64_t K, const double *A, int64_t sam, int64_t sak,
                                      const double *B, int64_t sbk, int64_t sbn, double *C, int64_t ldc) {
    int64_t m, n, k;
    for (m = 0; m < M; m++)
        for (n = 0; n < N; n++) {
            double s = C[m * ldc + n];
            for (k = 0; k < K; k++) s += A[m * sam + k * sak] * B[k * sbk + n * sbn];
            C[m * ldc + n] = s;
        }
}

#ifdef VT__AVX2
/* The smallest nonzero magnitude, without a compare and a select per
   element: a >= 0 less one in its bits is the next binary64 below it (the
   map is increasing), and +0 less one is a NaN, which vminpd's second
   operand wins against; NaN inputs are skipped the same way (their lines'
   bounds are NaN whatever th is). vt__inc_bits undoes it (+inf: none). */
static __m256d vt__dec_bits(__m256d a, __m256i one) {
    return _mm256_castsi256_pd(_mm256_sub_epi64(_mm256_castpd_si256(a), one));
}
static double vt__inc_bits(double d) {
    uint64_t b;
    if (d == INFINITY) return d;
    memcpy(&b, &d, 8);
    b++;
    memcpy(&d, &b, 8);
    return d;
}
#endif

/* per-line statistics of a matrix read as lines x K: sum|x|, |x|_2, max|x|,
   and th = 2^(L + 53), L the lowest set bit of the line (infinite for an
   all-zero line). A precise L only matters for lines of few-bit values
   (pixels, one-hot rows): a line whose first nonzero values carry 20 or more
   significant bits takes L = e - 24 for its smallest nonzero magnitude
   m = f 2^e (a binary32 value's lowest bit is at least that), a lower bound
   that is sound and spares the bit scan on ordinary activations. */
static int vt__many_bits(double a) { /* a != 0 carries 20 or more significant bits */
    uint64_t b, ex;
    memcpy(&b, &a, 8);
    ex = (b >> 52) & 0x7ff;
    /* a normal a = 1.m 2^E: frexp's exponent less its lowest set bit is
       53 - ctz(1m), at least 20 when one of m's low 34 bits is set */
    if (ex != 0 && ex != 0x7ff) return (b & 0x3ffffffffull) != 0;
    return vt__fexp(a) - vt__lsb(a) >= 20;
}
static VT__NOINLINE int vt__coarse_scan(const double *x, int64_t s, int64_t K) {
    int64_t k, seen = 0;
    for (k = 0; k < K && seen < 4; k++) {
        double a = x[k * s];
        if (a == 0) continue;
        if (vt__many_bits(a)) return 0;
        seen++;
    }
    return 1;
}
/* the answer at once where the first value decides it (an ordinary line: a
   per-line call of ~40 instructions before, for lines of 16 to 64 values in
   attention at width 64); the scan apart, so that this inlines */
static int vt__coarse_line(const double *x, int64_t s, int64_t K) {
    return K > 0 && x[0] != 0 && vt__many_bits(x[0]) ? 0 : vt__coarse_scan(x, s, K);
}
static VT__UNUSED int vt__no_acap; /* tests: a lazy bound's A lines with all their statistics (no A ROW CAPS) */
static VT__UNUSED int vt__no_bsum; /* tests: and B's lines (no B COLUMN SUMS, no B ROW SUMS) */
typedef struct {
    const double *X; int64_t s_outer, s_k; int64_t K;
    double *n1, *n2, *mx, *th;
    int *lsb;
    int cap; /* 1: mx only (A's lines of a lazy bound: A ROW CAPS); 2: n1 only (B's lines: B COLUMN SUMS, B ROW SUMS); the others
                left as they were */
} vt__stat_job;

#ifdef VT__AVX512
/* vt__stat_lines's lines-are-columns walk, eight lines at a time from line r
   while r < rg (vt__isa512): rows x, x + s_k, ... (nk of them) added to each
   line's statistics with the AVX2 form's operations, in the same row order,
   so every statistic is that form's bit for bit (lines past rg in the last
   group of a VT__TRI_KGE walk add zeros, as the AVX2 form's groups of 4 do,
   which change nothing: see below); returns where it stopped */
VT__T512 static int64_t vt__stat_cols512(const vt__stat_job *j, const double *x, double *mn, int64_t r, int64_t rg, int64_t nk) {
    const __m512i one = _mm512_set1_epi64(1);
    int64_t q;
    for (; r < rg; r += 8) {
        __m512d s1 = _mm512_loadu_pd(j->n1 + r), s2 = _mm512_loadu_pd(j->n2 + r);
        __m512d vm = _mm512_loadu_pd(j->mx + r), vn = _mm512_loadu_pd(mn + r);
        for (q = 0; q < nk; q++) {
            __m512d a = _mm512_abs_pd(_mm512_loadu_pd(x + q * j->s_k + r));
            s1 = _mm512_add_pd(s1, a);
            s2 = _mm512_fmadd_pd(a, a, s2);
            vm = _mm512_mask_max_pd(vm, 0xff, vm, a); /* (masked, all lanes on: g++ 12 warns about the unmasked forms) */
            vn = _mm512_mask_min_pd(vn, 0xff, _mm512_castsi512_pd(_mm512_sub_epi64(_mm512_castpd_si512(a), one)), vn);
        }
        _mm512_storeu_pd(j->n1 + r, s1); _mm512_storeu_pd(j->n2 + r, s2);
        _mm512_storeu_pd(j->mx + r, vm); _mm512_storeu_pd(mn + r, vn);
    }
    return r;
}
#endif

static VT__UNUSED int vt__stat_one; /* tests: every row line on its own (the walk vt__stat_rows4 must match) */

/* the end of row line r's walk (below): the line's length, or for a
   VT__TRI_KLE line the lanes' boundary past its last nonzero term */
static int64_t vt__stat_row_end(const vt__stat_job *j, int64_t r, int tri) {
    int64_t K = j->K;
    if (tri == VT__TRI_KLE && r + 1 < K) {
        K = (r + 4) / 4 * 4;
        if (K > j->K / 4 * 4) K = j->K;
    }
    return K;
}

/* th of a line from L (its lowest set bit, or -VT__LSB_NONE: from mn) */
static VT__UNUSED double vt__stat_th(int L, double mn) {
    if (L <= -VT__LSB_NONE) L = mn < INFINITY ? vt__fexp(mn) - 24 : VT__LSB_NONE;
    return L >= VT__LSB_NONE ? INFINITY : vt__pow2(VT__MIN(L + 53, 1023));
}

#ifdef VT__AVX2
/* vt__stat_lines's rows walk (s_k = 1, K >= 8), four lines at a time from
   line r while r + 4 <= hi, for lines whose walk is whole vectors (its end
   a multiple of 4; a group with another line goes back to the walk below,
   which returns where it stopped). Each line's four lanes are summed as in
   the walk below, by the same operations in the same order; the walk's
   lane-by-lane combination in registers (a1 = 0 + l0 + l1 + l2 + l3 with
   addsd, m and mn by maxsd and minsd) runs on the four lines at once after
   a 4 x 4 transpose: vector lane i is line r + i, and addpd, maxpd, minpd
   and sqrtpd are per lane what addsd, maxsd, minsd and sqrt are. Short
   lines (attention's heads: 16 values) paid ~200 instructions a line, most
   of them in that combination and the line's call overhead. */
#ifdef VT__AVX512
/* the four lines' lane sums of vt__stat_rows4 (all K long) at once, two
   lines to a register (lanes 0-3 line q, 4-7 line q + 1): each lane takes
   its terms in the same order by the same operations, so the sums are the
   one-line-at-a-time walk's bit for bit; four lines interleaved keep eight
   chains of additions in flight where one line kept two (latency-bound) */
VT__T512 static void vt__rows4_sums512(const double *x0, int64_t so, int64_t K, __m256d *V1, __m256d *V2, __m256d *VM, __m256d *VN) {
    const __m512i one = _mm512_set1_epi64(1);
    const __m512d zero = _mm512_setzero_pd();
    __m512d v1[2] = {zero, zero}, v2[2] = {zero, zero}, vm[2] = {zero, zero}, vn[2];
    int64_t k;
    int p;
    vn[0] = vn[1] = _mm512_set1_pd(INFINITY);
#define VT__L2(p, off) /* line 2p's four values in lanes 0-3, line 2p + 1's in 4-7 (a masked load: so >= 4) */ \
    _mm512_abs_pd(_mm512_mask_loadu_pd(_mm512_castpd256_pd512(_mm256_loadu_pd(x0 + 2 * (p) * so + (off))), 0xf0, \
                                       x0 + (2 * (p) + 1) * so + (off) - 4))
#define VT__S2(p, a)                                                                                                   \
    v1[p] = _mm512_add_pd(v1[p], a);                                                                                   \
    v2[p] = _mm512_fmadd_pd(a, a, v2[p]);                                                                              \
    vm[p] = _mm512_mask_max_pd(vm[p], 0xff, vm[p], a);                                                                 \
    vn[p] = _mm512_mask_min_pd(vn[p], 0xff, _mm512_castsi512_pd(_mm512_sub_epi64(_mm512_castpd_si512(a), one)), vn[p]);
    for (k = 0; k + 8 <= K; k += 8) {
        __m512d a0 = VT__L2(0, k), a1 = VT__L2(1, k), b0 = VT__L2(0, k + 4), b1 = VT__L2(1, k + 4);
        VT__S2(0, a0) VT__S2(1, a1) VT__S2(0, b0) VT__S2(1, b1)
    }
    for (; k + 4 <= K; k += 4) {
        __m512d a0 = VT__L2(0, k), a1 = VT__L2(1, k);
        VT__S2(0, a0) VT__S2(1, a1)
    }
#undef VT__L2
#undef VT__S2
    for (p = 0; p < 2; p++) { /* the halves through memory (g++ 12 warns about the extract intrinsics) */
        double h[4][8];
        _mm512_storeu_pd(h[0], v1[p]); _mm512_storeu_pd(h[1], v2[p]); _mm512_storeu_pd(h[2], vm[p]); _mm512_storeu_pd(h[3], vn[p]);
        V1[2 * p] = _mm256_loadu_pd(h[0]); V1[2 * p + 1] = _mm256_loadu_pd(h[0] + 4);
        V2[2 * p] = _mm256_loadu_pd(h[1]); V2[2 * p + 1] = _mm256_loadu_pd(h[1] + 4);
        VM[2 * p] = _mm256_loadu_pd(h[2]); VM[2 * p + 1] = _mm256_loadu_pd(h[2] + 4);
        VN[2 * p] = _mm256_loadu_pd(h[3]); VN[2 * p + 1] = _mm256_loadu_pd(h[3] + 4);
    }
}
#endif
static int64_t vt__stat_rows4(const vt__stat_job *j, int64_t r, int64_t hi, int tri) {
    const __m256d sign = _mm256_set1_pd(-0.0), zero = _mm256_setzero_pd(), inf = _mm256_set1_pd(INFINITY);
    const __m256i one = _mm256_set1_epi64x(1);
    for (; r + 4 <= hi; r += 4) {
        __m256d V1[4], V2[4], VM[4], VN[4], a1, a2, am, an;
        double mn[4];
        int64_t q, k, Kq[4];
        int co[4], few, scal;
        for (q = 0; q < 4; q++) {
            Kq[q] = vt__stat_row_end(j, r + q, tri);
            if (Kq[q] % 4) return r;
        }
        {   /* vt__coarse_line's first test (vt__many_bits of a normal x[0]: one of the low 34 bits set) for the
               four lines at once; a line it does not settle takes vt__coarse_line */
            const double *x = j->X + r * j->s_outer;
            __m256i b = _mm256_castpd_si256(_mm256_set_pd(x[3 * j->s_outer], x[2 * j->s_outer], x[j->s_outer], x[0]));
            __m256i ex = _mm256_and_si256(_mm256_srli_epi64(b, 52), _mm256_set1_epi64x(0x7ff));
            __m256i bad = _mm256_or_si256(_mm256_cmpeq_epi64(ex, _mm256_setzero_si256()), _mm256_cmpeq_epi64(ex, _mm256_set1_epi64x(0x7ff)));
            bad = _mm256_or_si256(bad, _mm256_cmpeq_epi64(_mm256_and_si256(b, _mm256_set1_epi64x(0x3ffffffffll)), _mm256_setzero_si256()));
            few = _mm256_movemask_pd(_mm256_castsi256_pd(bad));
        }
        for (q = 0; q < 4; q++)
            co[q] = (few >> q) & 1 ? vt__coarse_line(j->X + (r + q) * j->s_outer, 1, Kq[q]) : 0; /* (K >= 4: a group's lines are whole vectors) */
#ifdef VT__AVX512
        if (vt__isa512() && Kq[0] == Kq[1] && Kq[0] == Kq[2] && Kq[0] == Kq[3])
            vt__rows4_sums512(j->X + r * j->s_outer, j->s_outer, Kq[0], V1, V2, VM, VN);
        else
#endif
        for (q = 0; q < 4; q++) {
            const double *x = j->X + (r + q) * j->s_outer;
            int64_t K = Kq[q];
            __m256d v1 = zero, v2 = zero, vm = zero, vn = inf;
            for (k = 0; k + 8 <= K; k += 8) { /* as the walk below */
                __m256d a = _mm256_andnot_pd(sign, _mm256_loadu_pd(x + k)), b = _mm256_andnot_pd(sign, _mm256_loadu_pd(x + k + 4));
                v1 = _mm256_add_pd(v1, a);
                v2 = _mm256_fmadd_pd(a, a, v2);
                vm = _mm256_max_pd(vm, a);
                vn = _mm256_min_pd(vt__dec_bits(a, one), vn);
                v1 = _mm256_add_pd(v1, b);
                v2 = _mm256_fmadd_pd(b, b, v2);
                vm = _mm256_max_pd(vm, b);
                vn = _mm256_min_pd(vt__dec_bits(b, one), vn);
            }
            for (; k + 4 <= K; k += 4) {
                __m256d a = _mm256_andnot_pd(sign, _mm256_loadu_pd(x + k));
                v1 = _mm256_add_pd(v1, a);
                v2 = _mm256_fmadd_pd(a, a, v2);
                vm = _mm256_max_pd(vm, a);
                vn = _mm256_min_pd(vt__dec_bits(a, one), vn);
            }
            V1[q] = v1; V2[q] = v2; VM[q] = vm; VN[q] = vn;
        }
        vt__tr4(V1); vt__tr4(V2); vt__tr4(VM); vt__tr4(VN);
        a1 = zero; a2 = zero; am = zero; an = inf;
        for (q = 0; q < 4; q++) { /* lane q of every line: the walk's VT__LANE */
            __m256d tn = _mm256_blendv_pd(_mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(VN[q]), one)), VN[q],
                                          _mm256_cmp_pd(VN[q], inf, _CMP_EQ_OQ));
            a1 = _mm256_add_pd(a1, V1[q]);
            a2 = _mm256_add_pd(a2, V2[q]);
            am = _mm256_max_pd(VM[q], am);
            an = _mm256_min_pd(tn, an);
        }
        _mm256_storeu_pd(j->n1 + r, a1);
        _mm256_storeu_pd(j->n2 + r, _mm256_sqrt_pd(a2));
        _mm256_storeu_pd(j->mx + r, am);
        {   /* th = vt__stat_th(-VT__LSB_NONE, mn) for the four lines: mn is +inf (th +inf) or positive, and for a
               normal mn = f 2^(ex - 1022) (biased exponent ex) th = 2^min(ex - 1022 - 24 + 53, 1023), whose
               bits are min(ex + 30, 2046) << 52; coarse lines and a subnormal mn (vt__fexp's frexp) below */
            __m256i ex = _mm256_srli_epi64(_mm256_castpd_si256(an), 52), e30 = _mm256_add_epi64(ex, _mm256_set1_epi64x(30));
            __m256i top = _mm256_set1_epi64x(2046);
            __m256d th = _mm256_castsi256_pd(_mm256_slli_epi64(
                _mm256_castpd_si256(_mm256_blendv_pd(_mm256_castsi256_pd(e30), _mm256_castsi256_pd(top),
                                                     _mm256_castsi256_pd(_mm256_cmpgt_epi64(e30, top)))), 52));
            th = _mm256_blendv_pd(th, inf, _mm256_cmp_pd(an, inf, _CMP_EQ_OQ));
            _mm256_storeu_pd(j->th + r, th);
            scal = _mm256_movemask_pd(_mm256_or_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(ex, _mm256_setzero_si256())),
                                                   _mm256_cmp_pd(an, an, _CMP_UNORD_Q))); /* (a NaN mn: none arises) */
        }
        _mm256_storeu_pd(mn, an);
        for (q = 0; q < 4; q++) {
            int L = co[q] ? VT__LSB_NONE : -VT__LSB_NONE;
            if (!co[q] && !((scal >> q) & 1)) continue; /* th above */
            if (co[q]) {
                const double *x = j->X + (r + q) * j->s_outer;
                for (k = 0; k < Kq[q]; k++)
                    if (x[k] != 0) { int l = vt__lsb(x[k]); if (l < L) L = l; }
            }
            j->th[r + q] = vt__stat_th(L, mn[q]);
        }
    }
    return r;
}
#endif

/* A ROW CAPS. A lazy bound's row cap needs only max |a| of A's line: the
   product's e[m,n] = G min(a2 b2, am b1, a1 bm) (+ |bias|) is at most
   G (am cap1 (+ capb)), cap1 the largest column sum of magnitudes of B
   (correctly rounded products and sums of nonnegative values are monotone),
   so vt__lazy_rows takes that as the row's width and computes the line's
   other statistics (n1, n2, th) only for a row it looks at (vt__lazy_astat,
   by this walk on that line alone). A maximum is exact in any order: mx is
   the full walk's wherever the line holds no NaN, and a NaN in A's line
   makes every output of the row NaN, which the rule looks at whatever the
   width. The walk is one max per value where the full one is six
   operations (sums of magnitudes and squares, the maximum, the smallest
   nonzero magnitude). */
/* the caps' walk of lines that are columns, rows of 16 at a time as the
   full walk: t[r] the line's max |x| (sum 0) or its sum of |x| in k order
   (sum 1: B COLUMN SUMS, the full walk's additions) */
static void vt__stat_caps_cols(const vt__stat_job *j, int64_t lo, int64_t hi, double *t, int sum) {
    int64_t r, k0;
    for (r = lo; r < hi; r++) t[r] = 0;
    for (k0 = 0; k0 < j->K; k0 += 16) {
        int64_t nk = VT__MIN(16, j->K - k0), q;
        const double *x = j->X + k0 * j->s_k;
        r = lo;
#ifdef VT__AVX2
        {
            const __m256d sign = _mm256_set1_pd(-0.0);
            for (; r + 8 <= hi; r += 8) {
                __m256d v0 = _mm256_loadu_pd(t + r), v1 = _mm256_loadu_pd(t + r + 4);
                if (sum)
                    for (q = 0; q < nk; q++) {
                        v0 = _mm256_add_pd(v0, _mm256_andnot_pd(sign, _mm256_loadu_pd(x + q * j->s_k + r)));
                        v1 = _mm256_add_pd(v1, _mm256_andnot_pd(sign, _mm256_loadu_pd(x + q * j->s_k + r + 4)));
                    }
                else
                    for (q = 0; q < nk; q++) {
                        v0 = _mm256_max_pd(v0, _mm256_andnot_pd(sign, _mm256_loadu_pd(x + q * j->s_k + r)));
                        v1 = _mm256_max_pd(v1, _mm256_andnot_pd(sign, _mm256_loadu_pd(x + q * j->s_k + r + 4)));
                    }
                _mm256_storeu_pd(t + r, v0); _mm256_storeu_pd(t + r + 4, v1);
            }
        }
#endif
        for (; r < hi; r++)
            for (q = 0; q < nk; q++) {
                double a = fabs(x[q * j->s_k + r]);
                if (sum) t[r] += a;
                else if (a > t[r]) t[r] = a;
            }
    }
}
/* B ROW SUMS: a line that is a row (s_k = 1: a forward product's weight,
   B = W^T) gets its sum of |x| alone, added as the full walk adds it (four
   lanes over k from 0, the lanes added to 0 one after another, then the
   last K mod 4 values in order; one chain in k order without AVX2, or with
   another stride or K < 8): the same n1. Its other statistics wait for a
   look (vt__lazy_bcols), and their smallest set bit was a scalar loop over
   every value of a line of binary32 values: most of the full walk. */
#ifdef VT__AVX2
/* the full rows walk's four lanes of sum |x| over x[0, K4) (K4 a multiple of 4) */
static __m256d vt__abs_lanes(const double *x, int64_t K4) {
    const __m256d sign = _mm256_set1_pd(-0.0);
    __m256d v1 = _mm256_setzero_pd();
    int64_t k;
    for (k = 0; k < K4; k += 4) v1 = _mm256_add_pd(v1, _mm256_andnot_pd(sign, _mm256_loadu_pd(x + k)));
    return v1;
}
#endif
static double vt__line_n1(const double *x, int64_t s, int64_t K) {
    double s1 = 0;
    int64_t k = 0;
#ifdef VT__AVX2
    if (s == 1 && K >= 8) {
        double l[4];
        k = K / 4 * 4;
        _mm256_storeu_pd(l, vt__abs_lanes(x, k));
        s1 += l[0];
        s1 += l[1];
        s1 += l[2];
        s1 += l[3];
    }
#endif
    for (; k < K; k++) s1 += fabs(x[k * s]);
    return s1;
}
static void vt__stat_caps(const vt__stat_job *j, int64_t lo, int64_t hi) {
    int64_t r, k;
    if (j->s_outer == 1 && j->s_k != 1) { /* lines that are columns (cap 2: B COLUMN SUMS) */
        vt__stat_caps_cols(j, lo, hi, j->cap == 2 ? j->n1 : j->mx, j->cap == 2);
        return;
    }
    if (j->cap == 2) { /* B ROW SUMS */
        r = lo;
#ifdef VT__AVX2
        if (j->s_k == 1 && j->K >= 8 && j->K % 4 == 0) /* four lines at once: each line's lanes as vt__line_n1's,
                                                           then lane q of the four added in one register (a transpose) */
            for (; r + 4 <= hi; r += 4) {
                __m256d v[4], a1 = _mm256_setzero_pd();
                int q;
                for (q = 0; q < 4; q++) v[q] = vt__abs_lanes(j->X + (r + q) * j->s_outer, j->K);
                vt__tr4(v);
                for (q = 0; q < 4; q++) a1 = _mm256_add_pd(a1, v[q]);
                _mm256_storeu_pd(j->n1 + r, a1);
            }
#endif
        for (; r < hi; r++) j->n1[r] = vt__line_n1(j->X + r * j->s_outer, j->s_k, j->K);
        return;
    }
    for (r = lo; r < hi; r++) {
        const double *x = j->X + r * j->s_outer;
        double m = 0;
        k = 0;
#ifdef VT__AVX2
        if (j->s_k == 1 && j->K >= 8) {
            const __m256d sign = _mm256_set1_pd(-0.0);
            __m256d m0 = _mm256_setzero_pd(), m1 = _mm256_setzero_pd();
            double l[4];
            for (; k + 8 <= j->K; k += 8) {
                m0 = _mm256_max_pd(m0, _mm256_andnot_pd(sign, _mm256_loadu_pd(x + k)));
                m1 = _mm256_max_pd(m1, _mm256_andnot_pd(sign, _mm256_loadu_pd(x + k + 4)));
            }
            _mm256_storeu_pd(l, _mm256_max_pd(m0, m1));
            m = VT__MAX(VT__MAX(l[0], l[1]), VT__MAX(l[2], l[3]));
        }
#endif
        for (; k < j->K; k++) {
            double a = fabs(x[k * j->s_k]);
            if (a > m) m = a;
        }
        j->mx[r] = m;
    }
}

/* Lines [lo, hi). tri (CAUSAL PRODUCTS): a causal operand whose zeros the
   caller has checked. VT__TRI_KLE, lines that are rows: line r is zero
   beyond k = r, and the walk stops at the first multiple of 4 past r (each
   vector lane then sums what it summed over the whole line, in the same
   order; the rest added +0 to sums of magnitudes and changed no maximum or
   minimum). VT__TRI_KGE, lines that are columns: line r is zero before
   k = r, and row k updates only the lines up to k (whole groups of 4, the
   others as they were). Every statistic is bit for bit the full walk's;
   another tri, or another orientation, walks everything. */
static void vt__stat_lines(const vt__stat_job *j, int64_t lo, int64_t hi, int tri) {
    int64_t r, r0, k;
    if (j->cap) { vt__stat_caps(j, lo, hi); return; } /* (a lazy bound's A: VT__TRI_NONE) */
    if (j->s_outer == 1 && j->s_k != 1) { /* lines are columns: walk rows, update all lines */
        int *L = j->lsb + lo, anycoarse = 0, kge = tri == VT__TRI_KGE;
        double *mn = j->th; /* smallest nonzero magnitudes, until th is computed */
        for (r = lo; r < hi; r++) {
            int64_t k0 = kge ? VT__MIN(r, j->K) : 0;
            j->n1[r] = 0; j->n2[r] = 0; j->mx[r] = 0; mn[r] = INFINITY;
            L[r - lo] = vt__coarse_line(j->X + r + k0 * j->s_k, j->s_k, j->K - k0) ? VT__LSB_NONE : -VT__LSB_NONE;
            anycoarse |= L[r - lo] == VT__LSB_NONE;
        }
        r = lo;
        r0 = lo;
#ifdef VT__AVX2
        r0 = lo + (hi - lo) / 8 * 8; /* lines [lo, r0) eight at a time (fma), the rest one at a time */
#endif
        /* rows in groups of up to 16, read as they lie in memory; each
           line's sums in k order (a group's statistics go through memory
           once per group of rows: 4 rows spent 14% more at width 128, 64
           rows fell out of the cache) */
        for (k = 0; k < j->K; k++) {
            const double *x = j->X + k * j->s_k;
            r = lo;
#ifdef VT__AVX2
            {
                const __m256d sign = _mm256_set1_pd(-0.0);
                const __m256i one = _mm256_set1_epi64x(1);
                int64_t nk = VT__MIN(16, j->K - k), q, rg = kge ? VT__MIN(r0, k + nk) : r0;
#ifdef VT__AVX512
                if (vt__isa512()) r = vt__stat_cols512(j, x, mn, r, rg, nk); /* [lo, r0) is whole groups of 8 */
#endif
                for (; r < rg; r += 4) {
                    __m256d s1 = _mm256_loadu_pd(j->n1 + r), s2 = _mm256_loadu_pd(j->n2 + r);
                    __m256d vm = _mm256_loadu_pd(j->mx + r), vn = _mm256_loadu_pd(mn + r);
                    for (q = 0; q < nk; q++) {
                        __m256d a = _mm256_andnot_pd(sign, _mm256_loadu_pd(x + q * j->s_k + r));
                        s1 = _mm256_add_pd(s1, a);
                        s2 = _mm256_fmadd_pd(a, a, s2);
                        vm = _mm256_max_pd(vm, a);
                        vn = _mm256_min_pd(vt__dec_bits(a, one), vn);
                    }
                    _mm256_storeu_pd(j->n1 + r, s1); _mm256_storeu_pd(j->n2 + r, s2);
                    _mm256_storeu_pd(j->mx + r, vm); _mm256_storeu_pd(mn + r, vn);
                }
                if (r0 > lo && nk > 1) { /* the other rows of the group: the scalar lines and the bit scan */
                    int64_t kk;
                    for (kk = k; kk < k + nk && (r0 < hi || anycoarse); kk++) { /* (neither: nothing to do) */
                        const double *xr = j->X + kk * j->s_k;
                        int64_t rh = kge ? VT__MIN(hi, kk + 1) : hi;
                        for (r = r0; r < rh; r++) {
                            double a = fabs(xr[r]);
                            j->n1[r] += a; j->n2[r] += a * a;
                            if (a > j->mx[r]) j->mx[r] = a;
                            if (a != 0 && a < mn[r]) mn[r] = a;
                        }
                        if (anycoarse)
                            for (r = lo; r < rh; r++)
                                if (xr[r] != 0 && L[r - lo] > -VT__LSB_NONE) { int l = vt__lsb(xr[r]); if (l < L[r - lo]) L[r - lo] = l; }
                    }
                    k += nk - 1;
                    continue;
                }
            }
#endif
            for (r = r0; r < (kge ? VT__MIN(hi, k + 1) : hi); r++) {
                double a = fabs(x[r]);
                j->n1[r] += a; j->n2[r] += a * a;
                if (a > j->mx[r]) j->mx[r] = a;
                if (a != 0 && a < mn[r]) mn[r] = a;
            }
            if (anycoarse)
                for (r = lo; r < (kge ? VT__MIN(hi, k + 1) : hi); r++)
                    if (x[r] != 0 && L[r - lo] > -VT__LSB_NONE) { int l = vt__lsb(x[r]); if (l < L[r - lo]) L[r - lo] = l; }
        }
#ifdef VT__AVX2
        for (r = lo; r < r0; r++) mn[r] = vt__inc_bits(mn[r]);
#endif
        for (r = lo; r < hi; r++) {
            int l = L[r - lo], e;
            j->n2[r] = sqrt(j->n2[r]);
            if (l <= -VT__LSB_NONE) { e = vt__fexp(mn[r]); l = mn[r] == INFINITY ? VT__LSB_NONE : e - 24; }
            j->th[r] = l >= VT__LSB_NONE ? INFINITY : vt__pow2(VT__MIN(l + 53, 1023));
        }
        return;
    }
    r = lo;
#ifdef VT__AVX2
    if (j->s_k == 1 && j->K >= 8 && !vt__stat_one) r = vt__stat_rows4(j, lo, hi, tri);
#endif
    for (; r < hi; r++) {
        const double *x = j->X + r * j->s_outer;
        double s1 = 0, s2 = 0, m = 0, mn = INFINITY;
        int64_t K = vt__stat_row_end(j, r, tri); /* the walk's end */
        int L = VT__LSB_NONE, coarse, e;
        coarse = vt__coarse_line(x, j->s_k, K);
        k = 0;
#ifdef VT__AVX2
        if (j->s_k == 1 && j->K >= 8) { /* four lanes at a time (the order of these sums does not matter) */
            const __m256d sign = _mm256_set1_pd(-0.0), zero = _mm256_setzero_pd();
            const __m256i one = _mm256_set1_epi64x(1);
            __m256d v1 = zero, v2 = zero, vm = zero, vn = _mm256_set1_pd(INFINITY);
            for (; k + 8 <= K; k += 8) { /* two steps per trip, each as the loop below */
                __m256d a = _mm256_andnot_pd(sign, _mm256_loadu_pd(x + k)), b = _mm256_andnot_pd(sign, _mm256_loadu_pd(x + k + 4));
                v1 = _mm256_add_pd(v1, a);
                v2 = _mm256_fmadd_pd(a, a, v2);
                vm = _mm256_max_pd(vm, a);
                vn = _mm256_min_pd(vt__dec_bits(a, one), vn);
                v1 = _mm256_add_pd(v1, b);
                v2 = _mm256_fmadd_pd(b, b, v2);
                vm = _mm256_max_pd(vm, b);
                vn = _mm256_min_pd(vt__dec_bits(b, one), vn);
            }
            for (; k + 4 <= K; k += 4) {
                __m256d a = _mm256_andnot_pd(sign, _mm256_loadu_pd(x + k));
                v1 = _mm256_add_pd(v1, a);
                v2 = _mm256_fmadd_pd(a, a, v2);
                vm = _mm256_max_pd(vm, a);
                vn = _mm256_min_pd(vt__dec_bits(a, one), vn);
            }
            {   /* lanes 0 to 3 in turn, in registers: s1 += t1[q]; s2 += t2[q]; m = tm[q] > m ? tm[q] : m (maxsd);
                   mn = tq < mn ? tq : mn (minsd), tq = vt__inc_bits(tn[q]) */
                __m256d inf = _mm256_set1_pd(INFINITY);
                __m256d tnv = _mm256_blendv_pd(_mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(vn), one)), vn,
                                               _mm256_cmp_pd(vn, inf, _CMP_EQ_OQ));
                __m128d a1 = _mm_set_sd(s1), a2 = _mm_set_sd(s2), am = _mm_set_sd(m), an = _mm_set_sd(mn);
                __m128d l1 = _mm256_castpd256_pd128(v1), h1 = _mm256_extractf128_pd(v1, 1);
                __m128d l2 = _mm256_castpd256_pd128(v2), h2 = _mm256_extractf128_pd(v2, 1);
                __m128d lm = _mm256_castpd256_pd128(vm), hm = _mm256_extractf128_pd(vm, 1);
                __m128d ln = _mm256_castpd256_pd128(tnv), hn = _mm256_extractf128_pd(tnv, 1);
#define VT__LANE(x1, x2, xm, xn) a1 = _mm_add_sd(a1, x1); a2 = _mm_add_sd(a2, x2); am = _mm_max_sd(xm, am); an = _mm_min_sd(xn, an);
                VT__LANE(l1, l2, lm, ln)
                VT__LANE(_mm_unpackhi_pd(l1, l1), _mm_unpackhi_pd(l2, l2), _mm_unpackhi_pd(lm, lm), _mm_unpackhi_pd(ln, ln))
                VT__LANE(h1, h2, hm, hn)
                VT__LANE(_mm_unpackhi_pd(h1, h1), _mm_unpackhi_pd(h2, h2), _mm_unpackhi_pd(hm, hm), _mm_unpackhi_pd(hn, hn))
#undef VT__LANE
                s1 = _mm_cvtsd_f64(a1); s2 = _mm_cvtsd_f64(a2); m = _mm_cvtsd_f64(am); mn = _mm_cvtsd_f64(an);
            }
        }
#endif
        for (; k < K; k++) {
            double a = fabs(x[k * j->s_k]);
            s1 += a; s2 += a * a;
            if (a > m) m = a;
            if (a != 0 && a < mn) mn = a;
        }
        if (coarse) {
            for (k = 0; k < K; k++)
                if (x[k * j->s_k] != 0) { int l = vt__lsb(x[k * j->s_k]); if (l < L) L = l; }
        } else if (mn < INFINITY) {
            e = vt__fexp(mn);
            L = e - 24;
        }
        j->n1[r] = s1; j->n2[r] = sqrt(s2); j->mx[r] = m;
        j->th[r] = L >= VT__LSB_NONE ? INFINITY : vt__pow2(VT__MIN(L + 53, 1023));
    }
}
static void vt__stat_task(void *arg, int64_t lo, int64_t hi, int tid) {
    (void)tid;
    vt__stat_lines((const vt__stat_job *)arg, lo, hi, VT__TRI_NONE);
}

/* An im2col matrix described by its source (>>conv2d): its columns'
   statistics come from per-pixel ones (vt__wstat_cols) */
typedef struct vt__wstat {
    const double *S; int64_t N, C, H, W; /* the source (N, C, H, W): x (forward) or dy (dx) */
    int64_t OH, OW;                      /* a column per (n, oh, ow) */
    int64_t KH, KW, s, p, d;
    int dx;                              /* 0: col of x (forward), 1: dcol of dy (dx) */
    int lines;                           /* 1: the statistics of col's rows (the weight gradient's B lines) */
    double *pix;                         /* scratch: 4 N H W doubles and N H W ints (lines: 4 H W per thread) */
} vt__wstat;
static void vt__wstat_cols(vt__pool *pool, const vt__wstat *w, vt__stat_job *sb);
static void vt__wstat_lines(vt__pool *pool, const vt__wstat *w, vt__stat_job *sb);
static void vt__wstat_gather(const vt__wstat *w, int64_t n, int64_t col, int64_t k0, int64_t k1, double *dst);

/* A's lines then B's in one job. A columns walk (lines are columns) takes
   its lines 8 to a task: a chunk of 4 or 20 columns walked its odd lines
   one at a time and shared cache lines with the other thread's chunk (two
   threads spent 3x one thread's time in it at width 64); a rows walk takes
   one line per task. The statistics are per line, so the grouping changes
   only which lines are walked in vectors. */
typedef struct { vt__stat_job *a, *b; int64_t M, N, ga, gb, ta, n; int tri; } vt__stat2_job; /* tri: A's (vt__stat_lines);
                                                                                                n tasks */
static int64_t vt__stat_group(const vt__stat_job *j) { return j->s_outer == 1 && j->s_k != 1 ? 8 : 1; }
static void vt__stat2_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__stat2_job *j = (vt__stat2_job *)arg;
    (void)tid;
    if (lo < j->ta) vt__stat_lines(j->a, lo * j->ga, VT__MIN(VT__MIN(hi, j->ta) * j->ga, j->M), j->tri);
    if (hi > j->ta) vt__stat_lines(j->b, (VT__MAX(lo, j->ta) - j->ta) * j->gb, VT__MIN((hi - j->ta) * j->gb, j->N), VT__TRI_NONE);
}

typedef struct {
    const vt__stat_job *a, *b;
    double G;
    const double *C0; int64_t ldc; const double *bias;
    double *bth;       /* per column: threshold of the bias */
    double *E; int64_t N, lde;
} vt__gbound_job;

/* e = G S, or 0 when S (1 + 2^-40) < 2^(L+53): every term (products of
   binary32 values, C0, bias) is a multiple of 2^L and the sum is exact.
   One element (a1, a2, am, ath: row m's statistics, ath = th 2^-53): */
static double vt__gb_e(const vt__gbound_job *j, double a1, double a2, double am, double ath, int64_t m, int64_t n) {
    double s = a2 * j->b->n2[n], t = am * j->b->n1[n], u = a1 * j->b->mx[n], th = ath * j->b->th[n];
    s = t < s ? t : s;
    s = u < s ? u : s;
    if (j->C0) {
        double c0 = j->C0[m * j->ldc + n];
        s += fabs(c0);
        if (c0 != 0) th = VT__MIN(th, vt__pow2(VT__MIN(vt__lsb(c0) + 53, 1023)));
    }
    if (j->bias) { s += fabs(j->bias[n]); th = VT__MIN(th, j->bth[n]); }
    return s * (1 + 0x1p-40) < th ? 0 : j->G * s;
}

#ifdef VT__AVX512
/* vt__gb_row's vector loop eight at a time (vt__isa512) where there is
   neither an old value nor a bias: the same products, minima (a select
   where the other is less), the comparison with the threshold and the zero
   where it holds; E[i] for i < cnt from column n0 on; returns where it stopped */
VT__T512 static int64_t vt__gb_row512(const vt__gbound_job *j, double a1, double a2, double am, double ath, int64_t n0, int64_t cnt,
                                      double *E) {
    const double *bn1 = j->b->n1 + n0, *bn2 = j->b->n2 + n0, *bmx = j->b->mx + n0, *bth = j->b->th + n0;
    const __m512d va1 = _mm512_set1_pd(a1), va2 = _mm512_set1_pd(a2), vam = _mm512_set1_pd(am);
    const __m512d vth = _mm512_set1_pd(ath), vG = _mm512_set1_pd(j->G), c40 = _mm512_set1_pd(1 + 0x1p-40);
    int64_t n = 0;
    for (; n + 8 <= cnt; n += 8) {
        __m512d sv = _mm512_mul_pd(va2, _mm512_loadu_pd(bn2 + n));
        __m512d tv = _mm512_mul_pd(vam, _mm512_loadu_pd(bn1 + n));
        __m512d uv = _mm512_mul_pd(va1, _mm512_loadu_pd(bmx + n));
        __m512d th = _mm512_mul_pd(vth, _mm512_loadu_pd(bth + n));
        sv = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(tv, sv, _CMP_LT_OQ), sv, tv);
        sv = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(uv, sv, _CMP_LT_OQ), sv, uv);
        _mm512_storeu_pd(E + n, _mm512_maskz_mov_pd((__mmask8)~_mm512_cmp_pd_mask(_mm512_mul_pd(sv, c40), th, _CMP_LT_OQ),
                                                     _mm512_mul_pd(vG, sv)));
    }
    return n;
}
#endif
/* E[i] = vt__gb_e(j, a1, a2, am, ath, m, n + i) for i < cnt: the same
   operations in the same order (min, |C0| added, compare and select as
   written), four at a time. An old value only lowers th, so a lane whose
   s (1 + 2^-40) is not below th without it has e = G s either way; the
   others with a nonzero old value (its lowest bit decides) take vt__gb_e. */
static void vt__gb_row(const vt__gbound_job *j, double a1, double a2, double am, double ath, int64_t m, int64_t n, int64_t cnt,
                       double *E) {
    int64_t i = 0;
#ifdef VT__AVX512
    if (!j->bias && !j->C0 && vt__isa512()) i = vt__gb_row512(j, a1, a2, am, ath, n, cnt, E);
#endif
#ifdef VT__AVX2
    if (!j->bias) {
        const double *bn1 = j->b->n1 + n, *bn2 = j->b->n2 + n, *bmx = j->b->mx + n, *bth = j->b->th + n;
        const double *c0 = j->C0 ? j->C0 + m * j->ldc + n : NULL;
        const __m256d va1 = _mm256_set1_pd(a1), va2 = _mm256_set1_pd(a2), vam = _mm256_set1_pd(am), sign = _mm256_set1_pd(-0.0);
        const __m256d vth = _mm256_set1_pd(ath), vG = _mm256_set1_pd(j->G), c40 = _mm256_set1_pd(1 + 0x1p-40);
        for (; i + 4 <= cnt; i += 4) {
            __m256d sv = _mm256_mul_pd(va2, _mm256_loadu_pd(bn2 + i));
            __m256d tv = _mm256_mul_pd(vam, _mm256_loadu_pd(bn1 + i));
            __m256d uv = _mm256_mul_pd(va1, _mm256_loadu_pd(bmx + i));
            __m256d th = _mm256_mul_pd(vth, _mm256_loadu_pd(bth + i)), lt;
            sv = _mm256_min_pd(tv, sv); /* tv < sv ? tv : sv, sv when unordered: vt__gb_e's selects */
            sv = _mm256_min_pd(uv, sv);
            if (c0) {
                __m256d cv = _mm256_loadu_pd(c0 + i);
                sv = _mm256_add_pd(sv, _mm256_andnot_pd(sign, cv));
                lt = _mm256_cmp_pd(_mm256_mul_pd(sv, c40), th, _CMP_LT_OQ);
                if (_mm256_movemask_pd(_mm256_and_pd(lt, _mm256_cmp_pd(cv, _mm256_setzero_pd(), _CMP_NEQ_UQ)))) {
                    int l;
                    for (l = 0; l < 4; l++) E[i + l] = vt__gb_e(j, a1, a2, am, ath, m, n + i + l);
                    continue;
                }
            } else lt = _mm256_cmp_pd(_mm256_mul_pd(sv, c40), th, _CMP_LT_OQ);
            _mm256_storeu_pd(E + i, _mm256_andnot_pd(lt, _mm256_mul_pd(vG, sv)));
        }
    }
#endif
    for (; i < cnt; i++) E[i] = vt__gb_e(j, a1, a2, am, ath, m, n + i);
}

#ifdef VT__AVX2
/* Rows [lo, hi) of the bound of a job with neither old values nor a bias,
   in one loop: per element the operations of vt__gb_row's vector form
   (vt__gb_e on the last N % 4 columns, as there), so the same bounds. For
   short rows (attention's heads: 16 outputs) vt__gb_row paid more in its
   call and setup than in the row. out (vt__mm_serial's VT__TRI_OUT): row m
   only up to its next multiple of 4 (columns n < 4 (m / 4 + 1)), as the
   row-by-row form there. */
static void vt__gb_short(const vt__gbound_job *j, int64_t lo, int64_t hi, int out) {
    const __m256d vG = _mm256_set1_pd(j->G), c40 = _mm256_set1_pd(1 + 0x1p-40);
    const double *bn1 = j->b->n1, *bn2 = j->b->n2, *bmx = j->b->mx, *bth = j->b->th;
    int64_t n, m, N = j->N, N4 = N / 4 * 4;
    for (m = lo; m < hi; m++) {
        double a1 = j->a->n1[m], a2 = j->a->n2[m], am = j->a->mx[m], ath = j->a->th[m] * 0x1p-53, *E = j->E + m * j->lde;
        const __m256d va1 = _mm256_set1_pd(a1), va2 = _mm256_set1_pd(a2), vam = _mm256_set1_pd(am), vth = _mm256_set1_pd(ath);
        int64_t nv = out ? VT__MIN(N4, (m + 4) / 4 * 4) : N4, ne = out ? VT__MIN(N, (m + 4) / 4 * 4) : N;
        for (n = 0; n < nv; n += 4) {
            __m256d sv = _mm256_mul_pd(va2, _mm256_loadu_pd(bn2 + n));
            __m256d tv = _mm256_mul_pd(vam, _mm256_loadu_pd(bn1 + n));
            __m256d uv = _mm256_mul_pd(va1, _mm256_loadu_pd(bmx + n));
            __m256d th = _mm256_mul_pd(vth, _mm256_loadu_pd(bth + n));
            sv = _mm256_min_pd(tv, sv); /* tv < sv ? tv : sv, sv when unordered: vt__gb_e's selects */
            sv = _mm256_min_pd(uv, sv);
            _mm256_storeu_pd(E + n, _mm256_andnot_pd(_mm256_cmp_pd(_mm256_mul_pd(sv, c40), th, _CMP_LT_OQ), _mm256_mul_pd(vG, sv)));
        }
        for (; n < ne; n++) E[n] = vt__gb_e(j, a1, a2, am, ath, m, n);
    }
}
#endif

static void vt__gbound_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__gbound_job *j = (vt__gbound_job *)arg;
    int64_t m;
    (void)tid;
#ifdef VT__AVX2
    if (!j->C0 && !j->bias && j->N <= 32) { vt__gb_short(j, lo, hi, 0); return; }
#endif
    for (m = lo; m < hi; m++)
        vt__gb_row(j, j->a->n1[m], j->a->n2[m], j->a->mx[m], j->a->th[m] * 0x1p-53, m, 0, j->N, j->E + m * j->lde);
}

/* E[M,N] (contiguous) = the bound above; call before vt__gemm_run while C
   still holds C0 (pass C0 = NULL when not accumulating). */
/* runs fn over [0,n) on the pool, or inline as thread tid when pool is NULL */
static void vt__tasks(vt__pool *p, int64_t n, int64_t work, vt__task_fn fn, void *arg, int tid) {
    if (p) vt__parallel(p, n, work, fn, arg);
    else if (n > 0) fn(arg, 0, n, tid);
}

/* doubles of workspace the bound of an M x N product needs: A's four
   statistics (4 M), B's and the bias's thresholds (5 N), then M + N ints
   (vt__stat_job's lsb, scratch for the statistics' walk). 5 (M + N) + 2
   was short where N > M: the ints ran past it, into arena memory that no
   one had taken yet while the statistics ran (found when a trial computed
   them later, after the GEMM had taken that memory). */
#define VT__BOUND_WS(M, N) (6 * ((M) + (N)) + 2)

/* the statistics and the factor G of the bound (everything but E); tri: A
   is a causal operand (vt__stat_lines), else VT__TRI_NONE. defer (not for
   an im2col B): the statistics' job is left in *defer for the caller to
   run, everything else is done */
static void vt__gemm_bound_setup(vt__pool *pool, int tid, const vt__ord *o, int64_t M, int64_t N, int64_t K, const double *A,
                                 int64_t sam, int64_t sak, const double *B, int64_t sbk, int64_t sbn, const double *C0,
                                 int64_t ldc, const double *bias, int64_t kchunk, double *st, vt__stat_job *sa,
                                 vt__stat_job *sb, vt__gbound_job *gb, const vt__wstat *ws, int tri, vt__stat2_job *defer) {
    int *ls = (int *)(st + 4 * (M + N) + N);
    int64_t kc = (kchunk <= 0 || kchunk > K) ? K : kchunk, nch = K > 0 ? (K + kc - 1) / kc : 1, n;
    sa->lsb = ls;
    sb->lsb = ls + M;
    sa->X = A; sa->s_outer = sam; sa->s_k = sak; sa->K = K; sa->cap = sb->cap = 0;
    sa->n1 = st; sa->n2 = st + M; sa->mx = st + 2 * M; sa->th = st + 3 * M;
    sb->X = B; sb->s_outer = sbn; sb->s_k = sbk; sb->K = K;
    sb->n1 = st + 4 * M; sb->n2 = sb->n1 + N; sb->mx = sb->n2 + N; sb->th = sb->mx + N;
    if (ws && pool) { /* B is an im2col matrix: its columns' statistics from per-pixel ones (vt__wstat_cols) */
        vt__tasks(pool, M, M * K, vt__stat_task, sa, tid);
        if (ws->lines) vt__wstat_lines(pool, ws, sb);
        else vt__wstat_cols(pool, ws, sb);
    } else { /* A's lines then B's, in one pass over the pool (both are K long) */
        vt__stat2_job s2;
        s2.a = sa; s2.b = sb; s2.M = M; s2.N = N; s2.tri = tri;
        s2.ga = vt__stat_group(sa); s2.gb = vt__stat_group(sb);
        s2.ta = (M + s2.ga - 1) / s2.ga;
        s2.n = s2.ta + (N + s2.gb - 1) / s2.gb;
        if (defer) *defer = s2;
        else vt__tasks(pool, s2.n, (M + N) * K, vt__stat2_task, &s2, tid);
    }
    gb->bth = sb->th + N;
    if (bias)
        for (n = 0; n < N; n++) gb->bth[n] = bias[n] == 0 ? INFINITY : vt__pow2(VT__MIN(vt__lsb(bias[n]) + 53, 1023));
    if (C0) { /* an all-zero C0 (gradients after zero_grad) adds exact zeros: leave it out */
        int64_t m2, any = 0;
        for (m2 = 0; m2 < M && !any; m2++)
            for (n = 0; n < N; n++) any |= C0[m2 * ldc + n] != 0;
        if (!any) C0 = NULL;
    }
    gb->a = sa; gb->b = sb; gb->C0 = C0; gb->ldc = ldc; gb->bias = bias; gb->E = NULL; gb->N = N; gb->lde = N;
    /* terms are exact (products of binary32 values, C0, bias): one chunk is a
       sum of K + [C0] + [bias] of them; chunks add nch - 1 + [C0] ordered
       roundings of inexact partials */
    gb->G = nch > 1 ? vt__gsum(o, kc) + vt__g(o, nch - 1 + (C0 ? 1 : 0)) * (1 + vt__gsum(o, kc))
                    : vt__gsum(o, K + (C0 ? 1 : 0) + (bias ? 1 : 0));
}
static void vt__gemm_bound_prep(vt__pool *pool, int tid, const vt__ord *o, int64_t M, int64_t N, int64_t K, const double *A,
                                int64_t sam, int64_t sak, const double *B, int64_t sbk, int64_t sbn, const double *C0,
                                int64_t ldc, const double *bias, int64_t kchunk, double *st, vt__stat_job *sa,
                                vt__stat_job *sb, vt__gbound_job *gb, const vt__wstat *ws, int tri) {
    vt__gemm_bound_setup(pool, tid, o, M, N, K, A, sam, sak, B, sbk, sbn, C0, ldc, bias, kchunk, st, sa, sb, gb, ws, tri, NULL);
}

/* vt__gemm_bound_prep for a lazy bound the calling task owns (no old
   value, no bias): A's lines under A ROW CAPS (vt__no_acap: all their
   statistics), B's lines as sums alone (B COLUMN SUMS for at most 512
   columns, B ROW SUMS for at most 64 rows: a bit a group in
   vt__own_bcols), else in full, on the calling thread */
static void vt__gemm_bound_own(int tid, const vt__ord *o, int64_t M, int64_t N, int64_t K, const double *A, int64_t sam, int64_t sak,
                               const double *B, int64_t sbk, int64_t sbn, int64_t ldc, double *st, vt__stat_job *sa, vt__stat_job *sb,
                               vt__gbound_job *gb, int tri) {
    vt__stat2_job s2;
    vt__gemm_bound_setup(NULL, tid, o, M, N, K, A, sam, sak, B, sbk, sbn, NULL, ldc, NULL, 0, st, sa, sb, gb, NULL, tri, &s2);
    sa->cap = !vt__no_acap;
    if (sa->cap && N <= 64 * vt__stat_group(sb) && !vt__no_bsum) sb->cap = 2; /* B COLUMN (ROW) SUMS (vt__own_bcols: 64 groups) */
    if (s2.n > 0) vt__stat2_task(&s2, 0, s2.n, tid);
}

static void vt__gemm_bound_ws(vt__pool *pool, int tid, const vt__ord *o, int64_t M, int64_t N, int64_t K, const double *A,
                              int64_t sam, int64_t sak, const double *B, int64_t sbk, int64_t sbn, const double *C0,
                              int64_t ldc, const double *bias, int64_t kchunk, double *E, int64_t lde, double *st, int tri) {
    vt__stat_job sa, sb;
    vt__gbound_job gb;
    vt__gemm_bound_prep(pool, tid, o, M, N, K, A, sam, sak, B, sbk, sbn, C0, ldc, bias, kchunk, st, &sa, &sb, &gb, NULL, tri);
    gb.E = E; gb.lde = lde;
    vt__tasks(pool, M, M * N, vt__gbound_task, &gb, tid);
}

static void vt__gemm_bound(vt_ctx *c, const vt__ord *o, int64_t M, int64_t N, int64_t K, const double *A, int64_t sam,
                           int64_t sak, const double *B, int64_t sbk, int64_t sbn, const double *C0, int64_t ldc,
                           const double *bias, int64_t kchunk, double *E) {
    double *st = (double *)vt__scratch(c, sizeof(double) * (size_t)VT__BOUND_WS(M, N));
    if (st) vt__gemm_bound_ws(&c->pool, 0, o, M, N, K, A, sam, sak, B, sbk, sbn, C0, ldc, bias, kchunk, E, N, st, VT__TRI_NONE);
}

/* CAPS BY HISTORY. A ROW CAPS and B's sums (B COLUMN SUMS, B ROW SUMS)
   save work only where few lines are looked at: a look walks its line's
   group in full, so a product that looks at most of its lines pays a
   second pass over the operand (from memory where it outgrows the cache)
   for statistics the job's first pass could have formed. How many lines
   are looked at grows with K (the bound's width), with the other side
   (outputs a line) and with the data, so each product shape keeps a
   record: the share of its groups the looks walked, halved toward each
   new product's share; a side whose share is VT__LZH_FULL or more, and
   that holds vt__lzh_big values or more (1 MiB: a smaller one stays in the
   cache, where a look's walk is cheap), gets its full statistics from the
   job instead (A in full takes B in full: the row caps use B's n2 and mx
   then), and every VT__LZH_PROBE-th product of the shape tries the caps
   again. Which walk forms a statistic changes no value (every walk gives
   the full walk's: LINES WALKED ONCE), only the time: a step's work may
   depend on the steps before it, its values and entries cannot. Only with GCC's atomics (the looks' counts). At width
   512 on an Intel Xeon (one thread) the looks walked 50-100% of most
   products' groups, and caps everywhere made a verified step 6% slower
   than the job's full statistics; at width 64 (1-3% of A's rows walked,
   up to 75% of a small B's) the caps are 2% faster. */
typedef struct vt__lzh {
    int64_t M, N, K, sam, sak, sbk, sbn; /* the shape */
    int64_t ag, bg; /* the last product's groups of A under caps and of B as sums (0: not) */
    int64_t aw, bw; /* and of them the ones its looks walked (added by the pool's threads) */
    double fa, fb;  /* the shares walked, halved toward each product's */
    int64_t n;      /* products of this shape */
} vt__lzh;
#define VT__LZH 64
#define VT__LZH_FULL 0.25
#define VT__LZH_PROBE 16
static VT__UNUSED int64_t vt__lzh_big = (int64_t)1 << 17; /* a side of fewer values keeps the caps (tests: 0) */
static VT__UNUSED int vt__lzh_force;    /* tests: 0 by history, 1 caps and sums always, 2 the job's full statistics always */
static VT__UNUSED int64_t vt__lzh_full; /* tests: products whose history gave a side its full statistics */
/* A LAZY BOUND. The bound of a product that writes its whole output (no old
   value, no batch of products) is a function of A's row statistics, B's
   column statistics and the bias, so vt__mm hands the rounding point those
   instead of M N bounds, and the rounding point computes a bound only where
   it looks. Row m has a cap W_m >= e[m,n] for every n: the same formula
   over the maxima of the column statistics (correctly rounded products,
   sums and minima of nonnegative values are monotone). A block of the row is
   looked at only when x is within the cap (widened as vt__widen) of a
   binary32 rounding boundary, or is NaN; the look (vt__lazy_groups) takes
   the groups of four values that asked, computes each one's e exactly as
   vt__gbound_task and applies vt__round_look, so the entries are those of
   the written-out bound. This saves writing and reading two doubles per
   output, most of a product's rounding-point cost.
   A batch of products that share A (a convolution's images: C_b = A B_b,
   B_b the columns [b nc, (b + 1) nc) of one B) is one lazy bound too: its
   output (nb, M, nc) is read as nb M rows of nc, row r = b M + m taking A's
   row m and B's columns from b nc (vt__mm_batch); each e is the one of the
   product C_b alone, and the caps, over all of B's columns, still cap it.
   A batch with old values (a convolution's dx accumulating onto the
   gradient its input already has: C_b = C0_b + A B_b) is lazy too where
   the old values outlive the product (a correctly rounded product keeps
   them for its exact evaluation: vt__mm_batch copies all images' in one
   pass over the pool, which also forms the caps): the look takes each C0
   from there, as vt__gbound_batch_task would (the same job, the same
   element: the same e), and row r's cap adds capc[r] >= max |C0| over the
   row: e = G ((s_n + |c0|) + |bias|) and each of G, s_n <= s, |c0| <=
   capc is nonnegative and every operation is monotone, so W still caps
   e ef2 (a non-finite old value makes capc infinite: the row is looked
   at everywhere). */
static int vt__no_lazy; /* tests: write every bound out, to compare the two */
typedef struct vt__lazy {
    vt__stat_job sa, sb;
    vt__gbound_job gb;
    double cap2, cap1, capm, capb;   /* max over columns of n2, n1, mx and |bias| */
    int64_t M, N;                    /* A's rows, B's columns */
    int64_t nb, nc;                  /* batches, and the columns of one (1 and N for one product) */
    const double *c0;                /* or the batch's old values (nb, M, nc) (gb.C0 is then NULL) */
    const double *capc;              /* and per row r = b M + m, a cap on |C0| over the row */
    vt__stat2_job s2;                /* STATISTICS IN THE PRODUCT'S JOB: the statistics' tasks, */
    int64_t nchunk, next, done;      /* in nchunk chunks: how many are claimed, how many finished */
    int pend, ready;                 /* pend: computed in the job; ready: they and the caps are */
    int *bst;                        /* B COLUMN (ROW) SUMS: per group of 8 columns (a row), 0 sums only, 1 being walked, 2 walked */
    int *ast;                        /* A ROW CAPS: the same per group of A's lines (LINES WALKED ONCE), or NULL; */
    double *amx;                     /* and their full walks' maxima */
    struct vt__lzh *h;               /* CAPS BY HISTORY: the shape's record (its walk counters), or NULL */
} vt__lazy;

/* the job of row r's look: batch b's columns of B's statistics and its old values */
static void vt__lazy_row(const vt__lazy *z, int64_t r, vt__gbound_job *g, vt__stat_job *sb, int64_t *n0) {
    int64_t b = r / z->M;
    *g = z->gb;
    *n0 = b * z->nc;
    if (!z->c0) return;
    *sb = z->sb;
    sb->n1 += b * z->nc; sb->n2 += b * z->nc; sb->mx += b * z->nc; sb->th += b * z->nc;
    g->b = sb; g->C0 = z->c0 + b * z->M * z->nc; g->ldc = z->nc;
    *n0 = 0;
}

/* the full walk (no tri) of line m's group of vt__stat_group lines, from a
   multiple of it (of M lines, the last group short), into st[4][8] at the
   line's place less *lo, the group's first line: the values the walk over
   all lines gives them (a rows walk's line does not depend on the others;
   a columns walk takes the line's group of 8 from a multiple of 8, the
   last one short, as vt__stat2_task's chunks) */
static void vt__stat_group_local(const vt__stat_job *j, int64_t M, int64_t m, double st[4][8], int64_t *lo) {
    vt__stat_job s = *j;
    int ls[8];
    int64_t g = vt__stat_group(j);
    *lo = m / g * g;
    s.cap = 0; s.X = j->X + *lo * j->s_outer;
    s.n1 = st[0]; s.n2 = st[1]; s.mx = st[2]; s.th = st[3]; s.lsb = ls;
    vt__stat_lines(&s, 0, VT__MIN(g, M - *lo), VT__TRI_NONE);
}
/* LINES WALKED ONCE: group g of a lazy bound's lines (vt__stat_group of
   them, of N) walked in full by the thread that claims it (*st 0 -> 1),
   the others waiting until it is done (2). The statistics go into the
   job's arrays, but for the one the caps' walk formed, which other rows'
   caps may be reading: B's n1 (the full walk's value) stays, A's mx (not
   the full walk's in a line with a NaN) goes to mx[] instead. Only with
   GCC's atomics (a claim; st is NULL without them). */
static void vt__walk_group(int *st, const vt__stat_job *j, int64_t N, int64_t g, double *mx, int64_t *walks) {
#if VT__SPIN
    int want = 0, spins = 0;
    if (VT__LOAD(st) == 2) return;
    if (VT__CAS(st, &want, 1)) {
        double loc[4][8];
        int64_t lo, i, gs = vt__stat_group(j);
        if (walks) VT__ADD(walks, 1);
        vt__stat_group_local(j, N, g * gs, loc, &lo);
        for (i = 0; i < VT__MIN(gs, N - lo); i++) {
            if (j->cap != 2) j->n1[lo + i] = loc[0][i];
            j->n2[lo + i] = loc[1][i];
            mx[lo + i] = loc[2][i];
            j->th[lo + i] = loc[3][i];
        }
        VT__STORE(st, 2);
    } else
        while (VT__LOAD(st) != 2) vt__spin(++spins);
#else
    (void)st; (void)j; (void)N; (void)g; (void)mx; (void)walks;
#endif
}

/* A's line m's statistics for a look (a[0..3]: n1, n2, mx, th 2^-53): the
   job's, or under A ROW CAPS the full walk's, once per group of lines
   (z->ast) or, without a claim, on the line's group at every look */
static void vt__lazy_astat(const vt__lazy *z, int64_t m, double *a) {
    const vt__stat_job *sa = &z->sa;
    if (sa->cap && z->ast) vt__walk_group(&z->ast[m / vt__stat_group(sa)], sa, z->M, m / vt__stat_group(sa), z->amx,
                                          z->h ? &z->h->aw : NULL);
    if (!sa->cap || z->ast) {
        a[0] = sa->n1[m]; a[1] = sa->n2[m]; a[2] = z->ast ? z->amx[m] : sa->mx[m]; a[3] = sa->th[m] * 0x1p-53;
    } else {
        double st[4][8];
        int64_t lo;
        vt__stat_group_local(sa, z->M, m, st, &lo);
        a[0] = st[0][m - lo]; a[1] = st[1][m - lo]; a[2] = st[2][m - lo]; a[3] = st[3][m - lo] * 0x1p-53;
    }
}

/* B COLUMN SUMS. Under A ROW CAPS a lazy bound's row width needs only
   cap1, the largest of B's column sums n1, which a columns walk adds in k
   order, line by line: the statistics' job forms n1 alone (vt__stat_caps,
   the same additions in the same order: the same n1), and a look makes
   sure of its columns' other statistics first (vt__lazy_bcols): each
   group of 8 columns is walked in full once (vt__walk_group); the walk's
   n1 is the job's. B ROW SUMS (vt__line_n1) do the same for B's lines
   that are rows, a claim a row. */
static void vt__lazy_bcols(const vt__lazy *z, int64_t n0, int64_t n1) {
    int64_t g, gs;
    if (z->sb.cap != 2) return;
    gs = vt__stat_group(&z->sb); /* (8 columns, or 1 row: B ROW SUMS) */
    for (g = n0 / gs; g * gs < n1; g++) vt__walk_group(&z->bst[g], &z->sb, z->N, g, z->sb.mx, z->h ? &z->h->bw : NULL);
}

static double vt__lazy_e(const vt__lazy *z, int64_t i) {
    vt__gbound_job g;
    vt__stat_job sb;
    int64_t r = i / z->nc, m = r % z->M, n0;
    double a[4];
    vt__lazy_row(z, r, &g, &sb, &n0);
    vt__lazy_astat(z, m, a);
    vt__lazy_bcols(z, n0 + i % z->nc, n0 + i % z->nc + 1);
    return vt__gb_e(&g, a[0], a[1], a[2], a[3], m, n0 + i % z->nc);
}

#ifdef VT__AVX512
/* vt__lazy_round_task's branch-free pass eight at a time (vt__isa512), as
   vt__round_pass512: one width w for the row, and an element above xcap (or
   NaN) asks for a look, as in the AVX2 form */
VT__T512 static int64_t vt__lazy_pass512(double *x, double *keep, int64_t n, double w, double xcap, int *any) {
    const __m512d wv = _mm512_set1_pd(w), xc = _mm512_set1_pd(xcap);
    __m256i acc = _mm256_setzero_si256();
    __mmask8 out = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d xv = _mm512_loadu_pd(x + i);
        __m256 l = _mm512_mask_cvtpd_ps(_mm256_setzero_ps(), 0xff, _mm512_sub_pd(xv, wv));
        __m256 h = _mm512_mask_cvtpd_ps(_mm256_setzero_ps(), 0xff, _mm512_add_pd(xv, wv));
        acc = _mm256_or_si256(acc, _mm256_xor_si256(_mm256_castps_si256(l), _mm256_castps_si256(h)));
        out |= _mm512_cmp_pd_mask(_mm512_abs_pd(xv), xc, _CMP_NLE_UQ);
        _mm512_storeu_pd(keep + i, xv);
        _mm512_storeu_pd(x + i, _mm512_mask_cvtps_pd(_mm512_setzero_pd(), 0xff, l));
    }
    *any |= !_mm256_testz_si256(acc, acc) || out != 0;
    return i;
}
#endif

/* A look of vt__lazy_rows, element by element: x[0, n) is a block of row
   m (its element 0 is column n0 of the job's B statistics, element b0 of
   the point), the pass cast x[0, nv) and kept the old values in keep. The
   pass's test again, four at a time, finds the groups that asked (the same
   operations per element as the pass, in AVX2 or AVX-512: the same
   answer); only their elements, and the elements from nv on, are tested
   with their own e (vt__gb_e, what vt__gb_row's lanes compute) by
   vt__round_look, and cast. The elements of the other groups are where the
   two ends agree under a width at least their own: no entry, their cast
   already made. A block look took vt__gb_row and vt__round_look over all
   256 values for the one or two that asked. */
static void vt__lazy_groups(const vt__rjob *j, vt__ents *t, const vt__gbound_job *gr, double a1, double a2, double am, double ath,
                            int64_t m, int64_t n0, int64_t b0, double *x, const double *keep, int64_t nv, int64_t n, double W,
                            double xcap) {
    const vt__lazy *z = j->lz;
    int64_t i = 0, q;
#ifndef VT__AVX2
    (void)W; (void)xcap; /* (no pass: nv is 0, every element is looked at) */
#else
    const __m256d sign = _mm256_set1_pd(-0.0), wv = _mm256_set1_pd(W + xcap * 0x1p-50), xc = _mm256_set1_pd(xcap);
    for (; i + 4 <= nv; i += 4) {
        __m256d xv = _mm256_loadu_pd(keep + i);
        __m128 l = _mm256_cvtpd_ps(_mm256_sub_pd(xv, wv)), h = _mm256_cvtpd_ps(_mm256_add_pd(xv, wv));
        __m128i d = _mm_xor_si128(_mm_castps_si128(l), _mm_castps_si128(h));
        if (_mm_testz_si128(d, d) && !_mm256_movemask_pd(_mm256_cmp_pd(_mm256_andnot_pd(sign, xv), xc, _CMP_NLE_UQ))) continue;
        vt__lazy_bcols(z, n0 + i, n0 + i + 4);
        for (q = i; q < i + 4; q++) {
            double e = vt__gb_e(gr, a1, a2, am, ath, m, n0 + q);
            vt__round_look(j, t, keep + q, &e, 1, b0 + q);
            x[q] = (double)(float)keep[q];
        }
    }
#endif
    vt__lazy_bcols(z, n0 + i, n0 + n);
    for (q = i; q < n; q++) { /* (the pass's elements from nv on are not cast yet, and x holds them) */
        double xv = q < nv ? keep[q] : x[q], e = vt__gb_e(gr, a1, a2, am, ath, m, n0 + q);
        vt__round_look(j, t, &xv, &e, 1, b0 + q);
        x[q] = (double)(float)xv;
    }
}

/* a row's cap on vt__gb_e's statistic: its candidates against the maxima
   (p1, p2, pm) of B's n1, n2 and mx over the columns, the minimum of the
   three as vt__gb_e takes it (each candidate is monotone in the maxima) */
static double vt__lazy_cap(double a1, double a2, double am, double p1, double p2, double pm) {
    double s = a2 * p2, t = am * p1, u = a1 * pm;
    s = t < s ? t : s;
    return u < s ? u : s;
}
/* row m's cap from A's statistics: under A ROW CAPS (mx alone) am p1, the
   candidate vt__lazy_cap's minimum is at most */
static double vt__row_cap(const vt__stat_job *a, int64_t m, double p1, double p2, double pm) {
    return a->cap ? a->mx[m] * p1 : vt__lazy_cap(a->n1[m], a->n2[m], a->mx[m], p1, p2, pm);
}

/* B's line n into the caps p1, p2, pm (the maxima of n1, n2 and mx); under
   B COLUMN (ROW) SUMS n1 alone is formed, and A ROW CAPS read p1 alone */
static void vt__caps_line(const vt__stat_job *b, int64_t n, double *p1, double *p2, double *pm) {
    *p1 = VT__MAX(*p1, b->n1[n]);
    if (b->cap != 2) { *p2 = VT__MAX(*p2, b->n2[n]); *pm = VT__MAX(*pm, b->mx[n]); }
}
/* the caps over B's columns (and the bias) of a lazy bound, from its statistics */
static void vt__lazy_caps(vt__lazy *z) {
    int64_t n;
    z->cap2 = z->cap1 = z->capm = z->capb = 0;
    for (n = 0; n < z->N; n++) {
        vt__caps_line(&z->sb, n, &z->cap1, &z->cap2, &z->capm);
        if (z->gb.bias) z->capb = VT__MAX(z->capb, fabs(z->gb.bias[n]));
    }
}

/* STATISTICS IN THE PRODUCT'S JOB. A verified product with a lazy bound ran
   its statistics as a job of their own on the pool, then the product's: at
   width 64 on two threads that was 54 more jobs a step than fp64 (268
   against 214), each a wake-up and a wait for the slower thread. Now the
   product's tile and chunk tasks first claim the statistics' chunks from
   the lazy bound's own counter while any are left (vt__pstat_help; not
   the job of B's shared panels, often one task, which the pool runs on
   the caller alone); the thread that finishes the last one forms the
   caps; a tile about to round its outputs, and the caller after the
   product, wait until then, claiming any still unclaimed. Each line's
   statistics are computed by the same function, whichever thread and
   whenever: the same values. Without GCC's atomics they run before the
   product, as before. */
static VT__UNUSED int vt__pstat_stall_us; /* tests: each chunk of statistics takes this much longer */
static VT__UNUSED int64_t vt__pstat_early; /* tests: tiles that found their statistics not ready */
static void vt__pstat_help(vt__lazy *z) {
#if VT__SPIN
    int64_t i, lo, hi;
    while (VT__LOAD(&z->next) < z->nchunk && (i = VT__ADD(&z->next, 1) - 1) < z->nchunk) {
        if (vt__pstat_stall_us) vt__sleep_us(vt__pstat_stall_us);
        vt__range(z->s2.n, (int)z->nchunk, (int)i, &lo, &hi);
        if (hi > lo) vt__stat2_task(&z->s2, lo, hi, 0);
        if (VT__ADD(&z->done, 1) == z->nchunk) {
            vt__lazy_caps(z);
            VT__STORE(&z->ready, 1);
        }
    }
#else
    (void)z;
#endif
}
static void vt__pstat_wait(vt__lazy *z) {
#if VT__SPIN
    int spins = 0;
    vt__pstat_help(z);
    while (!VT__LOAD(&z->ready)) vt__spin(++spins);
#else
    (void)z;
#endif
}

#ifdef VT__AVX2
/* vt__lazy_rows's pass on x[0, 4), one width wv for the row: the two ends
   differ (into *acc), or |x| is above xcap or NaN (into *out); the old
   values into keep, the low end (the cast where the ends agree) into x */
static VT__INLINE void vt__lazy4(double *x, double *keep, __m256d wv, __m256d xc, __m128i *acc, __m256d *out) {
    const __m256d sign = _mm256_set1_pd(-0.0);
    __m256d xv = _mm256_loadu_pd(x);
    __m128 l = _mm256_cvtpd_ps(_mm256_sub_pd(xv, wv)), h = _mm256_cvtpd_ps(_mm256_add_pd(xv, wv));
    *acc = _mm_or_si128(*acc, _mm_xor_si128(_mm_castps_si128(l), _mm_castps_si128(h)));
    *out = _mm256_or_pd(*out, _mm256_cmp_pd(_mm256_andnot_pd(sign, xv), xc, _CMP_NLE_UQ));
    _mm256_storeu_pd(keep, xv);
    _mm256_storeu_pd(x, _mm256_cvtps_pd(l));
}
#endif
/* the trainer's rule on rows [r0, r1), columns [c0, c1) of a point with a
   lazy bound, in blocks of up to 256 columns from c0 (where a block starts
   changes no value, entry or NaN: each element is cast, or looked at with
   its own bound, by the same rule) */
static void vt__lazy_rows(const vt__rjob *j, vt__ents *t, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const vt__lazy *z = j->lz;
    const vt__gbound_job *g = &z->gb;
    double ef2 = 2 * j->ef * VT__SAFE, e[256], keep[256];
    int64_t r, m, n0, i, nv;
    for (r = r0; r < r1; r++) {
        int64_t cb; /* the look's first column of its job's B statistics */
        double a[4], s, W, xcap;
        int have = 0; /* a holds the row's statistics (a look's) */
        vt__gbound_job gr;
        vt__stat_job sr;
        m = r % z->M;
        s = vt__row_cap(g->a, m, z->cap1, z->cap2, z->capm);
        if (z->c0) s += z->capc[r];
        W = g->G * (s + z->capb) * ef2;
        /* |x| is at most about s + capb; an element above xcap (or NaN) is
           looked at, and below it W + xcap 2^-50 is at least the look's
           e ef2 + |x| 2^-50: one width for the whole row */
        xcap = 2 * (s + z->capb);
        for (n0 = c0; n0 < c1; n0 += 256) {
            int64_t n = VT__MIN(256, c1 - n0);
            double *x = j->x + r * z->nc + n0;
            int any = !(W < INFINITY && xcap < INFINITY); /* NaN or infinite statistics: look everywhere */
            i = 0;
#ifdef VT__AVX2
            if (!any) { /* as in vt__round_task: the agreeing end is the cast */
                const __m256d wv = _mm256_set1_pd(W + xcap * 0x1p-50), xc = _mm256_set1_pd(xcap);
                __m128i acc = _mm_setzero_si128();
                __m256d out = _mm256_setzero_pd();
#ifdef VT__AVX512
                if (vt__isa512()) i = vt__lazy_pass512(x, keep, n, W + xcap * 0x1p-50, xcap, &any);
#endif
                for (; i + 8 <= n; i += 8) { /* (two vectors a trip: the loop's own instructions were a quarter of it) */
                    vt__lazy4(x + i, keep + i, wv, xc, &acc, &out);
                    vt__lazy4(x + i + 4, keep + i + 4, wv, xc, &acc, &out);
                }
                for (; i + 4 <= n; i += 4) vt__lazy4(x + i, keep + i, wv, xc, &acc, &out);
                any |= !_mm_testz_si128(acc, acc) || _mm256_movemask_pd(out) != 0;
            }
#endif
            nv = i;
            for (; i < n && !any; i++) {
                double xv = x[i], w = W + fabs(xv) * 0x1p-50;
                any |= (int)(vt__fbits((float)(xv - w)) != vt__fbits((float)(xv + w))) | (int)(xv != xv);
            }
            /* a look: its job (built only then), then the groups that asked, or the whole block where the
               statistics are NaN or infinite (no pass ran); else the rest of the casts (this form, not one
               nested if, is 0.14 M instructions a C64 step cheaper as gcc 12 lays it out) */
            if (any) {
                vt__lazy_row(z, r, &gr, &sr, &cb);
                if (!have) vt__lazy_astat(z, m, a);
                have = 1;
            }
            if (any && W < INFINITY && xcap < INFINITY) vt__lazy_groups(j, t, &gr, a[0], a[1], a[2], a[3], m, cb + n0, r * z->nc + n0, x,
                                                                      keep, nv, n, W, xcap);
            else if (any) {
                memcpy(x, keep, sizeof(double) * (size_t)nv);
                vt__lazy_bcols(z, cb + n0, cb + n0 + n);
                vt__gb_row(&gr, a[0], a[1], a[2], a[3], m, cb + n0, n, e);
                vt__round_look(j, t, x, e, n, r * z->nc + n0);
                vt__cast_block(x, n);
            } else vt__cast_block(x + nv, n - nv);
        }
    }
}
static void vt__lazy_round_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__rjob *j = (vt__rjob *)arg;
    vt__lazy_rows(j, &j->c->tents[tid], lo, hi, 0, j->lz->nc);
}
/* A FUSED PRODUCT: the rule on a finished tile of the GEMM (vt__gemm_task);
   A FUSED CAST: the cast or the NaN check, row by row (the passes' own
   tasks on the tile's index ranges) */
static void vt__lazy_tile(const vt__rjob *j, int tid, int64_t m0, int64_t mb, int64_t n0, int64_t nb) {
    int64_t r;
    if (!j->cast) {
#if VT__SPIN
        if (j->lz->pend && !VT__LOAD(&j->lz->ready)) VT__ADD(&vt__pstat_early, 1);
#endif
        vt__lazy_rows(j, &j->c->tents[tid], m0, m0 + mb, n0, n0 + nb);
        return;
    }
    for (r = m0; r < m0 + mb; r++)
        vt__cast_span(j, j->off + r * j->ld + n0, j->off + r * j->ld + n0 + nb, tid);
}

/* the trainer's rule for a point with a lazy bound (vt__cpu_round's twin) */
static int64_t vt__lazy_round(vt_ctx *c, double *x, const vt__lazy *z, double ef, int compact, vt__ents *out) {
    vt__rjob job;
    int t, nt = c->pool.n;
    for (t = 0; t < nt; t++) { c->tents[t].n = 0; c->tents[t].bad = -1; }
    job.c = c; job.x = x; job.e = NULL; job.ef = ef; job.compact = compact; job.lz = z; job.tri = 0;
    job.gs = c->rxp ? c->rxp->gs : 0; job.gx = c->rxp ? c->rxp->gx : 0;
    vt__parallel(&c->pool, z->nb * z->M, 4 * z->nb * z->M * z->nc, vt__lazy_round_task, &job);
    return vt__ents_gather(c, out);
}

#if VT__SPIN
/* the record of a shape (NULL: no room), the last product's shares folded in */
static vt__lzh *vt__lzh_of(vt_ctx *c, int64_t M, int64_t N, int64_t K, int64_t sam, int64_t sak, int64_t sbk, int64_t sbn) {
    vt__lzh *h = NULL;
    int i;
    if (!c->lzh) {
        if (!(c->lzh = (vt__lzh *)VT_MALLOC(sizeof(vt__lzh) * VT__LZH, c->u))) return NULL;
        c->nlzh = 0;
    }
    for (i = 0; i < c->nlzh && !h; i++)
        if (c->lzh[i].M == M && c->lzh[i].N == N && c->lzh[i].K == K && c->lzh[i].sam == sam && c->lzh[i].sak == sak &&
            c->lzh[i].sbk == sbk && c->lzh[i].sbn == sbn)
            h = &c->lzh[i];
    if (!h) {
        if (c->nlzh == VT__LZH) return NULL;
        h = &c->lzh[c->nlzh++];
        memset(h, 0, sizeof *h);
        h->M = M; h->N = N; h->K = K; h->sam = sam; h->sak = sak; h->sbk = sbk; h->sbn = sbn;
    }
    if (h->ag) h->fa = 0.5 * (h->fa + (double)VT__LOAD(&h->aw) / (double)h->ag);
    if (h->bg) h->fb = 0.5 * (h->fb + (double)VT__LOAD(&h->bw) / (double)h->bg);
    h->ag = h->bg = 0;
    VT__STORE(&h->aw, 0);
    VT__STORE(&h->bw, 0);
    return h;
}
/* the record's choice for a side of `values` values whose looks walked
   `share` of its groups: 1 the caps (A) or the sums (B), 0 the job's full
   statistics */
static int vt__lzh_caps(int probe, double share, int64_t values) {
    return vt__lzh_force == 1 || (vt__lzh_force == 0 && (probe || share < VT__LZH_FULL || values < vt__lzh_big));
}
/* a claim per group of j's lines (LINES WALKED ONCE), all 0, and how many
   groups there are (*ng); NULL out of scratch memory */
static int *vt__group_claims(vt_ctx *c, const vt__stat_job *j, int64_t lines, int64_t *ng) {
    int *st;
    *ng = (lines + vt__stat_group(j) - 1) / vt__stat_group(j);
    st = (int *)vt__scratch(c, sizeof(int) * (size_t)(*ng + 1)); /* (+ 1: no lines) */
    if (st) memset(st, 0, sizeof(int) * (size_t)(*ng + 1));
    return st;
}
#endif

/* the statistics of C = A B (+ C0) (+ bias) in scratch memory (NULL when out
   of it): a lazy bound when z->gb.C0 is NULL (no old value, or an all-zero
   one), else the caller writes the bound out with vt__gbound_task. defer
   (and a lazy bound): the statistics are left pending (z->pend) for the
   product's job (STATISTICS IN THE PRODUCT'S JOB), c->gstat */
static vt__lazy *vt__gemm_lazy(vt_ctx *c, const vt__ord *o, int64_t M, int64_t N, int64_t K, const double *A, int64_t sam,
                               int64_t sak, const double *B, int64_t sbk, int64_t sbn, const double *C0, const double *bias,
                               int64_t kchunk, const vt__wstat *ws, int defer) {
    vt__lazy *z = (vt__lazy *)vt__scratch(c, sizeof(vt__lazy));
    double *st = (double *)vt__scratch(c, sizeof(double) * (size_t)VT__BOUND_WS(M, N));
    if (!z || !st) return NULL;
    z->pend = 0;
    vt__gemm_bound_setup(&c->pool, 0, o, M, N, K, A, sam, sak, B, sbk, sbn, C0, N, bias, kchunk, st, &z->sa, &z->sb, &z->gb, ws,
                         VT__TRI_NONE, ws ? NULL : &z->s2);
    z->gb.a = &z->sa; z->gb.b = &z->sb;
    z->M = M; z->N = N; z->nb = 1; z->nc = N; z->c0 = NULL; z->capc = NULL;
    z->sa.cap = !ws && !z->gb.C0 && !vt__no_acap; /* A ROW CAPS where the bound is lazy (no old value: none written out) */
    z->bst = z->ast = NULL;
    z->h = NULL;
#if VT__SPIN
    {
        int bsum = z->sa.cap && !vt__no_bsum;
        int64_t ng;
        if (z->sa.cap && (z->h = vt__lzh_of(c, M, N, K, sam, sak, sbk, sbn))) { /* CAPS BY HISTORY */
            int probe = z->h->n++ % VT__LZH_PROBE == 0;
            z->sa.cap = vt__lzh_caps(probe, z->h->fa, M * K);
            bsum &= z->sa.cap && vt__lzh_caps(probe, z->h->fb, N * K);
            if (!bsum) VT__ADD(&vt__lzh_full, 1); /* (contexts may run in threads of their own) */
        }
        /* LINES WALKED ONCE; B COLUMN SUMS, B ROW SUMS */
        if (z->sa.cap && (z->amx = (double *)vt__scratch(c, sizeof(double) * (size_t)M)) &&
            (z->ast = vt__group_claims(c, &z->sa, M, &ng)) && z->h)
            z->h->ag = ng;
        if (bsum && (z->bst = vt__group_claims(c, &z->sb, N, &ng))) {
            z->sb.cap = 2;
            if (z->h) z->h->bg = ng;
        }
    }
#endif
    if (!ws) { /* the statistics' job (its lines point to z's own): now, or in the product's */
        z->s2.a = &z->sa; z->s2.b = &z->sb;
        z->nchunk = VT__MIN(z->s2.n, (int64_t)VT__CHUNKS_PER_THREAD * c->pool.n);
        z->next = z->done = 0;
        z->ready = 0;
#if VT__SPIN
        if (defer && !z->gb.C0 && K > 0 && M > 0 && N > 0) {
            z->pend = 1;
            c->gstat = z;
            return z;
        }
#else
        (void)defer;
#endif
        vt__tasks(&c->pool, z->s2.n, (M + N) * K, vt__stat2_task, &z->s2, 0);
    }
    vt__lazy_caps(z);
    z->ready = 1;
    return z;
}

/* A whole product on the calling thread (thread tid of a pool task), for
   kernels that run many small products in parallel (attention heads).
   ws: VT__BOUND_WS(M, N) doubles; tb: a packing buffer of vt__gemm_tbytes().
   tri: VT__TRI_* (CAUSAL PRODUCTS), for square products whose zeros the
   caller has checked; the bound is the full product's either way (with OUT
   only the wanted outputs' bounds are written: vt__gb_e and the vector lanes
   compute each the same way, so the row's length changes none). */
static size_t vt__gemm_tbytes(const vt__ord *o) {
    int64_t kcmax = o->chaos ? 512 : o->block;
    /* A's block, B's panel (NC columns rounded up to a whole micro-panel of
       either kernel set) and the chunk tile */
    return sizeof(double) * (size_t)(VT__MC * kcmax + kcmax * (VT__NC + 32)) + sizeof(double) * VT__MC * VT__NC;
}

static void vt__mm_serial(const vt__ord *o, int tid, int acc, int tri, int64_t M, int64_t N, int64_t K, const double *A,
                          int64_t sam, int64_t sak, const double *B, int64_t sbk, int64_t sbn, double *C, int64_t ldc,
                          double *E, int64_t lde, double *ws, void *tb) {
    vt__gemm g;
    void *tbuf[1];
    int64_t i, j;
    if (E && tri == VT__TRI_OUT && !acc) { /* the bound of the wanted outputs (row m: n <= m), and of the
                                             others up to the row's next multiple of 4 (whole vectors: no
                                             scalar tail; E there is the full product's, which no one reads) */
        vt__stat_job sa, sb;
        vt__gbound_job gb;
        vt__gemm_bound_prep(NULL, tid, o, M, N, K, A, sam, sak, B, sbk, sbn, NULL, ldc, NULL, 0, ws, &sa, &sb, &gb, NULL, VT__TRI_NONE);
        gb.E = E; gb.lde = lde;
#ifdef VT__AVX2
        if (N <= 64) vt__gb_short(&gb, 0, M, 1);
        else
#endif
        for (i = 0; i < M; i++) {
            gb.N = VT__MIN(N, (i + 4) / 4 * 4);
            vt__gbound_task(&gb, i, i + 1, tid);
        }
    } else if (E) /* KLE, KGE: A's causal zeros are the ones its statistics skip */
        vt__gemm_bound_ws(NULL, tid, o, M, N, K, A, sam, sak, B, sbk, sbn, acc ? C : NULL, ldc, NULL, 0, E, lde, ws,
                          tri == VT__TRI_OUT ? VT__TRI_NONE : tri);
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        if (!acc)
            for (i = 0; i < M; i++)
                for (j = 0; j < N; j++) C[i * ldc + j] = 0;
        return;
    }
    memset(&g, 0, sizeof g);
    g.set = !acc; /* the first k-block writes C: vt__gemm_set's argument */
    g.tri = tri;
    tbuf[0] = tb;
    g.o = o; g.M = M; g.N = N; g.K = K;
    g.A = A; g.sam = sam; g.sak = sak; g.B = B; g.sbk = sbk; g.sbn = sbn; g.C = C; g.ldc = ldc;
    g.kchunk = K; g.nch = 1;
    g.tbuf = tbuf; g.tbytes = vt__gemm_tbytes(o); g.ks = vt__gemm_isa();
    g.nc = VT__NC; g.tn = (N + g.nc - 1) / g.nc;
    g.mc = ((M + VT__MC - 1) / VT__MC) * VT__MC; g.tm = 1;
    vt__gemm_task(&g, 0, g.tn, 0);
}

/* ==========================================================================
   >>tensors
   ========================================================================== */

VTDEF int64_t vt_numel(const vt_tensor *t) {
    int64_t n = 1;
    int i;
    if (!t) return 0;
    for (i = 0; i < t->ndim; i++) n *= t->ne[i];
    return n;
}

VTDEF int vt_is_contiguous(const vt_tensor *t) {
    int64_t s = 1;
    int i;
    for (i = t->ndim - 1; i >= 0; i--) {
        if (t->ne[i] != 1 && t->nb[i] != s) return 0;
        s *= t->ne[i];
    }
    return 1;
}

VTDEF void vt_set_name(vt_tensor *t, const char *name) {
    if (!t) return;
    snprintf(t->name, sizeof t->name, "%s", name ? name : "");
}

static void vt__shape_str(const vt_tensor *t, char *buf, size_t n) {
    int i;
    size_t l;
    snprintf(buf, n, "(");
    for (i = 0; t && i < t->ndim; i++) {
        l = strlen(buf);
        snprintf(buf + l, n - l, i ? ",%lld" : "%lld", (long long)t->ne[i]);
    }
    l = strlen(buf);
    snprintf(buf + l, n - l, ")");
}

static void *vt__scratch(vt_ctx *c, size_t n) {
    void *p = vt__arena_alloc(&c->scratch, n);
    if (!p) vt__fail(c, VT_ERR_NOMEM, "out of memory: %zu bytes of op scratch", n);
    return p;
}

static void **vt__tbufs(vt_ctx *c, size_t bytes) {
    /* one buffer per thread, from the scratch arena */
    void **b = (void **)vt__scratch(c, sizeof(void *) * (size_t)c->pool.n);
    int i;
    if (!b) return NULL;
    for (i = 0; i < c->pool.n; i++) {
        b[i] = vt__scratch(c, bytes);
        if (!b[i]) return NULL;
    }
    return b;
}

static void *vt__persist_alloc(vt_ctx *c, size_t n) {
    void *p;
    int64_t cap = c->cpers;
    if (!vt__grow(c, (void **)&c->pers, &cap, c->npers + 1, sizeof(void *))) return NULL;
    c->cpers = (int)cap;
    p = vt__xmalloc(c, n);
    if (!p) return NULL;
    memset(p, 0, n);
    c->pers[c->npers++] = p;
    return p;
}

/* A shape: 0..VT_MAX_DIMS dimensions, none negative, and at most
   VT__MAX_NUMEL elements counting only the non-zero dimensions, so that no
   product of dimensions anywhere (element counts, byte counts, strides)
   overflows: (2^32, 2^32) must not pass as 2^64 = 0 elements. Zero-size
   dimensions are legal here (an empty slice); ops refuse empty operands
   (vt__node). */
#define VT__MAX_NUMEL ((int64_t)1 << 56)
static int vt__check_shape(vt_ctx *c, int ndim, const int64_t *ne, const char *what) {
    int i;
    int64_t n = 1;
    if (ndim < 0 || ndim > VT_MAX_DIMS || (ndim > 0 && !ne)) {
        vt__fail(c, VT_ERR_SHAPE, "%s: %d dimensions (0..%d allowed)", what, ndim, VT_MAX_DIMS);
        return 0;
    }
    for (i = 0; i < ndim; i++) {
        if (ne[i] < 0) { vt__fail(c, VT_ERR_SHAPE, "%s: dimension %d is %lld", what, i, (long long)ne[i]); return 0; }
        if (ne[i] > 0 && ne[i] > VT__MAX_NUMEL / n) {
            vt__fail(c, VT_ERR_SHAPE, "%s: dimension %d (%lld) makes the element count overflow (at most 2^56 elements)", what, i,
                     (long long)ne[i]);
            return 0;
        }
        if (ne[i] > 0) n *= ne[i];
    }
    return 1;
}

static vt_tensor *vt__mk(vt_ctx *c, vt_dtype dt, int ndim, const int64_t *ne, int persist, int alloc_data) {
    vt_tensor *t;
    int64_t n = 1, s = 1;
    int i;
    if (c->status != VT_OK) return NULL;
    if (!vt__check_shape(c, ndim, ne, "new tensor")) return NULL;
    t = (vt_tensor *)(persist ? vt__persist_alloc(c, sizeof(vt_tensor)) : vt__arena_alloc(&c->step, sizeof(vt_tensor)));
    if (!t) { vt__fail(c, VT_ERR_NOMEM, "out of memory for a tensor header"); return NULL; }
    memset(t, 0, sizeof *t);
    t->dtype = dt;
    t->ndim = ndim;
    for (i = ndim - 1; i >= 0; i--) { t->ne[i] = ne[i]; t->nb[i] = s; s *= ne[i]; }
    for (i = 0; i < ndim; i++) n *= ne[i];
    t->id = c->next_id++;
    t->grad_fresh = 1;
    t->loc = VT__LOC_HOST;
    if (persist) t->flags |= VT_FLAG_PERSIST;
    if (alloc_data) {
        size_t bytes = (size_t)(n ? n : 1) * (dt == VT_I32 ? sizeof(int32_t) : sizeof(double));
        t->data = persist ? vt__persist_alloc(c, bytes) : vt__arena_alloc(&c->step, bytes);
        if (!t->data) { vt__fail(c, VT_ERR_NOMEM, "out of memory for tensor data (%zu bytes)", bytes); return NULL; }
        if (!persist && alloc_data == 1) memset(t->data, 0, bytes); /* 2: left uninitialised (a kernel writes it all) */
    }
    return t;
}

VTDEF vt_tensor *vt_new(vt_ctx *c, vt_dtype dt, int ndim, const int64_t *ne) { return vt__mk(c, dt, ndim, ne, 0, 1); }
VTDEF vt_tensor *vt_new_persistent(vt_ctx *c, vt_dtype dt, int ndim, const int64_t *ne) { return vt__mk(c, dt, ndim, ne, 1, 1); }

/* A state tensor's name goes into three places: the state digest (as
   length-prefixed bytes), error messages, and a checkpoint's safetensors
   header as a JSON key. Rather than escape JSON on write and unescape on
   read, vt_param takes only names that need no escaping anywhere: 1..47
   bytes (the tensor's name field; longer names used to be cut, and two
   long names collided) of printable ASCII without '"' and '\'. Such a key
   is valid UTF-8 and valid JSON as it stands, so every safetensors reader
   takes the file, and every name round-trips byte for byte. Reserved:
   "__metadata__" (safetensors' own key) and names that begin "optim" and a
   digit (the optimizer moments, "optim0.m"). Returns 1 if name is usable,
   else 0 with the reason in why. */
static int vt__name_ok(const char *name, char *why, size_t n) {
    size_t k, len = name ? strlen(name) : 0;
    if (!len || len >= sizeof(((vt_tensor *)0)->name)) {
        snprintf(why, n, "a name needs 1..%d bytes, '%.60s%s' has %zu", (int)sizeof(((vt_tensor *)0)->name) - 1, name ? name : "",
                 len > 60 ? "..." : "", len);
        return 0;
    }
    for (k = 0; k < len; k++) {
        unsigned char ch = (unsigned char)name[k];
        if (ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\') {
            snprintf(why, n, "name '%.60s' has byte 0x%02x at %zu: names are printable ASCII without '\"' and '\\'", name, ch, k);
            return 0;
        }
    }
    if (!strcmp(name, "__metadata__") || (!strncmp(name, "optim", 5) && name[5] >= '0' && name[5] <= '9')) {
        snprintf(why, n, "name '%s' is reserved (safetensors' \"__metadata__\", the optimizer moments' \"optimN...\")", name);
        return 0;
    }
    return 1;
}

VTDEF vt_tensor *vt_param(vt_ctx *c, const char *name, int ndim, const int64_t *ne) {
    vt_tensor *t, *g;
    int64_t cap;
    int i;
    char why[200];
    if (c->status != VT_OK) return NULL;
    if (c->in_step) { vt__fail(c, VT_ERR_STATE, "vt_param(%s): parameters are created outside a step", name ? name : ""); return NULL; }
    if (!vt__name_ok(name, why, sizeof why)) { vt__fail(c, VT_ERR_ARG, "vt_param: %s", why); return NULL; }
    for (i = 0; i < c->nparams; i++)
        if (!strcmp(c->params[i]->name, name)) { vt__fail(c, VT_ERR_ARG, "vt_param: a parameter named '%s' exists already", name); return NULL; }
    if (!vt__check_shape(c, ndim, ne, "vt_param")) return NULL;
    for (i = 0; i < ndim; i++)
        if (ne[i] == 0) { vt__fail(c, VT_ERR_SHAPE, "vt_param(%s): dimension %d is 0: a parameter needs at least one element", name, i); return NULL; }
    t = vt__mk(c, c->d.mode == VT_MODE_FP64 ? VT_F64 : VT_F32, ndim, ne, 1, 1);
    g = vt__mk(c, t ? t->dtype : VT_F32, ndim, ne, 1, 1);
    if (!t || !g) return NULL;
    t->flags |= VT_FLAG_PARAM | VT_FLAG_GRAD;
    t->grad = g;
    vt_set_name(t, name);
    cap = c->cparams;
    if (!vt__grow(c, (void **)&c->params, &cap, c->nparams + 1, sizeof(vt_tensor *))) return NULL;
    c->cparams = (int)cap;
    c->params[c->nparams++] = t;
    return t;
}

VTDEF int vt_param_count(const vt_ctx *c) { return c->nparams; }
VTDEF vt_tensor *vt_param_at(const vt_ctx *c, int i) { return (i >= 0 && i < c->nparams) ? c->params[i] : NULL; }
VTDEF int64_t vt_param_numel(const vt_ctx *c) {
    int64_t n = 0;
    int i;
    for (i = 0; i < c->nparams; i++) n += vt_numel(c->params[i]);
    return n;
}

/* element offsets of a (possibly strided) tensor, in logical row-major order */
static int64_t vt__off(const vt_tensor *t, int64_t li) {
    int64_t off = 0;
    int d;
    for (d = t->ndim - 1; d >= 0; d--) {
        int64_t i = li % t->ne[d];
        li /= t->ne[d];
        off += i * t->nb[d];
    }
    return off;
}

VTDEF vt_status vt_write_f64(vt_ctx *c, vt_tensor *t, const double *v) {
    int64_t i, n = vt_numel(t);
    if (!t || !v) return vt__fail(c, VT_ERR_ARG, "vt_write_f64: NULL tensor or data");
    if (t->dtype == VT_I32) return vt__fail(c, VT_ERR_ARG, "vt_write_f64: tensor '%s' holds int32", t->name);
    vt__host_dirty(c, t);
    /* outside VT_MODE_FP64 every value an op reads is a binary32 value (the
       bounds assume it: a product of two binary64 values is not exact), so
       binary64 input is rounded here, whatever the tensor's dtype */
    for (i = 0; i < n; i++) {
        double x = v[i];
        if (c->d.mode != VT_MODE_FP64) x = (double)(float)x;
        vt__d(t)[vt__off(t, i)] = x;
    }
    return c->status;
}

VTDEF vt_status vt_write_f32(vt_ctx *c, vt_tensor *t, const float *v) {
    int64_t i, n = vt_numel(t);
    if (!t || !v) return vt__fail(c, VT_ERR_ARG, "vt_write_f32: NULL tensor or data");
    if (t->dtype == VT_I32) return vt__fail(c, VT_ERR_ARG, "vt_write_f32: tensor '%s' holds int32", t->name);
    vt__host_dirty(c, t);
    for (i = 0; i < n; i++) vt__d(t)[vt__off(t, i)] = (double)v[i];
    return c->status;
}

VTDEF vt_status vt_write_i32(vt_ctx *c, vt_tensor *t, const int32_t *v) {
    int64_t i, n = vt_numel(t);
    if (!t || !v) return vt__fail(c, VT_ERR_ARG, "vt_write_i32: NULL tensor or data");
    if (t->dtype != VT_I32) return vt__fail(c, VT_ERR_ARG, "vt_write_i32: tensor '%s' is not int32", t->name);
    vt__host_dirty(c, t);
    for (i = 0; i < n; i++) vt__i(t)[vt__off(t, i)] = v[i];
    return c->status;
}

VTDEF vt_status vt_read_f64(vt_ctx *c, const vt_tensor *t, double *v) {
    int64_t i, n = vt_numel(t);
    if (!t || !v) return vt__fail(c, VT_ERR_ARG, "vt_read_f64: NULL tensor or buffer");
    vt__sync_host(c, t);
    for (i = 0; i < n; i++)
        v[i] = t->dtype == VT_I32 ? (double)vt__i(t)[vt__off(t, i)] : vt__d(t)[vt__off(t, i)];
    return c->status;
}

VTDEF vt_status vt_read_f32(vt_ctx *c, const vt_tensor *t, float *v) {
    int64_t i, n = vt_numel(t);
    if (!t || !v) return vt__fail(c, VT_ERR_ARG, "vt_read_f32: NULL tensor or buffer");
    vt__sync_host(c, t);
    for (i = 0; i < n; i++)
        v[i] = t->dtype == VT_I32 ? (float)vt__i(t)[vt__off(t, i)] : (float)vt__d(t)[vt__off(t, i)];
    return c->status;
}

VTDEF double vt_item(vt_ctx *c, const vt_tensor *t) {
    if (!t || !t->data || vt_numel(t) < 1) return NAN;
    if (c) vt__sync_host(c, t);
    return t->dtype == VT_I32 ? (double)vt__i(t)[0] : vt__d(t)[0];
}

VTDEF vt_tensor *vt_from_f32(vt_ctx *c, int ndim, const int64_t *ne, const float *v) {
    vt_tensor *t = vt_new(c, VT_F32, ndim, ne);
    if (t && v) vt_write_f32(c, t, v);
    return t;
}
VTDEF vt_tensor *vt_from_f64(vt_ctx *c, int ndim, const int64_t *ne, const double *v) {
    vt_tensor *t = vt_new(c, VT_F64, ndim, ne);
    if (t && v) vt_write_f64(c, t, v);
    return t;
}
VTDEF vt_tensor *vt_from_i32(vt_ctx *c, int ndim, const int64_t *ne, const int32_t *v) {
    vt_tensor *t = vt_new(c, VT_I32, ndim, ne);
    if (t && v) vt_write_i32(c, t, v);
    return t;
}

/* --- initialisation ------------------------------------------------------ */

/* each element from its own counter, so threads may fill any part */
typedef struct { vt_ctx *c; vt_tensor *t; uint64_t seed, stream; double a, b; int normal; } vt__init_job;

static void vt__init_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__init_job *j = (vt__init_job *)arg;
    int64_t i;
    (void)tid;
    for (i = lo; i < hi; i++) {
        double x = j->normal ? j->b * vt_rng_normal(j->seed, j->stream, (uint64_t)i)
                             : j->a + (j->b - j->a) * vt_rng_uniform(j->seed, j->stream, (uint64_t)i);
        vt__d(j->t)[vt__off(j->t, i)] = j->c->d.mode == VT_MODE_FP64 ? x : (double)(float)x;
    }
}

static void vt__init(vt_ctx *c, vt_tensor *t, uint64_t seed, uint64_t stream, double a, double b, int normal) {
    vt__init_job j;
    if (!t || c->status != VT_OK) return;
    vt__host_dirty(c, t);
    j.c = c; j.t = t; j.seed = seed; j.stream = stream; j.a = a; j.b = b; j.normal = normal;
    vt__parallel(&c->pool, vt_numel(t), 50 * vt_numel(t), vt__init_task, &j);
}

VTDEF void vt_init_normal(vt_ctx *c, vt_tensor *t, uint64_t seed, uint64_t stream, double std) {
    vt__init(c, t, seed, stream, 0, std, 1);
}

VTDEF void vt_init_uniform(vt_ctx *c, vt_tensor *t, uint64_t seed, uint64_t stream, double lo, double hi) {
    vt__init(c, t, seed, stream, lo, hi, 0);
}

VTDEF void vt_init_const(vt_ctx *c, vt_tensor *t, double v) {
    int64_t i, n = vt_numel(t);
    if (!t || c->status != VT_OK) return;
    if (c->d.mode != VT_MODE_FP64) v = (double)(float)v;
    vt__host_dirty(c, t);
    for (i = 0; i < n; i++) vt__d(t)[vt__off(t, i)] = v;
}

/* ==========================================================================
   >>exec  how an op runs

   An op constructor (vt_gelu, ...) checks shapes, makes the result tensor,
   records it on the tape and calls vt__exec. vt__exec describes each output
   as a vt__kout (values x, bound e, accumulate flag), asks the backend to run
   the kernel, and passes every output through vt__round. The backward pass
   calls vt__exec with bwd = 1: one output per input that needs a gradient.

   GRADIENTS. A parameter's gradient accumulates across backward calls until
   the next step (or vt_zero_grad); an activation's gradient is written by
   its first contribution and accumulated by later ones (a tensor used twice,
   such as the residual stream). "Accumulated" means x = old + new, with the
   add inside the op's rounding point; "written" means no old value at all.
   ========================================================================== */

typedef struct vt__kout {
    double *x;     /* values: the output's storage */
    double *e;     /* bounds, or NULL when bounds are off */
    int64_t n;
    int acc;       /* x holds an old value that the kernel adds to */
    int exact;     /* kernel says: the values are exact T values, no rounding point */
    const struct vt__lazy *lz; /* CPU: e is this product's lazy bound, not the array */
    int64_t tri;   /* CPU: a causal point of T x T blocks, T here (vt__tri_round), or 0 */
    int fused;     /* CPU: the kernel applied the trainer's rule to it (vt__fuse_begin) */
    vt__xprod *xp; /* a correctly rounded product (vt__xprod_add), or NULL */
    int kind;
    int ndim;
    int64_t dims[VT_MAX_DIMS];
} vt__kout;

typedef struct vt__kern {
    vt_ctx *c;
    vt_tensor *t;      /* the node */
    const vt__ord *o;
    int bwd;
    vt__kout out[VT_MAX_SRC];
} vt__kern;

static void *vt__cpu_alloc(vt_ctx *c, size_t bytes, int life) {
    void *p = vt__arena_alloc(life ? &c->step : &c->scratch, bytes);
    if (!p) vt__fail(c, VT_ERR_NOMEM, "out of memory: %zu bytes of work memory", bytes);
    return p;
}
static void vt__cpu_copy(vt_ctx *c, double *dst, const double *src, int64_t n) {
    (void)c;
    if (n > 0) memcpy(dst, src, sizeof(double) * (size_t)n);
}
static void vt__cpu_zero(vt_ctx *c, double *x, int64_t n) {
    (void)c;
    if (n > 0) memset(x, 0, sizeof(double) * (size_t)n);
}
static void vt__cpu_add_round(vt_ctx *c, double *g, const double *h, int64_t n, int cast) {
    int64_t q;
    (void)c;
    for (q = 0; q < n; q++) g[q] += h[q];
    if (cast)
        for (q = 0; q < n; q++) g[q] = (double)(float)g[q];
}

static void vt__record(vt_ctx *c, vt_tensor *t) {
    int i;
    for (i = 0; i < VT_MAX_SRC; i++)
        if (t->src[i] && (t->src[i]->flags & VT_FLAG_GRAD) && c->grad_enabled) t->flags |= VT_FLAG_GRAD;
    if (t->flags & VT_FLAG_GRAD) {
        if (!vt__grow(c, (void **)&c->tape, &c->ctape, c->ntape + 1, sizeof(vt_tensor *))) return;
        c->tape[c->ntape++] = t;
    }
}

static void vt__out_init(vt_ctx *c, vt__kout *o, vt_op op, int slot, const vt_tensor *shape, double *x, int acc) {
    int i;
    o->x = x;
    o->n = vt_numel(shape);
    o->acc = acc;
    o->exact = 0;
    o->lz = NULL;
    o->tri = 0;
    o->fused = 0;
    o->xp = NULL;
    o->kind = vt__kind(op, slot);
    o->ndim = shape->ndim;
    for (i = 0; i < shape->ndim; i++) o->dims[i] = shape->ne[i];
    o->e = NULL;
    if (c->d.mode == VT_MODE_VERIFIED || c->ncal) {
        o->e = (double *)c->be->alloc(c, sizeof(double) * (size_t)(o->n ? o->n : 1), 0);
        /* kernels write every bound, except the backward kernels that leave
           parts of their output untouched (VT__OPF_BWD_SPARSE: bound 0
           there; the attention kernels zero the parts they leave themselves) */
        if (o->e && slot > 0 && (vt__op_flags(op) & VT__OPF_BWD_SPARSE)) c->be->zero(c, o->e, o->n);
    }
}

/* whether output o of a kernel is a fused causal point (A FUSED CAUSAL POINT,
   >>rounding); if so j is its rule's job and the threads' lists are empty */
static int vt__fuse_begin(vt_ctx *c, const vt__kout *o, vt__rjob *j) {
    int t;
    if (!o->tri || o->acc || o->lz || o->xp || !c->in_step || c->ncal || vt__no_fuse || c->status != VT_OK) return 0;
    if (c->d.mode != VT_MODE_VERIFIED && !o->e) { /* no bound: each row cast (checked in fp64) as written */
        memset(j, 0, sizeof *j);
        j->c = c; j->x = o->x; j->ef = 1; j->tri = o->tri;
        j->cast = c->d.mode == VT_MODE_FP64 ? 1 : 2;
        for (t = 0; t < c->pool.n; t++) { c->tents[t].n = 0; c->tents[t].bad = -1; }
        return 1;
    }
    if (!o->e || c->d.mode != VT_MODE_VERIFIED || c->d.role != VT_ROLE_TRAIN) return 0;
    j->c = c; j->x = o->x; j->e = NULL; j->lz = NULL; j->gs = j->gx = 0; j->tri = o->tri; j->cast = 0; j->ld = 0;
    j->ef = c->d.bound == VT_BOUND_CALIBRATED ? vt__calib_factor(&c->calib, o->kind, o->n) : 1; /* as vt__round */
    j->compact = c->d.compact_log >= 0;
    for (t = 0; t < c->pool.n; t++) { c->tents[t].n = 0; c->tents[t].bad = -1; }
    return 1;
}

/* A FUSED BLOCK (CPU backend; the trainer in verified mode, or the cast or
   fp64's check in the other modes): attention's products with hs outputs a
   row (P V; dq, dk and dv in the backward) lie as (T, hs) blocks in (B, T,
   C) and (B, T, 3C) outputs, and the task that computes a block rounds it,
   row by row while in cache (vt__att_block): each row by A LAZY CAUSAL
   ROW's filter (a width for the row from A's row statistics and B's column
   maxima, the exact bound where the rule looks), or with vt__no_lazy by the
   rule over the bounds written into the task's own buffer. Everything else
   in such an output is exact zeros the kernel writes (the q and k thirds of
   dv's output, the v third of dq and dk's) or, in an added output, values
   rounded at an earlier point, which the pass would cast to themselves with
   bound 0, logging nothing. So the values, the entries (gathered by index)
   and the first NaN are the pass's, and the point makes no pass and its
   bounds are never written (at width 64 the bounds, their scaled copies and
   the pass were 3.2, 1.4 and 5.1 M instructions of a verified step's 56 M
   over fp64; the rows in the tasks cost 3.7 M of it back). lists: the threads'
   lists this output's rule fills (c->tents; c->tents + pool.n for a
   kernel's second output, which the kernel gathers into its slot).
   acc_ok: the caller handles an added output. */
static int vt__fuse_block_begin(vt_ctx *c, const vt__kout *o, vt__rjob *j, vt__ents *lists, int acc_ok) {
    int t;
    if (o->tri || (o->acc && !acc_ok) || o->lz || o->xp || !c->in_step || c->ncal || vt__no_fuse || c->status != VT_OK) return 0;
    if (o->e ? c->d.mode != VT_MODE_VERIFIED || c->d.role != VT_ROLE_TRAIN : c->d.mode == VT_MODE_VERIFIED) return 0;
    memset(j, 0, sizeof *j);
    j->c = c; j->x = o->x; j->ef = 1;
    if (!o->e) j->cast = c->d.mode == VT_MODE_FP64 ? 1 : 2; /* as vt__round: fp64 checks, the others cast */
    else {
        j->ef = c->d.bound == VT_BOUND_CALIBRATED ? vt__calib_factor(&c->calib, o->kind, o->n) : 1; /* as vt__round */
        j->compact = c->d.compact_log >= 0;
    }
    for (t = 0; t < c->pool.n; t++) { lists[t].n = 0; lists[t].bad = -1; }
    return 1;
}

static void vt__calibrate_node(vt_ctx *c, vt__kern *k);

static void vt__run_kernel(vt_ctx *c, vt__kern *k) {
    int i, kind = -1;
    double t0 = vt__now(), t1;
    c->ord.call = ++c->calls;
    k->c = c;
    k->o = &c->ord;
    if (c->ncal) vt__calibrate_node(c, k);
    else c->be->kernel(k);
    if (c->status != VT_OK) return;
    t1 = vt__now();
    for (i = 0; i < VT_MAX_SRC; i++) {
        vt__kout *o = &k->out[i];
        if (!o->x) continue;
        if (kind < 0) kind = o->kind;
        if (o->exact) {
            if (o->kind >= 0 && o->kind < VT_OP_COUNT * 8) c->kstats[o->kind].runs++;
            continue;
        }
        c->round_tri = o->tri;
        c->round_fused = o->fused;
        vt__round(c, o->kind, o->ndim, o->dims, o->x, o->e, o->lz, o->xp, o->n);
        c->round_tri = 0;
        c->round_fused = 0;
        if (c->status != VT_OK) return;
    }
    if (kind >= 0 && kind < VT_OP_COUNT * 8) {
        double t2 = vt__now();
        c->kstats[kind].seconds += t2 - t0;
        c->kstats[kind].round_seconds += t2 - t1;
    }
}

/* a training batch norm also moves its running statistics (the (2,C) state
   in t->extra): a second output, updated in place, the point bn_stats.running */
static void vt__bn_stat_outs(vt_ctx *c, vt__kern *k) {
    vt_tensor *st = (vt_tensor *)k->t->extra;
    double *x = (double *)vt__bptr(c, st, 2);
    if (x) vt__out_init(c, &k->out[1], VT_OP_BN_STATS, 2, st, x, 1);
}

/* forward: the node's data is the output (and a batch norm's statistics) */
static void vt__exec(vt_ctx *c, vt_tensor *t) {
    vt__kern k;
    double *x;
    if (c->status != VT_OK) return;
    memset(&k, 0, sizeof k);
    k.t = t;
    x = (double *)vt__bptr(c, t, 1);
    if (!x) return;
    vt__out_init(c, &k.out[0], t->op, 0, t, x, 0);
    if (t->op == VT_OP_BATCHNORM2D && t->extra) vt__bn_stat_outs(c, &k);
    vt__run_kernel(c, &k);
    vt__reset_life(c, 0);
}

/* the gradient buffer of s (a backend address), allocated on first use;
   *acc says whether the kernel must add to what is there */
static double *vt__grad_for(vt_ctx *c, vt_tensor *s, int *acc) {
    if (!s->grad) {
        s->grad = vt__mk(c, s->dtype, s->ndim, s->ne, 0, 2);
        if (!s->grad) return NULL;
        s->grad_fresh = 1;
    }
    *acc = !s->grad_fresh;
    return (double *)vt__bptr(c, s->grad, *acc ? 2 : 1);
}

static void vt__exec_bwd(vt_ctx *c, vt_tensor *t) {
    vt__kern k;
    int i, j, any = 0, dup[VT_MAX_SRC];
    if (c->status != VT_OK) return;
    memset(&k, 0, sizeof k);
    k.t = t;
    k.bwd = 1;
    for (i = 0; i < VT_MAX_SRC; i++) {
        vt_tensor *s = t->src[i];
        int acc = 0;
        double *g;
        dup[i] = -1;
        if (!s || !(s->flags & VT_FLAG_GRAD) || s->dtype == VT_I32) continue;
        for (j = 0; j < i; j++)
            if (t->src[j] == s) dup[i] = j;
        if (dup[i] >= 0) {
            /* the same tensor twice (x * x): this slot gets its own buffer,
               added to the first slot's once both are rounded */
            g = (double *)c->be->alloc(c, sizeof(double) * (size_t)vt_numel(s), 0);
        } else {
            g = vt__grad_for(c, s, &acc);
        }
        if (!g) return;
        vt__out_init(c, &k.out[i], t->op, i + 1, s, g, acc);
        any = 1;
    }
    if (!any) return;
    vt__run_kernel(c, &k);
    for (i = 0; i < VT_MAX_SRC; i++)
        if (k.out[i].x && dup[i] >= 0 && c->status == VT_OK)
            /* a sum of two binary32 values, the same on every machine: an
               exact cast, no bound, no log record */
            c->be->add_round(c, k.out[dup[i]].x, k.out[i].x, vt_numel(t->src[i]), c->d.mode != VT_MODE_FP64);
    for (i = 0; i < VT_MAX_SRC; i++)
        if (k.out[i].x) t->src[i]->grad_fresh = 0;
    vt__reset_life(c, 0);
}

VTDEF int vt_set_grad(vt_ctx *c, int enabled) {
    int prev = c->grad_enabled;
    c->grad_enabled = enabled != 0;
    return prev;
}

VTDEF void vt_zero_grad(vt_ctx *c) {
    int i;
    for (i = 0; i < c->nparams; i++) c->params[i]->grad_fresh = 1;
}

VTDEF vt_status vt_backward(vt_ctx *c, vt_tensor *loss) {
    int64_t i;
    if (c->status != VT_OK) return c->status;
    if (!loss) return vt__fail(c, VT_ERR_ARG, "vt_backward: loss is NULL");
    if (vt_numel(loss) != 1) {
        char s[64];
        vt__shape_str(loss, s, sizeof s);
        return vt__fail(c, VT_ERR_SHAPE, "vt_backward: loss must have one element, it has shape %s", s);
    }
    if (!(loss->flags & VT_FLAG_GRAD)) return vt__fail(c, VT_ERR_STATE, "vt_backward: the loss does not depend on any parameter (or grad was disabled)");
    {
        int acc;
        double *g;
        if (!vt__grad_for(c, loss, &acc)) return c->status;
        g = vt__hw(c, loss->grad);
        g[0] = acc ? g[0] + 1.0 : 1.0;
        loss->grad_fresh = 0;
        c->last_loss = vt__h(c, loss)[0];
    }
    for (i = c->ntape - 1; i >= 0 && c->status == VT_OK; i--) {
        vt_tensor *t = c->tape[i];
        if (t->id > loss->id || !t->grad || t->grad_fresh) continue;
        vt__exec_bwd(c, t);
    }
    /* activation gradients are consumed: a second backward in this step
       starts from nothing but the parameters' accumulated gradients */
    for (i = 0; i < c->ntape; i++)
        if (!(c->tape[i]->flags & VT_FLAG_PERSIST)) c->tape[i]->grad_fresh = 1;
    if (!(loss->flags & VT_FLAG_PERSIST)) loss->grad_fresh = 1;
    return c->status;
}

/* ==========================================================================
   >>cpu  kernels of the CPU backend, forward and backward, with bounds

   Each kernel reads binary32 values (held in doubles), computes in binary64
   and writes values x and bounds e for its rounding point(s). Inputs are
   contiguous (the op layer inserts a copy for views). Shape legend at the
   top of the file. Bounds are derived in the comment above each kernel; the
   factor 1.01 that several carry covers second-order terms.
   ========================================================================== */

/* store x = (acc ? old : 0) + v where |v - exact| <= ev; the add costs u|x|,
   or nothing when v is the same on every machine (ev = 0) */
static void vt__put(const vt__kout *o, int64_t i, double v, double ev) {
    if (o->acc) {
        double old = o->x[i], s = old + v;
        /* with v the same on every machine (ev = 0) the add is too */
        if (ev > 0) ev += VT__U * fabs(s);
        v = s;
    }
    o->x[i] = v;
    if (o->e) o->e[i] = ev;
}

/* the values o receives are the same on every machine (one IEEE operation
   on binary32 values, or a copy): every bound is 0, so the kernel writes
   none and the rounding point only casts (it still records the point) */
static void vt__same_everywhere(vt__kout *o) { o->e = NULL; }

typedef struct { vt__kern *k; int64_t R, C; const void *p; } vt__job;

/* o[i] (+)= sign dy[i] for [lo, hi): a copy, a negation, or an exact add (vt__put) */
typedef struct { const vt__kout *o; const double *dy; double sign; } vt__dycopy_job;
static void vt__dycopy_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__dycopy_job *d = (const vt__dycopy_job *)arg;
    int64_t i;
    (void)tid;
    for (i = lo; i < hi; i++) vt__put(d->o, i, d->sign * d->dy[i], 0);
}

/* --- copy / view ----------------------------------------------------------- */

/* COPY: out = src gathered into row-major order. Exact. Backward: the grad
   of src (contiguous, src's logical shape) receives dy: exact when written,
   u|x| when accumulated. */
static void vt__copy_gather_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__kern *k = (const vt__kern *)arg;
    const vt_tensor *s = k->t->src[0];
    const double *sd = vt__d(s);
    double *x = k->out[0].x;
    int64_t i;
    (void)tid;
    for (i = lo; i < hi; i++) x[i] = sd[vt__off(s, i)];
}
static void vt__k_copy(vt__kern *k) {
    vt_tensor *t = k->t;
    int64_t n = vt_numel(t);
    if (!k->bwd) {
        vt__parallel(&k->c->pool, n, 4 * n, vt__copy_gather_task, k);
        k->out[0].exact = 1;
    } else {
        vt__dycopy_job dj;
        vt__same_everywhere(&k->out[0]);
        dj.o = &k->out[0]; dj.dy = vt__d(t->grad); dj.sign = 1.0;
        vt__parallel(&k->c->pool, n, n, vt__dycopy_task, &dj);
        k->out[0].exact = !k->out[0].acc;
    }
}

/* VIEW backward: the base's gradient (contiguous, base shape) receives dy at
   the view's positions; untouched positions keep 0 (written) or their value
   (accumulated). Exact unless accumulating (u|x|). */
static void vt__view_bwd_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__kern *k = (const vt__kern *)arg;
    const vt_tensor *t = k->t;
    const vt__kout *o = &k->out[0];
    const double *dy = vt__d(t->grad);
    int64_t i;
    (void)tid;
    for (i = lo; i < hi; i++) {
        int64_t p = t->view_offs + vt__off(t, i);
        if (o->acc) {
            double v = o->x[p] + dy[i];
            o->x[p] = v;
            if (o->e) o->e[p] = VT__U * fabs(v);
        } else o->x[p] = dy[i];
    }
}
static void vt__k_view_bwd(vt__kern *k) {
    vt_tensor *t = k->t;
    const vt__kout *o = &k->out[0];
    int64_t n = vt_numel(t);
    if (!o->acc) memset(o->x, 0, sizeof(double) * (size_t)o->n);
    /* a view reaches each position of its base once: the positions split freely */
    vt__parallel(&k->c->pool, n, 4 * n, vt__view_bwd_task, k);
    k->out[0].exact = !o->acc;
}

/* --- broadcasting add / sub / mul ------------------------------------------- */

/* offset of out's logical index li in a broadcast operand a */
static int64_t vt__boff(const vt_tensor *out, const vt_tensor *a, int64_t li) {
    int64_t off = 0;
    int d, da;
    for (d = out->ndim - 1, da = a->ndim - 1; d >= 0; d--, da--) {
        int64_t i = li % out->ne[d];
        li /= out->ne[d];
        if (da >= 0 && a->ne[da] != 1) off += i * a->nb[da];
    }
    return off;
}

/* Forward: x = a op b, one IEEE operation on binary32 inputs: every machine
   gets the same x, e = 0. */
static void vt__binary_fwd_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__kern *k = (const vt__kern *)arg;
    const vt_tensor *t = k->t, *a = t->src[0], *b = t->src[1];
    const double *A = vt__d(a), *B = vt__d(b);
    int64_t i, n = vt_numel(t);
    int same = vt_numel(a) == n && vt_numel(b) == n;
    double *x = k->out[0].x;
    (void)tid;
    for (i = lo; i < hi; i++) {
        double av = same ? A[i] : A[vt__boff(t, a, i)], bv = same ? B[i] : B[vt__boff(t, b, i)], v;
        v = t->op == VT_OP_ADD ? av + bv : t->op == VT_OP_SUB ? av - bv : av * bv;
        x[i] = v;
    }
}
static void vt__parallel_ew(vt__kern *k, int64_t n, int64_t cost, vt__task_fn fn, void *arg);
static void vt__k_binary_fwd(vt__kern *k) {
    int64_t n = vt_numel(k->t);
    vt__same_everywhere(&k->out[0]);
    vt__parallel_ew(k, n, 4 * n, vt__binary_fwd_task, k); /* one operation per element: any split */
}

/* Backward of a broadcast operand s (slot si): ds[j] = sum over the r output
   positions p that read s[j] of term(p), term = dy (add), +-dy (sub), dy*other
   (mul: exact for binary32 operands). Sum of r terms plus the old value in
   any order: e = gsum(r + [old]) (|old| + sum |term|), or 0 when the sum is
   exact (vt__sum_bound). */

/* whether s is contiguous and broadcast over t's leading dimensions only
   (a position embedding or a bias): then output position p reads s[p mod ns] */
static int vt__bcast_trailing(const vt_tensor *t, const vt_tensor *s) {
    int d, off = t->ndim - s->ndim;
    int64_t st = 1;
    if (off < 0) return 0;
    for (d = s->ndim - 1; d >= 0; d--) {
        if (s->ne[d] != t->ne[off + d] || (s->ne[d] != 1 && s->nb[d] != st)) return 0;
        st *= s->ne[d];
    }
    return 1;
}
/* targets [lo, hi) of such an s, term = dy: target j's terms are dy[j + q ns]
   for q = 0 .. r - 1, the order in which the general gather below lists
   them, so each sum, magnitude and bound is the gather's bit for bit */
typedef struct { const vt__kern *k; const vt__kout *o; const double *dy; int64_t ns, r; } vt__bcast_job;
static int vt__no_bcast_fast;        /* tests: always the general gather */
static int64_t vt__bcast_fast_runs;  /* tests: how many backward targets took the form below */
static void vt__bcast_bwd_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__bcast_job *b = (const vt__bcast_job *)arg;
    const vt__kout *o = b->o;
    int64_t j, q;
    (void)tid;
    for (j = lo; j < hi; j++) {
        double mag = 0, v, old = o->acc ? fabs(o->x[j]) : 0;
        int L = o->acc ? vt__lsb(o->x[j]) : VT__LSB_NONE;
        for (q = 0; q < b->r; q++) {
            double term = b->dy[j + q * b->ns];
            mag += fabs(term);
            L = VT__MIN(L, vt__lsb(term));
        }
        v = vt__rsum(b->k->o, (uint64_t)j, b->dy + j, b->ns, b->r);
        o->x[j] = o->acc ? o->x[j] + v : v;
        if (o->e) o->e[j] = vt__sum_bound(b->k->o, b->r + (o->acc ? 1 : 0), old + mag, L);
    }
}

static void vt__k_binary_bwd(vt__kern *k) {
    vt_tensor *t = k->t;
    const double *dy = vt__d(t->grad);
    int64_t n = vt_numel(t), i;
    int si;
    for (si = 0; si < 2; si++) {
        const vt__kout *o = &k->out[si];
        vt_tensor *s = t->src[si], *other = t->src[1 - si];
        int64_t ns = vt_numel(s), r = ns ? n / ns : 0;
        double sign = (t->op == VT_OP_SUB && si == 1) ? -1.0 : 1.0;
        double *acc, *mag;
        int64_t *cnt;
        int *lsb;
        if (!o->x) continue;
        if (r == 1 && t->op != VT_OP_MUL) { /* same shape: a copy (or negation) of dy, on the pool */
            vt__dycopy_job dj;
            vt__same_everywhere(&k->out[si]);
            dj.o = o; dj.dy = dy; dj.sign = sign;
            vt__parallel(&k->c->pool, n, n, vt__dycopy_task, &dj);
            k->out[si].exact = !o->acc;
            continue;
        }
        if ((t->op == VT_OP_ADD || (t->op == VT_OP_SUB && si == 0)) && !vt__no_bcast_fast && vt__bcast_trailing(t, s)) {
            vt__bcast_job bj;
            vt__bcast_fast_runs++;
            bj.k = k; bj.o = o; bj.dy = dy; bj.ns = ns; bj.r = r;
            vt__parallel(&k->c->pool, ns, 2 * n, vt__bcast_bwd_task, &bj);
            continue;
        }
        /* gather every term per target element, in output order, then sum each
           target's terms with the ordered reduction */
        acc = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(n + ns));
        cnt = (int64_t *)vt__scratch(k->c, sizeof(int64_t) * (size_t)(ns + 1));
        mag = (double *)vt__scratch(k->c, sizeof(double) * (size_t)ns);
        lsb = (int *)vt__scratch(k->c, sizeof(int) * (size_t)ns);
        if (!acc || !cnt || !mag || !lsb) return;
        memset(cnt, 0, sizeof(int64_t) * (size_t)(ns + 1));
        memset(mag, 0, sizeof(double) * (size_t)ns);
        for (i = 0; i < ns; i++) lsb[i] = o->acc ? vt__lsb(o->x[i]) : VT__LSB_NONE;
        for (i = 0; i < n; i++) cnt[vt__boff(t, s, i) + 1]++;
        for (i = 0; i < ns; i++) cnt[i + 1] += cnt[i];
        {
            int64_t *pos = (int64_t *)vt__scratch(k->c, sizeof(int64_t) * (size_t)ns);
            if (!pos) return;
            memcpy(pos, cnt, sizeof(int64_t) * (size_t)ns);
            for (i = 0; i < n; i++) {
                int64_t j = vt__boff(t, s, i);
                double term = t->op == VT_OP_MUL ? dy[i] * vt__d(other)[vt__boff(t, other, i)] : sign * dy[i];
                acc[pos[j]++] = term;
                mag[j] += fabs(term);
                lsb[j] = VT__MIN(lsb[j], vt__lsb(term));
            }
        }
        for (i = 0; i < ns; i++) {
            int64_t m = cnt[i + 1] - cnt[i];
            double v = vt__rsum(k->o, (uint64_t)i, acc + cnt[i], 1, m);
            double old = o->acc ? fabs(o->x[i]) : 0;
            o->x[i] = o->acc ? o->x[i] + v : v;
            if (o->e) o->e[i] = vt__sum_bound(k->o, m + (o->acc ? 1 : 0), old + mag[i], lsb[i]);
        }
    }
}

/* --- scale ------------------------------------------------------------------ */

/* x = a s with s a binary64 constant of the program: one IEEE product on
   binary32 inputs, e = 0. Backward: dy s, the same. */
static void vt__k_scale(vt__kern *k) {
    vt_tensor *t = k->t;
    double s = t->fparam[0];
    const double *in = k->bwd ? vt__d(t->grad) : vt__d(t->src[0]);
    int64_t i, n = vt_numel(t);
    vt__same_everywhere(&k->out[0]);
    for (i = 0; i < n; i++) {
        double v = in[i] * s;
        vt__put(&k->out[0], i, v, 0);
    }
}

/* --- matmul and linear ------------------------------------------------------- */

/* the chunk length of a reduction over the rows of x (all leading dims): per
   sequence (the T dimension) for 3-D and 4-D inputs, one chunk otherwise. In
   native mode the rows are split into `threads` parts instead, as a split-K
   GEMM would. Part of each op's definition: every backend uses this. */
static int64_t vt__row_chunk(const vt__kern *k, const vt_tensor *x, int64_t rows) {
    if (k->o->f32) return (rows + k->o->threads - 1) / k->o->threads;
    if (x->ndim >= 3) return x->ne[x->ndim - 2];
    return rows;
}

/* out = C0 + bias + A B through vt__gemm with the bound of its section; a
   product that is the whole output leaves its bound lazy (vt__lazy) */
/* register a block of output o as a correctly rounded product (the CPU's
   and every backend's GEMM outputs in verified mode); an accumulating
   output's old values are copied first (c0: a copy the caller made, or
   NULL). kchunk: the bound's chunk length (vt__gemm_bound_prep; <= 0 or
   >= K: one chunk). 1 on success. */
static int vt__xprod_add_c0(vt_ctx *c, vt__kout *o, const double *C, int64_t M, int64_t N, int64_t K, const double *A,
                            int64_t sam, int64_t sak, const double *B, int64_t sbk, int64_t sbn, const double *bias,
                            int64_t kchunk, const double *c0) {
    vt__xprod *xp = o->xp;
    vt__xblk *z;
    double gs = vt__gsum(&c->ord, K), gx = 0;
    if (gs > 0 && (kchunk <= 0 || kchunk >= K) && c->ord.bmode != VT_BOUND_PROBABILISTIC) {
        double g = vt__gsum(&c->ord, K + 2); /* at most K terms, C0 and bias: n <= K + 2 */
        gx = g / (2 - g);
    }
    if (!xp) { /* the list is host memory (a backend uploads it); the copy of C0 is the backend's */
        xp = (vt__xprod *)vt__scratch(c, sizeof(vt__xprod));
        if (!xp) return 0;
        memset(xp, 0, sizeof *xp);
        xp->gs = gs; xp->gx = gx;
    }
    /* blocks of other lengths: the smallest gs, the largest gx, none if any block has none */
    xp->gs = VT__MIN(xp->gs, gs);
    xp->gx = xp->gx > 0 && gx > 0 ? VT__MAX(xp->gx, gx) : 0;
    if (xp->n == xp->cap) { /* work memory is not freed before the op ends: grow by copying */
        int cap = xp->cap ? 2 * xp->cap : 4;
        vt__xblk *nb = (vt__xblk *)vt__scratch(c, sizeof(vt__xblk) * (size_t)cap);
        if (!nb) return 0;
        if (xp->n) memcpy(nb, xp->b, sizeof(vt__xblk) * (size_t)xp->n);
        xp->b = nb;
        xp->cap = cap;
    }
    z = &xp->b[xp->n];
    z->off = (int64_t)(C - o->x); z->M = M; z->N = N; z->K = K;
    z->A = A; z->sam = sam; z->sak = sak; z->B = B; z->sbk = sbk; z->sbn = sbn; z->bias = bias; z->C0 = NULL;
    z->ws = NULL; z->wn = 0;
    if (o->acc && c0) z->C0 = c0;
    else if (o->acc) {
        double *cp = (double *)c->be->alloc(c, sizeof(double) * (size_t)(M * N + 1), 0);
        if (!cp) return 0;
        c->be->copy(c, cp, C, M * N);
        z->C0 = cp;
    }
    xp->n++;
    o->xp = xp;
    return 1;
}

static int vt__xprod_add(vt_ctx *c, vt__kout *o, const double *C, int64_t M, int64_t N, int64_t K, const double *A,
                         int64_t sam, int64_t sak, const double *B, int64_t sbk, int64_t sbn, const double *bias,
                         int64_t kchunk) {
    return vt__xprod_add_c0(c, o, C, M, N, K, A, sam, sak, B, sbk, sbn, bias, kchunk, NULL);
}

/* THE EXACT EVALUATION ON THE CPU. vt__xprod_value (integer arithmetic, the
   superaccumulator) is the definition; this path reaches the same value,
   RNE32 of the exact sum S, with binary64 arithmetic, and falls back to
   vt__xprod_value wherever it cannot prove the value. Which path answered
   never shows in the result, so neither the thread count nor the lane count
   below can change an output.
   The terms t_k are exact binary64 values (a product of two binary32 values
   has at most 48 significant bits and lies in [2^-298, 2^256]; C0 and the
   bias are binary32 values). Each of L lanes sums its terms by TwoSum:
   (s', e) = (fl(s + t), s + t - fl(s + t)), e exact (Knuth; no overflow
   below 2^1000, and an addition that underflows is exact), so
   s + t = s' + e exactly; the lane sums and C0, bias are then joined by the
   same TwoSum. Hence S = s + sum e exactly over the n error terms e. c, the
   binary64 sum of the e in any order, has |c - sum e| <= g(n-1) sum|e| and
   sum|e| <= a / (1 - g(n-1)), a the binary64 sum of the |e| (g(m) = m u /
   (1 - m u), u = 2^-53; for n u <= 2^-20, g(n-1) / (1 - g(n-1)) <= 1.01 n u).
   (hi, lo) = TwoSum(s, c): S = hi + lo + d with |d| <= 1.01 n u a, so S lies
   within W = |lo| + 1.01 n u a of hi. The computed w = (|lo| + a n 2^-50)
   (1 + 2^-50) + |hi| 2^-50 is at least W (the factor 8 over 1.01 n u and the
   2^-50 terms absorb the roundings of w's own three operations) plus the
   error of forming hi - w and hi + w in binary64, so fl(hi - w) <= S <=
   fl(hi + w). RNE32 is monotone: when both ends round to the same binary32
   value, S rounds to it. A zero result (its sign is vt__xacc's rule), a
   non-finite sum, or ends that differ go to vt__xprod_value. */
#define VT__XL 16 /* lanes: independent TwoSum chains */
typedef struct { double s[VT__XL], c[VT__XL], a[VT__XL]; } vt__xst;

/* the terms a[k] b[k] (a[k] when b is NULL), k in [0, n), n a multiple of
   VT__XL, into the lanes (term k to lane k mod VT__XL); a and b contiguous */
static void vt__xsum_lanes(const double *a, const double *b, int64_t n, vt__xst *st) {
    int64_t k = 0;
    int l;
#ifdef VT__AVX2
    {   /* four vectors of four lanes */
        const __m256d sign = _mm256_set1_pd(-0.0);
        __m256d sv[4], cv[4], av[4];
        int q;
        for (q = 0; q < 4; q++) {
            sv[q] = _mm256_loadu_pd(st->s + 4 * q); cv[q] = _mm256_loadu_pd(st->c + 4 * q); av[q] = _mm256_loadu_pd(st->a + 4 * q);
        }
        for (; k + VT__XL <= n; k += VT__XL)
            for (q = 0; q < 4; q++) {
                __m256d t = _mm256_loadu_pd(a + k + 4 * q), u, bb, e;
                if (b) t = _mm256_mul_pd(t, _mm256_loadu_pd(b + k + 4 * q));
                u = _mm256_add_pd(sv[q], t);
                bb = _mm256_sub_pd(u, sv[q]);
                e = _mm256_add_pd(_mm256_sub_pd(sv[q], _mm256_sub_pd(u, bb)), _mm256_sub_pd(t, bb));
                sv[q] = u;
                cv[q] = _mm256_add_pd(cv[q], e);
                av[q] = _mm256_add_pd(av[q], _mm256_andnot_pd(sign, e));
            }
        for (q = 0; q < 4; q++) {
            _mm256_storeu_pd(st->s + 4 * q, sv[q]); _mm256_storeu_pd(st->c + 4 * q, cv[q]); _mm256_storeu_pd(st->a + 4 * q, av[q]);
        }
    }
#endif
    for (; k + VT__XL <= n; k += VT__XL)
        for (l = 0; l < VT__XL; l++) {
            double t = b ? a[k + l] * b[k + l] : a[k + l], u = st->s[l] + t, bb = u - st->s[l];
            double e = (st->s[l] - (u - bb)) + (t - bb);
            st->s[l] = u; st->c[l] += e; st->a[l] += fabs(e);
        }
}

/* the terms [k0, k1) of output (m, nn) into the lanes; k0 and k1 are
   multiples of VT__XL (the last VT__XL-less tail is vt__xsum_finish's) */
static void vt__xsum_run(const vt__xblk *z, int64_t m, int64_t nn, int64_t k0, int64_t k1, vt__xst *st) {
    const double *A = z->A + m * z->sam, *B = z->B ? z->B + nn * z->sbn : NULL;
    int64_t k = k0;
    int l;
    if (z->sak == 1 && (!B || z->sbk == 1)) {
        vt__xsum_lanes(A + k0, B ? B + k0 : NULL, k1 - k0, st);
        return;
    }
    for (; k + VT__XL <= k1; k += VT__XL)
        for (l = 0; l < VT__XL; l++) {
            double t = B ? A[(k + l) * z->sak] * B[(k + l) * z->sbk] : A[(k + l) * z->sak], u = st->s[l] + t, b = u - st->s[l];
            double e = (st->s[l] - (u - b)) + (t - b);
            st->s[l] = u; st->c[l] += e; st->a[l] += fabs(e);
        }
}

/* the tail terms, the lanes' sums, C0 and bias, and the decision: 1 with
   *out = RNE32(S), or 0 (vt__xprod_value decides) */
static int vt__xsum_finish(const vt__xblk *z, int64_t m, int64_t nn, const vt__xst *st, double *out) {
    const double *A = z->A + m * z->sam, *B = z->B ? z->B + nn * z->sbn : NULL;
    double hi = 0, lo, cs = 0, as = 0, w, rest[VT__XL + 2];
    int64_t K = z->K, k = K - K % VT__XL, n = K + 2 + VT__XL;
    int l, nr = 0;
    float f0, f1;
    for (l = 0; l < VT__XL; l++) { cs += st->c[l]; as += st->a[l]; rest[nr++] = st->s[l]; }
    if (z->C0) rest[nr++] = z->C0[m * z->N + nn];
    if (z->bias) rest[nr++] = z->bias[nn];
    for (; k < K || nr > 0;) { /* one chain */
        double t, u, b, e;
        if (k < K) { t = B ? A[k * z->sak] * B[k * z->sbk] : A[k * z->sak]; k++; }
        else t = rest[--nr];
        u = hi + t; b = u - hi;
        e = (hi - (u - b)) + (t - b);
        hi = u; cs += e; as += fabs(e);
    }
    lo = hi + cs; /* (hi, lo) = TwoSum(hi, cs) */
    {
        double b = lo - hi, e = (hi - (lo - b)) + (cs - b);
        hi = lo; lo = e;
    }
    w = (fabs(lo) + as * ((double)n * 0x1p-50)) * (1 + 0x1p-50) + fabs(hi) * 0x1p-50;
    if (!(fabs(hi) + w < 0x1p1000)) return 0; /* non-finite or huge: the definition decides */
    f0 = (float)(hi - w); f1 = (float)(hi + w);
    if (vt__fbits(f0) != vt__fbits(f1) || f0 == 0) return 0;
    *out = (double)f0;
    return 1;
}

/* one entry on its own: the reference that test_bounds holds the grouped form (vt__exact_task) to */
static VT__UNUSED int vt__xsum_fast(const vt__xblk *z, int64_t m, int64_t nn, double *out) {
    vt__xst st;
    if (z->K > ((int64_t)1 << 30)) return 0;
    memset(&st, 0, sizeof st);
    vt__xsum_run(z, m, nn, 0, z->K - z->K % VT__XL, &st);
    return vt__xsum_finish(z, m, nn, &st, out);
}

/* undecided outputs of a correctly rounded product, in parallel: each is a
   function of its own index only, so neither the order below nor the
   grouping can change a value. The entries are taken in the order (block,
   column, row) and in groups of VT__XG that advance together VT__XK terms
   at a time (the lanes of each output see their terms in the order of
   vt__xsum_fast). A strided operand (a convolution's im2col columns, one
   row of the matrix per term) is first copied, for the group's distinct
   lines, into contiguous pieces, row by row: the rows are read once per
   group and k-block instead of once per output, and the sums run on the
   vector path. A weight gradient's lines are contiguous already; its
   outputs share rows and columns, which the k-blocks keep in cache.
   A convolution's column read from its source image (a block with ws:
   scattered over C channel planes, one cache miss per few terms) is
   gathered instead once per column, VT__XC terms at a time into a buffer
   that stays in the core's cache, and every undecided output of that
   column runs over it at once (vt__exact_cols): the group-wide pieces
   above (VT__XG columns of VT__XK terms, 2 MB) left the cache before the
   lanes read them back. */
#define VT__XG 512
#define VT__XK 512
#define VT__XC 4096
typedef struct { int64_t i, m, n; int b; } vt__xent;
typedef struct { double *x; const vt__xprod *xp; const vt__xent *en; void **wb; } vt__exact_job; /* wb: per thread, VT__XWORK bytes */

static int vt__xent_cmp(const void *p, const void *q) {
    const vt__xent *a = (const vt__xent *)p, *b = (const vt__xent *)q;
    if (a->b != b->b) return a->b < b->b ? -1 : 1;
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* the group's strided lines [k0, k1) into contiguous pieces of VT__XK:
   line j starts at p[j] with stride s[j] and has kend[j] terms */
static void vt__xgather(double *buf, const double *const *p, const int64_t *s, const int64_t *kend, int nl, int64_t k0,
                        int64_t k1) {
    int64_t k, kb, ke;
    int l;
    for (kb = k0; kb < k1; kb += 8) /* eight k a line: a piece's cache line written whole, where one value a line
                                       and a line every 4 KiB kept L1's few sets of them thrashing */
        for (l = 0; l < nl; l++) {
            const double *src = p[l];
            double *dst = buf + (int64_t)l * VT__XK - k0;
            if (!src) continue;
            ke = VT__MIN(VT__MIN(k1, kb + 8), kend[l]);
            for (k = kb; k < ke; k++) dst[k] = src[k * s[l]];
        }
}

typedef struct {
    vt__xst st[VT__XG];
    double *bufa, *bufb;                          /* VT__XG pieces of VT__XK each, when needed */
    const double *pa[VT__XG], *pb[VT__XG];        /* the strided lines' starts */
    const vt__xblk *zb[VT__XG];                   /* a column of an im2col matrix: its block (pb NULL) */
    int64_t nb_[VT__XG];                          /* and its column */
    int64_t sa[VT__XG], sb[VT__XG], ka[VT__XG], kb[VT__XG];
    int la[VT__XG], lb[VT__XG];                   /* each entry's piece (-1: its line is contiguous) */
} vt__xgrp;

static void vt__exact_group(const vt__exact_job *j, const vt__xent *en, int ng, vt__xgrp *w) {
    const vt__xblk *b = j->xp->b;
    int64_t kmax = 0, k0, k1;
    int q, na = 0, nb = 0;
    for (q = 0; q < ng; q++) {
        const vt__xblk *z = &b[en[q].b];
        int64_t kend = z->K - z->K % VT__XL;
        memset(&w->st[q], 0, sizeof(vt__xst));
        w->la[q] = w->lb[q] = -1;
        if (z->K > ((int64_t)1 << 30)) continue;
        kmax = VT__MAX(kmax, kend);
        if (z->sak != 1 && w->bufa) {
            w->pa[na] = z->A + en[q].m * z->sam; w->sa[na] = z->sak; w->ka[na] = kend;
            w->la[q] = na++;
        }
        if (z->B && z->sbk != 1 && w->bufb) {
            if (nb > 0 && q > 0 && en[q - 1].b == en[q].b && en[q - 1].n == en[q].n) w->lb[q] = nb - 1; /* the same column */
            else {
                w->pb[nb] = z->ws ? NULL : z->B + en[q].n * z->sbn; w->sb[nb] = z->sbk; w->kb[nb] = kend;
                w->zb[nb] = z; w->nb_[nb] = en[q].n;
                w->lb[q] = nb++;
            }
        }
    }
    for (k0 = 0; k0 < kmax; k0 += VT__XK) {
        k1 = VT__MIN(kmax, k0 + VT__XK);
        if (na) vt__xgather(w->bufa, w->pa, w->sa, w->ka, na, k0, k1);
        if (nb) vt__xgather(w->bufb, w->pb, w->sb, w->kb, nb, k0, k1);
        for (q = 0; q < nb; q++) /* im2col columns: from the source image, where they lie close together */
            if (!w->pb[q] && k0 < w->kb[q])
                vt__wstat_gather(w->zb[q]->ws, w->zb[q]->wn, w->nb_[q], k0, VT__MIN(k1, w->kb[q]), w->bufb + (int64_t)q * VT__XK);
        for (q = 0; q < ng; q++) {
            const vt__xblk *z = &b[en[q].b];
            int64_t kend = z->K - z->K % VT__XL, ke = VT__MIN(kend, k1);
            const double *pa, *pb;
            if (k0 >= kend || z->K > ((int64_t)1 << 30)) continue;
            if (w->la[q] < 0 && z->sak != 1) { vt__xsum_run(z, en[q].m, en[q].n, k0, ke, &w->st[q]); continue; }
            if (z->B && w->lb[q] < 0 && z->sbk != 1) { vt__xsum_run(z, en[q].m, en[q].n, k0, ke, &w->st[q]); continue; }
            pa = w->la[q] >= 0 ? w->bufa + (int64_t)w->la[q] * VT__XK : z->A + en[q].m * z->sam + k0;
            pb = !z->B ? NULL : w->lb[q] >= 0 ? w->bufb + (int64_t)w->lb[q] * VT__XK : z->B + en[q].n * z->sbn + k0;
            vt__xsum_lanes(pa, pb, ke - k0, &w->st[q]);
        }
    }
    for (q = 0; q < ng; q++) {
        const vt__xblk *z = &b[en[q].b];
        double v;
        if (z->K > ((int64_t)1 << 30) || !vt__xsum_finish(z, en[q].m, en[q].n, &w->st[q], &v))
            v = vt__xprod_value(b, j->xp->n, en[q].i);
        j->x[en[q].i] = v;
    }
}

/* entries en[0..ng) of blocks with ws (a column read from its source
   image), in the order (block, column, row): each run of one column is
   gathered VT__XC terms at a time into col (a, of VT__XC, for a strided
   A's row) and its outputs' lanes advance over it; their terms reach each
   lane in the order of vt__xsum_fast */
static void vt__exact_cols(const vt__exact_job *j, const vt__xent *en, int ng, vt__xst *st, double *col, double *a) {
    const vt__xblk *b = j->xp->b;
    int q = 0, r, e;
    for (; q < ng; q = r) {
        const vt__xblk *z = &b[en[q].b];
        int64_t kend = z->K - z->K % VT__XL, k0, k1, k;
        for (r = q + 1; r < ng && en[r].b == en[q].b && en[r].n == en[q].n; r++) ;
        memset(st, 0, sizeof(vt__xst) * (size_t)(r - q));
        for (k0 = 0; k0 < kend && z->K <= ((int64_t)1 << 30); k0 = k1) {
            k1 = VT__MIN(kend, k0 + VT__XC);
            vt__wstat_gather(z->ws, z->wn, en[q].n, k0, k1, col);
            for (e = q; e < r; e++) {
                const double *pa = z->A + en[e].m * z->sam;
                if (z->sak == 1) pa += k0;
                else {
                    for (k = k0; k < k1; k++) a[k - k0] = pa[k * z->sak];
                    pa = a;
                }
                vt__xsum_lanes(pa, col, k1 - k0, &st[e - q]);
            }
        }
        for (e = q; e < r; e++) {
            double v;
            if (z->K > ((int64_t)1 << 30) || !vt__xsum_finish(z, en[e].m, en[e].n, &st[e - q], &v))
                v = vt__xprod_value(b, j->xp->n, en[e].i);
            j->x[en[e].i] = v;
        }
    }
}

/* a thread's work area: its group, the two pieces' buffers and a column's
   (from the scratch arena, one per thread, vt__cpu_exact: the pieces are
   4 MB, which malloc had mapped and unmapped, page faults and all, for
   every chunk of every call) */
#define VT__XGRP_BYTES ((sizeof(vt__xgrp) + 63) / 64 * 64)
#define VT__XWORK (VT__XGRP_BYTES + sizeof(double) * (2 * VT__XG * VT__XK + 2 * VT__XC))
static void vt__exact_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__exact_job *j = (const vt__exact_job *)arg;
    const vt__xblk *b = j->xp->b;
    vt__xgrp *w = (vt__xgrp *)j->wb[tid];
    double *bufs = (double *)((unsigned char *)j->wb[tid] + VT__XGRP_BYTES), *col = NULL;
    int64_t g0, q;
    int needa = 0, needb = 0, needc = 0, ng, ws;
    for (q = lo; q < hi; q++) {
        const vt__xblk *z = &b[j->en[q].b];
        if (z->ws) { needc = 1; continue; }
        needa |= z->sak != 1;
        needb |= z->B && z->sbk != 1;
    }
    /* without the pieces the strided lines are read in place */
    w->bufa = needa ? bufs : NULL;
    w->bufb = needb ? bufs + VT__XG * VT__XK : NULL;
    col = needc ? bufs + 2 * VT__XG * VT__XK : NULL;
    for (g0 = lo; g0 < hi; g0 += ng) { /* groups of one kind: ws blocks or not */
        ng = 1; ws = b[j->en[g0].b].ws != NULL;
        while (ng < VT__XG && g0 + ng < hi && (b[j->en[g0 + ng].b].ws != NULL) == ws) ng++;
        if (ws) vt__exact_cols(j, j->en + g0, ng, w->st, col, col + VT__XC);
        else vt__exact_group(j, j->en + g0, ng, w);
    }
}

/* each entry's block, row and column, in the order of vt__exact_task */
static void vt__xent_fill(const vt__xprod *xp, const vt__ents *at, vt__xent *en) {
    int64_t q;
    for (q = 0; q < at->n; q++) {
        int64_t i = at->e[q].i;
        int bl = 0, bh = xp->n - 1;
        while (bl < bh) { /* the last block whose off <= i, as vt__xprod_value */
            int mid = (bl + bh + 1) / 2;
            if (xp->b[mid].off <= i) bl = mid; else bh = mid - 1;
        }
        en[q].i = i; en[q].b = bl;
        en[q].m = (i - xp->b[bl].off) / xp->b[bl].N; en[q].n = (i - xp->b[bl].off) % xp->b[bl].N;
    }
    qsort(en, (size_t)at->n, sizeof(vt__xent), vt__xent_cmp);
}

static void vt__cpu_exact(vt_ctx *c, double *x, const vt__xprod *xp, const vt__ents *at) {
    vt__exact_job j;
    vt__xent *en = (vt__xent *)vt__scratch(c, sizeof(vt__xent) * (size_t)(at->n + 1));
    int64_t q, work = 0;
    if (!en) return;
    vt__xent_fill(xp, at, en);
    j.x = x; j.xp = xp; j.en = en;
    j.wb = vt__tbufs(c, VT__XWORK);
    if (!j.wb) return;
    for (q = 0; q < xp->n; q++) work = VT__MAX(work, xp->b[q].K);
    vt__parallel(&c->pool, at->n, at->n * (work + 16) * 4, vt__exact_task, &j);
}

/* ws: B's line statistics from a convolution's source (vt__wstat_lines), or NULL */
/* THE BOUND OF A CORRECTLY ROUNDED PRODUCT decides, with no log to catch a
   wrong call, which outputs are RNE32(x) and which are evaluated exactly:
   it is the sound bound in every bound mode. A probabilistic gamma there
   would let an order whose rounding errors do not cancel (a long sum that
   rounds up at every step: tests/test_replay.c's
   probabilistic_products_correctly_rounded) take RNE32(x) where the exact
   value rounds elsewhere, and two machines would hold different weights
   with nothing in either log. The order itself (o) is unchanged: the copy
   only computes gamma. */
static const vt__ord *vt__sound_ord(const vt__ord *o, vt__ord *tmp) {
    if (o->bmode != VT_BOUND_PROBABILISTIC) return o;
    *tmp = *o;
    tmp->bmode = VT_BOUND_SOUND;
    return tmp;
}

/* A FUSED PRODUCT. The whole output of one product (C = A B + bias, no old
   value) with a lazy bound, a correctly rounded product: the GEMM applies
   vt__round's rule for it (vt__lazy_rows, the same width and bound) to
   each tile as soon as the tile is final, while it is in cache, instead of
   a pass over the output afterwards (14-19% of the verified step's extra
   time at width 128 was that pass). Where a block of the rule starts
   changes no value, entry or first NaN (vt__lazy_rows), so values are the
   pass's; the threads' entries and first NaN are gathered (vt__ents_gather:
   in index order, the smallest) into the output slot's own list, since a
   kernel's other outputs may be fused too, and vt__round takes them from
   there (c->round_fused = 2 + slot) to the exact evaluation as it took the
   pass's. vt__no_gfuse (tests) turns it off. */
static int vt__no_gfuse;
static int64_t vt__gfused; /* tests: products rounded in their GEMM */
static void vt__fused_begin(vt__kern *k, vt__kout *o, const vt__lazy *z, double *C, vt__rjob *rj) {
    vt_ctx *c = k->c;
    int t;
    for (t = 0; t < c->pool.n; t++) { c->tents[t].n = 0; c->tents[t].bad = -1; }
    rj->c = c; rj->x = C; rj->e = NULL; rj->lz = z; rj->tri = 0; rj->compact = 0; rj->cast = 0; rj->ld = 0; rj->off = 0;
    rj->ef = c->d.bound == VT_BOUND_PROBABILISTIC ? 1 : 0.5; /* vt__round's xef for a correctly rounded product */
    rj->gs = o->xp->gs; rj->gx = o->xp->gx;
    c->gfuse = rj; /* the product's vt__gemm_go takes it */
}
/* A FUSED CAST. A point without a bound (every point in fp64, native and
   round-only; in a verified trainer's step the ones whose values are the
   same everywhere) is vt__round's cast, or in fp64 its NaN check, and that
   pass too takes each element alone: so the GEMM casts (checks) each tile
   as soon as it is final, an elementwise kernel each piece it wrote
   (vt__parallel_ew), and the point takes the first NaN from fbad[slot]. In
   fp64 the pass over every product was 6% of the step at width 256, while
   the verified step had none (a fused product): the baselines pay what
   verified pays. Not for an auditor (its points read the log first).
   vt__no_gfuse turns it off too. */
static int64_t vt__gcast; /* tests: outputs cast (checked) in their kernel */
static int64_t vt__gclip; /* tests: clipped gradients scaled and cast (checked) in one pass */
static int vt__cast_fuse_ctx_ok(const vt_ctx *c) { /* (the context's part: a trainer's step, or no log at all) */
    return (c->d.mode != VT_MODE_VERIFIED || (c->d.role == VT_ROLE_TRAIN && c->in_step)) && !c->ncal && !vt__no_gfuse &&
           c->status == VT_OK;
}
static int vt__cast_fuse_ok(const vt__kern *k, const vt__kout *o, const double *C, int64_t M, int64_t N, int64_t K) {
    return !o->e && C == o->x && M * N == o->n && !o->acc && !o->fused && K > 0 && M > 0 && N > 0 && vt__cast_fuse_ctx_ok(k->c);
}
static void vt__cast_fuse_begin(vt_ctx *c, double *C, int64_t N, vt__rjob *rj) {
    int t;
    for (t = 0; t < c->pool.n; t++) { c->tents[t].n = 0; c->tents[t].bad = -1; }
    memset(rj, 0, sizeof *rj);
    rj->c = c; rj->x = C; rj->ef = 1; rj->ld = N;
    rj->cast = c->d.mode == VT_MODE_FP64 ? 1 : 2; /* as vt__round: fp64 checks, the others cast (in a step or not) */
}
/* the threads' entries and first NaN into output slot's own list (vt__fents_take) */
static void vt__fents_gather(vt_ctx *c, int slot) {
    c->fents[slot].n = 0;
    c->fbad[slot] = vt__ents_gather(c, &c->fents[slot]);
}
static void vt__fused_end(vt__kern *k, vt__kout *o) {
    vt_ctx *c = k->c;
    int slot = (int)(o - k->out);
    c->gfuse = NULL;
    vt__fents_gather(c, slot);
    o->fused = 2 + slot;
    if (o->e) vt__gfused++;
    else vt__gcast++;
}

static void vt__mm_src(vt__kern *k, vt__kout *o, int64_t M, int64_t N, int64_t K, const double *A, int64_t sam,
                       int64_t sak, const double *B, int64_t sbk, int64_t sbn, double *C, double *E, const double *bias,
                       int64_t kchunk, const vt__wstat *ws) {
    vt__ord so;
    const vt__ord *ob = k->o; /* the bound's gamma */
    vt__rjob rj;
    vt__lazy *zs = NULL; /* its statistics pending: computed in the product's job */
    int fuse = 0;
    if (o->fused >= 2) o->fused = 0; /* a second product into a fused output: the point's own pass after all */
    if (E && k->c->d.mode == VT_MODE_VERIFIED && !k->c->ncal && M > 0 && N > 0) {
        if (!vt__xprod_add(k->c, o, C, M, N, K, A, sam, sak, B, sbk, sbn, bias, kchunk)) return;
        ob = vt__sound_ord(k->o, &so);
    }
    if (E && E == o->e && M * N == o->n && !k->c->ncal && !vt__no_lazy) {
        vt__lazy *z = vt__gemm_lazy(k->c, ob, M, N, K, A, sam, sak, B, sbk, sbn, o->acc ? C : NULL, bias, kchunk, ws, 1);
        if (!z) return;
        zs = z->pend ? z : NULL;
        if (!z->gb.C0) {
            o->lz = z;
            fuse = o->xp && !o->acc && K > 0 && z->nb == 1 && z->nc == N && !vt__no_gfuse;
            if (fuse) vt__fused_begin(k, o, z, C, &rj);
        } else {
            z->gb.E = E;
            vt__parallel(&k->c->pool, M, M * N, vt__gbound_task, &z->gb);
        }
    } else if (E) vt__gemm_bound(k->c, ob, M, N, K, A, sam, sak, B, sbk, sbn, o->acc ? C : NULL, N, bias, kchunk, E);
    else if (vt__cast_fuse_ok(k, o, C, M, N, K)) {
        fuse = 1;
        vt__cast_fuse_begin(k->c, C, N, &rj);
        k->c->gfuse = &rj; /* the product's vt__gemm_go takes it */
    }
    if (!o->acc && !bias)
        vt__gemm_set(k->c, k->o, M, N, K, A, sam, sak, B, sbk, sbn, C, N, kchunk);
    else {
        vt__gemm_run_bias(k->c, k->o, M, N, K, A, sam, sak, B, sbk, sbn, C, N, kchunk, bias, o->acc);
    }
    if (zs) { /* the product's job claimed them (or, where it ran none, the caller runs them now) */
        k->c->gstat = NULL;
        vt__pstat_wait(zs);
    }
    if (fuse) vt__fused_end(k, o);
}

static void vt__mm(vt__kern *k, vt__kout *o, int64_t M, int64_t N, int64_t K, const double *A, int64_t sam,
                   int64_t sak, const double *B, int64_t sbk, int64_t sbn, double *C, double *E, const double *bias,
                   int64_t kchunk) {
    vt__mm_src(k, o, M, N, K, A, sam, sak, B, sbk, sbn, C, E, bias, kchunk, NULL);
}

/* rows [lo, hi) of a batch's written-out bounds, row r = b M + m: row m of
   product b's bound (vt__gbound_task on the columns [b nc, (b + 1) nc) of
   the shared statistics, C0 the old value of product b) */
typedef struct { const vt__lazy *z; int64_t M, nc; const double *x; double *e; } vt__gbatch_job;
static void vt__gbound_batch_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__gbatch_job *j = (const vt__gbatch_job *)arg;
    int64_t r = lo;
    while (r < hi) {
        int64_t b = r / j->M, m0 = r % j->M, m1 = VT__MIN(j->M, m0 + (hi - r)), mn = j->M * j->nc;
        vt__gbound_job gb = j->z->gb;
        vt__stat_job sb = j->z->sb;
        sb.n1 += b * j->nc; sb.n2 += b * j->nc; sb.mx += b * j->nc; sb.th += b * j->nc;
        gb.b = &sb; gb.C0 = j->x + b * mn; gb.ldc = j->nc; gb.N = j->nc; gb.lde = j->nc; gb.E = j->e + b * mn;
        vt__gbound_task(&gb, m0, m1, tid);
        r += m1 - m0;
    }
}

/* capc[r] = max |x| over row r of nc values, INFINITY when one is not finite
   (the caps of a batched lazy bound with old values), and the row copied to
   copy (or not, when NULL) */
typedef struct { const double *x; int64_t nc; double *capc, *copy; } vt__capc_job;
static void vt__capc_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__capc_job *j = (const vt__capc_job *)arg;
    int64_t r, n;
    (void)tid;
    for (r = lo; r < hi; r++) {
        const double *x = j->x + r * j->nc;
        double m[4] = {0, 0, 0, 0};
        int nan = 0;
        if (j->copy) memcpy(j->copy + r * j->nc, x, sizeof(double) * (size_t)j->nc);
        for (n = 0; n + 4 <= j->nc; n += 4) { /* four lanes; a NaN fails every compare: flagged */
            int l;
            for (l = 0; l < 4; l++) {
                double a = fabs(x[n + l]);
                m[l] = a > m[l] ? a : m[l];
                nan |= a != a;
            }
        }
        for (; n < j->nc; n++) {
            double a = fabs(x[n]);
            m[0] = a > m[0] ? a : m[0];
            nan |= a != a;
        }
        m[0] = VT__MAX(VT__MAX(m[0], m[1]), VT__MAX(m[2], m[3]));
        j->capc[r] = nan || !(m[0] < INFINITY) ? INFINITY : m[0];
    }
}

/* A batch of products sharing A, as a convolution's images: for b < nb,
   C_b = A B_b (M, nc) at o->x + b M nc, B_b the columns [b nc, (b + 1) nc)
   of B (K, nb nc) (row stride sbk, columns contiguous), no bias. Each C_b
   is the correctly rounded product of vt__mm and its bound is that of the
   product C_b alone (A's row statistics do not depend on b, B's column
   statistics are per column): computed once for the batch instead of once
   per b, and lazy (the batched vt__lazy) when there is no old value. */
static void vt__mm_batch(vt__kern *k, vt__kout *o, int64_t nb, int64_t M, int64_t nc, int64_t K, const double *A, int64_t sam,
                         int64_t sak, const double *B, int64_t sbk, const vt__wstat *ws) {
    vt_ctx *c = k->c;
    int64_t b, mn = M * nc;
    double *c0 = NULL, *capc = NULL;
    vt__ord so;
    const vt__ord *ob = k->o; /* the bound's gamma: sound for a correctly rounded product (vt__sound_ord) */
    if (vt__cast_fuse_ok(k, o, o->x, nb, mn, K)) { /* A FUSED CAST over the images' products: each
                                                     tile's index offset by its image's */
        vt__rjob rj;
        vt__cast_fuse_begin(k->c, o->x, nc, &rj);
        for (b = 0; b < nb && c->status == VT_OK; b++) {
            rj.off = b * mn;
            c->gfuse = &rj;
            vt__gemm_set(c, k->o, M, nc, K, A, sam, sak, B + b * nc, sbk, 1, o->x + b * mn, nc, 0);
            c->gfuse = NULL;
        }
        vt__fused_end(k, o);
        return;
    }
    if (!o->e || c->ncal || vt__no_lazy || nb * mn != o->n || mn <= 0) {
        for (b = 0; b < nb; b++)
            vt__mm(k, o, M, nc, K, A, sam, sak, B + b * nc, sbk, 1, o->x + b * mn, o->e ? o->e + b * mn : NULL, NULL, 0);
        return;
    }
    if (c->d.mode == VT_MODE_VERIFIED) {
        if (o->acc) { /* the old values of every image in one pass over the pool, and each row's cap (A LAZY BOUND) */
            vt__capc_job cj;
            c0 = (double *)c->be->alloc(c, sizeof(double) * (size_t)(nb * mn + 1), 0);
            capc = (double *)vt__scratch(c, sizeof(double) * (size_t)(nb * M + 1));
            if (!c0 || !capc) return;
            cj.x = o->x; cj.nc = nc; cj.capc = capc; cj.copy = c0;
            vt__parallel(&c->pool, nb * M, nb * mn, vt__capc_task, &cj);
        }
        for (b = 0; b < nb; b++) {
            if (!vt__xprod_add_c0(c, o, o->x + b * mn, M, nc, K, A, sam, sak, B + b * nc, sbk, 1, NULL, 0, c0 ? c0 + b * mn : NULL))
                return;
            o->xp->b[o->xp->n - 1].ws = ws; o->xp->b[o->xp->n - 1].wn = b;
        }
        ob = vt__sound_ord(k->o, &so);
    }
    {
        vt__lazy *z = vt__gemm_lazy(c, ob, M, nb * nc, K, A, sam, sak, B, sbk, 1, o->acc ? o->x : NULL, NULL, 0, ws, 0);
        if (!z) return;
        if (!z->gb.C0) { z->nb = nb; z->nc = nc; o->lz = z; }
        else if (c0) { /* old values kept for the exact evaluation: lazy with them (A LAZY BOUND) */
            z->nb = nb; z->nc = nc; z->c0 = c0; z->capc = capc; z->gb.C0 = NULL;
            o->lz = z;
        } else { /* old values: each b's bound written out, from the shared statistics, in one pass over the pool */
            vt__gbatch_job bj;
            bj.z = z; bj.M = M; bj.nc = nc; bj.x = o->x; bj.e = o->e;
            vt__parallel(&c->pool, nb * M, nb * mn, vt__gbound_batch_task, &bj);
        }
    }
    for (b = 0; b < nb; b++) /* the products themselves, as vt__mm forms them */
        vt__mm(k, o, M, nc, K, A, sam, sak, B + b * nc, sbk, 1, o->x + b * mn, NULL, NULL, 0);
}

/* MATMUL: a (...,M,K) (or (...,K,M) with ta), b (...,K,N) (or (...,N,K) with
   tb) or 2-D b shared by every batch -> (...,M,N). Forward: one GEMM per
   batch, K terms. Backward: da = dy b^T (N terms); db = a^T dy per batch, or
   for a shared 2-D b summed over batches in fixed batch order (chunks of M
   rows: the outer-reduction lever). */
static void vt__k_matmul(vt__kern *k) {
    vt_tensor *t = k->t, *a = t->src[0], *b = t->src[1];
    int ta = (int)t->iparam[0], tb = (int)t->iparam[1];
    int64_t M = t->ne[t->ndim - 2], N = t->ne[t->ndim - 1];
    int64_t K = ta ? a->ne[a->ndim - 2] : a->ne[a->ndim - 1];
    int64_t nbat = vt_numel(t) / (M * N), bi;
    int shared = b->ndim == 2 && t->ndim > 2;
    const double *A = vt__d(a), *B = vt__d(b);
    /* element strides of a as (M,K) and b as (K,N) */
    int64_t sam = ta ? 1 : K, sak = ta ? M : 1, sbk = tb ? 1 : N, sbn = tb ? K : 1;
    int64_t sa = M * K, sb = shared ? 0 : K * N;
    if (!k->bwd) {
        for (bi = 0; bi < nbat; bi++) {
            vt__kout *o = &k->out[0];
            vt__mm(k, o, M, N, K, A + bi * sa, sam, sak, B + bi * sb, sbk, sbn, o->x + bi * M * N,
                   o->e ? o->e + bi * M * N : NULL, NULL, 0);
        }
        return;
    }
    {
        const double *dy = vt__d(t->grad);
        vt__kout *oa = &k->out[0], *ob = &k->out[1];
        if (oa->x) {
            /* da (M,K) = dy (M,N) b^T; stored as a's layout: with ta, da is (K,M) = b dy^T */
            for (bi = 0; bi < nbat; bi++) {
                double *X = oa->x + bi * sa, *E = oa->e ? oa->e + bi * sa : NULL;
                if (!ta) vt__mm(k, oa, M, K, N, dy + bi * M * N, N, 1, B + bi * sb, sbn, sbk, X, E, NULL, 0);
                else vt__mm(k, oa, K, M, N, B + bi * sb, sbk, sbn, dy + bi * M * N, 1, N, X, E, NULL, 0);
            }
        }
        if (ob->x) {
            if (shared) {
                /* db (K,N) = sum over batches of a_b^T dy_b: rows = nbat*M, chunks of M.
                   With ta each batch of a is (K,M): first gather it as (nbat*M, K) rows. */
                int64_t rows = nbat * M, ch = k->o->f32 ? vt__row_chunk(k, a, rows) : M, r, kk;
                const double *Ar = A;
                if (ta) {
                    double *g = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(rows * K));
                    if (!g) return;
                    for (bi = 0; bi < nbat; bi++)
                        for (kk = 0; kk < K; kk++)
                            for (r = 0; r < M; r++) g[(bi * M + r) * K + kk] = A[bi * sa + kk * M + r];
                    Ar = g;
                }
                if (!tb) vt__mm(k, ob, K, N, rows, Ar, 1, K, dy, N, 1, ob->x, ob->e, NULL, ch);
                else vt__mm(k, ob, N, K, rows, dy, 1, N, Ar, K, 1, ob->x, ob->e, NULL, ch);
            } else {
                for (bi = 0; bi < nbat; bi++) {
                    double *X = ob->x + bi * K * N, *E = ob->e ? ob->e + bi * K * N : NULL;
                    if (!tb) vt__mm(k, ob, K, N, M, A + bi * sa, sak, sam, dy + bi * M * N, N, 1, X, E, NULL, 0);
                    else vt__mm(k, ob, N, K, M, dy + bi * M * N, 1, N, A + bi * sa, sam, sak, X, E, NULL, 0);
                }
            }
        }
    }
}

/* LINEAR: x (R,IN) [leading dims flattened], w (OC,IN), bias (OC) -> (R,OC).
   Forward: y = x w^T + bias, IN + 2 terms. Backward: dx = dy w (OC terms);
   dw = dy^T x and dbias = column sums of dy over the R rows, in chunks of T
   rows summed in order (vt__row_chunk). */
static void vt__colsum(vt__kern *k, const vt__kout *o, const double *X, int64_t R, int64_t C, int64_t chunk, int bits);

static void vt__k_linear(vt__kern *k) {
    vt_tensor *t = k->t, *x = t->src[0], *w = t->src[1], *bias = t->src[2];
    int64_t IN = w->ne[1], OC = w->ne[0], R = vt_numel(x) / IN;
    const double *X = vt__d(x), *W = vt__d(w);
    if (!k->bwd) {
        vt__mm(k, &k->out[0], R, OC, IN, X, IN, 1, W, 1, IN, k->out[0].x, k->out[0].e, bias ? vt__d(bias) : NULL, 0);
        return;
    }
    {
        const double *dy = vt__d(t->grad);
        int64_t ch = vt__row_chunk(k, x, R);
        if (k->out[0].x) vt__mm(k, &k->out[0], R, IN, OC, dy, OC, 1, W, IN, 1, k->out[0].x, k->out[0].e, NULL, 0);
        if (k->out[1].x) vt__mm(k, &k->out[1], OC, IN, R, dy, 1, OC, X, IN, 1, k->out[1].x, k->out[1].e, NULL, ch);
        if (bias && k->out[2].x) vt__colsum(k, &k->out[2], dy, R, OC, ch, 24);
    }
}

/* column sums of X (R,C) over rows, rows in chunks summed in fixed order:
   e = (gsum(chunk) + gamma(nch - 1 + [old])(1 + gsum(chunk))) (sum|X| + |old|),
   or 0 when the whole sum is exact (vt__sum_bound). bits: significant bits
   of X's values (24 for binary32 values, 53 for any binary64 value). The
   lowest set bit L of a column is what vt__sum_bound needs; as in
   vt__stat_task only a column of few-bit values (vt__coarse_line) pays for
   the exact bit scan, the others take L = e - bits for their smallest
   nonzero magnitude m = f 2^e, a lower bound (every value's lowest bit is
   at least its own exponent minus bits). */
typedef struct { vt__kern *k; const double *X; int64_t R, C, chunk, nch; double *part, *mag, *mn; int bound; } vt__colsum_job;
static VT__UNUSED int vt__colsum_ymm; /* tests: the AVX2 walk even where vt__isa512 (the two must agree, a NaN's sign aside) */

#ifdef VT__AVX512
/* vt__colsum_task's vector columns 32 and then 8 at a time (vt__isa512),
   from column c while c + 8 <= C: each column's sums in row order and its
   minimum by the AVX2 form's operations (vminpd: the second operand where
   either is NaN), so the same bits, but for a NaN's sign (where two NaNs
   meet vaddpd keeps its first operand's, and the compiler orders the
   operands of a vector +; a NaN sum is reported, never logged). 32 columns
   per trip read 256 bytes of each row where 8 read one cache line, and
   each row of a wide matrix is on its own page: a chunk of 64 rows walked
   8 columns at a time spent 1.35 cycles an element and did not speed up on
   two threads. */
VT__T512 static int64_t vt__colsum512(double *P, double *Mg, double *Mn, const double *X, int64_t C, int64_t r0, int64_t r1,
                                       int fused, int64_t c) {
    const __m512d zero = _mm512_setzero_pd(), inf = _mm512_set1_pd(INFINITY);
    int64_t r, q;
    for (; c + 32 <= C; c += 32) {
        __m512d p[4], g[4], n[4];
        const double *x = X + r0 * C + c;
        for (q = 0; q < 4; q++) {
            p[q] = _mm512_loadu_pd(P + c + 8 * q); g[q] = _mm512_loadu_pd(Mg + c + 8 * q); n[q] = _mm512_loadu_pd(Mn + c + 8 * q);
        }
        for (r = r0; r < r1; r++, x += C)
            for (q = 0; q < 4; q++) {
                __m512d v = _mm512_loadu_pd(x + 8 * q), a = _mm512_abs_pd(v);
                if (fused) p[q] = _mm512_add_pd(p[q], v);
                g[q] = _mm512_add_pd(g[q], a);
                n[q] = _mm512_mask_min_pd(n[q], 0xff, n[q], _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, zero, _CMP_EQ_OQ), a, inf));
            }
        for (q = 0; q < 4; q++) {
            _mm512_storeu_pd(P + c + 8 * q, p[q]); _mm512_storeu_pd(Mg + c + 8 * q, g[q]); _mm512_storeu_pd(Mn + c + 8 * q, n[q]);
        }
    }
    for (; c + 8 <= C; c += 8) {
        __m512d p0 = _mm512_loadu_pd(P + c), g0 = _mm512_loadu_pd(Mg + c), n0 = _mm512_loadu_pd(Mn + c);
        const double *x = X + r0 * C + c;
        for (r = r0; r < r1; r++, x += C) {
            __m512d v = _mm512_loadu_pd(x), a = _mm512_abs_pd(v);
            if (fused) p0 = _mm512_add_pd(p0, v);
            g0 = _mm512_add_pd(g0, a);
            n0 = _mm512_mask_min_pd(n0, 0xff, n0, _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, zero, _CMP_EQ_OQ), a, inf));
        }
        _mm512_storeu_pd(P + c, p0); _mm512_storeu_pd(Mg + c, g0); _mm512_storeu_pd(Mn + c, n0);
    }
    return c;
}
#endif

static void vt__colsum_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__colsum_job *j = (vt__colsum_job *)arg;
    int64_t ch, c, c4, r, C = j->C;
    (void)tid;
    for (ch = lo; ch < hi; ch++) {
        int64_t r0 = ch * j->chunk, r1 = VT__MIN(j->R, r0 + j->chunk);
        double *P = j->part + ch * C, *Mg = j->mag + ch * C, *Mn = j->mn + ch * C;
        int fused = !(j->k->o->chaos || j->k->o->f32);
        for (c = 0; c < C; c++) { P[c] = 0; Mg[c] = 0; Mn[c] = INFINITY; }
        if (!fused) {
            c = 0;
#ifdef VT__AVX2
            if (!j->k->o->chaos) /* (binary32 accumulation: four columns at once) */
                for (; c + 4 <= C; c += 4) vt__rsum4_f32(j->k->o, j->X + r0 * C + c, C, r1 - r0, P + c);
#endif
            for (; c < C; c++) P[c] = vt__rsum(j->k->o, (uint64_t)(ch * C + c), j->X + r0 * C + c, C, r1 - r0);
        }
        else if (!j->bound)
            for (r = r0; r < r1; r++)
                for (c = 0; c < C; c++) P[c] += j->X[r * C + c];
        if (!j->bound) continue;
        c = 0;
#ifdef VT__AVX2
        {   /* magnitudes and smallest nonzero magnitudes feed the bound: eight columns at a time down the
               chunk's rows, the sums in registers (each column's sums in row order, as the loop below) */
            const __m256d sign = _mm256_set1_pd(-0.0), zero = _mm256_setzero_pd(), inf = _mm256_set1_pd(INFINITY);
#ifdef VT__AVX512
            if (vt__isa512() && !vt__colsum_ymm) c = vt__colsum512(P, Mg, Mn, j->X, C, r0, r1, fused, c);
#endif
            for (; c + 8 <= C; c += 8) {
                __m256d p0 = _mm256_loadu_pd(P + c), p1 = _mm256_loadu_pd(P + c + 4);
                __m256d g0 = _mm256_loadu_pd(Mg + c), g1 = _mm256_loadu_pd(Mg + c + 4);
                __m256d n0 = _mm256_loadu_pd(Mn + c), n1 = _mm256_loadu_pd(Mn + c + 4);
                const double *x = j->X + r0 * C + c;
                for (r = r0; r < r1; r++, x += C) {
                    __m256d v0 = _mm256_loadu_pd(x), v1 = _mm256_loadu_pd(x + 4);
                    __m256d a0 = _mm256_andnot_pd(sign, v0), a1 = _mm256_andnot_pd(sign, v1);
                    if (fused) { p0 = _mm256_add_pd(p0, v0); p1 = _mm256_add_pd(p1, v1); }
                    g0 = _mm256_add_pd(g0, a0);
                    g1 = _mm256_add_pd(g1, a1);
                    n0 = _mm256_min_pd(n0, _mm256_blendv_pd(a0, inf, _mm256_cmp_pd(a0, zero, _CMP_EQ_OQ)));
                    n1 = _mm256_min_pd(n1, _mm256_blendv_pd(a1, inf, _mm256_cmp_pd(a1, zero, _CMP_EQ_OQ)));
                }
                _mm256_storeu_pd(P + c, p0); _mm256_storeu_pd(P + c + 4, p1);
                _mm256_storeu_pd(Mg + c, g0); _mm256_storeu_pd(Mg + c + 4, g1);
                _mm256_storeu_pd(Mn + c, n0); _mm256_storeu_pd(Mn + c + 4, n1);
            }
            for (; c + 4 <= C; c += 4) { /* the vector form's columns are the same as before: [0, C - C % 4) */
                __m256d p0 = _mm256_loadu_pd(P + c), g0 = _mm256_loadu_pd(Mg + c), n0 = _mm256_loadu_pd(Mn + c);
                const double *x = j->X + r0 * C + c;
                for (r = r0; r < r1; r++, x += C) {
                    __m256d v0 = _mm256_loadu_pd(x), a0 = _mm256_andnot_pd(sign, v0);
                    if (fused) p0 = _mm256_add_pd(p0, v0);
                    g0 = _mm256_add_pd(g0, a0);
                    n0 = _mm256_min_pd(n0, _mm256_blendv_pd(a0, inf, _mm256_cmp_pd(a0, zero, _CMP_EQ_OQ)));
                }
                _mm256_storeu_pd(P + c, p0); _mm256_storeu_pd(Mg + c, g0); _mm256_storeu_pd(Mn + c, n0);
            }
        }
#endif
        c4 = c; /* the columns the vector form left */
        for (r = r0; r < r1; r++) {
            const double *x = j->X + r * C;
            for (c = c4; c < C; c++) {
                double a = fabs(x[c]);
                if (fused) P[c] += x[c];
                if (j->bound) { Mg[c] += a; if (a != 0 && a < Mn[c]) Mn[c] = a; }
            }
        }
    }
}

static void vt__colsum(vt__kern *k, const vt__kout *o, const double *X, int64_t R, int64_t C, int64_t chunk, int bits) {
    vt__colsum_job j;
    int64_t ch, c, r;
    double G;
    j.k = k; j.X = X; j.R = R; j.C = C; j.bound = o->e != NULL;
    j.chunk = chunk > 0 ? VT__MIN(chunk, R) : R;
    if (j.chunk < 1) j.chunk = 1;
    j.nch = (R + j.chunk - 1) / j.chunk;
    j.part = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(3 * j.nch * C));
    if (!j.part) return;
    j.mag = j.part + j.nch * C;
    j.mn = j.mag + j.nch * C;
    vt__parallel(&k->c->pool, j.nch, R * C, vt__colsum_task, &j);
    G = vt__gsum(k->o, j.chunk) + vt__g(k->o, j.nch - 1 + (o->acc ? 1 : 0)) * (1 + vt__gsum(k->o, j.chunk));
    for (c = 0; c < C; c++) {
        double v = o->acc ? o->x[c] : 0, m = o->acc ? fabs(o->x[c]) : 0, mn = INFINITY;
        int L = o->acc ? vt__lsb(o->x[c]) : VT__LSB_NONE, e;
        for (ch = 0; ch < j.nch; ch++) {
            v = VT__ACC(k->o, v + j.part[ch * C + c]);
            m += j.mag[ch * C + c];
            mn = VT__MIN(mn, j.mn[ch * C + c]);
        }
        o->x[c] = v;
        if (!o->e) continue;
        if (vt__coarse_line(X + c, C, R)) {
            for (r = 0; r < R; r++)
                if (X[r * C + c] != 0) L = VT__MIN(L, vt__lsb(X[r * C + c]));
        } else if (mn < INFINITY) {
            e = vt__fexp(mn);
            L = VT__MIN(L, e - bits);
        }
        /* 0 only when the whole sum (R terms and the old value) is exact */
        o->e[c] = vt__sum_bound(k->o, R + (o->acc ? 1 : 0), m, L) == 0 ? 0 : G * m;
    }
}

/* --- relu, gelu, tanh -------------------------------------------------------- */

/* RELU: max(x, 0) is exact. Backward: dy [x > 0], exact unless accumulating. */
static void vt__k_relu(vt__kern *k) {
    vt_tensor *t = k->t;
    const double *X = vt__d(t->src[0]);
    int64_t i, n = vt_numel(t);
    if (!k->bwd) {
        for (i = 0; i < n; i++) k->out[0].x[i] = X[i] > 0 ? X[i] : 0.0;
    } else {
        const double *dy = vt__d(t->grad);
        vt__same_everywhere(&k->out[0]);
        for (i = 0; i < n; i++) vt__put(&k->out[0], i, X[i] > 0 ? dy[i] : 0.0, 0);
    }
    k->out[0].exact = !k->out[0].acc;
}

#define VT__GELU_S 0.79788456080286535588 /* sqrt(2/pi), a binary64 constant of the op */
#define VT__GELU_A 0.044715

/* GELU (tanh form, as GPT-2): y = 0.5 x (1 + tanh(z)), z = s (x + a x^3),
   computed as y = x sigmoid(2z) (the same function: 1 + tanh(z) =
   2 sigmoid(2z)), which keeps its relative accuracy where 1 + tanh(z)
   cancels (x very negative). Every operation is a fixed IEEE operation or
   vtrain's own sigmoid (>>elementary) on the binary32 input: the same bits
   everywhere, no bound, no log entry, in the forward and in the backward
   d = sigmoid + 2 x sigmoid (1 - sigmoid) s (1 + 3a x^2), v = dy d.
   The forward keeps sigmoid(2z) (node->extra, the step arena) for the
   backward; a backward without it (a calibration rerun) recomputes it. */
static double vt__gelu_arg(double x) { /* 2z: sigmoid's argument */
    double x3 = x * x * x, z = VT__GELU_S * (x + VT__GELU_A * x3);
    return 2 * z;
}

/* 256 elements at a time: the arguments, their sigmoids (vt__vsigmoid, the
   scalar function's bits) into the kept sigmoids or a buffer, then y or v */
static void vt__gelu_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__job *j = (vt__job *)arg;
    vt__kern *k = j->k;
    const double *X = vt__d(k->t->src[0]);
    const double *dy = k->bwd ? vt__d(k->t->grad) : NULL;
    double *sc = (double *)j->p, za[256], sb[256];
    int64_t i0, i, n;
    (void)tid;
    for (i0 = lo; i0 < hi; i0 += n) {
        const double *x = X + i0;
        double *sg = sc ? sc + i0 : sb;
        n = VT__MIN(256, hi - i0);
        if (!(k->bwd && sc)) {
            for (i = 0; i < n; i++) za[i] = vt__gelu_arg(x[i]);
            vt__vsigmoid(za, 0, sg, n);
        }
        if (!k->bwd) {
            double *y = k->out[0].x + i0;
            for (i = 0; i < n; i++) y[i] = x[i] * sg[i];
        } else {
            const vt__kout *o = &k->out[0];
            double *v = za;
            for (i = 0; i < n; i++) {
                double d = sg[i] + 2 * x[i] * (sg[i] * (1 - sg[i])) * (VT__GELU_S * (1 + 3 * VT__GELU_A * x[i] * x[i]));
                v[i] = dy[i0 + i] * d;
            }
            if (!o->acc) memcpy(o->x + i0, v, sizeof(double) * (size_t)n);
            else
                for (i = 0; i < n; i++) o->x[i0 + i] += v[i];
            if (o->e) memset(o->e + i0, 0, sizeof(double) * (size_t)n);
        }
    }
}

/* TANH: y = tanh(x) by vtrain's own tanh (>>elementary), the same bits
   everywhere. Backward: dy (1 - y^2) with y the binary32 output: fixed
   arithmetic on binary32 inputs. No bound either way. */
static void vt__tanh_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__job *j = (vt__job *)arg;
    vt__kern *k = j->k;
    int64_t i;
    (void)tid;
    if (!k->bwd) {
        vt__vtanh(vt__d(k->t->src[0]) + lo, 0, k->out[0].x + lo, hi - lo);
    } else {
        const double *Y = vt__d(k->t), *dy = vt__d(k->t->grad);
        for (i = lo; i < hi; i++) {
            double v = dy[i] * (1 - Y[i] * Y[i]);
            vt__put(&k->out[0], i, v, 0);
        }
    }
}

/* A FUSED CAST for an elementwise kernel whose one output out[0] it writes
   element i of from the inputs' element i: fn runs on pieces of 4096 and
   each piece is cast (checked) while in cache, instead of the point's pass */
typedef struct { vt__task_fn fn; void *arg; vt__rjob rj; } vt__ewc_job;
static void vt__ewc_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__ewc_job *w = (vt__ewc_job *)arg;
    int64_t a, b;
    for (a = lo; a < hi; a = b) {
        b = VT__MIN(hi, a + 4096);
        w->fn(w->arg, a, b, tid);
        vt__cast_span(&w->rj, a, b, tid);
    }
}
static void vt__parallel_ew(vt__kern *k, int64_t n, int64_t cost, vt__task_fn fn, void *arg) {
    vt__kout *o = &k->out[0];
    vt__ewc_job w;
    int i, one = 1;
    for (i = 1; i < VT_MAX_SRC; i++) one &= !k->out[i].x;
    if (!one || !vt__cast_fuse_ok(k, o, o->x, 1, n, 1)) {
        vt__parallel(&k->c->pool, n, cost, fn, arg);
        return;
    }
    w.fn = fn; w.arg = arg;
    vt__cast_fuse_begin(k->c, o->x, n, &w.rj);
    vt__parallel(&k->c->pool, n, cost, vt__ewc_task, &w);
    vt__fused_end(k, o);
}

static void vt__k_elementwise(vt__kern *k, vt__task_fn fn, int64_t cost) {
    vt__job j;
    int64_t n = vt_numel(k->t);
    j.k = k; j.R = n; j.C = 1; j.p = NULL;
    vt__parallel_ew(k, n, n * cost, fn, &j);
}

/* --- softmax family -------------------------------------------------------- */

/* the largest of x[0, n) as the loop below finds it: NaNs skipped, -inf
   when there is nothing else, and of equal values the first (only zeros can
   tell: -0 before +0 gives -0). Sixteen lanes of maxpd (x, m): a NaN x or a
   tie keeps m, so a nonzero result is the loop's; a zero one goes back to
   the loop for its sign. A chain of scalar maxsd cost 4 cycles an element:
   70% of the attention softmax's forward at T 256. */
static double vt__row_max(const double *x, int64_t n) {
    int64_t j = 0;
    double m = -INFINITY;
#ifdef VT__AVX2
    if (n >= 16) {
        __m256d m0 = _mm256_set1_pd(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
        double l[4];
        int q;
        for (; j + 16 <= n; j += 16) {
            m0 = _mm256_max_pd(_mm256_loadu_pd(x + j), m0);
            m1 = _mm256_max_pd(_mm256_loadu_pd(x + j + 4), m1);
            m2 = _mm256_max_pd(_mm256_loadu_pd(x + j + 8), m2);
            m3 = _mm256_max_pd(_mm256_loadu_pd(x + j + 12), m3);
        }
        _mm256_storeu_pd(l, _mm256_max_pd(_mm256_max_pd(m0, m1), _mm256_max_pd(m2, m3)));
        for (q = 0; q < 4; q++) if (l[q] > m) m = l[q];
        for (; j < n; j++) if (x[j] > m) m = x[j];
        if (m != 0) return m;
        m = -INFINITY;
        j = 0;
    }
#endif
    for (; j < n; j++) if (x[j] > m) m = x[j];
    return m;
}

/* Shared by softmax, log-softmax and cross-entropy, for one row x[0,n) of
   binary32 values: m = max x, t_j = x_j - m and ex_j = exp(t_j) (vtrain's
   own exp) are the same bits on every machine; s = sum ex_j in any order is
   not: |s - s*| <= eps_s s*, eps_s = gsum(n) (positive terms; 0 when n <= 2,
   where one addition gives the same sum everywhere). Writes ex. */
static double vt__softmax_row(const vt__ord *o, uint64_t key, const double *x, int64_t n, double *ex, double *eps_s,
                              double *mx) {
    int64_t j;
    double m = vt__row_max(x, n);
    vt__vexp(x, m, ex, n); /* vt__dexp(x[j] - m), the scalar function's bits */
    if (o->f32)
        for (j = 0; j < n; j++) ex[j] = vt__f32r(ex[j]);
    *eps_s = vt__gsum(o, n);
    if (mx) *mx = m;
    return vt__rsum(o, key, ex, 1, n);
}

/* SOFTMAX over the last dim: y_j = ex_j / s against y*_j = ex_j / s*:
   relative error eps_s + u (the division), e_j = 1.01 y_j (eps_s + u);
   e = 0 when s is the same everywhere (eps_s = 0).
   Backward: dx_j = y_j (dy_j - D), D = sum dy_k y_k (any order, n exact
   products: |dD| <= gsum(n) sum|dy y|); the subtraction and the product
   round: e_j = 1.01 (|y_j| (dD + u|dy_j - D|) + u|dx_j|), 0 when dD = 0.
   LOG_SOFTMAX: y_j = t_j - L, L = log s (vtrain's log, VT__DLOG_ERR relative
   on an input that differs between machines): |L - log s*| <= dL =
   1.01 eps_s + VT__DLOG_ERR |L|, e_j = 1.01 (dL + u|y_j|) (t_j is the same
   everywhere); 0 when eps_s = 0.
   Backward: dx_j = dy_j - p_j S, p_j = exp(y_j) (the same everywhere: y is
   binary32), S = sum dy (|dS| <= gsum(n) sum|dy|); q = p S and dy - q
   round: e_j = 1.01 (p_j dS + u|q| + u|dx_j|), 0 when dS = 0. */
typedef struct { vt__kern *k; int64_t R, n; double *ex; } vt__sm_job;

static void vt__softmax_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__sm_job *j = (vt__sm_job *)arg;
    vt__kern *k = j->k;
    int64_t r, i, n = j->n;
    double *ex = j->ex + (int64_t)tid * n;
    int logsm = k->t->op == VT_OP_LOG_SOFTMAX;
    for (r = lo; r < hi; r++) {
        if (!k->bwd) {
            const double *x = vt__d(k->t->src[0]) + r * n;
            double *y = k->out[0].x + r * n, *e = k->out[0].e ? k->out[0].e + r * n : NULL, eps_s, m;
            double s = vt__softmax_row(k->o, (uint64_t)r, x, n, ex, &eps_s, &m);
            if (logsm) {
                double L = VT__ACC(k->o, vt__dlog(s)), dL = 1.01 * eps_s + VT__DLOG_ERR * fabs(L);
                for (i = 0; i < n; i++) {
                    double v = (x[i] - m) - L;
                    y[i] = v;
                    if (e) e[i] = eps_s > 0 ? 1.01 * (dL + VT__U * fabs(v)) : 0;
                }
            } else {
                for (i = 0; i < n; i++) {
                    double v = ex[i] / s;
                    y[i] = v;
                    if (e) e[i] = eps_s > 0 ? 1.01 * v * (eps_s + VT__U) : 0;
                }
            }
        } else {
            const double *y = vt__d(k->t) + r * n, *dy = vt__d(k->t->grad) + r * n;
            const vt__kout *o = &k->out[0];
            if (logsm) {
                double S = vt__rsum(k->o, (uint64_t)r, dy, 1, n), mag = 0, dS;
                for (i = 0; i < n; i++) mag += fabs(dy[i]);
                dS = vt__gsum(k->o, n) * mag;
                vt__vexp(y, 0, ex, n); /* p_j = vt__dexp(y_j) */
                for (i = 0; i < n; i++) {
                    double p = ex[i], q = p * S, v = dy[i] - q;
                    vt__put(o, r * n + i, v, dS > 0 ? 1.01 * (p * dS + VT__U * fabs(q) + VT__U * fabs(v)) : 0);
                }
            } else {
                double mag = 0, D = vt__rdot(k->o, (uint64_t)r, dy, 1, y, 1, n, o->e ? &mag : NULL); /* (no bound: no magnitude) */
                double dD = vt__gsum(k->o, n) * mag;
                for (i = 0; i < n; i++) {
                    double dd = dy[i] - D, v = y[i] * dd;
                    vt__put(o, r * n + i, v, dD > 0 ? 1.01 * (fabs(y[i]) * (dD + VT__U * fabs(dd)) + VT__U * fabs(v)) : 0);
                }
            }
        }
    }
}

static void vt__k_softmax(vt__kern *k) {
    vt__sm_job j;
    vt_tensor *x = k->t->src[0];
    j.k = k;
    j.n = x->ne[x->ndim - 1];
    j.R = vt_numel(x) / (j.n ? j.n : 1);
    j.ex = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(j.n * k->c->pool.n + 1));
    if (!j.ex) return;
    vt__parallel(&k->c->pool, j.R, j.R * j.n * 8, vt__softmax_task, &j);
}

/* CROSS_ENTROPY: logits (R,V), targets (R) -> mean over rows of
   l_r = log s_r - (x_{r,t} - m_r).
   Per row (vt__softmax_row): x_t - m is the same everywhere, log s_r is
   within d(log s) = 1.01 eps_s + VT__DLOG_ERR |log s| of log s*, and the
   subtraction rounds: dl_r = d(log s) + u|l_r| (0 when eps_s = 0). The mean:
   the l_r are summed in any order (gsum(R) sum l_r, all l_r >= 0) and
   divided by R (u): e = 1.01 ((sum dl_r + gsum(R) sum l_r) / R + u|loss|),
   0 when every dl_r and gsum(R) are 0.
   Backward: dx_rj = (p_rj - [j = t_r]) c, c = g / R (the same everywhere: g
   is the binary32 loss gradient). p = ex/s has relative error eps_s + u
   against ex/s*; the difference and the product round:
   e = 1.01 (|c| (dp + u|p - oh|) + u|v|), dp = 1.01 p (eps_s + u); 0 when
   eps_s = 0. */
typedef struct { vt__kern *k; int64_t R, V; double *ex, *l, *dl; int32_t bad; int64_t badrow; } vt__ce_job;

static void vt__ce_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__ce_job *j = (vt__ce_job *)arg;
    vt__kern *k = j->k;
    int64_t r, i, V = j->V;
    double *ex = j->ex + (int64_t)tid * V;
    const double *X = vt__d(k->t->src[0]);
    const int32_t *tg = vt__i(k->t->src[1]);
    for (r = lo; r < hi; r++) {
        const double *x = X + r * V;
        int32_t t = tg[r];
        double eps_s, s, m, L;
        if (t < 0 || t >= V) { j->bad = t; j->badrow = r; continue; }
        s = vt__softmax_row(k->o, (uint64_t)r, x, V, ex, &eps_s, &m);
        L = VT__ACC(k->o, vt__dlog(s));
        if (!k->bwd) {
            double l = L - (x[t] - m);
            j->l[r] = VT__ACC(k->o, l);
            j->dl[r] = eps_s > 0 ? 1.01 * eps_s + VT__DLOG_ERR * fabs(L) + VT__U * fabs(l) : 0;
        } else {
            double g = vt__d(k->t->grad)[0], coef = g / (double)j->R;
            const vt__kout *o = &k->out[0];
            for (i = 0; i < V; i++) {
                double p = ex[i] / s, oh = (i == t) ? 1.0 : 0.0, diff = p - oh, v = diff * coef;
                double dp = 1.01 * p * (eps_s + VT__U);
                vt__put(o, r * V + i, v, eps_s > 0 ? 1.01 * (fabs(coef) * (dp + VT__U * fabs(diff)) + VT__U * fabs(v)) : 0);
            }
        }
    }
}

static void vt__k_cross_entropy(vt__kern *k) {
    vt__ce_job j;
    vt_tensor *x = k->t->src[0];
    j.k = k;
    j.V = x->ne[x->ndim - 1];
    j.R = vt_numel(x) / j.V;
    j.bad = 0; j.badrow = -1;
    j.ex = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(j.V * k->c->pool.n + 3 * j.R + 1));
    if (!j.ex) return;
    j.l = j.ex + j.V * k->c->pool.n;
    j.dl = j.l + j.R;
    vt__parallel(&k->c->pool, j.R, j.R * j.V * 8, vt__ce_task, &j);
    if (j.badrow >= 0) {
        vt__fail(k->c, VT_ERR_ARG, "cross_entropy: target %d at row %lld is outside [0, %lld)", (int)j.bad,
                 (long long)j.badrow, (long long)j.V);
        return;
    }
    if (!k->bwd) {
        double s = vt__rsum(k->o, 0, j.l, 1, j.R), sl = 0, sdl = 0, loss;
        int64_t r;
        for (r = 0; r < j.R; r++) { sl += j.l[r]; sdl += j.dl[r]; }
        loss = s / (double)j.R;
        k->out[0].x[0] = loss;
        if (k->out[0].e) {
            double gs = vt__gsum(k->o, j.R);
            k->out[0].e[0] = sdl > 0 || gs > 0 ? 1.01 * ((sdl + gs * sl) / (double)j.R + VT__U * fabs(loss)) : 0;
        }
    }
}

/* MSE: mean of (a - b)^2 over n elements. a - b and its square are the
   same everywhere; their sum in any order is within gsum(n) sum d^2 of
   the exact sum, and the division rounds: e = 1.01 (gsum(n) sum d^2 / n +
   u|loss|), 0 when n <= 2 (the same sum everywhere).
   Backward: da = (2g/n)(a - b), db = -da: plain arithmetic on binary32
   inputs, e = 0. */
static void vt__k_mse(vt__kern *k) {
    vt_tensor *t = k->t, *a = t->src[0], *b = t->src[1];
    const double *A = vt__d(a), *B = vt__d(b);
    int64_t i, n = vt_numel(a);
    if (!k->bwd) {
        double *d = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(n + 1)), s, mag = 0, loss;
        if (!d) return;
        for (i = 0; i < n; i++) { double di = A[i] - B[i]; d[i] = VT__ACC(k->o, di * di); mag += d[i]; }
        s = vt__rsum(k->o, 0, d, 1, n);
        loss = s / (double)n;
        k->out[0].x[0] = loss;
        if (k->out[0].e) k->out[0].e[0] = n > 2 ? 1.01 * (vt__gsum(k->o, n) * mag / (double)n + VT__U * fabs(loss)) : 0;
    } else {
        double g = vt__d(t->grad)[0], coef = 2 * g / (double)n;
        for (i = 0; i < n; i++) {
            double v = coef * (A[i] - B[i]), ev = 0;
            if (k->out[0].x) vt__put(&k->out[0], i, v, ev);
            if (k->out[1].x) vt__put(&k->out[1], i, -v, ev);
        }
    }
}

/* --- layernorm ---------------------------------------------------------------- */

/* LAYERNORM over rows of C: y = (x - mu) rstd w + b.
   mu = sum x / C: dmu = gamma(C+1) sum|x| / C.
   d_i = x_i - mu_c rounds: |d_i - (x_i - mu)| <= dmu + u|d_i|.
   var = sum d_i^2 / C: the exact-mean identity sum (x - mu_c)^2 =
   sum (x - mu)^2 + C (mu - mu_c)^2 leaves dmu^2; rounding of d_i, the squares,
   the sum and the division give gamma(C+4) var: dvar = gamma(C+4) var + dmu^2.
   rstd = 1/sqrt(var + eps): v = var + eps rounds (u v), sqrt and the
   division round (2u): relative error rho = 1.01 ((dvar + u v) / (2v) + 2u).
   xhat_i = d_i rstd: dxhat_i = (dmu + u|d_i|) rstd + |d_i| rstd rho + u|xhat_i|.
   y_i = xhat_i w_i + b_i (two roundings):
   e_i = 1.01 (|w_i| dxhat_i + u|xhat_i w_i| + u|y_i|). */
typedef struct { double mu, dmu, rstd, rho, var, dvar; } vt__ln_stats;

/* sum |x| of each of n rows (n <= 8, row q at x + q C), each added in
   element order as one row's loop adds it: the same sums. One row's chain
   of additions waits on each add's latency; eight rows' chains side by side
   keep the adders busy (layernorm's rows are a few dozen to a few hundred
   wide, and the sum was most of the forward's cost beyond fp64's) */
static void vt__abs_sums(const double *x, int64_t C, int n, double *mag) {
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i;
    int q;
    if (n == 8)
        for (i = 0; i < C; i++)
            for (q = 0; q < 8; q++) s[q] += fabs(x[q * C + i]);
    else
        for (q = 0; q < n; q++)
            for (i = 0; i < C; i++) s[q] += fabs(x[q * C + i]);
    for (q = 0; q < n; q++) mag[q] = s[q];
}

/* (bnd 0: no bound will be computed from it, and dmu is left 0; magp: sum
   |x| from vt__abs_sums, or NULL to add it here) */
static vt__ln_stats vt__ln_row(const vt__ord *o, uint64_t key, const double *x, int64_t C, double eps, double *d, int bnd,
                               const double *magp) {
    vt__ln_stats s;
    int64_t i;
    double mag = 0, var, dvar, v;
    if (bnd && magp)
        mag = *magp;
    else if (bnd)
        vt__abs_sums(x, C, 1, &mag);
    s.mu = VT__ACC(o, vt__rsum(o, key, x, 1, C) / (double)C);
    s.dmu = vt__g(o, C + 1) * mag / (double)C;
    for (i = 0; i < C; i++) d[i] = VT__ACC(o, x[i] - s.mu);
    var = VT__ACC(o, vt__rdot(o, key ^ 0x5555, d, 1, d, 1, C, NULL) / (double)C);
    dvar = vt__g(o, C + 4) * var + s.dmu * s.dmu;
    v = var + eps;
    s.rstd = VT__ACC(o, 1.0 / sqrt(v));
    s.rho = 1.01 * ((dvar + VT__U * v) / (2 * v) + 2 * VT__U);
    s.var = var;
    s.dvar = dvar;
    return s;
}

static double vt__ln_dxhat(const vt__ln_stats *s, double d, double xhat) {
    return (s->dmu + VT__U * fabs(d)) * s->rstd + fabs(d) * s->rstd * s->rho + VT__U * fabs(xhat);
}

/* Backward (x, w, dy are T values; mu, d, rstd, xhat are recomputed with the
   bounds above):
   dn_i = dy_i w_i (u); mean1 = sum dn / C: dm1 = gamma(C+2) sum|dn| / C;
   mean2 = sum dn_i xhat_i / C: dm2 = (sum |dn_i| dxhat_i + gamma(C+2)
   sum|dn_i xhat_i|) / C + u|mean2|;
   inner_i = dn_i - mean1 - xhat_i mean2: di = u|dn_i| + dm1 + |xhat_i| dm2 +
   |mean2| dxhat_i + 3u (|dn_i| + |mean1| + |xhat_i mean2|);
   dx_i = rstd inner_i: e = 1.01 (rstd di + |inner_i| rstd rho + u|dx_i|).
   dw_j = sum_rows dy xhat, db_j = sum_rows dy, rows in chunks summed in order:
   G = gamma(chunk) + gamma(nch+1)(1 + gamma(chunk));
   e(dw_j) = 1.01 (sum |dy| dxhat + (G + u)(sum|dy xhat| + |old|)),
   e(db_j) = G (sum|dy| + |old|). */
typedef struct {
    vt__kern *k; int64_t R, C, chunk, nch; double eps; double *scr, *pw, *pb, *mw, *mb;
    int fuse; vt__rjob rj; double wmax; /* forward: A LAYERNORM ROW (rj its rule), wmax = max |w| */
    int bnd;                            /* an output has bounds (fp64 and native: none) */
    vt__ln_stats *keep;                 /* the rows' statistics: the forward writes them, the backward reads them */
    int kept;                           /* ... the backward: they are there (and have dmu where it needs it) */
} vt__ln_job;
/* KEPT ROW STATISTICS: the primary forward run keeps each row's statistics
   (t->extra, the step arena; bnd: with dmu), and the backward in the same
   order reads them instead of adding the row's mean, |x| and variance again:
   the same operations in the same order gave them, so the same values; d is
   x - mu again, one subtraction a value. A backward without them (a
   calibration's rerun in another order, or a forward without dmu under a
   backward with bounds) computes them as the forward did. */
typedef struct { int bnd; vt__ln_stats s[1]; } vt__ln_kept;
static VT__UNUSED int vt__ln_no_keep;     /* tests: every backward computes its rows' statistics again */
static VT__UNUSED int64_t vt__ln_kept_rows; /* tests: rows whose backward read the forward's statistics */

/* A LAYERNORM ROW (CPU backend; the trainer in verified mode, or the cast or
   fp64's check in the other modes): the forward rounds each row of y as soon
   as it has written it, by A LAZY CAUSAL ROW's filter, and writes no bound
   (the point makes no pass: vt__fuse_block_begin). A row's element bound
   e_i = 1.01 (|w_i| dxhat_i + u |y w_i| + u |y_i|) is computed as the
   written path computes it; dxhat is monotone in |d| and |xhat| and every
   operation of e is a correctly rounded sum or product of nonnegative
   values, so the row's maxima of |w|, |d|, |xhat| and |xhat w| give a T >= the
   first two terms of every element's, and W + c |y| with W = 1.01 T ef2,
   c = 1.01 u ef2 + 2^-50 (each times 1 + 2^-30, for the few roundings of
   e, W and the filter's own, at most 8 u) is at least e_i ef2 + |y_i|
   2^-50: the width the filter asks for. */
static void vt__block_cast(const vt__rjob *rj, vt__ents *t, double *X, int64_t ld, int64_t b0, int64_t M, int64_t N);
typedef struct { const vt__ord *o; const vt__ln_stats *s; const double *d, *w; } vt__ln_bnd;
static double vt__ln_fwd_e(const vt__ln_stats *s, double d, double xhat, double w, double yw, double v) {
    return 1.01 * (fabs(w) * vt__ln_dxhat(s, d, xhat) + VT__U * fabs(yw) + VT__U * fabs(v));
}
/* y = xhat w + b for a row (xhat = d rstd, binary32 in native mode), as the
   written path's loop computes each element, four at a time; m (or NULL):
   the row's maxima of |d|, |xhat| and |xhat w| (a NaN left out: its y is
   NaN, and the filter looks at it) */
static void vt__ln_fwd_row(const vt__ord *o, const double *d, double rstd, const double *W, const double *Bb, double *y, int64_t C,
                           double *m) {
    int64_t i = 0;
    double dm = 0, xm = 0, ym = 0;
#ifdef VT__AVX2
    const __m256d rv = _mm256_set1_pd(rstd), sign = _mm256_set1_pd(-0.0);
    __m256d md = _mm256_setzero_pd(), mx = md, my = md;
    double t[12];
    for (; i + 4 <= C; i += 4) {
        __m256d dv = _mm256_loadu_pd(d + i), xh = _mm256_mul_pd(dv, rv), yw;
        if (o->f32) xh = _mm256_cvtps_pd(_mm256_cvtpd_ps(xh));
        yw = _mm256_mul_pd(xh, _mm256_loadu_pd(W + i));
        _mm256_storeu_pd(y + i, _mm256_add_pd(yw, _mm256_loadu_pd(Bb + i)));
        md = _mm256_max_pd(_mm256_andnot_pd(sign, dv), md);
        mx = _mm256_max_pd(_mm256_andnot_pd(sign, xh), mx);
        my = _mm256_max_pd(_mm256_andnot_pd(sign, yw), my);
    }
    if (m) {
        int q;
        _mm256_storeu_pd(t, md); _mm256_storeu_pd(t + 4, mx); _mm256_storeu_pd(t + 8, my);
        for (q = 0; q < 4; q++) {
            dm = VT__MAX(dm, t[q]); xm = VT__MAX(xm, t[4 + q]); ym = VT__MAX(ym, t[8 + q]);
        }
    }
#endif
    for (; i < C; i++) {
        double xhat = VT__ACC(o, d[i] * rstd), yw = xhat * W[i], a = fabs(d[i]), b = fabs(xhat), c = fabs(yw);
        y[i] = yw + Bb[i];
        dm = a > dm ? a : dm;
        xm = b > xm ? b : xm;
        ym = c > ym ? c : ym;
    }
    if (m) { m[0] = dm; m[1] = xm; m[2] = ym; }
}
static double vt__ln_fwd_bnd(const void *arg, int64_t i, double x) {
    const vt__ln_bnd *b = (const vt__ln_bnd *)arg;
    double xhat = VT__ACC(b->o, b->d[i] * b->s->rstd);
    return vt__ln_fwd_e(b->s, b->d[i], xhat, b->w[i], xhat * b->w[i], x);
}

/* the backward's per-element terms of a row: xh = d rstd, dn = dy w (each
   binary32 in native mode) and dxhat (vt__ln_dxhat), four at a time by the
   scalar expressions' operations in their order (-ffp-contract=off: no
   fused multiply-add in either): the same values; and the magnitudes
   mag[0..2] = sum |dn|, sum |dn xh|, sum |dn| dxhat, each term formed four
   at a time and added one after another in element order, as one scalar
   loop added them: the same sums */
static void vt__ln_bwd_terms(const vt__ord *o, const vt__ln_stats *s, const double *d, const double *dy, const double *W,
                             double *xh, double *dn, double *dxh, int64_t C, double *mag) {
    int64_t i = 0;
    double m1 = 0, m2 = 0, mx = 0;
#ifdef VT__AVX2
    const __m256d rv = _mm256_set1_pd(s->rstd), sign = _mm256_set1_pd(-0.0), u = _mm256_set1_pd(VT__U);
    const __m256d dmu = _mm256_set1_pd(s->dmu), rho = _mm256_set1_pd(s->rho);
    for (; i + 4 <= C; i += 4) {
        __m256d dv = _mm256_loadu_pd(d + i), ad = _mm256_andnot_pd(sign, dv);
        __m256d x = _mm256_mul_pd(dv, rv), n = _mm256_mul_pd(_mm256_loadu_pd(dy + i), _mm256_loadu_pd(W + i));
        if (o->f32) {
            x = _mm256_cvtps_pd(_mm256_cvtpd_ps(x));
            n = _mm256_cvtps_pd(_mm256_cvtpd_ps(n));
        }
        __m256d dx = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(_mm256_add_pd(dmu, _mm256_mul_pd(u, ad)), rv),
                                                 _mm256_mul_pd(_mm256_mul_pd(ad, rv), rho)),
                                   _mm256_mul_pd(u, _mm256_andnot_pd(sign, x)));
        __m256d an = _mm256_andnot_pd(sign, n);
        double t[12];
        int q;
        _mm256_storeu_pd(xh + i, x);
        _mm256_storeu_pd(dn + i, n);
        _mm256_storeu_pd(dxh + i, dx);
        _mm256_storeu_pd(t, an);
        _mm256_storeu_pd(t + 4, _mm256_andnot_pd(sign, _mm256_mul_pd(n, x)));
        _mm256_storeu_pd(t + 8, _mm256_mul_pd(an, dx));
        for (q = 0; q < 4; q++) { m1 += t[q]; m2 += t[4 + q]; mx += t[8 + q]; }
    }
#endif
    for (; i < C; i++) {
        xh[i] = VT__ACC(o, d[i] * s->rstd);
        dn[i] = VT__ACC(o, dy[i] * W[i]);
        dxh[i] = vt__ln_dxhat(s, d[i], xh[i]);
        m1 += fabs(dn[i]);
        m2 += fabs(dn[i] * xh[i]);
        mx += fabs(dn[i]) * dxh[i];
    }
    mag[0] = m1; mag[1] = m2; mag[2] = mx;
}
/* dx of a row with its bound, into o from element b0 (vt__put's add onto an
   old value, and the bound's term for it, where o is added to), four at a
   time by the scalar expressions' operations in their order */
typedef struct { double m1, m2, dm1, dm2, rstd, rho; } vt__ln_dx;
/* dx's value v = rstd inner, inner = dn - m1 - xh m2 (the vector forms below: the same operations) */
static double vt__ln_dx_v(const vt__ln_dx *l, double dn, double xh, double *inner) {
    *inner = dn - l->m1 - xh * l->m2;
    return l->rstd * *inner;
}
static double vt__ln_dx_e(const vt__ln_dx *l, double dn, double xh, double dxh, double inner, double v) {
    double di = VT__U * fabs(dn) + l->dm1 + fabs(xh) * l->dm2 + fabs(l->m2) * dxh + 3 * VT__U * (fabs(dn) + fabs(l->m1) + fabs(xh * l->m2));
    return 1.01 * (l->rstd * di + fabs(inner) * l->rstd * l->rho + VT__U * fabs(v));
}
static void vt__ln_bwd_dx(const vt__kout *o, int64_t b0, const vt__ln_dx *l, const double *xh, const double *dn, const double *dxh,
                          int64_t C) {
    int64_t i = 0;
#ifdef VT__AVX2
    const __m256d sign = _mm256_set1_pd(-0.0), u = _mm256_set1_pd(VT__U), u3 = _mm256_set1_pd(3 * VT__U);
    const __m256d m1 = _mm256_set1_pd(l->m1), m2 = _mm256_set1_pd(l->m2), dm1 = _mm256_set1_pd(l->dm1), dm2 = _mm256_set1_pd(l->dm2);
    const __m256d am1 = _mm256_set1_pd(fabs(l->m1)), am2 = _mm256_set1_pd(fabs(l->m2)), rv = _mm256_set1_pd(l->rstd);
    const __m256d rho = _mm256_set1_pd(l->rho), c101 = _mm256_set1_pd(1.01), zero = _mm256_setzero_pd();
    for (; i + 4 <= C; i += 4) {
        __m256d n = _mm256_loadu_pd(dn + i), x = _mm256_loadu_pd(xh + i), an = _mm256_andnot_pd(sign, n), ax = _mm256_andnot_pd(sign, x);
        __m256d inner = _mm256_sub_pd(_mm256_sub_pd(n, m1), _mm256_mul_pd(x, m2)), v = _mm256_mul_pd(rv, inner), di, e;
        di = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(u, an), dm1), _mm256_mul_pd(ax, dm2)),
                           _mm256_mul_pd(am2, _mm256_loadu_pd(dxh + i)));
        di = _mm256_add_pd(di, _mm256_mul_pd(u3, _mm256_add_pd(_mm256_add_pd(an, am1), _mm256_andnot_pd(sign, _mm256_mul_pd(x, m2)))));
        e = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(rv, di), _mm256_mul_pd(_mm256_mul_pd(_mm256_andnot_pd(sign, inner), rv), rho)),
                          _mm256_mul_pd(u, _mm256_andnot_pd(sign, v)));
        e = _mm256_mul_pd(c101, e);
        if (o->acc) { /* vt__put: s = old + v, and ev + u |s| where ev > 0 */
            __m256d sm = _mm256_add_pd(_mm256_loadu_pd(o->x + b0 + i), v);
            e = _mm256_blendv_pd(e, _mm256_add_pd(e, _mm256_mul_pd(u, _mm256_andnot_pd(sign, sm))), _mm256_cmp_pd(e, zero, _CMP_GT_OQ));
            v = sm;
        }
        _mm256_storeu_pd(o->x + b0 + i, v);
        if (o->e) _mm256_storeu_pd(o->e + b0 + i, e);
    }
#endif
    for (; i < C; i++) {
        double inner, v = vt__ln_dx_v(l, dn[i], xh[i], &inner);
        vt__put(o, b0 + i, v, vt__ln_dx_e(l, dn[i], xh[i], dxh[i], inner, v));
    }
}

/* A LAYERNORM BACKWARD ROW (the CPU's verified trainer): a row of dx, added
   to old values or not, is rounded by A LAZY CAUSAL ROW's filter as soon as
   it is written, with no bound written (it was a second array as large as
   dx, and a pass of its own at the point). The width: every operation of
   vt__ln_dx_e is a correctly rounded sum or product of nonnegative values,
   so di, written in its order with the row's maxima Dn, Xh, Dx of |dn|,
   |xh| and dxhat for each element's, is at least every element's di.
   |inner| rstd, computed, is |v| (v = rstd inner: the same product), so
   e_v <= 1.01 (rstd Dmax + (rho + u) |v|) (1 + u)^4. Where dx is added to
   old values (vt__put): s = old + v rounds, so |v| <= |s| / (1 - u) + Om
   with Om the row's max |old|, and e = e_v + u |s|. So
   W = 1.01 (rstd Dmax + (rho + u) Om) ef2 and c = 1.01 (rho + 2u) ef2 +
   2^-50, each times 1 + 2^-30 (the few roundings of e, of W and c, and
   the filter's own: at most 10 u), give W + c |x| >= e ef2 + |x| 2^-50 for
   every element x (v, or s) of the row: the width the filter asks for. A
   NaN among the maxima asks everywhere; the elements it looks at get their
   own e (vt__ln_bwd_e: what vt__ln_bwd_dx writes, vt__put's term with it). */
typedef struct { const vt__ln_dx *l; const double *xh, *dn, *dxh; int acc; } vt__ln_bbnd;
static double vt__ln_bwd_e(const void *arg, int64_t i, double x) {
    const vt__ln_bbnd *b = (const vt__ln_bbnd *)arg;
    const vt__ln_dx *l = b->l;
    double inner, v = vt__ln_dx_v(l, b->dn[i], b->xh[i], &inner), e = vt__ln_dx_e(l, b->dn[i], b->xh[i], b->dxh[i], inner, v);
    if (b->acc && e > 0) e += VT__U * fabs(x); /* (x is s = old + v) */
    return e;
}
/* vt__ln_bwd_dx's values alone, by the same operations (o->e unused), and
   the largest |old| of the values added to (NaN if one is; 0 if none) */
static double vt__ln_bwd_vals(const vt__kout *o, int64_t b0, const vt__ln_dx *l, const double *xh, const double *dn, int64_t C) {
    int64_t i = 0;
    double om = 0;
    int nan = 0;
#ifdef VT__AVX2
    const __m256d sign = _mm256_set1_pd(-0.0), m1 = _mm256_set1_pd(l->m1), m2 = _mm256_set1_pd(l->m2), rv = _mm256_set1_pd(l->rstd);
    __m256d mo = _mm256_setzero_pd(), bad = mo;
    double t[4];
    for (; i + 4 <= C; i += 4) {
        __m256d inner = _mm256_sub_pd(_mm256_sub_pd(_mm256_loadu_pd(dn + i), m1), _mm256_mul_pd(_mm256_loadu_pd(xh + i), m2));
        __m256d v = _mm256_mul_pd(rv, inner);
        if (o->acc) {
            __m256d old = _mm256_loadu_pd(o->x + b0 + i);
            mo = _mm256_max_pd(_mm256_andnot_pd(sign, old), mo);
            bad = _mm256_or_pd(bad, _mm256_cmp_pd(old, old, _CMP_UNORD_Q));
            v = _mm256_add_pd(old, v);
        }
        _mm256_storeu_pd(o->x + b0 + i, v);
    }
    _mm256_storeu_pd(t, mo);
    om = VT__MAX(VT__MAX(t[0], t[1]), VT__MAX(t[2], t[3]));
    nan = _mm256_movemask_pd(bad) != 0;
#endif
    for (; i < C; i++) {
        double inner, v = vt__ln_dx_v(l, dn[i], xh[i], &inner);
        if (o->acc) {
            double old = o->x[b0 + i];
            om = fabs(old) > om ? fabs(old) : om;
            nan |= old != old;
            v = old + v;
        }
        o->x[b0 + i] = v;
    }
    return nan ? NAN : om;
}
/* the row's width (W, c) as above; om: max |old| (0 where not added to) */
static void vt__ln_bwd_width(const vt__ln_dx *l, const double *xh, const double *dn, const double *dxh, int64_t C, double om,
                             double ef2, double *W, double *c) {
    double Dn = 0, Xh = 0, Dx = 0, di;
    int64_t i = 0;
    int nan = om != om;
#ifdef VT__AVX2
    {   /* the maxima four at a time (a NaN left out of them, and noted) */
        const __m256d sign = _mm256_set1_pd(-0.0);
        __m256d mn = _mm256_setzero_pd(), mx = mn, md = mn, bad = mn;
        double t[12];
        int q;
        for (; i + 4 <= C; i += 4) {
            __m256d a = _mm256_loadu_pd(dn + i), b = _mm256_loadu_pd(xh + i), x = _mm256_loadu_pd(dxh + i);
            mn = _mm256_max_pd(_mm256_andnot_pd(sign, a), mn);
            mx = _mm256_max_pd(_mm256_andnot_pd(sign, b), mx);
            md = _mm256_max_pd(x, md);
            bad = _mm256_or_pd(bad, _mm256_or_pd(_mm256_cmp_pd(a, b, _CMP_UNORD_Q), _mm256_cmp_pd(x, x, _CMP_UNORD_Q)));
        }
        _mm256_storeu_pd(t, mn); _mm256_storeu_pd(t + 4, mx); _mm256_storeu_pd(t + 8, md);
        for (q = 0; q < 4; q++) { Dn = VT__MAX(Dn, t[q]); Xh = VT__MAX(Xh, t[4 + q]); Dx = VT__MAX(Dx, t[8 + q]); }
        nan |= _mm256_movemask_pd(bad) != 0;
    }
#endif
    for (; i < C; i++) {
        double a = fabs(dn[i]), b = fabs(xh[i]), x = dxh[i];
        Dn = a > Dn ? a : Dn;
        Xh = b > Xh ? b : Xh;
        Dx = x > Dx ? x : Dx;
        nan |= a != a || b != b || x != x;
    }
    di = VT__U * Dn + l->dm1 + Xh * l->dm2 + fabs(l->m2) * Dx + 3 * VT__U * (Dn + fabs(l->m1) + Xh * fabs(l->m2)); /* vt__ln_dx_e's */
    *W = nan ? NAN : 1.01 * (l->rstd * di + (l->rho + VT__U) * om) * ef2 * (1 + 0x1p-30);
    *c = (1.01 * (l->rho + 2 * VT__U) * ef2 + 0x1p-50) * (1 + 0x1p-30);
}

static void vt__ln_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__ln_job *j = (vt__ln_job *)arg;
    vt__kern *k = j->k;
    int64_t C = j->C, r, i;
    double *d = j->scr + (int64_t)tid * 4 * C, *xh = d + C, *dn = xh + C, *dxh = dn + C;
    const double *X = vt__d(k->t->src[0]), *W = vt__d(k->t->src[1]), *Bb = vt__d(k->t->src[2]);
    double mags[8];
    for (r = lo; r < hi; r++) {
        const double *x = X + r * C;
        vt__ln_stats s;
        if (j->kept) { /* the forward's */
            s = j->keep[r];
            for (i = 0; i < C; i++) d[i] = VT__ACC(k->o, x[i] - s.mu);
        } else {
            if (j->bnd && (r - lo) % 8 == 0) vt__abs_sums(x, C, (int)VT__MIN(8, hi - r), mags); /* the next eight rows' sum |x| */
            s = vt__ln_row(k->o, (uint64_t)r, x, C, j->eps, d, j->bnd, j->bnd ? mags + (r - lo) % 8 : NULL);
            if (j->keep) j->keep[r] = s;
        }
        if (!k->bwd && j->fuse) { /* A LAYERNORM ROW */
            double *y = k->out[0].x + r * C, m[3], ef2 = 2 * j->rj.ef * VT__SAFE, T;
            vt__ln_bnd bd;
            vt__ln_fwd_row(k->o, d, s.rstd, W, Bb, y, C, j->rj.cast ? NULL : m);
            if (j->rj.cast) {
                vt__block_cast(&j->rj, &k->c->tents[tid], y, C, r * C, 1, C);
                continue;
            }
            T = j->wmax * vt__ln_dxhat(&s, m[0], m[1]) + VT__U * m[2];
            bd.o = k->o; bd.s = &s; bd.d = d; bd.w = W;
            vt__fuse_row_lazy(&j->rj, &k->c->tents[tid], y, C, r * C, 1.01 * T * ef2 * (1 + 0x1p-30),
                              (1.01 * VT__U * ef2 + 0x1p-50) * (1 + 0x1p-30), vt__ln_fwd_bnd, &bd);
        } else if (!k->bwd) {
            double *y = k->out[0].x + r * C, *e = k->out[0].e ? k->out[0].e + r * C : NULL;
            for (i = 0; i < C; i++) {
                double xhat = VT__ACC(k->o, d[i] * s.rstd), yw = xhat * W[i], v = yw + Bb[i];
                y[i] = v;
                if (e) e[i] = vt__ln_fwd_e(&s, d[i], xhat, W[i], yw, v);
            }
        } else {
            const double *dy = vt__d(k->t->grad) + r * C;
            double m1, m2, mag1 = 0, mag2 = 0, magx = 0, dm1, dm2;
            int bnd = j->bnd; /* (fp64, native: no bound is computed) */
            if (!bnd)
                for (i = 0; i < C; i++) {
                    xh[i] = VT__ACC(k->o, d[i] * s.rstd);
                    dn[i] = VT__ACC(k->o, dy[i] * W[i]);
                }
            else {
                double mg[3];
                vt__ln_bwd_terms(k->o, &s, d, dy, W, xh, dn, dxh, C, mg); /* xh, dn, dxhat and the sums in order */
                mag1 = mg[0]; mag2 = mg[1]; magx = mg[2];
            }
            m1 = VT__ACC(k->o, vt__rsum(k->o, (uint64_t)r, dn, 1, C) / (double)C);
            m2 = VT__ACC(k->o, vt__rdot(k->o, (uint64_t)r ^ 0xAAAA, dn, 1, xh, 1, C, NULL) / (double)C);
            dm1 = vt__g(k->o, C + 2) * mag1 / (double)C;
            dm2 = (magx + vt__g(k->o, C + 2) * mag2) / (double)C + VT__U * fabs(m2);
            if (k->out[0].x && !k->out[0].e) /* (apart, so that without bounds none is computed) */
                for (i = 0; i < C; i++) vt__put(&k->out[0], r * C + i, s.rstd * (dn[i] - m1 - xh[i] * m2), 0);
            else if (k->out[0].x && j->fuse) { /* A LAYERNORM BACKWARD ROW: the values, then the row's rule */
                vt__ln_dx ld;
                vt__ln_bbnd bb;
                double om, W, cw;
                ld.m1 = m1; ld.m2 = m2; ld.dm1 = dm1; ld.dm2 = dm2; ld.rstd = s.rstd; ld.rho = s.rho;
                om = vt__ln_bwd_vals(&k->out[0], r * C, &ld, xh, dn, C); /* the values, and max |old| */
                vt__ln_bwd_width(&ld, xh, dn, dxh, C, om, 2 * j->rj.ef * VT__SAFE, &W, &cw);
                bb.l = &ld; bb.xh = xh; bb.dn = dn; bb.dxh = dxh; bb.acc = k->out[0].acc;
                vt__fuse_row_lazy(&j->rj, &k->c->tents[tid], k->out[0].x + r * C, C, r * C, W, cw, vt__ln_bwd_e, &bb);
            } else if (k->out[0].x) {
                vt__ln_dx ld;
                ld.m1 = m1; ld.m2 = m2; ld.dm1 = dm1; ld.dm2 = dm2; ld.rstd = s.rstd; ld.rho = s.rho;
                vt__ln_bwd_dx(&k->out[0], r * C, &ld, xh, dn, dxh, C);
            }
            /* store per-row xhat (and its bound) for the column sums */
            if (k->out[1].x || k->out[2].x) {
                double *XH = j->pw + r * C, *DX = j->mw + r * C;
                for (i = 0; i < C; i++) XH[i] = VT__ACC(k->o, dy[i] * xh[i]);
                if (k->out[1].e)
                    for (i = 0; i < C; i++) DX[i] = fabs(dy[i]) * dxh[i];
            }
        }
    }
}

/* columns [32 lo, 32 hi) of dw's propagated xhat error and magnitude: each
   column summed over the rows in row order, as one loop did (32 columns,
   four cache lines of every row, to a task: tasks of eight read one line
   a row, rows 1 KiB apart at width 128, and took 3.5 times as long on two
   threads as on one) */
typedef struct { const vt__ln_job *j; double *extra, *magp; } vt__lnx_job;
static void vt__ln_extra_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__lnx_job *x = (const vt__lnx_job *)arg;
    const vt__ln_job *j = x->j;
    int64_t r, c, c0, w;
    double e[32], m[32]; /* the sums in the task's own memory: threads that add into neighbouring
                            columns of extra and magp would share their cache lines on every row */
    (void)tid;
    lo *= 32;
    hi = VT__MIN(32 * hi, j->C);
    for (c0 = lo; c0 < hi; c0 += 32) {
        w = VT__MIN(32, hi - c0);
        for (c = 0; c < w; c++) e[c] = m[c] = 0;
        for (r = 0; r < j->R; r++) {
            const double *mw = j->mw + r * j->C + c0, *pw = j->pw + r * j->C + c0;
            for (c = 0; c < w; c++) { e[c] += mw[c]; m[c] += fabs(pw[c]); }
        }
        for (c = 0; c < w; c++) { x->extra[c0 + c] = e[c]; x->magp[c0 + c] = m[c]; }
    }
}

static void vt__k_layernorm(vt__kern *k) {
    vt__ln_job j;
    vt_tensor *x = k->t->src[0];
    j.k = k;
    j.C = x->ne[x->ndim - 1];
    j.R = vt_numel(x) / j.C;
    j.eps = k->t->fparam[0];
    j.scr = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(4 * j.C * k->c->pool.n));
    if (!j.scr) return;
    j.pw = j.mw = NULL;
    j.fuse = 0;
    j.bnd = k->out[0].e || k->out[1].e || k->out[2].e;
    j.keep = NULL;
    j.kept = 0;
    if (k->o == &k->c->ord) { /* KEPT ROW STATISTICS */
        vt__ln_kept *kp = (vt__ln_kept *)k->t->extra;
        if (!k->bwd) {
            kp = (vt__ln_kept *)vt__arena_alloc(&k->c->step, sizeof(vt__ln_kept) + sizeof(vt__ln_stats) * (size_t)j.R);
            k->t->extra = kp;
            if (kp) { kp->bnd = j.bnd; j.keep = kp->s; }
        } else if (kp && (kp->bnd || !j.bnd) && !vt__ln_no_keep) {
            j.keep = kp->s;
            j.kept = 1;
#if VT__SPIN
            VT__ADD(&vt__ln_kept_rows, j.R);
#else
            vt__ln_kept_rows += j.R;
#endif
        }
    }
    if (!k->bwd && !(vt__no_lazy && k->out[0].e)) /* A LAYERNORM ROW (vt__no_lazy: the written bounds and the pass) */
        j.fuse = k->out[0].fused = vt__fuse_block_begin(k->c, &k->out[0], &j.rj, k->c->tents, 0);
    else if (k->bwd && k->out[0].x && k->out[0].e && !vt__no_lazy) /* A LAYERNORM BACKWARD ROW (added to or not) */
        j.fuse = k->out[0].fused = vt__fuse_block_begin(k->c, &k->out[0], &j.rj, k->c->tents, 1);
    if (j.fuse) {
        const double *W = vt__d(k->t->src[1]);
        int64_t i;
        j.wmax = 0; /* (a NaN w_i is left out: y_i is NaN, and the filter looks at it) */
        for (i = 0; i < j.C; i++) j.wmax = fabs(W[i]) > j.wmax ? fabs(W[i]) : j.wmax;
    }
    if (k->bwd && (k->out[1].x || k->out[2].x)) {
        j.pw = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(2 * j.R * j.C));
        if (!j.pw) return;
        j.mw = j.pw + j.R * j.C;
    }
    vt__parallel(&k->c->pool, j.R, j.R * j.C * 12, vt__ln_task, &j);
    if (k->bwd && (k->out[1].x || k->out[2].x)) {
        int64_t ch = vt__row_chunk(k, x, j.R), c;
        const double *dy = vt__d(k->t->grad);
        if (k->out[1].x) {
            /* dw: column sums of dy*xhat; then add the propagated xhat error */
            double *extra = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(2 * j.C)), *magp;
            if (!extra) return;
            magp = extra + j.C;
            if (k->out[1].e) { /* (the propagated error: a bound's only) */
                vt__lnx_job xj;
                xj.j = &j; xj.extra = extra; xj.magp = magp;
                vt__parallel(&k->c->pool, (j.C + 31) / 32, 2 * j.R * j.C, vt__ln_extra_task, &xj);
            }
            vt__colsum(k, &k->out[1], j.pw, j.R, j.C, ch, 53);
            if (k->out[1].e)
                for (c = 0; c < j.C; c++) k->out[1].e[c] = 1.01 * (extra[c] + k->out[1].e[c] + VT__U * magp[c]);
        }
        if (k->out[2].x) vt__colsum(k, &k->out[2], dy, j.R, j.C, ch, 24);
    }
}

/* --- embedding ---------------------------------------------------------------- */

/* EMBEDDING: table (V,C), idx (...) -> (..., C): a copy, exact.
   Backward: dtable[v] = (old) + sum over positions p with idx[p] = v of
   dout[p], positions in index order (rotated under chaos):
   e = gsum(count_v + [old]) (sum|dout| + |old|) (0 when exact, vt__sum_bound);
   rows never indexed keep their value (0 when written). The forward's rows
   and the backward's table rows run on the pool (each row on its own). */
typedef struct { vt__kern *k; const int32_t *I; const double *dy; const int64_t *cnt, *list; double *scr; int64_t C; } vt__emb_job;
static void vt__emb_fwd_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__emb_job *j = (const vt__emb_job *)arg;
    const double *tab = vt__d(j->k->t->src[0]);
    int64_t p;
    (void)tid;
    for (p = lo; p < hi; p++) memcpy(j->k->out[0].x + p * j->C, tab + (int64_t)j->I[p] * j->C, sizeof(double) * (size_t)j->C);
}
static void vt__emb_bwd_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__emb_job *j = (const vt__emb_job *)arg;
    const vt__kern *k = j->k;
    const vt__kout *o = &k->out[0];
    int64_t C = j->C, v, c;
    double *acc = j->scr + (int64_t)tid * 3 * C, *mag = acc + C;
    int *ls = (int *)(mag + C);
    for (v = lo; v < hi; v++) {
        int64_t n = j->cnt[v + 1] - j->cnt[v], q, rot = 0;
        if (!n) continue;
        if (k->o->chaos) rot = (int64_t)(vt__ckey(k->o, (uint64_t)v) % (uint64_t)n);
        for (c = 0; c < C; c++) { acc[c] = o->acc ? o->x[v * C + c] : 0; mag[c] = fabs(acc[c]); ls[c] = vt__lsb(acc[c]); }
        for (q = 0; q < n; q++) {
            const double *row = j->dy + j->list[j->cnt[v] + (q + rot) % n] * C;
            for (c = 0; c < C; c++) {
                acc[c] = VT__ACC(k->o, acc[c] + row[c]);
                mag[c] += fabs(row[c]);
                ls[c] = VT__MIN(ls[c], vt__lsb(row[c]));
            }
        }
        for (c = 0; c < C; c++) {
            o->x[v * C + c] = acc[c];
            if (o->e) o->e[v * C + c] = vt__sum_bound(k->o, n + (o->acc ? 1 : 0), mag[c], ls[c]);
        }
    }
}
static void vt__k_embedding(vt__kern *k) {
    vt_tensor *t = k->t, *tab = t->src[0], *idx = t->src[1];
    int64_t V = tab->ne[0], C = tab->ne[1], P = vt_numel(idx), p, v;
    const int32_t *I = vt__i(idx);
    for (p = 0; p < P; p++)
        if (I[p] < 0 || I[p] >= V) {
            vt__fail(k->c, VT_ERR_ARG, "embedding: index %d at position %lld is outside [0, %lld)", (int)I[p], (long long)p, (long long)V);
            return;
        }
    if (!k->bwd) {
        vt__emb_job ej;
        ej.k = k; ej.I = I; ej.C = C;
        vt__parallel(&k->c->pool, P, 2 * P * C, vt__emb_fwd_task, &ej);
        k->out[0].exact = 1;
        return;
    }
    {
        const vt__kout *o = &k->out[0];
        const double *dy = vt__d(t->grad);
        int64_t *cnt = (int64_t *)vt__scratch(k->c, sizeof(int64_t) * (size_t)(2 * V + 1 + P));
        int64_t *pos, *list;
        if (!cnt) return;
        memset(cnt, 0, sizeof(int64_t) * (size_t)(V + 1));
        for (p = 0; p < P; p++) cnt[I[p] + 1]++;
        for (v = 0; v < V; v++) cnt[v + 1] += cnt[v];
        pos = cnt + V + 1;
        list = pos + V;
        memcpy(pos, cnt, sizeof(int64_t) * (size_t)V);
        for (p = 0; p < P; p++) list[pos[I[p]]++] = p;
        if (!o->acc) memset(o->x, 0, sizeof(double) * (size_t)(V * C));
        {
            vt__emb_job ej;
            ej.k = k; ej.I = I; ej.dy = dy; ej.cnt = cnt; ej.list = list; ej.C = C;
            ej.scr = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(3 * C * k->c->pool.n)); /* acc, mag, ls per thread */
            if (!ej.scr) return;
            vt__parallel(&k->c->pool, V, 4 * P * C, vt__emb_bwd_task, &ej);
        }
    }
}

/* --- causal self-attention, composed of three ops --------------------------------

   qkv (B,T,3C): per token q, k, v of C each; head h uses channels
   [h hs, (h+1) hs). scale = 1/sqrt(hs) is a binary64 constant of the op.
   Every product below is a GEMM per (batch, head) with the bound of the
   >>gemm section (e_G); the heads run in parallel.

   ATT_SCORES: pre (B,NH,T,T), pre[t,t2] = scale (q_t . k_t2) for t2 <= t and
   0 above the diagonal (exact). The product by scale rounds once more:
   e = 1.01 (scale e_G + u|pre|).
   Backward: dq = scale (dpre K), dk = scale (dpre^T Q), each a GEMM then a
   scaling: e = 1.01 (scale e_G + u|v|) (+ the add when accumulating); the v
   part of dqkv is 0 (written) or unchanged (accumulated).

   ATT_SOFTMAX: att[t, 0..t] = softmax(pre[t, 0..t]) with the softmax bound
   for n = t + 1; 0 above the diagonal (exact). Backward: the softmax
   backward over the same n.

   ATT_MIX: out[t, h hs + i] = sum_t2 att[t,t2] v_t2[i] (a GEMM over all T;
   the zeros above the diagonal add nothing). Backward: datt = dout V^T
   (masked entries 0), dv = att^T dout: plain GEMM bounds.

   Every product is causal (>>gemm, CAUSAL PRODUCTS): scores and datt
   compute only the tiles that reach the lower triangle, and the products
   over t2 (out, dv, dq, dk) run only the k range where att or dpre is
   nonzero, which halves the work at large T and leaves every binary64
   value and bound what the full product gives. The zeros are checked, not
   assumed, where they could fail: att's are written by ATT_SOFTMAX, dpre's
   are scanned (another consumer of pre could have added to them), and the
   other operand must be finite (0 Inf is NaN): else the full product. */
typedef struct {
    vt__kern *k;
    int64_t B, T, C, NH, hs;
    double scale;
    double *ws;      /* per thread: bound workspace, a T x W product and its bound (W = max(T, hs):
                        the products are T x T and T x hs) */
    int64_t W, wsn;  /* doubles per thread */
    void **tb;       /* per thread packing buffers */
    int fuse;        /* out[0] is a fused causal point (vt__fuse_begin): each row rounded as written */
    vt__rjob rj;
    int bfuse, bfuse1; /* out[0] (with rj), out[1] (with rj1) is A FUSED BLOCK (vt__fuse_block_begin) */
    vt__rjob rj1;
    int64_t *nwritten; /* per thread: A FUSED BLOCK's blocks that took the written bounds (tests) */
} vt__att_job;

#define VT__ATT_SETUP(j, tq)                                                                     \
    int64_t T = (j)->T, C = (j)->C, NH = (j)->NH, hs = (j)->hs, C3 = 3 * (j)->C;                \
    int64_t b = (tq) / NH, h = (tq) % NH;                                                        \
    double *ws = (j)->ws + (int64_t)tid * (j)->wsn, *P = ws + VT__BOUND_WS(T, (j)->W), *PE = P + T * (j)->W; \
    void *tb = (j)->tb[tid];                                                                     \
    (void)C; (void)hs; (void)C3; (void)P; (void)PE; (void)tb

/* whether the T x w block X (row stride ld) is finite */
static int vt__att_finite(const double *X, int64_t T, int64_t w, int64_t ld) {
    int64_t t, i;
    for (t = 0; t < T; t++) {
        uint64_t any = 0;
        for (i = 0; i < w; i++) {
            uint64_t b;
            memcpy(&b, X + t * ld + i, 8);
            any |= (uint64_t)((b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull);
        }
        if (any) return 0;
    }
    return 1;
}

/* whether the T x T matrix P is zero above the diagonal */
static int vt__att_upper0(const double *P, int64_t T) {
    int64_t t, t2;
    for (t = 0; t < T; t++) {
        int nz = 0;
        for (t2 = t + 1; t2 < T; t2++) nz |= P[t * T + t2] != 0;
        if (nz) return 0;
    }
    return 1;
}

/* x[i*ldx + n] (+)= scale * P[i*lp + n] for an M x N block, with bounds */
static void vt__att_put_scaled(int acc, double *x, double *e, int64_t ldx, const double *P, const double *PE,
                               int64_t lp, int64_t M, int64_t N, double scale) {
    int64_t i, n;
    if (!acc) { /* the loop below without its branches, a row at a time (the compilers vectorise it) */
        for (i = 0; i < M; i++) {
            for (n = 0; n < N; n++) x[i * ldx + n] = scale * P[i * lp + n];
            if (e && PE)
                for (n = 0; n < N; n++) e[i * ldx + n] = 1.01 * (scale * PE[i * lp + n] + VT__U * fabs(x[i * ldx + n]));
            else if (e)
                for (n = 0; n < N; n++) e[i * ldx + n] = 0;
        }
        return;
    }
    if (e && PE) { /* the loop below for this case, four at a time: the add's bound by a select */
        for (i = 0; i < M; i++) {
            double *xr = x + i * ldx, *er = e + i * ldx;
            const double *pr = P + i * lp, *per = PE + i * lp;
            n = 0;
#ifdef VT__AVX2
            {
                const __m256d sc = _mm256_set1_pd(scale), u = _mm256_set1_pd(VT__U), f = _mm256_set1_pd(1.01);
                const __m256d sign = _mm256_set1_pd(-0.0), zero = _mm256_setzero_pd();
                for (; n + 4 <= N; n += 4) {
                    __m256d v = _mm256_mul_pd(sc, _mm256_loadu_pd(pr + n));
                    __m256d ev = _mm256_mul_pd(f, _mm256_add_pd(_mm256_mul_pd(sc, _mm256_loadu_pd(per + n)),
                                                                _mm256_mul_pd(u, _mm256_andnot_pd(sign, v))));
                    __m256d s = _mm256_add_pd(_mm256_loadu_pd(xr + n), v);
                    __m256d es = _mm256_add_pd(ev, _mm256_mul_pd(u, _mm256_andnot_pd(sign, s)));
                    _mm256_storeu_pd(xr + n, s);
                    _mm256_storeu_pd(er + n, _mm256_blendv_pd(ev, es, _mm256_cmp_pd(ev, zero, _CMP_GT_OQ)));
                }
            }
#endif
            for (; n < N; n++) {
                double v = scale * pr[n], ev = 1.01 * (scale * per[n] + VT__U * fabs(v)), s = xr[n] + v;
                if (ev > 0) ev += VT__U * fabs(s);
                xr[n] = s;
                er[n] = ev;
            }
        }
        return;
    }
    if (!e) { /* added, no bounds: x + scale P, four at a time */
        for (i = 0; i < M; i++) {
            double *xr = x + i * ldx;
            const double *pr = P + i * lp;
            n = 0;
#ifdef VT__AVX2
            {
                const __m256d sc = _mm256_set1_pd(scale);
                for (; n + 4 <= N; n += 4)
                    _mm256_storeu_pd(xr + n, _mm256_add_pd(_mm256_loadu_pd(xr + n), _mm256_mul_pd(sc, _mm256_loadu_pd(pr + n))));
            }
#endif
            for (; n < N; n++) xr[n] += scale * pr[n];
        }
        return;
    }
    for (i = 0; i < M; i++)
        for (n = 0; n < N; n++) {
            double v = scale * P[i * lp + n], ev = PE ? 1.01 * (scale * PE[i * lp + n] + VT__U * fabs(v)) : 0;
            if (acc) {
                double s = x[i * ldx + n] + v;
                if (ev > 0) ev += VT__U * fabs(s);
                v = s;
            }
            x[i * ldx + n] = v;
            if (e) e[i * ldx + n] = ev;
        }
}

/* A LAZY CAUSAL ROW for a square causal product C = A B (scores: pre =
   scale C, bound 1.01 (scale e_G + u |pre|); datt: C itself, bound e_G),
   row by row as the product's rows are final: each row's width caps the
   bounds of its outputs from A's row statistics and the maxima of B's
   line statistics over the columns it has (n <= t), which only grow with
   t: every candidate of vt__gb_e (a product of nonnegative statistics,
   the minimum of three, times G) is monotone in them. A margin of 2^-30
   covers the roundings in forming the width another way. */
typedef struct {
    const vt__gbound_job *gb; double scale; int64_t m; /* row m of the product in gb */
    int tri; int64_t M, g0;                             /* under A ROW CAPS: the product's tri and A's lines, the last group
                                                           walked on demand (or -1) */
    uint64_t bdone;                                     /* under B COLUMN (ROW) SUMS: B's groups walked in full */
} vt__att_bnd;
/* the width W + c |x| of a lazy attention row whose statistic s caps every
   element's (vt__lazy_cap): C itself (scale 0), bound e_G = G s at most;
   scale C, bound 1.01 (scale e_G + u |x|), and u |x| more where it is added
   to old values of +-0 (acc); each times ef2, plus 2^-50 |x|, with a margin
   of 2^-30 for the roundings in forming it */
static void vt__att_width(double G, double s, double scale, int acc, double ef2, double *W, double *c) {
    if (scale > 0) {
        *W = 1.01 * (scale * (G * s)) * ef2 * (1 + 0x1p-30);
        *c = ((acc ? 2.01 : 1.01) * VT__U * ef2 + 0x1p-50) * (1 + 0x1p-30);
    } else {
        *W = G * s * ef2 * (1 + 0x1p-30);
        *c = 0x1p-50 * (1 + 0x1p-30);
    }
}
/* A ROW CAPS in a product a task owns (an attention head's, whose
   statistics lie in the task's own workspace): line m's full statistics
   written over its cap, by the full walk on the line's group (a columns
   walk's 8 from a multiple of 8; the product's tri: the walk takes a line's
   causal zeros by its index, which the group keeps), once per group */
static void vt__own_group(const vt__stat_job *a, int64_t M, int64_t lo, int tri) { /* lines [lo, lo + group) in place */
    vt__stat_job s = *a;
    s.cap = 0;
    vt__stat_lines(&s, lo, VT__MIN(lo + vt__stat_group(a), M), tri);
}
static void vt__own_astat(const vt__stat_job *a, int64_t M, int64_t m, int tri, int64_t *g0) {
    int64_t lo = m / vt__stat_group(a) * vt__stat_group(a);
    if (*g0 == lo) return;
    vt__own_group(a, M, lo, tri);
    *g0 = lo;
}
/* B COLUMN SUMS (B ROW SUMS) in a product a task owns: line n's group (8
   columns, or the row) walked in full, in place (B's lines take no tri),
   once per group (done: a bit a group; vt__gemm_bound_own sums at most 64
   groups) */
static void vt__own_bcols(const vt__stat_job *b, int64_t N, int64_t n, uint64_t *done) {
    int64_t gs = vt__stat_group(b), g = n / gs;
    if ((*done >> g) & 1) return;
    vt__own_group(b, N, g * gs, VT__TRI_NONE);
    *done |= (uint64_t)1 << g;
}
static double vt__att_e(const vt__att_bnd *b, int64_t i) {
    const vt__stat_job *a = b->gb->a;
    int64_t m = b->m;
    if (a->cap) vt__own_astat(a, b->M, m, b->tri, &((vt__att_bnd *)b)->g0); /* (b is the caller's, not const) */
    if (b->gb->b->cap == 2) vt__own_bcols(b->gb->b, b->gb->N, i, &((vt__att_bnd *)b)->bdone);
    return vt__gb_e(b->gb, a->n1[m], a->n2[m], a->mx[m], a->th[m] * 0x1p-53, m, i);
}
static double vt__att_scores_bnd(const void *arg, int64_t i, double x) {
    const vt__att_bnd *b = (const vt__att_bnd *)arg;
    return 1.01 * (b->scale * vt__att_e(b, i) + VT__U * fabs(x));
}
static double vt__att_datt_bnd(const void *arg, int64_t i, double x) {
    (void)x;
    return vt__att_e((const vt__att_bnd *)arg, i);
}
/* the rows of a T x T causal point X (row t: X[t T, t T + t], the rest
   made zero), the product's statistics in gb: scores (scale > 0), X =
   scale C with C in P; datt (scale 0), C already in X */
static void vt__att_lazy_rows(const vt__att_job *j, int tid, const vt__gbound_job *gb, double *X, const double *P, int64_t T,
                              double scale, int64_t b0) {
    double ef2 = 2 * j->rj.ef * VT__SAFE, p1 = 0, p2 = 0, pm = 0, W, c;
    vt__att_bnd b;
    int64_t t, t2;
    b.gb = gb; b.scale = scale; b.tri = VT__TRI_NONE; b.M = T; b.g0 = -1; b.bdone = 0; /* (both callers': VT__TRI_NONE) */
    for (t = 0; t < T; t++) {
        if (scale > 0)
            for (t2 = 0; t2 <= t; t2++) X[t * T + t2] = scale * P[t * T + t2];
        memset(X + t * T + t + 1, 0, sizeof(double) * (size_t)(T - t - 1));
        vt__caps_line(gb->b, t, &p1, &p2, &pm);
        b.m = t;
        vt__att_width(gb->G, vt__row_cap(gb->a, t, p1, p2, pm), scale, 0, ef2, &W, &c);
        vt__fuse_row_lazy(&j->rj, &j->rj.c->tents[tid], X + t * T, t + 1, b0 + t * T, W, c,
                          scale > 0 ? vt__att_scores_bnd : vt__att_datt_bnd, &b);
    }
}

/* dq and dk added to old values that are all +-0 (dv's output wrote them):
   put_scaled's bound 1.01 (scale e_G + u |v|), plus u |s| where that is
   above 0, with |v| = |s| = |x| */
static double vt__att_dqk_acc_bnd(const void *arg, int64_t i, double x) {
    double e = vt__att_scores_bnd(arg, i, x);
    return e > 0 ? e + VT__U * fabs(x) : e;
}

/* A FUSED BLOCK's cast or fp64's check (rj->cast) of M rows of N values
   (row m at X + m ld, element b0 + m ld of the point), as vt__cast_task and
   vt__nan_task (a cast keeps NaN and never makes one): the first NaN in
   index order */
static void vt__block_cast(const vt__rjob *rj, vt__ents *t, double *X, int64_t ld, int64_t b0, int64_t M, int64_t N) {
    int64_t m, i, bad = -1;
    for (m = 0; m < M; m++) {
        if (rj->cast == 2) vt__cast_block(X + m * ld, N);
        if (bad < 0 && (i = vt__find_nan(X + m * ld, 0, N)) >= 0) bad = b0 + m * ld + i;
    }
    if (bad >= 0) vt__first(&t->bad, bad);
}

/* A FUSED BLOCK's product C = A B (T x hs; K = T, tri: A's causal zeros as
   vt__mm_serial takes them) into the block X (row stride ld, row m element
   b0 + m ld of the point), rounded row by row: scale 0 (P V, dv) X = C with
   bound e_G; scale > 0 (dq, dk) X = scale C, added to X's old values where
   the output is added to, with vt__att_put_scaled's bound. An added block
   whose old values are not all +-0, and every block under vt__no_lazy,
   takes the bounds written into the task's buffer PE (the values and
   bounds vt__att_put_scaled writes); the others the lazy rows, whose width
   caps the bound of every element of the row as in vt__att_lazy_rows (here
   with B's column maxima over all hs columns). */
static int64_t vt__att_blocks_written; /* tests: added blocks over old values not all +-0 (the written bounds) */
static void vt__att_block(const vt__att_job *j, int tid, const vt__rjob *rj, vt__ents *t, int tri, const double *A, int64_t sam,
                          int64_t sak, const double *B, int64_t sbk, double *X, int64_t ld, int64_t b0, double scale, int acc) {
    const vt__kern *k = j->k;
    int64_t T = j->T, hs = j->hs, m, n;
    double *ws = j->ws + (int64_t)tid * j->wsn, *P = ws + VT__BOUND_WS(T, j->W), *PE = P + T * j->W, *C = scale > 0 ? P : X;
    int64_t lc = scale > 0 ? hs : ld;
    int lazy = !rj->cast && !vt__no_lazy;
    vt__stat_job sa, sb;
    vt__gbound_job gb;
    if (lazy && acc) { /* old values all +-0: then |s| = |v| (s = old + v), which the width below assumes */
        int nz = 0;
        for (m = 0; m < T; m++) {
            const double *xr = X + m * ld;
            n = 0;
#ifdef VT__AVX2
            {
                __m256d v = _mm256_setzero_pd();
                for (; n + 4 <= hs; n += 4) v = _mm256_or_pd(v, _mm256_cmp_pd(_mm256_loadu_pd(xr + n), _mm256_setzero_pd(), _CMP_NEQ_UQ));
                nz |= _mm256_movemask_pd(v);
            }
#endif
            for (; n < hs; n++) nz |= xr[n] != 0;
        }
        lazy = !nz;
        j->nwritten[tid] += nz != 0;
    }
    if (lazy) vt__gemm_bound_own(tid, k->o, T, hs, T, A, sam, sak, B, sbk, 1, lc, ws, &sa, &sb, &gb, tri);
    vt__mm_serial(k->o, tid, 0, tri, T, hs, T, A, sam, sak, B, sbk, 1, C, lc, lazy || rj->cast ? NULL : PE, hs, ws, j->tb[tid]);
    if (scale > 0) { /* X (+)= scale C; written bounds into PE over C's, row by row (PE's rows are hs apart, X's ld) */
        if (lazy || rj->cast) vt__att_put_scaled(acc, X, NULL, ld, P, NULL, hs, T, hs, scale);
        else
            for (m = 0; m < T; m++) vt__att_put_scaled(acc, X + m * ld, PE + m * hs, ld, P + m * hs, PE + m * hs, hs, 1, hs, scale);
    }
    if (rj->cast) {
        vt__block_cast(rj, t, X, ld, b0, T, hs);
        return;
    }
    if (!lazy) {
        for (m = 0; m < T; m++)
            for (n = 0; n < hs; n += 256) vt__round_span(rj, t, X + m * ld + n, PE + m * hs + n, b0 + m * ld + n, VT__MIN(256, hs - n));
        return;
    }
    {
        double ef2 = 2 * rj->ef * VT__SAFE, p1 = 0, p2 = 0, pm = 0, W, c;
        vt__att_bnd bd;
        for (n = 0; n < hs; n++) vt__caps_line(&sb, n, &p1, &p2, &pm);
        bd.gb = &gb; bd.scale = scale; bd.tri = tri; bd.M = T; bd.g0 = -1; bd.bdone = 0;
        for (m = 0; m < T; m++) {
            bd.m = m;
            vt__att_width(gb.G, vt__row_cap(&sa, m, p1, p2, pm), scale, acc, ef2, &W, &c);
            vt__fuse_row_lazy(rj, t, X + m * ld, hs, b0 + m * ld, W, c,
                              scale > 0 ? (acc ? vt__att_dqk_acc_bnd : vt__att_scores_bnd) : vt__att_datt_bnd, &bd);
        }
    }
}

static void vt__att_scores_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__att_job *j = (vt__att_job *)arg;
    vt__kern *k = j->k;
    const double *qkv = vt__d(k->t->src[0]);
    int64_t bh, t, t2;
    for (bh = lo; bh < hi; bh++) {
        VT__ATT_SETUP(j, bh);
        const double *Q = qkv + b * T * C3 + h * hs, *K = Q + C;
        double *E = k->out[0].e ? PE : NULL;
        if (!k->bwd && j->fuse && E && !vt__no_lazy) { /* A LAZY CAUSAL ROW: the statistics, no bounds written */
            double *pre = k->out[0].x + bh * T * T;
            vt__stat_job sa, sb;
            vt__gbound_job gb;
            vt__gemm_bound_own(tid, k->o, T, T, hs, Q, C3, 1, K, 1, C3, T, ws, &sa, &sb, &gb, VT__TRI_NONE);
            vt__mm_serial(k->o, tid, 0, VT__TRI_OUT, T, T, hs, Q, C3, 1, K, 1, C3, P, T, NULL, T, ws, tb);
            vt__att_lazy_rows(j, tid, &gb, pre, P, T, j->scale, bh * T * T);
        } else if (!k->bwd) {
            double *pre = k->out[0].x + bh * T * T, *e = k->out[0].e ? k->out[0].e + bh * T * T : NULL;
            vt__mm_serial(k->o, tid, 0, VT__TRI_OUT, T, T, hs, Q, C3, 1, K, 1, C3, P, T, E, T, ws, tb);
            for (t = 0; t < T; t++) { /* the lower triangle, then the zeros above it */
                double *er = j->fuse ? (E ? E + t * T : NULL) : e ? e + t * T : NULL; /* fused: the row's bounds over E's */
                for (t2 = 0; t2 <= t; t2++) pre[t * T + t2] = j->scale * P[t * T + t2];
                if (er)
                    for (t2 = 0; t2 <= t; t2++) er[t2] = 1.01 * (j->scale * E[t * T + t2] + VT__U * fabs(pre[t * T + t2]));
                memset(pre + t * T + t + 1, 0, sizeof(double) * (size_t)(T - t - 1));
                if (j->fuse) vt__fuse_row(&j->rj, tid, pre + t * T, er, bh * T * T + t * T, t + 1);
                else if (e) memset(e + t * T + t + 1, 0, sizeof(double) * (size_t)(T - t - 1));
            }
        } else {
            const double *dpre = vt__d(k->t->grad) + bh * T * T;
            const vt__kout *o = &k->out[0];
            double *X = o->x + b * T * C3 + h * hs, *Ee = o->e && !j->bfuse ? o->e + b * T * C3 + h * hs : NULL;
            int up0 = vt__att_upper0(dpre, T);
            int tq = up0 && vt__att_finite(K, T, hs, C3) ? VT__TRI_KLE : VT__TRI_NONE;
            int tk = up0 && vt__att_finite(Q, T, hs, C3) ? VT__TRI_KGE : VT__TRI_NONE;
            if (j->bfuse) { /* A FUSED BLOCK: dq and dk rounded as written */
                vt__ents *tl = &j->rj.c->tents[tid];
                vt__att_block(j, tid, &j->rj, tl, tq, dpre, T, 1, K, C3, X, C3, b * T * C3 + h * hs, j->scale, o->acc);
                vt__att_block(j, tid, &j->rj, tl, tk, dpre, 1, T, Q, C3, X + C, C3, b * T * C3 + C + h * hs, j->scale, o->acc);
            } else {
                /* dq (T,hs) = dpre (T,T) K (T,hs) */
                vt__mm_serial(k->o, tid, 0, tq, T, hs, T, dpre, T, 1, K, C3, 1, P, hs, E, hs, ws, tb);
                vt__att_put_scaled(o->acc, X, Ee, C3, P, E, hs, T, hs, j->scale);
                /* dk (T,hs) = dpre^T (T,T) Q (T,hs) */
                vt__mm_serial(k->o, tid, 0, tk, T, hs, T, dpre, 1, T, Q, C3, 1, P, hs, E, hs, ws, tb);
                vt__att_put_scaled(o->acc, X + C, Ee ? Ee + C : NULL, C3, P, E, hs, T, hs, j->scale);
            }
            for (t = 0; t < T; t++) {
                if (!o->acc) memset(X + 2 * C + t * C3, 0, sizeof(double) * (size_t)hs);
                if (Ee) memset(Ee + 2 * C + t * C3, 0, sizeof(double) * (size_t)hs);
            }
        }
    }
}

/* the bound of the softmax backward's element y (dy - D) (ATT_SOFTMAX above) */
static double vt__att_dsm_e(double y, double dd, double v, double dD) {
    return dD > 0 ? 1.01 * (fabs(y) * (dD + VT__U * fabs(dd)) + VT__U * fabs(v)) : 0;
}

/* A LAZY SOFTMAX ROW (a verified trainer's fused causal softmax, forward
   and backward): the row by vt__fuse_row_lazy, its bounds computed only
   where the rule looks. Forward, the bound 1.01 y (eps_s + u) is linear in
   the value y: W = 0 and c = 1.01 (eps_s + u) ef2 + 2^-50 (0 when eps_s is
   0, as the bound). Backward, x = y dd (dd = dy - D) with bound 1.01 (|y|
   (dD + u |dd|) + u |x|) <= 1.01 ymax dD + 2.02 u |x| (1 + 2u), since |y|
   |dd| <= |x| (1 + 2u): W = 1.01 ymax dD ef2, c = 2.02 u ef2 + 2^-50, ymax
   the row's largest |y| (0 when dD is not above 0: no bound). Each with a
   margin of 2^-30 for the roundings in forming them. */
typedef struct { const double *y, *dy; double D, dD, eps; } vt__sm_bnd;
static double vt__sm_fwd_bnd(const void *arg, int64_t i, double x) {
    const vt__sm_bnd *b = (const vt__sm_bnd *)arg;
    (void)i;
    return b->eps > 0 ? 1.01 * x * (b->eps + VT__U) : 0;
}
static double vt__sm_bwd_bnd(const void *arg, int64_t i, double x) {
    const vt__sm_bnd *b = (const vt__sm_bnd *)arg;
    return vt__att_dsm_e(b->y[i], b->dy[i] - b->D, x, b->dD);
}

/* sum_i |a_i b_i| of rows a + q ld, b + q ld (q < 4) over their first n0 + q
   terms, each as vt__rdot sums it (t += |a_i b_i| in i order from +0): lane
   q of one register is row q's sum, the same products and additions in the
   same order, after a 4 x 4 transpose of four columns of the four rows; the
   last terms of the longer rows on their own. One row's chain of dependent
   additions took 4 cycles a term, the attention softmax backward's
   largest cost in verified mode at T 256. */
static void vt__absdot_rows4(const double *a, const double *b, int64_t ld, int64_t n0, double *out) {
    int64_t i = 0, q;
#ifdef VT__AVX2
    const __m256d sign = _mm256_set1_pd(-0.0);
    __m256d acc = _mm256_setzero_pd();
#define VT__P(q) _mm256_andnot_pd(sign, _mm256_mul_pd(_mm256_loadu_pd(a + (q) * ld + i), _mm256_loadu_pd(b + (q) * ld + i)))
    for (; i + 4 <= n0; i += 4) {
        __m256d p0 = VT__P(0), p1 = VT__P(1), p2 = VT__P(2), p3 = VT__P(3);
        __m256d t0 = _mm256_unpacklo_pd(p0, p1), t1 = _mm256_unpackhi_pd(p0, p1);
        __m256d t2 = _mm256_unpacklo_pd(p2, p3), t3 = _mm256_unpackhi_pd(p2, p3);
        acc = _mm256_add_pd(acc, _mm256_permute2f128_pd(t0, t2, 0x20)); /* column i: (p0[0], p1[0], p2[0], p3[0]) */
        acc = _mm256_add_pd(acc, _mm256_permute2f128_pd(t1, t3, 0x20));
        acc = _mm256_add_pd(acc, _mm256_permute2f128_pd(t0, t2, 0x31));
        acc = _mm256_add_pd(acc, _mm256_permute2f128_pd(t1, t3, 0x31));
    }
#undef VT__P
    _mm256_storeu_pd(out, acc);
#else
    out[0] = out[1] = out[2] = out[3] = 0;
#endif
    for (q = 0; q < 4; q++) {
        int64_t k;
        double t = out[q];
        for (k = i; k < n0 + q; k++) t += fabs(a[q * ld + k] * b[q * ld + k]);
        out[q] = t;
    }
}

static void vt__att_softmax_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__att_job *j = (vt__att_job *)arg;
    vt__kern *k = j->k;
    int64_t bh, t, t2, T = j->T;
    double *ex = j->ws + (int64_t)tid * j->wsn, mag4[4] = {0, 0, 0, 0};
    int lazy = j->fuse && !j->rj.cast && !vt__no_lazy;
    for (bh = lo; bh < hi; bh++)
        for (t = 0; t < T; t++) {
            int64_t row = bh * T + t, n = t + 1;
            if (!k->bwd) {
                const double *x = vt__d(k->t->src[0]) + row * T;
                double *y = k->out[0].x + row * T, *e = k->out[0].e ? k->out[0].e + row * T : NULL, eps_s;
                double s = vt__softmax_row(k->o, (uint64_t)row, x, n, ex, &eps_s, NULL);
                for (t2 = 0; t2 < n; t2++) y[t2] = ex[t2] / s;
                if (lazy) { /* A LAZY SOFTMAX ROW */
                    vt__sm_bnd bd;
                    double ef2 = 2 * j->rj.ef * VT__SAFE;
                    bd.eps = eps_s;
                    memset(y + n, 0, sizeof(double) * (size_t)(T - n));
                    vt__fuse_row_lazy(&j->rj, &j->rj.c->tents[tid], y, n, row * T, 0,
                                      eps_s > 0 ? (1.01 * (eps_s + VT__U) * ef2 + 0x1p-50) * (1 + 0x1p-30) : 0, vt__sm_fwd_bnd, &bd);
                    continue;
                }
                if (j->fuse && !j->rj.cast) e = ex; /* the row's bounds over its exponentials */
                if (e)
                    for (t2 = 0; t2 < n; t2++) e[t2] = eps_s > 0 ? 1.01 * y[t2] * (eps_s + VT__U) : 0;
                memset(y + n, 0, sizeof(double) * (size_t)(T - n)); /* above the diagonal: 0, exact */
                if (j->fuse) vt__fuse_row(&j->rj, tid, y, e, row * T, n);
                else if (e) memset(e + n, 0, sizeof(double) * (size_t)(T - n));
            } else {
                const double *y = vt__d(k->t) + row * T, *dy = vt__d(k->t->grad) + row * T;
                const vt__kout *o = &k->out[0];
                int four = o->e && t / 4 * 4 + 4 <= T; /* the magnitudes four rows at a time */
                double mag = 0, D, dD;
                if (four && t % 4 == 0) vt__absdot_rows4(dy, y, T, n, mag4);
                D = vt__rdot(k->o, (uint64_t)row, dy, 1, y, 1, n, o->e && !four ? &mag : NULL); /* (no bound: no magnitude) */
                if (four) mag = mag4[t % 4];
                dD = vt__gsum(k->o, n) * mag;
                if (lazy) { /* A LAZY SOFTMAX ROW */
                    vt__sm_bnd bd;
                    double ef2 = 2 * j->rj.ef * VT__SAFE, ym = 0, *xr = o->x + row * T;
                    t2 = 0;
#ifdef VT__AVX2
                    {
                        const __m256d sign = _mm256_set1_pd(-0.0), dv = _mm256_set1_pd(D);
                        __m256d m4 = _mm256_setzero_pd();
                        double m[4];
                        for (; t2 + 4 <= n; t2 += 4) {
                            __m256d yv = _mm256_loadu_pd(y + t2);
                            _mm256_storeu_pd(xr + t2, _mm256_mul_pd(yv, _mm256_sub_pd(_mm256_loadu_pd(dy + t2), dv)));
                            m4 = _mm256_max_pd(_mm256_andnot_pd(sign, yv), m4);
                        }
                        _mm256_storeu_pd(m, m4);
                        ym = VT__MAX(VT__MAX(m[0], m[1]), VT__MAX(m[2], m[3]));
                    }
#endif
                    for (; t2 < n; t2++) {
                        double a = fabs(y[t2]);
                        xr[t2] = y[t2] * (dy[t2] - D);
                        ym = a > ym ? a : ym;
                    }
                    memset(xr + n, 0, sizeof(double) * (size_t)(T - n));
                    bd.y = y; bd.dy = dy; bd.D = D; bd.dD = dD;
                    vt__fuse_row_lazy(&j->rj, &j->rj.c->tents[tid], xr, n, row * T,
                                      dD > 0 ? 1.01 * (ym * dD) * ef2 * (1 + 0x1p-30) : 0,
                                      dD > 0 ? (2.02 * VT__U * ef2 + 0x1p-50) * (1 + 0x1p-30) : 0, vt__sm_bwd_bnd, &bd);
                    continue;
                }
                if (j->fuse && !j->rj.cast) /* as vt__put writes them (not accumulated), the bounds into ex */
                    for (t2 = 0; t2 < n; t2++) {
                        double dd = dy[t2] - D, v = y[t2] * dd;
                        o->x[row * T + t2] = v;
                        ex[t2] = vt__att_dsm_e(y[t2], dd, v, dD);
                    }
                else /* (apart, so that without bounds the compiler leaves the bound out) */
                    for (t2 = 0; t2 < n; t2++) {
                        double dd = dy[t2] - D, v = y[t2] * dd;
                        vt__put(o, row * T + t2, v, vt__att_dsm_e(y[t2], dd, v, dD));
                    }
                if (j->fuse) { /* the zeros, then the row's rule */
                    memset(o->x + row * T + n, 0, sizeof(double) * (size_t)(T - n));
                    vt__fuse_row(&j->rj, tid, o->x + row * T, ex, row * T, n);
                } else if (o->acc) /* above the diagonal: + 0, exact (an old -0 becomes +0, as the add gives) */
                    for (; t2 < T; t2++) vt__put(o, row * T + t2, 0, 0);
                else {
                    memset(o->x + row * T + n, 0, sizeof(double) * (size_t)(T - n));
                    if (o->e) memset(o->e + row * T + n, 0, sizeof(double) * (size_t)(T - n));
                }
            }
        }
}

static void vt__att_mix_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__att_job *j = (vt__att_job *)arg;
    vt__kern *k = j->k;
    const double *att = vt__d(k->t->src[0]), *qkv = vt__d(k->t->src[1]);
    int64_t bh, t, t2;
    for (bh = lo; bh < hi; bh++) {
        VT__ATT_SETUP(j, bh);
        const double *A = att + bh * T * T, *V = qkv + b * T * C3 + 2 * C + h * hs;
        if (!k->bwd) {
            const vt__kout *o = &k->out[0];
            double *X = o->x + b * T * C + h * hs, *E = o->e ? o->e + b * T * C + h * hs : NULL;
            int tv = vt__att_finite(V, T, hs, C3) ? VT__TRI_KLE : VT__TRI_NONE;
            if (j->bfuse) /* A FUSED BLOCK */
                vt__att_block(j, tid, &j->rj, &j->rj.c->tents[tid], tv, A, T, 1, V, C3, X, C, b * T * C + h * hs, 0, 0);
            else vt__mm_serial(k->o, tid, 0, tv, T, hs, T, A, T, 1, V, C3, 1, X, C, E, C, ws, tb);
        } else {
            const double *dout = vt__d(k->t->grad) + b * T * C + h * hs;
            if (k->out[0].x) { /* datt (T,T) = dout (T,hs) V^T (hs,T), masked above the diagonal */
                const vt__kout *o = &k->out[0];
                double *X = o->x + bh * T * T, *E = o->e ? o->e + bh * T * T : NULL, *PEu = o->e ? PE : NULL;
                /* fused (not accumulated): the product straight into X, whose rows are then zeroed above the
                   diagonal (the tiles there are partly computed, partly skipped) */
                if (j->fuse && PEu && !vt__no_lazy) { /* A LAZY CAUSAL ROW: the statistics, no bounds written */
                    vt__stat_job sa, sb;
                    vt__gbound_job gb;
                    vt__gemm_bound_own(tid, k->o, T, T, hs, dout, C, 1, V, 1, C3, T, ws, &sa, &sb, &gb, VT__TRI_NONE);
                    vt__mm_serial(k->o, tid, 0, VT__TRI_OUT, T, T, hs, dout, C, 1, V, 1, C3, X, T, NULL, T, ws, tb);
                    vt__att_lazy_rows(j, tid, &gb, X, NULL, T, 0, bh * T * T);
                } else {
                    vt__mm_serial(k->o, tid, 0, VT__TRI_OUT, T, T, hs, dout, C, 1, V, 1, C3, j->fuse ? X : P, T, PEu, T, ws, tb);
                    for (t = 0; t < T; t++) {
                        int64_t n = o->acc ? T : t + 1; /* the zeros above the diagonal: written at once unless added */
                        if (j->fuse) { /* not accumulated: the loop below's values, then the row's rule on PE's bounds */
                            memset(X + t * T + n, 0, sizeof(double) * (size_t)(T - n));
                            vt__fuse_row(&j->rj, tid, X + t * T, PEu ? PEu + t * T : NULL, bh * T * T + t * T, n);
                            continue;
                        }
                        for (t2 = 0; t2 < n; t2++) {
                            double v = t2 <= t ? P[t * T + t2] : 0, ev = (t2 <= t && PEu) ? PEu[t * T + t2] : 0;
                            if (o->acc) { double s2 = X[t * T + t2] + v; if (ev > 0) ev += VT__U * fabs(s2); v = s2; }
                            X[t * T + t2] = v;
                            if (E) E[t * T + t2] = ev;
                        }
                        memset(X + t * T + n, 0, sizeof(double) * (size_t)(T - n));
                        if (E) memset(E + t * T + n, 0, sizeof(double) * (size_t)(T - n));
                    }
                }
            }
            if (k->out[1].x) { /* dv (T,hs) = att^T (T,T) dout (T,hs), into dqkv's v part */
                const vt__kout *o = &k->out[1];
                double *X = o->x + b * T * C3 + 2 * C + h * hs, *E = o->e && !j->bfuse1 ? o->e + b * T * C3 + 2 * C + h * hs : NULL;
                int tv = vt__att_finite(dout, T, hs, C) ? VT__TRI_KGE : VT__TRI_NONE;
                if (j->bfuse1) /* A FUSED BLOCK, into the kernel's second lists */
                    vt__att_block(j, tid, &j->rj1, &j->rj1.c->tents[j->rj1.c->pool.n + tid], tv, A, 1, T, dout, C, X, C3,
                                  b * T * C3 + 2 * C + h * hs, 0, 0);
                else vt__mm_serial(k->o, tid, o->acc, tv, T, hs, T, A, 1, T, dout, C, 1, X, C3, E, C3, ws, tb);
                for (t = 0; t < T; t++) { /* the q and k parts of this head */
                    if (!o->acc) { memset(X - 2 * C + t * C3, 0, sizeof(double) * (size_t)hs); memset(X - C + t * C3, 0, sizeof(double) * (size_t)hs); }
                    if (E) { memset(E - 2 * C + t * C3, 0, sizeof(double) * (size_t)hs); memset(E - C + t * C3, 0, sizeof(double) * (size_t)hs); }
                }
            }
        }
    }
}

static void vt__k_attention(vt__kern *k, vt__task_fn fn) {
    vt__att_job j;
    vt_tensor *t = k->t, *qkv = t->op == VT_OP_ATT_MIX ? t->src[1] : t->op == VT_OP_ATT_SCORES ? t->src[0] : NULL;
    int nt = k->c->pool.n, i;
    j.k = k;
    j.NH = t->iparam[0];
    if (qkv) { j.B = qkv->ne[0]; j.T = qkv->ne[1]; j.C = qkv->ne[2] / 3; }
    else { j.B = t->ne[0]; j.T = t->ne[2]; j.C = 0; }
    j.hs = t->iparam[1];
    j.scale = 1.0 / sqrt((double)t->iparam[1]);
    j.W = VT__MAX(j.T, j.hs);
    j.wsn = VT__BOUND_WS(j.T, j.W) + 2 * j.T * j.W + 8;
    j.ws = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(j.wsn * nt));
    j.tb = vt__tbufs(k->c, vt__gemm_tbytes(k->o));
    j.nwritten = (int64_t *)vt__scratch(k->c, sizeof(int64_t) * (size_t)nt);
    if (!j.ws || !j.tb || !j.nwritten) return;
    memset(j.nwritten, 0, sizeof(int64_t) * (size_t)nt);
    /* the T x T points whose zeros above the diagonal (bound 0) the tasks
       write, not add to: causal points (vt__tri_round) */
    if ((t->op == VT_OP_ATT_SCORES && !k->bwd) || (t->op == VT_OP_ATT_SOFTMAX && !k->out[0].acc) ||
        (t->op == VT_OP_ATT_MIX && k->bwd && !k->out[0].acc))
        k->out[0].tri = j.T;
    j.fuse = k->out[0].fused = vt__fuse_begin(k->c, &k->out[0], &j.rj);
    j.bfuse = j.bfuse1 = 0;
    if (!j.fuse && k->out[0].x && ((t->op == VT_OP_ATT_MIX && !k->bwd) || (t->op == VT_OP_ATT_SCORES && k->bwd)))
        j.bfuse = k->out[0].fused = vt__fuse_block_begin(k->c, &k->out[0], &j.rj, k->c->tents, t->op == VT_OP_ATT_SCORES);
    if (t->op == VT_OP_ATT_MIX && k->bwd && k->out[1].x)
        j.bfuse1 = vt__fuse_block_begin(k->c, &k->out[1], &j.rj1, k->c->tents + nt, 0);
    vt__parallel(&k->c->pool, j.B * j.NH, j.B * j.NH * j.T * j.T * VT__MAX(j.hs, 8), fn, &j);
    for (i = 0; i < nt; i++) vt__att_blocks_written += j.nwritten[i];
    if (j.bfuse1) { /* the second output's lists into its slot (vt__round takes them from there) */
        vt_ctx *c = k->c;
        c->fents[1].n = 0;
        c->fbad[1] = vt__ents_gather_from(c, c->tents + nt, &c->fents[1]);
        k->out[1].fused = 3;
        vt__fused_points++;
    }
}

/* --- dropout ---------------------------------------------------------------- */

/* DROPOUT: keep element i when uniform(seed, stream, i) >= p, where the
   stream is the step number: y = x s with s = 1/(1-p) a binary64 constant:
   one IEEE product, e = 0. Backward: the same mask, e = 0. */
static void vt__k_dropout(vt__kern *k) {
    vt_tensor *t = k->t;
    double p = t->fparam[0], s = 1.0 / (1.0 - p);
    uint64_t seed = (uint64_t)t->iparam[0], stream = (uint64_t)t->iparam[1];
    const double *in = k->bwd ? vt__d(t->grad) : vt__d(t->src[0]);
    int64_t i, n = vt_numel(t);
    vt__same_everywhere(&k->out[0]);
    for (i = 0; i < n; i++) {
        double v = vt_rng_uniform(seed, stream, (uint64_t)i) >= p ? in[i] * s : 0.0;
        vt__put(&k->out[0], i, v, 0);
    }
}

/* --- sum, mean, concat, split -------------------------------------------------- */

/* SUM: n terms in any order: e = gamma(n) sum|x| (0 when exact in any
   order: the same sum everywhere). MEAN: then / n: e = 1.01 (e_sum / n +
   u|mean|), or 0 when the sum is the same everywhere (one division of the
   same operands). Backward: g or g / n (one IEEE division: e = 0), broadcast. */
static void vt__k_reduce(vt__kern *k) {
    vt_tensor *t = k->t, *x = t->src[0];
    int64_t i, n = vt_numel(x);
    int mean = t->op == VT_OP_MEAN;
    if (!k->bwd) {
        const double *X = vt__d(x);
        double s = vt__rsum(k->o, 0, X, 1, n), mag = 0, es, m;
        int L = VT__LSB_NONE;
        for (i = 0; i < n; i++) { mag += fabs(X[i]); L = VT__MIN(L, vt__lsb(X[i])); }
        es = vt__sum_bound(k->o, n, mag, L);
        if (!mean) {
            k->out[0].x[0] = s;
            if (k->out[0].e) k->out[0].e[0] = es;
            return;
        }
        m = s / (double)n;
        k->out[0].x[0] = m;
        if (k->out[0].e) k->out[0].e[0] = es == 0 ? 0 : 1.01 * (es / (double)n + VT__U * fabs(m));
    } else {
        double g = vt__d(t->grad)[0], v = mean ? g / (double)n : g;
        vt__same_everywhere(&k->out[0]);
        for (i = 0; i < n; i++) vt__put(&k->out[0], i, v, 0);
        k->out[0].exact = !mean && !k->out[0].acc;
    }
}

/* CONCAT along dim: a copy, exact. Backward: slices of dy, exact unless
   accumulating. SPLIT (a copy of a slice): exact; backward writes dy into the
   slice (zeros elsewhere when written). */
static void vt__k_concat(vt__kern *k) {
    vt_tensor *t = k->t, *a = t->src[0], *b = t->src[1];
    int dim = (int)t->iparam[0], d;
    int64_t outer = 1, inner = 1, na, nb, o;
    for (d = 0; d < dim; d++) outer *= t->ne[d];
    for (d = dim + 1; d < t->ndim; d++) inner *= t->ne[d];
    na = a->ne[dim] * inner;
    nb = b->ne[dim] * inner;
    if (!k->bwd) {
        for (o = 0; o < outer; o++) {
            memcpy(k->out[0].x + o * (na + nb), vt__d(a) + o * na, sizeof(double) * (size_t)na);
            memcpy(k->out[0].x + o * (na + nb) + na, vt__d(b) + o * nb, sizeof(double) * (size_t)nb);
        }
        k->out[0].exact = 1;
    } else {
        const double *dy = vt__d(t->grad);
        int64_t i;
        vt__same_everywhere(&k->out[0]);
        vt__same_everywhere(&k->out[1]);
        for (o = 0; o < outer; o++) {
            if (k->out[0].x) for (i = 0; i < na; i++) vt__put(&k->out[0], o * na + i, dy[o * (na + nb) + i], 0);
            if (k->out[1].x) for (i = 0; i < nb; i++) vt__put(&k->out[1], o * nb + i, dy[o * (na + nb) + na + i], 0);
        }
        k->out[0].exact = !k->out[0].acc;
        k->out[1].exact = !k->out[1].acc;
    }
}

static void vt__k_split(vt__kern *k) {
    vt_tensor *t = k->t, *x = t->src[0];
    int dim = (int)t->iparam[0], d;
    int64_t start = t->iparam[1], len = t->ne[dim], outer = 1, inner = 1, o, i, nx;
    for (d = 0; d < dim; d++) outer *= x->ne[d];
    for (d = dim + 1; d < x->ndim; d++) inner *= x->ne[d];
    nx = x->ne[dim] * inner;
    if (!k->bwd) {
        for (o = 0; o < outer; o++)
            memcpy(k->out[0].x + o * len * inner, vt__d(x) + o * nx + start * inner, sizeof(double) * (size_t)(len * inner));
        k->out[0].exact = 1;
    } else {
        const vt__kout *ox = &k->out[0];
        const double *dy = vt__d(t->grad);
        vt__same_everywhere(&k->out[0]);
        if (!ox->acc) memset(ox->x, 0, sizeof(double) * (size_t)ox->n);
        for (o = 0; o < outer; o++)
            for (i = 0; i < len * inner; i++) vt__put(ox, o * nx + start * inner + i, dy[o * len * inner + i], 0);
        k->out[0].exact = !ox->acc;
    }
}

/* --- convolution, batch norm, pooling (op table 1) ----------------------------- */

/* Images are (N,C,H,W). The geometry of a conv2d node: w (OC,Cg,KH,KW),
   G groups, Cg = C/G, OCg = OC/G, Kg = Cg KH KW, Kd = OCg KH KW, P = OH OW,
   HW = H W; stride s, padding p, dilation d (iparam 0..3: s, p, d, G). */
typedef struct { int64_t N, C, H, W, OC, OH, OW, KH, KW, G, Cg, OCg, Kg, Kd, P, HW, s, p, d; } vt__cgeo;

static vt__cgeo vt__conv_geo(const vt_tensor *t) {
    vt__cgeo g;
    const vt_tensor *x = t->src[0], *w = t->src[1];
    g.N = x->ne[0]; g.C = x->ne[1]; g.H = x->ne[2]; g.W = x->ne[3];
    g.OC = t->ne[1]; g.OH = t->ne[2]; g.OW = t->ne[3];
    g.KH = w->ne[2]; g.KW = w->ne[3];
    g.s = t->iparam[0]; g.p = t->iparam[1]; g.d = t->iparam[2]; g.G = t->iparam[3];
    g.Cg = g.C / g.G; g.OCg = g.OC / g.G;
    g.Kg = g.Cg * g.KH * g.KW; g.Kd = g.OCg * g.KH * g.KW;
    g.P = g.OH * g.OW; g.HW = g.H * g.W;
    return g;
}

/* col (G, Kg, N, P): col[g][(ic,kh,kw)][n][oh OW + ow] = x[n][g Cg + ic][ih][iw]
   with ih = oh s - p + kh d, iw = ow s - p + kw d, 0 outside the image: a copy */
typedef struct { const vt__cgeo *g; const double *src; double *dst; } vt__col_job;

static void vt__im2col_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__col_job *j = (const vt__col_job *)arg;
    const vt__cgeo *g = j->g;
    int64_t r, n, oh, ow;
    (void)tid;
    for (r = lo; r < hi; r++) { /* r = g Kg + (ic KH + kh) KW + kw */
        int64_t gi = r / g->Kg, q = r % g->Kg, ic = q / (g->KH * g->KW), kh = q / g->KW % g->KH, kw = q % g->KW;
        double *dst = j->dst + r * g->N * g->P;
        for (n = 0; n < g->N; n++) {
            const double *src = j->src + (n * g->C + gi * g->Cg + ic) * g->HW;
            for (oh = 0; oh < g->OH; oh++) {
                int64_t ih = oh * g->s - g->p + kh * g->d;
                double *row = dst + n * g->P + oh * g->OW;
                for (ow = 0; ow < g->OW; ow++) {
                    int64_t iw = ow * g->s - g->p + kw * g->d;
                    row[ow] = (ih >= 0 && ih < g->H && iw >= 0 && iw < g->W) ? src[ih * g->W + iw] : 0.0;
                }
            }
        }
    }
}

/* dcol (G, Kd, N, HW): dcol[g][(oc,kh,kw)][n][ih W + iw] = dy[n][g OCg + oc][oh][ow]
   where (ih, iw) = (oh s - p + kh d, ow s - p + kw d), 0 where no output lands
   (for fixed kh, kw the map is one to one: a copy) */
static void vt__dcol_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__col_job *j = (const vt__col_job *)arg;
    const vt__cgeo *g = j->g;
    int64_t r, n, oh, ow;
    (void)tid;
    for (r = lo; r < hi; r++) { /* r = g Kd + (oc KH + kh) KW + kw */
        int64_t gi = r / g->Kd, q = r % g->Kd, oc = q / (g->KH * g->KW), kh = q / g->KW % g->KH, kw = q % g->KW;
        double *dst = j->dst + r * g->N * g->HW;
        memset(dst, 0, sizeof(double) * (size_t)(g->N * g->HW));
        for (n = 0; n < g->N; n++) {
            const double *src = j->src + (n * g->OC + gi * g->OCg + oc) * g->P;
            for (oh = 0; oh < g->OH; oh++) {
                int64_t ih = oh * g->s - g->p + kh * g->d;
                if (ih < 0 || ih >= g->H) continue;
                for (ow = 0; ow < g->OW; ow++) {
                    int64_t iw = ow * g->s - g->p + kw * g->d;
                    if (iw >= 0 && iw < g->W) dst[n * g->HW + ih * g->W + iw] = src[oh * g->OW + ow];
                }
            }
        }
    }
}

/* THE COLUMN STATISTICS OF AN IM2COL MATRIX without reading it. Column
   (n, oh, ow) of col holds x[n][c][ih][iw] for every channel c and every
   window position (kh, kw) whose pixel (ih, iw) = (oh s - p + kh d,
   ow s - p + kw d) lies in the image, and zeros elsewhere; a column (n, ih,
   iw) of dcol holds dy[n][oc][oh][ow] for every oc and every (kh, kw) with
   oh s - p + kh d = ih and ow s - p + kw d = iw. Either way the column's
   nonzero values are, as a multiset, the channel vectors of a few source
   pixels (each pixel once: (kh, kw) -> pixel is one to one). So with the
   per-pixel statistics over channels (vt__stat_task on one image's (C, HW)
   block, lines = pixels: sum |v|, |v|_2, max |v|, th) the column's are
   sum |v| = the sum of the pixels' sums, |v|_2^2 = the sum of their |v|_2^2,
   max |v| = their maximum, and th = their minimum (each pixel's th is
   2^(L + 53) for a lower bound L on its values' lowest set bits, so the
   minimum is that of a lower bound on the column's). The sums are the same
   terms in another order (and a square of a square root): they differ from
   the direct ones by a few K u relative, as the direct ones differ from the
   exact values; the bound's factor VT__SAFE (2^-20) absorbs either. A
   pixel's L is that of vt__stat_task on its channel vector, which is a
   lower bound however the lines are cut. Reads the source once (1 / (KH
   KW) of the matrix) instead of the matrix. */
typedef struct { const vt__wstat *w; } vt__wstat_job;

static void vt__wstat_pix_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__wstat *w = ((const vt__wstat_job *)arg)->w;
    int64_t HW = w->H * w->W, NHW = w->N * HW, n;
    for (n = lo; n < hi; n++) {
        vt__stat_job j;
        j.X = w->S + n * w->C * HW; j.s_outer = 1; j.s_k = HW; j.K = w->C; j.cap = 0;
        j.n1 = w->pix + n * HW; j.n2 = j.n1 + NHW; j.mx = j.n2 + NHW; j.th = j.mx + NHW;
        j.lsb = (int *)(w->pix + 4 * NHW) + n * HW;
        vt__stat_task(&j, 0, HW, tid);
    }
}

typedef struct { const vt__wstat *w; vt__stat_job *sb; } vt__wcol_job;
static void vt__wstat_col_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__wcol_job *j = (const vt__wcol_job *)arg;
    const vt__wstat *w = j->w;
    int64_t HW = w->H * w->W, NHW = w->N * HW, q, kh, kw;
    const double *p1 = w->pix, *p2 = p1 + NHW, *pm = p2 + NHW, *pt = pm + NHW;
    (void)tid;
    for (q = lo; q < hi; q++) {
        int64_t n = q / (w->OH * w->OW), a = q / w->OW % w->OH, b = q % w->OW;
        double s1 = 0, s2 = 0, m = 0, th = INFINITY;
        for (kh = 0; kh < w->KH; kh++) {
            int64_t r = a * w->s - w->p + kh * w->d;
            if (w->dx) { r = a + w->p - kh * w->d; if (r < 0 || r % w->s) continue; r /= w->s; }
            if (r < 0 || r >= w->H) continue;
            for (kw = 0; kw < w->KW; kw++) {
                int64_t cc = b * w->s - w->p + kw * w->d, i;
                if (w->dx) { cc = b + w->p - kw * w->d; if (cc < 0 || cc % w->s) continue; cc /= w->s; }
                if (cc < 0 || cc >= w->W) continue;
                i = n * HW + r * w->W + cc;
                s1 += p1[i]; s2 += p2[i] * p2[i];
                if (pm[i] > m) m = pm[i];
                if (pt[i] < th) th = pt[i];
            }
        }
        j->sb->n1[q] = s1; j->sb->n2[q] = sqrt(s2); j->sb->mx[q] = m; j->sb->th[q] = th;
    }
}

static void vt__wstat_cols(vt__pool *pool, const vt__wstat *w, vt__stat_job *sb) {
    vt__wstat_job pj;
    vt__wcol_job cj;
    pj.w = w;
    vt__parallel(pool, w->N, w->N * w->C * w->H * w->W, vt__wstat_pix_task, &pj);
    cj.w = w; cj.sb = sb;
    vt__parallel(pool, w->N * w->OH * w->OW, w->N * w->OH * w->OW * w->KH * w->KW * 4, vt__wstat_col_task, &cj);
}

/* THE ROW STATISTICS OF COL FOR THE WEIGHT GRADIENT without reading it.
   dw = dyt col^T reads col's rows as B's lines: row (c, kh, kw) holds
   x[n][c][ih][iw] for every n and every output pixel (oh, ow) whose window
   position (kh, kw) lands in the image, ih = oh s - p + kh d, iw = ow s -
   p + kw d (zeros elsewhere add nothing to sum |v|, |v|_2, max |v| and are
   no set bit). For fixed (kh, kw), (oh, ow) -> (ih, iw) is one to one, so
   the row's nonzero values are x[n][c] on the rectangle R_kh x C_kw of the
   rows ih and columns iw so reached, each pixel once. Per channel and per
   pixel (ih, iw), the statistics over the images n (one pass over x) are
   formed once; row (c, kh, kw)'s are their sums (squares: of the squares;
   maxima: the maximum) over the rectangle: the same terms in another order,
   which the bound's factor VT__SAFE absorbs as for vt__wstat_cols (N P u
   relative, far below 2^-20). th: the values are binary32 (every op's input
   is), so a nonzero v has its lowest bit at or above fexp(v) - 24, and
   L = fexp(mn) - 24 for the row's smallest nonzero magnitude mn is a lower
   bound (vt__stat_task's rule for rows of many-bit values); a channel whose
   first four nonzero values (in (n, ih, iw) order) carry fewer than 20 bits
   (pixels) takes the lowest set bit of all its values instead, a lower
   bound for each of its rows. Reads x once instead of the matrix (KH KW
   times x), and then KH KW planes of H W per channel. */
typedef struct { const vt__wstat *w; vt__stat_job *sb; } vt__wline_job;

static void vt__wstat_line_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__wline_job *j = (const vt__wline_job *)arg;
    const vt__wstat *w = j->w;
    int64_t H = w->H, W = w->W, HW = H * W, c, n, i, kh, kw, oh, ow;
    double *p1 = w->pix + (int64_t)tid * 4 * HW, *p2 = p1 + HW, *pm = p2 + HW, *pn = pm + HW;
    for (c = lo; c < hi; c++) {
        int L = VT__LSB_NONE, coarse = 1, seen = 0;
        for (i = 0; i < HW; i++) { p1[i] = 0; p2[i] = 0; pm[i] = 0; pn[i] = INFINITY; }
        for (n = 0; n < w->N; n++) { /* per pixel over the images: sum |v|, sum v^2, max |v|, smallest nonzero |v| */
            const double *pl = w->S + (n * w->C + c) * HW;
            for (i = 0; i < HW && seen < 4 && coarse; i++)
                if (pl[i] != 0) { coarse = !vt__many_bits(pl[i]); seen++; }
            i = 0;
#ifdef VT__AVX2
            {
                const __m256d sign = _mm256_set1_pd(-0.0);
                const __m256i one = _mm256_set1_epi64x(1);
                for (; i + 4 <= HW; i += 4) { /* the smallest nonzero by vt__dec_bits, undone below */
                    __m256d a = _mm256_andnot_pd(sign, _mm256_loadu_pd(pl + i));
                    _mm256_storeu_pd(p1 + i, _mm256_add_pd(_mm256_loadu_pd(p1 + i), a));
                    _mm256_storeu_pd(p2 + i, _mm256_fmadd_pd(a, a, _mm256_loadu_pd(p2 + i)));
                    _mm256_storeu_pd(pm + i, _mm256_max_pd(_mm256_loadu_pd(pm + i), a));
                    _mm256_storeu_pd(pn + i, _mm256_min_pd(vt__dec_bits(a, one), _mm256_loadu_pd(pn + i)));
                }
            }
#endif
            for (; i < HW; i++) {
                double a = fabs(pl[i]);
                p1[i] += a; p2[i] += a * a;
                if (a > pm[i]) pm[i] = a;
                if (a != 0 && a < pn[i]) pn[i] = a;
            }
        }
#ifdef VT__AVX2
        for (i = 0; i < HW / 4 * 4; i++) pn[i] = vt__inc_bits(pn[i]);
#endif
        if (coarse) /* few-bit values: the lowest set bit of the whole channel */
            for (n = 0; n < w->N; n++) {
                const double *pl = w->S + (n * w->C + c) * HW;
                for (i = 0; i < HW; i++)
                    if (pl[i] != 0) L = VT__MIN(L, vt__lsb(pl[i]));
            }
        for (kh = 0; kh < w->KH; kh++)
            for (kw = 0; kw < w->KW; kw++) { /* row (c, kh, kw): its pixels' sums over the rectangle */
                int64_t q = (c * w->KH + kh) * w->KW + kw, off = kw * w->d - w->p, ow0, ow1;
                double s1 = 0, s2 = 0, m = 0, mn = INFINITY;
                int l;
                ow0 = off >= 0 ? 0 : (-off + w->s - 1) / w->s; /* the ow with iw = ow s + off in [0, W) */
                ow1 = W - 1 - off < 0 ? 0 : VT__MIN(w->OW, (W - 1 - off) / w->s + 1);
                for (oh = 0; oh < w->OH && ow1 > ow0; oh++) {
                    int64_t ih = oh * w->s - w->p + kh * w->d, b;
                    if (ih < 0 || ih >= H) continue;
                    for (ow = ow0; ow < ow1; ow++) {
                        b = ih * W + ow * w->s + off;
                        s1 += p1[b]; s2 += p2[b];
                        if (pm[b] > m) m = pm[b];
                        if (pn[b] < mn) mn = pn[b];
                    }
                }
                l = coarse ? L : mn == INFINITY ? VT__LSB_NONE : vt__fexp(mn) - 24;
                j->sb->n1[q] = s1; j->sb->n2[q] = sqrt(s2); j->sb->mx[q] = m;
                j->sb->th[q] = l >= VT__LSB_NONE ? INFINITY : vt__pow2(VT__MIN(l + 53, 1023));
            }
    }
}

static void vt__wstat_lines(vt__pool *pool, const vt__wstat *w, vt__stat_job *sb) {
    vt__wline_job j;
    j.w = w; j.sb = sb;
    vt__parallel(pool, w->C, w->N * w->C * w->H * w->W * 2, vt__wstat_line_task, &j);
}

/* terms [k0, k1) of column col of image n's part of the im2col matrix
   (row k = (c KH + kh) KW + kw), read from the source: the values of
   vt__im2col_task (forward) or vt__dcol_task (dx) */
#ifndef VT__PFC
#define VT__PFC 6
#endif
#if defined(__GNUC__) || defined(__clang__)
#define VT__PREFETCH(p) __builtin_prefetch(p)
#else
#define VT__PREFETCH(p) ((void)(p))
#endif
static void vt__wstat_gather(const vt__wstat *w, int64_t n, int64_t col, int64_t k0, int64_t k1, double *dst) {
    int64_t KK = w->KH * w->KW, a = col / w->OW, b = col % w->OW, k = k0, q, HW = w->H * w->W;
    int64_t off[64], *op = KK <= 64 ? off : NULL; /* each window position's pixel in a channel's plane, or -1 */
    const double *src = w->S + (n * w->C + k0 / KK) * HW;
    for (q = 0; op && q < KK; q++) {
        int64_t kh = q / w->KW, kw = q % w->KW, r, cc;
        if (!w->dx) { r = a * w->s - w->p + kh * w->d; cc = b * w->s - w->p + kw * w->d; }
        else {
            r = a + w->p - kh * w->d; cc = b + w->p - kw * w->d;
            r = (r < 0 || r % w->s) ? -1 : r / w->s;
            cc = (cc < 0 || cc % w->s) ? -1 : cc / w->s;
        }
        op[q] = (r >= 0 && r < w->H && cc >= 0 && cc < w->W) ? r * w->W + cc : -1;
    }
    if (!op) { /* a kernel over 64 positions: the same map, term by term */
        for (; k < k1; k++) {
            int64_t p = k % KK, kh = p / w->KW, kw = p % w->KW, r, cc;
            const double *sc = w->S + (n * w->C + k / KK) * HW;
            if (!w->dx) { r = a * w->s - w->p + kh * w->d; cc = b * w->s - w->p + kw * w->d; }
            else {
                r = a + w->p - kh * w->d; cc = b + w->p - kw * w->d;
                r = (r < 0 || r % w->s) ? -1 : r / w->s;
                cc = (cc < 0 || cc % w->s) ? -1 : cc / w->s;
            }
            dst[k - k0] = (r >= 0 && r < w->H && cc >= 0 && cc < w->W) ? sc[r * w->W + cc] : 0.0;
        }
        return;
    }
    {   /* the lines a channel's window reads (each window row's first and last pixel), fetched VT__PFC channels
           ahead: a column's terms are a few lines in each of C planes HW apart, one cache miss per few terms,
           which the core alone overlaps only a channel or two deep */
        int64_t pf[128], ch = k0 / KK;
        int npf = 0, i;
        for (q = 0; q < KK; q += w->KW) {
            int64_t l = -1, h = -1, t;
            for (t = q; t < q + w->KW; t++)
                if (op[t] >= 0) { if (l < 0) l = op[t]; h = op[t]; }
            if (l >= 0) { pf[npf++] = l; if (h != l) pf[npf++] = h; }
        }
        for (q = k0 % KK; k < k1; k++) {
            if (q == 0 && ch + VT__PFC < w->C)
                for (i = 0; i < npf; i++) VT__PREFETCH(src + VT__PFC * HW + pf[i]);
            dst[k - k0] = op[q] >= 0 ? src[op[q]] : 0.0;
            if (++q == KK) { q = 0; src += HW; ch++; }
        }
    }
}

/* the source description of conv g's col (dx 0: from x) or dcol (dx 1: from dy), in the op's scratch (it lives
   until the rounding point's exact evaluation) */
/* lines: 1 for col's row statistics (vt__wstat_lines; forward geometry),
   0 for the columns of col (dx = 0) or of dcol (dx = 1) */
static vt__wstat *vt__wstat_of(vt__kern *k, const vt__cgeo *g, int dx, int lines, const double *S) {
    vt__wstat *w = (vt__wstat *)vt__scratch(k->c, sizeof(vt__wstat));
    int64_t np;
    if (!w) return NULL;
    w->S = S; w->N = g->N; w->KH = g->KH; w->KW = g->KW; w->s = g->s; w->p = g->p; w->d = g->d; w->dx = dx; w->lines = lines;
    if (!dx) { w->C = g->C; w->H = g->H; w->W = g->W; w->OH = g->OH; w->OW = g->OW; }
    else { w->C = g->OC; w->H = g->OH; w->W = g->OW; w->OH = g->H; w->OW = g->W; }
    np = lines ? 4 * w->H * w->W * k->c->pool.n : 5 * w->N * w->H * w->W;
    w->pix = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(np + 1));
    return w->pix ? w : NULL;
}

/* CONV2D as products (im2col), every output through vt__mm, so a
   correctly rounded product (>>rounding) with the bound of >>gemm:
     forward, per image n and group g: y[n][g] (OCg,P) = w[g] (OCg,Kg)
       col[g][.][n] (Kg,P): Kg terms;
     dx, per n and g: dx[n][g] (Cg,HW) = wt[g] (Cg,Kd) dcol[g][.][n] (Kd,HW),
       wt[g][ic][(oc,kh,kw)] = w[g OCg + oc][ic][kh][kw]: Kd terms (the zeros
       of dcol add nothing);
     dw, per g: dw[g] (OCg,Kg) = dyt[g] (OCg,N P) col[g]^T (N P,Kg), dyt[oc][n][q]
       = dy[n][oc][q]: N P terms in chunks of P (one image each) summed in
       image order (the fixed outer order of the linear layer's weight
       gradient; native mode splits them by threads instead).
   The layouts and the chunking are part of the op's definition (the bound
   depends on them, the correctly rounded values do not): the CUDA backend
   forms the same products. */
static void vt__k_conv2d(vt__kern *k) {
    vt_tensor *t = k->t;
    vt__cgeo g = vt__conv_geo(t);
    const double *X = vt__d(t->src[0]), *Wt = vt__d(t->src[1]);
    int64_t n, gi, NP = g.N * g.P, NHW = g.N * g.HW;
    double *col = NULL;
    vt__col_job cj;
    cj.g = &g;
    if (!k->bwd || k->out[1].x) {
        col = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(g.G * g.Kg * NP));
        if (!col) return;
        cj.src = X; cj.dst = col;
        vt__parallel(&k->c->pool, g.G * g.Kg, g.G * g.Kg * NP, vt__im2col_task, &cj);
    }
    if (!k->bwd) {
        vt__kout *o = &k->out[0];
        if (g.G == 1) {
            vt__wstat *ws = vt__wstat_of(k, &g, 0, 0, X);
            if (!ws) return;
            vt__mm_batch(k, o, g.N, g.OC, g.P, g.Kg, Wt, g.Kg, 1, col, NP, ws);
            return;
        }
        for (n = 0; n < g.N; n++)
            for (gi = 0; gi < g.G; gi++) {
                int64_t off = (n * g.OC + gi * g.OCg) * g.P;
                vt__mm(k, o, g.OCg, g.P, g.Kg, Wt + gi * g.OCg * g.Kg, g.Kg, 1, col + gi * g.Kg * NP + n * g.P, NP, 1, o->x + off,
                       o->e ? o->e + off : NULL, NULL, 0);
            }
        return;
    }
    {
        const double *dy = vt__d(t->grad);
        vt__kout *ox = &k->out[0], *ow = &k->out[1];
        if (ox->x) {
            double *wt = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(g.C * g.Kd));
            double *dcol = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(g.G * g.Kd * NHW));
            int64_t ic, oc, q, KK = g.KH * g.KW;
            if (!wt || !dcol) return;
            for (gi = 0; gi < g.G; gi++)
                for (ic = 0; ic < g.Cg; ic++)
                    for (oc = 0; oc < g.OCg; oc++)
                        for (q = 0; q < KK; q++)
                            wt[(gi * g.Cg + ic) * g.Kd + oc * KK + q] = Wt[((gi * g.OCg + oc) * g.Cg + ic) * KK + q];
            cj.src = dy; cj.dst = dcol;
            vt__parallel(&k->c->pool, g.G * g.Kd, g.G * g.Kd * NHW, vt__dcol_task, &cj);
            if (g.G == 1) {
                vt__wstat *ws = vt__wstat_of(k, &g, 1, 0, dy);
                if (!ws) return;
                vt__mm_batch(k, ox, g.N, g.C, g.HW, g.Kd, wt, g.Kd, 1, dcol, NHW, ws);
            }
            else for (n = 0; n < g.N; n++)
                for (gi = 0; gi < g.G; gi++) {
                    int64_t off = (n * g.C + gi * g.Cg) * g.HW;
                    vt__mm(k, ox, g.Cg, g.HW, g.Kd, wt + gi * g.Cg * g.Kd, g.Kd, 1, dcol + gi * g.Kd * NHW + n * g.HW, NHW, 1,
                           ox->x + off, ox->e ? ox->e + off : NULL, NULL, 0);
                }
        }
        if (ow->x) {
            double *dyt = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(g.OC * NP));
            int64_t oc, ch = k->o->f32 ? (NP + k->o->threads - 1) / k->o->threads : g.P;
            if (!dyt) return;
            for (oc = 0; oc < g.OC; oc++)
                for (n = 0; n < g.N; n++) memcpy(dyt + (oc * g.N + n) * g.P, dy + (n * g.OC + oc) * g.P, sizeof(double) * (size_t)g.P);
            if (g.G == 1 && ow->e) { /* col's row statistics from x (vt__wstat_lines) */
                vt__wstat *ws = vt__wstat_of(k, &g, 0, 1, X);
                if (!ws) return;
                vt__mm_src(k, ow, g.OC, g.Kg, NP, dyt, NP, 1, col, 1, NP, ow->x, ow->e, NULL, ch, ws);
            } else
                for (gi = 0; gi < g.G; gi++) {
                    int64_t off = gi * g.OCg * g.Kg;
                    vt__mm(k, ow, g.OCg, g.Kg, NP, dyt + gi * g.OCg * NP, NP, 1, col + gi * g.Kg * NP, 1, NP, ow->x + off,
                           ow->e ? ow->e + off : NULL, NULL, ch);
                }
        }
    }
}

/* Sums of terms scattered to targets: o->x[t] = [old +] the sum of the
   terms val[q] with tgt[q] = t, each target's terms in the order of q
   (rotated and re-blocked under chaos), by vt__rsum. The terms are the same
   on every machine (copies of binary32 values, or one IEEE division of one):
   e = gsum(m + [old]) (sum |terms| + |old|), 0 when the sum is exact in any
   order (vt__sum_bound; one term, or one term and the old value, always is).
   A target with no term keeps its old value (0 when written). */
static void vt__scatter_sum(vt__kern *k, const vt__kout *o, int64_t nq, const int64_t *tgt, const double *val) {
    int64_t nt = o->n, q, t2;
    int64_t *cnt = (int64_t *)vt__scratch(k->c, sizeof(int64_t) * (size_t)(2 * nt + 2));
    double *buf = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(nq + 1));
    int64_t *pos;
    if (!cnt || !buf) return;
    pos = cnt + nt + 1;
    memset(cnt, 0, sizeof(int64_t) * (size_t)(nt + 1));
    for (q = 0; q < nq; q++) cnt[tgt[q] + 1]++;
    for (t2 = 0; t2 < nt; t2++) cnt[t2 + 1] += cnt[t2];
    memcpy(pos, cnt, sizeof(int64_t) * (size_t)nt);
    for (q = 0; q < nq; q++) buf[pos[tgt[q]]++] = val[q];
    for (t2 = 0; t2 < nt; t2++) {
        int64_t m = cnt[t2 + 1] - cnt[t2], i;
        double v, mag = 0, old = o->acc ? o->x[t2] : 0;
        int L = o->acc ? vt__lsb(old) : VT__LSB_NONE;
        if (!m) {
            if (!o->acc) o->x[t2] = 0;
            if (o->e) o->e[t2] = 0;
            continue;
        }
        v = m == 1 ? buf[cnt[t2]] : vt__rsum(k->o, (uint64_t)t2, buf + cnt[t2], 1, m);
        o->x[t2] = o->acc ? VT__ACC(k->o, old + v) : v;
        if (!o->e) continue;
        for (i = cnt[t2]; i < cnt[t2 + 1]; i++) { mag += fabs(buf[i]); L = VT__MIN(L, vt__lsb(buf[i])); }
        o->e[t2] = vt__sum_bound(k->o, m + (o->acc ? 1 : 0), mag + fabs(old), L);
    }
}

/* pooling geometry: iparam kh, kw, stride, pad */
typedef struct { int64_t N, C, H, W, OH, OW, KH, KW, s, p; } vt__pgeo;
static vt__pgeo vt__pool_geo(const vt_tensor *t) {
    vt__pgeo g;
    const vt_tensor *x = t->src[0];
    g.N = x->ne[0]; g.C = x->ne[1]; g.H = x->ne[2]; g.W = x->ne[3];
    g.OH = t->ne[2]; g.OW = t->ne[3];
    g.KH = t->iparam[0]; g.KW = t->iparam[1]; g.s = t->iparam[2]; g.p = t->iparam[3];
    return g;
}

/* the input index (within the image plane) of output (oh, ow)'s maximum:
   the first largest value of the window in row-major order; padding is
   never chosen (the constructor keeps every window inside the image) */
static int64_t vt__max_at(const vt__pgeo *g, const double *plane, int64_t oh, int64_t ow) {
    int64_t kh, kw, best = -1;
    double bv = 0;
    for (kh = 0; kh < g->KH; kh++) {
        int64_t ih = oh * g->s - g->p + kh;
        if (ih < 0 || ih >= g->H) continue;
        for (kw = 0; kw < g->KW; kw++) {
            int64_t iw = ow * g->s - g->p + kw;
            double v;
            if (iw < 0 || iw >= g->W) continue;
            v = plane[ih * g->W + iw];
            if (best < 0 || v > bv) { bv = v; best = ih * g->W + iw; }
        }
    }
    return best;
}

/* MAXPOOL2D: a copy of each window's first maximum, exact. Backward: dx
   receives each output's dy at its maximum: a sum where windows overlap
   (vt__scatter_sum, outputs in index order), exact where they do not. */
static void vt__k_maxpool(vt__kern *k) {
    vt_tensor *t = k->t;
    vt__pgeo g = vt__pool_geo(t);
    const double *X = vt__d(t->src[0]);
    int64_t pl, oh, ow, nout = vt_numel(t);
    if (!k->bwd) {
        double *y = k->out[0].x;
        for (pl = 0; pl < g.N * g.C; pl++)
            for (oh = 0; oh < g.OH; oh++)
                for (ow = 0; ow < g.OW; ow++) {
                    int64_t a = vt__max_at(&g, X + pl * g.H * g.W, oh, ow);
                    y[(pl * g.OH + oh) * g.OW + ow] = a >= 0 ? X[pl * g.H * g.W + a] : 0.0;
                }
        k->out[0].exact = 1;
        return;
    }
    {
        int64_t *tg = (int64_t *)vt__scratch(k->c, sizeof(int64_t) * (size_t)nout);
        if (!tg || !k->out[0].x) return;
        for (pl = 0; pl < g.N * g.C; pl++)
            for (oh = 0; oh < g.OH; oh++)
                for (ow = 0; ow < g.OW; ow++)
                    tg[(pl * g.OH + oh) * g.OW + ow] = pl * g.H * g.W + vt__max_at(&g, X + pl * g.H * g.W, oh, ow);
        vt__scatter_sum(k, &k->out[0], nout, tg, vt__d(t->grad));
    }
}

/* AVGPOOL2D: y = (sum of the window's values inside the image) / (KH KW)
   (padding counts as zeros). The sum of m terms in any order: e_s =
   gsum(m) sum|x| (0 when exact: vt__sum_bound); the division rounds:
   e = 1.01 (e_s / (KH KW) + u|y|), 0 when e_s is (one division of the same
   operands). Backward: each output sends dy / (KH KW) (one IEEE division:
   the same everywhere) to every input of its window: vt__scatter_sum. */
typedef struct { vt__kern *k; vt__pgeo g; double *scr; } vt__avg_job;

static void vt__avgpool_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__avg_job *j = (vt__avg_job *)arg;
    const vt__pgeo *g = &j->g;
    vt__kout *o = &j->k->out[0];
    const double *X = vt__d(j->k->t->src[0]);
    double *buf = j->scr + (int64_t)tid * g->KH * g->KW, cnt = (double)(g->KH * g->KW);
    int64_t i;
    for (i = lo; i < hi; i++) {
        int64_t ow = i % g->OW, oh = i / g->OW % g->OH, pl = i / (g->OW * g->OH), kh, kw, m = 0;
        const double *plane = X + pl * g->H * g->W;
        double s, mag = 0, es, y;
        int L = VT__LSB_NONE;
        for (kh = 0; kh < g->KH; kh++) {
            int64_t ih = oh * g->s - g->p + kh;
            if (ih < 0 || ih >= g->H) continue;
            for (kw = 0; kw < g->KW; kw++) {
                int64_t iw = ow * g->s - g->p + kw;
                if (iw < 0 || iw >= g->W) continue;
                buf[m++] = plane[ih * g->W + iw];
            }
        }
        s = vt__rsum(j->k->o, (uint64_t)i, buf, 1, m);
        y = s / cnt;
        o->x[i] = y;
        if (!o->e) continue;
        for (kh = 0; kh < m; kh++) { mag += fabs(buf[kh]); L = VT__MIN(L, vt__lsb(buf[kh])); }
        es = vt__sum_bound(j->k->o, m, mag, L);
        o->e[i] = es == 0 ? 0 : 1.01 * (es / cnt + VT__U * fabs(y));
    }
}

static void vt__k_avgpool(vt__kern *k) {
    vt_tensor *t = k->t;
    vt__pgeo g = vt__pool_geo(t);
    int64_t nout = vt_numel(t), i, kh, kw, nq = 0;
    if (!k->bwd) {
        vt__avg_job j;
        j.k = k; j.g = g;
        j.scr = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(g.KH * g.KW * k->c->pool.n));
        if (!j.scr) return;
        vt__parallel(&k->c->pool, nout, nout * g.KH * g.KW * 2, vt__avgpool_task, &j);
        return;
    }
    if (!k->out[0].x) return;
    {
        const double *dy = vt__d(t->grad);
        double cnt = (double)(g.KH * g.KW), *val;
        int64_t *tg;
        tg = (int64_t *)vt__scratch(k->c, sizeof(int64_t) * (size_t)(nout * g.KH * g.KW));
        val = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(nout * g.KH * g.KW));
        if (!tg || !val) return;
        for (i = 0; i < nout; i++) {
            int64_t ow = i % g.OW, oh = i / g.OW % g.OH, pl = i / (g.OW * g.OH);
            double v = dy[i] / cnt;
            for (kh = 0; kh < g.KH; kh++) {
                int64_t ih = oh * g.s - g.p + kh;
                if (ih < 0 || ih >= g.H) continue;
                for (kw = 0; kw < g.KW; kw++) {
                    int64_t iw = ow * g.s - g.p + kw;
                    if (iw < 0 || iw >= g.W) continue;
                    tg[nq] = (pl * g.H + ih) * g.W + iw;
                    val[nq++] = v;
                }
            }
        }
        vt__scatter_sum(k, &k->out[0], nq, tg, val);
    }
}

/* Batch normalisation is two ops. BN_STATS: x (N,C,H,W) -> (2,C), per
   channel c the mean and the biased variance of its M = N H W values
   (gathered in (n, h, w) order), with LAYERNORM's row statistics and
   bounds (vt__ln_row): e(mean) = dmu, e(var) = dvar. Those 2C values are
   the op's only bounded outputs: everything downstream of them is a fixed
   sequence of IEEE operations on binary32 values.
   Backward: dx_i = g_mean / M + (2 g_var / M) (x_i - mean), e = 0 (mean
   the op's binary32 output: the variance's derivative 2 (x_i - mu) / M).
   BATCHNORM2D: x, w, b (C), stats (2,C) (from BN_STATS in training, the
   running statistics in evaluation): y = ((x - mean) rs) w + b with rs =
   1 / sqrt(var + eps): e = 0.
   Backward, per channel (k = w rs, xhat_i = (x_i - mean) rs; every term
   below is the same on every machine, so each sum of M terms [and the old
   value] is bounded by vt__sum_bound):
     dx_i = dy_i k (e = 0; the statistics' share comes through BN_STATS);
     dw_c = sum dy_i xhat_i; db_c = sum dy_i;
     g_mean = sum -(dy_i k); g_var = sum (dy_i q)(x_i - mean), q = -w rs^3 / 2.
   Running statistics (in BATCHNORM2D's forward in training: the point
   bn_stats.running, the (2,C) state updated in place from the binary32
   statistics, momentum m, r = M / (M - 1) for the unbiased variance):
     mean' = (1 - m) mean_run + m mean, var' = (1 - m) var_run + m (var r): e = 0. */
typedef struct { vt__kern *k; int64_t N, C, HW, M; double eps; double *scr; } vt__bn_job;

/* the M values of channel ch of a (N,C,H,W) tensor, in (n, h, w) order */
static void vt__bn_gather(const vt__bn_job *j, const double *X, int64_t ch, double *out) {
    int64_t n;
    for (n = 0; n < j->N; n++) memcpy(out + n * j->HW, X + (n * j->C + ch) * j->HW, sizeof(double) * (size_t)j->HW);
}

/* Whether a sum of n binary64 terms t (and old) is exact in any order: the
   verdict of vt__sum_bound(o, n', mag, L) for L the lowest set bit of all
   the finite nonzero values (old and the terms), without finding L.
   mag = sum |t| + |old| as the caller computed it. With mag' = mag (1 +
   2^-40) finite and nonzero and 2^E <= mag' < 2^(E+1), vt__sum_bound's test
   2^min(L + 53, 1100) > mag' holds exactly when L + 53 >= E + 1 (a power of
   two above mag' is at least 2^(E+1); the cap 1100 > 1024 passes every
   finite mag'), that is when every finite value is a multiple of 2^L0, L0 =
   E - 52 (L >= L0 when every value's lowest bit is). mag = 0: every value is
   zero, L = none, exact. L0 <= -1074: every finite value is a multiple of
   2^-1074, exact. Else v is a multiple of 2^L0 when y = v 2^-L0 is an
   integer: |v| <= mag' < 2^(L0 + 53), so |y| < 2^53; scaling by a power of
   two is exact except in the subnormal range, where |y| < 2^-1022 is an
   integer only when it is 0, and a nonzero v whose y rounds to 0 is no
   multiple of 2^L0 > |v| (hence the test y == trunc(y) and not (y == 0,
   v != 0)); 2^-L0 up to 2^1073 is applied as two factors (both scale up:
   exact). A non-finite mag (a term or old non-finite, or an overflow): the
   test fails for every L, exact only when no value is finite and nonzero
   (vt__lsb ignores non-finite values). Stops at the first value that is
   not a multiple (binary64 products: usually the first). */
static int vt__sum_exact(const double *t, int64_t n, double old, double mag) {
    double m2 = mag * (1 + 0x1p-40), f1, f2;
    int64_t i = 0;
    int L0;
    if (!(m2 < INFINITY)) { /* NaN or infinite */
        if (old != 0 && isfinite(old)) return 0;
        for (i = 0; i < n; i++)
            if (t[i] != 0 && isfinite(t[i])) return 0;
        return 1;
    }
    if (m2 == 0) return 1;
    L0 = vt__fexp(m2) - 1 - 52;
    if (L0 <= -1074) return 1;
    if (old != 0 && vt__lsb(old) < L0) return 0;
    f1 = -L0 > 1023 ? 0x1p1023 : vt__pow2(-L0);
    f2 = -L0 > 1023 ? vt__pow2(-L0 - 1023) : 1.0;
#ifdef VT__AVX2
    {
        const __m256d v1 = _mm256_set1_pd(f1), v2 = _mm256_set1_pd(f2), z = _mm256_setzero_pd();
        for (; i + 4 <= n; i += 4) {
            __m256d v = _mm256_loadu_pd(t + i), y = _mm256_mul_pd(_mm256_mul_pd(v, v1), v2);
            __m256d ok = _mm256_cmp_pd(y, _mm256_round_pd(y, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), _CMP_EQ_OQ);
            __m256d lost = _mm256_and_pd(_mm256_cmp_pd(y, z, _CMP_EQ_OQ), _mm256_cmp_pd(v, z, _CMP_NEQ_UQ));
            if (_mm256_movemask_pd(_mm256_andnot_pd(lost, ok)) != 15) return 0;
        }
    }
#endif
    for (; i < n; i++) {
        double y = t[i] * f1 * f2;
        if (y != trunc(y) || (y == 0 && t[i] != 0)) return 0;
    }
    return 1;
}

/* a sum of the M terms t (the same on every machine) into output o at ch */
static void vt__bn_sum(const vt__bn_job *j, const vt__kout *o, int64_t ch, const double *t, uint64_t key) {
    double old = o->acc ? o->x[ch] : 0, v, mag = fabs(old);
    int64_t i = 0;
    v = vt__rsum(j->k->o, key, t, 1, j->M);
    o->x[ch] = o->acc ? VT__ACC(j->k->o, old + v) : v;
    if (!o->e) return;
    { /* sum |t| as four interleaved sums: no more rounding (gamma(M/4 + 2) relative at worst) than the serial sum they replace */
        double m4[4] = {0, 0, 0, 0};
#ifdef VT__AVX2
        { /* the four sums as the four lanes of one vector: the same additions */
            const __m256d sign = _mm256_set1_pd(-0.0);
            __m256d acc = _mm256_setzero_pd();
            for (; i + 4 <= j->M; i += 4) acc = _mm256_add_pd(acc, _mm256_andnot_pd(sign, _mm256_loadu_pd(t + i)));
            _mm256_storeu_pd(m4, acc);
        }
#endif
        for (; i + 4 <= j->M; i += 4) {
            m4[0] += fabs(t[i]); m4[1] += fabs(t[i + 1]); m4[2] += fabs(t[i + 2]); m4[3] += fabs(t[i + 3]);
        }
        for (; i < j->M; i++) m4[0] += fabs(t[i]);
        mag += (m4[0] + m4[1]) + (m4[2] + m4[3]);
    }
    o->e[ch] = vt__sum_exact(t, j->M, old, mag) ? 0 : vt__gsum(j->k->o, j->M + (o->acc ? 1 : 0)) * mag;
}

static void vt__bnstat_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__bn_job *j = (vt__bn_job *)arg;
    vt__kern *k = j->k;
    double *xg = j->scr + (int64_t)tid * 2 * j->M, *d = xg + j->M;
    const double *X = vt__d(k->t->src[0]);
    int64_t ch, n, h;
    for (ch = lo; ch < hi; ch++) {
        vt__bn_gather(j, X, ch, xg);
        if (!k->bwd) {
            vt__ln_stats s = vt__ln_row(k->o, (uint64_t)ch, xg, j->M, 1.0, d, 1, NULL);
            const vt__kout *o = &k->out[0];
            o->x[ch] = s.mu;
            o->x[j->C + ch] = s.var;
            if (o->e) { o->e[ch] = s.dmu; o->e[j->C + ch] = s.dvar; }
        } else {
            const double *g = vt__d(k->t->grad), *st = vt__d(k->t);
            double a = g[ch] / (double)j->M, bq = 2 * g[j->C + ch] / (double)j->M, mean = st[ch];
            for (n = 0; n < j->N; n++)
                for (h = 0; h < j->HW; h++) {
                    int64_t at = (n * j->C + ch) * j->HW + h;
                    vt__put(&k->out[0], at, VT__ACC(k->o, a + VT__ACC(k->o, bq * VT__ACC(k->o, X[at] - mean))), 0);
                }
        }
    }
}

static void vt__bn_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__bn_job *j = (vt__bn_job *)arg;
    vt__kern *k = j->k;
    vt_tensor *t = k->t;
    const double *X = vt__d(t->src[0]), *Wc = vt__d(t->src[1]), *Bc = vt__d(t->src[2]), *st = vt__d(t->src[3]);
    double *t1 = j->scr + (int64_t)tid * 2 * j->M, *t2 = t1 + j->M;
    int64_t ch, n, h, i;
    for (ch = lo; ch < hi; ch++) {
        double w = Wc[ch], mean = st[ch], rs = VT__ACC(k->o, 1.0 / sqrt(VT__ACC(k->o, st[j->C + ch] + j->eps)));
        if (!k->bwd) {
            for (n = 0; n < j->N; n++)
                for (h = 0; h < j->HW; h++) {
                    int64_t at = (n * j->C + ch) * j->HW + h;
                    double xh = VT__ACC(k->o, VT__ACC(k->o, X[at] - mean) * rs);
                    k->out[0].x[at] = VT__ACC(k->o, xh * w) + Bc[ch];
                }
            if (k->out[1].x) { /* the running statistics */
                double m = t->fparam[1], r = j->M > 1 ? (double)j->M / (double)(j->M - 1) : 1.0;
                double *rm = k->out[1].x;
                rm[ch] = VT__ACC(k->o, (1 - m) * rm[ch]) + VT__ACC(k->o, m * mean);
                rm[j->C + ch] = VT__ACC(k->o, (1 - m) * rm[j->C + ch]) + VT__ACC(k->o, m * VT__ACC(k->o, st[j->C + ch] * r));
            }
            continue;
        }
        {
            const double *DY = vt__d(t->grad);
            double kk = VT__ACC(k->o, w * rs), q = VT__ACC(k->o, -0.5 * w * rs * rs * rs);
            vt__bn_gather(j, DY, ch, t2);
            if (k->out[0].x)
                for (n = 0; n < j->N; n++)
                    for (h = 0; h < j->HW; h++) {
                        int64_t at = (n * j->C + ch) * j->HW + h;
                        vt__put(&k->out[0], at, VT__ACC(k->o, DY[at] * kk), 0);
                    }
            if (k->out[1].x) {
                for (n = 0; n < j->N; n++)
                    for (h = 0; h < j->HW; h++) {
                        int64_t at = (n * j->C + ch) * j->HW + h;
                        t1[n * j->HW + h] = VT__ACC(k->o, DY[at] * VT__ACC(k->o, VT__ACC(k->o, X[at] - mean) * rs));
                    }
                vt__bn_sum(j, &k->out[1], ch, t1, (uint64_t)ch);
            }
            if (k->out[2].x) vt__bn_sum(j, &k->out[2], ch, t2, (uint64_t)ch ^ 0x3C3C);
            if (k->out[3].x) {
                const vt__kout *o = &k->out[3];
                vt__kout om = *o, ov = *o;
                for (i = 0; i < j->M; i++) t1[i] = -VT__ACC(k->o, t2[i] * kk);
                vt__bn_sum(j, &om, ch, t1, (uint64_t)ch ^ 0x5A5A);
                for (n = 0; n < j->N; n++)
                    for (h = 0; h < j->HW; h++) {
                        int64_t at = (n * j->C + ch) * j->HW + h;
                        t1[n * j->HW + h] = VT__ACC(k->o, VT__ACC(k->o, DY[at] * q) * VT__ACC(k->o, X[at] - mean));
                    }
                ov.x = o->x + j->C;
                ov.e = o->e ? o->e + j->C : NULL;
                vt__bn_sum(j, &ov, ch, t1, (uint64_t)ch ^ 0x6969);
            }
        }
    }
}

static void vt__k_batchnorm(vt__kern *k) {
    vt__bn_job j;
    vt_tensor *x = k->t->src[0];
    j.k = k;
    j.N = x->ne[0]; j.C = x->ne[1]; j.HW = x->ne[2] * x->ne[3]; j.M = j.N * j.HW;
    j.eps = k->t->fparam[0];
    /* bounded: the statistics, and BATCHNORM2D's dw, db and dstats */
    if (k->t->op == VT_OP_BATCHNORM2D || k->bwd) vt__same_everywhere(&k->out[0]);
    if (k->t->op == VT_OP_BATCHNORM2D && !k->bwd) vt__same_everywhere(&k->out[1]);
    j.scr = (double *)vt__scratch(k->c, sizeof(double) * (size_t)(2 * j.M * k->c->pool.n));
    if (!j.scr) return;
    vt__parallel(&k->c->pool, j.C, j.C * j.M * 10, k->t->op == VT_OP_BN_STATS ? vt__bnstat_task : vt__bn_task, &j);
}

/* the CPU backend's dispatch: one switch over ops for forward and backward */
static void vt__cpu_kernel(vt__kern *k) {
    switch (k->t->op) {
    case VT_OP_COPY: vt__k_copy(k); break;
    case VT_OP_VIEW: if (k->bwd) vt__k_view_bwd(k); break;
    case VT_OP_ADD: case VT_OP_SUB: case VT_OP_MUL:
        if (k->bwd) vt__k_binary_bwd(k); else vt__k_binary_fwd(k);
        break;
    case VT_OP_SCALE: vt__k_scale(k); break;
    case VT_OP_MATMUL: vt__k_matmul(k); break;
    case VT_OP_LINEAR: vt__k_linear(k); break;
    case VT_OP_RELU: vt__k_relu(k); break;
    case VT_OP_GELU: {
        /* the primary forward run stores sigmoid(2z) for the backward (not
           the calibration's reruns in other orders) */
        vt__job j;
        int64_t n = vt_numel(k->t);
        if (!k->bwd && k->o == &k->c->ord) k->t->extra = vt__arena_alloc(&k->c->step, sizeof(double) * (size_t)(n ? n : 1));
        j.k = k; j.R = n; j.C = 1;
        j.p = (k->bwd || k->o == &k->c->ord) ? k->t->extra : NULL;
        vt__same_everywhere(&k->out[0]);
        vt__parallel_ew(k, n, n * 40, vt__gelu_task, &j);
        break;
    }
    case VT_OP_TANH:
        vt__same_everywhere(&k->out[0]);
        vt__k_elementwise(k, vt__tanh_task, 20);
        break;
    case VT_OP_SOFTMAX: case VT_OP_LOG_SOFTMAX: vt__k_softmax(k); break;
    case VT_OP_CROSS_ENTROPY: vt__k_cross_entropy(k); break;
    case VT_OP_MSE: vt__k_mse(k); break;
    case VT_OP_LAYERNORM: vt__k_layernorm(k); break;
    case VT_OP_EMBEDDING: vt__k_embedding(k); break;
    case VT_OP_ATT_SCORES: vt__k_attention(k, vt__att_scores_task); break;
    case VT_OP_ATT_SOFTMAX: vt__k_attention(k, vt__att_softmax_task); break;
    case VT_OP_ATT_MIX: vt__k_attention(k, vt__att_mix_task); break;
    case VT_OP_DROPOUT: vt__k_dropout(k); break;
    case VT_OP_SUM: case VT_OP_MEAN: vt__k_reduce(k); break;
    case VT_OP_CONCAT: vt__k_concat(k); break;
    case VT_OP_SPLIT: vt__k_split(k); break;
    case VT_OP_CONV2D: vt__k_conv2d(k); break;
    case VT_OP_BATCHNORM2D: case VT_OP_BN_STATS: vt__k_batchnorm(k); break;
    case VT_OP_MAXPOOL2D: vt__k_maxpool(k); break;
    case VT_OP_AVGPOOL2D: vt__k_avgpool(k); break;
    default: vt__fail(k->c, VT_ERR_STATE, "cpu backend: no kernel for op %s", vt_op_name(k->t->op));
    }
}

/* ==========================================================================
   >>ops  constructors: check shapes, make the node, record it, run it

   HOW TO ADD AN OP. An op lives in these places; the tests named fail
   until each is done.
     1. VT__OP_LIST (public types): a row at the END with the next id, the
        next op-table revision, its flags (VT__OPF_BWD_SPARSE if its
        backward writes only part of a gradient) and slot names if it is an
        engine point; raise VT__OP_TABLE; add the id to op_ids_pinned
        (tests/test_core.c). Never renumber or reuse an id: logs carry them.
     2. Its constructor: the declaration under "ops" in >>public functions,
        the definition below (check every shape and argument with a message
        that names the op, make the node with vt__node, vt__run it).
     3. Its CPU kernel, forward and backward, in >>cpu, with its bound
        derived in a comment beside it (the ingredients are in >>rounding);
        a case in vt__cpu_kernel's switch. An output that is a sum of
        products computed with vt__mm is a correctly rounded product
        (>>rounding) by itself; the CUDA kernel must then set crp too.
     4. Its CUDA kernel in vtrain_cuda.cu.h: an argument struct (>>cuda-args),
        the kernel beside a note naming the CPU kernel it mirrors
        (>>cuda-kernels), its row in VT__KLIST, the host side and a case in
        vt__cu_kernel's switch (>>cuda-backend).
     5. A finite-difference gradient check in tests/test_grad.c
        (every_op_covered there fails without one).
     6. The all-ops program, tests/allops.h: test_replay replays it across
        orders and checks the op's bound against other orders, test_cuda
        compares its kernels with the CPU's (every_op_covered in both).
     7. A PyTorch reference case: tests/fixtures/make_reference.py writes
        reference.txt, tests/test_reference.c compares.
     8. The README's API table.
   ========================================================================== */

static vt_dtype vt__vdt(const vt_ctx *c) { return c->d.mode == VT_MODE_FP64 ? VT_F64 : VT_F32; }

static int vt__need(vt_ctx *c, const vt_tensor *t, const char *op, const char *arg) {
    if (c->status != VT_OK) return 0;
    if (!t) { vt__fail(c, VT_ERR_ARG, "%s: %s is NULL", op, arg); return 0; }
    if (t->dtype == VT_I32) { vt__fail(c, VT_ERR_ARG, "%s: %s must be a real tensor, it holds int32", op, arg); return 0; }
    return 1;
}

/* Every op's node. Ops take no empty operand and make no empty result: a
   zero-size dimension would divide by zero in a mean, a layernorm over C =
   0 or a row count, and has no use in training; refused here once, for
   every op, with the op and the operand named. */
static const char *vt__operand(vt_op op, int k) { /* as the constructors name them */
    static const char *const ab[] = {"a", "b", "?"}, *const lin[] = {"x", "w", "bias"}, *const ce[] = {"logits", "targets", "?"},
                             *const mse[] = {"pred", "target", "?"}, *const ln[] = {"x", "w", "b"}, *const emb[] = {"table", "idx", "?"},
                             *const mix[] = {"att", "qkv", "?"}, *const x[] = {"x", "?", "?"}, *const qkv[] = {"qkv", "?", "?"};
    switch (op) {
    case VT_OP_ADD: case VT_OP_SUB: case VT_OP_MUL: case VT_OP_MATMUL: case VT_OP_CONCAT: return ab[k];
    case VT_OP_LINEAR: return lin[k];
    case VT_OP_CROSS_ENTROPY: return ce[k];
    case VT_OP_MSE: return mse[k];
    case VT_OP_LAYERNORM: return ln[k];
    case VT_OP_EMBEDDING: return emb[k];
    case VT_OP_ATT_SCORES: return qkv[k];
    case VT_OP_ATT_MIX: return mix[k];
    case VT_OP_CONV2D: return lin[k];
    case VT_OP_BATCHNORM2D: return ln[k];
    default: return x[k];
    }
}

static vt_tensor *vt__node(vt_ctx *c, vt_op op, int ndim, const int64_t *ne, vt_tensor *s0, vt_tensor *s1, vt_tensor *s2) {
    vt_tensor *t, *src[3];
    int k, d;
    src[0] = s0; src[1] = s1; src[2] = s2;
    if (c->status != VT_OK) return NULL;
    for (k = 0; k < 3; k++)
        if (src[k] && vt_numel(src[k]) == 0) {
            char sh[64];
            vt__shape_str(src[k], sh, sizeof sh);
            vt__fail(c, VT_ERR_SHAPE, "%s: %s has shape %s, no elements: ops need non-empty tensors", vt_op_name(op),
                     vt__operand(op, k), sh);
            return NULL;
        }
    if (!vt__check_shape(c, ndim, ne, vt_op_name(op))) return NULL;
    for (d = 0; d < ndim; d++)
        if (ne[d] == 0) {
            vt__fail(c, VT_ERR_SHAPE, "%s: the result's dimension %d would be 0: ops need non-empty tensors", vt_op_name(op), d);
            return NULL;
        }
    t = vt__mk(c, vt__vdt(c), ndim, ne, 0, 2);
    if (!t) return NULL;
    t->op = op;
    t->src[0] = s0; t->src[1] = s1; t->src[2] = s2;
    return t;
}

static vt_tensor *vt__run(vt_ctx *c, vt_tensor *t) {
    if (!t) return NULL;
    vt__record(c, t);
    vt__exec(c, t);
    return c->status == VT_OK ? t : NULL;
}

VTDEF vt_tensor *vt_contiguous(vt_ctx *c, vt_tensor *t) {
    vt_tensor *r;
    if (c->status != VT_OK || !t) return NULL;
    if (vt_is_contiguous(t)) return t;
    r = vt__mk(c, t->dtype, t->ndim, t->ne, 0, 1);
    if (!r) return NULL;
    if (t->dtype == VT_I32) {
        int64_t i, n = vt_numel(t);
        const int32_t *src = vt__hi(c, t);
        int32_t *dst = vt__hwi(c, r);
        for (i = 0; i < n; i++) dst[i] = src[vt__off(t, i)];
        return r;
    }
    r->op = VT_OP_COPY;
    r->src[0] = t;
    return vt__run(c, r);
}

static vt_tensor *vt__contig(vt_ctx *c, vt_tensor *t) { return t ? vt_contiguous(c, t) : NULL; }

/* --- views -------------------------------------------------------------------- */

static vt_tensor *vt__view(vt_ctx *c, vt_tensor *base, int ndim, const int64_t *ne, const int64_t *nb, int64_t offs) {
    vt_tensor *t;
    int i;
    if (!base) return NULL;
    t = vt__mk(c, base->dtype, ndim, ne, 0, 0);
    if (!t) return NULL;
    for (i = 0; i < ndim; i++) t->nb[i] = nb[i];
    t->op = VT_OP_VIEW;
    t->src[0] = base;
    t->view_src = base;
    t->view_offs = offs;
    t->data = base->dtype == VT_I32 ? (void *)(vt__i(base) + offs) : (void *)(vt__d(base) + offs);
    vt__record(c, t);
    return t;
}

VTDEF vt_tensor *vt_reshape(vt_ctx *c, vt_tensor *t, int ndim, const int64_t *ne) {
    int64_t nb[VT_MAX_DIMS], n = 1, s = 1;
    int i;
    if (c->status != VT_OK || !t) return NULL;
    if (!vt__check_shape(c, ndim, ne, "reshape")) return NULL;
    for (i = 0; i < ndim; i++) n *= ne[i];
    if (n != vt_numel(t)) {
        char a[64];
        vt__shape_str(t, a, sizeof a);
        vt__fail(c, VT_ERR_SHAPE, "reshape: %s has %lld elements, the new shape %lld", a, (long long)vt_numel(t), (long long)n);
        return NULL;
    }
    t = vt__contig(c, t);
    for (i = ndim - 1; i >= 0; i--) { nb[i] = s; s *= ne[i]; }
    return vt__view(c, t, ndim, ne, nb, 0);
}

VTDEF vt_tensor *vt_permute(vt_ctx *c, vt_tensor *t, const int *perm) {
    int64_t ne[VT_MAX_DIMS], nb[VT_MAX_DIMS];
    int i, seen = 0;
    memset(ne, 0, sizeof ne);
    memset(nb, 0, sizeof nb);
    if (c->status != VT_OK || !t) return NULL;
    if (!perm) { vt__fail(c, VT_ERR_ARG, "permute: perm is NULL"); return NULL; }
    for (i = 0; i < t->ndim; i++) {
        if (perm[i] < 0 || perm[i] >= t->ndim || (seen & (1 << perm[i]))) {
            vt__fail(c, VT_ERR_ARG, "permute: not a permutation of %d dimensions", t->ndim);
            return NULL;
        }
        seen |= 1 << perm[i];
    }
    t = vt__contig(c, t);
    if (!t) return NULL;
    for (i = 0; i < t->ndim; i++) { ne[i] = t->ne[perm[i]]; nb[i] = t->nb[perm[i]]; }
    return vt__view(c, t, t->ndim, ne, nb, 0);
}

VTDEF vt_tensor *vt_transpose(vt_ctx *c, vt_tensor *t, int d0, int d1) {
    int perm[VT_MAX_DIMS], i;
    if (c->status != VT_OK || !t) return NULL;
    if (d0 < 0 || d1 < 0 || d0 >= t->ndim || d1 >= t->ndim) {
        vt__fail(c, VT_ERR_ARG, "transpose: dims %d, %d out of range for %d dimensions", d0, d1, t->ndim);
        return NULL;
    }
    for (i = 0; i < t->ndim; i++) perm[i] = i;
    perm[d0] = d1; perm[d1] = d0;
    return vt_permute(c, t, perm);
}

VTDEF vt_tensor *vt_slice(vt_ctx *c, vt_tensor *t, int dim, int64_t start, int64_t len) {
    int64_t ne[VT_MAX_DIMS];
    int i;
    if (c->status != VT_OK || !t) return NULL;
    if (dim < 0 || dim >= t->ndim || start < 0 || len < 0 || start > t->ne[dim] || len > t->ne[dim] - start) {
        vt__fail(c, VT_ERR_ARG, "slice: start %lld, length %lld of dim %d is outside its size", (long long)start, (long long)len, dim);
        return NULL;
    }
    t = vt__contig(c, t);
    if (!t) return NULL;
    for (i = 0; i < t->ndim; i++) ne[i] = t->ne[i];
    ne[dim] = len;
    return vt__view(c, t, t->ndim, ne, t->nb, start * t->nb[dim]);
}

/* --- elementwise -------------------------------------------------------------- */

static vt_tensor *vt__binary(vt_ctx *c, vt_op op, vt_tensor *a, vt_tensor *b) {
    int64_t ne[VT_MAX_DIMS];
    int nd, i;
    const char *nm = vt_op_name(op);
    if (!vt__need(c, a, nm, "a") || !vt__need(c, b, nm, "b")) return NULL;
    a = vt__contig(c, a);
    b = vt__contig(c, b);
    if (!a || !b) return NULL;
    nd = VT__MAX(a->ndim, b->ndim);
    for (i = 0; i < nd; i++) {
        int ia = a->ndim - nd + i, ib = b->ndim - nd + i;
        int64_t x = ia >= 0 ? a->ne[ia] : 1, y = ib >= 0 ? b->ne[ib] : 1;
        if (x != y && x != 1 && y != 1) {
            char sa[64], sb[64];
            vt__shape_str(a, sa, sizeof sa);
            vt__shape_str(b, sb, sizeof sb);
            vt__fail(c, VT_ERR_SHAPE, "%s: shapes %s and %s do not broadcast (dim %d: %lld vs %lld)", nm, sa, sb, i,
                     (long long)x, (long long)y);
            return NULL;
        }
        ne[i] = x == 1 ? y : x;
    }
    return vt__run(c, vt__node(c, op, nd, ne, a, b, NULL));
}

VTDEF vt_tensor *vt_add(vt_ctx *c, vt_tensor *a, vt_tensor *b) { return vt__binary(c, VT_OP_ADD, a, b); }
VTDEF vt_tensor *vt_sub(vt_ctx *c, vt_tensor *a, vt_tensor *b) { return vt__binary(c, VT_OP_SUB, a, b); }
VTDEF vt_tensor *vt_mul(vt_ctx *c, vt_tensor *a, vt_tensor *b) { return vt__binary(c, VT_OP_MUL, a, b); }

static vt_tensor *vt__unary(vt_ctx *c, vt_op op, vt_tensor *x) {
    vt_tensor *t;
    if (!vt__need(c, x, vt_op_name(op), "x")) return NULL;
    x = vt__contig(c, x);
    t = vt__node(c, op, x ? x->ndim : 0, x ? x->ne : NULL, x, NULL, NULL);
    return t;
}

VTDEF vt_tensor *vt_scale(vt_ctx *c, vt_tensor *a, double s) {
    vt_tensor *t = vt__unary(c, VT_OP_SCALE, a);
    if (t) t->fparam[0] = s;
    return vt__run(c, t);
}
VTDEF vt_tensor *vt_relu(vt_ctx *c, vt_tensor *x) { return vt__run(c, vt__unary(c, VT_OP_RELU, x)); }
VTDEF vt_tensor *vt_gelu(vt_ctx *c, vt_tensor *x) { return vt__run(c, vt__unary(c, VT_OP_GELU, x)); }
VTDEF vt_tensor *vt_tanh(vt_ctx *c, vt_tensor *x) { return vt__run(c, vt__unary(c, VT_OP_TANH, x)); }
/* an op over the last dimension needs one */
static int vt__need_dim(vt_ctx *c, const vt_tensor *t, const char *op, const char *arg) {
    if (!vt__need(c, t, op, arg)) return 0;
    if (t->ndim < 1) { vt__fail(c, VT_ERR_SHAPE, "%s: %s is a scalar (0 dimensions), the op works over its last dimension", op, arg); return 0; }
    return 1;
}
VTDEF vt_tensor *vt_softmax(vt_ctx *c, vt_tensor *x) {
    return vt__need_dim(c, x, "softmax", "x") ? vt__run(c, vt__unary(c, VT_OP_SOFTMAX, x)) : NULL;
}
VTDEF vt_tensor *vt_log_softmax(vt_ctx *c, vt_tensor *x) {
    return vt__need_dim(c, x, "log_softmax", "x") ? vt__run(c, vt__unary(c, VT_OP_LOG_SOFTMAX, x)) : NULL;
}

VTDEF vt_tensor *vt_dropout(vt_ctx *c, vt_tensor *x, double p, uint64_t seed) {
    vt_tensor *t;
    if (!vt__need(c, x, "dropout", "x")) return NULL;
    if (!(p >= 0 && p < 1)) { vt__fail(c, VT_ERR_ARG, "dropout: p = %g is outside [0, 1)", p); return NULL; }
    if (p == 0 || !c->grad_enabled) return x; /* evaluation: identity */
    t = vt__unary(c, VT_OP_DROPOUT, x);
    if (t) { t->fparam[0] = p; t->iparam[0] = (int64_t)seed; t->iparam[1] = c->step_no; }
    return vt__run(c, t);
}

/* --- matmul, linear --------------------------------------------------------- */

VTDEF vt_tensor *vt_matmul(vt_ctx *c, vt_tensor *a, vt_tensor *b, int ta, int tb) {
    int64_t ne[VT_MAX_DIMS], M, K, Kb, N;
    int i;
    vt_tensor *t;
    if (!vt__need(c, a, "matmul", "a") || !vt__need(c, b, "matmul", "b")) return NULL;
    a = vt__contig(c, a);
    b = vt__contig(c, b);
    if (!a || !b) return NULL;
    if (a->ndim < 2 || b->ndim < 2) {
        vt__fail(c, VT_ERR_SHAPE, "matmul: operands need at least 2 dimensions (got %d and %d)", a->ndim, b->ndim);
        return NULL;
    }
    M = ta ? a->ne[a->ndim - 1] : a->ne[a->ndim - 2];
    K = ta ? a->ne[a->ndim - 2] : a->ne[a->ndim - 1];
    Kb = tb ? b->ne[b->ndim - 1] : b->ne[b->ndim - 2];
    N = tb ? b->ne[b->ndim - 2] : b->ne[b->ndim - 1];
    if (K != Kb) {
        char sa[64], sb[64];
        vt__shape_str(a, sa, sizeof sa);
        vt__shape_str(b, sb, sizeof sb);
        vt__fail(c, VT_ERR_SHAPE, "matmul: inner dimensions differ: a %s%s has K=%lld, b %s%s has K=%lld", sa, ta ? "^T" : "",
                 (long long)K, sb, tb ? "^T" : "", (long long)Kb);
        return NULL;
    }
    if (b->ndim > 2) {
        int same = b->ndim == a->ndim;
        for (i = 0; same && i < a->ndim - 2; i++) same = a->ne[i] == b->ne[i];
        if (!same) {
            vt__fail(c, VT_ERR_SHAPE, "matmul: batch dimensions of a and b differ (b may also be 2-D, shared)");
            return NULL;
        }
    }
    for (i = 0; i < a->ndim - 2; i++) ne[i] = a->ne[i];
    ne[a->ndim - 2] = M;
    ne[a->ndim - 1] = N;
    t = vt__node(c, VT_OP_MATMUL, a->ndim, ne, a, b, NULL);
    if (t) { t->iparam[0] = ta; t->iparam[1] = tb; }
    return vt__run(c, t);
}

VTDEF vt_tensor *vt_linear(vt_ctx *c, vt_tensor *x, vt_tensor *w, vt_tensor *bias) {
    int64_t ne[VT_MAX_DIMS];
    int i;
    if (!vt__need_dim(c, x, "linear", "x") || !vt__need(c, w, "linear", "w")) return NULL;
    x = vt__contig(c, x);
    w = vt__contig(c, w);
    if (bias) bias = vt__contig(c, bias);
    if (!x || !w) return NULL;
    if (w->ndim != 2 || x->ne[x->ndim - 1] != w->ne[1] || (bias && (bias->ndim != 1 || bias->ne[0] != w->ne[0]))) {
        char sx[64], sw[64], sb[64];
        vt__shape_str(x, sx, sizeof sx);
        vt__shape_str(w, sw, sizeof sw);
        vt__shape_str(bias, sb, sizeof sb);
        vt__fail(c, VT_ERR_SHAPE, "linear: x %s, w %s, bias %s: need x (...,IN), w (OC,IN), bias (OC)", sx, sw,
                 bias ? sb : "none");
        return NULL;
    }
    for (i = 0; i < x->ndim; i++) ne[i] = x->ne[i];
    ne[x->ndim - 1] = w->ne[0];
    return vt__run(c, vt__node(c, VT_OP_LINEAR, x->ndim, ne, x, w, bias));
}

/* --- losses and normalisation ---------------------------------------------------- */

VTDEF vt_tensor *vt_cross_entropy(vt_ctx *c, vt_tensor *logits, vt_tensor *targets) {
    int64_t one = 1;
    if (!vt__need_dim(c, logits, "cross_entropy", "logits")) return NULL;
    if (!targets || targets->dtype != VT_I32) {
        vt__fail(c, VT_ERR_ARG, "cross_entropy: targets must be an int32 tensor");
        return NULL;
    }
    logits = vt__contig(c, logits);
    targets = vt_contiguous(c, targets);
    if (!logits || !targets) return NULL;
    if (vt_numel(targets) * logits->ne[logits->ndim - 1] != vt_numel(logits)) {
        char sl[64], st[64];
        vt__shape_str(logits, sl, sizeof sl);
        vt__shape_str(targets, st, sizeof st);
        vt__fail(c, VT_ERR_SHAPE, "cross_entropy: logits %s need one target per row, targets are %s", sl, st);
        return NULL;
    }
    return vt__run(c, vt__node(c, VT_OP_CROSS_ENTROPY, 1, &one, logits, targets, NULL));
}

VTDEF vt_tensor *vt_mse(vt_ctx *c, vt_tensor *pred, vt_tensor *target) {
    int64_t one = 1;
    if (!vt__need(c, pred, "mse", "pred") || !vt__need(c, target, "mse", "target")) return NULL;
    pred = vt__contig(c, pred);
    target = vt__contig(c, target);
    if (!pred || !target) return NULL;
    if (vt_numel(pred) != vt_numel(target)) {
        vt__fail(c, VT_ERR_SHAPE, "mse: pred has %lld elements, target %lld", (long long)vt_numel(pred), (long long)vt_numel(target));
        return NULL;
    }
    return vt__run(c, vt__node(c, VT_OP_MSE, 1, &one, pred, target, NULL));
}

VTDEF vt_tensor *vt_layernorm(vt_ctx *c, vt_tensor *x, vt_tensor *w, vt_tensor *b, double eps) {
    vt_tensor *t;
    if (!vt__need_dim(c, x, "layernorm", "x") || !vt__need(c, w, "layernorm", "w") || !vt__need(c, b, "layernorm", "b")) return NULL;
    x = vt__contig(c, x);
    w = vt__contig(c, w);
    b = vt__contig(c, b);
    if (!x || !w || !b) return NULL;
    if (w->ndim != 1 || b->ndim != 1 || w->ne[0] != x->ne[x->ndim - 1] || b->ne[0] != w->ne[0]) {
        vt__fail(c, VT_ERR_SHAPE, "layernorm: w and b must be (C) with C = %lld, the last dim of x", (long long)x->ne[x->ndim - 1]);
        return NULL;
    }
    if (!(eps > 0) || !isfinite(eps)) { vt__fail(c, VT_ERR_ARG, "layernorm: eps = %g must be positive and finite", eps); return NULL; }
    t = vt__node(c, VT_OP_LAYERNORM, x->ndim, x->ne, x, w, b);
    if (t) t->fparam[0] = eps;
    return vt__run(c, t);
}

VTDEF vt_tensor *vt_embedding(vt_ctx *c, vt_tensor *table, vt_tensor *idx) {
    int64_t ne[VT_MAX_DIMS];
    int i;
    if (!vt__need(c, table, "embedding", "table")) return NULL;
    if (!idx || idx->dtype != VT_I32) { vt__fail(c, VT_ERR_ARG, "embedding: idx must be an int32 tensor"); return NULL; }
    table = vt__contig(c, table);
    idx = vt_contiguous(c, idx);
    if (!table || !idx) return NULL;
    if (table->ndim != 2 || idx->ndim >= VT_MAX_DIMS) {
        vt__fail(c, VT_ERR_SHAPE, "embedding: table must be (V,C) and idx have at most %d dims", VT_MAX_DIMS - 1);
        return NULL;
    }
    for (i = 0; i < idx->ndim; i++) ne[i] = idx->ne[i];
    ne[idx->ndim] = table->ne[1];
    return vt__run(c, vt__node(c, VT_OP_EMBEDDING, idx->ndim + 1, ne, table, idx, NULL));
}

VTDEF vt_tensor *vt_attention(vt_ctx *c, vt_tensor *qkv, int nh) {
    int64_t B, T, C, ne[4];
    vt_tensor *pre, *att, *out;
    if (!vt__need(c, qkv, "attention", "qkv")) return NULL;
    qkv = vt__contig(c, qkv);
    if (!qkv) return NULL;
    if (qkv->ndim != 3 || qkv->ne[2] % 3 != 0 || nh <= 0 || (qkv->ne[2] / 3) % nh != 0) {
        char s[64];
        vt__shape_str(qkv, s, sizeof s);
        vt__fail(c, VT_ERR_SHAPE, "attention: qkv %s must be (B,T,3C) with C divisible by %d heads", s, nh);
        return NULL;
    }
    B = qkv->ne[0]; T = qkv->ne[1]; C = qkv->ne[2] / 3;
    ne[0] = B; ne[1] = nh; ne[2] = T; ne[3] = T;
    pre = vt__node(c, VT_OP_ATT_SCORES, 4, ne, qkv, NULL, NULL);
    if (pre) { pre->iparam[0] = nh; pre->iparam[1] = C / nh; }
    pre = vt__run(c, pre);
    att = vt__node(c, VT_OP_ATT_SOFTMAX, 4, ne, pre, NULL, NULL);
    if (att) { att->iparam[0] = nh; att->iparam[1] = C / nh; }
    att = vt__run(c, att);
    ne[0] = B; ne[1] = T; ne[2] = C;
    out = vt__node(c, VT_OP_ATT_MIX, 3, ne, att, qkv, NULL);
    if (out) { out->iparam[0] = nh; out->iparam[1] = C / nh; }
    return vt__run(c, out);
}

/* --- reductions, concat, split ------------------------------------------------- */

VTDEF vt_tensor *vt_sum(vt_ctx *c, vt_tensor *x) {
    int64_t one = 1;
    if (!vt__need(c, x, "sum", "x")) return NULL;
    x = vt__contig(c, x);
    return vt__run(c, vt__node(c, VT_OP_SUM, 1, &one, x, NULL, NULL));
}

VTDEF vt_tensor *vt_mean(vt_ctx *c, vt_tensor *x) {
    int64_t one = 1;
    if (!vt__need(c, x, "mean", "x")) return NULL;
    x = vt__contig(c, x);
    return vt__run(c, vt__node(c, VT_OP_MEAN, 1, &one, x, NULL, NULL));
}

VTDEF vt_tensor *vt_concat(vt_ctx *c, vt_tensor *a, vt_tensor *b, int dim) {
    int64_t ne[VT_MAX_DIMS];
    int i;
    vt_tensor *t;
    if (!vt__need(c, a, "concat", "a") || !vt__need(c, b, "concat", "b")) return NULL;
    a = vt__contig(c, a);
    b = vt__contig(c, b);
    if (!a || !b) return NULL;
    if (a->ndim != b->ndim || dim < 0 || dim >= a->ndim) {
        vt__fail(c, VT_ERR_SHAPE, "concat: operands need the same number of dims and 0 <= dim < %d", a->ndim);
        return NULL;
    }
    for (i = 0; i < a->ndim; i++) {
        if (i != dim && a->ne[i] != b->ne[i]) {
            vt__fail(c, VT_ERR_SHAPE, "concat: dim %d differs (%lld vs %lld)", i, (long long)a->ne[i], (long long)b->ne[i]);
            return NULL;
        }
        ne[i] = i == dim ? a->ne[i] + b->ne[i] : a->ne[i];
    }
    t = vt__node(c, VT_OP_CONCAT, a->ndim, ne, a, b, NULL);
    if (t) t->iparam[0] = dim;
    return vt__run(c, t);
}

VTDEF vt_tensor *vt_split(vt_ctx *c, vt_tensor *x, int dim, int64_t start, int64_t len) {
    int64_t ne[VT_MAX_DIMS];
    int i;
    vt_tensor *t;
    if (!vt__need(c, x, "split", "x")) return NULL;
    x = vt__contig(c, x);
    if (!x) return NULL;
    if (dim < 0 || dim >= x->ndim || start < 0 || len < 0 || start > x->ne[dim] || len > x->ne[dim] - start) {
        vt__fail(c, VT_ERR_ARG, "split: start %lld, length %lld of dim %d is outside its size", (long long)start, (long long)len, dim);
        return NULL;
    }
    for (i = 0; i < x->ndim; i++) ne[i] = x->ne[i];
    ne[dim] = len;
    t = vt__node(c, VT_OP_SPLIT, x->ndim, ne, x, NULL, NULL);
    if (t) { t->iparam[0] = dim; t->iparam[1] = start; }
    return vt__run(c, t);
}


/* --- convolution, batch norm, pooling ------------------------------------------ */

static int vt__need_image(vt_ctx *c, const vt_tensor *x, const char *op) {
    char sx[64];
    if (!vt__need(c, x, op, "x")) return 0;
    if (x->ndim == 4) return 1;
    vt__shape_str(x, sx, sizeof sx);
    vt__fail(c, VT_ERR_SHAPE, "%s: x %s must be (N,C,H,W)", op, sx);
    return 0;
}

VTDEF vt_tensor *vt_conv2d(vt_ctx *c, vt_tensor *x, vt_tensor *w, vt_tensor *bias, int stride, int pad, int dilation, int groups) {
    int64_t ne[4], C, OC, KH, KW, eh, ew;
    char sx[64], sw[64];
    vt_tensor *t;
    if (!vt__need_image(c, x, "conv2d") || !vt__need(c, w, "conv2d", "w")) return NULL;
    if (bias && !vt__need(c, bias, "conv2d", "bias")) return NULL;
    x = vt__contig(c, x);
    w = vt__contig(c, w);
    if (!x || !w) return NULL;
    vt__shape_str(x, sx, sizeof sx);
    vt__shape_str(w, sw, sizeof sw);
    if (stride < 1 || pad < 0 || dilation < 1 || groups < 1 || stride > 4096 || pad > 4096 || dilation > 4096) {
        vt__fail(c, VT_ERR_ARG, "conv2d: stride %d, padding %d, dilation %d, groups %d: need 1 <= stride, 0 <= padding, "
                                "1 <= dilation (each at most 4096), 1 <= groups", stride, pad, dilation, groups);
        return NULL;
    }
    if (w->ndim != 4) { vt__fail(c, VT_ERR_SHAPE, "conv2d: w %s must be (OC, C/groups, KH, KW)", sw); return NULL; }
    C = x->ne[1]; OC = w->ne[0]; KH = w->ne[2]; KW = w->ne[3];
    if (C % groups || OC % groups) {
        vt__fail(c, VT_ERR_SHAPE, "conv2d: x %s has %lld channels and w %s %lld output channels: both must be divisible by "
                                  "groups = %d", sx, (long long)C, sw, (long long)OC, groups);
        return NULL;
    }
    if (w->ne[1] * groups != C) {
        vt__fail(c, VT_ERR_SHAPE, "conv2d: channels do not match: x %s has C = %lld, w %s takes %lld per group (groups = %d: "
                                  "C = %lld)", sx, (long long)C, sw, (long long)w->ne[1], groups, (long long)(w->ne[1] * groups));
        return NULL;
    }
    eh = (int64_t)dilation * (KH - 1) + 1;
    ew = (int64_t)dilation * (KW - 1) + 1;
    if (eh > x->ne[2] + 2 * (int64_t)pad || ew > x->ne[3] + 2 * (int64_t)pad) {
        vt__fail(c, VT_ERR_SHAPE, "conv2d: the kernel of w %s (dilation %d: it spans %lldx%lld) is larger than the padded "
                                  "input of x %s (padding %d: %lldx%lld)", sw, dilation, (long long)eh, (long long)ew, sx, pad,
                 (long long)(x->ne[2] + 2 * pad), (long long)(x->ne[3] + 2 * pad));
        return NULL;
    }
    if (bias && (bias->ndim != 1 || bias->ne[0] != OC)) {
        char sb[64];
        vt__shape_str(bias, sb, sizeof sb);
        vt__fail(c, VT_ERR_SHAPE, "conv2d: bias %s must be (OC) with OC = %lld, the rows of w %s", sb, (long long)OC, sw);
        return NULL;
    }
    ne[0] = x->ne[0]; ne[1] = OC;
    ne[2] = (x->ne[2] + 2 * pad - eh) / stride + 1;
    ne[3] = (x->ne[3] + 2 * pad - ew) / stride + 1;
    t = vt__node(c, VT_OP_CONV2D, 4, ne, x, w, NULL);
    if (t) { t->iparam[0] = stride; t->iparam[1] = pad; t->iparam[2] = dilation; t->iparam[3] = groups; }
    t = vt__run(c, t);
    if (t && bias) { /* the bias: a broadcast add of its own (its gradient sums over N, OH and OW) */
        int64_t bs[3] = {OC, 1, 1};
        vt_tensor *bv = vt_reshape(c, bias, 3, bs);
        t = vt_add(c, t, bv);
    }
    return t;
}

static int vt__nstate(const vt_ctx *c);
static vt_tensor *vt__state(const vt_ctx *c, int i);
VTDEF vt_tensor *vt_bn_state(vt_ctx *c, const char *name, int64_t C) {
    vt_tensor *t;
    int64_t ne[2], i, cap = c->cxstate;
    char why[200];
    double *v;
    if (c->status != VT_OK) return NULL;
    if (c->in_step) { vt__fail(c, VT_ERR_STATE, "vt_bn_state(%s): state is created outside a step", name ? name : ""); return NULL; }
    if (!vt__name_ok(name, why, sizeof why)) { vt__fail(c, VT_ERR_ARG, "vt_bn_state: %s", why); return NULL; }
    if (C < 1) { vt__fail(c, VT_ERR_ARG, "vt_bn_state(%s): %lld channels", name, (long long)C); return NULL; }
    for (i = 0; i < vt__nstate(c); i++)
        if (!strcmp(vt__state(c, (int)i)->name, name)) {
            vt__fail(c, VT_ERR_ARG, "vt_bn_state: a tensor named '%s' exists already", name);
            return NULL;
        }
    ne[0] = 2; ne[1] = C;
    t = vt__mk(c, VT_F32, 2, ne, 1, 1);
    v = (double *)vt__scratch(c, sizeof(double) * (size_t)(2 * C));
    if (!t || !v) return NULL;
    vt_set_name(t, name);
    for (i = 0; i < C; i++) { v[i] = 0; v[C + i] = 1; }
    if (vt_write_f64(c, t, v) != VT_OK) return NULL;
    if (!vt__grow(c, (void **)&c->xstate, &cap, c->nxstate + 1, sizeof(vt_tensor *))) return NULL;
    c->cxstate = (int)cap;
    c->xstate[c->nxstate++] = t;
    return t;
}

VTDEF vt_tensor *vt_batchnorm2d(vt_ctx *c, vt_tensor *x, vt_tensor *w, vt_tensor *b, vt_tensor *state, double momentum, double eps) {
    vt_tensor *t, *st;
    int64_t C, sn[2];
    int train, i, known = 0;
    char sx[64];
    if (!vt__need_image(c, x, "batchnorm2d") || !vt__need(c, w, "batchnorm2d", "w") || !vt__need(c, b, "batchnorm2d", "b")) return NULL;
    x = vt__contig(c, x);
    if (!x) return NULL;
    vt__shape_str(x, sx, sizeof sx);
    C = x->ne[1];
    if (w->ndim != 1 || b->ndim != 1 || w->ne[0] != C || b->ne[0] != C) {
        vt__fail(c, VT_ERR_SHAPE, "batchnorm2d: w and b must be (C) with C = %lld, the channels of x %s", (long long)C, sx);
        return NULL;
    }
    if (state) {
        for (i = 0; i < c->nxstate; i++) known |= c->xstate[i] == state;
        if (!known || state->ndim != 2 || state->ne[0] != 2 || state->ne[1] != C) {
            vt__fail(c, VT_ERR_ARG, "batchnorm2d: state must come from vt_bn_state with C = %lld (the channels of x %s)",
                     (long long)C, sx);
            return NULL;
        }
    }
    if (!(eps > 0) || !isfinite(eps) || !(momentum >= 0 && momentum <= 1)) {
        vt__fail(c, VT_ERR_ARG, "batchnorm2d: eps = %g must be positive and finite, momentum = %g in [0, 1]", eps, momentum);
        return NULL;
    }
    train = c->grad_enabled || !state;
    if (train && x->ne[0] * x->ne[2] * x->ne[3] < 2) {
        vt__fail(c, VT_ERR_SHAPE, "batchnorm2d: x %s has one value per channel: batch statistics need at least two", sx);
        return NULL;
    }
    w = vt__contig(c, w);
    b = vt__contig(c, b);
    if (train) { /* the batch's statistics, (2,C) */
        sn[0] = 2; sn[1] = C;
        st = vt__run(c, vt__node(c, VT_OP_BN_STATS, 2, sn, x, NULL, NULL));
        if (!st) return NULL;
    } else st = state;
    t = vt__node(c, VT_OP_BATCHNORM2D, 4, x->ne, x, w, b);
    if (!t) return NULL;
    t->src[3] = st;
    t->fparam[0] = eps;
    t->fparam[1] = momentum;
    t->extra = train ? state : NULL;
    return vt__run(c, t);
}

static vt_tensor *vt__pool2d(vt_ctx *c, vt_op op, vt_tensor *x, int64_t kh, int64_t kw, int stride, int pad) {
    int64_t ne[4];
    const char *nm = vt_op_name(op);
    char sx[64];
    vt_tensor *t;
    if (!vt__need_image(c, x, nm)) return NULL;
    x = vt__contig(c, x);
    if (!x) return NULL;
    vt__shape_str(x, sx, sizeof sx);
    if (kh < 1 || kw < 1 || stride < 1 || pad < 0 || 2 * pad > kh || 2 * pad > kw) {
        vt__fail(c, VT_ERR_ARG, "%s: window %lldx%lld, stride %d, padding %d: need a window of at least 1, stride >= 1 and "
                                "0 <= padding <= half the window", nm, (long long)kh, (long long)kw, stride, pad);
        return NULL;
    }
    if (kh > x->ne[2] + 2 * (int64_t)pad || kw > x->ne[3] + 2 * (int64_t)pad) {
        vt__fail(c, VT_ERR_SHAPE, "%s: the window %lldx%lld is larger than the padded input of x %s (padding %d)", nm,
                 (long long)kh, (long long)kw, sx, pad);
        return NULL;
    }
    ne[0] = x->ne[0]; ne[1] = x->ne[1];
    ne[2] = (x->ne[2] + 2 * pad - kh) / stride + 1;
    ne[3] = (x->ne[3] + 2 * pad - kw) / stride + 1;
    t = vt__node(c, op, 4, ne, x, NULL, NULL);
    if (t) { t->iparam[0] = kh; t->iparam[1] = kw; t->iparam[2] = stride; t->iparam[3] = pad; }
    return vt__run(c, t);
}

VTDEF vt_tensor *vt_maxpool2d(vt_ctx *c, vt_tensor *x, int k, int stride, int pad) { return vt__pool2d(c, VT_OP_MAXPOOL2D, x, k, k, stride, pad); }
VTDEF vt_tensor *vt_avgpool2d(vt_ctx *c, vt_tensor *x, int k, int stride, int pad) { return vt__pool2d(c, VT_OP_AVGPOOL2D, x, k, k, stride, pad); }

VTDEF vt_tensor *vt_global_avgpool(vt_ctx *c, vt_tensor *x) {
    vt_tensor *t;
    int64_t ne[2];
    if (!vt__need_image(c, x, "global_avgpool")) return NULL;
    t = vt__pool2d(c, VT_OP_AVGPOOL2D, x, x->ne[2], x->ne[3], 1, 0);
    if (!t) return NULL;
    ne[0] = t->ne[0]; ne[1] = t->ne[1];
    return vt_reshape(c, t, 2, ne);
}

VTDEF vt_tensor *vt_flatten(vt_ctx *c, vt_tensor *x) {
    int64_t ne[2];
    if (c->status != VT_OK || !x) return NULL;
    if (x->ndim < 1) { vt__fail(c, VT_ERR_SHAPE, "flatten: x is a scalar"); return NULL; }
    ne[0] = x->ne[0];
    ne[1] = vt_numel(x) / (x->ne[0] ? x->ne[0] : 1);
    return vt_reshape(c, x, 2, ne);
}

/* ==========================================================================
   >>optim  optimizers, clipping, schedule

   The optimizer's state (moments) and the weights are binary32 values, and
   every update passes rounding points: the learning rate (one value), then
   the first moment, the second moment and the weights, each over all
   parameters at once (one log record each). Bias corrections 1 - beta^t are
   computed by repeated squaring, so they are bit-identical everywhere (pow()
   would not be).
   ========================================================================== */

struct vt_optim {
    int kind; /* 0 AdamW, 1 SGD */
    vt_adamw_desc a;
    vt_sgd_desc s;
    int np;
    vt_tensor **p;
    int64_t N, t;
    vt_tensor *mt, *vt; /* the moments (SGD: the momentum buffer, twice) */
};

VTDEF vt_adamw_desc vt_adamw_default(void) {
    vt_adamw_desc d;
    d.lr = 1e-3; d.beta1 = 0.9; d.beta2 = 0.999; d.eps = 1e-8; d.weight_decay = 0.01;
    return d;
}
VTDEF vt_sgd_desc vt_sgd_default(void) {
    vt_sgd_desc d;
    d.lr = 1e-2; d.momentum = 0; d.weight_decay = 0; d.nesterov = 0;
    return d;
}

static void vt__params_flatten(vt_ctx *c); /* >>optim: FLAT PARAMETERS */

static vt_optim *vt__optim_new(vt_ctx *c, int kind) {
    vt_optim *o;
    int64_t cap = c->noptims;
    if (c->status != VT_OK) return NULL;
    if (!c->nparams) { vt__fail(c, VT_ERR_STATE, "optimizer: create parameters first"); return NULL; }
    o = (vt_optim *)vt__persist_alloc(c, sizeof(vt_optim));
    if (!o) return NULL;
    o->kind = kind;
    o->np = c->nparams;
    o->p = (vt_tensor **)vt__persist_alloc(c, sizeof(vt_tensor *) * (size_t)o->np);
    o->N = vt_param_numel(c);
    {
        /* the moments are state like the weights: named tensors, hashed into
           every step's commitment (a replay that diverges only in a moment
           is caught at once, not steps later) */
        int64_t ne = o->N ? o->N : 1, cap2 = c->cxstate;
        int nmom = kind == 0 ? 2 : 1, q;
        vt_tensor *mt[2];
        char nm[48];
        for (q = 0; q < nmom; q++) {
            mt[q] = vt__mk(c, VT_F32, 1, &ne, 1, 1);
            if (!mt[q]) return NULL;
            snprintf(nm, sizeof nm, "optim%d.%s", c->noptims, kind == 0 ? (q ? "v" : "m") : "momentum");
            vt_set_name(mt[q], nm);
            if (!vt__grow(c, (void **)&c->xstate, &cap2, c->nxstate + 1, sizeof(vt_tensor *))) return NULL;
            c->cxstate = (int)cap2;
            c->xstate[c->nxstate++] = mt[q];
        }
        o->mt = mt[0];
        o->vt = nmom > 1 ? mt[1] : mt[0];
    }
    if (!o->p) return NULL;
    vt__params_flatten(c);
    memcpy(o->p, c->params, sizeof(vt_tensor *) * (size_t)o->np);
    if (!vt__grow(c, (void **)&c->optims, &cap, c->noptims + 1, sizeof(vt_optim *))) return NULL;
    c->optims[c->noptims++] = o;
    return o;
}

VTDEF vt_optim *vt_adamw_create(vt_ctx *c, const vt_adamw_desc *d) {
    vt_optim *o;
    if (d && (!(d->beta1 >= 0 && d->beta1 < 1) || !(d->beta2 >= 0 && d->beta2 < 1) || !(d->eps > 0) || !isfinite(d->eps) ||
              !(d->weight_decay >= 0) || !isfinite(d->weight_decay))) {
        vt__fail(c, VT_ERR_ARG, "vt_adamw_create: beta1 %g and beta2 %g must lie in [0, 1), eps %g be positive, weight_decay %g "
                                "non-negative (all finite)", d->beta1, d->beta2, d->eps, d->weight_decay);
        return NULL;
    }
    o = vt__optim_new(c, 0);
    if (o) o->a = d ? *d : vt_adamw_default();
    return o;
}
VTDEF vt_optim *vt_sgd_create(vt_ctx *c, const vt_sgd_desc *d) {
    vt_optim *o;
    if (d && (!(d->momentum >= 0 && d->momentum < 1) || !(d->weight_decay >= 0) || !isfinite(d->weight_decay))) {
        vt__fail(c, VT_ERR_ARG, "vt_sgd_create: momentum %g must lie in [0, 1), weight_decay %g be finite and non-negative", d->momentum,
                 d->weight_decay);
        return NULL;
    }
    o = vt__optim_new(c, 1);
    if (o) o->s = d ? *d : vt_sgd_default();
    return o;
}

static double vt__powi(double b, int64_t e) {
    double r = 1;
    while (e > 0) { if (e & 1) r *= b; b *= b; e >>= 1; }
    return r;
}

/* flat copies of every parameter's values (w) and gradients (g), backend
   addresses; fresh (untouched) gradients read as 0 */
static void vt__gather(vt_ctx *c, int np, vt_tensor **p, double *w, double *g) {
    int i;
    int64_t off = 0;
    for (i = 0; i < np && c->status == VT_OK; i++) {
        int64_t n = vt_numel(p[i]);
        if (w) c->be->copy(c, w + off, vt__bp(c, p[i]), n);
        if (g) {
            if (p[i]->grad_fresh) c->be->zero(c, g + off, n);
            else c->be->copy(c, g + off, vt__bp(c, p[i]->grad), n);
        }
        off += n;
    }
}

static void vt__scatter(vt_ctx *c, int np, vt_tensor **p, const double *w, int grads) {
    int i;
    int64_t off = 0;
    for (i = 0; i < np && c->status == VT_OK; i++) {
        int64_t n = vt_numel(p[i]);
        double *d = (double *)vt__bptr(c, grads ? p[i]->grad : p[i], 1);
        if (!d) return;
        c->be->copy(c, d, w + off, n);
        if (grads) p[i]->grad_fresh = 0;
        off += n;
    }
}

/* FLAT PARAMETERS. The optimizer and clipping work on every parameter as
   one flat vector (one rounding point each over all of them). Gathering the
   values and gradients into flat copies and scattering the results back
   cost five copies of every parameter per step (17 ms per 100 MB each on
   a 2-core Xeon: some 15% of a width-512 GPT step). So on a backend without
   memory of its own (the CPU) the optimizer's creation moves the parameters'
   values into one block and their gradients into another, in parameter
   order (vt__params_flatten), and the two read them where they lie:
   vt__flat says whether p[0..np) still do (one created after the optimizer
   breaks the order, and then the copies run as before). Nothing else
   changes: a tensor's data pointer is read where it is used (code that
   kept a parameter's pointer from before its optimizer was created would
   hold freed memory; vtrain keeps none). */
static double *vt__flat(vt_ctx *c, int np, vt_tensor **p, int grads) {
    int i;
    int64_t off = 0;
    double *base;
    if (c->be->has_memory || np <= 0 || (grads && !p[0]->grad)) return NULL;
    base = (double *)(grads ? p[0]->grad->data : p[0]->data);
    for (i = 0; i < np; i++) {
        const vt_tensor *t = grads ? p[i]->grad : p[i];
        if (!t || t->view_src || (double *)t->data != base + off) return NULL;
        off += vt_numel(p[i]);
    }
    return base;
}

/* a fresh gradient reads as 0 (vt__gather): in its own block it is written
   so, and stays fresh (the next backward overwrites it, as before) */
static void vt__flat_zero_fresh(vt_ctx *c, int np, vt_tensor **p) {
    int i;
    for (i = 0; i < np; i++)
        if (p[i]->grad_fresh) c->be->zero(c, (double *)p[i]->grad->data, vt_numel(p[i]));
}

/* c->pers holds every persistent allocation (freed with the context): the
   one at q is freed now */
static void vt__pers_free(vt_ctx *c, void *q) {
    int k;
    for (k = 0; k < c->npers; k++)
        if (c->pers[k] == q) {
            VT_FREE(q, c->u);
            c->pers[k] = c->pers[--c->npers];
            return;
        }
}

static int vt__no_flat; /* tests: parameters where vt_param put them (the copies), to compare */

static void vt__params_flatten(vt_ctx *c) {
    int64_t N = vt_param_numel(c), off = 0, cap = c->cpers;
    double *blk[2];
    int i, q;
    if (vt__no_flat || c->be->has_memory || c->nparams < 2 || (vt__flat(c, c->nparams, c->params, 0) && vt__flat(c, c->nparams, c->params, 1)))
        return;
    for (i = 0; i < c->nparams; i++)
        if (!c->params[i]->grad || c->params[i]->view_src) return;
    if (!vt__grow(c, (void **)&c->pers, &cap, c->npers + 2, sizeof(void *))) return;
    c->cpers = (int)cap;
    blk[0] = (double *)VT_MALLOC(sizeof(double) * (size_t)N, c->u);
    blk[1] = (double *)VT_MALLOC(sizeof(double) * (size_t)N, c->u);
    if (!blk[0] || !blk[1]) { /* no room for the blocks: the copies stay, nothing is lost */
        VT_FREE(blk[0], c->u);
        VT_FREE(blk[1], c->u);
        return;
    }
    for (i = 0; i < c->nparams; i++) {
        vt_tensor *t = c->params[i];
        int64_t n = vt_numel(t);
        for (q = 0; q < 2; q++) {
            vt_tensor *u = q ? t->grad : t;
            memcpy(blk[q] + off, u->data, sizeof(double) * (size_t)n);
            vt__pers_free(c, u->data);
            u->data = blk[q] + off;
        }
        off += n;
    }
    c->pers[c->npers++] = blk[0];
    c->pers[c->npers++] = blk[1];
}

/* a scalar rounding point (the learning rate, the clip norm): x is a host
   value; a backend with memory rounds it in a buffer of its own */
static double vt__round_scalar(vt_ctx *c, int kind, double x, double e) {
    int64_t one = 1;
    double h[2], *b;
    h[0] = x; h[1] = e;
    if (!c->be->has_memory) {
        vt__round(c, kind, 1, &one, &h[0], &h[1], NULL, NULL, 1);
        return h[0];
    }
    b = (double *)c->be->alloc(c, sizeof h, 0);
    if (!b) return NAN;
    c->be->h2b(c, b, h, sizeof h);
    vt__round(c, kind, 1, &one, b, b + 1, NULL, NULL, 1);
    c->be->b2h(c, h, b, sizeof(double));
    return h[0];
}

typedef struct vt__opt_job {
    const vt_optim *o;
    double *w, *g, *m, *v; /* flat, backend addresses */
    const double *wi;      /* phase 3: the weights read (w, or the parameters' own block: FLAT PARAMETERS); w is written */
    int64_t N;
    double lr, bc1, bc2;
    int phase;             /* AdamW: 0 m, 1 v, 2 w, 3 all three in one pass (the CPU's); SGD: 0 momentum, 2 w */
    int r32;               /* phase 3: round each value to binary32 (not in fp64 mode) */
    int64_t *bad;          /* phase 3: per thread, the first NaN of m, v, w (-1: none) */
} vt__opt_job;

/* AdamW, following torch.optim.AdamW:
     m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
     w = w (1 - lr wd) - (lr/bc1) (m / (sqrt(v)/sqrt(bc2) + eps)),
   and SGD (torch.optim.SGD, dampening 0):
     d = g + wd w;  buf = mu buf + d;  d = nesterov ? d + mu buf : buf;
     w = w - lr d.
   Every input (g, m, v, w, the learning rate) is a binary32 value, the same
   on every machine, and the formulas are IEEE + - * / sqrt executed as
   written (no contraction), with bias corrections by repeated squaring: the
   binary64 results are identical everywhere, so e = 0 (no bound array at
   all). The rounding points still make m, v and w binary32 values; they log
   nothing. Every backend
   computes exactly these expressions in this order. */
static void vt__opt_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__opt_job *j = (const vt__opt_job *)arg;
    const vt_optim *o = j->o;
    int64_t i;
    (void)tid;
    for (i = lo; i < hi; i++) {
        double g = j->g[i], w = j->w[i];
        if (o->kind == 0) {
            double b1 = o->a.beta1, b2 = o->a.beta2;
            if (j->phase == 0) {
                j->m[i] = b1 * j->m[i] + (1 - b1) * g;
            } else if (j->phase == 1) {
                j->v[i] = b2 * j->v[i] + (1 - b2) * (g * g);
            } else {
                double w1 = w * (1 - j->lr * o->a.weight_decay);
                double denom = sqrt(j->v[i]) / sqrt(j->bc2) + o->a.eps;
                j->w[i] = w1 - (j->lr / j->bc1) * (j->m[i] / denom);
            }
        } else {
            double mu = o->s.momentum, wd = o->s.weight_decay;
            double d = wd != 0 ? g + wd * w : g;
            if (j->phase == 0) { /* momentum buffer */
                j->m[i] = mu * j->m[i] + d;
                continue;
            }
            if (mu != 0) d = o->s.nesterov ? d + mu * j->m[i] : j->m[i];
            j->w[i] = w - j->lr * d;
        }
    }
}

/* AdamW in one pass over the parameters (the CPU backend, phase 3): per
   element the three updates of vt__opt_task in their order, each value
   rounded to binary32 as its rounding point's cast rounds it (not in fp64
   mode, whose points only check) before the next update reads it, so m, v
   and w are the bits the three passes and their points give. The first NaN
   of each (per thread: bad[3 tid + q]) goes to its point through
   c->pre_cast, which then needs no pass of its own. */
static void vt__adamw_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__opt_job *j = (const vt__opt_job *)arg;
    const vt_optim *o = j->o;
    const double b1 = o->a.beta1, b2 = o->a.beta2, c1 = 1 - b1, c2 = 1 - b2, eps = o->a.eps;
    const double wdf = 1 - j->lr * o->a.weight_decay, sb2 = sqrt(j->bc2), lrb = j->lr / j->bc1;
    int64_t b0, i, *bad = j->bad + 3 * tid;
    for (b0 = lo; b0 < hi; b0 += 256) {
        int64_t n = VT__MIN(256, hi - b0);
        double *m = j->m + b0, *v = j->v + b0, *w = j->w + b0;
        const double *g = j->g + b0, *w0 = j->wi + b0; /* the old weights */
        int any = 0, q;
        i = 0;
#ifdef VT__AVX2
        { /* four at a time, the same operations (sqrt through errno stops gcc vectorising the loop below) */
            const __m256d B1 = _mm256_set1_pd(b1), B2 = _mm256_set1_pd(b2), C1 = _mm256_set1_pd(c1), C2 = _mm256_set1_pd(c2);
            const __m256d WDF = _mm256_set1_pd(wdf), SB2 = _mm256_set1_pd(sb2), LRB = _mm256_set1_pd(lrb), EPS = _mm256_set1_pd(eps);
            __m256d nan = _mm256_setzero_pd();
            for (; i + 4 <= n; i += 4) {
                __m256d gi = _mm256_loadu_pd(g + i), mi, vi, wi;
                mi = _mm256_add_pd(_mm256_mul_pd(B1, _mm256_loadu_pd(m + i)), _mm256_mul_pd(C1, gi));
                if (j->r32) mi = _mm256_cvtps_pd(_mm256_cvtpd_ps(mi));
                vi = _mm256_add_pd(_mm256_mul_pd(B2, _mm256_loadu_pd(v + i)), _mm256_mul_pd(C2, _mm256_mul_pd(gi, gi)));
                if (j->r32) vi = _mm256_cvtps_pd(_mm256_cvtpd_ps(vi));
                wi = _mm256_sub_pd(_mm256_mul_pd(_mm256_loadu_pd(w0 + i), WDF),
                                   _mm256_mul_pd(LRB, _mm256_div_pd(mi, _mm256_add_pd(_mm256_div_pd(_mm256_sqrt_pd(vi), SB2), EPS))));
                if (j->r32) wi = _mm256_cvtps_pd(_mm256_cvtpd_ps(wi));
                _mm256_storeu_pd(m + i, mi);
                _mm256_storeu_pd(v + i, vi);
                _mm256_storeu_pd(w + i, wi);
                nan = _mm256_or_pd(nan, _mm256_or_pd(_mm256_cmp_pd(mi, mi, _CMP_UNORD_Q),
                                                     _mm256_or_pd(_mm256_cmp_pd(vi, vi, _CMP_UNORD_Q), _mm256_cmp_pd(wi, wi, _CMP_UNORD_Q))));
            }
            any = _mm256_movemask_pd(nan) != 0;
        }
#endif
        if (j->r32)
            for (; i < n; i++) {
                double mi = (double)(float)(b1 * m[i] + c1 * g[i]), vi = (double)(float)(b2 * v[i] + c2 * (g[i] * g[i]));
                double wi = (double)(float)(w0[i] * wdf - lrb * (mi / (sqrt(vi) / sb2 + eps)));
                m[i] = mi; v[i] = vi; w[i] = wi;
                any |= (mi != mi) | (vi != vi) | (wi != wi);
            }
        else
            for (; i < n; i++) {
                double mi = b1 * m[i] + c1 * g[i], vi = b2 * v[i] + c2 * (g[i] * g[i]);
                double wi = w0[i] * wdf - lrb * (mi / (sqrt(vi) / sb2 + eps));
                m[i] = mi; v[i] = vi; w[i] = wi;
                any |= (mi != mi) | (vi != vi) | (wi != wi);
            }
        if (!any) continue;
        for (q = 0; q < 3; q++) {
            const double *x = q == 0 ? m : q == 1 ? v : w;
            for (i = 0; i < n && (bad[q] < 0 || b0 + i < bad[q]); i++)
                if (x[i] != x[i]) bad[q] = b0 + i;
        }
    }
}

static void vt__cpu_optim(vt_ctx *c, const vt__opt_job *j) {
    if (j->phase == 3) vt__parallel(&c->pool, j->N, 16 * j->N, vt__adamw_task, (void *)(uintptr_t)j);
    else vt__parallel(&c->pool, j->N, (j->phase == 2 ? 8 : 4) * j->N, vt__opt_task, (void *)(uintptr_t)j);
}

static int vt__no_fused; /* tests: AdamW in three passes on the CPU too, to compare */

/* AdamW's three points after the fused pass: each takes its values' first
   NaN from the pass instead of casting them again */
static void vt__adamw_points(vt_ctx *c, const vt__opt_job *j, const int64_t *dims) {
    int q, t;
    double *x[3];
    x[0] = j->m; x[1] = j->v; x[2] = j->w;
    for (q = 0; q < 3; q++) {
        int64_t bad = -1;
        for (t = 0; t < c->pool.n; t++)
            if (j->bad[3 * t + q] >= 0 && (bad < 0 || j->bad[3 * t + q] < bad)) bad = j->bad[3 * t + q];
        c->pre_cast = 1;
        c->pre_bad = bad;
        vt__round(c, vt__kind(VT_OP_OPTIM, q), 1, dims, x[q], NULL, NULL, NULL, j->N);
        c->pre_cast = 0;
    }
}

/* the new weights into the parameters (their block, or one by one) */
static void vt__copy_task(void *arg, int64_t lo, int64_t hi, int tid) {
    double *const *dw = (double *const *)arg;
    (void)tid;
    memcpy(dw[0] + lo, dw[1] + lo, sizeof(double) * (size_t)(hi - lo));
}
static void vt__optim_put(vt_ctx *c, vt_optim *o, const vt__opt_job *j, double *wf) {
    if (c->status == VT_OK) {
        if (wf) {
            double *dw[2];
            dw[0] = wf;
            dw[1] = j->w;
            vt__parallel(&c->pool, j->N, j->N, vt__copy_task, dw);
        } else vt__scatter(c, o->np, o->p, j->w, 0);
    }
    vt__reset_life(c, 0);
}

VTDEF vt_status vt_optim_step(vt_ctx *c, vt_optim *o, double lr) {
    vt__opt_job j;
    int64_t N, dims[1];
    double *wf, *gf;
    if (c->status != VT_OK) return c->status;
    if (!o) return vt__fail(c, VT_ERR_ARG, "vt_optim_step: optimizer is NULL");
    if (!(lr >= 0) || !isfinite(lr)) return vt__fail(c, VT_ERR_ARG, "vt_optim_step: learning rate %g is not a finite non-negative number", lr);
    N = o->N;
    dims[0] = N;
    memset(&j, 0, sizeof j);
    j.o = o;
    j.N = N;
    /* The learning rate is the caller's: a constant or vt_lr_cosine is the
       same double everywhere, but a schedule the program computes with a
       libm may differ between machines. The contract allows 32 binary64
       ulps (64u relative) there, and the chaos order moves lr by up to 8
       ulps, as another machine's libm might: a normal lr only (8 ulps of a
       subnormal one are more than 64u of it, and its bits could wrap), and
       not within 8 ulps of overflow. */
    if (c->ord.chaos && lr >= 0x1p-1022 && lr < 0x1p1023) {
        uint64_t b, h;
        memcpy(&b, &lr, 8);
        h = vt__mix(b ^ c->ord.seed ^ (uint64_t)c->step_no);
        b += (uint64_t)((int64_t)(h % 17) - 8);
        memcpy(&lr, &b, 8);
    }
    j.lr = vt__round_scalar(c, vt__kind(VT_OP_OPTIM, 3), lr, 64 * VT__U * fabs(lr));
    wf = vt__flat(c, o->np, o->p, 0);
    gf = wf ? vt__flat(c, o->np, o->p, 1) : NULL;
    /* the new weights go to work memory, and to the parameters only once
       every point has passed: a failed step leaves them as they were */
    j.w = (double *)c->be->alloc(c, sizeof(double) * (size_t)((gf ? 1 : 2) * N + 1), 0);
    if (!j.w || c->status != VT_OK) return c->status;
    j.wi = j.w;
    if (gf) { /* FLAT PARAMETERS */
        j.g = gf;
        vt__flat_zero_fresh(c, o->np, o->p);
    } else {
        j.g = j.w + N;
        vt__gather(c, o->np, o->p, j.w, j.g);
    }
    j.m = (double *)vt__bptr(c, o->mt, 2);
    j.v = (double *)vt__bptr(c, o->vt, 2);
    if (!j.m || !j.v || c->status != VT_OK) return c->status;
    o->t++;
    if (o->kind == 0 && c->be->optim == vt__cpu_optim && !vt__no_fused) { /* the CPU's one pass, the same bits */
        int t;
        j.bc1 = 1 - vt__powi(o->a.beta1, o->t);
        j.bc2 = 1 - vt__powi(o->a.beta2, o->t);
        j.phase = 3;
        j.r32 = c->d.mode != VT_MODE_FP64;
        j.bad = (int64_t *)vt__scratch(c, sizeof(int64_t) * (size_t)(3 * c->pool.n));
        if (!j.bad) return c->status;
        for (t = 0; t < 3 * c->pool.n; t++) j.bad[t] = -1;
        if (gf) j.wi = wf; /* read in place, written to j.w */
        c->be->optim(c, &j);
        vt__adamw_points(c, &j, dims);
        vt__optim_put(c, o, &j, wf);
        return c->status;
    }
    if (gf) c->be->copy(c, j.w, wf, N);
    if (o->kind == 0) {
        j.bc1 = 1 - vt__powi(o->a.beta1, o->t);
        j.bc2 = 1 - vt__powi(o->a.beta2, o->t);
        j.phase = 0;
        c->be->optim(c, &j);
        vt__round(c, vt__kind(VT_OP_OPTIM, 0), 1, dims, j.m, NULL, NULL, NULL, N);
        j.phase = 1;
        c->be->optim(c, &j);
        vt__round(c, vt__kind(VT_OP_OPTIM, 1), 1, dims, j.v, NULL, NULL, NULL, N);
    } else if (o->s.momentum != 0) {
        j.phase = 0;
        c->be->optim(c, &j);
        vt__round(c, vt__kind(VT_OP_OPTIM, 4), 1, dims, j.m, NULL, NULL, NULL, N);
    }
    j.phase = 2;
    c->be->optim(c, &j);
    vt__round(c, vt__kind(VT_OP_OPTIM, 2), 1, dims, j.w, NULL, NULL, NULL, N);
    vt__optim_put(c, o, &j, wf);
    return c->status;
}

/* Global-norm clipping. The squared norm is a fixed-order sum over
   parameters of per-parameter sums, each in any order (the CPU splits it
   into `threads` pieces summed in order, so the thread count changes the
   order, as a GPU's block count would):
   e(norm^2) = sum_p gamma(n_p + 1) S_p + gamma(np + 1) S, S = sum g^2;
   norm = sqrt(norm^2): e = 1.01 (e(norm^2) / (2 norm) + u norm).
   S_p is the parameter's computed sum itself (its terms are g^2 >= 0, so
   it is within a factor 1 +- gamma(n_p + 1) of the exact sum, far inside
   the 1.01), as the GPU takes it: a second, sequential sum of the squares
   for S_p was a chain of one dependent addition per parameter value (1%
   of a width-512 step, Zen 4) and was no nearer the exact S_p than this.
   Then, when norm > max_norm, g' = g c with c = max_norm / (norm + 1e-6)
   computed from the binary32 norm: plain arithmetic on binary32 inputs,
   identical everywhere, e = 0. */
static double vt__cpu_sumsq(vt_ctx *c, int i, const double *g, int64_t n, double *S) {
    int pieces = c->ord.threads > 0 ? c->ord.threads : 1, q;
    double ps = 0;
    for (q = 0; q < pieces; q++) {
        int64_t lo = n * q / pieces, hi = n * (q + 1) / pieces;
        ps = VT__ACC(&c->ord, ps + vt__rdot(&c->ord, (uint64_t)(i * 64 + q), g + lo, 1, g + lo, 1, hi - lo, NULL));
    }
    *S = ps;
    return ps;
}

/* every parameter's vt__cpu_sumsq on the pool (a parameter per task, each
   computed as the serial loop would): ps and S per parameter */
typedef struct { vt_ctx *c; const double *g; const int64_t *off; double *ps, *S; } vt__sumsq_job;
static void vt__sumsq_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__sumsq_job *j = (const vt__sumsq_job *)arg;
    int64_t i;
    (void)tid;
    for (i = lo; i < hi; i++) j->ps[i] = vt__cpu_sumsq(j->c, (int)i, j->g + j->off[i], j->off[i + 1] - j->off[i], &j->S[i]);
}

typedef struct { double *g; double s; } vt__scale_job;
static void vt__scale_task(void *arg, int64_t lo, int64_t hi, int tid) {
    const vt__scale_job *j = (const vt__scale_job *)arg;
    int64_t k;
    (void)tid;
    for (k = lo; k < hi; k++) j->g[k] *= j->s;
}
static void vt__cpu_scale(vt_ctx *c, double *g, double s, int64_t n) {
    vt__scale_job j;
    j.g = g; j.s = s;
    vt__parallel(&c->pool, n, n, vt__scale_task, &j);
}
/* A FUSED CAST of the clipped gradients (a trainer's CPU step): each piece
   of 4096 scaled, then cast (fp64: checked) while in cache, instead of a
   pass for the product and one for the point (two passes over every
   parameter: 1.5% of a width-512 step, Zen 4); the same product and cast
   of each value. The point (slot 0's first NaN) is then told so. */
typedef struct { vt__scale_job s; vt__rjob rj; } vt__scast_job;
static void vt__scale_cast_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__scast_job *j = (vt__scast_job *)arg;
    int64_t a, b;
    for (a = lo; a < hi; a = b) {
        b = VT__MIN(hi, a + 4096);
        vt__scale_task(&j->s, a, b, tid);
        vt__cast_span(&j->rj, a, b, tid);
    }
}
static void vt__cpu_scale_cast(vt_ctx *c, double *g, double s, int64_t n) {
    vt__scast_job j;
    vt__cast_fuse_begin(c, g, n, &j.rj);
    j.s.g = g; j.s.s = s;
    vt__parallel(&c->pool, n, 2 * n, vt__scale_cast_task, &j);
    vt__gclip++;
    vt__fents_gather(c, 0);
}

/* --- the CPU backend's table (>>backend): host memory, the kernels of >>cpu,
   the primitives of >>rounding and of this section. It has no memory of its
   own, nothing to reset or destroy, and the engine hashes its tensors. */
#define vt__cpu_storage NULL
#define vt__cpu_h2b NULL
#define vt__cpu_b2h NULL
#define vt__cpu_reset NULL
#define vt__cpu_block_digests NULL
#define vt__cpu_destroy NULL
static const vt__backend vt__cpu_backend = VT__BACKEND_TABLE("cpu", 0, vt__cpu_);
#undef vt__cpu_storage
#undef vt__cpu_h2b
#undef vt__cpu_b2h
#undef vt__cpu_reset
#undef vt__cpu_block_digests
#undef vt__cpu_destroy
static vt_status vt__cpu_attach(vt_ctx *c) { c->be = &vt__cpu_backend; return VT_OK; }

VTDEF double vt_clip_grad_norm(vt_ctx *c, double max_norm) {
    int i, flat = 1;
    int64_t N = vt_param_numel(c), dims[1], off = 0;
    double n2 = 0, e2 = 0, S = 0, norm, coef, *g, *pss = NULL, *Sps = NULL;
    if (c->status != VT_OK) return NAN;
    if (!(max_norm > 0)) { /* a negative maximum used to flip the gradient's sign, 0 to erase it */
        vt__fail(c, VT_ERR_ARG, "vt_clip_grad_norm: max_norm = %g must be positive (+inf: no clipping)", max_norm);
        return NAN;
    }
    g = vt__flat(c, c->nparams, c->params, 1);
    if (g) vt__flat_zero_fresh(c, c->nparams, c->params); /* FLAT PARAMETERS: scaled in place */
    else {
        g = (double *)c->be->alloc(c, sizeof(double) * (size_t)(N + 1), 0);
        if (!g) return NAN;
        vt__gather(c, c->nparams, c->params, NULL, g);
        flat = 0;
    }
    if (c->be->sumsq == vt__cpu_sumsq && c->pool.n > 1) { /* the CPU's sums on the pool, combined below in order */
        vt__sumsq_job sj;
        int64_t *offs = (int64_t *)vt__scratch(c, sizeof(int64_t) * (size_t)(c->nparams + 1));
        sj.ps = (double *)vt__scratch(c, sizeof(double) * (size_t)(2 * c->nparams + 1));
        if (!offs || !sj.ps) return NAN;
        sj.S = sj.ps + c->nparams;
        sj.c = c; sj.g = g; sj.off = offs;
        for (offs[0] = 0, i = 0; i < c->nparams; i++) offs[i + 1] = offs[i] + vt_numel(c->params[i]);
        vt__parallel(&c->pool, c->nparams, 2 * N, vt__sumsq_task, &sj);
        pss = sj.ps; Sps = sj.S;
    }
    for (i = 0; i < c->nparams && c->status == VT_OK; i++) {
        int64_t n = vt_numel(c->params[i]);
        double Sp = 0, ps = pss ? pss[i] : c->be->sumsq(c, i, g + off, n, &Sp);
        if (pss) Sp = Sps[i];
        n2 = VT__ACC(&c->ord, n2 + ps);
        e2 += vt__g(&c->ord, n + 1) * Sp;
        S += Sp;
        off += n;
    }
    if (c->status != VT_OK) return NAN;
    e2 += vt__g(&c->ord, c->nparams + 1) * S;
    norm = sqrt(n2);
    norm = vt__round_scalar(c, vt__kind(VT_OP_CLIP, 0), norm, norm > 0 ? 1.01 * (e2 / (2 * norm) + VT__U * norm) : sqrt(e2));
    coef = max_norm / (norm + 1e-6);
    if (coef < 1 && c->status == VT_OK) {
        /* one IEEE product of binary32 values and a coefficient that is the
           same everywhere: exact agreement, e = 0 (no bound array) */
        int fuse = c->be->scale == vt__cpu_scale && vt__cast_fuse_ctx_ok(c); /* A FUSED CAST */
        if (fuse) vt__cpu_scale_cast(c, g, coef, N);
        else c->be->scale(c, g, coef, N);
        dims[0] = N;
        c->round_fused = fuse ? 2 : 0;
        vt__round(c, vt__kind(VT_OP_CLIP, 1), 1, dims, g, NULL, NULL, NULL, N);
        c->round_fused = 0;
        if (c->status == VT_OK && !flat) vt__scatter(c, c->nparams, c->params, g, 1);
        if (c->status == VT_OK && flat)
            for (i = 0; i < c->nparams; i++) c->params[i]->grad_fresh = 0; /* as vt__scatter leaves them */
    }
    vt__reset_life(c, 0);
    return c->status == VT_OK ? norm : NAN;
}

/* Linear warm-up, then min + (max - min) (1 + cos(pi p)) / 2 written as
   min + (max - min) cos^2(pi p / 2): the same function without the
   cancellation of 1 + cos near the end, and with vtrain's own cosine
   (>>elementary), so every machine computes the same double (a libm's cos
   one ulp away would move a schedule that decays to 0 by far more than one
   ulp of the learning rate near its end). */
VTDEF double vt_lr_cosine(int64_t step, int64_t warmup, int64_t total, double max_lr, double min_lr) {
    double den, cq;
    if (step < warmup) return max_lr * (double)(step + 1) / (double)warmup;
    if (step >= total) return min_lr;
    den = (double)VT__MAX(1, total - warmup);
    cq = vt__dcospi2((double)(step - warmup) / den, (double)(total - step) / den);
    return min_lr + (max_lr - min_lr) * (cq * cq);
}

/* ==========================================================================
   >>log  the rounding log on disk

   file    = header chunk*
   header  = "VTRAINLG" u32 version(2) u32 body_len body sha256(magic..body)
   body    = u8 mode u8 bound u8 compact u8 optable  f64 lambda  f64 margin
             u32 n  n x (u32 kind, u64 n, f64 factor)     (the calibration table)
   optable is the op-table revision the writer knew (VT__OP_TABLE): record
   kinds and the calibration table's kinds are id * 8 + slot with the ids of
   VT__OP_LIST, which never change; a reader refuses a table newer than its
   own, and a kind whose op that table does not have.
   chunk   = "VTCK" u64 step u32 points u32 entries u64 body_len
             record* sha256(chunk header + body)
           | "VTCR" (the same header) short* sha256(...)
   record  = varint kind, varint ndim, varint dims[ndim], varint count,
             count x (varint ((index - previous - 1) << 1 | full), 1 or 4 bytes)
   short   = a record without kind, ndim and dims: a "VTCR" chunk has the
             same record headers as the last "VTCK" chunk (most steps run the
             same program), which is written every 64 steps, before each
             checkpoint and whenever the headers change.
   Integers are little-endian. The chunk's SHA-256 is its checksum and goes
   into the step's commitment. A reader never trusts a length: every length
   is checked against the bytes left in the file before it is used; the
   header's other fields are checked by vt__log_header_check, a chunk's
   counts against its records (a record's kind against the header's op
   table), and an audit of a transcript that reaches its last step refuses
   any byte after that step's chunk (what checks each field: >>transcript;
   a bare log names no last step, so its reader stops where the caller's
   program does). Every varint has one encoding (vt__get_varint), so a
   chunk's bytes, and its hash, are fixed by what it says.
   ========================================================================== */

/* 1: vtrain 0.1.0 (libm's exp, log, tanh and cos); 2: vtrain 0.2.0, whose
   own elementary functions compute other values (a log of version 1 is
   refused, naming both versions: its trainer's values came from a libm) */
#define VT__LOG_VERSION 2u
#define VT__CHUNK_HDR 28

static vt_status vt__write_all(vt_ctx *c, FILE *f, const void *p, size_t n, const char *what) {
    if (fwrite(p, 1, n, f) != n) return vt__fail(c, VT_ERR_IO, "writing %s failed (disk full?)", what);
    return VT_OK;
}

/* the file header, at the log's current position */
static vt_status vt__log_write_header(vt_ctx *c) {
    vt__buf b;
    unsigned char t[8], sha[32];
    int i;
    memset(&b, 0, sizeof b);
    vt__buf_put(c, &b, "VTRAINLG", 8);
    vt__put_u32(t, VT__LOG_VERSION); vt__buf_put(c, &b, t, 4);
    vt__put_u32(t, 0); vt__buf_put(c, &b, t, 4); /* body length, patched below */
    t[0] = (unsigned char)c->d.mode; t[1] = (unsigned char)c->d.bound; t[2] = (unsigned char)(c->d.compact_log >= 0);
    t[3] = (unsigned char)c->log_table;
    vt__buf_put(c, &b, t, 4);
    { uint64_t u; memcpy(&u, &c->ord.lambda, 8); vt__put_u64(t, u); vt__buf_put(c, &b, t, 8); }
    { uint64_t u; memcpy(&u, &c->calib.margin, 8); vt__put_u64(t, u); vt__buf_put(c, &b, t, 8); }
    vt__put_u32(t, (uint32_t)c->calib.count); vt__buf_put(c, &b, t, 4);
    for (i = 0; i < c->calib.count; i++) {
        uint64_t u;
        vt__put_u32(t, (uint32_t)c->calib.e[i].kind); vt__buf_put(c, &b, t, 4);
        vt__put_u64(t, (uint64_t)c->calib.e[i].n); vt__buf_put(c, &b, t, 8);
        memcpy(&u, &c->calib.e[i].factor, 8); vt__put_u64(t, u); vt__buf_put(c, &b, t, 8);
    }
    if (c->status != VT_OK) { VT_FREE(b.p, c->u); return c->status; }
    vt__put_u32(b.p + 12, (uint32_t)(b.n - 16));
    vt_sha256(b.p, b.n, sha);
    vt__buf_put(c, &b, sha, 32);
    vt__write_all(c, c->logf, b.p, b.n, "the log header");
    c->stats.bytes += (int64_t)b.n;
    VT_FREE(b.p, c->u);
    return c->status;
}

/* A record of an op from a newer op table than the header names: the
   header is rewritten in place (the same length) to name that table, so a
   log of table-0 ops stays byte for byte what vtrain 0.2.0 wrote and a
   reader that knows only table 0 refuses a log with conv2d in it by name. */
static void vt__log_need_table(vt_ctx *c, int kind) {
    int op = kind / 8;
    long pos;
    int64_t bytes = c->stats.bytes;
    if (op < 0 || op >= VT_OP_COUNT || vt__ops[op].table <= c->log_table) return;
    c->log_table = vt__ops[op].table;
    if (!c->logf) return;
    fflush(c->logf);
    pos = ftell(c->logf);
    if (pos < 0 || fseek(c->logf, 0, SEEK_SET) != 0) { vt__fail(c, VT_ERR_IO, "cannot rewrite the log header of '%s'", c->logpath); return; }
    vt__log_write_header(c);
    c->stats.bytes = bytes;
    fflush(c->logf);
    if (fseek(c->logf, pos, SEEK_SET) != 0) vt__fail(c, VT_ERR_IO, "cannot seek in the log '%s'", c->logpath);
}

static vt_status vt__log_open_write(vt_ctx *c) {
    if (c->d.resume) { /* vt_resume cuts it after the last checkpoint and appends, or starts it again */
        c->logf = fopen(c->d.log_path, "r+b");
        if (!c->logf && errno == ENOENT) c->logf = fopen(c->d.log_path, "w+b"); /* killed before it was made */
        if (!c->logf) return vt__fail(c, VT_ERR_IO, "resume: cannot open the log '%s'", c->d.log_path);
        return VT_OK;
    }
    c->logf = fopen(c->d.log_path, "wb");
    if (!c->logf) return vt__fail(c, VT_ERR_IO, "cannot create the log file '%s'", c->d.log_path);
    return vt__log_write_header(c);
}

static vt_status vt__read_exact(vt_ctx *c, FILE *f, void *p, size_t n, const char *path, const char *what) {
    size_t got = fread(p, 1, n, f);
    if (got != n)
        return vt__fail(c, VT_ERR_TRUNCATED, "'%s' is truncated: %s needs %zu bytes, the file has %zu", path, what, n, got);
    return VT_OK;
}

static vt_status vt__log_open_read(vt_ctx *c) {
    vt__logrd *r = &c->rd;
    unsigned char h[16], sha[32], want[32], *body = NULL;
    uint32_t blen, n, i;
    const char *path = c->d.log_path;
    r->f = fopen(path, "rb");
    if (!r->f) return vt__fail(c, VT_ERR_IO, "cannot open the log file '%s'", path);
    fseek(r->f, 0, SEEK_END);
    r->fsize = (int64_t)ftell(r->f);
    fseek(r->f, 0, SEEK_SET);
    if (vt__read_exact(c, r->f, h, 16, path, "the header") != VT_OK) return c->status;
    if (memcmp(h, "VTRAINLG", 8)) return vt__fail(c, VT_ERR_FORMAT, "'%s' is not a vtrain log (bad magic)", path);
    if (vt__get_u32(h + 8) != VT__LOG_VERSION)
        return vt__fail(c, VT_ERR_FORMAT, "'%s' has log format version %u, this vtrain (%s) reads version %u%s", path,
                        vt__get_u32(h + 8), VTRAIN_VERSION_STRING, VT__LOG_VERSION,
                        vt__get_u32(h + 8) == 1 ? ": audit it with vtrain 0.1.0, which computed its exp, log and tanh with the "
                                                  "same libm functions as its trainer" : "");
    blen = vt__get_u32(h + 12);
    if ((int64_t)blen + 48 > r->fsize || blen < 24)
        return vt__fail(c, VT_ERR_TRUNCATED, "'%s': header length %u does not fit in the file (%lld bytes)", path, blen, (long long)r->fsize);
    body = (unsigned char *)vt__xmalloc(c, 16 + blen);
    if (!body) return c->status;
    memcpy(body, h, 16);
    if (vt__read_exact(c, r->f, body + 16, blen, path, "the header") != VT_OK ||
        vt__read_exact(c, r->f, sha, 32, path, "the header checksum") != VT_OK) { VT_FREE(body, c->u); return c->status; }
    vt_sha256(body, 16 + blen, want);
    if (memcmp(sha, want, 32)) { VT_FREE(body, c->u); return vt__fail(c, VT_ERR_CHECKSUM, "'%s': the header checksum does not match (corrupted)", path); }
    {
        const unsigned char *p = body + 16;
        uint64_t u;
        int mode = p[0], bound = p[1], table = p[3];
        if (mode != VT_MODE_VERIFIED || bound >= VT_BOUND_COUNT || table > VT__OP_TABLE) {
            VT_FREE(body, c->u);
            if (mode != VT_MODE_VERIFIED) return vt__fail(c, VT_ERR_FORMAT, "'%s' was written in mode %d; only verified runs have a log to audit", path, mode);
            if (table > VT__OP_TABLE)
                return vt__fail(c, VT_ERR_FORMAT, "'%s' was written with op table %d, this vtrain (%s) knows op table %d: "
                                                  "audit it with a newer vtrain", path, table, VTRAIN_VERSION_STRING, VT__OP_TABLE);
            return vt__fail(c, VT_ERR_FORMAT, "'%s': unknown bound mode %d", path, bound);
        }
        c->rd.table = table;
        c->d.bound = (vt_bound_mode)p[1];
        c->ord.bmode = c->d.bound;
        u = vt__get_u64(p + 4); memcpy(&c->ord.lambda, &u, 8);
        u = vt__get_u64(p + 12); memcpy(&c->calib.margin, &u, 8);
        n = vt__get_u32(p + 20);
        if ((uint64_t)n * 20 + 24 != blen) { VT_FREE(body, c->u); return vt__fail(c, VT_ERR_FORMAT, "'%s': calibration table size does not match the header", path); }
        c->calib.count = 0;
        if (n) {
            c->calib.e = (vt_calib_entry *)vt__xmalloc(c, sizeof(vt_calib_entry) * n);
            if (!c->calib.e) { VT_FREE(body, c->u); return c->status; }
            c->calib.cap = (int)n;
        }
        for (i = 0; i < n; i++) {
            const unsigned char *q = p + 24 + 20 * i;
            vt_calib_entry *e = &c->calib.e[i];
            uint32_t kind = vt__get_u32(q);
            memset(e, 0, sizeof *e);
            e->n = (int64_t)vt__get_u64(q + 4);
            u = vt__get_u64(q + 12); memcpy(&e->factor, &u, 8);
            if (!vt__kind_in_table(kind, table)) {
                char nm[64];
                vt__kind_name(kind, nm, sizeof nm);
                VT_FREE(body, c->u);
                return vt__fail(c, VT_ERR_FORMAT, "'%s': calibration entry %u has kind %u (%s), which op table %d does not have",
                                path, i, (unsigned)kind, nm, table);
            }
            e->kind = (int)kind;
        }
        c->calib.count = (int)n;
    }
    VT_FREE(body, c->u);
    return VT_OK;
}

/* The header's fields that vt__log_open_read takes as they come, checked
   (it has passed its checksum): the compact flag is 0 or 1 (each entry
   carries its own width); lambda is positive; without calibration there is
   no table and no margin; a calibration table has a finite margin, and
   factors in [0, 1] (a calibrated bound is never above the sound one: a
   larger factor would only widen what a trainer may write) for distinct
   (kind, size) pairs of at least one element. In a transcript, bound and
   lambda must be the manifest's. The file is left where the reader left it. */
static vt_status vt__log_header_check(vt_ctx *c) {
    vt__logrd *r = &c->rd;
    unsigned char h[48];
    long at = ftell(r->f);
    const char *path = c->d.log_path;
    double lambda = c->ord.lambda, margin = c->calib.margin; /* as the reader took them */
    int i, k;
    /* the compact flag is the one field the reader does not keep: byte 2 of the body */
    if (at < 0 || fseek(r->f, 0, SEEK_SET) != 0 || fread(h, 1, sizeof h, r->f) != sizeof h || fseek(r->f, at, SEEK_SET) != 0)
        return vt__fail(c, VT_ERR_IO, "'%s': cannot read its header again", path);
    if (h[18] > 1) return vt__fail(c, VT_ERR_FORMAT, "'%s': the header's compact flag is %d (0 or 1)", path, h[18]);
    if (!(lambda > 0) || !isfinite(lambda)) return vt__fail(c, VT_ERR_FORMAT, "'%s': the header's lambda %g is not a positive number", path, lambda);
    if (c->d.bound != VT_BOUND_CALIBRATED && (c->calib.count || margin != 0))
        return vt__fail(c, VT_ERR_FORMAT, "'%s': a %s log carries a calibration table (%d entries, margin %g)", path, vt_bound_name(c->d.bound),
                        c->calib.count, margin);
    if (c->d.bound == VT_BOUND_CALIBRATED && (!(margin >= 0) || !isfinite(margin)))
        return vt__fail(c, VT_ERR_FORMAT, "'%s': the calibration margin %g is not a finite non-negative number", path, margin);
    for (i = 0; i < c->calib.count; i++) {
        const vt_calib_entry *e = &c->calib.e[i];
        if (!(e->factor >= 0 && e->factor <= 1) || e->n < 1)
            return vt__fail(c, VT_ERR_FORMAT, "'%s': calibration entry %d has factor %g (0..1) for %lld elements (at least 1)", path, i,
                            e->factor, (long long)e->n);
        for (k = 0; k < i; k++)
            if (c->calib.e[k].kind == e->kind && c->calib.e[k].n == e->n)
                return vt__fail(c, VT_ERR_FORMAT, "'%s': calibration entries %d and %d are for the same point kind and size", path, k, i);
    }
    if (c->tdir[0] && c->d.role == VT_ROLE_AUDIT && ((int)c->d.bound != c->man_bound || lambda != c->man_lambda))
        return vt__fail(c, VT_ERR_MISMATCH, "'%s' was written with bound %s (lambda %.17g), '%s/manifest.txt' says %s (lambda %.17g)", path,
                        vt_bound_name(c->d.bound), lambda, c->tdir, vt_bound_name((vt_bound_mode)c->man_bound), c->man_lambda);
    return VT_OK;
}

static vt_status vt__chunk_write(vt_ctx *c) {
    unsigned char h[VT__CHUNK_HDR];
    int repeat = !c->force_full && c->step_no % 64 != 0 && c->shape_prev.n == c->shape_cur.n &&
                 (!c->shape_cur.n || !memcmp(c->shape_prev.p, c->shape_cur.p, c->shape_cur.n));
    const vt__buf *body = repeat ? &c->cbody : &c->chunk;
    memcpy(h, repeat ? "VTCR" : "VTCK", 4);
    vt__put_u64(h + 4, (uint64_t)c->step_no);
    vt__put_u32(h + 12, (uint32_t)c->chunk_points);
    vt__put_u32(h + 16, (uint32_t)c->chunk_entries);
    vt__put_u64(h + 20, (uint64_t)body->n);
    c->force_full = 0;
    if (!repeat) { /* the headers of this step become the reference */
        vt__buf t = c->shape_prev;
        c->shape_prev = c->shape_cur;
        c->shape_cur = t;
    }
    c->lastchunk.n = 0;
    if (!vt__buf_put(c, &c->lastchunk, h, sizeof h) || !vt__buf_put(c, &c->lastchunk, body->p, body->n)) return c->status;
    vt_sha256(c->lastchunk.p, c->lastchunk.n, c->last_chunk_sha);
    if (!vt__buf_put(c, &c->lastchunk, c->last_chunk_sha, 32)) return c->status;
    c->stats.bytes += (int64_t)c->lastchunk.n;
    if (!c->logf) return VT_OK;
    if (vt__write_all(c, c->logf, c->lastchunk.p, c->lastchunk.n, "a log chunk") != VT_OK) return c->status;
    if (fflush(c->logf) != 0) return vt__fail(c, VT_ERR_IO, "flushing the log '%s' failed", c->d.log_path);
    return VT_OK;
}

VTDEF vt_status vt_step_chunk(const vt_ctx *c, const unsigned char **bytes, size_t *len) {
    *bytes = c->lastchunk.p;
    *len = c->lastchunk.n;
    return c->lastchunk.n ? VT_OK : VT_ERR_STATE;
}
VTDEF void vt_step_chunk_sha(const vt_ctx *c, unsigned char out[32]) { memcpy(out, c->last_chunk_sha, 32); }

VTDEF vt_status vt_feed_chunk(vt_ctx *c, const unsigned char *bytes, size_t len) {
    if (!c->d.log_memory || c->d.role != VT_ROLE_AUDIT) return vt__fail(c, VT_ERR_STATE, "vt_feed_chunk: only an auditor with log_memory takes chunks");
    if (c->d.mode != VT_MODE_VERIFIED) /* it would never read it: a replay that ignores the log must not look like an audit */
        return vt__fail(c, VT_ERR_STATE, "vt_feed_chunk: this auditor runs mode %s, which reads no log: audit in verified mode",
                        vt_mode_name(c->d.mode));
    c->fed.n = 0;
    if (!vt__buf_put(c, &c->fed, bytes, len)) return c->status;
    c->have_fed = 1;
    return VT_OK;
}

/* check a chunk (header h, body, checksum) for the replay's step and take its body */
static vt_status vt__chunk_accept(vt_ctx *c, const unsigned char *h, const unsigned char *body, uint64_t blen,
                                  const unsigned char *sha, const char *src) {
    vt__logrd *r = &c->rd;
    unsigned char want[32];
    vt_sha256_ctx s;
    uint64_t step = vt__get_u64(h + 4);
    int repeat = !memcmp(h, "VTCR", 4);
    if (memcmp(h, "VTCK", 4) && !repeat) return vt__fail(c, VT_ERR_FORMAT, "%s: not a log chunk (bad magic) at step %lld", src, (long long)c->step_no);
    /* a short chunk needs the headers of an earlier full one; a single
       chunk fed in memory (the judge's one step) replays without them: the
       records are then matched by position and count, and the step's result
       is checked against its commitment anyway */
    r->noshape = repeat && !r->have_full;
    if (r->noshape && !c->d.log_memory)
        return vt__fail(c, VT_ERR_FORMAT, "%s: step %lld's chunk reuses the record headers of an earlier full chunk, and none was read: "
                                          "start the audit at a step whose chunk is full (every 64th step, and checkpoints)",
                        src, (long long)c->step_no);
    if (step != (uint64_t)c->step_no)
        return vt__fail(c, VT_ERR_DESYNC, "log desync: %s has step %llu next, the replay is at step %lld", src, (unsigned long long)step, (long long)c->step_no);
    vt_sha256_init(&s);
    vt_sha256_update(&s, h, VT__CHUNK_HDR);
    vt_sha256_update(&s, body, (size_t)blen);
    vt_sha256_final(&s, want);
    if (memcmp(sha, want, 32)) return vt__fail(c, VT_ERR_CHECKSUM, "%s: the checksum of step %lld's chunk does not match (corrupted)", src, (long long)c->step_no);
    if (blen > r->chunk.cap) {
        unsigned char *q = (unsigned char *)VT_REALLOC(r->chunk.p, (size_t)blen, c->u);
        if (!q) return vt__fail(c, VT_ERR_NOMEM, "out of memory reading a log chunk of %llu bytes", (unsigned long long)blen);
        r->chunk.p = q;
        r->chunk.cap = (size_t)blen;
    }
    if (blen) memcpy(r->chunk.p, body, (size_t)blen);
    r->chunk.n = (size_t)blen;
    memcpy(c->last_chunk_sha, sha, 32);
    r->pos = 0;
    r->spos = 0;
    r->repeat = repeat;
    {   /* walk the records: a full chunk's headers become the reference for
           the short chunks that follow; the record count must match the
           chunk header (and, for a short chunk, the reference) */
        size_t q = 0;
        uint64_t nrec = 0, want = vt__get_u32(h + 12), nent = 0;
        int ok = 1;
        if (!repeat) { r->shape.n = 0; r->shape_records = 0; r->have_full = 1; }
        while (ok && q < r->chunk.n) {
            size_t h0 = q;
            uint64_t v, nd, ne, k;
            if (!repeat) {
                ok = vt__get_varint(r->chunk.p, r->chunk.n, &q, &v) && vt__get_varint(r->chunk.p, r->chunk.n, &q, &nd) && nd <= VT_MAX_DIMS;
                if (ok && r->table >= 0 && !vt__kind_in_table(v > (uint64_t)INT32_MAX ? -1 : (int64_t)v, r->table))
                    return vt__fail(c, VT_ERR_FORMAT, "%s: step %lld's chunk, record %llu: kind %llu is not in op table %d, the one "
                                                      "the log's header names (edited or corrupted)",
                                    src, (long long)c->step_no, (unsigned long long)nrec, (unsigned long long)v, r->table);
                for (k = 0; ok && k < nd; k++) ok = vt__get_varint(r->chunk.p, r->chunk.n, &q, &v);
                if (ok) vt__buf_put(c, &r->shape, r->chunk.p + h0, q - h0);
            }
            ok = ok && vt__get_varint(r->chunk.p, r->chunk.n, &q, &ne) && ne <= r->chunk.n;
            if (ok) nent += ne;
            for (k = 0; ok && k < ne; k++) {
                ok = vt__get_varint(r->chunk.p, r->chunk.n, &q, &v);
                q += (v & 1) ? 4 : 1;
            }
            ok = ok && q <= r->chunk.n;
            nrec++;
        }
        if (!repeat) r->shape_records = nrec;
        if (!ok) return vt__fail(c, VT_ERR_FORMAT, "%s: step %lld's chunk is malformed (record %llu runs past its end)", src,
                                 (long long)c->step_no, (unsigned long long)nrec);
        if (nrec != want)
            return vt__fail(c, VT_ERR_FORMAT, "%s: step %lld's chunk header says %llu records, its body holds %llu (edited or corrupted)",
                            src, (long long)c->step_no, (unsigned long long)want, (unsigned long long)nrec);
        if (nent != vt__get_u32(h + 16))
            return vt__fail(c, VT_ERR_FORMAT, "%s: step %lld's chunk header says %u entries, its records hold %llu (edited or corrupted)", src,
                            (long long)c->step_no, vt__get_u32(h + 16), (unsigned long long)nent);
        if (repeat && !r->noshape && nrec != r->shape_records)
            return vt__fail(c, VT_ERR_DESYNC, "log desync at step %lld: the chunk has %llu records, the full chunk whose headers it reuses has %llu",
                            (long long)c->step_no, (unsigned long long)nrec, (unsigned long long)r->shape_records);
    }
    r->step = (int64_t)step;
    c->stats.bytes += (int64_t)(VT__CHUNK_HDR + blen + 32);
    return VT_OK;
}

static vt_status vt__chunk_take_fed(vt_ctx *c) {
    const unsigned char *p = c->fed.p;
    size_t n = c->fed.n;
    uint64_t blen;
    if (!c->have_fed) return vt__fail(c, VT_ERR_STATE, "step %lld: no log chunk was fed (vt_feed_chunk) for this step", (long long)c->step_no);
    c->have_fed = 0;
    if (n < VT__CHUNK_HDR + 32) return vt__fail(c, VT_ERR_TRUNCATED, "the fed chunk for step %lld has %zu bytes, less than a header", (long long)c->step_no, n);
    blen = vt__get_u64(p + 20);
    if (blen != n - VT__CHUNK_HDR - 32)
        return vt__fail(c, VT_ERR_TRUNCATED, "the fed chunk for step %lld claims %llu body bytes, it has %zu", (long long)c->step_no,
                        (unsigned long long)blen, n - VT__CHUNK_HDR - 32);
    return vt__chunk_accept(c, p, p + VT__CHUNK_HDR, blen, p + VT__CHUNK_HDR + blen, "the fed chunk");
}

/* the body length in the header h of a log chunk that starts at byte `at`
   of a log of fsize bytes (its header read), or -1 when the body and its
   checksum do not fit in the bytes left: the length is compared with what
   is left before any sum, so that one near 2^64 cannot wrap or ask for a
   huge allocation. The error names the step; it is the thread's last
   (vt__tls_fail), for the three readers that walk chunks: vt__chunk_read,
   vt__chunk_offset, vt_transcript_chunk. */
static int64_t vt__chunk_body_len(const unsigned char *h, int64_t at, int64_t fsize, const char *path, int64_t step) {
    uint64_t bl = vt__get_u64(h + 20);
    int64_t left = fsize - at - VT__CHUNK_HDR;
    if (left < 32 || bl > (uint64_t)(left - 32)) {
        vt__tls_fail(VT_ERR_TRUNCATED, "'%s': the chunk of step %lld claims %llu body bytes, the file has %lld left after its header "
                                       "(truncated or corrupted)", path, (long long)step, (unsigned long long)bl, (long long)(left > 0 ? left : 0));
        return -1;
    }
    return (int64_t)bl;
}

static vt_status vt__chunk_read(vt_ctx *c) {
    vt__logrd *r = &c->rd;
    unsigned char h[VT__CHUNK_HDR], sha[32];
    int64_t blen, at = (int64_t)ftell(r->f);
    const char *path = c->d.log_path;
    vt_status st;
    if (at == r->fsize)
        return vt__fail(c, VT_ERR_TRUNCATED, "'%s' ends before step %lld (the trainer's log has fewer steps, or was truncated)", path, (long long)c->step_no);
    if (vt__read_exact(c, r->f, h, sizeof h, path, "a chunk header") != VT_OK) return c->status;
    if (memcmp(h, "VTCK", 4) && memcmp(h, "VTCR", 4)) return vt__fail(c, VT_ERR_FORMAT, "'%s': no chunk at byte %lld (corrupted)", path, (long long)at);
    if ((blen = vt__chunk_body_len(h, at, r->fsize, path, c->step_no)) < 0) return vt__fail(c, VT_ERR_TRUNCATED, "%s", vt_last_error());
    c->fed.n = 0;
    if (c->fed.cap < (size_t)blen + 1) {
        unsigned char *q = (unsigned char *)VT_REALLOC(c->fed.p, (size_t)blen + 1, c->u);
        if (!q) return vt__fail(c, VT_ERR_NOMEM, "out of memory reading a log chunk of %lld bytes", (long long)blen);
        c->fed.p = q;
        c->fed.cap = (size_t)blen + 1;
    }
    if (vt__read_exact(c, r->f, c->fed.p, (size_t)blen, path, "a chunk body") != VT_OK ||
        vt__read_exact(c, r->f, sha, 32, path, "a chunk checksum") != VT_OK)
        return c->status;
    {
        char src[600];
        snprintf(src, sizeof src, "'%s'", path);
        st = vt__chunk_accept(c, h, c->fed.p, blen, sha, src);
    }
    return st;
}

/* ==========================================================================
   >>commit  per-step commitments

   commits file = "VTRAINCM" u32 version(2) u32 0, manifest sha[32], then per step:
     "VTCM" u64 step, weights digest[32], log chunk sha[32], batch digest[32],
     u32 n, n x tensor digest[32], sha256(record)[32]
   The weights digest is SHA-256 over (name length, name, ndim, dims, tensor
   digest) per parameter in creation order; a tensor digest is SHA-256 of its
   values as binary32, little-endian, row-major.
   ========================================================================== */

/* A tensor's digest is a two-level hash, so that it can be computed in
   parallel (threads here, thread blocks on a GPU): the tensor's values as
   binary32 little-endian bytes are cut into blocks of 64 KiB, each block is
   hashed, and the digest is SHA-256("vtrain-tensor-1", u64 byte count, the
   block digests in order). */
#define VT__DIG_BLOCK 16384 /* values per block (64 KiB) */

static void vt__block_digest(const vt_tensor *t, int64_t b, unsigned char out[32]) {
    unsigned char buf[4 * 1024];
    vt_sha256_ctx s;
    int64_t i, i0 = b * VT__DIG_BLOCK, i1 = VT__MIN(vt_numel(t), i0 + VT__DIG_BLOCK), k = 0;
    int contig = vt_is_contiguous(t);
    const double *d = vt__d(t);
    vt_sha256_init(&s);
    if (contig && vt__host_le()) { /* the same bytes, converted 1024 at a time (vectorises) */
        float f[1024];
        for (i = i0; i < i1; i += k) {
            k = VT__MIN(1024, i1 - i);
            { int64_t e; for (e = 0; e < k; e++) f[e] = (float)d[i + e]; }
            vt_sha256_update(&s, f, 4 * (size_t)k);
        }
        vt_sha256_final(&s, out);
        return;
    }
    for (i = i0; i < i1; i++) {
        uint32_t v = vt__fbits((float)(contig ? d[i] : d[vt__off(t, i)]));
        buf[k] = (unsigned char)v; buf[k + 1] = (unsigned char)(v >> 8);
        buf[k + 2] = (unsigned char)(v >> 16); buf[k + 3] = (unsigned char)(v >> 24);
        k += 4;
        if (k == (int64_t)sizeof buf) { vt_sha256_update(&s, buf, (size_t)k); k = 0; }
    }
    vt_sha256_update(&s, buf, (size_t)k);
    vt_sha256_final(&s, out);
}

/* two blocks at once (vt__sha256_update2): the same digests as two calls */
static void vt__block_digest2(const vt_tensor *ta, int64_t ba, const vt_tensor *tb, int64_t bb, unsigned char oa[32], unsigned char ob[32]) {
    int64_t ia = ba * VT__DIG_BLOCK, ea = VT__MIN(vt_numel(ta), ia + VT__DIG_BLOCK);
    int64_t ib = bb * VT__DIG_BLOCK, eb = VT__MIN(vt_numel(tb), ib + VT__DIG_BLOCK);
    const double *da = vt__d(ta), *db = vt__d(tb);
    float fa[1024], fb[1024];
    vt_sha256_ctx sa, sb;
    if (!vt__host_le() || !vt_is_contiguous(ta) || !vt_is_contiguous(tb)) {
        vt__block_digest(ta, ba, oa);
        vt__block_digest(tb, bb, ob);
        return;
    }
    vt_sha256_init(&sa);
    vt_sha256_init(&sb);
    while (ia < ea || ib < eb) {
        int64_t ka = VT__MIN(1024, ea - ia), kb = VT__MIN(1024, eb - ib), e;
        for (e = 0; e < ka; e++) fa[e] = (float)da[ia + e];
        for (e = 0; e < kb; e++) fb[e] = (float)db[ib + e];
        if (ka == kb) vt__sha256_update2(&sa, fa, &sb, fb, 4 * (size_t)ka);
        else {
            vt_sha256_update(&sa, fa, 4 * (size_t)ka);
            vt_sha256_update(&sb, fb, 4 * (size_t)kb);
        }
        ia += ka;
        ib += kb;
    }
    vt_sha256_final(&sa, oa);
    vt_sha256_final(&sb, ob);
}

static int64_t vt__dig_nblocks(const vt_tensor *t) { return (vt_numel(t) + VT__DIG_BLOCK - 1) / VT__DIG_BLOCK; }

static void vt__digest_combine(const vt_tensor *t, const unsigned char *blocks, unsigned char out[32]) {
    vt_sha256_ctx s;
    unsigned char n8[8];
    vt_sha256_init(&s);
    vt_sha256_update(&s, "vtrain-tensor-1", 15);
    vt__put_u64(n8, (uint64_t)(4 * vt_numel(t)));
    vt_sha256_update(&s, n8, 8);
    vt_sha256_update(&s, blocks, 32 * (size_t)vt__dig_nblocks(t));
    vt_sha256_final(&s, out);
}

/* the committed state: the parameters, then the optimizer moments */
static int vt__nstate(const vt_ctx *c) { return c->nparams + c->nxstate; }
static vt_tensor *vt__state(const vt_ctx *c, int i) { return i < c->nparams ? c->params[i] : c->xstate[i - c->nparams]; }

/* a block of the concatenated state: its tensor, its index there, its length */
typedef struct { int t; int64_t b, len; } vt__dig_blk;
typedef struct { vt_ctx *c; vt__dig_blk *q; int64_t *first, nq; unsigned char *blk, *done; int nt; } vt__dig_job;

static int vt__dig_cmp(const void *x, const void *y) {
    const vt__dig_blk *a = (const vt__dig_blk *)x, *b = (const vt__dig_blk *)y;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    return a->b < b->b ? -1 : a->b > b->b;
}

/* task k hashes blocks q[2k] and q[2k+1] (sorted by length, so that the
   two of a pair are mostly the same length: a weight and its moments) */
static void vt__dig_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__dig_job *j = (vt__dig_job *)arg;
    int64_t k;
    (void)tid;
    for (k = lo; k < hi; k++) {
        const vt__dig_blk *a = &j->q[2 * k], *b = &j->q[2 * k + 1];
        unsigned char *oa = j->blk + 32 * (j->first[a->t] + a->b);
        if (2 * k + 1 < j->nq)
            vt__block_digest2(vt__state(j->c, a->t), a->b, vt__state(j->c, b->t), b->b, oa, j->blk + 32 * (j->first[b->t] + b->b));
        else vt__block_digest(vt__state(j->c, a->t), a->b, oa);
    }
}

VTDEF vt_status vt_tensor_digest(vt_ctx *c, const vt_tensor *t, unsigned char out[32]) {
    unsigned char *blk;
    int64_t b, nb;
    if (!t || t->dtype == VT_I32) return vt__fail(c, VT_ERR_ARG, "vt_tensor_digest: need a real tensor");
    nb = vt__dig_nblocks(t);
    blk = (unsigned char *)vt__xmalloc(c, 32 * (size_t)(nb + 1));
    if (!blk) return c->status;
    if (!c->be->block_digests || !c->be->block_digests(c, t, blk)) {
        vt__sync_host(c, t);
        for (b = 0; b < nb; b++) vt__block_digest(t, b, blk + 32 * b);
    }
    vt__digest_combine(t, blk, out);
    VT_FREE(blk, c->u);
    return VT_OK;
}

/* per-parameter digests into td (32 * nparams), the combined digest into out */
static vt_status vt__digests(vt_ctx *c, unsigned char *td, unsigned char out[32]) {
    vt__dig_job j;
    vt_sha256_ctx s;
    int i, d, nt = vt__nstate(c);
    int64_t nb = 0;
    j.c = c; j.nt = nt;
    j.first = (int64_t *)vt__xmalloc(c, (sizeof(int64_t) + 1) * (size_t)(nt + 1));
    if (!j.first) return c->status;
    j.done = (unsigned char *)(j.first + nt + 1);
    for (i = 0; i < nt; i++) { j.first[i] = nb; nb += vt__dig_nblocks(vt__state(c, i)); }
    j.blk = (unsigned char *)vt__xmalloc(c, 32 * (size_t)(nb + 1));
    if (!j.blk) { VT_FREE(j.first, c->u); return c->status; }
    /* a backend with memory may hash its own copy; otherwise the host's */
    for (i = 0; i < nt; i++) {
        vt_tensor *t = vt__state(c, i);
        j.done[i] = c->be->block_digests && c->be->block_digests(c, t, j.blk + 32 * j.first[i]);
        if (!j.done[i]) vt__sync_host(c, t);
    }
    j.q = (vt__dig_blk *)vt__xmalloc(c, sizeof(vt__dig_blk) * (size_t)(nb + 1));
    if (!j.q) { VT_FREE(j.blk, c->u); VT_FREE(j.first, c->u); return c->status; }
    for (i = 0, j.nq = 0; i < nt; i++) {
        const vt_tensor *t = vt__state(c, i);
        int64_t b;
        if (j.done[i]) continue;
        for (b = 0; b < vt__dig_nblocks(t); b++) {
            vt__dig_blk *q = &j.q[j.nq++];
            q->t = i;
            q->b = b;
            q->len = VT__MIN(vt_numel(t) - b * VT__DIG_BLOCK, VT__DIG_BLOCK);
        }
    }
    qsort(j.q, (size_t)j.nq, sizeof(vt__dig_blk), vt__dig_cmp);
    vt__parallel(&c->pool, (j.nq + 1) / 2, j.nq * VT__DIG_BLOCK * 4, vt__dig_task, &j);
    VT_FREE(j.q, c->u);
    for (i = 0; i < nt; i++) vt__digest_combine(vt__state(c, i), j.blk + 32 * j.first[i], td + 32 * i);
    VT_FREE(j.blk, c->u);
    VT_FREE(j.first, c->u);
    vt_sha256_init(&s);
    for (i = 0; i < vt__nstate(c); i++) {
        vt_tensor *t = vt__state(c, i);
        unsigned char b[8];
        uint32_t nl = (uint32_t)strlen(t->name);
        vt__put_u32(b, nl); vt_sha256_update(&s, b, 4);
        vt_sha256_update(&s, t->name, nl);
        vt__put_u32(b, (uint32_t)t->ndim); vt_sha256_update(&s, b, 4);
        for (d = 0; d < t->ndim; d++) { vt__put_u64(b, (uint64_t)t->ne[d]); vt_sha256_update(&s, b, 8); }
        vt_sha256_update(&s, td + 32 * i, 32);
    }
    vt_sha256_final(&s, out);
    return VT_OK;
}

VTDEF vt_status vt_weights_digest(vt_ctx *c, unsigned char out[32]) {
    unsigned char *td = (unsigned char *)vt__xmalloc(c, 32 * (size_t)(vt__nstate(c) + 1));
    if (!td) return c->status;
    vt__digests(c, td, out);
    VT_FREE(td, c->u);
    return VT_OK;
}

/* inside a shard the bytes wait in the shard's contribution: the step's
   batch digest takes every shard's in shard order (>>step) */
VTDEF void vt_commit_batch(vt_ctx *c, const int64_t *idx, int64_t n) {
    int64_t i;
    for (i = 0; i < n; i++) {
        unsigned char b[8];
        vt__put_u64(b, (uint64_t)idx[i]);
        if (c->sh.cur >= 0) vt__buf_put(c, &c->sh.batch, b, 8);
        else vt_sha256_update(&c->batch, b, 8);
    }
    c->batch_used = 1;
}

static void vt__commit_path(const vt_ctx *c, char *buf, size_t n) {
    if (c->commitpath[0]) snprintf(buf, n, "%s", c->commitpath);
    else if (c->d.commit_path) snprintf(buf, n, "%s", c->d.commit_path);
    else snprintf(buf, n, "%s.commits", c->d.log_path);
}

#define VT__COMMIT_HDR 48
static vt_status vt__commit_write_header(vt_ctx *c) {
    unsigned char h[VT__COMMIT_HDR];
    memcpy(h, "VTRAINCM", 8);
    vt__put_u32(h + 8, 2); vt__put_u32(h + 12, 0);
    memcpy(h + 16, c->manifest_sha, 32);
    return vt__write_all(c, c->commitf, h, VT__COMMIT_HDR, "the commitments header");
}

static vt_status vt__commit_open(vt_ctx *c) {
    char path[1024];
    unsigned char h[VT__COMMIT_HDR];
    vt__commit_path(c, path, sizeof path);
    if (c->d.role == VT_ROLE_TRAIN) {
        c->commitf = fopen(path, c->d.resume ? "r+b" : "wb");
        if (!c->commitf && c->d.resume && errno == ENOENT) c->commitf = fopen(path, "w+b");
        if (!c->commitf) return vt__fail(c, VT_ERR_IO, "cannot %s the commitments file '%s'", c->d.resume ? "open" : "create", path);
        if (c->d.resume) return VT_OK; /* vt_resume positions it */
        if (vt__commit_write_header(c) != VT_OK) return c->status;
        c->root_ok = 1; /* from here on, root.txt describes what commits.bin holds */
        return VT_OK;
    }
    c->commitf = fopen(path, "rb");
    if (!c->commitf) return vt__fail(c, VT_ERR_IO, "cannot open the trainer's commitments '%s'", path);
    if (vt__read_exact(c, c->commitf, h, VT__COMMIT_HDR, path, "the header") != VT_OK) return c->status;
    if (memcmp(h, "VTRAINCM", 8) || vt__get_u32(h + 8) != 2 || vt__get_u32(h + 12) != 0)
        return vt__fail(c, VT_ERR_FORMAT, "'%s' is not a vtrain commitments file (version 2, reserved field 0)", path);
    if (c->tdir[0] && memcmp(h + 16, c->manifest_sha, 32))
        return vt__fail(c, VT_ERR_MISMATCH, "'%s/manifest.txt' was changed after the run: its hash differs from the one in '%s'", c->tdir, path);
    return VT_OK;
}

/* the step's commitment: write it (trainer) or compare with it (auditor) */
static vt_status vt__commit_step(vt_ctx *c) {
    unsigned char *rec, digest[32], batch[32], path_sha[32];
    size_t n = (size_t)vt__nstate(c), len = 4 + 8 + 32 * 3 + 4 + 32 * n;
    char path[1024];
    vt_sha256_ctx bs = c->batch;
    vt__commit_path(c, path, sizeof path);
    rec = (unsigned char *)vt__xmalloc(c, 2 * (len + 32));
    if (!rec) return c->status;
    vt_sha256_final(&bs, batch);
    memcpy(rec, "VTCM", 4);
    vt__put_u64(rec + 4, (uint64_t)c->step_no);
    vt__digests(c, rec + 12 + 96 + 4, digest);
    memcpy(rec + 12, digest, 32);
    memcpy(rec + 44, c->last_chunk_sha, 32);
    memcpy(rec + 76, batch, 32);
    vt__put_u32(rec + 108, (uint32_t)n);
    vt_sha256(rec, len, rec + len);
    if (c->d.role == VT_ROLE_TRAIN) {
        vt__write_all(c, c->commitf, rec, len + 32, "a commitment");
        if (c->status == VT_OK && fflush(c->commitf) != 0) vt__fail(c, VT_ERR_IO, "flushing '%s' failed", path);
    } else {
        unsigned char *tr = rec + len + 32;
        if (vt__read_exact(c, c->commitf, tr, len + 32, path, "a step commitment") == VT_OK) {
            vt_sha256(tr, len, path_sha);
            if (memcmp(tr, "VTCM", 4) || memcmp(path_sha, tr + len, 32))
                vt__fail(c, VT_ERR_CHECKSUM, "'%s': the commitment record of step %lld is corrupted", path, (long long)c->step_no);
            else if (vt__get_u64(tr + 4) != (uint64_t)c->step_no || vt__get_u32(tr + 108) != (uint32_t)n)
                vt__fail(c, VT_ERR_DESYNC, "'%s': commitment for step %llu with %u tensors, the replay is at step %lld with %u",
                         path, (unsigned long long)vt__get_u64(tr + 4), vt__get_u32(tr + 108), (long long)c->step_no, (unsigned)n);
            else if (memcmp(tr + 76, batch, 32))
                vt__fail(c, VT_ERR_MISMATCH, "step %lld: the batch differs from the trainer's (data order or data)", (long long)c->step_no);
            else if (memcmp(tr + 44, c->last_chunk_sha, 32) && c->d.mode != VT_MODE_VERIFIED)
                vt__fail(c, VT_ERR_MISMATCH, "step %lld: the trainer committed a log chunk (it ran verified), and this auditor runs mode %s, "
                         "which reads no log: audit in verified mode", (long long)c->step_no, vt_mode_name(c->d.mode));
            else if (memcmp(tr + 44, c->last_chunk_sha, 32))
                vt__fail(c, VT_ERR_MISMATCH, "step %lld: the log chunk's hash differs from the one the trainer committed", (long long)c->step_no);
            else {
                /* the record must be the auditor's own, byte for byte: the
                   state digest and every tensor digest (a tensor digest
                   edited under an unchanged state digest is caught too) */
                size_t i, nd = 0, first = 0;
                for (i = 0; i < n; i++)
                    if (memcmp(tr + 112 + 32 * i, rec + 112 + 32 * i, 32)) { if (!nd) first = i; nd++; }
                if (nd)
                    vt__fail(c, VT_ERR_MISMATCH, "step %lld: the training state differs from the trainer's commitment: tensor '%s'%s (%zu of %zu tensors differ)%s",
                             (long long)c->step_no, vt__state(c, (int)first)->name, nd > 1 ? " and others" : "", nd, n,
                             memcmp(tr + 12, digest, 32) ? "" : "; the record's state digest matches the replay, so its tensor digests were edited");
                else if (memcmp(tr + 12, digest, 32))
                    vt__fail(c, VT_ERR_MISMATCH, "step %lld: the commitment's state digest is not the digest of its own tensor digests, which match the replay (the record was edited)",
                             (long long)c->step_no);
            }
        }
    }
    VT_FREE(rec, c->u);
    return c->status;
}

/* ==========================================================================
   >>transcript  Merkle tree, manifest, checkpoints, resume, disputes

   A transcript is everything an auditor on another machine needs, and
   nothing it must guess: the manifest (the program's configuration and
   vtrain's settings), the rounding log, the per-step commitments, periodic
   checkpoints and the Merkle root over the step leaves (layout in the
   declarations). Files that must never be seen half-written (checkpoints,
   the root) are written to a temporary file, flushed to disk and renamed.

   MERKLE TREE (RFC 6962): a leaf node is SHA-256(0x00, leaf), an inner node
   SHA-256(0x01, left, right); a level with an odd count promotes its last
   node unchanged, which gives the same root as RFC 6962's split at the
   largest power of two. A proof lists the siblings from the bottom up.

   RESUMING: a checkpoint after N steps is written at the end of step N-1,
   and chunk N of the log is then written full (with its record headers), so
   a trainer that was killed resumes from its last checkpoint by truncating
   the log and the commitments after step N-1 and an auditor can start at N.
   Before it cuts anything, a resume checks the checkpoint (its file, its
   step against its name, its state against the commitment of step N-1) and
   that the log and the commitments reach it: a resume that fails changes no
   file. With no checkpoint at all (killed before the first) it starts again
   at step 0 in the same directory. root.txt is written only by a run that
   started (vt_create and vt_resume succeeded), so a failed command never
   leaves one that refuses the next.

   EVERY FIELD OF EVERY FILE is verified or refused; an auditor trusts
   nothing it did not check. What checks each one (A = every audit, F = an
   audit that replays through that step, R = a resume, J = the dispute):
     manifest.txt   the whole file: its SHA-256 is in commits.bin's header
                    and root.txt (A). Its form: first line, "key = value"
                    lines, each key once, a final newline (A:
                    vt__manifest_check). vtrain.version non-empty; mode,
                    bound names; lambda a positive number; trainer_order an
                    order string; trainer_ckpt_every a positive count;
                    shards (present when S > 1) a count in 2..65536 that
                    must be the auditor's program's (A).
                    Mode sets the audit's mode; bound and lambda must equal
                    the log header's (A). The program's own keys are the
                    program's to check (the CLI parses each strictly, in
                    range); a resume needs the same keys but the trainer_*
                    ones (R).
     log.vtlog      header: magic, version, body length, checksum; mode
                    verified; bound known; op table not newer (A:
                    vt__log_open_read); compact flag 0 or 1, lambda
                    positive, no calibration table or margin unless
                    calibrated, table entries with factors in [0, 1] for
                    distinct (kind, size) (A: vt__log_header_check). The
                    header is in no commitment: bound and lambda are bound
                    through the manifest; a calibration table is not: an
                    edited table can make an audit fail, never pass one
                    past the sound bound, and the judge rules without it
                    (on sound bounds). Each chunk: magic, step,
                    record count, entry count, body length, checksum, its
                    records walked (F), its SHA-256 equal to the step's
                    commitment (F). No byte after the last chunk (A, when
                    the audit reaches the last step).
     commits.bin    header: magic, version 2, reserved field 0, manifest
                    hash (A). Each record: magic, step, checksum (A:
                    vt__parse_leaves); every byte equal to the record the
                    auditor computes: batch digest, chunk hash, state digest
                    and each tensor digest (F). Nothing after the last
                    record, as many records as root.txt's steps (A).
     root.txt       exactly five lines; steps a decimal equal to the
                    records in commits.bin, manifest equal to manifest.txt's
                    hash, leaves_root equal to the Merkle root of the
                    leaves, run equal to the run commitment of the three (A:
                    vt_transcript_check, also in a partial audit, and for
                    each party of a dispute, J).
     ckpt-N.safetensors  JSON header: the metadata keys vtrain writes, each
                    once (format, vtrain.version, step, optimK.t,
                    state_sha256), step and counters decimals, state_sha256
                    64 hex digits; the tensors exactly the program's state
                    by name and shape; their data tiling the data section
                    without a hole, an overlap or a trailing byte; the
                    values hashing to state_sha256 (whenever one is read);
                    step equal to N (R, A from N); the state equal to the
                    commitment of step N-1 (R, A from N). The optimizer
                    counters (optimK.t) are in no commitment: an audit that
                    passes step N checks the whole file against its own
                    state, counters included (F); an audit that starts at N
                    trusts them, and a wrong counter then shows as a state
                    that differs at the next step. The judge rests on
                    counters only when both parties' states carry the same
                    ones, and otherwise replays the trainer from step 0 (J).
   Other files in the directory are not part of the transcript.

   DISPUTE: vt_dispute_transcripts plays the game between two transcripts:
   each must back its own root first (the trainer answers for the root it
   published; an auditor whose files disagree makes no claim), both must be
   verified and the programs and step counts must match (else no game, no
   verdict), agreeing roots end it (no dispute), every answer crosses as
   bytes and is checked (a bad or missing one loses the trainer the game).
   From the first differing step it goes on to the first whose state or
   batch differ (two honest logs may differ in a chunk alone), and that
   step goes to the judge with the trainer's bound settings, on a state
   rebuilt from the trainer's own files (any of them missing, unreadable
   or malformed loses the trainer the game; only this machine's memory,
   backend or temporary files give no verdict). The judge replays the step
   with each party's chunk: a party whose own chunk does not reproduce its
   own leaf is wrong; both valid is no fault. The step-by-step API
   (vt_dispute_begin ...) stops at the first differing leaf; past a
   chunk-only step it needs the later leaf revealed with its proof, which
   it does not carry yet.
   ========================================================================== */

VTDEF void vt_leaf_hash(vt_leaf_info *l) {
    vt_sha256_ctx s;
    unsigned char b[8];
    vt_sha256_init(&s);
    vt_sha256_update(&s, "vtrain-leaf-1", 13);
    vt__put_u64(b, (uint64_t)l->step);
    vt_sha256_update(&s, b, 8);
    vt_sha256_update(&s, l->state, 32);
    vt_sha256_update(&s, l->chunk, 32);
    vt_sha256_update(&s, l->batch, 32);
    vt_sha256_final(&s, l->leaf);
}

static void vt__mnode(const unsigned char *a, const unsigned char *b, unsigned char out[32]) {
    vt_sha256_ctx s;
    unsigned char one = 1;
    vt_sha256_init(&s);
    vt_sha256_update(&s, &one, 1);
    vt_sha256_update(&s, a, 32);
    vt_sha256_update(&s, b, 32);
    vt_sha256_final(&s, out);
}

/* level 0 (leaf nodes) into buf, each level above it in place; returns the root */
static void vt__mlevels(const unsigned char (*leaves)[32], int64_t n, unsigned char (*buf)[32], int64_t i,
                        unsigned char (*path)[32], int *plen, unsigned char root[32]) {
    int64_t k, size = n;
    for (k = 0; k < n; k++) {
        vt_sha256_ctx s;
        unsigned char zero = 0;
        vt_sha256_init(&s);
        vt_sha256_update(&s, &zero, 1);
        vt_sha256_update(&s, leaves[k], 32);
        vt_sha256_final(&s, buf[k]);
    }
    if (plen) *plen = 0;
    while (size > 1) {
        if (path) {
            if (i & 1) memcpy(path[(*plen)++], buf[i - 1], 32);
            else if (i + 1 < size) memcpy(path[(*plen)++], buf[i + 1], 32);
        }
        for (k = 0; k + 1 < size; k += 2) vt__mnode(buf[k], buf[k + 1], buf[k / 2]);
        if (size & 1) memcpy(buf[size / 2], buf[size - 1], 32);
        size = (size + 1) / 2;
        i /= 2;
    }
    if (n == 0) vt_sha256("", 0, root);
    else memcpy(root, buf[0], 32);
}

VTDEF void vt_merkle_root(const unsigned char (*leaves)[32], int64_t n, unsigned char root[32]) {
    unsigned char(*buf)[32] = (unsigned char(*)[32])VT_MALLOC(32 * (size_t)(n ? n : 1), NULL);
    if (!buf) { memset(root, 0, 32); return; }
    vt__mlevels(leaves, n, buf, 0, NULL, NULL, root);
    VT_FREE(buf, NULL);
}

VTDEF int vt_merkle_proof(const unsigned char (*leaves)[32], int64_t n, int64_t i, unsigned char (*path)[32]) {
    unsigned char(*buf)[32], root[32];
    int len = 0;
    if (i < 0 || i >= n || n > ((int64_t)1 << 62)) return -1;
    buf = (unsigned char(*)[32])VT_MALLOC(32 * (size_t)n, NULL);
    if (!buf) return -1;
    vt__mlevels(leaves, n, buf, i, path, &len, root);
    VT_FREE(buf, NULL);
    return len;
}

VTDEF int vt_merkle_verify(const unsigned char leaf[32], int64_t i, int64_t n, const unsigned char (*path)[32], int len,
                           const unsigned char root[32]) {
    unsigned char node[32];
    vt_sha256_ctx s;
    unsigned char zero = 0;
    int64_t size = n;
    int k = 0;
    if (i < 0 || i >= n || len < 0 || len > 64) return 0;
    vt_sha256_init(&s);
    vt_sha256_update(&s, &zero, 1);
    vt_sha256_update(&s, leaf, 32);
    vt_sha256_final(&s, node);
    while (size > 1) {
        if (i & 1) { if (k >= len) return 0; vt__mnode(path[k++], node, node); }
        else if (i + 1 < size) { if (k >= len) return 0; vt__mnode(node, path[k++], node); }
        size = (size + 1) / 2;
        i /= 2;
    }
    return k == len && !memcmp(node, root, 32);
}

/* --- files ------------------------------------------------------------------ */

static void vt__join(char *buf, size_t n, const char *dir, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

static int vt__exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* write bytes to path atomically: a temporary file, flushed to the disk,
   renamed. The temporary is created exclusively (O_EXCL: a link planted
   under its name is never followed, and a file that appears under it
   between the remove and the open makes the write fail, not go elsewhere);
   a stale one a killed writer left is removed first. */
static vt_status vt__write_atomic(vt_ctx *c, const char *path, const void *a, size_t na, const void *b, size_t nb) {
    char tmp[700];
    FILE *f;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
#if !defined(_WIN32)
    {
        int fd;
        remove(tmp);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
        f = fd >= 0 ? fdopen(fd, "wb") : NULL;
        if (fd >= 0 && !f) close(fd);
    }
#else
    f = fopen(tmp, "wb");
#endif
    if (!f) return vt__fail(c, VT_ERR_IO, "cannot create '%s'", tmp);
    if (fwrite(a, 1, na, f) != na || (nb && fwrite(b, 1, nb, f) != nb) || fflush(f) != 0) {
        fclose(f);
        remove(tmp);
        return vt__fail(c, VT_ERR_IO, "writing '%s' failed (disk full?)", tmp);
    }
#if !defined(_WIN32)
    fsync(fileno(f));
#endif
    fclose(f);
    if (rename(tmp, path) != 0) { remove(tmp); return vt__fail(c, VT_ERR_IO, "cannot rename '%s' to '%s'", tmp, path); }
#if !defined(_WIN32)
    {   /* make the rename itself durable */
        char dir[700];
        char *sl;
        int fd;
        snprintf(dir, sizeof dir, "%s", path);
        sl = strrchr(dir, '/');
        if (sl) *sl = 0; else snprintf(dir, sizeof dir, ".");
        fd = open(dir, O_RDONLY);
        if (fd >= 0) { fsync(fd); close(fd); }
    }
#endif
    return VT_OK;
}

static unsigned char *vt__read_file(const char *path, size_t *n, size_t maxn) {
    FILE *f = fopen(path, "rb");
    unsigned char *b;
    long sz;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0 || (size_t)sz > maxn) { fclose(f); return NULL; }
    fseek(f, 0, SEEK_SET);
    b = (unsigned char *)VT_MALLOC((size_t)sz + 1, NULL);
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) { VT_FREE(b, NULL); b = NULL; }
    fclose(f);
    if (b) { b[sz] = 0; *n = (size_t)sz; }
    return b;
}

/* --- manifest ------------------------------------------------------------------ */

/* "vtrain-manifest 1" then "key = value" lines, as the program gave them and
   then vtrain's own keys; keys are [A-Za-z0-9._-], values one line each */
static int vt__key_ok(const char *k, size_t n) {
    size_t i;
    if (!n || n > 100) return 0;
    for (i = 0; i < n; i++)
        if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '.' ||
              k[i] == '_' || k[i] == '-'))
            return 0;
    return 1;
}

static vt_status vt__manifest_text(vt_ctx *c, vt__buf *b) {
    const char *const *m = c->d.manifest;
    char line[900], ord[128];
    int i;
    b->n = 0;
    vt__buf_put(c, b, "vtrain-manifest 1\n", 18);
    for (i = 0; m && m[i]; i++) {
        const char *eq = strchr(m[i], '=');
        size_t kl;
        if (!eq) return vt__fail(c, VT_ERR_ARG, "manifest entry '%s' is not key=value", m[i]);
        kl = (size_t)(eq - m[i]);
        while (kl && m[i][kl - 1] == ' ') kl--;
        if (!vt__key_ok(m[i], kl) || strchr(eq + 1, '\n'))
            return vt__fail(c, VT_ERR_ARG, "manifest entry '%s': keys are letters, digits, . _ -; values one line", m[i]);
        snprintf(line, sizeof line, "%.*s = %s\n", (int)kl, m[i], eq[1] == ' ' ? eq + 2 : eq + 1);
        vt__buf_put(c, b, line, strlen(line));
    }
    vt_order_string(&c->d.order, ord, sizeof ord);
    snprintf(line, sizeof line,
             "vtrain.version = %s\nvtrain.mode = %s\nvtrain.bound = %s\nvtrain.lambda = %.17g\nvtrain.trainer_order = %s\n"
             "vtrain.trainer_ckpt_every = %d\n",
             VTRAIN_VERSION_STRING, vt_mode_name(c->d.mode), vt_bound_name(c->d.bound), c->ord.lambda, ord,
             c->d.ckpt_every > 0 ? c->d.ckpt_every : 100);
    vt__buf_put(c, b, line, strlen(line));
    if (c->sh.S > 1) { /* a program without shards keeps the manifest it always had */
        snprintf(line, sizeof line, "vtrain.shards = %d\n", c->sh.S);
        vt__buf_put(c, b, line, strlen(line));
    }
    return c->status;
}

/* the value of key in manifest text (NULL-terminated); 1 if found */
static int vt__manifest_find(const char *text, const char *key, char *value, size_t n) {
    const char *p = text;
    size_t kl = strlen(key);
    while (p && *p) {
        const char *eol = strchr(p, '\n');
        if (!strncmp(p, key, kl) && !strncmp(p + kl, " = ", 3)) {
            size_t vl = (size_t)((eol ? eol : p + strlen(p)) - (p + kl + 3));
            if (vl >= n) vl = n - 1;
            memcpy(value, p + kl + 3, vl);
            value[vl] = 0;
            return 1;
        }
        p = eol ? eol + 1 : NULL;
    }
    return 0;
}

/* the program's identity: the manifest without the lines that only describe
   the trainer's machine and habits (keys "vtrain.trainer_*") */
static void vt__program_sha(const char *text, size_t n, unsigned char out[32]) {
    vt_sha256_ctx s;
    size_t i = 0;
    vt_sha256_init(&s);
    while (i < n) {
        size_t j = i;
        while (j < n && text[j] != '\n') j++;
        if (j < n) j++;
        if (j - i < 15 || strncmp(text + i, "vtrain.trainer_", 15)) vt_sha256_update(&s, text + i, j - i);
        i = j;
    }
    vt_sha256_final(&s, out);
}

VTDEF vt_status vt_manifest_program_sha(const char *dir, unsigned char out[32]) {
    char path[700];
    size_t len;
    unsigned char *b;
    vt__join(path, sizeof path, dir, "manifest.txt");
    b = vt__read_file(path, &len, 1 << 20);
    if (!b) return vt__tls_fail(VT_ERR_IO, "cannot read '%s'", path);
    vt__program_sha((const char *)b, len, out);
    VT_FREE(b, NULL);
    return VT_OK;
}

VTDEF vt_status vt_manifest_get(const char *dir, const char *key, char *value, size_t n) {
    char path[700];
    size_t len;
    unsigned char *b;
    vt__join(path, sizeof path, dir, "manifest.txt");
    b = vt__read_file(path, &len, 1 << 20);
    if (!b) return vt__tls_fail(VT_ERR_IO, "cannot read '%s'", path);
    if (strncmp((const char *)b, "vtrain-manifest 1\n", 18)) { VT_FREE(b, NULL); return vt__tls_fail(VT_ERR_FORMAT, "'%s' is not a vtrain manifest", path); }
    if (!vt__manifest_find((const char *)b, key, value, n)) { VT_FREE(b, NULL); return vt__tls_fail(VT_ERR_FORMAT, "'%s' has no key '%s'", path, key); }
    VT_FREE(b, NULL);
    return VT_OK;
}

/* --- safetensors ------------------------------------------------------------ */

/* A checkpoint is a safetensors file: u64 little-endian header length, a
   JSON header {"__metadata__": {string: string}, name: {"dtype": "F32",
   "shape": [..], "data_offsets": [begin, end]}, ...}, then the data. The
   reader below is the one that faces untrusted files: it bounds every
   length, accepts only the subset of JSON the format needs, and reports the
   byte where parsing failed. */
typedef struct {
    char name[64];
    int ndim;
    int64_t ne[VT_MAX_DIMS];
    uint64_t begin, end;
} vt__st_tensor;

typedef struct {
    int nt;
    vt__st_tensor t[256];
    int nmeta;
    char mkey[32][48], mval[32][160];
} vt__st_header;

typedef struct { const char *p; size_t n, i; char err[160]; } vt__json;

static void vt__jws(vt__json *j) {
    while (j->i < j->n && (j->p[j->i] == ' ' || j->p[j->i] == '\n' || j->p[j->i] == '\r' || j->p[j->i] == '\t')) j->i++;
}
static int vt__jfail(vt__json *j, const char *what) {
    if (!j->err[0]) snprintf(j->err, sizeof j->err, "%s at byte %zu of the header", what, j->i);
    return 0;
}
static int vt__jchar(vt__json *j, char ch) {
    vt__jws(j);
    if (j->i < j->n && j->p[j->i] == ch) { j->i++; return 1; }
    return 0;
}
/* a string without escapes other than \" and \\ */
static int vt__jstr(vt__json *j, char *out, size_t n) {
    size_t k = 0;
    vt__jws(j);
    if (j->i >= j->n || j->p[j->i] != '"') return vt__jfail(j, "expected a string");
    j->i++;
    while (j->i < j->n && j->p[j->i] != '"') {
        char ch = j->p[j->i++];
        if (ch == '\\') {
            if (j->i >= j->n || (j->p[j->i] != '"' && j->p[j->i] != '\\')) return vt__jfail(j, "unsupported escape");
            ch = j->p[j->i++];
        }
        if ((unsigned char)ch < 32) return vt__jfail(j, "control character in a string");
        if (k + 1 >= n) return vt__jfail(j, "string too long");
        out[k++] = ch;
    }
    if (j->i >= j->n) return vt__jfail(j, "unterminated string");
    j->i++;
    out[k] = 0;
    return 1;
}
static int vt__jint(vt__json *j, uint64_t *v) {
    int digits = 0;
    vt__jws(j);
    *v = 0;
    while (j->i < j->n && j->p[j->i] >= '0' && j->p[j->i] <= '9') {
        if (*v > ((uint64_t)1 << 58)) return vt__jfail(j, "number too large");
        *v = *v * 10 + (uint64_t)(j->p[j->i++] - '0');
        digits++;
    }
    return digits ? 1 : vt__jfail(j, "expected a number");
}
static int vt__jints(vt__json *j, uint64_t *v, int maxn, int *count) {
    *count = 0;
    if (!vt__jchar(j, '[')) return vt__jfail(j, "expected '['");
    if (vt__jchar(j, ']')) return 1;
    do {
        if (*count >= maxn) return vt__jfail(j, "too many numbers");
        if (!vt__jint(j, &v[(*count)++])) return 0;
    } while (vt__jchar(j, ','));
    return vt__jchar(j, ']') ? 1 : vt__jfail(j, "expected ']'");
}

static int vt__st_parse(const char *p, size_t n, vt__st_header *h, char *err, size_t errn) {
    vt__json j;
    memset(h, 0, sizeof *h);
    j.p = p; j.n = n; j.i = 0; j.err[0] = 0;
    if (!vt__jchar(&j, '{')) { vt__jfail(&j, "expected '{'"); goto bad; }
    if (vt__jchar(&j, '}')) goto tail;
    do {
        char key[64];
        if (!vt__jstr(&j, key, sizeof key) || !vt__jchar(&j, ':')) { vt__jfail(&j, "expected a key and ':'"); goto bad; }
        if (!strcmp(key, "__metadata__")) {
            if (!vt__jchar(&j, '{')) { vt__jfail(&j, "expected '{'"); goto bad; }
            if (!vt__jchar(&j, '}')) {
                do {
                    if (h->nmeta >= 32) { vt__jfail(&j, "too many metadata entries"); goto bad; }
                    if (!vt__jstr(&j, h->mkey[h->nmeta], sizeof h->mkey[0]) || !vt__jchar(&j, ':') ||
                        !vt__jstr(&j, h->mval[h->nmeta], sizeof h->mval[0]))
                        goto bad;
                    h->nmeta++;
                } while (vt__jchar(&j, ','));
                if (!vt__jchar(&j, '}')) { vt__jfail(&j, "expected '}'"); goto bad; }
            }
        } else {
            vt__st_tensor *t;
            int have = 0;
            if (h->nt >= 256) { vt__jfail(&j, "too many tensors"); goto bad; }
            t = &h->t[h->nt];
            snprintf(t->name, sizeof t->name, "%s", key);
            if (!vt__jchar(&j, '{')) { vt__jfail(&j, "expected '{'"); goto bad; }
            do {
                char f[32];
                if (!vt__jstr(&j, f, sizeof f) || !vt__jchar(&j, ':')) goto bad;
                if (!strcmp(f, "dtype")) {
                    char dt[16];
                    if (!vt__jstr(&j, dt, sizeof dt)) goto bad;
                    if (strcmp(dt, "F32")) { vt__jfail(&j, "dtype is not F32"); goto bad; }
                    have |= 1;
                } else if (!strcmp(f, "shape")) {
                    uint64_t v[VT_MAX_DIMS];
                    int k, cnt;
                    if (!vt__jints(&j, v, VT_MAX_DIMS, &cnt)) goto bad;
                    t->ndim = cnt;
                    for (k = 0; k < cnt; k++) t->ne[k] = (int64_t)v[k];
                    have |= 2;
                } else if (!strcmp(f, "data_offsets")) {
                    uint64_t v[2];
                    int cnt;
                    if (!vt__jints(&j, v, 2, &cnt) || cnt != 2) { vt__jfail(&j, "data_offsets needs two numbers"); goto bad; }
                    t->begin = v[0]; t->end = v[1];
                    have |= 4;
                } else { vt__jfail(&j, "unknown tensor field"); goto bad; }
            } while (vt__jchar(&j, ','));
            if (!vt__jchar(&j, '}') || have != 7) { vt__jfail(&j, "incomplete tensor entry"); goto bad; }
            h->nt++;
        }
    } while (vt__jchar(&j, ','));
    if (!vt__jchar(&j, '}')) { vt__jfail(&j, "expected '}'"); goto bad; }
tail:
    vt__jws(&j);
    if (j.i != j.n) { vt__jfail(&j, "trailing bytes"); goto bad; }
    return 1;
bad:
    snprintf(err, errn, "%s", j.err[0] ? j.err : "malformed header");
    return 0;
}

static const char *vt__st_meta(const vt__st_header *h, const char *key) {
    int i;
    for (i = 0; i < h->nmeta; i++)
        if (!strcmp(h->mkey[i], key)) return h->mval[i];
    return NULL;
}

/* --- checkpoints ---------------------------------------------------------------- */

/* the bytes of a checkpoint of c's state, its metadata "step" being `step`
   (vt_checkpoint_save: the context's step); *out from VT_MALLOC(*n, c's
   user pointer); path only names it in errors */
static vt_status vt__checkpoint_bytes(vt_ctx *c, int64_t step, const char *path, unsigned char **out, size_t *outn) {
    vt__buf hd;
    int i, k, nt = vt__nstate(c);
    uint64_t off = 0;
    unsigned char digest[32], *data;
    char hex[65], tmp[256];
    size_t total = 0, pos = 0;
    *out = NULL;
    *outn = 0;
    if (c->status != VT_OK) return c->status;
    if (nt > 256) return vt__fail(c, VT_ERR_ARG, "checkpoint: %d tensors (256 at most)", nt);
    if (c->noptims > 28) return vt__fail(c, VT_ERR_ARG, "checkpoint: %d optimizers (28 at most: 32 metadata entries)", c->noptims);
    for (i = 0; i < nt; i++) { /* vt_param checked the names; vt_set_name may have changed one since */
        char why[200];
        if (i < c->nparams && !vt__name_ok(vt__state(c, i)->name, why, sizeof why))
            return vt__fail(c, VT_ERR_ARG, "checkpoint '%s': parameter %d: %s (renamed with vt_set_name?); nothing was written", path, i, why);
        for (k = 0; k < i; k++)
            if (!strcmp(vt__state(c, k)->name, vt__state(c, i)->name))
                return vt__fail(c, VT_ERR_ARG, "checkpoint '%s': two tensors are named '%s'; nothing was written", path, vt__state(c, i)->name);
    }
    memset(&hd, 0, sizeof hd);
    vt_weights_digest(c, digest);
    vt_hex(digest, 32, hex);
    snprintf(tmp, sizeof tmp, "{\"__metadata__\":{\"format\":\"vtrain-checkpoint-1\",\"vtrain.version\":\"%s\",\"step\":\"%lld\",\"state_sha256\":\"%s\"",
             VTRAIN_VERSION_STRING, (long long)step, hex);
    vt__buf_put(c, &hd, tmp, strlen(tmp));
    for (k = 0; k < c->noptims; k++) {
        snprintf(tmp, sizeof tmp, ",\"optim%d.t\":\"%lld\"", k, (long long)c->optims[k]->t);
        vt__buf_put(c, &hd, tmp, strlen(tmp));
    }
    vt__buf_put(c, &hd, "}", 1);
    for (i = 0; i < nt; i++) {
        vt_tensor *t = vt__state(c, i);
        uint64_t bytes = 4 * (uint64_t)vt_numel(t);
        int d;
        snprintf(tmp, sizeof tmp, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[", t->name);
        vt__buf_put(c, &hd, tmp, strlen(tmp));
        for (d = 0; d < t->ndim; d++) {
            snprintf(tmp, sizeof tmp, d ? ",%lld" : "%lld", (long long)t->ne[d]);
            vt__buf_put(c, &hd, tmp, strlen(tmp));
        }
        snprintf(tmp, sizeof tmp, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)(off + bytes));
        vt__buf_put(c, &hd, tmp, strlen(tmp));
        off += bytes;
    }
    vt__buf_put(c, &hd, "}", 1);
    while ((hd.n + 8) % 8) vt__buf_put(c, &hd, " ", 1);
    total = 8 + hd.n + (size_t)off;
    data = (unsigned char *)vt__xmalloc(c, total);
    if (!data || c->status != VT_OK) { VT_FREE(hd.p, c->u); VT_FREE(data, c->u); return c->status; }
    vt__put_u64(data, (uint64_t)hd.n);
    memcpy(data + 8, hd.p, hd.n);
    pos = 8 + hd.n;
    for (i = 0; i < nt; i++) {
        vt_tensor *t = vt__state(c, i);
        int64_t q, n = vt_numel(t);
        const double *d = vt__h(c, t);
        for (q = 0; q < n; q++) { vt__put_u32(data + pos, vt__fbits((float)d[vt__off(t, q)])); pos += 4; }
    }
    VT_FREE(hd.p, c->u);
    *out = data;
    *outn = total;
    return c->status;
}

VTDEF vt_status vt_checkpoint_save(vt_ctx *c, const char *path) {
    unsigned char *data;
    size_t total;
    if (vt__checkpoint_bytes(c, c->step_no, path, &data, &total) != VT_OK) return c->status;
    vt__write_atomic(c, path, data, total, NULL, 0);
    VT_FREE(data, c->u);
    return c->status;
}

static vt_status vt__checkpoint_parse(vt_ctx *c, const unsigned char *b, size_t n, const char *path);

VTDEF vt_status vt_checkpoint_load(vt_ctx *c, const char *path) {
    size_t n;
    unsigned char *b;
    if (c->status != VT_OK) return c->status;
    b = vt__read_file(path, &n, (size_t)1 << 40);
    if (!b) return vt__fail(c, VT_ERR_IO, "cannot read the checkpoint '%s'", path);
    vt__checkpoint_parse(c, b, n, path);
    VT_FREE(b, NULL);
    return c->status;
}

/* a checkpoint in b[0, n) into the context's state (path names it in errors) */
/* a decimal in [0, 2^62]: digits only, no sign, no space, no overflow */
static int vt__dec(const char *s, int64_t *out) {
    int64_t v = 0;
    const char *p = s;
    if (!*p) return 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || v > (((int64_t)1 << 62) - (*p - '0')) / 10) return 0;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return 1;
}

static int vt__st_by_begin(const void *x, const void *y) {
    const vt__st_tensor *a = *(const vt__st_tensor *const *)x, *b = *(const vt__st_tensor *const *)y;
    return a->begin < b->begin ? -1 : a->begin > b->begin;
}

/* A checkpoint in b[0, n) into the context's state (path names it in
   errors). Everything is checked before anything is loaded: the metadata
   holds exactly the keys vtrain writes, each once ("format", "vtrain.version",
   "step" and "optimK.t" as decimals, "state_sha256"); the tensors are
   exactly the program's state by name and shape; their data, as the
   safetensors reference reader demands, tile the data section from byte 0
   to the end of the file without a hole, an overlap or a trailing byte.
   Then the values are loaded and must hash to state_sha256; step and the
   optimizer counters are set last. With load = 0 nothing is loaded: the
   file must hold exactly the context's state, step and counters (a full
   audit checks every checkpoint it passes this way, which covers the
   optimizer counters, the one part of a checkpoint no commitment does). */
static vt_status vt__checkpoint_read(vt_ctx *c, const unsigned char *b, size_t n, const char *path, int load) {
    unsigned char digest[32];
    uint64_t hl, data, at;
    vt__st_header *h;
    vt__st_tensor **order = NULL, **byname = NULL;
    char err[200], hex[65];
    const char *v;
    int i, k, nt = vt__nstate(c);
    int64_t step = 0, ts[64];
    h = (vt__st_header *)vt__xmalloc(c, sizeof *h);
    if (!h) return c->status;
    if (n < 8) { vt__fail(c, VT_ERR_TRUNCATED, "checkpoint '%s' is truncated (%zu bytes)", path, n); goto out; }
    hl = vt__get_u64(b);
    if (hl > n - 8 || hl > (1u << 24)) { vt__fail(c, VT_ERR_TRUNCATED, "checkpoint '%s': header length %llu does not fit in %zu bytes", path, (unsigned long long)hl, n); goto out; }
    if (!vt__st_parse((const char *)b + 8, (size_t)hl, h, err, sizeof err)) { vt__fail(c, VT_ERR_FORMAT, "checkpoint '%s': %s", path, err); goto out; }
    data = n - 8 - hl;
    v = vt__st_meta(h, "format");
    if (!v || strcmp(v, "vtrain-checkpoint-1")) { vt__fail(c, VT_ERR_FORMAT, "checkpoint '%s' was not written by vtrain", path); goto out; }
    for (k = 0; k < h->nmeta; k++) { /* known keys, each once */
        const char *key = h->mkey[k];
        int64_t oi;
        int known = !strcmp(key, "format") || !strcmp(key, "vtrain.version") || !strcmp(key, "step") || !strcmp(key, "state_sha256");
        if (!known && !strncmp(key, "optim", 5)) {
            char tail[48];
            size_t dl = strspn(key + 5, "0123456789");
            snprintf(tail, sizeof tail, "%s", key + 5 + dl);
            if (dl > 0 && dl < 6 && !strcmp(tail, ".t") && (key[5] != '0' || dl == 1)) {
                oi = atoi(key + 5);
                known = oi < c->noptims;
            }
        }
        if (!known) { vt__fail(c, VT_ERR_FORMAT, "checkpoint '%s': metadata key '%s' is not one vtrain writes for this program", path, key); goto out; }
        for (i = 0; i < k; i++)
            if (!strcmp(h->mkey[i], key)) { vt__fail(c, VT_ERR_FORMAT, "checkpoint '%s': metadata key '%s' appears twice", path, key); goto out; }
    }
    if (!vt__st_meta(h, "vtrain.version")) { vt__fail(c, VT_ERR_FORMAT, "checkpoint '%s' lacks 'vtrain.version'", path); goto out; }
    v = vt__st_meta(h, "step");
    if (!v || !vt__dec(v, &step)) { vt__fail(c, VT_ERR_FORMAT, "checkpoint '%s': 'step' is %s%s%s, not a step count", path, v ? "'" : "", v ? v : "missing", v ? "'" : ""); goto out; }
    if (c->noptims > 64) { vt__fail(c, VT_ERR_ARG, "checkpoint: %d optimizers (64 at most)", c->noptims); goto out; }
    for (k = 0; k < c->noptims; k++) {
        char key[32];
        snprintf(key, sizeof key, "optim%d.t", k);
        v = vt__st_meta(h, key);
        if (!v || !vt__dec(v, &ts[k])) { vt__fail(c, VT_ERR_FORMAT, "checkpoint '%s': '%s' is %s%s%s, not a step count", path, key, v ? "'" : "", v ? v : "missing", v ? "'" : ""); goto out; }
    }
    v = vt__st_meta(h, "state_sha256");
    if (!v || strlen(v) != 64 || strspn(v, "0123456789abcdef") != 64) { vt__fail(c, VT_ERR_FORMAT, "checkpoint '%s': 'state_sha256' is missing or not 64 hex digits", path); goto out; }
    if (h->nt != nt) { vt__fail(c, VT_ERR_MISMATCH, "checkpoint '%s' has %d tensors, the program %d", path, h->nt, nt); goto out; }
    order = (vt__st_tensor **)vt__xmalloc(c, 2 * sizeof(vt__st_tensor *) * (size_t)(nt + 1));
    if (!order) goto out;
    byname = order + nt + 1;
    for (i = 0; i < nt; i++) {
        vt_tensor *t = vt__state(c, i);
        vt__st_tensor *s = NULL;
        int d, same;
        for (k = 0; k < h->nt && !s; k++)
            if (!strcmp(h->t[k].name, t->name)) s = &h->t[k];
        if (!s) { vt__fail(c, VT_ERR_MISMATCH, "checkpoint '%s' has no tensor '%s'", path, t->name); goto out; }
        same = s->ndim == t->ndim;
        for (d = 0; same && d < t->ndim; d++) same = s->ne[d] == t->ne[d];
        if (!same) { vt__fail(c, VT_ERR_MISMATCH, "checkpoint '%s': tensor '%s' has another shape", path, t->name); goto out; }
        if (s->end < s->begin || s->end - s->begin != 4 * (uint64_t)vt_numel(t)) {
            vt__fail(c, VT_ERR_FORMAT, "checkpoint '%s': tensor '%s' has data_offsets [%llu, %llu) for %lld values", path, t->name,
                     (unsigned long long)s->begin, (unsigned long long)s->end, (long long)vt_numel(t));
            goto out;
        }
        byname[i] = order[i] = s;
    }
    /* (the names are unique in the program and each was found, so the
       header's tensors are the program's, once each) */
    qsort(order, (size_t)nt, sizeof *order, vt__st_by_begin);
    for (i = 0, at = 0; i < nt; i++) {
        if (order[i]->begin != at) {
            vt__fail(c, order[i]->begin > data ? VT_ERR_TRUNCATED : VT_ERR_FORMAT,
                     "checkpoint '%s': tensor '%s' starts at data byte %llu, the one before it ends at %llu (a hole, an overlap, or a truncated file)",
                     path, order[i]->name, (unsigned long long)order[i]->begin, (unsigned long long)at);
            goto out;
        }
        at = order[i]->end;
    }
    if (at != data) {
        vt__fail(c, at > data ? VT_ERR_TRUNCATED : VT_ERR_FORMAT, "checkpoint '%s': the tensors' data ends at byte %llu of the data section, the file at %llu (%s)",
                 path, (unsigned long long)at, (unsigned long long)data, at > data ? "truncated" : "trailing bytes");
        goto out;
    }
    if (!load) {
        if (step != c->step_no) {
            vt__fail(c, VT_ERR_MISMATCH, "checkpoint '%s' says it holds the state after %lld steps, the replay is after %lld", path,
                     (long long)step, (long long)c->step_no);
            goto out;
        }
        for (k = 0; k < c->noptims; k++)
            if (ts[k] != c->optims[k]->t) {
                vt__fail(c, VT_ERR_MISMATCH, "checkpoint '%s': optimizer %d has taken %lld steps, the replay's %lld (its counter was edited)", path, k,
                         (long long)ts[k], (long long)c->optims[k]->t);
                goto out;
            }
    }
    for (i = 0; i < nt; i++) {
        vt_tensor *t = vt__state(c, i);
        int64_t q, cnt = vt_numel(t);
        const unsigned char *src = b + 8 + hl + byname[i]->begin;
        if (!load) {
            const double *d = vt__h(c, t);
            for (q = 0; q < cnt; q++)
                if (vt__get_u32(src + 4 * (uint64_t)q) != vt__fbits((float)d[vt__off(t, q)])) {
                    vt__fail(c, VT_ERR_MISMATCH, "checkpoint '%s': tensor '%s' element %lld differs from the replay's state", path, t->name, (long long)q);
                    goto out;
                }
            continue;
        }
        vt__host_dirty(c, t);
        for (q = 0; q < cnt; q++) vt__d(t)[vt__off(t, q)] = (double)vt__bitsf(vt__get_u32(src + 4 * (uint64_t)q));
    }
    vt_weights_digest(c, digest);
    vt_hex(digest, 32, hex);
    v = vt__st_meta(h, "state_sha256");
    if (strcmp(v, hex)) {
        vt__fail(c, VT_ERR_CHECKSUM, "checkpoint '%s': its tensors hash to %.16s..., its metadata says %.16s... (edited or corrupted)", path,
                 hex, v);
        goto out;
    }
    if (!load) goto out;
    c->step_no = step;
    for (k = 0; k < c->noptims; k++) c->optims[k]->t = ts[k];
out:
    VT_FREE(order, c->u);
    VT_FREE(h, c->u);
    return c->status;
}
static vt_status vt__checkpoint_parse(vt_ctx *c, const unsigned char *b, size_t n, const char *path) {
    return vt__checkpoint_read(c, b, n, path, 1);
}

/* the checkpoint file at path holds exactly the context's state (load = 0) */
static vt_status vt__checkpoint_verify(vt_ctx *c, const char *path) {
    size_t n;
    unsigned char *b = vt__read_file(path, &n, (size_t)1 << 40);
    if (!b) return vt__fail(c, VT_ERR_IO, "cannot read the checkpoint '%s'", path);
    vt__checkpoint_read(c, b, n, path, 0);
    VT_FREE(b, NULL);
    return c->status;
}

/* --- transcript files ----------------------------------------------------------- */

static void vt__ckpt_path(const char *dir, int64_t step, char *buf, size_t n) {
    char name[64];
    snprintf(name, sizeof name, "ckpt-%08lld.safetensors", (long long)step);
    vt__join(buf, n, dir, name);
}

/* The one walk over commits.bin's records (layout at >>commit): the bytes
   the record at b[p, len) takes with its checksum, or 0 when no whole
   record starts there (the bytes end first, or its tensor count is past
   2^20). Every reader steps with it: vt__parse_leaves, which checks each
   record, and vt__commit_at. */
static size_t vt__commit_rec_len(const unsigned char *b, size_t p, size_t len) {
    uint32_t nt;
    size_t rl;
    if (p > len || len - p < 112) return 0;
    nt = vt__get_u32(b + p + 108);
    rl = 112 + 32 * (size_t)nt + 32;
    return nt <= (1u << 20) && rl <= len - p ? rl : 0;
}

/* the offset of record `step` in commits.bin's bytes b[0, len), or where
   the whole records end when there are fewer (a record cut by a kill is
   not one); *k the whole records before it. The records are not checked:
   callers that rely on them parse them (vt__parse_leaves) */
static size_t vt__commit_at(const unsigned char *b, size_t len, int64_t step, int64_t *k) {
    size_t p = VT__COMMIT_HDR, rl;
    for (*k = 0; *k < step && (rl = vt__commit_rec_len(b, p, len)) != 0; ++*k) p += rl;
    return p;
}

/* the commitments records as leaves; a malformed file is reported */
static vt_status vt__parse_leaves(const unsigned char *b, size_t len, const char *path, vt_leaf_info **out, int64_t *n,
                                  unsigned char manifest_sha[32]);
static vt_status vt__read_leaves(const char *path, vt_leaf_info **out, int64_t *n, unsigned char manifest_sha[32]) {
    size_t len;
    unsigned char *b = vt__read_file(path, &len, (size_t)1 << 40);
    vt_status st;
    if (!b) return vt__tls_fail(VT_ERR_IO, "cannot read '%s'", path);
    st = vt__parse_leaves(b, len, path, out, n, manifest_sha);
    VT_FREE(b, NULL);
    return st;
}

/* the commitments in b[0, len) as leaves (path names the source in errors) */
static vt_status vt__parse_leaves(const unsigned char *b, size_t len, const char *path, vt_leaf_info **out, int64_t *n,
                                  unsigned char manifest_sha[32]) {
    size_t p = VT__COMMIT_HDR;
    int64_t cap = 0, k = 0;
    vt_leaf_info *L = NULL, *dummy;
    int64_t dn;
    if (!out) out = &dummy; /* callers that only validate */
    if (!n) n = &dn;
    *out = NULL;
    *n = 0;
    if (len < VT__COMMIT_HDR || memcmp(b, "VTRAINCM", 8) || vt__get_u32(b + 8) != 2 || vt__get_u32(b + 12) != 0)
        return vt__tls_fail(VT_ERR_FORMAT, "'%s' is not a vtrain commitments file (version 2, reserved field 0)", path);
    if (manifest_sha) memcpy(manifest_sha, b + 16, 32);
    while (p < len) {
        size_t rl = vt__commit_rec_len(b, p, len);
        unsigned char sha[32];
        if (!rl) { VT_FREE(L, NULL); return vt__tls_fail(VT_ERR_TRUNCATED, "'%s' is truncated in the record of step %lld", path, (long long)k); }
        vt_sha256(b + p, rl - 32, sha);
        if (memcmp(b + p, "VTCM", 4) || memcmp(sha, b + p + rl - 32, 32) || (int64_t)vt__get_u64(b + p + 4) != k) {
            VT_FREE(L, NULL);
            return vt__tls_fail(VT_ERR_CHECKSUM, "'%s': the record of step %lld is corrupted", path, (long long)k);
        }
        if (k == cap) {
            vt_leaf_info *q;
            cap = cap * 2 + 64;
            q = (vt_leaf_info *)VT_REALLOC(L, sizeof(vt_leaf_info) * (size_t)cap, NULL);
            if (!q) { VT_FREE(L, NULL); return vt__tls_fail(VT_ERR_NOMEM, "out of memory reading '%s'", path); }
            L = q;
        }
        L[k].step = k;
        memcpy(L[k].state, b + p + 12, 32);
        memcpy(L[k].chunk, b + p + 44, 32);
        memcpy(L[k].batch, b + p + 76, 32);
        vt_leaf_hash(&L[k]);
        k++;
        p += rl;
    }
    if (out == &dummy) VT_FREE(L, NULL);
    else *out = L;
    *n = k;
    return VT_OK;
}

VTDEF vt_status vt_transcript_leaves(const char *dir, vt_leaf_info **leaves, int64_t *n) {
    char path[700];
    vt__join(path, sizeof path, dir, "commits.bin");
    return vt__read_leaves(path, leaves, n, NULL);
}
VTDEF void vt_free_leaves(vt_leaf_info *leaves) { VT_FREE(leaves, NULL); }

static void vt__run_commitment(const unsigned char mroot[32], const unsigned char msha[32], int64_t n, unsigned char out[32]) {
    vt_sha256_ctx s;
    unsigned char b[8];
    vt_sha256_init(&s);
    vt_sha256_update(&s, "vtrain-run-1", 12);
    vt_sha256_update(&s, msha, 32);
    vt_sha256_update(&s, mroot, 32);
    vt__put_u64(b, (uint64_t)n);
    vt_sha256_update(&s, b, 8);
    vt_sha256_final(&s, out);
}

/* root.txt from the commitments written so far */
static vt_status vt__write_root(vt_ctx *c) {
    vt_leaf_info *L = NULL;
    int64_t n = 0, k;
    unsigned char(*lv)[32], root[32], run[32];
    char text[512], h1[65], h2[65], h3[65], path[700];
    if (!c->tdir[0] || c->d.role != VT_ROLE_TRAIN) return VT_OK;
    if (vt__read_leaves(c->commitpath, &L, &n, NULL) != VT_OK) return vt__fail(c, vt_last_status(), "%s", vt_last_error());
    lv = (unsigned char(*)[32])VT_MALLOC(32 * (size_t)(n + 1), NULL);
    if (!lv) { vt_free_leaves(L); return vt__fail(c, VT_ERR_NOMEM, "out of memory for the Merkle tree"); }
    for (k = 0; k < n; k++) memcpy(lv[k], L[k].leaf, 32);
    vt_merkle_root((const unsigned char(*)[32])lv, n, root);
    vt__run_commitment(root, c->manifest_sha, n, run);
    vt_hex(root, 32, h1);
    vt_hex(c->manifest_sha, 32, h2);
    vt_hex(run, 32, h3);
    snprintf(text, sizeof text, "vtrain-root 1\nsteps = %lld\nmanifest = %s\nleaves_root = %s\nrun = %s\n", (long long)n, h2, h1, h3);
    vt__join(path, sizeof path, c->tdir, "root.txt");
    vt__write_atomic(c, path, text, strlen(text), NULL, 0);
    VT_FREE(lv, NULL);
    vt_free_leaves(L);
    return c->status;
}

/* 64 lowercase hex digits into 32 bytes; 0 if s is anything else */
static int vt__unhex32(const char *s, unsigned char out[32]) {
    int k;
    if (strlen(s) != 64 || strspn(s, "0123456789abcdef") != 64) return 0;
    for (k = 0; k < 32; k++) {
        int hi = s[2 * k] <= '9' ? s[2 * k] - '0' : s[2 * k] - 'a' + 10, lo = s[2 * k + 1] <= '9' ? s[2 * k + 1] - '0' : s[2 * k + 1] - 'a' + 10;
        out[k] = (unsigned char)(hi * 16 + lo);
    }
    return 1;
}

/* root.txt as vt__write_root writes it, and nothing else: "vtrain-root 1",
   then steps, manifest, leaves_root, run, one "key = value" line each, in
   that order; steps a decimal, the others 64 lowercase hex digits. A
   malformed field is named. */
static vt_status vt__root_parse(const char *dir, unsigned char root[32], unsigned char manifest_sha[32], unsigned char run[32],
                                int64_t *nsteps) {
    static const char *const keys[4] = {"steps", "manifest", "leaves_root", "run"};
    char path[700], v[100];
    size_t n;
    int k;
    unsigned char *b, *outs[4];
    const char *p;
    outs[0] = NULL; outs[1] = manifest_sha; outs[2] = root; outs[3] = run;
    vt__join(path, sizeof path, dir, "root.txt");
    b = vt__read_file(path, &n, 4096);
    if (!b) return vt__tls_fail(VT_ERR_IO, "cannot read '%s' (the run did not finish?)", path);
    if (strlen((const char *)b) != n || strncmp((const char *)b, "vtrain-root 1\n", 14)) {
        VT_FREE(b, NULL);
        return vt__tls_fail(VT_ERR_FORMAT, "'%s' is not a vtrain root (version 1)", path);
    }
    for (k = 0, p = (const char *)b + 14; k < 4; k++) {
        const char *eol = strchr(p, '\n');
        size_t kl = strlen(keys[k]), vl;
        if (!eol || strncmp(p, keys[k], kl) || strncmp(p + kl, " = ", 3) || (vl = (size_t)(eol - p - kl - 3)) >= sizeof v) {
            VT_FREE(b, NULL);
            return vt__tls_fail(VT_ERR_FORMAT, "'%s': line %d should be '%s = ...'", path, k + 2, keys[k]);
        }
        memcpy(v, p + kl + 3, vl);
        v[vl] = 0;
        if (k == 0 ? !vt__dec(v, nsteps) : !vt__unhex32(v, outs[k])) {
            VT_FREE(b, NULL);
            return vt__tls_fail(VT_ERR_FORMAT, "'%s': %s = '%s' is not %s", path, keys[k], v, k == 0 ? "a step count" : "64 hex digits");
        }
        p = eol + 1;
    }
    if (*p) { VT_FREE(b, NULL); return vt__tls_fail(VT_ERR_FORMAT, "'%s': bytes after the run line", path); }
    VT_FREE(b, NULL);
    return VT_OK;
}

VTDEF vt_status vt_transcript_root(const char *dir, unsigned char root[32], unsigned char manifest_sha[32], int64_t *nsteps) {
    unsigned char r[32], m[32], run[32];
    int64_t n;
    if (vt__root_parse(dir, r, m, run, &n) != VT_OK) return vt_last_status();
    memcpy(root, r, 32);
    if (manifest_sha) memcpy(manifest_sha, m, 32);
    if (nsteps) *nsteps = n;
    return VT_OK;
}

/* The transcript's files agree with each other, every field: commits.bin
   well formed and bound to manifest.txt's hash; root.txt's steps equal to
   the records in commits.bin, its manifest to manifest.txt's hash, its
   leaves_root to the Merkle root of commits.bin's leaves and its run to the
   run commitment of those three. Nothing is replayed (vt_run does that). */
VTDEF vt_status vt_transcript_check(const char *dir, int64_t *nsteps) {
    char path[700];
    size_t len;
    unsigned char *mb, msha[32], csha[32], root[32], rmsha[32], run[32], mine[32], myrun[32], (*lv)[32];
    vt_leaf_info *L;
    int64_t n, rn, k;
    vt__join(path, sizeof path, dir, "manifest.txt");
    mb = vt__read_file(path, &len, 1 << 20);
    if (!mb) return vt__tls_fail(VT_ERR_IO, "cannot read '%s'", path);
    vt_sha256(mb, len, msha);
    VT_FREE(mb, NULL);
    vt__join(path, sizeof path, dir, "commits.bin");
    if (vt__read_leaves(path, &L, &n, csha) != VT_OK) return vt_last_status();
    if (memcmp(csha, msha, 32)) {
        vt_free_leaves(L);
        return vt__tls_fail(VT_ERR_MISMATCH, "'%s/manifest.txt' was changed after the run: its hash differs from the one in '%s'", dir, path);
    }
    if (vt__root_parse(dir, root, rmsha, run, &rn) != VT_OK) { vt_free_leaves(L); return vt_last_status(); }
    lv = (unsigned char(*)[32])VT_MALLOC(32 * (size_t)(n + 1), NULL);
    if (!lv) { vt_free_leaves(L); return vt__tls_fail(VT_ERR_NOMEM, "out of memory for the Merkle tree of '%s'", dir); }
    for (k = 0; k < n; k++) memcpy(lv[k], L[k].leaf, 32);
    vt_merkle_root((const unsigned char(*)[32])lv, n, mine);
    VT_FREE(lv, NULL);
    vt_free_leaves(L);
    vt__run_commitment(mine, msha, n, myrun);
    if (rn != n)
        return vt__tls_fail(VT_ERR_MISMATCH, "'%s/root.txt' says steps = %lld, '%s' holds %lld step commitments", dir, (long long)rn, path, (long long)n);
    if (memcmp(rmsha, msha, 32)) return vt__tls_fail(VT_ERR_MISMATCH, "'%s/root.txt' names another manifest than '%s/manifest.txt'", dir, dir);
    if (memcmp(root, mine, 32))
        return vt__tls_fail(VT_ERR_MISMATCH, "'%s/root.txt': leaves_root is not the Merkle root of the %lld leaves in '%s' (one of them was changed after the run)",
                            dir, (long long)n, path);
    if (memcmp(run, myrun, 32)) return vt__tls_fail(VT_ERR_MISMATCH, "'%s/root.txt': run is not the commitment of its manifest, leaves_root and steps", dir);
    if (nsteps) *nsteps = n;
    return VT_OK;
}

/* The manifest an auditor reads (it came from the trainer): "vtrain-manifest
   1", then "key = value" lines, each key once, the file ending in a newline.
   The program's keys are the program's to check (it rebuilds itself from
   them); vtrain's own are exactly these six, each well formed: version,
   mode (a mode name), bound (a bound mode name), lambda (a positive
   number), trainer_order (an order string) and trainer_ckpt_every (a
   positive count). Mode sets the audit's mode; bound and lambda must
   agree with the log's header (vt__log_header_check). */
/* each key once: the lines' keys sorted (n log n; a 1 MiB manifest of
   distinct keys is checked in milliseconds, where comparing each line with
   all before it took 20 s); the second line of the first repeated key (in
   line order) is named. The lines are well formed (checked before). */
/* " = " in the line [p, eol), or NULL (bounded: the sanitizers' strstr
   and strchr measure the whole rest of the text at every call) */
static const char *vt__line_eq(const char *p, const char *eol) {
    for (; p + 3 <= eol; p++)
        if (p[0] == ' ' && p[1] == '=' && p[2] == ' ') return p;
    return NULL;
}
typedef struct { const char *k; size_t n; int line; } vt__mkey;
/* the key comparisons the duplicate check made in this thread: however it
   finds duplicates, it counts each comparison of two keys here, and
   tests/test_transcript.c holds a 1 MiB manifest to n log n by this count,
   not by a clock */
static VT__THREAD_LOCAL unsigned long long vt__mkey_cmps;
static int vt__mkey_cmp(const void *x, const void *y) {
    const vt__mkey *a = (const vt__mkey *)x, *b = (const vt__mkey *)y;
    int c = memcmp(a->k, b->k, a->n < b->n ? a->n : b->n);
    vt__mkey_cmps++;
    if (c) return c;
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    return a->line - b->line;
}
static vt_status vt__manifest_dups(const char *text, size_t len, const char *path) {
    const char *p, *eol, *end = text + len;
    vt__mkey *ks;
    size_t n = 0, cap = 1, i;
    int worst = 0;
    char key[128];
    for (p = text + 18; p < end; p = eol + 1) { eol = (const char *)memchr(p, '\n', (size_t)(end - p)); cap++; }
    ks = (vt__mkey *)VT_MALLOC(sizeof *ks * cap, NULL);
    if (!ks) return vt__tls_fail(VT_ERR_NOMEM, "out of memory checking '%s'", path);
    for (p = text + 18; p < end; p = eol + 1) {
        eol = (const char *)memchr(p, '\n', (size_t)(end - p));
        ks[n].k = p;
        ks[n].n = (size_t)(vt__line_eq(p, eol) - p);
        ks[n].line = (int)n + 2;
        n++;
    }
    qsort(ks, n, sizeof *ks, vt__mkey_cmp);
    for (i = 1; i < n; i++, vt__mkey_cmps++)
        if (ks[i].n == ks[i - 1].n && !memcmp(ks[i].k, ks[i - 1].k, ks[i].n) && (!worst || ks[i].line < ks[worst].line)) worst = (int)i;
    if (worst) {
        snprintf(key, sizeof key, "%.*s", (int)ks[worst].n, ks[worst].k);
        i = (size_t)ks[worst].line;
        VT_FREE(ks, NULL);
        return vt__tls_fail(VT_ERR_FORMAT, "'%s' line %d: key '%s' appears twice", path, (int)i, key);
    }
    VT_FREE(ks, NULL);
    return VT_OK;
}

/* vtrain.shards (optional: a program with shards, >>step) is a count in 2..VT_MAX_SHARDS */
static vt_status vt__manifest_check_s(const char *text, size_t n, const char *path, int *mode, int *bound, double *lambda, int *shards) {
    static const char *const vkeys[7] = {"vtrain.version", "vtrain.mode", "vtrain.bound", "vtrain.lambda", "vtrain.trainer_order",
                                        "vtrain.trainer_ckpt_every", "vtrain.shards"};
    const char *p = text + 18, *eol;
    char key[128], v[256];
    int have[7] = {0, 0, 0, 0, 0, 0, 1}, k, line = 1;
    *shards = 1;
    if (strlen(text) != n || n < 18 || strncmp(text, "vtrain-manifest 1\n", 18) || text[n - 1] != '\n')
        return vt__tls_fail(VT_ERR_FORMAT, "'%s' is not a vtrain manifest (version 1, text lines)", path);
    for (; *p; p = eol + 1) {
        const char *eq;
        size_t kl, vl;
        eol = (const char *)memchr(p, '\n', (size_t)(text + n - p)); /* (the text ends in a newline) */
        eq = vt__line_eq(p, eol);
        line++;
        if (!eq || eq > eol || !vt__key_ok(p, kl = (size_t)(eq - p)) || (vl = (size_t)(eol - eq - 3)) >= sizeof v)
            return vt__tls_fail(VT_ERR_FORMAT, "'%s' line %d is not 'key = value' (keys are letters, digits, . _ -)", path, line);
        memcpy(key, p, kl);
        key[kl] = 0;
        memcpy(v, eq + 3, vl);
        v[vl] = 0;
        if (strncmp(key, "vtrain.", 7)) continue;
        for (k = 0; k < 7 && strcmp(key, vkeys[k]); k++) {}
        if (k == 7) return vt__tls_fail(VT_ERR_FORMAT, "'%s' line %d: '%s' is not a key vtrain %s writes", path, line, key, VTRAIN_VERSION_STRING);
        have[k] = 1;
        if (k == 0 && !v[0]) return vt__tls_fail(VT_ERR_FORMAT, "'%s': vtrain.version is empty", path);
        if (k == 1) {
            int m;
            for (m = 0; m < VT_MODE_COUNT && strcmp(v, vt_mode_name((vt_mode)m)); m++) {}
            if (m == VT_MODE_COUNT) return vt__tls_fail(VT_ERR_FORMAT, "'%s': vtrain.mode = '%s' is not a mode", path, v);
            *mode = m;
        }
        if (k == 2) {
            int b;
            for (b = 0; b < VT_BOUND_COUNT && strcmp(v, vt_bound_name((vt_bound_mode)b)); b++) {}
            if (b == VT_BOUND_COUNT) return vt__tls_fail(VT_ERR_FORMAT, "'%s': vtrain.bound = '%s' is not a bound mode", path, v);
            *bound = b;
        }
        if (k == 3) {
            char *end;
            errno = 0;
            *lambda = strtod(v, &end);
            if (!v[0] || *end || errno == ERANGE || !(*lambda > 0) || !isfinite(*lambda))
                return vt__tls_fail(VT_ERR_FORMAT, "'%s': vtrain.lambda = '%s' is not a positive number", path, v);
        }
        if (k == 4) {
            vt_order o;
            if (vt_order_parse(&o, v) != VT_OK) {
                char why[300]; /* (vt__tls_fail writes the buffer vt_last_error reads) */
                snprintf(why, sizeof why, "%.280s", vt_last_error());
                return vt__tls_fail(VT_ERR_FORMAT, "'%s': vtrain.trainer_order: %s", path, why);
            }
        }
        if (k == 5) {
            int64_t e;
            if (!vt__dec(v, &e) || e < 1) return vt__tls_fail(VT_ERR_FORMAT, "'%s': vtrain.trainer_ckpt_every = '%s' is not a positive count", path, v);
        }
        if (k == 6) {
            int64_t e;
            if (!vt__dec(v, &e) || e < 2 || e > VT_MAX_SHARDS)
                return vt__tls_fail(VT_ERR_FORMAT, "'%s': vtrain.shards = '%s' is not a shard count (2..%d)", path, v, VT_MAX_SHARDS);
            *shards = (int)e;
        }
    }
    for (k = 0; k < 6; k++)
        if (!have[k]) return vt__tls_fail(VT_ERR_FORMAT, "'%s' lacks '%s'", path, vkeys[k]);
    return vt__manifest_dups(text, n, path);
}

/* the form without shards (the fuzzer and tests/test_transcript.c call it) */
static VT__UNUSED vt_status vt__manifest_check(const char *text, size_t n, const char *path, int *mode, int *bound, double *lambda) {
    int shards;
    return vt__manifest_check_s(text, n, path, mode, bound, lambda, &shards);
}

/* vt_create, transcript part: paths, the manifest (written by the trainer,
   checked by the auditor and by a resuming trainer) */
static void vt__ord_from(vt__ord *r, const vt_order *o, const vt_desc *d);
static vt_status vt__transcript_open(vt_ctx *c) {
    vt__buf m;
    char path[700];
    snprintf(c->tdir, sizeof c->tdir, "%s", c->d.transcript);
    vt__join(c->logpath, sizeof c->logpath, c->tdir, "log.vtlog");
    vt__join(c->commitpath, sizeof c->commitpath, c->tdir, "commits.bin");
    c->d.log_path = c->logpath;
    vt__join(path, sizeof path, c->tdir, "manifest.txt");
    memset(&m, 0, sizeof m);
    if (c->d.role == VT_ROLE_TRAIN) {
        if (vt__manifest_text(c, &m) != VT_OK) { VT_FREE(m.p, c->u); return c->status; }
        vt_sha256(m.p, m.n, c->manifest_sha);
        if (c->d.resume) {
            /* the same program (the trainer_* lines may differ); the manifest
               on disk stays as it is, and so does its hash */
            size_t n;
            unsigned char *old = vt__read_file(path, &n, 1 << 20), mine[32], theirs[32];
            if (!old) { VT_FREE(m.p, c->u); return vt__fail(c, VT_ERR_IO, "resume: cannot read '%s'", path); }
            vt_sha256(old, n, c->manifest_sha);
            vt__program_sha((const char *)old, n, theirs);
            vt__program_sha((const char *)m.p, m.n, mine);
            VT_FREE(old, NULL);
            if (memcmp(mine, theirs, 32)) {
                VT_FREE(m.p, c->u);
                return vt__fail(c, VT_ERR_MISMATCH, "resume: '%s/manifest.txt' describes another program than this one", c->tdir);
            }
        } else {
#if !defined(_WIN32)
            mkdir(c->tdir, 0777);
#endif
            vt__join(path, sizeof path, c->tdir, "root.txt");
            if (vt__exists(path)) {
                VT_FREE(m.p, c->u);
                return vt__fail(c, VT_ERR_STATE, "'%s' holds a finished transcript: remove it, or resume it", c->tdir);
            }
            vt__join(path, sizeof path, c->tdir, "manifest.txt");
            vt__write_atomic(c, path, m.p, m.n, NULL, 0);
        }
    } else {
        size_t n;
        unsigned char *b = vt__read_file(path, &n, 1 << 20);
        if (!b) return vt__fail(c, VT_ERR_IO, "cannot read the manifest '%s'", path);
        vt_sha256(b, n, c->manifest_sha);
        {   /* the run's settings come from the manifest, not from guesses */
            int mode = 0, bound = 0;
            if (vt__manifest_check_s((const char *)b, n, path, &mode, &bound, &c->man_lambda, &c->man_shards) != VT_OK)
                vt__fail(c, vt_last_status(), "%s", vt_last_error());
            else if (c->man_shards != c->sh.S)
                vt__fail(c, VT_ERR_MISMATCH, "'%s' was trained with %d shards per step, this program has %d", path, c->man_shards, c->sh.S);
            c->d.mode = (vt_mode)mode;
            c->man_bound = bound;
            vt__ord_from(&c->ord, &c->d.order, &c->d);
        }
        VT_FREE(b, NULL);
    }
    VT_FREE(m.p, c->u);
    return c->status;
}

/* the end of a step: the trainer writes a checkpoint every ckpt_every
   steps; the auditor checks every checkpoint of the transcript it passes
   (the state, the step, the optimizer counters) */
static vt_status vt__transcript_step(vt_ctx *c) {
    int every = c->d.ckpt_every > 0 ? c->d.ckpt_every : 100;
    char path[700];
    if (c->tdir[0] && c->d.role == VT_ROLE_AUDIT) {
        vt__ckpt_path(c->tdir, c->step_no, path, sizeof path);
        return vt__exists(path) ? vt__checkpoint_verify(c, path) : VT_OK;
    }
    if (!c->tdir[0] || c->d.role != VT_ROLE_TRAIN || c->step_no % every != 0) return VT_OK;
    vt__ckpt_path(c->tdir, c->step_no, path, sizeof path);
    if (vt_checkpoint_save(c, path) != VT_OK) return c->status;
    c->force_full = 1;
    return vt__write_root(c);
}

/* byte offset where chunk `step` starts in a log file, scanning headers */
static int64_t vt__chunk_offset(vt_ctx *c, FILE *f, int64_t fsize, int64_t step, const char *path) {
    unsigned char h[16], ch[VT__CHUNK_HDR];
    int64_t at, s = 0, bl;
    fseek(f, 0, SEEK_SET);
    if (fread(h, 1, 16, f) != 16) { vt__fail(c, VT_ERR_TRUNCATED, "'%s' is truncated", path); return -1; }
    at = 16 + (int64_t)vt__get_u32(h + 12) + 32;
    while (s < step) {
        if (fseek(f, (long)at, SEEK_SET) != 0 || fread(ch, 1, sizeof ch, f) != sizeof ch) {
            vt__fail(c, VT_ERR_TRUNCATED, "'%s' ends before step %lld", path, (long long)step);
            return -1;
        }
        if ((bl = vt__chunk_body_len(ch, at, fsize, path, s)) < 0) {
            vt__fail(c, VT_ERR_TRUNCATED, "%s", vt_last_error());
            return -1;
        }
        at += VT__CHUNK_HDR + bl + 32;
        s++;
    }
    return at;
}

/* the step of a checkpoint's file name, or -1: only the exact name
   vt__ckpt_path writes (ckpt-%08lld.safetensors) counts, so a stray file
   ("ckpt-15.safetensors", "ckpt-+0010.safetensors") never stands for a
   checkpoint nor hides a real one below it */
static int64_t vt__ckpt_name_step(const char *name) {
    char canon[64];
    int64_t s = 0;
    const char *p = name + 5;
    if (strncmp(name, "ckpt-", 5) || *p < '0' || *p > '9') return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (s > (INT64_MAX - 9) / 10) return -1;
        s = s * 10 + (*p - '0');
    }
    snprintf(canon, sizeof canon, "ckpt-%08lld.safetensors", (long long)s);
    return strcmp(canon, name) ? -1 : s;
}

static int64_t vt__last_checkpoint(const char *dir, int64_t at_most) {
    int64_t best = -1;
#if !defined(_WIN32)
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) {
        int64_t s = vt__ckpt_name_step(e->d_name);
        if (s > best && s <= at_most) best = s;
    }
    closedir(d);
#else
    (void)dir; (void)at_most;
#endif
    return best;
}

/* a resume with no checkpoint to start from (killed before its first):
   the run starts again at step 0 in the same directory. The manifest was
   checked (the same program); the log and the commitments are replaced
   from their headers on, and root.txt (it described the old files) goes.
   Only a run that never reached a checkpoint restarts. Anything else holds
   committed steps that a restart would cut, and is refused before anything
   is cut: root.txt is there (a finished run, or one whose checkpoints were
   removed: root.txt is written at each checkpoint); commits.bin is not a
   commitments file; its records were committed under another manifest
   than manifest.txt (edited since: the trainer_ckpt_every line is outside
   the program's hash, so an edit would pass the resume's check); or it
   holds more records than the steps before the first checkpoint. That
   count is the manifest's trainer_ckpt_every, or, where the manifest has
   no such line, this run's own checkpoint interval: never none. */
static vt_status vt__restart(vt_ctx *c) {
    char path[700], v[32];
    size_t len = 0;
    int64_t every = c->d.ckpt_every > 0 ? c->d.ckpt_every : 100, recs = 0, e;
    unsigned char *b;
    vt_status st = VT_OK;
    vt__join(path, sizeof path, c->tdir, "root.txt");
    if (vt__exists(path))
        return vt__fail(c, VT_ERR_STATE, "resume: '%s' holds a finished transcript (root.txt) and no checkpoint to resume from: nothing to "
                                         "resume; to train it again, remove the directory or train into another one", c->tdir);
    if (vt_manifest_get(c->tdir, "vtrain.trainer_ckpt_every", v, sizeof v) == VT_OK && vt__dec(v, &e) && e > 0) every = e;
    b = vt__read_file(c->commitpath, &len, (size_t)1 << 40);
    if (b && len > VT__COMMIT_HDR) {
        vt__commit_at(b, len, INT64_MAX, &recs);
        if (memcmp(b, "VTRAINCM", 8) || vt__get_u32(b + 8) != 2 || vt__get_u32(b + 12) != 0)
            st = vt__fail(c, VT_ERR_STATE, "resume: '%s' is not a vtrain commitments file (version 2) and there is no checkpoint: a restart "
                                           "would replace it; train into another directory", c->commitpath);
        else if (recs > 0 && memcmp(b + 16, c->manifest_sha, 32))
            st = vt__fail(c, VT_ERR_STATE, "resume: '%s' commits %lld steps under another manifest than '%s/manifest.txt' (edited since?) "
                                           "and there is no checkpoint: a restart would cut committed steps; train into another directory",
                          c->commitpath, (long long)recs, c->tdir);
        else if (recs > every)
            st = vt__fail(c, VT_ERR_STATE, "resume: '%s' commits %lld steps, past its first checkpoint (after %lld steps), but holds no "
                                           "checkpoint (removed?): a restart would cut committed steps; train into another directory",
                          c->commitpath, (long long)recs, (long long)every);
    }
    VT_FREE(b, NULL);
    if (st != VT_OK) return st;
    if (c->logf) {
        fflush(c->logf);
        if (ftruncate(fileno(c->logf), 0) != 0) return vt__fail(c, VT_ERR_IO, "cannot truncate '%s'", c->logpath);
        fseek(c->logf, 0, SEEK_SET);
        if (vt__log_write_header(c) != VT_OK) return c->status;
    }
    fflush(c->commitf);
    if (ftruncate(fileno(c->commitf), 0) != 0) return vt__fail(c, VT_ERR_IO, "cannot truncate '%s'", c->commitpath);
    fseek(c->commitf, 0, SEEK_SET);
    if (vt__commit_write_header(c) != VT_OK) return c->status;
    vt__join(path, sizeof path, c->tdir, "root.txt");
    remove(path);
    c->step_no = 0;
    c->root_ok = 1;
    return VT_OK;
}

VTDEF vt_status vt_resume(vt_ctx *c) {
    char path[700];
    int64_t step, off, logoff = 0;
    if (c->status != VT_OK) return c->status;
    if (c->d.role == VT_ROLE_TRAIN && c->d.resume) {
        if (!c->tdir[0]) return vt__fail(c, VT_ERR_ARG, "resume needs a transcript directory");
        step = vt__last_checkpoint(c->tdir, INT64_MAX);
        if (step < 0) return vt__restart(c);
        vt__ckpt_path(c->tdir, step, path, sizeof path);
        if (vt_checkpoint_load(c, path) != VT_OK) return c->status;
        if (c->step_no != step)
            return vt__fail(c, VT_ERR_MISMATCH, "resume: '%s' says it holds the state after %lld steps, its name says %lld", path,
                            (long long)c->step_no, (long long)step);
        /* everything is checked before anything is cut: the log and the
           commitments reach the checkpoint, and the checkpoint is the state
           the last kept commitment names; a resume that fails leaves the
           files as they were */
        if (c->logf) {
            fseek(c->logf, 0, SEEK_END);
            logoff = vt__chunk_offset(c, c->logf, (int64_t)ftell(c->logf), step, c->logpath);
            if (logoff < 0) return c->status;
        }
        {
            vt_leaf_info *L;
            int64_t n, k;
            size_t len;
            unsigned char d[32], msha[32], *b = vt__read_file(c->commitpath, &len, (size_t)1 << 40);
            if (!b) return vt__fail(c, VT_ERR_IO, "resume: cannot read '%s'", c->commitpath);
            off = (int64_t)vt__commit_at(b, len, step, &k);
            if (k < step) {
                VT_FREE(b, NULL);
                return vt__fail(c, VT_ERR_TRUNCATED, "'%s' ends before step %lld", c->commitpath, (long long)step);
            }
            if ((size_t)off > len || vt__parse_leaves(b, (size_t)off, c->commitpath, &L, &n, msha) != VT_OK) {
                VT_FREE(b, NULL);
                return vt__fail(c, vt_last_status() != VT_OK ? vt_last_status() : VT_ERR_TRUNCATED, "resume: %s", vt_last_error());
            }
            VT_FREE(b, NULL);
            vt_weights_digest(c, d);
            if (n != step || (n > 0 && memcmp(L[n - 1].state, d, 32))) {
                vt_free_leaves(L);
                return vt__fail(c, VT_ERR_MISMATCH, "resume: checkpoint %lld does not match the commitment of step %lld", (long long)step, (long long)(step - 1));
            }
            vt_free_leaves(L);
            if (memcmp(msha, c->manifest_sha, 32))
                return vt__fail(c, VT_ERR_MISMATCH, "resume: '%s' was committed under another manifest than '%s/manifest.txt'", c->commitpath, c->tdir);
        }
        /* cut the log and the commitments after step - 1, then append */
        if (c->logf) {
            fflush(c->logf);
            if (ftruncate(fileno(c->logf), (off_t)logoff) != 0) return vt__fail(c, VT_ERR_IO, "cannot truncate '%s'", c->logpath);
            fseek(c->logf, (long)logoff, SEEK_SET);
            c->force_full = 1;
        }
        fflush(c->commitf);
        if (ftruncate(fileno(c->commitf), (off_t)off) != 0) return vt__fail(c, VT_ERR_IO, "cannot truncate '%s'", c->commitpath);
        fseek(c->commitf, (long)off, SEEK_SET);
        c->root_ok = 1;
        return VT_OK;
    }
    if (c->d.role == VT_ROLE_AUDIT && c->d.audit_from > 0) {
        vt_leaf_info *L;
        int64_t n;
        unsigned char d[32];
        if (!c->tdir[0]) return vt__fail(c, VT_ERR_ARG, "audit_from needs a transcript directory");
        step = c->d.audit_from;
        vt__ckpt_path(c->tdir, step, path, sizeof path);
        if (!vt__exists(path)) return vt__fail(c, VT_ERR_ARG, "the transcript has no checkpoint at step %lld ('%s' cannot be read)", (long long)step, path);
        if (vt_checkpoint_load(c, path) != VT_OK) return c->status;
        if (c->step_no != step)
            return vt__fail(c, VT_ERR_MISMATCH, "'%s' says it holds the state after %lld steps, its name says %lld", path,
                            (long long)c->step_no, (long long)step);
        {   /* the commitments, checked whole, and where record `step` starts */
            size_t len;
            int64_t k;
            unsigned char *b = vt__read_file(c->commitpath, &len, (size_t)1 << 40);
            if (!b) return vt__fail(c, VT_ERR_IO, "cannot read '%s'", c->commitpath);
            if (vt__parse_leaves(b, len, c->commitpath, &L, &n, NULL) != VT_OK) {
                VT_FREE(b, NULL);
                return vt__fail(c, vt_last_status(), "%s", vt_last_error());
            }
            off = (int64_t)vt__commit_at(b, len, step, &k);
            VT_FREE(b, NULL);
        }
        vt_weights_digest(c, d);
        if (n < step || memcmp(L[step - 1].state, d, 32)) {
            vt_free_leaves(L);
            return vt__fail(c, VT_ERR_MISMATCH, "checkpoint %lld does not match the trainer's commitment of step %lld", (long long)step, (long long)(step - 1));
        }
        vt_free_leaves(L);
        if (c->rd.f) {
            logoff = vt__chunk_offset(c, c->rd.f, c->rd.fsize, step, c->logpath);
            if (logoff < 0) return c->status;
            fseek(c->rd.f, (long)logoff, SEEK_SET);
        }
        fseek(c->commitf, (long)off, SEEK_SET);
        c->start_step = step;
    }
    return VT_OK;
}

/* --- the dispute game ------------------------------------------------------------ */

/* RFC 6962's Merkle Tree Hash of leaves [lo, hi), and its split point */
static int64_t vt__msplit(int64_t size) {
    int64_t k = 1;
    while (k * 2 < size) k *= 2;
    return k;
}
static void vt__mth(const vt_leaf_info *L, int64_t lo, int64_t hi, unsigned char out[32]) {
    if (hi - lo == 1) {
        vt_sha256_ctx s;
        unsigned char zero = 0;
        vt_sha256_init(&s);
        vt_sha256_update(&s, &zero, 1);
        vt_sha256_update(&s, L[lo].leaf, 32);
        vt_sha256_final(&s, out);
    } else {
        unsigned char l[32], r[32];
        int64_t k = vt__msplit(hi - lo);
        vt__mth(L, lo, lo + k, l);
        vt__mth(L, lo + k, hi, r);
        vt__mnode(l, r, out);
    }
}

VTDEF vt_status vt_dispute_begin(vt_dispute *g, const vt_leaf_info *mine, int64_t n, const unsigned char trainer_root[32]) {
    unsigned char my[32];
    memset(g, 0, sizeof *g);
    g->n = n;
    g->mine = mine;
    g->lo = 0;
    g->hi = n;
    g->result = -1;
    memcpy(g->node, trainer_root, 32);
    g->outcome = VT_DISPUTE_OPEN;
    if (n <= 0 || !mine) {
        g->done = 1;
        g->outcome = VT_DISPUTE_INVALID;
        snprintf(g->message, sizeof g->message, "no steps to dispute: no game");
        return VT_ERR_ARG;
    }
    vt__mth(mine, 0, n, my);
    if (!memcmp(my, trainer_root, 32)) {
        g->done = 1;
        g->outcome = VT_DISPUTE_NONE;
        snprintf(g->message, sizeof g->message, "the roots agree: nothing to dispute");
        return VT_ERR_STATE;
    }
    return VT_OK;
}

VTDEF int vt_dispute_query(const vt_dispute *g, int64_t *lo, int64_t *hi) {
    if (g->done) return 0;
    *lo = g->lo;
    *hi = g->hi;
    return 1;
}

VTDEF vt_status vt_dispute_answer(const vt_leaf_info *leaves, int64_t n, int64_t lo, int64_t hi, vt_claim *out) {
    memset(out, 0, sizeof *out);
    if (lo < 0 || hi > n || hi - lo < 1) return vt__tls_fail(VT_ERR_ARG, "dispute: no node [%lld, %lld) in %lld steps", (long long)lo, (long long)hi, (long long)n);
    out->lo = lo;
    out->hi = hi;
    if (hi - lo == 1) out->leaf = leaves[lo];
    else {
        int64_t k = vt__msplit(hi - lo);
        vt__mth(leaves, lo, lo + k, out->left);
        vt__mth(leaves, lo + k, hi, out->right);
    }
    return VT_OK;
}

/* the game ends with the trainer losing at this round */
static vt_status vt__dispute_lost(vt_dispute *g, vt_status st, const char *why) {
    g->done = 1;
    g->outcome = VT_DISPUTE_TRAINER_LOSES;
    g->result = -1;
    snprintf(g->message, sizeof g->message, "round %d, steps [%lld, %lld): %s: the trainer loses", g->rounds, (long long)g->lo,
             (long long)g->hi, why);
    return st;
}

VTDEF vt_status vt_dispute_forfeit(vt_dispute *g, const char *why) {
    char w[200];
    if (g->done) return VT_ERR_STATE;
    g->rounds++;
    snprintf(w, sizeof w, "the trainer did not answer (%.150s)", why ? why : "no answer");
    return vt__dispute_lost(g, VT_ERR_IMPLAUSIBLE, w);
}

VTDEF void vt_claim_encode(const vt_claim *c, unsigned char out[VT_CLAIM_BYTES]) {
    memcpy(out, "VTCL", 4);
    vt__put_u64(out + 4, (uint64_t)c->lo);
    vt__put_u64(out + 12, (uint64_t)c->hi);
    memcpy(out + 20, c->left, 32);
    memcpy(out + 52, c->right, 32);
    vt__put_u64(out + 84, (uint64_t)c->leaf.step);
    memcpy(out + 92, c->leaf.state, 32);
    memcpy(out + 124, c->leaf.chunk, 32);
    memcpy(out + 156, c->leaf.batch, 32);
    memcpy(out + 188, c->leaf.leaf, 32);
}

VTDEF vt_status vt_claim_decode(const unsigned char *b, size_t n, vt_claim *c) {
    memset(c, 0, sizeof *c);
    if (!b || n < VT_CLAIM_BYTES) return vt__tls_fail(VT_ERR_TRUNCATED, "a claim of %zu bytes is truncated (a claim has %d)", b ? n : 0, VT_CLAIM_BYTES);
    if (n > VT_CLAIM_BYTES) return vt__tls_fail(VT_ERR_FORMAT, "a claim of %zu bytes has %zu bytes too many", n, n - VT_CLAIM_BYTES);
    if (memcmp(b, "VTCL", 4)) return vt__tls_fail(VT_ERR_FORMAT, "not a claim (bad magic)");
    c->lo = (int64_t)vt__get_u64(b + 4);
    c->hi = (int64_t)vt__get_u64(b + 12);
    memcpy(c->left, b + 20, 32);
    memcpy(c->right, b + 52, 32);
    c->leaf.step = (int64_t)vt__get_u64(b + 84);
    memcpy(c->leaf.state, b + 92, 32);
    memcpy(c->leaf.chunk, b + 124, 32);
    memcpy(c->leaf.batch, b + 156, 32);
    memcpy(c->leaf.leaf, b + 188, 32);
    return VT_OK;
}

VTDEF vt_status vt_dispute_receive_bytes(vt_dispute *g, const unsigned char *b, size_t n) {
    vt_claim c;
    char w[200];
    if (g->done) return VT_ERR_STATE;
    if (vt_claim_decode(b, n, &c) != VT_OK) {
        g->rounds++;
        snprintf(w, sizeof w, "the trainer's answer is malformed (%.150s)", vt_last_error());
        return vt__dispute_lost(g, VT_ERR_FORMAT, w);
    }
    return vt_dispute_receive(g, &c);
}

VTDEF vt_status vt_dispute_receive(vt_dispute *g, const vt_claim *c) {
    unsigned char h[32], my[32];
    char w[200];
    if (g->done) return VT_ERR_STATE;
    if (!c) return vt_dispute_forfeit(g, "no claim");
    g->rounds++;
    if (c->lo != g->lo || c->hi != g->hi) {
        snprintf(w, sizeof w, "the trainer answered for steps [%lld, %lld) instead", (long long)c->lo, (long long)c->hi);
        return vt__dispute_lost(g, VT_ERR_IMPLAUSIBLE, w);
    }
    if (g->hi - g->lo == 1) { /* the leaf: it must be the one the node commits to */
        vt_leaf_info chk = c->leaf;
        vt_sha256_ctx s;
        unsigned char zero = 0;
        vt_leaf_hash(&chk);
        vt_sha256_init(&s);
        vt_sha256_update(&s, &zero, 1);
        vt_sha256_update(&s, chk.leaf, 32);
        vt_sha256_final(&s, h);
        if (chk.step != g->lo) {
            snprintf(w, sizeof w, "the trainer revealed a leaf of step %lld", (long long)chk.step);
            return vt__dispute_lost(g, VT_ERR_IMPLAUSIBLE, w);
        }
        if (memcmp(h, g->node, 32)) return vt__dispute_lost(g, VT_ERR_IMPLAUSIBLE, "the trainer's leaf does not hash to its node");
        g->done = 1;
        g->outcome = VT_DISPUTE_FOUND;
        g->disputed_trainer = chk;
        g->result = g->lo;
        if (g->lo > 0) g->agreed = g->mine[g->lo - 1];
        snprintf(g->message, sizeof g->message, "first differing step %lld after %d rounds", (long long)g->lo, g->rounds);
        return VT_OK;
    }
    vt__mnode(c->left, c->right, h);
    if (memcmp(h, g->node, 32)) return vt__dispute_lost(g, VT_ERR_IMPLAUSIBLE, "the trainer's children do not hash to its node");
    {
        int64_t k = vt__msplit(g->hi - g->lo);
        vt__mth(g->mine, g->lo, g->lo + k, my);
        if (memcmp(my, c->left, 32)) { g->hi = g->lo + k; memcpy(g->node, c->left, 32); }
        else { g->lo += k; memcpy(g->node, c->right, 32); }
    }
    return VT_OK;
}

VTDEF vt_status vt_transcript_chunk(const char *dir, int64_t step, unsigned char **bytes, size_t *len) {
    char path[700];
    size_t n;
    unsigned char *b;
    int64_t s, at, bl;
    vt__join(path, sizeof path, dir, "log.vtlog");
    b = vt__read_file(path, &n, (size_t)1 << 40);
    *bytes = NULL;
    if (!b) return vt__tls_fail(VT_ERR_IO, "cannot read '%s'", path);
    if (n < 48) { VT_FREE(b, NULL); return vt__tls_fail(VT_ERR_TRUNCATED, "'%s' is truncated", path); }
    at = 16 + (int64_t)vt__get_u32(b + 12) + 32;
    for (s = 0; s <= step; s++) {
        if (at + VT__CHUNK_HDR > (int64_t)n) { VT_FREE(b, NULL); return vt__tls_fail(VT_ERR_TRUNCATED, "'%s' ends before step %lld", path, (long long)step); }
        if ((bl = vt__chunk_body_len(b + at, at, (int64_t)n, path, s)) < 0) { VT_FREE(b, NULL); return VT_ERR_TRUNCATED; }
        if (s == step) {
            size_t cl = VT__CHUNK_HDR + (size_t)bl + 32;
            *bytes = (unsigned char *)VT_MALLOC(cl, NULL);
            if (!*bytes) { VT_FREE(b, NULL); return vt__tls_fail(VT_ERR_NOMEM, "out of memory"); }
            memcpy(*bytes, b + at, cl);
            *len = cl;
        }
        at += VT__CHUNK_HDR + bl + 32;
    }
    VT_FREE(b, NULL);
    return VT_OK;
}

VTDEF vt_status vt_transcript_state_before(const vt_desc *d, const vt_program *p, const char *dir, int64_t step,
                                           const char *ckpt_out) {
    int64_t k = vt__last_checkpoint(dir, step);
    return vt_transcript_state_from(d, p, dir, k > 0 ? k : 0, step, ckpt_out);
}

/* failures that say nothing about either party: the judge's machine (its
   memory, its backend: vt__machine_fault) and the caller's program (its
   calls out of order, its arguments); not of the files a replay reads */
static int vt__machine_fault(vt_status st) { return st == VT_ERR_NOMEM || st == VT_ERR_BACKEND; }
static int vt__judge_own_fault(vt_status st) { return vt__machine_fault(st) || st == VT_ERR_STATE || st == VT_ERR_ARG; }

/* vt_transcript_state_from, saying whose fault a failure is: *own = 1 when
   it is this machine's (its memory or backend, the caller's program or
   settings, the output file it writes), 0 when it comes from dir's files:
   one missing, unreadable or malformed (the manifest, the log, the
   commitments, the checkpoint it starts from), or a replay of them that
   differs from their own commitments. A dispute rules on that: a trainer
   answers for every file of its transcript. */
static vt_status vt__state_from(const vt_desc *d, const vt_program *p, const char *dir, int64_t from, int64_t step, const char *ckpt_out,
                                int *own) {
    vt_desc dd = *d;
    vt_ctx *c;
    vt_report r;
    vt_status st;
    *own = 1;
    if (from < 0 || from > step) return vt__tls_fail(VT_ERR_ARG, "replaying '%s' from step %lld to step %lld: no such range", dir, (long long)from, (long long)step);
    dd.role = VT_ROLE_AUDIT;
    dd.transcript = dir;
    dd.log_path = NULL;
    dd.log_memory = 0;
    dd.audit_from = from;
    c = vt_create(&dd); /* reads dir's manifest, log header and commitments */
    if (!c) {
        st = vt_last_status();
        *own = vt__judge_own_fault(st); /* (ARG, STATE: the caller's vt_desc) */
        return st;
    }
    st = p->setup ? p->setup(c, p->user) : VT_OK; /* the caller's program */
    if (st == VT_OK) {
        st = vt_resume(c); /* dir's checkpoint `from`, and its log and commitments up to it */
        if (st != VT_OK) *own = vt__machine_fault(st);
    }
    if (st == VT_OK) {
        st = vt_run_ctx(c, p, step, &r); /* dir's log, checked against dir's commitments */
        if (st != VT_OK) *own = vt__judge_own_fault(st); /* (ARG, STATE: the program's calls) */
    }
    if (st == VT_OK) st = vt_checkpoint_save(c, ckpt_out); /* this machine's file */
    if (st != VT_OK) vt__tls_fail(st, "replaying the transcript to step %lld: %s", (long long)step, vt_error_message(c));
    vt_destroy(c);
    return st;
}

VTDEF vt_status vt_transcript_state_from(const vt_desc *d, const vt_program *p, const char *dir, int64_t from, int64_t step,
                                         const char *ckpt_out) {
    int own;
    return vt__state_from(d, p, dir, from, step, ckpt_out, &own);
}


/* One execution of `step` for the judge: the state from state_ckpt (none
   at step 0), whose digest must be agreed->state, then the step fed with
   chunk, whose hash must be `committed`; the leaf it gives in *out.
   Returns 0 (executed: compare *out), 1 (the state is not the agreed
   one: whoever supplied it is at fault), 2 (the chunk is not the
   committed one or does not replay: its party is at fault), 3 (the
   judge's own machine or program failed: nobody is). why says which. */
static int vt__judge_exec(const vt_desc *d, const vt_program *p, const vt_leaf_info *agreed, const char *state_ckpt, int64_t step,
                          const unsigned char *chunk, size_t chunk_len, const unsigned char committed[32], const char *who,
                          vt_leaf_info *out, char *why, size_t whylen) {
    vt_desc dd = *d;
    vt_ctx *c;
    unsigned char sha[32];
    int res = 0;
    dd.role = VT_ROLE_AUDIT;
    dd.transcript = NULL;
    dd.log_path = NULL;
    dd.commit_path = NULL;
    dd.log_memory = 1;
    dd.audit_from = 0;
    c = vt_create(&dd);
    if (!c) { snprintf(why, whylen, "the judge could not start: %.300s", vt_last_error()); return 3; }
    if (p->setup && p->setup(c, p->user) != VT_OK) { snprintf(why, whylen, "setup failed: %.300s", vt_error_message(c)); res = 3; goto out; }
    if (step > 0) {
        unsigned char dg[32];
        if (!state_ckpt || vt_checkpoint_load(c, state_ckpt) != VT_OK) {
            snprintf(why, whylen, "the trainer's state before step %lld is unusable: %.300s", (long long)step, vt_error_message(c));
            res = vt__judge_own_fault(vt_status_of(c)) ? 3 : 1;
            goto out;
        }
        vt_weights_digest(c, dg);
        if (!agreed || memcmp(dg, agreed->state, 32) || c->step_no != step) {
            snprintf(why, whylen, "the state the trainer supplied is not the agreed state after step %lld", (long long)(step - 1));
            res = 1;
            goto out;
        }
    }
    c->step_no = step;
    /* the committed hash covers the chunk's header and records, not its checksum */
    vt_sha256(chunk, chunk_len >= 32 ? chunk_len - 32 : 0, sha);
    if (memcmp(sha, committed, 32)) {
        snprintf(why, whylen, "the log chunk %s supplied for step %lld is not the one it committed", who, (long long)step);
        res = 2;
        goto out;
    }
    vt_feed_chunk(c, chunk, chunk_len);
    if (vt_step_begin(c) == VT_OK) {
        vt_status st = p->step(c, step, p->user);
        if (st != VT_OK && vt_status_of(c) == VT_OK) vt__fail(c, st, "step %lld: the program's step function failed (%s)", (long long)step, vt_status_name(st));
    }
    vt_step_end(c);
    if (vt_status_of(c) != VT_OK) {
        /* the chunk did not replay (implausible entry, desync, a malformed
           record, a NaN): its party's fault; the judge's own trouble
           (memory, a backend, the program's calls) is nobody's */
        if (vt__judge_own_fault(vt_status_of(c))) {
            snprintf(why, whylen, "the judge could not re-execute step %lld (%.300s)", (long long)step, vt_error_message(c));
            res = 3;
        } else {
            snprintf(why, whylen, "re-executing step %lld with %s's log failed: %.300s", (long long)step, who, vt_error_message(c));
            res = 2;
        }
        goto out;
    }
    out->step = step;
    vt_weights_digest(c, out->state);
    memcpy(out->chunk, sha, 32);
    {
        vt_sha256_ctx bs = c->batch;
        vt_sha256_final(&bs, out->batch);
    }
    vt_leaf_hash(out);
out:
    vt_destroy(c);
    return res;
}

/* 1 when a leaf hashes to itself (every leaf from a game does) */
static int vt__leaf_consistent(const vt_leaf_info *l) {
    vt_leaf_info chk = *l;
    vt_leaf_hash(&chk);
    return !memcmp(chk.leaf, l->leaf, 32);
}

/* The judge's rule (THE JUDGE in the >>transcript essay), for vt_judge
   (the trainer's chunk alone: achunk NULL) and vt_judge_both; *no_fault is
   set when it finds no party at fault (no verdict, and none due). The
   trainer's chunk is replayed first: if it does not give the trainer's
   leaf the trainer is wrong, whatever the auditor's does. Then, with the
   auditor's chunk, the auditor is wrong if its own chunk does not give its
   leaf, and nobody if it does; without it, nobody if the leaves differ in
   their chunks alone, else the auditor (whose own log was not judged). */
static vt_verdict vt__judge(const vt_desc *d, const vt_program *p, const vt_leaf_info *agreed, const char *state_ckpt,
                            const unsigned char *tchunk, size_t tlen, const vt_leaf_info *trainer, const unsigned char *achunk, size_t alen,
                            const vt_leaf_info *auditor, int *no_fault, char *why, size_t whylen) {
    vt_leaf_info tl, al;
    char tw[400], aw[400];
    int t, a = 0, tok, aok = 0, same, both = achunk && auditor;
    *no_fault = 0;
    why[0] = 0;
    /* the claims come from a game that checked them; anything else is the
       caller's mistake, and rules against nobody */
    if (!trainer || (trainer->step > 0 && (!agreed || agreed->step != trainer->step - 1)) || !tchunk) {
        snprintf(why, whylen, "the judge needs the trainer's leaf, its log chunk and the agreed leaf of the step before: no verdict");
        return VT_VERDICT_NONE;
    }
    if (!vt__leaf_consistent(trainer)) {
        snprintf(why, whylen, "the trainer's leaf for step %lld does not hash to itself (not from a game): no verdict", (long long)trainer->step);
        return VT_VERDICT_NONE;
    }
    if (auditor) {
        if (!vt__leaf_consistent(auditor) || auditor->step != trainer->step) {
            snprintf(why, whylen, "the auditor's leaf is not a leaf of step %lld that hashes to itself (not from a game): no verdict", (long long)trainer->step);
            return VT_VERDICT_NONE;
        }
        if (!memcmp(auditor->leaf, trainer->leaf, 32)) {
            snprintf(why, whylen, "the trainer and the auditor hold the same leaf for step %lld: nothing to judge", (long long)trainer->step);
            return VT_VERDICT_NONE;
        }
    }
    if (d->mode != VT_MODE_VERIFIED) {
        snprintf(why, whylen, "only a verified run's step can be judged: mode %s keeps no rounding log, so two honest machines compute "
                              "different steps: no verdict", vt_mode_name(d->mode));
        return VT_VERDICT_NONE;
    }
    same = auditor && !memcmp(auditor->state, trainer->state, 32) && !memcmp(auditor->batch, trainer->batch, 32);
    t = vt__judge_exec(d, p, agreed, state_ckpt, trainer->step, tchunk, tlen, trainer->chunk, "the trainer", &tl, tw, sizeof tw);
    if (t == 3) { snprintf(why, whylen, "%.390s: no verdict", tw); return VT_VERDICT_NONE; }
    if (t == 1) { snprintf(why, whylen, "%s", tw); return VT_VERDICT_TRAINER_WRONG; }
    tok = t == 0 && !memcmp(tl.leaf, trainer->leaf, 32);
    if (!tok && t == 0)
        snprintf(tw, sizeof tw, "step %lld re-executed from the agreed state with the trainer's log gives another %s than the trainer committed",
                 (long long)trainer->step, memcmp(tl.batch, trainer->batch, 32) ? "batch" : "state");
    if (both) {
        a = vt__judge_exec(d, p, agreed, state_ckpt, auditor->step, achunk, alen, auditor->chunk, "the auditor", &al, aw, sizeof aw);
        aok = a == 0 && !memcmp(al.leaf, auditor->leaf, 32);
        if (!aok && a == 0)
            snprintf(aw, sizeof aw, "with the auditor's log it gives another %s than the auditor committed",
                     memcmp(al.batch, auditor->batch, 32) ? "batch" : "state");
    }
    if (!tok) { /* wrong whatever the auditor's chunk does, even one this machine could not replay */
        const char *also = !both ? (auditor && t == 0 && !memcmp(auditor->leaf, tl.leaf, 32) ? " (the auditor's leaf is right)" : "")
                         : a == 3 || a == 1 ? "; the auditor's log could not be replayed here"
                         : aok ? "; the auditor's log reproduces the auditor's leaf" : "; the auditor's leaf is not reproduced either";
        snprintf(why, whylen, "%s%s", tw, also);
        return VT_VERDICT_TRAINER_WRONG;
    }
    if (!both) { /* the trainer's chunk alone */
        if (same) {
            *no_fault = 1;
            snprintf(why, whylen, "step %lld re-executed from the agreed state reproduces the trainer's leaf, and the auditor's leaf differs only "
                                  "in its log chunk (the same state and batch): no fault", (long long)trainer->step);
            return VT_VERDICT_NONE;
        }
        snprintf(why, whylen, "step %lld re-executed from the agreed state reproduces the trainer's leaf%s", (long long)trainer->step,
                 auditor ? "; the auditor's leaf is not what the trainer's valid log gives (its own log was not judged)" : "");
        return VT_VERDICT_AUDITOR_WRONG;
    }
    if (a == 3 || a == 1) { snprintf(why, whylen, "%.390s: no verdict", aw); return VT_VERDICT_NONE; } /* (1: the state loaded once already) */
    if (!aok) {
        snprintf(why, whylen, "step %lld re-executed from the agreed state reproduces the trainer's leaf; the auditor's leaf is wrong (%s)",
                 (long long)trainer->step, aw);
        return VT_VERDICT_AUDITOR_WRONG;
    }
    *no_fault = 1;
    snprintf(why, whylen, "step %lld re-executed from the agreed state reproduces each party's leaf with its own log: both are valid "
                          "executions (%s): no fault", (long long)trainer->step,
             same ? "they differ only in their log chunks: the two runs logged different entries for the same values"
                  : "their states differ where the bound left a rounding undecided and each run logged its own choice: the log's freedom");
    return VT_VERDICT_NONE;
}

VTDEF vt_verdict vt_judge(const vt_desc *d, const vt_program *p, const vt_leaf_info *agreed, const char *state_ckpt,
                          const unsigned char *chunk, size_t chunk_len, const vt_leaf_info *trainer,
                          const vt_leaf_info *auditor, char *why, size_t whylen) {
    int nf;
    return vt__judge(d, p, agreed, state_ckpt, chunk, chunk_len, trainer, NULL, 0, auditor, &nf, why, whylen);
}

VTDEF vt_verdict vt_judge_both(const vt_desc *d, const vt_program *p, const vt_leaf_info *agreed, const char *state_ckpt,
                               const unsigned char *tchunk, size_t tlen, const vt_leaf_info *trainer, const unsigned char *achunk,
                               size_t alen, const vt_leaf_info *auditor, char *why, size_t whylen) {
    int nf;
    return vt__judge(d, p, agreed, state_ckpt, tchunk, tlen, trainer, achunk, alen, auditor, &nf, why, whylen);
}

VTDEF vt_status vt_transcript_settings(const char *dir, vt_desc *d) {
    char path[700];
    size_t n;
    int mode = 0, bound = 0, shards = 1;
    double lambda = 0;
    unsigned char *b;
    vt__join(path, sizeof path, dir, "manifest.txt");
    b = vt__read_file(path, &n, 1 << 20);
    if (!b) return vt__tls_fail(VT_ERR_IO, "cannot read '%s'", path);
    if (vt__manifest_check_s((const char *)b, n, path, &mode, &bound, &lambda, &shards) != VT_OK) { VT_FREE(b, NULL); return vt_last_status(); }
    VT_FREE(b, NULL);
    d->mode = (vt_mode)mode;
    d->bound = (vt_bound_mode)bound;
    d->lambda = lambda;
    d->shards = shards > 1 ? shards : 0;
    return VT_OK;
}

VTDEF vt_status vt_checkpoint_counters(const char *path, int64_t *step, int64_t *t, int max, int *n) {
    size_t len;
    uint64_t hl;
    unsigned char *b = vt__read_file(path, &len, (size_t)1 << 40);
    vt__st_header *h;
    char err[200], key[32];
    const char *v;
    int k;
    *n = 0;
    if (!b) return vt__tls_fail(VT_ERR_IO, "cannot read the checkpoint '%s'", path);
    h = (vt__st_header *)VT_MALLOC(sizeof *h, NULL);
    if (!h) { VT_FREE(b, NULL); return vt__tls_fail(VT_ERR_NOMEM, "out of memory reading '%s'", path); }
    hl = len >= 8 ? vt__get_u64(b) : 0;
    if (len < 8 || hl > len - 8 || !vt__st_parse((const char *)b + 8, (size_t)hl, h, err, sizeof err)) {
        VT_FREE(h, NULL);
        VT_FREE(b, NULL);
        return vt__tls_fail(VT_ERR_FORMAT, "checkpoint '%s' has no readable header", path);
    }
    VT_FREE(b, NULL);
    v = vt__st_meta(h, "step");
    if (!v || !vt__dec(v, step)) { VT_FREE(h, NULL); return vt__tls_fail(VT_ERR_FORMAT, "checkpoint '%s': no step", path); }
    for (k = 0; k < max; k++) {
        snprintf(key, sizeof key, "optim%d.t", k);
        v = vt__st_meta(h, key);
        if (!v) break;
        if (!vt__dec(v, &t[k])) { VT_FREE(h, NULL); return vt__tls_fail(VT_ERR_FORMAT, "checkpoint '%s': '%s' is not a count", path, key); }
        (*n)++;
    }
    VT_FREE(h, NULL);
    return VT_OK;
}

/* A private directory for the states the dispute needs, in the system's
   temporary directory (neither party's transcript is written to): made by
   mkdtemp, so its name cannot be guessed and only this user can create a
   file (or plant a link) in it. On Windows (no mkdtemp) the per-user
   %TEMP% itself, with names of this process. 1 when made. */
static int vt__tmp_dir(char *buf, size_t n) {
#if !defined(_WIN32)
    const char *dir = getenv("TMPDIR");
    snprintf(buf, n, "%s/vtrain-judge-XXXXXX", dir && dir[0] ? dir : "/tmp");
    if (!mkdtemp(buf)) {
        vt__tls_fail(VT_ERR_IO, "the judge cannot create a private temporary directory '%s'", buf);
        return 0;
    }
#else
    static int seq;
    const char *dir = getenv("TEMP");
    snprintf(buf, n, "%s/vtrain-judge-%d", dir && dir[0] ? dir : ".", seq++);
#endif
    return 1;
}
static void vt__tmp_file(char *buf, size_t n, const char *tdir, const char *what) {
#if !defined(_WIN32)
    snprintf(buf, n, "%s/%s.safetensors", tdir, what);
#else
    snprintf(buf, n, "%s-%s.safetensors", tdir, what);
#endif
}
static void vt__tmp_dir_remove(const char *tdir) {
    char f[760];
    vt__tmp_file(f, sizeof f, tdir, "trainer-state");
    remove(f);
    vt__tmp_file(f, sizeof f, tdir, "auditor-state");
    remove(f);
#if !defined(_WIN32)
    rmdir(tdir);
#endif
}

/* the report's outcome; returns VT_OK (the game was played to an end) */
static vt_status vt__dreport(vt_dispute_report *r, vt_dispute_outcome o, vt_verdict v, const char *fmt, ...) VT__PRINTF(4, 5);
static vt_status vt__dreport(vt_dispute_report *r, vt_dispute_outcome o, vt_verdict v, const char *fmt, ...) {
    va_list ap;
    r->outcome = o;
    r->verdict = v;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
    return VT_OK;
}

/* The trainer's state before step q, with optimizer counters the judge can
   rest on. The trainer replays its own log from its last checkpoint before
   q; the counters in that checkpoint are in no commitment, so they are
   compared with the ones the auditor's own state carries, and when the two
   differ (or the auditor has none) the trainer's state is replayed from
   step 0 instead, trusting no checkpoint. 0 with r filled in when the
   trainer cannot produce it (any file of its transcript missing,
   unreadable or malformed, or a replay that leaves its own commitments:
   the trainer loses) or this machine failed (its memory, its backend, its
   temporary files: no verdict). The cost is a replay: from the trainer's
   last checkpoint, or from step 0 when it has none before q or the
   counters differ (either party can force that), plus the auditor's own
   replay for its counters; r->replayed_steps counts them all. */
static int vt__dispute_state(const vt_desc *d, const vt_program *p, const char *a, const char *b, int64_t q, const char *out,
                             const char *other, vt_dispute_report *r) {
    int64_t ka = vt__last_checkpoint(a, q), kb, sa, sb, ta[64], tb[64];
    int na, nb, same = 0, k, own = 1, ownb;
    double t0 = vt__now();
    vt_status st;
    if (ka < 0) ka = 0;
    st = vt__state_from(d, p, a, ka, q, out, &own);
    r->replayed_steps += q - ka;
    if (st == VT_OK && ka > 0) {
        kb = vt__last_checkpoint(b, q);
        if (kb < 0) kb = 0;
        r->replayed_steps += q - kb;
        if (vt__state_from(d, p, b, kb, q, other, &ownb) == VT_OK && vt_checkpoint_counters(out, &sa, ta, 64, &na) == VT_OK &&
            vt_checkpoint_counters(other, &sb, tb, 64, &nb) == VT_OK && na == nb) {
            for (k = 0, same = 1; k < na; k++) same &= ta[k] == tb[k];
        }
        remove(other);
        if (!same) {
            st = vt__state_from(d, p, a, 0, q, out, &own);
            r->replayed_steps += q;
        }
    }
    r->rebuild_seconds += vt__now() - t0;
    if (st == VT_OK) return 1;
    if (own)
        vt__dreport(r, VT_DISPUTE_FOUND, VT_VERDICT_NONE, "step %lld: the trainer's state before it could not be rebuilt on this machine (%s): no verdict",
                    (long long)q, vt_last_error());
    else
        vt__dreport(r, VT_DISPUTE_FOUND, VT_VERDICT_TRAINER_WRONG, "step %lld: the trainer cannot produce its state before it from its own files (%s): the trainer loses",
                    (long long)q, vt_last_error());
    return 0;
}

/* a party's log chunk of step q into *chunk; 0 when it cannot produce it
   (why says so), with *own set when that is this machine's memory */
static int vt__dispute_chunk(const char *dir, int64_t q, unsigned char **chunk, size_t *len, int *own, char *why, size_t whylen) {
    vt_status st = vt_transcript_chunk(dir, q, chunk, len);
    *own = st == VT_ERR_NOMEM;
    if (st == VT_OK) return 1;
    snprintf(why, whylen, "%.500s", vt_last_error());
    return 0;
}

VTDEF vt_status vt_dispute_transcripts(const vt_desc *d, const vt_program *p, const char *a, const char *b, vt_dispute_report *r) {
    vt_leaf_info *la = NULL, *lb = NULL, tleaf, agreed;
    int64_t na = 0, nb = 0, lo, hi, q, s;
    unsigned char ra[32], pa[32], pb[32], *chunk = NULL, *achunk = NULL;
    size_t clen = 0, alen = 0;
    vt_dispute g;
    vt_desc jd = *d;
    char tdir[700], state[760], other[760], why[900], before[300], cw[600];
    double t0;
    int own, no_fault = 0;
    void (*on_round)(const struct vt_dispute *, int64_t, int64_t, void *) = r->on_round;
    void *user = r->user;
    memset(r, 0, sizeof *r);
    r->on_round = on_round;
    r->user = user;
    memset(ra, 0, sizeof ra);
    r->step = -1;
    r->verdict = VT_VERDICT_NONE;
    tdir[0] = 0;
    before[0] = 0;
    /* each party's files must agree with themselves: the trainer answers
       for the root it published, the auditor challenges with its own */
    if (vt_transcript_check(a, &na) != VT_OK)
        return vt__dreport(r, VT_DISPUTE_TRAINER_LOSES, VT_VERDICT_TRAINER_WRONG,
                           "the trainer's transcript does not back its own root (%s): it cannot answer for it: the trainer loses", vt_last_error());
    if (vt_transcript_check(b, &nb) != VT_OK)
        return vt__dreport(r, VT_DISPUTE_AUDITOR_LOSES, VT_VERDICT_AUDITOR_WRONG,
                           "the auditor's transcript does not back its own root (%s): its challenge is malformed: the auditor loses", vt_last_error());
    r->nsteps = na;
    if (vt_manifest_program_sha(a, pa) != VT_OK || vt_manifest_program_sha(b, pb) != VT_OK || memcmp(pa, pb, 32))
        return vt__dreport(r, VT_DISPUTE_INVALID, VT_VERDICT_NONE, "the two manifests describe different programs: no game, no verdict");
    if (na != nb)
        return vt__dreport(r, VT_DISPUTE_INVALID, VT_VERDICT_NONE, "the transcripts commit %lld and %lld steps: no game, no verdict", (long long)na,
                           (long long)nb);
    /* the judge runs the trainer's program with the trainer's settings; a
       step can be judged only where the log pins it (the same program: the
       auditor's mode is the same) */
    if (vt_transcript_settings(a, &jd) != VT_OK)
        return vt__dreport(r, VT_DISPUTE_TRAINER_LOSES, VT_VERDICT_TRAINER_WRONG, "the trainer's manifest is unusable (%s): the trainer loses",
                           vt_last_error());
    if (jd.mode != VT_MODE_VERIFIED)
        return vt__dreport(r, VT_DISPUTE_INVALID, VT_VERDICT_NONE,
                           "the transcripts were trained in mode %s: only verified transcripts can be judged (without a rounding log two "
                           "honest machines or orders compute different steps, so a re-execution proves nothing): no game, no verdict",
                           vt_mode_name(jd.mode));
    if (vt_transcript_leaves(a, &la, &na) != VT_OK || vt_transcript_leaves(b, &lb, &nb) != VT_OK || vt_transcript_root(a, ra, NULL, NULL) != VT_OK) {
        vt_free_leaves(la);
        snprintf(why, sizeof why, "%.580s", vt_last_error()); /* (vt__tls_fail writes the buffer vt_last_error reads) */
        return vt__tls_fail(VT_ERR_IO, "dispute: reading the transcripts again failed: %s", why);
    }
    /* the game; each answer crosses as bytes, as it would between machines */
    if (vt_dispute_begin(&g, lb, nb, ra) == VT_OK) {
        while (vt_dispute_query(&g, &lo, &hi)) {
            vt_claim c;
            unsigned char msg[VT_CLAIM_BYTES];
            if (vt_dispute_answer(la, na, lo, hi, &c) != VT_OK) { vt_dispute_forfeit(&g, vt_last_error()); break; }
            vt_claim_encode(&c, msg);
            vt_dispute_receive_bytes(&g, msg, sizeof msg);
            if (on_round) on_round(&g, lo, hi, user);
        }
    }
    r->rounds = g.rounds;
    if (g.outcome != VT_DISPUTE_FOUND) {
        vt_free_leaves(la);
        vt_free_leaves(lb);
        return vt__dreport(r, g.outcome, g.outcome == VT_DISPUTE_TRAINER_LOSES ? VT_VERDICT_TRAINER_WRONG : VT_VERDICT_NONE, "%s", g.message);
    }
    q = g.result;
    /* CHUNK-ONLY DIFFERENCES. Two honest runs of one program in two orders
       may log different entries at a step and hold the same weights (an
       entry is logged where a run's own interval straddles a rounding
       boundary; the other run's may not): their leaves differ in the chunk
       hash alone. Such a step is nobody's fault, and a poisoning after it
       must still be found, so the judge goes to the first step s >= q
       whose state or batch differ. Both transcripts are at hand here, and
       the trainer's leaves are the ones its root commits to (checked
       above); between machines the trainer would reveal leaf s with its
       audit path (vt_merkle_proof). The trainer's log up to s is still
       checked: its state before s is rebuilt by replaying it against its
       own commitments. When every state and batch agree, the judge looks
       at q itself: there both chunks must replay to their own leaves. */
    for (s = q; s < na && !memcmp(la[s].state, lb[s].state, 32) && !memcmp(la[s].batch, lb[s].batch, 32); s++) {}
    if (s > q && s < na)
        snprintf(before, sizeof before, "the leaves of steps %lld..%lld differ at most in their log chunks (the same states and batches: no fault); ", (long long)q,
                 (long long)(s - 1));
    if (s == na) s = q;
    r->step = s;
    tleaf = s == q ? g.disputed_trainer : la[s];
    if (s > 0) agreed = s == q ? g.agreed : la[s - 1];
    if (!vt__tmp_dir(tdir, sizeof tdir)) {
        vt__dreport(r, VT_DISPUTE_FOUND, VT_VERDICT_NONE, "%sstep %lld: %s: no verdict", before, (long long)s, vt_last_error());
        tdir[0] = 0;
        goto out;
    }
    vt__tmp_file(state, sizeof state, tdir, "trainer-state");
    vt__tmp_file(other, sizeof other, tdir, "auditor-state");
    if (s > 0 && !vt__dispute_state(&jd, p, a, b, s, state, other, r)) {
        snprintf(why, sizeof why, "%.890s", r->message);
        vt__dreport(r, r->outcome, r->verdict, "%s%s", before, why);
        goto out;
    }
    if (!vt__dispute_chunk(a, s, &chunk, &clen, &own, cw, sizeof cw)) {
        vt__dreport(r, VT_DISPUTE_FOUND, own ? VT_VERDICT_NONE : VT_VERDICT_TRAINER_WRONG, "%sstep %lld: the trainer cannot produce its log chunk (%s): %s",
                    before, (long long)s, cw, own ? "no verdict" : "the trainer loses");
        goto out;
    }
    if (!vt__dispute_chunk(b, s, &achunk, &alen, &own, cw, sizeof cw)) {
        if (own) {
            vt__dreport(r, VT_DISPUTE_FOUND, VT_VERDICT_NONE, "%sstep %lld: the auditor's log chunk could not be read here (%s): no verdict", before,
                        (long long)s, cw);
            goto out;
        }
        achunk = NULL; /* the auditor cannot back its leaf: the judge rules on the trainer's chunk alone */
    }
    t0 = vt__now();
    r->verdict = vt__judge(&jd, p, s > 0 ? &agreed : NULL, s > 0 ? state : NULL, chunk, clen, &tleaf, achunk, alen, &lb[s], &no_fault, why,
                           sizeof why);
    r->judge_seconds = vt__now() - t0;
    if (!achunk && r->verdict == VT_VERDICT_AUDITOR_WRONG) {
        size_t k = strlen(why);
        snprintf(why + k, sizeof why - k, "; the auditor cannot produce its own log chunk (%.200s)", cw);
    }
    vt__dreport(r, no_fault ? VT_DISPUTE_NO_FAULT : VT_DISPUTE_FOUND, r->verdict, "first differing step %lld after %d rounds; %sthe judge: %s",
                (long long)q, g.rounds, before, why);
out:
    if (tdir[0]) vt__tmp_dir_remove(tdir);
    VT_FREE(chunk, NULL);
    VT_FREE(achunk, NULL);
    vt_free_leaves(la);
    vt_free_leaves(lb);
    return VT_OK;
}

/* ==========================================================================
   >>step
   ========================================================================== */

VTDEF vt_status vt_step_begin(vt_ctx *c) {
    if (c->status != VT_OK) return c->status;
    if (c->in_step) return vt__fail(c, VT_ERR_STATE, "vt_step_begin: step %lld has not ended", (long long)c->step_no);
    vt__reset_life(c, 1);
    c->ntape = 0;
    c->grad_enabled = 1;
    vt_zero_grad(c);
    c->point = 0;
    c->chunk.n = 0;
    c->cbody.n = 0;
    c->shape_cur.n = 0;
    c->chunk_points = c->chunk_entries = 0;
    vt_sha256_init(&c->batch);
    c->batch_used = 0;
    c->sh.next = c->sh.lo;
    c->sh.summed = 0;
    c->sh.cur = -1;
    c->sh.mine.n = 0;
    c->in_step = 1;
    if (c->d.mode == VT_MODE_VERIFIED && c->d.role == VT_ROLE_AUDIT) {
        if (c->d.log_memory) vt__chunk_take_fed(c);
        else vt__chunk_read(c);
    }
    return c->status;
}

VTDEF vt_status vt_step_end(vt_ctx *c) {
    if (!c->in_step) return vt__fail(c, VT_ERR_STATE, "vt_step_end: no step is open");
    c->in_step = 0;
    c->sh.cur = -1;
    if (c->status != VT_OK) return c->status;
    if ((c->sh.S > 1 || c->sh.next != c->sh.lo) && !c->sh.summed)
        return vt__fail(c, VT_ERR_STATE, "step %lld ended without vt_shards_sum: the program has %d shards (vt_desc.shards), "
                        "each step runs them (vt_shard_begin, vt_shard_end) and sums them", (long long)c->step_no, c->sh.S);
    if (c->d.mode == VT_MODE_VERIFIED && c->d.role == VT_ROLE_AUDIT && c->rd.pos != c->rd.chunk.n)
        return vt__fail(c, VT_ERR_DESYNC, "log desync at step %lld: the replay ended the step after %lld points, the log has more records",
                        (long long)c->step_no, (long long)c->point);
    if (c->d.mode == VT_MODE_VERIFIED && c->d.role == VT_ROLE_TRAIN && (c->logf || c->d.log_memory)) vt__chunk_write(c);
    if (c->status == VT_OK && c->commitf) vt__commit_step(c);
    if (c->status != VT_OK) return c->status;
    c->stats.steps++;
    c->step_no++;
    return vt__transcript_step(c);
}

/* --- shards ----------------------------------------------------------------

   A sharded program's step (vt_program.shard): shard k = 0 .. S-1, each a
   forward and backward over its part of the batch, then the cross-shard
   sum, then update. What makes every layout give the same bits:

   * A shard starts from zero gradients and ends in its own rounding
     points: its gradient is one binary32 tensor per parameter, the same
     wherever it runs, and its rounding decisions are its log records, taken
     where it runs. Between shards the step arena is rewound (a shard's
     activations are dead after its backward): S shards need the memory of
     one.
   * A shard's CONTRIBUTION is packed by vt__shard_end: its gradient, its
     log records (cut out of the chunk being built), its batch commitment
     bytes and its loss. After the exchange (a companion's, across
     processes; none in one process) vt__shards_combine appends every
     shard's records and batch bytes in shard order, then the update's
     follow: the step's chunk and batch digest are the same bytes whichever
     process computed which shard. Rank 0 of an MPI job writes them.
   * THE CROSS-SHARD SUM is a rounding point that every machine resolves
     alike, as a correctly rounded product is (>>rounding): element j of the
     step's gradient is RNE32 of the exact sum g_0[j] + ... + g_{S-1}[j].
     Its bound: the binary64 sum x of S exact terms (binary32 values are
     binary64 values) in any order takes S - 1 roundings, so
     |x - exact| <= gamma(S - 1) sum_k |g_k[j]|, gamma(n) = n u / (1 - n u),
     u = 2^-53; we use gamma(S) sum |g_k| (the sum of magnitudes is itself
     rounded; the sound gamma in every bound mode: here the bound decides
     what is computed exactly, not what is logged). Where RNE32 is constant
     on [x - w, x + w], w = vt__widen(x, e), the value is RNE32(x); elsewhere
     the S terms are summed exactly (vt__xacc: integer arithmetic; every
     binary32 value is a multiple of 2^-149 below 2^128) and rounded once.
     The order in which ranks or threads add is free, nothing is logged, no
     trainer has a choice. Cost: 2S additions and two roundings per
     gradient element, and the exact sums of the few the bound cannot
     decide (bench/RESULTS.md). An infinite term: the sum is that infinity
     in every order, or NaN with both signs, which is an error naming the
     parameter. S = 1: the shard's gradient itself.
   * Native mode shows what a plain data-parallel trainer does instead: each
     process adds its own shards in binary32 one after another, then the
     processes' partial sums are added pairwise, as a recursive-doubling
     all-reduce does: its bits depend on the layout.
   FP64 mode ships binary64 gradients and adds them in shard order.

   contribution = "VTSH" u32 shard u32 group u32 nparams u64 step u64 nvals
                  u32 width(4|8) u32 points u32 entries u64 full_len
                  u64 shape_len u64 short_len u64 batch_len f64 loss,
                  nparams bytes touched (0: the shard left that gradient at
                  zero), nvals values (binary32 or binary64 bits, parameter
                  order), the full records, their headers, the short
                  records, the batch bytes (little-endian). A companion moves
                  these bytes; vt__shards_combine checks every field. */
#define VT__SH_HDR 84

static int64_t vt__grad_values(const vt_ctx *c) {
    int64_t n = 0;
    int i;
    for (i = 0; i < c->nparams; i++) n += vt_numel(c->params[i]);
    return n;
}

static void vt__shard_begin(vt_ctx *c, int k) {
    vt_zero_grad(c);
    c->sh.cur = k;
    c->sh.batch.n = 0;
    c->sh.c0 = c->chunk.n; c->sh.s0 = c->shape_cur.n; c->sh.b0 = c->cbody.n;
    c->sh.p0 = c->chunk_points; c->sh.e0 = c->chunk_entries;
    c->last_loss = 0;
}

static void vt__shard_end(vt_ctx *c, int k) {
    vt__buf *b = &c->sh.mine;
    unsigned char h[VT__SH_HDR], t[8];
    int i, width = c->d.mode == VT_MODE_FP64 ? 8 : 4, cut = c->d.role == VT_ROLE_TRAIN;
    size_t lf = cut ? c->chunk.n - c->sh.c0 : 0, ls = cut ? c->shape_cur.n - c->sh.s0 : 0, lb = cut ? c->cbody.n - c->sh.b0 : 0;
    uint64_t u;
    memcpy(h, "VTSH", 4);
    vt__put_u32(h + 4, (uint32_t)k);
    vt__put_u32(h + 8, (uint32_t)c->sh.group);
    vt__put_u32(h + 12, (uint32_t)c->nparams);
    vt__put_u64(h + 16, (uint64_t)c->step_no);
    vt__put_u64(h + 24, (uint64_t)vt__grad_values(c));
    vt__put_u32(h + 32, (uint32_t)width);
    vt__put_u32(h + 36, (uint32_t)(cut ? c->chunk_points - c->sh.p0 : 0));
    vt__put_u32(h + 40, (uint32_t)(cut ? c->chunk_entries - c->sh.e0 : 0));
    vt__put_u64(h + 44, lf);
    vt__put_u64(h + 52, ls);
    vt__put_u64(h + 60, lb);
    vt__put_u64(h + 68, c->sh.batch.n);
    memcpy(&u, &c->last_loss, 8);
    vt__put_u64(h + 76, u);
    vt__buf_put(c, b, h, VT__SH_HDR);
    for (i = 0; i < c->nparams; i++) { t[0] = (unsigned char)!c->params[i]->grad_fresh; vt__buf_put(c, b, t, 1); }
    for (i = 0; i < c->nparams && c->status == VT_OK; i++) {
        vt_tensor *g = c->params[i]->grad;
        int64_t j, n = vt_numel(g);
        const double *d = c->params[i]->grad_fresh ? NULL : vt__h(c, g);
        size_t at = b->n;
        if (!vt__buf_reserve(c, b, (size_t)n * (size_t)width)) return;
        if (width == 4 && d && vt__host_le()) /* the wire bytes are the values' own (vectorises) */
            for (j = 0; j < n; j++) { float f = (float)d[j]; memcpy(b->p + at + 4 * (size_t)j, &f, 4); }
        else
            for (j = 0; j < n; j++) {
                if (width == 8) { double v = d ? d[j] : 0; memcpy(&u, &v, 8); vt__put_u64(b->p + at + 8 * (size_t)j, u); }
                else vt__put_u32(b->p + at + 4 * (size_t)j, vt__fbits(d ? (float)d[j] : 0.0f));
            }
        b->n = at + (size_t)n * (size_t)width;
    }
    vt__buf_put(c, b, c->chunk.p + c->sh.c0, lf);
    vt__buf_put(c, b, c->shape_cur.p + c->sh.s0, ls);
    vt__buf_put(c, b, c->cbody.p + c->sh.b0, lb);
    vt__buf_put(c, b, c->sh.batch.p, c->sh.batch.n);
    if (cut) { /* the records go back in shard order, from every process's contributions */
        c->chunk.n = c->sh.c0; c->shape_cur.n = c->sh.s0; c->cbody.n = c->sh.b0;
        c->chunk_points = c->sh.p0; c->chunk_entries = c->sh.e0;
    }
}

typedef struct vt__shc { /* one contribution, parsed */
    int group;
    uint32_t points, entries;
    const unsigned char *touched, *vals, *full, *shape, *shortb, *batch;
    uint64_t lf, ls, lb, lbatch;
    double loss;
} vt__shc;

/* every field of the S contributions in c->sh.all, checked, into sc[shard] */
static vt_status vt__shards_parse(vt_ctx *c, vt__shc *sc) {
    const unsigned char *p = c->sh.all.p;
    size_t n = c->sh.all.n, at = 0;
    int S = c->sh.S, k, got = 0, width = c->d.mode == VT_MODE_FP64 ? 8 : 4;
    uint64_t nv = (uint64_t)vt__grad_values(c);
    for (k = 0; k < S; k++) sc[k].touched = NULL;
    while (at < n) {
        const unsigned char *h = p + at;
        uint64_t rest = n - at - VT__SH_HDR, need, u;
        uint32_t shard;
        vt__shc *z;
        if (n - at < VT__SH_HDR || memcmp(h, "VTSH", 4))
            return vt__fail(c, VT_ERR_FORMAT, "step %lld: shard contribution at byte %zu of %zu is not one (magic or length)", (long long)c->step_no, at, n);
        shard = vt__get_u32(h + 4);
        if (shard >= (uint32_t)S) return vt__fail(c, VT_ERR_FORMAT, "step %lld: a contribution for shard %u, the program has %d", (long long)c->step_no, shard, S);
        z = &sc[shard];
        if (z->touched) return vt__fail(c, VT_ERR_FORMAT, "step %lld: two contributions for shard %u", (long long)c->step_no, shard);
        if (vt__get_u64(h + 16) != (uint64_t)c->step_no || vt__get_u32(h + 12) != (uint32_t)c->nparams || vt__get_u64(h + 24) != nv ||
            vt__get_u32(h + 32) != (uint32_t)width)
            return vt__fail(c, VT_ERR_FORMAT, "step %lld: shard %u's contribution is for step %llu with %u parameters, %llu values of %u bytes; "
                            "this process is at step %lld with %d, %llu of %d (another program or version?)",
                            (long long)c->step_no, shard, (unsigned long long)vt__get_u64(h + 16), vt__get_u32(h + 12),
                            (unsigned long long)vt__get_u64(h + 24), vt__get_u32(h + 32), (long long)c->step_no, c->nparams,
                            (unsigned long long)nv, width);
        z->group = (int)vt__get_u32(h + 8);
        z->points = vt__get_u32(h + 36); z->entries = vt__get_u32(h + 40);
        z->lf = vt__get_u64(h + 44); z->ls = vt__get_u64(h + 52); z->lb = vt__get_u64(h + 60); z->lbatch = vt__get_u64(h + 68);
        u = vt__get_u64(h + 76); memcpy(&z->loss, &u, 8);
        need = (uint64_t)c->nparams;
        if (nv > (rest - VT__MIN(rest, need)) / (uint64_t)width) need = UINT64_MAX;
        else need += nv * (uint64_t)width;
        if (need > rest || z->lf > rest - need || z->ls > rest - need - z->lf || z->lb > rest - need - z->lf - z->ls ||
            z->lbatch > rest - need - z->lf - z->ls - z->lb)
            return vt__fail(c, VT_ERR_TRUNCATED, "step %lld: shard %u's contribution is truncated (%llu bytes after its header)",
                            (long long)c->step_no, shard, (unsigned long long)rest);
        z->touched = h + VT__SH_HDR;
        z->vals = z->touched + c->nparams;
        z->full = z->vals + nv * (uint64_t)width;
        z->shape = z->full + z->lf; z->shortb = z->shape + z->ls; z->batch = z->shortb + z->lb;
        at = (size_t)(z->batch + z->lbatch - p);
        got++;
    }
    for (k = 0; k < S; k++)
        if (!sc[k].touched) return vt__fail(c, VT_ERR_FORMAT, "step %lld: no contribution for shard %d (of %d)", (long long)c->step_no, k, S);
    (void)got;
    return VT_OK;
}

static double vt__sh_get(const unsigned char *v, int width, int64_t j) {
    if (width == 8) { uint64_t u = vt__get_u64(v + 8 * j); double d; memcpy(&d, &u, 8); return d; }
    if (vt__host_le()) { float f; memcpy(&f, v + 4 * j, 4); return (double)f; } /* the wire bytes are the value */
    return (double)vt__bitsf(vt__get_u32(v + 4 * j));
}

/* element j's cross-shard sum by the rule above; *exact counts exact sums */
static double vt__sh_sum(const vt__shc *sc, int S, int64_t j, int64_t *exact, int *nan) {
    double x = -0.0, a = 0, e, w, t; /* -0 + t is t for every t: a sum of -0 terms stays -0 */
    int k, inexact = 0;
    for (k = 0; k < S; k++) { /* Knuth's TwoSum: err is exactly what s lost */
        double s, bb, err;
        t = vt__sh_get(sc[k].vals, 4, j);
        s = x + t;
        bb = s - x;
        err = (x - (s - bb)) + (t - bb);
        inexact |= err != 0;
        x = s;
        a += fabs(t);
    }
    if (S == 1) return x;
    if (x != x) { *nan = 1; return x; }
    if (!isfinite(a)) return x; /* an infinity: every order gives it */
    if (!inexact) return (double)(float)x; /* x is the exact sum (the common case: terms of nearby magnitudes) */
    e = (double)S * 0x1p-53 / (1 - (double)S * 0x1p-53) * a;
    w = vt__widen(x, e);
    if (vt__key((float)(x - w)) != vt__key((float)(x + w))) {
        vt__xacc z;
        vt__xacc_init(&z);
        for (k = 0; k < S; k++) vt__xacc_add(&z, vt__sh_get(sc[k].vals, 4, j));
        (*exact)++;
        return vt__xacc_round32(&z);
    }
    return (double)(float)x;
}

/* native mode: binary32 partial sums per process, then pairwise over processes */
static double vt__sh_native(const vt__shc *sc, int S, int64_t j, float *part) {
    int k, g = -1, G, st;
    for (k = 0; k < S; k++) {
        float t = (float)vt__sh_get(sc[k].vals, 4, j);
        if (k == 0 || sc[k].group != sc[k - 1].group) part[++g] = t;
        else part[g] = part[g] + t;
    }
    G = g + 1;
    for (st = 1; st < G; st *= 2)
        for (k = 0; k + st < G; k += 2 * st) part[k] = part[k] + part[k + st];
    return (double)part[0];
}

/* one parameter's sums, in blocks of 4096 values that threads claim */
typedef struct vt__shjob {
    const vt__shc *sc;
    int S, how;          /* how: 0 the exact rule, 1 native, 2 binary64 (FP64 mode) */
    int64_t off, n;      /* the parameter's first value in the contributions; its count */
    double *g;
    int64_t *exact, *nan; /* per thread: exact sums; the first NaN's element (-1: none) */
    void *u;              /* the context's allocator argument */
} vt__shjob;

static void vt__sh_task(void *arg, int64_t lo, int64_t hi, int tid) {
    vt__shjob *j = (vt__shjob *)arg;
    float part[64];
    int64_t i, i0 = lo * 4096, i1 = VT__MIN(hi * 4096, j->n), ex = 0;
    int k, nan = 0, t = tid;
    float *pp = j->S <= 64 ? part : (float *)VT_MALLOC(sizeof(float) * (size_t)j->S, j->u);
    if (!pp) { vt__first(&j->nan[t], i0); return; } /* (only native with more than 64 shards: reported as this element) */
    for (i = i0; i < i1; i++) {
        double *g = j->g + i;
        if (j->how == 2) {
            double x = 0;
            for (k = 0; k < j->S; k++) x += vt__sh_get(j->sc[k].vals, 8, j->off + i);
            *g = x;
        } else if (j->how == 1) *g = vt__sh_native(j->sc, j->S, j->off + i, pp);
        else {
            *g = vt__sh_sum(j->sc, j->S, j->off + i, &ex, &nan);
            if (nan) vt__first(&j->nan[t], i);
            nan = 0;
        }
    }
    j->exact[t] += ex;
    if (pp != part) VT_FREE(pp, j->u);
}

static vt_status vt__shards_combine(vt_ctx *c) {
    int S = c->sh.S, k, i, width = c->d.mode == VT_MODE_FP64 ? 8 : 4;
    int recs = c->d.role == VT_ROLE_TRAIN;
    vt__shc *sc = (vt__shc *)vt__xmalloc(c, sizeof(vt__shc) * (size_t)S + 2 * sizeof(int64_t) * (size_t)c->pool.n);
    int64_t off = 0, exact = 0, *tcount = (int64_t *)(sc + S);
    double loss = 0;
    if (!sc) return c->status;
    if (vt__shards_parse(c, sc) != VT_OK) { VT_FREE(sc, c->u); return c->status; }
    for (k = 0; k < S; k++) {
        const vt__shc *z = &sc[k];
        if (recs) {
            vt__buf_put(c, &c->chunk, z->full, (size_t)z->lf);
            vt__buf_put(c, &c->shape_cur, z->shape, (size_t)z->ls);
            vt__buf_put(c, &c->cbody, z->shortb, (size_t)z->lb);
            c->chunk_points += z->points;
            c->chunk_entries += z->entries;
        } else if (z->lf || z->ls || z->lb) {
            vt__fail(c, VT_ERR_FORMAT, "step %lld: shard %d's contribution carries log records, this process replays", (long long)c->step_no, k);
            break;
        }
        vt_sha256_update(&c->batch, z->batch, (size_t)z->lbatch);
        loss += z->loss;
    }
    for (i = 0; i < c->nparams && c->status == VT_OK; i++) {
        vt_tensor *pt = c->params[i];
        int64_t n = vt_numel(pt), any = 0;
        vt__shjob job;
        for (k = 0; k < S; k++) any |= sc[k].touched[i];
        if (!any) { pt->grad_fresh = 1; off += n; continue; } /* no shard gave it a gradient: still logically 0 */
        job.sc = sc; job.S = S; job.off = off; job.n = n; job.g = vt__hw(c, pt->grad); job.u = c->u;
        job.how = width == 8 ? 2 : c->d.mode == VT_MODE_NATIVE;
        job.exact = tcount; job.nan = tcount + c->pool.n;
        for (k = 0; k < c->pool.n; k++) { job.exact[k] = 0; job.nan[k] = -1; }
        vt__parallel(&c->pool, (n + 4095) / 4096, n * S, vt__sh_task, &job);
        for (k = 1; k < c->pool.n; k++)
            if (job.nan[k] >= 0) vt__first(&job.nan[0], job.nan[k]);
        for (k = 0; k < c->pool.n; k++) exact += job.exact[k];
        if (job.nan[0] >= 0)
            vt__fail(c, VT_ERR_NONFINITE, "non-finite value (NaN) at step %lld, the cross-shard sum of '%s', element %lld: "
                     "the shards' gradients hold both infinities", (long long)c->step_no, pt->name, (long long)job.nan[0]);
        pt->grad_fresh = 0;
        off += n;
    }
    c->stats.shard_values += off;
    c->stats.shard_exact += exact;
    c->last_loss = loss;
    VT_FREE(sc, c->u);
    return c->status;
}

static VT__UNUSED void vt__shards_attach(vt_ctx *c, int lo, int hi, int group, int records, vt_status (*exchange)(vt_ctx *c, void *user), void *user) {
    c->sh.lo = lo; c->sh.hi = hi; c->sh.group = group; c->sh.records = records;
    c->sh.exchange = exchange; c->sh.user = user;
}
static VT__UNUSED void vt__shards_mine(const vt_ctx *c, const unsigned char **p, size_t *n) { *p = c->sh.mine.p; *n = c->sh.mine.n; }
static VT__UNUSED int vt__shards_put(vt_ctx *c, const unsigned char *p, size_t n) { return vt__buf_put(c, &c->sh.all, p, n); }

VTDEF int vt_shard_count(const vt_ctx *c) { return c->sh.S; }

VTDEF int vt_shard_begin(vt_ctx *c, int k) {
    if (c->status != VT_OK) return 0;
    if (!c->in_step) { vt__fail(c, VT_ERR_STATE, "vt_shard_begin(%d): outside a step", k); return 0; }
    if (k < 0 || k >= c->sh.S) { vt__fail(c, VT_ERR_ARG, "vt_shard_begin(%d): the program has shards 0..%d (vt_desc.shards)", k, c->sh.S - 1); return 0; }
    if (c->sh.cur >= 0) { vt__fail(c, VT_ERR_STATE, "vt_shard_begin(%d): shard %d has not ended", k, c->sh.cur); return 0; }
    if (c->sh.summed) { vt__fail(c, VT_ERR_STATE, "vt_shard_begin(%d): the step's shards were summed already", k); return 0; }
    if (k < c->sh.lo || k >= c->sh.hi) return 0; /* another process computes it */
    if (k != c->sh.next) { vt__fail(c, VT_ERR_STATE, "vt_shard_begin(%d): shards run in order, once each: shard %d comes next", k, c->sh.next); return 0; }
    if (k == c->sh.lo) { vt__arena_mark(&c->step, &c->sh.mark); c->sh.mtape = c->ntape; }
    else { /* the last shard's activations are dead; what the step made before its first shard lives on */
        vt__arena_rewind(&c->step, &c->sh.mark);
        c->ntape = c->sh.mtape;
    }
    vt__shard_begin(c, k);
    return 1;
}

VTDEF vt_status vt_shard_end(vt_ctx *c) {
    int k = c->sh.cur;
    double t0 = vt__now();
    if (k < 0) return vt__fail(c, VT_ERR_STATE, "vt_shard_end: no shard is open");
    if (c->status == VT_OK) vt__shard_end(c, k);
    c->stats.shard_seconds += vt__now() - t0;
    c->sh.cur = -1;
    c->sh.next = k + 1;
    return c->status;
}

VTDEF vt_status vt_shards_sum(vt_ctx *c) {
    double t0 = vt__now();
    if (!c->in_step) return vt__fail(c, VT_ERR_STATE, "vt_shards_sum: outside a step");
    if (c->sh.cur >= 0) vt__fail(c, VT_ERR_STATE, "vt_shards_sum: shard %d has not ended", c->sh.cur);
    else if (c->sh.summed) vt__fail(c, VT_ERR_STATE, "vt_shards_sum: called twice in step %lld", (long long)c->step_no);
    else if (c->sh.next != c->sh.hi)
        vt__fail(c, VT_ERR_STATE, "vt_shards_sum: step %lld ran shards %d..%d of this context's %d..%d (vt_shard_begin for every shard)",
                 (long long)c->step_no, c->sh.lo, c->sh.next - 1, c->sh.lo, c->sh.hi - 1);
    c->sh.summed = 1;
    c->sh.all.n = 0;
    /* the exchange runs even after a failure here: it tells the others */
    if (c->sh.exchange) c->sh.exchange(c, c->sh.user);
    else if (c->status == VT_OK) {
        vt__buf t = c->sh.all;
        c->sh.all = c->sh.mine;
        c->sh.mine = t;
    }
    if (c->status == VT_OK) vt__shards_combine(c);
    c->stats.shard_seconds += vt__now() - t0;
    return c->status;
}

/* ==========================================================================
   >>setup  contexts
   ========================================================================== */

VTDEF vt_desc vt_desc_default(void) {
    vt_desc d;
    memset(&d, 0, sizeof d);
    return d;
}

/* every number is checked whole and in range: "threads:-1" would wrap and
   "threads:100000" would start a hundred thousand pthreads */
VTDEF vt_status vt_order_parse(vt_order *o, const char *s) {
    const char *p = s;
    memset(o, 0, sizeof *o);
    if (!s) return VT_OK;
    while (*p) {
        char key[32];
        size_t n = 0;
        unsigned long long v = 0;
        int hasv = 0;
        while (*p == ',' || *p == ' ') p++;
        if (!*p) break;
        while (*p && *p != ':' && *p != ',' && n < sizeof key - 1) key[n++] = *p++;
        key[n] = 0;
        if (*p == ':') {
            char *end;
            p++;
            if (*p < '0' || *p > '9') return vt__tls_fail(VT_ERR_ARG, "order '%s': '%s' needs a number (digits only)", s, key);
            errno = 0;
            v = strtoull(p, &end, 10);
            if (errno == ERANGE) return vt__tls_fail(VT_ERR_ARG, "order '%s': the number of '%s' does not fit in 64 bits", s, key);
            p = end;
            hasv = 1;
        }
        if (!strcmp(key, "threads") && hasv) {
            if (v < 1 || v > VT_MAX_THREADS) return vt__tls_fail(VT_ERR_ARG, "order '%s': threads:%llu is outside 1..%d", s, v, VT_MAX_THREADS);
            o->threads = (int)v;
        } else if (!strcmp(key, "block") && hasv) {
            if (v < 1 || v > VT_MAX_BLOCK) return vt__tls_fail(VT_ERR_ARG, "order '%s': block:%llu is outside 1..%d", s, v, VT_MAX_BLOCK);
            o->block = (int)v;
        } else if (!strcmp(key, "chaos") && hasv) { o->chaos = 1; o->chaos_seed = v; }
        else if (!strcmp(key, "nofma") && !hasv) o->nofma = 1;
        else if (!strcmp(key, "default") && !hasv) { }
        else return vt__tls_fail(VT_ERR_ARG, "order '%s': unknown item '%s' (use threads:N, block:N, chaos:SEED, nofma)", s, key);
        if (*p && *p != ',') return vt__tls_fail(VT_ERR_ARG, "order '%s': expected ',' after '%s'", s, key);
    }
    return VT_OK;
}

VTDEF void vt_order_string(const vt_order *o, char *buf, size_t n) {
    size_t l;
    snprintf(buf, n, "threads:%d,block:%d", o->threads, o->block ? o->block : 256);
    l = strlen(buf);
    if (o->chaos) snprintf(buf + l, n - l, ",chaos:%llu", (unsigned long long)o->chaos_seed);
    l = strlen(buf);
    if (o->nofma) snprintf(buf + l, n - l, ",nofma");
}

static void vt__ord_from(vt__ord *r, const vt_order *o, const vt_desc *d) {
    memset(r, 0, sizeof *r);
    r->threads = o->threads;
    r->block = o->block > 0 ? o->block : 256;
    r->chaos = o->chaos;
    r->seed = vt__mix(o->chaos_seed + 0x636861u);
    r->fma = VT__HAVE_FAST_FMA && !o->nofma;
    r->f32 = d->mode == VT_MODE_NATIVE;
    r->bounds = d->mode == VT_MODE_VERIFIED;
    r->bmode = d->bound;
    r->lambda = d->lambda > 0 ? d->lambda : 12.0;
}

/* 1 if a*b+c is fused into an fma here: with a = 1+2^-30, b = 1-2^-30,
   c = -1 the product rounds to 1 and the sum is 0, but the fused result is
   -2^-60 */
static int vt__contracts(void) {
    volatile double v[3] = {1 + 0x1p-30, 1 - 0x1p-30, -1}, r;
    double a = v[0], b = v[1], c = v[2], x;
    uint64_t bx;
    r = a * b + c; /* stored, then compared as bits: no rewriting of the comparison (as vt__flushes_subnormals) */
    x = r;
    memcpy(&bx, &x, 8);
    return bx != 0;
}

/* 1 if this thread's floating-point unit flushes subnormal results to zero
   or reads subnormal inputs as zero (FTZ/DAZ, which a library or -ffast-math
   startup code may have switched on): vtrain's values would then differ from
   an IEEE machine's wherever a subnormal occurs. Every operand comes from
   memory the compiler cannot see into and the results are compared as bits:
   under -funsafe-math-optimizations gcc rewrote `a * 0.5 != 0x1p-1023` into
   a comparison of a alone, and the check passed on a machine that flushes */
static int vt__flushes_subnormals(void) {
    volatile double v[4] = {0x1p-1022, 0.5, 0x1p-1060, 2}, r[2];
    double x, y;
    uint64_t bx, by;
    r[0] = v[0] * v[1]; /* 2^-1023: a subnormal result (FTZ flushes it) */
    r[1] = v[2] * v[3]; /* from a subnormal input (DAZ reads it as 0) */
    x = r[0]; y = r[1];
    memcpy(&bx, &x, 8);
    memcpy(&by, &y, 8);
    return bx != 0x0008000000000000ull || by != 0x0000000000008000ull;
}

VTDEF vt_ctx *vt_create(const vt_desc *d) {
    vt_ctx *c;
    vt_desc dd = d ? *d : vt_desc_default();
    if (vt__contracts()) {
        vt__tls_fail(VT_ERR_BACKEND, "vt_create: this build fuses a*b+c into fma (floating-point contraction), which breaks "
                                     "bit-exact replay: compile the implementation with -ffp-contract=off");
        return NULL;
    }
    if (vt__flushes_subnormals()) {
        vt__tls_fail(VT_ERR_BACKEND, "vt_create: this thread flushes subnormal numbers to zero (FTZ/DAZ: -ffast-math, or a "
                                     "library that set the floating-point control word), which breaks bit-exact replay: "
                                     "build without -ffast-math and restore the default IEEE mode");
        return NULL;
    }
    if (dd.bound == VT_BOUND_PROBABILISTIC && dd.role == VT_ROLE_TRAIN && dd.transcript && !dd.allow_probabilistic) {
        vt__tls_fail(VT_ERR_ARG, "vt_create: probabilistic bounds in a transcript: they assume random rounding errors, and "
                                 "inputs chosen by an adversary make honest audits fail (see BOUND MODES in vtrain.h); set "
                                 "vt_desc.allow_probabilistic to write one anyway");
        return NULL;
    }
    if ((unsigned)dd.mode >= VT_MODE_COUNT || (unsigned)dd.bound >= VT_BOUND_COUNT) {
        vt__tls_fail(VT_ERR_ARG, "vt_create: unknown mode %d or bound mode %d", (int)dd.mode, (int)dd.bound);
        return NULL;
    }
    if (dd.order.threads < 0 || dd.order.threads > VT_MAX_THREADS || dd.order.block < 0 || dd.order.block > VT_MAX_BLOCK) {
        vt__tls_fail(VT_ERR_ARG, "vt_create: order.threads = %d (0: all cores, or 1..%d) or order.block = %d (0: 256, or 1..%d) is out of range",
                     dd.order.threads, VT_MAX_THREADS, dd.order.block, VT_MAX_BLOCK);
        return NULL;
    }
    if (!vt__backend_find(dd.backend)) {
        vt__tls_fail(VT_ERR_ARG, "vt_create: unknown backend %d", (int)dd.backend);
        return NULL;
    }
    if (!vt__backend_find(dd.backend)->attach) {
        vt__tls_fail(VT_ERR_BACKEND, "vt_create: %s", vt__backend_find(dd.backend)->absent);
        return NULL;
    }
    if (dd.role == VT_ROLE_AUDIT && !dd.log_path && !dd.log_memory && !dd.transcript) {
        vt__tls_fail(VT_ERR_ARG, "vt_create: an auditor needs the trainer's log (log_path, or log_memory and vt_feed_chunk)");
        return NULL;
    }
    if (dd.bound == VT_BOUND_CALIBRATED && dd.role == VT_ROLE_TRAIN && (!dd.calib || !dd.calib->count)) {
        vt__tls_fail(VT_ERR_ARG, "vt_create: calibrated bounds need a table (run vt_calibrate first)");
        return NULL;
    }
    if (dd.shards < 0 || dd.shards > VT_MAX_SHARDS) {
        vt__tls_fail(VT_ERR_ARG, "vt_create: shards = %d is outside 0..%d", dd.shards, VT_MAX_SHARDS);
        return NULL;
    }
    c = (vt_ctx *)VT_MALLOC(sizeof(vt_ctx), dd.alloc_user);
    if (!c) { vt__tls_fail(VT_ERR_NOMEM, "vt_create: out of memory"); return NULL; }
    memset(c, 0, sizeof *c);
    c->d = dd;
    c->sh.S = c->sh.hi = dd.shards > 1 ? dd.shards : 1;
    c->sh.cur = -1;
    c->man_shards = 1;
    c->rd.table = -1;
    c->u = dd.alloc_user;
    if (c->d.order.threads <= 0) c->d.order.threads = vt__ncpu();
    if (c->d.order.block <= 0) c->d.order.block = 256;
    vt__ord_from(&c->ord, &c->d.order, &c->d);
    c->step.user = c->u;
    c->scratch.user = c->u;
    c->wa = vt__pool_start(&c->pool, c->d.order.threads, c->u);
    c->tents = (vt__ents *)VT_MALLOC(sizeof(vt__ents) * (size_t)(2 * c->pool.n), c->u);
    if (!c->tents) { vt__tls_fail(VT_ERR_NOMEM, "vt_create: out of memory"); vt_destroy(c); return NULL; }
    memset(c->tents, 0, sizeof(vt__ents) * (size_t)(2 * c->pool.n));
    c->grad_enabled = 1;
    if (vt__backend_attach(c) != VT_OK) {
        snprintf(vt__tls_err, sizeof vt__tls_err, "%s", c->msg);
        vt__tls_status = c->status;
        vt_destroy(c);
        return NULL;
    }
    c->calib.margin = 0;
    if (dd.bound == VT_BOUND_CALIBRATED && dd.role == VT_ROLE_TRAIN) {
        c->calib.e = (vt_calib_entry *)VT_MALLOC(sizeof(vt_calib_entry) * (size_t)dd.calib->count, c->u);
        if (!c->calib.e) { vt__tls_fail(VT_ERR_NOMEM, "vt_create: out of memory"); vt_destroy(c); return NULL; }
        memcpy(c->calib.e, dd.calib->e, sizeof(vt_calib_entry) * (size_t)dd.calib->count);
        c->calib.count = c->calib.cap = dd.calib->count;
        c->calib.margin = dd.calib->margin;
    }
    if (dd.transcript) vt__transcript_open(c);
    if (c->d.log_path && c->status == VT_OK) {
        if (c->d.mode == VT_MODE_VERIFIED) {
            if (c->d.role == VT_ROLE_TRAIN) vt__log_open_write(c);
            else if (vt__log_open_read(c) == VT_OK) vt__log_header_check(c);
        }
        if (c->status == VT_OK) vt__commit_open(c);
    }
    if (c->status != VT_OK) {
        snprintf(vt__tls_err, sizeof vt__tls_err, "%s", c->msg);
        vt__tls_status = c->status;
        vt_destroy(c);
        return NULL;
    }
    return c;
}

VTDEF void vt_destroy(vt_ctx *c) {
    int i;
    if (!c) return;
    if (c->tdir[0] && c->d.role == VT_ROLE_TRAIN && c->commitf && c->root_ok) {
        fflush(c->commitf);
        vt__write_root(c); /* the run so far, even after an error in a step: nothing written is lost */
    }
    if (c->be && c->be->destroy) c->be->destroy(c);
    vt__pool_stop(&c->pool, c->wa, c->u);
    if (c->logf) fclose(c->logf);
    if (c->rd.f) fclose(c->rd.f);
    if (c->commitf) fclose(c->commitf);
    VT_FREE(c->rd.chunk.p, c->u);
    VT_FREE(c->chunk.p, c->u);
    VT_FREE(c->lastchunk.p, c->u);
    VT_FREE(c->cbody.p, c->u);
    VT_FREE(c->shape_cur.p, c->u);
    VT_FREE(c->shape_prev.p, c->u);
    VT_FREE(c->rd.shape.p, c->u);
    VT_FREE(c->fed.p, c->u);
    VT_FREE(c->sh.mine.p, c->u);
    VT_FREE(c->sh.all.p, c->u);
    VT_FREE(c->sh.batch.p, c->u);
    for (i = 0; c->tents && i < 2 * c->pool.n; i++) VT_FREE(c->tents[i].e, c->u);
    for (i = 0; i < VT_MAX_SRC; i++) VT_FREE(c->fents[i].e, c->u);
    VT_FREE(c->tents, c->u);
    VT_FREE(c->ents.e, c->u);
    VT_FREE(c->rents, c->u);
    VT_FREE(c->calib.e, c->u);
    for (i = 0; i < c->npers; i++) VT_FREE(c->pers[i], c->u);
    VT_FREE(c->pers, c->u);
    VT_FREE(c->params, c->u);
    VT_FREE(c->xstate, c->u);
    VT_FREE(c->tape, c->u);
    VT_FREE(c->optims, c->u);
    VT_FREE(c->cal_ord, c->u);
    VT_FREE(c->lzh, c->u);
    vt__arena_free(&c->step);
    vt__arena_free(&c->scratch);
    VT_FREE(c, c->u);
}

VTDEF void vt_eval_begin(vt_ctx *c) {
    if (c->in_step) { vt__fail(c, VT_ERR_STATE, "vt_eval_begin: inside a training step"); return; }
    vt__reset_life(c, 1);
    c->ntape = 0;
    c->grad_enabled = 0;
}
VTDEF void vt_eval_end(vt_ctx *c) { c->grad_enabled = 1; }

/* ==========================================================================
   >>run  driving a program as trainer or auditor
   ========================================================================== */

/* An auditor of a transcript, after its last step. Every step replayed
   was matched against its commitment on the way; here the transcript's
   files must agree with each other (vt_transcript_check: every field of
   root.txt against commits.bin and manifest.txt), whether or not the
   replay reached the last commitment. When it did, the log and the
   commitments must end exactly there: a byte after the last chunk or
   record is an error, as in a checkpoint. When it did not, the audit is
   partial: root_steps says how far the checked root reaches. */
static vt_status vt__audit_finish(vt_ctx *c, int64_t *root_steps) {
    int64_t n;
    *root_steps = 0;
    if (!c->tdir[0] || c->d.role != VT_ROLE_AUDIT || c->status != VT_OK) return c->status;
    if (vt_transcript_check(c->tdir, &n) != VT_OK) return vt__fail(c, vt_last_status(), "%s", vt_last_error());
    if (n == c->step_no) {
        if (c->rd.f) {
            long at = ftell(c->rd.f);
            if (at < 0 || (int64_t)at != c->rd.fsize)
                return vt__fail(c, VT_ERR_FORMAT, "'%s': %lld bytes after the chunk of the last step (%lld)", c->logpath,
                                (long long)(c->rd.fsize - (int64_t)at), (long long)(n - 1));
        }
    } else if (n < c->step_no)
        return vt__fail(c, VT_ERR_MISMATCH, "'%s/root.txt' covers %lld steps, the replay matched %lld commitments", c->tdir, (long long)n,
                        (long long)c->step_no);
    *root_steps = n;
    return VT_OK;
}

/* runs steps until the context has done nsteps in all (a resumed or
   checkpoint-started context continues from where it is) */
VTDEF vt_status vt_run_ctx(vt_ctx *c, const vt_program *p, int64_t nsteps, vt_report *r) {
    double t0 = vt__now();
    vt_report tmp;
    if (!r) r = &tmp;
    memset(r, 0, sizeof *r);
    r->first_bad_step = -1;
    while (c->step_no < nsteps && c->status == VT_OK) {
        if (vt_step_begin(c) == VT_OK) {
            vt_status st = p->step(c, c->step_no, p->user);
            if (st != VT_OK && c->status == VT_OK) vt__fail(c, st, "step %lld: the program's step function failed (%s)", (long long)c->step_no, vt_status_name(st));
            vt_step_end(c);
        }
        if (c->status != VT_OK) { r->first_bad_step = c->step_no; break; }
        r->steps++;
        if (p->on_step) p->on_step(c, c->step_no - 1, p->user);
    }
    if (c->status == VT_OK && c->step_no == nsteps) vt__audit_finish(c, &r->root_steps);
    r->status = c->status;
    r->last_loss = c->last_loss;
    r->log = c->stats;
    r->seconds = vt__now() - t0;
    if (c->status == VT_OK) vt_weights_digest(c, r->digest);
    snprintf(r->message, sizeof r->message, "%s", vt_error_message(c));
    return c->status;
}

VTDEF vt_status vt_run(const vt_desc *d, const vt_program *p, int64_t nsteps, vt_report *r) {
    vt_ctx *c = vt_create(d);
    vt_status st;
    vt_report tmp;
    if (!r) r = &tmp;
    if (!c) {
        memset(r, 0, sizeof *r);
        r->status = vt_last_status() != VT_OK ? vt_last_status() : VT_ERR_ARG;
        r->first_bad_step = -1;
        snprintf(r->message, sizeof r->message, "%s", vt_last_error());
        return r->status;
    }
    if (p->setup) {
        st = p->setup(c, p->user);
        if (st != VT_OK && c->status == VT_OK) vt__fail(c, st, "the program's setup failed (%s)", vt_status_name(st));
    }
    vt_resume(c);
    if (c->status != VT_OK) {
        memset(r, 0, sizeof *r);
        r->status = c->status;
        r->first_bad_step = -1;
        snprintf(r->message, sizeof r->message, "%s", c->msg);
        vt_destroy(c);
        return r->status;
    }
    st = vt_run_ctx(c, p, nsteps, r);
    vt_destroy(c);
    return st;
}

VTDEF int64_t vt_weights_compare(vt_ctx *a, vt_ctx *b, double *max_abs, int *first_param) {
    int i;
    int64_t nd = 0, k;
    double mx = 0;
    if (first_param) *first_param = -1;
    for (i = 0; i < vt__nstate(a) && i < vt__nstate(b); i++) {
        vt_tensor *x = vt__state(a, i), *y = vt__state(b, i);
        int64_t n = vt_numel(x);
        const double *dx, *dy;
        if (n != vt_numel(y)) { nd += n; continue; }
        dx = vt__h(a, x);
        dy = vt__h(b, y);
        for (k = 0; k < n; k++) {
            float fx = (float)dx[k], fy = (float)dy[k];
            if (vt__fbits(fx) != vt__fbits(fy)) {
                double d = fabs((double)fx - (double)fy);
                if (d > mx || d != d) mx = d;
                if (!nd && first_param) *first_param = i;
                nd++;
            }
        }
    }
    if (max_abs) *max_abs = mx;
    return nd;
}

/* ==========================================================================
   >>calibrate  measured bounds (VT_BOUND_CALIBRATED)

   At every rounding point of a sound, verified run the kernel is run again
   with each extra order on the same (binary32) inputs. For every element
   with a nonzero bound, ratio = |x_a - x_primary| / (2 e_primary); the table
   keeps per (point kind, size) the largest ratio, and factor = margin x
   ratio. A calibrated run then uses factor x (sound bound). The same pass
   checks the sound bounds themselves: |x_a - x_p| > e_a + e_p would mean a
   wrong derivation, and is counted as a violation.
   ========================================================================== */

static vt_calib_entry *vt__calib_slot(vt_ctx *c, vt_calib *t, int kind, int64_t n) {
    int i;
    for (i = 0; i < t->count; i++)
        if (t->e[i].kind == kind && t->e[i].n == n) return &t->e[i];
    if (t->count == t->cap) {
        int nc = t->cap * 2 + 16;
        vt_calib_entry *q = (vt_calib_entry *)VT_REALLOC(t->e, sizeof(vt_calib_entry) * (size_t)nc, NULL);
        if (!q) { vt__fail(c, VT_ERR_NOMEM, "calibration: out of memory"); return NULL; }
        t->e = q;
        t->cap = nc;
    }
    memset(&t->e[t->count], 0, sizeof(vt_calib_entry));
    t->e[t->count].kind = kind;
    t->e[t->count].n = n;
    return &t->e[t->count++];
}

static void vt__calibrate_node(vt_ctx *c, vt__kern *k) {
    double *old[VT_MAX_SRC];
    int i, a;
    for (i = 0; i < VT_MAX_SRC; i++) {
        old[i] = NULL;
        if (k->out[i].x && k->out[i].acc) {
            old[i] = (double *)vt__scratch(c, sizeof(double) * (size_t)k->out[i].n);
            if (!old[i]) return;
            memcpy(old[i], k->out[i].x, sizeof(double) * (size_t)k->out[i].n);
        }
    }
    c->be->kernel(k);
    for (a = 0; a < c->ncal && c->status == VT_OK; a++) {
        vt__kern k2 = *k;
        vt__ord o2 = c->cal_ord[a];
        o2.call = c->ord.call;
        k2.o = &o2;
        for (i = 0; i < VT_MAX_SRC; i++) {
            vt__kout *q = &k2.out[i];
            if (!q->x) continue;
            q->x = (double *)vt__scratch(c, sizeof(double) * (size_t)(q->n + 1));
            q->e = (double *)vt__scratch(c, sizeof(double) * (size_t)(q->n + 1));
            if (!q->x || !q->e) return;
            if (old[i]) memcpy(q->x, old[i], sizeof(double) * (size_t)q->n);
            memset(q->e, 0, sizeof(double) * (size_t)q->n);
        }
        c->be->kernel(&k2);
        for (i = 0; i < VT_MAX_SRC; i++) {
            const vt__kout *p = &k->out[i], *q = &k2.out[i];
            vt_calib_entry *ce;
            int64_t j;
            double mr = 0;
            int64_t viol = 0, cnt = 0;
            if (!p->x || p->exact) continue;
            for (j = 0; j < p->n; j++) {
                double ep = p->e ? p->e[j] : 0, eq = q->e ? q->e[j] : 0, d = fabs(q->x[j] - p->x[j]);
                if (!(ep > 0)) {
                    if (d != 0 && !(eq > 0)) viol++;
                    continue;
                }
                cnt++;
                if (d / (2 * ep) > mr) mr = d / (2 * ep);
                if (d > (ep + eq) * VT__SAFE) viol++;
            }
            ce = vt__calib_slot(c, c->cal_out, p->kind, p->n);
            if (!ce) return;
            if (mr > ce->max_ratio) ce->max_ratio = mr;
            ce->samples += cnt;
            ce->violations += viol;
            ce->factor = VT__MIN(1.0, c->cal_out->margin * ce->max_ratio); /* never above sound */
        }
    }
}

VTDEF vt_status vt_calibrate(const vt_desc *d, const vt_program *p, int64_t nsteps, const vt_order *orders, int n,
                             double margin, vt_calib *out) {
    vt_desc dd = *d;
    vt_ctx *c;
    vt_status st;
    int i;
    memset(out, 0, sizeof *out);
    out->margin = margin;
    if (n < 1) return vt__tls_fail(VT_ERR_ARG, "vt_calibrate: give at least one extra order");
    dd.mode = VT_MODE_VERIFIED;
    dd.bound = VT_BOUND_SOUND;
    dd.role = VT_ROLE_TRAIN;
    dd.log_path = NULL;
    dd.backend = VT_BACKEND_CPU; /* the orders are the CPU backend's */
    c = vt_create(&dd);
    if (!c) return VT_ERR_ARG;
    c->cal_ord = (vt__ord *)VT_MALLOC(sizeof(vt__ord) * (size_t)n, c->u);
    if (!c->cal_ord) { vt_destroy(c); return vt__tls_fail(VT_ERR_NOMEM, "vt_calibrate: out of memory"); }
    for (i = 0; i < n; i++) {
        vt_order o = orders[i];
        if (o.threads <= 0) o.threads = c->d.order.threads;
        if (o.block <= 0) o.block = 256;
        vt__ord_from(&c->cal_ord[i], &o, &c->d);
    }
    c->ncal = n;
    c->cal_out = out;
    st = p->setup ? p->setup(c, p->user) : VT_OK;
    if (st == VT_OK) st = vt_run_ctx(c, p, nsteps, NULL);
    if (st != VT_OK) vt__tls_fail(st, "vt_calibrate: %s", c->msg);
    vt_destroy(c);
    return st;
}

VTDEF void vt_calib_free(vt_calib *t) {
    if (!t) return;
    VT_FREE(t->e, NULL); /* tables are allocated with user pointer NULL */
    memset(t, 0, sizeof *t);
}

/* ==========================================================================
   >>models  an MLP, a GPT-2 and the CIFAR ResNets

   Parameters are created in a fixed order with names ("mlp.w0", "h.3.qkvw",
   ...), initialised from (seed, stream = creation index): the same values on
   every machine.
   ========================================================================== */

VTDEF vt_status vt_mlp_init(vt_ctx *c, vt_mlp *m, int nlayers, const int *sizes, int act, uint64_t seed) {
    int i;
    memset(m, 0, sizeof *m);
    if (nlayers < 1 || nlayers > 8) return vt__fail(c, VT_ERR_ARG, "vt_mlp_init: 1..8 layers, got %d", nlayers);
    for (i = 0; i <= nlayers; i++)
        if (sizes[i] < 1) return vt__fail(c, VT_ERR_ARG, "vt_mlp_init: sizes[%d] = %d, every layer needs at least one unit", i, sizes[i]);
    m->nlayers = nlayers;
    m->act = act;
    for (i = 0; i <= nlayers; i++) m->sizes[i] = sizes[i];
    for (i = 0; i < nlayers; i++) {
        int64_t wne[2], bne[1];
        char nm[32];
        wne[0] = sizes[i + 1]; wne[1] = sizes[i]; bne[0] = sizes[i + 1];
        snprintf(nm, sizeof nm, "mlp.w%d", i);
        m->w[i] = vt_param(c, nm, 2, wne);
        snprintf(nm, sizeof nm, "mlp.b%d", i);
        m->b[i] = vt_param(c, nm, 1, bne);
        /* Kaiming-normal for relu, LeCun-normal otherwise */
        vt_init_normal(c, m->w[i], seed, (uint64_t)(2 * i), sqrt((act == 0 ? 2.0 : 1.0) / sizes[i]));
        vt_init_const(c, m->b[i], 0.0);
    }
    return c->status;
}

VTDEF vt_tensor *vt_mlp_forward(vt_ctx *c, const vt_mlp *m, vt_tensor *x) {
    int i;
    for (i = 0; i < m->nlayers; i++) {
        x = vt_linear(c, x, m->w[i], m->b[i]);
        if (i < m->nlayers - 1) x = m->act == 0 ? vt_relu(c, x) : m->act == 1 ? vt_tanh(c, x) : vt_gelu(c, x);
    }
    return x;
}

static vt_tensor *vt__gpt_p(vt_ctx *c, int *stream, uint64_t seed, const char *name, int nd, int64_t a, int64_t b,
                            double std) {
    int64_t ne[2];
    vt_tensor *t;
    ne[0] = a; ne[1] = b;
    t = vt_param(c, name, nd, ne);
    if (std > 0) vt_init_normal(c, t, seed, (uint64_t)(*stream), std);
    else vt_init_const(c, t, std < 0 ? 1.0 : 0.0);
    (*stream)++;
    return t;
}

VTDEF vt_status vt_gpt_init(vt_ctx *c, vt_gpt *g, const vt_gpt_config *cfg, uint64_t seed) {
    int l, st = 0;
    int64_t C = cfg->width;
    double sproj;
    char nm[48];
    memset(g, 0, sizeof *g);
    if (cfg->vocab < 1 || cfg->context < 1 || cfg->layers < 1 || cfg->heads < 1 || C < 1 || C % cfg->heads ||
        !(cfg->dropout >= 0 && cfg->dropout < 1))
        return vt__fail(c, VT_ERR_ARG, "vt_gpt_init: bad config (vocab %d, context %d, layers %d, heads %d, width %d, dropout %g): "
                                       "each at least 1, width a multiple of heads, dropout in [0, 1)",
                        cfg->vocab, cfg->context, cfg->layers, cfg->heads, cfg->width, cfg->dropout);
    g->cfg = *cfg;
    g->seed = seed;
    sproj = 0.02 / sqrt(2.0 * cfg->layers); /* GPT-2's scaled init of residual projections */
    g->wte = vt__gpt_p(c, &st, seed, "wte", 2, cfg->vocab, C, 0.02);
    g->wpe = vt__gpt_p(c, &st, seed, "wpe", 2, cfg->context, C, 0.02);
    g->h = (vt_gpt_block *)vt__persist_alloc(c, sizeof(vt_gpt_block) * (size_t)cfg->layers);
    if (!g->h) return c->status;
    for (l = 0; l < cfg->layers; l++) {
        vt_gpt_block *b = &g->h[l];
#define VT__NM(s) (snprintf(nm, sizeof nm, "h.%d." s, l), nm)
        b->ln1w = vt__gpt_p(c, &st, seed, VT__NM("ln1w"), 1, C, 0, -1);
        b->ln1b = vt__gpt_p(c, &st, seed, VT__NM("ln1b"), 1, C, 0, 0);
        b->qkvw = vt__gpt_p(c, &st, seed, VT__NM("qkvw"), 2, 3 * C, C, 0.02);
        b->qkvb = vt__gpt_p(c, &st, seed, VT__NM("qkvb"), 1, 3 * C, 0, 0);
        b->projw = vt__gpt_p(c, &st, seed, VT__NM("projw"), 2, C, C, sproj);
        b->projb = vt__gpt_p(c, &st, seed, VT__NM("projb"), 1, C, 0, 0);
        b->ln2w = vt__gpt_p(c, &st, seed, VT__NM("ln2w"), 1, C, 0, -1);
        b->ln2b = vt__gpt_p(c, &st, seed, VT__NM("ln2b"), 1, C, 0, 0);
        b->fcw = vt__gpt_p(c, &st, seed, VT__NM("fcw"), 2, 4 * C, C, 0.02);
        b->fcb = vt__gpt_p(c, &st, seed, VT__NM("fcb"), 1, 4 * C, 0, 0);
        b->fcprojw = vt__gpt_p(c, &st, seed, VT__NM("fcprojw"), 2, C, 4 * C, sproj);
        b->fcprojb = vt__gpt_p(c, &st, seed, VT__NM("fcprojb"), 1, C, 0, 0);
#undef VT__NM
    }
    g->lnfw = vt__gpt_p(c, &st, seed, "lnfw", 1, C, 0, -1);
    g->lnfb = vt__gpt_p(c, &st, seed, "lnfb", 1, C, 0, 0);
    return c->status;
}

VTDEF void vt_gpt_free(vt_gpt *g) { memset(g, 0, sizeof *g); /* memory belongs to the context */ }

VTDEF vt_tensor *vt_gpt_forward(vt_ctx *c, const vt_gpt *g, vt_tensor *tokens, vt_tensor *targets, int64_t step) {
    int64_t B, T, i, ne1[1];
    int l;
    double p = g->cfg.dropout;
    vt_tensor *x, *pos;
    (void)step;
    if (c->status != VT_OK) return NULL;
    if (!tokens || tokens->dtype != VT_I32 || tokens->ndim != 2) {
        vt__fail(c, VT_ERR_ARG, "vt_gpt_forward: tokens must be an int32 tensor (B,T)");
        return NULL;
    }
    B = tokens->ne[0];
    T = tokens->ne[1];
    if (T > g->cfg.context) {
        vt__fail(c, VT_ERR_SHAPE, "vt_gpt_forward: T = %lld exceeds the context %d", (long long)T, g->cfg.context);
        return NULL;
    }
    ne1[0] = T;
    pos = vt_new(c, VT_I32, 1, ne1);
    if (!pos) return NULL;
    for (i = 0; i < T; i++) vt__hwi(c, pos)[i] = (int32_t)i;
    x = vt_embedding(c, g->wte, tokens);                           /* (B,T,C) */
    x = vt_add(c, x, vt_embedding(c, g->wpe, pos));                /* + (T,C): one op per argument list */
    x = vt_dropout(c, x, p, g->seed * 1000003u + 1);
    for (l = 0; l < g->cfg.layers; l++) {
        const vt_gpt_block *b = &g->h[l];
        vt_tensor *h = vt_layernorm(c, x, b->ln1w, b->ln1b, 1e-5);
        h = vt_linear(c, h, b->qkvw, b->qkvb);                     /* (B,T,3C) */
        h = vt_attention(c, h, g->cfg.heads);                      /* (B,T,C) */
        h = vt_linear(c, h, b->projw, b->projb);
        h = vt_dropout(c, h, p, g->seed * 1000003u + 2 + 2 * (uint64_t)l);
        x = vt_add(c, x, h);
        h = vt_layernorm(c, x, b->ln2w, b->ln2b, 1e-5);
        h = vt_gelu(c, vt_linear(c, h, b->fcw, b->fcb));           /* (B,T,4C) */
        h = vt_linear(c, h, b->fcprojw, b->fcprojb);
        h = vt_dropout(c, h, p, g->seed * 1000003u + 3 + 2 * (uint64_t)l);
        x = vt_add(c, x, h);
    }
    x = vt_layernorm(c, x, g->lnfw, g->lnfb, 1e-5);
    x = vt_linear(c, x, g->wte, NULL);                             /* (B,T,V), tied head */
    (void)B;
    return targets ? vt_cross_entropy(c, x, targets) : x;
}

VTDEF vt_status vt_gpt_generate(vt_ctx *c, const vt_gpt *g, int32_t *toks, int nprompt, int n, double temperature,
                                uint64_t seed) {
    int i, V = g->cfg.vocab;
    double *p;
    if (c->status != VT_OK) return c->status;
    if (!toks || nprompt < 1 || n < 0 || temperature != temperature)
        return vt__fail(c, VT_ERR_ARG, "vt_gpt_generate: needs tokens, a prompt of at least 1 (got %d), n >= 0 (got %d) and a "
                                       "temperature that is a number", nprompt, n);
    p = (double *)vt__xmalloc(c, sizeof(double) * (size_t)V);
    if (!p) return c->status;
    for (i = 0; i < n && c->status == VT_OK; i++) {
        int len = nprompt + i, start = len > g->cfg.context ? len - g->cfg.context : 0, T = len - start, v, best = 0;
        int64_t ne[2];
        vt_tensor *tk, *logits;
        const double *row;
        double mx = -INFINITY, s = 0, r, acc = 0;
        vt_eval_begin(c);
        ne[0] = 1; ne[1] = T;
        tk = vt_from_i32(c, 2, ne, toks + start);
        logits = vt_gpt_forward(c, g, tk, NULL, 0);
        vt_eval_end(c);
        if (!logits) break;
        row = vt__h(c, logits) + (int64_t)(T - 1) * V;
        for (v = 0; v < V; v++) if (row[v] > mx) { mx = row[v]; best = v; }
        if (temperature <= 0) { toks[len] = best; continue; }
        for (v = 0; v < V; v++) { p[v] = exp((row[v] - mx) / temperature); s += p[v]; }
        r = vt_rng_uniform(seed, 7, (uint64_t)i) * s;
        toks[len] = V - 1;
        for (v = 0; v < V; v++) { acc += p[v]; if (r < acc) { toks[len] = v; break; } }
    }
    VT_FREE(p, c->u);
    return c->status;
}

/* --- ResNets (CIFAR form) ---------------------------------------------------- */

VTDEF vt_resnet_config vt_resnet_default(int depth) {
    vt_resnet_config r;
    r.depth = depth; r.width = 64; r.classes = 10; r.in_channels = 3; r.bn_momentum = 0.1;
    return r;
}

/* a convolution without bias and its batch norm; weights Kaiming-normal
   over the fan-out (torchvision's ResNet), batch norm weight 1, bias 0 */
static void vt__convbn_init(vt_ctx *c, vt_convbn *l, const char *name, int64_t in, int64_t out, int k, int stride, uint64_t seed,
                            uint64_t *stream) {
    int64_t wn[4], cn[1];
    char nm[48]; /* names here are at most 26 characters */
    wn[0] = out; wn[1] = in; wn[2] = k; wn[3] = k; cn[0] = out;
    l->stride = stride;
    l->pad = k / 2;
    snprintf(nm, sizeof nm, "%.30s.w", name);
    l->w = vt_param(c, nm, 4, wn);
    snprintf(nm, sizeof nm, "%.30s.bn.w", name);
    l->g = vt_param(c, nm, 1, cn);
    snprintf(nm, sizeof nm, "%.30s.bn.b", name);
    l->b = vt_param(c, nm, 1, cn);
    snprintf(nm, sizeof nm, "%.30s.bn.running", name);
    l->st = vt_bn_state(c, nm, out);
    vt_init_normal(c, l->w, seed, (*stream)++, sqrt(2.0 / (double)(out * k * k)));
    vt_init_const(c, l->g, 1.0);
    vt_init_const(c, l->b, 0.0);
}

static vt_tensor *vt__convbn(vt_ctx *c, const vt_convbn *l, vt_tensor *x, double mom, int relu) {
    x = vt_conv2d(c, x, l->w, NULL, l->stride, l->pad, 1, 1);
    x = vt_batchnorm2d(c, x, l->g, l->b, l->st, mom, 1e-5);
    return relu ? vt_relu(c, x) : x;
}

VTDEF vt_status vt_resnet_init(vt_ctx *c, vt_resnet *m, const vt_resnet_config *cfg, uint64_t seed) {
    static const int n18[4] = {2, 2, 2, 2}, n50[4] = {3, 4, 6, 3};
    const int *nb;
    int st, bi, q = 0, bott;
    int64_t in, fan;
    uint64_t stream = 0;
    char nm[128];
    memset(m, 0, sizeof *m);
    if (c->status != VT_OK) return c->status;
    if (!cfg || (cfg->depth != 18 && cfg->depth != 50) || cfg->width < 1 || cfg->classes < 1 || cfg->in_channels < 1 ||
        !(cfg->bn_momentum >= 0 && cfg->bn_momentum <= 1))
        return vt__fail(c, VT_ERR_ARG, "vt_resnet_init: depth %d (18 or 50), width %d, classes %d, in_channels %d (each >= 1), "
                                       "bn_momentum %g (in [0, 1])", cfg ? cfg->depth : 0, cfg ? cfg->width : 0,
                        cfg ? cfg->classes : 0, cfg ? cfg->in_channels : 0, cfg ? cfg->bn_momentum : 0.0);
    m->cfg = *cfg;
    bott = cfg->depth == 50;
    nb = bott ? n50 : n18;
    m->nblocks = nb[0] + nb[1] + nb[2] + nb[3];
    m->u = c->u;
    m->blocks = (vt_resblock *)VT_MALLOC(sizeof(vt_resblock) * (size_t)m->nblocks, c->u);
    if (!m->blocks) return vt__fail(c, VT_ERR_NOMEM, "vt_resnet_init: out of memory");
    memset(m->blocks, 0, sizeof(vt_resblock) * (size_t)m->nblocks);
    vt__convbn_init(c, &m->stem, "conv1", cfg->in_channels, cfg->width, 3, 1, seed, &stream);
    in = cfg->width;
    for (st = 0; st < 4; st++) {
        int64_t planes = (int64_t)cfg->width << st, out = bott ? 4 * planes : planes;
        for (bi = 0; bi < nb[st]; bi++, q++) {
            vt_resblock *b = &m->blocks[q];
            int stride = bi == 0 && st > 0 ? 2 : 1;
            char pre[64];
            snprintf(pre, sizeof pre, "layer%d.%d", st + 1, bi);
            b->bottleneck = bott;
            snprintf(nm, sizeof nm, "%s.conv1", pre);
            if (bott) {
                vt__convbn_init(c, &b->c1, nm, in, planes, 1, 1, seed, &stream);
                snprintf(nm, sizeof nm, "%s.conv2", pre);
                vt__convbn_init(c, &b->c2, nm, planes, planes, 3, stride, seed, &stream);
                snprintf(nm, sizeof nm, "%s.conv3", pre);
                vt__convbn_init(c, &b->c3, nm, planes, out, 1, 1, seed, &stream);
            } else {
                vt__convbn_init(c, &b->c1, nm, in, planes, 3, stride, seed, &stream);
                snprintf(nm, sizeof nm, "%s.conv2", pre);
                vt__convbn_init(c, &b->c2, nm, planes, planes, 3, 1, seed, &stream);
            }
            b->has_sc = stride != 1 || in != out;
            if (b->has_sc) {
                snprintf(nm, sizeof nm, "%s.shortcut", pre);
                vt__convbn_init(c, &b->sc, nm, in, out, 1, stride, seed, &stream);
            }
            in = out;
        }
    }
    {
        int64_t wn[2], bn[1];
        fan = in;
        wn[0] = cfg->classes; wn[1] = fan; bn[0] = cfg->classes;
        m->fcw = vt_param(c, "fc.w", 2, wn);
        m->fcb = vt_param(c, "fc.b", 1, bn);
        /* PyTorch's default for a linear layer: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) */
        vt_init_uniform(c, m->fcw, seed, stream++, -1 / sqrt((double)fan), 1 / sqrt((double)fan));
        vt_init_uniform(c, m->fcb, seed, stream++, -1 / sqrt((double)fan), 1 / sqrt((double)fan));
    }
    return c->status;
}

VTDEF void vt_resnet_free(vt_resnet *m) {
    if (m->blocks) VT_FREE(m->blocks, m->u); /* (allocated with VT_MALLOC: a user's allocator takes it back) */
    m->blocks = NULL;
    m->nblocks = 0;
}

VTDEF vt_tensor *vt_resnet_forward(vt_ctx *c, const vt_resnet *m, vt_tensor *x) {
    double mom = m->cfg.bn_momentum;
    int q;
    if (c->status != VT_OK) return NULL;
    if (!m->blocks) { vt__fail(c, VT_ERR_STATE, "vt_resnet_forward: the model is not initialised"); return NULL; }
    x = vt__convbn(c, &m->stem, x, mom, 1);
    for (q = 0; q < m->nblocks; q++) {
        const vt_resblock *b = &m->blocks[q];
        vt_tensor *h = vt__convbn(c, &b->c1, x, mom, 1), *s = x;
        h = vt__convbn(c, &b->c2, h, mom, b->bottleneck);
        if (b->bottleneck) h = vt__convbn(c, &b->c3, h, mom, 0);
        if (b->has_sc) s = vt__convbn(c, &b->sc, x, mom, 0);
        x = vt_add(c, h, s);
        x = vt_relu(c, x);
    }
    x = vt_global_avgpool(c, x);
    return vt_linear(c, x, m->fcw, m->fcb);
}

/* ==========================================================================
   >>data  loaders; every problem is reported with file and line
   ========================================================================== */

static unsigned char *vt__slurp(const char *path, int64_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char *b;
    long sz;
    if (!f) { vt__tls_fail(VT_ERR_IO, "cannot open '%s'", path); return NULL; }
    if (fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0) { fclose(f); vt__tls_fail(VT_ERR_IO, "cannot size '%s'", path); return NULL; }
    fseek(f, 0, SEEK_SET);
    b = (unsigned char *)VT_MALLOC((size_t)sz + 1, NULL);
    if (!b) { fclose(f); vt__tls_fail(VT_ERR_NOMEM, "out of memory reading '%s'", path); return NULL; }
    if (fread(b, 1, (size_t)sz, f) != (size_t)sz) { fclose(f); VT_FREE(b, NULL); vt__tls_fail(VT_ERR_IO, "cannot read '%s'", path); return NULL; }
    fclose(f);
    b[sz] = 0;
    *n = sz;
    return b;
}

/* digits.csv: one sample per line, 64 pixel values 0..16 then the label 0..9 */
VTDEF vt_status vt_digits_load(const char *path, vt_digits *d) {
    int64_t n, i = 0;
    int line = 0, cap = 2048;
    unsigned char *b = vt__slurp(path, &n);
    memset(d, 0, sizeof *d);
    if (!b) return VT_ERR_IO;
    if (n == 0) { VT_FREE(b, NULL); return vt__tls_fail(VT_ERR_FORMAT, "'%s' is empty", path); }
    if (b[n - 1] != '\n') { VT_FREE(b, NULL); return vt__tls_fail(VT_ERR_TRUNCATED, "'%s' is truncated: the last line has no newline", path); }
    d->x = (float *)VT_MALLOC(sizeof(float) * 64 * (size_t)cap, NULL);
    d->y = (int32_t *)VT_MALLOC(sizeof(int32_t) * (size_t)cap, NULL);
    if (!d->x || !d->y) { VT_FREE(b, NULL); vt_digits_free(d); return vt__tls_fail(VT_ERR_NOMEM, "out of memory loading '%s'", path); }
    while (i < n) {
        int f;
        line++;
        if (d->n == cap) {
            VT_FREE(b, NULL);
            vt_digits_free(d);
            return vt__tls_fail(VT_ERR_FORMAT, "'%s' has more than %d samples", path, cap);
        }
        for (f = 0; f < 65; f++) {
            long v = 0;
            int digits = 0;
            while (i < n && b[i] >= '0' && b[i] <= '9' && digits < 6) { v = v * 10 + (b[i] - '0'); i++; digits++; }
            if (!digits || v > (f < 64 ? 16 : 9) || i >= n || b[i] != (f < 64 ? ',' : '\n')) {
                VT_FREE(b, NULL);
                vt_digits_free(d);
                return vt__tls_fail(VT_ERR_FORMAT, "'%s' line %d, field %d: expected %s followed by '%s'", path, line, f + 1,
                                    f < 64 ? "a pixel value 0..16" : "a label 0..9", f < 64 ? "," : "end of line");
            }
            i++;
            if (f < 64) d->x[d->n * 64 + f] = (float)v / 16.0f;
            else d->y[d->n] = (int32_t)v;
        }
        d->n++;
    }
    VT_FREE(b, NULL);
    return VT_OK;
}

VTDEF void vt_digits_free(vt_digits *d) {
    VT_FREE(d->x, NULL);
    VT_FREE(d->y, NULL);
    memset(d, 0, sizeof *d);
}

/* a text file as byte-level tokens; the vocabulary is the sorted set of
   bytes that occur */
VTDEF vt_status vt_text_load(const char *path, vt_text *t) {
    int64_t n, i;
    int seen[256], v;
    unsigned char *b = vt__slurp(path, &n);
    memset(t, 0, sizeof *t);
    if (!b) return VT_ERR_IO;
    if (n < 2) { VT_FREE(b, NULL); return vt__tls_fail(VT_ERR_FORMAT, "'%s' holds %lld bytes: too short to train on", path, (long long)n); }
    memset(seen, 0, sizeof seen);
    for (i = 0; i < n; i++) seen[b[i]] = 1;
    for (v = 0; v < 256; v++) {
        t->stoi[v] = seen[v] ? t->vocab : -1;
        if (seen[v]) t->itos[t->vocab++] = (unsigned char)v;
    }
    t->tok = (int32_t *)VT_MALLOC(sizeof(int32_t) * (size_t)n, NULL);
    if (!t->tok) { VT_FREE(b, NULL); return vt__tls_fail(VT_ERR_NOMEM, "out of memory loading '%s'", path); }
    for (i = 0; i < n; i++) t->tok[i] = t->stoi[b[i]];
    t->n = n;
    VT_FREE(b, NULL);
    return VT_OK;
}

VTDEF void vt_text_free(vt_text *t) {
    VT_FREE(t->tok, NULL);
    memset(t, 0, sizeof *t);
}


/* --- CIFAR-10 ---------------------------------------------------------------- */

#define VT__CIFAR_REC 3073

VTDEF vt_status vt_cifar_load(const char *const *paths, int npaths, vt_cifar *d) {
    int f, tot = 0;
    int64_t *sizes;
    memset(d, 0, sizeof *d);
    if (!paths || npaths < 1) return vt__tls_fail(VT_ERR_ARG, "vt_cifar_load: no files");
    sizes = (int64_t *)VT_MALLOC(sizeof(int64_t) * (size_t)npaths, NULL);
    if (!sizes) return vt__tls_fail(VT_ERR_NOMEM, "vt_cifar_load: out of memory");
    for (f = 0; f < npaths; f++) { /* sizes first: a truncated file is refused before anything is read */
        FILE *fp = fopen(paths[f], "rb");
        long sz;
        if (!fp) { VT_FREE(sizes, NULL); return vt__tls_fail(VT_ERR_IO, "cannot open '%s'", paths[f]); }
        if (fseek(fp, 0, SEEK_END) != 0 || (sz = ftell(fp)) < 0) { fclose(fp); VT_FREE(sizes, NULL); return vt__tls_fail(VT_ERR_IO, "cannot size '%s'", paths[f]); }
        fclose(fp);
        if (sz == 0) { VT_FREE(sizes, NULL); return vt__tls_fail(VT_ERR_FORMAT, "'%s' is empty: a CIFAR-10 file holds records of %d bytes", paths[f], VT__CIFAR_REC); }
        if (sz % VT__CIFAR_REC) {
            VT_FREE(sizes, NULL);
            return vt__tls_fail(VT_ERR_TRUNCATED, "'%s' is truncated: record %ld has %ld of its %d bytes (a CIFAR-10 record is one label "
                                                  "byte and 3072 pixel bytes)", paths[f], sz / VT__CIFAR_REC, sz % VT__CIFAR_REC, VT__CIFAR_REC);
        }
        if (sz / VT__CIFAR_REC > 2000000000L - tot) { VT_FREE(sizes, NULL); return vt__tls_fail(VT_ERR_FORMAT, "'%s': too many records", paths[f]); }
        sizes[f] = sz;
        tot += (int)(sz / VT__CIFAR_REC);
    }
    d->x = (unsigned char *)VT_MALLOC((size_t)tot * 3072, NULL);
    d->y = (int32_t *)VT_MALLOC(sizeof(int32_t) * (size_t)tot, NULL);
    if (!d->x || !d->y) { VT_FREE(sizes, NULL); vt_cifar_free(d); return vt__tls_fail(VT_ERR_NOMEM, "out of memory for %d CIFAR images", tot); }
    for (f = 0; f < npaths; f++) {
        int64_t n, r, nrec = sizes[f] / VT__CIFAR_REC;
        unsigned char *b = vt__slurp(paths[f], &n);
        if (!b) { VT_FREE(sizes, NULL); vt_cifar_free(d); return vt_last_status(); }
        if (n != sizes[f]) {
            long long was = (long long)sizes[f];
            VT_FREE(b, NULL); VT_FREE(sizes, NULL); vt_cifar_free(d);
            return vt__tls_fail(VT_ERR_IO, "'%s' changed size while it was read (%lld then %lld bytes)", paths[f], was, (long long)n);
        }
        for (r = 0; r < nrec; r++) {
            const unsigned char *rec = b + r * VT__CIFAR_REC;
            if (rec[0] > 9) {
                int lab = rec[0];
                VT_FREE(b, NULL); VT_FREE(sizes, NULL); vt_cifar_free(d);
                return vt__tls_fail(VT_ERR_FORMAT, "'%s': record %lld (byte %lld) has label %d, outside 0..9", paths[f], (long long)r,
                                    (long long)(r * VT__CIFAR_REC), lab);
            }
            d->y[d->n] = rec[0];
            memcpy(d->x + (size_t)d->n * 3072, rec + 1, 3072);
            d->n++;
        }
        VT_FREE(b, NULL);
    }
    VT_FREE(sizes, NULL);
    return VT_OK;
}

VTDEF void vt_cifar_free(vt_cifar *d) {
    VT_FREE(d->x, NULL);
    VT_FREE(d->y, NULL);
    memset(d, 0, sizeof *d);
}

/* pixel p of channel ch: (p / 255 - mean) / std in binary64, rounded once
   to binary32: the same value everywhere */
VTDEF void vt_cifar_image(const vt_cifar *d, int i, int augment, uint64_t seed, uint64_t stream, uint64_t index, float *out) {
    static const double mean[3] = {0.4914, 0.4822, 0.4465}, sd[3] = {0.2470, 0.2435, 0.2616};
    const unsigned char *img = d->x + (size_t)i * 3072;
    int ox = 0, oy = 0, flip = 0, ch, y, x;
    if (augment) {
        uint64_t r = vt_rng_u64(seed, stream, index);
        ox = (int)(r % 9) - 4;
        oy = (int)((r >> 8) % 9) - 4;
        flip = (int)((r >> 16) & 1);
    }
    for (ch = 0; ch < 3; ch++)
        for (y = 0; y < 32; y++)
            for (x = 0; x < 32; x++) {
                int sy = y + oy, sx = flip ? 31 - x : x;
                double v;
                sx += ox;
                v = (sy < 0 || sy > 31 || sx < 0 || sx > 31) ? 0.0 : img[ch * 1024 + sy * 32 + sx] / 255.0;
                out[ch * 1024 + y * 32 + x] = (float)((v - mean[ch]) / sd[ch]);
            }
}

/* ==========================================================================
   >>companion  the internal interface of companion headers (vtrain_btard.h)

   A companion header sits beside vtrain.h the way sokol_gl.h sits beside
   sokol_gfx.h: its implementation is compiled in the same translation unit,
   after this one. It may use vtrain's public API and, of the private parts,
   only what this section lists; everything else private may change without
   a word. Whoever changes one of these changes the companions with it.
   VT__COMPANION numbers this list: a companion checks it and refuses to
   compile against another.

   Build settings a companion can count on: _POSIX_C_SOURCE (top of this
   file); <math.h> <stdarg.h> <stdio.h> <stdlib.h> <string.h> <time.h>, and
   <pthread.h> <sched.h> unless VTRAIN_NO_THREADS, are included. The
   floating-point pragmas at the top of the implementation (no fma
   contraction; GCC: also O3) are popped at its end, so a companion sets
   the same ones around its own implementation.

   Macros (top of the implementation):
     VT_MALLOC(sz, u), VT_REALLOC(p, sz, u), VT_FREE(p, u)
                       the allocator; u is a context's user pointer, NULL
                       outside a context
     VT__MIN(a, b)     the smaller (evaluates an argument twice)
     VT__UNUSED        marks a static function some configurations never call
     VT__PRINTF(f, a)  checks printf formats: argument f is the format, the
                       values start at argument a
     VT__AVX2          defined when the kernels use AVX2 and FMA
                       (<immintrin.h> is included); never with VTRAIN_NO_SIMD

   The rounding log's chunk (>>log): VT__CHUNK_HDR header bytes, "VTCK" or
   "VTCR" at 0, u64 step at 4, u32 points at 12, u32 entries at 16, u64
   body length at 20 (little-endian), then the body, then the SHA-256 of
   everything before it. vtrain_btard.h restamps a chunk's step (and
   forges chunks for the forged-log attack) with this layout.

   Functions, defined in the sections named (declared again here, so that
   a change of signature fails to compile in vtrain.h itself):
   ========================================================================== */

#define VT__COMPANION 1

/* >>errors: set the calling thread's error (vt_last_status, vt_last_error)
   where there is no context; returns s */
static vt_status vt__tls_fail(vt_status s, const char *fmt, ...) VT__PRINTF(2, 3);
/* >>threads: seconds on a monotonic clock (CPU seconds without one) */
static double vt__now(void);
/* >>rounding: 1 on a little-endian host, where binary32 values in memory
   are their wire bytes */
static int vt__host_le(void);
/* >>setup: 1 if this build fuses a*b+c into one fma (vt_create refuses) */
static int vt__contracts(void);
/* >>hash: n more bytes into each of two SHA-256 states; the digests of two
   vt_sha256_update calls, two blocks at once with SHA-NI */
static void vt__sha256_update2(vt_sha256_ctx *a, const void *pa, vt_sha256_ctx *b, const void *pb, size_t n);

/* The shards of a step across processes (vtrain_dp.h), numbered apart
   from the list above: VT__COMPANION_SHARDS. */
#define VT__COMPANION_SHARDS 1
/* >>step: this context computes shards [lo, hi) of each step; `group` is
   its place among the processes (its rank); `records`: build log records
   without a log (the writer needs every shard's); exchange(c, user) runs
   in vt_shards_sum, whatever c's status (it must tell the other processes
   of a failure): it sends vt__shards_mine's bytes to every other process
   and vt__shards_put's every process's received bytes, its own included,
   in any order; it reports a failure with vt_set_error */
static void vt__shards_attach(vt_ctx *c, int lo, int hi, int group, int records, vt_status (*exchange)(vt_ctx *c, void *user), void *user);
static void vt__shards_mine(const vt_ctx *c, const unsigned char **p, size_t *n);
static int vt__shards_put(vt_ctx *c, const unsigned char *p, size_t n);
/* >>transcript: a checkpoint's path in a transcript directory; a file's
   bytes (malloc'd with VT_MALLOC(n, NULL); NULL if unreadable or longer
   than maxn); a checkpoint's bytes into the context's state, every field
   checked (what names it in errors) */
static void vt__ckpt_path(const char *dir, int64_t step, char *buf, size_t n);
static unsigned char *vt__read_file(const char *path, size_t *n, size_t maxn);
static vt_status vt__checkpoint_parse(vt_ctx *c, const unsigned char *b, size_t n, const char *path);
/* >>transcript: the checkpoint vt_checkpoint_save would write, as bytes,
   with `step` as its metadata step (path only names it in errors; *out
   from VT_MALLOC(*n, c's user pointer)) */
static vt_status vt__checkpoint_bytes(vt_ctx *c, int64_t step, const char *path, unsigned char **out, size_t *n);

#ifdef VTRAIN_CUDA
#include "vtrain_cuda.cu.h"
#endif

VT__FP_POP /* pushed at >>elementary */
#endif /* VTRAIN_IMPLEMENTATION_INCLUDED */
#endif /* VTRAIN_IMPLEMENTATION */

/*
   REVISION HISTORY
     (unreleased) shards: vt_desc.shards, vt_shard_begin / vt_shard_end /
            vt_shards_sum, the cross-shard sum (RNE32 of the exact sum, no
            log entry), the manifest key vtrain.shards (written only when
            S > 1: a program without shards writes the files it always
            did); the companion vtrain_dp.h (MPI ranks).
     0.1.0  (2026-11-29) first release: tensors, autograd, ops with sound
            error bounds, rounding log (log format 1, op table 0), auditor,
            calibration, CPU backend. Since, under the same version and
            formats: transcripts (Merkle commitments, checkpoints, resume)
            and the dispute game; the CUDA backend and its emulator; BTARD,
            moved to its own header vtrain_btard.h (2026-12-01); op ids
            fixed in VT__OP_LIST and recorded in each log header; one
            >>backend section; VTRAIN_NO_O3; VT_CUDA_EMULATOR public.

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
