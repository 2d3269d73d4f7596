/* paddle.c — data-parallel gradient reduction in buckets, overlapped with
 * backward (docs/distributed.md "Data parallelism").
 *
 * Without it, a replicated parameter's Partial gradient is all-reduced
 * when backward hands it to the leaf: one blocking all-reduce per
 * parameter, after the whole backward. pd_dp_attach marks the parameters
 * so that autograd keeps their gradients Partial on the data axis, and
 * registers a hook on each: autograd runs a leaf's hooks as soon as its
 * last contribution arrived (src/autograd/engine.c), the hook copies the
 * local piece into its bucket, and a bucket whose parameters all arrived
 * starts a non-blocking all-reduce while backward goes on with earlier
 * layers. Buckets are filled in reverse parameter order (backward's order)
 * up to bucket_bytes each. pd_dp_finish (also called by the optimizer's
 * step and by gradient clipping) waits and replaces every gradient with
 * the reduced one, Replicate on the axis: the sum of the ranks' pieces,
 * which is the gradient of the single-process loss when the loss is a
 * mean over the global batch. The reduced gradients are views of their
 * bucket's storage (bucket_storage): nothing is copied after the
 * all-reduce.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_internal.h"

struct dp_bucket {
    struct pd_tensor *t; /* its storage (1-d, count elements), made at its first write of a step */
    char *buf;           /* t's bytes */
    int64_t count; /* elements */
    enum pd_dtype dt;
    int n_params, n_arrived, started;
    int64_t t0; /* started at (the profiler's clock) */
    struct pdi_comm_req *req; /* started, not waited yet (src/dist/comm.c) */
};

struct dp_param {
    struct pd_dp *dp;
    struct pd_tensor *p;    /* a reference */
    struct pd_tensor *prev; /* its gradient before this backward (accumulation), a reference */
    int bucket, arrived;
    int64_t off, count;
};

struct pd_dp {
    struct pd_mesh *mesh;
    int axis;
    MPI_Comm comm;
    int n, nb;
    struct dp_param *ps;
    struct dp_bucket *bs;
    struct pd_dp *next; /* the attached reducers (pdi_dp_finish_all) */
    int rc;             /* a hook's failure this step, returned by pd_dp_finish */
    char err[256];      /* its message */
};

static struct pd_dp *attached;

#ifdef PD_HAVE_MPI
/* Buckets started and not completed, over every reducer; read and written
 * on MPI's thread only (MPI_THREAD_FUNNELED: backward calls
 * pdi_dp_progress_all only from a graph with distributed nodes). */
static int in_flight;

/* The profiler's view: the all-reduce was in flight until now. */
static void bucket_done(struct dp_bucket *b)
{
    pdi_profiler_comm("all-reduce (data-parallel gradients)", b->t0, pdi_now_ns(),
                      (double)b->count * (double)pd_dtype_size(b->dt), 0);
}

/* Waits a started bucket's all-reduce (a completed one returns at once)
 * and forgets the request. */
static int bucket_wait(struct dp_bucket *b)
{
    int rc = pdi_comm_wait(b->req);
    b->req = NULL;
    in_flight--;
    return rc;
}

/* Through the communication layer: counted, and its wait has the timeout. */
static int start_bucket(struct pd_dp *dp, struct dp_bucket *b)
{
    if (b->started) return PD_OK;
    b->started = 1;
    b->t0 = pdi_now_ns();
    struct pdi_comm_on on = pdi_comm_on_axes("dp", dp->mesh, &dp->axis, 1);
    b->req = pdi_comm_iallreduce(&on, NULL, b->buf, b->count, b->dt, PD_RED_SUM);
    in_flight += b->req != NULL;
    return b->req ? PD_OK : pd_last_status();
}

/* Drive the started all-reduces (MPI progresses inside MPI calls). */
static void progress(struct pd_dp *dp)
{
    for (int i = 0; i < dp->nb; i++)
        if (dp->bs[i].req) {
            int done = 0;
            pdi_comm_test(dp->bs[i].req, &done);
            if (done) {
                bucket_done(&dp->bs[i]);
                bucket_wait(&dp->bs[i]);
            }
        }
}

