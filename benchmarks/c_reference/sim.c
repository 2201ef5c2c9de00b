/* A minimal C simulator of hpcdispatch's FIFO and EASY rules, the yardstick of
 * benchmarks/engine_vs_c.py (issue 54). It reads an SWF trace (.swf or .swf.gz, through zlib),
 * cleans it as hpcdispatch's SWF reader does with its defaults and `--units processor`
 * (one unit per processor, one core each), sorts it by submit time (ties: file order) and
 * simulates FIFO (blocking) or EASY backfilling with hpcdispatch's rules for
 * `--allocator first-fit --no-walltime-kill` and the wall-time predictor:
 *
 *   - at each instant: ends, then submissions, then one dispatcher call if anything happened
 *     and the queue is not empty; a job runs its real run time (no wall-time kill);
 *   - first fit: nodes in index order, each taking as many units as it has free cores;
 *   - FIFO: start jobs in queue order until one does not fit;
 *   - EASY: start jobs in queue order until one (the head) does not fit; its shadow time is the
 *     first expected end (max(planned end, now + 1) for a running job, now + wall-time for a
 *     job started in this call; equal ends together) after which it fits node by node, each
 *     node counting at most the head's units; a later job (queue order) is backfilled if it
 *     fits now and either ends by the shadow time (now + wall-time <= shadow) or takes only
 *     what the head does not need then (the pooled spare at the shadow time, and the head's
 *     node-level fit on its first-fit nodes). A call that started nothing is remembered: if
 *     nothing ended, the head is the same and no running job is overdue, the next call only
 *     looks at the jobs submitted since (what hpcdispatch does; the schedule is the same).
 *
 * Cleaning (SwfOptions defaults): records with submit < 0 or run time <= 0 are skipped; the
 * processor count is field 8 (requested), field 5 where that is <= 0, skipped when both are;
 * a repeated job id keeps its first record; a missing wall-time (field 9 <= 0) becomes the
 * longest run time of the jobs kept in its queue (field 15); jobs larger than the machine
 * are skipped.
 *
 *   cc -O2 -o sim sim.c -lz -lm
 *   ./sim TRACE.swf.gz fifo|easy NODES CORES_PER_NODE [OUT.csv]
 *
 * prints one JSON line: jobs, mean wait, and the seconds of each phase (read: decompress,
 * parse, clean, sort; simulate; write: OUT.csv with id, submit, start, end per job).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

typedef long long i64;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- reading */
typedef struct {
    i64 id, submit, run, procs, wall, queue;
} Rec;

static Rec *recs;
static i64 nrec, caprec;

static double parse_num(const char **p, const char *end, int *ok) {
    const char *s = *p;
    while (s < end && (*s == ' ' || *s == '\t')) s++;
    if (s >= end) { *ok = 0; *p = s; return 0; }
    int neg = 0;
    if (*s == '-') { neg = 1; s++; } else if (*s == '+') s++;
    double v = 0;
    int digits = 0;
    while (s < end && *s >= '0' && *s <= '9') { v = v * 10 + (*s - '0'); s++; digits++; }
    if (s < end && *s == '.') {
        s++;
        double f = 0.1;
        while (s < end && *s >= '0' && *s <= '9') { v += (*s - '0') * f; f *= 0.1; s++; digits++; }
    }
    if (!digits || (s < end && *s != ' ' && *s != '\t' && *s != '\r')) { *ok = 0; *p = s; return 0; }
    *p = s;
    return neg ? -v : v;
}

static void parse_line(const char *s, const char *end) {
    while (s < end && (*s == ' ' || *s == '\t')) s++;
    if (s >= end || *s == ';' || *s == '\r') return;
    double f[18];
    int ok = 1;
    for (int i = 0; i < 18; i++) {
        f[i] = parse_num(&s, end, &ok);
        if (!ok) return; /* malformed: skipped, as the reader does */
    }
    if (nrec == caprec) {
        caprec = caprec ? 2 * caprec : 1 << 16;
        recs = realloc(recs, caprec * sizeof(Rec));
    }
    Rec *r = &recs[nrec++];
    r->id = (i64)rint(f[0]);
    r->submit = (i64)rint(f[1]);
    r->run = (i64)rint(f[3]);
    i64 req = (i64)rint(f[7]), alloc = (i64)rint(f[4]);
    r->procs = req > 0 ? req : (alloc > 0 ? alloc : req);
    r->wall = (i64)rint(f[8]);
    r->queue = (i64)rint(f[14]);
}

