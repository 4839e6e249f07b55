// Package agent runs one agent turn: a subprocess in its own process group
// (optionally confined by bubblewrap), the prompt on stdin, its output read
// as text, as Claude Code JSON or stream-json or as Codex JSON events (and,
// while it runs, as Events for a live reply), and every process it started
// ended with the turn. It knows nothing of chats, folders or the store.
package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	defaultMaxOutput = 1 << 20 // bytes of stdout kept when Spec.MaxOutput is 0
	stderrTail       = 4 << 10 // bytes of stderr kept (the end)
	detailMax        = 512     // bytes of stderr line or stdout quoted in an error
)

// These bound how long Run can take beyond the agent's own run. Variables so
// that tests can shorten them.
var (
	// termGrace is the time between SIGTERM and SIGKILL for an agent that
	// timed out or whose turn was cancelled.
	termGrace = 2 * time.Second
	// drainGrace is how long the output pipes are still read after the agent
	// exited and its process group was killed. Only a process that left the group
	// (setsid) can hold them open that long; its output is then abandoned.
	drainGrace = time.Second
	// stopGrace is the time between SIGTERM and SIGKILL to the process
	// group of a turn a person stopped (ErrStopped): the contract is that
	// its processes are gone within 2 s.
	stopGrace = time.Second
)

// Output is how an agent's stdout is read (config agent.output).
type Output string

const (
	// OutputText: the trimmed stdout is the reply. The zero Output means it too.
	OutputText Output = "text"
	// OutputClaudeJSON: stdout is Claude Code's --output-format json; the
	// reply is its "result", the session its "session_id".
	OutputClaudeJSON Output = "claude-json"
	// OutputNone: stdout is ignored; the agent replies through MCP tools.
	OutputNone Output = "none"
)

// ParseOutput returns the Output named s (exactly text, claude-json,
// claude-stream, codex-json or none), or an error wrapping ErrUnknownOutput.

// Claude reports whether o is one of Claude Code's output formats
// (claude-json, claude-stream): the agent is Claude Code, with its
// --max-budget-usd, its sessions and its error messages.
func (o Output) Claude() bool { return o == OutputClaudeJSON || o == OutputClaudeStream }

func ParseOutput(s string) (Output, error) {
	switch o := Output(s); o {
	case OutputText, OutputClaudeJSON, OutputClaudeStream, OutputCodexJSON, OutputNone:
		return o, nil
	}
	return "", fmt.Errorf("%w %q; want %s", ErrUnknownOutput, s, OutputNames)
}

// OutputNames lists the valid outputs, for error messages.
const OutputNames = "text, claude-json, claude-stream, codex-json or none"

// Spec is how to run the agent (from config agent.*).
type Spec struct {
	Command    []string      // argv; argv[0] already resolved by the caller
	ResumeArgs []string      // appended when SessionID != ""; every "{session}" in them replaced by the id
	Output     Output        // "" means OutputText
	Timeout    time.Duration // whole-turn limit; 0 means none
	MaxOutput  int           // bytes of stdout kept (0 → 1 MiB); the rest is read and discarded so the child never blocks
	// Env names the gateway's environment variables passed to agents
	// besides the basic ones (PATH, HOME, LANG, ...): agent.env.
	Env []string
	// Sandbox confines agents; nil runs them as the gateway's user with
	// its view of the disk.
	Sandbox *Sandbox
	// Input is how the agent takes its input (agent.input): "" and
	// InputPrompt write the prompt and close stdin; InputStreamJSON
	// (output claude-stream only) writes it as a user message and keeps
	// stdin open for Input.Steer until the first result.
	Input InputFormat
}

