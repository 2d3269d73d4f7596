/* paddle.c — tensor checksums: an RFC 1321 MD5 and the observer that writes
 * one line per op output ("<seq> <name> out<j> <dtype> [<shape>] <md5>"), so
 * two runs can be diffed and the first diverging op found (paddlec md5diff).
 *
 * Two modes: bitwise hashes the raw element bytes in row-major order (any
 * strides); rounded hashes the values printed with N decimals ("%.Nf", -0
 * written as 0), which tolerates last-bit noise between kernels or machines
 * (Paddle's FLAGS_tensor_md5_checksum_precision).
 *
 * The file and the line counter are process-wide, guarded by a mutex; the
 * observer runs on whichever thread dispatched the op. Ops run inside a
 * backward VJP are named "<GradNode name>/<call name>".
 */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "io/file.h"
#include "pd/profiler.h"

/* ---- MD5 (RFC 1321) ---------------------------------------------------- */
struct md5 {
    uint32_t h[4];
    uint64_t len;       /* bytes hashed so far */
    unsigned char buf[64];
    size_t nbuf;
};

static const uint32_t K[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};
static const unsigned char R[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                    5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                                    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};

static void md5_init(struct md5 *m)
{
    m->h[0] = 0x67452301;
    m->h[1] = 0xefcdab89;
    m->h[2] = 0x98badcfe;
    m->h[3] = 0x10325476;
    m->len = 0;
    m->nbuf = 0;
}

static void md5_block(struct md5 *m, const unsigned char *p)
{
    uint32_t w[16];
    for (int i = 0; i < 16; i++) /* little-endian words, whatever the host */
        w[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
               (uint32_t)p[4 * i + 3] << 24;
    uint32_t a = m->h[0], b = m->h[1], c = m->h[2], d = m->h[3];
    for (int i = 0; i < 64; i++) {
        uint32_t f;
        int g;
        if (i < 16) { f = (b & c) | (~b & d); g = i; }
        else if (i < 32) { f = (d & b) | (~d & c); g = (5 * i + 1) & 15; }
        else if (i < 48) { f = b ^ c ^ d; g = (3 * i + 5) & 15; }
        else { f = c ^ (b | ~d); g = (7 * i) & 15; }
        uint32_t t = a + f + K[i] + w[g];
        a = d;
        d = c;
        c = b;
        b = b + ((t << R[i]) | (t >> (32 - R[i])));
    }
    m->h[0] += a;
    m->h[1] += b;
    m->h[2] += c;
    m->h[3] += d;
}

static void md5_update(struct md5 *m, const void *data, size_t n)
{
    const unsigned char *p = data;
    if (!n) return; /* data may be NULL then: no arithmetic on it */
    m->len += n;
    if (m->nbuf) {
        size_t k = 64 - m->nbuf < n ? 64 - m->nbuf : n;
        memcpy(m->buf + m->nbuf, p, k);
        m->nbuf += k;
        p += k;
        n -= k;
        if (m->nbuf < 64) return;
        md5_block(m, m->buf);
        m->nbuf = 0;
    }
    for (; n >= 64; p += 64, n -= 64) md5_block(m, p);
    memcpy(m->buf, p, n);
    m->nbuf = n;
}

static void md5_final(struct md5 *m, char hex[33])
{
    uint64_t bits = m->len * 8;
    static const unsigned char pad[64] = {0x80};
    size_t k = m->nbuf < 56 ? 56 - m->nbuf : 120 - m->nbuf;
    md5_update(m, pad, k);
    unsigned char lenb[8];
    for (int i = 0; i < 8; i++) lenb[i] = (unsigned char)(bits >> (8 * i));
    md5_update(m, lenb, 8);
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        unsigned byte = (m->h[i / 4] >> (8 * (i % 4))) & 0xff;
        hex[2 * i] = digits[byte >> 4];
        hex[2 * i + 1] = digits[byte & 15];
    }
    hex[32] = 0;
}

