/* paddle.c — the communication layer: every MPI call of the library that
 * waits for other ranks goes through here (src/dist/dist_internal.h;
 * docs/distributed.md, "Failures and timeouts").
 *
 * No hangs. A call that waits (a collective, a send or receive, a
 * communicator split, MPI_Finalize) is bracketed by guard_begin/guard_end,
 * which publish what it is under a mutex. A watchdog thread, started with
 * MPI, sleeps until the deadline of the call in flight; if the call is still
 * the same one then, it prints one line naming this rank, the caller, the
 * collective, the mesh axes and the world ranks it waits for, and calls
 * MPI_Abort, which ends every rank. The calls themselves stay the blocking
 * MPI ones: a non-blocking call polled with sleeps progresses only when
 * polled, which made a 4 MB all-reduce five times slower here, while the
 * guard costs a clock read and two uncontended mutex operations per call.
 * The watchdog calls MPI only to abort (MPI_THREAD_FUNNELED otherwise).
 *
 * Out of step. When an MPI call returns an error (MPI_ERRORS_RETURN), or a
 * local error makes this rank skip a collective (pdi_comm_skip), the caller
 * gets the error as a status, and the other ranks may be waiting for this
 * one: every later call here fails at once (so no later collective can pair
 * with the wrong one), and at exit the job is aborted instead of finalized.
 *
 * Exit. A process that started MPI and exits with a non-zero status (an
 * error in the CLI or a program) aborts the job at once: MPI_Finalize would
 * wait for ranks that wait for this one. A zero status finalizes, under the
 * watchdog.
 *
 * Counting (pd_comm_stats): the bytes this rank sends, by kind, as
 * include/pd/dist.h states; calls with on->quiet set (metadata) are not
 * counted.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dist/dist_internal.h"

#define TIMEOUT_DEFAULT 60.0
#define EXIT_TIMEOUT 75 /* the status of a job ended by the timeout */

static double timeout_s = -1; /* < 0: not read from PD_DIST_TIMEOUT yet */
static int timeout_env_bad;

static void timeout_load(void)
{
    if (timeout_s >= 0) return;
    timeout_s = TIMEOUT_DEFAULT;
    const char *e = getenv("PD_DIST_TIMEOUT");
    if (!e || !*e) return;
    char *end;
    double v = strtod(e, &end);
    if (*end || !(v >= 0)) timeout_env_bad = 1;
    else timeout_s = v;
}

int pd_dist_set_timeout(double seconds)
{
    if (!(seconds >= 0))
        return pdi_errorf(PD_ERR_INVALID, "dist_set_timeout: %g is not a number of seconds >= 0 (0: no limit)", seconds);
    timeout_s = seconds, timeout_env_bad = 0;
    return PD_OK;
}

double pd_dist_timeout(void)
{
    timeout_load();
    return timeout_s;
}

int pdi_comm_check_env(const char *fn)
{
    timeout_load();
    if (timeout_env_bad)
        return pdi_errorf(PD_ERR_INVALID, "%s: PD_DIST_TIMEOUT is not a number of seconds >= 0 (0: no limit)", fn);
    return PD_OK;
}

/* Control bytes become '?': a message (axis names, a program's text) stays one line. */
static void one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

static void print_line(const char *head, const char *msg, const char *tail)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", msg ? msg : "");
    one_line(buf);
    fprintf(stderr, "%s%s%s\n", head, buf, tail);
    fflush(NULL);
}

int pdi_comm_fits(const char *fn, const char *what, int64_t n, const char *unit)
{
    if (n >= 0 && n <= 2147483647) return 1;
    pdi_errorf(PD_ERR_INVALID, "%s: %s of %lld %s would exceed one MPI message (2^31 - 1 %s)", fn, what, (long long)n,
               unit, unit);
    return 0;
}

#ifdef PD_HAVE_MPI
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

