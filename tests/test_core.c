/* tests/test_core.c - hashing, randomness, data loading, errors. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "test.h"
#include <sys/wait.h>
#include <unistd.h>

static void hexof(const void *d, size_t n, char *out) {
    unsigned char h[32];
    vt_sha256(d, n, h);
    vt_hex(h, 32, out);
}

/* FIPS 180-2 / NIST CSRC example vectors */
TEST(sha256_vectors) {
    char hex[65];
    static char million[1000000];
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    vt_sha256_ctx s;
    unsigned char h[32];
    size_t i;
    hexof("", 0, hex);
    CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "empty: %s", hex);
    hexof("abc", 3, hex);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "abc: %s", hex);
    hexof(two, strlen(two), hex);
    CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"), "448 bits: %s", hex);
    memset(million, 'a', sizeof million);
    hexof(million, sizeof million, hex);
    CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "million a: %s", hex);
    /* streaming in odd pieces gives the same digest */
    vt_sha256_init(&s);
    for (i = 0; i < sizeof million; i += 997) vt_sha256_update(&s, million + i, VT__MIN(997, sizeof million - i));
    vt_sha256_final(&s, h);
    vt_hex(h, 32, hex);
    CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "streamed: %s", hex);
}

/* the hardware (SHA-NI) and plain-C compression functions agree */
TEST(sha256_block_paths_agree) {
    int r;
    for (r = 0; r < 200; r++) {
        unsigned char blk[64];
        uint32_t h1[8], h2[8];
        int i;
        for (i = 0; i < 64; i++) blk[i] = (unsigned char)vt_rng_u64(8, (uint64_t)r, (uint64_t)i);
        for (i = 0; i < 8; i++) h1[i] = h2[i] = (uint32_t)vt_rng_u64(9, (uint64_t)r, (uint64_t)i);
        vt__sha_block(h1, blk);
        vt__sha_block_c(h2, blk);
        CHECK(!memcmp(h1, h2, sizeof h1), "block %d differs", r);
    }
}

/* two messages hashed at once give the digests of two separate hashes, at
   every length around the block and chunk edges, from unaligned buffers;
   so do two state blocks digested together (lengths that differ too) */
TEST(sha256_two_at_once) {
    static unsigned char a[5000], b[5000];
    size_t n, i;
    int r;
    for (i = 0; i < sizeof a; i++) { a[i] = (unsigned char)vt_rng_u64(10, 0, i); b[i] = (unsigned char)vt_rng_u64(10, 1, i); }
    for (n = 0; n + 3 < sizeof a; n += (n < 300 ? 1 : 61)) {
        unsigned char h1[32], h2[32], r1[32], r2[32];
        vt_sha256_ctx s1, s2;
        vt_sha256_init(&s1);
        vt_sha256_init(&s2);
        vt__sha256_update2(&s1, a + 1, &s2, b + 3, n);
        vt_sha256_final(&s1, h1);
        vt_sha256_final(&s2, h2);
        vt_sha256(a + 1, n, r1);
        vt_sha256(b + 3, n, r2);
        CHECK(!memcmp(h1, r1, 32) && !memcmp(h2, r2, 32), "%zu bytes: the pair differs from two hashes", n);
    }
    for (r = 0; r < 6; r++) {
        static const int64_t na[6] = {16384, 16384, 40000, 100, 1, 16385}, nb[6] = {16384, 100, 40000, 16384, 1, 3};
        vt_desc d = vt_desc_default();
        vt_ctx *c = vt_create(&d);
        vt_tensor *x = vt_param(c, "x", 1, &na[r]), *y = vt_param(c, "y", 1, &nb[r]);
        unsigned char p1[32], p2[32], s1[32], s2[32];
        int64_t k;
        for (k = 0; k < na[r]; k++) ((double *)x->data)[k] = (float)vt_rng_normal(11, 0, (uint64_t)k);
        for (k = 0; k < nb[r]; k++) ((double *)y->data)[k] = (float)vt_rng_normal(11, 1, (uint64_t)k);
        vt__block_digest2(x, na[r] > 16384 ? 1 : 0, y, 0, p1, p2);
        vt__block_digest(x, na[r] > 16384 ? 1 : 0, s1);
        vt__block_digest(y, 0, s2);
        CHECK(!memcmp(p1, s1, 32) && !memcmp(p2, s2, 32), "blocks of %lld and %lld values: the pair differs", (long long)na[r], (long long)nb[r]);
        vt_destroy(c);
    }
}

