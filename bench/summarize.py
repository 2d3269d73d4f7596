#!/usr/bin/env python3
"""Summarise `make bench` output: reads the JSON lines of the bench programs
and the PyTorch peer on stdin (other lines are ignored) and prints markdown
tables comparing paddle.c with its peers:

  dispatch   ns per op (forward) / per iteration (forward+backward), paddle.c
             vs PyTorch (its best thread count), and the ratio pd/pytorch
             (lower is better for paddle.c).
  matmul     GFLOP/s: pd_matmul vs direct dnnl_sgemm (same run, same buffers)
             vs PyTorch (best thread count), and pd as a fraction of the FMA
             peak measured by bench_matmul.
  bandwidth  GB/s (bytes read + written): paddle.c vs memcpy of the same
             bytes (same run) and vs PyTorch at the same thread count.
  flashmask  bench_flashmask's lines: per head dim, one row per (mask, S)
             with tiles computed, FlashMask's times and effective GFLOP/s,
             its speedup over the dense composition and PyTorch (fwd+bwd),
             the block mask's fwd+bwd time and the 8K goal; then the
             allocator peaks per S and the goal lines.
  data parallelism  bench/dist.sh's train_llama_dp lines: one row per run
             (processes x threads, step time, tokens/s), then paddle.c's
             data-parallel run against its one-process run (goal 0.9x) and
             against each DDP peer (goal 1.3x).

Standard library only. Figures are printed as measured, never rounded up.
"""
import json
import sys


def load(stream):
    rows = []
    for line in stream:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def fmt(x, nd=1):
    return "—" if x is None else f"{x:.{nd}f}"


def ratio(a, b, nd=2):
    return "—" if a is None or b is None or b == 0 else f"{a / b:.{nd}f}"


def table(head, body):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in body]
    return "\n".join(out)


def dispatch(rows):
    key = lambda r: "ns_per_op" if r.get("mode") == "forward" else "ns_per_iter"
    pd, pt = {}, {}
    for r in rows:
        if r.get("bench") != "dispatch" or "error" in r:
            continue
        k = (r.get("op"), r.get("mode"))
        v = r.get(key(r))
        if v is None:
            continue
        if r.get("impl") == "paddle.c":
            pd[k] = min(v, pd.get(k, v))
        elif r.get("impl") == "pytorch":
            pt[k] = min(v, pt.get(k, v))
    body = [[op, mode, fmt(pd.get((op, mode))), fmt(pt.get((op, mode))), ratio(pd.get((op, mode)), pt.get((op, mode)))]
            for (op, mode) in sorted(set(pd) | set(pt), key=lambda k: (k[1] != "forward", k[0]))]
    if not body:
        return None
    return "### Dispatch overhead (16-element f32 tensors; ns, lower is better)\n\n" + \
        table(["op", "mode", "paddle.c ns", "pytorch ns (best threads)", "paddle.c / pytorch"], body)


