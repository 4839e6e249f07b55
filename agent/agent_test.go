package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"switchboard/internal/testagent"
	"switchboard/internal/testenv"
	"switchboard/internal/testwait"
)

// printingAgent is an agent whose stdout is exactly out.
func printingAgent(t *testing.T, out string) []string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "stdout")
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	return testagent.Script(t, `cat "$1"`, file)
}

// runAgent runs Run with a safety timeout so that a bug fails the test
// instead of hanging it.
func runAgent(t *testing.T, spec Spec, in Input) (Result, error) {
	t.Helper()
	if spec.Timeout == 0 {
		spec.Timeout = 5 * time.Second
	}
	return Run(context.Background(), spec, in)
}

// readPid waits for a pid file that a script wrote with `echo $! > tmp; mv`
// (the rename makes it appear whole).
func readPid(t *testing.T, path string) int {
	t.Helper()
	testwait.For(t, 2*time.Second, "the agent to write "+path, func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %s: %v", path, err)
	}
	return pid
}

// requireGone fails unless pid dies within 2 s (a zombie counts as dead: who
// reaps orphans depends on the machine's init).
func requireGone(t *testing.T, pid int) {
	t.Helper()
	if !testwait.Until(2*time.Second, func() bool { return processGone(pid) }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("process %d outlived the turn", pid)
	}
}

func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')') // the state follows the command name
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

const writeGrandchildPid = `sleep 1000 &
echo $! > "$1.tmp" && mv "$1.tmp" "$1"`

func TestRunText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, prompt, want string
	}{
		{"prompt arrives on stdin and stdin is closed", `cat`, "hello\nworld", "hello\nworld"},
		{"reply is trimmed", `printf '\n\n  hi there \n\n'`, "", "hi there"},
		{"invalid utf-8 is replaced", `printf 'ok \377\376 end'`, "", "ok \uFFFD end"},
		{"empty stdout is an empty reply", `true`, "x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := Spec{Command: testagent.Script(t, tt.body), Output: OutputText}
			res, err := runAgent(t, spec, Input{Prompt: tt.prompt, SessionID: "s-7"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Reply != tt.want {
				t.Errorf("Reply = %q, want %q", res.Reply, tt.want)
			}
			if res.SessionID != "s-7" || res.ExitCode != 0 || res.TimedOut || res.Truncated {
				t.Errorf("result = %+v, want session s-7, exit 0, not timed out or truncated", res)
			}
		})
	}
}

func TestRunDirAndEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := testagent.Script(t, `pwd -P; printf '%s|%s|%s|%s\n' "$SWITCHBOARD_FOLDER" "$SWITCHBOARD_TIER" "$HOME" "${PATH:+inherited}"`)
	res, err := runAgent(t, Spec{Command: cmd}, Input{
		Dir: dir,
		Env: []string{"SWITCHBOARD_FOLDER=main", "SWITCHBOARD_TIER=1", "HOME=/nonexistent-home"},
	})
	if err != nil {
		t.Fatal(err)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := realDir + "\nmain|1|/nonexistent-home|inherited"
	if res.Reply != want {
		t.Errorf("Reply = %q, want %q", res.Reply, want)
	}
}

func TestRunResumeArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, session, want string
	}{
		{"fresh session gets no resume args", "", "-p"},
		{"existing session gets them substituted", "s-1", "-p\n--resume\ns-1\n--tag=s-1:s-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := Spec{
				Command:    testagent.Script(t, `printf '%s\n' "$@"`, "-p"),
				ResumeArgs: []string{"--resume", "{session}", "--tag={session}:{session}"},
			}
			res, err := runAgent(t, spec, Input{SessionID: tt.session})
			if err != nil {
				t.Fatal(err)
			}
			if res.Reply != tt.want {
				t.Errorf("argv after the script = %q, want %q", res.Reply, tt.want)
			}
		})
	}
}

