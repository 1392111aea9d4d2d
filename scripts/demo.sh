#!/usr/bin/env bash
# A short scripted tour of memrepo on a throw-away vault (run by `make demo`).
set -euo pipefail
SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"  # before the tour changes directory
export MEMREPO_AUTHOR="${MEMREPO_AUTHOR:-demo-agent}"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/memrepo-demo.XXXXXX")
# The demo's background servers live in its own runtime folder and are stopped on the way out:
# none outlives the demo, holding the deleted vault's files.
export MEMREPO_RUNTIME_DIR="$WORK/rt"
trap 'memrepo daemon stop --all > /dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
# A throw-away identity so the demo runs on machines without git config.
export GIT_CONFIG_GLOBAL="$WORK/gitconfig"
git config --global user.name "Demo Person"
git config --global user.email "demo@example.invalid"
V="$WORK/vault"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

step "1. Create a vault: a git repository with the memory layout and validating hooks"
run memrepo init "$V"
cd "$V"
run git log --oneline

step "2. Low-risk memories commit straight to main (one memory = one commit)"
run memrepo add --subject user --fact ui.theme --kind preference --tag '#界面' \
    --summary "User prefers dark mode" --body "Asked twice for a dark editor theme."
run memrepo add --subject project-alpha --kind knowledge --tag '#数据库' \
    --summary "配置数据库连接池：最大线程数 32" --body "连接池 max_threads=32, 超时 5s (Redis 超时 3s)."

step "3. A high-risk constraint stops for a person: it becomes a proposal branch"
run memrepo add --subject project-alpha --fact release.auto_publish --kind constraint \
    --summary "当前阶段禁止自动发布" --evidence "docs/release.md#L10-L20" \
    --affects "release pipeline must wait for a human" --json