void pdi_dp_progress_all(void)
{
    if (!in_flight) return;
    for (struct pd_dp *dp = attached; dp; dp = dp->next) progress(dp);
}
#else
static int start_bucket(struct pd_dp *dp, struct dp_bucket *b) { (void)dp, (void)b; return PD_ERR_STATE; }
static void progress(struct pd_dp *dp) { (void)dp; }
void pdi_dp_progress_all(void) {}
#endif

/* A bucket's storage for this step: a tensor of the library's allocator.
 * pd_dp_finish hands it over, the gradients become views of it (no copy
 * of the reduced sums), and the next step's first write makes a new one,
 * which the caching allocator serves from the block the last step's
 * gradients gave back when the optimizer cleared them. */
static int bucket_storage(struct dp_bucket *b)
{
    if (b->t) return PD_OK;
    int tok = pd_scope_begin();
    int64_t n = b->count;
    b->t = pdi_empty_eager(&n, 1, b->dt); /* bytes under any executor */
    if (b->t) pd_tensor_retain(b->t);
    pd_scope_end(tok);
    if (!b->t) return pd_last_status();
    b->buf = pd_tensor_data(b->t);
    return PD_OK;
}

static void bucket_drop(struct dp_bucket *b)
{
    pd_tensor_release(b->t);
    b->t = NULL, b->buf = NULL;
}

/* A hook cannot fail backward: its NULL keeps the gradient, as a user's
 * hook's does. The step's first failure is kept with its message, and
 * pd_dp_finish (which the optimizer's step calls) returns it. */
static struct pd_tensor *hook_failed(struct pd_dp *dp)
{
    if (!dp->rc) {
        int st = pd_last_status();
        dp->rc = st ? st : PD_ERR_STATE;
        snprintf(dp->err, sizeof dp->err, "%s", pd_last_error());
    }
    return NULL;
}

static struct pd_tensor *dp_hook(struct pd_tensor *g, void *ctx)
{
    struct dp_param *q = ctx;
    struct pd_dp *dp = q->dp;
    struct dp_bucket *b = &dp->bs[q->bucket];
    if (q->arrived || b->started) {
        pdi_errorf(PD_ERR_STATE, "dp: a second gradient for one parameter before pd_dp_finish (one backward per "
                   "step, or call pd_dp_finish between them)");
        return hook_failed(dp);
    }
    const struct pdi_dist *dg = g->dist;
    if (bucket_storage(b)) return hook_failed(dp);
    char *dst = b->buf + q->off * (int64_t)pd_dtype_size(b->dt);
    int rep = dg && dg->pl[dp->axis].kind != PD_PARTIAL; /* already whole: count it once */
    if (rep && dp->mesh->coord[dp->axis] != 0) {
        memset(dst, 0, (size_t)(q->count * (int64_t)pd_dtype_size(b->dt)));
    } else {
        int tok = pd_scope_begin();
        struct pd_tensor *l = dg ? pd_dtensor_local(g) : g;
        int rc = l && pd_tensor_numel(l) == q->count ? pd_to_buffer(l, dst, b->dt) /* its own message */
                                                     : pdi_errorf(PD_ERR_STATE, "dp: a gradient's piece does not "
                                                                  "match its parameter's");
        pd_scope_end(tok);
        if (rc) return hook_failed(dp);
    }
    if (q->p->grad) { /* accumulated over several backwards: the earlier sum is reduced already */
        pd_tensor_retain(q->p->grad);
        q->prev = q->p->grad;
    }
    q->arrived = 1;
    if (++b->n_arrived == b->n_params && start_bucket(dp, b)) return hook_failed(dp);
    progress(dp);
    return g; /* .grad holds it (Partial) until pd_dp_finish */
}

