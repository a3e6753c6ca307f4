package watch

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestEvict(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tests := []struct {
		name   string
		active []Use
		cap    int
		keep   string
		want   []string
	}{
		{"room left", []Use{{"a", at(1)}}, 2, "b", nil},
		{"empty", nil, 1, "a", nil},
		{"full: the least recently used goes", []Use{{"a", at(5)}, {"b", at(1)}}, 2, "c", []string{"b"}},
		{"the admitted one never goes", []Use{{"c", at(0)}, {"a", at(5)}, {"b", at(1)}}, 2, "c", []string{"b"}},
		{"over the cap: the oldest until one fits", []Use{{"a", at(3)}, {"b", at(1)}, {"c", at(2)}, {"d", at(4)}}, 2, "e", []string{"b", "c", "a"}},
		{"ties by key", []Use{{"z", at(1)}, {"y", at(1)}}, 2, "x", []string{"y"}},
		{"cap below 1 is 1", []Use{{"a", at(1)}}, 0, "b", []string{"a"}},
		{"re-admitting a running one with room", []Use{{"a", at(1)}, {"b", at(2)}}, 2, "a", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Evict(tt.active, tt.cap, tt.keep); !slices.Equal(got, tt.want) {
				t.Errorf("Evict = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestInstanceCap(t *testing.T) {
	tests := []struct {
		instances int
		share     float64
		want      int
	}{
		{128, 0.25, 32}, {128, 0, 32}, {0, 0, 32}, {8192, 0.25, 2048},
		{3, 0.25, 1}, {128, 0.5, 64}, {128, 1, 128}, {128, 2, 32}, {-1, 0.25, 32},
	}
	for _, tt := range tests {
		if got := InstanceCap(tt.instances, tt.share); got != tt.want {
			t.Errorf("InstanceCap(%d, %v) = %d, want %d", tt.instances, tt.share, got, tt.want)
		}
	}
}

func TestReadMaxInstances(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if n, err := ReadMaxInstances(write("ok", "128\n")); err != nil || n != 128 {
		t.Errorf("ReadMaxInstances(128) = %d, %v", n, err)
	}
	for _, bad := range []string{"", "x", "0", "-3"} {
		if _, err := ReadMaxInstances(write("bad", bad)); err == nil {
			t.Errorf("ReadMaxInstances(%q): no error", bad)
		}
	}
	if _, err := ReadMaxInstances(filepath.Join(dir, "missing")); err == nil {
		t.Error("ReadMaxInstances(missing): no error")
	}
}
