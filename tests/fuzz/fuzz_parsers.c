/* tests/fuzz/fuzz_parsers.c - libFuzzer harness for every parser that reads
   untrusted bytes: checkpoints (safetensors), commitments, manifests, the
   rounding log (its file header and its step chunks, replayed through a
   small program so that every record and entry is decoded), root.txt, a
   manifest as an auditor checks it, a dispute claim on the wire, and an
   order string.

   make fuzz [FUZZ_SECONDS=60]   (clang with -fsanitize=fuzzer,address,undefined)

   The first input byte picks the parser. Inputs that once crashed a parser
   are kept in tests/fuzz/regress and replayed by tests/test_transcript.c. */
#define VTRAIN_IMPLEMENTATION
#include "../../vtrain.h"
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static vt_tensor *W1, *W2;

static vt_status setup(vt_ctx *c, void *u) {
    int64_t n1[2] = {8, 6}, n2[2] = {3, 8};
    (void)u;
    W1 = vt_param(c, "w1", 2, n1);
    W2 = vt_param(c, "w2", 2, n2);
    vt_init_normal(c, W1, 1, 0, 0.5);
    vt_init_normal(c, W2, 1, 1, 0.5);
    vt_adamw_create(c, NULL);
    return vt_status_of(c);
}

/* a step with a few rounding points: linear, gelu, softmax, cross-entropy */
static void step(vt_ctx *c) {
    float x[4 * 6];
    int32_t y[4] = {0, 1, 2, 1};
    int64_t xs[2] = {4, 6}, ys[1] = {4};
    int i;
    for (i = 0; i < 24; i++) x[i] = (float)(i % 7) * 0.25f - 0.7f;
    vt_backward(c, vt_cross_entropy(c, vt_linear(c, vt_gelu(c, vt_linear(c, vt_from_f32(c, 2, xs, x), W1, NULL)), W2, NULL),
                                    vt_from_i32(c, 1, ys, y)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const unsigned char *b = data + 1;
    size_t n = size ? size - 1 : 0;
    if (!size) return 0;
    switch (data[0] % 10) {
    case 0: { /* checkpoint */
        vt_desc d = vt_desc_default();
        vt_ctx *c;
        d.order.threads = 1;
        c = vt_create(&d);
        if (c && setup(c, NULL) == VT_OK) vt__checkpoint_parse(c, b, n, "fuzz");
        vt_destroy(c);
        break;
    }
    case 1: /* commitments */
        vt__parse_leaves(b, n, "fuzz", NULL, NULL, NULL);
        break;
    case 2: { /* manifest */
        char *t = (char *)malloc(n + 1), v[64];
        unsigned char h[32];
        memcpy(t, b, n);
        t[n] = 0;
        vt__manifest_find(t, "model.width", v, sizeof v);
        vt__program_sha(t, n, h);
        free(t);
        break;
    }
    case 3: { /* a step chunk, replayed */
        vt_desc d = vt_desc_default();
        vt_ctx *c;
        d.order.threads = 1;
        d.role = VT_ROLE_AUDIT;
        d.log_memory = 1;
        c = vt_create(&d);
        if (c && setup(c, NULL) == VT_OK) {
            vt_feed_chunk(c, b, n);
            if (vt_step_begin(c) == VT_OK) step(c);
            vt_step_end(c);
        }
        vt_destroy(c);
        break;
    }
    case 5: { /* a step chunk whose checksum is made right, so the records are decoded */
        vt_desc d = vt_desc_default();
        vt_ctx *c;
        unsigned char *ch;
        if (n < VT__CHUNK_HDR) break;
        ch = (unsigned char *)malloc(n + 32);
        memcpy(ch, b, n);
        memcpy(ch, n % 2 ? "VTCK" : "VTCR", 4);
        vt__put_u64(ch + 4, 0);
        vt__put_u64(ch + 20, (uint64_t)(n - VT__CHUNK_HDR));
        vt_sha256(ch, n, ch + n);
        d.order.threads = 1;
        d.role = VT_ROLE_AUDIT;
        d.log_memory = 1;
        c = vt_create(&d);
        if (c && setup(c, NULL) == VT_OK) {
            vt_feed_chunk(c, ch, n + 32);
            if (vt_step_begin(c) == VT_OK) step(c);
            vt_step_end(c);
        }
        vt_destroy(c);
        free(ch);
        break;
    }
    case 4: { /* a log file's header and first chunk */
        char path[64];
        FILE *f;
        vt_desc d = vt_desc_default();
        vt_ctx *c;
        snprintf(path, sizeof path, "/tmp/vtrain-fuzz-%d.vtlog", (int)getpid());
        f = fopen(path, "wb");
        if (!f) break;
        fwrite(b, 1, n, f);
        fclose(f);
        d.order.threads = 1;
        d.role = VT_ROLE_AUDIT;
        d.log_path = path;
        d.commit_path = "/dev/null";
        c = vt_create(&d);
        if (c && setup(c, NULL) == VT_OK && vt_step_begin(c) == VT_OK) step(c);
        vt_destroy(c);
        remove(path);
        break;
    }
    case 6: { /* root.txt */
        char dir[64], path[96];
        FILE *f;
        unsigned char r[32], m[32];
        int64_t steps;
        snprintf(dir, sizeof dir, "/tmp/vtrain-fuzz-root-%d", (int)getpid());
        mkdir(dir, 0777);
        snprintf(path, sizeof path, "%s/root.txt", dir);
        f = fopen(path, "wb");
        if (!f) break;
        fwrite(b, 1, n, f);
        fclose(f);
        vt_transcript_root(dir, r, m, &steps);
        vt_transcript_check(dir, &steps);
        remove(path);
        rmdir(dir);
        break;
    }
    case 7: { /* a manifest as an auditor checks it */
        char *t = (char *)malloc(n + 1);
        int mode, bound;
        double lambda;
        memcpy(t, b, n);
        t[n] = 0;
        vt__manifest_check(t, n, "fuzz", &mode, &bound, &lambda);
        free(t);
        break;
    }
    case 8: { /* a dispute claim on the wire, received in a small game */
        vt_leaf_info mine[5], theirs[5];
        unsigned char lv[5][32], root[32];
        vt_dispute g;
        vt_claim c;
        int i;
        memset(mine, 0, sizeof mine);
        memset(theirs, 0, sizeof theirs);
        for (i = 0; i < 5; i++) {
            mine[i].step = theirs[i].step = i;
            theirs[i].state[0] = (unsigned char)(i == 3);
            vt_leaf_hash(&mine[i]);
            vt_leaf_hash(&theirs[i]);
            memcpy(lv[i], theirs[i].leaf, 32);
        }
        vt_merkle_root((const unsigned char(*)[32])lv, 5, root);
        vt_claim_decode(b, n, &c);
        if (vt_dispute_begin(&g, mine, 5, root) == VT_OK) vt_dispute_receive_bytes(&g, b, n);
        break;
    }
    case 9: { /* an order string */
        char *t = (char *)malloc(n + 1);
        vt_order o;
        memcpy(t, b, n);
        t[n] = 0;
        vt_order_parse(&o, t);
        free(t);
        break;
    }
    }
    return 0;
}
