#!/usr/bin/env bash
# paddle.c — paddlec plot end to end: a short train run's metrics become an
# HTML page whose charts render in Debian's headless chromium (the polylines
# hold one point per metrics line and lay out with a non-empty extent; drawn
# to a canvas, each chart's plot area has pixels of the series' colours), and
# an awkward metrics file (escaping, single points, junk lines, unknown
# fields) is handled. Without chromium the page is still checked as text and
# the test reports itself skipped (exit 77).
#   test_cli_plot.sh PATH/TO/paddlec
. "$(dirname "$0")/cli_lib.sh" "$1"

tiny="--dim 32 --layers 1 --heads 2 --kv-heads 1 --hidden 64 --seq-len 24 --batch 4 --lines 3000 --warmup 2 --lr 0.01 --min-lr 0.001 --task-n 4 --eval-batches 1"
"$bin" train $tiny --steps 12 --eval-every 4 --out "$dir/r" --metrics "$dir/run.jsonl" >/dev/null 2>&1
ok '[ $? -eq 0 ] && [ $(grep -c "\"loss\":" run.jsonl) -eq 12 ]'
"$bin" plot run.jsonl >p.out 2>p.err
ok '[ $? -eq 0 ] && [ -s run.html ] && grep -q "^run.html: " p.out && [ ! -s p.err ]'
"$bin" plot run.jsonl -o "$dir/report.html" >/dev/null 2>&1
ok '[ $? -eq 0 ] && cmp -s run.html report.html && [ ! -e report.html.tmp ]'

# ---- as text: one polyline per series, points as in the file, nothing fetched --------
npts() { grep -o "data-field=\"$1\" data-points=\"[0-9]*\"" "$2" | grep -o "[0-9]*\"$" | tr -d '"'; }
ok '[ "$(npts loss report.html)" = 12 ] && [ "$(npts val_loss report.html)" = 3 ] && [ "$(npts lr report.html)" = 12 ]'
ok '[ "$(npts tokens_per_s report.html)" = 12 ] && [ "$(npts val_ppl report.html)" = 3 ]'
# the last quick accuracy is null (the final one is in the summary): two points
ok '[ "$(npts task_accuracy_quick report.html)" = 2 ] && grep -q "<td>final_loss</td>" report.html'
# the known charts come first, in order
ok '[ "$(grep -o "<title>[A-Za-z -]*</title>" report.html | head -4 | tr "\n" "|")" = "<title>Loss</title>|<title>Bits per byte</title>|<title>Learning rate</title>|<title>Throughput</title>|" ]'
ok '! grep -Eqi "<script|src=|href=|url\(|@import" report.html'

# an awkward file: a name to escape, a single point, junk and blank lines, null,
# a string value, an unknown field, steps out of order, CRLF
printf '%s\r\n' '{"step":3,"loss":2.5,"<b>&\"x'"'"'":7}' 'not json' '' '{"step":1,"loss":3.5,"lr":null,"note":"hi"}' \
    '{"loss":1}' '{"step":2,"loss":3.0,"zz_bpb":1.25}' '{"step":3,"event":"done","final_loss":2.5}' >odd.jsonl
"$bin" plot odd.jsonl -o odd.html >odd.out 2>&1
ok '[ $? -eq 0 ] && grep -q "3 series, 5 points from 4 lines (some lines skipped)" odd.out'
ok '! grep -q "<b>&" odd.html && grep -q "data-field=\"&lt;b&gt;&amp;&quot;x&#39;\" data-points=\"1\"" odd.html'
ok 'grep -q "<title>Bits per byte</title>" odd.html && grep -q "2 skipped" odd.html'
ok '[ "$(grep -o "data-field=\"loss\" data-points=\"3\"[^>]*points=\"[^\"]*\"" odd.html | grep -o " points=\"[0-9.,]*" | cut -d, -f1)" = " points=\"78.0" ]'
# errors: one line
"$bin" plot "$dir/none.jsonl" >/dev/null 2>e1.err
ok '[ $? -eq 1 ] && [ $(wc -l <e1.err) -eq 1 ]'
printf 'junk\n' >junk.jsonl
"$bin" plot junk.jsonl >/dev/null 2>e2.err
ok '[ $? -eq 1 ] && [ $(wc -l <e2.err) -eq 1 ] && grep -q "no metrics lines" e2.err'
"$bin" plot >/dev/null 2>e3.err
ok '[ $? -eq 2 ] && [ $(wc -l <e3.err) -eq 1 ]'

# ---- rendered by chromium ------------------------------------------------------------
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "test_cli_plot: $checks checks, $fails failed; chromium not found: rendering not checked (skipped)"
    [ $fails -eq 0 ] && exit 77
    exit 1
fi
# The probe (appended to a copy of the page, not part of it): for each polyline its
# point count and laid-out box; for each chart the pixels of a series colour (saturated,
# unlike the grey grid, frame and text) inside the plot frame, drawn through a canvas.
probe() {
    cp "$1" probe.html
    cat >>probe.html <<'JS'
<script>
window.addEventListener('load', async () => {
  const out = [];
  for (const svg of document.querySelectorAll('svg.chart')) {
    for (const p of svg.querySelectorAll('polyline.series')) {
      const b = p.getBBox();
      out.push('series ' + p.dataset.field + ' points ' + p.points.numberOfItems + ' box ' + Math.round(b.width) + 'x' + Math.round(b.height));
    }
    const f = svg.querySelector('rect.frame'), x = +f.getAttribute('x'), y = +f.getAttribute('y');
    const w = +f.getAttribute('width'), h = +f.getAttribute('height');
    const img = new Image();
    await new Promise(r => { img.onload = r; img.onerror = r;
      img.src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(new XMLSerializer().serializeToString(svg)); });
    const c = document.createElement('canvas');
    c.width = svg.width.baseVal.value; c.height = svg.height.baseVal.value;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const d = g.getImageData(x + 2, y + 2, w - 4, h - 4).data;
    let ink = 0;
    for (let i = 0; i < d.length; i += 4)
      if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) ink++;
    out.push('chart ' + svg.id + ' ink ' + ink);
  }
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = out.join('\n');
  document.body.appendChild(pre);
});
</script>
JS
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --virtual-time-budget=10000 --dump-dom \
        "file://$dir/probe.html" 2>/dev/null | sed -n '/<pre id="probe">/,/<\/pre>/p' >"$2"
}
probe report.html dom.txt
ok 'grep -q "series loss points 12 box [1-9][0-9][0-9]x[1-9]" dom.txt'
ok 'grep -q "series val_loss points 3 box [1-9][0-9]*x[1-9]" dom.txt && grep -q "series lr points 12 box" dom.txt'
ok 'grep -q "series tokens_per_s points 12 box" dom.txt && grep -q "series val_ppl points 3 box" dom.txt'
# every chart has ink: at least a couple of hundred series pixels each
ok '[ $(grep -c "chart chart[0-9]* ink" dom.txt) -eq $(grep -o "<svg [^>]*class=\"chart\"" report.html | wc -l) ] && [ $(grep -c "chart chart[0-9]* ink" dom.txt) -ge 7 ] && ! grep -Eq "ink [0-9]{1,2}$|ink 1[0-9][0-9]$" dom.txt'
probe odd.html dom2.txt
odd_name="series &lt;b&gt;&amp;\"x' points 1 box 0x0"   # the name as serialized text
ok 'grep -qF "$odd_name" dom2.txt && grep -q "series loss points 3" dom2.txt'

echo "test_cli_plot: $checks checks, $fails failed"
[ $fails -eq 0 ]
