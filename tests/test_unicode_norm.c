/* Unicode normalization (src/data/unicode_norm.c) and the Hugging Face
 * normalizers built on it, against references paddlec did not write
 * (fixtures: tests/fixtures/tokenizer/, made by tools/ref/unicode_norm_ref.py):
 *   - unorm.json: Python's unicodedata.normalize (NFC, NFD, NFKC, NFKD) of
 *     hard strings (marks in odd orders, blocked marks, Hangul,
 *     compatibility forms, singletons, composition exclusions, a leading
 *     mark) and of 500 random strings of such characters;
 *   - unorm_cases.json: Hugging Face `tokenizers`' ids and decoded text with
 *     nfkc.json (Sequence [NFKC, Prepend, Replace], byte fallback, a
 *     normalized added token) and nfc.json (NFC, byte-level, Qwen 2 split);
 *   - the normal forms' own identities for every code point below U+30000
 *     (each form is idempotent, NFC = NFC(NFD), NFKC = NFC(NFKD),
 *     NFKD = NFKD(NFD)), and bytes that are not UTF-8 passing through. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "data/data_internal.h"
#include "pd/data.h"
#include "pt.h"

static char dir[4096];
static const char *const form_names[] = {"", "nfc", "nfd", "nfkc", "nfkd"};

static const char *fx(const char *name)
{
    static char path[2][4200];
    static int k;
    k ^= 1;
    snprintf(path[k], sizeof path[k], "%sfixtures/tokenizer/%s", dir, name);
    return path[k];
}

static cJSON *load_json(const char *path)
{
    char *text = pd_file_read(path, (size_t)1 << 26, NULL);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

/* form(s) == want, else print the case */
static int norm_is(int form, const char *s, size_t n, const char *want, size_t wn)
{
    size_t m = 0;
    unsigned char *o = pdi_unorm((enum pdi_unorm_form)form, (const unsigned char *)s, n, &m);
    int ok = o && m == wn && !memcmp(o, want, wn) && o[m] == 0;
    if (!ok) {
        printf("  %s of", form_names[form]);
        for (size_t i = 0; i < n; i++) printf(" %02X", (unsigned char)s[i]);
        printf(": got");
        for (size_t i = 0; o && i < m; i++) printf(" %02X", o[i]);
        printf(", want");
        for (size_t i = 0; i < wn; i++) printf(" %02X", (unsigned char)want[i]);
        printf("\n");
    }
    free(o);
    return ok;
}

static void test_python_reference(void)
{
    cJSON *cases = load_json(fx("unorm.json"));
    PT_CHECK(cJSON_IsArray(cases) && cJSON_GetArraySize(cases) > 500);
    int checked = 0, bad = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        for (int f = PDI_UNORM_NFC; f <= PDI_UNORM_NFKD; f++) {
            const char *want = cJSON_GetObjectItem(c, form_names[f])->valuestring;
            if (!norm_is(f, text, strlen(text), want, strlen(want)) && ++bad > 20) break;
            checked++;
        }
    }
    PT_CHECK(bad == 0 && checked > 2000);
    cJSON_Delete(cases);
}

static size_t utf8(uint32_t c, char *o)
{
    if (c < 0x80) { o[0] = (char)c; return 1; }
    if (c < 0x800) { o[0] = (char)(0xC0 | c >> 6); o[1] = (char)(0x80 | (c & 63)); return 2; }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | c >> 12), o[1] = (char)(0x80 | (c >> 6 & 63)), o[2] = (char)(0x80 | (c & 63));
        return 3;
    }
    o[0] = (char)(0xF0 | c >> 18), o[1] = (char)(0x80 | (c >> 12 & 63));
    o[2] = (char)(0x80 | (c >> 6 & 63)), o[3] = (char)(0x80 | (c & 63));
    return 4;
}