struct pd_dp *pd_dp_attach(struct pd_tensor *const *params, int n, struct pd_mesh *m, const char *axis,
                           size_t bucket_bytes)
{
    const char *fn = "dp_attach";
    if (!params || !m || !axis) return pdi_error(PD_ERR_NULL, "%s: params, mesh or axis is NULL", fn);
    if (n < 1) return pdi_error(PD_ERR_INVALID, "%s: %d parameters", fn, n);
    int ax = pd_mesh_axis(m, axis);
    if (ax < 0) return pdi_error(PD_ERR_INVALID, "%s: the mesh has no axis named %.32s", fn, axis);
    if (bucket_bytes == 0) bucket_bytes = PD_DP_BUCKET_DEFAULT;
    for (int i = 0; i < n; i++) {
        const struct pd_tensor *p = params[i];
        const struct pdi_dist *d = p ? p->dist : NULL;
        if (!d || d->mesh != m || !p->requires_grad || p->grad_fn)
            return pdi_error(PD_ERR_INVALID, "%s: parameter %d is not a distributed leaf on the mesh that requires grad",
                             fn, i);
        if (d->pl[ax].kind != PD_REPLICATE)
            return pdi_error(PD_ERR_INVALID, "%s: parameter %d is not replicated on axis %s", fn, i, m->names[ax]);
        if (p->dtype != PD_F32 && p->dtype != PD_F64)
            return pdi_error(PD_ERR_UNSUPPORTED, "%s: parameter %d is %s (f32 or f64)", fn, i, pd_dtype_name(p->dtype));
        if (d->dp_axis) return pdi_error(PD_ERR_INVALID, "%s: parameter %d is attached already", fn, i);
    }
#ifdef PD_HAVE_MPI
    struct pd_dp *dp = pdi_calloc(1, sizeof *dp);
    if (!dp) return NULL;
    dp->ps = pdi_calloc((size_t)n, sizeof *dp->ps);
    dp->bs = pdi_calloc((size_t)n, sizeof *dp->bs);
    if (!dp->ps || !dp->bs || pdi_mesh_sub(m, &ax, 1, &dp->comm)) goto fail;
    dp->mesh = m, dp->axis = ax, dp->n = n;
    pd_mesh_retain(m);
    /* buckets in backward order: the last parameters first */
    for (int i = n - 1; i >= 0; i--) {
        struct dp_param *q = &dp->ps[i];
        const struct pdi_dist *d = params[i]->dist;
        q->dp = dp, q->p = params[i];
        pd_tensor_retain(params[i]);
        q->count = pdi_numel(d->lshape, d->ndim);
        struct dp_bucket *b = dp->nb ? &dp->bs[dp->nb - 1] : NULL;
        if (!b || b->dt != params[i]->dtype ||
            (b->count + q->count) * (int64_t)pd_dtype_size(b->dt) > (int64_t)bucket_bytes) {
            b = &dp->bs[dp->nb++];
            b->dt = params[i]->dtype;
        }
        q->bucket = (int)(b - dp->bs);
        q->off = b->count;
        b->count += q->count;
        b->n_params++;
    }
    for (int i = 0; i < dp->nb; i++) {
        struct dp_bucket *b = &dp->bs[i];
        if (!pdi_comm_fits(fn, "a bucket", b->count, "elements")) goto fail;
    }
    for (int i = 0; i < n; i++) {
        if (pd_tensor_register_hook(params[i], dp_hook, &dp->ps[i])) goto fail;
        ((struct pdi_dist *)params[i]->dist)->dp_axis = ax + 1;
    }
    dp->next = attached;
    attached = dp;
    return dp;
fail:
    pd_dp_detach(dp);
    return NULL;
#else
    return pdi_error(PD_ERR_STATE, "%s: paddle.c was built without MPI", fn);
#endif
}

