package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"time"

	"switchboard/adapters"
	"switchboard/gateway"
	"switchboard/remote"
	"switchboard/store"
)

// admin is the operator's HTTP listener (admin.listen): /metrics, /healthz,
// /readyz and a status page. It is separate from the web chat, which may be
// off in production.
type admin struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// startAdmin listens on addr ("" disables it) and serves until stop.
// workers, when not nil, lists the NATS workers (agent.runner nats).
func startAdmin(addr string, g *gateway.Gateway, st *store.Store, workers func(context.Context) ([]remote.WorkerInfo, error), log *slog.Logger) (*admin, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin.listen: %w (is another program using it? change admin.listen, or set it to \"\" to turn the admin listener off)", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		log.Warn("admin listener off loopback: it has no authentication, so anyone who reaches it can read the status page (chat ids, errors, spend) and the metrics; keep admin.listen on 127.0.0.1 or put an authenticating proxy in front", "addr", ln.Addr().String())
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", g.MetricsHandler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		not := g.NotReady(ctx)
		w.Header().Set("Content-Type", "application/json")
		if len(not) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		body := map[string]any{"ready": len(not) == 0, "not_ready": nonNil(not)}
		if held := g.RateLimited(); len(held) > 0 {
			// Ready, but pausing sends for a platform's 429: its state shows here too (CONTRACT §13).
			body["rate_limited"] = held
		}
		json.NewEncoder(w).Encode(body)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		rep, err := readStatus(r.Context(), st)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		for name, s := range g.AdapterStates() { // this process knows them first-hand
			rep.Adapters[name] = s
		}
		panel, err := readSpendPanel(r.Context(), st, g.Zone())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if workers != nil {
			ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
			ws, err := workers(ctx)
			cancel()
			rep.Workers = ws
			if ws == nil {
				rep.Workers = []remote.WorkerInfo{}
			}
			if err != nil {
				rep.WorkersErr = err.Error()
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := statusPage.Execute(w, statusPageData{statusReport: rep, SpendPanel: panel}); err != nil {
			log.Warn("render status page", "err", err)
		}
	})
	a := &admin{ln: ln, done: make(chan error, 1),
		srv: &http.Server{Handler: loopbackOnly(ln.Addr(), adminHeaders(mux)), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}}
	go func() { a.done <- a.srv.Serve(ln) }()
	log.Info("admin listening", "addr", ln.Addr().String(), "metrics", "http://"+ln.Addr().String()+"/metrics",
		"status", "http://"+ln.Addr().String()+"/")
	return a, nil
}

// loopbackOnly refuses, when addr is a loopback address, requests whose
// Host is not a loopback name (localhost, 127.0.0.1, [::1]), as the web
// chat does: a page whose own name an attacker resolves to 127.0.0.1 (DNS
// rebinding) could otherwise read the status page and the metrics from the
// operator's browser. On another address any Host is served.
func loopbackOnly(addr net.Addr, next http.Handler) http.Handler {
	if tcp, ok := addr.(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !adapters.LoopbackHost(r.Host) {
			http.Error(w, fmt.Sprintf("forbidden: host %q not allowed: the admin listener is on loopback; open it through 127.0.0.1 or localhost", r.Host), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// statusCSP is the status page's Content-Security-Policy: it shows text
// that others wrote (adapter errors, chat ids, tool names, failed turns'
// errors), escaped by html/template; should escaping ever miss, no script
// runs, nothing is loaded from elsewhere, and no other site frames it. The
// page has no script; its styles are inline.
const statusCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// adminHeaders adds the headers every admin response carries: no content
// sniffing (a JSON or text body is never run as HTML), and the status
// page's policy.
func adminHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", statusCSP)
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// stop shuts the listener down within a few seconds.
func (a *admin) stop() {
	if a == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = a.srv.Shutdown(ctx)
	if err := <-a.done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		slog.Default().Warn("admin listener", "err", err)
	}
}

// statusPageData is what the status page shows: status plus the spend panel.
type statusPageData struct {
	statusReport
	SpendPanel *spendPanel
}

var statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"usd": usd,
	"cap": capText,
	"ago": func(t time.Time) string { return time.Since(t).Round(time.Second).String() },
	"at":  func(t time.Time) string { return t.Local().Format(time.DateTime) },
	"mb":  func(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="5">
<title>Switchboard status</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:60em}table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border-bottom:1px solid #ddd;padding:.3em .8em;text-align:left}.bad{color:#b00}.ok{color:#070}.warn{background:#fee;padding:.5em}.note{color:#555}.key{display:inline-block;width:.8em;height:.8em}</style>
</head><body>
<h1>Switchboard</h1>
{{with .Gateway}}<p id="gateway">{{if .Running}}<span class="ok">running</span> (pid {{.PID}}, up {{if .Started}}{{ago .Started}}{{else}}?{{end}}, seen {{ago .LastSeen}} ago){{else if .Stopped}}<span class="bad">stopped</span> (cleanly, {{ago .LastSeen}} ago){{else if .LastSeen}}<span class="bad">not running</span> (last seen {{ago .LastSeen}} ago; it did not stop cleanly){{else}}never started{{end}}</p>
{{if .Warning}}<p class="warn" id="warning">{{.Warning}}</p>{{end}}{{end}}
<h2>Adapters</h2><table id="adapters"><tr><th>adapter</th><th>state</th><th>since</th><th>last error</th></tr>
{{range $name, $s := .Adapters}}<tr><td>{{$name}}</td><td class="{{if eq (print $s.State) "connected"}}ok{{else}}bad{{end}}">{{$s.State}}</td><td>{{ago $s.Since}} ago</td><td>{{$s.Err}}</td></tr>{{end}}</table>
<h2>Queue</h2><table id="queue"><tr><th>folder</th><th>waiting</th></tr>{{range $f, $n := .Queue}}<tr><td>{{$f}}</td><td>{{$n}}</td></tr>{{else}}<tr><td colspan="2">empty</td></tr>{{end}}</table>
<h2>Running turns</h2><table id="running">{{range .Running}}<tr><td>{{.Folder}}</td><td>{{.ChatJID}}</td><td>{{ago .Started}}</td></tr>{{else}}<tr><td>none</td></tr>{{end}}</table>
{{if or .Workers .WorkersErr}}<h2>Workers</h2><table id="workers"><tr><th>worker</th><th>host</th><th>busy</th><th>slots</th><th>up</th></tr>{{range .Workers}}<tr><td>{{.ID}}</td><td>{{.Host}}</td><td>{{.Busy}}</td><td>{{.Slots}}</td><td>{{ago .Started}}</td></tr>{{else}}<tr><td colspan="5">{{or .WorkersErr "none connected"}}</td></tr>{{end}}</table>{{end}}
<h2>Approvals waiting</h2><table id="approvals">{{range .Approvals}}<tr><td>{{.ID}}</td><td>{{.Folder}}</td><td>{{.Tool}}</td><td>{{.Chat}}</td><td>since {{.Created}}</td></tr>{{else}}<tr><td>none</td></tr>{{end}}</table>
<h2>Outbox</h2><p id="outbox">{{.Outbox.Pending}} pending, {{.Outbox.Failed}} failed</p>
{{if .FailedDeliveries}}<table id="failed-deliveries">{{range .FailedDeliveries}}<tr><td>{{at .Failed}}</td><td>#{{.OutboxID}}</td><td>{{.ChatJID}}</td><td>{{.Error}}</td></tr>{{end}}</table>{{end}}
<h2>Next tasks</h2><table id="tasks">{{range .NextTasks}}<tr><td>#{{.ID}}</td><td>{{.Folder}}</td><td>{{.Spec}}</td><td>{{.At}}</td></tr>{{else}}<tr><td>none</td></tr>{{end}}</table>
{{with .SpendPanel}}<h2>Spend</h2>
<table id="spend"><tr><th>group</th><th>today</th><th>daily cap</th><th>this month</th><th>monthly cap</th><th></th></tr>
{{range .Groups}}<tr><td>{{.Folder}}</td><td>{{usd .TodayUSD}}</td><td>{{cap .DailyUSD}}</td><td>{{usd .MonthUSD}}</td><td>{{cap .MonthlyUSD}}</td><td>{{if .Over}}<span class="bad">used up: turns held</span>{{end}}</td></tr>{{end}}</table>
<p class="note">Days and months in {{.Zone}}; a group's figures include its subgroups'.</p>
{{with .Chart}}<p id="chart-legend"><span class="key" style="background:{{.TurnsColor}}"></span> turns per hour (max {{.MaxTurns}}) · <span class="key" style="background:{{.SpendColor}}"></span> spend per hour (max {{.MaxCost}}) · last 24 h: {{.Turns}} turns, {{.Cost}}</p>
<svg id="spend-chart" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="turns and spend per hour, last 24 hours">
<line x1="0" y1="{{.Base}}" x2="{{.Width}}" y2="{{.Base}}" stroke="#999"/>
{{$c := .}}{{range .Bars}}<g><title>{{.Title}}</title><rect x="{{.X}}" y="{{.TurnsY}}" width="{{.W}}" height="{{.TurnsH}}" fill="{{$c.TurnsColor}}"/><rect x="{{.SpendX}}" y="{{.SpendY}}" width="{{.W}}" height="{{.SpendH}}" fill="{{$c.SpendColor}}"/></g>
{{end}}{{range .Labels}}<text x="{{.X}}" y="{{$c.Height}}" font-size="11" fill="#555">{{.Text}}</text>{{end}}
</svg>{{end}}{{end}}
<h2>Recent failed turns</h2><table id="failed">{{range .FailedTurns}}<tr><td>{{at .Started}}</td><td>{{.Folder}}</td><td>{{.ChatJID}}</td><td>attempt {{.Attempt}}</td><td>{{.Error}}</td></tr>{{else}}<tr><td>none</td></tr>{{end}}</table>
<p>database {{mb .DBBytes}} · <a href="/metrics">metrics</a> · <a href="/readyz">readyz</a></p>
</body></html>
`))