/* Philox4x32-10 known answers (Random123's kat_vectors) */
TEST(philox_known_answers) {
    uint32_t c1[4] = {0, 0, 0, 0}, k1[2] = {0, 0};
    uint32_t c2[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, k2[2] = {0xffffffffu, 0xffffffffu};
    uint32_t c3[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, k3[2] = {0xa4093822u, 0x299f31d0u};
    vt__philox(c1, k1);
    vt__philox(c2, k2);
    vt__philox(c3, k3);
    CHECK(c1[0] == 0x6627e8d5u && c1[1] == 0xe169c58du && c1[2] == 0xbc57ac4cu && c1[3] == 0x9b00dbd8u,
          "zeros: %08x %08x %08x %08x", c1[0], c1[1], c1[2], c1[3]);
    CHECK(c2[0] == 0x408f276du && c2[1] == 0x41c83b0eu && c2[2] == 0xa20bc7c6u && c2[3] == 0x6d5451fdu,
          "ones: %08x %08x %08x %08x", c2[0], c2[1], c2[2], c2[3]);
    CHECK(c3[0] == 0xd16cfe09u && c3[1] == 0x94fdccebu && c3[2] == 0x5001e420u && c3[3] == 0x24126ea1u,
          "pi: %08x %08x %08x %08x", c3[0], c3[1], c3[2], c3[3]);
}

/* the deterministic logarithm behind normal samples is accurate */
TEST(det_log_accuracy) {
    int i;
    double worst = 0;
    for (i = 1; i < 100000; i++) {
        double x = vt_rng_uniform(9, 9, (uint64_t)i) * 4 + 1e-9, d = fabs(vt__det_log(x) - log(x));
        double ulp = fabs(log(x)) * 0x1p-52 + 0x1p-1074;
        if (d / ulp > worst) worst = d / ulp;
    }
    CHECK(worst < 8, "det_log differs from libm by %.1f ulps", worst);
    NOTE("worst difference from libm log: %.2f ulps", worst);
}

TEST(normal_moments) {
    int i, n = 200000;
    double s = 0, s2 = 0, s4 = 0;
    for (i = 0; i < n; i++) {
        double z = vt_rng_normal(5, 1, (uint64_t)i);
        s += z; s2 += z * z; s4 += z * z * z * z;
    }
    s /= n; s2 /= n; s4 /= n;
    CHECK(fabs(s) < 0.01 && fabs(s2 - 1) < 0.01 && fabs(s4 - 3) < 0.05, "mean %g var %g kurtosis %g", s, s2, s4);
}

TEST(shuffle_is_permutation) {
    uint64_t n, i;
    for (n = 1; n < 3000; n += 367) {
        unsigned char *seen = (unsigned char *)calloc(n, 1);
        int ok = 1;
        for (i = 0; i < n; i++) {
            uint64_t j = vt_shuffle(3, 4, i, n);
            if (j >= n || seen[j]) ok = 0;
            else seen[j] = 1;
        }
        CHECK(ok, "vt_shuffle(n=%llu) is not a permutation", (unsigned long long)n);
        free(seen);
    }
}

/* initialisation is a function of (seed, stream, index): the same values
   whatever the thread count or order */
TEST(init_same_across_threads) {
    const char *orders[3] = {"threads:1", "threads:2", "threads:3,chaos:4"};
    unsigned char dg[3][32];
    int k;
    for (k = 0; k < 3; k++) {
        vt_desc d = vt_desc_default();
        vt_ctx *c;
        vt_gpt g;
        vt_gpt_config cfg;
        vt_order_parse(&d.order, orders[k]);
        c = vt_create(&d);
        memset(&cfg, 0, sizeof cfg);
        cfg.vocab = 17; cfg.context = 8; cfg.layers = 2; cfg.heads = 2; cfg.width = 16;
        vt_gpt_init(c, &g, &cfg, 99);
        vt_weights_digest(c, dg[k]);
        CHECK(vt_status_of(c) == VT_OK, "%s", vt_error_message(c));
        vt_destroy(c);
    }
    CHECK(!memcmp(dg[0], dg[1], 32) && !memcmp(dg[0], dg[2], 32), "initial weights differ between thread counts");
}

static int write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fputs(text, f);
    fclose(f);
    return 1;
}

TEST(digits_loader) {
    vt_digits d;
    vt_status st = vt_digits_load("data/digits.csv", &d);
    CHECK(st == VT_OK, "%s", vt_last_error());
    if (st == VT_OK) {
        int counts[10] = {0}, i;
        for (i = 0; i < d.n; i++) counts[d.y[i]]++;
        CHECK(d.n == 1797, "%d samples", d.n);
        CHECK(counts[0] == 178 && counts[8] == 174, "label counts %d %d", counts[0], counts[8]);
        CHECK(d.x[0] == 0.0f && d.x[2] == 5.0f / 16.0f, "first row %g %g", d.x[0], d.x[2]);
        vt_digits_free(&d);
    }
}

TEST(digits_bad_files) {
    vt_digits d;
    char row[512];
    int i;
    size_t l = 0;
    for (i = 0; i < 64; i++) l += (size_t)snprintf(row + l, sizeof row - l, "%d,", i % 17);
    snprintf(row + l, sizeof row - l, "3\n");
    CHECK(write_file("build/t_ok.csv", row) && vt_digits_load("build/t_ok.csv", &d) == VT_OK, "one good row: %s", vt_last_error());
    vt_digits_free(&d);
    row[strlen(row) - 1] = 0; /* no final newline: truncated */
    write_file("build/t_trunc.csv", row);
    CHECK(vt_digits_load("build/t_trunc.csv", &d) == VT_ERR_TRUNCATED, "truncated: %s", vt_last_error());
    CHECK(strstr(vt_last_error(), "truncated") != NULL, "message: %s", vt_last_error());
    write_file("build/t_short.csv", "1,2,3\n");
    CHECK(vt_digits_load("build/t_short.csv", &d) == VT_ERR_FORMAT, "short row");
    CHECK(strstr(vt_last_error(), "line 1") != NULL, "message names the line: %s", vt_last_error());
    row[5] = '9'; row[6] = '9'; /* a pixel value out of range somewhere */
    strcat(row, "\n");
    write_file("build/t_range.csv", row);
    CHECK(vt_digits_load("build/t_range.csv", &d) == VT_ERR_FORMAT, "out of range: %s", vt_last_error());
    CHECK(vt_digits_load("build/does_not_exist.csv", &d) == VT_ERR_IO, "missing file");
}

TEST(text_loader) {
    vt_text t;
    CHECK(vt_text_load("data/kjv_nt.txt", &t) == VT_OK, "%s", vt_last_error());
    CHECK(t.vocab == 63 && t.n == 949481, "vocab %d, %lld chars", t.vocab, (long long)t.n);
    CHECK(t.itos[t.tok[0]] == 'T', "first char");
    vt_text_free(&t);
    write_file("build/t_empty.txt", "");
    CHECK(vt_text_load("build/t_empty.txt", &t) == VT_ERR_FORMAT, "empty file accepted");
}

/* wrong shapes give a clear error, and errors are sticky (later ops are no-ops) */
TEST(shape_errors) {
    vt_desc d = vt_desc_default();
    vt_ctx *c = vt_create(&d);
    int64_t a[2] = {3, 4}, b[2] = {5, 6};
    vt_tensor *x, *y, *z;
    vt_step_begin(c);
    x = vt_new(c, VT_F32, 2, a);
    y = vt_new(c, VT_F32, 2, b);
    z = vt_matmul(c, x, y, 0, 0);
    CHECK(z == NULL && vt_status_of(c) == VT_ERR_SHAPE, "matmul accepted (3,4)x(5,6)");
    CHECK(strstr(vt_error_message(c), "K=4") && strstr(vt_error_message(c), "K=5"), "message: %s", vt_error_message(c));
    CHECK(vt_relu(c, x) == NULL, "an op ran after an error");
    vt_clear_error(c);
    z = vt_add(c, x, y);
    CHECK(z == NULL && strstr(vt_error_message(c), "broadcast"), "add: %s", vt_error_message(c));
    vt_clear_error(c);
    z = vt_linear(c, x, y, NULL);
    CHECK(z == NULL && strstr(vt_error_message(c), "linear"), "linear: %s", vt_error_message(c));
    vt_clear_error(c);
    {
        int64_t n1 = 4;
        int32_t bad[4] = {0, 1, 7, 2};
        vt_tensor *tab = vt_new(c, VT_F32, 2, a), *idx = vt_from_i32(c, 1, &n1, bad);
        CHECK(vt_embedding(c, tab, idx) == NULL && strstr(vt_error_message(c), "index 7"), "embedding: %s", vt_error_message(c));
    }
    vt_destroy(c);
}

/* Zero-size dimensions, shapes whose element count overflows, scalars where
   an op needs a last dimension, and out-of-range arguments: each is a
   VT_ERR_SHAPE or VT_ERR_ARG that names the op and the argument, never a
   division by zero (SIGFPE), a NaN loss, or a flipped gradient. Every case
   runs in a child process, so a crash is counted as a failure, not the end
   of the test program. */
typedef struct { const char *what; int status; const char *msg; } zcase_result;
static int zcase_run(int k, char *msg, size_t n);
static vt_status zcase(int k, vt_ctx *c) {
    int64_t e0[2] = {0, 4}, e1[2] = {4, 0}, e3[3] = {2, 3, 0}, t0[3] = {2, 0, 6}, w4[2] = {4, 4}, v4[1] = {4}, n0[1] = {0};
    int64_t big[3] = {(int64_t)1 << 32, (int64_t)1 << 32, 1}, big2[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
    vt_tensor *W = vt_param(c, "W", 2, w4), *b = vt_param(c, "b", 1, v4), *x;
    vt_init_const(c, W, 0.5);
    vt_init_const(c, b, 1.0);
    vt_step_begin(c);
    switch (k) {
    case 0: x = vt_new(c, VT_F32, 2, e1); vt_layernorm(c, x, vt_new(c, VT_F32, 1, n0), vt_new(c, VT_F32, 1, n0), 1e-5); break;
    case 1: x = vt_new(c, VT_F32, 2, e0); vt_layernorm(c, x, b, b, 1e-5); break;
    case 2: x = vt_new(c, VT_F32, 2, e0); vt_cross_entropy(c, x, vt_new(c, VT_I32, 1, n0)); break;
    case 3: x = vt_new(c, VT_F32, 2, e1); vt_cross_entropy(c, x, vt_new(c, VT_I32, 1, v4)); break;
    case 4: vt_mean(c, vt_new(c, VT_F32, 2, e0)); break;
    case 5: vt_mse(c, vt_new(c, VT_F32, 2, e0), vt_new(c, VT_F32, 2, e0)); break;
    case 6: vt_matmul(c, vt_new(c, VT_F32, 2, e1), vt_new(c, VT_F32, 2, e0), 0, 0); break; /* K = 0 */
    case 7: vt_linear(c, vt_new(c, VT_F32, 2, e0), W, b); break;
    case 8: vt_attention(c, vt_new(c, VT_F32, 3, e3), 2); break;
    case 9: vt_attention(c, vt_new(c, VT_F32, 3, t0), 2); break;
    case 10: vt_new(c, VT_F32, 3, big); break;   /* 2^64 elements: used to pass as 0 */
    case 11: vt_new(c, VT_F32, 2, big2); break;  /* 2^80 */
    case 12: vt_reshape(c, W, 3, big); break;
    case 13: vt_softmax(c, vt_new(c, VT_F32, 0, NULL)); break;
    case 14: vt_layernorm(c, vt_new(c, VT_F32, 0, NULL), b, b, 1e-5); break;
    case 15: vt_slice(c, W, 0, 1, INT64_MAX); break; /* start + len used to overflow */
    case 16: vt_split(c, W, 1, 2, INT64_MAX - 1); break;
    case 17: vt_backward(c, vt_sum(c, vt_mul(c, W, W))); vt_clip_grad_norm(c, -1.0); break;
    case 18: vt_backward(c, vt_sum(c, vt_mul(c, W, W))); vt_clip_grad_norm(c, NAN); break;
    case 19: vt_layernorm(c, W, b, b, INFINITY); break;
    case 20: vt_step_end(c); vt_param(c, "empty", 2, e0); break;
    default: return VT_OK;
    }
    return vt_status_of(c);
}
static const zcase_result zwant[] = {
    {"layernorm over C = 0", VT_ERR_SHAPE, "layernorm: x has shape (4,0)"},
    {"layernorm of 0 rows", VT_ERR_SHAPE, "layernorm: x has shape (0,4)"},
    {"cross_entropy of 0 rows", VT_ERR_SHAPE, "cross_entropy: logits has shape (0,4)"},
    {"cross_entropy over V = 0", VT_ERR_SHAPE, "cross_entropy: logits has shape (4,0)"},
    {"mean of nothing", VT_ERR_SHAPE, "mean: x has shape (0,4)"},
    {"mse of nothing", VT_ERR_SHAPE, "mse: pred has shape (0,4)"},
    {"matmul with K = 0", VT_ERR_SHAPE, "matmul: a has shape (4,0)"},
    {"linear of 0 rows", VT_ERR_SHAPE, "linear: x has shape (0,4)"},
    {"attention with C = 0", VT_ERR_SHAPE, "qkv has shape (2,3,0)"},
    {"attention with T = 0", VT_ERR_SHAPE, "qkv has shape (2,0,6)"},
    {"2^64 elements", VT_ERR_SHAPE, "element count overflow"},
    {"2^80 elements", VT_ERR_SHAPE, "element count overflow"},
    {"reshape to 2^64", VT_ERR_SHAPE, "reshape: dimension 1"},
    {"softmax of a scalar", VT_ERR_SHAPE, "softmax: x is a scalar"},
    {"layernorm of a scalar", VT_ERR_SHAPE, "layernorm: x is a scalar"},
    {"slice past the end", VT_ERR_ARG, "slice: start 1, length 9223372036854775807"},
    {"split past the end", VT_ERR_ARG, "split: start 2"},
    {"clip at -1", VT_ERR_ARG, "vt_clip_grad_norm: max_norm = -1"},
    {"clip at NaN", VT_ERR_ARG, "vt_clip_grad_norm: max_norm = nan"},
    {"layernorm eps inf", VT_ERR_ARG, "layernorm: eps = inf"},
    {"empty parameter", VT_ERR_SHAPE, "vt_param(empty): dimension 0 is 0"}};
#define NZCASES ((int)(sizeof zwant / sizeof zwant[0]))

static int zcase_run(int k, char *msg, size_t n) {
    int fd[2], status;
    pid_t pid;
    ssize_t got;
    if (pipe(fd) != 0) return -1;
    pid = fork();
    if (pid == 0) {
        vt_desc d = vt_desc_default();
        vt_ctx *c;
        char out[600];
        int st;
        d.order.threads = 1;
        c = vt_create(&d);
        st = (int)zcase(k, c); /* before the message: argument order is unspecified */
        snprintf(out, sizeof out, "%d %s", st, vt_error_message(c));
        if (write(fd[1], out, strlen(out) + 1) < 0) _exit(3);
        _exit(0);
    }
    close(fd[1]);
    got = read(fd[0], msg, n - 1);
    close(fd[0]);
    waitpid(pid, &status, 0);
    msg[got > 0 ? got : 0] = 0;
    if (WIFSIGNALED(status)) { snprintf(msg, n, "killed by signal %d", WTERMSIG(status)); return -1; }
    return atoi(msg);
}

TEST(zero_size_and_overflow_refused) {
    int k;
    for (k = 0; k < NZCASES; k++) {
        char msg[600];
        int st = zcase_run(k, msg, sizeof msg);
        CHECK(st == zwant[k].status && strstr(msg, zwant[k].msg), "%s: want %s '%s', got %s", zwant[k].what,
              vt_status_name((vt_status)zwant[k].status), zwant[k].msg, msg);
    }
}

/* vt_param takes only names that survive a safetensors header unescaped,
   fit the name field, and are not reserved */
TEST(param_names_checked) {
    static const struct { const char *name, *msg; } bad[] = {
        {"", "1..47 bytes"}, {"a\"b", "byte 0x22"}, {"back\\slash", "byte 0x5c"}, {"tab\there", "byte 0x09"},
        {"caf\xc3\xa9", "byte 0xc3"}, {"__metadata__", "reserved"}, {"optim0.m", "reserved"},
        {"a_name_that_is_exactly_forty_eight_bytes_long_xx", "1..47 bytes"}};
    vt_desc d = vt_desc_default();
    vt_ctx *c = vt_create(&d);
    int64_t ne[1] = {3};
    int k;
    for (k = 0; k < (int)(sizeof bad / sizeof bad[0]); k++) {
        vt_clear_error(c);
        CHECK(vt_param(c, bad[k].name, 1, ne) == NULL && vt_status_of(c) == VT_ERR_ARG && strstr(vt_error_message(c), bad[k].msg),
              "'%s': %s", bad[k].name, vt_error_message(c));
    }
    vt_clear_error(c);
    CHECK(vt_param(c, NULL, 1, ne) == NULL && vt_status_of(c) == VT_ERR_ARG, "a NULL name was accepted");
    vt_clear_error(c);
    CHECK(vt_param(c, "a_name_that_is_exactly_forty_seven_bytes_long_x", 1, ne) != NULL, "47 bytes: %s", vt_error_message(c));
    CHECK(vt_param(c, "h.0 [weird] (but) fine: {ok} / 'quoted' = 1", 1, ne) != NULL, "printable ASCII: %s", vt_error_message(c));
    CHECK(vt_param(c, "optimizer", 1, ne) != NULL, "'optimizer' is not reserved: %s", vt_error_message(c));
    vt_destroy(c);
}

/* a NaN in the inputs stops the step with the point and element named */
TEST(nan_is_reported) {
    vt_desc d = vt_desc_default();
    vt_ctx *c = vt_create(&d);
    int64_t ne[2] = {2, 2};
    float v[4] = {1, 2, NAN, 4};
    vt_tensor *w;
    w = vt_param(c, "w", 2, ne);
    vt_init_const(c, w, 1.0);
    vt_step_begin(c);
    vt_linear(c, vt_from_f32(c, 2, ne, v), w, NULL);
    CHECK(vt_status_of(c) == VT_ERR_NONFINITE, "status %s", vt_status_name(vt_status_of(c)));
    CHECK(strstr(vt_error_message(c), "linear") && strstr(vt_error_message(c), "element"), "message: %s", vt_error_message(c));
    vt_destroy(c);
}

TEST(order_strings) {
    vt_order o;
    char buf[128];
    CHECK(vt_order_parse(&o, "threads:3,block:64,chaos:7,nofma") == VT_OK, "%s", vt_last_error());
    CHECK(o.threads == 3 && o.block == 64 && o.chaos && o.chaos_seed == 7 && o.nofma, "parsed wrongly");
    vt_order_string(&o, buf, sizeof buf);
    CHECK(!strcmp(buf, "threads:3,block:64,chaos:7,nofma"), "%s", buf);
    CHECK(vt_order_parse(&o, "thread:3") != VT_OK && strstr(vt_last_error(), "unknown"), "typo accepted");
}

/* every number in an order string is whole and in range, and vt_create
   refuses a thread count it would otherwise start */
TEST(order_numbers_checked) {
    static const struct { const char *s, *msg; } bad[] = {
        {"threads:0", "outside 1..256"},        {"threads:257", "outside 1..256"},
        {"threads:100000", "outside 1..256"},  {"threads:-1", "needs a number"},
        {"threads:4294967297", "outside 1..256"}, {"threads:99999999999999999999", "does not fit in 64 bits"},
        {"block:0", "outside 1..4096"},        {"block:4097", "outside 1..4096"},
        {"block:4294967360", "outside 1..4096"}, {"chaos:-5", "needs a number"},
        {"chaos:", "needs a number"},          {"chaos: 5", "needs a number"},
        {"threads:2x", "expected ','"},        {"nofma:1", "unknown item"}};
    vt_order o;
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    int k;
    for (k = 0; k < (int)(sizeof bad / sizeof bad[0]); k++)
        CHECK(vt_order_parse(&o, bad[k].s) == VT_ERR_ARG && strstr(vt_last_error(), bad[k].msg), "'%s': %s", bad[k].s, vt_last_error());
    CHECK(vt_order_parse(&o, "threads:256,block:4096,chaos:18446744073709551615") == VT_OK && o.threads == 256 &&
              o.chaos_seed == UINT64_MAX, "the largest values: %s", vt_last_error());
    d.order.threads = 100000;
    c = vt_create(&d);
    CHECK(!c && vt_last_status() == VT_ERR_ARG && strstr(vt_last_error(), "order.threads = 100000"), "100000 threads: %s", vt_last_error());
    vt_destroy(c);
    d.order.threads = -1;
    c = vt_create(&d);
    CHECK(!c && vt_last_status() == VT_ERR_ARG, "-1 threads accepted");
    vt_destroy(c);
    d.order.threads = 1;
    d.order.block = 1 << 30;
    c = vt_create(&d);
    CHECK(!c && strstr(vt_last_error(), "order.block"), "block 2^30: %s", vt_last_error());
    vt_destroy(c);
}

/* the library refuses a build that fuses a*b+c */
/* Op ids are part of the log format (a rounding point's kind is id * 8 +
   slot): these are the ids of op table 0 (vtrain 0.1.0) and must never
   change. New ops take new ids; this table only grows. */
TEST(op_ids_pinned) {
    static const struct { int id; const char *name; } pinned[] = {
        {0, "leaf"}, {1, "view"}, {2, "copy"}, {3, "add"}, {4, "sub"}, {5, "mul"}, {6, "scale"}, {7, "matmul"},
        {8, "linear"}, {9, "relu"}, {10, "gelu"}, {11, "tanh"}, {12, "softmax"}, {13, "log_softmax"},
        {14, "cross_entropy"}, {15, "mse"}, {16, "layernorm"}, {17, "embedding"}, {18, "att_scores"},
        {19, "att_softmax"}, {20, "att_mix"}, {21, "dropout"}, {22, "sum"}, {23, "mean"}, {24, "concat"},
        {25, "split"}, {26, "optim"}, {27, "clip"}, {28, "scalar"},
        /* op table 1 */
        {29, "conv2d"}, {30, "batchnorm2d"}, {31, "bn_stats"}, {32, "maxpool2d"}, {33, "avgpool2d"}};
    static const struct { int kind; const char *name; } kinds[] = {
        {7 * 8, "matmul"}, {8 * 8 + 2, "linear.d1"}, {26 * 8 + 0, "optim.m"}, {26 * 8 + 1, "optim.v"}, {26 * 8 + 2, "optim.w"},
        {26 * 8 + 3, "optim.lr"}, {26 * 8 + 4, "optim.momentum"}, {27 * 8, "clip.norm"}, {27 * 8 + 1, "clip.grad"},
        {29 * 8 + 2, "conv2d.d1"}, {31 * 8, "bn_stats.stats"}, {31 * 8 + 2, "bn_stats.running"}};
    int i;
    char nm[64];
    for (i = 0; i < (int)(sizeof pinned / sizeof pinned[0]); i++)
        CHECK(!strcmp(vt_op_name((vt_op)pinned[i].id), pinned[i].name), "op id %d is '%s', op table 0 says '%s'", pinned[i].id,
              vt_op_name((vt_op)pinned[i].id), pinned[i].name);
    CHECK(VT_OP_MATMUL == 7 && VT_OP_OPTIM == 26 && VT_OP_CLIP == 27, "enum values moved");
    CHECK(VT_OP_COUNT >= 34, "VT_OP_COUNT %d: ids are never removed", (int)VT_OP_COUNT);
    for (i = 0; i < (int)(sizeof kinds / sizeof kinds[0]); i++) {
        vt__kind_name(kinds[i].kind, nm, sizeof nm);
        CHECK(!strcmp(nm, kinds[i].name), "kind %d is named '%s', want '%s'", kinds[i].kind, nm, kinds[i].name);
    }
    for (i = 0; i < VT_OP_COUNT; i++) /* every op of a later table comes after op table 0's */
        CHECK(i < 29 ? vt__ops[i].table == 0 : i < 34 ? vt__ops[i].table == 1 : vt__ops[i].table > 1, "op %d (%s) has op table %d", i,
              vt_op_name((vt_op)i), vt__ops[i].table);
}

TEST(no_contraction_here) {
    CHECK(!vt__contracts(), "this test program contracts a*b+c into fma");
}

/* --- the vector forms of >>elementary (issue 15) ---------------------------
   vt__vexp, vt__vtanh and vt__vsigmoid (and the AVX2 expm1 under them) on
   each ISA path against the scalar functions, bit for bit: edge cases (+-0,
   subnormals, the largest and smallest doubles, infinities, NaNs with
   payloads, every branch threshold and its neighbours, results that are
   subnormal or overflow, ties of the range reduction's rounding) and
   millions of random inputs (binary32 values over their whole range,
   doubles in [-800, 800], [-40, 40] and [-1, 1], and random bit patterns),
   at every offset and length modulo 8 so tails and lanes all run. */
static uint64_t elem_bits(double d) { uint64_t b; memcpy(&b, &d, 8); return b; }
static double elem_dbl(uint64_t b) { double d; memcpy(&d, &b, 8); return d; }

static int64_t elem_inputs(double *x, int64_t cap, uint64_t seed) {
    static const double edge[] = {0.0, -0.0, 4.9406564584124654e-324, -4.9406564584124654e-324, 2.2250738585072014e-308,
                                  -2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308, 0.35, -0.35, 20.0,
                                  -20.0, 707.0, -707.0, 709.0, -709.0, 709.782712893384, -745.2, -745.1332191019411,
                                  -744.44007192138122, -708.39641853226408, -707.7032713517042, 709.43613930310391, 1e-300,
                                  -1e-300, 1e300, -1e300, 3.4028234663852886e38, -3.4028234663852886e38, 1.401298464324817e-45,
                                  -1.401298464324817e-45, 0.5, -0.5, 1.0, -1.0, 10.0, -10.0, 17.5, 354.0, -354.0, 372.5, -372.5};
    int64_t n = 0, i;
    int q;
    for (i = 0; i < (int64_t)(sizeof edge / sizeof edge[0]); i++) {
        double e = edge[i];
        if (e == 0) { x[n++] = e; continue; }
        for (q = -3; q <= 3; q++) x[n++] = elem_dbl(elem_bits(e) + (uint64_t)(int64_t)q); /* neighbours */
    }
    x[n++] = INFINITY; x[n++] = -INFINITY; x[n++] = NAN; x[n++] = -NAN;
    x[n++] = elem_dbl(0x7ff0000000000001ull); x[n++] = elem_dbl(0xfff8000000000123ull);
    /* ties of k = round(x / ln2): x near (k + 1/2) ln2 */
    for (i = -1080; i <= 1030; i++) {
        double t = ((double)i + 0.5) * 0.69314718055994531;
        for (q = -2; q <= 2; q++) x[n++] = elem_dbl(elem_bits(t) + (uint64_t)(int64_t)q);
    }
    for (i = 0; n < cap; i++) {
        uint64_t r = vt_rng_u64(seed, 1, (uint64_t)i);
        double u = (double)(r >> 11) * 0x1p-53;
        switch (i % 5) {
        case 0: { uint32_t fb = (uint32_t)r; float f; memcpy(&f, &fb, 4); x[n++] = (double)f; break; }
        case 1: x[n++] = u * 1600 - 800; break;
        case 2: x[n++] = u * 80 - 40; break;
        case 3: x[n++] = u * 2 - 1; break;
        default: x[n++] = elem_dbl(r); break;
        }
    }
    return n;
}

TEST(elementary_vector_bit_identical) {
    enum { N = 1 << 20 };
    double *x = (double *)malloc(sizeof(double) * N), *y = (double *)malloc(sizeof(double) * N);
    int have512 = 0, isa, f, round;
    int64_t n, i, compared = 0, bad = 0;
#ifdef VT__AVX512
    __builtin_cpu_init();
    have512 = __builtin_cpu_supports("avx512f") != 0;
#endif
    CHECK(x && y, "out of memory");
    if (!x || !y) { free(x); free(y); return; }
    if (!have512) NOTE("no AVX-512 on this machine or in this build: the AVX2 forms only");
    for (round = 0; round < 2; round++) {
        n = elem_inputs(x, N, 77 + (uint64_t)round);
        for (isa = 0; isa <= have512; isa++) {
            vt__force_isa = isa;
            for (f = 0; f < 4; f++) {
                int64_t off = (round * 4 + f) % 8, len = n - off - (f % 8);
                double sub = f == 3 ? 0.75 : 0.0; /* exp of x - sub, as softmax calls it */
                if (f == 0 || f == 3) vt__vexp(x + off, sub, y + off, len);
                else if (f == 1) vt__vtanh(x + off, 0, y + off, len);
                else vt__vsigmoid(x + off, 0, y + off, len);
                for (i = off; i < off + len; i++) {
                    double want = f == 1 ? vt__dtanh(x[i]) : f == 2 ? vt__dsigmoid(x[i]) : vt__dexp(x[i] - sub);
                    compared++;
                    if (elem_bits(want) != elem_bits(y[i])) {
                        if (bad++ < 5)
                            CHECK(0, "isa %d f %d: x = %a (%016llx): scalar %a, vector %a", isa, f, x[i],
                                  (unsigned long long)elem_bits(x[i]), want, y[i]);
                    }
                }
            }
#ifdef VT__AVX2
            for (i = 0; i + 4 <= n; i += 4) { /* expm1 (tanh's core) by itself */
                double v[4];
                int l;
                _mm256_storeu_pd(v, vt__v4_expm1(_mm256_loadu_pd(x + i)));
                for (l = 0; l < 4; l++)
                    if (elem_bits(v[l]) != elem_bits(vt__dexpm1(x[i + l])) && bad++ < 5)
                        CHECK(0, "expm1: x = %a: scalar %a, vector %a", x[i + l], vt__dexpm1(x[i + l]), v[l]);
                compared += 4;
            }
#endif
            vt__force_isa = -1;
        }
    }
    CHECK(bad == 0, "%lld of %lld vector results differ from the scalar functions", (long long)bad, (long long)compared);
    NOTE("%lld results compared, %lld differ", (long long)compared, (long long)bad);
    free(x);
    free(y);
}

/* --- the GEMM's micro-kernels (issue 15) -----------------------------------
   vt__gemm_run with the base kernels (AVX2 where compiled, else plain C) and
   with the AVX-512 ones, for every order the suite trains with (default,
   another block, chaos with its per-block fma switch, native binary32), K
   split into ordered chunks or not, transposed operands, accumulation into
   an old C, and shapes with edge tiles on every side: the two must agree on
   every bit, and vt__gemm_set (C never read) with the product from C = 0. Against the textbook loop: bit for bit on integer inputs (exact
   in any order), and within twice the bound on binary32 normals. */
static void gemm_once(vt_ctx *c, int isa, int64_t M, int64_t N, int64_t K, const double *A, int ta, const double *B, int tb,
                      double *C, int64_t kchunk) {
    vt__force_isa = isa;
    vt__gemm_run(c, &c->ord, M, N, K, A, ta ? 1 : K, ta ? M : 1, B, tb ? 1 : N, tb ? K : 1, C, N, kchunk);
    vt__arena_reset(&c->scratch);
    vt__force_isa = -1;
}
/* vt__gemm_set: C's old value (here NaN) never read */
static void gemm_set_once(vt_ctx *c, int isa, int64_t M, int64_t N, int64_t K, const double *A, int ta, const double *B,
                          int tb, double *C, int64_t kchunk) {
    int64_t i;
    for (i = 0; i < M * N; i++) C[i] = NAN;
    vt__force_isa = isa;
    vt__gemm_set(c, &c->ord, M, N, K, A, ta ? 1 : K, ta ? M : 1, B, tb ? 1 : N, tb ? K : 1, C, N, kchunk);
    vt__arena_reset(&c->scratch);
    vt__force_isa = -1;
}

TEST(gemm_kernels_bit_identical) {
    static const int64_t shapes[][3] = {{1, 1, 1}, {5, 7, 3}, {12, 16, 256}, {13, 17, 257}, {6, 8, 600}, {37, 130, 300},
                                        {96, 128, 300}, {101, 203, 97}, {100, 40, 1030}, {24, 48, 2}};
    static const char *orders[] = {"", "block:7", "chaos:3", "threads:1,chaos:11", "native"};
    int have512 = 0, o, si, v, isa;
    int64_t compared = 0, differ = 0;
#ifdef VT__AVX512
    __builtin_cpu_init();
    have512 = __builtin_cpu_supports("avx512f");
#endif
    if (!have512) NOTE("no AVX-512 on this machine or in this build: the base kernels against the reference only");
    for (o = 0; o < 5; o++) {
        vt_desc d = vt_desc_default();
        vt_ctx *c;
        d.order.threads = 2;
        if (o == 4) d.mode = VT_MODE_NATIVE;
        else if (*orders[o]) CHECK(vt_order_parse(&d.order, orders[o]) == VT_OK, "order %s", orders[o]);
        c = vt_create(&d);
        for (si = 0; si < (int)(sizeof shapes / sizeof shapes[0]); si++)
            for (v = 0; v < 16; v++) {
                /* v: K in chunks, A transposed, B transposed, binary64 inputs
                   (with binary32 ones fma and a separate product agree) */
                int64_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], i, kchunk = (v & 1) ? 64 : 0;
                int ta = (v >> 1) & 1, tb = (v >> 2) & 1, acc = si & 1, wide = v >> 3;
                double *A = (double *)malloc(sizeof(double) * (size_t)(M * K)), *B = (double *)malloc(sizeof(double) * (size_t)(K * N));
                double *C0 = (double *)malloc(sizeof(double) * (size_t)(M * N)), *C1 = (double *)malloc(sizeof(double) * (size_t)(M * N));
                double *C2 = (double *)malloc(sizeof(double) * (size_t)(M * N));
                for (i = 0; i < M * K; i++) A[i] = vt_rng_normal(5, (uint64_t)si, (uint64_t)i);
                for (i = 0; i < M * K && !wide; i++) A[i] = (float)A[i];
                for (i = 0; i < K * N; i++) B[i] = (float)vt_rng_normal(6, (uint64_t)si, (uint64_t)i);
                for (i = 0; i < M * N; i++) C0[i] = C1[i] = acc ? (float)vt_rng_normal(7, (uint64_t)si, (uint64_t)i) : 0.0;
                gemm_once(c, 0, M, N, K, A, ta, B, tb, C0, kchunk);
                for (isa = 0; isa < (have512 ? 2 : 1) && !acc; isa++) { /* C = A B without reading C: as from C = 0 */
                    gemm_set_once(c, isa, M, N, K, A, ta, B, tb, C2, kchunk);
                    for (i = 0; i < M * N; i++) {
                        compared++;
                        if (memcmp(&C0[i], &C2[i], 8) && !differ++)
                            CHECK(0, "order '%s' %lldx%lldx%lld (variant %d) element %lld: from C = 0 %.17g, vt__gemm_set (%s) %.17g",
                                  orders[o], (long long)M, (long long)N, (long long)K, v, (long long)i, C0[i],
                                  isa ? "AVX-512" : "base", C2[i]);
                    }
                }
                if (have512) {
                    gemm_once(c, 1, M, N, K, A, ta, B, tb, C1, kchunk);
                    for (i = 0; i < M * N; i++) {
                        compared++;
                        if (memcmp(&C0[i], &C1[i], 8)) {
                            if (!differ++)
                                CHECK(0, "order '%s' %lldx%lldx%lld (variant %d) element %lld: base %.17g, AVX-512 %.17g", orders[o],
                                      (long long)M, (long long)N, (long long)K, v, (long long)i, C0[i], C1[i]);
                        }
                    }
                }
                free(A); free(B); free(C0); free(C1); free(C2);
            }
        vt_destroy(c);
    }
    CHECK(differ == 0, "%lld of %lld elements differ between the base and the AVX-512 kernels, or vt__gemm_set and C = 0",
          (long long)differ, (long long)compared);
    if (have512) NOTE("%lld elements compared, base and AVX-512 kernels", (long long)compared);
}

/* --- the verification passes in AVX-512 (issue 15) -------------------------
   The bound's statistics (lines as rows and as columns, causal walks), the
   written-out bound, the rounding check of a point with bounds and of a
   product with a lazy bound: with the base (AVX2) code and with the
   AVX-512 forms, on lines that mix binary32 normals with signed zeros,
   subnormals, few-bit values, infinities and NaNs, and values next to
   binary32 midpoints (so that the checks look and log). Every statistic,
   bound, cast and entry must agree on every bit. */
static double pass_value(uint64_t s, uint64_t i) {
    uint64_t h = vt_rng_u64(41, s, i);
    double v = vt_rng_normal(42, s, i) * ldexp(1.0, (int)(h % 9) - 4);
    switch ((h >> 8) % 23) {
    case 0: return 0.0;
    case 1: return -0.0;
    case 2: return (double)(float)(v * 0x1p-140); /* binary32 subnormal */
    case 3: return (double)((h >> 20) % 8);       /* few bits */
    case 4: return ((h >> 20) % 64) == 0 ? INFINITY : 0.0;
    case 5: return ((h >> 20) % 64) == 0 ? NAN : -0.0;
    default: return (double)(float)v;
    }
}
static int same_bits(const double *a, const double *b, int64_t n) { return !memcmp(a, b, sizeof(double) * (size_t)n); }

/* The statistics' rows walk four lines at a time (vt__stat_rows4) against
   the same walk one line at a time (vt__stat_one): lines of 8 to 300
   values (whole vectors and not), causal rows (VT__TRI_KLE: each line's own
   end), ranges that start and stop inside a group, the mix of pass_value
   (signed zeros, subnormals, few-bit lines, infinities, NaNs) and lines of
   only zeros; every statistic on every bit, in both kernel sets. */
TEST(stat_rows4_matches_one_at_a_time) {
    int64_t compared = 0, differ = 0;
    int rep;
    for (rep = 0; rep < 120; rep++) {
        int tri = rep % 3 == 2 ? VT__TRI_KLE : VT__TRI_NONE;
        int64_t R = 1 + rep * 7 % 67, K = tri ? R : rep % 4 == 0 ? 16 : 8 + rep * 13 % 293, i, k;
        int64_t lo = rep % 5, hi = R - (rep % 3), ld = K + rep % 2 * 3;
        double *X = (double *)malloc(sizeof(double) * (size_t)(R * ld + 1)), *st[2];
        int *ls = (int *)malloc(sizeof(int) * (size_t)(R + 1)), one;
        if (K < 8) { free(X); free(ls); continue; } /* the walk is for K >= 8 */
        if (hi <= lo) { lo = 0; hi = R; }
        for (i = 0; i < R; i++)
            for (k = 0; k < ld; k++) {
                double v = pass_value((uint64_t)(1000 + rep), (uint64_t)(i * ld + k));
                if (rep % 7 == 1) v = (double)(float)vt_rng_normal(47, rep, i * ld + k); /* ordinary activations */
                if (rep % 7 == 4) /* magnitudes 2^-30 to 2^30: sums that round (an order change shows) */
                    v = (double)(float)(vt_rng_normal(49, rep, i * ld + k) * ldexp(1.0, (int)(vt_rng_u64(50, rep, i * ld + k) % 61) - 30));
                if (rep % 11 == 3 && i % 3 == 0) v = 0.0;                             /* all-zero lines */
                if (rep % 13 == 5) v = (double)(vt_rng_u64(48, rep, i * ld + k) % 5);   /* few-bit lines */
                if (tri && k > i) v = (k + i) % 3 ? 0.0 : -0.0;
                X[i * ld + k] = v;
            }
        {
            for (one = 0; one < 2; one++) {
                vt__stat_job j;
                st[one] = (double *)malloc(sizeof(double) * (size_t)(4 * R + 4));
                for (i = 0; i < 4 * R + 4; i++) st[one][i] = NAN;
                memset(&j, 0, sizeof j);
                j.X = X; j.K = K; j.lsb = ls; j.s_outer = ld; j.s_k = 1;
                j.n1 = st[one]; j.n2 = st[one] + R; j.mx = st[one] + 2 * R; j.th = st[one] + 3 * R;
                vt__stat_one = one;
                vt__stat_lines(&j, lo, hi, tri);
                vt__stat_one = 0;
            }
            compared += 4 * (hi - lo);
            for (k = 0; k < 4; k++)
                if (!same_bits(st[0] + k * R + lo, st[1] + k * R + lo, hi - lo) && !differ++)
                    CHECK(0, "statistic %d of %lld lines of %lld (tri %d, lines %lld..%lld) differs: four at a time vs one", (int)k,
                          (long long)R, (long long)K, tri, (long long)lo, (long long)hi);
            free(st[0]); free(st[1]);
        }
        free(X); free(ls);
    }
    CHECK(differ == 0, "%lld of %lld statistics differ", (long long)differ, (long long)compared);
    NOTE("%lld statistics compared", (long long)compared);
}

/* A ROW CAPS: a lazy bound's A lines get only max |a| from the statistics'
   job (vt__stat_caps), and a look takes the line's other statistics from
   the full walk on that line alone (vt__lazy_astat). Against the full walk
   as the product's job runs it (vt__stat2_task, in chunks of one task and of
   all): every statistic of every line on every bit, lines as rows and as
   columns (the columns walk's groups of 8 and its short last group, which
   sum squares differently), shapes with M not a multiple of 8, the mix of
   pass_value (zeros, subnormals, few-bit lines, infinities, NaNs); and the
   cap is the full walk's maximum wherever the line holds no NaN. The same
   for a task's own product (vt__own_astat, in place over the caps), causal
   lines as rows and as columns, and its B's columns (vt__own_bcols). */
TEST(a_row_caps_and_lines_on_demand) {
    int64_t compared = 0, differ = 0, capped = 0;
    int rep, isa, have512 = 0;
#ifdef VT__AVX512
    __builtin_cpu_init();
    have512 = __builtin_cpu_supports("avx512f") != 0;
#endif
    if (!have512) NOTE("no AVX-512 on this machine or in this build: the AVX2 forms only");
    for (rep = 0; rep < 60; rep++)
        for (isa = 0; isa <= have512; isa++) {
            int col = rep % 2;
            int64_t M = 1 + rep * 7 % 45, K = rep % 3 == 0 ? 1 + rep % 9 : rep % 5 == 0 ? 16 + rep % 7 * 8 : 8 + rep * 13 % 300;
            int64_t ld = (col ? M : K) + rep % 3;
            int64_t i, k, m, nx = col ? K * ld : M * ld;
            double *X = (double *)malloc(sizeof(double) * (size_t)(nx + 1)), *full = (double *)malloc(sizeof(double) * (size_t)(4 * M + 4));
            double *cap = (double *)malloc(sizeof(double) * (size_t)(4 * M + 4));
            int *ls = (int *)malloc(sizeof(int) * (size_t)(M + 1)), *ast = (int *)calloc((size_t)(M + 8), sizeof(int)), once;
            double *amx = (double *)malloc(sizeof(double) * (size_t)M);
            vt__stat_job j, jc;
            vt__stat2_job s2;
            vt__lazy z;
            for (i = 0; i < nx; i++) {
                double v = rep % 4 == 1 ? (double)(float)vt_rng_normal(53, (uint64_t)rep, (uint64_t)i) : pass_value((uint64_t)(2000 + rep), (uint64_t)i);
                if (rep % 4 >= 2) /* (wide: sums of |x| that round, rows and columns) */
                    v = (double)(float)(vt_rng_normal(54, (uint64_t)rep, (uint64_t)i) * ldexp(1.0, (int)(i % 61) - 30));
                X[i] = v;
            }
            if (!col && rep % 4 == 2) /* rows whose lane sums, 1 and three of 2^-53, add to another sum in another order */
                for (m = 0; m < M; m += 2)
                    for (k = 0; k < K; k++) X[m * ld + k] = k == 0 ? 1.0 : k < 4 ? 0x1p-53 : 0.0;
            memset(&j, 0, sizeof j);
            j.X = X; j.K = K; j.lsb = ls; j.s_outer = col ? 1 : ld; j.s_k = col ? ld : 1;
            j.n1 = full; j.n2 = full + M; j.mx = full + 2 * M; j.th = full + 3 * M;
            memset(&s2, 0, sizeof s2); /* (no B lines: ta tasks of A only) */
            s2.a = &j; s2.b = &j; s2.M = M; s2.ga = vt__stat_group(&j); s2.ta = (M + s2.ga - 1) / s2.ga; s2.n = s2.ta; s2.tri = VT__TRI_NONE;
            vt__force_isa = isa;
            if (rep % 3 == 1) vt__stat2_task(&s2, 0, s2.n, 0);
            else for (i = 0; i < s2.n; i++) vt__stat2_task(&s2, i, i + 1, 0);
            jc = j;
            jc.cap = 1; jc.n1 = cap; jc.n2 = cap + M; jc.mx = cap + 2 * M; jc.th = cap + 3 * M;
            for (i = 0; i < 4 * M + 4; i++) cap[i] = NAN;
            s2.a = s2.b = &jc;
            for (i = 0; i < s2.n; i++) vt__stat2_task(&s2, i, i + 1, 0);
            for (once = 0; once <= (VT__SPIN > 0); once++) /* each look walking its line, then LINES WALKED ONCE */
            for (i = 0; i < M; i++) {
                double a[4], want[4];
                int nan = 0;
                if (i == 0) {
                    memset(&z, 0, sizeof z);
                    z.sa = jc; z.M = M;
                    if (once) { z.ast = ast; z.amx = amx; }
                    memset(ast, 0, sizeof(int) * (size_t)(M + 8));
                }
                m = once ? M - 1 - i : i; /* (the other way: a group claimed at its last line) */
                want[0] = full[m]; want[1] = full[M + m]; want[2] = full[2 * M + m]; want[3] = full[3 * M + m] * 0x1p-53;
                vt__lazy_astat(&z, m, a);
                if (once) vt__lazy_astat(&z, m, a); /* (and again: the arrays' values) */
                for (k = 0; k < K; k++) nan |= X[col ? k * ld + m : m * ld + k] != X[col ? k * ld + m : m * ld + k];
                for (k = 0; k < 4; k++)
                    if (memcmp(&a[k], &want[k], 8) && !differ++)
                        CHECK(0, "%s %lld x %lld (isa %d), line %lld: statistic %d on demand %a, the walk's %a", col ? "columns" : "rows",
                              (long long)M, (long long)K, isa, (long long)m, (int)k, a[k], want[k]);
                if (!nan && memcmp(&cap[2 * M + m], &full[2 * M + m], 8) && !differ++)
                    CHECK(0, "%s %lld x %lld, line %lld: the cap %a is not the walk's maximum %a", col ? "columns" : "rows", (long long)M,
                          (long long)K, (long long)m, cap[2 * M + m], full[2 * M + m]);
                capped += !nan;
                compared += 4;
            }
#if VT__SPIN
            { /* B COLUMN SUMS (B ROW SUMS): the job's n1 alone, then every group walked in full by vt__lazy_bcols */
                int *bst = (int *)calloc((size_t)(M + 8), sizeof(int));
                for (i = 0; i < 4 * M + 4; i++) cap[i] = NAN;
                jc.cap = 2;
                if (rep % 5 == 0) vt__stat2_task(&s2, 0, s2.n, 0); /* (rows four at a time) */
                else for (i = 0; i < s2.n; i++) vt__stat2_task(&s2, i, i + 1, 0);
                for (m = 0; m < M; m++)
                    if (memcmp(&cap[m], &full[m], 8) && !differ++)
                        CHECK(0, "%s %lld x %lld (isa %d), line %lld: the line's sum %a, the walk's %a", col ? "columns" : "rows", (long long)M,
                              (long long)K, isa, (long long)m, cap[m], full[m]);
                memset(&z, 0, sizeof z);
                z.sb = jc; z.N = M; z.bst = bst;
                for (m = M - 1; m >= 0; m -= 3) vt__lazy_bcols(&z, m, m + 1);
                vt__lazy_bcols(&z, 0, M);
                for (i = 0; i < 4 * M; i++)
                    if (memcmp(&cap[i], &full[i], 8) && !differ++)
                        CHECK(0, "%s %lld x %lld (isa %d): statistic %d of line %lld after the looks' walk %a, the walk's %a", col ? "columns" : "rows",
                              (long long)M, (long long)K, isa, (int)(i / M), (long long)(i % M), cap[i], full[i]);
                compared += 4 * M;
                free(bst);
            }
#endif
            vt__force_isa = -1;
            free(X); free(full); free(cap); free(ls); free(ast); free(amx);
        }
    /* a task's own product (attention's heads: vt__own_astat over the caps, in place), causal lines included:
       rows zero beyond their index (VT__TRI_KLE), columns zero before it (VT__TRI_KGE) */
    for (rep = 0; rep < 48; rep++)
        for (isa = 0; isa <= have512; isa++) {
            int col = rep % 2, tri = rep % 3 == 0 ? VT__TRI_NONE : col ? VT__TRI_KGE : VT__TRI_KLE;
            int64_t M = 8 + rep * 5 % 70, K = tri ? M : 16 + rep % 5 * 16, i, k, m, g0 = -1;
            double *X = (double *)malloc(sizeof(double) * (size_t)(M * K)), *full = (double *)malloc(sizeof(double) * (size_t)(4 * M));
            double *cap = (double *)malloc(sizeof(double) * (size_t)(4 * M));
            int *ls = (int *)malloc(sizeof(int) * (size_t)(M + 1));
            vt__stat_job j, jc;
            for (m = 0; m < M; m++) /* line m, value k: X[k M + m] (columns) or X[m K + k] (rows) */
                for (k = 0; k < K; k++) {
                    int zero = tri == VT__TRI_KLE ? k > m : tri == VT__TRI_KGE ? k < m : 0;
                    double v = rep % 4 == 1 ? pass_value((uint64_t)(3000 + rep), (uint64_t)(m * K + k))
                                            : (double)(float)vt_rng_normal(55, (uint64_t)rep, (uint64_t)(m * K + k));
                    X[col ? k * M + m : m * K + k] = zero ? 0.0 : v;
                }
            memset(&j, 0, sizeof j);
            j.X = X; j.K = K; j.lsb = ls; j.s_outer = col ? 1 : K; j.s_k = col ? M : 1;
            j.n1 = full; j.n2 = full + M; j.mx = full + 2 * M; j.th = full + 3 * M;
            vt__force_isa = isa;
            vt__stat_lines(&j, 0, M, tri); /* (as vt__gemm_bound_own's one task) */
            jc = j;
            jc.n1 = cap; jc.n2 = cap + M; jc.mx = cap + 2 * M; jc.th = cap + 3 * M;
            for (i = 0; i < 4 * M; i++) cap[i] = NAN;
            jc.cap = 1;
            vt__stat_lines(&jc, 0, M, tri);
            for (m = 0; m < M; m++) {
                vt__own_astat(&jc, M, m, tri, &g0);
                for (k = 0; k < 4; k++)
                    if (memcmp(&cap[k * M + m], &full[k * M + m], 8) && !differ++)
                        CHECK(0, "own %s %lld x %lld (tri %d, isa %d), line %lld: statistic %d on demand %a, the walk's %a",
                              col ? "columns" : "rows", (long long)M, (long long)K, tri, isa, (long long)m, (int)k, cap[k * M + m],
                              full[k * M + m]);
                compared += 4;
            }
            if (tri == VT__TRI_NONE && M <= 64 * vt__stat_group(&j)) { /* B COLUMN (ROW) SUMS in place (vt__own_bcols), groups in any order */
                uint64_t done = 0;
                for (i = 0; i < 4 * M; i++) cap[i] = NAN;
                jc.cap = 2;
                vt__stat_lines(&jc, 0, M, VT__TRI_NONE);
                for (m = 0; m < M; m++)
                    if (memcmp(&cap[m], &full[m], 8) && !differ++)
                        CHECK(0, "own %s %lld x %lld (isa %d), line %lld: the sum %a, the walk's %a", col ? "columns" : "rows", (long long)M,
                              (long long)K, isa, (long long)m, cap[m], full[m]);
                for (m = M - 1; m >= 0; m -= 5) vt__own_bcols(&jc, M, m, &done);
                for (m = 0; m < M; m++) vt__own_bcols(&jc, M, m, &done);
                for (i = 0; i < 4 * M; i++)
                    if (memcmp(&cap[i], &full[i], 8) && !differ++)
                        CHECK(0, "own %s %lld x %lld (isa %d): statistic %d of line %lld after the walks %a, the walk's %a", col ? "columns" : "rows",
                              (long long)M, (long long)K, isa, (int)(i / M), (long long)(i % M), cap[i], full[i]);
                compared += 4 * M;
            }
            vt__force_isa = -1;
            free(X); free(full); free(cap); free(ls);
        }
    CHECK(differ == 0, "%lld of %lld statistics differ", (long long)differ, (long long)compared);
    NOTE("%lld statistics on demand, %lld caps compared", (long long)compared, (long long)capped);
}

/* The bound's workspace (VT__BOUND_WS) holds everything the bound writes:
   A's and B's statistics, the thresholds, and the ints of the column walks
   (B row-major: its lines are columns). With 5 (M + N) + 2 doubles the
   ints ran past the end wherever N > M + 4. Canaries after the end, shapes
   from N far above M to N far below, A straight and transposed. */
TEST(bound_workspace_holds_the_statistics) {
    static const int64_t shapes[][3] = {{1, 64, 9}, {3, 40, 16}, {5, 300, 8}, {64, 1, 12}, {7, 7, 33}, {2, 130, 64}};
    vt_desc d = vt_desc_default();
    vt_ctx *c = vt_create(&d);
    int s, ta;
    int64_t broken = 0;
    for (s = 0; s < 6; s++)
        for (ta = 0; ta < 2; ta++) {
            int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], i, over, nws = VT__BOUND_WS(M, N);
            double *A = (double *)malloc(sizeof(double) * (size_t)(M * K)), *B = (double *)malloc(sizeof(double) * (size_t)(K * N));
            double *E = (double *)malloc(sizeof(double) * (size_t)(M * N)), *ws = (double *)malloc(sizeof(double) * (size_t)(nws + 512));
            for (i = 0; i < M * K; i++) A[i] = (double)(float)vt_rng_normal(51, (uint64_t)s, (uint64_t)i);
            for (i = 0; i < K * N; i++) B[i] = (double)(float)vt_rng_normal(52, (uint64_t)s, (uint64_t)i);
            for (i = 0; i < nws + 512; i++) ws[i] = -12345.5;
            vt__gemm_bound_ws(NULL, 0, &c->ord, M, N, K, A, ta ? 1 : K, ta ? M : 1, B, N, 1, NULL, N, NULL, 0, E, N, ws,
                              VT__TRI_NONE);
            for (i = nws + 511, over = 0; i >= nws && !over; i--)
                if (ws[i] != -12345.5) over = i - nws + 1;
            if (over && !broken++)
                CHECK(0, "%lldx%lldx%lld (A %s): the bound wrote up to %lld doubles past its workspace of %lld", (long long)M,
                      (long long)N, (long long)K, ta ? "transposed" : "straight", (long long)over, (long long)nws);
            free(A); free(B); free(E); free(ws);
        }
    vt_destroy(c);
    CHECK(broken == 0, "%lld workspaces overrun", (long long)broken);
}