// Input is one turn's inputs.
type Input struct {
	// TurnID names the turn: the agent gets it as SWITCHBOARD_TURN_ID, and
	// without a sandbox the turn's processes that left its process group
	// are found by it at the end. A remote runner sends it as the job's id.
	TurnID TurnID
	Dir    string // working directory (the group folder)
	// At is where the agent sees Dir inside the sandbox, when not Dir
	// itself: a worker binds its copy of a group folder at the gateway's
	// path. Without a sandbox it is ignored (the agent runs in Dir).
	At        string
	Env       []string // KEY=VALUE entries for this turn (SWITCHBOARD_* but the turn id), added to the allowed part of the gateway's environment
	Socket    string   // the group's MCP socket, made visible inside the sandbox
	SessionID string
	Prompt    string // written to stdin, then stdin is closed
	// OnEvent, when set, receives the turn's output as Events while the
	// agent prints it (text: each stdout line; claude-stream and
	// codex-json: their event streams; none: nothing), in order and never
	// two at once: from the goroutine that reads stdout, and a text turn's
	// result event from Run's after stdout closed. It must return quickly:
	// while it runs, stdout is not read and the agent may block writing.
	// Events come in addition to the Result, which they do not change.
	OnEvent func(Event)
	// Steer, with Spec.Input InputStreamJSON, takes messages into the
	// running turn (Steering.Send); nil: none. Other runs ignore it (its
	// Send reports false).
	Steer *Steering
}

// Result is what one turn produced. Run fills it on failure too (except
// Reply, which is set only when the turn succeeded).
type Result struct {
	Reply string // text: trimmed stdout; claude-json, claude-stream: the "result" field (trimmed); codex-json: the last agent_message (trimmed); none: ""
	// Replies, for claude-stream, are the texts of every result event that
	// was not an error, in order (with stream-json input one turn may
	// answer several times); Reply is the last.
	Replies   []string
	SessionID string        // claude-json, claude-stream: "session_id", codex-json: thread.started's thread_id, when present; otherwise the input SessionID
	Duration  time.Duration // from start to the end of output
	ExitCode  int           // the agent's exit status; -1 if it did not start or died of a signal
	// NotStarted: the agent's program never ran: the turn's checks failed,
	// it could not be executed (missing, not executable), or the sandbox
	// could not be set up or exec it (bwrap's own error, exit status 1).
	NotStarted bool
	TimedOut   bool   // killed because spec.Timeout elapsed
	Truncated  bool   // stdout exceeded MaxOutput
	Stderr     string // last ≤ 4 KiB of stderr, for the failure record
	// Escaped counts the processes of an unsandboxed turn that had left
	// its process group (setsid, double fork) and were killed when it
	// ended; EscapedErr is why one of them could not be.
	Escaped    int
	EscapedErr error
	// Usage is what the agent reported the turn cost (usage.go), failed
	// turns included.
	Usage Usage
	// Steered, for a turn that ran elsewhere and is read back by Await
	// (Reattacher), lists the ids (the gateway's message seqs) of the
	// steering messages its agent took, as Steering.Took would have said
	// had Run taken them: a gateway that did not send them (it restarted)
	// learns it here. Run leaves it empty (Input.Steer says it).
	Steered []int64
}

// Run runs one agent turn: spec.Command (plus ResumeArgs when in.SessionID is
// set) in in.Dir with in.Env and SWITCHBOARD_TURN_ID (in.TurnID) added to
// the environment, the prompt on stdin. The
// agent runs in its own process group. When spec.Timeout elapses or ctx ends, the
// group gets SIGTERM and, termGrace later, SIGKILL; once the agent's main
// process has exited, the group gets SIGKILL so that background children it left
// cannot outlive the turn or hold its pipes open. Without a sandbox, processes
// that left the group (setsid) are then found by the turn's SWITCHBOARD_TURN_ID
// and killed too; in the sandbox, its PID namespace ends with the agent.
//
// Errors wrap ErrFailed, except when ctx ends first: then the error wraps
// ErrCancelled and ctx.Err() (Cancelled), and also ErrStopped when ctx was
// cancelled with that cause (Ended); a stopped turn's Result has the usage
// and session its output reported so far.
func Run(ctx context.Context, spec Spec, in Input) (Result, error) {
	res := Result{SessionID: in.SessionID, ExitCode: -1}
	if ctx.Err() != nil {
		return res, Ended(ctx)
	}
	if err := check(spec, in); err != nil {
		res.NotStarted = true
		return res, err
	}
	turnCtx, cancel := ctx, context.CancelFunc(func() {})
	if spec.Timeout > 0 {
		turnCtx, cancel = context.WithTimeout(ctx, spec.Timeout)
	}
	defer cancel()

	started := time.Now()
	p, err := start(turnCtx, spec, in)
	if err != nil {
		res.Duration = time.Since(started)
		switch {
		case ctx.Err() != nil:
			return res, Ended(ctx)
		case turnCtx.Err() != nil:
			res.TimedOut = true
			return res, timeoutError(spec.Timeout)
		}
		res.NotStarted = true
		return res, err
	}
	waitErr := p.wait()
	res.Duration = time.Since(started)
	return p.result(ctx, spec, waitErr, res)
}

