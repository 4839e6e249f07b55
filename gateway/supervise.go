package gateway

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"switchboard/adapters"
)

// supervise runs one adapter until ctx ends. An adapter whose Run fails is
// started again after a capped, jittered exponential backoff, so one
// platform failing never stops the others. A bad token or configuration
// (ErrBadToken, ErrConfig) before the adapter ever connected is a start-up
// error: it is returned, and the gateway stops. After that it leaves the
// adapter failed, not retried.
func (g *Gateway) supervise(ctx context.Context, name string, a adapters.Adapter) error {
	host := g.host(name)
	wait := g.opt.RestartBackoff[0]
	for {
		host.SetState(adapters.StateConnecting, nil)
		started := time.Now()
		err := a.Run(ctx, host)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			err = errors.New("run returned without being stopped")
		}
		connected := g.states.everConnected(name)
		if errors.Is(err, adapters.ErrBadToken) || errors.Is(err, adapters.ErrConfig) {
			host.SetState(adapters.StateFailed, err)
			if !connected {
				return fmt.Errorf("adapter %s: %w", name, err)
			}
			g.log.Error("adapter stopped: fix its configuration and restart", "adapter", name, "err", err)
			return nil
		}
		if time.Since(started) > g.opt.RestartBackoff[1] {
			wait = g.opt.RestartBackoff[0] // it ran for a while: start the backoff over
		}
		jittered := wait/2 + rand.N(wait/2+1)
		host.SetState(adapters.StateBackingOff, err)
		g.log.Warn("adapter failed; restarting it", "adapter", name, "wait", jittered, "err", err)
		t := time.NewTimer(jittered)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		wait = min(wait*2, g.opt.RestartBackoff[1])
	}
}

// host is the adapters.Host of adapter name.
func (g *Gateway) host(name string) adapterHost {
	return adapterHost{name: name, deliver: g.intake.deliver, states: g.states, st: g.st, table: g.Table, press: g.press}
}
