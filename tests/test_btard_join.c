/* test_btard_join.c - peers joining mid-run (vtrain_btard.h >>btard:
   JOINING): a newcomer in an open slot asks to join with a key of its own,
   is admitted only when the members agree on its request, fetches the
   state the founders attest, does validated work in probation and
   aggregates only after it.

   Every test compares every honest peer's view: weights (and optimizer
   state) digest, ban list, and the membership (who is a member, who is in
   probation, since which step), the newcomer's own once it is synced. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "../vtrain_btard.h"
#include "test.h"
#include "btard_test.h"

static vt_btard_digits g_d;

static vt_btard_cfg cfg_of(uint64_t seed) {
    vt_btard_cfg c = vt_btard_cfg_default();
    c.validators = 1;
    c.data_seed = 100 + seed;
    c.secret_seed = 200 + seed;
    c.timeout = 0.25;
    c.compute_timeout = 0.5;
    c.probation = 2;
    c.join_wait = 6;
    return c;
}

/* ---- a transport that withholds one phase from some peers (the newcomer's
   request sent to only some members) --------------------------------------- */
typedef struct {
    vt_net net;
    vt_net *in;
    int phase, once;
    unsigned char drop[16]; /* 1: this peer gets none of that phase (once: not the first message of it) */
    unsigned char done[16];
    volatile int sent;      /* messages of that phase handed to it, lost or not */
} cut_net;
static int cut_send(vt_net *t, int to, uint64_t tag, const void *p, size_t n) {
    cut_net *c = (cut_net *)t;
    if ((int)((tag >> 16) & 0xFF) == c->phase) c->sent++;
    if ((int)((tag >> 16) & 0xFF) == c->phase && to >= 0 && to < 16 && c->drop[to] && !(c->once && c->done[to])) { c->done[to] = 1; return 0; }
    return c->in->send(c->in, to, tag, p, n);
}
static int cut_bcast(vt_net *t, uint64_t tag, const void *p, size_t n, const unsigned char *to) {
    int i;
    for (i = 0; i < t->size; i++)
        if (i != t->rank && (!to || to[i])) cut_send(t, i, tag, p, n);
    return 0;
}
static int cut_recv(vt_net *t, int *from, uint64_t *tag, unsigned char **p, size_t *n, double dl, int want) {
    cut_net *c = (cut_net *)t;
    return c->in->recv(c->in, from, tag, p, n, dl, want);
}
static void cut_destroy(vt_net *t) { (void)t; }

/* ---- a link slow for one phase only (ATTEST to newcomers: a delay far below every deadline, as any
   network may have) ------------------------------------------------------------------------------ */
typedef struct { vt_net net; vt_net *in; int phase; double s; } slow_net;
static int slow_send(vt_net *t, int to, uint64_t tag, const void *p, size_t n) {
    slow_net *c = (slow_net *)t;
    if ((int)((tag >> 16) & 0xFF) == c->phase) vt__bt_sleep(c->s);
    return c->in->send(c->in, to, tag, p, n);
}
static int slow_bcast(vt_net *t, uint64_t tag, const void *p, size_t n, const unsigned char *to) {
    slow_net *c = (slow_net *)t;
    return c->in->bcast(c->in, tag, p, n, to);
}
static int slow_recv(vt_net *t, int *from, uint64_t *tag, unsigned char **p, size_t *n, double dl, int want) {
    slow_net *c = (slow_net *)t;
    return c->in->recv(c->in, from, tag, p, n, dl, want);
}

/* ---- a swarm: founders 0 .. nf-1, open slots nf .. n-1 -------------------------------- */

typedef struct {
    vt_btard_peer *p;
    volatile int *gate;          /* a late newcomer: it starts once *gate >= gate_at (founder 0's steps done) */
    int gate_at;
    volatile int steps_done;     /* founder 0: steps done, for the gate */
    int steps, done, founder;
    int max_prob, max_admit;     /* founder 0: the most newcomers in probation at once, admitted in one step */
} job;

static void watch(job *j) {
    vt_btard_peer *p = j->p;
    const vt_btard_event *ev;
    int i, k = 0, ne = vt_btard_events(p, &ev), adm = 0;
    for (i = 0; i < p->N; i++) k += vt_btard_member(p, i, NULL) == VT_BTARD_PROBATION;
    for (i = 0; i < ne; i++) adm += ev[i].kind == VT_EV_JOIN && ev[i].step == vt_btard_step_index(p) - 1;
    if (k > j->max_prob) j->max_prob = k;
    if (adm > j->max_admit) j->max_admit = adm;
}
static void *run_job(void *a) {
    job *j = (job *)a;
    double give_up = vt_net_now() + 30;
    while (j->gate && *j->gate < j->gate_at && vt_net_now() < give_up) vt__bt_sleep(0.001);
    while (vt_btard_step_index(j->p) < j->steps && vt_btard_step(j->p) == VT_OK) {
        j->done++;
        if (j->founder) { watch(j); j->steps_done = j->done; }
    }
    return NULL;
}

/* a flooder in an open slot: join requests with fresh keys, valid ones
   (the session known), for every step ahead, as fast as it can */
