/* The built-in arithmetic data set: formats, generated lines are correct and
 * never held out, held-out task problems are distinct and absent from the
 * training text, the scorer, determinism, and config errors. */
#include <stdlib.h>
#include <string.h>

#include "pd/data.h"
#include "pt.h"

/* Parses "a+b=c" / "a-b=c" (c maybe reversed); returns 1 if the line is right. */
static int check_line(const char *line, size_t n, int reverse, int max_digits, int *digits_a)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf) return 0;
    memcpy(buf, line, n);
    buf[n] = 0;
    char *op = strpbrk(buf, "+-"), *eq = strchr(buf, '=');
    if (!op || !eq || eq < op) return 0;
    *op = 0;
    *eq = 0;
    char *c = eq + 1;
    size_t la = strlen(buf), lb = strlen(op + 1), lc = strlen(c);
    if (la < 1 || la > (size_t)max_digits || lb < 1 || lb > (size_t)max_digits || lc < 1) return 0;
    if ((la > 1 && buf[0] == '0') || (lb > 1 && op[1] == '0')) return 0; /* no leading zeros */
    if (reverse)
        for (size_t i = 0; i < lc / 2; i++) {
            char t = c[i];
            c[i] = c[lc - 1 - i];
            c[lc - 1 - i] = t;
        }
    long long a = atoll(buf), b = atoll(op + 1), r = atoll(c);
    *digits_a = (int)la;
    int is_add = line[op - buf] == '+';
    return is_add ? a + b == r : (a >= b && a - b == r);
}

static void test_format_and_score(void)
{
    char p[24], a[24];
    pd_arith_format(NULL, PD_ARITH_ADD, 347, 589, p, a);
    PT_CHECK(!strcmp(p, "347+589=") && !strcmp(a, "639"));
    struct pd_arith_config cfg;
    pd_arith_config_default(&cfg);
    PT_CHECK(cfg.max_digits == 3 && cfg.reverse_answer == 1 && cfg.subtraction == 0);
    cfg.reverse_answer = 0;
    pd_arith_format(&cfg, PD_ARITH_ADD, 347, 589, p, a);
    PT_CHECK(!strcmp(p, "347+589=") && !strcmp(a, "936"));
    pd_arith_format(&cfg, PD_ARITH_SUB, 500, 7, p, a);
    PT_CHECK(!strcmp(p, "500-7=") && !strcmp(a, "493"));
    pd_arith_format(NULL, PD_ARITH_ADD, 50, 50, p, a);
    PT_CHECK(!strcmp(a, "001"));
    pd_arith_format(NULL, PD_ARITH_ADD, 0, 0, p, a);
    PT_CHECK(!strcmp(p, "0+0=") && !strcmp(a, "0"));

    PT_CHECK(pd_arith_score("639", "639\n12+3=", 9) == 1);
    PT_CHECK(pd_arith_score("639", "639", 3) == 1);
    PT_CHECK(pd_arith_score("639", "6391\n", 5) == 0);
    PT_CHECK(pd_arith_score("639", "63\n", 3) == 0);
    PT_CHECK(pd_arith_score("639", "", 0) == 0);
    PT_CHECK(pd_arith_score("639", " 639\n", 5) == 0);
    PT_CHECK(pd_arith_score("639", "639 \n", 5) == 0);
    PT_CHECK(pd_arith_score("639", "639\n", 2) == 0); /* only len bytes count */
    PT_CHECK(pd_arith_score(NULL, "639", 3) == 0);
}

