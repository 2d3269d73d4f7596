/* paddle.c — PyTorch parity of the Llama model: logits, loss, every
 * parameter gradient and a 10-step AdamW loss trajectory.
 *
 * Fixtures: tests/fixtures/llama/ (the main case: GQA, untied lm_head) and
 * tests/fixtures/llama/tied/ (tied embeddings, plain multi-head attention),
 * each weights/batch/expected.safetensors written by tools/ref/llama_ref.py
 * (a Hugging Face LlamaForCausalLM written in torch, computed in float64 from
 * the f32 weights; docs/parity.md). The model config travels as JSON in the
 * weights' metadata ("config"), the AdamW hyperparameters in the expected
 * file's ("adamw").
 *
 * Relative error of a tensor: max|got - want| / max(max|want|, 1e-30); every
 * compared tensor must be within TOL = 1e-4 (an f32 implementation is about
 * 1e-6 off; the script prints torch's own f32 deviation). On a mismatch the
 * residual stream is recomputed layer by layer with the public fused ops
 * (pd_rms_norm, pd_linear, pd_rope, pd_sdpa, pd_swiglu) and compared with the
 * fixture's hidden states, to tell an op bug from a model-assembly bug; that
 * composed forward, its loss and its gradients (pd_grad) are also checked on
 * their own.
 *
 * Negative control: a model with another RoPE base must miss the logits by
 * far more than TOL (the fixture exercises what it claims to).
 *
 * Error paths: strict loading of an incomplete, misnamed or misshapen state
 * dict fails with a message and leaves the parameters untouched; a config
 * with an unknown key is refused.
 *
 *   test_llama_parity [--dir FIXTURE_DIR] [-v]
 *
 * Ownership: state dicts from pd_safetensors_load are destroyed here; each
 * phase runs inside a scope; the model owns its parameters.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/io.h"
#include "pd/optim.h"
#include "pt.h"

#define TOL 1e-4

static int verbose;

/* max|a - b| / max(max|b|, 1e-30) over all elements (f64); +inf on a
 * shape mismatch or a NULL tensor. */
static double rel_err(struct pd_tensor *got, struct pd_tensor *want)
{
    if (!got || !want || pd_tensor_ndim(got) != pd_tensor_ndim(want)) return INFINITY;
    for (int i = 0; i < pd_tensor_ndim(want); i++)
        if (pd_tensor_dim(got, i) != pd_tensor_dim(want, i)) return INFINITY;
    int64_t n = pd_tensor_numel(want);
    double *a = malloc(sizeof *a * (size_t)(n ? n : 1)), *b = malloc(sizeof *b * (size_t)(n ? n : 1));
    double diff = 0, scale = 0;
    if (a && b && !pd_to_buffer(got, a, PD_F64) && !pd_to_buffer(want, b, PD_F64)) {
        for (int64_t i = 0; i < n; i++) {
            double d = fabs(a[i] - b[i]);
            if (!(d <= diff)) diff = d;   /* NaN propagates */
            if (fabs(b[i]) > scale) scale = fabs(b[i]);
        }
    } else diff = INFINITY;
    free(a);
    free(b);
    return diff / (scale > 1e-30 ? scale : 1e-30);
}

/* One comparison: counts as a check, prints failures (and everything with -v). */
static double compare(const char *what, const char *name, struct pd_tensor *got, struct pd_tensor *want)
{
    double e = rel_err(got, want);
    pt_checks++;
    if (!(e <= TOL)) {
        pt_fails++;
        printf("  FAIL %-6s %-48s rel. error %.3g > %g%s%s\n", what, name, e, TOL, got ? "" : " (error: ",
               got ? "" : pd_last_error());
        if (!got) printf(")\n");
    } else if (verbose) printf("  ok   %-6s %-48s rel. error %.3g\n", what, name, e);
    return e;
}

struct fixture {
    struct pd_state_dict *weights, *batch, *expected;
    struct pd_llama_config cfg;
    struct pd_tensor *ids, *targets;
};

static void fixture_free(struct fixture *f)
{
    pd_state_dict_destroy(f->weights);
    pd_state_dict_destroy(f->batch);
    pd_state_dict_destroy(f->expected);
    memset(f, 0, sizeof *f);
}