typedef struct {
    vt_net *e;
    vt_btard_peer *p; /* a newcomer peer of that slot, for its session */
    volatile int stop;
    int64_t sent;
} flooder;
static void *flood_run(void *a) {
    flooder *f = (flooder *)a;
    uint64_t k = 0;
    while (!f->stop && k < 20000) {
        vt_btard_key key = {{0}, {0}};
        unsigned char seed[32], m[VT__BT_JOIN_LEN], sm[90], to[16];
        int i;
        int64_t s = (int64_t)(k % 8);
        for (i = 0; i < 32; i++) seed[i] = (unsigned char)vt_rng_u64(0xf100d + (uint64_t)f->e->rank, k, (uint64_t)i);
        vt_btard_key_from_seed(&key, seed);
        vt__bt_p32(m, VT__BT_M_JOIN);
        vt__bt_p32(m + 4, (uint32_t)f->e->rank);
        vt__bt_p64(m + 8, (uint64_t)s);
        memcpy(m + 16, key.pk, 32);
        vt__bt_join_sigmsg(f->p, m, sm);
        vt__bt_sign_raw(key.sk, sm, sizeof sm, m + 48);
        for (i = 0; i < f->e->size; i++) to[i] = !vt__bt_zero32(g_roster + 32 * i);
        f->e->bcast(f->e, VT__BT_TAG(0, s, 0, VT__PH_JOIN, 0), m, sizeof m, to);
        k++;
        if (k % 64 == 0) vt__bt_sleep(0.002);
    }
    f->sent = (int64_t)k;
    return NULL;
}

typedef struct {
    int n, nf, steps;
    vt_btard_attack atk[16];
    int joiner[16];              /* 1: a newcomer runs in this slot */
    int64_t join_step[16];
    int flood[16];               /* 1: a flooder sends join requests from this slot */
    int cut_phase;               /* the joiner's endpoint withholds this phase ... */
    unsigned char cut[16];       /* ... from these peers */
    int cut_once;                /* ... only its first message (one lost in transit) */
    int join_max, join_per_step;
    int late[16];                /* a newcomer starts once founder 0 has done this many steps */
    int hold;                    /* the founders start once the cut phase was sent this many times (to anyone) */
    double slow[16];             /* this founder's ATTESTs leave this many seconds late */
    /* results */
    int done[16], synced[16], honest_banned, views_agree, max_prob, max_admit;
    vt_btard_membership mship[16];
    int64_t since[16], ban_at[16], asked[16];
    int ban_why[16];
    unsigned char digest[16][32], view[16][32];
    vt_btard_stats st0;
    int bad_state_from[16];
    char why[300], joiner_err[300];
} scen;

static void scen_init(scen *s, int n, int nf, int steps) {
    int i;
    memset(s, 0, sizeof *s);
    s->n = n; s->nf = nf; s->steps = steps;
    for (i = 0; i < n; i++) s->atk[i] = vt_btard_attack_default(VT_ATTACK_NONE);
}
/* six founders and one newcomer, in slot 6, asking to join at join_step */
static void scen_newcomer(scen *s, int steps, int64_t join_step) {
    scen_init(s, 7, 6, steps);
    s->joiner[6] = 1;
    s->join_step[6] = join_step;
}
static int honest(const scen *s, int i) { return s->atk[i].kind == VT_ATTACK_NONE && !s->flood[i] && (i < s->nf || s->joiner[i]); }

