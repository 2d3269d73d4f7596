/* paddle.c — the sweep's cases generated from the op table (tests/sweep/sweep.c).
 *
 * Nothing here names an op: the base calls come from a search over generic
 * layouts, and the cases from the row's columns (n_in, kind, flags, dtypes)
 * and its attribute descriptors (type and declared range, src/ops/ops.def).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

#define MAXIN 8
#define LIMIT 0x1p46 /* elements of the largest tensor (src/core/tensor.c) */

/* ---- base-call candidates -------------------------------------------- */
static const int64_t shapes[][5] = {
    /* ndim, dims */
    {2, 2, 3}, {4, 2, 4, 4, 4}, {4, 2, 2, 1, 1}, {1, 3}, {0}, {3, 2, 3, 4},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))
#define N_LAYOUTS 4 /* all S; input 1 = [S0]; input 1 = [S1]; input n-2 = S without its last dim */
#define N_DTV 7     /* all f32, all i64, all bool, input 0 i64 / bool, input 1 i64 / bool (rest f32) */
#define N_ATTRV 4   /* defaults; zero I64 -> 2; lists = S; lists = [0] */
#define N_NIN 6

enum kind { K_NULL, K_DTYPES, K_DTYPE1, K_SHAPE, K_ATTR, K_ZERO, K_HUGE, K_VIEW, K_ALIAS, K_DATA };
static const char *kind_name[] = {"null", "dtypes", "dtype", "shape", "attr", "zero-size", "huge", "view", "alias", "data"};

struct sw_case {
    int16_t op;
    uint8_t kind;
    int8_t a0, a1;
    uint8_t must;
    int64_t iv;
    double fv;
};
static struct sw_case *cases;
static int n_cases, cap_cases;

/* One call, fully described. */
struct spec {
    int op, n_in, n_out;
    int ndim[MAXIN];
    int64_t shape[MAXIN][PD_MAX_DIMS];
    enum pd_dtype dt[MAXIN];
    int view[MAXIN]; /* 0 plain, 1 permuted, 2 sliced, 3 expanded, 4 NULL, 5 huge (overflow), 6 huge (over the limit) */
    int data[MAXIN]; /* 0 the 0/1 pattern, 1.. extremes */
    int alias[MAXIN]; /* >= 0: the same tensor as that input */
    int inplace;
    struct pdi_attrs a;
};

static int key_input(const struct pdi_opdef *d) { return d->n_in == 0 ? -1 : (d->flags & PDI_F_KEY_IN1) ? 1 : 0; }
/* DT_NONE (views): no kernel, every dtype passes */
static int in_class(const struct pdi_opdef *d, int dt)
{
    return dt >= 0 && dt < PD_DTYPE_COUNT && (!d->dtypes || (d->dtypes >> dt & 1u));
}

static int nin_of(const struct pdi_opdef *d, int c) { return d->n_in >= 0 ? d->n_in : c + 1; }
static int nout_of(const struct pdi_opdef *d) { return d->n_out >= 0 ? d->n_out : 1; }

static void attr_variant(int op, int v, const int64_t *s, int nd, struct pdi_attrs *a)
{
    pdi_attrs_default((enum pd_op)op, a);
    if (v == 0) return;
    int n;
    const struct pdi_attr_desc *d = pdi_op_attrs((enum pd_op)op, &n);
    for (int i = 0; i < n; i++) {
        char *f = (char *)a + d[i].offset;
        if (v == 1 && d[i].type == PDI_AT_I64 && *(int64_t *)f == 0) *(int64_t *)f = 2;
        if (v == 2 && d[i].type == PDI_AT_INTS && d[i].range.kind != PDI_RK_AXES) {
            struct pdi_ints *l = (struct pdi_ints *)f;
            l->n = nd;
            for (int k = 0; k < nd; k++) l->v[k] = s[k];
        }
        if (v == 3 && d[i].type == PDI_AT_INTS) *(struct pdi_ints *)f = (struct pdi_ints){1, {0}};
    }
}

