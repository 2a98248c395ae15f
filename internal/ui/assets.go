package ui

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"net/http"
	"path"
)

// assets holds the templates and the static files, built into the binary.
//
//go:embed assets
var assets embed.FS

// staticVersion changes whenever a static file does; pages link the files
// with it (?v=), so a browser never keeps a stale script.
var staticVersion = func() string {
	h := sha256.New()
	err := fs.WalkDir(assets, "assets/static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		h.Write([]byte(p))
		h.Write(b)
		return err
	})
	if err != nil {
		panic("ui: reading the embedded static files: " + err.Error())
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}()

// staticHandler serves assets/static under Path+"/static/".
func staticHandler() http.Handler {
	sub, err := fs.Sub(assets, "assets/static")
	if err != nil {
		panic("ui: " + err.Error())
	}
	files := http.StripPrefix(Path+"/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("v") == staticVersion {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		files.ServeHTTP(w, r)
	})
}

// parsePages parses every page template with the layout and the payload
// partial: one template set per page, so that each page defines its own
// "content".
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(assets, "assets/templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		base := path.Base(n)
		if base == "layout.html" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(assets, "assets/templates/layout.html", "assets/templates/payload.tmpl", n)
		if err != nil {
			return nil, err
		}
		pages[base] = t
	}
	return pages, nil
}
