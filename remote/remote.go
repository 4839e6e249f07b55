// Package remote runs agent turns on worker machines through NATS
// JetStream. The gateway's Runner (an agent.Runner) gives each turn to a
// worker and publishes the job on that worker's subject of a work-queue
// stream, then waits for its outcome on a results stream; a Worker pulls
// its jobs through its own consumer while it has a free slot, runs them
// with agent.Run and publishes the outcome. Delivery is at most once: a
// job is acknowledged when a worker takes it and never redelivered; a turn
// whose outcome does not come by its deadline fails, and the gateway's own
// retry policy runs it again as a new turn. The group folder travels as a
// versioned snapshot: the worker runs the turn in its copy of the job's
// version and sends back what changed, which the gateway applies only if
// the folder is still at that version.
//
// It does four jobs, each in its own files:
//
//   - The runner (the gateway's side): runner.go (Run, the job, the
//     outcome as a Result), events.go (a turn's events, live, from the
//     worker to agent.Input.OnEvent), dispatch.go (which worker gets a turn),
//     accept.go and given.go (which outcome counts), await.go (a
//     restarted gateway's Await), runner_folders.go (a job's folder
//     version published, its changes applied).
//   - The worker (`switchboard worker`): worker.go (fetch, run, publish),
//     validate.go (the jobs it refuses), worker_folders.go (its copies of
//     the group folders).
//   - Folder versioning, used by both: folders.go (the versions in a KV
//     bucket and an object store, deltas applied at their base version
//     only), snapshot.go (scanning, hashing, packing a folder), unpack.go
//     (unpacking within limits through os.Root).
//   - The NATS server and its users: server.go (the embedded server),
//     auth.go (nkey credentials, the gateway's and each worker's
//     permissions), streams.go (the streams and buckets), and this file
//     (the wire types: Job, Outcome, WorkerInfo).
package remote

import (
	"time"

	"switchboard/agent"
)

// JetStream names. The gateway creates them as needed; workers use them.
const (
	TurnsStream   = "SWITCHBOARD_TURNS"    // work queue: each job consumed once
	TurnsSubject  = "switchboard.turns"    // jobs go to TurnsSubject.w.<worker id> (workerSubject)
	ResultsStream = "SWITCHBOARD_RESULTS"  // outcomes, kept for an hour
	resultsPrefix = "switchboard.results." // + <worker id>.<turn id>: only that worker may publish there
	takenPrefix   = "switchboard.taken."   // core NATS: + <worker id>.<turn id>, when the worker takes it
	eventsPrefix  = "switchboard.events."  // core NATS: + <worker id>.<turn id>, the turn's events (events.go)
	stopPrefix    = "switchboard.stop."    // core NATS: + <worker id>.<turn id>: the gateway stops a turn (stop.go); only that worker reads it
	// core NATS: + <worker id>.<turn id>: messages steered into a running
	// turn (steer.go), which only that worker reads, and its answers,
	// which only it publishes.
	inputPrefix    = "switchboard.input."
	inputAckPrefix = "switchboard.inputack."
	workersBucket  = "switchboard_workers" // KV: one entry per live worker
	// legacyConsumer is the pull consumer all workers shared before each
	// had its own; removed from an existing stream (see ensureStreams).
	legacyConsumer = "workers"
)

// keep is how long jobs and outcomes stay in their streams: longer than
// any turn, short enough that stale ones vanish on their own.
const keep = time.Hour

// workerTTL is how long a worker's entry outlives its last heartbeat
// (default of RunnerOptions.WorkerTTL and WorkerOptions.WorkerTTL).
const workerTTL = 15 * time.Second

