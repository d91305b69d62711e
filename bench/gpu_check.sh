#!/usr/bin/env bash
# GPU check: serve a small model with vLLM on this machine's GPU, register it with a throwaway
# Prefill (its own SQLite database under a temporary PREFILL_VAR_DIR), and run labs 1-4 through
# `manage.py runlab`, the same service and Celery queue the web page uses. Prints one table per
# lab (P50 TTFT and TPOT per step, tokens/s) and the decode speed-of-light efficiency.
#
# Needs (checked first; each missing one is named with the command that installs it):
#   - an NVIDIA GPU and vLLM importable by $VLLM_PYTHON (default: `python` on PATH), started as
#     `python -m vllm.entrypoints.openai.api_server` (unless ENGINE_URL is set);
#   - Prefill's .venv, made with `make venv` when missing, which needs Python >= 3.11 with its venv
#     module and make: on a stock Ubuntu/Debian GPU image
#     `sudo apt-get install -y make python3-venv` (Ubuntu 22.04's python3 is 3.10:
#     `sudo apt-get install -y python3.11 python3.11-venv`; the script then uses python3.11);
#   - redis-server when no Redis answers at REDIS_URL: `sudo apt-get install -y redis-server`;
#   - HF_TOKEN for gated meta-llama models.
#
# Expected runtime: 4-6 minutes on an H100 with the model already in the Hugging Face cache
# (vLLM start-up 1-3 min, which overlaps Prefill's set-up; the four labs about 1-2 min together);
# add the download on a first run (about 2.5 GB for Llama 3.2 1B). GPU_CHECK_BUDGET_S (default
# 570) caps the whole script so it stays inside ten minutes of GPU time: labs that would start
# after the budget is spent are skipped, and a run still going at the deadline is reported.
#
# Usage:  bash bench/gpu_check.sh
#         MODEL=meta-llama/Llama-3.1-8B-Instruct CATALOGUE_MODEL=llama-3.1-8b GPU=l40s bash bench/gpu_check.sh
#         ENGINE_URL=http://127.0.0.1:8000 bash bench/gpu_check.sh   # measure an engine already serving MODEL
#
# Environment (defaults in brackets):
#   MODEL [meta-llama/Llama-3.2-1B-Instruct]  model vLLM serves (Hugging Face id or local path)
#   CATALOGUE_MODEL [llama-3.2-1b]            its row in courses/inference/catalogue/models.toml
#   PRECISION [bf16]                          weight precision for the decode bound (fp16|bf16|fp8|int8|int4)
#   GPU [h100-sxm]                            this GPU's row in courses/inference/catalogue/gpus.toml
#   VLLM_PYTHON [python]   VLLM_PORT [8000]   VLLM_EXTRA_ARGS [empty]   VLLM_READY_TIMEOUT_S [420]
#   ENGINE_URL [empty]                        set it to skip starting vLLM and measure that server
#   REDIS_URL [redis://127.0.0.1:6379/0]      GPU_CHECK_BUDGET_S [570]   KEEP_WORKDIR [0]
#   PYTHON [python3, else python3.12 or python3.11 when python3 is older than 3.11]  makes .venv
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

MODEL="${MODEL:-meta-llama/Llama-3.2-1B-Instruct}"
CATALOGUE_MODEL="${CATALOGUE_MODEL:-llama-3.2-1b}"
PRECISION="${PRECISION:-bf16}"
GPU="${GPU:-h100-sxm}"
VLLM_PYTHON="${VLLM_PYTHON:-python}"
VLLM_PORT="${VLLM_PORT:-8000}"
VLLM_EXTRA_ARGS="${VLLM_EXTRA_ARGS:-}"
VLLM_READY_TIMEOUT_S="${VLLM_READY_TIMEOUT_S:-420}"
ENGINE_URL="${ENGINE_URL:-}"
BUDGET_S="${GPU_CHECK_BUDGET_S:-570}"
KEEP_WORKDIR="${KEEP_WORKDIR:-0}"
PY="$ROOT/.venv/bin/python"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"

# --- Prerequisites, all checked before anything starts ------------------------------------------
python_ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; }

