package scheduler

import (
	"errors"
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

// FieldError is a TaskSpec field that NewTask refused: Field is its name
// (prompt, timezone, schedule, context_mode, missed), as the MCP tool's
// params call it, so that a caller with other names for them (the CLI's
// flags) can name its own.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// NewTask validates spec and returns an active task whose Next is the first
// slot after now. defaultZone applies when spec.Timezone is empty. Errors
// are *FieldError, so they start with the name of the field that is wrong.
func NewTask(spec TaskSpec, defaultZone string, now time.Time) (Task, error) {
	if strings.TrimSpace(spec.Prompt) == "" {
		return Task{}, &FieldError{"prompt", errors.New("empty; say what the agent should do when the task runs")}
	}
	if len(spec.Prompt) > MaxPrompt {
		return Task{}, &FieldError{"prompt", fmt.Errorf("%d bytes, at most %d", len(spec.Prompt), MaxPrompt)}
	}
	tz := spec.Timezone
	if tz == "" {
		tz = defaultZone
	}
	if _, err := LoadZone(tz); err != nil {
		return Task{}, &FieldError{"timezone", err}
	}
	sched, err := Parse(spec.Schedule, tz)
	if err != nil {
		return Task{}, &FieldError{"schedule", err}
	}
	ctxMode := spec.Context
	if ctxMode == "" {
		ctxMode = ContextGroup
	}
	if ctxMode != ContextGroup && ctxMode != ContextIsolated {
		return Task{}, &FieldError{"context_mode", fmt.Errorf("%q: want group or isolated", spec.Context)}
	}
	missed, err := ParseMissed(spec.Missed)
	if err != nil {
		return Task{}, &FieldError{"missed", err}
	}
	next, ok := sched.Next(now)
	if !ok {
		return Task{}, &FieldError{"schedule", fmt.Errorf("%w %q: the time is already past", ErrBadSchedule, spec.Schedule)}
	}
	return Task{
		Folder: spec.Folder, ChatJID: spec.ChatJID, Prompt: spec.Prompt, Spec: sched.Spec(), Kind: sched.Kind(),
		Timezone: sched.Location().String(), Context: ctxMode, Missed: missed, Status: StatusActive, Next: next.UTC(),
		CreatedBy: spec.CreatedBy,
	}, nil
}

// ResumeNext is the Next of a task resumed at now: slots that passed while it
// was paused are not missed runs. The task keeps its schedule: an interval
// goes on from its own slots (t.Next plus whole intervals), not from now.
func ResumeNext(t Task, now time.Time) (time.Time, bool, error) {
	sched, err := Parse(t.Spec, t.Timezone)
	if err != nil {
		return time.Time{}, false, err
	}
	if sched.kind == KindInterval && !t.Next.IsZero() {
		next := t.Next
		if !next.After(now) {
			next = next.Add((now.Sub(next)/sched.every + 1) * sched.every)
		}
		return next.UTC(), true, nil
	}
	next, ok := sched.Next(now)
	return next.UTC(), ok, nil
}