int pd_dp_finish(struct pd_dp *dp)
{
    if (!dp) return pdi_errorf(PD_ERR_NULL, "dp_finish: NULL");
#ifdef PD_HAVE_MPI
    int any = 0, rc = dp->rc, hook_rc = dp->rc;
    for (int i = 0; i < dp->n; i++) any |= dp->ps[i].arrived;
    if (!any && !rc) return PD_OK; /* no backward since the last finish */
    /* a bucket some of whose parameters got no gradient: zeros for them */
    for (int i = 0; i < dp->n && rc == PD_OK; i++) {
        struct dp_param *q = &dp->ps[i];
        struct dp_bucket *b = &dp->bs[q->bucket];
        if (!q->arrived && !b->started && (rc = bucket_storage(b)) == PD_OK)
            memset(b->buf + q->off * (int64_t)pd_dtype_size(b->dt), 0, (size_t)(q->count * (int64_t)pd_dtype_size(b->dt)));
    }
    for (int i = 0; i < dp->nb && rc == PD_OK; i++) rc = start_bucket(dp, &dp->bs[i]);
    for (int i = 0; i < dp->nb && rc == PD_OK; i++) {
        if (!dp->bs[i].req) continue; /* completed during backward */
        int64_t t0 = pdi_now_ns();
        rc = bucket_wait(&dp->bs[i]);
        bucket_done(&dp->bs[i]);
        pdi_profiler_comm("wait for data-parallel gradients", t0, pdi_now_ns(), 0, 1);
    }
    int tok = pd_scope_begin(), gtok = pd_no_grad_begin();
    for (int i = 0; i < dp->n && rc == PD_OK; i++) {
        struct dp_param *q = &dp->ps[i];
        if (!q->arrived) continue;
        struct dp_bucket *b = &dp->bs[q->bucket];
        const struct pdi_dist *d = q->p->dist;
        struct pd_tensor *l = pd_slice(b->t, 0, q->off, q->off + q->count, 1); /* a view: the sums stay where they are */
        l = l ? pd_view(l, d->lshape, d->ndim) : NULL;
        struct pd_tensor *gr = l ? pdi_dist_wrap(l, d->mesh, d->gshape, d->ndim, d->pl) : NULL;
        if (gr && q->prev) gr = pd_add(q->prev, gr);
        if (!gr) { rc = pd_last_status(); break; }
        pd_tensor_retain(gr);
        pd_tensor_release(q->p->grad);
        q->p->grad = gr;
    }
    pd_grad_mode_end(gtok);
    pd_scope_end(tok);
    for (int i = 0; i < dp->n; i++) {
        pd_tensor_release(dp->ps[i].prev);
        dp->ps[i].prev = NULL;
        dp->ps[i].arrived = 0;
    }
    /* after an error, nothing may still write a bucket reused by the next
     * backward: wait what is in flight (the communication layer fails at
     * once once out of step) */
    for (int i = 0; i < dp->nb; i++) {
        if (dp->bs[i].req) bucket_wait(&dp->bs[i]);
        dp->bs[i].started = 0, dp->bs[i].n_arrived = 0;
        bucket_drop(&dp->bs[i]); /* the gradients hold it; the next step makes another */
    }
    dp->rc = 0;
    if (hook_rc) return pdi_errorf(hook_rc, "%s", dp->err);
    return rc;
#else
    return pdi_errorf(PD_ERR_STATE, "dp_finish: paddle.c was built without MPI");
#endif
}

/* Before the optimizer reads gradients (pd_optimizer_step, clipping). */
int pdi_dp_finish_all(void)
{
    int rc = PD_OK;
    for (struct pd_dp *dp = attached; dp && rc == PD_OK; dp = dp->next) rc = pd_dp_finish(dp);
    return rc;
}

void pd_dp_detach(struct pd_dp *dp)
{
    if (!dp) return;
    for (struct pd_dp **p = &attached; *p; p = &(*p)->next)
        if (*p == dp) {
            *p = dp->next;
            break;
        }
#ifdef PD_HAVE_MPI
    for (int i = 0; dp->bs && i < dp->nb; i++)
        if (dp->bs[i].req) bucket_wait(&dp->bs[i]);
#endif
    for (int i = 0; dp->ps && i < dp->n; i++) {
        struct dp_param *q = &dp->ps[i];
        if (!q->p) continue;
        pdi_tensor_remove_hook(q->p, dp_hook, q);
        ((struct pdi_dist *)q->p->dist)->dp_axis = 0;
        pd_tensor_release(q->prev);
        pd_tensor_release(q->p);
    }
    for (int i = 0; dp->bs && i < dp->nb; i++) bucket_drop(&dp->bs[i]);
    free(dp->ps);
    free(dp->bs);
    pd_mesh_release(dp->mesh);
    free(dp);
}
