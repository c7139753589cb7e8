/* vtrain_cuda.cu.h - the CUDA backend of vtrain.h - MIT or public domain (see the end of vtrain.h)

   Every op of vtrain.h on an NVIDIA GPU, in binary64, with the same rounding
   points, bounds and log as the CPU backend: a run trained on the GPU is
   audited bit for bit on the CPU, and the reverse. Kernels are CUDA C in
   this file, compiled to PTX by nvcc and loaded at run time through the CUDA
   Driver API (cuModuleLoadData); matrix products go through cuBLAS (DGEMM,
   strided-batched). Neither library is linked: both are opened with dlopen
   when a context asks for the GPU, so a program built with VTRAIN_CUDA starts
   on any machine and says plainly why it cannot use a GPU there.

   DO THIS (CUDA = /usr/local/cuda; two commands):

     1. the kernels as PTX (Hopper, and a portable compute_75 one), embedded
        in a header the host build includes:

        for a in 90 75; do nvcc -ptx -arch=compute_$a -fmad=false -x cu vtrain_cuda.cu.h -o vtrain_cuda_$a.ptx; done; \
        for a in 90 75; do echo "static const char vt__cuda_ptx_$a[] ="; \
          sed 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$/\\n"/' vtrain_cuda_$a.ptx; echo ';'; done > vtrain_cuda_ptx.h

     2. the program (the file that defines VTRAIN_IMPLEMENTATION):

        cc -std=c99 -O2 -ffp-contract=off -DVTRAIN_CUDA -I$CUDA/include -I. prog.c -o prog -lm -lpthread -ldl

     and select the GPU in the settings: d.backend = VT_BACKEND_CUDA;
     d.device = 0 (the ordinal). Without a driver or a device vt_create
     returns NULL and vt_last_error() says why; VT_BACKEND_CPU is unaffected.

   -fmad=false: nvcc would otherwise fuse a*b+c into fma, and the numeric
   contract needs arithmetic to run as written (the same expressions give the
   same binary64 values on the CPU and the GPU). Division and sqrt in binary64
   are IEEE on the GPU. No CUDA math function is used for exp, log or tanh:
   the kernels call vtrain's own (>>elementary in vtrain.h, included here as
   device functions), so a GPU computes the same bits as the CPU.

   OPTIONS (define where VTRAIN_IMPLEMENTATION is defined):
     VTRAIN_CUDA_EMU       also compile the emulator: the same kernel source
                           runs on the CPU (d.device = VT_CUDA_EMULATOR), with a
                           reference cuBLAS that sums in another order. The
                           test suite runs the whole backend through it.
     VTRAIN_CUDA_PTX_DIR   "dir": read vtrain_cuda_90.ptx / vtrain_cuda_75.ptx
                           from dir at run time instead of the embedded header.
   ENVIRONMENT: VTRAIN_CUDA_SYNC=1 waits after every kernel, so an error names
   the kernel that failed (slow; for debugging).

   LAYOUT OF THIS FILE
     >>cuda-shim     what the kernel source means under nvcc and under the emulator
     >>cuda-emu      the emulator's threads (fibers) and memory
     >>cuda-args     one argument struct per kernel, shared by host and device
     >>cuda-kernels  the kernels, each beside the CPU kernel it mirrors
     >>cuda-dev      the device layer: real (Driver API + cuBLAS) and emulated
     >>cuda-backend  vtrain's backend (vt__backend) over the device layer
   Bounds are derived once, beside the CPU kernels in vtrain.h (>>cpu,
   >>gemm); every GPU kernel computes the same values up to reduction order
   and the same bound formulas, and says which CPU kernel it mirrors.

   DETERMINISM. Reductions here never use atomics: each is a fixed tree over
   a block's threads, then partials combined in block order. Two runs on one
   GPU therefore compute identical binary64 values and write byte-identical
   logs (the rounding points would absorb atomics, but not the log's bytes).
   The rounding kernel emits entries in index order: count per block, prefix
   sum, write.
*/
#ifndef VTRAIN_CUDA_CU_H
#define VTRAIN_CUDA_CU_H

/* ==========================================================================
   >>cuda-shim  one kernel source, two meanings

   Kernels are written in a subset of CUDA C that is also C99/C++: no warp
   shuffles, no implicit warp synchrony, no atomics, static shared arrays,
   1-D grids and blocks, one struct argument per kernel. Under nvcc the macros
   below are CUDA; under VTRAIN_CUDA_EMU they are the emulator's: a kernel is
   a plain function, threadIdx & co. are the emulator's current thread, a
   __shared__ array is a static (blocks run one after another) and
   __syncthreads() switches to the next thread of the block (fibers).
   ========================================================================== */

#if defined(__CUDACC__)
#include <stdint.h>
/* vtrain's own exp, log, tanh and sigmoid (>>elementary in vtrain.h), the
   same source as the CPU's, as device functions */
#define VTRAIN_ELEMENTARY_DEVICE
#include "vtrain.h"
#define VTK_KERNELS 1
#define VTK_GLOBAL extern "C" __global__ void
#define VTK_DEV static __device__
#define VTK_SHARED __shared__
#define VTK_CONSTANT static __constant__ const
#define VTK_SYNC() __syncthreads()
#define VTK_TID ((int)threadIdx.x)
#define VTK_BID ((int64_t)blockIdx.x)
#define VTK_BDIM ((int)blockDim.x)
#define VTK_GDIM ((int64_t)gridDim.x)
#define VTK_DBITS(x) ((uint64_t)__double_as_longlong(x))
#define VTK_FBITS(f) ((uint32_t)__float_as_uint(f))
#define VTK_CTZ64(m) (__ffsll((long long)(m)) - 1)
#define VTK_INF __longlong_as_double(0x7ff0000000000000LL)
#define VTK_UNUSED
#elif defined(VTRAIN_CUDA_EMU)
#define VTK_KERNELS 1
#define VTK_GLOBAL static void
#define VTK_DEV static VT__UNUSED
#define VTK_SHARED static VT__THREAD_LOCAL
#define VTK_CONSTANT static const
#define VTK_SYNC() vt__emu_sync()
#define VTK_TID (vt__emu_now->tid)
#define VTK_BID (vt__emu_now->bid)
#define VTK_BDIM (vt__emu_now->bdim)
#define VTK_GDIM (vt__emu_now->gdim)
#define VTK_DBITS(x) vt__emu_dbits(x)
#define VTK_FBITS(f) vt__emu_fbits(f)
#define VTK_CTZ64(m) __builtin_ctzll(m)
#define VTK_INF INFINITY
#define VTK_UNUSED VT__UNUSED
#else
#define VTK_KERNELS 0
#endif

/* ==========================================================================
   >>cuda-emu  the emulator: kernels on the CPU, one block after another

   A launch runs every block in turn; inside a block every thread runs the
   kernel function. Kernels registered without barriers run as plain calls,
   one thread after another. Kernels with __syncthreads() run each thread as
   a fiber on a stack of its own: a thread runs until its next barrier, then
   the next thread runs, and when every thread of the block has reached the
   barrier they all continue. On x86-64 a fiber switch is a few instructions
   (the ucontext switch costs a system call per switch, 20x slower; other
   machines use it).

   What the emulator checks, so that a bug shows here and not first on a GPU:
     * threads run in an order that changes with every launch and every
       barrier interval (forward or backward), and with every emulator
       instance: a data race between threads (a missing barrier) gives
       results that differ between two runs of the same program, and the
       test suite compares two runs byte for byte;
     * a thread that returns while others wait at a barrier, a barrier in a
       kernel registered without one, a launch larger than the kernel allows,
       cuBLAS arguments that cuBLAS would reject: each is an error that names
       the kernel;
     * device memory is mapped PROT_NONE while host code runs: host code that
       dereferences a device address (which works in an emulator but not on a
       GPU) faults at once. It is readable only inside the device layer
       (copies, launches, GEMMs).
   What it cannot check: the real Driver API's and cuBLAS's behaviour, the
   GPU's libm (exp, log, tanh here are the host's), timing, and memory
   ordering of a real GPU beyond what barriers enforce.
   ========================================================================== */

#if defined(VTRAIN_CUDA_EMU) && !defined(__CUDACC__)
#include <sys/mman.h>
#if !(defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)))
#include <ucontext.h>
#define VT__EMU_UCONTEXT 1
#endif

#define VT__EMU_STACK (64 * 1024) /* bytes of stack per fiber */

typedef struct vt__emu_alloc { size_t off, size; int used; } vt__emu_alloc;

typedef struct vt__emu {
    /* the thread the kernel code runs as */
    int tid, bdim;
    int64_t bid, gdim;
    /* fibers (kernels with barriers) */
    int fibers, cur, maxt;
    void *sched_sp, **fsp;
    unsigned char *fstate;      /* 0 runnable, 1 at a barrier, 2 returned */
    unsigned char *stacks;
#ifdef VT__EMU_UCONTEXT
    ucontext_t sched_uc, *fuc;
#endif
    void (*fn)(const void *);
    const void *args;
    const char *kname;
    uint64_t seed, launch;
    char err[256];              /* the first protocol error of the launch */
    /* device memory: a reserved range, PROT_NONE outside the device layer */
    unsigned char *mem;
    size_t reserve, top, rw;    /* bytes reserved, used (high-water), readable now */
    vt__emu_alloc *al;
    int nal, cal;
    int open;                   /* nesting depth of device-layer calls */
    int guard;                  /* 1: PROT_NONE outside the device layer */
} vt__emu;

static VT__THREAD_LOCAL vt__emu *vt__emu_now;
static int vt__emu_instances;
/* the memory guard of emulators created from now on: 1 on, 0 off (it costs
   two mprotect calls per device call); -1: VTRAIN_EMU_GUARD, default on */
static int vt__emu_guard = -1;

static VT__UNUSED uint64_t vt__emu_dbits(double x) { uint64_t b; memcpy(&b, &x, 8); return b; }
static VT__UNUSED uint32_t vt__emu_fbits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

#ifndef VT__EMU_UCONTEXT
/* switch stacks: save the callee-saved registers on this stack, store its
   pointer in *save, load `to` and restore that stack's registers */
__asm__(".text\n"
        ".p2align 4\n"
        "vt__emu_swap_x64:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n");
#ifdef __cplusplus
extern "C"
#endif
void vt__emu_swap(void **save, void *to) __asm__("vt__emu_swap_x64");
#endif

/* a fiber's first and only frame: run the kernel as thread `cur`, then
   report back for good */
static void vt__emu_entry(void) {
    vt__emu *m = vt__emu_now;
    m->fn(m->args);
    m = vt__emu_now;
    m->fstate[m->cur] = 2;
#ifdef VT__EMU_UCONTEXT
    swapcontext(&m->fuc[m->cur], &m->sched_uc);
#else
    vt__emu_swap(&m->fsp[m->cur], m->sched_sp);
#endif
}

static void vt__emu_sync(void) {
    vt__emu *m = vt__emu_now;
    if (!m->fibers) {
        fprintf(stderr, "vtrain emulator: kernel %s calls __syncthreads() but is registered without barriers "
                        "(VT__KLIST in vtrain_cuda.cu.h): fix the list\n", m->kname);
        abort(); /* a programming error in this file, not bad input */
    }
    m->fstate[m->cur] = 1;
#ifdef VT__EMU_UCONTEXT
    swapcontext(&m->fuc[m->cur], &m->sched_uc);
#else
    vt__emu_swap(&m->fsp[m->cur], m->sched_sp);
#endif
}

static int vt__emu_grow_fibers(vt__emu *m, int nt) {
    if (nt <= m->maxt) return 1;
    free(m->stacks); free(m->fsp); free(m->fstate);
#ifdef VT__EMU_UCONTEXT
    free(m->fuc);
    m->fuc = (ucontext_t *)malloc(sizeof(ucontext_t) * (size_t)nt);
#endif
    m->stacks = (unsigned char *)malloc((size_t)VT__EMU_STACK * (size_t)nt);
    m->fsp = (void **)malloc(sizeof(void *) * (size_t)nt);
    m->fstate = (unsigned char *)malloc((size_t)nt);
    m->maxt = (m->stacks && m->fsp && m->fstate) ? nt : 0;
    return m->maxt > 0;
}

/* one block with fibers; the order of threads changes per barrier interval */
static void vt__emu_block_fibers(vt__emu *m, int nt) {
    int t, round = 0;
    for (t = 0; t < nt; t++) {
        unsigned char *top = m->stacks + (size_t)VT__EMU_STACK * (size_t)(t + 1);
        m->fstate[t] = 0;
#ifdef VT__EMU_UCONTEXT
        getcontext(&m->fuc[t]);
        m->fuc[t].uc_stack.ss_sp = top - VT__EMU_STACK;
        m->fuc[t].uc_stack.ss_size = VT__EMU_STACK;
        m->fuc[t].uc_link = NULL;
        makecontext(&m->fuc[t], vt__emu_entry, 0);
#else
        {
            /* the frame vt__emu_swap pops: six registers, then the return
               address (the entry), above it a fake return address for the
               entry itself so that its stack is aligned as after a call */
            void **sp = (void **)((uintptr_t)top & ~(uintptr_t)15);
            void (*entry)(void) = vt__emu_entry;
            int r;
            *--sp = NULL;
            --sp;
            memcpy(sp, &entry, sizeof(void *));
            for (r = 0; r < 6; r++) *--sp = NULL;
            m->fsp[t] = sp;
        }
#endif
    }
    for (;;) {
        uint64_t h = vt__mix(m->seed ^ vt__mix(m->launch * 0x9E3779B97F4A7C15ull + (uint64_t)m->bid * 131 + (uint64_t)round));
        int back = (int)(h & 1), k, waiting = 0, done = 0;
        for (k = 0; k < nt; k++) {
            t = back ? nt - 1 - k : k;
            if (m->fstate[t] == 2) continue;
            m->fstate[t] = 0;
            m->cur = t;
            m->tid = t;
#ifdef VT__EMU_UCONTEXT
            swapcontext(&m->sched_uc, &m->fuc[t]);
#else
            vt__emu_swap(&m->sched_sp, m->fsp[t]);
#endif
        }
        for (t = 0; t < nt; t++) { waiting += m->fstate[t] == 1; done += m->fstate[t] == 2; }
        if (!waiting) return;
        if (done) {
            if (!m->err[0])
                snprintf(m->err, sizeof m->err, "kernel %s, block %lld: %d threads returned while %d wait at __syncthreads()",
                         m->kname, (long long)m->bid, done, waiting);
            return;
        }
        round++;
    }
}

/* run fn over grid blocks of nt threads */
static int vt__emu_run(vt__emu *m, void (*fn)(const void *), const void *args, const char *name, int barriers,
                       int64_t grid, int nt) {
    int64_t q;
    uint64_t h;
    vt__emu *prev = vt__emu_now;
    m->launch++;
    h = vt__mix(m->seed ^ vt__mix(m->launch));
    m->fn = fn; m->args = args; m->kname = name; m->err[0] = 0;
    m->bdim = nt; m->gdim = grid; m->fibers = barriers;
    if (barriers && !vt__emu_grow_fibers(m, nt)) {
        snprintf(m->err, sizeof m->err, "kernel %s: out of memory for %d fiber stacks", name, nt);
        return 0;
    }
    vt__emu_now = m;
    for (q = 0; q < grid && !m->err[0]; q++) {
        m->bid = (h & 2) ? grid - 1 - q : q; /* blocks forward or backward */
        if (barriers) vt__emu_block_fibers(m, nt);
        else {
            int k;
            for (k = 0; k < nt; k++) {
                m->tid = (h & 4) ? nt - 1 - k : k;
                fn(args);
            }
        }
    }
    m->fibers = 0;
    vt__emu_now = prev;
    return !m->err[0];
}

/* --- emulated device memory -------------------------------------------------- */

static size_t vt__emu_page(void) { long p = sysconf(_SC_PAGESIZE); return p > 0 ? (size_t)p : 4096; }

static int vt__emu_mem_init(vt__emu *m) {
    const char *env = getenv("VTRAIN_EMU_GIB");
    size_t gib = env && atoi(env) > 0 ? (size_t)atoi(env) : 16;
    void *p;
    m->reserve = gib << 30;
#if defined(MAP_ANONYMOUS)
    p = mmap(NULL, m->reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS
#if defined(MAP_NORESERVE)
             | MAP_NORESERVE
#endif
             , -1, 0);
#else
    {
        int fd = open("/dev/zero", O_RDWR);
        if (fd < 0) return 0;
        p = mmap(NULL, m->reserve, PROT_NONE, MAP_PRIVATE, fd, 0);
        close(fd);
    }
#endif
    if (p == MAP_FAILED) return 0;
    m->mem = (unsigned char *)p;
    return 1;
}

/* device memory becomes readable inside the device layer only (with the
   guard off it stays readable) */
static void vt__emu_open(vt__emu *m) {
    size_t pg = vt__emu_page(), n = (m->top + pg - 1) / pg * pg;
    if (!m->guard) {
        if (n > m->rw) { mprotect(m->mem, n, PROT_READ | PROT_WRITE); m->rw = n; }
        return;
    }
    if (m->open++ == 0 && n > 0) {
        mprotect(m->mem, n, PROT_READ | PROT_WRITE);
        m->rw = n;
    }
}
static void vt__emu_close(vt__emu *m) {
    if (!m->guard) return;
    if (--m->open == 0 && m->rw) {
        mprotect(m->mem, m->rw, PROT_NONE);
        m->rw = 0;
    }
}

static void *vt__emu_malloc(vt__emu *m, size_t n) {
    int i;
    n = (n + 255) & ~(size_t)255; /* cuMemAlloc aligns to 256 bytes */
    if (!n) n = 256;
    for (i = 0; i < m->nal; i++) /* first fit among freed ranges */
        if (!m->al[i].used && m->al[i].size >= n) {
            if (m->al[i].size > n && m->nal < m->cal) { /* split */
                memmove(&m->al[i + 2], &m->al[i + 1], sizeof(vt__emu_alloc) * (size_t)(m->nal - i - 1));
                m->al[i + 1].off = m->al[i].off + n;
                m->al[i + 1].size = m->al[i].size - n;
                m->al[i + 1].used = 0;
                m->al[i].size = n;
                m->nal++;
            }
            m->al[i].used = 1;
            return m->mem + m->al[i].off;
        }
    if (m->top + n > m->reserve) return NULL;
    if (m->nal + 2 > m->cal) {
        int nc = m->cal * 2 + 64;
        vt__emu_alloc *q = (vt__emu_alloc *)realloc(m->al, sizeof(vt__emu_alloc) * (size_t)nc);
        if (!q) return NULL;
        m->al = q;
        m->cal = nc;
    }
    m->al[m->nal].off = m->top;
    m->al[m->nal].size = n;
    m->al[m->nal].used = 1;
    m->nal++;
    m->top += n;
    return m->mem + m->al[m->nal - 1].off;
}

static void vt__emu_free(vt__emu *m, void *p) {
    int i;
    size_t off = (size_t)((unsigned char *)p - m->mem);
    for (i = 0; i < m->nal; i++)
        if (m->al[i].off == off && m->al[i].used) {
            m->al[i].used = 0;
            if (i + 1 < m->nal && !m->al[i + 1].used) { /* merge with the next free range */
                m->al[i].size += m->al[i + 1].size;
                memmove(&m->al[i + 1], &m->al[i + 2], sizeof(vt__emu_alloc) * (size_t)(m->nal - i - 2));
                m->nal--;
            }
            if (i > 0 && !m->al[i - 1].used) {
                m->al[i - 1].size += m->al[i].size;
                memmove(&m->al[i], &m->al[i + 1], sizeof(vt__emu_alloc) * (size_t)(m->nal - i - 1));
                m->nal--;
            }
            return;
        }
}

static void vt__emu_destroy(vt__emu *m) {
    if (!m) return;
    if (m->mem) munmap(m->mem, m->reserve);
    free(m->stacks); free(m->fsp); free(m->fstate); free(m->al);
#ifdef VT__EMU_UCONTEXT
    free(m->fuc);
#endif
    free(m);
}
#endif /* VTRAIN_CUDA_EMU */

/* ==========================================================================
   >>cuda-args  one argument struct per kernel (passed by value; the same
   layout on the host and the device: 64-bit pointers, int64_t, double, int)
   ========================================================================== */

#define VTK_U 0x1p-53                /* = VT__U */
#define VTK_SAFE (1 + 0x1p-20)       /* = VT__SAFE */
#define VTK_LSB_NONE 100000          /* = VT__LSB_NONE */
#define VTK_GELU_S 0.79788456080286535588
#define VTK_GELU_A 0.044715
#define VTK_MAXB 256                 /* threads of a block in kernels that reduce */
#define VTK_NRED 6                   /* values one block reduction carries */
#define VTK_RBLK 2048                /* rounding: elements per block (256 threads x 8) */
#define VTK_RCAP 32                  /* rounding: entries a block keeps before its emit pass */
#define VTK_DIG 16384                /* = VT__DIG_BLOCK: values per 64 KiB digest block */

typedef struct { double *x; double *e; int acc; } vtk_out; /* an output: values, bounds (or NULL), accumulate */
typedef struct { int prob; double lambda; } vtk_bnd;         /* the bound mode, for gamma(n) */
typedef struct { int64_t i; uint32_t r, full; } vtk_ent;     /* a log entry: index, binary32 bits, full flag */
typedef struct { int64_t i; double v; } vtk_xent;            /* an index and a value */

typedef struct {
    double *x; const double *e; int64_t n;
    int mode;                  /* 0 the trainer's rule (e given), 1 cast, 2 look for NaN only */
    int compact, pass;         /* pass 0: count, keep, cast; pass 1: emit into out */
    double ef2, ef;            /* 2 ef (1 + 2^-20) as vt__round_task computes it, and ef */
    int64_t *counts, *nanb;    /* per block: entries, first NaN (-1: none) */
    vtk_ent *slot;             /* per block VTK_RCAP entries */
    const int64_t *offs;       /* pass 1: each block's first entry in out */
    vtk_ent *out;
} vtk_round_a;
typedef struct { const int64_t *counts, *nanb; int64_t nb; int64_t *offs, *summary; } vtk_round_scan_a;
typedef struct { const double *x, *e; const int64_t *idx; int64_t m; double *xo, *eo; } vtk_gather_a;
typedef struct { double *x; const vtk_xent *ents; int64_t m; } vtk_put_ents_a;
typedef struct { double *g; const double *h; int64_t n; int cast; } vtk_add_round_a;
typedef struct { double *x; const double *src; int64_t n; int nd; int64_t ne[4], nb[4]; } vtk_copy_nd_a;
typedef struct { vtk_out o; const double *dy; int64_t n, offs; int nd; int64_t ne[4], nb[4]; } vtk_view_bwd_a;
typedef struct { double *x, *e; const double *a, *b; int64_t n; int nd, op; int64_t ne[4], sa[4], sb[4]; } vtk_binary_a;
typedef struct {
    vtk_out o; const double *dy, *other; int64_t ns, r;
    int mul, nk, nf, nd, f32;
    double sign;
    int64_t ksize[4], kstr[4], fsize[4], fstr[4], ne[4], so[4];
    vtk_bnd bnd;
} vtk_binary_red_a;
typedef struct { vtk_out o; const double *in; int64_t n; double s; } vtk_scale_put_a;
typedef struct { vtk_out o; const double *X, *dy; int64_t n; } vtk_relu_a;
typedef struct { vtk_out o; const double *X, *dy; double *tc; int64_t n; int bwd; } vtk_gelu_a;
typedef struct { const double *in; double *out; } vtk_probe_a;
typedef struct { double *x; const vt__xblk *b; int nb; const int64_t *idx; int64_t n; } vtk_exact_a;
typedef struct { vtk_out o; const double *X, *Y, *dy; int64_t n; int bwd; } vtk_tanh_a;
typedef struct {
    vtk_out o; const double *X, *Y, *dy;
    int64_t R, n, causal;      /* causal = T: row r uses its first r % T + 1 columns */
    int logsm, bwd, f32; vtk_bnd bnd;
} vtk_softmax_a;
typedef struct {
    vtk_out o; const double *X; const int32_t *tg; int64_t R, V;
    double *l, *dl; const double *g; int bwd, f32; vtk_bnd bnd;
} vtk_ce_a;
typedef struct { vtk_out o; const double *l, *dl; int64_t R; int f32; vtk_bnd bnd; } vtk_ce_loss_a;
typedef struct { const double *A, *B; int64_t n; int kind, f32; double *part; } vtk_rpart_a;
typedef struct { vtk_out o; const double *part; int64_t nparts, n; int kind, f32; vtk_bnd bnd; } vtk_rfinal_a;
typedef struct { vtk_out o; const double *g; int64_t n; int mean; } vtk_fill_put_a;
typedef struct { vtk_out o0, o1; const double *A, *B, *g; int64_t n; } vtk_mse_bwd_a;
typedef struct {
    vtk_out o; const double *X, *W, *Bb, *dy; int64_t R, C; double eps;
    double *XH, *DX; int bwd, f32; vtk_bnd bnd;
} vtk_ln_a;
typedef struct { const double *X; int64_t R, C, chunk, nch; double *part, *mag, *mn; int f32; } vtk_colsum_part_a;
typedef struct {
    vtk_out o; const double *X, *part, *mag, *mn; int64_t R, C, nch, nterms; double G;
    const double *extra, *magp; int f32, bits; vtk_bnd bnd;
} vtk_colsum_fin_a;
typedef struct { const double *DX, *XH; int64_t R, C; double *extra, *magp; } vtk_colabs_a;
typedef struct { double *x; const double *tab; const int32_t *idx; int64_t P, C; } vtk_embed_fwd_a;
typedef struct {
    vtk_out o; const double *dy; const int64_t *vs, *start, *cnt, *list; int64_t nv, C; int f32; vtk_bnd bnd;
} vtk_embed_bwd_a;
typedef struct { double *x, *e; int64_t nbh, T; double scale; } vtk_att_post_a;
typedef struct { vtk_out o; const double *P, *PE; int64_t B, T, C, NH, hs; int part; double scale; } vtk_att_put_a;
typedef struct { double *x; int64_t rows, stride, off, width; } vtk_att_zero_a;
typedef struct { vtk_out o; const double *P, *PE; int64_t nbh, T; } vtk_att_datt_a;
typedef struct { vtk_out o; const double *in; int64_t n; uint64_t seed, stream; double p, s; } vtk_dropout_a;
typedef struct { vtk_out o; const double *src; int64_t outer, len, dstride, doff, sstride, soff; int exact; } vtk_copy2d_a;
typedef struct {
    double *w; const double *g; double *m, *v; int64_t n;
    int kind, phase, nesterov;
    double b1, b2, eps, wd, lr, bc1, bc2, mu, swd;
} vtk_optim_a;
typedef struct { const double *g; const int64_t *blo, *bhi; double *part; int f32; } vtk_sumsq_part_a;
typedef struct { const double *part; const int64_t *pfirst; int64_t np; double *out; int f32; } vtk_sumsq_fin_a;
typedef struct { double *g; double s; int64_t n; } vtk_scale_vec_a;
typedef struct { const double *x; int64_t n, nblk; unsigned char *out; } vtk_sha_a;
/* GEMM bound statistics of lines (rows of A, columns of B) in batches
   q = q1 nb2 + q2 at X + q1 s1 + q2 s2, line l at + l s_outer, element k at + k s_k */