static int fixture_load(const char *dir, struct fixture *f)
{
    char path[4200];
    memset(f, 0, sizeof *f);
    snprintf(path, sizeof path, "%s/weights.safetensors", dir);
    f->weights = pd_safetensors_load(path);
    snprintf(path, sizeof path, "%s/batch.safetensors", dir);
    f->batch = f->weights ? pd_safetensors_load(path) : NULL;   /* stop at the first failure: its message */
    snprintf(path, sizeof path, "%s/expected.safetensors", dir);
    f->expected = f->batch ? pd_safetensors_load(path) : NULL;
    if (!f->expected) {
        printf("  cannot load the fixtures in %s: %s\n  (regenerate: /usr/bin/python3 tools/ref/llama_ref.py "
               "tests/fixtures/llama)\n", dir, pd_last_error());
        fixture_free(f);
        return -1;
    }
    const char *json = pd_state_dict_get_meta(f->weights, "config");
    if (!json || pd_llama_config_from_json(&f->cfg, json) != PD_OK) {
        printf("  bad config metadata in %s/weights.safetensors: %s\n", dir, json ? pd_last_error() : "absent");
        fixture_free(f);
        return -1;
    }
    f->ids = pd_state_dict_get(f->batch, "ids");
    f->targets = pd_state_dict_get(f->batch, "targets");
    if (!f->ids || !f->targets) {
        printf("  %s/batch.safetensors lacks ids or targets\n", dir);
        fixture_free(f);
        return -1;
    }
    return 0;
}

/* The residual stream recomputed with public ops from the fixture's weights,
 * compared layer by layer with hidden.<i>, final_norm and logits, and the
 * gradients of its loss (pd_cross_entropy, pd_grad) with grad.<name>.
 * Returns the worst relative error. */
