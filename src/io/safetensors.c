/* paddle.c — safetensors read, validate, list and write (include/pd/io.h).
 *
 * Files are untrusted: parse_header() checks every field of the header
 * against the mapped file before a single data byte is read (header length,
 * UTF-8, JSON object, duplicate names, dtypes, shapes without overflow,
 * offsets inside the data section with the exact byte length, no overlap,
 * string-only metadata). Loading then copies each tensor out of the mapping
 * into a fresh tensor and unmaps: copying keeps tensor storage in the core's
 * allocator (no storage that outlives a mapping), at the price of one memcpy.
 *
 * Ownership: an info struct owns its strings; the loaded state dict owns the
 * only reference to its tensors (they are not in any scope).
 * Saving writes "<path>.tmp.<pid>", fsyncs, renames and fsyncs the directory,
 * so readers see the old file or the new one, never a mix. Assumes a
 * little-endian host (the format is little-endian; x86-64 and arm64 are).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/internal.h"
#include "io/file.h"
#include "pd/io.h"

/* Format names, indexed by enum pd_dtype (every paddle.c dtype has one). */
static const char *const st_names[PD_DTYPE_COUNT] = {
    [PD_F32] = "F32", [PD_F64] = "F64", [PD_F16] = "F16", [PD_BF16] = "BF16", [PD_I8] = "I8",
    [PD_U8] = "U8",   [PD_I16] = "I16", [PD_I32] = "I32", [PD_I64] = "I64",   [PD_BOOL] = "BOOL",
};

const char *pd_safetensors_dtype_name(enum pd_dtype dt)
{
    return (unsigned)dt < PD_DTYPE_COUNT ? st_names[dt] : "?";
}

static int dtype_of(const char *s)
{
    for (int i = 0; i < PD_DTYPE_COUNT; i++)
        if (!strcmp(s, st_names[i])) return i;
    return -1;
}


/* ---- info ------------------------------------------------------------ */

/* Frees what info owns, not info itself. */
static void info_clear(struct pd_safetensors_info *info)
{
    for (int i = 0; i < info->n_tensors; i++) free(info->tensors[i].name);
    for (int i = 0; i < info->n_meta; i++) {
        free(info->meta_keys[i]);
        free(info->meta_values[i]);
    }
    free(info->tensors);
    free(info->meta_keys);
    free(info->meta_values);
    memset(info, 0, sizeof *info);
}

void pd_safetensors_info_destroy(struct pd_safetensors_info *info)
{
    if (!info) return;
    info_clear(info);
    free(info);
}

/* Strict UTF-8 (no overlongs, no surrogates, <= U+10FFFF) and no NUL, which
 * would end the JSON text early. Returns the offset of the first bad byte or
 * -1 if all is well. */
static int64_t utf8_bad(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        unsigned min, cp;
        if (c == 0) return (int64_t)i;
        if (c < 0x80) { i++; continue; }
        if ((c & 0xe0) == 0xc0) { len = 2; min = 0x80; cp = c & 0x1f; }
        else if ((c & 0xf0) == 0xe0) { len = 3; min = 0x800; cp = c & 0x0f; }
        else if ((c & 0xf8) == 0xf0) { len = 4; min = 0x10000; cp = c & 0x07; }
        else return (int64_t)i;
        if (i + len > n) return (int64_t)i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return (int64_t)i;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return (int64_t)i;
        i += len;
    }
    return -1;
}

/* A JSON number that is an exact non-negative integer below 2^53 (doubles
 * are exact there; cJSON keeps numbers as doubles). */
