package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrAgentFailed marks every error of RunAgent that is the agent's fault or the
// agent configuration's: it could not start, exited non-zero, was killed, timed out
// or printed output that does not fit agent.output. Shutdown (the caller's ctx
// ending) is not one of them.
var ErrAgentFailed = errors.New("agent turn failed")

const (
	defaultAgentMaxOutput = 1 << 20 // bytes of stdout kept when AgentSpec.MaxOutput is 0
	agentStderrTail       = 4 << 10 // bytes of stderr kept (the end)
	agentDetailMax        = 512     // bytes of stderr line or stdout quoted in an error
)

// These bound how long RunAgent can take beyond the agent's own run. Variables so
// that tests can shorten them.
var (
	// agentTermGrace is the time between SIGTERM and SIGKILL for an agent that
	// timed out or whose turn was cancelled.
	agentTermGrace = 2 * time.Second
	// agentDrainGrace is how long the output pipes are still read after the agent
	// exited and its process group was killed. Only a process that left the group
	// (setsid) can hold them open that long; its output is then abandoned.
	agentDrainGrace = time.Second
)

// AgentSpec is how to run the agent (from config agent.*).
type AgentSpec struct {
	Command    []string      // argv; argv[0] already resolved by the caller
	ResumeArgs []string      // appended when SessionID != ""; every "{session}" in them replaced by the id
	Output     string        // "text" (also "") | "claude-json" | "none"
	Timeout    time.Duration // whole-turn limit; 0 means none
	MaxOutput  int           // bytes of stdout kept (0 → 1 MiB); the rest is read and discarded so the child never blocks
	// Env names the gateway's environment variables passed to agents
	// besides the basic ones (PATH, HOME, LANG, ...): agent.env.
	Env []string
	// Sandbox confines agents; nil runs them as the gateway's user with
	// its view of the disk.
	Sandbox *Sandbox
}

// AgentRun is one turn's inputs.
type AgentRun struct {
	Dir       string   // working directory (the group folder)
	Env       []string // KEY=VALUE entries for this turn (SWITCHBOARD_*), added to the allowed part of the gateway's environment
	Socket    string   // the group's MCP socket, made visible inside the sandbox
	SessionID string
	Prompt    string // written to stdin, then stdin is closed
}

// AgentResult is what one turn produced. RunAgent fills it on failure too (except
// Reply, which is set only when the turn succeeded).
type AgentResult struct {
	Reply     string        // text: trimmed stdout; claude-json: the "result" field (trimmed); none: ""
	SessionID string        // claude-json: "session_id" when present; otherwise the input SessionID
	Duration  time.Duration // from start to the end of output
	ExitCode  int           // the agent's exit status; -1 if it did not start or died of a signal
	TimedOut  bool          // killed because spec.Timeout elapsed
	Truncated bool          // stdout exceeded MaxOutput
	Stderr    string        // last ≤ 4 KiB of stderr, for the failure record
	// Escaped counts the processes of an unsandboxed turn that had left
	// its process group (setsid, double fork) and were killed when it
	// ended; EscapedErr is why one of them could not be.
	Escaped    int
	EscapedErr error
}

// RunAgent runs one agent turn: spec.Command (plus ResumeArgs when run.SessionID is
// set) in run.Dir with run.Env added to the environment, the prompt on stdin. The
// agent runs in its own process group. When spec.Timeout elapses or ctx ends, the
// group gets SIGTERM and, agentTermGrace later, SIGKILL; once the agent's main
// process has exited, the group gets SIGKILL so that background children it left
// cannot outlive the turn or hold its pipes open. Without a sandbox, processes
// that left the group (setsid) are then found by the turn's SWITCHBOARD_TURN_ID
// and killed too; in the sandbox, its PID namespace ends with the agent.
//
// Errors wrap ErrAgentFailed, except when ctx ends first: then the error is
// "agent turn cancelled: " wrapping ctx.Err().
func RunAgent(ctx context.Context, spec AgentSpec, run AgentRun) (AgentResult, error) {
	res := AgentResult{SessionID: run.SessionID, ExitCode: -1}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("agent turn cancelled: %w", err)
	}
	if err := checkAgentRun(spec, run); err != nil {
		return res, err
	}
	turnCtx, cancel := ctx, context.CancelFunc(func() {})
	if spec.Timeout > 0 {
		turnCtx, cancel = context.WithTimeout(ctx, spec.Timeout)
	}
	defer cancel()

	started := time.Now()
	p, err := startAgent(turnCtx, spec, run)
	if err != nil {
		res.Duration = time.Since(started)
		switch {
		case ctx.Err() != nil:
			return res, fmt.Errorf("agent turn cancelled: %w", ctx.Err())
		case turnCtx.Err() != nil:
			res.TimedOut = true
			return res, timeoutError(spec.Timeout)
		}
		return res, err
	}
	waitErr := p.wait()
	res.Duration = time.Since(started)
	return p.result(ctx, spec, waitErr, res)
}

