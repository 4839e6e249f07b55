package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// steerE2EAgent stands in for Claude Code with --input-format stream-json
// (as in the gateway's tests): a reader saves each stdin line as
// $E2E_OUT/main/in-<turn>-<k> as it comes; the first turn never answers
// (the gateway is killed under it), later ones answer their first input
// and, once stdin ends, each further one.
const steerE2EAgent = `out="$E2E_OUT/main"; mkdir -p "$out"
n=$(( $(ls "$out" | grep -c '^turn-') + 1 )); touch "$out/turn-$n"
exec 3<&0
(k=0; while IFS= read -r l; do k=$((k+1)); printf '%s\n' "$l" > "$out/tmp-$n-$k"; mv "$out/tmp-$n-$k" "$out/in-$n-$k"; done; echo $k > "$out/eof-$n") <&3 &
while [ ! -e "$out/in-$n-1" ]; do sleep 0.01; done
echo '{"type":"system","subtype":"init","session_id":"sess-'$n'"}'
if [ $n -eq 1 ]; then while :; do sleep 1; done; fi
echo '{"type":"result","subtype":"success","is_error":false,"result":"reply '$n'","session_id":"sess-'$n'"}'
while [ ! -e "$out/eof-$n" ]; do sleep 0.01; done
`

// kill -9 of the gateway after a steered message was written into the
// running agent: after the restart the message is neither lost nor
// prompted twice. It was stored as part of the killed turn, so the turn's
// batch runs again once, with it, and nothing is left to run after.
func TestE2ESteeredMessageSurvivesCrash(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "claude-stand-in.sh")
	if err := os.WriteFile(script, []byte(steerE2EAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := newE2E(t, e2eConfig{output: "claude-stream", sandbox: "none",
		command:    `["/bin/sh", "` + script + `", "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]`,
		agentExtra: "  input: stream-json\n  mid_turn: steer\n"})
	in := func(turn, k int) string {
		return filepath.Join(dir, "out", "main", "in-"+strconv.Itoa(turn)+"-"+strconv.Itoa(k))
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	g := startGW(t, dir)
	g.mustPost("r1", "ann", "first question")
	testwait.For(t, 20*time.Second, "the first turn's prompt", func() bool { return exists(in(1, 1)) })
	g.mustPost("r1", "ann", "steered addition")
	testwait.For(t, 20*time.Second, "the steered message in the agent", func() bool { return exists(in(1, 2)) })
	g.kill()

	g = startGW(t, dir)
	bot := g.waitBot("r1", 1)
	if len(bot) != 1 || bot[0].Text != "reply 2" {
		t.Fatalf("bot messages %+v; want the rerun's one reply", bot)
	}
	b, err := os.ReadFile(in(2, 1))
	if err != nil {
		t.Fatal(err)
	}
	if p := string(b); strings.Count(p, "steered addition") != 1 || strings.Count(p, "first question") != 1 {
		t.Fatalf("the rerun's prompt: %s\nwant the killed turn's batch with the steered message, each once", p)
	}
	st := openDB(t, filepath.Join(dir, "data"))
	testwait.For(t, 20*time.Second, "no work left", func() bool {
		fs, err := st.PendingFolders(context.Background())
		return err == nil && len(fs) == 0
	})
	if exists(in(3, 1)) {
		t.Error("a third turn ran: the steered message was prompted again")
	}
}
