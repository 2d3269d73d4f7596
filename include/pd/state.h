/* paddle.c — state dicts: an ordered list of named tensors plus string
 * metadata. The common currency of modules (parameters), optimizers (their
 * moments), safetensors files and training checkpoints.
 *
 * A state dict holds a reference to each tensor it lists; the tensors are the
 * live objects (a model's state dict lists its parameters, not copies), so
 * loading into it writes the model's memory. Names are unique.
 */
#ifndef PD_STATE_H
#define PD_STATE_H

#include "pd/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pd_state_dict;

struct pd_state_dict *pd_state_dict_create(void);
void pd_state_dict_destroy(struct pd_state_dict *sd);   /* releases its references; NULL is a no-op */
/* Appends (name, t), taking a reference to t. A name already present is an
 * error (PD_ERR_INVALID) unless replace is set, which swaps the tensor. */
int pd_state_dict_set(struct pd_state_dict *sd, const char *name, struct pd_tensor *t, int replace);
int pd_state_dict_add(struct pd_state_dict *sd, const char *name, struct pd_tensor *t); /* set, no replace */
int pd_state_dict_remove(struct pd_state_dict *sd, const char *name);                  /* PD_ERR_INVALID if absent */
int pd_state_dict_size(const struct pd_state_dict *sd);
const char *pd_state_dict_name(const struct pd_state_dict *sd, int i);
struct pd_tensor *pd_state_dict_tensor(const struct pd_state_dict *sd, int i);          /* borrowed */
int pd_state_dict_find(const struct pd_state_dict *sd, const char *name);               /* index or -1 */
struct pd_tensor *pd_state_dict_get(const struct pd_state_dict *sd, const char *name);  /* borrowed, NULL if absent */
/* Total elements over all tensors. */
int64_t pd_state_dict_numel(const struct pd_state_dict *sd);

/* String metadata (safetensors "__metadata__"): set replaces. */
int pd_state_dict_set_meta(struct pd_state_dict *sd, const char *key, const char *value);
const char *pd_state_dict_get_meta(const struct pd_state_dict *sd, const char *key);    /* NULL if absent */
int pd_state_dict_meta_size(const struct pd_state_dict *sd);
const char *pd_state_dict_meta_key(const struct pd_state_dict *sd, int i);
const char *pd_state_dict_meta_value(const struct pd_state_dict *sd, int i);

#ifdef __cplusplus
}
#endif
#endif
