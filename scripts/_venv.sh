# Shared by scripts/example and scripts/test: make sure .venv exists and holds
# this project with its dev extra. Re-installs only when pyproject.toml changed
# or an extra is asked for that is not installed yet.
#
# WEBAUTH_EXTRAS: the extras to install, comma-separated (default "dev").
# WEBAUTH_TEST_MARIADB=1 ./scripts/test and .ci/run add "mariadb" (the MariaDB
# driver, which compiles against libmariadb). Extras installed once stay listed
# in the stamp, so a later plain run does not reinstall.
#
# An install says what it does on stderr: one line saying why and how long, a
# dot per package pip fetches, one line when it installs, one when it is done.
# pip's own output goes to .venv/pip-install.log, whose end is shown if pip fails.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${WEBAUTH_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
STAMP="$VENV/.webauth-installed"
_have="$(cat "$STAMP" 2>/dev/null || true)"
_want="$(printf '%s\n%s\n' "${WEBAUTH_EXTRAS:-dev}" "$_have" | tr , '\n' | grep -v '^$' | sort -u)"

_say() { printf '%s\n' "$*" >&2; }

# pip's output, line by line, to the log; a sparse summary to the terminal.
_pip_progress() {
    local line fetched=0
    while IFS= read -r line; do
        printf '%s\n' "$line" >>"$_log"
        case "$line" in
        Collecting\ * | Obtaining\ *)
            [ "$fetched" -gt 0 ] || printf '  fetching packages ' >&2
            fetched=$((fetched + 1))
            printf '.' >&2
            ;;
        "Installing collected packages: "*)
            [ "$fetched" -eq 0 ] || printf '\n' >&2
            fetched=0
            _say "  installing $(($(tr -cd , <<<"$line" | wc -c) + 1)) packages (the longest step)..."
            ;;
        esac
    done
    [ "$fetched" -eq 0 ] || printf '\n' >&2
}

_pip() {
    # PYTHONUNBUFFERED: lines reach the summary as pip prints them, not in bursts.
    if ! PYTHONUNBUFFERED=1 "$VENV/bin/python" -m pip --disable-pip-version-check \
        install --progress-bar off "$@" 2>&1 | _pip_progress; then
        _failed
    fi
}

_failed() {
    _say ""
    _say "pip failed. The end of its output:"
    tail -n 25 "$_log" >&2
    _say "The whole output is in $_log; fix the cause and run the command again."
    exit 1
}

if [ ! -x "$VENV/bin/python" ] || [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ] ||
    [ "$_want" != "$_have" ]; then
    _started=$SECONDS
    _where="${VENV#"$ROOT"/}"
    _what="webauth and its test tools"
    if [ ! -x "$VENV/bin/python" ]; then
        _say "Creating $_where and installing $_what (first run only, about 1-2 minutes)..."
        "$PYTHON" -m venv "$VENV"
    elif [ ! -f "$STAMP" ]; then
        _say "Installing $_what into $_where (about 1-2 minutes)..."
    elif [ "$ROOT/pyproject.toml" -nt "$STAMP" ]; then
        _say "pyproject.toml changed: updating $_where (up to a minute)..."
    else
        _say "Adding the extras $(paste -sd, <<<"$_want") to $_where (up to a minute)..."
    fi
    _log="$VENV/pip-install.log"
    : >"$_log"
    _say "  updating pip"
    if ! "$VENV/bin/python" -m pip --disable-pip-version-check install --upgrade pip \
        >>"$_log" 2>&1; then
        _failed
    fi
    _pip -e "$ROOT[$(paste -sd, <<<"$_want")]"
    printf '%s\n' "$_want" >"$STAMP"
    _say "Done: $_where is ready ($((SECONDS - _started)) s)."
fi
export PATH="$VENV/bin:$PATH"
