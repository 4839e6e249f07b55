package web

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// static holds the chat page and its script and style sheet. Everything the
// page needs is served from here: the machine may have no internet access.
//
//go:embed static
var static embed.FS

// pageCSP allows only this origin's scripts, styles and connections; the
// page's script is a separate file, so no inline code is needed.
const pageCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func (a *Adapter) servePage(w http.ResponseWriter, r *http.Request) {
	page, err := static.ReadFile("static/index.html")
	if err != nil { // embedded at build time: cannot happen
		a.log.Error("web chat page missing from the binary", "err", err)
		http.Error(w, "chat page missing", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-cache")
	_, _ = w.Write(page)
}

// staticHandler serves the page's assets under /static/, without directory
// listings.
func staticHandler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil { // "static" is a valid path: cannot happen
		return http.NotFoundHandler()
	}
	files := http.StripPrefix("/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", pageCSP)
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
