package scheduler

import (
	"fmt"
	"strings"
	"time"

	"switchboard/groups"
)

// Context modes of a task.
const (
	ContextGroup    = "group"    // the chat's session
	ContextIsolated = "isolated" // a fresh session every run
)

// TaskSpec is a task as a user asks for it (CLI flags, MCP arguments).
type TaskSpec struct {
	Folder    groups.Folder
	ChatJID   string
	Prompt    string
	Schedule  string
	Timezone  string // "" → DefaultZone
	Context   string // "" → group
	Missed    string // "" → skip
	CreatedBy string
}

// MaxPrompt bounds a task's prompt.
const MaxPrompt = 16 << 10

// NewTask validates spec and returns an active task whose Next is the first
// slot after now. defaultZone applies when spec.Timezone is empty. Errors
// start with the name of the field that is wrong (prompt, timezone,
// schedule, context_mode, missed).
func NewTask(spec TaskSpec, defaultZone string, now time.Time) (Task, error) {
	if strings.TrimSpace(spec.Prompt) == "" {
		return Task{}, fmt.Errorf("prompt: empty; say what the agent should do when the task runs")
	}
	if len(spec.Prompt) > MaxPrompt {
		return Task{}, fmt.Errorf("prompt: %d bytes, at most %d", len(spec.Prompt), MaxPrompt)
	}
	tz := spec.Timezone
	if tz == "" {
		tz = defaultZone
	}
	if _, err := LoadZone(tz); err != nil {
		return Task{}, fmt.Errorf("timezone: %w", err)
	}
	sched, err := Parse(spec.Schedule, tz)
	if err != nil {
		return Task{}, fmt.Errorf("schedule: %w", err)
	}
	ctxMode := spec.Context
	if ctxMode == "" {
		ctxMode = ContextGroup
	}
	if ctxMode != ContextGroup && ctxMode != ContextIsolated {
		return Task{}, fmt.Errorf("context_mode %q: want group or isolated", spec.Context)
	}
	missed, err := ParseMissed(spec.Missed)
	if err != nil {
		return Task{}, fmt.Errorf("missed: %w", err)
	}
	next, ok := sched.Next(now)
	if !ok {
		return Task{}, fmt.Errorf("schedule %q: %w: the time is already past", spec.Schedule, ErrBadSchedule)
	}
	return Task{
		Folder: spec.Folder, ChatJID: spec.ChatJID, Prompt: spec.Prompt, Spec: sched.Spec(), Kind: sched.Kind(),
		Timezone: sched.Location().String(), Context: ctxMode, Missed: missed, Status: StatusActive, Next: next.UTC(),
		CreatedBy: spec.CreatedBy,
	}, nil
}

// ResumeNext is the Next of a task resumed at now: slots that passed while it
// was paused are not missed runs.
func ResumeNext(t Task, now time.Time) (time.Time, bool, error) {
	sched, err := Parse(t.Spec, t.Timezone)
	if err != nil {
		return time.Time{}, false, err
	}
	next, ok := sched.Next(now)
	return next.UTC(), ok, nil
}
