// Package runnertest is the conformance suite every agent.Runner passes
// (agent.Local, remote.Runner): what a turn's output becomes for each
// output kind (text, claude-json, claude-stream, codex-json, none, from
// the recorded fixtures in agent/testdata), the timeout, cancellation, a non-zero exit
// status, the usage reported, the session id of a fresh and a resumed
// turn, and the agent's environment. It is for tests only.
package runnertest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/agent"
	"switchboard/internal/testagent"
	"switchboard/internal/testwait"
)

// AllowedEnv is the variable the environment case names in Spec.Env: the
// agent must see it. A runner whose machine filters a turn's environment
// (a remote worker's agent.env) allows it.
const AllowedEnv = "RUNNERTEST_ALLOWED"

// Timeouts: long enough for a turn on a loaded machine, short enough for
// the timeout case.
const (
	turnTimeout  = 30 * time.Second
	shortTimeout = 3 * time.Second
)

// Run runs the suite against the runners newRunner makes, one per case
// (a case may leave its runner busy). The cases are not parallel: the
// environment case sets process environment variables.
func Run(t *testing.T, newRunner func(t *testing.T) agent.Runner) {
	t.Run("OutputKinds", func(t *testing.T) { outputKinds(t, newRunner) })
	t.Run("Timeout", func(t *testing.T) { timeout(t, newRunner(t)) })
	t.Run("Cancel", func(t *testing.T) { cancel(t, newRunner(t)) })
	t.Run("ExitStatus", func(t *testing.T) { exitStatus(t, newRunner(t)) })
	t.Run("Usage", func(t *testing.T) { usage(t, newRunner) })
	t.Run("Session", func(t *testing.T) { session(t, newRunner) })
	t.Run("Environment", func(t *testing.T) { environment(t, newRunner(t)) })
}

// fixture is the absolute path of a file of agent/testdata.
func fixture(t *testing.T, kind, name string) string {
	t.Helper()
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("runnertest: cannot find its own source file")
	}
	p := filepath.Join(filepath.Dir(here), "..", "testdata", kind, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// turn is a turn's Spec and Input: a group folder under its own groups
// directory, a fresh turn id, the agent's command.
func turn(t *testing.T, command []string) (agent.Spec, agent.Input) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "groups", "main")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	id := agent.TurnID(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, "t-"+strings.ToLower(t.Name())))
	if len(id) > 64 {
		id = id[len(id)-64:]
	}
	return agent.Spec{Command: command, Timeout: turnTimeout},
		agent.Input{TurnID: id, Dir: dir, Prompt: "hello", Env: []string{"SWITCHBOARD_FOLDER=main"}}
}

func outputKinds(t *testing.T, newRunner func(*testing.T) agent.Runner) {
	const codexThread = "01a2129f-59a9-7943-91d0-9f60986dd305"
	for _, tc := range []struct {
		name, body string
		args       []string
		output     agent.Output
		reply      string
		session    string // "" : the input's (none)
	}{
		{"text", `cat; echo; echo "  second line  "`, nil, agent.OutputText, "hello\n  second line", ""},
		{"zero output is text", `echo " plain "`, nil, "", "plain", ""},
		{"claude-json", `cat "$1"`, []string{fixture(t, "claude-json", "fresh.json")}, agent.OutputClaudeJSON,
			"Hello from the fake API.", "1a6d16db-3a04-4f86-a93e-729ab7b01495"},
		{"claude-stream", `cat "$1"`, []string{fixture(t, "claude-stream", "tool.jsonl")}, agent.OutputClaudeStream,
			"The command printed: hi from bash", "9dd51978-a1bc-42bb-99f2-5ce4112206a7"},
		{"codex-json", `cat "$1"`, []string{fixture(t, "codex-json", "fresh.jsonl")}, agent.OutputCodexJSON,
			"Hello Ann.\n\nThe answer is 42.", codexThread},
		{"none", `echo "not a reply"`, nil, agent.OutputNone, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, in := turn(t, testagent.Script(t, tc.body, tc.args...))
			spec.Output = tc.output
			res, err := newRunner(t).Run(t.Context(), spec, in)
			if err != nil {
				t.Fatal(err)
			}
			if res.Reply != tc.reply || res.SessionID != tc.session || res.ExitCode != 0 || res.NotStarted || res.TimedOut {
				t.Errorf("result %+v; want reply %q, session %q, exit status 0", res, tc.reply, tc.session)
			}
		})
	}
	t.Run("not claude-json", func(t *testing.T) {
		spec, in := turn(t, testagent.Script(t, `echo "plain words"`))
		spec.Output = agent.OutputClaudeJSON
		res, err := newRunner(t).Run(t.Context(), spec, in)
		if !errors.Is(err, agent.ErrFailed) || !strings.Contains(err.Error(), "not Claude Code JSON") || res.Reply != "" {
			t.Errorf("reply %q, err %v; want ErrFailed saying the output is not Claude Code JSON", res.Reply, err)
		}
	})
}

