/* paddle.c — tensor checksums: MD5 against the RFC 1321 test vectors, the
 * bitwise and rounded tensor modes, a two-layer MLP step (forward and
 * backward) written twice and compared: identical runs give identical files,
 * a planted error (a "buggy relu" adding 1e-3) is found at that op, a 1e-9
 * perturbation is flagged by bitwise mode and tolerated by rounded mode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pt.h"
#include "core/internal.h"
#include "pd/debug.h"
#include "pd/profiler.h"

static double plant = 0; /* added to relu outputs by the "buggy kernel" */

static void buggy_relu(const struct pdi_call *c, uint64_t seq, void *ctx)
{
    (void)seq;
    (void)ctx;
    if (c->op != PD_OP_relu || plant == 0) return;
    double *p = pd_tensor_data(c->out[0]);
    p[0] += plant;
}

/* One training step of x[8,16] @ w1[16,32] -> relu -> @ w2[32,4] -> mean. */
static int run(const char *path, enum pd_md5_mode mode, int decimals)
{
    struct pd_generator *g = pd_generator_create(7);
    int64_t sx[2] = {8, 16}, s1[2] = {16, 32}, s2[2] = {32, 4};
    struct pd_tensor *x = pd_randn(sx, 2, PD_F64, g), *w1 = pd_randn(s1, 2, PD_F64, g), *w2 = pd_randn(s2, 2, PD_F64, g);
    pd_requires_grad_(w1, 1);
    pd_requires_grad_(w2, 1);
    pd_debug_reset_names();
    int rc = pd_md5_begin(path, mode, decimals);
    if (!rc) {
        int scope_tok = pd_scope_begin();
        struct pd_tensor *h = pd_relu(pd_matmul(x, w1, 0, 0));
        struct pd_tensor *loss = pd_mean(pd_matmul(h, w2, 0, 0), NULL, 0, 0);
        rc = pd_backward(loss, NULL, 0);
        pd_scope_end(scope_tok);
        int rc2 = pd_md5_end();
        if (!rc) rc = rc2;
    }
    pd_tensor_release(x);
    pd_tensor_release(w1);
    pd_tensor_release(w2);
    pd_generator_destroy(g);
    return rc;
}

static int count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    char l[512];
    int n = 0;
    while (f && fgets(l, sizeof l, f))
        if (!needle || strstr(l, needle)) n++;
    if (f) fclose(f);
    return n;
}