static void run(scen *s, const vt_btard_cfg *c0) {
    vt_net **e = vt_net_inproc_create(s->n, 0);
    vt_btard_task t = vt_btard_digits_task(&g_d);
    vt_btard_peer *p[16];
    unsigned char roster[16 * 32];
    job jb[16];
    pthread_t th[16], fth[16];
    flooder fl[16];
    cut_net cn;
    slow_net sn[16];
    int i, j, ref = -1;
    memcpy(roster, g_roster, sizeof roster);
    for (i = s->nf; i < s->n; i++) memset(roster + 32 * i, 0, 32); /* open slots */
    memset(p, 0, sizeof p);
    for (i = 0; i < s->n; i++) {
        vt_btard_cfg c = *c0;
        vt_net *use = e[i];
        if (s->slow[i] > 0) {
            memset(&sn[i], 0, sizeof sn[i]);
            sn[i].net = *e[i]; sn[i].net.send = slow_send; sn[i].net.bcast = slow_bcast; sn[i].net.recv = slow_recv; sn[i].net.destroy = cut_destroy;
            sn[i].in = e[i]; sn[i].phase = VT__PH_ATTEST; sn[i].s = s->slow[i];
            use = &sn[i].net;
        }
        c.roster = roster;
        c.key = &g_keys[i];
        if (s->join_max) c.join_max = s->join_max;
        if (s->join_per_step) c.join_per_step = s->join_per_step;
        if (i >= s->nf) {
            if (!s->joiner[i] && !s->flood[i]) continue;
            c.join = 1;
            c.join_step = s->join_step[i];
            if (s->joiner[i] && s->cut_phase) {
                memset(&cn, 0, sizeof cn);
                cn.net = *e[i]; cn.net.send = cut_send; cn.net.bcast = cut_bcast; cn.net.recv = cut_recv; cn.net.destroy = cut_destroy;
                cn.in = e[i]; cn.phase = s->cut_phase; cn.once = s->cut_once;
                memcpy(cn.drop, s->cut, 16);
                use = &cn.net;
            }
        }
        p[i] = vt_btard_peer_create(&c, &t, use, s->atk[i].kind != VT_ATTACK_NONE ? &s->atk[i] : NULL);
        CHECK(p[i] != NULL, "peer %d: %s", i, vt_last_error());
        if (!p[i]) return;
        memset(&jb[i], 0, sizeof jb[i]);
        jb[i].p = p[i]; jb[i].steps = s->steps; jb[i].founder = i == 0;
    }
    for (i = 0; i < s->n; i++)
        if (p[i] && s->late[i]) { jb[i].gate = &jb[0].steps_done; jb[i].gate_at = s->late[i]; }
        else if (p[i] && s->hold && i < s->nf) { jb[i].gate = &cn.sent; jb[i].gate_at = s->hold; }
    for (i = 0; i < s->n; i++) {
        if (s->flood[i]) { fl[i].e = e[i]; fl[i].p = p[i]; fl[i].stop = 0; fl[i].sent = 0; pthread_create(&fth[i], NULL, flood_run, &fl[i]); }
        else if (p[i]) pthread_create(&th[i], NULL, run_job, &jb[i]);
    }
    for (i = 0; i < s->n; i++) if (p[i] && !s->flood[i] && honest(s, i)) pthread_join(th[i], NULL);
    vt_net_inproc_close(e[0]);
    for (i = 0; i < s->n; i++) {
        if (s->flood[i]) { fl[i].stop = 1; pthread_join(fth[i], NULL); }
        else if (p[i] && !honest(s, i)) pthread_join(th[i], NULL);
    }
    s->views_agree = 1;
    s->max_prob = jb[0].max_prob;
    s->max_admit = jb[0].max_admit;
    vt_btard_stats_get(p[0], &s->st0);
    for (i = 0; i < s->n; i++) {
        const vt_btard_event *ev;
        int k, ne;
        if (!p[i]) continue;
        s->done[i] = jb[i].done;
        s->synced[i] = !p[i]->joining;
        s->asked[i] = p[i]->cfg.join_step;
        vt_btard_digest(p[i], s->digest[i]);
        vt_btard_view_digest(p[i], s->view[i]);
        ne = vt_btard_events(p[i], &ev);
        for (k = 0; k < ne; k++) if (ev[k].kind == VT_EV_BAD_STATE && ev[k].peer >= 0 && ev[k].peer < 16) s->bad_state_from[ev[k].peer]++;
        if (s->joiner[i] && !s->synced[i]) snprintf(s->joiner_err, sizeof s->joiner_err, "%.290s", vt_btard_error(p[i]));
        /* the views compared: founders, and honest newcomers that synced */
        if (!honest(s, i) || (i >= s->nf && !s->synced[i])) continue;
        if (ref < 0) {
            ref = i;
            for (j = 0; j < s->n; j++) {
                s->mship[j] = vt_btard_member(p[i], j, &s->since[j]);
                s->ban_at[j] = p[i]->ban_at[j];
                s->ban_why[j] = p[i]->ban_why[j];
            }
        }
        if (vt_btard_step_index(p[i]) != s->steps) {
            s->views_agree = 0;
            if (!s->why[0]) snprintf(s->why, sizeof s->why, "honest peer %d stopped at step %lld: %.200s", i, (long long)vt_btard_step_index(p[i]), vt_btard_error(p[i]));
        }
        if (memcmp(s->digest[i], s->digest[ref], 32) || memcmp(s->view[i], s->view[ref], 32)) {
            s->views_agree = 0;
            if (!s->why[0]) snprintf(s->why, sizeof s->why, "honest peers %d and %d hold different %s", ref, i, memcmp(s->digest[i], s->digest[ref], 32) ? "weights" : "views");
        }
        for (j = 0; j < s->n; j++) {
            int64_t since;
            if (honest(s, j) && (j < s->nf || s->synced[j]) && !vt_btard_alive(p[i], j)) {
                s->honest_banned++;
                if (!s->why[0]) snprintf(s->why, sizeof s->why, "honest peer %d banned honest peer %d", i, j);
            }
            if (vt_btard_alive(p[i], j) != vt_btard_alive(p[ref], j) || vt_btard_member(p[i], j, &since) != s->mship[j] || since != s->since[j]) {
                s->views_agree = 0;
                if (!s->why[0]) snprintf(s->why, sizeof s->why, "honest peers %d and %d disagree on peer %d", ref, i, j);
            }
        }
    }
    for (i = 0; i < s->n; i++) vt_btard_peer_destroy(p[i]);
    for (i = 0; i < s->n; i++) e[i]->destroy(e[i]);
}

/* ---- an honest newcomer ----------------------------------------------------------- */

TEST(honest_newcomer_joins_mid_run) {
    scen s;
    vt_btard_cfg cfg = cfg_of(1);
    int i;
    scen_newcomer(&s, 8, 2);
    run(&s, &cfg);
    CHECK(s.synced[6] && s.done[6] > 0, "the newcomer never synced: %s", s.joiner_err);
    CHECK(!s.honest_banned && s.views_agree, "%d honest bans, views agree %d: %s", s.honest_banned, s.views_agree, s.why);
    CHECK(s.mship[6] == VT_BTARD_MEMBER && s.since[6] == 3, "the newcomer: membership %d since %lld (want a member since step 3)", (int)s.mship[6],
          (long long)s.since[6]);
    for (i = 0; i < 6; i++) CHECK(s.mship[i] == VT_BTARD_MEMBER && s.since[i] == 0, "founder %d: membership %d since %lld", i, (int)s.mship[i], (long long)s.since[i]);
    CHECK(s.st0.probes == 2, "founder 0 replayed %lld probation gradients (2 probation steps: want 2)", (long long)s.st0.probes);
}

/* ---- a lying newcomer: banned in probation, and the aggregate is what it
   would have been without it (the same weights as a run where its slot
   stays empty) -------------------------------------------------------------- */