enum kind { K_ALLGATHER, K_ALLREDUCE, K_REDUCE_SCATTER, K_ALLTOALL, K_SEND, K_RECV, K_BARRIER, K_SPLIT, K_FINALIZE };
static const char *const kind_name[] = {"all-gather", "all-reduce", "reduce-scatter", "all-to-all", "send",
                                        "recv",       "barrier",    "communicator split", "MPI_Finalize"};

/* ---- the watchdog -------------------------------------------------------- */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    int running, stop;
    /* the call in flight (active), valid while active: main waits in it */
    int active;
    enum kind kind;
    const char *fn;
    struct pd_mesh *mesh; /* NULL: MPI_COMM_WORLD */
    int naxes, axes[PD_MAX_MESH_DIMS];
    int peer; /* send/recv: the world rank */
    double start, limit;
    int me, world; /* read at start: the watchdog calls MPI only to abort */
} wd = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int out_of_step;
static char out_of_step_why[160];
static int we_init;    /* this library called MPI_Init (so it finalizes) */
static pid_t mpi_pid;  /* the process that started MPI (not a forked child) */

/* The world ranks of the group a mesh call runs on (the ranks that share
 * this rank's coordinates off `axes`; naxes 0: the whole mesh), listed into
 * s; *n_out: how many; *other: one of them that is not this rank. */
static void group_ranks(char *s, size_t cap, const struct pd_mesh *m, const int *axes, int naxes, int *n_out, int *other)
{
    int in[PD_MAX_MESH_DIMS] = {0}, n = 0;
    size_t k = 0;
    s[0] = 0, *other = -1;
    for (int i = 0; i < naxes; i++) in[axes[i]] = 1;
    for (int i = 0; i < m->n; i++) {
        int same = 1;
        for (int a = m->ndim - 1, r = i; a >= 0; a--) {
            if (naxes && !in[a] && r % m->shape[a] != m->coord[a]) same = 0;
            r /= m->shape[a];
        }
        if (!same) continue;
        if (i != m->index && *other < 0) *other = m->ranks[i];
        if (n < 16 && k + 16 < cap) k += (size_t)snprintf(s + k, cap - k, "%s%d", n ? "," : "", m->ranks[i]);
        else if (n == 16 && k + 5 < cap) k += (size_t)snprintf(s + k, cap - k, ",...");
        n++;
    }
    *n_out = n;
}

/* The deadline passed (wd.mu held, main waits in the call): one line, then
 * MPI_Abort ends every rank. */
static void fire(double waited)
{
    int me = wd.me, world = wd.world;
    char where[256], who[96];
    if (wd.kind == K_SEND || wd.kind == K_RECV) {
        snprintf(where, sizeof where, "%s %s world rank %d", kind_name[wd.kind], wd.kind == K_SEND ? "to" : "from",
                 wd.peer);
        snprintf(who, sizeof who, "rank %d died, failed or never got there", wd.peer);
    } else if (!wd.mesh) {
        snprintf(where, sizeof where, "%s over the %d ranks of MPI_COMM_WORLD", kind_name[wd.kind], world);
        snprintf(who, sizeof who, "another rank died, failed or never got there");
    } else {
        char axes[PD_MAX_MESH_DIMS * 33] = "", ranks[128];
        size_t k = 0;
        int na = wd.naxes ? wd.naxes : wd.mesh->ndim, n, other;
        for (int i = 0; i < na; i++)
            k += (size_t)snprintf(axes + k, sizeof axes - k, "%s%s", i ? "," : "", wd.mesh->names[wd.naxes ? wd.axes[i] : i]);
        group_ranks(ranks, sizeof ranks, wd.mesh, wd.axes, wd.naxes, &n, &other);
        one_line(axes);
        snprintf(where, sizeof where, "%s over mesh axes (%s), world ranks %s", kind_name[wd.kind], axes, ranks);
        if (n == 2) snprintf(who, sizeof who, "rank %d died, failed or never got there", other);
        else snprintf(who, sizeof who, "another rank of the group died, failed or never got there");
    }
    fprintf(stderr,
            "paddle.c: rank %d of %d: %s: %s has waited %.1f s: %s; aborting the job (the limit: pd_dist_set_timeout, "
            "PD_DIST_TIMEOUT)\n",
            me, world, wd.fn ? wd.fn : "dist", where, waited, who);
    fflush(NULL);
    MPI_Abort(MPI_COMM_WORLD, EXIT_TIMEOUT);
    _exit(EXIT_TIMEOUT);
}