P=$(memrepo proposals --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
run memrepo proposals
run memrepo review "$P"

step "4. Apply it: one merge commit on main"
run memrepo apply "$P"
run git log --oneline --graph -5

step "5. Search (Chinese, English, natural questions; honest when nothing fits)"
run memrepo search "数据库"
run memrepo search "can we auto publish releases?"
run memrepo search "quantum chromodynamics lecture notes" --json

step "5b. Memory CI: recall checks that a proposal must pass before it is applied"
ids() { python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'; }
POOL=$(memrepo list --subject project-alpha --kind knowledge --json | ids)
RULE=$(memrepo list --subject project-alpha --fact release.auto_publish --status active --json | ids)
run memrepo check add "数据库连接池最大线程数是多少？" --expect "$POOL" --top 1
run memrepo check add "能自动发布吗？" --expect "$RULE" --by-fact --top 3   # follows the fact through supersedes
run memrepo add --subject ops --kind constraint --summary "数据库连接池最大线程数是多少？以运维手册为准" \
    --body "回答连接池问题前先查运维手册。"
P3=$(memrepo proposals --json | ids)
printf '$ memrepo review %s | tail -3\n' "$P3"; memrepo review "$P3" | tail -3
if memrepo apply "$P3"; then echo "unexpected: applied"; exit 1; else echo "(refused with exit $?: the regression is caught)"; fi
run memrepo reject "$P3" --why "buries the pool size the agent needs"

step "6. A model-inferred override is high risk too; apply it, then undo it with git revert"
run memrepo add --subject project-alpha --fact release.auto_publish --kind state --source model-inference \
    --summary "允许自动发布" --body "Inferred from the last three green releases."
P2=$(memrepo proposals --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
run memrepo apply "$P2"
run memrepo list --subject project-alpha
M=$(git rev-parse HEAD)
run git revert --no-edit -m 1 "$M"
run memrepo list --subject project-alpha
run memrepo validate
run memrepo history project-alpha release.auto_publish

step "7. A person edits a memory by hand; the pre-commit hook refuses a credential"
F=$(ls memories/L1/*/*.md | head -1)
printf '\napi_key = sk-%s\n' "abcdefghijklmnopqrstuvwx0123456789" >> "$F"
git add "$F"
if git commit -qm "hand edit"; then echo "unexpected: commit accepted"; exit 1; else echo "(refused, as it should be)"; fi
git checkout -q HEAD -- "$F"

step "8. Nightly distill: the same preference on three different days becomes an L2 candidate"
for d in 2026-11-20 2026-11-22 2026-11-25; do
  printf '{"subject":"user","summary":"User asked for the dark editor theme again","body":"Switched the editor to dark mode; the user prefers dark themes.","created":"%sT09:00:00+00:00","session":"s-%s"}\n' "$d" "$d"
done > "$WORK/days.jsonl"
run memrepo import "$WORK/days.jsonl"
run memrepo distill --now 2026-11-29
run memrepo proposals
D=$(memrepo proposals --json | python3 -c 'import json,sys; print([p["id"] for p in json.load(sys.stdin) if p["id"].startswith("distill_")][0])')
run memrepo review "$D"
run memrepo distill --now 2026-11-29

step "9. A long agent session survives compaction (English, then Chinese): prune, flush, recall"
for LANG_ in en zh; do
  S="$WORK/session-$LANG_"
  python3 "$SCRIPTS/agent_session.py" --lang "$LANG_" "$S"
  [ "$LANG_" = en ] && memrepo import "$S/noise.jsonl" > /dev/null  # unrelated memories (the same in both runs)
  echo "-- [$LANG_] prune the transcript: old tool results are trimmed, kept in full as evidence first"
  memrepo prune "$S/transcript.json" --json > "$S/pruned.json"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("%s -> %s characters; trimmed %d, cleared %d" % (format(r["chars_before"], ","), format(r["chars_after"], ","), len(r["trimmed"]), len(r["cleared"])))' "$S/pruned.json"
  PTR=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(next(x["evidence"] for x in r["trimmed"] + r["cleared"] if x["message"] == 2))' "$S/pruned.json")
  run memrepo evidence "$PTR" | grep -E "312|排空" || true
  echo "-- [$LANG_] before compaction the model answers the flush prompt (memrepo flush --prompt --lang $LANG_)"
  sed "s/{LOG_EVIDENCE}/$PTR/" "$S/flush.md" > "$S/answer.md"
  run memrepo flush --cycle 1 --session "demo-$LANG_" < "$S/answer.md"
  run memrepo flush --cycle 1 --session "demo-$LANG_" --json < "$S/answer.md"
  echo "-- [$LANG_] compaction: the transcript is dropped"
  rm "$S/transcript.json"
  Q=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["question"])' "$S/questions.json")
  Q2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["question2"])' "$S/questions.json")
  run memrepo recall --budget 900 "$Q"
  run memrepo recall --budget 600 "$Q2"
done
echo "-- long-term layers changed only through review:"
run memrepo list --layer L2
run memrepo proposals

step "10. Two agents share one vault through a git remote (a bare repository standing in for a server)"
SERVER="$WORK/team.git"
run git init -q --bare -b main "$SERVER"
run git remote add origin "$SERVER"
run memrepo sync
A="$WORK/analyst" B="$WORK/executor"
run git clone -q "$SERVER" "$A"
run git clone -q "$SERVER" "$B"
(cd "$A" && memrepo hooks install >/dev/null) && (cd "$B" && memrepo hooks install >/dev/null)
cd "$A"
run memrepo --agent analyst add --scope private --summary "我猜用户偏好深色：两次提到夜间工作"
run memrepo --agent analyst propose --subject user --fact ui.contrast --summary "high contrast" --evidence chat/12#L4
run memrepo sync
cd "$B"
run memrepo sync
run memrepo --agent executor propose --subject user --fact ui.contrast --summary "high contrast" --evidence ui/settings.json#L3
run memrepo --agent executor propose --subject user --fact ui.contrast --summary "normal contrast" --evidence ui/settings.json#L9 --json
run memrepo proposals
PC=$(memrepo proposals --json | python3 -c 'import json,sys; print([p["id"] for p in json.load(sys.stdin) if "ui.contrast" in p["reason"]][0])')
run memrepo review "$PC"
run memrepo sync
cd "$A"
run memrepo sync
run memrepo proposals
run memrepo list --subject user
run memrepo --agent executor list --subject general
echo "(the analyst's private note is not in the executor's list, nor on the server:)"
run git --git-dir "$SERVER" log --all --oneline
cd "$V"

step "11. Claude: the memory tool through the Anthropic SDK, and Claude Code's hooks (English and 中文)"
run python3 "$SCRIPTS/claude_session.py" "$V" "$WORK/claude"
run git log --oneline -12
run memrepo proposals
run memrepo search "支付 验收标准"

step "12. The background server answered the per-turn commands warm; the demo stops it on the way out"
run memrepo daemon status

step "Done. The vault was $V (deleted on exit)."
UI_VAULT="${TMPDIR:-/tmp}/memrepo-demo-vault"   # a copy that outlives the tour, for the web page
rm -rf "$UI_VAULT" && cp -a "$V" "$UI_VAULT"
step "13. See it in a browser (proposals, diffs, history, graph): a copy is kept at $UI_VAULT"
echo "  $(command -v memrepo) ui --vault $UI_VAULT"
