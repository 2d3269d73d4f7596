/* Packed documents in the Llama model (pd_llama_forward_packed, the
 * FlashMask causal document mask): no token sees another document, by
 * perturbation (changing one document leaves the others' logits bit for
 * bit) and by gradient (d logits(doc) / d embedding rows of other documents
 * is exactly 0); each document's logits, loss and parameter gradients are
 * those of running it alone with the plain causal forward (positions
 * restart per document; the plain forward uses the other attention path
 * unless PD_ATTN says otherwise, so this also compares the two kernels);
 * a row that is one document is the plain causal forward; error paths; no
 * leaks. */
#include <math.h>
#include <string.h>

#include "pt.h"
#include "tiny_llama.h"

/* Three documents A, B, C with disjoint token sets (A 1..9, B 11..19,
 * C 21..29) so an embedding row belongs to one document. */
enum { TA = 5, TB = 6, TC = 4, T = TA + TB + TC, V = 37 };
static const int64_t starts[3] = {0, TA, TA + TB}, lens[3] = {TA, TB, TC};

static struct pd_llama *tiny_model(void)
{
    struct pd_llama_config c = pt_tiny_llama_config();
    return pd_llama_create(&c, 11);
}

static struct pd_tensor *i64(int b, int t, const int64_t *v) { return pd_from_buffer(v, (int64_t[]){b, t}, 2, PD_I64); }

static void fill_tokens(int64_t *ids, int salt)
{
    for (int d = 0; d < 3; d++)
        for (int64_t j = 0; j < lens[d]; j++) ids[starts[d] + j] = 10 * d + 1 + (j * 3 + salt * (d + 1)) % 9;
}

static void fill_docs(int64_t *doc)
{
    for (int d = 0; d < 3; d++)
        for (int64_t j = 0; j < lens[d]; j++) doc[starts[d] + j] = 7 - 2 * d; /* values are arbitrary: runs count */
}

/* max |a - b| / (max |b| + tiny) */
static double rel_err(struct pd_tensor *a, struct pd_tensor *b)
{
    if (!a || !b) return INFINITY;
    double d = pd_item(pd_amax(pd_abs(pd_sub(pd_cast(a, PD_F64), pd_cast(b, PD_F64))), NULL, 0, 0));
    double m = pd_item(pd_amax(pd_abs(pd_cast(b, PD_F64)), NULL, 0, 0));
    return d / (m + 1e-30);
}

static double max_abs(struct pd_tensor *t) { return t ? pd_item(pd_amax(pd_abs(t), NULL, 0, 0)) : INFINITY; }

/* logits [1, T, V] positions of document d */
static struct pd_tensor *doc_part(struct pd_tensor *logits, int d)
{
    return pd_slice(logits, 1, starts[d], starts[d] + lens[d], 1);
}

/* (a) changing document B changes B's logits and nothing else, exactly. */
static void test_perturbation(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_llama *m = tiny_model();
    int64_t ids[T], ids2[T], doc[T];
    fill_tokens(ids, 0);
    fill_docs(doc);
    memcpy(ids2, ids, sizeof ids);
    for (int64_t j = starts[1]; j < starts[1] + lens[1]; j++) ids2[j] = 11 + (ids[j] + 4) % 9;
    struct pd_tensor *l1 = pd_llama_forward_packed(m, i64(1, T, ids), i64(1, T, doc));
    struct pd_tensor *l2 = pd_llama_forward_packed(m, i64(1, T, ids2), i64(1, T, doc));
    PT_CHECK(l1 && l2);
    PT_CHECK(max_abs(pd_sub(doc_part(l1, 0), doc_part(l2, 0))) == 0);
    PT_CHECK(max_abs(pd_sub(doc_part(l1, 2), doc_part(l2, 2))) == 0);
    PT_CHECK(max_abs(pd_sub(doc_part(l1, 1), doc_part(l2, 1))) > 1e-3); /* the change is seen where it should be */
    /* without the document mask, C does see B */
    struct pd_tensor *p1 = pd_llama_forward(m, i64(1, T, ids), NULL, NULL);
    struct pd_tensor *p2 = pd_llama_forward(m, i64(1, T, ids2), NULL, NULL);
    PT_CHECK(max_abs(pd_sub(doc_part(p1, 2), doc_part(p2, 2))) > 1e-3);
    pd_llama_destroy(m);
    pd_scope_end(scope_tok);
}

/* (a) d sum(logits of document d) / d embedding rows: zero on every other
 * document's rows, non-zero on its own. */
static void test_gradient_isolation(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_llama *m = tiny_model();
    struct pd_tensor *emb = pd_state_dict_get(pd_llama_state_dict(m), "model.embed_tokens.weight"); /* [V, dim] */
    int64_t ids[T], doc[T];
    fill_tokens(ids, 1);
    fill_docs(doc);
    for (int d = 0; d < 3; d++) {
        pd_tensor_zero_grad(emb);
        struct pd_tensor *lg = pd_llama_forward_packed(m, i64(1, T, ids), i64(1, T, doc));
        PT_CHECK(lg && pd_backward(pd_sum(doc_part(lg, d), NULL, 0, 0), NULL, 0) == PD_OK);
        struct pd_tensor *g = pd_tensor_grad(emb);
        PT_CHECK(g != NULL);
        if (!g) continue;
        for (int e = 0; e < 3; e++) {
            double gm = max_abs(pd_slice(g, 0, 10 * e + 1, 10 * e + 10, 1));
            if (e == d) PT_CHECK(gm > 1e-4);
            else PT_CHECK(gm == 0);
        }
    }
    pd_tensor_zero_grad(emb);
    pd_llama_destroy(m);
    pd_scope_end(scope_tok);
}

