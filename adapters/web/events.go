package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"switchboard/adapters"
)

const (
	// streamPage is how many messages an event stream reads from History
	// at a time.
	streamPage = 200
	// writeDeadline drops a client that stops reading a response, an
	// event stream's included (guard's stallWriter).
	writeDeadline = 10 * time.Second
)

// events serves GET /api/rooms/{room}/events: a server-sent event stream of
// the room's messages, one event per message with the seq as its id, and of
// the drafts of live replies (draftView, without an id: a page that connects
// gets the drafts showing now). The
// cursor is ?after=SEQ or the Last-Event-ID header a reconnecting
// EventSource sends (the later of the two); with neither, the stream starts
// at the end of the room and carries only messages stored from now on.
func (a *Adapter) events(w http.ResponseWriter, r *http.Request) {
	room := r.PathValue("room")
	if err := checkRoom(room); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	after, hasCursor, err := streamCursor(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	select {
	case a.streams <- struct{}{}:
		defer func() { <-a.streams }()
	default:
		writeError(w, http.StatusServiceUnavailable, "too many open event streams, try again later")
		return
	}

	ctx := r.Context()
	chat := chatJID(room)
	// Subscribe before reading History so that nothing stored in between
	// is missed: its wake-up waits in the channel.
	sub := a.hub.subscribe(chat)
	defer a.hub.unsubscribe(chat, sub)
	if !hasCursor {
		if after, err = a.lastSeq(ctx, chat); err != nil {
			a.log.Warn("web chat history not read", "jid", chat, "err", err)
			writeError(w, http.StatusServiceUnavailable, "could not read messages, try again")
			return
		}
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // tell a proxy in front not to buffer
	w.WriteHeader(http.StatusOK)
	s := &stream{w: w, rc: http.NewResponseController(w)}
	if err := s.write([]byte("retry: 3000\n\n")); err != nil {
		return
	}
	tick := time.NewTicker(a.keepAlive)
	defer tick.Stop()
	age := time.NewTimer(a.streamMaxAge)
	defer age.Stop()
	for {
		// Drafts first: a final message is stored after its turn's last
		// draft was queued (or dropped by Finish), so it always follows it.
		if err := a.writeDrafts(s, sub); err != nil {
			a.log.Debug("web event stream ended", "jid", chat, "err", err)
			return
		}
		if after, err = a.sendSince(ctx, s, chat, after); err != nil {
			a.log.Debug("web event stream ended", "jid", chat, "err", err)
			return
		}
		select {
		case <-sub.wake:
		case <-tick.C:
			if err := s.write([]byte(": keep-alive\n\n")); err != nil {
				return
			}
		case <-age.C:
			return // the client reconnects, resuming from Last-Event-ID
		case <-ctx.Done():
			return
		case <-a.stop:
			return
		}
	}
}

// streamCursor reads ?after= and Last-Event-ID; hasCursor is false when
// neither was given.
func streamCursor(r *http.Request) (after int64, hasCursor bool, err error) {
	q := r.URL.Query()
	if after, err = parseAfter(q.Get("after")); err != nil {
		return 0, false, err
	}
	hasCursor = q.Get("after") != ""
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		last, err := parseAfter(id)
		if err != nil {
			return 0, false, errors.New("header Last-Event-ID must be a message seq (a whole number, 0 or more)")
		}
		after, hasCursor = max(after, last), true
	}
	return after, hasCursor, nil
}

// sendSince writes every message of chat with seq > after as an event and
// returns the seq of the last one written.
func (a *Adapter) sendSince(ctx context.Context, s *stream, chat adapters.JID, after int64) (int64, error) {
	for {
		msgs, err := a.history.Messages(ctx, chat, after, streamPage)
		if err != nil {
			return after, fmt.Errorf("read history: %w", err)
		}
		if len(msgs) == 0 {
			return after, nil
		}
		var buf []byte
		for _, m := range msgs {
			if m.Seq <= after { // a History that ignores the cursor must not loop us
				continue
			}
			data, err := json.Marshal(a.viewWithButtons(ctx, m))
			if err != nil {
				return after, fmt.Errorf("encode message %d: %w", m.Seq, err)
			}
			buf = append(buf, "id: "...)
			buf = strconv.AppendInt(buf, m.Seq, 10)
			buf = append(buf, "\ndata: "...)
			buf = append(buf, data...) // JSON has no raw newlines
			buf = append(buf, "\n\n"...)
			after = m.Seq
		}
		if err := s.write(buf); err != nil {
			return after, err
		}
		if len(msgs) < streamPage {
			return after, nil
		}
	}
}

// lastSeq returns the seq of the newest message of chat, 0 if it has none.
// History reads forward only, so this pages through the room; clients that
// know their position pass ?after= and skip it.
func (a *Adapter) lastSeq(ctx context.Context, chat adapters.JID) (int64, error) {
	var last int64
	for {
		msgs, err := a.history.Messages(ctx, chat, last, maxLimit)
		if err != nil {
			return 0, fmt.Errorf("read history of %s: %w", chat, err)
		}
		if len(msgs) == 0 || msgs[len(msgs)-1].Seq <= last {
			return last, nil
		}
		last = msgs[len(msgs)-1].Seq
		if len(msgs) < maxLimit {
			return last, nil
		}
	}
}

// stream writes to an event-stream response, flushing every write.
type stream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (s *stream) write(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	// s.w is guard's stallWriter: the write (and this flush) must be
	// taken within its deadline, or the client is dropped.
	if _, err := s.w.Write(p); err != nil {
		return fmt.Errorf("write event: %w", err)
	}
	if err := s.rc.Flush(); err != nil {
		return fmt.Errorf("flush event: %w", err)
	}
	return nil
}