// outputCase is what an agent printed on stdout in a structured output
// mode, and what the turn must make of it.
type outputCase struct {
	name, stdout          string
	wantReply, wantSessID string
	wantErr               string // substring; "" means success
}

// runOutputCases runs each case as an agent printing its stdout with
// output, resuming the session "old".
func runOutputCases(t *testing.T, output Output, cases []outputCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := Spec{Command: printingAgent(t, tt.stdout), Output: output}
			res, err := runAgent(t, spec, Input{SessionID: "old"})
			if res.SessionID != tt.wantSessID {
				t.Errorf("SessionID = %q, want %q", res.SessionID, tt.wantSessID)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if res.Reply != tt.wantReply {
					t.Errorf("Reply = %q, want %q", res.Reply, tt.wantReply)
				}
				return
			}
			if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want ErrFailed containing %q", err, tt.wantErr)
			}
			if res.Reply != "" {
				t.Errorf("Reply = %q on a failed turn, want empty", res.Reply)
			}
		})
	}
}

// claudeJSONTests are stdouts of an agent run with output: claude-json.
var claudeJSONTests = []outputCase{
	{
		name:      "result object",
		stdout:    `{"type":"result","subtype":"success","is_error":false,"result":"  Hello Ann \n","session_id":"abc-123"}` + "\n",
		wantReply: "Hello Ann", wantSessID: "abc-123",
	},
	{
		name:      "log lines before the object",
		stdout:    "starting up\n{not json\n" + `{"type":"result","is_error":false,"result":"hi","session_id":"abc-9"}` + "\n",
		wantReply: "hi", wantSessID: "abc-9",
	},
	{
		name:      "array of messages ending with the result",
		stdout:    `[{"type":"system","session_id":"x"},{"type":"result","result":"from array","session_id":"arr-1"}]`,
		wantReply: "from array", wantSessID: "arr-1",
	},
	{
		name:      "no session id keeps the old one",
		stdout:    `{"result":"ok"}`,
		wantReply: "ok", wantSessID: "old",
	},
	{
		name:       "is_error",
		stdout:     `{"type":"result","subtype":"success","is_error":true,"result":"Credit balance is too low","session_id":"abc-5"}`,
		wantSessID: "abc-5",
		wantErr:    "agent reported an error: Credit balance is too low",
	},
	{
		name:       "is_error without result names the subtype",
		stdout:     `{"type":"result","subtype":"error_max_turns","is_error":true,"session_id":"abc-6"}`,
		wantSessID: "abc-6",
		wantErr:    "agent reported an error: error_max_turns",
	},
	{
		name:       "is_error with errors says why",
		stdout:     `{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":2,"session_id":"abc-7","errors":["Reached maximum number of turns (1)"]}`,
		wantSessID: "abc-7",
		wantErr:    "agent reported an error: error_max_turns: Reached maximum number of turns (1)",
	},
	{
		name:       "garbage",
		stdout:     "Hello, I am plain text\n",
		wantSessID: "old",
		wantErr:    `agent output is not Claude Code JSON (output: claude-json): no line holds a JSON object; stdout begins "Hello, I am plain text"`,
	},
	{
		name:       "result is not a string",
		stdout:     `{"result":42}`,
		wantSessID: "old",
		wantErr:    "agent output is not Claude Code JSON (output: claude-json): json: cannot unmarshal number",
	},
	{
		name:       "object without result",
		stdout:     `{"type":"system"}`,
		wantSessID: "old",
		wantErr:    `agent output is not Claude Code JSON (output: claude-json): no string "result" field`,
	},
	{
		name:       "empty stdout",
		stdout:     "",
		wantSessID: "old",
		wantErr:    "agent output is not Claude Code JSON (output: claude-json): stdout is empty",
	},
}

func TestRunClaudeJSON(t *testing.T) {
	t.Parallel()
	runOutputCases(t, OutputClaudeJSON, claudeJSONTests)
}

