package devserver

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-run/baton/internal/emulator"
)

// authEmulatorAPIKey is the API key the page gives the Firebase JS SDK; the
// Auth emulator accepts any.
const authEmulatorAPIKey = "local-demo-key"

// authHostEnv names the Firebase Auth emulator for the Admin SDK.
const authHostEnv = "FIREBASE_AUTH_EMULATOR_HOST"

// pageAuth is what the page signs in with: the Firebase Auth emulator, and
// the browser builds of the Firebase JS SDK from the npm install that
// firebase-tools comes with (internal/emulator/firebase/package-lock.json
// pins both).
type pageAuth struct {
	addr    string             // the emulator's host:port
	emu     *emulator.Emulator // nil when FIREBASE_AUTH_EMULATOR_HOST named one
	sdkDir  string             // node_modules/firebase
	version string             // of the JS SDK
	log     *slog.Logger
}

// startAuth starts the Auth emulator for project, unless
// FIREBASE_AUTH_EMULATOR_HOST names one (it must then have been started for
// project), and sets FIREBASE_AUTH_EMULATOR_HOST for the functions' Admin
// SDK. The first run on a machine installs firebase-tools with npm ci.
func startAuth(project string, log *slog.Logger) (*pageAuth, error) {
	start := time.Now()
	progress := func(msg string) {
		log.Info(msg)
		fmt.Fprintf(os.Stderr, "  %s\n", msg)
	}
	dir, err := emulator.FirebaseModules(progress)
	if err != nil {
		return nil, err
	}
	a := &pageAuth{sdkDir: filepath.Join(dir, "node_modules", "firebase"), log: log}
	raw, err := os.ReadFile(filepath.Join(a.sdkDir, "package.json"))
	if err != nil {
		return nil, err
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil || pkg.Version == "" {
		return nil, fmt.Errorf("firebase JS SDK: no version in %s (%v)", a.sdkDir, err)
	}
	a.version = pkg.Version
	if host := os.Getenv(authHostEnv); host != "" {
		a.addr = host
		return a, nil
	}
	a.emu, err = emulator.StartAuth(project, 60*time.Second, progress)
	if err != nil {
		return nil, err
	}
	a.addr = a.emu.Addr
	os.Setenv(authHostEnv, a.addr)
	log.Info("auth emulator started", "addr", a.addr, "pid", a.emu.Pid(), "after", time.Since(start).Round(time.Millisecond).String())
	return a, nil
}

// stop stops the emulator startAuth started, if any. a may be nil.
func (a *pageAuth) stop() {
	if a == nil || a.emu == nil {
		return
	}
	a.emu.Stop()
	os.Unsetenv(authHostEnv)
	a.log.Info("auth emulator stopped", "pid", a.emu.Pid())
	a.emu = nil
}

// config is what /config.json tells the page about signing in.
func (a *pageAuth) config(project string) map[string]any {
	return map[string]any{
		"mode":      "firebase",
		"emulator":  "http://" + a.addr,
		"apiKey":    authEmulatorAPIKey,
		"projectId": project,
		"sdk":       "/vendor/firebase/" + a.version + "/",
	}
}

// sdk serves /vendor/firebase/VERSION/firebase-app.js and firebase-auth.js,
// the SDK's browser ESM builds, as they are in the npm package.
// firebase-auth.js imports firebase-app.js by its CDN URL; the import map in
// index.html sends that import here too, so the page fetches nothing from
// the network and both modules load once.
func (a *pageAuth) sdk() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		version, file, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/vendor/firebase/"), "/")
		if version != a.version || (file != "firebase-app.js" && file != "firebase-auth.js") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Header().Set("Cache-Control", "public, max-age=86400") // the URL names the version
		http.ServeFile(w, r, filepath.Join(a.sdkDir, file))
	})
}