def matmul(rows):
    peak = {r.get("threads"): r.get("gflops") for r in rows if r.get("bench") == "fma_peak" and "gflops" in r}
    pd, dn, pt, shapes = {}, {}, {}, []
    for r in rows:
        if r.get("bench") != "matmul" or "gflops" not in r:
            continue
        k = (r["m"], r["n"], r["k"], r.get("dtype", "f32"))
        if k not in shapes:
            shapes.append(k)
        impl = r.get("impl")
        if impl == "paddle.c":
            pd[k] = r
        elif impl == "dnnl_sgemm":
            dn[k] = r
        elif impl == "pytorch":
            if k not in pt or r["gflops"] > pt[k]["gflops"]:
                pt[k] = r
    body = []
    for k in shapes:
        m, n, kk, dt = k
        p, d, t = pd.get(k), dn.get(k), pt.get(k)
        g = p["gflops"] if p else None
        gd = d["gflops"] if d else None
        gt = t["gflops"] if t else None
        pk = peak.get(p.get("threads")) if p else None
        note = ""
        if dt == "bf16" and p and "ratio_to_f32" in p:
            note = f"bf16/f32 {p['ratio_to_f32']:.3f}"
        body.append([f"[{m}x{kk}]@[{kk}x{n}]", dt, fmt(g), fmt(gd), ratio(g, gd),
                     fmt(gt) + (f" ({t['threads']}t, {t.get('blas', '?')})" if t else ""), ratio(g, gt),
                     "—" if g is None or not pk else f"{100 * g / pk:.0f}%", note])
    if not body:
        return None
    pk_txt = ", ".join(f"{fmt(v)} GFLOP/s on {th} thread{'s' if th != 1 else ''}" for th, v in sorted(peak.items()))
    head = "### Matmul (GFLOP/s, higher is better)\n\n"
    if pk_txt:
        head += f"Measured FMA peak (bench_matmul): {pk_txt}.\n\n"
    if any(r.get("blas") == "reference" for r in pt.values()):
        head += ("Note: PyTorch ran on the reference BLAS (no OpenBLAS found), so its matmul "
                 "figures are not a fair peer; install libopenblas0-pthread.\n\n")
    return head + table(["shape", "dtype", "paddle.c", "dnnl_sgemm", "pd / dnnl", "pytorch (best)", "pd / pytorch",
                         "pd % of peak", "note"], body)


def bandwidth(rows):
    mc, pd, pt, order = {}, {}, {}, []
    for r in rows:
        if r.get("bench") != "bandwidth" or "gbps" not in r:
            continue
        k = (r.get("op"), r.get("threads"))
        impl = r.get("impl")
        if impl == "memcpy":
            mc[r.get("threads")] = r["gbps"]
        elif impl == "paddle.c":
            pd[k] = r["gbps"]
            if k not in order:
                order.append(k)
        elif impl == "pytorch":
            pt[k] = r["gbps"]
    body = []
    for (op, th) in sorted(order, key=lambda k: (k[1], order.index(k))):
        g = pd[(op, th)]
        body.append([op, th, fmt(g, 2), fmt(mc.get(th), 2), ratio(g, mc.get(th)), fmt(pt.get((op, th)), 2),
                     ratio(g, pt.get((op, th)))])
    for th in sorted(t for (o, t) in pt if o == "copy"):
        body.append(["(pytorch copy_)", th, "—", fmt(mc.get(th), 2), "—", fmt(pt[("copy", th)], 2), "—"])
    if not body:
        return None
    return "### Bandwidth (16M f32 elements; GB/s = (bytes read + written) / s, higher is better)\n\n" + \
        table(["op", "threads", "paddle.c GB/s", "memcpy GB/s", "pd / memcpy", "pytorch GB/s", "pd / pytorch"], body)


def _k(s):
    return f"{s // 1024}K" if s % 1024 == 0 else str(s)