/* The base spec of candidate (n_in choice, shape, layout, dtype vector, attr variant). */
static int base_spec(int op, int nin_c, int sh, int lay, int dtv, int av, struct spec *p)
{
    const struct pdi_opdef *d = &pdi_ops[op];
    memset(p, 0, sizeof *p);
    p->op = op;
    p->n_in = nin_of(d, nin_c);
    p->n_out = nout_of(d);
    int nd = (int)shapes[sh][0];
    const int64_t *s = &shapes[sh][1];
    for (int i = 0; i < p->n_in; i++) {
        p->ndim[i] = nd;
        memcpy(p->shape[i], s, sizeof(int64_t) * (size_t)nd);
        p->dt[i] = PD_F32;
        p->alias[i] = -1;
    }
    if (lay == 1 || lay == 2) {
        if (p->n_in < 2 || nd < lay) return -1;
        p->ndim[1] = 1;
        p->shape[1][0] = s[lay - 1];
    }
    if (lay == 3) {
        if (p->n_in < 3 || nd < 1) return -1;
        p->ndim[p->n_in - 2] = nd - 1;
    }
    static const int dtv_in[N_DTV] = {-1, -1, -1, 0, 0, 1, 1};
    static const enum pd_dtype dtv_dt[N_DTV] = {PD_F32, PD_I64, PD_BOOL, PD_I64, PD_BOOL, PD_I64, PD_BOOL};
    if (dtv_in[dtv] < 0) {
        for (int i = 0; i < p->n_in; i++) p->dt[i] = dtv_dt[dtv];
    } else {
        if (dtv_in[dtv] >= p->n_in) return -1;
        p->dt[dtv_in[dtv]] = dtv_dt[dtv];
    }
    if (p->n_in == 0 && (nin_c || lay || dtv)) return -1; /* creation: one candidate per shape and attrs */
    attr_variant(op, av, s, nd, &p->a);
    /* an op that writes its output into input 0 (copy_, fill_) runs in place */
    p->inplace = (d->flags & PDI_F_INPLACE) && p->n_out >= 1;
    return 0;
}

/* ---- building and running a spec ------------------------------------ */
static void store_int(void *p, enum pd_dtype dt, int64_t v)
{
    if (pd_dtype_is_float(dt)) pdi_store(p, dt, (double)v);
    else pdi_store_int(p, dt, v); /* integers wrap, bool is v != 0 */
}

static void fill(struct pd_tensor *t, int data)
{
    enum pd_dtype dt = pd_tensor_dtype(t);
    int64_t n = pd_tensor_numel(t);
    char *p = pd_tensor_data(t);
    size_t es = pd_dtype_size(dt);
    int fl = pd_dtype_is_float(dt);
    for (int64_t i = 0; i < n; i++) {
        char *e = p + (size_t)i * es;
        switch (data) {
        case 0: store_int(e, dt, i % 2); break;
        case 1: if (fl) pdi_store(e, dt, NAN); else store_int(e, dt, -1); break;
        case 2: if (fl) pdi_store(e, dt, i % 2 ? INFINITY : -INFINITY); else store_int(e, dt, i % 2 ? INT64_MAX : INT64_MIN); break;
        case 3: store_int(e, dt, -1 - i); break;
        default: if (fl) pdi_store(e, dt, i % 2 ? 1e30 : -1e30); else store_int(e, dt, 1000000007); break;
        }
    }
}

static struct pd_tensor *make_input(const struct spec *p, int i)
{
    int nd = p->ndim[i];
    const int64_t *s = p->shape[i];
    enum pd_dtype dt = p->dt[i];
    int64_t b[PD_MAX_DIMS];
    memcpy(b, s, sizeof(int64_t) * (size_t)nd);
    struct pd_tensor *t;
    switch (p->view[i]) {
    case 4: return NULL;
    case 1: /* permuted: the reversed shape, permuted back */
        if (nd >= 2) {
            int perm[PD_MAX_DIMS];
            for (int k = 0; k < nd; k++) b[k] = s[nd - 1 - k], perm[k] = nd - 1 - k;
            t = pd_empty(b, nd, dt);
            if (!t) return NULL;
            fill(t, p->data[i]);
            return pd_permute(t, perm, nd);
        }
        break;
    case 2: /* sliced: every other row of a taller tensor */
        if (nd >= 1) {
            b[0] = s[0] * 2;
            t = pd_empty(b, nd, dt);
            if (!t) return NULL;
            fill(t, p->data[i]);
            return pd_slice(t, 0, 0, b[0], 2);
        }
        break;
    case 3: /* expanded: one row repeated (stride 0) */
        if (nd >= 1) {
            b[0] = 1;
            t = pd_empty(b, nd, dt);
            if (!t) return NULL;
            fill(t, p->data[i]);
            return pd_expand(t, s, nd);
        }
        break;
    case 5: case 6: { /* a scalar expanded past int64 (5) or past the element limit (6) */
        int64_t h[3] = {1LL << 32, 1LL << 32, 1LL << 32}, one[3] = {1, 1, 1};
        if (p->view[i] == 6) h[0] = 1LL << 24, h[1] = 1LL << 24, h[2] = 2;
        t = pd_empty(one, 3, dt);
        if (!t) return NULL;
        fill(t, 0);
        return pd_expand(t, h, 3);
    }
    default: break;
    }
    t = pd_empty(s, nd, dt);
    if (t) fill(t, p->data[i]);
    return t;
}

