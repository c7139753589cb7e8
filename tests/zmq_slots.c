/* zmq_slots.c - the TCP transport's open slots (vtrain_btard.h >>zmq), one
   process, several endpoints on 127.0.0.1 (tests/tcp_run.sh runs it with a
   free port range: zmq_slots BASE_PORT). Roster: founders 0, 1, 2 and slot
   3 open; every endpoint has a guest endpoint (vt_net_zmq_desc
   .guest_endpoints), where keys nobody holds speak. It tries to break what
   CURVE gives members:
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
     once slot 3 is banned, nobody is heard as 3;
     a guest's flood costs a member bounded memory (review F3): a child
     process is founder 0 and reads nothing while 3 guest keys flood it,
     each with 1 MiB messages on both endpoints it binds (the members' and
     the guests') and 200-byte ones on the guest endpoint; its peak
     resident memory (VmHWM, /proc/self/status) grows by less than
     FLOOD_BOUND_KIB (0.2.6: by what the flood sent, 192 MiB), and
     afterwards it still hears founder 1 and an honest guest of slot 3.
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
#include <unistd.h>
#include <sys/select.h>
#include <sys/wait.h>

static int g_pass, g_fail;
static void check(int ok, const char *what) {
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    if (ok) g_pass++;
    else g_fail++;
}

static int g_base, g_next;
static size_t g_max_msg; /* vt_net_zmq_desc.max_msg of every endpoint (0: the default) */
static unsigned char g_roster[4 * 32];
static vt_btard_key g_key[4];

/* an endpoint at rank `rank` with key k; join: a newcomer claiming slot
   rank (its own roster has that slot open), at the slot's own endpoint if
   own, else at a port of its own (an impostor) */
static vt_net *endpoint(int rank, const vt_btard_key *k, int join, int own) {
    static char ep[4][64], gep[4][64];
    const char *epc[4], *gepc[4];
    unsigned char roster[4 * 32];
    vt_net_zmq_desc d;
    vt_net *t;
    int i;
    for (i = 0; i < 4; i++) {
        snprintf(ep[i], sizeof ep[i], "tcp://127.0.0.1:%d", i == rank && join && !own ? g_base + 8 + g_next++ : g_base + i);
        snprintf(gep[i], sizeof gep[i], "tcp://127.0.0.1:%d", i == rank && join && !own ? g_base + 8 + g_next++ : g_base + 4 + i);
        epc[i] = ep[i];
        gepc[i] = gep[i];
    }
    memcpy(roster, g_roster, sizeof roster);
    if (join) memset(roster + 32 * rank, 0, 32);
    memset(&d, 0, sizeof d);
    d.rank = rank; d.size = 4; d.endpoints = epc; d.roster = roster; d.key = k; d.join = join;
    d.guest_endpoints = gepc;
    d.max_msg = g_max_msg;
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

/* a field of /proc/self/status in KiB ("VmRSS:", "VmHWM:"), -1 if unreadable */
static long status_kib(const char *field) {
    char line[256];
    long v = -1;
    size_t l = strlen(field);
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    while (v < 0 && fgets(line, sizeof line, f))
        if (!strncmp(line, field, l)) v = strtol(line + l, NULL, 10);
    fclose(f);
    return v;
}

/* what the member child reports */
typedef struct flood_report {
    long rss0, hwm;    /* KiB: resident before the flood, peak after it */
    int heard_member;  /* founder 1's message after the flood */
    int heard_guest;   /* an honest guest's message for slot 3 after the flood */
} flood_report;

#define FLOOD_MSGS 64            /* 1 MiB messages per flooding connection */
#define FLOOD_KEYS 3              /* guest keys flooding (an honest guest still has room: 8 per slot) */
#define FLOOD_BOUND_KIB (16L << 10)

/* A flooding guest: a raw ZeroMQ DEALER with a Curve25519 key nobody holds, claiming open slot 3 in
   its routing id as a newcomer's DEALER does, connected to endpoint ep of founder 0 (server key spk);
   it queues up to count messages of nbig bytes (each waiting at most 0.1 s for room). The socket is
   returned open (its connection stays up while the member is measured). */
static void *flooder(void *ctx, const char *ep, const unsigned char spk[32], const unsigned char *big, size_t nbig, int count) {
    unsigned char pk[32], sk[32], rid[13];
    int hwm = count, linger = 0, tmo = 100, i;
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    if (!s) return NULL;
    crypto_box_keypair(pk, sk);
    rid[0] = 'J';
    vt__bt_p32(rid + 1, 3);
    randombytes_buf(rid + 5, 8);
    zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, spk, 32);
    zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, pk, 32);
    zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, sk, 32);
    zmq_setsockopt(s, ZMQ_ROUTING_ID, rid, sizeof rid);
    zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_SNDTIMEO, &tmo, sizeof tmo);
    zmq_connect(s, ep);
    for (i = 0; i < count; i++) if (zmq_send(s, big, nbig, 0) < 0) break;
    return s;
}

