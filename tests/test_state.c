/* paddle.c — state dicts (include/pd/state.h): order, lookup through
 * growth and removal, duplicate and replace rules, references held on the
 * tensors, metadata, and errors on bad arguments. */
#include <stdlib.h>
#include <string.h>

#include "pt.h"

static void test_basic(void)
{
    int64_t live = pd_live_tensors();
    struct pd_state_dict *sd = pd_state_dict_create();
    PT_CHECK(sd && pd_state_dict_size(sd) == 0 && pd_state_dict_numel(sd) == 0);
    struct pd_tensor *a = pd_ones((int64_t[]){2, 3}, 2, PD_F32); /* outside scopes: ours */
    struct pd_tensor *b = pd_zeros((int64_t[]){4}, 1, PD_I64);
    PT_CHECK(pd_state_dict_add(sd, "w", a) == PD_OK);
    PT_CHECK(pd_state_dict_add(sd, "b", b) == PD_OK);
    /* the dict holds its own references */
    pd_tensor_release(a);
    pd_tensor_release(b);
    PT_CHECK(pd_live_tensors() == live + 2);
    PT_CHECK(pd_state_dict_size(sd) == 2 && pd_state_dict_numel(sd) == 10);
    PT_CHECK(!strcmp(pd_state_dict_name(sd, 0), "w") && !strcmp(pd_state_dict_name(sd, 1), "b"));
    PT_CHECK(pd_state_dict_get(sd, "w") == a && pd_state_dict_tensor(sd, 1) == b);
    PT_CHECK(pd_state_dict_find(sd, "b") == 1 && pd_state_dict_find(sd, "nope") == -1);
    PT_CHECK(pd_state_dict_get(sd, "nope") == NULL);
    PT_CHECK(pd_state_dict_name(sd, 2) == NULL && pd_state_dict_name(sd, -1) == NULL);
    PT_CHECK(pd_state_dict_tensor(sd, 2) == NULL && strstr(pd_last_error(), "state_dict_tensor: index 2 outside [0, 2)"));
    PT_CHECK(pd_state_dict_meta_key(sd, 0) == NULL && strstr(pd_last_error(), "meta_key: index 0 outside [0, 0)"));
    pd_clear_error();
    PT_CHECK(pd_state_dict_get(sd, "nope") == NULL && !pd_last_status()); /* a miss is an answer */

    /* duplicates are errors unless replace is set; replace keeps the slot */
    struct pd_tensor *c = pd_full((int64_t[]){5}, 1, 7, PD_F32);
    PT_CHECK(pd_state_dict_add(sd, "w", c) == PD_ERR_INVALID && strstr(pd_last_error(), "duplicate name \"w\""));
    PT_CHECK(pd_state_dict_get(sd, "w") == a);
    PT_CHECK(pd_state_dict_set(sd, "w", c, 1) == PD_OK);
    PT_CHECK(pd_state_dict_get(sd, "w") == c && pd_state_dict_find(sd, "w") == 0 && pd_state_dict_size(sd) == 2);
    pd_tensor_release(c);
    PT_CHECK(pd_live_tensors() == live + 2); /* a was released by the replace */
    PT_CHECK(pd_state_dict_numel(sd) == 9);
    /* the same tensor under two names is fine (tied weights) */
    PT_CHECK(pd_state_dict_add(sd, "w.tied", c) == PD_OK && pd_state_dict_get(sd, "w.tied") == c);

    /* bad arguments */
    PT_CHECK(pd_state_dict_add(sd, "x", NULL) == PD_ERR_NULL && strstr(pd_last_error(), "\"x\""));
    PT_CHECK(pd_state_dict_add(sd, "", c) == PD_ERR_INVALID);
    PT_CHECK(pd_state_dict_add(sd, NULL, c) == PD_ERR_INVALID);
    PT_CHECK(pd_state_dict_add(NULL, "x", c) == PD_ERR_INVALID);
    PT_CHECK(pd_state_dict_remove(sd, "absent") == PD_ERR_INVALID && strstr(pd_last_error(), "\"absent\""));
    PT_CHECK(pd_state_dict_remove(sd, NULL) == PD_ERR_INVALID);
    PT_CHECK(pd_state_dict_size(NULL) == 0 && pd_state_dict_find(NULL, "w") == -1 && pd_state_dict_numel(NULL) == 0);
    PT_CHECK(pd_state_dict_size(sd) == 3);

    pd_state_dict_destroy(sd);
    pd_state_dict_destroy(NULL);
    PT_CHECK(pd_live_tensors() == live);
}

/* Thousands of entries (several rehashes), then removals: order and every
 * lookup stay right. */