TEST(lying_newcomer_banned_never_aggregated) {
    static const vt_btard_attack_kind kinds[] = {VT_ATTACK_SIGN_FLIP, VT_ATTACK_FORGED_LOG, VT_ATTACK_SILENT};
    static const vt_btard_reason want[] = {VT_BAN_GRADIENT, VT_BAN_GRADIENT, VT_BAN_SILENT}; /* a forged log: the replay differs */
    scen base, s;
    vt_btard_cfg cfg = cfg_of(2);
    int k;
    scen_init(&base, 7, 6, 6);
    run(&base, &cfg);
    CHECK(base.views_agree && !base.honest_banned, "the run without a newcomer: %s", base.why);
    for (k = 0; k < 3; k++) {
        scen_newcomer(&s, 6, 1);
        s.atk[6] = vt_btard_attack_default(kinds[k]);
        run(&s, &cfg);
        CHECK(!s.honest_banned && s.views_agree, "%s newcomer: %d honest bans, views agree %d: %s", vt_btard_attack_name(kinds[k]), s.honest_banned,
              s.views_agree, s.why);
        CHECK(s.mship[6] == VT_BTARD_BANNED && s.ban_at[6] == 2 && s.ban_why[6] == (int)want[k],
              "%s newcomer: membership %d, banned at %lld for %s (want banned at step 2, its first probation step, for %s)",
              vt_btard_attack_name(kinds[k]), (int)s.mship[6], (long long)s.ban_at[6],
              s.ban_why[6] >= 0 ? vt_btard_reason_name((vt_btard_reason)s.ban_why[6]) : "nothing", vt_btard_reason_name(want[k]));
        CHECK(!memcmp(s.digest[0], base.digest[0], 32), "%s newcomer: the honest weights differ from the run without it: its work touched the aggregate",
              vt_btard_attack_name(kinds[k]));
    }
}

/* ---- the request sent to only some members: admitted by all or by none, at
   the same step ---------------------------------------------------------------- */

TEST(request_to_some_members_all_or_none) {
    scen s;
    vt_btard_cfg cfg = cfg_of(3);
    int i;
    /* to one founder of 6 (f = 2: f + 1 = 3 carriers are needed): none admits it */
    scen_newcomer(&s, 6, 1);
    s.cut_phase = VT__PH_JOIN;
    for (i = 1; i < 6; i++) s.cut[i] = 1;
    cfg.join_wait = 3;
    run(&s, &cfg);
    CHECK(!s.honest_banned && s.views_agree, "request to 1 founder: %d honest bans, views agree %d: %s", s.honest_banned, s.views_agree, s.why);
    CHECK(s.mship[6] == VT_BTARD_OPEN && !s.synced[6], "request to 1 founder: the slot is %d in the founders' view (want open)", (int)s.mship[6]);
    CHECK(strstr(s.joiner_err, "not admitted") != NULL && strstr(s.joiner_err, "another key") != NULL,
          "request to 1 founder: the newcomer says (want: not admitted, and every reason it may be, another key in its slot too): %s", s.joiner_err);
    /* to 3 of 6: every founder admits it at the same step */
    scen_newcomer(&s, 6, 1);
    s.cut_phase = VT__PH_JOIN;
    s.cut[0] = s.cut[2] = s.cut[4] = 1;
    cfg.join_wait = 6;
    run(&s, &cfg);
    CHECK(!s.honest_banned && s.views_agree, "request to 3 founders: %d honest bans, views agree %d: %s", s.honest_banned, s.views_agree, s.why);
    CHECK(s.synced[6] && s.mship[6] == VT_BTARD_MEMBER && s.since[6] == 2, "request to 3 founders: membership %d since %lld (want a member since 2): %s",
          (int)s.mship[6], (long long)s.since[6], s.joiner_err);
}

/* ---- the request lost in transit to every member: the newcomer sends it
   again (the same bytes) until it is admitted --------------------------------- */

TEST(lost_request_sent_again) {
    scen s;
    vt_btard_cfg cfg = cfg_of(7);
    int i;
    /* join_step 60: the copies go again every timeout / 4 (62 ms); the founders (1 to 5 ms per step
       in-process) start once the second copy went out, or they could be past step 60 before it does
       (they were, in about 1 run of 5 on a 2-core EPYC) */
    scen_newcomer(&s, 64, 60);
    s.cut_phase = VT__PH_JOIN;
    s.cut_once = 1;
    s.hold = 2 * 6;
    for (i = 0; i < 6; i++) s.cut[i] = 1;
    run(&s, &cfg);
    CHECK(!s.honest_banned && s.views_agree, "first request lost: %d honest bans, views agree %d: %s", s.honest_banned, s.views_agree, s.why);
    CHECK(s.synced[6] && s.mship[6] == VT_BTARD_MEMBER && s.since[6] == 61, "first request lost: membership %d since %lld (want a member since 61): %s",
          (int)s.mship[6], (long long)s.since[6], s.joiner_err);
}

/* ---- a member that serves the newcomer a wrong state: detected, and the state
   fetched from another member ---------------------------------------------------- */

TEST(wrong_state_detected_fetched_elsewhere) {
    scen s;
    vt_btard_cfg cfg = cfg_of(4);
    scen_newcomer(&s, 7, 2);
    /* the member that sends the state of step 3 to slot 6: position (6 + 3) mod 6 */
    s.atk[3] = vt_btard_attack_default(VT_ATTACK_WRONG_STATE);
    run(&s, &cfg);
    CHECK(s.synced[6], "the newcomer never synced: %s", s.joiner_err);
    CHECK(s.bad_state_from[3] > 0, "the newcomer did not detect peer 3's wrong state");
    CHECK(!s.honest_banned && s.views_agree, "%d honest bans, views agree %d: %s", s.honest_banned, s.views_agree, s.why);
    CHECK(s.mship[6] == VT_BTARD_MEMBER && s.since[6] == 3, "the newcomer: membership %d since %lld", (int)s.mship[6], (long long)s.since[6]);
}

/* ---- f0 founders that attest first and serve a wrong state (review F1): founders 0-7 (f0 = 3),
   slot 8; 2, 3, 4 serve a wrong state, the honest founders' ATTESTs come 10-40 ms after theirs. Asked one
   by one, a timeout each, the newcomer reached an honest member after the members' PROBE deadline
   (compute_timeout + 2 T): they had moved on, refused the old step's SREQ, and banned it SILENT. ------ */

