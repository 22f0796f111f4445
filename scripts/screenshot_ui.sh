#!/usr/bin/env bash
# Screenshot of the release asset graph, taken with headless Chromium from a running dagster-webserver.
# Usage: scripts/screenshot_ui.sh [OUT.png]   (needs Debian's `chromium`; runs one offline release first)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$repo/docs/images/asset_graph.png}"
work="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
trap 'kill "${server_pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT

cp -r "$repo/data" "$work/data"
rm -rf "$work/data/releases" "$work/data/warehouse" "$work/data/cache"
export DAGSTER_HOME="$work/data/dagster_home" TOOLCHOICE_DATA_DIR="$work/data"
toolchoice run --data-dir "$work/data" --kind release --release r1 >/dev/null

cd "$repo"
dagster-webserver -h 127.0.0.1 -p "$port" -w workspace.yaml >"$work/webserver.log" 2>&1 &
server_pid=$!
for _ in $(seq 120); do curl -sf "http://127.0.0.1:$port/server_info" >/dev/null && break; sleep 1; done
# Dismiss the first-visit community dialog on the server side, so it does not cover the graph.
curl -sf -X POST -H 'Content-Type: application/json' -d '{"query":"mutation { setNuxSeen }"}' \
  "http://127.0.0.1:$port/graphql" >/dev/null
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$work/chrome" --window-size=1600,900 \
  --virtual-time-budget=20000 --screenshot="$out" \
  "http://127.0.0.1:$port/locations/toolchoice_pipeline/asset-groups/release/lineage" 2>/dev/null
echo "wrote $out"