def flashmask(rows):
    rows = [r for r in rows if r.get("bench") == "flashmask"]
    res, order = {}, []
    for r in rows:
        if "impl" not in r or "mask" not in r or "time_ms" not in r:
            continue
        k = (r["D"], r["mask"], r["S"])
        if k not in order:
            order.append(k)
        res.setdefault(k, {})[r["impl"]] = r
    if not order:
        return None
    out, masks = [], list(dict.fromkeys(k[1] for k in order))
    for d in sorted({k[0] for k in order}):
        body = []
        keys = sorted((k for k in order if k[0] == d), key=lambda k: (masks.index(k[1]), k[2]))
        for k in keys:
            e = res[k]
            f = e.get("flashmask")
            if not f:
                continue
            fb = f["time_ms"]["fwd_bwd"]
            sp = lambda impl: "—" if impl not in e else f"{e[impl]['time_ms']['fwd_bwd'] / fb:.1f}×"
            body.append([k[1], _k(k[2]), f"{f['frac_tiles']:.3f}", fmt(f["time_ms"]["fwd"]), fmt(fb),
                         f"{f['eff_gflops']['fwd_bwd']:.0f}", sp("dense"), sp("pytorch"),
                         fmt(e["block_mask"]["time_ms"]["fwd_bwd"]) if "block_mask" in e else "—",
                         f"{0.8 / f['frac_tiles']:.2f}×"])
        h = next(iter(res[keys[0]].values())).get("H", "?")
        out.append(f"#### Head dim {d} (B 1, {h} heads, f32)\n\n" + table(
            ["mask", "S", "tiles computed", "fwd ms", "fwd+bwd ms", "eff. GFLOP/s", "vs dense", "vs PyTorch",
             "block mask fwd+bwd ms", "goal (0.8 / tiles)"], body))
    d0 = min(k[0] for k in order)
    mem = []
    for s in sorted({k[2] for k in order if k[0] == d0}):
        e = res[next(k for k in order if k[0] == d0 and k[2] == s)]
        mb = lambda impl: fmt(e[impl]["peak_mb"]["fwd_bwd"]) if impl in e and "peak_mb" in e[impl] else "—"
        mem.append([_k(s), mb("flashmask"), mb("block_mask"), mb("dense"), mb("pytorch"),
                    e["flashmask"].get("mask_bytes", "—") if "flashmask" in e else "—"])
    out.append(f"#### Memory (peak rise over one fwd+bwd call, MB; D {d0}; PyTorch: RSS)\n\n" + table(
        ["S", "FlashMask", "block mask", "dense (paddle.c)", "PyTorch", "index bytes"], mem))
    gl = []
    for r in rows:
        if r.get("goal") == "speedup_8k":
            gl.append(f"- speedup over dense at 8K, {r['mask']} D {r['D']}: {fmt(r.get('speedup_fwd_bwd'), 2)}× "
                      f"(target {r['target']:.2f}×): {'met' if r.get('pass') else 'NOT met'}")
        elif r.get("goal") == "causal_eff":
            gl.append(f"- causal fwd+bwd S {_k(r['S'])} D {r['D']}: {r['eff_gflops_fwd_bwd']:.0f} GFLOP/s = "
                      f"{r['ratio']:.2f} of pd_matmul ({r['matmul_gflops']:.0f}): {'met' if r.get('pass') else 'NOT met'}")
    if gl:
        out.append("#### Goals\n\n" + "\n".join(gl))
    return "### FlashMask (fwd+bwd speedups are the peer's time over FlashMask's)\n\n" + "\n\n".join(out)