static double composed_forward(const struct fixture *f, int report)
{
    int nw = pd_state_dict_size(f->weights);
    for (int i = 0; i < nw; i++) pd_requires_grad_(pd_state_dict_tensor(f->weights, i), 1);
    const struct pd_llama_config *c = &f->cfg;
    struct pd_state_dict *w = f->weights;
    int64_t B = pd_tensor_dim(f->ids, 0), T = pd_tensor_dim(f->ids, 1);
    int64_t hd = c->dim / c->n_heads;
    char name[128];
    double worst = 0;
    int scope_tok = pd_scope_begin();
    int prev = pd_enable_grad_begin();
    struct pd_tensor *pos = pd_arange(0, (double)T, 1, PD_I64);
    struct pd_tensor *x = pd_embedding(f->ids, pd_state_dict_get(w, "model.embed_tokens.weight"));
#define W(fmt, i) (snprintf(name, sizeof name, fmt, i), pd_state_dict_get(w, name))
    for (int l = 0; l <= c->n_layers; l++) {
        snprintf(name, sizeof name, "hidden.%d", l);
        double e = rel_err(x, pd_state_dict_get(f->expected, name));
        if (report) printf("  composed: residual entering %s %d: rel. error %.3g%s%s\n",
                           l < c->n_layers ? "layer" : "the final norm after layer", l < c->n_layers ? l : l - 1,
                           e, x ? "" : " - ", x ? "" : pd_last_error());
        worst = fmax(worst, e);
        if (l == c->n_layers) break;
        struct pd_tensor *h = pd_rms_norm(x, 1, W("model.layers.%d.input_layernorm.weight", l), c->norm_eps);
        struct pd_tensor *q = pd_reshape(pd_linear(h, W("model.layers.%d.self_attn.q_proj.weight", l), NULL),
                                         (int64_t[]){B, T, c->n_heads, hd}, 4);
        struct pd_tensor *k = pd_reshape(pd_linear(h, W("model.layers.%d.self_attn.k_proj.weight", l), NULL),
                                         (int64_t[]){B, T, c->n_kv_heads, hd}, 4);
        struct pd_tensor *v = pd_reshape(pd_linear(h, W("model.layers.%d.self_attn.v_proj.weight", l), NULL),
                                         (int64_t[]){B, T, c->n_kv_heads, hd}, 4);
        q = pd_transpose(pd_rope(q, pos, c->rope_theta), 1, 2);   /* [B, H, T, hd] */
        k = pd_transpose(pd_rope(k, pos, c->rope_theta), 1, 2);   /* [B, KV, T, hd] */
        struct pd_tensor *a = pd_sdpa(q, k, pd_transpose(v, 1, 2), NULL, 1, 0.0);
        a = pd_reshape(pd_transpose(a, 1, 2), (int64_t[]){B, T, c->dim}, 3);
        x = pd_add(x, pd_linear(a, W("model.layers.%d.self_attn.o_proj.weight", l), NULL));
        h = pd_rms_norm(x, 1, W("model.layers.%d.post_attention_layernorm.weight", l), c->norm_eps);
        struct pd_tensor *m = pd_swiglu(pd_linear(h, W("model.layers.%d.mlp.gate_proj.weight", l), NULL),
                                        pd_linear(h, W("model.layers.%d.mlp.up_proj.weight", l), NULL));
        x = pd_add(x, pd_linear(m, W("model.layers.%d.mlp.down_proj.weight", l), NULL));
    }
    x = pd_rms_norm(x, 1, pd_state_dict_get(w, "model.norm.weight"), c->norm_eps);
    double e = rel_err(x, pd_state_dict_get(f->expected, "final_norm"));
    worst = fmax(worst, e);
    if (report) printf("  composed: final norm: rel. error %.3g\n", e);
    struct pd_tensor *head = pd_state_dict_get(w, c->tie_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
    struct pd_tensor *logits = pd_linear(x, head, NULL);
    e = rel_err(logits, pd_state_dict_get(f->expected, "logits"));
    worst = fmax(worst, e);
    if (report) printf("  composed: logits: rel. error %.3g\n", e);
#undef W
    int64_t V = c->vocab_size;
    struct pd_tensor *loss =
        pd_cross_entropy(pd_reshape(logits, (int64_t[]){B * T, V}, 2), pd_reshape(f->targets, (int64_t[]){B * T}, 1),
                         -1, 0.0, PD_REDUCTION_MEAN);
    e = rel_err(loss, pd_state_dict_get(f->expected, "loss"));
    worst = fmax(worst, e);
    struct pd_tensor **wt = malloc(sizeof *wt * (size_t)nw), **gr = calloc((size_t)nw, sizeof *gr);
    for (int i = 0; i < nw; i++) wt[i] = pd_state_dict_tensor(w, i);
    double gworst = INFINITY;
    const char *gname = "-";
    if (loss && pd_grad(&loss, 1, wt, nw, gr, NULL) == PD_OK) {
        gworst = 0;
        for (int i = 0; i < nw; i++) {
            snprintf(name, sizeof name, "grad.%s", pd_state_dict_name(w, i));
            double ge = rel_err(gr[i], pd_state_dict_get(f->expected, name));
            if (!(ge <= gworst)) {
                gworst = ge;
                gname = pd_state_dict_name(w, i);
            }
        }
    }
    worst = fmax(worst, gworst);
    if (report) printf("  composed: loss rel. error %.3g; %d gradients (pd_grad), worst rel. error %.3g (%s)%s%s\n", e,
                       nw, gworst, gname, isinf(gworst) ? " - " : "", isinf(gworst) ? pd_last_error() : "");
    free(wt);
    free(gr);
    pd_grad_mode_end(prev);
    pd_scope_end(scope_tok);
    for (int i = 0; i < nw; i++) pd_requires_grad_(pd_state_dict_tensor(f->weights, i), 0);
    return worst;
}

/* Forward, loss and gradients of a fresh model loaded with the fixture's
 * weights. Returns the number of failed comparisons. */
static int check_grads(const struct fixture *f, struct pd_llama *m)
{
    int fails0 = pt_fails;
    struct pd_state_dict *params = pd_llama_state_dict(m);
    int scope_tok = pd_scope_begin();
    double el = compare("fwd", "logits", pd_llama_forward(m, f->ids, NULL, NULL),
                        pd_state_dict_get(f->expected, "logits"));
    struct pd_tensor *loss = pd_llama_loss(m, f->ids, f->targets);
    double ess = compare("fwd", "loss", loss, pd_state_dict_get(f->expected, "loss"));
    printf("  logits rel. error %.3g, loss %.6f rel. error %.3g\n", el, loss ? pd_item(loss) : NAN, ess);
    PT_CHECK(loss && pd_backward(loss, NULL, 0) == PD_OK);
    double worst = 0;
    const char *worst_name = "-";
    int n_grads = 0;
    for (int i = 0; i < pd_state_dict_size(f->expected); i++) {
        const char *en = pd_state_dict_name(f->expected, i);
        if (strncmp(en, "grad.", 5)) continue;
        n_grads++;
        struct pd_tensor *p = pd_state_dict_get(params, en + 5);
        if (!p) {
            pt_checks++;
            pt_fails++;
            printf("  FAIL the model has no parameter %s\n", en + 5);
            continue;
        }
        double e = compare("grad", en + 5, pd_tensor_grad(p), pd_state_dict_tensor(f->expected, i));
        if (e > worst || e != e) {
            worst = e;
            worst_name = en + 5;
        }
    }
    /* Every parameter of the model has a reference gradient. */
    PT_CHECK(n_grads == pd_state_dict_size(params));
    printf("  %d gradients, worst rel. error %.3g (%s)\n", n_grads, worst, worst_name);
    pd_scope_end(scope_tok);
    for (int i = 0; i < pd_state_dict_size(params); i++) pd_tensor_zero_grad(pd_state_dict_tensor(params, i));
    return pt_fails - fails0;
}

/* STEPS AdamW steps from the fixture's weights; compares the losses before
 * each step and after the last. */
static void check_adamw(const struct fixture *f, struct pd_llama *m)
{
    const char *json = pd_state_dict_get_meta(f->expected, "adamw");
    struct pd_tensor *want = pd_state_dict_get(f->expected, "adamw_losses");
    struct pd_optim_config oc;
    int steps = pt_adamw_config(json, &oc);
    PT_CHECK(want && steps > 0 && pd_tensor_numel(want) == steps + 1);
    PT_CHECK(pd_optim_config_validate(&oc) == PD_OK);
    if (!want || steps <= 0 || pd_tensor_numel(want) != steps + 1) return;
    /* One group over every parameter: torch.optim.AdamW(model.parameters()) decays the norm weights too. */
    struct pd_optimizer *opt = pd_optimizer_create(&oc);
    PT_CHECK(opt && pd_optimizer_add_group(opt, pd_llama_state_dict(m), NULL) == 0);
    double *got = malloc(sizeof *got * (size_t)(steps + 1));
    for (int s = 0; s <= steps; s++) {
        int scope_tok = pd_scope_begin();
        struct pd_tensor *loss = pd_llama_loss(m, f->ids, f->targets);
        got[s] = loss ? pd_item(loss) : NAN;
        if (s < steps) {
            PT_CHECK(loss && pd_backward(loss, NULL, 0) == PD_OK);
            PT_CHECK(pd_optimizer_step(opt) == PD_OK);
            pd_optimizer_zero_grad(opt);
        }
        pd_scope_end(scope_tok);
    }
    struct pd_tensor *gt = pd_from_buffer(got, (int64_t[]){steps + 1}, 1, PD_F64);
    double e = compare("adamw", "loss trajectory", gt, want);
    printf("  AdamW (lr %g, betas %g/%g, eps %g, wd %g): loss %.6f -> %.6f in %d steps (want %.6f -> %.6f), "
           "rel. error %.3g\n", oc.lr, oc.beta1, oc.beta2, oc.eps, oc.weight_decay, got[0], got[steps], steps,
           pt_at(want, 0), pt_at(want, steps), e);
    if (!(e <= TOL) || verbose)
        for (int s = 0; s <= steps; s++) printf("    step %2d  got %.7f  want %.7f\n", s, got[s], pt_at(want, s));
    PT_CHECK(pd_optimizer_step_count(opt) == steps);
    pd_tensor_release(gt);
    free(got);
    pd_optimizer_destroy(opt);
}

static void run_case(const char *dir, const char *label)
{
    printf("case %s (%s)\n", label, dir);
    struct fixture f;
    if (fixture_load(dir, &f)) {
        pt_checks++;
        pt_fails++;
        return;
    }
    int64_t live0 = pd_live_tensors();
    struct pd_llama *m = pd_llama_create(&f.cfg, 1);
    PT_CHECK(m != NULL);
    if (!m) {
        fixture_free(&f);
        return;
    }
    char report[512] = "";
    int st = pd_state_dict_load(pd_llama_state_dict(m), f.weights, 1, report, sizeof report);
    PT_CHECK(st == PD_OK);
    if (verbose || st) printf("  load: %s\n", report);
    if (st == PD_OK) {
        pd_llama_train(m, 1);
        double comp = composed_forward(&f, verbose);
        printf("  composed public-op forward and gradients: worst rel. error %.3g\n", comp);
        pt_checks++;
        if (!(comp <= TOL)) pt_fails++;
        if (check_grads(&f, m) || !(comp <= TOL)) {
            printf("  mismatch: the residual stream recomputed with the public ops, layer by layer:\n");
            composed_forward(&f, 1);
        }
        check_adamw(&f, m);
    }
    pd_llama_destroy(m);
    fixture_free(&f);
    /* Everything of the case is released (the fixture tensors belong to
     * the state dicts, created before live0 and destroyed now). */
    PT_CHECK(pd_live_tensors() <= live0);
}

/* Negative control: the same weights in a model whose RoPE base differs
 * must miss the reference logits by far more than TOL, or the fixture would
 * not be exercising the rotary embedding at all. */
static void check_sensitivity(const char *dir)
{
    printf("sensitivity\n");
    struct fixture f;
    if (fixture_load(dir, &f)) {
        pt_checks++;
        pt_fails++;
        return;
    }
    struct pd_llama_config c = f.cfg;
    c.rope_theta *= 2;
    struct pd_llama *m = pd_llama_create(&c, 1);
    PT_CHECK(m && pd_state_dict_load(pd_llama_state_dict(m), f.weights, 1, NULL, 0) == PD_OK);
    int scope_tok = pd_scope_begin();
    double e = rel_err(pd_llama_forward(m, f.ids, NULL, NULL), pd_state_dict_get(f.expected, "logits"));
    pd_scope_end(scope_tok);
    printf("  rope_theta x2: logits rel. error %.3g (must exceed %g)\n", e, 100 * TOL);
    PT_CHECK(e > 100 * TOL && isfinite(e));
    pd_llama_destroy(m);
    fixture_free(&f);
}

/* Bad input: every failure leaves the model's parameters as they were. */
static void check_errors(const char *dir)
{
    printf("error paths\n");
    struct fixture f;
    if (fixture_load(dir, &f)) {
        pt_checks++;
        pt_fails++;
        return;
    }
    struct pd_llama *m = pd_llama_create(&f.cfg, 3);
    PT_CHECK(m != NULL);
    if (!m) {
        fixture_free(&f);
        return;
    }
    struct pd_state_dict *params = pd_llama_state_dict(m);
    struct pd_tensor *probe = pd_state_dict_get(params, "model.layers.0.self_attn.q_proj.weight");
    struct pd_tensor *before = pd_keep(pd_clone(probe));
    char report[512];

    /* Incomplete: a parameter is missing from the file. */
    struct pd_tensor *saved = pd_state_dict_get(f.weights, "model.norm.weight");
    pd_tensor_retain(saved);
    PT_CHECK(pd_state_dict_remove(f.weights, "model.norm.weight") == PD_OK);
    PT_CHECK(pd_state_dict_load(params, f.weights, 1, report, sizeof report) < 0);
    PT_CHECK(strstr(pd_last_error(), "model.norm.weight") != NULL);
    printf("  missing tensor -> %s\n", pd_last_error());
    /* Misnamed: the same tensor under a wrong name is unexpected. */
    PT_CHECK(pd_state_dict_add(f.weights, "model.norm.weights", saved) == PD_OK);
    PT_CHECK(pd_state_dict_load(params, f.weights, 1, report, sizeof report) < 0);
    printf("  misnamed tensor -> %s\n", pd_last_error());
    PT_CHECK(rel_err(probe, before) == 0);
    /* Misshapen: the right name with the wrong shape, strict or not. */
    PT_CHECK(pd_state_dict_remove(f.weights, "model.norm.weights") == PD_OK);
    struct pd_tensor *wrong = pd_zeros((int64_t[]){f.cfg.dim + 1}, 1, PD_F32);
    PT_CHECK(pd_state_dict_add(f.weights, "model.norm.weight", wrong) == PD_OK);
    PT_CHECK(pd_state_dict_load(params, f.weights, 1, report, sizeof report) < 0);
    PT_CHECK(pd_state_dict_load(params, f.weights, 0, report, sizeof report) < 0);
    printf("  misshapen tensor -> %s\n", pd_last_error());
    PT_CHECK(rel_err(probe, before) == 0);
    pd_tensor_release(wrong);
    pd_tensor_release(saved);
    /* A config with an unknown key is refused and leaves cfg usable. */
    struct pd_llama_config c = f.cfg;
    PT_CHECK(pd_llama_config_from_json(&c, "{\"dim\": 32, \"n_layer\": 2}") < 0);
    printf("  unknown config key -> %s\n", pd_last_error());
    PT_CHECK(pd_llama_config_from_json(&c, "{\"dim\": ") < 0);
    printf("  malformed config -> %s\n", pd_last_error());
    pd_tensor_release(before);
    pd_llama_destroy(m);
    fixture_free(&f);
}

int main(int argc, char **argv)
{
    char dir[4096];
    PT_FIXTURE(dir, "fixtures/llama");
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--dir") && k + 1 < argc) snprintf(dir, sizeof dir, "%s", argv[++k]);
        else if (!strcmp(argv[k], "-v") || !strcmp(argv[k], "--verbose")) verbose = 1;
        else {
            printf("usage: %s [--dir FIXTURE_DIR] [-v]\n", argv[0]);
            return 2;
        }
    }
    char tied[4200];
    snprintf(tied, sizeof tied, "%s/tied", dir);
    run_case(dir, "gqa-untied");
    run_case(tied, "tied-mha");
    check_sensitivity(dir);
    check_errors(dir);
    PT_DONE();
}
