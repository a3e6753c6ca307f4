package errs

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
)

type lowerLayer struct{}

func (lowerLayer) Error() string     { return "disk full" }
func (lowerLayer) ErrorCode() string { return "STORAGE_FULL" }

func TestCodeOf(t *testing.T) {
	tests := []struct {
		err  error
		want Code
	}{
		{nil, ""},
		{New(NotFound, "x"), NotFound},
		{fmt.Errorf("wrapped: %w", New(PathOutsideRoot, "x")), PathOutsideRoot},
		{context.Canceled, Cancelled},
		{context.DeadlineExceeded, Timeout},
		{fmt.Errorf("git: %w", exec.ErrWaitDelay), Unavailable},
		{lowerLayer{}, StorageFull},
		{fmt.Errorf("ledger: %w", lowerLayer{}), StorageFull},
		{Wrap(Internal, lowerLayer{}, "persist: disk full"), StorageFull},
		{Wrap(Internal, fmt.Errorf("boom"), "persist"), Internal},
		{Wrap(InvalidArgument, lowerLayer{}, "x"), InvalidArgument},
		{fmt.Errorf("plain"), Internal},
	}
	for _, tt := range tests {
		if got := CodeOf(tt.err); got != tt.want {
			t.Errorf("CodeOf(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