// A turn over Spec.Timeout is killed: ErrFailed, TimedOut, not cancelled.
func timeout(t *testing.T, r agent.Runner) {
	spec, in := turn(t, testagent.Script(t, `echo started; sleep 60`))
	spec.Timeout = shortTimeout
	start := time.Now()
	res, err := r.Run(t.Context(), spec, in)
	if !errors.Is(err, agent.ErrFailed) || errors.Is(err, agent.ErrCancelled) || !res.TimedOut {
		t.Fatalf("result %+v, err %v; want ErrFailed and TimedOut", res, err)
	}
	if took := time.Since(start); took > shortTimeout+20*time.Second {
		t.Errorf("the timed-out turn took %v", took)
	}
	if res.Reply != "" {
		t.Errorf("reply %q of a timed-out turn; want none", res.Reply)
	}
}

// A turn whose ctx ends returns at once with ErrCancelled and the ctx's
// error, never ErrFailed, and not as timed out.
func cancel(t *testing.T, r agent.Runner) {
	started := filepath.Join(t.TempDir(), "started")
	spec, in := turn(t, testagent.Script(t, `touch "$1"; sleep 60`, started))
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	type out struct {
		res agent.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := r.Run(ctx, spec, in)
		done <- out{res, err}
	}()
	testwait.For(t, 20*time.Second, "the agent started", func() bool { _, err := os.Stat(started); return err == nil })
	stop()
	var o out
	select {
	case o = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after its ctx ended")
	}
	if !errors.Is(o.err, agent.ErrCancelled) || !errors.Is(o.err, context.Canceled) || errors.Is(o.err, agent.ErrFailed) {
		t.Fatalf("err %v; want ErrCancelled wrapping context.Canceled, not ErrFailed", o.err)
	}
	if !strings.HasPrefix(o.err.Error(), "agent turn cancelled: ") || o.res.TimedOut || o.res.Reply != "" {
		t.Errorf("result %+v, err %q; want \"agent turn cancelled: …\", neither timed out nor a reply", o.res, o.err)
	}
}

// A non-zero exit status fails the turn: ErrFailed, the status, the end
// of stderr, no reply.
func exitStatus(t *testing.T, r agent.Runner) {
	spec, in := turn(t, testagent.Script(t, `echo partial; echo "it broke" >&2; exit 3`))
	res, err := r.Run(t.Context(), spec, in)
	if !errors.Is(err, agent.ErrFailed) || !strings.Contains(err.Error(), "agent exited with status 3: it broke") {
		t.Fatalf("err %v; want ErrFailed with the status and stderr", err)
	}
	if res.ExitCode != 3 || res.Reply != "" || res.NotStarted || res.TimedOut || !strings.Contains(res.Stderr, "it broke") {
		t.Errorf("result %+v; want exit status 3, stderr kept, no reply", res)
	}
}

