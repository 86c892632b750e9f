# Shared by scripts/example and scripts/test: make sure .venv exists and holds
# this project with its dev extra. Re-installs only when pyproject.toml changed
# or an extra is asked for that is not installed yet.
#
# WEBAUTH_EXTRAS: the extras to install, comma-separated (default "dev").
# WEBAUTH_TEST_MARIADB=1 ./scripts/test and .ci/run add "mariadb" (the MariaDB
# driver, which compiles against libmariadb). Extras installed once stay listed
# in the stamp, so a later plain run does not reinstall.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${WEBAUTH_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
STAMP="$VENV/.webauth-installed"
_have="$(cat "$STAMP" 2>/dev/null || true)"
_want="$(printf '%s\n%s\n' "${WEBAUTH_EXTRAS:-dev}" "$_have" | tr , '\n' | grep -v '^$' | sort -u)"
if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ] || [ "$_want" != "$_have" ]; then
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -e "$ROOT[$(paste -sd, <<<"$_want")]"
    printf '%s\n' "$_want" >"$STAMP"
fi
export PATH="$VENV/bin:$PATH"
