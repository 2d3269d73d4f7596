/* paddle.c — paddlec plot: a training run's metrics (the JSON lines that
 * `paddlec train --metrics` writes) as one self-contained HTML page of SVG
 * charts: no script, no style sheet or font from elsewhere, nothing fetched.
 *
 * Every numeric field of the step lines becomes a series over "step": the
 * known ones first, grouped (train and validation loss together, then bits
 * per byte, learning rate, tokens/s, perplexity, accuracy, gradient norm),
 * then any other field, one chart each, in the order they first appear.
 * Lines with an "event" (the run's end) go to a summary table. Lines that
 * are not JSON objects with a numeric step are skipped and counted; null,
 * non-finite, string and boolean values are not plotted. Every text taken
 * from the file (field names, values, the path) is HTML-escaped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gen.h"

struct series {
    char *name;
    double *x, *y;
    int n, cap, chart;
};

struct plot {
    struct series *s;
    int n, cap;
    char **ev_key, **ev_val;   /* the summary: event lines' fields, "key = value" */
    int n_ev, cap_ev;
    int lines, skipped;
};

static void dtor_plot(void *p)
{
    struct plot *pl = p;
    for (int i = 0; i < pl->n; i++) free(pl->s[i].name), free(pl->s[i].x), free(pl->s[i].y);
    for (int i = 0; i < pl->n_ev; i++) free(pl->ev_key[i]), free(pl->ev_val[i]);
    free(pl->s), free(pl->ev_key), free(pl->ev_val), free(pl);
}

/* Grows *arr (elements of size sz) to hold n + 1; exits on failure. */
static void *grow(void *arr, int n, int *cap, size_t sz)
{
    if (n < *cap) return arr;
    int c = *cap ? 2 * *cap : 16;
    void *g = realloc(arr, sz * (size_t)c);
    if (!g) cli_fail(CLI_EXIT_FAIL, "out of memory");
    *cap = c;
    return g;
}

static char *dup_str(const char *s)
{
    char *d = strdup(s);
    if (!d) cli_fail(CLI_EXIT_FAIL, "out of memory");
    return d;
}

static struct series *series_of(struct plot *pl, const char *name)
{
    for (int i = 0; i < pl->n; i++)
        if (!strcmp(pl->s[i].name, name)) return &pl->s[i];
    pl->s = grow(pl->s, pl->n, &pl->cap, sizeof *pl->s);
    struct series *s = &pl->s[pl->n++];
    memset(s, 0, sizeof *s);
    s->name = dup_str(name);
    return s;
}

static void add_point(struct series *s, double x, double y)
{
    if (s->n == s->cap) {
        int cap = s->cap;
        s->x = grow(s->x, s->n, &cap, sizeof *s->x);
        s->y = grow(s->y, s->n, &s->cap, sizeof *s->y);
    }
    s->x[s->n] = x;
    s->y[s->n++] = y;
}

static void add_event(struct plot *pl, const char *key, const char *val)
{
    int cap = pl->cap_ev;
    pl->ev_key = grow(pl->ev_key, pl->n_ev, &cap, sizeof *pl->ev_key);
    pl->ev_val = grow(pl->ev_val, pl->n_ev, &pl->cap_ev, sizeof *pl->ev_val);
    pl->ev_key[pl->n_ev] = dup_str(key);
    pl->ev_val[pl->n_ev++] = dup_str(val);
}

static void read_line(struct plot *pl, const char *line, size_t len)
{
    cJSON *j = cJSON_ParseWithLength(line, len);
    cJSON *step = cJSON_GetObjectItemCaseSensitive(j, "step");
    if (!cJSON_IsObject(j) || !cJSON_IsNumber(step) || !isfinite(step->valuedouble)) {
        pl->skipped++;
        cJSON_Delete(j);
        return;
    }
    pl->lines++;
    cJSON *ev = cJSON_GetObjectItemCaseSensitive(j, "event"), *e;
    if (ev) {
        char at[64];
        snprintf(at, sizeof at, "step %.0f", step->valuedouble);
        add_event(pl, cJSON_IsString(ev) ? ev->valuestring : "event", at);
    }
    cJSON_ArrayForEach(e, j)
    {
        if (!e->string || e == step || e == ev) continue;
        if (ev) {
            char num[64], *v = NULL;
            if (cJSON_IsNumber(e)) snprintf(num, sizeof num, "%.6g", e->valuedouble);
            const char *txt = cJSON_IsNumber(e) ? num : cJSON_IsString(e) ? e->valuestring : (v = cJSON_PrintUnformatted(e));
            add_event(pl, e->string, txt ? txt : "?");
            free(v);
        } else if (cJSON_IsNumber(e) && isfinite(e->valuedouble)) {
            add_point(series_of(pl, e->string), step->valuedouble, e->valuedouble);
        }
    }
    cJSON_Delete(j);
}

