package daemon

import (
	"reflect"
	"testing"
	"time"
)

func TestGoroutinesIn(t *testing.T) {
	dump := []byte("goroutine 1 [running]:\nmain.main()\n\t/x/main.go:1\n\n" +
		"goroutine 7 [sleep]:\ntime.Sleep(0x1)\ngithub.com/harnessd/harnessd/persistence.(*Faults).write(0x0)\n\t/x/faults.go:1\n" +
		"github.com/harnessd/harnessd/persistence.(*Store).PutSync(0x0)\n\n" +
		"goroutine 9 [select]:\ngithub.com/harnessd/harnessd/persistence.(*Store).Close.func1()\n")
	tests := []struct {
		name  string
		frame string
		want  int
	}{
		{"store frames", storeFrame, 2},
		{"one goroutine", "main.main", 1},
		{"none", "harnessd/actors.", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := goroutinesIn(dump, tt.frame); got != tt.want {
				t.Errorf("goroutinesIn(dump, %q) = %d, want %d", tt.frame, got, tt.want)
			}
		})
	}
}

func TestShutdownStepsPending(t *testing.T) {
	var s shutdownSteps
	endA := s.begin("a")
	endB := s.begin("b")
	now := time.Now().Add(time.Hour)
	if got := len(s.pending(now)); got != 2 {
		t.Fatalf("pending = %d steps, want 2", got)
	}
	endA()
	got := s.pending(now)
	if len(got) != 1 || got[0][:3] != "b (" {
		t.Fatalf("pending after a ended = %v, want only b", got)
	}
	endB()
	if got := s.pending(now); !reflect.DeepEqual(got, []string{}) {
		t.Fatalf("pending after both ended = %v, want none", got)
	}
}