TEST(fast_lying_attesters_do_not_starve_it) {
    scen s;
    vt_btard_cfg cfg = cfg_of(4);
    scen_init(&s, 9, 8, 7);
    s.joiner[8] = 1;
    s.join_step[8] = 2;
    s.atk[2] = s.atk[3] = s.atk[4] = vt_btard_attack_default(VT_ATTACK_WRONG_STATE);
    s.slow[0] = 0.01;
    s.slow[1] = s.slow[5] = s.slow[6] = s.slow[7] = 0.04;
    run(&s, &cfg);
    CHECK(s.synced[8], "the newcomer never synced: %s", s.joiner_err);
    CHECK(s.mship[8] == VT_BTARD_MEMBER && s.since[8] == 3, "the newcomer: membership %d since %lld, banned at %lld for %s (want a member since 3)",
          (int)s.mship[8], (long long)s.since[8], (long long)s.ban_at[8], s.ban_why[8] >= 0 ? vt_btard_reason_name((vt_btard_reason)s.ban_why[8]) : "nothing");
    CHECK(!s.honest_banned && s.views_agree, "%d honest bans, views agree %d: %s", s.honest_banned, s.views_agree, s.why);
}

/* ---- a flood of join requests with fresh keys from 5 open slots: at most
   join_per_step newcomers admitted per step and join_max in probation at
   once (each bound tested where the other does not hide it); each admitted
   identity that does no work is banned as silent, its slot closed ------------- */

static void flood_case(int per_step, int max, uint64_t seed) {
    scen s;
    vt_btard_cfg cfg = cfg_of(seed);
    int i;
    scen_init(&s, 12, 6, 5);
    for (i = 7; i < 12; i++) s.flood[i] = 1;
    s.joiner[6] = 1;
    s.join_step[6] = 0;
    s.join_max = max;
    s.join_per_step = per_step;
    run(&s, &cfg);
    CHECK(!s.honest_banned && s.views_agree, "join flood: %d honest bans, views agree %d: %s", s.honest_banned, s.views_agree, s.why);
    CHECK(s.max_admit <= per_step && s.max_prob <= max, "join flood (bounds %d per step, %d at once): %d admitted in one step, %d in probation at once",
          per_step, max, s.max_admit, s.max_prob);
    CHECK(s.max_admit == (per_step < max ? per_step : max), "join flood: at most %d admitted in one step (the bound is %d): the flood did not press on it",
          s.max_admit, per_step < max ? per_step : max);
    CHECK(s.st0.probes <= (int64_t)max * 5, "join flood: founder 0 replayed %lld probation gradients in 5 steps (bound %d)", (long long)s.st0.probes, max * 5);
    for (i = 7; i < 12; i++) /* open, banned as silent, or admitted at the end of the last step (banned at the next) */
        CHECK(s.mship[i] == VT_BTARD_OPEN || (s.mship[i] == VT_BTARD_BANNED && s.ban_why[i] == VT_BAN_SILENT) ||
                  (s.mship[i] == VT_BTARD_PROBATION && s.since[i] == s.steps),
              "flooding slot %d: membership %d since %lld (want open, or banned silent)", i, (int)s.mship[i], (long long)s.since[i]);
    NOTE("join flood, 5 slots, bounds %d per step and %d at once: at most %d admitted per step, %d in probation; newcomer 6: membership %d; "
         "founder 0: %lld probation replays, %lld states sent, %lld messages dropped",
         per_step, max, s.max_admit, s.max_prob, (int)s.mship[6], (long long)s.st0.probes, (long long)s.st0.states_sent, (long long)s.st0.flood);
}
TEST(join_flood_within_bounds) {
    flood_case(1, 4, 5);
    flood_case(4, 2, 6);
}

/* ---- step discovery (VT_BTARD_JOIN_AUTO): a newcomer that starts late and
   is not told the step learns it from the founders' signed statements ---------- */

/* the rule itself, on statements: f0 + 1 founders within D of each other, the
   smallest such window's top; liars within it or outside it */
TEST(step_pick_bounded_by_honest_statements) {
    vt_btard_peer q;
    int64_t st[8];
    int i;
    memset(&q, 0, sizeof q);
    q.N = 8; q.f0 = 3; /* 8 founders, 3 may lie */
    for (i = 0; i < 8; i++) st[i] = -1;
    st[0] = 10; st[1] = 10; st[2] = 11; st[3] = 10; st[4] = 11; /* the honest five */
    st[5] = 1010; st[6] = 0; st[7] = 14;                        /* far ahead, far behind, just within D of the honest */
    CHECK(vt__bt_step_pick(&q, st) >= 10 && vt__bt_step_pick(&q, st) <= 11, "5 honest at 10-11, liars 1010, 0, 14: picked %lld (want 10 or 11)",
          (long long)vt__bt_step_pick(&q, st));
    st[5] = st[6] = st[7] = 10 + VT__BT_SPREAD; /* all three liars at the edge of the window */
    CHECK(vt__bt_step_pick(&q, st) <= 11, "liars at 10 + D: picked %lld (want <= 11: an all-honest window exists)", (long long)vt__bt_step_pick(&q, st));
    st[1] = st[2] = st[3] = st[4] = -1; /* one honest answer left: with the liars, a window of 4 */
    CHECK(vt__bt_step_pick(&q, st) >= 10 && vt__bt_step_pick(&q, st) <= 10 + VT__BT_SPREAD,
          "one honest at 10, liars at 10 + D: picked %lld (want within [10, 10 + D])", (long long)vt__bt_step_pick(&q, st));
    st[5] = 1010; st[6] = 0; st[7] = 500; /* liars apart from it: nobody vouched */
    CHECK(vt__bt_step_pick(&q, st) == -1, "one honest, liars apart: picked %lld (want none: f0 + 1 = 4 alike are needed)", (long long)vt__bt_step_pick(&q, st));
    st[0] = st[5] = st[6] = st[7] = 3; /* the three liars cannot vouch alone, even alike: with one honest they do */
    CHECK(vt__bt_step_pick(&q, st) == 3, "liars alike with one honest: picked %lld (want 3)", (long long)vt__bt_step_pick(&q, st));
    st[0] = -1;
    CHECK(vt__bt_step_pick(&q, st) == -1, "3 liars alike alone: picked %lld (want none)", (long long)vt__bt_step_pick(&q, st));
}