/* native mode's column sums four columns at a time (vt__rsum4_f32) against
   vt__rsum column by column, bit for bit: every length up to 3 blocks of
   several sizes (the tails of the blocks and of the groups of four),
   values of many magnitudes and both signs, so that the binary32 casts
   round; and vt__rsum of a contiguous column (its vector form for stride
   1), with binary32 accumulation and without */
TEST(column_sums_four_at_once) {
    static const int blocks[] = {1, 3, 4, 7, 16, 256};
    int64_t compared = 0, differ = 0;
    int bi, f32;
    double *x = (double *)malloc(sizeof(double) * 800 * 11);
    int64_t n, i, q;
    for (i = 0; i < 800 * 11; i++) x[i] = pass_value(91, (uint64_t)i) * ldexp(1.0, (int)(i % 41) - 20);
    for (f32 = 0; f32 < 2; f32++)
        for (bi = 0; bi < 6; bi++)
            for (n = 0; n <= 3 * blocks[bi] + 5 && n <= 800; n++) {
                vt__ord o;
                double got[4];
                memset(&o, 0, sizeof o);
                o.block = blocks[bi]; o.f32 = f32; o.fma = 1;
#ifdef VT__AVX2
                if (f32) vt__rsum4_f32(&o, x + 3, 11, n, got);
                else
#endif
                    for (q = 0; q < 4; q++) got[q] = vt__rsum(&o, 0, x + 3 + q, 11, n);
                for (q = 0; q < 4; q++) {
                    double want = 0;
                    int64_t k, b0;
                    /* the scalar definition: lanes of 4 within each block, the leftovers to lane 0 */
                    for (b0 = 0; b0 < n; b0 += o.block) {
                        int64_t b1 = b0 + o.block < n ? b0 + o.block : n;
                        double a[4] = {0, 0, 0, 0};
#define ACC(v) (f32 ? (double)(float)(v) : (v))
                        for (k = b0; k + 4 <= b1; k += 4) {
                            int l;
                            for (l = 0; l < 4; l++) a[l] = ACC(a[l] + x[(k + l) * 11 + 3 + q]);
                        }
                        for (; k < b1; k++) a[0] = ACC(a[0] + x[k * 11 + 3 + q]);
                        want = ACC(want + ACC(ACC(a[0] + a[1]) + ACC(a[2] + a[3])));
#undef ACC
                    }
                    compared++;
                    differ += memcmp(&got[q], &want, 8) != 0;
                    { /* and the column contiguous (vt__rsum's vector form for stride 1) */
                        double col[800], r1;
                        for (k = 0; k < n; k++) col[k] = x[k * 11 + 3 + q];
                        r1 = vt__rsum(&o, 0, col, 1, n);
                        differ += memcmp(&r1, &want, 8) != 0;
                    }
                    if (f32) {
                        double r = vt__rsum(&o, 0, x + 3 + q, 11, n);
                        differ += memcmp(&got[q], &r, 8) != 0;
                    }
                }
            }
    free(x);
    CHECK(differ == 0, "%lld of %lld column sums differ", (long long)differ, (long long)compared);
    NOTE("%lld column sums compared", (long long)compared);
}