typedef struct {
    const double *X; int64_t K, s_outer, s_k, nl, nb2, s1, s2, nlines, nparts;
    double *part, *n1, *n2, *mx, *th;
} vtk_stats_a;
typedef vtk_stats_a vtk_stats_rows_a;
typedef vtk_stats_a vtk_stats_cols_a;
typedef vtk_stats_a vtk_stats_fin_a;
typedef struct {
    int64_t M, N, nb2, total;
    const double *an1, *an2, *amx, *ath, *bn1, *bn2, *bmx, *bth;
    const double *C0; int64_t ldc, c1, c2;
    const double *bias; double G;
    double *E; int64_t lde, e1, e2;
} vtk_gbound_a;
typedef struct { double *C; int64_t ldc, c1, c2, nb2, M, N, total; const double *bias; int acc, f32; } vtk_mm_init_a;
typedef struct {
    double *C; int64_t ldc, c1, c2, nb2, M, N, total, nch;
    const double *P; const float *Pf; int f32;
} vtk_chunk_add_a;
typedef struct { float *dst; const double *src; int64_t n; } vtk_to_f32_a;
typedef struct { double *g; const double *A; int64_t nbat, M, K, sa; } vtk_gather_rows_a;

/* convolution, pooling, batch norm (op table 1) */
typedef struct {
    double *dst; const double *src;
    int64_t N, C, H, W, OH, OW, KH, KW, G, Cg, OCg, s, p, d, total;
    int dcol;                  /* 0: im2col of x; 1: dcol of dy */
} vtk_im2col_a;
typedef struct {
    vtk_out o; const double *X, *dy;
    int64_t NC, H, W, OH, OW, KH, KW, s, p, n;
    int max, bwd, f32; vtk_bnd bnd;
} vtk_pool_a;
typedef struct {
    vtk_out o, ow, ob, os;     /* BN_STATS: o; BATCHNORM2D: o (y or dx), ow (dw), ob (db), os (dstats) */
    const double *X, *W, *Bb, *st, *dy, *g;
    double *run;               /* BATCHNORM2D forward in training: the running statistics (2,C) */
    int64_t N, C, HW, M, n;
    double eps, mom;
    int mode;                  /* see vtk_bn */
    int f32; vtk_bnd bnd;
} vtk_bn_a;

/* Every kernel: name, 1 if it uses __syncthreads (runs on fibers in the
   emulator), the most threads per block it takes. Kernels that reduce take a
   power of two from 32 to VTK_MAXB threads. */
#define VT__KLIST(X)                                                                                 \
    X(vtk_round, 1, VTK_MAXB) X(vtk_round_scan, 1, VTK_MAXB) X(vtk_gather, 0, 1024)                  \
    X(vtk_put_ents, 0, 1024) X(vtk_add_round, 0, 1024) X(vtk_copy_nd, 0, 1024)                        \
    X(vtk_view_bwd, 0, 1024) X(vtk_binary, 0, 1024) X(vtk_binary_red, 0, 1024)                        \
    X(vtk_scale_put, 0, 1024) X(vtk_relu, 0, 1024) X(vtk_gelu, 0, 1024) X(vtk_tanh, 0, 1024)          \
    X(vtk_softmax, 1, VTK_MAXB) X(vtk_ce, 1, VTK_MAXB) X(vtk_ce_loss, 1, VTK_MAXB)                    \
    X(vtk_rpart, 1, VTK_MAXB) X(vtk_rfinal, 1, VTK_MAXB) X(vtk_fill_put, 0, 1024)                     \
    X(vtk_mse_bwd, 0, 1024) X(vtk_ln, 1, VTK_MAXB) X(vtk_colsum_part, 0, 1024)                        \
    X(vtk_colsum_fin, 0, 1024) X(vtk_colabs, 0, 1024) X(vtk_embed_fwd, 0, 1024)                       \
    X(vtk_embed_bwd, 0, 1024) X(vtk_att_post, 0, 1024) X(vtk_att_put, 0, 1024)                        \
    X(vtk_att_zero, 0, 1024) X(vtk_att_datt, 0, 1024) X(vtk_dropout, 0, 1024) X(vtk_copy2d, 0, 1024)  \
    X(vtk_optim, 0, 1024) X(vtk_sumsq_part, 1, VTK_MAXB) X(vtk_sumsq_fin, 0, 1024)                    \
    X(vtk_scale_vec, 0, 1024) X(vtk_sha, 0, 1024) X(vtk_stats_rows, 1, VTK_MAXB)                      \
    X(vtk_stats_cols, 0, 1024) X(vtk_stats_fin, 0, 1024) X(vtk_gbound, 0, 1024)                       \
    X(vtk_mm_init, 0, 1024) X(vtk_chunk_add, 0, 1024) X(vtk_to_f32, 0, 1024) X(vtk_gather_rows, 0, 1024)  \
    X(vtk_probe, 0, 1024) X(vtk_exact, 0, 1024)                                                       \
    X(vtk_im2col, 0, 1024) X(vtk_pool, 0, 1024) X(vtk_bn, 1, VTK_MAXB)

#if VTK_KERNELS
/* ==========================================================================
   >>cuda-kernels

   Thread layouts: elementwise kernels are grid-stride loops over n; "row"
   kernels take one block per row (softmax, cross-entropy, layernorm, the
   GEMM statistics); reductions over a whole tensor take per-block partials
   and a one-block final kernel that combines them in block order.
   ========================================================================== */

#define VTK_LOOP(i, n) for (i = VTK_BID * VTK_BDIM + VTK_TID; i < (n); i += VTK_GDIM * VTK_BDIM)

/* gamma(n) and its probabilistic variant: vt__gam, vt__g, vt__gsum */
VTK_DEV double vtk_gam(int64_t n) { double t = (double)n * VTK_U; return t / (1 - t); }
VTK_DEV double vtk_g(const vtk_bnd *b, int64_t n) {
    double s = vtk_gam(n);
    if (b->prob) {
        double p = b->lambda * sqrt((double)n) * VTK_U;
        p = p * (1 + p) + 2 * (double)n * VTK_U * VTK_U;
        if (p < s) return p;
    }
    return s;
}
VTK_DEV double vtk_gsum(const vtk_bnd *b, int64_t n) { return n <= 2 ? 0.0 : vtk_g(b, n - 1); }

