#!/usr/bin/env bash
# Bring claude-code-memory up and say how to connect Claude Code to it.
#
#   ./deploy-mem0.sh              the Docker stack (docker-compose.yml) when Docker works here,
#                                 else the same services as local processes (ccmem stack up)
#   ./deploy-mem0.sh --native     local processes even when Docker is there
#   ./deploy-mem0.sh --embedded   Docker without the qdrant container: the API keeps its vectors
#                                 in its embedded store (docker-compose.embedded.yml)
#   ./deploy-mem0.sh --down       stop whichever runs (the data stays)
#   ./deploy-mem0.sh --status     show what runs
#
# Options: --timeout SECONDS (default 240) to wait for every service to become healthy.
# Run ./install.sh first: it writes .env (the admin token) and builds the images or venvs.
set -euo pipefail

here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
cd "$here"

say() { printf '==> %s\n' "$*"; }
die() {
    printf 'deploy-mem0.sh: error: %s\n' "$*" >&2
    exit 1
}
# The comment block at the top, whatever its length (never the code after it).
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}"; }

action=up
mode=auto
timeout=240
while (($#)); do
    case "$1" in
        --native) mode=native ;;
        --embedded) mode=embedded ;;
        --down) action=down ;;
        --status) action=status ;;
        --timeout)
            [[ ${2:-} =~ ^[0-9]+$ ]] || die "--timeout needs a number of seconds"
            timeout=$2
            shift
            ;;
        -h | --help)
            usage
            exit 0
            ;;
        *) die "unknown option '$1' (try --help)" ;;
    esac
    shift
done

ccmem=.venv/bin/ccmem
DOCKER_CA=data/docker/mitmproxy-ca-cert.pem
services=(api ui proxy)

# --- Docker ---------------------------------------------------------------------------------

compose=()
find_compose() {
    if docker compose version >/dev/null 2>&1; then
        compose=(docker compose)
    elif command -v docker-compose >/dev/null 2>&1; then
        compose=(docker-compose)
    fi
}

