#!/usr/bin/env bash
# Threads: `paddlec train` in the default environment against each OpenMP
# wait policy, on an idle machine and with one competing busy process
# (docs/benchmarks.md, "Threads: the default against the best setting").
#   bash bench/threads.sh [PADDLEC] [STEPS] [REPEATS]
# (defaults: build/paddlec, 40 steps, 3 runs per case;
# PD_THREADS_SETTINGS="default passive" runs only those settings). Settings:
#   default  neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT set: what a user
#            gets (paddlec picks its policy itself, tools/paddlec/threads.c)
#   passive  OMP_WAIT_POLICY=passive (sleep at once at a barrier)
#   active   OMP_WAIT_POLICY=active (spin for minutes)
#   spin3ms  GOMP_SPINCOUNT=300000: libgomp's own default, i.e. what
#            `paddlec train` ran under before it picked a policy
#   spin100us GOMP_SPINCOUNT=10000: a short spin, then sleep (a candidate
#            between passive and libgomp's default)
# The competitor is a shell busy loop, started before and killed after
# each run. tokens/s is taken over the steps after the first 5 (from the
# metrics file's elapsed_s), so start-up and warm-up are left out. Prints
# JSON lines: the machine, one per run, then per load the median of each
# setting and the default's share of the best median.
set -uo pipefail
pdc=${1:-build/paddlec}
steps=${2:-40}
reps=${3:-3}
skip=5
[ -x "$pdc" ] || { echo "threads.sh: no program $pdc (build first)" >&2; exit 2; }
[ "$steps" -gt $((skip + 1)) ] || { echo "threads.sh: need more than $((skip + 1)) steps" >&2; exit 2; }
tmp=$(mktemp -d)
busy=
cleanup() { [ -n "$busy" ] && kill "$busy" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

json_str() { sed 's/\\/\\\\/g; s/"/\\"/g' <<<"$1"; }
cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo "{\"bench\":\"threads_machine\",\"cpu\":\"$(json_str "$cpu")\",\"nproc\":$(nproc),\"online\":$(getconf _NPROCESSORS_ONLN),\"steps\":$steps,\"repeats\":$reps,\"loadavg\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"

# one run: prints tokens/s over steps skip+1..steps, and the header facts
run() { # setting
  local env=(env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT)
  case $1 in
    passive) env+=(OMP_WAIT_POLICY=passive) ;;
    active) env+=(OMP_WAIT_POLICY=active) ;;
    spin3ms) env+=(GOMP_SPINCOUNT=300000) ;;
    spin100us) env+=(GOMP_SPINCOUNT=10000) ;;
  esac
  rm -rf "$tmp/out" "$tmp/m.jsonl"
  "${env[@]}" "$pdc" train --steps "$steps" --task-n 0 --log-every 100000 --out "$tmp/out" \
    --metrics "$tmp/m.jsonl" >/dev/null 2>"$tmp/err" || { echo "threads.sh: train failed: $(tail -1 "$tmp/err")" >&2; return 1; }
  local hdr; hdr=$(grep -m1 'parameters (dim' "$tmp/err")
  # batch B x S x A
  local bsa; bsa=$(sed -E 's/.*batch ([0-9]+) x ([0-9]+) x ([0-9]+).*/\1 \2 \3/' <<<"$hdr")
  local th isa
  th=$(sed -E 's/.*; [^;]*, ([0-9]+) threads? .*/\1/' <<<"$hdr")
  isa=$(sed -E 's/.* ([a-z0-9]+) kernels.*/\1/' <<<"$hdr")
  awk -v skip="$skip" -v bsa="$bsa" -v th="$th" -v isa="$isa" '
    BEGIN { split(bsa, b, " "); tps = b[1] * b[2] * b[3] }
    /"loss"/ { match($0, /"step":[0-9]+/); s = substr($0, RSTART + 7, RLENGTH - 7) + 0
               match($0, /"elapsed_s":[0-9.]+/); e = substr($0, RSTART + 12, RLENGTH - 12) + 0
               if (s == skip) e0 = e; last = s; el = e }
    END { printf "%.1f %s %s\n", (last - skip) * tps / (el - e0), th, isa }' "$tmp/m.jsonl"
}

for load in idle busy; do
  for setting in ${PD_THREADS_SETTINGS:-default passive active spin3ms spin100us}; do
    vals=()
    for r in $(seq 1 "$reps"); do
      if [ "$load" = busy ]; then bash -c 'while :; do :; done' & busy=$!; fi
      res=$(run "$setting") || res=
      if [ -n "$busy" ]; then kill "$busy" 2>/dev/null; wait "$busy" 2>/dev/null; busy=; fi
      [ -n "$res" ] || continue
      read -r tps th isa <<<"$res"
      vals+=("$tps")
      echo "{\"bench\":\"threads\",\"load\":\"$load\",\"setting\":\"$setting\",\"run\":$r,\"threads\":$th,\"dtype\":\"f32\",\"isa\":\"$isa\",\"tokens_per_s\":$tps}"
    done
    med=$(printf '%s\n' "${vals[@]}" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }')
    echo "$load $setting $med" >>"$tmp/medians"
  done
done
awk '{ m[$1 " " $2] = $3; if (!($1 in best) || $3 > best[$1]) { best[$1] = $3; bs[$1] = $2 }; k = $1 " " $2; if (!(k in seen)) { seen[k] = 1; order[$1] = order[$1] " " $2 } }
     END { for (l in best) {
             n = split(order[l], s, " "); med = ""
             for (i = 1; i <= n; i++) med = med sprintf("%s\"%s\":%s", i > 1 ? "," : "", s[i], m[l " " s[i]])
             printf "{\"bench\":\"threads_summary\",\"load\":\"%s\",\"medians\":{%s},\"best_setting\":\"%s\",\"default_over_best\":%.3f}\n",
               l, med, bs[l], (best[l] > 0 ? m[l " default"] / best[l] : 0) } }' "$tmp/medians" | sort