static void auto_case(const char *what, int liars, const double *scale, uint64_t seed) {
    scen s;
    vt_btard_cfg cfg = cfg_of(seed);
    int i;
    scen_newcomer(&s, 40, VT_BTARD_JOIN_AUTO);
    s.late[6] = 8;
    for (i = 0; i < liars; i++) { /* the last founders lie about their step (2 of 6 may: f0 = 2) */
        s.atk[5 - i] = vt_btard_attack_default(VT_ATTACK_LYING_STEP);
        s.atk[5 - i].scale = scale[i];
    }
    run(&s, &cfg);
    CHECK(s.synced[6] && s.done[6] > 0, "%s: the newcomer never synced: %s", what, s.joiner_err);
    CHECK(!s.honest_banned && s.views_agree, "%s: %d honest bans, views agree %d: %s", what, s.honest_banned, s.views_agree, s.why);
    CHECK(s.mship[6] == VT_BTARD_MEMBER && s.since[6] == s.asked[6] + 1, "%s: the newcomer is %d since %lld (want a member since step %lld, after the one it asked for)",
          what, (int)s.mship[6], (long long)s.since[6], (long long)s.asked[6] + 1);
    /* founder 0 was at step 8; another honest founder may still have been finishing step 7 (seen under
       ASan, which slows each peer unevenly), and its statement may be the one that completes f0 + 1:
       7 + LEAD is still a step the honest founders were near, and far from every liar's */
    CHECK(s.asked[6] >= 7 + VT__BT_LEAD && s.asked[6] < 40, "%s: it asked for step %lld (started after founder 0's step 8: want a step the honest founders were near)",
          what, (long long)s.asked[6]);
    NOTE("%s: the newcomer started after founder 0's step 8, asked to join at step %lld, a member since %lld", what, (long long)s.asked[6],
         (long long)s.since[6]);
}
TEST(late_newcomer_learns_the_step) {
    auto_case("honest founders", 0, NULL, 11);
}
TEST(lying_founders_do_not_mislead_it) {
    static const double far[2] = {1000, -1000}, near[2] = {VT__BT_SPREAD, VT__BT_SPREAD};
    auto_case("founders 5, 4 lie 1000 ahead and behind", 2, far, 12);
    auto_case("founders 5, 4 lie D ahead", 2, near, 13);
}

/* ---- the attested state parsed with every field bounded (review F2): a blob that f0 + 1 founders attest
   but that no honest member would build (more than f0 liars: beyond the threat model) is refused as
   malformed, never written out of bounds. A founder's real blob (step 0, its previous step filled in)
   loads into a newcomer; each change below must not. Another key in the newcomer's own slot is no
   malformed state but the members' admission of another request for that slot: the newcomer says so
   (0.2.6 called it malformed). ------------------------------------------------------------------------ */

static void blob_put32(vt__bt_buf *b, size_t at, uint32_t v) { vt__bt_p32(b->p + at, v); }
static void blob_put64(vt__bt_buf *b, size_t at, uint64_t v) { vt__bt_p64(b->p + at, v); }

TEST(attested_state_fields_bounded) {
    vt_net **e = vt_net_inproc_create(4, 0);
    vt_btard_task t = vt_btard_digits_task(&g_d);
    vt_btard_cfg c = cfg_of(9);
    vt_btard_peer *m, *nw;
    unsigned char roster[4 * 32];
    vt__bt_buf b = {0, 0, 0};
    size_t pv;
    int k;
    memcpy(roster, g_roster, sizeof roster);
    memset(roster + 96, 0, 32); /* slot 3 open */
    c.roster = roster;
    c.key = &g_keys[0];
    m = vt_btard_peer_create(&c, &t, e[0], NULL);
    c.key = &g_keys[3]; c.join = 1; c.join_step = 2;
    nw = vt_btard_peer_create(&c, &t, e[3], NULL);
    CHECK(m && nw, "create: %s", vt_last_error());
    if (!m || !nw) return;
    memcpy(m->roster + 96, g_keys[3].pk, 32); /* admitted: its key in the slot */
    m->pv_ok = 1; m->pv_n = 3; m->pv_L = (m->d + 2) / 3; m->pv_step = 0;
    m->pv_mem[0] = 0; m->pv_mem[1] = 1; m->pv_mem[2] = 2;
    CHECK(vt__bt_blob_build(m), "the founder's blob does not build");
    pv = 24 + 61 * 4; /* [u32 pv_ok][u32 pv_n][u64 pv_L][u64 pv_step] */
    for (k = 0; k < 7; k++) {
        const char *what[] = {"the founder's own blob", "a ban reason past the last", "joined -2", "prob_end -5",
                              "another key in the newcomer's own slot", "pv_ok 2", "pv_ok 0 with parts (pn pl beyond pv_agg once large)"};
        int ok, want = k == 0;
        b.n = 0;
        vt__bt_add(&b, m->blob.p, m->blob.n);
        if (k == 1) blob_put32(&b, 24 + 25, (uint32_t)VT_BAN_COUNT);
        if (k == 2) blob_put64(&b, 24 + 61 + 1, (uint64_t)(int64_t)-2);
        if (k == 3) blob_put64(&b, 24 + 61 * 2 + 9, (uint64_t)(int64_t)-5);
        if (k == 4) b.p[24 + 61 * 3 + 29] ^= 1;
        if (k == 5) blob_put32(&b, pv, 2);
        if (k == 6) blob_put32(&b, pv, 0);
        nw->status = VT_OK; /* vt__bt_fail keeps the first error: each case's own message */
        nw->msg[0] = 0;
        ok = vt__bt_blob_load(nw, b.p, b.n, 0, 0);
        CHECK(ok == want, "%s: blob_load says %d (want %d): %s", what[k], ok, want, vt_btard_error(nw));
        if (!want && k != 4) CHECK(strstr(vt_btard_error(nw), "malformed") != NULL, "%s: refused, but not as malformed: %s", what[k], vt_btard_error(nw));
        if (k == 4) /* not malformed: the members admitted another key to this slot, and the newcomer says so */
            CHECK(strstr(vt_btard_error(nw), "gives slot 3 to another key") != NULL && strstr(vt_btard_error(nw), "malformed") == NULL,
                  "%s: the newcomer does not say that another key holds its slot: %s", what[k], vt_btard_error(nw));
    }
    VT_FREE(b.p, NULL);
    vt_btard_peer_destroy(m);
    vt_btard_peer_destroy(nw);
    for (k = 0; k < 4; k++) e[k]->destroy(e[k]);
}

