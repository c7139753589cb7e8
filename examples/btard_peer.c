/* btard_peer.c - one BTARD peer as its own process, talking to the others
   over TCP (vtrain_btard.h's ZeroMQ transport, VTRAIN_ZMQ): the digits MLP
   (or, --model cnn, the digits CNN with batch norm), trained by N such
   processes, any minority of which may lie or die.

       make build/btard_peer        (needs libsodium-dev and libzmq3-dev)
       for r in 0 1 2 3 4 5 6 7; do
         build/btard_peer --rank $r --peers 8 --port 5600 --steps 20 --out build/tcp/$r.txt &
       done

   Peer r listens on tcp://HOST:(port + r) (--host, default 127.0.0.1).
   Identities: every peer's key pair comes from --key-seed and its rank, so
   every process can compute the roster. That is for tests and
   demonstrations only: anyone who knows the seed can sign as any peer. A
   real deployment gives each peer its own vt_btard_key_new() and
   distributes the public keys (the roster) by other means.

   --defence mean runs the plain butterfly mean all-reduce instead (no
   defence, no signatures: the baseline of bench/btard_tcp.sh).

   The model: --model mlp (default) is vtrain_btard.h's digits MLP 64-H-10
   (--hidden H, default 16; --batch B samples per peer, default 16);
   --model cnn is its digits CNN task (vt_btard_cnn_digits: conv 3x3 W - bn
   - relu - conv 3x3 2W - bn - relu - max pool - linear; --width W, default
   16; --batch, default 8 images per peer, the paper's setting), the one
   bench/btard.c --model cnn runs in-process; --model resnet18 is the
   paper's setting at reduced width: a ResNet-18 (CIFAR form) on synthetic
   CIFAR-shaped images (vt_btard_cnn_cifar with no directory; --width W,
   default 8; 8 images per peer), as bench/btard.c --model resnet18.
   --compute-timeout S: the budget for a step's gradient (default 3 x
   --timeout; a ResNet's sixteen gradients on two cores need more).
   --validators M: validators
   per step (default 2). Every process must be given the same model
   options: the peers check nothing of the sort, and a peer training
   another model is a peer whose gradients fail validation.

   Peers joining mid-run (vtrain_btard.h >>btard: JOINING): --open K makes
   the last K ranks open slots (32 zero bytes in everyone's roster: give
   every process the same --open). A process started with --rank R (an
   open slot) and --join STEP is a newcomer: it makes a fresh key pair of
   its own (vt_btard_key_new: nobody needs to know it in advance), asks the
   members to admit it at step STEP, fetches the state they attest, works
   --probation P steps (default 3) under validation and then trains as a
   member until --steps. Its endpoint is tcp://HOST:(port + R), like any
   peer's: the members connect to it once they have admitted its key.
   With --open, every peer also listens for newcomers (keys not yet
   admitted, vt_net_zmq_desc.guest_endpoints) on tcp://HOST:(guest + r),
   --guest-port G (default port + N): a socket of its own with small
   limits, so a stranger there costs bounded memory.
   --join-wait S: seconds it waits to be admitted and synced (default 30).
   --join auto: a newcomer started at any time, that does not know the
   members' step: it asks every founder, takes the step that f0 + 1 of
   them vouch for in signed statements (f0 = (founders - 1) / 2 of them may
   lie), and asks to join 2 steps after it (VT_BTARD_JOIN_AUTO).

       for r in 0 1 2 3 4 5 6 7; do
         build/btard_peer --rank $r --peers 9 --open 1 --steps 12 --out build/tcp/$r.txt &
       done
       build/btard_peer --rank 8 --peers 9 --open 1 --join 2 --steps 12 --out build/tcp/8.txt
       # or, started whenever: ... --join auto --steps 40 (with founders run --steps 40 --pace 0.1)

   --attack NAME[=SCALE]: this peer attacks (vt_btard_attack_parse; SCALE
   sets vt_btard_attack.scale, e.g. lying_step=-1000: it tells newcomers a
   step 1000 in the past; partial_then_silent=X: it dies in the middle of
   its broadcast of exchange X, 1 COMMIT .. 6 FIN, default 1, at step 2:
   its envelope reaches the f lowest ranks, then it stops). --pace S: sleep
   S seconds after every step (a
   slower run, for a newcomer that starts late in a test).

   Every step it prints "step S alive K digest D" (D: the first 8 bytes of
   the weights digest, hex); at the end it writes --out: its steps, full
   digest, ban list and ban reasons, every rank's membership (and since
   when) and the view digest (vt_btard_view_digest), which tests/tcp_run.sh
   compares across the honest peers, newcomers included. After the last
   step it prints "ms/step T" (wall, steps 2..S) and "cpu_ms/step C" (this
   process's CPU, all its threads, ZeroMQ's I/O thread included, over the
   same steps): what bench/btard_tcp.sh reads; and "sent/step M msgs B
   bytes", what it handed its transport per step (all steps). */
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
#include <time.h>

