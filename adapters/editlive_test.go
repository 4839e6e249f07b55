package adapters

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// platform records what an EditLive asked of it.
type platform struct {
	calls []string
	noID  bool
}

func (p *platform) live() *EditLive {
	return &EditLive{Out: Outbound{Chat: "test:room/1"},
		Send: func(_ context.Context, m Outbound) (MessageID, error) {
			p.calls = append(p.calls, "send "+m.Text)
			if p.noID {
				return "", nil
			}
			return "m1", nil
		},
		Edit: func(_ context.Context, m MessageRef, text string) error {
			p.calls = append(p.calls, fmt.Sprintf("edit %s %s", m.ID, text))
			return nil
		},
		Delete: func(_ context.Context, m MessageRef) error {
			p.calls = append(p.calls, "delete "+string(m.ID))
			return nil
		},
		Render: func(text string) string { return text + "…" },
	}
}

func TestEditLive(t *testing.T) {
	ctx := context.Background()
	t.Run("updates then final", func(t *testing.T) {
		p := &platform{}
		e := p.live()
		for _, text := range []string{"", "Hel", "Hel", "Hello"} {
			if err := e.Update(ctx, text); err != nil {
				t.Fatal(err)
			}
		}
		id, err := e.Finish(ctx, "Hello.")
		if err != nil || id != "m1" {
			t.Fatalf("Finish: %q %v", id, err)
		}
		if again, err := e.Finish(ctx, "other"); err != nil || again != "m1" {
			t.Errorf("second Finish: %q %v; want m1 and nothing sent", again, err)
		}
		want := []string{"send Hel…", "edit m1 Hello…", "edit m1 Hello."}
		if !slices.Equal(p.calls, want) {
			t.Errorf("calls %q; want %q (blank shows nothing, the same text is not sent again)", p.calls, want)
		}
		if err := e.Update(ctx, "more"); !errors.Is(err, ErrLiveEnded) {
			t.Errorf("Update after Finish: %v; want ErrLiveEnded", err)
		}
		if err := e.Abort(ctx); err != nil || len(p.calls) != 3 {
			t.Errorf("Abort after Finish: %v, calls %q; want nothing deleted", err, p.calls)
		}
	})
	t.Run("final without updates is sent", func(t *testing.T) {
		p := &platform{}
		if id, err := p.live().Finish(ctx, "Hi"); err != nil || id != "m1" || !slices.Equal(p.calls, []string{"send Hi"}) {
			t.Errorf("Finish: %q %v, calls %q", id, err, p.calls)
		}
	})
	t.Run("abort deletes", func(t *testing.T) {
		p := &platform{}
		e := p.live()
		if err := e.Update(ctx, "Hel"); err != nil {
			t.Fatal(err)
		}
		if err := e.Abort(ctx); err != nil || p.calls[len(p.calls)-1] != "delete m1" {
			t.Errorf("Abort: %v, calls %q", err, p.calls)
		}
		if _, err := e.Finish(ctx, "late"); !errors.Is(err, ErrLiveEnded) {
			t.Errorf("Finish after Abort: %v; want ErrLiveEnded", err)
		}
	})
	t.Run("a text that renders as nothing", func(t *testing.T) {
		p := &platform{}
		e := p.live()
		e.Render = func(text string) string { return strings.Trim(text, "*") }
		if err := e.Update(ctx, "**"); err != nil || len(p.calls) != 0 {
			t.Errorf("Update(**): %v, calls %q; want nothing sent", err, p.calls)
		}
	})
	t.Run("no id to edit", func(t *testing.T) {
		p := &platform{noID: true}
		if err := p.live().Update(ctx, "Hel"); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Update on a platform without ids: %v; want ErrUnsupported", err)
		}
	})
}

// buttoned makes e carry a Stop button, recording its sends and edits.
func (p *platform) buttoned(e *EditLive) *EditLive {
	e.Out.Buttons = []Button{{Label: "Stop", Data: "stop:t1"}}
	e.SendButtons = func(_ context.Context, m Outbound, b []Button) (MessageID, error) {
		p.calls = append(p.calls, fmt.Sprintf("send %s %v", m.Text, labels(b)))
		return "m1", nil
	}
	e.EditButtons = func(_ context.Context, m MessageRef, text string, b []Button) error {
		p.calls = append(p.calls, fmt.Sprintf("edit %s %s %v", m.ID, text, labels(b)))
		return nil
	}
	return e
}

func labels(b []Button) []string {
	var out []string
	for _, x := range b {
		out = append(out, x.Label)
	}
	return out
}

func TestEditLiveCarriesButtons(t *testing.T) {
	ctx := context.Background()
	t.Run("shown while it runs, gone with the final", func(t *testing.T) {
		p := &platform{}
		e := p.buttoned(p.live())
		if !e.CarriesButtons() {
			t.Fatal("CarriesButtons false with SendButtons, EditButtons and Out.Buttons set")
		}
		for _, text := range []string{"Hel", "Hello"} {
			if err := e.Update(ctx, text); err != nil {
				t.Fatal(err)
			}
		}
		ref, mode, ok := e.Shown()
		if !ok || ref.ID != "m1" || mode != LiveEditButtons {
			t.Errorf("Shown: %v %q %v; want m1 as %q", ref, mode, ok, LiveEditButtons)
		}
		if _, err := e.Finish(ctx, "Hello…"); err != nil { // the same text as shown: the buttons still go
			t.Fatal(err)
		}
		want := []string{"send Hel… [Stop]", "edit m1 Hello… [Stop]", "edit m1 Hello… []"}
		if !slices.Equal(p.calls, want) {
			t.Errorf("calls %q; want %q", p.calls, want)
		}
	})
	t.Run("a final sent at once has none", func(t *testing.T) {
		p := &platform{}
		if _, err := p.buttoned(p.live()).Finish(ctx, "Hi"); err != nil || !slices.Equal(p.calls, []string{"send Hi"}) {
			t.Errorf("Finish: %v, calls %q; want a bare send", err, p.calls)
		}
	})
	t.Run("abort without delete takes them away", func(t *testing.T) {
		p := &platform{}
		e := p.buttoned(p.live())
		e.Delete = nil
		if err := e.Update(ctx, "Hel"); err != nil {
			t.Fatal(err)
		}
		if err := e.Abort(ctx); err != nil || p.calls[len(p.calls)-1] != "edit m1 Hel… []" {
			t.Errorf("Abort: %v, calls %q; want the buttons removed", err, p.calls)
		}
	})
	t.Run("no buttons given: bare", func(t *testing.T) {
		p := &platform{}
		e := p.buttoned(p.live())
		e.Out.Buttons = nil
		if err := e.Update(ctx, "Hel"); err != nil || e.CarriesButtons() || !slices.Equal(p.calls, []string{"send Hel…"}) {
			t.Errorf("Update: %v, carries %v, calls %q", err, e.CarriesButtons(), p.calls)
		}
	})
}