/* the lowest set bit of x (vt__lsb) */
VTK_DEV int vtk_lsb(double x) {
    uint64_t bits, m;
    int ex;
    if (x == 0 || !isfinite(x)) return VTK_LSB_NONE;
    bits = VTK_DBITS(x);
    ex = (int)((bits >> 52) & 0x7ff);
    m = bits & (((uint64_t)1 << 52) - 1);
    if (ex) m |= (uint64_t)1 << 52;
    else ex = 1;
    return ex - 1075 + (int)VTK_CTZ64(m);
}
/* vt__sum_bound: 0 when a sum of exact terms is exact in any order */
VTK_DEV double vtk_sum_bound(const vtk_bnd *b, int64_t n, double mag, int L) {
    if (L >= VTK_LSB_NONE / 2 || mag * (1 + 0x1p-40) < ldexp(1.0, L + 53 < 1100 ? L + 53 : 1100)) return 0;
    return vtk_gsum(b, n) * mag;
}
VTK_DEV double vtk_th(int L) { return L >= VTK_LSB_NONE ? VTK_INF : ldexp(1.0, L + 53 < 1023 ? L + 53 : 1023); }
VTK_DEV int32_t vtk_key(float f) {
    uint32_t b = VTK_FBITS(f);
    return (b & 0x80000000u) ? -1 - (int32_t)(b & 0x7fffffffu) : (int32_t)b;
}
/* VT__ACC: native mode rounds every accumulation to binary32 */
VTK_DEV double vtk_acc(int f32, double v) { return f32 ? (double)(float)v : v; }
/* vt__put: x = (acc ? old : 0) + v, the add costing u|x| unless v is exact */
VTK_DEV void vtk_put(const vtk_out *o, int64_t i, double v, double ev) {
    if (o->acc) {
        double old = o->x[i], s = old + v;
        if (ev > 0) ev += VTK_U * fabs(s);
        v = s;
    }
    o->x[i] = v;
    if (o->e) o->e[i] = ev;
}
/* vt_rng_u64: Philox4x32-10 */
VTK_DEV uint64_t vtk_rng_u64(uint64_t seed, uint64_t stream, uint64_t index) {
    uint32_t c0 = (uint32_t)index, c1 = (uint32_t)(index >> 32), c2 = (uint32_t)stream, c3 = (uint32_t)(stream >> 32);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    int r;
    for (r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0; c1 = (uint32_t)p1; c2 = n2; c3 = (uint32_t)p0;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    return ((uint64_t)c1 << 32) | c0;
}

/* Block reductions: a fixed two-level order (16 segments of bdim/16 threads,
   then the 16 partials), three barriers, every thread gets the result. Ops:
   0 sum, 1 sum rounded to binary32 after every add, 2 max, 3 min. Shared
   memory per kernel: one vtk_redbuf. */
typedef struct { double s[VTK_NRED][VTK_MAXB]; double p[VTK_NRED][17]; } vtk_redbuf;
VTK_DEV double vtk_comb(int op, double a, double b) {
    if (op == 0) return a + b;
    if (op == 1) return (double)(float)(a + b);
    if (op == 2) return b > a ? b : a;
    return b < a ? b : a;
}
VTK_DEV void vtk_bred(double *v, const int *ops, int nv, vtk_redbuf *sh) {
    int t = VTK_TID, seg = VTK_BDIM / 16, q, i;
    for (q = 0; q < nv; q++) sh->s[q][t] = v[q];
    VTK_SYNC();
    if (t < 16)
        for (q = 0; q < nv; q++) {
            double a = sh->s[q][t * seg];
            for (i = 1; i < seg; i++) a = vtk_comb(ops[q], a, sh->s[q][t * seg + i]);
            sh->p[q][t] = a;
        }
    VTK_SYNC();
    if (t == 0)
        for (q = 0; q < nv; q++) {
            double a = sh->p[q][0];
            for (i = 1; i < 16; i++) a = vtk_comb(ops[q], a, sh->p[q][i]);
            sh->p[q][16] = a;
        }
    VTK_SYNC();
    for (q = 0; q < nv; q++) v[q] = sh->p[q][16];
}
/* exclusive prefix sum over the block, the same two-level order */
typedef struct { int64_t s[VTK_MAXB]; int64_t p[17]; } vtk_scanbuf;
VTK_DEV int64_t vtk_bscan(int64_t v, int64_t *total, vtk_scanbuf *sh) {
    int t = VTK_TID, seg = VTK_BDIM / 16, i;
    sh->s[t] = v;
    VTK_SYNC();
    if (t < 16) {
        int64_t a = 0;
        for (i = 0; i < seg; i++) { a += sh->s[t * seg + i]; sh->s[t * seg + i] = a; }
        sh->p[t] = a;
    }
    VTK_SYNC();
    if (t == 0) {
        int64_t a = 0;
        for (i = 0; i < 16; i++) { int64_t b = sh->p[i]; sh->p[i] = a; a += b; }
        sh->p[16] = a;
    }
    VTK_SYNC();
    *total = sh->p[16];
    return sh->s[t] - v + sh->p[t / seg];
}

/* --- rounding points (vt__round_task, vt__cast_task, vt__nan_task) ----------

   One block rounds VTK_RBLK consecutive elements, 256 threads x 8. Pass 0
   decides per element whether it needs a log entry (exactly the CPU rule:
   RNE32(x - w) != RNE32(x + w), w = e ef2 + 2^-50 |x|; compact where
   vt__compact_ok says so), finds the first NaN, counts the block's
   entries, keeps them in its slot when they fit and casts x to binary32.
   vtk_round_scan turns counts into offsets. Pass 1 copies each block's kept
   entries to their place, or, for a block that had more than fit, computes
   them again (x is still unrounded there) and casts. Entries come out in
   index order. */
VTK_DEV int vtk_round_codes(const vtk_round_a *a, int64_t base, unsigned char *code, int64_t *nan) {
    int t = VTK_TID, j;
    int64_t mynan = -1;
    for (j = 0; j < 8; j++) {
        int64_t i = base + j * 256 + t;
        unsigned char cd = 0;
        if (i < a->n) {
            double xv = a->x[i];
            if (xv != xv) { if (mynan < 0) mynan = i; }
            else if (a->mode == 0) {
                double ev = a->e[i], w = ev * a->ef2 + (ev > 0 ? fabs(xv) * 0x1p-50 : 0.0);
                float fl = (float)(xv - w), fh = (float)(xv + w);
                if (VTK_FBITS(fl) != VTK_FBITS(fh) && ev > 0) {
                    cd = 2;
                    if (a->compact) { /* vt__compact_ok */
                        double W = 4.01 * ev + fabs(xv) * 0x1p-48;
                        cd = (int64_t)vtk_key((float)(xv + W)) - (int64_t)vtk_key((float)(xv - W)) <= 255 ? 1 : 2;
                    }
                }
            }
        }
        code[j * 256 + t] = cd;
    }
    *nan = mynan;
    return 0;
}
VTK_DEV void vtk_round_write(const vtk_round_a *a, int64_t base, const unsigned char *code, int64_t pos, vtk_ent *dst) {
    int t = VTK_TID, j;
    for (j = 0; j < 8; j++) {
        int p = t * 8 + j;
        if (code[p]) {
            vtk_ent en;
            en.i = base + p;
            en.r = VTK_FBITS((float)a->x[base + p]);
            en.full = code[p] == 2;
            dst[pos++] = en;
        }
    }
}
VTK_DEV void vtk_round_cast(const vtk_round_a *a, int64_t base) {
    int t = VTK_TID, j;
    if (a->mode == 2) return;
    for (j = 0; j < 8; j++) {
        int64_t i = base + j * 256 + t;
        if (i < a->n) a->x[i] = (double)(float)a->x[i];
    }
}
VTK_GLOBAL vtk_round(vtk_round_a a) {
    VTK_SHARED unsigned char code[VTK_RBLK];
    VTK_SHARED vtk_scanbuf sb;
    VTK_SHARED vtk_redbuf rb;
    int t = VTK_TID, j;
    int64_t blk = VTK_BID, base = blk * VTK_RBLK, nan, mine = 0, pos, total;
    double v[1];
    int ops[1];
    if (a.pass == 1) {
        int64_t cnt = a.counts[blk], k;
        if (cnt == 0) return;
        if (cnt <= VTK_RCAP) {
            for (k = t; k < cnt; k += VTK_BDIM) a.out[a.offs[blk] + k] = a.slot[blk * VTK_RCAP + k];
            return;
        }
    }
    vtk_round_codes(&a, base, code, &nan);
    VTK_SYNC();
    for (j = 0; j < 8; j++) mine += code[t * 8 + j] != 0;
    pos = vtk_bscan(mine, &total, &sb);
    if (a.pass == 0) {
        v[0] = nan < 0 ? VTK_INF : (double)nan;
        ops[0] = 3;
        vtk_bred(v, ops, 1, &rb);
        if (t == 0) { a.counts[blk] = total; a.nanb[blk] = v[0] == VTK_INF ? -1 : (int64_t)v[0]; }
        if (total > VTK_RCAP) return; /* uniform: pass 1 handles this block */
        vtk_round_write(&a, base, code, pos, a.slot + blk * VTK_RCAP);
    } else {
        vtk_round_write(&a, base, code, pos, a.out + a.offs[blk]);
    }
    VTK_SYNC(); /* every entry read its x before any is cast */
    vtk_round_cast(&a, base);
}
/* one block: offsets of the blocks' entries, the total, the first NaN */
VTK_GLOBAL vtk_round_scan(vtk_round_scan_a a) {
    VTK_SHARED vtk_scanbuf sb;
    VTK_SHARED vtk_redbuf rb;
    int t = VTK_TID;
    int64_t per = (a.nb + VTK_BDIM - 1) / VTK_BDIM, lo = t * per, hi = lo + per, b, s = 0, pos, total;
    double v[1], nan = VTK_INF;
    int ops[1];
    if (hi > a.nb) hi = a.nb;
    for (b = lo; b < hi; b++) {
        s += a.counts[b];
        if (a.nanb[b] >= 0 && (double)a.nanb[b] < nan) nan = (double)a.nanb[b];
    }
    pos = vtk_bscan(s, &total, &sb);
    for (b = lo; b < hi; b++) { a.offs[b] = pos; pos += a.counts[b]; }
    v[0] = nan;
    ops[0] = 3;
    vtk_bred(v, ops, 1, &rb);
    if (t == 0) { a.summary[0] = total; a.summary[1] = v[0] == VTK_INF ? -1 : (int64_t)v[0]; }
}
/* the auditor's side: x and e at the logged indices; logged values put back */
VTK_GLOBAL vtk_gather(vtk_gather_a a) {
    int64_t k;
    VTK_LOOP(k, a.m) { a.xo[k] = a.x[a.idx[k]]; a.eo[k] = a.e ? a.e[a.idx[k]] : 0; }
}
VTK_GLOBAL vtk_put_ents(vtk_put_ents_a a) {
    int64_t k;
    VTK_LOOP(k, a.m) a.x[a.ents[k].i] = a.ents[k].v;
}
/* g = RNE32(g + h): the second gradient of a tensor an op reads twice */
VTK_GLOBAL vtk_add_round(vtk_add_round_a a) {
    int64_t i;
    VTK_LOOP(i, a.n) {
        double s = a.g[i] + a.h[i];
        a.g[i] = a.cast ? (double)(float)s : s;
    }
}

/* --- copy, view, broadcasting add/sub/mul, scale (vt__k_copy ... vt__k_scale) --- */

VTK_DEV int64_t vtk_off(int nd, const int64_t *ne, const int64_t *nb, int64_t li) {
    int64_t off = 0;
    int d;
    for (d = nd - 1; d >= 0; d--) { off += (li % ne[d]) * nb[d]; li /= ne[d]; }
    return off;
}
VTK_GLOBAL vtk_copy_nd(vtk_copy_nd_a a) {
    int64_t i;
    VTK_LOOP(i, a.n) a.x[i] = a.src[vtk_off(a.nd, a.ne, a.nb, i)];
}
VTK_GLOBAL vtk_view_bwd(vtk_view_bwd_a a) {
    int64_t i;
    VTK_LOOP(i, a.n) {
        int64_t p = a.offs + vtk_off(a.nd, a.ne, a.nb, i);
        if (a.o.acc) {
            double v = a.o.x[p] + a.dy[i];
            a.o.x[p] = v;
            if (a.o.e) a.o.e[p] = VTK_U * fabs(v);
        } else a.o.x[p] = a.dy[i];
    }
}
VTK_GLOBAL vtk_binary(vtk_binary_a a) {
    int64_t i;
    VTK_LOOP(i, a.n) {
        double av = a.a[vtk_off(a.nd, a.ne, a.sa, i)], bv = a.b[vtk_off(a.nd, a.ne, a.sb, i)], v;
        v = a.op == 0 ? av + bv : a.op == 1 ? av - bv : av * bv;
        a.x[i] = v;
        if (a.e) a.e[i] = 0;
    }
}
/* the gradient of a broadcast operand: target j sums the r output positions
   that read it (kept dims from j, free dims from q), in output order */
VTK_GLOBAL vtk_binary_red(vtk_binary_red_a a) {
    int64_t j;
    VTK_LOOP(j, a.ns) {
        int64_t base = 0, rem = j, q, m = 0;
        double old = a.o.acc ? a.o.x[j] : 0, s = 0, mag = 0;
        int d, L = a.o.acc ? vtk_lsb(old) : VTK_LSB_NONE;
        for (d = a.nk - 1; d >= 0; d--) { base += (rem % a.ksize[d]) * a.kstr[d]; rem /= a.ksize[d]; }
        for (q = 0; q < a.r; q++) {
            int64_t i = base, qq = q, term_i;
            double term;
            for (d = a.nf - 1; d >= 0; d--) { i += (qq % a.fsize[d]) * a.fstr[d]; qq /= a.fsize[d]; }
            term_i = i;
            term = a.mul ? a.dy[term_i] * a.other[vtk_off(a.nd, a.ne, a.so, term_i)] : a.sign * a.dy[term_i];
            s = vtk_acc(a.f32, s + term);
            mag += fabs(term);
            { int l = vtk_lsb(term); if (l < L) L = l; }
            m++;
        }
        a.o.x[j] = a.o.acc ? old + s : s;
        if (a.o.e) a.o.e[j] = vtk_sum_bound(&a.bnd, m + (a.o.acc ? 1 : 0), fabs(old) + mag, L);
    }
}
VTK_GLOBAL vtk_scale_put(vtk_scale_put_a a) {
    int64_t i;
    VTK_LOOP(i, a.n) vtk_put(&a.o, i, a.in[i] * a.s, 0);
}

/* --- relu, gelu, tanh (vt__k_relu, vt__gelu_task, vt__tanh_task) ------------ */

VTK_GLOBAL vtk_relu(vtk_relu_a a) {
    int64_t i;
    VTK_LOOP(i, a.n) {
        if (!a.dy) a.o.x[i] = a.X[i] > 0 ? a.X[i] : 0.0;
        else vtk_put(&a.o, i, a.X[i] > 0 ? a.dy[i] : 0.0, 0);
    }
}
/* the start-up probe (vt__cu_probe): a*b + c as written, and vtrain's own
   exp and log, from values the compiler cannot see */
VTK_GLOBAL vtk_probe(vtk_probe_a a) {
    if (VTK_TID == 0 && VTK_BID == 0) {
        double x = a.in[0], y = a.in[1], z = a.in[2];
        a.out[0] = x * y + z;
        a.out[1] = vt__dexp(a.in[3]);
        a.out[2] = vt__dlog(a.in[4]);
    }
}

/* the correctly rounded products' fallback (vt__cpu_exact): each entry's
   value exactly, one thread each (they are rare: where the bound cannot
   decide) */
VTK_GLOBAL vtk_exact(vtk_exact_a a) {
    int64_t q;
    VTK_LOOP(q, a.n) a.x[a.idx[q]] = vt__xprod_value(a.b, a.nb, a.idx[q]);
}

/* GELU as x sigmoid(2z), vtrain's own sigmoid: the same bits everywhere, no bound */
VTK_GLOBAL vtk_gelu(vtk_gelu_a a) {
    int64_t i;
    VTK_LOOP(i, a.n) {
        double x = a.X[i], sg;
        if (a.bwd && a.tc) sg = a.tc[i];
        else {
            double x3 = x * x * x, z = VTK_GELU_S * (x + VTK_GELU_A * x3);
            sg = vt__dsigmoid(2 * z);
            if (a.tc) a.tc[i] = sg;
        }
        if (!a.bwd) a.o.x[i] = x * sg;
        else {
            double d = sg + 2 * x * (sg * (1 - sg)) * (VTK_GELU_S * (1 + 3 * VTK_GELU_A * x * x));
            vtk_put(&a.o, i, a.dy[i] * d, 0);
        }
    }
}
VTK_GLOBAL vtk_tanh(vtk_tanh_a a) {
    int64_t i;
    VTK_LOOP(i, a.n) {
        if (!a.bwd) a.o.x[i] = vt__dtanh(a.X[i]);
        else {
            double v = a.dy[i] * (1 - a.Y[i] * a.Y[i]);
            vtk_put(&a.o, i, v, 0);
        }
    }
}

/* --- softmax, log-softmax, attention softmax (vt__softmax_row & co.) ------ */

/* one row per block: m = max, exp(x - m) (kept in y), s, eps_s = gsum(n) */
VTK_DEV double vtk_sm_stats(const double *x, double *y, int64_t n, int f32, const vtk_bnd *bnd, double *m_out,
                            double *eps_s, vtk_redbuf *rb) {
    int t = VTK_TID, nt = VTK_BDIM, ops[1];
    int64_t i;
    double v[1], m = -VTK_INF, s = 0;
    for (i = t; i < n; i += nt) if (x[i] > m) m = x[i];
    v[0] = m; ops[0] = 2;
    vtk_bred(v, ops, 1, rb);
    m = v[0];
    for (i = t; i < n; i += nt) {
        double ej = vtk_acc(f32, vt__dexp(x[i] - m));
        if (y) y[i] = ej;
        s = vtk_acc(f32, s + ej);
    }
    v[0] = s; ops[0] = f32 ? 1 : 0;
    vtk_bred(v, ops, 1, rb);
    *eps_s = vtk_gsum(bnd, n);
    *m_out = m;
    return v[0];
}
VTK_GLOBAL vtk_softmax(vtk_softmax_a a) {
    VTK_SHARED vtk_redbuf rb;
    int t = VTK_TID, nt = VTK_BDIM, ops[2];
    int64_t r = VTK_BID, L = a.n, n = a.causal ? r % a.causal + 1 : L, i;
    double v[2];
    if (!a.bwd) {
        const double *x = a.X + r * L;
        double *y = a.o.x + r * L, *e = a.o.e ? a.o.e + r * L : (double *)0, m, eps_s;
        double s = vtk_sm_stats(x, y, n, a.f32, &a.bnd, &m, &eps_s, &rb);
        if (a.logsm) {
            double Lg = vtk_acc(a.f32, vt__dlog(s)), dL = 1.01 * eps_s + VT__DLOG_ERR * fabs(Lg);
            for (i = t; i < n; i += nt) {
                double val = (x[i] - m) - Lg;
                y[i] = val;
                if (e) e[i] = eps_s > 0 ? 1.01 * (dL + VTK_U * fabs(val)) : 0;
            }
        } else {
            for (i = t; i < n; i += nt) {
                double val = y[i] / s;
                y[i] = val;
                if (e) e[i] = eps_s > 0 ? 1.01 * val * (eps_s + VTK_U) : 0;
            }
        }
        for (i = n + t; i < L; i += nt) { y[i] = 0; if (e) e[i] = 0; }
    } else {
        const double *y = a.Y + r * L, *dy = a.dy + r * L;
        if (a.logsm) {
            /* dx = dy - exp(y) S, S = sum dy */
            double S = 0, mag = 0, dS;
            for (i = t; i < n; i += nt) { S = vtk_acc(a.f32, S + dy[i]); mag += fabs(dy[i]); }
            v[0] = S; v[1] = mag; ops[0] = a.f32 ? 1 : 0; ops[1] = 0;
            vtk_bred(v, ops, 2, &rb);
            S = v[0];
            dS = vtk_gsum(&a.bnd, n) * v[1];
            for (i = t; i < L; i += nt) {
                double p = vt__dexp(y[i]), q = p * S, val = dy[i] - q;
                vtk_put(&a.o, r * L + i, val, dS > 0 ? 1.01 * (p * dS + VTK_U * fabs(q) + VTK_U * fabs(val)) : 0);
            }
        } else {
            /* dx = y (dy - D), D = sum dy y */
            double D = 0, mag = 0, dD;
            for (i = t; i < n; i += nt) {
                D = vtk_acc(a.f32, D + vtk_acc(a.f32, dy[i] * y[i]));
                mag += fabs(dy[i] * y[i]);
            }
            v[0] = D; v[1] = mag; ops[0] = a.f32 ? 1 : 0; ops[1] = 0;
            vtk_bred(v, ops, 2, &rb);
            D = v[0];
            dD = vtk_gsum(&a.bnd, n) * v[1];
            for (i = t; i < L; i += nt) {
                double dd = i < n ? dy[i] - D : 0, val = i < n ? y[i] * dd : 0;
                vtk_put(&a.o, r * L + i, val, dD > 0 ? 1.01 * (fabs(y[i]) * (dD + VTK_U * fabs(dd)) + VTK_U * fabs(val)) : 0);
            }
        }
    }
}

/* --- cross-entropy (vt__ce_task, vt__k_cross_entropy) ---------------------- */

VTK_GLOBAL vtk_ce(vtk_ce_a a) {
    VTK_SHARED vtk_redbuf rb;
    int t = VTK_TID, nt = VTK_BDIM;
    int64_t r = VTK_BID, V = a.V, i;
    const double *x = a.X + r * V;
    int32_t tg = a.tg[r];
    double m, eps_s, s = vtk_sm_stats(x, (double *)0, V, a.f32, &a.bnd, &m, &eps_s, &rb);
    double Lg = vtk_acc(a.f32, vt__dlog(s));
    if (!a.bwd) {
        if (t == 0) {
            double l = Lg - (x[tg] - m);
            a.l[r] = vtk_acc(a.f32, l);
            a.dl[r] = eps_s > 0 ? 1.01 * eps_s + VT__DLOG_ERR * fabs(Lg) + VTK_U * fabs(l) : 0;
        }
    } else {
        double g = a.g[0], coef = g / (double)a.R;
        for (i = t; i < V; i += nt) {
            double p = vtk_acc(a.f32, vt__dexp(x[i] - m)) / s, oh = (i == tg) ? 1.0 : 0.0, diff = p - oh, v = diff * coef;
            double dp = 1.01 * p * (eps_s + VTK_U);
            vtk_put(&a.o, r * V + i, v, eps_s > 0 ? 1.01 * (fabs(coef) * (dp + VTK_U * fabs(diff)) + VTK_U * fabs(v)) : 0);
        }
    }
}
/* one block: the mean of the rows' losses and its bound */
VTK_GLOBAL vtk_ce_loss(vtk_ce_loss_a a) {
    VTK_SHARED vtk_redbuf rb;
    int t = VTK_TID, ops[3];
    int64_t i;
    double v[3] = {0, 0, 0};
    for (i = t; i < a.R; i += VTK_BDIM) { v[0] = vtk_acc(a.f32, v[0] + a.l[i]); v[1] += a.l[i]; v[2] += a.dl[i]; }
    ops[0] = a.f32 ? 1 : 0; ops[1] = 0; ops[2] = 0;
    vtk_bred(v, ops, 3, &rb);
    if (t == 0) {
        double loss = v[0] / (double)a.R;
        a.o.x[0] = loss;
        if (a.o.e) {
            double gs = vtk_gsum(&a.bnd, a.R);
            a.o.e[0] = v[2] > 0 || gs > 0 ? 1.01 * ((v[2] + gs * v[1]) / (double)a.R + VTK_U * fabs(loss)) : 0;
        }
    }
}

/* --- sum, mean, mse (vt__k_reduce, vt__k_mse) ------------------------------ */

/* per block: kind 0 (sum of A, sum |A|, lowest bit) or 1 (sum of (A - B)^2 twice) */
VTK_GLOBAL vtk_rpart(vtk_rpart_a a) {
    VTK_SHARED vtk_redbuf rb;
    int ops[3];
    int64_t i;
    double v[3] = {0, 0, (double)VTK_LSB_NONE};
    VTK_LOOP(i, a.n) {
        if (a.kind == 0) {
            double x = a.A[i];
            int l = vtk_lsb(x);
            v[0] = vtk_acc(a.f32, v[0] + x);
            v[1] += fabs(x);
            if ((double)l < v[2]) v[2] = (double)l;
        } else {
            double di = a.A[i] - a.B[i], d = vtk_acc(a.f32, di * di);
            v[0] = vtk_acc(a.f32, v[0] + d);
            v[1] += d;
        }
    }
    ops[0] = a.f32 ? 1 : 0; ops[1] = 0; ops[2] = 3;
    vtk_bred(v, ops, 3, &rb);
    if (VTK_TID == 0) { a.part[3 * VTK_BID] = v[0]; a.part[3 * VTK_BID + 1] = v[1]; a.part[3 * VTK_BID + 2] = v[2]; }
}
/* one block: kind 0 sum, 1 mean, 2 mse */
VTK_GLOBAL vtk_rfinal(vtk_rfinal_a a) {
    VTK_SHARED vtk_redbuf rb;
    int t = VTK_TID, ops[3];
    int64_t b;
    double v[3] = {0, 0, (double)VTK_LSB_NONE};
    for (b = t; b < a.nparts; b += VTK_BDIM) {
        v[0] = vtk_acc(a.f32, v[0] + a.part[3 * b]);
        v[1] += a.part[3 * b + 1];
        if (a.part[3 * b + 2] < v[2]) v[2] = a.part[3 * b + 2];
    }
    ops[0] = a.f32 ? 1 : 0; ops[1] = 0; ops[2] = 3;
    vtk_bred(v, ops, 3, &rb);
    if (t == 0) {
        double s = v[0], mag = v[1], n = (double)a.n;
        if (a.kind == 2) {
            double loss = s / n;
            a.o.x[0] = loss;
            if (a.o.e) a.o.e[0] = a.n > 2 ? 1.01 * (vtk_gsum(&a.bnd, a.n) * mag / n + VTK_U * fabs(loss)) : 0;
        } else {
            double es = vtk_sum_bound(&a.bnd, a.n, mag, (int)v[2]);
            if (a.kind == 0) {
                a.o.x[0] = s;
                if (a.o.e) a.o.e[0] = es;
            } else {
                double m = s / n;
                a.o.x[0] = m;
                if (a.o.e) a.o.e[0] = es == 0 ? 0 : 1.01 * (es / n + VTK_U * fabs(m));
            }
        }
    }
}
/* backward of sum and mean: every element gets g (or g / n) */
VTK_GLOBAL vtk_fill_put(vtk_fill_put_a a) {
    int64_t i;
    double g = a.g[0], v = a.mean ? g / (double)a.n : g;
    VTK_LOOP(i, a.n) vtk_put(&a.o, i, v, 0);
}
VTK_GLOBAL vtk_mse_bwd(vtk_mse_bwd_a a) {
    int64_t i;
    double g = a.g[0], coef = 2 * g / (double)a.n;
    VTK_LOOP(i, a.n) {
        double v = coef * (a.A[i] - a.B[i]);
        if (a.o0.x) vtk_put(&a.o0, i, v, 0);
        if (a.o1.x) vtk_put(&a.o1, i, -v, 0);
    }
}

/* --- layernorm (vt__ln_row, vt__ln_task, vt__k_layernorm) ------------------ */

typedef struct { double mu, dmu, rstd, rho; } vtk_lns;
VTK_DEV vtk_lns vtk_ln_row(const double *x, int64_t C, double eps, int f32, const vtk_bnd *bnd, vtk_redbuf *rb) {
    vtk_lns s;
    int t = VTK_TID, nt = VTK_BDIM, ops[2];
    int64_t i;
    double v[2] = {0, 0}, var, dvar, vv;
    for (i = t; i < C; i += nt) { v[0] = vtk_acc(f32, v[0] + x[i]); v[1] += fabs(x[i]); }
    ops[0] = f32 ? 1 : 0; ops[1] = 0;
    vtk_bred(v, ops, 2, rb);
    s.mu = vtk_acc(f32, v[0] / (double)C);
    s.dmu = vtk_g(bnd, C + 1) * v[1] / (double)C;
    v[0] = 0;
    for (i = t; i < C; i += nt) {
        double d = vtk_acc(f32, x[i] - s.mu);
        v[0] = f32 ? vtk_acc(1, v[0] + vtk_acc(1, d * d)) : v[0] + d * d;
    }
    vtk_bred(v, ops, 1, rb);
    var = vtk_acc(f32, v[0] / (double)C);
    dvar = vtk_g(bnd, C + 4) * var + s.dmu * s.dmu;
    vv = var + eps;
    s.rstd = vtk_acc(f32, 1.0 / sqrt(vv));
    s.rho = 1.01 * ((dvar + VTK_U * vv) / (2 * vv) + 2 * VTK_U);
    return s;
}
VTK_DEV double vtk_ln_dxhat(const vtk_lns *s, double d, double xhat) {
    return (s->dmu + VTK_U * fabs(d)) * s->rstd + fabs(d) * s->rstd * s->rho + VTK_U * fabs(xhat);
}
VTK_GLOBAL vtk_ln(vtk_ln_a a) {
    VTK_SHARED vtk_redbuf rb;
    int t = VTK_TID, nt = VTK_BDIM, ops[5];
    int64_t r = VTK_BID, C = a.C, i;
    const double *x = a.X + r * C;
    vtk_lns s = vtk_ln_row(x, C, a.eps, a.f32, &a.bnd, &rb);
    if (!a.bwd) {
        for (i = t; i < C; i += nt) {
            double d = vtk_acc(a.f32, x[i] - s.mu), xhat = vtk_acc(a.f32, d * s.rstd), yw = xhat * a.W[i], v = yw + a.Bb[i];
            a.o.x[r * C + i] = v;
            if (a.o.e) a.o.e[r * C + i] = 1.01 * (fabs(a.W[i]) * vtk_ln_dxhat(&s, d, xhat) + VTK_U * fabs(yw) + VTK_U * fabs(v));
        }
    } else {
        const double *dy = a.dy + r * C;
        double v[5] = {0, 0, 0, 0, 0}, m1, m2, dm1, dm2;
        for (i = t; i < C; i += nt) {
            double d = vtk_acc(a.f32, x[i] - s.mu), xh = vtk_acc(a.f32, d * s.rstd), dn = vtk_acc(a.f32, dy[i] * a.W[i]);
            v[0] = vtk_acc(a.f32, v[0] + dn);
            v[1] += fabs(dn);
            v[2] += fabs(dn * xh);
            v[3] += fabs(dn) * vtk_ln_dxhat(&s, d, xh);
            v[4] = vtk_acc(a.f32, v[4] + vtk_acc(a.f32, dn * xh));
        }
        ops[0] = a.f32 ? 1 : 0; ops[1] = 0; ops[2] = 0; ops[3] = 0; ops[4] = ops[0];
        vtk_bred(v, ops, 5, &rb);
        m1 = vtk_acc(a.f32, v[0] / (double)C);
        m2 = vtk_acc(a.f32, v[4] / (double)C);
        dm1 = vtk_g(&a.bnd, C + 2) * v[1] / (double)C;
        dm2 = (v[3] + vtk_g(&a.bnd, C + 2) * v[2]) / (double)C + VTK_U * fabs(m2);
        for (i = t; i < C; i += nt) {
            double d = vtk_acc(a.f32, x[i] - s.mu), xh = vtk_acc(a.f32, d * s.rstd), dn = vtk_acc(a.f32, dy[i] * a.W[i]);
            if (a.o.x) {
                double inner = dn - m1 - xh * m2, val = s.rstd * inner;
                double di = VTK_U * fabs(dn) + dm1 + fabs(xh) * dm2 + fabs(m2) * vtk_ln_dxhat(&s, d, xh) +
                            3 * VTK_U * (fabs(dn) + fabs(m1) + fabs(xh * m2));
                vtk_put(&a.o, r * C + i, val, 1.01 * (s.rstd * di + fabs(inner) * s.rstd * s.rho + VTK_U * fabs(val)));
            }
            if (a.XH) {
                a.XH[r * C + i] = vtk_acc(a.f32, dy[i] * xh);
                a.DX[r * C + i] = fabs(dy[i]) * vtk_ln_dxhat(&s, d, xh);
            }
        }
    }
}

/* --- column sums in fixed-order chunks (vt__colsum) -------------------------
   Part: thread (chunk, column) sums its chunk's rows in order; fin: thread
   per column adds the chunk partials in chunk order. The bound: the CPU's
   G (sum |X| + |old|), or 0 when the whole sum is exact, with the CPU's
   lowest bit L (exact for a column of few-bit values, else e - bits for
   the smallest nonzero magnitude). */
VTK_DEV int vtk_coarse_line(const double *x, int64_t s, int64_t K);
VTK_GLOBAL vtk_colsum_part(vtk_colsum_part_a a) {
    int64_t z;
    VTK_LOOP(z, a.nch * a.C) {
        int64_t ch = z / a.C, c = z % a.C, r0 = ch * a.chunk, r1 = r0 + a.chunk < a.R ? r0 + a.chunk : a.R, r;
        double p = 0, mg = 0, mn = VTK_INF;
        for (r = r0; r < r1; r++) {
            double x = a.X[r * a.C + c], ab = fabs(x);
            p = vtk_acc(a.f32, p + x);
            mg += ab;
            if (ab != 0 && ab < mn) mn = ab;
        }
        a.part[z] = p; a.mag[z] = mg; a.mn[z] = mn;
    }
}
VTK_GLOBAL vtk_colsum_fin(vtk_colsum_fin_a a) {
    int64_t c;
    VTK_LOOP(c, a.C) {
        double v = a.o.acc ? a.o.x[c] : 0, m = a.o.acc ? fabs(a.o.x[c]) : 0;
        double mn = VTK_INF;
        int L = a.o.acc ? vtk_lsb(a.o.x[c]) : VTK_LSB_NONE, ch, ex;
        int64_t r;
        for (ch = 0; ch < a.nch; ch++) {
            v = vtk_acc(a.f32, v + a.part[ch * a.C + c]);
            m += a.mag[ch * a.C + c];
            if (a.mn[ch * a.C + c] < mn) mn = a.mn[ch * a.C + c];
        }
        a.o.x[c] = v;
        if (a.o.e) {
            if (vtk_coarse_line(a.X + c, a.C, a.R)) {
                for (r = 0; r < a.R; r++)
                    if (a.X[r * a.C + c] != 0) { int l = vtk_lsb(a.X[r * a.C + c]); if (l < L) L = l; }
            } else if (mn < VTK_INF) {
                frexp(mn, &ex);
                if (ex - a.bits < L) L = ex - a.bits;
            }
            double e = vtk_sum_bound(&a.bnd, a.nterms, m, L) == 0 ? 0 : a.G * m;
            if (a.extra) e = 1.01 * (a.extra[c] + e + VTK_U * a.magp[c]); /* layernorm's dw: the xhat error */
            a.o.e[c] = e;
        }
    }
}
VTK_GLOBAL vtk_colabs(vtk_colabs_a a) {
    int64_t c, r;
    VTK_LOOP(c, a.C) {
        double ex = 0, mp = 0;
        for (r = 0; r < a.R; r++) { ex += a.DX[r * a.C + c]; mp += fabs(a.XH[r * a.C + c]); }
        a.extra[c] = ex; a.magp[c] = mp;
    }
}

/* --- embedding (vt__k_embedding) --------------------------------------------- */

VTK_GLOBAL vtk_embed_fwd(vtk_embed_fwd_a a) {
    int64_t z;
    VTK_LOOP(z, a.P * a.C) a.x[z] = a.tab[(int64_t)a.idx[z / a.C] * a.C + z % a.C];
}
/* thread (touched row k, column c): old + the rows that index it, in position order */
VTK_GLOBAL vtk_embed_bwd(vtk_embed_bwd_a a) {
    int64_t z;
    VTK_LOOP(z, a.nv * a.C) {
        int64_t k = z / a.C, c = z % a.C, v = a.vs[k], q, n = a.cnt[k];
        double acc = a.o.acc ? a.o.x[v * a.C + c] : 0, mag = fabs(acc);
        int ls = vtk_lsb(acc);
        for (q = 0; q < n; q++) {
            double y = a.dy[a.list[a.start[k] + q] * a.C + c];
            int l = vtk_lsb(y);
            acc = vtk_acc(a.f32, acc + y);
            mag += fabs(y);
            if (l < ls) ls = l;
        }
        a.o.x[v * a.C + c] = acc;
        if (a.o.e) a.o.e[v * a.C + c] = vtk_sum_bound(&a.bnd, n + (a.o.acc ? 1 : 0), mag, ls);
    }
}

/* --- attention: the parts around cuBLAS (vt__att_*_task) --------------------- */

/* scores: pre = scale P below the diagonal (P and its GEMM bound are in x, e) */
VTK_GLOBAL vtk_att_post(vtk_att_post_a a) {
    int64_t z;
    VTK_LOOP(z, a.nbh * a.T * a.T) {
        int64_t t = (z / a.T) % a.T, t2 = z % a.T;
        double v = t2 <= t ? a.scale * a.x[z] : 0;
        a.x[z] = v;
        if (a.e) a.e[z] = t2 <= t ? 1.01 * (a.scale * a.e[z] + VTK_U * fabs(v)) : 0;
    }
}
/* dq or dk (part 0 or 1) of dqkv (B,T,3C) from P (B,NH,T,hs): scale P, with bound */
VTK_GLOBAL vtk_att_put(vtk_att_put_a a) {
    int64_t z, C3 = 3 * a.C;
    VTK_LOOP(z, a.B * a.T * a.C) {
        int64_t b = z / (a.T * a.C), t = (z / a.C) % a.T, hc = z % a.C, h = hc / a.hs, i = hc % a.hs;
        int64_t pz = ((b * a.NH + h) * a.T + t) * a.hs + i, xz = b * a.T * C3 + t * C3 + a.part * a.C + hc;
        double v = a.scale * a.P[pz], ev = a.PE ? 1.01 * (a.scale * a.PE[pz] + VTK_U * fabs(v)) : 0;
        if (a.o.acc) {
            double s = a.o.x[xz] + v;
            if (ev > 0) ev += VTK_U * fabs(s);
            v = s;
        }
        a.o.x[xz] = v;
        if (a.o.e) a.o.e[xz] = ev;
    }
}
VTK_GLOBAL vtk_att_zero(vtk_att_zero_a a) {
    int64_t z;
    VTK_LOOP(z, a.rows * a.width) a.x[(z / a.width) * a.stride + a.off + z % a.width] = 0;
}
/* datt = the masked product dout V^T, written or added */
VTK_GLOBAL vtk_att_datt(vtk_att_datt_a a) {
    int64_t z;
    VTK_LOOP(z, a.nbh * a.T * a.T) {
        int64_t t = (z / a.T) % a.T, t2 = z % a.T;
        double v = t2 <= t ? a.P[z] : 0, ev = (t2 <= t && a.PE) ? a.PE[z] : 0;
        if (a.o.acc) {
            double s2 = a.o.x[z] + v;
            if (ev > 0) ev += VTK_U * fabs(s2);
            v = s2;
        }
        a.o.x[z] = v;
        if (a.o.e) a.o.e[z] = ev;
    }
}

/* --- dropout, concat/split, optimizer, clipping ----------------------------- */

VTK_GLOBAL vtk_dropout(vtk_dropout_a a) {
    int64_t i;
    VTK_LOOP(i, a.n) {
        double u = (double)(vtk_rng_u64(a.seed, a.stream, (uint64_t)i) >> 11) * 0x1p-53;
        vtk_put(&a.o, i, u >= a.p ? a.in[i] * a.s : 0.0, 0);
    }
}
VTK_GLOBAL vtk_copy2d(vtk_copy2d_a a) {
    int64_t z;
    VTK_LOOP(z, a.outer * a.len) {
        int64_t row = z / a.len, i = z % a.len, d = a.doff + row * a.dstride + i;
        double v = a.src[a.soff + row * a.sstride + i];
        if (a.exact) a.o.x[d] = v;
        else vtk_put(&a.o, d, v, 0);
    }
}
/* vt__opt_task, expression for expression */
VTK_GLOBAL vtk_optim(vtk_optim_a a) {
    int64_t i;
    VTK_LOOP(i, a.n) {
        double g = a.g[i], w = a.w[i];
        if (a.kind == 0) {
            double b1 = a.b1, b2 = a.b2;
            if (a.phase == 0) {
                a.m[i] = b1 * a.m[i] + (1 - b1) * g;
            } else if (a.phase == 1) {
                a.v[i] = b2 * a.v[i] + (1 - b2) * (g * g);
            } else {
                double w1 = w * (1 - a.lr * a.wd);
                double denom = sqrt(a.v[i]) / sqrt(a.bc2) + a.eps;
                a.w[i] = w1 - (a.lr / a.bc1) * (a.m[i] / denom);
            }
        } else {
            double mu = a.mu, wd = a.swd;
            double d = wd != 0 ? g + wd * w : g;
            if (a.phase == 0) {
                a.m[i] = mu * a.m[i] + d;
                continue;
            }
            if (mu != 0) d = a.nesterov ? d + mu * a.m[i] : a.m[i];
            a.w[i] = w - a.lr * d;
        }
    }
}
/* squared norms per parameter: block b sums g^2 over [blo, bhi) */
VTK_GLOBAL vtk_sumsq_part(vtk_sumsq_part_a a) {
    VTK_SHARED vtk_redbuf rb;
    int64_t b = VTK_BID, i;
    double v[1] = {0};
    int ops[1];
    for (i = a.blo[b] + VTK_TID; i < a.bhi[b]; i += VTK_BDIM)
        v[0] = a.f32 ? vtk_acc(1, v[0] + vtk_acc(1, a.g[i] * a.g[i])) : v[0] + a.g[i] * a.g[i];
    ops[0] = a.f32 ? 1 : 0;
    vtk_bred(v, ops, 1, &rb);
    if (VTK_TID == 0) a.part[b] = v[0];
}
VTK_GLOBAL vtk_sumsq_fin(vtk_sumsq_fin_a a) {
    int64_t p, b;
    VTK_LOOP(p, a.np) {
        double s = 0;
        for (b = a.pfirst[p]; b < a.pfirst[p + 1]; b++) s = vtk_acc(a.f32, s + a.part[b]);
        a.out[p] = s;
    }
}
VTK_GLOBAL vtk_scale_vec(vtk_scale_vec_a a) {
    int64_t i;
    VTK_LOOP(i, a.n) a.g[i] = a.g[i] * a.s;
}

/* --- SHA-256 of each 64 KiB block of binary32 values (vt__block_digest) ----- */

VTK_CONSTANT uint32_t vtk_sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
#define VTK_ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
VTK_DEV void vtk_sha_block(uint32_t *h, uint32_t *w) {
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    int i;
    for (i = 16; i < 64; i++) {
        uint32_t s0 = VTK_ROTR(w[i - 15], 7) ^ VTK_ROTR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = VTK_ROTR(w[i - 2], 17) ^ VTK_ROTR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    for (i = 0; i < 64; i++) {
        uint32_t S1 = VTK_ROTR(e, 6) ^ VTK_ROTR(e, 11) ^ VTK_ROTR(e, 25), ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + S1 + ch + vtk_sha_k[i] + w[i];
        uint32_t S0 = VTK_ROTR(a, 2) ^ VTK_ROTR(a, 13) ^ VTK_ROTR(a, 22), mj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + mj;
        hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}
/* one thread per block of VTK_DIG values: the bytes are the values as
   binary32 little-endian, so message word p is value p's byte-swapped bit
   pattern; then 0x80000000, zeros, and the bit length in the last two words */
VTK_GLOBAL vtk_sha(vtk_sha_a a) {
    int64_t b;
    VTK_LOOP(b, a.nblk) {
        uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
        uint32_t w[64];
        int64_t i0 = b * VTK_DIG, nw = (i0 + VTK_DIG < a.n ? VTK_DIG : a.n - i0), total = (nw + 3 + 15) / 16 * 16, c0;
        uint64_t bits = (uint64_t)nw * 32;
        int k;
        for (c0 = 0; c0 < total; c0 += 16) {
            for (k = 0; k < 16; k++) {
                int64_t p = c0 + k;
                if (p < nw) {
                    uint32_t v = VTK_FBITS((float)a.x[i0 + p]);
                    w[k] = (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
                } else if (p == nw) w[k] = 0x80000000u;
                else if (p == total - 2) w[k] = (uint32_t)(bits >> 32);
                else if (p == total - 1) w[k] = (uint32_t)bits;
                else w[k] = 0;
            }
            vtk_sha_block(h, w);
        }
        for (k = 0; k < 8; k++) {
            a.out[32 * b + 4 * k] = (unsigned char)(h[k] >> 24);
            a.out[32 * b + 4 * k + 1] = (unsigned char)(h[k] >> 16);
            a.out[32 * b + 4 * k + 2] = (unsigned char)(h[k] >> 8);
            a.out[32 * b + 4 * k + 3] = (unsigned char)h[k];
        }
    }
}

/* --- the GEMM bound and the parts of a product around cuBLAS (>>gemm) -------

   Statistics per line (a row of A or a column of B, read through strides):
   sum |x|, |x|_2, max |x| and th = 2^(L + 53), L the line's lowest set bit
   (exact when the line is "coarse", else e - 24 of its smallest nonzero
   magnitude), exactly as vt__stat_task. Lines contiguous along k take a
   block each (vtk_stats_rows); lines strided along k (columns) take a thread
   each per part of k, coalesced across lines (vtk_stats_cols), and
   vtk_stats_fin combines the parts in order. vtk_gbound is vt__gbound_task. */
VTK_DEV int vtk_coarse_line(const double *x, int64_t s, int64_t K) {
    int64_t k, seen = 0;
    for (k = 0; k < K && seen < 4; k++) {
        double a = x[k * s];
        int e;
        if (a == 0) continue;
        frexp(a, &e);
        if (e - vtk_lsb(a) >= 20) return 0;
        seen++;
    }
    return 1;
}
VTK_DEV double vtk_th2(int L) { return ldexp(1.0, L + 53 < 1023 ? L + 53 : 1023); }
VTK_DEV const double *vtk_line(const vtk_stats_a *a, int64_t z) {
    int64_t q = z / a->nl, l = z % a->nl;
    return a->X + (q / a->nb2) * a->s1 + (q % a->nb2) * a->s2 + l * a->s_outer;
}
VTK_DEV void vtk_stats_put(const vtk_stats_a *a, int64_t z, double s1, double s2, double m, double mn, double L, int coarse) {
    int l = VTK_LSB_NONE, e;
    a->n1[z] = s1;
    a->n2[z] = sqrt(s2);
    a->mx[z] = m;
    if (coarse) l = (int)L;
    else if (mn < VTK_INF) { frexp(mn, &e); l = e - 24; }
    a->th[z] = vtk_th(l);
}
VTK_GLOBAL vtk_stats_rows(vtk_stats_a a) {
    VTK_SHARED vtk_redbuf rb;
    int t = VTK_TID, ops[6] = {0, 0, 2, 3, 3, 0};
    int64_t z = VTK_BID, k;
    const double *x = vtk_line(&a, z);
    double v[6];
    v[0] = 0; v[1] = 0; v[2] = 0; v[3] = VTK_INF; v[4] = VTK_LSB_NONE; v[5] = 0;
    for (k = t; k < a.K; k += VTK_BDIM) {
        double y = x[k * a.s_k], ab = fabs(y);
        v[0] += ab;
        v[1] += ab * ab;
        if (ab > v[2]) v[2] = ab;
        if (ab != 0 && ab < v[3]) v[3] = ab;
        if (y != 0) { int l = vtk_lsb(y); if ((double)l < v[4]) v[4] = (double)l; }
    }
    if (t == 0) v[5] = vtk_coarse_line(x, a.s_k, a.K);
    vtk_bred(v, ops, 6, &rb);
    if (t == 0) vtk_stats_put(&a, z, v[0], v[1], v[2], v[3], v[4], (int)v[5]);
}
VTK_GLOBAL vtk_stats_cols(vtk_stats_a a) {
    int64_t z;
    VTK_LOOP(z, a.nparts * a.nlines) {
        int64_t p = z / a.nlines, line = z % a.nlines, k0 = a.K * p / a.nparts, k1 = a.K * (p + 1) / a.nparts, k;
        const double *x = vtk_line(&a, line);
        double s1 = 0, s2 = 0, m = 0, mn = VTK_INF, *o = a.part + 5 * z;
        int L = VTK_LSB_NONE;
        for (k = k0; k < k1; k++) {
            double y = x[k * a.s_k], ab = fabs(y);
            s1 += ab;
            s2 += ab * ab;
            if (ab > m) m = ab;
            if (ab != 0 && ab < mn) mn = ab;
            if (y != 0) { int l = vtk_lsb(y); if (l < L) L = l; }
        }
        o[0] = s1; o[1] = s2; o[2] = m; o[3] = mn; o[4] = (double)L;
    }
}
VTK_GLOBAL vtk_stats_fin(vtk_stats_a a) {
    int64_t line, p;
    VTK_LOOP(line, a.nlines) {
        double s1 = 0, s2 = 0, m = 0, mn = VTK_INF, L = VTK_LSB_NONE;
        for (p = 0; p < a.nparts; p++) {
            const double *o = a.part + 5 * (p * a.nlines + line);
            s1 += o[0];
            s2 += o[1];
            if (o[2] > m) m = o[2];
            if (o[3] < mn) mn = o[3];
            if (o[4] < L) L = o[4];
        }
        vtk_stats_put(&a, line, s1, s2, m, mn, L, vtk_coarse_line(vtk_line(&a, line), a.s_k, a.K));
    }
}
VTK_GLOBAL vtk_gbound(vtk_gbound_a a) {
    int64_t z;
    VTK_LOOP(z, a.total) {
        int64_t q = z / (a.M * a.N), m = (z / a.N) % a.M, n = z % a.N, qa = q * a.M + m, qb = q * a.N + n;
        int64_t q1 = q / a.nb2, q2 = q % a.nb2;
        double s = a.an2[qa] * a.bn2[qb], t = a.amx[qa] * a.bn1[qb], u = a.an1[qa] * a.bmx[qb];
        double th = (a.ath[qa] * 0x1p-53) * a.bth[qb];
        s = t < s ? t : s;
        s = u < s ? u : s;
        if (a.C0) {
            double c0 = a.C0[q1 * a.c1 + q2 * a.c2 + m * a.ldc + n];
            s += fabs(c0);
            if (c0 != 0) { double tc = vtk_th2(vtk_lsb(c0)); th = th < tc ? th : tc; }
        }
        if (a.bias) {
            double bv = a.bias[n], bt = bv == 0 ? VTK_INF : vtk_th2(vtk_lsb(bv));
            s += fabs(bv);
            th = th < bt ? th : bt;
        }
        a.E[q1 * a.e1 + q2 * a.e2 + m * a.lde + n] = s * (1 + 0x1p-40) < th ? 0 : a.G * s;
    }
}
/* C = bias (written) or C + bias (accumulated): the op layer's part of vt__mm */
VTK_GLOBAL vtk_mm_init(vtk_mm_init_a a) {
    int64_t z;
    VTK_LOOP(z, a.total) {
        int64_t q = z / (a.M * a.N), m = (z / a.N) % a.M, n = z % a.N;
        double *c = a.C + (q / a.nb2) * a.c1 + (q % a.nb2) * a.c2 + m * a.ldc + n;
        if (!a.acc) *c = a.bias ? a.bias[n] : 0.0;
        else if (a.bias) *c = vtk_acc(a.f32, *c + a.bias[n]);
    }
}
/* C = ((C + P_0) + P_1) + ...: chunk partials in chunk order (P or, native, Pf) */
VTK_GLOBAL vtk_chunk_add(vtk_chunk_add_a a) {
    int64_t z, MN = a.M * a.N, nbat = a.total / MN;
    VTK_LOOP(z, a.total) {
        int64_t q = z / MN, mn = z % MN, ch;
        double *c = a.C + (q / a.nb2) * a.c1 + (q % a.nb2) * a.c2 + (mn / a.N) * a.ldc + mn % a.N, v = *c;
        for (ch = 0; ch < a.nch; ch++) {
            int64_t pz = (ch * nbat + q) * MN + mn;
            v = vtk_acc(a.f32, v + (a.Pf ? (double)a.Pf[pz] : a.P[pz]));
        }
        *c = v;
    }
}
VTK_GLOBAL vtk_to_f32(vtk_to_f32_a a) {
    int64_t i;
    VTK_LOOP(i, a.n) a.dst[i] = (float)a.src[i];
}
/* matmul's shared-b gradient with ta: a's batches (K,M) gathered as rows (nbat*M, K) */
VTK_GLOBAL vtk_gather_rows(vtk_gather_rows_a a) {
    int64_t z;
    VTK_LOOP(z, a.nbat * a.M * a.K) {
        int64_t row = z / a.K, kk = z % a.K, bi = row / a.M, r = row % a.M;
        a.g[z] = a.A[bi * a.sa + kk * a.M + r];
    }
}
/* --- convolution, pooling, batch norm (vt__k_conv2d, vt__k_maxpool, vt__k_avgpool,
   vt__k_batchnorm) --------------------------------------------------------------- */

/* im2col (vt__im2col_task): col (G,Kg,N,P) from x; dcol (vt__dcol_task):
   (G,Kd,N,HW) from dy, here as a gather (each element finds the output
   that lands on it, if any): the same copy */
VTK_GLOBAL vtk_im2col(vtk_im2col_a a) {
    int64_t z, KK = a.KH * a.KW;
    VTK_LOOP(z, a.total) {
        if (!a.dcol) {
            int64_t P = a.OH * a.OW, ow = z % a.OW, oh = z / a.OW % a.OH, n = z / P % a.N, r = z / (P * a.N);
            int64_t gi = r / (a.Cg * KK), q = r % (a.Cg * KK), ic = q / KK, kh = q / a.KW % a.KH, kw = q % a.KW;
            int64_t ih = oh * a.s - a.p + kh * a.d, iw = ow * a.s - a.p + kw * a.d;
            a.dst[z] = (ih >= 0 && ih < a.H && iw >= 0 && iw < a.W) ? a.src[((n * a.C + gi * a.Cg + ic) * a.H + ih) * a.W + iw] : 0.0;
        } else {
            int64_t HW = a.H * a.W, iw = z % a.W, ih = z / a.W % a.H, n = z / HW % a.N, r = z / (HW * a.N);
            int64_t gi = r / (a.OCg * KK), q = r % (a.OCg * KK), oc = q / KK, kh = q / a.KW % a.KH, kw = q % a.KW;
            int64_t th = ih + a.p - kh * a.d, tw = iw + a.p - kw * a.d, oh = th / a.s, ow = tw / a.s;
            double v = 0.0;
            if (th >= 0 && tw >= 0 && th % a.s == 0 && tw % a.s == 0 && oh < a.OH && ow < a.OW)
                v = a.src[((n * a.G * a.OCg + gi * a.OCg + oc) * a.OH + oh) * a.OW + ow];
            a.dst[z] = v;
        }
    }
}

/* vt__max_at: the first largest value of the window, row-major */
VTK_DEV int64_t vtk_max_at(const vtk_pool_a *a, const double *plane, int64_t oh, int64_t ow) {
    int64_t kh, kw, best = -1;
    double bv = 0;
    for (kh = 0; kh < a->KH; kh++) {
        int64_t ih = oh * a->s - a->p + kh;
        if (ih < 0 || ih >= a->H) continue;
        for (kw = 0; kw < a->KW; kw++) {
            int64_t iw = ow * a->s - a->p + kw;
            double v;
            if (iw < 0 || iw >= a->W) continue;
            v = plane[ih * a->W + iw];
            if (best < 0 || v > bv) { bv = v; best = ih * a->W + iw; }
        }
    }
    return best;
}
/* forward: a thread per output; backward: a thread per input, which adds
   the terms of the windows that send it one, in output order
   (vt__scatter_sum's terms and bound) */
VTK_GLOBAL vtk_pool(vtk_pool_a a) {
    int64_t z;
    double cnt = (double)(a.KH * a.KW);
    VTK_LOOP(z, a.n) {
        if (!a.bwd) {
            int64_t ow = z % a.OW, oh = z / a.OW % a.OH, pl = z / (a.OW * a.OH), kh, kw;
            const double *plane = a.X + pl * a.H * a.W;
            if (a.max) {
                int64_t at = vtk_max_at(&a, plane, oh, ow);
                a.o.x[z] = at >= 0 ? plane[at] : 0.0;
            } else {
                double s = 0, mag = 0, y, es;
                int L = VTK_LSB_NONE, m = 0;
                for (kh = 0; kh < a.KH; kh++) {
                    int64_t ih = oh * a.s - a.p + kh;
                    if (ih < 0 || ih >= a.H) continue;
                    for (kw = 0; kw < a.KW; kw++) {
                        int64_t iw = ow * a.s - a.p + kw;
                        double v;
                        int l;
                        if (iw < 0 || iw >= a.W) continue;
                        v = plane[ih * a.W + iw];
                        s = vtk_acc(a.f32, s + v); mag += fabs(v); m++;
                        l = vtk_lsb(v);
                        if (l < L) L = l;
                    }
                }
                y = s / cnt;
                a.o.x[z] = y;
                if (a.o.e) {
                    es = vtk_sum_bound(&a.bnd, m, mag, L);
                    a.o.e[z] = es == 0 ? 0 : 1.01 * (es / cnt + VTK_U * fabs(y));
                }
            }
        } else {
            int64_t iw = z % a.W, ih = z / a.W % a.H, pl = z / (a.W * a.H), oh, ow, m = 0;
            int64_t oh0 = ih + a.p - a.KH + 1, ow0 = iw + a.p - a.KW + 1, oh1 = (ih + a.p) / a.s, ow1 = (iw + a.p) / a.s;
            const double *plane = a.X + pl * a.H * a.W;
            double v = 0, mag = 0, old = a.o.acc ? a.o.x[z] : 0, t;
            int L = a.o.acc ? vtk_lsb(old) : VTK_LSB_NONE, l;
            oh0 = oh0 <= 0 ? 0 : (oh0 + a.s - 1) / a.s;
            ow0 = ow0 <= 0 ? 0 : (ow0 + a.s - 1) / a.s;
            if (oh1 >= a.OH) oh1 = a.OH - 1;
            if (ow1 >= a.OW) ow1 = a.OW - 1;
            for (oh = oh0; oh <= oh1; oh++)
                for (ow = ow0; ow <= ow1; ow++) {
                    int64_t o = (pl * a.OH + oh) * a.OW + ow;
                    if (a.max) {
                        if (vtk_max_at(&a, plane, oh, ow) != ih * a.W + iw) continue;
                        t = a.dy[o];
                    } else t = a.dy[o] / cnt;
                    v = m ? vtk_acc(a.f32, v + t) : t;
                    mag += fabs(t);
                    l = vtk_lsb(t);
                    if (l < L) L = l;
                    m++;
                }
            if (!m) {
                if (!a.o.acc) a.o.x[z] = 0;
                if (a.o.e) a.o.e[z] = 0;
                continue;
            }
            a.o.x[z] = a.o.acc ? vtk_acc(a.f32, old + v) : v;
            if (a.o.e) a.o.e[z] = vtk_sum_bound(&a.bnd, m + (a.o.acc ? 1 : 0), mag + fabs(old), L);
        }
    }
}

/* Batch norm (vt__bnstat_task, vt__bn_task). Modes: 0 BN_STATS forward
   (a block per channel); 1 BN_STATS backward (elementwise); 2 BATCHNORM2D
   forward (elementwise), 3 its running statistics (a thread per channel);
   4 BATCHNORM2D dx (elementwise); 5 its per-channel sums dw, db, dstats (a
   block per channel). Element i of the channel's M values is
   X[(n C + ch) HW + h], n = i / HW, h = i % HW. */
VTK_DEV int64_t vtk_bn_at(const vtk_bn_a *a, int64_t ch, int64_t i) { return (i / a->HW * a->C + ch) * a->HW + i % a->HW; }
VTK_DEV double vtk_bn_rs(const vtk_bn_a *a, int64_t ch) {
    return vtk_acc(a->f32, 1.0 / sqrt(vtk_acc(a->f32, a->st[a->C + ch] + a->eps)));
}
/* a block's sum of M terms (the same everywhere) into o at ch, with the bound vt__bn_sum gives */
VTK_DEV void vtk_bn_put_sum(const vtk_bn_a *a, const vtk_out *o, int64_t ch, double *v, vtk_redbuf *rb) {
    int ops[3];
    double old, s;
    int L;
    ops[0] = a->f32 ? 1 : 0; ops[1] = 0; ops[2] = 3;
    vtk_bred(v, ops, 3, rb);
    if (VTK_TID != 0) return;
    old = o->acc ? o->x[ch] : 0;
    s = v[0];
    L = (int)v[2];
    if (o->acc) { int lo = vtk_lsb(old); if (lo < L) L = lo; }
    o->x[ch] = o->acc ? vtk_acc(a->f32, old + s) : s;
    if (o->e) o->e[ch] = vtk_sum_bound(&a->bnd, a->M + (o->acc ? 1 : 0), v[1] + fabs(old), L);
}
VTK_DEV double vtk_bn_term(const vtk_bn_a *a, int which, int64_t ch, int64_t at) {
    double w = a->W[ch], mean = a->st[ch], rs = vtk_bn_rs(a, ch);
    double kk = vtk_acc(a->f32, w * rs), q = vtk_acc(a->f32, -0.5 * w * rs * rs * rs);
    if (which == 0) return vtk_acc(a->f32, a->dy[at] * vtk_acc(a->f32, vtk_acc(a->f32, a->X[at] - mean) * rs));
    if (which == 1) return a->dy[at];
    if (which == 2) return -vtk_acc(a->f32, a->dy[at] * kk);
    return vtk_acc(a->f32, vtk_acc(a->f32, a->dy[at] * q) * vtk_acc(a->f32, a->X[at] - mean));
}
VTK_GLOBAL vtk_bn(vtk_bn_a a) {
    VTK_SHARED vtk_redbuf rb;
    int64_t z, i;
    if (a.mode == 0) { /* vt__ln_row over the channel's values */
        int64_t ch = VTK_BID;
        int t = VTK_TID, nt = VTK_BDIM, ops[2];
        double v[2] = {0, 0}, mu, dmu, var;
        for (i = t; i < a.M; i += nt) {
            double x = a.X[vtk_bn_at(&a, ch, i)];
            v[0] = vtk_acc(a.f32, v[0] + x);
            v[1] += fabs(x);
        }
        ops[0] = a.f32 ? 1 : 0; ops[1] = 0;
        vtk_bred(v, ops, 2, &rb);
        mu = vtk_acc(a.f32, v[0] / (double)a.M);
        dmu = vtk_g(&a.bnd, a.M + 1) * v[1] / (double)a.M;
        v[0] = 0;
        for (i = t; i < a.M; i += nt) {
            double d = vtk_acc(a.f32, a.X[vtk_bn_at(&a, ch, i)] - mu);
            v[0] = a.f32 ? vtk_acc(1, v[0] + vtk_acc(1, d * d)) : v[0] + d * d;
        }
        vtk_bred(v, ops, 1, &rb);
        var = vtk_acc(a.f32, v[0] / (double)a.M);
        if (t == 0) {
            a.o.x[ch] = mu;
            a.o.x[a.C + ch] = var;
            if (a.o.e) { a.o.e[ch] = dmu; a.o.e[a.C + ch] = vtk_g(&a.bnd, a.M + 4) * var + dmu * dmu; }
        }
        return;
    }
    if (a.mode == 5) { /* dw, db, dstats of channel ch */
        int64_t ch = VTK_BID;
        int t = VTK_TID, nt = VTK_BDIM, which;
        for (which = 0; which < 4; which++) {
            const vtk_out *o = which == 0 ? &a.ow : which == 1 ? &a.ob : &a.os;
            vtk_out om;
            double v[3] = {0, 0, (double)VTK_LSB_NONE};
            if (!o->x) continue;
            for (i = t; i < a.M; i += nt) {
                double x = vtk_bn_term(&a, which, ch, vtk_bn_at(&a, ch, i));
                int l = vtk_lsb(x);
                v[0] = vtk_acc(a.f32, v[0] + x);
                v[1] += fabs(x);
                if ((double)l < v[2]) v[2] = (double)l;
            }
            om = *o;
            if (which == 3) { om.x = o->x + a.C; om.e = o->e ? o->e + a.C : NULL; }
            vtk_bn_put_sum(&a, &om, ch, v, &rb);
        }
        return;
    }
    if (a.mode == 3) {
        double r = a.M > 1 ? (double)a.M / (double)(a.M - 1) : 1.0;
        VTK_LOOP(z, a.C) {
            a.run[z] = vtk_acc(a.f32, (1 - a.mom) * a.run[z]) + vtk_acc(a.f32, a.mom * a.st[z]);
            a.run[a.C + z] = vtk_acc(a.f32, (1 - a.mom) * a.run[a.C + z]) + vtk_acc(a.f32, a.mom * vtk_acc(a.f32, a.st[a.C + z] * r));
        }
        return;
    }
    VTK_LOOP(z, a.n) {
        int64_t ch = z / a.HW % a.C;
        if (a.mode == 1) {
            double g0 = a.g[ch] / (double)a.M, bq = 2 * a.g[a.C + ch] / (double)a.M;
            vtk_put(&a.o, z, vtk_acc(a.f32, g0 + vtk_acc(a.f32, bq * vtk_acc(a.f32, a.X[z] - a.st[ch]))), 0);
        } else if (a.mode == 2) {
            double xh = vtk_acc(a.f32, vtk_acc(a.f32, a.X[z] - a.st[ch]) * vtk_bn_rs(&a, ch));
            a.o.x[z] = vtk_acc(a.f32, xh * a.W[ch]) + a.Bb[ch];
        } else {
            vtk_put(&a.o, z, vtk_acc(a.f32, a.dy[z] * vtk_acc(a.f32, a.W[ch] * vtk_bn_rs(&a, ch))), 0);
        }
    }
}

#endif /* VTK_KERNELS */

#if !defined(__CUDACC__)
/* ==========================================================================
   >>cuda-dev  the device layer

   Everything the backend asks of a device, in one small interface: memory,
   copies, kernel launches by name with their argument struct, GEMM with
   cuBLAS's column-major semantics, synchronisation. Two implementations: the
   real one over the Driver API and cuBLAS (both opened with dlopen), and the
   emulator. Every call returns 1 on success; on failure it has put a message
   that names the call and what to do into the context (vt__fail).
   ========================================================================== */
#include <dlfcn.h>
#include <stddef.h>
#include <cuda.h>
#include <cublas_v2.h>

/* d.device = VT_CUDA_EMULATOR (vtrain.h) runs the backend on the emulator (VTRAIN_CUDA_EMU builds) */

enum {
#define VT__X(name, bar, maxb) VT__K_##name,
    VT__KLIST(VT__X)
#undef VT__X
    VT__NK
};
static const struct { const char *name; int barrier, maxb; } vt__kinfo[] = {
#define VT__X(name, bar, maxb) {#name, bar, maxb},
    VT__KLIST(VT__X)
#undef VT__X
};
typedef char vt__cu_assert_consts[(VTK_LSB_NONE == VT__LSB_NONE && VTK_DIG == VT__DIG_BLOCK) ? 1 : -1];

/* one cuBLAS call: C = op(A) op(B) + beta C, column-major, alpha = 1 */
typedef struct vt__gemm_call {
    int f32;                  /* 0 DGEMM on doubles, 1 SGEMM on floats */
    int opa, opb;             /* 0 N, 1 T */
    int m, n, k;
    const void *A; int lda; long long sA;
    const void *B; int ldb; long long sB;
    double beta;
    void *C; int ldc; long long sC;
    int batch;                /* 1: a plain GEMM; more: strided-batched */
} vt__gemm_call;

struct vt__cu;
typedef struct vt__dev {
    const char *name;
    void *(*alloc)(struct vt__cu *s, size_t bytes);
    void (*release)(struct vt__cu *s, void *p);
    int (*copy)(struct vt__cu *s, void *dst, const void *src, size_t n, int kind); /* 0 h2d, 1 d2h, 2 d2d */
    int (*zero)(struct vt__cu *s, void *p, size_t n);
    int (*launch)(struct vt__cu *s, int k, int64_t grid, int block, const void *args);
    int (*gemm)(struct vt__cu *s, const vt__gemm_call *g);
    int (*sync)(struct vt__cu *s);
    void (*close)(struct vt__cu *s);
} vt__dev;

/* the Driver API and cuBLAS functions we use, typed from NVIDIA's headers
   (the headers map cuMemAlloc to cuMemAlloc_v2 & co.: the names below are
   the ones the libraries export) */
#define VT__CU_DRV(X)                                                                                     \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)                 \
    X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)  \
    X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction) \
    X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD)         \
    X(cuMemsetD8) X(cuMemGetInfo) X(cuGetErrorName) X(cuGetErrorString)
#define VT__CU_BLAS(X)                                                                                    \
    X(cublasCreate) X(cublasDestroy) X(cublasGetVersion) X(cublasSetMathMode) X(cublasDgemm)              \
    X(cublasSgemm) X(cublasDgemmStridedBatched) X(cublasSgemmStridedBatched) X(cublasGetStatusString)
#define VT__CU_STR_(x) #x
#define VT__CU_STR(x) VT__CU_STR_(x)

#define VT__X(f) typedef __typeof__(f) *vt__pfn_##f;
VT__CU_DRV(VT__X)
VT__CU_BLAS(VT__X)
#undef VT__X
typedef struct vt__cuapi {
#define VT__X(f) vt__pfn_##f f;
    VT__CU_DRV(VT__X)
    VT__CU_BLAS(VT__X)
#undef VT__X
} vt__cuapi;
static const struct { const char *name; size_t off; int blas; } vt__cu_syms[] = {
#define VT__X(f) {VT__CU_STR(f), offsetof(vt__cuapi, f), 0},
    VT__CU_DRV(VT__X)
#undef VT__X
#define VT__X(f) {VT__CU_STR(f), offsetof(vt__cuapi, f), 1},
    VT__CU_BLAS(VT__X)
#undef VT__X
};

/* the backend's state */
typedef struct vt__cu_blk { unsigned char *p; size_t size, used; } vt__cu_blk;
typedef struct vt__cu_arena { vt__cu_blk b[24]; int n, cur; } vt__cu_arena;

typedef struct vt__cu {
    vt_ctx *c;
    const vt__dev *dev;
    int sync_each;                     /* VTRAIN_CUDA_SYNC=1 */
    const char *last_kernel;
    /* the real device */
    void *libcuda, *libcublas;
    vt__cuapi api;
    CUdevice cudev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn[VT__NK];
    cublasHandle_t blas;
    int ctx_retained;
    /* the emulator */
#ifdef VTRAIN_CUDA_EMU
    vt__emu *emu;
#endif
    /* memory: op scratch (life 0), the step (life 1), persistent allocations */
    vt__cu_arena ar[2];
    void **pers;
    int npers, cpers;
    /* clipping: per-parameter squared norms, computed for all at i = 0 */
    double *sumsq;
    int nsumsq, sumsq_cap;
    const double *sumsq_base;
    /* what we found */
    char devname[256];
    int cc_major, cc_minor, driver_version;
    size_t total_mem;
    unsigned char *dig;                /* block digests' device buffer */
    size_t dig_cap;
    /* the benches' counters: the rounding points' time (with profile = 1
       the device is synchronised before each, so it is theirs alone) and
       the bytes their kernels move */
    int profile;
    double round_seconds;
    double round_bytes;
} vt__cu;

static vt__cu *vt__cus(vt_ctx *c) { return (vt__cu *)c->bes; }

/* --- the real device: Driver API + cuBLAS ------------------------------------ */

static int vt__cu_ck(vt__cu *s, CUresult r, const char *call, const char *hint) {
    const char *nm = NULL, *msg = NULL;
    if (r == CUDA_SUCCESS) return 1;
    if (s->api.cuGetErrorName) s->api.cuGetErrorName(r, &nm);
    if (s->api.cuGetErrorString) s->api.cuGetErrorString(r, &msg);
    vt__fail(s->c, VT_ERR_BACKEND, "CUDA: %s failed: %s (%s)%s%s", call, nm ? nm : "?", msg ? msg : "?", hint ? ": " : "",
             hint ? hint : "");
    return 0;
}
static int vt__cu_bk(vt__cu *s, cublasStatus_t r, const char *call) {
    if (r == CUBLAS_STATUS_SUCCESS) return 1;
    vt__fail(s->c, VT_ERR_BACKEND, "cuBLAS: %s failed: %s (status %d)%s", call,
             s->api.cublasGetStatusString ? s->api.cublasGetStatusString(r) : "?", (int)r,
             r == CUBLAS_STATUS_ALLOC_FAILED ? ": out of device memory" : "");
    return 0;
}
static CUdeviceptr vt__dp(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

static void *vt__real_alloc(vt__cu *s, size_t bytes) {
    CUdeviceptr p = 0;
    CUresult r = s->api.cuMemAlloc(&p, bytes ? bytes : 1);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        size_t fr = 0, tot = 0;
        if (s->api.cuMemGetInfo(&fr, &tot) != CUDA_SUCCESS) fr = tot = 0;
        vt__fail(s->c, VT_ERR_NOMEM, "CUDA: out of device memory: cuMemAlloc of %zu bytes failed with %zu of %zu bytes free "
                                     "on %s: use a smaller batch or model", bytes, fr, tot, s->devname);
        return NULL;
    }
    if (!vt__cu_ck(s, r, "cuMemAlloc", NULL)) return NULL;
    return (void *)(uintptr_t)p;
}
/* teardown: a failed free or unload leaves nothing to act on (an earlier
   call has already reported the error that caused it), so these statuses
   are dropped on purpose */
static void vt__real_release(vt__cu *s, void *p) { if (p) (void)s->api.cuMemFree(vt__dp(p)); }
static int vt__real_copy(vt__cu *s, void *dst, const void *src, size_t n, int kind) {
    if (!n) return 1;
    if (kind == 0) return vt__cu_ck(s, s->api.cuMemcpyHtoD(vt__dp(dst), src, n), "cuMemcpyHtoD", NULL);
    if (kind == 1)
        return vt__cu_ck(s, s->api.cuMemcpyDtoH(dst, vt__dp(src), n), "cuMemcpyDtoH",
                         s->last_kernel ? "a kernel before it may have failed (run with VTRAIN_CUDA_SYNC=1 to find which)" : NULL);
    return vt__cu_ck(s, s->api.cuMemcpyDtoD(vt__dp(dst), vt__dp(src), n), "cuMemcpyDtoD", NULL);
}
static int vt__real_zero(vt__cu *s, void *p, size_t n) {
    return !n || vt__cu_ck(s, s->api.cuMemsetD8(vt__dp(p), 0, n), "cuMemsetD8", NULL);
}
static int vt__real_launch(vt__cu *s, int k, int64_t grid, int block, const void *args) {
    void *params[1];
    char call[96];
    params[0] = (void *)(uintptr_t)args;
    snprintf(call, sizeof call, "cuLaunchKernel(%s)", vt__kinfo[k].name);
    if (!vt__cu_ck(s, s->api.cuLaunchKernel(s->fn[k], (unsigned)grid, 1, 1, (unsigned)block, 1, 1, 0, NULL, params, NULL),
                   call, NULL))
        return 0;
    if (s->sync_each) {
        snprintf(call, sizeof call, "kernel %s", vt__kinfo[k].name);
        return vt__cu_ck(s, s->api.cuCtxSynchronize(), call, "this kernel failed on the device");
    }
    return 1;
}
static int vt__real_gemm(vt__cu *s, const vt__gemm_call *g) {
    cublasOperation_t oa = g->opa ? CUBLAS_OP_T : CUBLAS_OP_N, ob = g->opb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (!g->f32) {
        double one = 1, beta = g->beta;
        if (g->batch == 1)
            return vt__cu_bk(s, s->api.cublasDgemm(s->blas, oa, ob, g->m, g->n, g->k, &one, (const double *)g->A, g->lda,
                                                   (const double *)g->B, g->ldb, &beta, (double *)g->C, g->ldc), "cublasDgemm");
        return vt__cu_bk(s, s->api.cublasDgemmStridedBatched(s->blas, oa, ob, g->m, g->n, g->k, &one, (const double *)g->A,
                                                             g->lda, g->sA, (const double *)g->B, g->ldb, g->sB, &beta,
                                                             (double *)g->C, g->ldc, g->sC, g->batch),
                         "cublasDgemmStridedBatched");
    } else {
        float one = 1, beta = (float)g->beta;
        if (g->batch == 1)
            return vt__cu_bk(s, s->api.cublasSgemm(s->blas, oa, ob, g->m, g->n, g->k, &one, (const float *)g->A, g->lda,
                                                   (const float *)g->B, g->ldb, &beta, (float *)g->C, g->ldc), "cublasSgemm");
        return vt__cu_bk(s, s->api.cublasSgemmStridedBatched(s->blas, oa, ob, g->m, g->n, g->k, &one, (const float *)g->A,
                                                             g->lda, g->sA, (const float *)g->B, g->ldb, g->sB, &beta,
                                                             (float *)g->C, g->ldc, g->sC, g->batch),
                         "cublasSgemmStridedBatched");
    }
}
static int vt__real_sync(vt__cu *s) { return vt__cu_ck(s, s->api.cuCtxSynchronize(), "cuCtxSynchronize", NULL); }
static void vt__real_close(vt__cu *s) {
    if (s->blas) (void)s->api.cublasDestroy(s->blas);
    if (s->mod) (void)s->api.cuModuleUnload(s->mod);
    if (s->ctx_retained) (void)s->api.cuDevicePrimaryCtxRelease(s->cudev);
    if (s->libcublas) dlclose(s->libcublas);
    if (s->libcuda) dlclose(s->libcuda);
    s->blas = NULL; s->mod = NULL; s->ctx_retained = 0; s->libcublas = s->libcuda = NULL;
}
static const vt__dev vt__real_dev = {"cuda", vt__real_alloc, vt__real_release, vt__real_copy, vt__real_zero,
                                     vt__real_launch, vt__real_gemm, vt__real_sync, vt__real_close};

/* the PTX: embedded (vtrain_cuda_ptx.h, made by the first command at the top
   of this file) or read from VTRAIN_CUDA_PTX_DIR at run time */
#ifndef VTRAIN_CUDA_PTX_DIR
#include "vtrain_cuda_ptx.h"
#endif
static char *vt__cu_ptx(vt__cu *s, int arch) {
#ifdef VTRAIN_CUDA_PTX_DIR
    char path[1024];
    int64_t n;
    unsigned char *b;
    snprintf(path, sizeof path, "%s/vtrain_cuda_%d.ptx", VTRAIN_CUDA_PTX_DIR, arch);
    b = vt__slurp(path, &n);
    if (!b) vt__fail(s->c, VT_ERR_BACKEND, "CUDA: cannot read the kernels' PTX '%s': build it (see the top of vtrain_cuda.cu.h)", path);
    return (char *)b;
#else
    const char *src = arch == 90 ? vt__cuda_ptx_90 : vt__cuda_ptx_75;
    size_t n = strlen(src);
    char *b = (char *)malloc(n + 1);
    (void)s;
    if (b) memcpy(b, src, n + 1);
    return b;
#endif
}
/* the PTX's ISA version (".version 9.0") and the CUDA release that wrote it */
static void vt__cu_ptx_versions(const char *ptx, char *isa, size_t ni, char *rel, size_t nr) {
    const char *v = strstr(ptx, ".version "), *r = strstr(ptx, "release ");
    size_t k;
    snprintf(isa, ni, "?");
    snprintf(rel, nr, "?");
    if (v) { v += 9; for (k = 0; k + 1 < ni && v[k] && v[k] != '\n' && v[k] != '\r'; k++) isa[k] = v[k]; isa[k] = 0; }
    if (r) { r += 8; for (k = 0; k + 1 < nr && r[k] && r[k] != ',' && r[k] != '\n'; k++) rel[k] = r[k]; rel[k] = 0; }
}

static int vt__real_open(vt__cu *s, int ordinal) {
    vt_ctx *c = s->c;
    const char *e;
    int i, count = 0, v = 0;
    char *ptx;
    CUresult r;
    s->libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!s->libcuda) {
        e = dlerror();
        vt__fail(c, VT_ERR_BACKEND, "no CUDA driver: cannot load libcuda.so.1 (%s): install the NVIDIA driver on this "
                                    "machine, or select VT_BACKEND_CPU", e ? e : "not found");
        return 0;
    }
    for (i = 0; i < (int)(sizeof vt__cu_syms / sizeof vt__cu_syms[0]); i++) {
        void *sym;
        if (vt__cu_syms[i].blas) continue;
        sym = dlsym(s->libcuda, vt__cu_syms[i].name);
        if (!sym) {
            vt__fail(c, VT_ERR_BACKEND, "the CUDA driver is too old: libcuda.so.1 lacks %s: update the NVIDIA driver", vt__cu_syms[i].name);
            return 0;
        }
        memcpy((char *)&s->api + vt__cu_syms[i].off, &sym, sizeof sym);
    }
    r = s->api.cuInit(0);
    if (r == CUDA_ERROR_NO_DEVICE) {
        vt__fail(c, VT_ERR_BACKEND, "no CUDA device: cuInit reports CUDA_ERROR_NO_DEVICE (the driver sees no GPU): select VT_BACKEND_CPU");
        return 0;
    }
    if (!vt__cu_ck(s, r, "cuInit", "the CUDA driver could not start (is the GPU visible to this process?)")) return 0;
    if (!vt__cu_ck(s, s->api.cuDriverGetVersion(&s->driver_version), "cuDriverGetVersion", NULL)) return 0;
    if (!vt__cu_ck(s, s->api.cuDeviceGetCount(&count), "cuDeviceGetCount", NULL)) return 0;
    if (ordinal < 0 || ordinal >= count) {
        vt__fail(c, VT_ERR_BACKEND, "no CUDA device %d: this machine has %d (vt_desc.device is an ordinal from 0)", ordinal, count);
        return 0;
    }
    if (!vt__cu_ck(s, s->api.cuDeviceGet(&s->cudev, ordinal), "cuDeviceGet", NULL)) return 0;
    if (!vt__cu_ck(s, s->api.cuDeviceGetName(s->devname, (int)sizeof s->devname, s->cudev), "cuDeviceGetName", NULL) ||
        !vt__cu_ck(s, s->api.cuDeviceGetAttribute(&s->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, s->cudev),
                   "cuDeviceGetAttribute", NULL) ||
        !vt__cu_ck(s, s->api.cuDeviceGetAttribute(&s->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, s->cudev),
                   "cuDeviceGetAttribute", NULL) ||
        !vt__cu_ck(s, s->api.cuDeviceTotalMem(&s->total_mem, s->cudev), "cuDeviceTotalMem", NULL))
        return 0;
    if (s->cc_major < 7 || (s->cc_major == 7 && s->cc_minor < 5)) {
        vt__fail(c, VT_ERR_BACKEND, "CUDA device %d (%s) has compute capability %d.%d; the kernels need 7.5 or later",
                 ordinal, s->devname, s->cc_major, s->cc_minor);
        return 0;
    }
    /* the primary context: the one cuBLAS and any runtime-API code in the process share */
    if (!vt__cu_ck(s, s->api.cuDevicePrimaryCtxRetain(&s->ctx, s->cudev), "cuDevicePrimaryCtxRetain", NULL)) return 0;
    s->ctx_retained = 1;
    if (!vt__cu_ck(s, s->api.cuCtxSetCurrent(s->ctx), "cuCtxSetCurrent", NULL)) return 0;
    /* the kernels: Hopper's PTX on compute capability 9 and later, else the portable one */
    ptx = vt__cu_ptx(s, s->cc_major >= 9 ? 90 : 75);
    if (!ptx) { if (c->status == VT_OK) vt__fail(c, VT_ERR_NOMEM, "out of memory for the PTX"); return 0; }
    {
        char log[4096], isa[32], rel[32];
        CUjit_option opt[2];
        void *val[2];
        log[0] = 0;
        opt[0] = CU_JIT_ERROR_LOG_BUFFER; val[0] = log;
        opt[1] = CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES; val[1] = (void *)(uintptr_t)sizeof log;
        r = s->api.cuModuleLoadDataEx(&s->mod, ptx, 2, opt, val);
        vt__cu_ptx_versions(ptx, isa, sizeof isa, rel, sizeof rel);
        free(ptx);
        if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == CUDA_ERROR_INVALID_PTX) {
            vt__fail(c, VT_ERR_BACKEND, "CUDA: the kernels' PTX (ISA %s, written by CUDA release %s) is newer than this driver "
                                        "accepts (driver supports CUDA %d.%d): update the NVIDIA driver, or build the PTX with an "
                                        "nvcc no newer than %d.%d%s%s", isa, rel, s->driver_version / 1000,
                     (s->driver_version % 1000) / 10, s->driver_version / 1000, (s->driver_version % 1000) / 10,
                     log[0] ? "; JIT log: " : "", log);
            return 0;
        }
        if (r != CUDA_SUCCESS) {
            char hint[4200];
            snprintf(hint, sizeof hint, "loading the kernels' PTX (ISA %s) failed%s%s", isa, log[0] ? "; JIT log: " : "", log);
            return vt__cu_ck(s, r, "cuModuleLoadDataEx", hint);
        }
    }
    for (i = 0; i < VT__NK; i++)
        if (!vt__cu_ck(s, s->api.cuModuleGetFunction(&s->fn[i], s->mod, vt__kinfo[i].name), "cuModuleGetFunction",
                       "the PTX does not match this vtrain_cuda.cu.h: rebuild it"))
            return 0;
    /* cuBLAS on the same (primary, current) context */
    s->libcublas = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!s->libcublas) s->libcublas = dlopen("libcublas.so.12", RTLD_NOW | RTLD_LOCAL);
    if (!s->libcublas) s->libcublas = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
    if (!s->libcublas) {
        e = dlerror();
        vt__fail(c, VT_ERR_BACKEND, "cuBLAS not found: cannot load libcublas.so.13, .12 or libcublas.so (%s): install the CUDA "
                                    "toolkit's cuBLAS and put its directory in LD_LIBRARY_PATH", e ? e : "not found");
        return 0;
    }
    for (i = 0; i < (int)(sizeof vt__cu_syms / sizeof vt__cu_syms[0]); i++) {
        void *sym;
        if (!vt__cu_syms[i].blas) continue;
        sym = dlsym(s->libcublas, vt__cu_syms[i].name);
        if (!sym) {
            vt__fail(c, VT_ERR_BACKEND, "cuBLAS is too old: it lacks %s: install cuBLAS 12 or later", vt__cu_syms[i].name);
            return 0;
        }
        memcpy((char *)&s->api + vt__cu_syms[i].off, &sym, sizeof sym);
    }
    if (!vt__cu_bk(s, s->api.cublasCreate(&s->blas), "cublasCreate")) return 0;
    /* default math: IEEE binary64 DGEMM (no fixed-point emulation) and, for
       native mode's SGEMM, binary32 without TF32 */
    if (!vt__cu_bk(s, s->api.cublasSetMathMode(s->blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode")) return 0;
    if (!vt__cu_bk(s, s->api.cublasGetVersion(s->blas, &v), "cublasGetVersion")) return 0;
    s->dev = &vt__real_dev;
    return 1;
}

/* --- the emulated device ------------------------------------------------------ */
#ifdef VTRAIN_CUDA_EMU
#define VT__X(name, bar, maxb) \
    static void vt__emu_k_##name(const void *a) { name(*(const name##_a *)a); }
VT__KLIST(VT__X)
#undef VT__X
static void (*const vt__emu_fns[])(const void *) = {
#define VT__X(name, bar, maxb) vt__emu_k_##name,
    VT__KLIST(VT__X)
#undef VT__X
};

static void *vt__emu_dalloc(vt__cu *s, size_t bytes) {
    void *p = vt__emu_malloc(s->emu, bytes);
    if (!p) vt__fail(s->c, VT_ERR_NOMEM, "emulated device: out of memory allocating %zu bytes (its reserve is %zu GiB: set VTRAIN_EMU_GIB)",
                     bytes, s->emu->reserve >> 30);
    return p;
}
static void vt__emu_release(vt__cu *s, void *p) { if (p) vt__emu_free(s->emu, p); }
static int vt__emu_copy(vt__cu *s, void *dst, const void *src, size_t n, int kind) {
    (void)kind;
    vt__emu_open(s->emu);
    if (n) memcpy(dst, src, n);
    vt__emu_close(s->emu);
    return 1;
}
static int vt__emu_zero(vt__cu *s, void *p, size_t n) {
    vt__emu_open(s->emu);
    if (n) memset(p, 0, n);
    vt__emu_close(s->emu);
    return 1;
}
static int vt__emu_launch(vt__cu *s, int k, int64_t grid, int block, const void *args) {
    int ok;
    vt__emu_open(s->emu);
    ok = vt__emu_run(s->emu, vt__emu_fns[k], args, vt__kinfo[k].name, vt__kinfo[k].barrier, grid, block);
    vt__emu_close(s->emu);
    if (!ok) vt__fail(s->c, VT_ERR_BACKEND, "emulated device: %s", s->emu->err);
    return ok;
}
/* cuBLAS's semantics, argument checks included; the sum over k runs
   backwards with fma: another order than any CPU GEMM of vtrain's */
static int vt__emu_gemm(vt__cu *s, const vt__gemm_call *g) {
    int b, i, j, l;
    int ra = g->opa ? g->k : g->m, rb = g->opb ? g->n : g->k;
    if (g->m < 0 || g->n < 0 || g->k < 0 || g->batch < 1 || g->lda < (ra > 1 ? ra : 1) || g->ldb < (rb > 1 ? rb : 1) ||
        g->ldc < (g->m > 1 ? g->m : 1)) {
        vt__fail(s->c, VT_ERR_BACKEND, "cuBLAS (emulated): invalid GEMM arguments m=%d n=%d k=%d op=%c%c lda=%d ldb=%d ldc=%d "
                                       "batch=%d (CUBLAS_STATUS_INVALID_VALUE)", g->m, g->n, g->k, g->opa ? 'T' : 'N',
                 g->opb ? 'T' : 'N', g->lda, g->ldb, g->ldc, g->batch);
        return 0;
    }
    vt__emu_open(s->emu);
    for (b = 0; b < g->batch; b++)
        for (j = 0; j < g->n; j++)
            for (i = 0; i < g->m; i++) {
                if (!g->f32) {
                    const double *A = (const double *)g->A + b * g->sA, *B = (const double *)g->B + b * g->sB;
                    double *C = (double *)g->C + b * g->sC, acc = 0;
                    for (l = g->k - 1; l >= 0; l--)
                        acc = fma(g->opa ? A[l + (int64_t)i * g->lda] : A[i + (int64_t)l * g->lda],
                                  g->opb ? B[j + (int64_t)l * g->ldb] : B[l + (int64_t)j * g->ldb], acc);
                    C[i + (int64_t)j * g->ldc] = g->beta == 0 ? acc : acc + g->beta * C[i + (int64_t)j * g->ldc];
                } else {
                    const float *A = (const float *)g->A + b * g->sA, *B = (const float *)g->B + b * g->sB;
                    float *C = (float *)g->C + b * g->sC, acc = 0;
                    for (l = g->k - 1; l >= 0; l--)
                        acc = fmaf(g->opa ? A[l + (int64_t)i * g->lda] : A[i + (int64_t)l * g->lda],
                                   g->opb ? B[j + (int64_t)l * g->ldb] : B[l + (int64_t)j * g->ldb], acc);
                    C[i + (int64_t)j * g->ldc] = g->beta == 0 ? acc : acc + (float)g->beta * C[i + (int64_t)j * g->ldc];
                }
            }
    vt__emu_close(s->emu);
    return 1;
}
static int vt__emu_dsync(vt__cu *s) { (void)s; return 1; }
static void vt__emu_close_dev(vt__cu *s) { vt__emu_destroy(s->emu); s->emu = NULL; }
static const vt__dev vt__emu_dev = {"emulator", vt__emu_dalloc, vt__emu_release, vt__emu_copy, vt__emu_zero,
                                    vt__emu_launch, vt__emu_gemm, vt__emu_dsync, vt__emu_close_dev};

static int vt__emu_open_dev(vt__cu *s) {
    vt__emu *m = (vt__emu *)calloc(1, sizeof(vt__emu));
    if (!m || !vt__emu_mem_init(m)) {
        free(m);
        vt__fail(s->c, VT_ERR_NOMEM, "emulated device: cannot reserve its memory (set VTRAIN_EMU_GIB to fewer GiB)");
        return 0;
    }
    /* every instance runs threads in its own order (see >>cuda-emu) */
    m->seed = vt__mix(0x656d75ull + (uint64_t)++vt__emu_instances);
    if (vt__emu_guard < 0) {
        const char *g = getenv("VTRAIN_EMU_GUARD");
        m->guard = !(g && g[0] == '0');
    } else m->guard = vt__emu_guard;
    s->emu = m;
    s->dev = &vt__emu_dev;
    snprintf(s->devname, sizeof s->devname, "vtrain emulator");
    s->cc_major = 9;
    return 1;
}
#endif

/* ==========================================================================
   >>cuda-backend  vtrain's backend over the device layer

   MEMORY. A root storage lives on the device too (vt_tensor.bmem); the
   engine moves values on demand (>>tensors). Persistent tensors (parameters,
   their gradients, optimizer moments) get an allocation each, freed with the
   context; step tensors and op scratch come from two device arenas, rewound
   at the end of each step and of each op. An arena that needed more than
   one block in a life is replaced by one block of the total at its next
   rewind, so a steady run allocates nothing after its first step.

   WHAT CROSSES TO THE HOST during a step: the inputs the program writes,
   per rounding point the entry count and first NaN (16 bytes) and the
   entries themselves, the scalars the engine reads (the loss, the clip
   norms), integer index tensors for validation (embedding ids and
   cross-entropy targets, already on the host). Everything else stays on
   the device.
   ========================================================================== */

static void *vt__cu_arena_alloc(vt_ctx *c, vt__cu_arena *a, size_t n) {
    vt__cu *s = vt__cus(c);
    n = (n + 255) & ~(size_t)255;
    if (!n) n = 256;
    while (a->cur < a->n && a->b[a->cur].used + n > a->b[a->cur].size) a->cur++;
    if (a->cur == a->n) {
        size_t sz = n, tot = 0;
        int i;
        void *p;
        for (i = 0; i < a->n; i++) tot += a->b[i].size;
        if (sz < tot) sz = tot;                   /* double the arena */
        if (sz < ((size_t)16 << 20)) sz = (size_t)16 << 20;
        if (a->n == (int)(sizeof a->b / sizeof a->b[0])) {
            vt__fail(c, VT_ERR_NOMEM, "CUDA backend: a work arena ran out of blocks (%d)", a->n);
            return NULL;
        }
        p = s->dev->alloc(s, sz);
        if (!p) return NULL;
        a->b[a->n].p = (unsigned char *)p;
        a->b[a->n].size = sz;
        a->b[a->n].used = 0;
        a->cur = a->n++;
    }
    a->b[a->cur].used += n;
    return a->b[a->cur].p + a->b[a->cur].used - n;
}
static void vt__cu_arena_rewind(vt_ctx *c, vt__cu_arena *a) {
    vt__cu *s = vt__cus(c);
    int i;
    if (a->n > 1) { /* one block of the total from now on */
        size_t tot = 0;
        for (i = 0; i < a->n; i++) { tot += a->b[i].size; s->dev->release(s, a->b[i].p); }
        a->n = 0;
        a->b[0].p = (unsigned char *)s->dev->alloc(s, tot);
        if (a->b[0].p) { a->b[0].size = tot; a->n = 1; } /* else the error is set: out of device memory */
    }
    for (i = 0; i < a->n; i++) a->b[i].used = 0;
    a->cur = 0;
}
static void vt__cu_arena_free(vt_ctx *c, vt__cu_arena *a) {
    vt__cu *s = vt__cus(c);
    int i;
    for (i = 0; i < a->n; i++) s->dev->release(s, a->b[i].p);
    a->n = a->cur = 0;
}

static void *vt__cu_tmp(vt_ctx *c, size_t bytes) { return vt__cu_arena_alloc(c, &vt__cus(c)->ar[0], bytes); }

/* launches go through here: sizes checked against the kernel's limits */
static int vt__cu_launch(vt_ctx *c, int k, int64_t grid, int block, const void *args) {
    vt__cu *s = vt__cus(c);
    if (c->status != VT_OK) return 0;
    if (grid <= 0) return 1;
    if (grid > 2147483647 || block < 1 || block > vt__kinfo[k].maxb ||
        (vt__kinfo[k].barrier && (block < 32 || (block & (block - 1))))) {
        vt__fail(c, VT_ERR_STATE, "CUDA backend: bad launch of %s: %lld blocks of %d threads", vt__kinfo[k].name,
                 (long long)grid, block);
        return 0;
    }
    s->last_kernel = vt__kinfo[k].name;
    return s->dev->launch(s, k, grid, block, args);
}
/* the argument must be the kernel's own struct (a compile error otherwise) */
#define VT__CU_LAUNCH(c, name, grid, block, args) \
    vt__cu_launch((c), VT__K_##name, (grid), (block), (const void *)(1 ? &(args) : (const name##_a *)0))
static int64_t vt__cu_grid(int64_t n) {
    int64_t g = (n + 255) / 256;
    return g > 65535 ? 65535 : g;
}
/* a grid-stride kernel over n elements */
#define VT__CU_EW(c, name, n, args) ((n) > 0 ? VT__CU_LAUNCH(c, name, vt__cu_grid(n), 256, args) : 1)
/* threads per block for a row of n: a power of two from 32 to VTK_MAXB */
static int vt__cu_rowb(int64_t n) {
    int b = 32;
    while (b < VTK_MAXB && b < n) b *= 2;
    return b;
}
static int vt__cu_h2d(vt_ctx *c, void *dst, const void *src, size_t n) {
    vt__cu *s = vt__cus(c);
    return c->status == VT_OK && s->dev->copy(s, dst, src, n, 0);
}
static int vt__cu_d2h(vt_ctx *c, void *dst, const void *src, size_t n) {
    vt__cu *s = vt__cus(c);
    return c->status == VT_OK && s->dev->copy(s, dst, src, n, 1);
}
static vtk_out vt__cu_out(const vt__kout *o) {
    vtk_out r;
    r.x = o->x; r.e = o->e; r.acc = o->acc;
    return r;
}
static vtk_bnd vt__cu_bnd(const vt__ord *o) {
    vtk_bnd b;
    b.prob = o->bmode == VT_BOUND_PROBABILISTIC;
    b.lambda = o->lambda;
    return b;
}

/* --- the engine's memory hooks ------------------------------------------------- */

static void *vt__cu_storage(vt_ctx *c, vt_tensor *r) {
    vt__cu *s = vt__cus(c);
    void *p;
    if (r->bmem) return r->bmem;
    if (r->flags & VT_FLAG_PERSIST) {
        int64_t cap = s->cpers;
        if (!vt__grow(c, (void **)&s->pers, &cap, s->npers + 1, sizeof(void *))) return NULL;
        s->cpers = (int)cap;
        p = s->dev->alloc(s, vt__bytes(r));
        if (p) s->pers[s->npers++] = p;
    } else p = vt__cu_arena_alloc(c, &s->ar[1], vt__bytes(r));
    r->bmem = p;
    return p;
}
static void vt__cu_h2b(vt_ctx *c, void *dst, const void *host, size_t bytes) { vt__cu_h2d(c, dst, host, bytes); }
static void vt__cu_b2h(vt_ctx *c, void *host, const void *src, size_t bytes) { vt__cu_d2h(c, host, src, bytes); }
static void vt__cu_reset(vt_ctx *c, int life) {
    vt__cu *s = vt__cus(c);
    vt__cu_arena_rewind(c, &s->ar[0]);
    if (life) vt__cu_arena_rewind(c, &s->ar[1]);
    s->nsumsq = 0;
}
static void *vt__cu_alloc(vt_ctx *c, size_t bytes, int life) {
    return vt__cu_arena_alloc(c, &vt__cus(c)->ar[life ? 1 : 0], bytes);
}
static void vt__cu_copy(vt_ctx *c, double *dst, const double *src, int64_t n) {
    vt__cu *s = vt__cus(c);
    if (n > 0 && c->status == VT_OK) s->dev->copy(s, dst, src, sizeof(double) * (size_t)n, 2);
}
static void vt__cu_zero(vt_ctx *c, double *x, int64_t n) {
    vt__cu *s = vt__cus(c);
    if (n > 0 && c->status == VT_OK) s->dev->zero(s, x, sizeof(double) * (size_t)n);
}

/* --- rounding points ------------------------------------------------------------ */

/* mode 0: the trainer's rule, entries appended to out in index order; 1 cast;
   2 NaN check. Returns the first NaN's index or -1. */
static int64_t vt__cu_round_core(vt_ctx *c, double *x, const double *e, int64_t n, int mode, double ef, int compact,
                                 vt__ents *out) {
    vt__cu *s = vt__cus(c);
    vtk_round_a a;
    vtk_round_scan_a sc;
    int64_t nb = (n + VTK_RBLK - 1) / VTK_RBLK, *buf, sum[2], k;
    double t0;
    if (n <= 0 || c->status != VT_OK) return -1;
    if (s->profile) s->dev->sync(s); /* time the rounding alone (benches) */
    t0 = vt__now();
    memset(&a, 0, sizeof a);
    buf = (int64_t *)vt__cu_tmp(c, sizeof(int64_t) * (size_t)(3 * nb + 2));
    if (mode == 0) a.slot = (vtk_ent *)vt__cu_tmp(c, sizeof(vtk_ent) * (size_t)(nb * VTK_RCAP));
    if (!buf || (mode == 0 && !a.slot)) return -1;
    a.x = x; a.e = e; a.n = n; a.mode = mode; a.compact = compact;
    a.ef2 = 2 * ef * VT__SAFE;
    a.ef = ef;
    a.counts = buf; a.nanb = buf + nb; a.offs = buf + 2 * nb;
    VT__CU_LAUNCH(c, vtk_round, nb, 256, a);
    sc.counts = buf; sc.nanb = buf + nb; sc.nb = nb; sc.offs = buf + 2 * nb; sc.summary = buf + 3 * nb;
    VT__CU_LAUNCH(c, vtk_round_scan, 1, 256, sc);
    if (!vt__cu_d2h(c, sum, buf + 3 * nb, sizeof sum)) return -1;
    if (sum[1] >= 0) return sum[1];
    if (sum[0] > 0) {
        vtk_ent *dev = (vtk_ent *)vt__cu_tmp(c, sizeof(vtk_ent) * (size_t)sum[0]);
        vtk_ent *h = (vtk_ent *)vt__scratch(c, sizeof(vtk_ent) * (size_t)sum[0]);
        if (!dev || !h) return -1;
        a.pass = 1;
        a.out = dev;
        VT__CU_LAUNCH(c, vtk_round, nb, 256, a);
        if (!vt__cu_d2h(c, h, dev, sizeof(vtk_ent) * (size_t)sum[0])) return -1;
        for (k = 0; k < sum[0]; k++) vt__ents_push(c, out, h[k].i, vt__bitsf(h[k].r), (int)h[k].full);
    }
    s->round_seconds += vt__now() - t0;
    s->round_bytes += (double)n * (mode == 0 ? 24 : mode == 1 ? 16 : 8);
    return -1;
}
static int64_t vt__cu_cast(vt_ctx *c, double *x, int64_t n, int check_only) {
    return vt__cu_round_core(c, x, NULL, n, check_only ? 2 : 1, 1, 0, NULL);
}
static int64_t vt__cu_round(vt_ctx *c, double *x, const double *e, int64_t n, double ef, int compact, vt__ents *out) {
    return vt__cu_round_core(c, x, e, n, 0, ef, compact, out);
}
static void vt__cu_gather(vt_ctx *c, const double *x, const double *e, const vt__rent *at, int64_t m, double *xo, double *eo) {
    vtk_gather_a a;
    int64_t k, *hi = (int64_t *)vt__scratch(c, sizeof(int64_t) * (size_t)(m + 1));
    double *dv = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(3 * m + 1));
    if (m <= 0 || !hi || !dv) return;
    for (k = 0; k < m; k++) hi[k] = at[k].i;
    a.x = x; a.e = e; a.idx = (const int64_t *)(dv + 2 * m); a.m = m; a.xo = dv; a.eo = dv + m;
    if (!vt__cu_h2d(c, dv + 2 * m, hi, sizeof(int64_t) * (size_t)m)) return;
    VT__CU_EW(c, vtk_gather, m, a);
    vt__cu_d2h(c, xo, dv, sizeof(double) * (size_t)m);
    vt__cu_d2h(c, eo, dv + m, sizeof(double) * (size_t)m);
}
static void vt__cu_put(vt_ctx *c, double *x, const vt__ents *en) {
    vtk_put_ents_a a;
    int64_t k;
    vtk_xent *h, *d;
    if (en->n <= 0) return;
    h = (vtk_xent *)vt__scratch(c, sizeof(vtk_xent) * (size_t)en->n);
    d = (vtk_xent *)vt__cu_tmp(c, sizeof(vtk_xent) * (size_t)en->n);
    if (!h || !d) return;
    for (k = 0; k < en->n; k++) { h[k].i = en->e[k].i; h[k].v = (double)en->e[k].r; }
    if (!vt__cu_h2d(c, d, h, sizeof(vtk_xent) * (size_t)en->n)) return;
    a.x = x; a.ents = d; a.m = en->n;
    VT__CU_EW(c, vtk_put_ents, en->n, a);
}
static void vt__cu_add_round(vt_ctx *c, double *g, const double *h, int64_t n, int cast) {
    vtk_add_round_a a;
    a.g = g; a.h = h; a.n = n; a.cast = cast;
    VT__CU_EW(c, vtk_add_round, n, a);
}

/* --- optimizer and clipping (>>optim) -------------------------------------------- */

static void vt__cu_optim(vt_ctx *c, const vt__opt_job *j) {
    vtk_optim_a a;
    const vt_optim *o = j->o;
    a.w = j->w; a.g = j->g; a.m = j->m; a.v = j->v; a.n = j->N;
    a.kind = o->kind; a.phase = j->phase; a.nesterov = o->s.nesterov;
    a.b1 = o->a.beta1; a.b2 = o->a.beta2; a.eps = o->a.eps; a.wd = o->a.weight_decay;
    a.lr = j->lr; a.bc1 = j->bc1; a.bc2 = j->bc2; a.mu = o->s.momentum; a.swd = o->s.weight_decay;
    VT__CU_EW(c, vtk_optim, j->N, a);
}
/* the squared norms of parameters [0, np) laid out from g, into out (host) */
static void vt__cu_sumsq_run(vt_ctx *c, const double *g, int np, int64_t first, double *out) {
    vtk_sumsq_part_a a;
    vtk_sumsq_fin_a f;
    int64_t nb = 0, off = 0, b, *h, *d;
    double *dv;
    int p;
    for (p = 0; p < np; p++) nb += (vt_numel(c->params[first + p]) + 4095) / 4096;
    h = (int64_t *)vt__scratch(c, sizeof(int64_t) * (size_t)(2 * nb + np + 1));
    d = (int64_t *)vt__cu_tmp(c, sizeof(int64_t) * (size_t)(2 * nb + np + 1));
    dv = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(nb + np + 1));
    if (!h || !d || !dv) return;
    b = 0;
    for (p = 0; p < np; p++) {
        int64_t n = vt_numel(c->params[first + p]), q;
        h[2 * nb + p] = b;
        for (q = 0; q < n; q += 4096, b++) { h[b] = off + q; h[nb + b] = off + (q + 4096 < n ? q + 4096 : n); }
        off += n;
    }
    h[2 * nb + np] = b;
    if (!vt__cu_h2d(c, d, h, sizeof(int64_t) * (size_t)(2 * nb + np + 1))) return;
    a.g = g; a.blo = d; a.bhi = d + nb; a.part = dv; a.f32 = c->ord.f32;
    VT__CU_LAUNCH(c, vtk_sumsq_part, nb, 256, a);
    f.part = dv; f.pfirst = d + 2 * nb; f.np = np; f.out = dv + nb; f.f32 = c->ord.f32;
    VT__CU_EW(c, vtk_sumsq_fin, np, f);
    vt__cu_d2h(c, out, dv + nb, sizeof(double) * (size_t)np);
}
/* vt_clip_grad_norm asks parameter by parameter; the first call computes
   them all in one pass and the rest are read from the cache */
static double vt__cu_sumsq(vt_ctx *c, int i, const double *g, int64_t n, double *S) {
    vt__cu *s = vt__cus(c);
    double v = 0;
    int64_t off = 0;
    int p;
    (void)n;
    for (p = 0; p < i; p++) off += vt_numel(c->params[p]);
    if (i == 0 || !s->nsumsq || g != s->sumsq_base + off) {
        int np = i == 0 ? c->nparams : 1;
        if (s->sumsq_cap < c->nparams + 1) {
            double *q = (double *)realloc(s->sumsq, sizeof(double) * (size_t)(c->nparams + 1));
            if (!q) { vt__fail(c, VT_ERR_NOMEM, "out of memory"); return 0; }
            s->sumsq = q;
            s->sumsq_cap = c->nparams + 1;
        }
        vt__cu_sumsq_run(c, g, np, i, s->sumsq + (i == 0 ? 0 : i));
        s->nsumsq = i == 0 ? c->nparams : 0;
        s->sumsq_base = g - off;
        v = s->sumsq[i];
    } else v = s->sumsq[i];
    *S = v;
    return v;
}
static void vt__cu_scale(vt_ctx *c, double *g, double sc, int64_t n) {
    vtk_scale_vec_a a;
    a.g = g; a.s = sc; a.n = n;
    VT__CU_EW(c, vtk_scale_vec, n, a);
}
/* SHA-256 of each 64 KiB block of a state tensor's binary32 values, hashed
   where the values are (the device), 32 bytes per block come back */
static int vt__cu_block_digests(vt_ctx *c, const vt_tensor *t, unsigned char *out) {
    vt__cu *s = vt__cus(c);
    vtk_sha_a a;
    int64_t n = vt_numel(t), nb = (n + VTK_DIG - 1) / VTK_DIG;
    if (c->status != VT_OK || t->dtype == VT_I32 || t->view_src || !t->bmem || !(t->loc & VT__LOC_DEV) || !vt_is_contiguous(t))
        return 0;
    if (nb == 0) return 1;
    if ((size_t)nb * 32 > s->dig_cap) {
        if (s->dig) s->dev->release(s, s->dig);
        s->dig_cap = 0;
        s->dig = (unsigned char *)s->dev->alloc(s, (size_t)nb * 32);
        if (!s->dig) return 0;
        s->dig_cap = (size_t)nb * 32;
    }
    a.x = (const double *)t->bmem; a.n = n; a.nblk = nb; a.out = s->dig;
    VT__CU_EW(c, vtk_sha, nb, a);
    return vt__cu_d2h(c, out, s->dig, (size_t)nb * 32);
}

/* --- products: the bound of >>gemm, then cuBLAS -------------------------------------

   vt__cu_mm is vt__mm for a batch of products C_q (M,N) (+)= A_q (M,K) B_q
   (K,N), q = q1 nb2 + q2, each operand read through strides (any transpose
   is free). In the order of the CPU: the bound first (it reads C's old
   value), then C's start (bias, or old + bias), then the product: with one
   chunk (the common case) cuBLAS adds it to C directly (beta = 1: one
   order-free sum of K + 2 terms); with chunks of the K dimension (a weight
   gradient summed per sequence) each chunk's product goes to its own buffer
   and vtk_chunk_add adds them to C in chunk order, as the op's definition
   says. In native mode the operands are converted to binary32 and cuBLAS's
   SGEMM does the products. */
typedef struct vt__mmd {
    int64_t M, N, K;
    const double *A; int64_t sam, sak;
    const double *B; int64_t sbk, sbn;
    double *C; int64_t ldc;
    double *E; int64_t lde;              /* NULL: no bound */
    const double *bias;                  /* per column, or NULL */
    int acc;
    int64_t kchunk;                      /* 0: one chunk */
    int crp;                             /* 1: a correctly rounded product (linear, matmul: as vt__mm) */
    int64_t nb1, nb2;                    /* batches q = q1 nb2 + q2 */
    int64_t sa1, sa2, sb1, sb2, sc1, sc2, se1, se2;
} vt__mmd;
static vt__mmd vt__cu_mmd(int64_t M, int64_t N, int64_t K) {
    vt__mmd d;
    memset(&d, 0, sizeof d);
    d.M = M; d.N = N; d.K = K; d.nb1 = d.nb2 = 1;
    return d;
}

/* a cuBLAS operand whose op(X) is R x Kd with element (r, k) at r sr + k sk:
   op N reads it column-major (ld along k), op T row-major (ld along r) */
static int vt__cu_operand(int64_t R, int64_t Kd, int64_t sr, int64_t sk, int *op, int *ld) {
    int64_t l;
    if ((sr == 1 || R == 1) && (Kd == 1 || sk >= R)) { *op = 0; l = Kd == 1 ? VT__MAX(R, 1) : sk; }
    else if ((sk == 1 || Kd == 1) && (R == 1 || sr >= Kd)) { *op = 1; l = R == 1 ? VT__MAX(Kd, 1) : sr; }
    else return 0;
    if (l > 2147483647) return 0;
    *ld = (int)l;
    return 1;
}
/* row-major C (M,N) = A B + beta C as cuBLAS's column-major C^T = B^T A^T */
static int vt__cu_gemm_rm(vt_ctx *c, int f32, int64_t M, int64_t N, int64_t K, const void *A, int64_t sam, int64_t sak,
                          const void *B, int64_t sbk, int64_t sbn, void *C, int64_t ldc, double beta, int64_t batch,
                          int64_t sA, int64_t sB, int64_t sC) {
    vt__cu *s = vt__cus(c);
    vt__gemm_call g;
    if (c->status != VT_OK) return 0;
    if (M <= 0 || N <= 0 || K <= 0 || batch <= 0) return 1;
    if (!vt__cu_operand(N, K, sbn, sbk, &g.opa, &g.lda) || !vt__cu_operand(K, M, sak, sam, &g.opb, &g.ldb) ||
        M > 2147483647 || N > 2147483647 || K > 2147483647 || ldc > 2147483647 || batch > 2147483647) {
        vt__fail(c, VT_ERR_STATE, "CUDA backend: a product (%lld x %lld x %lld, strides %lld %lld / %lld %lld) has a layout "
                                  "cuBLAS cannot read", (long long)M, (long long)N, (long long)K, (long long)sam, (long long)sak,
                 (long long)sbk, (long long)sbn);
        return 0;
    }
    g.f32 = f32;
    g.m = (int)N; g.n = (int)M; g.k = (int)K;
    g.A = B; g.sA = sB;
    g.B = A; g.sB = sA;
    g.beta = beta;
    g.C = C; g.ldc = (int)ldc; g.sC = sC;
    g.batch = (int)batch;
    return s->dev->gemm(s, &g);
}
/* per-line statistics for the bound: n1, n2, mx, th (each nb1 nb2 nl) */
static void vt__cu_stats(vt_ctx *c, const double *X, int64_t nl, int64_t K, int64_t s_outer, int64_t s_k, int64_t nb1,
                         int64_t nb2, int64_t s1, int64_t s2, double *st) {
    vtk_stats_a a;
    int64_t nlines = nb1 * nb2 * nl;
    memset(&a, 0, sizeof a);
    a.X = X; a.K = K; a.s_outer = s_outer; a.s_k = s_k; a.nl = nl; a.nb2 = nb2; a.s1 = s1; a.s2 = s2;
    a.nlines = nlines;
    a.n1 = st; a.n2 = st + nlines; a.mx = st + 2 * nlines; a.th = st + 3 * nlines;
    if (s_k == 1 || K <= 1) {
        VT__CU_LAUNCH(c, vtk_stats_rows, nlines, vt__cu_rowb(K), a);
        return;
    }
    a.nparts = VT__MAX(1, VT__MIN(65536 / VT__MAX(nlines, 1), K / 64));
    a.part = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(5 * a.nparts * nlines));
    if (!a.part) return;
    VT__CU_EW(c, vtk_stats_cols, a.nparts * nlines, a);
    VT__CU_EW(c, vtk_stats_fin, nlines, a);
}
static void vt__cu_mm(vt__kern *k, const vt__mmd *d) {
    vt_ctx *c = k->c;
    const vt__ord *o = k->o, *ob = o; /* ob: the bound's gamma, sound for a correctly rounded product */
    vt__ord so;
    int64_t nbat = d->nb1 * d->nb2, K = d->K, MN = d->M * d->N, kc, nch, q1, q2, ch;
    int f32 = o->f32, direct, i;
    if (c->status != VT_OK || d->M <= 0 || d->N <= 0 || nbat <= 0) return;
    if (d->crp && d->E && c->d.mode == VT_MODE_VERIFIED && !c->ncal) {
        /* every batch a correctly rounded product, as vt__mm registers them */
        vt__kout *out = NULL;
        for (i = 0; i < VT_MAX_SRC; i++)
            if (k->out[i].x && d->C >= k->out[i].x && d->C < k->out[i].x + k->out[i].n) out = &k->out[i];
        if (!out || d->ldc != d->N) { vt__fail(c, VT_ERR_STATE, "CUDA backend: a product outside its output"); return; }
        for (q1 = 0; q1 < d->nb1; q1++)
            for (q2 = 0; q2 < d->nb2; q2++)
                if (!vt__xprod_add(c, out, d->C + q1 * d->sc1 + q2 * d->sc2, d->M, d->N, K, d->A + q1 * d->sa1 + q2 * d->sa2,
                                   d->sam, d->sak, d->B + q1 * d->sb1 + q2 * d->sb2, d->sbk, d->sbn, d->bias, d->kchunk))
                    return;
        ob = vt__sound_ord(o, &so); /* as vt__mm_src */
    }
    kc = (d->kchunk <= 0 || d->kchunk > K) ? K : d->kchunk;
    nch = K > 0 ? (K + kc - 1) / kc : 1;
    if (nch > 1 && nbat > 1) { vt__fail(c, VT_ERR_STATE, "CUDA backend: chunked products are not batched"); return; }
    if (d->E) {
        vtk_gbound_a g;
        double *sa = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(4 * nbat * d->M));
        double *sb = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(4 * nbat * d->N));
        if (!sa || !sb) return;
        vt__cu_stats(c, d->A, d->M, K, d->sam, d->sak, d->nb1, d->nb2, d->sa1, d->sa2, sa);
        vt__cu_stats(c, d->B, d->N, K, d->sbn, d->sbk, d->nb1, d->nb2, d->sb1, d->sb2, sb);
        memset(&g, 0, sizeof g);
        g.M = d->M; g.N = d->N; g.nb2 = d->nb2; g.total = nbat * MN;
        g.an1 = sa; g.an2 = sa + nbat * d->M; g.amx = sa + 2 * nbat * d->M; g.ath = sa + 3 * nbat * d->M;
        g.bn1 = sb; g.bn2 = sb + nbat * d->N; g.bmx = sb + 2 * nbat * d->N; g.bth = sb + 3 * nbat * d->N;
        g.C0 = d->acc ? d->C : NULL; g.ldc = d->ldc; g.c1 = d->sc1; g.c2 = d->sc2;
        g.bias = d->bias;
        /* vt__gemm_bound_ws: one chunk is a sum of K + [C0] + [bias] exact
           terms; chunks add nch - 1 + [C0] ordered roundings */
        g.G = nch > 1 ? vt__gsum(ob, kc) + vt__g(ob, nch - 1 + (d->acc ? 1 : 0)) * (1 + vt__gsum(ob, kc))
                      : vt__gsum(ob, K + (d->acc ? 1 : 0) + (d->bias ? 1 : 0));
        g.E = d->E; g.lde = d->lde; g.e1 = d->se1; g.e2 = d->se2;
        VT__CU_EW(c, vtk_gbound, g.total, g);
    }
    direct = !f32 && nch == 1 && K > 0;
    if (!d->acc || d->bias) {
        if (!(direct && !d->acc && !d->bias)) { /* else cuBLAS writes C with beta = 0 */
            vtk_mm_init_a in;
            in.C = d->C; in.ldc = d->ldc; in.c1 = d->sc1; in.c2 = d->sc2; in.nb2 = d->nb2; in.M = d->M; in.N = d->N;
            in.total = nbat * MN; in.bias = d->bias; in.acc = d->acc; in.f32 = f32;
            VT__CU_EW(c, vtk_mm_init, in.total, in);
        }
    }
    if (K <= 0) return;
    if (direct) {
        double beta = (d->acc || d->bias) ? 1 : 0;
        for (q1 = 0; q1 < d->nb1; q1++)
            vt__cu_gemm_rm(c, 0, d->M, d->N, K, d->A + q1 * d->sa1, d->sam, d->sak, d->B + q1 * d->sb1, d->sbk, d->sbn,
                           d->C + q1 * d->sc1, d->ldc, beta, d->nb2, d->sa2, d->sb2, d->sc2);
        return;
    }
    {
        /* partial products per chunk (and batch), then added in chunk order */
        vtk_chunk_add_a ca;
        size_t es = f32 ? sizeof(float) : sizeof(double);
        unsigned char *P = (unsigned char *)vt__cu_tmp(c, es * (size_t)(nch * nbat * MN));
        const unsigned char *A = (const unsigned char *)d->A, *B = (const unsigned char *)d->B;
        if (!P) return;
        if (f32) { /* binary32 copies of the operands' whole spans */
            vtk_to_f32_a cv;
            int64_t spa = (d->nb1 - 1) * d->sa1 + (d->nb2 - 1) * d->sa2 + (d->M - 1) * d->sam + (K - 1) * d->sak + 1;
            int64_t spb = (d->nb1 - 1) * d->sb1 + (d->nb2 - 1) * d->sb2 + (K - 1) * d->sbk + (d->N - 1) * d->sbn + 1;
            float *fa = (float *)vt__cu_tmp(c, sizeof(float) * (size_t)spa), *fb = (float *)vt__cu_tmp(c, sizeof(float) * (size_t)spb);
            if (!fa || !fb) return;
            cv.dst = fa; cv.src = d->A; cv.n = spa;
            VT__CU_EW(c, vtk_to_f32, spa, cv);
            cv.dst = fb; cv.src = d->B; cv.n = spb;
            VT__CU_EW(c, vtk_to_f32, spb, cv);
            A = (const unsigned char *)fa;
            B = (const unsigned char *)fb;
        }
        for (ch = 0; ch < nch; ch++) {
            int64_t k0 = ch * kc, kl = VT__MIN(K, k0 + kc) - k0;
            for (q1 = 0; q1 < d->nb1; q1++)
                vt__cu_gemm_rm(c, f32, d->M, d->N, kl, A + es * (size_t)(q1 * d->sa1 + k0 * d->sak), d->sam, d->sak,
                               B + es * (size_t)(q1 * d->sb1 + k0 * d->sbk), d->sbk, d->sbn,
                               P + es * (size_t)((ch * nbat + q1 * d->nb2) * MN), d->N, 0, d->nb2, d->sa2, d->sb2, MN);
        }
        ca.C = d->C; ca.ldc = d->ldc; ca.c1 = d->sc1; ca.c2 = d->sc2; ca.nb2 = d->nb2; ca.M = d->M; ca.N = d->N;
        ca.total = nbat * MN; ca.nch = nch; ca.f32 = f32;
        ca.P = f32 ? NULL : (const double *)P;
        ca.Pf = f32 ? (const float *)P : NULL;
        VT__CU_EW(c, vtk_chunk_add, ca.total, ca);
    }
}

