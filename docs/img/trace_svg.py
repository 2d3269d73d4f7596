"""Render a paddle.c Chrome trace (pd_profiler_write_chrome_trace) as a static
SVG timeline for the docs: one lane per (thread, nesting depth), ranges in
grey, forward ops in blue, backward ops in orange, labelled when wide enough.
Usage: python3 docs/img/trace_svg.py trace.json out.svg"""
import json
import sys
from xml.sax.saxutils import escape

ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
t0 = min(e["ts"] for e in ev)
t1 = max(e["ts"] + e["dur"] for e in ev)
W, LANE, LEFT = 1000, 22, 90
# lanes: ranges by start order nest, so depth = how many open ranges contain it
ranges = sorted([e for e in ev if e["cat"] == "range"], key=lambda e: (e["ts"], -e["dur"]))
def depth(e):
    return sum(1 for r in ranges if r is not e and r["tid"] == e["tid"] and r["ts"] <= e["ts"]
               and e["ts"] + e["dur"] <= r["ts"] + r["dur"] and r["dur"] > e["dur"])
lanes = {}
for e in ev:
    lane = ("r", e["tid"], depth(e)) if e["cat"] == "range" else ("o", e["tid"], 0)
    lanes.setdefault(lane, []).append(e)
order = sorted(lanes, key=lambda k: (k[1], k[0] == "o", k[2]))
H = 40 + LANE * len(order) + 30
colors = {"range": "#bbbbbb", "forward": "#4c8bd6", "backward": "#e8964a"}
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W + LEFT + 10}" height="{H}" font-family="sans-serif" font-size="11">',
       f'<rect width="100%" height="100%" fill="white"/>',
       f'<text x="{LEFT}" y="16" font-size="13">paddle.c profiler trace: {len(ev)} events, {(t1 - t0) / 1e3:.1f} ms '
       f'(grey: ranges, blue: forward ops, orange: backward ops)</text>']
for i, k in enumerate(order):
    y = 30 + i * LANE
    out.append(f'<text x="4" y="{y + 15}">{"range" if k[0] == "r" else "ops"} t{k[1]}</text>')
    for e in lanes[k]:
        x = LEFT + (e["ts"] - t0) / (t1 - t0) * W
        w = max(e["dur"] / (t1 - t0) * W, 0.8)
        name = e["args"].get("name", e["name"])
        tip = escape(f'{name} {e["dur"]:.1f} us {e["args"].get("shapes", "")}')
        out.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{LANE - 4}" fill="{colors.get(e["cat"], "#999")}" '
                   f'stroke="white" stroke-width="0.5"><title>{tip}</title></rect>')
        if w > 7 * len(e["name"]):
            out.append(f'<text x="{x + 3:.2f}" y="{y + 13}">{escape(e["name"])}</text>')
for ms in range(0, int((t1 - t0) / 1e3) + 1, max(1, int((t1 - t0) / 1e3 / 10))):
    x = LEFT + ms * 1e3 / (t1 - t0) * W
    out.append(f'<line x1="{x:.1f}" y1="{H - 28}" x2="{x:.1f}" y2="{H - 22}" stroke="black"/>'
               f'<text x="{x:.1f}" y="{H - 8}" text-anchor="middle">{ms} ms</text>')
out.append("</svg>")
open(sys.argv[2], "w").write("\n".join(out))
