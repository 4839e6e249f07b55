package adapters

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// EditLive is a live reply made of edits: one message sent at the first
// update that shows something and edited at the next ones, the final
// being its last edit; Abort deletes it. It is Discord's live reply and
// the gateway's fallback for platforms without a native one (or whose
// native one was refused). With SendButtons and EditButtons set it
// carries Out.Buttons while it runs (ButtonCarrier): the message is sent
// with them, every update's edit keeps them, and the final's edit (or
// Abort, without Delete) removes them. Its methods are safe for
// concurrent use.
type EditLive struct {
	Out    Outbound // where the message goes: chat, topic, reply-to, key
	Send   func(ctx context.Context, m Outbound) (MessageID, error)
	Edit   func(ctx context.Context, m MessageRef, text string) error
	Delete func(ctx context.Context, m MessageRef) error // nil: Abort leaves the message
	// Render is what an unfinished text shows as (markdown.Partial,
	// closing what the cut left open); nil shows it as it is. The final
	// text is shown as given.
	Render func(text string) string
	// Due, when set, is how long the platform's pacing would hold this
	// live reply's next request now (edit: an edit, else the first send):
	// an Update that would wait sends nothing and returns NotDue's
	// RetryAfterError, so that the caller's next update, once it is due,
	// carries its newest text instead of this one sent late. Finish is
	// never refused: it waits its turn.
	Due func(edit bool) time.Duration
	// SendButtons and EditButtons show Out.Buttons on the message (both
	// set, Out.Buttons not empty; else Send and Edit show it bare).
	SendButtons func(ctx context.Context, m Outbound, buttons []Button) (MessageID, error)
	EditButtons func(ctx context.Context, m MessageRef, text string, buttons []Button) error

	mu       sync.Mutex
	id       MessageID
	shown    string // the text last shown: an update that shows the same sends nothing
	buttoned bool   // the message shows Out.Buttons
	finished bool
	aborted  bool
}

// Update shows text (the whole live reply so far) by sending the message
// or editing it; blank text shows nothing.
func (e *EditLive) Update(ctx context.Context, text string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.finished || e.aborted {
		return fmt.Errorf("update live reply in %s: %w", e.Out.Chat, ErrLiveEnded)
	}
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if e.Render != nil {
		text = e.Render(text) // "**" alone renders as nothing yet
		if strings.TrimSpace(text) == "" {
			return nil
		}
	}
	if e.id != "" && text == e.shown {
		return nil
	}
	if e.Due != nil {
		if err := NotDue(e.Due(e.id != "")); err != nil {
			return err
		}
	}
	return e.show(ctx, text, false)
}

// CarriesButtons implements ButtonCarrier: Out.Buttons show on the message
// while the live reply runs.
func (e *EditLive) CarriesButtons() bool { return e.carries() }

func (e *EditLive) carries() bool {
	return len(e.Out.Buttons) > 0 && e.SendButtons != nil && e.EditButtons != nil
}

// NotDue is the refusal of a live update that the platform's pacing would
// hold for wait (nil when wait is not positive): a *RetryAfterError with
// that wait. A live reply refuses such an update rather than wait with a
// text that is old by the time it is sent (LiveReply.Update).
func NotDue(wait time.Duration) error {
	if wait > 0 {
		return &RetryAfterError{Wait: wait}
	}
	return nil
}

// Finish makes text the message's last edit, or sends it when nothing was
// shown yet; a second Finish returns the same id and sends nothing.
func (e *EditLive) Finish(ctx context.Context, text string) (MessageID, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.aborted:
		return "", fmt.Errorf("finish live reply in %s: %w", e.Out.Chat, ErrLiveEnded)
	case e.finished:
		return e.id, nil
	}
	if err := e.show(ctx, text, true); err != nil {
		return "", err
	}
	e.finished = true
	return e.id, nil
}

// Abort deletes the message (when Delete is set and one was sent), or
// else takes its buttons away; after Finish it does nothing.
func (e *EditLive) Abort(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.finished || e.aborted {
		return nil
	}
	switch {
	case e.id != "" && e.Delete != nil:
		if err := e.Delete(ctx, e.ref()); err != nil {
			return err
		}
	case e.buttoned:
		if err := e.EditButtons(ctx, e.ref(), e.shown, nil); err != nil {
			return err
		}
	}
	e.aborted = true
	return nil
}

// show sends text as the message, or edits the message to it unless it
// shows text already; final takes the buttons away (a final sent at once
// never had them). A platform that gives no id cannot edit: that is
// ErrUnsupported.
func (e *EditLive) show(ctx context.Context, text string, final bool) error {
	buttons := e.carries() && !final
	switch {
	case e.id == "":
		m := e.Out
		m.Text, m.Buttons = text, nil
		var id MessageID
		var err error
		if buttons {
			id, err = e.SendButtons(ctx, m, e.Out.Buttons)
		} else {
			id, err = e.Send(ctx, m)
		}
		if err != nil {
			return err
		}
		if id == "" {
			return fmt.Errorf("live reply in %s: the message sent has no id to edit: %w", e.Out.Chat, ErrUnsupported)
		}
		e.id = id
	case text == e.shown && buttons == e.buttoned:
		return nil
	case buttons:
		if err := e.EditButtons(ctx, e.ref(), text, e.Out.Buttons); err != nil {
			return err
		}
	case e.buttoned:
		if err := e.EditButtons(ctx, e.ref(), text, nil); err != nil {
			return err
		}
	default:
		if err := e.Edit(ctx, e.ref(), text); err != nil {
			return err
		}
	}
	e.shown, e.buttoned = text, buttons
	return nil
}

func (e *EditLive) ref() MessageRef {
	return MessageRef{Chat: e.Out.Chat, Topic: e.Out.Topic, ID: e.id}
}