/* --- the ops, forward and backward (each mirrors vt__k_<op> in >>cpu) ------------- */

static void vt__cu_scale_put(vt__kern *k, const vt__kout *o, const double *in, int64_t n, double sc) {
    vtk_scale_put_a a;
    a.o = vt__cu_out(o); a.in = in; a.n = n; a.s = sc;
    VT__CU_EW(k->c, vtk_scale_put, n, a);
}

static void vt__cu_k_copy(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t, *src = t->src[0];
    int64_t n = vt_numel(t);
    if (!k->bwd) {
        vtk_copy_nd_a a;
        int d;
        a.x = k->out[0].x; a.src = vt__bp(c, src); a.n = n; a.nd = src->ndim;
        for (d = 0; d < 4; d++) { a.ne[d] = d < src->ndim ? src->ne[d] : 1; a.nb[d] = d < src->ndim ? src->nb[d] : 0; }
        VT__CU_EW(c, vtk_copy_nd, n, a);
        k->out[0].exact = 1;
    } else {
        vt__cu_scale_put(k, &k->out[0], vt__bp(c, t->grad), n, 1.0);
        k->out[0].exact = !k->out[0].acc;
    }
}

static void vt__cu_k_view_bwd(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t;
    const vt__kout *o = &k->out[0];
    vtk_view_bwd_a a;
    int d;
    if (!o->acc) vt__cu_zero(c, o->x, o->n);
    a.o = vt__cu_out(o); a.dy = vt__bp(c, t->grad); a.n = vt_numel(t); a.offs = t->view_offs; a.nd = t->ndim;
    for (d = 0; d < 4; d++) { a.ne[d] = d < t->ndim ? t->ne[d] : 1; a.nb[d] = d < t->ndim ? t->nb[d] : 0; }
    VT__CU_EW(c, vtk_view_bwd, a.n, a);
    k->out[0].exact = !o->acc;
}