/* Builds the inputs and dispatches. Returns the status; outs receive the
 * results (in the current scope). *has_null: some input is NULL. */
static int call_spec(const struct spec *p, struct pd_tensor **outs, int *has_null)
{
    struct pd_tensor *in[MAXIN];
    *has_null = 0;
    for (int i = 0; i < p->n_in; i++) {
        in[i] = p->alias[i] >= 0 ? in[p->alias[i]] : make_input(p, i);
        if (!in[i]) *has_null = 1;
    }
    struct pdi_call c = {.op = (enum pd_op)p->op, .n_in = p->n_in, .n_out = p->n_out, .in = in, .out = outs};
    c.a = p->a;
    c.inplace = p->inplace;
    pd_clear_error();
    return pdi_dispatch(&c);
}

/* ---- probing --------------------------------------------------------- */
static int n_probe_per_op(void) { return N_NIN * N_SHAPES * N_LAYOUTS * N_DTV * N_ATTRV; }

static void probe_decode(int k, int *op, int *nin, int *sh, int *lay, int *dtv, int *av)
{
    int per = n_probe_per_op();
    *op = k / per;
    k %= per;
    *nin = k % N_NIN;
    k /= N_NIN;
    *lay = k % N_LAYOUTS;
    k /= N_LAYOUTS;
    *sh = k % N_SHAPES;
    k /= N_SHAPES;
    *dtv = k % N_DTV;
    *av = k / N_DTV;
}

int sw_run_probe_needed(int k)
{
    int op, nin, sh, lay, dtv, av;
    probe_decode(k, &op, &nin, &sh, &lay, &dtv, &av);
    struct spec p;
    return !sw_shm->base[op].found && !(pdi_ops[op].n_in >= 0 && nin) && !base_spec(op, nin, sh, lay, dtv, av, &p);
}

int sw_run_probe(int k)
{
    int op, nin, sh, lay, dtv, av;
    probe_decode(k, &op, &nin, &sh, &lay, &dtv, &av);
    const struct pdi_opdef *d = &pdi_ops[op];
    if (sw_shm->base[op].found || (d->n_in >= 0 && nin)) return 0;
    struct spec p;
    if (base_spec(op, nin, sh, lay, dtv, av, &p)) return 0;
    struct pd_tensor *outs[4];
    int hn;
    if (call_spec(&p, outs, &hn) == 0)
        sw_shm->base[op] = (struct sw_base){1, nin, sh, lay, dtv, av};
    return 1;
}

void sw_probe_all(void)
{
    int n = PD_OP_COUNT * n_probe_per_op();
    int *sel = malloc(sizeof *sel * (size_t)n), ns = 0;
    if (!sel) exit(2);
    for (int k = 0; k < n; k++) {
        if (sw_opts.only_op && strcmp(pdi_ops[k / n_probe_per_op()].name, sw_opts.only_op)) continue;
        sel[ns++] = k;
    }
    sw_shm->phase = 0;
    sw_run_all(sel, ns);
    free(sel);
    for (int op = 0; op < PD_OP_COUNT; op++) sw_shm->n_nobase += !sw_shm->base[op].found;
}