func TestRunClaudeJSONTruncated(t *testing.T) {
	t.Parallel()
	out := `{"type":"result","result":"` + strings.Repeat("a", 5000) + `","session_id":"s"}`
	spec := Spec{Command: printingAgent(t, out), Output: OutputClaudeJSON, MaxOutput: 1000}
	res, err := runAgent(t, spec, Input{})
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "stdout was cut at 1000 bytes") {
		t.Fatalf("err = %v, want a truncation hint", err)
	}
	if !res.Truncated {
		t.Error("Truncated = false, want true")
	}
}

func TestRunOutputNone(t *testing.T) {
	t.Parallel()
	spec := Spec{Command: testagent.Script(t, `echo "replied through MCP"`), Output: OutputNone}
	res, err := runAgent(t, spec, Input{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply != "" || res.SessionID != "s" {
		t.Errorf("result = %+v, want no reply and the session kept", res)
	}
}

func TestRunExitStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		output     Output
		wantCode   int
		wantErr    string
	}{
		{
			name:     "non-zero exit names the last stderr lines",
			body:     "echo 'loading config' >&2\necho 'bad config: missing key' >&2\necho partial\nexit 3",
			wantCode: 3,
			wantErr:  "agent exited with status 3: loading config ⏎ bad config: missing key",
		},
		{
			name:     "non-zero exit without stderr",
			body:     "exit 1",
			wantCode: 1,
			wantErr:  "agent exited with status 1: (nothing on stderr)",
		},
		{
			name:     "non-zero exit with the error on stdout",
			body:     "echo 'Invalid API key · Please run /login'; exit 1",
			wantCode: 1,
			wantErr:  "agent exited with status 1: (nothing on stderr); stdout ends: Invalid API key · Please run /login",
		},
		{
			name:     "claude-json mode, stdout not JSON",
			body:     "echo 'starting'; echo; echo 'Error: no login'; exit 2",
			output:   OutputClaudeJSON,
			wantCode: 2,
			wantErr:  "agent exited with status 2: (nothing on stderr); stdout ends: starting ⏎ Error: no login",
		},
		{
			name:     "claude-json error on stdout when stderr is empty",
			body:     `echo '{"type":"result","is_error":true,"result":"Invalid API key"}'; exit 1`,
			output:   OutputClaudeJSON,
			wantCode: 1,
			wantErr:  "agent exited with status 1: Invalid API key",
		},
		{
			name:     "killed by a signal",
			body:     "echo 'out of memory' >&2\nkill -9 $$",
			wantCode: -1,
			wantErr:  "agent killed by signal 9 (killed): out of memory",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := runAgent(t, Spec{Command: testagent.Script(t, tt.body), Output: tt.output}, Input{})
			if !errors.Is(err, ErrFailed) || err.Error() != tt.wantErr {
				t.Fatalf("err = %v, want ErrFailed %q", err, tt.wantErr)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Errorf("err does not unwrap to *exec.ExitError")
			}
			if res.ExitCode != tt.wantCode || res.Reply != "" || res.TimedOut || res.NotStarted {
				t.Errorf("result = %+v, want exit code %d, no reply, not timed out, started", res, tt.wantCode)
			}
		})
	}
}

func TestRunStderrTail(t *testing.T) {
	t.Parallel()
	body := `i=0; while [ $i -lt 400 ]; do echo "noise line $i with some padding to make it long" >&2; i=$((i+1)); done
echo 'the real reason' >&2; exit 2`
	res, err := runAgent(t, Spec{Command: testagent.Script(t, body)}, Input{})
	if err == nil || !strings.HasSuffix(err.Error(), " ⏎ the real reason") {
		t.Fatalf("err = %v, want the last stderr lines", err)
	}
	if len(res.Stderr) > 4096 || !strings.HasSuffix(res.Stderr, "the real reason\n") {
		t.Errorf("Stderr has %d bytes ending %q, want ≤ 4096 ending with the last line", len(res.Stderr), res.Stderr[max(0, len(res.Stderr)-40):])
	}
	if strings.Contains(res.Stderr, "noise line 0 ") {
		t.Error("Stderr kept the beginning, want only the tail")
	}
}

