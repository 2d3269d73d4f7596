/* paddle.c — oneDNN plumbing shared by the CPU linalg kernels
 * (cpu/linalg.c defines it; cpu/conv.c uses it). Private to those files.
 *
 * Primitives are created once per distinct problem (the key: a POD struct
 * the caller zero-fills before setting its fields, compared bytewise) and
 * kept in a small LRU cache; a key whose primitive oneDNN does not
 * implement on this CPU is remembered too (entry->prim == NULL), so the
 * caller's fallback costs no repeated creation attempts.
 */
#ifndef PD_CPU_LINALG_DNNL_H
#define PD_CPU_LINALG_DNNL_H

#include <oneapi/dnnl/dnnl.h>

#include "core/kernel.h"

#define PDI_DNNL_KEY_MAX 512
#define PDI_DNNL_MAX_ARGS 8

#define PDI_DNNL_SLOTS 4

struct pdi_dnnl_entry {
    unsigned char key[PDI_DNNL_KEY_MAX];
    size_t klen;
    int refs;                      /* under the cache mutex */
    uint64_t stamp;                /* last use, for LRU eviction */
    dnnl_primitive_desc_t pd;      /* NULL for an "unimplemented" entry */
    dnnl_primitive_t prim;         /* NULL for an "unimplemented" entry */
    size_t scratch;                /* user scratchpad bytes */
    /* Per argument slot: the caller's (plain) layout, and when the primitive
     * chose another one (format_tag_any), a reorder between the two
     * (user -> primitive for inputs, primitive -> user for outputs). */
    dnnl_memory_desc_t md[PDI_DNNL_SLOTS];
    dnnl_memory_desc_t imd[PDI_DNNL_SLOTS];
    dnnl_primitive_t reorder[PDI_DNNL_SLOTS];
    dnnl_primitive_desc_t reorder_pd[PDI_DNNL_SLOTS];
    size_t reorder_scratch[PDI_DNNL_SLOTS];
};

/* Fills e->pd (created with pdi_dnnl_user_scratchpad attrs) and, per slot it
 * uses, e->md (and e->imd, or pdi_dnnl_layout); the cache creates e->prim.
 * Returns a oneDNN status. */
typedef dnnl_status_t (*pdi_dnnl_build_fn)(const void *key, struct pdi_dnnl_entry *e);

/* Slot `slot` takes the layout the primitive chose for query `what` (e.g.
 * dnnl_query_src_md); a reorder from/to the plain layout user is made when
 * they differ. output: the slot is written by the primitive. */
dnnl_status_t pdi_dnnl_layout(struct pdi_dnnl_entry *e, int slot, const dnnl_memory_desc_t *user, dnnl_query_t what,
                              int output);

dnnl_engine_t pdi_dnnl_engine(void); /* NULL if oneDNN has no CPU engine */
/* A referenced entry (release with pdi_dnnl_put), or NULL with an error. */
struct pdi_dnnl_entry *pdi_dnnl_get(const void *key, size_t klen, pdi_dnnl_build_fn build);
void pdi_dnnl_put(struct pdi_dnnl_entry *e);

struct pdi_dnnl_arg {
    int arg;                       /* DNNL_ARG_* */
    int slot;                      /* layout slot of the entry */
    int output;
    void *ptr;                     /* data in the slot's user layout */
};
/* Reorders inputs, executes on this thread's stream with a scratchpad of
 * its own, reorders outputs back; waits. */
int pdi_dnnl_run(struct pdi_dnnl_entry *e, int n, const struct pdi_dnnl_arg *args);
/* Attributes with the user scratchpad mode (destroy after use). */
dnnl_primitive_attr_t pdi_dnnl_user_scratchpad(void);
/* dnnl_data_type_undef for dtypes oneDNN does not take. */
dnnl_data_type_t pdi_dnnl_dt(enum pd_dtype dt);

/* Copy (and convert) any view into another of the same shape. */
void pdi_linalg_copy(const struct pd_kview *dst, const struct pd_kview *src);
/* out: a contiguous view of like's shape over buf, of dtype dt. */
void pdi_linalg_contig_view(const struct pd_kview *like, enum pd_dtype dt, void *buf, struct pd_kview *out);
/* A contiguous copy of v in dtype dt (pdi_alloc'd; NULL with an error);
 * out views it. Free with pdi_linalg_unpack_free(buf, out). */
void *pdi_linalg_pack(const struct pd_kview *v, enum pd_dtype dt, struct pd_kview *out);
void pdi_linalg_unpack_free(void *buf, const struct pd_kview *v); /* NULL buf: no-op */

/* Hand-written AVX2/FMA f32 kernels (cpu/linalg_gemm.c). C[M, N] (row
 * stride ldc, unit columns) = op(A) op(B), beta = 0; op(A) element (i, q)
 * at a[i*ars + q*acs], op(B) element (q, j) at b[q*brs + j*bcs]; nt: most
 * threads to use (1 inside a parallel region). Return 1 when done, 0 when
 * not applicable (caller falls back to dnnl_sgemm), < 0 on error.
 * pdi_sgemv takes M <= PDI_GEMV_MAX_M and op(B) with a unit stride. */
#define PDI_GEMV_MAX_M 4
int pdi_sgemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t ars, int64_t acs, const float *b, int64_t brs,
              int64_t bcs, float *c, int64_t ldc, int nt);
int pdi_sgemv(int64_t m, int64_t n, int64_t k, const float *a, int64_t ars, int64_t acs, const float *b, int64_t brs,
              int64_t bcs, float *c, int64_t ldc, int nt);

/* Registers the convolution and pooling kernels (cpu/conv.c). */
void pdi_register_cpu_conv(void);

#endif