/* The bounded column sums (vt__colsum_task: sums, magnitudes and smallest
   nonzero magnitudes of a chunk's columns in row order) on this machine's
   walk (AVX-512's 32 or 8 columns at a time where it has it) against the
   scalar definition of each column: vector columns [0, C - C % 4) take
   vminpd's rule (the second operand where either is NaN), the others the
   scalar compare, so NaN, zero and infinite values are in the matrix; and
   on AVX-512 against the AVX2 walk (vt__colsum_ymm). */
static int same_or_nans(double a, double b) { return (a != a && b != b) || memcmp(&a, &b, 8) == 0; }
TEST(bounded_column_sums_match_the_definition) {
    static const int64_t widths[] = {1, 5, 8, 13, 32, 40, 71, 131, 384};
    int64_t compared = 0, differ = 0, wi;
    vt__ord o;
    vt__kern k;
    memset(&o, 0, sizeof o);
    o.block = 256; o.fma = 1;
    memset(&k, 0, sizeof k);
    k.o = &o;
    for (wi = 0; wi < 9; wi++) {
        int64_t C = widths[wi], R = 70, chunk = 23, nch = (R + chunk - 1) / chunk, i, c, r, ch;
        double *x = (double *)malloc(sizeof(double) * (size_t)(R * C)), *out[2];
        int ymm;
        for (i = 0; i < R * C; i++) {
            uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15ull >> 40;
            x[i] = h % 29 == 0 ? 0.0 : h % 31 == 0 ? NAN : h % 37 == 0 ? -INFINITY : pass_value(17, (uint64_t)i) * ldexp(1.0, (int)(h % 21) - 10);
        }
        for (ymm = 0; ymm < 2; ymm++) {
            vt__colsum_job j;
            memset(&j, 0, sizeof j);
            j.k = &k; j.X = x; j.R = R; j.C = C; j.chunk = chunk; j.nch = nch; j.bound = 1;
            out[ymm] = (double *)malloc(sizeof(double) * (size_t)(3 * nch * C));
            j.part = out[ymm]; j.mag = j.part + nch * C; j.mn = j.mag + nch * C;
            vt__colsum_ymm = ymm;
            vt__colsum_task(&j, 0, nch, 0);
            vt__colsum_ymm = 0;
        }
        for (ch = 0; ch < nch; ch++)
            for (c = 0; c < C; c++) {
                double p = 0, g = 0, n = INFINITY;
                int vec = 0;
#ifdef VT__AVX2
                vec = c < C - C % 4;
#endif
                for (r = ch * chunk; r < R && r < (ch + 1) * chunk; r++) {
                    double v = x[r * C + c], a = fabs(v);
                    p += v; g += a;
                    if (vec) { double m = a == 0 ? INFINITY : a; n = n < m ? n : m; }
                    else if (a != 0 && a < n) n = a;
                }
                for (i = 0; i < 2; i++) { /* bit for bit, but any NaN for a NaN: where two NaNs meet in an
                                             addition x86 keeps the first operand's, and the compiler picks
                                             the operand order of `p += v` here and of the walks' vector +
                                             (_mm256_add_pd, _mm512_add_pd), so which NaN comes out is fixed
                                             per binary, not per run: with gcc 12 -O1 -fsanitize=thread 4
                                             columns of 5480 read -nan where this gives nan on every run (3
                                             in the AVX-512 walk, 1 in the AVX2 walk: the walks differ there
                                             too), clang 14 6, gcc -O2 none. A NaN sum is reported, never
                                             used. */
                    const double *P = out[i] + ch * C, *G = P + nch * C, *N = G + nch * C;
                    differ += !same_or_nans(P[c], p) || !same_or_nans(G[c], g) || memcmp(&N[c], &n, 8) != 0;
                    compared++;
                }
            }
        free(x); free(out[0]); free(out[1]);
    }
    CHECK(differ == 0, "%lld of %lld chunk columns differ from the definition", (long long)differ, (long long)compared);
    NOTE("%lld chunk columns compared (AVX-512 walk and AVX2 walk)", (long long)compared);
}

TEST(row_max_is_the_loops) {
    /* vt__row_max against the scalar loop it replaces, bit for bit: NaNs
       skipped, -inf when nothing else, and the first of equal zeros (-0
       before +0 gives -0), at lengths around the 16-lane blocks */
    static const int64_t lens[] = {0, 1, 3, 15, 16, 17, 31, 32, 33, 64, 100, 257};
    int64_t compared = 0, differ = 0, li, i;
    int kind;
    double x[257];
    for (kind = 0; kind < 7; kind++)
        for (li = 0; li < 12; li++) {
            int64_t n = lens[li];
            double m = -INFINITY, v;
            for (i = 0; i < n; i++) {
                uint64_t h = ((uint64_t)i + 1) * 0x9e3779b97f4a7c15ull >> 40;
                switch (kind) {
                case 0: x[i] = pass_value(3, (uint64_t)i); break;                          /* ordinary */
                case 1: x[i] = h % 5 == 0 ? NAN : -fabs(pass_value(5, (uint64_t)i)); break; /* NaNs, all negative */
                case 2: x[i] = h % 2 ? 0.0 : -0.0; break;                                  /* zeros of both signs */
                case 3: x[i] = i == n - 1 ? 0.0 : h % 3 ? -0.0 : -1.0; break;              /* -0 first, +0 last */
                case 4: x[i] = NAN; break;                                                 /* nothing */
                case 5: x[i] = h % 7 == 0 ? INFINITY : h % 3 == 0 ? NAN : -INFINITY; break;
                default: x[i] = h % 4 ? -INFINITY : -2.0; break;
                }
            }
            for (i = 0; i < n; i++) if (x[i] > m) m = x[i];
            v = vt__row_max(x, n);
            differ += memcmp(&m, &v, 8) != 0;
            compared++;
        }
    CHECK(differ == 0, "%lld of %lld rows' maxima differ from the loop's", (long long)differ, (long long)compared);
    NOTE("%lld rows compared", (long long)compared);
}

TEST(absdot_rows4_is_rdots) {
    /* the attention softmax backward's four rows' sum |dy y| at once
       against vt__rdot's, bit for bit (row q of n0 + q terms), with zeros,
       infinities and values over 40 binades in the rows */
    static const int64_t n0s[] = {1, 2, 3, 4, 5, 7, 8, 13, 64, 125};
    int64_t compared = 0, differ = 0, ni, i, q;
    double a[4 * 132], b[4 * 132], out[4];
    vt__ord o;
    memset(&o, 0, sizeof o);
    o.block = 256; o.fma = 1;
    for (i = 0; i < 4 * 132; i++) {
        uint64_t h = ((uint64_t)i + 7) * 0x9e3779b97f4a7c15ull >> 40;
        a[i] = h % 53 == 0 ? 0.0 : h % 97 == 0 ? INFINITY : pass_value(21, (uint64_t)i) * ldexp(1.0, (int)(h % 41) - 20);
        b[i] = h % 59 == 0 ? -0.0 : pass_value(22, (uint64_t)i);
    }
    for (ni = 0; ni < 10; ni++) {
        vt__absdot_rows4(a, b, 132, n0s[ni], out);
        for (q = 0; q < 4; q++) {
            double m;
            vt__rdot(&o, 0, a + q * 132, 1, b + q * 132, 1, n0s[ni] + q, &m);
            differ += memcmp(&m, &out[q], 8) != 0;
            compared++;
        }
    }
    CHECK(differ == 0, "%lld of %lld rows' magnitudes differ from vt__rdot's", (long long)differ, (long long)compared);
    NOTE("%lld rows compared", (long long)compared);
}

