/* test_btard_mpi.c - BTARD peers as real processes: one MPI rank per peer.

   mpicc -DVTRAIN_MPI -std=c99 -O2 -ffp-contract=off tests/test_btard_mpi.c -o build/test_btard_mpi -lm -lpthread
   mpirun -np 4 build/test_btard_mpi          (tests/mpi_run.sh does both)

   Every scenario is one short swarm over the MPI transport, in its own tag
   session, between MPI barriers. Rank 0 gathers each rank's weights digest,
   ban list and status with MPI_Gather and prints one line per test, then
   "N passed, M failed"; the other ranks print nothing to stdout. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "../vtrain_btard.h"
#include "test.h"

#include <mpi.h>

static vt_btard_digits g_data;
static vt_net *g_net;
static int g_rank, g_size;

/* what one rank reports after a scenario */
typedef struct {
    unsigned char digest[32];
    unsigned char alive[64];
    int status, steps, honest;
    int reasons[64];
    int64_t validations, accusations, audits;
} rank_report;

static rank_report g_rep[64];

/* every rank's identity from a public seed (tests only: anyone could sign
   as anyone); the roster is every rank's public key */
static vt_btard_key g_key;
static unsigned char g_roster[64 * 32];
static void make_keys(void) {
    int i, k;
    for (i = 0; i < g_size; i++) {
        unsigned char s[32];
        vt_btard_key kp;
        for (k = 0; k < 32; k++) s[k] = (unsigned char)vt_rng_u64(0x3b1, (uint64_t)i, (uint64_t)k);
        vt_btard_key_from_seed(&kp, s);
        memcpy(g_roster + 32 * i, kp.pk, 32);
        if (i == g_rank) g_key = kp;
    }
}

/* Run one scenario: attacks[r] for rank r (NONE for honest), nsteps steps.
   Fills g_rep (on rank 0) with every rank's report. */
static void scenario(int session, const vt_btard_attack_kind *kinds, int start, int nsteps, int validators) {
    vt_btard_cfg cfg = vt_btard_cfg_default();
    vt_btard_task task = vt_btard_digits_task(&g_data);
    vt_btard_attack atk = vt_btard_attack_default(kinds[g_rank]);
    vt_btard_peer *p;
    rank_report me;
    const vt_btard_event *ev;
    int s, i, nev;
    atk.start = start;
    cfg.session = session;
    cfg.validators = validators;
    cfg.tau = 1.0;
    cfg.data_seed = 11 + (uint64_t)session;
    cfg.secret_seed = 5 + (uint64_t)session;
    cfg.timeout = 2;
    cfg.compute_timeout = 4;
    cfg.roster = g_roster;
    cfg.key = &g_key;
    memset(&me, 0, sizeof me);
    MPI_Barrier(MPI_COMM_WORLD);
    p = vt_btard_peer_create(&cfg, &task, g_net, &atk);
    if (!p) {
        me.status = (int)vt_last_status();
        fprintf(stderr, "rank %d: %s\n", g_rank, vt_last_error());
    } else {
        for (s = 0; s < nsteps; s++)
            if (vt_btard_step(p) != VT_OK) break;
        me.steps = s;
        me.status = kinds[g_rank] == VT_ATTACK_NONE ? (int)vt_status_of(vt_btard_ctx(p)) : 0;
        if (kinds[g_rank] == VT_ATTACK_NONE && s < nsteps) {
            me.status = -1;
            fprintf(stderr, "rank %d stopped at step %d: %s\n", g_rank, s, vt_btard_error(p));
        }
        vt_btard_digest(p, me.digest);
        for (i = 0; i < g_size && i < 64; i++) { me.alive[i] = (unsigned char)vt_btard_alive(p, i); me.reasons[i] = -1; }
        nev = vt_btard_events(p, &ev);
        for (i = 0; i < nev; i++)
            if (ev[i].kind == VT_EV_BAN && ev[i].peer < 64 && me.reasons[ev[i].peer] < 0) me.reasons[ev[i].peer] = (int)ev[i].reason;
        {
            vt_btard_stats st;
            vt_btard_stats_get(p, &st);
            me.validations = st.validations;
            me.accusations = st.accusations;
            me.audits = st.audits;
        }
        vt_btard_peer_destroy(p);
    }
    me.honest = kinds[g_rank] == VT_ATTACK_NONE;
    MPI_Gather(&me, (int)sizeof me, MPI_BYTE, g_rep, (int)sizeof me, MPI_BYTE, 0, MPI_COMM_WORLD);
}

/* on rank 0: honest ranks agree on weights and bans; return the number of
   honest ranks banned in any honest view */