static void *watchdog(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wd.mu);
    while (!wd.stop) {
        double t = now_s(), until = t + 0.5; /* idle: look again in half a second */
        if (wd.active && wd.limit > 0) {
            double end = wd.start + wd.limit;
            if (t >= end) fire(t - wd.start);
            if (end < until) until = end;
        }
        struct timespec ts = {(time_t)until, (long)((until - floor(until)) * 1e9)};
        pthread_cond_timedwait(&wd.cv, &wd.mu, &ts);
    }
    pthread_mutex_unlock(&wd.mu);
    return NULL;
}

static void guard_begin(enum kind k, const char *fn, struct pd_mesh *m, const int *axes, int naxes, int peer)
{
    double t = now_s();
    pthread_mutex_lock(&wd.mu);
    wd.active = 1, wd.kind = k, wd.fn = fn, wd.mesh = m, wd.naxes = naxes, wd.peer = peer;
    for (int i = 0; i < naxes; i++) wd.axes[i] = axes[i];
    wd.start = t, wd.limit = timeout_s;
    pthread_mutex_unlock(&wd.mu);
}

static void guard_end(void)
{
    pthread_mutex_lock(&wd.mu);
    wd.active = 0;
    pthread_mutex_unlock(&wd.mu);
}

static void watchdog_stop(void)
{
    pthread_mutex_lock(&wd.mu);
    int running = wd.running;
    wd.stop = 1, wd.running = 0;
    pthread_cond_signal(&wd.cv);
    pthread_mutex_unlock(&wd.mu);
    if (running) pthread_join(wd.th, NULL);
}

/* ---- start and exit ------------------------------------------------------- */
static void red16_free(void);

static void at_exit(int status, void *arg)
{
    (void)arg;
    if (getpid() != mpi_pid) return; /* a forked child exiting: not an MPI process */
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin && (status || out_of_step)) {
        int me = wd.me, world = wd.world;
        if (status)
            fprintf(stderr, "paddle.c: rank %d of %d exits with status %d; aborting the job so that no rank waits for it\n",
                    me, world, status);
        else
            fprintf(stderr, "paddle.c: rank %d of %d exits out of step with the other ranks (%s failed here); aborting the job\n",
                    me, world, out_of_step_why);
        fflush(NULL);
        MPI_Abort(MPI_COMM_WORLD, status ? status : 1);
    }
    if (init && !fin && we_init) {
        red16_free();
        guard_begin(K_FINALIZE, "exit", NULL, NULL, 0, -1);
        MPI_Finalize();
        guard_end();
    }
    watchdog_stop();
}
#ifndef __GLIBC__
static void at_exit0(void) { at_exit(0, NULL); } /* the status is unknown: finalize */
#endif

int pdi_dist_start(const char *fn)
{
    static int started;
    int init = 0;
    MPI_Initialized(&init);
    if (init && started) return PD_OK;
    if (!init) {
        int provided;
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) return pdi_errorf(PD_ERR_IO, "%s: MPI_Init_thread failed (%d)", fn, rc);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        we_init = 1;
    }
    started = 1, mpi_pid = getpid();
    timeout_load();
    MPI_Comm_rank(MPI_COMM_WORLD, &wd.me);
    MPI_Comm_size(MPI_COMM_WORLD, &wd.world);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wd.cv, &ca);
    pthread_condattr_destroy(&ca);
    wd.running = pthread_create(&wd.th, NULL, watchdog, NULL) == 0;
