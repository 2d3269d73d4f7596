/* paddle.c — what each debugging observer costs per eager op, and that it
 * costs nothing when off. Peer: the same run with every tool off, measured
 * before any tool was ever switched on ("off") and again after all were
 * switched off ("off_after"): the two must agree within noise. Ops are the
 * bench_dispatch ones (16-element add, forward; add + sum + backward).
 * Names ("add_12") are always assigned — one counter bump, part of "off".
 * One JSON line per (tool, mode): ns per op and the overhead over "off". */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"
#include "pd/pd.h"
#include "pd/debug.h"
#include "pd/memory.h"
#include "pd/profiler.h"

#define OPS_PER_CALL 100

static struct pd_tensor *a, *b;

static void fwd(void *ctx)
{
    (void)ctx;
    int scope_tok = pd_scope_begin();
    for (int i = 0; i < OPS_PER_CALL; i++) pd_add(a, b);
    pd_scope_end(scope_tok);
}

static void fwd_bwd(void *ctx)
{
    (void)ctx;
    int scope_tok = pd_scope_begin();
    for (int i = 0; i < OPS_PER_CALL; i++) pd_backward(pd_sum(pd_add(a, b), NULL, 0, 0), NULL, 0);
    pd_scope_end(scope_tok);
}

enum tool { OFF, CALLSITES, MD5, ANOMALY, PROFILER, MEMRECORD, OFF_AFTER, N_TOOLS };
static const char *tool_names[N_TOOLS] = {"off", "callsites", "md5", "anomaly", "profiler", "memory_record", "off_after"};

static int set_tool(enum tool t, int on)
{
    switch (t) {
    case CALLSITES: return pd_debug_set_callsites(on);
    case MD5: return on ? pd_md5_begin("/dev/null", PD_MD5_BITWISE, 0) : pd_md5_end();
    case ANOMALY: return pd_anomaly_mode(on);
    case PROFILER: return on ? pd_profiler_begin() : pd_profiler_end();
    case MEMRECORD: return on ? (pd_memory_record_begin() > 0 ? 0 : -1) : pd_memory_record_end(NULL);
    default: return 0;
    }
}

int main(void)
{
    int64_t n = 16;
    a = pd_randn(&n, 1, PD_F32, NULL);
    b = pd_randn(&n, 1, PD_F32, NULL);
    int full = getenv("PD_BENCH_FULL") != NULL;
    int trials = full ? 15 : 5;
    for (int mode = 0; mode < 2; mode++) {
        if (mode == 1) {
            pd_requires_grad_(a, 1);
            pd_requires_grad_(b, 1);
        }
        double base = 0;
        for (int t = 0; t < N_TOOLS; t++) {
            if (set_tool((enum tool)t, 1)) {
                fprintf(stderr, "debug_overhead: cannot switch on %s: %s\n", tool_names[t], pd_last_error());
                return 1;
            }
            /* the profiler keeps every event: bound its memory with fewer iterations */
            int iters = mode == 0 ? 100 : 20;
            double s = bench_best(mode == 0 ? fwd : fwd_bwd, NULL, iters, trials) / OPS_PER_CALL;
            set_tool((enum tool)t, 0);
            if (t == OFF) base = s;
            printf("{\"bench\":\"debug_overhead\",\"impl\":\"paddle.c\",%s,\"tool\":\"%s\",\"mode\":\"%s\","
                   "\"numel\":16,\"%s\":%.1f,\"overhead_ns\":%.1f,\"ratio\":%.3f}\n",
                   bench_tags("f32").s, tool_names[t], mode == 0 ? "forward" : "forward+backward", mode == 0 ? "ns_per_op" : "ns_per_iter",
                   s * 1e9, (s - base) * 1e9, s / base);
            fflush(stdout);
        }
    }
    pd_tensor_release(a);
    pd_tensor_release(b);
    return 0;
}
