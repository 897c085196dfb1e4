#!/usr/bin/env bash
# Install the pinned Node clients the end-to-end tests drive (Claude Code CLI, MCP Inspector)
# into tests/e2e/node_modules, exactly as package-lock.json pins them.
#
#   bash tests/e2e/install.sh
#
# Run by ./install.sh --dev and by .ci/run. Exits 3, saying what to install, when Node.js or npm
# is missing; 1 when the install itself fails.
set -euo pipefail

MIN_NODE=20
here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
cd "$here"

missing() {
    cat >&2 <<EOF
tests/e2e/install.sh: $1
The end-to-end tests drive the real Claude Code CLI and MCP Inspector, which need Node.js >= $MIN_NODE
and npm. Install them (Debian/Ubuntu: apt-get install nodejs npm; elsewhere https://nodejs.org),
then run ./install.sh --dev again (or just: bash tests/e2e/install.sh).
Until then those tests fail; leave them out with: .venv/bin/python -m pytest -m "not e2e"
EOF
    exit 3
}

command -v node >/dev/null 2>&1 || missing "node was not found on PATH"
command -v npm >/dev/null 2>&1 || missing "npm was not found on PATH"
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
((major >= MIN_NODE)) || missing "node is $(node --version 2>/dev/null || echo unusable); version $MIN_NODE or newer is needed"

# Optional dependencies included: Claude Code's native binary is one.
npm ci --include=optional --no-audit --no-fund --loglevel=error
# Claude Code's postinstall links its native binary into place; an npm that skips install
# scripts (npm 11 warns they are "not yet covered by allowScripts") leaves it out: run it here.
if ! node_modules/.bin/claude --version >/dev/null 2>&1; then
    (cd node_modules/@anthropic-ai/claude-code && node install.cjs)
fi
claude=$(node_modules/.bin/claude --version 2>&1) || {
    echo "tests/e2e/install.sh: node_modules/.bin/claude --version fails after the install: $claude" >&2
    exit 1
}
inspector=$(node_modules/.bin/mcp-inspector --version 2>&1) || {
    echo "tests/e2e/install.sh: node_modules/.bin/mcp-inspector --version fails: $inspector" >&2
    exit 1
}
echo "claude: $claude"
echo "mcp-inspector: $inspector"