void sw_report_bases(void)
{
    int printed = 0;
    for (int op = 0; op < PD_OP_COUNT; op++) {
        if (sw_shm->base[op].found) continue;
        if (sw_opts.only_op && strcmp(pdi_ops[op].name, sw_opts.only_op)) continue;
        if (!printed++) printf("no base call found (invalid-by-construction cases only):");
        printf(" %s", pdi_ops[op].name);
    }
    if (printed) printf("\n");
}

static int spec_of_base(int op, struct spec *p)
{
    const struct sw_base *b = &sw_shm->base[op];
    if (b->found) return base_spec(op, b->n_in, b->shape, b->layout, b->dtv, b->attrv, p);
    /* no base: the defaults on the first candidate, so that the invalid
     * cases still run */
    return base_spec(op, 0, 0, 0, 0, 0, p);
}

/* ---- the oracle: what must fail --------------------------------------- */
static int axis_bad(int64_t v, int nd)
{
    int n = nd == 0 ? 1 : nd;
    return v < -n || v >= n;
}

/* Is value (iv or fv) outside the declared range of attribute d? ndim: input 0's. */
static int range_bad(const struct pdi_attr_desc *d, int64_t iv, double fv, int nd)
{
    const struct pdi_attr_range *r = &d->range;
    switch (d->type) {
    case PDI_AT_BOOL: return iv != 0 && iv != 1;
    case PDI_AT_DTYPE: return iv < 0 || iv >= PD_DTYPE_COUNT;
    case PDI_AT_F64:
        if (r->kind != PDI_RK_REAL) return 0;
        if (isnan(fv) || ((r->flags & PDI_RF_FINITE) && isinf(fv))) return 1;
        if ((r->flags & PDI_RF_LO_OPEN) ? fv <= r->flo : fv < r->flo) return 1;
        return (r->flags & PDI_RF_HI_OPEN) ? fv >= r->fhi : fv > r->fhi;
    default:
        if (r->kind == PDI_RK_INT) return iv < r->lo || iv > r->hi;
        if (r->kind == PDI_RK_AXIS || r->kind == PDI_RK_AXES) return axis_bad(iv, nd < 0 ? PD_MAX_DIMS : nd);
        return 0;
    }
}


/* ---- generating the cases -------------------------------------------- */
static void add(int op, int kind, int a0, int a1, int64_t iv, double fv, int must)
{
    if (n_cases == cap_cases) {
        cap_cases = cap_cases ? cap_cases * 2 : 4096;
        cases = realloc(cases, sizeof *cases * (size_t)cap_cases);
        if (!cases) exit(2);
    }
    cases[n_cases++] = (struct sw_case){(int16_t)op, (uint8_t)kind, (int8_t)a0, (int8_t)a1, (uint8_t)must, iv, fv};
}

static int broadcastable(const struct spec *p)
{
    int64_t out[PD_MAX_DIMS];
    int no = 0;
    for (int i = 0; i < p->n_in; i++) {
        int64_t t[PD_MAX_DIMS];
        int nt;
        if (i == 0) {
            memcpy(out, p->shape[0], sizeof(int64_t) * (size_t)p->ndim[0]);
            no = p->ndim[0];
            continue;
        }
        if (pdi_broadcast_shapes(out, no, p->shape[i], p->ndim[i], t, &nt)) return 0;
        memcpy(out, t, sizeof t);
        no = nt;
    }
    return 1;
}

/* A shape variant of input i (v: 0 last dim + 1, 1 a leading 2, 2 the first
 * dim dropped, 3 [1], 4 reversed, 5 0-d). Returns -1 when not applicable. */
static int shape_variant(struct spec *p, int i, int v)
{
    int nd = p->ndim[i];
    int64_t *s = p->shape[i];
    switch (v) {
    case 0: if (!nd) return -1; s[nd - 1] += 1; return 0;
    case 1: if (nd == PD_MAX_DIMS) return -1; memmove(s + 1, s, sizeof(int64_t) * (size_t)nd); s[0] = 2; p->ndim[i]++; return 0;
    case 2: if (!nd) return -1; memmove(s, s + 1, sizeof(int64_t) * (size_t)(nd - 1)); p->ndim[i]--; return 0;
    case 3: p->ndim[i] = 1; s[0] = 1; return 0;
    case 4: for (int k = 0; k < nd / 2; k++) { int64_t t = s[k]; s[k] = s[nd - 1 - k]; s[nd - 1 - k] = t; } return 0;
    default: if (!nd) return -1; p->ndim[i] = 0; return 0;
    }
}