static double fuse_bnd(const void *arg, int64_t i, double x) { /* a bound of the row width's size, less where i is odd */
    (void)x;
    return *(const double *)arg * (i % 2 ? 0.25 : 1);
}
TEST(verify_passes_avx512_match) {
    int have512 = 0, isa, rep, tri;
    int64_t compared = 0, differ = 0, looked = 0;
    vt_desc d = vt_desc_default();
    vt_ctx *c;
#ifdef VT__AVX512
    __builtin_cpu_init();
    have512 = __builtin_cpu_supports("avx512f");
#endif
    if (!have512) { NOTE("no AVX-512 on this machine or in this build: nothing to compare"); return; }
    d.order.threads = 1;
    c = vt_create(&d);
    /* statistics: R x K lines as rows, and the transposed walk (lines as columns) */
    for (rep = 0; rep < 40; rep++)
        for (tri = 0; tri < 3; tri++) {
            int64_t R = 1 + rep * 7 % 61, K = tri ? R : 1 + rep * 13 % 300, i, k, lo = rep % 3, hi = R - (rep % 2);
            double *X = (double *)malloc(sizeof(double) * (size_t)(R * K)), *st[2];
            int *ls = (int *)malloc(sizeof(int) * (size_t)(2 * R + 2)), col;
            if (hi <= lo) { lo = 0; hi = R; }
            for (i = 0; i < R; i++)
                for (k = 0; k < K; k++) {
                    double v = pass_value((uint64_t)(rep * 3 + tri), (uint64_t)(i * K + k));
                    if (rep % 5 == 0) v = fabs(v) < 1 ? 0.0 : v; /* mostly zeros */
                    /* causal: rows zero beyond the diagonal (KLE), columns before it (KGE) */
                    if ((tri == 1 && k > i) || (tri == 2 && k > i)) v = (k + i) % 3 ? 0.0 : -0.0;
                    X[i * K + k] = v;
                }
            for (col = 0; col < 2; col++) {
                int t = tri == 0 ? VT__TRI_NONE : col ? VT__TRI_KGE : VT__TRI_KLE;
                if (tri == 2 && !col) continue; /* KGE walks columns */
                if (tri == 1 && col) continue;  /* KLE walks rows */
                for (isa = 0; isa < 2; isa++) {
                    vt__stat_job j;
                    st[isa] = (double *)malloc(sizeof(double) * (size_t)(4 * R + 4));
                    for (i = 0; i < 4 * R + 4; i++) st[isa][i] = NAN;
                    memset(&j, 0, sizeof j);
                    j.X = X; j.K = K; j.lsb = ls;
                    /* lines as rows: X is R x K; as columns: X read as K x R, line r its column r */
                    if (col) { j.s_outer = 1; j.s_k = R; } else { j.s_outer = K; j.s_k = 1; }
                    j.n1 = st[isa]; j.n2 = st[isa] + R; j.mx = st[isa] + 2 * R; j.th = st[isa] + 3 * R;
                    vt__force_isa = isa;
                    vt__stat_lines(&j, lo, hi, t);
                    vt__force_isa = -1;
                }
                compared += 4 * (hi - lo);
                for (k = 0; k < 4; k++)
                    if (!same_bits(st[0] + k * R + lo, st[1] + k * R + lo, hi - lo) && !differ++)
                        CHECK(0, "statistics %d of %lld lines of %lld (%s, tri %d) differ between AVX2 and AVX-512", (int)k,
                              (long long)R, (long long)K, col ? "columns" : "rows", t);
                free(st[0]); free(st[1]);
            }
            free(X); free(ls);
        }
    /* the written-out bound, and the rounding check with it and with a lazy bound */
    for (rep = 0; rep < 12; rep++) {
        int64_t M = 3 + rep * 5, N = 5 + rep * 11 % 77, K = 1 + rep * 37 % 400, i, n;
        double *A = (double *)malloc(sizeof(double) * (size_t)(M * K)), *B = (double *)malloc(sizeof(double) * (size_t)(K * N));
        double *X = (double *)malloc(sizeof(double) * (size_t)(M * N)), *E[2], *Y[2];
        vt__ents en[2];
        /* binary32 normals; the mix above (NaN: every bound NaN); small integers (exact sums: bounds of 0) */
        for (i = 0; i < M * K; i++)
            A[i] = rep % 4 == 3 ? pass_value(50 + rep, i) : rep % 4 == 2 ? (double)(vt_rng_u64(45, rep, i) % 7) - 3
                                                              : (double)(float)vt_rng_normal(43, rep, i);
        for (i = 0; i < K * N; i++)
            B[i] = rep % 4 == 3 ? pass_value(60 + rep, i) : rep % 4 == 2 ? (double)(vt_rng_u64(46, rep, i) % 5) - 2
                                                              : (double)(float)vt_rng_normal(44, rep, i);
        vt__gemm_set(c, &c->ord, M, N, K, A, K, 1, B, N, 1, X, N, 0);
        /* push some values next to binary32 midpoints, where the checks look and log; and one far above
           what the row's statistics allow (|x| above the lazy check's cap: it must look there), 2^-60 |x|
           from a midpoint, which the look's rule logs */
        for (i = 0; i < M * N; i += 3) X[i] = (double)(float)X[i] + ldexp(fabs((double)(float)X[i]), -24) * (1 + 0x1p-30 * (double)(i % 5));
        X[M * N / 2] = 0x1p100 * (1 + 0x1p-24 + 0x1p-60);
        for (isa = 0; isa < 2; isa++) {
            vt__stat_job sa, sb;
            vt__gbound_job gb;
            double *ws = (double *)vt__scratch(c, sizeof(double) * (size_t)VT__BOUND_WS(M, N));
            vt__rjob rj;
            E[isa] = (double *)malloc(sizeof(double) * (size_t)(M * N));
            Y[isa] = (double *)malloc(sizeof(double) * (size_t)(2 * M * N));
            memcpy(Y[isa], X, sizeof(double) * (size_t)(M * N));
            memcpy(Y[isa] + M * N, X, sizeof(double) * (size_t)(M * N));
            memset(&en[isa], 0, sizeof en[isa]);
            en[isa].bad = -1;
            vt__force_isa = isa;
            vt__gemm_bound_prep(NULL, 0, &c->ord, M, N, K, A, K, 1, B, N, 1, NULL, N, NULL, 0, ws, &sa, &sb, &gb, NULL, VT__TRI_NONE);
            gb.E = E[isa]; gb.lde = N;
            vt__gbound_task(&gb, 0, M, 0);
            rj.c = c; rj.x = Y[isa]; rj.e = E[isa]; rj.ef = 1; rj.compact = 1; rj.lz = NULL; rj.gs = rj.gx = 0; rj.tri = 0;
            for (i = 0; i < M * N; i += 256) vt__round_span(&rj, &en[isa], Y[isa] + i, E[isa] + i, i, VT__MIN(256, M * N - i));
            {   /* the lazy bound of the same product, checked as vt__mm's rounding point checks it */
                vt__lazy *z = vt__gemm_lazy(c, &c->ord, M, N, K, A, K, 1, B, N, 1, NULL, NULL, 0, NULL, 0);
                c->tents[0].n = 0; c->tents[0].bad = -1;
                if (z) {
                    int64_t bad;
                    vt__ents out;
                    memset(&out, 0, sizeof out);
                    bad = vt__lazy_round(c, Y[isa] + M * N, z, 0.5, 0, &out);
                    for (n = 0; n < out.n; n++) vt__ents_push(c, &en[isa], M * N + out.e[n].i, out.e[n].r, out.e[n].full);
                    if (bad >= 0) vt__ents_push(c, &en[isa], -1 - bad, 0, 0);
                    free(out.e);
                }
            }
            vt__force_isa = -1;
            vt__arena_reset(&c->scratch);
        }
        compared += 3 * M * N;
        looked += en[0].n;
        if ((!same_bits(E[0], E[1], M * N) || !same_bits(Y[0], Y[1], 2 * M * N) || en[0].n != en[1].n ||
             (en[0].n && memcmp(en[0].e, en[1].e, sizeof(vt__entry) * (size_t)en[0].n))) && !differ++)
            CHECK(0, "%lldx%lldx%lld: bounds, casts or entries differ between AVX2 and AVX-512 (%lld and %lld entries)",
                  (long long)M, (long long)N, (long long)K, (long long)en[0].n, (long long)en[1].n);
        free(A); free(B); free(X); free(E[0]); free(E[1]); free(Y[0]); free(Y[1]); free(en[0].e); free(en[1].e);
    }
    /* a fused row's filter (vt__fuse_row_lazy: a layer norm's, attention's and softmax's rows), its own bound
       per element (fuse_bnd) and a row width that some elements ask under: values and entries */
    for (rep = 0; rep < 40; rep++) {
        int64_t n = 1 + rep * 13 % 300, i;
        double *X = (double *)malloc(sizeof(double) * (size_t)n), *Y[2], W = rep % 5 == 4 ? NAN : ldexp(1, -40 + rep % 9);
        vt__ents en[2];
        vt__rjob rj;
        for (i = 0; i < n; i++) {
            double v = (double)(float)vt_rng_normal(47, (uint64_t)rep, (uint64_t)i);
            X[i] = i % 7 == 3 ? v + ldexp(fabs(v), -24) : i % 11 == 5 ? v * (1 + 0x1p-40) : rep % 8 == 7 && i == n / 2 ? NAN : v;
        }
        memset(&rj, 0, sizeof rj);
        rj.c = c; rj.ef = 1; rj.compact = 1;
        for (isa = 0; isa < 2; isa++) {
            Y[isa] = (double *)malloc(sizeof(double) * (size_t)n);
            memcpy(Y[isa], X, sizeof(double) * (size_t)n);
            memset(&en[isa], 0, sizeof en[isa]);
            en[isa].bad = -1;
            vt__force_isa = isa;
            vt__fuse_row_lazy(&rj, &en[isa], Y[isa], n, 1000 * rep, W, 0x1p-50, fuse_bnd, &W);
            vt__force_isa = -1;
        }
        compared += n;
        looked += en[0].n;
        for (i = 0; i < n && X[i] == X[i]; i++) {} /* its first NaN value, named by both */
        if (en[0].bad != (i < n ? 1000 * rep + i : -1) && !differ++)
            CHECK(0, "a fused row of %lld: its first NaN (%lld) named as %lld", (long long)n, (long long)(i < n ? i : -1),
                  (long long)(en[0].bad < 0 ? -1 : en[0].bad - 1000 * rep));
        if ((!same_bits(Y[0], Y[1], n) || en[0].n != en[1].n || en[0].bad != en[1].bad ||
             (en[0].n && memcmp(en[0].e, en[1].e, sizeof(vt__entry) * (size_t)en[0].n))) && !differ++)
            CHECK(0, "a fused row of %lld: values or entries differ between AVX2 and AVX-512 (%lld and %lld entries)", (long long)n,
                  (long long)en[0].n, (long long)en[1].n);
        free(X); free(Y[0]); free(Y[1]); free(en[0].e); free(en[1].e);
    }
    vt_destroy(c);
    CHECK(looked > 0, "no entries in the rounding checks: the comparison says little");
    CHECK(differ == 0, "%lld of the comparisons differ", (long long)differ);
    NOTE("%lld values compared, %lld entries", (long long)compared, (long long)looked);
}

/* fp64's NaN check (vt__find_nan: the first NaN of a span, or -1) and an
   exact point's casts (vt__cast_task: RNE32 and the first NaN) against a
   scalar search and scalar casts: spans of 0 to 599 from offsets 0 to 6,
   with no NaN, one, a negative one last, and one just before the span
   (not its business); under both kernel choices (vt__force_isa), which
   run the same code today and hold an AVX-512 form, if one is added, to
   the same (one was tried in stop 40: no faster on a Zen 4) */
TEST(nan_checks_and_casts_match_scalar) {
    int64_t compared = 0, differ = 0;
    int isa, rep;
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    d.order.threads = 1;
    c = vt_create(&d);
    if (!c) { CHECK(0, "%s", vt_last_error()); return; }
    for (rep = 0; rep < 300; rep++) {
        int64_t n = rep % 600, lo = rep % 7, i, want = -1, got[2];
        double *X = (double *)malloc(sizeof(double) * (size_t)(n + lo + 1));
        for (i = 0; i < n + lo; i++) X[i] = (double)(float)vt_rng_normal(48, (uint64_t)rep, (uint64_t)i);
        if (rep % 4 && n > 0) X[lo + (int64_t)(vt_rng_u64(49, (uint64_t)rep, 0) % (uint64_t)n)] = NAN;
        if (rep % 8 == 3 && n > 1) X[lo + n - 1] = -NAN;
        if (lo > 0) X[lo - 1] = NAN; /* (before the span: not its business) */
        for (i = lo; i < lo + n && want < 0; i++)
            if (X[i] != X[i]) want = i;
        for (isa = 0; isa < 2; isa++) {
            vt__force_isa = isa;
            got[isa] = vt__find_nan(X, lo, lo + n);
            vt__force_isa = -1;
        }
        for (isa = 0; isa < 2; isa++) { /* the casts of an exact point (vt__cast_task): values and first NaN */
            double *Y = (double *)malloc(sizeof(double) * (size_t)(n + lo + 1));
            vt__rjob rj;
            for (i = 0; i < n + lo; i++) Y[i] = X[i] * (1 + 0x1p-30); /* (binary32 values no more, NaN kept) */
            memset(&rj, 0, sizeof rj);
            rj.c = c; rj.x = Y;
            c->tents[0].bad = -1;
            vt__force_isa = isa;
            vt__cast_task(&rj, lo, lo + n, 0);
            vt__force_isa = -1;
            for (i = lo; i < lo + n; i++) {
                double r = (double)(float)(X[i] * (1 + 0x1p-30));
                if (X[i] == X[i] && memcmp(&Y[i], &r, 8) != 0) break;
            }
            if ((i < lo + n || c->tents[0].bad != want) && !differ++)
                CHECK(0, "a cast of %lld from %lld (%s): value %lld wrong, or first NaN %lld where %lld", (long long)n, (long long)lo,
                      isa ? "AVX-512" : "AVX2", (long long)i, (long long)c->tents[0].bad, (long long)want);
            free(Y);
        }
        compared += n;
        if ((got[0] != want || got[1] != want) && !differ++)
            CHECK(0, "a span of %lld from %lld: first NaN %lld, found %lld (AVX2) and %lld (AVX-512)", (long long)n, (long long)lo,
                  (long long)want, (long long)got[0], (long long)got[1]);
        free(X);
    }
    vt_destroy(c);
    CHECK(differ == 0, "%lld of the spans differ", (long long)differ);
    NOTE("%lld values compared", (long long)compared);
}

/* --- causal products (vt__mm_serial's tri, the attention kernels) ----------
   Each micro-tile of a causal product runs only the k range where A is
   nonzero, and scores skip the tiles above the diagonal. Against the full
   product, bit for bit (signed zeros included: A's zeros are a mix of +0
   and -0, some rows have only -0 terms, and an accumulated C0 holds -0s),
   for every order the suite trains with, both kernel sets, A read straight
   or transposed (dv and dk read att and dpre as A^T), sizes from under one
   micro-tile to several k-blocks of 256; and each wanted output's bound. */
static void mm_causal_once(vt_ctx *c, int isa, int acc, int tri, int64_t M, int64_t N, int64_t K, const double *A,
                           int64_t sam, int64_t sak, const double *B, double *C, double *E) {
    double *ws = (double *)vt__scratch(c, sizeof(double) * (size_t)VT__BOUND_WS(M, N));
    void *tb = vt__scratch(c, vt__gemm_tbytes(&c->ord));
    vt__force_isa = isa;
    vt__mm_serial(&c->ord, 0, acc, tri, M, N, K, A, sam, sak, B, N, 1, C, N, E, N, ws, tb);
    vt__arena_reset(&c->scratch);
    vt__force_isa = -1;
}