func TestRunStartErrors(t *testing.T) {
	t.Parallel()
	notExec := filepath.Join(t.TempDir(), "agent")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		spec    Spec
		run     Input
		wantErr string
	}{
		{
			name:    "command not found",
			spec:    Spec{Command: []string{"switchboard-no-such-agent"}},
			wantErr: `start agent "switchboard-no-such-agent": exec: "switchboard-no-such-agent": executable file not found in $PATH; check agent.command`,
		},
		{
			name:    "not executable",
			spec:    Spec{Command: []string{notExec}},
			wantErr: fmt.Sprintf(`start agent %q: fork/exec %s: permission denied; check agent.command`, notExec, notExec),
		},
		{
			name:    "empty command",
			spec:    Spec{},
			wantErr: "agent command is empty; set agent.command",
		},
		{
			name:    "unknown output",
			spec:    Spec{Command: []string{"/bin/true"}, Output: "json"},
			wantErr: `unknown agent output "json"; want text, claude-json, claude-stream, codex-json or none: set agent.output`,
		},
		{
			name:    "missing folder",
			spec:    Spec{Command: []string{"/bin/true"}},
			run:     Input{Dir: "/nonexistent/switchboard/main"},
			wantErr: "agent working directory: stat /nonexistent/switchboard/main: no such file or directory; check that the group folder exists",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := runAgent(t, tt.spec, tt.run)
			if !errors.Is(err, ErrFailed) || err.Error() != tt.wantErr {
				t.Fatalf("err = %v\nwant ErrFailed %q", err, tt.wantErr)
			}
			if res.ExitCode != -1 || !res.NotStarted {
				t.Errorf("ExitCode = %d, NotStarted = %v; want -1 and true for an agent that never ran", res.ExitCode, res.NotStarted)
			}
		})
	}
}

func TestRunTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	spec := Spec{Command: testagent.Script(t, writeGrandchildPid+"\nwait", pidFile), Timeout: 300 * time.Millisecond}
	start := time.Now()
	res, err := Run(context.Background(), spec, Input{})
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("Run took %v after a 300ms timeout", elapsed)
	}
	want := "agent timed out after 300ms; raise agent.timeout or make the agent faster"
	if !errors.Is(err, ErrFailed) || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if !res.TimedOut || res.Reply != "" {
		t.Errorf("result = %+v, want TimedOut and no reply", res)
	}
	requireGone(t, readPid(t, pidFile))
}

// An agent that ignores SIGTERM is killed after the grace period. Not parallel:
// it shortens termGrace.
func TestRunTimeoutIgnoringTerm(t *testing.T) {
	defer func(old time.Duration) { termGrace = old }(termGrace)
	termGrace = 200 * time.Millisecond
	pidFile := filepath.Join(t.TempDir(), "pid")
	body := "trap '' TERM\n" + writeGrandchildPid + "\nwhile :; do wait; done"
	spec := Spec{Command: testagent.Script(t, body, pidFile), Timeout: 200 * time.Millisecond}
	start := time.Now()
	res, err := Run(context.Background(), spec, Input{})
	if elapsed := time.Since(start); elapsed > 1500*time.Millisecond {
		t.Errorf("Run took %v, want about timeout + grace", elapsed)
	}
	if !errors.Is(err, ErrFailed) || !res.TimedOut {
		t.Fatalf("err = %v, TimedOut = %v; want a timeout", err, res.TimedOut)
	}
	requireGone(t, readPid(t, pidFile))
}

