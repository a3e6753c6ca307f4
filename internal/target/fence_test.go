package target

import (
	"testing"

	"pgregory.net/rapid"
)

func TestFenceNext(t *testing.T) {
	tests := []struct {
		name        string
		fence       Fence
		wantTok     uint64
		wantReserve uint64
	}{
		{"zero value: first token reserves a block", Fence{}, 1, FenceBlock},
		{"inside the reservation: nothing to persist", Fence{issued: 5, reserved: FenceBlock}, 6, 0},
		{"last token of a block", Fence{issued: FenceBlock - 1, reserved: FenceBlock}, FenceBlock, 0},
		{"past the block: the next one", Fence{issued: FenceBlock, reserved: FenceBlock}, FenceBlock + 1, 2 * FenceBlock},
		{"restarted on a reservation: above it, reserving again", NewFence(3000, 0), 3001, 3000 + FenceBlock},
		{"restarted on a reset store's floor", NewFence(0, 7000), 7001, 7000 + FenceBlock},
		{"floor below the reservation changes nothing", NewFence(3000, 10), 3001, 3000 + FenceBlock},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, reserve := tt.fence.Next()
			if tok != tt.wantTok || reserve != tt.wantReserve {
				t.Fatalf("Next() = %d, %d; want %d, %d", tok, reserve, tt.wantTok, tt.wantReserve)
			}
		})
	}
}

// The tokens of a root, across grants, failed persists, restarts (kill -9:
// only the persisted reservation survives) and store resets (the new
// store has no reservation but a floor above every token issued): each
// token is above every token issued before it, and never above the
// reservation durable when it was issued.
func TestFenceTokensRiseAcrossRestarts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var disk, floor, last uint64
		f := NewFence(disk, floor)
		for i := range rapid.IntRange(1, 300).Draw(t, "steps") {
			switch rapid.IntRange(0, 9).Draw(t, "action") {
			case 0: // kill -9 and restart: memory is gone
				f = NewFence(disk, floor)
			case 1: // harness store reset: a new store above the old marks
				floor, disk = max(floor, disk), 0
				f = NewFence(disk, floor)
			default: // a grant
				tok, reserve := f.Next()
				if reserve > 0 {
					if rapid.IntRange(0, 7).Draw(t, "persist fails") == 0 {
						continue // nothing issued; the fence is unchanged
					}
					disk = reserve
				}
				f.Commit(tok, reserve)
				if tok <= last {
					t.Fatalf("step %d: token %d after %d", i, tok, last)
				}
				if tok > disk {
					t.Fatalf("step %d: token %d issued above the durable reservation %d", i, tok, disk)
				}
				if f.Issued() != tok {
					t.Fatalf("step %d: Issued() = %d, want %d", i, f.Issued(), tok)
				}
				last = tok
			}
		}
	})
}