static void hex(const unsigned char *d, int n, char *out) {
    int i;
    for (i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

int main(int argc, char **argv) {
    int rank = -1, n = 8, port = 5600, gport = -1, steps = 20, hidden = 16, batch = 0, width = 16, validators = 2, mean = 0, open = 0, probation = 0, i, s = 0;
    int64_t join = -1;
    double t1 = 0, join_wait = 30, pace = 0, scale = 0;
    clock_t c1 = 0;
    int auto_join = 0, has_scale = 0, width_set = 0;
    char aname[64];
    uint64_t key_seed = 1, data_seed = 7;
    double timeout = 1.0, compute_timeout = 0;
    const char *host = "127.0.0.1", *out = NULL, *attack = "none", *model = "mlp";
    char **ep;
    const char **epc;
    unsigned char *roster;
    vt_btard_key key;
    vt_net_zmq_desc zd;
    vt_net *net;
    vt_btard_digits dg;
    vt_btard_cnn cn;
    vt_btard_task task;
    vt_btard_cfg cfg = vt_btard_cfg_default();
    vt_btard_attack atk;
    vt_btard_peer *p;
    vt_status st = VT_OK;
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--rank")) rank = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--peers")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--port")) port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--guest-port")) gport = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--host")) host = argv[i + 1];
        else if (!strcmp(argv[i], "--out")) out = argv[i + 1];
        else if (!strcmp(argv[i], "--timeout")) timeout = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--compute-timeout")) compute_timeout = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--key-seed")) key_seed = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--data-seed")) data_seed = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--attack")) { /* NAME[=SCALE] */
            const char *eq = strchr(argv[i + 1], '=');
            size_t l = eq ? (size_t)(eq - argv[i + 1]) : strlen(argv[i + 1]);
            snprintf(aname, sizeof aname, "%.*s", (int)(l < sizeof aname ? l : sizeof aname - 1), argv[i + 1]);
            attack = aname;
            if (eq) { scale = atof(eq + 1); has_scale = 1; }
        }
        else if (!strcmp(argv[i], "--hidden")) hidden = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--model")) model = argv[i + 1];
        else if (!strcmp(argv[i], "--width")) { width = atoi(argv[i + 1]); width_set = 1; }
        else if (!strcmp(argv[i], "--validators")) validators = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--defence")) mean = !strcmp(argv[i + 1], "mean");
        else if (!strcmp(argv[i], "--open")) open = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--join")) {
            char *e = NULL;
            auto_join = !strcmp(argv[i + 1], "auto");
            join = auto_join ? 0 : strtoll(argv[i + 1], &e, 10);
            if (!auto_join && (!e || *e || join < 0)) join = -2; /* not a step: the usage */
        }
        else if (!strcmp(argv[i], "--pace")) pace = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--probation")) probation = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--join-wait")) join_wait = atof(argv[i + 1]);
        else { fprintf(stderr, "btard_peer: unknown option %s\n", argv[i]); return 2; }
    }
    if (rank < 0 || rank >= n || n < 2 || n > 64 || vt_btard_attack_parse(attack) < 0 || open < 0 || open >= n || join == -2 ||
        (strcmp(model, "mlp") && strcmp(model, "cnn") && strcmp(model, "resnet18")) || compute_timeout < 0 || hidden < 1 || batch < 0 || width < 1 || validators < 1 ||
        (join >= 0 && rank < n - open) || (join < 0 && rank >= n - open) || pace < 0) {
        fprintf(stderr, "usage: btard_peer --rank R --peers N [--port P] [--host H] [--steps S] [--out FILE] [--timeout T]\n"
                        "                  [--attack NAME[=SCALE]] [--model mlp|cnn|resnet18] [--hidden H] [--width W]\n"
                        "                  [--batch B] [--compute-timeout S] [--validators M] [--defence btard|mean] [--pace S]\n"
                        "                  [--open K] [--join STEP|auto] [--probation P] [--join-wait S] [--guest-port G]\n"
                        "  --open K: the last K ranks are open slots (give every process the same K); every peer hears\n"
                        "  newcomers on port G + R (default G: P + N);\n"
                        "  --join STEP: this process is a newcomer in open slot R (R >= N - K) with a fresh key of its own,\n"
                        "  asking to join at step STEP (the founders, R < N - K, run without --join);\n"
                        "  --join auto: the same, started at any time: it asks the founders their step (signed answers,\n"
                        "  f0 + 1 of them alike within 4 steps) and asks to join 2 steps after it\n");
        return 2;
    }
    if (gport < 0) gport = port + n;
    ep = (char **)malloc(sizeof(char *) * 2 * (size_t)n); /* the endpoints, then the guest endpoints */
    epc = (const char **)malloc(sizeof(char *) * 2 * (size_t)n);
    roster = (unsigned char *)malloc(32 * (size_t)n);
    for (i = 0; i < n; i++) {
        unsigned char seed[32];
        vt_btard_key k;
        int b;
        ep[i] = (char *)malloc(96);
        ep[n + i] = (char *)malloc(96);
        snprintf(ep[i], 96, "tcp://%s:%d", host, port + i);
        snprintf(ep[n + i], 96, "tcp://%s:%d", host, gport + i);
        epc[i] = ep[i];
        epc[n + i] = ep[n + i];
        for (b = 0; b < 32; b++) seed[b] = (unsigned char)vt_rng_u64(key_seed, (uint64_t)i, (uint64_t)b);
        if (vt_btard_key_from_seed(&k, seed) != VT_OK) { fprintf(stderr, "btard_peer: %s\n", vt_last_error()); return 1; }
        memcpy(roster + 32 * i, k.pk, 32);
        if (i == rank) key = k;
        if (i >= n - open) memset(roster + 32 * i, 0, 32); /* an open slot */
    }
    if (join >= 0 && vt_btard_key_new(&key) != VT_OK) { fprintf(stderr, "btard_peer: %s\n", vt_last_error()); return 1; }
    memset(&zd, 0, sizeof zd);
    zd.rank = rank; zd.size = n; zd.endpoints = epc; zd.roster = roster; zd.key = &key;
    zd.join = join >= 0;
    if (open > 0) zd.guest_endpoints = epc + n;
    net = vt_net_zmq_create(&zd);
    if (!net) { fprintf(stderr, "btard_peer %d: %s\n", rank, vt_last_error()); return 1; }
    memset(&dg, 0, sizeof dg);
    memset(&cn, 0, sizeof cn);
    if (!strcmp(model, "cnn")) { /* the digits CNN task of vtrain_btard.h (>>cnn), as bench/btard.c --model cnn */
        if (vt_btard_cnn_digits(&cn, "data/digits.csv", width, batch ? batch : 8, 0.05) != VT_OK) { fprintf(stderr, "btard_peer: %s\n", vt_last_error()); return 1; }
        task = vt_btard_cnn_task(&cn);
    } else if (!strcmp(model, "resnet18")) { /* the paper's setting at reduced width, as bench/btard.c --model resnet18 */
        if (vt_btard_cnn_cifar(&cn, NULL, width_set ? width : 8, batch ? batch : 8, 0.05) != VT_OK) { fprintf(stderr, "btard_peer: %s\n", vt_last_error()); return 1; }
        task = vt_btard_cnn_task(&cn);
    } else {
        if (vt_btard_digits_load(&dg, "data/digits.csv", hidden, batch ? batch : 16, 0.05) != VT_OK) { fprintf(stderr, "btard_peer: %s\n", vt_last_error()); return 1; }
        task = vt_btard_digits_task(&dg);
    }
    cfg.validators = validators;
    if (mean) { cfg.defence = VT_DEFENCE_MEAN; cfg.validators = 1; } /* the plain mean all-reduce: the baseline of bench/btard_tcp.sh */
    cfg.data_seed = data_seed;
    cfg.timeout = timeout;
    cfg.compute_timeout = compute_timeout > 0 ? compute_timeout : 3 * timeout;
    cfg.roster = roster;
    cfg.key = &key;
    cfg.join = join >= 0;
    cfg.join_step = auto_join ? VT_BTARD_JOIN_AUTO : join >= 0 ? join : 0;
    cfg.probation = probation;
    cfg.join_wait = join_wait;
    atk = vt_btard_attack_default((vt_btard_attack_kind)vt_btard_attack_parse(attack));
    atk.start = 2;
    if (has_scale) atk.scale = scale;
    if (has_scale && atk.kind == VT_ATTACK_PARTIAL_THEN_SILENT) atk.exchange = (int)scale;
    p = vt_btard_peer_create(&cfg, &task, net, &atk);
    if (!p) { fprintf(stderr, "btard_peer %d: %s\n", rank, vt_last_error()); return 1; }
    while (vt_btard_step_index(p) < steps) { /* a newcomer's first step waits for admission, then starts at join + 1 */
        unsigned char d[32];
        char h[17];
        int64_t at = vt_btard_step_index(p);
        st = vt_btard_step(p);
        if (st != VT_OK) break;
        if (s++ == 0) { t1 = vt_net_now(); c1 = clock(); } /* the time per step leaves out the first (connections, start-up skew) */
        vt_btard_digest(p, d);
        hex(d, 8, h);
        printf("step %lld alive %d digest %s\n", (long long)(vt_btard_step_index(p) - 1), vt_btard_alive_count(p), h);
        fflush(stdout);
        if (vt_btard_step_index(p) <= at) break; /* no progress (cannot happen: a step either ends or fails) */
        if (pace > 0) {
            double until = vt_net_now() + pace;
            while (vt_net_now() < until) { struct timespec ts = {0, 10000000}; nanosleep(&ts, NULL); }
        }
    }
    if (st != VT_OK) fprintf(stderr, "btard_peer %d stopped at step %lld: %s\n", rank, (long long)vt_btard_step_index(p), vt_btard_error(p));
    else if (s > 1) printf("ms/step %.3f\ncpu_ms/step %.3f\nsent/step %.1f msgs %.0f bytes\n", 1e3 * (vt_net_now() - t1) / (s - 1),
                           1e3 * (double)(clock() - c1) / CLOCKS_PER_SEC / (s - 1), (double)net->stats.sent_msgs / s, (double)net->stats.sent_bytes / s);
    if (out) {
        FILE *f = fopen(out, "w");
        unsigned char d[32];
        char h[65];
        const vt_btard_event *ev;
        int nev = vt_btard_events(p, &ev), k;
        if (!f) { fprintf(stderr, "btard_peer: cannot write %s\n", out); return 1; }
        vt_btard_digest(p, d);
        hex(d, 32, h);
        fprintf(f, "steps %lld\ndigest %s\nalive", (long long)vt_btard_step_index(p), h);
        for (i = 0; i < n; i++) fprintf(f, " %d", vt_btard_alive(p, i));
        fprintf(f, "\nbans");
        for (i = 0; i < n; i++) {
            const char *why = "-";
            for (k = 0; k < nev; k++)
                if (ev[k].kind == VT_EV_BAN && ev[k].peer == i) { why = vt_btard_reason_name(ev[k].reason); break; }
            fprintf(f, " %s", why);
        }
        fprintf(f, "\nmember");
        for (i = 0; i < n; i++) { /* membership: o(pen), p(robation), m(ember), b(anned), and since when */
            int64_t since = 0;
            vt_btard_membership ms = vt_btard_member(p, i, &since);
            fprintf(f, " %c%lld", "opmb"[ms], (long long)since);
        }
        vt_btard_view_digest(p, d);
        hex(d, 32, h);
        fprintf(f, "\nview %s\n", h);
        fclose(f);
    }
    vt_btard_peer_destroy(p);
    net->destroy(net); /* flushes what is still queued for the others (up to 2 s), then closes */
    if (strcmp(model, "mlp")) vt_btard_cnn_free(&cn);
    else vt_btard_digits_free(&dg);
    for (i = 0; i < 2 * n; i++) free(ep[i]);
    free(ep); free(epc); free(roster);
    return st == VT_OK ? 0 : 1;
}