docker_works() {
    command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 && ((${#compose[@]}))
}

# A value from .env (or the environment, which wins), for the published ports.
setting() {
    local name=$1 default=$2 value=${!1:-}
    if [[ -z $value && -f ${CCMEM_ENV_FILE:-.env} ]]; then
        value=$(sed -n "s/^$name=//p" "${CCMEM_ENV_FILE:-.env}" | tail -n 1 | tr -d "\"'")
    fi
    echo "${value:-$default}"
}

compose_files() {
    local files=(-f docker-compose.yml)
    [[ $mode == embedded ]] && files+=(-f docker-compose.embedded.yml)
    "${compose[@]}" "${files[@]}" "$@"
}

container_state() {
    local id
    id=$(compose_files ps -q "$1" 2>/dev/null)
    [[ -n $id ]] || {
        echo missing
        return
    }
    docker inspect --format '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}} {{.RestartCount}}' "$id"
}

docker_up() {
    [[ -f ${CCMEM_ENV_FILE:-.env} ]] || die ".env is missing: run ./install.sh first (it writes the admin token there)"
    local up_args=(up -d)
    if [[ $mode == embedded ]]; then
        # Without --no-deps, compose would start qdrant for the api's depends_on.
        up_args+=(--no-deps "${services[@]}")
        say "Starting ${services[*]} with Docker (${compose[*]}), vectors in the API's embedded store"
    else
        say "Starting qdrant ${services[*]} with Docker (${compose[*]})"
    fi
    compose_files "${up_args[@]}"

    say "Waiting up to ${timeout} s for every service to become healthy"
    local deadline=$((SECONDS + timeout)) pending service state restarts
    while true; do
        pending=()
        for service in "${services[@]}"; do
            read -r state restarts < <(container_state "$service")
            if [[ $state != healthy ]]; then
                pending+=("$service ($state)")
                if ((${restarts:-0} >= 3)); then
                    echo "$service keeps crashing (restarted $restarts times); its log:" >&2
                    compose_files logs --no-color --tail=40 "$service" >&2
                    die "$service does not start; fix the problem above, then run ./deploy-mem0.sh again"
                fi
            fi
        done
        ((${#pending[@]} == 0)) && break
        if ((SECONDS >= deadline)); then
            for service in "${services[@]}"; do
                compose_files logs --no-color --tail=20 "$service" >&2
            done
            die "not healthy after ${timeout} s: ${pending[*]}. The containers keep running: see
'${compose[*]} logs', stop them with ./deploy-mem0.sh --down"
        fi
        sleep 2
    done
    say "All services are healthy"

    # The proxy container's CA certificate, for clients to trust. Not in data/proxy/: that is
    # the native proxy's, whose key would no longer match.
    local proxy_id
    proxy_id=$(compose_files ps -q proxy)
    mkdir -p data/docker
    if docker cp "$proxy_id:/data/proxy/mitmproxy-ca-cert.pem" "$DOCKER_CA" 2>/dev/null; then
        say "Copied the proxy's CA certificate to $DOCKER_CA"
    fi
    print_next docker
}

docker_down() {
    say "Stopping the Docker stack (the volumes and their data stay; 'down -v' would delete them)"
    "${compose[@]}" -f docker-compose.yml down --remove-orphans
}

docker_running() {
    docker_works && [[ -n $("${compose[@]}" -f docker-compose.yml ps -q 2>/dev/null) ]]
}

# --- native ---------------------------------------------------------------------------------

native_ready() {
    [[ -x $ccmem ]] || die "$ccmem is missing: run ./install.sh first"
    [[ -f ${CCMEM_ENV_FILE:-.env} ]] || die ".env is missing: run ./install.sh first (it writes the admin token there)"
}

native_up() {
    native_ready
    say "Starting the native stack (ccmem stack up): api, ui and proxy as local processes"
    "$ccmem" stack up --timeout "$timeout" || die "the native stack did not come up; see above and data/logs/"
    print_next native
}

native_running() {
    [[ -x $ccmem ]] && "$ccmem" stack status >/dev/null 2>&1
    local status=$?
    # 0 healthy, 1 running but not healthy, 3 not running.
    [[ -x $ccmem ]] && ((status != 3))
}

# --- what to do next ------------------------------------------------------------------------

print_next() {
    local how=$1 api_port proxy_port ca api token_cmd proxy_token
    # The native stack makes the proxy's token itself (ccmem stack up); compose takes it from .env.
    proxy_token="its token is CCMEM_PROXY_TOKEN in .env; \`ccmem stack status\` says whether capture works"
    if [[ $how == docker ]]; then
        proxy_token="put a token in CCMEM_PROXY_TOKEN in .env first, then run this script again"
        api_port=$(setting CCMEM_API_PORT 8765)
        proxy_port=$(setting CCMEM_PROXY_PORT 8080)
        ca=$PWD/$DOCKER_CA
        token_cmd="${compose[*]} exec api ccmem token create --user $USER_NAME"
    else
        read -r api_port proxy_port ca < <(.venv/bin/python -c '
from claude_code_memory.config import load_settings
s = load_settings()
print(s.server.port, s.proxy.port, s.data_path / "proxy" / "mitmproxy-ca-cert.pem")')
        token_cmd="ccmem token create --user $USER_NAME"
    fi
    api="http://127.0.0.1:$api_port"
    cat <<EOF

claude-code-memory runs.

  API and OpenAPI docs:  $api/docs
  MCP (SSE):             $api/mcp/claude-code/sse/$USER_NAME
  MCP (Streamable HTTP): $api/mcp/claude-code/http/$USER_NAME

  1. Create a token for yourself (printed once):
       $token_cmd
  2. Connect Claude Code:
       claude mcp add --scope user --transport sse memory $api/mcp/claude-code/sse/$USER_NAME --header "Authorization: Bearer <token>"
  3. Check it end to end:
       .venv/bin/python test_integration.py --url $api
  4. Optional, to store your Claude Code conversations as memories (consent first), start
     Claude Code through the capture proxy ($proxy_token):
       HTTPS_PROXY=http://127.0.0.1:$proxy_port NODE_EXTRA_CA_CERTS=$ca NO_PROXY=127.0.0.1 claude

  Stop it: ./deploy-mem0.sh --down
EOF
}

USER_NAME=${USER:-$(id -un)}
find_compose

case "$action:$mode" in
    up:native) native_up ;;
    up:embedded)
        docker_works || die "--embedded needs Docker and docker compose (or docker-compose), and neither works here"
        docker_up
        ;;
    up:auto)
        if docker_works; then
            docker_up
        else
            say "Docker is not available here (no working 'docker info' and compose): using the native stack"
            native_up
        fi
        ;;
    down:*)
        stopped=0
        if [[ $mode != native ]] && docker_running; then
            docker_down
            stopped=1
        fi
        if [[ $mode != embedded ]] && native_running; then
            "$ccmem" stack down
            stopped=1
        fi
        ((stopped)) || say "Nothing runs (neither the Docker stack nor the native one)"
        ;;
    status:*)
        running=0
        if docker_running; then
            "${compose[@]}" -f docker-compose.yml ps
            running=1
        fi
        if native_running; then
            "$ccmem" stack status || true
            running=1
        fi
        ((running)) || {
            say "Nothing runs; start it with ./deploy-mem0.sh"
            exit 3
        }
        ;;
esac
