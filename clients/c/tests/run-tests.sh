#!/usr/bin/env bash
# The C client's tests, as CI runs them (scripts/test.sh):
#   1. the generated protobuf-c code is fresh (sums of proto/, and a regeneration compared);
#   2. the library, programs and tests build with -Wall -Wextra -Werror;
#   3. under valgrind memcheck (no error, no definite or indirect leak): the unit tests, the tests
#      against fake daemons in the test process (bursts, gaps, a dropped connection, a silent
#      daemon, a reader away, a follower polled rarely, a context shut down), then the client
#      tests against a real earshotd over CURVE on loopback (every service, streams cancelled
#      midway, deadlines, an unknown key refused, a daemon restart under a follower), then
#      `earshot-c match` and `earshot-c watch` as programs;
#   4. a short libFuzzer run of the decoding harnesses (FUZZ_RUNS, default 20000 each).
# Environment (as the Python client's tests get it):
#   EARSHOTD              the earshotd binary
#   EARSHOT_CLI           the earshot CLI (makes the key pairs; its `remote match --json` is compared)
#   EARSHOT_TEST_CATALOG  a catalog (.earcat) copied into the daemon's catalogs folder
#   EARSHOT_TEST_AUDIO    a recording in it, the daemon's looping file source
#   EARSHOT_TEST_ITEM     optional: the media item id it matches (default: the audio's file name)
#   VALGRIND=0            run without valgrind (faster, for debugging)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"
export PATH="/opt/swift/usr/bin:$PATH"

fail() { echo "run-tests: $*" >&2; exit 1; }
for v in EARSHOTD EARSHOT_CLI EARSHOT_TEST_CATALOG EARSHOT_TEST_AUDIO; do
    [ -n "${!v:-}" ] || fail "$v is not set (see the top of this script)"
    [ -e "${!v}" ] || fail "$v=${!v}: no such file"
done
earshotd="$(cd "$(dirname "$EARSHOTD")" && pwd)/$(basename "$EARSHOTD")"
cli="$(cd "$(dirname "$EARSHOT_CLI")" && pwd)/$(basename "$EARSHOT_CLI")"
audio="$(cd "$(dirname "$EARSHOT_TEST_AUDIO")" && pwd)/$(basename "$EARSHOT_TEST_AUDIO")"
item="${EARSHOT_TEST_ITEM:-$(basename "${EARSHOT_TEST_AUDIO%.*}")}"
passed=0 failed=0
result() { # name status
    if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "ok   $1"; else failed=$((failed + 1)); echo "FAIL $1"; fi
}

start=$(date +%s)
work="$(mktemp -d)"
cleanup() {
    if [ -f "$work/daemon.pid" ]; then kill -TERM "$(cat "$work/daemon.pid")" 2>/dev/null || true; fi
    sleep 0.2
    if [ -f "$work/daemon.pid" ]; then kill -KILL "$(cat "$work/daemon.pid")" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# 1. Generated code: made from the proto/ of this tree, and what protoc-c makes of it now.
status=0
(cd "$root" && sha256sum --quiet -c clients/c/generated/proto-sources.sha256) >/dev/null 2>&1 || status=$?
[ $status -eq 0 ] || echo "run-tests: proto/ changed since clients/c/generated was made: run scripts/generate-proto.sh --c-only" >&2
result "generated code matches proto/ (sha256)" $status
status=0
(cd "$root" && C_OUT="$work/generated" scripts/generate-proto.sh --c-only >/dev/null) && diff -r "$work/generated" generated >/dev/null || status=1
[ $status -eq 0 ] || echo "run-tests: clients/c/generated differs from what scripts/generate-proto.sh --c-only makes" >&2
result "generated code is what protoc-c makes" $status

# 2. Build.
make -s all tests >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "build failed"; }
result "build with -Wall -Wextra -Werror" 0
status=0
python3 - <<'PY' || status=1
readme, example = open("README.md").read(), open("examples/second-screen.c").read()
assert "```c\n" + example + "```" in readme, "README.md does not show examples/second-screen.c as it is"
assert example.count("\n") <= 100, "the example is longer than 100 lines"
PY
result "README shows examples/second-screen.c (≤ 100 lines) as it is" $status