TEST(gemm_causal_bit_identical) {
    static const int64_t Ts[] = {1, 5, 13, 40, 130, 300};
    static const int64_t Ws[] = {8, 17, 32};
    static const char *orders[] = {"", "block:7", "chaos:3", "chaos:11", "nofma", "native"};
    int have512 = 0, o, ti, wi, tri, acc, isa;
    int64_t compared = 0, differ = 0;
#ifdef VT__AVX512
    __builtin_cpu_init();
    have512 = __builtin_cpu_supports("avx512f");
#endif
    for (o = 0; o < 6; o++) {
        vt_desc d = vt_desc_default();
        vt_ctx *c;
        if (o == 5) d.mode = VT_MODE_NATIVE;
        else if (*orders[o]) CHECK(vt_order_parse(&d.order, orders[o]) == VT_OK, "order %s", orders[o]);
        c = vt_create(&d);
        for (ti = 0; ti < 6; ti++)
            for (wi = 0; wi < 3; wi++)
                for (tri = VT__TRI_OUT; tri <= VT__TRI_KGE; tri++)
                    for (acc = 0; acc < 2; acc++)
                        for (isa = 0; isa < (have512 ? 2 : 1); isa++) {
                            /* OUT: (T,w) (w,T); KLE: lower (T,T) times (T,w); KGE: the transpose of a lower
                               (T,T), read through strides as dv and dk read it, times (T,w) */
                            int64_t T = Ts[ti], w = Ws[wi], M = T, N = tri == VT__TRI_OUT ? T : w, K = tri == VT__TRI_OUT ? w : T;
                            int64_t i, m, n, sam = K, sak = 1;
                            double *A = (double *)malloc(sizeof(double) * (size_t)(M * K)), *B = (double *)malloc(sizeof(double) * (size_t)(K * N));
                            double *C0 = (double *)malloc(sizeof(double) * (size_t)(M * N)), *C1 = (double *)malloc(sizeof(double) * (size_t)(M * N));
                            double *E0 = (double *)malloc(sizeof(double) * (size_t)(M * N)), *E1 = (double *)malloc(sizeof(double) * (size_t)(M * N));
                            uint64_t key = (uint64_t)(((o * 6 + ti) * 3 + wi) * 4 + tri);
                            for (i = 0; i < M * K; i++) /* w 17: few-bit values (the bound's exact bit scan) */
                                A[i] = wi == 1 ? rint(4 * vt_rng_normal(8, key, (uint64_t)i)) / 16 : (float)vt_rng_normal(8, key, (uint64_t)i);
                            for (i = 0; i < K * N; i++) B[i] = (i % 11 == 3) ? 0.0 : (float)vt_rng_normal(9, key, (uint64_t)i);
                            if (tri != VT__TRI_OUT) /* L[r][q] = 0 for q > r, +0 or -0; row 2 of L has only -0 terms */
                                for (m = 0; m < T; m++)
                                    for (n = 0; n < T; n++) {
                                        if (n > m) A[m * T + n] = (m + n) % 3 ? 0.0 : -0.0;
                                        else if (m == 2) A[m * T + n] = -0.0;
                                    }
                            if (tri == VT__TRI_KGE) { sam = 1; sak = T; }
                            for (i = 0; i < M * N; i++) C0[i] = C1[i] = acc ? (i % 5 == 1 ? -0.0 : (float)vt_rng_normal(10, key, (uint64_t)i)) : NAN;
                            mm_causal_once(c, isa, acc, VT__TRI_NONE, M, N, K, A, sam, sak, B, C0, E0);
                            mm_causal_once(c, isa, acc, tri, M, N, K, A, sam, sak, B, C1, E1);
                            for (m = 0; m < M; m++)
                                for (n = 0; n < N; n++) {
                                    if (tri == VT__TRI_OUT && n > m) continue;
                                    compared++;
                                    if ((memcmp(&C0[m * N + n], &C1[m * N + n], 8) || memcmp(&E0[m * N + n], &E1[m * N + n], 8)) && !differ++)
                                        CHECK(0, "order '%s' %s T %lld w %lld tri %d acc %d element (%lld,%lld): full %.17g (bound %.17g), "
                                                 "causal %.17g (bound %.17g)", orders[o], isa ? "AVX-512" : "base", (long long)T, (long long)w,
                                              tri, acc, (long long)m, (long long)n, C0[m * N + n], E0[m * N + n], C1[m * N + n], E1[m * N + n]);
                                }
                            free(A); free(B); free(C0); free(C1); free(E0); free(E1);
                        }
        vt_destroy(c);
    }
    CHECK(differ == 0, "%lld of %lld elements differ between the causal and the full products", (long long)differ, (long long)compared);
    NOTE("%lld elements compared", (long long)compared);
}

/* whether kernel set isa (0 base, 1 AVX-512) runs in this build on this CPU */
static int isa_here(int isa) {
    if (isa == 0) return 1;
#ifdef VT__AVX512
    __builtin_cpu_init();
    return isa == 1 && __builtin_cpu_supports("avx512f");
#else
    return 0;
#endif
}

/* a context trained in order `ord` (and mode), the parse checked */
static vt_ctx *order_ctx(const char *ord, vt_mode mode) {
    vt_desc d = vt_desc_default();
    CHECK(vt_order_parse(&d.order, ord) == VT_OK, "order %s", ord);
    d.mode = mode;
    return vt_create(&d);
}

/* A chunked product (kchunk: the per-sequence sums of a weight gradient)
   whose chunk is one k-block adds each chunk's partial to C in the micro-
   kernel's store; a chunk of several blocks goes through the tile buffer.
   Both against everything through the buffer (vt__gemm_via_t), bit for bit,
   in four orders (chaos: blocks of 7 to 512, so both kinds of chunk), on one
   and two threads, each kernel set, with old values in C (signed zeros
   among them); and C = A B without its old value (vt__gemm_set: the first
   chunk writes C where the buffer's path zeroed it and added). Products of
   two or more tile rows whose chunks are all one k-block run CHUNKS PER
   MICRO-TILE (every chunk into a micro-tile's copy of C) instead, on one
   thread and on two: the same comparison covers that path. */
TEST(gemm_chunks_added_in_the_kernel) {
    static const char *ords[4] = {"threads:1", "threads:2,block:64", "threads:2,chaos:5", "threads:1,nofma,block:48"};
    static const int64_t shapes[][4] = {{13, 17, 257, 64}, {37, 130, 300, 100}, {96, 128, 512, 64}, {64, 40, 1030, 37}, {5, 300, 200, 200}};
    int64_t compared = 0, differ = 0;
    int oi, isa, si, via;
    for (oi = 0; oi < 4; oi++) {
        vt_ctx *c = order_ctx(ords[oi], VT_MODE_VERIFIED);
        for (isa = 0; isa < 2; isa++) {
            if (!isa_here(isa)) break;
            for (si = 0; si < 5; si++) {
                int64_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], kchunk = shapes[si][3], i;
                double *A = (double *)malloc(sizeof(double) * (size_t)(M * K)), *B = (double *)malloc(sizeof(double) * (size_t)(K * N));
                double *C[2];
                for (i = 0; i < M * K; i++) A[i] = (float)vt_rng_normal(21, (uint64_t)si, (uint64_t)i);
                for (i = 0; i < K * N; i++) B[i] = (float)vt_rng_normal(22, (uint64_t)si, (uint64_t)i);
                for (via = 0; via < 2; via++) {
                    C[via] = (double *)malloc(sizeof(double) * (size_t)(M * N));
                    for (i = 0; i < M * N; i++) C[via][i] = i % 5 == 0 ? (i % 2 ? -0.0 : 0.0) : (float)vt_rng_normal(23, (uint64_t)si, (uint64_t)i);
                    vt__gemm_via_t = via;
                    gemm_once(c, isa, M, N, K, A, si & 1, B, 0, C[via], kchunk);
                    vt__gemm_via_t = 0;
                }
                for (i = 0; i < M * N; i++) differ += memcmp(&C[0][i], &C[1][i], 8) != 0;
                compared += M * N;
                for (via = 0; via < 2; via++) { /* C = A B, its old value (NaN) never read: the first chunk writes it */
                    vt__gemm_via_t = via;
                    gemm_set_once(c, isa, M, N, K, A, si & 1, B, 0, C[via], kchunk);
                    vt__gemm_via_t = 0;
                }
                for (i = 0; i < M * N; i++) differ += memcmp(&C[0][i], &C[1][i], 8) != 0;
                compared += M * N;
                free(A); free(B); free(C[0]); free(C[1]);
            }
        }
        vt_destroy(c);
    }
    CHECK(differ == 0, "%lld of %lld outputs differ from the tile buffer's", (long long)differ, (long long)compared);
    NOTE("%lld outputs compared", (long long)compared);
}

/* SHARED B PANELS: on two threads a product of two or more tile rows packs
   B once for all tiles; every output bit must be what tiles packing their
   own panels give (vt__gemm_no_prepack), for chunked and unchunked
   products, B read along rows or columns, one or more column tiles, and
   orders whose k-blocks differ per chunk (chaos: 7 to 512). */
TEST(gemm_shared_panels_bit_identical) {
    static const char *ords[4] = {"threads:2", "threads:2,block:64", "threads:2,chaos:5", "threads:2,chaos:11,nofma"};
    static const int64_t shapes[][4] = {{200, 130, 256, 0}, {150, 600, 70, 0}, {128, 96, 1030, 100}, {300, 40, 300, 37}, {100, 1100, 40, 0}};
    int64_t compared = 0, differ = 0;
    int oi, isa, si, tb, set;
    for (oi = 0; oi < 4; oi++) {
        vt_ctx *c = order_ctx(ords[oi], VT_MODE_VERIFIED);
        for (isa = 0; isa < 2; isa++) {
            if (!isa_here(isa)) break;
            for (si = 0; si < 5; si++)
                for (tb = 0; tb < 2; tb++)
                    for (set = 0; set < 2; set++) {
                        int64_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], kchunk = shapes[si][3], i;
                        double *A = (double *)malloc(sizeof(double) * (size_t)(M * K)), *B = (double *)malloc(sizeof(double) * (size_t)(K * N));
                        double *C[2];
                        int own;
                        for (i = 0; i < M * K; i++) A[i] = (float)vt_rng_normal(24, (uint64_t)si, (uint64_t)i);
                        for (i = 0; i < K * N; i++) B[i] = (float)vt_rng_normal(25, (uint64_t)si, (uint64_t)i);
                        for (own = 0; own < 2; own++) {
                            C[own] = (double *)malloc(sizeof(double) * (size_t)(M * N));
                            for (i = 0; i < M * N; i++) C[own][i] = (float)vt_rng_normal(26, (uint64_t)si, (uint64_t)i);
                            vt__gemm_no_prepack = own;
                            if (set) gemm_set_once(c, isa, M, N, K, A, si & 1, B, tb, C[own], kchunk);
                            else gemm_once(c, isa, M, N, K, A, si & 1, B, tb, C[own], kchunk);
                            vt__gemm_no_prepack = 0;
                        }
                        for (i = 0; i < M * N; i++) differ += memcmp(&C[0][i], &C[1][i], 8) != 0;
                        compared += M * N;
                        free(A); free(B); free(C[0]); free(C[1]);
                    }
        }
        CHECK(vt_status_of(c) == VT_OK, "order %s: %s", ords[oi], vt_error_message(c));
        vt_destroy(c);
    }
    CHECK(differ == 0, "%lld of %lld outputs differ between shared and per-tile B panels", (long long)differ, (long long)compared);
    NOTE("%lld outputs compared", (long long)compared);
}

/* The layer norm's rows four at a time (vt__ln_fwd_row, vt__ln_bwd_terms,
   vt__ln_bwd_dx) against the scalar expressions they replaced, written out
   here: every value, bound, maximum and magnitude sum bit for bit, added or not, binary32
   or not (native mode), on rows of 1 to 70 with zeros, signed zeros,
   subnormals, huge values, infinities and NaN among them. */
static double ln_pick(uint64_t k, uint64_t i) {
    uint64_t h = vt_rng_u64(77, k, i) % 40;
    double g = vt_rng_normal(78, k, i);
    switch (h) {
    case 0: return 0.0;
    case 1: return -0.0;
    case 2: return 0x1p-1060 * (1 + (double)(i % 7));
    case 3: return 1e300 * g;
    case 4: return i % 2 ? INFINITY : -INFINITY;
    case 5: return NAN;
    default: return (float)g;
    }
}
TEST(layernorm_rows_vector_equal_scalar) {
    int64_t compared = 0, differ = 0, trial;
    for (trial = 0; trial < 600; trial++) {
        int64_t C = 1 + trial % 70, i;
        int f32 = (int)(trial / 70) % 2, acc = (int)(trial / 140) % 2;
        vt__ord o;
        vt__ln_stats s;
        vt__ln_dx l;
        vt__kout ko[2];
        double d[70], dy[70], W[70], B[70], old[70], xh[2][70], dn[2][70], dxh[2][70], y[2][70], X[2][70], E[2][70], m[2][3], mg[2][3];
        memset(&o, 0, sizeof o);
        o.f32 = f32;
        s.mu = 0; s.var = 1; s.dvar = 0;
        s.rstd = trial % 9 == 0 ? INFINITY : 0.5 + fabs(vt_rng_normal(79, (uint64_t)trial, 0));
        s.dmu = fabs(vt_rng_normal(79, (uint64_t)trial, 1)) * 1e-14;
        s.rho = fabs(vt_rng_normal(79, (uint64_t)trial, 2)) * 1e-15;
        for (i = 0; i < C; i++) {
            d[i] = ln_pick((uint64_t)trial, (uint64_t)(4 * i));
            dy[i] = ln_pick((uint64_t)trial, (uint64_t)(4 * i + 1));
            W[i] = ln_pick((uint64_t)trial, (uint64_t)(4 * i + 2));
            B[i] = (float)vt_rng_normal(80, (uint64_t)trial, (uint64_t)i);
            old[i] = ln_pick((uint64_t)trial, (uint64_t)(4 * i + 3));
        }
        /* forward: y and the row's maxima */
        vt__ln_fwd_row(&o, d, s.rstd, W, B, y[0], C, m[0]);
        m[1][0] = m[1][1] = m[1][2] = 0;
        for (i = 0; i < C; i++) {
            double xhat = VT__ACC(&o, d[i] * s.rstd), yw = xhat * W[i], a = fabs(d[i]), b = fabs(xhat), c = fabs(yw);
            y[1][i] = yw + B[i];
            m[1][0] = a > m[1][0] ? a : m[1][0];
            m[1][1] = b > m[1][1] ? b : m[1][1];
            m[1][2] = c > m[1][2] ? c : m[1][2];
        }
        /* backward: the terms, then dx and its bound (vt__put: added to an old value or not) */
        vt__ln_bwd_terms(&o, &s, d, dy, W, xh[0], dn[0], dxh[0], C, mg[0]);
        mg[1][0] = mg[1][1] = mg[1][2] = 0;
        for (i = 0; i < C; i++) {
            xh[1][i] = VT__ACC(&o, d[i] * s.rstd);
            dn[1][i] = VT__ACC(&o, dy[i] * W[i]);
            dxh[1][i] = (s.dmu + VT__U * fabs(d[i])) * s.rstd + fabs(d[i]) * s.rstd * s.rho + VT__U * fabs(xh[1][i]);
        }
        for (i = 0; i < C; i++) { /* the magnitudes, one element after another */
            mg[1][0] += fabs(dn[1][i]);
            mg[1][1] += fabs(dn[1][i] * xh[1][i]);
            mg[1][2] += fabs(dn[1][i]) * dxh[1][i];
        }
        for (i = 0; i < 3; i++) /* (a NaN sum: which NaN a product of two NaNs keeps is the compiler's operand order) */
            differ += !(mg[0][i] != mg[0][i] && mg[1][i] != mg[1][i]) && memcmp(&mg[0][i], &mg[1][i], 8) != 0;
        l.m1 = vt_rng_normal(81, (uint64_t)trial, 0); l.m2 = vt_rng_normal(81, (uint64_t)trial, 1);
        l.dm1 = 1e-15 * fabs(l.m1); l.dm2 = 1e-15 * fabs(l.m2); l.rstd = s.rstd; l.rho = s.rho;
        memset(ko, 0, sizeof ko);
        for (i = 0; i < 2; i++) {
            memcpy(X[i], old, sizeof(double) * (size_t)C);
            ko[i].x = X[i]; ko[i].e = E[i]; ko[i].acc = acc;
        }
        vt__ln_bwd_dx(&ko[0], 0, &l, xh[1], dn[1], dxh[1], C);
        for (i = 0; i < C; i++) {
            double inner = dn[1][i] - l.m1 - xh[1][i] * l.m2, v = l.rstd * inner;
            double di = VT__U * fabs(dn[1][i]) + l.dm1 + fabs(xh[1][i]) * l.dm2 + fabs(l.m2) * dxh[1][i] +
                        3 * VT__U * (fabs(dn[1][i]) + fabs(l.m1) + fabs(xh[1][i] * l.m2));
            double ev = 1.01 * (l.rstd * di + fabs(inner) * l.rstd * l.rho + VT__U * fabs(v));
            if (acc) {
                double sm = X[1][i] + v;
                if (ev > 0) ev += VT__U * fabs(sm);
                v = sm;
            }
            X[1][i] = v;
            E[1][i] = ev;
        }
        for (i = 0; i < C; i++) {
            differ += memcmp(&y[0][i], &y[1][i], 8) != 0;
            differ += memcmp(&xh[0][i], &xh[1][i], 8) != 0 || memcmp(&dn[0][i], &dn[1][i], 8) != 0 || memcmp(&dxh[0][i], &dxh[1][i], 8) != 0;
            differ += memcmp(&X[0][i], &X[1][i], 8) != 0 || memcmp(&E[0][i], &E[1][i], 8) != 0;
        }
        /* the maxima: NaN left out by both (a NaN y is looked at by the filter) */
        differ += memcmp(m[0], m[1], sizeof m[0]) != 0;
        compared += 6 * C + 4;
    }
    CHECK(differ == 0, "%lld of %lld layer-norm values, bounds and maxima differ from the scalar expressions", (long long)differ,
          (long long)compared);
    NOTE("%lld values, bounds and maxima compared", (long long)compared);
}