void pd_md5_hex(const void *data, size_t n, char hex[33])
{
    struct md5 m;
    md5_init(&m);
    md5_update(&m, data, n);
    md5_final(&m, hex);
}

/* ---- tensor checksums -------------------------------------------------- */
static void hash_element(struct md5 *m, const char *p, enum pd_dtype dt, size_t esz, enum pd_md5_mode mode,
                         int decimals)
{
    if (mode == PD_MD5_BITWISE) { md5_update(m, p, esz); return; }
    char s[64];
    int k;
    if (dt == PD_BOOL || (dt >= PD_I8 && dt <= PD_I64)) {
        k = snprintf(s, sizeof s, "%lld,", (long long)pdi_load_int(p, dt));
    } else {
        double v = pdi_load(p, dt);
        if (isnan(v)) k = snprintf(s, sizeof s, "nan,");
        else if (isinf(v)) k = snprintf(s, sizeof s, v > 0 ? "inf," : "-inf,");
        else {
            k = snprintf(s, sizeof s, "%.*f,", decimals, v);
            /* "-0.000" and "0.000" are the same rounded value */
            int zero = 1;
            for (int i = 1; i < k - 1 && zero; i++)
                if (s[i] != '0' && s[i] != '.') zero = 0;
            if (s[0] == '-' && zero) { memmove(s, s + 1, (size_t)k); k--; }
        }
    }
    md5_update(m, s, (size_t)k);
}

int pd_md5_tensor(const struct pd_tensor *t, enum pd_md5_mode mode, int decimals, char hex[33])
{
    if (!t) return pdi_null_tensor("pd_md5_tensor");
    if ((unsigned)mode >= PD_MD5_MODE_COUNT) return pdi_errorf(PD_ERR_INVALID, "pd_md5_tensor: invalid mode %d", (int)mode);
    if (mode == PD_MD5_ROUNDED && (decimals < 0 || decimals > 17))
        return pdi_errorf(PD_ERR_INVALID, "pd_md5_tensor: decimals must be in [0, 17], got %d", decimals);
    if (!pdi_host_read(t, "md5_tensor")) return pd_last_status();
    struct pd_kview v;
    pdi_kview_of(t, &v);
    int64_t n = pdi_kview_numel(&v);
    size_t esz = pd_dtype_size(v.dtype);
    struct md5 m;
    md5_init(&m);
    if (mode == PD_MD5_BITWISE && pdi_kview_contiguous(&v)) {
        md5_update(&m, v.data, (size_t)n * esz);
    } else if (pdi_kview_contiguous(&v)) {
        for (int64_t i = 0; i < n; i++) hash_element(&m, v.data + (size_t)i * esz, v.dtype, esz, mode, decimals);
    } else {
        for (int64_t i = 0; i < n; i++) hash_element(&m, pdi_kview_ptr(&v, i), v.dtype, esz, mode, decimals);
    }
    md5_final(&m, hex);
    return PD_OK;
}

/* ---- the observer ------------------------------------------------------ */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *out_file;
static struct pdi_wfile out_w; /* out_file is out_w.f: the file appears atomically at pd_md5_end */
static enum pd_md5_mode cur_mode;
static int cur_decimals;
static uint64_t n_lines;
static int write_failed;

static void md5_after(const struct pdi_call *c, uint64_t seq, void *ctx)
{
    PDI_UNUSED(seq);
    PDI_UNUSED(ctx);
    char name[2 * PDI_NAME_BUF];
    const char *bw = pdi_backward_node_name();
    snprintf(name, sizeof name, "%s%s%s", bw ? bw : "", bw ? "/" : "", pdi_call_name(c));
    for (int j = 0; j < c->n_out; j++) {
        const struct pd_tensor *t = c->out[j];
        char hex[33], shape[PDI_SHAPE_BUF];
        if (t && pdi_is_meta(t)) snprintf(hex, sizeof hex, "meta"); /* no data to hash */
        else if (!t || pd_md5_tensor(t, cur_mode, cur_decimals, hex)) snprintf(hex, sizeof hex, "-");
        /* "[2, 3]" -> "[2,3]": one field per column keeps the file easy to split */
        pdi_shape_str(t ? t->shape : NULL, t ? t->ndim : 0, shape, sizeof shape);
        char *w = shape;
        for (char *r = shape; *r; r++)
            if (*r != ' ') *w++ = *r;
        *w = 0;
        pthread_mutex_lock(&mu);
        if (out_file && fprintf(out_file, "%llu %s out%d %s %s %s\n", (unsigned long long)n_lines++, name, j,
                                t ? pd_dtype_name(t->dtype) : "-", shape, hex) < 0)
            write_failed = 1;
        pthread_mutex_unlock(&mu);
    }
}