def data_parallel(all_rows):
    rows = [r for r in all_rows if r.get("bench") == "train_llama_dp" and "tokens_per_s" in r]
    if not rows:
        return None

    def peer(r):  # framework and version
        ver = r.get("torch") or r.get("paddle") or "?"
        return "%s %s" % ("PaddlePaddle" if r["impl"].startswith("paddle") else "PyTorch", ver)

    def who(r):
        if r["impl"] == "paddle.c":
            return "paddle.c (%s)" % r.get("run", "?")
        return peer(r) + (" (%s)" % r["run"] if "run" in r else "")

    def mode(r):
        run = r.get("run", "")
        if "independent" in run:
            return "no comm."
        tp = "tp=" in run or r["impl"].endswith(("-tp", "-dptp"))
        dp = "dp=" in run or r["impl"].endswith("-dptp") or (r["world_size"] > 1 and not tp)
        return "DP × TP" if dp and tp else "TP" if tp else "DP" if dp else "one process"
    body = [[who(r), mode(r), f"{r['world_size']} × {r['threads']}",
             fmt(r.get("step_ms")), fmt(r.get("step_ms_min")), fmt(r["tokens_per_s"]),
             ", ".join(f"{k} {r[k]}" for k in ("attn", "foreach", "graph", "blas") if k in r) or "—"] for r in rows]
    out = [table(["implementation", "mode", "processes × threads", "step ms (median)", "step ms (min)",
                  "tokens/s", "settings"], body)]
    ours = lambda pred: next((r for r in rows if r["impl"] == "paddle.c" and pred(r.get("run", ""))), None)
    pd_dp = ours(lambda run: "dp=" in run and "tp=" not in run and "--bf16" not in run)
    pd_one = ours(lambda run: run == "paddlec train")
    ceiling = ours(lambda run: "independent" in run)
    goals = []
    ratios = [r for r in all_rows if r.get("bench") == "dist_ratio"]
    if ratios:  # bench/dist_ratios.py's, from the interleaved runs: they replace the first-row ones below
        goals = ["- %s: %.2f×%s" % (r["what"], r["ratio"], " (goal %.1f×): %s" % (r["goal"], "met" if r["met"] else
                 "NOT met") if "goal" in r else "") for r in ratios]
    if pd_dp and pd_one and not ratios:
        q = pd_dp["tokens_per_s"] / pd_one["tokens_per_s"]
        goals.append(f"- paddle.c DP {pd_dp['world_size']} × {pd_dp['threads']} / 1 × {pd_one['threads']}: "
                     f"{q:.2f}× (goal 0.9×): {'met' if q >= 0.9 else 'NOT met'}")
    if ceiling and pd_one:
        goals.append(f"- ceiling ({ceiling['run']}) / one process: {ceiling['tokens_per_s'] / pd_one['tokens_per_s']:.2f}×"
                     + (f"; DP reaches {pd_dp['tokens_per_s'] / ceiling['tokens_per_s']:.2f} of it" if pd_dp else ""))
    for r in [] if ratios else rows:  # without bench/dist_ratios.py's lines: the first rows
        if r["impl"] == "paddle.c" or r["world_size"] == 1:
            continue
        one = next((o for o in rows if o["impl"] != "paddle.c" and o["world_size"] == 1 and
                    peer(o) == peer(r)), None)
        own = f" (its own DP / one process: {r['tokens_per_s'] / one['tokens_per_s']:.2f}×)" if one else ""
        if pd_dp:
            q = pd_dp["tokens_per_s"] / r["tokens_per_s"]
            goals.append(f"- paddle.c DP / {who(r)} DP: {q:.2f}× (goal 1.3×): {'met' if q >= 1.3 else 'NOT met'}{own}")
        else:
            goals.append(f"- {who(r)} DP: {fmt(r['tokens_per_s'])} tokens/s{own}; no paddle.c DP figure to compare")
    pd_one16 = ours(lambda run: run == "paddlec train --bf16")  # bench/dist.sh's bf16 runs against it
    for r in rows:
        if pd_one16 and r["impl"] == "paddle.c" and "--mesh" in r.get("run", "") and "--bf16" in r["run"]:
            goals.append(f"- {r['run']} / one process --bf16: {r['tokens_per_s'] / pd_one16['tokens_per_s']:.2f}×")
    ar = next((r for r in all_rows if r.get("bench") == "allreduce" and r.get("size") == "bench Llama gradient"
               and "ms" in r), None)
    if ar:
        share = f" = {ar['ms'] / pd_one['step_ms']:.1%} of the one-process step" if pd_one else ""
        goals.append(f"- all-reduce of the whole gradient ({ar['bytes'] / 1e6:.1f} MB, {ar['world_size']} ranks, "
                     f"bench_allreduce): {ar['ms']:.1f} ms median{share}")
    if goals:
        out.append("\n".join(goals))
    return "### Data parallelism (bench Llama, 8 × 256 tokens per step, f32 unless --bf16, AdamW)\n\n" + "\n\n".join(out)


def main():
    rows = load(sys.stdin)
    parts = [p for p in (dispatch(rows), matmul(rows), bandwidth(rows), flashmask(rows), data_parallel(rows)) if p]
    errors = [r for r in rows if "error" in r or "skipped" in r]
    if errors:
        parts.append("### Errors and skipped runs\n\n" + "\n".join(
            f"- {r.get('bench')} {r.get('impl')} {r.get('run', r.get('op', ''))} {r.get('dtype', '')}: "
            f"{r.get('error') or 'skipped: ' + r['skipped']}".replace("  ", " ") for r in errors))
    print("\n\n".join(parts) if parts else "no benchmark lines on stdin")


if __name__ == "__main__":
    main()