# Each program under valgrind writes its report to vg-NAME.log; vg_summary prints its verdict.
vg() { # NAME: the valgrind command line for one program
    [ "${VALGRIND:-1}" != 0 ] || return 0
    echo valgrind --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
        --error-exitcode=99 --log-file="$work/vg-$1.log"
}
vg_summary() {
    [ "${VALGRIND:-1}" != 0 ] || return 0
    local errors leaks
    errors=$(grep -h -o 'ERROR SUMMARY: [0-9]* errors' "$work/vg-$1.log" | head -1 || true)
    leaks=$(grep -h -o -E 'definitely lost: [0-9,]+ bytes|All heap blocks were freed' "$work/vg-$1.log" | head -1 || true)
    echo "  valgrind $1: $errors; ${leaks:-no leak summary}"
    grep -q 'ERROR SUMMARY: 0 errors' "$work/vg-$1.log" || sed 's/^/    /' "$work/vg-$1.log" | head -80
}
if [ "${VALGRIND:-1}" != 0 ]; then
    command -v valgrind >/dev/null || fail "valgrind missing (scripts/setup.sh installs it)"
fi

# 3a. Unit tests.
status=0
$(vg unit) build/test-unit > "$work/unit.out" 2> "$work/unit.err" || status=$?
vg_summary unit
grep -E "passed|FAILED" "$work/unit.out" "$work/unit.err" | sed 's/^[^:]*:/  /' || true
[ $status -eq 0 ] || { tail -40 "$work/unit.err"; }
result "unit tests (valgrind)" $status

# 3a'. Fake daemons (a ROUTER and a PUB in the test process): what earshotd does not do on demand.
status=0
$(vg fake) build/test-fake > "$work/fake.out" 2> "$work/fake.err" || status=$?
vg_summary fake
grep -E "^test |FAILED|snapshot|passed" "$work/fake.err" "$work/fake.out" | sed 's/^[^:]*:/  /' || true
[ $status -eq 0 ] || { tail -40 "$work/fake.err"; }
result "fake-daemon tests: bursts, gaps, lost connections, silence (valgrind)" $status

# 3b. A daemon with CURVE: keys, allow-list, free loopback ports, its own state folder.
mkdir -p "$work/keys" "$work/state/catalogs"
cp "$EARSHOT_TEST_CATALOG" "$work/state/catalogs/test.earcat"
# Each NAME.pub holds its allow-list line ("<key> NAME <role>"), the role given to keygen.
for name in admin operator viewer; do "$cli" keygen -o "$work/keys/$name" --role "$name" >/dev/null; done
"$cli" keygen -o "$work/keys/stranger" >/dev/null
for name in admin operator viewer; do grep -v '^#' "$work/keys/$name.pub"; done > "$work/state/clients.allow"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rpc="tcp://127.0.0.1:$(port)" events="tcp://127.0.0.1:$(port)"
# Start and restart are one script, so the tests can restart the daemon in the middle of a watch.
cat > "$work/daemon.sh" <<SCRIPT
#!/usr/bin/env bash
# daemon.sh start|restart: earshotd on $rpc / $events; ready when earshot-c pings it.
set -euo pipefail
if [ "\$1" = restart ] && [ -f "$work/daemon.pid" ]; then
    pid=\$(cat "$work/daemon.pid")
    kill -TERM "\$pid" 2>/dev/null || true
    for _ in \$(seq 150); do kill -0 "\$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "\$pid" 2>/dev/null || true