// checkAgentRun rejects what would fail in a confusing way at start.
func checkAgentRun(spec AgentSpec, run AgentRun) error {
	if len(spec.Command) == 0 || spec.Command[0] == "" {
		return agentFailed(nil, "agent command is empty; set agent.command")
	}
	switch spec.Output {
	case "", "text", "claude-json", "none":
	default:
		return agentFailed(nil, "unknown agent output %q; set agent.output to text, claude-json or none", spec.Output)
	}
	if run.Dir != "" {
		fi, err := os.Stat(run.Dir)
		if err != nil {
			return agentFailed(err, "agent working directory: %v; check that the group folder exists", err)
		}
		if !fi.IsDir() {
			return agentFailed(nil, "agent working directory %s is not a directory; check the group folder", run.Dir)
		}
	}
	return nil
}

// turnEntry is the SWITCHBOARD_TURN_ID entry of a turn's environment, or ""
// when it has none (or an empty one, which would mark nothing).
func turnEntry(env []string) string {
	for _, kv := range env {
		if id, ok := strings.CutPrefix(kv, "SWITCHBOARD_TURN_ID="); ok && id != "" {
			return kv
		}
	}
	return ""
}

// agentArgv is spec.Command plus, for a resumed session, spec.ResumeArgs with
// "{session}" replaced.
func agentArgv(spec AgentSpec, sessionID string) []string {
	argv := append([]string(nil), spec.Command...)
	if sessionID == "" {
		return argv
	}
	for _, a := range spec.ResumeArgs {
		argv = append(argv, strings.ReplaceAll(a, "{session}", sessionID))
	}
	return argv
}

// agentProc is one started agent and the pipes and goroutines around it.
type agentProc struct {
	cmd    *exec.Cmd
	stdout *cappedBuffer
	stderr *tailBuffer
	// Parent ends (stdinW, outR, errR) and child ends (stdinR, outW, errW).
	stdinR, stdinW, outR, outW, errR, errW *os.File
	readers, writer                        sync.WaitGroup
	interrupted                            atomic.Bool // cmd.Cancel signalled the group
	// turnEntry (SWITCHBOARD_TURN_ID=…) marks the turn's processes when no
	// sandbox's PID namespace ends them: those that left the group are
	// found by it and killed at the end.
	turnEntry  string
	escaped    int
	escapedErr error
}

func startAgent(ctx context.Context, spec AgentSpec, run AgentRun) (*agentProc, error) {
	argv := agentArgv(spec, run.SessionID)
	if spec.Sandbox != nil {
		argv = spec.Sandbox.wrap(argv, run.Dir, socketDirOf(run.Socket))
	}
	maxOut := spec.MaxOutput
	if maxOut <= 0 {
		maxOut = defaultAgentMaxOutput
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = run.Dir
	cmd.Env = agentEnv(spec.Env, run.Env)
	cmd.SysProcAttr = agentSysProcAttr()
	cmd.WaitDelay = agentTermGrace // after Cancel's SIGTERM, exec sends SIGKILL
	p := &agentProc{cmd: cmd, stdout: &cappedBuffer{max: maxOut}, stderr: &tailBuffer{max: agentStderrTail}}
	if spec.Sandbox == nil {
		p.turnEntry = turnEntry(run.Env)
	}
	cmd.Cancel = p.interrupt
	if err := p.openPipes(); err != nil {
		p.closePipes()
		return nil, agentFailed(err, "start agent %q: %v", argv[0], err)
	}
	if err := cmd.Start(); err != nil {
		p.closePipes()
		return nil, agentFailed(err, "start agent %q: %v; check agent.command", argv[0], err)
	}
	// The child has its ends now; holding them would keep our readers from EOF.
	p.stdinR.Close()
	p.outW.Close()
	p.errW.Close()
	p.readers.Go(func() { _, _ = io.Copy(p.stdout, p.outR) })
	p.readers.Go(func() { _, _ = io.Copy(p.stderr, p.errR) })
	p.writer.Go(func() {
		// An agent that does not read its prompt makes this fail with EPIPE
		// once it exits; that is its business.
		_, _ = io.WriteString(p.stdinW, run.Prompt)
		_ = p.stdinW.Close()
	})
	return p, nil
}

// openPipes makes the three pipes itself rather than letting exec copy through
// goroutines, so that Wait returns when the agent exits, not when every process
// holding a pipe does.
func (p *agentProc) openPipes() error {
	var err error
	if p.stdinR, p.stdinW, err = os.Pipe(); err != nil {
		return err
	}
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		return err
	}
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		return err
	}
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = p.stdinR, p.outW, p.errW
	return nil
}

