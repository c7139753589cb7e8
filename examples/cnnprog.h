/* cnnprog.h - the convolutional training programs of the CLI (vtrain train
   --model cnn|resnet18|resnet50) and of examples/train_resnet.c (include
   after vtrain.h and digitscnn.h).

     cnn       the digits CNN (digitscnn.h) on data/digits.csv (or --data FILE)
     resnet18  a CIFAR ResNet on CIFAR-10 (--data DIR holding data_batch_1.bin
     resnet50  ... data_batch_5.bin; as many as are there, at least the first)
               or, with --data synthetic, on 2,048 CIFAR-shaped images made
               here: ten classes of coloured stripes with noise, so the loss
               has something to learn (no CIFAR-10 download needed)

   ResNets train with SGD (momentum 0.9, Nesterov, weight decay 5e-4), a
   cosine schedule, and the papers' augmentation (random crop with padding
   4, horizontal flip) keyed by (17, step, row); batches are shuffled per
   epoch by (99, epoch, index). Everything an auditor needs goes into the
   manifest (cnnprog_manifest) and comes back from it (cnnprog_from_manifest). */
#ifndef CNNPROG_H
#define CNNPROG_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cnnprog {
    char model[16];     /* "cnn", "resnet18", "resnet50" */
    char data[600];     /* a file (cnn), a CIFAR-10 directory or "synthetic" */
    int width;          /* cnn: W; resnet: the base width (64 in the papers) */
    int batch;
    double lr;
    int64_t steps;
    vt_digits digits;
    vt_cifar cifar;
    int32_t *perm;      /* cnn: the sample order (train first) */
    digitscnn cnn;
    vt_resnet rn;
    vt_optim *opt;
    float *x;           /* resnet: the batch (B,3,32,32) */
    char sha[65];       /* the data's SHA-256 */
} cnnprog;

static int cnnprog_is(const char *m) { return !strcmp(m, "cnn") || !strcmp(m, "resnet18") || !strcmp(m, "resnet50"); }

/* the synthetic set: image i of class i % 10, stripes whose direction,
   frequency and colour depend on the class, plus noise from (31, i, pixel) */