static int json_uint(const cJSON *j, uint64_t *out)
{
    if (!cJSON_IsNumber(j)) return 0;
    double d = j->valuedouble;
    if (!(d >= 0) || d >= 0x1p53 || d != (double)(uint64_t)d) return 0;
    *out = (uint64_t)d;
    return 1;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

struct span {
    uint64_t begin, end;
    int idx; /* header order, for a stable sort */
};

static int cmp_span(const void *pa, const void *pb)
{
    const struct span *a = pa, *b = pb;
    if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
    if (a->end != b->end) return a->end < b->end ? -1 : 1;
    return a->idx - b->idx;
}

/* Fill one entry from its JSON object; returns status with the message set. */
static int parse_entry(const char *path, const cJSON *e, uint64_t data_len, struct pd_safetensors_entry *out)
{
    char nb[PDI_QUOTE_BUF], pb[PDI_QUOTE_BUF];
    const char *name = pdi_quote(e->string, nb, sizeof nb);
    path = pdi_quote(path, pb, sizeof pb);
    if (!cJSON_IsObject(e))
        return pdi_errorf(PD_ERR_INVALID, "safetensors %s: tensor %s: entry is not a JSON object", path, name);
    const cJSON *jd = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *jo = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!jd || !js || !jo)
        return pdi_errorf(PD_ERR_INVALID, "safetensors %s: tensor %s: missing \"%s\"", path, name,
                          !jd ? "dtype" : !js ? "shape" : "data_offsets");
    if (!cJSON_IsString(jd))
        return pdi_errorf(PD_ERR_INVALID, "safetensors %s: tensor %s: dtype is not a string", path, name);
    int dt = dtype_of(jd->valuestring);
    if (dt < 0) {
        char db[PDI_QUOTE_BUF];
        return pdi_errorf(PD_ERR_UNSUPPORTED,
                          "safetensors %s: tensor %s: unsupported dtype %s (supported: F64 F32 F16 BF16 "
                          "I64 I32 I16 I8 U8 BOOL)",
                          path, name, pdi_quote(jd->valuestring, db, sizeof db));
    }
    out->dtype = (enum pd_dtype)dt;
    if (!cJSON_IsArray(js))
        return pdi_errorf(PD_ERR_INVALID, "safetensors %s: tensor %s: shape is not an array", path, name);
    int nd = cJSON_GetArraySize(js);
    if (nd > PD_MAX_DIMS)
        return pdi_errorf(PD_ERR_INVALID, "safetensors %s: tensor %s: rank %d exceeds the maximum %d", path,
                          name, nd, PD_MAX_DIMS);
    out->ndim = nd;
    /* The product of the non-zero dims must not overflow even when a zero dim
     * makes numel 0: strides are computed from it. */
    uint64_t span = 1, numel = 1;
    int overflow = 0, d = 0;
    for (const cJSON *x = js->child; x; x = x->next, d++) {
        uint64_t v;
        if (!json_uint(x, &v))
            return pdi_errorf(PD_ERR_INVALID,
                              "safetensors %s: tensor %s: shape[%d] is not a non-negative integer", path, name,
                              d);
        out->shape[d] = (int64_t)v;
        if (!v) numel = 0;
        if (v && !overflow && __builtin_mul_overflow(span, v, &span)) overflow = 1;
    }
    if (numel) numel = span;
    uint64_t nbytes;
    if (overflow || span > PD_SAFETENSORS_MAX_NUMEL || __builtin_mul_overflow(numel, (uint64_t)pd_dtype_size(dt), &nbytes))
        return pdi_errorf(PD_ERR_INVALID, "safetensors %s: tensor %s: shape has too many elements (overflow)",
                          path, name);
    if (!cJSON_IsArray(jo) || cJSON_GetArraySize(jo) != 2 || !json_uint(jo->child, &out->begin) ||
        !json_uint(jo->child->next, &out->end))
        return pdi_errorf(PD_ERR_INVALID,
                          "safetensors %s: tensor %s: data_offsets is not [begin, end] of non-negative integers",
                          path, name);
    if (out->begin > out->end)
        return pdi_errorf(PD_ERR_INVALID, "safetensors %s: tensor %s: data_offsets [%llu, %llu] has begin > end",
                          path, name, (unsigned long long)out->begin, (unsigned long long)out->end);
    if (out->end > data_len)
        return pdi_errorf(PD_ERR_INVALID,
                          "safetensors %s: tensor %s: data_offsets [%llu, %llu] outside the data section of %llu "
                          "bytes",
                          path, name, (unsigned long long)out->begin, (unsigned long long)out->end,
                          (unsigned long long)data_len);
    if (out->end - out->begin != nbytes) {
        char sb[PDI_SHAPE_BUF];
        return pdi_errorf(PD_ERR_INVALID,
                          "safetensors %s: tensor %s: data_offsets [%llu, %llu] hold %llu bytes but %s %s needs "
                          "%llu",
                          path, name, (unsigned long long)out->begin, (unsigned long long)out->end,
                          (unsigned long long)(out->end - out->begin), st_names[dt],
                          pdi_shape_str(out->shape, nd, sb, sizeof sb), (unsigned long long)nbytes);
    }
    return PD_OK;
}

