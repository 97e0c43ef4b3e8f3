package devserver

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/baton-run/baton/internal/emulator"
)

// emulators are the emulators a run started, and how the page signs in.
type emulators struct {
	signIn    *pageAuth // nil in development identity mode
	firestore *emulator.Emulator
	log       *slog.Logger
}

// startEmulators starts the Firestore emulator, unless
// FIRESTORE_EMULATOR_HOST names one, and the Auth emulator, unless
// development identity is asked for, at once (the Auth emulator takes
// longer). An Auth emulator that cannot run is not an error: env then gets
// development identity.
func startEmulators(env *environment, log *slog.Logger, start time.Time) (*emulators, error) {
	project, _ := env.lookup("GOOGLE_CLOUD_PROJECT")
	dev, _ := env.lookup("BATON_DEV_IDENTITY")
	e := &emulators{log: log}
	authDone := make(chan error, 1)
	if ok, _ := strconv.ParseBool(dev); ok {
		authDone <- nil
	} else {
		go func() {
			var err error
			e.signIn, err = startAuth(project, log)
			authDone <- err
		}()
	}
	if os.Getenv("FIRESTORE_EMULATOR_HOST") == "" {
		// Java starts the emulator in about 5 s on a quiet machine; on a
		// busy one (a test suite beside it) 30 s was not enough.
		emu, err := emulator.Start("", 2*time.Minute)
		if err != nil {
			<-authDone
			e.stop()
			return nil, err
		}
		e.firestore = emu
		os.Setenv("FIRESTORE_EMULATOR_HOST", emu.Addr)
		log.Info("emulator started", "addr", emu.Addr, "pid", emu.Pid(), "after", time.Since(start).Round(time.Millisecond).String())
	}
	if err := <-authDone; err != nil {
		log.Warn("no Firebase Auth emulator: development identity instead", "error", err.Error())
		fmt.Fprintf(os.Stderr, "\n  Firebase Auth emulator unavailable: %v\n  Falling back to development identity: the page names its user in X-Baton-User.\n  To sign in through Firebase Auth as in production, %s.\n\n",
			err, emulator.AuthInstallHint)
		env.overrides["BATON_DEV_IDENTITY"] = "true"
	}
	return e, nil
}

// stop stops the emulators startEmulators started.
func (e *emulators) stop() {
	e.signIn.stop()
	if e.firestore != nil {
		e.firestore.Stop()
		os.Unsetenv("FIRESTORE_EMULATOR_HOST")
		e.log.Info("emulator stopped", "pid", e.firestore.Pid())
		e.firestore = nil
	}
}