#ifdef __GLIBC__
    on_exit(at_exit, NULL); /* sees the exit status */
#else
    atexit(at_exit0);
#endif
    if (!wd.running) return pdi_errorf(PD_ERR_STATE, "%s: could not start the timeout thread", fn);
    return PD_OK;
}

/* ---- out of step -------------------------------------------------------- */
static int step_check(const char *fn)
{
    if (!out_of_step) return PD_OK;
    return pdi_errorf(PD_ERR_STATE,
                      "%s: rank %d is out of step with the other ranks since %s failed on it; end the job "
                      "(pd_dist_abort, docs/distributed.md)",
                      fn, pd_dist_world_rank(), out_of_step_why);
}

static void set_out_of_step(const char *fn, const char *what)
{
    if (!out_of_step) snprintf(out_of_step_why, sizeof out_of_step_why, "the %s in %s", what, fn);
    out_of_step = 1;
}

void pdi_comm_skip(const struct pdi_comm_on *on, const char *what) { set_out_of_step(on->fn, what); }

/* An MPI error: the status and message (the MPI call, the mesh axes). */
static int mpi_fail(int rc, const struct pdi_comm_on *on, enum kind k, const char *call)
{
    set_out_of_step(on->fn, kind_name[k]);
    char what[200];
    size_t n = (size_t)snprintf(what, sizeof what, "%s", call);
    if (on->mesh) {
        n += (size_t)snprintf(what + n, sizeof what - n, " over mesh axes (");
        int na = on->naxes ? on->naxes : on->mesh->ndim;
        for (int i = 0; i < na && n < sizeof what; i++)
            n += (size_t)snprintf(what + n, sizeof what - n, "%s%s", i ? "," : "", on->mesh->names[on->naxes ? on->axes[i] : i]);
        if (n < sizeof what) snprintf(what + n, sizeof what - n, ")");
        one_line(what);
    }
    return pdi_mpi_error(rc, on->fn, what);
}

/* The communicator of on, after the out-of-step check. */
static int comm_of(const struct pdi_comm_on *on, MPI_Comm *c)
{
    if (step_check(on->fn)) return PD_ERR_STATE;
    if (!on->mesh) return *c = MPI_COMM_WORLD, PD_OK;
    if (on->mesh->index < 0) return pdi_errorf(PD_ERR_STATE, "%s: rank %d is not in the mesh", on->fn, pd_dist_world_rank());
    if (!on->naxes) return *c = on->mesh->comm, PD_OK;
    return pdi_mesh_sub(on->mesh, on->axes, on->naxes, c);
}

static void begin(enum kind k, const struct pdi_comm_on *on) { guard_begin(k, on->fn, on->mesh, on->axes, on->naxes, -1); }

static void count(const struct pdi_comm_on *on, enum pd_comm_kind k, int64_t bytes)
{
    if (!on->quiet) pdi_comm_count(k, bytes);
}

/* bf16 and f16: MPI has no 16-bit float type, so they move as 2-byte
 * elements (half the bytes of f32) and are reduced by operations of ours:
 * each combination of two values in f32, rounded once to the dtype, max and
 * min as Open MPI's (in > inout ? in : inout). With two ranks that is
 * exactly a reduction in f32 of the two pieces rounded to the dtype. */
#define PD_RED16(name, to32, from32, expr)                                                      \
    static void name(void *in, void *inout, int *len, MPI_Datatype *type)                       \
    {                                                                                           \
        (void)type;                                                                             \
        const uint16_t *x = in;                                                                 \
        uint16_t *y = inout;                                                                    \
        for (int i = 0; i < *len; i++) {                                                        \
            float a = to32(x[i]), b = to32(y[i]);                                               \
            y[i] = from32(expr);                                                                \
        }                                                                                       \
    }
