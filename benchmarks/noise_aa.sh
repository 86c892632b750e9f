#!/usr/bin/env bash
# How much bench_http.py's figures move by themselves: two gunicorn servers of
# the benchmark site (stacks A and B of benchmarks/http/settings.py), loaded in
# turn with the same wrk command on GET /plain, N pairs of 3-second runs.
#
#   A=bare B=bare    benchmarks/noise_aa.sh   # A/A: identical servers
#   A=webauth B=bare benchmarks/noise_aa.sh   # case (5) vs case (1), alone
#
# Prints each pair's requests/s and A/B - 1, then the median of A/B - 1.
# Needs the project's .venv, wrk, and a migrated SQLite file in $DB (made here).
set -euo pipefail
cd "$(dirname "$0")/.."
A="${A:-bare}" B="${B:-bare}" N="${N:-8}"
TMP="$(mktemp -d)"
trap 'kill $(cat "$TMP"/*.pid 2>/dev/null) 2>/dev/null || true; rm -rf "$TMP"' EXIT
export DJANGO_SETTINGS_MODULE=benchmarks.http.settings WEBAUTH_BENCH_DATABASE="$TMP/db.sqlite3"
WEBAUTH_BENCH_STACK=bare .venv/bin/python benchmarks/http/manage.py migrate -v 0
serve() {  # serve STACK PORT
    WEBAUTH_BENCH_STACK="$1" .venv/bin/python -m gunicorn benchmarks.http.wsgi:application \
        --bind="127.0.0.1:$2" --workers=2 --worker-class=sync --log-level=warning \
        --pid "$TMP/$2.pid" &
}
serve "$A" 8991
serve "$B" 8992
sleep 4
rps() { wrk -t1 -c4 -d"$2" "http://127.0.0.1:$1/plain" | awk '/Requests\/sec/ {print $2}'; }
rps 8991 3s >/dev/null
rps 8992 3s >/dev/null
echo "stack A=$A, stack B=$B; $N pairs of 3 s wrk runs on GET /plain"
diffs=()
for _ in $(seq 1 "$N"); do
    a=$(rps 8991 3s)
    b=$(rps 8992 3s)
    d=$(python3 -c "print(f'{($a / $b - 1) * 100:+.2f}')")
    diffs+=("$d")
    printf '%9.1f %9.1f  A/B - 1 = %s%%\n' "$a" "$b" "$d"
done
python3 -c "import statistics, sys; print(f'median A/B - 1 = {statistics.median(map(float, sys.argv[1:])):+.2f}%')" "${diffs[@]}"
