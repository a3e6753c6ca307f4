package persistence

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// storeRSS is the resident bytes of this process's mappings of dir's
// files, from /proc/self/smaps.
func storeRSS(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			in = len(f) >= 6 && strings.HasPrefix(strings.Join(f[5:], " "), dir+"/")
			continue
		}
		if in && f[0] == "Rss:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			n += kb << 10
		}
	}
	return n
}

// A store written through its maps (synced commits into the memtable's
// write-ahead log, tables flushed on close and mapped again at open) holds
// those pages resident; releaseMapped gives them back, and every value
// reads back the same afterwards.
func TestReleaseMappedPages(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, ReleaseEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	vals := map[string][]byte{}
	for i := range 64 {
		v := make([]byte, 64<<10)
		_, _ = rand.Read(v)
		k := fmt.Sprintf("k%03d", i)
		vals[k] = v
		if err := s.PutSync(MetaKey(k), v); err != nil {
			t.Fatal(err)
		}
	}
	// Read every value: the maps are touched by reads too.
	check := func() {
		t.Helper()
		for k, want := range vals {
			var got []byte
			if err := s.Get(MetaKey(k), &got); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s after the release: %d bytes, %v", k, len(got), err)
			}
		}
	}
	check()
	before := storeRSS(t, dir)
	if before < 2<<20 {
		t.Fatalf("only %d bytes of the store are resident before the release; the test writes 4 MiB through its maps", before)
	}
	n, err := releaseMapped(dir)
	if err != nil {
		t.Fatalf("releaseMapped: %v", err)
	}
	after := storeRSS(t, dir)
	t.Logf("store mappings %d MiB advised; resident %d KiB -> %d KiB", n>>20, before>>10, after>>10)
	if after > before/4 {
		t.Fatalf("resident store pages %d KiB after the release, %d KiB before: want at most a quarter", after>>10, before>>10)
	}
	check()
}

// An open store releases its pages by itself every ReleaseEvery, also when
// it was opened through a symbolic link (the kernel names the real path).
func TestStoreReleasesItsPages(t *testing.T) {
	real := t.TempDir()
	link := t.TempDir() + "/store"
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{Dir: link, ReleaseEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	v := make([]byte, 64<<10)
	for i := range 64 {
		_, _ = rand.Read(v)
		if err := s.PutSync(MetaKey(fmt.Sprintf("k%03d", i)), v); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for storeRSS(t, real) > 1<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("%d KiB of the store still resident 10 s after the writes", storeRSS(t, real)>>10)
		}
		<-poll.C
	}
}