fi
shopt -s nullglob
logs=("$work"/earshotd-*.log)
n=\${#logs[@]}
"$earshotd" --daemon.state_directory="$work/state" --audio.source=file --audio.file="$audio" --audio.loop=true \\
    --session.prepare_on_start=true --session.follow=true --rpc.listen='["$rpc"]' --events.listen='["$events"]' \\
    </dev/null >"$work/earshotd-\$n.log" 2>&1 &
echo \$! > "$work/daemon.pid"
for _ in \$(seq 300); do
    if [ -f "$work/state/server.public" ] && "$here/build/earshot-c" ping --server "$rpc" \\
        --server-key "$work/state/server.public" --key "$work/keys/viewer.key" --timeout 0.5 >/dev/null 2>&1; then
        exit 0
    fi
    kill -0 "\$(cat "$work/daemon.pid")" 2>/dev/null || { cat "$work/earshotd-\$n.log" >&2; exit 1; }
    sleep 0.1
done
echo "daemon.sh: earshotd did not answer within 30 s" >&2
exit 1
SCRIPT
chmod +x "$work/daemon.sh"
"$work/daemon.sh" start || fail "earshotd did not start"
sleep 3 # ≥ 3 s heard: Match answers from the prerecorded window

# 3c. The client tests.
status=0
EARSHOT_RPC="$rpc" EARSHOT_EVENTS="$events" EARSHOT_SERVER_KEY="$work/state/server.public" EARSHOT_KEYS="$work/keys" \
EARSHOT_TEST_CATALOG="$EARSHOT_TEST_CATALOG" EARSHOT_TEST_CATALOG_SHA256="$(sha256sum "$EARSHOT_TEST_CATALOG" | cut -d' ' -f1)" \
EARSHOT_TEST_ITEM="$item" EARSHOT_RESTART="$work/daemon.sh restart" \
    $(vg client) build/test-client > "$work/client.out" 2> "$work/client.err" || status=$?
vg_summary client
grep -E "^test |FAILED|restart|refused|across|passed" "$work/client.err" "$work/client.out" | sed 's/^[^:]*:/  /' || true
if [ $status -ne 0 ]; then tail -60 "$work/client.err"; tail -30 "$work"/earshotd-*.log; fi
result "client tests against earshotd over CURVE (valgrind)" $status

# 3d. The programs.
keys=(--server "$rpc" --events "$events" --server-key "$work/state/server.public")
status=0
$(vg match) build/earshot-c match "${keys[@]}" --key "$work/keys/operator.key" --json > "$work/match.json" 2> "$work/match.err" || status=$?
vg_summary match
"$cli" remote match --server "$rpc" --server-key "$work/state/server.public" --key "$work/keys/operator.key" --json > "$work/swift.json" 2>&1 || true
python3 - "$work/match.json" "$work/swift.json" "$item" <<'PY' || status=1
import json, sys
c = json.loads(open(sys.argv[1]).read())
swift = json.loads(open(sys.argv[2]).read())
assert c["outcome"] == "MATCH_OUTCOME_MATCH", c
assert c["items"][0]["mediaItem"]["id"] == sys.argv[3], c
# The same shape as `earshot remote match --json` (values differ: the programme plays on).
assert set(c) == set(swift), (sorted(c), sorted(swift))
assert set(c["items"][0]) == set(swift["items"][0]), (sorted(c["items"][0]), sorted(swift["items"][0]))
assert set(c["items"][0]["mediaItem"]) == set(swift["items"][0]["mediaItem"])
PY
[ $status -eq 0 ] || { cat "$work/match.json" "$work/swift.json" "$work/match.err"; }
result "earshot-c match --json: a match, shaped as earshot remote match --json (valgrind)" $status

status=0
code=0
build/earshot-c match "${keys[@]}" --key "$work/keys/stranger.key" --timeout 1 > /dev/null 2> "$work/refused.err" || code=$?
[ $code -eq 5 ] && grep -q "DEADLINE_EXCEEDED.*no connection" "$work/refused.err" || status=1
[ $status -eq 0 ] || { echo "exit $code"; cat "$work/refused.err"; }
result "earshot-c match with an unknown key: exit 5, says why" $status

status=0
$(vg watch) build/earshot-c watch "${keys[@]}" --key "$work/keys/viewer.key" --json --duration 8 > "$work/watch.json" 2> "$work/watch.err" &
watcher=$!
# Matches publish match/ events while it watches.
sleep 4
for _ in 1 2 3; do build/earshot-c match "${keys[@]}" --key "$work/keys/operator.key" >/dev/null 2>&1 || true; sleep 0.5; done
wait "$watcher" || status=$?
vg_summary watch
python3 - "$work/watch.json" <<'PY' || status=1
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
snapshots = [l for l in lines if l["update"] == "snapshot"]
events = [l for l in lines if l["update"] == "event"]
assert snapshots and snapshots[0]["reason"] == "start", lines[:2]
assert int(snapshots[0]["snapshot"]["epoch"]) > 0
assert any(e["event"]["topic"] == "earshot.v1/match/" for e in events), [e["event"]["topic"] for e in events]
# In order: per topic, seq goes up by one from event to event; a snapshot is a new start.
last = {}
for l in lines:
    if l["update"] == "snapshot":
        last = {}
        continue
    if l["update"] != "event":
        continue
    topic, seq = l["event"]["topic"], int(l["event"]["seq"])
    assert topic not in last or seq == last[topic] + 1, (topic, last.get(topic), seq)
    last[topic] = seq
PY
[ $status -eq 0 ] || { head -5 "$work/watch.json"; cat "$work/watch.err"; }
result "earshot-c watch --json: snapshot, then match events in order (valgrind)" $status

# 4. The decoding paths under libFuzzer, briefly (fuzz/run-fuzz.sh runs 10⁶ and more).
status=0
fuzz/run-fuzz.sh "${FUZZ_RUNS:-20000}" > "$work/fuzz.out" 2>&1 || status=$?
sed 's/^/  /' "$work/fuzz.out"
result "fuzz decoding (${FUZZ_RUNS:-20000} runs per harness)" $status

echo "c-client: $passed passed, $failed failed ($(( $(date +%s) - start )) s)"
[ "$failed" -eq 0 ]
