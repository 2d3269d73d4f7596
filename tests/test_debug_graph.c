/* paddle.c — graph export: forward capture and backward walk of a small
 * MLP, checked node by node and edge by edge; the DOT parses with Graphviz
 * when installed; HTML has the SVG (or the fallback tables); large graphs
 * collapse by name scope. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pd/debug.h"
#include "pt.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
    if (b) b[n] = 0;
    fclose(f);
    return b;
}

static int has(const char *s, const char *sub)
{
    int ok = s && strstr(s, sub) != NULL;
    if (!ok) printf("  missing: %s\n", sub);
    return ok;
}

static int have_dot(void) { return system("command -v dot >/dev/null 2>&1") == 0; }

static int dot_parses(const char *path)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "dot -Tsvg '%s' -o /dev/null", path);
    return system(cmd) == 0;
}

static struct pd_tensor *mlp(struct pd_tensor *x, struct pd_tensor *w1, struct pd_tensor *w2)
{
    pd_name_scope_begin("model");
    pd_name_scope_begin("fc1");
    struct pd_tensor *h = pd_relu(pd_matmul(x, w1, 0, 0));
    pd_name_scope_end();
    pd_name_scope_begin("fc2");
    struct pd_tensor *y = pd_matmul(h, w2, 0, 0);
    pd_name_scope_end();
    pd_name_scope_end();
    return pd_mean(y, NULL, 0, 0);
}

int main(void)
{
    char dir[] = "/tmp/pd_graph_test_XXXXXX", path[256];
    PT_CHECK(mkdtemp(dir) != NULL);
    int64_t sx[2] = {4, 3}, s1[2] = {3, 5}, s2[2] = {5, 2};
    struct pd_tensor *x = pd_randn(sx, 2, PD_F32, NULL), *w1 = pd_randn(s1, 2, PD_F32, NULL),
                     *w2 = pd_randn(s2, 2, PD_F32, NULL);
    pd_tensor_set_name(x, "input:x");
    pd_tensor_set_name(w1, "param:fc1.weight");
    pd_tensor_set_name(w2, "param:fc2.weight");
    pd_requires_grad_(w1, 1);
    pd_requires_grad_(w2, 1);
    pd_debug_set_callsites(1);
    pd_debug_reset_names();

    /* 1. forward capture */
    int scope_tok = pd_scope_begin();
    PT_CHECK(pd_graph_capture_begin() == PD_OK);
    PT_CHECK(pd_graph_capture_begin() == PD_ERR_STATE); /* one at a time */
    struct pd_tensor *loss = mlp(x, w1, w2);
    struct pd_graph *fg = pd_graph_capture_end();
    PT_CHECK(fg && pd_graph_num_nodes(fg) == 7 && pd_graph_num_edges(fg) == 6);
    snprintf(path, sizeof path, "%s/fwd.dot", dir);
    PT_CHECK(pd_graph_write_dot(fg, path, 0) == PD_OK);
    char *dot = slurp(path);
    /* nodes in capture order: x, w1, matmul_1, relu_1, w2, matmul_2, mean_1 */
    PT_CHECK(has(dot, "n0 [label=\"input:x\\ninput\\nout: f32 [4, 3]\""));
    PT_CHECK(has(dot, "n2 [label=\"model.fc1/matmul_1\\nmatmul(trans_a=0, trans_b=0)\\nin: f32 [4, 3], f32 [3, 5]\\nout: f32 [4, 5]\\nat "
                      "test_debug_graph.c:"));
    PT_CHECK(has(dot, "(mlp)\""));
    PT_CHECK(has(dot, "n3 [label=\"model.fc1/relu_1\\nrelu"));
    PT_CHECK(has(dot, "n5 [label=\"model.fc2/matmul_2\\nmatmul"));
    PT_CHECK(has(dot, "n6 [label=\"mean_1\\nmean(") && has(dot, ")\\nin: f32 [4, 2]\\nout: f32 []"));
    PT_CHECK(has(dot, "subgraph \"cluster_model.fc1\""));
    PT_CHECK(has(dot, "n0 -> n2 [label=\"input:x\\nf32 [4, 3]\"]"));
    PT_CHECK(has(dot, "n1 -> n2 [label=\"param:fc1.weight\\nf32 [3, 5]\"]"));
    PT_CHECK(has(dot, "n2 -> n3 [label=\"model.fc1/matmul_1.out0\\nf32 [4, 5]\"]"));
    PT_CHECK(has(dot, "n3 -> n5 [label=\"model.fc1/relu_1.out0"));
    PT_CHECK(has(dot, "n4 -> n5 [label=\"param:fc2.weight"));
    PT_CHECK(has(dot, "n5 -> n6 [label=\"model.fc2/matmul_2.out0"));
    if (have_dot()) PT_CHECK(dot_parses(path));
    else printf("graphviz not installed: DOT syntax not checked by dot\n");
    free(dot);

    /* collapsed: a budget of 6 -> model.fc1 and model.fc2 one node each
     * (4 unscoped + 2 = 6); a budget of 4 -> depth 1: "model" (3 ops) */
    snprintf(path, sizeof path, "%s/fwd_small.dot", dir);
    PT_CHECK(pd_graph_write_dot(fg, path, 6) == PD_OK);
    dot = slurp(path);
    if (getenv("PD_TEST_VERBOSE")) printf("%s\n", dot);
    PT_CHECK(has(dot, "g0 [label=\"model.fc1\\n2 nodes (collapsed)\"") &&
             has(dot, "g1 [label=\"model.fc2\\n1 node (collapsed)\""));
    PT_CHECK(has(dot, "n0 -> g0 [label=\"1 tensor\"]") && has(dot, "g0 -> g1 [label=\"1 tensor\"]") &&
             has(dot, "g1 -> n6"));
    if (have_dot()) PT_CHECK(dot_parses(path));
    free(dot);
    snprintf(path, sizeof path, "%s/fwd_tiny.dot", dir);
    PT_CHECK(pd_graph_write_dot(fg, path, 4) == PD_OK);
    dot = slurp(path);
    PT_CHECK(has(dot, "g0 [label=\"model\\n3 nodes (collapsed)\"") && !strstr(dot, "g1 ["));
    free(dot);

    /* HTML: SVG when Graphviz is there, tables always */
    snprintf(path, sizeof path, "%s/fwd.html", dir);
    PT_CHECK(pd_graph_write_html(fg, path, 0) == PD_OK);
    char *html = slurp(path);
    PT_CHECK(has(html, "<h2>Nodes</h2>") && has(html, "model.fc1/matmul_1") && has(html, "param:fc2.weight"));
    if (have_dot()) PT_CHECK(has(html, "<svg"));
    free(html);
    /* without Graphviz on PATH: the readable fallback (tables, no SVG) */
    const char *old_path = getenv("PATH");
    char *saved = old_path ? strdup(old_path) : NULL;
    setenv("PATH", "/nonexistent", 1);
    PT_CHECK(pd_graph_write_html(fg, path, 0) == PD_OK);
    if (saved) { setenv("PATH", saved, 1); free(saved); }
    html = slurp(path);
    PT_CHECK(has(html, "is not installed") && !strstr(html, "<svg") && has(html, "model.fc2/matmul_2"));
    free(html);
    pd_graph_destroy(fg);

    /* 2. backward graph from the loss */
    struct pd_graph *bg = pd_graph_export_backward(loss);
    PT_CHECK(bg && pd_graph_num_nodes(bg) == 7 && pd_graph_num_edges(bg) == 6);
    snprintf(path, sizeof path, "%s/bwd.dot", dir);
    PT_CHECK(pd_graph_write_dot(bg, path, 0) == PD_OK);
    dot = slurp(path);
    /* BFS from the loss: loss, mean_1.grad, matmul_2.grad, relu_1.grad,
     * param:fc2.weight, matmul_1.grad, param:fc1.weight */
    PT_CHECK(has(dot, "n0 [label=\"mean_1.out0\\nloss"));
    PT_CHECK(has(dot, "n1 [label=\"mean_1.grad\\nmean"));
    PT_CHECK(has(dot, "n2 [label=\"model.fc2/matmul_2.grad\\nmatmul"));
    PT_CHECK(has(dot, "n3 [label=\"model.fc1/relu_1.grad"));
    PT_CHECK(has(dot, "n4 [label=\"param:fc2.weight\\nAccumulateGrad"));
    PT_CHECK(has(dot, "n5 [label=\"model.fc1/matmul_1.grad"));
    PT_CHECK(has(dot, "n6 [label=\"param:fc1.weight\\nAccumulateGrad"));
    PT_CHECK(has(dot, "n0 -> n1") && has(dot, "n1 -> n2 [label=\"grad of in0\\nf32 [4, 2]\"]") &&
             has(dot, "n2 -> n3") && has(dot, "n2 -> n4 [label=\"grad of in1\\nf32 [5, 2]\"]") &&
             has(dot, "n3 -> n5") && has(dot, "n5 -> n6"));
    PT_CHECK(has(dot, "at test_debug_graph.c:")); /* forward call sites on GradNodes */
    if (have_dot()) PT_CHECK(dot_parses(path));
    free(dot);
    snprintf(path, sizeof path, "%s/bwd.html", dir);
    PT_CHECK(pd_graph_write_html(bg, path, 0) == PD_OK);
    pd_graph_destroy(bg);

    /* 3. errors */
    PT_CHECK(pd_graph_capture_end() == NULL && pd_last_status() == PD_ERR_STATE);
    PT_CHECK(pd_graph_export_backward(x) == NULL && strstr(pd_last_error(), "no GradNode"));
    PT_CHECK(pd_graph_export_backward(NULL) == NULL);
    PT_CHECK(pd_graph_write_dot(NULL, path, 0) == PD_ERR_NULL);
    PT_CHECK(pd_graph_capture_begin() == PD_OK);
    struct pd_graph *eg = pd_graph_capture_end(); /* empty capture is fine */
    PT_CHECK(eg && pd_graph_num_nodes(eg) == 0);
    PT_CHECK(pd_graph_write_dot(eg, "/nonexistent_dir/x.dot", 0) == PD_ERR_IO && strstr(pd_last_error(), "cannot create"));
    PT_CHECK(pd_graph_write_dot(eg, path, -1) == PD_ERR_INVALID);
    pd_graph_destroy(eg);
    pd_graph_destroy(NULL);
    pd_scope_end(scope_tok);
    pd_debug_set_callsites(0);

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    PT_CHECK(system(cmd) == 0);
    pd_tensor_release(x);
    pd_tensor_release(w1);
    pd_tensor_release(w2);
    PT_DONE();
}