int main(void)
{
    /* RFC 1321 appendix A.5 */
    static const char *vec[][2] = {
        {"", "d41d8cd98f00b204e9800998ecf8427e"},
        {"a", "0cc175b9c0f1b6a831c399e269772661"},
        {"abc", "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
        {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"},
        {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
         "57edf4a22be3c955ac49da2e2107b67a"},
    };
    for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++) {
        char hex[33];
        pd_md5_hex(vec[i][0], strlen(vec[i][0]), hex);
        PT_CHECK(!strcmp(hex, vec[i][1]));
    }
    char empty[33]; /* no bytes may come as NULL (was pointer arithmetic on NULL: UBSan in the sweep) */
    pd_md5_hex(NULL, 0, empty);
    PT_CHECK(!strcmp(empty, vec[0][1]));

    /* Tensors: bitwise = MD5 of the raw bytes, also through a strided view;
     * rounded = MD5 of "%.Nf," per element with -0 written as 0. */
    double v[6] = {1.0, -2.5, 3.25, -0.0001, 0.5, 6.0};
    int64_t s23[2] = {2, 3};
    struct pd_tensor *t = pd_from_buffer(v, s23, 2, PD_F64);
    char h1[33], h2[33];
    PT_CHECK(pd_md5_tensor(t, PD_MD5_BITWISE, 0, h1) == PD_OK);
    pd_md5_hex(v, sizeof v, h2);
    PT_CHECK(!strcmp(h1, h2));
    const char *txt = "1.000,-2.500,3.250,0.000,0.500,6.000,";
    PT_CHECK(pd_md5_tensor(t, PD_MD5_ROUNDED, 3, h1) == PD_OK);
    pd_md5_hex(txt, strlen(txt), h2);
    PT_CHECK(!strcmp(h1, h2));
    int perm[2] = {1, 0};
    struct pd_tensor *tt = pd_permute(t, perm, 2); /* strided: rows of the transpose */
    double vt[6] = {1.0, -0.0001, -2.5, 0.5, 3.25, 6.0};
    PT_CHECK(pd_md5_tensor(tt, PD_MD5_BITWISE, 0, h1) == PD_OK);
    pd_md5_hex(vt, sizeof vt, h2);
    PT_CHECK(!strcmp(h1, h2));
    pd_tensor_release(tt);
    /* errors */
    PT_CHECK(pd_md5_tensor(t, PD_MD5_ROUNDED, 40, h1) == PD_ERR_INVALID);
    PT_CHECK(pd_md5_tensor(NULL, PD_MD5_BITWISE, 0, h1) == PD_ERR_NULL);
    PT_CHECK(pd_md5_begin("/nonexistent-dir/x.md5", PD_MD5_BITWISE, 0) == PD_ERR_IO);
    PT_CHECK(strstr(pd_last_error(), "/nonexistent-dir/x.md5") != NULL);
    PT_CHECK(pd_md5_end() == PD_ERR_STATE);
    pd_tensor_release(t);

    /* Two identical runs: identical files, forward and backward ops named. */
    PT_CHECK(run("md5_a.txt", PD_MD5_BITWISE, 0) == PD_OK);
    PT_CHECK(run("md5_b.txt", PD_MD5_BITWISE, 0) == PD_OK);
    struct pd_md5_diff d;
    PT_CHECK(pd_md5_diff("md5_a.txt", "md5_b.txt", &d) == 0);
    int n = count_lines("md5_a.txt", NULL);
    PT_CHECK(n >= 6);
    PT_CHECK(count_lines("md5_a.txt", " matmul_1 out0 f64 [8,32] ") == 1);
    PT_CHECK(count_lines("md5_a.txt", " relu_1 out0 f64 [8,32] ") == 1);
    PT_CHECK(count_lines("md5_a.txt", ".grad/") >= 3); /* ops run by VJPs, named by their GradNode */
    PT_CHECK(count_lines("md5_a.txt", "matmul_2.grad/") >= 1);

    /* A planted error in relu: the first divergence is relu_1's output. */
    PT_CHECK(pdi_observer_add(buggy_relu, NULL) == PD_OK);
    plant = 1e-3;
    PT_CHECK(run("md5_c.txt", PD_MD5_BITWISE, 0) == PD_OK);
    PT_CHECK(pd_md5_diff("md5_a.txt", "md5_c.txt", &d) == 1);
    PT_CHECK(strstr(d.a, " relu_1 out0 ") != NULL && strstr(d.b, " relu_1 out0 ") != NULL);
    PT_CHECK(d.line == 2); /* matmul_1 (line 1), then relu_1 */
    printf("planted 1e-3: line %lld\n  A %s\n  B %s\n", (long long)d.line, d.a, d.b);

    /* 1e-9: bitwise flags it, 4-decimal rounding does not. */
    plant = 1e-9;
    PT_CHECK(run("md5_d.txt", PD_MD5_BITWISE, 0) == PD_OK);
    PT_CHECK(pd_md5_diff("md5_a.txt", "md5_d.txt", &d) == 1);
    PT_CHECK(strstr(d.b, " relu_1 out0 ") != NULL);
    PT_CHECK(run("md5_e.txt", PD_MD5_ROUNDED, 4) == PD_OK);
    plant = 0;
    PT_CHECK(run("md5_f.txt", PD_MD5_ROUNDED, 4) == PD_OK);
    PT_CHECK(pd_md5_diff("md5_e.txt", "md5_f.txt", &d) == 0);
    pdi_observer_remove(buggy_relu, NULL);

    /* A truncated file: the divergence is where it ends. */
    FILE *f = fopen("md5_g.txt", "w");
    FILE *a = fopen("md5_a.txt", "r");
    char l[512];
    for (int i = 0; i < 2 && a && fgets(l, sizeof l, a); i++) fputs(l, f);
    if (a) fclose(a);
    fclose(f);
    PT_CHECK(pd_md5_diff("md5_a.txt", "md5_g.txt", &d) == 1);
    PT_CHECK(d.line == 3 && d.b[0] == 0 && d.a[0] != 0);
    PT_CHECK(pd_md5_diff("md5_a.txt", "missing.txt", &d) == PD_ERR_IO);
    PT_CHECK(strstr(pd_last_error(), "missing.txt") != NULL);

    /* Files that are not checksum dumps are refused (PD_ERR_INVALID), even
     * two identical ones, or one whose bad line comes after the first
     * difference; lines written by pd_md5_begin in any form pass. */
    static const char *good[] = {
        "0 matmul_1 out0 f32 [2,2] 0123456789abcdef0123456789abcdef\n",
        "0 a name/with spaces out12 bf16 [] meta\n",
        "0 x out0 - [] -", /* no final newline */
    };
    static const char *bad[] = {
        "hello world\n",
        "1 matmul_1 out0 f32 [2,2] 0123456789abcdef0123456789abcdef\n", /* seq is not the line */
        "0 matmul_1 out0 f32 [2,2] 0123456789ABCDEF0123456789abcdef\n", /* upper case */
        "0 matmul_1 out0 f32 [2,2] 0123456789abcdef\n",
        "0 matmul_1 outx f32 [2,2] 0123456789abcdef0123456789abcdef\n",
        "0 matmul_1 out0 f32 2,2 0123456789abcdef0123456789abcdef\n",
        "0 out0 f32 [2,2] 0123456789abcdef0123456789abcdef\n", /* no name */
        "0 matmul_1 out0 f32 [2,2] 0123456789abcdef0123456789abcdef \n",
        "\n",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        f = fopen("md5_h.txt", "w");
        fputs(good[i], f);
        fclose(f);
        PT_CHECK(pd_md5_diff("md5_h.txt", "md5_h.txt", &d) == 0);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        f = fopen("md5_h.txt", "w");
        fputs(bad[i], f);
        fclose(f);
        PT_CHECK(pd_md5_diff("md5_h.txt", "md5_h.txt", &d) == PD_ERR_INVALID);
        PT_CHECK(strstr(pd_last_error(), "md5_h.txt") && strstr(pd_last_error(), "line 1 is not a checksum line"));
        PT_CHECK(pd_md5_diff("md5_a.txt", "md5_h.txt", &d) == PD_ERR_INVALID);
    }
    /* a good file followed by a bad line, after the first difference */
    f = fopen("md5_h.txt", "w");
    a = fopen("md5_c.txt", "r");
    int k = 0;
    while (a && fgets(l, sizeof l, a)) fputs(l, f), k++;
    if (a) fclose(a);
    fprintf(f, "%d not a checksum line\n", k);
    fclose(f);
    PT_CHECK(pd_md5_diff("md5_a.txt", "md5_h.txt", &d) == PD_ERR_INVALID);
    PT_CHECK(strstr(pd_last_error(), "is not a checksum line") != NULL);
    /* a line longer than any pd_md5_begin writes */
    f = fopen("md5_h.txt", "w");
    fputs("0 ", f);
    for (int i = 0; i < 2000; i++) fputc('n', f);
    fputs(" out0 f32 [] -\n", f);
    fclose(f);
    PT_CHECK(pd_md5_diff("md5_h.txt", "md5_h.txt", &d) == PD_ERR_INVALID);
    PT_DONE();
}