/* ---- a founder flooding the newcomer with well-framed ATTESTs (review F5): at most VT__BT_TRIES
   signatures checked per founder and sync, as for JOIN, PROBE and statements (two founders sent 200
   each, badly signed, and the newcomer checked all 400) ---------------------------------------------- */

/* a newcomer for open slot 3 (key 3, joining at step 2) on in-process net e, for the tests that feed
   it ATTESTs by hand; NULL (and a failed check) when it cannot be made */
static vt_btard_peer *attest_newcomer(vt_net **e, vt_btard_task *t, uint64_t seed, unsigned char roster[4 * 32]) {
    vt_btard_cfg c = cfg_of(seed);
    vt_btard_peer *nw;
    memcpy(roster, g_roster, 4 * 32);
    memset(roster + 96, 0, 32); /* slot 3 open */
    c.roster = roster;
    c.key = &g_keys[3]; c.join = 1; c.join_step = 2; c.join_wait = 0.3;
    nw = vt_btard_peer_create(&c, t, e[3], NULL);
    CHECK(nw != NULL, "create: %s", vt_last_error());
    return nw;
}

TEST(attest_flood_checks_bounded) {
    vt_net **e = vt_net_inproc_create(4, 0);
    vt_btard_task t = vt_btard_digits_task(&g_d);
    vt_btard_peer *nw;
    unsigned char roster[4 * 32];
    int i, f;
    nw = attest_newcomer(e, &t, 10, roster);
    if (!nw) return;
    for (f = 0; f < 2; f++)
        for (i = 0; i < 200; i++) {
            unsigned char a[VT__BT_ATTEST_LEN];
            memset(a, 0, sizeof a);
            vt__bt_p32(a, VT__BT_M_ATTEST);
            vt__bt_p32(a + 4, (uint32_t)f);
            vt__bt_p32(a + 8, 3);
            vt__bt_p64(a + 12, 3); /* the state of join_step + 1 */
            vt__bt_p32(a + 20, (uint32_t)i); /* a digest of its own each, the signature zeros */
            e[f]->send(e[f], 3, VT__BT_TAG(nw->cfg.session, 3, 0, VT__PH_ATTEST, 0), a, sizeof a);
        }
    CHECK(vt__bt_sync(nw, 1) < 0, "synced on badly signed attestations");
    CHECK(nw->st.verifies <= 2 * VT__BT_TRIES, "400 badly signed ATTESTs from 2 founders: %lld signatures checked (want at most %d)",
          (long long)nw->st.verifies, 2 * VT__BT_TRIES);
    vt_btard_peer_destroy(nw);
    for (i = 0; i < 4; i++) e[i]->destroy(e[i]);
}

/* ---- what a flood from an open slot costs a member, per slot and step (README: join requests
   with fresh keys, at most 4 signature checks; step queries, at most 8 sends of an 80-byte
   statement, signed once per step). One member (slot 3 open) is fed, in each of 3 steps, 50 join
   requests with fresh keys and broken signatures, then 50 validly signed ones, then 50 step
   queries, straight into its mailbox; its signature checks (stats.verifies), its signatures
   (stats.signs) and what reaches slot 3 are counted. ---------------------------------------------- */