PD_RED16(bf16_sum, pdi_bf16_f32, pdi_f32_bf16, a + b)
PD_RED16(bf16_max, pdi_bf16_f32, pdi_f32_bf16, a > b ? a : b)
PD_RED16(bf16_min, pdi_bf16_f32, pdi_f32_bf16, a < b ? a : b)
PD_RED16(f16_sum, pd_f16_to_f32, pd_f32_to_f16, a + b)
PD_RED16(f16_max, pd_f16_to_f32, pd_f32_to_f16, a > b ? a : b)
PD_RED16(f16_min, pd_f16_to_f32, pd_f32_to_f16, a < b ? a : b)
#undef PD_RED16

/* [bf16, f16][sum, max, min], made on first use (after MPI_Init; the
 * library calls MPI from one thread: MPI_THREAD_FUNNELED). */
static MPI_Op red16_ops[2][3];
static int red16_made[2][3];

static MPI_Op red16_op(enum pd_reduce_op op, enum pd_dtype dt)
{
    static MPI_User_function *const fn[2][3] = {{bf16_sum, bf16_max, bf16_min}, {f16_sum, f16_max, f16_min}};
    int t = dt == PD_F16, k = op == PD_RED_MAX ? 1 : op == PD_RED_MIN ? 2 : 0;
    if (!red16_made[t][k]) {
        red16_made[t][k] = 1;
        if (MPI_Op_create(fn[t][k], 1, &red16_ops[t][k]) != MPI_SUCCESS) red16_ops[t][k] = MPI_OP_NULL;
    }
    return red16_ops[t][k];
}

static void red16_free(void) /* before MPI_Finalize */
{
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 3; k++)
            if (red16_made[t][k] && red16_ops[t][k] != MPI_OP_NULL) MPI_Op_free(&red16_ops[t][k]);
}

static MPI_Datatype mpi_type(enum pd_dtype dt)
{
    switch (dt) {
    case PD_BF16: case PD_F16: return MPI_UINT16_T; /* reduced by red16_op */
    case PD_F32: return MPI_FLOAT;
    case PD_F64: return MPI_DOUBLE;
    case PD_I8: return MPI_INT8_T;
    case PD_U8: return MPI_UINT8_T;
    case PD_I16: return MPI_INT16_T;
    case PD_I32: return MPI_INT32_T;
    case PD_I64: return MPI_INT64_T;
    case PD_BOOL: return MPI_C_BOOL;
    default: return MPI_DATATYPE_NULL;
    }
}

static MPI_Op mpi_op(enum pd_reduce_op op, enum pd_dtype dt)
{
    if (dt == PD_BF16 || dt == PD_F16) return red16_op(op, dt);
    if (dt == PD_BOOL) return op == PD_RED_MIN ? MPI_LAND : MPI_LOR;
    return op == PD_RED_MAX ? MPI_MAX : op == PD_RED_MIN ? MPI_MIN : MPI_SUM;
}

int pdi_comm_reducible(enum pd_dtype dt) { return mpi_type(dt) != MPI_DATATYPE_NULL; }

static int check_reduce(const struct pdi_comm_on *on, int64_t count, enum pd_dtype dt)
{
    if (!pdi_comm_reducible(dt))
        return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: MPI does not reduce %s (reduce it in f32)", on->fn, pd_dtype_name(dt));
    return pdi_comm_fits(on->fn, "a reduction", count, "elements") ? PD_OK : PD_ERR_INVALID;
}

/* ---- the calls ------------------------------------------------------------ */
int pdi_comm_allreduce(const struct pdi_comm_on *on, const void *send, void *recv, int64_t n, enum pd_dtype dt,
                       enum pd_reduce_op op)
{
    MPI_Comm c;
    int rc = check_reduce(on, n, dt);
    if (rc || (rc = comm_of(on, &c))) return rc;
    begin(K_ALLREDUCE, on);
    int e = MPI_Allreduce(send ? send : MPI_IN_PLACE, recv, (int)n, mpi_type(dt), mpi_op(op, dt), c);
    guard_end();
    count(on, PD_COMM_ALLREDUCE, n * (int64_t)pd_dtype_size(dt));
    return e == MPI_SUCCESS ? PD_OK : mpi_fail(e, on, K_ALLREDUCE, "MPI_Allreduce");
}