// What the agent reports a turn cost comes back, for a failed turn too.
func usage(t *testing.T, newRunner func(*testing.T) agent.Runner) {
	t.Run("text trailer", func(t *testing.T) {
		spec, in := turn(t, testagent.Script(t, `echo "Hi there."; echo '{"switchboard_usage": {"cost_usd": 0.25, "input_tokens": 1200, "output_tokens": 80}}'`))
		res, err := newRunner(t).Run(t.Context(), spec, in)
		if err != nil {
			t.Fatal(err)
		}
		if want := (agent.Usage{CostUSD: 0.25, InputTokens: 1200, OutputTokens: 80}); res.Usage != want || res.Reply != "Hi there." {
			t.Errorf("usage %+v, reply %q; want %+v and the trailer off the reply", res.Usage, res.Reply, want)
		}
	})
	t.Run("claude-json", func(t *testing.T) {
		spec, in := turn(t, testagent.Script(t, `cat "$1"`, fixture(t, "claude-json", "fresh.json")))
		spec.Output = agent.OutputClaudeJSON
		res, err := newRunner(t).Run(t.Context(), spec, in)
		if err != nil {
			t.Fatal(err)
		}
		want := agent.Usage{CostUSD: 0.016656, SessionCost: 0.016656, InputTokens: 1234, OutputTokens: 56, CacheCreationTokens: 2000,
			CacheReadTokens: 3000, NumTurns: 1, APIDuration: 273 * time.Millisecond}
		if res.Usage != want {
			t.Errorf("usage %+v; want %+v", res.Usage, want)
		}
	})
	t.Run("codex-json", func(t *testing.T) {
		spec, in := turn(t, testagent.Script(t, `cat "$1"`, fixture(t, "codex-json", "fresh.jsonl")))
		spec.Output = agent.OutputCodexJSON
		res, err := newRunner(t).Run(t.Context(), spec, in)
		if err != nil {
			t.Fatal(err)
		}
		if want := (agent.Usage{InputTokens: 14, CacheReadTokens: 6, OutputTokens: 10, SessionTotal: true}); res.Usage != want {
			t.Errorf("usage %+v; want %+v", res.Usage, want)
		}
	})
	t.Run("failed turn", func(t *testing.T) {
		spec, in := turn(t, testagent.Script(t, `cat "$1"; exit 1`, fixture(t, "claude-json", "max_budget.json")))
		spec.Output = agent.OutputClaudeJSON
		res, err := newRunner(t).Run(t.Context(), spec, in)
		if !errors.Is(err, agent.ErrFailed) {
			t.Fatalf("err %v; want ErrFailed", err)
		}
		if res.Usage.CostUSD != 0.016656 || !res.Usage.MaxBudgetHit {
			t.Errorf("usage %+v of a turn stopped by --max-budget-usd; want its cost 0.016656 and MaxBudgetHit", res.Usage)
		}
	})
}

// A fresh turn's session is the one the agent reports; a resumed turn
// gets ResumeArgs with the session id, and keeps the id when its agent
// reports none.
func session(t *testing.T, newRunner func(*testing.T) agent.Runner) {
	t.Run("fresh", func(t *testing.T) {
		spec, in := turn(t, testagent.Script(t, `if [ $# -gt 1 ]; then echo "resumed?" >&2; exit 9; fi; cat "$1"`,
			fixture(t, "claude-json", "fresh.json")))
		spec.Output, spec.ResumeArgs = agent.OutputClaudeJSON, []string{"--resume", "{session}"}
		res, err := newRunner(t).Run(t.Context(), spec, in)
		if err != nil {
			t.Fatal(err)
		}
		if res.SessionID != "1a6d16db-3a04-4f86-a93e-729ab7b01495" {
			t.Errorf("session %q; want the one the agent reported", res.SessionID)
		}
	})
	t.Run("resumed", func(t *testing.T) {
		spec, in := turn(t, testagent.Script(t, `shift; echo "$*"`, "first"))
		spec.ResumeArgs = []string{"--resume", "{session}", "--then"}
		in.SessionID = "s-earlier"
		res, err := newRunner(t).Run(t.Context(), spec, in)
		if err != nil {
			t.Fatal(err)
		}
		if res.Reply != "--resume s-earlier --then" || res.SessionID != "s-earlier" {
			t.Errorf("reply %q, session %q; want the resume args with the session, and the session kept", res.Reply, res.SessionID)
		}
	})
}

// The agent sees the turn's SWITCHBOARD_* entries, SWITCHBOARD_TURN_ID
// from Input.TurnID, and the variables Spec.Env names; not the rest of
// this process's environment, SWITCHBOARD_* included.
func environment(t *testing.T, r agent.Runner) {
	t.Setenv(AllowedEnv, "yes")
	t.Setenv("RUNNERTEST_SECRET", "do-not-pass")
	t.Setenv("SWITCHBOARD_STRAY", "not-this-turns")
	spec, in := turn(t, testagent.Script(t, `env`))
	spec.Env = []string{AllowedEnv}
	res, err := r.Run(t.Context(), spec, in)
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(res.Reply, "\n")
	for _, want := range []string{"SWITCHBOARD_FOLDER=main", "SWITCHBOARD_TURN_ID=" + string(in.TurnID), AllowedEnv + "=yes"} {
		if !slices.Contains(env, want) {
			t.Errorf("the agent's environment lacks %s:\n%s", want, res.Reply)
		}
	}
	for _, bad := range []string{"RUNNERTEST_SECRET", "SWITCHBOARD_STRAY"} {
		if strings.Contains(res.Reply, bad) {
			t.Errorf("%s reached the agent:\n%s", bad, res.Reply)
		}
	}
	if n := strings.Count(res.Reply, "SWITCHBOARD_TURN_ID="); n != 1 {
		t.Errorf("SWITCHBOARD_TURN_ID appears %d times; want once", n)
	}
}
