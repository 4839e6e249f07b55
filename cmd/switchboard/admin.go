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
		json.NewEncoder(w).Encode(map[string]any{"ready": len(not) == 0, "not_ready": nonNil(not)})
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
		if err := statusPage.Execute(w, rep); err != nil {
			log.Warn("render status page", "err", err)
		}
	})
	a := &admin{ln: ln, done: make(chan error, 1),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}}
	go func() { a.done <- a.srv.Serve(ln) }()
	log.Info("admin listening", "addr", ln.Addr().String(), "metrics", "http://"+ln.Addr().String()+"/metrics",
		"status", "http://"+ln.Addr().String()+"/")
	return a, nil
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

var statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"ago": func(t time.Time) string { return time.Since(t).Round(time.Second).String() },
	"at":  func(t time.Time) string { return t.Local().Format(time.DateTime) },
	"mb":  func(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="5">
<title>Switchboard status</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:60em}table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border-bottom:1px solid #ddd;padding:.3em .8em;text-align:left}.bad{color:#b00}.ok{color:#070}.warn{background:#fee;padding:.5em}</style>
</head><body>
<h1>Switchboard</h1>
{{with .Gateway}}<p id="gateway">{{if .Running}}<span class="ok">running</span> (pid {{.PID}}, seen {{ago .LastSeen}} ago){{else if .Stopped}}<span class="bad">stopped</span> (cleanly, {{ago .LastSeen}} ago){{else if .LastSeen}}<span class="bad">not running</span> (last seen {{ago .LastSeen}} ago; it did not stop cleanly){{else}}never started{{end}}</p>
{{if .Warning}}<p class="warn" id="warning">{{.Warning}}</p>{{end}}{{end}}
<h2>Adapters</h2><table id="adapters"><tr><th>adapter</th><th>state</th><th>since</th><th>last error</th></tr>
{{range $name, $s := .Adapters}}<tr><td>{{$name}}</td><td class="{{if eq (print $s.State) "connected"}}ok{{else}}bad{{end}}">{{$s.State}}</td><td>{{ago $s.Since}} ago</td><td>{{$s.Err}}</td></tr>{{end}}</table>
<h2>Queue</h2><table id="queue"><tr><th>folder</th><th>waiting</th></tr>{{range $f, $n := .Queue}}<tr><td>{{$f}}</td><td>{{$n}}</td></tr>{{else}}<tr><td colspan="2">empty</td></tr>{{end}}</table>
<h2>Running turns</h2><table id="running">{{range .Running}}<tr><td>{{.Folder}}</td><td>{{.ChatJID}}</td><td>{{ago .Started}}</td></tr>{{else}}<tr><td>none</td></tr>{{end}}</table>
{{if or .Workers .WorkersErr}}<h2>Workers</h2><table id="workers"><tr><th>worker</th><th>host</th><th>busy</th><th>slots</th><th>up</th></tr>{{range .Workers}}<tr><td>{{.ID}}</td><td>{{.Host}}</td><td>{{.Busy}}</td><td>{{.Slots}}</td><td>{{ago .Started}}</td></tr>{{else}}<tr><td colspan="5">{{or .WorkersErr "none connected"}}</td></tr>{{end}}</table>{{end}}
<h2>Outbox</h2><p id="outbox">{{.Outbox.Pending}} pending, {{.Outbox.Failed}} failed</p>
<h2>Next tasks</h2><table id="tasks">{{range .NextTasks}}<tr><td>#{{.ID}}</td><td>{{.Folder}}</td><td>{{.Spec}}</td><td>{{.At}}</td></tr>{{else}}<tr><td>none</td></tr>{{end}}</table>
<h2>Recent failed turns</h2><table id="failed">{{range .FailedTurns}}<tr><td>{{at .Started}}</td><td>{{.Folder}}</td><td>{{.ChatJID}}</td><td>attempt {{.Attempt}}</td><td>{{.Error}}</td></tr>{{else}}<tr><td>none</td></tr>{{end}}</table>
<p>database {{mb .DBBytes}} · <a href="/metrics">metrics</a> · <a href="/readyz">readyz</a></p>
</body></html>
`))