// check rejects what would fail in a confusing way at start.
func check(spec Spec, in Input) error {
	if len(spec.Command) == 0 || spec.Command[0] == "" {
		return failed(nil, "agent command is empty; set agent.command")
	}
	if spec.Output != "" {
		if _, err := ParseOutput(string(spec.Output)); err != nil {
			return failed(err, "%v: set agent.output", err)
		}
	}
	if in.Dir != "" {
		fi, err := os.Stat(in.Dir)
		if err != nil {
			return failed(err, "agent working directory: %v; check that the group folder exists", err)
		}
		if !fi.IsDir() {
			return failed(nil, "agent working directory %s is not a directory; check the group folder", in.Dir)
		}
	}
	return nil
}

// Steers reports whether a turn of s takes messages while it runs: the
// prompt on stdin as stream-json, and Claude Code's stream to tell each
// answer's end (agent.input: stream-json with agent.output: claude-stream).
func (s Spec) Steers() bool { return s.Input == InputStreamJSON && s.Output == OutputClaudeStream }

// ResumeNamesSession reports whether ResumeArgs hand the session id to the
// agent ("{session}"). Only then must the id be one the agent reported;
// resume args without it (Codex's `resume --last -`) let the agent find
// its own session.
func (s Spec) ResumeNamesSession() bool {
	return slices.ContainsFunc(s.ResumeArgs, func(a string) bool { return strings.Contains(a, "{session}") })
}

// argv is spec.Command plus, for a resumed session, spec.ResumeArgs with
// "{session}" replaced.
func argv(spec Spec, sessionID string) []string {
	argv := append([]string(nil), spec.Command...)
	if sessionID == "" {
		return argv
	}
	for _, a := range spec.ResumeArgs {
		argv = append(argv, strings.ReplaceAll(a, "{session}", sessionID))
	}
	return argv
}

// turnEnv is the turn's own environment: in.Env, then SWITCHBOARD_TURN_ID
// from in.TurnID (the later entry wins should in.Env name it too).
func turnEnv(in Input) []string {
	if e := in.TurnID.envEntry(); e != "" {
		return append(in.Env[:len(in.Env):len(in.Env)], e)
	}
	return in.Env
}

// proc is one started agent and the pipes and goroutines around it.
type proc struct {
	cmd    *exec.Cmd
	stdout *cappedBuffer
	stderr *tailBuffer
	// Parent ends (stdinW, outR, errR) and child ends (stdinR, outW, errW).
	stdinR, stdinW, outR, outW, errR, errW *os.File
	readers, writer                        sync.WaitGroup
	interrupted                            atomic.Bool // cmd.Cancel signalled the group
	stopKill                               atomic.Pointer[time.Timer]
	// turnEntry (SWITCHBOARD_TURN_ID=…) marks the turn's processes where no
	// sandbox's PID namespace ends them: those that left the group are
	// found by it and killed at the end.
	turnEntry  string
	escaped    int
	escapedErr error
	// lines parses stdout as it comes (for Input.OnEvent, and always for
	// claude-stream, whose Result is its last result event: claude).
	lines   *lineWriter
	claude  *claudeStream
	codex   *codexStream
	onEvent func(Event)
	// steer is the stream-json input (Spec.Input InputStreamJSON): stdin
	// is written through it and closed at the first result.
	steer *Steering
}