func TestRunBackgroundChildHoldingStdout(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	spec := Spec{Command: testagent.Script(t, writeGrandchildPid+"\necho done", pidFile)}
	start := time.Now()
	res, err := runAgent(t, spec, Input{})
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("Run took %v; the background child held it", elapsed)
	}
	if res.Reply != "done" {
		t.Errorf("Reply = %q, want %q", res.Reply, "done")
	}
	requireGone(t, readPid(t, pidFile))
}

// A child that leaves the process group cannot be killed with it, but it cannot
// keep the turn open past drainGrace either.
func TestRunEscapedChildHoldingStdout(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "setsid", "util-linux")
	pidFile := filepath.Join(t.TempDir(), "pid")
	body := `setsid sleep 1000 &
echo $! > "$1.tmp" && mv "$1.tmp" "$1"
echo done`
	start := time.Now()
	res, err := runAgent(t, Spec{Command: testagent.Script(t, body, pidFile)}, Input{})
	pid := readPid(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > drainGrace+time.Second {
		t.Errorf("Run took %v, want at most about %v", elapsed, drainGrace)
	}
	if res.Reply != "done" {
		t.Errorf("Reply = %q, want %q", res.Reply, "done")
	}
}

// Without a sandbox, processes that left the agent's process group (setsid,
// a double fork) are found by the turn's SWITCHBOARD_TURN_ID and killed when
// the turn ends, whether it exited, timed out or was cancelled; a process of
// another turn is left alone.
func TestRunKillsEscapedProcessesOfTheTurn(t *testing.T) {
	t.Parallel()
	testenv.Require(t, "setsid", "util-linux")
	// Both escapes write their pid; the double-forked one is orphaned at once.
	const escape = `setsid sh -c 'while :; do sleep 0.05; done' </dev/null >/dev/null 2>&1 &
echo $! > "$1.tmp" && mv "$1.tmp" "$1"
( sh -c 'echo $$ > "$1.tmp" && mv "$1.tmp" "$1"; exec sleep 1000' sh "$2" </dev/null >/dev/null 2>&1 & )
until [ -e "$1" ] && [ -e "$2" ]; do sleep 0.01; done`
	// Another turn's process, also marked, must survive this turn's cleanup.
	bystander := exec.Command("sleep", "1000")
	bystander.Env = append(os.Environ(), "SWITCHBOARD_TURN_ID=t-other-"+t.Name())
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bystander.Process.Kill(); _ = bystander.Wait() })
	t.Cleanup(func() { // runs first, after every subtest
		if processGone(bystander.Process.Pid) {
			t.Error("another turn's process was killed")
		}
	})
	for _, tc := range []struct{ name, body string }{
		{"exit", escape + "\necho done"},
		{"timeout", escape + "\nexec sleep 30"},
		{"escapees hold stdout", `setsid sh -c 'while :; do sleep 0.05; done' &
echo $! > "$1.tmp" && mv "$1.tmp" "$1"
( sh -c 'echo $$ > "$1.tmp" && mv "$1.tmp" "$1"; exec sleep 1000' sh "$2" & )
until [ -e "$1" ] && [ -e "$2" ]; do sleep 0.01; done
echo done`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			setsidPid, forkPid := filepath.Join(dir, "setsid"), filepath.Join(dir, "fork")
			// The timeout must leave the escapes time to start and write
			// their pids on a loaded machine (1 s did not, under make test
			// beside other builds).
			spec := Spec{Command: testagent.Script(t, tc.body, setsidPid, forkPid), Timeout: 5 * time.Second}
			start := time.Now()
			res, err := Run(context.Background(), spec, Input{TurnID: TurnID("t-" + strings.ReplaceAll(t.Name(), "/", "-"))})
			elapsed := time.Since(start)
			if tc.name == "timeout" {
				if !res.TimedOut {
					t.Errorf("err = %v; want a timeout", err)
				}
			} else if err != nil || res.Reply != "done" {
				t.Errorf("reply %q, err %v", res.Reply, err)
			}
			if tc.name == "escapees hold stdout" && elapsed >= drainGrace {
				t.Errorf("Run took %v: it waited for the escaped processes' pipe instead of ending them", elapsed)
			}
			requireGone(t, readPid(t, setsidPid))
			requireGone(t, readPid(t, forkPid))
			if res.Escaped == 0 || res.EscapedErr != nil {
				t.Errorf("Escaped = %d (%v); want the escapes counted", res.Escaped, res.EscapedErr)
			}
		})
	}
}

