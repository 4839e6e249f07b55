package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"switchboard/adapters"
)

// runSocket receives events over Socket Mode. slack-go's client reconnects
// with its own backoff (and on Slack's routine `disconnect` requests); this
// loop reports its state, delivers each envelope and acknowledges it only
// after the gateway stored it, and backfills after every (re)connection.
func (a *Adapter) runSocket(ctx context.Context, host adapters.Host) error {
	var opts []socketmode.Option
	if a.opt.PingInterval > 0 {
		opts = append(opts, socketmode.OptionPingInterval(a.opt.PingInterval))
	}
	sm := socketmode.New(a.api, opts...)
	ctx, cancel := context.WithCancel(ctx)
	defer a.bg.Wait() // backfills end before Run returns
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- sm.RunContext(ctx) }()
	for {
		select {
		case <-ctx.Done():
			<-errc
			return nil
		case err := <-errc:
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				return nil
			}
			if isAuthError(err) {
				err = fmt.Errorf("adapters.slack.app_token: %w: apps.connections.open: %v", adapters.ErrBadToken, err)
				host.SetState(adapters.StateFailed, err)
				return err
			}
			return fmt.Errorf("slack socket mode: %w", err)
		case evt := <-sm.Events:
			if err := a.socketEvent(ctx, host, sm, evt); err != nil {
				return err
			}
		}
	}
}

func (a *Adapter) socketEvent(ctx context.Context, host adapters.Host, sm *socketmode.Client, evt socketmode.Event) error {
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		host.SetState(adapters.StateConnecting, nil)
	case socketmode.EventTypeConnectionError:
		err := errors.New("connection error")
		if ce, ok := evt.Data.(interface{ Error() string }); ok {
			err = errors.New(ce.Error())
		}
		host.SetState(adapters.StateBackingOff, err)
		a.log.Warn("slack socket mode connection failed; retrying", "err", err)
	case socketmode.EventTypeInvalidAuth:
		err := fmt.Errorf("adapters.slack.app_token: %w: apps.connections.open refused it", adapters.ErrBadToken)
		host.SetState(adapters.StateFailed, err)
		return err
	case socketmode.EventTypeConnected:
		host.SetState(adapters.StateConnected, nil)
		if ce, ok := evt.Data.(*socketmode.ConnectedEvent); ok && ce.ConnectionCount > 0 {
			// Slack refreshes Socket Mode connections every few hours.
			a.log.Info("slack socket mode reconnected", "connection", ce.ConnectionCount)
		}
		a.bg.Go(func() { a.runBackfill(ctx, host) })
	case socketmode.EventTypeEventsAPI:
		ev, ok := evt.Data.(slackevents.EventsAPIEvent)
		if !ok || evt.Request == nil {
			return nil
		}
		if err := a.deliverOnce(ctx, host, ev); err != nil {
			// Not acknowledged: Slack redelivers it.
			if ctx.Err() == nil {
				a.log.Warn("slack event not stored; left for redelivery", "envelope", evt.Request.EnvelopeID, "err", err)
			}
			return nil
		}
		if err := sm.AckCtx(ctx, evt.Request.EnvelopeID, nil); err != nil && ctx.Err() == nil {
			a.log.Warn("slack ack", "envelope", evt.Request.EnvelopeID, "err", err)
		}
	case socketmode.EventTypeInteractive:
		if evt.Request == nil {
			return nil
		}
		if cb, ok := evt.Data.(slack.InteractionCallback); ok {
			a.interaction(ctx, host, cb) // answered before the ack, like over HTTP
		}
		if err := sm.AckCtx(ctx, evt.Request.EnvelopeID, nil); err != nil && ctx.Err() == nil {
			a.log.Warn("slack ack", "envelope", evt.Request.EnvelopeID, "err", err)
		}
	case socketmode.EventTypeErrorBadMessage:
		// An envelope the SDK could not parse (an event it does not know,
		// one Slack added since): nothing to store. It is acknowledged, as
		// the Events API answers it 200, or Slack would send it again.
		a.log.Debug("slack socket mode", "event", string(evt.Type), "data", fmt.Sprint(evt.Data))
		if bm, ok := evt.Data.(*socketmode.ErrorBadMessage); ok {
			var env struct {
				ID string `json:"envelope_id"`
			}
			if json.Unmarshal(bm.Message, &env) == nil && env.ID != "" {
				if err := sm.AckCtx(ctx, env.ID, nil); err != nil && ctx.Err() == nil {
					a.log.Warn("slack ack", "envelope", env.ID, "err", err)
				}
			}
		}
	case socketmode.EventTypeIncomingError, socketmode.EventTypeErrorWriteFailed:
		a.log.Debug("slack socket mode", "event", string(evt.Type), "data", fmt.Sprint(evt.Data))
	}
	return nil
}
