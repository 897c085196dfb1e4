#!/bin/sh
# The claude-code-memory plugin's hooks (SessionStart, UserPromptSubmit, Stop): POSIX sh and curl,
# so a hook costs a shell and a curl process instead of a Python interpreter (docs/plugin.md).
#
#   sh memory_hook.sh < hook-input.json
#
# Claude Code runs it as an exec-form command hook with the plugin's options in the environment:
# CLAUDE_PLUGIN_OPTION_SERVER_URL and CLAUDE_PLUGIN_OPTION_TOKEN. The token reaches curl through
# a config on a pipe (printf is a shell builtin), never on a command line, where
# any local user's ps would see it. The hook input goes to the server's hook endpoint as it is
# and the server's answer is printed.
#
# It stands aside (prints nothing, calls nothing) when a settings file of this session holds a
# hook of `ccmem hooks install` (the rule of memory_hook.py and client/claude_settings.py's
# is_ours): those hooks serve the prompt, and one prompt is never served twice. No curl: memory_hook.py
# answers instead. When curl fails (no server, a refused token, a slow answer, a token with
# characters a header cannot carry), `memory_hook.py recover` takes over with curl's exit code:
# it starts a local server on demand and asks again, or tells the user once a session that memory
# is off (memory_down.py, docs/plugin.md). Without python3 it prints nothing. It always exits 0.

hook_path=/api/v1/hooks/claude-code
project=${CLAUDE_PROJECT_DIR:-$PWD}
# An http hook whose url ends with the path, or a command hook running hook_command.py with it.
ours='/api/v1/hooks/claude-code/?"|hook_command\.py[^"]*/api/v1/hooks/claude-code'
if grep -Eqs "$ours" "${HOME:-/nonexistent}/.claude/settings.json" "$project/.claude/settings.json" \
    "$project/.claude/settings.local.json"; then
    exit 0
fi
if ! command -v curl >/dev/null 2>&1; then
    exec python3 -I -S "${0%/*}/memory_hook.py" hook
fi
# The hook input, kept for memory_hook.py should the request fail (Claude Code hands it over on a
# socket, which /dev/fd cannot open again).
input=$(cat)
recover() {
    command -v python3 >/dev/null 2>&1 || exit 0
    printf '%s' "$input" | python3 -I -S "${0%/*}/memory_hook.py" recover "$1"
    exit 0
}
token=${CLAUDE_PLUGIN_OPTION_TOKEN:-}
case $token in
    *[!A-Za-z0-9._~+/=-]*) recover token ;;
esac
url=${CLAUDE_PLUGIN_OPTION_SERVER_URL:-http://127.0.0.1:8765}
url=${url%/}
# Only a web server: with a file: (or any other) URL curl would print a local file into the session.
case $url in
    [Hh][Tt][Tt][Pp]://* | [Hh][Tt][Tt][Pp][Ss]://*) ;;
    *) exit 0 ;;
esac
# Claude Code's hook input carries no time: the time this hook ran is when the prompt was made,
# and the server reads "yesterday" against it (?now=, docs/search.md).
now=$(date -u +%Y-%m-%dT%H:%M:%SZ 2>/dev/null) && hook_path="$hook_path?now=$now"
# The hook input on curl's standard input (@-), the config with the token in a here-document on
# fd 3 (never on a command line, where any local user's ps would see it). -f: an error status
# fails; --noproxy: the server is normally local.
answer=$(printf '%s' "$input" |
    curl -K /dev/fd/3 -sf --noproxy '*' -m 4 -H 'Content-Type: application/json' \
        --data-binary @- "$url$hook_path" 2>/dev/null 3<<EOF
header = "Authorization: Bearer $token"
EOF
) || recover $?
case $answer in
    "{"*) printf '%s' "$answer" ;;
esac
# SessionStart (hooks.json passes session-start): Claude Code's new or changed auto-memory files
# come in through consent, in the background (memory_hook.py sync: the connected ccmem, detached).
if [ "${1:-}" = session-start ] && command -v python3 >/dev/null 2>&1; then
    python3 -I -S "${0%/*}/memory_hook.py" sync "$project" </dev/null >/dev/null 2>&1 &
fi
exit 0