static int check_honest(const vt_btard_attack_kind *kinds) {
    int i, j, ref = -1, honest_banned = 0;
    for (i = 0; i < g_size; i++) if (kinds[i] == VT_ATTACK_NONE) { ref = i; break; }
    for (i = 0; i < g_size; i++) {
        if (kinds[i] != VT_ATTACK_NONE) continue;
        CHECK(g_rep[i].status == 0, "rank %d ended with status %d", i, g_rep[i].status);
        CHECK(!memcmp(g_rep[i].digest, g_rep[ref].digest, 32), "rank %d's weights differ from rank %d's", i, ref);
        CHECK(!memcmp(g_rep[i].alive, g_rep[ref].alive, (size_t)g_size), "rank %d's ban list differs from rank %d's", i, ref);
        for (j = 0; j < g_size; j++) if (kinds[j] == VT_ATTACK_NONE && !g_rep[i].alive[j]) honest_banned++;
    }
    CHECK(honest_banned == 0, "%d honest bans", honest_banned);
    return honest_banned;
}

static vt_btard_attack_kind g_kinds[64];

static void set_kinds(int who, vt_btard_attack_kind k) {
    int i;
    for (i = 0; i < g_size; i++) g_kinds[i] = VT_ATTACK_NONE;
    if (who >= 0) g_kinds[who] = k;
}

TEST(mpi_honest_swarm_identical) {
    set_kinds(-1, VT_ATTACK_NONE);
    scenario(1, g_kinds, 0, 20, 1);
    if (g_rank) return;
    check_honest(g_kinds);
    CHECK(g_rep[0].steps == 20, "rank 0 ran %d steps", g_rep[0].steps);
    CHECK(g_rep[0].validations + g_rep[1].validations + g_rep[2].validations + g_rep[3].validations > 0, "no validations happened");
}

/* a gradient attacker is caught by a validator's exact recomputation */
static void attacker_banned(int session, vt_btard_attack_kind k, int who, vt_btard_reason want, int steps) {
    set_kinds(who, k);
    scenario(session, g_kinds, 2, steps, 1);
    if (g_rank) return;
    check_honest(g_kinds);
    CHECK(!g_rep[0].alive[who], "%s attacker (rank %d) not banned after %d steps", vt_btard_attack_name(k), who, steps);
    CHECK(g_rep[0].reasons[who] == (int)want, "%s attacker banned for %s, expected %s", vt_btard_attack_name(k),
          g_rep[0].reasons[who] >= 0 ? vt_btard_reason_name((vt_btard_reason)g_rep[0].reasons[who]) : "nothing",
          vt_btard_reason_name(want));
}

TEST(mpi_sign_flip_banned) { attacker_banned(2, VT_ATTACK_SIGN_FLIP, 3, VT_BAN_GRADIENT, 60); }
TEST(mpi_nudge_banned) { attacker_banned(3, VT_ATTACK_NUDGE, 2, VT_BAN_GRADIENT, 60); }
TEST(mpi_forged_log_banned) { attacker_banned(4, VT_ATTACK_FORGED_LOG, 1, VT_BAN_GRADIENT, 60); }
TEST(mpi_lying_aggregator_banned) { attacker_banned(5, VT_ATTACK_LYING_AGGREGATOR, 3, VT_BAN_AGGREGATE, 10); }
TEST(mpi_withheld_reveal_banned) { attacker_banned(6, VT_ATTACK_WITHHOLD_REVEAL, 2, VT_BAN_REVEAL, 10); }
TEST(mpi_garbage_banned) { attacker_banned(7, VT_ATTACK_GARBAGE, 1, VT_BAN_PART, 10); }
TEST(mpi_silent_banned) { attacker_banned(8, VT_ATTACK_SILENT, 2, VT_BAN_SILENT, 6); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (g_size < 4 || g_size > 64) {
        if (!g_rank) printf("run with mpirun -np 4 (4 to 64 ranks)\n0 passed, 1 failed\n");
        MPI_Finalize();
        return 1;
    }
    if (vt_btard_digits_load(&g_data, "data/digits.csv", 16, 16, 0.05) != VT_OK) {
        fprintf(stderr, "rank %d: %s (run from the repository root)\n", g_rank, vt_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    make_keys();
    g_net = vt_net_mpi_create(0);
    if (g_rank) {
        /* only rank 0 reports; the others run the same scenarios silently */
        fflush(stdout);
        if (!freopen("/dev/null", "w", stdout)) return 1;
    }
    TEST_FILTER(0, argv);
    RUN(mpi_honest_swarm_identical);
    RUN(mpi_sign_flip_banned);
    RUN(mpi_nudge_banned);
    RUN(mpi_forged_log_banned);
    RUN(mpi_lying_aggregator_banned);
    RUN(mpi_withheld_reveal_banned);
    RUN(mpi_garbage_banned);
    RUN(mpi_silent_banned);
    g_net->destroy(g_net);
    vt_btard_digits_free(&g_data);
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int rc = g_rank ? 0 : TEST_SUMMARY();
        fflush(stdout);
        MPI_Finalize();
        return rc;
    }
}