static const int64_t i64_vals[] = {0, -1, 1, 2, 3, INT64_MIN, INT64_MIN + 1, INT64_MAX, INT64_MAX - 1,
                                   1LL << 31, (1LL << 31) - 1, 1LL << 32, -(1LL << 32), 1LL << 53, 1LL << 62};
static const double f64_vals[] = {0.0, -0.0, -1.0, 1.0, 0.5, 2.0, DBL_MAX, -DBL_MAX, DBL_MIN, 1e300, -1e300,
                                  0x1p63, -0x1p63, 0x1p64, 1e-300, NAN, INFINITY, -INFINITY};
#define NV(a) ((int)(sizeof a / sizeof a[0]))

/* The attribute cases of op (base p). */
static void gen_attrs(int op, const struct spec *p)
{
    const struct pdi_opdef *d = &pdi_ops[op];
    int n, nd = p->n_in ? p->ndim[0] : -1;
    const struct pdi_attr_desc *ad = pdi_op_attrs((enum pd_op)op, &n);
    for (int f = 0; f < n; f++) {
        const struct pdi_attr_desc *a = &ad[f];
        switch (a->type) {
        case PDI_AT_F64:
            for (int v = 0; v < NV(f64_vals); v++) add(op, K_ATTR, f, 0, 0, f64_vals[v], range_bad(a, 0, f64_vals[v], nd));
            break;
        case PDI_AT_INTS: {
            /* sub 0: length iv; 1: ndim copies of iv; 2: [iv]; 3: [0, iv] */
            static const int64_t lens[] = {-1, PDI_MAX_ATTR_INTS + 1, INT64_MIN, INT64_MAX, 0, PDI_MAX_ATTR_INTS};
            for (int v = 0; v < NV(lens); v++) add(op, K_ATTR, f, 0, lens[v], 0, lens[v] < 0 || lens[v] > PDI_MAX_ATTR_INTS);
            int64_t extra[] = {nd, -nd - 1, -nd, nd - 1};
            for (int v = 0; v < NV(i64_vals) + 4; v++) {
                int64_t x = v < NV(i64_vals) ? i64_vals[v] : extra[v - NV(i64_vals)];
                int bad = range_bad(a, x, 0, nd);
                int len = nd > 0 ? nd : 1;
                /* too many elements for a created or expanded shape */
                int huge = (d->flags & PDI_F_CREATION || d->kind == PDI_KIND_VIEW) && !strcmp(a->name, "shape") &&
                           x > 0 && pow((double)x, len) > LIMIT;
                int rep = a->range.kind == PDI_RK_AXES && len > 1; /* ndim copies repeat an axis */
                add(op, K_ATTR, f, 1, x, 0, bad || huge || rep);
                add(op, K_ATTR, f, 2, x, 0, bad || (huge && len == 1 && 0));
                int rep3 = a->range.kind == PDI_RK_AXES && !bad && (nd == 0 ? 1 : (x < 0 ? x + nd : x) == 0);
                add(op, K_ATTR, f, 3, x, 0, bad || range_bad(a, 0, 0, nd) || rep3);
            }
            break;
        }
        case PDI_AT_DTYPE:
            for (int64_t v = -1; v <= PD_DTYPE_COUNT; v++) {
                int bad = range_bad(a, v, 0, nd) || (d->n_in == 0 && !in_class(d, (int)v));
                add(op, K_ATTR, f, 0, v, 0, bad);
            }
            add(op, K_ATTR, f, 0, INT64_MIN, 0, 1);
            add(op, K_ATTR, f, 0, INT64_MAX, 0, 1);
            break;
        default: {
            int64_t extra[] = {nd, -nd - 1, -nd, nd - 1, a->range.lo == INT64_MIN ? 0 : a->range.lo - 1,
                               a->range.hi == INT64_MAX ? 0 : a->range.hi + 1};
            int ne = a->range.kind == PDI_RK_INT ? 6 : 4;
            for (int v = 0; v < NV(i64_vals) + ne; v++) {
                int64_t x;
                if (v < NV(i64_vals)) x = i64_vals[v];
                else if (v - NV(i64_vals) == 4 && a->range.lo == INT64_MIN) continue;
                else if (v - NV(i64_vals) == 5 && a->range.hi == INT64_MAX) continue;
                else x = extra[v - NV(i64_vals)];
                add(op, K_ATTR, f, 0, x, 0, range_bad(a, x, 0, nd));
            }
        }
        }
    }
}