int pdi_comm_allgatherv(const struct pdi_comm_on *on, const void *send, int bytes, void *recv, const int *counts,
                        const int *displs)
{
    MPI_Comm c;
    int rc = comm_of(on, &c);
    if (rc) return rc;
    begin(K_ALLGATHER, on);
    int e = MPI_Allgatherv(send, bytes, MPI_BYTE, recv, counts, displs, MPI_BYTE, c);
    guard_end();
    count(on, PD_COMM_ALLGATHER, bytes);
    return e == MPI_SUCCESS ? PD_OK : mpi_fail(e, on, K_ALLGATHER, "MPI_Allgatherv");
}

int pdi_comm_reduce_scatter(const struct pdi_comm_on *on, const void *send, void *recv, const int *counts,
                            enum pd_dtype dt, enum pd_reduce_op op)
{
    MPI_Comm c;
    int rc = check_reduce(on, 0, dt), n = 0;
    if (rc || (rc = comm_of(on, &c))) return rc;
    MPI_Comm_size(c, &n);
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += counts[i];
    begin(K_REDUCE_SCATTER, on);
    int e = MPI_Reduce_scatter(send, recv, counts, mpi_type(dt), mpi_op(op, dt), c);
    guard_end();
    count(on, PD_COMM_REDUCE_SCATTER, total * (int64_t)pd_dtype_size(dt));
    return e == MPI_SUCCESS ? PD_OK : mpi_fail(e, on, K_REDUCE_SCATTER, "MPI_Reduce_scatter");
}

int pdi_comm_alltoallv(const struct pdi_comm_on *on, const void *send, const int *scounts, const int *sdispls,
                       void *recv, const int *rcounts, const int *rdispls)
{
    MPI_Comm c;
    int rc = comm_of(on, &c), n = 0;
    if (rc) return rc;
    MPI_Comm_size(c, &n);
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += scounts[i];
    begin(K_ALLTOALL, on);
    int e = MPI_Alltoallv(send, scounts, sdispls, MPI_BYTE, recv, rcounts, rdispls, MPI_BYTE, c);
    guard_end();
    count(on, PD_COMM_ALLTOALL, total);
    return e == MPI_SUCCESS ? PD_OK : mpi_fail(e, on, K_ALLTOALL, "MPI_Alltoallv");
}

int pdi_comm_barrier(const struct pdi_comm_on *on)
{
    MPI_Comm c;
    int rc = comm_of(on, &c);
    if (rc) return rc;
    begin(K_BARRIER, on);
    int e = MPI_Barrier(c);
    guard_end();
    return e == MPI_SUCCESS ? PD_OK : mpi_fail(e, on, K_BARRIER, "MPI_Barrier");
}

static int point(const char *fn, void *buf, int bytes, int peer, int tag, enum kind k)
{
    struct pdi_comm_on on = {.fn = fn};
    MPI_Comm c;
    int rc = comm_of(&on, &c);
    if (rc) return rc;
    guard_begin(k, fn, NULL, NULL, 0, peer);
    int e = k == K_SEND ? MPI_Send(buf, bytes, MPI_BYTE, peer, tag, c)
                        : MPI_Recv(buf, bytes, MPI_BYTE, peer, tag, c, MPI_STATUS_IGNORE);
    guard_end();
    if (k == K_SEND) count(&on, PD_COMM_SEND, bytes);
    if (e == MPI_SUCCESS) return PD_OK;
    char what[64];
    snprintf(what, sizeof what, "%s world rank %d", k == K_SEND ? "MPI_Send to" : "MPI_Recv from", peer);
    return mpi_fail(e, &on, k, what);
}