// Not parallel: it measures allocation.
func TestRunStdoutFloodIsCapped(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	spec := Spec{Command: testagent.Script(t, `yes | head -c 50000000`), MaxOutput: 1000}
	res, err := runAgent(t, spec, Input{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || len(res.Reply) > 1000 || !strings.HasPrefix(res.Reply, "y\ny\n") {
		t.Errorf("Truncated = %v, reply of %d bytes; want truncated to ≤ 1000 bytes of y lines", res.Truncated, len(res.Reply))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("allocated %d bytes reading a 50 MB flood capped at 1000", alloc)
	}
}

func TestRunEndlessStdoutTimesOut(t *testing.T) {
	t.Parallel()
	spec := Spec{Command: []string{"yes"}, Timeout: 500 * time.Millisecond}
	start := time.Now()
	res, err := Run(context.Background(), spec, Input{})
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("Run took %v after a 500ms timeout", elapsed)
	}
	if !errors.Is(err, ErrFailed) || !res.TimedOut || !res.Truncated {
		t.Errorf("err = %v, result = %+v; want a truncated timeout", err, res)
	}
}

func TestRunIgnoresStdinWithLargePrompt(t *testing.T) {
	t.Parallel()
	// The agent fills its stdout pipe before it exits and never reads stdin: a
	// gateway that wrote the whole prompt before reading would deadlock with it.
	prompt := strings.Repeat("p", 1<<20)
	spec := Spec{Command: testagent.Script(t, `yes | head -c 300000; echo ok`), Timeout: 2 * time.Second}
	res, err := Run(context.Background(), spec, Input{Prompt: prompt})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Reply) != 300002 || !strings.HasSuffix(res.Reply, "\nok") {
		t.Errorf("Reply has %d bytes ending %q, want 300002 ending in ok", len(res.Reply), res.Reply[max(0, len(res.Reply)-10):])
	}
}

func TestRunLargePromptIsReadWhole(t *testing.T) {
	t.Parallel()
	prompt := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	res, err := runAgent(t, Spec{Command: testagent.Script(t, `wc -c`)}, Input{Prompt: prompt})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply != strconv.Itoa(len(prompt)) {
		t.Errorf("agent read %s bytes, want %d", res.Reply, len(prompt))
	}
}

func TestRunCancel(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	spec := Spec{Command: testagent.Script(t, writeGrandchildPid+"\nwait", pidFile), Timeout: 5 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pidc := make(chan int, 1)
	go func() {
		pidc <- readPidQuiet(pidFile)
		cancel()
	}()
	start := time.Now()
	res, err := Run(ctx, spec, Input{})
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("Run took %v after cancellation", elapsed)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCancelled) || errors.Is(err, ErrFailed) || !strings.HasPrefix(err.Error(), "agent turn cancelled: ") {
		t.Fatalf("err = %v, want agent turn cancelled wrapping context.Canceled only", err)
	}
	if res.TimedOut {
		t.Error("TimedOut = true for a cancelled turn")
	}
	pid := <-pidc
	if pid == 0 {
		t.Fatal("agent never wrote its grandchild's pid")
	}
	requireGone(t, pid)
}

