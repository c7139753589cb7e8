/* zmq_slots.c - the TCP transport's open slots (vtrain_btard.h >>zmq), one
   process, several endpoints on 127.0.0.1 (tests/tcp_run.sh runs it with a
   free port range: zmq_slots BASE_PORT). Roster: founders 0, 1, 2 and slot
   3 open. It tries to break what CURVE gives members:
     a guest (a key nobody holds) claiming open slot 3 is heard as 3, two
     guests alike while the slot is open; a guest's message over guest_max
     is dropped;
     a guest claiming founder 2's slot is refused;
     a founder's message to open slot 3 is a reply: it reaches the guest
     connection that last spoke for 3 (a newcomer reads it on its
     connection to the founder), no other guest, and nothing over
     guest_max; a guest key's messages pass a rate bound (a burst of 10);
     at most 8 guest keys per open slot are accepted;
     once slot 3 is admitted with one key (vt_net.roster), only that key is
     heard as 3, and the founder reaches the newcomer's endpoint;
     once slot 3 is banned, nobody is heard as 3.
   Last line: "N passed, M failed". */
#define VTRAIN_IMPLEMENTATION
#ifndef VTRAIN_SODIUM
#define VTRAIN_SODIUM
#endif
#ifndef VTRAIN_ZMQ
#define VTRAIN_ZMQ
#endif
#include "../vtrain.h"
#include "../vtrain_btard.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_pass, g_fail;
static void check(int ok, const char *what) {
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    if (ok) g_pass++;
    else g_fail++;
}

static int g_base, g_next;
static unsigned char g_roster[4 * 32];
static vt_btard_key g_key[4];

/* an endpoint at rank `rank` with key k; join: a newcomer claiming slot
   rank (its own roster has that slot open), at the slot's own endpoint if
   own, else at a port of its own (an impostor) */
static vt_net *endpoint(int rank, const vt_btard_key *k, int join, int own) {
    static char ep[4][64];
    const char *epc[4];
    unsigned char roster[4 * 32];
    vt_net_zmq_desc d;
    vt_net *t;
    int i;
    for (i = 0; i < 4; i++) {
        snprintf(ep[i], sizeof ep[i], "tcp://127.0.0.1:%d", i == rank && join && !own ? g_base + 8 + g_next++ : g_base + i);
        epc[i] = ep[i];
    }
    memcpy(roster, g_roster, sizeof roster);
    if (join) memset(roster + 32 * rank, 0, 32);
    memset(&d, 0, sizeof d);
    d.rank = rank; d.size = 4; d.endpoints = epc; d.roster = roster; d.key = k; d.join = join;
    t = vt_net_zmq_create(&d);
    if (!t) printf("endpoint %d: %s\n", rank, vt_last_error());
    return t;
}

/* messages a receives as from `from` with first byte c (any c if 0): it
   listens until `want` of them came and 0.3 s more (for any that should
   not come), at most s seconds */
static int hear(vt_net *a, double s, int from, char c, int want) {
    double until = vt_net_now() + s;
    int k = 0, f;
    uint64_t tag;
    unsigned char *p;
    size_t n;
    while (a->recv(a, &f, &tag, &p, &n, until, 1) == 1) {
        if (f == from && n > 0 && (!c || p[0] == c) && ++k == want && vt_net_now() + 0.3 < until) until = vt_net_now() + 0.3;
        vt_net_free(p);
    }
    return k;
}

