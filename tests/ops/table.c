/* paddle.c — checks of the op table itself (run by test_backend_ops after
 * the rows):
 *   - the dtypes column is what the reference backend registers, exactly,
 *     and the CPU backend registers nothing outside it;
 *   - every attribute set prints, and survives a JSON round trip, from its
 *     defaults;
 *   - the composite ops named below have a decomposition, and every
 *     decomposition was checked on at least one harness row.
 */
#include <cjson/cJSON.h>
#include <pd/memory.h>
#include <stdio.h>
#include <string.h>

#include "ops/harness.h"

/* Ops that are compositions of primitives in every framework we follow;
 * each must carry a decomposition in the table. */
static const char *const composites[] = {
    "rms_norm", "layer_norm", "softmax", "log_softmax", "gelu", "silu", "swiglu",
    "rope",     "sdpa",       "logsumexp", "softplus", "mish", "var", "std",
};

/* 1: a listed composite without a decomposition fails the check. */
static const int composites_required = 1;

static unsigned registered(enum pdi_backend be, enum pd_op op)
{
    unsigned m = 0;
    for (int d = 0; d < PD_DTYPE_COUNT; d++)
        if (pdi_kernel_lookup(be, op, (enum pd_dtype)d)) m |= 1u << d;
    return m;
}

static int check_dtypes(void)
{
    int bad = 0;
    for (int op = 0; op < PD_OP_COUNT; op++) {
        const struct pdi_opdef *d = &pdi_ops[op];
        unsigned ref = registered(PDI_BACKEND_REF, (enum pd_op)op), cpu = registered(PDI_BACKEND_CPU, (enum pd_op)op);
        if (ref != d->dtypes) {
            printf("FAIL table: %s: the reference backend registers dtypes 0x%x, the table says 0x%x\n", d->name, ref,
                   d->dtypes);
            bad++;
        }
        if (cpu & ~d->dtypes) {
            printf("FAIL table: %s: the CPU backend registers dtypes 0x%x outside the table's 0x%x\n", d->name, cpu,
                   d->dtypes);
            bad++;
        }
    }
    return bad;
}

static int check_attrs(void)
{
    int bad = 0;
    for (int op = 0; op < PD_OP_COUNT; op++) {
        struct pdi_attrs a, b;
        pdi_attrs_default((enum pd_op)op, &a);
        char s1[512], s2[512];
        pdi_attrs_format((enum pd_op)op, &a, s1, sizeof s1);
        cJSON *j = pdi_attrs_to_json((enum pd_op)op, &a);
        if (!j || pdi_attrs_validate((enum pd_op)op, &a) || pdi_attrs_from_json((enum pd_op)op, j, &b)) {
            printf("FAIL table: %s: default attributes do not validate or round-trip: %s\n", pdi_ops[op].name,
                   pd_last_error());
            bad++;
        } else if (strcmp(s1, pdi_attrs_format((enum pd_op)op, &b, s2, sizeof s2))) {
            printf("FAIL table: %s: JSON round trip changed %s into %s\n", pdi_ops[op].name, s1, s2);
            bad++;
        }
        cJSON_Delete(j);
    }
    return bad;
}

/* Under allocation failure the JSON of an op's attributes is either NULL or
 * whole: every allocation fails in turn, for ops whose attributes hold int
 * lists (one allocation per element). */
static int check_attrs_oom(void)
{
    int bad = 0;
    for (int op = 0; op < PD_OP_COUNT; op++) {
        struct pdi_attrs a;
        pdi_attrs_default((enum pd_op)op, &a);
        int n, want = 0;
        const struct pdi_attr_desc *d = pdi_op_attrs((enum pd_op)op, &n);
        for (int i = 0; i < n; i++) {
            want++;
            if (d[i].type != PDI_AT_INTS) continue;
            struct pdi_ints *l = (struct pdi_ints *)((char *)&a + d[i].offset);
            l->n = 3; /* one allocation per element: these may fail too */
            for (int k = 0; k < 3; k++) l->v[k] = k;
            want += 3;
        }
        for (int64_t nth = 1; nth < 64; nth++) {
            pd_fault_inject(nth, 0);
            cJSON *j = pdi_attrs_to_json((enum pd_op)op, &a);
            int hit = pd_fault_hits() > 0;
            pd_fault_inject(0, 0);
            int got = 0;
            for (const cJSON *c = j ? j->child : NULL; c; c = c->next) got += 1 + (cJSON_IsArray(c) ? cJSON_GetArraySize(c) : 0);
            if (j && got != want) {
                printf("FAIL table: %s: attributes JSON incomplete when allocation %lld fails\n", pdi_ops[op].name,
                       (long long)nth);
                bad++;
            }
            cJSON_Delete(j);
            if (!hit) break;
        }
    }
    return bad;
}

static int check_composites(const unsigned char *checked)
{
    int bad = 0;
    for (size_t i = 0; i < sizeof composites / sizeof *composites; i++) {
        int op = pdi_op_lookup(composites[i]);
        if (op < 0) continue; /* not an op of this build */
        if (!pdi_op_has_decomp((enum pd_op)op)) {
            printf("%s table: composite op %s has no decomposition\n", composites_required ? "FAIL" : "note",
                   composites[i]);
            bad += composites_required;
        }
    }
    for (int op = 0; op < PD_OP_COUNT; op++) {
        if (pdi_op_has_decomp((enum pd_op)op) && !checked[op]) {
            printf("FAIL table: the decomposition of %s was not checked on any row\n", pdi_ops[op].name);
            bad++;
        }
    }
    return bad;
}

int opt_check_table(const unsigned char *decomp_checked)
{
    pdi_kernels_init();
    int bad = check_dtypes() + check_attrs() + check_attrs_oom() + check_composites(decomp_checked);
    printf("op table: %d ops, %d problems\n", PD_OP_COUNT, bad);
    return bad;
}