/* n_keys: the header's other entries, counted against PD_SAFETENSORS_MAX_KEYS. */
static int parse_metadata(const char *path, const cJSON *m, int n_keys, struct pd_safetensors_info *info)
{
    char pb[PDI_QUOTE_BUF], kb[PDI_QUOTE_BUF];
    path = pdi_quote(path, pb, sizeof pb);
    if (!cJSON_IsObject(m))
        return pdi_errorf(PD_ERR_INVALID, "safetensors %s: \"__metadata__\" is not a JSON object", path);
    int n = cJSON_GetArraySize(m);
    if (n > PD_SAFETENSORS_MAX_KEYS - n_keys)
        return pdi_errorf(PD_ERR_INVALID, "safetensors %s: %d metadata keys and %d tensors exceed the limit of %d "
                          "entries", path, n, n_keys, PD_SAFETENSORS_MAX_KEYS);
    info->meta_keys = pdi_calloc((size_t)n + 1, sizeof(char *));
    info->meta_values = pdi_calloc((size_t)n + 1, sizeof(char *));
    if (!info->meta_keys || !info->meta_values) return pdi_errorf(PD_ERR_NOMEM, "safetensors %s: out of memory", path);
    for (const cJSON *x = m->child; x; x = x->next) {
        if (!cJSON_IsString(x))
            return pdi_errorf(PD_ERR_INVALID, "safetensors %s: metadata %s: value is not a string", path,
                              pdi_quote(x->string, kb, sizeof kb));
        char *k = pdi_strdup(x->string), *v = pdi_strdup(x->valuestring);
        if (!k || !v) {
            free(k);
            free(v);
            return pdi_errorf(PD_ERR_NOMEM, "safetensors %s: out of memory", path);
        }
        info->meta_keys[info->n_meta] = k;
        info->meta_values[info->n_meta++] = v;
    }
    /* Duplicate keys: sorted copies of the pointers, neighbours compared
     * (linear-logarithmic; a pairwise check was quadratic). */
    char **sorted = pdi_malloc(((size_t)info->n_meta + 1) * sizeof *sorted);
    if (!sorted) return pdi_errorf(PD_ERR_NOMEM, "safetensors %s: out of memory", path);
    memcpy(sorted, info->meta_keys, (size_t)info->n_meta * sizeof *sorted);
    qsort(sorted, (size_t)info->n_meta, sizeof *sorted, cmp_names);
    for (int i = 1; i < info->n_meta; i++)
        if (!strcmp(sorted[i], sorted[i - 1])) {
            int st = pdi_errorf(PD_ERR_INVALID, "safetensors %s: metadata %s: duplicate key", path,
                                pdi_quote(sorted[i], kb, sizeof kb));
            free(sorted);
            return st;
        }
    free(sorted);
    return PD_OK;
}

