/* paddle.c — live-tensor tracking (docs/debugging.md, "Leaks"):
 * pd_debug_track_live / pd_debug_report_live name the tensors still alive
 * by the line that made them, and PD_DEBUG_LEAKS=1 reports them at exit
 * (a child process of this test leaks one on purpose). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/debug.h"
#include "pt.h"

/* The report of what is alive now, in a malloc'd string (*n: the count). */
static char *report(int64_t *n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    *n = pd_debug_report_live(f);
    fclose(f);
    return buf;
}

static int has(const char *s, const char *sub)
{
    if (s && strstr(s, sub)) return 1;
    printf("missing \"%s\" in:\n%s\n", sub, s ? s : "(null)");
    return 0;
}

/* The child: PD_DEBUG_LEAKS=1 is set; leak the product of a chained call. */
__attribute__((noinline)) static int child(void)
{
    struct pd_tensor *a = pd_ones((int64_t[]){3}, 1, PD_F32), *b = pd_ones((int64_t[]){3}, 1, PD_F32);
    pd_tensor_release(pd_add(pd_mul(a, b), a));
    int line = __LINE__ - 1;
    pd_tensor_release(a);
    pd_tensor_release(b);
    printf("leak line %d\n", line);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "child")) return child();

    /* 1. tracking from C: tensors made outside a scope are listed by site */
    struct pd_tensor *before = pd_ones((int64_t[]){2}, 1, PD_F32); /* made before tracking: never listed */
    PT_CHECK(pd_debug_track_live(1) == 0);
    struct pd_tensor *x = pd_arange(0, 4, 1, PD_F32);
    int line_x = __LINE__ - 1;
    struct pd_tensor *m = pd_mul(x, x), *y = pd_add(m, x);
    int line_my = __LINE__ - 1;
    int64_t n;
    char *r = report(&n), want[96];
    PT_CHECK(n == 3);
    PT_CHECK(has(r, "3 tensors still alive"));
    snprintf(want, sizeof want, "1 made at test_debug_leaks.c:%d (main):", line_x);
    PT_CHECK(has(r, want));
    snprintf(want, sizeof want, "2 made at test_debug_leaks.c:%d (main):", line_my);
    PT_CHECK(has(r, want));
    PT_CHECK(has(r, "mul_") && has(r, "f32 [4]"));
    free(r);
    /* a scope owns what it makes: nothing is left after its end */
    int tok = pd_scope_begin();
    pd_add(pd_mul(x, y), m);
    pd_scope_end(tok);
    r = report(&n);
    PT_CHECK(n == 3);
    free(r);
    pd_tensor_release(y);
    pd_tensor_release(m);
    pd_tensor_release(x);
    r = report(&n);
    PT_CHECK(n == 0 && r && !*r); /* nothing alive: nothing printed */
    free(r);
    PT_CHECK(pd_debug_track_live(0) == 1);
    struct pd_tensor *after = pd_ones((int64_t[]){2}, 1, PD_F32); /* made after: not listed */
    PT_CHECK(pd_debug_report_live(NULL) == 0);
    pd_tensor_release(after);
    pd_tensor_release(before);

    /* 2. PD_DEBUG_LEAKS=1: the report at exit names the leaked product */
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "PD_DEBUG_LEAKS=1 ASAN_OPTIONS=detect_leaks=0 '%s' child 2>&1",
             argc > 0 ? argv[0] : "test_debug_leaks");
    FILE *p = strchr(argv[0], '\'') ? NULL : popen(cmd, "r");
    PT_CHECK(p != NULL);
    char out[8192] = "";
    size_t got = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[got] = 0;
    PT_CHECK(p && pclose(p) == 0);
    int line = 0;
    const char *l = strstr(out, "leak line ");
    PT_CHECK(l && sscanf(l, "leak line %d", &line) == 1);
    PT_CHECK(has(out, "paddle.c: 1 tensor still alive"));
    snprintf(want, sizeof want, "1 made at test_debug_leaks.c:%d (child): mul_1.out0 f32 [3]", line);
    PT_CHECK(has(out, want));
    PT_CHECK(has(out, "pd_scope_begin"));
    PT_DONE();
}