/* A LAYERNORM BACKWARD ROW: the row's width (vt__ln_bwd_width) caps every
   element's written bound (vt__ln_bwd_dx's e, with vt__put's term where dx
   is added to old values): W + c |x| >= e ef2 + |x| 2^-50 as the filter
   computes it, for rows of 1 to 70 values near binary32 midpoints and of
   wide range, with and without old values; a NaN anywhere asks everywhere
   (W NaN); the bound a look computes (vt__ln_bwd_e) is the written one bit
   for bit; and the values written without bounds are those written with */
TEST(layernorm_backward_row_width_covers_every_bound) {
    int64_t compared = 0, under = 0, differ = 0, nanrows = 0, trial;
    for (trial = 0; trial < 3000; trial++) {
        int64_t C = 1 + trial % 70, i;
        int acc = (int)(trial / 7) % 2, anynan = 0;
        double xh[70], dn[70], dxh[70], old[70], X[70], X2[70], E[70], W, cw, om = 0, om2, ef2 = trial % 3 ? 2 * VT__SAFE : 1.0;
        vt__ln_dx l;
        vt__ln_bbnd bb;
        vt__kout ko;
        double scale = ldexp(1.0, (int)(vt_rng_u64(83, (uint64_t)trial, 0) % 60) - 30);
        for (i = 0; i < C; i++) {
            int wide = trial % 5 == 0;
            xh[i] = wide ? ln_pick((uint64_t)trial, (uint64_t)(4 * i)) : (float)vt_rng_normal(84, (uint64_t)trial, (uint64_t)(4 * i));
            dn[i] = wide ? ln_pick((uint64_t)trial, (uint64_t)(4 * i + 1)) : (float)(scale * vt_rng_normal(84, (uint64_t)trial, (uint64_t)(4 * i + 1)));
            dxh[i] = fabs(vt_rng_normal(84, (uint64_t)trial, (uint64_t)(4 * i + 2))) * 1e-15 * (1 + (double)(trial % 4) * 1e6);
            old[i] = acc ? (float)(scale * vt_rng_normal(84, (uint64_t)trial, (uint64_t)(4 * i + 3))) : 0;
            anynan |= xh[i] != xh[i] || dn[i] != dn[i];
            om = fabs(old[i]) > om ? fabs(old[i]) : om;
        }
        l.m1 = scale * vt_rng_normal(85, (uint64_t)trial, 0);
        l.m2 = scale * vt_rng_normal(85, (uint64_t)trial, 1);
        l.dm1 = 1e-15 * fabs(l.m1) * (1 + (double)(trial % 3));
        l.dm2 = 1e-15 * fabs(l.m2) * (1 + (double)(trial % 3));
        l.rstd = 0.5 + fabs(vt_rng_normal(85, (uint64_t)trial, 2));
        l.rho = fabs(vt_rng_normal(85, (uint64_t)trial, 3)) * 1e-15;
        memcpy(X, old, sizeof(double) * (size_t)C);
        memset(&ko, 0, sizeof ko);
        ko.x = X; ko.e = E; ko.acc = acc;
        vt__ln_bwd_dx(&ko, 0, &l, xh, dn, dxh, C); /* the written values and bounds */
        memcpy(X2, old, sizeof(double) * (size_t)C);
        ko.x = X2; ko.e = NULL;
        om2 = vt__ln_bwd_vals(&ko, 0, &l, xh, dn, C); /* the values alone, and max |old| */
        for (i = 0; i < C; i++) differ += memcmp(&X[i], &X2[i], 8) != 0;
        differ += acc && !anynan && memcmp(&om, &om2, 8) != 0;
        vt__ln_bwd_width(&l, xh, dn, dxh, C, acc ? om : 0, ef2, &W, &cw);
        bb.l = &l; bb.xh = xh; bb.dn = dn; bb.dxh = dxh; bb.acc = acc;
        if (anynan) { nanrows++; differ += W == W; continue; }
        for (i = 0; i < C; i++) {
            double x = X[i], w = W + cw * fabs(x), need = E[i] * ef2 + (E[i] > 0 ? fabs(x) * 0x1p-50 : 0), eb = vt__ln_bwd_e(&bb, i, x);
            if (x != x || E[i] != E[i]) continue; /* (the filter looks at a NaN value) */
            under += !(w >= need);
            differ += memcmp(&eb, &E[i], 8) != 0;
            compared++;
        }
    }
    CHECK(under == 0, "%lld of %lld elements' bounds exceed their row's width", (long long)under, (long long)compared);
    CHECK(differ == 0, "%lld bounds a look computes or values written without bounds differ from the written ones (or a NaN "
          "row's width is not NaN)", (long long)differ);
    CHECK(compared > 50000 && nanrows > 0, "%lld elements, %lld rows with a NaN: the test tests too little", (long long)compared,
          (long long)nanrows);
    NOTE("%lld elements under their row's width, %lld rows with a NaN asked everywhere", (long long)compared, (long long)nanrows);
}

/* A ROW CAPS look wherever the written bound looks: products whose outputs
   are moved next to binary32 midpoints at 0.3, 0.99, 1.01 and 3 times their
   own width (the written bound's e ef2 + 2^-50 |x|), rounded by the written
   rule (vt__round_span over vt__gbound_task's bounds) and by the lazy rule
   with the caps and B COLUMN SUMS, the caps alone, and neither: the same
   values, entries and first NaN. Rows and columns of constant magnitude
   make the cap tight (a1 = K am, a2 = sqrt(K) am, and the same for B:
   every candidate of the minimum is K am bm, the cap am cap1 in every
   column), so a row width 10% narrower than the cap would miss the 0.99
   ones (the pass's 2^-50 xcap adds a few percent); normal values, A by rows and by
   columns, a bias, and a NaN (which fails the point: the same first NaN). */
TEST(a_row_caps_look_where_the_written_bound_looks) {
    vt_ctx *c = order_ctx("threads:2", VT_MODE_VERIFIED);
    int64_t compared = 0, differ = 0, ents = 0;
    int rep;
    vt__lzh_force = 1; /* (the caps whatever the looks walked in the products before: CAPS BY HISTORY) */
    for (rep = 0; rep < 24; rep++) {
        int ta = rep % 2, konst = rep % 3 != 2, hasb = rep % 4 == 1, v;
        int64_t M = 5 + rep * 7 % 40, N = 9 + rep * 11 % 70, K = 130 + rep * 37 % 300, i, m, n;
        double *A = (double *)malloc(sizeof(double) * (size_t)(M * K)), *B = (double *)malloc(sizeof(double) * (size_t)(K * N));
        double *X = (double *)malloc(sizeof(double) * (size_t)(M * N)), *E = (double *)malloc(sizeof(double) * (size_t)(M * N));
        double *Y[4], bias[80];
        vt__ents en[4];
        for (m = 0; m < M; m++)
            for (i = 0; i < K; i++) { /* A (M x K), stored K x M when ta */
                double a = konst ? (double)(float)(1.0 / 3) * ldexp(1.0, (int)(m % 5) - 2) * (vt_rng_u64(71, rep, m * K + i) & 1 ? 1 : -1)
                                 : (double)(float)vt_rng_normal(72, (uint64_t)rep, (uint64_t)(m * K + i));
                A[ta ? i * M + m : m * K + i] = a;
            }
        for (i = 0; i < K; i++)
            for (n = 0; n < N; n++)
                B[i * N + n] = konst ? (double)(float)(1.0 / 7) * (vt_rng_u64(73, rep, i * N + n) & 1 ? 1 : -1)
                                     : (double)(float)vt_rng_normal(74, (uint64_t)rep, (uint64_t)(i * N + n));
        for (n = 0; n < N; n++) bias[n] = (double)(float)vt_rng_normal(75, (uint64_t)rep, (uint64_t)n);
        if (hasb) vt__gemm_run_bias(c, &c->ord, M, N, K, A, ta ? 1 : K, ta ? M : 1, B, N, 1, X, N, 0, bias, 0);
        else vt__gemm_set(c, &c->ord, M, N, K, A, ta ? 1 : K, ta ? M : 1, B, N, 1, X, N, 0);
        {   /* the written bound, then each output moved next to a midpoint at a multiple of its own width */
            vt__stat_job sa, sb;
            vt__gbound_job gb;
            double *ws = (double *)vt__scratch(c, sizeof(double) * (size_t)VT__BOUND_WS(M, N));
            vt__gemm_bound_prep(NULL, 0, &c->ord, M, N, K, A, ta ? 1 : K, ta ? M : 1, B, N, 1, NULL, N, hasb ? bias : NULL, 0, ws, &sa, &sb,
                                &gb, NULL, VT__TRI_NONE);
            gb.E = E; gb.lde = N;
            vt__gbound_task(&gb, 0, M, 0);
            vt__arena_reset(&c->scratch);
        }
        for (i = 0; i < M * N; i++) { /* one multiple for each group of four in a row (a look takes the groups that ask) */
            static const double t[4] = {0.3, 0.99, 1.01, 3};
            float f = (float)X[i];
            double up = (double)nextafterf(f, INFINITY), mid = ((double)f + up) / 2, w = 2 * VT__SAFE * E[i] + fabs(mid) * 0x1p-50;
            X[i] = mid + (i % 2 ? 1 : -1) * t[(i % N / 4 + i / N) % 4] * w;
        }
        if (rep == 5) X[M * N / 3] = NAN;
        for (v = 0; v < 4; v++) { /* 0: written; 1: lazy with the caps and sums; 2: lazy without; 3: the caps alone */
            vt__rjob rj;
            Y[v] = (double *)malloc(sizeof(double) * (size_t)(M * N));
            memcpy(Y[v], X, sizeof(double) * (size_t)(M * N));
            memset(&en[v], 0, sizeof en[v]);
            en[v].bad = -1;
            if (v == 0) {
                memset(&rj, 0, sizeof rj);
                rj.c = c; rj.x = Y[v]; rj.e = E; rj.ef = 1; rj.compact = 0;
                for (i = 0; i < M * N; i += 256) vt__round_span(&rj, &en[v], Y[v] + i, E + i, i, VT__MIN(256, M * N - i));
            } else {
                vt__lazy *z;
                vt__no_acap = v == 2;
                vt__no_bsum = v == 3;
                z = vt__gemm_lazy(c, &c->ord, M, N, K, A, ta ? 1 : K, ta ? M : 1, B, N, 1, NULL, hasb ? bias : NULL, 0, NULL, 0);
                vt__no_acap = vt__no_bsum = 0;
                CHECK(z && z->sa.cap == (v != 2) && z->sb.cap == (v == 1 && VT__SPIN ? 2 : 0), "rep %d: the lazy bound's caps are %d, %d",
                      rep, z ? z->sa.cap : -1, z ? z->sb.cap : -1);
                if (z) en[v].bad = vt__lazy_round(c, Y[v], z, 1, 0, &en[v]);
                vt__arena_reset(&c->scratch);
            }
        }
        for (v = 1; v < 4; v++) {
            int same = en[v].bad == en[0].bad && (en[0].bad >= 0 || (en[v].n == en[0].n && same_bits(Y[v], Y[0], M * N)));
            for (i = 0; same && en[0].bad < 0 && i < en[0].n; i++) /* (a NaN fails the point: its first index is what counts) */
                same = en[v].e[i].i == en[0].e[i].i && !memcmp(&en[v].e[i].r, &en[0].e[i].r, 4) && en[v].e[i].full == en[0].e[i].full;
            if (!same && !differ++)
                CHECK(0, "rep %d (%lld x %lld x %lld, ta %d): the lazy rule %s: %lld entries, first NaN %lld; written: %lld, %lld",
                      rep, (long long)M, (long long)N, (long long)K, ta, v == 1 ? "with caps and sums" : v == 2 ? "without" : "with caps",
                      (long long)en[v].n,
                      (long long)en[v].bad, (long long)en[0].n, (long long)en[0].bad);
        }
        compared += M * N;
        ents += en[0].n;
        for (v = 0; v < 4; v++) { free(Y[v]); free(en[v].e); }
        free(A); free(B); free(X); free(E);
    }
    CHECK(differ == 0, "%lld of 72 products differ from the written rule", (long long)differ);
    CHECK(ents > compared / 4, "only %lld entries in %lld outputs: the outputs are not next to midpoints", (long long)ents, (long long)compared);
    NOTE("%lld outputs, %lld entries, the same under the four rules", (long long)compared, (long long)ents);
    vt__lzh_force = 0;
    vt_destroy(c);
}

/* STATISTICS IN THE PRODUCT'S JOB: a lazy bound's statistics left pending
   (vt__gemm_lazy's defer) are computed by the product's own tasks (tiles,
   chunks, the chunk-parallel path; A read by rows and by columns, B by rows
   and by columns; a bias), all of them within the product, and equal bit
   for bit, caps included, those computed before it; a product that rounds
   its tiles (A FUSED PRODUCT) gives the same values, entries and first NaN
   either way, and no tile rounds before the statistics are there: on 1 to
   3 threads, with chunks of statistics that take 300 us longer (a tile
   that did not wait would round on the others' unfinished ones). */
TEST(statistics_in_the_product_job) {
    static const char *ords[4] = {"threads:1", "threads:2", "threads:3", "threads:2,chaos:5"};
    static const int64_t shapes[][4] = {{200, 130, 256, 0}, {128, 96, 1030, 100}, {10, 20, 1000, 100}, {512, 64, 64, 0}, {300, 40, 300, 37}};
    int64_t compared = 0, differ = 0, deferred = 0, outside = 0, ents = 0;
    int oi, si, ta, fz;
    vt__pstat_early = 0;
    vt__lzh_force = 1; /* (the caps and sums in every product: CAPS BY HISTORY would choose by the products before) */
    for (oi = 0; oi < 4; oi++) {
        vt_ctx *c = order_ctx(ords[oi], VT_MODE_VERIFIED);
        for (fz = 0; fz < 2; fz++)
            for (si = 0; si < 5; si++)
                for (ta = 0; ta < 2; ta++) {
                    int64_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], kchunk = shapes[si][3], i, ns = 4 * (M + N);
                    int tb = (si + ta) & 1, d, t;
                    double *A = (double *)malloc(sizeof(double) * (size_t)(M * K)), *B = (double *)malloc(sizeof(double) * (size_t)(K * N));
                    double *bias = (double *)malloc(sizeof(double) * (size_t)N), *st[2], *C[2], caps[2][4];
                    vt__ents en[2];
                    int64_t bad[2];
                    for (i = 0; i < M * K; i++) A[i] = (float)vt_rng_normal(31, (uint64_t)si, (uint64_t)i);
                    for (i = 0; i < K * N; i++) B[i] = i % 5 == 0 ? 0.25 : (float)vt_rng_normal(32, (uint64_t)si, (uint64_t)i);
                    for (i = 0; i < N; i++) bias[i] = (float)vt_rng_normal(33, (uint64_t)si, (uint64_t)i);
                    for (d = 0; d < 2; d++) {
                        vt__lazy *z;
                        vt__rjob rj;
                        st[d] = (double *)malloc(sizeof(double) * (size_t)ns);
                        C[d] = (double *)malloc(sizeof(double) * (size_t)(M * N));
                        memset(&en[d], 0, sizeof en[d]);
                        bad[d] = -1;
                        z = vt__gemm_lazy(c, &c->ord, M, N, K, A, ta ? 1 : K, ta ? M : 1, B, tb ? 1 : N, tb ? K : 1, NULL,
                                          si == 3 ? bias : NULL, kchunk, NULL, d);
                        if (!z) { CHECK(0, "no scratch"); break; }
                        for (t = 0; t < c->pool.n; t++) { c->tents[t].n = 0; c->tents[t].bad = -1; }
                        memset(&rj, 0, sizeof rj);
                        rj.c = c; rj.x = C[d]; rj.lz = z; rj.ef = 0.5; /* (as vt__fused_begin) */
                        if (d) {
                            deferred += z->pend;
                            CHECK(z->pend && c->gstat == z && !z->ready, "shape %d: the statistics were not left pending", si);
                        }
                        vt__pstat_stall_us = d ? 300 : 0;
                        if (fz) c->gfuse = &rj;
                        if (si == 3) vt__gemm_run_bias(c, &c->ord, M, N, K, A, ta ? 1 : K, ta ? M : 1, B, tb ? 1 : N, tb ? K : 1, C[d], N, kchunk, bias, 0);
                        else vt__gemm_set(c, &c->ord, M, N, K, A, ta ? 1 : K, ta ? M : 1, B, tb ? 1 : N, tb ? K : 1, C[d], N, kchunk);
                        vt__pstat_stall_us = 0;
                        CHECK(c->gstat == NULL && c->gfuse == NULL, "shape %d: the product did not take its statistics or rounding", si);
                        if (d) {
                            outside += z->done != z->nchunk || !z->ready; /* (every chunk ran inside the product) */
                            vt__pstat_wait(z);
                        }
                        if (fz) bad[d] = vt__ents_gather(c, &en[d]);
                        for (i = 0; i < M; i++) { /* A's lines: their statistics as a look takes them (A ROW CAPS) */
                            double a[4];
                            vt__lazy_astat(z, i, a);
                            st[d][i] = a[0]; st[d][M + i] = a[1]; st[d][2 * M + i] = a[2]; st[d][3 * M + i] = a[3];
                        }
                        vt__lazy_bcols(z, 0, N); /* (B COLUMN SUMS: every column's other statistics, as looks take them) */
                        memcpy(st[d] + 4 * M, z->sb.n1, sizeof(double) * (size_t)(4 * N));
                        caps[d][0] = z->cap1; caps[d][1] = z->cap2; caps[d][2] = z->capm; caps[d][3] = z->capb;
                        vt__arena_reset(&c->scratch);
                    }
                    for (i = 0; i < ns; i++) differ += memcmp(&st[0][i], &st[1][i], 8) != 0;
                    differ += memcmp(caps[0], caps[1], sizeof caps[0]) != 0;
                    for (i = 0; i < M * N; i++) differ += memcmp(&C[0][i], &C[1][i], 8) != 0;
                    differ += bad[0] != bad[1] || en[0].n != en[1].n;
                    for (i = 0; i < en[0].n && i < en[1].n; i++)
                        differ += en[0].e[i].i != en[1].e[i].i || memcmp(&en[0].e[i].r, &en[1].e[i].r, 4) != 0 || en[0].e[i].full != en[1].e[i].full;
                    compared += ns + 1 + M * N + 1 + en[0].n;
                    ents += en[0].n;
                    free(A); free(B); free(bias); free(st[0]); free(st[1]); free(C[0]); free(C[1]); free(en[0].e); free(en[1].e);
                }
        CHECK(vt_status_of(c) == VT_OK, "order %s: %s", ords[oi], vt_error_message(c));
        vt_destroy(c);
    }
    vt__lzh_force = 0;
    CHECK(differ == 0, "%lld of %lld statistics, values and entries differ between the product's job and their own",
          (long long)differ, (long long)compared);
    CHECK(outside == 0, "%lld products left statistics for the caller", (long long)outside);
    CHECK(vt__pstat_early == 0, "%lld tiles rounded before their statistics were there", (long long)vt__pstat_early);
    NOTE("%lld statistics, values and entries compared (%lld entries), %lld products computed their statistics",
         (long long)compared, (long long)ents, (long long)deferred);
}