/* stride of operand a along out's dim d under broadcasting (0: broadcast), as vt__boff */
static int64_t vt__cu_bstride(const vt_tensor *out, const vt_tensor *a, int d) {
    int da = d - (out->ndim - a->ndim);
    return (d < out->ndim && da >= 0 && a->ne[da] != 1) ? a->nb[da] : 0;
}
static void vt__cu_k_binary(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t;
    int64_t n = vt_numel(t);
    int d, si, nd = t->ndim;
    if (!k->bwd) {
        vtk_binary_a a;
        a.x = k->out[0].x; a.e = k->out[0].e; a.a = vt__bp(c, t->src[0]); a.b = vt__bp(c, t->src[1]); a.n = n; a.nd = nd;
        a.op = t->op == VT_OP_ADD ? 0 : t->op == VT_OP_SUB ? 1 : 2;
        for (d = 0; d < 4; d++) {
            a.ne[d] = d < nd ? t->ne[d] : 1;
            a.sa[d] = vt__cu_bstride(t, t->src[0], d);
            a.sb[d] = vt__cu_bstride(t, t->src[1], d);
        }
        VT__CU_EW(c, vtk_binary, n, a);
        return;
    }
    for (si = 0; si < 2; si++) {
        const vt__kout *o = &k->out[si];
        vt_tensor *s = t->src[si], *other = t->src[1 - si];
        int64_t ns = vt_numel(s), r = ns ? n / ns : 0, str = 1, ostr[4];
        double sign = (t->op == VT_OP_SUB && si == 1) ? -1.0 : 1.0;
        vtk_binary_red_a a;
        if (!o->x) continue;
        if (r == 1 && t->op != VT_OP_MUL) { /* same shape: dy or -dy */
            vt__cu_scale_put(k, o, vt__bp(c, t->grad), n, sign);
            k->out[si].exact = !o->acc;
            continue;
        }
        memset(&a, 0, sizeof a);
        a.o = vt__cu_out(o); a.dy = vt__bp(c, t->grad); a.other = vt__bp(c, other); a.ns = ns; a.r = r;
        a.mul = t->op == VT_OP_MUL; a.sign = sign; a.nd = nd; a.f32 = k->o->f32; a.bnd = vt__cu_bnd(k->o);
        for (d = nd - 1; d >= 0; d--) { ostr[d] = str; str *= t->ne[d]; }
        for (d = 0; d < 4; d++) { a.ne[d] = d < nd ? t->ne[d] : 1; a.so[d] = vt__cu_bstride(t, other, d); }
        for (d = 0; d < nd; d++) {
            int ds = d - (nd - s->ndim);
            if (ds >= 0 && s->ne[ds] != 1) { a.ksize[a.nk] = t->ne[d]; a.kstr[a.nk++] = ostr[d]; }
            else { a.fsize[a.nf] = t->ne[d]; a.fstr[a.nf++] = ostr[d]; }
        }
        VT__CU_EW(c, vtk_binary_red, ns, a);
    }
}