TEST(open_slot_flood_costs_per_step) {
    vt_net **e = vt_net_inproc_create(4, 0);
    vt_btard_task t = vt_btard_digits_task(&g_d);
    vt_btard_cfg c = cfg_of(12);
    vt_btard_peer *m;
    unsigned char roster[4 * 32];
    int64_t s;
    int i, k;
    memcpy(roster, g_roster, sizeof roster);
    memset(roster + 96, 0, 32); /* slot 3 open */
    c.roster = roster;
    c.key = &g_keys[0];
    m = vt_btard_peer_create(&c, &t, e[0], NULL);
    CHECK(m != NULL, "create: %s", vt_last_error());
    if (!m) return;
    for (s = 0; s < 3; s++) {
        int64_t v0, g0, stmts = 0, other = 0;
        m->step = s;
        vt__bt_serve(m); /* a member's step start: the per-slot counts start again */
        v0 = m->st.verifies;
        for (k = 0; k < 100; k++) { /* join requests for the next step, each with a fresh key; the first 50 badly signed */
            vt_btard_key key;
            unsigned char seed[32], sm[90], *q = (unsigned char *)malloc(VT__BT_JOIN_LEN);
            for (i = 0; i < 32; i++) seed[i] = (unsigned char)vt_rng_u64(0xf100d, (uint64_t)(100 * s + k), (uint64_t)i);
            memset(&key, 0, sizeof key); /* (without libsodium the call fails and writes nothing; gcc -O2 warns) */
            vt_btard_key_from_seed(&key, seed);
            vt__bt_p32(q, VT__BT_M_JOIN);
            vt__bt_p32(q + 4, 3);
            vt__bt_p64(q + 8, (uint64_t)(s + 1));
            memcpy(q + 16, key.pk, 32);
            vt__bt_join_sigmsg(m, q, sm);
            vt__bt_sign_raw(key.sk, sm, sizeof sm, q + 48);
            if (k < 50) q[48] ^= 1;
            vt__bt_mb_put(m, 3, VT__BT_TAG(m->cfg.session, s + 1, 0, VT__PH_JOIN, 0), q, VT__BT_JOIN_LEN);
        }
        CHECK(m->st.verifies - v0 == 4, "step %lld: 100 join requests with fresh keys from one open slot cost %lld signature checks (want 4: "
              "at most 4, and the flood presses on it)", (long long)s, (long long)(m->st.verifies - v0));
        g0 = m->st.signs;
        for (k = 0; k < 50; k++) vt__bt_mb_put(m, 3, VT__BT_TAG(m->cfg.session, 0, 0, VT__PH_STEPQ, 0), NULL, 0);
        CHECK(m->st.signs - g0 == 1, "step %lld: 50 step queries: %lld statements signed (want 1)", (long long)s, (long long)(m->st.signs - g0));
        for (;;) {
            int from;
            uint64_t tag;
            unsigned char *b;
            size_t n;
            if (e[3]->recv(e[3], &from, &tag, &b, &n, vt_net_now(), 1) != 1) break;
            if (from == 0 && (int)((tag >> 16) & 0xFF) == VT__PH_STEPA && n == 80) stmts++;
            else other++;
            vt_net_free(b);
        }
        CHECK(stmts == 8 && other == 0, "step %lld: 50 step queries from one open slot: %lld 80-byte statements sent to it and %lld other messages "
              "(want 8: at most 8, and the flood presses on it)", (long long)s, (long long)stmts, (long long)other);
    }
    vt_btard_peer_destroy(m);
    for (i = 0; i < 4; i++) e[i]->destroy(e[i]);
}

/* ---- a founder's valid ATTEST, then copies of what it says with other signature bytes: the copies
   say nothing new and are not checked (0.2.7: what the newcomer compares is the statement, its
   digest and step, kept anyway; 0.2.6 kept a copy of the whole last ATTEST, compared the signature
   bytes too, and checked each such copy until VT__BT_TRIES) ---------------------------------------- */

TEST(attest_copies_not_checked) {
    vt_net **e = vt_net_inproc_create(4, 0);
    vt_btard_task t = vt_btard_digits_task(&g_d);
    vt_btard_peer *nw;
    unsigned char roster[4 * 32], a[VT__BT_ATTEST_LEN], sm[95];
    int i;
    nw = attest_newcomer(e, &t, 11, roster);
    if (!nw) return;
    memset(a, 0, sizeof a);
    vt__bt_p32(a, VT__BT_M_ATTEST);
    vt__bt_p32(a + 4, 0);
    vt__bt_p32(a + 8, 3);
    vt__bt_p64(a + 12, 3); /* the state of join_step + 1 */
    memset(a + 20, 0x33, 32);
    vt__bt_attest_sigmsg(nw, a, sm);
    vt__bt_sign_raw(g_keys[0].sk, sm, sizeof sm, a + 52); /* founder 0's, valid */
    e[0]->send(e[0], 3, VT__BT_TAG(nw->cfg.session, 3, 0, VT__PH_ATTEST, 0), a, sizeof a);
    for (i = 0; i < 20; i++) { /* the same statement, other signature bytes */
        a[52 + i % 64] ^= (unsigned char)(1 + i);
        e[0]->send(e[0], 3, VT__BT_TAG(nw->cfg.session, 3, 0, VT__PH_ATTEST, 0), a, sizeof a);
    }
    CHECK(vt__bt_sync(nw, 1) < 0, "synced on one founder's attestation (want f0 + 1 = 2)");
    CHECK(nw->st.verifies == 1, "a valid ATTEST and 20 copies of its statement with other signature bytes: %lld signatures checked (want 1)",
          (long long)nw->st.verifies);
    vt_btard_peer_destroy(nw);
    for (i = 0; i < 4; i++) e[i]->destroy(e[i]);
}

int main(int argc, char **argv) {
    int rc;
    TEST_FILTER(argc, argv);
    if ((rc = btard_test_start(&g_d, "btard_join", "joining mid-run")) >= 0) return rc;
    make_keys(16, 0x701);
    RUN(honest_newcomer_joins_mid_run);
    RUN(lying_newcomer_banned_never_aggregated);
    RUN(request_to_some_members_all_or_none);
    RUN(lost_request_sent_again);
    RUN(wrong_state_detected_fetched_elsewhere);
    RUN(fast_lying_attesters_do_not_starve_it);
    RUN(join_flood_within_bounds);
    RUN(step_pick_bounded_by_honest_statements);
    RUN(late_newcomer_learns_the_step);
    RUN(lying_founders_do_not_mislead_it);
    RUN(attested_state_fields_bounded);
    RUN(attest_flood_checks_bounded);
    RUN(open_slot_flood_costs_per_step);
    RUN(attest_copies_not_checked);
    vt_btard_digits_free(&g_d);
    return TEST_SUMMARY();
}