// readPidQuiet is readPid for a goroutine: 0 when the file never appears.
func readPidQuiet(path string) int {
	var b []byte
	if !testwait.Until(2*time.Second, func() bool {
		var err error
		b, err = os.ReadFile(path)
		return err == nil
	}) {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func TestRunCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	marker := filepath.Join(t.TempDir(), "ran")
	res, err := Run(ctx, Spec{Command: testagent.Script(t, `touch "$1"`, marker)}, Input{})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCancelled) || errors.Is(err, ErrFailed) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if _, statErr := os.Stat(marker); statErr == nil {
		t.Error("agent ran although the turn was cancelled before it started")
	}
	if res.ExitCode != -1 {
		t.Errorf("ExitCode = %d, want -1", res.ExitCode)
	}
}

// BenchmarkAgentStart measures a whole trivial turn (start, prompt, exit,
// output) without and with the bubblewrap sandbox: the difference is what
// the sandbox adds to every turn's start.
func BenchmarkAgentStart(b *testing.B) {
	data := b.TempDir()
	dir := filepath.Join(data, "groups", "main") // as in a real data directory
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	bwrap, err := exec.LookPath("bwrap")
	for _, tc := range []struct {
		name string
		sb   *Sandbox
	}{
		{"none", nil},
		{"bwrap", &Sandbox{Bwrap: bwrap, DataDir: data, Network: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if tc.sb != nil && err != nil {
				b.Fatal("bubblewrap is not installed (make test installs it)")
			}
			spec := Spec{Command: []string{"/bin/sh", "-c", "cat >/dev/null; echo ok"}, Timeout: 10 * time.Second, Sandbox: tc.sb}
			for b.Loop() {
				// The turn id makes the unsandboxed run pay for its scan
				// for escaped processes, as a real turn does.
				res, err := Run(context.Background(), spec, Input{Dir: dir, Prompt: "hello", TurnID: "t-bench"})
				if err != nil || res.Reply != "ok" {
					b.Fatalf("turn: %q, %v", res.Reply, err)
				}
			}
		})
	}
}

// BenchmarkTurnLeftoverScan is what an unsandboxed turn pays at its end to
// look for processes that left its group: one /proc scan (the figure grows
// with the number of processes on the machine).
func BenchmarkTurnLeftoverScan(b *testing.B) {
	for b.Loop() {
		if n, err := killTurnLeftovers("SWITCHBOARD_TURN_ID=t-bench-nothing"); n != 0 || err != nil {
			b.Fatal(n, err)
		}
	}
}

func TestParseOutput(t *testing.T) {
	for _, s := range []string{"text", "claude-json", "claude-stream", "codex-json", "none"} {
		if o, err := ParseOutput(s); err != nil || string(o) != s {
			t.Errorf("ParseOutput(%q) = %q, %v; want it back", s, o, err)
		}
	}
	for _, s := range []string{"", "json", "Text"} {
		if _, err := ParseOutput(s); !errors.Is(err, ErrUnknownOutput) {
			t.Errorf("ParseOutput(%q): err = %v, want ErrUnknownOutput", s, err)
		}
	}
}

// A long stdout is quoted by its end, where a CLI prints its error.
func TestRunStdoutTailInError(t *testing.T) {
	t.Parallel()
	body := `i=0; while [ $i -lt 100 ]; do echo "progress line $i"; i=$((i+1)); done; echo 'Error: quota exceeded'; exit 4`
	_, err := runAgent(t, Spec{Command: testagent.Script(t, body)}, Input{})
	msg := errString(err)
	prefix := "agent exited with status 4: (nothing on stderr); stdout ends: …"
	if !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, "progress line 99 ⏎ Error: quota exceeded") {
		t.Fatalf("err = %q; want %q… ending with the last lines", msg, prefix)
	}
	if strings.Contains(msg, "progress line 1 ") || len(msg) > len(prefix)+detailMax || strings.HasPrefix(msg, prefix+"ogress") {
		t.Errorf("err quotes %d bytes (want ≤ %d, from the start of a line): %q", len(msg)-len(prefix), detailMax, msg)
	}
}