/* vt__row_chunk: the fixed outer order of a reduction over rows */
static int64_t vt__cu_row_chunk(const vt__kern *k, const vt_tensor *x, int64_t rows) {
    if (k->o->f32) return (rows + k->o->threads - 1) / k->o->threads;
    if (x->ndim >= 3) return x->ne[x->ndim - 2];
    return rows;
}

static void vt__cu_k_matmul(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t, *a = t->src[0], *b = t->src[1];
    int ta = (int)t->iparam[0], tb = (int)t->iparam[1];
    int64_t M = t->ne[t->ndim - 2], N = t->ne[t->ndim - 1];
    int64_t K = ta ? a->ne[a->ndim - 2] : a->ne[a->ndim - 1];
    int64_t nbat = vt_numel(t) / (M * N);
    int shared = b->ndim == 2 && t->ndim > 2;
    const double *A = vt__bp(c, a), *B = vt__bp(c, b);
    int64_t sam = ta ? 1 : K, sak = ta ? M : 1, sbk = tb ? 1 : N, sbn = tb ? K : 1;
    int64_t sa = M * K, sb = shared ? 0 : K * N;
    vt__mmd d;
    if (!k->bwd) {
        const vt__kout *o = &k->out[0];
        d = vt__cu_mmd(M, N, K);
        d.A = A; d.sam = sam; d.sak = sak; d.B = B; d.sbk = sbk; d.sbn = sbn;
        d.C = o->x; d.ldc = N; d.E = o->e; d.lde = N; d.acc = o->acc;
        d.nb2 = nbat; d.sa2 = sa; d.sb2 = sb; d.sc2 = M * N; d.se2 = M * N;
        d.crp = 1;
        vt__cu_mm(k, &d);
        return;
    }
    {
        const double *dy = vt__bp(c, t->grad);
        const vt__kout *oa = &k->out[0], *ob = &k->out[1];
        if (oa->x) { /* da = dy b^T (with ta: (K,M) = b dy^T) */
            if (!ta) {
                d = vt__cu_mmd(M, K, N);
                d.A = dy; d.sam = N; d.sak = 1; d.B = B; d.sbk = sbn; d.sbn = sbk;
                d.sa2 = M * N; d.sb2 = sb;
            } else {
                d = vt__cu_mmd(K, M, N);
                d.A = B; d.sam = sbk; d.sak = sbn; d.B = dy; d.sbk = 1; d.sbn = N;
                d.sa2 = sb; d.sb2 = M * N;
            }
            d.C = oa->x; d.ldc = d.N; d.E = oa->e; d.lde = d.N; d.acc = oa->acc;
            d.nb2 = nbat; d.sc2 = sa; d.se2 = sa;
            d.crp = 1;
            vt__cu_mm(k, &d);
        }
        if (ob->x) {
            if (shared) { /* db = sum over batches in batch order: chunks of M rows */
                int64_t rows = nbat * M, ch = k->o->f32 ? vt__cu_row_chunk(k, a, rows) : M;
                const double *Ar = A;
                if (ta) {
                    vtk_gather_rows_a gr;
                    double *g = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(rows * K));
                    if (!g) return;
                    gr.g = g; gr.A = A; gr.nbat = nbat; gr.M = M; gr.K = K; gr.sa = sa;
                    VT__CU_EW(c, vtk_gather_rows, rows * K, gr);
                    Ar = g;
                }
                if (!tb) {
                    d = vt__cu_mmd(K, N, rows);
                    d.A = Ar; d.sam = 1; d.sak = K; d.B = dy; d.sbk = N; d.sbn = 1;
                } else {
                    d = vt__cu_mmd(N, K, rows);
                    d.A = dy; d.sam = 1; d.sak = N; d.B = Ar; d.sbk = K; d.sbn = 1;
                }
                d.kchunk = ch;
            } else {
                if (!tb) {
                    d = vt__cu_mmd(K, N, M);
                    d.A = A; d.sam = sak; d.sak = sam; d.B = dy; d.sbk = N; d.sbn = 1;
                    d.sa2 = sa; d.sb2 = M * N;
                } else {
                    d = vt__cu_mmd(N, K, M);
                    d.A = dy; d.sam = 1; d.sak = N; d.B = A; d.sbk = sam; d.sbn = sak;
                    d.sa2 = M * N; d.sb2 = sa;
                }
                d.nb2 = nbat; d.sc2 = K * N; d.se2 = K * N;
            }
            d.C = ob->x; d.ldc = d.N; d.E = ob->e; d.lde = d.N; d.acc = ob->acc;
            d.crp = 1;
            vt__cu_mm(k, &d);
        }
    }
}