func start(ctx context.Context, spec Spec, in Input) (*proc, error) {
	args := argv(spec, in.SessionID)
	var bound []*os.File // the folder and socket bwrap binds (openBound)
	if spec.Sandbox != nil {
		var err error
		if bound, err = spec.Sandbox.openBound(in.Dir, in.Socket); err != nil {
			return nil, failed(err, "sandbox: %v", err)
		}
		args = spec.Sandbox.wrap(args, in.Dir, in.At, in.Socket, bound)
	}
	defer closeAll(bound) // bwrap has its own copies (fds 3 and 4)
	maxOut := spec.MaxOutput
	if maxOut <= 0 {
		maxOut = defaultMaxOutput
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = in.Dir
	if spec.Sandbox != nil && spec.Sandbox.BindFD {
		cmd.ExtraFiles = bound
	}
	cmd.Env = environ(spec.Env, turnEnv(in))
	cmd.SysProcAttr = sysProcAttr(spec.Sandbox != nil)
	cmd.WaitDelay = termGrace // after Cancel's SIGTERM, exec sends SIGKILL
	p := &proc{cmd: cmd, stdout: &cappedBuffer{max: maxOut}, stderr: &tailBuffer{max: stderrTail}}
	// Sandboxed too: where bwrap gets no PID namespace of its own (see
	// sysProcAttr), an inner bwrap whose outer one died during the setup
	// has left the group and is found only by this.
	p.turnEntry = in.TurnID.envEntry()
	cmd.Cancel = func() error { return p.interrupt(ctx) }
	if spec.Steers() {
		p.steer = in.Steer
		if p.steer == nil {
			p.steer = NewSteering()
		}
	}
	p.parseLines(spec, in, maxOut)
	if err := p.openPipes(); err != nil {
		p.closePipes()
		return nil, failed(err, "start agent %q: %v", args[0], err)
	}
	if err := cmd.Start(); err != nil {
		p.closePipes()
		return nil, failed(err, "start agent %q: %v; check agent.command", args[0], err)
	}
	// The child has its ends now; holding them would keep our readers from EOF.
	p.stdinR.Close()
	p.outW.Close()
	p.errW.Close()
	p.readers.Go(func() {
		if p.lines == nil {
			_, _ = io.Copy(p.stdout, p.outR)
			return
		}
		_, _ = io.Copy(io.MultiWriter(p.stdout, p.lines), p.outR)
		p.lines.close()
	})
	p.readers.Go(func() { _, _ = io.Copy(p.stderr, p.errR) })
	if p.steer != nil {
		p.writer.Go(func() { p.steer.open(p.stdinW, in.Prompt) })
		return p, nil
	}
	p.writer.Go(func() {
		// An agent that does not read its prompt makes this fail with EPIPE
		// once it exits; that is its business.
		_, _ = io.WriteString(p.stdinW, in.Prompt)
		_ = p.stdinW.Close()
	})
	return p, nil
}

// parseLines sets up the parsing of stdout as it comes: for in.OnEvent's
// events, and for the Result of claude-stream and codex-json, which thus
// read every line, not only the stdout kept (MaxOutput: a Codex turn's
// command output is in its events). Lines are bounded by maxLine.
func (p *proc) parseLines(spec Spec, in Input, maxLine int) {
	if in.OnEvent == nil && spec.Output != OutputClaudeStream && spec.Output != OutputCodexJSON {
		return
	}
	lp := eventParser(spec.Output, in.OnEvent, envSecrets(spec.Env))
	if lp == nil {
		return
	}
	p.lines, p.onEvent = &lineWriter{p: lp, max: maxLine}, in.OnEvent
	p.claude, _ = lp.(*claudeStream)
	p.codex, _ = lp.(*codexStream)
	if p.claude != nil && p.steer != nil {
		p.claude.afterResult = p.steer.close // every input so far precedes the result
	}
}

// openPipes makes the three pipes itself rather than letting exec copy through
// goroutines, so that Wait returns when the agent exits, not when every process
// holding a pipe does.
func (p *proc) openPipes() error {
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
func (p *proc) closePipes() {
	for _, f := range []*os.File{p.stdinR, p.stdinW, p.outR, p.outW, p.errR, p.errW} {
		_ = f.Close()
	}
}

// interrupt is cmd.Cancel: SIGTERM to the whole group. exec sends SIGKILL to the
// main process WaitDelay later, and wait then kills the rest of the group.
// A stopped turn (ctx's cause ErrStopped) has its whole group killed
// stopGrace later: a person waits for it.
func (p *proc) interrupt(ctx context.Context) error {
	pid := p.cmd.Process.Pid
	err := syscall.Kill(-pid, termSignal(p.cmd.SysProcAttr))
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	p.interrupted.Store(true)
	if StopRequested(ctx) {
		// The group id stays valid while any member lives; once all are
		// gone it may be reused only after the leader is reaped, which
		// wait's own SIGKILL to the group precedes anyway.
		kill := time.AfterFunc(stopGrace, func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
		p.stopKill.Store(kill)
	}
	return err
}

// wait waits for the agent's main process, kills what is left of its process
// group, and finishes reading its output within drainGrace.
func (p *proc) wait() error {
	err := p.cmd.Wait()
	if t := p.stopKill.Load(); t != nil {
		t.Stop()
	}
	if p.steer != nil {
		p.steer.close()
	}
	// The group id stays valid while any member lives, even after Wait reaped
	// the leader; ESRCH just means nothing was left.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	// Processes that left the group: before the drain, so that one holding
	// a pipe does not make the turn wait drainGrace.
	p.escaped, p.escapedErr = killTurnLeftovers(p.turnEntry)

	done := make(chan struct{})
	go func() {
		p.readers.Wait()
		close(done)
	}()
	timer := time.NewTimer(drainGrace)
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
func (p *proc) result(ctx context.Context, spec Spec, waitErr error, res Result) (Result, error) {
	res.Truncated = p.stdout.truncated
	res.Escaped, res.EscapedErr = p.escaped, p.escapedErr
	res.Stderr = strings.ToValidUTF8(string(p.stderr.buf), "\uFFFD")
	if st := p.cmd.ProcessState; st != nil {
		res.ExitCode = st.ExitCode()
	}
	if p.interrupted.Load() {
		if StopRequested(ctx) {
			// What the agent reported before it was stopped is still
			// spent, and its session (resumed by the next turn) named.
			res.Usage = p.usage(spec.Output)
			if p.claude != nil && p.claude.sessionID != "" {
				res.SessionID = p.claude.sessionID
			}
			return res, Ended(ctx)
		}
		if ctx.Err() != nil {
			return res, Cancelled(ctx.Err())
		}
		res.TimedOut = true
		return res, timeoutError(spec.Timeout)
	}
	res.Usage = p.usage(spec.Output)
	if waitErr != nil {
		res.NotStarted = spec.Sandbox != nil && res.ExitCode == 1 && bwrapError(p.stderr.buf)
		return res, p.exitError(spec, waitErr, res.NotStarted)
	}
	switch spec.Output {
	case OutputNone:
	case OutputClaudeJSON, OutputClaudeStream:
		cr, err := p.claudeOutcome(spec.Output, res.Truncated)
		if cr.SessionID != "" {
			res.SessionID = cr.SessionID
		}
		if err != nil {
			return res, err
		}
		res.Reply = strings.TrimSpace(*cr.Result)
		if p.claude != nil {
			res.Replies = p.claude.replies
		}
	case OutputCodexJSON:
		cr, err := p.codexOutcome(res.Truncated)
		if cr.ThreadID != "" {
			res.SessionID = cr.ThreadID
		}
		if err != nil {
			return res, err
		}
		res.Reply = strings.TrimSpace(cr.Reply)
	default:
		res.Reply, _ = textReply(p.stdout.buf)
		if p.onEvent != nil {
			p.onEvent(Event{Kind: EventResult, Text: res.Reply, SessionID: res.SessionID, Usage: res.Usage})
		}
	}
	return res, nil
}

// claudeOutcome is Claude Code's result object: claude-json's stdout,
// claude-stream's last result event.
func (p *proc) claudeOutcome(o Output, truncated bool) (claudeResult, error) {
	if o == OutputClaudeStream {
		return p.claude.outcome(p.stdout.buf, truncated)
	}
	return parseClaudeJSON(p.stdout.buf, truncated)
}

// codexOutcome is a codex-json run's outcome, from every event line read.
func (p *proc) codexOutcome(truncated bool) (codexRun, error) {
	r := p.codex.run
	r.Failure = r.failure()
	return codexOutcome(r, p.stdout.buf, truncated)
}

// usage is what the agent's output reported the turn cost.
func (p *proc) usage(o Output) Usage {
	switch {
	case o == OutputClaudeStream:
		return parseClaudeUsage(p.claude.resultLine)
	case o == OutputCodexJSON && p.codex != nil:
		return p.codex.run.Usage.usage()
	}
	return stdoutUsage(o, p.stdout.buf)
}

// exitError describes an agent that exited non-zero or died of a signal, with the
// last few lines it wrote to stderr (stderrDetail; or, for claude-json and claude-stream, the error it reported,
// or else the end of its stdout: many CLIs print their errors there).
// notStarted: bwrap itself failed, before the agent ran.
func (p *proc) exitError(spec Spec, waitErr error, notStarted bool) error {
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) {
		return failed(waitErr, "wait for agent: %v", waitErr)
	}
	if notStarted {
		return failed(ee, "agent could not start in the sandbox: %s; check agent.command and agent.binds", lastLine(p.stderr.buf))
	}
	secrets := envSecrets(spec.Env)
	detail := stderrDetail(p.stderr.buf, secrets)
	if spec.Output == OutputCodexJSON {
		if d := codexFailureDetail(p.stdout.buf, p.stderr.buf); d != "" {
			detail = d
		}
	}
	if detail == "" && spec.Output.Claude() {
		if cr, _ := p.claudeOutcome(spec.Output, false); cr.IsError || cr.Result != nil {
			detail = clip(claudeErrorText(cr))
		}
	}
	if detail == "" {
		detail = "(nothing on stderr)"
		if tail := tailText(p.stdout.buf); tail != "" {
			detail = "(nothing on stderr); stdout ends: " + Redact(tail, secrets, "…")
		}
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return failed(ee, "agent killed by signal %d (%s): %s", int(ws.Signal()), ws.Signal(), detail)
	}
	return failed(ee, "agent exited with status %d: %s", ee.ExitCode(), detail)
}

// bwrapError reports whether stderr ends with bubblewrap's own error
// ("bwrap: execvp claude: No such file or directory", "bwrap: Can't find
// source path ..."): bwrap writes only before it executes the agent.
func bwrapError(stderr []byte) bool {
	return strings.HasPrefix(lastLine(stderr), "bwrap: ")
}

func timeoutError(limit time.Duration) error {
	return failed(nil, "agent timed out after %s; raise agent.timeout or make the agent faster", limit)
}

// claudeResult is the part of Claude Code's `--output-format json` object that
// Run uses.
type claudeResult struct {
	Type      string  `json:"type"`
	Subtype   string  `json:"subtype"`
	IsError   bool    `json:"is_error"`
	Result    *string `json:"result"`
	SessionID string  `json:"session_id"`
	// Errors says why an error result ended (Claude Code 2.x: "Reached
	// maximum number of turns (1)"); older versions leave it out.
	Errors []json.RawMessage `json:"errors"`
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
			return cr, failed(nil, "agent reported an error: %s", clip(claudeErrorText(cr)))
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
	return cr, failed(nil, "agent output is not Claude Code JSON (output: claude-json): %s; stdout begins %q; run claude with --output-format json or set agent.output to text",
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
	var errs []string
	for _, e := range cr.Errors {
		var s string
		if json.Unmarshal(e, &s) != nil {
			s = string(e) // not a string: shown as it came
		}
		if s = strings.TrimSpace(s); s != "" {
			errs = append(errs, s)
		}
	}
	switch {
	case cr.Subtype != "" && len(errs) > 0:
		return cr.Subtype + ": " + strings.Join(errs, "; ")
	case len(errs) > 0:
		return strings.Join(errs, "; ")
	case cr.Subtype != "":
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

// tailText is the end of b on one line: its non-blank lines joined by ⏎,
// the last detailMax bytes of that, from a line's start where one fits.
func tailText(b []byte) string {
	var lines []string
	for _, l := range strings.Split(strings.ToValidUTF8(string(b), "\uFFFD"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	const sep = " ⏎ "
	s := strings.Join(lines, sep)
	if len(s) <= detailMax {
		return s
	}
	s = strings.ToValidUTF8(s[len(s)-detailMax:], "")
	if i := strings.Index(s, sep); i >= 0 {
		s = s[i+len(sep):]
	}
	return "…" + s
}

// clip keeps error messages readable when an agent prints a lot.
func clip(s string) string {
	if len(s) <= detailMax {
		return s
	}
	return strings.ToValidUTF8(s[:detailMax], "") + "…"
}

// failure is an ErrFailed whose message reads on its own
// ("agent exited with status 3: ...") and which still unwraps to its cause.
type failure struct {
	msg   string
	cause error
}

func failed(cause error, format string, args ...any) error {
	return &failure{msg: fmt.Sprintf(format, args...), cause: cause}
}

func (e *failure) Error() string { return e.msg }

func (e *failure) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrFailed}
	}
	return []error{ErrFailed, e.cause}
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

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