/* Validates the header of the mapped file (map, size) into info. */
static int parse_header(const char *path, const unsigned char *map, uint64_t size, struct pd_safetensors_info *info)
{
    char pb[PDI_QUOTE_BUF], nb[PDI_QUOTE_BUF], nb2[PDI_QUOTE_BUF];
    const char *cp = pdi_quote(path, pb, sizeof pb);
    info->file_size = size;
    if (size < 8)
        return pdi_errorf(PD_ERR_INVALID, "safetensors %s: file of %llu bytes is too short for the 8-byte header "
                          "length", cp, (unsigned long long)size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | map[i];
    if (n > PD_SAFETENSORS_MAX_HEADER)
        return pdi_errorf(PD_ERR_INVALID, "safetensors %s: header length %llu exceeds the limit of %llu bytes", cp,
                          (unsigned long long)n, (unsigned long long)PD_SAFETENSORS_MAX_HEADER);
    if (n > size - 8)
        return pdi_errorf(PD_ERR_INVALID,
                          "safetensors %s: header length %llu goes beyond the end of the file (%llu bytes after "
                          "the length)", cp, (unsigned long long)n, (unsigned long long)(size - 8));
    info->header_len = n;
    const char *h = (const char *)map + 8;
    int64_t bad = utf8_bad((const unsigned char *)h, n);
    if (bad >= 0)
        return pdi_errorf(PD_ERR_INVALID, "safetensors %s: header is not valid UTF-8 (byte %lld)", cp,
                          (long long)bad);
    const char *end = NULL;
    cJSON *root = pdi_json_parse(h, n, &end);
    if (!root) /* end is this parse's own error position (cJSON's global one is shared by all threads) */
        return pdi_errorf(PD_ERR_INVALID, "safetensors %s: header is not valid JSON (near byte %lld)", cp,
                          (long long)(end && end >= h && end <= h + n ? end - h : -1));
    int st = PD_OK;
    const char **names = NULL;
    struct span *spans = NULL;
    /* Only whitespace may follow the object (the reference pads with spaces). */
    for (const char *q = end; q < h + n; q++)
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r') {
            st = pdi_errorf(PD_ERR_INVALID, "safetensors %s: trailing bytes after the header JSON (byte %lld)", cp,
                            (long long)(q - h));
            goto done;
        }
    if (!cJSON_IsObject(root)) {
        st = pdi_errorf(PD_ERR_INVALID, "safetensors %s: header is not a JSON object", cp);
        goto done;
    }
    /* Duplicate keys: cJSON keeps both, so sort the names and compare. */
    int nk = cJSON_GetArraySize(root);
    if (nk > PD_SAFETENSORS_MAX_KEYS) {
        st = pdi_errorf(PD_ERR_INVALID, "safetensors %s: header has %d entries, more than the limit of %d", cp, nk,
                        PD_SAFETENSORS_MAX_KEYS);
        goto done;
    }
    names = pdi_malloc(((size_t)nk + 1) * sizeof *names);
    info->tensors = pdi_calloc((size_t)nk + 1, sizeof *info->tensors);
    spans = pdi_malloc(((size_t)nk + 1) * sizeof *spans);
    if (!names || !info->tensors || !spans) {
        st = pdi_errorf(PD_ERR_NOMEM, "safetensors %s: out of memory", cp);
        goto done;
    }
    int k = 0;
    for (const cJSON *x = root->child; x; x = x->next) names[k++] = x->string;
    qsort(names, (size_t)nk, sizeof *names, cmp_names);
    for (int i = 1; i < nk; i++)
        if (!strcmp(names[i], names[i - 1])) {
            st = pdi_errorf(PD_ERR_INVALID, "safetensors %s: tensor %s: duplicate name", cp,
                            pdi_quote(names[i], nb, sizeof nb));
            goto done;
        }
    uint64_t data_len = size - 8 - n;
    struct pd_safetensors_entry *tmp = info->tensors;
    int nt = 0;
    for (const cJSON *x = root->child; x; x = x->next) {
        if (!strcmp(x->string, "__metadata__")) {
            if ((st = parse_metadata(path, x, nk - 1, info))) goto done;
            continue;
        }
        if (!x->string[0]) {
            st = pdi_errorf(PD_ERR_INVALID, "safetensors %s: a tensor has an empty name", cp);
            goto done;
        }
        if ((st = parse_entry(path, x, data_len, &tmp[nt]))) goto done;
        if (!(tmp[nt].name = pdi_strdup(x->string))) {
            st = pdi_errorf(PD_ERR_NOMEM, "safetensors %s: out of memory", cp);
            goto done;
        }
        spans[nt] = (struct span){tmp[nt].begin, tmp[nt].end, nt};
        info->n_tensors = ++nt;
    }
    /* File order = data-offset order (header order breaks ties); then no two
     * non-empty ranges may overlap. */
    qsort(spans, (size_t)nt, sizeof *spans, cmp_span);
    uint64_t reach = 0;
    int reach_idx = -1;
    for (int i = 0; i < nt; i++) {
        const struct span *s = &spans[i];
        if (s->begin == s->end) continue;
        if (reach_idx >= 0 && s->begin < reach) {
            st = pdi_errorf(PD_ERR_INVALID, "safetensors %s: tensors %s and %s overlap in the data section", cp,
                            pdi_quote(tmp[reach_idx].name, nb, sizeof nb), pdi_quote(tmp[s->idx].name, nb2, sizeof nb2));
            goto done;
        }
        reach = s->end;
        reach_idx = s->idx;
    }
    struct pd_safetensors_entry *sorted = pdi_calloc((size_t)nt + 1, sizeof *sorted);
    if (!sorted) {
        st = pdi_errorf(PD_ERR_NOMEM, "safetensors %s: out of memory", cp);
        goto done;
    }
    for (int i = 0; i < nt; i++) sorted[i] = tmp[spans[i].idx];
    info->tensors = sorted;
    free(tmp);
done:
    free(names);
    free(spans);
    cJSON_Delete(root);
    return st;
}