int sw_build_cases(void)
{
    n_cases = 0;
    for (int op = 0; op < PD_OP_COUNT; op++) {
        const struct pdi_opdef *d = &pdi_ops[op];
        struct spec p;
        if (spec_of_base(op, &p)) continue;
        int ki = key_input(d);
        for (int i = 0; i < p.n_in; i++) add(op, K_NULL, i, 0, 0, 0, 1);
        /* every dtype combination (up to three inputs), else one input at a time */
        if (p.n_in > 0 && p.n_in <= 3) {
            int64_t combos = 1;
            for (int i = 0; i < p.n_in; i++) combos *= PD_DTYPE_COUNT;
            for (int64_t c = 0; c < combos; c++) {
                int64_t x = c;
                int kd = 0;
                for (int i = 0; i < p.n_in; i++, x /= PD_DTYPE_COUNT)
                    if (i == ki) kd = (int)(x % PD_DTYPE_COUNT);
                add(op, K_DTYPES, 0, 0, c, 0, ki >= 0 && !in_class(d, kd));
            }
        } else {
            for (int i = 0; i < p.n_in; i++)
                for (int t = 0; t < PD_DTYPE_COUNT; t++) add(op, K_DTYPE1, i, t, 0, 0, i == ki && !in_class(d, t));
        }
        /* shapes: must fail when a broadcasting op's inputs do not broadcast */
        for (int i = 0; i < p.n_in; i++)
            for (int v = 0; v < 6; v++) {
                struct spec q = p;
                if (shape_variant(&q, i, v)) continue;
                add(op, K_SHAPE, i, v, 0, 0, d->kind == PDI_KIND_BROADCAST && !broadcastable(&q));
            }
        gen_attrs(op, &p);
        for (int i = -1; i < p.n_in; i++) add(op, K_ZERO, i, 0, 0, 0, 0);
        for (int i = 0; i < p.n_in; i++) {
            add(op, K_HUGE, i, 5, 0, 0, 1);
            add(op, K_HUGE, i, 6, 0, 0, 1);
            for (int v = 1; v <= 3; v++)
                add(op, K_VIEW, i, v, 0, 0, v == 3 && i == 0 && (d->flags & PDI_F_INPLACE) && p.ndim[0] > 0 && p.shape[0][0] > 1);
            for (int v = 1; v <= 4; v++) add(op, K_DATA, i, v, 0, 0, 0);
        }
        if (p.n_in > 0) {
            /* an in-place call needs an output to write into input 0 */
            int no_inplace = d->kind == PDI_KIND_VIEW || p.n_out == 0;
            add(op, K_ALIAS, 0, 0, 0, 0, no_inplace);
            for (int i = 1; i < p.n_in; i++) add(op, K_ALIAS, i, 1, 0, 0, 0);
            if (p.n_in > 1) add(op, K_ALIAS, 1, 2, 0, 0, no_inplace);
        }
    }
    sw_shm->n_op_cases = n_cases;
    return n_cases + sw_api_count();
}

