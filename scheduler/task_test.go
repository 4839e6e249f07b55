package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// NewTask applies the contract's defaults (the configured zone, the group
// context, the skip policy) and names the field that is wrong.
func TestNewTask(t *testing.T) {
	now := at(t, "2026-11-20T10:00:00Z")
	ok := TaskSpec{Folder: "main", ChatJID: "web:lobby", Prompt: "summarise", Schedule: "0 9 * * *"}
	got, err := NewTask(ok, "Europe/Berlin", now)
	if err != nil {
		t.Fatal(err)
	}
	want := Task{Folder: "main", ChatJID: "web:lobby", Prompt: "summarise", Spec: "0 9 * * *", Kind: KindCron,
		Timezone: "Europe/Berlin", Context: ContextGroup, Missed: MissedSkip, Status: StatusActive,
		Next: at(t, "2026-11-21T08:00:00Z")}
	if got != want {
		t.Errorf("NewTask defaults\n got %+v\nwant %+v", got, want)
	}

	for _, tc := range []struct {
		name   string
		edit   func(*TaskSpec)
		prefix string
		is     error
	}{
		{"empty prompt", func(s *TaskSpec) { s.Prompt = "  " }, "prompt:", nil},
		{"prompt too long", func(s *TaskSpec) { s.Prompt = strings.Repeat("x", MaxPrompt+1) }, "prompt:", nil},
		{"unknown zone", func(s *TaskSpec) { s.Timezone = "Mars/Olympus" }, "timezone:", ErrBadTimezone},
		{"bad schedule", func(s *TaskSpec) { s.Schedule = "every day" }, "schedule:", ErrBadSchedule},
		{"bad context", func(s *TaskSpec) { s.Context = "shared" }, "context_mode", nil},
		{"bad missed", func(s *TaskSpec) { s.Missed = "twice" }, "missed:", ErrBadMissed},
		{"one-shot in the past", func(s *TaskSpec) { s.Schedule = "2026-11-20T09:00:00Z" }, "schedule", ErrBadSchedule},
	} {
		spec := ok
		tc.edit(&spec)
		_, err := NewTask(spec, "UTC", now)
		if err == nil || !strings.HasPrefix(err.Error(), tc.prefix) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: NewTask = %v, want an error starting %q (wrapping %v)", tc.name, err, tc.prefix, tc.is)
		}
	}
}

// A resumed task starts at its first slot after the resume: the slots that
// passed while it was paused are not missed runs.
func TestResumeNext(t *testing.T) {
	task := Task{Spec: "0 * * * *", Timezone: "UTC", Next: at(t, "2026-11-20T10:00:00Z")}
	next, ok, err := ResumeNext(task, at(t, "2026-11-20T15:30:00Z"))
	if err != nil || !ok || !next.Equal(at(t, "2026-11-20T16:00:00Z")) {
		t.Errorf("ResumeNext = %v %v %v, want 16:00Z", next, ok, err)
	}
	// An interval keeps its own slots (CONTRACT §10 "Paused tasks keep
	// their schedule"): "every 1h" made at 09:00:20 still fires at hh:00:20
	// after a pause, not an hour after whenever it was resumed.
	task.Spec, task.Next = "every 1h", at(t, "2026-11-20T10:00:20Z")
	for _, tc := range []struct{ now, want string }{
		{"2026-11-20T09:30:00Z", "2026-11-20T10:00:20Z"}, // resumed before its next slot: that slot
		{"2026-11-20T15:30:00Z", "2026-11-20T16:00:20Z"}, // after: the first of its slots after now
		{"2026-11-20T16:00:20Z", "2026-11-20T17:00:20Z"}, // on a slot: the one after it
	} {
		next, ok, err := ResumeNext(task, at(t, tc.now))
		if err != nil || !ok || !next.Equal(at(t, tc.want)) {
			t.Errorf("ResumeNext(every 1h, next 10:00:20) at %s = %v %v %v, want %s", tc.now, next, ok, err, tc.want)
		}
	}
	task.Spec = "2026-11-20T12:00:00Z"
	if _, ok, err := ResumeNext(task, at(t, "2026-11-20T15:30:00Z")); err != nil || ok {
		t.Errorf("ResumeNext of a passed one-shot = %v %v, want no slot", ok, err)
	}
	task.Spec, task.Timezone = "@daily", "Nowhere/Town"
	if _, _, err := ResumeNext(task, time.Now()); !errors.Is(err, ErrBadTimezone) {
		t.Errorf("ResumeNext with a bad zone = %v, want ErrBadTimezone", err)
	}
}