/* out = form(s) (pdi_malloc'd) */
static char *norm(int form, const char *s, size_t n, size_t *m)
{
    return (char *)pdi_unorm((enum pdi_unorm_form)form, (const unsigned char *)s, n, m);
}

static void test_identities(void)
{
    int bad = 0;
    for (uint32_t c = 0x80; c < 0x30000 && bad < 10; c++) {
        if (c >= 0xD800 && c < 0xE000) continue;
        char s[8];
        size_t n = utf8(c, s), l[5], m;
        char *f[5] = {0};
        for (int k = PDI_UNORM_NFC; k <= PDI_UNORM_NFKD; k++) f[k] = norm(k, s, n, &l[k]);
        int ok = f[1] && f[2] && f[3] && f[4];
        for (int k = PDI_UNORM_NFC; ok && k <= PDI_UNORM_NFKD; k++) ok = norm_is(k, f[k], l[k], f[k], l[k]);
        char *t = ok ? norm(PDI_UNORM_NFC, f[2], l[2], &m) : NULL; /* NFC(NFD(c)) */
        ok = ok && t && m == l[1] && !memcmp(t, f[1], m);
        free(t);
        t = ok ? norm(PDI_UNORM_NFC, f[4], l[4], &m) : NULL; /* NFC(NFKD(c)) */
        ok = ok && t && m == l[3] && !memcmp(t, f[3], m);
        free(t);
        t = ok ? norm(PDI_UNORM_NFKD, f[2], l[2], &m) : NULL; /* NFKD(NFD(c)) */
        ok = ok && t && m == l[4] && !memcmp(t, f[4], m);
        free(t);
        if (!ok) {
            printf("  identities fail at U+%04X\n", c);
            bad++;
        }
        for (int k = 1; k < 5; k++) free(f[k]);
    }
    PT_CHECK(bad == 0);
    /* Hangul both ways, and a mark on a syllable */
    PT_CHECK(norm_is(PDI_UNORM_NFD, "\xEA\xB0\x81", 3, "\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8", 9));       /* U+AC01 */
    PT_CHECK(norm_is(PDI_UNORM_NFC, "\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8", 9, "\xEA\xB0\x81", 3));
    PT_CHECK(norm_is(PDI_UNORM_NFC, "\xEA\xB0\x80\xE1\x86\xA8", 6, "\xEA\xB0\x81", 3));                   /* LV + T */
    PT_CHECK(norm_is(PDI_UNORM_NFC, "\xEA\xB0\x81\xE1\x86\xA8", 6, "\xEA\xB0\x81\xE1\x86\xA8", 6));       /* LVT + T */
    /* bytes that are not UTF-8 pass through, and block nothing they should not */
    static const char junk[] = "\xFF" "e\xCC\x81 \xC3 \xE2\x82 \x80 \xED\xA0\x80 \xF4\x90\x80\x80 a\xCC\x81\xC0";
    static const char want[] = "\xFF\xC3\xA9 \xC3 \xE2\x82 \x80 \xED\xA0\x80 \xF4\x90\x80\x80 \xC3\xA1\xC0";
    PT_CHECK(norm_is(PDI_UNORM_NFC, junk, sizeof junk - 1, want, sizeof want - 1));
    PT_CHECK(norm_is(PDI_UNORM_NFKC, "", 0, "", 0) && norm_is(PDI_UNORM_NFD, "plain ascii", 11, "plain ascii", 11));
    /* a run of 400,000 marks (classes 230, 220 alternating) sorts in linear time */
    size_t nm = 400000, m;
    char *marks = malloc(2 * nm + 1), *sorted = malloc(2 * nm + 1);
    marks[0] = sorted[0] = 'a';
    for (size_t i = 0; i < nm; i++) {
        memcpy(marks + 1 + 2 * i, i % 2 ? "\xCC\x96" : "\xCC\x81", 2);                 /* U+0316 (220), U+0301 (230) */
        memcpy(sorted + 1 + 2 * i, i < nm / 2 ? "\xCC\x96" : "\xCC\x81", 2);
    }
    char *t = norm(PDI_UNORM_NFD, marks, 2 * nm + 1, &m);
    PT_CHECK(t && m == 2 * nm + 1 && !memcmp(t, sorted, m));
    free(t);
    free(marks);
    free(sorted);
}