// Job is one turn as published to TurnsStream.
type Job struct {
	TurnID string `json:"turn_id"` // also the message id (JetStream de-duplication)
	// Dir is the group folder: the worker runs the agent in its copy of
	// it, which a sandboxed agent sees at this same absolute path.
	Dir string `json:"dir"`
	// Root is where the gateway's group folders live (RunnerOptions.
	// FoldersRoot): the worker refuses a Dir that is not strictly inside
	// it, and a Root that is "/" (checkJob).
	Root      string `json:"root"`
	Prompt    string `json:"prompt"`
	SessionID string `json:"session_id,omitempty"`
	// Env is the turn's KEY=VALUE entries: SWITCHBOARD_* (with the MCP URL
	// and the turn's token, without the socket) and the values of the
	// variables agent.env names, taken from the gateway's environment.
	Env        []string     `json:"env"`
	Command    []string     `json:"command"` // agent.command as configured; the worker resolves it
	ResumeArgs []string     `json:"resume_args,omitempty"`
	Output     agent.Output `json:"output"`
	MaxOutput  int          `json:"max_output,omitempty"`
	// Input is agent.input: stream-json writes the prompt as Claude Code's
	// user message and, with Output claude-stream, keeps stdin open for
	// the messages the gateway steers into the turn (steer.go).
	Input agent.InputFormat `json:"input,omitempty"`
	// DeadlineMs (Unix ms) is when the gateway stops waiting: the worker
	// kills the agent then, and does not start a job whose deadline passed.
	DeadlineMs int64 `json:"deadline_ms"`
	// Folder is the version of the group folder the turn runs on (folders.go).
	Folder *FolderRef `json:"folder,omitempty"`
	// Events: the gateway follows the turn live (agent.Input.OnEvent);
	// the worker publishes its events (events.go).
	Events bool `json:"events,omitempty"`
}

// Outcome is a job's result as published to ResultsStream.
type Outcome struct {
	TurnID string `json:"turn_id"`
	Worker string `json:"worker"`
	Reply  string `json:"reply,omitempty"`
	// Replies are every result's text of a stream-json turn that answered
	// more than once (agent.Result.Replies).
	Replies    []string `json:"replies,omitempty"`
	SessionID  string   `json:"session_id,omitempty"`
	DurationMs int64    `json:"duration_ms"`
	ExitCode   int      `json:"exit_code"`
	NotStarted bool     `json:"not_started,omitempty"`
	TimedOut   bool     `json:"timed_out,omitempty"`
	Truncated  bool     `json:"truncated,omitempty"`
	Stderr     string   `json:"stderr,omitempty"`
	Error      string   `json:"error,omitempty"` // agent.Run's error; "" when it succeeded
	// Stopped: the gateway stopped the turn (stop.go); Error is then empty.
	Stopped bool `json:"stopped,omitempty"`
	// Usage is what the agent reported the turn cost, failed turns
	// included: the gateway charges it to the folder's budgets.
	Usage agent.Usage `json:"usage"`
	// Folder is what the turn changed in its folder; nil: nothing.
	Folder *FolderDelta `json:"folder,omitempty"`
	// Events is how many events the worker published for the turn (the
	// last one's Seq): the gateway hands them all on before the result.
	Events int `json:"events,omitempty"`
	// Steered are the ids of the steering messages the worker wrote into
	// the agent (steer.go): the gateway records exactly these as part of
	// the turn, and queues the others it sent for the next one.
	Steered []int64 `json:"steered,omitempty"`
	// Finished is the worker's WorkerInfo.Finished once this turn was
	// over: a report of the worker counting at least as many no longer
	// counts the turn busy (the dispatch, dispatch.go).
	Finished int64 `json:"finished,omitempty"`
}

// WorkerInfo is a live worker's entry in the workers bucket.
type WorkerInfo struct {
	ID    string `json:"id"`
	Host  string `json:"host"`
	Slots int    `json:"slots"`
	Busy  int    `json:"busy"`
	// Finished counts the turns the worker process (Started) finished:
	// those no longer in Busy.
	Finished int64 `json:"finished,omitempty"`
	// Draining: the worker is stopping; it finishes what it runs and gets
	// no new turn.
	Draining bool      `json:"draining,omitempty"`
	Started  time.Time `json:"started"`
	Seen     time.Time `json:"seen"`
}