int main(int argc, char **argv) {
    vt_net *a, *x, *y, *z, *g[8];
    vt_btard_key kx, ky, kz, kg;
    unsigned char roster[4 * 32], alive[4] = {1, 1, 1, 1}, big[5000];
    int i, k;
    g_base = argc > 1 ? atoi(argv[1]) : 14000; /* founder 0 at g_base, the others at g_base + 8 on */
    for (i = 0; i < 4; i++) {
        unsigned char seed[32];
        memset(seed, i + 1, 32);
        vt_btard_key_from_seed(&g_key[i], seed);
        memcpy(g_roster + 32 * i, g_key[i].pk, 32);
    }
    memset(g_roster + 96, 0, 32); /* slot 3 open */
    vt_btard_key_new(&kx); vt_btard_key_new(&ky); vt_btard_key_new(&kz);
    a = endpoint(0, &g_key[0], 0, 1);
    x = endpoint(3, &kx, 1, 1);
    y = endpoint(3, &ky, 1, 0);
    z = endpoint(2, &kz, 1, 0); /* a stranger that claims founder 2's slot */
    if (!a || !x || !y || !z) { printf("0 passed, 1 failed\n"); return 1; }
    x->send(x, 0, 1, "x", 1);
    y->send(y, 0, 1, "y", 1);
    z->send(z, 0, 1, "z", 1);
    memset(big, 'b', sizeof big);
    x->send(x, 0, 1, big, sizeof big);
    k = hear(a, 3, 3, 0, 2);
    check(k == 2, "two guests claiming open slot 3 are heard as 3 (and a guest's 5000-byte message is not)");
    check(a->stats.garbage >= 2, "a stranger claiming founder 2's slot is refused; the guest's large message dropped");
    { /* garbage queued past the deadline: recv returns at the first of it, not at the last (review F6) */
        int64_t g0;
        int f;
        uint64_t tag;
        unsigned char *p;
        size_t n;
        for (i = 0; i < 300; i++) z->send(z, 0, 1, "z", 1);
        vt__bt_sleep(0.5);
        g0 = a->stats.garbage;
        k = a->recv(a, &f, &tag, &p, &n, vt_net_now(), 1);
        check(k == 0 && a->stats.garbage - g0 <= 2, "300 refused messages queued, a deadline passed: recv returns after one of them");
        if (k != 0 || a->stats.garbage - g0 > 2) printf("  (recv %d, %lld taken)\n", k, (long long)(a->stats.garbage - g0));
        while (a->recv(a, &f, &tag, &p, &n, vt_net_now() + 0.3, 1) == 1) vt_net_free(p);
    }
    x->send(x, 0, 1, "q", 1);
    k = hear(a, 3, 3, 'q', 1);
    a->send(a, 3, 2, "r", 1);
    a->send(a, 3, 2, big, sizeof big); /* over guest_max: dropped by the founder */
    check(k == 1 && hear(x, 3, 0, 0, 1) == 1, "a founder answers open slot 3 on the guest connection that spoke for it (x reads it, and only the answer)");
    check(hear(y, 0.5, 0, 0, 1) == 0, "no other guest of slot 3 hears the answer");
    for (i = 0; i < 40; i++) y->send(y, 0, 1, "t", 1);
    k = hear(a, 1.5, 3, 't', 40);
    check(k >= 8 && k <= 16, "a guest key's messages are rate-bounded: 40 sent at once, a burst of about 10 heard");
    if (k < 8 || k > 16) printf("  (heard %d)\n", k);
    for (i = 0; i < 8; i++) {
        vt_btard_key_new(&kg);
        g[i] = endpoint(3, &kg, 1, 0);
        if (g[i]) g[i]->send(g[i], 0, 1, "g", 1);
    }
    k = hear(a, 3, 3, 'g', 5);
    check(k == 5, "at most 8 guest keys for one open slot (x, y, z and 5 of 8 more)");
    /* admitted: slot 3 is x's key */
    memcpy(roster, g_roster, sizeof roster);
    memcpy(roster + 96, kx.pk, 32);
    a->roster(a, roster, alive);
    x->send(x, 0, 1, "x", 1);
    y->send(y, 0, 1, "y", 1);
    for (i = 0; i < 8; i++) if (g[i]) g[i]->send(g[i], 0, 1, "g", 1);
    x->send(x, 0, 1, big, sizeof big);
    {
        double until = vt_net_now() + 3;
        int f, nx = 0, nother = 0, nbig = 0;
        uint64_t tag;
        unsigned char *p;
        size_t n;
        while (a->recv(a, &f, &tag, &p, &n, until, 1) == 1) {
            if (f == 3 && n == 1 && p[0] == 'x') nx++;
            else if (f == 3 && n == sizeof big) nbig++;
            else nother++;
            vt_net_free(p);
            if (nx == 1 && nbig == 1 && vt_net_now() + 0.3 < until) until = vt_net_now() + 0.3;
        }
        check(nx == 1 && nbig == 1 && nother == 0, "admitted: only the admitted key is heard as 3 (and its large messages too)");
    }
    a->send(a, 3, 2, "w", 1);
    check(hear(x, 3, 0, 'w', 1) == 1, "the founder reaches the admitted newcomer's endpoint, its key pinned");
    alive[3] = 0;
    a->roster(a, roster, alive);
    x->send(x, 0, 1, "x", 1);
    check(hear(a, 0.5, 3, 0, 1) == 0, "banned: slot 3 is heard no more");
    for (i = 0; i < 8; i++) if (g[i]) g[i]->destroy(g[i]);
    z->destroy(z); y->destroy(y); x->destroy(x); a->destroy(a);
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail != 0;
}
