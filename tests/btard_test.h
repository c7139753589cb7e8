/* tests/btard_test.h - what the BTARD test programs share: identities for
   peers created one by one (vt_btard_simulate makes its own), reproducible
   from a seed, so for tests only; and a context's gradients read out flat.
   Include after vtrain_btard.h and test.h. */
#ifndef VT_BTARD_TEST_H
#define VT_BTARD_TEST_H

#define VT_TEST_PEERS 16
static vt_btard_key g_keys[VT_TEST_PEERS];
static unsigned char g_roster[VT_TEST_PEERS * 32];
static VT_TEST_UNUSED void make_keys(int n, uint64_t seed) {
    int i, k;
    for (i = 0; i < n && i < VT_TEST_PEERS; i++) {
        unsigned char s[32];
        for (k = 0; k < 32; k++) s[k] = (unsigned char)vt_rng_u64(seed, (uint64_t)i, (uint64_t)k);
        vt_btard_key_from_seed(&g_keys[i], s);
        memcpy(g_roster + 32 * i, g_keys[i].pk, 32);
    }
}

/* the start of a program that needs the digits task and signatures: loads
   data/digits.csv into d (hidden 16, 8 samples), and without libsodium says
   in one visible line what `what` leaves untested. Returns -1 to go on, or
   the exit code to return. */
static VT_TEST_UNUSED int btard_test_start(vt_btard_digits *d, const char *group, const char *what) {
    if (vt_btard_digits_load(d, "data/digits.csv", 16, 8, 0.05) != VT_OK) {
        printf("cannot load data/digits.csv (run from the repository root): %s\n0 passed, 1 failed\n", vt_last_error());
        return 1;
    }
    if (!vt_btard_can_sign()) {
        vt_btard_digits_free(d);
        printf("skipped: %s: built without libsodium (VTRAIN_SODIUM): %s is not tested (apt-get install libsodium-dev)\n", group, what);
        printf("0 passed, 0 failed, 1 skipped\n");
        return 0;
    }
    return -1;
}

/* every parameter's gradient, in parameter order, as binary32 (0 where a
   parameter has no gradient this step) */
static VT_TEST_UNUSED void grad_of(vt_ctx *c, float *g) {
    int j;
    int64_t i = 0;
    for (j = 0; j < vt_param_count(c); j++) {
        vt_tensor *p = vt_param_at(c, j);
        int64_t e;
        for (e = 0; e < vt_numel(p); e++, i++) g[i] = p->grad_fresh ? 0.0f : (float)((double *)p->grad->data)[e];
    }
}
/* a trainer (train_order; NULL: the default) and an auditor (audit_order)
   of task t, both logging to memory, each with the task's model: the pair a
   validator's recomputation is tested with. Returns the parameter count. */
static VT_TEST_UNUSED int64_t trainer_auditor(const vt_btard_task *t, const char *train_order, const char *audit_order,
                                              vt_ctx **c, vt_ctx **a, void **mc, void **ma) {
    vt_desc dt = vt_desc_default(), da = vt_desc_default();
    dt.log_memory = 1;
    if (train_order) vt_order_parse(&dt.order, train_order);
    da.log_memory = 1;
    da.role = VT_ROLE_AUDIT;
    vt_order_parse(&da.order, audit_order);
    *c = vt_create(&dt);
    *a = vt_create(&da);
    *mc = t->init(*c, t->user);
    *ma = t->init(*a, t->user);
    return vt_param_numel(*c);
}
#endif