static void test_many(void)
{
    int64_t live = pd_live_tensors();
    struct pd_state_dict *sd = pd_state_dict_create();
    struct pd_tensor *t = pd_scalar(1, PD_F32);
    enum { N = 3000 };
    char name[64];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "model.layers.%d.attn.w", i);
        if (pd_state_dict_add(sd, name, t)) PT_CHECK(0);
    }
    PT_CHECK(pd_state_dict_size(sd) == N && pd_state_dict_numel(sd) == N);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "model.layers.%d.attn.w", i);
        bad += pd_state_dict_find(sd, name) != i || strcmp(pd_state_dict_name(sd, i), name);
    }
    PT_CHECK(bad == 0);
    /* remove every third: the rest keep their relative order and are found */
    for (int i = 0; i < N; i += 3) {
        snprintf(name, sizeof name, "model.layers.%d.attn.w", i);
        if (pd_state_dict_remove(sd, name)) PT_CHECK(0);
    }
    PT_CHECK(pd_state_dict_size(sd) == N - N / 3);
    bad = 0;
    for (int i = 0, k = 0; i < N; i++) {
        snprintf(name, sizeof name, "model.layers.%d.attn.w", i);
        int want = i % 3 ? k++ : -1;
        bad += pd_state_dict_find(sd, name) != want;
        if (want >= 0) bad += strcmp(pd_state_dict_name(sd, want), name) != 0;
    }
    PT_CHECK(bad == 0);
    /* a removed name can be added again, at the end */
    PT_CHECK(pd_state_dict_add(sd, "model.layers.0.attn.w", t) == PD_OK);
    PT_CHECK(pd_state_dict_find(sd, "model.layers.0.attn.w") == pd_state_dict_size(sd) - 1);
    /* remove everything */
    while (pd_state_dict_size(sd)) pd_state_dict_remove(sd, pd_state_dict_name(sd, 0));
    PT_CHECK(pd_state_dict_find(sd, "model.layers.1.attn.w") == -1);
    PT_CHECK(pd_state_dict_add(sd, "again", t) == PD_OK && pd_state_dict_find(sd, "again") == 0);
    pd_tensor_release(t);
    pd_state_dict_destroy(sd);
    PT_CHECK(pd_live_tensors() == live);
}

static void test_meta(void)
{
    struct pd_state_dict *sd = pd_state_dict_create();
    PT_CHECK(pd_state_dict_meta_size(sd) == 0 && pd_state_dict_get_meta(sd, "step") == NULL);
    PT_CHECK(pd_state_dict_set_meta(sd, "step", "10") == PD_OK);
    PT_CHECK(pd_state_dict_set_meta(sd, "config", "{\"dim\": 8}") == PD_OK);
    PT_CHECK(pd_state_dict_set_meta(sd, "step", "11") == PD_OK); /* replace keeps the slot */
    PT_CHECK(pd_state_dict_meta_size(sd) == 2);
    PT_CHECK(!strcmp(pd_state_dict_get_meta(sd, "step"), "11"));
    PT_CHECK(!strcmp(pd_state_dict_meta_key(sd, 0), "step") && !strcmp(pd_state_dict_meta_value(sd, 1), "{\"dim\": 8}"));
    PT_CHECK(pd_state_dict_meta_key(sd, 2) == NULL && pd_state_dict_meta_value(sd, -1) == NULL);
    /* the dict keeps copies of the strings */
    char buf[16] = "mutable";
    pd_state_dict_set_meta(sd, buf, buf);
    buf[0] = 'X';
    PT_CHECK(pd_state_dict_get_meta(sd, "mutable") && !strcmp(pd_state_dict_get_meta(sd, "mutable"), "mutable"));
    for (int i = 0; i < 100; i++) { /* growth */
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        pd_state_dict_set_meta(sd, k, k);
    }
    PT_CHECK(pd_state_dict_meta_size(sd) == 103 && !strcmp(pd_state_dict_get_meta(sd, "k77"), "k77"));
    PT_CHECK(pd_state_dict_set_meta(sd, NULL, "v") == PD_ERR_INVALID);
    PT_CHECK(pd_state_dict_set_meta(sd, "k", NULL) == PD_ERR_INVALID);
    PT_CHECK(pd_state_dict_set_meta(NULL, "k", "v") == PD_ERR_INVALID);
    PT_CHECK(pd_state_dict_get_meta(NULL, "k") == NULL && pd_state_dict_get_meta(sd, NULL) == NULL);
    PT_CHECK(pd_state_dict_meta_size(NULL) == 0);
    pd_state_dict_destroy(sd);
}

/* Tensors created inside a scope survive its end once a dict holds them. */
static void test_scopes(void)
{
    int64_t live = pd_live_tensors();
    struct pd_state_dict *sd = pd_state_dict_create();
    int scope_tok = pd_scope_begin();
    pd_state_dict_add(sd, "r", pd_arange(0, 5, 1, PD_F32));
    pd_scope_end(scope_tok);
    PT_CHECK(pd_live_tensors() == live + 1);
    PT_CHECK(pt_at(pd_state_dict_get(sd, "r"), 4) == 4);
    pd_state_dict_destroy(sd);
    PT_CHECK(pd_live_tensors() == live);
}

int main(void)
{
    test_basic();
    test_many();
    test_meta();
    test_scopes();
    PT_DONE();
}