static void test_text(void)
{
    size_t len, len2;
    char *t = pd_builtin_text(1, 20000, NULL, &len);
    char *t2 = pd_builtin_text(1, 20000, NULL, &len2);
    char *t3 = pd_builtin_text(2, 20000, NULL, NULL);
    PT_CHECK(t && t2 && t3 && len == len2 && !memcmp(t, t2, len) && strlen(t) == len);
    PT_CHECK(t3 && strcmp(t, t3) != 0);
    int lines = 0, bad = 0, held = 0, by_digits[4] = {0};
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(t + i, '\n', len - i);
        if (!nl) {
            bad++;
            break;
        }
        size_t n = (size_t)(nl - (t + i));
        int da = 0;
        if (!check_line(t + i, n, 1, 3, &da)) bad++;
        else by_digits[da]++;
        long long a, b;
        if (sscanf(t + i, "%lld+%lld=", &a, &b) == 2) held += pd_arith_is_heldout(NULL, PD_ARITH_ADD, a, b);
        lines++;
        i += n + 1;
    }
    PT_CHECK(lines == 20000 && bad == 0 && held == 0);
    /* operand digit counts are uniform over 1..3 */
    for (int d = 1; d <= 3; d++) PT_NEAR(by_digits[d] / 20000.0, 1 / 3.0, 0.03);
    free(t2);
    free(t3);

    /* subtraction, plain answers, up to 5 digits */
    struct pd_arith_config cfg;
    pd_arith_config_default(&cfg);
    cfg.subtraction = 1;
    cfg.reverse_answer = 0;
    cfg.max_digits = 5;
    char *s = pd_builtin_text(3, 5000, &cfg, &len2);
    int n_sub = 0;
    bad = 0;
    lines = 0;
    for (size_t i = 0; s && i < len2;) {
        const char *nl = memchr(s + i, '\n', len2 - i);
        size_t n = (size_t)(nl - (s + i));
        int da;
        bad += !check_line(s + i, n, 0, 5, &da);
        n_sub += memchr(s + i, '-', n) != NULL;
        lines++;
        i += n + 1;
    }
    PT_CHECK(s && lines == 5000 && bad == 0 && n_sub > 2000 && n_sub < 3000);
    free(s);

    /* the dataset convenience: byte ids of the same text */
    struct pd_text_dataset *ds = pd_text_dataset_builtin(1, 20000, NULL, NULL, 0.1);
    PT_CHECK(ds && pd_text_dataset_num_tokens(ds, PD_SPLIT_TRAIN) + pd_text_dataset_num_tokens(ds, PD_SPLIT_VAL) ==
                       (int64_t)len);
    int32_t first[8];
    PT_CHECK(pd_text_dataset_ids(ds, PD_SPLIT_TRAIN, 0, 8, first) == 0);
    int same = 1;
    for (int i = 0; i < 8; i++) same &= first[i] == (unsigned char)t[i];
    PT_CHECK(same);
    pd_text_dataset_destroy(ds);
    free(t);

    PT_CHECK(pd_builtin_text(1, 0, NULL, NULL) == NULL && strstr(pd_last_error(), "n_lines"));
    cfg.max_digits = 10;
    PT_CHECK(pd_builtin_text(1, 10, &cfg, NULL) == NULL && strstr(pd_last_error(), "max_digits"));
    cfg.max_digits = 3;
    cfg.heldout_per_mille = 0;
    PT_CHECK(pd_arith_config_validate(&cfg) < 0 && strstr(pd_last_error(), "heldout_per_mille"));
}

static void test_task(void)
{
    const int N = 400;
    struct pd_arith_task *task = pd_arith_task_create(NULL, 9, N);
    PT_CHECK(task && pd_arith_task_size(task) == N);
    /* every problem is held out and distinct, and its answer is right */
    int bad = 0, dup = 0;
    for (int i = 0; task && i < N; i++) {
        const char *p = pd_arith_task_prompt(task, i), *a = pd_arith_task_answer(task, i);
        long long x, y;
        bad += sscanf(p, "%lld+%lld=", &x, &y) != 2 || !pd_arith_is_heldout(NULL, PD_ARITH_ADD, x, y);
        char line[64];
        snprintf(line, sizeof line, "%s%s", p, a);
        int da;
        bad += !check_line(line, strlen(line), 1, 3, &da);
        for (int j = 0; j < i; j++) dup += !strcmp(p, pd_arith_task_prompt(task, j));
        bad += pd_arith_task_score(task, i, a, strlen(a)) != 1;
    }
    PT_CHECK(bad == 0 && dup == 0);
    PT_CHECK(pd_arith_task_prompt(task, N) == NULL && pd_arith_task_score(task, -1, "1", 1) == 0);

    /* none of them, nor their commuted forms, is in a large training text */
    size_t len;
    char *t = pd_builtin_text(9, 200000, NULL, &len);
    char *nt = malloc(len + 2);
    nt[0] = '\n';
    memcpy(nt + 1, t, len + 1);
    int leaks = 0;
    for (int i = 0; task && i < N; i++) {
        char key[40];
        long long x, y;
        sscanf(pd_arith_task_prompt(task, i), "%lld+%lld=", &x, &y);
        snprintf(key, sizeof key, "\n%lld+%lld=", x, y);
        leaks += strstr(nt, key) != NULL;
        snprintf(key, sizeof key, "\n%lld+%lld=", y, x);
        leaks += strstr(nt, key) != NULL;
    }
    PT_CHECK(leaks == 0);
    free(nt);
    free(t);

    /* deterministic in the seed */
    struct pd_arith_task *again = pd_arith_task_create(NULL, 9, N), *other = pd_arith_task_create(NULL, 10, N);
    int same = 1, diff = 0;
    for (int i = 0; again && other && i < N; i++) {
        same &= !strcmp(pd_arith_task_prompt(task, i), pd_arith_task_prompt(again, i));
        diff += strcmp(pd_arith_task_prompt(task, i), pd_arith_task_prompt(other, i)) != 0;
    }
    PT_CHECK(again && same && diff > N / 2);
    pd_arith_task_destroy(again);
    pd_arith_task_destroy(other);
    pd_arith_task_destroy(task);
    pd_arith_task_destroy(NULL);

    /* a problem space too small for the request is a clear error */
    struct pd_arith_config cfg;
    pd_arith_config_default(&cfg);
    cfg.max_digits = 1;
    PT_CHECK(pd_arith_task_create(&cfg, 1, 50) == NULL && strstr(pd_last_error(), "distinct held-out problems"));
    PT_CHECK(pd_arith_task_create(NULL, 1, 0) == NULL && strstr(pd_last_error(), "n must be"));
}

int main(void)
{
    test_format_and_score();
    test_text();
    test_task();
    PT_DONE();
}