/* ---- charts ------------------------------------------------------------------ */

/* The known groups, in page order; a series not in any gets a chart of its own. */
static const struct {
    const char *title, *ylabel, *fields[3], *contains[2];   /* a field by name, or containing a text */
    int unit;   /* values in [0, 1] are drawn on [0, 1] */
} groups[] = {
    {"Loss", "cross-entropy (nats/token)", {"loss", "val_loss"}, {NULL}},
    {"Bits per byte", "bits/byte", {NULL}, {"bpb", "bits_per_byte"}},
    {"Learning rate", "learning rate", {"lr"}, {NULL}},
    {"Throughput", "tokens/s", {"tokens_per_s"}, {NULL}},
    {"Validation perplexity", "perplexity", {"val_ppl", "ppl", "perplexity"}, {NULL}},
    {"Held-out task accuracy", "accuracy (0-1)", {"task_accuracy_quick", "task_accuracy", "accuracy"}, {NULL}, 1},
    {"Gradient norm", "L2 norm (before clipping)", {"grad_norm"}, {NULL}},
    {"Tokens trained", "tokens (running total)", {"tokens"}, {NULL}},
};
#define N_GROUPS ((int)(sizeof groups / sizeof *groups))

static int group_of(const char *name)
{
    for (int g = 0; g < N_GROUPS; g++) {
        for (int k = 0; k < 3 && groups[g].fields[k]; k++)
            if (!strcmp(name, groups[g].fields[k])) return g;
        for (int k = 0; k < 2 && groups[g].contains[k]; k++)
            if (strstr(name, groups[g].contains[k])) return g;
    }
    return -1;
}

