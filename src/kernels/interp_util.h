/* paddle.c — source positions of interpolate, shared by the reference and
 * the CPU kernels (src/kernels/{ref,cpu}/interp.c).
 *
 * They follow PyTorch's CPU kernels exactly, including their rounding, so
 * that the same output pixel reads the same input pixels:
 *   - nearest (the NCHW forward of PyTorch 1.13, HelperInterpNearest):
 *     src = floor(j * s), s = 1 / scale when the user gave a scale factor,
 *     else in / out, clamped to in - 1; j * s in f32 (f64 for f64 tensors,
 *     rounded to f32 before the floor, as PyTorch's floorf does). PyTorch's
 *     channels-last forward and its backward use nearest_idx instead, which
 *     maps j to j when out == in and to j / 2 when out == 2 in: for a
 *     scale factor that makes out == in but is not 1 its gradient is not
 *     the adjoint of its NCHW forward. Ours is (docs/nn.md);
 *   - bilinear (area_pixel_compute_source_index): out == in maps j to j;
 *     otherwise, with align_corners, src = j (in - 1) / (out - 1), without,
 *     src = (j + 0.5) s - 0.5 clamped at 0 (s as for nearest); i0 = (int)
 *     src, i1 = i0 + 1 unless i0 is the last row, weight of i1 = src - i0.
 *     Computed in f64 for f64 tensors and in f32 for the others, as
 *     PyTorch's opmath type.
 * Every index is clamped into [0, in - 1]: the op's attributes may carry a
 * scale that disagrees with the sizes (the wrapper never makes one), and
 * a kernel must not read outside its input then. For the same reason the
 * factor 1 / scale is capped at in and source positions at in before any
 * conversion to f32 or to an integer (no overflow); a scale that agrees
 * with the sizes (out = floor(in * scale) >= 1) never reaches either cap.
 */
#ifndef PD_KERNELS_INTERP_UTIL_H
#define PD_KERNELS_INTERP_UTIL_H

#include <math.h>
#include <stdint.h>

#include "core/kernel.h"

/* 1 / scale (scale > 0: the user's factor) or in / out, capped at in. */
static inline double pdi_interp_inv_scale(int64_t in, int64_t out, double scale)
{
    double s = scale > 0 ? 1.0 / scale : (double)in / (double)out;
    return s < (double)in ? s : (double)in;
}

/* One axis: for output position j, sources i0[j], i1[j] with weights
 * l0[j], l1[j] (nearest: i1 = i0, l0 = 1, l1 = 0). */
static inline void pdi_interp_axis(int64_t in, int64_t out, int bilinear, int align, double scale, int f64,
                                   int64_t *i0, int64_t *i1, double *l0, double *l1)
{
    for (int64_t j = 0; j < out; j++) {
        if (!bilinear) {
            int64_t i;
            double sd = pdi_interp_inv_scale(in, out, scale), v;
            if (f64) {
                v = sd * (double)j;
            } else {
                float s = scale > 0 ? (float)sd : (float)in / (float)out;
                v = (double)(s * (float)j);
            }
            i = v < (double)in ? (int64_t)floorf((float)v) : in - 1;
            i0[j] = i1[j] = i < in - 1 ? i : in - 1;
            l0[j] = 1;
            l1[j] = 0;
            continue;
        }
        if (out == in) {
            i0[j] = i1[j] = j;
            l0[j] = 1;
            l1[j] = 0;
            continue;
        }
        double src;
        if (f64) {
            double r = align ? (out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0)
                             : pdi_interp_inv_scale(in, out, scale);
            src = align ? r * (double)j : r * ((double)j + 0.5) - 0.5;
            if (src < 0) src = 0;
            if (src > (double)in) src = (double)in;
            int64_t a = (int64_t)src;
            double w = src - (double)a;
            if (a > in - 1) a = in - 1; /* only a scale that disagrees with the sizes gets here */
            i0[j] = a;
            i1[j] = a + (a < in - 1 ? 1 : 0);
            l1[j] = w < 0 ? 0 : w > 1 ? 1 : w;
            l0[j] = 1.0 - l1[j];
        } else {
            float r = align ? (out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f)
                            : (scale > 0 ? (float)pdi_interp_inv_scale(in, out, scale) : (float)in / (float)out);
            double sd = align ? (double)(r * (float)j) : (double)r * ((double)j + 0.5) - 0.5;
            if (sd > (double)in) sd = (double)in;
            float sf = (float)sd;
            if (sf < 0) sf = 0;
            int64_t a = (int64_t)sf;
            float w = sf - (float)a;
            if (a > in - 1) a = in - 1;
            w = w < 0 ? 0 : w > 1 ? 1 : w;
            i0[j] = a;
            i1[j] = a + (a < in - 1 ? 1 : 0);
            l1[j] = w;
            l0[j] = (double)(1.0f - w);
        }
    }
}

/* The tables of both axes in one scratch block: i0h, i1h, i0w, i1w
 * (int64) then l0h, l1h, l0w, l1w (double), for out_h and out_w output
 * positions. */
struct pdi_interp_tables {
    int64_t *i0h, *i1h, *i0w, *i1w;
    double *l0h, *l1h, *l0w, *l1w;
    void *block;
    size_t bytes;
};

static inline size_t pdi_interp_tables_bytes(int64_t oh, int64_t ow)
{
    return (size_t)(2 * (oh + ow)) * (sizeof(int64_t) + sizeof(double));
}

/* in_h, in_w: the forward input's size; oh, ow: the output's. The tables
 * live in block (pdi_interp_tables_bytes(oh, ow) bytes). */
static inline void pdi_interp_tables_fill(struct pdi_interp_tables *t, void *block, const struct pdi_attrs *a,
                                          int64_t in_h, int64_t in_w, int f64)
{
    int64_t oh = a->interpolate.out_h, ow = a->interpolate.out_w;
    int bil = a->interpolate.mode == 1, al = a->interpolate.align_corners != 0;
    int64_t *ip = block;
    t->block = block;
    t->bytes = pdi_interp_tables_bytes(oh, ow);
    t->i0h = ip;
    t->i1h = ip + oh;
    t->i0w = ip + 2 * oh;
    t->i1w = ip + 2 * oh + ow;
    double *dp = (double *)(ip + 2 * (oh + ow));
    t->l0h = dp;
    t->l1h = dp + oh;
    t->l0w = dp + 2 * oh;
    t->l1w = dp + 2 * oh + ow;
    pdi_interp_axis(in_h, oh, bil, al, a->interpolate.scale_h, f64, t->i0h, t->i1h, t->l0h, t->l1h);
    pdi_interp_axis(in_w, ow, bil, al, a->interpolate.scale_w, f64, t->i0w, t->i1w, t->l0w, t->l1w);
}

#endif