// closePipes closes every end still open; closing a nil or closed *os.File is a
// harmless error.
func (p *agentProc) closePipes() {
	for _, f := range []*os.File{p.stdinR, p.stdinW, p.outR, p.outW, p.errR, p.errW} {
		_ = f.Close()
	}
}

// interrupt is cmd.Cancel: SIGTERM to the whole group. exec sends SIGKILL to the
// main process WaitDelay later, and wait then kills the rest of the group.
func (p *agentProc) interrupt() error {
	err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	p.interrupted.Store(true)
	return err
}

// wait waits for the agent's main process, kills what is left of its process
// group, and finishes reading its output within agentDrainGrace.
func (p *agentProc) wait() error {
	err := p.cmd.Wait()
	// The group id stays valid while any member lives, even after Wait reaped
	// the leader; ESRCH just means nothing was left.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	// Processes that left the group: before the drain, so that one holding
	// a pipe does not make the turn wait agentDrainGrace.
	p.escaped, p.escapedErr = killTurnLeftovers(p.turnEntry)

	done := make(chan struct{})
	go func() {
		p.readers.Wait()
		close(done)
	}()
	timer := time.NewTimer(agentDrainGrace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	}
	// Closing unblocks any Read or Write still pending on a pipe that a process
	// outside the group holds.
	p.closePipes()
	<-done
	p.writer.Wait()
	return err
}

// result fills res from the finished process and decides the turn's error.
func (p *agentProc) result(ctx context.Context, spec AgentSpec, waitErr error, res AgentResult) (AgentResult, error) {
	res.Truncated = p.stdout.truncated
	res.Escaped, res.EscapedErr = p.escaped, p.escapedErr
	res.Stderr = strings.ToValidUTF8(string(p.stderr.buf), "\uFFFD")
	if st := p.cmd.ProcessState; st != nil {
		res.ExitCode = st.ExitCode()
	}
	if p.interrupted.Load() {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("agent turn cancelled: %w", err)
		}
		res.TimedOut = true
		return res, timeoutError(spec.Timeout)
	}
	if waitErr != nil {
		return res, p.exitError(spec, waitErr)
	}
	switch spec.Output {
	case "none":
	case "claude-json":
		cr, err := parseClaudeJSON(p.stdout.buf, res.Truncated)
		if cr.SessionID != "" {
			res.SessionID = cr.SessionID
		}
		if err != nil {
			return res, err
		}
		res.Reply = strings.TrimSpace(*cr.Result)
	default:
		res.Reply = strings.TrimSpace(strings.ToValidUTF8(string(p.stdout.buf), "\uFFFD"))
	}
	return res, nil
}

// exitError describes an agent that exited non-zero or died of a signal, with the
// last line it wrote to stderr (or, for claude-json, the error it reported).
func (p *agentProc) exitError(spec AgentSpec, waitErr error) error {
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) {
		return agentFailed(waitErr, "wait for agent: %v", waitErr)
	}
	detail := lastLine(p.stderr.buf)
	if detail == "" && spec.Output == "claude-json" {
		if cr, _ := parseClaudeJSON(p.stdout.buf, false); cr.IsError || cr.Result != nil {
			detail = clip(claudeErrorText(cr))
		}
	}
	if detail == "" {
		detail = "(nothing on stderr)"
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return agentFailed(ee, "agent killed by signal %d (%s): %s", int(ws.Signal()), ws.Signal(), detail)
	}
	return agentFailed(ee, "agent exited with status %d: %s", ee.ExitCode(), detail)
}

func timeoutError(limit time.Duration) error {
	return agentFailed(nil, "agent timed out after %s; raise agent.timeout or make the agent faster", limit)
}