static void read_trace(const char *path) {
    gzFile g = gzopen(path, "rb");
    if (!g) { fprintf(stderr, "%s: cannot open\n", path); exit(2); }
    gzbuffer(g, 1 << 20);
    size_t cap = 1 << 22, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (cap - len < (1 << 20)) { cap *= 2; buf = realloc(buf, cap); }
        int got = gzread(g, buf + len, (unsigned)(cap - len));
        if (got < 0) { fprintf(stderr, "%s: damaged\n", path); exit(2); }
        if (got == 0) break;
        len += (size_t)got;
    }
    gzclose(g);
    const char *s = buf, *end = buf + len;
    while (s < end) {
        const char *e = memchr(s, '\n', end - s);
        if (!e) e = end;
        parse_line(s, e);
        s = e + 1;
    }
    free(buf);
}

typedef struct { i64 key; i64 pos; } KeyPos;
static int cmp_keypos(const void *a, const void *b) {
    const KeyPos *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

/* ---------------------------------------------------------------- jobs */
static i64 n;            /* jobs kept, in submit order */
static i64 *J_id, *J_submit, *J_run, *J_units, *J_wall;
static double *J_start, *J_planned_end;
static i64 *J_off, *J_len; /* allocation rows */
static i64 *rows_node, *rows_units, nrows;

static void clean_and_sort(i64 total_cores) {
    char *keep = malloc(nrec);
    for (i64 i = 0; i < nrec; i++)
        keep[i] = recs[i].submit >= 0 && recs[i].run > 0 && recs[i].procs > 0;
    /* repeated ids (over every record read): the first in file order stays */
    KeyPos *kp = malloc(nrec * sizeof(KeyPos));
    for (i64 i = 0; i < nrec; i++) { kp[i].key = recs[i].id; kp[i].pos = i; }
    qsort(kp, nrec, sizeof(KeyPos), cmp_keypos);
    for (i64 i = 1; i < nrec; i++)
        if (kp[i].key == kp[i - 1].key) keep[kp[i].pos] = 0;
    /* missing wall-time: the longest run time kept in its queue */
    i64 nq = 0;
    for (i64 i = 0; i < nrec; i++)
        if (keep[i] && recs[i].wall <= 0) nq++;
    if (nq) {
        for (i64 i = 0; i < nrec; i++) { kp[i].key = recs[i].queue; kp[i].pos = i; }
        qsort(kp, nrec, sizeof(KeyPos), cmp_keypos);
        for (i64 a = 0; a < nrec;) {
            i64 b = a, longest = 0;
            while (b < nrec && kp[b].key == kp[a].key) {
                if (keep[kp[b].pos] && recs[kp[b].pos].run > longest) longest = recs[kp[b].pos].run;
                b++;
            }
            for (i64 c = a; c < b; c++) {
                Rec *r = &recs[kp[c].pos];
                if (keep[kp[c].pos] && r->wall <= 0) r->wall = longest;
            }
            a = b;
        }
    }
    for (i64 i = 0; i < nrec; i++)
        if (keep[i] && recs[i].procs > total_cores) keep[i] = 0; /* too big */
    n = 0;
    for (i64 i = 0; i < nrec; i++)
        if (keep[i]) { kp[n].key = recs[i].submit; kp[n].pos = i; n++; }
    qsort(kp, n, sizeof(KeyPos), cmp_keypos); /* submit, then file order */
    J_id = malloc(n * 8); J_submit = malloc(n * 8); J_run = malloc(n * 8);
    J_units = malloc(n * 8); J_wall = malloc(n * 8);
    J_start = malloc(n * 8); J_planned_end = malloc(n * 8);
    J_off = malloc(n * 8); J_len = malloc(n * 8);
    for (i64 i = 0; i < n; i++) {
        Rec *r = &recs[kp[i].pos];
        J_id[i] = r->id; J_submit[i] = r->submit; J_run[i] = r->run;
        J_units[i] = r->procs; J_wall[i] = r->wall;
    }
    free(kp); free(keep); free(recs);
}

/* ---------------------------------------------------------------- machine */
static i64 nodes, *node_free, *scratch, *shadow, free_total, scratch_total;

static i64 nrows_used(void);

/* first fit on `f`: rows written after the current call's rows; the row count or -1 */
static i64 first_fit(const i64 *f, i64 units) {
    i64 need = units, k = 0, base = nrows_used();
    for (i64 nd = 0; nd < nodes; nd++) {
        if (f[nd] > 0) {
            i64 take = f[nd] < need ? f[nd] : need;
            rows_node[base + k] = nd;
            rows_units[base + k] = take;
            k++;
            need -= take;
            if (!need) return k;
        }
    }
    return -1;
}

/* ---------------------------------------------------------------- queue, running, ends */
static i64 *qnext, *qprev, qhead = -1, qtail = -1, qlen;
static i64 *run_list, *run_pos, nrun;
static double *heap_t; static i64 *heap_j, hsize;
static i64 *dec, ndec; /* starts of the current call (their rows from nrows on) */
static i64 used;       /* rows the current call's starts use */
static i64 nrows_used(void) { return nrows + used; }

static void heap_push(double t, i64 j) {
    i64 i = hsize++;
    while (i > 0) {
        i64 p = (i - 1) >> 1;
        if (heap_t[p] <= t) break;
        heap_t[i] = heap_t[p]; heap_j[i] = heap_j[p];
        i = p;
    }
    heap_t[i] = t; heap_j[i] = j;
}

static i64 heap_pop(void) {
    i64 top = heap_j[0];
    i64 size = --hsize;
    if (!size) return top;
    double t = heap_t[size]; i64 j = heap_j[size];
    i64 i = 0;
    for (;;) {
        i64 c = 2 * i + 1;
        if (c >= size) break;
        if (c + 1 < size && heap_t[c + 1] < heap_t[c]) c++;
        if (t <= heap_t[c]) break;
        heap_t[i] = heap_t[c]; heap_j[i] = heap_j[c];
        i = c;
    }
    heap_t[i] = t; heap_j[i] = j;
    return top;
}

/* start j in this call on the k rows first_fit just wrote (taken from the scratch) */
static void take(i64 j, i64 k) {
    i64 off = nrows + used;
    for (i64 i = off; i < off + k; i++) scratch[rows_node[i]] -= rows_units[i];
    scratch_total -= J_units[j];
    J_off[j] = off; J_len[j] = k;
    dec[ndec++] = j;
    used += k;
}

static int try_start(i64 j) {
    if (scratch_total < J_units[j]) return 0;
    i64 k = first_fit(scratch, J_units[j]);
    return k < 0 ? 0 : (take(j, k), 1);
}

/* ---------------------------------------------------------------- EASY */
static double shadow_t, spare;
static i64 hfit, has_res, idle, idle_head;

static inline i64 capped(i64 v, i64 cap) { return v <= 0 ? 0 : (v < cap ? v : cap); }

/* add (sign 1) or take (-1) job rows to/from the shadow; the change in the head's fit */
static i64 shift(i64 off, i64 k, i64 sign, i64 hunits) {
    i64 change = 0;
    for (i64 i = off; i < off + k; i++) {
        i64 nd = rows_node[i];
        i64 before = capped(shadow[nd], hunits);
        shadow[nd] += sign * rows_units[i];
        change += capped(shadow[nd], hunits) - before;
    }
    return change;
}

typedef struct { double e; i64 j; } EJ;
static EJ *ej;
static int cmp_ej(const void *a, const void *b) {
    const EJ *x = a, *y = b;
    return x->e < y->e ? -1 : (x->e > y->e);
}

static void reserve(i64 head, double now) {
    i64 m = 0;
    double floor_t = now + 1.0;
    for (i64 i = 0; i < nrun; i++) {
        i64 j = run_list[i];
        double e = J_planned_end[j];
        ej[m].e = e > floor_t ? e : floor_t; ej[m].j = j; m++;
    }
    for (i64 d = 0; d < ndec; d++) { ej[m].e = now + J_wall[dec[d]]; ej[m].j = dec[d]; m++; }
    qsort(ej, m, sizeof(EJ), cmp_ej); /* equal ends are added together: their order is moot */
    memcpy(shadow, scratch, nodes * sizeof(i64));
    i64 hunits = J_units[head];
    hfit = 0;
    for (i64 nd = 0; nd < nodes; nd++) hfit += capped(shadow[nd], hunits);
    i64 total = scratch_total;
    shadow_t = INFINITY;
    for (i64 i = 0; i < m;) {
        double e = ej[i].e;
        while (i < m && ej[i].e == e) {
            i64 j = ej[i].j;
            hfit += shift(J_off[j], J_len[j], 1, hunits);
            total += J_units[j];
            i++;
        }
        if (hfit >= hunits) { shadow_t = e; break; }
    }
    spare = (double)(total - hunits);
    has_res = 1;
}

static void scan(i64 j, i64 head, double now) {
    while (j != -1) {
        i64 u = J_units[j];
        if (scratch_total >= u) {
            int is_short = has_res && now + J_wall[j] <= shadow_t;
            if (!has_res || is_short || spare >= u) {
                i64 k = first_fit(scratch, u);
                if (k >= 0) {
                    int ok = 1;
                    if (!has_res) {
                        reserve(head, now);
                        is_short = now + J_wall[j] <= shadow_t;
                        if (!is_short && spare < u) ok = 0;
                    }
                    if (ok && !is_short) {
                        i64 off = nrows + used;
                        i64 lost = -shift(off, k, -1, J_units[head]);
                        if (hfit - lost < J_units[head]) {
                            shift(off, k, 1, J_units[head]);
                            ok = 0;
                        } else {
                            spare -= u;
                            hfit -= lost;
                        }
                    }
                    if (ok) {
                        take(j, k);
                        if (scratch_total == 0) return;
                    }
                }
            }
        }
        j = qnext[j];
    }
}

static i64 ended_since, new_first = -1;

static void easy(double now) {
    memcpy(scratch, node_free, nodes * sizeof(i64));
    scratch_total = free_total;
    int was_idle = idle;
    idle = 0;
    if (was_idle && ended_since == 0 && idle_head == qhead) {
        int overdue = 0;
        for (i64 i = 0; i < nrun; i++)
            if (J_planned_end[run_list[i]] <= now + 1.0) { overdue = 1; break; }
        if (!overdue) {
            scan(new_first, idle_head, now);
            if (ndec == 0) idle = 1;
            return;
        }
    }
    has_res = 0;
    i64 head = -1;
    for (i64 j = qhead; j != -1; j = qnext[j])
        if (!try_start(j)) { head = j; break; }
    if (head == -1) return;
    if (scratch_total != 0) scan(qnext[head], head, now);
    if (ndec == 0) { idle = 1; idle_head = head; }
}

static i64 fifo_blocked = -1; /* the head that did not fit at the last call */

static void fifo(void) {
    if (fifo_blocked != -1 && ended_since == 0 && fifo_blocked == qhead) return;
    memcpy(scratch, node_free, nodes * sizeof(i64));
    scratch_total = free_total;
    fifo_blocked = -1;
    for (i64 j = qhead; j != -1; j = qnext[j])
        if (!try_start(j)) { fifo_blocked = j; return; }
}

static void simulate(int is_easy) {
    qnext = malloc(n * 8); qprev = malloc(n * 8);
    run_list = malloc(n * 8); run_pos = malloc(n * 8);
    heap_t = malloc(n * sizeof(double)); heap_j = malloc(n * 8);
    dec = malloc(n * 8); ej = malloc(n * sizeof(EJ));
    i64 max_rows = 0;
    for (i64 i = 0; i < n; i++) max_rows += J_units[i] < nodes ? J_units[i] : nodes;
    rows_node = malloc((max_rows + 1) * 8); rows_units = malloc((max_rows + 1) * 8);
    i64 si = 0;
    for (;;) {
        double t_heap = hsize ? heap_t[0] : INFINITY;
        double t_sub = si < n ? (double)J_submit[si] : INFINITY;
        double t = t_heap < t_sub ? t_heap : t_sub;
        if (t == INFINITY) break;
        int happened = 0;
        while (hsize && heap_t[0] == t) {
            i64 j = heap_pop();
            i64 last = run_list[nrun - 1];
            run_list[run_pos[j]] = last; run_pos[last] = run_pos[j]; nrun--;
            for (i64 i = J_off[j]; i < J_off[j] + J_len[j]; i++) node_free[rows_node[i]] += rows_units[i];
            free_total += J_units[j];
            ended_since++;
            happened = 1;
        }
        while (si < n && (double)J_submit[si] == t) {
            qprev[si] = qtail; qnext[si] = -1;
            if (qtail == -1) qhead = si; else qnext[qtail] = si;
            qtail = si; qlen++;
            if (new_first == -1) new_first = si;
            si++;
            happened = 1;
        }
        if (happened && qlen > 0) {
            ndec = 0; used = 0;
            if (is_easy) easy(t); else fifo();
            ended_since = 0; new_first = -1;
            for (i64 d = 0; d < ndec; d++) {
                i64 j = dec[d];
                i64 p = qprev[j], q = qnext[j];
                if (p == -1) qhead = q; else qnext[p] = q;
                if (q == -1) qtail = p; else qprev[q] = p;
                qlen--;
                for (i64 i = J_off[j]; i < J_off[j] + J_len[j]; i++) node_free[rows_node[i]] -= rows_units[i];
                free_total -= J_units[j];
                J_start[j] = t;
                J_planned_end[j] = t + (double)J_wall[j];
                run_pos[j] = nrun; run_list[nrun++] = j;
                heap_push(t + (double)J_run[j], j);
            }
            nrows += used;
        }
        if (qlen > 0 && hsize == 0 && si >= n) { fprintf(stderr, "stalled at t=%g\n", t); exit(3); }
    }
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s TRACE.swf[.gz] fifo|easy NODES CORES_PER_NODE [OUT.csv]\n", argv[0]);
        return 2;
    }
    int is_easy = strcmp(argv[2], "easy") == 0;
    if (!is_easy && strcmp(argv[2], "fifo") != 0) { fprintf(stderr, "policy: fifo or easy\n"); return 2; }
    nodes = atoll(argv[3]);
    i64 cores = atoll(argv[4]);
    double t0 = now_s();
    read_trace(argv[1]);
    clean_and_sort(nodes * cores);
    double t1 = now_s();
    node_free = malloc(nodes * 8); scratch = malloc(nodes * 8); shadow = malloc(nodes * 8);
    for (i64 i = 0; i < nodes; i++) node_free[i] = cores;
    free_total = nodes * cores;
    simulate(is_easy);
    double t2 = now_s();
    double wait = 0;
    for (i64 i = 0; i < n; i++) wait += J_start[i] - (double)J_submit[i];
    if (argc > 5) {
        FILE *f = fopen(argv[5], "w");
        if (!f) { fprintf(stderr, "%s: cannot write\n", argv[5]); return 2; }
        fputs("id,submit,start,end\n", f);
        for (i64 i = 0; i < n; i++)
            fprintf(f, "%lld,%lld,%.0f,%.0f\n", J_id[i], J_submit[i], J_start[i], J_start[i] + (double)J_run[i]);
        fclose(f);
    }
    double t3 = now_s();
    printf("{\"jobs\": %lld, \"mean_wait\": %.6f, \"read_s\": %.6f, \"simulate_s\": %.6f, "
           "\"write_s\": %.6f, \"total_s\": %.6f}\n",
           n, n ? wait / n : 0.0, t1 - t0, t2 - t1, t3 - t2, t3 - t0);
    return 0;
}
