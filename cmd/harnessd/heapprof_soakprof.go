//go:build soakprof

package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
)

// Built with -tags soakprof (make soak SOAK_PROFILE=dir), a daemon whose
// environment names HARNESSD_HEAPPROF_DIR writes its heap profile, after a
// GC, to heap-N.pb.gz (sampled every 4 KiB) in that directory on every SIGUSR2: the soak takes
// one at the start and one at the end of its memory windows, and
// `go tool pprof -top -inuse_space -diff_base heap-1.pb.gz heap-2.pb.gz`
// shows what grew. Never in a release build.
func init() {
	dir := os.Getenv("HARNESSD_HEAPPROF_DIR")
	if dir == "" {
		return
	}
	runtime.MemProfileRate = 4 << 10 // fine enough to see a few hundred bytes a write
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR2)
	go func() {
		for n := 1; ; n++ {
			<-sig
			runtime.GC()
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("heap-%d.pb.gz", n)))
			if err != nil {
				fmt.Fprintln(os.Stderr, "heap profile:", err)
				continue
			}
			if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
				fmt.Fprintln(os.Stderr, "heap profile:", err)
			}
			_ = f.Close()
		}
	}()
}