static void vt__cu_colsum(vt__kern *k, const vt__kout *o, const double *X, int64_t R, int64_t C, int64_t chunk,
                          int bits, const double *extra, const double *magp) {
    vt_ctx *c = k->c;
    vtk_colsum_part_a p;
    vtk_colsum_fin_a f;
    int64_t nch;
    chunk = chunk > 0 ? VT__MIN(chunk, R) : R;
    if (chunk < 1) chunk = 1;
    nch = (R + chunk - 1) / chunk;
    p.X = X; p.R = R; p.C = C; p.chunk = chunk; p.nch = nch; p.f32 = k->o->f32;
    p.part = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(3 * nch * C + 1));
    if (!p.part) return;
    p.mag = p.part + nch * C;
    p.mn = p.mag + nch * C;
    VT__CU_EW(c, vtk_colsum_part, nch * C, p);
    f.o = vt__cu_out(o); f.X = X; f.part = p.part; f.mag = p.mag; f.mn = p.mn; f.R = R; f.C = C; f.nch = nch; f.bits = bits;
    f.nterms = R + (o->acc ? 1 : 0);
    f.G = vt__gsum(k->o, chunk) + vt__g(k->o, nch - 1 + (o->acc ? 1 : 0)) * (1 + vt__gsum(k->o, chunk));
    f.extra = extra; f.magp = magp; f.f32 = k->o->f32; f.bnd = vt__cu_bnd(k->o);
    VT__CU_EW(c, vtk_colsum_fin, C, f);
}

static void vt__cu_k_linear(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t, *x = t->src[0], *w = t->src[1], *bias = t->src[2];
    int64_t IN = w->ne[1], OC = w->ne[0], R = vt_numel(x) / IN;
    const double *X = vt__bp(c, x), *W = vt__bp(c, w);
    vt__mmd d;
    if (!k->bwd) {
        d = vt__cu_mmd(R, OC, IN);
        d.A = X; d.sam = IN; d.sak = 1; d.B = W; d.sbk = 1; d.sbn = IN;
        d.C = k->out[0].x; d.ldc = OC; d.E = k->out[0].e; d.lde = OC; d.acc = k->out[0].acc;
        d.bias = bias ? vt__bp(c, bias) : NULL;
        d.crp = 1;
        vt__cu_mm(k, &d);
        return;
    }
    {
        const double *dy = vt__bp(c, t->grad);
        int64_t ch = vt__cu_row_chunk(k, x, R);
        if (k->out[0].x) { /* dx = dy w */
            d = vt__cu_mmd(R, IN, OC);
            d.A = dy; d.sam = OC; d.sak = 1; d.B = W; d.sbk = IN; d.sbn = 1;
            d.C = k->out[0].x; d.ldc = IN; d.E = k->out[0].e; d.lde = IN; d.acc = k->out[0].acc;
            d.crp = 1;
            vt__cu_mm(k, &d);
        }
        if (k->out[1].x) { /* dw = dy^T x, rows in chunks summed in order */
            d = vt__cu_mmd(OC, IN, R);
            d.A = dy; d.sam = 1; d.sak = OC; d.B = X; d.sbk = IN; d.sbn = 1; d.kchunk = ch;
            d.C = k->out[1].x; d.ldc = IN; d.E = k->out[1].e; d.lde = IN; d.acc = k->out[1].acc;
            d.crp = 1;
            vt__cu_mm(k, &d);
        }
        if (bias && k->out[2].x) vt__cu_colsum(k, &k->out[2], dy, R, OC, ch, 24, NULL, NULL);
    }
}

static void vt__cu_k_act(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t;
    int64_t n = vt_numel(t);
    const double *X = vt__bp(c, t->src[0]), *dy = k->bwd ? vt__bp(c, t->grad) : NULL;
    if (t->op == VT_OP_RELU) {
        vtk_relu_a a;
        a.o = vt__cu_out(&k->out[0]); a.X = X; a.dy = dy; a.n = n;
        VT__CU_EW(c, vtk_relu, n, a);
        k->out[0].exact = !k->out[0].acc;
    } else if (t->op == VT_OP_GELU) {
        /* the forward keeps sigmoid(2z) on the device for the backward; the
           same bits everywhere: no bound (vt__gelu_task) */
        vtk_gelu_a a;
        vt__same_everywhere(&k->out[0]);
        if (!k->bwd) t->extra = vt__cu_arena_alloc(c, &vt__cus(c)->ar[1], sizeof(double) * (size_t)(n ? n : 1));
        a.o = vt__cu_out(&k->out[0]); a.X = X; a.dy = dy; a.tc = (double *)t->extra; a.n = n; a.bwd = k->bwd;
        VT__CU_EW(c, vtk_gelu, n, a);
    } else {
        vtk_tanh_a a;
        vt__same_everywhere(&k->out[0]);
        a.o = vt__cu_out(&k->out[0]); a.X = X; a.Y = k->bwd ? vt__bp(c, t) : NULL; a.dy = dy; a.n = n; a.bwd = k->bwd;
        VT__CU_EW(c, vtk_tanh, n, a);
    }
}

static void vt__cu_k_softmax(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t, *x = t->src[0];
    vtk_softmax_a a;
    memset(&a, 0, sizeof a);
    a.o = vt__cu_out(&k->out[0]);
    if (t->op == VT_OP_ATT_SOFTMAX) { a.n = t->ne[2]; a.causal = t->ne[2]; }
    else a.n = x->ne[x->ndim - 1];
    a.R = a.n ? vt_numel(x) / a.n : 0;
    a.logsm = t->op == VT_OP_LOG_SOFTMAX; a.bwd = k->bwd; a.f32 = k->o->f32; a.bnd = vt__cu_bnd(k->o);
    if (!k->bwd) a.X = vt__bp(c, x);
    else { a.Y = vt__bp(c, t); a.dy = vt__bp(c, t->grad); }
    VT__CU_LAUNCH(c, vtk_softmax, a.R, vt__cu_rowb(a.n), a);
}

static void vt__cu_k_cross_entropy(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t, *x = t->src[0], *tg = t->src[1];
    int64_t V = x->ne[x->ndim - 1], R = vt_numel(x) / V, r;
    const int32_t *h = vt__hi(c, tg); /* int tensors live on the host: checked there */
    vtk_ce_a a;
    for (r = 0; r < R; r++)
        if (h[r] < 0 || h[r] >= V) {
            vt__fail(c, VT_ERR_ARG, "cross_entropy: target %d at row %lld is outside [0, %lld)", (int)h[r], (long long)r, (long long)V);
            return;
        }
    memset(&a, 0, sizeof a);
    a.o = vt__cu_out(&k->out[0]); a.X = vt__bp(c, x); a.tg = (const int32_t *)vt__bptr(c, tg, 0); a.R = R; a.V = V;
    a.bwd = k->bwd; a.f32 = k->o->f32; a.bnd = vt__cu_bnd(k->o);
    if (!k->bwd) {
        vtk_ce_loss_a l;
        a.l = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(2 * R + 1));
        if (!a.l) return;
        a.dl = a.l + R;
        VT__CU_LAUNCH(c, vtk_ce, R, vt__cu_rowb(V), a);
        l.o = a.o; l.l = a.l; l.dl = a.dl; l.R = R; l.f32 = a.f32; l.bnd = a.bnd;
        VT__CU_LAUNCH(c, vtk_ce_loss, 1, vt__cu_rowb(R), l);
    } else {
        a.g = vt__bp(c, t->grad);
        VT__CU_LAUNCH(c, vtk_ce, R, vt__cu_rowb(V), a);
    }
}

/* sum, mean (kind 0, 1) and mse (2) forward: per-block partials, then one block */
static void vt__cu_reduce(vt__kern *k, const double *A, const double *B, int64_t n, int kind) {
    vt_ctx *c = k->c;
    vtk_rpart_a p;
    vtk_rfinal_a f;
    int64_t nb = VT__MAX(1, VT__MIN((n + 2047) / 2048, 1024));
    p.A = A; p.B = B; p.n = n; p.kind = kind == 2; p.f32 = k->o->f32;
    p.part = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(3 * nb));
    if (!p.part) return;
    VT__CU_LAUNCH(c, vtk_rpart, nb, 256, p);
    f.o = vt__cu_out(&k->out[0]); f.part = p.part; f.nparts = nb; f.n = n; f.kind = kind; f.f32 = p.f32;
    f.bnd = vt__cu_bnd(k->o);
    VT__CU_LAUNCH(c, vtk_rfinal, 1, vt__cu_rowb(nb), f);
}

static void vt__cu_k_reduce(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t, *x = t->src[0];
    int64_t n = vt_numel(x);
    int mean = t->op == VT_OP_MEAN;
    if (!k->bwd) { vt__cu_reduce(k, vt__bp(c, x), NULL, n, mean); return; }
    {
        vtk_fill_put_a a;
        a.o = vt__cu_out(&k->out[0]); a.g = vt__bp(c, t->grad); a.n = n; a.mean = mean;
        VT__CU_EW(c, vtk_fill_put, n, a);
        k->out[0].exact = !mean && !k->out[0].acc;
    }
}

static void vt__cu_k_mse(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t;
    int64_t n = vt_numel(t->src[0]);
    const double *A = vt__bp(c, t->src[0]), *B = vt__bp(c, t->src[1]);
    if (!k->bwd) { vt__cu_reduce(k, A, B, n, 2); return; }
    {
        vtk_mse_bwd_a a;
        a.o0 = vt__cu_out(&k->out[0]); a.o1 = vt__cu_out(&k->out[1]); a.A = A; a.B = B; a.g = vt__bp(c, t->grad); a.n = n;
        VT__CU_EW(c, vtk_mse_bwd, n, a);
    }
}

static void vt__cu_k_layernorm(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t, *x = t->src[0];
    vtk_ln_a a;
    int64_t C = x->ne[x->ndim - 1], R = vt_numel(x) / C;
    int wb = k->bwd && (k->out[1].x || k->out[2].x);
    memset(&a, 0, sizeof a);
    a.o = vt__cu_out(&k->out[0]); a.X = vt__bp(c, x); a.W = vt__bp(c, t->src[1]); a.Bb = vt__bp(c, t->src[2]);
    a.R = R; a.C = C; a.eps = t->fparam[0]; a.bwd = k->bwd; a.f32 = k->o->f32; a.bnd = vt__cu_bnd(k->o);
    if (k->bwd) a.dy = vt__bp(c, t->grad);
    if (wb) {
        a.XH = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(2 * R * C));
        if (!a.XH) return;
        a.DX = a.XH + R * C;
    }
    VT__CU_LAUNCH(c, vtk_ln, R, vt__cu_rowb(C), a);
    if (wb) {
        int64_t ch = vt__cu_row_chunk(k, x, R);
        if (k->out[1].x) { /* dw: column sums of dy xhat, plus the propagated xhat error */
            vtk_colabs_a ab;
            double *extra = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(2 * C));
            if (!extra) return;
            ab.DX = a.DX; ab.XH = a.XH; ab.R = R; ab.C = C; ab.extra = extra; ab.magp = extra + C;
            VT__CU_EW(c, vtk_colabs, C, ab);
            vt__cu_colsum(k, &k->out[1], a.XH, R, C, ch, 53, extra, extra + C);
        }
        if (k->out[2].x) vt__cu_colsum(k, &k->out[2], a.dy, R, C, ch, 24, NULL, NULL);
    }
}

static void vt__cu_k_embedding(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t, *tab = t->src[0], *idx = t->src[1];
    int64_t V = tab->ne[0], C = tab->ne[1], P = vt_numel(idx), p, v, nv = 0;
    const int32_t *I = vt__hi(c, idx); /* int tensors live on the host: checked there */
    for (p = 0; p < P; p++)
        if (I[p] < 0 || I[p] >= V) {
            vt__fail(c, VT_ERR_ARG, "embedding: index %d at position %lld is outside [0, %lld)", (int)I[p], (long long)p, (long long)V);
            return;
        }
    if (!k->bwd) {
        vtk_embed_fwd_a a;
        a.x = k->out[0].x; a.tab = vt__bp(c, tab); a.idx = (const int32_t *)vt__bptr(c, idx, 0); a.P = P; a.C = C;
        VT__CU_EW(c, vtk_embed_fwd, P * C, a);
        k->out[0].exact = 1;
        return;
    }
    {
        /* rows touched, each with its positions in order (a counting sort
           on the host, where the indices are) */
        const vt__kout *o = &k->out[0];
        vtk_embed_bwd_a a;
        int64_t *cnt = (int64_t *)vt__scratch(c, sizeof(int64_t) * (size_t)(V + 1 + P + 3 * V + 1)), *pos, *list, *h, *d;
        if (!cnt) return;
        memset(cnt, 0, sizeof(int64_t) * (size_t)(V + 1));
        for (p = 0; p < P; p++) cnt[I[p] + 1]++;
        for (v = 0; v < V; v++) cnt[v + 1] += cnt[v];
        list = cnt + V + 1;
        h = list + P; /* vs, start, count of the touched rows */
        pos = (int64_t *)vt__scratch(c, sizeof(int64_t) * (size_t)(V + 1));
        if (!pos) return;
        memcpy(pos, cnt, sizeof(int64_t) * (size_t)V);
        for (p = 0; p < P; p++) list[pos[I[p]]++] = p;
        for (v = 0; v < V; v++)
            if (cnt[v + 1] > cnt[v]) { h[nv] = v; h[V + nv] = cnt[v]; h[2 * V + nv] = cnt[v + 1] - cnt[v]; nv++; }
        d = (int64_t *)vt__cu_tmp(c, sizeof(int64_t) * (size_t)(P + 3 * nv + 1));
        if (!d) return;
        vt__cu_h2d(c, d, list, sizeof(int64_t) * (size_t)P);
        vt__cu_h2d(c, d + P, h, sizeof(int64_t) * (size_t)nv);
        vt__cu_h2d(c, d + P + nv, h + V, sizeof(int64_t) * (size_t)nv);
        vt__cu_h2d(c, d + P + 2 * nv, h + 2 * V, sizeof(int64_t) * (size_t)nv);
        if (!o->acc) vt__cu_zero(c, o->x, V * C);
        a.o = vt__cu_out(o); a.dy = vt__bp(c, t->grad); a.list = d; a.vs = d + P; a.start = d + P + nv; a.cnt = d + P + 2 * nv;
        a.nv = nv; a.C = C; a.f32 = k->o->f32; a.bnd = vt__cu_bnd(k->o);
        VT__CU_EW(c, vtk_embed_bwd, nv * C, a);
    }
}