static void esc(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* A "nice" tick spacing (1, 2 or 5 times a power of ten) for ~n ticks. */
static double nice_step(double range, int n)
{
    double raw = range / n, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void tick_label(char *buf, size_t n, double v, double step)
{
    if (fabs(v) < step * 1e-9) v = 0;
    int dec = step < 1 && step >= 1e-4 ? (int)ceil(-log10(step) - 1e-9) : 0;
    if (fabs(v) >= 1e6 || (v != 0 && fabs(v) < 1e-4) || step < 1e-4)
        snprintf(buf, n, "%.3g", v);
    else
        snprintf(buf, n, "%.*f", dec, v);
}

#define W 760
#define H 320
#define ML 78
#define MR 18
#define MT 40
#define MB 46
static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"};

struct range {
    double lo, hi;
};

/* Padded, never empty, ticks on nice values. */
static struct range padded(double lo, double hi, int integer)
{
    if (hi == lo) {
        double d = integer ? 1 : lo != 0 ? fabs(lo) * 0.1 : 1;
        lo -= d, hi += d;
    } else if (!integer) {
        double d = (hi - lo) * 0.05;
        lo -= d, hi += d;
    }
    return (struct range){lo, hi};
}

static void chart(FILE *f, int id, const char *title, const char *ylabel, int unit, struct series **ss, int ns)
{
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < ss[k]->n; i++) {
            xlo = fmin(xlo, ss[k]->x[i]), xhi = fmax(xhi, ss[k]->x[i]);
            ylo = fmin(ylo, ss[k]->y[i]), yhi = fmax(yhi, ss[k]->y[i]);
        }
    struct range xr = padded(xlo, xhi, 1), yr = unit && ylo >= 0 && yhi <= 1 ? (struct range){-0.04, 1.04} : padded(ylo, yhi, 0);
    double pw = W - ML - MR, ph = H - MT - MB;
#define PX(v) (ML + ((v) - xr.lo) / (xr.hi - xr.lo) * pw)
#define PY(v) (MT + ph - ((v) - yr.lo) / (yr.hi - yr.lo) * ph)
    fprintf(f, "<figure><svg class=\"chart\" id=\"chart%d\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" role=\"img\">\n<title>", id, W, H, W, H);
    esc(f, title);
    fprintf(f, "</title>\n<rect class=\"bg\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">", ML);
    esc(f, title);
    fputs("</text>\n", f);
    /* grid, ticks and their labels */
    double ys = nice_step(yr.hi - yr.lo, 5), xs = fmax(1, nice_step(xr.hi - xr.lo, 8));
    char lb[64];
    for (double v = ceil(yr.lo / ys) * ys; v <= yr.hi + ys * 1e-9; v += ys) {
        double y = PY(v);
        tick_label(lb, sizeof lb, v, ys);
        fprintf(f, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
                   "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%s</text>\n",
                ML, y, ML + pw, y, ML - 6, y + 4, lb);
    }
    for (double v = ceil(xr.lo / xs) * xs; v <= xr.hi + xs * 1e-9; v += xs) {
        double x = PX(v);
        tick_label(lb, sizeof lb, v, xs);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
                x, MT, x, MT + ph + 5, x, MT + ph + 18, lb);
    }
    fprintf(f, "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#444\"/>\n",
            ML, MT, pw, ph);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">step</text>\n", ML + pw / 2, H - 8);
    fprintf(f, "<text x=\"14\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">",
            MT + ph / 2, MT + ph / 2);
    esc(f, ylabel);
    fputs("</text>\n", f);
    /* the series, then the legend (right-aligned in the title row) */
    for (int k = 0; k < ns; k++) {
        const char *col = palette[k % (int)(sizeof palette / sizeof *palette)];
        fputs("<polyline class=\"series\" data-field=\"", f);
        esc(f, ss[k]->name);
        fprintf(f, "\" data-points=\"%d\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" points=\"", ss[k]->n, col);
        for (int i = 0; i < ss[k]->n; i++) fprintf(f, "%s%.1f,%.1f", i ? " " : "", PX(ss[k]->x[i]), PY(ss[k]->y[i]));
        fputs("\"/>\n", f);
        if (ss[k]->n <= 60)   /* few points (validation, a short run): each one marked */
            for (int i = 0; i < ss[k]->n; i++)
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>", PX(ss[k]->x[i]), PY(ss[k]->y[i]), col);
        if (ss[k]->n <= 60) fputc('\n', f);
    }
    double lx = W - MR;
    for (int k = ns - 1; k >= 0; k--) {
        const char *col = palette[k % (int)(sizeof palette / sizeof *palette)];
        lx -= 7.0 * (double)strlen(ss[k]->name) + 6;
        fprintf(f, "<text class=\"legend\" x=\"%.1f\" y=\"22\" font-size=\"12\">", lx);
        esc(f, ss[k]->name);
        lx -= 22;
        fprintf(f, "</text><line x1=\"%.1f\" y1=\"18\" x2=\"%.1f\" y2=\"18\" stroke=\"%s\" stroke-width=\"3\"/>\n", lx,
                lx + 16, col);
        lx -= 12;
    }
    fputs("</svg></figure>\n", f);
#undef PX
#undef PY
}

static void page(FILE *f, struct plot *pl, const char *src)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>paddlec run: ", f);
    esc(f, src);
    fputs("</title>\n<style>body{font-family:sans-serif;margin:24px;color:#222;background:#fafafa}"
          "main{display:flex;flex-wrap:wrap;gap:12px}figure{margin:0}svg{background:#fff;border:1px solid #ddd}"
          "table{border-collapse:collapse}td{padding:2px 10px;border-bottom:1px solid #ddd}</style>\n</head><body>\n"
          "<h1>paddlec run</h1>\n<p>",
          f);
    esc(f, src);
    fprintf(f, ": %d lines", pl->lines);
    if (pl->skipped) fprintf(f, " (%d skipped: not a JSON object with a step)", pl->skipped);
    fputs("</p>\n", f);
    if (pl->n_ev) {
        fputs("<table class=\"summary\">\n", f);
        for (int i = 0; i < pl->n_ev; i++) {
            fputs("<tr><td>", f);
            esc(f, pl->ev_key[i]);
            fputs("</td><td>", f);
            esc(f, pl->ev_val[i]);
            fputs("</td></tr>\n", f);
        }
        fputs("</table>\n", f);
    }
    /* known groups in their order, then the other fields one chart each */
    fputs("<main>\n", f);
    struct series **ss = cli_hold(malloc(sizeof *ss * (size_t)(pl->n + 1)), free);
    if (!ss) cli_fail(CLI_EXIT_FAIL, "out of memory");
    int charts = 0;
    for (int g = 0; g < N_GROUPS; g++) {
        int ns = 0;
        for (int i = 0; i < pl->n; i++)
            if (group_of(pl->s[i].name) == g) ss[ns++] = &pl->s[i];
        if (ns) chart(f, charts++, groups[g].title, groups[g].ylabel, groups[g].unit, ss, ns);
    }
    for (int i = 0; i < pl->n; i++)
        if (group_of(pl->s[i].name) < 0) {
            ss[0] = &pl->s[i];
            chart(f, charts++, pl->s[i].name, pl->s[i].name, 0, ss, 1);
        }
    fputs("</main>\n", f);
    if (!charts) fputs("<p>No numeric step metrics in this file.</p>\n", f);
    fputs("</body></html>\n", f);
    cli_free(ss);
}

