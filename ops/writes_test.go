package ops_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/ops"
	"switchboard/scheduler"
	"switchboard/store"
)

// Inject is `switchboard inject` and inject_message: the message is stored
// and a turn of the chat's owner (or the folder given) is queued, whatever
// the route's mode; a chat nobody owns is refused.
func TestInject(t *testing.T) {
	for _, c := range []struct {
		name       string
		req        ops.InjectRequest
		wantErr    error // errAny: some error
		wantFolder groups.Folder
	}{
		{"owner answers", ops.InjectRequest{Chat: "web:acme", Text: "hi"}, nil, "acme"},
		{"folder given", ops.InjectRequest{Chat: "web:acme", Text: "hi", Folder: "main"}, nil, "main"},
		{"agent's, one hop deeper", ops.InjectRequest{Chat: "web:eng", Text: "hi", Sender: "web:user/bot", Origin: "acme", Chain: 2,
			Trigger: store.TriggerInject}, nil, "acme/eng"},
		{"no owner", ops.InjectRequest{Chat: "web:nobody", Text: "hi"}, ops.ErrNoOwner, ""},
		{"empty text", ops.InjectRequest{Chat: "web:acme", Text: "  "}, adapters.ErrBadMessage, ""},
		{"bad chat", ops.InjectRequest{Chat: "nochat", Text: "hi"}, errAny, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			m, folder, err := ops.Inject(ctx, f.st, f.table(t), c.req)
			if c.wantErr != nil {
				if err == nil || (c.wantErr != errAny && !errors.Is(err, c.wantErr)) {
					t.Fatalf("err = %v; want %v", err, c.wantErr)
				}
				if pending, _ := f.st.PendingFolders(ctx); len(pending) != 0 {
					t.Errorf("a refused inject queued work for %v", pending)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if folder != c.wantFolder || m.Text != c.req.Text || m.Verb != adapters.VerbMention {
				t.Errorf("Inject = %+v, %q; want a mention answered by %s", m, folder, c.wantFolder)
			}
			b, ok, err := f.st.NextBatch(ctx, c.wantFolder, 10)
			if err != nil || !ok {
				t.Fatalf("no batch for %s: %v", c.wantFolder, err)
			}
			it := b.Items[0]
			if b.ChatJID != c.req.Chat || it.Trigger != store.TriggerInject || it.Origin != c.req.Origin || it.Chain != c.req.Chain {
				t.Errorf("queued %+v in %s; want an inject turn from %q at chain %d", it, b.ChatJID, c.req.Origin, c.req.Chain)
			}
		})
	}
}

// QueueSend is `switchboard send` and the send tools: the outbox gets one
// row per key; empty text and files outside the sender's folder are refused.
func TestQueueSend(t *testing.T) {
	for _, c := range []struct {
		name     string
		req      ops.SendRequest
		refused  bool
		wantKind store.OutboxKind
	}{
		{"operator text", ops.SendRequest{Chat: "web:acme", Text: "hello"}, false, store.OutboxSend},
		{"agent file", ops.SendRequest{Chat: "web:acme", File: "out/report.txt", Folder: "acme", Key: "k1"}, false, store.OutboxFile},
		{"notice", ops.SendRequest{Chat: "web:acme", Text: "held", Kind: store.OutboxNotice, Key: "n1"}, false, store.OutboxNotice},
		{"empty text", ops.SendRequest{Chat: "web:acme", Text: " \n"}, true, ""},
		{"file escaping the folder", ops.SendRequest{Chat: "web:acme", File: "../main/secret", Folder: "acme"}, true, ""},
		{"absolute file", ops.SendRequest{Chat: "web:acme", File: "/etc/passwd", Folder: "acme"}, true, ""},
		{"file without a sender", ops.SendRequest{Chat: "web:acme", File: "report.txt"}, true, ""},
		{"bad chat", ops.SendRequest{Chat: "nochat", Text: "hi"}, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			it, err := ops.QueueSend(ctx, f.st, c.req)
			if c.refused {
				if err == nil {
					t.Fatalf("queued %+v; want a refusal", it)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.st.OutboxByKey(ctx, it.Key)
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != c.wantKind || got.ChatJID != c.req.Chat || got.Text != c.req.Text || got.FilePath != c.req.File ||
				got.Status != store.OutboxPending || (c.req.Key != "" && got.Key != c.req.Key) {
				t.Errorf("stored %+v for %+v", got, c.req)
			}
		})
	}
}

// AddTask and SetTaskStatus are `switchboard task` and the MCP task tools.
func TestAddTask(t *testing.T) {
	spec := func(mod func(*scheduler.TaskSpec)) scheduler.TaskSpec {
		s := scheduler.TaskSpec{Folder: "acme", ChatJID: "web:acme", Prompt: "report", Schedule: "0 9 * * *"}
		mod(&s)
		return s
	}
	for _, c := range []struct {
		name    string
		spec    scheduler.TaskSpec
		wantErr string // the start of the error ("" accepted)
	}{
		{"daily", spec(func(*scheduler.TaskSpec) {}), ""},
		{"interval in a zone", spec(func(s *scheduler.TaskSpec) { s.Schedule, s.Timezone = "@every 15m", "Europe/Paris" }), ""},
		{"no such group", spec(func(s *scheduler.TaskSpec) { s.Folder = "ghost" }), "folder: group ghost does not exist"},
		{"bad schedule", spec(func(s *scheduler.TaskSpec) { s.Schedule = "every tuesday" }), "schedule"},
		{"bad zone", spec(func(s *scheduler.TaskSpec) { s.Timezone = "Mars/Olympus" }), "timezone"},
		{"empty prompt", spec(func(s *scheduler.TaskSpec) { s.Prompt = "" }), "prompt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			task, err := ops.AddTask(ctx, f.st, c.spec, "UTC")
			if c.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
					t.Fatalf("err = %v; want one starting %q", err, c.wantErr)
				}
				if ts, _ := f.st.Tasks(ctx, "", true); len(ts) != 0 {
					t.Errorf("a refused task was stored: %+v", ts)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if task.ID == 0 || task.Status != scheduler.StatusActive || !task.Next.After(time.Now()) {
				t.Errorf("AddTask = %+v; want an active stored task with a next run ahead", task)
			}
		})
	}
}

func TestSetTaskStatus(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	task, err := ops.AddTask(ctx, f.st, scheduler.TaskSpec{Folder: "acme", ChatJID: "web:acme", Prompt: "p", Schedule: "@every 1h"}, "UTC")
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		to, want scheduler.TaskStatus
	}{
		{scheduler.StatusActive, scheduler.StatusActive}, // resuming an active task keeps it as is
		{scheduler.StatusPaused, scheduler.StatusPaused},
		{scheduler.StatusPaused, scheduler.StatusPaused},
		{scheduler.StatusActive, scheduler.StatusActive},
		{scheduler.StatusCancelled, scheduler.StatusCancelled},
	} {
		before, err := f.st.Task(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ops.SetTaskStatus(ctx, f.st, task.ID, step.to)
		if err != nil {
			t.Fatalf("set %s: %v", step.to, err)
		}
		if got.Status != step.want {
			t.Errorf("set %s: status %s; want %s", step.to, got.Status, step.want)
		}
		if before.Status == step.to && !got.Next.Equal(before.Next) {
			t.Errorf("set %s again moved the next run: %v → %v", step.to, before.Next, got.Next)
		}
		if step.to == scheduler.StatusActive && !got.Next.After(time.Now()) {
			t.Errorf("resumed with next run %v; want one ahead", got.Next)
		}
	}
	if _, err := ops.SetTaskStatus(ctx, f.st, 999, scheduler.StatusPaused); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("no such task: %v; want store.ErrNotFound", err)
	}
}

// The route table Inject reads is the stored one: a route changed through
// ops is what the next inject sees.
func TestInjectFollowsRoutes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := ops.PinRoute(ctx, f.st, ops.Actor{Folder: "acme", Tier: 1}, "acme/eng", "web:acme"); err != nil {
		t.Fatal(err)
	}
	_, folder, err := ops.Inject(ctx, f.st, f.table(t), ops.InjectRequest{Chat: "web:acme", Text: "hi"})
	if err != nil || folder != "acme/eng" {
		t.Errorf("inject after the pin went to %q (%v); want acme/eng", folder, err)
	}
}