/* the flood case: founder 0 in a child process (measured alone), the flooders, founder 1 and an
   honest guest here; ports g_base + 24 on (endpoint() with g_base moved) */
static void guest_flood(void) {
    int go[2], back[2], st, i, k = 0;
    int base0 = g_base;
    pid_t pid;
    flood_report r;
    char c = 0;
    memset(&r, 0, sizeof r);
    if (pipe(go) || pipe(back)) { check(0, "a guest's flood: no pipe"); return; }
    g_base += 24;
    pid = fork();
    if (pid == 0) { /* founder 0: reads nothing until told, as while it computes */
        vt_net *a = endpoint(0, &g_key[0], 0, 1);
        flood_report m;
        memset(&m, 0, sizeof m);
        m.rss0 = status_kib("VmRSS:");
        if (write(back[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(1);
        m.hwm = status_kib("VmHWM:");
        if (a) {
            double until = vt_net_now() + 20;
            int f;
            uint64_t tag;
            unsigned char *p;
            size_t n;
            while ((!m.heard_member || !m.heard_guest) && a->recv(a, &f, &tag, &p, &n, until, 1) == 1) {
                if (f == 1 && n == 1 && p[0] == 'm') m.heard_member = 1;
                if (f == 3 && n == 1 && p[0] == 'h') m.heard_guest = 1;
                vt_net_free(p);
            }
            a->destroy(a);
        }
        if (write(back[1], &m, sizeof m) != (ssize_t)sizeof m) _exit(1);
        _exit(0);
    }
    if (pid > 0 && read(back[0], &c, 1) == 1) {
        void *ctx = zmq_ctx_new(), *fl[3 * FLOOD_KEYS];
        unsigned char spk[32], *big = (unsigned char *)malloc((size_t)1 << 20);
        char ep[64];
        vt_net *b, *h;
        vt_btard_key kh;
        int nfl = 0;
        if (crypto_sign_ed25519_pk_to_curve25519(spk, g_key[0].pk) != 0) nfl = -1;
        if (big) memset(big, 'f', (size_t)1 << 20);
        for (i = 0; i < FLOOD_KEYS && big && nfl >= 0; i++) { /* the members' endpoint and the guest endpoint */
            snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", g_base);
            fl[nfl++] = flooder(ctx, ep, spk, big, (size_t)1 << 20, FLOOD_MSGS);
            snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", g_base + 4);
            fl[nfl++] = flooder(ctx, ep, spk, big, (size_t)1 << 20, FLOOD_MSGS);
            fl[nfl++] = flooder(ctx, ep, spk, big, 200, 4096); /* messages a guest may send: as many as ZeroMQ takes */
        }
        vt__bt_sleep(1.0); /* what is sent is received and queued at founder 0 */
        c = 1;
        if (write(go[1], &c, 1) != 1) c = 0;
        b = endpoint(1, &g_key[1], 0, 1);
        vt_btard_key_new(&kh);
        h = endpoint(3, &kh, 1, 1);
        for (i = 0; i < 40 && b && h; i++) { /* until the child has heard both (it reports then) */
            b->send(b, 0, 1, "m", 1);
            h->send(h, 0, 1, "h", 1);
            vt__bt_sleep(0.5);
            if (i >= 4) { /* the child's answer may be in */
                fd_set fs;
                struct timeval tv = {0, 0};
                FD_ZERO(&fs);
                FD_SET(back[0], &fs);
                if (select(back[0] + 1, &fs, NULL, NULL, &tv) > 0) break;
            }
        }
        k = read(back[0], &r, sizeof r) == (ssize_t)sizeof r;
        for (i = 0; i < nfl; i++) if (fl[i]) zmq_close(fl[i]);
        zmq_ctx_term(ctx);
        if (b) b->destroy(b);
        if (h) h->destroy(h);
        free(big);
    }
    if (pid > 0) waitpid(pid, &st, 0);
    g_base = base0;
    check(k && r.rss0 > 0 && r.hwm - r.rss0 < FLOOD_BOUND_KIB, "a guest's flood (3 keys, 1 MiB and 200-byte messages, both endpoints) costs the member bounded memory");
    printf("  (founder 0 resident %ld KiB before the flood, peak %ld KiB: +%ld KiB; bound +%ld KiB)\n", r.rss0, r.hwm, r.hwm - r.rss0, FLOOD_BOUND_KIB);
    check(k && r.heard_member && r.heard_guest, "after the flood founder 0 still hears founder 1 and an honest guest of slot 3");
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
    guest_flood(); /* first: it forks, before this process has threads */
    g_max_msg = 5000; /* the admitted newcomer's large message below is exactly max_msg: heard */
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
    check(a->stats.garbage >= 1, "a stranger claiming founder 2's slot is refused (the guest's large message never reaches it: over the guest endpoint's ZMQ_MAXMSGSIZE)");
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
    /* admitted: slot 3 is x's key. x learns it first and moves to the members' endpoint, before
       founder 0 has admitted it: founder 0 puts x's handshake off (ZAP 300, not a refusal, which
       would end the connection for good), and what x sent meanwhile comes once it is admitted */
    memcpy(roster, g_roster, sizeof roster);
    memcpy(roster + 96, kx.pk, 32);
    x->roster(x, roster, alive);
    x->send(x, 0, 1, "e", 1);
    vt__bt_sleep(0.5);
    a->roster(a, roster, alive);
    x->send(x, 0, 1, "x", 1);
    y->send(y, 0, 1, "y", 1);
    for (i = 0; i < 8; i++) if (g[i]) g[i]->send(g[i], 0, 1, "g", 1);
    x->send(x, 0, 1, big, sizeof big);
    {
        double until = vt_net_now() + 3;
        int f, nx = 0, ne = 0, nother = 0, nbig = 0;
        uint64_t tag;
        unsigned char *p;
        size_t n;
        while (a->recv(a, &f, &tag, &p, &n, until, 1) == 1) {
            if (f == 3 && n == 1 && p[0] == 'x') nx++;
            else if (f == 3 && n == 1 && p[0] == 'e') ne++;
            else if (f == 3 && n == sizeof big) nbig++;
            else nother++;
            vt_net_free(p);
            if (ne == 1 && nx == 1 && nbig == 1 && vt_net_now() + 0.3 < until) until = vt_net_now() + 0.3;
        }
        check(nx == 1 && nbig == 1 && nother == 0, "admitted: only the admitted key is heard as 3 (and its large messages too, one of exactly max_msg bytes)");
        check(ne == 1, "a newcomer that learns of its admission before a member does is heard once that member admits it");
        if (ne != 1 || nx != 1 || nbig != 1 || nother) printf("  (heard 'e' %d, 'x' %d, large %d, others %d)\n", ne, nx, nbig, nother);
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