/* Sorts a series by step (a stable insertion sort: files are nearly sorted). */
static void sort_series(struct series *s)
{
    for (int i = 1; i < s->n; i++)
        for (int j = i; j > 0 && s->x[j - 1] > s->x[j]; j--) {
            double tx = s->x[j], ty = s->y[j];
            s->x[j] = s->x[j - 1], s->y[j] = s->y[j - 1];
            s->x[j - 1] = tx, s->y[j - 1] = ty;
        }
}

int cmd_plot(int argc, char **argv)
{
    const char *out = NULL;
    struct cli_opt opts[] = {
        {"out", CLI_STR, &out, 0, 0, "-o: the HTML file to write (default: the input with .html for .jsonl)", 0},
        {0, 0, 0, 0, 0, 0, 0},
    };
    const char *pos[1];
    int npos;
    cli_short_option(argc, argv, opts, "-o", "--out");
    cli_parse(argc, argv, opts, "plot METRICS.jsonl [-o REPORT.html]",
              "Draw a run's metrics (paddlec train --metrics) as one self-contained HTML page: train and\n"
              "validation loss, learning rate, tokens/s, perplexity, accuracy and any other numeric field\n"
              "over steps, as inline SVG (no script, nothing fetched).",
              pos, 1, &npos);
    if (npos != 1) cli_fail(CLI_EXIT_USAGE, "expected one METRICS.jsonl (see --help)");
    size_t len;
    char *text = cli_hold(cli_read_file(pos[0], CLI_MAX_TEXT, &len), free);
    struct plot *pl = cli_hold(calloc(1, sizeof *pl), dtor_plot);
    if (!pl) cli_fail(CLI_EXIT_FAIL, "out of memory");
    for (size_t a = 0, b; a < len; a = b + 1) {
        for (b = a; b < len && text[b] != '\n'; b++) {}
        size_t k = b - a;
        while (k && (text[a + k - 1] == '\r' || text[a + k - 1] == ' ')) k--;
        if (k) read_line(pl, text + a, k);
    }
    if (!pl->lines) cli_fail(CLI_EXIT_FAIL, "%s has no metrics lines (JSON objects with a step)", cli_q(pos[0]));
    for (int i = 0; i < pl->n; i++) sort_series(&pl->s[i]);
    char *dflt = NULL;
    if (!out) {
        size_t n = strlen(pos[0]);
        int jsonl = n > 6 && !strcmp(pos[0] + n - 6, ".jsonl");
        dflt = cli_hold(malloc(n + 6), free);
        if (!dflt) cli_fail(CLI_EXIT_FAIL, "out of memory");
        memcpy(dflt, pos[0], n - (jsonl ? 6 : 0));
        strcpy(dflt + n - (jsonl ? 6 : 0), ".html");
        out = dflt;
    }
    /* built in memory, then written by the library's atomic writer (a
     * temporary name, fsync, rename): a reader never sees half a page */
    char *buf = NULL;
    size_t n_buf = 0;
    FILE *f = open_memstream(&buf, &n_buf);
    if (!f) cli_fail(CLI_EXIT_FAIL, "out of memory");
    page(f, pl, pos[0]);
    int bad = ferror(f);
    if (fclose(f) || bad) {
        free(buf);
        cli_fail(CLI_EXIT_FAIL, "out of memory");
    }
    cli_hold(buf, free);
    if (pd_file_write(out, buf, n_buf)) cli_fail_pd("cannot write %s", cli_q(out));
    int points = 0;
    for (int i = 0; i < pl->n; i++) points += pl->s[i].n;
    printf("%s: %d series, %d points from %d lines%s\n", out, pl->n, points, pl->lines,
           pl->skipped ? " (some lines skipped)" : "");
    cli_free_all();
    return 0;
}
