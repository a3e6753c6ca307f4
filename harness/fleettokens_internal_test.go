package harness

import (
	"testing"

	"github.com/harnessd/harnessd/internal/fleet"
)

func TestFleetTokensSessionFloor(t *testing.T) {
	cur := fleet.TokenBlock{Floor: 5000, Ceiling: 6024, Epoch: 7}
	cases := []struct {
		name  string
		cur   fleet.TokenBlock
		blk   fleet.TokenBlock
		floor uint64
		want  uint64
	}{
		{"the first block", fleet.TokenBlock{}, fleet.TokenBlock{Floor: 5000, Ceiling: 6024, Epoch: 7}, 0, 5000},
		{"continues the session's block", cur, fleet.TokenBlock{Floor: 6024, Ceiling: 7048, Epoch: 7}, 5000, 5000},
		{"another reservation came between", cur, fleet.TokenBlock{Floor: 9000, Ceiling: 10024, Epoch: 7}, 5000, 9000},
		{"a new session", cur, fleet.TokenBlock{Floor: 6024, Ceiling: 7048, Epoch: 8}, 5000, 6024},
		{"above the checkout's restored tokens", cur, fleet.TokenBlock{Floor: 6500, Ceiling: 7524, Epoch: 7}, 5000, 6500},
	}
	for _, c := range cases {
		if got := sessionFloor(c.cur, c.blk, c.floor); got != c.want {
			t.Errorf("%s: sessionFloor = %d, want %d", c.name, got, c.want)
		}
	}
}