/* Map path read-only. *map is NULL for an empty file. */
static int map_file(const char *path, unsigned char **map, uint64_t *size)
{
    char pb[PDI_QUOTE_BUF];
    *map = NULL;
    *size = 0;
    if (!path) return pdi_errorf(PD_ERR_INVALID, "safetensors: NULL path");
    int fd = pdi_file_open_read(path, "safetensors"); /* regular files only, never blocks */
    if (fd < 0) return pd_last_status();
    struct stat sb;
    if (fstat(fd, &sb)) {
        int e = errno;
        close(fd);
        return pdi_errorf(PD_ERR_IO, "safetensors %s: stat failed: %s", pdi_quote(path, pb, sizeof pb), strerror(e));
    }
    *size = (uint64_t)sb.st_size;
    if (*size) {
        void *p = mmap(NULL, (size_t)*size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return pdi_errorf(PD_ERR_IO, "safetensors %s: mmap failed: %s", pdi_quote(path, pb, sizeof pb), strerror(e));
        }
        *map = p;
    }
    close(fd);
    return PD_OK;
}

struct pd_safetensors_info *pd_safetensors_info(const char *path)
{
    unsigned char *map;
    uint64_t size;
    if (map_file(path, &map, &size)) return NULL;
    struct pd_safetensors_info *info = pdi_calloc(1, sizeof *info);
    int st = info ? parse_header(path, map, size, info) : pdi_errorf(PD_ERR_NOMEM, "safetensors: out of memory");
    if (map) munmap(map, (size_t)size);
    if (st) {
        pd_safetensors_info_destroy(info);
        return NULL;
    }
    return info;
}