redis_answers() {
  # A raw PING over bash's /dev/tcp: this runs before any Python environment exists.
  local rest="${REDIS_URL#*://}" host port
  rest="${rest#*@}"
  rest="${rest%%/*}"
  host="${rest%%:*}"
  port="${rest##*:}"
  [[ "$port" == "$rest" ]] && port=6379
  timeout 3 bash -c "exec 3<>/dev/tcp/${host:-127.0.0.1}/$port && printf 'PING\r\n' >&3 && read -r -t 2 line <&3 && [[ \$line == [+-]* ]]" 2>/dev/null
}

MISSING=()
if [[ ! -x "$PY" ]]; then
  if [[ -z "${PYTHON:-}" ]]; then
    PYTHON=python3
    if ! python_ok python3; then
      for candidate in python3.13 python3.12 python3.11; do
        if command -v "$candidate" >/dev/null 2>&1 && python_ok "$candidate"; then PYTHON="$candidate"; break; fi
      done
    fi
  fi
  if ! command -v "$PYTHON" >/dev/null 2>&1; then
    MISSING+=("Python 3.11 or newer ($PYTHON not found): sudo apt-get install -y python3 python3-venv")
  elif ! python_ok "$PYTHON"; then
    found="$("$PYTHON" -c 'import platform; print(platform.python_version())' 2>/dev/null || echo unknown)"
    MISSING+=("Python 3.11 or newer ($PYTHON is $found): sudo apt-get install -y python3.11 python3.11-venv (then this script uses python3.11)")
  elif ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
    MISSING+=("Python's venv module for $PYTHON: sudo apt-get install -y $(basename "$PYTHON")-venv")
  fi
  command -v make >/dev/null 2>&1 || MISSING+=("make (builds .venv): sudo apt-get install -y make")
fi
if ! redis_answers && ! command -v redis-server >/dev/null 2>&1; then
  MISSING+=("redis-server (no Redis answers at REDIS_URL=$REDIS_URL): sudo apt-get install -y redis-server, or set REDIS_URL")
fi
if [[ -z "$ENGINE_URL" ]] && ! "$VLLM_PYTHON" -c 'import vllm' 2>/dev/null; then
  MISSING+=("vLLM importable by '$VLLM_PYTHON': pip install vllm (or set VLLM_PYTHON, or ENGINE_URL to measure a running engine)")