static void cnnprog_synthetic(vt_cifar *d, int n) {
    int i, ch, y, x;
    d->n = n;
    d->x = (unsigned char *)malloc((size_t)n * 3072);
    d->y = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    if (!d->x || !d->y) { d->n = 0; return; }
    for (i = 0; i < n; i++) {
        int k = i % 10;
        d->y[i] = k;
        for (ch = 0; ch < 3; ch++)
            for (y = 0; y < 32; y++)
                for (x = 0; x < 32; x++) {
                    int pos = k < 5 ? x : y, per = 3 + k % 5, on = (pos / per) % 2;
                    int base = on ? 80 + 40 * ((k + ch) % 3) : 60;
                    int noise = (int)(vt_rng_u64(31, (uint64_t)i, (uint64_t)(ch * 1024 + y * 32 + x)) % 61) - 30;
                    int v = base + noise;
                    d->x[(size_t)i * 3072 + ch * 1024 + y * 32 + x] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
    }
}

/* loads the data; 0 and a message on stderr when it cannot */
static int cnnprog_load(cnnprog *p) {
    unsigned char h[32];
    vt_sha256_ctx s;
    vt_sha256_init(&s);
    if (!strcmp(p->model, "cnn")) {
        int i;
        if (vt_digits_load(p->data, &p->digits) != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return 0; }
        vt_sha256_update(&s, p->digits.x, sizeof(float) * 64 * (size_t)p->digits.n);
        vt_sha256_update(&s, p->digits.y, sizeof(int32_t) * (size_t)p->digits.n);
        p->perm = (int32_t *)malloc(sizeof(int32_t) * (size_t)p->digits.n);
        if (!p->perm) return 0;
        for (i = 0; i < p->digits.n; i++) p->perm[i] = (int32_t)vt_shuffle(7, 0, (uint64_t)i, (uint64_t)p->digits.n);
    } else if (!strcmp(p->data, "synthetic")) {
        cnnprog_synthetic(&p->cifar, 2048);
        if (!p->cifar.n) { fprintf(stderr, "error: out of memory for the synthetic images\n"); return 0; }
    } else {
        char paths[5][700];
        const char *pp[5];
        int n = 0, k;
        for (k = 1; k <= 5; k++) {
            FILE *f;
            snprintf(paths[n], sizeof paths[n], "%s/data_batch_%d.bin", p->data, k);
            f = fopen(paths[n], "rb");
            if (!f) { if (k == 1) { fprintf(stderr, "error: cannot open '%s' (--data names a CIFAR-10 directory, or synthetic)\n", paths[n]); return 0; } break; }
            fclose(f);
            pp[n] = paths[n];
            n++;
        }
        if (vt_cifar_load(pp, n, &p->cifar) != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return 0; }
    }
    if (p->cifar.n) {
        vt_sha256_update(&s, p->cifar.x, (size_t)p->cifar.n * 3072);
        vt_sha256_update(&s, p->cifar.y, sizeof(int32_t) * (size_t)p->cifar.n);
    }
    vt_sha256_final(&s, h);
    vt_hex(h, 32, p->sha);
    return 1;
}

static VT__UNUSED void cnnprog_free(cnnprog *p) {
    vt_digits_free(&p->digits);
    vt_cifar_free(&p->cifar);
    vt_resnet_free(&p->rn);
    free(p->perm);
    free(p->x);
    p->perm = NULL;
    p->x = NULL;
}

static vt_status cnnprog_setup(vt_ctx *c, void *u) {
    cnnprog *p = (cnnprog *)u;
    if (!strcmp(p->model, "cnn")) {
        p->cnn = digitscnn_new(&p->digits);
        p->cnn.perm = p->perm;
        p->cnn.ntrain = p->digits.n - p->digits.n / 5;
        p->cnn.width = p->width; p->cnn.batch = p->batch; p->cnn.lr = p->lr; p->cnn.steps = p->steps; p->cnn.commit = 1;
        return digitscnn_setup(c, &p->cnn);
    } else {
        vt_resnet_config cfg = vt_resnet_default(!strcmp(p->model, "resnet50") ? 50 : 18);
        vt_sgd_desc sd = vt_sgd_default();
        cfg.width = p->width;
        vt_resnet_free(&p->rn);
        vt_resnet_init(c, &p->rn, &cfg, 2024);
        sd.lr = p->lr; sd.momentum = 0.9; sd.nesterov = 1; sd.weight_decay = 5e-4;
        p->opt = vt_sgd_create(c, &sd);
        free(p->x);
        p->x = (float *)malloc(sizeof(float) * 3072 * (size_t)p->batch);
        if (!p->x) return vt_set_error(c, VT_ERR_NOMEM, "cnnprog: out of memory for the batch");
        return vt_status_of(c);
    }
}

static vt_status cnnprog_step(vt_ctx *c, int64_t s, void *u) {
    cnnprog *p = (cnnprog *)u;
    int64_t idx[1024], xs[4], ys[1];
    int32_t y[1024];
    int i;
    vt_tensor *lg;
    if (!strcmp(p->model, "cnn")) return digitscnn_step(c, s, &p->cnn);
    for (i = 0; i < p->batch; i++) {
        uint64_t k = (uint64_t)(s * p->batch + i), n = (uint64_t)p->cifar.n;
        int j = (int)vt_shuffle(99, k / n, k % n, n);
        idx[i] = j;
        y[i] = p->cifar.y[j];
        vt_cifar_image(&p->cifar, j, 1, 17, (uint64_t)s, (uint64_t)i, p->x + (size_t)i * 3072);
    }
    vt_commit_batch(c, idx, p->batch);
    xs[0] = p->batch; xs[1] = 3; xs[2] = 32; xs[3] = 32; ys[0] = p->batch;
    lg = vt_resnet_forward(c, &p->rn, vt_from_f32(c, 4, xs, p->x));
    vt_backward(c, vt_cross_entropy(c, lg, vt_from_i32(c, 1, ys, y)));
    vt_optim_step(c, p->opt, vt_lr_cosine(s, p->steps / 20 + 1, p->steps, p->lr, p->lr / 100));
    return vt_status_of(c);
}

static VT__UNUSED vt_program cnnprog_program(cnnprog *p) {
    vt_program r;
    r.setup = cnnprog_setup; r.step = cnnprog_step; r.on_step = NULL; r.user = p;
    return r;
}

static VT__UNUSED const char *const *cnnprog_manifest(const cnnprog *p) {
    static char buf[8][700];
    static const char *ptr[9];
    int k = 0;
    snprintf(buf[k++], sizeof buf[0], "program=%s", p->model);
    snprintf(buf[k++], sizeof buf[0], "data.file=%s", p->data);
    snprintf(buf[k++], sizeof buf[0], "data.sha256=%s", p->sha);
    snprintf(buf[k++], sizeof buf[0], "model.width=%d", p->width);
    snprintf(buf[k++], sizeof buf[0], "train.batch=%d", p->batch);
    snprintf(buf[k++], sizeof buf[0], "train.lr=%.17g", p->lr);
    snprintf(buf[k++], sizeof buf[0], "train.steps=%lld", (long long)p->steps);
    for (k = 0; k < 7; k++) ptr[k] = buf[k];
    ptr[7] = NULL;
    return ptr;
}

/* the limits a manifest's values must keep (a transcript may come from anyone) */
static int cnnprog_check(const cnnprog *p, char *why, size_t n) {
    int maxb = !strcmp(p->model, "cnn") ? 128 : 1024;
    if (!cnnprog_is(p->model)) { snprintf(why, n, "unknown model '%s' (cnn, resnet18, resnet50)", p->model); return 0; }
    if (p->width < 1 || p->width > 1024) { snprintf(why, n, "width %d is outside 1..1024", p->width); return 0; }
    if (p->batch < 2 || p->batch > maxb) { snprintf(why, n, "batch %d is outside 2..%d", p->batch, maxb); return 0; }
    if (!(p->lr > 0 && p->lr <= 10)) { snprintf(why, n, "lr %g is outside (0, 10]", p->lr); return 0; }
    if (p->steps < 1 || p->steps > 1000000000LL) { snprintf(why, n, "steps %lld is outside 1..1000000000", (long long)p->steps); return 0; }
    return 1;
}

/* rebuilds the program from a transcript's manifest, loads the data and
   checks its hash; a message on stderr and 0 when the manifest names no
   program, -1 when this machine lacks its data (unreadable, or another
   file than the one its SHA-256 names) */
static VT__UNUSED int cnnprog_from_manifest(cnnprog *p, const char *dir) {
    char v[700], why[200], *end;
    const char *keys[5] = {"model.width", "train.batch", "train.steps", "train.lr", "data.sha256"};
    double num[4];
    int k;
    if (vt_manifest_get(dir, "program", p->model, sizeof p->model) != VT_OK ||
        vt_manifest_get(dir, "data.file", p->data, sizeof p->data) != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return 0; }
    for (k = 0; k < 4; k++) {
        if (vt_manifest_get(dir, keys[k], v, sizeof v) != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return 0; }
        num[k] = strtod(v, &end);
        if (end == v || *end) { fprintf(stderr, "error: '%s/manifest.txt', %s: '%s' is not a number\n", dir, keys[k], v); return 0; }
    }
    if (num[0] != (int)num[0] || num[1] != (int)num[1] || num[2] != (int64_t)num[2]) {
        fprintf(stderr, "error: '%s/manifest.txt': width, batch and steps must be integers\n", dir);
        return 0;
    }
    p->width = (int)num[0]; p->batch = (int)num[1]; p->steps = (int64_t)num[2]; p->lr = num[3];
    if (!cnnprog_check(p, why, sizeof why)) { fprintf(stderr, "error: '%s/manifest.txt': %s\n", dir, why); return 0; }
    if (vt_manifest_get(dir, "data.sha256", v, sizeof v) != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return 0; }
    if (!cnnprog_load(p)) return -1;
    if (strcmp(v, p->sha)) {
        fprintf(stderr, "error: the data '%s' is not the one the manifest names (SHA-256 %.16s..., manifest %.16s...)\n", p->data, p->sha, v);
        return -1;
    }
    return 1;
}
#endif