int pdi_comm_send(const char *fn, const void *buf, int bytes, int to, int tag)
{
    return point(fn, (void *)buf, bytes, to, tag, K_SEND);
}
int pdi_comm_recv(const char *fn, void *buf, int bytes, int from, int tag) { return point(fn, buf, bytes, from, tag, K_RECV); }

int pdi_comm_split(const char *fn, struct pd_mesh *m, MPI_Comm parent, int color, int key, MPI_Comm *out)
{
    struct pdi_comm_on on = {.fn = fn, .mesh = m};
    if (step_check(fn)) return PD_ERR_STATE;
    begin(K_SPLIT, &on);
    int e = MPI_Comm_split(parent, color, key, out);
    guard_end();
    if (e != MPI_SUCCESS) return mpi_fail(e, &on, K_SPLIT, "MPI_Comm_split");
    if (*out != MPI_COMM_NULL) MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
    return PD_OK;
}

/* ---- the async all-reduce -------------------------------------------------- */
struct pdi_comm_req {
    MPI_Request r;
    struct pdi_comm_on on;
};

struct pdi_comm_req *pdi_comm_iallreduce(const struct pdi_comm_on *on, const void *send, void *recv, int64_t n,
                                         enum pd_dtype dt, enum pd_reduce_op op)
{
    MPI_Comm c;
    if (check_reduce(on, n, dt) || comm_of(on, &c)) return NULL;
    struct pdi_comm_req *q = pdi_calloc(1, sizeof *q);
    if (!q) {
        pdi_comm_skip(on, kind_name[K_ALLREDUCE]);
        return pdi_error(PD_ERR_NOMEM, "%s: out of memory (all-reduce request)", on->fn);
    }
    q->on = *on;
    int e = MPI_Iallreduce(send ? send : MPI_IN_PLACE, recv, (int)n, mpi_type(dt), mpi_op(op, dt), c, &q->r);
    count(on, PD_COMM_ALLREDUCE, n * (int64_t)pd_dtype_size(dt));
    if (e == MPI_SUCCESS) return q;
    free(q);
    mpi_fail(e, on, K_ALLREDUCE, "MPI_Iallreduce");
    return NULL;
}

int pdi_comm_test(struct pdi_comm_req *q, int *done)
{
    if (!q || !done) return pdi_errorf(PD_ERR_NULL, "comm_test: %s is NULL", q ? "done" : "the request");
    int e = MPI_Test(&q->r, done, MPI_STATUS_IGNORE);
    return e == MPI_SUCCESS ? PD_OK : mpi_fail(e, &q->on, K_ALLREDUCE, "MPI_Test (all-reduce)");
}

int pdi_comm_wait(struct pdi_comm_req *q)
{
    if (!q) return pdi_errorf(PD_ERR_NULL, "comm_wait: the request is NULL");
    begin(K_ALLREDUCE, &q->on);
    int e = MPI_Wait(&q->r, MPI_STATUS_IGNORE);
    guard_end();
    int rc = e == MPI_SUCCESS ? PD_OK : mpi_fail(e, &q->on, K_ALLREDUCE, "MPI_Wait (all-reduce)");
    free(q);
    return rc;
}
#else
int pdi_dist_start(const char *fn) { return pdi_errorf(PD_ERR_STATE, "%s: paddle.c was built without MPI", fn); }
#endif

void pd_dist_abort(int code, const char *msg)
{
    char head[64];
    int init = pd_dist_is_initialized(); /* does not start MPI */
    snprintf(head, sizeof head, "paddle.c: rank %d of %d: ", init ? pd_dist_world_rank() : 0,
             init ? pd_dist_world_size() : 1);
    print_line(head, msg ? msg : "pd_dist_abort", "; aborting the job");
    code = code ? code : 1;
#ifdef PD_HAVE_MPI
    if (init) MPI_Abort(MPI_COMM_WORLD, code);
#endif
    _exit(code);
}