fi
if ((${#MISSING[@]})); then
  echo "gpu_check.sh cannot start; this machine lacks:" >&2
  printf '  - %s\n' "${MISSING[@]}" >&2
  exit 2
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/prefill-gpu-check.XXXXXX")"
# Everything Prefill writes goes to the temporary directory: an inherited DATABASE_URL or
# production settings module must never point this throwaway run at a real site's data.
export PREFILL_VAR_DIR="$WORK/var"
export DATABASE_URL="sqlite:///$WORK/var/prefill.sqlite3"
export DJANGO_SETTINGS_MODULE=config.settings
# A private cache namespace keeps this run's target lock apart from a site sharing the same Redis.
export CACHE_KEY_PREFIX="gpu-check-$$"
export LOCAL_ENGINES=""
# Only warnings from Prefill's own commands: the probe logs every HTTP request at INFO.
export LOG_LEVEL="${LOG_LEVEL:-WARNING}"
mkdir -p "$PREFILL_VAR_DIR"

VLLM_PID=""
WORKER_PID=""
REDIS_PID=""
FAILED_LABS=()

log() { printf '[gpu-check %4ds] %s\n' "$SECONDS" "$*"; }

stop_group() {
  # Each background service runs in its own session (setsid), so its pid is its process group:
  # vLLM's engine core and Celery's pool children stop with their parent.
  local pid="$1" name="$2"
  [[ -n "$pid" ]] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in $(seq 1 30); do
    kill -0 "$pid" 2>/dev/null || { log "stopped $name"; return 0; }
    sleep 0.5
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
  log "killed $name (it did not stop within 15 s)"
}

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  stop_group "$WORKER_PID" "the Celery worker"
  stop_group "$VLLM_PID" "vLLM"
  stop_group "$REDIS_PID" "redis-server"
  if [[ "$KEEP_WORKDIR" == "1" ]]; then
    log "kept $WORK (logs, database, run JSON)"
  else
    rm -rf "$WORK"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

http_ok() {
  "$PY" - "$1" <<'PY'
import sys
import urllib.request

try:
    with urllib.request.urlopen(sys.argv[1], timeout=3) as response:
        sys.exit(0 if response.status == 200 else 1)
except Exception:
    sys.exit(1)
PY
}

port_in_use() {
  "$PY" - "$1" <<'PY'
import socket
import sys

with socket.socket() as sock:
    sock.settimeout(1)
    sys.exit(0 if sock.connect_ex(("127.0.0.1", int(sys.argv[1]))) == 0 else 1)
PY
}

# --- Prefill's environment -------------------------------------------------------------------
if [[ ! -x "$PY" ]]; then
  log "no .venv: running make venv PYTHON=$PYTHON"
  make venv PYTHON="$PYTHON"
fi

if command -v nvidia-smi >/dev/null 2>&1; then
  log "GPU: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -n 1) (catalogue row used for the bound: $GPU)"
else
  log "nvidia-smi not found; the bound uses the catalogue row $GPU"
fi

# --- vLLM (started first: its start-up overlaps Prefill's set-up) ------------------------------
if [[ -z "$ENGINE_URL" ]]; then
  if port_in_use "$VLLM_PORT"; then
    echo "Port $VLLM_PORT is already taken. Stop what listens there, set VLLM_PORT, or set ENGINE_URL to measure it." >&2
    exit 1
  fi
  ENGINE_URL="http://127.0.0.1:$VLLM_PORT"
  log "starting vLLM: $MODEL on port $VLLM_PORT (log: $WORK/vllm.log)"
  # shellcheck disable=SC2086  # VLLM_EXTRA_ARGS is a list of flags, split on purpose
  setsid "$VLLM_PYTHON" -m vllm.entrypoints.openai.api_server \
    --model "$MODEL" \
    --host 127.0.0.1 --port "$VLLM_PORT" \
    --max-model-len 4096 \
    --gpu-memory-utilization 0.85 \
    --enable-prefix-caching \
    $VLLM_EXTRA_ARGS \
    >"$WORK/vllm.log" 2>&1 &
  VLLM_PID=$!
fi

log "setting up Prefill in $PREFILL_VAR_DIR"
"$PY" manage.py migrate --noinput >"$WORK/migrate.log"
"$PY" manage.py sync_content >"$WORK/sync_content.log"
"$PY" manage.py createsuperuser --noinput --username gpucheck --email gpucheck@localhost >/dev/null

# To a file, not $(...): a redis-server started here inherits stdout and would hold a pipe open.
"$PY" -m scripts.services redis >"$WORK/redis.out"
if [[ "$(cat "$WORK/redis.out")" =~ redis-server\ pid\ ([0-9]+) ]]; then
  REDIS_PID="${BASH_REMATCH[1]}"
  log "started redis-server (pid $REDIS_PID) at $REDIS_URL"
else
  log "using the Redis that answers at $REDIS_URL"
fi

log "waiting for the engine at $ENGINE_URL"
ready_deadline=$((SECONDS + VLLM_READY_TIMEOUT_S))
# Leave the labs at least a minute of the budget, or there is no point in waiting longer.
if ((ready_deadline > BUDGET_S - 60)); then ready_deadline=$((BUDGET_S - 60)); fi
until http_ok "$ENGINE_URL/v1/models"; do
  if [[ -n "$VLLM_PID" ]] && ! kill -0 "$VLLM_PID" 2>/dev/null; then
    echo "vLLM exited during start-up; the end of its log:" >&2
    tail -n 40 "$WORK/vllm.log" >&2
    exit 1
  fi
  if ((SECONDS >= ready_deadline)); then
    echo "The engine did not answer $ENGINE_URL/v1/models by ${SECONDS} s (VLLM_READY_TIMEOUT_S, GPU_CHECK_BUDGET_S)." >&2
    [[ -f "$WORK/vllm.log" ]] && tail -n 40 "$WORK/vllm.log" >&2
    exit 1
  fi
  sleep 2
done
log "engine ready"

# --- The target and its worker ---------------------------------------------------------------
TARGET_NAME="GPU check $$ - vLLM $GPU"
"$PY" manage.py target add \
  --name "$TARGET_NAME" \
  --kind vllm \
  --base-url "$ENGINE_URL" \
  --model "$MODEL" \
  --hardware "$GPU" \
  --weights-from "$CATALOGUE_MODEL:$PRECISION" \
  --probe | sed 's/^/    /'
QUEUE="$("$PY" manage.py target list --json | "$PY" -c '
import json, sys
name = sys.argv[1]
print(next(row["queue"] for row in json.load(sys.stdin) if row["name"] == name))
' "$TARGET_NAME")"
log "target '$TARGET_NAME' probed; queue $QUEUE"

# One worker with concurrency 1 on the target's own queue, exactly as a deployment runs it.
setsid "$PY" -m celery -A config worker -Q "$QUEUE" -c 1 \
  --without-gossip --without-mingle -n "gpu-check-$$@%h" --loglevel WARNING \
  >"$WORK/worker.log" 2>&1 &
WORKER_PID=$!

"$PY" manage.py speedoflight --gpu "$GPU" --model "$CATALOGUE_MODEL" --precision "$PRECISION" \
  --batch 1 --context 4096 | sed 's/^/    /'

print_table() {
  "$PY" - "$1" <<'PY'
import json
import re
import sys

with open(sys.argv[1]) as handle:
    data = json.load(handle)


def p50(summary, metric, scale=1.0):
    stats = (summary or {}).get(metric) or {}
    value = stats.get("p50")
    return f"{value * scale:,.1f}" if isinstance(value, int | float) else "-"


def number(value, fmt="{:,.0f}"):
    return fmt.format(value) if isinstance(value, int | float) else "-"


print(f"  run {data.get('run')}: {data.get('status')}" + (f" ({data['error']})" if data.get("error") else ""))
header = f"  {'step':<22} {'ok/n':>7} {'TTFT P50 ms':>12} {'TPOT P50 ms':>12} {'E2E P50 s':>10} {'out tok/s':>10} {'peak conc':>9}"
print(header)
print("  " + "-" * (len(header) - 2))
for step in data.get("steps") or []:
    summary = step.get("summary") or {}
    requests = summary.get("requests") or {}
    ok = f"{requests.get('succeeded', 0)}/{requests.get('total', 0)}"
    print(
        f"  {step.get('key', ''):<22} {ok:>7} {p50(summary, 'ttft_s', 1000):>12} {p50(summary, 'tpot_s', 1000):>12}"
        f" {p50(summary, 'e2e_s'):>10} {number(summary.get('output_tokens_per_s')):>10}"
        f" {number(summary.get('peak_concurrency')):>9}"
    )
for finding in data.get("findings") or []:
    mark = "ok" if finding.get("ok") else "!!"
    print(f"  [{mark}] {finding.get('title')}")
    if finding.get("id") == "decode-efficiency":
        print(f"       {finding.get('detail')}")
        match = re.search(r"(\d+)% of the bound", finding.get("detail") or "")
        if match:
            print(f"       speed-of-light efficiency: {match.group(1)}%")
PY
}

run_lab() {
  local lab="$1"
  shift
  local params=() item remaining
  for item in "$@"; do params+=(--param "$item"); done
  remaining=$((BUDGET_S - SECONDS))
  if ((remaining < 30)); then
    log "$lab: skipped, the ${BUDGET_S} s budget is spent"
    FAILED_LABS+=("$lab (skipped)")
    return 0
  fi
  log "$lab: $*"
  if "$PY" manage.py runlab "$lab" --target "$TARGET_NAME" --user gpucheck "${params[@]}" \
    --wait --json --timeout "$remaining" >"$WORK/$lab.json" 2>"$WORK/$lab.err"; then
    print_table "$WORK/$lab.json"
  else
    FAILED_LABS+=("$lab")
    if [[ -s "$WORK/$lab.json" ]]; then print_table "$WORK/$lab.json"; fi
    sed 's/^/  /' "$WORK/$lab.err" >&2
  fi
}

# Small parameters: every lab's shape shows, and all four finish in a minute or two on a GPU.
run_lab ttft-vs-output-length max_tokens=32,128,512 prompt_tokens=256 repeats=3
run_lab prompt-length-ttft prompt_tokens=16,256,1024,2048 max_tokens=32 repeats=3
run_lab decode-speed-of-light prompt_tokens=16 max_tokens=256 repeats=5
run_lab batching-almost-free concurrency=1,4,16,64 prompt_tokens=128 max_tokens=128

if ((${#FAILED_LABS[@]})); then
  log "done in ${SECONDS} s; not succeeded: ${FAILED_LABS[*]}"
  if [[ -s "$WORK/worker.log" ]]; then
    echo "The end of the worker's log:" >&2
    tail -n 20 "$WORK/worker.log" >&2
  fi
  exit 1
fi
log "done in ${SECONDS} s: all four labs succeeded"