/* causal attention: the three ops of vt__k_attention, their products through cuBLAS */
static void vt__cu_k_attention(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t, *qkv = t->op == VT_OP_ATT_MIX ? t->src[1] : t->src[0];
    int64_t NH = t->iparam[0], hs = t->iparam[1], B = qkv->ne[0], T = qkv->ne[1], C = qkv->ne[2] / 3, C3 = 3 * C;
    double scale = 1.0 / sqrt((double)hs);
    const double *Q, *Kp, *Vp;
    vt__mmd d;
    if (t->op == VT_OP_ATT_SOFTMAX) { vt__cu_k_softmax(k); return; }
    Q = vt__bp(c, qkv);
    if (!Q) return;
    Kp = Q + C;
    Vp = Q + 2 * C;
    if (t->op == VT_OP_ATT_SCORES) {
        if (!k->bwd) { /* pre = scale Q K^T below the diagonal */
            const vt__kout *o = &k->out[0];
            vtk_att_post_a p;
            d = vt__cu_mmd(T, T, hs);
            d.A = Q; d.sam = C3; d.sak = 1; d.B = Kp; d.sbk = 1; d.sbn = C3;
            d.nb1 = B; d.nb2 = NH; d.sa1 = d.sb1 = T * C3; d.sa2 = d.sb2 = hs;
            d.C = o->x; d.ldc = T; d.sc1 = d.se1 = NH * T * T; d.sc2 = d.se2 = T * T; d.E = o->e; d.lde = T;
            vt__cu_mm(k, &d);
            p.x = o->x; p.e = o->e; p.nbh = B * NH; p.T = T; p.scale = scale;
            VT__CU_EW(c, vtk_att_post, B * NH * T * T, p);
        } else { /* dq = scale dpre K, dk = scale dpre^T Q, into dqkv */
            const vt__kout *o = &k->out[0];
            const double *dpre = vt__bp(c, t->grad);
            double *P = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(B * NH * T * hs));
            double *PE = o->e ? (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(B * NH * T * hs)) : NULL;
            vtk_att_put_a pa;
            int part;
            if (!P || (o->e && !PE)) return;
            for (part = 0; part < 2; part++) {
                d = vt__cu_mmd(T, hs, T);
                d.A = dpre; d.sam = part ? 1 : T; d.sak = part ? T : 1; d.sa1 = NH * T * T; d.sa2 = T * T;
                d.B = part ? Q : Kp; d.sbk = C3; d.sbn = 1; d.sb1 = T * C3; d.sb2 = hs;
                d.nb1 = B; d.nb2 = NH;
                d.C = P; d.ldc = hs; d.sc1 = d.se1 = NH * T * hs; d.sc2 = d.se2 = T * hs; d.E = PE; d.lde = hs;
                vt__cu_mm(k, &d);
                pa.o = vt__cu_out(o); pa.P = P; pa.PE = PE; pa.B = B; pa.T = T; pa.C = C; pa.NH = NH; pa.hs = hs;
                pa.part = part; pa.scale = scale;
                VT__CU_EW(c, vtk_att_put, B * T * C, pa);
            }
            {   /* the v part: values 0 (written) or unchanged, bounds 0 */
                vtk_att_zero_a z;
                z.rows = B * T; z.stride = C3; z.off = 2 * C; z.width = C;
                if (!o->acc) { z.x = o->x; VT__CU_EW(c, vtk_att_zero, z.rows * z.width, z); }
                if (o->e) { z.x = o->e; VT__CU_EW(c, vtk_att_zero, z.rows * z.width, z); }
            }
        }
        return;
    }
    {   /* ATT_MIX: out = att V per head */
        const double *att = vt__bp(c, t->src[0]);
        if (!k->bwd) {
            const vt__kout *o = &k->out[0];
            d = vt__cu_mmd(T, hs, T);
            d.A = att; d.sam = T; d.sak = 1; d.sa1 = NH * T * T; d.sa2 = T * T;
            d.B = Vp; d.sbk = C3; d.sbn = 1; d.sb1 = T * C3; d.sb2 = hs;
            d.nb1 = B; d.nb2 = NH;
            d.C = o->x; d.ldc = C; d.sc1 = d.se1 = T * C; d.sc2 = d.se2 = hs; d.E = o->e; d.lde = C;
            vt__cu_mm(k, &d);
            return;
        }
        {
            const double *dout = vt__bp(c, t->grad);
            if (k->out[0].x) { /* datt = dout V^T, masked */
                const vt__kout *o = &k->out[0];
                vtk_att_datt_a da;
                double *P = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(B * NH * T * T));
                double *PE = o->e ? (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(B * NH * T * T)) : NULL;
                if (!P || (o->e && !PE)) return;
                d = vt__cu_mmd(T, T, hs);
                d.A = dout; d.sam = C; d.sak = 1; d.sa1 = T * C; d.sa2 = hs;
                d.B = Vp; d.sbk = 1; d.sbn = C3; d.sb1 = T * C3; d.sb2 = hs;
                d.nb1 = B; d.nb2 = NH;
                d.C = P; d.ldc = T; d.sc1 = d.se1 = NH * T * T; d.sc2 = d.se2 = T * T; d.E = PE; d.lde = T;
                vt__cu_mm(k, &d);
                da.o = vt__cu_out(o); da.P = P; da.PE = PE; da.nbh = B * NH; da.T = T;
                VT__CU_EW(c, vtk_att_datt, B * NH * T * T, da);
            }
            if (k->out[1].x) { /* dv = att^T dout, into dqkv's v part */
                const vt__kout *o = &k->out[1];
                d = vt__cu_mmd(T, hs, T);
                d.A = att; d.sam = 1; d.sak = T; d.sa1 = NH * T * T; d.sa2 = T * T;
                d.B = dout; d.sbk = C; d.sbn = 1; d.sb1 = T * C; d.sb2 = hs;
                d.nb1 = B; d.nb2 = NH;
                d.C = o->x + 2 * C; d.ldc = C3; d.sc1 = d.se1 = T * C3; d.sc2 = d.se2 = hs;
                d.E = o->e ? o->e + 2 * C : NULL; d.lde = C3; d.acc = o->acc;
                vt__cu_mm(k, &d);
                {   /* the q and k parts: values 0 (written) or unchanged, bounds 0 */
                    vtk_att_zero_a z;
                    z.rows = B * T; z.stride = C3; z.off = 0; z.width = 2 * C;
                    if (!o->acc) { z.x = o->x; VT__CU_EW(c, vtk_att_zero, z.rows * z.width, z); }
                    if (o->e) { z.x = o->e; VT__CU_EW(c, vtk_att_zero, z.rows * z.width, z); }
                }
            }
        }
    }
}

static void vt__cu_k_dropout(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t;
    vtk_dropout_a a;
    a.o = vt__cu_out(&k->out[0]); a.in = k->bwd ? vt__bp(c, t->grad) : vt__bp(c, t->src[0]); a.n = vt_numel(t);
    a.p = t->fparam[0]; a.s = 1.0 / (1.0 - a.p); a.seed = (uint64_t)t->iparam[0]; a.stream = (uint64_t)t->iparam[1];
    VT__CU_EW(c, vtk_dropout, a.n, a);
}

static void vt__cu_copy2d(vt__kern *k, const vt__kout *o, const double *src, int64_t outer, int64_t len, int64_t dstride,
                          int64_t doff, int64_t sstride, int64_t soff, int exact) {
    vtk_copy2d_a a;
    a.o = vt__cu_out(o); a.src = src; a.outer = outer; a.len = len; a.dstride = dstride; a.doff = doff;
    a.sstride = sstride; a.soff = soff; a.exact = exact;
    VT__CU_EW(k->c, vtk_copy2d, outer * len, a);
}
static void vt__cu_k_concat(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t, *a = t->src[0], *b = t->src[1];
    int dim = (int)t->iparam[0], d;
    int64_t outer = 1, inner = 1, na, nb;
    for (d = 0; d < dim; d++) outer *= t->ne[d];
    for (d = dim + 1; d < t->ndim; d++) inner *= t->ne[d];
    na = a->ne[dim] * inner;
    nb = b->ne[dim] * inner;
    if (!k->bwd) {
        vt__cu_copy2d(k, &k->out[0], vt__bp(c, a), outer, na, na + nb, 0, na, 0, 1);
        vt__cu_copy2d(k, &k->out[0], vt__bp(c, b), outer, nb, na + nb, na, nb, 0, 1);
        k->out[0].exact = 1;
    } else {
        const double *dy = vt__bp(c, t->grad);
        if (k->out[0].x) vt__cu_copy2d(k, &k->out[0], dy, outer, na, na, 0, na + nb, 0, 0);
        if (k->out[1].x) vt__cu_copy2d(k, &k->out[1], dy, outer, nb, nb, 0, na + nb, na, 0);
        k->out[0].exact = !k->out[0].acc;
        k->out[1].exact = !k->out[1].acc;
    }
}
static void vt__cu_k_split(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t, *x = t->src[0];
    int dim = (int)t->iparam[0], d;
    int64_t start = t->iparam[1], len = t->ne[dim], outer = 1, inner = 1, nx;
    for (d = 0; d < dim; d++) outer *= x->ne[d];
    for (d = dim + 1; d < x->ndim; d++) inner *= x->ne[d];
    nx = x->ne[dim] * inner;
    if (!k->bwd) {
        vt__cu_copy2d(k, &k->out[0], vt__bp(c, x), outer, len * inner, len * inner, 0, nx, start * inner, 1);
        k->out[0].exact = 1;
    } else {
        const vt__kout *o = &k->out[0];
        if (!o->acc) vt__cu_zero(c, o->x, o->n);
        vt__cu_copy2d(k, o, vt__bp(c, t->grad), outer, len * inner, nx, start * inner, len * inner, 0, 0);
        k->out[0].exact = !o->acc;
    }
}

/* the dispatch: one switch for forward and backward, like vt__cpu_kernel */
/* --- convolution, pooling, batch norm ------------------------------------------------ */

/* vt__k_conv2d's products, the same layouts: col (G,Kg,N,P) and dcol
   (G,Kd,N,HW) built on the device, wt and dyt by vtk_copy_nd */
static void vt__cu_k_conv2d(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t;
    vt__cgeo g = vt__conv_geo(t);
    const double *X = vt__bp(c, t->src[0]), *Wt = vt__bp(c, t->src[1]);
    int64_t NP = g.N * g.P, NHW = g.N * g.HW, gi;
    double *col = NULL;
    vtk_im2col_a ia;
    vt__mmd d;
    memset(&ia, 0, sizeof ia);
    ia.N = g.N; ia.C = g.C; ia.H = g.H; ia.W = g.W; ia.OH = g.OH; ia.OW = g.OW; ia.KH = g.KH; ia.KW = g.KW;
    ia.G = g.G; ia.Cg = g.Cg; ia.OCg = g.OCg; ia.s = g.s; ia.p = g.p; ia.d = g.d;
    if (!k->bwd || k->out[1].x) {
        col = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(g.G * g.Kg * NP));
        if (!col) return;
        ia.dst = col; ia.src = X; ia.total = g.G * g.Kg * NP; ia.dcol = 0;
        VT__CU_EW(c, vtk_im2col, ia.total, ia);
    }
    if (!k->bwd) { /* batches q1 = image, q2 = group */
        vt__kout *o = &k->out[0];
        d = vt__cu_mmd(g.OCg, g.P, g.Kg);
        d.A = Wt; d.sam = g.Kg; d.sak = 1; d.B = col; d.sbk = NP; d.sbn = 1;
        d.C = o->x; d.ldc = g.P; d.E = o->e; d.lde = g.P; d.acc = o->acc; d.crp = 1;
        d.nb1 = g.N; d.nb2 = g.G;
        d.sa1 = 0; d.sa2 = g.OCg * g.Kg; d.sb1 = g.P; d.sb2 = g.Kg * NP;
        d.sc1 = g.OC * g.P; d.sc2 = g.OCg * g.P; d.se1 = d.sc1; d.se2 = d.sc2;
        vt__cu_mm(k, &d);
        return;
    }
    {
        const double *dy = vt__bp(c, t->grad);
        vt__kout *ox = &k->out[0], *ow = &k->out[1];
        if (ox->x) {
            vtk_copy_nd_a cp;
            double *wt = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(g.C * g.Kd));
            double *dcol = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(g.G * g.Kd * NHW));
            int64_t KK = g.KH * g.KW;
            if (!wt || !dcol) return;
            /* wt[g][ic][oc][q] = w[g OCg + oc][ic][q] */
            cp.x = wt; cp.src = Wt; cp.n = g.C * g.Kd; cp.nd = 4;
            cp.ne[0] = g.G; cp.ne[1] = g.Cg; cp.ne[2] = g.OCg; cp.ne[3] = KK;
            cp.nb[0] = g.OCg * g.Cg * KK; cp.nb[1] = KK; cp.nb[2] = g.Cg * KK; cp.nb[3] = 1;
            VT__CU_EW(c, vtk_copy_nd, cp.n, cp);
            ia.dst = dcol; ia.src = dy; ia.total = g.G * g.Kd * NHW; ia.dcol = 1;
            VT__CU_EW(c, vtk_im2col, ia.total, ia);
            d = vt__cu_mmd(g.Cg, g.HW, g.Kd);
            d.A = wt; d.sam = g.Kd; d.sak = 1; d.B = dcol; d.sbk = NHW; d.sbn = 1;
            d.C = ox->x; d.ldc = g.HW; d.E = ox->e; d.lde = g.HW; d.acc = ox->acc; d.crp = 1;
            d.nb1 = g.N; d.nb2 = g.G;
            d.sa1 = 0; d.sa2 = g.Cg * g.Kd; d.sb1 = g.HW; d.sb2 = g.Kd * NHW;
            d.sc1 = g.C * g.HW; d.sc2 = g.Cg * g.HW; d.se1 = d.sc1; d.se2 = d.sc2;
            vt__cu_mm(k, &d);
        }
        if (ow->x) { /* per group: N P terms in chunks of P, image order */
            vtk_copy_nd_a cp;
            double *dyt = (double *)vt__cu_tmp(c, sizeof(double) * (size_t)(g.OC * NP));
            int64_t ch = k->o->f32 ? (NP + k->o->threads - 1) / k->o->threads : g.P;
            if (!dyt) return;
            cp.x = dyt; cp.src = dy; cp.n = g.OC * NP; cp.nd = 3;
            cp.ne[0] = g.OC; cp.ne[1] = g.N; cp.ne[2] = g.P; cp.ne[3] = 1;
            cp.nb[0] = g.P; cp.nb[1] = g.OC * g.P; cp.nb[2] = 1; cp.nb[3] = 0;
            VT__CU_EW(c, vtk_copy_nd, cp.n, cp);
            for (gi = 0; gi < g.G; gi++) {
                int64_t off = gi * g.OCg * g.Kg;
                d = vt__cu_mmd(g.OCg, g.Kg, NP);
                d.A = dyt + gi * g.OCg * NP; d.sam = NP; d.sak = 1; d.B = col + gi * g.Kg * NP; d.sbk = 1; d.sbn = NP;
                d.C = ow->x + off; d.ldc = g.Kg; d.E = ow->e ? ow->e + off : NULL; d.lde = g.Kg; d.acc = ow->acc; d.crp = 1;
                d.kchunk = ch;
                vt__cu_mm(k, &d);
            }
        }
    }
}

static void vt__cu_k_pool(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t;
    vt__pgeo g = vt__pool_geo(t);
    vtk_pool_a a;
    memset(&a, 0, sizeof a);
    if (k->bwd && !k->out[0].x) return;
    a.o = vt__cu_out(&k->out[0]); a.X = vt__bp(c, t->src[0]); a.dy = k->bwd ? vt__bp(c, t->grad) : NULL;
    a.NC = g.N * g.C; a.H = g.H; a.W = g.W; a.OH = g.OH; a.OW = g.OW; a.KH = g.KH; a.KW = g.KW; a.s = g.s; a.p = g.p;
    a.max = t->op == VT_OP_MAXPOOL2D; a.bwd = k->bwd; a.f32 = k->o->f32; a.bnd = vt__cu_bnd(k->o);
    a.n = k->bwd ? vt_numel(t->src[0]) : vt_numel(t);
    VT__CU_EW(c, vtk_pool, a.n, a);
    if (!k->bwd && a.max) k->out[0].exact = 1;
}

static void vt__cu_k_batchnorm(vt__kern *k) {
    vt_ctx *c = k->c;
    vt_tensor *t = k->t, *x = t->src[0];
    vtk_bn_a a;
    memset(&a, 0, sizeof a);
    a.X = vt__bp(c, x);
    a.N = x->ne[0]; a.C = x->ne[1]; a.HW = x->ne[2] * x->ne[3]; a.M = a.N * a.HW; a.n = vt_numel(x);
    a.eps = t->fparam[0]; a.mom = t->fparam[1]; a.f32 = k->o->f32; a.bnd = vt__cu_bnd(k->o);
    if (t->op == VT_OP_BN_STATS) {
        a.o = vt__cu_out(&k->out[0]);
        if (!k->bwd) { a.mode = 0; VT__CU_LAUNCH(c, vtk_bn, a.C, vt__cu_rowb(a.M), a); return; }
        vt__same_everywhere(&k->out[0]);
        a.o = vt__cu_out(&k->out[0]);
        a.g = vt__bp(c, t->grad); a.st = vt__bp(c, t); a.mode = 1;
        VT__CU_EW(c, vtk_bn, a.n, a);
        return;
    }
    a.W = vt__bp(c, t->src[1]); a.Bb = vt__bp(c, t->src[2]); a.st = vt__bp(c, t->src[3]);
    vt__same_everywhere(&k->out[0]);
    a.o = vt__cu_out(&k->out[0]);
    if (!k->bwd) {
        a.mode = 2;
        VT__CU_EW(c, vtk_bn, a.n, a);
        if (k->out[1].x) {
            vt__same_everywhere(&k->out[1]);
            a.run = k->out[1].x; a.mode = 3;
            VT__CU_EW(c, vtk_bn, a.C, a);
        }
        return;
    }
    a.dy = vt__bp(c, t->grad);
    if (k->out[0].x) { a.mode = 4; VT__CU_EW(c, vtk_bn, a.n, a); }
    if (k->out[1].x || k->out[2].x || k->out[3].x) {
        a.ow = vt__cu_out(&k->out[1]); a.ob = vt__cu_out(&k->out[2]); a.os = vt__cu_out(&k->out[3]);
        a.mode = 5;
        VT__CU_LAUNCH(c, vtk_bn, a.C, vt__cu_rowb(a.M), a);
    }
}

static void vt__cu_kernel(vt__kern *k) {
    vt_tensor *t = k->t;
    switch (t->op) {
    case VT_OP_COPY: vt__cu_k_copy(k); break;
    case VT_OP_VIEW: if (k->bwd) vt__cu_k_view_bwd(k); break;
    case VT_OP_ADD: case VT_OP_SUB: case VT_OP_MUL: vt__cu_k_binary(k); break;
    case VT_OP_SCALE:
        vt__cu_scale_put(k, &k->out[0], k->bwd ? vt__bp(k->c, t->grad) : vt__bp(k->c, t->src[0]), vt_numel(t), t->fparam[0]);
        break;
    case VT_OP_MATMUL: vt__cu_k_matmul(k); break;
    case VT_OP_LINEAR: vt__cu_k_linear(k); break;
    case VT_OP_RELU: case VT_OP_GELU: case VT_OP_TANH: vt__cu_k_act(k); break;
    case VT_OP_SOFTMAX: case VT_OP_LOG_SOFTMAX: vt__cu_k_softmax(k); break;
    case VT_OP_CROSS_ENTROPY: vt__cu_k_cross_entropy(k); break;
    case VT_OP_MSE: vt__cu_k_mse(k); break;
    case VT_OP_LAYERNORM: vt__cu_k_layernorm(k); break;
    case VT_OP_EMBEDDING: vt__cu_k_embedding(k); break;
    case VT_OP_ATT_SCORES: case VT_OP_ATT_SOFTMAX: case VT_OP_ATT_MIX: vt__cu_k_attention(k); break;
    case VT_OP_DROPOUT: vt__cu_k_dropout(k); break;
    case VT_OP_SUM: case VT_OP_MEAN: vt__cu_k_reduce(k); break;
    case VT_OP_CONCAT: vt__cu_k_concat(k); break;
    case VT_OP_SPLIT: vt__cu_k_split(k); break;
    case VT_OP_CONV2D: vt__cu_k_conv2d(k); break;
    case VT_OP_MAXPOOL2D: case VT_OP_AVGPOOL2D: vt__cu_k_pool(k); break;
    case VT_OP_BATCHNORM2D: case VT_OP_BN_STATS: vt__cu_k_batchnorm(k); break;
    default: vt__fail(k->c, VT_ERR_STATE, "cuda backend: no kernel for op %s", vt_op_name(t->op));
    }
}

/* the correctly rounded products' fallback: the block list and the indices
   go up to the device, vtk_exact writes the values */
static void vt__cu_exact(vt_ctx *c, double *x, const vt__xprod *xp, const vt__ents *at) {
    vtk_exact_a a;
    int64_t q, *idx = (int64_t *)vt__scratch(c, sizeof(int64_t) * (size_t)(at->n + 1)), *didx;
    vt__xblk *db;
    if (!idx || !at->n) return;
    for (q = 0; q < at->n; q++) idx[q] = at->e[q].i;
    db = (vt__xblk *)vt__cu_tmp(c, sizeof(vt__xblk) * (size_t)xp->n);
    didx = (int64_t *)vt__cu_tmp(c, sizeof(int64_t) * (size_t)at->n);
    if (!db || !didx || !vt__cu_h2d(c, db, xp->b, sizeof(vt__xblk) * (size_t)xp->n) ||
        !vt__cu_h2d(c, didx, idx, sizeof(int64_t) * (size_t)at->n))
        return;
    a.x = x; a.b = db; a.nb = xp->n; a.idx = didx; a.n = at->n;
    VT__CU_EW(c, vtk_exact, at->n, a);
}

/* --- attach and destroy ------------------------------------------------------------ */

static void vt__cu_destroy(vt_ctx *c) {
    vt__cu *s = vt__cus(c);
    int i;
    if (!s) return;
    if (s->dev) {
        vt__cu_arena_free(c, &s->ar[0]);
        vt__cu_arena_free(c, &s->ar[1]);
        for (i = 0; i < s->npers; i++) s->dev->release(s, s->pers[i]);
        if (s->dig) s->dev->release(s, s->dig);
        s->dev->close(s);
    }
    free(s->pers);
    free(s->sumsq);
    free(s);
    c->bes = NULL;
}

/* the table (>>backend in vtrain.h): every member, by name */
static const vt__backend vt__cuda_backend = VT__BACKEND_TABLE("cuda", 1, vt__cu_);

/* Before a context trusts the device: its kernels must compute arithmetic
   as written and vtrain's own elementary functions as the CPU does. A PTX
   built without -fmad=false fuses a*b + c into fma (with a = 1 + 2^-30,
   b = 1 - 2^-30, c = -1 the product rounds to 1 and the sum is 0, the fused
   result -2^-60, as vt__contracts checks on the CPU); a device whose exp or
   log differ from the CPU's bits would break every e = 0 claim. */
static int vt__cu_probe(vt_ctx *c) {
    double in[5], out[3], want[2], *d;
    vtk_probe_a a;
    volatile double v[5] = {1 + 0x1p-30, 1 - 0x1p-30, -1, -3.6789, 1.2345e-5};
    int i;
    for (i = 0; i < 5; i++) in[i] = v[i];
    d = (double *)vt__cu_alloc(c, sizeof(double) * 8, 0);
    if (!d || !vt__cu_h2d(c, d, in, sizeof in)) return 0;
    a.in = d; a.out = d + 5;
    if (!VT__CU_LAUNCH(c, vtk_probe, 1, 32, a) || !vt__cu_d2h(c, out, d + 5, sizeof out)) return 0;
    vt__cu_reset(c, 0);
    if (out[0] != 0) {
        vt__fail(c, VT_ERR_BACKEND, "vt_create: the CUDA kernels fuse a*b + c into fma (the PTX was built without "
                                    "-fmad=false), which breaks bit-exact replay: rebuild it as vtrain_cuda.cu.h says");
        return 0;
    }
    want[0] = vt__dexp(in[3]);
    want[1] = vt__dlog(in[4]);
    if (memcmp(&out[1], want, sizeof want)) {
        vt__fail(c, VT_ERR_BACKEND, "vt_create: the device's exp(%.17g) = %.17g and log(%.17g) = %.17g differ from the CPU's "
                                    "%.17g and %.17g (vtrain's own functions must give the same bits everywhere)",
                 in[3], out[1], in[4], out[2], want[0], want[1]);
        return 0;
    }
    return 1;
}

/* vt_create with d.backend == VT_BACKEND_CUDA: the device d.device (an
   ordinal, or VT_CUDA_EMULATOR) becomes this context's backend, or the
   context fails with the reason */
static vt_status vt__cuda_attach(vt_ctx *c) {
    vt__cu *s = (vt__cu *)calloc(1, sizeof(vt__cu));
    const char *env = getenv("VTRAIN_CUDA_SYNC");
    int ok;
    if (!s) return vt__fail(c, VT_ERR_NOMEM, "out of memory");
    s->c = c;
    c->bes = s;
    s->sync_each = env && env[0] == '1';
    if (c->d.device == VT_CUDA_EMULATOR) {
#ifdef VTRAIN_CUDA_EMU
        ok = vt__emu_open_dev(s);
#else
        ok = 0;
        vt__fail(c, VT_ERR_BACKEND, "vt_create: device VT_CUDA_EMULATOR needs a build with VTRAIN_CUDA_EMU");
#endif
    } else {
        ok = vt__real_open(s, c->d.device);
        if (!ok) vt__real_close(s);
    }
    if (!ok) {
        free(s);
        c->bes = NULL;
        return c->status;
    }
    c->be = &vt__cuda_backend;
    if (!vt__cu_probe(c)) return c->status != VT_OK ? c->status : vt__fail(c, VT_ERR_BACKEND, "vt_create: the CUDA start-up probe failed");
    return VT_OK;
}
#endif /* !__CUDACC__ */
#endif /* VTRAIN_CUDA_CU_H */