static void test_tokenizers(void)
{
    cJSON *cases = load_json(fx("unorm_cases.json"));
    PT_CHECK(cJSON_IsArray(cases) && cJSON_GetArraySize(cases) > 100);
    const char *names[] = {"nfkc", "nfc"};
    struct pd_tokenizer *toks[2] = {pd_tokenizer_load(fx("nfkc.json")), pd_tokenizer_load(fx("nfc.json"))};
    PT_CHECK(toks[0] && toks[1]);
    int checked = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const char *name = cJSON_GetObjectItem(c, "tokenizer")->valuestring;
        int k = strcmp(name, names[0]) ? strcmp(name, names[1]) ? -1 : 1 : 0;
        if (k < 0 || !toks[k]) continue;
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        const char *want_text = cJSON_GetObjectItem(c, "decoded")->valuestring;
        const cJSON *want = cJSON_GetObjectItem(c, "ids");
        int64_t nw = cJSON_GetArraySize(want), n;
        int32_t *ids = NULL;
        n = pd_tokenizer_encode(toks[k], text, strlen(text), &ids);
        int same = n == nw;
        for (int64_t i = 0; same && i < n; i++) same = ids[i] == cJSON_GetArrayItem(want, (int)i)->valueint;
        PT_CHECK(same);
        if (!same) {
            printf("  %s on %.60s: %lld ids, want %lld:", name, text, (long long)n, (long long)nw);
            for (int64_t i = 0; i < n && i < 16; i++) printf(" %d", ids[i]);
            printf(" / want");
            for (int64_t i = 0; i < nw && i < 16; i++) printf(" %d", cJSON_GetArrayItem(want, (int)i)->valueint);
            printf("\n");
        }
        /* decode gives `tokenizers`' text where the ids spell valid UTF-8 */
        char *back = n >= 0 ? pd_tokenizer_decode(toks[k], ids, n, NULL) : NULL;
        if (!strstr(want_text, "\xEF\xBF\xBD")) {
            PT_CHECK(back && !strcmp(back, want_text));
            if (back && strcmp(back, want_text)) printf("  decode %s on %.40s: got %.60s\n", name, text, back);
        }
        free(back);
        free(ids);
        checked++;
    }
    PT_CHECK(checked > 100);
    for (int k = 0; k < 2; k++) pd_tokenizer_destroy(toks[k]);
    cJSON_Delete(cases);
    /* orders and combinations that are refused, one line each */
    static const struct {
        const char *norm, *msg;
    } bad[] = {
        {"{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFD\"},{\"type\":\"NFC\"}]}", "NFC after NFD"},
        {"{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},"
         "\"content\":\"\xE2\x96\x81\"},{\"type\":\"NFKC\"}]}",
         "NFKC after Replace"},
        {"{\"type\":\"Lowercase\"}", "normalizer \"Lowercase\" is not supported"},
    };
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
        char json[1024];
        snprintf(json, sizeof json, "{\"normalizer\": %s, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
                 bad[b].norm);
        struct pd_tokenizer *t = pd_tokenizer_from_json(json);
        PT_CHECK(!t && strstr(pd_last_error(), bad[b].msg) && !strchr(pd_last_error(), '\n'));
        if (t || !strstr(pd_last_error(), bad[b].msg)) printf("  refusal %zu: %s\n", b, pd_last_error());
        pd_tokenizer_destroy(t);
    }
}

int main(void)
{
    PT_FIXTURE(dir, "");
    test_python_reference();
    test_identities();
    test_tokenizers();
    PT_DONE();
}
