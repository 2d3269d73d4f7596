/* paddle.c — no op crashes, aborts or reads out of bounds on bad input.
 *
 * Every op of the table is called through the dispatcher with random
 * attributes (axes, sizes, flags, dtypes — in and out of range) and inputs
 * of assorted ranks, shapes (empty and 0-d included) and dtypes. Each call
 * must either succeed with a well-formed tensor or fail with a message; the
 * sanitizer build (make test-asan) turns any out-of-bounds access into a
 * failure. NULL inputs must propagate as NULL.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "pt.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)(next_u64() % (uint64_t)(hi - lo + 1)); }

static const enum pd_dtype dtypes[] = {PD_F32, PD_F64, PD_BF16, PD_I64, PD_I32, PD_BOOL, PD_U8};

static struct pd_tensor *random_tensor(void)
{
    int nd = (int)rnd(0, 4);
    int64_t shape[4];
    for (int i = 0; i < nd; i++) shape[i] = rnd(0, 4) == 0 ? 0 : rnd(1, 5);
    enum pd_dtype dt = dtypes[rnd(0, (int64_t)(sizeof dtypes / sizeof dtypes[0]) - 1)];
    struct pd_tensor *t = pd_empty(shape, nd, dt);
    if (!t) return NULL;
    /* small integers, valid as indices for small dims, negative sometimes */
    int64_t n = pd_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) pdi_store((char *)pd_tensor_data(t) + i * (int64_t)pd_dtype_size(dt), dt, (double)rnd(-1, 4));
    if (nd >= 2 && rnd(0, 2) == 0) t = pd_transpose(t, 0, 1);
    return t;
}

/* The attributes draw from their own stream, so that the inputs are the
 * same whatever the op's attribute set looks like. */
static uint64_t typed_state = 0x2545f4914f6cdd1dull;
static int64_t trnd(int64_t lo, int64_t hi)
{
    typed_state ^= typed_state << 13;
    typed_state ^= typed_state >> 7;
    typed_state ^= typed_state << 17;
    return lo + (int64_t)(typed_state % (uint64_t)(hi - lo + 1));
}

static void random_attrs(enum pd_op op, struct pdi_attrs *a)
{
    memset(a, 0, sizeof *a);
    /* the op's typed set: integers small (the first sometimes large), lists
     * short (sometimes long), flags and dtypes sometimes out of range */
    int n;
    const struct pdi_attr_desc *d = pdi_op_attrs(op, &n);
    for (int k = 0; k < n; k++) {
        char *f = (char *)a + d[k].offset;
        switch (d[k].type) {
        case PDI_AT_F64: *(double *)f = (double)trnd(-4, 4) * 0.5; break;
        case PDI_AT_INTS: {
            struct pdi_ints *l = (struct pdi_ints *)f;
            l->n = trnd(0, 9) == 0 ? trnd(7, PDI_MAX_ATTR_INTS) : trnd(0, 6);
            for (int64_t i = 0; i < l->n; i++) l->v[i] = trnd(-4, 6);
            break;
        }
        default: *(int64_t *)f = k == 0 && trnd(0, 4) == 0 ? trnd(-100000, 100000) : trnd(-3, 5); break;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc > 1) { /* another seed */
        rng_state = strtoull(argv[1], NULL, 0) | 1;
        typed_state = (rng_state * 0x9e3779b97f4a7c15ull) | 1;
    }
    int calls = 0, ok = 0;
    for (int op = 0; op < PD_OP_COUNT; op++) {
        const struct pdi_opdef *d = &pdi_ops[op];
        for (int trial = 0; trial < 400; trial++) {
            int scope_tok = pd_scope_begin();
            int n_in = d->n_in >= 0 ? d->n_in : (int)rnd(1, 4);
            int n_out = d->n_out >= 0 ? d->n_out : 1;
            struct pd_tensor *in[8], *out[4];
            for (int i = 0; i < n_in; i++) in[i] = random_tensor();
            /* sometimes reuse input 0's shape so that more calls get past infer */
            if (n_in > 1 && rnd(0, 1))
                for (int i = 1; i < n_in; i++)
                    if (in[0] && rnd(0, 1)) in[i] = pd_cast(pd_ones_like(in[0]), pd_tensor_dtype(in[i] ? in[i] : in[0]));
            struct pdi_call c = {.op = (enum pd_op)op, .n_in = n_in, .n_out = n_out, .in = in, .out = out};
            random_attrs((enum pd_op)op, &c.a);
            pd_clear_error();
            int rc = pdi_dispatch(&c);
            calls++;
            if (rc == 0) {
                ok++;
                for (int j = 0; j < n_out; j++) {
                    PT_CHECK(out[j] != NULL);
                    if (out[j] && !(pd_tensor_numel(out[j]) >= 0 && pd_tensor_ndim(out[j]) <= PD_MAX_DIMS))
                        printf("op %s: malformed output (ndim %d, numel %lld)\n", d->name, pd_tensor_ndim(out[j]), (long long)pd_tensor_numel(out[j]));
                    if (out[j]) PT_CHECK(pd_tensor_numel(out[j]) >= 0 && pd_tensor_ndim(out[j]) <= PD_MAX_DIMS);
                }
            } else if (rc != PD_ERR_NULL) {
                /* a failure always says why, and names the op */
                const char *msg = pd_last_error();
                if (!(msg && strlen(msg) > 5)) printf("op %s: failed without a message (rc %d)\n", d->name, rc);
                PT_CHECK(msg && strlen(msg) > 5);
            }
            /* NULL anywhere gives NULL */
            if (n_in > 0) {
                in[rnd(0, n_in - 1)] = NULL;
                struct pdi_call c2 = c;
                PT_CHECK(pdi_dispatch(&c2) != 0);
            }
            pd_scope_end(scope_tok);
        }
    }
    printf("%d calls, %d succeeded, %d rejected\n", calls, ok, calls - ok);
    PT_CHECK(ok > 0);
    PT_DONE();
}