/* vt__gemm_run_bias: C = bias + A B (or (C + bias) + A B) with the bias put
   in by each tile (or row of the chunk-parallel sum), bit for bit what a
   pass that sets or adds the bias and then vt__gemm_run give: tiled and
   chunk-parallel (few tiles, a long chunked K), chunked and not, K = 0,
   on one and two threads and in native mode (binary32 additions). */
TEST(gemm_bias_inside_bit_identical) {
    static const char *ords[3] = {"threads:1", "threads:2", "threads:2,chaos:3"};
    static const int64_t shapes[][4] = {{300, 130, 70, 0}, {200, 40, 300, 37}, {10, 20, 1000, 100}, {50, 30, 0, 0}};
    int64_t compared = 0, differ = 0;
    int oi, si, bacc, native;
    for (native = 0; native < 2; native++)
        for (oi = 0; oi < 3; oi++) {
            vt_ctx *c = order_ctx(ords[oi], native ? VT_MODE_NATIVE : VT_MODE_VERIFIED);
            c->ord.f32 = native;
            for (si = 0; si < 4; si++)
                for (bacc = 0; bacc < 2; bacc++) {
                    int64_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], kchunk = shapes[si][3], i, j;
                    double *A = (double *)malloc(sizeof(double) * (size_t)(M * K + 1)), *B = (double *)malloc(sizeof(double) * (size_t)(K * N + 1));
                    double *bias = (double *)malloc(sizeof(double) * (size_t)N), *C[2];
                    int way;
                    for (i = 0; i < M * K; i++) A[i] = (float)vt_rng_normal(27, (uint64_t)si, (uint64_t)i);
                    for (i = 0; i < K * N; i++) B[i] = (float)vt_rng_normal(28, (uint64_t)si, (uint64_t)i);
                    for (j = 0; j < N; j++) bias[j] = j % 7 == 0 ? -0.0 : (float)vt_rng_normal(29, (uint64_t)si, (uint64_t)j);
                    for (way = 0; way < 2; way++) {
                        C[way] = (double *)malloc(sizeof(double) * (size_t)(M * N));
                        for (i = 0; i < M * N; i++) C[way][i] = (float)vt_rng_normal(30, (uint64_t)si, (uint64_t)i);
                        if (way == 0) {
                            for (i = 0; i < M; i++)
                                for (j = 0; j < N; j++)
                                    C[0][i * N + j] = bacc ? VT__ACC(&c->ord, C[0][i * N + j] + bias[j]) : bias[j];
                            vt__gemm_run(c, &c->ord, M, N, K, A, K, 1, B, N, 1, C[0], N, kchunk);
                        } else
                            vt__gemm_run_bias(c, &c->ord, M, N, K, A, K, 1, B, N, 1, C[1], N, kchunk, bias, bacc);
                        vt__arena_reset(&c->scratch);
                    }
                    for (i = 0; i < M * N; i++) differ += memcmp(&C[0][i], &C[1][i], 8) != 0;
                    compared += M * N;
                    free(A); free(B); free(bias); free(C[0]); free(C[1]);
                }
            vt_destroy(c);
        }
    CHECK(differ == 0, "%lld of %lld outputs differ from the bias pass then the product", (long long)differ, (long long)compared);
    NOTE("%lld outputs compared", (long long)compared);
}

TEST(gemm_matches_reference) {
    static const int64_t shapes[][3] = {{1, 1, 1}, {13, 17, 257}, {37, 130, 300}, {101, 203, 97}, {200, 40, 1030}};
    int isa, si, v;
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    d.order.threads = 2;
    c = vt_create(&d);
    for (isa = 0; isa < 2; isa++) {
        if (!isa_here(isa)) break;
        for (si = 0; si < 5; si++)
            for (v = 0; v < 4; v++) {
                int64_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], i, bad = 0, kchunk = (v & 1) ? 100 : 0;
                int integers = v >> 1;
                double *A = (double *)malloc(sizeof(double) * (size_t)(M * K)), *B = (double *)malloc(sizeof(double) * (size_t)(K * N));
                double *C = (double *)calloc((size_t)(M * N), sizeof(double)), *R = (double *)calloc((size_t)(M * N), sizeof(double));
                double *E = (double *)malloc(sizeof(double) * (size_t)(M * N));
                for (i = 0; i < M * K; i++)
                    A[i] = integers ? (double)(int)(vt_rng_u64(8, (uint64_t)si, (uint64_t)i) % 17) - 8 : (float)vt_rng_normal(8, (uint64_t)si, (uint64_t)i);
                for (i = 0; i < K * N; i++)
                    B[i] = integers ? (double)(int)(vt_rng_u64(9, (uint64_t)si, (uint64_t)i) % 17) - 8 : (float)vt_rng_normal(9, (uint64_t)si, (uint64_t)i);
                vt__gemm_bound(c, &c->ord, M, N, K, A, K, 1, B, N, 1, NULL, N, NULL, kchunk, E);
                gemm_once(c, isa, M, N, K, A, 0, B, 0, C, kchunk);
                vt__gemm_naive(M, N, K, A, K, 1, B, N, 1, R, N);
                for (i = 0; i < M * N; i++)
                    if (integers ? memcmp(&C[i], &R[i], 8) != 0 : !(fabs(C[i] - R[i]) <= 2 * E[i])) {
                        if (!bad++)
                            CHECK(0, "%s %lldx%lldx%lld %s element %lld: %.17g, reference %.17g, bound %g", isa ? "AVX-512" : "base",
                                  (long long)M, (long long)N, (long long)K, integers ? "integers" : "normals", (long long)i, C[i], R[i], E[i]);
                    }
                free(A); free(B); free(C); free(R); free(E);
            }
    }
    vt_destroy(c);
}


/* vt__gemm_row0's tiles: row 0 to M in order, each nonempty, a whole number
   of micro-panels (the last may be cut by M), at most mc rows, and within
   one panel of each other, for every tile count that mc allows. The tiles
   of 256 rows dealt as before (tiles of mc rows, the rest last) fail the
   last condition (48 against 16). */
TEST(gemm_tiles_even) {
    static const int mrs[2] = {6, 12};
    int r, bad = 0, shown = 0;
    for (r = 0; r < 2; r++) {
        vt__ukr_set ks;
        vt__gemm g;
        int64_t M, mc;
        memset(&ks, 0, sizeof ks);
        memset(&g, 0, sizeof g);
        ks.mr = mrs[r];
        g.ks = &ks;
        for (M = 1; M <= 700; M++)
            for (mc = ks.mr; mc <= VT__MC; mc += ks.mr) {
                int64_t ti, lo = INT64_MAX, hi = 0, panels = (M + ks.mr - 1) / ks.mr;
                int before = bad;
                g.M = M;
                g.mc = mc;
                g.tm = (M + mc - 1) / mc;
                if (vt__gemm_row0(&g, 0) != 0 || vt__gemm_row0(&g, g.tm) != M) bad++;
                for (ti = 0; ti < g.tm; ti++) {
                    int64_t a = vt__gemm_row0(&g, ti), b = vt__gemm_row0(&g, ti + 1), np = (b - a + ks.mr - 1) / ks.mr;
                    if (b <= a || b - a > mc || a % ks.mr != 0 || (b != M && b % ks.mr != 0)) bad++;
                    lo = np < lo ? np : lo;
                    hi = np > hi ? np : hi;
                }
                if (hi - lo > 1 || panels < g.tm) bad++;
                if (bad > before && ++shown <= 3)
                    CHECK(0, "mr %d, M %lld, mc %lld: %lld tiles of %lld to %lld panels, or not covering [0, M) in order", ks.mr,
                          (long long)M, (long long)mc, (long long)g.tm, (long long)lo, (long long)hi);
            }
    }
    CHECK(bad == 0, "%d uneven or misplaced tiles", bad);
}
/* Native mode's products against the definition of native: per k-block
   (default order: blocks of o.block in k order, fma), a binary32
   accumulator from +0 with one fmaf per k, then t = the accumulator (the
   first block of a product that sets C) or RNE32(t + accumulator). Every
   operand layout the packing has a path for (A by rows or by columns, B
   by rows or by columns, i.e. W^T as a linear's forward reads it), edge
   panels on every side, one and several k-blocks, both kernel sets, into
   an old C and setting C: bit for bit. The kernel comparisons above run
   both kernel sets through the same packing, so a packing error common to
   both would pass them; this does not. */
TEST(native_gemm_matches_its_definition) {
    static const int64_t shapes[][3] = {{37, 70, 300}, {96, 128, 256}, {13, 33, 600}, {50, 100, 31}};
    static const char *ords[2] = {"threads:1", "threads:2"};
    int64_t compared = 0, differ = 0;
    int oi, si, v, isa;
    for (oi = 0; oi < 2; oi++) {
        vt_ctx *c = order_ctx(ords[oi], VT_MODE_NATIVE);
        int64_t kc = c->ord.block;
        CHECK(c->ord.f32 == 1 && c->ord.fma == 1 && !c->ord.chaos, "native's default order: f32 %d fma %d chaos %d", c->ord.f32,
              c->ord.fma, c->ord.chaos);
        for (isa = 0; isa < 2; isa++) {
            if (!isa_here(isa)) break;
            for (si = 0; si < 4; si++)
                for (v = 0; v < 8; v++) { /* v: A transposed, B transposed, set (else into an old C) */
                    int64_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], i, m, n, k, k0;
                    int ta = v & 1, tb = (v >> 1) & 1, set = (v >> 2) & 1;
                    double *A = (double *)malloc(sizeof(double) * (size_t)(M * K)), *B = (double *)malloc(sizeof(double) * (size_t)(K * N));
                    double *C = (double *)malloc(sizeof(double) * (size_t)(M * N)), *R = (double *)malloc(sizeof(double) * (size_t)(M * N));
                    for (i = 0; i < M * K; i++) A[i] = (float)vt_rng_normal(30, (uint64_t)si, (uint64_t)i);
                    for (i = 0; i < K * N; i++) B[i] = (float)vt_rng_normal(31, (uint64_t)si, (uint64_t)i);
                    for (i = 0; i < M * N; i++) C[i] = R[i] = (float)vt_rng_normal(32, (uint64_t)si, (uint64_t)i);
                    if (set) gemm_set_once(c, isa, M, N, K, A, ta, B, tb, C, 0);
                    else gemm_once(c, isa, M, N, K, A, ta, B, tb, C, 0);
                    for (m = 0; m < M; m++)
                        for (n = 0; n < N; n++) {
                            double t = R[m * N + n];
                            for (k0 = 0; k0 < K; k0 += kc) {
                                float acc = 0.0f;
                                for (k = k0; k < K && k < k0 + kc; k++) /* (A, B as gemm_once lays them out) */
                                    acc = fmaf((float)(ta ? A[k * M + m] : A[m * K + k]), (float)(tb ? B[n * K + k] : B[k * N + n]), acc);
                                t = set && k0 == 0 ? (double)acc : (double)(float)(t + (double)acc);
                            }
                            compared++;
                            if (memcmp(&t, &C[m * N + n], 8) && !differ++)
                                CHECK(0, "%s %s %lldx%lldx%lld ta %d tb %d set %d (%lld,%lld): the definition %.9g, the product %.9g",
                                      ords[oi], isa ? "AVX-512" : "base", (long long)M, (long long)N, (long long)K, ta, tb, set,
                                      (long long)m, (long long)n, t, C[m * N + n]);
                        }
                    free(A); free(B); free(C); free(R);
                }
        }
        CHECK(vt_status_of(c) == VT_OK, "order %s: %s", ords[oi], vt_error_message(c));
        vt_destroy(c);
    }
    CHECK(differ == 0, "%lld of %lld native products differ from native's definition", (long long)differ, (long long)compared);
    NOTE("%lld outputs compared", (long long)compared);
}

/* --- the thread pool ------------------------------------------------------------
   A worker that loaded the claim word of a finished job must not claim a
   chunk of the next one (85e4f81: it could, when the next job had more
   chunks, and ran one of them twice while the caller returned before it
   ended). vt__pool_race_us holds the worker in that window and the caller
   between publishing the next job's size and opening its claims, which is
   where the old pool let the stale claim through; every chunk of every job
   must run exactly once. On the old pool (without the caller closing the
   claim word first) this fails in the first few rounds. */
typedef struct { int runs[64]; int slow; } pool_job;
static void pool_chunk(void *arg, int64_t lo, int64_t hi, int tid) {
    pool_job *j = (pool_job *)arg;
    int64_t i;
    (void)tid;
    for (i = lo; i < hi; i++) __atomic_add_fetch(&j->runs[i], 1, __ATOMIC_RELAXED);
    if (j->slow) vt__sleep_us(j->slow);
}

TEST(pool_stale_claim_refused) {
#if VT__SPIN
    vt__pool p;
    vt__worker_arg *wa;
    int round, i, twice = 0, missed = 0;
    vt__pool_race_us = 2000; /* set before the workers start and reset after they stop: they read it unguarded */
    wa = vt__pool_start(&p, 2, NULL);
    for (round = 0; round < 6; round++) {
        pool_job small, big;
        memset(&small, 0, sizeof small);
        memset(&big, 0, sizeof big);
        small.slow = 1000; /* the worker is inside vt__claim when the small job ends */
        vt__parallel(&p, 2, 1 << 20, pool_chunk, &small);
        vt__parallel(&p, 16, 1 << 20, pool_chunk, &big); /* 16 chunks: more than the 2 before */
        for (i = 0; i < 2; i++) twice += small.runs[i] > 1, missed += small.runs[i] < 1;
        for (i = 0; i < 16; i++) twice += big.runs[i] > 1, missed += big.runs[i] < 1;
    }
    vt__pool_stop(&p, wa, NULL);
    vt__pool_race_us = 0;
    CHECK(twice == 0 && missed == 0, "%d chunks ran twice and %d never ran: a stale claim took a chunk of the next job", twice, missed);
#else
    NOTE("no atomics in this build: the pool runs under its mutex, where a stale claim cannot happen");
#endif
}

int main(int argc, char **argv) {
    TEST_FILTER(argc, argv);
    RUN(sha256_vectors);
    RUN(sha256_block_paths_agree);
    RUN(sha256_two_at_once);
    RUN(philox_known_answers);
    RUN(det_log_accuracy);
    RUN(normal_moments);
    RUN(shuffle_is_permutation);
    RUN(init_same_across_threads);
    RUN(digits_loader);
    RUN(digits_bad_files);
    RUN(text_loader);
    RUN(shape_errors);
    RUN(zero_size_and_overflow_refused);
    RUN(param_names_checked);
    RUN(nan_is_reported);
    RUN(order_strings);
    RUN(order_numbers_checked);
    RUN(op_ids_pinned);
    RUN(no_contraction_here);
    RUN(gemm_kernels_bit_identical);
    RUN(elementary_vector_bit_identical);
    RUN(row_max_is_the_loops);
    RUN(absdot_rows4_is_rdots);
    RUN(gemm_causal_bit_identical);
    RUN(verify_passes_avx512_match);
    RUN(nan_checks_and_casts_match_scalar);
    RUN(column_sums_four_at_once);
    RUN(bounded_column_sums_match_the_definition);
    RUN(stat_rows4_matches_one_at_a_time);
    RUN(a_row_caps_and_lines_on_demand);
    RUN(a_row_caps_look_where_the_written_bound_looks);
    RUN(bound_workspace_holds_the_statistics);
    RUN(gemm_matches_reference);
    RUN(gemm_tiles_even);
    RUN(gemm_shared_panels_bit_identical);
    RUN(statistics_in_the_product_job);
    RUN(layernorm_rows_vector_equal_scalar);
    RUN(layernorm_backward_row_width_covers_every_bound);
    RUN(gemm_bias_inside_bit_identical);
    RUN(gemm_chunks_added_in_the_kernel);
    RUN(native_gemm_matches_its_definition);
    RUN(pool_stale_claim_refused);
    return TEST_SUMMARY();
}