// claudeResult is the part of Claude Code's `--output-format json` object that
// the gateway uses.
type claudeResult struct {
	Type      string  `json:"type"`
	Subtype   string  `json:"subtype"`
	IsError   bool    `json:"is_error"`
	Result    *string `json:"result"`
	SessionID string  `json:"session_id"`
}

// parseClaudeJSON reads Claude Code's JSON output: one object, or log lines
// followed by the object on a line of its own, or (older versions, --verbose) an
// array of messages ending with the result. The returned claudeResult carries
// whatever was decoded, also on error.
func parseClaudeJSON(out []byte, truncated bool) (claudeResult, error) {
	var cr claudeResult
	raw, why := findClaudeObject(out)
	if raw != nil {
		if err := json.Unmarshal(raw, &cr); err != nil {
			why = err.Error()
		} else if cr.IsError {
			return cr, agentFailed(nil, "agent reported an error: %s", clip(claudeErrorText(cr)))
		} else if cr.Result == nil {
			why = `no string "result" field`
		}
	}
	if why == "" {
		return cr, nil
	}
	if truncated {
		why = fmt.Sprintf("%s (stdout was cut at %d bytes)", why, len(out))
	}
	return cr, agentFailed(nil, "agent output is not Claude Code JSON (output: claude-json): %s; stdout begins %q; run claude with --output-format json or set agent.output to text",
		why, clip(string(bytes.TrimSpace(out))))
}

// findClaudeObject returns the JSON object to decode, or why there is none.
func findClaudeObject(out []byte) (json.RawMessage, string) {
	out = bytes.TrimSpace(out)
	switch {
	case len(out) == 0:
		return nil, "stdout is empty"
	case out[0] == '{' && json.Valid(out):
		return out, ""
	case out[0] == '[' && json.Valid(out):
		var msgs []json.RawMessage
		if err := json.Unmarshal(out, &msgs); err != nil || len(msgs) == 0 {
			return nil, "a JSON array without messages"
		}
		for i := len(msgs) - 1; i >= 0; i-- {
			var m struct{ Type string }
			if json.Unmarshal(msgs[i], &m) == nil && m.Type == "result" {
				return msgs[i], ""
			}
		}
		return nil, `no message of type "result" in the JSON array`
	}
	lines := bytes.Split(out, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		line := bytes.TrimSpace(lines[i])
		if len(line) > 0 && line[0] == '{' && json.Valid(line) {
			return line, ""
		}
	}
	return nil, "no line holds a JSON object"
}

// claudeErrorText is what Claude Code said about its failure.
func claudeErrorText(cr claudeResult) string {
	if cr.Result != nil && strings.TrimSpace(*cr.Result) != "" {
		return strings.TrimSpace(*cr.Result)
	}
	if cr.Subtype != "" {
		return cr.Subtype
	}
	return "no details given"
}

// lastLine is the last non-blank line of b, valid UTF-8 and clipped.
func lastLine(b []byte) string {
	s := strings.TrimRight(strings.ToValidUTF8(string(b), "\uFFFD"), " \t\r\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return clip(strings.TrimSpace(s))
}

// clip keeps error messages readable when an agent prints a lot.
func clip(s string) string {
	if len(s) <= agentDetailMax {
		return s
	}
	return strings.ToValidUTF8(s[:agentDetailMax], "") + "…"
}

// agentError is an ErrAgentFailed whose message reads on its own
// ("agent exited with status 3: ...") and which still unwraps to its cause.
type agentError struct {
	msg   string
	cause error
}

func agentFailed(cause error, format string, args ...any) error {
	return &agentError{msg: fmt.Sprintf(format, args...), cause: cause}
}

func (e *agentError) Error() string { return e.msg }

func (e *agentError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrAgentFailed}
	}
	return []error{ErrAgentFailed, e.cause}
}

// cappedBuffer keeps the first max bytes written and counts the rest as
// truncation, never refusing a write (the agent must not block on a full pipe).
type cappedBuffer struct {
	buf       []byte
	max       int
	truncated bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := b.max - len(b.buf)
	if len(p) > room {
		b.truncated = true
	}
	if room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if n >= b.max {
		b.buf = append(b.buf[:0], p[n-b.max:]...)
		return n, nil
	}
	if over := len(b.buf) + n - b.max; over > 0 {
		b.buf = b.buf[:copy(b.buf, b.buf[over:])]
	}
	b.buf = append(b.buf, p...)
	return n, nil
}
