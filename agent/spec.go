package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SpecConfig is what a runner's Spec is made of: agent.* as configured,
// and what NewSpec needs of the machine the turns run on.
type SpecConfig struct {
	// Command is agent.command as configured: argv[0] a program found in
	// PATH, a path, or "switchboard" (this binary, Exe).
	Command    []string
	ResumeArgs []string
	Output     Output
	Input      InputFormat // agent.input
	Timeout    time.Duration
	Env        []string // agent.env: names passed on from this process's environment
	// MaxTurnUSD (agent.max_turn_usd) caps a Claude Code (claude-json,
	// claude-stream) agent's turn with its --max-budget-usd; other agents
	// read it where their own flag is.
	MaxTurnUSD float64
	// Remote: the turns run on workers (agent.runner nats), each of which
	// makes its own Spec of the job with NewSpec. Command then stays as
	// configured: nothing is resolved, bound or probed here, and no
	// --max-budget-usd is added (a worker adds its own).
	Remote bool
	// Exe is this binary: argv[0] "switchboard" runs it.
	Exe string
	// Sandbox confines the turns (NewSandbox); nil runs them unconfined.
	// NewSpec binds into a copy of it what Command names that it would
	// hide, so one Sandbox can serve several specs.
	Sandbox *Sandbox
	Logger  *slog.Logger // the paths bound for Command, the probe; nil: none
}

// probeTimeout bounds NewSpec's probe in the sandbox.
const probeTimeout = 30 * time.Second

// NewSpec makes the Spec a runner runs c's agent with, and checks once
// what would otherwise fail at every turn: argv[0] is resolved on this
// machine ("switchboard" is Exe; a script whose "#!/usr/bin/env" program
// is not in PATH is an error), agent.max_turn_usd's arguments are added,
// and with a sandbox the paths Command names that it would hide are bound
// read-only and one probe in the sandbox shows that the agent can be
// started there. With c.Remote it returns the configured spec as is.
func NewSpec(ctx context.Context, c SpecConfig) (Spec, error) {
	spec := Spec{Command: slices.Clone(c.Command), ResumeArgs: c.ResumeArgs, Output: c.Output, Timeout: c.Timeout, Env: c.Env, Input: c.Input}
	if c.Remote {
		return spec, nil
	}
	if len(c.Command) == 0 || c.Command[0] == "" {
		return Spec{}, failed(nil, "agent command is empty; set agent.command")
	}
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	argv, err := resolveCommand(c.Command, c.Exe)
	if err != nil {
		return Spec{}, err
	}
	spec.Command = append(argv, maxTurnArgs(c.Output, c.MaxTurnUSD)...)
	if c.Sandbox == nil {
		return spec, nil
	}
	own := *c.Sandbox
	own.Binds = slices.Clone(c.Sandbox.Binds)
	spec.Sandbox = &own
	if spec.Command, err = bindCommand(log, spec.Sandbox, spec.Command); err != nil {
		return Spec{}, err
	}
	return spec, probe(ctx, log, spec)
}

// maxTurnArgs is what agent.max_turn_usd adds to the agent's command:
// Claude Code's --max-budget-usd for claude-json and claude-stream agents;
// other agents read it where their own flag is (see docs/operating.md).
func maxTurnArgs(o Output, usd float64) []string {
	if usd <= 0 || !o.Claude() {
		return nil
	}
	return []string{"--max-budget-usd", strconv.FormatFloat(usd, 'f', -1, 64)}
}

// resolveCommand returns agent.command with argv[0] an absolute path on the
// host, found in PATH unless it names a path; a script whose
// "#!/usr/bin/env" program is not in PATH is an error too.
func resolveCommand(command []string, exe string) ([]string, error) {
	argv := slices.Clone(command)
	if argv[0] == "switchboard" {
		argv[0] = exe
		return argv, nil
	}
	p, err := exec.LookPath(argv[0])
	if err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			err = ee.Err
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if !strings.ContainsRune(argv[0], filepath.Separator) {
			return nil, fmt.Errorf("agent.command[0]: %q: %v (looked up in PATH=%s); install it, or give its absolute path",
				argv[0], err, os.Getenv("PATH"))
		}
		return nil, fmt.Errorf("agent.command[0]: %s: %v; check the path (it must be an executable file)", argv[0], err)
	}
	if argv[0], err = filepath.Abs(p); err != nil {
		return nil, fmt.Errorf("agent.command[0]: %w", err)
	}
	if _, err := interpreter(argv[0]); err != nil {
		return nil, fmt.Errorf("agent.command[0]: %s: %v; install it, or add its directory to the gateway's PATH", argv[0], err)
	}
	return argv, nil
}

// probe runs Probe once, as a turn in a scratch folder inside the data
// directory would run, within probeTimeout.
func probe(ctx context.Context, log *slog.Logger, spec Spec) error {
	dir, err := os.MkdirTemp(spec.Sandbox.DataDir, ".agent-probe-")
	if err != nil {
		return fmt.Errorf("probe the agent in the sandbox: %w", err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	interp, _ := interpreter(spec.Command[0])
	started := time.Now()
	if err := Probe(ctx, spec, dir, interp); err != nil {
		return fmt.Errorf("agent.command: the agent cannot be started in the sandbox: %v; bind the directory holding it with agent.binds (read-only), or install it under /usr or /opt", err)
	}
	log.Debug("agent found in the sandbox", "program", spec.Command[0], "ms", time.Since(started).Milliseconds())
	return nil
}