struct pd_state_dict *pd_safetensors_load(const char *path)
{
    unsigned char *map;
    uint64_t size;
    if (map_file(path, &map, &size)) return NULL;
    char pb[PDI_QUOTE_BUF], nb[PDI_QUOTE_BUF];
    struct pd_safetensors_info info = {0};
    struct pd_state_dict *sd = NULL;
    if (parse_header(path, map, size, &info)) goto fail;
    if (map) madvise(map, (size_t)size, MADV_SEQUENTIAL);
    if (!(sd = pd_state_dict_create())) goto fail;
    const unsigned char *data = map + 8 + info.header_len;
    for (int i = 0; i < info.n_tensors; i++) {
        const struct pd_safetensors_entry *e = &info.tensors[i];
        size_t nbytes = (size_t)(e->end - e->begin);
        if (e->dtype == PD_BOOL) {
            /* Kernels assume bools are 0 or 1; anything else is not a bool. */
            const unsigned char *b = data + e->begin;
            for (size_t j = 0; j < nbytes; j++)
                if (b[j] > 1) {
                    pdi_errorf(PD_ERR_INVALID, "safetensors %s: tensor %s: bool element %zu has value %u (not 0 "
                               "or 1)", pdi_quote(path, pb, sizeof pb), pdi_quote(e->name, nb, sizeof nb), j, b[j]);
                    goto fail;
                }
        }
        /* The empty op and the host-write entry point, as pd_from_buffer,
         * but owned by the dict, not by a scope. */
        struct pd_tensor *t = pdi_from_host(data + e->begin, e->shape, e->ndim, e->dtype, "safetensors_load");
        if (!t) {
            pdi_errorf(pd_last_status(), "safetensors %s: tensor %s: %s", pdi_quote(path, pb, sizeof pb),
                       pdi_quote(e->name, nb, sizeof nb), pd_last_error());
            goto fail;
        }
        int st = pd_state_dict_add(sd, e->name, t);
        pd_tensor_release(t);
        if (st) goto fail;
    }
    for (int i = 0; i < info.n_meta; i++)
        if (pd_state_dict_set_meta(sd, info.meta_keys[i], info.meta_values[i])) goto fail;
    info_clear(&info);
    if (map) munmap(map, (size_t)size);
    return sd;
fail:
    info_clear(&info);
    if (map) munmap(map, (size_t)size);
    pd_state_dict_destroy(sd);
    return NULL;
}

/* ---- save ------------------------------------------------------------ */

/* The header JSON for sd (tensors in sd's order, contiguous data offsets
 * from 0), or NULL with the message set. Caller frees with cJSON_free. */
static char *build_header(const char *cp, const struct pd_state_dict *sd)
{
    char nb[PDI_QUOTE_BUF];
    cJSON *root = cJSON_CreateObject();
    if (!root) return pdi_error(PD_ERR_NOMEM, "safetensors %s: out of memory", cp);
    int nm = pd_state_dict_meta_size(sd);
    if (nm) {
        cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
        for (int i = 0; m && i < nm; i++) {
            const char *k = pd_state_dict_meta_key(sd, i), *v = pd_state_dict_meta_value(sd, i);
            if (utf8_bad((const unsigned char *)k, strlen(k)) >= 0 || utf8_bad((const unsigned char *)v, strlen(v)) >= 0) {
                cJSON_Delete(root);
                return pdi_error(PD_ERR_INVALID, "safetensors %s: metadata %s: not valid UTF-8", cp,
                                 pdi_quote(k, nb, sizeof nb));
            }
            if (!cJSON_AddStringToObject(m, k, v)) m = NULL;
        }
        if (!m) {
            cJSON_Delete(root);
            return pdi_error(PD_ERR_NOMEM, "safetensors %s: out of memory", cp);
        }
    }
    uint64_t off = 0;
    for (int i = 0; i < pd_state_dict_size(sd); i++) {
        const char *name = pd_state_dict_name(sd, i);
        const struct pd_tensor *t = pd_state_dict_tensor(sd, i);
        const char *why = !t ? "NULL tensor"
                          : !strcmp(name, "__metadata__") ? "the name is reserved for metadata"
                          : utf8_bad((const unsigned char *)name, strlen(name)) >= 0 ? "name is not valid UTF-8"
                          : (unsigned)pd_tensor_dtype(t) >= PD_DTYPE_COUNT ? "invalid dtype" : NULL;
        if (why) {
            cJSON_Delete(root);
            return pdi_error(PD_ERR_INVALID, "safetensors %s: tensor %s: %s", cp, pdi_quote(name, nb, sizeof nb), why);
        }
        uint64_t nbytes = (uint64_t)pd_tensor_numel(t) * pd_dtype_size(pd_tensor_dtype(t));
        cJSON *e = cJSON_AddObjectToObject(root, name);
        cJSON *shape = e ? cJSON_AddArrayToObject(e, "shape") : NULL;
        cJSON *offs = shape && cJSON_AddStringToObject(e, "dtype", st_names[pd_tensor_dtype(t)])
                          ? cJSON_AddArrayToObject(e, "data_offsets")
                          : NULL;
        int ok = offs != NULL;
        for (int d = 0; ok && d < pd_tensor_ndim(t); d++)
            ok = cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)pd_tensor_shape(t)[d]));
        ok = ok && cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off)) &&
             cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(off + nbytes)));
        if (!ok) {
            cJSON_Delete(root);
            return pdi_error(PD_ERR_NOMEM, "safetensors %s: out of memory", cp);
        }
        off += nbytes;
    }
    if (off >= 0x1p53) {
        cJSON_Delete(root);
        return pdi_error(PD_ERR_INVALID, "safetensors %s: data of %llu bytes is too large for the format", cp,
                         (unsigned long long)off);
    }
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!json) return pdi_error(PD_ERR_NOMEM, "safetensors %s: out of memory", cp);
    return json;
}