int pd_md5_begin(const char *path, enum pd_md5_mode mode, int decimals)
{
    if (!path || !*path) return pdi_errorf(PD_ERR_INVALID, "pd_md5_begin: no output path");
    if ((unsigned)mode >= PD_MD5_MODE_COUNT) return pdi_errorf(PD_ERR_INVALID, "pd_md5_begin: invalid mode %d", (int)mode);
    if (mode == PD_MD5_ROUNDED && (decimals < 0 || decimals > 17))
        return pdi_errorf(PD_ERR_INVALID, "pd_md5_begin: decimals must be in [0, 17], got %d", decimals);
    if (out_file) return pdi_errorf(PD_ERR_STATE, "pd_md5_begin: checksums are already being written");
    struct pdi_wfile w;
    FILE *f = pdi_wfile_begin(&w, path, "pd_md5_begin");
    if (!f) return pd_last_status();
    pthread_mutex_lock(&mu);
    out_w = w;
    out_file = f;
    cur_mode = mode;
    cur_decimals = decimals;
    n_lines = 0;
    write_failed = 0;
    pthread_mutex_unlock(&mu);
    int rc = pdi_observer_add(md5_after, NULL);
    if (rc) {
        pthread_mutex_lock(&mu);
        out_file = NULL;
        pthread_mutex_unlock(&mu);
        pdi_wfile_abort(&out_w);
    }
    return rc;
}

int pd_md5_end(void)
{
    if (!out_file) return pdi_errorf(PD_ERR_STATE, "pd_md5_end: checksums are not on (missing pd_md5_begin)");
    pdi_observer_remove(md5_after, NULL);
    pthread_mutex_lock(&mu);
    out_file = NULL;
    int failed = write_failed;
    pthread_mutex_unlock(&mu);
    if (failed) {
        pdi_wfile_abort(&out_w);
        return pdi_errorf(PD_ERR_IO, "pd_md5_end: writing the checksum file failed");
    }
    return pdi_wfile_commit(&out_w); /* flush, fsync, rename into place */
}

/* ---- comparing two files ---------------------------------------------- */
/* A line of pd_md5_begin's is at most ~560 bytes (name < 2 * PDI_NAME_BUF,
 * shape < PDI_SHAPE_BUF): one longer than this is not one of them. */
#define MD5_LINE_MAX 1024

/* Reads one line (without its newline) into buf; 0 at the end of the file,
 * -1 for a line of MD5_LINE_MAX bytes or more (the rest is skipped). */
static int read_line(FILE *f, char *buf, size_t n)
{
    if (!fgets(buf, (int)n, f)) { buf[0] = 0; return 0; }
    size_t k = strlen(buf);
    if (k && buf[k - 1] == '\n') { buf[k - 1] = 0; return 1; }
    if (k + 1 < n) return 1; /* the last line, without a newline */
    int ch;
    while ((ch = fgetc(f)) != EOF && ch != '\n') {}
    return -1;
}

/* The span [*b, *e) of the last space-separated field of [s, end); end moves
 * before it. 0 when there is none. */
static int last_field(const char *s, const char **end, const char **b)
{
    const char *e = *end;
    if (e == s || e[-1] == ' ') return 0;
    const char *p = e;
    while (p > s && p[-1] != ' ') p--;
    *b = p;
    *end = p > s ? p - 1 : p; /* before the separating space */
    return 1;
}

