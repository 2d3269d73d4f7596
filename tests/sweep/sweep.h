/* paddle.c — the bad-input sweep's parts (tests/sweep/sweep.c). */
#ifndef PD_SWEEP_H
#define PD_SWEEP_H

#include <stdint.h>

#include "core/internal.h"

struct sweep_opts {
    int sample;          /* run about this many cases (0: all) */
    const char *only_op; /* only this op's cases */
    int only_case;       /* only case only_case - 1 (0: all) */
    int from, to;        /* only cases in [from, to) (to 0: no bound) */
    int timeout;         /* seconds per case */
    int quiet, no_fork, list;
};
extern struct sweep_opts sw_opts;

/* The base call found for an op: the case generator varies it. */
struct sw_base {
    int found;
    int n_in, shape, layout, dtv, attrv;
};

/* Shared between the parent and the case children. */
struct sweep_shared {
    int phase;                 /* 0: probing for base calls, 1: cases */
    int n_op_cases;            /* cases below this are op cases, the rest entry points */
    volatile int current, done, checked, leak_only;
    int n_ok, n_err, n_crash, n_hang, n_leak, n_accepted, n_badmsg, n_malformed, n_nobase, n_known;
    struct sw_base base[PD_OP_COUNT];
};
extern struct sweep_shared *sw_shm;

/* sweep_ops.c: the cases generated from the op table */
void sw_probe_all(void);
int sw_build_cases(void); /* op cases, then the entry points'; returns the count */
void sw_run_op_case(int k);
int sw_case_is_op(int k, const char *name);
void sw_describe(int k, char *buf, size_t n);
void sw_report_bases(void);
int sw_run_probe(int k); /* 0: skipped (nothing ran) */
int sw_run_probe_needed(int k);
/* sweep.c: the runner */
void sw_judge(int k, int rc, int must_fail, int has_null, struct pd_tensor **outs, int n_out);
int sw_fail(const char *what, int k, const char *detail);
void sw_run_all(const int *sel, int n);
/* sweep_api.c: the public entry points that are not ops */
int sw_api_count(void);
void sw_run_api_case(int k);
void sw_describe_api(int k, char *buf, size_t n);
/* sweep_wrap.c: the public wrappers that resolve arguments themselves */
int sw_wrap_count(void);
void sw_run_wrap_case(int k, int judge_k);
void sw_describe_wrap(int k, char *buf, size_t n);

#endif