int pd_safetensors_save(const char *path, const struct pd_state_dict *sd)
{
    char pb[PDI_QUOTE_BUF];
    if (!path || !*path) return pdi_errorf(PD_ERR_INVALID, "safetensors save: NULL or empty path");
    const char *cp = pdi_quote(path, pb, sizeof pb);
    if (!sd) return pdi_errorf(PD_ERR_NULL, "safetensors save %s: NULL state dict", cp);
    /* Everything that can be checked is checked before a byte is written. */
    char *json = build_header(cp, sd);
    if (!json) return pd_last_status();
    size_t jl = strlen(json), padded = (jl + 7) & ~(size_t)7;
    if (padded > PD_SAFETENSORS_MAX_HEADER) {
        cJSON_free(json);
        return pdi_errorf(PD_ERR_INVALID, "safetensors save %s: header of %zu bytes exceeds the limit", cp, padded);
    }
    char *head = pdi_malloc(8 + padded);
    if (!head) {
        cJSON_free(json);
        return pdi_errorf(PD_ERR_NOMEM, "safetensors save %s: out of memory", cp);
    }
    for (int i = 0; i < 8; i++) head[i] = (char)(((uint64_t)padded >> (8 * i)) & 0xff);
    memcpy(head + 8, json, jl);
    memset(head + 8 + jl, ' ', padded - jl);
    cJSON_free(json);

    /* The temporary, fsync, rename and directory fsync: src/io/file.h. */
    struct pdi_wfile w;
    FILE *f = pdi_wfile_begin(&w, path, "safetensors save");
    if (!f) {
        free(head);
        return pd_last_status();
    }
    int st = PD_OK;
    void *buf = NULL;
    if (fwrite(head, 1, 8 + padded, f) != 8 + padded) goto commit; /* commit reports the stream error */
    for (int i = 0; i < pd_state_dict_size(sd); i++) {
        const struct pd_tensor *t = pd_state_dict_tensor(sd, i);
        size_t nbytes = (size_t)pd_tensor_numel(t) * pd_dtype_size(pd_tensor_dtype(t));
        if (!nbytes) continue;
        const void *src = pd_tensor_data(t);
        if (!src) { /* meta: nothing to save */
            st = pd_last_status();
            goto fail;
        }
        if (!pd_tensor_is_contiguous(t)) {
            if (!(buf = pdi_malloc(nbytes))) {
                st = pdi_errorf(PD_ERR_NOMEM, "safetensors save %s: out of memory", cp);
                goto fail;
            }
            pd_to_buffer(t, buf, pd_tensor_dtype(t));
            src = buf;
        }
        if (fwrite(src, 1, nbytes, f) != nbytes) goto commit;
        free(buf);
        buf = NULL;
    }
commit:
    free(buf);
    free(head);
    return pdi_wfile_commit(&w);
fail:
    free(buf);
    free(head);
    pdi_wfile_abort(&w);
    return st;
}