/* Applies case k to its op's base spec. */
static void case_spec(const struct sw_case *c, struct spec *p)
{
    spec_of_base(c->op, p);
    int n;
    const struct pdi_attr_desc *ad = pdi_op_attrs((enum pd_op)c->op, &n);
    switch (c->kind) {
    case K_NULL: p->view[c->a0] = 4; break;
    case K_DTYPES: {
        int64_t x = c->iv;
        for (int i = 0; i < p->n_in; i++, x /= PD_DTYPE_COUNT) p->dt[i] = (enum pd_dtype)(x % PD_DTYPE_COUNT);
        break;
    }
    case K_DTYPE1: p->dt[c->a0] = (enum pd_dtype)c->a1; break;
    case K_SHAPE: shape_variant(p, c->a0, c->a1); break;
    case K_ATTR: {
        const struct pdi_attr_desc *a = &ad[c->a0];
        char *f = (char *)&p->a + a->offset;
        if (a->type == PDI_AT_F64) *(double *)f = c->fv;
        else if (a->type != PDI_AT_INTS) *(int64_t *)f = c->iv;
        else {
            struct pdi_ints *l = (struct pdi_ints *)f;
            int nd = p->n_in ? p->ndim[0] : 0;
            memset(l, 0, sizeof *l);
            if (c->a1 == 0) l->n = c->iv;
            else if (c->a1 == 1) {
                l->n = nd > 0 ? nd : 1;
                for (int k = 0; k < l->n; k++) l->v[k] = c->iv;
            } else if (c->a1 == 2) {
                l->n = 1;
                l->v[0] = c->iv;
            } else {
                l->n = 2;
                l->v[1] = c->iv;
            }
        }
        break;
    }
    case K_ZERO:
        for (int i = 0; i < p->n_in; i++)
            if ((c->a0 < 0 || c->a0 == i) && p->ndim[i] > 0) p->shape[i][0] = 0;
        break;
    case K_HUGE: p->view[c->a0] = c->a1; break;
    case K_VIEW: p->view[c->a0] = c->a1; break;
    case K_DATA: p->data[c->a0] = c->a1; break;
    case K_ALIAS:
        if (c->a1 == 0 || c->a1 == 2) p->inplace = 1;
        if (c->a1 >= 1) p->alias[c->a0] = 0;
        break;
    }
}

void sw_run_op_case(int k)
{
    const struct sw_case *c = &cases[k];
    struct spec p;
    case_spec(c, &p);
    struct pd_tensor *outs[4] = {0};
    int hn;
    int rc = call_spec(&p, outs, &hn);
    sw_judge(k, rc, c->must, hn, outs, p.n_out);
}

int sw_case_is_op(int k, const char *name)
{
    return k < sw_shm->n_op_cases && !strcmp(pdi_ops[cases[k].op].name, name);
}

void sw_describe(int k, char *buf, size_t n)
{
    if (sw_shm->phase == 0) {
        int op, nin, sh, lay, dtv, av;
        probe_decode(k, &op, &nin, &sh, &lay, &dtv, &av);
        snprintf(buf, n, "probe %s (n_in choice %d, shape %d, layout %d, dtypes %d, attrs %d)", pdi_ops[op].name, nin,
                 sh, lay, dtv, av);
        return;
    }
    if (k >= sw_shm->n_op_cases) {
        sw_describe_api(k - sw_shm->n_op_cases, buf, n);
        return;
    }
    const struct sw_case *c = &cases[k];
    struct spec p;
    case_spec(c, &p);
    size_t pos = 0;
#define PUT(...) pos += (size_t)snprintf(buf + pos, pos < n ? n - pos : 0, __VA_ARGS__)
    PUT("%s [%s%s]", pdi_ops[c->op].name, kind_name[c->kind], c->must ? ", must fail" : "");
    if (c->kind == K_ATTR) {
        int na;
        const struct pdi_attr_desc *a = &pdi_op_attrs((enum pd_op)c->op, &na)[c->a0];
        if (a->type == PDI_AT_F64) PUT(" %s=%g", a->name, c->fv);
        else if (a->type == PDI_AT_INTS) PUT(" %s form %d value %lld", a->name, c->a1, (long long)c->iv);
        else PUT(" %s=%lld", a->name, (long long)c->iv);
    }
    if (p.inplace) PUT(" in-place");
    for (int i = 0; i < p.n_in && pos < n; i++) {
        static const char *vn[] = {"", " permuted", " sliced", " expanded", " NULL", " huge (overflow)", " huge (limit)"};
        char sb[PDI_SHAPE_BUF];
        PUT(" in%d=%s%s%s", i, pd_dtype_name(p.dt[i]), pdi_shape_str(p.shape[i], p.ndim[i], sb, sizeof sb), vn[p.view[i]]);
        if (p.data[i]) PUT(" data%d", p.data[i]);
        if (p.alias[i] >= 0) PUT(" =in%d", p.alias[i]);
    }
#undef PUT
}
