/* tests/test.h - the smallest test harness that counts.

   Each tests/test_*.c is one program: it defines VTRAIN_IMPLEMENTATION,
   includes this file, writes TEST(name) functions and lists them in main
   with RUN(name). A test passes when none of its CHECKs failed. The program
   prints one line per test and, last, "N passed, M failed"; tests/run.sh
   adds the programs' counts up for `make test`. */
#ifndef VT_TEST_H
#define VT_TEST_H
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int vt_test_pass, vt_test_fail, vt_test_bad;
static time_t vt_test_t0;
/* ends a test's line: with its wall-clock time when it took 2 s or more (so
   the slow tests of `make test` show themselves) */
static void vt_test_took(void) {
    double s = difftime(time(NULL), vt_test_t0);
    if (s >= 2) printf("  (%.0f s)", s);
    printf("\n");
}
static const char *vt_test_filter; /* run only tests whose name contains this (argv[1]) */

static void vt_test_failf(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    if (!vt_test_bad) printf("\n");
    vt_test_bad = 1;
    printf("    %s:%d: ", file, line);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (!(cond)) vt_test_failf(__FILE__, __LINE__, __VA_ARGS__);                         \
    } while (0)

/* a printed note that is not a check (a measured number, a skip) */
#define NOTE(...) (printf("    note: "), printf(__VA_ARGS__), printf("\n"))

#define TEST(name) static void name(void)

#define RUN(name)                                                                            \
    do {                                                                                     \
        if (vt_test_filter && !strstr(#name, vt_test_filter)) break;                         \
        printf("%-44s", #name);                                                              \
        fflush(stdout);                                                                      \
        vt_test_bad = 0;                                                                     \
        vt_test_t0 = time(NULL);                                                             \
        name();                                                                              \
        if (vt_test_bad) { printf("FAIL %s", #name); vt_test_fail++; }                        \
        else { printf("ok"); vt_test_pass++; }                                                \
        vt_test_took();                                                                      \
        fflush(stdout);                                                                      \
    } while (0)

#define TEST_FILTER(argc, argv) (vt_test_filter = (argc) > 1 ? (argv)[1] : NULL)

#define TEST_SUMMARY() (printf("%d passed, %d failed\n", vt_test_pass, vt_test_fail), vt_test_fail ? 1 : 0)

/* --- files -------------------------------------------------------------------
   What the tests do to files: read one whole (slurp: malloc'd, NULL and
   *n = 0 if it cannot), write one (spit), remove or copy a directory. */
#if defined(__GNUC__) || defined(__clang__)
#define VT_TEST_UNUSED __attribute__((unused))
#else
#define VT_TEST_UNUSED
#endif
static VT_TEST_UNUSED unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char *b;
    long sz;
    *n = 0;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = sz >= 0 ? (unsigned char *)malloc((size_t)sz + 1) : NULL;
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) { free(b); b = NULL; }
    fclose(f);
    if (b) *n = (size_t)sz;
    return b;
}
static VT_TEST_UNUSED void spit(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) { fwrite(b, 1, n, f); fclose(f); }
}
static VT_TEST_UNUSED void rm_rf(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("    (could not remove %s)\n", dir);
}
static VT_TEST_UNUSED void cp_r(const char *from, const char *to) {
    char cmd[1200];
    rm_rf(to);
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", from, to);
    if (system(cmd) != 0) printf("    (could not copy %s)\n", from);
}

/* --- op coverage -------------------------------------------------------------
   Which ops a test program ran, forward and backward: vt_test_cover(c)
   records the rounding-point kinds context c produced (call it before
   vt_destroy), vt_test_cover_kind(k) records one, and
   vt_test_check_coverage(where, engine) fails for every op of VT__OP_LIST
   this program never ran: a graph op's forward (unless it is a view) and
   at least one of its gradients, and with engine = 1 the engine's own
   points (optimizer, clipping). Retired ids are skipped. */
#ifdef VT_POINT_KINDS
static unsigned char vt_test_ran[VT_POINT_KINDS];
static VT__UNUSED void vt_test_cover_kind(int kind) {
    if (kind >= 0 && kind < VT_POINT_KINDS) vt_test_ran[kind] = 1;
}
static VT__UNUSED void vt_test_cover(const vt_ctx *c) {
    int k;
    if (!c) return;
    for (k = 0; k < VT_POINT_KINDS; k++) {
        vt_log_stats s;
        vt_log_kind_stats(c, k, &s, NULL, 0);
        if (s.runs > 0) vt_test_ran[k] = 1;
    }
}
static VT__UNUSED void vt_test_check_coverage(const char *where, int engine) {
    int op, slot;
    for (op = 1; op < VT_OP_COUNT; op++) {
        unsigned f = vt__op_flags(op);
        int fwd = vt_test_ran[op * 8], bwd = 0;
        for (slot = 1; slot < 8; slot++) bwd |= vt_test_ran[op * 8 + slot];
        if (f & VT__OPF_RETIRED) continue;
        if (f & VT__OPF_ENGINE) {
            CHECK(!engine || fwd || bwd, "op %d (%s): %s never runs it", op, vt_op_name((vt_op)op), where);
            continue;
        }
        CHECK(fwd || (f & VT__OPF_NOFWD), "op %d (%s): %s never runs its forward", op, vt_op_name((vt_op)op), where);
        CHECK(bwd, "op %d (%s): %s never runs its backward", op, vt_op_name((vt_op)op), where);
    }
}
#endif

/* relative-or-absolute closeness */
static VT__UNUSED int vt_test_close(double a, double b, double rtol, double atol) {
    return fabs(a - b) <= atol + rtol * fabs(b);
}
#endif