/* A line as pd_md5_begin writes it: "<seq> <name> out<j> <dtype> [<shape>]
 * <md5>" with seq the 0-based line number and md5 32 hex digits, "meta" or
 * "-". The name may hold anything but a newline, so the fields are taken from
 * both ends. */
static int is_md5_line(const char *s, int64_t seq)
{
    char want[24];
    int k = snprintf(want, sizeof want, "%lld ", (long long)seq);
    if (strncmp(s, want, (size_t)k)) return 0;
    const char *name = s + k, *end = s + strlen(s), *f;
    if (!last_field(name, &end, &f)) return 0; /* md5 */
    size_t n = (size_t)(s + strlen(s) - f);
    int hex = n == 32;
    for (size_t i = 0; hex && i < n; i++) hex = isxdigit((unsigned char)f[i]) && !isupper((unsigned char)f[i]);
    if (!hex && strcmp(f, "meta") && strcmp(f, "-")) return 0;
    const char *fe = end;
    if (!last_field(name, &end, &f) || *f != '[' || fe[-1] != ']') return 0; /* shape */
    if (!last_field(name, &end, &f)) return 0;                              /* dtype */
    fe = end;
    if (!last_field(name, &end, &f) || strncmp(f, "out", 3) || f + 3 == fe) return 0; /* out<j> */
    for (const char *p = f + 3; p < fe; p++)
        if (!isdigit((unsigned char)*p)) return 0;
    return end > name; /* a non-empty name */
}

int pd_md5_diff(const char *path_a, const char *path_b, struct pd_md5_diff *d)
{
    if (!path_a || !path_b || !d) return pdi_errorf(PD_ERR_NULL, "pd_md5_diff: NULL argument");
    FILE *fa = pdi_file_fopen_read(path_a, "md5diff"); /* regular files only, never blocks */
    if (!fa) return pd_last_status();
    FILE *fb = pdi_file_fopen_read(path_b, "md5diff");
    if (!fb) { fclose(fa); return pd_last_status(); }
    memset(d, 0, sizeof *d);
    /* Both files are read to their ends, every line checked, even past the
     * first difference: a file that is not a checksum dump is an error, not
     * a difference. */
    int rc = 0, ha = 1, hb = 1;
    int64_t bad_line = 0;
    const char *bad_path = NULL;
    char la[MD5_LINE_MAX], lb[MD5_LINE_MAX];
    for (int64_t line = 1; ha || hb; line++) {
        if (ha) ha = read_line(fa, la, sizeof la);
        else la[0] = 0;
        if (hb) hb = read_line(fb, lb, sizeof lb);
        else lb[0] = 0;
        if (ha && (ha < 0 || !is_md5_line(la, line - 1))) { bad_path = path_a, bad_line = line; break; }
        if (hb && (hb < 0 || !is_md5_line(lb, line - 1))) { bad_path = path_b, bad_line = line; break; }
        if (!rc && (ha != hb || strcmp(la, lb))) {
            d->line = line;
            snprintf(d->a, sizeof d->a, "%s", la);
            snprintf(d->b, sizeof d->b, "%s", lb);
            rc = 1;
        }
    }
    int bad = ferror(fa) || ferror(fb);
    fclose(fa);
    fclose(fb);
    char qa[PDI_QUOTE_BUF], qb[PDI_QUOTE_BUF];
    if (bad) return pdi_errorf(PD_ERR_IO, "md5diff: reading %s or %s failed", pdi_quote(path_a, qa, sizeof qa),
                               pdi_quote(path_b, qb, sizeof qb));
    if (bad_path) {
        memset(d, 0, sizeof *d);
        return pdi_errorf(PD_ERR_INVALID, "md5diff: %s line %lld is not a checksum line of pd_md5_begin's",
                          pdi_quote(bad_path, qa, sizeof qa), (long long)bad_line);
    }
    return rc;
}