/* (b) each document packed = the document alone; a one-document row = the
 * plain causal forward; loss and gradients likewise. */
static void test_equals_alone(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_llama *m = tiny_model();
    int64_t ids[2 * T], doc[2 * T], tg[2 * T];
    fill_tokens(ids, 2);
    fill_tokens(ids + T, 3);
    fill_docs(doc);
    for (int64_t j = 0; j < T; j++) doc[T + j] = 5; /* row 1: a single document */
    for (int64_t j = 0; j < 2 * T; j++) tg[j] = (ids[j] * 7 + j) % V;
    struct pd_tensor *lg = pd_llama_forward_packed(m, i64(2, T, ids), i64(2, T, doc)); /* [2, T, V] */
    PT_CHECK(lg != NULL);
    for (int d = 0; lg && d < 3; d++) {
        struct pd_tensor *alone = pd_llama_forward(m, i64(1, (int)lens[d], ids + starts[d]), NULL, NULL);
        double e = rel_err(doc_part(pd_slice(lg, 0, 0, 1, 1), d), alone);
        if (!(e < 1e-5)) printf("document %d: packed vs alone rel err %g\n", d, e);
        PT_CHECK(e < 1e-5);
    }
    struct pd_tensor *whole = pd_llama_forward(m, i64(1, T, ids + T), NULL, NULL);
    PT_CHECK(lg && rel_err(pd_slice(lg, 0, 1, 2, 1), whole) < 1e-5);

    /* Loss and gradients: the packed row-0 loss (mean over T targets) is the
     * token-weighted mean of the three documents' losses alone. */
    struct pd_state_dict *sd = pd_llama_state_dict(m);
    int np = pd_state_dict_size(sd);
    struct pd_tensor *lp = pd_llama_loss_packed(m, i64(1, T, ids), i64(1, T, tg), i64(1, T, doc));
    PT_CHECK(lp && pd_backward(lp, NULL, 0) == PD_OK);
    struct pd_tensor *gp[64];
    PT_CHECK(np <= 64);
    for (int i = 0; i < np && i < 64; i++) {
        struct pd_tensor *p = pd_state_dict_tensor(sd, i);
        gp[i] = pd_tensor_grad(p) ? pd_clone(pd_tensor_grad(p)) : NULL;
        pd_tensor_zero_grad(p);
    }
    double sum = 0;
    for (int d = 0; d < 3; d++) {
        struct pd_tensor *la = pd_llama_loss(m, i64(1, (int)lens[d], ids + starts[d]),
                                             i64(1, (int)lens[d], tg + starts[d]));
        PT_CHECK(la && pd_backward(pd_scale(la, (double)lens[d] / T), NULL, 0) == PD_OK);
        sum += pd_item(la) * (double)lens[d] / T;
    }
    PT_NEAR(pd_item(lp), sum, 1e-5);
    for (int i = 0; i < np && i < 64; i++) {
        struct pd_tensor *p = pd_state_dict_tensor(sd, i), *ga = pd_tensor_grad(p);
        double e = rel_err(gp[i], ga);
        if (!(e < 1e-4)) printf("%s: packed vs alone gradient rel err %g\n", pd_state_dict_name(sd, i), e);
        PT_CHECK(e < 1e-4);
        pd_tensor_zero_grad(p);
    }
    pd_llama_destroy(m);
    pd_scope_end(scope_tok);
}

static void test_errors(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_llama *m = tiny_model();
    int64_t ids[T], doc[T];
    fill_tokens(ids, 0);
    fill_docs(doc);
    PT_CHECK(pd_llama_forward_packed(m, i64(1, T, ids), NULL) == NULL);
    PT_CHECK(strstr(pd_last_error(), "doc_ids") != NULL);
    PT_CHECK(pd_llama_forward_packed(m, i64(1, T, ids), i64(1, T - 1, doc)) == NULL);
    PT_CHECK(strstr(pd_last_error(), "doc_ids") && strstr(pd_last_error(), "[1, 15]"));
    PT_CHECK(pd_llama_forward_packed(m, i64(1, T, ids), pd_cast(i64(1, T, doc), PD_I32)) == NULL);
    PT_CHECK(strstr(pd_last_error(), "int64") != NULL);
    PT_CHECK(pd_llama_forward_packed(NULL, i64(1, T, ids), i64(1, T, doc)) == NULL);
    PT_CHECK(pd_llama_loss_packed(m, i64(1, T, ids), i64(1, 3, ids), i64(1, T, doc)) == NULL);
    PT_CHECK(strstr(pd_last_error(), "targets") != NULL);
    pd_llama_destroy(m);
    pd_scope_end(scope_tok);
}

int main(void)
{
    int64_t live = pd_live_tensors();
    test_perturbation();
    test_gradient_isolation();
    test_equals_alone();
    test_errors();
    PT_CHECK(pd_live_tensors() == live);
    PT_DONE();
}
